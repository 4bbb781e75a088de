/* The audit's answer, shared by /verify and /messages/verify: each decodes
 * its own request into a verify_input and hands it here. */
#ifndef COMPACTD_AUDIT_H
#define COMPACTD_AUDIT_H

#include "app.h"
#include "json_decode.h"

/* Runs the audit of in (decoded, its context set) and answers it: the 200
 * body, with the members of extra (a JSON object compactd wrote, or NULL)
 * added when there is a repair; or the refusal or error. Logs and commits
 * as /verify does. in stays the caller's. */
void respond_audit(api_request *req, api_response *res, verify_input *in, const char *extra,
                   size_t extra_len);

#endif
