/* lookup.c - the Hiera 5 lookup engine, following Puppet's lookup classes step by step
 * (lib/puppet/pops/lookup.rb, lookup_adapter.rb, configured_data_provider.rb,
 * data_hash_function_provider.rb, hiera_config.rb, location_resolver.rb): names tried in order,
 * lookup_options found first with a hash merge, then the merge strategy run over the layers
 * (global, environment, module), inside each layer over its hierarchy entries, inside each entry
 * over its locations; then dotted sub-keys are dug, then convert_to, then the type is asserted.
 * Every step reports to the explainer when one is attached (one NULL test otherwise). */
#include "engine/engine.h"
#include "engine/providers.h"
#include "base/diag.h"
#include "base/fsjournal.h"
#include "base/rubyver.h"
#include "crypto/eyaml.h"
#include "base/glob.h"
#include "engine/memo.h"
#include "engine/provenance.h"
#include "engine/settings.h"
#include "base/pathname.h"
#include "types/ptype.h"
#include "formats/render.h"
#include "base/rregex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LOOKUP_OPTIONS "lookup_options"
#define GLOB_LIMIT 100000
#define MAX_STACK 1000
/* Nested lookups one top-level lookup may make. Depth alone does not bound the work: values
 * like "%{lookup('k2')}%{lookup('k2')}" over 30 keys need 2^30 lookups (Puppet takes hours). */
#define MAX_NESTED_LOOKUPS 1000000

/* ------------------------------------------------------------------ small helpers */



/* The name of the key's module: the root key's text before its first "::". */
static char *module_of(const char *root)
{
    const char *q = strstr(root, "::");
    return q ? xstrndup(root, (size_t)(q - root)) : NULL;
}

/* Computes the invocation's root key length and hash once. */
static void inv_root(inv *I)
{
    I->root_len = strlen(I->root_key);
    I->root_code = hv_str_code(I->root_key, I->root_len);
}

/* ------------------------------------------------------------------ recursion guard */

/* check_enter's failures, out of its line: what the hot path leaves to them */
static __attribute__((noinline, cold)) bool check_refuse(inv *I, const char *name, herr *err)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++) {
        if (strcmp(h->stack[i], name) == 0) {
            sbuf b = {0};
            for (size_t j = 0; j < h->nstack; j++) {
                if (j)
                    sb_adds(&b, ", ");
                sb_adds(&b, h->stack[j]);
            }
            herr_set(err, HERR_LOOKUP, "Recursive lookup detected in [%s]", sb_str(&b));
            sb_free(&b);
            return false;
        }
    }
    if (h->nested_lookups > MAX_NESTED_LOOKUPS) {
        herr_set(err, HERR_ERROR, "Lookup of '%s' needs more than %d nested lookups (interpolations that multiply)",
                 h->top_name ? h->top_name : name, MAX_NESTED_LOOKUPS);
        return false;
    }
    herr_set(err, HERR_LOOKUP, "Lookups nested deeper than %d levels (at '%s')", MAX_STACK, name);
    return false;
}

static inline bool check_enter(inv *I, const char *name, herr *err)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++)
        if (strcmp(h->stack[i], name) == 0)
            return check_refuse(I, name, err);
    if (++h->nested_lookups > MAX_NESTED_LOOKUPS || h->nstack >= MAX_STACK)
        return check_refuse(I, name, err);
    if (h->nstack == h->capstack) {
        h->capstack = h->capstack ? h->capstack * 2 : 16;
        h->stack = xrealloc(h->stack, h->capstack * sizeof *h->stack);
    }
    h->stack[h->nstack++] = (char *)name; /* borrowed: the caller's string outlives the guard */
    return true;
}

/* check_enter then check_leave, for a guard that is only passed through (interp.c deps_key):
 * false, with nothing counted, when check_enter would refuse. */
static bool check_pass(inv *I, const char *name)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++)
        if (strcmp(h->stack[i], name) == 0)
            return false;
    if (h->nested_lookups + 1 > MAX_NESTED_LOOKUPS || h->nstack >= MAX_STACK)
        return false;
    h->nested_lookups++;
    return true;
}

static void check_leave(inv *I, herr *err)
{
    hiera_ctx *h = I->h;
    --h->nstack;
    /* Invocation#check: a Puppet::Error raised inside becomes a LookupError */
    if (err && err->kind == HERR_PUPPET)
        err->kind = HERR_LOOKUP;
}

/* ------------------------------------------------------------------ layers */

static void location_clear(location *l)
{
    hv_decref(l->memo);
    free(l->path);
    free(l->original);
    if (l->st)
        free(l->st);
    hv_decref(l->data);
    lazy_data_release(l->lazy);
    herr_clear(&l->data_err);
}

static void providers_free(provider *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hv_decref(p[i].options);
        for (size_t j = 0; j < p[i].nlocs; j++)
            location_clear(&p[i].locs[j]);
        free(p[i].locs);
        location_clear(&p[i].nil_loc);
    }
    free(p);
}

static void plan_clear(probe_plan *pl)
{
    free(pl->probes);
    free(pl->words);
    *pl = (probe_plan){0};
}

static void layer_free(layer *l)
{
    if (!l)
        return;
    free(l->module);
    free(l->name);
    config_free(l->cfg);
    herr_clear(&l->cfg_err);
    herr_clear(&l->expand_err);
    providers_free(l->provs, l->nprovs);
    providers_free(l->dprovs, l->ndprovs);
    plan_clear(&l->plan);
    plan_clear(&l->dplan);
    free(l);
}

static void layer_set_name(layer *l)
{
    free(l->name);
    const char *place = l->kind == LAYER_GLOBAL ? "Global" : l->kind == LAYER_ENV ? "Environment" : "Module";
    /* (no printf: made for every node) */
    sbuf b = {0};
    sb_adds(&b, place);
    sb_adds(&b, " ");
    if (l->module) {
        sb_adds(&b, "\"");
        sb_adds(&b, l->module);
        sb_adds(&b, "\" ");
    }
    sb_adds(&b, "Data Provider");
    if (l->cfg) {
        char digit[2] = {(char)('0' + l->cfg->version), 0}; /* (3, 4 or 5: config_load takes no other) */
        sb_adds(&b, " (hiera configuration version ");
        sb_adds(&b, digit);
        sb_adds(&b, ")");
    }
    l->name = sb_take(&b);
}

/* The global layer always exists; its configuration is read on first use (inside the guard). */
layer *global_layer(hiera_ctx *h)
{
    if (!h->global) {
        h->global = xcalloc(1, sizeof *h->global);
        h->global->kind = LAYER_GLOBAL;
        layer_set_name(h->global);
    }
    return h->global;
}

bool global_config(hiera_ctx *h, layer *l, herr *err)
{
    if (l->cfg)
        return true;
    bool ignored;
    herr e = {0};
    l->cfg = config_load_strict(h->cache, h->global_config, LAYER_GLOBAL, h->strict, &ignored, &e);
    if (!l->cfg) {
        herr_move(err, &e);
        return false;
    }
    layer_set_name(l);
    return true;
}

static layer *new_layer(layer_kind kind, const char *module, hcfg *cfg)
{
    layer *l = xcalloc(1, sizeof *l);
    l->kind = kind;
    l->module = module ? xstrdup(module) : NULL;
    l->cfg = cfg;
    layer_set_name(l);
    return l;
}

/* NoMethodError on nil, as the context's Ruby words it */
#define NIL_NO_METHOD(m) (rubyver() == RUBY_33 ? "undefined method `" m "' for nil" : "undefined method `" m "' for nil:NilClass")

/* ------------------------------------------------------------------ legacy provider settings */

/* Puppet.warn_once('deprecations', id, message, file): reported once per cache, with Puppet's
 * location line; never when the strict setting is off (every deprecation of the lookup adapter
 * and of HieraConfig is "unless Puppet[:strict] == :off"). */
static void warn_once(hiera_ctx *h, const char *code, const char *id, const char *file, const char *msg)
{
    if (h->strict && cache_warn_once(h->cache, id)) {
        if (file)
            diag_warn(code, file, 0, 0, "%s\n   (file: %s)", msg, file);
        else
            diag_warn(code, NULL, 0, 0, "%s\n   (file & line not available)", msg);
    }
}

static bool ini_word(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || (unsigned char)c >= 0x80; }
static bool ini_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

/* One setting of an environment.conf as Puppet's settings parser reads it (Settings::IniFile.parse,
 * then ValueTranslator): the first "name = value" line before any section or in a [main] section
 * (other sections are ignored), the value without surrounding blanks; true/false in any case are
 * the booleans (named "true"/"false"); otherwise one leading and one trailing quote go. Returns a
 * malloc'ed string, or NULL when the file or the setting is absent. (Only what the lookup needs:
 * other settings, warnings and the lines Puppet refuses are the settings reader's.) */
static char *env_conf_setting(hiera_ctx *h, const char *conf_path, const char *name)
{
    if (!cache_file_exists(h->cache, conf_path))
        return NULL;
    herr e = {0};
    hv *text = cache_load(h->cache, conf_path, FMT_TEXT, &e);
    herr_clear(&e);
    if (!text)
        return NULL;
    const char *s = hv_str_ptr(text), *end = s + hv_str_len(text);
    size_t nlen = strlen(name);
    bool in_main = true;
    char *found = NULL;
    while (s < end && !found) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        if (le > s && le[-1] == '\r')
            le--; /* String#chomp */
        const char *p = s;
        while (p < le && ini_space(*p))
            p++;
        if (p < le && *p == '[') {
            const char *w = ++p;
            while (p < le && ini_word(*p))
                p++;
            const char *we = p;
            if (we > w && p < le && *p == ']') {
                for (p++; p < le && ini_space(*p); p++)
                    ;
                if (p == le)
                    in_main = (size_t)(we - w) == 4 && memcmp(w, "main", 4) == 0;
            }
        } else if (in_main) {
            const char *w = p;
            while (p < le && ini_word(*p))
                p++;
            const char *we = p;
            while (p < le && ini_space(*p))
                p++;
            if (we > w && p < le && *p == '=' && (size_t)(we - w) == nlen && memcmp(w, name, nlen) == 0) {
                for (p++; p < le && ini_space(*p); p++)
                    ;
                const char *ve = le;
                while (ve > p && ini_space(ve[-1]))
                    ve--;
                size_t n = (size_t)(ve - p);
                if ((n == 4 && strncasecmp(p, "true", 4) == 0) || (n == 5 && strncasecmp(p, "false", 5) == 0)) {
                    found = xstrdup(n == 4 ? "true" : "false");
                } else {
                    /* gsub(/^["']|["']$/, '') then sub(/\s+$/, '') */
                    const char *a = p, *b = ve;
                    if (a < b && (*a == '"' || *a == '\''))
                        a++;
                    if (b > a && (b[-1] == '"' || b[-1] == '\''))
                        b--;
                    while (b > a && ini_space(b[-1]))
                        b--;
                    found = xstrndup(a, (size_t)(b - a));
                }
            }
        }
        s = next;
    }
    hv_decref(text);
    return found;
}

/* LookupAdapter#initialize_env_provider: a provider when <env>/hiera.yaml exists (and is not v3),
 * or as environment.conf's deprecated environment_data_provider says: 'hiera' (the hiera.yaml,
 * else Puppet's default version 5 hierarchy: <env>/data/common.yaml), 'none', or 'function' (the
 * legacy function environment::data); a version 5 hiera.yaml makes the setting ignored. */
static __attribute__((noinline)) layer *env_layer_first(hiera_ctx *h, herr *err)
{
    if (!h->env_init && !h->env_dir) {
        h->env_init = true; /* Puppet's default production environment has no folder */
    } else if (!h->env_init) {
        h->env_init = true;
        char *conf = xjoin(h->env_dir, "/environment.conf", NULL);
        char *pname = env_conf_setting(h, conf, "environment_data_provider");
        char *path = xjoin(h->env_dir, "/hiera.yaml", NULL);
        bool exists = cache_file_exists(h->cache, path);
        hcfg *cfg = NULL;
        if (exists) {
            bool ignored = false;
            cfg = config_load_strict(h->cache, path, LAYER_ENV, h->strict, &ignored, &h->env_provider_err);
            if (cfg && cfg->version >= 5 && pname) {
                char *m = xasprintf("Defining environment_data_provider='%s' in environment.conf is deprecated", pname);
                warn_once(h, "data-provider-deprecated", "environment.conf#data_provider", conf, m);
                free(m);
                if (strcmp(pname, "hiera") != 0) {
                    m = xasprintf("The environment_data_provider='%s' setting is ignored since '%s' version >= 5", pname, path);
                    warn_once(h, "data-provider-ignored", "environment.conf#data_provider_overridden", conf, m);
                    free(m);
                }
                free(pname);
                pname = NULL;
            }
        }
        if (herr_isset(&h->env_provider_err)) {
            /* the hiera.yaml failed to load: that is the error */
        } else if (!pname) {
            if (cfg)
                h->env = new_layer(LAYER_ENV, NULL, cfg);
            cfg = NULL;
        } else {
            char *m = xasprintf("Defining environment_data_provider='%s' in environment.conf is deprecated.%s", pname,
                                cfg ? "" : " A 'hiera.yaml' file should be used instead");
            warn_once(h, "data-provider-deprecated", "environment.conf#data_provider", conf, m);
            free(m);
            if (strcmp(pname, "hiera") == 0) {
                if (cfg) {
                    h->env = new_layer(LAYER_ENV, NULL, cfg);
                    cfg = NULL;
                } else if (exists) {
                    /* a version 3 hiera.yaml was ignored: the new provider has no configuration */
                    herr_set(&h->env_provider_err, HERR_ERROR, "%s", NIL_NO_METHOD("configured_data_providers"));
                } else {
                    bool ignored = false;
                    hcfg *dflt = config_load_strict(h->cache, path, LAYER_ENV, h->strict, &ignored, &h->env_provider_err);
                    if (dflt)
                        h->env = new_layer(LAYER_ENV, NULL, dflt);
                }
            } else if (strcmp(pname, "function") == 0) {
                warn_once(h, "legacy-provider-function", "legacy_provider_function", NULL,
                          "Using of legacy data provider function 'environment::data'. Please convert to a 'data_hash' function");
                h->env = new_layer(LAYER_ENV, NULL, config_legacy_function(h->env_dir, "environment::data", LAYER_ENV));
            } else if (strcmp(pname, "none") != 0) {
                herr_set(&h->env_provider_err, HERR_ERROR, "Environment '%s', cannot find environment_data_provider '%s'",
                         h->env_name ? h->env_name : "", pname);
            }
        }
        if (cfg)
            config_free(cfg);
        free(pname);
        free(path);
        free(conf);
    }
    if (herr_isset(&h->env_provider_err)) {
        herr_clear(err);
        *err = (herr){h->env_provider_err.kind, xstrdup(h->env_provider_err.msg),
                      h->env_provider_err.file ? xstrdup(h->env_provider_err.file) : NULL,
                      h->env_provider_err.line, h->env_provider_err.col};
        return NULL;
    }
    return h->env;
}

/* The environment's layer (made on first use), or NULL (with err when it failed). Inline once
 * made: every lookup asks. */
layer *env_layer(hiera_ctx *h, herr *err)
{
    if (__builtin_expect(h->env_init && !herr_isset(&h->env_provider_err), 1))
        return h->env;
    return env_layer_first(h, err);
}

/* The folders of the environment's modulepath, in order (settings.c: environment.conf's
 * modulepath or <env>/modules and the basemodulepath, --modulepath, PUPPETLIB), whether they
 * exist or not (a new NULL-terminated array of malloc'ed paths). */
char **module_roots(hiera_ctx *h)
{
    size_t n = h->environment ? hiera_environment_modulepath_count(h->environment) : 0;
    char **roots = xcalloc(n + 1, sizeof *roots);
    for (size_t i = 0; i < n; i++)
        roots[i] = xstrdup(hiera_environment_modulepath(h->environment, i));
    return roots;
}

void module_roots_free(char **roots)
{
    for (size_t i = 0; roots && roots[i]; i++)
        free(roots[i]);
    free(roots);
}

/* The module's folder: the first folder of the environment's modulepath that has it (Puppet's
 * Environment#module; settings.c), or NULL when the environment has no such module. */
static char *module_dir(hiera_ctx *h, const char *name)
{
    return h->environment ? settings_module_dir(h->environment, name) : NULL;
}


