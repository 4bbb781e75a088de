/* libmicrohttpd compatibility and the one daemon setup that compactd and the
 * benchmark floors share, so both are measured with the same threading. */
#ifndef COMPACTD_MHD_COMPAT_H
#define COMPACTD_MHD_COMPAT_H

#include <microhttpd.h>

#if MHD_VERSION < 0x00097002
typedef int MHD_Result_t;
#else
typedef enum MHD_Result MHD_Result_t;
#endif

/* A pool of worker threads, each polling its own share of connections with
 * epoll; ITC lets a signal handler quiesce the daemon before it stops. */
#define COMPACTD_MHD_FLAGS                                                                         \
    (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_TURBO)

#endif
