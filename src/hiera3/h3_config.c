/* h3_config.c - Hiera::Config.load and Config.load_backends: the v3 configuration from a file or
 * a hash, the table of backends :backends: may name, and making and freeing the Hiera object
 * (h3_lookup.c's h3_new_file and h3_new_hash give it Backend.lookup). */
#include "hiera3/hiera3_int.h"
#include "base/rubyver.h"
#include "formats/psych.h"
#include "formats/render.h"
#include "base/fsjournal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ the backends */

/* Every backend :backends: may name (Ruby: require "hiera/backend/<name>_backend"). */
static const h3_backend *const h3_backend_table[] = {
    &h3_yaml_backend,
    &h3_json_backend,
    &h3_eyaml_backend,
};

/* ------------------------------------------------------------------ Hiera::Config.load */

static hv *config_defaults(void)
{
    hv *c = hv_hash();
    hv *b = hv_array();
    hv_array_push(b, hv_str("yaml"));
    hv_hash_set(c, hv_symbol("backends", 8), b);
    hv *hier = hv_array();
    hv_array_push(hier, hv_str("nodes/%{::trusted.certname}"));
    hv_array_push(hier, hv_str("common"));
    hv_hash_set(c, hv_symbol("hierarchy", 9), hier);
    hv_hash_set(c, hv_symbol("merge_behavior", 14), hv_symbol("native", 6));
    return c;
}

/* Keys given as strings become symbols (the in-memory config of the C API). */
static hv *symbolize(const hv *hash, bool nested)
{
    hv *out = hv_hash_sized(hv_hash_len(hash));
    for (size_t i = 0; i < hv_hash_len(hash); i++) {
        const hv *k = hv_hash_key_at(hash, i), *v = hv_hash_val_at(hash, i);
        hv *nk = hv_is(k, HV_STRING) ? hv_symbol(hv_str_ptr(k), hv_str_len(k)) : hv_incref((hv *)k);
        hv *nv = nested && hv_is(v, HV_HASH) ? symbolize(v, false) : hv_incref((hv *)v);
        hv_hash_set(out, nk, nv);
    }
    return out;
}

/* The `version` check of Config.load: 0 to go on, -1 with err. */
static int check_version(h3 *h, const hv *config, const char *path, herr *err)
{
    const hv *v = hv_hash_gets(config, "version");
    if (!hv_truthy(v))
        v = h3_sym_get(config, "version");
    if (!hv_truthy(v))
        return 0; /* version 3 */
    bool big = false;
    switch (hv_kind_of(v)) {
    case HV_INT: big = hv_int_val(v) >= 4; break;
    case HV_BIGINT: big = hv_bigint_digits(v)[0] != '-'; break;
    case HV_FLOAT: big = hv_float_val(v) >= 4; break; /* NaN passes, as in Ruby */
    case HV_STRING:
    case HV_SYMBOL:
        h3_raise(h, err, H3E_CONFIG, "ArgumentError", "comparison of %s with 4 failed", ruby_class_name(v));
        return -1;
    case HV_HASH:
        h3_raise(h, err, H3E_CONFIG, "TypeError", "no implicit conversion of Integer into Hash");
        return -1;
    default: {
        char *ins = h3_inspect_dup(v);
        {
            char *nm = ruby_no_method(">=", ins, ruby_class_name(v));
            h3_raise(h, err, H3E_CONFIG, "NoMethodError", "%s", nm);
            free(nm);
        }
        free(ins);
        return -1;
    }
    }
    if (big) {
        char *vs = h3_to_s_dup(v);
        h3_raise(h, err, H3E_CONFIG, "RuntimeError",
                 "v%s hiera.yaml is only to be used inside an environment or a module and cannot be given to the global hiera",
                 vs);
        free(vs);
        return -1;
    }
    return 0;
}

