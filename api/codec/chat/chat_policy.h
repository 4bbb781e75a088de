/* The policy and the annotations of a chat request (messages/compact and
 * messages/verify): their readers, over the field tables of json_fields.h. */
#ifndef COMPACTD_CHAT_POLICY_H
#define COMPACTD_CHAT_POLICY_H

#include "chat_codec.h"
#include "json_fields.h"

#include <stdint.h>

/* The readers of a chat request's tables see the input, and for verify the
 * audit's members. */
typedef struct {
    chat_input *in;
    verify_input *v;
    chat_annotation *a; /* the annotation being read */
    int64_t index;      /* its index, -1 until read */
} chat_ctx;


/* The "policy" member (a field reader; ctx is a chat_ctx): unknown members,
 * malformed patterns and a tool both read-only and protected are 400s
 * naming the field. */
int chat_read_policy(const json_t *v, const field_ref *at, void *ctx, compactd_error *err);

/* The "annotations" array v into in's messages. Returns 0, or -1 with err
 * naming the path. */
int chat_read_annotations(chat_input *in, const json_t *v, compactd_error *err);

#endif
