/* hiera.h - libhiera: Hiera 5 lookups (as Puppet 7 or Puppet 8 answers them: hiera_puppet_version) from C.
 *
 * Ownership, in one rule: a function whose result is a pointer returns something the caller
 * owns and must release with the matching function named in its comment (hiera_free,
 * hiera_value_decref, hiera_error_clear, free); a pointer argument is BORROWED (read during the
 * call, never kept and never released) unless its comment says STEALS (the library takes over the
 * caller's reference). Accessors marked BORROWED return pointers owned by their container: valid
 * while the container is, never to be released.
 *
 * Threads: exactly this may be shared between threads:
 *  - a snapshot (hiera_snapshot_*): every function on it may be called from any thread at once;
 *  - the values a snapshot hands out (hiera_snapshot_describe, _problems) may be read by any
 *    thread while the snapshot lives;
 *  - nothing else: a context (hiera) and the cache it uses belong to one thread at a time, and so
 *    do the values its lookups return (they may hold parts of a snapshot, which is why they are
 *    valid only while it lives; pass them to another thread only with their reference, never to
 *    two threads at once). Separate contexts may run on
 *    separate threads when they do not share a hiera_cache; caches made over one snapshot
 *    (hiera_cache_new_from_snapshot) may each serve one thread.
 * Functions that take no context, cache or snapshot (values the caller builds, rendering,
 * hiera_value_load_file, hiera_version) may be called from any thread. What the library keeps for
 * the whole process (Oniguruma's set-up, the types it parses once) is made once, thread-safely,
 * on first use. One process-wide fact remains, as in Ruby: the first HOCON file that uses a
 * delayed merge changes how later ones are read (the gem loads a class lazily); it only ever goes
 * one way and is safe from any thread.
 * Hiera 3 objects (hiera3_*) follow the same rule as contexts.
 *
 * Option structs grow: each starts with a `size` field that tells the library which fields the
 * caller knows. Set it to sizeof the struct (the HIERA_*_INIT macros do); 0 means "the fields of
 * version 0.2", so that a zeroed struct keeps working when later versions add fields.
 *
 * Diagnostics: the library never prints. Warnings it meets (a data file that is not a hash, a
 * deprecated hiera.yaml version, a regexp that gave up) go to the callback the caller gives in
 * hiera_options; without one they are dropped.
 *
 * A minimal program:
 *
 *     hiera_error err = {0};
 *     hiera_value *facts = hiera_value_load_file("facts.yaml", &err);
 *     hiera_options o = {.size = sizeof o, .codedir = "/etc/puppetlabs/code", .node = "web01.example.com",
 *                        .facts = facts};
 *     hiera *h = hiera_new(&o, &err);
 *     hiera_value *v = NULL;
 *     if (h && hiera_lookup_key(h, "ntp::servers", &v, &err) == HIERA_OK) {
 *         char *json = hiera_render(v, HIERA_RENDER_JSON, &err);
 *         puts(json);
 *         free(json);
 *         hiera_value_decref(v);
 *     }
 *     hiera_free(h);
 *     hiera_value_decref(facts);
 *     hiera_error_clear(&err);
 */
#ifndef HIERA_H
#define HIERA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HIERA_BUILD_SHARED) && defined(__GNUC__)
#define HIERA_API __attribute__((visibility("default")))
#else
#define HIERA_API
#endif

#define HIERA_VERSION "0.2.0"

/* ------------------------------------------------------------------ errors */

typedef enum {
    HIERA_ERR_NONE = 0,
    /* A lookup error (Puppet's LookupError): a merge of incompatible values, a recursive
     * interpolation, a data file that cannot be parsed, a bad key... `puppet lookup` exits 1
     * without printing these. */
    HIERA_ERR_LOOKUP = 1,
    /* Any other error: an invalid hiera.yaml, a type mismatch, bad options. `puppet lookup`
     * prints these as "Error: Could not run: <message>". */
    HIERA_ERR_FATAL = 2,
    /* Hiera 3 API only: the configuration could not be loaded or is invalid: a missing file,
     * YAML that does not parse, a version 4 or 5 file, an unknown backend, a :datadir: that is
     * not a string (reported by the lookup that needs it). */
    HIERA_ERR_CONFIG = 3,
    /* Hiera 3 API only: an interpolation failed: an unknown method ('lookup'), an unquoted
     * argument, alias() in the middle of a string, a syntax error, a recursion ("Lookup
     * recursion detected in [...]"). Other failures of a Hiera 3 lookup (a data file that does
     * not parse, a type mismatch between levels, a deep_merge error, a bad key) are
     * HIERA_ERR_LOOKUP. */
    HIERA_ERR_INTERPOLATION = 4,
    /* Edits only (hiera_edit_*): the edit cannot be made exactly, and nothing is written; file,
     * line and column say where, the message why (the key defined twice, an anchor or alias in
     * the way, a flow mapping, a document that is not a hash, a level whose files cannot be
     * named...). */
    HIERA_ERR_REFUSED = 5,
    /* hiera_file_replace only: the file is not the one the edit started from (another edit
     * landed first); nothing is written. */
    HIERA_ERR_STALE = 6,
} hiera_error_kind;

typedef struct {
    hiera_error_kind kind;
    char *message; /* owned by the record; NULL when kind is HIERA_ERR_NONE */
    char *file;    /* the file the error is about, or NULL */
    int line;      /* 1-based, 0 when unknown */
    int column;    /* 1-based, 0 when unknown */
} hiera_error;

/* Releases what an error record holds and zeroes it. Safe on a zeroed record. */
HIERA_API void hiera_error_clear(hiera_error *err);

/* What a lookup (or a read that may find nothing) ends with. */
typedef enum {
    HIERA_OK = 0,
    HIERA_NOT_FOUND = 1, /* no value and no default (no such file) */
    HIERA_ERROR = 2,     /* err says why */
} hiera_status;

/* ------------------------------------------------------------------ values */

typedef struct hv hiera_value; /* reference-counted, immutable once returned */

typedef enum {
    HIERA_UNDEF = 0,
    HIERA_BOOLEAN,
    HIERA_INTEGER,   /* fits int64_t */
    HIERA_BIGINT,    /* an integer beyond int64_t: read it with hiera_value_bigint */
    HIERA_FLOAT,
    HIERA_STRING,
    HIERA_ARRAY,
    HIERA_HASH,      /* insertion-ordered; keys are values (usually strings) */
    HIERA_SENSITIVE, /* a wrapped value that must not be shown */
    HIERA_SYMBOL,    /* a Ruby symbol read from YAML; not Puppet data */
} hiera_kind;

/* Reference counting: hiera_value_incref returns v; hiera_value_decref releases one reference
 * (NULL-safe). Every hiera_value* returned by this API (except BORROWED accessors) must be
 * released with hiera_value_decref. */
HIERA_API hiera_value *hiera_value_incref(hiera_value *v);
HIERA_API void hiera_value_decref(hiera_value *v);
/* Whether a reference other than the caller's holds v (another caller's, the library's
 * remembered answers, an immortal value's). A value that is not shared is freed with the
 * caller's reference, so no later lookup can return it again. Reads v only; call it from the
 * thread that owns v (any thread for immortal values). */
HIERA_API bool hiera_value_is_shared(const hiera_value *v);

HIERA_API hiera_kind hiera_value_kind(const hiera_value *v);
HIERA_API bool hiera_value_bool(const hiera_value *v);
HIERA_API int64_t hiera_value_int(const hiera_value *v);
HIERA_API const char *hiera_value_bigint(const hiera_value *v); /* BORROWED decimal text */
HIERA_API double hiera_value_float(const hiera_value *v);
HIERA_API const char *hiera_value_string(const hiera_value *v); /* BORROWED, NUL-terminated */
HIERA_API size_t hiera_value_string_length(const hiera_value *v);
HIERA_API size_t hiera_value_array_size(const hiera_value *v);
HIERA_API hiera_value *hiera_value_array_get(const hiera_value *v, size_t i); /* BORROWED */
HIERA_API size_t hiera_value_hash_size(const hiera_value *v);
HIERA_API hiera_value *hiera_value_hash_key(const hiera_value *v, size_t i);   /* BORROWED */
HIERA_API hiera_value *hiera_value_hash_value(const hiera_value *v, size_t i); /* BORROWED */
HIERA_API hiera_value *hiera_value_hash_get(const hiera_value *v, const char *key); /* BORROWED */
HIERA_API hiera_value *hiera_value_sensitive_unwrap(const hiera_value *v); /* BORROWED */

