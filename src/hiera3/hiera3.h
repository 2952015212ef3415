/* hiera3.h - the Hiera 3 engine (the `hiera` command of Hiera 3.10 and the Ruby class Hiera):
 * v3 configuration, the yaml and json backends, resolution types, Hiera 3 interpolation, and
 * the text forms the `hiera` command prints (Ruby's pp, JSON.dump).
 *
 * The public face of this engine is include/hiera3.h (hiera3_new, hiera3_lookup...); this header
 * is what the command line, the tests and other backends (eyaml) build on.
 *
 * Ownership follows value.h: returned hv* are new references, hv* arguments are borrowed.
 *
 * Writing a backend (the eyaml backend plugs in here): fill an h3_backend with the lower-case
 * name used in :backends:, create/destroy for the per-Hiera-object instance (Ruby builds one
 * backend object on first use and keeps it), and lookup, which behaves as a Ruby backend's
 * lookup(key, scope, order_override, resolution_type, context): walk h3_datasources(), read
 * files through an h3_filecache, turn found data into answers with h3_parse_answer(), merge
 * with h3_merge_answer(), and return H3_FOUND / H3_NOT_FOUND (Ruby's throw :no_such_key) /
 * H3_ERROR. Then add it to the table in h3_config.c (h3_backend_table).
 */
#ifndef HIERA_HIERA3_H
#define HIERA_HIERA3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/util.h"
#include "base/value.h"

typedef struct hiera3 h3;

/* The Ruby version this engine answers as (Hiera.version). */
#define H3_HIERA_VERSION "3.10.0"

/* ------------------------------------------------------------------ errors */

/* What kind of Ruby exception an error stands for; the public API maps these onto error kinds. */
typedef enum {
    H3E_LOOKUP = 0, /* anything raised while looking up: type mismatch, data file, deep_merge */
    H3E_CONFIG,     /* the configuration: missing or invalid file, unknown backend, bad datadir */
    H3E_INTERP,     /* Hiera::InterpolationInvalidValue, Hiera::InterpolationLoop */
} h3_errclass;

/* Sets err (kind HERR_ERROR) and records the error class and the Ruby exception class name
 * (e.g. "RuntimeError"; used by the command line's "Failed to start Hiera: C: msg"). */
void h3_raise(h3 *h, herr *err, h3_errclass cls, const char *rbclass, const char *fmt, ...) HIERA_PRINTF(5, 6);
h3_errclass h3_last_errclass(const h3 *h);
/* The Ruby exception class of a formats/psych.c error message ("Psych::SyntaxError", "Psych::BadAlias",
 * "Psych::DisallowedClass", "Errno::ENOENT"...). */
const char *h3_psych_class(const char *msg);
const char *h3_last_rbclass(const h3 *h); /* "RuntimeError"... never NULL */
/* Ruby's v.to_s (a symbol without its colon) and v.inspect, malloc'ed, for error messages. */
char *h3_to_s_dup(const hv *v);
char *h3_inspect_dup(const hv *v);

/* ------------------------------------------------------------------ loggers */

typedef enum { H3_LOG_DEBUG, H3_LOG_WARN } h3_log_level;
typedef void (*h3_log_fn)(h3_log_level level, const char *msg, void *userdata);

/* Hiera.logger = name, as Hiera does it: "console" and "noop"; "puppet" is not suitable outside
 * Puppet (console is used, with Hiera's warning); any other name warns "Failed to load <name>
 * logger: ..." and uses the console. */
void h3_set_logger(h3 *h, const char *name);
/* Parsed YAML and JSON data files are kept in (and taken from) this disk cache (formats/
 * diskcache.h; BORROWED: it must outlive h), or not at all (NULL, the default). */
struct diskcache;
void h3_set_disk(h3 *h, struct diskcache *d);
/* A caller-supplied logger (fn NULL: noop). */
void h3_set_log_callback(h3 *h, h3_log_fn fn, void *userdata);
void h3_debug(h3 *h, const char *fmt, ...) HIERA_PRINTF(2, 3);
void h3_warn(h3 *h, const char *fmt, ...) HIERA_PRINTF(2, 3);
/* The console logger's stream (default stderr), for tests. */
void h3_set_console_stream(h3 *h, FILE *f);

/* ------------------------------------------------------------------ creation */

/* Hiera.new(:config => path): Hiera::Config.load(path) then Config.load_backends. path NULL
 * means Hiera's default (/etc/puppet/hiera.yaml). NULL with err on failure; *rbclass (when
 * rbclass is not NULL) then names the Ruby exception class ("RuntimeError"...). */
h3 *h3_new_file(const char *path, const char **rbclass, herr *err);
/* Hiera.new(:config => hash): the hash is what the YAML file would hold. Its keys (top level,
 * backend sections, :deep_merge_options:) may be symbols as in a file, or strings. */
h3 *h3_new_hash(const hv *config, const char **rbclass, herr *err);
void h3_free(h3 *h);
/* The loaded configuration (symbol keys as in Ruby), BORROWED. */
const hv *h3_config(const h3 *h);
/* Config[section][key] (e.g. "yaml", "datadir"), BORROWED, NULL when absent. */
const hv *h3_config_get(const h3 *h, const char *section, const char *key);

/* ------------------------------------------------------------------ lookups */

typedef enum { H3_PRIORITY = 0, H3_ARRAY, H3_HASH } h3_strategy;

