/* diff_report.c - what `hiera diff` found, grouped (diff_report.h), and printed as text (grouped
 * by key, then by the change, each with the nodes that got it), JSON (the schema is in README.md)
 * or markdown (a table for a merge request comment).
 *
 * A failure whose message is the same for several keys (a hiera.yaml that does not parse, a data
 * file that every lookup reads) is said once, with its keys and nodes, before the keys: listed
 * under every key it would be said thousands of times. */
#include "cli/diff_report.h"

#include "base/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc_(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

static void *xrealloc_(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

/* ------------------------------------------------------------------ outcomes and groups */

void outcome_clear(outcome *o)
{
    hiera_value_decref(o->v);
    free(o->msg);
    memset(o, 0, sizeof *o);
}

bool outcome_same(const outcome *a, const outcome *b)
{
    if (a->st != b->st)
        return false;
    if (a->st == HIERA_OK)
        return hiera_value_same(a->v, b->v);
    if (a->st == HIERA_ERROR)
        return strcmp(a->msg ? a->msg : "", b->msg ? b->msg : "") == 0;
    return true;
}

static change_kind kind_of(const outcome *o, const outcome *n)
{
    if (o->st == HIERA_ERROR && n->st == HIERA_ERROR)
        return CH_FAILURE_CHANGED;
    if (n->st == HIERA_ERROR)
        return CH_NOW_FAILING;
    if (o->st == HIERA_ERROR)
        return CH_FIXED;
    if (o->st == HIERA_NOT_FOUND)
        return CH_ADDED;
    if (n->st == HIERA_NOT_FOUND)
        return CH_REMOVED;
    return CH_CHANGED;
}

static bool failure_kind(change_kind k) { return k == CH_NOW_FAILING || k == CH_FIXED || k == CH_FAILURE_CHANGED; }

static uint64_t str_code(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return hash_mix(h);
}

static uint64_t outcome_code(const outcome *o)
{
    return o->st == HIERA_OK ? hiera_value_same_code(o->v) : o->st == HIERA_ERROR ? str_code(o->msg) : 0x404ULL;
}

/* What identifies a change: for the failure kinds only the messages. */
static uint64_t change_sig(uint32_t key, change_kind kind, const outcome *o, const outcome *n)
{
    uint64_t h = hash_mix(((uint64_t)key << 8) + (uint64_t)kind + 1);
    switch (kind) {
    case CH_NOW_FAILING: return hash_mix(h ^ outcome_code(n));
    case CH_FIXED: return hash_mix(h ^ outcome_code(o));
    default: return hash_mix(h ^ outcome_code(o) * 31 ^ outcome_code(n));
    }
}

static bool change_match(const dgroup *g, uint32_t key, change_kind kind, const outcome *o, const outcome *n)
{
    if (g->key != key || g->kind != kind)
        return false;
    switch (kind) {
    case CH_NOW_FAILING: return outcome_same(&g->new_, n);
    case CH_FIXED: return outcome_same(&g->old, o);
    default: return outcome_same(&g->old, o) && outcome_same(&g->new_, n);
    }
}

/* For the failure kinds: whether the answer of the side that does not fail differs from g's. */
static bool other_side_differs(const dgroup *g, const outcome *o, const outcome *n)
{
    if (g->kind == CH_NOW_FAILING)
        return !outcome_same(&g->old, o);
    if (g->kind == CH_FIXED)
        return !outcome_same(&g->new_, n);
    return false;
}

static void push_node(dgroup *g, uint32_t node)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4;
        g->nodes = xrealloc_(g->nodes, g->cap * sizeof *g->nodes);
    }
    g->nodes[g->n++] = node;
}

static void gt_grow(gtable *t)
{
    size_t nb = t->nb ? t->nb * 4 : 256;
    dgroup **b = xcalloc_(nb, sizeof *b);
    for (size_t i = 0; i < t->nb; i++)
        for (dgroup *g = t->buckets[i], *next; g; g = next) {
            next = g->next;
            g->next = b[g->sig & (nb - 1)];
            b[g->sig & (nb - 1)] = g;
        }
    free(t->buckets);
    t->buckets = b;
    t->nb = nb;
}

static dgroup *gt_find(gtable *t, uint64_t sig, uint32_t key, change_kind kind, const outcome *o, const outcome *n)
{
    if (!t->nb)
        return NULL;
    for (dgroup *g = t->buckets[sig & (t->nb - 1)]; g; g = g->next)
        if (g->sig == sig && change_match(g, key, kind, o, n))
            return g;
    return NULL;
}

static void gt_insert(gtable *t, dgroup *g)
{
    if (t->count + 1 > t->nb)
        gt_grow(t);
    g->next = t->buckets[g->sig & (t->nb - 1)];
    t->buckets[g->sig & (t->nb - 1)] = g;
    t->count++;
}

void gt_add(gtable *t, uint32_t key, uint32_t node, outcome *old, outcome *new_)
{
    change_kind kind = kind_of(old, new_);
    uint64_t sig = change_sig(key, kind, old, new_);
    dgroup *g = gt_find(t, sig, key, kind, old, new_);
    if (g) {
        if (!g->varies && other_side_differs(g, old, new_))
            g->varies = true;
        push_node(g, node);
        outcome_clear(old);
        outcome_clear(new_);
        return;
    }
    g = xcalloc_(1, sizeof *g);
    g->sig = sig;
    g->key = key;
    g->kind = kind;
    g->old = *old;
    g->new_ = *new_;
    memset(old, 0, sizeof *old);
    memset(new_, 0, sizeof *new_);
    push_node(g, node);
    gt_insert(t, g);
}

static void group_free(dgroup *g)
{
    outcome_clear(&g->old);
    outcome_clear(&g->new_);
    free(g->nodes);
    free(g);
}

void gt_merge(gtable *into, gtable *from)
{
    for (size_t i = 0; i < from->nb; i++)
        for (dgroup *g = from->buckets[i], *next; g; g = next) {
            next = g->next;
            dgroup *h = gt_find(into, g->sig, g->key, g->kind, &g->old, &g->new_);
            if (!h) {
                gt_insert(into, g);
                continue;
            }
            if (g->varies || other_side_differs(h, &g->old, &g->new_))
                h->varies = true;
            for (size_t j = 0; j < g->n; j++)
                push_node(h, g->nodes[j]);
            group_free(g);
        }
    free(from->buckets);
    memset(from, 0, sizeof *from);
}

