/* state.c - what `hiera serve` answers from (serve.h).
 *
 * Environments. Every environment of the environmentpath has a slot; it is built (a snapshot of
 * that environment, its modules and the global layer: engine/snapshot.h) when a request first
 * asks for it, so the first answer comes as fast whatever the number of environments, and one
 * never asked costs its name. Data files are named by a digest of their bytes, so a hundred
 * branches of one control repository hold one parse of each distinct file. Beyond --max-memory,
 * the environments asked least recently are dropped, and built again when asked (the disk cache
 * keeps the parses by content).
 *
 * The watcher never looks away. One inotify descriptor, opened once, watches every folder of the
 * code directory and the facts folder for as long as the server runs; whatever thread reads it
 * (the watcher thread when it is readable, a build that ends, /healthz) files each event as a
 * pending change of a path with a sequence number and a time, and keeps the watches in step
 * (a folder created or renamed in is watched with all it holds, one removed or renamed out is
 * let go). Files open for writing (written and not closed yet) are known too.
 *
 * The builder thread takes the pending changes when they have settled (SETTLE seconds of quiet,
 * or MAX_LAG after the first), and rebuilds each built environment they concern from its last
 * build, reading again only the paths the events named (a folder renamed into place, as r10k
 * and Code Manager deploy, is one change: everything under it). A build is served only when no
 * change to what it reads came during it (else it is made again once things settle), and not
 * while a file it reads is open for writing: no answer comes from a half-written file. A build
 * that brings new errors (a file that does not parse) is made once more after the file settles,
 * and refused if they stay: the last good build goes on serving and /healthz says why. The
 * kernel's queue overflowing (IN_Q_OVERFLOW) is the one case where every path is looked at again.
 *
 * A request thread that finds its environment unbuilt builds it itself under the same rules
 * (other requests for it wait). Each server thread keeps its own caches over the builds it
 * answers from (a few, the most recently used). */
#include "serve/serve.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/pathname.h"
#include "base/util.h"
#include "engine/snapshot.h"

/* seconds */
#define SETTLE 0.1     /* of quiet after a change before it is built */
#define MAX_LAG 2.0    /* a change waits at most this for quiet when others keep coming */
#define WRITE_MAX 2.0  /* a file written and not closed this long is taken as it is */
#define RECHECK 0.3    /* a file that fails to parse is read again this long after its last change */
#define LAZY_WAIT 5.0  /* a request building its environment waits this long at most for quiet */
#define FRESH 0.5      /* an environment watched only now: a file of it written less than this ago
                        * may still be open for writing (its writes before the watch were not seen) */
#define VIEWS_PER_THREAD 4

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t now_ms(void) { return (uint64_t)(now_seconds() * 1000); }

/* path made absolute against the working folder (lexically) */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return xstrdup(path);
    char *cwd = getcwd(NULL, 0);
    char *abs = pn_plus(cwd ? cwd : "/", path);
    free(cwd);
    return abs;
}

/* path is dir or under it */
static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* Puppet's environment names: /\A[a-z0-9_]+\z/ */
static bool valid_env_name(const char *n, size_t len)
{
    if (!len || len > 255)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') || n[i] == '_'))
            return false;
    return true;
}

/* ------------------------------------------------------------------ nodes and facts */

/* The nodes and their facts, immortal (read by every server thread at once), shared by the
 * generations built from the same fetch. */
typedef struct facts_set {
    int refs; /* atomic */
    hv *facts, *nodes, *errors, *stored;
    hv_nodes immortal;
    bool loading; /* empty: the facts folder is being read (the server answers meanwhile) */
} facts_set;

static void facts_set_release(facts_set *fs)
{
    if (!fs || __atomic_sub_fetch(&fs->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    hv_free_immortal(&fs->immortal);
    free(fs);
}

static int cmp_hv_str(const void *a, const void *b)
{
    return strcmp(hv_str_ptr(*(hv *const *)a), hv_str_ptr(*(hv *const *)b));
}

/* The strings of names (an array's items, or a hash's keys) as a new sorted array; names is
 * released. */
static hv *sorted_strings(hv *names)
{
    bool keys = hv_is(names, HV_HASH);
    size_t n = keys ? hv_hash_len(names) : hv_array_len(names);
    hv **items = xcalloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = hv_incref(keys ? hv_hash_key_at(names, i) : hv_array_get(names, i));
    qsort(items, n, sizeof *items, cmp_hv_str);
    hv *sorted = hv_array_sized(n);
    for (size_t i = 0; i < n; i++)
        hv_array_push(sorted, items[i]);
    free(items);
    hv_decref(names);
    return sorted;
}

/* A node's facts file: NAME.yaml, NAME.yml or NAME.json (as hiera batch --facts-dir reads): a hash of
 * facts or a file of Puppet's YAML facts cache. */
static char *node_of_file(const char *name)
{
    static const char *exts[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(name);
    for (size_t i = 0; i < 3; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcmp(name + n - e, exts[i]) == 0)
            return xstrndup(name, n - e);
    }
    return NULL;
}

/* The nodes and their facts from the command's source (PuppetDB); a node whose facts could not
 * be fetched is listed with why. false (*why set) when the nodes cannot be listed. */
static bool load_given(const struct serve_nodes *src, hv *facts, hv *errors, hv *names, hv *stored, char **why)
{
    hv *got = hv_hash();
    if (!src->fetch(src->data, got, errors, why)) {
        hv_decref(got);
        return false;
    }
    for (size_t i = 0; i < hv_hash_len(got); i++) {
        const hv *name = hv_hash_key_at(got, i);
        hv_hash_set(facts, hv_incref((hv *)name), hv_incref(hv_hash_val_at(got, i)));
        /* PuppetDB's facts are the node's stored facts, as hiera lookup --node takes them */
        hv_hash_set(stored, hv_incref((hv *)name), hv_true());
        hv_array_push(names, hv_incref((hv *)name));
    }
    hv_decref(got);
    return true;
}

/* Every node's facts (the facts folder or PuppetDB); NULL (why set) when PuppetDB cannot list its
 * nodes. */
static facts_set *load_facts(const serve_options *o, char **why)
{
    const char *dir = o->facts_dir;
    hv *facts = hv_hash(), *errors = hv_hash(), *names = hv_array(), *stored = hv_hash();
    if (o->puppetdb && !load_given(o->puppetdb, facts, errors, names, stored, why)) {
        hv_decref(facts);
        hv_decref(errors);
        hv_decref(names);
        hv_decref(stored);
        return NULL;
    }
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char *node = node_of_file(de->d_name);
        if (!node)
            continue;
        char *path = xjoin(dir, "/", de->d_name, NULL);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && !hv_hash_gets(facts, node) && !hv_hash_gets(errors, node)) {
            hiera_error err = {0};
            int kind = HIERA_FACTS_FILE;
            hiera_value *v = hiera_facts_load(NULL, path, node, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
            if (v && hiera_value_kind(v) == HIERA_HASH) {
                hv_hash_sets(facts, node, v);
                hv_array_push(names, hv_str(node));
                if (kind == HIERA_FACTS_CACHE)
                    hv_hash_sets(stored, node, hv_true());
            } else {
                hv_hash_sets(errors, node, hv_str(err.message ? err.message : "the facts file does not hold a hash"));
                hiera_value_decref(v);
            }
            hiera_error_clear(&err);
        }
        free(path);
        free(node);
    }
    if (d)
        closedir(d);
    /* sorted names: the page lists and searches them */
    hv *sorted = sorted_strings(names);
    /* read by every server thread at once: immortal */
    facts_set *fs = xcalloc(1, sizeof *fs);
    fs->refs = 1;
    hv_make_immortal(facts, &fs->immortal);
    hv_make_immortal(sorted, &fs->immortal);
    hv_make_immortal(errors, &fs->immortal);
    hv_make_immortal(stored, &fs->immortal);
    fs->stored = stored;
    fs->facts = facts;
    fs->nodes = sorted;
    fs->errors = errors;
    return fs;
}

static facts_set *facts_loading(void)
{
    facts_set *fs = xcalloc(1, sizeof *fs);
    fs->refs = 1;
    fs->loading = true;
    fs->facts = hv_hash();
    fs->nodes = hv_array();
    fs->errors = hv_hash();
    fs->stored = hv_hash();
    hv_make_immortal(fs->facts, &fs->immortal);
    hv_make_immortal(fs->nodes, &fs->immortal);
    hv_make_immortal(fs->errors, &fs->immortal);
    hv_make_immortal(fs->stored, &fs->immortal);
    return fs;
}

bool state_facts_loading(const generation *g) { return g->fs->loading; }

hiera_value *state_node_facts_now(serve_state *st, const char *node, bool *stored, char **error)
{
    static const char *exts[] = {".yaml", ".yml", ".json"};
    *stored = false;
    *error = NULL;
    for (size_t i = 0; st->o->facts_dir && i < 3; i++) {
        char *path = xjoin(st->o->facts_dir, "/", node, exts[i], NULL);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(path);
            continue;
        }
        hiera_error err = {0};
        int kind = HIERA_FACTS_FILE;
        hiera_value *v = hiera_facts_load(NULL, path, node, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
        free(path);
        if (v && hiera_value_kind(v) == HIERA_HASH) {
            *stored = kind == HIERA_FACTS_CACHE;
            hiera_error_clear(&err);
            return v;
        }
        *error = xstrdup(err.message ? err.message : "the facts file does not hold a hash");
        hiera_error_clear(&err);
        hiera_value_decref(v);
        return NULL;
    }
    return NULL;
}

void state_wait_facts(serve_state *st)
{
    pthread_mutex_lock(&st->lock);
    while (st->current->fs->loading && st->running)
        pthread_cond_wait(&st->facts_cond, &st->lock);
    pthread_mutex_unlock(&st->lock);
}

/* ------------------------------------------------------------------ settings */

static settings_ref *settings_load(const serve_options *o)
{
    hiera_setting cli[4];
    size_t ncli = 0;
    if (o->confdir)
        cli[ncli++] = (hiera_setting){"confdir", o->confdir};
    if (o->codedir)
        cli[ncli++] = (hiera_setting){"codedir", o->codedir};
    if (o->environmentpath)
        cli[ncli++] = (hiera_setting){"environmentpath", o->environmentpath};
    if (o->hiera_config)
        cli[ncli++] = (hiera_setting){"hiera_config", o->hiera_config};
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = ncli;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&so, &err);
    if (!s)
        fprintf(stderr, "hiera serve: Puppet's settings: %s\n", err.message ? err.message : "");
    hiera_error_clear(&err);
    settings_ref *r = xcalloc(1, sizeof *r);
    r->refs = 1;
    r->s = s;
    return r;
}

