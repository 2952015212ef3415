/* snapshot.c - a code directory read whole, once, and shared read-only (see snapshot.h).
 *
 * Building walks the tree as the lookups would: the global hiera.yaml, the environments on the
 * environmentpath with their hiera.yaml, the modules of each environment's module folders with
 * theirs; each configuration's levels (hierarchy and default_hierarchy) give location templates
 * (datadir joined with path, glob or mapped path), which are matched against the files under
 * their literal folder (tmplmatch.h); every file that matches is parsed with the format of the
 * level's function. Parsing goes through a private cache (cache.c), so the rules (and errors)
 * are exactly those of a lookup; the values are then made immortal and the cache dropped. */
#include "engine/snapshot.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/pathname.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/providers.h"
#include "engine/tmplmatch.h"

/* Bounds on the walk (a tree that is not a code directory: / by mistake) */
#define WALK_MAX_DEPTH 32
#define WALK_MAX_ENTRIES 2000000UL

/* A parsed file's immortal nodes, shared by the snapshots that hold the file unchanged (a rebuild
 * takes the previous snapshot's parse of a file whose stat identity did not change). */
typedef struct {
    int refs; /* atomic */
    hv_nodes nodes;
} sblob;

typedef struct {
    uint64_t code; /* 0: empty slot (first: oa_regrow) */
    char *path;
    file_format fmt;
    hv *value;
    herr err;
    sblob *blob;   /* owns value's nodes (NULL with err) */
    dev_t dev;     /* the stat identity the file was parsed with */
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} sfile;

typedef struct {
    uint64_t code;
    char *path;
    int state;   /* 0, 1, 2 as path_state */
    bool listed; /* a directory whose entries are all in the table */
} spath;

struct snapshot {
    int refs; /* atomic */
    sfile *files;
    size_t fcap, fn;
    spath *paths;
    size_t pcap, pn;
    hv_nodes nodes; /* every immortal node, freed with the snapshot */
    hv *environments, *configs, *filelist, *problems;
    size_t ndirs;
    size_t reused;  /* files taken from the previous snapshot */
};

typedef struct {
    snapshot *s;
    const snapshot_spec *spec;
    const snapshot *prev; /* parses to take where the file did not change, or NULL */
    hiera_cache *cache;  /* parses (plain, not frozen) */
    hv *walks;           /* base folder -> array of the file paths under it */
    hv *seen_configs;    /* "layer\npath" -> true */
    size_t entries;      /* counted against WALK_MAX_ENTRIES */
} builder;

/* ------------------------------------------------------------------ tables */

