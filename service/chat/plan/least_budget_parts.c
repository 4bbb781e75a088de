/* The least plan where markers are priced from their parts. See
 * least_budget_parts.h.
 *
 * A marker's text (chat_own.h) is cut into parts where the counter's count
 * adds up (tokenizer_counts_by_parts(): after a punctuation mark that a
 * space follows, and around the digits of a message's index):
 *
 *   "[compactd: messages " F "-" L " were dropped to fit the token budget."
 *   " Re-acquire before relying on them:"  " h1;" ... " hk."
 *   " Already ran, not to be run again (results not kept):"  " r1;" ... " rm]"
 *
 * so its count is a constant of its header's form, the counts of F and L,
 * and each list entry's count as followed by another entry (";"), with the
 * last entry of each list counted as followed by the other list (".") or
 * the end ("]") instead. Over the row of nodes (0 before the history, one
 * per protected message, derivable item or redundant message, ns + 1 after
 * it), a run of dropped nodes between kept nodes u and v then costs a sum
 * of what u alone, v alone and which lists the run has decide: for each v
 * the best u is a range minimum, by the marker's role (the role of the
 * message before the run decides it).
 *
 * A turn that ends in one of compactd's markers costs that marker again
 * when kept, unless a new marker appended to it takes the old one's place
 * (and lists): the one after the run before v, whose state (v's tail
 * taken or not) the path carries, or the one before the run after u,
 * which is priced for each such u one at a time. */
#include "least_budget_parts.h"

#include "loss_markers.h"
#include "chat_own.h"
#include "chat_price.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PLAN (INT64_MAX / 4)
#define ROLES (ROLE_TOOL + 1)

typedef enum { NODE_KEPT = 0, NODE_ITEM, NODE_GONE } node_kind;

/* The header's forms: "message F was" or "messages F-L were", then the
 * redundant ending, the lost ending before a list ("."), or the lost
 * ending with no list (";" and no hint). */
enum { HEAD_REDUNDANT = 0, HEAD_LISTS, HEAD_NONE, HEAD_ENDS };

/* A turn that ends in one of compactd's markers (chat_message's
 * tail_marker): what keeping it re-appends (price), and what that marker's
 * lists add to a new marker that takes it in, as the last entry of each. */
typedef struct {
    int has, has_h, has_r;
    int64_t price, h_more, h_list, h_last, r_more, r_last;
} tail_info;

typedef struct {
    size_t first, last; /* its messages */
    node_kind kind;
    tail_info tf, tl; /* of its first and of its last message */
    /* One of compactd's markers: kept only where no run is beside it; held
     * (protected), dropped only with a dropped neighbour (merge_own). */
    int own_marker, held;
    size_t item; /* its index in items; SIZE_MAX when held */
    int64_t keep;
    /* Its lists' entries when dropped: each counted as followed by another,
     * and what its last entry of each adds as the last of the run's list
     * (hint: before the ran list, or at the end; ran: at the end). */
    int64_t sum_h, sum_r, h_list, h_last, r_last;
    int has_h, has_r;
} node;

typedef struct {
    int64_t *v;
    size_t *at, size;
} mintree;

typedef struct {
    const chat_request *req;
    size_t ns;
    node *nd;
    /* By node: prefix sums of the entries' counts, and the last node at or
     * before it that has hint entries, ran entries, that is an item, that is
     * kept (protected; node 0 counts as kept), that is not held; the digits of the first
     * message after it and of the last message before it. */
    int64_t *sh, *sr, *dig_first, *dig_last;
    size_t *last_h, *last_r, *last_item, *last_kept, *last_free, *gone_from;
    /* The nodes whose last message ends in a marker (in order), which a
     * run after them may take in: priced one at a time, not in a tree. */
    size_t *ends_in_tail, n_tails;
    int64_t role_tokens[ROLES], head[2][HEAD_ENDS], reacquire, ran, none;
    mintree tree[2]; /* by the role of a marker after the node: user, assistant */
    chat_role tree_role[2];
    size_t tree_any[2]; /* a node in each, for where its markers go */
} search;

