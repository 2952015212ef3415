/* routes.c - what `hiera serve` answers (serve.h). Every answer is JSON built as values and
 * rendered by the library, so that a value reads exactly as `hiera lookup --render-as json`
 * prints it. The API is versioned under /v1 and described in the README.
 *
 * Who may read what: with no authentication configured (no --token-file, no --tls-ca) anyone may
 * read every node, with secrets redacted; with authentication, a node's certificate reads only
 * that node's answers (as Puppet's auth rules give a node only its own catalog) and sees its
 * secrets, an admin (a listed certificate, or the bearer token) reads everything, and anybody
 * else gets 401. Secrets are values converted to Sensitive and values of eyaml blocks: for a
 * caller who may not see them, eyaml blocks are not even decrypted. */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "check/check.h"

/* ------------------------------------------------------------------ answers */

static void reply_value(response *out, int status, hiera_value *v)
{
    hiera_error err = {0};
    char *text = hiera_render(v, HIERA_RENDER_JSON, &err);
    if (!text) {
        /* a value JSON cannot hold (NaN): say so rather than send something else */
        sbuf b = {0};
        sb_adds(&b, "{\"error\":{\"kind\":\"render\",\"message\":");
        hiera_value *m = hiera_value_new_string(err.message ? err.message : "cannot render the answer as JSON");
        char *mj = hiera_render(m, HIERA_RENDER_JSON, NULL);
        sb_adds(&b, mj);
        free(mj);
        hiera_value_decref(m);
        sb_adds(&b, "}}");
        text = sb_take(&b);
        status = 500;
    }
    hiera_error_clear(&err);
    size_t n = strlen(text);
    text = xrealloc(text, n + 2);
    text[n] = '\n';
    text[n + 1] = 0;
    out->status = status;
    out->body = text;
    out->len = n + 1;
    out->content_type = "application/json";
}

/* {"error": the message} with this status */
static void reply_verror(response *out, int status, const char *fmt, va_list ap)
{
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    hiera_value *e = hiera_value_new_hash();
    hiera_value_hash_set(e, "error", hiera_value_new_string(sb_str(&b)));
    sb_free(&b);
    reply_value(out, status, e);
    hiera_value_decref(e);
}

static void reply_error(response *out, int status, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void reply_error(response *out, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verror(out, status, fmt, ap);
    va_end(ap);
}

void serve_reply_error(response *out, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_verror(out, status, fmt, ap);
    va_end(ap);
}

void serve_reply(response *out, int status, hiera_value *v) { reply_value(out, status, v); }

/* A copy of v with Sensitive values unwrapped (for a caller who may see them). */
static hiera_value *unwrap(const hiera_value *v)
{
    switch (hiera_value_kind(v)) {
    case HIERA_SENSITIVE:
        return unwrap(hiera_value_sensitive_unwrap(v));
    case HIERA_ARRAY: {
        hiera_value *a = hiera_value_new_array();
        for (size_t i = 0; i < hiera_value_array_size(v); i++)
            hiera_value_array_push(a, unwrap(hiera_value_array_get(v, i)));
        return a;
    }
    case HIERA_HASH: {
        hv *h = hv_hash();
        for (size_t i = 0; i < hv_hash_len(v); i++)
            hv_hash_set(h, hv_incref(hv_hash_key_at(v, i)), unwrap(hv_hash_val_at(v, i)));
        return h;
    }
    default:
        return hiera_value_incref((hiera_value *)v);
    }
}

/* ------------------------------------------------------------------ requests */

/* Puppet's certnames and the node files' names: letters, digits, '.', '-', '_' (no '/', no
 * ".."): they never name a path. */
static bool valid_node(const char *s)
{
    if (!s || !*s || strlen(s) > 255 || s[0] == '.')
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
              *p == '-' || *p == '_'))
            return false;
    return true;
}

