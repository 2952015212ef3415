/* diskcache.c - parsed data files kept on disk between runs.
 *
 * Parsing YAML with libyaml is the largest cost of a one-shot `hiera lookup`. A parsed file is
 * written, in a compact binary form, to a per-user cache folder; the next run that needs the same
 * file reads it back instead of parsing, when the file is provably unchanged: same path, device,
 * inode, size, modification and change times (to the nanosecond). Anything unexpected (another
 * owner, a short or corrupt file, a different version) is a miss, and the file is parsed as usual.
 *
 * Form: "HIERAC" 3 (version; 3 since yaml_data converts nested symbol keys) 0, the identity of
 * the source (path, dev, ino, size, mtime, ctime), the format, flags, then the value: one tag
 * byte per node ('n' nil, 't' true, 'f' false, 'i' int64, 'd' double, 's' string, 'b' bigint,
 * 'y' symbol, 'a' array, 'h' hash, 'r' a node already written, for YAML aliases), each followed
 * by its source line and its payload. */
#include "formats/diskcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "HIERAC\3\0"
#define MAX_DEPTH 1000
#define MAX_NODES 20000000UL

struct diskcache {
    char *dir;
    uid_t uid; /* the owner the folder and its entries must have: this process's euid */
};

diskcache *diskcache_open(const char *dir)
{
    char *d;
    if (dir && *dir) {
        d = xstrdup(dir);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            d = xasprintf("%s/hiera", xdg);
        else if (home && *home == '/')
            d = xasprintf("%s/.cache/hiera", home);
        else
            return NULL;
    }
    /* the folder: created private; refused when someone else could write into it */
    char *parent = xstrdup(d);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        mkdir(parent, 0700);
    }
    free(parent);
    if (mkdir(d, 0700) != 0 && errno != EEXIST) {
        free(d);
        return NULL;
    }
    struct stat st;
    uid_t uid = geteuid();
    if (lstat(d, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 022)) {
        free(d);
        return NULL;
    }
    diskcache *c = xcalloc(1, sizeof *c);
    c->dir = d;
    c->uid = uid;
    return c;
}

const char *diskcache_dir(const diskcache *c) { return c->dir; }

void diskcache_close(diskcache *c)
{
    if (!c)
        return;
    free(c->dir);
    free(c);
}

