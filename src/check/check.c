/* check.c - `hiera check` (check.h): the environments to check and how they are read, the
 * configurations, levels and data files, the repository's configuration file and inline
 * comments, and the run that gathers the findings (the rules and findings are findings.c's).
 *
 * An environment is read once: its configurations (global, environment, modules) loaded as the
 * lookups load them (engine/config.c), each level's locations turned into templates and matched
 * against the files that exist (engine/tmplmatch.c) to know which files a level can read (the
 * rest of a data folder is orphaned), every data file loaded (from a snapshot of the tree, which
 * the per-node checks share between threads) and scanned with marks (yscan.h). The rules then
 * run per data file (data.c), over the manifests and class parameters (classes.c), across files
 * (data.c) and per node (nodes.c), on what env.c answers about the environment; this file calls
 * them and none of them calls it. */
#include "check/ck_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/fileio.h"
#include "base/rregex.h"
#include "base/pathname.h"
#include "engine/engine.h"
#include "engine/installed.h"
#include "engine/overlay.h"
#include "engine/providers.h"
#include "engine/tmplmatch.h"
#include "formats/json.h"
#include "formats/psych.h"

static char *read_text(const char *path, size_t *len)
{
    sbuf b = {0};
    if (!file_read(path, &b, NULL, NULL)) {
        sb_free(&b);
        return NULL;
    }
    *len = b.len;
    return sb_take(&b);
}

static char *report_path(const ck_env *e, const char *file);

/* The text of a file the check reads: the caller's (check_options.texts, named by the path as
 * reported) or the file's; NULL when it cannot be read. */
static char *text_of(const check_options *o, const ck_env *e, const char *path, size_t *len)
{
    if (o->ntexts) {
        char *rp = e ? report_path(e, path) : xstrdup(path);
        for (size_t i = 0; i < o->ntexts; i++)
            if (!strcmp(o->texts[i].path, rp)) {
                free(rp);
                *len = o->texts[i].len;
                return xstrndup(o->texts[i].text, o->texts[i].len);
            }
        free(rp);
    }
    return read_text(path, len);
}

