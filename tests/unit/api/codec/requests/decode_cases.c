/* The request decoders: a table of bodies and the JSON path each is
 * refused at (or NULL: accepted), for compact and for verify; then what an
 * accepted body decodes to. */
#include "check.h"
#include "json_decode.h"
#include "json_shape.h"
#include "json_span.h"

#include <string.h>

static const decode_limits limits = {4, 16, 64, 100, 100};

typedef struct {
    const char *body;
    const char *path; /* NULL: accepted */
} decode_case;

#define U(fields) "{\"budget\": 10, \"units\": [" fields "]}"
#define P "{\"key\": \"p\", \"class\": \"protected\", \"tokens\": 1, \"text\": \"t\"}"

static const decode_case compact_cases[] = {
    {U(""), NULL},
    {U(P), NULL},
    {"{\"units\": [], \"budget\": 0, \"mode\": \"discovery\", \"dry_run\": true}", NULL},
    {"", "$"},
    {"[]", "$"},
    {"{\"budget\": 1}", "$.units"},
    {"{\"units\": []}", "$.budget"},
    {"{\"budget\": 1, \"units\": [], \"mode\": \"strict\\u0000\"}", "$.mode"},
    {"{\"budget\": 1, \"units\": [], \"mode\": 1}", "$.mode"},
    {"{\"budget\": 1, \"units\": [], \"extra\": 1}", "$.extra"},
    {"{\"budget\": 1, \"units\": [], \"we ird\": 1}", "$[\"we ird\"]"},
    {U("1"), "$.units[0]"},
    {U(P "," P), "$.units[1].key"},
    {U("{\"key\": \"a\", \"tokens\": 1}"), "$.units[0].class"},
    {U("{\"key\": \"a\", \"class\": \"protected\", \"tokens\": 1}"), "$.units[0].text"},
    {U("{\"key\": \"a\", \"class\": \"protected\", \"tokens\": 1, \"text\": \"\"}"),
     "$.units[0].text"},
    {U("{\"class\": \"derivable\", \"tokens\": 1}"), "$.units[0]"},
    /* tokens are counted from the text where missing: a unit needs one. */
    {U("{\"key\": \"a\", \"class\": \"derivable\"}"), "$.units[0].tokens"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"text\": \"t\"}"), NULL},
    {"{\"budget\": 1, \"units\": [], \"tokenizer\": \"p50k_base\"}", "$.tokenizer"},
    {"{\"budget\": 1, \"units\": [], \"tokenizer\": \"bytes\"}", NULL},
    {U("{\"key\": \"a\\u0001\", \"class\": \"derivable\", \"tokens\": 1}"), "$.units[0].key"},
    {U("{\"key\": \"0123456789abcdefg\", \"class\": \"derivable\", \"tokens\": 1}"),
     "$.units[0].key"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": -1}"), "$.units[0].tokens"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 2147483648}"), "$.units[0].tokens"},
    {U("{\"key\": \"a\", \"class\": \"redundant\", \"tokens\": 1, \"priority\": 1}"),
     "$.units[0].priority"},
    {U("{\"key\": \"a\", \"class\": \"redundant\", \"tokens\": 1, \"group\": \"g\"}"), NULL},
    {U("{\"key\": \"a\", \"class\": \"protected\", \"tokens\": 1, \"text\": \"t\", \"summary\": "
       "{\"text\": \"s\", \"tokens\": 1}}"),
     "$.units[0].summary"},
    /* A summary's tokens are counted when left out. */
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"summary\": {\"text\": \"s\"}}"),
     NULL},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"summary\": {\"tokens\": 1}}"),
     "$.units[0].summary"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"summary\": {\"text\": \"s\", "
       "\"tokens\": 1, \"x\": 1}}"),
     "$.units[0].summary.x"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"text\": "
       "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}"),
     "$.units[0].text"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"metadata\": {\"a\": [1]}}"),
     "$.units[0].metadata.a"},
    {U("{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1, \"metadata\": 3}"),
     "$.units[0].metadata"},
    {U("{\"key\": \"a\", \"class\": \"redundant\", \"tokens\": 1, \"metadata\": {\"r\": null}}"),
     NULL},
    {U(P "," P "," P "," P "," P), "$.units"},
    {"{\"budget\": 1, \"units\": [], \"budget\": 2}", "$.budget"},
};

