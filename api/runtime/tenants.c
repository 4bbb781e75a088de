/* The API-key table: loaded once at start-up, read by every worker. */
#include "tenants.h"

#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KEY_MIN 16
#define KEY_MAX 256

typedef struct {
    char key[KEY_MAX + 1];
    size_t key_len;
    char tenant[TENANT_MAX + 1];
} tenant_key;

struct tenants {
    tenant_key *keys;
    size_t n;
};

static int tenant_name_valid(const char *s, size_t n)
{
    if (n < 1 || n > TENANT_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9') || strchr("._~-", s[i])))
            return 0;
    return 1;
}

static int parse_line(char *line, tenant_key *out)
{
    line[strcspn(line, "\r\n")] = '\0';
    char *key = line + strspn(line, " \t");
    size_t key_len = strcspn(key, " \t");
    char *tenant = key + key_len;
    tenant += strspn(tenant, " \t");
    size_t tenant_len = strcspn(tenant, " \t");
    if (tenant[tenant_len + strspn(tenant + tenant_len, " \t")] != '\0')
        return -1; /* a third field */
    if (key_len < KEY_MIN || key_len > KEY_MAX || !tenant_name_valid(tenant, tenant_len))
        return -1;
    for (size_t i = 0; i < key_len; i++)
        if ((unsigned char)key[i] < 0x21 || (unsigned char)key[i] > 0x7e)
            return -1;
    memcpy(out->key, key, key_len);
    out->key_len = key_len;
    memcpy(out->tenant, tenant, tenant_len);
    out->tenant[tenant_len] = '\0';
    return 0;
}

tenants *tenants_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "api keys file '%s' cannot be opened", path);
        return NULL;
    }
    tenants *t = calloc(1, sizeof(*t));
    char line[1024];
    size_t cap = 0, lineno = 0;
    while (t && fgets(line, sizeof(line), f)) {
        lineno++;
        const char *p = line + strspn(line, " \t\r\n");
        if (*p == '\0' || *p == '#')
            continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 8;
            tenant_key *k = realloc(t->keys, cap * sizeof(*k));
            if (!k) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            t->keys = k;
        }
        if (parse_line(line, &t->keys[t->n]) != 0) {
            snprintf(err, errlen,
                     "api keys file '%s', line %zu: expected \"<api-key> <tenant>\" with a key "
                     "of %d-%d printable characters and a tenant of 1-%d characters of "
                     "[A-Za-z0-9._~-]",
                     path, lineno, KEY_MIN, KEY_MAX, TENANT_MAX);
            goto fail;
        }
        for (size_t i = 0; i < t->n; i++)
            if (t->keys[i].key_len == t->keys[t->n].key_len &&
                memcmp(t->keys[i].key, t->keys[t->n].key, t->keys[i].key_len) == 0) {
                snprintf(err, errlen, "api keys file '%s', line %zu: duplicate key", path, lineno);
                goto fail;
            }
        t->n++;
    }
    if (!t) {
        snprintf(err, errlen, "out of memory");
        fclose(f);
        return NULL;
    }
    fclose(f);
    if (t->n == 0) {
        snprintf(err, errlen, "api keys file '%s' holds no key", path);
        tenants_free(t);
        return NULL;
    }
    return t;
fail:
    fclose(f);
    tenants_free(t);
    return NULL;
}

void tenants_free(tenants *t)
{
    if (!t)
        return;
    /* Keys are secrets: do not leave them in freed memory. */
    if (t->keys)
        memset(t->keys, 0, t->n * sizeof(*t->keys));
    free(t->keys);
    free(t);
}

/* Compares without an early exit, so timing does not tell how much of a
 * guess was right. Lengths are public: every key's length is in [16, 256]. */
static int equal_const_time(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char diff = alen != blen;
    size_t n = alen < blen ? alen : blen;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

const char *tenants_authenticate(const tenants *t, const char *authorization)
{
    static const char bearer[] = "Bearer ";
    if (!authorization || strncasecmp(authorization, bearer, sizeof(bearer) - 1) != 0)
        return NULL;
    const char *key = authorization + sizeof(bearer) - 1;
    size_t len = strlen(key);
    const char *tenant = NULL;
    /* Every key is compared, whichever matches. */
    for (size_t i = 0; i < t->n; i++)
        if (equal_const_time(key, len, t->keys[i].key, t->keys[i].key_len))
            tenant = t->keys[i].tenant;
    return tenant;
}

const char *tenants_authenticate_request(const tenants *t, const api_request *req)
{
    if (api_header_count(req, "Authorization") != 1)
        return NULL;
    return tenants_authenticate(t, api_header(req, "Authorization"));
}
