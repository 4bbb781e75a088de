/* A chat message's JSON as sent: its bytes in the request body when they
 * are already in compact form, else its compact serialization. */
#include "chat_codec.h"
#include "json_span.h"

#include <stdlib.h>
#include <string.h>

/* One pass of jansson's writer (json_dumpb would need two to size its
 * buffer); the string is freed with the input. */
int chat_dump(chat_input *in, const json_t *v, chat_str *out)
{
    if (in->n_dumps == in->cap_dumps) {
        size_t cap = in->cap_dumps ? 2 * in->cap_dumps : 64;
        char **more = realloc(in->dumps, cap * sizeof(*more));
        if (!more)
            return -1;
        in->dumps = more;
        in->cap_dumps = cap;
    }
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!s)
        return -1;
    /* jansson writes an object's keys without checking that its buffer
     * grew: out of memory there, it goes on and answers a text with a key
     * missing. The count, which allocates nothing, tells. */
    size_t len = strlen(s);
    if (json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) != len) {
        json_text_free(s);
        return -1;
    }
    in->dumps[in->n_dumps++] = s;
    *out = (chat_str){s, len};
    return 0;
}

/* A message's JSON is its compact serialization, the same for the same value
 * however a client wrote it, so that the same message always gets the same
 * digest and pointer. When the request's own bytes are already in that form
 * (no whitespace between tokens, no \u escape, no fraction or exponent),
 * they are used as they are and nothing is written out again. The body has
 * been parsed already, so the scans can trust its grammar. */

int chat_message_spans(const char *s, size_t len, size_t n, chat_str *out)
{
    size_t i, end;
    if (json_span_member(s, len, 0, "messages", &i, &end) != 0 || s[i] != '[')
        return -1;
    size_t k = 0;
    for (i = json_span_skip_ws(s, i + 1, len); i < end && s[i] != ']';) {
        size_t next = json_span_skip_value(s, i, len);
        if (k == n)
            return -1;
        out[k++] = (chat_str){s + i, next - i};
        i = json_span_skip_ws(s, next, len);
        if (i < len && s[i] == ',')
            i = json_span_skip_ws(s, i + 1, len);
    }
    return k == n ? 0 : -1;
}

/* Whether s[0..len) is what jansson's compact writer makes of its value. */
static int is_compact_form(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            size_t end = json_span_skip_value(s, i, len);
            for (const char *b = memchr(s + i, '\\', end - i); b;
                 b = memchr(b + 2, '\\', (size_t)(s + end - (b + 2)))) {
                if (b[1] == 'u')
                    return 0;
                if (b + 2 >= s + end)
                    break;
            }
            i = end - 1;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '.') {
            return 0;
        } else if ((c == 'e' || c == 'E') && i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') {
            return 0;
        } else if (c == '-' && i + 1 < len && s[i + 1] == '0') {
            return 0;
        }
    }
    return 1;
}

int chat_message_json(chat_input *in, size_t i, const json_t *v, chat_str *out)
{
    if (in->raw && is_compact_form(in->raw[i].s, in->raw[i].len)) {
        *out = in->raw[i];
        return 0;
    }
    return chat_dump(in, v, out);
}
