/* api.c - the public API of include/hiera.h over the internal engine: contexts (with the top
 * scope `puppet lookup --node N --facts F` gives a lookup), requests, values, rendering. */
#include "hiera.h"

#include "base/error.h"
#include "base/rubyver.h"

#include "diff/compare.h"
#include "diff/plan.h"
#include "formats/diskcache.h"
#include "base/pathname.h"
#include "engine/engine.h"
#include "engine/enumerate.h"
#include "engine/installed.h"
#include "engine/serverfacts.h"
#include "engine/snapshot.h"
#include "formats/json.h"
#include "engine/provenance.h"
#include "engine/settings.h"
#include "types/ptype.h"
#include "formats/render.h"
#include "formats/psych.h"
#include "api/facts.h"
#include "api/api.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* engine entry points (lookup.c) */
hiera_ctx *hctx_new(const char *codedir, const char *env_dir, const char *env_name, const char *global_config,
                    hv *scope, hiera_cache *cache);
void hctx_free(hiera_ctx *h);
lr hctx_lookup(hiera_ctx *h, const char *const *names, size_t nnames, const ptype *type, const hv *dflt,
               const hv *merge, hv **out, herr *err);

/* ------------------------------------------------------------------ errors */


/* ------------------------------------------------------------------ values */

hiera_value *hiera_value_incref(hiera_value *v) { return hv_incref(v); }
void hiera_value_decref(hiera_value *v) { hv_decref(v); }
bool hiera_value_is_shared(const hiera_value *v) { return hv_is_shared(v); }
hiera_kind hiera_value_kind(const hiera_value *v) { return (hiera_kind)hv_kind_of(v); }
bool hiera_value_bool(const hiera_value *v) { return hv_bool_val(v); }
int64_t hiera_value_int(const hiera_value *v) { return hv_is(v, HV_INT) ? hv_int_val(v) : 0; }
const char *hiera_value_bigint(const hiera_value *v) { return hv_is(v, HV_BIGINT) ? hv_bigint_digits(v) : NULL; }
double hiera_value_float(const hiera_value *v) { return hv_is(v, HV_FLOAT) ? hv_float_val(v) : 0.0; }
const char *hiera_value_string(const hiera_value *v)
{
    return hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL) ? hv_str_ptr(v) : NULL;
}
size_t hiera_value_string_length(const hiera_value *v)
{
    return hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL) ? hv_str_len(v) : 0;
}
size_t hiera_value_array_size(const hiera_value *v) { return hv_is(v, HV_ARRAY) ? hv_array_len(v) : 0; }
hiera_value *hiera_value_array_get(const hiera_value *v, size_t i) { return hv_is(v, HV_ARRAY) ? hv_array_get(v, i) : NULL; }
size_t hiera_value_hash_size(const hiera_value *v) { return hv_is(v, HV_HASH) ? hv_hash_len(v) : 0; }
hiera_value *hiera_value_hash_key(const hiera_value *v, size_t i)
{
    return hv_is(v, HV_HASH) && i < hv_hash_len(v) ? hv_hash_key_at(v, i) : NULL;
}
hiera_value *hiera_value_hash_value(const hiera_value *v, size_t i)
{
    return hv_is(v, HV_HASH) && i < hv_hash_len(v) ? hv_hash_val_at(v, i) : NULL;
}
hiera_value *hiera_value_hash_get(const hiera_value *v, const char *key) { return hv_is(v, HV_HASH) ? hv_hash_gets(v, key) : NULL; }
hiera_value *hiera_value_sensitive_unwrap(const hiera_value *v) { return hv_is(v, HV_SENSITIVE) ? hv_sensitive_inner(v) : NULL; }
hiera_value *hiera_value_undef(void) { return hv_undef(); }
hiera_value *hiera_value_new_bool(bool b) { return hv_bool(b); }
hiera_value *hiera_value_new_int(int64_t i) { return hv_int(i); }
hiera_value *hiera_value_new_float(double d) { return hv_float(d); }
hiera_value *hiera_value_new_string(const char *s) { return hv_str(s); }
hiera_value *hiera_value_new_array(void) { return hv_array(); }
hiera_value *hiera_value_new_hash(void) { return hv_hash(); }
void hiera_value_array_push(hiera_value *array, hiera_value *item) { hv_array_push(array, item); }
void hiera_value_hash_set(hiera_value *hash, const char *key, hiera_value *value) { hv_hash_sets(hash, key, value); }

