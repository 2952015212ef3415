/* target.c - which file an edit goes to (include/hiera.h: hiera_edit_target,
 * hiera_edit_file_levels, hiera_eyaml_encrypt).
 *
 * A level names the file for a node through the same layers and interpolated providers a lookup
 * walks (engine/lookup.c), so an edit of "the node's level X" writes the very file the node's
 * lookups read. A level that does not name one file (globs, mapped_paths, uris) is refused: which
 * of its files an edit should go to is the editor's decision, not the tool's. A file given by path
 * is matched against every level's location templates (%{...} standing for any text, as
 * snapshots and hiera check read them) to find the levels that can read it. */
#include "hiera.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/util.h"
#include "crypto/eyaml.h"
#include "engine/engine.h"
#include "engine/providers.h"
#include "engine/tmplmatch.h"

static const char *layer_name(layer_kind k) { return k == LAYER_GLOBAL ? "global" : k == LAYER_ENV ? "environment" : "module"; }

/* {"pkcs7_public_key"?, "pkcs7_public_key_env_var"?} of an eyaml level's options, or NULL */
static hv *eyaml_public(const hv *options)
{
    if (!hv_is(options, HV_HASH))
        return hv_hash();
    hv *out = hv_hash();
    static const char *const names[] = {"pkcs7_public_key", "pkcs7_public_key_env_var"};
    for (size_t i = 0; i < 2; i++) {
        const hv *v = hv_hash_gets(options, names[i]);
        if (hv_is(v, HV_STRING))
            hv_hash_sets(out, names[i], hv_incref((hv *)v));
    }
    return out;
}

/* Whether a location template interpolates something of the node: any %{...} but the environment
 * and Puppet's settings (which every node of the environment shares). */
static bool node_variables(const char *tmpl)
{
    for (const char *p = tmpl ? strstr(tmpl, "%{") : NULL; p; p = strstr(p + 2, "%{")) {
        const char *e = strchr(p, '}');
        if (!e)
            return true;
        const char *v = p + 2;
        while (v < e && *v == ' ')
            v++;
        if (!strncmp(v, "::", 2))
            v += 2;
        size_t n = (size_t)(e - v);
        while (n && v[n - 1] == ' ')
            n--;
        if (!(n == 11 && !strncmp(v, "environment", 11)) && strncmp(v, "settings::", 10) != 0)
            return true;
    }
    return false;
}

static hv *describe(const char *path, bool exists, layer_kind kind, const char *module, const hlevel *lvl,
                    const char *tmpl, const hv *options)
{
    hv *d = hv_hash();
    hv_hash_sets(d, "path", hv_str(path));
    hv_hash_sets(d, "exists", hv_bool(exists));
    hv_hash_sets(d, "layer", hv_str(layer_name(kind)));
    if (module)
        hv_hash_sets(d, "module", hv_str(module));
    hv_hash_sets(d, "level", hv_str(lvl->name ? lvl->name : ""));
    hv_hash_sets(d, "function", hv_str(lvl->fname ? lvl->fname : ""));
    hv_hash_sets(d, "template", hv_str(tmpl ? tmpl : ""));
    hv_hash_sets(d, "interpolated", hv_bool(tmpl && strstr(tmpl, "%{")));
    hv_hash_sets(d, "node_variables", hv_bool(node_variables(tmpl)));
    if (lvl->fname && !strcmp(lvl->fname, "eyaml_lookup_key"))
        hv_hash_sets(d, "eyaml", eyaml_public(options));
    return d;
}

typedef struct {
    layer *l;
    layer_kind kind;
    const char *module;
} layer_ref;

