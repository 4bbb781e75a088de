/* Out of memory in the decoders: json_decode_compact() and
 * json_decode_verify() run with their k-th allocation failing, for every k
 * (jansson's among them: the region a body is parsed into, and what jansson
 * allocates outside one, such as json_dumpb()'s). Each
 * must answer Internal (a 500-class answer: the client's body was fine, so
 * never a 400), hold nothing and leak nothing (the sanitizer build's leak
 * check), and every loop must reach a run without an injected failure and
 * decode right there. */
#include "check.h"
#include "oom.h"
#include "json_decode.h"

#include <stdlib.h>
#include <string.h>

static const decode_limits limits = {8, 64, 1024, 4096, 100};

static const char compact_body[] =
    "{\"budget\": 50, \"units\": ["
    "{\"key\": \"p\", \"class\": \"protected\", \"tokens\": 9, \"text\": \"keep\", "
    "\"metadata\": {\"role\": \"user\"}},"
    "{\"key\": \"d\", \"class\": \"derivable\", \"tokens\": 9, \"group\": \"g\", "
    "\"metadata\": {\"id\": 7}, \"summary\": {\"text\": \"s\", \"tokens\": 1}}]}";

static const char verify_body[] =
    "{\"context\": \"keep\", \"units\": [{\"key\": \"p\", \"class\": \"protected\", "
    "\"tokens\": 9, \"text\": \"keep\", \"metadata\": {\"m\": true}}]}";

static void compact_oom(void)
{
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        compact_input in;
        compactd_error err = {0};
        arm(k);
        int rc = json_decode_compact(compact_body, sizeof(compact_body) - 1, &limits, &in, &err);
        disarm();
        if (!injected) {
            clean = 1;
            check(rc == 0 && in.req.n == 2 && in.req.detail[1].metadata,
                  "compact: decodes once allocations succeed (%s)", err.message);
            if (rc == 0)
                compact_input_free(&in);
            break;
        }
        check(rc != 0 && err.kind == ERR_INTERNAL,
              "compact: failing allocation %ld gave rc %d kind %d", k, rc, (int)err.kind);
        if (rc == 0)
            compact_input_free(&in);
        else
            check(in.doc == NULL && in.req.units == NULL, "compact: allocation %ld left data", k);
    }
    check(clean, "compact: no run without an injected failure in %ld", k);
    check(k >= 4, "compact: %ld allocation sites exercised", k);
}

static void verify_oom(void)
{
    long k;
    int clean = 0;
    for (k = 0; k < OOM_MAX_SITES; k++) {
        verify_input in;
        compactd_error err = {0};
        arm(k);
        int rc = json_decode_verify(verify_body, sizeof(verify_body) - 1, &limits, &in, &err);
        disarm();
        if (!injected) {
            clean = 1;
            check(rc == 0 && in.set.n == 1, "verify: decodes once allocations succeed (%s)",
                  err.message);
            if (rc == 0)
                verify_input_free(&in);
            break;
        }
        check(rc != 0 && err.kind == ERR_INTERNAL,
              "verify: failing allocation %ld gave rc %d kind %d", k, rc, (int)err.kind);
        if (rc == 0)
            verify_input_free(&in);
    }
    check(clean, "verify: no run without an injected failure in %ld", k);
    check(k >= 3, "verify: %ld allocation sites exercised", k);
}

int main(void)
{
    compact_oom();
    verify_oom();
    return check_done("decode_oom_cases");
}
