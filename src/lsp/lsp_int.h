/* lsp_int.h - what the files of hiera lsp share (lsp.h says which file does what). */
#ifndef HIERA_LSP_INT_H
#define HIERA_LSP_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/util.h"
#include "base/value.h"
#include "engine/overlay.h"
#include "engine/snapshot.h"
#include "hiera.h"
#include "puppet/manifest.h"
#include "types/ptype.h"

/* JSON-RPC error codes */
enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
    RPC_SERVER_NOT_INITIALIZED = -32002,
    RPC_REQUEST_FAILED = -32803,
    RPC_REQUEST_CANCELLED = -32800,
};

/* ------------------------------------------------------------------ rpc.c: framing */

/* Largest message body accepted (a bigger one is read past and answered with an error). */
#define RPC_MAX_BODY ((size_t)512 * 1024 * 1024)

typedef struct {
    int fd;
    char *buf;
    size_t len, pos, cap;
} rpc_reader;

/* The next message's body into *body: 1, 0 at the end of input (or a read error), -1 when a
 * message could not be framed (no Content-Length, a body too large): *problem (malloc'ed) says
 * why; reading goes on after it. */
int rpc_read(rpc_reader *r, sbuf *body, char **problem);

typedef struct {
    int fd;
    pthread_mutex_t lock;
    FILE *log;  /* every message in and out, or NULL */
    bool dead;  /* a write failed: the client is gone */
} rpc_writer;

/* Sends msg (rendered as JSON) with its header, whole, under the writer's lock. false when the
 * client is gone. */
bool rpc_send(rpc_writer *w, const hv *msg);
void rpc_log(rpc_writer *w, const char *dir, const char *text, size_t len);
/* Messages (new values). result and params are STOLEN. */
hv *rpc_response(const hv *id, hv *result);
hv *rpc_error(const hv *id, int code, const char *message);
hv *rpc_notification(const char *method, hv *params);

/* JSON access: BORROWED; NULL when o is not an object or has no such member of that kind */
const hv *jget(const hv *o, const char *key);
const char *jstr(const hv *o, const char *key);
const hv *jobj(const hv *o, const char *key);
const hv *jarr(const hv *o, const char *key);
bool jint(const hv *o, const char *key, int64_t *out);
static inline void jset(hv *o, const char *key, hv *v) { hv_hash_sets(o, key, v); }

/* ------------------------------------------------------------------ rpc.c: text and positions
 * LSP positions count UTF-16 code units (the default) or bytes (when the client offers utf-8). */
typedef struct {
    const char *text;
    size_t len;
    bool utf8;   /* characters are bytes */
    size_t *lines; /* where each line starts (lt_index), or NULL: found by scanning */
    size_t nlines;
} ltext;

/* Indexes t's lines, so that positions are found in O(log n) (many findings in one text);
 * lt_index_free releases it. */
void lt_index(ltext *t);
void lt_index_free(ltext *t);

/* The byte offset of an LSP (line, character); clamped to the line's end and the text's end. */
size_t lt_offset(const ltext *t, int64_t line, int64_t character);
/* The LSP position of a byte offset (0-based line, character in the client's units). */
void lt_position(const ltext *t, size_t off, uint32_t *line, uint32_t *character);
/* The byte offset of a 1-based line and 1-based column counted in code points (libyaml's marks). */
size_t lt_offset_lc(const ltext *t, uint32_t line, uint32_t col);
/* The byte offset where 0-based line begins (len when past the end). */
size_t lt_line_start(const ltext *t, uint32_t line);
hv *lsp_position(uint32_t line, uint32_t character);
hv *lsp_range_of(const ltext *t, size_t start, size_t end);
/* file:// URI of an absolute path (percent-encoded), and back (NULL when not a file URI) */
char *uri_of_path(const char *path);
char *path_of_uri(const char *uri);

/* ------------------------------------------------------------------ workspace.c */

typedef struct {
    char *root;          /* the workspace folder (absolute) */
    char **nodes;        /* node names to show */
    size_t nnodes;
    char *facts_dir;
    char *puppetdb;
    char *environment;
    char *codedir;
    char *confdir;
} ws_settings;

void ws_settings_free(ws_settings *s);
void ws_settings_copy(ws_settings *dst, const ws_settings *src);
/* Reads the settings in v (initializationOptions, or didChangeConfiguration's settings: the
 * members directly or under "hiera") over s. */
