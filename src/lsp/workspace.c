/* workspace.c - the workspace of hiera lsp: the code it reads, found as `hiera check` finds it
 * (a code directory: its environments; a control repository or an environment folder: linked as
 * an environment of a private code directory), Puppet's settings and environment, a snapshot of
 * the tree, the manifests' classes, the nodes shown and their facts, and every data file with its
 * level in hierarchy order. Built on a background thread, immutable afterwards, shared by the
 * request threads (ws_retain/ws_release). */
#include "lsp/lsp_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "check/check.h"
#include "base/pathname.h"
#include "facts/puppetdb.h"
#include "engine/config.h"
#include "engine/tmplmatch.h"

/* ------------------------------------------------------------------ settings */

void ws_settings_free(ws_settings *s)
{
    free(s->root);
    for (size_t i = 0; i < s->nnodes; i++)
        free(s->nodes[i]);
    free(s->nodes);
    free(s->facts_dir);
    free(s->puppetdb);
    free(s->environment);
    free(s->codedir);
    free(s->confdir);
    memset(s, 0, sizeof *s);
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

void ws_settings_copy(ws_settings *d, const ws_settings *s)
{
    memset(d, 0, sizeof *d);
    d->root = dup_or_null(s->root);
    d->nodes = xcalloc(s->nnodes + 1, sizeof *d->nodes);
    for (size_t i = 0; i < s->nnodes; i++)
        d->nodes[i] = xstrdup(s->nodes[i]);
    d->nnodes = s->nnodes;
    d->facts_dir = dup_or_null(s->facts_dir);
    d->puppetdb = dup_or_null(s->puppetdb);
    d->environment = dup_or_null(s->environment);
    d->codedir = dup_or_null(s->codedir);
    d->confdir = dup_or_null(s->confdir);
}

/* a string setting: a non-empty string sets it, null or "" clears it, anything else leaves it */
static void set_str(char **dst, const hv *v)
{
    if (hv_is(v, HV_STRING) || hv_is(v, HV_UNDEF)) {
        free(*dst);
        *dst = hv_is(v, HV_STRING) && hv_str_len(v) ? xstrdup(hv_str_ptr(v)) : NULL;
    }
}

void ws_settings_apply(ws_settings *s, const hv *v)
{
    if (!hv_is(v, HV_HASH))
        return;
    if (jobj(v, "hiera"))
        v = jobj(v, "hiera");
    const hv *nodes = jget(v, "node");
    if (!nodes)
        nodes = jget(v, "nodes");
    if (nodes) {
        for (size_t i = 0; i < s->nnodes; i++)
            free(s->nodes[i]);
        s->nnodes = 0;
        size_t n = hv_is(nodes, HV_ARRAY) ? hv_array_len(nodes) : 1;
        s->nodes = xrealloc(s->nodes, (n + 1) * sizeof *s->nodes);
        for (size_t i = 0; i < n; i++) {
            const hv *e = hv_is(nodes, HV_ARRAY) ? hv_array_get(nodes, i) : nodes;
            if (hv_is(e, HV_STRING) && hv_str_len(e))
                s->nodes[s->nnodes++] = xstrdup(hv_str_ptr(e));
        }
    }
    set_str(&s->facts_dir, jget(v, "factsDir"));
    set_str(&s->puppetdb, jget(v, "puppetdb"));
    set_str(&s->environment, jget(v, "environment"));
    set_str(&s->codedir, jget(v, "codedir"));
    set_str(&s->confdir, jget(v, "confdir"));
}

/* ------------------------------------------------------------------ paths */

static char *map_prefix(const char *path, const char *from, const char *to)
{
    size_t n = strlen(from);
    if (from && to && strcmp(from, to) != 0 && !strncmp(path, from, n) && (path[n] == '/' || !path[n]))
        return xjoin(to, path + n, NULL);
    return xstrdup(path);
}

char *ws_real_path(const ws *w, const char *p) { return w->env_dir ? map_prefix(p, w->env_dir, w->real_dir) : xstrdup(p); }
char *ws_engine_path(const ws *w, const char *p) { return w->env_dir ? map_prefix(p, w->real_dir, w->env_dir) : xstrdup(p); }

static char *real_path(const char *p)
{
    char *r = realpath(p, NULL);
    return r ? r : xstrdup(p);
}

static bool valid_env_name(const char *n)
{
    if (!*n)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* Where the code is: sets codedir, envpath, env_name, env_dir, real_dir, confdir, hiera_config. */
static bool locate(ws *w)
{
    const ws_settings *s = &w->set;
    w->env_name = xstrdup(s->environment && valid_env_name(s->environment) ? s->environment : "production");
    char *root = s->root ? real_path(s->root) : getcwd(NULL, 0);
    if (!root)
        root = xstrdup("/");
    /* a code directory, else an environment, as hiera check reads a folder (a module too) */
    bool codedir = s->codedir || check_tree_kind_of(root) == CHECK_TREE_CODEDIR;
    if (codedir) {
        w->codedir = s->codedir ? real_path(s->codedir) : xstrdup(root);
        w->envpath = xjoin(w->codedir, "/environments", NULL);
        w->env_dir = xjoin(w->envpath, "/", w->env_name, NULL);
        w->real_dir = xstrdup(w->env_dir);
        w->confdir = s->confdir ? real_path(s->confdir) : xstrdup(w->codedir);
        if (!path_is_dir(w->env_dir)) {
            w->error = xasprintf("no environment '%s' in %s", w->env_name, w->envpath);
            free(root);
            return false;
        }
    } else {
        if (!path_is_dir(root)) {
            w->error = xasprintf("%s: no such folder", root);
            free(root);
            return false;
        }
        char tmpl[] = "/tmp/hiera-lsp-XXXXXX";
        const char *tmp = getenv("TMPDIR");
        char *t = tmp && *tmp ? xjoin(tmp, "/hiera-lsp-XXXXXX", NULL) : xstrdup(tmpl);
        if (!mkdtemp(t)) {
            w->error = xasprintf("cannot make a temporary folder %s: %s", t, strerror(errno));
            free(t);
            free(root);
            return false;
        }
        w->tmpdir = t;
        bool made = check_tmp_codedir(t, w->env_name, root, &w->codedir, &w->envpath, &w->env_dir, &w->error);
        w->real_dir = xstrdup(root);
        if (!made) {
            free(root);
            return false;
        }
        w->confdir = s->confdir ? real_path(s->confdir) : xstrdup(w->codedir);
        w->check_path = w->real_dir;
    }
    free(root);
    w->hiera_config = check_hiera_config(w->codedir, w->confdir);
    return true;
}

/* ------------------------------------------------------------------ manifests */

static void add_manifests(pp_index *pp, const char *dir, int depth)
{
    if (depth > 32)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char *p = xjoin(dir, "/", de->d_name, NULL);
        struct stat st;
        size_t n = strlen(de->d_name);
        if (stat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                add_manifests(pp, p, depth + 1);
            else if (S_ISREG(st.st_mode) && n > 3 && !strcmp(de->d_name + n - 3, ".pp"))
                pp_index_add_file(pp, p);
        }
        free(p);
    }
    closedir(d);
}

static char **module_roots(const char *environment, void *data)
{
    const ws *w = data;
    size_t n = hiera_environment_modulepath_count(w->henv);
    char **roots = xcalloc(n + 1, sizeof *roots);
    for (size_t i = 0; i < n; i++)
        roots[i] = xstrdup(hiera_environment_modulepath(w->henv, i));
    return roots;
}

static void read_modules(ws *w)
{
    w->module_names = hv_hash();
    w->pp = pp_index_new();
    size_t n = hiera_environment_modulepath_count(w->henv);
    for (size_t r = 0; r < n; r++) {
        const char *root = hiera_environment_modulepath(w->henv, r);
        DIR *d = opendir(root);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' || !valid_module_name(de->d_name) || hv_hash_gets(w->module_names, de->d_name))
                continue;
            char *dir = xjoin(root, "/", de->d_name, NULL);
            if (path_is_dir(dir)) {
                hv_hash_sets(w->module_names, de->d_name, hv_str(dir));
                static const char *const subs[] = {"/manifests", "/types", "/functions", "/plans"};
                for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
                    char *m = xjoin(dir, subs[i], NULL);
                    add_manifests(w->pp, m, 0);
                    free(m);
                }
            }
            free(dir);
        }
        closedir(d);
    }
    char *m = xjoin(w->env_dir, "/manifests", NULL);
    add_manifests(w->pp, m, 0);
    free(m);
    w->aliases = ptype_aliases_new();
    for (size_t i = 0; i < w->pp->naliases; i++)
        ptype_aliases_add(w->aliases, w->pp->aliases[i].name, w->pp->aliases[i].body);
}

