/* serve.h - `hiera serve`: Hiera's answers over HTTP from an always-current snapshot of the code
 * directory, and a web page to browse them.
 *
 *   state.c    the generation served (a snapshot of the code directory and the facts of the
 *              nodes), rebuilt in the background when files change (inotify) or on SIGHUP, and
 *              swapped in whole; each server thread keeps its own cache over it
 *   http.c     the server (libmicrohttpd: a pool of threads, limits, TLS and client certificates),
 *              who is asking, the access log, draining on SIGTERM
 *   metrics.c  what the server counts, in Prometheus' text format
 *   routes.c   the JSON API (/v1/...), /healthz, /metrics, and the page's files
 *   assets.c   the page (index.html, app.js, style.css) compiled into the binary (generated) */
#ifndef HIERA_SERVE_H
#define HIERA_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>

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
} serve_options;

/* Runs the server until SIGTERM or SIGINT. Returns the exit status. */
int serve_run(const serve_options *o);

/* ------------------------------------------------------------------ state.c */

/* What is served at one moment. Immutable once published; counted references. */
typedef struct generation {
    int refs;                /* atomic */
    uint64_t id;             /* 1, 2, ... */
    hiera_snapshot *snap;
    hv *facts;               /* node name -> facts (immortal values) */
    hv *nodes;               /* the node names, sorted (immortal) */
    hv *facts_errors;        /* node -> message of a facts file that cannot be read (immortal) */
    hv *facts_stored;        /* node -> true when its file is one of Puppet's YAML facts cache: the
                                node's stored facts (hiera_options.base_facts), as hiera batch reads them */
    struct facts_set *fs;    /* holds facts, nodes, facts_errors and facts_stored (immortal), counted:
                                generations built without fetching PuppetDB's facts again share it */
    /* hiera check's findings over the tree (routes.c), made when first asked: environment name
     * ("" for every environment) -> JSON text; guarded by check_lock */
    pthread_mutex_t check_lock;
    hv *checks;
    time_t built;
    double build_seconds;
    size_t files, reused;    /* files in the snapshot; taken unchanged from the previous one */
    /* Puppet's settings (puppet.conf and the command line's folders) as of the build, and the
     * environments requests asked for, loaded once each (under envs_lock) */
    hiera_settings *settings;
    pthread_mutex_t envs_lock;
    struct served_env {
        char *name;
        hiera_environment *env; /* NULL: it cannot be loaded (error says why) */
        char *error;
    } *envs;
    size_t nenvs;
} generation;

typedef struct {
    const serve_options *o;
    uint64_t next_id;
    /* what is served (the mutex guards the pointer: readers retain under it) */
    generation *current;
    /* the last reload that was refused: the problems it would have introduced, as JSON (NULL:
     * none); guarded by the same mutex */
    char *refused;
    time_t refused_at;
    uint64_t reloads_ok, reloads_refused; /* atomic */
} serve_state;

/* Builds the first generation (false with a message when the tree cannot be served at all:
 * PuppetDB cannot list its nodes). */
bool state_init(serve_state *st, const serve_options *o);
/* The environment `name` of generation g, loaded on first use (BORROWED: valid while g is), or
 * NULL with *error (BORROWED) saying why it cannot be. */
const hiera_environment *state_environment(generation *g, const char *name, const char **error);
/* The generation served now, retained (release with generation_release). */
generation *state_current(serve_state *st);
void generation_release(generation *g);
/* Builds a new generation and swaps it in, unless it brings errors the served one has not (then
 * it is refused: kept in st->refused, the old one goes on). fetch: PuppetDB's nodes and facts
 * are fetched again (else the served ones are kept). Returns true when swapped. */
bool state_reload(serve_state *st, const char *why, bool fetch);
/* The refused reload's problems as JSON (malloc'ed, or NULL when the last reload was taken) and
 * when it was refused. */
char *state_refused(serve_state *st, time_t *at);
/* Starts the thread that watches the code directory and the facts folder (inotify) and reloads
 * after changes settle; state_request_reload wakes it (SIGHUP). */
bool state_watch(serve_state *st);
void state_request_reload(serve_state *st);
void state_stop(serve_state *st);
void state_free(serve_state *st);

/* The calling thread's cache over generation g (made when g is new to the thread, dropped with
 * the thread). BORROWED. */
hiera_cache *state_thread_cache(generation *g);
/* The calling thread's kept context for node in env (facts from g, redaction as given), or NULL;
 * a context returned or kept is the thread's until state_thread_context_done. _keep makes h (a
 * context made with state_thread_cache(g)) the kept one when the thread holds none in use; _done
 * ends the use of a context: the kept one stays for the next request, any other is freed. */
hiera *state_thread_context(generation *g, const char *env, const char *node, bool redact);
void state_thread_context_keep(generation *g, hiera *h, const char *env, const char *node, bool redact);
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
