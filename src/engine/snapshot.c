/* snapshot.c - a code directory read whole, once, and shared read-only (see snapshot.h).
 *
 * Building walks the tree as the lookups would: the global hiera.yaml, the environments on the
 * environmentpath with their hiera.yaml, the modules of each environment's module folders with
 * theirs; each configuration's levels (hierarchy and default_hierarchy) give location templates
 * (datadir joined with path, glob or mapped path), which are matched against the files under
 * their literal folder (tmplmatch.h); every file that matches is parsed with the format of the
 * level's function. Parsing goes through a private cache (cache.c), so the rules (and errors)
 * are exactly those of a lookup; the values are then made immortal and the cache dropped. */
#include "engine/snapshot.h"

#include <dirent.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/fileio.h"
#include "base/pathname.h"
#include "formats/diskcache.h"
#include "engine/config.h"
#include "engine/engine.h"
#include "engine/providers.h"
#include "engine/tmplmatch.h"

/* Bounds on the walk (a tree that is not a code directory: / by mistake) */
#define WALK_MAX_DEPTH 32
#define WALK_MAX_ENTRIES 2000000UL

/* A parsed file's immortal nodes, shared by the snapshots that hold the file unchanged (a rebuild
 * takes the previous snapshot's parse of a file whose stat identity did not change) and, through
 * the store below, by every file of any snapshot that holds the same bytes. */
typedef struct sblob {
    int refs; /* atomic */
    hv_nodes nodes;
    hv *value;
    unsigned flags;  /* CACHE_WARNED_NOT_HASH: the parse warned (given again for each path) */
    size_t bytes;    /* what the nodes take in memory, estimated */
    bool stored;     /* in the store (under store_lock) */
    file_format fmt;
    unsigned char digest[SNAPSHOT_DIGEST_SIZE];
    struct sblob *next; /* the store's chain */
} sblob;

/* ---- parses named by content
 * The store: every parse made from bytes read and digested (SHA-256), found by digest and
 * format, for as long as some snapshot holds it. A hundred branches of a control repository
 * checked out side by side hold the same files under a hundred paths: one parse each. */
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static sblob **store;
static size_t store_cap, store_n, store_bytes;

static size_t store_index(const unsigned char *digest, file_format fmt, size_t cap)
{
    uint64_t h;
    memcpy(&h, digest, sizeof h);
    return (size_t)((h ^ (uint64_t)fmt * 0x9e3779b97f4a7c15ULL) & (cap - 1));
}

/* The stored blob of these bytes (a new reference), or NULL. A blob whose last reference is being
 * dropped (refs 0) is not revived: it leaves the store as soon as its releaser takes the lock. */
