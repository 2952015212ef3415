/* cache.c - every data file and hiera.yaml is parsed once per process and kept by path; a later
 * use re-stats the file and parses again only when device, inode, size or mtime changed (what
 * Puppet's cached_file_data checks). Parse errors are kept as well, so a broken file costs one
 * parse, not one per lookup. */
#include "engine/cache.h"
#include "base/diag.h"
#include "base/fileio.h"
#include "formats/diskcache.h"
#include "crypto/eyaml.h"
#include "base/glob.h"
#include "formats/hocon.h"
#include "formats/json.h"
#include "engine/memo.h"
#include "formats/psych.h"
#include "formats/render.h"
#include "base/fsjournal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct centry {
    struct centry *next;
    char *path;
    file_format fmt;
    uint64_t code;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    hv *value; /* NULL when err is set */
    herr err;
    hv *info;  /* data formats: what each top-level key needs, filled as keys are asked */
    uint32_t kid; /* frozen: the data hash's number in the key index (0: not indexed) */
    lazy_data *lazy; /* a hash read key by key from the disk cache (value NULL until asked whole) */
} centry;

/* A data hash whose disk cache entry has an index: its values decoded one key at a time (see
 * diskcache.c), the whole hash only when someone asks for it. Shared by the cache entry and the
 * locations that loaded it (a refill of the entry leaves theirs alone). */
struct lazy_data {
    unsigned rc;
    dc_map *map;   /* NULL once the whole hash is known */
    hv *got;       /* key -> value, the values decoded so far */
    hv *whole;     /* the whole hash, once asked */
    herr err;      /* the whole hash could not be had (see lazy_data_whole) */
    char *path;
    file_format fmt;
};

/* A key in this many files or more keeps them as a bitmap too, of at most KIX_BITS_PER_FILE
 * bytes per file holding the key. */
#define KIX_BITS_FROM 2
#define KIX_BITS_PER_FILE 128

typedef struct {
    uint64_t code; /* 0: empty (first: oa_regrow) */
    const hv *key; /* BORROWED from the data hash */
    key_index entry;
} kix_slot;

struct hiera_cache {
    cache_head head; /* (first: cache.h reads it inline) */
    centry **buckets;
    size_t nbuckets, n;
    eyaml_ctx *eyaml; /* keys and decrypted blocks, shared like the files */
    diskcache *disk; /* parsed files kept between runs, or NULL */
    hv *exists; /* path -> path_state: nothing, not a directory, a directory */
    /* frozen: the last file path_state found by stat(), with what it said, for the load that
     * usually follows (a node's own file is asked once: one stat instead of two) */
    char *last_path;
    struct stat last_st;
    bool stat_once; /* cache_stat_once: the same for a cache that is not frozen */
    char *run_id;   /* cache_set_run_identity */
    size_t run_id_len;
    hv *globs;  /* pattern -> array of paths */
    hv *memo;   /* interpolation expressions, parsed once (see interp.c) */
    hv *warned; /* the warnings given once (cache_warn_once) */
    kix_slot *kix;        /* the key index (frozen only) */
    size_t kix_cap, kix_n;
    centry **kid_entries; /* the key index's files, by number - 1 */
    size_t kid_cap;
    /* objects the engine shares between contexts (compiled lookup_options), by signature */
    hv *shared_index;
    void **shared;
    void (**shared_free)(void *);
    size_t nshared;
    recent_key *recent; /* RECENT_KEYS slots, made on first use */
    size_t nrecent;
    recent_key *recent_at[RECENT_BY_ADDRESS]; /* the slot last found for a key text's address */
    json_memo *json; /* the JSON text of stable containers (cache_json_memo), made on first use */
    dc_strings *facts_strings; /* strings shared between facts read back (cache_share_facts_strings) */
    /* a view over files already read (a snapshot): they are taken from there */
    const file_source *src_ops;
    void *src;
};

hiera_cache *cache_new(void)
{
    hiera_cache *c = xcalloc(1, sizeof *c);
    c->nbuckets = 64;
    c->buckets = xcalloc(c->nbuckets, sizeof *c->buckets);
    return c;
}

static lazy_data *lazy_new(dc_map *map, const char *path, file_format fmt)
{
    lazy_data *ld = xcalloc(1, sizeof *ld);
    ld->rc = 1;
    ld->map = map;
    ld->got = hv_hash();
    ld->path = xstrdup(path);
    ld->fmt = fmt;
    return ld;
}

lazy_data *lazy_data_retain(lazy_data *ld)
{
    if (ld)
        ld->rc++;
    return ld;
}