static settings_ref *settings_retain(settings_ref *r)
{
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
    return r;
}

static void settings_release(settings_ref *r)
{
    if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    hiera_settings_free(r->s);
    free(r);
}

static settings_ref *current_settings(serve_state *st)
{
    pthread_mutex_lock(&st->lock);
    settings_ref *r = settings_retain(st->settings);
    pthread_mutex_unlock(&st->lock);
    return r;
}

/* ------------------------------------------------------------------ environment builds */

void env_build_release(env_build *b)
{
    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    hv_decref(b->errors); /* (before the snapshot: it holds the snapshot's immortal problems) */
    hiera_environment_free(b->env);
    hiera_snapshot_release(b->snap);
    settings_release(b->settings);
    free(b->error);
    free(b->name);
    free(b);
}

static env_build *env_build_retain(env_build *b)
{
    __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
    return b;
}

/* The error problems of a snapshot, by "code\nfile\nmessage" (a new hash). */
static hv *error_set(hiera_snapshot *s)
{
    hv *set = hv_hash();
    hiera_value *p = hiera_snapshot_problems(s);
    for (size_t i = 0; i < hiera_value_array_size(p); i++) {
        const hiera_value *e = hiera_value_array_get(p, i);
        if (strcmp(hiera_value_string(hiera_value_hash_get(e, "severity")), "error") != 0)
            continue;
        char *k = xjoin(hiera_value_string(hiera_value_hash_get(e, "code")), "\n",
                        hiera_value_string(hiera_value_hash_get(e, "file")), "\n",
                        hiera_value_string(hiera_value_hash_get(e, "message")), NULL);
        hv_hash_sets(set, k, hv_incref((hv *)e));
        free(k);
    }
    hiera_value_decref(p);
    return set;
}

/* Environment name built with settings sr, from prev (NULL: from nothing) reading again what
 * changed() says may have changed (NULL: everything). */
static env_build *build_env(serve_state *st, const char *name, settings_ref *sr, const env_build *prev,
                            hiera_path_changed_fn changed, void *data)
{
    double t0 = now_seconds();
    env_build *b = xcalloc(1, sizeof *b);
    b->refs = 1;
    b->name = xstrdup(name);
    b->settings = settings_retain(sr);
    hiera_options ho = HIERA_OPTIONS_INIT;
    if (sr->s) {
        ho.settings = sr->s;
    } else {
        ho.codedir = st->o->codedir;
        ho.confdir = st->o->confdir;
        ho.environmentpath = st->o->environmentpath;
        ho.hiera_config = st->o->hiera_config;
    }
    ho.environment = name;
    ho.cache = st->o->disk;
    b->snap = hiera_snapshot_update_changed(prev ? prev->snap : NULL, &ho, prev ? changed : NULL, data, NULL);
    hiera_error err = {0};
    b->env = sr->s ? hiera_environment_load(sr->s, name, &err) : NULL;
    if (!b->env)
        b->error = xstrdup(err.message ? err.message : "Puppet's settings cannot be resolved");
    hiera_error_clear(&err);
    b->errors = error_set(b->snap);
    snapshot_counts c;
    snapshot_counts_of((const snapshot *)b->snap, &c);
    b->files = c.files;
    b->parsed = c.parsed;
    b->shared = c.shared + c.from_disk;
    b->reused = c.reused;
    b->looked = c.looked;
    b->own_bytes = c.own_bytes;
    b->built = time(NULL);
    b->build_seconds = now_seconds() - t0;
    __atomic_add_fetch(&st->builds, 1, __ATOMIC_RELAXED);
    return b;
}

/* What b brings that cur has not: an array of problems (a new reference, empty when none). */
static hv *new_errors(const env_build *cur, const env_build *b)
{
    hv *added = hv_array();
    for (size_t i = 0; i < hv_hash_len(b->errors); i++)
        if (!cur || !hv_hash_get(cur->errors, hv_hash_key_at(b->errors, i)))
            hv_array_push(added, hv_incref(hv_hash_val_at(b->errors, i)));
    return added;
}

/* ------------------------------------------------------------------ slots */

static env_slot *slot_new(const char *name, bool listed)
{
    env_slot *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->name = xstrdup(name);
    s->listed = listed;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    return s;
}

static env_slot *slot_retain(env_slot *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

static void retire(env_build *b)
{
    if (b) {
        __atomic_store_n(&b->retired, 1, __ATOMIC_RELEASE);
        env_build_release(b);
    }
}

static void slot_release(env_slot *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    retire(s->built);
    free(s->refused);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s->name);
    free(s);
}

/* Puts b in slot as its build (the one it replaces retired); the watcher's count seq. */
static void slot_publish(env_slot *slot, env_build *b, uint64_t seq)
{
    pthread_mutex_lock(&slot->lock);
    env_build *old = slot->built;
    slot->built = b;
    slot->seq = seq;
    free(slot->refused);
    slot->refused = NULL;
    pthread_mutex_unlock(&slot->lock);
    retire(old);
}

/* ------------------------------------------------------------------ the watcher's state (the watcher below) */

enum { SC_NONE, SC_ENV, SC_GLOBAL, SC_FACTS, SC_LIST, SC_SETTINGS };

/* A path that changed and is not taken by the builder yet. */
typedef struct {
    char *path;
    char *env;      /* SC_ENV: the environment's name */
    int scope;
    bool subtree;   /* a folder created, removed or renamed: anything under it may differ */
    uint64_t seq;
    double t;
} pend;

typedef struct {
    uint64_t seq;
    double t;
} mark;

typedef struct watch {
    int fd;
    pthread_mutex_t lock;  /* guards everything here (the descriptor's reads too) */
    pthread_cond_t cond;   /* events filed, a build finished */
    /* watch descriptor -> folder (open addressing; key 0: empty) */
    int *wd_keys;
    char **wd_paths;
    size_t wd_cap, wd_n;
    /* the pending changes, by path (index into pend) */
    pend *pend;
    size_t npend, pend_cap;
    hv *pend_index;
    /* the last event of each scope, and of each environment by name (hv_int index into marks) */
    mark global, facts, list, settings;
    hv *env_index;
    mark *marks;
    size_t nmarks, marks_cap;
    /* files written and not closed yet: path -> hv_float(time of the last write) */
    hv *writers;
    hv *writer_env; /* path -> environment name, or "" for the global layer */
    uint64_t seq;
    double last_t;       /* the last event's time */
    bool overflow;       /* the kernel lost events: everything may have changed */
    bool hup, quit;
    bool mem_due;        /* an environment was built: mind --max-memory */
    bool no_watch;       /* --no-watch: only SIGHUP and PuppetDB's refresh */
    /* what the tree is */
    char **envpaths;
    size_t nenvpaths;
    char *facts_dir, *confdir, *access_log, *access_log_real;
    char **roots;        /* the folders watched recursively, and those watched alone */
    size_t nroots;
    char **singles;
    size_t nsingles;
    bool warned_limit;
    hv *env_watched;     /* the environments whose folders are watched (those built once) */
    int wake[2];
} watch;

/* ------------------------------------------------------------------ generations */

void generation_release(generation *g)
{
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    facts_set_release(g->fs);
    hv_decref(g->checks);
    pthread_mutex_destroy(&g->check_lock);
    for (size_t i = 0; i < g->nenvs; i++)
        slot_release(g->envs[i]);
    free(g->envs);
    pthread_mutex_destroy(&g->envs_lock);
    free(g);
}

static generation *generation_new(facts_set *fs)
{
    generation *g = xcalloc(1, sizeof *g);
    g->refs = 1;
    pthread_mutex_init(&g->check_lock, NULL);
    pthread_mutex_init(&g->envs_lock, NULL);
    g->fs = fs;
    __atomic_add_fetch(&fs->refs, 1, __ATOMIC_RELAXED);
    g->facts = fs->facts;
    g->nodes = fs->nodes;
    g->facts_errors = fs->errors;
    g->facts_stored = fs->stored;
    g->built = time(NULL);
    return g;
}

/* The slot of name in g (BORROWED, valid while g is), or NULL; *at: where it would go. Under
 * g->envs_lock. */
static env_slot *find_slot(generation *g, const char *name, size_t *at)
{
    size_t lo = 0, hi = g->nenvs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->envs[mid]->name, name);
        if (c == 0) {
            *at = mid;
            return g->envs[mid];
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return NULL;
}

/* Adds slot s (STOLEN) to g at position at. Under g->envs_lock. */
static void insert_slot(generation *g, size_t at, env_slot *s)
{
    if (g->nenvs == g->envs_cap) {
        g->envs_cap = g->envs_cap ? g->envs_cap * 2 : 16;
        g->envs = xrealloc(g->envs, g->envs_cap * sizeof *g->envs);
    }
    memmove(g->envs + at + 1, g->envs + at, (g->nenvs - at) * sizeof *g->envs);
    g->envs[at] = s;
    g->nenvs++;
}

hv *state_env_names(generation *g)
{
    hv *names = hv_array();
    pthread_mutex_lock(&g->envs_lock);
    for (size_t i = 0; i < g->nenvs; i++)
        if (g->envs[i]->listed)
            hv_array_push(names, hv_str(g->envs[i]->name));
    pthread_mutex_unlock(&g->envs_lock);
    return names;
}

