/* The pricing step: which costs it fills, through which tokenizer, and for
 * which units it names the text by digest. */
#include "check.h"
#include "pointer.h"
#include "pricing.h"
#include "sha256.h"
#include "tokenizer.h"

#include <string.h>

static void set_unit(compaction_request *r, size_t i, const char *key, unit_class cls,
                     const char *text)
{
    plan_unit *u = &r->units[i];
    u->key = key;
    u->key_len = strlen(key);
    u->cls = cls;
    if (text) {
        u->has_text = 1;
        u->text = text;
        u->text_len = strlen(text);
    }
}

static void tokenizer_table(void)
{
    const tokenizer *t = tokenizer_find("bytes", 5);
    check(t && strcmp(tokenizer_name(t), "bytes") == 0, "bytes is an encoding");
    check(tokenizer_find("bytes\0x", 7) == NULL, "a name with an embedded NUL names nothing");
    check(tokenizer_find("byte", 4) == NULL && tokenizer_find("", 0) == NULL, "unknown names");
    check(tokenizer_default() == t, "the default without COMPACTD_TOKENIZER is bytes");
    check(tokenizer_count(t, "h\xc3\xa9llo", 6) == 6, "bytes counts UTF-8 bytes");
    check(tokenizer_count(t, "", 0) == 0, "nothing costs nothing");
}

static void fills_what_is_missing(void)
{
    compaction_request r;
    compactd_error err = {0};
    check(compaction_request_init(&r, 5) == 0, "init");
    r.tokenizer = tokenizer_default(); /* what a decoder resolves a request to */
    r.mode = PLAN_STRICT;
    set_unit(&r, 0, "given", UNIT_PROTECTED, "twelve bytes");
    r.units[0].tokens = 3;
    r.detail[0].has_tokens = 1;
    set_unit(&r, 1, "counted", UNIT_PROTECTED, "seven b");
    set_unit(&r, 2, "k]", UNIT_DERIVABLE, "derivable text");
    r.detail[2].has_tokens = 0;
    r.units[2].has_summary = 1;
    r.detail[2].summary = "sum";
    r.detail[2].summary_len = 3;
    set_unit(&r, 3, "s", UNIT_DERIVABLE, NULL);
    r.units[3].tokens = 40;
    r.detail[3].has_tokens = 1;
    r.units[3].has_summary = 1;
    r.units[3].summary_tokens = 9;
    r.detail[3].has_summary_tokens = 1;
    r.detail[3].summary = "a longer summary";
    r.detail[3].summary_len = 16;
    set_unit(&r, 4, "gone", UNIT_REDUNDANT, "old");
    r.detail[4].has_tokens = 0;

    check(pricing_run(&r, &err) == 0, "pricing: %s", err.message);
    check(r.units[0].tokens == 3, "a given count stands: %lld", (long long)r.units[0].tokens);
    check(r.units[1].tokens == 7, "a missing count is the text's: %lld",
          (long long)r.units[1].tokens);
    check(r.units[2].tokens == 14 && r.units[2].summary_tokens == 3,
          "derivable text and summary counted: %lld, %lld", (long long)r.units[2].tokens,
          (long long)r.units[2].summary_tokens);
    check(r.units[3].summary_tokens == 9, "a given summary count stands");
    check(r.units[4].tokens == 3, "a redundant unit's text is counted too");

    /* Protected units get their pointer cost; under bytes it is the same
     * whatever the digest, so no digest is taken until the plan
     * externalizes the unit. In strict mode a derivable unit is never
     * externalized, so it gets neither. */
    char want[SHA256_HEX_LEN + 1];
    sha256_hex("seven b", 7, want);
    check(r.sha256[0][0] == '\0' && r.sha256[1][0] == '\0',
          "under bytes no digest is taken while pricing");
    plan_entry entries[5] = {{.decision = DECISION_PRESERVED},
                             {.decision = DECISION_EXTERNALIZED},
                             {.decision = DECISION_PRESERVED},
                             {.decision = DECISION_DROPPED},
                             {.decision = DECISION_DROPPED}};
    plan_result plan = {.entries = entries, .n = 5, .n_externalized = 1};
    pricing_digest_spills(&r, &plan);
    check(strcmp(r.sha256[1], want) == 0, "digest of the protected unit the plan externalizes");
    check(r.sha256[0][0] == '\0', "no digest of a protected unit the plan keeps");
    check(r.units[0].pointer_tokens == (int64_t)pointer_length("given", 5) &&
              r.units[1].pointer_tokens == (int64_t)pointer_length("counted", 7),
          "pointer costs under bytes are pointer lengths");
    check(r.sha256[2][0] == '\0' && r.units[2].pointer_tokens == 0,
          "strict: no digest or pointer for a derivable unit");
    check(r.sha256[4][0] == '\0', "no digest for a redundant unit");

    /* In discovery mode a derivable unit with text may be externalized; a
     * digest already there is kept. */
    r.mode = PLAN_DISCOVERY;
    memset(r.sha256[1], 'f', SHA256_HEX_LEN);
    check(pricing_run(&r, &err) == 0, "pricing again: %s", err.message);
    check(r.sha256[2][0] == '\0' && r.units[2].pointer_tokens == (int64_t)pointer_length("k]", 2),
          "discovery: escaped pointer cost of a derivable unit (%lld), no digest yet",
          (long long)r.units[2].pointer_tokens);
    check(r.units[2].pointer_tokens == 2 + 2 + POINTER_OVERHEAD, "']' is written as %%5D");
    check(r.sha256[1][0] == 'f', "a digest already known is not recomputed");
    check(r.sha256[3][0] == '\0', "no digest without text");
    compaction_request_free(&r);
}

static void refuses_what_cannot_be_counted(void)
{
    compaction_request r;
    compactd_error err = {0};
    check(compaction_request_init(&r, 1) == 0, "init");
    r.tokenizer = tokenizer_default();
    set_unit(&r, 0, "blank", UNIT_DERIVABLE, NULL);
    check(pricing_run(&r, &err) != 0 && err.kind == ERR_INVALID_REQUEST,
          "a unit with neither tokens nor text is refused");
    compaction_request_free(&r);
}

int main(void)
{
    tokenizer_table();
    fills_what_is_missing();
    refuses_what_cannot_be_counted();
    return check_done("pricing_cases");
}
