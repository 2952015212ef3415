/* fleet.c - many keys for many nodes on a pool of threads, the answers streamed to a callback
 * (hiera_fleet_run, include/hiera_fleet.h): what `hiera batch` prints, and what the Python
 * module's batch() iterates over.
 *
 * The run: the nodes (a facts source's, or given ones) are taken NODE_BLOCK at a time by the
 * workers (the calling thread is the first; each has its own frozen cache); a worker opens the
 * contexts of its block, looks each key up for every node of the block before the next key,
 * then hands each node's answers to the callback, rendered when asked (a table of the texts of
 * values many nodes share, per worker), and closes the contexts. In an ordered run a worker
 * waits for the blocks before its own to be handed over first (the values it hands over belong
 * to its cache, so it is the one that must hand them over). A run on one thread reads the facts
 * ahead on a second thread when they come slowly (PuppetDB, a slow file system). */
#include "fleet/fleet.h"

#include "api/api.h"
#include "base/error.h"
#include "base/rubyver.h"
#include "base/util.h"
#include "base/value.h"
#include "engine/cache.h"
#include "engine/installed.h"
#include "facts/factsrc.h"
#include "formats/diskcache.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Nodes are taken a block at a time: every key is looked up for each node of the block before
 * the next key, so that what the engine keeps for a key (its key index entry, its options, the
 * merges remembered for it) is still in the CPU's caches for the next node. 8 nodes: the contexts
 * alive at once (facts, scope, levels, answers) must stay in the caches too. On the benchmark
 * fleet, against blocks of 32, 8 took 0.7% more instructions but had 62% fewer last-level
 * misses (cachegrind, 2 MiB): 1.89 -> 0.71 M (16: 1.17 M; 4: 0.60 M for 1.1% more
 * instructions), and 4-9% less CPU time. */
#define NODE_BLOCK 8
/* fewer nodes than this per thread are not worth a thread (each reads the data files again) */
#define MIN_NODES_PER_THREAD 16
#define MAX_THREADS 64

/* ------------------------------------------------------------------ the run's state */

/* A lookup's answer, kept until its node is handed over: a block's answers are written by every
 * lookup and read back after the block's lookups, so they are kept small (as hiera_status and
 * hiera_error they took 48 bytes a key: with them a sixth of a run's last-level misses on the
 * benchmark fleet, in blocks of 32). */
typedef struct {
    hiera_value *v; /* HIERA_OK: the value (a reference), else NULL */
    char *msg;      /* HIERA_ERROR: the message (malloc'ed, maybe ""), else NULL; both NULL: not found */
} answer;

/* What a node is looked up with: its facts (given, or stored as a facts cache's are), its trusted
 * hash, or why it cannot be. */
typedef struct {
    hiera_value *facts, *base, *trusted;
    char *msg; /* malloc'ed, or NULL */
} node_input;

/* a key of a node's own: its lookup form and the form's JSON (borrowed from worker.key_forms) */
typedef struct {
    const char *form;
    const hiera_value *json;
} key_form;

typedef struct fleet fleet;

/* Many nodes get the very same value object (a value found as it is in a data file, or the
 * same merge): its JSON text is remembered by address in a small table, which holds a reference
 * so that the address cannot be reused by another value while the entry lives. A value no one
 * else holds (a node's own merge or interpolation) cannot come back from another lookup: its
 * text is not kept, nor is the value held past its node (keeping them grew the run's heap by
 * 5 MiB on the benchmark fleet, and its CPU time by a tenth, from the cache misses). */
#define RENDER_MEMO_BITS 14
typedef struct {
    hiera_value *v;
    char *text;
    size_t len;
} render_slot;

typedef struct {
    hiera *h;            /* NULL: the node failed as a whole (msg) */
    char *msg;           /* why (malloc'ed), or NULL */
    answer *answers;     /* one per key, key k's at answers[k * stride] */
    size_t stride;
    /* its keys: the run's, or its own (owned, with answers) */
    const char *const *keys;
    const char *const *keys_json;
    const size_t *keys_json_len;
    size_t nkeys;
    bool own_keys;
    hiera_value *listing_errors; /* own keys: what kept some from being listed, or NULL */
} node_run;

typedef struct {
    fleet *f;
    unsigned id;
    pthread_t th;
    bool started;
    hiera_cache *cache;
    bool own_cache;
    render_slot *memo;        /* render_json: 1 << RENDER_MEMO_BITS slots */
    render_slot *evicted;     /* slots replaced while a node's answers await the callback: they
                                 may be among them, so they are released after it */
    size_t nevicted, evicted_cap;
    hiera_value *key_forms;   /* own keys: key as written -> [form, form's JSON] | why none */
    answer *answers;          /* NODE_BLOCK x the run's keys */
    hiera_fleet_answer *out;  /* a node's answers for the callback */
    size_t out_cap;
    hiera_request req;        /* the run's, with the key of each lookup */
    size_t lookups, failed_lookups, nodes, failed_nodes;
} worker;

