/* The provider APIs the proxy speaks, as data (where each keeps its
 * history, what bounds its answer, which headers it needs passed on), and
 * errors in each one's own shape. */
#include "proxy_internal.h"

#include "json_encode.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const chat_max[] = {"max_completion_tokens", "max_tokens", NULL};
static const char *const responses_max[] = {"max_output_tokens", NULL};
static const char *const messages_max[] = {"max_tokens", NULL};

/* What the provider reads from its caller: the key and the account or
 * version it is for. Nothing else of the client's headers goes on. */
static const char *const openai_headers[] = {"Authorization", "OpenAI-Organization",
                                             "OpenAI-Project", "OpenAI-Beta", NULL};
static const char *const anthropic_headers[] = {"x-api-key", "Authorization", "anthropic-version",
                                                "anthropic-beta", NULL};

const proxy_api proxy_chat_api = {
    .kind = PROXY_CHAT,
    .provider = "openai",
    .path = "/chat/completions",
    .format = &chat_format_openai,
    .history = "messages",
    .system = NULL,
    .max_tokens = chat_max,
    .forwarded = openai_headers,
};
const proxy_api proxy_responses_api = {
    .kind = PROXY_RESPONSES,
    .provider = "openai",
    .path = "/responses",
    .format = &chat_format_responses,
    .history = "input",
    .system = "instructions",
    .max_tokens = responses_max,
    .forwarded = openai_headers,
};
const proxy_api proxy_messages_api = {
    .kind = PROXY_MESSAGES,
    .provider = "anthropic",
    .path = "/messages",
    .format = &chat_format_anthropic,
    .history = "messages",
    .system = "system",
    .max_tokens = messages_max,
    .forwarded = anthropic_headers,
};

void proxy_fail(api_response *res, const proxy_api *api, int status, const char *type,
                const char *code, const char *param, int64_t required_budget, int64_t budget,
                const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    json_sanitize_text(message);
    jw w;
    jw_init(&w, 768);
    jw_object_open(&w);
    if (api->kind == PROXY_MESSAGES) {
        /* {"type": "error", "error": {"type", "message"}} */
        jw_member_cstring(&w, "type", "error");
        jw_member(&w, "error");
        jw_object_open(&w);
        jw_member_cstring(&w, "type", type);
        jw_member_cstring(&w, "message", message);
    } else {
        /* {"error": {"message", "type", "param", "code"}} */
        jw_member(&w, "error");
        jw_object_open(&w);
        jw_member_cstring(&w, "message", message);
        jw_member_cstring(&w, "type", type);
        jw_member(&w, "param");
        if (param)
            jw_cstring(&w, param);
        else
            jw_null(&w);
    }
    jw_member_cstring(&w, "code", code);
    if (api->kind == PROXY_MESSAGES && param)
        jw_member_cstring(&w, "param", param);
    if (required_budget >= 0)
        jw_member_int(&w, "required_budget", required_budget);
    if (budget >= 0)
        jw_member_int(&w, "budget", budget);
    jw_object_close(&w);
    jw_object_close(&w);
    size_t len = 0;
    char *body = jw_finish(&w, &len);
    respond_json(res, status, body, len);
}
