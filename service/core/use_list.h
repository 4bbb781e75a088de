/* A list of a cache's entries from the most to the least recently used,
 * through a use_node each entry holds as its first member (so that a node
 * is its entry). Not thread-safe: the cache's lock guards it. */
#ifndef COMPACTD_USE_LIST_H
#define COMPACTD_USE_LIST_H

#include <stddef.h>

typedef struct use_node {
    struct use_node *newer, *older;
} use_node;

typedef struct {
    use_node *newest, *oldest;
} use_list;

static inline void use_list_remove(use_list *l, use_node *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        l->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        l->oldest = e->newer;
    e->newer = e->older = NULL;
}

static inline void use_list_first(use_list *l, use_node *e)
{
    e->older = l->newest;
    e->newer = NULL;
    if (l->newest)
        l->newest->newer = e;
    l->newest = e;
    if (!l->oldest)
        l->oldest = e;
}

/* Moves e, which is on l, to its front. */
static inline void use_list_touch(use_list *l, use_node *e)
{
    use_list_remove(l, e);
    use_list_first(l, e);
}

#endif
