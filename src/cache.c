/* cache.c - every data file and hiera.yaml is parsed once per process and kept by path; a later
 * use re-stats the file and parses again only when device, inode, size or mtime changed (what
 * Puppet's cached_file_data checks). Parse errors are kept as well, so a broken file costs one
 * parse, not one per lookup. */
#include "hiera_int.h"
#include "eyaml.h"
#include "hocon.h"
#include "json.h"
#include "yaml.h"

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
} centry;

struct hiera_cache {
    centry **buckets;
    size_t nbuckets, n;
    eyaml_ctx *eyaml; /* keys and decrypted blocks, shared like the files */
};

/* Files larger than this are refused rather than read into memory. */
#define CACHE_MAX_FILE_SIZE ((off_t)256 * 1024 * 1024)

hiera_cache *cache_new(void)
{
    hiera_cache *c = xcalloc(1, sizeof *c);
    c->nbuckets = 64;
    c->buckets = xcalloc(c->nbuckets, sizeof *c->buckets);
    return c;
}

static void entry_free(centry *e)
{
    free(e->path);
    hv_decref(e->value);
    herr_clear(&e->err);
    free(e);
}

void cache_free(hiera_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        centry *e = c->buckets[i];
        while (e) {
            centry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    free(c->buckets);
    eyaml_free(c->eyaml);
    free(c);
}

eyaml_ctx *cache_eyaml(hiera_cache *c)
{
    if (!c->eyaml)
        c->eyaml = eyaml_new();
    return c->eyaml;
}

static uint64_t path_code(const char *p, file_format fmt)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fmt;
    for (; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    return h;
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
    FILE *f = fopen(path, "rb");
    if (!f) {
        herr_set(err, HERR_ERROR, "%s @ rb_sysopen - %s", strerror(errno), path);
        herr_at(err, path, 0, 0);
        return false;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        sb_addn(out, buf, n);
        if ((off_t)out->len > CACHE_MAX_FILE_SIZE) {
            fclose(f);
            herr_set(err, HERR_LOOKUP, "File '%s' is larger than %lld bytes", path, (long long)CACHE_MAX_FILE_SIZE);
            herr_at(err, path, 0, 0);
            return false;
        }
    }
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        herr_set(err, HERR_ERROR, "%s @ io_fread - %s", strerror(e), path);
        herr_at(err, path, 0, 0);
        return false;
    }
    fclose(f);
    if (!out->s)
        sb_adds(out, "");
    return true;
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
        return hjson_parse(text, len, path, err);
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
    case FMT_HOCON:
        msg = strncmp(m, "Unable to parse", 15) == 0 ? xstrdup(m) : xasprintf("Unable to parse (%s): %s", path, m);
        e->kind = HERR_LOOKUP;
        break;
    default:
        return;
    }
    free(e->msg);
    e->msg = msg;
}

static void fill(centry *e, const struct stat *st)
{
    hv_decref(e->value);
    e->value = NULL;
    herr_clear(&e->err);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->size = st->st_size;
    e->mtime = st->st_mtim;
    sbuf text = {0};
    if (st->st_size > CACHE_MAX_FILE_SIZE) {
        herr_set(&e->err, HERR_LOOKUP, "File '%s' is larger than %lld bytes", e->path, (long long)CACHE_MAX_FILE_SIZE);
        herr_at(&e->err, e->path, 0, 0);
    } else if (read_all(e->path, &text, &e->err)) {
        const char *t = text.s;
        size_t n = text.len;
        /* Hiera 3 reads with 'BOM|UTF-8', which drops a byte order mark; Puppet does not */
        if (e->fmt == FMT_YAML3 && n >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0) {
            t += 3;
            n -= 3;
        }
        e->value = parse(e->path, t, n, e->fmt, &e->err);
        if (!e->value)
            wrap_parse_error(e->path, e->fmt, &e->err);
    }
    sb_free(&text);
}

static bool same_stat(const centry *e, const struct stat *st)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

hv *cache_load(hiera_cache *c, const char *path, file_format fmt, herr *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        herr_set(err, HERR_LOOKUP, "Unable to read file '%s': %s", path, strerror(errno));
        herr_at(err, path, 0, 0);
        return NULL;
    }
    uint64_t code = path_code(path, fmt);
    size_t b = (size_t)(code & (c->nbuckets - 1));
    centry *e;
    for (e = c->buckets[b]; e; e = e->next)
        if (e->code == code && e->fmt == fmt && strcmp(e->path, path) == 0)
            break;
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->path = xstrdup(path);
        e->fmt = fmt;
        e->code = code;
        fill(e, &st);
        e->next = c->buckets[b];
        c->buckets[b] = e;
        if (++c->n > c->nbuckets * 2)
            grow(c);
    } else if (!same_stat(e, &st)) {
        fill(e, &st);
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

bool cache_file_exists(hiera_cache *c, const char *path)
{
    (void)c;
    /* Ruby's Pathname#exist?: directories exist too (reading one then fails) */
    struct stat st;
    return stat(path, &st) == 0;
}