/* Building values (for facts and defaults). Each returns a new reference. */
HIERA_API hiera_value *hiera_value_undef(void);
HIERA_API hiera_value *hiera_value_new_bool(bool b);
HIERA_API hiera_value *hiera_value_new_int(int64_t i);
HIERA_API hiera_value *hiera_value_new_float(double d);
HIERA_API hiera_value *hiera_value_new_string(const char *s);
HIERA_API hiera_value *hiera_value_new_array(void);
HIERA_API hiera_value *hiera_value_new_hash(void);
/* Appends to an array / sets a key of a hash that the caller still owns alone (just built).
 * STEALS item / value. */
HIERA_API void hiera_value_array_push(hiera_value *array, hiera_value *item);
HIERA_API void hiera_value_hash_set(hiera_value *hash, const char *key, hiera_value *value);

/* Parses JSON text / reads a facts file the way `puppet lookup --facts` does (.json as JSON,
 * .yaml/.yml as YAML, anything else JSON then YAML; YAML as Puppet's safe_load_file reads it:
 * no Ruby class permitted, not even Symbol, and a UTF-8 byte order mark dropped). New reference,
 * or NULL with err. */
HIERA_API hiera_value *hiera_value_from_json(const char *text, hiera_error *err);
HIERA_API hiera_value *hiera_value_load_file(const char *path, hiera_error *err);

/* Text forms, as `puppet lookup --render-as` prints them (without puppet's final newline for
 * json and s; yaml includes its own). Returns a malloc'ed string (release with free), or NULL
 * with err (e.g. a float that JSON cannot hold). */
typedef enum {
    HIERA_RENDER_JSON,
    HIERA_RENDER_YAML,
    HIERA_RENDER_S,
    HIERA_RENDER_YAML_SHARED, /* YAML with anchors for containers that appear more than once (as
                                 Ruby prints an explanation tree, whose nodes share values) */
} hiera_render_format;
HIERA_API char *hiera_render(const hiera_value *v, hiera_render_format format, hiera_error *err);

/* ------------------------------------------------------------------ contexts */

/* A context is one node in one environment: its facts, the configurations and the data files
 * it has read. Configurations and data files are read on first use and then kept. */
typedef struct hiera_ctx hiera;

/* A cache of parsed files that contexts can share (one per process is typical). */
typedef struct hiera_cache hiera_cache;
HIERA_API hiera_cache *hiera_cache_new(void); /* release with hiera_cache_free */
HIERA_API void hiera_cache_free(hiera_cache *c); /* after every context using it is freed */
/* hiera_render, for values that lookups through contexts using c returned: with
 * HIERA_RENDER_JSON, the text of their parts that c keeps unchanged (a frozen cache's data and the
 * merges it remembers, which many nodes' answers share) is remembered in c and written again from
 * there (at most 32 MiB of it); other formats are hiera_render's. The text is hiera_render's,
 * byte for byte. The same thread-safety as c; v must not hold parts of another cache's values.
 * Returns a new string (free), or NULL with err. */
HIERA_API char *hiera_cache_render(hiera_cache *c, const hiera_value *v, hiera_render_format format,
                                   hiera_error *err);
/* Promises that the files will not change while the cache lives (a batch run): a file read once
 * is not checked again, and existence checks and glob expansions are remembered. Without it,
 * every use re-checks the file with stat() and re-reads it when it changed. */
HIERA_API void hiera_cache_freeze(hiera_cache *c);
/* From now on, facts that hiera_facts_load reads back from c's disk cache share the strings they
 * have in common (keys and common values, at the same line of the file): each is made once and
 * lives, unchangeable, as long as c. Facts so read must then be released before c, and facts
 * loads through c must come from one thread at a time (hiera batch: a fleet's facts). */
HIERA_API void hiera_cache_share_facts_strings(hiera_cache *c);
/* Keeps parsed data files on disk between runs, in dir (NULL: $XDG_CACHE_HOME/hiera or
 * ~/.cache/hiera, created private), so that the next process reads them back instead of parsing
 * them. An entry is used only for a file with the same path, device, inode, size and
 * modification and change times. The folder is bounded: a process that writes an entry sweeps it
 * once a day, or after an eighth of the limit was written, removing the entries of files that are
 * gone or changed and then the least recently used beyond HIERA_CACHE_MAX_SIZE bytes (environment;
 * "N", "NK", "NM" or "NG"; 256M when unset or not a size). Several processes and threads may share
 * a folder. Returns false when no safe folder is available (the cache then simply stays in
 * memory). The hiera command uses it unless HIERA_CACHE_DIR=off. */
HIERA_API bool hiera_cache_use_disk(hiera_cache *c, const char *dir);
/* hiera_value_load_file through c's disk cache (hiera_cache_use_disk; without one it is simply
 * hiera_value_load_file): a facts file read before and unchanged since is read back instead of
 * parsed. Keeps nothing in memory and touches only the cache's disk setting, so it may run on
 * another thread than the contexts that use c (hiera batch reads facts ahead on one); after
 * hiera_cache_share_facts_strings, it keeps the shared strings, from one thread at a time. New
 * reference, or NULL with err. */
HIERA_API hiera_value *hiera_cache_load_value_file(hiera_cache *c, const char *path, hiera_error *err);

/* ------------------------------------------------------------------ facts
 *
 * Where `puppet lookup` gets a node's facts: --facts FILE (hiera_value_load_file); with --node
 * NODE, Puppet's YAML facts cache first (hiera_facts_cached), the file's facts over those;
 * without --node, Facter on the local machine (the hiera command runs `facter`; the library
 * never starts a process). The facts given to hiera_new are then sanitized as Puppet does. */

/* The kinds of facts file hiera_facts_load reads (bits): */
enum {
    HIERA_FACTS_FILE = 1,  /* a hash of facts in YAML or JSON, as `puppet lookup --facts FILE` */
    HIERA_FACTS_CACHE = 2, /* Puppet's YAML facts cache: a document tagged
                              !ruby/object:Puppet::Node::Facts (name, values, timestamp,
                              expiration), as Puppet's yaml facts terminus writes it */
};

/* Reads one node's facts from path and returns the hash of facts (a new reference), or NULL with
 * err. formats: HIERA_FACTS_FILE (hiera_value_load_file), HIERA_FACTS_CACHE (the cache's format
 * only: its `values` without the `_timestamp` old caches keep among them; the timestamps are not
 * checked), or both: a YAML file whose document is tagged Puppet::Node::Facts is read as the
 * cache, any other as a --facts file (Symbols refused, the tag refused anywhere else). The
 * permission for the Puppet::Node::Facts tag is for these files only: data files refuse it.
 * node names the node in the cache's messages ("Could not parse YAML data for facts NODE:
 * ..."). c: NULL, or a cache whose disk cache (hiera_cache_use_disk) keeps what was read, as
 * hiera_cache_load_value_file does, and with the same thread-safety. format_read (may be NULL)
 * gets the kind the file was read as: a cache file's facts are a node's stored facts (for
 * hiera_options.base_facts), a --facts file's are given facts (hiera_options.facts). */
HIERA_API hiera_value *hiera_facts_load(hiera_cache *c, const char *path, const char *node, int formats,
                                        int *format_read, hiera_error *err);

/* The facts `puppet lookup --node NODE` starts from: Puppet's YAML facts cache,
 * <yamldir>/facts/<NODE>.yaml (yamldir is Puppet's setting: <vardir>/yaml by default).
 * HIERA_OK: *facts gets the hash (a new reference). HIERA_NOT_FOUND: there is no such file (Puppet
 * then starts from no facts, and with none given says "No facts available for target node:
 * NODE"). HIERA_ERROR: err says why: a node name Puppet refuses as a file name ("invalid key":
 * a leading "..", a slash, a backslash, a NUL, a drive letter), or a file Puppet cannot read
 * ("Could not parse YAML data for facts NODE: ..."). */
HIERA_API hiera_status hiera_facts_cached(const char *yamldir, const char *node, hiera_value **facts,
                                          hiera_error *err);

