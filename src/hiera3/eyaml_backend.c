/* eyaml_backend.c - the Hiera 3 eyaml backend: what hiera-eyaml 3.3's
 * lib/hiera/backend/eyaml_backend.rb does under the `hiera` command (Hiera 3.10) for
 *
 *   :backends: [eyaml]
 *   :eyaml:
 *     :datadir: ...               (Backend.datadir, interpolated, per data source)
 *     :extension: eyaml           (the default)
 *     :pkcs7_private_key: ...     (paths relative to the working directory)
 *     :pkcs7_public_key: ...
 *
 * The flow, quirks included (each marked "Ruby quirk"):
 *  - the backend object is built on first use: Config[:eyaml][:extension] must be reachable, so
 *    a missing :eyaml: section is a NoMethodError then;
 *  - it is an old (4-argument) backend, so Hiera wraps it in Backend1xWrapper: a Hash
 *    resolution type reaches it as :hash (merged with the configured :merge_behavior:), and an
 *    answer of nil is "not found" (a found `key: ~`, or a Symbol value, ends a priority search
 *    of this backend with nothing);
 *  - every lookup first interpolates every option of the :eyaml: section into the global
 *    Eyaml::Options (the keys are read from there);
 *  - every data source: datadir, "<source>.<extension>", Filecache#read(path, Hash) whose rescue
 *    turns a file that is not a hash into nil (then `data.empty?` fails on nil);
 *  - parse_answer as Hiera's but with its own parse_string: strings are decrypted (hiera-eyaml's
 *    hiera backend parser, then chomp), then interpolated with a fresh context (no recursion
 *    guard, no order override: "Lookup recursion will not be detected"); hash keys are only
 *    interpolated; values that are not numbers, booleans, strings, hashes or arrays are nil;
 *  - array answers are collected as given (the outer Backend.lookup flattens), hash answers
 *    merged with merge_answer(new, answer), anything else ends the search.
 * Decryption errors: an OpenSSL::PKCS7::PKCS7Error is re-raised as a RuntimeError "Hiera-eyaml
 * decryption failed, ..."; every other error of hiera-eyaml passes through, except that the
 * `rescue OpenSSL::PKCS7::PKCS7Error` clause itself raises a NameError when OpenSSL was never
 * loaded, i.e. when no PKCS7 block was reached yet in the process (see openssl_loaded).
 * Decryption goes through eyaml.c, whose cache decrypts each block once per backend object.
 */
#include "hiera3/hiera3.h"
#include "base/fsjournal.h"
#include "base/rubyver.h"

#include "crypto/eyaml.h"
#include "formats/render.h"
#include "formats/psych.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* Nesting bound of data walked by parse_answer (YAML itself loads at most 1000 deep). */
#define EY_MAX_DEPTH 10000

/* Ruby 3.1's error_highlight text, part of NoMethodError/NameError messages, for the lines of
 * hiera-eyaml 3.3.0 that can fail on bad configuration or data. */
#define HL_INITIALIZE                                                                                                  \
    "\n\n        @extension = Config[:eyaml][:extension] || \"eyaml\"\n                                   ^^^^^^^^^^^^"
#define HL_EMPTY "\n\n          next if data.empty?\n                      ^^^^^^^"
#define HL_TO_SYM "\n\n          @@options[ key.to_sym ] = value\n                        ^^^^^^^"
#define HL_RESCUE "\n\n          rescue OpenSSL::PKCS7::PKCS7Error => e\n                 ^^^^^^^"

typedef struct {
    h3_filecache *cache;
    eyaml_ctx *ey;
    hv *extension;       /* Config[:eyaml][:extension] || "eyaml" */
    hv *decrypted_seen;  /* @decrypted_cache (:cache_decrypted:): raw string -> its decrypt() */
    bool openssl_loaded; /* Ruby's `require 'openssl'` happened (a PKCS7 block was reached) */
} ey_state;

/* ------------------------------------------------------------------ small Ruby helpers */

/* "undefined method `m' for <inspect>:<Class>" as Ruby words it for a receiver (Ruby 3.3: without
 * error_highlight's and did_you_mean's lines, which it no longer puts in the message) */
static void raise_no_method(h3 *h, herr *err, const char *method, const hv *recv, const char *highlight,
                            const char *suggestion)
{
    char *ins = h3_inspect_dup(recv);
    char *m = ruby_no_method(method, ins, ruby_class_name(recv));
    if (rubyver() == RUBY_33)
        h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "%s", m);
    else
        h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "%s%s%s", m, highlight, suggestion);
    free(m);
    free(ins);
}

