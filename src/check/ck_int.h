/* ck_int.h - what the files of hiera check share: the environment being checked, its
 * configurations, levels, data files and keys, the manifests read, and the findings. */
#ifndef HIERA_CHECK_CK_INT_H
#define HIERA_CHECK_CK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "base/util.h"
#include "base/value.h"
#include "check/check.h"
#include "check/yscan.h"
#include "engine/cache.h"
#include "engine/config.h"
#include "engine/overlay.h"
#include "engine/snapshot.h"
#include "puppet/manifest.h"
#include "puppet/program.h"
#include "types/ptype.h"

/* ------------------------------------------------------------------ the model */

/* A hierarchy level of a configuration, as check reads it */
typedef struct {
    const hlevel *lvl;  /* in the configuration (cfg) */
    const char *name;
    const char *function;
    fn_kind fkind;
    file_format fmt;
    bool known;         /* a provider function we know (yaml_data, json_data, hocon_data, eyaml_lookup_key) */
    bool eyaml;
    bool dflt;          /* from default_hierarchy */
    bool plan;          /* from plan_hierarchy (Bolt plans): its files are read, never by a node */
    int index;          /* its position (hierarchy, then default_hierarchy) */
    char **tmpls;       /* absolute location templates (datadir joined with each path/glob) */
    size_t ntmpls;
    char **env_tmpls;   /* by_env: the same with the environment's name left a variable (another
                         * environment's file), parallel to tmpls (NULL otherwise) */
    bool glob;
    char *datadir;      /* absolute, the environment's name put in, not interpolated otherwise */
    bool outside;       /* its data folder is outside what is checked (an absolute path elsewhere) */
    bool by_env;        /* its locations name the environment (%{environment}): a file per environment */
} ck_level;

typedef struct {
    char *path;         /* the hiera.yaml as the engine names it, or NULL (built-in default) */
    layer_kind layer;
    char *module;       /* module layers */
    hcfg *cfg;          /* NULL when it could not be loaded */
    ck_level *levels;
    size_t nlevels;
    ysdoc *ys;          /* the file's marks (NULL without a file) */
    char *text;
    size_t len;
    hlevel *plan_levels; /* plan_hierarchy's entries (the lookups' configuration has none) */
    size_t nplan_levels;
} ck_config;

typedef struct {
    uint32_t cfg;   /* index in ck_env.configs */
    uint32_t level; /* index in that configuration's levels */
} ck_reach;

typedef struct {
    char *path;       /* as the engine names it */
    file_format fmt;
    ck_reach *reach;  /* the levels that can read it */
    size_t nreach, capreach;
    const hv *value;  /* as loaded (raw: the top may not be a hash), NULL when it does not load */
    hv *own_value;    /* a value we loaded ourselves (not from the snapshot), released at the end */
    herr err;
    char *text;
    size_t len;
    ysdoc *ys;
    bool orphan;      /* no level can read it */
    int cfg_owner;    /* orphans: the configuration whose datadir holds it */
    layer_kind layer; /* of its first level (orphans: of the owner) */
    const char *module;
    bool external;    /* in a module the Puppetfile manages: findings are not reported */
} ck_file;

/* One definition of a top-level key */
typedef struct {
    uint32_t file;
    uint32_t line, col;
    const hv *value; /* BORROWED from the file's value */
} ck_def;

typedef struct {
    char *name;
    ck_def *defs;
    size_t ndefs, cap;
    bool referenced;  /* looked up by name by data (lookup()/alias()) or manifests */
    int merge;        /* lookup_options or a manifest lookup asks for a merge: 0 no, 1 unique, 2 hash/deep */
} ck_key;

/* A reference to a key from interpolation: %{lookup('k')} */
typedef struct {
    char *key;     /* the root key (before any dotted part) */
    char *from;    /* the key whose value holds it, or NULL (hiera.yaml) */
    uint32_t file, line, col;
    bool alias;
} ck_ref;

/* A variable read by interpolation: %{facts.os.family} */
typedef struct {
    char *expr;   /* as written (without the leading ::) */
    hv *segs;     /* split_key's segments */
    uint32_t file; /* a data file, or UINT32_MAX with cfg set: a hiera.yaml */
    int cfg;
    uint32_t line, col;
    bool unshielded; /* in a hiera.yaml's datadir or options: interpolated without the shield Puppet gives
                      * the locations (path, paths, glob(s), uri(s), mapped_paths), so that under strict =
                      * error an undefined variable there fails every lookup through the hiera.yaml */
} ck_var;

typedef struct ck_finding_int {
    const char *rule;
    int sev; /* the finding's own severity (the rule's default unless it says otherwise) */
    char *file;
    uint32_t line, col;
    char *message;
    char **nodes;
    size_t nnodes;
} ck_finding_int;

