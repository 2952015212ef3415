/* h3_backends.c - Hiera 3's data sources (Backend.datadir, Backend.datasources), its file cache
 * (Hiera::Filecache) and the yaml and json backends (see hiera3.c for the flow; eyaml_backend.c
 * is the third backend). */
#include "hiera3/hiera3_int.h"
#include "base/fileio.h"
#include "base/rubyver.h"
#include "formats/diskcache.h"
#include "formats/json.h"
#include "formats/psych.h"
#include "formats/render.h"
#include "base/fsjournal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ datadir and datasources */

char *h3_datadir(h3 *h, const char *backend, const hv *scope, herr *err)
{
    const hv *sect = h3_sym_get(h->config, backend);
    const hv *dir = NULL;
    if (hv_truthy(sect)) {
        if (hv_is(sect, HV_HASH)) {
            dir = h3_sym_get(sect, "datadir");
        } else if (hv_is(sect, HV_STRING) || hv_is(sect, HV_ARRAY) || hv_is(sect, HV_INT)) {
            h3_raise(h, err, H3E_CONFIG, "TypeError", "no implicit conversion of Symbol into Integer");
            return NULL;
        } else {
            char *ins = h3_inspect_dup(sect);
            {
            char *nm = ruby_no_method("[]", ins, ruby_class_name(sect));
            h3_raise(h, err, H3E_CONFIG, "NoMethodError", "%s", nm);
            free(nm);
        }
            free(ins);
            return NULL;
        }
    }
    hv *def = NULL;
    if (!hv_truthy(dir))
        dir = def = hv_str("/etc/puppet/environments/%{environment}/hieradata"); /* Hiera::Util.var_dir */
    if (!hv_is(dir, HV_STRING)) {
        h3_raise(h, err, H3E_CONFIG, "Hiera::InvalidConfigurationError", "datadir for %s cannot be an array", backend);
        return NULL;
    }
    hv *r = h3_interpolate_config(h, dir, scope, NULL, err);
    hv_decref(def);
    if (!r)
        return NULL;
    char *s = h3_to_s_dup(r);
    hv_decref(r);
    return s;
}

char *h3_datafile_path(const char *datadir, const char *source, const char *ext)
{
    /* File.join(datadir, "#{source}.#{ext}") */
    size_t dl = strlen(datadir);
    sbuf b = {0};
    sb_adds(&b, datadir);
    if (dl && datadir[dl - 1] == '/') {
        while (*source == '/')
            source++;
    } else if (*source != '/') {
        sb_addc(&b, '/');
    }
    sb_adds(&b, source);
    sb_addc(&b, '.');
    sb_adds(&b, ext);
    return sb_take(&b);
}

/* source =~ /(^\/|\/\/|\/$)/ with Ruby's line anchors */
static bool bad_source(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '/')
            continue;
        if (i == 0 || s[i - 1] == '\n' || i + 1 == n || s[i + 1] == '\n' || s[i + 1] == '/')
            return true;
    }
    return false;
}

void h3_flatten_entries(hv *out, const hv *v, int depth)
{
    if (hv_is(v, HV_ARRAY) && depth < H3_MAX_VALUE_DEPTH) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            h3_flatten_entries(out, hv_array_get(v, i), depth + 1);
    } else {
        hv_array_push(out, hv_incref((hv *)v));
    }
}

int h3_datasources(h3 *h, const hv *scope, const hv *override, h3_source_fn fn, void *arg, herr *err)
{
    hv *entries = hv_array();
    if (override)
        h3_flatten_entries(entries, override, 0);
    const hv *hier = h3_sym_get(h->config, "hierarchy");
    if (hier)
        h3_flatten_entries(entries, hier, 0);
    else
        hv_array_push(entries, hv_str("common"));
    int rc = 0;
    for (size_t i = 0; i < hv_array_len(entries) && rc == 0; i++) {
        hv *src = h3_interpolate_config(h, hv_array_get(entries, i), scope, override, err);
        if (!src) {
            rc = -1;
            break;
        }
        char *s = h3_to_s_dup(src);
        size_t n = hv_is(src, HV_STRING) || hv_is(src, HV_SYMBOL) ? hv_str_len(src) : strlen(s);
        bool is_str = hv_is(src, HV_STRING), is_sym = hv_is(src, HV_SYMBOL);
        bool no_match_method = h->ruby33 && !is_str && !is_sym && !hv_is(src, HV_UNDEF);
        char *no_match = no_match_method ? ruby_no_method("=~", s, ruby_class_name(src)) : NULL;
        hv_decref(src);
        if (no_match) {
            /* Ruby 3.2 dropped Object#=~: `source =~ /.../` on a number or a boolean (Hiera 3.12) */
            h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "%s", no_match);
            free(no_match);
            rc = -1;
        } else if ((is_str && n == 0) || ((is_str || is_sym) && bad_source(s, n))) {
            h3_debug(h, "Ignoring bad definition in :hierarchy: '%s'", s);
        } else if (memchr(s, 0, n)) {
            h3_raise(h, err, H3E_LOOKUP, "ArgumentError", "string contains null byte");
            rc = -1;
        } else {
            rc = fn(h, s, arg, err);
        }
        free(s);
    }
    hv_decref(entries);
    return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ Hiera::Filecache */