/* ------------------------------------------------------------------ data files and levels */

typedef struct {
    char *tmpl;
    bool glob;
    char *level;
    int layer, order;
} ltmpl;

static void level_tmpls(const hcfg *cfg, const hlevel *levels, size_t n, int layer, int *order, ltmpl **out,
                        size_t *nout)
{
    for (size_t i = 0; i < n; i++, (*order)++) {
        const hlevel *L = &levels[i];
        if (L->v3_datadir_abs || !L->datadir)
            continue;
        char *datadir = pn_plus(cfg->root, L->datadir);
        size_t first = L->lkind == LOC_MAPPED_PATHS ? 2 : 0, step = L->lkind == LOC_MAPPED_PATHS ? 3 : 1;
        for (size_t j = first; j < L->nlocs; j += step) {
            *out = xrealloc(*out, (*nout + 1) * sizeof **out);
            char *t = pn_plus(datadir, L->locs[j]);
            if (L->extension) {
                char *te = xjoin(t, L->extension, NULL);
                free(t);
                t = te;
            }
            (*out)[(*nout)++] = (ltmpl){t, L->lkind == LOC_GLOB || L->lkind == LOC_GLOBS, xstrdup(L->name), layer, *order};
        }
        free(datadir);
    }
}

static void add_config_tmpls(hiera_cache *cache, const char *path, layer_kind layer, int *order, ltmpl **out,
                             size_t *nout)
{
    bool ignored = false;
    herr err = {0};
    hcfg *cfg = config_load(cache, path, layer, &ignored, &err);
    herr_clear(&err);
    if (!cfg)
        return;
    level_tmpls(cfg, cfg->levels, cfg->nlevels, (int)layer, order, out, nout);
    if (cfg->has_default_hierarchy)
        level_tmpls(cfg, cfg->dlevels, cfg->ndlevels, (int)layer, order, out, nout);
    config_free(cfg);
}

