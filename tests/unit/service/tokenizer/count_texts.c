/* Counts texts under both BPE encodings, for the exactness test: reads
 * records from stdin (a 4-byte little-endian length, then that many bytes)
 * and writes "<o200k_base> <cl100k_base>\n" for each.
 *   count_texts <ranks folder> < records */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    char err[600];
    if (argc != 2 || tokenizer_load(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "count_texts: %s\n", argc == 2 ? err : "usage: count_texts <ranks folder>");
        return 2;
    }
    const tokenizer *o = tokenizer_find("o200k_base", 10), *c = tokenizer_find("cl100k_base", 11);
    unsigned char h[4];
    char *buf = NULL;
    size_t cap = 0;
    while (fread(h, 1, 4, stdin) == 4) {
        size_t len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
        if (len > cap) {
            cap = len;
            buf = realloc(buf, cap);
            if (!buf)
                return 1;
        }
        if (fread(buf, 1, len, stdin) != len) {
            fprintf(stderr, "count_texts: a record is cut short\n");
            return 1;
        }
        printf("%lld %lld\n", (long long)tokenizer_count(o, buf, len),
               (long long)tokenizer_count(c, buf, len));
    }
    free(buf);
    tokenizer_unload();
    return 0;
}