void lazy_data_release(lazy_data *ld)
{
    if (!ld || --ld->rc)
        return;
    dc_map_free(ld->map);
    hv_decref(ld->got);
    hv_decref(ld->whole);
    herr_clear(&ld->err);
    free(ld->path);
    free(ld);
}

static void entry_free(centry *e)
{
    lazy_data_release(e->lazy);
    free(e->path);
    hv_decref(e->info);
    hv_decref(e->value);
    herr_clear(&e->err);
    free(e);
}

void cache_free(hiera_cache *c)
{
    if (!c)
        return;
    json_memo_free(c->json); /* (first: it holds references on values the rest keeps) */
    for (size_t i = 0; i < c->nbuckets; i++) {
        centry *e = c->buckets[i];
        while (e) {
            centry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    free(c->buckets);
    for (size_t i = 0; c->recent && i < RECENT_KEYS; i++)
        free(c->recent[i].text);
    free(c->recent);
    diskcache_close(c->disk);
    eyaml_free(c->eyaml);
    hv_decref(c->exists);
    free(c->last_path);
    free(c->run_id);
    hv_decref(c->globs);
    hv_decref(c->memo);
    memo_free(c->head.work);
    for (size_t i = 0; i < c->kix_cap; i++) {
        for (uint32_t j = 0; j < c->kix[i].entry.n; j++)
            hv_decref(c->kix[i].entry.hits[j].deps);
        free(c->kix[i].entry.hits);
        free(c->kix[i].entry.kids);
        free(c->kix[i].entry.bits);
    }
    free(c->kix);
    free(c->kid_entries);
    for (size_t i = 0; i < c->nshared; i++)
        if (c->shared_free[i])
            c->shared_free[i](c->shared[i]);
    free(c->shared);
    free(c->shared_free);
    hv_decref(c->shared_index);
    hv_decref(c->warned);
    if (c->src_ops)
        c->src_ops->release(c->src);
    dc_strings_free(c->facts_strings); /* (last: values anywhere may hold its strings) */
    free(c);
}

hiera_cache *cache_new_view(const file_source *ops, void *src)
{
    hiera_cache *c = cache_new();
    c->src_ops = ops;
    c->src = src;
    cache_freeze(c);
    return c;
}


void *cache_shared_get(hiera_cache *c, const char *signature, bool *found)
{
    hv *i = c->shared_index ? hv_hash_gets(c->shared_index, signature) : NULL;
    *found = i != NULL;
    return i ? c->shared[hv_int_val(i)] : NULL;
}

void cache_shared_put(hiera_cache *c, const char *signature, void *obj, void (*free_fn)(void *))
{
    if (!c->shared_index)
        c->shared_index = hv_hash();
    c->shared = xrealloc(c->shared, (c->nshared + 1) * sizeof *c->shared);
    c->shared_free = xrealloc(c->shared_free, (c->nshared + 1) * sizeof *c->shared_free);
    c->shared[c->nshared] = obj;
    c->shared_free[c->nshared] = free_fn;
    hv_hash_sets(c->shared_index, signature, hv_int((int64_t)c->nshared));
    c->nshared++;
}

struct diskcache *cache_disk(hiera_cache *c) { return c->disk; }

#define WARN_ONCE_MAX 4096

bool cache_warn_once(hiera_cache *c, const char *id)
{
    if (!c)
        return true;
    if (!c->warned)
        c->warned = hv_hash();
    if (hv_hash_gets(c->warned, id) || hv_hash_len(c->warned) >= WARN_ONCE_MAX)
        return false;
    hv_hash_sets(c->warned, id, hv_true());
    return true;
}

hv *cache_memo(hiera_cache *c)
{
    if (!c->memo)
        c->memo = hv_hash();
    return c->memo;
}

void cache_share_facts_strings(hiera_cache *c)
{
    if (!c->facts_strings)
        c->facts_strings = dc_strings_new();
}

dc_strings *cache_facts_strings(hiera_cache *c) { return c->facts_strings; }

json_memo *cache_json_memo(hiera_cache *c)
{
    if (!c->json)
        c->json = json_memo_new();
    return c->json;
}

memo *cache_work_memo_make(hiera_cache *c)
{
    if (!c->head.frozen)
        return NULL;
    if (!c->head.work)
        c->head.work = memo_new();
    return c->head.work;
}

bool cache_use_disk(hiera_cache *c, const char *dir)
{
    diskcache_close(c->disk);
    c->disk = diskcache_open(dir);
    return c->disk != NULL;
}

static inline size_t recent_at_index(const char *key)
{
    return (size_t)(((uintptr_t)key >> 3) * 0x9e3779b97f4a7c15ull >> 32) & (RECENT_BY_ADDRESS - 1);
}

recent_key *cache_recent_find(hiera_cache *c, const char *key, size_t len, uint64_t code)
{
    if (!c->recent)
        return NULL;
    for (size_t i = (size_t)code & (RECENT_KEYS - 1);; i = (i + 1) & (RECENT_KEYS - 1)) {
        recent_key *r = &c->recent[i];
        if (!r->text)
            return NULL;
        if (r->code == code && r->len == len && memcmp(r->text, key, len) == 0) {
            c->recent_at[recent_at_index(key)] = r;
            return r;
        }
    }
}

recent_key *cache_recent_at(hiera_cache *c, const char *key)
{
    recent_key *r = c->recent_at[recent_at_index(key)];
    return r && r->text && strcmp(r->text, key) == 0 ? r : NULL;
}

recent_key *cache_recent_add(hiera_cache *c, const char *key, size_t len, uint64_t code, const hv *entry)
{
    if (!c->recent)
        c->recent = xcalloc(RECENT_KEYS, sizeof *c->recent);
    if (4 * (c->nrecent + 1) > 3 * RECENT_KEYS) {
        for (size_t i = 0; i < RECENT_KEYS; i++)
            free(c->recent[i].text);
        memset(c->recent, 0, RECENT_KEYS * sizeof *c->recent);
        memset(c->recent_at, 0, sizeof c->recent_at);
        c->nrecent = 0;
    }
    size_t i = (size_t)code & (RECENT_KEYS - 1);
    while (c->recent[i].text)
        i = (i + 1) & (RECENT_KEYS - 1);
    c->recent[i] = (recent_key){.text = xstrndup(key, len), .len = len, .code = code, .entry = entry};
    c->nrecent++;
    return &c->recent[i];
}

void cache_stat_once(hiera_cache *c) { c->stat_once = true; }

void cache_set_run_identity(hiera_cache *c, const void *id, size_t len)
{
    free(c->run_id);
    c->run_id = xmalloc(len ? len : 1);
    memcpy(c->run_id, id, len);
    c->run_id_len = len;
}

const void *cache_run_identity(const hiera_cache *c, size_t *len)
{
    *len = c->run_id_len;
    return c->run_id;
}

void cache_freeze(hiera_cache *c)
{
    c->head.frozen = true;
    if (c->eyaml)
        eyaml_freeze(c->eyaml);
    if (!c->exists)
        c->exists = hv_hash();
    if (!c->globs)
        c->globs = hv_hash();
}

eyaml_ctx *cache_eyaml(hiera_cache *c)
{
    if (!c->eyaml) {
        c->eyaml = eyaml_new();
        if (c->head.frozen)
            eyaml_freeze(c->eyaml);
    }
    return c->eyaml;
}

static uint64_t path_code(const char *p, file_format fmt)
{
    return hash_bytes(p, strlen(p)) ^ (uint64_t)fmt * 0x9e3779b97f4a7c15ULL;
}

static void grow(hiera_cache *c)
{
    size_t nb = c->nbuckets * 2;
    centry **b = xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < c->nbuckets; i++) {
        centry *e = c->buckets[i];
        while (e) {
            centry *next = e->next;
            size_t j = (size_t)(e->code & (nb - 1));
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = nb;
}

static bool read_all(const char *path, sbuf *out, herr *err)
{
    file_read_error fe;
    if (file_read(path, out, &(file_read_opts){.max = (size_t)CACHE_MAX_FILE_SIZE}, &fe))
        return true;
    if (fe.failed == FILE_READ_TOO_BIG) {
        herr_set(err, HERR_LOOKUP, "File '%s' is larger than %lld bytes", path, (long long)CACHE_MAX_FILE_SIZE);
        herr_at(err, path, 0, 0);
    } else {
        herr_file_read(err, HERR_ERROR, path, &fe);
    }
    return false;
}

static hv *parse(const char *path, const char *text, size_t len, file_format fmt, herr *err)
{
    switch (fmt) {
    case FMT_YAML:
    case FMT_CONFIG:
        return yaml_parse(text, len, path, YAML_PUPPET, err);
    case FMT_YAML3:
        return yaml_parse(text, len, path, YAML_HIERA3, err);
    case FMT_JSON:
        return hjson_parse_puppet(text, len, path, err);
    case FMT_HOCON:
        return hocon_parse(text, len, path, err);
    case FMT_TEXT:
        return hv_strn(text, len);
    }
    return NULL;
}

/* The error a data function or config loader raises for a file its parser refused:
 * yaml_data/json_data/hocon_data raise LookupErrors "Unable to parse ...", a hiera.yaml gives a
 * Puppet::Util::Yaml::YamlLoadError (a Puppet::Error). The YAML loader's messages are Psych's,
 * already prefixed with "(<file>): " where Puppet shows the file. Recursive YAML data makes Ruby
 * overflow its stack: a SystemStackError nobody rescues, so printed as it is. */
static void wrap_parse_error(const char *path, file_format fmt, herr *e)
{
    const char *m = e->msg ? e->msg : "";
    char *msg;
    if ((fmt == FMT_YAML || fmt == FMT_CONFIG) && strncmp(m, "stack level too deep", 20) == 0) {
        e->kind = HERR_ERROR;
        return;
    }
    switch (fmt) {
    case FMT_YAML:
        msg = xasprintf("Unable to parse %s", m);
        e->kind = HERR_LOOKUP;
        break;
    case FMT_CONFIG:
        msg = xstrdup(m);
        e->kind = HERR_PUPPET;
        break;
    case FMT_JSON:
        msg = strncmp(m, "Unable to parse", 15) == 0 ? xstrdup(m) : xasprintf("Unable to parse (%s): %s", path, m);
        e->kind = HERR_LOOKUP;
        break;
    case FMT_HOCON:
        /* hocon_data rescues the gem's ConfigErrors only ("Unable to parse (path): ..."); the
         * gem's plain Ruby exceptions (NameError, ArgumentError, FloatDomainError) end the run */
        if (strncmp(m, "Unable to parse", 15) != 0) {
            e->kind = HERR_ERROR;
            return;
        }
        msg = xstrdup(m);
        e->kind = HERR_LOOKUP;
        break;
    default:
        return;
    }
    free(e->msg);
    e->msg = msg;
}

bool hv_is_rich_data(const hv *v, int depth)
{
    if (depth > 10000)
        return false;
    switch (hv_kind_of(v)) {
    case HV_SYMBOL:
        return false;
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (!hv_is_rich_data(hv_array_get(v, i), depth + 1))
                return false;
        return true;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            const hv *k = hv_hash_key_at(v, i);
            if (!(hv_is(k, HV_STRING) || hv_is(k, HV_INT) || hv_is(k, HV_BIGINT) || hv_is(k, HV_FLOAT)))
                return false;
            if (!hv_is_rich_data(hv_hash_val_at(v, i), depth + 1))
                return false;
        }
        return true;
    default:
        return true;
    }
}

bool hv_has_interpolation(const hv *v, int depth)
{
    if (depth > 10000)
        return true;
    if (hv_is(v, HV_STRING))
        return find_interp_open(hv_str_ptr(v), hv_str_len(v)) != NULL;
    for (size_t i = 0; i < hv_array_len(v); i++)
        if (hv_has_interpolation(hv_array_get(v, i), depth + 1))
            return true;
    for (size_t i = 0; i < hv_hash_len(v); i++)
        if (hv_has_interpolation(hv_hash_key_at(v, i), depth + 1) || hv_has_interpolation(hv_hash_val_at(v, i), depth + 1))
            return true;
    return false;
}

/* yaml_data's own rule on what Psych gave: symbol keys become strings, at every depth
 * (HieraConfig.symkeys_to_string). A document that is not a hash is kept as it is: what it then
 * is (a warning and an empty hash, or an error under strict = error) depends on the context's
 * settings (lookup_data.c location_load). */
#define DC_WARN_NOT_HASH CACHE_WARNED_NOT_HASH /* disk cache flag of earlier versions: the document was replaced by {} */

static hv *prepare_yaml_data(hv *v)
{
    return hv_is(v, HV_HASH) ? hv_symkeys_to_string(v) : v;
}

/* What a top-level key of a data file needs, found when first asked (see cache_load_data). */
int cache_key_flags(hv *keyflags, const char *key, size_t len, uint64_t code, const hv *value)
{
    hv *known = hv_hash_getsn_code(keyflags, key, len, code);
    if (known)
        return (int)hv_int_val(known);
    int bits = (hv_has_interpolation(value, 0) ? KEY_INTERP : 0) | (hv_is_rich_data(value, 0) ? 0 : KEY_INVALID);
    hv_hash_set(keyflags, hv_strn(key, len), hv_int(bits));
    return bits;
}

static bool data_format(file_format f) { return f == FMT_YAML || f == FMT_JSON || f == FMT_HOCON || f == FMT_CONFIG; }

/* Files smaller than this are parsed, not kept. Every file that is not empty is kept: reading a
 * 200-byte entry back (open, fstat, read, close) costs less than starting libyaml's parser, whose
 * buffers alone are 16 fresh pages (a one-shot lookup whose global hiera.yaml and node file are
 * that small: 130K fewer instructions, 9 fewer page faults, about 0.15 ms less). */
#define DISK_MIN_SIZE 1

/* text parsed as fmt, as parse_file parses a file's bytes */
static hv *parse_text(const char *path, const char *text, size_t len, file_format fmt, herr *err)
{
    /* Hiera 3 reads with 'BOM|UTF-8', which drops a byte order mark; Puppet does not */
    if (fmt == FMT_YAML3 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }
    hv *v = parse(path, text, len, fmt, err);
    if (!v)
        wrap_parse_error(path, fmt, err);
    else if (fmt == FMT_YAML)
        v = prepare_yaml_data(v);
    return v;
}

/* The warning a lookup gives for a data file whose top is not a hash under strict = warning (kept
 * for snapshot.c: parses no longer warn, see prepare_yaml_data) */
void cache_warn_not_hash(const char *path)
{
    diag_warn("data-not-hash", path, 0, 0, "%s: file does not contain a valid yaml hash", path);
}

/* The file read and parsed as fmt (and prepared as yaml_data does), or NULL with err. */
static hv *parse_file(const char *path, file_format fmt, herr *err)
{
    sbuf text = {0};
    hv *v = NULL;
    if (read_all(path, &text, err))
        v = parse_text(path, text.s, text.len, fmt, err);
    sb_free(&text);
    return v;
}

hv *cache_parse_text(const char *path, const char *text, size_t len, file_format fmt, herr *err)
{
    return parse_text(path, text, len, fmt, err);
}

hv *cache_parse_bytes(const char *path, const char *text, size_t len, file_format fmt, unsigned *flags, herr *err)
{
    *flags = 0; /* (a document that is not a hash is kept: the lookup decides, under its strict setting) */
    return parse_text(path, text, len, fmt, err);
}

/* The whole hash of ld (BORROWED), decoded now when it was not yet. A corrupt entry (its source's
 * identity matched, so this is rare) gives the file parsed again, or NULL with err when that
 * fails too. */
static hv *lazy_data_whole(lazy_data *ld, herr *err)
{
    if (!ld->whole && !herr_isset(&ld->err)) {
        ld->whole = dc_map_value(ld->map);
        if (!ld->whole) {
            ld->whole = parse_file(ld->path, ld->fmt, &ld->err);
        }
        if (ld->whole) {
            dc_map_free(ld->map);
            ld->map = NULL;
        }
    }
    if (!ld->whole && err) {
        herr_clear(err);
        *err = (herr){ld->err.kind, xstrdup(ld->err.msg ? ld->err.msg : ""), ld->err.file ? xstrdup(ld->err.file) : NULL,
                      ld->err.line, ld->err.col};
    }
    return ld->whole;
}

int lazy_data_get(lazy_data *ld, const char *key, size_t len, uint64_t code, hv **out, herr *err)
{
    *out = NULL;
    if (!ld->whole) {
        hv *v = hv_hash_getsn_code(ld->got, key, len, code);
        if (v) {
            *out = v;
            return 1;
        }
        if (ld->map) {
            int r = dc_map_get(ld->map, key, len, code, &v);
            if (r == 0)
                return 0;
            if (r > 0) {
                hv_hash_set(ld->got, hv_strn(key, len), v);
                *out = v;
                return 1;
            }
        }
    }
    hv *whole = lazy_data_whole(ld, err);
    if (!whole)
        return -1;
    *out = hv_hash_getsn_code(whole, key, len, code);
    return *out != NULL;
}

hv *lazy_data_hash(lazy_data *ld, herr *err) { return lazy_data_whole(ld, err); }

static void fill(hiera_cache *c, centry *e, const struct stat *st, bool lazy)
{
    unsigned dflags = 0;
    dc_map *map = NULL;
    hv_decref(e->info);
    e->info = NULL;
    hv_decref(e->value);
    e->value = NULL;
    lazy_data_release(e->lazy);
    e->lazy = NULL;
    herr_clear(&e->err);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->size = st->st_size;
    e->mtime = st->st_mtim;
    if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
        /* a FIFO or device would block or never end (a fact can name one in a path) */
        herr_set(&e->err, HERR_LOOKUP, "File '%s' is not a regular file", e->path);
        herr_at(&e->err, e->path, 0, 0);
    } else if (st->st_size > CACHE_MAX_FILE_SIZE) {
        herr_set(&e->err, HERR_LOOKUP, "File '%s' is larger than %lld bytes", e->path, (long long)CACHE_MAX_FILE_SIZE);
        herr_at(&e->err, e->path, 0, 0);
    } else if (c->disk && data_format(e->fmt) && st->st_size >= DISK_MIN_SIZE &&
               ((e->value = lazy ? diskcache_get_lazy(c->disk, e->path, (int)e->fmt, st, &dflags, &map)
                                 : diskcache_get(c->disk, e->path, (int)e->fmt, st, &dflags)) != NULL ||
                map)) {
        if (map)
            e->lazy = lazy_new(map, e->path, e->fmt);
        if (dflags & DC_WARN_NOT_HASH) {
            /* an earlier version's entry, which kept {} for the document: parsed again */
            hv_decref(e->value);
            e->value = NULL;
            lazy_data_release(e->lazy);
            e->lazy = NULL;
            e->value = parse_file(e->path, e->fmt, &e->err);
            if (e->value)
                diskcache_put(c->disk, e->path, (int)e->fmt, st, e->value, 0);
        }
    } else {
        e->value = parse_file(e->path, e->fmt, &e->err);
        if (e->value && c->disk && data_format(e->fmt) && st->st_size >= DISK_MIN_SIZE)
            diskcache_put(c->disk, e->path, (int)e->fmt, st, e->value, 0);
    }
}

static bool same_stat(const centry *e, const struct stat *st)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static centry *find_entry(hiera_cache *c, const char *path, file_format fmt, uint64_t code)
{
    size_t b = (size_t)(code & (c->nbuckets - 1));
    for (centry *e = c->buckets[b]; e; e = e->next)
        if (e->code == code && e->fmt == fmt && strcmp(e->path, path) == 0)
            return e;
    return NULL;
}

static hv *entry_result(centry *e, herr *err)
{
    if (!e->value && e->lazy) {
        /* asked whole after all */
        hv *whole = lazy_data_whole(e->lazy, &e->err);
        e->value = hv_incref(whole);
    }
    if (!e->value) {
        herr_clear(err);
        if (err) {
            err->kind = e->err.kind;
            err->msg = xstrdup(e->err.msg ? e->err.msg : "");
            err->file = e->err.file ? xstrdup(e->err.file) : NULL;
            err->line = e->err.line;
            err->col = e->err.col;
        }
        return NULL;
    }
    return hv_incref(e->value);
}

/* The entry of path, loaded or refreshed as cache_load says (lazy: a data hash the disk cache
 * holds with an index may be left to lazy_data), or NULL with err when the file cannot be
 * stat()ed (seen: its stat() already made, or NULL). */
static centry *load_entry(hiera_cache *c, const char *path, file_format fmt, bool lazy, const struct stat *seen,
                          herr *err)
{
    if (c->head.frozen) {
        centry *known = find_entry(c, path, fmt, path_code(path, fmt));
        if (known)
            return known;
    }
    const hv *sv = NULL;
    const herr *se = NULL;
    if (c->src_ops && c->src_ops->get(c->src, path, fmt, &sv, &se)) {
        /* read by the source: its value (immortal) or its error, kept as a loaded file */
        uint64_t code = path_code(path, fmt);
        centry *e = xcalloc(1, sizeof *e);
        e->path = xstrdup(path);
        e->fmt = fmt;
        e->code = code;
        e->value = (hv *)sv;
        if (!sv)
            e->err = (herr){se->kind, xstrdup(se->msg ? se->msg : ""), se->file ? xstrdup(se->file) : NULL, se->line, se->col};
        size_t b = (size_t)(code & (c->nbuckets - 1));
        e->next = c->buckets[b];
        c->buckets[b] = e;
        if (++c->n > c->nbuckets * 2)
            grow(c);
        return e;
    }
    struct stat st;
    if (!seen && (c->head.frozen || c->stat_once) && c->last_path && strcmp(c->last_path, path) == 0)
        seen = &c->last_st; /* (path_state's stat of a moment ago: the file is not stat()ed twice) */
    if (seen) {
        st = *seen;
    } else if (fs_stat(path, &st) != 0) {
        herr_set(err, HERR_LOOKUP, "Unable to read file '%s': %s", path, ERRNO_TEXT(errno));
        herr_at(err, path, 0, 0);
        return NULL;
    }
    lazy = lazy && !c->head.frozen;
    uint64_t code = path_code(path, fmt);
    size_t b = (size_t)(code & (c->nbuckets - 1));
    centry *e = find_entry(c, path, fmt, code);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->path = xstrdup(path);
        e->fmt = fmt;
        e->code = code;
        fill(c, e, &st, lazy);
        e->next = c->buckets[b];
        c->buckets[b] = e;
        if (++c->n > c->nbuckets * 2)
            grow(c);
    } else if (!same_stat(e, &st)) {
        fill(c, e, &st, lazy);
    }
    return e;
}