/* Whether the caller gives path's text. */
static bool text_given(const check_options *o, const ck_env *e, const char *path)
{
    if (!o->ntexts)
        return false;
    char *rp = report_path(e, path);
    bool found = false;
    for (size_t i = 0; i < o->ntexts && !found; i++)
        found = !strcmp(o->texts[i].path, rp);
    free(rp);
    return found;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entries of dir (names, sorted, malloc'ed, NULL-terminated), hidden ones left out; NULL when
 * it cannot be read. */
static char **list_names(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t n = 0, cap = 16;
    char **names = xmalloc(cap * sizeof *names);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n + 1 == cap) {
            cap *= 2;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    names[n] = NULL;
    qsort(names, n, sizeof *names, cmp_str);
    return names;
}

static void free_names(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

/* Every file under dir (recursively, hidden entries and folders deeper than 32 left out) into out. */
static void walk_files(const char *dir, int depth, hv *out)
{
    if (depth > 32 || hv_array_len(out) > 1000000)
        return;
    char **names = list_names(dir);
    for (size_t i = 0; names && names[i]; i++) {
        char *p = xjoin(dir, "/", names[i], NULL);
        struct stat st;
        if (stat(p, &st) == 0) {
            if (S_ISREG(st.st_mode))
                hv_array_push(out, hv_str(p));
            else if (S_ISDIR(st.st_mode))
                walk_files(p, depth + 1, out);
        }
        free(p);
    }
    free_names(names);
}

/* ------------------------------------------------------------------ diagnostics of the engine */

static void engine_diag(int severity, const char *code, const char *file, int line, int col, const char *message, void *data)
{
    ck_ctx *c = data;
    if (!strcmp(code, "config-v3-ignored") && c->env && ck_strict_error(c->env))
        return; /* strict = error fails there: puppet8-v3-config (puppet8.c) */
    if (!strcmp(code, "config-deprecated") || !strcmp(code, "config-v3-ignored") || !strcmp(code, "config-not-hash"))
        ck_add(c, "config-invalid", CHECK_WARNING, file, (uint32_t)(line > 0 ? line : 1), (uint32_t)(col > 0 ? col : 1),
               "%s", message);
    /* data-not-hash is the not-a-hash rule's (data.c), with the document's position; a regexp that
     * gave up is reported where the lookup that met it is */
    (void)severity;
}

/* ------------------------------------------------------------------ environments */

static bool valid_env_name(const char *n)
{
    if (!*n)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static bool valid_mod_name(const char *n)
{
    if (!(*n >= 'a' && *n <= 'z'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* A setting of environment.conf ([main] or no section; the first line wins; quotes trimmed),
 * malloc'ed, or NULL. */
static char *env_conf_setting(const char *envdir, const char *name)
{
    char *path = xjoin(envdir, "/environment.conf", NULL);
    size_t len;
    char *text = read_text(path, &len);
    free(path);
    if (!text)
        return NULL;
    char *found = NULL, *save = NULL;
    bool in_main = true;
    for (char *line = strtok_r(text, "\n", &save); line && !found; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (*line == '#' || *line == ';' || !*line)
            continue;
        if (*line == '[') {
            in_main = strncmp(line, "[main]", 6) == 0;
            continue;
        }
        if (!in_main)
            continue;
        size_t nl = strlen(name);
        if (strncmp(line, name, nl) != 0)
            continue;
        char *p = line + nl;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '=')
            continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
            n--;
        if (n >= 2 && ((p[0] == '"' && p[n - 1] == '"') || (p[0] == '\'' && p[n - 1] == '\''))) {
            p++;
            n -= 2;
        }
        found = xstrndup(p, n);
    }
    free(text);
    return found;
}

static void add_root(ck_env *e, const char *dir)
{
    for (size_t i = 0; i < e->nmodroots; i++)
        if (strcmp(e->modroots[i], dir) == 0)
            return;
    e->modroots = xrealloc(e->modroots, (e->nmodroots + 1) * sizeof *e->modroots);
    e->modroots[e->nmodroots++] = xstrdup(dir);
}

/* Puppet's settings as the environment's lookups read them (its codedir, confdir and
 * environmentpath; the confdir's puppet.conf), or NULL. */
static hiera_settings *env_settings(const ck_env *e)
{
    hiera_setting cli[] = {{"codedir", e->codedir}, {"confdir", e->confdir}, {"environmentpath", e->envpath}};
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = sizeof cli / sizeof *cli;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&so, &err);
    hiera_error_clear(&err);
    return s;
}

/* Puppet's strict setting for the environment's lookups: its puppet.conf's (under confdir; the
 * lookups' own options read none), else the version's default (0 off, 1 warning, 2 error). */
static int strict_of(const ck_env *e)
{
    hiera_settings *s = env_settings(e);
    char *v = s ? hiera_settings_get(s, "strict", NULL) : NULL;
    int strict = !v ? (e->puppet8 ? 2 : 1) : !strcmp(v, "off") ? 0 : !strcmp(v, "error") ? 2 : 1;
    free(v);
    hiera_settings_free(s);
    return strict;
}

/* The global hiera.yaml when --confdir is given: as hiera lookup --confdir finds it, its
 * puppet.conf's hiera_config when set, else $codedir/hiera.yaml or $confdir/hiera.yaml. */
static char *confdir_hiera_config(const ck_env *e)
{
    hiera_settings *s = env_settings(e);
    char *v = s ? hiera_settings_get(s, "hiera_config", NULL) : NULL;
    hiera_settings_free(s);
    return v ? v : check_hiera_config(e->codedir, e->confdir);
}

/* The module folders: the ones the lookups use (module_roots: the environment's modulepath as
 * Puppet's settings and environment.conf give it); and which Puppet the lookups answer as, with
 * the strict setting they read (the puppet8-* rules' severity). */
static void module_roots_of(ck_env *e)
{
    /* the folders the lookups use (module_roots: they follow the lookups' modulepath) */
    hiera_options o = HIERA_OPTIONS_INIT;
    o.codedir = e->codedir;
    o.confdir = e->confdir;
    o.environmentpath = e->envpath;
    o.hiera_config = e->hiera_config;
    o.environment = e->name;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    hiera_error_clear(&err);
    e->puppet8 = h ? h->version == HIERA_PUPPET_8 : puppet_version_resolve(HIERA_PUPPET_AUTO) == HIERA_PUPPET_8;
    e->strict = strict_of(e);
    if (h) {
        e->engine_roots = module_roots(h);
        hiera_free(h);
    }
    for (size_t i = 0; e->engine_roots && e->engine_roots[i]; i++)
        add_root(e, e->engine_roots[i]);
}

/* The modules a Puppetfile names (mod 'author/name' or 'author-name' or 'name'). */
static void read_puppetfile_at(ck_env *e, const char *path);

/* The modules the Puppetfile names, and those of Puppetfile.* beside it (Puppetfile.vendor and
 * the like: modules vendored by another tool, in the same format). */
static void read_puppetfile(ck_env *e, const char *dir)
{
    char **names = list_names(dir);
    for (size_t i = 0; names && names[i]; i++)
        if (!strcmp(names[i], "Puppetfile") || !strncmp(names[i], "Puppetfile.", 11)) {
            char *path = xjoin(dir, "/", names[i], NULL);
            if (strcmp(names[i] + strlen(names[i]) - 5, ".lock") != 0)
                read_puppetfile_at(e, path);
            free(path);
        }
    free_names(names);
}

static void read_puppetfile_at(ck_env *e, const char *path)
{
    size_t len;
    char *text = read_text(path, &len);
    if (!text)
        return;
    e->has_puppetfile = true;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (strncmp(line, "mod", 3) != 0 || !(line[3] == ' ' || line[3] == '\t' || line[3] == '('))
            continue;
        char *q = strpbrk(line, "'\"");
        if (!q)
            continue;
        char *end = strchr(q + 1, *q);
        if (!end)
            continue;
        *end = 0;
        char *name = q + 1;
        char *cut = strrchr(name, '/');
        char *dash = strrchr(name, '-');
        if (dash && (!cut || dash > cut))
            cut = dash;
        if (cut)
            name = cut + 1;
        e->external = xrealloc(e->external, (e->nexternal + 1) * sizeof *e->external);
        e->external[e->nexternal++] = xstrdup(name);
    }
    free(text);
}

/* What the rules built (ck_env_rules), cleared for another run over the same model. */
void ck_env_rules_reset(ck_env *e)
{
    for (size_t i = 0; i < e->nkeys; i++) {
        free(e->keys[i].name);
        free(e->keys[i].defs);
    }
    free(e->keys);
    e->keys = NULL;
    e->nkeys = e->capkeys = 0;
    if (e->key_index) {
        hv_decref(e->key_index);
        e->key_index = hv_hash();
    }
    for (size_t i = 0; i < e->nrefs; i++) {
        free(e->refs[i].key);
        free(e->refs[i].from);
    }
    free(e->refs);
    e->refs = NULL;
    e->nrefs = e->caprefs = 0;
    for (size_t i = 0; i < e->nvars; i++) {
        free(e->vars[i].expr);
        hv_decref(e->vars[i].segs);
    }
    free(e->vars);
    e->vars = NULL;
    e->nvars = e->capvars = 0;
    if (e->lo_entries)
        hv_array_truncate(e->lo_entries, 0);
    for (size_t i = 0; i < e->nlo_regexps; i++)
        rregex_free(e->lo_regexps[i]);
    free(e->lo_regexps);
    e->lo_regexps = NULL;
    e->nlo_regexps = 0;
    e->eyaml_key_missing = false;
}

static void env_free(ck_env *e)
{
    for (size_t i = 0; i < e->nconfigs; i++) {
        ck_config *cf = &e->configs[i];
        free(cf->path);
        free(cf->module);
        if (cf->cfg)
            config_free(cf->cfg);
        for (size_t j = 0; j < cf->nlevels; j++) {
            for (size_t k = 0; k < cf->levels[j].ntmpls; k++) {
                free(cf->levels[j].tmpls[k]);
                free(cf->levels[j].env_tmpls ? cf->levels[j].env_tmpls[k] : NULL);
            }
            free(cf->levels[j].tmpls);
            free(cf->levels[j].env_tmpls);
            free(cf->levels[j].datadir);
        }
        free(cf->levels);
        for (size_t j = 0; j < cf->nplan_levels; j++)
            config_level_free(&cf->plan_levels[j]);
        free(cf->plan_levels);
        ys_free(cf->ys);
        free(cf->text);
    }
    free(e->configs);
    for (size_t i = 0; i < e->nfiles; i++) {
        ck_file *f = &e->files[i];
        free(f->path);
        free(f->reach);
        hv_decref(f->own_value);
        herr_clear(&f->err);
        free(f->text);
        ys_free(f->ys);
    }
    free(e->files);
    hv_decref(e->file_index);
    ck_env_rules_reset(e);
    hv_decref(e->key_index);
    hv_decref(e->lo_entries);
    if (e->node_texts)
        overlay_release(e->node_texts);
    hv_decref(e->facts_memo);
    hv_free_immortal(&e->facts_nodes);
    ck_node_memo_free(e->node_memo);
    pp_index_free(e->pp);
    pp_program_free(e->prog);
    hv_decref(e->functions);
    hv_decref(e->dyn_lookups);
    ptype_aliases_free(e->aliases);
    hv_decref(e->modules_present);
    if (e->cache)
        cache_free(e->cache);
    if (e->snap)
        snapshot_release(e->snap);
    free(e->name);
    free(e->dir);
    free(e->real_dir);
    free(e->codedir);
    free(e->confdir);
    free(e->envpath);
    free(e->hiera_config);
    for (size_t i = 0; i < e->nmodroots; i++)
        free(e->modroots[i]);
    free(e->modroots);
    module_roots_free(e->engine_roots);
    free(e->manifest);
    for (size_t i = 0; i < e->nexternal; i++)
        free(e->external[i]);
    free(e->external);
    free(e->only_module);
    free(e->only_module_name);
    free(e->opaque_level);
    memset(e, 0, sizeof *e);
}

/* ------------------------------------------------------------------ configurations and files */

static uint32_t add_file(ck_env *e, const char *path, file_format fmt)
{
    hv *known = hv_hash_gets(e->file_index, path);
    if (known)
        return (uint32_t)hv_int_val(known);
    if (e->nfiles == e->capfiles) {
        e->capfiles = e->capfiles ? e->capfiles * 2 : 64;
        e->files = xrealloc(e->files, e->capfiles * sizeof *e->files);
    }
    ck_file *f = &e->files[e->nfiles];
    memset(f, 0, sizeof *f);
    f->path = xstrdup(path);
    f->fmt = fmt;
    f->cfg_owner = -1;
    hv_hash_sets(e->file_index, path, hv_int((int64_t)e->nfiles));
    return (uint32_t)e->nfiles++;
}

static void add_reach(ck_file *f, uint32_t cfg, uint32_t level)
{
    for (size_t i = 0; i < f->nreach; i++)
        if (f->reach[i].cfg == cfg && f->reach[i].level == level)
            return;
    if (f->nreach == f->capreach) {
        f->capreach = f->capreach ? f->capreach * 2 : 2;
        f->reach = xrealloc(f->reach, f->capreach * sizeof *f->reach);
    }
    f->reach[f->nreach++] = (ck_reach){cfg, level};
}

/* The files under base, listed once per run (walks: base -> array of paths). */
static const hv *files_under(hv *walks, const char *base)
{
    hv *known = hv_hash_gets(walks, base);
    if (known)
        return known;
    hv *list = hv_array();
    if (path_is_dir(base))
        walk_files(base, 0, list);
    hv_hash_sets(walks, base, list);
    return list;
}

/* s with the environment's name in place of %{environment} and %{server_facts.environment} (with
 * or without a leading ::): the check is about one environment, whose name is one folder's name
 * (malloc'ed). */
static char *with_environment(const char *s, const char *env)
{
    static const char *const vars[] = {"environment", "::environment", "server_facts.environment",
                                       "::server_facts.environment", NULL};
    sbuf b = {0};
    for (const char *p = s; *p;) {
        bool done = false;
        if (p[0] == '%' && p[1] == '{') {
            const char *close = strchr(p + 2, '}');
            if (close) {
                const char *a = p + 2, *z = close;
                while (a < z && *a == ' ')
                    a++;
                while (z > a && z[-1] == ' ')
                    z--;
                for (size_t i = 0; vars[i] && !done; i++)
                    if ((size_t)(z - a) == strlen(vars[i]) && !strncmp(a, vars[i], (size_t)(z - a))) {
                        sb_adds(&b, env);
                        p = close + 1;
                        done = true;
                    }
            }
        }
        if (!done)
            sb_addc(&b, *p++);
    }
    return sb_take(&b);
}

/* Whether path is under dir (or is it). */
static bool under(const char *path, const char *dir)
{
    size_t n = dir ? strlen(dir) : 0;
    return n && !strncmp(path, dir, n) && (path[n] == '/' || !path[n] || dir[n - 1] == '/');
}

/* A level's location templates (absolute), as snapshots make them (config_level_files), for the
 * environment being checked: its name put in for %{environment}, and a data folder under one of Puppet's default
 * environmentpaths read in the environment checked (as the lookups read it: said once). */
static void level_templates(ck_ctx *c, const ck_config *cf, ck_level *L)
{
    ck_env *e = c->env;
    const hcfg *cfg = cf->cfg;
    const hlevel *lvl = L->lvl;
    level_files f;
    config_level_files(cfg, lvl, e->codedir, e->envpath, &f);
    char *datadir = with_environment(f.datadir, e->name);
    if (f.remapped_from)
        ck_note(c, xasprintf("%s: level '%s' reads '%s', in Puppet's environmentpath %s: read here as %s (the "
                             "environment checked)",
                             cf->path, L->name, f.unmapped, f.remapped_from, datadir));
    /* a data folder interpolated (../../hiera-data/%{x}) is judged by its literal part */
    const char *interp = strstr(datadir, "%{");
    char *probe = interp ? xstrndup(datadir, (size_t)(interp - datadir)) : xstrdup(datadir);
    if (interp) {
        char *slash = strrchr(probe, '/');
        if (slash)
            slash[slash == probe ? 1 : 0] = 0;
    }
    const char *roots[] = {e->dir, e->real_dir, e->codedir, e->only_module, e->envpath};
    bool inside = !*probe || probe[0] != '/'; /* nothing literal before the interpolation: unknown */
    for (size_t i = 0; i < sizeof roots / sizeof *roots && !inside; i++)
        inside = under(probe, roots[i]) || (interp && roots[i] && under(roots[i], probe));
    for (size_t r = 0; r < e->nmodroots && !inside; r++)
        inside = under(probe, e->modroots[r]);
    free(probe);
    if (!inside) {
        L->outside = true;
        if (!e->opaque_level)
            e->opaque_level = xasprintf("level '%s' of %s reads data outside what is checked (%s)", L->name, cf->path,
                                        datadir);
        ck_note(c, xasprintf("%s: level '%s' reads data outside what is checked (%s): its files are not checked", cf->path,
                             L->name, datadir));
    }
    L->datadir = datadir;
    L->glob = f.glob;
    for (size_t j = 0; j < f.n; j++) {
        const char *loc = f.locs[j];
        char *t = with_environment(loc, e->name);
        if (strcmp(t, loc) != 0)
            L->by_env = true;
        L->tmpls = xrealloc(L->tmpls, (L->ntmpls + 1) * sizeof *L->tmpls);
        L->env_tmpls = xrealloc(L->env_tmpls, (L->ntmpls + 1) * sizeof *L->env_tmpls);
        L->env_tmpls[L->ntmpls] = strcmp(t, loc) != 0 ? pn_plus(datadir, loc) : NULL;
        L->tmpls[L->ntmpls++] = pn_plus(datadir, t);
        free(t);
        /* a file of the environment's hierarchy named outright (no interpolation) that the tree
         * does not hold is made where the code is deployed (terraform_data.yaml, a bootstrap's
         * output): what it defines cannot be known, as for a level read by a function hiera
         * check cannot run (a module's own hierarchy names the files the module ships) */
        const char *abs = L->tmpls[L->ntmpls - 1];
        if (cf->layer == LAYER_ENV && !L->plan && !f.glob && !e->opaque_level && !strstr(abs, "%{") && !path_is_file(abs) && !L->outside) {
            e->opaque_level = xasprintf("level '%s' of %s reads %s, absent from the tree checked (made where the code "
                                        "is deployed?)",
                                        L->name, cf->path, loc);
        }
    }
    config_level_files_free(&f);
}

static void add_levels(ck_ctx *c, ck_config *cf, const hlevel *levels, size_t n, bool dflt)
{
    ck_env *e = c->env;
    for (size_t i = 0; i < n; i++) {
        cf->levels = xrealloc(cf->levels, (cf->nlevels + 1) * sizeof *cf->levels);
        ck_level *L = &cf->levels[cf->nlevels];
        memset(L, 0, sizeof *L);
        L->lvl = &levels[i];
        L->name = levels[i].name ? levels[i].name : "";
        L->function = levels[i].fname ? levels[i].fname : "";
        L->fkind = levels[i].fkind;
        const provider_def *pd = provider_find(L->function);
        L->known = pd != NULL;
        L->fmt = pd ? pd->format : FMT_YAML;
        L->eyaml = strcmp(L->function, "eyaml_lookup_key") == 0;
        L->dflt = dflt;
        L->index = (int)cf->nlevels;
        if (pd)
            level_templates(c, cf, L);
        else if (!e->opaque_level && L->function[0])
            e->opaque_level = xasprintf("level '%s' of %s reads its data with '%s'", L->name, cf->path, L->function);
        cf->nlevels++;
    }
}

/* Where a hiera.yaml error is: its own line, else the hierarchy entry its message names
 * ("index N"), else the top. */
static void config_error_at(const ck_config *cf, const herr *err, uint32_t *line, uint32_t *col)
{
    *line = err->line > 0 ? (uint32_t)err->line : 0;
    *col = err->col > 0 ? (uint32_t)err->col : 0;
    if (*line || !cf->ys || !cf->ys->ndocs || !cf->ys->docs[0])
        goto done;
    const ysnode *root = cf->ys->docs[0];
    const char *m = err->msg ? err->msg : "";
    const char *ix = strstr(m, "index ");
    const ysnode *h = ys_map_get(root, strstr(m, "default_hierarchy") ? "default_hierarchy" : "hierarchy");
    if (ix && h && h->kind == YS_SEQ) {
        unsigned long n = strtoul(ix + 6, NULL, 10);
        if (n < h->n) {
            *line = h->kids[n]->line;
            *col = h->kids[n]->col;
            goto done;
        }
    }
    const char *ent = strstr(m, "entry '");
    if (ent) {
        char key[64];
        size_t i = 0;
        for (const char *p = ent + 7; *p && *p != '\'' && i + 1 < sizeof key; p++)
            key[i++] = *p;
        key[i] = 0;
        const ysnode *k = ys_map_key(root, key);
        if (k) {
            *line = k->line;
            *col = k->col;
        }
    }
done:
    if (!*line) {
        *line = 1;
        *col = 1;
    }
    if (!*col)
        *col = 1;
}

static char *str_of(const hv *v) { return v && hv_is(v, HV_STRING) ? xstrdup(hv_str_ptr(v)) : NULL; }

/* plan_hierarchy (Bolt plans' data): levels of their own, which the lookups of nodes never use,
 * built from the configuration as loaded (a valid one: the schema checked it) */
static void add_plan_levels(ck_ctx *c, ck_config *cf)
{
    const hv *raw = cf->cfg->raw;
    const hv *list = raw ? hv_hash_gets(raw, "plan_hierarchy") : NULL;
    if (!list || !hv_is(list, HV_ARRAY) || !hv_array_len(list))
        return;
    const hv *defaults = hv_hash_gets(raw, "defaults");
    size_t n = hv_array_len(list);
    cf->plan_levels = xcalloc(n, sizeof *cf->plan_levels);
    for (size_t i = 0; i < n; i++) {
        const hv *en = hv_array_get(list, i);
        if (!hv_is(en, HV_HASH))
            continue;
        hlevel *l = &cf->plan_levels[cf->nplan_levels++];
        l->name = str_of(hv_hash_gets(en, "name"));
        const char *fns[] = {"data_hash", "lookup_key", "data_dig"};
        for (size_t f = 0; f < 3 && !l->fname; f++) {
            l->fname = str_of(hv_hash_gets(en, fns[f]));
            if (!l->fname && defaults && hv_is(defaults, HV_HASH))
                l->fname = str_of(hv_hash_gets(defaults, fns[f]));
        }
        if (!l->fname)
            l->fname = xstrdup("yaml_data");
        l->fkind = FN_DATA_HASH;
        l->datadir = str_of(hv_hash_gets(en, "datadir"));
        if (!l->datadir && defaults && hv_is(defaults, HV_HASH))
            l->datadir = str_of(hv_hash_gets(defaults, "datadir"));
        if (!l->datadir)
            l->datadir = xstrdup("data");
        static const struct {
            const char *key;
            loc_kind kind;
            bool list;
        } locs[] = {{"path", LOC_PATH, false}, {"paths", LOC_PATHS, true}, {"glob", LOC_GLOB, false},
                    {"globs", LOC_GLOBS, true}, {"mapped_paths", LOC_MAPPED_PATHS, true}};
        for (size_t k = 0; k < 5 && l->lkind == LOC_NONE; k++) {
            const hv *v = hv_hash_gets(en, locs[k].key);
            if (!v)
                continue;
            l->lkind = locs[k].kind;
            size_t cnt = locs[k].list && hv_is(v, HV_ARRAY) ? hv_array_len(v) : 1;
            l->locs = xcalloc(cnt, sizeof *l->locs);
            for (size_t j = 0; j < cnt; j++) {
                const hv *s1 = locs[k].list && hv_is(v, HV_ARRAY) ? hv_array_get(v, j) : v;
                char *sv = str_of(s1);
                l->locs[l->nlocs++] = sv ? sv : xstrdup("");
            }
        }
        l->options = hv_incref(hv_hash_gets(en, "options"));
    }
    for (size_t i = 0; i < cf->nplan_levels; i++) {
        cf->levels = xrealloc(cf->levels, (cf->nlevels + 1) * sizeof *cf->levels);
        ck_level *L = &cf->levels[cf->nlevels];
        memset(L, 0, sizeof *L);
        const hlevel *hl = &cf->plan_levels[i];
        L->lvl = hl;
        L->name = hl->name ? hl->name : "";
        L->function = hl->fname;
        L->fkind = hl->fkind;
        const provider_def *pd = provider_find(L->function);
        L->known = pd != NULL;
        L->fmt = pd ? pd->format : FMT_YAML;
        L->eyaml = strcmp(L->function, "eyaml_lookup_key") == 0;
        L->plan = true;
        L->index = (int)cf->nlevels;
        if (pd)
            level_templates(c, cf, L);
        cf->nlevels++;
    }
}

/* A version 5 level (or its defaults) giving options to yaml_data, json_data or hocon_data:
 * Puppet's functions take Struct[{path=>String[1]}], so every lookup that reaches one of the
 * level's files that exists fails (the engine's options_refused); pointed at the options. */
static void refused_options(ck_ctx *c, const ck_config *cf, const hlevel *levels, size_t n, const char *list)
{
    const ysnode *root = cf->ys && cf->ys->ndocs ? cf->ys->docs[0] : NULL;
    const ysnode *seq = root ? ys_map_get(root, list) : NULL;
    for (size_t i = 0; i < n; i++) {
        const hlevel *l = &levels[i];
        if (!provider_options_refused(cf->cfg->version, l->fname, l->options))
            continue;
        const ysnode *at = seq && seq->kind == YS_SEQ && i < seq->n ? ys_map_key(seq->kids[i], "options") : NULL;
        bool from_defaults = false;
        if (!at && root) { /* the defaults' options */
            const ysnode *d = ys_map_get(root, "defaults");
            at = d ? ys_map_key(d, "options") : NULL;
            from_defaults = at != NULL;
        }
        if (!at && seq && seq->kind == YS_SEQ && i < seq->n)
            at = seq->kids[i];
        ck_add(c, "config-invalid", 0, cf->path, at ? at->line : 1, at ? at->col : 1,
               "level '%s' gives options%s to %s, which takes none: Puppet calls it with Struct[{path=>String[1]}], "
               "so every lookup that reaches one of the level's files fails (\"'%s' one of 'path', 'paths' 'glob', "
               "'globs' or 'mapped_paths' must be declared in hiera.yaml when using this data_hash function\")",
               l->name ? l->name : "", from_defaults ? " (from defaults)" : "", l->fname, l->fname);
    }
}

static void add_config(ck_ctx *c, const char *path, layer_kind kind, const char *module)
{
    ck_env *e = c->env;
    for (size_t i = 0; i < e->nconfigs; i++)
        if (e->configs[i].path && strcmp(e->configs[i].path, path) == 0)
            return;
    e->configs = xrealloc(e->configs, (e->nconfigs + 1) * sizeof *e->configs);
    ck_config *cf = &e->configs[e->nconfigs++];
    memset(cf, 0, sizeof *cf);
    cf->path = xstrdup(path);
    cf->layer = kind;
    cf->module = module ? xstrdup(module) : NULL;
    cf->text = text_of(c->o, e, path, &cf->len);
    if (cf->text)
        cf->ys = ys_parse(cf->text, cf->len);
    c->report->configs++;
    bool ignored = false;
    herr err = {0};
    cf->cfg = config_load(e->cache, path, kind, &ignored, &err);
    if (!cf->cfg) {
        if (herr_isset(&err)) {
            uint32_t line, col;
            config_error_at(cf, &err, &line, &col);
            /* a YAML error (Psych's message names the file in parentheses) or a schema error */
            bool syntax = err.msg && err.msg[0] == '(' && cf->ys && cf->ys->failed;
            ck_add(c, syntax ? "config-syntax" : "config-invalid", 0, path, line, col, "%s", err.msg ? err.msg : "");
        }
        herr_clear(&err);
        return;
    }
    if (herr_isset(&cf->cfg->lazy_err)) {
        uint32_t line, col;
        config_error_at(cf, &cf->cfg->lazy_err, &line, &col);
        ck_add(c, "config-invalid", 0, path, line, col, "%s", cf->cfg->lazy_err.msg);
    }
    add_levels(c, cf, cf->cfg->levels, cf->cfg->nlevels, false);
    if (cf->cfg->has_default_hierarchy)
        add_levels(c, cf, cf->cfg->dlevels, cf->cfg->ndlevels, true);
    add_plan_levels(c, cf);
    refused_options(c, cf, cf->cfg->levels, cf->cfg->nlevels, "hierarchy");
    if (cf->cfg->has_default_hierarchy)
        refused_options(c, cf, cf->cfg->dlevels, cf->cfg->ndlevels, "default_hierarchy");
}

/* The extension of the file name at the end of path ("" when none). (A loop rather than strrchr:
 * GCC, inlining across files, takes a value's string for a zero-sized array and warns.) */
static const char *extension_of(const char *path)
{
    const char *dot = NULL;
    for (const char *p = path; *p; p++)
        if (*p == '.')
            dot = p;
        else if (*p == '/')
            dot = NULL;
    return dot ? dot : "";
}

static bool data_extension(const char *path)
{
    const char *dot = extension_of(path);
    return !strcmp(dot, ".yaml") || !strcmp(dot, ".yml") || !strcmp(dot, ".json") || !strcmp(dot, ".eyaml");
}

/* Files of a data folder that are documentation, not data. */
static bool doc_file(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *ext = extension_of(base);
    static const char *const docs[] = {".md", ".markdown", ".txt", ".rst", ".adoc", ".org", NULL};
    for (size_t i = 0; docs[i]; i++)
        if (!strcasecmp(ext, docs[i]))
            return true;
    return !strncasecmp(base, "README", 6) || !strncasecmp(base, "LICENSE", 7) || !strncasecmp(base, "CHANGELOG", 9);
}

/* Files kept in a data folder beside the data that no level is meant to read: the recipients
 * lists of hiera-eyaml-gpg (hiera-eyaml-gpg.recipients, looked for in the data folders), keys and
 * certificates, scripts, an editor's backups. */
static bool companion_file(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n && (base[n - 1] == '~' || base[0] == '#'))
        return true;
    const char *ext = extension_of(base);
    static const char *const exts[] = {".recipients", ".gpg", ".asc", ".pem", ".key", ".crt", ".p7", ".pkcs7",
                                       ".sh", ".bak", ".orig", ".rej", ".swp", ".tmp", NULL};
    for (size_t i = 0; exts[i]; i++)
        if (!strcasecmp(ext, exts[i]))
            return true;
    return false;
}

/* A file without a data extension in a level's data folder that a location of the configuration
 * would name if it had the level's extension (nodes/web1 where the level reads
 * nodes/%{trusted.certname}.yaml): no level can ever read it. */
static void misnamed_file(ck_ctx *c, const ck_config *cf, const char *path)
{
    if (doc_file(path) || companion_file(path))
        return;
    for (size_t li = 0; li < cf->nlevels; li++) {
        const ck_level *L = &cf->levels[li];
        if (L->plan)
            continue;
        for (size_t t = 0; t < L->ntmpls; t++) {
            const char *tmpl = L->tmpls[t];
            const char *ext = extension_of(tmpl);
            if (!*ext || strchr(ext, '}') || strchr(ext, '*'))
                continue;
            char *stripped = xstrndup(tmpl, strlen(tmpl) - strlen(ext));
            bool hit = tmpl_match(stripped, path, L->glob);
            free(stripped);
            if (!hit)
                continue;
            size_t dl = strlen(L->datadir);
            const char *rel = !strncmp(tmpl, L->datadir, dl) && tmpl[dl] == '/' ? tmpl + dl + 1 : tmpl;
            ck_add(c, "orphan-file", 0, path, 1, 1,
                   "no level of %s reads this file: level '%s' reads '%s', and a file it reads ends in '%s'", cf->path,
                   L->name, rel, ext);
            return;
        }
    }
}

/* Whether a level of the configuration with a data function hiera check cannot run reads data
 * under dir (it may read any file there: none is an orphan). */
static bool opaque_reads(ck_ctx *c, const ck_config *cf, const char *dir)
{
    for (size_t li = 0; li < cf->nlevels; li++) {
        const ck_level *L = &cf->levels[li];
        if (L->known || !L->function[0] || !cf->cfg)
            continue;
        char *raw = pn_plus(cf->cfg->root, L->lvl->datadir ? L->lvl->datadir : "data");
        char *dd = with_environment(raw, c->env->name);
        bool hit = under(dd, dir) || under(dir, dd);
        free(raw);
        free(dd);
        if (hit)
            return true;
    }
    return false;
}

static size_t slashes(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '/';
    return n;
}

/* Whether a level reads path in another environment than the one checked (data/development.yaml
 * for "%{environment}.yaml"): an environment's name is one folder name, so the file must have as
 * many folders as the level's location with a name put in. */
static bool other_environment(const ck_config *cf, const char *path)
{
    for (size_t li = 0; li < cf->nlevels; li++) {
        const ck_level *L = &cf->levels[li];
        for (size_t t = 0; L->env_tmpls && t < L->ntmpls; t++)
            if (L->env_tmpls[t] && slashes(path) == slashes(L->tmpls[t]) && tmpl_match(L->env_tmpls[t], path, L->glob))
                return true;
    }
    return false;
}

/* Every file each level can read, and the orphans of each data folder. */
static void find_files(ck_ctx *c)
{
    ck_env *e = c->env;
    hv *walks = hv_hash();
    for (size_t ci = 0; ci < e->nconfigs; ci++) {
        ck_config *cf = &e->configs[ci];
        for (size_t li = 0; li < cf->nlevels; li++) {
            ck_level *L = &cf->levels[li];
            for (size_t t = 0; t < L->ntmpls; t++) {
                const char *tmpl = L->tmpls[t];
                if (!tmpl_is_pattern(tmpl, L->glob)) {
                    if (path_is_file(tmpl)) {
                        uint32_t fi = add_file(e, tmpl, L->fmt);
                        add_reach(&e->files[fi], (uint32_t)ci, (uint32_t)li);
                    }
                    continue;
                }
                char *base = tmpl_base_dir(tmpl, L->glob);
                if (!base[0] || !strcmp(base, "/") || L->outside) {
                    free(base); /* (files anywhere on the machine, or outside what is checked: not listed) */
                    continue;
                }
                const hv *files = files_under(walks, base);
                for (size_t i = 0; i < hv_array_len(files); i++) {
                    const char *p = hv_str_ptr(hv_array_get(files, i));
                    if (tmpl_match(tmpl, p, L->glob)) {
                        uint32_t fi = add_file(e, p, L->fmt);
                        add_reach(&e->files[fi], (uint32_t)ci, (uint32_t)li);
                    }
                }
                free(base);
            }
        }
    }
    /* orphans: data files in a level's data folder (not the configuration's own folder, where
     * everything else of a module lives too) that no level reads */
    for (size_t ci = 0; ci < e->nconfigs; ci++) {
        ck_config *cf = &e->configs[ci];
        if (!cf->cfg)
            continue;
        for (size_t li = 0; li < cf->nlevels; li++) {
            ck_level *L = &cf->levels[li];
            if (!L->datadir || L->outside || strstr(L->datadir, "%{") || !strcmp(L->datadir, cf->cfg->root) ||
                opaque_reads(c, cf, L->datadir))
                continue;
            size_t rl = strlen(cf->cfg->root);
            if (strncmp(L->datadir, cf->cfg->root, rl) != 0 || L->datadir[rl] != '/')
                continue; /* a data folder outside the configuration's folder: not ours to judge */
            bool seen = false;
            for (size_t lj = 0; lj < li; lj++)
                if (cf->levels[lj].datadir && !strcmp(cf->levels[lj].datadir, L->datadir))
                    seen = true;
            if (seen)
                continue;
            const hv *files = files_under(walks, L->datadir);
            for (size_t i = 0; i < hv_array_len(files); i++) {
                const char *p = hv_str_ptr(hv_array_get(files, i));
                if (!data_extension(p)) {
                    misnamed_file(c, cf, p);
                    continue;
                }
                if (hv_hash_gets(e->file_index, p) || other_environment(cf, p))
                    continue;
                uint32_t fi = add_file(e, p, !strcmp(extension_of(p), ".json") ? FMT_JSON : FMT_YAML);
                e->files[fi].orphan = true;
                e->files[fi].cfg_owner = (int)ci;
            }
        }
    }
    hv_decref(walks);
}

/* Loads a data file: from the snapshot when it read it, else through the private cache. */
static void load_file(ck_ctx *c, ck_file *f)
{
    ck_env *e = c->env;
    snapshot_file sf;
    if (e->snap && !text_given(c->o, e, f->path) && snapshot_get(e->snap, f->path, f->fmt, &sf)) {
        f->value = sf.value;
        if (!sf.value && sf.err) {
            herr_set_text(&f->err, sf.err->kind ? sf.err->kind : HERR_ERROR, sf.err->msg ? sf.err->msg : "");
            herr_at(&f->err, sf.err->file, sf.err->line, sf.err->col);
        }
    } else {
        f->own_value = cache_load(e->cache, f->path, f->fmt, &f->err);
        f->value = f->own_value;
    }
    if (f->fmt == FMT_YAML || f->fmt == FMT_JSON) {
        f->text = text_of(c->o, e, f->path, &f->len);
        if (f->text)
            f->ys = ys_parse(f->text, f->len);
    }
    const ck_reach *r = f->nreach ? &f->reach[0] : NULL;
    int ci = r ? (int)r->cfg : f->cfg_owner;
    if (ci >= 0) {
        f->layer = e->configs[ci].layer;
        f->module = e->configs[ci].module;
        if (f->module && ck_is_external_module(e, f->module))
            f->external = true;
    }
}

/* ------------------------------------------------------------------ manifests */

static void add_manifest(ck_ctx *c, const char *path)
{
    if (text_given(c->o, c->env, path)) {
        size_t len;
        char *text = text_of(c->o, c->env, path, &len);
        pp_index_add_text(c->env->pp, path, text, len);
        free(text);
    } else {
        pp_index_add_file(c->env->pp, path);
    }
}

/* A file of the main manifest for its evaluation per node: the caller's text when it gives one. */
static void program_add(ck_ctx *c, const char *path)
{
    size_t len;
    char *text = text_of(c->o, c->env, path, &len);
    if (text)
        pp_program_add_text(c->env->prog, path, text, len);
    free(text);
}

static void add_manifests(ck_ctx *c, const char *dir, int depth)
{
    ck_env *e = c->env;
    if (depth > 32)
        return;
    char **names = list_names(dir);
    for (size_t i = 0; names && names[i]; i++) {
        char *p = xjoin(dir, "/", names[i], NULL);
        struct stat st;
        if (stat(p, &st) == 0) {
            size_t n = strlen(names[i]);
            if (S_ISDIR(st.st_mode))
                add_manifests(c, p, depth + 1);
            else if (S_ISREG(st.st_mode) && n > 3 && !strcmp(names[i] + n - 3, ".pp"))
                add_manifest(c, p);
            else if (S_ISREG(st.st_mode) && n > 4 && (!strcmp(names[i] + n - 4, ".epp") || !strcmp(names[i] + n - 4, ".erb")))
                pp_index_add_template(e->pp, p);
        }
        free(p);
    }
    free_names(names);
}

/* What a Ruby function may do when called, from its source: set variables of its caller's scope
 * (scope['x'] = ..., setvar), declare classes (call_function('include'...)), or neither. */
static int ruby_function_kind(const char *path)
{
    size_t len;
    char *text = read_text(path, &len);
    if (!text)
        return PP_FN_ANY;
    int kind = PP_FN_PURE;
    if (strstr(text, "setvar") || strstr(text, "compiler.topscope") || strstr(text, "topscope["))
        kind = PP_FN_ANY;
    for (const char *p = strstr(text, "scope"); p && kind != PP_FN_ANY; p = strstr(p + 5, "scope")) {
        const char *q = p + 5;
        while (*q == '_' || (*q >= 'a' && *q <= 'z'))
            q++;
        if (*q != '[')
            continue;
        const char *close = strchr(q, ']');
        if (!close || memchr(q, '\n', (size_t)(close - q)))
            continue;
        q = close + 1;
        while (*q == ' ')
            q++;
        if (q[0] == '=' && q[1] != '=' && q[1] != '~' && q[1] != '>')
            kind = PP_FN_ANY;
    }
    if (kind == PP_FN_PURE && (strstr(text, "'include'") || strstr(text, "\"include\"") || strstr(text, "'contain'") ||
                               strstr(text, "\"contain\"") || strstr(text, "'require'") || strstr(text, "\"require\"")))
        kind = PP_FN_CLASSES;
    free(text);
    return kind;
}

/* The functions under dir (lib/puppet/functions: NS::a::b from NS/a/b.rb; lib/puppet/parser/
 * functions: their file names; functions/NAME.pp: module::NAME), with what they may do. */
static void add_functions(ck_env *e, const char *dir, const char *prefix, bool ruby, int depth)
{
    if (depth > 16)
        return;
    char **names = list_names(dir);
    for (size_t i = 0; names && names[i]; i++) {
        char *p = xjoin(dir, "/", names[i], NULL);
        size_t n = strlen(names[i]);
        if (path_is_dir(p)) {
            char *sub = *prefix ? xjoin(prefix, "::", names[i], NULL) : xstrdup(names[i]);
            add_functions(e, p, sub, ruby, depth + 1);
            free(sub);
        } else if (ruby ? (n > 3 && !strcmp(names[i] + n - 3, ".rb")) : (n > 3 && !strcmp(names[i] + n - 3, ".pp"))) {
            char *base = xstrndup(names[i], n - 3);
            char *name = *prefix ? xjoin(prefix, "::", base, NULL) : xstrdup(base);
            if (!hv_hash_gets(e->functions, name))
                hv_hash_sets(e->functions, name, hv_int(ruby ? ruby_function_kind(p) : PP_FN_CLASSES));
            free(name);
            free(base);
        }
        free(p);
    }
    free_names(names);
}

/* The functions of the environment and of every module the lookups find. */
static void read_functions(ck_env *e)
{
    e->functions = hv_hash();
    for (size_t i = 0; i < hv_hash_len(e->modules_present); i++) {
        const char *mod = hv_str_ptr(hv_hash_key_at(e->modules_present, i));
        const char *dir = hv_str_ptr(hv_hash_val_at(e->modules_present, i));
        char *d = xjoin(dir, "/lib/puppet/functions", NULL);
        add_functions(e, d, "", true, 0);
        free(d);
        d = xjoin(dir, "/lib/puppet/parser/functions", NULL);
        add_functions(e, d, "", true, 16); /* (Hiera 3 API functions: one folder, no namespaces) */
        free(d);
        d = xjoin(dir, "/functions", NULL);
        add_functions(e, d, mod, false, 0);
        free(d);
    }
    char *d = xjoin(e->dir, "/lib/puppet/functions", NULL);
    add_functions(e, d, "", true, 0);
    free(d);
}

/* Whether file is the main manifest or one of the files of its folder. */
static bool in_main_manifest(const ck_env *e, const char *file)
{
    if (!e->manifest)
        return false;
    size_t n = strlen(e->manifest);
    return !strncmp(file, e->manifest, n) && (file[n] == 0 || file[n] == '/');
}

/* The rank of file among the files Puppet's autoloader reads for the class name, or -1: for
 * a::b::c, the module a (the first on the modulepath) gives manifests/b/c.pp (0), manifests/b.pp
 * (1), then manifests/init.pp (2), and the first of them that defines the class is loaded. */
static int autoload_rank(const ck_env *e, const char *name, const char *file)
{
    const char *sep = strstr(name, "::");
    size_t ml = sep ? (size_t)(sep - name) : strlen(name);
    char *mod = xstrndup(name, ml);
    const hv *dir = hv_hash_gets(e->modules_present, mod);
    free(mod);
    if (!dir)
        return -1;
    char *rest = xstrdup(sep ? sep + 2 : "");
    int rank = -1;
    for (int r = 0; rank < 0; r++) {
        char *cand;
        if (!*rest) {
            cand = xjoin(hv_str_ptr(dir), "/manifests/init.pp", NULL);
        } else {
            char *rel = xstrdup(rest);
            for (char *q; (q = strstr(rel, "::"));)
                memmove(q + 1, q + 2, strlen(q + 2) + 1), *q = '/';
            cand = xjoin(hv_str_ptr(dir), "/manifests/", rel, ".pp", NULL);
            free(rel);
        }
        if (!strcmp(cand, file))
            rank = r;
        free(cand);
        if (!*rest)
            break;
        char *last = NULL;
        for (char *q = rest; (q = strstr(q, "::")); q += 2)
            last = q;
        if (last)
            *last = 0;
        else
            *rest = 0;
    }
    free(rest);
    return rank;
}

/* A class defined in several files (two modules that both define `rsyslog`, a copy kept under
 * another module's name): the definition Puppet uses is the main manifest's, which is read before
 * anything is autoloaded, else the one of the file its autoloader reads first; the others are
 * shadowed. When neither says, the last one read stays the one found. */
static void shadow_duplicate_classes(ck_env *e)
{
    pp_index *x = e->pp;
    hv *seen = hv_hash(); /* name -> count */
    bool dup = false;
    for (size_t i = 0; i < x->nclasses; i++) {
        const hv *n = hv_hash_gets(seen, x->classes[i].name);
        if (n)
            dup = true;
        hv_hash_sets(seen, x->classes[i].name, hv_int(n ? hv_int_val(n) + 1 : 1));
    }
    for (size_t i = 0; dup && i < x->nclasses; i++) {
        pp_class *c = &x->classes[i];
        if (hv_int_val(hv_hash_gets(seen, c->name)) < 2)
            continue;
        long best = -1;
        int best_rank = 1000;
        for (size_t j = 0; j < x->nclasses; j++) {
            if (strcmp(x->classes[j].name, c->name))
                continue;
            bool main = in_main_manifest(e, x->classes[j].file);
            int rank = main ? -1 : autoload_rank(e, c->name, x->classes[j].file);
            if (rank == -1 && !main)
                continue;
            if (rank <= best_rank) /* the main manifest's last definition, else the lowest rank */
                best = (long)j, best_rank = rank;
        }
        if (best >= 0)
            c->shadowed = (size_t)best != i;
    }
    hv_decref(seen);
}

/* Every module's manifests/ and types/ on the modulepath (the first folder that has a module
 * wins, as for Puppet), and the environment's own manifests. */
static void read_manifests(ck_ctx *c)
{
    ck_env *e = c->env;
    e->pp = pp_index_new();
    e->resolved_pp = NULL;
    for (size_t r = 0; r < e->nmodroots; r++) {
        char **mods = list_names(e->modroots[r]);
        for (size_t i = 0; mods && mods[i]; i++) {
            if (!valid_mod_name(mods[i]) || ck_module_present(e, mods[i]))
                continue;
            char *dir = xjoin(e->modroots[r], "/", mods[i], NULL);
            if (path_is_dir(dir)) {
                hv_hash_sets(e->modules_present, mods[i], hv_str(dir));
                char *m = xjoin(dir, "/manifests", NULL);
                add_manifests(c, m, 0);
                free(m);
                m = xjoin(dir, "/types", NULL);
                add_manifests(c, m, 0);
                free(m);
                m = xjoin(dir, "/templates", NULL);
                add_manifests(c, m, 0);
                free(m);
                m = xjoin(dir, "/functions", NULL); /* Puppet functions and Bolt plans look keys up too */
                add_manifests(c, m, 0);
                free(m);
                m = xjoin(dir, "/plans", NULL);
                add_manifests(c, m, 0);
                free(m);
            }
            free(dir);
        }
        free_names(mods);
    }
    e->prog = pp_program_new();
    if (e->manifest) {
        if (path_is_dir(e->manifest)) {
            add_manifests(c, e->manifest, 0);
            /* Puppet reads a folder's *.pp at any depth, sorted by path */
            hv *all = hv_array();
            walk_files(e->manifest, 0, all);
            size_t n = hv_array_len(all);
            char **paths = xcalloc(n ? n : 1, sizeof *paths);
            size_t np = 0;
            for (size_t i = 0; i < n; i++) {
                const char *f = hv_str_ptr(hv_array_get(all, i));
                size_t fl = strlen(f);
                if (fl > 3 && !strcmp(f + fl - 3, ".pp"))
                    paths[np++] = xstrdup(f);
            }
            qsort(paths, np, sizeof *paths, cmp_str);
            for (size_t i = 0; i < np; i++) {
                program_add(c, paths[i]);
                free(paths[i]);
            }
            free(paths);
            hv_decref(all);
        } else if (path_is_file(e->manifest)) {
            add_manifest(c, e->manifest);
            program_add(c, e->manifest);
        }
    }
    shadow_duplicate_classes(e);
    read_functions(e);
    c->report->manifests += e->pp->files;
    /* the type aliases of every module (type Name = ...), for parameter types and convert_to */
    e->aliases = ptype_aliases_new();
    for (size_t i = 0; i < e->pp->naliases; i++)
        ptype_aliases_add(e->aliases, e->pp->aliases[i].name, e->pp->aliases[i].body);
}

/* ------------------------------------------------------------------ one environment */

char *ck_engine_path(const ck_env *e, const char *reported)
{
    const char *dir = e->only_module ? e->only_module : e->dir;
    size_t rl = strlen(e->real_dir);
    return !strncmp(reported, e->real_dir, rl) && reported[rl] == '/' ? xjoin(dir, reported + rl, NULL) : xstrdup(reported);
}

overlay *ck_texts_overlay(ck_ctx *c, snapshot *base)
{
    ck_env *e = c->env;
    overlay_text *t = xcalloc(c->o->ntexts + 1, sizeof *t);
    char **paths = xcalloc(c->o->ntexts + 1, sizeof *paths);
    for (size_t i = 0; i < c->o->ntexts; i++) {
        paths[i] = ck_engine_path(e, c->o->texts[i].path);
        t[i] = (overlay_text){paths[i], c->o->texts[i].text, c->o->texts[i].len};
    }
    overlay *ov = overlay_new(base, t, c->o->ntexts);
    for (size_t i = 0; i < c->o->ntexts; i++)
        free(paths[i]);
    free(paths);
    free(t);
    return ov;
}

/* The private cache: over the caller's texts (named as the engine names the files) when it
 * gives some, so that a hiera.yaml's unsaved text is the configuration read. */
static hiera_cache *given_texts_cache(ck_ctx *c)
{
    if (!c->o->ntexts)
        return cache_new();
    overlay *ov = ck_texts_overlay(c, NULL);
    hiera_cache *view = overlay_new_view(ov);
    overlay_release(ov);
    return view;
}

/* The environment c->env as read: its snapshot, manifests, configurations, levels and data files
 * (what a session keeps between runs: session.c) */
void ck_env_model(ck_ctx *c)
{
    ck_env *e = c->env;
    e->file_index = hv_hash();
    e->key_index = hv_hash();
    e->lo_entries = hv_array();
    e->modules_present = hv_hash();
    c->report->environments++;

    const char *envs[1] = {e->name};
    snapshot_spec spec = {e->codedir, e->envpath, e->hiera_config, envs, 1, NULL, NULL, NULL, e->envpath};
    e->snap = snapshot_build(&spec, NULL);
    e->cache = given_texts_cache(c);
    /* the nodes' lookups read the caller's texts too */
    e->node_texts = c->o->ntexts ? ck_texts_overlay(c, e->snap) : NULL;

    module_roots_of(e);
    read_manifests(c);

    /* configurations: global, environment, modules (each module once: the first root wins) */
    if (e->hiera_config && path_is_file(e->hiera_config))
        add_config(c, e->hiera_config, LAYER_GLOBAL, NULL);
    char *p = xjoin(e->dir, "/hiera.yaml", NULL);
    if (path_is_file(p))
        add_config(c, p, LAYER_ENV, NULL);
    free(p);
    for (size_t r = 0; r < e->nmodroots; r++) {
        char **mods = list_names(e->modroots[r]);
        for (size_t i = 0; mods && mods[i]; i++) {
            const hv *where = hv_hash_gets(e->modules_present, mods[i]);
            char *dir = xjoin(e->modroots[r], "/", mods[i], NULL);
            if (where && !strcmp(hv_str_ptr(where), dir)) {
                char *cfgp = xjoin(dir, "/hiera.yaml", NULL);
                if (path_is_file(cfgp))
                    add_config(c, cfgp, LAYER_MODULE, mods[i]);
                free(cfgp);
            }
            free(dir);
        }
        free_names(mods);
    }
    find_files(c);
    for (size_t i = 0; i < e->nfiles; i++) {
        load_file(c, &e->files[i]);
        c->report->data_files++;
    }
}

/* The rules over the environment's model (not the nodes': ck_nodes). What they build (keys,
 * references, variables, lookup_options entries) is ck_env_rules_reset's to clear. */
void ck_env_rules(ck_ctx *c)
{
    ck_env *e = c->env;
    for (size_t ci = 0; ci < e->nconfigs; ci++)
        ck_config_interpolations(c, (int)ci);
    for (size_t i = 0; i < e->nfiles; i++)
        ck_data_file(c, (uint32_t)i);
    ck_resolve_lookups(c);
    ck_classes(c);
    ck_data_cross(c);
    ck_puppet8(c);
}

/* ------------------------------------------------------------------ configuration file */

struct ck_conf {
    char *dir;          /* patterns are relative to it */
    hv *rules;          /* name -> severity (int) */
    hv *exclude;        /* array of patterns */
    bool warnings_as_errors;
    bool loaded;
};

static int severity_word(const hv *v)
{
    if (hv_is(v, HV_BOOL))
        return hv_bool_val(v) ? -1 : CHECK_OFF; /* `off` reads as false in YAML; true: the default */
    if (!hv_is(v, HV_STRING))
        return -2;
    const char *s = hv_str_ptr(v);
    if (!strcmp(s, "off") || !strcmp(s, "ignore") || !strcmp(s, "disable"))
        return CHECK_OFF;
    if (!strcmp(s, "warning") || !strcmp(s, "warn"))
        return CHECK_WARNING;
    if (!strcmp(s, "note") || !strcmp(s, "info"))
        return CHECK_NOTE;
    if (!strcmp(s, "error"))
        return CHECK_ERROR;
    return -2;
}

static bool read_conf(ck_conf *conf, const char *path, bool required, char **error)
{
    if (!path_is_file(path)) {
        if (required) {
            *error = xasprintf("cannot read the configuration file %s", path);
            return false;
        }
        return true;
    }
    herr err = {0};
    hv *v = yaml_load_file(path, YAML_PUPPET, &err);
    if (!v) {
        *error = xasprintf("%s: %s", path, err.msg ? err.msg : "does not parse");
        herr_clear(&err);
        return false;
    }
    bool ok = true;
    if (!hv_is(v, HV_HASH) && !hv_is(v, HV_UNDEF)) {
        *error = xasprintf("%s: expected a hash (rules:, exclude:, warnings_as_errors:)", path);
        ok = false;
    }
    for (size_t i = 0; ok && hv_is(v, HV_HASH) && i < hv_hash_len(v); i++) {
        const hv *k = hv_hash_key_at(v, i), *val = hv_hash_val_at(v, i);
        const char *ks = hv_is(k, HV_STRING) ? hv_str_ptr(k) : "";
        if (!strcmp(ks, "rules") && hv_is(val, HV_HASH)) {
            for (size_t j = 0; j < hv_hash_len(val); j++) {
                const hv *rk = hv_hash_key_at(val, j);
                const char *rn = hv_is(rk, HV_STRING) ? hv_str_ptr(rk) : "";
                int sev = severity_word(hv_hash_val_at(val, j));
                if (!check_rule_find(rn)) {
                    *error = xasprintf("%s: unknown rule '%s' (hiera check --list-rules lists them)", path, rn);
                    ok = false;
                    break;
                }
                if (sev == -2) {
                    *error = xasprintf("%s: rule '%s': expected off, note, warning or error", path, rn);
                    ok = false;
                    break;
                }
                if (sev >= 0)
                    hv_hash_sets(conf->rules, rn, hv_int(sev));
            }
        } else if (!strcmp(ks, "exclude") && hv_is(val, HV_ARRAY)) {
            for (size_t j = 0; j < hv_array_len(val); j++)
                if (hv_is(hv_array_get(val, j), HV_STRING))
                    hv_array_push(conf->exclude, hv_incref(hv_array_get(val, j)));
        } else if (!strcmp(ks, "warnings_as_errors")) {
            conf->warnings_as_errors = hv_truthy(val);
        } else {
            *error = xasprintf("%s: unknown setting '%s' (rules, exclude, warnings_as_errors)", path, ks);
            ok = false;
        }
    }
    hv_decref(v);
    conf->loaded = ok;
    return ok;
}

/* A path pattern: '*' and '?' within a component, '**' across components. */
static bool pat_match(const char *p, const char *s)
{
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            p += 2;
            if (*p == '/')
                p++;
            for (const char *t = s;; t++) {
                if (pat_match(p, t))
                    return true;
                if (!*t)
                    return false;
            }
        }
        if (*p == '*') {
            p++;
            for (const char *t = s;; t++) {
                if (pat_match(p, t))
                    return true;
                if (!*t || *t == '/')
                    return false;
            }
        }
        if (!*s || (*p != '?' && *p != *s) || (*p == '?' && *s == '/'))
            return false;
        p++;
        s++;
    }
    return !*s;
}

static bool excluded(const ck_conf *conf, const char *file)
{
    if (!conf->dir || !hv_array_len(conf->exclude))
        return false;
    size_t dl = strlen(conf->dir);
    if (strncmp(file, conf->dir, dl) != 0 || file[dl] != '/')
        return false;
    const char *rel = file + dl + 1;
    for (size_t i = 0; i < hv_array_len(conf->exclude); i++) {
        const char *pat = hv_str_ptr(hv_array_get(conf->exclude, i));
        if (pat_match(pat, rel))
            return true;
        /* a folder pattern covers what is under it */
        size_t pl = strlen(pat);
        if (pl && pat[pl - 1] != '*' && strncmp(rel, pat, pl) == 0 && (rel[pl] == '/' || pat[pl - 1] == '/'))
            return true;
    }
    return false;
}

/* ------------------------------------------------------------------ inline comments */

typedef struct {
    char *path;
    hv *lines;     /* line (string) -> array of rule names ("all") */
    hv *wholefile; /* array of rule names */
} disables;

static void add_names(hv *list, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ',' || s[i] == ' '))
            i++;
        size_t st = i;
        while (i < n && s[i] != ',' && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            i++;
        if (i > st)
            hv_array_push(list, hv_strn(s + st, i - st));
        if (i < n && s[i] != ',' && s[i] != ' ')
            break;
    }
}

