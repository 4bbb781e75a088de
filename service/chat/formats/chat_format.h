/* One descriptor per chat format: the domain's facts about the provider
 * behind it, which the format's codec (api/codec/chat, the wire's side)
 * and everything after it read. A request's format is looked up once, by
 * its name, where the request comes in (chat_format_find()); nothing looks
 * a provider up by name after that. */
#ifndef COMPACTD_CHAT_FORMAT_H
#define COMPACTD_CHAT_FORMAT_H

#include "chat_media.h"
#include "tokenizer.h"

#include <stddef.h>

typedef struct chat_format {
    const char *name; /* a CHAT_FORMAT_* of shared_defs.h */
    /* The encoding a request of this format counts with when it names
     * none: the provider's own where compactd has it, else bytes (an upper
     * bound on any byte-level BPE count). */
    const char *tokenizer;
    /* The encoding the provider's current models bill by, or NULL where
     * the provider publishes none: a count in it is exact. */
    const char *billed_by;
    /* Whose published formulas price an image, a PDF's pages, audio. */
    chat_media_provider media;
    /* The reacquire tool's definition in the format's tool schema, as
     * JSON (reacquire_tools.h, written from spec/shared.json). */
    const char *reacquire_tool;
} chat_format;

/* The descriptors, for a codec's row or a front that speaks one format. */
extern const chat_format chat_format_openai, chat_format_anthropic, chat_format_responses;

/* The format named name[0..len), or NULL when there is none of that name
 * (CHAT_FORMATS_QUOTED lists them for the error). Static. */
const chat_format *chat_format_find(const char *name, size_t len);

/* The i-th format, for i from 0; NULL past the last. Static. */
const chat_format *chat_format_at(size_t i);

/* The encoding f's requests count with when they name none; NULL when its
 * rank file was not there at start-up (the request must name another). */
const tokenizer *chat_format_tokenizer(const chat_format *f);

#endif