/* Puppet's environment names: /\A[a-z0-9_]+\z/ */
static bool valid_env(const char *s)
{
    if (!s || !*s || strlen(s) > 255)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* A request's parameters: from the JSON body (POST) or the query string (GET). */
typedef struct {
    const request *rq;
    hiera_value *body; /* a hash, or NULL */
} params;

static const char *param_str(const params *p, const char *name)
{
    if (p->body) {
        const hiera_value *v = hiera_value_hash_get(p->body, name);
        return hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
    }
    return p->rq->arg(p->rq->conn, name);
}

static const hiera_value *param_value(const params *p, const char *name)
{
    return p->body ? hiera_value_hash_get(p->body, name) : NULL;
}

static bool param_flag(const params *p, const char *name)
{
    if (p->body) {
        const hiera_value *v = hiera_value_hash_get(p->body, name);
        return hiera_value_kind(v) == HIERA_BOOLEAN ? hiera_value_bool(v) : v != NULL && hiera_value_kind(v) != HIERA_UNDEF;
    }
    const char *s = p->rq->arg(p->rq->conn, name);
    return s && strcmp(s, "0") != 0 && strcmp(s, "false") != 0;
}

/* May the caller read node's answers, and see its secrets? 0: no (status in *status), 1: yes,
 * redacted, 2: yes, with secrets. */
static int access_to(const request *rq, const char *node, int *status)
{
    switch (rq->who.kind) {
    case WHO_ADMIN:
        return 2;
    case WHO_NODE:
        if (node && strcmp(node, rq->who.name) == 0)
            return 2;
        *status = 403;
        return 0;
    default:
        if (rq->who.authenticated_required) {
            *status = 401;
            return 0;
        }
        return 1;
    }
}

static bool may_list(const request *rq, response *out)
{
    if (rq->who.kind == WHO_ANYONE && rq->who.authenticated_required) {
        reply_error(out, 401, "authentication required (a client certificate or a bearer token)");
        return false;
    }
    return true;
}

/* A context for node in env from the generation (facts from the facts folder, or the request's
 * own for a caller who may see the node's secrets... or any caller: facts only feed the lookup). */
static hiera *context_for(const request *rq, generation *g, const char *env, const char *node, const hiera_value *facts,
                          bool redact, bool fresh, response *out)
{
    /* the generation's facts for the node: a context kept from the thread's last request may
     * serve, but not an explanation or provenance (a context explains its hierarchy's expansion
     * only when it first makes it) */
    bool stored = false, own = !facts && !fresh;
    if (own) {
        hiera *kept = state_thread_context(g, env, node, redact);
        if (kept)
            return kept;
    }
    if (!facts) {
        facts = hiera_value_hash_get(g->facts, node);
        stored = facts && hiera_value_hash_get(g->facts_stored, node);
    }
    if (!facts) {
        const hiera_value *why = hiera_value_hash_get(g->facts_errors, node);
        if (why)
            reply_error(out, 422, "the facts of node '%s' cannot be read: %s", node, hiera_value_string(why));
        else
            reply_error(out, 404, "unknown node '%s' (no facts for it%s)", node, rq->o->facts_dir ? " in the facts folder" : rq->o->puppetdb ? " in PuppetDB" : "; give them in the request");
        return NULL;
    }
    if (hiera_value_kind(facts) != HIERA_HASH) {
        reply_error(out, 400, "\"facts\" must be a hash");
        return NULL;
    }
    const char *why = NULL;
    const hiera_environment *environment = state_environment(g, env, &why);
    if (!environment) {
        reply_error(out, 422, "%s", why ? why : "no such environment");
        return NULL;
    }
    hiera_options o = HIERA_OPTIONS_INIT;
    o.settings = g->settings;
    o.env = environment; /* settings, folders and modulepath loaded once per generation */
    o.node = node;
    if (stored)
        o.base_facts = facts; /* a file of Puppet's facts cache: the node's stored facts */
    else
        o.facts = facts;
    o.cache = state_thread_cache(g);
    o.unsafe_fact_paths = rq->o->unsafe_fact_paths;
    o.redact_encrypted = redact;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        reply_error(out, 422, "%s", err.message ? err.message : "cannot look up for this node");
    else if (own)
        state_thread_context_keep(g, h, env, node, redact);
    hiera_error_clear(&err);
    return h;
}

/* The common part of the node endpoints: the environment, the node, access; the context. */
static hiera *open_node(const request *rq, const params *p, generation *g, response *out, bool *secrets, const char **env_out,
                        const char **node_out)
{
    const char *env = param_str(p, "environment");
    if (!env)
        env = rq->o->environment ? rq->o->environment : "production";
    const char *node = param_str(p, "node");
    if (!valid_env(env)) {
        reply_error(out, 400, "invalid environment name (letters a-z, digits and '_')");
        return NULL;
    }
    if (!valid_node(node)) {
        reply_error(out, 400, node ? "invalid node name (letters, digits, '.', '-' and '_')" : "\"node\" is required");
        return NULL;
    }
    int status = 403;
    int access = access_to(rq, node, &status);
    if (!access) {
        reply_error(out, status, status == 401 ? "authentication required (a client certificate or a bearer token)"
                                               : "a node's certificate reads only that node's answers");
        return NULL;
    }
    *secrets = access == 2;
    *env_out = env;
    *node_out = node;
    return context_for(rq, g, env, node, param_value(p, "facts"), !*secrets,
                       param_flag(p, "explain") || param_flag(p, "provenance"), out);
}

static hiera_value *error_value(const hiera_error *err)
{
    hiera_value *e = hiera_value_new_hash();
    hiera_value_hash_set(e, "kind", hiera_value_new_string(err->kind == HIERA_ERR_LOOKUP ? "lookup" : "fatal"));
    hiera_value_hash_set(e, "message", hiera_value_new_string(err->message ? err->message : ""));
    return e;
}

/* The merge parameter: a strategy name, or (POST) a hash with "strategy" and deep options. */
static hiera_value *merge_param(const params *p, response *out, bool *bad)
{
    *bad = false;
    const hiera_value *m = param_value(p, "merge");
    if (m && hiera_value_kind(m) == HIERA_HASH)
        return hiera_value_incref((hiera_value *)m);
    const char *s = param_str(p, "merge");
    if (!s)
        return NULL;
    if (strcmp(s, "first") && strcmp(s, "unique") && strcmp(s, "hash") && strcmp(s, "deep")) {
        reply_error(out, 400, "\"merge\" only accepts 'first', 'hash', 'unique', or 'deep' (or a hash with a strategy)");
        *bad = true;
        return NULL;
    }
    return hiera_value_new_string(s);
}

/* One lookup's answer as a value: {"node","environment","key","found","value"|"error",
 * "explanation"?,"provenance"?}; *status the HTTP status. */
static hiera_value *lookup_answer(hiera *h, const char *const *keys, size_t nkeys, const hiera_value *merge,
                                  const hiera_value *dflt, const char *type, bool explain, bool provenance, bool secrets,
                                  int *status)
{
    hiera_request r = HIERA_REQUEST_INIT;
    r.keys = keys;
    r.nkeys = nkeys;
    r.merge = merge;
    r.default_value = dflt;
    r.type = type;
    r.explain = (explain ? HIERA_EXPLAIN_DATA : 0) | (provenance ? HIERA_EXPLAIN_PROVENANCE : 0);
    hiera_result *res = NULL;
    hiera_error err = {0};
    hiera_status st = hiera_lookup_result(h, &r, &res, &err);
    hiera_value *a = hiera_value_new_hash();
    hiera_value_hash_set(a, "found", hiera_value_new_bool(st == HIERA_OK));
    if (st == HIERA_OK) {
        const hiera_value *v = hiera_result_value(res);
        hiera_value_hash_set(a, "value", secrets ? unwrap(v) : hiera_value_incref((hiera_value *)v));
        *status = 200;
        metrics_lookup(0);
    } else if (st == HIERA_NOT_FOUND) {
        *status = 404;
        metrics_lookup(1);
    } else {
        hiera_value_hash_set(a, "error", error_value(&err));
        *status = 422;
        metrics_lookup(2);
    }
    if (explain) {
        char *text = hiera_result_explanation_text(res);
        hiera_value_hash_set(a, "explanation", hiera_value_new_string(text ? text : ""));
        free(text);
    }
    if (provenance && st == HIERA_OK) {
        hiera_value *tree = hiera_result_provenance_tree(res);
        if (tree) {
            hiera_value_hash_set(a, "provenance", secrets ? unwrap(hiera_value_hash_get(tree, "provenance"))
                                                           : hiera_value_incref(hiera_value_hash_get(tree, "provenance")));
            hiera_value_decref(tree);
        }
    }
    hiera_result_free(res);
    hiera_error_clear(&err);
    return a;
}

/* ------------------------------------------------------------------ endpoints */

static void do_lookup(const request *rq, const params *p, generation *g, response *out)
{
    bool secrets;
    const char *env, *node;
    hiera *h = open_node(rq, p, g, out, &secrets, &env, &node);
    if (!h)
        return;
    const char **keys = NULL;
    size_t nkeys = 0;
    const hiera_value *kl = param_value(p, "keys");
    if (kl && hiera_value_kind(kl) == HIERA_ARRAY) {
        keys = xcalloc(hiera_value_array_size(kl) + 1, sizeof *keys);
        for (size_t i = 0; i < hiera_value_array_size(kl); i++)
            if (hiera_value_kind(hiera_value_array_get(kl, i)) == HIERA_STRING)
                keys[nkeys++] = hiera_value_string(hiera_value_array_get(kl, i));
    } else if (param_str(p, "key")) {
        keys = xcalloc(2, sizeof *keys);
        keys[nkeys++] = param_str(p, "key");
    }
    bool bad;
    hiera_value *merge = merge_param(p, out, &bad);
    if (bad) {
        free(keys);
        state_thread_context_done(h);
        return;
    }
    if (!nkeys) {
        reply_error(out, 400, "\"key\" (or \"keys\", a list of names tried in order) is required");
        free(keys);
        hiera_value_decref(merge);
        state_thread_context_done(h);
        return;
    }
    hiera_value *dflt = NULL;
    const hiera_value *dv = param_value(p, "default");
    if (dv)
        dflt = hiera_value_incref((hiera_value *)dv);
    else if (param_str(p, "default"))
        dflt = hiera_value_new_string(param_str(p, "default")); /* as --default: a string */
    int status;
    hiera_value *a = lookup_answer(h, keys, nkeys, merge, dflt, param_str(p, "type"), param_flag(p, "explain"),
                                   param_flag(p, "provenance"), secrets, &status);
    hiera_value *full = hiera_value_new_hash();
    hiera_value_hash_set(full, "node", hiera_value_new_string(node));
    hiera_value_hash_set(full, "environment", hiera_value_new_string(env));
    hiera_value_hash_set(full, "key", hiera_value_new_string(keys[0]));
    for (size_t i = 0; i < hiera_value_hash_size(a); i++)
        hv_hash_set(full, hv_incref(hiera_value_hash_key(a, i)), hv_incref(hiera_value_hash_value(a, i)));
    reply_value(out, status, full);
    hiera_value_decref(full);
    hiera_value_decref(a);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    free(keys);
    state_thread_context_done(h);
}

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* POST /v1/batch {"environment", "nodes": [...] (or absent: every node the caller may read),
 * "keys": [...], "merge", "default", "type"} -> {"results": {node: {key: value}}, "errors":
 * {node: message | {key: message}}}: a key not found is left out, as hiera batch does. */
static void do_batch(const request *rq, const params *p, generation *g, response *out)
{
    if (!p->body) {
        reply_error(out, 400, "POST a JSON object: {\"nodes\": [...], \"keys\": [...], \"environment\": ...}");
        return;
    }
    const char *env = param_str(p, "environment");
    if (!env)
        env = rq->o->environment ? rq->o->environment : "production";
    if (!valid_env(env)) {
        reply_error(out, 400, "invalid environment name (letters a-z, digits and '_')");
        return;
    }
    const hiera_value *keys = param_value(p, "keys"), *nodes = param_value(p, "nodes");
    if (hiera_value_kind(keys) != HIERA_ARRAY || hiera_value_array_size(keys) == 0) {
        reply_error(out, 400, "\"keys\" must be a non-empty list of keys");
        return;
    }
    if (nodes && hiera_value_kind(nodes) != HIERA_ARRAY) {
        reply_error(out, 400, "\"nodes\" must be a list of node names");
        return;
    }
    if (!nodes)
        nodes = rq->who.kind == WHO_NODE ? NULL : g->nodes;
    hiera_value *own = NULL;
    if (!nodes) {
        own = hiera_value_new_array();
        hiera_value_array_push(own, hiera_value_new_string(rq->who.name));
        nodes = own;
    }
    size_t nn = hiera_value_array_size(nodes), nk = hiera_value_array_size(keys);
    if (nn * nk > 1000000) {
        reply_error(out, 413, "at most 1,000,000 lookups per batch (asked %zu nodes x %zu keys)", nn, nk);
        hiera_value_decref(own);
        return;
    }
    bool bad;
    hiera_value *merge = merge_param(p, out, &bad);
    if (bad) {
        hiera_value_decref(own);
        return;
    }
    const hiera_value *dflt = param_value(p, "default");
    const char *type = param_str(p, "type");
    hiera_value *results = hiera_value_new_hash(), *errors = hiera_value_new_hash();
    double deadline = mono_now() + (rq->o->request_time ? rq->o->request_time : 60);
    for (size_t i = 0; i < nn; i++) {
        const char *node = hiera_value_string(hiera_value_array_get(nodes, i));
        if (!valid_node(node)) {
            reply_error(out, 400, "invalid node name in \"nodes\" (letters, digits, '.', '-' and '_')");
            goto done;
        }
        int status = 403;
        int access = access_to(rq, node, &status);
        if (!access) {
            reply_error(out, status, status == 401 ? "authentication required" : "a node's certificate reads only that node's answers");
            goto done;
        }
        if (mono_now() > deadline) {
            reply_error(out, 503, "the batch took longer than %u s (%zu of %zu nodes answered): ask for fewer nodes or keys",
                        rq->o->request_time, i, nn);
            goto done;
        }
        response sub = {0};
        hiera *h = context_for(rq, g, env, node, NULL, access != 2, false, &sub);
        if (!h) {
            hiera_value *m = hiera_value_from_json(sub.body, NULL);
            hiera_value_hash_set(errors, node, hiera_value_incref(hiera_value_hash_get(m, "error")));
            hiera_value_decref(m);
            free(sub.body);
            continue;
        }
        hiera_value *row = hiera_value_new_hash(), *row_err = NULL;
        for (size_t k = 0; k < nk; k++) {
            const char *key = hiera_value_string(hiera_value_array_get(keys, k));
            if (!key)
                continue;
            hiera_request r = HIERA_REQUEST_INIT;
            r.keys = &key;
            r.nkeys = 1;
            r.merge = merge;
            r.default_value = dflt;
            r.type = type;
            hiera_value *v = NULL;
            hiera_error err = {0};
            hiera_status st = hiera_lookup(h, &r, &v, &err);
            if (st == HIERA_OK) {
                hiera_value_hash_set(row, key, access == 2 ? unwrap(v) : hiera_value_incref(v));
                metrics_lookup(0);
            } else if (st == HIERA_ERROR) {
                if (!row_err)
                    row_err = hiera_value_new_hash();
                hiera_value_hash_set(row_err, key, hiera_value_new_string(err.message ? err.message : ""));
                metrics_lookup(2);
            } else {
                metrics_lookup(1);
            }
            hiera_value_decref(v);
            hiera_error_clear(&err);
        }
        hiera_value_hash_set(results, node, row);
        if (row_err)
            hiera_value_hash_set(errors, node, row_err);
        state_thread_context_done(h);
    }
    {
        hiera_value *all = hiera_value_new_hash();
        hiera_value_hash_set(all, "environment", hiera_value_new_string(env));
        hiera_value_hash_set(all, "results", hiera_value_incref(results));
        hiera_value_hash_set(all, "errors", hiera_value_incref(errors));
        reply_value(out, 200, all);
        hiera_value_decref(all);
    }
done:
    hiera_value_decref(results);
    hiera_value_decref(errors);
    hiera_value_decref(merge);
    hiera_value_decref(own);
}

/* GET /v1/keys: every key the node can see, with its definitions (hiera_keys) */
static void do_keys(const request *rq, const params *p, generation *g, response *out, bool with_values)
{
    bool secrets;
    const char *env, *node;
    hiera *h = open_node(rq, p, g, out, &secrets, &env, &node);
    if (!h)
        return;
    hiera_value *all = hiera_keys(h);
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "node", hiera_value_new_string(node));
    hiera_value_hash_set(res, "environment", hiera_value_new_string(env));
    const hiera_value *keys = hiera_value_hash_get(all, "keys");
    if (with_values) {
        /* GET /v1/node: each key's value (lookup_options decide the merge), with its definitions */
        hiera_value *kv = hiera_value_new_hash();
        for (size_t i = 0; i < hiera_value_hash_size(keys); i++) {
            const char *key = hiera_value_string(hiera_value_hash_key(keys, i));
            /* a key holding a dot or a quote is looked up quoted ("a.b" is b inside a) */
            char *form = hiera_key_lookup_form(key);
            const char *asked = form ? form : key;
            int status;
            hiera_value *a = lookup_answer(h, &asked, 1, NULL, NULL, NULL, false, false, secrets, &status);
            free(form);
            hiera_value_hash_set(a, "definitions", hiera_value_incref(hiera_value_hash_value(keys, i)));
            hiera_value_hash_set(kv, key, a);
        }
        hiera_value_hash_set(res, "keys", kv);
    } else {
        hiera_value_hash_set(res, "keys", hiera_value_incref((hiera_value *)keys));
    }
    hiera_value_hash_set(res, "errors", hiera_value_incref(hiera_value_hash_get(all, "errors")));
    reply_value(out, 200, res);
    hiera_value_decref(res);
    hiera_value_decref(all);
    state_thread_context_done(h);
}

