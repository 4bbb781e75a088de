/* Aho-Corasick over bytes, laid out for size: states numbered breadth-first
 * so that each state's children are consecutive states, found by their
 * labels; only the shallowest states get full transition rows. */
#include "acmatch.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

/* Below this many children a linear scan of the labels beats bisection. */
#define LINEAR_CHILDREN 8
/* Groups up to this size are sorted by insertion, larger ones by counting. */
#define INSERTION_GROUP 16

typedef struct {
    uint32_t first_child; /* children: first_child up to the next state's */
    uint32_t fail;        /* longest proper suffix that is a state */
    uint32_t hit;         /* first pattern ending here or, failing that, at
                             the nearest state on the fail chain; or NIL */
} ac_state;

struct acmatch {
    size_t npat;
    uint32_t nstates;
    uint32_t ndense;
    ac_state *st;         /* nstates + 1; the last only bounds the children */
    unsigned char *label; /* the byte on the edge into each state */
    uint32_t *dense;      /* ndense rows of 256 complete transitions */
    uint32_t *same;       /* next pattern equal to this one, or NIL */
    uint32_t *next_hit;   /* for a state's first pattern: its fail state's hit */
    uint32_t *len;
    uint32_t empty; /* first empty pattern, the rest chained through same[] */
};

static void *alloc_array(size_t n, size_t size)
{
    return malloc((n ? n : 1) * size);
}

/* ---- Transitions ---- */

static uint32_t child(const acmatch *m, uint32_t s, unsigned char c)
{
    uint32_t lo = m->st[s].first_child, hi = m->st[s + 1].first_child;
    while (hi - lo > LINEAR_CHILDREN) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->label[mid] > c)
            hi = mid;
        else
            lo = mid;
    }
    for (; lo < hi; lo++)
        if (m->label[lo] == c)
            return lo;
    return 0; /* the root is nobody's child */
}

/* The automaton's transition: goto where there is an edge, else fail. Every
 * fail chain ends at the root, which always has a dense row. */
static uint32_t step(const acmatch *m, uint32_t s, unsigned char c)
{
    for (;;) {
        if (s < m->ndense)
            return m->dense[(size_t)s * 256 + c];
        uint32_t t = child(m, s, c);
        if (t)
            return t;
        s = m->st[s].fail;
    }
}

/* ---- Trie ---- */

static unsigned char byte_at(const acmatch_pattern *pats, uint32_t p, size_t d)
{
    return ((const unsigned char *)pats[p].text)[d];
}

/* act[] holds the patterns still longer than d, grouped by their state at
 * depth d, groups in state order. Orders each group by the byte at d, so
 * that the children created from it come out sorted by label. Linear: a
 * counting sort costs 256 plus the group, only for groups above 16. */
static void sort_groups(uint32_t *act, uint32_t nact, const uint32_t *node,
                        const acmatch_pattern *pats, size_t d, uint32_t *tmp)
{
    uint32_t a = 0;
    while (a < nact) {
        uint32_t b = a + 1;
        while (b < nact && node[act[b]] == node[act[a]])
            b++;
        if (b - a <= INSERTION_GROUP) {
            for (uint32_t k = a + 1; k < b; k++) {
                uint32_t x = act[k];
                unsigned char kx = byte_at(pats, x, d);
                uint32_t j = k;
                for (; j > a && byte_at(pats, act[j - 1], d) > kx; j--)
                    act[j] = act[j - 1];
                act[j] = x;
            }
        } else {
            uint32_t count[257] = {0};
            for (uint32_t k = a; k < b; k++)
                count[byte_at(pats, act[k], d) + 1]++;
            for (int c = 0; c < 256; c++)
                count[c + 1] += count[c];
            for (uint32_t k = a; k < b; k++)
                tmp[count[byte_at(pats, act[k], d)]++] = act[k];
            memcpy(act + a, tmp, (size_t)(b - a) * sizeof(*act));
        }
        a = b;
    }
}