/* Reads the nodes' inputs ahead of a run on one thread (see prefetch_take). */
typedef struct {
    fleet *f;
    worker *w;       /* whose cache's disk cache is used (hiera_cache_load_value_file) */
    size_t n;
    node_input *in;  /* slot i: node i's */
    bool *ready;
    size_t consumed; /* nodes taken by the worker */
    bool producer_waits, consumer_waits;
    size_t waiting_at;
    bool stop;
    bool threaded;
    size_t first;
    long long spent;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} prefetch;

struct fleet {
    hiera_fleet_options o;
    hiera_options ctx;   /* the context template */
    hiera_request req;
    hiera_diagnostic_fn user_diag;
    void *user_diag_data;
    /* the nodes */
    size_t n;
    const char *const *names;     /* the source's (names, or listed) */
    hiera_value *listed;          /* the source's listing, when the names are its */
    const char **listed_names;
    hiera_facts_pager *pager;     /* a source's nodes */
    /* the keys (NULL: each node's own) and their JSON */
    const char *const *keys;
    char **keys_json;
    size_t *keys_json_len;
    size_t nkeys;
    /* the workers */
    worker *workers;
    unsigned nworkers;
    atomic_size_t next_block;
    atomic_bool stop;
    pthread_mutex_t mu;      /* the callback, the turn of ordered runs, the diagnostics */
    pthread_cond_t turn_cv;
    size_t turn;             /* ordered: the block whose nodes go next */
    pthread_mutex_t diag_mu;
    /* the context's Puppet's Ruby (whose words the messages made outside a context take: facts
     * files read, see hiera_thread_puppet_version), set on the run's threads and the caller's for
     * the run's duration */
    ruby_ver ruby;
};

/* ------------------------------------------------------------------ small helpers */

static char *json_string(const char *s)
{
    hiera_value *v = hiera_value_new_string(s);
    hiera_error err = {0};
    char *text = hiera_render(v, HIERA_RENDER_JSON, &err);
    hiera_value_decref(v);
    hiera_error_clear(&err);
    return text;
}

/* The contexts' diagnostics: to the caller's callback, one call at a time */
static void serialized_diag(const hiera_diagnostic *d, void *data)
{
    fleet *f = data;
    pthread_mutex_lock(&f->diag_mu);
    f->user_diag(d, f->user_diag_data);
    pthread_mutex_unlock(&f->diag_mu);
}

unsigned fleet_cpus(void)
{
    long n = 0;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (unsigned)n;
}

static const char *node_name(const fleet *f, size_t i)
{
    return f->o.source ? f->names[i] : f->o.nodes[i].name ? f->o.nodes[i].name : "";
}

/* ------------------------------------------------------------------ node inputs */

static void node_input_free(node_input *in)
{
    hiera_value_decref(in->facts);
    hiera_value_decref(in->base);
    hiera_value_decref(in->trusted);
    free(in->msg);
    memset(in, 0, sizeof *in);
}

hiera_value *fleet_load_trusted(hiera_cache *cache, const char *dir, const char *name, char **msg)
{
    static const char *const exts[] = {".yaml", ".yml", ".json"};
    char *path = NULL;
    size_t dl = strlen(dir);
    for (size_t i = 0; i < 3 && !path; i++) {
        char *p = dl && dir[dl - 1] == '/' ? xjoin(dir, name, exts[i], NULL) : xjoin(dir, "/", name, exts[i], NULL);
        struct stat st;
        if (stat(p, &st) == 0)
            path = p;
        else
            free(p);
    }
    if (!path) {
        *msg = xasprintf("no trusted data for this node in %s (%s.yaml, %s.yml or %s.json)", dir, name, name, name);
        return NULL;
    }
    hiera_error err = {0};
    hiera_value *t = hiera_cache_load_value_file(cache, path, &err);
    if (!t)
        *msg = xstrdup(err.message && *err.message ? err.message : "cannot read the trusted data file");
    hiera_error_clear(&err);
    free(path);
    return t;
}

