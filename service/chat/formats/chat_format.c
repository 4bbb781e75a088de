/* The chat formats' descriptors, one row each, and the lookup by name. */
#include "chat_format.h"

#include "reacquire_tools.h"
#include "shared_defs.h"

#include <string.h>

/* OpenAI's current chat models all use o200k_base, in both its formats;
 * Anthropic publishes no tokenizer, so its requests count bytes. */
const chat_format chat_format_openai = {
    .name = CHAT_FORMAT_OPENAI,
    .tokenizer = "o200k_base",
    .billed_by = "o200k_base",
    .media = CHAT_MEDIA_OPENAI,
    .reacquire_tool = REACQUIRE_TOOL_OPENAI,
};

const chat_format chat_format_anthropic = {
    .name = CHAT_FORMAT_ANTHROPIC,
    .tokenizer = "bytes",
    .billed_by = NULL,
    .media = CHAT_MEDIA_ANTHROPIC,
    .reacquire_tool = REACQUIRE_TOOL_ANTHROPIC,
};

const chat_format chat_format_responses = {
    .name = CHAT_FORMAT_OPENAI_RESPONSES,
    .tokenizer = "o200k_base",
    .billed_by = "o200k_base",
    .media = CHAT_MEDIA_OPENAI,
    .reacquire_tool = REACQUIRE_TOOL_OPENAI_RESPONSES,
};

static const chat_format *const formats[] = {&chat_format_openai, &chat_format_anthropic,
                                             &chat_format_responses};

_Static_assert(sizeof(formats) / sizeof(formats[0]) == CHAT_FORMAT_COUNT,
               "one descriptor per format of spec/shared.json");

const chat_format *chat_format_find(const char *name, size_t len)
{
    for (size_t i = 0; name && i < CHAT_FORMAT_COUNT; i++)
        if (strlen(formats[i]->name) == len && memcmp(formats[i]->name, name, len) == 0)
            return formats[i];
    return NULL;
}

const chat_format *chat_format_at(size_t i)
{
    return i < CHAT_FORMAT_COUNT ? formats[i] : NULL;
}

const tokenizer *chat_format_tokenizer(const chat_format *f)
{
    return tokenizer_find(f->tokenizer, strlen(f->tokenizer));
}
