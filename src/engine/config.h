/* config.h - hiera.yaml (config.c): versions 3, 4 and 5 loaded and validated as Puppet does, into
 * layers of hierarchy levels. */
#ifndef HIERA_ENGINE_CONFIG_H
#define HIERA_ENGINE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "base/value.h"
#include "engine/cache.h"

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
/* The same under Puppet's strict setting (0 off, 1 warning, 2 error; config_load is 1): off drops
 * the deprecation warnings of versions 3 and 4; error makes a version 3 file in the environment or
 * a module an error ("hiera.yaml version 3 cannot be used in an environment (file: ...)"). */
hcfg *config_load_strict(hiera_cache *cache, const char *path, layer_kind layer, int strict, bool *ignored, herr *err);
void config_free(hcfg *c);
/* Frees what a level holds (not the level itself). */
void config_level_free(hlevel *l);
/* HieraConfig.v4_function_config: the configuration of a legacy data provider named "function"
 * (environment.conf's environment_data_provider, a module's metadata.json data_provider): one
 * entry "Legacy function '<function_name>'" calling that v4_data_hash function; no file. */
hcfg *config_legacy_function(const char *root, const char *function_name, layer_kind layer);

/* The files a level reads, as templates (not interpolated): its datadir made absolute (against
 * the configuration's folder; Hiera 3's given datadir as it is, relative ones against the working
 * folder; a version 3 level without one: <codedir>/environments/%{::environment}/hieradata), joined
 * with each path or glob (with a version 3 or 4 level's extension), or a mapped_paths level's path
 * template; none for uris and levels without locations. *glob: the level reads globs. A new
 * array of n malloc'ed strings (config_templates_free). What snapshots, hiera check and edits
 * match files against (tmplmatch.h). */
char **config_level_templates(const hcfg *cfg, const hlevel *lvl, const char *codedir, bool *glob, size_t *n);
/* The level's datadir so made absolute (a new string). */
char *config_level_datadir(const hcfg *cfg, const hlevel *lvl, const char *codedir);
void config_templates_free(char **t, size_t n);

/* The fast check of a version 5 config (true only when Puppet's schema certainly accepts it) and
 * the schema itself, for the tests that hold one to the other. */
bool config_v5_quick_valid(const hv *config);
const char *config_v5_type(void);

/* Line of the first line (from start_line) of the config file whose text, with quoted parts and
 * comments handled as Puppet's find_line_matching does, matches the Ruby regexp; 0 when none. */
int config_find_line(const hcfg *c, const char *ruby_regexp, int start_line);
/* HieraConfig#configured_data_providers' rescue: an error "Undefined variable 'x'..." met while
 * the hierarchy is expanded (strict = error) becomes Puppet's HIERA_UNDEFINED_VARIABLE, "Undefined
 * variable 'x' (file: <config>, line: <the first line with %{x}>)"; other errors stay. */
void config_undefined_variable(const hcfg *c, herr *err);

/* Whether n can name a module whose layer is looked for (the names lookups take a module name
 * from: a lower-case letter, then lower-case letters, digits and '_'). */
bool valid_module_name(const char *n);

/* Puppet's default environmentpaths (/etc/puppetlabs/code/environments for Puppet's packages,
 * /etc/puppet/code/environments for Debian's): a datadir under one of them names an environment
 * of the Puppet server the hiera.yaml was written for. When path (absolute) starts with one of
 * them and own (the environmentpath of the tree being read) is another folder, the path under own
 * instead (malloc'ed): hiera check and hiera diff read a checkout's data there. Else NULL. *from
 * (when given) receives the default environmentpath it started with. */
char *envpath_remap(const char *path, const char *own, const char **from);

#endif
