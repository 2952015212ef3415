/* lookup_data.c - the data hash functions of a hierarchy level (lookup.c gives the overview):
 * the function a provider names (built-in, or a module's function that hiera cannot run), and a
 * location's data loaded through the cache. */
#include "engine/lookup_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ data hash functions */

/* DataProvider#validate_data_value names the type TypeCalculator#infer gives the value */
char *infer_type_name(const hv *v) { return ptype_infer_to_s(v); }

/* The format of the files the provider function fname reads (*known false: no such function). */
__attribute__((noinline)) file_format data_hash_format(const char *fname, bool *known)
{
    const provider_def *pd = provider_find(fname);
    *known = pd != NULL;
    return pd ? pd->format : FMT_YAML;
}


static const char *fn_tag(fn_kind k)
{
    switch (k) {
    case FN_DATA_HASH: return "data_hash";
    case FN_LOOKUP_KEY: return "lookup_key";
    case FN_DATA_DIG: return "data_dig";
    case FN_HIERA3_BACKEND: return "hiera3_backend";
    case FN_V4_DATA_HASH: return "v4_data_hash";
    default: return "data_hash";
    }
}

/* The file Puppet's loaders would load a data provider function named fname from, or NULL: for
 * "<module>::<name>" the module's lib/puppet/functions/<module>/<name>.rb or functions/<name>.pp,
 * for "environment::<name>" and unqualified names the environment's lib/puppet/functions/
 * (its Puppet language functions are not found there). *no_module: the name is qualified by a
 * module the environment lacks, where Puppet has no loader at all. */
static char *function_file(hiera_ctx *h, const char *fname, bool *no_module)
{
    *no_module = false;
    const char *q = strstr(fname, "::");
    sbuf rel = {0}; /* a::b::c -> a/b/c */
    for (const char *s = fname; *s; s++) {
        if (s[0] == ':' && s[1] == ':') {
            sb_addc(&rel, '/');
            s++;
        } else {
            sb_addc(&rel, *s);
        }
    }
    char *found = NULL;
    if (!q || ((size_t)(q - fname) == 11 && strncmp(fname, "environment", 11) == 0)) {
        char *f = xjoin(h->env_dir, "/lib/puppet/functions/", sb_str(&rel), ".rb", NULL);
        if (cache_file_exists(h->cache, f))
            found = f;
        else
            free(f);
    } else {
        char *ns = xstrndup(fname, (size_t)(q - fname));
        char *dir = module_dir(h, ns);
        if (!dir) {
            *no_module = true;
        } else {
            char *rb = xjoin(dir, "/lib/puppet/functions/", sb_str(&rel), ".rb", NULL);
            char *pp = xjoin(dir, "/functions/", sb_str(&rel) + strlen(ns) + 1, ".pp", NULL);
            if (cache_file_exists(h->cache, rb)) {
                found = rb;
                rb = NULL;
            } else if (cache_file_exists(h->cache, pp)) {
                found = pp;
                pp = NULL;
            }
            free(rb);
            free(pp);
            free(dir);
        }
        free(ns);
    }
    sb_free(&rel);
    return found;
}

/* FunctionProvider#load_function failing: Puppet's "Unable to find" when no loader has the
 * function; a function Puppet would load from Ruby or Puppet code is one this engine cannot run,
 * and it says so. */
void function_not_found(hiera_ctx *h, const layer *l, const provider *p, herr *err)
{
    bool no_module = false;
    char *file = p->lvl->fkind == FN_HIERA3_BACKEND ? NULL : function_file(h, p->lvl->fname, &no_module);
    if (file) {
        herr_set(err, HERR_ERROR,
                 "The %s function '%s' is Ruby or Puppet code (%s): hiera runs no such functions, only the built-in yaml_data, json_data, hocon_data and eyaml_lookup_key",
                 fn_tag(p->lvl->fkind), p->lvl->fname, file);
        herr_at(err, file, 0, 0);
        free(file);
        return;
    }
    if (no_module) {
        /* Loaders#private_loader_for_module gave nil */
        herr_set(err, HERR_ERROR, "%s", NIL_NO_METHOD("load_typed"));
        return;
    }
    if (l->cfg->path)
        herr_set(err, HERR_LOOKUP_ISSUE, "Unable to find '%s' function named '%s' (file: %s)", fn_tag(p->lvl->fkind),
                 p->lvl->fname, l->cfg->path);
    else
        herr_set(err, HERR_LOOKUP_ISSUE, "Unable to find '%s' function named '%s'", fn_tag(p->lvl->fkind), p->lvl->fname);
    herr_at(err, l->cfg->path, 0, 0);
}