static const decode_case verify_cases[] = {
    {"{\"context\": \"\", \"units\": []}", NULL},
    {"{\"context\": \"x\", \"units\": [" P "]}", NULL},
    {"{\"context\": \"x\", \"units\": [" P "], \"budget\": 5, \"context_tokens\": 1}", NULL},
    {"{\"units\": []}", "$.context"},
    {"{\"context\": \"\"}", "$.units"},
    {"{\"context\": \"\", \"units\": [], \"budget\": 5}", "$.context_tokens"},
    {"{\"context\": \"\", \"units\": [], \"context_tokens\": 5}", "$.budget"},
    {"{\"context\": \"\", \"units\": [{\"key\": \"a\", \"class\": \"derivable\", \"tokens\": 1}]}",
     "$.units[0].class"},
    {"{\"context\": \"\", \"units\": [{\"key\": \"a\", \"class\": \"protected\", \"tokens\": 1, "
     "\"text\": \"\"}]}",
     "$.units[0].text"},
    {"{\"context\": 1, \"units\": []}", "$.context"},
    {"{\"context\": \"\", \"units\": [], \"dry_run\": 1}", "$.dry_run"},
    /* 2 x 60 bytes of text: over the 100 bytes a verify may audit. */
    {"{\"context\": \"\", \"units\": [{\"key\": \"a\", \"class\": \"protected\", \"tokens\": 1, "
     "\"text\": \"012345678901234567890123456789012345678901234567890123456789\"}, {\"key\": "
     "\"b\", \"class\": \"protected\", \"tokens\": 1, \"text\": "
     "\"012345678901234567890123456789012345678901234567890123456789\"}]}",
     "$.units"},
};

static void run_compact_cases(void)
{
    for (size_t i = 0; i < sizeof(compact_cases) / sizeof(compact_cases[0]); i++) {
        const decode_case *c = &compact_cases[i];
        compact_input in;
        compactd_error err = {0};
        int rc = json_decode_compact(c->body, strlen(c->body), &limits, &in, &err);
        if (!c->path) {
            check(rc == 0, "compact %zu: refused at %s: %s", i, err.path, err.message);
        } else {
            check(rc != 0 && err.kind == ERR_INVALID_REQUEST && strcmp(err.path, c->path) == 0,
                  "compact %zu: rc %d, path \"%s\", want \"%s\" (%s)", i, rc, err.path, c->path,
                  err.message);
            check(in.doc == NULL && in.req.units == NULL, "compact %zu: refused but holds data", i);
        }
        if (rc == 0)
            compact_input_free(&in);
    }
}

static void run_verify_cases(void)
{
    for (size_t i = 0; i < sizeof(verify_cases) / sizeof(verify_cases[0]); i++) {
        const decode_case *c = &verify_cases[i];
        verify_input in;
        compactd_error err = {0};
        int rc = json_decode_verify(c->body, strlen(c->body), &limits, &in, &err);
        if (!c->path)
            check(rc == 0, "verify %zu: refused at %s: %s", i, err.path, err.message);
        else
            check(rc != 0 && err.kind == ERR_INVALID_REQUEST && strcmp(err.path, c->path) == 0,
                  "verify %zu: rc %d, path \"%s\", want \"%s\" (%s)", i, rc, err.path, c->path,
                  err.message);
        if (rc == 0)
            verify_input_free(&in);
    }
}

/* What each field of a unit decodes to, and what the decoder leaves to the
 * pricing step. */