hiera_value *hiera_value_from_json(const char *text, hiera_error *err)
{
    herr e = {0};
    hv *v = hjson_parse(text, strlen(text), "<string>", &e);
    if (!v)
        herr_to_public(err, &e);
    return v;
}

/* hiera_render, JSON's stable containers remembered in jm when it is given. */
static char *render_with(const hv *v, hiera_render_format format, json_memo *jm, hiera_error *err)
{
    sbuf b = {0};
    herr e = {0};
    if (format == HIERA_RENDER_JSON) {
        /* (JSON needs no library the command opens on first use) */
        if (render_json_memo(&b, v, jm, &e) == 0)
            return sb_take(&b);
        sb_free(&b);
        if (!herr_isset(&e))
            herr_set(&e, HERR_ERROR, "cannot render the value");
        herr_to_public(err, &e);
        return NULL;
    }
    diag_lib_missing_take(); /* (a mark left by an earlier call is not this one's) */
    int rc = format == HIERA_RENDER_YAML          ? render_yaml(&b, v, &e)
             : format == HIERA_RENDER_YAML_SHARED ? render_yaml_shared(&b, v, &e)
                                                  : render_s(&b, v, &e);
    if (herr_public_missing(err, diag_lib_missing_take())) {
        sb_free(&b);
        herr_clear(&e);
        return NULL;
    }
    if (rc != 0) {
        sb_free(&b);
        if (!herr_isset(&e))
            herr_set(&e, HERR_ERROR, "cannot render the value");
        herr_to_public(err, &e);
        return NULL;
    }
    return sb_take(&b);
}

char *hiera_render(const hiera_value *v, hiera_render_format format, hiera_error *err)
{
    return render_with(v, format, NULL, err);
}

char *hiera_cache_render(hiera_cache *c, const hiera_value *v, hiera_render_format format, hiera_error *err)
{
    return render_with(v, format, c && format == HIERA_RENDER_JSON ? cache_json_memo(c) : NULL, err);
}

/* ------------------------------------------------------------------ contexts */

struct hiera_cache;
hiera_cache *hiera_cache_new(void) { return cache_new(); }
void hiera_cache_free(hiera_cache *c) { cache_free(c); }
void hiera_cache_freeze(hiera_cache *c) { cache_freeze(c); }
void hiera_cache_share_facts_strings(hiera_cache *c) { cache_share_facts_strings(c); }
bool hiera_cache_use_disk(hiera_cache *c, const char *dir) { return cache_use_disk(c, dir); }

/* facts: sanitized; trusted: the $trusted hash; version: Puppet 8 sets server_facts later
 * (interp.c, when first read), Puppet 7's lookup sets it empty */
static hv *build_scope(const hv *facts, const hv *trusted, const char *environment, hiera_puppet_version version)
{
    /* every fact a top-scope variable, then the variables Puppet sets (replacing facts of the
     * same names where they stand) */
    hv *scope = hv_is(facts, HV_HASH) ? hv_copy(facts) : hv_hash();
    hv_hash_sets(scope, "facts", hv_is(facts, HV_HASH) ? hv_incref((hv *)facts) : hv_hash());
    hv_hash_sets(scope, "trusted", hv_incref((hv *)trusted));
    if (version != HIERA_PUPPET_8)
        hv_hash_sets(scope, "server_facts", hv_hash());
    hv_hash_sets(scope, "environment", hv_str(environment));
    hv_hash_sets(scope, "name", hv_str("main"));
    hv_hash_sets(scope, "title", hv_str("main"));
    hv_hash_sets(scope, "module_name", hv_str(""));
    hv_hash_sets(scope, "settings::environment", hv_str(environment));
    return scope;
}

/* Node#merge of the server facts (Puppet 8): a fact of the same name keeps its place, with
 * Puppet's warning. */
