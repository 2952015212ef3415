/* state.c - the generation `hiera serve` answers from (serve.h): a snapshot of the code directory
 * and the facts of the nodes, built aside and swapped in whole. Readers retain the current
 * generation under a mutex held for a pointer copy; a server thread keeps a cache over the
 * generation it last used and makes a new one when the generation changes. The watcher thread
 * rebuilds after file changes settle; a rebuild that brings new errors (a broken hiera.yaml or
 * data file) is refused and the last good generation goes on serving. */
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
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "engine/snapshot.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ generations */

/* The nodes and their facts, immortal (read by every server thread at once), shared by the
 * generations built from the same fetch. */
typedef struct facts_set {
    int refs; /* atomic */
    hv *facts, *nodes, *errors, *stored;
    hv_nodes immortal;
    uint64_t stamp; /* the facts folder as it was listed (dir_stamp), 0 when not known */
} facts_set;

static void facts_set_release(facts_set *fs)
{
    if (!fs || __atomic_sub_fetch(&fs->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    hv_free_immortal(&fs->immortal);
    free(fs);
}

void generation_release(generation *g)
{
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    hiera_snapshot_release(g->snap);
    facts_set_release(g->fs);
    hv_decref(g->checks);
    pthread_mutex_destroy(&g->check_lock);
    for (size_t i = 0; i < g->nenvs; i++) {
        hiera_environment_free(g->envs[i].env);
        free(g->envs[i].name);
        free(g->envs[i].error);
    }
    free(g->envs);
    pthread_mutex_destroy(&g->envs_lock);
    hiera_settings_free(g->settings);
    free(g);
}

const hiera_environment *state_environment(generation *g, const char *name, const char **error)
{
    pthread_mutex_lock(&g->envs_lock);
    struct served_env *e = NULL;
    for (size_t i = 0; i < g->nenvs && !e; i++)
        if (!strcmp(g->envs[i].name, name))
            e = &g->envs[i];
    if (!e) {
        g->envs = xrealloc(g->envs, (g->nenvs + 1) * sizeof *g->envs);
        e = &g->envs[g->nenvs++];
        memset(e, 0, sizeof *e);
        e->name = xstrdup(name);
        hiera_error err = {0};
        e->env = g->settings ? hiera_environment_load(g->settings, name, &err) : NULL;
        if (!e->env)
            e->error = xstrdup(err.message ? err.message : "Puppet's settings cannot be resolved");
        hiera_error_clear(&err);
    }
    const hiera_environment *env = e->env;
    *error = e->error;
    pthread_mutex_unlock(&g->envs_lock);
    return env;
}

static int cmp_hv_str(const void *a, const void *b)
{
    return strcmp(hv_str_ptr(*(hv *const *)a), hv_str_ptr(*(hv *const *)b));
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

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* What the facts folder holds, as one number: each facts file's name, inode, size, modification
 * and change times (in ns), summed over the entries (readdir's order does not matter). A file
 * written, replaced, added or removed changes it; 0 when the folder cannot be read. */
static uint64_t dir_stamp(const char *dir)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return 0;
    uint64_t sum = 0x9e3779b97f4a7c15ULL, count = 0;
    struct dirent *de;
    int fd = dirfd(d);
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        struct stat st;
        if (fstatat(fd, de->d_name, &st, 0) != 0)
            continue;
        uint64_t h = 0xcbf29ce484222325ULL;
        for (const unsigned char *c = (const unsigned char *)de->d_name; *c; c++)
            h = (h ^ *c) * 0x100000001b3ULL;
        h = mix64(h ^ (uint64_t)st.st_ino);
        h = mix64(h ^ (uint64_t)st.st_size);
        h = mix64(h ^ ((uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec));
        h = mix64(h ^ ((uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec));
        h = mix64(h ^ (uint64_t)st.st_mode);
        sum += h;
        count++;
    }
    closedir(d);
    uint64_t stamp = mix64(sum ^ mix64(count));
    return stamp ? stamp : 1;
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
        hv *name = hv_hash_key_at(got, i);
        hv_hash_set(facts, hv_incref(name), hv_incref(hv_hash_val_at(got, i)));
        hv_hash_set(stored, hv_incref(name), hv_true());
        hv_array_push(names, hv_incref(name));
    }
    hv_decref(got);
    return true;
}

/* The nodes and their facts: the facts folder's files, or PuppetDB's nodes. NULL when PuppetDB
 * cannot list its nodes (*why says why). */
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
    size_t n = hv_array_len(names);
    hv **items = xcalloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++)
        items[i] = hv_incref(hv_array_get(names, i));
    qsort(items, n, sizeof *items, cmp_hv_str);
    hv *sorted = hv_array_sized(n);
    for (size_t i = 0; i < n; i++)
        hv_array_push(sorted, items[i]);
    free(items);
    hv_decref(names);
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

/* A new generation; prev (BORROWED, or NULL) lends the parses of the files that did not change,
 * and its nodes and facts unless fetch (PuppetDB's facts are fetched again on SIGHUP and every
 * puppetdb_refresh seconds, not for a change of the code; a fetch that fails keeps prev's).
 * NULL when there is no prev and PuppetDB cannot list its nodes (said on stderr). */
static generation *build(serve_state *st, const generation *prev, bool fetch)
{
    const serve_options *o = st->o;
    double t0 = now_seconds();
    generation *g = xcalloc(1, sizeof *g);
    g->refs = 1;
    pthread_mutex_init(&g->check_lock, NULL);
    /* Puppet's settings: puppet.conf from the confdir, the command line's folders over it */
    pthread_mutex_init(&g->envs_lock, NULL);
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
    hiera_error serr = {0};
    g->settings = hiera_settings_load(&so, &serr);
    if (!g->settings)
        fprintf(stderr, "hiera serve: Puppet's settings: %s\n", serr.message ? serr.message : "");
    hiera_error_clear(&serr);
    hiera_options ho = HIERA_OPTIONS_INIT;
    if (g->settings) {
        ho.settings = g->settings; /* the folders and each environment's modulepath */
    } else {
        ho.codedir = o->codedir;
        ho.confdir = o->confdir;
        ho.environmentpath = o->environmentpath;
        ho.hiera_config = o->hiera_config;
    }
    /* the facts folder is read again only when it changed (a reload for a data file keeps the
     * 2000 nodes' facts of the benchmark tree: they took most of the reload's time) */
    uint64_t stamp = !o->puppetdb && o->facts_dir ? dir_stamp(o->facts_dir) : 0;
    if (prev && o->puppetdb && !fetch) {
        g->fs = prev->fs;
    } else if (prev && stamp && prev->fs->stamp == stamp) {
        g->fs = prev->fs;
    } else {
        char *why = NULL;
        double f0 = now_seconds();
        g->fs = load_facts(o, &why);
        if (g->fs)
            g->fs->stamp = stamp;
        if (!g->fs) {
            fprintf(stderr, "hiera serve: cannot fetch the nodes from %s: %s%s\n", o->puppetdb->what, why,
                    prev ? " (the facts fetched before are kept)" : "");
            free(why);
            if (!prev) {
                hiera_settings_free(g->settings);
                pthread_mutex_destroy(&g->envs_lock);
                pthread_mutex_destroy(&g->check_lock);
                free(g);
                return NULL;
            }
            g->fs = prev->fs;
        } else if (o->puppetdb) {
            fprintf(stderr, "hiera serve: %zu nodes from %s in %.1f s (%zu could not be fetched)\n",
                    hv_hash_len(g->fs->facts), o->puppetdb->what, now_seconds() - f0,
                    hv_hash_len(g->fs->errors));
        }
    }
    if (g->fs == (prev ? prev->fs : NULL))
        __atomic_add_fetch(&g->fs->refs, 1, __ATOMIC_RELAXED);
    g->facts = g->fs->facts;
    g->nodes = g->fs->nodes;
    g->facts_errors = g->fs->errors;
    g->facts_stored = g->fs->stored;
    g->snap = hiera_snapshot_update(prev ? prev->snap : NULL, &ho, NULL);
    size_t dirs;
    snapshot_stats((const snapshot *)g->snap, &g->files, &dirs, &g->reused);
    g->built = time(NULL);
    g->build_seconds = now_seconds() - t0;
    return g;
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

bool state_init(serve_state *st, const serve_options *o)
{
    memset(st, 0, sizeof *st);
    st->o = o;
    st->current = build(st, NULL, true);
    if (!st->current)
        return false;
    st->current->id = ++st->next_id;
    return true;
}

generation *state_current(serve_state *st)
{
    pthread_mutex_lock(&lock);
    generation *g = st->current;
    __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    return g;
}

/* Reloads one at a time: a reload that started before a file was written (the watcher's) never
 * swaps in after one that started after it (an edit's, which must show the change at once). */
static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;

bool state_reload(serve_state *st, const char *why, bool fetch)
{
    pthread_mutex_lock(&reload_lock);
    generation *cur = state_current(st);
    generation *fresh = build(st, cur, fetch);
    hv *before = error_set(cur->snap), *after = error_set(fresh->snap);
    hv *added = hv_array();
    for (size_t i = 0; i < hv_hash_len(after); i++)
        if (!hv_hash_get(before, hv_hash_key_at(after, i)))
            hv_array_push(added, hv_incref(hv_hash_val_at(after, i)));
    hv_decref(before);
    hv_decref(after);
    bool swap = hv_array_len(added) == 0;
    if (swap) {
        pthread_mutex_lock(&lock);
        fresh->id = ++st->next_id;
        generation *old = st->current;
        st->current = fresh;
        free(st->refused);
        st->refused = NULL;
        pthread_mutex_unlock(&lock);
        generation_release(old);
        __atomic_add_fetch(&st->reloads_ok, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "hiera serve: reloaded (%s): generation %llu in %.3f s (%zu of %zu files parsed again)\n", why,
                (unsigned long long)fresh->id, fresh->build_seconds, fresh->files - fresh->reused, fresh->files);
    } else {
        for (size_t i = 0; i < hv_array_len(added); i++) {
            const hv *e = hv_array_get(added, i);
            fprintf(stderr, "hiera serve: reload refused (%s), still serving generation %llu: %s: %s\n", why,
                    (unsigned long long)cur->id, hv_str_ptr(hv_hash_gets(e, "file")), hv_str_ptr(hv_hash_gets(e, "message")));
        }
        char *json = hiera_render(added, HIERA_RENDER_JSON, NULL);
        hv_decref(added); /* (it holds parts of fresh's snapshot: before fresh is released) */
        added = NULL;
        pthread_mutex_lock(&lock);
        free(st->refused);
        st->refused = json;
        st->refused_at = time(NULL);
        pthread_mutex_unlock(&lock);
        generation_release(fresh);
        __atomic_add_fetch(&st->reloads_refused, 1, __ATOMIC_RELAXED);
    }
    hv_decref(added);
    generation_release(cur);
    pthread_mutex_unlock(&reload_lock);
    return swap;
}

char *state_refused(serve_state *st, time_t *at)
{
    pthread_mutex_lock(&lock);
    char *copy = st->refused ? xstrdup(st->refused) : NULL;
    *at = st->refused_at;
    pthread_mutex_unlock(&lock);
    return copy;
}

/* ------------------------------------------------------------------ the watcher */

static int wake_pipe[2] = {-1, -1};
static pthread_t watcher;
static bool watching;

/* Watches dir and every folder under it (not following links to folders twice: depth bound). */
static void watch_tree(int fd, const char *dir, int depth)
{
    if (depth > 32)
        return;
    if (inotify_add_watch(fd, dir, IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                                       IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF) < 0)
        return;
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
            watch_tree(fd, p, depth + 1);
        free(p);
    }
    if (d)
        closedir(d);
}

static int make_watches(serve_state *st)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0)
        return -1;
    const serve_options *o = st->o;
    if (o->codedir)
        watch_tree(fd, o->codedir, 0);
    if (o->environmentpath) {
        char *paths = xstrdup(o->environmentpath), *save = NULL;
        for (char *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save))
            watch_tree(fd, p, 0);
        free(paths);
    }
    if (o->hiera_config) {
        char *slash = strrchr(o->hiera_config, '/');
        char *dir = slash ? xstrndup(o->hiera_config, (size_t)(slash - o->hiera_config)) : xstrdup(".");
        inotify_add_watch(fd, dir, IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO);
        free(dir);
    }
    if (o->facts_dir)
        watch_tree(fd, o->facts_dir, 0);
    return fd;
}

