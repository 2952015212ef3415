/* hocon_int.h - what the files of the HOCON reader share: the parse context and its errors, the
 * node model, tokens, the resolver's context, and the functions each file offers the others.
 * Internal to src/formats/hocon*.c; the rest of the library uses formats/hocon.h.
 *
 *   hocon.c          the overview and the public API (hocon_parse)
 *   hocon_resolve.c  the resolver (substitutions, delayed merges, cycles)
 *   hocon_parse.c    the parser (ConfigDocumentParser and ConfigParser in one pass) and includes
 *   hocon_merge.c    merging (with_fallback) and value concatenation, used by parser and resolver
 *   hocon_lex.c      characters, numbers, and the pull lexer (the gem's Tokenizer)
 *   hocon_node.c     errors, the work bound, nodes and objects
 *
 * Functions named hc_* are shared between these files; each file calls only those listed below
 * it. */
#ifndef HIERA_HOCON_INT_H
#define HIERA_HOCON_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <unistd.h>
#undef R_OK /* access()'s flag (from <unistd.h> and <fcntl.h>); the name is a resolve result here */

#include "base/util.h"
#include "base/value.h"

#define MAX_PARSE_DEPTH 500    /* nested objects/arrays (and dotted key parts) in one document */
#define MAX_RESOLVE_DEPTH 1000 /* nested resolve calls (substitution chains) */
#define MAX_WORK 2000000L      /* bound on the total work, see hc_work() */
#define MAX_INCLUDE_DEPTH 50   /* Parseable::MAX_INCLUDE_DEPTH */
#define MAX_OCTAL_DIGITS 100000

/* ---- errors (hocon_node.c) ---- */

typedef struct {
    herr *err;
    const char *name; /* the data file, as given by the caller */
    bool failed;
    char **origins; /* names of included files (node origins point into this) */
    size_t norigins;
    int include_depth;
    long work; /* units of work done (values copied by merges, resolve calls) */
    bool merge_loaded; /* this parse's view of hc_delayed_merge_loaded (see delay_merge) */
} hctx;

enum { E_CONFIG, E_NO_ORIGIN, E_RUBY };