generation *state_current(serve_state *st)
{
    pthread_mutex_lock(&st->lock);
    generation *g = st->current;
    __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&st->lock);
    return g;
}

/* Makes g the one served (taking the caller's reference). */
static void publish(serve_state *st, generation *g)
{
    pthread_mutex_lock(&st->lock);
    g->id = ++st->next_id;
    generation *old = st->current;
    st->current = g;
    pthread_mutex_unlock(&st->lock);
    generation_release(old);
}

/* The folders of the environmentpath that are environments (names, sorted; a new array). */
static hv *list_envs(serve_state *st)
{
    hv *names = hv_hash();
    for (size_t i = 0; i < st->w->nenvpaths; i++) {
        const char *p = st->w->envpaths[i];
        DIR *d = opendir(p);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            if (!valid_env_name(de->d_name, strlen(de->d_name)) || hv_hash_gets(names, de->d_name))
                continue;
            char *full = xjoin(p, "/", de->d_name, NULL);
            struct stat sb;
            if (stat(full, &sb) == 0 && S_ISDIR(sb.st_mode))
                hv_hash_sets(names, de->d_name, hv_true());
            free(full);
        }
        if (d)
            closedir(d);
    }
    return sorted_strings(names);
}

/* A new generation with facts fs: the environments listed now (prev's slots kept for those still
 * there, and for the others prev was asked for, that are not folders), or prev's list as it is
 * when relist is false. */
static generation *next_generation(serve_state *st, generation *prev, facts_set *fs, bool relist)
{
    generation *g = generation_new(fs);
    hv *names = relist || !prev ? list_envs(st) : NULL;
    if (prev)
        pthread_mutex_lock(&prev->envs_lock);
    if (names) {
        for (size_t i = 0; i < hv_array_len(names); i++) {
            const char *n = hv_str_ptr(hv_array_get(names, i));
            size_t at;
            env_slot *old = prev ? find_slot(prev, n, &at) : NULL;
            if (old && old->listed) {
                insert_slot(g, g->nenvs, slot_retain(old));
            } else {
                insert_slot(g, g->nenvs, slot_new(n, true));
            }
        }
        /* environments asked for that are no folder (production: Puppet's default environment) */
        for (size_t i = 0; prev && i < prev->nenvs; i++) {
            size_t at;
            if (!prev->envs[i]->listed && !find_slot(g, prev->envs[i]->name, &at))
                insert_slot(g, at, slot_retain(prev->envs[i]));
        }
        /* (a listed one gone is dropped: asked again, it is Puppet's answer for a missing one) */
    } else {
        for (size_t i = 0; i < prev->nenvs; i++)
            insert_slot(g, g->nenvs, slot_retain(prev->envs[i]));
    }
    if (prev)
        pthread_mutex_unlock(&prev->envs_lock);
    hv_decref(names);
    return g;
}

/* Makes the next generation from the one served now (fs: its facts, NULL: the same; relist: the
 * environmentpath listed again), with what building it took, and serves it; returns it retained
 * (generation_release). Two threads publish, the builder and state_rebuild_now (a request's
 * thread, for a save): one at a time, each from the latest, so that neither undoes the other's
 * generation (new facts, environments listed again) by publishing one made from an older one. */
static generation *publish_next(serve_state *st, facts_set *fs, bool relist, double build_seconds, size_t files,
                                size_t parsed)
{
    pthread_mutex_lock(&st->publish_lock);
    generation *cur = state_current(st);
    generation *fresh = next_generation(st, cur, fs ? fs : cur->fs, relist);
    generation_release(cur);
    fresh->build_seconds = build_seconds;
    fresh->files = files;
    fresh->parsed = parsed;
    __atomic_add_fetch(&fresh->refs, 1, __ATOMIC_RELAXED); /* (the caller's) */
    publish(st, fresh);
    pthread_mutex_unlock(&st->publish_lock);
    return fresh;
}

/* ------------------------------------------------------------------ the watcher */


static size_t wd_slot(const watch *w, int wd)
{
    size_t i = ((size_t)wd * 0x9e3779b97f4a7c15ULL) & (w->wd_cap - 1);
    while (w->wd_keys[i] && w->wd_keys[i] != wd)
        i = (i + 1) & (w->wd_cap - 1);
    return i;
}

static const char *wd_path(const watch *w, int wd)
{
    if (!w->wd_cap)
        return NULL;
    size_t i = wd_slot(w, wd);
    return w->wd_keys[i] ? w->wd_paths[i] : NULL;
}

static void wd_set(watch *w, int wd, const char *path)
{
    if ((w->wd_n + 1) * 2 > w->wd_cap) {
        size_t oc = w->wd_cap;
        int *ok = w->wd_keys;
        char **op = w->wd_paths;
        w->wd_cap = oc ? oc * 2 : 256;
        w->wd_keys = xcalloc(w->wd_cap, sizeof *w->wd_keys);
        w->wd_paths = xcalloc(w->wd_cap, sizeof *w->wd_paths);
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                size_t j = wd_slot(w, ok[i]);
                w->wd_keys[j] = ok[i];
                w->wd_paths[j] = op[i];
            }
        free(ok);
        free(op);
    }
    size_t i = wd_slot(w, wd);
    if (w->wd_keys[i]) {
        free(w->wd_paths[i]);
    } else {
        w->wd_keys[i] = wd;
        w->wd_n++;
    }
    w->wd_paths[i] = xstrdup(path);
}

static void wd_del(watch *w, int wd)
{
    if (!w->wd_cap)
        return;
    size_t i = wd_slot(w, wd);
    if (!w->wd_keys[i])
        return;
    free(w->wd_paths[i]);
    w->wd_keys[i] = 0;
    w->wd_paths[i] = NULL;
    w->wd_n--;
    /* re-seat the entries after it (linear probing) */
    for (size_t j = (i + 1) & (w->wd_cap - 1); w->wd_keys[j]; j = (j + 1) & (w->wd_cap - 1)) {
        int k = w->wd_keys[j];
        char *p = w->wd_paths[j];
        w->wd_keys[j] = 0;
        w->wd_paths[j] = NULL;
        size_t to = wd_slot(w, k);
        w->wd_keys[to] = k;
        w->wd_paths[to] = p;
    }
}

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | \
                    IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW | IN_ONLYDIR)

static void add_watch(watch *w, const char *dir)
{
    int wd = inotify_add_watch(w->fd, dir, WATCH_MASK);
    if (wd >= 0) {
        wd_set(w, wd, dir);
    } else if (errno == ENOSPC && !w->warned_limit) {
        w->warned_limit = true;
        fprintf(stderr, "hiera serve: warning: cannot watch %s: the inotify watches are used up "
                        "(fs.inotify.max_user_watches): changes under it need SIGHUP\n", dir);
    }
}

/* Whether dir is a folder of the environmentpath (its entries are environments). */
static bool is_envpath(const watch *w, const char *dir)
{
    for (size_t i = 0; i < w->nenvpaths; i++)
        if (under(dir, w->envpaths[i]) && under(w->envpaths[i], dir))
            return true;
    return false;
}

/* Watches dir and every folder under it (not .git; depth bound: links to folders are followed
 * once each level). In a folder of the environmentpath, only the environments built so far
 * (env_watched): one never asked for is not looked at. */
static void watch_tree(watch *w, const char *dir, int depth)
{
    if (depth > 32)
        return;
    char *parent = xstrdup(dir), *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = 0;
    bool env_dir = slash && slash != parent && is_envpath(w, parent) && !hv_hash_gets(w->env_watched, slash + 1);
    free(parent);
    if (env_dir)
        return; /* an environment never built: its changes do not matter */
    add_watch(w, dir);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
            continue;
        if (de->d_type != DT_DIR && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
            continue; /* a file: its folder's watch covers it (no stat for each of a large tree's files) */
        char *p = xjoin(dir, "/", de->d_name, NULL);
        struct stat s;
        if (stat(p, &s) == 0 && S_ISDIR(s.st_mode))
            watch_tree(w, p, depth + 1);
        free(p);
    }
    if (d)
        closedir(d);
}

/* Lets go of the watches of dir and every folder under it (renamed away or removed). */
static void unwatch_tree(watch *w, const char *dir)
{
    for (size_t i = 0; i < w->wd_cap; i++) {
        if (!w->wd_keys[i] || !under(w->wd_paths[i], dir))
            continue;
        int wd = w->wd_keys[i];
        inotify_rm_watch(w->fd, wd);
        wd_del(w, wd);
        i = (size_t)-1; /* (the table moved under us: from the start) */
    }
}

static void watch_all(watch *w)
{
    for (size_t i = 0; i < w->nroots; i++)
        watch_tree(w, w->roots[i], 0);
    for (size_t i = 0; i < w->nsingles; i++)
        add_watch(w, w->singles[i]);
}

/* What path belongs to: SC_ENV (*env: the environment's name, malloc'ed), SC_FACTS, SC_LIST
 * (set too for an environment's own folder), SC_SETTINGS, SC_GLOBAL, or SC_NONE (an invalid
 * environment name: nothing reads it). */
static int scope_of(const watch *w, const char *path, char **env, bool *list)
{
    *env = NULL;
    *list = false;
    if (w->facts_dir && under(path, w->facts_dir))
        return SC_FACTS;
    for (size_t i = 0; i < w->nenvpaths; i++) {
        const char *e = w->envpaths[i];
        if (!under(path, e))
            continue;
        size_t n = strlen(e);
        while (n > 1 && e[n - 1] == '/')
            n--;
        if (!path[n]) {
            *list = true;
            return SC_LIST;
        }
        const char *name = path + n + 1, *slash = strchr(name, '/');
        size_t len = slash ? (size_t)(slash - name) : strlen(name);
        if (!valid_env_name(name, len))
            return SC_NONE;
        *env = xstrndup(name, len);
        *list = !slash;
        return SC_ENV;
    }
    if (w->confdir) {
        char *pc = xjoin(w->confdir, "/puppet.conf", NULL);
        bool same = strcmp(pc, path) == 0;
        free(pc);
        if (same)
            return SC_SETTINGS;
    }
    return SC_GLOBAL;
}