/* A fresh lookup context: Backend.parse_string's default {:recurse_guard => nil,
 * :order_override => nil}, which is all an old backend can pass. */
static h3_ctx fresh_ctx(void)
{
    h3_ctx c = {NULL, NULL, false};
    return c;
}

/* ------------------------------------------------------------------ the backend object */

static void ey_destroy(void *p)
{
    ey_state *st = p;
    if (!st)
        return;
    h3_filecache_free(st->cache);
    eyaml_free(st->ey);
    hv_decref(st->extension);
    hv_decref(st->decrypted_seen);
    free(st);
}

/* Eyaml_backend.new: reads Config[:eyaml][:extension]. */
static void *ey_create(h3 *h, herr *err)
{
    h3_debug(h, "[eyaml_backend]: Hiera eYAML backend starting");
    const hv *sect = h3_config_get(h, "eyaml", NULL);
    switch (hv_kind_of(sect)) {
    case HV_HASH:
        break;
    case HV_INT:
    case HV_BIGINT:
    case HV_STRING:
    case HV_ARRAY:
    case HV_SYMBOL:
        /* Integer#[], String#[], Array#[] given a Symbol */
        h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of Symbol into Integer");
        return NULL;
    default: {
        hv *nil = sect ? NULL : hv_undef();
        raise_no_method(h, err, "[]", sect ? sect : nil, HL_INITIALIZE, "");
        hv_decref(nil);
        return NULL;
    }
    }
    ey_state *st = xcalloc(1, sizeof *st);
    st->cache = h3_filecache_new();
    st->ey = eyaml_new();
    eyaml_set_debian13(st->ey, rubyver() == RUBY_33); /* (hiera-eyaml 4.2 beside Hiera 3.12) */
    const hv *ext = h3_config_get(h, "eyaml", "extension");
    st->extension = hv_truthy(ext) ? hv_incref((hv *)ext) : hv_str("eyaml");
    st->decrypted_seen = hv_hash();
    return st;
}

/* ------------------------------------------------------------------ options */

/* parse_options(scope): every entry of Config[:eyaml], interpolated, into Eyaml::Options
 * (Symbol keys; the :source option is of no use here). Returns the options hash or NULL. */
static hv *parse_options(h3 *h, const hv *scope, herr *err)
{
    const hv *sect = h3_config_get(h, "eyaml", NULL);
    hv *opts = hv_hash();
    for (size_t i = 0; hv_is(sect, HV_HASH) && i < hv_hash_len(sect); i++) {
        const hv *k = hv_hash_key_at(sect, i);
        h3_ctx c = fresh_ctx();
        hv *v = h3_interpolate(h, hv_hash_val_at(sect, i), scope, &c, err);
        if (!v) {
            hv_decref(opts);
            return NULL;
        }
        if (!hv_is(k, HV_STRING) && !hv_is(k, HV_SYMBOL)) {
            /* Options[]= calls key.to_sym; did_you_mean offers to_s to all but nil */
            raise_no_method(h, err, "to_sym", k, HL_TO_SYM, hv_is(k, HV_UNDEF) ? "" : "\nDid you mean?  to_s");
            hv_decref(v);
            hv_decref(opts);
            return NULL;
        }
        char *ks = h3_to_s_dup(k), *vs = h3_to_s_dup(v);
        h3_debug(h, "[eyaml_backend]: Set option: %s = %s", ks, vs);
        free(ks);
        free(vs);
        hv_hash_set(opts, hv_symbol(hv_str_ptr(k), hv_str_len(k)), v);
    }
    return opts;
}

/* ------------------------------------------------------------------ decryption */

/* The blocks are found as hiera-eyaml's hiera backend parser finds them: the leftmost match of
 * ENC\[(\w+,)?([a-zA-Z0-9+/ =\n]+?)\] (EncHieraTokenType), then on after it (crypto/eyaml.c). A
 * blank payload is a NoMethodError in Ruby. */

/* Whether a block reaches Encryptor.find("PKCS7") (so Ruby requires the pkcs7 encryptor, and
 * with it OpenSSL) and then Pkcs7.decrypt: not blank, no scheme (the default, PKCS7) or PKCS7
 * in any case. */