static char *entry_path(const diskcache *c, const char *path, int fmt)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fmt;
    for (const char *p = path; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    char name[sizeof "/0123456789abcdef.hc"];
    name[0] = '/';
    for (int i = 0; i < 16; i++)
        name[1 + i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
    memcpy(name + 17, ".hc", 4);
    return xjoin(c->dir, name, NULL); /* (no printf: one per file and per node) */
}

/* ------------------------------------------------------------------ writing */

typedef struct {
    sbuf b;
    const hv **keys; /* shared nodes already written -> index */
    uint64_t *idx;
    size_t cap, n;
    uint64_t count;
} wctx;

static void put_u64(sbuf *b, uint64_t v) { sb_addn(b, (const char *)&v, 8); }

static void put_var(sbuf *b, uint64_t v)
{
    while (v >= 0x80) {
        sb_addc(b, (char)(v | 0x80));
        v >>= 7;
    }
    sb_addc(b, (char)v);
}

static size_t slot(const wctx *w, const hv *v)
{
    size_t i = (((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ULL) & (w->cap - 1);
    while (w->keys[i] && w->keys[i] != v)
        i = (i + 1) & (w->cap - 1);
    return i;
}

static void remember(wctx *w, const hv *v, uint64_t index)
{
    if ((w->n + 1) * 2 > w->cap) {
        const hv **ok = w->keys;
        uint64_t *oi = w->idx;
        size_t oc = w->cap;
        w->cap = oc ? oc * 2 : 64;
        w->keys = xcalloc(w->cap, sizeof *w->keys);
        w->idx = xcalloc(w->cap, sizeof *w->idx);
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                size_t j = slot(w, ok[i]);
                w->keys[j] = ok[i];
                w->idx[j] = oi[i];
            }
        free(ok);
        free(oi);
    }
    size_t i = slot(w, v);
    w->keys[i] = v;
    w->idx[i] = index;
    w->n++;
}

static bool write_node(wctx *w, const hv *v, int depth)
{
    if (depth > MAX_DEPTH)
        return false;
    hv_kind k = hv_kind_of(v);
    bool shareable = (k == HV_ARRAY || k == HV_HASH || k == HV_STRING) && hv_is_shared(v) && !hv_is_immortal(v);
    if (shareable && w->cap) {
        size_t i = slot(w, v);
        if (w->keys[i]) {
            sb_addc(&w->b, 'r');
            put_var(&w->b, w->idx[i]);
            return true;
        }
    }
    uint64_t index = w->count++;
    if (shareable)
        remember(w, v, index);
    switch (k) {
    case HV_UNDEF: sb_addc(&w->b, 'n'); break;
    case HV_BOOL: sb_addc(&w->b, hv_bool_val(v) ? 't' : 'f'); break;
    case HV_INT: sb_addc(&w->b, 'i'); break;
    case HV_FLOAT: sb_addc(&w->b, 'd'); break;
    case HV_STRING: sb_addc(&w->b, 's'); break;
    case HV_BIGINT: sb_addc(&w->b, 'b'); break;
    case HV_SYMBOL: sb_addc(&w->b, 'y'); break;
    case HV_ARRAY: sb_addc(&w->b, 'a'); break;
    case HV_HASH: sb_addc(&w->b, 'h'); break;
    default: return false; /* sensitive values never come from files */
    }
    put_var(&w->b, hv_line(v));
    switch (k) {
    case HV_INT: {
        int64_t i = hv_int_val(v);
        put_u64(&w->b, (uint64_t)i);
        break;
    }
    case HV_FLOAT: {
        double d = hv_float_val(v);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        put_u64(&w->b, bits);
        break;
    }
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        put_var(&w->b, hv_str_len(v));
        sb_addn(&w->b, hv_str_ptr(v), hv_str_len(v));
        break;
    case HV_ARRAY:
        put_var(&w->b, hv_array_len(v));
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (!write_node(w, hv_array_get(v, i), depth + 1))
                return false;
        break;
    case HV_HASH:
        put_var(&w->b, hv_hash_len(v));
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!write_node(w, hv_hash_key_at(v, i), depth + 1) || !write_node(w, hv_hash_val_at(v, i), depth + 1))
                return false;
        break;
    default:
        break;
    }
    return true;
}

static void put_identity(sbuf *b, const char *path, int fmt, const struct stat *st, unsigned flags)
{
    sb_addn(b, MAGIC, 8);
    put_var(b, strlen(path));
    sb_adds(b, path);
    put_u64(b, (uint64_t)st->st_dev);
    put_u64(b, (uint64_t)st->st_ino);
    put_u64(b, (uint64_t)st->st_size);
    put_u64(b, (uint64_t)st->st_mtim.tv_sec);
    put_u64(b, (uint64_t)st->st_mtim.tv_nsec);
    put_u64(b, (uint64_t)st->st_ctim.tv_sec);
    put_u64(b, (uint64_t)st->st_ctim.tv_nsec);
    put_var(b, (uint64_t)fmt);
    put_var(b, flags);
}

void diskcache_put(diskcache *c, const char *path, int fmt, const struct stat *st, const hv *value, unsigned flags)
{
    if (!c)
        return;
    wctx w = {0};
    put_identity(&w.b, path, fmt, st, flags);
    bool ok = write_node(&w, value, 0);
    free(w.keys);
    free(w.idx);
    if (!ok) {
        sb_free(&w.b);
        return;
    }
    char *final = entry_path(c, path, fmt);
    char *tmp = xasprintf("%s.XXXXXX", final);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        const char *p = sb_str(&w.b);
        size_t left = w.b.len;
        bool good = true;
        while (left && good) {
            ssize_t n = write(fd, p, left);
            if (n <= 0) {
                good = errno == EINTR && n < 0;
                continue;
            }
            p += n;
            left -= (size_t)n;
        }
        good = close(fd) == 0 && good;
        if (!good || rename(tmp, final) != 0)
            unlink(tmp);
    }
    free(tmp);
    free(final);
    sb_free(&w.b);
}

/* ------------------------------------------------------------------ reading */

typedef struct {
    const unsigned char *p, *end;
    hv **nodes; /* every node in order, for 'r' */
    size_t n, cap;
} rctx;

static bool get_u64(rctx *r, uint64_t *v)
{
    if (r->end - r->p < 8)
        return false;
    memcpy(v, r->p, 8);
    r->p += 8;
    return true;
}