hv *cache_load(hiera_cache *c, const char *path, file_format fmt, herr *err)
{
    centry *e = load_entry(c, path, fmt, false, NULL, err);
    return e ? entry_result(e, err) : NULL;
}

static kix_slot *kix_find(const hiera_cache *c, const char *key, size_t len, uint64_t code)
{
    if (!c->kix_cap)
        return NULL;
    size_t mask = c->kix_cap - 1;
    for (size_t i = (size_t)code & mask;; i = (i + 1) & mask) {
        kix_slot *s = &c->kix[i];
        if (!s->code || (s->code == code && hv_str_len(s->key) == len && memcmp(hv_str_ptr(s->key), key, len) == 0))
            return s;
    }
}

static void kix_grow(hiera_cache *c)
{
    size_t ncap = c->kix_cap ? c->kix_cap * 2 : 4096;
    c->kix = oa_regrow(c->kix, c->kix_cap, ncap, sizeof *c->kix);
    c->kix_cap = ncap;
    c->head.kix_gen++; /* (the entries moved) */
}

/* Adds kid to x's bitmap (made from kids the first time), or gives the bitmap up when it
 * would outgrow its bound. */
static void kix_set_bit(key_index *x, uint32_t kid)
{
    uint32_t need = kid / 64 + 1;
    if (need > x->nwords) {
        if ((size_t)need * 8 > (size_t)x->n * KIX_BITS_PER_FILE) {
            free(x->bits);
            x->bits = NULL;
            x->nwords = 0;
            x->no_bits = true;
            return;
        }
        uint32_t nw = need > x->nwords * 2 ? need : x->nwords * 2;
        if ((size_t)nw * 8 > (size_t)x->n * KIX_BITS_PER_FILE)
            nw = need;
        bool fresh = !x->bits;
        x->bits = xrealloc(x->bits, (size_t)nw * sizeof *x->bits);
        memset(x->bits + x->nwords, 0, (size_t)(nw - x->nwords) * sizeof *x->bits);
        x->nwords = nw;
        if (fresh)
            for (uint32_t i = 0; i < x->n; i++)
                x->bits[x->kids[i] / 64] |= 1ull << (x->kids[i] % 64);
    }
    x->bits[kid / 64] |= 1ull << (kid % 64);
}