static bool block_is_pkcs7(const char *s, const eyaml_enc_block *b)
{
    return !b->blank && (b->scheme_len == 0 || (b->scheme_len == 5 && strncasecmp(s + b->scheme, "pkcs7", 5) == 0));
}

static bool first_block_loads_openssl(const char *s, size_t n)
{
    eyaml_enc_block b;
    return eyaml_enc_find(s, n, 0, EYAML_ENC_HIERA, &b) && block_is_pkcs7(s, &b);
}

/* Eyaml::Options[name] */
static const hv *opt_sym(const hv *opts, const char *name)
{
    hv *k = hv_symbol(name, strlen(name));
    const hv *v = hv_hash_get(opts, k);
    hv_decref(k);
    return v;
}

/* Pkcs7.decrypt warns (through Hiera's logger, as Options[:source] is "hiera") for every block
 * it decrypts when a key is named both by path and by environment variable. The blocks are
 * walked as the parser walks them, up to the first that fails (eyaml.c's cache makes the
 * extra eyaml_decrypt_block calls free). */
static void pkcs7_warnings(h3 *h, ey_state *st, const char *s, size_t n, const hv *opts)
{
    bool pub = hv_truthy(opt_sym(opts, "pkcs7_public_key")) && hv_truthy(opt_sym(opts, "pkcs7_public_key_env_var"));
    bool priv =
        hv_truthy(opt_sym(opts, "pkcs7_private_key")) && hv_truthy(opt_sym(opts, "pkcs7_private_key_env_var"));
    if (!pub && !priv)
        return;
    eyaml_enc_block b;
    for (size_t pos = 0; eyaml_enc_find(s, n, pos, EYAML_ENC_HIERA, &b) && block_is_pkcs7(s, &b); pos = b.end) {
        if (pub)
            h3_warn(h, "[pkcs7] both public_key and public_key_env_var specified, using public_key");
        if (priv)
            h3_warn(h, "[pkcs7] both private_key and private_key_env_var specified, using private_key");
        herr e = {0};
        size_t len = 0;
        char *p = eyaml_decrypt_block(st->ey, s + b.scheme, b.scheme_len, s + b.payload, b.payload_len, opts, &len, &e);
        herr_clear(&e);
        if (!p)
            return;
        explicit_bzero(p, len);
        free(p);
    }
}

/* decrypt(data): the plaintext of a string holding ENC[...] blocks (chomped), or the string
 * itself. Returns a new reference or NULL with err. */
static hv *decrypt_string(h3 *h, ey_state *st, const hv *data, const hv *opts, herr *err)
{
    const char *s = hv_str_ptr(data);
    size_t n = hv_str_len(data);
    if (!eyaml_is_encrypted(s, n))
        return hv_incref((hv *)data);
    h3_debug(h, "[eyaml_backend]: Attempting to decrypt");
    bool loads = first_block_loads_openssl(s, n);
    bool loaded_before_failure = st->openssl_loaded || loads;
    if (loads)
        st->openssl_loaded = true;
    pkcs7_warnings(h, st, s, n, opts);
    herr e = {0};
    size_t plen = 0;
    char *plain = eyaml_decrypt_text(st->ey, s, n, opts, &plen, &e);
    if (plain)
        return hv_str_take(plain, plen);
    eyaml_errclass cls = eyaml_last_error_class(st->ey);
    const char *msg = e.msg ? e.msg : "";
    if (!loaded_before_failure) {
        /* Ruby quirk: evaluating `rescue OpenSSL::PKCS7::PKCS7Error` needs OpenSSL, which only
         * the pkcs7 encryptor requires: the original error is replaced by a NameError */
        h3_raise(h, err, H3E_LOOKUP, "NameError", "uninitialized constant Hiera::Backend::Eyaml_backend::OpenSSL%s",
                 HL_RESCUE);
    } else if (cls == EYAML_ERR_PKCS7) {
        h3_debug(h, "[eyaml_backend]: Caught exception: OpenSSL::PKCS7::PKCS7Error, %s", msg);
        h3_raise(h, err, H3E_LOOKUP, "RuntimeError",
                 "Hiera-eyaml decryption failed, check the encrypted data matches the key you are using.\n"
                 "Raw message from system: %s",
                 msg);
    } else {
        h3_raise(h, err, H3E_LOOKUP, cls == EYAML_ERR_LOAD ? "LoadError" : "StandardError", "%s", msg);
    }
    herr_clear(&e);
    return NULL;
}