static void warn_facts_over_server_facts(const hv *facts, const char *node)
{
    bool any = false;
    for (size_t i = 0; i < hv_hash_len(facts) && !any; i++) {
        const hv *k = hv_hash_key_at(facts, i);
        any = hv_is(k, HV_STRING) && server_fact_name(hv_str_ptr(k));
    }
    if (!any)
        return;
    hv *server = server_facts_local(NULL);
    for (size_t i = 0; i < hv_hash_len(server); i++) {
        const char *name = hv_str_ptr(hv_hash_key_at(server, i));
        const hv *given = hv_hash_gets(facts, name);
        if (!given)
            continue;
        sbuf b = {0};
        ruby_to_s(&b, given);
        diag_warn("server-fact-set", NULL, 0, 0,
                  "The node parameter '%s' for node '%s' was already set to '%s'. It could not be set to '%s'", name,
                  node ? node : "", sb_str(&b), hv_str_ptr(hv_hash_val_at(server, i)));
        sb_free(&b);
    }
    hv_decref(server);
}

/* The settings and environment of a context made without them: Puppet's defaults with the
 * options' directories as command-line values, no puppet.conf. */
static bool build_environment(const hiera_options *o, hiera_settings **s_out, hiera_environment **e_out, hiera_error *err)
{
    hiera_setting cli[5];
    size_t n = 0;
    if (o->codedir)
        cli[n++] = (hiera_setting){"codedir", o->codedir};
    if (o->confdir)
        cli[n++] = (hiera_setting){"confdir", o->confdir};
    if (o->environmentpath)
        cli[n++] = (hiera_setting){"environmentpath", o->environmentpath};
    if (o->hiera_config)
        cli[n++] = (hiera_setting){"hiera_config", o->hiera_config};
    if (o->environment)
        cli[n++] = (hiera_setting){"environment", o->environment};
    hiera_settings_options so = {.size = sizeof so, .cli = cli, .ncli = n, .no_puppet_conf = true,
                                 .puppet_version = o->puppet_version};
    *s_out = NULL;
    if (!o->settings) {
        *s_out = hiera_settings_load(&so, err);
        if (!*s_out)
            return false;
    }
    *e_out = hiera_environment_load(o->settings ? o->settings : *s_out, o->environment, err);
    if (!*e_out) {
        hiera_settings_free(*s_out);
        *s_out = NULL;
        return false;
    }
    return true;
}

/* Settings and environment built from the old fields and kept by a frozen cache for every
 * context made with the same fields (hiera diff and hiera check make one per node). */
typedef struct {
    hiera_settings *s;
    hiera_environment *e;
} shared_env;

static void shared_env_free(void *p)
{
    shared_env *se = p;
    hiera_environment_free(se->e);
    hiera_settings_free(se->s);
    free(se);
}

/* The environment of a context made without one: the cache's when it is frozen and has one for
 * the same folders (*own_s and *own_e NULL: the cache keeps them), else built for the context
 * (*own_s and *own_e its own). NULL with err when it cannot be built. */
static const hiera_environment *own_environment(const hiera_options *o, hiera_settings **own_s, hiera_environment **own_e,
                                                hiera_error *err)
{
    *own_s = NULL;
    *own_e = NULL;
    if (o->settings || !o->cache || !cache_is_frozen(o->cache)) {
        if (!build_environment(o, own_s, own_e, err))
            return NULL;
        return *own_e;
    }
    /* each field with its length (no field runs into the next), "-" when not given */
    const char *fields[] = {o->codedir, o->confdir, o->environmentpath, o->hiera_config, o->environment};
    sbuf sig = {0};
    sb_addf(&sig, "settings of a context, Puppet %d", (int)puppet_version_resolve(o->puppet_version));
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        if (fields[i])
            sb_addf(&sig, "\n%zu:%s", strlen(fields[i]), fields[i]);
        else
            sb_adds(&sig, "\n-");
    }
    char *key = sb_take(&sig);
    bool found;
    shared_env *se = cache_shared_get(o->cache, key, &found);
    if (!found) {
        hiera_settings *s;
        hiera_environment *e;
        if (!build_environment(o, &s, &e, err)) {
            free(key); /* failures are not remembered (as config_load) */
            return NULL;
        }
        se = xmalloc(sizeof *se);
        *se = (shared_env){s, e};
        cache_shared_put(o->cache, key, se, shared_env_free);
    }
    free(key);
    return se->e;
}

