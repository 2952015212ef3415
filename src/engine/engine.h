/* engine.h - the lookup engine's state, shared by lookup.c and the files it is split into
 * (lookup_layers, _data, _levels, _walk, _options: layers, providers, merges, options) and interp.c (%{} interpolation, scope variables, dotted keys). The names follow Puppet's
 * lookup classes (lib/puppet/pops/lookup/) so that the two can be read side by side. */
#ifndef HIERA_ENGINE_H
#define HIERA_ENGINE_H

#include "hiera.h"
#include "base/diag.h"
#include "engine/cache.h"
#include "engine/config.h"
#include "engine/explain.h"
#include "engine/merge.h"

typedef struct hiera_ctx hiera_ctx;

#include "engine/result.h"

typedef struct rregex rregex;

/* A resolved location of a hierarchy entry (ResolvedLocation). */
typedef struct {
    char *path;     /* absolute path (or URI) */
    char *original; /* as declared (for globs: the whole interpolated pattern) */
    bool exists;
    bool is_uri;
    struct stat *st; /* what the existence check found (caches that are not frozen), for the load */
    /* the data_hash function's result for this location, loaded once per context */
    bool loaded;
    hv *data;         /* NULL while lazy holds it (one-shot lookups: decoded key by key) */
    lazy_data *lazy;
    hv *keyflags;     /* BORROWED from the cache: the file's cache_key_flags memo */
    uint32_t kid;     /* the data's number in the frozen cache's key index, 0 when not indexed */
    herr data_err;
    hv *memo; /* lookup_key functions: key -> the answer already given */
} location;

/* A hierarchy entry after interpolation (a FunctionProvider). */
typedef struct {
    const hlevel *lvl;
    hv *options;     /* interpolated options; NULL means {} */
    location *locs;
    size_t nlocs;
    bool nil_location; /* the entry declares no location: the function is called once without */
    bool options_refused; /* a data_hash function of the table given options: Puppet's take
                           * Struct[{path=>String[1]}], so a location that exists fails as if
                           * the entry declared none */
    hv *recalled;      /* a remembered level's record (lookup_levels.c level_recall): the
                        * locations' path and original are BORROWED from its strings */
    bool fmt_set, fmt_known; /* the function's file format, once known */
    file_format fmt;
    /* a version 3 backend of Hiera's own (hiera3_backend): whether Ruby could require its
     * hiera/backend/<name>_backend.rb (lookup_data.c hiera3_backend_loadable): 0 not asked yet,
     * 1 yes, -1 no */
    signed char h3_loadable;
    location nil_loc;
} provider;

/* The walk over a layer's hierarchy made shorter (lookup_walk.c layer_plan): with a frozen cache,
 * once every location that exists is a loaded data hash in the key index, the walk only needs,
 * for each provider in order, the file numbers of its locations. */
typedef struct {
    int state;               /* 0: not yet, 1: made, -1: cannot be (a location the index lacks) */
    const provider *provs;   /* the providers it was made for */
    size_t nprovs;
    size_t nprobes;          /* the locations that exist, in the walk's order */
    struct probe {
        uint32_t kid;        /* its file number */
        uint32_t prov;       /* its provider's index */
        uint32_t loc;        /* its index in its provider */
    } *probes;
    /* the same file numbers as bitmap words (word, bits), by word: a key whose bitmap has none
     * of them is in none of the layer's files, told without a walk over the probes */
    size_t nwords;
    struct plan_word {
        uint32_t word;
        uint64_t bits;
        uint8_t at[64]; /* when direct: the probe of each bit's file */
    } *words;
    /* each file in one probe only, and fewer than 255 probes: the probes holding a key are
     * found from the key's bits in the words (at) instead of a look at every probe */
    bool direct;
} probe_plan;

/* A data provider of one layer (ConfiguredDataProvider). */
typedef struct {
    layer_kind kind;
    char *module;    /* module layers */
    char *name;      /* "Global Data Provider (hiera configuration version 5)" etc. */
    hcfg *cfg;       /* NULL: the layer has no provider */
    herr cfg_err;    /* config creation failed: every use reports it */
    bool expanded;
    herr expand_err;
    provider *provs;
    size_t nprovs;
    provider *dprovs; /* default_hierarchy */
    size_t ndprovs;
    probe_plan plan, dplan; /* for provs and dprovs */
} layer;

