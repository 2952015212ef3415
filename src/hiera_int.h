/* hiera_int.h - the internal shapes shared by the lookup stages:
 *   config.c (hiera.yaml -> hcfg), cache.c (files -> parsed values), merge.c (strategies),
 *   interp.c (%{} expressions), explain.c (the explanation tree), lookup.c (the engine).
 */
#ifndef HIERA_INT_H
#define HIERA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glob.h"
#include "util.h"
#include "value.h"

typedef struct hiera_ctx hiera_ctx;
typedef struct hiera_cache hiera_cache;
typedef struct explainer explainer;

/* ------------------------------------------------------------------ file cache (cache.c) */

typedef enum {
    FMT_YAML,   /* Puppet's yaml_data (Psych safe_load, symbols, aliases) */
    FMT_JSON,   /* json_data */
    FMT_HOCON,  /* hocon_data */
    FMT_CONFIG, /* a hiera.yaml (same YAML rules as FMT_YAML) */
    FMT_YAML3,  /* Hiera 3's yaml backend (YAML.load under Psych 4) */
    FMT_TEXT,   /* raw bytes (key files) */
} file_format;

/* Parses a file once per process and re-reads it only when stat() says it changed. The returned
 * value is a NEW reference (values are immutable once cached). NULL with err filled when the file
 * cannot be read or parsed (the error is cached too). *missing is set when the file does not exist. */
hv *cache_load(hiera_cache *c, const char *path, file_format fmt, herr *err);
hiera_cache *cache_new(void);
/* cache_load for data files (FMT_YAML after yaml_data's own rules: a non-hash top is an empty
 * hash, symbol keys are strings). *keyflags (BORROWED, NULL unless the value is a hash) is the
 * file's memo for cache_key_flags. *kid: the hash's number in a frozen cache's key index (0 when
 * not indexed). */
hv *cache_load_data(hiera_cache *c, const char *path, file_format fmt, hv **keyflags, uint32_t *kid, herr *err);

/* The key index of a frozen cache: which indexed data hashes hold a top-level key, and its value
 * in each (BORROWED; the cache keeps the files). flags: cache_key_flags' bits, -1 until known. */
