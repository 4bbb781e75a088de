/* The application as the transport sees it: the callbacks main() starts
 * the HTTP server with (dispatch.c). */
#ifndef COMPACTD_DISPATCH_H
#define COMPACTD_DISPATCH_H

#include "handlers.h"
#include "http_server.h"

/* The transport's callbacks for application a (borrowed: it must outlive
 * the server). */
http_handlers app_http_handlers(const app *a);

#endif
