/* The sessions' last chat plans: a hash table of sessions on a list from
 * the most to the least recently used, under one lock. See plan_memory.h. */
#include "plan_memory.h"

#include "sticky_plan.h"
#include "use_list.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096
/* What a prior costs per message: its digest, decision, reason and run
 * start. */
#define PRIOR_MESSAGE_BYTES (sizeof(uint64_t) + 3)

typedef struct entry {
    use_node use;        /* first: the use list's node is the entry */
    struct entry *chain; /* the next in its bucket */
    char *ns, *format, *tokenizer;
    chat_prior pr;
    size_t bytes;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *buckets[BUCKETS];
static use_list uses;
static size_t max_bytes = PLAN_MEMORY_DEFAULT_BYTES, used_bytes, plans;

static size_t bucket_of(const char *ns)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)ns; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return (size_t)(h % BUCKETS);
}

static int prior_copy(const chat_prior *from, chat_prior *to)
{
    size_t n = from->n, slots = n ? n : 1;
    to->n = n;
    to->budget = from->budget;
    to->digest = malloc(slots * sizeof(*to->digest));
    to->decision = malloc(slots);
    to->reason = malloc(slots);
    to->run_start = malloc(slots);
    if (!to->digest || !to->decision || !to->reason || !to->run_start) {
        chat_prior_free(to);
        return -1;
    }
    memcpy(to->digest, from->digest, n * sizeof(*to->digest));
    memcpy(to->decision, from->decision, n);
    memcpy(to->reason, from->reason, n);
    memcpy(to->run_start, from->run_start, n);
    return 0;
}

static entry **find(const char *ns)
{
    entry **at = &buckets[bucket_of(ns)];
    while (*at && strcmp((*at)->ns, ns) != 0)
        at = &(*at)->chain;
    return at;
}

/* Unlinks the entry *at points to and frees it. */
static void drop(entry **at)
{
    entry *e = *at;
    *at = e->chain;
    use_list_remove(&uses, &e->use);
    used_bytes -= e->bytes;
    plans--;
    chat_prior_free(&e->pr);
    free(e->ns);
    free(e->format);
    free(e->tokenizer);
    free(e);
}

void plan_memory_configure(size_t bytes)
{
    pthread_mutex_lock(&lock);
    max_bytes = bytes;
    while (uses.oldest && used_bytes > max_bytes)
        drop(find(((entry *)uses.oldest)->ns));
    pthread_mutex_unlock(&lock);
}

int plan_memory_get(const char *ns, const char *format, const char *encoding, chat_prior *out)
{
    int rc = 0;
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&lock);
    entry *e = *find(ns);
    if (e && strcmp(e->format, format) == 0 && strcmp(e->tokenizer, encoding) == 0) {
        use_list_touch(&uses, &e->use);
        rc = prior_copy(&e->pr, out) == 0 ? 1 : -1;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int plan_memory_keeps(void)
{
    pthread_mutex_lock(&lock);
    int keeps = max_bytes > 0;
    pthread_mutex_unlock(&lock);
    return keeps;
}

void plan_memory_put(const char *ns, const char *format, const char *encoding, const chat_prior *pr)
{
    size_t bytes = sizeof(entry) + strlen(ns) + strlen(format) + strlen(encoding) + 3 +
                   pr->n * PRIOR_MESSAGE_BYTES;
    entry *e = calloc(1, sizeof(*e));
    if (e) {
        e->ns = strdup(ns);
        e->format = strdup(format);
        e->tokenizer = strdup(encoding);
        e->bytes = bytes;
    }
    int made = e && e->ns && e->format && e->tokenizer && prior_copy(pr, &e->pr) == 0;
    pthread_mutex_lock(&lock);
    entry **at = find(ns);
    if (*at)
        drop(at);
    if (made && bytes <= max_bytes) {
        while (uses.oldest && used_bytes + bytes > max_bytes)
            drop(find(((entry *)uses.oldest)->ns));
        at = find(ns);
        e->chain = *at;
        *at = e;
        use_list_first(&uses, &e->use);
        used_bytes += bytes;
        plans++;
        e = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (e) {
        chat_prior_free(&e->pr);
        free(e->ns);
        free(e->format);
        free(e->tokenizer);
        free(e);
    }
}

void plan_memory_forget(const char *ns)
{
    pthread_mutex_lock(&lock);
    entry **at = find(ns);
    if (*at)
        drop(at);
    pthread_mutex_unlock(&lock);
}

void plan_memory_stats(size_t *n, size_t *bytes)
{
    pthread_mutex_lock(&lock);
    *n = plans;
    *bytes = used_bytes;
    pthread_mutex_unlock(&lock);
}