static void read_disables(const check_options *o, disables *d, const char *path)
{
    d->lines = hv_hash();
    d->wholefile = hv_array();
    size_t len;
    char *text = text_of(o, NULL, path, &len);
    if (!text)
        return;
    uint32_t line = 1;
    hv *pending = NULL;
    for (size_t pos = 0; pos <= len;) {
        const char *ls = text + pos;
        const char *nl = memchr(ls, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - ls) : len - pos;
        const char *mark = n >= 12 ? memmem(ls, n, "hiera-check:", 12) : NULL;
        const char *hash = mark ? memchr(ls, '#', (size_t)(mark - ls)) : NULL;
        size_t first = 0;
        while (first < n && (ls[first] == ' ' || ls[first] == '\t'))
            first++;
        bool comment_only = first < n && ls[first] == '#';
        bool blank = first >= n || (first + 1 == n && ls[first] == '\r');
        if (pending && !comment_only && !blank) {
            char key[16];
            snprintf(key, sizeof key, "%u", line);
            hv *list = hv_hash_gets(d->lines, key);
            if (!list) {
                list = hv_array();
                hv_hash_sets(d->lines, key, list);
            }
            for (size_t i = 0; i < hv_array_len(pending); i++)
                hv_array_push(list, hv_incref(hv_array_get(pending, i)));
            hv_decref(pending);
            pending = NULL;
        }
        if (hash) {
            const char *p = mark + 12;
            const char *end = ls + n;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            if ((size_t)(end - p) > 13 && !strncmp(p, "disable-file=", 13)) {
                add_names(d->wholefile, p + 13, (size_t)(end - p - 13));
            } else if ((size_t)(end - p) > 8 && !strncmp(p, "disable=", 8)) {
                hv *names = hv_array();
                add_names(names, p + 8, (size_t)(end - p - 8));
                if (comment_only) {
                    if (!pending)
                        pending = hv_array();
                    for (size_t i = 0; i < hv_array_len(names); i++)
                        hv_array_push(pending, hv_incref(hv_array_get(names, i)));
                } else {
                    char key[16];
                    snprintf(key, sizeof key, "%u", line);
                    hv *list = hv_hash_gets(d->lines, key);
                    if (!list) {
                        list = hv_array();
                        hv_hash_sets(d->lines, key, list);
                    }
                    for (size_t i = 0; i < hv_array_len(names); i++)
                        hv_array_push(list, hv_incref(hv_array_get(names, i)));
                }
                hv_decref(names);
            }
        }
        if (!nl)
            break;
        pos += n + 1;
        line++;
    }
    hv_decref(pending);
    free(text);
}