static void do_hierarchy(const request *rq, const params *p, generation *g, response *out)
{
    bool secrets;
    const char *env, *node;
    hiera *h = open_node(rq, p, g, out, &secrets, &env, &node);
    if (!h)
        return;
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "node", hiera_value_new_string(node));
    hiera_value_hash_set(res, "environment", hiera_value_new_string(env));
    hiera_value_hash_set(res, "layers", hiera_hierarchy(h));
    reply_value(out, 200, res);
    hiera_value_decref(res);
    state_thread_context_done(h);
}

static void do_facts(const request *rq, const params *p, generation *g, response *out)
{
    const char *node = param_str(p, "node");
    if (!valid_node(node)) {
        reply_error(out, 400, node ? "invalid node name" : "\"node\" is required");
        return;
    }
    int status = 403;
    int access = access_to(rq, node, &status);
    if (access != 2) {
        reply_error(out, access ? 403 : status, "the facts of a node are for the node itself and admins");
        return;
    }
    const hiera_value *f = hiera_value_hash_get(g->facts, node);
    if (!f) {
        reply_error(out, 404, "unknown node '%s'", node);
        return;
    }
    reply_value(out, 200, (hiera_value *)f);
}

/* GET /v1/nodes?q=TEXT&limit=N: the nodes with facts whose names hold TEXT */
static void do_nodes(const request *rq, const params *p, generation *g, response *out)
{
    if (!may_list(rq, out))
        return;
    const char *q = param_str(p, "q");
    const char *ls = param_str(p, "limit");
    long limit = ls ? strtol(ls, NULL, 10) : 1000;
    if (limit <= 0)
        limit = 1000;
    hiera_value *list = hiera_value_new_array();
    size_t total = 0;
    for (size_t i = 0; i < hv_array_len(g->nodes); i++) {
        const char *n = hv_str_ptr(hv_array_get(g->nodes, i));
        if (rq->who.kind == WHO_NODE && strcmp(n, rq->who.name) != 0)
            continue;
        if (q && *q && !strstr(n, q))
            continue;
        if ((long)total++ < limit)
            hiera_value_array_push(list, hiera_value_new_string(n));
    }
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "nodes", list);
    hiera_value_hash_set(res, "total", hiera_value_new_int((int64_t)total));
    if (rq->who.kind != WHO_NODE)
        hiera_value_hash_set(res, "unreadable", hiera_value_incref(g->facts_errors));
    reply_value(out, 200, res);
    hiera_value_decref(res);
}

