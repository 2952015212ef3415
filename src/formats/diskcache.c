/* diskcache.c - parsed data files kept on disk between runs.
 *
 * Parsing YAML with libyaml is the largest cost of a one-shot `hiera lookup`. A parsed file is
 * written, in a compact binary form, to a per-user cache folder; the next run that needs the same
 * file reads it back instead of parsing, when the file is provably unchanged: same path, device,
 * inode, size, modification and change times (to the nanosecond). Anything unexpected (another
 * owner, a short or corrupt file, a different version) is a miss, and the file is parsed as usual.
 *
 * Form: "HIERAC" 4 (version; 4 since entries may hold an index) 0, the identity of the source
 * (path, dev, ino, size, mtime, ctime), the format, flags, the layout ('P' plain, 'I' indexed),
 * then the value: one tag byte per node ('n' nil, 't' true, 'f' false, 'i' int64, 'd' double,
 * 's' string, 'b' bigint, 'y' symbol, 'a' array, 'h' hash, 'r' a node already written, for YAML
 * aliases, by its number in write order), each followed by its source line and its payload.
 *
 * The index ('I'): a data file's value is a hash, and a lookup needs one or two of its top-level
 * keys (a one-shot `hiera lookup` reads a dozen files for one key: decoding them whole was half
 * of its instructions and most of its page faults). When no top-level entry refers to a node of
 * another entry, the value is followed by a table of its top-level string keys, sorted by their
 * hash code (hv_str_code): code (8 bytes), the key's offset, the value's offset and node number,
 * the key's length (4 bytes each); then the code of "lookup_options" (a changed hash function
 * makes the index unusable, not wrong), the number of keys and the value's end offset (4 bytes
 * each), and "HIX1". diskcache_get_lazy maps such an entry and decodes only the values asked for
 * (dc_map_get). A plain entry is read whole as before.
 *
 * Names: an entry is <16 hex digits>.hc, the FNV-1a hash of the format and the source's path, so
 * a source has one entry, replaced when it changes; it is written as <name>.XXXXXX and renamed
 * into place, so a reader sees a whole entry or none.
 *
 * Entries named by content (<16 hex digits>.hd: the first 8 bytes of a SHA-256 digest of the
 * file's bytes, the last xor'ed with the format) serve a reader that has read and digested the
 * bytes already (snapshots: hiera serve's hundred branches of one repository hold the same files
 * under as many paths): "HIERAD" 1 0, the 32 bytes of the digest, the format and flags, then the
 * value as above. Content never goes stale: a sweep removes them by use only.
 *
 * The bound (see "sweeping" at the end): entries whose source is gone or changed, and then the
 * least recently used entries beyond the size limit (HIERA_CACHE_MAX_SIZE, 256 MB by default),
 * are removed by a sweep that a process writing an entry starts when the last one is a day old
 * or when an eighth of the limit has been written since. A lookup that only reads never sweeps. */
#include "formats/diskcache.h"

#include "base/fileio.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC DISKCACHE_MAGIC
#define MAX_DEPTH 1000
#define MAX_NODES 20000000UL

struct diskcache {
    char *dir;
    uid_t uid; /* the owner the folder and its entries must have: this process's euid */
    uint64_t max_size; /* bytes of entries kept by a sweep */
    atomic_bool stamp_checked; /* this process has looked at the time of the last sweep */
};

char *diskcache_folder(const char *dir)
{
    if (dir && *dir)
        return xstrdup(dir);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg == '/')
        return xasprintf("%s/hiera", xdg);
    if (home && *home == '/')
        return xasprintf("%s/.cache/hiera", home);
    return NULL;
}

bool diskcache_folder_safe(const struct stat *st) { return S_ISDIR(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 022); }

diskcache *diskcache_open(const char *dir)
{
    char *d = diskcache_folder(dir);
    if (!d)
        return NULL;
    /* the folder: created private (when it is not there yet: a run with a warm cache makes one
     * system call here); refused when someone else could write into it */
    struct stat st;
    uid_t uid = geteuid();
    int found = lstat(d, &st);
    if (found != 0 && errno == ENOENT) {
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
        found = lstat(d, &st);
    }
    if (found != 0 || !diskcache_folder_safe(&st)) {
        free(d);
        return NULL;
    }
    diskcache *c = xcalloc(1, sizeof *c);
    c->dir = d;
    c->uid = uid;
    c->max_size = DISKCACHE_DEFAULT_MAX_SIZE;
    const char *max = getenv("HIERA_CACHE_MAX_SIZE");
    uint64_t m;
    if (max && diskcache_parse_size(max, &m))
        c->max_size = m;
    atomic_init(&c->stamp_checked, false);
    return c;
}