static int cmp_file(const void *a, const void *b)
{
    const ws_file *x = a, *y = b;
    if (x->order != y->order)
        return x->order < y->order ? -1 : 1;
    return strcmp(x->path, y->path);
}

static void index_files(ws *w)
{
    ltmpl *t = NULL;
    size_t nt = 0;
    int order = 0;
    hiera_cache *cache = snapshot_new_view(w->snap);
    add_config_tmpls(cache, w->hiera_config, LAYER_GLOBAL, &order, &t, &nt);
    char *p = xjoin(w->env_dir, "/hiera.yaml", NULL);
    add_config_tmpls(cache, p, LAYER_ENV, &order, &t, &nt);
    free(p);
    for (size_t i = 0; i < hv_hash_len(w->module_names); i++) {
        p = xjoin(hv_str_ptr(hv_hash_val_at(w->module_names, i)), "/hiera.yaml", NULL);
        if (path_is_file(p))
            add_config_tmpls(cache, p, LAYER_MODULE, &order, &t, &nt);
        free(p);
    }
    cache_free(cache);
    size_t it = 0, cap = 0;
    const char *path;
    file_format fmt;
    snapshot_file sf;
    while (snapshot_next_file(w->snap, &it, &path, &fmt, &sf)) {
        if (fmt != FMT_YAML && fmt != FMT_JSON && fmt != FMT_HOCON)
            continue;
        if (w->nfiles == cap) {
            cap = cap ? cap * 2 : 64;
            w->files = xrealloc(w->files, cap * sizeof *w->files);
        }
        ws_file *f = &w->files[w->nfiles++];
        *f = (ws_file){xstrdup(path), NULL, 1, 1 << 30};
        for (size_t i = 0; i < nt; i++)
            if (tmpl_match(t[i].tmpl, path, t[i].glob)) {
                f->level = xstrdup(t[i].level);
                f->layer = t[i].layer;
                f->order = t[i].order;
                break;
            }
    }
    for (size_t i = 0; i < nt; i++) {
        free(t[i].tmpl);
        free(t[i].level);
    }
    free(t);
    if (w->nfiles)
        qsort(w->files, w->nfiles, sizeof *w->files, cmp_file);
    w->file_index = hv_hash();
    w->key_files = hv_hash();
    for (size_t i = 0; i < w->nfiles; i++) {
        hv_hash_sets(w->file_index, w->files[i].path, hv_int((int64_t)i));
        snapshot_file f;
        if (!snapshot_get(w->snap, w->files[i].path, FMT_YAML, &f) && !snapshot_get(w->snap, w->files[i].path, FMT_JSON, &f))
            continue;
        if (!hv_is(f.value, HV_HASH))
            continue;
        for (size_t k = 0; k < hv_hash_len(f.value); k++) {
            const hv *key = hv_hash_key_at(f.value, k);
            if (!hv_is(key, HV_STRING))
                continue;
            hv *list = hv_hash_get(w->key_files, key);
            if (!list) {
                list = hv_array();
                hv_hash_set(w->key_files, hv_incref((hv *)key), list);
            }
            hv_array_push(list, hv_int((int64_t)i));
        }
    }
}

