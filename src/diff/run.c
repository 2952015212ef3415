/* run.c - the diff of two trees for a fleet (hiera_diff_run, include/hiera_fleet.h): what
 * `hiera diff` reports, for any program.
 *
 * Both sides are read whole (snapshots, built at once on two threads when not given);
 * hiera_snapshot_compare says which keys can answer differently (the plan); only those are looked
 * up again, on both sides, for every node, by worker threads that each have their own caches over
 * the two snapshots: nodes are taken a block at a time and each key compared for every node of the
 * block before the next key (what the caches keep for a key is still at hand). A node whose facts
 * differ between the sides, or whose facts interpolate a key that may differ, has every key
 * considered compared. Answers that differ are handed to the caller's callback, one call at a
 * time. */
#include "diff/run.h"

#include "api/api.h"
#include "base/error.h"
#include "base/util.h"
#include "facts/factsrc.h"
#include "fleet/fleet.h"
#include "hiera_fleet.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NODE_BLOCK 16

/* ------------------------------------------------------------------ messages */

char *diff_normalize(const char *msg, const char *root, const char *tree, const char *environmentpath,
                     const char *codedir)
{
    if (!msg || !*msg)
        return xstrdup("unknown error");
    struct {
        const char *from;
        const char *to;
        bool slash;
    } subs[] = {
        {root, "", true}, {tree, "", true}, {root, ".", false}, {tree, ".", false},
        {environmentpath, "<environmentpath>", false}, {codedir, "<codedir>", false},
    };
    char *cur = xstrdup(msg);
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
        if (!subs[i].from || !*subs[i].from)
            continue;
        char *pat = subs[i].slash ? xjoin(subs[i].from, "/", NULL) : xstrdup(subs[i].from);
        size_t fl = strlen(pat), tl = strlen(subs[i].to);
        if (!strstr(cur, pat)) {
            free(pat);
            continue;
        }
        sbuf out = {0};
        for (const char *p = cur; *p;) {
            const char *hit = strstr(p, pat);
            size_t take = hit ? (size_t)(hit - p) : strlen(p);
            sb_addn(&out, p, take);
            p += take;
            if (!hit)
                break;
            sb_addn(&out, subs[i].to, tl);
            p += fl;
        }
        free(cur);
        free(pat);
        cur = out.s ? sb_take(&out) : xstrdup("");
    }
    return cur;
}

/* ------------------------------------------------------------------ the run's state */

typedef struct {
    hiera_status st;
    hiera_value *v; /* HIERA_OK: a reference */
    char *msg;      /* HIERA_ERROR: normalized (malloc'ed) */
} outcome;

static void outcome_clear(outcome *o)
{
    hiera_value_decref(o->v);
    free(o->msg);
    memset(o, 0, sizeof *o);
}

static bool outcome_same(const outcome *a, const outcome *b)
{
    if (a->st != b->st)
        return false;
    if (a->st == HIERA_OK)
        return hiera_value_same(a->v, b->v);
    if (a->st == HIERA_ERROR)
        return strcmp(a->msg ? a->msg : "", b->msg ? b->msg : "") == 0;
    return true;
}

typedef struct run run;
typedef struct side side;

/* where a context's (or a snapshot's) diagnostics arose: the diagnostics data of the contexts */
typedef struct {
    side *sd;
    const char *node; /* NULL: the side's snapshot */
    size_t ni;
} diag_at;

/* a side: its contexts' template, its folders for messages, its diagnostics */
struct side {
    run *r;
    hiera_options ctx;
    const char *root, *tree;
    hiera_diagnostic_fn user_diag;
    void *user_diag_data;
    diag_at tree_at; /* the snapshot's diagnostics */
};

typedef struct {
    char *name;
    bool on[2];     /* has facts on the side (listed by its source) */
    size_t idx[2];  /* its position in the side's pager */
} dnode;