/* ---- Range minima ---- */

static int tree_init(mintree *t, size_t n)
{
    t->size = 1;
    while (t->size < n)
        t->size *= 2;
    t->v = malloc(2 * t->size * sizeof(*t->v));
    t->at = malloc(2 * t->size * sizeof(*t->at));
    if (!t->v || !t->at)
        return -1;
    for (size_t i = 0; i < 2 * t->size; i++)
        t->v[i] = NO_PLAN, t->at[i] = SIZE_MAX;
    return 0;
}

static void tree_set(mintree *t, size_t i, int64_t x)
{
    i += t->size;
    t->v[i] = x;
    t->at[i] = i - t->size;
    for (i /= 2; i > 0; i /= 2) {
        size_t l = 2 * i, better = t->v[l + 1] < t->v[l] ? l + 1 : l;
        t->v[i] = t->v[better];
        t->at[i] = t->at[better];
    }
}

/* The least value over [l, r], and where (*at). */
static int64_t tree_min(const mintree *t, size_t l, size_t r, size_t *at)
{
    int64_t best = NO_PLAN;
    *at = SIZE_MAX;
    for (l += t->size, r += t->size + 1; l < r; l /= 2, r /= 2) {
        if ((l & 1) && t->v[l] < best)
            best = t->v[l], *at = t->at[l];
        if (l & 1)
            l++;
        if ((r & 1) && t->v[r - 1] < best)
            best = t->v[r - 1], *at = t->at[r - 1];
    }
    return best;
}

/* ---- What the parts count ---- */

static int64_t count_of(const chat_counter *cnt, const char *text)
{
    return cnt->count(cnt->ctx, text, strlen(text));
}

/* What the counter last used on this thread gave the digits of the
 * indexes below INDEX_MEMO: the same few numbers are counted on every
 * request of a session, twice per message. 0: not counted yet (digits are
 * never 0 tokens). */
#define INDEX_MEMO 4096
static _Thread_local struct {
    const void *ctx;
    int64_t (*count)(const void *, const char *, size_t);
    int64_t digits[INDEX_MEMO];
    int have_constants; /* and count_constants()'s, below */
    int64_t role_tokens[ROLES], head[2][HEAD_ENDS], reacquire, ran, none;
} memo;

static void memo_for(const chat_counter *cnt)
{
    if (memo.ctx == cnt->ctx && memo.count == cnt->count)
        return;
    memo.ctx = cnt->ctx;
    memo.count = cnt->count;
    memset(memo.digits, 0, sizeof(memo.digits));
    memo.have_constants = 0;
}

/* The digits of n. */
static int64_t count_index(const chat_counter *cnt, size_t n)
{
    char d[24];
    size_t len = sizeof(d);
    size_t v = n;
    do
        d[--len] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    if (n >= INDEX_MEMO)
        return cnt->count(cnt->ctx, d + len, sizeof(d) - len);
    memo_for(cnt);
    if (memo.digits[n] == 0) {
        int64_t c = cnt->count(cnt->ctx, d + len, sizeof(d) - len);
        if (c <= 0)
            return c;
        memo.digits[n] = c;
    }
    return memo.digits[n];
}

/* The constant parts: each header form less its digits, the lists' heads
 * (their "." or ":" goes with what comes before), the roles. */