/* ------------------------------------------------------------------ nodes */

static hv *facts_file(const char *dir, const char *node, char **problem)
{
    static const char *const exts[] = {".json", ".yaml", ".yml"};
    for (size_t i = 0; i < 3; i++) {
        char *p = xjoin(dir, "/", node, exts[i], NULL);
        if (path_is_file(p)) {
            hiera_error err = {0};
            hv *f = hiera_facts_load(NULL, p, node, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, NULL, &err);
            if (!f)
                *problem = xasprintf("%s: %s", p, err.message ? err.message : "cannot be read");
            hiera_error_clear(&err);
            free(p);
            return f;
        }
        free(p);
    }
    *problem = xasprintf("no facts file for %s in %s", node, dir);
    return NULL;
}

static void pdb_quiet(const char *code, const char *message, void *data) { (void)code, (void)message, (void)data; }

static void read_nodes(ws *w)
{
    const ws_settings *s = &w->set;
    w->nnodes = s->nnodes ? s->nnodes : 1;
    w->nodes = xcalloc(w->nnodes, sizeof *w->nodes);
    pdb *db = NULL;
    char *dberr = NULL;
    if (s->puppetdb && s->nnodes) {
        pdb_config c = {.urls = s->puppetdb, .timeout = 10, .connect_timeout = 5, .warn = pdb_quiet};
        db = pdb_open(&c, &dberr);
    }
    for (size_t i = 0; i < s->nnodes; i++) {
        ws_node *n = &w->nodes[i];
        n->name = xstrdup(s->nodes[i]);
        hv *given = NULL, *base = NULL;
        char *fp = NULL;
        if (s->facts_dir)
            given = facts_file(s->facts_dir, n->name, &fp);
        if (db) {
            char *e = NULL;
            pdb_status st = pdb_node_facts(db, n->name, &base, &e);
            if (st != PDB_OK)
                n->problem = st == PDB_NOT_FOUND ? xasprintf("PuppetDB has no facts for %s", n->name) : e;
            else
                free(e);
        } else if (dberr) {
            n->problem = xstrdup(dberr);
        }
        if (!given && !base && !n->problem)
            n->problem = fp ? xstrdup(fp) : xasprintf("no facts for %s (set factsDir or puppetdb)", n->name);
        free(fp);
        /* facts are read by every request thread: immortal (freed with the workspace) */
        if (given) {
            hv_make_immortal(given, &w->immortal);
            n->facts = given;
        }
        if (base) {
            hv_make_immortal(base, &w->immortal);
            n->base = base;
        }
    }
    free(dberr);
    if (db)
        pdb_close(db);
}

/* ------------------------------------------------------------------ the workspace */