typedef struct {
    char *path;
    bool has_meta;
    ino_t ino;
    struct timespec mtime;
    off_t size;
    hv *data; /* NULL: Ruby's nil (never read successfully) */
} fc_entry;

struct h3_filecache {
    fc_entry *e;
    size_t n, cap;
};

h3_filecache *h3_filecache_new(void) { return xcalloc(1, sizeof(h3_filecache)); }

void h3_filecache_free(h3_filecache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].path);
        hv_decref(c->e[i].data);
    }
    free(c->e);
    free(c);
}

static fc_entry *fc_find(h3_filecache *c, const char *path)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].path, path) == 0)
            return &c->e[i];
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->e = xrealloc(c->e, c->cap * sizeof *c->e);
    }
    fc_entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->path = xstrdup(path);
    return e;
}

static const char *errno_class(int e)
{
    switch (e) {
    case ENOENT: return "Errno::ENOENT";
    case EACCES: return "Errno::EACCES";
    case EISDIR: return "Errno::EISDIR";
    default: return "SystemCallError";
    }
}

/* File.read(path, :encoding => 'BOM|UTF-8') */
char *h3_read_whole(h3 *h, const char *path, size_t *len, herr *err)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe)) {
        sb_free(&b);
        char *m = file_read_ruby_message(path, &fe);
        h3_raise(h, err, H3E_LOOKUP, errno_class(fe.err), "%s", m);
        free(m);
        return NULL;
    }
    *len = b.len;
    char *s = sb_take(&b);
    if (*len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB && (unsigned char)s[2] == 0xBF) {
        memmove(s, s + 3, *len - 2);
        *len -= 3;
    }
    return s;
}

void h3_set_disk(h3 *h, struct diskcache *d) { h->disk = d; }

static hv *parse_yaml3(const char *text, size_t len, const char *path, herr *err);
static hv *parse_json3(const char *text, size_t len, const char *path, herr *err);

/* The disk cache's format number for what parse gives (numbers of their own: the engine's
 * readers of the same files convert differently), 0 when it is not cached. Empty files are
 * parsed; every other file is kept (reading an entry back costs less than starting libyaml's
 * parser, as the engine's cache.c measured). */
#define H3_DISK_MIN_SIZE 1
static int disk_format(h3_parse_fn parse) { return parse == parse_yaml3 ? 0x301 : parse == parse_json3 ? 0x302 : 0; }

hv *h3_filecache_read(h3 *h, h3_filecache *c, const char *path, h3_parse_fn parse, herr *err)
{
    struct stat st;
    if (fs_stat(path, &st) != 0) {
        int e = errno;
        h3_raise(h, err, H3E_LOOKUP, errno_class(e), "%s @ rb_file_s_stat - %s", ERRNO_TEXT(e), path);
        return NULL;
    }
    fc_entry *e = fc_find(c, path);
    bool stale = !(e->has_meta && e->ino == st.st_ino && e->size == st.st_size && e->mtime.tv_sec == st.st_mtim.tv_sec &&
                   e->mtime.tv_nsec == st.st_mtim.tv_nsec);
    if (stale) {
        /* Ruby quirk: the metadata is recorded before reading, so a file that failed to load
         * is not read again until it changes; its previous data (or nil) is served instead */
        e->has_meta = true;
        e->ino = st.st_ino;
        e->size = st.st_size;
        e->mtime = st.st_mtim;
        int dfmt = h->disk && S_ISREG(st.st_mode) && st.st_size >= H3_DISK_MIN_SIZE ? disk_format(parse) : 0;
        unsigned dflags = 0;
        hv *v = dfmt ? diskcache_get(h->disk, path, dfmt, &st, &dflags) : NULL;
        if (!v) {
            size_t len;
            char *text = h3_read_whole(h, path, &len, err);
            if (!text)
                return NULL;
            herr perr = {0};
            v = parse(text, len, path, &perr);
            free(text);
            if (!v) {
                const char *cls = h3_psych_class(perr.msg);
                herr_move(err, &perr);
                h3_note_error(h, H3E_LOOKUP, cls);
                return NULL;
            }
            if (dfmt)
                diskcache_put(h->disk, path, dfmt, &st, v, 0);
        }
        hv_decref(e->data);
        e->data = v;
        if (!hv_is(v, HV_HASH)) {
            h3_raise(h, err, H3E_LOOKUP, "TypeError", "Data retrieved from %s is %s not Hash", path, ruby_class_name(v));
            return NULL;
        }
    }
    return e->data ? hv_incref(e->data) : hv_undef();
}

