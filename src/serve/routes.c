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

env_build *serve_env_or_reply(const request *rq, generation *g, const char *env, response *out)
{
    int status = 422;
    char *why = NULL;
    env_build *b = state_env(rq->st, g, env, &status, &why);
    if (!b) {
        reply_error(out, status, "%s", why ? why : "no such environment");
        free(why);
    }
    return b;
}

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

/* What each field of a lookup's request body must be (serve_field): a field of another type is
 * refused (400, naming it), so is a string with a control character in a name. */
#define F_STRING SERVE_F_STRING
#define F_STRINGS SERVE_F_STRINGS
#define F_HASH SERVE_F_HASH
#define F_BOOL SERVE_F_BOOL
#define F_ANY SERVE_F_ANY
#define F_INT SERVE_F_INT
static const serve_field BODY_FIELDS[] = {
    {"node", F_STRING, true},     {"environment", F_STRING, true}, {"key", F_STRING, true},
    {"keys", F_STRINGS, true},    {"nodes", F_STRINGS, true},      {"merge", F_STRING | F_HASH, true},
    {"type", F_STRING, false},    {"default", F_ANY, false},       {"explain", F_BOOL, false},
    {"provenance", F_BOOL, false}, {"facts", F_HASH, false},       {"q", F_STRING, false},
    {"limit", F_INT, false},
};

static bool has_control(const hiera_value *v)
{
    const char *t = hiera_value_string(v);
    size_t n = hiera_value_string_length(v);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
            return true;
    return false;
}

static const char *type_words(unsigned types)
{
    switch (types) {
    case F_STRING: return "a string";
    case F_STRINGS: return "a list of strings";
    case F_HASH: return "a JSON object";
    case F_BOOL: return "true or false";
    case F_INT: return "an integer";
    case F_STRING | F_HASH: return "a strategy name or a JSON object with a \"strategy\"";
    default: return "another type";
    }
}

/* What a JSON value is, in the words of JSON. */
static const char *json_kind(const hiera_value *v)
{
    switch (hiera_value_kind(v)) {
    case HIERA_UNDEF: return "null";
    case HIERA_BOOLEAN: return "a boolean";
    case HIERA_INTEGER: case HIERA_BIGINT: case HIERA_FLOAT: return "a number";
    case HIERA_STRING: return "a string";
    case HIERA_ARRAY: return "a list";
    case HIERA_HASH: return "an object";
    default: return "something else";
    }
}

/* The merge hash of a request checked (its options' types), 0 when fine, else 400 given. */
static bool bad_merge_hash(const hiera_value *m, response *out)
{
    static const struct {
        const char *name;
        hiera_kind kind;
    } opts[] = {{"strategy", HIERA_STRING}, {"knockout_prefix", HIERA_STRING}, {"sort_merged_arrays", HIERA_BOOLEAN},
                {"merge_hash_arrays", HIERA_BOOLEAN}};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        const hiera_value *v = hiera_value_hash_get(m, opts[i].name);
        if (v && hiera_value_kind(v) != opts[i].kind) {
            reply_error(out, 400, "\"merge.%s\" must be %s", opts[i].name, opts[i].kind == HIERA_STRING ? "a string" : "true or false");
            return true;
        }
        if (v && opts[i].kind == HIERA_STRING && has_control(v)) {
            reply_error(out, 400, "\"merge.%s\" holds a control character", opts[i].name);
            return true;
        }
    }
    if (!hiera_value_hash_get(m, "strategy")) {
        reply_error(out, 400, "\"merge\" as an object needs a \"strategy\" ('first', 'hash', 'unique' or 'deep')");
        return true;
    }
    return false;
}