/* The entry of r (two names, the last asked first) for name, or NULL; stable: name's address
 * when it lives as long as the cache (else NULL), found by address when it was asked before. */
static inline const recent_name *recent_get(recent_name *r, const char *name, const char *stable)
{
    if (stable)
        for (size_t i = 0; i < 2; i++)
            if (r[i].stable == stable)
                return &r[i];
    for (size_t i = 0; i < 2; i++)
        if (r[i].name && strcmp(r[i].name, name) == 0) {
            if (stable)
                r[i].stable = stable;
            return &r[i];
        }
    return NULL;
}

/* Remembers obj and st for name in r; the older of the two gives way. */
static void recent_put(recent_name *r, const char *name, void *obj, int st, const char *stable)
{
    free(r[1].name);
    r[1] = r[0];
    r[0] = (recent_name){xstrdup(name), obj, st, stable};
}

/* Ruby's obj[key] on what a metadata.json may hold: Hash#[] (NULL: nil), String#[] (the key
 * itself when the string contains it, else nil; *sub is set), anything else a TypeError. */
static const hv *ruby_index(const hv *obj, const char *key, bool *sub, bool *type_error)
{
    *sub = *type_error = false;
    if (hv_is(obj, HV_HASH))
        return hv_hash_gets(obj, key);
    if (hv_is(obj, HV_STRING)) {
        *sub = memmem(hv_str_ptr(obj), hv_str_len(obj), key, strlen(key)) != NULL;
        return NULL;
    }
    *type_error = true;
    return NULL;
}

/* Puppet::Module#read_metadata and #load_metadata for the module in dir: metadata.json read by
 * Ruby's JSON parser, {} when absent (or empty, in Puppet 8); a file that does not parse is a
 * warning and counts as {} (strict = error: the module is left out, with the error logged).
 * Metadata that is not empty must give source, author, version, license and dependencies (an
 * array), else Puppet logs the error and leaves the module out: false (the module is not found).
 * *meta: the metadata (new reference). err (HERR_ERROR) for metadata Ruby itself fails on (null,
 * a number, an array): Puppet then fails every lookup in the environment; here the module's. */
static bool module_metadata(hiera_ctx *h, const char *name, const char *dir, hv **meta, herr *err)
{
    *meta = NULL;
    char *path = xjoin(dir, "/metadata.json", NULL);
    hv *md = NULL;
    struct stat st;
    bool empty8 = h->version == HIERA_PUPPET_8 && fs_stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
    if (!empty8 && cache_file_exists(h->cache, path)) { /* (Puppet 8 reads an empty file as {}) */
        herr e = {0};
        md = cache_load(h->cache, path, FMT_JSON, &e);
        if (!md) {
            const char *m = e.msg ? e.msg : "";
            size_t pre = strlen("Unable to parse (") + strlen(path) + strlen("): ");
            if (strncmp(m, "Unable to parse (", 17) == 0 && strlen(m) >= pre)
                m += pre; /* the parser's own message, as Puppet::Util::Json raises it */
            /* a debug line when strict is off, a warning, or under strict = error FaultyMetadata:
             * the environment logs it and leaves the module out */
            char *id = xjoin("metadata.json parse\n", path, NULL);
            if (h->strict && cache_warn_once(h->cache, id))
                diag_report(h->strict == 2 ? DIAG_ERROR : DIAG_WARNING, "metadata-unparsable", path, 0, 0,
                            "%s has an invalid and unparsable metadata.json file. The parse error: %s", name, m);
            free(id);
            herr_clear(&e);
            if (h->strict == 2) {
                free(path);
                return false;
            }
        }
    }
    if (!md)
        md = hv_hash();
    bool ok = true;
    hv_kind k = hv_kind_of(md);
    if (k == HV_UNDEF || k == HV_INT || k == HV_BIGINT || k == HV_FLOAT || k == HV_BOOL) {
        sbuf b = {0};
        ruby_inspect(&b, md);
        char *m = ruby_no_method("empty?", sb_str(&b), ruby_class_name(md));
        herr_set(err, HERR_ERROR, "%s", m);
        free(m);
        sb_free(&b);
        ok = false;
    } else if ((k == HV_HASH && hv_hash_len(md)) || (k == HV_STRING && hv_str_len(md)) || (k == HV_ARRAY && hv_array_len(md))) {
        static const char *const required[] = {"source", "author", "version", "license", "dependencies"};
        bool sub, type_error;
        ruby_index(md, "name", &sub, &type_error);
        char *missing = NULL;
        for (size_t i = 0; i < 5 && !missing && !type_error; i++) {
            const hv *v = ruby_index(md, required[i], &sub, &type_error);
            if (type_error)
                break;
            if (!sub && (!v || hv_is(v, HV_UNDEF))) {
                missing = xasprintf("No %s module metadata provided for %s", required[i], name);
            } else if (i == 4 && !hv_is(v, HV_ARRAY)) {
                sbuf b = {0};
                if (v)
                    ruby_to_s(&b, v);
                else
                    sb_adds(&b, required[i]);
                missing = xasprintf("The value for the key dependencies in the file metadata.json of the module %s must be an array, not: '%s'",
                                    name, sb_str(&b));
                sb_free(&b);
            }
        }
        if (type_error) {
            herr_set(err, HERR_ERROR, "no implicit conversion of String into Integer");
            ok = false;
        } else if (missing) {
            /* Puppet::Module::MissingMetadata: logged, and the module is left out */
            char *id = xjoin("metadata.json\n", path, NULL);
            if (cache_warn_once(h->cache, id))
                diag_report(DIAG_ERROR, "metadata-invalid", path, 0, 0, "%s", missing);
            free(id);
            free(missing);
            ok = false;
        }
    }
    free(path);
    if (ok)
        *meta = md;
    else
        hv_decref(md);
    return ok;
}

/* LookupAdapter#initialize_module_provider: the module's hiera.yaml, or as its metadata.json's
 * deprecated data_provider says: 'hiera' (the hiera.yaml, else the default version 5 hierarchy:
 * <module>/data/common.yaml), 'none', 'function' (the legacy function <module>::data); a version 5
 * hiera.yaml makes the setting ignored. Returns the layer (NULL: none) and *state; err on failure. */
static layer *make_module_layer(hiera_ctx *h, const char *name, int *state, herr *err)
{
    char *dir = module_dir(h, name);
    if (!dir) {
        *state = MOD_NOT_FOUND;
        return NULL;
    }
    hv *meta = NULL;
    if (!module_metadata(h, name, dir, &meta, err)) {
        free(dir);
        *state = MOD_NOT_FOUND;
        return NULL;
    }
    bool sub, type_error;
    const hv *pv = ruby_index(meta, "data_provider", &sub, &type_error);
    if (type_error) {
        herr_set(err, HERR_ERROR, "no implicit conversion of String into Integer");
        hv_decref(meta);
        free(dir);
        return NULL;
    }
    char *pname = NULL; /* the setting's to_s; NULL: none */
    bool pstring = sub || hv_is(pv, HV_STRING);
    if (sub) {
        pname = xstrdup("data_provider");
    } else if (pv && !hv_is(pv, HV_UNDEF)) {
        sbuf b = {0};
        ruby_to_s(&b, pv);
        pname = sb_take(&b);
    }
    hv_decref(meta);
    char *md_path = xjoin(dir, "/metadata.json", NULL);
    char *path = xjoin(dir, "/hiera.yaml", NULL);
    bool exists = cache_file_exists(h->cache, path);
    hcfg *cfg = NULL;
    layer *l = NULL;
    *state = MOD_NO_PROVIDER;
    if (exists) {
        bool ignored = false;
        cfg = config_load_strict(h->cache, path, LAYER_MODULE, h->strict, &ignored, err);
        if (cfg && cfg->version >= 5 && pname) {
            char *m = xasprintf("Defining \"data_provider\": \"%s\" in metadata.json is deprecated. It is ignored since a 'hiera.yaml' with version >= 5 is present", pname);
            char *id = xjoin("metadata.json#data_provider-", name, NULL);
            warn_once(h, "data-provider-deprecated", id, md_path, m);
            free(id);
            free(m);
            free(pname);
            pname = NULL;
        }
    }
    if (herr_isset(err)) {
        /* the hiera.yaml failed to load */
    } else if (!pname) {
        if (cfg)
            l = new_layer(LAYER_MODULE, name, cfg);
        cfg = NULL;
    } else {
        char *m = xasprintf("Defining \"data_provider\": \"%s\" in metadata.json is deprecated.%s", pname,
                            cfg ? "" : " A 'hiera.yaml' file should be used instead");
        char *id = xjoin("metadata.json#data_provider-", name, NULL);
        warn_once(h, "data-provider-deprecated", id, md_path, m);
        free(id);
        free(m);
        if (pstring && strcmp(pname, "hiera") == 0) {
            if (cfg) {
                l = new_layer(LAYER_MODULE, name, cfg);
                cfg = NULL;
            } else if (exists) {
                /* a version 3 hiera.yaml was ignored: the new provider has no configuration */
                herr_set(err, HERR_ERROR, "%s", NIL_NO_METHOD("configured_data_providers"));
            } else {
                bool ignored = false;
                hcfg *dflt = config_load_strict(h->cache, path, LAYER_MODULE, h->strict, &ignored, err);
                if (dflt)
                    l = new_layer(LAYER_MODULE, name, dflt);
            }
        } else if (pstring && strcmp(pname, "function") == 0) {
            char *fn = xjoin(name, "::data", NULL);
            m = xasprintf("Using of legacy data provider function '%s'. Please convert to a 'data_hash' function", fn);
            warn_once(h, "legacy-provider-function", "legacy_provider_function", NULL, m);
            free(m);
            l = new_layer(LAYER_MODULE, name, config_legacy_function(dir, fn, LAYER_MODULE));
            free(fn);
        } else if (!(pstring && strcmp(pname, "none") == 0)) {
            /* (Puppet applies % to the exception instead of its message) */
            if (h->version == HIERA_PUPPET_8)
                herr_set(err, HERR_ERROR, "undefined method `%%' for an instance of Puppet::Error");
            else
                herr_set(err, HERR_ERROR,
                         "undefined method `%%' for #<Puppet::Error: Environment '%%{env}', cannot find module_data_provider '%%{provider}'>");
        }
    }
    if (cfg)
        config_free(cfg);
    if (l)
        *state = MOD_OK;
    free(pname);
    free(path);
    free(md_path);
    free(dir);
    return l;
}

/* LookupAdapter#module_provider: created once per module name. */
static __attribute__((noinline)) layer *module_layer_known(hiera_ctx *h, const char *name, const char *stable,
                                                          mod_state *state, herr *err)
{
    hv *idx = hv_hash_gets(h->modules, name);
    if (!idx) {
        herr e = {0};
        int st = MOD_NOT_FOUND;
        layer *l = make_module_layer(h, name, &st, &e);
        if (herr_isset(&e)) {
            /* not remembered: Puppet tries again (and fails again) on the next lookup */
            herr_move(err, &e);
            return NULL;
        }
        h->mod_layers = xrealloc(h->mod_layers, (h->nmod_layers + 1) * sizeof *h->mod_layers);
        h->mod_layers[h->nmod_layers] = l;
        hv *rec = hv_array();
        hv_array_push(rec, hv_int((int64_t)h->nmod_layers));
        hv_array_push(rec, hv_int(st));
        hv_hash_sets(h->modules, name, rec);
        h->nmod_layers++;
        idx = hv_hash_gets(h->modules, name);
    }
    *state = (mod_state)hv_int_val(hv_array_get(idx, 1));
    layer *l = h->mod_layers[hv_int_val(hv_array_get(idx, 0))];
    recent_put(h->mod_recent, name, l, (int)*state, stable);
    return l;
}

/* (the names asked last, inline: every lookup of a module's key asks) */
static inline layer *module_layer_of(hiera_ctx *h, const char *name, const char *stable, mod_state *state, herr *err)
{
    const recent_name *known = recent_get(h->mod_recent, name, stable);
    if (known) {
        *state = (mod_state)known->st;
        return known->obj;
    }
    return module_layer_known(h, name, stable, state, err);
}

layer *module_layer(hiera_ctx *h, const char *name, mod_state *state, herr *err)
{
    return module_layer_of(h, name, NULL, state, err);
}

/* module_layer for the module of I's key */
static inline layer *inv_module_layer(inv *I, mod_state *state, herr *err)
{
    return module_layer_of(I->h, I->module_name, I->module_stable ? I->module_name : NULL, state, err);
}

/* ------------------------------------------------------------------ locations */

static void add_location(location **locs, size_t *n, size_t *cap, char *path, char *original, bool exists, bool is_uri)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *locs = xrealloc(*locs, *cap * sizeof **locs);
    }
    (*locs)[(*n)++] = (location){.path = path, .original = original, .exists = exists, .is_uri = is_uri};
}

/* A location whose existence is checked now (what stat() said kept for its load). */
static void add_checked_location(hiera_cache *c, location **locs, size_t *n, size_t *cap, char *path, char *original)
{
    struct stat *st;
    bool exists = cache_file_exists_stat(c, path, &st);
    add_location(locs, n, cap, path, original, exists, false);
    (*locs)[*n - 1].st = st;
}

/* ------------------------------------------------------------------ the facts rule
 *
 * Facts (and other scope variables) are sent by nodes: what they may do to a location.
 *  - Always, as Puppet does: a NUL byte in an interpolated path, glob or datadir is an error
 *    (Ruby's Pathname raises ArgumentError "pathname contains null byte"; a URI gives URI's
 *    InvalidURIError). A C string would silently end at the NUL and drop the rest of the path.
 *  - Unless the caller opts out (hiera_options.unsafe_fact_paths, `--unsafe-fact-paths`): the
 *    interpolation may not add a ".." segment, may not make a relative location absolute, and
 *    in a glob may not add glob metacharacters. Such a location is refused: it is kept with the
 *    path Puppet computes (so --explain shows it as Puppet does) but treated as a file that does
 *    not exist, never read or matched (a glob matches nothing; a refused datadir refuses every
 *    location under it), and a warning says so once per text. The other levels still answer, as
 *    in Puppet whenever the file the facts point at does not exist: a fact that is missing where
 *    a location begins with it ("%{facts.dc}/common.yaml" gives "/common.yaml") is the common
 *    case. Puppet has no such rule (it follows "..", absolute values and glob characters that
 *    facts bring), so the opt-out gives Puppet's answers for such facts; data whose hiera.yaml
 *    itself writes ".." or globs is not affected, only what interpolation adds. */

/* The number of ".." segments of s; with strip_expressions, a segment holding a "%{...}"
 * expression never counts (it is the template of an interpolation). */
static size_t dotdot_segments(const char *s, size_t len, bool strip_expressions)
{
    size_t n = 0, seg = 0;
    bool expr = false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '/') {
            if (!expr && i - seg == 2 && s[seg] == '.' && s[seg + 1] == '.')
                n++;
            seg = i + 1;
            expr = false;
        } else if (strip_expressions && s[i] == '%' && i + 1 < len && s[i + 1] == '{') {
            const char *close = memchr(s + i, '}', len - i);
            if (close) {
                i = (size_t)(close - s);
                expr = true;
            }
        }
    }
    return n;
}

/* The number of glob metacharacters of s (outside "%{...}" with strip_expressions). */
static size_t glob_chars(const char *s, size_t len, bool strip_expressions)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (strip_expressions && i + 1 < len && s[i] == '%' && s[i + 1] == '{') {
            const char *close = memchr(s + i, '}', len - i);
            if (close) {
                i = (size_t)(close - s);
                continue;
            }
        }
        if (strchr("*?[]{}\\", s[i]))
            n++;
    }
    return n;
}

/* Checks the interpolated location res of template tmpl (a location relative to the datadir,
 * or the datadir itself) under the facts rule: false with err for a NUL byte; true otherwise,
 * with *refused set when the rule refuses the location (and a warning given once). */