/* Numbers a frozen cache's data hash and adds its string keys to the key index. */
static void kix_add_file(hiera_cache *c, centry *e)
{
    e->kid = ++c->head.kix_files;
    if (e->kid > c->kid_cap) {
        c->kid_cap = c->kid_cap ? 2 * c->kid_cap : 256;
        c->kid_entries = xrealloc(c->kid_entries, c->kid_cap * sizeof *c->kid_entries);
    }
    c->kid_entries[e->kid - 1] = e;
    hv_set_stable_deep(e->value); /* kept, unchanged, to the end: merges of its values are remembered */
    const hv *v = e->value;
    for (size_t i = 0; i < hv_hash_len(v); i++) {
        const hv *k = hv_hash_key_at(v, i);
        if (!hv_is(k, HV_STRING))
            continue; /* lookups ask for string keys only */
        if ((c->kix_n + 1) * 4 > c->kix_cap * 3)
            kix_grow(c);
        const char *ks = hv_str_ptr(k);
        size_t kl = hv_str_len(k);
        uint64_t code = hv_str_code(ks, kl);
        kix_slot *s = kix_find(c, ks, kl, code);
        if (!s->code) {
            s->code = code;
            s->key = k;
            c->kix_n++;
            c->head.kix_gen++; /* (lookups of this key found no entry) */
        }
        key_index *x = &s->entry;
        if (x->n == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 4;
            x->hits = xrealloc(x->hits, x->cap * sizeof *x->hits);
            x->kids = xrealloc(x->kids, x->cap * sizeof *x->kids);
        }
        x->kids[x->n] = e->kid;
        x->hits[x->n++] = (key_hit){.flags = -1, .value = hv_hash_val_at(v, i)};
        if (x->n >= KIX_BITS_FROM && !x->no_bits)
            kix_set_bit(x, e->kid);
    }
}

