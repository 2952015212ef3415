/* serve.h - `hiera serve`: Hiera's answers over HTTP from an always-current snapshot of the code
 * directory, and a web page to browse them.
 *
 *   state.c    what is served: the nodes' facts and the environments, each built when first
 *              asked and rebuilt when what it reads changes (inotify: the paths named are read
 *              again, nothing else), a watcher that never looks away; each server thread keeps
 *              its own caches over the environments it answers
 *   http.c     the server (libmicrohttpd: a pool of threads, limits, TLS and client certificates),
 *              who is asking, the access log, draining on SIGTERM
 *   metrics.c  what the server counts, in Prometheus' text format
 *   routes.c   the JSON API (/v1/...), /healthz, /metrics, and the page's files
 *   edit.c     /v1/edit: changing data (--allow-edits, admins only), with the fleet's impact
 *   assets.c   the page (index.html, app.js, style.css) compiled into the binary (generated) */
#ifndef HIERA_SERVE_H
#define HIERA_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>

#include "base/util.h"
#include "base/value.h"
#include "hiera.h"

typedef struct {
    /* the tree and the nodes */
    const char *codedir, *confdir, *environmentpath, *hiera_config;
    const char *environment; /* the default environment of requests (production) */
    const char *facts_dir;   /* one facts file per node, or NULL */
    /* or the nodes from elsewhere (PuppetDB: the command gives them through include/hiera_fleet.h), or
     * NULL. fetch puts every node's facts into facts (name -> hash) and why it has none into
     * errors (name -> message); false with *why (malloc'ed) when the nodes cannot be listed.
     * Called by the thread that builds generations, one call at a time. */
    struct serve_nodes {
        bool (*fetch)(void *data, hv *facts, hv *errors, char **why);
        void *data;
        const char *what; /* "PuppetDB at URL" for messages */
    } *puppetdb;
    unsigned puppetdb_refresh; /* seconds between fetches of PuppetDB's facts (0: on SIGHUP only) */
    bool unsafe_fact_paths;
    bool watch;              /* reload when files change (inotify) */
    /* the server */
    const char *listen;      /* "ADDR:PORT" or "PORT"; default 127.0.0.1:8150 */
    unsigned threads;        /* 0: one per CPU */
    const char *tls_cert, *tls_key; /* PEM files: HTTPS */
    const char *tls_ca;      /* PEM CA bundle: client certificates are asked for and verified */
    const char *admins;      /* comma-separated certificate names that may read everything */
    const char *token_file;  /* a file holding a bearer token that may read everything */
    const char *access_log;  /* a file, "-" for stderr, or NULL (no log) */
    size_t max_body;         /* bytes of a request body */
    unsigned max_connections;
    unsigned timeout;        /* seconds a connection may stay idle or send its request */
    unsigned request_time;   /* seconds of work a batch request may take */
    /* edits through /v1/edit and the page (--allow-edits, admins only: edit.c), NULL when off */
    struct serve_edits {
        const char *audit_log; /* a file getting one JSON line per edit saved, or NULL */
        bool commit;           /* commit each saved edit in the git work tree holding the file */
        /* what an edit would do (the command's: hiera diff over the served nodes, hiera check):
         * a new hash {"impact" (hiera diff's JSON document, or null), "impact_note"?, "findings",
         * "check_note"?}, or NULL; called from a server thread, any number at once */
        hiera_value *(*effects)(void *data, const char *environment, const char *file, const char *text, size_t len);
        /* commits file (git add, git commit of it alone) with that author and message; false with
         * *note (malloc'ed) when it could not; *note also when there was nothing to commit in */
        bool (*commit_file)(void *data, const char *file, const char *author, const char *message, char **note);
        void *data;
    } *edits;
    uint64_t max_memory;     /* bytes of parsed environments kept; 0: no bound */
    hiera_cache *disk;       /* a cache whose disk cache the builds use (parses by content), or NULL */
} serve_options;

/* Runs the server until SIGTERM or SIGINT. Returns the exit status. */
int serve_run(const serve_options *o);

/* ------------------------------------------------------------------ state.c */

/* Puppet's settings (puppet.conf and the command line's folders) as of a load, counted: the
 * environments built with them hold them. */
typedef struct settings_ref {
    int refs; /* atomic */
    hiera_settings *s;
} settings_ref;

/* One build of one environment: a snapshot of it (its hiera.yaml and data files, its modules',
 * the global layer's), with the settings and environment (environment.conf, modulepath) it was
 * read with. Immutable; counted (the environment's slot holds one reference, each server thread
 * that keeps a cache over it another). */
typedef struct env_build {
    int refs;                 /* atomic */
    char *name;
    hiera_snapshot *snap;
    settings_ref *settings;
    hiera_environment *env;   /* NULL: error says why it cannot be loaded */
    char *error;
    hv *errors;               /* its snapshot's error problems, by "code\nfile\nmessage" */
    time_t built;
    double build_seconds;
    size_t files, parsed, shared, reused, looked, own_bytes; /* (engine/snapshot.h snapshot_counts) */
    int retired;              /* atomic: no longer its slot's (replaced, evicted): caches over it go */
} env_build;