/* The checks `puppet lookup --facts FILE` makes on the facts it read (hiera_new makes them on
 * hiera_options.facts): a hash, in which hostname, domain, fqdn and clientcert are given all
 * together or not at all (they make the node's trusted information). HIERA_OK, or HIERA_ERROR
 * with err (HIERA_ERR_FATAL) in Puppet's words naming file ("Incorrectly formatted data in FILE
 * given via the --facts flag (only accepts yaml and json files)", "When overriding any of the
 * hostname,domain,fqdn,clientcert facts with FILE given via the --facts flag, they must all be
 * overridden."); file NULL words them without a file, as hiera_new does. Thread-safe. */
HIERA_API hiera_status hiera_facts_check_given(const hiera_value *facts, const char *file, hiera_error *err);

/* ------------------------------------------------------------------ options */

/* ------------------------------------------------------------------ diagnostics */

typedef enum {
    HIERA_DIAG_WARNING = 1,
    HIERA_DIAG_ERROR = 2,    /* an error Puppet logs and goes on after */
    HIERA_DIAG_CRITICAL = 3, /* Puppet's "Critical:" log level (hiera_node_facts_find) */
} hiera_severity;

/* One diagnostic; every pointer is BORROWED, valid during the callback only. */
typedef struct {
    hiera_severity severity;
    const char *code;    /* stable: "data-not-hash", "config-not-hash", "config-deprecated",
                            "config-v3-ignored", "regexp-gave-up", "location-refused" */
    const char *file;    /* the file it is about, or NULL */
    int line, column;    /* 1-based, 0 when unknown */
    const char *message; /* as Puppet words it (what follows its "Warning: ") */
} hiera_diagnostic;

/* Called on the thread that made the call the diagnostic arose in; userdata is passed through. */
typedef void (*hiera_diagnostic_fn)(const hiera_diagnostic *d, void *userdata);

/* ------------------------------------------------------------------ which Puppet
 *
 * The library answers as Puppet 7.23 (Debian 12's package) or as Puppet 8.10 (Debian 13's
 * puppet-agent, with its Ruby 3.3, json 2.7, OpenSSL 3.5 and hiera-eyaml 4.2). What differs:
 *  - Puppet's settings: 8 has five more (skip_logging_catalog_request_destination,
 *    report_configured_environmentpath, ca_refresh_interval, hostcert_renewal_interval,
 *    allow_pson_serialization) and other defaults, above all strict = error (warning in 7), so
 *    that by default an undefined variable in data interpolation, a YAML data file that is not a
 *    hash, a version 3 hiera.yaml in an environment or a module and an undefined variable in a
 *    version 4 hierarchy path fail the lookup; a version 5 location's undefined variable still
 *    interpolates as "" with "Interpolation failed with 'x', but compilation continuing" (under
 *    Puppet 7 with strict = error it fails). strict is an ordinary setting in both (puppet.conf,
 *    the command line): with strict = warning Puppet 8 answers those as Puppet 7.
 *  - `puppet lookup` 8 sets $server_facts (serverversion "8.10.0", servername, serverip,
 *    serverip6: the local machine's Facter facts networking.fqdn, .ip, .ip6; environment) and the
 *    top-scope variables serverversion, servername, serverip, serverip6 (unless a fact has the
 *    name).
 *  - The Ruby libraries' messages: a JSON syntax error without json 2.6's "NNN: " prefix, an
 *    invalid eyaml block "... (Expecting: PKCS7)", and hiera-eyaml 4.2's key loading (the public
 *    key is not needed to decrypt; a key's environment variable wins over its file).
 * hiera_puppet_version_find says which Puppet is installed. */
typedef enum {
    /* the installed one: HIERA_PUPPET_VERSION (7 or 8) in the environment when set, else the
     * major version of the puppet found as HIERA_LAYOUT_AUTO finds it (its Ruby library's
     * puppet/version.rb read as text: 8 and later answer as 8, earlier ones as 7), else 7 */
    HIERA_PUPPET_AUTO = 0,
    HIERA_PUPPET_7 = 7, /* Puppet 7.23 */
    HIERA_PUPPET_8 = 8, /* Puppet 8.10 */
} hiera_puppet_version;

/* The installed Puppet, as HIERA_PUPPET_AUTO finds it (looked for again at each call). why, when
 * not NULL, gets a malloc'ed sentence saying where the answer comes from ("HIERA_PUPPET_VERSION=8",
 * "the installed Puppet 8.10.0 (/usr/lib/ruby/vendor_ruby/puppet/version.rb, of /usr/bin/puppet)",
 * "no Puppet installed: Puppet 7, the default"). Returns HIERA_PUPPET_AUTO when
 * HIERA_PUPPET_VERSION is set to something else than 7 or 8 (why says so; hiera_settings_load and
 * hiera_new then fail with it). Any thread. */
HIERA_API hiera_puppet_version hiera_puppet_version_find(char **why);

/* Calls that take no context (hiera_render, hiera_cache_render, hiera_value_load_file,
 * hiera_facts_load, hiera_facts_cached...) word the few messages Ruby 3.3 words otherwise (a JSON
 * syntax error, "Infinity not allowed in JSON", a NoMethodError) as the calling thread's Puppet:
 * Puppet 7 until this sets it (AUTO: the installed one). Returns the one in effect before. Calls
 * on a context use the context's Puppet for their duration. Per thread. */
HIERA_API hiera_puppet_version hiera_thread_puppet_version(hiera_puppet_version v);

/* ------------------------------------------------------------------ Puppet's settings */

/* Puppet's settings as `puppet lookup` (Puppet 7.23 or 8.10, run mode "server") resolves them: a value
 * given on the command line wins, then the environment's environment.conf (for the settings it
 * may hold), then puppet.conf's [server], [master] and [main] sections, then Puppet's defaults.
 * "$name" (or "${name}") in a value is replaced by the value of the setting `name`; "$environment"
 * only in config_version (elsewhere it stays as written, with a warning, as in Puppet). File and
 * directory settings are made absolute against the working directory, "~" against $HOME.
 *
 * puppet.conf is read from the confdir: --confdir (or --config) when given, else the default
 * for the installed Puppet (see hiera_layout) as root, or the per-user one otherwise. A
 * puppet.conf that does not parse is reported (a diagnostic) and ignored as a whole, as Puppet
 * does; one that sets modulepath, manifest or config_version is an error.
 *
 * Both objects below are immutable once made: they may be read from any number of threads and
 * shared by any number of contexts, and must outlive the contexts (and environments) made from
 * them. */
typedef struct hiera_settings hiera_settings;

typedef enum {
    /* as the installed puppet would: the layout of the puppet found on PATH (a link into
     * /opt/puppetlabs is Puppet's own package, /usr/bin/puppet with Debian's Ruby library is
     * Debian's), else the one whose files exist (/opt/puppetlabs/bin/puppet, Debian's library),
     * else Debian's. The environment variable HIERA_PUPPET_LAYOUT (debian | puppetlabs)
     * overrides the guess. */
    HIERA_LAYOUT_AUTO = 0,
    /* Debian's puppet package: /etc/puppet, /etc/puppet/code, /var/cache/puppet, basemodulepath
     * $codedir/modules:/usr/share/puppet/modules; as another user than root ~/.puppet/etc,
     * ~/.puppet/code, ~/.puppet/cache */
    HIERA_LAYOUT_DEBIAN,
    /* Puppet's own packages (and gems): /etc/puppetlabs/puppet, /etc/puppetlabs/code,
     * /opt/puppetlabs/puppet/cache, basemodulepath $codedir/modules:/opt/puppetlabs/puppet/modules;
     * as another user ~/.puppetlabs/etc/puppet, ~/.puppetlabs/etc/code, ~/.puppetlabs/opt/puppet/cache */
    HIERA_LAYOUT_PUPPETLABS,
} hiera_layout;

/* A setting given on the command line: the name as Puppet spells it ("codedir", "hiera_config")
 * and the value as typed (Puppet's rules apply: "true"/"false" are booleans, one pair of
 * surrounding quotes is dropped). */
typedef struct {
    const char *name;
    const char *value;
} hiera_setting;

