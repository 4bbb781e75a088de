/* Response bodies and decision-log entries, written in one pass with the
 * streaming writer; the plan never echoes a unit's text. */
#include "json_encode.h"

#include "answer_account.h"
#include "json_escape.h"

#include "json_writer.h"
#include "pointer.h"
#include "shared_defs.h"

#include <stdlib.h>
#include <string.h>

/* ---- Errors ---- */

static void error_head(jw *w, const compactd_error *err)
{
    jw_object_open(w);
    jw_member(w, "error");
    jw_object_open(w);
    jw_member_cstring(w, "type", error_type(err->kind));
    jw_member_cstring(w, "message", err->message);
    if (err->path[0])
        jw_member_cstring(w, "path", err->path);
}

static char *error_tail(jw *w, size_t *len)
{
    jw_object_close(w);
    jw_object_close(w);
    return jw_finish(w, len);
}

char *json_encode_error(const compactd_error *err, size_t *len)
{
    jw w;
    jw_init(&w, 256);
    error_head(&w, err);
    return error_tail(&w, len);
}

char *json_encode_compaction_failure(const compactd_error *err, int64_t budget,
                                     int64_t required_budget, const plan_unit *u, size_t *len)
{
    jw w;
    jw_init(&w, 512 + u->key_len * 6);
    error_head(&w, err);
    jw_member_int(&w, "budget", budget);
    jw_member_int(&w, "required_budget", required_budget);
    jw_member_string(&w, "key", u->key, u->key_len);
    jw_member_int(&w, "tokens", u->tokens);
    jw_member_int(&w, "pointer_tokens", u->pointer_tokens);
    return error_tail(&w, len);
}

char *json_encode_ambiguous(const compactd_error *err, const spill_candidates *amb, size_t *len)
{
    jw w;
    jw_init(&w, 512 + amb->n * 72);
    error_head(&w, err);
    jw_member(&w, "candidates");
    jw_array_open(&w);
    for (size_t i = 0; i < amb->n; i++)
        jw_cstring(&w, amb->sha256[i]);
    jw_array_close(&w);
    return error_tail(&w, len);
}

/* ---- Hrefs ---- */

