/* The spills this process saw Redis acknowledge, by session and field: a
 * hint that lets a commit leave out the text of a spill that is already
 * stored (turn after turn, an agent's history spills the same protected
 * messages again). Only a hint: the commit script checks that every spill
 * sent without its text is there, and refuses (nothing written) when one is
 * not, so a stale or colliding entry costs one more round trip, never a
 * lost text. Process-wide, lock-free, bounded (KNOWN_SPILLS_SLOTS entries
 * of 8 bytes). Internal to store/. */
#ifndef COMPACTD_STORE_KNOWN_SPILLS_H
#define COMPACTD_STORE_KNOWN_SPILLS_H

#include <stddef.h>

#define KNOWN_SPILLS_SLOTS (1u << 16)

/* 1 when field (of len bytes) of session ns was acknowledged before. */
int known_spills_has(const char *ns, const char *field, size_t len);

/* Remembers field of session ns as stored. */
void known_spills_add(const char *ns, const char *field, size_t len);

#endif