void diskcache_set_max_size(diskcache *c, uint64_t bytes) { c->max_size = bytes; }

bool diskcache_parse_size(const char *s, uint64_t *bytes)
{
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *bytes = (uint64_t)v << shift;
    return true;
}
const char *diskcache_dir(const diskcache *c) { return c->dir; }

void diskcache_close(diskcache *c)
{
    if (!c)
        return;
    free(c->dir);
    free(c);
}

char *diskcache_entry_path(const diskcache *c, const char *path, int fmt)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)fmt;
    for (const char *p = path; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    char name[sizeof "/0123456789abcdef.hc"];
    name[0] = '/';
    hex64(h, name + 1);
    memcpy(name + 17, ".hc", 4);
    return xjoin(c->dir, name, NULL); /* (no printf: one per file and per node) */
}

char *diskcache_digest_entry_path(const diskcache *c, const unsigned char *digest, int fmt)
{
    char name[sizeof "/0123456789abcdef.hd"];
    name[0] = '/';
    for (int i = 0; i < 8; i++) {
        unsigned char b = (unsigned char)(digest[i] ^ (i == 7 ? (unsigned)fmt : 0));
        name[1 + 2 * i] = "0123456789abcdef"[b >> 4];
        name[2 + 2 * i] = "0123456789abcdef"[b & 15];
    }
    memcpy(name + 17, ".hd", 4);
    return xjoin(c->dir, name, NULL);
}

/* ------------------------------------------------------------------ writing */

/* one top-level entry of a hash value, for the index */
typedef struct {
    uint64_t code;
    uint32_t key_off, val_off, val_base, key_len;
} ix_entry;

typedef struct {
    sbuf b;
    const hv **keys; /* shared nodes already written -> index */
    uint64_t *idx;
    size_t cap, n;
    uint64_t count;
    /* the index of a top-level hash (index: wanted), and where its current entry starts: a
     * reference to a node before it (cross) makes the entries depend on each other */
    bool index, cross;
    uint64_t entry_base;
    ix_entry *ix;
    size_t nix;
} wctx;


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
            if (w->idx[i] < w->entry_base)
                w->cross = true;
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
        sb_add_u64(&w->b, (uint64_t)i);
        break;
    }
    case HV_FLOAT: {
        double d = hv_float_val(v);
        uint64_t bits;
        memcpy(&bits, &d, 8);
        sb_add_u64(&w->b, bits);
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
        if (depth == 0 && w->index) {
            w->ix = xmalloc((hv_hash_len(v) ? hv_hash_len(v) : 1) * sizeof *w->ix);
            for (size_t i = 0; i < hv_hash_len(v); i++) {
                const hv *key = hv_hash_key_at(v, i);
                size_t key_off = w->b.len;
                w->entry_base = w->count;
                if (!write_node(w, key, depth + 1))
                    return false;
                size_t val_off = w->b.len;
                uint64_t val_base = w->count;
                w->entry_base = val_base; /* (a value is read alone: not even its key before it) */
                if (!write_node(w, hv_hash_val_at(v, i), depth + 1))
                    return false;
                if (w->b.s[key_off] == 's' && val_off <= UINT32_MAX && val_base <= UINT32_MAX)
                    w->ix[w->nix++] = (ix_entry){hv_str_code(hv_str_ptr(key), hv_str_len(key)), (uint32_t)key_off,
                                                 (uint32_t)val_off, (uint32_t)val_base, (uint32_t)hv_str_len(key)};
            }
            break;
        }
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
    sb_add_u64(b, (uint64_t)st->st_dev);
    sb_add_u64(b, (uint64_t)st->st_ino);
    sb_add_u64(b, (uint64_t)st->st_size);
    sb_add_u64(b, (uint64_t)st->st_mtim.tv_sec);
    sb_add_u64(b, (uint64_t)st->st_mtim.tv_nsec);
    sb_add_u64(b, (uint64_t)st->st_ctim.tv_sec);
    sb_add_u64(b, (uint64_t)st->st_ctim.tv_nsec);
    put_var(b, (uint64_t)fmt);
    put_var(b, flags);
}

static void after_write(diskcache *c, size_t bytes);

/* Writes an entry whole as final: into final.XXXXXX, renamed into place, so that a reader sees
 * all of it or none. The bytes written, or 0 when it failed (nothing left behind). */