bool serve_body_fields_ok(const hiera_value *body, const serve_field *fields, size_t n, response *out)
{
    for (size_t i = 0; i < n; i++) {
        const hiera_value *v = hiera_value_hash_get(body, fields[i].name);
        if (!v)
            continue;
        unsigned t = fields[i].types;
        hiera_kind k = hiera_value_kind(v);
        bool ok = (t & F_ANY) || ((t & F_STRING) && k == HIERA_STRING) || ((t & F_HASH) && k == HIERA_HASH) ||
                  ((t & F_BOOL) && k == HIERA_BOOLEAN) || ((t & F_INT) && k == HIERA_INTEGER);
        if (!ok && (t & F_STRINGS) && k == HIERA_ARRAY) {
            ok = true;
            for (size_t j = 0; j < hiera_value_array_size(v) && ok; j++)
                ok = hiera_value_kind(hiera_value_array_get(v, j)) == HIERA_STRING;
        }
        if (!ok) {
            reply_error(out, 400, "\"%s\" must be %s, not %s", fields[i].name, type_words(t),
                        k == HIERA_ARRAY && (t & F_STRINGS) ? "a list holding something else" : json_kind(v));
            return false;
        }
        if (fields[i].name_like) {
            bool ctl = k == HIERA_STRING && has_control(v);
            for (size_t j = 0; k == HIERA_ARRAY && j < hiera_value_array_size(v) && !ctl; j++)
                ctl = has_control(hiera_value_array_get(v, j));
            if (ctl) {
                reply_error(out, 400, "\"%s\" holds a control character", fields[i].name);
                return false;
            }
        }
        if (k == HIERA_HASH && !strcmp(fields[i].name, "merge") && bad_merge_hash(v, out))
            return false;
    }
    return true;
}

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
        return hiera_value_kind(v) == HIERA_BOOLEAN && hiera_value_bool(v); /* (checked: a boolean) */
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
    hiera_value *read_now = NULL;
    if (!facts) {
        facts = hiera_value_hash_get(g->facts, node);
        stored = facts && hiera_value_hash_get(g->facts_stored, node);
    }
    if (!facts && state_facts_loading(g)) {
        /* the facts folder is being read: the node's own file, now (a context not kept) */
        char *error = NULL;
        facts = read_now = state_node_facts_now(rq->st, node, &stored, &error);
        own = false;
        if (error) {
            reply_error(out, 422, "the facts of node '%s' cannot be read: %s", node, error);
            free(error);
            return NULL;
        }
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
    env_build *b = serve_env_or_reply(rq, g, env, out);
    if (!b) {
        hiera_value_decref(read_now);
        return NULL;
    }
    if (own) {
        hiera *kept = state_thread_context(b, g->fs, node, redact);
        if (kept) {
            env_build_release(b); /* (the thread's cache over it holds it) */
            return kept;
        }
    }
    hiera_options o = HIERA_OPTIONS_INIT;
    o.settings = b->settings->s;
    o.env = b->env; /* settings, folders and modulepath loaded once per build of the environment */
    o.node = node;
    if (stored)
        o.base_facts = facts; /* a file of Puppet's facts cache: the node's stored facts */
    else
        o.facts = facts;
    o.cache = state_thread_cache(b); /* (the thread's cache over b holds b from now on) */
    o.unsafe_fact_paths = rq->o->unsafe_fact_paths;
    o.redact_encrypted = redact;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        reply_error(out, 422, "%s", err.message ? err.message : "cannot look up for this node");
    else if (own)
        state_thread_context_keep(b, g->fs, h, node, redact);
    hiera_error_clear(&err);
    env_build_release(b);
    hiera_value_decref(read_now); /* (the context copied them) */
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

/* The merge parameter as `hiera lookup --merge S` (and `puppet lookup`) gives it to the lookup, so
 * that an explanation reads the same as the command's: {"strategy": S}, and for deep its options
 * (sort_merged_arrays and merge_hash_arrays, false unless asked, then knockout_prefix when given:
 * the command's --sort-merged-arrays, --merge-hash-arrays, --knock-out-prefix; in a query string
 * the parameters of those names, in a body the merge object's own). NULL when none is asked. */
static hiera_value *merge_param(const params *p, response *out, bool *bad)
{
    *bad = false;
    const hiera_value *given = param_value(p, "merge"); /* (types checked: serve_body_fields_ok) */
    const hiera_value *hash = given && hiera_value_kind(given) == HIERA_HASH ? given : NULL;
    const char *strategy = hash ? hiera_value_string(hiera_value_hash_get(hash, "strategy")) : param_str(p, "merge");
    const char *ko = hash ? NULL : param_str(p, "knockout_prefix");
    bool sort = hash ? false : param_flag(p, "sort_merged_arrays"), hash_arrays = hash ? false : param_flag(p, "merge_hash_arrays");
    if (!strategy) {
        if (ko || sort || hash_arrays) {
            reply_error(out, 400, "knockout_prefix, sort_merged_arrays and merge_hash_arrays are only available with merge=deep");
            *bad = true;
        }
        return NULL;
    }
    if (strcmp(strategy, "first") && strcmp(strategy, "unique") && strcmp(strategy, "hash") && strcmp(strategy, "deep")) {
        reply_error(out, 400, "\"merge\" only accepts 'first', 'hash', 'unique', or 'deep' (or an object with a \"strategy\")");
        *bad = true;
        return NULL;
    }
    bool deep = strcmp(strategy, "deep") == 0;
    if (!deep && (ko || sort || hash_arrays)) {
        reply_error(out, 400, "knockout_prefix, sort_merged_arrays and merge_hash_arrays are only available with merge=deep");
        *bad = true;
        return NULL;
    }
    hiera_value *m = hiera_value_new_hash();
    hiera_value_hash_set(m, "strategy", hiera_value_new_string(strategy));
    if (deep) {
        const hiera_value *v;
        if (hash && (v = hiera_value_hash_get(hash, "sort_merged_arrays")))
            sort = hiera_value_bool(v);
        if (hash && (v = hiera_value_hash_get(hash, "merge_hash_arrays")))
            hash_arrays = hiera_value_bool(v);
        if (hash && (v = hiera_value_hash_get(hash, "knockout_prefix")))
            ko = hiera_value_string(v);
        hiera_value_hash_set(m, "sort_merged_arrays", hiera_value_new_bool(sort));
        hiera_value_hash_set(m, "merge_hash_arrays", hiera_value_new_bool(hash_arrays));
        if (ko)
            hiera_value_hash_set(m, "knockout_prefix", hiera_value_new_string(ko));
    }
    /* other options of an object: the lookup judges them, as Puppet would */
    for (size_t i = 0; hash && i < hiera_value_hash_size(hash); i++) {
        const hiera_value *k = hiera_value_hash_key(hash, i);
        if (hiera_value_kind(k) == HIERA_STRING && !hiera_value_hash_get(m, hiera_value_string(k)))
            hv_hash_set(m, hv_incref((hv *)k), hv_incref(hiera_value_hash_value(hash, i)));
    }
    return m;
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
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "environments", state_env_names(g));
    hiera_value_hash_set(res, "default", hiera_value_new_string(rq->o->environment ? rq->o->environment : "production"));
    reply_value(out, 200, res);
    hiera_value_decref(res);
}