static int count_constants(search *S, const chat_counter *cnt)
{
    static const char *const ends[HEAD_ENDS] = {CHAT_MARKER_REDUNDANT, CHAT_MARKER_LOST ".",
                                                CHAT_MARKER_LOST ";"};
    char t[256];
    memo_for(cnt);
    if (memo.have_constants) {
        memcpy(S->role_tokens, memo.role_tokens, sizeof(S->role_tokens));
        memcpy(S->head, memo.head, sizeof(S->head));
        S->reacquire = memo.reacquire;
        S->ran = memo.ran;
        S->none = memo.none;
        return 0;
    }
    for (int e = 0; e < HEAD_ENDS; e++) {
        snprintf(t, sizeof(t), CHAT_MARKER_ONE "%s", (size_t)7, ends[e]);
        S->head[0][e] = count_of(cnt, t) - count_index(cnt, 7);
        snprintf(t, sizeof(t), CHAT_MARKER_RUN "%s", (size_t)7, (size_t)8, ends[e]);
        S->head[1][e] = count_of(cnt, t) - count_index(cnt, 7) - count_index(cnt, 8);
    }
    /* ". Re-acquire ...: " less its first and last characters, likewise. */
    S->reacquire =
        cnt->count(cnt->ctx, CHAT_MARKER_REACQUIRE + 1, strlen(CHAT_MARKER_REACQUIRE) - 2);
    S->ran = cnt->count(cnt->ctx, CHAT_MARKER_RAN + 1, strlen(CHAT_MARKER_RAN) - 2);
    S->none = count_of(cnt, (CHAT_MARKER_NO_HINT "]") + 1); /* its ";" goes with the header */
    int64_t all = S->reacquire | S->ran | S->none;
    for (int r = 0; r < ROLES; r++)
        all |= S->role_tokens[r] = count_of(cnt, chat_role_name((chat_role)r));
    for (int f = 0; f < 2; f++)
        for (int e = 0; e < HEAD_ENDS; e++)
            all |= S->head[f][e];
    if (all < 0)
        return -1;
    memcpy(memo.role_tokens, S->role_tokens, sizeof(S->role_tokens));
    memcpy(memo.head, S->head, sizeof(S->head));
    memo.reacquire = S->reacquire;
    memo.ran = S->ran;
    memo.none = S->none;
    memo.have_constants = 1;
    return 0;
}

/* The entries one list of a dropped node adds (loss_markers.c's
 * marker_list: each exchange's once, each message's then its tail's). */
static int count_entries(const chat_str *list, const chat_str *tails, const node *n,
                         const chat_counter *cnt, int64_t *sum, int64_t *as_list, int64_t *as_last,
                         int *has)
{
    const char *prev = NULL;
    int64_t c[CHAT_ENTRY_ENDS] = {0};
    *sum = 0;
    *has = 0;
    for (size_t i = n->first; i <= n->last; i++)
        for (int k = 0; k < 2; k++) {
            const chat_str *e = k == 0 ? &list[i] : &tails[i];
            if (e->len == 0 || e->s == prev)
                continue;
            if (chat_count_entry(e->s, e->len, cnt, c) != 0)
                return -1;
            *sum += c[CHAT_ENTRY_MORE];
            *has = 1;
            prev = e->s;
        }
    *as_list = c[CHAT_ENTRY_LIST] - c[CHAT_ENTRY_MORE];
    *as_last = c[CHAT_ENTRY_LAST] - c[CHAT_ENTRY_MORE];
    return 0;
}

/* The tail of message i, if it has one. Returns 0, or -1 when out of memory. */
static int count_tail(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                      size_t i, tail_info *t)
{
    const chat_message *m = &req->m[i];
    const chat_str *h = &p->classes.tail_hint[i], *r = &p->classes.tail_ran[i];
    int64_t c[CHAT_ENTRY_ENDS];
    memset(t, 0, sizeof(*t));
    if (!(t->has = m->tail_marker))
        return 0;
    t->price = chat_price_text_message(chat_role_name(m->role), m->tail.s, m->tail.len, cnt);
    if ((t->has_h = h->len > 0)) {
        if (chat_count_entry(h->s, h->len, cnt, c) != 0)
            return -1;
        t->h_more = c[CHAT_ENTRY_MORE];
        t->h_list = c[CHAT_ENTRY_LIST] - c[CHAT_ENTRY_MORE];
        t->h_last = c[CHAT_ENTRY_LAST] - c[CHAT_ENTRY_MORE];
    }
    if ((t->has_r = r->len > 0)) {
        if (chat_count_entry(r->s, r->len, cnt, c) != 0)
            return -1;
        t->r_more = c[CHAT_ENTRY_MORE];
        t->r_last = c[CHAT_ENTRY_LAST] - c[CHAT_ENTRY_MORE];
    }
    return t->price < 0 ? -1 : 0;
}

