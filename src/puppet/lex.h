/* lex.h - the Puppet lexer of manifest.c, shared with program.c (the main manifest's code).
 * Internal to src/puppet. */
#ifndef HIERA_PUPPET_LEX_H
#define HIERA_PUPPET_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "puppet/manifest.h"

typedef enum { TK_EOF, TK_NAME, TK_CLASSREF, TK_VAR, TK_STR, TK_DQ, TK_HEREDOC, TK_NUM, TK_REGEX, TK_PUNCT } tkind;

typedef struct {
    tkind k;
    uint32_t s, e;       /* source bytes [s, e) */
    uint32_t line, col;  /* 1-based */
    bool nl_before;      /* a line break since the previous token */
    bool interp;         /* TK_DQ: holds an interpolation (val is the text before it) */
    char *val;           /* names (lower case kept as written), variables (no $), string values, punctuation */
} tok;

/* Lexes text (path names it in problems) into *toks (malloc'ed, *n of them; pp_toks_free). x, when
 * given, receives the problems (a string or heredoc not closed...) and the keys looked up in
 * strings and heredocs. Returns false when the text could not be lexed to its end (the tokens
 * before the problem are kept). */
bool pp_lex(pp_index *x, const char *path, const char *text, size_t len, tok **toks, size_t *n);
void pp_toks_free(tok *toks, size_t n);

#endif