typedef struct {
    size_t size;              /* sizeof(hiera_settings_options), or 0 (see "Option structs grow") */
    const hiera_setting *cli; /* command-line settings in the order given (the last of a name
                                 wins); BORROWED, copied */
    size_t ncli;
    hiera_layout layout;
    bool no_puppet_conf;      /* true: read no puppet.conf (the command line and defaults only) */
    /* Where what Puppet prints and goes on after goes (see hiera_diagnostic): a puppet.conf that
     * does not parse ("puppet-conf-syntax", an error: Puppet then ignores the whole file), and,
     * later, the environments' warnings ("environment-conf" for sections or unknown settings in
     * environment.conf, "setting-environment" for a "$environment" that cannot be interpolated,
     * "module-metadata" for a module Puppet refuses). Called on the thread making the call that
     * meets them; NULL drops them. */
    hiera_diagnostic_fn diagnostics;
    void *diagnostics_data;
    /* whose settings these are: Puppet 7's or Puppet 8's (their names and defaults); AUTO: the
     * installed one (see hiera_puppet_version) */
    hiera_puppet_version puppet_version;
} hiera_settings_options;
#define HIERA_SETTINGS_OPTIONS_INIT {.size = sizeof(hiera_settings_options)}

/* Reads puppet.conf and resolves the settings every lookup needs (confdir, codedir, vardir,
 * environmentpath, basemodulepath, hiera_config, environment). Returns NULL with err
 * (HIERA_ERR_FATAL, naming the file and line where Puppet does) when Puppet would stop: an
 * unknown setting or a bad value on the command line, a setting that cannot be resolved ("Could
 * not find value for $x"), modulepath in puppet.conf... o may be NULL (defaults). Release with
 * hiera_settings_free. */
HIERA_API hiera_settings *hiera_settings_load(const hiera_settings_options *o, hiera_error *err);
HIERA_API void hiera_settings_free(hiera_settings *s);
/* The value of a setting outside any environment, resolved and converted as Puppet does (folders
 * absolute, a path setting's folders joined with ":"), as text: booleans "true"/"false", numbers
 * in decimal, a list's items joined with ","; a new malloc'ed string (release with free), or NULL
 * with err (which may be NULL) when the name is not a Puppet setting, has no value, or cannot be
 * resolved. */
HIERA_API char *hiera_settings_get(const hiera_settings *s, const char *name, hiera_error *err);
/* The value a setting is given where: "cli" (the command line) or a puppet.conf section ("main",
 * "server", "master", "agent", "user"), as written there (not interpolated; booleans as
 * "true"/"false"); NULL when it is not given there. A new malloc'ed string (release with free). */
HIERA_API char *hiera_settings_given(const hiera_settings *s, const char *name, const char *where);
/* The puppet.conf read (BORROWED), or NULL when none was (missing, ignored, or not asked for). */
HIERA_API const char *hiera_settings_file(const hiera_settings *s);
/* The Puppet whose settings these are (HIERA_PUPPET_7 or HIERA_PUPPET_8), which every context
 * made from them answers as. */
HIERA_API hiera_puppet_version hiera_settings_puppet_version(const hiera_settings *s);
/* true when `name` is one of Puppet 7.23's settings. */
HIERA_API bool hiera_setting_exists(const char *name);
/* Puppet 7.23's settings in Puppet's order (for a command-line parser): the i-th one's name,
 * whether it is a boolean (given as --name / --no-name on a command line) and its one-letter
 * option (0 for none). false when i is past the last. */
HIERA_API bool hiera_setting_info(size_t i, const char **name, bool *boolean, char *short_option);
/* The same for the settings of version v's Puppet (AUTO: the installed one). */
HIERA_API bool hiera_puppet_setting_exists(hiera_puppet_version v, const char *name);
HIERA_API bool hiera_puppet_setting_info(hiera_puppet_version v, size_t i, const char **name, bool *boolean,
                                         char *short_option);

/* ------------------------------------------------------------------ environments */

/* An environment as Puppet finds it: <dir>/<name> on the environmentpath (the first folder that
 * has it) with its environment.conf (modulepath with relative entries made absolute against the
 * environment, globs expanded, $basemodulepath and other settings interpolated; manifest;
 * config_version; environment_timeout...), or, for "production" when no folder has it and it is
 * the configured environment, Puppet's default environment without a folder (modulepath: the
 * basemodulepath). --modulepath on the command line replaces the environment's modulepath, and
 * the PUPPETLIB environment variable is put in front of it, as in Puppet. */
typedef struct hiera_environment hiera_environment;

/* name NULL: the `environment` setting. Fails (NULL with err) as Puppet does: no such
 * environment ("Could not find a directory environment named 'x' anywhere in the path: ..."),
 * an environment.conf that does not parse, a value that cannot be resolved. Release with
 * hiera_environment_free, before the settings. */
HIERA_API hiera_environment *hiera_environment_load(const hiera_settings *s, const char *name, hiera_error *err);
HIERA_API void hiera_environment_free(hiera_environment *e);
HIERA_API const char *hiera_environment_name(const hiera_environment *e);      /* BORROWED */
/* The environment's folder, or NULL for Puppet's default production environment. BORROWED. */
HIERA_API const char *hiera_environment_dir(const hiera_environment *e);
/* The modulepath: every folder in order, whether it exists or not (a module is taken from the
 * first existing folder that has it). BORROWED strings; i < hiera_environment_modulepath_count. */
HIERA_API size_t hiera_environment_modulepath_count(const hiera_environment *e);
HIERA_API const char *hiera_environment_modulepath(const hiera_environment *e, size_t i);
/* The config_version command (interpolated, made absolute against the environment), or NULL. */
HIERA_API const char *hiera_environment_config_version(const hiera_environment *e);
/* Runs config_version as Puppet does when it sets up a node's scope (`puppet lookup` runs it on
 * every lookup): the command string as Ruby's exec takes it (through /bin/sh when it holds shell
 * characters, else split at blanks), stdin /dev/null, stdout and stderr captured together, LANG
 * and LC_ALL set to C, HOME, USER and LOGNAME unset. true with *output (its stripped output,
 * malloc'ed; may be NULL when not wanted) when it exits 0 or there is no command; false with err
 * ("Execution of config_version command `cmd` failed: Execution of 'cmd' returned 1: <output>")
 * otherwise. Waits for the command however long it runs. */
HIERA_API bool hiera_environment_run_config_version(const hiera_environment *e, char **output, hiera_error *err);
/* Resolves every Puppet setting in the environment, in Puppet's order, as Puppet does when it
 * compiles a node's scope: the first value that cannot be resolved or converted ("Invalid value
 * '\"x\"' for boolean parameter: static_catalogs") is returned in err (false). hiera_new checks
 * this too. */
HIERA_API bool hiera_environment_check(const hiera_environment *e, hiera_error *err);

