/* How each kind of error (what went wrong, error.h) is answered over
 * HTTP: its status and the "type" of the error body. */
#ifndef COMPACTD_ERROR_STATUS_H
#define COMPACTD_ERROR_STATUS_H

#include "error.h"

int error_status(error_kind kind);
const char *error_type(error_kind kind);

#endif