static void drain(int fd)
{
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

/* Waits for a change (or a wake-up, or the time to fetch PuppetDB's facts again), then for the
 * changes to settle (150 ms of quiet, at most 2 s), then reloads; the watches are made again
 * after each reload (folders come and go). */
static void *watch_main(void *arg)
{
    serve_state *st = arg;
    /* Rebuilding a snapshot is background work: this thread (Linux: a thread's own nice value)
     * yields the cores to the threads answering requests, so that a reload under load does not
     * stretch their latency; it still gets its share when the server is busy. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    unsigned refresh = st->o->puppetdb ? st->o->puppetdb_refresh : 0;
    double next_fetch = now_seconds() + refresh;
    for (;;) {
        int fd = make_watches(st);
        struct pollfd p[2] = {{wake_pipe[0], POLLIN, 0}, {fd, POLLIN, 0}};
        int wait_ms = -1;
        if (refresh) {
            double left = next_fetch - now_seconds();
            wait_ms = left <= 0 ? 0 : left > 86400 ? 86400000 : (int)(left * 1000) + 1;
        }
        int n = poll(p, fd >= 0 ? 2 : 1, wait_ms);
        if (n < 0 && errno == EINTR) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        if (n == 0) {
            /* time to fetch PuppetDB's facts again */
            if (fd >= 0)
                close(fd);
            state_reload(st, "PuppetDB refresh", true);
            next_fetch = now_seconds() + refresh;
            continue;
        }
        char c = 0;
        bool fetch = false;
        const char *why = "files changed";
        if (p[0].revents & POLLIN) {
            if (read(wake_pipe[0], &c, 1) == 1 && c == 'q') {
                if (fd >= 0)
                    close(fd);
                return NULL;
            }
            why = "SIGHUP";
            fetch = true;
        }
        if (fd >= 0) {
            double start = now_seconds();
            drain(fd);
            while (now_seconds() - start < 2.0) {
                struct pollfd q = {fd, POLLIN, 0};
                if (poll(&q, 1, 150) <= 0)
                    break;
                drain(fd);
            }
            close(fd);
        }
        state_reload(st, why, fetch);
        if (fetch)
            next_fetch = now_seconds() + refresh;
    }
}