/* lookup_options compiled for one module (or for no module): literal keys and patterns. */
typedef struct {
    hv *literal;     /* hash key -> options, or NULL */
    rregex **pats;
    hv **pat_values;
    size_t npats;
    hv *memo;        /* root key -> the options that apply (false: none), filled as keys come */
    bool shared;     /* owned by the cache (shared by the contexts with the same data) */
} lo_compiled;

/* A name (copied; "" for no module) and what was found for it; stable: where the name was last
 * asked, when that text lives as long as the cache (a frozen cache's parsed key), for a search
 * by address. */
typedef struct {
    char *name;
    void *obj;
    int st;
    const char *stable;
} recent_name;

struct interp_hooks;

#define WALK_REC_MAX 32

struct hiera_ctx {
    hiera_cache *cache;
    const struct interp_hooks *hooks; /* the lookup's, for interpolation (lookup.c) */
    /* where the context's warnings go: the caller's callback (api.c wraps it as a diag sink) */
    hiera_diagnostic_fn user_diag;
    void *user_diag_data;
    bool own_cache;
    char *codedir;
    char *env_name;
    char *env_dir;          /* the environment's folder; NULL for Puppet's default production */
    const struct hiera_environment *environment; /* its modulepath and settings (settings.c), BORROWED */
    struct hiera_environment *own_env;   /* the environment and settings hiera_new made for */
    struct hiera_settings *own_settings; /* this context alone (freed with it), or NULL */
    hv *settings_vars;      /* the "settings::<name>" variables, made when first read */
    hv *server_vars;        /* Puppet 8: server_facts and the server facts' variables, made when first read */
    int strict;             /* Puppet's strict setting: 0 off, 1 warning, 2 error */
    hiera_puppet_version version; /* the Puppet answered as (7 or 8; hiera_puppet_version) */
    bool shield_undefined;  /* Puppet 8 resolving a version 5 location: an undefined variable is a
                               warning under strict = error (avoid_hiera_interpolation_errors) */
    bool hiera3_scope;      /* inside a version 3 global layer, whose lookups see the scope
                               through Hiera::Scope: calling_class, calling_class_path and
                               calling_module are its own (interp.c scope_get) */
    hv *warned_vars;        /* undefined variables warned about (once each) */
    char *global_config;    /* --hiera_config */
    hv *scope;              /* top-scope variables */
    /* while a lookup runs (api.c attaches them and hands them to its result afterwards): */
    explainer *ex;          /* NULL unless explaining */
    struct prov_registry *prov; /* NULL unless tracing where values come from */
    bool global_only;
    bool strict_paths;      /* the facts rule's strict mode (lookup_levels.c location_allowed) */
    bool redact_encrypted;  /* eyaml blocks are Sensitive, never decrypted (hiera_options) */
    /* hiera check: a level whose data function this engine cannot run (a Ruby or Puppet function)
     * answers "not found" instead of failing the lookup, and each such answer is counted, so that
     * the caller knows the result is not Puppet's (its answer cannot be known here) */
    bool opaque_unknown;
    unsigned opaque_hits;
    /* hiera_options.remap_default_environmentpath: the folder of environments a datadir naming one
     * of Puppet's default environmentpaths (envpath_remap) is read under instead, or NULL (owned) */
    char *remap_envpath;
    herr env_err;           /* the environment does not exist */

    layer *global;
    bool env_init;
    layer *env;             /* NULL: no environment data provider */
    herr env_provider_err;
    hv *modules;            /* module name -> index into mod_layers (as int), or undef for none */
    layer **mod_layers;
    size_t nmod_layers;

    /* lookup_options caches (LookupAdapter @lookup_options etc.) */
    bool global_lo_done;
    hv *global_lo;
    herr global_lo_err;
    bool env_lo_done;
    hv *env_lo;
    herr env_lo_err;
    hv *lo_index;           /* module name ("" for none) -> index into lo_cache */
    lo_compiled **lo_cache;
    size_t nlo_cache;
    hv *dlo_index;          /* module default_hierarchy lookup_options */
    lo_compiled **dlo_cache;
    size_t ndlo_cache;

