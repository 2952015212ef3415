/* enumerate.c - what a node sees, listed: its layers (global, environment, every module of the
 * environment's modulepath), their hierarchy levels interpolated for the node, the locations each
 * level resolves to (existing or not), and the keys of the data files found there, each with the
 * file and line that defines it. The listing walks the same layers and providers a lookup walks
 * (lookup.c), so it names exactly the files a lookup would read. */
#include "engine/enumerate.h"
#include "base/fsjournal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static const char *layer_kind_name(layer_kind k)
{
    return k == LAYER_GLOBAL ? "global" : k == LAYER_ENV ? "environment" : "module";
}

static const char *function_kind_name(fn_kind k)
{
    switch (k) {
    case FN_LOOKUP_KEY: return "lookup_key";
    case FN_DATA_DIG: return "data_dig";
    case FN_HIERA3_BACKEND: return "hiera3_backend";
    case FN_V4_DATA_HASH: return "v4_data_hash";
    default: return "data_hash";
    }
}

static hv *error_hash(const herr *e)
{
    hv *r = hv_hash();
    hv_hash_sets(r, "message", hv_str(e->msg ? e->msg : ""));
    if (e->file)
        hv_hash_sets(r, "file", hv_str(e->file));
    if (e->line)
        hv_hash_sets(r, "line", hv_int(e->line));
    return r;
}

/* The names of the modules on the modulepath (sorted, each once: the first folder that has a
 * module of that name wins, as in lookups). A new array of strings. */
static hv *module_names(hiera_ctx *h)
{
    hv *seen = hv_hash(), *names = hv_array();
    char **roots = module_roots(h);
    for (size_t r = 0; roots[r]; r++) {
        if (!cache_dir_exists(h->cache, roots[r]))
            continue;
        DIR *d = fs_opendir(roots[r]);
        if (!d)
            continue;
        hv *here = hv_array();
        struct dirent *de;
        while ((de = readdir(d)) != NULL)
            if (valid_module_name(de->d_name))
                hv_array_push(here, hv_str(de->d_name));
        closedir(d);
        for (size_t i = 0; i < hv_array_len(here); i++) {
            hv *n = hv_array_get(here, i);
            if (hv_hash_get(seen, n))
                continue;
            char *dir = xjoin(roots[r], "/", hv_str_ptr(n), NULL);
            if (cache_dir_exists(h->cache, dir)) {
                hv_hash_set(seen, hv_incref(n), hv_true());
                hv_array_push(names, hv_incref(n));
            }
            free(dir);
        }
        hv_decref(here);
    }
    module_roots_free(roots);
    hv_decref(seen);
    /* sorted by name (insertion sort: a modulepath holds tens to hundreds of modules) */
    size_t n = hv_array_len(names);
    hv **items = xcalloc(n ? n : 1, sizeof *items);
    for (size_t i = 0; i < n; i++) {
        hv *x = hv_array_get(names, i);
        size_t j = i;
        while (j > 0 && strcmp(hv_str_ptr(items[j - 1]), hv_str_ptr(x)) > 0) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = x;
    }
    hv *sorted = hv_array_sized(n);
    for (size_t i = 0; i < n; i++)
        hv_array_push(sorted, hv_incref(items[i]));
    free(items);
    hv_decref(names);
    return sorted;
}

/* Calls fn for every layer of the node in lookup order (global, environment, modules by name),
 * with the layer or, when it cannot be used, the error; layers that do not exist (no environment
 * hiera.yaml, a module without one) are skipped. */
typedef void (*layer_fn)(hiera_ctx *h, layer *l, layer_kind kind, const char *module, const herr *err, void *arg);

static void each_layer(hiera_ctx *h, layer_fn fn, void *arg)
{
    herr e = {0};
    layer *g = global_layer(h);
    if (global_config(h, g, &e))
        fn(h, g, LAYER_GLOBAL, NULL, NULL, arg);
    else
        fn(h, NULL, LAYER_GLOBAL, NULL, &e, arg);
    herr_clear(&e);
    layer *env = env_layer(h, &e);
    if (env || herr_isset(&e))
        fn(h, env, LAYER_ENV, NULL, herr_isset(&e) ? &e : NULL, arg);
    herr_clear(&e);
    hv *mods = module_names(h);
    for (size_t i = 0; i < hv_array_len(mods); i++) {
        const char *name = hv_str_ptr(hv_array_get(mods, i));
        mod_state st;
        layer *l = module_layer(h, name, &st, &e);
        if (l || herr_isset(&e))
            fn(h, l, LAYER_MODULE, name, herr_isset(&e) ? &e : NULL, arg);
        herr_clear(&e);
    }
    hv_decref(mods);
}

