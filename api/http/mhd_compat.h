/* libmicrohttpd compatibility and the daemon flags that compactd and the
 * benchmark floors share (compactd adds suspend/resume: its handlers run on
 * a pool of their own, see http_server.c). */
#ifndef COMPACTD_MHD_COMPAT_H
#define COMPACTD_MHD_COMPAT_H

#include <microhttpd.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t;
#else
typedef enum MHD_Result MHD_Result_t;
#endif

/* Responses hand their body back through a callback with its own argument,
 * so that its bytes leave the memory budget when libmicrohttpd is done. */
#if MHD_VERSION < 0x00097302
#error "libmicrohttpd 0.9.73 or later is needed (MHD_create_response_from_buffer_with_free_callback_cls)"
#endif

/* A pool of worker threads, each polling its own share of connections;
 * ITC lets the stop quiesce the daemon. poll(), not epoll: in 0.9.75,
 * MHD_quiesce_daemon() and a worker's own loop both remove the listen
 * socket from an epoll set, and when they race the library aborts ("Failed
 * to remove listen FD from epoll set"); a worker woken often by resumed
 * connections makes that race likely at shutdown. */
#define COMPACTD_MHD_FLAGS                                                                         \
    (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC | MHD_USE_TURBO)

#endif