/* What keeping node x costs beyond its messages: the tails re-appended,
 * and those of its first and last messages. Returns 0 or -1. */
static int count_tails(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                       node *x)
{
    tail_info t;
    for (size_t j = x->first; j <= x->last; j++) {
        if (count_tail(req, p, cnt, j, &t) != 0)
            return -1;
        x->keep += t.has ? t.price : 0;
        if (j == x->first)
            x->tf = t;
        if (j == x->last)
            x->tl = t;
    }
    return 0;
}

/* ---- The row of nodes ---- */

typedef struct {
    uintptr_t s;
    size_t node;
} entry_ref;

static int by_text(const void *a, const void *b)
{
    uintptr_t x = ((const entry_ref *)a)->s, y = ((const entry_ref *)b)->s;
    return (x > y) - (x < y);
}

/* Whether two nodes hold the same text (by address) in one list: a marker
 * lists such a text once where it follows itself, even from two nodes,
 * which would make a run's count depend on more than its ends. Texts are
 * each message's own, so this does not happen; where it would, the search
 * does not apply. tmp has room for n entries. */
static int shared_entries(const chat_str *list, const node *nd, size_t ns, entry_ref *tmp)
{
    size_t k = 0;
    for (size_t v = 1; v <= ns; v++)
        for (size_t i = nd[v].first; nd[v].kind == NODE_ITEM && i <= nd[v].last; i++)
            if (list[i].len > 0)
                tmp[k++] = (entry_ref){(uintptr_t)list[i].s, v};
    qsort(tmp, k, sizeof(*tmp), by_text);
    for (size_t j = 1; j < k; j++)
        if (tmp[j].s == tmp[j - 1].s && tmp[j].node != tmp[j - 1].node)
            return 1;
    return 0;
}

/* Nodes 1..ns; returns ns, 0 where the search does not apply, SIZE_MAX
 * when out of memory. */
static size_t build_nodes(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                          const plan_result *base, const chat_item *items, size_t nitems, node *nd)
{
    size_t n = 0, k = 0;
    int64_t unused;
    for (size_t i = 0; i < req->n; i++) {
        node *x = &nd[++n];
        *x = (node){.first = i, .last = i, .kind = NODE_GONE};
        int own = p->classes.own[i] == CHAT_OWN_MARKER;
        if (p->units[i].cls == UNIT_PROTECTED && !own) {
            x->kind = NODE_KEPT;
            x->keep = base->entries[i].cost;
        } else if (p->units[i].cls == UNIT_PROTECTED ||
                   (p->units[i].cls == UNIT_DERIVABLE && k < nitems && items[k].first == i)) {
            int held = p->units[i].cls == UNIT_PROTECTED;
            x->kind = NODE_ITEM;
            x->last = held ? i : items[k].last;
            x->item = held ? SIZE_MAX : k;
            x->keep = held ? base->entries[i].cost : items[k].keep_cost;
            x->own_marker = own;
            x->held = held;
            if (count_entries(p->classes.hint, p->classes.tail_hint, x, cnt, &x->sum_h, &x->h_list,
                              &x->h_last, &x->has_h) != 0 ||
                count_entries(p->classes.ran, p->classes.tail_ran, x, cnt, &x->sum_r, &unused,
                              &x->r_last, &x->has_r) != 0)
                return SIZE_MAX;
            if (!held)
                i = items[k++].last;
        }
        if (x->kind != NODE_GONE && count_tails(req, p, cnt, x) != 0)
            return SIZE_MAX;
    }
    return n;
}