typedef struct {
    char *name;          /* the environment's name for the engine */
    char *dir;           /* its folder as the engine sees it */
    char *real_dir;      /* where its files are, for reports (dir itself unless a temporary link) */
    char *codedir, *confdir, *envpath, *hiera_config; /* for the engine */
    char **modroots;     /* module folders, in modulepath order */
    size_t nmodroots;
    char **engine_roots; /* the folders the lookups take modules from (module_roots), NULL-terminated */
    /* what the lookups answer as (module_roots_of): Puppet 8 or 7, and Puppet's strict setting
     * as they read it (puppet.conf under confdir, else the version's default: 0 off, 1 warning,
     * 2 error), which decides whether what Puppet 8's defaults refuse fails (puppet8.c) */
    bool puppet8;
    int strict;
    char *manifest;      /* the environment's main manifest (file or folder), or NULL */
    char **external;     /* module names the Puppetfile manages */
    size_t nexternal;
    bool has_puppetfile;
    char *only_module;   /* module mode: findings only under this folder (as the engine sees it) */
    char *only_module_name;

    snapshot *snap;
    hiera_cache *cache;  /* private: configurations and files the snapshot does not hold */
    ck_config *configs;
    size_t nconfigs;
    ck_file *files;
    size_t nfiles, capfiles;
    hv *file_index;      /* path -> file number */
    ck_key *keys;
    size_t nkeys, capkeys;
    hv *key_index;       /* name -> key number */
    ck_ref *refs;
    size_t nrefs, caprefs;
    ck_var *vars;
    size_t nvars, capvars;
    /* lookup_options entries seen: [file, key node's line, col, the key text, is pattern] */
    hv *lo_entries;
    struct rregex **lo_regexps; /* lo_entries' patterns compiled (NULL: literal, or invalid), made on first use */
    size_t nlo_regexps;
    pp_index *pp;
    pp_program *prog;    /* the main manifest's top scope and node definitions */
    hv *functions;       /* function name -> pp_fn_kind (int): the modules' Ruby and Puppet functions */
    hv *dyn_lookups;     /* module -> "file:line" of a lookup($var) whose keys cannot be known */
    const pp_index *resolved_pp; /* the pp whose lookup($var)s were resolved, its lookups read before */
    size_t nlookups_read;
    ptype_aliases *aliases;
    hv *modules_present; /* module name -> true */
    /* a level whose data we cannot read (a function of its own: vault, a database...): keys may
     * come from there, so a key no file defines is not reported as missing */
    char *opaque_level;
    bool eyaml_key_missing; /* an eyaml level's private key is not here (CI): decryption cannot be judged */
    /* the caller's texts (check_options.texts, named as the engine names the files) over the
     * snapshot, for the nodes' lookups; NULL without texts */
    overlay *node_texts;
    /* the nodes' facts files read, kept between runs (a session's), or NULL: read each run */
    hv *facts_memo;
    hv_nodes facts_nodes;
    /* the nodes' lookups' results kept between runs (a session's: nodes.c), or NULL */
    struct ck_node_memo *node_memo;
} ck_env;

typedef struct {
    const check_options *o;
    check_report *report;
    ck_finding_int *f;
    size_t nf, capf;
    ck_env *env; /* the environment being checked */
    char *tmpdir;
} ck_ctx;

/* ------------------------------------------------------------------ a run (check.c), kept by a session (session.c) */

typedef struct {
    ck_env *v;
    size_t n;
} env_list;

typedef struct ck_conf ck_conf; /* the repository's .hiera-check.yaml (check.c) */

typedef struct {
    ck_ctx c;
    env_list envs;
    ck_conf *conf;
    hv *overrides;    /* rule -> severity */
    hv *inline_cache; /* file -> its inline disable comments */
} ck_run;

/* The environments to check and the configuration (o and report are BORROWED by r); 0, or -1
 * with *error (r is then closed). */
int ck_run_open(ck_run *r, const check_options *o, check_report *report, char **error);
void ck_run_close(ck_run *r);
/* c->env read (snapshot, manifests, configurations, files), then checked (ck_env_rules; ck_nodes
 * after it); ck_env_rules_reset clears what the rules built, for another run over the same model. */
void ck_env_model(ck_ctx *c);
void ck_env_rules(ck_ctx *c);
void ck_env_rules_reset(ck_env *e);
/* c->env's findings from first on, filtered (overrides, configuration, inline comments) into
 * the report (taken from c); then sorted. */
void ck_run_report(ck_run *r, size_t first);
void ck_report_sort(check_report *report);
/* The engine's diagnostics reported as findings of c, on this thread until diag_leave. */
void ck_diag_enter(ck_ctx *c, diag_sink *saved);
/* A file's path as the engine names it in e, from the path as reported (malloc'ed). */
char *ck_engine_path(const ck_env *e, const char *reported);
/* The caller's texts named as c->env's engine names them, over base (NULL: the disk). */
overlay *ck_texts_overlay(ck_ctx *c, snapshot *base);

