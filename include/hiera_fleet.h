/* hiera_fleet.h - libhiera over many nodes: where the nodes and their facts come from (a folder
 * of facts files, Puppet's YAML facts cache, Facter, PuppetDB with TLS, failover and paging), every
 * key for every node on a pool of threads with the answers streamed to a callback (a fleet run:
 * what `hiera batch` prints), and the answers that change between two versions of a tree (a diff
 * run: what `hiera diff` reports).
 *
 * The conventions are hiera.h's, which this header includes: a pointer a function returns is the
 * caller's, released with the function its comment names; pointer arguments are BORROWED unless
 * a comment says otherwise; option structs start with `size` (set it with the *_INIT macros; a
 * zeroed struct keeps working when fields are added); errors go into a hiera_error with the file,
 * line and column when there is one; the library never prints, never exits and (Facter aside, which
 * hiera_node_facts_find runs as `puppet lookup` does) starts no process.
 *
 * Threads: a facts source, a facts reader and a PuppetDB handle belong to one thread at a time; a
 * facts pager may be used by any number of threads at once; a fleet or diff run uses its own
 * threads and calls the caller's callbacks one at a time (never two at once), each from the thread
 * that owns the values it hands over. */
#ifndef HIERA_FLEET_H
#define HIERA_FLEET_H

#include "hiera.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ a node's facts */

/* A node's facts as a lookup takes them: what the node starts from (Puppet's facts terminus:
 * the YAML facts cache, PuppetDB, Facter) for hiera_options.base_facts, and facts given for it
 * (a --facts file, a plain facts file of a folder) for hiera_options.facts. Every member is owned
 * by the record: release them with hiera_node_facts_clear. */
typedef struct {
    char *node;          /* the node's name (for Facter: the certname) */
    hiera_value *base;   /* the node's stored facts, or NULL */
    hiera_value *given;  /* facts given for it (the hostname/domain/fqdn/clientcert rule applies), or NULL */
    char *path;          /* the file read, when one was, or NULL */
} hiera_node_facts;

/* Releases what f holds and zeroes it. Safe on a zeroed record. */
HIERA_API void hiera_node_facts_clear(hiera_node_facts *f);

/* ------------------------------------------------------------------ PuppetDB
 *
 * A client of PuppetDB's query API (v4), configured and failing over as Puppet's puppetdb
 * terminus (puppet-terminus-puppetdb 7) does: the servers of a puppetdb.conf ([main]
 * server_urls, server_url_timeout, verify_client_certificate...) or URLs given directly; every
 * request tried on each server in turn (a server that cannot be reached, fails TLS, times out or
 * answers 5xx is reported with a diagnostic and the next one is asked); TLS verified against the
 * CA file, the client certificate and key sent, the CRL checked when Puppet's
 * certificate_revocation asks for it. libcurl is opened on the first request (dlopen: a program
 * that never asks PuppetDB does not load it); when it cannot be, the request fails with the
 * reason. */

typedef struct {
    size_t size;             /* sizeof(hiera_puppetdb_options) (HIERA_PUPPETDB_OPTIONS_INIT), or 0 */
    const char *urls;        /* comma-separated server URLs (http:// or https://), or NULL: conf_file's */
    const char *conf_file;   /* a puppetdb.conf; NULL: <confdir>/puppetdb.conf of the settings (a
                                missing file means Puppet's default, https://puppetdb:8081) */
    /* TLS: NULL takes Puppet's settings (hostcert, hostprivkey, localcacert; with urls, only those
     * that exist, and the system's CAs without localcacert). cert and key go together. */
    const char *cert, *key, *cacert;
    int timeout;             /* seconds per request and server; 0: server_url_timeout (30) */
    const hiera_settings *settings; /* Puppet's settings (confdir, the SSL files, hostcrl and
                                       certificate_revocation, http_connect_timeout); NULL:
                                       Puppet's defaults, no puppet.conf read */
    /* for facts sources: the nodes a PQL (or AST, starting with '[') query selects, or NULL:
     * every node with facts; deactivated and expired nodes too when include_inactive */
    const char *nodes_query;
    bool include_inactive;
    size_t page_size;        /* nodes whose facts one request fetches; 0: 50 */
    /* warnings (code "puppetdb-failover": a server failed and the next one is asked;
     * "puppetdb-conf": a retired puppetdb.conf setting); called on the thread making the request;
     * NULL drops them */
    hiera_diagnostic_fn diagnostics;
    void *diagnostics_data;
} hiera_puppetdb_options;
#define HIERA_PUPPETDB_OPTIONS_INIT {.size = sizeof(hiera_puppetdb_options)}