static bool location_allowed(inv *I, const hlevel *lvl, const char *tmpl, const char *res, size_t reslen, bool glob,
                             bool uri, bool *refused, herr *err)
{
    *refused = false;
    if (memchr(res, 0, reslen)) {
        if (uri) {
            sbuf b = {0};
            hv *s = hv_strn(res, reslen);
            ruby_inspect(&b, s);
            hv_decref(s);
            herr_set(err, HERR_ERROR, "bad URI(is not URI?): %s", sb_str(&b));
            sb_free(&b);
        } else {
            herr_set(err, HERR_ERROR, "pathname contains null byte");
        }
        return false;
    }
    if (!I->h->strict_paths || uri)
        return true;
    const char *why = NULL;
    if (dotdot_segments(res, reslen, false) > dotdot_segments(tmpl, strlen(tmpl), true))
        why = "adds a '..' segment";
    else if (res[0] == '/' && tmpl[0] != '/')
        why = "makes the path absolute";
    else if (glob && glob_chars(res, reslen, false) > glob_chars(tmpl, strlen(tmpl), true))
        why = "adds glob characters";
    if (!why)
        return true;
    *refused = true;
    char *id = xasprintf("location-refused-%s-%s-%s", lvl ? lvl->name : "", tmpl, res);
    if (cache_warn_once(I->h->cache, id))
        diag_warn("location-refused", NULL, 0, 0,
                  "Interpolation of '%s' in hierarchy entry '%s' gave '%s', which %s: facts and variables may not "
                  "lead a location out of its datadir, so it is treated as missing (--unsafe-fact-paths follows "
                  "it, as Puppet does)",
                  tmpl, lvl ? lvl->name : "", res, why);
    free(id);
    return true;
}

/* Interpolates a location (or datadir) string: the result is checked with its length, so that
 * a NUL is seen, then returned as a C string; *refused tells whether the facts rule refuses it
 * (then it is never remembered: the warning comes from the check). */
static lr interp_location(inv *I, const hlevel *lvl, const char *s, bool glob, bool uri, char **out, bool *refused,
                          herr *err)
{
    *refused = false;
    if (!strstr(s, "%{")) {
        /* nothing to interpolate: the text itself, which the facts rule always allows */
        *out = xstrdup(s);
        return LR_FOUND;
    }
    /* a frozen cache remembers the checked text for the values of the variables it reads */
    memo *m = cache_work_memo(I->h->cache);
    sbuf key = {0};
    char *known = location_remembered(I, m, s, glob, uri, &key);
    if (known) {
        *out = known;
        return LR_FOUND;
    }
    hv *in = hv_str(s), *res = NULL;
    lr r = interpolate(I, in, false, &res, err);
    hv_decref(in);
    if (r != LR_FOUND) {
        sb_free(&key);
        return r;
    }
    sbuf b = {0};
    ruby_to_s(&b, res);
    hv_decref(res);
    if (!location_allowed(I, lvl, s, sb_str(&b), b.len, glob, uri, refused, err)) {
        sb_free(&key);
        sb_free(&b);
        return LR_ERROR;
    }
    if (key.len && !*refused) {
        hv *text = hv_strn(b.s ? b.s : "", b.len);
        memo_put(m, key.s, key.len, text);
        hv_decref(text);
    }
    sb_free(&key);
    *out = sb_take(&b);
    return LR_FOUND;
}

/* LocationResolver#resolve_paths, #expand_globs, #expand_uris, #expand_mapped_paths; with
 * dd_refused (the facts rule refused the datadir), every path and glob under it is refused. */
static lr resolve_locations(inv *I, const hcfg *cfg, const hlevel *lvl, const char *datadir, bool dd_refused,
                            location **locs, size_t *nlocs, herr *err)
{
    bool refused;
    size_t cap = 0;
    *locs = NULL;
    *nlocs = 0;
    bool is_default = cfg->path == NULL;
    switch (lvl->lkind) {
    case LOC_PATH:
    case LOC_PATHS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], false, false, &p, &refused, err) != LR_FOUND)
                return LR_ERROR;
            if (lvl->extension) {
                size_t pl = strlen(p), el = strlen(lvl->extension);
                if (pl < el || strcmp(p + pl - el, lvl->extension) != 0) {
                    char *q = xasprintf("%s%s", p, lvl->extension);
                    free(p);
                    p = q;
                }
            }
            char *full = pn_plus(datadir, p);
            free(p);
            struct stat *st = NULL;
            bool exists = !refused && !dd_refused && cache_file_exists_stat(I->h->cache, full, &st);
            if (is_default && !exists) {
                free(full);
                continue;
            }
            add_location(locs, nlocs, &cap, full, xstrdup(lvl->locs[i]), exists, false);
            (*locs)[*nlocs - 1].st = st;
        }
        return LR_FOUND;
    case LOC_GLOB:
    case LOC_GLOBS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], true, false, &p, &refused, err) != LR_FOUND)
                return LR_ERROR;
            char *pattern = pn_plus(datadir, p);
            free(p);
            if (refused || dd_refused) {
                free(pattern); /* (a refused glob matches nothing) */
                continue;
            }
            glob_result g = {0};
            if (cache_glob(I->h->cache, pattern, GLOB_LIMIT, &g) < 0) {
                glob_free(&g);
                herr_set(err, HERR_LOOKUP, "Glob pattern '%s' of hierarchy entry '%s' matches too many paths (more than %d) or needs too much work",
                         pattern, lvl->name, GLOB_LIMIT);
                free(pattern);
                return LR_ERROR;
            }
            for (size_t j = 0; j < g.n; j++) {
                add_location(locs, nlocs, &cap, g.paths[j], xstrdup(pattern), true, false);
                g.paths[j] = NULL;
            }
            glob_free(&g);
            free(pattern);
        }
        return LR_FOUND;
    case LOC_URI:
    case LOC_URIS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], false, true, &p, &refused, err) != LR_FOUND)
                return LR_ERROR; /* (the rule leaves URIs alone: never refused) */
            add_location(locs, nlocs, &cap, p, xstrdup(lvl->locs[i]), true, true);
        }
        return LR_FOUND;
    case LOC_MAPPED_PATHS: {
        if (lvl->nlocs != 3)
            return LR_FOUND;
        hv *vars = NULL;
        if (scope_lookup(I, lvl->locs[0], "mapped_path[0]", &vars, err) != LR_FOUND)
            return LR_ERROR;
        hv *list = NULL;
        if (hv_is(vars, HV_STRING)) {
            if (hv_str_len(vars)) {
                list = hv_array();
                hv_array_push(list, hv_incref(vars));
            }
        } else if (hv_is(vars, HV_ARRAY)) {
            list = hv_incref(vars);
        } else if (hv_is(vars, HV_HASH)) {
            list = hv_array();
            for (size_t i = 0; i < hv_hash_len(vars); i++) {
                hv *pair = hv_array();
                hv_array_push(pair, hv_incref(hv_hash_key_at(vars, i)));
                hv_array_push(pair, hv_incref(hv_hash_val_at(vars, i)));
                hv_array_push(list, pair);
            }
        }
        hv_decref(vars);
        lr r = LR_FOUND;
        for (size_t i = 0; list && i < hv_array_len(list); i++) {
            hv *local = hv_hash();
            hv_hash_sets(local, lvl->locs[1], hv_incref(hv_array_get(list, i)));
            const hv *save = I->local_scope;
            I->local_scope = local;
            char *p = NULL;
            r = interp_location(I, lvl, lvl->locs[2], false, false, &p, &refused, err);
            I->local_scope = save;
            hv_decref(local);
            if (r != LR_FOUND)
                break;
            char *full = pn_plus(datadir, p);
            free(p);
            if (refused || dd_refused)
                add_location(locs, nlocs, &cap, full, xstrdup(lvl->locs[2]), false, false);
            else
                add_checked_location(I->h->cache, locs, nlocs, &cap, full, xstrdup(lvl->locs[2]));
        }
        hv_decref(list);
        return r;
    }
    case LOC_NONE:
        return LR_FOUND;
    }
    return LR_FOUND;
}

/* ---- remembered levels
 *
 * With a frozen cache, where a version 5 level's paths or globs lead is a function of the level
 * and of what its templates (datadir and locations) read: its locations are remembered under
 * 'E', the level's address (its configuration lives as long as the cache) and those values, as
 * [path, original, exists, file number] for each location. Every node of a fleet expands every
 * level; most levels give the same few results (a role, a datacenter), and a remembered one is
 * copied instead of being interpolated, joined to its datadir and checked for existence again. */

typedef struct {
    char tag;
    const hlevel *lvl;
} level_id;

/* The key of lvl's remembered locations, in k; false when it cannot have one (k is then empty). */
static bool level_key(inv *I, memo *m, const hlevel *lvl, sbuf *k)
{
    k->len = 0;
    if (!m || I->h->ex || lvl->v3_datadir_abs || I->config->version != 5 ||
        (lvl->lkind != LOC_PATH && lvl->lkind != LOC_PATHS && lvl->lkind != LOC_GLOB && lvl->lkind != LOC_GLOBS))
        return false;
    level_id id;
    memset(&id, 0, sizeof id);
    id.tag = 'e';
    id.lvl = lvl;
    hv *deps = hv_incref(memo_get(m, &id, sizeof id));
    if (!deps) {
        /* what the templates read, listed once per level */
        const char **t = xmalloc((lvl->nlocs + 1) * sizeof *t);
        char *joined = pn_plus(I->config->root, lvl->datadir);
        t[0] = joined;
        for (size_t i = 0; i < lvl->nlocs; i++)
            t[i + 1] = lvl->locs[i];
        deps = templates_deps(I, t, lvl->nlocs + 1);
        free(joined);
        free(t);
        memo_put(m, &id, sizeof id, deps);
    }
    id.tag = 'E';
    sb_addn(k, (const char *)&id, sizeof id);
    sb_addc(k, I->h->strict_paths ? 's' : '-');
    bool usable = templates_key(I, deps, k);
    hv_decref(deps);
    if (!usable)
        k->len = 0;
    return usable;
}

/* The provider's locations from a remembered level. */
static void level_recall(provider *p, const hv *known)
{
    size_t n = hv_array_len(known) / 4;
    p->locs = n ? xmalloc(n * sizeof *p->locs) : NULL;
    p->nlocs = n;
    for (size_t j = 0; j < n; j++) {
        const hv *path = hv_array_get(known, 4 * j), *orig = hv_array_get(known, 4 * j + 1);
        p->locs[j] = (location){.path = xstrndup(hv_str_ptr(path), hv_str_len(path)),
                                .original = xstrndup(hv_str_ptr(orig), hv_str_len(orig)),
                                .exists = hv_bool_val(hv_array_get(known, 4 * j + 2)),
                                .kid = (uint32_t)hv_int_val(hv_array_get(known, 4 * j + 3))};
    }
}

static inline file_format provider_format(provider *p, bool *known);

/* Remembers the provider's locations under key (its level's, from level_key), each with the
 * number of its data hash when the cache has loaded it already (location_load then finds it by
 * that number instead of by its path). */
static void level_remember(hiera_cache *c, memo *m, const sbuf *key, provider *p)
{
    bool known = false;
    file_format fmt = provider_format(p, &known);
    hv *rec = hv_array_sized(4 * p->nlocs);
    for (size_t j = 0; j < p->nlocs; j++) {
        const location *loc = &p->locs[j];
        hv_array_push(rec, hv_str(loc->path));
        hv_array_push(rec, hv_str(loc->original));
        hv_array_push(rec, hv_bool(loc->exists));
        uint32_t kid = known && p->lvl->fkind == FN_DATA_HASH && loc->exists ? cache_loaded_kid(c, loc->path, fmt) : 0;
        hv_array_push(rec, hv_int(kid));
    }
    memo_put(m, key->s, key->len, rec);
    hv_decref(rec);
}

static lr expand_levels(hiera_ctx *h, layer *l, const hlevel *levels, size_t n, provider **out, size_t *nout, herr *err)
{
    const hcfg *cfg = l->cfg;
    inv I = {h, NULL, NULL, NULL, cfg, NULL, 0, 0, 0, NULL, false};
    provider *provs = xcalloc(n ? n : 1, sizeof *provs);
    size_t np = 0;
    memo *m = cache_work_memo(h->cache);
    sbuf key = {0};
    for (size_t i = 0; i < n; i++) {
        const hlevel *lvl = &levels[i];
        provider *p = &provs[np];
        memset(p, 0, sizeof *p);
        p->lvl = lvl;
        size_t counted = h->nested_lookups;
        if (level_key(&I, m, lvl, &key)) {
            const hv *known = memo_get(m, key.s, key.len);
            if (known) {
                level_recall(p, known);
                goto resolved;
            }
            h->nested_lookups = counted; /* (the expansion counts its own) */
        }
        char *datadir;
        bool dd_refused = false;
        if (lvl->v3_datadir_abs) {
            /* Hiera 3 backends: the backend's :datadir: (interpolated), else the default */
            const char *dd = lvl->datadir;
            char *def = NULL;
            if (!dd)
                dd = def = xasprintf("%s/environments/%%{::environment}/hieradata", h->codedir);
            lr r = interp_location(&I, lvl, dd, false, false, &datadir, &dd_refused, err);
            free(def);
            if (r != LR_FOUND) {
                goto fail;
            }
        } else {
            char *joined = pn_plus(cfg->root, lvl->datadir);
            lr r = cfg->version == 4 ? (datadir = xstrdup(joined), LR_FOUND)
                                     : interp_location(&I, lvl, joined, false, false, &datadir, &dd_refused, err);
            free(joined);
            if (r != LR_FOUND) {
                goto fail;
            }
        }
        if (h->remap_envpath) {
            char *mapped = envpath_remap(datadir, h->remap_envpath, NULL);
            if (mapped) {
                free(datadir);
                datadir = mapped;
            }
        }
        if (lvl->lkind == LOC_NONE) {
            p->nil_location = true;
        } else {
            /* Puppet 8 resolves a version 5 level's locations (not its datadir, not its options)
             * with avoid_hiera_interpolation_errors */
            bool shield = h->shield_undefined;
            h->shield_undefined = h->version == HIERA_PUPPET_8 && cfg->version == 5;
            lr r = resolve_locations(&I, cfg, lvl, datadir, dd_refused, &p->locs, &p->nlocs, err);
            h->shield_undefined = shield;
            if (r != LR_FOUND) {
                free(datadir);
                goto fail;
            }
        }
        free(datadir);
        if (key.len)
            level_remember(h->cache, m, &key, p);
    resolved:
        if (!cfg->path && !p->nil_location && p->nlocs == 0) {
            free(p->locs);
            continue; /* default config and no existing paths */
        }
        if (lvl->options && cfg->version == 5) {
            hv *opts = NULL;
            if (interpolate(&I, lvl->options, false, &opts, err) != LR_FOUND) {
                goto fail;
            }
            p->options = opts;
        } else if (lvl->options) {
            hv *opts = NULL;
            if (interpolate(&I, lvl->options, false, &opts, err) != LR_FOUND) {
                goto fail;
            }
            p->options = opts;
        }
        np++;
    }
    sb_free(&key);
    *out = provs;
    *nout = np;
    return LR_FOUND;
fail:
    /* (provs[np], the provider being made, is zeroed or partly made: freed with the others) */
    sb_free(&key);
    providers_free(provs, np + 1);
    return LR_ERROR;
}

/* layer_providers the first time, or with the configuration's error. */
static __attribute__((noinline)) lr layer_providers_first(hiera_ctx *h, layer *l, bool use_default, provider **out,
                                                         size_t *n, herr *err)
{
    if (herr_isset(&l->cfg->lazy_err)) {
        herr_clear(err);
        *err = (herr){l->cfg->lazy_err.kind, xstrdup(l->cfg->lazy_err.msg),
                      l->cfg->lazy_err.file ? xstrdup(l->cfg->lazy_err.file) : NULL, l->cfg->lazy_err.line, 0};
        return LR_ERROR;
    }
    if (!l->expanded) {
        explainer *save = h->ex;
        h->ex = NULL; /* Puppet's explanation shows no hierarchy interpolation */
        lr r = expand_levels(h, l, l->cfg->levels, l->cfg->nlevels, &l->provs, &l->nprovs, err);
        if (r == LR_FOUND && l->cfg->has_default_hierarchy)
            r = expand_levels(h, l, l->cfg->dlevels, l->cfg->ndlevels, &l->dprovs, &l->ndprovs, err);
        if (r == LR_ERROR)
            config_undefined_variable(l->cfg, err);
        h->ex = save;
        if (r != LR_FOUND) {
            providers_free(l->provs, l->nprovs);
            l->provs = NULL;
            l->nprovs = 0;
            return r;
        }
        l->expanded = true;
    }
    *out = use_default ? l->dprovs : l->provs;
    *n = use_default ? l->ndprovs : l->nprovs;
    return LR_FOUND;
}