typedef struct {
    size_t size;                 /* sizeof(hiera_options) (HIERA_OPTIONS_INIT), or 0: see above */
    const char *codedir;         /* NULL: Puppet's default (/etc/puppet/code as root) */
    const char *confdir;         /* NULL: Puppet's default (/etc/puppet as root) */
    const char *environmentpath; /* NULL: <codedir>/environments */
    const char *hiera_config;    /* NULL: <codedir>/hiera.yaml if it exists, else <confdir>/hiera.yaml */
    const char *environment;     /* NULL: "production" */
    const char *node;            /* the node name (used in messages; certname comes from facts) */
    const hiera_value *facts;    /* a hash of facts, BORROWED (copied); NULL: no facts */
    hiera_cache *cache;          /* shared cache, BORROWED; NULL: the context keeps its own */
    /* Facts are untrusted: a hierarchy location (path, paths, glob, globs, mapped_paths,
     * datadir) whose interpolation adds a ".." segment, makes a relative location absolute, or
     * adds glob characters to a glob is treated as missing (never read; a glob matches nothing;
     * the other levels still answer), with a "location-refused" warning once per text; a NUL
     * byte fails the lookup (as in Puppet). true: resolve such locations as Puppet does (it
     * follows them). */
    bool unsafe_fact_paths;
    /* Where the context's warnings go (see hiera_diagnostic); NULL drops them. */
    hiera_diagnostic_fn diagnostics;
    void *diagnostics_data;
    /* true: eyaml blocks are never decrypted; each reads as a Sensitive value (shown redacted), for
     * answers given to someone who may not see secrets (hiera serve). */
    bool redact_encrypted;
    /* $trusted, as a catalog request from an agent with a certificate sets it: a hash with the
     * keys authenticated ("remote", "local" or false), certname (a String) and extensions (a
     * Hash: pp_role, the OIDs...), which Puppet requires of trusted data; hostname and domain
     * are split from certname when not given (as Puppet's TrustedInformation does), external is
     * {} when not given, other keys are kept. BORROWED (copied). NULL: as `puppet lookup` sets
     * it: the node's `trusted` fact when that is a Hash with those three keys (PuppetDB stores
     * trusted data so; Puppet uses it as it is), else {authenticated => 'local', certname =>
     * the clientcert fact, extensions => {}, hostname, domain, external => {}}. */
    const hiera_value *trusted;
    /* The facts the node starts from, under `facts` (which replace those of the same names):
     * what Puppet's facts terminus gives, the YAML facts cache for `puppet lookup --node`
     * (hiera_facts_cached), Facter for the local machine. The hostname/domain/fqdn/clientcert
     * rule applies to `facts` alone. BORROWED (copied); NULL: none. */
    const hiera_value *base_facts;
    /* Puppet's settings and the environment (hiera_settings_load, hiera_environment_load),
     * BORROWED; they must outlive the context (and may be shared by contexts on any threads).
     * With env: its folder, modulepath and name are used (codedir, environmentpath and
     * environment above must then be NULL), the settings give hiera_config (unless given above),
     * the strict setting and the settings:: variables. Without them: the settings are Puppet's
     * defaults with the fields above as command-line values (no puppet.conf is read) and the
     * environment is loaded from them. settings NULL with env given: env's settings. */
    const hiera_settings *settings;
    const hiera_environment *env;
    /* true: a datadir under one of Puppet's default environmentpaths (/etc/puppetlabs/code/
     * environments, /etc/puppet/code/environments) is read under the environmentpath of this
     * context instead (the folder its environment is in), as when the code is deployed there:
     * `hiera check` and `hiera diff` read a checkout of a control repository whose hiera.yaml
     * names `/etc/puppetlabs/code/environments/%{environment}/hieradata` so. false: the path as
     * written, as Puppet reads it (a lookup on this machine then reads the live files there). */
    bool remap_default_environmentpath;
    /* Without settings and env: whose Puppet's settings are made (see hiera_puppet_version; AUTO:
     * the installed one). With them, their version is the context's and this is ignored. */
    hiera_puppet_version puppet_version;
} hiera_options;
#define HIERA_OPTIONS_INIT {.size = sizeof(hiera_options)}

/* Creates a context. Checks what `puppet lookup` checks before any lookup: the facts rule for
 * hostname/domain/fqdn/clientcert, the trusted hash, that the environment exists and that every
 * Puppet setting resolves (hiera_environment_check). It does not run the environment's
 * config_version (hiera_environment_run_config_version does, as `puppet lookup` would first).
 * Without settings and env in the options, each call builds its own from the options' folders
 * (stat, environment.conf): give them when making many contexts. The facts
 * are sanitized as Puppet::Node::Facts#sanitize does: a value (at any depth, hash keys included)
 * that is not a Hash, Array, number, Boolean or String becomes its to_s (undef -> "", a Symbol
 * -> its name); a fact name that is a Symbol is refused ("Unsupported data type: 'Symbol'").
 * Returns NULL with err on failure. Release with hiera_free. */
HIERA_API hiera *hiera_new(const hiera_options *options, hiera_error *err);
HIERA_API void hiera_free(hiera *h);

/* ------------------------------------------------------------------ snapshots
 *
 * A snapshot is everything parsed from one code directory at one moment: every hiera.yaml (the
 * global one, each environment's, each module's) and every data file one of their levels can name
 * for some node (a location's %{...} read as "any text" over the files that exist). It never
 * changes once built and is shared read-only by any number of threads. Lookups reach it through
 * caches made over it, one per thread: hiera_cache_new_from_snapshot gives a frozen cache (see
 * hiera_cache_freeze) that takes files from the snapshot instead of reading them, and keeps its
 * own work (compiled hierarchies, remembered merges) for the contexts of its thread.
 *
 * Reload is replacement: build a new snapshot when files change, make new caches over it for the
 * next lookups, and release the old one; it is freed when its last cache is. Values that lookups
 * return may hold parts of the snapshot: they stay valid while the snapshot lives (the caller's
 * reference, or any cache made over it).
 *
 * Threads: every function of this section may be called from any thread at any time on the same
 * snapshot; the caches made over it belong to one thread at a time each. */
typedef struct hiera_snapshot hiera_snapshot;

/* Reads the tree o describes (codedir, confdir, environmentpath and hiera_config as hiera_new
 * resolves them; o->environment NULL reads every environment found, else that one; o->cache, when
 * it keeps a disk cache, lends it for parsing). Never NULL: files that do not parse and
 * configurations that are not valid are kept as problems (hiera_snapshot_problems), and the
 * lookups that read them fail as they would without a snapshot. Holds one reference: release with
 * hiera_snapshot_release. err is not used (reserved).
 * Data files are named by a SHA-256 digest of their bytes: while any snapshot of the process holds
 * a parse of the same bytes (another environment's copy of the file, another checkout), it is
 * shared rather than parsed again, and the disk cache keeps parses by content too (the same bytes
 * under any path are one entry). */
HIERA_API hiera_snapshot *hiera_snapshot_new(const hiera_options *o, hiera_error *err);
/* A new snapshot of the tree o describes, as hiera_snapshot_new, where every file whose stat
 * identity (device, inode, size, modification and change times) is the one previous read is not
 * parsed again: the two snapshots share it (a reload after a few files changed parses those
 * files only). previous (BORROWED; NULL: none) may be released at any time after the call. */
HIERA_API hiera_snapshot *hiera_snapshot_update(const hiera_snapshot *previous, const hiera_options *o,
                                               hiera_error *err);
/* hiera_snapshot_update for a caller that watches the tree itself (inotify): changed(path, data)
 * tells whether path -- a file or a folder previous read or listed -- may have changed since
 * previous was built (true: its existence, its bytes or, for a folder, its entries may differ).
 * What it says did not change is taken from previous as it was, without asking the file system,
 * so that a rebuild costs the paths that changed rather than the tree. changed NULL: as
 * hiera_snapshot_update. changed is called on the calling thread during the call; a folder's
 * `false` vouches for its entries' names only, each entry is asked by itself. */
typedef bool (*hiera_path_changed_fn)(const char *path, void *data);
HIERA_API hiera_snapshot *hiera_snapshot_update_changed(const hiera_snapshot *previous, const hiera_options *o,
                                                       hiera_path_changed_fn changed, void *data, hiera_error *err);
/* Another reference to s (returns s); hiera_snapshot_release drops one. Atomic. */
HIERA_API hiera_snapshot *hiera_snapshot_retain(hiera_snapshot *s);
HIERA_API void hiera_snapshot_release(hiera_snapshot *s);
/* A new frozen cache over s for one thread's contexts (hiera_options.cache); it holds a
 * reference on s. Release with hiera_cache_free. */
HIERA_API hiera_cache *hiera_cache_new_from_snapshot(hiera_snapshot *s);
/* What s holds: {"environments": [name...], "configs": [{"path", "layer", "environment",
 * "module", "exists"}...], "files": [{"path", "format", "error"?}...]}. A new reference (valid
 * while s lives). */
HIERA_API hiera_value *hiera_snapshot_describe(const hiera_snapshot *s);
/* The problems met while reading: an array of {"severity", "code" ("config-syntax",
 * "config-invalid", "data-syntax"), "file", "line", "column", "message"} (line and column 0 when
 * unknown). A new reference (valid while s lives). */
HIERA_API hiera_value *hiera_snapshot_problems(const hiera_snapshot *s);

/* ------------------------------------------------------------------ lookups */

enum {
    HIERA_EXPLAIN_DATA = 1,       /* --explain */
    HIERA_EXPLAIN_OPTIONS = 2,    /* --explain-options */
    HIERA_EXPLAIN_PROVENANCE = 4, /* --provenance: where each piece of the value came from */
};