typedef struct hiera_puppetdb hiera_puppetdb;

/* Reads the configuration (nothing is asked yet). NULL with err (HIERA_ERR_FATAL) when it is
 * wrong: a line of puppetdb.conf Puppet cannot parse, a URL that is not https there, a bad
 * boolean, a bad timeout, cert without key. Release with hiera_puppetdb_close. */
HIERA_API hiera_puppetdb *hiera_puppetdb_open(const hiera_puppetdb_options *o, hiera_error *err);
HIERA_API void hiera_puppetdb_close(hiera_puppetdb *db);
/* The servers as Puppet names them in its messages ("https://a:8081, https://b:8081"). BORROWED. */
HIERA_API const char *hiera_puppetdb_servers(const hiera_puppetdb *db);
/* A node's facts as Puppet's facts terminus finds them (GET /pdb/query/v4/nodes/<node>/facts).
 * HIERA_OK: *facts is a new hash (empty for a node PuppetDB has no facts for). HIERA_NOT_FOUND:
 * every server said 404. HIERA_ERROR: err names the servers and the cause. */
HIERA_API hiera_status hiera_puppetdb_node_facts(hiera_puppetdb *db, const char *node, hiera_value **facts,
                                                 hiera_error *err);
/* The certnames a query selects (PQL or AST; NULL: every node with facts, active ones unless
 * include_inactive), sorted, each once: a new array of strings, or NULL with err. */
HIERA_API hiera_value *hiera_puppetdb_nodes(hiera_puppetdb *db, const char *query, bool include_inactive,
                                            hiera_error *err);
/* Runs a query (PQL, or an AST when it starts with '['): each element of the answer's array is
 * handed to row as it arrives (BORROWED: take a reference to keep it) and then dropped; row
 * returns 0 to go on, anything else stops the query (HIERA_ERROR, "stopped"). When a server fails
 * in the middle of its answer and the next one answers from the start, row is called with NULL:
 * forget the rows given so far. HIERA_OK, or HIERA_ERROR with err. */
typedef int (*hiera_puppetdb_row_fn)(hiera_value *row, void *userdata);
HIERA_API hiera_status hiera_puppetdb_query(hiera_puppetdb *db, const char *query, hiera_puppetdb_row_fn row,
                                            void *userdata, hiera_error *err);

/* ------------------------------------------------------------------ facts sources
 *
 * A node set with each node's facts:
 *  - a folder of facts files, one per node: NAME.yaml, NAME.yml or NAME.json holding a hash of
 *    facts (read as `puppet lookup --facts` reads its file: given facts) or a file of Puppet's YAML
 *    facts cache (a node's stored facts), so that Puppet's <yamldir>/facts is such a folder;
 *    hidden files are skipped, and a node with two files is refused;
 *  - PuppetDB: every node it has facts for (or a query's nodes), their facts fetched a page of
 *    nodes per request as they are needed, as Puppet's facts terminus gives them (stored facts). */

typedef struct hiera_facts_source hiera_facts_source;

/* A folder. NULL with err when it cannot be read. Release with hiera_facts_source_free. */
HIERA_API hiera_facts_source *hiera_facts_source_dir(const char *dir, hiera_error *err);
/* PuppetDB (nothing is asked yet): o as for hiera_puppetdb_open. NULL with err. */
HIERA_API hiera_facts_source *hiera_facts_source_puppetdb(const hiera_puppetdb_options *o, hiera_error *err);
HIERA_API void hiera_facts_source_free(hiera_facts_source *s);
/* "the facts folder DIR" or "PuppetDB at URL, URL", for messages. BORROWED. */
HIERA_API const char *hiera_facts_source_describe(const hiera_facts_source *s);
/* The node names, sorted in byte order, each once: a new array of strings, or NULL with err (the
 * folder or PuppetDB could not be read). */