static bool names_have(const hv *list, const char *rule)
{
    for (size_t i = 0; list && i < hv_array_len(list); i++) {
        const char *n = hv_str_ptr(hv_array_get(list, i));
        if (!strcmp(n, rule) || !strcmp(n, "all"))
            return true;
    }
    return false;
}

static bool disabled_inline(const check_options *o, hv *cache, const char *file, const char *rule, uint32_t line)
{
    if (!*file)
        return false;
    hv *entry = hv_hash_gets(cache, file);
    if (!entry) {
        disables d = {0};
        read_disables(o, &d, file);
        entry = hv_array();
        hv_array_push(entry, d.lines);
        hv_array_push(entry, d.wholefile);
        hv_hash_sets(cache, file, entry);
    }
    if (names_have(hv_array_get(entry, 1), rule))
        return true;
    char key[16];
    snprintf(key, sizeof key, "%u", line);
    return names_have(hv_hash_gets(hv_array_get(entry, 0), key), rule);
}

/* ------------------------------------------------------------------ setting environments up */

static char *real_path(const char *p)
{
    char *r = realpath(p, NULL);
    return r ? r : xstrdup(p);
}

/* Puppet's default confdir, as hiera lookup finds it without --confdir (the installed Puppet's
 * layout: /etc/puppet or /etc/puppetlabs/puppet as root, ~/.puppet/etc or
 * ~/.puppetlabs/etc/puppet as another user), so that its puppet.conf (strict and the like) is
 * read as the lookups read it; fallback when the settings cannot be made. */
