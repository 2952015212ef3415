/* cache.h - the file cache (cache.c): files parsed once and re-read only when they change, the
 * frozen cache of a batch run (existence checks, globs, the key index, shared objects), eyaml and the
 * disk cache it carries. */
#ifndef HIERA_ENGINE_CACHE_H
#define HIERA_ENGINE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/glob.h"
#include "base/util.h"
#include "base/value.h"

#include <sys/stat.h>

typedef struct hiera_cache hiera_cache;

typedef enum {
    FMT_YAML,   /* Puppet's yaml_data (Psych safe_load, symbols, aliases) */
    FMT_JSON,   /* json_data */
    FMT_HOCON,  /* hocon_data */
    FMT_CONFIG, /* a hiera.yaml (same YAML rules as FMT_YAML) */
    FMT_YAML3,  /* Hiera 3's yaml backend (YAML.load under Psych 4) */
    FMT_TEXT,   /* raw bytes (key files) */
} file_format;

/* The text of a file (len bytes read from path) parsed as cache_load parses path with fmt (a data
 * file prepared as yaml_data prepares it; a document that is not a hash is kept as it is, for the
 * lookup to warn or fail under its strict setting: *flags is 0; CACHE_WARNED_NOT_HASH marks the
 * disk cache entries of earlier versions, which replaced such a document by {}), or NULL with err
 * as cache_load gives it. The
 * value depends on the text alone; path only names the file in messages. For a caller that reads
 * the bytes itself (snapshot.c: parses named by their content). */
#define CACHE_WARNED_NOT_HASH 1u
/* Files larger than this are refused rather than read into memory. */
#define CACHE_MAX_FILE_SIZE ((off_t)256 * 1024 * 1024)
hv *cache_parse_bytes(const char *path, const char *text, size_t len, file_format fmt, unsigned *flags, herr *err);
/* The warning cache_parse_bytes gives for a data file whose top is not a hash, for path (a parse
 * made for other bytes, taken again). */
void cache_warn_not_hash(const char *path);
/* Parses a file once per process and re-reads it only when stat() says it changed. The returned
 * value is a NEW reference (values are immutable once cached). NULL with err filled when the file
 * cannot be read or parsed (the error is cached too). *missing is set when the file does not exist. */
hv *cache_load(hiera_cache *c, const char *path, file_format fmt, herr *err);
hiera_cache *cache_new(void);
/* text (len bytes) parsed as cache_load parses the bytes of a file at path (the same errors, the
 * same preparation of yaml_data's hash): an editor's unsaved buffer. A new reference, or NULL with
 * err. Any thread. */
hv *cache_parse_text(const char *path, const char *text, size_t len, file_format fmt, herr *err);
/* Where a view finds files already read (a snapshot: snapshot.h), asked instead of the file
 * system; the view calls back rather than knowing the snapshot.
 *  - get: the file at path as parsed with fmt, when the source read it: true, with *value (the
 *    parsed value, immortal: valid while the source lives) or, when it did not parse, *err;
 *  - path_state: what the source knows of path: -1 nothing (ask the file system), 0 nothing
 *    there, 1 a file, 2 a directory;
 *  - release: the view's reference on the source, dropped when the view is freed. */
typedef struct {
    bool (*get)(const void *src, const char *path, file_format fmt, const hv **value, const herr **err);
    int (*path_state)(const void *src, const char *path);
    void (*release)(void *src);
} file_source;
/* A frozen cache over a source of files already read (a snapshot) for one thread at a time:
 * files the source has are taken from it (never read again), existence known to it is not asked
 * again; the rest of the cache (configs, key index, remembered work) is the view's own. STEALS the
 * caller's reference on src (released with ops->release when the view is freed). */