HIERA_API hiera_value *hiera_facts_source_nodes(hiera_facts_source *s, hiera_error *err);
/* One node's facts (a folder: its file, through c's disk cache when c is given, see
 * hiera_cache_load_value_file; PuppetDB: one request, as Puppet's facts terminus makes it).
 * HIERA_OK with out filled (release with hiera_node_facts_clear); HIERA_NOT_FOUND: the source has no
 * facts for it (err says "No facts available for target node: NAME", as Puppet does);
 * HIERA_ERROR with err: a file that cannot be read or is not a hash of facts, two files for the
 * node, PuppetDB failing. */
HIERA_API hiera_status hiera_facts_source_get(hiera_facts_source *s, const char *node, hiera_cache *c,
                                              hiera_node_facts *out, hiera_error *err);

/* The facts of names[0..n) in that order (names must stay valid meanwhile). From PuppetDB a page
 * of nodes is fetched when the reader reaches it; when a page cannot be fetched its nodes get the
 * error, and after three such pages in a row the rest get it without asking again. */
typedef struct hiera_facts_reader hiera_facts_reader;
HIERA_API hiera_facts_reader *hiera_facts_reader_new(hiera_facts_source *s, const char *const *names, size_t n,
                                                     hiera_cache *c);
/* The next node's facts: HIERA_OK, HIERA_NOT_FOUND or HIERA_ERROR as hiera_facts_source_get
 * says; false (nothing filled) past the end. */
HIERA_API bool hiera_facts_reader_next(hiera_facts_reader *r, hiera_status *status, hiera_node_facts *out,
                                       hiera_error *err);
HIERA_API void hiera_facts_reader_free(hiera_facts_reader *r);

/* The facts of names[0..n) for threads that take nodes by position (each i once, about in order):
 * thread-safe. From PuppetDB the page holding node i is fetched when node i is first asked for
 * (threads asking meanwhile wait for it); failing pages as for readers. Folders are read without a
 * lock (c's disk cache may be shared, see hiera_cache_load_value_file). */
typedef struct hiera_facts_pager hiera_facts_pager;
HIERA_API hiera_facts_pager *hiera_facts_pager_new(hiera_facts_source *s, const char *const *names, size_t n,
                                                   hiera_cache *c);
HIERA_API hiera_status hiera_facts_pager_get(hiera_facts_pager *p, size_t i, hiera_node_facts *out, hiera_error *err);
HIERA_API void hiera_facts_pager_free(hiera_facts_pager *p);

/* ------------------------------------------------------------------ one node, as `puppet lookup`
 *
 * Where `puppet lookup` (7.23: Puppet::Application::Lookup#generate_scope) takes a node's facts
 * from: the facts_file, read and checked first (hiera_facts_check_given); with node, Puppet's
 * facts terminus as its settings and routes.yaml configure it for the lookup application (yaml:
 * the YAML facts cache <yamldir>/facts/NODE.yaml, no file meaning no facts; puppetdb: PuppetDB,
 * with a puppetdb cache asked first), or PuppetDB when the options give it; without node, the
 * local machine: Facter is run (`facter --json --show-legacy` with the custom and external fact
 * folders of the environment's modules and Puppet's factpath, as Puppet gives them) and the facts
 * Puppet adds itself are added. No facts at all is an error ("No facts available for target
 * node: NODE"). */
typedef struct {
    size_t size;                        /* sizeof (HIERA_NODE_FACTS_OPTIONS_INIT), or 0 */
    const hiera_settings *settings;     /* Puppet's settings (vardir, yamldir, certname, routes) */
    const hiera_environment *env;       /* the environment (its modules' fact folders, Facter) */
    const char *node;                   /* NULL: the local machine */
    const char *facts_file;             /* facts given over the node's, or NULL */
    const hiera_puppetdb_options *puppetdb; /* PuppetDB is the facts terminus (with node); NULL: the
                                           settings and routes.yaml decide (PuppetDB then configured
                                           from the settings alone) */
    hiera_cache *cache;                 /* facts_file read through its disk cache; NULL: parsed */
    /* what Puppet logs and goes on after: "facts-cache-failed" (error: a puppetdb facts cache
     * failed, the terminus is asked), "facts-route-both" (warning: routes.yaml has both server
     * and master routes), "facts-directory-traversal" (critical: a node name that is not a file
     * name; the call then fails with "invalid key"), PuppetDB's warnings; NULL drops them */
    hiera_diagnostic_fn diagnostics;
    void *diagnostics_data;
} hiera_node_facts_options;
#define HIERA_NODE_FACTS_OPTIONS_INIT {.size = sizeof(hiera_node_facts_options)}