static size_t write_whole(const char *final, const void *data, size_t len)
{
    char *tmp = xasprintf("%s.XXXXXX", final);
    int fd = mkstemp(tmp);
    size_t written = 0;
    if (fd >= 0) {
        bool good = fd_write_full(fd, data, len);
        good = close(fd) == 0 && good;
        if (!good || rename(tmp, final) != 0)
            unlink(tmp);
        else
            written = len;
    }
    free(tmp);
    return written;
}

#define IX_MAGIC "HIX1"
#define IX_ENTRY_SIZE 24
#define IX_TAIL_SIZE 20 /* code check (8), count, value end (4 each), IX_MAGIC */

static int ix_cmp(const void *a, const void *b)
{
    const ix_entry *x = a, *y = b;
    if (x->code != y->code)
        return x->code < y->code ? -1 : 1;
    return x->key_off < y->key_off ? -1 : x->key_off > y->key_off;
}


static void put_digest_identity(sbuf *b, const unsigned char *digest, int fmt, unsigned flags)
{
    sb_addn(b, DISKCACHE_DIGEST_MAGIC, 8);
    sb_addn(b, (const char *)digest, DISKCACHE_DIGEST_SIZE);
    put_var(b, (uint64_t)fmt);
    put_var(b, flags);
}

/* Writes value after the identity already in w->b, and the entry into the file final. */
static void put_entry(diskcache *c, wctx *wp, const char *final, const hv *value);

void diskcache_put(diskcache *c, const char *path, int fmt, const struct stat *st, const hv *value, unsigned flags)
{
    if (!c)
        return;
    wctx w = {0};
    put_identity(&w.b, path, fmt, st, flags);
    char *final = diskcache_entry_path(c, path, fmt);
    put_entry(c, &w, final, value);
    free(final);
}

void diskcache_put_digest(diskcache *c, const unsigned char *digest, int fmt, const hv *value, unsigned flags)
{
    if (!c)
        return;
    wctx w = {0};
    put_digest_identity(&w.b, digest, fmt, flags);
    char *final = diskcache_digest_entry_path(c, digest, fmt);
    put_entry(c, &w, final, value);
    free(final);
}

static void put_entry(diskcache *c, wctx *wp, const char *final, const hv *value)
{
    wctx w = *wp;
    size_t layout_at = w.b.len;
    sb_addc(&w.b, 'P');
    w.index = hv_is(value, HV_HASH);
    bool ok = write_node(&w, value, 0);
    free(w.keys);
    free(w.idx);
    if (ok && w.index && !w.cross && w.b.len <= UINT32_MAX && w.nix <= UINT32_MAX) {
        uint32_t end = (uint32_t)w.b.len;
        qsort(w.ix, w.nix, sizeof *w.ix, ix_cmp);
        for (size_t i = 0; i < w.nix; i++) {
            sb_add_u64(&w.b, w.ix[i].code);
            sb_add_u32(&w.b, w.ix[i].key_off);
            sb_add_u32(&w.b, w.ix[i].val_off);
            sb_add_u32(&w.b, w.ix[i].val_base);
            sb_add_u32(&w.b, w.ix[i].key_len);
        }
        sb_add_u64(&w.b, hv_str_code("lookup_options", 14));
        sb_add_u32(&w.b, (uint32_t)w.nix);
        sb_add_u32(&w.b, end);
        sb_addn(&w.b, IX_MAGIC, 4);
        w.b.s[layout_at] = 'I';
    }
    free(w.ix);
    if (!ok) {
        sb_free(&w.b);
        return;
    }
    if (w.b.len > c->max_size) { /* would be the first to go */
        sb_free(&w.b);
        after_write(c, 0);
        return;
    }
    size_t written = write_whole(final, w.b.s, w.b.len);
    sb_free(&w.b);
    after_write(c, written);
}

void diskcache_put_named(diskcache *c, const char *name, const void *data, size_t len)
{
    if (!c)
        return;
    if (len > c->max_size) {
        after_write(c, 0);
        return;
    }
    char *final = xjoin(c->dir, "/", name, NULL);
    size_t written = write_whole(final, data, len);
    free(final);
    after_write(c, written);
}

/* ------------------------------------------------------------------ reading */

typedef struct {
    const unsigned char *p, *end;
    hv **nodes; /* every node in order, for 'r' (nodes[i] is node number base + i) */
    size_t n, cap;
    uint64_t base;
    dc_strings *strings; /* strings shared between the values read (diskcache_get_shared), or NULL */
} rctx;