hiera_cache *cache_new_view(const file_source *ops, void *src);
/* A data hash read from the disk cache one top-level key at a time (cache_load_data). */
typedef struct lazy_data lazy_data;
/* cache_load for data files (FMT_YAML after yaml_data's own rules: a non-hash top is an empty
 * hash, symbol keys are strings). *keyflags (BORROWED, NULL unless the value is a hash) is the
 * file's memo for cache_key_flags. *kid: the hash's number in a frozen cache's key index (0 when
 * not indexed). With lazy (not NULL) and a cache that is not frozen, a hash whose disk cache
 * entry has an index is not decoded: NULL (no error) with *lazy set (a new reference; its
 * *keyflags as for a hash). known (may be NULL): the file's stat() made a moment ago by
 * cache_file_exists_stat, used instead of asking again. */
hv *cache_load_data(hiera_cache *c, const char *path, file_format fmt, hv **keyflags, uint32_t *kid, lazy_data **lazy,
                    const struct stat *known, herr *err);
/* A frozen cache's number for the data hash of path already loaded in the key index (as *kid of
 * cache_load_data), or 0. */
uint32_t cache_loaded_kid(hiera_cache *c, const char *path, file_format fmt);
/* What cache_load_data gives for the data hash numbered kid (from cache_loaded_kid): the hash
 * (BORROWED) and *keyflags, or NULL when no hash has that number. */
hv *cache_kid_data(hiera_cache *c, uint32_t kid, hv **keyflags);
/* The value of the top-level string key (code: hv_str_code) in ld: 1 with *out (BORROWED: ld
 * keeps it), 0 when absent, -1 with err when the hash cannot be had (a corrupt disk cache entry
 * whose file no longer parses). */
int lazy_data_get(lazy_data *ld, const char *key, size_t len, uint64_t code, hv **out, herr *err);
/* The whole hash (BORROWED: ld keeps it), decoded now if it was not; NULL with err as above. */
hv *lazy_data_hash(lazy_data *ld, herr *err);
lazy_data *lazy_data_retain(lazy_data *ld);
void lazy_data_release(lazy_data *ld);

/* The key index of a frozen cache: which indexed data hashes hold a top-level key, and its value
 * in each (BORROWED; the cache keeps the files). flags: cache_key_flags' bits, -1 until known. */
/* How often remembering a value's interpolation was tried, and found (interp.c gives it up for a
 * value whose results are almost never found again: one that reads a node's own name). */
typedef struct {
    uint16_t tried, found;
} interp_odds;
typedef struct {
    int32_t flags;
    interp_odds odds;
    hv *value;
    hv *deps; /* what interpolating value reads (interp.c), once known; the entry holds it */
} key_hit;
/* The key index of a frozen cache: for each top-level key, the loaded data hashes that hold it
 * (by number, in load order) with its value there. A lookup finds its key here once, then
 * answers each level from this short list instead of probing every file's hash (cache.c). */
typedef struct key_index {
    uint32_t n, cap;
    uint32_t *kids; /* the files' numbers, ascending: what a search reads */
    key_hit *hits;  /* hits[i]: the key in file kids[i] */
    /* a key in several files: the same numbers as a bitmap (bit kid), for key_index_has; kept
     * while it takes at most 128 bytes per file holding the key (else NULL: searches) */
    uint64_t *bits;
    uint32_t nwords;
    bool no_bits;
} key_index;
/* The hashes holding key (code: hv_str_code), or NULL when none of the indexed ones does. */
const key_index *cache_key_index(const hiera_cache *c, const char *key, size_t len, uint64_t code);
/* cache_key_index_gen (below, inline) changes whenever an entry fetched before may have moved or
 * a key without one may have one (cache_head.kix_gen); an entry kept meanwhile is up to date. */

/* The key's entry for the hash numbered kid, or NULL (x may be NULL). */
key_hit *key_index_find(const key_index *x, uint32_t kid);
/* Whether the hash numbered kid holds the key (x may be NULL): key_index_find != NULL, faster
 * (the walk asks it for every location). */
static inline bool key_index_has(const key_index *x, uint32_t kid)
{
    if (x && x->bits)
        return kid / 64 < x->nwords && (x->bits[kid / 64] >> (kid % 64) & 1);
    return key_index_find(x, kid) != NULL;
}
/* What a top-level key's value needs (KEY_INTERP: a string in it contains %{; KEY_INVALID: it is
 * not Puppet data), computed once per file and key. */