static void do_environments(const request *rq, generation *g, response *out)
{
    if (!may_list(rq, out))
        return;
    hiera_value *d = hiera_snapshot_describe(g->snap);
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "environments", hiera_value_incref(hiera_value_hash_get(d, "environments")));
    hiera_value_hash_set(res, "default", hiera_value_new_string(rq->o->environment ? rq->o->environment : "production"));
    reply_value(out, 200, res);
    hiera_value_decref(res);
    hiera_value_decref(d);
}

/* hiera check over the served tree (every environment, or env), as the JSON answer of
 * /v1/check; NULL with *error (malloc'ed) when the check cannot run. */
static char *run_check(const request *rq, generation *g, const char *env, char **error)
{
    check_options co = {0};
    co.codedir = rq->o->codedir;
    co.confdir = rq->o->confdir;
    co.environmentpath = rq->o->environmentpath;
    co.hiera_config = rq->o->hiera_config;
    co.environment = env;
    co.all_environments = env == NULL;
    co.jobs = 1; /* a server thread: the others go on answering */
    check_report rep = {0};
    if (check_run(&co, &rep, error) != 0)
        return NULL;
    hv *res = hv_hash(), *findings = hv_array();
    size_t errors = 0, warnings = 0;
    for (size_t i = 0; i < rep.n; i++) {
        const check_finding *f = &rep.v[i];
        hv *x = hv_hash();
        hv_hash_sets(x, "rule", hv_str(f->rule));
        hv_hash_sets(x, "severity", hv_str(f->severity == CHECK_ERROR ? "error" : "warning"));
        hv_hash_sets(x, "file", hv_str(f->file ? f->file : ""));
        hv_hash_sets(x, "line", hv_int(f->line));
        hv_hash_sets(x, "column", hv_int(f->col));
        hv_hash_sets(x, "message", hv_str(f->message ? f->message : ""));
        hv_array_push(findings, x);
        if (f->severity == CHECK_ERROR)
            errors++;
        else
            warnings++;
    }
    hv_hash_sets(res, "generation", hv_int((int64_t)g->id));
    hv_hash_sets(res, "environment", env ? hv_str(env) : hv_undef());
    hv_hash_sets(res, "errors", hv_int((int64_t)errors));
    hv_hash_sets(res, "warnings", hv_int((int64_t)warnings));
    hv_hash_sets(res, "findings", findings);
    hv_hash_sets(res, "problems", hiera_snapshot_problems(g->snap));
    check_report_free(&rep);
    char *json = hiera_render(res, HIERA_RENDER_JSON, NULL);
    hv_decref(res);
    return json;
}