/* parse_string(data, scope): decrypt (through @decrypted_cache when :cache_decrypted: is set:
 * every string, encrypted or not, is kept there by its raw text), then Backend.parse_string with
 * a fresh context. Returns a new reference or NULL with err. */
static hv *parse_string(h3 *h, ey_state *st, const hv *data, const hv *scope, const hv *opts, herr *err)
{
    hv *plain;
    if (hv_truthy(opt_sym(opts, "cache_decrypted"))) {
        const hv *cached = hv_hash_get(st->decrypted_seen, data);
        if (!cached) {
            plain = decrypt_string(h, st, data, opts, err);
            if (!plain)
                return NULL;
            h3_debug(h, "[eyaml_backend]: Adding data to decrypted cache");
            hv_hash_set(st->decrypted_seen, hv_incref((hv *)data), hv_incref(plain));
        } else {
            h3_debug(h, "[eyaml_backend]: Retrieving data from decrypted cache");
            plain = hv_incref((hv *)cached);
        }
    } else {
        plain = decrypt_string(h, st, data, opts, err);
        if (!plain)
            return NULL;
    }
    h3_ctx c = fresh_ctx();
    hv *r = h3_interpolate(h, plain, scope, &c, err);
    hv_decref(plain);
    return r;
}

/* The backend's own parse_answer(data, scope): numbers and booleans as they are, strings through
 * parse_string, hash keys interpolated (never decrypted), anything else nil. */
static hv *parse_answer(h3 *h, ey_state *st, const hv *data, const hv *scope, const hv *opts, int depth, herr *err)
{
    switch (hv_kind_of(data)) {
    case HV_BOOL:
    case HV_INT:
    case HV_BIGINT:
    case HV_FLOAT:
        return hv_incref((hv *)data);
    case HV_STRING:
        return parse_string(h, st, data, scope, opts, err);
    case HV_HASH:
    case HV_ARRAY:
        break;
    default:
        return hv_undef(); /* Ruby quirk: a Symbol (or nil) falls through parse_answer as nil */
    }
    if (depth > EY_MAX_DEPTH) {
        h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
        return NULL;
    }
    if (hv_is(data, HV_ARRAY)) {
        hv *ans = hv_array_sized(hv_array_len(data));
        for (size_t i = 0; i < hv_array_len(data); i++) {
            hv *v = parse_answer(h, st, hv_array_get(data, i), scope, opts, depth + 1, err);
            if (!v) {
                hv_decref(ans);
                return NULL;
            }
            hv_array_push(ans, v);
        }
        return ans;
    }
    hv *ans = hv_hash_sized(hv_hash_len(data));
    for (size_t i = 0; i < hv_hash_len(data); i++) {
        h3_ctx c = fresh_ctx();
        hv *k = h3_interpolate(h, hv_hash_key_at(data, i), scope, &c, err);
        if (!k) {
            hv_decref(ans);
            return NULL;
        }
        hv *v = parse_answer(h, st, hv_hash_val_at(data, i), scope, opts, depth + 1, err);
        if (!v) {
            hv_decref(k);
            hv_decref(ans);
            return NULL;
        }
        hv_hash_set(ans, k, v);
    }
    return ans;
}

/* ------------------------------------------------------------------ lookup */

typedef struct {
    ey_state *st;
    const hv *key;
    const char *keys; /* key.to_s for messages */
    const hv *scope;
    const hv *opts;
    h3_strategy strategy;
    hv *answer; /* NULL: Ruby's nil */
} ey_walk;

/* YAML.load(data) || {} (Psych 4: a safe load, as the yaml backend's) */
static hv *parse_eyaml(const char *text, size_t len, const char *path, herr *err)
{
    hv *v = yaml_parse(text, len, path, YAML_HIERA3, err);
    if (v && !hv_truthy(v)) {
        hv_decref(v);
        v = hv_hash();
    }
    return v;
}

/* @cache.read(eyaml_file, Hash): Filecache#read rescues the TypeError of a file that is not a
 * hash (a debug line) and stores and returns its default, nil. Every other error goes on.
 * Returns the hash, undef for nil, or NULL with err. */