static int reserve_states(acmatch *m, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap * 2;
    if (c < need)
        c = need;
    ac_state *st = realloc(m->st, c * sizeof(*st));
    if (!st)
        return -1;
    m->st = st;
    unsigned char *label = realloc(m->label, c);
    if (!label)
        return -1;
    m->label = label;
    *cap = c;
    return 0;
}

/* Builds the trie one depth at a time. A new state starts wherever the
 * (parent, byte) pair changes along act[], so states come out breadth-first
 * and each state's children are consecutive and sorted. */
static int build_trie(acmatch *m, const acmatch_pattern *pats, size_t n)
{
    uint32_t *act = alloc_array(n, sizeof(*act));
    uint32_t *node = alloc_array(n, sizeof(*node));
    uint32_t *tmp = alloc_array(n, sizeof(*tmp));
    size_t cap = 0;
    int rc = -1;
    if (!act || !node || !tmp || reserve_states(m, &cap, 64))
        goto out;

    uint32_t nact = 0, empty_tail = NIL;
    for (uint32_t p = 0; p < n; p++) {
        m->len[p] = (uint32_t)pats[p].len;
        m->same[p] = NIL;
        m->next_hit[p] = NIL;
        if (pats[p].len == 0) {
            if (empty_tail == NIL)
                m->empty = p;
            else
                m->same[empty_tail] = p;
            empty_tail = p;
        } else {
            act[nact++] = p;
            node[p] = 0;
        }
    }

    uint32_t nst = 1, lo = 0, hi = 1; /* states at depth d: [lo, hi) */
    m->st[0].hit = NIL;
    m->label[0] = 0;
    for (size_t d = 0; lo < hi; d++) {
        if (reserve_states(m, &cap, (size_t)nst + nact + 1))
            goto out;
        sort_groups(act, nact, node, pats, d, tmp);
        uint32_t cursor = lo, kept = 0, parent = NIL, s = NIL;
        int c = -1;
        for (uint32_t k = 0; k < nact; k++) {
            uint32_t p = act[k];
            if (node[p] != parent || byte_at(pats, p, d) != c) {
                parent = node[p];
                c = byte_at(pats, p, d);
                s = nst++;
                while (cursor <= parent)
                    m->st[cursor++].first_child = s;
                m->label[s] = (unsigned char)c;
                m->st[s].hit = NIL;
            }
            node[p] = s;
            if (m->len[p] != d + 1) {
                act[kept++] = p;
            } else if (m->st[s].hit == NIL) {
                m->st[s].hit = p;
            } else {
                uint32_t head = m->st[s].hit;
                m->same[p] = m->same[head];
                m->same[head] = p;
            }
        }
        while (cursor < hi)
            m->st[cursor++].first_child = nst;
        nact = kept;
        lo = hi;
        hi = nst;
    }
    m->st[nst].first_child = nst;
    m->nstates = nst;

    /* Give back what the per-level reservations overshot. */
    ac_state *st = realloc(m->st, ((size_t)nst + 1) * sizeof(*st));
    if (st)
        m->st = st;
    unsigned char *label = realloc(m->label, nst);
    if (label)
        m->label = label;
    rc = 0;
out:
    free(act);
    free(node);
    free(tmp);
    return rc;
}

/* ---- Fail links ---- */

/* In breadth-first order each state's fail state is shallower, so it is
 * complete (fail, row, hit) before any state that needs it. A state with
 * its own patterns links its first one to the hits further down the fail
 * chain, so reporting walks only states that have patterns. */
