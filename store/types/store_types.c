/* Freeing what the store's reads hand out: the one part of the store the
 * layers above call, so it links apart from the store itself. */
#include "store_types.h"

#include <stdlib.h>
#include <string.h>

void store_record_clear(store_record *r)
{
    free(r->key);
    free(r->cls);
    free(r->created_at);
    free(r->metadata);
    free(r->text);
    memset(r, 0, sizeof(*r));
}

void store_records_free(store_record *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        store_record_clear(&r[i]);
    free(r);
}

void store_events_free(store_event *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].data);
    free(e);
}