static mark *env_mark(watch *w, const char *env)
{
    hv *at = hv_hash_gets(w->env_index, env);
    if (at)
        return &w->marks[hv_int_val(at)];
    if (w->nmarks == w->marks_cap) {
        w->marks_cap = w->marks_cap ? w->marks_cap * 2 : 64;
        w->marks = xrealloc(w->marks, w->marks_cap * sizeof *w->marks);
    }
    w->marks[w->nmarks] = (mark){0, 0};
    hv_hash_sets(w->env_index, env, hv_int((int64_t)w->nmarks));
    return &w->marks[w->nmarks++];
}

/* Files one change of path (a folder's own entries when subtree is false). writing: 1 written
 * and still open, 0 closed or gone, -1 unknown. */
static void record(watch *w, const char *path, bool subtree, int writing, double now)
{
    char *env;
    bool list;
    int scope = scope_of(w, path, &env, &list);
    if (scope == SC_NONE)
        return;
    uint64_t seq = ++w->seq;
    w->last_t = now;
    mark *m = scope == SC_ENV ? env_mark(w, env) : scope == SC_FACTS ? &w->facts
                                                   : scope == SC_LIST ? &w->list
                                                   : scope == SC_SETTINGS ? &w->settings : &w->global;
    *m = (mark){seq, now};
    if (list && scope == SC_ENV)
        w->list = (mark){seq, now};
    if (writing == 1) {
        hv_hash_sets(w->writers, path, hv_float(now));
        hv_hash_sets(w->writer_env, path, hv_str(env ? env : ""));
    } else if (writing == 0 && hv_hash_gets(w->writers, path)) {
        hv *k = hv_str(path);
        hv_hash_del(w->writers, k);
        hv_hash_del(w->writer_env, k);
        hv_decref(k);
    }
    hv *at = hv_hash_gets(w->pend_index, path);
    pend *p;
    if (at) {
        p = &w->pend[hv_int_val(at)];
        free(env);
    } else {
        if (w->npend == w->pend_cap) {
            w->pend_cap = w->pend_cap ? w->pend_cap * 2 : 64;
            w->pend = xrealloc(w->pend, w->pend_cap * sizeof *w->pend);
        }
        p = &w->pend[w->npend];
        *p = (pend){xstrdup(path), env, scope, false, 0, 0};
        hv_hash_sets(w->pend_index, path, hv_int((int64_t)w->npend++));
    }
    p->subtree |= subtree;
    p->seq = seq;
    p->t = now;
    if (list && scope == SC_ENV) {
        /* an environment's folder itself: the list of environments too */
        char *dup = xstrdup(path);
        hv *lat = hv_hash_gets(w->pend_index, "\x01list");
        if (!lat) {
            if (w->npend == w->pend_cap) {
                w->pend_cap *= 2;
                w->pend = xrealloc(w->pend, w->pend_cap * sizeof *w->pend);
            }
            w->pend[w->npend] = (pend){dup, NULL, SC_LIST, false, seq, now};
            hv_hash_sets(w->pend_index, "\x01list", hv_int((int64_t)w->npend++));
        } else {
            free(dup);
            w->pend[hv_int_val(lat)].seq = seq;
            w->pend[hv_int_val(lat)].t = now;
        }
    }
}

static void on_event(watch *w, const struct inotify_event *ev, double now)
{
    if (ev->mask & IN_Q_OVERFLOW) {
        /* events were lost: everything may have changed (watches made again, every path looked at) */
        w->overflow = true;
        w->seq++;
        w->last_t = now;
        w->global = w->list = w->facts = w->settings = (mark){w->seq, now};
        for (size_t i = 0; i < w->nmarks; i++)
            w->marks[i] = (mark){w->seq, now};
        return;
    }
    const char *dir = wd_path(w, ev->wd);
    if (!dir)
        return;
    if (ev->mask & IN_IGNORED) {
        wd_del(w, ev->wd);
        return;
    }
    if (ev->len && (!strcmp(ev->name, ".git") || !ev->name[0]))
        return;
    char *path = ev->len ? xjoin(dir, "/", ev->name, NULL) : xstrdup(dir);
    if ((w->access_log && strcmp(path, w->access_log) == 0) || (w->access_log_real && strcmp(path, w->access_log_real) == 0)) {
        free(path); /* (our own log, written by every request) */
        return;
    }
    bool isdir = ev->mask & IN_ISDIR;
    if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        record(w, path, true, -1, now);
    } else if (isdir && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
        /* a folder arrived (made, or renamed into place whole): watched with everything in it,
         * all of which is new */
        watch_tree(w, path, 0);
        record(w, dir, false, -1, now);
        record(w, path, true, -1, now);
    } else if (isdir && (ev->mask & (IN_DELETE | IN_MOVED_FROM))) {
        unwatch_tree(w, path);
        record(w, dir, false, -1, now);
        record(w, path, true, -1, now);
    } else if (!isdir) {
        if (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO))
            record(w, dir, false, -1, now);
        int writing = ev->mask & (IN_MODIFY | IN_CREATE) ? 1
                      : ev->mask & (IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) ? 0 : -1;
        record(w, path, false, writing, now);
    } else if (ev->mask & IN_ATTRIB) {
        record(w, path, false, -1, now);
    }
    free(path);
}

/* Reads and files every event the kernel holds. Under w->lock. Returns how many. */
static size_t drain_locked(watch *w)
{
    if (w->fd < 0)
        return 0;
    size_t count = 0;
    char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->fd, buf, sizeof buf);
        if (n <= 0)
            break;
        double now = now_seconds();
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            on_event(w, ev, now);
            p += sizeof *ev + ev->len;
            count++;
        }
    }
    if (w->overflow) {
        watch_all(w); /* (the watches again: a folder made meanwhile may have none) */
    }
    if (count)
        pthread_cond_broadcast(&w->cond);
    return count;
}

static void drain(watch *w)
{
    pthread_mutex_lock(&w->lock);
    drain_locked(w);
    pthread_mutex_unlock(&w->lock);
}

/* Whether anything env reads (its own files, the global layer, the settings) may be written right
 * now: a file written and not closed, younger than WRITE_MAX. *until: when that stops counting.
 * Under w->lock. */
static bool writing_in(const watch *w, const char *env, double now, double *until)
{
    bool busy = false;
    for (size_t i = 0; i < hv_hash_len(w->writers); i++) {
        double t = hv_float_val(hv_hash_val_at(w->writers, i));
        if (now - t >= WRITE_MAX)
            continue;
        const char *we = hv_str_ptr(hv_hash_val_at(w->writer_env, i));
        if (!*we || !env || !strcmp(we, env)) {
            busy = true;
            if (t + WRITE_MAX < *until)
                *until = t + WRITE_MAX;
        }
    }
    return busy;
}

/* The last change env reads (its own, the global layer's, the settings'). Under w->lock. */
static mark last_change(watch *w, const char *env)
{
    mark m = w->global;
    if (w->settings.seq > m.seq)
        m = w->settings;
    hv *at = env ? hv_hash_gets(w->env_index, env) : NULL;
    if (at && w->marks[hv_int_val(at)].seq > m.seq)
        m = w->marks[hv_int_val(at)];
    return m;
}

/* ------------------------------------------------------------------ building an environment */

/* What may have changed for one environment since its last build: paths (path -> subtree flag),
 * or everything. */
typedef struct {
    hv *paths;
    bool all, env_conf; /* everything; an environment.conf (read beside the snapshot) */
    double retry_at;    /* 0: try when asked; else not before */
    bool rechecked;     /* new errors were read again once already */
} dirty;

static bool dirty_changed(const char *path, void *data)
{
    const dirty *d = data;
    if (d->all)
        return true;
    hv *e = hv_hash_gets(d->paths, path);
    if (e)
        return true;
    /* a folder above it that came, went or was replaced whole */
    size_t n = strlen(path);
    char *buf = xmalloc(n + 1);
    memcpy(buf, path, n + 1);
    bool found = false;
    for (char *slash = strrchr(buf, '/'); slash && slash > buf && !found; slash = strrchr(buf, '/')) {
        *slash = 0;
        hv *s = hv_hash_gets(d->paths, buf);
        found = s && hv_truthy(s);
    }
    free(buf);
    return found;
}

static void dirty_add(dirty *d, const pend *p)
{
    d->retry_at = 0; /* (a new change: try again at once, and read a broken file again) */
    d->rechecked = false;
    if (!d->paths)
        d->paths = hv_hash();
    hv *old = hv_hash_gets(d->paths, p->path);
    if (!old || !hv_truthy(old))
        hv_hash_sets(d->paths, p->path, hv_bool(p->subtree));
    const char *base = strrchr(p->path, '/');
    if (base && !strcmp(base, "/environment.conf"))
        d->env_conf = true;
    if (p->subtree)
        d->env_conf = true; /* (a folder replaced: its environment.conf may be another) */
}

static void dirty_clear(dirty *d)
{
    hv_decref(d->paths);
    *d = (dirty){0};
}

static size_t dirty_count(const dirty *d) { return d->all ? 1 : d->paths ? hv_hash_len(d->paths) : 0; }

/* The newest modification time (CLOCK_REALTIME seconds) of the files under dir, 0 when none: the
 * folders watch_tree watches (.git left out, symbolic links followed, as there). */
static double newest_mtime(const char *dir, int depth)
{
    double newest = 0;
    DIR *d = depth < 32 ? opendir(dir) : NULL;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
            continue;
        char *p = xjoin(dir, "/", de->d_name, NULL);
        struct stat sb;
        if (stat(p, &sb) == 0) {
            double t = S_ISDIR(sb.st_mode) ? newest_mtime(p, depth + 1)
                                           : (double)sb.st_mtim.tv_sec + (double)sb.st_mtim.tv_nsec / 1e9;
            if (t > newest)
                newest = t;
        }
        free(p);
    }
    closedir(d);
    return newest;
}