bool fleet_load_facts_file(hiera_cache *cache, const char *path, const char *name, hiera_value **given,
                           hiera_value **base, char **msg)
{
    hiera_error err = {0};
    int kind = HIERA_FACTS_FILE;
    *msg = NULL;
    hiera_value *f = hiera_facts_load(cache, path, name, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
    if (!f) {
        *msg = xstrdup(err.message && *err.message ? err.message : "cannot read the facts file");
    } else if (hiera_value_kind(f) != HIERA_HASH) {
        *msg = xasprintf("Incorrectly formatted data in %s given via the --facts flag (only accepts yaml and json files)",
                         path);
    } else if (kind != HIERA_FACTS_CACHE && hiera_facts_check_given(f, path, &err) != HIERA_OK) {
        *msg = xstrdup(err.message ? err.message : "");
    } else if (hiera_value_hash_size(f) == 0) {
        *msg = facts_none_message(name);
    } else if (kind == HIERA_FACTS_CACHE) {
        *base = f;
        f = NULL;
    } else {
        *given = f;
        f = NULL;
    }
    hiera_value_decref(f);
    hiera_error_clear(&err);
    return *msg == NULL;
}

void fleet_node_facts_clear(fleet_node_facts *nf)
{
    hiera_value_decref(nf->given);
    hiera_value_decref(nf->base);
    hiera_value_decref(nf->trusted);
    memset(nf, 0, sizeof *nf);
}

/* The node given: its facts file over its facts, its trusted file over its trusted hash; *msg on
 * failure */
static void load_given(const hiera_fleet_input *gi, const char *name, hiera_cache *cache, fleet_node_facts *nf,
                       char **msg)
{
    if (gi->facts_file && !fleet_load_facts_file(cache, gi->facts_file, name, &nf->given, &nf->base, msg))
        return;
    if (gi->facts && !nf->given)
        nf->given = hiera_value_incref((hiera_value *)gi->facts);
    if (gi->base_facts && !nf->base)
        nf->base = hiera_value_incref((hiera_value *)gi->base_facts);
    if (gi->trusted)
        nf->trusted = hiera_value_incref((hiera_value *)gi->trusted);
    if (gi->trusted_file) {
        hiera_error err = {0};
        hiera_value_decref(nf->trusted);
        nf->trusted = hiera_cache_load_value_file(cache, gi->trusted_file, &err);
        if (!nf->trusted)
            *msg = xstrdup(err.message && *err.message ? err.message : "cannot read the trusted data file");
        hiera_error_clear(&err);
    }
}

/* From the facts source: its pager's node, or the source's node by name; *msg on failure */
static void load_sourced(const fleet_facts_from *from, hiera_cache *cache, fleet_node_facts *nf, char **msg)
{
    hiera_node_facts f;
    hiera_status st;
    char *why;
    if (from->pager) {
        herr e = {0};
        st = facts_pager_get_with(from->pager, from->index, cache, &f, &e);
        why = e.msg;
        e.msg = NULL;
        herr_clear(&e);
    } else {
        hiera_error err = {0};
        st = hiera_facts_source_get(from->source, from->name, cache, &f, &err);
        why = err.message;
        err.message = NULL;
        hiera_error_clear(&err);
    }
    if (st != HIERA_OK) {
        *msg = why ? why : xstrdup("no facts");
        return;
    }
    free(why);
    nf->given = f.given;
    nf->base = f.base;
    f.given = f.base = NULL;
    hiera_node_facts_clear(&f);
}

bool fleet_load_node_facts(const fleet_facts_from *from, hiera_cache *cache, fleet_node_facts *nf, char **msg)
{
    memset(nf, 0, sizeof *nf);
    *msg = NULL;
    if (from->in)
        load_given(from->in, from->name, cache, nf, msg);
    else
        load_sourced(from, cache, nf, msg);
    if (!*msg && from->trusted_dir) {
        hiera_value_decref(nf->trusted);
        nf->trusted = fleet_load_trusted(cache, from->trusted_dir, from->name, msg);
    }
    if (*msg) {
        fleet_node_facts_clear(nf);
        return false;
    }
    return true;
}

/* Node i's input (its facts read through cache). Touches nothing the workers share but the
 * pager (thread-safe), so that the prefetch thread may call it. */
static void load_input(fleet *f, hiera_cache *cache, size_t i, node_input *in)
{
    memset(in, 0, sizeof *in);
    fleet_facts_from from = {.name = node_name(f, i), .in = f->o.source ? NULL : &f->o.nodes[i], .pager = f->pager,
                             .index = i, .trusted_dir = f->o.trusted_dir};
    fleet_node_facts nf;
    if (fleet_load_node_facts(&from, cache, &nf, &in->msg)) {
        in->facts = nf.given;
        in->base = nf.base;
        in->trusted = nf.trusted;
    }
}

/* ------------------------------------------------------------------ facts read ahead */

/* Parsing facts files costs about as much as a sixth of the lookups, and PuppetDB's answers come
 * over the network: in a run on one thread a second thread then reads them ahead of the lookups
 * (at most PREFETCH_AHEAD nodes ahead). The thread only reads facts (hiera_facts_load, the
 * pager), which share no state, and hands each result over under the mutex; everything else
 * (contexts, cache, callback) stays on the worker. Facts the disk cache holds are read faster than
 * a thread hands them over: values made by one thread and freed by another cost the allocator
 * more than the reading (on the benchmark fleet, 23% of the CPU time of a run over all nodes with
 * one key). So facts files are read on the worker while they come at most PREFETCH_SLOW_NS each:
 * the PREFETCH_SAMPLE nodes after the first tell, and the thread starts only when they were slower
 * (no disk cache yet, a slow file system). The first node is not counted: it pays once for what
 * every later one shares (the disk cache folder found, the first pages of the heap touched: 230-270
 * us on the benchmark fleet against 35-50 us for each of the next ones, enough to start the thread
 * for facts that do not need it, which then cost a third more CPU). PuppetDB's are always read
 * ahead. */
#define PREFETCH_AHEAD 64
#define PREFETCH_SAMPLE 8
#define PREFETCH_SLOW_NS 60000

static void *prefetch_thread(void *arg)
{
    prefetch *p = arg;
    rubyver_enter(p->f->ruby);
    for (size_t i = p->first; i < p->n; i++) {
        pthread_mutex_lock(&p->mu);
        if (!p->stop && i >= p->consumed + PREFETCH_AHEAD) {
            /* far enough ahead: sleep until the worker has used half of the window */
            p->producer_waits = true;
            p->waiting_at = i;
            while (!p->stop && i >= p->consumed + PREFETCH_AHEAD / 2)
                pthread_cond_wait(&p->cv, &p->mu);
            p->producer_waits = false;
        }
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        node_input in;
        load_input(p->f, p->w->cache, i, &in);
        pthread_mutex_lock(&p->mu);
        p->in[i] = in;
        p->ready[i] = true;
        if (p->consumer_waits)
            pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* The thread, reading from node `first` on (none for fewer than two nodes: not worth it). */
static void prefetch_thread_start(prefetch *p, size_t first)
{
    if (p->n < first + 2)
        return;
    p->first = first;
    p->consumed = first;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threaded = pthread_create(&p->thread, NULL, prefetch_thread, p) == 0;
    if (!p->threaded) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
}

static void prefetch_start(prefetch *p, fleet *f, worker *w)
{
    memset(p, 0, sizeof *p);
    p->f = f;
    p->w = w;
    p->n = f->n;
    p->in = xcalloc(f->n ? f->n : 1, sizeof *p->in);
    p->ready = xcalloc(f->n ? f->n : 1, sizeof *p->ready);
    /* PuppetDB: from the start (files: prefetch_take decides) */
    if (f->o.source && !strncmp(hiera_facts_source_describe(f->o.source), "PuppetDB", 8))
        prefetch_thread_start(p, 0);
}

static long long thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Node i's input (the caller owns it), in order; without the thread it is read here. */
static void prefetch_take(prefetch *p, size_t i, node_input *in)
{
    if (!p->threaded) {
        bool sampling = i >= 1 && i <= PREFETCH_SAMPLE;
        long long t0 = sampling ? thread_cpu_ns() : 0;
        load_input(p->f, p->w->cache, i, in);
        if (sampling) {
            p->spent += thread_cpu_ns() - t0;
            if (i == PREFETCH_SAMPLE && p->spent > (long long)PREFETCH_SAMPLE * PREFETCH_SLOW_NS)
                prefetch_thread_start(p, i + 1);
        }
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->consumer_waits = true;
    while (!p->ready[i])
        pthread_cond_wait(&p->cv, &p->mu);
    p->consumer_waits = false;
    *in = p->in[i];
    memset(&p->in[i], 0, sizeof p->in[i]);
    p->consumed = i + 1;
    if (p->producer_waits && p->waiting_at < p->consumed + PREFETCH_AHEAD / 2)
        pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void prefetch_stop(prefetch *p)
{
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    for (size_t i = 0; i < p->n; i++)
        node_input_free(&p->in[i]);
    free(p->in);
    free(p->ready);
}

/* ------------------------------------------------------------------ rendering */

/* v's JSON text; *once: the caller frees it (not remembered) */
static const char *render_json_memo(worker *w, hiera_value *v, size_t *len, bool *once, hiera_error *err)
{
    /* a value no one else holds is in no slot (a slot holds a reference): its slot, far from
     * what the node's rendering reads, is not read */
    *once = !hiera_value_is_shared(v);
    size_t i = (size_t)(((uint64_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull >> (64 - RENDER_MEMO_BITS));
    render_slot *s = &w->memo[i];
    if (!*once && s->v == v) {
        *len = s->len;
        return s->text;
    }
    char *text = hiera_cache_render(w->cache, v, HIERA_RENDER_JSON, err); /* (parts shared by nodes: written once) */
    if (!text)
        return NULL;
    *len = strlen(text);
    if (*once)
        return text;
    if (s->v) {
        if (w->nevicted == w->evicted_cap) {
            w->evicted_cap = w->evicted_cap ? w->evicted_cap * 2 : 16;
            w->evicted = xrealloc(w->evicted, w->evicted_cap * sizeof *w->evicted);
        }
        w->evicted[w->nevicted++] = *s;
    }
    s->v = hiera_value_incref(v);
    s->text = text;
    s->len = *len;
    return text;
}

/* The slots replaced while the last node's answers were rendered, released (after its callback) */
static void release_evicted(worker *w)
{
    for (size_t i = 0; i < w->nevicted; i++) {
        hiera_value_decref(w->evicted[i].v);
        free(w->evicted[i].text);
    }
    w->nevicted = 0;
}

static void render_memo_free(worker *w)
{
    release_evicted(w);
    free(w->evicted);
    if (!w->memo)
        return;
    for (size_t i = 0; i < (1u << RENDER_MEMO_BITS); i++) {
        hiera_value_decref(w->memo[i].v);
        free(w->memo[i].text);
    }
    free(w->memo);
    w->memo = NULL;
}

/* ------------------------------------------------------------------ a node's own keys */

static int cmp_form(const void *a, const void *b) { return strcmp(((const key_form *)a)->form, ((const key_form *)b)->form); }

/* The node's own keys: every key it can see, each in the form a lookup takes, sorted by their
 * bytes; what could not be listed goes to r->listing_errors. The forms of a key (and their JSON)
 * are made once per worker (w->key_forms: key as written -> [form, form's JSON], or a message when
 * it has none), and the node's keys borrow them. */
static void node_list_keys(worker *w, node_run *r)
{
    fleet *f = w->f;
    hiera_value *all = hiera_key_names(r->h);
    const hiera_value *keys = hiera_value_hash_get(all, "keys"), *errors = hiera_value_hash_get(all, "errors");
    size_t n = hiera_value_array_size(keys), m = 0;
    if (hiera_value_array_size(errors)) {
        r->listing_errors = hiera_value_new_array();
        for (size_t i = 0; i < hiera_value_array_size(errors); i++)
            hiera_value_array_push(r->listing_errors, hiera_value_incref(hiera_value_array_get(errors, i)));
    }
    if (!w->key_forms)
        w->key_forms = hiera_value_new_hash();
    key_form *forms = xmalloc((n ? n : 1) * sizeof *forms);
    for (size_t i = 0; i < n; i++) {
        const char *key = hiera_value_string(hiera_value_array_get(keys, i));
        hiera_value *fm = hiera_value_hash_get(w->key_forms, key);
        if (!fm) {
            char *lf = hiera_key_lookup_form(key), *lj = lf && f->o.render_json ? json_string(lf) : NULL;
            if (lf && (lj || !f->o.render_json)) {
                fm = hiera_value_new_array();
                hiera_value_array_push(fm, hiera_value_new_string(lf));
                hiera_value_array_push(fm, lj ? hiera_value_new_string(lj) : hiera_value_undef());
            } else {
                fm = hiera_value_new_string(lf ? "a key is not valid UTF-8: it cannot be written as JSON"
                                               : "holds both quotes and a dot or quote: no lookup can reach it");
            }
            free(lf);
            free(lj);
            hiera_value_hash_set(w->key_forms, key, fm); /* (fm stays borrowed from w->key_forms) */
        }
        if (hiera_value_kind(fm) == HIERA_STRING) {
            if (!r->listing_errors)
                r->listing_errors = hiera_value_new_array();
            hiera_value *e = hiera_value_new_hash();
            hiera_value_hash_set(e, "key", hiera_value_new_string(key));
            hiera_value_hash_set(e, "message", hiera_value_incref(fm));
            hiera_value_array_push(r->listing_errors, e);
            continue;
        }
        forms[m++] = (key_form){hiera_value_string(hiera_value_array_get(fm, 0)), hiera_value_array_get(fm, 1)};
    }
    hiera_value_decref(all);
    qsort(forms, m, sizeof *forms, cmp_form);
    const char **k = xmalloc((m ? m : 1) * sizeof *k), **kj = xmalloc((m ? m : 1) * sizeof *kj);
    size_t *kl = xmalloc((m ? m : 1) * sizeof *kl);
    for (size_t i = 0; i < m; i++) {
        k[i] = forms[i].form;
        kj[i] = f->o.render_json ? hiera_value_string(forms[i].json) : NULL;
        kl[i] = f->o.render_json ? hiera_value_string_length(forms[i].json) : 0;
    }
    free(forms);
    r->keys = k;
    r->keys_json = kj;
    r->keys_json_len = kl;
    r->nkeys = m;
    r->own_keys = true;
    r->answers = xmalloc((m ? m : 1) * sizeof *r->answers);
    r->stride = 1;
}

static void node_keys_free(node_run *r)
{
    if (!r->own_keys)
        return;
    free((void *)r->keys); /* (the strings are the worker's key_forms') */
    free((void *)r->keys_json);
    free((void *)r->keys_json_len);
    free(r->answers);
    r->own_keys = false;
}

/* ------------------------------------------------------------------ a block of nodes */

/* Opens node i's context (in: released here). */
static void node_open(worker *w, size_t i, node_input *in, node_run *r)
{
    fleet *f = w->f;
    memset(r, 0, sizeof *r);
    r->keys = f->keys;
    r->keys_json = (const char *const *)f->keys_json;
    r->keys_json_len = f->keys_json_len;
    r->nkeys = f->nkeys;
    r->msg = in->msg;
    in->msg = NULL;
    if (r->msg) {
        node_input_free(in);
        return;
    }
    hiera_error err = {0};
    hiera_options o = f->ctx;
    o.node = node_name(f, i);
    o.facts = in->facts;
    o.base_facts = in->base;
    o.trusted = in->trusted;
    o.cache = w->cache;
    r->h = hiera_new(&o, &err);
    node_input_free(in); /* the context keeps its own copies */
    if (!r->h)
        r->msg = xstrdup(err.message ? err.message : "");
    hiera_error_clear(&err);
    if (r->h && !f->keys)
        node_list_keys(w, r);
}

static void node_lookup(worker *w, node_run *r, size_t k)
{
    answer *an = &r->answers[k * r->stride];
    const char *key = r->keys[k];
    w->req.keys = &key; /* (the worker's copy of the request: nothing copied per lookup) */
    hiera_error err = {0};
    an->v = NULL;
    an->msg = NULL;
    if (hiera_lookup(r->h, &w->req, &an->v, &err) == HIERA_ERROR) {
        an->msg = err.message ? err.message : xstrdup("");
        err.message = NULL;
        hiera_error_clear(&err); /* (only a failure fills err: two calls of free saved a lookup) */
    }
    w->lookups++;
}

/* Releases what a node's run holds (its answers, its context). */
static void node_close(node_run *r)
{
    answer *an = r->answers;
    for (size_t k = 0, nk = r->h ? r->nkeys : 0; k < nk; k++, an += r->stride) {
        hiera_value_decref(an->v);
        if (an->msg) /* (mostly NULL: free's call skipped, 60,000 times a run of the benchmark) */
            free(an->msg);
    }
    free(r->msg);
    hiera_value_decref(r->listing_errors);
    hiera_free(r->h);
    node_keys_free(r);
}

/* Hands node i's answers to the callback (rendering them when asked), then closes it. Returns
 * the callback's word. */
static int node_emit(worker *w, size_t i, node_run *r)
{
    fleet *f = w->f;
    hiera_fleet_node out = {.name = node_name(f, i), .index = i, .error = r->msg, .listing_errors = r->listing_errors};
    if (r->h) {
        if (r->nkeys > w->out_cap) {
            w->out_cap = r->nkeys;
            w->out = xrealloc(w->out, w->out_cap * sizeof *w->out);
        }
        /* (the loop is the whole per-answer cost of the callback API: kept to its stores) */
        const char *const *keys = r->keys, *const *kj = r->keys_json;
        const size_t *kl = r->keys_json_len;
        const size_t stride = r->stride, nk = r->nkeys;
        const bool render = f->o.render_json;
        answer *an = r->answers;
        hiera_fleet_answer *a = w->out;
        for (size_t k = 0; k < nk; k++, an += stride, a++) {
            a->key = keys[k];
            if (kj) {
                a->key_json = kj[k];
                a->key_json_length = kl[k];
            } else {
                a->key_json = NULL;
                a->key_json_length = 0;
            }
            a->value = an->v;
            a->text = NULL;
            a->text_length = 0;
            a->error = an->msg;
            if (!an->v) {
                a->status = an->msg ? HIERA_ERROR : HIERA_NOT_FOUND;
                w->failed_lookups += an->msg != NULL;
                continue;
            }
            a->status = HIERA_OK;
            if (!render)
                continue;
            bool once;
            hiera_error err = {0};
            const char *text = render_json_memo(w, an->v, &a->text_length, &once, &err);
            if (text) {
                a->text = text;
                if (once) /* (a text not remembered: kept where an error would be, freed with it) */
                    an->msg = (char *)text;
                continue;
            }
            /* as hiera lookup fails on a value it cannot print */
            an->msg = err.message ? err.message : xstrdup("cannot render the value");
            err.message = NULL;
            a->error = an->msg;
            a->status = HIERA_ERROR;
            a->value = NULL;
            w->failed_lookups++;
            hiera_error_clear(&err);
        }
        out.answers = w->out;
        out.nanswers = r->nkeys;
    } else {
        w->failed_nodes++;
    }
    w->nodes++;
    int rc = f->o.callback ? f->o.callback(&out, f->o.userdata) : 0;
    if (w->nevicted)
        release_evicted(w);
    node_close(r);
    return rc;
}

/* The nodes [lo, hi) (a block): opened, looked up key by key, handed over in order. */
static void run_block(worker *w, prefetch *pf, size_t b, size_t lo, size_t hi)
{
    fleet *f = w->f;
    node_run runs[NODE_BLOCK];
    size_t n = hi - lo;
    for (size_t j = 0; j < n; j++) {
        node_input in;
        if (pf)
            prefetch_take(pf, lo + j, &in);
        else
            load_input(f, w->cache, lo + j, &in);
        node_open(w, lo + j, &in, &runs[j]);
        if (!runs[j].own_keys) {
            /* (key by key, as they are looked up) */
            runs[j].answers = w->answers + j;
            runs[j].stride = n;
        }
    }
    /* (a node's own keys are sorted: the nodes of a block mostly meet the same key at once) */
    size_t nkeys = f->nkeys;
    for (size_t j = 0; j < n; j++)
        if (runs[j].h && runs[j].nkeys > nkeys)
            nkeys = runs[j].nkeys;
    for (size_t k = 0; k < nkeys; k++)
        for (size_t j = 0; j < n; j++)
            if (runs[j].h && k < runs[j].nkeys)
                node_lookup(w, &runs[j], k);
    /* hand over: in an ordered run when it is this block's turn */
    if (f->o.ordered && f->nworkers > 1) {
        pthread_mutex_lock(&f->mu);
        while (f->turn != b)
            pthread_cond_wait(&f->turn_cv, &f->mu);
        pthread_mutex_unlock(&f->mu);
    } else if (f->nworkers > 1) {
        pthread_mutex_lock(&f->mu);
    }
    bool stopped = atomic_load_explicit(&f->stop, memory_order_relaxed);
    for (size_t j = 0; j < n; j++) {
        if (stopped) {
            node_close(&runs[j]); /* (the run was stopped: the rest is closed without a word) */
            continue;
        }
        if (node_emit(w, lo + j, &runs[j]) != 0) {
            atomic_store(&f->stop, true);
            stopped = true;
        }
    }
    if (f->o.ordered && f->nworkers > 1) {
        pthread_mutex_lock(&f->mu);
        f->turn = b + 1;
        pthread_cond_broadcast(&f->turn_cv);
        pthread_mutex_unlock(&f->mu);
    } else if (f->nworkers > 1) {
        pthread_mutex_unlock(&f->mu);
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    fleet *f = w->f;
    ruby_ver was = rubyver_enter(f->ruby);
    prefetch pf;
    bool prefetching = f->nworkers == 1;
    if (prefetching)
        prefetch_start(&pf, f, w);
    size_t nblocks = (f->n + NODE_BLOCK - 1) / NODE_BLOCK;
    for (;;) {
        size_t b = atomic_fetch_add(&f->next_block, 1);
        if (b >= nblocks)
            break;
        if (atomic_load_explicit(&f->stop, memory_order_relaxed) && !(f->o.ordered && f->nworkers > 1))
            break;
        size_t lo = b * NODE_BLOCK, hi = lo + NODE_BLOCK < f->n ? lo + NODE_BLOCK : f->n;
        if (atomic_load_explicit(&f->stop, memory_order_relaxed)) {
            /* (ordered and stopped: pass the turn on without looking anything up) */
            pthread_mutex_lock(&f->mu);
            while (f->turn != b)
                pthread_cond_wait(&f->turn_cv, &f->mu);
            f->turn = b + 1;
            pthread_cond_broadcast(&f->turn_cv);
            pthread_mutex_unlock(&f->mu);
            continue;
        }
        run_block(w, prefetching ? &pf : NULL, b, lo, hi);
    }
    if (prefetching)
        prefetch_stop(&pf);
    rubyver_leave(was);
    return NULL;
}

/* ------------------------------------------------------------------ the run */

static bool setup_worker(fleet *f, worker *w, unsigned id, herr *err)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->id = id;
    if (id == 0 && f->o.cache) {
        w->cache = f->o.cache;
    } else if (f->o.snapshot) {
        w->cache = hiera_cache_new_from_snapshot(f->o.snapshot);
        w->own_cache = true;
    } else {
        w->cache = hiera_cache_new();
        w->own_cache = true;
        struct diskcache *disk = f->o.cache ? cache_disk(f->o.cache) : NULL;
        if (disk)
            hiera_cache_use_disk(w->cache, diskcache_dir(disk));
    }
    if (!w->cache) {
        herr_set(err, HERR_ERROR, "cannot make a cache for a worker");
        return false;
    }
    w->req = f->req;
    w->req.nkeys = 1;
    hiera_cache_freeze(w->cache); /* one run over one tree: files are read and listed once */
    hiera_cache_share_facts_strings(w->cache); /* (facts are read by one thread at a time per cache) */
    if (f->o.render_json)
        w->memo = xcalloc((size_t)1 << RENDER_MEMO_BITS, sizeof *w->memo);
    w->answers = xmalloc(NODE_BLOCK * (f->nkeys ? f->nkeys : 1) * sizeof *w->answers);
    return true;
}

static void free_worker(worker *w)
{
    render_memo_free(w);
    hiera_value_decref(w->key_forms);
    free(w->answers);
    free(w->out);
    if (w->own_cache)
        hiera_cache_free(w->cache);
}

static hiera_status run(fleet *f, hiera_fleet_stats *stats, herr *err)
{
    /* the nodes */
    if (f->o.source && f->o.nodes) {
        herr_set(err, HERR_ERROR, "hiera_fleet_run: give either a facts source or nodes, not both");
        return HIERA_ERROR;
    }
    if (f->o.source) {
        if (f->o.names) {
            f->names = f->o.names;
            f->n = f->o.nnames;
        } else {
            hiera_error le = {0};
            f->listed = hiera_facts_source_nodes(f->o.source, &le);
            if (!f->listed) {
                herr_set(err, HERR_ERROR, "%s", le.message ? le.message : "cannot list the nodes");
                hiera_error_clear(&le);
                return HIERA_ERROR;
            }
            f->n = hiera_value_array_size(f->listed);
            f->listed_names = xmalloc((f->n ? f->n : 1) * sizeof *f->listed_names);
            for (size_t i = 0; i < f->n; i++)
                f->listed_names[i] = hiera_value_string(hiera_value_array_get(f->listed, i));
            f->names = f->listed_names;
        }
        f->pager = hiera_facts_pager_new(f->o.source, f->names, f->n, NULL);
    } else {
        f->n = f->o.nnodes;
    }
    /* the keys and their JSON */
    f->keys = f->o.keys;
    f->nkeys = f->o.keys ? f->o.nkeys : 0;
    if (f->keys && f->o.render_json) {
        f->keys_json = xcalloc(f->nkeys ? f->nkeys : 1, sizeof *f->keys_json);
        f->keys_json_len = xcalloc(f->nkeys ? f->nkeys : 1, sizeof *f->keys_json_len);
        for (size_t k = 0; k < f->nkeys; k++) {
            f->keys_json[k] = json_string(f->keys[k]);
            if (!f->keys_json[k]) {
                herr_set(err, HERR_ERROR, "the key '%s' is not valid UTF-8", f->keys[k]);
                return HIERA_ERROR;
            }
            f->keys_json_len[k] = strlen(f->keys_json[k]);
        }
    }
    /* the workers */
    unsigned want = f->o.threads ? f->o.threads : fleet_cpus();
    if (!f->o.threads) {
        size_t cap = f->n / MIN_NODES_PER_THREAD;
        if (want > cap)
            want = cap ? (unsigned)cap : 1;
    }
    size_t nblocks = (f->n + NODE_BLOCK - 1) / NODE_BLOCK;
    if (want > nblocks)
        want = nblocks ? (unsigned)nblocks : 1;
    if (want > MAX_THREADS)
        want = MAX_THREADS;
    f->workers = xcalloc(want, sizeof *f->workers);
    for (unsigned i = 0; i < want; i++) {
        if (!setup_worker(f, &f->workers[i], i, err)) {
            for (unsigned j = 0; j < i; j++)
                free_worker(&f->workers[j]);
            return HIERA_ERROR;
        }
        f->nworkers = i + 1;
    }
    for (unsigned i = 1; i < f->nworkers; i++)
        f->workers[i].started = pthread_create(&f->workers[i].th, NULL, worker_main, &f->workers[i]) == 0;
    worker_main(&f->workers[0]);
    unsigned ran = 1;
    for (unsigned i = 1; i < f->nworkers; i++)
        if (f->workers[i].started) {
            pthread_join(f->workers[i].th, NULL);
            ran++;
        }
    hiera_fleet_stats st = {.threads = ran};
    for (unsigned i = 0; i < f->nworkers; i++) {
        worker *w = &f->workers[i];
        st.nodes += w->nodes;
        st.failed_nodes += w->failed_nodes;
        st.lookups += w->lookups;
        st.failed_lookups += w->failed_lookups;
        free_worker(w);
    }
    if (stats)
        *stats = st;
    if (atomic_load(&f->stop)) {
        herr_set(err, HERR_ERROR, "the run was stopped by its callback");
        return HIERA_ERROR;
    }
    return HIERA_OK;
}

hiera_status hiera_fleet_run(const hiera_fleet_options *given, hiera_fleet_stats *stats, hiera_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    fleet *f = xcalloc(1, sizeof *f);
    options_take(&f->o, sizeof f->o, given);
    herr e = {0};
    hiera_status rc = HIERA_ERROR;
    if (!f->o.context) {
        herr_set(&e, HERR_ERROR, "hiera_fleet_run: the context options are needed");
        goto out;
    }
    api_copy_options(&f->ctx, f->o.context);
    f->ctx.size = sizeof f->ctx;
    /* (the contexts' Puppet, as hiera_new finds it: the settings', else the options') */
    f->ruby = (f->ctx.settings ? hiera_settings_puppet_version(f->ctx.settings)
                               : puppet_version_resolve(f->ctx.puppet_version)) == HIERA_PUPPET_8 ? RUBY_33 : RUBY_31;
    if (f->ctx.diagnostics) {
        f->user_diag = f->ctx.diagnostics;
        f->user_diag_data = f->ctx.diagnostics_data;
        f->ctx.diagnostics = serialized_diag;
        f->ctx.diagnostics_data = f;
    }
    api_copy_request(&f->req, f->o.request);
    f->req.size = sizeof f->req;
    f->req.explain = 0;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->diag_mu, NULL);
    pthread_cond_init(&f->turn_cv, NULL);
    atomic_init(&f->next_block, 0);
    atomic_init(&f->stop, false);
    ruby_ver was = rubyver_enter(f->ruby);
    rc = run(f, stats, &e);
    rubyver_leave(was);
    pthread_cond_destroy(&f->turn_cv);
    pthread_mutex_destroy(&f->diag_mu);
    pthread_mutex_destroy(&f->mu);
out:
    if (rc != HIERA_OK)
        herr_to_public(err, &e);
    else
        herr_clear(&e);
    hiera_facts_pager_free(f->pager);
    free(f->listed_names);
    hiera_value_decref(f->listed);
    for (size_t k = 0; f->keys_json && k < f->nkeys; k++)
        free(f->keys_json[k]);
    free(f->keys_json);
    free(f->keys_json_len);
    free(f->workers);
    free(f);
    return rc;
}