/* GET /v1/check[?environment=E]: hiera check's findings over the served tree (its rules, file,
 * line and column), made once per generation and environment, with the snapshot's problems. */
static void do_check(const request *rq, const params *p, generation *g, response *out)
{
    if (rq->who.kind == WHO_NODE || (rq->who.kind == WHO_ANYONE && rq->who.authenticated_required)) {
        reply_error(out, rq->who.kind == WHO_NODE ? 403 : 401, "the tree's problems are for admins");
        return;
    }
    const char *env = param_str(p, "environment");
    if (env && !valid_env(env)) {
        reply_error(out, 400, "invalid environment name (letters a-z, digits and '_')");
        return;
    }
    pthread_mutex_lock(&g->check_lock);
    if (!g->checks)
        g->checks = hv_hash();
    hv *known = hv_hash_gets(g->checks, env ? env : "");
    char *json = known ? xstrdup(hv_str_ptr(known)) : NULL;
    char *error = NULL;
    if (!json) {
        json = run_check(rq, g, env, &error);
        if (json)
            hv_hash_sets(g->checks, env ? env : "", hv_str(json));
    }
    pthread_mutex_unlock(&g->check_lock);
    if (!json) {
        reply_error(out, 422, "hiera check cannot run: %s", error ? error : "");
        free(error);
        return;
    }
    size_t n = strlen(json);
    json = xrealloc(json, n + 2);
    json[n] = '\n';
    json[n + 1] = 0;
    out->status = 200;
    out->body = json;
    out->len = n + 1;
    out->content_type = "application/json";
}