/* The node's facts: HIERA_OK with out filled (release with hiera_node_facts_clear; out->node is
 * the node, or the certname for the local machine), or HIERA_ERROR with err. err->kind is
 * HIERA_ERR_CONFIG when Puppet's own set-up refuses (it prints these without "Could not run":
 * "Could not configure routes from FILE: ...", "Could not initialize global default settings:
 * Certificate names must be lower case"), else HIERA_ERR_FATAL ("Error: Could not run: ...").
 * Messages are worded as the settings' Puppet (hiera_settings_puppet_version), not the thread's. */
HIERA_API hiera_status hiera_node_facts_find(const hiera_node_facts_options *o, hiera_node_facts *out,
                                             hiera_error *err);

/* ------------------------------------------------------------------ fleet runs
 *
 * Many keys for many nodes: every (node, key) is the lookup `hiera lookup KEY` (puppet lookup)
 * makes for the node with the request given, on a pool of threads, each with its own cache
 * (frozen: the files must not change while the run lasts; see hiera_cache_freeze). Nodes are
 * taken a few at a time and each key is looked up for all of them before the next key, so that
 * what a cache keeps for a key is still at hand. Every node's answers are handed to a callback
 * once its lookups are done, with the values and, when asked, their JSON text (hiera_render's,
 * byte for byte; the parts many nodes share are written once). */

/* One answer of a node (every pointer BORROWED: valid during the callback only). */
typedef struct {
    const char *key;        /* the key looked up */
    const char *key_json;   /* with render_json: the key as a JSON string, else NULL */
    size_t key_json_length;
    hiera_status status;    /* HIERA_OK, HIERA_NOT_FOUND or HIERA_ERROR */
    hiera_value *value;     /* HIERA_OK: the value. It belongs to the worker's cache: keep it
                               (hiera_value_incref) only in a run on one thread, and release it
                               before the cache; else copy what you need during the callback */
    const char *text;       /* HIERA_OK with render_json: the value's JSON, else NULL */
    size_t text_length;
    const char *error;      /* HIERA_ERROR: why (a value that cannot be rendered too), else NULL */
} hiera_fleet_answer;

/* A node's answers, handed to the callback (every pointer BORROWED: valid during the call). */
typedef struct {
    const char *name;
    size_t index;           /* its position in the run's node list */
    /* the node could not be looked up at all (its facts cannot be read or used, its context
     * cannot be made): why, with no answers; else NULL */
    const char *error;
    /* with the nodes' own keys (no keys given): what kept some from being listed, as an array of
     * {"layer", "module", "level", "message", "file", "line"} (hiera_keys' "errors") and
     * {"key", "message"} for a key no lookup can reach or JSON cannot hold; NULL when none */
    const hiera_value *listing_errors;
    const hiera_fleet_answer *answers; /* in the order of the keys (a node's own: sorted) */
    size_t nanswers;
} hiera_fleet_node;

/* Called for each node, one call at a time (never two at once), on the thread that looked the
 * node up; 0 goes on, anything else stops the run (nodes not started are not looked up). */
typedef int (*hiera_fleet_fn)(const hiera_fleet_node *node, void *userdata);

/* A node given with its facts (instead of a facts source): */
typedef struct {
    const char *name;
    const char *facts_file;        /* read as a facts folder's file is (a hash of facts, checked as
                                      `puppet lookup --facts` checks it, or a file of Puppet's YAML
                                      facts cache), or NULL */
    const hiera_value *facts;      /* given facts (hiera_options.facts), or NULL; BORROWED */
    const hiera_value *base_facts; /* stored facts (hiera_options.base_facts), or NULL; BORROWED */
    const hiera_value *trusted;    /* $trusted (hiera_options.trusted), or NULL; BORROWED */
    const char *trusted_file;      /* $trusted read from this file (as `hiera lookup --trusted` reads
                                      it) after the facts, or NULL */
} hiera_fleet_input;