typedef struct {
    size_t size;                      /* sizeof(hiera_request) (HIERA_REQUEST_INIT), or 0 */
    const char *const *keys;          /* names tried in order; the first found wins */
    size_t nkeys;
    const hiera_value *merge;         /* NULL (lookup_options decide), a strategy name string
                                         ("first", "unique", "hash", "deep") or a hash with
                                         "strategy" and deep options; BORROWED */
    const hiera_value *default_value; /* NULL: no default; BORROWED */
    const char *type;                 /* a Puppet type the value must match, or NULL */
    int explain;                      /* HIERA_EXPLAIN_* bits; see hiera_lookup_result */
} hiera_request;
#define HIERA_REQUEST_INIT {.size = sizeof(hiera_request)}

/* Looks keys up as `puppet lookup` does. On HIERA_OK *value receives a new reference (release
 * with hiera_value_decref). HIERA_NOT_FOUND and HIERA_ERROR leave *value NULL; on HIERA_ERROR err
 * is filled. */
HIERA_API hiera_status hiera_lookup(hiera *h, const hiera_request *request, hiera_value **value, hiera_error *err);

/* The common case: one key, lookup_options decide the merge, no default. */
HIERA_API hiera_status hiera_lookup_key(hiera *h, const char *key, hiera_value **value, hiera_error *err);

/* A lookup with what it found out on the way: the same as hiera_lookup, but *result receives (in
 * every case, found or not) an object holding the value, and the explanation and provenance that
 * the request's explain bits asked for. Release it with hiera_result_free. The context keeps
 * nothing of it: lookups made afterwards do not change a result. */
typedef struct hiera_result hiera_result;
HIERA_API hiera_status hiera_lookup_result(hiera *h, const hiera_request *request, hiera_result **result,
                                          hiera_error *err);
HIERA_API void hiera_result_free(hiera_result *r);
/* The value found (or the default), BORROWED from the result; NULL unless the lookup was
 * HIERA_OK. */
HIERA_API hiera_value *hiera_result_value(const hiera_result *r);
/* With HIERA_EXPLAIN_DATA or HIERA_EXPLAIN_OPTIONS: the explanation as Puppet prints it (a
 * malloc'ed string, release with free) or as a tree (a new value: nodes with "type", "branches",
 * "key", "value", "event"...). NULL when the request did not explain. */
HIERA_API char *hiera_result_explanation_text(const hiera_result *r);
HIERA_API hiera_value *hiera_result_explanation_tree(const hiera_result *r);
/* With HIERA_EXPLAIN_PROVENANCE and a value found: the value printed one node per line, each
 * annotated with the layer, hierarchy level, file and line it came from ("merged" for containers
 * a merge built), as a malloc'ed string (release with free); or the same as a tree (a new value:
 * {"key", "value", "provenance": {"layer", "level", "file", "line" | "merged": true, "entries":
 * {key: node} | "elements": [node] | "value"}}). Sensitive values are shown redacted. NULL when
 * there is nothing to show. */
HIERA_API char *hiera_result_provenance_text(const hiera_result *r);
HIERA_API hiera_value *hiera_result_provenance_tree(const hiera_result *r);

/* ------------------------------------------------------------------ enumeration
 *
 * What the context's node sees, as values (render them with hiera_render). Both walk the layers a
 * lookup walks, with the node's facts, and never fail as a whole: a layer, level or file that
 * cannot be used is reported inside the result. Each returns a new reference. */

/* The layers in lookup order (global, environment, then every module of the environment's
 * modulepath, by name), as an array of
 *   {"layer": "global"|"environment"|"module", "module" (module layers), "name" (as --explain
 *    names the provider), "config" (its hiera.yaml, null for a built-in default), "version",
 *    "levels": [{"name", "function" ("yaml_data"...), "kind" ("data_hash", "lookup_key"...),
 *                "locations": [{"original" (as written), "path" (or "uri"), "exists"}]}],
 *    "default_levels" (a module's default_hierarchy, when it has one),
 *    "error": {"message", "file", "line"} (when the layer cannot be used)}. */
HIERA_API hiera_value *hiera_hierarchy(hiera *h);

/* Every key the node can see: the top-level keys of the data files its levels resolve to (a
 * module's data only within the module's namespace; lookup_options left out), as
 *   {"keys": {key: [{"layer", "module", "level", "default_hierarchy" (true when from a module's
 *                     default_hierarchy), "file", "line"}...]},
 *    "lookup_options": [{"layer", "module", "level", "default_hierarchy", "file", "line"}...]
 *                      (where lookup_options is defined: not a key, a lookup never finds it),
 *    "errors": [{"layer", "module", "level", "message", "file", "line"}...]}
 * with each key's definitions in lookup order (the first is what a first-found lookup answers
 * from) and keys in the order first met. Keys are as written in the data: look one up with the
 * key hiera_key_lookup_form gives. */
HIERA_API hiera_value *hiera_keys(hiera *h);

/* The keys of hiera_keys without their definitions, cheaper (what `hiera batch` without keys
 * asks of each node): {"keys": [key...] (as written, in the order first met), "errors": [...]}.
 * A new reference. */
HIERA_API hiera_value *hiera_key_names(hiera *h);

/* The key a lookup must be given to find the top-level data key `data_key` (as hiera_keys lists
 * it): the key itself, or, when it holds a dot or a quote (which a lookup reads as a path into
 * the value, "a.b" being b inside a), the key quoted whole ("\"a.b\"" or "'say \"hi\"'"). A new
 * string (release with free), or NULL when no lookup can reach that key (it holds both quotes
 * and a dot or quote needs quoting; Puppet cannot look it up either). Any thread may call it. */
HIERA_API char *hiera_key_lookup_form(const char *data_key);

/* ------------------------------------------------------------------ comparing (hiera diff)
 *
 * Answers compared as `hiera diff` compares the two sides of a change. Functions of this section
 * take no context: any thread may call them (on values it may read). */

/* Whether a and b are the same answer: Puppet's == with the types kept apart. Hashes hold the same
 * keys with the same values in whatever order (as Puppet's == and Ruby's Hash#== say; where the
 * order changes an answer, through convert_to or interpolation, that answer is an array or a
 * string and is compared in order); arrays in order; an integer is never the same as a float (type
 * checks and the rendered text tell 1 and 1.0 apart); floats by value (NaN the same as NaN);
 * strings byte for byte (Puppet's == ignores case, the files built from values do not); Sensitive
 * values by what they wrap. */
HIERA_API bool hiera_value_same(const hiera_value *a, const hiera_value *b);
/* A hash code consistent with hiera_value_same (to group equal answers). */
HIERA_API uint64_t hiera_value_same_code(const hiera_value *v);
/* Where old and new differ, as a new array of {"path": [segment...], "kind": "changed" | "added" |
 * "removed", "old": v, "new": v} ("old" absent for added, "new" for removed): hashes followed key
 * by key, arrays of the same length index by index, anything else that differs one change at its
 * path (path [] when the whole value differs). Empty when hiera_value_same. */
HIERA_API hiera_value *hiera_value_changes(const hiera_value *old_value, const hiera_value *new_value);
/* A path of hiera_value_changes as Puppet's dotted keys write it ("users.bob.shell", "a.0",
 * '"x.y".z'): a malloc'ed string (release with free). */
HIERA_API char *hiera_value_path_text(const hiera_value *path);
/* The keys v's interpolations look up (lookup(), hiera(), alias(); for a dotted key its first
 * segment), in strings, array elements and hash keys and values, as a new array of strings. */
HIERA_API hiera_value *hiera_value_lookups(const hiera_value *v);

typedef struct {
    size_t size;               /* sizeof(hiera_compare_options), or 0 */
    const char *old_root;      /* the folders the two snapshots were read from (as their options */
    const char *new_root;      /* named them): files are paired by their path relative to these */
    const char *const *keys;   /* the keys to consider; NULL: every key of either side's data */
    size_t nkeys;
    bool full;                 /* look every key up again (no fast path) */
    const char *full_reason;   /* not NULL: look every key up again, for this reason (said in
                                  "reasons"; the caller found a change the snapshots cannot see) */
} hiera_compare_options;

