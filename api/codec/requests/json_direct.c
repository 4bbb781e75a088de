/* The compact route's body read straight into the typed request. See
 * json_direct.h.
 *
 * The tree path costs a shape scan, a jansson tree and a strcmp per member
 * name per unit: about half of what a small compaction costs. This reader
 * goes over the bytes once, copies each string the request keeps once,
 * and checks as it goes what the tree path checks (types, ranges, lengths,
 * the classes' rules, unique keys). It reads a strict subset: member names
 * without escapes, integers without fraction or exponent, no "metadata",
 * no member twice; whatever else it meets, it gives up (-1) and the tree
 * path reads the body, so that every refusal is worded by that one path.
 * It also prices, value by value, the tree it does not build
 * (json_price.h), and holds that price as the tree path would. */
#include "json_direct.h"

#include "answer_account.h"
#include "bytemap.h"
#include "json_fields.h"
#include "json_lex.h"
#include "json_price.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *p, *end;
    const decode_limits *lim;
    int out_of_memory;
    char *strings; /* the kept strings, each NUL-terminated */
    size_t used;
    json_price price;
    plan_unit *units;
    unit_detail *detail;
    size_t n, cap;
} direct;

/* ---- Bytes ---- */

static void skip_space(direct *d)
{
    while (d->p < d->end && json_lex_is_space(*d->p))
        d->p++;
}

/* Takes c when it comes next, after any space. */
static int take(direct *d, unsigned char c)
{
    skip_space(d);
    if (d->p < d->end && *d->p == c) {
        d->p++;
        return 1;
    }
    return 0;
}

/* A string of plain bytes that is compared, not kept (a member's name, a
 * name from a set): an escape or a byte above 0x7F gives up. */
static int read_plain(direct *d, const char **out, size_t *len)
{
    if (d->p >= d->end || *d->p != '"')
        return -1;
    const unsigned char *s = d->p + 1, *q = json_lex_plain_run(s, d->end);
    if (q >= d->end || *q != '"')
        return -1;
    *out = (const char *)s;
    *len = (size_t)(q - s);
    d->p = q + 1;
    return 0;
}

/* A member's name, up to and past the colon after it, priced as its pair. */
static int read_name(direct *d, const char **name, size_t *len)
{
    if (read_plain(d, name, len) != 0)
        return -1;
    json_price_member(&d->price, *len);
    if (!take(d, ':'))
        return -1;
    skip_space(d);
    return 0;
}

static int name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

/* After a member or an element: 1 when a comma says another follows, 0
 * when close ends the container, -1 for anything else. */
static int after_item(direct *d, unsigned char close)
{
    if (take(d, ',')) {
        skip_space(d);
        return 1;
    }
    return take(d, close) ? 0 : -1;
}

/* ---- Values ---- */

/* A string kept by the request: its decoded bytes copied into d->strings
 * (never longer than its raw bytes with their quotes, which sized it),
 * NUL-terminated. Between min and max bytes, decoded. */
static int read_string(direct *d, size_t min, size_t max, const char **out, size_t *len)
{
    int escapes;
    const unsigned char *raw = d->p + 1, *q;
    char *o = d->strings + d->used;
    size_t n;
    if (d->p >= d->end || *d->p != '"' || !(q = json_lex_string(raw, d->end, 1, o, &n, &escapes)))
        return -1;
    json_price_string(&d->price, (size_t)(q - raw));
    o[n] = '\0';
    d->p = q + 1;
    *out = o;
    *len = n;
    d->used += n + 1;
    return n < min || n > max ? -1 : 0;
}

/* A string compared with names, not kept. */
static int read_word(direct *d, const char **out, size_t *len)
{
    if (read_plain(d, out, len) != 0)
        return -1;
    json_price_string(&d->price, *len);
    return 0;
}

/* An integer in [lo, hi], as jansson reads one: no leading zero; a
 * fraction or an exponent (a real) and more than 18 digits give up. */
