/* What node.c's writes and node_read.c's reads share: the store's
 * operations on one Redis, which a cluster runs over its own transport.
 * Internal to store/. */
#ifndef COMPACTD_STORE_NODE_H
#define COMPACTD_STORE_NODE_H

#include "layout.h"
#include "store_impl.h"

#include <hiredis/hiredis.h>

/* Sets the handle's error to out of memory; returns -1. */
int node_oom(store *s);

/* Fills k for the session ns; -1 with the handle's error when ns is too
 * long. */
int node_keys(store *s, const char *ns, layout_keys *k);

/* r when it is of the type asked for (or nil, where nil_ok); else NULL with
 * STORE_ERR_PROTOCOL, after freeing r: a node that answers anything else
 * is a store that failed (503), never an empty session (404). */
redisReply *node_expect(store *s, redisReply *r, int type, int nil_ok, const char *what);

/* The reads of store_ops, with the contracts of store.h's functions. */
int node_spill_get(store *s, const char *ns, const char *key, size_t key_len, const char *sha256,
                   store_record *out);
int node_spill_get_prefix(store *s, const char *ns, const char *key, size_t key_len,
                          const char *prefix, size_t prefix_len, store_record *out,
                          char (**candidates)[65], size_t *n_candidates);
int node_spill_list(store *s, const char *ns, store_record **out, size_t *n);
int node_spill_exists_many(store *s, const char *ns, const store_spill_ref *refs, size_t n,
                           unsigned char *found);
int node_event_range(store *s, const char *ns, const char *after, size_t limit,
                     store_event **out, size_t *n);

#endif