/* GET /healthz: "ok", or "degraded" when the last reload was refused (the files on disk have
 * errors the served snapshot does not); 200 either way (the last good snapshot is served), 503
 * for "degraded" with ?strict=1. */
static void do_healthz(const request *rq, generation *g, response *out)
{
    time_t at = 0;
    char *refused = state_refused(rq->st, &at);
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "status", hiera_value_new_string(refused ? "degraded" : "ok"));
    hiera_value_hash_set(res, "generation", hiera_value_new_int((int64_t)g->id));
    hiera_value_hash_set(res, "age_seconds", hiera_value_new_int((int64_t)(time(NULL) - g->built)));
    hiera_value_hash_set(res, "build_seconds", hiera_value_new_float(g->build_seconds));
    hiera_value *problems = hiera_snapshot_problems(g->snap);
    hiera_value_hash_set(res, "problems", hiera_value_new_int((int64_t)hiera_value_array_size(problems)));
    hiera_value_decref(problems);
    hiera_value_hash_set(res, "nodes", hiera_value_new_int((int64_t)hv_array_len(g->nodes)));
    if (refused) {
        hiera_value *r = hiera_value_from_json(refused, NULL);
        hiera_value_hash_set(res, "refused_reload", r ? r : hiera_value_new_array());
        hiera_value_hash_set(res, "refused_seconds_ago", hiera_value_new_int((int64_t)(time(NULL) - at)));
    }
    const char *strict = rq->arg(rq->conn, "strict");
    reply_value(out, refused && strict && strcmp(strict, "0") ? 503 : 200, res);
    hiera_value_decref(res);
    free(refused);
}