static int read_int(direct *d, int64_t lo, int64_t hi, int64_t *out)
{
    const unsigned char *p = d->p, *end = d->end;
    int neg = p < end && *p == '-';
    p += neg;
    const unsigned char *digits = p;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - digits < 19)
        v = v * 10 + (uint64_t)(*p++ - '0');
    size_t n = (size_t)(p - digits);
    if (n == 0 || n > 18 || (n > 1 && *digits == '0'))
        return -1;
    if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E'))
        return -1;
    int64_t i = neg ? -(int64_t)v : (int64_t)v;
    if (i < lo || i > hi)
        return -1;
    json_price_number(&d->price);
    d->p = p;
    *out = i;
    return 0;
}

static int read_bool(direct *d, int *out)
{
    if (d->end - d->p >= 4 && memcmp(d->p, "true", 4) == 0) {
        d->p += 4;
        *out = 1;
        return 0;
    }
    if (d->end - d->p >= 5 && memcmp(d->p, "false", 5) == 0) {
        d->p += 5;
        *out = 0;
        return 0;
    }
    return -1;
}

/* ---- A unit ---- */

enum {
    U_CLASS = 1 << 0,
    U_KEY = 1 << 1,
    U_TOKENS = 1 << 2,
    U_TEXT = 1 << 3,
    U_PRIORITY = 1 << 4,
    U_GROUP = 1 << 5,
    U_SUMMARY = 1 << 6,
    U_REACQUIRE = 1 << 7,
    U_DERIVABLE_ONLY = U_PRIORITY | U_SUMMARY | U_REACQUIRE
};

static int read_class(direct *d, unit_class *out)
{
    static const char *const names[] = {"protected", "derivable", "redundant"};
    const char *s;
    size_t len;
    if (read_word(d, &s, &len) != 0)
        return -1;
    for (int k = 0; k < UNIT_CLASSES; k++)
        if (name_is(s, len, names[k])) {
            *out = (unit_class)k;
            return 0;
        }
    return -1;
}

/* {"text": ..., "tokens"?: ...}, nothing else. */
static int read_summary(direct *d, plan_unit *u, unit_detail *x)
{
    int seen = 0; /* 1: text, 2: tokens */
    size_t items = 0;
    if (!take(d, '{'))
        return -1;
    skip_space(d);
    if (d->p < d->end && *d->p == '}')
        return -1; /* its text is required */
    int next;
    for (next = 1; next == 1; next = after_item(d, '}')) {
        const char *name;
        size_t len;
        if (read_name(d, &name, &len) != 0)
            return -1;
        items++;
        if (name_is(name, len, "text") && !(seen & 1)) {
            seen |= 1;
            if (read_string(d, 0, d->lim->max_text_bytes, &x->summary, &x->summary_len) != 0)
                return -1;
        } else if (name_is(name, len, "tokens") && !(seen & 2)) {
            seen |= 2;
            x->has_summary_tokens = 1;
            if (read_int(d, 0, (int64_t)TOKENS_MAX, &u->summary_tokens) != 0)
                return -1;
        } else {
            return -1;
        }
    }
    json_price_container(&d->price, 1, items);
    u->has_summary = 1;
    return next == 0 && (seen & 1) ? 0 : -1;
}