bool state_watch(serve_state *st)
{
    if (pipe(wake_pipe) != 0)
        return false;
    watching = pthread_create(&watcher, NULL, watch_main, st) == 0;
    return watching;
}

void state_request_reload(serve_state *st)
{
    (void)st;
    if (wake_pipe[1] >= 0) {
        ssize_t w = write(wake_pipe[1], "r", 1);
        (void)w;
    }
}

void state_stop(serve_state *st)
{
    (void)st;
    if (!watching)
        return;
    ssize_t w = write(wake_pipe[1], "q", 1);
    (void)w;
    pthread_join(watcher, NULL);
    watching = false;
}

void state_free(serve_state *st)
{
    generation_release(st->current);
    st->current = NULL;
    free(st->refused);
    st->refused = NULL;
}

/* ------------------------------------------------------------------ per-thread caches */

typedef struct {
    generation *g;
    hiera_cache *cache;
    /* the last context made for a node from the generation's own facts, kept for the thread's
     * next request for the same node, environment and redaction: its hierarchy is expanded once,
     * as hiera batch expands it once per node (it uses cache: freed before it) */
    hiera *ctx;
    char *ctx_env, *ctx_node;
    bool ctx_redact, ctx_busy;
} thread_cache;

static void drop_context(thread_cache *tc)
{
    hiera_free(tc->ctx);
    free(tc->ctx_env);
    free(tc->ctx_node);
    tc->ctx = NULL;
    tc->ctx_env = tc->ctx_node = NULL;
    tc->ctx_busy = false;
}

