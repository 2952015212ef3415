/* yscan.h - a YAML file as libyaml reads it, with where everything is (yscan.c).
 *
 * `hiera check` points at scalars: a duplicate key, an unquoted `yes`, a `%{...}` in a value. The
 * loader (formats/psych.h) gives values with their line only and forgets how a scalar was
 * written; this pass keeps, for every node of every document, its start and end (line and
 * column, 1-based), its style (plain, quoted, block), its tag and anchor, and the scalar text
 * as libyaml gives it (escapes resolved). It resolves nothing: whether a plain scalar is a
 * string, a boolean or a number is psych.h's yaml_plain_scalar. */
#ifndef HIERA_CHECK_YSCAN_H
#define HIERA_CHECK_YSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { YS_SCALAR, YS_SEQ, YS_MAP, YS_ALIAS } ys_kind;

typedef enum {
    YS_PLAIN,
    YS_SINGLE,  /* 'quoted' */
    YS_DOUBLE,  /* "quoted" */
    YS_LITERAL, /* | */
    YS_FOLDED,  /* > */
    YS_BLOCK,   /* a block collection */
    YS_FLOW,    /* a flow collection: [..] {..} */
} ys_style;

typedef struct ysnode {
    uint8_t kind;  /* ys_kind */
    uint8_t style; /* ys_style */
    uint32_t line, col;   /* start, 1-based */
    uint32_t eline, ecol; /* end (just past the node), 1-based */
    const char *tag;      /* as libyaml resolved it ("tag:yaml.org,2002:str", "!ruby/sym"), or NULL */
    const char *anchor;   /* or NULL */
    const char *text;     /* a scalar's value (NUL-terminated, may hold NULs: see len), an alias' name */
    size_t len;
    struct ysnode **kids; /* a sequence's items; a mapping's keys and values, alternating */
    uint32_t n;           /* number of kids (a mapping: twice its entries) */
    uint32_t *index;      /* a large mapping's scalar keys' entry numbers sorted by text, or NULL */
    uint32_t nindex;
} ysnode;

typedef struct {
    ysnode **docs; /* the root of each document (an empty document has a NULL root) */
    size_t ndocs;
    bool failed;   /* a syntax error stopped the scan: what came before it is kept */
    char *error;   /* libyaml's problem, with its line and column */
    uint32_t err_line, err_col;
    struct ys_arena *arena;
} ysdoc;

/* Scans every document of text (len bytes). Never NULL; release with ys_free. */
ysdoc *ys_parse(const char *text, size_t len);
void ys_free(ysdoc *d);

/* The value of key (a plain or quoted scalar with that text) in mapping m, or NULL; the last
 * entry when the key is repeated. O(log n): large mappings are indexed when scanned. */
const ysnode *ys_map_get(const ysnode *m, const char *key);
/* The key node of that entry, or NULL. */
const ysnode *ys_map_key(const ysnode *m, const char *key);

#endif
