/* The store's operations, written once over the handle's transport
 * (store_impl.h): the writes in op_write.c, the reads in op_read.c. Each has
 * the contract of the store.h function it serves. Internal to store/. */
#ifndef COMPACTD_STORE_OPERATIONS_H
#define COMPACTD_STORE_OPERATIONS_H

#include "layout.h"
#include "store_impl.h"

#include <hiredis/hiredis.h>

/* Sets the handle's error to out of memory; returns -1. */
int op_oom(store *s);

/* Fills k for the session ns; -1 with the handle's error when ns is too
 * long. */
int op_keys(store *s, const char *ns, layout_keys *k);

/* r when it is of the type asked for (or nil, where nil_ok); else NULL with
 * STORE_ERR_PROTOCOL, after freeing r: a node that answers anything else
 * is a store that failed (503), never an empty session (404). */
redisReply *op_expect(store *s, redisReply *r, int type, int nil_ok, const char *what);

int op_commit(store *s, const char *ns, const store_spill *spills, size_t n, const char *created_at,
              const char *event, size_t event_len, const char *commit_key, int keyed);
int op_drop_session(store *s, const char *ns);
int op_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                 store_record *out);
int op_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                        const char *prefix, size_t prefix_len, store_record *out,
                        char (**candidates)[65], size_t *n_candidates);
int op_spill_list(store *s, const char *ns, store_record **out, size_t *n);
int op_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                         unsigned char *found);
int op_event_range(store *s, const char *ns, const char *after, size_t limit, size_t max_bytes,
                   store_event **out, size_t *n);

#endif
