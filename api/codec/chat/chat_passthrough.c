/* What a provider's message carries that compactd does not interpret: kept
 * as sent (a preserved message is its own JSON, a spill holds it whole) and
 * priced as part of its message, never refused. */
#include "chat_passthrough.h"

#include <string.h>

size_t chat_members_within(const json_t *v, int depth)
{
    size_t n = 0;
    if (depth <= 0)
        return 0;
    if (json_is_object(v)) {
        const char *name;
        json_t *m;
        json_object_foreach((json_t *)v, name, m)
        {
            n += 1 + chat_members_within(m, depth - 1);
        }
    } else if (json_is_array(v)) {
        for (size_t k = 0; k < json_array_size(v); k++)
            n += chat_members_within(json_array_get(v, k), depth - 1);
    }
    return n;
}

int chat_pass_member(chat_input *in, chat_message *m, const char *name, const json_t *v)
{
    /* {"name":value} less its braces: the member exactly as it is rendered. */
    json_t *one = json_object();
    chat_str s;
    if (!one || json_object_set(one, name, (json_t *)v) != 0 || chat_dump(in, one, &s) != 0) {
        json_decref(one);
        return -1;
    }
    json_decref(one);
    m->payload[m->n_payload++] = (chat_str){s.s + 1, s.len - 2};
    return 0;
}

int chat_pass_block(chat_input *in, chat_message *m, const json_t *b)
{
    chat_str s;
    if (chat_dump(in, b, &s) != 0)
        return -1;
    m->bound_tokens += (int64_t)s.len;
    return 0;
}