static char *default_confdir(const char *fallback)
{
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&so, &err);
    char *v = s ? hiera_settings_get(s, "confdir", &err) : NULL;
    hiera_settings_free(s);
    hiera_error_clear(&err);
    return v ? v : xstrdup(fallback);
}

/* The temporary folder of a PATH that is an environment or a module: <tmp>/<n>/code (an empty
 * code directory and confdir, so that no global layer of this machine is read) and
 * <tmp>/<n>/envs/<env> (the environment: a link to PATH, or for a module a folder whose modules/
 * holds a link to it and to its test fixtures). */
static bool make_tmp(ck_ctx *c, char **error)
{
    if (c->tmpdir)
        return true;
    const char *t = getenv("TMPDIR");
    char *tmpl = xjoin(t && *t ? t : "/tmp", "/hiera-check.XXXXXX", NULL);
    if (!mkdtemp(tmpl)) {
        *error = xasprintf("cannot make a temporary folder in %s: %s", t && *t ? t : "/tmp", strerror(errno));
        free(tmpl);
        return false;
    }
    c->tmpdir = tmpl;
    return true;
}

static char *module_name_of(const char *dir)
{
    char *meta = xjoin(dir, "/metadata.json", NULL);
    herr err = {0};
    hv *m = hjson_load_file(meta, &err);
    herr_clear(&err);
    free(meta);
    char *name = NULL;
    const hv *n = m && hv_is(m, HV_HASH) ? hv_hash_gets(m, "name") : NULL;
    if (n && hv_is(n, HV_STRING)) {
        const char *s = hv_str_ptr(n);
        const char *cut = strrchr(s, '/'), *dash = strrchr(s, '-');
        if (dash && (!cut || dash > cut))
            cut = dash;
        name = xstrdup(cut ? cut + 1 : s);
    }
    hv_decref(m);
    if (!name || !valid_mod_name(name)) {
        free(name);
        char *base = pn_basename(dir);
        const char *s = base;
        if (!strncmp(s, "puppet-", 7))
            s += 7;
        else if (!strncmp(s, "puppetlabs-", 11))
            s += 11;
        name = xstrdup(s);
        free(base);
        for (char *q = name; *q; q++)
            if (*q == '-')
                *q = '_';
    }
    return name;
}

