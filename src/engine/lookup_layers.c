/* lookup_layers.c - the lookup's layers (lookup.c gives the overview): the global layer, the
 * environment's (with its legacy environment.conf and data_provider settings) and a module's
 * (its metadata.json's data_provider), created once per context and remembered. */
#include "engine/lookup_int.h"

#include <stdlib.h>
#include <string.h>

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

void providers_free(provider *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hv_decref(p[i].options);
        for (size_t j = 0; j < p[i].nlocs; j++) {
            if (p[i].recalled)
                p[i].locs[j].path = p[i].locs[j].original = NULL; /* (borrowed) */
            location_clear(&p[i].locs[j]);
        }
        hv_decref(p[i].recalled);
        free(p[i].locs);
        location_clear(&p[i].nil_loc);
    }
    free(p);
}

void plan_clear(probe_plan *pl)
{
    free(pl->probes);
    free(pl->words);
    *pl = (probe_plan){0};
}

void layer_free(layer *l)
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
char *module_dir(hiera_ctx *h, const char *name)
{
    return h->environment ? settings_module_dir(h->environment, name) : NULL;
}


/* Remembers obj and st for name in r; the older of the two gives way. */
void recent_put(recent_name *r, const char *name, void *obj, int st, const char *stable)
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
__attribute__((noinline)) layer *module_layer_known(hiera_ctx *h, const char *name, const char *stable,
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


layer *module_layer(hiera_ctx *h, const char *name, mod_state *state, herr *err)
{
    return module_layer_of(h, name, NULL, state, err);
}