void gt_free(gtable *t)
{
    for (size_t i = 0; i < t->nb; i++)
        for (dgroup *g = t->buckets[i], *next; g; g = next) {
            next = g->next;
            group_free(g);
        }
    free(t->buckets);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ arranging */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* bigger groups first, then by their first node */
static int cmp_group(const void *a, const void *b)
{
    const dgroup *g = *(dgroup *const *)a, *h = *(dgroup *const *)b;
    if (g->kind != h->kind && (failure_kind(g->kind) != failure_kind(h->kind)))
        return failure_kind(g->kind) ? -1 : 1; /* failures first */
    if (g->n != h->n)
        return g->n > h->n ? -1 : 1;
    return g->nodes[0] < h->nodes[0] ? -1 : g->nodes[0] > h->nodes[0];
}

/* A failure said once: its keys (one group each) with the same nodes. */
typedef struct {
    change_kind kind;
    const char *old_msg, *new_msg;
    dgroup **groups;
    size_t n;
} shared_failure;

typedef struct {
    dgroup ***by_key; /* per key: its groups (that are not in a shared failure), sorted */
    size_t *nby_key;
    /* per key and group: the first group of the key whose changed paths are the same (values that
     * differ elsewhere make several groups of one change: shown once, with each group's nodes) */
    size_t **twin_of;
    shared_failure *shared;
    size_t nshared;
    report_counts counts;
} arranged;

static uint64_t failure_code(const dgroup *g)
{
    return hash_mix(str_code(g->old.msg) * 31 + str_code(g->new_.msg) + (uint64_t)g->kind);
}

static bool same_failure(const dgroup *a, const dgroup *b)
{
    return a->kind == b->kind && strcmp(a->old.msg ? a->old.msg : "", b->old.msg ? b->old.msg : "") == 0 &&
           strcmp(a->new_.msg ? a->new_.msg : "", b->new_.msg ? b->new_.msg : "") == 0;
}

static bool same_nodes(const dgroup *a, const dgroup *b)
{
    return a->n == b->n && memcmp(a->nodes, b->nodes, a->n * sizeof *a->nodes) == 0;
}

static int cmp_failure_groups(const void *pa, const void *pb)
{
    const dgroup *a = *(dgroup *const *)pa, *b = *(dgroup *const *)pb;
    uint64_t x = failure_code(a), y = failure_code(b);
    if (x != y)
        return x < y ? -1 : 1;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    int c = memcmp(a->nodes, b->nodes, a->n * sizeof *a->nodes);
    if (c)
        return c;
    return a->key < b->key ? -1 : a->key > b->key;
}

static void arrange(const diff_report *r, arranged *ar)
{
    memset(ar, 0, sizeof *ar);
    gtable *t = r->groups;
    size_t total = t->count;
    dgroup **all = xcalloc_(total, sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < t->nb; i++)
        for (dgroup *g = t->buckets[i]; g; g = g->next) {
            qsort(g->nodes, g->n, sizeof *g->nodes, cmp_u32);
            all[n++] = g;
        }
    /* counts */
    unsigned char *touched = xcalloc_(r->nnodes, 1);
    unsigned char *key_touched = xcalloc_(r->nkeys, 1);
    for (size_t i = 0; i < n; i++) {
        dgroup *g = all[i];
        ar->counts.changes += g->n;
        if (g->kind == CH_NOW_FAILING)
            ar->counts.now_failing += g->n;
        if (g->kind == CH_FIXED)
            ar->counts.fixed += g->n;
        key_touched[g->key] = 1;
        for (size_t j = 0; j < g->n; j++)
            touched[g->nodes[j]] = 1;
    }
    for (size_t i = 0; i < r->nonly_old; i++)
        touched[r->only_old[i]] = 1;
    for (size_t i = 0; i < r->nonly_new; i++)
        touched[r->only_new[i]] = 1;
    for (size_t i = 0; i < r->nnodes; i++)
        ar->counts.nodes_changed += touched[i];
    for (size_t i = 0; i < r->nkeys; i++)
        ar->counts.keys_changed += key_touched[i];
    free(touched);
    free(key_touched);

    /* failures with one message for several keys are said once, keys with the same nodes together */
    dgroup **fails = xcalloc_(n, sizeof *fails);
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (failure_kind(all[i]->kind))
            fails[nf++] = all[i];
    qsort(fails, nf, sizeof *fails, cmp_failure_groups);
    for (size_t i = 0; i < nf;) {
        size_t j = i + 1;
        while (j < nf && same_failure(fails[i], fails[j]))
            j++;
        /* [i, j): one message; several keys make it shared */
        bool several = false;
        for (size_t k = i + 1; k < j && !several; k++)
            several = fails[k]->key != fails[i]->key;
        if (several) {
            for (size_t k = i; k < j;) {
                size_t m = k + 1;
                while (m < j && same_nodes(fails[k], fails[m]))
                    m++;
                ar->shared = xrealloc_(ar->shared, (ar->nshared + 1) * sizeof *ar->shared);
                shared_failure *s = &ar->shared[ar->nshared++];
                s->kind = fails[k]->kind;
                s->old_msg = fails[k]->old.msg;
                s->new_msg = fails[k]->new_.msg;
                s->n = m - k;
                s->groups = xcalloc_(s->n, sizeof *s->groups);
                for (size_t q = k; q < m; q++) {
                    s->groups[q - k] = fails[q];
                    fails[q]->said_once = true;
                }
                k = m;
            }
        }
        i = j;
    }
    ar->by_key = xcalloc_(r->nkeys, sizeof *ar->by_key);
    ar->nby_key = xcalloc_(r->nkeys, sizeof *ar->nby_key);
    for (size_t i = 0; i < n; i++) {
        if (all[i]->said_once) /* not listed under its key */
            continue;
        uint32_t k = all[i]->key;
        ar->by_key[k] = xrealloc_(ar->by_key[k], (ar->nby_key[k] + 1) * sizeof **ar->by_key);
        ar->by_key[k][ar->nby_key[k]++] = all[i];
    }
    for (size_t k = 0; k < r->nkeys; k++)
        if (ar->nby_key[k] > 1)
            qsort(ar->by_key[k], ar->nby_key[k], sizeof **ar->by_key, cmp_group);
    ar->twin_of = xcalloc_(r->nkeys, sizeof *ar->twin_of);
    for (size_t k = 0; k < r->nkeys; k++) {
        size_t ng = ar->nby_key[k];
        if (!ng)
            continue;
        ar->twin_of[k] = xcalloc_(ng, sizeof **ar->twin_of);
        hiera_value **ch = xcalloc_(ng, sizeof *ch);
        for (size_t i = 0; i < ng; i++) {
            const dgroup *g = ar->by_key[k][i];
            ar->twin_of[k][i] = i;
            if (g->kind != CH_CHANGED)
                continue;
            ch[i] = hiera_value_changes(g->old.v, g->new_.v);
            for (size_t j = 0; j < i; j++)
                if (ch[j] && ar->twin_of[k][j] == j && hiera_value_same(ch[i], ch[j])) {
                    ar->twin_of[k][i] = j;
                    break;
                }
        }
        for (size_t i = 0; i < ng; i++)
            hiera_value_decref(ch[i]);
        free(ch);
    }
    free(fails);
    free(all);
}

/* How many groups of key k are twins of group i (i included), and their nodes in all. */
static size_t twins(const arranged *ar, size_t k, size_t i, size_t *nodes)
{
    size_t n = 0;
    *nodes = 0;
    for (size_t j = i; j < ar->nby_key[k]; j++)
        if (ar->twin_of[k][j] == i) {
            n++;
            *nodes += ar->by_key[k][j]->n;
        }
    return n;
}

static void arranged_free(const diff_report *r, arranged *ar)
{
    for (size_t k = 0; k < r->nkeys; k++) {
        free(ar->by_key[k]);
        free(ar->twin_of[k]);
    }
    free(ar->twin_of);
    free(ar->by_key);
    free(ar->nby_key);
    for (size_t s = 0; s < ar->nshared; s++)
        free(ar->shared[s].groups);
    free(ar->shared);
}

/* ------------------------------------------------------------------ text pieces */

typedef struct {
    char *s;
    size_t len, cap;
} tbuf;

static void tb_addn(tbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = xrealloc_(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

static void tb_add(tbuf *b, const char *s) { tb_addn(b, s, strlen(s)); }

static void tb_addf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_addf(tbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    tb_addn(b, s, (size_t)n);
    free(s);
}

/* A value as compact JSON (or as Ruby's to_s when JSON cannot hold it: Infinity). malloc'ed. */
static char *value_text(const hiera_value *v)
{
    hiera_error err = {0};
    char *t = hiera_render(v, HIERA_RENDER_JSON, &err);
    hiera_error_clear(&err);
    if (!t)
        t = hiera_render(v, HIERA_RENDER_S, &err);
    hiera_error_clear(&err);
    return t ? t : strdup("?");
}

#define SHORT_VALUE 120

/* value_text cut to SHORT_VALUE characters (on a UTF-8 boundary) unless whole */
static char *short_value(const hiera_value *v, bool whole)
{
    char *t = value_text(v);
    size_t n = strlen(t);
    if (whole || n <= SHORT_VALUE)
        return t;
    size_t cut = SHORT_VALUE;
    while (cut > 0 && ((unsigned char)t[cut] & 0xC0) == 0x80)
        cut--;
    t = xrealloc_(t, cut + 4);
    memcpy(t + cut, "\xe2\x80\xa6", 4); /* … */
    return t;
}

static const char *kind_word(change_kind k)
{
    switch (k) {
    case CH_ADDED: return "added";
    case CH_REMOVED: return "removed";
    case CH_CHANGED: return "changed";
    case CH_NOW_FAILING: return "now failing";
    case CH_FIXED: return "no longer failing";
    case CH_FAILURE_CHANGED: return "failure changed";
    default: return "?";
    }
}

static const char *kind_id(change_kind k)
{
    switch (k) {
    case CH_ADDED: return "added";
    case CH_REMOVED: return "removed";
    case CH_CHANGED: return "changed";
    case CH_NOW_FAILING: return "now_failing";
    case CH_FIXED: return "no_longer_failing";
    case CH_FAILURE_CHANGED: return "failure_changed";
    default: return "?";
    }
}

/* colours (text on a terminal) */
#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_FAIL "\033[1;31m"

static const char *kind_colour(change_kind k)
{
    switch (k) {
    case CH_ADDED: case CH_FIXED: return C_GREEN;
    case CH_REMOVED: return C_RED;
    case CH_CHANGED: return C_YELLOW;
    default: return C_FAIL;
    }
}

typedef struct {
    const diff_report *r;
    FILE *out;
    bool color;
} printer;

static const char *col(const printer *p, const char *c) { return p->color ? c : ""; }

#define FEW 3

/* "N nodes (a, b, c, … +M)" */
static void node_list(tbuf *b, const diff_report *r, const uint32_t *nodes, size_t n, bool all, const char *quote)
{
    size_t show = all || n <= FEW + 1 ? n : FEW;
    for (size_t i = 0; i < show; i++)
        tb_addf(b, "%s%s%s%s", i ? ", " : "", quote, r->nodes[nodes[i]], quote);
    if (show < n)
        tb_addf(b, ", \xe2\x80\xa6 +%zu", n - show);
}

static void key_list(tbuf *b, const diff_report *r, dgroup **groups, size_t n, bool all, const char *quote)
{
    size_t show = all || n <= FEW + 1 ? n : FEW;
    for (size_t i = 0; i < show; i++)
        tb_addf(b, "%s%s%s%s", i ? ", " : "", quote, r->keys[groups[i]->key], quote);
    if (show < n)
        tb_addf(b, ", \xe2\x80\xa6 +%zu", n - show);
}

static const char *plural(size_t n, const char *one, const char *many) { return n == 1 ? one : many; }

/* ------------------------------------------------------------------ text */

#define MAX_PATHS 12

static void text_change_body(const printer *p, tbuf *b, const char *key, const dgroup *g, const char *indent)
{
    const diff_report *r = p->r;
    bool whole = r->all_nodes;
    switch (g->kind) {
    case CH_CHANGED: {
        hiera_value *ch = hiera_value_changes(g->old.v, g->new_.v);
        size_t n = hiera_value_array_size(ch);
        for (size_t i = 0; i < n && (i < MAX_PATHS || whole); i++) {
            const hiera_value *c = hiera_value_array_get(ch, i);
            char *path = hiera_value_path_text(hiera_value_hash_get(c, "path"));
            const char *kind = hiera_value_string(hiera_value_hash_get(c, "kind"));
            tb_addf(b, "%s%s%s%s%s: ", indent, key, *path ? "." : "", path, "");
            free(path);
            if (strcmp(kind, "changed") == 0) {
                char *o = short_value(hiera_value_hash_get(c, "old"), whole), *nv = short_value(hiera_value_hash_get(c, "new"), whole);
                tb_addf(b, "%s%s%s \xe2\x86\x92 %s%s%s\n", col(p, C_RED), o, col(p, C_RESET), col(p, C_GREEN), nv, col(p, C_RESET));
                free(o);
                free(nv);
            } else if (strcmp(kind, "added") == 0) {
                char *nv = short_value(hiera_value_hash_get(c, "new"), whole);
                tb_addf(b, "%sadded%s %s\n", col(p, C_GREEN), col(p, C_RESET), nv);
                free(nv);
            } else {
                char *o = short_value(hiera_value_hash_get(c, "old"), whole);
                tb_addf(b, "%sremoved%s (was %s)\n", col(p, C_RED), col(p, C_RESET), o);
                free(o);
            }
        }
        if (n > MAX_PATHS && !whole)
            tb_addf(b, "%s\xe2\x80\xa6 %zu more (--nodes shows every change)\n", indent, n - MAX_PATHS);
        hiera_value_decref(ch);
        break;
    }
    case CH_ADDED: {
        char *nv = short_value(g->new_.v, whole);
        tb_addf(b, "%s%s: %s\n", indent, key, nv);
        free(nv);
        break;
    }
    case CH_REMOVED: {
        char *o = short_value(g->old.v, whole);
        tb_addf(b, "%s%s: %s\n", indent, key, o);
        free(o);
        break;
    }
    case CH_NOW_FAILING:
        if (g->varies)
            tb_addf(b, "%swas: (not the same on every node)\n", indent);
        else if (g->old.st == HIERA_OK) {
            char *o = short_value(g->old.v, whole);
            tb_addf(b, "%swas: %s\n", indent, o);
            free(o);
        } else {
            tb_addf(b, "%swas: not found\n", indent);
        }
        tb_addf(b, "%s%sError:%s %s\n", indent, col(p, C_FAIL), col(p, C_RESET), g->new_.msg);
        break;
    case CH_FIXED:
        tb_addf(b, "%swas: Error: %s\n", indent, g->old.msg);
        if (g->varies)
            tb_addf(b, "%snow: (not the same on every node)\n", indent);
        else if (g->new_.st == HIERA_OK) {
            char *nv = short_value(g->new_.v, whole);
            tb_addf(b, "%snow: %s\n", indent, nv);
            free(nv);
        } else {
            tb_addf(b, "%snow: not found\n", indent);
        }
        break;
    case CH_FAILURE_CHANGED:
        tb_addf(b, "%swas: Error: %s\n", indent, g->old.msg);
        tb_addf(b, "%snow: %sError:%s %s\n", indent, col(p, C_FAIL), col(p, C_RESET), g->new_.msg);
        break;
    default:
        break;
    }
}

static void footer_lines(const diff_report *r, const report_counts *c, tbuf *b, bool markdown)
{
    const hiera_value *plan = r->plan;
    bool full = hiera_value_bool(hiera_value_hash_get(plan, "full"));
    const hiera_value *files = hiera_value_hash_get(plan, "files");
    size_t nfiles = hiera_value_array_size(files);
    (void)c;
    if (full) {
        const hiera_value *reasons = hiera_value_hash_get(plan, "reasons");
        tb_addf(b, "every key looked up again on %zu %s: ", r->nnodes, plural(r->nnodes, "node", "nodes"));
        size_t nr = hiera_value_array_size(reasons);
        for (size_t i = 0; i < nr && i < 3; i++)
            tb_addf(b, "%s%s", i ? "; " : "", hiera_value_string(hiera_value_array_get(reasons, i)));
        if (nr > 3)
            tb_addf(b, "; and %zu more", nr - 3);
    } else {
        tb_addf(b, "looked up again: %zu of %zu %s on %zu %s (%zu %s changed", r->nkeys_looked_up, r->nkeys,
                plural(r->nkeys, "key", "keys"), r->nnodes, plural(r->nnodes, "node", "nodes"), nfiles,
                plural(nfiles, "file", "files"));
        for (size_t i = 0; i < nfiles && i < 3; i++)
            tb_addf(b, "%s%s%s%s", i ? ", " : ": ", markdown ? "`" : "",
                    hiera_value_string(hiera_value_hash_get(hiera_value_array_get(files, i), "path")), markdown ? "`" : "");
        if (nfiles > 3)
            tb_addf(b, ", \xe2\x80\xa6");
        tb_add(b, ")");
    }
}

static void summary_line(const report_counts *c, const diff_report *r, tbuf *b)
{
    if (!c->changes && !r->nonly_old && !r->nonly_new) {
        tb_add(b, "no changes");
    } else {
        tb_addf(b, "%zu %s changed, %zu %s changed", c->nodes_changed, plural(c->nodes_changed, "node", "nodes"),
                c->keys_changed, plural(c->keys_changed, "key", "keys"));
        tb_addf(b, ", %zu %s now %s", c->now_failing, plural(c->now_failing, "lookup", "lookups"),
                plural(c->now_failing, "fails", "fail"));
        if (c->fixed)
            tb_addf(b, ", %zu no longer %s", c->fixed, plural(c->fixed, "fails", "fail"));
    }
    if (r->ntroubles)
        tb_addf(b, "; %zu %s not compared", r->ntroubles, plural(r->ntroubles, "node", "nodes"));
}

static void md_code(tbuf *b, const char *s);

static int cmp_trouble(const void *a, const void *b)
{
    const trouble *x = *(const trouble *const *)a, *y = *(const trouble *const *)b;
    int c = strcmp(x->msg, y->msg);
    return c ? c : x->node < y->node ? -1 : x->node > y->node;
}

/* The nodes not compared, those with the same message together (an environment missing on both
 * sides is one line, not one per node). */
static void trouble_lines(tbuf *b, const diff_report *r, bool markdown)
{
    const trouble **t = xcalloc_(r->ntroubles, sizeof *t);
    for (size_t i = 0; i < r->ntroubles; i++)
        t[i] = &r->troubles[i];
    qsort(t, r->ntroubles, sizeof *t, cmp_trouble);
    size_t shown = 0;
    for (size_t i = 0; i < r->ntroubles;) {
        size_t j = i + 1;
        while (j < r->ntroubles && strcmp(t[j]->msg, t[i]->msg) == 0)
            j++;
        if (shown++ == 10 && !r->all_nodes) {
            tb_addf(b, "%s\xe2\x80\xa6 and %zu more\n", markdown ? "- " : "  ", r->ntroubles - i);
            break;
        }
        uint32_t *nodes = xcalloc_(j - i, sizeof *nodes);
        for (size_t k = i; k < j; k++)
            nodes[k - i] = t[k]->node;
        tb_add(b, markdown ? "- " : "  ");
        node_list(b, r, nodes, j - i, r->all_nodes, markdown ? "`" : "");
        tb_add(b, ": ");
        if (markdown)
            md_code(b, t[i]->msg);
        else
            tb_add(b, t[i]->msg);
        tb_add(b, "\n");
        free(nodes);
        i = j;
    }
    free(t);
}

static void print_text(const printer *p, const arranged *ar)
{
    const diff_report *r = p->r;
    FILE *out = p->out;
    tbuf b = {0};
    tb_addf(&b, "%shiera diff%s %s \xe2\x86\x92 %s (environment %s, %zu %s)\n", col(p, C_BOLD), col(p, C_RESET),
            r->old->label, r->new_->label, r->environment, r->nnodes, plural(r->nnodes, "node", "nodes"));
    for (size_t i = 0; i < r->nsetup_notes; i++)
        tb_addf(&b, "%s\n", r->setup_notes[i]);
    for (size_t s = 0; s < ar->nshared; s++) {
        const shared_failure *f = &ar->shared[s];
        size_t nn = f->groups[0]->n;
        tb_addf(&b, "\n%s%s%s for %zu keys on %zu %s:\n", col(p, kind_colour(f->kind)), kind_word(f->kind), col(p, C_RESET),
                f->n, nn, plural(nn, "node", "nodes"));
        if (f->kind == CH_NOW_FAILING)
            tb_addf(&b, "    %sError:%s %s\n", col(p, C_FAIL), col(p, C_RESET), f->new_msg);
        else if (f->kind == CH_FIXED)
            tb_addf(&b, "    was: Error: %s\n", f->old_msg);
        else
            tb_addf(&b, "    was: Error: %s\n    now: %sError:%s %s\n", f->old_msg, col(p, C_FAIL), col(p, C_RESET), f->new_msg);
        tb_add(&b, "    keys: ");
        key_list(&b, r, f->groups, f->n, r->all_nodes, "");
        tb_add(&b, "\n    nodes: ");
        node_list(&b, r, f->groups[0]->nodes, nn, r->all_nodes, "");
        tb_add(&b, "\n");
    }
    for (size_t k = 0; k < r->nkeys; k++) {
        if (!ar->nby_key[k])
            continue;
        tb_addf(&b, "\n%s%s%s\n", col(p, C_BOLD), r->keys[k], col(p, C_RESET));
        for (size_t i = 0; i < ar->nby_key[k]; i++) {
            const dgroup *g = ar->by_key[k][i];
            size_t total, ntw = ar->twin_of[k][i] == i ? twins(ar, k, i, &total) : 0;
            if (!ntw)
                continue; /* shown with its first twin */
            if (ntw > 1) {
                /* the same paths changed in groups whose values differ elsewhere: once */
                tb_addf(&b, "  %s%s%s on %zu %s, in %zu groups whose values differ where nothing changed:\n",
                        col(p, kind_colour(g->kind)), kind_word(g->kind), col(p, C_RESET), total,
                        plural(total, "node", "nodes"), ntw);
                text_change_body(p, &b, r->keys[k], g, "      ");
                for (size_t j = i; j < ar->nby_key[k]; j++) {
                    if (ar->twin_of[k][j] != i)
                        continue;
                    const dgroup *t = ar->by_key[k][j];
                    tb_addf(&b, "      %zu %s (", t->n, plural(t->n, "node", "nodes"));
                    node_list(&b, r, t->nodes, t->n, r->all_nodes, "");
                    tb_add(&b, ")\n");
                }
                continue;
            }
            tb_addf(&b, "  %s%s%s on %zu %s (", col(p, kind_colour(g->kind)), kind_word(g->kind), col(p, C_RESET), g->n,
                    plural(g->n, "node", "nodes"));
            node_list(&b, r, g->nodes, g->n, r->all_nodes, "");
            tb_add(&b, ")\n");
            text_change_body(p, &b, r->keys[k], g, "      ");
        }
        fwrite(b.s, 1, b.len, out);
        b.len = 0;
    }
    if (r->nonly_old || r->nonly_new) {
        tb_add(&b, "\n");
        if (r->nonly_old) {
            tb_addf(&b, "%sonly in the old side's facts%s (%zu %s): ", col(p, C_RED), col(p, C_RESET), r->nonly_old,
                    plural(r->nonly_old, "node", "nodes"));
            node_list(&b, r, r->only_old, r->nonly_old, r->all_nodes, "");
            tb_add(&b, "\n");
        }
        if (r->nonly_new) {
            tb_addf(&b, "%sonly in the new side's facts%s (%zu %s): ", col(p, C_GREEN), col(p, C_RESET), r->nonly_new,
                    plural(r->nonly_new, "node", "nodes"));
            node_list(&b, r, r->only_new, r->nonly_new, r->all_nodes, "");
            tb_add(&b, "\n");
        }
    }
    if (r->ntroubles) {
        tb_addf(&b, "\n%snot compared%s (%zu %s):\n", col(p, C_FAIL), col(p, C_RESET), r->ntroubles,
                plural(r->ntroubles, "node", "nodes"));
        trouble_lines(&b, r, false);
    }
    tb_addf(&b, "\n%s", col(p, C_BOLD));
    summary_line(&ar->counts, r, &b);
    tb_addf(&b, "%s\n%s", col(p, C_RESET), col(p, C_DIM));
    footer_lines(r, &ar->counts, &b, false);
    tb_addf(&b, "%s\n", col(p, C_RESET));
    fwrite(b.s, 1, b.len, out);
    free(b.s);
}

/* ------------------------------------------------------------------ markdown */

/* s as a code span: fenced with more backticks than it holds, '|' escaped (a table cell),
 * newlines as spaces */
static void md_code(tbuf *b, const char *s)
{
    size_t run = 0, longest = 0;
    for (const char *q = s; *q; q++) {
        run = *q == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    char fence[16];
    size_t f = longest + 1 < sizeof fence ? longest + 1 : sizeof fence - 1;
    memset(fence, '`', f);
    fence[f] = 0;
    bool pad = s[0] == '`' || (*s && s[strlen(s) - 1] == '`');
    tb_add(b, fence);
    if (pad)
        tb_add(b, " ");
    for (const char *q = s; *q; q++) {
        if (*q == '|')
            tb_add(b, "\\|");
        else if (*q == '\n' || *q == '\r')
            tb_add(b, " ");
        else
            tb_addn(b, q, 1);
    }
    if (pad)
        tb_add(b, " ");
    tb_add(b, fence);
}

static void md_value(tbuf *b, const hiera_value *v, bool whole)
{
    char *t = short_value(v, whole);
    md_code(b, t);
    free(t);
}

static void md_nodes_cell(tbuf *b, const diff_report *r, const uint32_t *nodes, size_t n)
{
    tb_addf(b, "%zu: ", n);
    if (r->all_nodes && n > FEW + 1) {
        tb_add(b, "<details><summary>");
        node_list(b, r, nodes, n, false, "`");
        tb_add(b, "</summary>");
        node_list(b, r, nodes, n, true, "`");
        tb_add(b, "</details>");
    } else {
        node_list(b, r, nodes, n, false, "`");
    }
}

static void md_change_cell(tbuf *b, const diff_report *r, const char *key, const dgroup *g)
{
    bool whole = r->all_nodes;
    tb_addf(b, "**%s**", kind_word(g->kind));
    switch (g->kind) {
    case CH_CHANGED: {
        hiera_value *ch = hiera_value_changes(g->old.v, g->new_.v);
        size_t n = hiera_value_array_size(ch);
        for (size_t i = 0; i < n && (i < MAX_PATHS || whole); i++) {
            const hiera_value *c = hiera_value_array_get(ch, i);
            char *path = hiera_value_path_text(hiera_value_hash_get(c, "path"));
            char *full = NULL;
            if (asprintf(&full, "%s%s%s", key, *path ? "." : "", path) < 0)
                full = NULL;
            tb_add(b, "<br>");
            md_code(b, full ? full : key);
            free(full);
            free(path);
            const char *kind = hiera_value_string(hiera_value_hash_get(c, "kind"));
            if (strcmp(kind, "changed") == 0) {
                tb_add(b, ": ");
                md_value(b, hiera_value_hash_get(c, "old"), whole);
                tb_add(b, " \xe2\x86\x92 ");
                md_value(b, hiera_value_hash_get(c, "new"), whole);
            } else if (strcmp(kind, "added") == 0) {
                tb_add(b, " added: ");
                md_value(b, hiera_value_hash_get(c, "new"), whole);
            } else {
                tb_add(b, " removed (was ");
                md_value(b, hiera_value_hash_get(c, "old"), whole);
                tb_add(b, ")");
            }
        }
        if (n > MAX_PATHS && !whole)
            tb_addf(b, "<br>\xe2\x80\xa6 %zu more", n - MAX_PATHS);
        hiera_value_decref(ch);
        break;
    }
    case CH_ADDED:
        tb_add(b, ": ");
        md_value(b, g->new_.v, whole);
        break;
    case CH_REMOVED:
        tb_add(b, " (was ");
        md_value(b, g->old.v, whole);
        tb_add(b, ")");
        break;
    case CH_NOW_FAILING:
        tb_add(b, ": ");
        md_code(b, g->new_.msg);
        if (!g->varies && g->old.st == HIERA_OK) {
            tb_add(b, " (was ");
            md_value(b, g->old.v, whole);
            tb_add(b, ")");
        }
        break;
    case CH_FIXED:
        tb_add(b, ": was ");
        md_code(b, g->old.msg);
        if (!g->varies && g->new_.st == HIERA_OK) {
            tb_add(b, ", now ");
            md_value(b, g->new_.v, whole);
        }
        break;
    case CH_FAILURE_CHANGED:
        tb_add(b, ": was ");
        md_code(b, g->old.msg);
        tb_add(b, ", now ");
        md_code(b, g->new_.msg);
        break;
    default:
        break;
    }
}

static void print_markdown(const printer *p, const arranged *ar)
{
    const diff_report *r = p->r;
    tbuf b = {0};
    tb_add(&b, "### hiera diff: ");
    md_code(&b, r->old->label);
    tb_add(&b, " \xe2\x86\x92 ");
    md_code(&b, r->new_->label);
    tb_addf(&b, "\n\n**");
    summary_line(&ar->counts, r, &b);
    tb_addf(&b, "** (environment `%s`, %zu %s)<br>\n", r->environment, r->nnodes, plural(r->nnodes, "node", "nodes"));
    footer_lines(r, &ar->counts, &b, true);
    tb_add(&b, "\n");
    for (size_t i = 0; i < r->nsetup_notes; i++)
        tb_addf(&b, "\n> %s\n", r->setup_notes[i]);
    bool any = ar->nshared > 0;
    for (size_t k = 0; k < r->nkeys && !any; k++)
        any = ar->nby_key[k] > 0;
    if (any) {
        tb_add(&b, "\n| Key | Change | Nodes |\n| --- | --- | --- |\n");
        for (size_t s = 0; s < ar->nshared; s++) {
            const shared_failure *f = &ar->shared[s];
            tb_addf(&b, "| %zu keys: ", f->n);
            key_list(&b, r, f->groups, f->n, r->all_nodes, "`");
            tb_addf(&b, " | **%s**: ", kind_word(f->kind));
            if (f->kind == CH_NOW_FAILING) {
                md_code(&b, f->new_msg);
            } else if (f->kind == CH_FIXED) {
                tb_add(&b, "was ");
                md_code(&b, f->old_msg);
            } else {
                tb_add(&b, "was ");
                md_code(&b, f->old_msg);
                tb_add(&b, ", now ");
                md_code(&b, f->new_msg);
            }
            tb_add(&b, " | ");
            md_nodes_cell(&b, r, f->groups[0]->nodes, f->groups[0]->n);
            tb_add(&b, " |\n");
        }
        for (size_t k = 0; k < r->nkeys; k++)
            for (size_t i = 0; i < ar->nby_key[k]; i++) {
                const dgroup *g = ar->by_key[k][i];
                if (ar->twin_of[k][i] != i)
                    continue; /* in its first twin's row */
                tb_add(&b, "| ");
                md_code(&b, r->keys[k]);
                tb_add(&b, " | ");
                md_change_cell(&b, r, r->keys[k], g);
                tb_add(&b, " | ");
                size_t total, ntw = twins(ar, k, i, &total);
                for (size_t j = i, shown = 0; j < ar->nby_key[k]; j++) {
                    if (ar->twin_of[k][j] != i)
                        continue;
                    if (shown++)
                        tb_add(&b, "<br>");
                    md_nodes_cell(&b, r, ar->by_key[k][j]->nodes, ar->by_key[k][j]->n);
                }
                if (ntw > 1)
                    tb_addf(&b, "<br>(%zu groups, %zu nodes: their values differ where nothing changed)", ntw, total);
                tb_add(&b, " |\n");
                fwrite(b.s, 1, b.len, p->out);
                b.len = 0;
            }
    }
    if (r->nonly_old) {
        tb_addf(&b, "\nOnly in the old side's facts (%zu): ", r->nonly_old);
        node_list(&b, r, r->only_old, r->nonly_old, r->all_nodes, "`");
        tb_add(&b, "\n");
    }
    if (r->nonly_new) {
        tb_addf(&b, "\nOnly in the new side's facts (%zu): ", r->nonly_new);
        node_list(&b, r, r->only_new, r->nonly_new, r->all_nodes, "`");
        tb_add(&b, "\n");
    }
    if (r->ntroubles) {
        tb_addf(&b, "\n**Not compared** (%zu):\n\n", r->ntroubles);
        trouble_lines(&b, r, true);
    }
    fwrite(b.s, 1, b.len, p->out);
    free(b.s);
}

/* ------------------------------------------------------------------ JSON */

static hiera_value *str(const char *s) { return hiera_value_new_string(s ? s : ""); }

/* A value for the document: itself, or its to_s text when JSON cannot hold it. */
static hiera_value *doc_value(const hiera_value *v)
{
    hiera_error err = {0};
    char *t = hiera_render(v, HIERA_RENDER_JSON, &err);
    hiera_error_clear(&err);
    if (t) {
        free(t);
        return hiera_value_incref((hiera_value *)v);
    }
    char *s = value_text(v);
    hiera_value *r = str(s);
    free(s);
    return r;
}

static hiera_value *node_names(const diff_report *r, const uint32_t *nodes, size_t n)
{
    hiera_value *a = hiera_value_new_array();
    for (size_t i = 0; i < n; i++)
        hiera_value_array_push(a, str(r->nodes[nodes[i]]));
    return a;
}

static hiera_value *side_doc(const diff_side *s)
{
    hiera_value *d = hiera_value_new_hash();
    hiera_value_hash_set(d, "source", str(s->spec));
    hiera_value_hash_set(d, "type", str(s->is_git ? "git" : "directory"));
    hiera_value_hash_set(d, "revision", s->is_git ? str(s->commit) : hiera_value_undef());
    hiera_value_hash_set(d, "tree", str(s->env_kind ? "environment" : "codedir"));
    if (s->puppet)
        hiera_value_hash_set(d, "puppet", str(s->puppet));
    return d;
}

static hiera_value *group_doc(const diff_report *r, const char *key, const dgroup *g)
{
    hiera_value *d = hiera_value_new_hash();
    hiera_value_hash_set(d, "kind", str(kind_id(g->kind)));
    if (g->kind == CH_NOW_FAILING || g->kind == CH_FAILURE_CHANGED || g->kind == CH_FIXED) {
        if (g->old.st == HIERA_ERROR)
            hiera_value_hash_set(d, "old_error", str(g->old.msg));
        if (g->new_.st == HIERA_ERROR)
            hiera_value_hash_set(d, "error", str(g->new_.msg));
    }
    bool show_old = g->old.st == HIERA_OK && !(g->kind == CH_NOW_FAILING && g->varies);
    bool show_new = g->new_.st == HIERA_OK && !(g->kind == CH_FIXED && g->varies);
    if (show_old)
        hiera_value_hash_set(d, "old", doc_value(g->old.v));
    if (show_new)
        hiera_value_hash_set(d, "new", doc_value(g->new_.v));
    if (g->kind == CH_NOW_FAILING || g->kind == CH_FIXED)
        hiera_value_hash_set(d, g->kind == CH_NOW_FAILING ? "old_varies" : "new_varies", hiera_value_new_bool(g->varies));
    if (g->kind == CH_CHANGED) {
        hiera_value *ch = hiera_value_changes(g->old.v, g->new_.v);
        hiera_value *paths = hiera_value_new_array();
        for (size_t i = 0; i < hiera_value_array_size(ch); i++) {
            const hiera_value *c = hiera_value_array_get(ch, i);
            hiera_value *e = hiera_value_new_hash();
            char *path = hiera_value_path_text(hiera_value_hash_get(c, "path"));
            char *full = NULL;
            if (asprintf(&full, "%s%s%s", key, *path ? "." : "", path) < 0)
                full = NULL;
            hiera_value_hash_set(e, "path", str(full ? full : key));
            free(full);
            free(path);
            hiera_value_hash_set(e, "segments", hiera_value_incref(hiera_value_hash_get(c, "path")));
            hiera_value_hash_set(e, "kind", hiera_value_incref(hiera_value_hash_get(c, "kind")));
            if (hiera_value_hash_get(c, "old"))
                hiera_value_hash_set(e, "old", doc_value(hiera_value_hash_get(c, "old")));
            if (hiera_value_hash_get(c, "new"))
                hiera_value_hash_set(e, "new", doc_value(hiera_value_hash_get(c, "new")));
            hiera_value_array_push(paths, e);
        }
        hiera_value_decref(ch);
        hiera_value_hash_set(d, "paths", paths);
    }
    hiera_value_hash_set(d, "count", hiera_value_new_int((int64_t)g->n));
    hiera_value_hash_set(d, "nodes", node_names(r, g->nodes, g->n));
    return d;
}

static bool print_json(const printer *p, const arranged *ar)
{
    const diff_report *r = p->r;
    const report_counts *c = &ar->counts;
    hiera_value *doc = hiera_value_new_hash();
    hiera_value_hash_set(doc, "schema", str("hiera-diff/1"));
    hiera_value_hash_set(doc, "old", side_doc(r->old));
    hiera_value_hash_set(doc, "new", side_doc(r->new_));
    hiera_value_hash_set(doc, "environment", str(r->environment));
    size_t by_kind[CH_KINDS] = {0};
    for (size_t i = 0; i < r->groups->nb; i++)
        for (dgroup *g = r->groups->buckets[i]; g; g = g->next)
            by_kind[g->kind] += g->n;
    hiera_value *sum = hiera_value_new_hash();
    hiera_value_hash_set(sum, "nodes", hiera_value_new_int((int64_t)r->nnodes));
    hiera_value_hash_set(sum, "keys", hiera_value_new_int((int64_t)r->nkeys));
    hiera_value_hash_set(sum, "keys_looked_up", hiera_value_new_int((int64_t)r->nkeys_looked_up));
    hiera_value_hash_set(sum, "lookups", hiera_value_new_int((int64_t)r->lookups));
    hiera_value_hash_set(sum, "nodes_changed", hiera_value_new_int((int64_t)c->nodes_changed));
    hiera_value_hash_set(sum, "keys_changed", hiera_value_new_int((int64_t)c->keys_changed));
    hiera_value_hash_set(sum, "changes", hiera_value_new_int((int64_t)c->changes));
    for (int k = 0; k < CH_KINDS; k++)
        hiera_value_hash_set(sum, kind_id((change_kind)k), hiera_value_new_int((int64_t)by_kind[k]));
    hiera_value_hash_set(sum, "nodes_only_old", hiera_value_new_int((int64_t)r->nonly_old));
    hiera_value_hash_set(sum, "nodes_only_new", hiera_value_new_int((int64_t)r->nonly_new));
    hiera_value_hash_set(sum, "nodes_not_compared", hiera_value_new_int((int64_t)r->ntroubles));
    hiera_value_hash_set(doc, "summary", sum);
    hiera_value *fp = hiera_value_new_hash();
    const char *copy[] = {"full", "reasons", "files", "changed"};
    for (size_t i = 0; i < 4; i++)
        hiera_value_hash_set(fp, i == 3 ? "changed_keys" : copy[i], hiera_value_incref(hiera_value_hash_get(r->plan, copy[i])));
    hiera_value_hash_set(doc, "fast_path", fp);
    /* absolute data folders: read in each side's tree (mapped) or outside both (the same files) */
    const hiera_value *dd = hiera_value_hash_get(r->plan, "datadirs");
    hiera_value_hash_set(doc, "datadirs", dd ? hiera_value_incref((hiera_value *)dd) : hiera_value_new_array());
    hiera_value_hash_set(doc, "warnings", r->warnings ? hiera_value_incref((hiera_value *)r->warnings)
                                                      : hiera_value_new_array());
    hiera_value *fails = hiera_value_new_array();
    for (size_t s = 0; s < ar->nshared; s++) {
        const shared_failure *f = &ar->shared[s];
        hiera_value *d = hiera_value_new_hash();
        hiera_value_hash_set(d, "kind", str(kind_id(f->kind)));
        if (f->old_msg)
            hiera_value_hash_set(d, "old_error", str(f->old_msg));
        if (f->new_msg)
            hiera_value_hash_set(d, "error", str(f->new_msg));
        hiera_value *keys = hiera_value_new_array();
        for (size_t i = 0; i < f->n; i++)
            hiera_value_array_push(keys, str(r->keys[f->groups[i]->key]));
        hiera_value_hash_set(d, "keys", keys);
        hiera_value_hash_set(d, "nodes", node_names(r, f->groups[0]->nodes, f->groups[0]->n));
        hiera_value_hash_set(d, "count", hiera_value_new_int((int64_t)(f->n * f->groups[0]->n)));
        hiera_value_array_push(fails, d);
    }
    hiera_value_hash_set(doc, "failures", fails);
    hiera_value *keys = hiera_value_new_array();
    for (size_t k = 0; k < r->nkeys; k++) {
        if (!ar->nby_key[k])
            continue;
        hiera_value *kd = hiera_value_new_hash();
        hiera_value_hash_set(kd, "key", str(r->keys[k]));
        hiera_value *changes = hiera_value_new_array();
        for (size_t i = 0; i < ar->nby_key[k]; i++)
            hiera_value_array_push(changes, group_doc(r, r->keys[k], ar->by_key[k][i]));
        hiera_value_hash_set(kd, "changes", changes);
        hiera_value_array_push(keys, kd);
    }
    hiera_value_hash_set(doc, "keys", keys);
    hiera_value_hash_set(doc, "nodes_only_old", node_names(r, r->only_old, r->nonly_old));
    hiera_value_hash_set(doc, "nodes_only_new", node_names(r, r->only_new, r->nonly_new));
    hiera_value *tr = hiera_value_new_array();
    for (size_t i = 0; i < r->ntroubles; i++) {
        hiera_value *t = hiera_value_new_hash();
        hiera_value_hash_set(t, "node", str(r->nodes[r->troubles[i].node]));
        hiera_value_hash_set(t, "message", str(r->troubles[i].msg));
        hiera_value_array_push(tr, t);
    }
    hiera_value_hash_set(doc, "not_compared", tr);
    hiera_error err = {0};
    char *text = hiera_render(doc, HIERA_RENDER_JSON, &err);
    hiera_value_decref(doc);
    if (!text) {
        fprintf(stderr, "hiera diff: cannot render the report as JSON: %s\n", err.message ? err.message : "");
        hiera_error_clear(&err);
        return false;
    }
    fputs(text, p->out);
    fputc('\n', p->out);
    free(text);
    return true;
}

/* ------------------------------------------------------------------ entry */

bool report_print(diff_report *r, FILE *out, report_counts *counts)
{
    arranged ar;
    arrange(r, &ar);
    printer p = {r, out, r->color && r->format == FMT_TEXT};
    bool ok = true;
    switch (r->format) {
    case FMT_TEXT: print_text(&p, &ar); break;
    case FMT_MARKDOWN: print_markdown(&p, &ar); break;
    case FMT_JSON: ok = print_json(&p, &ar); break;
    }
    *counts = ar.counts;
    arranged_free(r, &ar);
    return ok && fflush(out) == 0 && !ferror(out);
}