hv *cache_load_data(hiera_cache *c, const char *path, file_format fmt, hv **keyflags, uint32_t *kid, lazy_data **lazy,
                    const struct stat *known, herr *err)
{
    *keyflags = NULL;
    *kid = 0;
    if (lazy)
        *lazy = NULL;
    centry *e = load_entry(c, path, fmt, lazy != NULL, known, err);
    if (!e)
        return NULL;
    if (lazy && e->lazy && !e->value) {
        if (!e->info)
            e->info = hv_hash();
        *keyflags = e->info;
        *lazy = lazy_data_retain(e->lazy);
        return NULL;
    }
    hv *v = entry_result(e, err);
    if (v && hv_is(v, HV_HASH)) {
        if (!e->info)
            e->info = hv_hash();
        *keyflags = e->info;
        if (c->head.frozen && !e->kid && c->head.kix_files < UINT32_MAX)
            kix_add_file(c, e);
        *kid = e->kid;
    }
    return v;
}


uint32_t cache_loaded_kid(hiera_cache *c, const char *path, file_format fmt)
{
    if (!c->head.frozen)
        return 0;
    centry *e = find_entry(c, path, fmt, path_code(path, fmt));
    return e ? e->kid : 0;
}

hv *cache_kid_data(hiera_cache *c, uint32_t kid, hv **keyflags)
{
    if (!c->head.frozen || !kid || kid > c->head.kix_files)
        return NULL;
    centry *e = c->kid_entries[kid - 1];
    *keyflags = e->info;
    return e->value;
}