typedef struct {
    int32_t flags;
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
/* Changes whenever a hash is added to the index (entries fetched before may have moved). */
uint32_t cache_key_index_gen(const hiera_cache *c);
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
/* The eyaml decryption context kept with the cache (created on first use; BORROWED). */
struct eyaml_ctx *cache_eyaml(hiera_cache *c);
/* Whether path exists (Ruby's File.exist?: directories included). */
bool cache_file_exists(hiera_cache *c, const char *path);
/* Whether path is a directory (remembered when the cache is frozen). */
bool cache_dir_exists(hiera_cache *c, const char *path);
/* glob_expand through the cache (remembered when the cache is frozen). out and the result as
 * glob_expand's (-1: the limit or the work budget was exceeded; never remembered). */
int cache_glob(hiera_cache *c, const char *pattern, size_t limit, glob_result *out);
/* Promises that files will not change while the cache lives: loaded files are not re-checked,
 * existence checks and glob expansions are remembered. */
void cache_freeze(hiera_cache *c);
bool cache_is_frozen(const hiera_cache *c);
/* A hash kept with the cache for parse results that only depend on text (BORROWED). */
hv *cache_memo(hiera_cache *c);
/* The table of remembered merges and interpolations (memo.h, BORROWED), made on first use; NULL
 * when the cache is not frozen (files may change: nothing can be remembered). */
struct memo *cache_work_memo(hiera_cache *c);
/* Objects shared by every context of the cache, by a signature of what they depend on. get:
 * BORROWED (*found tells whether the signature is known); put: the cache owns obj and calls
 * free_fn on it when freed. */
void *cache_shared_get(hiera_cache *c, const char *signature, bool *found);
/* The keys parsed last (lookup.c): a copy of each text (owned by the cache, or NULL) with its
 * parse in the work table. A batch looks one key up for several nodes in a row: comparing texts
 * costs less than finding the parse again. An array of RECENT_KEYS (BORROWED). */
#define RECENT_KEYS 4
typedef struct {
    char *text;
    size_t len;
    const hv *entry;
    /* the key's lookup_options as extracted from the compiled options lo_c (shared by the
     * cache), with their merge and convert_to (BORROWED from lo_c); lo_c NULL: not yet */
    const void *lo_c;
    const hv *lo, *merge, *conv;
    void *ms; /* the merge strategy made for merge (the cache's), or NULL */
} recent_key;
recent_key *cache_recent_keys(hiera_cache *c);
void cache_shared_put(hiera_cache *c, const char *signature, void *obj, void (*free_fn)(void *));

/* ------------------------------------------------------------------ interpolation (both engines) */

/* An interpolated string may not grow past this (data files are capped at 256 MB; a value that
 * repeats a long one many times could otherwise take all memory); the message names the text
 * interpolated (its first 100 bytes) and the bound. */
#define MAX_INTERPOLATED_SIZE (64 * 1024 * 1024)
#define MAX_INTERPOLATED_MSG "Interpolation of '%.100s' gives a string longer than %d bytes"

/* ------------------------------------------------------------------ merge strategies (merge.c) */

typedef enum {
    MS_FIRST,
    MS_DEFAULT, /* first found; what `merge: nil` means */
    MS_UNIQUE,
    MS_HASH,
    MS_DEEP,
    MS_UNCONSTRAINED_DEEP, /* Hiera 3 'deeper' through Puppet */
    MS_REVERSE_DEEP,       /* Hiera 3 'deep' through Puppet */
} ms_kind;

typedef struct merge_strategy {
    ms_kind kind;
    hv *options;          /* the options hash as given (with or without "strategy"), or NULL */
    char *knockout_prefix;
    bool sort_merged_arrays, merge_hash_arrays, merge_debug;
    /* kept by a frozen cache to its end: merges with it may be remembered in memo (memo.h) */
    bool stable;
    struct memo *memo;
    /* Hiera 3 deep_merge options */
    bool preserve_unmergeables;
    char *unpack_arrays;
} merge_strategy;

/* Puppet's MergeStrategy.strategy(merge): merge is NULL/undef, a string or a hash. Returns a new
 * strategy or NULL with err (HERR_ERROR: ArgumentError / TypeAssertionError messages). */
merge_strategy *ms_from_value(const hv *merge, herr *err);
merge_strategy *ms_new(ms_kind kind);
void ms_free(merge_strategy *ms);
const char *ms_name(const merge_strategy *ms);
bool ms_is_first(const merge_strategy *ms);

/* Puppet's strategy steps: convert_value for the first found value, merge(memo, value) for each
 * next one (memo is the higher-priority side), merge_single when exactly one variant exists.
 * All return new references; merge returns NULL with err on a type or deep_merge error.
 * When `inplace` is set, deep merges may edit e1's containers (Puppet's deep_merge! does); only
 * pass it for values nobody else holds except the explainer. */
hv *ms_convert_value(const merge_strategy *ms, hv *v);
hv *ms_merge_single(const merge_strategy *ms, hv *v);
hv *ms_merge(const merge_strategy *ms, hv *e1, hv *e2, bool inplace, herr *err);

/* The deep_merge gem's deep_merge!(source, dest, options) on private, mutable values. Consumes
 * source and dest, returns the result (new reference) or NULL with err. */
typedef struct {
    const char *knockout_prefix;
    bool preserve_unmergeables;
    bool sort_merged_arrays;
    bool merge_hash_arrays;
    const char *unpack_arrays;
    /* a frozen cache's table (memo.h) and what stands for these options in its keys, or NULL:
     * the merge of a stable value with its own copy is remembered there */
    struct memo *memo;
    const void *memo_id;
} dm_options;
hv *deep_merge_bang(hv *source, hv *dest, const dm_options *o, herr *err);

/* ------------------------------------------------------------------ hiera.yaml (config.c) */

typedef enum {
    FN_NONE = 0,
    FN_DATA_HASH,
    FN_LOOKUP_KEY,
    FN_DATA_DIG,
    FN_HIERA3_BACKEND,
    FN_V4_DATA_HASH,
} fn_kind;

typedef enum {
    LOC_NONE = 0,
    LOC_PATH,
    LOC_PATHS,
    LOC_GLOB,
    LOC_GLOBS,
    LOC_URI,
    LOC_URIS,
    LOC_MAPPED_PATHS,
} loc_kind;

typedef struct {
    char *name;
    fn_kind fkind;
    char *fname;   /* function name, e.g. "yaml_data" */
    char *datadir; /* entry's datadir, else defaults', else "data" (not yet interpolated) */
    loc_kind lkind;
    char **locs; /* declared locations (mapped_paths: the three strings) */
    size_t nlocs;
    hv *options; /* entry's options, else defaults' (not interpolated), or NULL */
    char *extension; /* v3/v4: required extension appended to paths, or NULL */
    bool v3_datadir_abs; /* v3: datadir is taken as given (relative to cwd), not config root */
} hlevel;

typedef enum { LAYER_GLOBAL, LAYER_ENV, LAYER_MODULE } layer_kind;

typedef struct hcfg {
    int version;   /* 3, 4 or 5 */
    char *path;    /* the hiera.yaml, or NULL for the built-in default config */
    char *root;    /* its folder */
    hlevel *levels;
    size_t nlevels;
    hlevel *dlevels; /* default_hierarchy (module layer) */
    size_t ndlevels;
    bool has_default_hierarchy;
    /* a problem Puppet only reports when the hierarchy is used (duplicate names, unknown
     * functions, default_hierarchy outside a module): set, the config fails every lookup */
    herr lazy_err;
    /* v3 */
    char *merge_behavior;     /* native | deep | deeper */
    hv *deep_merge_options;   /* hash or NULL */
    hv *raw;                  /* the loaded config hash (symbol keys made strings) */
    int refs;                 /* config_load's caller holds one; a frozen cache another */
} hcfg;

/* Loads and validates a hiera.yaml for a layer. path may name a missing file: the layer then gets
 * Puppet's built-in default (v5 for global/env/module). Returns NULL with err on an invalid file.
 * *ignored is set (and NULL returned without error) when Puppet ignores the file with a warning
 * (a version 3 file in the environment or a module). The result is read-only: with a frozen
 * cache one loaded config is shared by every context; config_free drops the caller's hold. */
hcfg *config_load(hiera_cache *cache, const char *path, layer_kind layer, bool *ignored, herr *err);
void config_free(hcfg *c);

/* The fast check of a version 5 config (true only when Puppet's schema certainly accepts it) and
 * the schema itself, for the tests that hold one to the other. */
bool config_v5_quick_valid(const hv *config);
const char *config_v5_type(void);

/* Line of the first line (from start_line) of the config file whose text, with quoted parts and
 * comments handled as Puppet's find_line_matching does, matches the Ruby regexp; 0 when none. */
int config_find_line(const hcfg *c, const char *ruby_regexp, int start_line);

/* ------------------------------------------------------------------ explanations (explain.c) */

typedef enum {
    EX_ROOT,
    EX_TOP,         /* Searching for "key" (:data or :meta) */
    EX_INVALID_KEY, /* Invalid key "lookup_options" */
    EX_MERGE_SOURCE,
    EX_MODULE,      /* module not found / provider not found */
    EX_INTERPOLATE,
    EX_MERGE,
    EX_DATA_PROVIDER,
    EX_HIERARCHY_ENTRY, /* a function provider: Hierarchy entry "name" */
    EX_LOCATION,
    EX_SUB_LOOKUP,
    EX_SEGMENT,
    EX_SCOPE,
} ex_type;

typedef enum {
    EV_NONE,
    EV_FOUND,
    EV_FOUND_IN_OVERRIDES,
    EV_FOUND_IN_DEFAULTS,
    EV_RESULT,
    EV_NOT_FOUND,
    EV_LOCATION_NOT_FOUND,
    EV_MODULE_NOT_FOUND,
    EV_MODULE_PROVIDER_NOT_FOUND,
} ex_event;

explainer *ex_new(bool explain_options, bool only_explain_options);
void ex_free(explainer *ex);
bool ex_only_options(const explainer *ex);
/* Pushes a node of the given type. text: the key / name / expression / path depending on type;
 * text2: original path (EX_LOCATION), configuration path (EX_DATA_PROVIDER); ms: EX_MERGE's
 * strategy (copied); segs: EX_SUB_LOOKUP's segments (copied); flag: EX_LOCATION is a URI. */
void ex_push(explainer *ex, ex_type t, const char *text, const char *text2);
void ex_push_merge(explainer *ex, const merge_strategy *ms);
void ex_push_sub_lookup(explainer *ex, const hv *segments);
void ex_push_segment(explainer *ex, const hv *segment);
void ex_push_location(explainer *ex, const char *path, const char *original, bool is_uri);
void ex_push_provider(explainer *ex, const char *name, const char *config_path, const char *module);
void ex_pop(explainer *ex);
/* While on (calls nest), values recorded are wrapped as Sensitive so that no explanation form
 * prints them in clear: used for keys whose lookup_options convert them to Sensitive. */
void ex_redact(explainer *ex, bool on);
void ex_found(explainer *ex, const hv *key, hv *value);      /* value borrowed (incref'd) */
void ex_found_str(explainer *ex, const char *key, hv *value);
void ex_found_in_defaults(explainer *ex, const char *key, hv *value);
void ex_not_found(explainer *ex, const hv *key);
void ex_not_found_str(explainer *ex, const char *key);
void ex_location_not_found(explainer *ex);
void ex_result(explainer *ex, hv *value);
void ex_text(explainer *ex, const char *text);
void ex_merge_source(explainer *ex, const char *source);
void ex_module_event(explainer *ex, const char *module, ex_event ev);
/* Puppet's text form (`--explain`). Returns a malloc'ed string. */
char *ex_render_text(const explainer *ex);
/* The tree as a value (`--explain --render-as json`), new reference. */
hv *ex_to_value(const explainer *ex);

/* ------------------------------------------------------------------ the engine (lookup.c) */

typedef enum { LR_FOUND = 0, LR_NOT_FOUND = 1, LR_ERROR = 2 } lr;

#endif
