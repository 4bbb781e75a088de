/* Times the planning of one chat body in process (decode once, then
 * ops_compact_messages_plan(), which prices, plans and writes nothing):
 * for the planner's worst cases, where the HTTP benchmark's wall clock on
 * a shared machine would hide them. The body's budget is replaced by half
 * of what its whole history costs. Prints one JSON line: the least and the
 * median of REPEAT runs, warm (the token cache kept, as turn over turn) or
 * cold (cleared before each run).
 *   plan_time RANKS_DIR [REPEAT] [cold] < BODY.json */
#include "chat_codec.h"
#include "ops.h"
#include "token_cache.h"
#include "tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* All of stdin, in chunks that double. */
static char *read_stdin(size_t *len)
{
    size_t cap = 1 << 16;
    char *b = malloc(cap);
    *len = 0;
    for (size_t got; b && (got = fread(b + *len, 1, cap - *len, stdin)) > 0;) {
        *len += got;
        if (*len == cap) {
            char *more = realloc(b, cap *= 2);
            if (!more)
                free(b);
            b = more;
        }
    }
    return b;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* As the REST front checks a plan before it is committed. */
static int rendered_valid(const void *ctx, const chat_plan *p)
{
    return chat_output_valid(ctx, p);
}

/* One planning: its nanoseconds, and what it used or required. */
static int64_t plan_once(const chat_input *in, int cold, int64_t *used, int64_t *required)
{
    ops_scope s;
    memset(&s, 0, sizeof(s));
    ops_messages_request mr = {&in->req, rendered_valid, in, "bench"};
    ops_messages_result out;
    compactd_error err = {0};
    struct timespec t0, t1;
    if (cold)
        token_cache_clear();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ops_compact_messages_plan(&s, &mr, &out, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *used = rc == 0 ? out.plan.used_tokens : -1;
    *required = out.plan.required_budget;
    chat_plan_free(&out.plan);
    return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}

int main(int argc, char **argv)
{
    char err[512];
    size_t len;
    if (argc < 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "usage: plan_time RANKS_DIR [REPEAT] [cold] < BODY.json (%s)\n",
                argc >= 2 ? err : "");
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 5, cold = argc > 3 && strcmp(argv[3], "cold") == 0;
    if (repeat < 1)
        repeat = 1;
    char *body = read_stdin(&len);
    static const decode_limits limits = {10000000, 256, 64u << 20, 64u << 20};
    chat_input in;
    compactd_error derr = {0};
    if (!body || chat_decode_compact(body, len, &limits, &in, &derr) != 0) {
        fprintf(stderr, "plan_time: %s\n", body ? derr.message : "out of memory");
        return 1;
    }
    int64_t used, required, *ns = calloc((size_t)repeat, sizeof(*ns));
    in.req.budget = INT64_C(1) << 40;
    plan_once(&in, 1, &used, &required);
    in.req.budget = used / 2 > required ? used / 2 : required;
    for (int r = 0; r < repeat; r++)
        ns[r] = plan_once(&in, cold, &used, &required);
    qsort(ns, (size_t)repeat, sizeof(*ns), cmp_i64);
    printf("{\"messages\":%zu,\"tokenizer\":\"%s\",\"budget\":%lld,"
           "\"required_budget\":%lld,\"used_tokens\":%lld,\"runs\":%d,\"cold\":%d,"
           "\"min_ms\":%.3f,\"median_ms\":%.3f}\n",
           in.req.n, tokenizer_name(in.req.tokenizer), (long long)in.req.budget,
           (long long)required, (long long)used, repeat, cold, ns[0] / 1e6, ns[repeat / 2] / 1e6);
    free(ns);
    chat_input_free(&in);
    free(body);
    tokenizer_unload();
    return 0;
}