/* ---- strings shared between entries (dc_strings) ----
 * A string (its bytes and its line) met in a second entry becomes immortal and is handed out
 * again from then on: the keys and common values of a fleet's facts are made, and freed, once.
 * What was met once is remembered by its code in a bounded set (emptied when half full); the
 * table stops growing at DC_STRINGS_MAX. */
#define DC_STRINGS_MAX (1u << 16)
#define DC_SEEN_BITS 13

typedef struct {
    uint64_t code;
    hv *v;
} dc_slot;

struct dc_strings {
    dc_slot *slots; /* open addressing, at most half full; grows with the strings kept */
    size_t cap, n;
    code_set seen; /* the codes of strings met once */
    hv_nodes nodes; /* what hv_free_immortal frees */
};

dc_strings *dc_strings_new(void)
{
    dc_strings *t = xcalloc(1, sizeof *t);
    t->cap = 1024;
    t->slots = xcalloc(t->cap, sizeof *t->slots);
    t->seen = (code_set){.min_bits = DC_SEEN_BITS, .max_bits = DC_SEEN_BITS};
    return t;
}

void dc_strings_free(dc_strings *t)
{
    if (!t)
        return;
    hv_free_immortal(&t->nodes);
    free(t->slots);
    code_set_free(&t->seen);
    free(t);
}

static void strings_grow(dc_strings *t)
{
    size_t ncap = 2 * t->cap, mask = ncap - 1;
    dc_slot *slots = xcalloc(ncap, sizeof *slots);
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].v)
            continue;
        size_t j = (size_t)t->slots[i].code & mask;
        while (slots[j].v)
            j = (j + 1) & mask;
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = ncap;
}

/* The string of len bytes at p with this line: the shared one, or a new one (shared from now on
 * when it was met before). A new reference (immortal ones need none). */
static hv *shared_string(dc_strings *t, const char *p, size_t len, uint32_t line)
{
    uint64_t code = (hash_bytes(p, len) ^ ((uint64_t)line * 0x9e3779b97f4a7c15ULL)) | 1;
    size_t mask = t->cap - 1;
    for (size_t i = (size_t)code & mask; t->slots[i].v; i = (i + 1) & mask) {
        hv *v = t->slots[i].v;
        if (t->slots[i].code == code && hv_str_len(v) == len && hv_line(v) == line && memcmp(hv_str_ptr(v), p, len) == 0)
            return v;
    }
    hv *v = hv_strn(p, len);
    hv_set_line(v, line);
    if (t->n < DC_STRINGS_MAX && code_set_seen(&t->seen, code)) {
        hv_make_immortal(v, &t->nodes);
        if (2 * (t->n + 1) > t->cap)
            strings_grow(t);
        mask = t->cap - 1;
        size_t i = (size_t)code & mask;
        while (t->slots[i].v)
            i = (i + 1) & mask;
        t->slots[i] = (dc_slot){code, v};
        t->n++;
    }
    return v;
}

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
        if (!get_var(r, &u) || u < r->base || u - r->base >= r->n || !r->nodes[u - r->base])
            return NULL;
        return hv_incref(r->nodes[u - r->base]);
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
        if (tag == 's' && r->strings && line <= UINT32_MAX) {
            v = shared_string(r->strings, (const char *)r->p, len, (uint32_t)line);
            r->p += len;
            r->nodes[slot_index] = v;
            return v; /* (its line is part of it) */
        }
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

/* An entry mapped: its identity checked, the value from body to end, and the index when it has
 * one (nix entries at ix). */
struct dc_map {
    unsigned char *map;
    size_t size, body, end;
    const unsigned char *ix;
    uint32_t nix;
    bool heap; /* map was read into memory from malloc, not mapped */
};

static void dc_unmap(dc_map *m)
{
    if (m->heap)
        free(m->map);
    else
        munmap(m->map, m->size);
}