static void index_nodes(search *S, const chat_counter *cnt)
{
    size_t ns = S->ns, n = S->req->n;
    S->sh[0] = S->sr[0] = 0;
    S->last_h[0] = S->last_r[0] = S->last_item[0] = S->last_kept[0] = S->last_free[0] = 0;
    for (size_t v = 1; v <= ns; v++) {
        const node *x = &S->nd[v];
        S->sh[v] = S->sh[v - 1] + (x->kind == NODE_ITEM ? x->sum_h : 0);
        S->sr[v] = S->sr[v - 1] + (x->kind == NODE_ITEM ? x->sum_r : 0);
        S->last_h[v] = x->kind == NODE_ITEM && x->has_h ? v : S->last_h[v - 1];
        S->last_r[v] = x->kind == NODE_ITEM && x->has_r ? v : S->last_r[v - 1];
        S->last_item[v] = x->kind == NODE_ITEM ? v : S->last_item[v - 1];
        S->last_kept[v] = x->kind == NODE_KEPT ? v : S->last_kept[v - 1];
        S->last_free[v] = x->held ? S->last_free[v - 1] : v;
        S->gone_from[v] = x->kind != NODE_GONE                      ? SIZE_MAX
                          : S->nd[v - 1].kind == NODE_GONE && v > 1 ? S->gone_from[v - 1]
                                                                    : v;
    }
    for (size_t v = 0; v <= ns + 1; v++) {
        size_t first = v == 0 ? 0 : v <= ns ? S->nd[v].last + 1 : n;
        size_t last = v == 0 ? 0 : v <= ns ? S->nd[v].first : n;
        S->dig_first[v] = count_index(cnt, first);
        S->dig_last[v] = last > 0 ? count_index(cnt, last - 1) : 0;
    }
}

/* ---- Prices of runs ---- */

/* The first message after node u. */
static size_t first_after(const search *S, size_t u)
{
    return u == 0 ? 0 : S->nd[u].last + 1;
}

static chat_role role_before(const search *S, size_t u)
{
    return u == 0 ? ROLE_USER : S->req->m[S->nd[u].last].role;
}

/* The marker's parts that v, the run's lists (h, r: it has hint
 * entries, ran entries) and the tail it takes in (ab, or NULL) decide,
 * less the entries of nodes to u, which the caller takes off (sh[u] +
 * sr[u]). A tail taken in lists its entries after the run's. */
static int64_t lists_after(const search *S, size_t v, int h, int r, int range, const tail_info *ab)
{
    int th = ab && ab->has_h, tr = ab && ab->has_r, hl = h || th, rl = r || tr;
    int64_t t = S->head[range][hl || rl ? HEAD_LISTS : HEAD_NONE] + S->sh[v - 1] + S->sr[v - 1];
    const node *lh = &S->nd[S->last_h[v - 1]], *lr = &S->nd[S->last_r[v - 1]];
    if (ab)
        t += ab->h_more + ab->r_more;
    if (hl)
        t += S->reacquire + (th ? (rl ? ab->h_list : ab->h_last) : (rl ? lh->h_list : lh->h_last));
    if (rl)
        t += S->ran + (tr ? ab->r_last : lr->r_last);
    return hl || rl ? t : t + S->none;
}

static size_t last_before(const search *S, size_t v)
{
    return v <= S->ns ? S->nd[v].first - 1 : S->req->n - 1;
}

/* The tail a marker placed as pl takes in (chat_markers_build(): the
 * first marker appended to a turn that ends in one), for a run between u
 * and v; u_taken: the run before u took u's first message's tail. */