/* The problems of the snapshots of env (built now if it is not), or of every environment built so
 * far (env NULL): a new array. */
static hv *built_problems(const request *rq, generation *g, const char *env)
{
    hv *all = hv_array();
    if (env) {
        int status;
        char *why = NULL;
        env_build *b = state_env(rq->st, g, env, &status, &why);
        free(why);
        if (b) {
            hiera_value *p = hiera_snapshot_problems(b->snap);
            for (size_t i = 0; i < hv_array_len(p); i++)
                hv_array_push(all, hv_deep_copy(hv_array_get(p, i)));
            hiera_value_decref(p);
            env_build_release(b);
        }
        return all;
    }
    hv *seen = hv_hash();
    pthread_mutex_lock(&g->envs_lock);
    for (size_t i = 0; i < g->nenvs; i++) {
        pthread_mutex_lock(&g->envs[i]->lock);
        env_build *b = g->envs[i]->built;
        hiera_value *p = b ? hiera_snapshot_problems(b->snap) : NULL;
        for (size_t k = 0; k < hv_array_len(p); k++) {
            /* (the global layer's problems are in every environment's snapshot: once) */
            char *key = hiera_render(hv_array_get(p, k), HIERA_RENDER_JSON, NULL);
            if (key && !hv_hash_gets(seen, key)) {
                hv_hash_sets(seen, key, hv_true());
                hv_array_push(all, hv_deep_copy(hv_array_get(p, k)));
            }
            free(key);
        }
        hiera_value_decref(p);
        pthread_mutex_unlock(&g->envs[i]->lock);
    }
    pthread_mutex_unlock(&g->envs_lock);
    hv_decref(seen);
    return all;
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
        hv_hash_sets(x, "severity", hv_str(check_severity_name(f->severity)));
        hv_hash_sets(x, "file", hv_str(f->file ? f->file : ""));
        hv_hash_sets(x, "line", hv_int(f->line));
        hv_hash_sets(x, "column", hv_int(f->col));
        hv_hash_sets(x, "message", hv_str(f->message ? f->message : ""));
        hv_array_push(findings, x);
        if (f->severity == CHECK_ERROR)
            errors++;
        else if (f->severity == CHECK_WARNING)
            warnings++;
    }
    hv_hash_sets(res, "generation", hv_int((int64_t)g->id));
    hv_hash_sets(res, "environment", env ? hv_str(env) : hv_undef());
    hv_hash_sets(res, "errors", hv_int((int64_t)errors));
    hv_hash_sets(res, "warnings", hv_int((int64_t)warnings));
    hv_hash_sets(res, "findings", findings);
    hv_hash_sets(res, "problems", built_problems(rq, g, env));
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
    state_status ss;
    state_status_of(rq->st, &ss);
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "status", hiera_value_new_string(ss.refused ? "degraded" : ss.pending ? "pending" : "ok"));
    hiera_value_hash_set(res, "generation", hiera_value_new_int((int64_t)g->id));
    char when[32];
    struct tm tm;
    gmtime_r(&g->built, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    hiera_value_hash_set(res, "built_at", hiera_value_new_string(when));
    hiera_value_hash_set(res, "age_seconds", hiera_value_new_int((int64_t)(time(NULL) - g->built)));
    hiera_value_hash_set(res, "build_seconds", hiera_value_new_float(g->build_seconds));
    hiera_value_hash_set(res, "pending_changes", hiera_value_new_int((int64_t)ss.pending));
    hiera_value_hash_set(res, "pending_seconds", hiera_value_new_float(ss.pending_seconds));
    hv *problems = built_problems(rq, g, NULL);
    hiera_value_hash_set(res, "problems", hiera_value_new_int((int64_t)hv_array_len(problems)));
    hv_decref(problems);
    hiera_value_hash_set(res, "nodes", hiera_value_new_int((int64_t)hv_array_len(g->nodes)));
    hiera_value *envs = hiera_value_new_hash();
    hiera_value_hash_set(envs, "listed", hiera_value_new_int((int64_t)ss.envs_listed));
    hiera_value_hash_set(envs, "built", hiera_value_new_int((int64_t)ss.envs_built));
    hiera_value_hash_set(res, "environments", envs);
    hiera_value *mem = hiera_value_new_hash();
    hiera_value_hash_set(mem, "parses", hiera_value_new_int((int64_t)ss.parses));
    hiera_value_hash_set(mem, "parse_bytes", hiera_value_new_int((int64_t)ss.parse_bytes));
    hiera_value_hash_set(mem, "environment_bytes", hiera_value_new_int((int64_t)ss.env_bytes));
    hiera_value_hash_set(res, "memory", mem);
    if (ss.refused) {
        hiera_value *r = hiera_value_from_json(ss.refused, NULL);
        hiera_value_hash_set(res, "refused_reload", r ? r : hiera_value_new_array());
        hiera_value_hash_set(res, "refused_seconds_ago", hiera_value_new_int((int64_t)(time(NULL) - ss.refused_at)));
    }
    const char *strict = rq->arg(rq->conn, "strict");
    reply_value(out, ss.refused && strict && strcmp(strict, "0") ? 503 : 200, res);
    hiera_value_decref(res);
    free(ss.refused);
}