/* ------------------------------------------------------------------ the hierarchy */

static hv *levels_of(hiera_ctx *h, layer *l, bool use_default, herr *err)
{
    provider *provs;
    size_t n;
    if (layer_providers(h, l, use_default, &provs, &n, err) != LR_FOUND)
        return NULL;
    hv *levels = hv_array_sized(n);
    for (size_t i = 0; i < n; i++) {
        const provider *p = &provs[i];
        hv *lv = hv_hash();
        hv_hash_sets(lv, "name", hv_str(p->lvl->name ? p->lvl->name : ""));
        hv_hash_sets(lv, "function", hv_str(p->lvl->fname ? p->lvl->fname : ""));
        hv_hash_sets(lv, "kind", hv_str(function_kind_name(p->lvl->fkind)));
        hv *locs = hv_array_sized(p->nlocs);
        for (size_t j = 0; j < p->nlocs; j++) {
            const location *loc = &p->locs[j];
            hv *lc = hv_hash();
            hv_hash_sets(lc, "original", hv_str(loc->original ? loc->original : ""));
            hv_hash_sets(lc, loc->is_uri ? "uri" : "path", hv_str(loc->path ? loc->path : ""));
            hv_hash_sets(lc, "exists", hv_bool(loc->exists));
            hv_array_push(locs, lc);
        }
        hv_hash_sets(lv, "locations", locs);
        hv_array_push(levels, lv);
    }
    return levels;
}

static void describe_layer(hiera_ctx *h, layer *l, layer_kind kind, const char *module, const herr *err, void *arg)
{
    hv *out = arg, *d = hv_hash();
    hv_hash_sets(d, "layer", hv_str(layer_kind_name(kind)));
    if (module)
        hv_hash_sets(d, "module", hv_str(module));
    if (l) {
        hv_hash_sets(d, "name", hv_str(l->name ? l->name : ""));
        hv_hash_sets(d, "config", l->cfg && l->cfg->path ? hv_str(l->cfg->path) : hv_undef());
        hv_hash_sets(d, "version", hv_int(l->cfg ? l->cfg->version : 5));
        herr e = {0};
        hv *levels = levels_of(h, l, false, &e);
        hv_hash_sets(d, "levels", levels ? levels : hv_array());
        if (!levels)
            hv_hash_sets(d, "error", error_hash(&e));
        herr_clear(&e);
        if (levels && l->cfg->has_default_hierarchy) {
            hv *dl = levels_of(h, l, true, &e);
            hv_hash_sets(d, "default_levels", dl ? dl : hv_array());
            if (!dl)
                hv_hash_sets(d, "error", error_hash(&e));
            herr_clear(&e);
        }
    } else if (err) {
        hv_hash_sets(d, "error", error_hash(err));
    }
    hv_array_push(out, d);
}

hv *enum_hierarchy(hiera_ctx *h)
{
    hv *out = hv_array();
    each_layer(h, describe_layer, out);
    return out;
}

/* ------------------------------------------------------------------ the keys */

typedef struct {
    hv *keys;           /* key -> array of definitions */
    hv *lookup_options; /* array of definitions of lookup_options */
    hv *errors;         /* array of {"layer", "module"?, "level"?, "file"?, "message", "line"?} */
    bool names_only;    /* keys: key -> true, no definitions (and no lookup_options) */
} key_walk;

static void add_error(key_walk *w, layer_kind kind, const char *module, const char *level, const herr *e)
{
    hv *r = error_hash(e);
    hv_hash_sets(r, "layer", hv_str(layer_kind_name(kind)));
    if (module)
        hv_hash_sets(r, "module", hv_str(module));
    if (level)
        hv_hash_sets(r, "level", hv_str(level));
    hv_array_push(w->errors, r);
}