    /* Invocation name stack (recursion guard) */
    char **stack;
    size_t nstack, capstack;
    size_t nested_lookups;  /* guarded entries since the top-level lookup began (check_enter) */
    /* values the walk interpolated (lookup_walk.c data_value): a remembered answer (lookup.c)
     * is only kept for a walk that interpolated none */
    uint64_t walk_interps;
    /* a top-level merged walk's interpolations, recorded while `on` (lookup.c: its answer is then
     * remembered under what they read): `ok` while each value interpolated was one whose reads
     * are listed (data_value: a key index entry's deps, variables and literals only), `lists`
     * those lists (kept by the cache), in the walk's order */
    struct {
        bool on, ok;
        unsigned n;
        const hv *lists[WALK_REC_MAX];
    } walk_rec;
    /* the merge strategies last found in the cache for a merge value (frozen cache only) */
    struct {
        const hv *merge;
        struct merge_strategy *ms;
    } ms_recent[8];
    unsigned ms_next;
    const char *top_name;   /* the top-level key being looked up (borrowed), for errors */
    /* frozen cache: what each variable expression (parse_expr's entry, kept by the cache) reads
     * in this context's scope, as remembered interpolations key it (interp.c var_read) */
    struct var_read *vars;
    size_t vars_cap, nvars;
    sbuf vkey; /* interpolate_remembered's key, built here (no allocation per value) */
    /* the modules asked for last: their layer and state (module_layer) and their compiled
     * lookup_options (lookup_lookup_options), found without a hash lookup (lookup_int.h recent_get) */
    recent_name mod_recent[2], lo_recent[2];
    hv *lo_names[2]; /* lookup_options that are a string: String#[] of "merge", "convert_to" */
};

/* The options lookup_options may give a key (lookup.c lo_option). */
typedef enum { LO_MERGE, LO_CONVERT_TO } lo_name;

/* Puppet's Invocation: what changes for a nested lookup. */
typedef struct inv {
    hiera_ctx *h;
    const char *module_name; /* module of the key being looked up, or NULL */
    const char *top_key;
    const hv *local_scope;   /* mapped_paths: {var_name => value} overlay, or NULL */
    const hcfg *config;      /* interpolating inside this hiera.yaml: errors name it */
    const char *root_key;    /* the root key this invocation probes data for, with its hash */
    size_t root_len;
    uint64_t root_code;
    /* frozen cache: root_key's entry in the key index, as of kx_gen indexed files (lookup.c) */
    uint32_t kx_gen;
    const struct key_index *kx;
    /* module_name lives as long as the cache (adapter_lookup: a frozen cache's parsed key) */
    bool module_stable;
} inv;

/* ---- interp.c ---- */

/* Interpolation#interpolate: a new value with %{} expressions resolved in strings, array
 * elements and hash keys/values. value is borrowed. */
lr interpolate(inv *I, hv *value, bool allow_methods, hv **out, herr *err);
/* interpolate(I, value, true, ...) for a stable data value: remembered in m (a frozen cache's
 * table, or NULL for the plain interpolation) and given as a stable value (interp.c). deps_slot,
 * when not NULL, keeps (a reference to) what the value reads, found the first time; odds, when
 * not NULL, counts the value's tries: once many found almost nothing, the value is interpolated
 * plainly (its results then are not stable values). */
struct memo;
lr interpolate_remembered(inv *I, struct memo *m, hv *value, hv **deps_slot, interp_odds *odds, hv **out, herr *err);
/* Frees what interpolate_remembered and location_remembered kept in the context. */
void interp_ctx_free(hiera_ctx *h);
/* A hierarchy location template s (one that holds "%{"; no method syntax) interpolated as before
 * for the same values of the variables it reads: the malloc'ed text, or NULL; then, when key->len
 * is set, the caller's text (once checked) is to be remembered under key (memo_put). */
char *location_remembered(inv *I, struct memo *m, const char *s, bool glob, bool uri, sbuf *key);
/* What the expressions of the hierarchy templates t[0..n) read (no method syntax), in order, as
 * a new list for templates_key, or false when one of them cannot stand in a key. */
hv *templates_deps(inv *I, const char *const *t, size_t n);
/* Appends to k what each expression of deps (from templates_deps) reads now, as the values a
 * remembered expansion of the templates is kept under; false when they cannot stand for it (an
 * unusable list, a variable that is not a plain scalar, an explanation or a local scope). */
bool templates_key(inv *I, const hv *deps, sbuf *k);
/* The 'scope' interpolation method: a variable with an optional dotted path; *out is undef when
 * it is not defined. subject is the string being interpolated (for syntax errors). */