char *spill_href(const char *session, const char *key, size_t key_len, const char *sha256)
{
    static const char hex[] = "0123456789ABCDEF";
    static const char prefix[] = "/v1/sessions/";
    size_t slen = strlen(session);
    char *out = malloc(sizeof(prefix) + slen * 3 + 8 + key_len * 3 + 8 + 64 + 1);
    if (!out)
        return NULL;
    char *p = out;
    memcpy(p, prefix, sizeof(prefix) - 1);
    p += sizeof(prefix) - 1;
    /* A '/' of the session id is escaped, so that the id stays one segment. */
    for (size_t i = 0; i < slen; i++) {
        if (session[i] == '/') {
            memcpy(p, "%2F", 3);
            p += 3;
        } else {
            *p++ = session[i];
        }
    }
    memcpy(p, "/spills/", 8);
    p += 8;
    /* RFC 3986 unreserved characters stay; every other byte is escaped. */
    for (size_t i = 0; i < key_len; i++) {
        unsigned char c = (unsigned char)key[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            (c != '\0' && strchr(KEY_UNRESERVED_PUNCTUATION, c) != NULL)) {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    memcpy(p, "?sha256=", 8);
    p += 8;
    memcpy(p, sha256, 64);
    p[64] = '\0';
    return out;
}

/* ---- Plans ---- */

/* Writes the identifiers of a summarized unit's text that its summary lost;
 * returns how many were written. */
static size_t lost_identifiers(jw *w, const compact_input *in, const compaction *c, size_t i)
{
    identifiers_result lost;
    const plan_unit *u = &in->req.units[i];
    jw_member(w, "lost_identifiers");
    jw_array_open(w);
    if (compaction_lost_identifiers(&in->req, c, i, &lost) != 0)
        w->oom = 1;
    for (size_t k = 0; k < lost.n; k++)
        jw_string(w, u->text + lost.spans[k].off, lost.spans[k].len);
    jw_array_close(w);
    return lost.n;
}

/* On a dry run, a derivable unit dropped over budget tells the most its
 * summarized form (its group's, for a member of a group) could take and be
 * kept: the caller summarizes only those, to that size. */
static void summary_budget(jw *w, const compact_input *in, const plan_entry *e)
{
    if (in->req.dry_run && e->reason == DROP_OVER_BUDGET)
        jw_member_int(w, "summary_budget", e->room);
}

/* Writes one decision's list in request order. Returns the number of lost
 * identifiers written (summarized units only). */
static size_t plan_list(jw *w, const char *session, const compact_input *in, const compaction *c,
                        plan_decision which)
{
    const plan_result *p = &c->plan;
    size_t lost = 0;
    char ptr[POINTER_MAX_BYTES];

    jw_member(w, plan_decision_name(which));
    jw_array_open(w);
    for (size_t i = 0; i < in->req.n; i++) {
        const plan_unit *u = &in->req.units[i];
        const plan_entry *e = &p->entries[i];
        if (e->decision != which)
            continue;
        jw_object_open(w);
        jw_member_string(w, "key", u->key, u->key_len);
        if (which != DECISION_SUMMARIZED)
            jw_member_cstring(w, "class", unit_class_name(u->cls));
        jw_member_int(w, "tokens", u->tokens);
        if (which == DECISION_SUMMARIZED) {
            jw_member_int(w, "summary_tokens", u->summary_tokens);
            lost += lost_identifiers(w, in, c, i);
        } else if (which == DECISION_EXTERNALIZED) {
            const char *sha = in->req.sha256[i];
            size_t plen = pointer_format(ptr, u->key, u->key_len, sha);
            jw_member_string(w, "pointer", ptr, plen);
            jw_member_int(w, "pointer_tokens", u->pointer_tokens);
            jw_member_cstring(w, "sha256", sha);
            char *href = spill_href(session, u->key, u->key_len, sha);
            if (href)
                jw_member_cstring(w, "href", href);
            else
                w->oom = 1;
            free(href);
        } else if (which == DECISION_DROPPED) {
            jw_member_cstring(w, "reason", plan_reason_name(e->reason));
            if (in->req.detail[i].reacquire)
                jw_member_string(w, "reacquire", in->req.detail[i].reacquire,
                                 in->req.detail[i].reacquire_len);
            summary_budget(w, in, e);
        }
        jw_object_close(w);
    }
    jw_array_close(w);
    return lost;
}

/* One entry per unit in request order: how it ends up in the context, so a
 * caller can rebuild the context in order without matching the lists. */
static void decision_list(jw *w, const compact_input *in, const compaction *c)
{
    char ptr[POINTER_MAX_BYTES];
    jw_member(w, "decisions");
    jw_array_open(w);
    for (size_t i = 0; i < in->req.n; i++) {
        const plan_unit *u = &in->req.units[i];
        const unit_detail *d = &in->req.detail[i];
        const plan_entry *e = &c->plan.entries[i];
        jw_object_open(w);
        jw_member_string(w, "key", u->key, u->key_len);
        jw_member_cstring(w, "class", unit_class_name(u->cls));
        jw_member_cstring(w, "decision", plan_decision_name(e->decision));
        jw_member_int(w, "tokens", e->cost);
        if (e->decision == DECISION_EXTERNALIZED) {
            size_t plen = pointer_format(ptr, u->key, u->key_len, in->req.sha256[i]);
            jw_member_string(w, "pointer", ptr, plen);
            jw_member_cstring(w, "sha256", in->req.sha256[i]);
        } else if (e->decision == DECISION_DROPPED) {
            jw_member_cstring(w, "reason", plan_reason_name(e->reason));
            summary_budget(w, in, e);
        }
        if (d->metadata) {
            jw_member(w, "metadata");
            jw_raw(w, d->metadata, d->metadata_len);
        }
        jw_object_close(w);
    }
    jw_array_close(w);
}

char *json_encode_plan(const char *session, const compact_input *in, const compaction *c,
                       size_t *len)
{
    const plan_result *p = &c->plan;
    jw w;
    jw_init(&w, 256 + in->req.n * 160);
    jw_object_open(&w);
    jw_member_cstring(&w, "session", session);
    jw_member_cstring(&w, "mode", in->req.mode == PLAN_DISCOVERY ? "discovery" : "strict");
    jw_member(&w, "dry_run");
    jw_bool(&w, in->req.dry_run);
    jw_member_cstring(&w, "tokenizer", tokenizer_name(in->req.tokenizer));
    jw_member_int(&w, "budget", p->budget);
    jw_member_int(&w, "used_tokens", p->used_tokens);
    jw_member_int(&w, "remaining_tokens", p->budget - p->used_tokens);
    jw_member_int(&w, "required_budget", p->required_budget);
    jw_member_int(&w, "verbatim_budget", p->verbatim_budget);
    plan_list(&w, session, in, c, DECISION_PRESERVED);
    size_t lost = plan_list(&w, session, in, c, DECISION_SUMMARIZED);
    /* Never changes the plan: it tells the caller its summaries are weaker
     * than they look. */
    jw_member_int(&w, "lost_identifier_count", (int64_t)lost);
    plan_list(&w, session, in, c, DECISION_EXTERNALIZED);
    plan_list(&w, session, in, c, DECISION_DROPPED);
    decision_list(&w, in, c);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

/* ---- Token counts ---- */

char *json_encode_tokens(const tokenizer *t, const int64_t *counts, size_t n, size_t *len)
{
    jw w;
    int64_t total = 0;
    jw_init(&w, 64 + n * 12);
    jw_object_open(&w);
    jw_member_cstring(&w, "tokenizer", tokenizer_name(t));
    jw_member(&w, "counts");
    jw_array_open(&w);
    for (size_t i = 0; i < n; i++) {
        jw_int(&w, counts[i]);
        total += counts[i];
    }
    jw_array_close(&w);
    jw_member_int(&w, "total", total);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

/* ---- Decision log ---- */

static void event_keys(jw *w, const compact_input *in, const compaction *c, plan_decision which)
{
    jw_member(w, plan_decision_name(which));
    jw_array_open(w);
    for (size_t i = 0; c && i < in->req.n; i++) {
        const plan_unit *u = &in->req.units[i];
        const plan_entry *e = &c->plan.entries[i];
        if (e->decision != which)
            continue;
        if (which == DECISION_PRESERVED || which == DECISION_SUMMARIZED) {
            jw_string(w, u->key, u->key_len);
            continue;
        }
        jw_object_open(w);
        jw_member_string(w, "key", u->key, u->key_len);
        if (which == DECISION_EXTERNALIZED) {
            jw_member_cstring(w, "class", unit_class_name(u->cls));
            jw_member_cstring(w, "sha256", in->req.sha256[i]);
        } else {
            jw_member_cstring(w, "reason", plan_reason_name(e->reason));
        }
        jw_object_close(w);
    }
    jw_array_close(w);
}

/* How a dropped unit is got back, as its decision says it: the caller's
 * `reacquire` for a unit, the read-only calls of its exchange for a
 * message. An instruction, never the unit's text. */
static void event_hint(jw *w, const compact_input *in, const chat_event_facts *chat, size_t i)
{
    if (chat && chat->hints && chat->hints[i].len)
        jw_member_string(w, "reacquire", chat->hints[i].s, chat->hints[i].len);
    else if (!chat && in->req.detail && in->req.detail[i].reacquire)
        jw_member_string(w, "reacquire", in->req.detail[i].reacquire,
                         in->req.detail[i].reacquire_len);
}

/* Every unit in request order with its tokens before and after, so that a
 * reader sees what filled the window; a refusal decided nothing, so its
 * units carry only what was asked. */
static void event_units(jw *w, const compact_input *in, const compaction *c, int failed,
                        const chat_event_facts *chat)
{
    jw_member(w, "units");
    jw_array_open(w);
    for (size_t i = 0; i < in->req.n; i++) {
        const plan_unit *u = &in->req.units[i];
        jw_object_open(w);
        jw_member_string(w, "key", u->key, u->key_len);
        if (chat) {
            jw_member_int(w, "message", (int64_t)i);
            if (chat->m)
                jw_member_cstring(w, "role", chat_role_name(chat->m[i].role));
        }
        int shown = chat && chat->shown;
        jw_member_cstring(w, "class", unit_class_name(shown ? chat->shown_cls[i] : u->cls));
        jw_member_int(w, "tokens_before", u->tokens);
        if (!failed) {
            const plan_entry *e = shown ? &chat->shown[i] : &c->plan.entries[i];
            jw_member_cstring(w, "decision", plan_decision_name(e->decision));
            jw_member_int(w, "tokens_after", e->cost);
            if (e->decision == DECISION_EXTERNALIZED)
                jw_member_cstring(w, "sha256", in->req.sha256[i]);
            else if (e->decision == DECISION_DROPPED) {
                jw_member_cstring(w, "reason", plan_reason_name(e->reason));
                event_hint(w, in, chat, i);
            }
        }
        jw_object_close(w);
    }
    jw_array_close(w);
}

char *json_encode_chat_compaction_event(const compact_input *in, const compaction *c, int failed,
                                        const chat_event_facts *chat, size_t *len)
{
    const plan_result *p = &c->plan;
    /* A chat history's window also holds its system prompt and markers. */
    int64_t used =
        chat ? p->used_tokens + chat->system_tokens + chat->tools_tokens + chat->marker_tokens
             : p->used_tokens;
    jw w;
    jw_init(&w, 256 + in->req.n * 144);
    jw_object_open(&w);
    jw_member_cstring(&w, "time", c->created_at);
    jw_member_cstring(&w, "kind", "compact");
    jw_member_cstring(&w, "outcome", outcome_name(failed ? OUTCOME_FAILURE : OUTCOME_OK));
    jw_member_cstring(&w, "format", chat ? chat->format : "units");
    jw_member_int(&w, "budget", p->budget);
    jw_member_int(&w, "used_tokens", failed ? 0 : used);
    jw_member_int(&w, "required_budget", p->required_budget);
    if (chat) {
        jw_member_int(&w, "system_tokens", chat->system_tokens);
        jw_member_int(&w, "tools_tokens", chat->tools_tokens);
        jw_member_int(&w, "marker_tokens", failed ? 0 : chat->marker_tokens);
        jw_member_int(&w, "marker_count", failed ? 0 : (int64_t)chat->marker_count);
        if (!failed)
            jw_member_cstring(&w, "plan", chat->plan);
    }
    /* A refusal decided nothing about the units: its lists stay empty. */
    const compaction *decided = failed ? NULL : c;
    event_keys(&w, in, decided, DECISION_PRESERVED);
    event_keys(&w, in, decided, DECISION_SUMMARIZED);
    event_keys(&w, in, decided, DECISION_EXTERNALIZED);
    event_keys(&w, in, decided, DECISION_DROPPED);
    event_units(&w, in, c, failed, chat);
    if (failed) {
        /* What the 422 named, with the figures it gave: the unit may be
         * one whose pointer alone would fit, where the protected units
         * together passed the budget. */
        const plan_unit *u = &in->req.units[p->failed_index];
        jw_member_string(&w, "failed_key", u->key, u->key_len);
        jw_member_int(&w, "failed_index", (int64_t)p->failed_index);
        jw_member_int(&w, "failed_tokens", u->tokens);
        jw_member_int(&w, "failed_pointer_tokens", u->pointer_tokens);
        if (chat && chat->cause) {
            jw_member_cstring(&w, "failed_cause", chat->cause);
            jw_member_int(&w, "failed_cause_tokens", chat->cause_tokens);
        }
    }
    jw_object_close(&w);
    return jw_finish(&w, len);
}

char *json_encode_compaction_event(const compact_input *in, const compaction *c, int failed,
                                   size_t *len)
{
    return json_encode_chat_compaction_event(in, c, failed, NULL, len);
}

char *json_encode_events(const store_event *e, size_t n, int more, size_t *len)
{
    jw w;
    size_t hint = 64;
    for (size_t i = 0; i < n; i++)
        hint += e[i].data_len + 64;
    jw_init(&w, hint);
    jw_object_open(&w);
    jw_member(&w, "events");
    jw_array_open(&w);
    for (size_t i = 0; i < n; i++) {
        /* The stream id goes in front of the stored entry's members. */
        jw_object_open(&w);
        jw_member_cstring(&w, "id", e[i].id);
        jw_members_raw(&w, e[i].data, e[i].data_len);
        jw_object_close(&w);
    }
    jw_array_close(&w);
    if (more && n > 0)
        jw_member_cstring(&w, "next_after", e[n - 1].id);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

/* ---- Spills ---- */

static void spill_href_member(jw *w, const char *session, const store_record *r)
{
    char *href = spill_href(session, r->key, r->key_len, r->sha256);
    if (href)
        jw_member_cstring(w, "href", href);
    else
        w->oom = 1;
    free(href);
}

/* What a spill's answer holds besides its text and its key, escaped, on
 * the front whose answer is the largest (an MCP tool result in its
 * JSON-RPC envelope): the record's other members with the metadata at its
 * longest, member names and punctuation, the envelope and a short id. */
#define SPILL_ANSWER_FRAME (UNIT_METADATA_MAX_BYTES + 1024)

size_t spill_answer_bytes(const char *key, size_t key_len, const char *text, size_t text_len)
{
    return json_escape_len(text, text_len) + json_escape_len(key, key_len) + SPILL_ANSWER_FRAME;
}

int spill_answer_fits(size_t limit, const char *key, size_t key_len, const char *text,
                      size_t text_len, size_t *bytes)
{
    /* A bound first: no byte escapes to more than json_escape_room()'s
     * six, and a text far below the limit (as almost every one is) fits
     * without the exact count, a pass over each spilled text. */
    size_t most = SPILL_ANSWER_FRAME;
    if (text_len <= (SIZE_MAX - most) / 12 && key_len <= (SIZE_MAX - most) / 12) {
        most += json_escape_room(text_len) + json_escape_room(key_len);
        if (answer_fits(limit, REACQUIRE_REQUEST_ROOM, most)) {
            *bytes = 0;
            return 1;
        }
    }
    *bytes = spill_answer_bytes(key, key_len, text, text_len);
    return answer_fits(limit, REACQUIRE_REQUEST_ROOM, *bytes);
}

void json_write_spill(jw *w, const store_record *r, const spill_page *page, int with_text)
{
    jw_object_open(w);
    jw_member_string(w, "key", r->key, r->key_len);
    jw_member_cstring(w, "class", r->cls);
    jw_member_cstring(w, "sha256", r->sha256);
    jw_member_int(w, "tokens", r->tokens);
    if (with_text)
        jw_member_string(w, "text", r->text, r->text_len);
    if (page)
        spill_page_members(w, page);
    jw_member_cstring(w, "created_at", r->created_at);
    if (r->metadata) {
        jw_member(w, "metadata");
        jw_raw(w, r->metadata, r->metadata_len);
    }
    jw_object_close(w);
}

char *json_encode_spill(const store_record *r, const spill_page *page, size_t *len)
{
    jw w;
    /* Sized once, exactly as every front sizes it: a guess of twice the
     * text would ask the answer account for more than the answer takes. */
    jw_init(&w, spill_answer_bytes(r->key, r->key_len, r->text, r->text_len));
    json_write_spill(&w, r, page, 1);
    return jw_finish(&w, len);
}

char *json_encode_spill_list(const char *session, const store_record *r, size_t n, size_t *len)
{
    jw w;
    jw_init(&w, 64 + n * 256);
    jw_object_open(&w);
    jw_member(&w, "spills");
    jw_array_open(&w);
    for (size_t i = 0; i < n; i++) {
        jw_object_open(&w);
        jw_member_string(&w, "key", r[i].key, r[i].key_len);
        jw_member_cstring(&w, "sha256", r[i].sha256);
        jw_member_int(&w, "tokens", r[i].tokens);
        spill_href_member(&w, session, &r[i]);
        jw_member_cstring(&w, "created_at", r[i].created_at);
        jw_object_close(&w);
    }
    jw_array_close(&w);
    jw_object_close(&w);
    return jw_finish(&w, len);
}

/* ---- Verify ---- */

static const char *found_name(verify_found f)
{
    return f == FOUND_VERBATIM ? "verbatim" : "pointer";
}

/* The repair's items in the order of the missing units: verbatim text, or
 * the pointer the spill was (or, in a dry run, would be) written under. */
static void repair_items(jw *w, const verify_result *r, int for_event)
{
    char ptr[POINTER_MAX_BYTES];
    const plan_result *p = &r->repair.plan;
    jw_member(w, "append");
    jw_array_open(w);
    for (size_t k = 0; k < r->repair_req.n; k++) {
        const plan_unit *u = &r->repair_req.units[k];
        int externalized = p->entries[k].decision == DECISION_EXTERNALIZED;
        const char *sha = r->repair_req.sha256[k];
        jw_object_open(w);
        jw_member_string(w, "key", u->key, u->key_len);
        if (for_event) {
            jw_member_cstring(w, "as", externalized ? "pointer" : "verbatim");
            jw_member_cstring(w, "sha256", r->sha256[r->missing_index[k]]);
        } else if (externalized) {
            size_t plen = pointer_format(ptr, u->key, u->key_len, sha);
            jw_member_string(w, "pointer", ptr, plen);
        } else {
            jw_member_string(w, "text", u->text, u->text_len);
        }
        jw_object_close(w);
    }
    jw_array_close(w);
    jw_member_int(w, "tokens", p->used_tokens);
}

/* The missing units in request order; the response also tells their tokens. */
static void missing_list(jw *w, const verify_input *in, const verify_result *r, int with_tokens)
{
    jw_member(w, "missing");
    jw_array_open(w);
    for (size_t i = 0; i < in->set.n; i++) {
        if (r->found[i] != FOUND_MISSING)
            continue;
        jw_object_open(w);
        jw_member_string(w, "key", in->set.units[i].key, in->set.units[i].key_len);
        if (with_tokens)
            jw_member_int(w, "tokens", in->set.units[i].tokens);
        jw_member_cstring(w, "sha256", r->sha256[i]);
        jw_object_close(w);
    }
    jw_array_close(w);
}

char *json_encode_verify(const verify_input *in, const verify_result *r, size_t *len)
{
    jw w;
    jw_init(&w, 256 + in->set.n * 96);
    jw_object_open(&w);
    jw_member_cstring(&w, "verdict",
                      outcome_name(r->n_missing ? OUTCOME_SILENT_TRUNCATION : OUTCOME_SAFE));
    jw_member_cstring(&w, "tokenizer", tokenizer_name(in->set.tokenizer));
    jw_member(&w, "present");
    jw_array_open(&w);
    for (size_t i = 0; i < in->set.n; i++) {
        if (r->found[i] == FOUND_MISSING)
            continue;
        jw_object_open(&w);
        jw_member_string(&w, "key", in->set.units[i].key, in->set.units[i].key_len);
        jw_member_cstring(&w, "as", found_name(r->found[i]));
        jw_object_close(&w);
    }
    jw_array_close(&w);
    missing_list(&w, in, r, 1);
    if (in->has_budget) {
        jw_member(&w, "repair");
        jw_object_open(&w);
        if (r->has_repair) {
            repair_items(&w, r, 0);
        } else {
            jw_member(&w, "append");
            jw_array_open(&w);
            jw_array_close(&w);
            jw_member_int(&w, "tokens", 0);
        }
        jw_object_close(&w);
    }
    jw_object_close(&w);
    return jw_finish(&w, len);
}

char *json_encode_verify_event(const verify_input *in, const verify_result *r, call_outcome outcome,
                               size_t *len)
{
    char now[32];
    compaction_timestamp(now);
    jw w;
    jw_init(&w, 256 + r->n_missing * 128);
    jw_object_open(&w);
    jw_member_cstring(&w, "time", now);
    jw_member_cstring(&w, "kind", "verify");
    jw_member_cstring(&w, "outcome", outcome_name(outcome));
    missing_list(&w, in, r, 0);
    if (r->has_repair) {
        const plan_result *p = &r->repair.plan;
        jw_member_int(&w, "budget", in->budget);
        jw_member_int(&w, "context_tokens", in->context_tokens);
        jw_member_int(&w, "required_budget", in->context_tokens + p->required_budget);
        if (outcome == OUTCOME_FAILURE) {
            const plan_unit *u = &r->repair_req.units[p->failed_index];
            jw_member_string(&w, "failed_key", u->key, u->key_len);
        } else {
            jw_member(&w, "repair");
            jw_object_open(&w);
            repair_items(&w, r, 1);
            jw_object_close(&w);
        }
    }
    jw_object_close(&w);
    return jw_finish(&w, len);
}