/* Builds slot's environment while nothing it reads is being written (waiting for quiet, LAZY_WAIT
 * at most), again when something it reads changed meanwhile; publishes it. For a request that
 * finds it unbuilt. */
static env_build *build_now(serve_state *st, env_slot *slot)
{
    watch *w = st->w;
    double deadline = now_seconds() + LAZY_WAIT;
    /* its folders watched from now on, before anything of it is read; a file written just before
     * may still be open for writing, unseen: not built before its files are FRESH seconds old */
    double fresh_until = 0;
    pthread_mutex_lock(&w->lock);
    if (w->fd >= 0 && !hv_hash_gets(w->env_watched, slot->name)) {
        hv_hash_sets(w->env_watched, slot->name, hv_true());
        double newest = 0;
        for (size_t i = 0; i < w->nenvpaths; i++) {
            char *dir = xjoin(w->envpaths[i], "/", slot->name, NULL);
            struct stat sb;
            if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                watch_tree(w, dir, 0);
                double t = newest_mtime(dir, 0);
                if (t > newest)
                    newest = t;
            }
            free(dir);
        }
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        double age = (double)rt.tv_sec + (double)rt.tv_nsec / 1e9 - newest;
        if (newest > 0 && age >= 0 && age < FRESH)
            fresh_until = now_seconds() + (FRESH - age);
    }
    pthread_mutex_unlock(&w->lock);
    for (;;) {
        pthread_mutex_lock(&w->lock);
        drain_locked(w);
        for (;;) {
            double now = now_seconds(), until = now + WRITE_MAX;
            mark m = last_change(w, slot->name);
            bool busy = writing_in(w, slot->name, now, &until) || now - m.t < SETTLE || now < fresh_until;
            if (!busy || now >= deadline)
                break;
            if (m.t + SETTLE < until && now - m.t < SETTLE)
                until = m.t + SETTLE;
            if (now < fresh_until && fresh_until < until)
                until = fresh_until;
            if (until > deadline)
                until = deadline;
            double wait = until - now + 0.001;
            pthread_mutex_unlock(&w->lock);
            /* (events are read by the watcher thread meanwhile; a short sleep, then read again) */
            struct timespec nap = {0, (long)(wait > 0.05 ? 50e6 : wait * 1e9)};
            nanosleep(&nap, NULL);
            pthread_mutex_lock(&w->lock);
            drain_locked(w);
        }
        uint64_t s0 = w->seq;
        pthread_mutex_unlock(&w->lock);
        settings_ref *sr = current_settings(st);
        env_build *b = build_env(st, slot->name, sr, NULL, NULL, NULL);
        settings_release(sr);
        pthread_mutex_lock(&w->lock);
        drain_locked(w);
        double now = now_seconds(), until = now;
        bool moved = last_change(w, slot->name).seq > s0 || writing_in(w, slot->name, now, &until) || w->overflow;
        pthread_mutex_unlock(&w->lock);
        if (moved && now < deadline) {
            env_build_release(b); /* something it read changed while it was read: again */
            continue;
        }
        slot_publish(slot, b, s0);
        return b;
    }
}

env_build *state_env(serve_state *st, generation *g, const char *name, int *status, char **error)
{
    pthread_mutex_lock(&g->envs_lock);
    size_t at;
    env_slot *slot = find_slot(g, name, &at);
    if (!slot) {
        /* not a folder of the environmentpath: Puppet's default environment when it is
         * production, else Puppet's error for a missing environment */
        pthread_mutex_unlock(&g->envs_lock);
        settings_ref *sr = current_settings(st);
        hiera_error err = {0};
        hiera_environment *env = sr->s ? hiera_environment_load(sr->s, name, &err) : NULL;
        settings_release(sr);
        if (!env) {
            *status = 422;
            *error = xstrdup(err.message ? err.message : "no such environment");
            hiera_error_clear(&err);
            return NULL;
        }
        hiera_environment_free(env);
        pthread_mutex_lock(&g->envs_lock);
        slot = find_slot(g, name, &at);
        if (!slot) {
            slot = slot_new(name, false);
            insert_slot(g, at, slot);
        }
    }
    slot_retain(slot);
    pthread_mutex_unlock(&g->envs_lock);
    __atomic_store_n(&slot->used_ms, now_ms(), __ATOMIC_RELAXED);
    pthread_mutex_lock(&slot->lock);
    while (!slot->built && slot->building)
        pthread_cond_wait(&slot->cond, &slot->lock);
    env_build *b = slot->built ? env_build_retain(slot->built) : NULL;
    bool mine = !b;
    if (mine)
        slot->building = true;
    pthread_mutex_unlock(&slot->lock);
    if (mine) {
        b = env_build_retain(build_now(st, slot));
        pthread_mutex_lock(&slot->lock);
        slot->building = false;
        pthread_cond_broadcast(&slot->cond);
        pthread_mutex_unlock(&slot->lock);
        fprintf(stderr, "hiera serve: environment %s built in %.3f s (%zu files: %zu parsed, %zu shared)\n", name,
                b->build_seconds, b->files, b->parsed, b->shared);
        /* the builder minds the memory bound */
        if (st->o->max_memory) {
            pthread_mutex_lock(&st->w->lock);
            st->w->mem_due = true;
            pthread_cond_broadcast(&st->w->cond);
            pthread_mutex_unlock(&st->w->lock);
        }
    }
    slot_release(slot);
    if (!b->env) {
        *status = 422;
        *error = xstrdup(b->error ? b->error : "no such environment");
        env_build_release(b);
        return NULL;
    }
    return b;
}

/* ------------------------------------------------------------------ a change the server made itself */

static env_slot **built_slots(generation *g, size_t *n);

/* Rebuilds slot's environment at once from its build (every file's stat identity asked again:
 * what the caller wrote is read whatever the watcher has seen of it yet), after any build of it
 * under way; publishes it unless it brings new errors. false when refused; true too when the
 * slot is not built (it is read whole, after the write, when asked). */
static bool rebuild_slot_now(serve_state *st, env_slot *slot, const char *why)
{
    pthread_mutex_lock(&slot->lock);
    while (slot->building)
        pthread_cond_wait(&slot->cond, &slot->lock);
    env_build *cur = slot->built ? env_build_retain(slot->built) : NULL;
    if (cur)
        slot->building = true;
    pthread_mutex_unlock(&slot->lock);
    if (!cur)
        return true;
    watch *w = st->w;
    pthread_mutex_lock(&w->lock);
    drain_locked(w);
    uint64_t s0 = w->seq;
    pthread_mutex_unlock(&w->lock);
    settings_ref *sr = current_settings(st);
    env_build *b = build_env(st, slot->name, sr, cur, NULL, NULL);
    settings_release(sr);
    hv *added = new_errors(cur, b);
    bool ok = hv_array_len(added) == 0;
    if (ok) {
        fprintf(stderr, "hiera serve: environment %s rebuilt (%s) in %.3f s (%zu of %zu files read again, %zu parsed)\n",
                slot->name, why, b->build_seconds, b->files - b->reused, b->files, b->parsed);
        slot_publish(slot, b, s0);
        b = NULL;
        __atomic_add_fetch(&st->reloads_ok, 1, __ATOMIC_RELAXED);
    } else {
        for (size_t i = 0; i < hv_array_len(added); i++) {
            const hv *e = hv_array_get(added, i);
            fprintf(stderr, "hiera serve: reload refused (%s, environment %s), its last good build goes on serving: %s: %s\n",
                    why, slot->name, hv_str_ptr(hv_hash_gets(e, "file")), hv_str_ptr(hv_hash_gets(e, "message")));
        }
        char *json = hiera_render(added, HIERA_RENDER_JSON, NULL);
        pthread_mutex_lock(&slot->lock);
        free(slot->refused);
        slot->refused = json;
        slot->refused_at = time(NULL);
        pthread_mutex_unlock(&slot->lock);
        __atomic_add_fetch(&st->reloads_refused, 1, __ATOMIC_RELAXED);
    }
    hv_decref(added); /* (it holds parts of b's snapshot: before b is released) */
    env_build_release(b);
    env_build_release(cur);
    pthread_mutex_lock(&slot->lock);
    slot->building = false;
    pthread_cond_broadcast(&slot->cond);
    pthread_mutex_unlock(&slot->lock);
    return ok;
}

bool state_rebuild_now(serve_state *st, const char *name, const char *why, uint64_t *generation_id)
{
    generation *g = state_current(st);
    size_t n = 0;
    env_slot **slots;
    if (name) {
        pthread_mutex_lock(&g->envs_lock);
        size_t at;
        env_slot *s = find_slot(g, name, &at);
        slots = xcalloc(2, sizeof *slots);
        if (s)
            slots[n++] = slot_retain(s);
        pthread_mutex_unlock(&g->envs_lock);
    } else {
        slots = built_slots(g, &n);
    }
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        ok &= rebuild_slot_now(st, slots[i], why);
        slot_release(slots[i]);
    }
    free(slots);
    generation_release(g);
    /* a new generation: what is served changed */
    generation *fresh = publish_next(st, NULL, false, 0, 0, 0);
    if (generation_id)
        *generation_id = fresh->id;
    generation_release(fresh);
    return ok;
}

/* ------------------------------------------------------------------ status */