lr scope_lookup(inv *I, const char *key, const char *subject, hv **out, herr *err);
/* One %{...} expression as Interpolation#interpolate reads it: its kind and argument (malloc'ed):
 * the key of lookup()/hiera() and alias(), literal()'s text, the scope variable (scope() or a
 * plain name, with its dotted path), an unknown method's name, "" for an empty expression. */
typedef enum { INTERP_EMPTY, INTERP_SCOPE, INTERP_LOOKUP, INTERP_ALIAS, INTERP_LITERAL, INTERP_UNKNOWN } interp_kind;
interp_kind interp_parse_expr(const char *e, size_t n, char **arg);
/* The next "%{...}" of s[0, len) from *pos: 1 with where it starts (*obeg), its expression as
 * Ruby's expr.strip! leaves it (NULs stripped too; *e, *en) and *pos moved past its '}'; 0 when
 * there is none; -1 when the one at *obeg is not closed (interpolation leaves the rest as it is). */
int interp_next_expr(const char *s, size_t len, size_t *pos, size_t *obeg, const char **e, size_t *en);
/* SubLookup#split_key: the segments (strings; integers for digit segments) as a new array, or
 * NULL when the key has a syntax error. */
hv *split_key(const char *key, size_t len);
/* The keys a value's interpolations look up: fn is called with the root key (the first segment
 * of a dotted key; the whole argument when it does not split) of every lookup(), hiera() and
 * alias() expression in its strings, array elements and hash keys and values, as interpolate
 * would meet them. What hiera diff follows to find the answers a changed key can reach. */
void interp_lookup_roots(const hv *value, void (*fn)(const char *root, size_t len, void *data), void *data);
/* SubLookup#sub_lookup: digs the segments (array, from index `from`) into value. */
lr sub_lookup(inv *I, const char *key, const hv *segments, size_t from, hv *value, hv **out, herr *err);

/* ---- lookup_layers.c, lookup_levels.c, lookup_data.c ---- */

/* The layers of a context, made on first use (what enumerate.c lists): the global layer (its
 * configuration loaded by global_config), the environment's (NULL without an environment
 * hiera.yaml; err set when it cannot be loaded), a module's (NULL with *state saying why). */
layer *global_layer(hiera_ctx *h);
bool global_config(hiera_ctx *h, layer *l, herr *err);
layer *env_layer(hiera_ctx *h, herr *err);
typedef enum { MOD_OK, MOD_NOT_FOUND, MOD_NO_PROVIDER } mod_state;
layer *module_layer(hiera_ctx *h, const char *name, mod_state *state, herr *err);
/* The folders modules are found in, in order (a NULL-terminated array; module_roots_free). */
char **module_roots(hiera_ctx *h);
void module_roots_free(char **roots);
/* A layer's hierarchy (or default_hierarchy) interpolated for the context's node. */
lr layer_providers(hiera_ctx *h, layer *l, bool use_default, provider **out, size_t *n, herr *err);
/* Whether a lookup can run the provider's function (else false with the lookup's error). */
bool provider_usable(hiera_ctx *h, const layer *l, provider *p, herr *err);
/* A location's data hash (loaded once), BORROWED; NULL with err. */
hv *location_data(hiera_ctx *h, const layer *l, provider *p, location *loc, herr *err);

/* What interpolation asks of the lookup above it (lookup.c sets the context's hooks): interp.c
 * calls back through them rather than calling up into lookup.c.
 *  - enter: the recursion guard (Invocation#check): fails with "Recursive lookup detected in
 *    [...]" when name is already being looked up; otherwise pushes it;
 *  - leave: pops the guard; a Puppet::Error raised inside becomes a LookupError
 *    (HERR_PUPPET -> HERR_LOOKUP);
 *  - lookup: the 'lookup'/'hiera'/'alias' interpolation method: a full lookup with default "". */
struct interp_hooks {
    bool (*enter)(inv *I, const char *name, herr *err);
    void (*leave)(inv *I, herr *err);
    /* enter and leave at once, as a remembered interpolation stands for them: false (nothing
     * reported, nothing counted) when enter would fail */
    bool (*pass)(inv *I, const char *name);
    lr (*lookup)(inv *I, const char *key, hv **out, herr *err);
};

#endif