struct run {
    hiera_diff_options o;
    side sides[2];
    hiera_snapshot *snap[2];
    bool own_snap[2];
    hiera_request req;
    bool shared;               /* one source (or given nodes): the same facts on both sides */
    hiera_value *listed[2];    /* each source's node names */
    const char **names[2];     /* (their strings) */
    hiera_facts_pager *pager[2];
    dnode *nodes;
    size_t nnodes;
    /* the plan */
    hiera_value *plan;
    const char **all;          /* every key considered, sorted (the plan's "keys") */
    size_t nall;
    uint32_t *dirty_idx;       /* the dirty keys' indexes in all */
    size_t ndirty;
    unsigned char *is_dirty;
    hiera_value *reached;      /* keys whose answers may differ -> true */
    bool full;
    /* the workers */
    atomic_size_t next;
    atomic_bool stop;
    pthread_mutex_t mu, diag_mu;
    size_t nodes_done, lookups, changes, troubles;
};

typedef struct {
    run *r;
    pthread_t th;
    bool started;
    hiera_cache *view[2];
    size_t lookups;
} worker;

/* the contexts' diagnostics: to the run's callback with the side and node, else to the side's
 * context options' callback; one call at a time */
static void side_diag(const hiera_diagnostic *d, void *data)
{
    const diag_at *at = data;
    side *s = at->sd;
    run *r = s->r;
    pthread_mutex_lock(&r->diag_mu);
    if (r->o.diagnostics) {
        hiera_diff_diagnostic dd = {d, s == &r->sides[1], at->node, at->node ? at->ni : 0};
        r->o.diagnostics(&dd, r->o.diagnostics_data);
    } else {
        s->user_diag(d, s->user_diag_data);
    }
    pthread_mutex_unlock(&r->diag_mu);
}

/* hands an event to the callback (one call at a time); false: the run is stopped */
static bool emit(run *r, hiera_diff_event *e)
{
    pthread_mutex_lock(&r->mu);
    if (e->kind == HIERA_DIFF_CHANGE)
        r->changes++;
    else if (e->kind == HIERA_DIFF_TROUBLE)
        r->troubles++;
    else if (e->kind == HIERA_DIFF_NODE_DONE) {
        r->nodes_done++;
        r->lookups += e->lookups;
    }
    bool go = !atomic_load(&r->stop);
    /* events and diagnostics one call at a time, together (diag_mu is recursive: a callback may
     * make a context speak) */
    pthread_mutex_lock(&r->diag_mu);
    if (go && r->o.callback && r->o.callback(e, r->o.userdata) != 0) {
        atomic_store(&r->stop, true);
        go = false;
    }
    pthread_mutex_unlock(&r->diag_mu);
    pthread_mutex_unlock(&r->mu);
    return go;
}

static void trouble(run *r, size_t ni, const char *msg)
{
    hiera_diff_event e = {.kind = HIERA_DIFF_TROUBLE, .node = r->nodes[ni].name, .node_index = ni, .message = msg};
    emit(r, &e);
}

/* ------------------------------------------------------------------ a node's facts */

static bool node_facts_same(const fleet_node_facts *x, const fleet_node_facts *y)
{
    bool xs = x->base != NULL, ys = y->base != NULL;
    const hiera_value *xf = xs ? x->base : x->given, *yf = ys ? y->base : y->given;
    return xs == ys && (xf == yf || hiera_value_same(xf, yf)) &&
           (x->trusted == y->trusted || (x->trusted && y->trusted && hiera_value_same(x->trusted, y->trusted)));
}

/* Whether facts interpolate (when looked up) a key whose answer may differ: such a node's every
 * key is looked up again. */
static bool facts_reach(const run *r, const fleet_node_facts *nf)
{
    const hiera_value *facts = nf->base ? nf->base : nf->given;
    hiera_value *roots = hiera_value_lookups(facts);
    bool hit = false;
    for (size_t i = 0; i < hiera_value_array_size(roots) && !hit; i++)
        hit = hiera_value_hash_get(r->reached, hiera_value_string(hiera_value_array_get(roots, i))) != NULL;
    hiera_value_decref(roots);
    return hit;
}

/* ------------------------------------------------------------------ a node being compared */

typedef struct {
    size_t ni;
    bool live;  /* compared (not a trouble) */
    bool whole; /* every key, not only the dirty ones */
    hiera *h[2];
    char *fail[2];
    size_t lookups;
    diag_at at[2]; /* the contexts' diagnostics data */
} node_run;