/* HieraConfig#configured_data_providers, once per context (the scope does not change). The
 * providers made, inline (every layer of every lookup asks). */
lr layer_providers(hiera_ctx *h, layer *l, bool use_default, provider **out, size_t *n, herr *err)
{
    if (__builtin_expect(l->expanded && !herr_isset(&l->cfg->lazy_err), 1)) {
        *out = use_default ? l->dprovs : l->provs;
        *n = use_default ? l->ndprovs : l->nprovs;
        return LR_FOUND;
    }
    return layer_providers_first(h, l, use_default, out, n, err);
}

/* ------------------------------------------------------------------ data hash functions */


/* DataProvider#validate_data_value names the type TypeCalculator#infer gives the value */
static char *infer_type_name(const hv *v) { return ptype_infer_to_s(v); }

/* The format of the files the provider function fname reads (*known false: no such function). */
__attribute__((noinline)) static file_format data_hash_format(const char *fname, bool *known)
{
    const provider_def *pd = provider_find(fname);
    *known = pd != NULL;
    return pd ? pd->format : FMT_YAML;
}

/* data_hash_format of the provider's function, remembered in the provider. */
static inline file_format provider_format(provider *p, bool *known)
{
    if (!p->fmt_set) {
        p->fmt = data_hash_format(p->lvl->fname, &p->fmt_known);
        p->fmt_set = true;
    }
    *known = p->fmt_known;
    return p->fmt;
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
static void function_not_found(hiera_ctx *h, const layer *l, const provider *p, herr *err)
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
static bool location_load(hiera_ctx *h, provider *p, location *loc, herr *err)
{
    if (!loc->loaded) {
        loc->loaded = true;
        bool known;
        file_format fmt = provider_format(p, &known);
        hv *known_data = NULL, *flags = NULL;
        if (p->nil_location || !loc->path || loc->is_uri) {
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
static int location_value(location *loc, const char *key, size_t len, uint64_t code, hv **out, herr *err)
{
    if (loc->data) {
        *out = hv_hash_getsn_code(loc->data, key, len, code);
        return *out != NULL;
    }
    return lazy_data_get(loc->lazy, key, len, code, out, err);
}

/* ------------------------------------------------------------------ strategy lookups */

typedef lr (*variant_fn)(void *arg, size_t i, hv **out, herr *err);
static lr strategy_fold(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err);

/* MergeStrategy#lookup: first found, or the fold of all found values (merge node in the
 * explanation when there is more than one variant). Without an explanation, the fold is
 * remembered as layer_walk's is (see deferral below). */
static lr strategy_lookup(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err)
{
    if (ms_is_first(ms)) {
        for (size_t i = 0; i < n; i++) {
            lr r = fn(arg, i, out, err);
            if (r != LR_NOT_FOUND)
                return r;
        }
        return LR_NOT_FOUND;
    }
    if (n == 0)
        return LR_NOT_FOUND;
    explainer *ex = h->ex;
    if (!ex)
        return strategy_fold(h, ms, n, fn, arg, out, err);
    if (n == 1) {
        hv *v = NULL;
        lr r = fn(arg, 0, &v, err);
        if (r != LR_FOUND)
            return r;
        *out = ms_merge_single(ms, v);
        hv_decref(v);
        return LR_FOUND;
    }
    ex_push_merge(ex, ms);
    hv *acc = NULL;
    lr result = LR_FOUND;
    for (size_t i = 0; i < n; i++) {
        hv *v = NULL;
        lr r = fn(arg, i, &v, err);
        if (r == LR_ERROR) {
            result = LR_ERROR;
            break;
        }
        if (r == LR_NOT_FOUND)
            continue;
        hv *next;
        if (!acc) {
            next = ms_convert_value(ms, v);
        } else {
            next = ms_merge(ms, acc, v, true, err);
            if (!next) {
                hv_decref(v);
                result = LR_ERROR;
                break;
            }
        }
        hv_decref(v);
        hv_decref(acc);
        acc = next;
    }
    if (result == LR_FOUND && !acc)
        result = LR_NOT_FOUND;
    if (result == LR_FOUND) {
        ex_result(ex, acc);
        *out = acc;
    } else {
        hv_decref(acc);
    }
    ex_pop(ex);
    return result;
}

/* ---- one hierarchy entry ---- */

typedef struct {
    inv *I;
    const layer *l;
    provider *p;
    const char *root_key;
    const merge_strategy *ms;
    size_t root_len;
    uint64_t root_code; /* the root key's hash, computed once for every level probed */
    /* frozen cache: the key's entry in the key index, as of kx_gen indexed files (kept in the
     * invocation when the key is its own: fetched once for all layers) */
    bool use_kx, kx_in_inv;
    uint32_t kx_gen;
    const key_index *kx;
} entry_arg;

static inline __attribute__((always_inline)) entry_arg entry_args(inv *I, const layer *l, provider *p, const char *root_key, const merge_strategy *ms)
{
    hiera_ctx *h = I->h;
    entry_arg a = {I, l, p, root_key, ms, 0, 0, cache_is_frozen(h->cache) && !h->ex && !h->prov, false, 0, NULL};
    if (I->root_key == root_key) { /* the lookup's own key: its hash is known */
        a.root_len = I->root_len;
        a.root_code = I->root_code;
        a.kx_in_inv = true;
    } else {
        a.root_len = strlen(root_key);
        a.root_code = hv_str_code(root_key, a.root_len);
    }
    return a;
}

/* LookupKeyFunctionProvider#lookup_key: the provider's answer for the key at the location, one
 * per key and location, remembered (the function caches, so interpolation runs once). */
static lr lookup_key_value(entry_arg *a, location *loc, hv **out, herr *err)
{
    hiera_ctx *h = a->I->h;
    explainer *ex = h->ex;
    const provider_def *pd = provider_find(a->p->lvl->fname);
    if (!pd || !pd->key_value) {
        if (h->opaque_unknown) {
            h->opaque_hits++;
            return LR_NOT_FOUND;
        }
        function_not_found(a->I->h, a->l, a->p, err);
        return LR_ERROR;
    }
    if (!loc->data_err.msg && !loc->loaded && (a->p->nil_location || loc->is_uri)) {
        herr_set(err, HERR_ERROR,
                 "'%s': one of 'path', 'paths' 'glob', 'globs' or 'mapped_paths' must be declared in hiera.yaml when using this lookup_key function",
                 pd->name);
        return LR_ERROR;
    }
    hv *known = hv_hash_gets(loc->memo, a->root_key);
    if (known) {
        *out = hv_incref(known);
        return LR_FOUND;
    }
    hv *hash = location_data(h, a->l, a->p, loc, err);
    if (!hash)
        return LR_ERROR;
    hv *raw = hv_hash_gets(hash, a->root_key);
    if (!raw) {
        if (ex)
            ex_not_found_str(ex, a->root_key);
        return LR_NOT_FOUND;
    }
    hv *value = NULL;
    provider_call call = {a->I, a->p->options, a->root_key, loc->path ? loc->path : ""};
    if (pd->key_value(&call, raw, &value, err) != LR_FOUND)
        return LR_ERROR;
    if (!hv_is_rich_data(value, 0)) {
        char *got = infer_type_name(value);
        herr_set(err, HERR_PUPPET,
                 "Value for key '%s', returned from %s function '%s', when using location '%s', has wrong type, expects Puppet::LookupValue, got %s",
                 a->root_key, a->l->cfg && a->l->cfg->version == 3 ? "v3_lookup_key" : "lookup_key", a->p->lvl->fname,
                 loc->path ? loc->path : "", got);
        free(got);
        hv_decref(value);
        return LR_ERROR;
    }
    if (!loc->memo)
        loc->memo = hv_hash();
    hv_hash_sets(loc->memo, a->root_key, hv_incref(value));
    *out = value;
    return LR_FOUND;
}

/* Provenance mode: registers the nodes of a value found at a location. */
static hv *trace(entry_arg *a, const location *loc, hv *value)
{
    const layer *l = a->l;
    char *layer_name = l->kind == LAYER_GLOBAL ? xstrdup("Global") : l->kind == LAYER_ENV ? xstrdup("Environment")
                                                                                         : xasprintf("Module %s", l->module);
    uint32_t key_line = 0; /* the line of the found key in the location's file */
    if (loc->data) {
        hv *k = hv_strn(a->root_key, a->root_len);
        long at = hv_hash_index(loc->data, k);
        hv_decref(k);
        if (at >= 0)
            key_line = hv_line(hv_hash_key_at(loc->data, (size_t)at));
    }
    hv *res = prov_register(a->I->h->prov, value, layer_name, a->p->lvl->name, loc->path, key_line);
    free(layer_name);
    hv_decref(value);
    return res;
}

/* root_key's entry in c's key index, kept in *kx as of *kx_gen and fetched again when the index
 * has grown since (files were added: the entry may move). */
static inline const key_index *kx_current(hiera_cache *c, const char *root_key, size_t len, uint64_t code,
                                          uint32_t *kx_gen, const key_index **kx)
{
    uint32_t gen = cache_key_index_gen(c);
    if (gen != *kx_gen) {
        *kx = cache_key_index(c, root_key, len, code);
        *kx_gen = gen;
    }
    return *kx;
}

/* The lookup's key's entry in the frozen cache's key index, kept where the entry argument says. */
static inline const key_index *entry_kx(entry_arg *a)
{
    uint32_t *kx_gen = a->kx_in_inv ? &a->I->kx_gen : &a->kx_gen;
    const key_index **kx = a->kx_in_inv ? &a->I->kx : &a->kx;
    return kx_current(a->I->h->cache, a->root_key, a->root_len, a->root_code, kx_gen, kx);
}

static lr data_value(entry_arg *a, location *loc, hv **out, herr *err)
{
    if (a->p->lvl->fkind == FN_LOOKUP_KEY) {
        lr r = lookup_key_value(a, loc, out, err);
        if (r == LR_FOUND && a->I->h->prov)
            *out = trace(a, loc, *out);
        if (r == LR_FOUND && a->I->h->ex)
            ex_found_str(a->I->h->ex, a->root_key, *out);
        return r;
    }
    hiera_ctx *h = a->I->h;
    explainer *ex = h->ex;
    bool known;
    provider_format(a->p, &known);
    if (a->p->lvl->fkind != FN_DATA_HASH || !known) {
        if (h->opaque_unknown) {
            h->opaque_hits++;
            return LR_NOT_FOUND;
        }
        function_not_found(a->I->h, a->l, a->p, err);
        return LR_ERROR;
    }
    if (!location_load(h, a->p, loc, err))
        return LR_ERROR;
    hv *value;
    key_hit *hit = NULL;
    if (loc->kid && a->use_kx) {
        hit = key_index_find(entry_kx(a), loc->kid);
        value = hit ? hit->value : NULL;
    } else if (location_value(loc, a->root_key, a->root_len, a->root_code, &value, err) < 0) {
        return LR_ERROR;
    }
    if (!value) {
        if (ex)
            ex_not_found_str(ex, a->root_key);
        return LR_NOT_FOUND;
    }
    int flags;
    if (hit && hit->flags >= 0)
        flags = hit->flags;
    else if (loc->keyflags)
        flags = cache_key_flags(loc->keyflags, a->root_key, a->root_len, a->root_code, value);
    else
        flags = KEY_INTERP | (hv_is_rich_data(value, 0) ? 0 : KEY_INVALID);
    if (hit)
        hit->flags = flags;
    bool invalid = (flags & KEY_INVALID) != 0;
    if (invalid) {
        char *got = infer_type_name(value);
        if (loc->path && !a->p->nil_location)
            herr_set(err, HERR_PUPPET,
                     "Value for key '%s', in hash returned from data_hash function '%s', when using location '%s', has wrong type, expects Puppet::LookupValue, got %s",
                     a->root_key, a->p->lvl->fname, loc->path, got);
        else
            herr_set(err, HERR_PUPPET,
                     "Value for key '%s', in hash returned from data_hash function '%s', has wrong type, expects Puppet::LookupValue, got %s",
                     a->root_key, a->p->lvl->fname, got);
        free(got);
        return LR_ERROR;
    }
    hv *res = NULL;
    bool plain = !(flags & KEY_INTERP) && !ex && !h->prov;
    memo *m = !ex && !h->prov ? cache_work_memo(h->cache) : NULL;
    if (plain) {
        res = hv_incref(value); /* nothing to interpolate: the value as it is (stable when its
                                 * file is in a frozen cache's key index) */
    } else {
        lr r = m ? interpolate_remembered(a->I, m, value, hit ? &hit->deps : NULL, hit ? &hit->odds : NULL, &res, err)
                 : interpolate(a->I, value, true, &res, err);
        if (r != LR_FOUND)
            return r;
    }
    if (h->prov)
        res = trace(a, loc, res);
    if (ex)
        ex_found_str(ex, a->root_key, res);
    *out = res;
    return LR_FOUND;
}

static lr entry_location(void *arg, size_t i, hv **out, herr *err)
{
    entry_arg *a = arg;
    explainer *ex = a->I->h->ex;
    if (a->p->nil_location)
        return data_value(a, &a->p->nil_loc, out, err);
    location *loc = &a->p->locs[i];
    if (ex)
        ex_push_location(ex, loc->path, loc->original, loc->is_uri);
    lr r;
    if (loc->exists) {
        r = data_value(a, loc, out, err);
    } else {
        if (ex)
            ex_location_not_found(ex);
        r = LR_NOT_FOUND;
    }
    if (ex)
        ex_pop(ex);
    return r;
}

static lr entry_lookup(inv *I, const layer *l, provider *p, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    explainer *ex = I->h->ex;
    if (ex) {
        /* the provider's name: V4DataHashFunctionProvider names its function */
        char *name = p->lvl->fkind == FN_V4_DATA_HASH ? xasprintf("Deprecated API function \"%s\"", p->lvl->fname)
                                                       : xasprintf("Hierarchy entry \"%s\"", p->lvl->name);
        ex_push(ex, EX_HIERARCHY_ENTRY, name, NULL);
        free(name);
    }
    entry_arg a = entry_args(I, l, p, root_key, ms);
    lr r = strategy_lookup(I->h, ms, p->nil_location ? 1 : p->nlocs, entry_location, &a, out, err);
    if (ex)
        ex_pop(ex);
    return r;
}

/* ---- one layer (ConfiguredDataProvider) ---- */

typedef struct {
    inv *I;
    const layer *l;
    provider *provs;
    const char *root_key;
    const merge_strategy *ms;
} layer_arg;

static lr layer_entry(void *arg, size_t i, hv **out, herr *err)
{
    layer_arg *a = arg;
    return entry_lookup(a->I, a->l, &a->provs[i], a->root_key, a->ms, out, err);
}

/* strategy_lookup's fold over n variants, one value at a time (v is consumed). */
typedef struct {
    const merge_strategy *ms;
    size_t n;
    hv *memo;
} fold;

static lr fold_add(fold *f, hv *v, herr *err)
{
    hv *next;
    if (f->n == 1)
        next = ms_merge_single(f->ms, v);
    else if (!f->memo)
        next = ms_convert_value(f->ms, v);
    else if (!(next = ms_merge(f->ms, f->memo, v, false, err))) {
        hv_decref(v);
        return LR_ERROR;
    }
    hv_decref(v);
    hv_decref(f->memo);
    f->memo = next;
    return LR_FOUND;
}

/* ---- merges remembered (memo.h) ----
 *
 * With a frozen cache, a merge whose found values are all stable is a function of their
 * addresses: the walk defers the fold, and looks the whole of it up under a key made of the
 * strategy and, for each value, where it was found. A value that is not stable, too many values,
 * or an error ends the deferral: what was deferred is folded then, in the order of the walk
 * (a merge error the plain fold would have met first still comes first). */

#define DEFER_MAX 48

typedef struct {
    uint32_t outer, inner_n, inner; /* variant, its number of sub-variants, sub-variant */
    uint32_t pad;
    const hv *value;
} defer_item;

typedef struct {
    memo *m;              /* NULL: not deferring */
    const merge_strategy *ms;
    uint32_t n;           /* variants of the outer fold */
    size_t count;
    struct {
        char tag; /* 'l' layer, 's' strategy (memo keys start with their kind's letter) */
        char pad[3];
        uint32_t n;
        const merge_strategy *ms;
    } head;
    defer_item items[DEFER_MAX];
} deferral;

/* A deferred value in the memo key: where it was found and its address (16 bytes; the key of a
 * merge of three values fits a cache line). Of the variant's number of sub-variants the fold
 * only tells one from more (a fold of one is merge_single): the top bit of inner. */
typedef struct {
    uint32_t outer, inner;
    const hv *value;
} defer_key_item;
#define DEFER_SINGLE 0x80000000u

static inline void defer_start(deferral *d, hiera_ctx *h, const merge_strategy *ms, size_t n, char tag)
{
    d->m = !ms_is_first(ms) && ms->stable && !h->ex && !h->prov ? cache_work_memo(h->cache) : NULL;
    d->ms = ms;
    d->n = (uint32_t)n;
    d->count = 0;
    memset(&d->head, 0, sizeof d->head);
    d->head.ms = ms;
    d->head.n = (uint32_t)n;
    d->head.tag = tag;
}

/* Keeps v (a reference) for later; false when it cannot be deferred (the caller folds instead). */
static bool defer_add(deferral *d, size_t outer, size_t inner_n, size_t inner, hv *v)
{
    if (!d->m || d->count == DEFER_MAX || !hv_is_stable(v))
        return false;
    defer_item *it = &d->items[d->count++];
    memset(it, 0, sizeof *it);
    it->outer = (uint32_t)outer;
    it->inner_n = (uint32_t)inner_n;
    it->inner = (uint32_t)inner;
    it->value = v;
    return true;
}

static void defer_drop(deferral *d, size_t from)
{
    for (size_t k = from; k < d->count; k++)
        hv_decref((hv *)d->items[k].value);
    d->count = 0;
    d->m = NULL;
}

/* Ends the deferral: folds the deferred values into outer, those of the variant `live` (when
 * nested) into *inner, which stays open. */
static lr defer_replay(deferral *d, fold *outer, fold *inner, size_t live, herr *err)
{
    size_t count = d->count;
    d->m = NULL;
    d->count = 0;
    fold tmp = {d->ms, 0, NULL};
    for (size_t k = 0; k < count; k++) {
        defer_item *it = &d->items[k];
        hv *v = (hv *)it->value;
        lr r;
        if (!inner) {
            r = fold_add(outer, v, err);
        } else if (it->outer == live) {
            r = fold_add(inner, v, err);
        } else {
            if (!tmp.n)
                tmp = (fold){d->ms, it->inner_n, NULL};
            r = fold_add(&tmp, v, err);
            if (r != LR_ERROR && (k + 1 == count || d->items[k + 1].outer != it->outer)) {
                hv *done = tmp.memo;
                tmp = (fold){d->ms, 0, NULL};
                if (done)
                    r = fold_add(outer, done, err);
            }
        }
        if (r == LR_ERROR) {
            hv_decref(tmp.memo);
            d->count = count;
            defer_drop(d, k + 1);
            return LR_ERROR;
        }
    }
    return LR_FOUND;
}

/* Ends the deferral before the walk folds a value it could not defer, or reports an error: the
 * deferred values are folded first, and a merge error among them replaces err (the plain fold
 * would have met it first). false on that error. */
static bool defer_flush(deferral *d, fold *outer, fold *inner, size_t live, herr *err)
{
    if (!d->m)
        return true;
    herr merr = {0};
    if (defer_replay(d, outer, inner, live, &merr) != LR_ERROR)
        return true;
    herr_clear(err);
    *err = merr;
    return false;
}

/* The end of a walk that deferred all it found (outer has folded nothing): not found, the one
 * value (a fold of one value is the value itself: convert_value and merge_single only change
 * arrays for unique), the fold remembered, or the fold made now (providers' folds in inner when
 * nested, as replayed) and remembered. */
static lr defer_finish(deferral *d, fold *outer, fold *inner, hv **out, herr *err)
{
    if (!d->count)
        return LR_NOT_FOUND;
    if (d->count == 1 && d->ms->kind != MS_UNIQUE) {
        *out = (hv *)d->items[0].value;
        return LR_FOUND;
    }
    char key[sizeof d->head + DEFER_MAX * sizeof(defer_key_item)];
    size_t klen = sizeof d->head + d->count * sizeof(defer_key_item);
    memcpy(key, &d->head, sizeof d->head);
    bool keyed = true;
    for (size_t k = 0; k < d->count; k++) {
        const defer_item *it = &d->items[k];
        defer_key_item ki = {it->outer, it->inner | (it->inner_n == 1 ? DEFER_SINGLE : 0), it->value};
        keyed = keyed && it->inner < DEFER_SINGLE;
        memcpy(key + sizeof d->head + k * sizeof ki, &ki, sizeof ki);
    }
    memo *m = keyed ? d->m : NULL;
    hv *known = m ? memo_get(m, key, klen) : NULL;
    if (known) {
        defer_drop(d, 0);
        *out = hv_incref(known);
        return LR_FOUND;
    }
    if (defer_replay(d, outer, inner, d->n, err) == LR_ERROR) {
        hv_decref(outer->memo);
        return LR_ERROR;
    }
    if (!outer->memo)
        return LR_NOT_FOUND;
    if (m)
        memo_put(m, key, klen, outer->memo);
    *out = outer->memo;
    return LR_FOUND;
}

/* strategy_lookup's fold without an explanation, deferred and remembered when it can be. */
static lr strategy_fold(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err)
{
    deferral d;
    defer_start(&d, h, ms, n, 's');
    fold f = {ms, n, NULL};
    for (size_t i = 0; i < n; i++) {
        hv *v = NULL;
        lr r = fn(arg, i, &v, err);
        if (r == LR_NOT_FOUND)
            continue;
        if (r == LR_FOUND && defer_add(&d, i, 1, 0, v))
            continue;
        if (!defer_flush(&d, &f, NULL, 0, err)) {
            hv_decref(v);
            hv_decref(f.memo);
            return LR_ERROR;
        }
        if (r == LR_ERROR || fold_add(&f, v, err) == LR_ERROR) {
            hv_decref(f.memo);
            return LR_ERROR;
        }
    }
    if (d.m)
        return defer_finish(&d, &f, NULL, out, err);
    if (!f.memo)
        return LR_NOT_FOUND;
    *out = f.memo;
    return LR_FOUND;
}

/* The layer's probe plan for provs (engine.h), or NULL while it cannot be used: a location not
 * loaded yet (asked again at the next walk), or for good: a provider that is not a data hash
 * with locations, a file that failed to load or that the key index lacks. */
static const probe_plan *layer_plan(layer *l, const provider *provs, size_t n)
{
    probe_plan *pl = provs == l->provs ? &l->plan : provs == l->dprovs ? &l->dplan : NULL;
    if (!pl)
        return NULL;
    if (pl->state && (pl->provs != provs || pl->nprovs != n))
        plan_clear(pl);
    if (pl->state)
        return pl->state > 0 ? pl : NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        provider *p = (provider *)&provs[i];
        bool known = false;
        if (p->nil_location || p->lvl->fkind != FN_DATA_HASH || (provider_format(p, &known), !known)) {
            pl->state = -1;
            return NULL;
        }
        for (size_t j = 0; j < p->nlocs; j++) {
            const location *loc = &p->locs[j];
            if (!loc->exists)
                continue;
            if (!loc->loaded)
                return NULL;
            if (!loc->data || !loc->kid || j > UINT32_MAX) {
                pl->state = -1;
                return NULL;
            }
            count++;
        }
    }
    if (count > UINT32_MAX || n > UINT32_MAX) {
        pl->state = -1;
        return NULL;
    }
    pl->probes = xmalloc((count ? count : 1) * sizeof *pl->probes);
    pl->nprobes = count;
    count = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < provs[i].nlocs; j++)
            if (provs[i].locs[j].exists)
                pl->probes[count++] = (struct probe){provs[i].locs[j].kid, (uint32_t)i, (uint32_t)j};
    /* the words: one per distinct kid / 64 (a few: files are numbered as they load) */
    pl->words = xmalloc((count ? count : 1) * sizeof *pl->words);
    pl->nwords = 0;
    pl->direct = count < UINT8_MAX;
    for (size_t k = 0; k < count; k++) {
        uint32_t word = pl->probes[k].kid / 64, bit = pl->probes[k].kid % 64;
        size_t w = 0;
        while (w < pl->nwords && pl->words[w].word != word)
            w++;
        if (w == pl->nwords)
            pl->words[pl->nwords++] = (struct plan_word){word, 0, {0}};
        if (pl->words[w].bits >> bit & 1)
            pl->direct = false; /* (a file two levels lead to) */
        pl->words[w].bits |= 1ull << bit;
        pl->words[w].at[bit] = (uint8_t)k;
    }
    pl->provs = provs;
    pl->nprovs = n;
    pl->state = 1;
    return pl;
}

/* Where a walk is: provider i, location j, or probe k of a plan; or, with a direct plan, the
 * next of the nhits probes holding the key (hits, in order), once listed. */
#define WALK_HITS 32
typedef struct {
    size_t i, j, k;
    bool listed;
    uint8_t nhits, next;
    uint8_t hits[WALK_HITS];
} walk_pos;

/* Whether any of the plan's files is among bits (a key's bitmap of nwords words): when none is,
 * the layer holds nothing for the key. */
static inline bool plan_meets(const probe_plan *pl, const uint64_t *bits, uint32_t nwords)
{
    for (size_t i = 0; i < pl->nwords; i++)
        if (pl->words[i].word < nwords && (bits[pl->words[i].word] & pl->words[i].bits))
            return true;
    return false;
}

/* The probes of a direct plan whose files the key's bitmap holds, in the walk's order, into w
 * (false: more than WALK_HITS, to be walked probe by probe). */
static inline bool list_hits(const probe_plan *pl, const uint64_t *bits, uint32_t nwords, walk_pos *w)
{
    unsigned nh = 0;
    for (size_t i = 0; i < pl->nwords; i++) {
        const struct plan_word *pw = &pl->words[i];
        if (pw->word >= nwords)
            continue;
        for (uint64_t m = bits[pw->word] & pw->bits; m; m &= m - 1) {
            if (nh == WALK_HITS)
                return false;
            uint8_t k = pw->at[__builtin_ctzll(m)];
            unsigned at = nh++;
            while (at && w->hits[at - 1] > k) { /* (a few: sorted as they come) */
                w->hits[at] = w->hits[at - 1];
                at--;
            }
            w->hits[at] = k;
        }
    }
    w->nhits = (uint8_t)nh;
    w->next = 0;
    w->listed = true;
    return true;
}

/* The next location of the walk that may hold the key (*pi provider, *pj location; a provider
 * without locations gives j 0 once). Most locations do not hold the key: with the key index, a
 * location whose file is loaded is passed over at the cost of a search in the key's list of
 * files (what data_value finds first for it: its checks only come for a found value); with a
 * plan, only those searches are made. */
static inline bool walk_next(entry_arg *a, provider *provs, size_t n, const probe_plan *pl, walk_pos *w, size_t *pi,
                             size_t *pj)
{
    if (pl) {
        const key_index *kx = entry_kx(a); /* (moves only when data_value loads files) */
        const struct probe *probes = pl->probes;
        size_t k = w->k, count = pl->nprobes;
        if (kx && kx->bits) {
            /* key_index_has with the bitmap in registers (the walk's hottest loop) */
            const uint64_t *bits = kx->bits;
            uint32_t nwords = kx->nwords;
            if (k == 0 && !w->listed && !(pl->direct && list_hits(pl, bits, nwords, w)) &&
                !plan_meets(pl, bits, nwords)) {
                /* none of the layer's files holds the key: no walk (a module's key, walked
                 * through the environment's layer first) */
                w->k = count;
                return false;
            }
            if (w->listed) {
                /* (the files' bits stay as they are while the walk loads others: the list holds) */
                if (w->next == w->nhits) {
                    w->k = count;
                    return false;
                }
                k = w->hits[w->next++];
                goto hit;
            }
            for (; k < count; k++) {
                uint32_t kid = probes[k].kid;
                if (kid / 64 < nwords && (bits[kid / 64] >> (kid % 64) & 1))
                    goto hit;
            }
        } else {
            for (; k < count; k++)
                if (key_index_has(kx, probes[k].kid))
                    goto hit;
        }
        w->k = k;
        return false;
    hit:
        *pi = probes[k].prov;
        *pj = probes[k].loc;
        w->k = k + 1;
        return true;
    }
    for (; w->i < n; w->i++, w->j = 0) {
        provider *p = &provs[w->i];
        if (p->nil_location) {
            if (w->j)
                continue;
            *pi = w->i;
            *pj = w->j++;
            return true;
        }
        bool known = false;
        bool indexed = a->use_kx && p->lvl->fkind == FN_DATA_HASH && (provider_format(p, &known), known);
        for (; w->j < p->nlocs; w->j++) {
            const location *loc = &p->locs[w->j];
            if (!loc->exists || (indexed && loc->data && loc->kid && !key_index_has(entry_kx(a), loc->kid)))
                continue;
            *pi = w->i;
            *pj = w->j++;
            return true;
        }
    }
    return false;
}

/* The layer's hierarchy without an explanation: what strategy_lookup over layer_entry, then over
 * entry_location, computes, as one plain loop over the locations that may hold the key (the
 * lookup's hottest path). */
static lr layer_walk(inv *I, layer *l, provider *provs, size_t n, const char *root_key, const merge_strategy *ms,
                     hv **out, herr *err)
{
    entry_arg a = entry_args(I, l, NULL, root_key, ms);
    const probe_plan *pl = a.use_kx ? layer_plan(l, provs, n) : NULL;
    if (pl && !entry_kx(&a))
        return LR_NOT_FOUND; /* no file holds the key */
    bool first = ms_is_first(ms);
    deferral d;
    defer_start(&d, I->h, ms, n, 'l');
    fold outer = {ms, n, NULL};
    fold inner = {ms, 0, NULL}; /* the fold of provider `live` */
    size_t live = SIZE_MAX, i, j;
    walk_pos w; /* (hits: written before they are read) */
    w.i = w.j = w.k = 0;
    w.listed = false;
    w.nhits = w.next = 0;
    while (walk_next(&a, provs, n, pl, &w, &i, &j)) {
        if (i != live) {
            /* a provider's fold joins the layer's before the next provider is asked */
            if (inner.memo && fold_add(&outer, inner.memo, err) == LR_ERROR) {
                hv_decref(outer.memo);
                return LR_ERROR;
            }
            live = i;
            a.p = &provs[i];
            inner = (fold){ms, a.p->nil_location ? 1 : a.p->nlocs, NULL};
        }
        hv *v = NULL;
        lr r = data_value(&a, a.p->nil_location ? &a.p->nil_loc : &a.p->locs[j], &v, err);
        if (r == LR_NOT_FOUND)
            continue;
        if (r == LR_FOUND && first) {
            *out = v;
            return LR_FOUND;
        }
        if (r == LR_FOUND && defer_add(&d, i, inner.n, j, v))
            continue;
        if (!defer_flush(&d, &outer, &inner, i, err)) {
            hv_decref(v);
            hv_decref(inner.memo);
            hv_decref(outer.memo);
            return LR_ERROR;
        }
        if (r == LR_ERROR || fold_add(&inner, v, err) == LR_ERROR) {
            hv_decref(inner.memo);
            hv_decref(outer.memo);
            return LR_ERROR;
        }
    }
    if (inner.memo && fold_add(&outer, inner.memo, err) == LR_ERROR) {
        hv_decref(outer.memo);
        return LR_ERROR;
    }
    if (d.m) {
        fold none = {ms, 0, NULL}; /* (replayed providers' folds: no provider is still open) */
        return defer_finish(&d, &outer, &none, out, err);
    }
    if (!outer.memo)
        return LR_NOT_FOUND;
    *out = outer.memo;
    return LR_FOUND;
}

static inline __attribute__((always_inline)) lr unchecked_layer_lookup(inv *I, layer *l, const char *key, const char *root_key, const merge_strategy *ms,
                                 bool use_default, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    explainer *ex = h->ex;
    if (l->kind == LAYER_GLOBAL && !global_config(h, l, err))
        return LR_ERROR;
    if (ex)
        ex_push_provider(ex, l->name, l->cfg ? l->cfg->path : NULL, l->module);
    provider *provs = NULL;
    size_t n = 0;
    lr r = layer_providers(h, l, use_default, &provs, &n, err);
    if (r == LR_FOUND) {
        if (n == 0) {
            if (ex)
                ex_not_found_str(ex, key);
            r = LR_NOT_FOUND;
        } else if (!ex) {
            r = layer_walk(I, l, provs, n, root_key, ms, out, err);
        } else {
            layer_arg a = {I, l, provs, root_key, ms};
            r = strategy_lookup(h, ms, n, layer_entry, &a, out, err);
        }
    }
    if (ex)
        ex_pop(ex);
    return r;
}

/* GlobalDataProvider with a version 3 config: lookups made from inside (interpolation) only see
 * the global layer unless the environment has a version 5 provider (has_environment_data_provider?,
 * which sets the environment's provider up: false with err when that fails, a version 3
 * hiera.yaml there under strict = error, a hiera.yaml that does not load). */
static __attribute__((noinline)) bool global_v3_scope(hiera_ctx *h, herr *err)
{
    herr e = {0};
    layer *env = env_layer(h, &e);
    if (herr_isset(&e)) {
        herr_move(err, &e);
        return false;
    }
    if (!env || env->cfg->version < 5)
        h->global_only = true;
    return true;
}

/* Whether the layer's probe plan tells at once that none of its files holds the lookup's own
 * key: what layer_walk finds first when the plan is ready (layer_plan) for a frozen cache
 * without explanation or provenance, told here without the walk's set-up. Most layers asked
 * hold nothing for the key (the global layer's few files, a module's key asked of the
 * environment). false: the walk decides. */
static inline bool layer_lacks_key(inv *I, const layer *l, const provider *provs, size_t n, const char *root_key)
{
    hiera_ctx *h = I->h;
    const probe_plan *pl = &l->plan; /* (as layer_plan gives it once made for provs) */
    if (I->root_key != root_key || pl->state <= 0 || pl->provs != provs || pl->nprovs != n || h->prov ||
        !cache_is_frozen(h->cache))
        return false;
    const key_index *kx = kx_current(h->cache, I->root_key, I->root_len, I->root_code, &I->kx_gen, &I->kx);
    return !kx || (kx->bits && !plan_meets(pl, kx->bits, kx->nwords));
}

/* (out of line: the explaining path kept apart from the lookups of a batch) */
static __attribute__((noinline)) lr explained_layer_lookup(inv *I, layer *l, const char *key, const char *root_key,
                                                          const merge_strategy *ms, hv **out, herr *err)
{
    return unchecked_layer_lookup(I, l, key, root_key, ms, false, out, err);
}

/* (layer_key_lookup, unchecked_layer_lookup and entry_args are inlined where they are called:
 * every lookup passes through them for each layer; calls between them cost about 4% of a batch
 * run's instructions) */
/* DataProvider#key_lookup: the layer lookup under the recursion guard */
static inline __attribute__((always_inline)) lr layer_key_lookup(inv *I, layer *l, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (!check_enter(I, key, err))
        return LR_ERROR;
    hiera_ctx *h = I->h;
    bool save_global_only = h->global_only;
    if (l->kind == LAYER_GLOBAL && !global_config(h, l, err)) {
        check_leave(I, err);
        return LR_ERROR;
    }
    if (l->kind == LAYER_GLOBAL && l->cfg->version == 3 && !h->global_only && !global_v3_scope(h, err)) {
        check_leave(I, err);
        return LR_ERROR;
    }
    lr r;
    if (h->ex) {
        r = explained_layer_lookup(I, l, key, root_key, ms, out, err);
    } else {
        /* unchecked_layer_lookup without an explanation (the global layer's configuration is
         * there: read above) */
        provider *provs = NULL;
        size_t n = 0;
        r = layer_providers(h, l, false, &provs, &n, err);
        if (r == LR_FOUND)
            r = n && !layer_lacks_key(I, l, provs, n, root_key) ? layer_walk(I, l, provs, n, root_key, ms, out, err)
                                                                 : LR_NOT_FOUND;
    }
    h->global_only = save_global_only;
    check_leave(I, err);
    return r;
}

/* ---- the provider stack ---- */

typedef struct {
    inv *I;
    const char *key;      /* the whole key text */
    const char *root_key;
    const merge_strategy *ms;
} stack_arg;

static lr lookup_global(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    layer *l = global_layer(I->h);
    lr r = layer_key_lookup(I, l, key, root_key, ms, out, err);
    if (r == LR_ERROR && err->kind == HERR_LOOKUP) {
        /* LookupAdapter#lookup_global rewraps a LookupError without an issue code */
        char *msg = xasprintf("Lookup of key '%s' failed: %s", I->top_key ? I->top_key : key, err->msg);
        free(err->msg);
        err->msg = msg;
        err->kind = HERR_PUPPET;
    }
    return r;
}

static lr lookup_in_environment(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    layer *l = env_layer(I->h, err);
    if (!l)
        return herr_isset(err) ? LR_ERROR : LR_NOT_FOUND;
    return layer_key_lookup(I, l, key, root_key, ms, out, err);
}

static lr lookup_in_module(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (!I->module_name)
        return LR_NOT_FOUND;
    mod_state st;
    layer *l = inv_module_layer(I, &st, err);
    if (!l) {
        if (herr_isset(err))
            return LR_ERROR;
        if (I->h->ex)
            ex_module_event(I->h->ex, I->module_name, st == MOD_NOT_FOUND ? EV_MODULE_NOT_FOUND : EV_MODULE_PROVIDER_NOT_FOUND);
        return LR_NOT_FOUND;
    }
    return layer_key_lookup(I, l, key, root_key, ms, out, err);
}

static lr stack_variant(void *arg, size_t i, hv **out, herr *err)
{
    stack_arg *a = arg;
    switch (i) {
    case 0: return lookup_global(a->I, a->key, a->root_key, a->ms, out, err);
    case 1: return lookup_in_environment(a->I, a->key, a->root_key, a->ms, out, err);
    default: return lookup_in_module(a->I, a->key, a->root_key, a->ms, out, err);
    }
}

/* LookupAdapter#do_lookup without the dig: the merge over global, environment, module */
static lr provider_stack(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (I->h->global_only)
        return lookup_global(I, key, root_key, ms, out, err);
    if (ms_is_first(ms)) {
        /* strategy_lookup's first-found loop over the three variants, without the calls
         * through stack_variant (half the lookups of a batch come this way) */
        lr r = lookup_global(I, key, root_key, ms, out, err);
        if (r == LR_NOT_FOUND)
            r = lookup_in_environment(I, key, root_key, ms, out, err);
        if (r == LR_NOT_FOUND)
            r = lookup_in_module(I, key, root_key, ms, out, err);
        return r;
    }
    stack_arg a = {I, key, root_key, ms};
    return strategy_lookup(I->h, ms, 3, stack_variant, &a, out, err);
}

/* ------------------------------------------------------------------ lookup_options */

static void lo_free(lo_compiled *c)
{
    if (!c)
        return;
    hv_decref(c->memo);
    hv_decref(c->literal);
    for (size_t i = 0; i < c->npats; i++) {
        rregex_free(c->pats[i]);
        hv_decref(c->pat_values[i]);
    }
    free(c->pats);
    free(c->pat_values);
    free(c);
}

/* LookupAdapter#validate_lookup_options */
static bool validate_lookup_options(const hv *opts, const char *module, herr *err)
{
    if (!opts)
        return true;
    if (!hv_is(opts, HV_HASH)) {
        herr_set(err, HERR_LOOKUP, "value of lookup_options must be a hash");
        return false;
    }
    if (!module)
        return true;
    char *pfx = xasprintf("%s::", module);
    size_t pl = strlen(pfx);
    bool ok = true;
    for (size_t i = 0; i < hv_hash_len(opts) && ok; i++) {
        const hv *k = hv_hash_key_at(opts, i);
        const char *ks = hv_is(k, HV_STRING) ? hv_str_ptr(k) : "";
        size_t kl = hv_is(k, HV_STRING) ? hv_str_len(k) : 0;
        if (kl && ks[0] == '^') {
            if (kl < pl + 1 || memcmp(ks + 1, pfx, pl) != 0) {
                herr_set(err, HERR_LOOKUP, "all lookup_options patterns must match a key starting with module name '%s'", module);
                ok = false;
            }
        } else if (kl < pl || memcmp(ks, pfx, pl) != 0) {
            herr_set(err, HERR_LOOKUP, "all lookup_options keys must start with module name '%s'", module);
            ok = false;
        }
    }
    free(pfx);
    return ok;
}

/* LookupAdapter#compile_patterns; NULL options give NULL. false with err on a bad regexp. */
static bool compile_patterns(const hv *opts, lo_compiled **out, herr *err)
{
    *out = NULL;
    if (!opts)
        return true;
    lo_compiled *c = xcalloc(1, sizeof *c);
    for (size_t i = 0; i < hv_hash_len(opts); i++) {
        hv *k = hv_hash_key_at(opts, i), *v = hv_hash_val_at(opts, i);
        if (hv_is(k, HV_STRING) && hv_str_len(k) && hv_str_ptr(k)[0] == '^') {
            rregex *re = rregex_new(hv_str_ptr(k), hv_str_len(k), err);
            if (!re) {
                lo_free(c);
                return false;
            }
            c->pats = xrealloc(c->pats, (c->npats + 1) * sizeof *c->pats);
            c->pat_values = xrealloc(c->pat_values, (c->npats + 1) * sizeof *c->pat_values);
            c->pats[c->npats] = re;
            c->pat_values[c->npats] = hv_incref(v);
            c->npats++;
        } else {
            if (!c->literal)
                c->literal = hv_hash();
            hv_hash_set(c->literal, hv_incref(k), hv_incref(v));
        }
    }
    *out = c;
    return true;
}

static hv *extract_lookup_options_uncached(const lo_compiled *c, const char *root_key)
{
    if (c->literal) {
        hv *v = hv_hash_gets(c->literal, root_key);
        if (v && !hv_is(v, HV_UNDEF))
            return v;
    }
    for (size_t i = 0; i < c->npats; i++)
        if (rregex_search(c->pats[i], root_key, strlen(root_key)))
            return c->pat_values[i];
    return NULL;
}

/* LookupAdapter#extract_lookup_options_for_key, remembered per root key (BORROWED result);
 * root_len and root_code: the key's length and hv_str_code. */
static hv *extract_lookup_options(lo_compiled *c, const char *root_key, size_t root_len, uint64_t root_code)
{
    if (!c)
        return NULL;
    if (!c->memo)
        c->memo = hv_hash();
    hv *known = hv_hash_getsn_code(c->memo, root_key, root_len, root_code);
    if (known)
        return hv_is(known, HV_BOOL) && !hv_bool_val(known) ? NULL : hv_array_get(known, 0);
    hv *found = extract_lookup_options_uncached(c, root_key);
    hv *box = hv_array();
    if (found)
        hv_array_push(box, hv_incref(found));
    hv_hash_sets(c->memo, root_key, found ? box : (hv_decref(box), hv_false()));
    return found;
}

/* Looks the key "lookup_options" up in one layer with the hash strategy. */
typedef lr (*layer_lookup_fn)(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);

static bool layer_lookup_options(inv *I, layer_lookup_fn fn, const char *module, hv **out, herr *err)
{
    merge_strategy *hash = ms_new(MS_HASH);
    hv *v = NULL;
    lr r = fn(I, LOOKUP_OPTIONS, I->root_key == NULL ? LOOKUP_OPTIONS : I->root_key, hash, &v, err);
    ms_free(hash);
    *out = NULL;
    if (r == LR_ERROR)
        return false;
    if (r == LR_NOT_FOUND)
        return true;
    if (hv_is(v, HV_UNDEF)) {
        hv_decref(v);
        return true;
    }
    if (!validate_lookup_options(v, module, err)) {
        hv_decref(v);
        return false;
    }
    *out = v;
    return true;
}

static bool global_lookup_options(inv *I, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!h->global_lo_done) {
        h->global_lo_done = true;
        if (!layer_lookup_options(I, lookup_global, NULL, &h->global_lo, &h->global_lo_err)) {
            h->global_lo_done = false; /* not remembered on failure */
            herr_move(err, &h->global_lo_err);
            return false;
        }
    }
    *out = h->global_lo;
    return true;
}

static bool env_lookup_options(inv *I, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!h->env_lo_done) {
        hv *global = NULL, *env = NULL;
        if (!global_lookup_options(I, &global, err))
            return false;
        if (!layer_lookup_options(I, lookup_in_environment, NULL, &env, err))
            return false;
        if (!global) {
            h->env_lo = env;
        } else if (!env) {
            h->env_lo = hv_incref(global);
        } else {
            merge_strategy *hash = ms_new(MS_HASH);
            h->env_lo = ms_merge(hash, global, env, false, err);
            ms_free(hash);
            hv_decref(env);
            if (!h->env_lo)
                return false;
        }
        h->env_lo_done = true;
    }
    *out = h->env_lo;
    return true;
}