/* One member of a unit, named name; *seen gains its bit. */
static int read_unit_member(direct *d, const char *name, size_t len, plan_unit *u, unit_detail *x,
                            unsigned *seen)
{
    unsigned bit;
    int rc;
    const decode_limits *lim = d->lim;
    if (name_is(name, len, "class")) {
        bit = U_CLASS;
        rc = read_class(d, &u->cls);
    } else if (name_is(name, len, "key")) {
        bit = U_KEY;
        rc = read_string(d, 1, lim->max_key_bytes, &u->key, &u->key_len);
    } else if (name_is(name, len, "tokens")) {
        bit = U_TOKENS;
        x->has_tokens = 1;
        rc = read_int(d, 0, (int64_t)TOKENS_MAX, &u->tokens);
    } else if (name_is(name, len, "text")) {
        bit = U_TEXT;
        u->has_text = 1;
        rc = read_string(d, 0, lim->max_text_bytes, &u->text, &u->text_len);
    } else if (name_is(name, len, "priority")) {
        bit = U_PRIORITY;
        rc = read_int(d, -(int64_t)TOKENS_MAX - 1, (int64_t)TOKENS_MAX, &u->priority);
    } else if (name_is(name, len, "group")) {
        bit = U_GROUP;
        rc = read_string(d, 1, GROUP_MAX_BYTES, &u->group, &u->group_len);
    } else if (name_is(name, len, "summary")) {
        bit = U_SUMMARY;
        rc = read_summary(d, u, x);
    } else if (name_is(name, len, "reacquire")) {
        bit = U_REACQUIRE;
        rc = read_string(d, 0, lim->max_text_bytes, &x->reacquire, &x->reacquire_len);
    } else {
        return -1; /* metadata, or a member no unit has */
    }
    if (*seen & bit)
        return -1;
    *seen |= bit;
    return rc;
}

/* The unit object at d->p into u and x, checked by the domain's rules. */
static int read_unit(direct *d, plan_unit *u, unit_detail *x)
{
    unsigned seen = 0;
    size_t items = 0;
    memset(u, 0, sizeof(*u));
    memset(x, 0, sizeof(*x));
    if (!take(d, '{'))
        return -1;
    skip_space(d);
    if (d->p < d->end && *d->p == '}')
        return -1; /* its class and key are required */
    int next;
    for (next = 1; next == 1; next = after_item(d, '}')) {
        const char *name;
        size_t len;
        if (read_name(d, &name, &len) != 0 || read_unit_member(d, name, len, u, x, &seen) != 0)
            return -1;
        items++;
    }
    json_price_container(&d->price, 1, items);
    if (next != 0 || (seen & (U_CLASS | U_KEY)) != (U_CLASS | U_KEY))
        return -1;
    if ((seen & U_DERIVABLE_ONLY) && u->cls != UNIT_DERIVABLE)
        return -1;
    for (size_t i = 0; i < u->key_len; i++) {
        unsigned char ch = (unsigned char)u->key[i];
        if (ch < 0x20 || ch == 0x7f)
            return -1;
    }
    const char *field;
    return compaction_unit_problem(u, x, &field) ? -1 : 0;
}

/* Room for one more unit. */
static int grow(direct *d)
{
    if (d->n < d->cap)
        return 0;
    size_t cap = d->cap ? 2 * d->cap : 16;
    plan_unit *u = realloc(d->units, cap * sizeof(*u));
    if (u)
        d->units = u;
    unit_detail *x = realloc(d->detail, cap * sizeof(*x));
    if (x)
        d->detail = x;
    if (!u || !x) {
        d->out_of_memory = 1;
        return -1;
    }
    d->cap = cap;
    return 0;
}

static int unique_keys(direct *d)
{
    bytemap seen = {0};
    int rc = bytemap_init(&seen, d->n);
    d->out_of_memory = rc != 0;
    for (size_t i = 0; rc == 0 && i < d->n; i++)
        if (bytemap_put_new(&seen, d->units[i].key, d->units[i].key_len, i))
            rc = -1;
    bytemap_free(&seen);
    return rc;
}

static int read_units(direct *d)
{
    if (!take(d, '[') || grow(d) != 0) /* one slot at least, as compaction_request_init() */
        return -1;
    skip_space(d);
    if (d->p < d->end && *d->p == ']') {
        d->p++;
    } else {
        int next;
        for (next = 1; next == 1; next = after_item(d, ']')) {
            if (d->n == d->lim->max_units || grow(d) != 0 ||
                read_unit(d, &d->units[d->n], &d->detail[d->n]) != 0)
                return -1;
            d->n++;
        }
        if (next != 0)
            return -1;
    }
    json_price_container(&d->price, 0, d->n);
    return unique_keys(d);
}

/* ---- The request ---- */

enum { R_BUDGET = 1, R_UNITS = 2, R_MODE = 4, R_DRY_RUN = 8, R_TOKENIZER = 16 };

