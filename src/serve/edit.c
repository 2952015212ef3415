/* edit.c - changing data through `hiera serve` (serve.h: serve_edit): /v1/edit.
 *
 * Off unless the command was given --allow-edits (serve_options.edits), and then for admins only
 * (an admin certificate or the bearer token): anybody else gets 403 and the page shows them no
 * edit control.
 *
 *   GET  /v1/edit                          {"edits": bool, "who", "why"?}: whether the caller may edit
 *                                          (anybody may ask; every other use is 403 for non-admins)
 *   GET  /v1/edit?node=N&key=K             the levels the node reads, each with the file it
 *                                          resolves to (existing or not), whether it can be edited
 *                                          (or why not), the key's value there and the file's digest
 *   POST /v1/edit {"environment", "node" + "level" (+ "module") | "file", "key",
 *                  "value" (JSON) | "yaml" (text) | "unset": true, "encrypt", "base", "dry_run",
 *                  "effects"}
 *        -> 200 {"diff", "changed", "written", "base", "digest", "impact", "findings", ...}
 *           409 {"error", "current"}: the file is no longer the version "base" names
 *           422 {"error": {"message", "file", "line"}}: the edit is refused
 *
 * The edit itself is the library's (hiera_edit_text: only the entry's bytes change); what it does
 * to the fleet and to hiera check comes from the command (serve_options.edits->effects: hiera
 * diff's fast path over the served nodes). Saves are made one at a time (a lock here, and the
 * library's lock on the file's folder against other processes): each lands or gets 409, none is
 * lost. A save is written to the audit log, committed when asked (--edits-commit), and the served
 * snapshot is rebuilt before the answer, so the next request sees the change. */
#include "serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

static pthread_mutex_t edit_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ answers */

/* 422 with where and why */
static void refused(response *out, const hiera_error *err)
{
    hiera_value *e = hiera_value_new_hash(), *x = hiera_value_new_hash();
    hiera_value_hash_set(x, "message", hiera_value_new_string(err->message ? err->message : "the edit is refused"));
    if (err->file)
        hiera_value_hash_set(x, "file", hiera_value_new_string(err->file));
    if (err->line)
        hiera_value_hash_set(x, "line", hiera_value_new_int(err->line));
    hiera_value_hash_set(e, "error", x);
    serve_reply(out, 422, e);
    hiera_value_decref(e);
}

static const char *str_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
}

static bool flag_of(const hiera_value *h, const char *key, bool dflt)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_BOOLEAN ? hiera_value_bool(v) : dflt;
}