static bool get_var(rctx *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return false;
        unsigned char c = *r->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static void keep(rctx *r, hv *v)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->nodes = xrealloc(r->nodes, r->cap * sizeof *r->nodes);
    }
    r->nodes[r->n++] = v;
}

static hv *read_node(rctx *r, int depth)
{
    if (depth > MAX_DEPTH || r->p >= r->end || r->n > MAX_NODES)
        return NULL;
    unsigned char tag = *r->p++;
    uint64_t line, len, u;
    if (tag == 'r') {
        if (!get_var(r, &u) || u >= r->n || !r->nodes[u])
            return NULL;
        return hv_incref(r->nodes[u]);
    }
    if (!get_var(r, &line))
        return NULL;
    hv *v = NULL;
    size_t slot_index = r->n;
    keep(r, NULL); /* reserve the index in write order */
    switch (tag) {
    case 'n': v = hv_undef(); break;
    case 't': v = hv_true(); break;
    case 'f': v = hv_false(); break;
    case 'i':
        if (!get_u64(r, &u))
            return NULL;
        v = hv_int((int64_t)u);
        break;
    case 'd': {
        if (!get_u64(r, &u))
            return NULL;
        double d;
        memcpy(&d, &u, 8);
        v = hv_float(d);
        break;
    }
    case 's': case 'b': case 'y':
        if (!get_var(r, &len) || len > (uint64_t)(r->end - r->p))
            return NULL;
        v = tag == 's' ? hv_strn((const char *)r->p, len)
            : tag == 'b' ? hv_bigint((const char *)r->p, len) : hv_symbol((const char *)r->p, len);
        r->p += len;
        break;
    case 'a':
        /* a container becomes referable only when complete: no cycles can be built */
        if (!get_var(r, &len) || len > (uint64_t)(r->end - r->p))
            return NULL;
        v = hv_array_sized(len);
        for (uint64_t i = 0; i < len; i++) {
            hv *e = read_node(r, depth + 1);
            if (!e) {
                hv_decref(v);
                return NULL;
            }
            hv_array_push(v, e);
        }
        break;
    case 'h':
        if (!get_var(r, &len) || len > (uint64_t)(r->end - r->p) / 2)
            return NULL;
        v = hv_hash_sized(len);
        for (uint64_t i = 0; i < len; i++) {
            hv *k = read_node(r, depth + 1);
            hv *e = k ? read_node(r, depth + 1) : NULL;
            if (!e || !hv_hash_add(v, k, e)) {
                /* a repeated key is never written: the entry is corrupt (and replacing the
                 * value would free a node that a later 'r' may name) */
                hv_decref(k);
                hv_decref(e);
                hv_decref(v);
                return NULL;
            }
        }
        break;
    default:
        return NULL;
    }
    hv_set_line(v, (uint32_t)line);
    r->nodes[slot_index] = v;
    return v;
}

hv *diskcache_get(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags)
{
    if (!c)
        return NULL;
    char *file = entry_path(c, path, fmt);
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(file);
    if (fd < 0)
        return NULL;
    struct stat cst;
    hv *value = NULL;
    if (fstat(fd, &cst) == 0 && S_ISREG(cst.st_mode) && cst.st_uid == c->uid && cst.st_size > 0 &&
        cst.st_size < (off_t)1 << 31) {
        size_t n = (size_t)cst.st_size;
        unsigned char *buf = xmalloc(n);
        size_t got = 0;
        while (got < n) {
            ssize_t k = read(fd, buf + got, n - got);
            if (k <= 0) {
                if (k < 0 && errno == EINTR)
                    continue;
                break;
            }
            got += (size_t)k;
        }
        if (got == n) {
            /* the identity must be exactly the one this file would be written with */
            sbuf id = {0};
            put_identity(&id, path, fmt, st, 0);
            size_t idlen = id.len - 1; /* without the flags varint (one byte for small values) */
            if (n > idlen + 1 && memcmp(buf, id.s, idlen) == 0) {
                rctx r = {buf + idlen, buf + n, NULL, 0, 0};
                uint64_t fl;
                if (get_var(&r, &fl)) {
                    value = read_node(&r, 0);
                    if (value && r.p != r.end) {
                        hv_decref(value);
                        value = NULL;
                    }
                    if (value)
                        *flags = (unsigned)fl;
                }
                free(r.nodes);
            }
            sb_free(&id);
        }
        free(buf);
    }
    close(fd);
    return value;
}