static int read_mode(direct *d, plan_mode *out)
{
    const char *s;
    size_t len;
    if (read_word(d, &s, &len) != 0)
        return -1;
    if (name_is(s, len, "strict"))
        *out = PLAN_STRICT;
    else if (name_is(s, len, "discovery"))
        *out = PLAN_DISCOVERY;
    else
        return -1;
    return 0;
}

static int read_tokenizer(direct *d, const tokenizer **out)
{
    const char *s;
    size_t len;
    if (read_word(d, &s, &len) != 0)
        return -1;
    return (*out = tokenizer_find(s, len)) ? 0 : -1;
}

static int read_member(direct *d, const char *name, size_t len, compaction_request *req,
                       unsigned *seen)
{
    unsigned bit;
    int rc;
    if (name_is(name, len, "budget")) {
        bit = R_BUDGET;
        rc = read_int(d, 0, (int64_t)TOKENS_MAX, &req->budget);
    } else if (name_is(name, len, "units")) {
        bit = R_UNITS;
        rc = *seen & R_UNITS ? -1 : read_units(d);
    } else if (name_is(name, len, "mode")) {
        bit = R_MODE;
        rc = read_mode(d, &req->mode);
    } else if (name_is(name, len, "dry_run")) {
        bit = R_DRY_RUN;
        rc = read_bool(d, &req->dry_run);
    } else if (name_is(name, len, "tokenizer")) {
        bit = R_TOKENIZER;
        rc = read_tokenizer(d, &req->tokenizer);
    } else {
        return -1;
    }
    if (*seen & bit)
        return -1;
    *seen |= bit;
    return rc;
}

static int read_request(direct *d, compaction_request *req)
{
    unsigned seen = 0;
    size_t items = 0;
    if (!take(d, '{'))
        return -1;
    skip_space(d);
    if (d->p < d->end && *d->p == '}')
        return -1; /* budget and units are required */
    int next;
    for (next = 1; next == 1; next = after_item(d, '}')) {
        const char *name;
        size_t len;
        if (read_name(d, &name, &len) != 0 || read_member(d, name, len, req, &seen) != 0)
            return -1;
        items++;
    }
    json_price_container(&d->price, 1, items);
    skip_space(d);
    return next == 0 && d->p == d->end && (seen & R_BUDGET) && (seen & R_UNITS) ? 0 : -1;
}

int json_direct_compact(const char *body, size_t len, const decode_limits *lim, compact_input *in,
                        compactd_error *err)
{
    memset(in, 0, sizeof(*in));
    if (!body)
        return DIRECT_GAVE_UP; /* no body: not even a zero offset from NULL */
    direct d = {
        .p = (const unsigned char *)body, .end = (const unsigned char *)body + len, .lim = lim};
    compaction_request req = {.tokenizer = tokenizer_default()};
    size_t nodes = 0;
    if (!(d.strings = malloc(len + 1)))
        d.out_of_memory = 1;
    else if (read_request(&d, &req) != 0)
        goto give_up;
    else if (!(req.sha256 = calloc(d.n ? d.n : 1, sizeof(*req.sha256))))
        d.out_of_memory = 1;
    if (d.out_of_memory)
        goto give_up;
    json_price_finish(&d.price);
    nodes = json_price_nodes(&d.price);
    if (answer_take(nodes) != ANSWER_OK)
        goto give_up; /* the tree path refuses it, in its words */
    req.units = d.units;
    req.detail = d.detail;
    req.n = d.n;
    in->req = req;
    in->strings = d.strings;
    in->held = nodes;
    in->held_from = answer_current();
    return DIRECT_TAKEN;
give_up:
    free(req.sha256);
    free(d.units);
    free(d.detail);
    free(d.strings);
    if (!d.out_of_memory)
        return DIRECT_GAVE_UP;
    /* The tree path would need more than this: it is not tried. */
    error_set(err, ERR_INTERNAL, "out of memory while parsing the request body");
    return -1;
}
