/* Large commits in bounded pieces, and the reads that never see one half
 * merged (layout.h's "Commits" says how). Over the handle's transport, so
 * one Redis and a cluster share it. Internal to store/. */
#ifndef COMPACTD_STORE_STAGED_H
#define COMPACTD_STORE_STAGED_H

#include "layout.h"
#include "sha256.h"
#include "store_impl.h"

/* Whether a commit of these spills is staged rather than one script: more
 * than one piece's worth of spills or bytes. */
int staged_needed(const store_spill *spills, size_t n);

/* store_commit()'s contract, for a commit that staged_needed(): stages
 * every piece, publishes them with one script (that appends the log
 * entry), then merges them. Returns 0 once published (merging is then
 * anyone's to finish; a failure while merging is not a failure of the
 * commit, whose spills every read will see), or -1 when nothing was
 * published, or the publish's outcome is unknown (STORE_ERR_UNKNOWN) or
 * short of replicas (STORE_ERR_REPLICAS), as for store_commit(). */
int staged_commit(store *s, const layout_keys *k, const store_spill *spills, size_t n,
                  const char *created_at, const char *event, size_t event_len,
                  const char *commit_key, int keyed);

/* Merges the session's pending commit, if any, piece by piece. Returns 0
 * when none is pending any more, -1 with the handle's error set. */
int staged_roll_forward(store *s, const layout_keys *k);

/* Runs argv (argv[1] a key of the session) as a read that sees either all
 * of a commit or none of it: a pending commit is merged first. Returns the
 * reply, or NULL with the handle's error set. argc is at most
 * LAYOUT_READ_ARGS_MAX. */
struct redisReply *staged_read(store *s, const layout_keys *k, int argc, const char **argv,
                               const size_t *lens);

/* A staged attempt's staging nonce and, for a commit without a name, its
 * name in its log entry: POINTER_SHA_HEX random hex digits. */
void staged_make_nonce(char out[POINTER_SHA_HEX + 1]);

#endif