static const tail_info *taken_in(const search *S, chat_placement pl, size_t u, int u_taken,
                                 size_t v)
{
    if (pl.place != MARKER_APPEND)
        return NULL;
    if (v <= S->ns && pl.at == S->nd[v].first)
        return S->nd[v].tf.has ? &S->nd[v].tf : NULL;
    const node *x = &S->nd[u];
    return u > 0 && pl.at == x->last && x->tl.has && !(u_taken && x->first == x->last) ? &x->tl
                                                                                       : NULL;
}

/* The exact price of the marker for the run of the nodes between u and v
 * (u + 1 < v), as chat_markers_build() places and prices it, less the
 * re-appended tail it takes the place of; *v_taken: it took v's. */
static int64_t run_price(const search *S, size_t u, int u_taken, size_t v, int *v_taken)
{
    size_t first = first_after(S, u), last = last_before(S, v);
    int lost = S->last_item[v - 1] > u;
    chat_placement pl = chat_marker_place_run(S->req, first, last, lost, u == 0, role_before(S, u));
    *v_taken = 0;
    if (!pl.need)
        return 0;
    const tail_info *ab = taken_in(S, pl, u, u_taken, v);
    *v_taken = ab && v <= S->ns && ab == &S->nd[v].tf;
    int range = first != last;
    int64_t t = CHAT_MESSAGE_FRAME_TOKENS + S->role_tokens[pl.role] + S->dig_first[u] +
                (range ? S->dig_last[v] : 0) - (ab ? ab->price : 0);
    if (!lost && !ab)
        return t + S->head[range][HEAD_REDUNDANT];
    int h = S->last_h[v - 1] > u, r = S->last_r[v - 1] > u;
    return t + lists_after(S, v, h, r, range, ab) - S->sh[u] - S->sr[u];
}

/* The cheapest way found to node v so far in each state (v's first
 * message's tail taken by the run before it, or not), and from where (a
 * node and its state: 2 u + state). */
typedef struct {
    int64_t d[2];
    size_t from[2];
} way;

static void offer(way *w, int64_t c, int state, size_t u, int u_state)
{
    if (c < w->d[state]) {
        w->d[state] = c;
        w->from[state] = 2 * u + (size_t)u_state;
    }
}

/* Node u in each of its states, then a run to v. */
static void offer_run(const search *S, const int64_t *const dp[2], size_t u, size_t v, way *w)
{
    for (int su = 0; su < 2; su++) {
        int vt = 0;
        if (dp[su][u] < NO_PLAN)
            offer(w, dp[su][u] + run_price(S, u, su, v, &vt), vt, u, su);
    }
}

/* What node u puts in its role's tree: what a run of two or more nodes
 * after it costs, less what v and the lists decide, from u's cheaper
 * state (best[u]). A node whose last message ends in a marker is not put
 * there: a run after it may take that one in. */
static void tree_put(search *S, const int64_t *const dp[2], size_t u, unsigned char *best)
{
    best[u] = dp[1][u] < dp[0][u];
    int64_t d = dp[best[u]][u];
    if (d >= NO_PLAN || u > S->ns || (u > 0 && (S->nd[u].own_marker || S->nd[u].tl.has)))
        return;
    size_t first = first_after(S, u);
    chat_role role = chat_marker_place_run(S->req, first, first, 1, u == 0, role_before(S, u)).role;
    int c = role == ROLE_ASSISTANT;
    S->tree_role[c] = role;
    S->tree_any[c] = u;
    tree_set(&S->tree[c], u, d + S->dig_first[u] - S->sh[u] - S->sr[u]);
}

/* The best u in [lo, hi] for v whose run drops an item and has lists h, r,
 * offered to w. Each tree's markers go where its any node's would (the
 * role decides it), and take in v's first message's tail where they are
 * appended to it. */