static ck_env *new_env(env_list *l)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    ck_env *e = &l->v[l->n++];
    memset(e, 0, sizeof *e);
    return e;
}

static void env_common(ck_env *e)
{
    char *m = env_conf_setting(e->dir, "manifest");
    e->manifest = m ? pn_plus(e->dir, m) : xjoin(e->dir, "/manifests", NULL);
    free(m);
    read_puppetfile(e, e->real_dir);
}

/* The environments of a code directory. */
static bool envs_of_codedir(ck_ctx *c, env_list *l, const char *codedir, char **error)
{
    const check_options *o = c->o;
    char *envpath = o->environmentpath ? xstrdup(o->environmentpath) : xjoin(codedir, "/environments", NULL);
    char **names = NULL;
    if (o->all_environments) {
        names = list_names(envpath);
        if (!names) {
            *error = xasprintf("cannot read the environments folder %s", envpath);
            free(envpath);
            return false;
        }
    } else {
        const char *env = o->environment ? o->environment : "production";
        names = xcalloc(2, sizeof *names);
        names[0] = xstrdup(env);
        char *d = xjoin(envpath, "/", env, NULL);
        bool ok = path_is_dir(d);
        free(d);
        if (!ok) {
            *error = xasprintf("no environment '%s' in %s", env, envpath);
            free_names(names);
            free(envpath);
            return false;
        }
    }
    for (size_t i = 0; names[i]; i++) {
        char *d = xjoin(envpath, "/", names[i], NULL);
        if (valid_env_name(names[i]) && path_is_dir(d)) {
            ck_env *e = new_env(l);
            e->name = xstrdup(names[i]);
            e->dir = xstrdup(d);
            e->real_dir = xstrdup(d);
            e->codedir = xstrdup(codedir);
            e->confdir = o->confdir ? xstrdup(o->confdir) : default_confdir(codedir);
            e->envpath = xstrdup(envpath);
            /* (the global hiera.yaml: --confdir's puppet.conf's hiera_config, the code directory's,
             * else --confdir's; never the machine's) */
            e->hiera_config = o->hiera_config ? xstrdup(o->hiera_config)
                              : o->confdir    ? confdir_hiera_config(e)
                                              : check_hiera_config(codedir, codedir);
            env_common(e);
        }
        free(d);
    }
    free_names(names);
    free(envpath);
    return true;
}