static uint64_t code_of(const char *path, unsigned salt)
{
    uint64_t h = 1469598103934665603ULL ^ salt;
    for (const char *p = path; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    h ^= h >> 29;
    return h | 1;
}

static sfile *file_slot(const snapshot *s, const char *path, file_format fmt, uint64_t code)
{
    if (!s->fcap)
        return NULL;
    size_t mask = s->fcap - 1;
    for (size_t i = (size_t)code & mask;; i = (i + 1) & mask) {
        sfile *f = &s->files[i];
        if (!f->code || (f->code == code && f->fmt == fmt && strcmp(f->path, path) == 0))
            return f;
    }
}

static spath *path_slot(const snapshot *s, const char *path, uint64_t code)
{
    if (!s->pcap)
        return NULL;
    size_t mask = s->pcap - 1;
    for (size_t i = (size_t)code & mask;; i = (i + 1) & mask) {
        spath *p = &s->paths[i];
        if (!p->code || (p->code == code && strcmp(p->path, path) == 0))
            return p;
    }
}

static spath *path_put(snapshot *s, const char *path, int state)
{
    if ((s->pn + 1) * 4 > s->pcap * 3) {
        size_t ncap = s->pcap ? s->pcap * 2 : 1024;
        s->paths = oa_regrow(s->paths, s->pcap, ncap, sizeof *s->paths);
        s->pcap = ncap;
    }
    uint64_t code = code_of(path, 0);
    spath *p = path_slot(s, path, code);
    if (!p->code) {
        p->code = code;
        p->path = xstrdup(path);
        s->pn++;
    }
    p->state = state;
    return p;
}

bool snapshot_get(const snapshot *s, const char *path, file_format fmt, snapshot_file *out)
{
    sfile *f = file_slot(s, path, fmt, code_of(path, (unsigned)fmt + 1));
    if (!f || !f->code)
        return false;
    out->value = f->value;
    out->err = &f->err;
    return true;
}

bool snapshot_next_file(const snapshot *s, size_t *i, const char **path, file_format *fmt, snapshot_file *out)
{
    for (; *i < s->fcap; (*i)++) {
        const sfile *f = &s->files[*i];
        if (!f->code)
            continue;
        *path = f->path;
        *fmt = f->fmt;
        out->value = f->value;
        out->err = &f->err;
        (*i)++;
        return true;
    }
    return false;
}

static bool source_get(const void *src, const char *path, file_format fmt, const hv **value, const herr **err)
{
    snapshot_file f;
    if (!snapshot_get(src, path, fmt, &f))
        return false;
    *value = f.value;
    *err = f.err;
    return true;
}

static int source_path_state(const void *src, const char *path) { return snapshot_path_state(src, path); }
static void source_release(void *src) { snapshot_release(src); }

hiera_cache *snapshot_new_view(snapshot *s)
{
    static const file_source ops = {source_get, source_path_state, source_release};
    return cache_new_view(&ops, snapshot_retain(s));
}

int snapshot_path_state(const snapshot *s, const char *path)
{
    spath *p = path_slot(s, path, code_of(path, 0));
    if (p && p->code)
        return p->state;
    /* not seen: nothing there when its folder was listed whole */
    char *dir = pn_dirname(path);
    spath *d = path_slot(s, dir, code_of(dir, 0));
    int state = d && d->code && d->listed ? 0 : -1;
    free(dir);
    return state;
}

/* ------------------------------------------------------------------ the file system */

static int stat_state(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 ? 0 : S_ISDIR(st.st_mode) ? 2 : 1;
}

/* The state of path, asked once. */
static int state_of(builder *b, const char *path)
{
    spath *p = path_slot(b->s, path, code_of(path, 0));
    if (p && p->code)
        return p->state;
    return path_put(b->s, path, stat_state(path))->state;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Lists dir (once): every entry's state goes into the table. Returns the entries' full paths
 * (sorted, malloc'ed, NULL-terminated), or NULL when dir cannot be read. */
static char **list_dir(builder *b, const char *dir)
{
    if (state_of(b, dir) != 2)
        return NULL;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t n = 0, cap = 16;
    char **names = xmalloc(cap * sizeof *names);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (++b->entries > WALK_MAX_ENTRIES)
            break;
        if (n + 1 == cap) {
            cap *= 2;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = strcmp(dir, "/") ? xjoin(dir, "/", de->d_name, NULL) : xjoin("/", de->d_name, NULL);
    }
    closedir(d);
    names[n] = NULL;
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++)
        state_of(b, names[i]);
    spath *p = path_put(b->s, dir, 2);
    if (!p->listed) {
        p->listed = true;
        b->s->ndirs++;
    }
    return names;
}

static void free_list(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static void walk(builder *b, const char *dir, int depth, hv *out)
{
    char **names = list_dir(b, dir);
    for (size_t i = 0; names && names[i]; i++) {
        int st = state_of(b, names[i]);
        if (st == 1)
            hv_array_push(out, hv_str(names[i]));
        else if (st == 2 && depth < WALK_MAX_DEPTH)
            walk(b, names[i], depth + 1, out);
    }
    free_list(names);
}

/* Every file under base (recursively), listed once per base. BORROWED. */
static const hv *files_under(builder *b, const char *base)
{
    hv *known = hv_hash_gets(b->walks, base);
    if (known)
        return known;
    hv *list = hv_array();
    walk(b, base, 0, list);
    hv_hash_sets(b->walks, base, list);
    return list;
}

/* ------------------------------------------------------------------ parsing */

static void add_problem(snapshot *s, const char *code, const herr *e, const char *file)
{
    hv *p = hv_hash();
    hv_hash_sets(p, "severity", hv_str("error"));
    hv_hash_sets(p, "code", hv_str(code));
    hv_hash_sets(p, "file", hv_str(e->file ? e->file : file ? file : ""));
    hv_hash_sets(p, "line", hv_int(e->line));
    hv_hash_sets(p, "column", hv_int(e->col));
    hv_hash_sets(p, "message", hv_str(e->msg ? e->msg : ""));
    hv_array_push(s->problems, p);
}

static const char *format_name(file_format f)
{
    switch (f) {
    case FMT_YAML: return "yaml";
    case FMT_JSON: return "json";
    case FMT_HOCON: return "hocon";
    case FMT_CONFIG: return "hiera.yaml";
    case FMT_YAML3: return "yaml (hiera 3)";
    case FMT_TEXT: return "text";
    }
    return "?";
}

static void collect_warning(int severity, const char *code, const char *file, int line, int col, const char *message,
                            void *data)
{
    snapshot *s = data;
    hv *p = hv_hash();
    hv_hash_sets(p, "severity", hv_str(severity == DIAG_ERROR ? "error" : "warning"));
    hv_hash_sets(p, "code", hv_str(code));
    hv_hash_sets(p, "file", hv_str(file ? file : ""));
    hv_hash_sets(p, "line", hv_int(line));
    hv_hash_sets(p, "column", hv_int(col));
    hv_hash_sets(p, "message", hv_str(message));
    hv_array_push(s->problems, p);
}

/* Parses path with fmt into the snapshot (once). */
static void load(builder *b, const char *path, file_format fmt)
{
    snapshot *s = b->s;
    uint64_t code = code_of(path, (unsigned)fmt + 1);
    sfile *f = file_slot(s, path, fmt, code);
    if (f && f->code)
        return;
    if ((s->fn + 1) * 4 > s->fcap * 3) {
        size_t ncap = s->fcap ? s->fcap * 2 : 256;
        s->files = oa_regrow(s->files, s->fcap, ncap, sizeof *s->files);
        s->fcap = ncap;
        f = file_slot(s, path, fmt, code);
    }
    f->code = code;
    f->path = xstrdup(path);
    f->fmt = fmt;
    s->fn++;
    struct stat st;
    bool have_stat = stat(path, &st) == 0;
    sfile *old = b->prev && have_stat ? file_slot(b->prev, path, fmt, code) : NULL;
    if (old && old->code && old->value && old->dev == st.st_dev && old->ino == st.st_ino && old->size == st.st_size &&
        old->mtime.tv_sec == st.st_mtim.tv_sec && old->mtime.tv_nsec == st.st_mtim.tv_nsec &&
        old->ctime.tv_sec == st.st_ctim.tv_sec && old->ctime.tv_nsec == st.st_ctim.tv_nsec) {
        /* unchanged since the previous snapshot parsed it: its parse, shared */
        f->value = old->value;
        f->blob = old->blob;
        __atomic_add_fetch(&f->blob->refs, 1, __ATOMIC_RELAXED);
        s->reused++;
    } else {
        f->value = cache_load(b->cache, path, fmt, &f->err);
        if (f->value) {
            f->blob = xcalloc(1, sizeof *f->blob);
            f->blob->refs = 1;
            hv_make_immortal(f->value, &f->blob->nodes);
        }
    }
    if (have_stat) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->size = st.st_size;
        f->mtime = st.st_mtim;
        f->ctime = st.st_ctim;
    }
    hv *rec = hv_hash();
    hv_hash_sets(rec, "path", hv_str(path));
    hv_hash_sets(rec, "format", hv_str(format_name(fmt)));
    if (!f->value) {
        hv_hash_sets(rec, "error", hv_str(f->err.msg ? f->err.msg : ""));
        add_problem(s, fmt == FMT_CONFIG ? "config-syntax" : "data-syntax", &f->err, path);
    }
    hv_array_push(s->filelist, rec);
}

/* ------------------------------------------------------------------ levels */

/* The files a location template can name, parsed with fmt. */
static void load_template(builder *b, const char *tmpl, bool glob, file_format fmt)
{
    if (!tmpl_is_pattern(tmpl, glob)) {
        /* a path without variables: it is there or not */
        char *dir = pn_dirname(tmpl);
        free_list(list_dir(b, dir)); /* its folder listed: what is not there is known absent */
        free(dir);
        if (state_of(b, tmpl) == 1)
            load(b, tmpl, fmt);
        return;
    }
    char *base = tmpl_base_dir(tmpl, glob);
    const hv *files = files_under(b, base);
    for (size_t i = 0; i < hv_array_len(files); i++) {
        const char *p = hv_str_ptr(hv_array_get(files, i));
        if (tmpl_match(tmpl, p, glob))
            load(b, p, fmt);
    }
    free(base);
}

static void load_levels(builder *b, const hcfg *cfg, const hlevel *levels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const hlevel *lvl = &levels[i];
        const provider_def *pd = provider_find(lvl->fname ? lvl->fname : "");
        if (!pd)
            continue; /* a function we do not have: the lookup fails, nothing to read */
        char *datadir;
        if (lvl->v3_datadir_abs)
            datadir = lvl->datadir ? xstrdup(lvl->datadir)
                                   : xasprintf("%s/environments/%%{::environment}/hieradata", b->spec->codedir);
        else
            datadir = pn_plus(cfg->root, lvl->datadir);
        if (datadir[0] != '/') { /* Hiera 3's relative datadir: relative to the working folder */
            char *cwd = getcwd(NULL, 0);
            char *abs = pn_plus(cwd ? cwd : "/", datadir);
            free(cwd);
            free(datadir);
            datadir = abs;
        }
        bool glob = lvl->lkind == LOC_GLOB || lvl->lkind == LOC_GLOBS;
        for (size_t j = 0; j < lvl->nlocs; j++) {
            const char *loc;
            char *owned = NULL;
            switch (lvl->lkind) {
            case LOC_PATH: case LOC_PATHS: case LOC_GLOB: case LOC_GLOBS:
                loc = lvl->locs[j];
                if (lvl->extension) {
                    size_t ll = strlen(loc), el = strlen(lvl->extension);
                    if (ll < el || strcmp(loc + ll - el, lvl->extension) != 0)
                        loc = owned = xjoin(loc, lvl->extension, NULL);
                }
                break;
            case LOC_MAPPED_PATHS:
                if (j != 2)
                    continue;
                loc = lvl->locs[2];
                break;
            default:
                continue; /* URIs and levels without locations read no files */
            }
            char *tmpl = pn_plus(datadir, loc);
            load_template(b, tmpl, glob, pd->format);
            free(tmpl);
            free(owned);
        }
        free(datadir);
    }
}

static void add_config(builder *b, const char *path, layer_kind kind, const char *env, const char *module)
{
    char k[2] = {(char)('0' + (int)kind), 0};
    char *sig = xjoin(k, "\n", path, NULL);
    bool seen = hv_hash_gets(b->seen_configs, sig) != NULL;
    if (!seen)
        hv_hash_sets(b->seen_configs, sig, hv_true());
    free(sig);
    if (seen)
        return;
    hv *rec = hv_hash();
    hv_hash_sets(rec, "path", hv_str(path));
    hv_hash_sets(rec, "layer", hv_str(kind == LAYER_GLOBAL ? "global" : kind == LAYER_ENV ? "environment" : "module"));
    hv_hash_sets(rec, "environment", env ? hv_str(env) : hv_undef());
    hv_hash_sets(rec, "module", module ? hv_str(module) : hv_undef());
    bool exists = state_of(b, path) == 1;
    hv_hash_sets(rec, "exists", hv_bool(exists));
    hv_array_push(b->s->configs, rec);
    if (exists)
        load(b, path, FMT_CONFIG);
    bool ignored = false;
    herr e = {0};
    hcfg *cfg = config_load(b->cache, path, kind, &ignored, &e);
    if (!cfg) {
        if (herr_isset(&e) && exists) {
            /* a file that does not parse is reported by load(); this is a config that parsed
             * but is not valid */
            snapshot_file f;
            if (snapshot_get(b->s, path, FMT_CONFIG, &f) && f.value)
                add_problem(b->s, "config-invalid", &e, path);
        }
        herr_clear(&e);
        return;
    }
    if (herr_isset(&cfg->lazy_err))
        add_problem(b->s, "config-invalid", &cfg->lazy_err, path);
    load_levels(b, cfg, cfg->levels, cfg->nlevels);
    if (cfg->has_default_hierarchy)
        load_levels(b, cfg, cfg->dlevels, cfg->ndlevels);
    config_free(cfg);
}

/* Puppet's environment names: /\A[a-z0-9_]+\z/ (Puppet::Node::Environment.valid_name?) */
static bool valid_env_name(const char *n)
{
    if (!*n)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static bool wanted_env(const snapshot_spec *spec, const char *name)
{
    if (!spec->environments)
        return true;
    for (size_t i = 0; i < spec->nenvironments; i++)
        if (strcmp(spec->environments[i], name) == 0)
            return true;
    return false;
}

static void add_modules(builder *b, const char *root, const char *env)
{
    char **mods = list_dir(b, root);
    for (size_t i = 0; mods && mods[i]; i++) {
        const char *name = strrchr(mods[i], '/') + 1;
        if (state_of(b, mods[i]) != 2 || !valid_module_name(name))
            continue;
        free_list(list_dir(b, mods[i]));
        char *cfg = xjoin(mods[i], "/hiera.yaml", NULL);
        if (state_of(b, cfg) == 1)
            add_config(b, cfg, LAYER_MODULE, env, name);
        free(cfg);
    }
    free_list(mods);
}

snapshot *snapshot_build(const snapshot_spec *spec, const snapshot *prev)
{
    snapshot *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->environments = hv_array();
    s->configs = hv_array();
    s->filelist = hv_array();
    s->problems = hv_array();
    builder b = {s, spec, prev, cache_new(), hv_hash(), hv_hash(), 0};
    /* warnings met while parsing (a data file that is not a hash...) are kept as problems */
    diag_sink saved;
    diag_enter((diag_sink){.fn = collect_warning, .data = s}, &saved);
    if (spec->disk_cache)
        cache_use_disk(b.cache, spec->disk_cache);

    if (spec->codedir)
        free_list(list_dir(&b, spec->codedir));
    if (spec->global_config) {
        char *dir = pn_dirname(spec->global_config);
        free_list(list_dir(&b, dir));
        free(dir);
        add_config(&b, spec->global_config, LAYER_GLOBAL, NULL, NULL);
    }
    char *paths = xstrdup(spec->environmentpath ? spec->environmentpath : ""), *save = NULL;
    for (char *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        char **envs = list_dir(&b, p);
        for (size_t i = 0; envs && envs[i]; i++) {
            const char *name = strrchr(envs[i], '/') + 1;
            if (state_of(&b, envs[i]) != 2 || !valid_env_name(name) || !wanted_env(spec, name))
                continue;
            hv_array_push(s->environments, hv_str(name));
            free_list(list_dir(&b, envs[i]));
            char *cfg = xjoin(envs[i], "/hiera.yaml", NULL);
            if (state_of(&b, cfg) == 1)
                add_config(&b, cfg, LAYER_ENV, name, NULL);
            free(cfg);
            char **roots = spec->module_roots ? spec->module_roots(name, spec->module_roots_data) : NULL;
            if (roots) {
                for (size_t r = 0; roots[r]; r++)
                    add_modules(&b, roots[r], name);
                free_list(roots);
            } else {
                char *mods = xjoin(envs[i], "/modules", NULL);
                add_modules(&b, mods, name);
                free(mods);
                if (spec->codedir) {
                    mods = xjoin(spec->codedir, "/modules", NULL);
                    add_modules(&b, mods, name);
                    free(mods);
                }
            }
        }
        free_list(envs);
    }
    free(paths);
    hv_decref(b.walks);
    hv_decref(b.seen_configs);
    cache_free(b.cache);
    diag_leave(&saved);
    /* what snapshot_describe and snapshot_problems hand out is read by any thread too */
    hv_make_immortal(s->environments, &s->nodes);
    hv_make_immortal(s->configs, &s->nodes);
    hv_make_immortal(s->filelist, &s->nodes);
    hv_make_immortal(s->problems, &s->nodes);
    return s;
}

snapshot *snapshot_retain(snapshot *s)
{
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void snapshot_release(snapshot *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->fcap; i++)
        if (s->files[i].code) {
            sfile *f = &s->files[i];
            free(f->path);
            herr_clear(&f->err);
            if (f->blob && __atomic_sub_fetch(&f->blob->refs, 1, __ATOMIC_ACQ_REL) == 0) {
                hv_free_immortal(&f->blob->nodes);
                free(f->blob);
            }
        }
    free(s->files);
    for (size_t i = 0; i < s->pcap; i++)
        free(s->paths[i].path);
    free(s->paths);
    hv_free_immortal(&s->nodes); /* the lists of snapshot_describe too */
    free(s);
}

hv *snapshot_describe(const snapshot *s)
{
    hv *d = hv_hash();
    hv_hash_sets(d, "environments", s->environments); /* immortal: no reference to take */
    hv_hash_sets(d, "configs", s->configs);
    hv_hash_sets(d, "files", s->filelist);
    return d;
}

hv *snapshot_problems(const snapshot *s) { return s->problems; }

void snapshot_stats(const snapshot *s, size_t *files, size_t *dirs, size_t *reused)
{
    *files = s->fn;
    *dirs = s->ndirs;
    *reused = s->reused;
}
