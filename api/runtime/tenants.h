/* API keys and the tenants they open. Keys are compared in constant time
 * and never logged. */
#ifndef COMPACTD_TENANTS_H
#define COMPACTD_TENANTS_H

#include "request.h"

#include <stddef.h>

/* The longest tenant name. */
#define TENANT_MAX 64

typedef struct tenants tenants;

/* Loads lines of "<api-key> <tenant>" (blank lines and lines starting with
 * '#' are skipped). Tenant names follow the session id syntax, 1-64 chars of
 * [A-Za-z0-9._~-]; keys are 16-256 printable characters without spaces.
 * Returns a new table (free with tenants_free()), or NULL with a message in
 * err that names the line but never the key. */
tenants *tenants_load(const char *path, char *err, size_t errlen);
void tenants_free(tenants *t);

/* Returns the tenant for an "Authorization: Bearer <key>" header value, or
 * NULL when it is missing or matches no key. Borrowed from t. */
const char *tenants_authenticate(const tenants *t, const char *authorization);

/* The tenant of a request: its one Authorization header, authenticated as
 * above. Two or more Authorization headers open no tenant (NULL), whichever
 * of them is right: a proxy in front may have checked another one. */
const char *tenants_authenticate_request(const tenants *t, const api_request *req);

#endif
