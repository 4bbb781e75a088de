/* Pages of re-acquired texts: the arguments read, the cut made and the
 * page's members written. See spill_page.h. */
#include "spill_page.h"

#include "json_fields.h"
#include "text_page.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- Arguments ---- */

/* Reads a canonical decimal (digits only, no sign, space or leading zero
 * but "0" itself) of at most max. 0, or -1. */
static int read_decimal(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++) {
        unsigned d = (unsigned)(s[n] - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (n == 0 || s[n] != '\0' || (n > 1 && s[0] == '0'))
        return -1;
    *out = v;
    return 0;
}

static int bad_offset(compactd_error *err, int query)
{
    error_set(err, ERR_INVALID_REQUEST,
              "%s must be an integer from 0: the byte offset where the page starts (0, or the "
              "next_offset of the page before)",
              query ? "query parameter offset" : "offset");
    snprintf(err->path, sizeof(err->path), "%s", query ? "" : "$.offset");
    return -1;
}

static int bad_max_tokens(compactd_error *err, int query, int64_t max)
{
    error_set(err, ERR_INVALID_REQUEST,
              "%s must be an integer from 1 to %" PRId64 ": the most tokens the page may hold",
              query ? "query parameter max_tokens" : "max_tokens", max);
    snprintf(err->path, sizeof(err->path), "%s", query ? "" : "$.max_tokens");
    return -1;
}

static int bad_tokenizer(compactd_error *err, int query)
{
    char names[128];
    tokenizer_names(names, sizeof(names));
    error_set(err, ERR_INVALID_REQUEST, "%s must name a tokenizer: %s",
              query ? "query parameter tokenizer" : "tokenizer", names);
    snprintf(err->path, sizeof(err->path), "%s", query ? "" : "$.tokenizer");
    return -1;
}

int spill_page_args_query(const char *offset, const char *max_tokens, const char *tokenizer_name,
                          int64_t max, spill_page_args *out, compactd_error *err)
{
    uint64_t v;
    *out = (spill_page_args){0, 0, field_default_tokenizer(NULL), 1};
    if (offset) {
        if (read_decimal(offset, INT64_MAX, &v) != 0)
            return bad_offset(err, 1);
        out->offset = v;
    }
    if (max_tokens) {
        if (read_decimal(max_tokens, (uint64_t)max, &v) != 0 || v < 1)
            return bad_max_tokens(err, 1, max);
        out->max_tokens = (int64_t)v;
    }
    if (tokenizer_name && !(out->tk = tokenizer_find(tokenizer_name, strlen(tokenizer_name))))
        return bad_tokenizer(err, 1);
    return 0;
}

/* A member a tool call may leave out or send as null. */
static int given(const json_t *v)
{
    return v && !json_is_null(v);
}

int spill_page_args_json(const json_t *offset, const json_t *max_tokens,
                         const json_t *tokenizer_name, int64_t max, spill_page_args *out,
                         compactd_error *err)
{
    *out = (spill_page_args){0, 0, field_default_tokenizer(NULL), 0};
    if (given(offset)) {
        if (!json_is_integer(offset) || json_integer_value(offset) < 0)
            return bad_offset(err, 0);
        out->offset = (uint64_t)json_integer_value(offset);
    }
    if (given(max_tokens)) {
        if (!json_is_integer(max_tokens) || json_integer_value(max_tokens) < 1 ||
            json_integer_value(max_tokens) > max)
            return bad_max_tokens(err, 0, max);
        out->max_tokens = (int64_t)json_integer_value(max_tokens);
    }
    if (given(tokenizer_name) && (!json_is_string(tokenizer_name) ||
                                  !(out->tk = tokenizer_find(json_string_value(tokenizer_name),
                                                             json_string_length(tokenizer_name)))))
        return bad_tokenizer(err, 0);
    return 0;
}

/* ---- The cut ---- */

static int64_t count(void *ctx, const char *text, size_t len)
{
    return tokenizer_count(ctx, text, len);
}

static int oom(compactd_error *err)
{
    return error_set(err, ERR_INTERNAL, "out of memory while counting a page");
}

int spill_page_check(void *ctx, const store_record *spill, compactd_error *err)
{
    spill_page_request *c = ctx;
    return spill_page_cut(c->args, spill->text, spill->text_len, &c->page, err);
}

int spill_page_cut(const spill_page_args *args, const char *text, size_t len, spill_page *out,
                   compactd_error *err)
{
    if (args->offset > len || !text_page_boundary(text, len, (size_t)args->offset)) {
        error_set(err, ERR_INVALID_REQUEST,
                  args->offset > len
                      ? "offset %" PRIu64 " is past the end of the text (%zu bytes): start at 0 "
                        "or at the next_offset of the page before"
                      : "offset %" PRIu64 " falls inside a UTF-8 character of the text (%zu "
                        "bytes): start at 0 or at the next_offset of the page before",
                  args->offset, len);
        snprintf(err->path, sizeof(err->path), "%s", args->query ? "" : "$.offset");
        return -1;
    }
    void *tk = (void *)args->tk;
    *out = (spill_page){(size_t)args->offset, len, len, 0, 0, args->tk, 0};
    if (args->max_tokens > 0 &&
        text_page_end(text, len, out->offset, args->max_tokens, count, tk, &out->end) != 0)
        return oom(err);
    out->remaining_tokens = tokenizer_count(args->tk, text + out->end, len - out->end);
    out->total_tokens = tokenizer_count(args->tk, text, len);
    if (out->remaining_tokens < 0 || out->total_tokens < 0)
        return oom(err);
    return 0;
}

store_record spill_page_record(const store_record *r, const spill_page *p)
{
    store_record page = *r;
    page.text = r->text ? r->text + p->offset : NULL;
    page.text_len = p->end - p->offset;
    return page;
}

void spill_page_members(jw *w, const spill_page *p)
{
    jw_member_int(w, "offset", (int64_t)p->offset);
    jw_member(w, "next_offset");
    if (p->end < p->len)
        jw_int(w, (int64_t)p->end);
    else
        jw_null(w);
    jw_member_int(w, "remaining_tokens", p->remaining_tokens);
    jw_member_int(w, "total_tokens", p->total_tokens);
    jw_member_cstring(w, "tokenizer", tokenizer_name(p->tk));
    if (p->with_note && p->end < p->len) {
        char note[256];
        spill_page_note(p, note, sizeof(note));
        jw_member_cstring(w, "note", note);
    }
}

void spill_page_note(const spill_page *p, char *out, size_t size)
{
    snprintf(out, size,
             "[compactd: this is bytes %zu to %zu of %zu; %" PRId64 " tokens (%s) remain. Call "
             "reacquire again with the same pointer and offset %zu to read on.]",
             p->offset, p->end, p->len, p->remaining_tokens, tokenizer_name(p->tk), p->end);
}