/* A PATH: a code directory, a module, or an environment (a control repository). */
static bool envs_of_path(ck_ctx *c, env_list *l, const char *path, size_t n, char **error)
{
    if (!path_is_dir(path)) {
        *error = xasprintf("%s: no such folder", path);
        return false;
    }
    char *real = real_path(path);
    check_tree_kind kind = check_tree_kind_of(real);
    if (kind == CHECK_TREE_CODEDIR) {
        bool ok = envs_of_codedir(c, l, real, error);
        free(real);
        return ok;
    }
    if (!make_tmp(c, error)) {
        free(real);
        return false;
    }
    const char *envname = c->o->environment && valid_env_name(c->o->environment) ? c->o->environment : "production";
    char num[32];
    snprintf(num, sizeof num, "%zu", n);
    char *base = xjoin(c->tmpdir, "/", num, NULL);
    char *code, *envs, *envdir;
    bool ok = check_tmp_codedir(base, envname, kind == CHECK_TREE_MODULE ? NULL : real, &code, &envs, &envdir, error);
    if (!ok)
        goto done;
    ck_env *e = new_env(l);
    e->name = xstrdup(envname);
    e->dir = xstrdup(envdir);
    e->codedir = xstrdup(code);
    /* its puppet.conf: strict and the like (the default confdir's without --confdir, as hiera lookup) */
    e->confdir = c->o->confdir ? xstrdup(c->o->confdir) : default_confdir(code);
    e->envpath = xstrdup(envs);
    e->hiera_config = c->o->hiera_config ? xstrdup(c->o->hiera_config) : check_hiera_config(code, code);
    e->real_dir = xstrdup(real);
    if (kind == CHECK_TREE_MODULE) {
        /* the module, and the modules its tests use, in the environment's modules folder */
        char *mods = xjoin(envdir, "/modules", NULL);
        mkdir(mods, 0700);
        char *name = module_name_of(real);
        char *link = xjoin(mods, "/", name, NULL);
        if (symlink(real, link) != 0)
            ok = false;
        e->only_module = link;
        e->only_module_name = name;
        char *fx = xjoin(real, "/spec/fixtures/modules", NULL);
        char **deps = list_names(fx);
        for (size_t i = 0; deps && deps[i]; i++) {
            if (!strcmp(deps[i], name) || !valid_mod_name(deps[i]))
                continue;
            char *target = xjoin(fx, "/", deps[i], NULL), *dl = xjoin(mods, "/", deps[i], NULL);
            if (path_is_dir(target) && symlink(target, dl) != 0)
                ok = false;
            free(target);
            free(dl);
        }
        free_names(deps);
        free(fx);
        free(mods);
    }
    if (!ok)
        *error = xasprintf("cannot link %s into the temporary folder %s: %s", real, base, strerror(errno));
    else
        env_common(e);
done:
    free(base);
    free(code);
    free(envs);
    free(envdir);
    free(real);
    return ok;
}