/* YAML.load_file(source) of the config, as a Hash to merge (NULL and no error: nothing to merge) */
static int load_config_file(h3 *h, const char *path, hv **out, herr *err)
{
    *out = NULL;
    struct stat st;
    if (fs_stat(path, &st) != 0) {
        h3_raise(h, err, H3E_CONFIG, "RuntimeError", "Config file %s not found", path);
        return -1;
    }
    size_t len;
    char *text = h3_read_whole(h, path, &len, err);
    if (!text) {
        h->errclass = H3E_CONFIG;
        return -1;
    }
    herr perr = {0};
    hv *v = yaml_parse(text, len, path, YAML_HIERA3, &perr);
    free(text);
    if (!v) {
        /* load_file names the file in Psych's message */
        const char *msg = perr.msg ? perr.msg : "";
        const char *cls = h3_psych_class(msg);
        if (strncmp(msg, "(<unknown>): ", 13) == 0)
            h3_raise(h, err, H3E_CONFIG, cls, "(%s): %s", path, msg + 13);
        else
            h3_raise(h, err, H3E_CONFIG, cls, "%s", msg);
        herr_clear(&perr);
        return -1;
    }
    if (!hv_truthy(v)) { /* an empty file: false, nothing merged */
        hv_decref(v);
        return 0;
    }
    if (!hv_is(v, HV_HASH)) {
        /* config['version'] on a non-Hash, then @config.merge!(config) */
        const char *cls = "TypeError";
        char *msg;
        if (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)) {
            msg = xstrdup("no implicit conversion of Symbol into Integer");
            if (memmem(hv_str_ptr(v), hv_str_len(v), "version", 7)) {
                cls = "ArgumentError";
                free(msg);
                msg = xasprintf("comparison of String with 4 failed");
            }
        } else if (hv_is(v, HV_ARRAY) || hv_is(v, HV_INT) || hv_is(v, HV_BIGINT)) {
            msg = xstrdup("no implicit conversion of String into Integer");
        } else {
            char *ins = h3_inspect_dup(v);
            cls = "NoMethodError";
            msg = ruby_no_method("[]", ins, ruby_class_name(v));
            free(ins);
        }
        h3_raise(h, err, H3E_CONFIG, cls, "%s", msg);
        free(msg);
        hv_decref(v);
        return -1;
    }
    if (check_version(h, v, path, err) < 0) {
        hv_decref(v);
        return -1;
    }
    *out = v;
    return 0;
}

static bool known_backend_name(const char *name, const h3_backend **ops)
{
    for (size_t i = 0; i < sizeof h3_backend_table / sizeof *h3_backend_table; i++)
        if (strcmp(h3_backend_table[i]->name, name) == 0) {
            *ops = h3_backend_table[i];
            return true;
        }
    return false;
}

/* Config.load_backends and the backend instances (one per distinct configured name) */
static int load_backends(h3 *h, herr *err)
{
    size_t n = hv_array_len(h->backends);
    h->insts = xcalloc(n ? n : 1, sizeof *h->insts);
    for (size_t i = 0; i < n; i++) {
        const hv *b = hv_array_get(h->backends, i);
        if (!hv_is(b, HV_STRING) && !hv_is(b, HV_SYMBOL)) {
            char *ins = h3_inspect_dup(b);
            {
            char *nm = ruby_no_method("downcase", ins, ruby_class_name(b));
            h3_raise(h, err, H3E_CONFIG, "NoMethodError", "%s", nm);
            free(nm);
        }
            free(ins);
            return -1;
        }
        char *lower = xstrndup(hv_str_ptr(b), hv_str_len(b));
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        const h3_backend *ops = NULL;
        bool ok = strlen(lower) == hv_str_len(b) && known_backend_name(lower, &ops);
        if (!ok) {
            h3_raise(h, err, H3E_CONFIG, "RuntimeError",
                     "Cannot load backend %s: cannot load such file -- hiera/backend/%s_backend", hv_str_ptr(b), lower);
            free(lower);
            return -1;
        }
        free(lower);
        /* the same name twice shares one instance (Ruby's @backends[name]): see canonical_inst */
        h->insts[h->ninsts++] = (h3_inst){ops, hv_incref((hv *)b), NULL, false};
    }
    return 0;
}