void state_status_of(serve_state *st, state_status *out)
{
    memset(out, 0, sizeof *out);
    watch *w = st->w;
    pthread_mutex_lock(&w->lock);
    drain_locked(w);
    double now = now_seconds(), oldest = now;
    for (size_t i = 0; i < w->npend; i++)
        if (w->pend[i].t < oldest)
            oldest = w->pend[i].t;
    out->pending = w->npend + __atomic_load_n(&st->unserved, __ATOMIC_RELAXED) + (w->hup ? 1 : 0);
    out->pending_seconds = out->pending ? now - oldest : 0;
    pthread_mutex_unlock(&w->lock);
    generation *g = state_current(st);
    pthread_mutex_lock(&g->envs_lock);
    sbuf refused = {0};
    for (size_t i = 0; i < g->nenvs; i++) {
        env_slot *s = g->envs[i];
        out->envs_listed += s->listed;
        pthread_mutex_lock(&s->lock);
        if (s->built) {
            out->envs_built++;
            out->env_bytes += s->built->own_bytes;
        }
        if (s->refused) {
            /* (each refused rebuild's problems: a JSON array; joined into one) */
            size_t n = strlen(s->refused);
            if (n > 2) {
                sb_adds(&refused, refused.len ? "," : "[");
                sb_addn(&refused, s->refused + 1, n - 2);
            }
            if (s->refused_at > out->refused_at)
                out->refused_at = s->refused_at;
        }
        pthread_mutex_unlock(&s->lock);
    }
    pthread_mutex_unlock(&g->envs_lock);
    generation_release(g);
    if (refused.len) {
        sb_adds(&refused, "]");
        out->refused = sb_take(&refused);
    } else {
        sb_free(&refused);
    }
    snapshot_store_usage(&out->parses, &out->parse_bytes);
}

/* ------------------------------------------------------------------ the builder */

/* The environments being looked after: name -> index into dirties (the builder's alone). */
typedef struct {
    hv *index;
    dirty *d;
    char **names;
    size_t n, cap;
} dirty_set;

static dirty *dirty_of(dirty_set *ds, const char *name)
{
    hv *at = hv_hash_gets(ds->index, name);
    if (at)
        return &ds->d[hv_int_val(at)];
    if (ds->n == ds->cap) {
        ds->cap = ds->cap ? ds->cap * 2 : 16;
        ds->d = xrealloc(ds->d, ds->cap * sizeof *ds->d);
        ds->names = xrealloc(ds->names, ds->cap * sizeof *ds->names);
    }
    ds->d[ds->n] = (dirty){0};
    ds->names[ds->n] = xstrdup(name);
    hv_hash_sets(ds->index, name, hv_int((int64_t)ds->n));
    return &ds->d[ds->n++];
}

/* The built slots of g (retained; a new array). */
static env_slot **built_slots(generation *g, size_t *n)
{
    pthread_mutex_lock(&g->envs_lock);
    env_slot **out = xcalloc(g->nenvs + 1, sizeof *out);
    size_t k = 0;
    for (size_t i = 0; i < g->nenvs; i++) {
        pthread_mutex_lock(&g->envs[i]->lock);
        if (g->envs[i]->built || g->envs[i]->building)
            out[k++] = slot_retain(g->envs[i]);
        pthread_mutex_unlock(&g->envs[i]->lock);
    }
    pthread_mutex_unlock(&g->envs_lock);
    *n = k;
    return out;
}

enum { REBUILT, UNCHANGED, REFUSED, LATER };

/* Rebuilds slot's environment from its build for what d says changed. *when: LATER's time. */
static int rebuild(serve_state *st, env_slot *slot, dirty *d, settings_ref *sr, double *when, double *took,
                   size_t *files, size_t *parsed)
{
    watch *w = st->w;
    double now = now_seconds();
    if (d->retry_at > now) {
        *when = d->retry_at;
        return LATER;
    }
    pthread_mutex_lock(&slot->lock);
    if (slot->building) {
        pthread_mutex_unlock(&slot->lock);
        *when = now + SETTLE;
        return LATER;
    }
    env_build *cur = slot->built ? env_build_retain(slot->built) : NULL;
    if (cur)
        slot->building = true;
    pthread_mutex_unlock(&slot->lock);
    if (!cur)
        return UNCHANGED; /* dropped meanwhile: it is read whole when asked */
    int result = LATER;
    pthread_mutex_lock(&w->lock);
    drain_locked(w);
    double until = now + WRITE_MAX;
    mark m = last_change(w, slot->name);
    bool busy = writing_in(w, slot->name, now, &until);
    if (!busy && now - m.t < SETTLE && now - m.t >= 0) {
        busy = true;
        until = m.t + SETTLE;
    }
    uint64_t s0 = w->seq;
    pthread_mutex_unlock(&w->lock);
    env_build *b = NULL;
    if (busy) {
        *when = until;
        goto out;
    }
    b = build_env(st, slot->name, sr, cur, dirty_changed, d);
    *took += b->build_seconds;
    pthread_mutex_lock(&w->lock);
    drain_locked(w);
    now = now_seconds();
    until = now + WRITE_MAX;
    bool moved = last_change(w, slot->name).seq > s0 || writing_in(w, slot->name, now, &until) || w->overflow;
    m = last_change(w, slot->name);
    pthread_mutex_unlock(&w->lock);
    if (moved) {
        /* something it read changed while it was read: again, once things settle */
        *when = now + SETTLE;
        goto out;
    }
    if (b->looked == 0 && !d->all && !d->env_conf && b->settings == cur->settings) {
        /* nothing it reads was among the changes (a file no level names, our own log...) */
        pthread_mutex_lock(&slot->lock);
        slot->seq = s0;
        pthread_mutex_unlock(&slot->lock);
        result = UNCHANGED;
        goto out;
    }
    hv *added = new_errors(cur, b);
    if (hv_array_len(added)) {
        if (!d->rechecked && now - m.t < RECHECK) {
            /* a file that does not parse may be caught half-written: read again once it settles */
            d->rechecked = true;
            *when = m.t + RECHECK;
            hv_decref(added);
            goto out;
        }
        for (size_t i = 0; i < hv_array_len(added); i++) {
            const hv *e = hv_array_get(added, i);
            fprintf(stderr, "hiera serve: reload refused (environment %s), its last good build goes on serving: %s: %s\n",
                    slot->name, hv_str_ptr(hv_hash_gets(e, "file")), hv_str_ptr(hv_hash_gets(e, "message")));
        }
        char *json = hiera_render(added, HIERA_RENDER_JSON, NULL);
        hv_decref(added);
        pthread_mutex_lock(&slot->lock);
        free(slot->refused);
        slot->refused = json;
        slot->refused_at = time(NULL);
        slot->seq = s0;
        pthread_mutex_unlock(&slot->lock);
        __atomic_add_fetch(&st->reloads_refused, 1, __ATOMIC_RELAXED);
        result = REFUSED;
        goto out;
    }
    hv_decref(added);
    fprintf(stderr, "hiera serve: environment %s rebuilt in %.3f s (%zu of %zu files read again, %zu parsed)\n",
            slot->name, b->build_seconds, b->files - b->reused, b->files, b->parsed);
    *files += b->files;
    *parsed += b->parsed;
    slot_publish(slot, b, s0);
    b = NULL;
    __atomic_add_fetch(&st->reloads_ok, 1, __ATOMIC_RELAXED);
    result = REBUILT;
out:
    env_build_release(b);
    env_build_release(cur);
    pthread_mutex_lock(&slot->lock);
    slot->building = false;
    pthread_cond_broadcast(&slot->cond);
    pthread_mutex_unlock(&slot->lock);
    return result;
}

/* Drops the builds asked for least recently while the environments take more than --max-memory. */
static void mind_memory(serve_state *st)
{
    uint64_t max = st->o->max_memory;
    if (!max)
        return;
    state_status s;
    state_status_of(st, &s);
    free(s.refused);
    uint64_t used = s.parse_bytes + s.env_bytes;
    if (used <= max)
        return;
    generation *g = state_current(st);
    size_t n;
    env_slot **slots = built_slots(g, &n);
    generation_release(g);
    /* the least recently asked first */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && slots[j - 1]->used_ms > slots[j]->used_ms; j--) {
            env_slot *t = slots[j];
            slots[j] = slots[j - 1];
            slots[j - 1] = t;
        }
    uint64_t now = now_ms();
    for (size_t i = 0; i < n && used > max; i++) {
        env_slot *slot = slots[i];
        if (now - __atomic_load_n(&slot->used_ms, __ATOMIC_RELAXED) < 1000)
            break; /* (asked for in the last second: kept, whatever the bound) */
        pthread_mutex_lock(&slot->lock);
        env_build *b = slot->building ? NULL : slot->built;
        if (b)
            slot->built = NULL;
        pthread_mutex_unlock(&slot->lock);
        if (!b)
            continue;
        retire(b);
        __atomic_add_fetch(&st->evictions, 1, __ATOMIC_RELAXED);
        state_status_of(st, &s);
        free(s.refused);
        used = s.parse_bytes + s.env_bytes;
        fprintf(stderr, "hiera serve: environment %s dropped from memory (--max-memory: %.1f MiB held now)\n", slots[i]->name,
                (double)used / (1 << 20));
    }
    for (size_t i = 0; i < n; i++)
        slot_release(slots[i]);
    free(slots);
}

