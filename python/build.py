#!/usr/bin/env python3
"""Builds the Python module `hiera` over libhiera with cffi (Debian's python3-cffi), in API mode:
the extension `hiera._hiera` is C compiled against include/hiera.h and include/hiera_fleet.h, so
every struct's layout and every constant is the header's (the declarations below name only what
the module uses; `...` lets the compiler fill in the rest). cffi releases the GIL during every
call into the library.

usage: build.py --out DIR --include DIR --libdir DIR [--rpath DIR] [--cc CC]
  writes DIR/hiera/ (the package: __init__.py and the compiled _hiera) linked with -lhiera from
  --libdir; --rpath is recorded in the extension (the build tree: $ORIGIN/../.., so that
  PYTHONPATH=build/python finds build/libhiera.so.1; an install outside the loader's folders: its
  LIBDIR).
"""
import argparse, os, shutil, sys, sysconfig, tempfile

import cffi

HERE = os.path.dirname(os.path.abspath(__file__))

CDEF = r"""
typedef enum { HIERA_ERR_NONE = 0, HIERA_ERR_LOOKUP = 1, HIERA_ERR_FATAL = 2, HIERA_ERR_CONFIG = 3,
               HIERA_ERR_INTERPOLATION = 4 } hiera_error_kind;
typedef struct { hiera_error_kind kind; char *message; char *file; int line; int column; } hiera_error;
void hiera_error_clear(hiera_error *err);
typedef enum { HIERA_OK = 0, HIERA_NOT_FOUND = 1, HIERA_ERROR = 2 } hiera_status;

typedef struct hv hiera_value;
typedef enum { HIERA_UNDEF = 0, HIERA_BOOLEAN, HIERA_INTEGER, HIERA_BIGINT, HIERA_FLOAT, HIERA_STRING,
               HIERA_ARRAY, HIERA_HASH, HIERA_SENSITIVE, HIERA_SYMBOL } hiera_kind;
hiera_value *hiera_value_incref(hiera_value *v);
void hiera_value_decref(hiera_value *v);
hiera_kind hiera_value_kind(const hiera_value *v);
bool hiera_value_bool(const hiera_value *v);
int64_t hiera_value_int(const hiera_value *v);
const char *hiera_value_bigint(const hiera_value *v);
double hiera_value_float(const hiera_value *v);
const char *hiera_value_string(const hiera_value *v);
size_t hiera_value_string_length(const hiera_value *v);
size_t hiera_value_array_size(const hiera_value *v);
hiera_value *hiera_value_array_get(const hiera_value *v, size_t i);
size_t hiera_value_hash_size(const hiera_value *v);
hiera_value *hiera_value_hash_key(const hiera_value *v, size_t i);
hiera_value *hiera_value_hash_value(const hiera_value *v, size_t i);
hiera_value *hiera_value_sensitive_unwrap(const hiera_value *v);
hiera_value *hiera_value_from_json(const char *text, hiera_error *err);
hiera_value *hiera_value_load_file(const char *path, hiera_error *err);
typedef enum { HIERA_RENDER_JSON, HIERA_RENDER_YAML, HIERA_RENDER_S, HIERA_RENDER_YAML_SHARED } hiera_render_format;
char *hiera_render(const hiera_value *v, hiera_render_format format, hiera_error *err);
void free(void *p);

typedef enum { HIERA_DIAG_WARNING = 1, HIERA_DIAG_ERROR = 2, HIERA_DIAG_CRITICAL = 3 } hiera_severity;
typedef struct { hiera_severity severity; const char *code; const char *file; int line, column;
                 const char *message; } hiera_diagnostic;
typedef void (*hiera_diagnostic_fn)(const hiera_diagnostic *d, void *userdata);

typedef struct hiera_ctx hiera;
typedef struct hiera_snapshot hiera_snapshot;
typedef struct hiera_cache hiera_cache;
hiera_cache *hiera_cache_new(void);
void hiera_cache_free(hiera_cache *c);
bool hiera_cache_use_disk(hiera_cache *c, const char *dir);

typedef enum { HIERA_PUPPET_AUTO = 0, HIERA_PUPPET_7 = 7, HIERA_PUPPET_8 = 8 } hiera_puppet_version;
hiera_puppet_version hiera_puppet_version_find(char **why);
hiera_puppet_version hiera_thread_puppet_version(hiera_puppet_version v);

typedef struct hiera_settings hiera_settings;
typedef enum { HIERA_LAYOUT_AUTO = 0, HIERA_LAYOUT_DEBIAN, HIERA_LAYOUT_PUPPETLABS } hiera_layout;
typedef struct { const char *name; const char *value; } hiera_setting;
typedef struct { size_t size; const hiera_setting *cli; size_t ncli; hiera_layout layout; bool no_puppet_conf;
                 hiera_diagnostic_fn diagnostics; void *diagnostics_data; hiera_puppet_version puppet_version;
                 ...; } hiera_settings_options;
hiera_settings *hiera_settings_load(const hiera_settings_options *o, hiera_error *err);
void hiera_settings_free(hiera_settings *s);
hiera_puppet_version hiera_settings_puppet_version(const hiera_settings *s);
typedef struct hiera_environment hiera_environment;
hiera_environment *hiera_environment_load(const hiera_settings *s, const char *name, hiera_error *err);
void hiera_environment_free(hiera_environment *e);
const char *hiera_environment_name(const hiera_environment *e);

typedef struct { size_t size; const char *codedir; const char *confdir; const char *environmentpath;
                 const char *hiera_config; const char *environment; const char *node; const hiera_value *facts;
                 hiera_cache *cache; bool unsafe_fact_paths; hiera_diagnostic_fn diagnostics;
                 void *diagnostics_data; bool redact_encrypted; const hiera_value *trusted;
                 const hiera_value *base_facts; const hiera_settings *settings; const hiera_environment *env;
                 ...; } hiera_options;
hiera *hiera_new(const hiera_options *options, hiera_error *err);
void hiera_free(hiera *h);

enum { HIERA_EXPLAIN_DATA = 1, HIERA_EXPLAIN_OPTIONS = 2, HIERA_EXPLAIN_PROVENANCE = 4 };
typedef struct { size_t size; const char *const *keys; size_t nkeys; const hiera_value *merge;
                 const hiera_value *default_value; const char *type; int explain; ...; } hiera_request;
hiera_status hiera_lookup(hiera *h, const hiera_request *request, hiera_value **value, hiera_error *err);
typedef struct hiera_result hiera_result;
hiera_status hiera_lookup_result(hiera *h, const hiera_request *request, hiera_result **result, hiera_error *err);
void hiera_result_free(hiera_result *r);
hiera_value *hiera_result_value(const hiera_result *r);
char *hiera_result_explanation_text(const hiera_result *r);
hiera_value *hiera_result_explanation_tree(const hiera_result *r);
char *hiera_result_provenance_text(const hiera_result *r);
hiera_value *hiera_result_provenance_tree(const hiera_result *r);
hiera_value *hiera_hierarchy(hiera *h);
hiera_value *hiera_keys(hiera *h);
hiera_value *hiera_key_names(hiera *h);
char *hiera_key_lookup_form(const char *data_key);
const char *hiera_version(void);

/* hiera_fleet.h */
typedef struct { char *node; hiera_value *base; hiera_value *given; char *path; } hiera_node_facts;
void hiera_node_facts_clear(hiera_node_facts *f);
typedef struct { size_t size; const char *urls; const char *conf_file; const char *cert, *key, *cacert;
                 int timeout; const hiera_settings *settings; const char *nodes_query; bool include_inactive;
                 size_t page_size; hiera_diagnostic_fn diagnostics; void *diagnostics_data; ...; } hiera_puppetdb_options;
typedef struct hiera_facts_source hiera_facts_source;
hiera_facts_source *hiera_facts_source_dir(const char *dir, hiera_error *err);
hiera_facts_source *hiera_facts_source_puppetdb(const hiera_puppetdb_options *o, hiera_error *err);
void hiera_facts_source_free(hiera_facts_source *s);
const char *hiera_facts_source_describe(const hiera_facts_source *s);
hiera_value *hiera_facts_source_nodes(hiera_facts_source *s, hiera_error *err);
hiera_status hiera_facts_source_get(hiera_facts_source *s, const char *node, hiera_cache *c,
                                    hiera_node_facts *out, hiera_error *err);
typedef struct { size_t size; const hiera_settings *settings; const hiera_environment *env; const char *node;
                 const char *facts_file; const hiera_puppetdb_options *puppetdb; hiera_cache *cache;
                 hiera_diagnostic_fn diagnostics; void *diagnostics_data; ...; } hiera_node_facts_options;
hiera_status hiera_node_facts_find(const hiera_node_facts_options *o, hiera_node_facts *out, hiera_error *err);

typedef struct { const char *key; const char *key_json; size_t key_json_length; hiera_status status;
                 hiera_value *value; const char *text; size_t text_length; const char *error; } hiera_fleet_answer;
typedef struct { const char *name; size_t index; const char *error; const hiera_value *listing_errors;
                 const hiera_fleet_answer *answers; size_t nanswers; } hiera_fleet_node;
typedef int (*hiera_fleet_fn)(const hiera_fleet_node *node, void *userdata);
typedef struct { const char *name; const char *facts_file; const hiera_value *facts; const hiera_value *base_facts;
                 const hiera_value *trusted; const char *trusted_file; } hiera_fleet_input;
typedef struct { size_t size; const hiera_options *context; const hiera_request *request;
                 const char *const *keys; size_t nkeys; hiera_facts_source *source; const char *const *names;
                 size_t nnames; const hiera_fleet_input *nodes; size_t nnodes; const char *trusted_dir;
                 unsigned threads; hiera_cache *cache; hiera_snapshot *snapshot; bool render_json; bool ordered;
                 hiera_fleet_fn callback; void *userdata; ...; } hiera_fleet_options;
typedef struct { size_t nodes; size_t failed_nodes; size_t lookups; size_t failed_lookups; unsigned threads; } hiera_fleet_stats;
hiera_status hiera_fleet_run(const hiera_fleet_options *o, hiera_fleet_stats *stats, hiera_error *err);

/* Hiera 3 */
typedef struct hiera3 hiera3;
hiera3 *hiera3_new(const char *config_path, hiera_error *err);
void hiera3_free(hiera3 *h);
void hiera3_set_logger(hiera3 *h, const char *name);
typedef enum { HIERA3_PRIORITY = 0, HIERA3_ARRAY, HIERA3_HASH, HIERA3_MERGE } hiera3_resolution_kind;
typedef struct { size_t size; hiera3_resolution_kind kind; const char *behavior; const char *knockout_prefix;
                 bool sort_merged_arrays; bool merge_hash_arrays; const char *unpack_arrays;
                 int preserve_unmergeables; ...; } hiera3_resolution;
hiera_status hiera3_lookup(hiera3 *h, const char *key, const hiera_value *default_value, const hiera_value *scope,
                           const char *order_override, const hiera3_resolution *resolution, hiera_value **value,
                           hiera_error *err);
typedef enum { HIERA3_FORMAT_RUBY = 0, HIERA3_FORMAT_JSON = 1, HIERA3_FORMAT_YAML = 2 } hiera3_format;
char *hiera3_render(const hiera_value *v, hiera3_format format, long width, hiera_error *err);

/* callbacks into Python (the GIL is taken for them) */
extern "Python" void _py_diagnostic(const hiera_diagnostic *d, void *userdata);
extern "Python" int _py_fleet_node(const hiera_fleet_node *node, void *userdata);
"""


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--libdir", required=True)
    ap.add_argument("--rpath")
    a = ap.parse_args(argv)
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    ffi.set_source("hiera._hiera", '#include "hiera.h"\n#include "hiera_fleet.h"\n#include <stdlib.h>\n',
                   include_dirs=[os.path.abspath(a.include)], library_dirs=[os.path.abspath(a.libdir)],
                   libraries=["hiera"], extra_link_args=[f"-Wl,-rpath,{a.rpath}"] if a.rpath else [],
                   extra_compile_args=["-Wno-unused-parameter"])
    pkg = os.path.join(a.out, "hiera")
    os.makedirs(pkg, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hiera-cffi-", dir=a.out) as tmp:
        so = ffi.compile(tmpdir=tmp, verbose=False)
        for old in os.listdir(pkg):
            if old.startswith("_hiera.") and old.endswith(".so"):
                os.unlink(os.path.join(pkg, old))
        shutil.move(so, os.path.join(pkg, os.path.basename(so)))
    for f in os.listdir(os.path.join(HERE, "hiera")):
        if f.endswith(".py"):
            shutil.copyfile(os.path.join(HERE, "hiera", f), os.path.join(pkg, f))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
