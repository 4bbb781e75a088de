/* SHA-256 (FIPS 180-4), for naming spilled texts by their content. */
#ifndef COMPACTD_SHA256_H
#define COMPACTD_SHA256_H

#include "shared_defs.h"

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* A digest's short form is its first POINTER_SHA_HEX hex digits
 * (shared_defs.h, from the spec the clients share): what a pointer shows,
 * the fewest digits a spill is read back by, and the width of a commit's
 * name (service/commit.c). */

/* Writes the lower-case hex digest of data[0..len) into hex, which has room
 * for SHA256_HEX_LEN + 1 bytes; NUL-terminated. */
void sha256_hex(const void *data, size_t len, char *hex);

/* The same with the portable rounds only, whatever the CPU offers: lets the
 * tests compare both implementations. */
void sha256_hex_generic(const void *data, size_t len, char *hex);

/* 1 when p[0..len) is POINTER_SHA_HEX to SHA256_HEX_LEN lower-case hex
 * digits (a digest, or the start of one that can name it), else 0: the one
 * check of a digest's prefix, wherever one is read. */
int sha256_prefix_valid(const char *p, size_t len);

#endif