void hc_failv(hctx *cx, int how, const char *org, int line, int col, const char *fmt, va_list ap);
void hc_fail(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
void hc_fail_ruby(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
void hc_fail_bare(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
bool hc_work(hctx *cx, size_t units);
void hc_rewrap_unexpected(hctx *cx);

/* ---- nodes and objects (hocon_node.c) ---- */

enum {
    N_NULL,     /* ConfigNull */
    N_BOOL,     /* ConfigBoolean */
    N_NUM,      /* ConfigInt / ConfigDouble: value plus the original text */
    N_STR,      /* ConfigString (Quoted or Unquoted) */
    N_OBJ,      /* SimpleConfigObject */
    N_LIST,     /* SimpleConfigList */
    N_REF,      /* ConfigReference: ${path} or ${?path} */
    N_CONCAT,   /* ConfigConcatenation: pieces waiting for substitutions */
    N_MERGE,    /* ConfigDelayedMerge: stack of values, newest first */
    N_MERGEOBJ, /* ConfigDelayedMergeObject: the same, known to become an object */
};

typedef struct node node;
struct node {
    unsigned char kind;
    bool unresolved; /* resolve status: contains references somewhere */
    bool ignores;    /* N_OBJ: ignores fallbacks (it was merged over a non-object) */
    bool quoted;     /* N_STR: Quoted (or joined), as opposed to one unquoted token */
    bool optional;   /* N_REF: ${?...} */
    int refs;
    int line, col;
    const char *org; /* origin: NULL for the document, else an included file */
    hv *val;         /* primitives: the data value */
    hv *text;        /* N_NUM: the original text, used when concatenated */
    size_t n, cap;
    size_t front;    /* N_OBJ: free slots before items/keys in their allocations (obj_prepend) */
    node **items;    /* N_OBJ values, N_LIST elements, N_CONCAT pieces, N_MERGE* stack */
    hv **keys;       /* N_OBJ keys, N_REF path elements (hv strings) */
    uint32_t *index; /* N_OBJ: open-addressing index (front + position + 1), for larger objects */
    size_t icap;
    size_t prefix; /* N_REF: length of the include prefix the path was relativized with */
    int marked;    /* N_REF: being resolved (a cycle marker) */
    signed char badpath; /* N_REF: its path cannot be written in messages (-1: not known yet) */
};

static inline node *hc_nref(node *n)
{
    if (n)
        n->refs++;
    return n;
}

static inline bool is_unmergeable(const node *v)
{
    return v->kind == N_REF || v->kind == N_CONCAT || v->kind == N_MERGE || v->kind == N_MERGEOBJ;
}
static inline bool is_objectish(const node *v) { return v->kind == N_OBJ || v->kind == N_MERGEOBJ; }
static inline bool is_container(const node *v)
{
    return v->kind == N_OBJ || v->kind == N_MERGEOBJ || v->kind == N_LIST || v->kind == N_CONCAT ||
           v->kind == N_MERGE;
}

node *hc_nnew(int kind, int line, int col, const char *org);
void hc_nfree(node *n);
void hc_items_push(node *n, node *child); /* steals child; objects use hc_obj_append */
node *hc_nprim(int kind, hv *val, int line, int col, const char *org);
node *hc_nstr(hv *s, bool quoted, int line, int col, const char *org);
void hc_fix_status(node *n);
uint64_t hc_key_hash(const char *s, size_t n);
long hc_obj_find(node *o, const char *s, size_t n);
node *hc_obj_get(node *o, const hv *key);
void hc_obj_append(node *o, hv *key, node *val);  /* a key known to be absent; steals both */
void hc_obj_prepend(node *o, hv *key, node *val); /* the same, put first */
void hc_obj_put(node *o, hv *key, node *val);     /* Ruby Hash#[]=; steals both */
node *hc_obj_new_like(const node *o);
node *hc_shallow_copy(const node *v);

/* ---- merging and concatenation (hocon_merge.c) ---- */

typedef struct {
    node **v;
    size_t n, cap;
} nvec;

void hc_nv_push(nvec *a, node *v);
void hc_nv_free(nvec *a);

/* Whether a parse may make a ConfigDelayedMergeObject yet (see hocon_merge.c). */
extern atomic_bool hc_delayed_merge_loaded;

bool hc_ignores_fallbacks(const node *v);
node *hc_with_fallback(hctx *cx, node *self, node *other);
node *hc_with_fallback_into(hctx *cx, node *self, node *other);
bool hc_ref_badpath(node *r);
bool hc_value_render_raises(hctx *cx, const node *v);
int hc_consolidate(hctx *cx, node **pieces, size_t n, nvec *out);
int hc_concatenate(hctx *cx, node **pieces, size_t n, node **out);

/* ---- characters and the lexer (hocon_lex.c) ---- */

size_t hc_utf8_char(const unsigned char *s, size_t n, long *cp);
bool hc_is_cntrl_cp(long c);

typedef enum {
    T_EOF,
    T_ERROR, /* a problem; the error is already recorded */
    T_COMMA,
    T_COLON,
    T_EQUALS,
    T_PLUSEQ,
    T_LBRACE,
    T_RBRACE,
    T_LBRACKET,
    T_RBRACKET,
    T_NEWLINE,
    T_WS,  /* ignored whitespace */
    T_UNQ, /* unquoted text (also whitespace between two simple values) */
    T_STRING,
    T_NUMBER,
    T_TRUE,
    T_FALSE,
    T_NULL,
    T_COMMENT,
    T_SUBST,
} ttype;

typedef struct {
    ttype type;
    int line, col;
    bool wsonly; /* T_UNQ made of the blanks between two simple values */
    hv *str;     /* T_UNQ text, T_STRING value, T_NUMBER original text */
    hv *num;       /* T_NUMBER value */
    node *ref;     /* T_SUBST */
    char *problem; /* T_ERROR: the tokenizer's problem; T_SUBST: why its path is invalid */
    bool pruby;    /* the problem is a Ruby exception in the gem, not a ConfigError */
} token;

/* Tokenizer::WhitespaceSaver: the blanks right before the next token */
typedef struct {
    size_t start, end;
    int line, col;
    bool last_simple;
} wsaver;

typedef struct {
    hctx *cx;
    const char *org;
    const unsigned char *s;
    size_t len, pos;
    int line, col;
    int subst_depth;
    wsaver ws;
    char *problem; /* the problem found while lexing the current token */
    int pline, pcol;
    bool pruby;
    token q[2]; /* lexed tokens not handed out yet (a whitespace token and the next one) */
    int nq;
    token back[8]; /* the parser's put-back stack */
    int nback;
} lexer;

/* PathParser: builds path elements from text pieces; a period splits elements unless quoted */
typedef struct {
    sbuf *el;
    bool *can_empty;
    size_t n, cap;
    bool any;
} pbuild;

void hc_tok_free(token *t);
void hc_tok_describe(sbuf *b, const token *t);
void hc_pb_free(pbuild *pb);
bool hc_pb_token(pbuild *pb, const token *t);
hv **hc_pb_finish(pbuild *pb, size_t *n, const char **why);
node *hc_ref_new(hv **keys, size_t n, bool optional, int line, int col, const char *org);
void hc_lx_next(lexer *L, token *t);
void hc_lx_back(lexer *L, token *t);
void hc_lx_free(lexer *L);

/* ---- the parser and includes (hocon_parse.c) ---- */

void hc_ref_describe(sbuf *b, const node *r);
node *hc_parse_document(hctx *cx, const char *text, size_t len, const char *org, const char *dir);
bool hc_read_file(const char *path, sbuf *out, int *err_no);

/* ---- the resolver (hocon_resolve.c) ---- */

enum { R_OK = 0, R_ERR = -1, R_CYCLE = -2 /* NotPossibleToResolve */ };

/* ResolveSource: the root to look substitutions up in, and (when known) the chain of containers
 * from that root down to the value being resolved, which a delayed merge uses to replace itself */
typedef struct {
    node *root;
    node **par; /* par[0] is the root end, par[npar - 1] the innermost container */
    size_t npar;
    bool has;
} rsrc;

/* a restriction to a child path (resolve only along it); NULL means resolve everything */
typedef struct {
    hv *const *k;
    size_t n;
} rpath;

typedef struct {
    hctx *cx;
    nvec trace;  /* references on the resolve stack, for the cycle message (borrowed) */
    size_t nbad; /* how many of them have a path that cannot be written in messages */
    int depth;
    char *cycle; /* the trace when a cycle was found, if the reference catching it needs it */
} rctx;

void hc_src_set(rsrc *s, node *root, node *const *par, size_t npar, bool has);
void hc_src_free(rsrc *s);
void hc_bug(rctx *R, const char *msg);
int hc_resolve(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out);

#endif