static lo_compiled *lo_cache_get(hv *index, lo_compiled **cache, const char *module, bool *present)
{
    hv *i = hv_hash_gets(index, module ? module : "");
    *present = i != NULL;
    return i ? cache[hv_int_val(i)] : NULL;
}

/* lo_cache_get of the context's options, the last two modules remembered */
static lo_compiled *lo_cache_recent(hiera_ctx *h, const char *module, const char *stable, bool *present)
{
    const recent_name *known = recent_get(h->lo_recent, module ? module : "", stable);
    if (known) {
        *present = true;
        return known->obj;
    }
    lo_compiled *c = lo_cache_get(h->lo_index, h->lo_cache, module, present);
    if (*present)
        recent_put(h->lo_recent, module ? module : "", c, 0, stable);
    return c;
}

static void lo_cache_put(hv **index, lo_compiled ***cache, size_t *n, const char *module, lo_compiled *c)
{
    if (!*index)
        *index = hv_hash();
    *cache = xrealloc(*cache, (*n + 1) * sizeof **cache);
    (*cache)[*n] = c;
    hv_hash_sets(*index, module ? module : "", hv_int((int64_t)*n));
    (*n)++;
}

typedef struct {
    inv *I;
    hv *values[2];
    const char *names[2];
} lo_merge_arg;