/* The folders and global hiera.yaml of o as given (malloc'ed): what a snapshot reads when the
 * settings cannot be resolved (its problems then say what is missing). */
static void resolve_paths(const hiera_options *o, char **codedir_out, char **envpath_out, char **global_out)
{
    const char *codedir = o->codedir ? o->codedir : "";
    *envpath_out = o->environmentpath ? xstrdup(o->environmentpath) : xjoin(codedir, "/environments", NULL);
    *global_out = o->hiera_config ? xstrdup(o->hiera_config) : xjoin(codedir, "/hiera.yaml", NULL);
    *codedir_out = xstrdup(codedir);
}

/* The caller's option struct copied whole into one of this version's layout: the fields its size
 * does not cover are zero; size 0 covers the fields of version 0.2, which end at v02_end (see
 * "Option structs grow" in hiera.h). */
#define COPY_OPTIONS_SINCE(dst, src, v02_end)                                                      \
    do {                                                                                           \
        memset(&(dst), 0, sizeof(dst));                                                            \
        if (src) {                                                                                 \
            size_t n_ = (src)->size ? (src)->size : (v02_end);                                     \
            memcpy(&(dst), (src), n_ < sizeof(dst) ? n_ : sizeof(dst));                            \
        }                                                                                          \
    } while (0)
/* size 0 reads the fields of version 0.2, which are all the fields there are today; a later
 * version that adds fields passes offsetof(its first new field) as v02_end */
#define COPY_OPTIONS(dst, src) COPY_OPTIONS_SINCE(dst, src, sizeof(dst))

void api_copy_options(hiera_options *dst, const hiera_options *src) { COPY_OPTIONS(*dst, src); }
void api_copy_request(hiera_request *dst, const hiera_request *src) { COPY_OPTIONS(*dst, src); }

/* The diag sink of a context: diagnostics become hiera_diagnostic for the caller's callback. */
static void to_user_diag(int severity, const char *code, const char *file, int line, int col, const char *message, void *data)
{
    hiera *h = data;
    hiera_diagnostic d = {(hiera_severity)severity, code, file, line, col, message};
    h->user_diag(&d, h->user_diag_data);
}

static diag_sink sink_of(hiera *h) { return (diag_sink){.fn = h->user_diag ? to_user_diag : NULL, .data = h}; }

static hiera *new_context(const hiera_options *given, hiera_error *err);

/* What a call on a context sets for its duration: the caller's diagnostics sink and the Ruby
 * whose words the messages take (the context's Puppet's). */
typedef struct {
    diag_sink sink;
    ruby_ver ruby;
} call_saved;

static void call_enter(hiera *h, call_saved *s)
{
    diag_enter(sink_of(h), &s->sink);
    s->ruby = rubyver_enter(h->version == HIERA_PUPPET_8 ? RUBY_33 : RUBY_31);
}

/* (what diag_leave returns: a library the call needed but could not load, or NULL) */
static const char *call_leave(const call_saved *s)
{
    rubyver_leave(s->ruby);
    return diag_leave(&s->sink);
}

hiera_puppet_version hiera_thread_puppet_version(hiera_puppet_version v)
{
    /* (AUTO: the installed Puppet, as a context's AUTO is; 7 when HIERA_PUPPET_VERSION is bad) */
    hiera_puppet_version chosen = puppet_version_resolve(v);
    return rubyver_enter(chosen == HIERA_PUPPET_8 ? RUBY_33 : RUBY_31) == RUBY_33 ? HIERA_PUPPET_8 : HIERA_PUPPET_7;
}

hiera *hiera_new(const hiera_options *given, hiera_error *err)
{
    /* (a scope of its own for a library the command could not load: see base/lazylib.h) */
    diag_sink saved;
    diag_enter(diag_current(), &saved);
    hiera *h = new_context(given, err);
    if (herr_public_missing(err, diag_leave(&saved))) {
        hiera_free(h);
        return NULL;
    }
    return h;
}