static void node_open(worker *w, size_t ni, node_run *nr)
{
    run *r = w->r;
    const dnode *d = &r->nodes[ni];
    memset(nr, 0, sizeof *nr);
    nr->ni = ni;
    if (!d->on[0] || !d->on[1])
        return; /* on one side only: said once, not compared */
    fleet_node_facts nf[2] = {{0}, {0}};
    char *msg = NULL;
    for (int s = 0; s < 2 && !msg; s++) {
        if (s == 1 && r->shared) {
            nf[1] = (fleet_node_facts){hiera_value_incref(nf[0].given), hiera_value_incref(nf[0].base),
                                      hiera_value_incref(nf[0].trusted)};
        } else {
            fleet_facts_from from = {.name = d->name, .in = r->o.nodes ? &r->o.nodes[ni] : NULL, .pager = r->pager[s],
                                    .index = d->idx[s], .trusted_dir = r->o.trusted_dir};
            fleet_load_node_facts(&from, r->o.cache, &nf[s], &msg);
        }
    }
    if (msg) {
        trouble(r, ni, msg);
        free(msg);
        fleet_node_facts_clear(&nf[0]);
        fleet_node_facts_clear(&nf[1]);
        return;
    }
    /* which keys: every one when the facts differ or reach a changed key */
    nr->whole = r->full || (!r->shared && !node_facts_same(&nf[0], &nf[1])) || facts_reach(r, &nf[0]) ||
                (!r->shared && facts_reach(r, &nf[1]));
    for (int s = 0; s < 2; s++) {
        const side *sd = &r->sides[s];
        hiera_options o = sd->ctx;
        o.node = d->name;
        o.facts = nf[s].given;
        o.base_facts = nf[s].base;
        o.trusted = nf[s].trusted;
        o.cache = w->view[s];
        if (o.diagnostics) {
            nr->at[s] = (diag_at){(side *)sd, d->name, ni};
            o.diagnostics_data = &nr->at[s];
        }
        hiera_error err = {0};
        nr->h[s] = hiera_new(&o, &err);
        if (!nr->h[s])
            nr->fail[s] = diff_normalize(err.message, sd->root, sd->tree, sd->ctx.environmentpath, sd->ctx.codedir);
        hiera_error_clear(&err);
        fleet_node_facts_clear(&nf[s]);
    }
    if (!nr->h[0] && !nr->h[1] && strcmp(nr->fail[0], nr->fail[1]) == 0) {
        trouble(r, ni, nr->fail[0]); /* nothing to compare */
        free(nr->fail[0]);
        free(nr->fail[1]);
        nr->fail[0] = nr->fail[1] = NULL;
        return;
    }
    nr->live = true;
}

static void lookup_outcome(run *r, int s, hiera *h, const char *key, outcome *o)
{
    hiera_request req = r->req;
    req.keys = &key;
    req.nkeys = 1;
    hiera_error err = {0};
    o->v = NULL;
    o->msg = NULL;
    o->st = hiera_lookup(h, &req, &o->v, &err);
    if (o->st == HIERA_ERROR) {
        const side *sd = &r->sides[s];
        o->msg = diff_normalize(err.message, sd->root, sd->tree, sd->ctx.environmentpath, sd->ctx.codedir);
    }
    hiera_error_clear(&err);
}

/* Compares key ki (an index into the keys considered) for the node. */
static void node_key(worker *w, node_run *nr, uint32_t ki)
{
    run *r = w->r;
    const char *key = r->all[ki];
    outcome o[2];
    for (int s = 0; s < 2; s++) {
        if (nr->h[s]) {
            lookup_outcome(r, s, nr->h[s], key, &o[s]);
            nr->lookups++;
        } else {
            o[s] = (outcome){HIERA_ERROR, NULL, xstrdup(nr->fail[s])};
        }
    }
    if (!outcome_same(&o[0], &o[1])) {
        hiera_diff_event e = {.kind = HIERA_DIFF_CHANGE, .node = r->nodes[nr->ni].name, .node_index = nr->ni,
                              .key = key, .key_index = ki,
                              .old_answer = {o[0].st, o[0].v, o[0].msg}, .new_answer = {o[1].st, o[1].v, o[1].msg}};
        emit(r, &e);
    }
    outcome_clear(&o[0]);
    outcome_clear(&o[1]);
}