/* ------------------------------------------------------------------ the yaml and json backends */

typedef struct {
    const char *section; /* :yaml / :json */
    const char *ext;
    const char *label;   /* "YAML" / "JSON" in debug messages */
    h3_parse_fn parse;
    bool datadir_first; /* yaml uses datasourcefiles (datadir once, up front) */
    bool found_debug;
} file_backend_def;

static hv *parse_yaml3(const char *text, size_t len, const char *path, herr *err)
{
    hv *v = yaml_parse(text, len, path, YAML_HIERA3, err);
    if (v && !hv_truthy(v)) { /* YAML.load(data) || {} */
        hv_decref(v);
        v = hv_hash();
    }
    return v;
}

static hv *parse_json3(const char *text, size_t len, const char *path, herr *err)
{
    hv *v = hjson_parse(text, len, path, err);
    if (!v && err->msg) {
        /* JSON.parse's exception escapes Hiera 3 as it is: its message without json_data's
         * "Unable to parse (<path>): " */
        char *prefix = xasprintf("Unable to parse (%s): ", path);
        size_t n = strlen(prefix);
        if (strncmp(err->msg, prefix, n) == 0)
            memmove(err->msg, err->msg + n, strlen(err->msg + n) + 1);
        free(prefix);
    }
    return v; /* (the parser itself refuses the 101st level, as JSON.parse does) */
}

static const file_backend_def yaml_def = {"yaml", "yaml", "YAML", parse_yaml3, true, true};
static const file_backend_def json_def = {"json", "json", "JSON", parse_json3, false, false};

typedef struct {
    const file_backend_def *def;
    h3_filecache *cache;
    char *datadir;
    const hv *key;
    const char *keys; /* key.to_s for messages */
    const hv *scope;
    const h3_resolution *res;
    h3_strategy strategy;
    h3_ctx *ctx;
    bool found;
    hv *answer;
} file_walk;

/* What `data.empty?`, `data.include?(key)` and `data[key]` do when the Filecache hands back a
 * value that is not a hash (Ruby quirk: only after it once raised its TypeError). Returns 0 to
 * skip the file, 1 with *value when found, -1 on error. */
static int non_hash_data(h3 *h, const hv *data, const hv *key, hv **value, herr *err)
{
    if (hv_is(data, HV_ARRAY)) {
        bool has = false;
        for (size_t i = 0; i < hv_array_len(data) && !has; i++)
            has = hv_equal(hv_array_get(data, i), key);
        if (!hv_array_len(data) || !has)
            return 0;
        h3_raise(h, err, H3E_LOOKUP, "TypeError", hv_is(key, HV_UNDEF) ? "no implicit conversion from nil to integer"
                                                                      : "no implicit conversion of String into Integer");
        return -1;
    }
    if (hv_is(data, HV_STRING)) {
        if (!hv_str_len(data))
            return 0;
        if (!hv_is(key, HV_STRING)) {
            h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of nil into String");
            return -1;
        }
        if (!memmem(hv_str_ptr(data), hv_str_len(data), hv_str_ptr(key), hv_str_len(key)))
            return 0;
        *value = hv_incref((hv *)key); /* String#[](str) is str when it occurs */
        return 1;
    }
    if (hv_is(data, HV_SYMBOL) && !hv_str_len(data))
        return 0;
    char *ins = h3_inspect_dup(data);
    char *nm = ruby_no_method(hv_is(data, HV_SYMBOL) ? "include?" : "empty?", ins, ruby_class_name(data));
    h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "%s", nm);
    free(nm);
    free(ins);
    return -1;
}