/* The folders Ruby's require searches for a version 3 backend's file on this machine: the load
 * path of Debian's Ruby and of Puppet's own packages, and the lib folders of installed gems
 * (RubyGems' require activates them), as glob patterns. */
static const char *const RUBY_LIB_DIRS[] = {
    "/usr/local/lib/site_ruby", "/usr/local/lib/site_ruby/*", "/usr/local/lib/*/site_ruby",
    "/usr/lib/ruby/vendor_ruby", "/usr/lib/ruby/vendor_ruby/*", "/usr/lib/*/ruby/vendor_ruby/*", "/usr/lib/ruby/*",
    "/usr/lib/*/ruby/*", "/usr/share/rubygems-integration/*/gems/*/lib", "/var/lib/gems/*/gems/*/lib",
    "/usr/lib/ruby/gems/*/gems/*/lib", "/usr/local/lib/ruby/gems/*/gems/*/lib",
    "/opt/puppetlabs/puppet/lib/ruby/vendor_ruby", "/opt/puppetlabs/puppet/lib/ruby/*",
    "/opt/puppetlabs/puppet/lib/ruby/gems/*/gems/*/lib",
};

/* Whether `require "hiera/backend/<name>_backend"` (name downcased) would find a file, as
 * V3BackendFunctionProvider#instantiate_backend asks: in Ruby's library folders, or in the lib
 * folder of a module of the environment (`puppet lookup` puts each module's lib on the load
 * path). A name that is not a plain word is taken as loadable (hiera cannot tell). */
/* A version 3 backend's name downcased, as its file name under hiera/backend/ (malloc'ed), or
 * NULL when the name is not a plain word. */
static char *backend_file_word(const char *name)
{
    char *lower = xstrdup(name);
    for (char *q = lower; *q; q++) {
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_' || *q == '-' ||
              (*q >= 'A' && *q <= 'Z'))) {
            free(lower);
            return NULL;
        }
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    }
    return lower;
}

static bool hiera3_backend_loadable(hiera_ctx *h, const char *name)
{
    char *lower = backend_file_word(name);
    if (!lower)
        return true;
    char *rel = xjoin("/hiera/backend/", lower, "_backend.rb", NULL);
    free(lower);
    bool found = false;
    size_t nmp = h->environment ? hiera_environment_modulepath_count(h->environment) : 0;
    size_t n = sizeof RUBY_LIB_DIRS / sizeof *RUBY_LIB_DIRS;
    for (size_t i = 0; i < n + nmp && !found; i++) {
        char *pattern = i < n ? xjoin(RUBY_LIB_DIRS[i], rel, NULL)
                              : xjoin(hiera_environment_modulepath(h->environment, i - n), "/*/lib", rel, NULL);
        glob_result g = {0};
        if (cache_glob(h->cache, pattern, 1, &g) != 0 || g.n > 0)
            found = true; /* (a folder that cannot be read: taken as holding it) */
        glob_free(&g);
        free(pattern);
    }
    free(rel);
    return found;
}

/* V3BackendFunctionProvider#instantiate_backend failing with a LoadError, as it does for a
 * version 3 backend that neither Ruby nor the environment's modules have: every location of the
 * level is then "not found", whether its file exists or not, and says why when explained. False
 * when the backend could be loaded (a lookup reaching it fails: hiera runs no Ruby). */
bool hiera3_backend_unloadable(hiera_ctx *h, provider *p)
{
    if (p->lvl->fkind != FN_HIERA3_BACKEND)
        return false;
    if (!p->h3_loadable)
        p->h3_loadable = hiera3_backend_loadable(h, p->lvl->fname) ? 1 : -1;
    if (p->h3_loadable > 0)
        return false;
    if (h->ex) {
        char *lower = backend_file_word(p->lvl->fname); /* (a plain word: loadable otherwise) */
        char *t = xasprintf("Unable to load backend '%s': cannot load such file -- hiera/backend/%s_backend",
                            p->lvl->fname, lower);
        ex_text(h->ex, t);
        free(t);
        free(lower);
    }
    return true;
}

/* Whether a lookup can run the provider's function here (a data_hash this engine reads, or a
 * lookup_key it has); false with the error a lookup reaching the level fails with. */
bool provider_usable(hiera_ctx *h, const layer *l, provider *p, herr *err)
{
    bool known;
    if (p->lvl->fkind == FN_LOOKUP_KEY) {
        const provider_def *pd = provider_find(p->lvl->fname);
        known = pd && pd->key_value;
    } else {
        provider_format(p, &known);
        known = known && p->lvl->fkind == FN_DATA_HASH;
    }
    if (!known)
        function_not_found(h, l, p, err);
    return known;
}