enum { KEY_INTERP = 1, KEY_INVALID = 2 };
int cache_key_flags(hv *keyflags, const char *key, size_t len, uint64_t code, const hv *value);
/* Keeps parsed files on disk between runs in dir (NULL: the user's cache folder). false when no
 * safe folder can be used (the cache then works in memory only). */
bool cache_use_disk(hiera_cache *c, const char *dir);
/* The disk cache set by cache_use_disk (BORROWED; unchanged until the next cache_use_disk), or NULL. */
struct diskcache *cache_disk(hiera_cache *c);
/* Puppet::LookupValue: no Ruby symbols, hash keys strings or numbers. */
bool hv_is_rich_data(const hv *v, int depth);
/* Whether a string in v (value or hash key, at any depth) contains "%{". */
bool hv_has_interpolation(const hv *v, int depth);
void cache_free(hiera_cache *c);
/* Puppet.warn_once: true the first time id is asked of this cache (the caller then warns), false
 * after (true without a cache). A cache remembers at most 4096 ids (cache.c): past that, false for
 * any new one (ids can hold what facts bring, and a long-lived cache must not grow with them or
 * flood its log). */
bool cache_warn_once(hiera_cache *c, const char *id);
/* The eyaml decryption context kept with the cache (created on first use; BORROWED). */
struct eyaml_ctx *cache_eyaml(hiera_cache *c);
/* Whether path exists (Ruby's File.exist?: directories included). */
bool cache_file_exists(hiera_cache *c, const char *path);
/* cache_file_exists that also gives, when it asked stat() (a cache that is not frozen and not a
 * view), what stat() said: *st a new malloc'ed struct, else NULL. */
bool cache_file_exists_stat(hiera_cache *c, const char *path, struct stat **st);
/* Whether path is a directory (remembered when the cache is frozen). */
bool cache_dir_exists(hiera_cache *c, const char *path);
/* glob_expand through the cache (remembered when the cache is frozen). out and the result as
 * glob_expand's (-1: the limit or the work budget was exceeded; never remembered). */
int cache_glob(hiera_cache *c, const char *pattern, size_t limit, glob_result *out);
/* Promises that files will not change while the cache lives: loaded files are not re-checked,
 * existence checks and glob expansions are remembered. */
void cache_freeze(hiera_cache *c);
/* A one-shot run (hiera lookup: one process, one answer): a file's stat() made by an existence
 * check serves the load that follows it at once, as a frozen cache's does, without the rest of
 * freezing (the data files are still read key by key). A file is then stat()ed once, as the
 * journal of the result cache records it once (fsjournal.h: the first observation of a path is
 * what the run saw). */
void cache_stat_once(hiera_cache *c);
/* What identifies the running program's code (id[0, len), copied; a one-shot command's: its
 * executable's identity): the settings check's verdict is then kept in the disk cache
 * (settings_check_kept) by contexts made with this cache. cache_run_identity: it, or NULL. */
void cache_set_run_identity(hiera_cache *c, const void *id, size_t len);
const void *cache_run_identity(const hiera_cache *c, size_t *len);
/* The first member of every hiera_cache, read inline: the lookup asks for it several times a
 * key (a call each time cost 1.3% of a batch run's instructions). */
typedef struct {
    /* the caller promised that files do not change while the cache lives, so a file loaded
     * once is not stat()ed again, and existence checks and glob expansions are remembered
     * (hiera batch: thousands of nodes over the same tree) */
    bool frozen;
    struct memo *work; /* merges and interpolations remembered (frozen only; memo.h), made on first use */
    uint32_t kix_files; /* data hashes in the key index (frozen only) */
    /* counts the changes that make entries fetched from the key index stale: a key added (an
     * entry where a lookup found none) or the table grown (entries moved). A file whose keys are
     * all indexed already only adds to their entries, in place: most nodes' own files. */
    uint32_t kix_gen;
} cache_head;
static inline bool cache_is_frozen(const hiera_cache *c) { return ((const cache_head *)(const void *)c)->frozen; }
static inline uint32_t cache_key_index_gen(const hiera_cache *c) { return ((const cache_head *)(const void *)c)->kix_gen; }
/* A hash kept with the cache for parse results that only depend on text (BORROWED). */
hv *cache_memo(hiera_cache *c);
/* The table of remembered merges and interpolations (memo.h, BORROWED), made on first use; NULL
 * when the cache is not frozen (files may change: nothing can be remembered). */