typedef struct {
    size_t size;                       /* sizeof(hiera_fleet_options) (HIERA_FLEET_OPTIONS_INIT), or 0 */
    /* every node's context is made with these (node, facts, base_facts, trusted and cache are
     * the run's); their diagnostics callback is called one call at a time. Giving settings and
     * env saves every worker from building its own. Required. */
    const hiera_options *context;
    /* merge, default_value and type of every lookup (keys and explain are the run's); NULL:
     * lookup_options decide */
    const hiera_request *request;
    /* the keys, looked up in this order (repeats are looked up again: drop them before); NULL:
     * each node's own, every key it can see (hiera_key_names), in the form a lookup takes
     * (hiera_key_lookup_form), sorted by their bytes */
    const char *const *keys;
    size_t nkeys;
    /* the nodes: those of a facts source (names: these of its nodes, in this order; NULL: every
     * node it lists), or the nodes given */
    hiera_facts_source *source;
    const char *const *names;
    size_t nnames;
    const hiera_fleet_input *nodes;
    size_t nnodes;
    /* each node NAME's $trusted from DIR/NAME.yaml, .yml or .json (read as `hiera lookup
     * --trusted` reads its file; a node without one fails), or NULL: a source's node gets it from
     * its `trusted` fact, a given node from its input */
    const char *trusted_dir;
    /* worker threads (the calling thread is one of them); 0: one per CPU the process may use,
     * at most 8, and no more than one per 16 nodes */
    unsigned threads;
    /* the calling thread's cache (frozen by the run; facts strings shared, see
     * hiera_cache_share_facts_strings), NULL: one of its own. The other workers get caches
     * over snapshot when it is given, else new ones with this cache's disk cache. */
    hiera_cache *cache;
    hiera_snapshot *snapshot;
    bool render_json;                  /* give each answer's JSON text (and each key's) */
    bool ordered;                      /* call back in the order of the nodes (else as they finish) */
    hiera_fleet_fn callback;
    void *userdata;
} hiera_fleet_options;
#define HIERA_FLEET_OPTIONS_INIT {.size = sizeof(hiera_fleet_options)}

/* What a run did. */
typedef struct {
    size_t nodes;          /* handed to the callback */
    size_t failed_nodes;   /* of which with an error */
    size_t lookups;        /* made */
    size_t failed_lookups; /* ended in HIERA_ERROR (or could not be rendered) */
    unsigned threads;      /* the workers that ran */
} hiera_fleet_stats;

/* Runs the lookups. HIERA_OK when every node was handed over (their failures are in the
 * answers); HIERA_ERROR with err when the run could not start (no context options, a source
 * that cannot list its nodes, both a source and given nodes) or was stopped by the callback.
 * stats (may be NULL) is filled either way. Threads: see the top of this header; the options'
 * objects must not be used elsewhere while the run lasts. */
HIERA_API hiera_status hiera_fleet_run(const hiera_fleet_options *o, hiera_fleet_stats *stats, hiera_error *err);

/* ------------------------------------------------------------------ diff runs
 *
 * What changes for a fleet between two versions of a tree (`hiera diff`): both sides are read
 * whole (snapshots), hiera_snapshot_compare says which keys can answer differently, and only
 * those are looked up again, on both sides, for every node (every key considered for a node whose
 * facts differ between the sides or interpolate a key that may differ), on a pool of threads with
 * caches over the two snapshots. Answers are compared as hiera_value_same says, failures by their
 * message with each side's folders written relative to its tree (the same file is then named alike
 * on both sides). */

typedef enum {
    HIERA_DIFF_CHANGE = 1,   /* a node's answer for a key differs */
    HIERA_DIFF_TROUBLE = 2,  /* a node that could not be compared (message): its facts cannot be read
                                on a side, or no context can be made on either side for one reason */
    HIERA_DIFF_ONLY_OLD = 3, /* a node that has facts on the old side only (not compared) */
    HIERA_DIFF_ONLY_NEW = 4, /* ... on the new side only */
    HIERA_DIFF_NODE_DONE = 5, /* a node compared (for progress: lookups says how many it took) */
} hiera_diff_event_kind;

/* One side's answer: status, value (HIERA_OK; valid while the snapshots live: keep it with
 * hiera_value_incref during the callback, release it after the run) and message (HIERA_ERROR). */
typedef struct {
    hiera_status status;
    hiera_value *value;
    const char *error;
} hiera_diff_answer;

