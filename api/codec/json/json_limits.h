/* The limits a request body is decoded under (settings, config.c): how many
 * units, how long a key or a text, and the chat low-water default. Read by
 * the shape guard before a tree is built and by every decoder. */
#ifndef COMPACTD_JSON_LIMITS_H
#define COMPACTD_JSON_LIMITS_H

#include "plan.h"

#include <stddef.h>

#define GROUP_MAX_BYTES UNIT_KEY_MAX_BYTES

typedef struct {
    size_t max_units;
    size_t max_key_bytes;
    size_t max_text_bytes;
    /* The units' texts of one verify together: the audit's matcher holds
     * about 10 bytes per byte of them (see README, "Bounded memory"). */
    size_t max_verify_text_bytes;
    /* The low-water mark of a chat compaction that names none, in percent
     * of its budget (chat.h's compact_to). */
    int compact_to_percent;
} decode_limits;

#endif