static void free_insts(h3 *h)
{
    for (size_t i = 0; i < h->ninsts; i++) {
        bool shared = false;
        for (size_t j = 0; j < i; j++)
            if (hv_eql(h->insts[j].name, h->insts[i].name))
                shared = true;
        if (!shared && h->insts[i].created && h->insts[i].ops->destroy)
            h->insts[i].ops->destroy(h->insts[i].state);
        hv_decref(h->insts[i].name);
    }
    free(h->insts);
    h->insts = NULL;
    h->ninsts = 0;
}

/* The instance a lookup must use for entry i (duplicate names share the first one). */
h3_inst *h3_canonical_inst(h3 *h, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (hv_eql(h->insts[j].name, h->insts[i].name))
            return &h->insts[j];
    return &h->insts[i];
}

static h3 *h3_alloc(h3_lookup_fn nested_lookup)
{
    h3 *h = xcalloc(1, sizeof *h);
    h->ruby33 = rubyver() == RUBY_33;
    h->logk = LOG_CONSOLE;
    h->nested_lookup = nested_lookup;
    return h;
}

/* Everything after the YAML/Hash source is known: merge, backends flattened, logger, backends */
static h3 *finish_config(h3 *h, hv *source, const char **rbclass, herr *err)
{
    h->config = config_defaults();
    if (source) {
        for (size_t i = 0; i < hv_hash_len(source); i++)
            hv_hash_set(h->config, hv_incref(hv_hash_key_at(source, i)), hv_incref(hv_hash_val_at(source, i)));
    }
    h->backends = hv_array();
    h3_flatten_entries(h->backends, h3_sym_get(h->config, "backends"), 0);
    hv *bk = hv_symbol("backends", 8);
    hv_hash_set(h->config, bk, hv_incref(h->backends));
    hv *logger = h3_sym_get(h->config, "logger");
    if (logger) {
        char *name = h3_to_s_dup(logger);
        h3_set_logger(h, name);
        free(name);
    } else {
        hv_hash_set(h->config, hv_symbol("logger", 6), hv_str("console"));
        h3_set_logger(h, "console");
    }
    if (load_backends(h, err) < 0) {
        if (rbclass)
            *rbclass = h3_last_rbclass(h);
        h3_free(h);
        return NULL;
    }
    return h;
}

h3 *h3_config_new_file(const char *path, h3_lookup_fn nested_lookup, const char **rbclass, herr *err)
{
    h3 *h = h3_alloc(nested_lookup);
    if (!path)
        path = "/etc/puppet/hiera.yaml"; /* File.join(Util.code_dir, 'hiera.yaml'), then config_dir's: the same */
    hv *src = NULL;
    if (load_config_file(h, path, &src, err) < 0) {
        if (rbclass)
            *rbclass = h3_last_rbclass(h);
        h3_free(h);
        return NULL;
    }
    h3 *r = finish_config(h, src, rbclass, err);
    hv_decref(src);
    return r;
}

h3 *h3_config_new_hash(const hv *config, h3_lookup_fn nested_lookup, const char **rbclass, herr *err)
{
    h3 *h = h3_alloc(nested_lookup);
    hv *src = NULL;
    if (hv_is(config, HV_HASH))
        src = symbolize(config, true);
    h3 *r = finish_config(h, src, rbclass, err);
    hv_decref(src);
    return r;
}

void h3_free(h3 *h)
{
    if (!h)
        return;
    free_insts(h);
    hv_decref(h->config);
    hv_decref(h->backends);
    free(h);
}

const hv *h3_config(const h3 *h) { return h->config; }