static void keys_of_levels(hiera_ctx *h, layer *l, layer_kind kind, const char *module, bool use_default, key_walk *w)
{
    provider *provs;
    size_t n;
    herr e = {0};
    if (layer_providers(h, l, use_default, &provs, &n, &e) != LR_FOUND) {
        add_error(w, kind, module, NULL, &e);
        herr_clear(&e);
        return;
    }
    size_t mlen = module ? strlen(module) : 0;
    for (size_t i = 0; i < n; i++) {
        provider *p = &provs[i];
        /* a function this engine does not have: a lookup reaching the level (a location that
         * exists, or none declared) fails, and so is the level reported, its files unread */
        bool reached = p->nil_location;
        for (size_t j = 0; j < p->nlocs && !reached; j++)
            reached = p->locs[j].exists;
        if (reached && !provider_usable(h, l, p, &e)) {
            add_error(w, kind, module, p->lvl->name, &e);
            herr_clear(&e);
            continue;
        }
        for (size_t j = 0; j < p->nlocs; j++) {
            location *loc = &p->locs[j];
            if (!loc->exists || loc->is_uri)
                continue;
            hv *data = location_data(h, l, p, loc, &e);
            if (!data) {
                add_error(w, kind, module, p->lvl->name, &e);
                herr_clear(&e);
                continue;
            }
            for (size_t k = 0; k < hv_hash_len(data); k++) {
                hv *key = hv_hash_key_at(data, k);
                if (!hv_is(key, HV_STRING))
                    continue;
                /* lookup_options is no key (a lookup of it finds nothing): listed apart */
                bool options = strcmp(hv_str_ptr(key), "lookup_options") == 0;
                /* a module's data answers only for the keys of its own namespace: Puppet asks
                 * module M's data for a key whose root key starts with "M::" and no other */
                if (!options && module &&
                    (strncmp(hv_str_ptr(key), module, mlen) != 0 || strncmp(hv_str_ptr(key) + mlen, "::", 2) != 0))
                    continue;
                if (w->names_only) {
                    if (!options && !hv_hash_get(w->keys, key))
                        hv_hash_set(w->keys, hv_incref(key), hv_true());
                    continue;
                }
                hv *def = hv_hash();
                hv_hash_sets(def, "layer", hv_str(layer_kind_name(kind)));
                if (module)
                    hv_hash_sets(def, "module", hv_str(module));
                hv_hash_sets(def, "level", hv_str(p->lvl->name ? p->lvl->name : ""));
                if (use_default)
                    hv_hash_sets(def, "default_hierarchy", hv_true());
                hv_hash_sets(def, "file", hv_str(loc->path));
                uint32_t line = hv_line(key);
                if (!line)
                    line = hv_line(hv_hash_val_at(data, k));
                hv_hash_sets(def, "line", hv_int(line));
                if (options) {
                    hv_array_push(w->lookup_options, def);
                    continue;
                }
                hv *list = hv_hash_get(w->keys, key);
                if (!list) {
                    list = hv_array();
                    hv_hash_set(w->keys, hv_incref(key), list);
                }
                hv_array_push(list, def);
            }
        }
    }
}

static void keys_of_layer(hiera_ctx *h, layer *l, layer_kind kind, const char *module, const herr *err, void *arg)
{
    key_walk *w = arg;
    if (!l) {
        add_error(w, kind, module, NULL, err);
        return;
    }
    keys_of_levels(h, l, kind, module, false, w);
    if (l->cfg && l->cfg->has_default_hierarchy)
        keys_of_levels(h, l, kind, module, true, w);
}

hv *enum_keys(hiera_ctx *h)
{
    key_walk w = {hv_hash(), hv_array(), hv_array(), false};
    each_layer(h, keys_of_layer, &w);
    hv *out = hv_hash();
    hv_hash_sets(out, "keys", w.keys);
    hv_hash_sets(out, "lookup_options", w.lookup_options);
    hv_hash_sets(out, "errors", w.errors);
    return out;
}

hv *enum_key_names(hiera_ctx *h)
{
    key_walk w = {hv_hash(), NULL, hv_array(), true};
    each_layer(h, keys_of_layer, &w);
    hv *names = hv_array_sized(hv_hash_len(w.keys));
    for (size_t i = 0; i < hv_hash_len(w.keys); i++)
        hv_array_push(names, hv_incref(hv_hash_key_at(w.keys, i)));
    hv_decref(w.keys);
    hv *out = hv_hash();
    hv_hash_sets(out, "keys", names);
    hv_hash_sets(out, "errors", w.errors);
    return out;
}

/* LookupKey#split_key (sub_lookup.rb): a key with none of . ' " is its own root key; any other is
 * split on dots, each segment quoted with " or ' (non-empty, without its own quote inside) or
 * bare. So a data key with one of them is reached by quoting it whole, with a quote it does not
 * hold. */
char *enum_lookup_form(const char *key)
{
    if (!strpbrk(key, ".'\""))
        return xstrdup(key);
    const char *q = !strchr(key, '"') ? "\"" : !strchr(key, '\'') ? "'" : NULL;
    if (!q)
        return NULL;
    return xjoin(q, key, q, NULL);
}
