/* Content-stable spill keys for chat messages (see chat_keys.h). */
#include "chat_keys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_DIGITS 16

static int plain_id(chat_str id)
{
    if (id.len == 0 || id.len > CHAT_KEY_ID_MAX)
        return 0;
    for (size_t i = 0; i < id.len; i++) {
        char c = id.s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* The id as a key: itself when plain, else "id-" and its digest's digits;
 * then suffix. '~' is in neither form, so "~<n>" cannot make another key. */
static void id_key(chat_str id, const char *suffix, char *out)
{
    if (plain_id(id)) {
        snprintf(out, CHAT_KEY_MAX, "%.*s%s", (int)id.len, id.s, suffix);
        return;
    }
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(id.s, id.len, hex);
    snprintf(out, CHAT_KEY_MAX, "id-%.*s%s", DIGEST_DIGITS, hex, suffix);
}

/* qsort takes no context: the keys being sorted, one thread's at a time. */
static _Thread_local char (*sort_keys)[CHAT_KEY_MAX];

/* Key order, then message order: equal keys sit together, the first sent first. */
static int by_key(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(sort_keys[i], sort_keys[j]);
    return c ? c : (i > j) - (i < j);
}

int chat_keys_assign(const chat_request *req, const char (*sha256)[SHA256_HEX_LEN + 1],
                     char (*keys)[CHAT_KEY_MAX])
{
    for (size_t i = 0; i < req->n; i++) {
        const chat_message *m = &req->m[i];
        if (m->n_calls)
            id_key(m->calls[0].id, "", keys[i]);
        else if (m->n_answers)
            id_key(m->answers[0], ".result", keys[i]);
        else
            snprintf(keys[i], CHAT_KEY_MAX, "msg-%.*s", DIGEST_DIGITS, sha256[i]);
    }
    if (req->n < 2)
        return 0;
    size_t *order = malloc(req->n * sizeof(*order));
    if (!order)
        return -1;
    for (size_t i = 0; i < req->n; i++)
        order[i] = i;
    sort_keys = keys;
    qsort(order, req->n, sizeof(*order), by_key);
    sort_keys = NULL;
    /* The first of a run keeps its key; it is never suffixed, so the rest
     * compare with it. */
    size_t first = order[0], run = 1;
    for (size_t k = 1; k < req->n; k++) {
        if (strcmp(keys[order[k]], keys[first]) != 0) {
            first = order[k];
            run = 1;
            continue;
        }
        run++;
        size_t len = strlen(keys[order[k]]);
        snprintf(keys[order[k]] + len, CHAT_KEY_MAX - len, "~%zu", run);
    }
    free(order);
    return 0;
}