/* An environment of the environmentpath (or Puppet's default environment when no folder holds
 * production): built when first asked, rebuilt when what it reads changes, dropped beyond
 * --max-memory. Shared by the generations that list it. */
typedef struct env_slot {
    int refs; /* atomic */
    char *name;
    bool listed;              /* a folder of the environmentpath */
    pthread_mutex_t lock;     /* guards what follows */
    pthread_cond_t cond;      /* a build finished */
    env_build *built;         /* NULL: not built yet, or dropped */
    bool building;
    uint64_t seq;             /* the watcher's count of changes when its build began */
    char *refused;            /* the problems a refused rebuild would have brought (JSON), or NULL */
    time_t refused_at;
    uint64_t used_ms;         /* atomic: when it was last asked for */
} env_slot;

/* What is served at one moment: the nodes and their facts, and the environments. Counted; a new
 * one is published for each change that is served. */
typedef struct generation {
    int refs;                /* atomic */
    uint64_t id;             /* 1, 2, ... */
    hv *facts;               /* node name -> facts (immortal values) */
    hv *nodes;               /* the node names, sorted (immortal) */
    hv *facts_errors;        /* node -> message of a facts file that cannot be read (immortal) */
    hv *facts_stored;        /* node -> true when its file is one of Puppet's YAML facts cache: the
                                node's stored facts (hiera_options.base_facts), as hiera batch reads them */
    struct facts_set *fs;    /* holds facts, nodes, facts_errors and facts_stored (immortal), counted:
                                generations built without fetching PuppetDB's facts again share it */
    /* the environments by name (sorted), listed ones and any other asked for (production with no
     * folder); under envs_lock, which guards adding to it */
    pthread_mutex_t envs_lock;
    env_slot **envs;
    size_t nenvs, envs_cap;
    /* hiera check's findings over the tree (routes.c), made when first asked: environment name
     * ("" for every environment) -> JSON text; guarded by check_lock */
    pthread_mutex_t check_lock;
    hv *checks;
    time_t built;            /* when it was published */
    double build_seconds;    /* what building it took (the environments rebuilt, the facts read) */
    size_t files, parsed;    /* files in the environments it rebuilt; of them, parsed */
} generation;

typedef struct serve_state {
    const serve_options *o;
    pthread_mutex_t lock;    /* guards current (readers retain under it) and the settings */
    pthread_mutex_t publish_lock; /* one publisher at a time (the builder, state_rebuild_now),
                                     each making the next generation from the one served */
    pthread_cond_t facts_cond; /* the facts folder has been read */
    generation *current;
    uint64_t next_id;
    settings_ref *settings;  /* the latest (NULL: puppet.conf cannot be resolved) */
    uint64_t reloads_ok, reloads_refused, evictions, builds; /* atomic */
    int warmed;              /* atomic: the builder has read the facts and built the default environment
                                (what it does first): systemd is told READY=1 then */
    struct watch *w;         /* the watcher (state.c) */
    pthread_t builder;
    bool running;
    uint64_t unserved;       /* atomic: changes taken by the builder and not served yet */
    double started;
} serve_state;

/* Prepares what is served (the settings, the nodes and their facts, the list of environments:
 * no environment is built yet) and starts watching (when o->watch). false with a message when
 * the tree cannot be served at all (PuppetDB cannot list its nodes). */
bool state_init(serve_state *st, const serve_options *o);
/* Starts the thread that builds: the default environment first, then whatever changes (and
 * SIGHUP, PuppetDB's refresh); state_request_reload wakes it (SIGHUP). */
bool state_start(serve_state *st);
void state_request_reload(serve_state *st);
void state_stop(serve_state *st);
void state_free(serve_state *st);

/* The generation served now, retained (release with generation_release). */
generation *state_current(serve_state *st);
void generation_release(generation *g);
/* Environment `name` of g, ready to answer: built now when it is not (the calling thread waits
 * for it), retained (release with env_build_release). NULL with *status and *error (malloc'ed)
 * when there is no such environment or it cannot be loaded. */
env_build *state_env(serve_state *st, generation *g, const char *name, int *status, char **error);
void env_build_release(env_build *b);
/* Whether g's facts are still being read (the server starts answering before: a request for a
 * node reads its own facts file, state_node_facts_now); state_wait_facts waits until they are. */
bool state_facts_loading(const generation *g);
void state_wait_facts(serve_state *st);
/* The facts of node read from its file in the facts folder now (a new reference; *stored: a file
 * of Puppet's facts cache), or NULL, with *error (malloc'ed) when the file cannot be read, else
 * without (no file). */
hiera_value *state_node_facts_now(serve_state *st, const char *node, bool *stored, char **error);
/* For a change the server made itself (an edit saved): rebuilds environment name (NULL: every
 * environment built) at once from its build, after any build of it under way, rather than when
 * the watcher's events settle, and publishes a new generation, whose id goes to *generation_id
 * (when not NULL): the next request reads what was written. An environment not built yet is read
 * whole when first asked. false when a rebuild was refused (it would bring new errors: the last
 * good build goes on serving, /healthz says degraded). Blocks the caller; any thread. */