/* ------------------------------------------------------------------ the router */

static bool is(const char *path, const char *route) { return strcmp(path, route) == 0; }

static void h_healthz(const request *rq, const params *p, generation *g, response *out) { (void)p; do_healthz(rq, g, out); }
static void h_keys(const request *rq, const params *p, generation *g, response *out) { do_keys(rq, p, g, out, false); }
static void h_node(const request *rq, const params *p, generation *g, response *out) { do_keys(rq, p, g, out, true); }
static void h_environments(const request *rq, const params *p, generation *g, response *out)
{
    (void)p;
    do_environments(rq, g, out);
}

/* The API: a path, the methods it takes, the endpoint's name (metrics), and what answers it. */
enum { M_GET = 1, M_POST = 2 };
typedef struct {
    const char *path, *endpoint;
    unsigned methods;
    void (*fn)(const request *rq, const params *p, generation *g, response *out);
    bool all_facts; /* answers from every node's facts: waits for the facts folder to be read */
} route_entry;
static const route_entry API[] = {
    {"/healthz", "healthz", M_GET, h_healthz, false},
    {"/v1/lookup", "lookup", M_GET | M_POST, do_lookup, false},
    {"/v1/batch", "batch", M_POST, do_batch, true},
    {"/v1/keys", "keys", M_GET | M_POST, h_keys, false},
    {"/v1/node", "node", M_GET | M_POST, h_node, false},
    {"/v1/hierarchy", "hierarchy", M_GET | M_POST, do_hierarchy, false},
    {"/v1/nodes", "nodes", M_GET, do_nodes, true},
    {"/v1/facts", "facts", M_GET, do_facts, true},
    {"/v1/environments", "environments", M_GET, h_environments, false},
    {"/v1/check", "check", M_GET, do_check, false},
};

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
    if (p.body && !serve_body_fields_ok(p.body, BODY_FIELDS, sizeof BODY_FIELDS / sizeof *BODY_FIELDS, out)) {
        *endpoint = "other";
        for (size_t i = 0; i < sizeof API / sizeof *API; i++)
            if (is(path, API[i].path))
                *endpoint = API[i].endpoint;
        hiera_value_decref(p.body);
        generation_release(g);
        return;
    }
    const route_entry *r = NULL;
    for (size_t i = 0; i < sizeof API / sizeof *API && !r; i++)
        if (is(path, API[i].path))
            r = &API[i];
    if (!r) {
        *endpoint = "other";
        reply_error(out, 404, "no such page: the API is under /v1 (see the README), the page at /");
    } else if (!((get && (r->methods & M_GET)) || (post && (r->methods & M_POST)))) {
        *endpoint = r->endpoint;
        reply_error(out, 405, "%s takes %s", path, r->methods == M_POST ? "POST" : r->methods & M_POST ? "GET or POST" : "GET");
    } else {
        *endpoint = r->endpoint;
        if (r->all_facts && state_facts_loading(g)) {
            generation_release(g);
            state_wait_facts(rq->st);
            g = state_current(rq->st);
        }
        r->fn(rq, &p, g, out);
    }
    hiera_value_decref(p.body);
    generation_release(g);
}