static lr lo_merge_variant(void *arg, size_t i, hv **out, herr *err)
{
    lo_merge_arg *a = arg;
    explainer *ex = a->I->h->ex;
    if (ex) {
        ex_push(ex, EX_SCOPE, a->names[i], NULL);
        ex_found_str(ex, LOOKUP_OPTIONS, a->values[i]);
        ex_pop(ex);
    }
    *out = hv_incref(a->values[i]);
    return LR_FOUND;
}

/* LookupAdapter#retrieve_lookup_options */
static bool retrieve_lookup_options(inv *I, const char *module, lo_compiled **out, herr *err)
{
    hiera_ctx *h = I->h;
    inv meta = {h, I->module_name, LOOKUP_OPTIONS, NULL, NULL, LOOKUP_OPTIONS, 0, 0, 0, NULL, I->module_stable};
    inv_root(&meta);
    explainer *ex = h->ex;
    if (ex)
        ex_push(ex, EX_TOP, LOOKUP_OPTIONS, NULL);
    bool ok = true;
    hv *opts = NULL;
    if (h->global_only) {
        hv *g = NULL;
        ok = global_lookup_options(&meta, &g, err);
        opts = hv_incref(g);
    } else {
        hv *e = NULL;
        ok = env_lookup_options(&meta, &e, err);
        opts = hv_incref(e);
        if (ok && module) {
            bool present;
            lo_cache_get(h->lo_index, h->lo_cache, NULL, &present);
            if (!present) {
                lo_compiled *c = NULL;
                if (!compile_patterns(opts, &c, err))
                    ok = false;
                else
                    lo_cache_put(&h->lo_index, &h->lo_cache, &h->nlo_cache, NULL, c);
            }
            hv *mod_opts = NULL;
            merge_strategy *hash = ms_new(MS_HASH);
            hv *raw = NULL;
            lr r = ok ? lookup_in_module(&meta, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, &raw, err) : LR_ERROR;
            if (r == LR_ERROR) {
                ok = false;
            } else if (r == LR_FOUND) {
                if (!hv_is(raw, HV_UNDEF) && !validate_lookup_options(raw, module, err)) {
                    ok = false;
                } else {
                    mod_opts = hv_is(raw, HV_UNDEF) ? NULL : hv_incref(raw);
                    if (!opts) {
                        opts = mod_opts;
                        mod_opts = NULL;
                    } else if (mod_opts) {
                        char *mname = xasprintf("Module %s", I->module_name ? I->module_name : module);
                        lo_merge_arg a = {&meta, {opts, mod_opts}, {"Global and Environment", mname}};
                        hv *merged = NULL;
                        lr mr = strategy_lookup(h, hash, 2, lo_merge_variant, &a, &merged, err);
                        free(mname);
                        if (mr == LR_ERROR) {
                            ok = false;
                        } else {
                            hv_decref(opts);
                            opts = merged;
                        }
                    }
                }
            }
            hv_decref(raw);
            hv_decref(mod_opts);
            ms_free(hash);
        }
    }
    if (ok && !compile_patterns(opts, out, err))
        ok = false;
    hv_decref(opts);
    if (ex)
        ex_pop(ex);
    return ok;
}

