/* Response and log documents. Every function returns a new NUL-terminated
 * buffer the caller frees with free() and its length in *len, or NULL when
 * out of memory. */
#ifndef COMPACTD_JSON_ENCODE_H
#define COMPACTD_JSON_ENCODE_H

#include "compaction.h"
#include "error.h"
#include "json_decode.h"
#include "store.h"

char *json_encode_error(const compactd_error *err, size_t *len);

/* The 422 body: names the protected unit that could not fit. */
char *json_encode_compaction_failure(const compactd_error *err, const compaction_request *req,
                                     const plan_result *plan, size_t *len);

/* The 200 body of a compaction. */
char *json_encode_plan(const char *session, const compact_input *in, const compaction *c,
                       size_t *len);

/* The decision-log entry of a compaction, or of a refused one when
 * failed is set (then c->plan names the unit that did not fit). */
char *json_encode_compaction_event(const compact_input *in, const compaction *c, int failed,
                                   size_t *len);

char *json_encode_spill(const char *session, const store_record *r, size_t *len);
char *json_encode_spill_list(const char *session, const store_record *r, size_t n, size_t *len);

/* A page of the decision log: entries are the JSON documents stored by
 * json_encode_*_event(), embedded as they are. */
char *json_encode_events(const store_event *e, size_t n, int more, size_t *len);

/* Writes the path of one spill version: /v1/sessions/S/spills/KEY?sha256=H
 * with the key percent-encoded. Returns a new string. */
char *spill_href(const char *session, const char *key, size_t key_len, const char *sha256);

#endif