void ws_settings_apply(ws_settings *s, const hv *v);

typedef struct {
    char *name;     /* NULL: no node given (lookups with no facts) */
    hv *facts;      /* given facts (immortal), or NULL */
    hv *base;       /* stored facts (PuppetDB, a facts cache file; immortal), or NULL */
    char *problem;  /* why its facts could not be had, or NULL */
} ws_node;

/* One data file the hierarchy can read, and its keys */
typedef struct {
    char *path;       /* as the engine names it */
    char *level;      /* the first level that reads it (name), or NULL */
    int layer;        /* 0 global, 1 environment, 2 module */
    int order;        /* hierarchy order across layers and levels (lower first) */
} ws_file;

typedef struct ws {
    int refs;
    ws_settings set;
    char *error;        /* why the workspace cannot be read (nothing else is then set) */
    /* the code as the engine sees it, and where the files really are */
    char *codedir, *confdir, *envpath, *env_name, *env_dir, *real_dir, *hiera_config, *tmpdir;
    const char *check_path; /* what hiera check is given (the root), or NULL with check_codedir */
    hiera_settings *hs;
    hiera_environment *henv;
    snapshot *snap;
    pp_index *pp;
    ptype_aliases *aliases;
    ws_node *nodes;
    size_t nnodes;
    ws_file *files;     /* in hierarchy order */
    size_t nfiles;
    hv *file_index;     /* engine path -> index in files (immortal) */
    hv *key_files;      /* key -> [file index...] in hierarchy order (immortal) */
    hv *module_names;   /* module name -> its folder (immortal) */
    hv_nodes immortal;  /* what was made immortal, freed with the workspace */
} ws;

/* Builds the workspace of s (never NULL: ws->error says when it cannot be read). prev (may be
 * NULL) lends its parses of unchanged files. */
ws *ws_build(const ws_settings *s, const ws *prev);
ws *ws_retain(ws *w);
void ws_release(ws *w);
/* engine path <-> the file's real path (malloc'ed) */
char *ws_real_path(const ws *w, const char *engine_path);
char *ws_engine_path(const ws *w, const char *real_path);
/* A context for node i over cache (a view of the state's overlay), or NULL with err. */
hiera *ws_context(const ws *w, size_t i, hiera_cache *cache, hiera_error *err);
/* A class's parameter that a key names ("profile::base::users"), or NULL. */
const pp_param *ws_class_param(const pp_index *const *idx, size_t nidx, const char *key, const pp_class **cls);

/* ------------------------------------------------------------------ server.c: states */

/* An open document */
typedef struct {
    char *uri;
    char *path;   /* real path, or NULL for a URI that is not a file */
    char *epath;  /* as the engine names it */
    char *text;
    size_t len;
    int64_t version;
} ldoc;

/* What a request reads: the workspace and the open documents at one moment (immutable) */
typedef struct lstate {
    int refs;
    ws *w;
    overlay *ov;   /* the open documents over the workspace's snapshot */
    ldoc *docs;
    size_t ndocs;
    pp_index *pp_open; /* the open manifests, read from their text */
    bool utf8;
} lstate;

lstate *lstate_retain(lstate *s);
void lstate_release(lstate *s);
const ldoc *lstate_doc(const lstate *s, const char *uri);
/* The text of a file: the open document's, else the file's (malloc'ed), or NULL. */
char *lstate_text(const lstate *s, const char *real_path, size_t *len);

/* A request being answered */
typedef struct {
    lstate *s;
    const hv *params;
    volatile int *cancelled;
    int err_code;   /* set with err_msg to answer with an error */
    char *err_msg;
} lreq;

/* ------------------------------------------------------------------ features.c */

hv *feat_hover(lreq *r);
hv *feat_definition(lreq *r);
hv *feat_references(lreq *r);
hv *feat_completion(lreq *r);
hv *feat_code_action(lreq *r);
hv *feat_document_symbol(lreq *r);
hv *feat_lookup(lreq *r);
/* The README section of a check rule (a URL) */
char *rule_link(const char *rule);
/* The syntax error of a document's text (a diagnostic), or NULL when it parses. */
hv *doc_syntax_error(const lstate *s, const ldoc *d);

#endif