/* What can differ between two snapshots of a code directory, so that only those answers are looked
 * up again: a new hash
 *   {"full": bool (every key may differ), "reasons": [why, when full],
 *    "files": [{"path" (relative), "status": "modified"|"added"|"removed", "kind": "config"|"data",
 *               "keys": [its changed top-level keys]}...],
 *    "keys": [every key considered, sorted], "dirty": [the keys whose answers may differ, sorted],
 *    "changed": [the keys changed in the files themselves],
 *    "reached": [every key whose answer may differ, the keys not considered too: a value met
 *                outside the data (facts) that interpolates one of them may differ as well]}.
 * A hiera.yaml that changed, a data file that does not parse or whose top is not a hash, and
 * lookup_options that cannot be used make every key dirty; otherwise the dirty keys are those
 * whose value or lookup_options entry changed in some file (a lookup_options pattern: every key it
 * matches; in a module: every key of the module), and every key whose values interpolate one of
 * them through lookup(), hiera() or alias(), transitively. Not seen: files that no hierarchy level
 * of either snapshot can name, and the key files of eyaml levels. Any thread; the snapshots are
 * only read. */
HIERA_API hiera_value *hiera_snapshot_compare(const hiera_snapshot *old_snapshot, const hiera_snapshot *new_snapshot,
                                             const hiera_compare_options *options);

/* ------------------------------------------------------------------ editing data files
 *
 * Byte-preserving edits of YAML data files, for tools that change data (the hiera command's
 * `set` and `unset`, hiera serve's page). An edit replaces exactly the bytes of one entry, as
 * libyaml's marks locate them, and leaves every other byte as it was: comments (above and beside
 * the key too), blank lines, key order, indentation, the quoting of other values, document
 * markers, line endings. The edited scalar keeps its style (plain, quoted, block) when the new
 * value allows it. What cannot be edited exactly is refused (HIERA_ERR_REFUSED), never rewritten:
 * the key defined twice in a mapping on the key's path, a merge key (<<) or an anchor or alias in
 * the way, a flow mapping to edit inside, a document that is not a hash, a file that does not
 * parse or is not UTF-8. Every result is read back with Puppet's YAML rules and must equal the old
 * document with the key replaced, or the edit is refused.
 *
 * Functions of this section that take no context may be called from any thread; those that take
 * one follow the rule of contexts (one thread at a time). */

typedef struct {
    size_t size;              /* sizeof(hiera_edit) (HIERA_EDIT_INIT), or 0 */
    const char *file;         /* the file's name in errors (err->file), or NULL */
    /* The key: a top-level key, or a dotted key into its value as lookups take it
     * ("profile::users.bob.shell", '"a.b".c' for a key holding a dot): the hashes on the way are
     * made when missing (an empty or undef value on the way becomes a hash); a segment that is an
     * array index is refused (an edit sets a whole array). */
    const char *key;
    const hiera_value *value; /* set: the new value (BORROWED; no Sensitive inside); NULL: unset */
    bool new_file;            /* the text is of a file that does not exist yet: it starts with "---" */
} hiera_edit;
#define HIERA_EDIT_INIT {.size = sizeof(hiera_edit)}

typedef struct {
    char *text;            /* the new text (malloc'ed, NUL-terminated) */
    size_t len;
    bool changed;          /* false: the key already held exactly this value; text is the old text */
    int first_line;        /* the lines of the old text the edit replaced (1-based, inclusive); an */
    int last_line;         /* insertion before line L: first_line L, last_line L - 1 */
    hiera_value *old_value; /* what the key held, as Puppet reads the file (a new reference), or NULL */
} hiera_edit_result;

/* Edits text (len bytes; NULL or "" for an empty file): sets or removes edit->key. HIERA_OK: *result
 * holds the new text (release with hiera_edit_result_clear). HIERA_NOT_FOUND: unset of a key the
 * text does not hold (nothing to do; *result empty). HIERA_ERROR: err says why: HIERA_ERR_REFUSED
 * with file, line, column and the reason, or HIERA_ERR_FATAL for a bad request (no key, a
 * Sensitive value, a bad dotted key). */
HIERA_API hiera_status hiera_edit_text(const char *text, size_t len, const hiera_edit *edit, hiera_edit_result *result,
                                      hiera_error *err);
HIERA_API void hiera_edit_result_clear(hiera_edit_result *r);

/* A value written in YAML (a command line's VALUE: "8443", "'8443'", "[a, b]", "{uid: 1003}"), read
 * as Puppet reads data files; "" is undef. A new reference, or NULL with err (Psych's message). */
HIERA_API hiera_value *hiera_value_from_yaml(const char *text, size_t len, hiera_error *err);

/* The SHA-256 digest of text, as "sha256:" and 64 hex digits: how edits name the version of a
 * file they start from. A new string (free). */
HIERA_API char *hiera_text_digest(const char *text, size_t len);

/* A unified diff (as diff -u prints it: one hunk around the lines that differ, with 3 lines of
 * context) from old_text to new_text, naming the files old_label and new_label ("/dev/null" for
 * a file that does not exist); "" when the texts are the same. A new string (free). */
HIERA_API char *hiera_text_diff(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
                                const char *old_label, const char *new_label);

/* Reads a data file for an edit: *text (malloc'ed, NUL-terminated; free) and *len. HIERA_OK;
 * HIERA_NOT_FOUND when there is no file (*text ""); HIERA_ERROR with err (not a regular file,
 * larger than 256 MB, unreadable). */
HIERA_API hiera_status hiera_file_read_text(const char *path, char **text, size_t *len, hiera_error *err);

/* Replaces the file at path with text, atomically: a temporary file in the same folder, written
 * and fsync'ed, given the old file's mode and owner (a new file: mode 0666 less the umask, as
 * any new file), renamed over it, and the folder fsync'ed, so a reader sees the old file or the
 * new one, never a part. expected_digest (hiera_text_digest): NULL writes whatever the file is
 * now; "" requires that there is no file; any other the file's current digest; the check and
 * the rename are made under a lock on the folder (flock), so that two edits starting from the
 * same version never both land, in one process or several. HIERA_OK; HIERA_ERROR with err:
 * HIERA_ERR_STALE when the file is not the expected one, HIERA_ERR_FATAL when it cannot be
 * written (the file is left as it was). Any thread. */
HIERA_API hiera_status hiera_file_replace(const char *path, const char *text, size_t len, const char *expected_digest,
                                          hiera_error *err);

/* Where an edit of the context's node goes: the file hierarchy level `level` resolves to for the
 * node, in module `module`'s layer (NULL: the environment's layer, else the global one), as a new
 * hash {"path" (absolute), "exists", "layer" ("global", "environment", "module"), "module"?,
 * "level", "function" ("yaml_data", "eyaml_lookup_key"...), "template" (the location as written),
 * "interpolated" (true when it holds %{...}), "node_variables" (true when it interpolates more
 * than the environment and Puppet's settings: the file is one node's), "eyaml": {"pkcs7_public_key"?,
 * "pkcs7_public_key_env_var"?} (eyaml levels: where its public key is)}. A level with several
 * paths gives its first. NULL with err (HIERA_ERR_REFUSED) when the level cannot name one file:
 * no such level, a glob, globs, mapped_paths or uri level, a function that reads no YAML file
 * (json_data, hocon_data, a custom one), a path that the node's facts leave empty or that the
 * facts rule refuses. */
HIERA_API hiera_value *hiera_edit_target(hiera *h, const char *module, const char *level, hiera_error *err);

/* The levels that can read the file at path (absolute) for some node, in lookup order: an array
 * of hashes as hiera_edit_target gives ("path" being path, "exists" whether it is there now).
 * A location's %{...} stands for any text, as hiera check reads them. A new reference. */
HIERA_API hiera_value *hiera_edit_file_levels(hiera *h, const char *path);

/* Encrypts plain text for an eyaml level: an ENC[PKCS7,...] block (one line) that the level's
 * private key decrypts, with the public key its options name (hiera_edit_target's "eyaml": a
 * pkcs7_public_key file, or a pkcs7_public_key_env_var environment variable holding the PEM
 * text). A new string (free), or NULL with err. Any thread. */
HIERA_API char *hiera_eyaml_encrypt(const char *plain, size_t len, const hiera_value *eyaml_options, hiera_error *err);

HIERA_API const char *hiera_version(void);