static hiera *new_context(const hiera_options *given, hiera_error *err)
{
    herr e = {0};
    hiera_options opts;
    COPY_OPTIONS(opts, given);
    const hiera_options *o = &opts;
    const hv *facts = o->facts;
    if (o->base_facts && !hv_is(o->base_facts, HV_HASH)) {
        herr_set(&e, HERR_PUPPET, "Incorrectly formatted base facts: a hash of facts is required");
        herr_to_public(err, &e);
        return NULL;
    }
    if (facts && !facts_check_given(facts, NULL, &e)) {
        herr_to_public(err, &e);
        return NULL;
    }
    if (o->env && (o->codedir || o->environmentpath || o->environment)) {
        herr_set(&e, HERR_PUPPET, "hiera_new: codedir, environmentpath and environment go with the settings, not with an environment");
        herr_to_public(err, &e);
        return NULL;
    }
    /* the node's facts with the given ones over them (Puppet::Node::Facts#add_extra_values),
     * sanitized; then $trusted */
    hv *all = NULL;
    if (o->base_facts && facts) {
        all = hv_copy(o->base_facts);
        for (size_t i = 0; i < hv_hash_len(facts); i++)
            hv_hash_set(all, hv_incref(hv_hash_key_at(facts, i)), hv_incref(hv_hash_val_at(facts, i)));
    }
    const hv *merged = all ? all : o->base_facts ? o->base_facts : facts;
    hv *clean = merged ? facts_sanitize(merged, &e) : hv_hash();
    hv_decref(all);
    hv *trusted_given = NULL;
    if (clean && o->trusted)
        trusted_given = trusted_complete(o->trusted, &e);
    if (!clean || (o->trusted && !trusted_given)) {
        hv_decref(clean);
        herr_to_public(err, &e);
        return NULL;
    }
    /* the settings and the environment: the caller's, else Puppet's defaults with the options'
     * folders */
    hiera_settings *own_s = NULL;
    hiera_environment *own_e = NULL;
    const hiera_environment *env = o->env;
    if (!env) {
        env = own_environment(o, &own_s, &own_e, err);
        if (!env) {
            hv_decref(clean);
            hv_decref(trusted_given);
            return NULL;
        }
    }
    const hiera_settings *s = o->settings ? o->settings : settings_of(env);
    /* Puppet converts every setting when it compiles the node's scope */
    char *codedir = NULL, *global = NULL;
    size_t idlen = 0;
    const void *id = o->cache ? cache_run_identity(o->cache, &idlen) : NULL;
    bool checked = id && cache_disk(o->cache) ? settings_check_kept(env, cache_disk(o->cache), id, idlen, err)
                                               : hiera_environment_check(env, err);
    if (checked) {
        codedir = settings_string(s, NULL, "codedir", &e);
        global = codedir ? (o->hiera_config ? xstrdup(o->hiera_config) : settings_string(s, NULL, "hiera_config", &e)) : NULL;
        if (!global)
            herr_to_public(err, &e);
    }
    if (!global) {
        free(codedir);
        hiera_environment_free(own_e);
        hiera_settings_free(own_s);
        hv_decref(clean);
        hv_decref(trusted_given);
        return NULL;
    }
    hv *trusted = trusted_for(clean, trusted_given);
    hv_decref(trusted_given);
    const char *name = hiera_environment_name(env);
    hiera_puppet_version version = hiera_settings_puppet_version(s);
    hv *scope = build_scope(clean, trusted, name, version);
    hiera *h = hctx_new(codedir, hiera_environment_dir(env), name, global, scope, o->cache);
    h->strict_paths = !o->unsafe_fact_paths;
    h->redact_encrypted = o->redact_encrypted;
    h->environment = env;
    h->strict = settings_strict(env);
    h->version = hiera_settings_puppet_version(s);
    h->own_env = own_e;
    h->own_settings = own_s;
    h->user_diag = o->diagnostics;
    h->user_diag_data = o->diagnostics_data;
    if (o->remap_default_environmentpath && hiera_environment_dir(env))
        h->remap_envpath = pn_dirname(hiera_environment_dir(env));
    if (version == HIERA_PUPPET_8) {
        call_saved saved;
        call_enter(h, &saved);
        warn_facts_over_server_facts(clean, o->node);
        call_leave(&saved);
    }
    hv_decref(scope);
    hv_decref(clean);
    hv_decref(trusted);
    free(codedir);
    free(global);
    return h;
}