/* The size bytes of fd read into a new buffer, or NULL (also when the file is shorter). */
static unsigned char *read_all(int fd, size_t size)
{
    unsigned char *buf = malloc(size);
    if (buf && fd_read_full(fd, buf, size) != (ssize_t)size) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

static uint32_t u32_at(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t u64_at(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The index of m, checked once: the tail in place, every key and value inside the value, codes in
 * order. 1: usable; 0: well formed but made with another hash function (the value is read whole,
 * up to m->end); -1: corrupt (a miss). */
static int index_check(dc_map *m)
{
    const unsigned char *tail = m->map + m->size - IX_TAIL_SIZE;
    if (m->size - m->body < IX_TAIL_SIZE || memcmp(tail + 16, IX_MAGIC, 4) != 0)
        return -1;
    uint64_t nix = u32_at(tail + 8), end = u32_at(tail + 12);
    if (end < m->body || end + nix * IX_ENTRY_SIZE + IX_TAIL_SIZE != m->size)
        return -1;
    m->end = (size_t)end;
    if (u64_at(tail) != hv_str_code("lookup_options", 14))
        return 0;
    const unsigned char *ix = m->map + end;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < nix; i++) {
        const unsigned char *e = ix + i * IX_ENTRY_SIZE;
        uint64_t code = u64_at(e);
        uint32_t key_off = u32_at(e + 8), val_off = u32_at(e + 12);
        if (code < prev || key_off < m->body || key_off >= val_off || val_off >= end)
            return -1;
        prev = code;
    }
    m->ix = ix;
    m->nix = (uint32_t)nix;
    return 1;
}

/* Maps the entry of path when it is exactly this source's, of this version and owned by us;
 * *flags gets its flags. whole: the whole entry will be read at once and let go: it is read into
 * memory (mapping and unmapping cost two more system calls, and an unmapping in a process with
 * threads interrupts every CPU that ran one of them to flush its TLB: hiera batch's per-node facts
 * spent a third of their time there); otherwise it is mapped, and only the pages a lookup reads
 * are ever touched. */
static bool map_file(diskcache *c, const char *file, const sbuf *id, unsigned *flags, bool whole, dc_map *m);

static bool map_entry(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags, bool whole,
                      dc_map *m)
{
    char *file = diskcache_entry_path(c, path, fmt);
    /* the identity must be exactly the one this file would be written with */
    sbuf id = {0};
    put_identity(&id, path, fmt, st, 0);
    bool ok = map_file(c, file, &id, flags, whole, m);
    sb_free(&id);
    free(file);
    return ok;
}

/* Maps (or reads, whole) the entry file whose identity, before its flags, is id's bytes but the
 * last (id ends with flags 0, one byte). */
static bool map_file(diskcache *c, const char *file, const sbuf *id, unsigned *flags, bool whole, dc_map *m)
{
    int fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat cst;
    void *map = MAP_FAILED;
    if (fstat(fd, &cst) == 0 && S_ISREG(cst.st_mode) && cst.st_uid == c->uid && cst.st_size > 0 &&
        cst.st_size < (off_t)1 << 31) {
        if (whole) {
            unsigned char *buf = read_all(fd, (size_t)cst.st_size);
            map = buf ? buf : MAP_FAILED;
        } else {
            /* its page table filled at once (MAP_POPULATE): the pages are in the page cache,
             * and the first touch of each would otherwise be a page fault (the header and the
             * index at the tail at least: a one-shot lookup maps one entry per data file) */
            map = mmap(NULL, (size_t)cst.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        }
    }
    close(fd);
    if (map == MAP_FAILED)
        return false;
    /* (entries are written whole and renamed into place, never changed: the mapping cannot shrink
     * under the reader unless someone truncates a file of our private folder) */
    *m = (dc_map){map, (size_t)cst.st_size, 0, (size_t)cst.st_size, NULL, 0, whole};
    size_t idlen = id->len - 1; /* without the flags varint (one byte for small values) */
    bool ok = m->size > idlen + 2 && memcmp(m->map, id->s, idlen) == 0;
    if (ok) {
        rctx r = {m->map + idlen, m->map + m->size, NULL, 0, 0, 0, NULL};
        uint64_t fl;
        ok = get_var(&r, &fl) && r.p < r.end && (*r.p == 'P' || *r.p == 'I');
        if (ok) {
            *flags = (unsigned)fl;
            bool indexed = *r.p++ == 'I';
            m->body = (size_t)(r.p - m->map);
            if (indexed)
                ok = index_check(m) >= 0;
        }
    }
    if (!ok)
        dc_unmap(m);
    return ok;
}

/* The whole value of a mapped entry (a new reference), or NULL when it is corrupt. */
static hv *read_whole(const dc_map *m, dc_strings *strings)
{
    rctx r = {m->map + m->body, m->map + m->end, NULL, 0, 0, 0, strings};
    hv *value = read_node(&r, 0);
    if (value && r.p != r.end) {
        hv_decref(value);
        value = NULL;
    }
    free(r.nodes);
    return value;
}

hv *diskcache_get(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags)
{
    dc_map m;
    unsigned fl = 0;
    if (!c || !map_entry(c, path, fmt, st, &fl, true, &m))
        return NULL;
    hv *value = read_whole(&m, NULL);
    dc_unmap(&m);
    if (value)
        *flags = fl;
    return value;
}

hv *diskcache_get_digest(diskcache *c, const unsigned char *digest, int fmt, unsigned *flags)
{
    if (!c)
        return NULL;
    char *file = diskcache_digest_entry_path(c, digest, fmt);
    sbuf id = {0};
    put_digest_identity(&id, digest, fmt, 0);
    dc_map m;
    unsigned fl = 0;
    bool ok = map_file(c, file, &id, &fl, true, &m);
    sb_free(&id);
    free(file);
    if (!ok)
        return NULL;
    hv *value = read_whole(&m, NULL);
    dc_unmap(&m);
    if (value)
        *flags = fl;
    return value;
}

hv *diskcache_get_shared(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags,
                         dc_strings *strings)
{
    dc_map m;
    unsigned fl = 0;
    if (!c || !map_entry(c, path, fmt, st, &fl, true, &m))
        return NULL;
    hv *value = read_whole(&m, strings);
    dc_unmap(&m);
    if (value)
        *flags = fl;
    return value;
}

hv *diskcache_get_lazy(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags, dc_map **map)
{
    *map = NULL;
    dc_map m;
    unsigned fl = 0;
    if (!c || !map_entry(c, path, fmt, st, &fl, false, &m))
        return NULL;
    *flags = fl;
    if (m.ix) {
        *map = xmalloc(sizeof m);
        **map = m;
        return NULL;
    }
    hv *value = read_whole(&m, NULL);
    dc_unmap(&m);
    return value;
}

int dc_map_get(const dc_map *m, const char *key, size_t len, uint64_t code, hv **out)
{
    *out = NULL;
    size_t lo = 0, hi = m->nix;
    while (lo < hi) { /* the first entry whose code is not below code */
        size_t mid = lo + (hi - lo) / 2;
        if (u64_at(m->ix + mid * IX_ENTRY_SIZE) < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < m->nix && u64_at(m->ix + lo * IX_ENTRY_SIZE) == code; lo++) {
        const unsigned char *e = m->ix + lo * IX_ENTRY_SIZE;
        if (u32_at(e + 20) != len)
            continue;
        /* the key node: 's', its line, its length, its bytes */
        rctx k = {m->map + u32_at(e + 8), m->map + m->end, NULL, 0, 0, 0, NULL};
        uint64_t line, klen;
        if (*k.p++ != 's' || !get_var(&k, &line) || !get_var(&k, &klen) || klen != len ||
            (uint64_t)(k.end - k.p) < klen)
            return -1;
        if (memcmp(k.p, key, len) != 0)
            continue;
        rctx r = {m->map + u32_at(e + 12), m->map + m->end, NULL, 0, 0, u32_at(e + 16), NULL};
        *out = read_node(&r, 1);
        free(r.nodes);
        return *out ? 1 : -1;
    }
    return 0;
}

hv *dc_map_value(const dc_map *m) { return read_whole(m, NULL); }

void dc_map_free(dc_map *m)
{
    if (!m)
        return;
    dc_unmap(m);
    free(m);
}

/* ------------------------------------------------------------------ sweeping
 *
 * Two files beside the entries say when a sweep is due:
 *   last-sweep  its modification time is when the last sweep started; an empty file has never
 *               seen one. A sweep holds flock(LOCK_EX) on it: a process that cannot take the lock
 *               at once leaves the sweep to the one that holds it.
 *   written     one byte for each started 4 KiB of entries written since the last sweep
 *               (appended with O_APPEND, so writers never lose each other's bytes).
 * A process that writes an entry appends to `written`, and looks at `last-sweep` once in its
 * life; a sweep is due when written holds an eighth of the limit, or the last sweep is a day
 * old (or never happened). So a lookup that finds everything in the cache costs nothing, a
 * lookup that parses costs an append and a stat, and the cache stays under its limit plus an
 * eighth between sweeps.
 *
 * Other processes may read, write and sweep at the same time; nothing they do can be harmed:
 * readers hold an open descriptor (an entry unlinked under them is still read whole) and check
 * every entry against the source's identity anyway; a writer renames a whole file into place,
 * so a sweep that removes an entry just replaced only costs a parse later; temporary files are
 * removed only when an hour old (no writer takes that long); two sweeps never run at once. */

#define SWEEP_STAMP "last-sweep"
#define SWEEP_WRITTEN "written"
#define SWEEP_UNIT 4096           /* bytes of entries per byte of `written` */
#define SWEEP_INTERVAL 86400      /* seconds: at least one sweep a day when entries are written */
#define SWEEP_TMP_AGE 3600        /* seconds: a temporary file older than this was abandoned */
#define ENTRY_NAME_LEN 19         /* 16 hex digits and ".hc" (a parsed file), ".hd" (one named by its
                                     content), ".hr" (a result) or ".hk" (a kept verdict) */

static void ignore_result(long r) { (void)r; }

static uint64_t sweep_threshold(const diskcache *c)
{
    uint64_t units = c->max_size / 8 / SWEEP_UNIT;
    return units ? units : 1;
}

static bool stamp_due(const struct stat *st)
{
    time_t now = time(NULL);
    return st->st_size == 0 || now - st->st_mtim.tv_sec >= SWEEP_INTERVAL || st->st_mtim.tv_sec - now >= SWEEP_INTERVAL;
}

static void after_write(diskcache *c, size_t bytes)
{
    bool due = false;
    if (bytes) {
        char *wpath = xjoin(c->dir, "/" SWEEP_WRITTEN, NULL);
        int fd = open(wpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        free(wpath);
        if (fd >= 0) {
            static const char zeros[SWEEP_UNIT];
            uint64_t left = (bytes + SWEEP_UNIT - 1) / SWEEP_UNIT;
            while (left) {
                size_t n = left < sizeof zeros ? (size_t)left : sizeof zeros;
                if (write(fd, zeros, n) != (ssize_t)n)
                    break;
                left -= n;
            }
            struct stat st;
            due = fstat(fd, &st) == 0 && (uint64_t)st.st_size >= sweep_threshold(c);
            close(fd);
        }
    }
    if (!due && !atomic_exchange(&c->stamp_checked, true)) {
        char *spath = xjoin(c->dir, "/" SWEEP_STAMP, NULL);
        struct stat st;
        due = lstat(spath, &st) != 0 || (S_ISREG(st.st_mode) && stamp_due(&st));
        free(spath);
    }
    if (due)
        diskcache_sweep(c, false);
}

static bool is_hex16(const char *s)
{
    for (int i = 0; i < 16; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Whether the entry `name` can never be used again: its source (an absolute path) is gone or
 * has another identity now, or it is not an entry of this version. What cannot be told (a
 * relative path, a source that cannot be looked at, a read error) keeps it. */
static bool entry_useless(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) /* O_NOATIME: owner only (the entries are ours; be safe) */
        fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    /* magic, the path's length, the path, and the identity's seven numbers */
    unsigned char buf[8 + 10 + PATH_MAX + 7 * 8];
    ssize_t n;
    do
        n = pread(fd, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0)
        return false;
    bool whole = (size_t)n < sizeof buf; /* the entry ends within buf */
    if (n < 8 || memcmp(buf, MAGIC, 8) != 0)
        return true;
    rctx r = {buf + 8, buf + n, NULL, 0, 0, 0, NULL};
    uint64_t len, id[7];
    if (!get_var(&r, &len) || len == 0 || len >= PATH_MAX || len > (uint64_t)(r.end - r.p))
        return whole;
    char path[PATH_MAX];
    memcpy(path, r.p, len);
    path[len] = 0;
    r.p += len;
    if (strlen(path) != len)
        return true;
    for (int i = 0; i < 7; i++)
        if (!get_u64(&r, &id[i]))
            return whole;
    if (path[0] != '/')
        return false;
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR;
    return id[0] != (uint64_t)st.st_dev || id[1] != (uint64_t)st.st_ino || id[2] != (uint64_t)st.st_size ||
           id[3] != (uint64_t)st.st_mtim.tv_sec || id[4] != (uint64_t)st.st_mtim.tv_nsec ||
           id[5] != (uint64_t)st.st_ctim.tv_sec || id[6] != (uint64_t)st.st_ctim.tv_nsec;
}

/* Whether the result entry `name` (magic: DISKCACHE_RESULT_MAGIC), or the entry named by its
 * content (DISKCACHE_DIGEST_MAGIC), is of another version (what a result depends on is checked
 * when it is used, and content does not go stale: a sweep keeps it until it is the least recently
 * used). */
static bool magic_useless(int dfd, const char *name, const char *want)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    char magic[8];
    ssize_t n;
    do
        n = pread(fd, magic, sizeof magic, 0);
    while (n < 0 && errno == EINTR);
    close(fd);
    return n >= 0 && (n < 8 || memcmp(magic, want, 8) != 0);
}

typedef struct {
    char name[ENTRY_NAME_LEN + 1];
    uint64_t size;
    struct timespec used; /* the later of the access and modification times */
} kept_entry;

static int by_use(const void *a, const void *b)
{
    const kept_entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec)
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static struct timespec later(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec) ? a : b;
}

/* The sweep itself, with the lock held. Returns how many files it removed. */
static int sweep_locked(diskcache *c)
{
    DIR *d = opendir(c->dir);
    if (!d)
        return 0;
    int dfd = dirfd(d);
    time_t now = time(NULL);
    kept_entry *kept = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        bool hc = len >= ENTRY_NAME_LEN && is_hex16(de->d_name) && strncmp(de->d_name + 16, ".hc", 3) == 0;
        bool hr = len >= ENTRY_NAME_LEN && is_hex16(de->d_name) && strncmp(de->d_name + 16, ".hr", 3) == 0;
        bool hd = len >= ENTRY_NAME_LEN && is_hex16(de->d_name) && strncmp(de->d_name + 16, ".hd", 3) == 0;
        bool hk = len >= ENTRY_NAME_LEN && is_hex16(de->d_name) && strncmp(de->d_name + 16, ".hk", 3) == 0;
        bool entry = (hc || hr || hd || hk) && len == ENTRY_NAME_LEN;
        bool tmp = (hc || hr || hd || hk) && len == ENTRY_NAME_LEN + 7 && de->d_name[ENTRY_NAME_LEN] == '.';
        if (!entry && !tmp)
            continue; /* last-sweep, written, and whatever else someone put here */
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != c->uid)
            continue;
        if (tmp) {
            if (now - st.st_mtim.tv_sec >= SWEEP_TMP_AGE && unlinkat(dfd, de->d_name, 0) == 0)
                removed++;
            continue;
        }
        if (hc ? entry_useless(dfd, de->d_name)
               : magic_useless(dfd, de->d_name, hr   ? DISKCACHE_RESULT_MAGIC
                                                : hk ? DISKCACHE_VERDICT_MAGIC
                                                     : DISKCACHE_DIGEST_MAGIC)) {
            if (unlinkat(dfd, de->d_name, 0) == 0)
                removed++;
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            kept = xrealloc(kept, cap * sizeof *kept);
        }
        memcpy(kept[n].name, de->d_name, ENTRY_NAME_LEN + 1);
        kept[n].size = (uint64_t)st.st_size;
        kept[n].used = later(st.st_atim, st.st_mtim);
        total += kept[n].size;
        n++;
    }
    /* over the limit: the least recently used go first */
    if (total > c->max_size) {
        qsort(kept, n, sizeof *kept, by_use);
        for (size_t i = 0; i < n && total > c->max_size; i++)
            if (unlinkat(dfd, kept[i].name, 0) == 0 || errno == ENOENT) {
                total -= kept[i].size;
                removed++;
            }
    }
    free(kept);
    closedir(d);
    return removed;
}

int diskcache_sweep(diskcache *c, bool force)
{
    if (!c)
        return -1;
    char *spath = xjoin(c->dir, "/" SWEEP_STAMP, NULL);
    char *wpath = xjoin(c->dir, "/" SWEEP_WRITTEN, NULL);
    int removed = -1;
    int fd = open(spath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        goto out;
    struct stat st;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd); /* another process is sweeping (or the stamp is unusable) */
        goto out;
    }
    /* under the lock, again: another process may have swept since this one decided to */
    int wfd = open(wpath, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat wst;
    bool due = force || stamp_due(&st) ||
               (wfd >= 0 && fstat(wfd, &wst) == 0 && (uint64_t)wst.st_size >= sweep_threshold(c));
    if (due) {
        /* the counts start again now: what is written from here on is for the next sweep */
        /* (a failure here is harmless: an empty stamp or a count not reset makes a later write
         * sweep again) */
        static const char note[] = "hiera disk cache: this file's modification time is the last sweep's\n";
        if (st.st_size == 0)
            ignore_result(pwrite(fd, note, sizeof note - 1, 0));
        futimens(fd, NULL);
        if (wfd >= 0)
            ignore_result(ftruncate(wfd, 0));
        removed = sweep_locked(c);
    }
    if (wfd >= 0)
        close(wfd);
    close(fd); /* releases the lock */
out:
    free(spath);
    free(wpath);
    return removed;
}
