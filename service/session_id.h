/* What a session id is: the syntax every front checks, named once. */
#ifndef COMPACTD_SESSION_ID_H
#define COMPACTD_SESSION_ID_H

#include <stddef.h>

#define SESSION_ID_MAX 128

/* The rule in words, for the fronts' error messages ("... must be "
 * SESSION_ID_RULE). */
#define SESSION_ID_RULE "1 to 128 characters of [A-Za-z0-9._~/-], neither \".\" nor \"..\""

/* 1 when s (n bytes) is a valid session id: 1 to SESSION_ID_MAX characters
 * of [A-Za-z0-9._~/-], and neither "." nor "..". */
int session_id_valid(const char *s, size_t n);

#endif