void hiera_free(hiera *h) { hctx_free(h); }

/* ------------------------------------------------------------------ lookups */

struct hiera_result {
    hiera_value *value;
    explainer *ex;
    prov_registry *prov;
    char *key;
};

/* The lookup; the explainer and provenance registry the request asks for are attached to the
 * context while it runs, then handed to res (or dropped when res is NULL). */
static hiera_status lookup_into(hiera *h, const hiera_request *given, hiera_value **value, hiera_result *res, hiera_error *err)
{
    herr e = {0};
    hiera_request rq;
    const hiera_request *r = &rq;
    if (given && given->size == sizeof rq)
        r = given; /* (this version's request: read in place, not copied for each lookup) */
    else
        COPY_OPTIONS(rq, given);
    *value = NULL;
    if (res && (r->explain & (HIERA_EXPLAIN_DATA | HIERA_EXPLAIN_OPTIONS)))
        h->ex = ex_new((r->explain & HIERA_EXPLAIN_OPTIONS) != 0,
                       (r->explain & (HIERA_EXPLAIN_DATA | HIERA_EXPLAIN_OPTIONS)) == HIERA_EXPLAIN_OPTIONS);
    if (res && (r->explain & HIERA_EXPLAIN_PROVENANCE))
        h->prov = prov_new();
    hiera_status st;
    call_saved saved;
    call_enter(h, &saved);
    ptype *type = NULL;
    if (r->type) {
        type = ptype_parse_cli(r->type, &e);
        if (!type) {
            if (e.kind == HERR_ERROR || e.kind == HERR_LOOKUP)
                e.kind = HERR_PUPPET;
            herr_to_public(err, &e);
            st = HIERA_ERROR;
            goto out;
        }
    }
    lr found = hctx_lookup(h, r->keys, r->nkeys, type, r->default_value, r->merge, value, &e);
    ptype_free(type);
    if (found == LR_FOUND) {
        st = HIERA_OK;
    } else {
        if (h->ex && (e.kind == HERR_LOOKUP || e.kind == HERR_LOOKUP_ISSUE))
            ex_text(h->ex, e.msg); /* puppet lookup reports a LookupError (not found included) last */
        if (found == LR_NOT_FOUND) {
            herr_clear(&e);
            st = HIERA_NOT_FOUND;
        } else {
            herr_to_public(err, &e);
            st = HIERA_ERROR;
        }
    }
out:
    if (__builtin_expect(herr_public_missing(err, call_leave(&saved)), 0)) {
        /* a library the command could not load was needed (base/lazylib.h) */
        hv_decref(*value);
        *value = NULL;
        st = HIERA_ERROR;
    }
    if (res) {
        res->ex = h->ex;
        res->prov = h->prov;
        res->key = xstrdup(r->nkeys ? r->keys[0] : "");
        res->value = st == HIERA_OK ? hv_incref(*value) : NULL;
    }
    h->ex = NULL;
    h->prov = NULL;
    return st;
}

hiera_status hiera_lookup(hiera *h, const hiera_request *r, hiera_value **value, hiera_error *err)
{
    return lookup_into(h, r, value, NULL, err);
}

hiera_status hiera_lookup_result(hiera *h, const hiera_request *r, hiera_result **result, hiera_error *err)
{
    hiera_result *res = xcalloc(1, sizeof *res);
    hiera_value *v = NULL;
    hiera_status st = lookup_into(h, r, &v, res, err);
    hiera_value_decref(v);
    *result = res;
    return st;
}

void hiera_result_free(hiera_result *r)
{
    if (!r)
        return;
    hv_decref(r->value);
    ex_free(r->ex);
    prov_free(r->prov);
    free(r->key);
    free(r);
}