/* ------------------------------------------------------------------ the router */

static bool is(const char *path, const char *route) { return strcmp(path, route) == 0; }

void route(const request *rq, response *out, const char **endpoint)
{
    const char *path = rq->path;
    bool get = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    bool post = strcmp(rq->method, "POST") == 0;
    out->cache_control = NULL;
    /* the page */
    for (size_t i = 0; i < SERVE_NASSETS; i++)
        if (is(path, SERVE_ASSETS[i].path) || (is(path, "/index.html") && is(SERVE_ASSETS[i].path, "/"))) {
            *endpoint = "page";
            if (!get) {
                reply_error(out, 405, "only GET");
                return;
            }
            out->status = 200;
            out->body = xmalloc(SERVE_ASSETS[i].len + 1);
            memcpy(out->body, SERVE_ASSETS[i].data, SERVE_ASSETS[i].len);
            out->len = SERVE_ASSETS[i].len;
            out->content_type = SERVE_ASSETS[i].content_type;
            out->cache_control = "no-cache";
            return;
        }
    if (is(path, "/metrics")) {
        *endpoint = "metrics";
        out->status = 200;
        out->body = metrics_render(rq->st, &out->len);
        out->content_type = "text/plain; version=0.0.4";
        return;
    }
    generation *g = state_current(rq->st);
    if (is(path, "/v1/edit")) {
        *endpoint = "edit";
        serve_edit(rq, g, out);
        generation_release(g);
        return;
    }
    params p = {rq, NULL};
    if (post) {
        hiera_error err = {0};
        p.body = rq->body_len ? hiera_value_from_json(rq->body, &err) : NULL;
        if (!p.body || hiera_value_kind(p.body) != HIERA_HASH) {
            *endpoint = "other";
            reply_error(out, 400, "the request body must be a JSON object%s%s", err.message ? ": " : "",
                        err.message ? err.message : "");
            hiera_error_clear(&err);
            hiera_value_decref(p.body);
            generation_release(g);
            return;
        }
    }
    static const struct {
        const char *path, *endpoint;
        bool allow_post;
    } api[] = {
        {"/healthz", "healthz", false}, {"/v1/lookup", "lookup", true}, {"/v1/batch", "batch", true},
        {"/v1/keys", "keys", true},     {"/v1/node", "node", true},     {"/v1/hierarchy", "hierarchy", true},
        {"/v1/nodes", "nodes", false},  {"/v1/facts", "facts", false},  {"/v1/environments", "environments", false},
        {"/v1/check", "check", false},
    };
    size_t which = sizeof api / sizeof *api;
    for (size_t i = 0; i < sizeof api / sizeof *api; i++)
        if (is(path, api[i].path))
            which = i;
    if (which == sizeof api / sizeof *api) {
        *endpoint = "other";
        reply_error(out, 404, "no such page: the API is under /v1 (see the README), the page at /");
    } else if (!(get || (post && api[which].allow_post)) || (is(path, "/v1/batch") && !post)) {
        *endpoint = api[which].endpoint;
        reply_error(out, 405, "%s takes %s", path, is(path, "/v1/batch") ? "POST" : api[which].allow_post ? "GET or POST" : "GET");
    } else {
        *endpoint = api[which].endpoint;
        switch (which) {
        case 0: do_healthz(rq, g, out); break;
        case 1: do_lookup(rq, &p, g, out); break;
        case 2: do_batch(rq, &p, g, out); break;
        case 3: do_keys(rq, &p, g, out, false); break;
        case 4: do_keys(rq, &p, g, out, true); break;
        case 5: do_hierarchy(rq, &p, g, out); break;
        case 6: do_nodes(rq, &p, g, out); break;
        case 7: do_facts(rq, &p, g, out); break;
        case 8: do_environments(rq, g, out); break;
        default: do_check(rq, &p, g, out); break;
        }
    }
    hiera_value_decref(p.body);
    generation_release(g);
}
