/* Aho-Corasick over bytes, laid out for size and for cache: where patterns
 * share prefixes the trie is stored breadth-first with sorted edge lists;
 * where a prefix belongs to one pattern only, the rest of that pattern is a
 * "tail", a run of consecutive states, so matching along it walks memory in
 * order. Only the shallowest states get full 256-entry transition rows. */
#include "acmatch.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
/* Marks a tail-local index in a half-built edge target. */
#define TAIL_BIT 0x80000000u

/* Below this many edges a linear scan of the labels beats bisection. */
#define LINEAR_EDGES 8
/* Groups up to this size are sorted by insertion, larger ones by counting. */
#define INSERTION_GROUP 16

typedef struct {
    uint32_t fail; /* longest proper suffix that is a state */
    uint32_t hit;  /* first pattern ending here or, failing that, at the
                      nearest state down the fail chain; or NIL */
} ac_state;

/* States 0 .. nbranch-1 are branch states, numbered breadth-first, so the
 * shallowest come first; their edges are first_edge[s] .. first_edge[s+1]-1,
 * sorted by label. States from nbranch on are tails: tail state t (counted
 * from nbranch) is entered by tail_label[t], and unless it is the last of
 * its tail, its only child is t + 1. */
struct acmatch {
    size_t npat;
    uint32_t nstates;
    uint32_t nbranch;
    uint32_t ndense;
    uint32_t nedges;
    ac_state *st;
    uint32_t *first_edge; /* nbranch + 1 */
    unsigned char *edge_label;
    uint32_t *edge_target;
    unsigned char *tail_label;
    uint64_t *tail_last; /* bit t: tail state t ends its tail */
    uint32_t *dense;     /* ndense rows of 256 complete transitions */
    uint32_t *same;      /* next pattern equal to this one, or NIL */
    uint32_t *next_hit;  /* for a state's first pattern: its fail state's hit */
    uint32_t *len;
    uint32_t empty; /* first empty pattern, the rest chained through same[] */
};

static void *alloc_array(size_t n, size_t size)
{
    return malloc((n ? n : 1) * size);
}

/* Shrinks an array allocated for the worst case; keeps it if realloc fails. */
static void *shrink(void *p, size_t n, size_t size)
{
    void *q = realloc(p, (n ? n : 1) * size);
    return q ? q : p;
}

static int is_last(const uint64_t *bits, uint32_t t)
{
    return (int)(bits[t >> 6] >> (t & 63) & 1);
}

/* ---- Transitions ---- */

static uint32_t branch_child(const acmatch *m, uint32_t s, unsigned char c)
{
    uint32_t lo = m->first_edge[s], hi = m->first_edge[s + 1];
    while (hi - lo > LINEAR_EDGES) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->edge_label[mid] > c)
            hi = mid;
        else
            lo = mid;
    }
    for (; lo < hi; lo++)
        if (m->edge_label[lo] == c)
            return m->edge_target[lo];
    return 0; /* the root is nobody's child */
}

/* The automaton's transition: goto where there is an edge, else fail. Every
 * fail chain ends at the root, which always has a dense row. */