const key_index *cache_key_index(const hiera_cache *c, const char *key, size_t len, uint64_t code)
{
    kix_slot *s = kix_find(c, key, len, code);
    return s && s->code ? &s->entry : NULL;
}

key_hit *key_index_find(const key_index *x, uint32_t kid)
{
    if (!x)
        return NULL;
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint32_t m = x->kids[mid];
        if (m == kid)
            return &x->hits[mid];
        if (m < kid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* What stat() says of path: 0 nothing there, 1 something that is not a directory, 2 a directory
 * (remembered when the cache is frozen). */
static int path_state(hiera_cache *c, const char *path)
{
    if (c->head.frozen) {
        hv *known = hv_hash_gets(c->exists, path);
        if (known)
            return (int)hv_int_val(known);
    }
    if (c->stat_once && c->last_path && strcmp(c->last_path, path) == 0)
        return 1; /* (the file found a moment ago: a configuration asked for twice) */
    int state = c->src_ops ? c->src_ops->path_state(c->src, path) : -1;
    if (state < 0) {
        struct stat st;
        state = fs_stat(path, &st) != 0 ? 0 : S_ISDIR(st.st_mode) ? 2 : 1;
        if ((c->head.frozen || c->stat_once) && state == 1) {
            free(c->last_path);
            c->last_path = xstrdup(path);
            c->last_st = st;
        }
    }
    if (c->head.frozen)
        hv_hash_sets(c->exists, path, hv_int(state));
    return state;
}

/* Ruby's Pathname#exist?: directories exist too (reading one then fails) */
bool cache_file_exists(hiera_cache *c, const char *path) { return path_state(c, path) != 0; }

bool cache_dir_exists(hiera_cache *c, const char *path) { return path_state(c, path) == 2; }

bool cache_file_exists_stat(hiera_cache *c, const char *path, struct stat **st)
{
    *st = NULL;
    if (c->head.frozen || c->src_ops)
        return path_state(c, path) != 0;
    struct stat s;
    if (fs_stat(path, &s) != 0)
        return false;
    *st = xmalloc(sizeof s);
    **st = s;
    return true;
}

int cache_glob(hiera_cache *c, const char *pattern, size_t limit, glob_result *out)
{
    hv *known = c->head.frozen ? hv_hash_gets(c->globs, pattern) : NULL;
    if (!known) {
        glob_result g = {0};
        int rc = glob_expand(pattern, &g, limit);
        if (!c->head.frozen || rc < 0) {
            *out = g;
            return rc;
        }
        known = hv_array_sized(g.n);
        for (size_t i = 0; i < g.n; i++)
            hv_array_push(known, hv_str(g.paths[i]));
        glob_free(&g);
        hv_hash_sets(c->globs, pattern, known);
    }
    out->n = hv_array_len(known);
    out->paths = xcalloc(out->n ? out->n : 1, sizeof *out->paths);
    for (size_t i = 0; i < out->n; i++)
        out->paths[i] = xstrdup(hv_str_ptr(hv_array_get(known, i)));
    return 0;
}