hiera_value *hiera_result_value(const hiera_result *r) { return r->value; }
char *hiera_result_explanation_text(const hiera_result *r) { return r->ex ? ex_render_text(r->ex) : NULL; }
hiera_value *hiera_result_explanation_tree(const hiera_result *r) { return r->ex ? ex_to_value(r->ex) : NULL; }

char *hiera_result_provenance_text(const hiera_result *r)
{
    return r->prov && r->value ? prov_render_text(r->prov, r->key, r->value) : NULL;
}

hiera_value *hiera_result_provenance_tree(const hiera_result *r)
{
    return r->prov && r->value ? prov_to_value(r->prov, r->key, r->value) : NULL;
}

hiera_status hiera_lookup_key(hiera *h, const char *key, hiera_value **value, hiera_error *err)
{
    hiera_request r = HIERA_REQUEST_INIT;
    r.keys = &key;
    r.nkeys = 1;
    return hiera_lookup(h, &r, value, err);
}

const char *hiera_version(void) { return HIERA_VERSION; }

/* ------------------------------------------------------------------ snapshots */

struct hiera_snapshot; /* is an engine snapshot (engine/snapshot.h) */

/* snapshot_spec.module_roots: the environment's modulepath from the settings */
static char **snapshot_roots(const char *name, void *data)
{
    hiera_error ignore = {0};
    hiera_environment *env = hiera_environment_load(data, name, &ignore);
    hiera_error_clear(&ignore);
    if (!env)
        return NULL;
    size_t n = hiera_environment_modulepath_count(env);
    char **roots = xcalloc(n + 1, sizeof *roots);
    for (size_t i = 0; i < n; i++)
        roots[i] = xstrdup(hiera_environment_modulepath(env, i));
    hiera_environment_free(env);
    return roots;
}

hiera_snapshot *hiera_snapshot_update(const hiera_snapshot *previous, const hiera_options *given, hiera_error *err)
{
    return hiera_snapshot_update_changed(previous, given, NULL, NULL, err);
}

hiera_snapshot *hiera_snapshot_update_changed(const hiera_snapshot *previous, const hiera_options *given,
                                              hiera_path_changed_fn changed, void *data, hiera_error *err)
{
    (void)err; /* problems are kept in the snapshot (hiera_snapshot_problems) */
    hiera_options opts;
    COPY_OPTIONS(opts, given);
    const hiera_options *o = &opts;
    char *codedir = NULL, *envpath = NULL, *global = NULL;
    /* the folders as hiera_new finds them: from the settings (Puppet's defaults with the options'
     * folders when none are given) */
    hiera_settings *own = NULL;
    const hiera_settings *s = o->settings ? o->settings : o->env ? settings_of(o->env) : NULL;
    if (!s) {
        hiera_setting cli[5];
        size_t n = 0;
        if (o->codedir)
            cli[n++] = (hiera_setting){"codedir", o->codedir};
        if (o->confdir)
            cli[n++] = (hiera_setting){"confdir", o->confdir};
        if (o->environmentpath)
            cli[n++] = (hiera_setting){"environmentpath", o->environmentpath};
        if (o->hiera_config)
            cli[n++] = (hiera_setting){"hiera_config", o->hiera_config};
        if (o->environment)
            cli[n++] = (hiera_setting){"environment", o->environment};
        hiera_settings_options so = {.size = sizeof so, .cli = cli, .ncli = n, .no_puppet_conf = true,
                                     .puppet_version = o->puppet_version};
        hiera_error ignore = {0};
        s = own = hiera_settings_load(&so, &ignore);
        hiera_error_clear(&ignore);
    }
    if (s) {
        herr e = {0};
        codedir = settings_string(s, NULL, "codedir", &e);
        envpath = settings_string(s, NULL, "environmentpath", &e);
        global = o->hiera_config ? xstrdup(o->hiera_config) : settings_string(s, NULL, "hiera_config", &e);
        herr_clear(&e);
    }
    if (!codedir || !envpath || !global) {
        free(codedir);
        free(envpath);
        free(global);
        resolve_paths(o, &codedir, &envpath, &global);
    }
    diskcache *d = o->cache ? cache_disk(o->cache) : NULL;
    const char *env_name = o->env ? hiera_environment_name(o->env) : o->environment;
    const char *only[1] = {env_name};
    char *remap = NULL;
    if (o->remap_default_environmentpath && envpath) {
        const char *colon = strchr(envpath, ':');
        remap = colon ? xstrndup(envpath, (size_t)(colon - envpath)) : xstrdup(envpath);
    }
    snapshot_spec spec = {codedir, envpath, global, env_name ? only : NULL, env_name ? 1 : 0,
                          d ? diskcache_dir(d) : NULL, s ? snapshot_roots : NULL, (void *)s, remap};
    snapshot *snap = snapshot_build_changed(&spec, (const snapshot *)previous, changed, data);
    free(remap);
    hiera_settings_free(own);
    free(codedir);
    free(envpath);
    free(global);
    return (hiera_snapshot *)snap;
}