static int link_states(acmatch *m)
{
    m->ndense = m->nstates < ACMATCH_DENSE_STATES ? m->nstates : ACMATCH_DENSE_STATES;
    m->dense = malloc((size_t)m->ndense * 256 * sizeof(*m->dense));
    if (!m->dense)
        return -1;
    m->st[0].fail = 0;
    for (uint32_t q = 0; q < m->nstates; q++) {
        uint32_t lo = m->st[q].first_child, hi = m->st[q + 1].first_child;
        if (q < m->ndense) {
            uint32_t *row = m->dense + (size_t)q * 256;
            if (q == 0)
                memset(row, 0, 256 * sizeof(*row));
            else
                memcpy(row, m->dense + (size_t)m->st[q].fail * 256, 256 * sizeof(*row));
            for (uint32_t v = lo; v < hi; v++)
                row[m->label[v]] = v;
        }
        for (uint32_t v = lo; v < hi; v++) {
            uint32_t f = q == 0 ? 0 : step(m, m->st[q].fail, m->label[v]);
            m->st[v].fail = f;
            if (m->st[v].hit == NIL)
                m->st[v].hit = m->st[f].hit;
            else
                m->next_hit[m->st[v].hit] = m->st[f].hit;
        }
    }
    return 0;
}

/* ---- Public ---- */

acmatch *acmatch_new(const acmatch_pattern *pats, size_t n)
{
    if (n >= NIL)
        return NULL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (pats[i].len >= (size_t)NIL - 1 - total)
            return NULL;
        total += pats[i].len;
    }
    acmatch *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->npat = n;
    m->empty = NIL;
    m->same = alloc_array(n, sizeof(*m->same));
    m->next_hit = alloc_array(n, sizeof(*m->next_hit));
    m->len = alloc_array(n, sizeof(*m->len));
    if (!m->same || !m->next_hit || !m->len || build_trie(m, pats, n) || link_states(m)) {
        acmatch_free(m);
        return NULL;
    }
    return m;
}

void acmatch_free(acmatch *m)
{
    if (!m)
        return;
    free(m->st);
    free(m->label);
    free(m->dense);
    free(m->same);
    free(m->next_hit);
    free(m->len);
    free(m);
}

size_t acmatch_count(const acmatch *m)
{
    return m->npat;
}

size_t acmatch_memory(const acmatch *m)
{
    return sizeof(*m) + ((size_t)m->nstates + 1) * sizeof(ac_state) + m->nstates +
           (size_t)m->ndense * 256 * sizeof(uint32_t) + m->npat * 3 * sizeof(uint32_t);
}

/* ---- Scanning ---- */

/* A pattern already marked means everything down its chain of hits was
 * marked with it, so each chain is walked at most once per scan: the pass
 * stays linear however deeply the patterns nest. Exactly one of found and
 * first is non-NULL. */
static void scan(const acmatch *m, const unsigned char *t, size_t len, unsigned char *found,
                 size_t *first)
{
    if (found) {
        if (m->npat)
            memset(found, 0, m->npat);
    } else {
        for (size_t i = 0; i < m->npat; i++)
            first[i] = ACMATCH_NONE;
    }
    for (uint32_t p = m->empty; p != NIL; p = m->same[p]) {
        if (found)
            found[p] = 1;
        else
            first[p] = 0;
    }

    uint32_t s = 0;
    for (size_t i = 0; i < len; i++) {
        s = step(m, s, t[i]);
        for (uint32_t h = m->st[s].hit; h != NIL; h = m->next_hit[h]) {
            if (found ? found[h] != 0 : first[h] != ACMATCH_NONE)
                break;
            for (uint32_t p = h; p != NIL; p = m->same[p]) {
                if (found)
                    found[p] = 1;
                else
                    first[p] = i + 1 - m->len[p];
            }
        }
    }
}

void acmatch_scan(const acmatch *m, const char *text, size_t len, unsigned char *found)
{
    scan(m, (const unsigned char *)text, len, found, NULL);
}

void acmatch_scan_first(const acmatch *m, const char *text, size_t len, size_t *first)
{
    scan(m, (const unsigned char *)text, len, NULL, first);
}
