/* parse.h - the type-expression lexer and parser (parse.c) as the interpreter (interpret.c) uses
 * them: tokens, the AST, and the functions that make and free them. Internal to src/types. */
#ifndef HIERA_TYPES_PARSE_H
#define HIERA_TYPES_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* ---- lexer (the token rules of Puppet's Lexer2 that matter here) ---- */

typedef enum {
    TK_EOF, TK_CLASSREF, TK_NAME, TK_WORD, TK_NUMBER, TK_STRING, TK_DQINTERP, TK_REGEX,
    TK_BOOLEAN, TK_DEFAULT, TK_UNDEF, TK_KEYWORD, TK_VARIABLE,
    TK_LBRACK, TK_LISTSTART, TK_RBRACK, TK_LBRACE, TK_RBRACE, TK_LPAREN, TK_WSLPAREN, TK_RPAREN,
    TK_COMMA, TK_FARROW, TK_MINUS, TK_SEMIC, TK_QMARK, TK_DOT, TK_BINOP, TK_PREFIX, TK_OTHER,
} tok;

typedef struct {
    tok k;
    size_t start, end; /* byte offsets of the token's text */
    char *val;         /* the token's value: decoded string, number text, name, operator */
    size_t vlen;
} token;

typedef struct {
    const char *src;
    size_t len;
    token *toks;
    size_t ntoks, cap;
    herr *err;
} lexer;

/* Tokenizes lx->src (lx->len bytes) into lx->toks, ending with a TK_EOF token. False with
 * lx->err set (Puppet's message with line and column) on a lexical error. */
bool pt_lex_all(lexer *lx);
void pt_lx_free(lexer *lx);

/* ---- parser: the part of Puppet's expression grammar that type expressions use ---- */

typedef enum {
    A_QREF, A_ACCESS, A_LIST, A_HASH, A_NUMBER, A_STRING, A_REGEX, A_BOOL, A_DEFAULT, A_UNDEF,
    A_QNAME, A_UMINUS, A_OPAQUE,
} akind;

typedef struct ast {
    akind k;
    size_t start, end;
    const token *tok;
    struct ast **kids; /* ACCESS: [left, args...]; LIST: items; HASH: key, value, ...; UMINUS: [expr] */
    size_t nk;
    bool unfolded;     /* HASH written as bare pairs inside brackets */
} ast;

typedef struct {
    lexer *lx;
    size_t i;
    int depth;
    herr *err;
} parser;

/* program: statements (juxtaposed or separated by ';'); a comma continues a statement. Returns
 * NULL with p->err set on a syntax error. */
ast *pt_p_program(parser *p);
void pt_a_free(ast *a);

#endif