hiera_snapshot *hiera_snapshot_new(const hiera_options *o, hiera_error *err) { return hiera_snapshot_update(NULL, o, err); }

hiera_snapshot *hiera_snapshot_retain(hiera_snapshot *s) { return (hiera_snapshot *)snapshot_retain((snapshot *)s); }
void hiera_snapshot_release(hiera_snapshot *s) { snapshot_release((snapshot *)s); }
hiera_cache *hiera_cache_new_from_snapshot(hiera_snapshot *s) { return snapshot_new_view((snapshot *)s); }
hiera_value *hiera_snapshot_describe(const hiera_snapshot *s) { return snapshot_describe((const snapshot *)s); }
hiera_value *hiera_snapshot_problems(const hiera_snapshot *s) { return snapshot_problems((const snapshot *)s); }

/* ------------------------------------------------------------------ enumeration */

hiera_value *hiera_hierarchy(hiera *h)
{
    call_saved saved;
    call_enter(h, &saved);
    hv *v = enum_hierarchy(h);
    call_leave(&saved);
    return v;
}

hiera_value *hiera_keys(hiera *h)
{
    call_saved saved;
    call_enter(h, &saved);
    hv *v = enum_keys(h);
    call_leave(&saved);
    return v;
}

hiera_value *hiera_key_names(hiera *h)
{
    call_saved saved;
    call_enter(h, &saved);
    hv *v = enum_key_names(h);
    call_leave(&saved);
    return v;
}

char *hiera_key_lookup_form(const char *data_key) { return data_key ? enum_lookup_form(data_key) : NULL; }

/* ------------------------------------------------------------------ comparing */

bool hiera_value_same(const hiera_value *a, const hiera_value *b) { return dv_same(a, b); }
uint64_t hiera_value_same_code(const hiera_value *v) { return dv_code(v); }
hiera_value *hiera_value_changes(const hiera_value *o, const hiera_value *n) { return dv_changes(o, n); }

char *hiera_value_path_text(const hiera_value *path)
{
    sbuf b = {0};
    dv_path_text(&b, path);
    return sb_take(&b);
}

static void push_root(const char *root, size_t len, void *data)
{
    hv *out = data;
    for (size_t i = 0; i < hv_array_len(out); i++) {
        const hv *k = hv_array_get(out, i);
        if (hv_str_len(k) == len && memcmp(hv_str_ptr(k), root, len) == 0)
            return;
    }
    hv_array_push(out, hv_strn(root, len));
}

hiera_value *hiera_value_lookups(const hiera_value *v)
{
    hv *out = hv_array();
    interp_lookup_roots(v, push_root, out);
    return out;
}

hiera_value *hiera_snapshot_compare(const hiera_snapshot *old_snapshot, const hiera_snapshot *new_snapshot,
                                    const hiera_compare_options *given)
{
    hiera_compare_options o;
    COPY_OPTIONS(o, given);
    dplan_opts d = {o.old_root, o.new_root, o.keys, o.nkeys, o.full, o.full_reason};
    return dplan_compare((const snapshot *)old_snapshot, (const snapshot *)new_snapshot, &d);
}