static void decoded_fields(void)
{
    static const char body[] =
        "{\"mode\": \"discovery\", \"dry_run\": true, \"budget\": 7, \"units\": ["
        "{\"tokens\": 3, \"class\": \"derivable\", \"key\": \"d\", \"text\": \"abc\", "
        "\"priority\": -2, \"group\": \"g\", \"reacquire\": \"cat d\", "
        "\"summary\": {\"tokens\": 1, \"text\": \"a\"}, \"metadata\": {\"b\": 1, \"a\": \"x y\"}},"
        "{\"key\": \"p\", \"class\": \"protected\", \"tokens\": 1, \"text\": \"t\\u0000u\"}]}";
    compact_input in;
    compactd_error err = {0};
    int rc = json_decode_compact(body, sizeof(body) - 1, &limits, &in, &err);
    check(rc == 0, "decoded fields: refused at %s: %s", err.path, err.message);
    if (rc != 0)
        return;
    const compaction_request *r = &in.req;
    const plan_unit *d = &r->units[0], *p = &r->units[1];
    const unit_detail *dd = &r->detail[0], *pd = &r->detail[1];
    check(r->n == 2 && r->budget == 7 && r->mode == PLAN_DISCOVERY && r->dry_run, "request fields");
    check(r->tokenizer == tokenizer_default(), "no tokenizer named: the default applies");
    check(d->cls == UNIT_DERIVABLE && d->key_len == 1 && d->key[0] == 'd' && d->tokens == 3 &&
              dd->has_tokens,
          "derivable key, class, tokens");
    check(d->has_text && d->text_len == 3 && memcmp(d->text, "abc", 3) == 0, "derivable text");
    check(d->priority == -2 && d->group_len == 1 && d->group[0] == 'g', "priority and group");
    check(d->has_summary && d->summary_tokens == 1 && dd->has_summary_tokens &&
              dd->summary_len == 1 && dd->summary[0] == 'a',
          "summary");
    check(dd->reacquire_len == 5 && memcmp(dd->reacquire, "cat d", 5) == 0, "reacquire");
    check(dd->metadata && strcmp(dd->metadata, "{\"b\":1,\"a\":\"x y\"}") == 0 &&
              dd->metadata_len == strlen(dd->metadata),
          "metadata kept compact and in member order: %s", dd->metadata ? dd->metadata : "");
    check(p->cls == UNIT_PROTECTED && p->text_len == 3 && p->text[1] == '\0' && !pd->metadata,
          "protected text with a NUL, no metadata");
    check(d->pointer_tokens == 0 && p->pointer_tokens == 0 && r->sha256[0][0] == '\0',
          "costs and digests are left to the pricing step");
    compact_input_free(&in);
}

/* The one string scan: a quote ends a string unless an odd run of
 * backslashes precedes it; none found is the stop offset. */
static void string_ends(void)
{
    static const struct {
        const char *s;
        size_t end;
    } cases[] = {
        {"\"abc\"", 4},      {"\"a\\\"b\"", 5}, {"\"a\\\\\"b", 4},
        {"\"\\\\\\\"\"", 5}, {"\"open", 5},     {"\"\"", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i].s), got = json_span_string_end(cases[i].s, 1, len);
        check(got == cases[i].end, "%s: string ends at %zu, want %zu", cases[i].s, got,
              cases[i].end);
    }
}

/* One budget for a body and the texts nested in it: what the body took is
 * gone for the nested text. */
static void one_value_count(void)
{
    json_budget b;
    compactd_error err = {0};
    json_budget_init(&b, &limits); /* 16 + 21 * 4 = 100 values */
    check(b.values_left == SHAPE_VALUES_TOP + SHAPE_VALUES_PER_UNIT * limits.max_units,
          "the whole count");
    check(json_shape_check("[1,2,3,4]", 9, &limits, 2, NULL, &b, &err) == 0 && b.values_left == 95,
          "a body of 5 values leaves 95 (%zu)", b.values_left);
    check(json_shape_check("[[1,1,1],[1,1,1],[1,1,1]]", 25, &limits, 2, "$.x", &b, &err) == 0 &&
              b.values_left == 82,
          "a nested text of 13 values leaves 82 (%zu)", b.values_left);
    char many[400];
    strcpy(many, "[");
    for (int i = 0; i < 20; i++)
        strcat(many, i ? ",[1,1,1]" : "[1,1,1]");
    strcat(many, "]");
    check(json_shape_check(many, strlen(many), &limits, 2, "$.x", &b, &err) != 0 &&
              err.kind == ERR_INVALID_REQUEST && strcmp(err.path, "$.x") == 0 &&
              strstr(err.message, "COMPACTD_MAX_UNITS") != NULL,
          "81 values more are refused at the nested text's path: %s %s", err.path, err.message);
    check(b.values_left == 82, "a refused text takes nothing (%zu)", b.values_left);
    err = (compactd_error){0};
    check(json_shape_check("[[[1]]]", 7, &limits, 2, NULL, &b, &err) != 0 &&
              strcmp(err.path, "$[0][0]") == 0 && strstr(err.message, "deeper") != NULL,
          "three levels where two are allowed: %s %s", err.path, err.message);
}

int main(void)
{
    string_ends();
    one_value_count();
    run_compact_cases();
    run_verify_cases();
    decoded_fields();
    return check_done("decode_cases");
}
