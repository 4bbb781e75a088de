/* The decision-log codec the API layer hands the operations (ops.h): each
 * entry written as the JSON object the decision log stores. */
#ifndef COMPACTD_LOG_CODEC_H
#define COMPACTD_LOG_CODEC_H

#include "ops.h"

extern const ops_log_codec json_log_codec;

#endif