bool state_rebuild_now(serve_state *st, const char *name, const char *why, uint64_t *generation_id);
/* The environments of g that are folders of the environmentpath (a new array of names). */
hv *state_env_names(generation *g);

/* What is not served yet and what is held, for /healthz and /metrics (events the kernel holds
 * are read first: a change made before the call is counted). */
typedef struct {
    size_t pending;           /* changes seen and not served yet (being built included) */
    double pending_seconds;   /* how long the oldest has waited */
    size_t envs_listed, envs_built;
    size_t parses, parse_bytes, env_bytes; /* parses held (shared by content), their memory, the
                                             environments' own tables */
    char *refused;            /* JSON array of the problems refused rebuilds would bring, or NULL */
    time_t refused_at;
} state_status;
void state_status_of(serve_state *st, state_status *out); /* free out->refused */

/* The calling thread's cache over build b (made when b is new to the thread: each thread keeps
 * a few, the most recently used; one whose build was replaced is dropped). BORROWED: valid until
 * the thread's next call. */
hiera_cache *state_thread_cache(env_build *b);
/* The calling thread's kept context for node in b with facts (a generation's facts_set: the
 * facts it was made from), redaction as given, or NULL; a context returned or kept is the
 * thread's until state_thread_context_done. _keep makes h (a context made with
 * state_thread_cache(b)) the kept one when the thread holds none in use; _done ends the use of a
 * context: the kept one stays for the next request, any other is freed. */
hiera *state_thread_context(env_build *b, const void *facts, const char *node, bool redact);
void state_thread_context_keep(env_build *b, const void *facts, hiera *h, const char *node, bool redact);
void state_thread_context_done(hiera *h);

/* ------------------------------------------------------------------ http.c / routes.c */

typedef enum { WHO_ANYONE, WHO_NODE, WHO_ADMIN } who_kind;

/* Who is asking: anyone (no authentication configured, or none given: see http.c), a node (its
 * certificate's name), or an admin. */
typedef struct {
    who_kind kind;
    char name[256];  /* the certificate name, "token", or "" */
    bool authenticated_required; /* authentication is configured: anonymous callers are refused */
} who;

typedef struct {
    int status;
    const char *content_type;
    char *body;   /* malloc'ed */
    size_t len;
    const char *cache_control;
} response;

/* The request as routes.c sees it. */
typedef struct {
    const char *method, *path;
    const char *(*arg)(void *conn, const char *name); /* a query argument, or NULL */
    void *conn;
    const char *body;
    size_t body_len;
    who who;
    serve_state *st;
    const serve_options *o;
} request;

/* Answers one request (routes.c); the endpoint's name for metrics goes to *endpoint. */
void route(const request *rq, response *out, const char **endpoint);
/* An answer: v as JSON (as hiera lookup --render-as json prints it), v BORROWED (routes.c). */
void serve_reply(response *out, int status, hiera_value *v);
/* An error answer: {"error": the message formatted from fmt} (routes.c). */
void serve_reply_error(response *out, int status, const char *fmt, ...) HIERA_PRINTF(3, 4);
/* What a field of a request's JSON body must be: one of types (SERVE_F_*), and, when name_like,
 * a string (or strings) without a control character (a NUL would cut a name short). */
enum { SERVE_F_STRING = 1, SERVE_F_STRINGS = 2, SERVE_F_HASH = 4, SERVE_F_BOOL = 8, SERVE_F_ANY = 16, SERVE_F_INT = 32 };
typedef struct {
    const char *name;
    unsigned types;
    bool name_like;
} serve_field;
/* Whether every field of body (a hash, BORROWED) that fields[0..n) lists is as it says; false with
 * a 400 answered naming the first that is not (a "merge" object's own fields checked too). Fields
 * not listed are left to the endpoint (routes.c). */
bool serve_body_fields_ok(const hiera_value *body, const serve_field *fields, size_t n, response *out);
/* Environment env of g as state_env gives it (retained), or NULL with the error answered (its
 * status, 422 by default; routes.c). */
env_build *serve_env_or_reply(const request *rq, generation *g, const char *env, response *out);
/* Answers /v1/edit (edit.c), from generation g (BORROWED). */
void serve_edit(const request *rq, generation *g, response *out);

/* ------------------------------------------------------------------ metrics.c */

void metrics_start(void);                                                  /* the uptime's origin */
void metrics_request(const char *endpoint, int status, double seconds);    /* http.c, per request */
void metrics_lookup(int outcome);                                          /* 0 found, 1 not found, 2 error */
char *metrics_render(serve_state *st, size_t *len);                        /* Prometheus text (malloc'ed) */

/* The page's files (assets.c, generated from src/serve/web/). */
typedef struct {
    const char *path; /* "/", "/app.js", ... */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} asset;
extern const asset SERVE_ASSETS[];
extern const size_t SERVE_NASSETS;

#endif