/* ================================================================== Hiera 3
 *
 * Lookups as the Hiera 3.10 gem's Ruby class Hiera answers
 * them (Hiera.new(:config => ...), Hiera#lookup(key, default, scope, order_override,
 * resolution_type)), over a v3 (or Hiera 1) hiera.yaml with the yaml, json and eyaml
 * (hiera-eyaml 3.3's PKCS7 blocks, :eyaml: options as that gem reads them) backends.
 *
 * Conventions are those of the rest of this header: a function returning a pointer
 * returns something the caller owns and releases with the function its comment names
 * (hiera3_free, hiera_value_decref, hiera_error_clear); pointer arguments are BORROWED (read
 * during the call, never kept, never released) unless a comment says otherwise.
 *
 * Threads: a hiera3 object and the values it returns belong to one thread at a time; separate
 * objects may be used on separate threads. Unlike Ruby, where the configuration, the logger and
 * the backend objects are process-wide, every hiera3 object has its own.
 *
 * A minimal program:
 *
 *     hiera_error err = {0};
 *     hiera3 *h = hiera3_new("/etc/puppet/hiera.yaml", &err);
 *     if (h)
 *         hiera3_set_logger(h, "noop"); // Hiera's default logger prints debug lines on stderr
 *     hiera_value *scope = hiera_value_new_hash();
 *     hiera_value_hash_set(scope, "environment", hiera_value_new_string("production"));
 *     hiera3_resolution array = {.kind = HIERA3_ARRAY};
 *     hiera_value *v = NULL;
 *     if (h && hiera3_lookup(h, "ntp::servers", NULL, scope, NULL, &array, &v, &err) == HIERA_OK) {
 *         char *json = hiera_render(v, HIERA_RENDER_JSON, &err);
 *         puts(json);
 *         free(json);
 *         hiera_value_decref(v);
 *     } else if (err.message) {
 *         fprintf(stderr, "%s\n", err.message);
 *     }
 *     hiera_value_decref(scope);
 *     hiera3_free(h);
 *     hiera_error_clear(&err);
 */

/* ------------------------------------------------------------------ objects */

typedef struct hiera3 hiera3;

/* Hiera.new(:config => path): loads a v3 hiera.yaml (:backends:, :hierarchy:, :yaml:/:json:
 * with :datadir:, :merge_behavior:, :deep_merge_options:, :logger:) as Hiera::Config.load does:
 * keys are YAML symbols (":backends:"); what the file leaves out keeps Hiera's default
 * (backends [yaml], hierarchy ["nodes/%{::trusted.certname}", "common"], merge_behavior native,
 * the console logger, datadir /etc/puppet/environments/%{environment}/hieradata). Relative
 * datadirs are relative to the working directory at lookup time. config_path NULL means
 * /etc/puppet/hiera.yaml. Returns NULL with err (HIERA_ERR_CONFIG) on failure. Release with
 * hiera3_free. */
HIERA_API hiera3 *hiera3_new(const char *config_path, hiera_error *err);

/* Hiera.new(:config => hash): the configuration given as a hash value, holding what the YAML
 * file would hold. Keys may be strings ("backends", "yaml", "datadir", "knockout_prefix"...);
 * they are taken as the symbols a file would use. BORROWED (copied). NULL or a non-hash value
 * gives the default configuration. Returns NULL with err (HIERA_ERR_CONFIG) on failure. */
HIERA_API hiera3 *hiera3_new_from_config(const hiera_value *config, hiera_error *err);

/* Releases the object (NULL-safe). Values it returned stay valid. */
HIERA_API void hiera3_free(hiera3 *h);

/* ------------------------------------------------------------------ loggers */

typedef enum { HIERA3_LOG_DEBUG = 0, HIERA3_LOG_WARN = 1 } hiera3_log_level;

/* message is BORROWED: valid during the call only. */
typedef void (*hiera3_log_fn)(hiera3_log_level level, const char *message, void *userdata);

/* Hiera.logger = name: "console" writes "DEBUG: <time>: <message>" and "WARN: ..." lines to
 * stderr; "noop" discards everything. Other names behave as in Hiera: "puppet" is not suitable
 * outside Puppet and any other name cannot be loaded; both fall back to the console with a
 * warning. The configuration's :logger: sets the initial logger (default console). */
HIERA_API void hiera3_set_logger(hiera3 *h, const char *name);

/* A caller-supplied logger: fn receives every debug and warning message; userdata is passed
 * through untouched. fn NULL discards messages. */
HIERA_API void hiera3_set_log_callback(hiera3 *h, hiera3_log_fn fn, void *userdata);

/* ------------------------------------------------------------------ lookups */

typedef enum {
    HIERA3_PRIORITY = 0, /* the first level (and backend) that has the key wins */
    HIERA3_ARRAY,        /* every level's value (arrays or strings) flattened, unique, nils dropped */
    HIERA3_HASH,         /* every level's hash merged with the configured :merge_behavior: */
    HIERA3_MERGE,        /* a hash merge with the behavior and deep_merge options given here
                            (Ruby's Hash resolution type); the configured ones are ignored */
} hiera3_resolution_kind;

/* A resolution type. A zeroed struct (or a NULL pointer) is HIERA3_PRIORITY. The fields after
 * `kind` are read for HIERA3_MERGE only; the strings are BORROWED. */
typedef struct {
    size_t size; /* sizeof(hiera3_resolution), or 0 (see "Option structs grow" above) */
    hiera3_resolution_kind kind;
    const char *behavior;        /* "native" (also NULL), "deep" (the lower level wins scalar
                                    conflicts) or "deeper" (the higher level wins) */
    const char *knockout_prefix; /* deep_merge's knockout_prefix, NULL: none */
    bool sort_merged_arrays;
    bool merge_hash_arrays;
    const char *unpack_arrays;   /* deep_merge's unpack_arrays separator, NULL: none */
    int preserve_unmergeables;   /* -1: the behavior's default (true for deep, false for
                                    deeper); 0 or 1 to force it */
} hiera3_resolution;

/* Hiera#lookup(key, default, scope, order_override, resolution_type).
 *  - key: "name", or a dotted key "a.b.0" digging into the found value (priority only);
 *    segments may be quoted ('a.b' or "a.b").
 *  - default_value: NULL for none; a string default is interpolated, as Hiera does.
 *  - scope: a hash of variables for %{var} (string keys; values of any kind), or NULL.
 *  - order_override: a data source searched before the hierarchy (interpolated), or NULL.
 *  - resolution: see hiera3_resolution; NULL is priority.
 * Returns HIERA_OK with *value set to a new reference (release with hiera_value_decref) when the
 * key was found, or when it was not but a default was given (*value is then the default);
 * HIERA_NOT_FOUND with *value NULL when nothing was found and there is no default (Ruby's nil);
 * HIERA_ERROR with *value NULL and err filled (kind HIERA_ERR_CONFIG, HIERA_ERR_INTERPOLATION or
 * HIERA_ERR_LOOKUP). Data files are read once and re-read when they change on disk. */
HIERA_API hiera_status hiera3_lookup(hiera3 *h, const char *key, const hiera_value *default_value,
                                     const hiera_value *scope, const char *order_override,
                                     const hiera3_resolution *resolution, hiera_value **value, hiera_error *err);

/* The text the `hiera` command (Hiera 3.10's bin/hiera) prints for an answer, final newline
 * included: HIERA3_FORMAT_RUBY (its default): a string as `puts` writes it, anything else as Ruby
 * 3.1's `pp` with lines broken at width columns (0: as the command decides when its output is not
 * a terminal: $COLUMNS when set, else 80, less one); HIERA3_FORMAT_JSON (-f json): json 2.6's
 * JSON.dump; HIERA3_FORMAT_YAML (-f yaml): Psych's dump. v NULL is Ruby's nil (what a key not
 * found prints). A new string (release with free), or NULL with err (HIERA_ERR_LOOKUP: a value
 * JSON.dump refuses, such as NaN). Any thread may call it (on a value it may read). */
typedef enum { HIERA3_FORMAT_RUBY = 0, HIERA3_FORMAT_JSON = 1, HIERA3_FORMAT_YAML = 2 } hiera3_format;
HIERA_API char *hiera3_render(const hiera_value *v, hiera3_format format, long width, hiera_error *err);

/* The version of Hiera this API answers as: "3.10.0" (Hiera.version). Static; do not free. */
HIERA_API const char *hiera3_version(void);

#ifdef __cplusplus
}
#endif

#endif