static void *builder_main(void *arg)
{
    serve_state *st = arg;
    watch *w = st->w;
    /* Building is background work: this thread (Linux: a thread's own nice value) yields the
     * cores to the threads answering requests, so that a reload under load does not stretch
     * their latency; it still gets its share when the server is busy. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    /* the nodes' facts (the server answers meanwhile, reading a node's own file) */
    {
        generation *g = state_current(st);
        if (g->fs->loading) {
            char *why = NULL;
            double f0 = now_seconds();
            facts_set *fs = load_facts(st->o, &why);
            if (!fs) {
                fprintf(stderr, "hiera serve: cannot read the facts folder: %s\n", why ? why : "");
                free(why);
                fs = load_facts(&(serve_options){.facts_dir = NULL}, &why); /* (none) */
            }
            generation *fresh = publish_next(st, fs, false, now_seconds() - f0, 0, 0);
            facts_set_release(fs);
            pthread_mutex_lock(&st->lock);
            pthread_cond_broadcast(&st->facts_cond);
            pthread_mutex_unlock(&st->lock);
            __atomic_store_n(&st->unserved, 0, __ATOMIC_RELAXED);
            fprintf(stderr, "hiera serve: %zu nodes' facts read in %.3f s\n", hv_array_len(fresh->nodes), fresh->build_seconds);
            generation_release(fresh);
        }
        generation_release(g);
    }
    /* the default environment first: the first answer comes sooner */
    {
        generation *g = state_current(st);
        int status;
        char *error = NULL;
        env_build *b = state_env(st, g, st->o->environment ? st->o->environment : "production", &status, &error);
        env_build_release(b);
        free(error);
        generation_release(g);
    }
    __atomic_store_n(&st->warmed, 1, __ATOMIC_RELEASE);
    unsigned refresh = st->o->puppetdb ? st->o->puppetdb_refresh : 0;
    double next_fetch = now_seconds() + refresh;
    dirty_set ds = {hv_hash(), NULL, NULL, 0, 0};
    double next_retry = 0, next_mem = now_seconds() + 1;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        bool fetch = false;
        for (;;) {
            drain_locked(w);
            double now = now_seconds();
            if (w->quit)
                break;
            if (w->hup) {
                fetch = true;
                break;
            }
            if (refresh && now >= next_fetch) {
                fetch = true;
                break;
            }
            double oldest = now;
            for (size_t i = 0; i < w->npend; i++)
                if (w->pend[i].t < oldest)
                    oldest = w->pend[i].t;
            if (w->overflow || (w->npend && (now - w->last_t >= SETTLE || now - oldest >= MAX_LAG)))
                break;
            if (next_retry && now >= next_retry)
                break;
            if (w->mem_due || (st->o->max_memory && now >= next_mem))
                break;
            double until = now + 3600;
            if (st->o->max_memory && next_mem < until)
                until = next_mem; /* (what was asked a second ago may be dropped now) */
            if (w->npend) {
                double a = w->last_t + SETTLE, b2 = oldest + MAX_LAG;
                until = a < b2 ? a : b2;
            }
            if (next_retry && next_retry < until)
                until = next_retry;
            if (refresh && next_fetch < until)
                until = next_fetch;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double wait = until - now + 0.0005;
            ts.tv_sec += (time_t)wait;
            ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->cond, &w->lock, &ts);
        }
        if (w->quit) {
            pthread_mutex_unlock(&w->lock);
            break;
        }
        /* the changes: taken whole */
        bool overflow = w->overflow, hup = w->hup;
        w->overflow = w->hup = w->mem_due = false;
        pend *batch = w->pend;
        size_t nbatch = w->npend;
        w->pend = NULL;
        w->npend = w->pend_cap = 0;
        hv_decref(w->pend_index);
        w->pend_index = hv_hash();
        size_t leftover = 0;
        for (size_t i = 0; i < ds.n; i++)
            leftover += dirty_count(&ds.d[i]);
        /* (counted before the lock is let go: /healthz never sees them neither pending nor taken) */
        __atomic_store_n(&st->unserved, nbatch + leftover + (fetch || overflow), __ATOMIC_RELAXED);
        pthread_mutex_unlock(&w->lock);
        double t0 = now_seconds();

        bool relist = overflow || hup, refacts = overflow || fetch, resettle = overflow || hup;
        generation *g = state_current(st);
        size_t nb;
        env_slot **built = built_slots(g, &nb);
        for (size_t i = 0; i < nbatch; i++) {
            pend *p = &batch[i];
            switch (p->scope) {
            case SC_FACTS: refacts = true; break;
            case SC_LIST: relist = true; break;
            case SC_SETTINGS: resettle = true; break;
            case SC_ENV:
                for (size_t k = 0; k < nb; k++)
                    if (!strcmp(built[k]->name, p->env))
                        dirty_add(dirty_of(&ds, p->env), p);
                break;
            default: /* the global layer: every environment reads it */
                for (size_t k = 0; k < nb; k++)
                    dirty_add(dirty_of(&ds, built[k]->name), p);
            }
        }
        if (resettle) {
            settings_ref *sr = settings_load(st->o);
            pthread_mutex_lock(&st->lock);
            settings_ref *old = st->settings;
            st->settings = sr;
            pthread_mutex_unlock(&st->lock);
            settings_release(old);
        }
        if (overflow || resettle)
            for (size_t k = 0; k < nb; k++)
                dirty_of(&ds, built[k]->name)->all = true;
        /* the environments: each one rebuilt from its last build */
        settings_ref *sr = current_settings(st);
        bool changed = false;
        double took = 0;
        size_t files = 0, parsed = 0;
        next_retry = 0;
        for (size_t i = 0; i < ds.n; i++) {
            dirty *d = &ds.d[i];
            if (!dirty_count(d))
                continue;
            env_slot *slot = NULL;
            for (size_t k = 0; k < nb && !slot; k++)
                if (!strcmp(built[k]->name, ds.names[i]))
                    slot = built[k];
            if (!slot) {
                dirty_clear(d); /* not built (or gone): read whole when asked */
                continue;
            }
            double when = 0;
            int r = rebuild(st, slot, d, sr, &when, &took, &files, &parsed);
            if (r == LATER) {
                if (!next_retry || when < next_retry)
                    next_retry = when;
                d->retry_at = when;
                continue;
            }
            changed |= r == REBUILT;
            dirty_clear(d);
        }
        settings_release(sr);
        for (size_t k = 0; k < nb; k++)
            slot_release(built[k]);
        free(built);
        /* the nodes and the list of environments */
        facts_set *fs = NULL;
        if (refacts && !(st->o->puppetdb && !fetch && !overflow)) {
            char *why = NULL;
            double f0 = now_seconds();
            fs = load_facts(st->o, &why);
            if (!fs) {
                fprintf(stderr, "hiera serve: cannot fetch the nodes from %s: %s (the facts fetched before are kept)\n",
                        st->o->puppetdb ? st->o->puppetdb->what : "the facts folder", why ? why : "");
                free(why);
            } else if (st->o->puppetdb) {
                fprintf(stderr, "hiera serve: %zu nodes from %s in %.1f s (%zu could not be fetched)\n",
                        hv_hash_len(fs->facts), st->o->puppetdb->what, now_seconds() - f0, hv_hash_len(fs->errors));
            }
            if (fetch)
                next_fetch = now_seconds() + refresh;
        }
        if (changed || relist || fs || hup) {
            generation *fresh = publish_next(st, fs, relist, now_seconds() - t0, files, parsed);
            if (hup || fs || relist)
                fprintf(stderr, "hiera serve: reloaded (%s): generation %llu in %.3f s\n",
                        hup ? "SIGHUP" : overflow ? "events were lost: everything looked at" : fs ? "facts changed" : "environments changed",
                        (unsigned long long)fresh->id, fresh->build_seconds);
            generation_release(fresh);
        }
        if (fs)
            facts_set_release(fs); /* (the generation holds its own reference) */
        generation_release(g);
        for (size_t i = 0; i < nbatch; i++) {
            free(batch[i].path);
            free(batch[i].env);
        }
        free(batch);
        leftover = 0;
        for (size_t i = 0; i < ds.n; i++)
            leftover += dirty_count(&ds.d[i]);
        __atomic_store_n(&st->unserved, leftover, __ATOMIC_RELAXED);
        (void)took;
        mind_memory(st);
        next_mem = now_seconds() + 1;
    }
    for (size_t i = 0; i < ds.n; i++) {
        dirty_clear(&ds.d[i]);
        free(ds.names[i]);
    }
    free(ds.d);
    free(ds.names);
    hv_decref(ds.index);
    return NULL;
}

/* The watcher thread: reads the events as they come (so that the kernel's queue does not
 * overflow while a build runs) and wakes the builder. */
