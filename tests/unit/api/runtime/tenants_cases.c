/* The API-key table (api/runtime/tenants.c): a keys file loaded, each bad
 * line refused naming its line and never its key, and a key matched to
 * its tenant only as "Authorization: Bearer <key>". */
#include "check.h"
#include "tenants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[] = "/tmp/compactd-tenants-XXXXXX";

static tenants *load_text(const char *text, char *err, size_t errlen)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    err[0] = '\0';
    return tenants_load(path, err, errlen);
}

static void a_good_file(void)
{
    char err[512];
    tenants *t = load_text("# keys\n\n"
                           "key-of-alpha-0123456789 alpha\n"
                           "  key-of-beta-0123456789\tbeta.team~1  \n",
                           err, sizeof(err));
    check(t != NULL, "a good file: %s", err);
    if (!t)
        return;
    static const struct {
        const char *authorization;
        const char *tenant; /* NULL: refused */
    } cases[] = {
        {"Bearer key-of-alpha-0123456789", "alpha"},
        {"Bearer key-of-beta-0123456789", "beta.team~1"},
        {"Bearer key-of-alpha-012345678", NULL},   /* a key cut short */
        {"Bearer key-of-alpha-01234567890", NULL}, /* one byte more */
        {"key-of-alpha-0123456789", NULL},         /* no scheme */
        {"Basic key-of-alpha-0123456789", NULL},
        {"Bearer ", NULL},
        {"", NULL},
        {NULL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = tenants_authenticate(t, cases[i].authorization);
        int ok = cases[i].tenant ? got && strcmp(got, cases[i].tenant) == 0 : got == NULL;
        check(ok, "Authorization \"%s\": tenant %s, want %s",
              cases[i].authorization ? cases[i].authorization : "(none)", got ? got : "(none)",
              cases[i].tenant ? cases[i].tenant : "(none)");
    }
    tenants_free(t);
}

static void bad_lines(void)
{
    static const struct {
        const char *text;
        const char *line; /* "line N" the message must name */
    } cases[] = {
        {"short-key alpha\n", "line 1"},
        {"key-of-alpha-0123456789 alpha extra\n", "line 1"},
        {"key-of-alpha-0123456789\n", "line 1"},
        {"# ok\nkey-of-alpha-0123456789 al/pha\n", "line 2"},
        {"key-of-alpha-0123456789 "
         "a-tenant-name-of-sixty-five-characters-aaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
         "line 1"},
        {"key-of-alpha-0123456789 alpha\nkey-of-alpha-0123456789 beta\n", "line 2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char err[512];
        tenants *t = load_text(cases[i].text, err, sizeof(err));
        check(t == NULL, "case %zu loaded", i);
        tenants_free(t);
        check(strstr(err, cases[i].line) != NULL, "case %zu: \"%s\" names no %s", i, err,
              cases[i].line);
        check(strstr(err, "key-of-alpha") == NULL && strstr(err, "short-key") == NULL,
              "case %zu: the message shows the key: %s", i, err);
    }
    char err[512];
    check(tenants_load("/nonexistent/compactd-keys", err, sizeof(err)) == NULL && err[0],
          "a missing file is refused with a message");
}

int main(void)
{
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    a_good_file();
    bad_lines();
    unlink(path);
    return check_done("tenants_cases");
}