/* The layers an edit by level name searches: the module's, or the environment's then the global. */
static size_t edit_layers(hiera *h, const char *module, layer_ref out[2], herr *err)
{
    size_t n = 0;
    if (module) {
        mod_state ms;
        layer *l = module_layer(h, module, &ms, err);
        if (l && l->cfg)
            out[n++] = (layer_ref){l, LAYER_MODULE, module};
        else if (!herr_isset(err))
            herr_set(err, HERR_ERROR, ms == MOD_NOT_FOUND ? "no module '%s' on the environment's modulepath"
                                                          : "module '%s' has no hiera.yaml: its data has no levels to edit",
                     module);
        return n;
    }
    herr e = {0};
    layer *env = env_layer(h, &e);
    if (herr_isset(&e)) {
        herr_move(err, &e);
        return 0;
    }
    if (env && env->cfg)
        out[n++] = (layer_ref){env, LAYER_ENV, NULL};
    layer *g = global_layer(h);
    if (global_config(h, g, &e) && g->cfg)
        out[n++] = (layer_ref){g, LAYER_GLOBAL, NULL};
    herr_clear(&e);
    return n;
}

static hv *refused(hiera_error *err, herr *e, const char *file)
{
    if (file && !e->file)
        herr_at(e, file, 0, 0);
    herr_to_public(err, e);
    if (err)
        err->kind = HIERA_ERR_REFUSED;
    return NULL;
}

/* The path a node's provider gives: within its template (no '..' and no '/' the facts brought
 * beyond what %{...} may stand for), with no empty segment nor a name that is only an extension
 * (a variable the node lacks). */
static const char *path_problem(const char *path, const char *tmpl)
{
    if (!tmpl_match(tmpl, path, false))
        return "is outside what the level's path can name (the facts rule refuses it)";
    for (const char *p = path; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || p[1] == 0 || (p[1] == '.' && (p[2] == '/' || p[2] == 0)) ||
                            (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == 0))))
            return "has an empty or relative segment";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (base[0] == '.')
        return "has a file name that is only an extension: a variable it interpolates is empty for this node";
    return NULL;
}

hiera_value *hiera_edit_target(hiera *h, const char *module, const char *level, hiera_error *err)
{
    herr e = {0};
    layer_ref layers[2];
    size_t nl = edit_layers(h, module, layers, &e);
    if (herr_isset(&e))
        return refused(err, &e, NULL);
    sbuf names = {0};
    for (size_t li = 0; li < nl; li++) {
        layer *l = layers[li].l;
        for (int dflt = 0; dflt < (l->cfg->has_default_hierarchy ? 2 : 1); dflt++) {
            provider *provs;
            size_t n;
            if (layer_providers(h, l, dflt == 1, &provs, &n, &e) != LR_FOUND)
                return refused(err, &e, l->cfg->path);
            for (size_t i = 0; i < n; i++) {
                const provider *p = &provs[i];
                const hlevel *lvl = p->lvl;
                if (!lvl->name || strcmp(lvl->name, level) != 0) {
                    sb_addf(&names, "%s'%s'", names.len ? ", " : "", lvl->name ? lvl->name : "");
                    continue;
                }
                sb_free(&names);
                const char *cfgpath = l->cfg->path;
                const provider_def *pd = provider_find(lvl->fname ? lvl->fname : "");
                if (lvl->lkind == LOC_GLOB || lvl->lkind == LOC_GLOBS || lvl->lkind == LOC_MAPPED_PATHS) {
                    herr_set(&e, HERR_ERROR, "level '%s' reads %s: which of its files an edit goes to is yours to say (give the file)",
                             level, lvl->lkind == LOC_MAPPED_PATHS ? "mapped_paths" : "a glob");
                    return refused(err, &e, cfgpath);
                }
                if (lvl->lkind == LOC_URI || lvl->lkind == LOC_URIS || lvl->lkind == LOC_NONE) {
                    herr_set(&e, HERR_ERROR, "level '%s' reads no file (%s)", level,
                             lvl->lkind == LOC_NONE ? "no location" : "a uri");
                    return refused(err, &e, cfgpath);
                }
                if (!pd || pd->format != FMT_YAML) {
                    herr_set(&e, HERR_ERROR, "level '%s' reads its data with %s: only YAML files (yaml_data, "
                             "eyaml_lookup_key) are edited", level, lvl->fname ? lvl->fname : "no function");
                    return refused(err, &e, cfgpath);
                }
                bool glob;
                size_t nt;
                char **tmpls = config_level_templates(l->cfg, lvl, h->codedir, &glob, &nt);
                if (!nt) {
                    config_templates_free(tmpls, nt);
                    herr_set(&e, HERR_ERROR, "level '%s' names no file", level);
                    return refused(err, &e, cfgpath);
                }
                const char *path = p->nlocs ? p->locs[0].path : NULL;
                bool exists = p->nlocs && p->locs[0].exists;
                if (!path && !strstr(tmpls[0], "%{"))
                    path = tmpls[0]; /* a built-in hierarchy's file that does not exist yet */
                const char *why = path ? path_problem(path, tmpls[0]) : "cannot be resolved";
                if (why) {
                    herr_set(&e, HERR_ERROR, "the path level '%s' gives for this node (%s) %s", level, path ? path : "",
                             why);
                    config_templates_free(tmpls, nt);
                    return refused(err, &e, cfgpath);
                }
                hv *d = describe(path, exists && path_is_file(path), layers[li].kind, layers[li].module, lvl, tmpls[0],
                                 p->options);
                config_templates_free(tmpls, nt);
                return d;
            }
        }
    }
    herr_set(&e, HERR_ERROR, "no level named '%s' in %s (%s)", level,
             module ? "the module's hierarchy" : "the environment's or the global hierarchy",
             names.len ? sb_str(&names) : "no levels");
    sb_free(&names);
    return refused(err, &e, NULL);
}

