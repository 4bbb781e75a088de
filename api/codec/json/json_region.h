/* Where jansson's memory comes from. A request body's tree is built in a
 * region of its own: its values are cut from a few large blocks as jansson
 * asks for them, freeing one is nothing, and the whole tree goes at once
 * when the document is released. A parse then costs no malloc() and no
 * free() per value, and no glibc bin upkeep (consolidating the thousands
 * of small chunks a freed tree leaves behind). Every other jansson value
 * is malloc()ed as before.
 *
 * This file installs the allocation functions jansson uses process-wide
 * (json_set_alloc_funcs()), before main(). Memory jansson hands out is then
 * only ever given back through jansson or json_text_free(), never free(). */
#ifndef COMPACTD_JSON_REGION_H
#define COMPACTD_JSON_REGION_H

#include <jansson.h>
#include <stddef.h>

/* json_loadb()'s tree of buf, in a region of its own: read by json_read()
 * (json_read.h), or by json_loadb() itself when that gives up, which then
 * reports the error. The document is released with json_region_release(),
 * on any thread, and every value of it is dead from then on: no reference
 * to one may outlive it. NULL with jansson's error
 * (json_error_out_of_memory when the region could not be had) when the
 * parse fails; nothing is held then. */
json_t *json_region_loadb(const char *buf, size_t len, size_t flags, json_error_t *error);

/* Releases a document from json_region_loadb() (or any jansson value the
 * caller holds the last reference to): its values added after the parse
 * are freed one by one, then its region. NULL does nothing. */
void json_region_release(json_t *doc);

/* Frees a string json_dumps() returned. */
void json_text_free(char *text);

/* What json_dumps() returns, in memory the caller frees with free() (an
 * answer's body, which the HTTP layer frees so). NULL when out of memory. */
char *json_dumps_plain(const json_t *v, size_t flags);

/* The bytes a document's region holds (0 for a value not in one): what the
 * tree of a body costs, counted with its blocks' unused tails. */
size_t json_region_bytes(const json_t *doc);

/* Bytes the region of doc has handed out (0 for a value not in one): what
 * its tree really uses, without the blocks' unused tails. */
size_t json_region_used(const json_t *doc);

/* Records that n bytes of the answer account bound to the thread
 * (answer_account.h) are held for doc's tree: json_region_release() gives
 * them back when it runs with the same account bound. For a value not in
 * a region they are given back at once. */
void json_region_hold(json_t *doc, size_t n);

#endif