static hv *read_data(h3 *h, ey_state *st, const char *path, herr *err)
{
    hv *data = h3_filecache_read(h, st->cache, path, parse_eyaml, err);
    if (!data) {
        if (strcmp(h3_last_rbclass(h), "TypeError") != 0)
            return NULL;
        h3_debug(h, "%s, setting defaults", err->msg ? err->msg : "");
        herr_clear(err);
        return hv_undef();
    }
    if (!hv_is(data, HV_HASH)) { /* kept by h3_filecache after its TypeError; Ruby keeps nil */
        hv_decref(data);
        return hv_undef();
    }
    return data;
}

/* One data source (the block given to Backend.datasources): 0 to go on, 1 to stop, -1 error. */
static int ey_source(h3 *h, const char *source, void *arg, herr *err)
{
    ey_walk *w = arg;
    h3_debug(h, "[eyaml_backend]: Looking for data source %s", source);
    /* Backend.datafile(:eyaml, scope, source, extension) || next */
    char *datadir = h3_datadir(h, "eyaml", w->scope, err);
    if (!datadir)
        return -1;
    char *ext = h3_to_s_dup(w->st->extension);
    char *path = h3_datafile_path(datadir, source, ext);
    free(ext);
    free(datadir);
    struct stat sb;
    if (fs_stat(path, &sb) != 0) {
        h3_debug(h, "Cannot find datafile %s, skipping", path);
        free(path);
        return 0;
    }
    hv *data = read_data(h, w->st, path, err);
    free(path);
    if (!data)
        return -1;
    if (!hv_is(data, HV_HASH)) {
        raise_no_method(h, err, "empty?", data, HL_EMPTY, "");
        hv_decref(data);
        return -1;
    }
    const hv *raw = hv_hash_len(data) ? hv_hash_get(data, w->key) : NULL;
    if (!raw) {
        hv_decref(data);
        return 0;
    }
    h3_debug(h, "[eyaml_backend]: Found %s in %s", w->keys, source);
    hv *ans = parse_answer(h, w->st, raw, w->scope, w->opts, 0, err);
    hv_decref(data);
    if (!ans)
        return -1;
    switch (w->strategy) {
    case H3_ARRAY:
        if (!hv_is(ans, HV_ARRAY) && !hv_is(ans, HV_STRING)) {
            /* Ruby quirk: this backend's messages do not name the key */
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch: expected Array and got %s",
                     ruby_class_name(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_array();
        hv_array_push(w->answer, ans);
        return 0;
    case H3_HASH: {
        if (!hv_is(ans, HV_HASH)) {
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch: expected Hash and got %s",
                     ruby_class_name(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_hash();
        /* Backend.merge_answer(new_answer, answer): no resolution type, so the configured
         * :merge_behavior: and :deep_merge_options: */
        static const h3_resolution configured = {H3_HASH, false, NULL, NULL};
        w->answer = h3_merge_answer(h, ans, w->answer, &configured, err);
        return w->answer ? 0 : -1;
    }
    case H3_PRIORITY:
        break;
    }
    hv_decref(w->answer);
    w->answer = ans;
    return 1;
}

/* Backend1xWrapper#lookup around Eyaml_backend#lookup(key, scope, order_override, type). */
static h3_result ey_lookup(h3 *h, void *state, const hv *key, const hv *scope, const hv *override,
                           const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    ey_state *st = state;
    *out = NULL;
    h3_debug(h, "Using Hiera 1.x backend API to access instance of class Hiera::Backend::Eyaml_backend. Lookup "
                "recursion will not be detected");
    hv *opts = parse_options(h, scope, err);
    if (!opts)
        return H3_ERROR;
    char *keys = h3_to_s_dup(key);
    h3_debug(h, "[eyaml_backend]: Looking up %s in eYAML backend", keys);
    ey_walk w = {st, key, keys, scope, opts, res && res->has_merge ? H3_HASH : res ? res->strategy : H3_PRIORITY,
                 NULL};
    int rc = h3_datasources(h, scope, override, ey_source, &w, err);
    free(keys);
    hv_decref(opts);
    if (rc < 0) {
        hv_decref(w.answer);
        return H3_ERROR;
    }
    /* Backend1xWrapper: throw :no_such_key if value.nil? */
    if (!w.answer || hv_is(w.answer, HV_UNDEF)) {
        hv_decref(w.answer);
        return H3_NOT_FOUND;
    }
    *out = w.answer;
    return H3_FOUND;
}

/* Listed in h3_config.c's h3_backend_table. */
extern const h3_backend h3_eyaml_backend;
const h3_backend h3_eyaml_backend = {"eyaml", ey_create, ey_destroy, ey_lookup};
