/* SHA-256 (FIPS 180-4), for naming spilled texts by their content. */
#ifndef COMPACTD_SHA256_H
#define COMPACTD_SHA256_H

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* Writes the lower-case hex digest of data[0..len) into hex, which has room
 * for SHA256_HEX_LEN + 1 bytes; NUL-terminated. */
void sha256_hex(const void *data, size_t len, char *hex);

/* The same with the portable rounds only, whatever the CPU offers: lets the
 * tests compare both implementations. */
void sha256_hex_generic(const void *data, size_t len, char *hex);

#endif