static sblob *store_find(const unsigned char *digest, file_format fmt)
{
    sblob *found = NULL;
    pthread_mutex_lock(&store_lock);
    for (sblob *b = store_cap ? store[store_index(digest, fmt, store_cap)] : NULL; b && !found; b = b->next) {
        if (b->fmt != fmt || memcmp(b->digest, digest, SNAPSHOT_DIGEST_SIZE) != 0)
            continue;
        int r = __atomic_load_n(&b->refs, __ATOMIC_RELAXED);
        while (r > 0 && !__atomic_compare_exchange_n(&b->refs, &r, r + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        }
        if (r > 0)
            found = b;
    }
    pthread_mutex_unlock(&store_lock);
    return found;
}

static void store_add(sblob *b)
{
    pthread_mutex_lock(&store_lock);
    if ((store_n + 1) * 2 > store_cap) {
        size_t ncap = store_cap ? store_cap * 2 : 1024;
        sblob **n = xcalloc(ncap, sizeof *n);
        for (size_t i = 0; i < store_cap; i++)
            for (sblob *x = store[i], *next; x; x = next) {
                next = x->next;
                size_t j = store_index(x->digest, x->fmt, ncap);
                x->next = n[j];
                n[j] = x;
            }
        free(store);
        store = n;
        store_cap = ncap;
    }
    size_t i = store_index(b->digest, b->fmt, store_cap);
    b->next = store[i];
    store[i] = b;
    b->stored = true;
    store_n++;
    store_bytes += b->bytes;
    pthread_mutex_unlock(&store_lock);
}

static void blob_release(sblob *b)
{
    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    pthread_mutex_lock(&store_lock);
    if (b->stored) {
        sblob **p = &store[store_index(b->digest, b->fmt, store_cap)];
        while (*p && *p != b)
            p = &(*p)->next;
        if (*p)
            *p = b->next;
        store_n--;
        store_bytes -= b->bytes;
    }
    pthread_mutex_unlock(&store_lock);
    hv_free_immortal(&b->nodes);
    free(b);
}

void snapshot_store_usage(size_t *parses, size_t *bytes)
{
    pthread_mutex_lock(&store_lock);
    *parses = store_n;
    *bytes = store_bytes;
    pthread_mutex_unlock(&store_lock);
}

/* What the nodes of a parse take in memory (value.c's layouts and malloc's word of overhead),
 * estimated from what they hold. */
static size_t nodes_bytes(const hv_nodes *nodes)
{
    size_t total = 0;
    for (size_t i = 0; i < nodes->n; i++) {
        const hv *v = nodes->items[i];
        switch (hv_kind_of(v)) {
        case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
            total += 40 + hv_str_len(v) + 1;
            break;
        case HV_ARRAY:
            total += 48 + hv_array_len(v) * sizeof(void *);
            break;
        case HV_HASH: {
            size_t n = hv_hash_len(v);
            total += 56 + n * 3 * sizeof(void *) + (n >= 9 ? n * 2 * sizeof(uint32_t) : 0);
            break;
        }
        default:
            total += 32;
        }
    }
    return total + nodes->cap * sizeof(void *);
}

static sblob *blob_new(hv *value, file_format fmt, unsigned flags)
{
    sblob *b = xcalloc(1, sizeof *b);
    b->refs = 1;
    b->fmt = fmt;
    b->flags = flags;
    b->value = value;
    hv_make_immortal(value, &b->nodes);
    b->bytes = sizeof *b + nodes_bytes(&b->nodes);
    return b;
}

/* A file of the snapshot. The tables are dense arrays (in load order) found through an index of
 * entry numbers: a hundred environments' snapshots take little more than their paths. */
typedef struct {
    uint64_t code;
    const char *path; /* BORROWED: the path table's string */
    file_format fmt;
    sblob *blob;   /* its parse (NULL with err) */
    herr *err;     /* NULL when it parsed */
    uint64_t dev, ino, size, mtime, ctime; /* the stat identity it was parsed with (times in ns) */
} sfile;

typedef struct {
    uint64_t code;
    char *path;      /* (the snapshot's strings, as names: see arena_alloc) */
    char *names;     /* listed: its entries' names (sorted), one after the other with their NULs, */
    uint32_t nnames; /* for a later snapshot that is told the folder did not change */
    int8_t state;    /* 0, 1, 2 as path_state */
    bool listed;     /* a directory whose entries are all in the table */
} spath;

struct snapshot {
    int refs; /* atomic */
    sfile *files;
    size_t fn, fcap;
    uint32_t *fix;  /* open addressing: entry number + 1, 0 empty */
    size_t fixcap;
    spath *paths;
    size_t pn, pcap;
    uint32_t *pix;
    size_t pixcap;
    hv_nodes nodes; /* every immortal node, freed with the snapshot */
    hv *environments, *configs, *problems;
    char **chunks;  /* the strings' memory: 32 KiB chunks, filled in turn, freed with the snapshot */
    size_t nchunks, chunk_used;
    pthread_mutex_t describe_lock; /* the file list of snapshot_describe, made when first asked */
    hv *filelist;
    size_t ndirs;
    size_t reused;  /* files taken from the previous snapshot */
    size_t parsed, shared, from_disk, looked; /* files parsed; taken from the store, from the disk
                                                 cache; paths asked of the file system */
    size_t own_bytes; /* what the snapshot takes itself, estimated (snapshot_counts) */
};

typedef struct {
    snapshot *s;
    const snapshot_spec *spec;
    const snapshot *prev; /* parses to take where the file did not change, or NULL */
    hiera_cache *cache;  /* parses (plain, not frozen) */
    hv *walks;           /* base folder -> array of the file paths under it */
    hv *seen_configs;    /* "layer\npath" -> true */
    size_t entries;      /* counted against WALK_MAX_ENTRIES */
    snapshot_changed_fn changed; /* what may have changed since prev (NULL: anything) */
    void *changed_data;
} builder;

/* ------------------------------------------------------------------ tables */

static uint64_t code_of(const char *path, unsigned salt)
{
    uint64_t h = 1469598103934665603ULL ^ salt;
    for (const char *p = path; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    h ^= h >> 29;
    return h | 1;
}

static const herr no_error;

#define ARENA_CHUNK 32768

/* n bytes of the snapshot's string memory (a path's malloc would cost its header and rounding:
 * a tenth of a hundred environments' snapshots). */
static char *arena_alloc(snapshot *s, size_t n)
{
    if (n > ARENA_CHUNK / 4) { /* (a large block: a chunk of its own, kept before the current one) */
        s->chunks = xrealloc(s->chunks, (s->nchunks + 1) * sizeof *s->chunks);
        char *own = xmalloc(n);
        if (s->nchunks) {
            s->chunks[s->nchunks] = s->chunks[s->nchunks - 1];
            s->chunks[s->nchunks - 1] = own;
        } else {
            s->chunks[0] = own;
            s->chunk_used = ARENA_CHUNK; /* (full: the next small one starts a chunk) */
        }
        s->nchunks++;
        return own;
    }
    if (!s->nchunks || s->chunk_used + n > ARENA_CHUNK) {
        s->chunks = xrealloc(s->chunks, (s->nchunks + 1) * sizeof *s->chunks);
        s->chunks[s->nchunks++] = xmalloc(ARENA_CHUNK);
        s->chunk_used = 0;
    }
    char *p = s->chunks[s->nchunks - 1] + s->chunk_used;
    s->chunk_used += n;
    return p;
}

static char *arena_strdup(snapshot *s, const char *text)
{
    size_t n = strlen(text) + 1;
    return memcpy(arena_alloc(s, n), text, n);
}

static uint64_t ns_of(struct timespec t) { return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec; }

/* The entry of path in fmt, or NULL. */
static sfile *file_find(const snapshot *s, const char *path, file_format fmt, uint64_t code)
{
    if (!s->fixcap)
        return NULL;
    size_t mask = s->fixcap - 1;
    for (size_t i = (size_t)code & mask; s->fix[i]; i = (i + 1) & mask) {
        sfile *f = &s->files[s->fix[i] - 1];
        if (f->code == code && f->fmt == fmt && strcmp(f->path, path) == 0)
            return f;
    }
    return NULL;
}

/* Grows an index of entry numbers to hold n + 1 entries; codes[i] gives entry i's code. */
static void index_room(uint32_t **ix, size_t *cap, size_t n, const void *entries, size_t stride)
{
    if ((n + 1) * 4 <= *cap * 3)
        return;
    size_t ncap = *cap ? *cap * 2 : 256;
    free(*ix);
    *ix = xcalloc(ncap, sizeof **ix);
    *cap = ncap;
    for (size_t e = 0; e < n; e++) {
        uint64_t code = *(const uint64_t *)(const void *)((const char *)entries + e * stride);
        size_t i = (size_t)code & (ncap - 1);
        while ((*ix)[i])
            i = (i + 1) & (ncap - 1);
        (*ix)[i] = (uint32_t)(e + 1);
    }
}

static void index_put(uint32_t *ix, size_t cap, uint64_t code, size_t entry)
{
    size_t i = (size_t)code & (cap - 1);
    while (ix[i])
        i = (i + 1) & (cap - 1);
    ix[i] = (uint32_t)(entry + 1);
}

static spath *path_slot(const snapshot *s, const char *path, uint64_t code)
{
    if (!s->pixcap)
        return NULL;
    size_t mask = s->pixcap - 1;
    for (size_t i = (size_t)code & mask; s->pix[i]; i = (i + 1) & mask) {
        spath *p = &s->paths[s->pix[i] - 1];
        if (p->code == code && strcmp(p->path, path) == 0)
            return p;
    }
    return NULL;
}

/* The entry of path, made when there is none; its state set. (BORROWED: valid until the next
 * path_put.) */
static spath *path_put(snapshot *s, const char *path, int state)
{
    uint64_t code = code_of(path, 0);
    spath *p = path_slot(s, path, code);
    if (!p) {
        if (s->pn == s->pcap) {
            s->pcap = s->pcap ? s->pcap * 2 : 256;
            s->paths = xrealloc(s->paths, s->pcap * sizeof *s->paths);
        }
        index_room(&s->pix, &s->pixcap, s->pn, s->paths, sizeof *s->paths);
        p = &s->paths[s->pn];
        *p = (spath){.code = code, .path = arena_strdup(s, path)};
        index_put(s->pix, s->pixcap, code, s->pn++);
    }
    p->state = (int8_t)state;
    return p;
}

bool snapshot_get(const snapshot *s, const char *path, file_format fmt, snapshot_file *out)
{
    const sfile *f = file_find(s, path, fmt, code_of(path, (unsigned)fmt + 1));
    if (!f)
        return false;
    out->value = f->blob ? f->blob->value : NULL;
    out->err = f->err ? f->err : &no_error;
    return true;
}

bool snapshot_next_file(const snapshot *s, size_t *i, const char **path, file_format *fmt, snapshot_file *out)
{
    if (*i >= s->fn)
        return false;
    const sfile *f = &s->files[(*i)++];
    *path = f->path;
    *fmt = f->fmt;
    out->value = f->blob ? f->blob->value : NULL;
    out->err = f->err ? f->err : &no_error;
    return true;
}

static bool source_get(const void *src, const char *path, file_format fmt, const hv **value, const herr **err)
{
    snapshot_file f;
    if (!snapshot_get(src, path, fmt, &f))
        return false;
    *value = f.value;
    *err = f.err;
    return true;
}

static int source_path_state(const void *src, const char *path) { return snapshot_path_state(src, path); }
static void source_release(void *src) { snapshot_release(src); }

hiera_cache *snapshot_new_view(snapshot *s)
{
    static const file_source ops = {source_get, source_path_state, source_release};
    return cache_new_view(&ops, snapshot_retain(s));
}

int snapshot_path_state(const snapshot *s, const char *path)
{
    spath *p = path_slot(s, path, code_of(path, 0));
    if (p)
        return p->state;
    /* not seen: nothing there when its folder was listed whole */
    char *dir = pn_dirname(path);
    spath *d = path_slot(s, dir, code_of(dir, 0));
    int state = d && d->listed ? 0 : -1;
    free(dir);
    return state;
}

/* ------------------------------------------------------------------ the file system */

static int stat_state(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 ? 0 : S_ISDIR(st.st_mode) ? 2 : 1;
}

/* Whether prev may be trusted about path: the caller said it did not change. */
static bool unchanged(const builder *b, const char *path)
{
    return b->prev && b->changed && !b->changed(path, b->changed_data);
}

/* The state of path, asked once (of prev when path did not change). */
static int state_of(builder *b, const char *path)
{
    uint64_t code = code_of(path, 0);
    spath *p = path_slot(b->s, path, code);
    if (p)
        return p->state;
    if (unchanged(b, path)) {
        const spath *old = path_slot(b->prev, path, code);
        if (old)
            return path_put(b->s, path, old->state)->state;
    }
    b->s->looked++;
    return path_put(b->s, path, stat_state(path))->state;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Lists dir (once): every entry's state goes into the table. Returns the entries' full paths
 * (sorted, malloc'ed, NULL-terminated), or NULL when dir cannot be read. */
static char *join_entry(const char *dir, const char *name)
{
    return strcmp(dir, "/") ? xjoin(dir, "/", name, NULL) : xjoin("/", name, NULL);
}

/* The entries of dir as prev listed them, when dir did not change (NULL otherwise). */
static char **listed_before(builder *b, const char *dir, uint32_t *count)
{
    if (!unchanged(b, dir))
        return NULL;
    const spath *old = path_slot(b->prev, dir, code_of(dir, 0));
    if (!old || !old->listed || old->state != 2)
        return NULL;
    char **names = xmalloc((old->nnames + 1) * sizeof *names);
    const char *n = old->names;
    for (uint32_t i = 0; i < old->nnames; i++, n += strlen(n) + 1)
        names[i] = join_entry(dir, n);
    names[old->nnames] = NULL;
    *count = old->nnames;
    return names;
}

static char **list_dir(builder *b, const char *dir)
{
    if (state_of(b, dir) != 2)
        return NULL;
    uint32_t n32 = 0;
    char **names = listed_before(b, dir, &n32);
    size_t n = n32;
    if (names) {
        b->entries += n;
    } else {
        DIR *d = opendir(dir);
        if (!d)
            return NULL;
        b->s->looked++;
        size_t cap = 16;
        names = xmalloc(cap * sizeof *names);
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            if (++b->entries > WALK_MAX_ENTRIES)
                break;
            if (n + 1 == cap) {
                cap *= 2;
                names = xrealloc(names, cap * sizeof *names);
            }
            names[n++] = join_entry(dir, de->d_name);
        }
        closedir(d);
        names[n] = NULL;
        qsort(names, n, sizeof *names, cmp_str);
    }
    for (size_t i = 0; i < n; i++)
        state_of(b, names[i]);
    spath *p = path_put(b->s, dir, 2);
    if (!p->listed) {
        p->listed = true;
        b->s->ndirs++;
        /* the names, for the next snapshot (NUL-separated, after the folder's path and '/') */
        size_t skip = strcmp(dir, "/") ? strlen(dir) + 1 : 1, total = 0;
        for (size_t i = 0; i < n; i++)
            total += strlen(names[i]) - skip + 1;
        p->names = arena_alloc(b->s, total ? total : 1);
        char *w = p->names;
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(names[i]) - skip + 1;
            memcpy(w, names[i] + skip, l);
            w += l;
        }
        p->nnames = (uint32_t)n;
    }
    return names;
}

static void free_list(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

static void walk(builder *b, const char *dir, int depth, hv *out)
{
    char **names = list_dir(b, dir);
    for (size_t i = 0; names && names[i]; i++) {
        int st = state_of(b, names[i]);
        if (st == 1)
            hv_array_push(out, hv_str(names[i]));
        else if (st == 2 && depth < WALK_MAX_DEPTH)
            walk(b, names[i], depth + 1, out);
    }
    free_list(names);
}

/* Every file under base (recursively), listed once per base. BORROWED. */
static const hv *files_under(builder *b, const char *base)
{
    hv *known = hv_hash_gets(b->walks, base);
    if (known)
        return known;
    hv *list = hv_array();
    walk(b, base, 0, list);
    hv_hash_sets(b->walks, base, list);
    return list;
}

/* ------------------------------------------------------------------ parsing */

static void add_problem(snapshot *s, const char *code, const herr *e, const char *file)
{
    hv *p = hv_hash();
    hv_hash_sets(p, "severity", hv_str("error"));
    hv_hash_sets(p, "code", hv_str(code));
    hv_hash_sets(p, "file", hv_str(e->file ? e->file : file ? file : ""));
    hv_hash_sets(p, "line", hv_int(e->line));
    hv_hash_sets(p, "column", hv_int(e->col));
    hv_hash_sets(p, "message", hv_str(e->msg ? e->msg : ""));
    hv_array_push(s->problems, p);
}

static const char *format_name(file_format f)
{
    switch (f) {
    case FMT_YAML: return "yaml";
    case FMT_JSON: return "json";
    case FMT_HOCON: return "hocon";
    case FMT_CONFIG: return "hiera.yaml";
    case FMT_YAML3: return "yaml (hiera 3)";
    case FMT_TEXT: return "text";
    }
    return "?";
}

static void collect_warning(int severity, const char *code, const char *file, int line, int col, const char *message,
                            void *data)
{
    snapshot *s = data;
    hv *p = hv_hash();
    hv_hash_sets(p, "severity", hv_str(severity == DIAG_ERROR ? "error" : "warning"));
    hv_hash_sets(p, "code", hv_str(code));
    hv_hash_sets(p, "file", hv_str(file ? file : ""));
    hv_hash_sets(p, "line", hv_int(line));
    hv_hash_sets(p, "column", hv_int(col));
    hv_hash_sets(p, "message", hv_str(message));
    hv_array_push(s->problems, p);
}

/* f takes old's parse (a file of the previous snapshot). */
static void take_parse(snapshot *s, sfile *f, const sfile *old)
{
    f->blob = old->blob;
    __atomic_add_fetch(&f->blob->refs, 1, __ATOMIC_RELAXED);
    if (f->blob->flags & CACHE_WARNED_NOT_HASH)
        cache_warn_not_hash(f->path); /* (a problem of each snapshot that holds it) */
    s->reused++;
}

void snapshot_digest(const void *bytes, size_t len, unsigned char digest[SNAPSHOT_DIGEST_SIZE])
{
    unsigned int n = 0;
    if (EVP_Digest(bytes, len, digest, &n, EVP_sha256(), NULL) != 1 || n != SNAPSHOT_DIGEST_SIZE)
        abort(); /* (SHA-256 of bytes in memory does not fail) */
}

/* The regular file f->path (stat'ed as *st) read, digested and parsed, or its parse taken from
 * the store or the disk cache when the same bytes were parsed before; *st becomes the stat of the
 * file opened. false when it cannot be read so (the caller goes through the cache, which says
 * why). */
static bool load_by_content(builder *b, sfile *f, struct stat *st)
{
    if (st->st_size > CACHE_MAX_FILE_SIZE)
        return false;
    sbuf text = {0};
    file_read_error fe;
    struct stat opened;
    if (!file_read(f->path, &text, &(file_read_opts){.max = (size_t)CACHE_MAX_FILE_SIZE, .regular_only = true, .st = &opened},
                   &fe)) {
        sb_free(&text);
        return false;
    }
    unsigned char digest[SNAPSHOT_DIGEST_SIZE];
    snapshot_digest(text.s, text.len, digest);
    sblob *blob = store_find(digest, f->fmt);
    if (blob) {
        b->s->shared++;
        if (blob->flags & CACHE_WARNED_NOT_HASH)
            cache_warn_not_hash(f->path);
    } else {
        diskcache *dc = cache_disk(b->cache);
        unsigned flags = 0;
        hv *v = dc && text.len ? diskcache_get_digest(dc, digest, (int)f->fmt, &flags) : NULL;
        if (v && (flags & CACHE_WARNED_NOT_HASH)) { /* an earlier version's entry: {} for the document */
            hv_decref(v);
            v = NULL;
            flags = 0;
        }
        if (v) {
            b->s->from_disk++;
            if (flags & CACHE_WARNED_NOT_HASH)
                cache_warn_not_hash(f->path);
        } else {
            herr e = {0};
            v = cache_parse_bytes(f->path, text.s, text.len, f->fmt, &flags, &e);
            if (!v) {
                f->err = xmalloc(sizeof *f->err);
                *f->err = e;
            }
            b->s->parsed++;
            if (v && dc && text.len)
                diskcache_put_digest(dc, digest, (int)f->fmt, v, flags); /* (before the value is immortal) */
        }
        if (v) {
            blob = blob_new(v, f->fmt, flags);
            memcpy(blob->digest, digest, sizeof digest);
            store_add(blob);
        }
    }
    sb_free(&text);
    f->blob = blob;
    /* the identity of what was read (a file replaced between the stat and the read is the new one) */
    *st = opened;
    return true;
}

/* Parses path with fmt into the snapshot (once). */
static void load(builder *b, const char *path, file_format fmt)
{
    snapshot *s = b->s;
    uint64_t code = code_of(path, (unsigned)fmt + 1);
    if (file_find(s, path, fmt, code))
        return;
    const spath *known = path_slot(s, path, code_of(path, 0));
    const char *own_path = (known ? known : path_put(s, path, 1))->path; /* (the path table's string) */
    if (s->fn == s->fcap) {
        s->fcap = s->fcap ? s->fcap * 2 : 256;
        s->files = xrealloc(s->files, s->fcap * sizeof *s->files);
    }
    index_room(&s->fix, &s->fixcap, s->fn, s->files, sizeof *s->files);
    sfile *f = &s->files[s->fn];
    *f = (sfile){.code = code, .path = own_path, .fmt = fmt};
    index_put(s->fix, s->fixcap, code, s->fn++);
    const sfile *old = b->prev ? file_find(b->prev, path, fmt, code) : NULL;
    if (old && unchanged(b, path)) {
        /* the caller says it did not change: prev's parse (or error) and stat identity */
        if (old->blob) {
            take_parse(s, f, old);
        } else {
            f->err = xmalloc(sizeof *f->err);
            *f->err = (herr){old->err->kind, old->err->msg ? xstrdup(old->err->msg) : NULL,
                             old->err->file ? xstrdup(old->err->file) : NULL, old->err->line, old->err->col};
        }
        f->dev = old->dev;
        f->ino = old->ino;
        f->size = old->size;
        f->mtime = old->mtime;
        f->ctime = old->ctime;
        goto record;
    }
    struct stat st;
    bool have_stat = stat(path, &st) == 0;
    s->looked++;
    if (have_stat && old && old->blob && old->dev == (uint64_t)st.st_dev && old->ino == (uint64_t)st.st_ino &&
        old->size == (uint64_t)st.st_size && old->mtime == ns_of(st.st_mtim) && old->ctime == ns_of(st.st_ctim)) {
        /* unchanged since the previous snapshot parsed it: its parse, shared */
        take_parse(s, f, old);
    } else if (!(have_stat && fmt != FMT_CONFIG && S_ISREG(st.st_mode) && load_by_content(b, f, &st))) {
        /* (a hiera.yaml is parsed through the builder's cache, which compiles it from that parse
         * too; anything that is not a regular file gets cache_load's own error) */
        herr e = {0};
        hv *v = cache_load(b->cache, path, fmt, &e);
        if (v) {
            f->blob = blob_new(v, fmt, 0);
        } else {
            f->err = xmalloc(sizeof *f->err);
            *f->err = e;
        }
        s->parsed++;
    }
    if (have_stat) {
        f->dev = (uint64_t)st.st_dev;
        f->ino = (uint64_t)st.st_ino;
        f->size = (uint64_t)st.st_size;
        f->mtime = ns_of(st.st_mtim);
        f->ctime = ns_of(st.st_ctim);
    }
record:
    if (!f->blob)
        add_problem(s, fmt == FMT_CONFIG ? "config-syntax" : "data-syntax", f->err, path);
}

/* ------------------------------------------------------------------ levels */

/* The files a location template can name, parsed with fmt. */
static void load_template(builder *b, const char *tmpl, bool glob, file_format fmt)
{
    if (!tmpl_is_pattern(tmpl, glob)) {
        /* a path without variables: it is there or not */
        char *dir = pn_dirname(tmpl);
        free_list(list_dir(b, dir)); /* its folder listed: what is not there is known absent */
        free(dir);
        if (state_of(b, tmpl) == 1)
            load(b, tmpl, fmt);
        return;
    }
    char *base = tmpl_base_dir(tmpl, glob);
    if (!base[0] || !strcmp(base, "/")) {
        /* "/%{x}/data/..." names files anywhere: the machine's whole tree is not listed (the
         * lookups read what their locations name themselves) */
        free(base);
        return;
    }
    const hv *files = files_under(b, base);
    for (size_t i = 0; i < hv_array_len(files); i++) {
        const char *p = hv_str_ptr(hv_array_get(files, i));
        if (tmpl_match(tmpl, p, glob))
            load(b, p, fmt);
    }
    free(base);
}

static void load_levels(builder *b, const hcfg *cfg, const hlevel *levels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const hlevel *lvl = &levels[i];
        const provider_def *pd = provider_find(lvl->fname ? lvl->fname : "");
        if (!pd)
            continue; /* a function we do not have: the lookup fails, nothing to read */
        char *datadir;
        if (lvl->v3_datadir_abs)
            datadir = lvl->datadir ? xstrdup(lvl->datadir)
                                   : xasprintf("%s/environments/%%{::environment}/hieradata", b->spec->codedir);
        else
            datadir = pn_plus(cfg->root, lvl->datadir);
        if (datadir[0] != '/') { /* Hiera 3's relative datadir: relative to the working folder */
            char *cwd = getcwd(NULL, 0);
            char *abs = pn_plus(cwd ? cwd : "/", datadir);
            free(cwd);
            free(datadir);
            datadir = abs;
        }
        char *mapped = envpath_remap(datadir, b->spec->remap_envpath, NULL);
        if (mapped) {
            free(datadir);
            datadir = mapped;
        }
        bool glob = lvl->lkind == LOC_GLOB || lvl->lkind == LOC_GLOBS;
        for (size_t j = 0; j < lvl->nlocs; j++) {
            const char *loc;
            char *owned = NULL;
            switch (lvl->lkind) {
            case LOC_PATH: case LOC_PATHS: case LOC_GLOB: case LOC_GLOBS:
                loc = lvl->locs[j];
                if (lvl->extension) {
                    size_t ll = strlen(loc), el = strlen(lvl->extension);
                    if (ll < el || strcmp(loc + ll - el, lvl->extension) != 0)
                        loc = owned = xjoin(loc, lvl->extension, NULL);
                }
                break;
            case LOC_MAPPED_PATHS:
                if (j != 2)
                    continue;
                loc = lvl->locs[2];
                break;
            default:
                continue; /* URIs and levels without locations read no files */
            }
            char *tmpl = pn_plus(datadir, loc);
            load_template(b, tmpl, glob, pd->format);
            free(tmpl);
            free(owned);
        }
        free(datadir);
    }
}

static void add_config(builder *b, const char *path, layer_kind kind, const char *env, const char *module)
{
    char k[2] = {(char)('0' + (int)kind), 0};
    char *sig = xjoin(k, "\n", path, NULL);
    bool seen = hv_hash_gets(b->seen_configs, sig) != NULL;
    if (!seen)
        hv_hash_sets(b->seen_configs, sig, hv_true());
    free(sig);
    if (seen)
        return;
    hv *rec = hv_hash();
    hv_hash_sets(rec, "path", hv_str(path));
    hv_hash_sets(rec, "layer", hv_str(kind == LAYER_GLOBAL ? "global" : kind == LAYER_ENV ? "environment" : "module"));
    hv_hash_sets(rec, "environment", env ? hv_str(env) : hv_undef());
    hv_hash_sets(rec, "module", module ? hv_str(module) : hv_undef());
    bool exists = state_of(b, path) == 1;
    hv_hash_sets(rec, "exists", hv_bool(exists));
    hv_array_push(b->s->configs, rec);
    if (exists)
        load(b, path, FMT_CONFIG);
    bool ignored = false;
    herr e = {0};
    hcfg *cfg = config_load(b->cache, path, kind, &ignored, &e);
    if (!cfg) {
        if (herr_isset(&e) && exists) {
            /* a file that does not parse is reported by load(); this is a config that parsed
             * but is not valid */
            snapshot_file f;
            if (snapshot_get(b->s, path, FMT_CONFIG, &f) && f.value)
                add_problem(b->s, "config-invalid", &e, path);
        }
        herr_clear(&e);
        return;
    }
    if (herr_isset(&cfg->lazy_err))
        add_problem(b->s, "config-invalid", &cfg->lazy_err, path);
    load_levels(b, cfg, cfg->levels, cfg->nlevels);
    if (cfg->has_default_hierarchy)
        load_levels(b, cfg, cfg->dlevels, cfg->ndlevels);
    config_free(cfg);
}

/* Puppet's environment names: /\A[a-z0-9_]+\z/ (Puppet::Node::Environment.valid_name?) */
static bool valid_env_name(const char *n)
{
    if (!*n)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static bool wanted_env(const snapshot_spec *spec, const char *name)
{
    if (!spec->environments)
        return true;
    for (size_t i = 0; i < spec->nenvironments; i++)
        if (strcmp(spec->environments[i], name) == 0)
            return true;
    return false;
}

static void add_modules(builder *b, const char *root, const char *env)
{
    char **mods = list_dir(b, root);
    for (size_t i = 0; mods && mods[i]; i++) {
        const char *name = strrchr(mods[i], '/') + 1;
        if (state_of(b, mods[i]) != 2 || !valid_module_name(name))
            continue;
        free_list(list_dir(b, mods[i]));
        char *cfg = xjoin(mods[i], "/hiera.yaml", NULL);
        if (state_of(b, cfg) == 1)
            add_config(b, cfg, LAYER_MODULE, env, name);
        free(cfg);
    }
    free_list(mods);
}

snapshot *snapshot_build(const snapshot_spec *spec, const snapshot *prev) { return snapshot_build_changed(spec, prev, NULL, NULL); }

snapshot *snapshot_build_changed(const snapshot_spec *spec, const snapshot *prev, snapshot_changed_fn changed, void *data)
{
    snapshot *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->environments = hv_array();
    s->configs = hv_array();
    s->problems = hv_array();
    pthread_mutex_init(&s->describe_lock, NULL);
    builder b = {s, spec, prev, cache_new(), hv_hash(), hv_hash(), 0, changed, data};
    /* warnings met while parsing (a data file that is not a hash...) are kept as problems */
    diag_sink saved;
    diag_enter((diag_sink){.fn = collect_warning, .data = s}, &saved);
    if (spec->disk_cache)
        cache_use_disk(b.cache, spec->disk_cache);

    if (spec->codedir)
        free_list(list_dir(&b, spec->codedir));
    if (spec->global_config) {
        char *dir = pn_dirname(spec->global_config);
        free_list(list_dir(&b, dir));
        free(dir);
        add_config(&b, spec->global_config, LAYER_GLOBAL, NULL, NULL);
    }
    char *paths = xstrdup(spec->environmentpath ? spec->environmentpath : ""), *save = NULL;
    for (char *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        char **envs = list_dir(&b, p);
        for (size_t i = 0; envs && envs[i]; i++) {
            const char *name = strrchr(envs[i], '/') + 1;
            if (state_of(&b, envs[i]) != 2 || !valid_env_name(name) || !wanted_env(spec, name))
                continue;
            hv_array_push(s->environments, hv_str(name));
            free_list(list_dir(&b, envs[i]));
            char *cfg = xjoin(envs[i], "/hiera.yaml", NULL);
            if (state_of(&b, cfg) == 1)
                add_config(&b, cfg, LAYER_ENV, name, NULL);
            free(cfg);
            char **roots = spec->module_roots ? spec->module_roots(name, spec->module_roots_data) : NULL;
            if (roots) {
                for (size_t r = 0; roots[r]; r++)
                    add_modules(&b, roots[r], name);
                free_list(roots);
            } else {
                char *mods = xjoin(envs[i], "/modules", NULL);
                add_modules(&b, mods, name);
                free(mods);
                if (spec->codedir) {
                    mods = xjoin(spec->codedir, "/modules", NULL);
                    add_modules(&b, mods, name);
                    free(mods);
                }
            }
        }
        free_list(envs);
    }
    free(paths);
    hv_decref(b.walks);
    hv_decref(b.seen_configs);
    cache_free(b.cache);
    diag_leave(&saved);
    /* what snapshot_describe and snapshot_problems hand out is read by any thread too */
    hv_make_immortal(s->environments, &s->nodes);
    hv_make_immortal(s->configs, &s->nodes);
    hv_make_immortal(s->problems, &s->nodes);
    /* the tables at their size */
    if (s->fn) {
        s->files = xrealloc(s->files, s->fn * sizeof *s->files);
        s->fcap = s->fn;
    }
    if (s->pn) {
        s->paths = xrealloc(s->paths, s->pn * sizeof *s->paths);
        s->pcap = s->pn;
    }
    /* what the snapshot itself takes (the parses it holds are the store's; malloc's word and
     * rounding counted per string) */
    size_t own = sizeof *s + s->fcap * sizeof *s->files + s->pcap * sizeof *s->paths +
                 (s->fixcap + s->pixcap) * sizeof(uint32_t) + nodes_bytes(&s->nodes);
    for (size_t i = 0; i < s->fn; i++)
        if (s->files[i].err)
            own += 64 + (s->files[i].err->msg ? strlen(s->files[i].err->msg) : 0);
    own += s->nchunks * (ARENA_CHUNK + 16) + s->nchunks * sizeof *s->chunks;
    s->own_bytes = own;
    return s;
}

snapshot *snapshot_retain(snapshot *s)
{
    if (s)
        __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void snapshot_release(snapshot *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->fn; i++) {
        sfile *f = &s->files[i];
        if (f->err) {
            herr_clear(f->err);
            free(f->err);
        }
        blob_release(f->blob);
    }
    free(s->files);
    free(s->fix);
    for (size_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->paths);
    free(s->pix);
    hv_free_immortal(&s->nodes); /* the lists of snapshot_describe too */
    pthread_mutex_destroy(&s->describe_lock);
    free(s);
}

hv *snapshot_describe(const snapshot *s)
{
    /* the file list is made when first asked (a server of a hundred environments never asks) */
    snapshot *w = (snapshot *)s;
    pthread_mutex_lock(&w->describe_lock);
    if (!w->filelist) {
        hv *list = hv_array_sized(s->fn);
        for (size_t i = 0; i < s->fn; i++) {
            const sfile *f = &s->files[i];
            hv *rec = hv_hash();
            hv_hash_sets(rec, "path", hv_str(f->path));
            hv_hash_sets(rec, "format", hv_str(format_name(f->fmt)));
            if (!f->blob)
                hv_hash_sets(rec, "error", hv_str(f->err && f->err->msg ? f->err->msg : ""));
            hv_array_push(list, rec);
        }
        hv_make_immortal(list, &w->nodes);
        w->filelist = list;
    }
    pthread_mutex_unlock(&w->describe_lock);
    hv *d = hv_hash();
    hv_hash_sets(d, "environments", s->environments); /* immortal: no reference to take */
    hv_hash_sets(d, "configs", s->configs);
    hv_hash_sets(d, "files", s->filelist);
    return d;
}

hv *snapshot_problems(const snapshot *s) { return s->problems; }

void snapshot_stats(const snapshot *s, size_t *files, size_t *dirs, size_t *reused)
{
    *files = s->fn;
    *dirs = s->ndirs;
    *reused = s->reused;
}

void snapshot_counts_of(const snapshot *s, snapshot_counts *out)
{
    *out = (snapshot_counts){s->fn, s->ndirs, s->reused, s->parsed, s->shared, s->from_disk, s->looked, s->own_bytes};
}