/* Copies the error of a location that failed to load. */
static void location_error(const location *loc, herr *err)
{
    herr_clear(err);
    *err = (herr){loc->data_err.kind, xstrdup(loc->data_err.msg ? loc->data_err.msg : ""),
                  loc->data_err.file ? xstrdup(loc->data_err.file) : NULL, loc->data_err.line, loc->data_err.col};
}

/* DataHashFunctionProvider#data_hash, loaded once per location: false with err when it failed.
 * The hash is then loc->data, or loc->lazy (read key by key: location_value). */
bool location_load(hiera_ctx *h, provider *p, location *loc, herr *err)
{
    if (!loc->loaded) {
        loc->loaded = true;
        bool known;
        file_format fmt = provider_format(p, &known);
        hv *known_data = NULL, *flags = NULL;
        if (p->nil_location || !loc->path || loc->is_uri || p->options_refused) {
            herr_set(&loc->data_err, HERR_ERROR,
                     "'%s' one of 'path', 'paths' 'glob', 'globs' or 'mapped_paths' must be declared in hiera.yaml when using this data_hash function",
                     p->lvl->fname);
        } else if (loc->kid && (known_data = cache_kid_data(h->cache, loc->kid, &flags))) {
            /* a remembered level's location (level_recall): its hash found by its number */
            loc->data = hv_incref(known_data);
            loc->keyflags = flags;
        } else {
            herr e = {0};
            hv *info = NULL;
            /* (explanations and provenance read the whole file: its keys' lines) */
            bool lazy_ok = !h->ex && !h->prov;
            hv *v = cache_load_data(h->cache, loc->path, fmt, &info, &loc->kid, lazy_ok ? &loc->lazy : NULL, loc->st, &e);
            free(loc->st); /* (once loaded, never asked again) */
            loc->st = NULL;
            if (loc->lazy) {
                loc->keyflags = info;
            } else if (!v) {
                herr_move(&loc->data_err, &e);
            } else if (!hv_is(v, HV_HASH) && fmt == FMT_YAML) {
                /* yaml_data's and eyaml_lookup_key's rule: a document that is not a hash is an
                 * error under strict = error, unless it is false or nothing (an empty file: Puppet's
                 * safe_load makes nil false), else a warning and no data */
                if (h->strict == 2 && !hv_is(v, HV_UNDEF) && !(hv_is(v, HV_BOOL) && !hv_bool_val(v))) {
                    herr_set(&loc->data_err, HERR_LOOKUP, "%s: file does not contain a valid yaml hash", loc->path);
                } else {
                    char *id = xjoin("data-not-hash\n", loc->path, NULL);
                    if (cache_warn_once(h->cache, id))
                        diag_warn("data-not-hash", loc->path, 0, 0, "%s: file does not contain a valid yaml hash",
                                  loc->path);
                    free(id);
                    loc->data = hv_hash();
                }
                loc->kid = 0;
                hv_decref(v);
            } else if (!hv_is(v, HV_HASH)) {
                loc->kid = 0;
                char *got = ptype_name_of_value(v);
                herr_set(&loc->data_err, HERR_PUPPET,
                         "Value returned from data_hash function '%s', when using location '%s', has wrong type, expects a Hash value, got %s",
                         p->lvl->fname, loc->path, got);
                free(got);
                hv_decref(v);
            } else {
                loc->data = v;
                loc->keyflags = info;
            }
        }
    }
    if (!loc->data && !loc->lazy) {
        location_error(loc, err);
        return false;
    }
    return true;
}

/* The hash of a loaded location (BORROWED), decoded whole now when it was read key by key;
 * NULL with err when that fails. */
static hv *location_hash(location *loc, herr *err)
{
    if (!loc->data && loc->lazy) {
        hv *whole = lazy_data_hash(loc->lazy, err);
        if (!whole)
            return NULL;
        loc->data = hv_incref(whole);
    }
    return loc->data;
}

/* DataHashFunctionProvider#data_hash: the validated hash of one location (loaded once). */
hv *location_data(hiera_ctx *h, const layer *l, provider *p, location *loc, herr *err)
{
    return location_load(h, p, loc, err) ? location_hash(loc, err) : NULL;
}

/* The value of the top-level key (code: hv_str_code) at a loaded location (BORROWED), NULL when
 * absent; -1 with err when a lazily read hash cannot be had. */
int location_value(location *loc, const char *key, size_t len, uint64_t code, hv **out, herr *err)
{
    if (loc->data) {
        *out = hv_hash_getsn_code(loc->data, key, len, code);
        return *out != NULL;
    }
    return lazy_data_get(loc->lazy, key, len, code, out, err);
}