/* ------------------------------------------------------------------ findings (findings.c) */

/* Records a finding (file NULL: none; sev 0: the rule's default). */
void ck_add(ck_ctx *c, const char *rule, int sev, const char *file, uint32_t line, uint32_t col, const char *fmt, ...)
    HIERA_PRINTF(7, 8);
/* The same with the nodes it concerns (copied). */
void ck_add_nodes(ck_ctx *c, const char *rule, int sev, const char *file, uint32_t line, uint32_t col,
                  char **nodes, size_t nnodes, const char *message);
/* A note for the reader (malloc'ed text, taken; repeated notes are kept once). */
void ck_note(ck_ctx *c, char *text);
/* msg (malloc'ed, taken) with the environment's link replaced by its real folder */
char *ck_report_text(const ck_env *e, char *msg);

/* ------------------------------------------------------------------ the environment (env.c) */

ck_key *ck_key_get(ck_env *e, const char *name);
ck_key *ck_key_add(ck_env *e, const char *name);
bool ck_module_present(const ck_env *e, const char *name);
bool ck_is_external_module(const ck_env *e, const char *name);
/* whether the lookups find the module (it is in a folder of their modulepath) */
bool ck_module_visible(const ck_env *e, const char *module);
/* Levenshtein distance, capped (returns cap + 1 beyond it). */
size_t ck_distance(const char *a, const char *b, size_t cap);
/* "Class[Ntp::Config]" for "ntp::config" (malloc'ed) */
char *ck_class_ref(const char *name);
/* the class parameter a key names, when the class and the parameter exist (*cls: its class) */
const pp_param *ck_class_param(ck_env *e, const char *key, const pp_class **cls);
/* the merge (0 first, 1 unique, 2 hash/deep) and convert_to that lookup_options give a key */
void ck_key_options(ck_env *e, const char *key, int *merge, const hv **convert_to);
/* the YAML trap a plain scalar falls in (its rule; the hint in msg), or NULL */
const char *ck_plain_trap(const char *text, size_t len, char *msg, size_t msgsize);
/* " (unquoted '0755' is read as ...)" when the definition's value is a YAML trap */
void ck_trap_hint(const ck_env *e, const ck_def *d, const char *key, sbuf *out);

/* ------------------------------------------------------------------ the rules (check.c runs them) */

/* data.c: one data file (traps, duplicates, interpolation, eyaml, lookup_options, keys) */
void ck_data_file(ck_ctx *c, uint32_t fi);
/* data.c: what needs every file (unknown keys referenced, loops, unused lookup_options, variables) */
void ck_data_cross(ck_ctx *c);
/* data.c: interpolations in a hiera.yaml */
void ck_config_interpolations(ck_ctx *c, int ci);
/* classes.c: manifests, aliases, class parameters per data file */
void ck_classes(ck_ctx *c);
/* classes.c: the keys lookup($var) may read (the variable's values in the code and the data),
 * added to the manifests' lookups as literal keys; those that cannot be known noted */
void ck_resolve_lookups(ck_ctx *c);
/* what Puppet 8's defaults refuse (puppet8.c) */
void ck_puppet8(ck_ctx *c);
/* Whether the environment's lookups fail on a data file that is not a hash and on a version 3
 * hiera.yaml in an environment or module (strict = error: Puppet 8's default, or puppet.conf's
 * setting in either version) instead of warning and ignoring it: the puppet8-* rules then say so,
 * and not-a-hash and config-invalid, which would say "ignored", leave those files to them. */
bool ck_strict_error(const ck_env *e);
/* nodes.c: --facts-dir */
int ck_nodes(ck_ctx *c, char **error);
struct ck_node_memo *ck_node_memo_new(void);
void ck_node_memo_clear(struct ck_node_memo *m);
void ck_node_memo_free(struct ck_node_memo *m);

/* The interpolation scanner (data.c), shared with nodes.c: calls fn for each %{...} of s */
typedef enum { IX_EMPTY, IX_SCOPE, IX_LOOKUP, IX_ALIAS, IX_LITERAL, IX_UNKNOWN_METHOD, IX_BAD_CALL, IX_UNCLOSED } ix_kind;
typedef struct {
    ix_kind kind;
    const char *expr; /* the expression (stripped) */
    size_t len;
    size_t start, end; /* byte offsets of %{ and past } in s */
    char *arg;        /* method argument / variable / method name (malloc'ed, freed after the call) */
} ix_item;
typedef void (*ix_fn)(const ix_item *it, void *data);
void ck_scan_interpolations(const char *s, size_t len, ix_fn fn, void *data);

#endif