static void best_in(const search *S, const unsigned char *best, size_t v, size_t lo, size_t hi,
                    int h, int r, way *w)
{
    if (lo > hi)
        return;
    for (int c = 0; c < 2; c++) {
        size_t at, any = S->tree_any[c];
        int64_t m = tree_min(&S->tree[c], lo, hi, &at);
        if (m >= NO_PLAN)
            continue;
        chat_placement pl = chat_marker_place_run(S->req, first_after(S, any), last_before(S, v), 1,
                                                  any == 0, role_before(S, any));
        const tail_info *ab = taken_in(S, pl, any, 0, v);
        int64_t cost = m + CHAT_MESSAGE_FRAME_TOKENS + S->role_tokens[S->tree_role[c]] +
                       S->dig_last[v] + lists_after(S, v, h, r, 1, ab) - (ab ? ab->price : 0);
        offer(w, cost, ab != NULL, at, best[at]);
    }
}

/* The cheapest ways to v: right after a kept node; after a run that ends
 * at v - 1 from the nearest node that can start it, or from a node whose
 * last message ends in a marker (priced one at a time); or after a longer
 * run that drops an item (by range minima, in the spans of u over which
 * the run's lists stay the same). */
static way best_to(const search *S, const int64_t *const dp[2], const unsigned char *best, size_t v)
{
    way w = {{NO_PLAN, NO_PLAN}, {0, 0}};
    offer(&w, dp[best[v - 1]][v - 1], 0, v - 1, best[v - 1]);
    if (v < 2 || (v <= S->ns && S->nd[v].own_marker))
        return w;
    const node *prev = &S->nd[v - 1];
    size_t li = S->last_item[v - 1], lo = S->last_kept[v - 1], free = S->last_free[v - 1];
    /* A run of held nodes only is no plan: nothing drops them. */
    size_t u = prev->held                ? SIZE_MAX
               : prev->kind == NODE_ITEM ? v - 2
               : prev->kind == NODE_GONE ? S->gone_from[v - 1] - 1
                                         : SIZE_MAX;
    if (u != SIZE_MAX && !(u > 0 && (S->nd[u].own_marker || S->nd[u].tl.has)))
        offer_run(S, dp, u, v, &w);
    for (size_t k = S->n_tails; k-- > 0;) {
        size_t t = S->ends_in_tail[k];
        if (t + 2 > v)
            continue;
        if (t < lo)
            break;
        if (free > t)
            offer_run(S, dp, t, v, &w);
    }
    if (li <= lo || v < 3 || free == 0)
        return w;
    size_t hi = li - 1 < v - 3 ? li - 1 : v - 3;
    hi = free - 1 < hi ? free - 1 : hi;
    size_t a = S->last_h[v - 1], b = S->last_r[v - 1];
    size_t both = a < b ? a : b, one = a < b ? b : a;
    if (both > lo)
        best_in(S, best, v, lo, both - 1 < hi ? both - 1 : hi, 1, 1, &w);
    if (one > lo && one > both)
        best_in(S, best, v, both > lo ? both : lo, one - 1 < hi ? one - 1 : hi, a > b, b > a, &w);
    best_in(S, best, v, one > lo ? one : lo, hi, 0, 0, &w);
    return w;
}

/* ---- The search ---- */

static void search_free(search *S)
{
    free(S->nd);
    free(S->sh);
    free(S->last_h);
    for (int c = 0; c < 2; c++) {
        free(S->tree[c].v);
        free(S->tree[c].at);
    }
}

/* Room for the row of nodes of a history of n messages. Returns 0 or -1. */
static int search_alloc(search *S, size_t n)
{
    size_t cap = n + 2;
    S->nd = calloc(cap, sizeof(*S->nd));
    S->sh = malloc(6 * cap * sizeof(*S->sh));         /* sh, sr, dig_first, dig_last, dp[2] */
    S->last_h = calloc(10 * cap, sizeof(*S->last_h)); /* ..., from[2], best */
    if (!S->nd || !S->sh || !S->last_h || tree_init(&S->tree[0], cap) != 0 ||
        tree_init(&S->tree[1], cap) != 0)
        return -1;
    S->sr = S->sh + cap;
    S->dig_first = S->sh + 2 * cap;
    S->dig_last = S->sh + 3 * cap;
    S->last_r = S->last_h + cap;
    S->last_item = S->last_h + 2 * cap;
    S->last_kept = S->last_h + 3 * cap;
    S->gone_from = S->last_h + 4 * cap;
    S->last_free = S->last_h + 5 * cap;
    S->ends_in_tail = S->last_h + 6 * cap;
    return 0;
}