static void node_close(run *r, node_run *nr)
{
    if (nr->live) {
        hiera_diff_event e = {.kind = HIERA_DIFF_NODE_DONE, .node = r->nodes[nr->ni].name, .node_index = nr->ni,
                              .lookups = nr->lookups};
        emit(r, &e);
    }
    for (int s = 0; s < 2; s++) {
        hiera_free(nr->h[s]);
        free(nr->fail[s]);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    run *r = w->r;
    node_run nr[NODE_BLOCK];
    for (;;) {
        size_t lo = atomic_fetch_add(&r->next, NODE_BLOCK);
        if (lo >= r->nnodes || atomic_load(&r->stop))
            break;
        size_t hi = lo + NODE_BLOCK < r->nnodes ? lo + NODE_BLOCK : r->nnodes, n = hi - lo;
        bool any_whole = false;
        for (size_t j = 0; j < n; j++) {
            node_open(w, lo + j, &nr[j]);
            any_whole |= nr[j].live && nr[j].whole;
        }
        if (any_whole) {
            for (size_t k = 0; k < r->nall; k++)
                for (size_t j = 0; j < n; j++)
                    if (nr[j].live && (nr[j].whole || r->is_dirty[k]))
                        node_key(w, &nr[j], (uint32_t)k);
        } else {
            for (size_t d = 0; d < r->ndirty; d++)
                for (size_t j = 0; j < n; j++)
                    if (nr[j].live)
                        node_key(w, &nr[j], r->dirty_idx[d]);
        }
        for (size_t j = 0; j < n; j++)
            node_close(r, &nr[j]);
    }
    return NULL;
}

/* ------------------------------------------------------------------ setting up */

typedef struct {
    const hiera_options *o;
    hiera_snapshot *snap;
    pthread_t th;
} snap_job;

static void *build_snapshot(void *arg)
{
    snap_job *j = arg;
    /* (what is read outside a context words its messages as the side's Puppet) */
    hiera_puppet_version v = j->o->puppet_version ? j->o->puppet_version : hiera_puppet_version_find(NULL);
    hiera_puppet_version was = hiera_thread_puppet_version(v);
    hiera_error err = {0};
    j->snap = hiera_snapshot_new(j->o, &err);
    hiera_error_clear(&err);
    hiera_thread_puppet_version(was);
    return NULL;
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The node list: every node of either source (or the nodes given), sorted. */
static bool list_nodes(run *r, herr *err)
{
    if (r->o.nodes) {
        r->nnodes = r->o.nnodes;
        r->nodes = xcalloc(r->nnodes ? r->nnodes : 1, sizeof *r->nodes);
        for (size_t i = 0; i < r->nnodes; i++)
            r->nodes[i] = (dnode){xstrdup(r->o.nodes[i].name ? r->o.nodes[i].name : ""), {true, true}, {i, i}};
        return true;
    }
    if (!r->o.old_source || !r->o.new_source) {
        herr_set(err, HERR_ERROR, "hiera_diff_run: give each side's facts source, or the nodes");
        return false;
    }
    hiera_facts_source *src[2] = {r->o.old_source, r->o.new_source};
    for (int s = 0; s < 2; s++) {
        if (s == 1 && r->shared) {
            r->listed[1] = hiera_value_incref(r->listed[0]);
        } else {
            hiera_error le = {0};
            r->listed[s] = hiera_facts_source_nodes(src[s], &le);
            if (!r->listed[s]) {
                herr_set(err, HERR_ERROR, "%s", le.message ? le.message : "cannot list the nodes");
                hiera_error_clear(&le);
                return false;
            }
        }
        size_t n = hiera_value_array_size(r->listed[s]);
        r->names[s] = xmalloc((n ? n : 1) * sizeof *r->names[s]);
        for (size_t i = 0; i < n; i++)
            r->names[s][i] = hiera_value_string(hiera_value_array_get(r->listed[s], i));
        r->pager[s] = hiera_facts_pager_new(src[s], r->names[s], n, NULL);
    }
    /* the union of both sorted lists */
    size_t n0 = hiera_value_array_size(r->listed[0]), n1 = hiera_value_array_size(r->listed[1]), i0 = 0, i1 = 0;
    r->nodes = xcalloc(n0 + n1 + 1, sizeof *r->nodes);
    while (i0 < n0 || i1 < n1) {
        int c = i0 >= n0 ? 1 : i1 >= n1 ? -1 : strcmp(r->names[0][i0], r->names[1][i1]);
        dnode *d = &r->nodes[r->nnodes++];
        d->name = xstrdup(c <= 0 ? r->names[0][i0] : r->names[1][i1]);
        if (c <= 0) {
            d->on[0] = true;
            d->idx[0] = i0++;
        }
        if (c >= 0) {
            d->on[1] = true;
            d->idx[1] = i1++;
        }
    }
    return true;
}

static hiera_value *run_diff(run *r, hiera_diff_stats *stats, herr *err)
{
    hiera_snapshot *given[2] = {r->o.old_snapshot, r->o.new_snapshot};
    const hiera_options *ctxs[2] = {r->o.old_context, r->o.new_context};
    const char *roots[2] = {r->o.old_root, r->o.new_root}, *trees[2] = {r->o.old_tree, r->o.new_tree};
    for (int s = 0; s < 2; s++) {
        side *sd = &r->sides[s];
        sd->r = r;
        api_copy_options(&sd->ctx, ctxs[s]);
        sd->ctx.size = sizeof sd->ctx;
        sd->root = roots[s] ? roots[s] : sd->ctx.codedir;
        sd->tree = trees[s];
        if (sd->ctx.diagnostics || r->o.diagnostics) {
            sd->user_diag = sd->ctx.diagnostics;
            sd->user_diag_data = sd->ctx.diagnostics_data;
            sd->tree_at = (diag_at){sd, NULL, 0};
            sd->ctx.diagnostics = side_diag;
            sd->ctx.diagnostics_data = &sd->tree_at;
        }
    }
    /* the snapshots: both at once (their diagnostics one at a time, as the contexts') */
    snap_job sj[2] = {{&r->sides[0].ctx, given[0], 0}, {&r->sides[1].ctx, given[1], 0}};
    bool threaded = !given[1] && pthread_create(&sj[1].th, NULL, build_snapshot, &sj[1]) == 0;
    if (!given[0])
        build_snapshot(&sj[0]);
    if (threaded)
        pthread_join(sj[1].th, NULL);
    else if (!given[1])
        build_snapshot(&sj[1]);
    for (int s = 0; s < 2; s++) {
        r->snap[s] = sj[s].snap;
        r->own_snap[s] = !given[s];
    }
    if (!list_nodes(r, err))
        return NULL;
    /* the plan */
    hiera_compare_options co = {.size = sizeof co, .old_root = r->sides[0].root, .new_root = r->sides[1].root,
                                .keys = r->o.keys, .nkeys = r->o.keys ? r->o.nkeys : 0, .full = r->o.full,
                                .full_reason = r->o.full_reason};
    r->plan = hiera_snapshot_compare(r->snap[0], r->snap[1], &co);
    const hiera_value *pd = hiera_value_hash_get(r->plan, "dirty"), *pk = hiera_value_hash_get(r->plan, "keys");
    r->ndirty = hiera_value_array_size(pd);
    r->nall = hiera_value_array_size(pk);
    r->all = xmalloc((r->nall ? r->nall : 1) * sizeof *r->all);
    for (size_t i = 0; i < r->nall; i++)
        r->all[i] = hiera_value_string(hiera_value_array_get(pk, i));
    r->dirty_idx = xmalloc((r->ndirty ? r->ndirty : 1) * sizeof *r->dirty_idx);
    r->is_dirty = xcalloc(r->nall + 1, 1);
    for (size_t i = 0; i < r->ndirty; i++) {
        const char *k = hiera_value_string(hiera_value_array_get(pd, i));
        const char **hit = bsearch(&k, r->all, r->nall, sizeof *r->all, cmp_cstr);
        r->dirty_idx[i] = hit ? (uint32_t)(hit - r->all) : 0; /* (always found: the dirty keys are among all) */
        r->is_dirty[r->dirty_idx[i]] = 1;
    }
    r->full = hiera_value_bool(hiera_value_hash_get(r->plan, "full"));
    r->reached = hiera_value_new_hash();
    const hiera_value *reached = hiera_value_hash_get(r->plan, "reached");
    for (size_t i = 0; i < hiera_value_array_size(reached); i++)
        hiera_value_hash_set(r->reached, hiera_value_string(hiera_value_array_get(reached, i)), hiera_value_new_bool(true));
    /* nodes with facts on one side only are said once each */
    for (size_t i = 0; i < r->nnodes && !atomic_load(&r->stop); i++)
        if (r->nodes[i].on[0] != r->nodes[i].on[1]) {
            hiera_diff_event e = {.kind = r->nodes[i].on[0] ? HIERA_DIFF_ONLY_OLD : HIERA_DIFF_ONLY_NEW,
                                  .node = r->nodes[i].name, .node_index = i};
            emit(r, &e);
        }
    /* the lookups */
    unsigned jobs = r->o.threads ? r->o.threads : fleet_cpus();
    if (jobs > r->nnodes / 4 + 1)
        jobs = (unsigned)(r->nnodes / 4 + 1);
    if (jobs > 64)
        jobs = 64;
    worker *workers = xcalloc(jobs, sizeof *workers);
    for (unsigned i = 0; i < jobs; i++) {
        workers[i].r = r;
        for (int s = 0; s < 2; s++)
            workers[i].view[s] = hiera_cache_new_from_snapshot(r->snap[s]);
    }
    for (unsigned i = 1; i < jobs; i++)
        workers[i].started = pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) == 0;
    worker_main(&workers[0]);
    for (unsigned i = 1; i < jobs; i++)
        if (workers[i].started)
            pthread_join(workers[i].th, NULL);
        else
            worker_main(&workers[i]); /* (a thread that could not start: its share is done here) */
    for (unsigned i = 0; i < jobs; i++)
        for (int s = 0; s < 2; s++)
            hiera_cache_free(workers[i].view[s]);
    free(workers);
    if (stats)
        *stats = (hiera_diff_stats){r->nodes_done, r->lookups, r->changes, r->troubles};
    if (atomic_load(&r->stop)) {
        herr_set(err, HERR_ERROR, "the run was stopped by its callback");
        return NULL;
    }
    hiera_value *plan = r->plan, *names = hiera_value_new_array();
    for (size_t i = 0; i < r->nnodes; i++)
        hiera_value_array_push(names, hiera_value_new_string(r->nodes[i].name));
    hiera_value_hash_set(plan, "nodes", names);
    r->plan = NULL;
    return plan;
}

hiera_value *hiera_diff_run(const hiera_diff_options *given, hiera_diff_stats *stats, hiera_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    run *r = xcalloc(1, sizeof *r);
    options_take(&r->o, sizeof r->o, given);
    herr e = {0};
    hiera_value *plan = NULL;
    if (!r->o.old_context || !r->o.new_context) {
        herr_set(&e, HERR_ERROR, "hiera_diff_run: both sides' context options are needed");
    } else if (r->o.nodes && (r->o.old_source || r->o.new_source)) {
        herr_set(&e, HERR_ERROR, "hiera_diff_run: give either the facts sources or the nodes, not both");
    } else {
        r->shared = r->o.nodes || r->o.old_source == r->o.new_source;
        api_copy_request(&r->req, r->o.request);
        r->req.size = sizeof r->req;
        r->req.explain = 0;
        pthread_mutex_init(&r->mu, NULL);
        pthread_mutexattr_t ma;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&r->diag_mu, &ma);
        pthread_mutexattr_destroy(&ma);
        atomic_init(&r->next, 0);
        atomic_init(&r->stop, false);
        plan = run_diff(r, stats, &e);
        pthread_mutex_destroy(&r->diag_mu);
        pthread_mutex_destroy(&r->mu);
    }
    if (!plan)
        herr_to_public(err, &e);
    for (int s = 0; s < 2; s++) {
        if (r->own_snap[s])
            hiera_snapshot_release(r->snap[s]);
        hiera_facts_pager_free(r->pager[s]);
        free(r->names[s]);
        hiera_value_decref(r->listed[s]);
    }
    for (size_t i = 0; i < r->nnodes; i++)
        free(r->nodes[i].name);
    free(r->nodes);
    hiera_value_decref(r->plan);
    free(r->all);
    free(r->dirty_idx);
    free(r->is_dirty);
    hiera_value_decref(r->reached);
    free(r);
    return plan;
}