static uint32_t step(const acmatch *m, uint32_t s, unsigned char c)
{
    for (;;) {
        if (s < m->ndense)
            return m->dense[(size_t)s * 256 + c];
        if (s >= m->nbranch) {
            uint32_t t = s - m->nbranch;
            if (!is_last(m->tail_last, t) && m->tail_label[t + 1] == c)
                return s + 1;
        } else {
            uint32_t t = branch_child(m, s, c);
            if (t)
                return t;
        }
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
 * that the edges created from it come out sorted by label. Linear: a
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

/* Builds the trie one depth at a time. A new edge starts wherever the
 * (parent, byte) pair changes along act[], so branch states come out
 * breadth-first with consecutive, sorted edges. An edge that only one
 * pattern takes, and that pattern goes on, starts that pattern's tail: the
 * rest of its bytes, copied in one piece. Leaves term[p] set to the state
 * where pattern p ends (tail states still tail-local, with TAIL_BIT).
 *
 * The arrays are sized for the worst case, a state per pattern byte, and
 * shrunk at the end: pages never touched cost nothing, and nothing is
 * copied while the trie grows. */
static int build_trie(acmatch *m, const acmatch_pattern *pats, size_t n, size_t total,
                      uint32_t *term)
{
    uint32_t *act = alloc_array(n, sizeof(*act));
    uint32_t *tmp = alloc_array(n, sizeof(*tmp));
    int rc = -1;
    m->first_edge = alloc_array(total + 2, sizeof(*m->first_edge));
    m->edge_label = alloc_array(total, 1);
    m->edge_target = alloc_array(total, sizeof(*m->edge_target));
    m->tail_label = alloc_array(total, 1);
    m->tail_last = calloc(total / 64 + 1, sizeof(*m->tail_last));
    if (!act || !tmp || !m->first_edge || !m->edge_label || !m->edge_target || !m->tail_label ||
        !m->tail_last)
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
            term[p] = 0;
        }
    }

    /* term[p] is the pattern's state at depth d until it ends. */
    uint32_t nb = 1, nt = 0, ne = 0, lo = 0, hi = 1; /* branch states at depth d: [lo, hi) */
    for (size_t d = 0; lo < hi; d++) {
        sort_groups(act, nact, term, pats, d, tmp);
        uint32_t cursor = lo, kept = 0;
        for (uint32_t k = 0, k2; k < nact; k = k2) {
            uint32_t p = act[k], parent = term[p];
            unsigned char c = byte_at(pats, p, d);
            for (k2 = k + 1; k2 < nact && term[act[k2]] == parent && byte_at(pats, act[k2], d) == c;
                 k2++)
                ;
            while (cursor <= parent)
                m->first_edge[cursor++] = ne;
            m->edge_label[ne] = c;
            if (k2 - k == 1 && m->len[p] > d + 1) {
                uint32_t rest = m->len[p] - (uint32_t)d;
                m->edge_target[ne++] = TAIL_BIT | nt;
                memcpy(m->tail_label + nt, pats[p].text + d, rest);
                nt += rest;
                m->tail_last[(nt - 1) >> 6] |= (uint64_t)1 << ((nt - 1) & 63);
                term[p] = TAIL_BIT | (nt - 1);
                continue;
            }
            uint32_t s = nb++;
            m->edge_target[ne++] = s;
            for (uint32_t j = k; j < k2; j++) {
                term[act[j]] = s;
                if (m->len[act[j]] != d + 1)
                    act[kept++] = act[j];
            }
        }
        while (cursor < hi)
            m->first_edge[cursor++] = ne;
        nact = kept;
        lo = hi;
        hi = nb;
    }
    m->first_edge[nb] = ne;
    m->nbranch = nb;
    m->nstates = nb + nt;
    m->nedges = ne;
    for (uint32_t e = 0; e < ne; e++)
        if (m->edge_target[e] & TAIL_BIT)
            m->edge_target[e] = nb + (m->edge_target[e] & ~TAIL_BIT);
    for (uint32_t p = 0; p < n; p++)
        if (m->len[p] && (term[p] & TAIL_BIT))
            term[p] = nb + (term[p] & ~TAIL_BIT);

    m->first_edge = shrink(m->first_edge, (size_t)nb + 1, sizeof(*m->first_edge));
    m->edge_label = shrink(m->edge_label, ne, 1);
    m->edge_target = shrink(m->edge_target, ne, sizeof(*m->edge_target));
    m->tail_label = shrink(m->tail_label, nt, 1);
    m->tail_last = shrink(m->tail_last, nt / 64 + 1, sizeof(*m->tail_last));
    rc = 0;
out:
    free(act);
    free(tmp);
    return rc;
}

/* ---- Fail links ---- */