ws *ws_build(const ws_settings *s, const ws *prev)
{
    ws *w = xcalloc(1, sizeof *w);
    w->refs = 1;
    ws_settings_copy(&w->set, s);
    if (!locate(w))
        return w;
    hiera_setting cli[3];
    size_t ncli = 0;
    cli[ncli++] = (hiera_setting){"codedir", w->codedir};
    cli[ncli++] = (hiera_setting){"confdir", w->confdir};
    cli[ncli++] = (hiera_setting){"environmentpath", w->envpath};
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = ncli;
    so.no_puppet_conf = !s->confdir;
    hiera_error err = {0};
    w->hs = hiera_settings_load(&so, &err);
    if (w->hs) {
        /* the global hiera.yaml as hiera lookup finds it: puppet.conf's hiera_config when the
         * confdir's puppet.conf sets it, else $codedir/hiera.yaml or $confdir/hiera.yaml */
        char *hc = hiera_settings_get(w->hs, "hiera_config", NULL);
        if (hc) {
            free(w->hiera_config);
            w->hiera_config = hc;
        }
        w->henv = hiera_environment_load(w->hs, w->env_name, &err);
    }
    if (!w->henv) {
        w->error = xstrdup(err.message ? err.message : "cannot read Puppet's settings");
        hiera_error_clear(&err);
        return w;
    }
    const char *envs[1] = {w->env_name};
    snapshot_spec spec = {w->codedir, w->envpath, w->hiera_config, envs, 1, NULL, module_roots, w, NULL};
    /* the previous workspace's parses of unchanged files, when it read the same tree */
    const snapshot *p = prev && prev->snap && prev->env_dir && !strcmp(prev->real_dir, w->real_dir) &&
                                !strcmp(prev->env_dir, w->env_dir)
                            ? prev->snap
                            : NULL;
    w->snap = snapshot_build(&spec, p);
    read_modules(w);
    index_files(w);
    read_nodes(w);
    hv_make_immortal(w->file_index, &w->immortal);
    hv_make_immortal(w->key_files, &w->immortal);
    hv_make_immortal(w->module_names, &w->immortal);
    return w;
}

ws *ws_retain(ws *w)
{
    __atomic_add_fetch(&w->refs, 1, __ATOMIC_RELAXED);
    return w;
}

void ws_release(ws *w)
{
    if (!w || __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < w->nnodes; i++) {
        free(w->nodes[i].name);
        free(w->nodes[i].problem);
    }
    free(w->nodes);
    for (size_t i = 0; i < w->nfiles; i++) {
        free(w->files[i].path);
        free(w->files[i].level);
    }
    free(w->files);
    hv_free_immortal(&w->immortal);
    if (w->pp)
        pp_index_free(w->pp);
    if (w->aliases)
        ptype_aliases_free(w->aliases);
    if (w->snap)
        snapshot_release(w->snap);
    if (w->henv)
        hiera_environment_free(w->henv);
    if (w->hs)
        hiera_settings_free(w->hs);
    if (w->tmpdir) {
        path_remove_tree(w->tmpdir);
        free(w->tmpdir);
    }
    free(w->codedir);
    free(w->confdir);
    free(w->envpath);
    free(w->env_name);
    free(w->env_dir);
    free(w->real_dir);
    free(w->hiera_config);
    free(w->error);
    ws_settings_free(&w->set);
    free(w);
}

hiera *ws_context(const ws *w, size_t i, hiera_cache *cache, hiera_error *err)
{
    hiera_options o = HIERA_OPTIONS_INIT;
    o.settings = w->hs;
    o.env = w->henv;
    o.hiera_config = w->hiera_config;
    o.cache = cache;
    if (i < w->nnodes && w->nodes[i].name) {
        o.node = w->nodes[i].name;
        o.facts = w->nodes[i].facts;
        o.base_facts = w->nodes[i].base;
    }
    return hiera_new(&o, err);
}

const pp_param *ws_class_param(const pp_index *const *idx, size_t nidx, const char *key, const pp_class **cls)
{
    const char *sep = NULL;
    for (const char *p = strstr(key, "::"); p; p = strstr(p + 2, "::"))
        sep = p;
    if (!sep || sep == key)
        return NULL;
    size_t cl = (size_t)(sep - key);
    const char *param = sep + 2;
    for (size_t x = 0; x < nidx; x++) {
        const pp_index *pp = idx[x];
        if (!pp)
            continue;
        for (size_t i = 0; i < pp->nclasses; i++) {
            const pp_class *c = &pp->classes[i];
            if (strlen(c->name) != cl || strncmp(c->name, key, cl) != 0)
                continue;
            for (size_t j = 0; j < c->nparams; j++)
                if (!strcmp(c->params[j].name, param)) {
                    *cls = c;
                    return &c->params[j];
                }
        }
    }
    return NULL;
}