struct memo *cache_work_memo_make(hiera_cache *c);
/* The JSON texts of stable containers rendered through the cache (render.h json_memo; BORROWED),
 * made on first use. */
struct json_memo *cache_json_memo(hiera_cache *c);
/* Facts read back from the disk cache share their repeated strings from now on
 * (hiera_cache_share_facts_strings); the table (diskcache.h dc_strings, BORROWED) or NULL. */
void cache_share_facts_strings(hiera_cache *c);
struct dc_strings *cache_facts_strings(hiera_cache *c);
static inline struct memo *cache_work_memo(hiera_cache *c)
{
    struct memo *m = ((cache_head *)(void *)c)->work;
    return m ? m : cache_work_memo_make(c);
}
/* Objects shared by every context of the cache, by a signature of what they depend on. get:
 * BORROWED (*found tells whether the signature is known); put: the cache owns obj and calls
 * free_fn on it when freed. */
void *cache_shared_get(hiera_cache *c, const char *signature, bool *found);
/* The keys parsed (lookup.c): a copy of each text (owned by the cache) with its parse in the work
 * table, and the options kept for it. A batch looks every key up for node after node: comparing
 * texts costs less than finding the parse again, and a key's options stay known from one block
 * of nodes to the next. An open-addressing table of RECENT_KEYS slots by the text's hash,
 * emptied when three quarters full. */
#define RECENT_KEYS 1024
/* The key's lookup_options as extracted from the compiled options lo_c (shared by the cache),
 * with their merge and convert_to (BORROWED from lo_c); lo_c NULL: an empty place. */
typedef struct {
    const void *lo_c;
    const hv *lo, *merge, *conv;
    void *ms; /* the merge strategy made for merge (the cache's), or NULL */
} recent_options;
/* Options kept per key: nodes of different roles whose files hold different lookup_options
 * come in turns (a block of nodes asks a key one node after the other). */
#define RECENT_OPTIONS 4
typedef struct {
    char *text; /* NULL: an empty slot */
    size_t len;
    uint64_t code;
    const hv *entry;
    recent_options opts[RECENT_OPTIONS];
    unsigned next_opt; /* the place taken next */
    unsigned last_opt; /* the place found last */
    /* the key's entry in the key index and the generation it was found at (inv.kx, .kx_gen) */
    uint32_t kx_gen;
    const key_index *kx;
    /* the parse entry's parts, read from it once (lookup.c; BORROWED from the entry) */
    bool parts;
    const char *root, *module;
    const hv *segments;
    size_t root_len;
    uint64_t root_code;
    /* answers remembered (lookup.c): lookups that looked for one, and found one */
    uint32_t ans_tries, ans_found;
} recent_key;
/* The slot of key (len bytes, code its hash_bytes) or NULL (BORROWED; valid until the next
 * cache_recent_add). */
recent_key *cache_recent_find(hiera_cache *c, const char *key, size_t len, uint64_t code);
/* The slot cache_recent_find found last for a key text at key's address, when its text is still
 * key's (a caller asks the same texts again: no length, code or search), else NULL. */
#define RECENT_BY_ADDRESS 256
recent_key *cache_recent_at(hiera_cache *c, const char *key);
/* A slot for key, which is not in the table, with its parse entry (BORROWED, as find). */
recent_key *cache_recent_add(hiera_cache *c, const char *key, size_t len, uint64_t code, const hv *entry);
void cache_shared_put(hiera_cache *c, const char *signature, void *obj, void (*free_fn)(void *));

#endif
