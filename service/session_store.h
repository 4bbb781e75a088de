/* Inside service/ only: the calling thread's store connection, for the
 * parts of the domain that write (the commit). Includes store.h, which only
 * service/ may see; the API layer goes through session.h. */
#ifndef COMPACTD_SESSION_STORE_H
#define COMPACTD_SESSION_STORE_H

#include "error.h"
#include "store.h"

/* The calling thread's connection (borrowed, valid for the thread's life),
 * or NULL with StoreUnavailable when there is none. */
store *session_thread_store(compactd_error *err);

/* Sets StoreUnavailable with st's last error; returns -1. */
int session_store_failed(store *st, compactd_error *err);

#endif
