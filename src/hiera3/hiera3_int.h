/* hiera3_int.h - what the files of the Hiera 3 engine share: the Hiera object, limits, and the
 * functions each file offers the others. Internal to src/hiera3; the command line and backends
 * use hiera3/hiera3.h, library users include/hiera.h.
 *
 *   h3_api.c         the Hiera 3 section of the public API (include/hiera.h)
 *   h3_output.c      the text forms the command prints (Ruby 3.1's pp, JSON.dump)
 *   h3_lookup.c      Hiera.new and Backend.lookup (h3_lookup)
 *   h3_config.c      Hiera::Config.load, the backend table, making and freeing the object
 *   eyaml_backend.c  hiera-eyaml's backend
 *   h3_backends.c    datadir and datasources, Hiera::Filecache, the yaml and json backends
 *   h3_interp.c      Hiera::Util.split_key, the recursion guard, qualified lookups,
 *                    Hiera::Interpolate and parse_answer
 *   hiera3.c         the overview; errors, Ruby helpers, loggers, merges, the configuration's
 *                    sections
 *
 * Each file calls only those listed below it; the interpolation's nested lookups (hiera(),
 * alias()) reach Backend.lookup through the object's nested_lookup. */
#ifndef HIERA_HIERA3_INT_H
#define HIERA_HIERA3_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "hiera.h" /* the public API, Hiera 3 section */
#include "base/util.h"
#include "base/value.h"
#include "hiera3/hiera3.h"

/* Nested lookups (hiera()/alias() inside data) and nested interpolations are refused with Ruby's
 * SystemStackError message where Ruby 3.1 (1 MiB VM stack) gives up: it follows a chain of 408
 * hiera() lookups but not 409, and a chain of 2779 scope variables (a: "%{b}", b: "%{c}"...)
 * but not 2780. A nested lookup costs H3_LOOKUP_COST units, a nested interpolation
 * H3_INTERP_COST, out of H3_STACK_BUDGET. */
#define H3_STACK_BUDGET 27790
#define H3_INTERP_COST 10
#define H3_LOOKUP_COST 68
/* Nesting bound for walking values (flatten, pp, JSON.dump); YAML loads at most 1000 deep. */
#define H3_MAX_VALUE_DEPTH 10000
/* Nested hiera()/alias() lookups one lookup may make (interpolated strings are bounded as in
 * the Puppet engine: MAX_INTERPOLATED_SIZE). Depth alone does not bound the work: values like
 * "%{hiera('k2')}%{hiera('k2')}" over 30 keys need 2^30 lookups (the Ruby gem runs for hours).
 * Hiera 3 stats its data files on every lookup, so a nested one costs microseconds: 100,000
 * keeps a refusal well under a second. */
#define H3_MAX_NESTED_LOOKUPS 100000


/* ---- the object (made by h3_config.c) ---- */

typedef struct {
    const h3_backend *ops;
    hv *name; /* as configured: the key of Ruby's @backends */
    void *state;
    bool created;
} h3_inst;

typedef enum { LOG_CONSOLE, LOG_NOOP, LOG_CALLBACK } log_kind;

/* Backend.lookup's signature (h3_backend_lookup) */
typedef h3_result (*h3_lookup_fn)(h3 *h, const char *key, const hv *dflt, const hv *scope, const hv *order_override,
                                  const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err);

struct hiera3 {
    hv *config;  /* Hiera::Config's hash (symbol keys) */
    hv *backends; /* Config[:backends], flattened */
    h3_inst *insts;
    size_t ninsts;
    log_kind logk;
    h3_log_fn log_fn;
    void *log_ud;
    hiera3_log_fn pub_fn; /* a callback given through the public API */
    void *pub_ud;
    FILE *console;
    h3_ctx *cfg_ctx; /* Backend's @config_lookup_context while a config entry is interpolated */
    int depth;
    size_t nested; /* nested lookups since the top-level lookup began */
    h3_errclass errclass;
    const char *rbclass;
    /* Backend.lookup, which interpolation's hiera() and alias() call (h3_interp.c): h3_lookup.c's
     * h3_backend_lookup, given when the object is made, so that the interpolation does not call
     * up into the file that calls it */
    h3_lookup_fn nested_lookup;
    struct diskcache *disk; /* parsed YAML and JSON data files kept between runs (BORROWED), or NULL */
    /* Hiera 3.12 on Ruby 3.3 (Debian 13, beside Puppet 8.10) rather than Hiera 3.10 on Ruby 3.1:
     * the calling thread's Ruby when the object was made (base/rubyver.h), in force during its
     * lookups */
    bool ruby33;
};

/* ---- errors and Ruby helpers (hiera3.c) ---- */

/* An error that came from another module (YAML, JSON, deep_merge): record its class. */
void h3_note_error(h3 *h, h3_errclass cls, const char *rbclass);
/* Ruby's to_s as string interpolation ("#{v}") uses it: strings and symbols verbatim, nil as "",
 * everything else as inspect. */
void h3_rb_to_s(sbuf *out, const hv *v);
/* hash[:name] (borrowed) */
hv *h3_sym_get(const hv *hash, const char *name);

static inline bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* String#strip's characters: whitespace and NUL */
static inline bool is_strip(unsigned char c) { return c == 0 || c == ' ' || (c >= '\t' && c <= '\r'); }
/* ---- interpolation (h3_interp.c) ---- */

h3_result h3_qualified_lookup(h3 *h, const hv *segs, size_t from, const hv *value, const char *full_key,
                              hv **out, herr *err);
hv *h3_interpolate_ctx(h3 *h, const hv *data, const hv *scope, const h3_ctx *ctx, herr *err);
hv *h3_interpolate_config(h3 *h, const hv *entry, const hv *scope, const hv *override, herr *err);

/* ---- backends (h3_backends.c, eyaml_backend.c) ---- */

void h3_flatten_entries(hv *out, const hv *v, int depth);
char *h3_read_whole(h3 *h, const char *path, size_t *len, herr *err);
extern const h3_backend h3_yaml_backend;
extern const h3_backend h3_json_backend;
extern const h3_backend h3_eyaml_backend;

/* ---- configuration (h3_config.c) ---- */

h3_inst *h3_canonical_inst(h3 *h, size_t i);
/* h3_new_file and h3_new_hash (hiera3.h) with the object's nested lookup */
h3 *h3_config_new_file(const char *path, h3_lookup_fn nested_lookup, const char **rbclass, herr *err);
h3 *h3_config_new_hash(const hv *config, h3_lookup_fn nested_lookup, const char **rbclass, herr *err);

#endif