/* A resolution type: a strategy, or (has_merge) Ruby's Hash form {:behavior => b, opts...}
 * which is a hash resolution with its own behavior and deep_merge options (the configured
 * :merge_behavior: and :deep_merge_options: are then ignored). */
typedef struct {
    h3_strategy strategy;
    bool has_merge;
    const char *behavior;   /* "native" | "deep" | "deeper"; NULL or anything else is native */
    const hv *merge_options; /* a hash with symbol or string keys: knockout_prefix,
                               preserve_unmergeables, sort_merged_arrays, merge_hash_arrays,
                               unpack_arrays; BORROWED, may be NULL */
} h3_resolution;

typedef enum { H3_FOUND = 0, H3_NOT_FOUND = 1, H3_ERROR = 2 } h3_result;

/* Hiera#lookup(key, default, scope, order_override, resolution_type). scope: a hash (string
 * keys) or NULL; dflt: NULL for nil; order_override: a string, an array of strings, or NULL.
 * H3_FOUND: *out is the answer (possibly undef). H3_NOT_FOUND: nothing was found; *out is the
 * default (interpolated when it is a string), or NULL when dflt is NULL. H3_ERROR: err. */
h3_result h3_lookup(h3 *h, const char *key, const hv *dflt, const hv *scope, const hv *order_override,
                    const h3_resolution *res, hv **out, herr *err);

/* ------------------------------------------------------------------ building blocks for backends */

typedef struct h3_guard h3_guard; /* Hiera::RecursiveGuard */

/* The lookup context Ruby passes along (:recurse_guard, :order_override, :is_interpolate_config). */
typedef struct {
    h3_guard *guard;           /* NULL: each interpolated string gets a fresh guard */
    const hv *order_override;  /* BORROWED */
    bool is_config;
} h3_ctx;

typedef struct h3_backend {
    const char *name; /* as in :backends: after downcase, e.g. "yaml" */
    /* Backend.new on first use: returns the instance state (NULL allowed when the backend keeps
     * none and *err is not set). */
    void *(*create)(h3 *h, herr *err);
    void (*destroy)(void *state);
    /* lookup(key, scope, order_override, resolution_type, context). key is a string, or undef
     * for the empty key (Hiera looks up nil then). H3_FOUND with *out (new reference). */
    h3_result (*lookup)(h3 *h, void *state, const hv *key, const hv *scope, const hv *order_override,
                        const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err);
} h3_backend;

/* Backend.datadir(backend, scope): Config[backend][:datadir] or Hiera's var_dir, interpolated.
 * Returns a malloc'ed string or NULL with err. */
char *h3_datadir(h3 *h, const char *backend, const hv *scope, herr *err);
/* Backend.datasources(scope, override): calls fn for every hierarchy entry (override first),
 * interpolated just before its turn, skipping "" and paths with a leading or trailing "/" or
 * "//". fn returns 0 to go on, 1 to stop (Ruby's break), -1 on error (err set). */
typedef int (*h3_source_fn)(h3 *h, const char *source, void *arg, herr *err);
int h3_datasources(h3 *h, const hv *scope, const hv *override, h3_source_fn fn, void *arg, herr *err);
/* File.join(datadir, "source.ext") */
char *h3_datafile_path(const char *datadir, const char *source, const char *ext);

/* Hiera::Filecache: a file parsed once and re-read when its inode, mtime or size change. A
 * parse result that is not a hash is an error ("Data retrieved from P is Array not Hash") the
 * first time and is then kept and returned as is, as Ruby's Filecache does. */
typedef struct h3_filecache h3_filecache;
typedef hv *(*h3_parse_fn)(const char *text, size_t len, const char *path, herr *err);
h3_filecache *h3_filecache_new(void);
void h3_filecache_free(h3_filecache *c);
/* Returns a new reference (possibly not a hash, possibly undef: see above) or NULL with err. */
hv *h3_filecache_read(h3 *h, h3_filecache *c, const char *path, h3_parse_fn parse, herr *err);

/* Backend.parse_answer(data, scope, {}, context): new reference or NULL with err. */
hv *h3_parse_answer(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, herr *err);
/* Backend.parse_string / Hiera::Interpolate.interpolate. */
hv *h3_interpolate(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, herr *err);
/* Backend.merge_answer(left, right, resolution_type): STEALS left and right (both private,
 * mutable); returns the result or NULL with err. */
hv *h3_merge_answer(h3 *h, hv *left, hv *right, const h3_resolution *res, herr *err);
/* Backend.lookup (the outer loop over backends), with an explicit context. */
h3_result h3_backend_lookup(h3 *h, const char *key, const hv *dflt, const hv *scope, const hv *order_override,
                            const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err);

/* ------------------------------------------------------------------ Hiera::Util */

/* Hiera::Util.split_key: segments of a dotted key with '…' / "…" quoting. Returns an array of
 * strings, an EMPTY array for the empty key (Ruby returns '' there), or NULL on a syntax error. */
hv *h3_split_key(const char *key, size_t len);

/* ------------------------------------------------------------------ output of the command */

/* Ruby 3.1's `pp obj` with the given line width (PP.width_for: columns - 1), including the
 * final newline. */
void h3_pp(sbuf *out, const hv *v, long width);
/* PP.width_for($stdout) for a file descriptor: the terminal's columns, else $COLUMNS, else 80,
 * minus one. */
long h3_pp_width(int fd);
/* JSON.dump(obj) (compact; NaN and Infinity allowed; no nesting limit). -1 with err on a string
 * that is not UTF-8. */
int h3_json_dump(sbuf *out, const hv *v, herr *err);

#endif