/* A state's fail state is shallower, so linking depth by depth is always
 * possible; but a tail's states are consecutive in memory, and linking each
 * tail in one run, state after state, is what keeps this fast. So states
 * are linked depth by depth as they fall due, and after each tail state the
 * rest of its tail is linked straight on for as long as everything it needs
 * is linked already. Unlinked states have fail NIL; dense rows exist for
 * states below ndense, which grows as the rows are built. */

/* step() while links are being set: NIL when the walk needs the fail state
 * of an unlinked state, or ends on one (its hit would not be final). */
static uint32_t step_linked(const acmatch *m, uint32_t s, unsigned char c)
{
    for (;;) {
        uint32_t t;
        if (s < m->ndense) {
            t = m->dense[(size_t)s * 256 + c];
            return m->st[t].fail == NIL ? NIL : t;
        }
        if (s >= m->nbranch) {
            uint32_t i = s - m->nbranch;
            t = !is_last(m->tail_last, i) && m->tail_label[i + 1] == c ? s + 1 : 0;
        } else {
            t = branch_child(m, s, c);
        }
        if (t)
            return m->st[t].fail == NIL ? NIL : t;
        if (s == 0)
            return 0;
        if (m->st[s].fail == NIL)
            return NIL;
        s = m->st[s].fail;
    }
}

/* Sets v's fail state and its hit. A state with its own patterns links its
 * first one to the hits further down the fail chain, so reporting walks
 * only states that have patterns. */
static void set_link(acmatch *m, uint32_t v, uint32_t f)
{
    m->st[v].fail = f;
    if (m->st[v].hit == NIL)
        m->st[v].hit = m->st[f].hit;
    else
        m->next_hit[m->st[v].hit] = m->st[f].hit;
}

/* Links the tail states after the linked tail state s while it can; returns
 * the last one linked. A walk cut short is redone in full when its state
 * falls due, so the wasted work is at most the work done. */
static uint32_t run_ahead(acmatch *m, uint32_t s)
{
    for (;;) {
        uint32_t i = s - m->nbranch;
        if (is_last(m->tail_last, i))
            return s;
        uint32_t f = step_linked(m, m->st[s].fail, m->tail_label[i + 1]);
        if (f == NIL)
            return s;
        set_link(m, s + 1, f);
        s++;
    }
}

/* Builds branch state q's dense row: its own edges over its fail state's
 * transitions. */
static void build_row(acmatch *m, uint32_t q)
{
    uint32_t *row = m->dense + (size_t)q * 256;
    uint32_t f = m->st[q].fail;
    if (q == 0)
        memset(row, 0, 256 * sizeof(*row));
    else if (f < m->ndense)
        memcpy(row, m->dense + (size_t)f * 256, 256 * sizeof(*row));
    else
        for (int c = 0; c < 256; c++)
            row[c] = step_linked(m, f, (unsigned char)c);
    for (uint32_t e = m->first_edge[q]; e < m->first_edge[q + 1]; e++)
        row[m->edge_label[e]] = m->edge_target[e];
    m->ndense = q + 1;
}

typedef struct {
    uint32_t state; /* the tail's last linked state */
    uint32_t depth; /* its depth */
} pending_tail;

/* At depth d every state shallower than d is linked, so each state of
 * depth d can be: step_linked() cannot return NIL for it. */