/* LookupAdapter#lookup_lookup_options: the options that apply to the key (borrowed), or NULL */

/* x in hexadecimal, written at dst (what "%lx" prints, without printf); returns its length */
static size_t put_hex(char *dst, uintptr_t x)
{
    char buf[2 * sizeof x];
    size_t n = 0;
    do {
        buf[sizeof buf - ++n] = "0123456789abcdef"[x & 15];
        x >>= 4;
    } while (x);
    memcpy(dst, buf + sizeof buf - n, n);
    return n;
}

static void sb_add_hex(sbuf *b, uintptr_t x, char sep)
{
    char buf[2 * sizeof x + 1];
    size_t n = put_hex(buf, x);
    buf[n++] = sep;
    sb_addn(b, buf, n);
}

/* ms_from_value, remembered: with a frozen cache the merge options of lookup_options (and of a
 * batch's --merge) are the same objects for every node, and checking an options hash against its
 * type costs more than many lookups; the strategy made for each is kept with the cache. *owned
 * tells whether the caller frees the result. */
#define MS_MEMO_MAX 10000

typedef struct {
    hv *merge; /* held: its address stays its own */
    merge_strategy *ms;
} ms_memo;

static void ms_memo_free(void *p)
{
    ms_memo *m = p;
    hv_decref(m->merge);
    ms_free(m->ms);
    free(m);
}

static merge_strategy *merge_strategy_for(hiera_ctx *h, const hv *merge, bool *owned, herr *err)
{
    *owned = true;
    if (!cache_is_frozen(h->cache) || (merge && !hv_is(merge, HV_HASH) && !hv_is(merge, HV_STRING)))
        return ms_from_value(merge, err);
    for (size_t i = 0; i < sizeof h->ms_recent / sizeof *h->ms_recent; i++)
        if (h->ms_recent[i].ms && h->ms_recent[i].merge == merge) {
            *owned = false;
            return h->ms_recent[i].ms;
        }
    char key[48] = "merge strategy ";
    size_t n = strlen(key);
    n += put_hex(key + n, (uintptr_t)merge);
    key[n] = 0;
    bool found;
    ms_memo *m = cache_shared_get(h->cache, key, &found);
    if (!m) {
        /* a caller making a new merge value for each lookup would make the table grow: it is
         * kept to MS_MEMO_MAX strategies (counted in a shared counter) */
        size_t *count = cache_shared_get(h->cache, "merge strategies", &found);
        if (!count) {
            count = xcalloc(1, sizeof *count);
            cache_shared_put(h->cache, "merge strategies", count, free);
        }
        if (*count >= MS_MEMO_MAX)
            return ms_from_value(merge, err);
        merge_strategy *ms = ms_from_value(merge, err);
        if (!ms)
            return NULL;
        ++*count;
        ms->stable = true;
        ms->memo = cache_work_memo(h->cache);
        m = xcalloc(1, sizeof *m);
        m->merge = merge ? hv_incref((hv *)merge) : NULL;
        m->ms = ms;
        cache_shared_put(h->cache, key, m, ms_memo_free);
    }
    *owned = false;
    h->ms_recent[h->ms_next].merge = merge;
    h->ms_recent[h->ms_next].ms = m->ms;
    h->ms_next = (h->ms_next + 1) % (sizeof h->ms_recent / sizeof *h->ms_recent);
    return m->ms;
}

/* Whether the lookup_options value of a location interpolates: asked of its file's key flags,
 * computed once per file (lo_signature runs for every node). */
static bool lo_interpolates(location *loc, const hv *lo)
{
    size_t len = sizeof LOOKUP_OPTIONS - 1;
    if (!loc->keyflags)
        return hv_has_interpolation(lo, 0);
    return cache_key_flags(loc->keyflags, LOOKUP_OPTIONS, len, hv_str_code(LOOKUP_OPTIONS, len), lo) & KEY_INTERP;
}

/* What the lookup_options of a context depend on: the lookup_options values of the data files
 * each layer consults, in order. Contexts with the same signature (nodes whose files hold the
 * same options) get the same compiled options, computed once per cache. NULL when sharing is not safe:
 * explaining (the search must be shown), errors, lookup_key functions, or options that
 * interpolate (they depend on the node). */