static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void thread_cache_free(void *p)
{
    thread_cache *tc = p;
    drop_context(tc);
    hiera_cache_free(tc->cache);
    generation_release(tc->g);
    free(tc);
}

static void make_key(void) { pthread_key_create(&cache_key, thread_cache_free); }

hiera_cache *state_thread_cache(generation *g)
{
    pthread_once(&cache_key_once, make_key);
    thread_cache *tc = pthread_getspecific(cache_key);
    if (!tc) {
        tc = xcalloc(1, sizeof *tc);
        pthread_setspecific(cache_key, tc);
    }
    if (tc->g != g) {
        drop_context(tc);
        hiera_cache_free(tc->cache);
        generation_release(tc->g);
        __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
        tc->g = g;
        tc->cache = hiera_cache_new_from_snapshot(g->snap);
    }
    return tc->cache;
}

/* the thread's caches, NULL when it has none yet (the key is made once for the process first) */
static thread_cache *thread_caches(void)
{
    pthread_once(&cache_key_once, make_key);
    return pthread_getspecific(cache_key);
}

hiera *state_thread_context(generation *g, const char *env, const char *node, bool redact)
{
    thread_cache *tc = thread_caches();
    if (!tc || tc->g != g || !tc->ctx || tc->ctx_busy || tc->ctx_redact != redact || strcmp(tc->ctx_env, env) ||
        strcmp(tc->ctx_node, node))
        return NULL;
    tc->ctx_busy = true;
    return tc->ctx;
}

void state_thread_context_keep(generation *g, hiera *h, const char *env, const char *node, bool redact)
{
    thread_cache *tc = thread_caches();
    if (!tc || tc->g != g || tc->ctx_busy)
        return; /* (another kept context is in use: h stays the caller's) */
    drop_context(tc);
    tc->ctx = h;
    tc->ctx_env = xstrdup(env);
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