typedef struct {
    hiera_diff_event_kind kind;
    const char *node;        /* its name */
    size_t node_index;       /* in the run's node list (sorted) */
    const char *key;         /* HIERA_DIFF_CHANGE: the key */
    size_t key_index;        /* its index in the plan's "keys" */
    hiera_diff_answer old_answer, new_answer; /* HIERA_DIFF_CHANGE */
    const char *message;     /* HIERA_DIFF_TROUBLE */
    size_t lookups;          /* HIERA_DIFF_NODE_DONE */
} hiera_diff_event;

/* Called one call at a time (never two at once); every pointer BORROWED (valid during the call).
 * 0 goes on, anything else stops the run. */
typedef int (*hiera_diff_fn)(const hiera_diff_event *event, void *userdata);

/* A diagnostic of the run's contexts and snapshots, with where it arose. Every pointer BORROWED
 * (valid during the call). */
typedef struct {
    const hiera_diagnostic *diagnostic;
    int side;          /* 0: the old side's, 1: the new side's */
    const char *node;  /* the node whose context met it; NULL: reading the side's tree */
    size_t node_index; /* (with node) its index in the run's node list */
} hiera_diff_diagnostic;

/* Called one call at a time (never two at once), from any of the run's threads. */
typedef void (*hiera_diff_diagnostic_fn)(const hiera_diff_diagnostic *d, void *userdata);

typedef struct {
    size_t size; /* sizeof(hiera_diff_options) (HIERA_DIFF_OPTIONS_INIT), or 0 */
    /* each side's tree and the contexts made over it (as hiera_new takes them: codedir,
     * environmentpath, hiera_config, confdir, environment, unsafe_fact_paths, puppet_version,
     * remap_default_environmentpath, redact_encrypted, diagnostics); the node, facts, trusted and
     * cache are the run's. Required. */
    const hiera_options *old_context, *new_context;
    /* the snapshots of the two trees (hiera_snapshot_new of the contexts), or NULL: read here */
    hiera_snapshot *old_snapshot, *new_snapshot;
    /* the folders files are paired by (hiera_compare_options' old_root, new_root; NULL: the
     * context's codedir) and, when given, the folders each side's files are in (named relative
     * in messages, as the roots are) */
    const char *old_root, *new_root, *old_tree, *new_tree;
    /* the keys to consider (NULL: every key of either side's data), full and full_reason as
     * hiera_compare_options takes them */
    const char *const *keys;
    size_t nkeys;
    bool full;
    const char *full_reason;
    const hiera_request *request; /* merge, default_value, type; NULL: lookup_options decide */
    /* the nodes: each side's facts source (the same one: the same facts on both sides, read
     * once), or nodes given with their facts (the same on both sides) */
    hiera_facts_source *old_source, *new_source;
    const hiera_fleet_input *nodes;
    size_t nnodes;
    const char *trusted_dir; /* as hiera_fleet_options' */
    /* facts and trusted files are read through its disk cache (hiera_cache_load_value_file: only
     * the disk cache is used, from every thread); NULL: parsed */
    hiera_cache *cache;
    unsigned threads;        /* 0: one per CPU the process may use, at most 8 */
    hiera_diff_fn callback;
    void *userdata;
    /* the contexts' and snapshots' diagnostics with their side and node; NULL: each side's
     * context options' callback gets them (one call at a time too, without the node) */
    hiera_diff_diagnostic_fn diagnostics;
    void *diagnostics_data;
} hiera_diff_options;
#define HIERA_DIFF_OPTIONS_INIT {.size = sizeof(hiera_diff_options)}

typedef struct {
    size_t nodes;     /* compared */
    size_t lookups;   /* made, both sides counted */
    size_t changes;   /* HIERA_DIFF_CHANGE events */
    size_t troubles;  /* HIERA_DIFF_TROUBLE events */
} hiera_diff_stats;

/* Runs the comparison. Returns the plan (hiera_snapshot_compare's answer: its "keys" are what
 * key_index counts in; with "nodes": the run's node names, what node_index counts in; a new
 * reference), or NULL with err when the run could not be made (no
 * contexts, a source that cannot list its nodes) or was stopped by the callback. The node list
 * (node_index) is every node of either source, sorted, each once (the nodes given: in their
 * order). Values kept from the callback stay valid while the snapshots live: the caller's when it
 * gave them, else until this returns. stats may be NULL. */
HIERA_API hiera_value *hiera_diff_run(const hiera_diff_options *o, hiera_diff_stats *stats, hiera_error *err);

#ifdef __cplusplus
}
#endif

#endif