/* Puppet's names: an environment /\A[a-z0-9_]+\z/, a node's certname (no path in it) */
static bool name_ok(const char *s, bool node)
{
    if (!s || !*s || strlen(s) > 255 || s[0] == '.')
        return false;
    for (const char *p = s; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
                  (node && ((*p >= 'A' && *p <= 'Z') || *p == '.' || *p == '-'));
        if (!ok)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ contexts and files */

/* A context for node in env (the generation's facts; without a node, no facts: a level's file
 * that interpolates nothing, or a file's levels). NULL after replying. */
static hiera *context(const request *rq, generation *g, const char *env, const char *node, response *out)
{
    bool stored = false;
    hiera_value *read_now = NULL;
    const hiera_value *facts = NULL;
    if (node) {
        facts = hiera_value_hash_get(g->facts, node);
        stored = facts && hiera_value_hash_get(g->facts_stored, node);
        if (!facts && state_facts_loading(g)) {
            /* the facts folder is being read: the node's own file, now */
            char *error = NULL;
            facts = read_now = state_node_facts_now(rq->st, node, &stored, &error);
            if (error) {
                serve_reply_error(out, 422, "the facts of node '%s' cannot be read: %s", node, error);
                free(error);
                return NULL;
            }
        }
        if (!facts) {
            const hiera_value *err = hiera_value_hash_get(g->facts_errors, node);
            serve_reply_error(out, err ? 422 : 404, "%s '%s'%s%s", err ? "the facts of node" : "unknown node", node,
                              err ? ": " : "", err ? hiera_value_string(err) : "");
            return NULL;
        }
    }
    env_build *b = serve_env_or_reply(rq, g, env, out);
    if (!b) {
        hiera_value_decref(read_now);
        return NULL;
    }
    hiera_options o = HIERA_OPTIONS_INIT;
    o.settings = b->settings->s;
    o.env = b->env;
    o.node = node;
    if (stored)
        o.base_facts = facts;
    else
        o.facts = facts;
    o.cache = state_thread_cache(b); /* (the thread's cache over b holds b from now on) */
    o.unsafe_fact_paths = rq->o->unsafe_fact_paths;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        serve_reply_error(out, 422, "%s", err.message ? err.message : "cannot look up for this node");
    hiera_error_clear(&err);
    env_build_release(b);
    hiera_value_decref(read_now); /* (the context copied them) */
    return h;
}

/* Whether path (absolute, resolved) lies in one of the served folders. */
static bool served_path(const request *rq, const hiera_environment *e, const char *path)
{
    const char *roots[2] = {hiera_environment_dir(e), rq->o->codedir};
    for (int i = 0; i < 2; i++) {
        char *r = roots[i] ? realpath(roots[i], NULL) : NULL;
        size_t n = r ? strlen(r) : 0;
        bool in = r && !strncmp(path, r, n) && path[n] == '/';
        free(r);
        if (in)
            return true;
    }
    return false;
}

/* The file an edit names: node + level (+ module), or "file" (relative to the environment's
 * folder, in the served tree, a level of the environment reading it). A new hash as
 * hiera_edit_target gives it, or NULL after replying. */
static hiera_value *target_of(const request *rq, generation *g, const hiera_value *body, const char *env, response *out)
{
    const char *node = str_of(body, "node"), *level = str_of(body, "level"), *module = str_of(body, "module");
    const char *file = str_of(body, "file");
    if (!file == !level) {
        serve_reply_error(out, 400, "give \"file\" or \"level\" (with the \"node\" whose file it is)");
        return NULL;
    }
    if (node && !name_ok(node, true)) {
        serve_reply_error(out, 400, "invalid node name");
        return NULL;
    }
    hiera *h = context(rq, g, env, level ? node : NULL, out);
    if (!h)
        return NULL;
    hiera_error err = {0};
    hiera_value *t = NULL;
    if (level) {
        t = hiera_edit_target(h, module, level, &err);
        if (!t)
            refused(out, &err);
        else if (!node && hiera_value_bool(hiera_value_hash_get(t, "node_variables"))) {
            serve_reply_error(out, 400, "level '%s' names its file with variables: give the \"node\" whose file it is", level);
            hiera_value_decref(t);
            t = NULL;
        }
    } else {
        env_build *b = serve_env_or_reply(rq, g, env, out);
        if (!b) { /* (gone since context() found it) */
            hiera_free(h);
            return NULL;
        }
        const hiera_environment *e = b->env;
        char *joined = file[0] == '/' ? xstrdup(file) : xjoin(hiera_environment_dir(e) ? hiera_environment_dir(e) : "/", "/", file, NULL);
        /* the folder must exist and be served (no "..", no link out of the tree) */
        char *slash = strrchr(joined, '/');
        *slash = 0;
        char *dir = realpath(joined[0] ? joined : "/", NULL);
        char *path = dir ? xjoin(dir, "/", slash + 1, NULL) : NULL;
        char *real = path ? realpath(path, NULL) : NULL;
        if (!path || (real && strcmp(real, path) != 0) || !served_path(rq, e, path) || !strcmp(slash + 1, "..") ||
            !strcmp(slash + 1, ".")) {
            serve_reply_error(out, 400, "\"file\" must name a data file in the environment's folder or the code directory");
        } else {
            hiera_value *levels = hiera_edit_file_levels(h, path);
            if (!hiera_value_array_size(levels))
                serve_reply_error(out, 422, "no level of environment %s reads %s", env, path);
            else
                t = hiera_value_incref(hiera_value_array_get(levels, 0));
            hiera_value_decref(levels);
        }
        free(real);
        free(path);
        free(dir);
        free(joined);
        env_build_release(b);
    }
    hiera_error_clear(&err);
    hiera_free(h);
    return t;
}

/* ------------------------------------------------------------------ the audit log */

static void audit(const request *rq, const char *env, const hiera_value *t, const char *key, bool unset, const char *before,
                  const char *after, const hiera_value *old_value, const hiera_value *value, bool secret)
{
    const char *log = rq->o->edits->audit_log;
    if (!log)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char ts[64];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    hiera_value *line = hiera_value_new_hash();
    hiera_value_hash_set(line, "time", hiera_value_new_string(ts));
    hiera_value_hash_set(line, "who", hiera_value_new_string(rq->who.name[0] ? rq->who.name : "anonymous"));
    hiera_value_hash_set(line, "environment", hiera_value_new_string(env));
    hiera_value_hash_set(line, "file", hiera_value_new_string(str_of(t, "path")));
    hiera_value_hash_set(line, "level", hiera_value_new_string(str_of(t, "level") ? str_of(t, "level") : ""));
    hiera_value_hash_set(line, "key", hiera_value_new_string(key));
    hiera_value_hash_set(line, "action", hiera_value_new_string(unset ? "unset" : "set"));
    hiera_value_hash_set(line, "before", before && *before ? hiera_value_new_string(before) : hiera_value_undef());
    hiera_value_hash_set(line, "after", hiera_value_new_string(after));
    if (secret) {
        hiera_value_hash_set(line, "values", hiera_value_new_string("not logged (encrypted or Sensitive)"));
    } else {
        hiera_value_hash_set(line, "old", old_value ? hiera_value_incref((hiera_value *)old_value) : hiera_value_undef());
        if (!unset)
            hiera_value_hash_set(line, "new", hiera_value_incref((hiera_value *)value));
    }
    char *text = hiera_render(line, HIERA_RENDER_JSON, NULL);
    hiera_value_decref(line);
    if (!text)
        return;
    sbuf b = {0};
    sb_adds(&b, text);
    sb_addc(&b, '\n');
    free(text);
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 || write(fd, b.s, b.len) != (ssize_t)b.len)
        fprintf(stderr, "hiera serve: cannot write the audit log %s: %s\n", log, strerror(errno));
    if (fd >= 0)
        close(fd);
    sb_free(&b);
}

/* A value that must not be written down: an eyaml block, or a key converted to Sensitive. */
static bool holds_secret(const hiera_value *v)
{
    if (!v)
        return false;
    switch (hiera_value_kind(v)) {
    case HIERA_SENSITIVE: return true;
    case HIERA_STRING: return strstr(hiera_value_string(v), "ENC[") != NULL;
    case HIERA_ARRAY:
        for (size_t i = 0; i < hiera_value_array_size(v); i++)
            if (holds_secret(hiera_value_array_get(v, i)))
                return true;
        return false;
    case HIERA_HASH:
        for (size_t i = 0; i < hiera_value_hash_size(v); i++)
            if (holds_secret(hiera_value_hash_value(v, i)))
                return true;
        return false;
    default: return false;
    }
}

static bool sensitive_key(const request *rq, generation *g, const char *env, const char *node, const char *key)
{
    response ignored = {0};
    hiera *h = context(rq, g, env, node, &ignored);
    free(ignored.body);
    if (!h)
        return false;
    hiera_value *v = NULL;
    hiera_error err = {0};
    char *root = xstrndup(key, strcspn(key, "."));
    bool s = hiera_lookup_key(h, root, &v, &err) == HIERA_OK && hiera_value_kind(v) == HIERA_SENSITIVE;
    free(root);
    hiera_value_decref(v);
    hiera_error_clear(&err);
    hiera_free(h);
    return s;
}

/* ------------------------------------------------------------------ GET: the levels of a key */

static void levels_of_key(const request *rq, generation *g, const char *env, const char *node, const char *key,
                          response *out)
{
    hiera *h = context(rq, g, env, node, out);
    if (!h)
        return;
    hiera_value *layers = hiera_hierarchy(h), *list = hiera_value_new_array();
    size_t klen = strlen(key);
    for (size_t i = 0; i < hiera_value_array_size(layers); i++) {
        const hiera_value *l = hiera_value_array_get(layers, i);
        const char *layer = str_of(l, "layer"), *module = str_of(l, "module");
        /* a module's data answers only for its namespace */
        if (module && (strncmp(key, module, strlen(module)) || strncmp(key + strlen(module), "::", 2)))
            continue;
        const hiera_value *levels = hiera_value_hash_get(l, "levels");
        for (size_t j = 0; j < hiera_value_array_size(levels); j++) {
            const char *name = str_of(hiera_value_array_get(levels, j), "name");
            hiera_value *d = hiera_value_new_hash();
            hiera_value_hash_set(d, "layer", hiera_value_new_string(layer ? layer : ""));
            if (module)
                hiera_value_hash_set(d, "module", hiera_value_new_string(module));
            hiera_value_hash_set(d, "level", hiera_value_new_string(name ? name : ""));
            hiera_error err = {0};
            hiera_value *t = hiera_edit_target(h, module, name ? name : "", &err);
            /* (a global level shadowed by an environment level of the same name is not this one) */
            if (t && strcmp(str_of(t, "layer"), layer ? layer : "") != 0) {
                hiera_value_decref(t);
                t = NULL;
                hiera_error_clear(&err);
                err.message = xstrdup("another layer has a level of the same name");
            }
            hiera_value_hash_set(d, "editable", hiera_value_new_bool(t != NULL));
            if (!t) {
                hiera_value_hash_set(d, "why", hiera_value_new_string(err.message ? err.message : ""));
                hiera_error_clear(&err);
                hiera_value_array_push(list, d);
                continue;
            }
            const char *path = str_of(t, "path");
            hiera_value_hash_set(d, "path", hiera_value_new_string(path));
            hiera_value_hash_set(d, "exists", hiera_value_new_bool(hiera_value_bool(hiera_value_hash_get(t, "exists"))));
            hiera_value_hash_set(d, "eyaml", hiera_value_new_bool(hiera_value_hash_get(t, "eyaml") != NULL));
            char *text = NULL;
            size_t len = 0;
            hiera_status rs = hiera_file_read_text(path, &text, &len, &err);
            if (rs != HIERA_ERROR) {
                char *dg = rs == HIERA_OK ? hiera_text_digest(text, len) : NULL;
                hiera_value_hash_set(d, "digest", dg ? hiera_value_new_string(dg) : hiera_value_new_string(""));
                free(dg);
                hiera_value *doc = rs == HIERA_OK ? hiera_value_from_yaml(text, len, &err) : NULL;
                const hiera_value *v = doc && hiera_value_kind(doc) == HIERA_HASH ? hiera_value_hash_get(doc, key) : NULL;
                hiera_value_hash_set(d, "found", hiera_value_new_bool(v != NULL));
                if (v && holds_secret(v))
                    hiera_value_hash_set(d, "encrypted", hiera_value_new_bool(true));
                else if (v)
                    hiera_value_hash_set(d, "value", hiera_value_incref((hiera_value *)v));
                if (!doc && rs == HIERA_OK)
                    hiera_value_hash_set(d, "why", hiera_value_new_string(err.message ? err.message : "it does not parse"));
                hiera_value_decref(doc);
            }
            free(text);
            hiera_error_clear(&err);
            hiera_value_decref(t);
            hiera_value_array_push(list, d);
        }
    }
    (void)klen;
    hiera_value *res = hiera_value_new_hash();
    hiera_value_hash_set(res, "node", node ? hiera_value_new_string(node) : hiera_value_undef());
    hiera_value_hash_set(res, "environment", hiera_value_new_string(env));
    hiera_value_hash_set(res, "key", hiera_value_new_string(key));
    hiera_value_hash_set(res, "levels", list);
    serve_reply(out, 200, res);
    hiera_value_decref(res);
    hiera_value_decref(layers);
    hiera_free(h);
}

/* ------------------------------------------------------------------ POST: an edit */

/* Whether path (resolved) lies in environment env's own folder. */
static bool under_env_dir(const request *rq, generation *g, const char *env, const char *path)
{
    int status = 0;
    char *why = NULL;
    env_build *b = state_env(rq->st, g, env, &status, &why);
    free(why);
    char *r = b && hiera_environment_dir(b->env) ? realpath(hiera_environment_dir(b->env), NULL) : NULL;
    size_t n = r ? strlen(r) : 0;
    bool in = r && !strncmp(path, r, n) && path[n] == '/';
    free(r);
    env_build_release(b);
    return in;
}

/* What each field of an edit's body must be: names without a control character (one would cut
 * a node, file or key short and edit another), the flags booleans; "value" any JSON, "yaml" text. */
static const serve_field EDIT_FIELDS[] = {
    {"environment", SERVE_F_STRING, true}, {"node", SERVE_F_STRING, true},  {"level", SERVE_F_STRING, true},
    {"module", SERVE_F_STRING, true},      {"file", SERVE_F_STRING, true},  {"key", SERVE_F_STRING, true},
    {"base", SERVE_F_STRING, true},        {"yaml", SERVE_F_STRING, false}, {"value", SERVE_F_ANY, false},
    {"unset", SERVE_F_BOOL, false},        {"encrypt", SERVE_F_BOOL, false}, {"dry_run", SERVE_F_BOOL, false},
    {"effects", SERVE_F_BOOL, false},
};

static void post_edit(const request *rq, generation *g, const hiera_value *body, response *out)
{
    if (!serve_body_fields_ok(body, EDIT_FIELDS, sizeof EDIT_FIELDS / sizeof *EDIT_FIELDS, out))
        return;
    const char *env = str_of(body, "environment");
    if (!env)
        env = rq->o->environment ? rq->o->environment : "production";
    const char *key = str_of(body, "key"), *yaml = str_of(body, "yaml"), *base = str_of(body, "base");
    const hiera_value *given = hiera_value_hash_get(body, "value");
    bool unset = flag_of(body, "unset", false), dry = flag_of(body, "dry_run", false), encrypt = flag_of(body, "encrypt", false);
    if (!name_ok(env, false)) {
        serve_reply_error(out, 400, "invalid environment name (letters a-z, digits and '_')");
        return;
    }
    if (!key || !*key) {
        serve_reply_error(out, 400, "\"key\" is required");
        return;
    }
    if (unset + (given != NULL) + (yaml != NULL) != 1) {
        serve_reply_error(out, 400, "give the new value as \"value\" (JSON) or \"yaml\" (text), or \"unset\": true");
        return;
    }
    if (!dry && !base) {
        serve_reply_error(out, 400, "\"base\" (the digest of the file the editor started from, as GET /v1/edit gives it; \"\" for a "
                       "file that does not exist) is required to save");
        return;
    }
    hiera_value *t = target_of(rq, g, body, env, out);
    if (!t)
        return;
    const char *path = str_of(t, "path");
    hiera_value *value = NULL, *doc = NULL;
    hiera_error err = {0};
    char *text = NULL, *before = NULL, *after = NULL, *diff = NULL, *block = NULL;
    size_t len = 0;
    hiera_edit_result res = {0};
    bool locked = false;
    /* the value */
    if (encrypt) {
        const char *plain = yaml ? yaml : given && hiera_value_kind(given) == HIERA_STRING ? hiera_value_string(given) : NULL;
        const hiera_value *eyaml = hiera_value_hash_get(t, "eyaml");
        if (!plain || !eyaml) {
            serve_reply_error(out, 422, !eyaml ? "\"encrypt\" needs an eyaml level (%s is read by %s)" : "\"encrypt\" takes a string%s%s",
                 eyaml ? "" : path, eyaml ? "" : str_of(t, "function"));
            goto done;
        }
        block = hiera_eyaml_encrypt(plain, strlen(plain), eyaml, &err);
        if (!block) {
            serve_reply_error(out, 422, "cannot encrypt for level '%s': %s", str_of(t, "level"), err.message ? err.message : "");
            goto done;
        }
        value = hiera_value_new_string(block);
    } else if (yaml) {
        value = hiera_value_from_yaml(yaml, strlen(yaml), &err);
        if (!value) {
            serve_reply_error(out, 400, "\"yaml\" does not parse: %s", err.message ? err.message : "");
            goto done;
        }
    } else if (given) {
        value = hiera_value_incref((hiera_value *)given);
    }
    /* a save: one at a time, from the version the editor started from */
    if (!dry) {
        pthread_mutex_lock(&edit_lock);
        locked = true;
    }
    hiera_status rs = hiera_file_read_text(path, &text, &len, &err);
    if (rs == HIERA_ERROR) {
        serve_reply_error(out, 422, "%s", err.message ? err.message : "the file cannot be read");
        goto done;
    }
    before = rs == HIERA_OK ? hiera_text_digest(text, len) : xstrdup("");
    if (base && strcmp(base, before) != 0) {
        hiera_value *e = hiera_value_new_hash();
        hiera_value_hash_set(e, "error", hiera_value_new_string("the file changed since the editor opened it (someone "
                                                                "else saved): reload it, and edit the new version"));
        hiera_value_hash_set(e, "current", hiera_value_new_string(before));
        serve_reply(out, 409, e);
        hiera_value_decref(e);
        goto done;
    }
    hiera_edit ed = HIERA_EDIT_INIT;
    ed.file = path;
    ed.key = key;
    ed.value = unset ? NULL : value;
    ed.new_file = rs == HIERA_NOT_FOUND;
    hiera_status es = hiera_edit_text(text, len, &ed, &res, &err);
    if (es == HIERA_ERROR) {
        refused(out, &err);
        goto done;
    }
    bool changed = es == HIERA_OK && res.changed;
    doc = hiera_value_new_hash();
    hiera_value_hash_set(doc, "environment", hiera_value_new_string(env));
    hiera_value_hash_set(doc, "file", hiera_value_new_string(path));
    hiera_value_hash_set(doc, "level", hiera_value_new_string(str_of(t, "level") ? str_of(t, "level") : ""));
    hiera_value_hash_set(doc, "key", hiera_value_new_string(key));
    hiera_value_hash_set(doc, "action", hiera_value_new_string(unset ? "unset" : "set"));
    hiera_value_hash_set(doc, "dry_run", hiera_value_new_bool(dry));
    hiera_value_hash_set(doc, "changed", hiera_value_new_bool(changed));
    hiera_value_hash_set(doc, "base", hiera_value_new_string(before));
    after = changed ? hiera_text_digest(res.text, res.len) : xstrdup(before);
    hiera_value_hash_set(doc, "digest", hiera_value_new_string(after));
    diff = changed ? hiera_text_diff(text, len, res.text, res.len, rs == HIERA_NOT_FOUND ? "/dev/null" : path, path)
                   : xstrdup("");
    hiera_value_hash_set(doc, "diff", hiera_value_new_string(diff));
    if (changed && flag_of(body, "effects", dry) && rq->o->edits->effects) {
        hiera_value *fx = rq->o->edits->effects(rq->o->edits->data, env, path, res.text, res.len);
        for (size_t i = 0; fx && i < hiera_value_hash_size(fx); i++)
            hiera_value_hash_set(doc, hiera_value_string(hiera_value_hash_key(fx, i)),
                                 hiera_value_incref(hiera_value_hash_value(fx, i)));
        hiera_value_decref(fx);
    }
    if (dry || !changed) {
        hiera_value_hash_set(doc, "written", hiera_value_new_bool(false));
        serve_reply(out, 200, doc);
        goto done;
    }
    /* the write, then what follows it: the audit log, the commit, the served snapshot */
    if (hiera_file_replace(path, res.text, res.len, before, &err) != HIERA_OK) {
        if (err.kind == HIERA_ERR_STALE) {
            hiera_value *e = hiera_value_new_hash();
            hiera_value_hash_set(e, "error", hiera_value_new_string(err.message ? err.message : "the file changed"));
            char *cur_text = NULL;
            size_t cur_len = 0;
            hiera_error e2 = {0};
            char *cur = hiera_file_read_text(path, &cur_text, &cur_len, &e2) == HIERA_OK ? hiera_text_digest(cur_text, cur_len)
                                                                                          : xstrdup("");
            hiera_value_hash_set(e, "current", hiera_value_new_string(cur));
            free(cur);
            free(cur_text);
            hiera_error_clear(&e2);
            serve_reply(out, 409, e);
            hiera_value_decref(e);
        } else {
            serve_reply_error(out, 500, "%s", err.message ? err.message : "the file cannot be written");
        }
        goto done;
    }
    bool secret = block || holds_secret(value) || holds_secret(res.old_value) ||
                  sensitive_key(rq, g, env, str_of(body, "node"), key);
    audit(rq, env, t, key, unset, before, after, res.old_value, value, secret);
    if (rq->o->edits->commit) {
        char *msg = xasprintf("hiera serve: %s %s\n\n%s '%s' in %s (environment %s), by %s.", unset ? "unset" : "set", key,
                              unset ? "Removed" : "Set", key, path, env, rq->who.name[0] ? rq->who.name : "anonymous");
        char *author = xasprintf("%s <%s@hiera-serve>", rq->who.name[0] ? rq->who.name : "anonymous",
                                 rq->who.name[0] ? rq->who.name : "anonymous");
        char *note = NULL;
        bool ok = rq->o->edits->commit_file(rq->o->edits->data, path, author, msg, &note);
        hiera_value_hash_set(doc, "committed", hiera_value_new_bool(ok && !note));
        if (note) {
            hiera_value_hash_set(doc, "commit_note", hiera_value_new_string(note));
            fprintf(stderr, "hiera serve: edit of %s: %s\n", path, note);
        }
        free(note);
        free(author);
        free(msg);
    }
    fprintf(stderr, "hiera serve: %s %s '%s' in %s\n", rq->who.name[0] ? rq->who.name : "anonymous",
            unset ? "removed" : "set", key, path);
    /* served before the answer: the environment is rebuilt now (every one built when the file is
     * outside its folder: the global layer, read by all), not when the watcher's events settle */
    uint64_t gen = 0;
    state_rebuild_now(rq->st, under_env_dir(rq, g, env, path) ? env : NULL, "edit", &gen);
    hiera_value_hash_set(doc, "generation", hiera_value_new_int((int64_t)gen));
    hiera_value_hash_set(doc, "written", hiera_value_new_bool(true));
    serve_reply(out, 200, doc);
done:
    if (locked)
        pthread_mutex_unlock(&edit_lock);
    hiera_edit_result_clear(&res);
    hiera_value_decref(doc);
    hiera_value_decref(value);
    hiera_value_decref(t);
    hiera_error_clear(&err);
    free(text);
    free(before);
    free(after);
    free(diff);
    free(block);
}

void serve_edit(const request *rq, generation *g, response *out)
{
    bool get = !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD"), post = !strcmp(rq->method, "POST");
    if (!get && !post) {
        serve_reply_error(out, 405, "/v1/edit takes GET or POST");
        return;
    }
    const char *off = !rq->o->edits ? "editing is off (hiera serve --allow-edits turns it on, for admins)"
                      : rq->who.kind != WHO_ADMIN ? "only admins (an admin certificate or the bearer token) may edit"
                                                  : NULL;
    if (get && !rq->arg(rq->conn, "key")) {
        /* whether the caller may edit (the page shows the Edit button then): a question anybody may ask */
        hiera_value *res = hiera_value_new_hash();
        hiera_value_hash_set(res, "edits", hiera_value_new_bool(!off));
        hiera_value_hash_set(res, "who", rq->who.name[0] ? hiera_value_new_string(rq->who.name) : hiera_value_undef());
        if (off)
            hiera_value_hash_set(res, "why", hiera_value_new_string(off));
        serve_reply(out, 200, res);
        hiera_value_decref(res);
        return;
    }
    if (off) {
        serve_reply_error(out, 403, "%s", off);
        return;
    }
    if (get) {
        const char *key = rq->arg(rq->conn, "key"), *node = rq->arg(rq->conn, "node"), *env = rq->arg(rq->conn, "environment");
        if (!env)
            env = rq->o->environment ? rq->o->environment : "production";
        if (!name_ok(env, false) || (node && !name_ok(node, true))) {
            serve_reply_error(out, 400, "invalid environment or node name");
            return;
        }
        levels_of_key(rq, g, env, node, key, out);
        return;
    }
    hiera_error err = {0};
    hiera_value *body = rq->body_len ? hiera_value_from_json(rq->body, &err) : NULL;
    if (!body || hiera_value_kind(body) != HIERA_HASH)
        serve_reply_error(out, 400, "the request body must be a JSON object%s%s", err.message ? ": " : "", err.message ? err.message : "");
    else
        post_edit(rq, g, body, out);
    hiera_value_decref(body);
    hiera_error_clear(&err);
}