/* The path of a file as reported: under the environment's real folder rather than its link. */
static char *report_path(const ck_env *e, const char *file)
{
    const char *dir = e->only_module ? e->only_module : e->dir;
    size_t dl = strlen(dir);
    if (e->real_dir && strcmp(dir, e->real_dir) != 0 && strncmp(file, dir, dl) == 0 && (file[dl] == '/' || !file[dl]))
        return xjoin(e->real_dir, file + dl, NULL);
    return xstrdup(file);
}

/* Whether a finding in file is the environment's to report. */
static bool reportable(const ck_env *e, const char *file)
{
    if (!*file)
        return true;
    if (e->only_module) {
        size_t ml = strlen(e->only_module);
        return strncmp(file, e->only_module, ml) == 0 && (file[ml] == '/' || !file[ml]);
    }
    /* files of modules the Puppetfile manages are not the repository's */
    for (size_t r = 0; r < e->nmodroots; r++) {
        size_t rl = strlen(e->modroots[r]);
        if (strncmp(file, e->modroots[r], rl) != 0 || file[rl] != '/')
            continue;
        const char *m = file + rl + 1;
        const char *slash = strchr(m, '/');
        char *name = slash ? xstrndup(m, (size_t)(slash - m)) : xstrdup(m);
        bool ext = ck_is_external_module(e, name);
        free(name);
        if (ext) {
            /* unless the environment's own hierarchy reads it (a data module) */
            const hv *fi = hv_hash_gets(e->file_index, file);
            if (!fi)
                return false;
            const ck_file *f = &e->files[hv_int_val(fi)];
            for (size_t i = 0; i < f->nreach; i++)
                if (e->configs[f->reach[i].cfg].layer != LAYER_MODULE)
                    return true;
            return f->orphan && f->cfg_owner >= 0 && e->configs[f->cfg_owner].layer != LAYER_MODULE;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ the run */

static int cmp_finding(const void *a, const void *b)
{
    const check_finding *x = a, *y = b;
    int r = strcmp(x->file, y->file);
    if (r)
        return r;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    r = strcmp(x->rule, y->rule);
    return r ? r : strcmp(x->message, y->message);
}

static void report_add(check_report *r, check_finding f)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = xrealloc(r->v, r->cap * sizeof *r->v);
    }
    r->v[r->n++] = f;
}

void ck_diag_enter(ck_ctx *c, diag_sink *saved) { diag_enter((diag_sink){.fn = engine_diag, .data = c}, saved); }

void ck_run_close(ck_run *r)
{
    for (size_t i = 0; i < r->envs.n; i++)
        env_free(&r->envs.v[i]);
    free(r->envs.v);
    for (size_t k = 0; k < r->c.nf; k++) {
        ck_finding_int *f = &r->c.f[k];
        free(f->file);
        free(f->message);
        for (size_t j = 0; j < f->nnodes; j++)
            free(f->nodes[j]);
        free(f->nodes);
    }
    free(r->c.f);
    if (r->c.tmpdir) {
        path_remove_tree(r->c.tmpdir);
        free(r->c.tmpdir);
    }
    hv_decref(r->overrides);
    hv_decref(r->inline_cache);
    if (r->conf) {
        hv_decref(r->conf->rules);
        hv_decref(r->conf->exclude);
        free(r->conf->dir);
        free(r->conf);
    }
    memset(r, 0, sizeof *r);
}

int ck_run_open(ck_run *r, const check_options *o, check_report *report, char **error)
{
    memset(r, 0, sizeof *r);
    *error = NULL;
    r->c = (ck_ctx){.o = o, .report = report};
    r->overrides = hv_hash();
    r->inline_cache = hv_hash();
    r->conf = xcalloc(1, sizeof *r->conf);
    r->conf->rules = hv_hash();
    r->conf->exclude = hv_array();
    /* rule overrides */
    for (size_t i = 0; i < o->nrule_overrides; i++) {
        const char *s = o->rule_overrides[i];
        const char *eq = strchr(s, '=');
        char *name = eq ? xstrndup(s, (size_t)(eq - s)) : xstrdup(s);
        hv *word = hv_str(eq ? eq + 1 : "");
        int sev = severity_word(word);
        hv_decref(word);
        if (!check_rule_find(name) || sev < 0) {
            *error = !check_rule_find(name) ? xasprintf("unknown rule '%s' (hiera check --list-rules lists them)", name)
                                            : xasprintf("--rule %s: expected NAME=off|note|warning|error", s);
            free(name);
            ck_run_close(r);
            return -1;
        }
        hv_hash_sets(r->overrides, name, hv_int(sev));
        free(name);
    }
    if (o->facts_dir && !path_is_dir(o->facts_dir)) {
        *error = xasprintf("cannot read the facts folder %s", o->facts_dir);
        ck_run_close(r);
        return -1;
    }
    env_list *envs = &r->envs;
    bool ok = true;
    if (o->codedir && !o->npaths) {
        if (!path_is_dir(o->codedir)) {
            *error = xasprintf("%s: no such folder", o->codedir);
            ok = false;
        } else {
            char *real = real_path(o->codedir);
            ok = envs_of_codedir(&r->c, envs, real, error);
            free(real);
        }
    } else {
        size_t n = o->npaths ? o->npaths : 1;
        for (size_t i = 0; ok && i < n; i++)
            ok = envs_of_path(&r->c, envs, o->npaths ? o->paths[i] : ".", i, error);
    }
    if (ok && !envs->n) {
        *error = xstrdup("no environment to check");
        ok = false;
    }
    if (ok) {
        const char *given = o->npaths ? o->paths[0] : o->codedir ? o->codedir : ".";
        report->root = real_path(given);
    }
    /* the repository's configuration: --config, else .hiera-check.yaml where the first environment is */
    if (ok && !o->no_config) {
        char *path = o->config_file ? real_path(o->config_file) : xjoin(envs->v[0].real_dir, "/.hiera-check.yaml", NULL);
        r->conf->dir = o->config_file ? pn_dirname(path) : xstrdup(envs->v[0].real_dir);
        ok = read_conf(r->conf, path, o->config_file != NULL, error);
        free(path);
    }
    if (!ok) {
        free(report->root); /* (set before the configuration file could not be read) */
        report->root = NULL;
        ck_run_close(r);
        return -1;
    }
    return 0;
}

void ck_run_report(ck_run *r, size_t first)
{
    ck_ctx *c = &r->c;
    const check_options *o = c->o;
    for (size_t k = first; k < c->nf; k++) {
        ck_finding_int *f = &c->f[k];
        bool keep = reportable(c->env, f->file);
        char *file = keep ? report_path(c->env, f->file) : NULL;
        const hv *ov = hv_hash_gets(r->overrides, f->rule);
        const hv *cv = hv_hash_gets(r->conf->rules, f->rule);
        int sev = ov ? (int)hv_int_val(ov) : cv ? (int)hv_int_val(cv) : f->sev;
        if (keep && (sev == CHECK_OFF || excluded(r->conf, file) || disabled_inline(o, r->inline_cache, file, f->rule, f->line)))
            keep = false;
        if (keep && sev == CHECK_WARNING && (o->warnings_as_errors || r->conf->warnings_as_errors))
            sev = CHECK_ERROR;
        if (keep) {
            f->message = ck_report_text(c->env, f->message);
            report_add(c->report, (check_finding){f->rule, sev, file, f->line, f->col, f->message, f->nodes, f->nnodes});
        } else {
            free(file);
            free(f->message);
            for (size_t j = 0; j < f->nnodes; j++)
                free(f->nodes[j]);
            free(f->nodes);
        }
        free(f->file);
    }
    c->nf = first;
}

void ck_report_sort(check_report *report)
{
    if (report->n)
        qsort(report->v, report->n, sizeof *report->v, cmp_finding);
}

int check_run(const check_options *o, check_report *report, char **error)
{
    memset(report, 0, sizeof *report);
    ck_run r;
    if (ck_run_open(&r, o, report, error) != 0)
        return -1;
    diag_sink saved;
    ck_diag_enter(&r.c, &saved);
    bool ok = true;
    for (size_t i = 0; ok && i < r.envs.n; i++) {
        r.c.env = &r.envs.v[i];
        size_t first = r.c.nf;
        ck_env_model(&r.c);
        ck_env_rules(&r.c);
        if ((o->facts_dir || o->nodes) && ck_nodes(&r.c, error) != 0)
            ok = false;
        /* the environment's findings, as reported */
        ck_run_report(&r, first);
    }
    diag_leave(&saved);
    ck_run_close(&r);
    if (!ok) {
        check_report_free(report);
        return -1;
    }
    ck_report_sort(report);
    return 0;
}

void check_report_free(check_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].file);
        free(r->v[i].message);
        for (size_t j = 0; j < r->v[i].nnodes; j++)
            free(r->v[i].nodes[j]);
        free(r->v[i].nodes);
    }
    free(r->v);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r->root);
    memset(r, 0, sizeof *r);
}
