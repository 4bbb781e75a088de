/* Resolves a digest prefix to one spill of a key: a full digest is read
 * directly; a shorter one is matched against the session's spill metadata
 * (small next to the texts), then read by its full digest. */
#include "spill_read.h"

#include <string.h>

int spill_prefix_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return n >= SPILL_PREFIX_MIN && n <= SHA256_HEX_LEN;
}

int spill_read(const char *ns, const char *key, size_t key_len, const char *prefix,
               spill_record *out, spill_candidates *amb, compactd_error *err)
{
    const char *sha = prefix;
    char full[SHA256_HEX_LEN + 1];
    if (prefix && strlen(prefix) < SHA256_HEX_LEN) {
        spill_record *r;
        size_t n, plen = strlen(prefix);
        if (session_spill_list(ns, &r, &n, err) != 0)
            return -1;
        amb->n = 0;
        for (size_t i = 0; i < n; i++) {
            if (r[i].key_len != key_len || memcmp(r[i].key, key, key_len) != 0 ||
                memcmp(r[i].sha256, prefix, plen) != 0)
                continue;
            if (amb->n < SPILL_CANDIDATES_MAX)
                memcpy(amb->sha256[amb->n], r[i].sha256, sizeof(amb->sha256[0]));
            amb->n++;
        }
        spill_records_free(r, n);
        if (amb->n == 0)
            return 0;
        if (amb->n > 1)
            return 2;
        memcpy(full, amb->sha256[0], sizeof(full));
        sha = full;
    }
    return session_spill_get(ns, key, key_len, sha, out, err);
}
