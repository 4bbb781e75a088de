/* compactd as a base URL: routes that speak the providers' own APIs
 * (OpenAI Chat Completions and Responses, Anthropic Messages), compact the
 * history on the way with the operation /messages/compact runs, forward
 * the request to the configured upstream and relay its answer, streamed or
 * not, answering the model's reacquire calls themselves. docs/proxy.md. */
#ifndef COMPACTD_PROXY_H
#define COMPACTD_PROXY_H

#include "handlers.h"

/* Sets the proxy up before the server starts: the upstream client and the
 * model table (COMPACTD_MODELS). 0, or -1 with a message in err. */
int proxy_init(const config *cfg, char *err, size_t errlen);
void proxy_cleanup(void);

void handle_proxy_chat(const app *a, api_request *req, api_response *res);
void handle_proxy_responses(const app *a, api_request *req, api_response *res);
void handle_proxy_messages(const app *a, api_request *req, api_response *res);

/* The tenant of a proxied request: its X-Compactd-Key header, which stands
 * where /v1 routes read Authorization (that one is the provider's). */
const char *proxy_tenant(const app *a, const api_request *req);

#endif
