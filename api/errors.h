/* How each kind of error is answered over HTTP: its status and the "type"
 * of the error body. */
#ifndef COMPACTD_ERRORS_H
#define COMPACTD_ERRORS_H

#include "error.h"

int error_status(error_kind kind);
const char *error_type(error_kind kind);

#endif