static char *lo_signature(hiera_ctx *h, const char *module)
{
    if (h->ex || h->prov || !cache_is_frozen(h->cache))
        return NULL; /* (without a frozen cache a file may change between contexts) */
    sbuf b = {0};
    herr e = {0};
    /* (no printf: this runs for every node) */
    sb_adds(&b, h->global_only ? "1|" : "0|");
    sb_adds(&b, module ? module : "");
    sb_adds(&b, "|");
    layer *ls[3] = {global_layer(h), NULL, NULL};
    bool ok = global_config(h, ls[0], &e);
    if (ok && !h->global_only) {
        ls[1] = env_layer(h, &e);
        ok = !herr_isset(&e);
        if (ok && module) {
            mod_state st;
            ls[2] = module_layer(h, module, &st, &e);
            ok = !herr_isset(&e);
            char t[4] = {'m', (char)('0' + (int)st), '|', 0};
            sb_adds(&b, t);
        }
    }
    for (int i = 0; ok && i < 3; i++) {
        layer *l = ls[i];
        if (!l)
            continue;
        char t[4] = {'L', (char)('0' + i), '|', 0};
        sb_adds(&b, t);
        provider *provs = NULL;
        size_t n = 0;
        if (layer_providers(h, l, false, &provs, &n, &e) != LR_FOUND) {
            ok = false;
            break;
        }
        for (size_t j = 0; ok && j < n; j++) {
            provider *p = &provs[j];
            bool known;
            provider_format(p, &known);
            if (p->lvl->fkind != FN_DATA_HASH || !known || p->nil_location) {
                ok = false;
                break;
            }
            for (size_t k = 0; ok && k < p->nlocs; k++) {
                location *loc = &p->locs[k];
                if (!loc->exists)
                    continue;
                if (loc->is_uri) {
                    ok = false;
                    break;
                }
                hv *data = location_data(h, l, p, loc, &e);
                const hv *lo = data ? hv_hash_gets(data, LOOKUP_OPTIONS) : NULL;
                if (!data || (lo && lo_interpolates(loc, lo)))
                    ok = false;
                else if (lo)
                    /* the options themselves: a frozen cache keeps each file's value, so the
                     * same file contributes the same object to every context */
                    sb_add_hex(&b, (uintptr_t)lo, ';');
            }
        }
    }
    herr_clear(&e);
    if (!ok) {
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

static void lo_free_shared(void *c) { lo_free(c); }

/* LookupAdapter#lookup_lookup_options, up to the options compiled for the module (*compiled,
 * BORROWED; NULL for none): extract_lookup_options gives a key's own */
static bool lookup_lookup_options(inv *I, const char *module, lo_compiled **compiled, herr *err)
{
    hiera_ctx *h = I->h;
    bool present;
    lo_compiled *c = lo_cache_recent(h, module, I->module_stable && module == I->module_name ? module : NULL, &present);
    if (!present) {
        char *sig = lo_signature(h, module);
        bool found = false;
        if (sig)
            c = cache_shared_get(h->cache, sig, &found);
        if (!found) {
            if (!retrieve_lookup_options(I, module, &c, err)) {
                free(sig);
                return false;
            }
            if (sig) {
                if (!c)
                    c = xcalloc(1, sizeof *c);
                c->shared = true;
                cache_shared_put(h->cache, sig, c, lo_free_shared);
            }
        }
        free(sig);
        lo_cache_put(&h->lo_index, &h->lo_cache, &h->nlo_cache, module, c);
    }
    *compiled = c;
    return true;
}

/* ------------------------------------------------------------------ the adapter's lookup */

typedef struct {
    char *text;     /* the key as given */
    char *root;     /* root key */
    char *module;   /* module name or NULL */
    hv *segments;   /* all segments (root first); NULL for a plain key */
    bool plain;     /* text and root borrow the caller's key */
    bool borrowed;  /* everything borrowed from the caller and a frozen cache (lkey_parse_remembered) */
    size_t root_len;
    uint64_t root_code;
} lookup_key;

static void lkey_free(lookup_key *k)
{
    if (k->borrowed)
        return;
    if (!k->plain) {
        free(k->text);
        free(k->root);
    }
    free(k->module);
    hv_decref(k->segments);
}

static bool lkey_parse(const char *key, lookup_key *k, herr *err)
{
    memset(k, 0, sizeof *k);
    if (!strpbrk(key, "'\".")) {
        /* a plain key: no segments to split */
        k->text = k->root = (char *)key;
        k->plain = true;
        const char *q = strstr(key, "::");
        k->module = q ? xstrndup(key, (size_t)(q - key)) : NULL;
        return true;
    }
    hv *segs = split_key(key, strlen(key));
    if (!segs) {
        herr_set(err, HERR_LOOKUP, "Syntax error in key: '%s'", key);
        return false;
    }
    const hv *root = hv_array_get(segs, 0);
    if (hv_is(root, HV_STRING)) {
        k->root = xstrndup(hv_str_ptr(root), hv_str_len(root));
    } else {
        sbuf b = {0};
        ruby_to_s(&b, root);
        k->root = sb_take(&b);
    }
    k->text = xstrdup(key);
    k->module = module_of(k->root);
    k->segments = segs;
    return true;
}

/* Where a key's text is looked for among the keys parsed: its first and last eight bytes and
 * its length mixed (the text is compared anyway; hashing all of it cost 40 instructions a
 * lookup). */
static inline uint64_t recent_code(const char *key, size_t len)
{
    uint64_t a = 0, b = 0;
    if (len >= 8) {
        memcpy(&a, key, 8);
        memcpy(&b, key + len - 8, 8);
    } else {
        memcpy(&a, key, len);
    }
    uint64_t h = (a ^ (b << 29 | b >> 35) ^ len) * 0x9e3779b97f4a7c15ULL;
    return h ^ h >> 32;
}

/* The module name as one string for every key of the module (a new reference): the keys' entries
 * share it, and the module's layer and options are then found by its address (recent_get). */
static __attribute__((noinline)) hv *module_name_of(memo *m, const char *module)
{
    size_t len = strlen(module);
    char buf[128];
    if (len + 1 > sizeof buf)
        return hv_strn(module, len);
    buf[0] = 'M';
    memcpy(buf + 1, module, len);
    hv *known = memo_get(m, buf, len + 1);
    if (known)
        return hv_incref(known);
    hv *name = hv_strn(module, len);
    memo_put(m, buf, len + 1, name);
    return name;
}

/* lkey_parse, remembered by a frozen cache: a batch asks the same keys for every node. The
 * entry [root, module or undef, segments or false, root hash] lives in the cache's table; the
 * key's text is the caller's. */
static bool lkey_parse_remembered(hiera_ctx *h, const char *key, lookup_key *k, recent_key **rk, herr *err)
{
    *rk = NULL;
    memo *m = cache_work_memo(h->cache);
    recent_key *r = m ? cache_recent_at(h->cache, key) : NULL; /* (the same text as last time) */
    size_t len = r ? r->len : strlen(key);
    char stack_key[128];
    char *mk = len + 1 + sizeof len <= sizeof stack_key ? stack_key : NULL;
    if (m && mk) {
        uint64_t code = r ? r->code : recent_code(key, len);
        if (!r)
            r = cache_recent_find(h->cache, key, len, code);
        const hv *e = r ? r->entry : NULL;
        *rk = r;
        if (!e) {
            mk[0] = 'k';
            memcpy(mk + 1, &len, sizeof len);
            memcpy(mk + 1 + sizeof len, key, len);
            e = memo_get(m, mk, 1 + sizeof len + len);
            if (e)
                *rk = cache_recent_add(h->cache, key, len, code, e);
        }
        if (e) {
            recent_key local, *slot = *rk ? *rk : &local; /* (no slot: read into a local one) */
            if (slot == &local || !slot->parts) {
                const hv *module = hv_array_get(e, 1), *segs = hv_array_get(e, 2);
                slot->parts = true;
                slot->root = hv_str_ptr(hv_array_get(e, 0));
                slot->module = hv_is(module, HV_STRING) ? hv_str_ptr(module) : NULL;
                slot->segments = hv_is(segs, HV_ARRAY) ? segs : NULL;
                slot->root_len = hv_str_len(hv_array_get(e, 0));
                slot->root_code = (uint64_t)hv_int_val(hv_array_get(e, 3));
            }
            /* (the parts kept in the key's slot: no reading of the entry a lookup) */
            *k = (lookup_key){.text = (char *)key, .root = (char *)slot->root, .module = (char *)slot->module,
                              .segments = (hv *)slot->segments, .plain = slot->segments == NULL, .borrowed = true,
                              .root_len = slot->root_len, .root_code = slot->root_code};
            return true;
        }
    }
    if (!lkey_parse(key, k, err))
        return false;
    k->root_len = strlen(k->root);
    k->root_code = hv_str_code(k->root, k->root_len);
    if (m && mk) {
        hv *e = hv_array_sized(4);
        hv_array_push(e, hv_strn(k->root, k->root_len));
        hv_array_push(e, k->module ? module_name_of(m, k->module) : hv_undef());
        hv_array_push(e, k->segments ? hv_incref(k->segments) : hv_false());
        hv_array_push(e, hv_int((int64_t)k->root_code));
        memo_put(m, mk, 1 + sizeof len + len, e);
        hv_decref(e);
    }
    return true;
}

/* LookupAdapter#lookup_default_in_module */
static lr lookup_default_in_module(inv *I, const lookup_key *k, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!I->module_name)
        return LR_NOT_FOUND;
    mod_state st;
    layer *l = inv_module_layer(I, &st, err);
    if (!l)
        return herr_isset(err) ? LR_ERROR : LR_NOT_FOUND;
    if (!l->cfg->has_default_hierarchy)
        return LR_NOT_FOUND;
    explainer *ex = h->ex;
    char *title = xasprintf("Searching default_hierarchy of module \"%s\"", I->module_name);
    if (ex)
        ex_push(ex, EX_SCOPE, title, NULL);
    free(title);
    lr r = LR_FOUND;
    bool present;
    lo_compiled *c = lo_cache_get(h->dlo_index, h->dlo_cache, I->module_name, &present);
    if (!present) {
        inv meta = {h, I->module_name, LOOKUP_OPTIONS, NULL, NULL, LOOKUP_OPTIONS, 0, 0, 0, NULL, I->module_stable};
        inv_root(&meta);
        if (ex)
            ex_push(ex, EX_SCOPE, "Searching for \"lookup_options\"", NULL);
        merge_strategy *hash = ms_new(MS_HASH);
        hv *raw = NULL;
        lr lr_ = LR_NOT_FOUND;
        if (check_enter(&meta, LOOKUP_OPTIONS, err)) {
            lr_ = unchecked_layer_lookup(&meta, l, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, true, &raw, err);
            check_leave(&meta, err);
        } else {
            lr_ = LR_ERROR;
        }
        ms_free(hash);
        if (ex)
            ex_pop(ex);
        if (lr_ == LR_ERROR) {
            r = LR_ERROR;
        } else {
            hv *opts = lr_ == LR_FOUND && !hv_is(raw, HV_UNDEF) ? raw : NULL;
            if (opts && !validate_lookup_options(opts, I->module_name, err))
                r = LR_ERROR;
            else if (!compile_patterns(opts, &c, err))
                r = LR_ERROR;
            else
                lo_cache_put(&h->dlo_index, &h->dlo_cache, &h->ndlo_cache, I->module_name, c);
        }
        hv_decref(raw);
    }
    if (r == LR_FOUND) {
        hv *lo = extract_lookup_options(c, k->root, k->root_len, k->root_code);
        hv *merge = lo && hv_is(lo, HV_HASH) ? hv_hash_gets(lo, "merge") : NULL;
        bool ms_owned;
        merge_strategy *ms = merge_strategy_for(h, merge, &ms_owned, err);
        if (!ms) {
            r = LR_ERROR;
        } else {
            char *t = xasprintf("Searching for \"%s\"", k->text);
            if (ex)
                ex_push(ex, EX_SCOPE, t, NULL);
            free(t);
            if (check_enter(I, k->text, err)) {
                r = unchecked_layer_lookup(I, l, k->text, k->root, ms, true, out, err);
                check_leave(I, err);
            } else {
                r = LR_ERROR;
            }
            if (ex)
                ex_pop(ex);
            if (ms_owned)
                ms_free(ms);
        }
    }
    if (ex)
        ex_pop(ex);
    return r;
}

static lr dig(inv *I, const lookup_key *k, hv *value, hv **out, herr *err)
{
    if (hv_array_len(k->segments) < 2) {
        *out = hv_incref(value);
        return LR_FOUND;
    }
    return sub_lookup(I, k->text, k->segments, 1, value, out, err);
}

/* A lookup_options entry's value for one option: Ruby's opts[name] on whatever the entry is. */
static bool lo_option(hiera_ctx *h, const hv *lo, lo_name which, const hv **out, herr *err)
{
    static const char *const names[] = {"merge", "convert_to"};
    static const size_t lens[] = {5, 10};
    static uint64_t codes[2]; /* (hv_str_code of each name, computed once: every lookup asks) */
    const char *name = names[which];
    *out = NULL;
    if (!lo || hv_is(lo, HV_UNDEF))
        return true;
    if (hv_is(lo, HV_HASH)) {
        uint64_t code = __atomic_load_n(&codes[which], __ATOMIC_RELAXED);
        if (!code) {
            code = hv_str_code(name, lens[which]);
            __atomic_store_n(&codes[which], code, __ATOMIC_RELAXED);
        }
        *out = hv_hash_getsn_code(lo, name, lens[which], code);
        return true;
    }
    if (hv_is(lo, HV_STRING)) {
        /* String#[] with a string: the substring when present (a string the context keeps, one
         * per name: both may be in use at once) */
        if (strstr(hv_str_ptr(lo), name)) {
            if (!h->lo_names[which])
                h->lo_names[which] = hv_str(name);
            *out = h->lo_names[which];
        }
        return true;
    }
    herr_set(err, HERR_ERROR, "no implicit conversion of String into Integer");
    return false;
}

/* LookupAdapter#convert_result (*known: lo's convert_to when the caller has it, else NULL) */
static lr convert_result(inv *I, const char *key, const hv *lo, const hv *const *known, hv *value, hv **out, herr *err)
{
    const hv *convert_to = NULL;
    if (known)
        convert_to = *known;
    else if (!lo_option(I->h, lo, LO_CONVERT_TO, &convert_to, err))
        return LR_ERROR;
    if (!convert_to || hv_is(convert_to, HV_UNDEF)) {
        *out = hv_incref(value);
        return LR_FOUND;
    }
    const hv *type = hv_is(convert_to, HV_ARRAY) ? hv_array_get(convert_to, 0) : convert_to;
    if (hv_is(type, HV_STRING)) {
        herr perr = {0};
        ptype *t = ptype_parse(hv_str_ptr(type), &perr);
        if (!t) {
            herr_set(err, HERR_LOOKUP, "Invalid data type in lookup_options for key '%s' could not parse '%s', error: '%s", key,
                     hv_str_ptr(type), perr.msg ? perr.msg : "");
            herr_clear(&perr);
            return LR_ERROR;
        }
        ptype_free(t);
    }
    herr cerr = {0};
    hv *res = ptype_convert(convert_to, value, &cerr);
    if (!res) {
        herr_set(err, HERR_LOOKUP, "The convert_to lookup_option for key '%s' raised error: %s", key, cerr.msg ? cerr.msg : "");
        herr_clear(&cerr);
        return LR_ERROR;
    }
    if (I->h->ex) {
        /* StringConverter of [Type, args...]: the type (already parsed) prints bare */
        sbuf b = {0};
        sb_addc(&b, '[');
        if (hv_is(type, HV_STRING)) {
            ptype *t = ptype_parse(hv_str_ptr(type), NULL);
            char *ts = t ? ptype_to_s(t) : xstrdup(hv_str_ptr(type));
            sb_adds(&b, ts);
            free(ts);
            ptype_free(t);
        } else {
            puppet_string(&b, type);
        }
        for (size_t i = 1; hv_is(convert_to, HV_ARRAY) && i < hv_array_len(convert_to); i++) {
            sb_adds(&b, ", ");
            puppet_string(&b, hv_array_get(convert_to, i));
        }
        sb_addc(&b, ']');
        char *t = xasprintf("Applying convert_to lookup_option with arguments %s", sb_str(&b));
        ex_text(I->h->ex, t);
        free(t);
        sb_free(&b);
    }
    *out = res;
    return LR_FOUND;
}

/* LookupAdapter#lookup */
static lr adapter_lookup(inv *parent, const char *key, const hv *merge, hv **out, herr *err)
{
    hiera_ctx *h = parent->h;
    explainer *ex = h->ex;
    if (key[0] == LOOKUP_OPTIONS[0] && strncmp(key, LOOKUP_OPTIONS, sizeof LOOKUP_OPTIONS - 1) == 0 &&
        (key[sizeof LOOKUP_OPTIONS - 1] == 0 || key[sizeof LOOKUP_OPTIONS - 1] == '.')) {
        if (ex) {
            ex_push(ex, EX_INVALID_KEY, LOOKUP_OPTIONS, NULL);
            ex_pop(ex);
        }
        return LR_NOT_FOUND;
    }
    lookup_key k;
    recent_key *rk;
    if (!lkey_parse_remembered(h, key, &k, &rk, err))
        return LR_ERROR;
    inv I = {h, k.module, k.text, NULL, NULL, k.root, k.root_len, k.root_code, 0, NULL, k.borrowed};
    /* the key's entry in the key index, as the key's last lookup left it (valid while the
     * index has not grown since: entry_kx checks the generation) */
    const hv *rk_entry = rk ? rk->entry : NULL;
    if (rk) {
        I.kx_gen = rk->kx_gen;
        I.kx = rk->kx;
    }
    lr r;
    if (ex && ex_only_options(ex)) {
        merge_strategy *hash = ms_new(MS_HASH);
        hv *v = NULL;
        r = provider_stack(&I, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, &v, err);
        hv_decref(v);
        ms_free(hash);
        lkey_free(&k);
        if (r == LR_ERROR)
            return r;
        *out = hv_undef();
        return LR_FOUND;
    }
    lo_compiled *lc = NULL;
    if (!lookup_lookup_options(&I, k.module, &lc, err)) {
        lkey_free(&k);
        return LR_ERROR;
    }
    /* the key's options and their merge and convert_to: the same for every node whose compiled
     * options are the same shared ones (a batch asks for them node after node), so they are kept
     * with the key's recent entry */
    const hv *lo, *opt_merge = NULL, *conv = NULL;
    herr merge_err = {0};
    recent_options *ro = NULL;
    if (rk && lc && lc->shared) {
        /* (the place found last first: the nodes of a block mostly share their options) */
        if (rk->opts[rk->last_opt].lo_c == lc) {
            ro = &rk->opts[rk->last_opt];
        } else {
            for (unsigned i = 0; i < RECENT_OPTIONS && !ro; i++)
                if (rk->opts[i].lo_c == lc) {
                    ro = &rk->opts[i];
                    rk->last_opt = i;
                }
        }
    }
    bool kept = ro != NULL;
    bool options_ok = true; /* (lo_option fails for both names alike: for lo of a wrong kind) */
    if (kept) {
        lo = ro->lo;
        opt_merge = ro->merge;
        conv = ro->conv;
    } else {
        lo = extract_lookup_options(lc, k.root, k.root_len, k.root_code);
        bool merge_ok = lo_option(h, lo, LO_MERGE, &opt_merge, &merge_err);
        options_ok = merge_ok;
        herr ignore = {0};
        lo_option(h, lo, LO_CONVERT_TO, &conv, &ignore);
        herr_clear(&ignore);
        /* (what a string's String#[] gives belongs to the context) */
        kept = rk && lc && lc->shared && merge_ok && !hv_is(lo, HV_STRING);
        if (kept) {
            rk->last_opt = rk->next_opt;
            ro = &rk->opts[rk->next_opt];
            rk->next_opt = (rk->next_opt + 1) % RECENT_OPTIONS;
            *ro = (recent_options){lc, lo, opt_merge, conv, NULL};
        }
    }
    const hv *m = merge;
    if (!m) {
        if (herr_isset(&merge_err)) {
            herr_move(err, &merge_err);
            lkey_free(&k);
            return LR_ERROR;
        }
        m = opt_merge;
        if (m && hv_is(m, HV_UNDEF))
            m = NULL;
        if (m && ex)
            ex_merge_source(ex, LOOKUP_OPTIONS);
    }
    herr_clear(&merge_err);
    hv *found = NULL;
    /* a key converted to Sensitive is never shown in clear in an explanation */
    const hv *conv_type = hv_is(conv, HV_ARRAY) ? hv_array_get(conv, 0) : conv;
    bool redact = ex && hv_is(conv_type, HV_STRING) && strncmp(hv_str_ptr(conv_type), "Sensitive", 9) == 0;
    if (redact)
        ex_redact(ex, true);
    if (ex)
        ex_push(ex, EX_TOP, k.text, NULL);
    bool ms_owned = false;
    merge_strategy *ms;
    if (kept && m == ro->merge && ro->ms) {
        ms = ro->ms; /* (kept by the cache) */
    } else {
        ms = merge_strategy_for(h, m, &ms_owned, err);
        if (ms && !ms_owned && kept && m == ro->merge)
            ro->ms = ms;
    }
    if (!ms) {
        r = LR_ERROR;
    } else {
        hv *v = NULL;
        r = provider_stack(&I, k.text, k.root, ms, &v, err);
        if (rk && rk->entry == rk_entry) {
            /* (the slot may have been given to another key by the nested lookups: then not) */
            rk->kx_gen = I.kx_gen;
            rk->kx = I.kx;
        }
        if (r == LR_FOUND) {
            r = dig(&I, &k, v, &found, err);
            hv_decref(v);
        }
        if (r == LR_NOT_FOUND && !h->global_only) {
            v = NULL;
            r = lookup_default_in_module(&I, &k, &v, err);
            if (r == LR_FOUND) {
                r = dig(&I, &k, v, &found, err);
                hv_decref(v);
            }
        }
        if (ms_owned)
            ms_free(ms);
    }
    if (ex)
        ex_pop(ex);
    if (r == LR_FOUND) {
        hv *converted = NULL;
        r = convert_result(&I, k.text, lo, options_ok ? &conv : NULL, found, &converted, err);
        hv_decref(found);
        if (r == LR_FOUND)
            *out = converted;
    }
    if (redact)
        ex_redact(ex, false);
    lkey_free(&k);
    return r;
}

static lr interp_global_lookup(inv *I, const char *key, hv **out, herr *err)
{
    hv *v = NULL;
    lr r = adapter_lookup(I, key, NULL, &v, err);
    if (r == LR_NOT_FOUND) {
        *out = hv_str(""); /* the default '' */
        return LR_FOUND;
    }
    if (r == LR_FOUND)
        *out = v;
    return r;
}

/* ------------------------------------------------------------------ context */

void hctx_free(hiera_ctx *h);

hiera_ctx *hctx_new(const char *codedir, const char *env_dir, const char *env_name, const char *global_config,
                    hv *scope, hiera_cache *cache)
{
    hiera_ctx *h = xcalloc(1, sizeof *h);
    h->codedir = xstrdup(codedir);
    h->env_name = xstrdup(env_name);
    h->env_dir = env_dir ? xstrdup(env_dir) : NULL;
    h->global_config = xstrdup(global_config);
    h->scope = hv_incref(scope);
    h->version = HIERA_PUPPET_7;
    if (cache) {
        h->cache = cache;
    } else {
        h->cache = cache_new();
        h->own_cache = true;
    }
    h->modules = hv_hash();
    static const struct interp_hooks hooks = {check_enter, check_leave, check_pass, interp_global_lookup};
    h->hooks = &hooks;
    return h;
}

void hctx_free(hiera_ctx *h)
{
    if (!h)
        return;
    free(h->codedir);
    free(h->env_name);
    hv_decref(h->settings_vars);
    hv_decref(h->server_vars);
    hv_decref(h->warned_vars);
    hiera_environment_free(h->own_env);
    hiera_settings_free(h->own_settings);
    free(h->env_dir);
    free(h->remap_envpath);
    free(h->global_config);
    hv_decref(h->scope);
    layer_free(h->global);
    layer_free(h->env);
    herr_clear(&h->env_provider_err);
    herr_clear(&h->env_err);
    for (size_t i = 0; i < h->nmod_layers; i++)
        layer_free(h->mod_layers[i]);
    free(h->mod_layers);
    hv_decref(h->modules);
    hv_decref(h->global_lo);
    herr_clear(&h->global_lo_err);
    hv_decref(h->env_lo);
    herr_clear(&h->env_lo_err);
    for (size_t i = 0; i < h->nlo_cache; i++)
        if (h->lo_cache[i] && !h->lo_cache[i]->shared)
            lo_free(h->lo_cache[i]);
    free(h->lo_cache);
    hv_decref(h->lo_index);
    for (size_t i = 0; i < h->ndlo_cache; i++)
        lo_free(h->dlo_cache[i]);
    free(h->dlo_cache);
    hv_decref(h->dlo_index);
    free(h->stack);
    interp_ctx_free(h);
    for (size_t i = 0; i < 2; i++) {
        free(h->mod_recent[i].name);
        free(h->lo_recent[i].name);
        hv_decref(h->lo_names[i]);
    }
    ex_free(h->ex);
    prov_free(h->prov);
    if (h->own_cache)
        cache_free(h->cache);
    free(h);
}

/* Lookup.lookup: the names in order, the first found wins; then the default. The type is asserted
 * on whichever value is returned. Returns LR_NOT_FOUND when nothing was found and there is no
 * default (Puppet's "did not find a value" LookupError; err gets that message). */
lr hctx_lookup(hiera_ctx *h, const char *const *names, size_t nnames, const ptype *type, const hv *dflt,
               const hv *merge, hv **out, herr *err)
{
    inv top = {h, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, false};
    for (size_t i = 0; i < nnames; i++) {
        hv *v = NULL;
        h->nested_lookups = 0;
        h->top_name = names[i];
        lr r = adapter_lookup(&top, names[i], merge, &v, err);
        h->top_name = NULL;
        if (r == LR_ERROR)
            return r;
        if (r == LR_FOUND) {
            if (type && !ptype_match(type, v)) {
                char *msg = ptype_mismatch(type, v, "Found value");
                herr_set(err, HERR_PUPPET, "%s", msg);
                free(msg);
                hv_decref(v);
                return LR_ERROR;
            }
            *out = v;
            return LR_FOUND;
        }
    }
    if (dflt) {
        if (type && !ptype_match(type, dflt)) {
            char *msg = ptype_mismatch(type, dflt, "Default value");
            herr_set(err, HERR_PUPPET, "%s", msg);
            free(msg);
            return LR_ERROR;
        }
        *out = hv_incref((hv *)dflt);
        return LR_FOUND;
    }
    if (!h->ex)
        return LR_NOT_FOUND; /* nobody reads the message of a plain not-found: none is made */
    sbuf b = {0};
    if (nnames == 1) {
        sb_addf(&b, "Function lookup() did not find a value for the name '%s'", names[0]);
    } else {
        sb_adds(&b, "Function lookup() did not find a value for any of the names [");
        for (size_t i = 0; i < nnames; i++)
            sb_addf(&b, "%s'%s'", i ? ", " : "", names[i]);
        sb_adds(&b, "]");
    }
    herr_set(err, HERR_LOOKUP, "%s", sb_str(&b));
    sb_free(&b);
    return LR_NOT_FOUND;
}