static int file_source(h3 *h, const char *source, void *arg, herr *err)
{
    file_walk *w = arg;
    const file_backend_def *def = w->def;
    char *datadir = w->datadir;
    h3_debug(h, "Looking for data source %s", source);
    if (!def->datadir_first) {
        datadir = h3_datadir(h, def->section, w->scope, err);
        if (!datadir)
            return -1;
    }
    char *path = h3_datafile_path(datadir, source, def->ext);
    if (datadir != w->datadir)
        free(datadir);
    struct stat st;
    if (fs_stat(path, &st) != 0) {
        h3_debug(h, "Cannot find datafile %s, skipping", path);
        free(path);
        return 0;
    }
    hv *data = h3_filecache_read(h, w->cache, path, def->parse, err);
    free(path);
    if (!data)
        return -1;
    hv *raw = NULL;
    if (hv_is(data, HV_HASH)) {
        if (!hv_hash_len(data) || !(raw = hv_hash_get(data, w->key))) {
            hv_decref(data);
            return 0;
        }
        hv_incref(raw);
    } else {
        int q = non_hash_data(h, data, w->key, &raw, err);
        if (q <= 0) {
            hv_decref(data);
            return q;
        }
    }
    hv_decref(data);
    w->found = true;
    if (def->found_debug)
        h3_debug(h, "Found %s in %s", w->keys, source);
    hv *ans = h3_parse_answer(h, raw, w->scope, w->ctx, err);
    hv_decref(raw);
    if (!ans)
        return -1;
    switch (w->strategy) {
    case H3_ARRAY:
        if (!hv_is(ans, HV_ARRAY) && !hv_is(ans, HV_STRING)) {
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Array and got %s",
                     w->keys, ruby_class_name(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_array();
        hv_array_push(w->answer, ans);
        return 0;
    case H3_HASH:
        if (!hv_is(ans, HV_HASH)) {
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Hash and got %s",
                     w->keys, ruby_class_name(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_hash();
        w->answer = h3_merge_answer(h, ans, w->answer, w->res, err);
        return w->answer ? 0 : -1;
    case H3_PRIORITY:
        hv_decref(w->answer);
        w->answer = ans;
        return 1;
    }
    return 0;
}

static h3_result file_lookup(h3 *h, const file_backend_def *def, void *state, const hv *key, const hv *scope,
                             const hv *override, const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    file_walk w = {def, state, NULL, key, NULL, scope, res, res->has_merge ? H3_HASH : res->strategy, ctx, false, NULL};
    char *keys = h3_to_s_dup(key);
    w.keys = keys;
    h3_debug(h, "Looking up %s in %s backend", keys, def->label);
    int rc = 0;
    if (def->datadir_first) {
        w.datadir = h3_datadir(h, def->section, scope, err);
        if (!w.datadir)
            rc = -1;
    }
    if (rc == 0)
        rc = h3_datasources(h, scope, override, file_source, &w, err);
    free(w.datadir);
    free(keys);
    if (rc < 0) {
        hv_decref(w.answer);
        return H3_ERROR;
    }
    if (!w.found) {
        hv_decref(w.answer);
        return H3_NOT_FOUND;
    }
    *out = w.answer ? w.answer : hv_undef();
    return H3_FOUND;
}

static void *file_create(h3 *h, const char *label)
{
    h3_debug(h, "Hiera %s backend starting", label);
    return h3_filecache_new();
}

static void *yaml_create(h3 *h, herr *err) { return file_create(h, "YAML"); }
static void *json_create(h3 *h, herr *err) { return file_create(h, "JSON"); }
static void file_destroy(void *state) { h3_filecache_free(state); }

static h3_result yaml_lookup(h3 *h, void *state, const hv *key, const hv *scope, const hv *override,
                             const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    return file_lookup(h, &yaml_def, state, key, scope, override, res, ctx, out, err);
}

static h3_result json_lookup(h3 *h, void *state, const hv *key, const hv *scope, const hv *override,
                             const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    return file_lookup(h, &json_def, state, key, scope, override, res, ctx, out, err);
}

const h3_backend h3_yaml_backend = {"yaml", yaml_create, file_destroy, yaml_lookup};
const h3_backend h3_json_backend = {"json", json_create, file_destroy, json_lookup};