static void *watcher_main(void *arg)
{
    serve_state *st = arg;
    watch *w = st->w;
    for (;;) {
        struct pollfd p[2] = {{w->wake[0], POLLIN, 0}, {w->fd, POLLIN, 0}};
        int n = poll(p, w->fd >= 0 ? 2 : 1, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (p[0].revents & POLLIN) {
            char c = 0;
            if (read(w->wake[0], &c, 1) == 1 && c == 'q')
                return NULL;
        }
        if (w->fd >= 0 && (p[1].revents & POLLIN))
            drain(w);
    }
}

static pthread_t watcher;
static bool watching;

bool state_init(serve_state *st, const serve_options *o)
{
    memset(st, 0, sizeof *st);
    st->o = o;
    st->started = now_seconds();
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->publish_lock, NULL);
    st->settings = settings_load(o);
    watch *w = xcalloc(1, sizeof *w);
    st->w = w;
    w->fd = -1;
    w->wake[0] = w->wake[1] = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->pend_index = hv_hash();
    w->env_index = hv_hash();
    w->writers = hv_hash();
    w->writer_env = hv_hash();
    w->env_watched = hv_hash();
    /* what is watched: the folders as the settings resolve them */
    /* (as the settings resolve them: the paths the snapshots read are those the events name) */
    char *codedir = st->settings->s ? hiera_settings_get(st->settings->s, "codedir", NULL) : NULL;
    char *envpath = st->settings->s ? hiera_settings_get(st->settings->s, "environmentpath", NULL) : NULL;
    char *own_confdir = st->settings->s ? hiera_settings_get(st->settings->s, "confdir", NULL) : NULL;
    if (!codedir && o->codedir)
        codedir = absolute(o->codedir);
    if (!envpath && o->environmentpath)
        envpath = absolute(o->environmentpath);
    if (!envpath && codedir)
        envpath = xjoin(codedir, "/environments", NULL);
    char *paths = xstrdup(envpath ? envpath : ""), *save = NULL;
    for (char *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        w->envpaths = xrealloc(w->envpaths, (w->nenvpaths + 1) * sizeof *w->envpaths);
        w->envpaths[w->nenvpaths++] = xstrdup(p);
        w->roots = xrealloc(w->roots, (w->nroots + 1) * sizeof *w->roots);
        w->roots[w->nroots++] = xstrdup(p);
    }
    free(paths);
    if (codedir) {
        w->roots = xrealloc(w->roots, (w->nroots + 1) * sizeof *w->roots);
        w->roots[w->nroots++] = xstrdup(codedir);
    }
    if (o->facts_dir) {
        w->facts_dir = absolute(o->facts_dir);
        w->roots = xrealloc(w->roots, (w->nroots + 1) * sizeof *w->roots);
        w->roots[w->nroots++] = xstrdup(w->facts_dir);
    }
    if (o->hiera_config) {
        char *abs = absolute(o->hiera_config);
        w->singles = xrealloc(w->singles, (w->nsingles + 1) * sizeof *w->singles);
        w->singles[w->nsingles++] = pn_dirname(abs);
        free(abs);
    }
    if (own_confdir) {
        w->confdir = own_confdir;
        w->singles = xrealloc(w->singles, (w->nsingles + 1) * sizeof *w->singles);
        w->singles[w->nsingles++] = xstrdup(own_confdir);
    }
    free(codedir);
    free(envpath);
    if (o->access_log && strcmp(o->access_log, "-") != 0) {
        char *cwd = o->access_log[0] == '/' ? NULL : getcwd(NULL, 0);
        w->access_log = cwd ? xjoin(cwd, "/", o->access_log, NULL) : xstrdup(o->access_log);
        free(cwd);
        w->access_log_real = realpath(o->access_log, NULL);
    }
    w->no_watch = !o->watch;
    if (o->watch) {
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0)
            fprintf(stderr, "hiera serve: warning: cannot watch the files (%s); SIGHUP reloads\n", strerror(errno));
        else
            watch_all(w);
    }
    /* the nodes (a facts folder is read by the builder: the server answers meanwhile; PuppetDB
     * must list its nodes before the server starts), and the environments (none built yet) */
    char *why = NULL;
    pthread_cond_init(&st->facts_cond, NULL);
    st->running = true; /* (the builder is started before the first request can wait for it) */
    facts_set *fs = o->puppetdb ? load_facts(o, &why) : facts_loading();
    if (!o->puppetdb)
        st->unserved = 1;
    if (!fs) {
        fprintf(stderr, "hiera serve: cannot fetch the nodes from %s: %s\n", o->puppetdb ? o->puppetdb->what : "?", why ? why : "");
        free(why);
        return false;
    }
    st->current = next_generation(st, NULL, fs, true);
    facts_set_release(fs);
    st->current->id = ++st->next_id;
    st->current->build_seconds = now_seconds() - st->started;
    return true;
}

bool state_start(serve_state *st)
{
    watch *w = st->w;
    if (pipe(w->wake) != 0)
        return false;
    watching = pthread_create(&watcher, NULL, watcher_main, st) == 0;
    bool started = pthread_create(&st->builder, NULL, builder_main, st) == 0;
    if (!started) {
        pthread_mutex_lock(&st->lock);
        st->running = false; /* (nobody will read the facts: those waiting for them go on) */
        pthread_cond_broadcast(&st->facts_cond);
        pthread_mutex_unlock(&st->lock);
    }
    return watching && started;
}

void state_request_reload(serve_state *st)
{
    pthread_mutex_lock(&st->w->lock);
    st->w->hup = true;
    pthread_cond_broadcast(&st->w->cond);
    pthread_mutex_unlock(&st->w->lock);
}

void state_stop(serve_state *st)
{
    watch *w = st->w;
    if (watching) {
        ssize_t r = write(w->wake[1], "q", 1);
        (void)r;
        pthread_join(watcher, NULL);
        watching = false;
    }
    pthread_mutex_lock(&st->lock);
    bool running = st->running;
    pthread_mutex_unlock(&st->lock);
    if (running) {
        pthread_mutex_lock(&w->lock);
        w->quit = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(st->builder, NULL);
        pthread_mutex_lock(&st->lock);
        st->running = false;
        pthread_cond_broadcast(&st->facts_cond);
        pthread_mutex_unlock(&st->lock);
    }
}

void state_free(serve_state *st)
{
    generation_release(st->current);
    st->current = NULL;
    settings_release(st->settings);
    pthread_cond_destroy(&st->facts_cond);
    watch *w = st->w;
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    for (int i = 0; i < 2; i++)
        if (w->wake[i] >= 0)
            close(w->wake[i]);
    for (size_t i = 0; i < w->wd_cap; i++)
        free(w->wd_paths[i]);
    free(w->wd_keys);
    free(w->wd_paths);
    for (size_t i = 0; i < w->npend; i++) {
        free(w->pend[i].path);
        free(w->pend[i].env);
    }
    free(w->pend);
    hv_decref(w->pend_index);
    hv_decref(w->env_index);
    free(w->marks);
    hv_decref(w->writers);
    hv_decref(w->writer_env);
    hv_decref(w->env_watched);
    for (size_t i = 0; i < w->nenvpaths; i++)
        free(w->envpaths[i]);
    free(w->envpaths);
    for (size_t i = 0; i < w->nroots; i++)
        free(w->roots[i]);
    free(w->roots);
    for (size_t i = 0; i < w->nsingles; i++)
        free(w->singles[i]);
    free(w->singles);
    free(w->facts_dir);
    free(w->confdir);
    free(w->access_log);
    free(w->access_log_real);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
    st->w = NULL;
    pthread_mutex_destroy(&st->lock);
    pthread_mutex_destroy(&st->publish_lock);
}

/* ------------------------------------------------------------------ per-thread caches */

typedef struct {
    env_build *b;      /* retained */
    hiera_cache *view;
    uint64_t used;
} tview;

typedef struct {
    tview v[VIEWS_PER_THREAD];
    uint64_t tick;
    /* the last context made for a node from the generation's own facts, kept for the thread's
     * next request for the same node, build and redaction: its hierarchy is expanded once, as
     * hiera batch expands it once per node (it uses a view: freed before it) */
    hiera *ctx;
    env_build *ctx_b;
    facts_set *ctx_facts;  /* the facts it was made with (a generation's: retained, they are its) */
    char *ctx_node;
    bool ctx_redact, ctx_busy;
} thread_cache;

static void drop_context(thread_cache *tc)
{
    hiera_free(tc->ctx);
    facts_set_release(tc->ctx_facts);
    tc->ctx_facts = NULL;
    free(tc->ctx_node);
    tc->ctx = NULL;
    tc->ctx_b = NULL;
    tc->ctx_node = NULL;
    tc->ctx_busy = false;
}

static void drop_view(thread_cache *tc, tview *v)
{
    if (tc->ctx_b == v->b)
        drop_context(tc);
    hiera_cache_free(v->view);
    env_build_release(v->b);
    *v = (tview){0};
}

static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void thread_cache_free(void *p)
{
    thread_cache *tc = p;
    drop_context(tc);
    for (size_t i = 0; i < VIEWS_PER_THREAD; i++)
        if (tc->v[i].b)
            drop_view(tc, &tc->v[i]);
    free(tc);
}

static void make_key(void) { pthread_key_create(&cache_key, thread_cache_free); }

/* the thread's caches (made on first use) */
static thread_cache *thread_caches(void)
{
    pthread_once(&cache_key_once, make_key);
    thread_cache *tc = pthread_getspecific(cache_key);
    if (!tc) {
        tc = xcalloc(1, sizeof *tc);
        pthread_setspecific(cache_key, tc);
    }
    return tc;
}

hiera_cache *state_thread_cache(env_build *b)
{
    thread_cache *tc = thread_caches();
    tview *hit = NULL, *spare = NULL;
    for (size_t i = 0; i < VIEWS_PER_THREAD; i++) {
        tview *v = &tc->v[i];
        if (v->b && v->b != b && __atomic_load_n(&v->b->retired, __ATOMIC_ACQUIRE) && !(tc->ctx_busy && tc->ctx_b == v->b))
            drop_view(tc, v); /* its environment was rebuilt or dropped: let it go */
        if (v->b == b)
            hit = v;
    }
    for (size_t i = 0; i < VIEWS_PER_THREAD && !hit; i++) {
        tview *v = &tc->v[i];
        if (!v->b) {
            spare = v;
            break;
        }
        if (!(tc->ctx_busy && tc->ctx_b == v->b) && (!spare || v->used < spare->used))
            spare = v; /* the least recently used */
    }
    if (!hit) {
        hit = spare ? spare : &tc->v[0];
        if (hit->b)
            drop_view(tc, hit);
        hit->b = env_build_retain(b);
        hit->view = hiera_cache_new_from_snapshot(b->snap);
    }
    hit->used = ++tc->tick;
    return hit->view;
}

hiera *state_thread_context(env_build *b, const void *facts, const char *node, bool redact)
{
    thread_cache *tc = thread_caches();
    if (!tc->ctx || tc->ctx_b != b || tc->ctx_facts != facts || tc->ctx_busy || tc->ctx_redact != redact ||
        strcmp(tc->ctx_node, node))
        return NULL;
    tc->ctx_busy = true;
    return tc->ctx;
}

void state_thread_context_keep(env_build *b, const void *facts, hiera *h, const char *node, bool redact)
{
    thread_cache *tc = thread_caches();
    if (tc->ctx_busy)
        return; /* (another kept context is in use: h stays the caller's) */
    drop_context(tc);
    tc->ctx = h;
    tc->ctx_b = b;
    tc->ctx_facts = (facts_set *)facts;
    __atomic_add_fetch(&tc->ctx_facts->refs, 1, __ATOMIC_RELAXED);
    tc->ctx_node = xstrdup(node);
    tc->ctx_redact = redact;
    tc->ctx_busy = true;
}

void state_thread_context_done(hiera *h)
{
    thread_cache *tc = h ? thread_caches() : NULL;
    if (tc && tc->ctx == h)
        tc->ctx_busy = false;
    else
        hiera_free(h);
}