/* the levels of one configuration whose templates match path */
static void levels_reading(hiera *h, const layer_ref *ref, const char *path, hv *out)
{
    const hcfg *cfg = ref->l->cfg;
    for (int dflt = 0; dflt < (cfg->has_default_hierarchy ? 2 : 1); dflt++) {
        const hlevel *levels = dflt ? cfg->dlevels : cfg->levels;
        size_t n = dflt ? cfg->ndlevels : cfg->nlevels;
        for (size_t i = 0; i < n; i++) {
            bool glob;
            size_t nt;
            char **tmpls = config_level_templates(cfg, &levels[i], h->codedir, &glob, &nt);
            for (size_t t = 0; t < nt; t++)
                if (tmpl_match(tmpls[t], path, glob)) {
                    hv_array_push(out, describe(path, path_is_file(path), ref->kind, ref->module, &levels[i], tmpls[t],
                                                levels[i].options));
                    break;
                }
            config_templates_free(tmpls, nt);
        }
    }
}

hiera_value *hiera_edit_file_levels(hiera *h, const char *path)
{
    hv *out = hv_array();
    herr e = {0};
    layer *g = global_layer(h);
    if (global_config(h, g, &e) && g->cfg)
        levels_reading(h, &(layer_ref){g, LAYER_GLOBAL, NULL}, path, out);
    herr_clear(&e);
    layer *env = env_layer(h, &e);
    if (env && env->cfg)
        levels_reading(h, &(layer_ref){env, LAYER_ENV, NULL}, path, out);
    herr_clear(&e);
    /* the module whose folder holds the file */
    char **roots = module_roots(h);
    for (size_t r = 0; roots && roots[r]; r++) {
        size_t rl = strlen(roots[r]);
        if (strncmp(path, roots[r], rl) != 0 || path[rl] != '/')
            continue;
        const char *name = path + rl + 1, *slash = strchr(name, '/');
        if (!slash)
            continue;
        char *module = xstrndup(name, (size_t)(slash - name));
        mod_state ms;
        layer *l = module_layer(h, module, &ms, &e);
        herr_clear(&e);
        if (l && l->cfg)
            levels_reading(h, &(layer_ref){l, LAYER_MODULE, module}, path, out);
        free(module);
        break;
    }
    module_roots_free(roots);
    return out;
}

char *hiera_eyaml_encrypt(const char *plain, size_t len, const hiera_value *eyaml_options, hiera_error *err)
{
    herr e = {0};
    eyaml_ctx *x = eyaml_new();
    char *block = eyaml_encrypt_options(x, plain ? plain : "", plain ? len : 0, eyaml_options, &e);
    eyaml_free(x);
    if (!block)
        herr_to_public(err, &e);
    return block;
}