static int link_states(acmatch *m, uint32_t ntails)
{
    uint32_t rows = m->nbranch < ACMATCH_DENSE_STATES ? m->nbranch : ACMATCH_DENSE_STATES;
    pending_tail *pend = alloc_array(ntails, sizeof(*pend));
    m->dense = malloc((size_t)rows * 256 * sizeof(*m->dense));
    if (!pend || !m->dense) {
        free(pend);
        return -1;
    }
    m->ndense = 0;
    m->st[0].fail = 0;
    uint32_t npend = 0, lo = 0, hi = 1; /* branch states one depth up */
    for (uint32_t d = 1; lo < hi || npend; d++) {
        uint32_t kept = 0;
        for (uint32_t k = 0; k < npend; k++) {
            pending_tail p = pend[k];
            if (p.depth + 1 == d) {
                uint32_t s = p.state, i = s - m->nbranch;
                set_link(m, s + 1, step_linked(m, m->st[s].fail, m->tail_label[i + 1]));
                p.state = run_ahead(m, s + 1);
                p.depth = d + (p.state - (s + 1));
                if (is_last(m->tail_last, p.state - m->nbranch))
                    continue;
            }
            pend[kept++] = p;
        }
        npend = kept;

        uint32_t next_hi = hi;
        for (uint32_t q = lo; q < hi; q++) {
            if (q < rows)
                build_row(m, q);
            for (uint32_t e = m->first_edge[q]; e < m->first_edge[q + 1]; e++) {
                uint32_t v = m->edge_target[e];
                set_link(m, v, q == 0 ? 0 : step_linked(m, m->st[q].fail, m->edge_label[e]));
                if (v < m->nbranch) {
                    next_hi = v + 1;
                    continue;
                }
                uint32_t s = run_ahead(m, v);
                if (!is_last(m->tail_last, s - m->nbranch))
                    pend[npend++] = (pending_tail){s, d + (s - v)};
            }
        }
        lo = hi;
        hi = next_hi;
    }
    free(pend);
    return 0;
}

/* ---- Public ---- */

acmatch *acmatch_new(const acmatch_pattern *pats, size_t n)
{
    if (n >= NIL)
        return NULL;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (pats[i].len >= (size_t)TAIL_BIT - 1 - total)
            return NULL;
        total += pats[i].len;
    }
    acmatch *m = calloc(1, sizeof(*m));
    uint32_t *term = alloc_array(n, sizeof(*term));
    if (!m || !term)
        goto fail;
    m->npat = n;
    m->empty = NIL;
    m->same = alloc_array(n, sizeof(*m->same));
    m->next_hit = alloc_array(n, sizeof(*m->next_hit));
    m->len = alloc_array(n, sizeof(*m->len));
    if (!m->same || !m->next_hit || !m->len || build_trie(m, pats, n, total, term))
        goto fail;

    m->st = alloc_array(m->nstates, sizeof(*m->st));
    if (!m->st)
        goto fail;
    for (uint32_t s = 0; s < m->nstates; s++)
        m->st[s] = (ac_state){NIL, NIL};
    uint32_t ntails = 0;
    for (uint32_t e = 0; e < m->nedges; e++)
        ntails += m->edge_target[e] >= m->nbranch;
    /* Equal patterns end at one state: the first is its pattern, the rest
     * follow it through same[] in index order. */
    uint32_t *last_same = m->next_hit; /* unused until link_states() */
    for (uint32_t p = 0; p < n; p++) {
        if (!m->len[p])
            continue;
        uint32_t s = term[p];
        if (m->st[s].hit == NIL)
            m->st[s].hit = p;
        else
            m->same[last_same[m->st[s].hit]] = p;
        last_same[m->st[s].hit] = p;
    }
    for (uint32_t p = 0; p < n; p++)
        m->next_hit[p] = NIL;
    if (link_states(m, ntails))
        goto fail;
    free(term);
    return m;
fail:
    free(term);
    acmatch_free(m);
    return NULL;
}

void acmatch_free(acmatch *m)
{
    if (!m)
        return;
    free(m->st);
    free(m->first_edge);
    free(m->edge_label);
    free(m->edge_target);
    free(m->tail_label);
    free(m->tail_last);
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
    size_t ntail = m->nstates - m->nbranch;
    return sizeof(*m) + (size_t)m->nstates * sizeof(ac_state) +
           ((size_t)m->nbranch + 1) * sizeof(uint32_t) + (size_t)m->nedges * 5 + ntail +
           (ntail / 64 + 1) * sizeof(uint64_t) + (size_t)m->ndense * 256 * sizeof(uint32_t) +
           m->npat * 3 * sizeof(uint32_t);
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