/* Nodes whose last message ends in a marker, each priced against every v
 * after it up to the next protected message: where there are so many that
 * this would be quadratic work, the search does not apply. */
#define TAIL_WORK_MAX (1u << 24)

static int list_tails(search *S)
{
    size_t work = 0;
    S->n_tails = 0;
    for (size_t v = 1; v <= S->ns; v++)
        if (S->nd[v].tl.has) {
            S->ends_in_tail[S->n_tails++] = v;
            work += S->ns;
        }
    return work <= TAIL_WORK_MAX;
}

int chat_least_exact(const chat_request *req, const chat_plan *p, const chat_counter *cnt,
                     const plan_result *base, const chat_item *items, size_t nitems,
                     unsigned char *drop, int64_t *tokens)
{
    search S = {.req = req};
    if (!cnt->by_parts)
        return 0;
    int rc = -1;
    if (search_alloc(&S, req->n) != 0 || count_constants(&S, cnt) != 0)
        goto done;
    S.ns = build_nodes(req, p, cnt, base, items, nitems, S.nd);
    entry_ref *refs = S.ns > 0 && S.ns != SIZE_MAX ? malloc(req->n * sizeof(*refs)) : NULL;
    if (S.ns == SIZE_MAX || S.ns == 0 || !refs ||
        shared_entries(p->classes.hint, S.nd, S.ns, refs) ||
        shared_entries(p->classes.ran, S.nd, S.ns, refs) || !list_tails(&S)) {
        rc = S.ns == SIZE_MAX || (S.ns > 0 && !refs) ? -1 : 0;
        free(refs);
        goto done;
    }
    free(refs);
    index_nodes(&S, cnt);
    size_t cap = req->n + 2, *from[2] = {S.last_h + 7 * cap, S.last_h + 8 * cap};
    int64_t *dp[2] = {S.sh + 4 * cap, S.sh + 5 * cap};
    const int64_t *const *seen = (const int64_t *const *)dp;
    unsigned char *best = (unsigned char *)(S.last_h + 9 * cap);
    for (size_t v = 0; v <= S.ns + 1; v++)
        if (S.dig_first[v] < 0 || S.dig_last[v] < 0)
            goto done;
    dp[0][0] = 0;
    dp[1][0] = NO_PLAN;
    tree_put(&S, seen, 0, best);
    for (size_t v = 1; v <= S.ns + 1; v++) {
        way w = best_to(&S, seen, best, v);
        int keepable = v > S.ns || S.nd[v].kind != NODE_GONE;
        for (int st = 0; st < 2; st++) {
            dp[st][v] =
                keepable && w.d[st] < NO_PLAN ? w.d[st] + (v <= S.ns ? S.nd[v].keep : 0) : NO_PLAN;
            from[st][v] = w.from[st];
        }
        tree_put(&S, seen, v, best);
    }
    memset(drop, 1, nitems);
    int st = best[S.ns + 1];
    for (size_t v = S.ns + 1; v > 0;) {
        size_t code = from[st][v];
        v = code / 2;
        st = (int)(code % 2);
        if (v > 0 && S.nd[v].kind == NODE_ITEM && !S.nd[v].held)
            drop[S.nd[v].item] = 0;
    }
    *tokens = dp[best[S.ns + 1]][S.ns + 1];
    rc = 1;
done:
    search_free(&S);
    return rc;
}
