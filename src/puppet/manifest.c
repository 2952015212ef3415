/* manifest.c - class headers, type aliases, lookups and declarations read from Puppet manifests
 * (manifest.h).
 *
 * The lexer follows Puppet's (lib/puppet/pops/parser/lexer2.rb) where it matters for finding the
 * ends of things: '#' and C comments; single-quoted strings; double-quoted strings whose ${...}
 * may hold braces and strings of their own; heredocs (@(TAG), @("TAG"), @(TAG:syntax/flags)),
 * whose bodies start on the next line and end at a line holding the tag (several on one line
 * are read in order); a '/' that starts a regexp wherever Puppet's lexer would take one (not
 * after an operand). The parser is a scan over the tokens with a stack of braces: it reads what
 * it recognises and steps over everything else. Written by hand: no C library reads Puppet. */
#include "puppet/manifest.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/util.h"
#include "puppet/lex.h"

/* ------------------------------------------------------------------ tokens */

typedef struct {
    const char *path;
    const char *src;
    size_t len, pos;
    uint32_t line;
    size_t line_start;
    bool nl;
    tok *toks;
    size_t ntoks, cap;
    /* heredocs opened on the current line: their end tags, read at the line's end */
    char *pending[16];
    size_t npending;
    pp_index *x;
    bool failed;
    int nesting; /* skip_braced calls open */
} lexer;

static void problem(pp_index *x, const char *file, uint32_t line, uint32_t col, const char *fmt, ...)
    HIERA_PRINTF(5, 6);
static void scan_text_lookups(pp_index *x, const char *path, const char *s, size_t len, uint32_t first_line);

static void problem(pp_index *x, const char *file, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (!x)
        return;
    if (x->nproblems == x->capproblems) {
        x->capproblems = x->capproblems ? x->capproblems * 2 : 8;
        x->problems = xrealloc(x->problems, x->capproblems * sizeof *x->problems);
    }
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    x->problems[x->nproblems++] = (pp_problem){xstrdup(file), line, col, sb_take(&b)};
}

static uint32_t col_of(const lexer *L, size_t pos) { return (uint32_t)(pos - L->line_start) + 1; }

static void lex_fail(lexer *L, size_t pos, const char *msg)
{
    if (L->failed)
        return;
    L->failed = true;
    problem(L->x, L->path, L->line, col_of(L, pos), "%s", msg);
}

/* lex_fail at a token's start (line, column), the lexer being further on */
static void lex_fail_at(lexer *L, uint32_t line, uint32_t col, const char *msg)
{
    if (L->failed)
        return;
    L->failed = true;
    problem(L->x, L->path, line, col, "%s", msg);
}

static tok *push_tok(lexer *L, tkind k, size_t s, size_t e, uint32_t line, uint32_t col)
{
    if (L->ntoks == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 256;
        L->toks = xrealloc(L->toks, L->cap * sizeof *L->toks);
    }
    tok *t = &L->toks[L->ntoks++];
    memset(t, 0, sizeof *t);
    t->k = k;
    t->s = (uint32_t)s;
    t->e = (uint32_t)e;
    t->line = line;
    t->col = col;
    t->nl_before = L->nl;
    L->nl = false;
    return t;
}

/* A heredoc's end line: [ \t]* '|'? [ \t]* '-'? [ \t]* TAG [ \t]* (\r)? end of line */
static bool is_end_line(const char *p, size_t n, const char *tag)
{
    size_t i = 0, tl = strlen(tag);
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i < n && p[i] == '|')
        i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i < n && p[i] == '-')
        i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (n - i < tl || memcmp(p + i, tag, tl) != 0)
        return false;
    i += tl;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    return i == n;
}

/* At the start of a line (pos just past a '\n'): skips the bodies of the heredocs opened on the
 * line that ended. */
static void skip_heredoc_bodies(lexer *L)
{
    for (size_t h = 0; h < L->npending && !L->failed; h++) {
        uint32_t start_line = L->line;
        size_t body = L->pos;
        bool found = false;
        while (L->pos < L->len) {
            const char *p = L->src + L->pos;
            const char *nl = memchr(p, '\n', L->len - L->pos);
            size_t n = nl ? (size_t)(nl - p) : L->len - L->pos;
            bool end = is_end_line(p, n, L->pending[h]);
            L->pos += n;
            if (nl) {
                L->pos++;
                L->line++;
                L->line_start = L->pos;
            }
            if (end) {
                found = true;
                /* lookups in the body's interpolations */
                if (L->x && (memmem(L->src + body, L->pos - body, "lookup", 6) || memmem(L->src + body, L->pos - body, "hiera", 5)))
                    scan_text_lookups(L->x, L->path, L->src + body, L->pos - body, start_line);
                break;
            }
        }
        if (!found) {
            char *msg = xasprintf("heredoc without end tag '%s'", L->pending[h]);
            lex_fail_at(L, start_line, 1, msg);
            free(msg);
        }
    }
    for (size_t h = 0; h < L->npending; h++)
        free(L->pending[h]);
    L->npending = 0;
}

static void newline(lexer *L)
{
    L->pos++;
    L->line++;
    L->line_start = L->pos;
    L->nl = true;
    if (L->npending)
        skip_heredoc_bodies(L);
}

/* Skips a ${...} expression inside a double-quoted string or heredoc (pos at '{'); false when
 * it does not end. */
static bool skip_dq(lexer *L, char quote, sbuf *prefix, bool *interp);

/* strings in interpolations in strings...: deeper than this is refused (the C stack) */
#define MAX_STRING_NESTING 64

static bool skip_braced_in(lexer *L);

static bool skip_braced(lexer *L)
{
    if (L->nesting >= MAX_STRING_NESTING) {
        lex_fail(L, L->pos, "strings nested too deep in interpolations");
        return false;
    }
    L->nesting++;
    bool ok = skip_braced_in(L);
    L->nesting--;
    return ok;
}

static bool skip_braced_in(lexer *L)
{
    int depth = 0;
    while (L->pos < L->len && !L->failed) {
        char c = L->src[L->pos];
        if (c == '\n') {
            newline(L);
            continue;
        }
        if (c == '{') {
            depth++;
        } else if (c == '}') {
            if (--depth == 0) {
                L->pos++;
                return true;
            }
        } else if (c == '"') {
            L->pos++;
            if (!skip_dq(L, '"', NULL, NULL))
                return false;
            continue;
        } else if (c == '\'') {
            L->pos++;
            while (L->pos < L->len && L->src[L->pos] != '\'') {
                if (L->src[L->pos] == '\\' && L->pos + 1 < L->len)
                    L->pos++;
                if (L->src[L->pos] == '\n')
                    newline(L);
                else
                    L->pos++;
            }
            if (L->pos >= L->len)
                return false;
        }
        L->pos++;
    }
    return false;
}

/* The rest of a double-quoted string (pos just past the opening quote) up to and past its
 * closing quote. prefix (when given) receives the text before the first interpolation. */
static bool skip_dq(lexer *L, char quote, sbuf *prefix, bool *interp)
{
    bool in_prefix = true;
    while (L->pos < L->len && !L->failed) {
        char c = L->src[L->pos];
        if (c == quote) {
            L->pos++;
            return true;
        }
        if (c == '\n') {
            if (prefix && in_prefix)
                sb_addc(prefix, '\n');
            newline(L);
            continue;
        }
        if (c == '\\' && L->pos + 1 < L->len) {
            char e = L->src[L->pos + 1];
            if (prefix && in_prefix) {
                switch (e) {
                case 'n': sb_addc(prefix, '\n'); break;
                case 't': sb_addc(prefix, '\t'); break;
                case 'r': sb_addc(prefix, '\r'); break;
                case 's': sb_addc(prefix, ' '); break;
                case '"': case '\'': case '\\': case '$': sb_addc(prefix, e); break;
                default: sb_addc(prefix, '\\'); sb_addc(prefix, e); break;
                }
            }
            if (e == '\n') {
                L->pos++;
                newline(L);
            } else {
                L->pos += 2;
            }
            continue;
        }
        if (c == '$' && L->pos + 1 < L->len) {
            char n = L->src[L->pos + 1];
            if (n == '{') {
                in_prefix = false;
                if (interp)
                    *interp = true;
                L->pos++;
                if (!skip_braced(L))
                    return false;
                continue;
            }
            if (isalnum((unsigned char)n) || n == '_' || n == ':') {
                in_prefix = false;
                if (interp)
                    *interp = true;
            }
        }
        if (prefix && in_prefix)
            sb_addc(prefix, c);
        L->pos++;
    }
    return false;
}

static bool value_end(const lexer *L)
{
    if (!L->ntoks)
        return false;
    const tok *t = &L->toks[L->ntoks - 1];
    switch (t->k) {
    case TK_NAME:
        /* a keyword after which a regexp may come: node /^web/, ... and /x/ */
        return strcmp(t->val, "node") && strcmp(t->val, "and") && strcmp(t->val, "or") && strcmp(t->val, "in") &&
               strcmp(t->val, "if") && strcmp(t->val, "elsif") && strcmp(t->val, "unless") && strcmp(t->val, "case");
    case TK_CLASSREF: case TK_NUM: case TK_STR: case TK_DQ: case TK_HEREDOC: case TK_REGEX: case TK_VAR:
        return true;
    case TK_PUNCT:
        return !strcmp(t->val, ")") || !strcmp(t->val, "]") || !strcmp(t->val, "|>") || !strcmp(t->val, "|>>");
    default:
        return false;
    }
}

static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* The length of the Unicode blank (Zs: no-break space, the U+2000 spaces...) UTF-8 starts at s with,
 * or 0. */
static size_t unicode_space(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n >= 2 && u[0] == 0xC2 && u[1] == 0xA0)
        return 2;
    if (n >= 3 && u[0] == 0xE2 && u[1] == 0x80 && (u[2] <= 0x8A || u[2] == 0xAF))
        return 3;
    if (n >= 3 && ((u[0] == 0xE2 && u[1] == 0x81 && u[2] == 0x9F) || (u[0] == 0xE3 && u[1] == 0x80 && u[2] == 0x80) ||
                   (u[0] == 0xE1 && u[1] == 0x9A && u[2] == 0x80)))
        return 3;
    return 0;
}

static void lex(lexer *L)
{
    static const char *const puncts[] = {"<<|", "|>>", "=>", "+>", "->", "~>", "<-", "<~", "==", "!=", "=~", "!~",
                                         "<=", ">=", "<<", ">>", "<|", "|>", "@@", "+=", "-=", NULL};
    while (L->pos < L->len && !L->failed) {
        const char *s = L->src;
        char c = s[L->pos];
        if (c == '\n') {
            newline(L);
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            L->pos++;
            continue;
        }
        size_t usp = unicode_space(s + L->pos, L->len - L->pos);
        if (usp) {
            L->pos += usp; /* Puppet's lexer: [[:blank:]] is Unicode's (a no-break space...) */
            continue;
        }
        if (c == '#') {
            while (L->pos < L->len && s[L->pos] != '\n')
                L->pos++;
            continue;
        }
        size_t start = L->pos;
        uint32_t line = L->line, col = col_of(L, start);
        if (c == '/' && L->pos + 1 < L->len && s[L->pos + 1] == '*') {
            const char *end = NULL;
            for (size_t i = L->pos + 2; i + 1 < L->len; i++)
                if (s[i] == '*' && s[i + 1] == '/') {
                    end = s + i;
                    break;
                }
            if (!end) {
                lex_fail(L, start, "comment /* without its end");
                return;
            }
            while (L->pos < (size_t)(end - s) + 2) {
                if (s[L->pos] == '\n')
                    newline(L);
                else
                    L->pos++;
            }
            continue;
        }
        if (c == '\'') {
            sbuf v = {0};
            L->pos++;
            while (L->pos < L->len && s[L->pos] != '\'') {
                if (s[L->pos] == '\\' && L->pos + 1 < L->len && (s[L->pos + 1] == '\\' || s[L->pos + 1] == '\'')) {
                    sb_addc(&v, s[L->pos + 1]);
                    L->pos += 2;
                    continue;
                }
                sb_addc(&v, s[L->pos]);
                if (s[L->pos] == '\n')
                    newline(L);
                else
                    L->pos++;
            }
            if (L->pos >= L->len) {
                sb_free(&v);
                lex_fail_at(L, line, col, "string without its closing quote (')");
                return;
            }
            L->pos++;
            tok *t = push_tok(L, TK_STR, start, L->pos, line, col);
            t->val = sb_take(&v);
            continue;
        }
        if (c == '"') {
            sbuf v = {0};
            bool interp = false;
            L->pos++;
            if (!skip_dq(L, '"', &v, &interp)) {
                sb_free(&v);
                lex_fail_at(L, line, col, "string without its closing quote (\")");
                return;
            }
            tok *t = push_tok(L, TK_DQ, start, L->pos, line, col);
            t->val = sb_take(&v);
            t->interp = interp;
            if (L->x && interp && (memmem(s + start, L->pos - start, "lookup", 6) || memmem(s + start, L->pos - start, "hiera", 5)))
                scan_text_lookups(L->x, L->path, s + start + 1, L->pos - start - 1, line);
            continue;
        }
        if (c == '@' && L->pos + 1 < L->len && s[L->pos + 1] == '(') {
            /* @( "TAG" :syntax /flags ) */
            size_t i = L->pos + 2;
            const char *close = memchr(s + i, ')', L->len - i);
            const char *nl = memchr(s + i, '\n', L->len - i);
            if (!close || (nl && nl < close)) {
                lex_fail(L, start, "heredoc @( without its closing )");
                return;
            }
            size_t e = (size_t)(close - s);
            while (i < e && (s[i] == ' ' || s[i] == '\t'))
                i++;
            bool quoted = i < e && s[i] == '"';
            if (quoted)
                i++;
            size_t ts = i;
            while (i < e && s[i] != '"' && s[i] != ':' && s[i] != '/')
                i++;
            size_t te = i;
            while (te > ts && (s[te - 1] == ' ' || s[te - 1] == '\t'))
                te--;
            if (te == ts || L->npending == sizeof L->pending / sizeof *L->pending) {
                lex_fail(L, start, "heredoc without a tag");
                return;
            }
            L->pending[L->npending++] = xstrndup(s + ts, te - ts);
            L->pos = e + 1;
            tok *t = push_tok(L, TK_HEREDOC, start, L->pos, line, col);
            t->val = xstrdup("");
            continue;
        }
        if (c == '/' && !value_end(L)) {
            /* a regexp: /[^/]*\/ where a '/' escaped by a backslash does not end it */
            size_t i = L->pos + 1;
            bool ok = false;
            while (i < L->len) {
                if (s[i] == '/') {
                    size_t bs = 0;
                    while (i - 1 - bs > L->pos && s[i - 1 - bs] == '\\')
                        bs++;
                    if (bs % 2 == 0) {
                        ok = true;
                        break;
                    }
                }
                i++;
            }
            if (ok) {
                while (L->pos <= i) {
                    if (s[L->pos] == '\n')
                        newline(L);
                    else
                        L->pos++;
                }
                tok *t = push_tok(L, TK_REGEX, start, L->pos, line, col);
                t->val = xstrndup(s + start, L->pos - start);
                continue;
            }
        }
        if (c == '$') {
            size_t i = L->pos + 1;
            if (i + 1 < L->len && s[i] == ':' && s[i + 1] == ':')
                i += 2;
            size_t ns = i;
            while (i < L->len) {
                if (is_word(s[i])) {
                    i++;
                } else if (s[i] == ':' && i + 2 < L->len && s[i + 1] == ':' && is_word(s[i + 2])) {
                    i += 2;
                } else {
                    break;
                }
            }
            L->pos = i > ns ? i : L->pos + 1;
            tok *t = push_tok(L, i > ns ? TK_VAR : TK_PUNCT, start, L->pos, line, col);
            t->val = i > ns ? xstrndup(s + ns, i - ns) : xstrdup("$");
            continue;
        }
        if (isdigit((unsigned char)c)) {
            size_t i = L->pos;
            while (i < L->len && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' ||
                                  ((s[i] == '-' || s[i] == '+') && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
                i++;
            L->pos = i;
            tok *t = push_tok(L, TK_NUM, start, i, line, col);
            t->val = xstrndup(s + start, i - start);
            continue;
        }
        if (is_name_start(c) || (c == ':' && L->pos + 2 < L->len && s[L->pos + 1] == ':' && is_name_start(s[L->pos + 2]))) {
            size_t i = L->pos;
            if (c == ':')
                i += 2;
            bool upper = isupper((unsigned char)s[i]);
            while (i < L->len) {
                if (is_word(s[i])) {
                    i++;
                } else if (s[i] == ':' && i + 2 < L->len && s[i + 1] == ':' && is_name_start(s[i + 2])) {
                    i += 2;
                } else {
                    break;
                }
            }
            L->pos = i;
            tok *t = push_tok(L, upper ? TK_CLASSREF : TK_NAME, start, i, line, col);
            t->val = xstrndup(s + start, i - start);
            continue;
        }
        size_t pl = 1;
        for (size_t p = 0; puncts[p]; p++) {
            size_t n = strlen(puncts[p]);
            if (L->len - L->pos >= n && memcmp(s + L->pos, puncts[p], n) == 0) {
                pl = n;
                break;
            }
        }
        L->pos += pl;
        tok *t = push_tok(L, TK_PUNCT, start, L->pos, line, col);
        t->val = xstrndup(s + start, pl);
    }
    if (!L->failed && L->npending) {
        /* a heredoc on the last line, without a line break after it */
        char *msg = xasprintf("heredoc without end tag '%s'", L->pending[0]);
        lex_fail(L, L->pos, msg);
        free(msg);
    }
    for (size_t h = 0; h < L->npending; h++)
        free(L->pending[h]);
    L->npending = 0;
}

/* ------------------------------------------------------------------ the index */

#define GROW(arr, n, cap)                                                  \
    do {                                                                   \
        if ((n) == (cap)) {                                                \
            (cap) = (cap) ? (cap) * 2 : 16;                                \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));                \
        }                                                                  \
    } while (0)

pp_index *pp_index_new(void) { return xcalloc(1, sizeof(pp_index)); }

void pp_lookups_truncate(pp_index *x, size_t n)
{
    for (size_t i = n; i < x->nlookups; i++) {
        free(x->lookups[i].key);
        free(x->lookups[i].suffix);
        free(x->lookups[i].file);
        free(x->lookups[i].scope_class);
        free(x->lookups[i].var);
        free(x->lookups[i].owner);
    }
    if (n < x->nlookups)
        x->nlookups = n;
}

void pp_index_free(pp_index *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->nclasses; i++) {
        pp_class *c = &x->classes[i];
        free(c->name);
        free(c->file);
        free(c->parent);
        for (size_t j = 0; j < c->nparams; j++) {
            free(c->params[j].name);
            free(c->params[j].type);
            free(c->params[j].default_str);
        }
        free(c->params);
    }
    free(x->classes);
    for (size_t i = 0; i < x->naliases; i++) {
        free(x->aliases[i].name);
        free(x->aliases[i].body);
        free(x->aliases[i].file);
    }
    free(x->aliases);
    pp_lookups_truncate(x, 0);
    free(x->lookups);
    for (size_t i = 0; i < x->nassigns; i++) {
        free(x->assigns[i].owner);
        free(x->assigns[i].var);
        free(x->assigns[i].value);
    }
    free(x->assigns);
    for (size_t i = 0; i < x->nnodes; i++) {
        for (size_t j = 0; j < x->nodes[i].nnames; j++)
            free(x->nodes[i].names[j]);
        free(x->nodes[i].names);
        for (size_t j = 0; j < x->nodes[i].nregexps; j++)
            free(x->nodes[i].regexps[j]);
        free(x->nodes[i].regexps);
    }
    free(x->nodes);
    for (size_t i = 0; i < x->ndecls; i++) {
        free(x->decls[i].cls);
        free(x->decls[i].file);
        free(x->decls[i].scope_class);
        for (size_t j = 0; j < x->decls[i].nparams; j++) {
            free(x->decls[i].params[j]);
            if (x->decls[i].values)
                free(x->decls[i].values[j]);
        }
        free(x->decls[i].params);
        free(x->decls[i].values);
    }
    free(x->decls);
    for (size_t i = 0; i < x->nproblems; i++) {
        free(x->problems[i].file);
        free(x->problems[i].message);
    }
    free(x->problems);
    for (size_t i = 0; i < x->ntopvars; i++)
        free(x->topvars[i]);
    free(x->topvars);
    for (size_t i = 0; i < x->ndefines; i++)
        free(x->defines[i]);
    free(x->defines);
    free(x);
}

bool pp_is_define(const pp_index *x, const char *name)
{
    for (size_t i = 0; i < x->ndefines; i++)
        if (!strcmp(x->defines[i], name))
            return true;
    return false;
}

const pp_class *pp_find_class(const pp_index *x, const char *name)
{
    for (size_t i = x->nclasses; i-- > 0;)
        if (!x->classes[i].shadowed && strcmp(x->classes[i].name, name) == 0)
            return &x->classes[i];
    return NULL;
}

static char *lower_name(const char *s)
{
    if (s[0] == ':' && s[1] == ':')
        s += 2;
    char *r = xstrdup(s);
    for (char *p = r; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return r;
}

/* ------------------------------------------------------------------ the parser */

typedef enum { SC_OTHER, SC_CLASS, SC_DEFINE, SC_NODE, SC_FUNCTION, SC_COND } scope_kind;

typedef struct {
    scope_kind kind;
    char *name; /* SC_CLASS: the class name */
    int node;   /* SC_NODE: its index in the index's nodes */
} scope;

typedef struct {
    lexer *L;
    pp_index *x;
    const char *path;
    tok *t;
    size_t n;
    scope *stack;
    size_t depth, cap;
    scope_kind next_kind; /* what the next '{' opens */
    bool cond_pending;    /* an if/unless/elsif/else/case was read: the next '{' opens its body */
    const char *params_owner; /* while a parameter list is read: its class or defined type */
    char *next_name;
    int next_node;
} parser;

static bool is_p(const tok *t, const char *p) { return t->k == TK_PUNCT && strcmp(t->val, p) == 0; }
static bool is_n(const tok *t, const char *n) { return t->k == TK_NAME && strcmp(t->val, n) == 0; }

static bool opener(const tok *t) { return is_p(t, "(") || is_p(t, "[") || is_p(t, "{"); }
static bool closer(const tok *t) { return is_p(t, ")") || is_p(t, "]") || is_p(t, "}"); }

/* The index of the bracket that closes the one at i, or n when none does. */
static size_t matching(const parser *P, size_t i)
{
    int depth = 0;
    for (size_t j = i; j < P->n; j++) {
        if (opener(&P->t[j]))
            depth++;
        else if (closer(&P->t[j]) && --depth == 0)
            return j;
    }
    return P->n;
}

/* The end of an expression starting at i: the first ',' or closing bracket at its own depth
 * (or ';'), or n. */
static size_t expr_end(const parser *P, size_t i)
{
    int depth = 0;
    for (size_t j = i; j < P->n; j++) {
        const tok *t = &P->t[j];
        if (opener(t)) {
            depth++;
        } else if (closer(t)) {
            if (depth-- == 0)
                return j;
        } else if (depth == 0 && (is_p(t, ",") || is_p(t, ";"))) {
            return j;
        }
    }
    return P->n;
}

static bool wordish(const tok *t) { return t->k == TK_NAME || t->k == TK_CLASSREF || t->k == TK_NUM || t->k == TK_VAR; }

/* Source text of tokens [a, b) joined (a space only between two words: comments and line breaks
 * inside an expression are left out). */
static char *join_tokens(const parser *P, size_t a, size_t b)
{
    sbuf s = {0};
    for (size_t j = a; j < b; j++) {
        if (j > a && (wordish(&P->t[j - 1]) && wordish(&P->t[j])))
            sb_addc(&s, ' ');
        else if (j > a && is_p(&P->t[j - 1], ","))
            sb_addc(&s, ' ');
        sb_addn(&s, P->L->src + P->t[j].s, P->t[j].e - P->t[j].s);
    }
    return sb_take(&s);
}

static bool in_code_scope(const parser *P)
{
    for (size_t i = 0; i < P->depth; i++)
        if (P->stack[i].kind == SC_CLASS || P->stack[i].kind == SC_DEFINE || P->stack[i].kind == SC_FUNCTION)
            return true;
    return false;
}

static int enclosing_node(const parser *P)
{
    for (size_t i = P->depth; i-- > 0;)
        if (P->stack[i].kind == SC_NODE)
            return P->stack[i].node;
    return -1;
}

static bool in_define_or_function(const parser *P)
{
    for (size_t i = 0; i < P->depth; i++)
        if (P->stack[i].kind == SC_DEFINE || P->stack[i].kind == SC_FUNCTION)
            return true;
    return false;
}

/* Whether the code at this point runs only under a condition (if, unless, case, a selector or a
 * lambda) within its class, node or define. */
static bool in_conditional(const parser *P)
{
    for (size_t i = P->depth; i-- > 0;) {
        if (P->stack[i].kind == SC_COND)
            return true;
        if (P->stack[i].kind != SC_OTHER)
            return false;
    }
    return false;
}

/* A token that is a plain string: 'x', "x" without interpolation, a bare word */
static bool plain_string(const tok *t)
{
    return t->k == TK_STR || (t->k == TK_DQ && !t->interp) ||
           (t->k == TK_NAME && strcmp(t->val, "undef") && strcmp(t->val, "true") && strcmp(t->val, "false"));
}

static const char *enclosing_owner(const parser *P);

static const char *enclosing_class(const parser *P)
{
    for (size_t i = P->depth; i-- > 0;)
        if (P->stack[i].kind == SC_CLASS)
            return P->stack[i].name;
    return NULL;
}

/* The class or defined type whose body holds this point (lower case), or NULL. */
static const char *enclosing_owner(const parser *P)
{
    for (size_t i = P->depth; i-- > 0;)
        if (P->stack[i].kind == SC_CLASS || P->stack[i].kind == SC_DEFINE)
            return P->stack[i].name;
    return P->params_owner;
}

static size_t lookup_call(parser *P, size_t i);
static bool is_lookup_fn(const tok *t);

/* Lookups in a parameter list (defaults may call lookup()): tokens (open, close) */
static void scan_params(parser *P, size_t open, size_t close)
{
    for (size_t k = open + 1; k < close && k + 1 < P->n; k++)
        if (is_lookup_fn(&P->t[k]) && is_p(&P->t[k + 1], "("))
            lookup_call(P, k);
}

/* class NAME [( params )] [inherits NAME] {  (i at 'class'); returns the index to continue at */
static size_t class_definition(parser *P, size_t i)
{
    const tok *nt = &P->t[i + 1];
    char *name = lower_name(nt->val);
    const char *outer = enclosing_class(P);
    if (outer && !(nt->val[0] == ':' && nt->val[1] == ':')) {
        char *q = xjoin(outer, "::", name, NULL);
        free(name);
        name = q;
    }
    pp_index *x = P->x;
    GROW(x->classes, x->nclasses, x->capclasses);
    pp_class *c = &x->classes[x->nclasses++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->file = xstrdup(P->path);
    c->line = P->t[i].line;
    c->col = P->t[i].col;
    c->header_ok = true;
    size_t j = i + 2;
    size_t capp = 0;
    if (j < P->n && is_p(&P->t[j], "(")) {
        size_t close = matching(P, j);
        if (close == P->n) {
            problem(x, P->path, P->t[j].line, P->t[j].col, "the parameter list of class %s has no closing ')'", name);
            c->header_ok = false;
            return P->n;
        }
        P->params_owner = name;
        scan_params(P, j, close);
        P->params_owner = NULL;
        size_t k = j + 1;
        while (k < close) {
            /* [Type] $name [= default] */
            size_t var = k;
            int depth = 0;
            while (var < close) {
                const tok *t = &P->t[var];
                if (opener(t))
                    depth++;
                else if (closer(t))
                    depth--;
                else if (depth == 0 && (t->k == TK_VAR || is_p(t, ",")))
                    break;
                var++;
            }
            if (var >= close || P->t[var].k != TK_VAR) {
                const tok *bad = &P->t[var < close ? var : k];
                problem(x, P->path, bad->line, bad->col, "cannot read the parameters of class %s", name);
                c->header_ok = false;
                break;
            }
            GROW(c->params, c->nparams, capp);
            pp_param *p = &c->params[c->nparams++];
            memset(p, 0, sizeof *p);
            p->name = xstrdup(P->t[var].val);
            p->line = P->t[var].line;
            p->col = P->t[var].col;
            if (var > k)
                p->type = join_tokens(P, k, var);
            size_t after = var + 1;
            if (after < close && is_p(&P->t[after], "=")) {
                p->has_default = true;
                const tok *dv = after + 2 < P->n ? &P->t[after + 1] : NULL;
                if (dv && plain_string(dv) && (is_p(&P->t[after + 2], ",") || after + 2 == close))
                    p->default_str = xstrdup(dv->val);
                after = expr_end(P, after + 1);
                if (after > close)
                    after = close;
            }
            if (after < close && !is_p(&P->t[after], ",")) {
                problem(x, P->path, P->t[after].line, P->t[after].col, "cannot read the parameters of class %s", name);
                c->header_ok = false;
                break;
            }
            k = after + 1;
        }
        j = close + 1;
    }
    if (j + 1 < P->n && is_n(&P->t[j], "inherits") && (P->t[j + 1].k == TK_NAME)) {
        c->parent = lower_name(P->t[j + 1].val);
        j += 2;
    }
    if (j < P->n && is_p(&P->t[j], "{")) {
        P->next_kind = SC_CLASS;
        free(P->next_name);
        P->next_name = xstrdup(name);
    } else if (j < P->n) {
        problem(x, P->path, P->t[j].line, P->t[j].col, "class %s: expected '{' after its header", name);
        c->header_ok = false;
    }
    return j;
}

static void add_decl(parser *P, const char *cls, bool resource_like, const tok *at, char **params, char **values,
                     size_t nparams)
{
    pp_index *x = P->x;
    GROW(x->decls, x->ndecls, x->capdecls);
    const char *sc = enclosing_class(P);
    x->decls[x->ndecls++] = (pp_decl){lower_name(cls), resource_like, params, values, nparams, xstrdup(P->path), at->line,
                                      at->col, sc ? xstrdup(sc) : NULL, enclosing_node(P), in_define_or_function(P),
                                      in_conditional(P)};
}

/* class { 'name': attr => value, ...; 'other': ... }  (i at 'class', i+1 at '{') */
static void class_resource(parser *P, size_t i)
{
    size_t close = matching(P, i + 1);
    size_t j = i + 2;
    while (j < close) {
        /* titles up to ':' */
        size_t colon = j;
        while (colon < close && !is_p(&P->t[colon], ":"))
            colon++;
        if (colon >= close)
            return;
        char **params = NULL, **values = NULL;
        size_t np = 0, cap = 0, capv = 0;
        size_t k = colon + 1;
        while (k < close && !is_p(&P->t[k], ";")) {
            if ((P->t[k].k == TK_NAME) && k + 1 < close && is_p(&P->t[k + 1], "=>")) {
                size_t nv = np;
                GROW(params, np, cap);
                GROW(values, nv, capv);
                const tok *v = k + 2 < close ? &P->t[k + 2] : NULL;
                bool plain = v && plain_string(v) &&
                             (k + 3 >= close || is_p(&P->t[k + 3], ",") || is_p(&P->t[k + 3], ";"));
                values[np] = plain ? xstrdup(v->val) : NULL;
                params[np++] = xstrdup(P->t[k].val);
            }
            size_t e = expr_end(P, k + 1 < close ? k + 1 : k);
            if (e <= k)
                e = k + 1;
            k = e;
            if (k < close && is_p(&P->t[k], ","))
                k++;
        }
        for (size_t t = j; t < colon; t++) {
            const tok *tt = &P->t[t];
            if ((tt->k == TK_STR || (tt->k == TK_DQ && !tt->interp) || tt->k == TK_NAME) && tt->val[0]) {
                char **copy = NULL, **vcopy = NULL;
                if (np) {
                    copy = xmalloc(np * sizeof *copy);
                    vcopy = xmalloc(np * sizeof *vcopy);
                    for (size_t q = 0; q < np; q++) {
                        copy[q] = xstrdup(params[q]);
                        vcopy[q] = values[q] ? xstrdup(values[q]) : NULL;
                    }
                }
                add_decl(P, tt->val, true, tt, copy, vcopy, np);
            }
        }
        for (size_t q = 0; q < np; q++) {
            free(params[q]);
            free(values[q]);
        }
        free(params);
        free(values);
        j = k + 1;
    }
}

static bool is_lookup_fn(const tok *t)
{
    return is_n(t, "lookup") || is_n(t, "hiera") || is_n(t, "hiera_array") || is_n(t, "hiera_hash") ||
           is_n(t, "hiera_include");
}

/* The text of a double-quoted string's content after its last interpolation (${...} or $name). */
static char *dq_suffix(const char *s, size_t n)
{
    size_t last = 0, i = 0;
    while (i < n) {
        if (s[i] == '\\') {
            i += 2;
        } else if (s[i] == '$' && i + 1 < n && s[i + 1] == '{') {
            int depth = 0;
            for (i++; i < n; i++) {
                if (s[i] == '{')
                    depth++;
                else if (s[i] == '}' && --depth == 0)
                    break;
            }
            i = i < n ? i + 1 : n;
            last = i;
        } else if (s[i] == '$' && i + 1 < n && (is_word(s[i + 1]) || s[i + 1] == ':')) {
            for (i++; i < n && (is_word(s[i]) || s[i] == ':'); i++)
                ;
            last = i;
        } else {
            i++;
        }
    }
    return xstrndup(s + last, n > last ? n - last : 0);
}

static void add_lookup(parser *P, const tok *k, bool merged, bool classes)
{
    pp_index *x = P->x;
    GROW(x->lookups, x->nlookups, x->caplookups);
    const char *sc = enclosing_class(P), *owner = enclosing_owner(P);
    bool var = k->k == TK_VAR;
    bool prefix = k->k == TK_DQ && k->interp;
    char *suffix = prefix ? dq_suffix(P->L->src + k->s + 1, k->e - k->s - 2) : xstrdup("");
    const char *key = var ? "" : k->val[0] == ':' && k->val[1] == ':' && k->k == TK_NAME ? k->val + 2 : k->val;
    x->lookups[x->nlookups++] = (pp_lookup){xstrdup(key), prefix, suffix, merged, xstrdup(P->path), k->line,
                                            k->col, classes, sc ? xstrdup(sc) : NULL, enclosing_node(P),
                                            in_conditional(P), var ? xstrdup(k->val) : NULL,
                                            owner ? xstrdup(owner) : NULL};
}

bool pp_lookup_matches(const pp_lookup *l, const char *key)
{
    if (!l->prefix)
        return !strcmp(l->key, key);
    size_t pl = strlen(l->key), sl = l->suffix ? strlen(l->suffix) : 0, kl = strlen(key);
    return kl >= pl + sl && !strncmp(key, l->key, pl) && (!sl || !strcmp(key + kl - sl, l->suffix));
}

/* lookup(...) and the hiera functions (i at the name, i+1 at '('); returns the closing ')' */
static size_t lookup_call(parser *P, size_t i)
{
    size_t close = matching(P, i + 1);
    if (close == P->n)
        return i + 1;
    const tok *fn = &P->t[i];
    bool merged = !is_n(fn, "lookup") && !is_n(fn, "hiera");
    /* the arguments */
    size_t args[8], nargs = 0, j = i + 2;
    while (j < close && nargs < 8) {
        args[nargs++] = j;
        j = expr_end(P, j);
        if (j < close && is_p(&P->t[j], ","))
            j++;
        else
            break;
    }
    if (is_n(fn, "lookup") && nargs >= 3) {
        const tok *m = &P->t[args[2]];
        if (!is_n(m, "undef") && !((m->k == TK_STR || m->k == TK_DQ) && strcmp(m->val, "first") == 0))
            merged = true;
    }
    for (size_t a = 0; a < nargs; a++) /* an options hash: {'merge' => 'deep'} */
        if (is_p(&P->t[args[a]], "{"))
            for (size_t q = args[a]; q + 2 < close; q++)
                if ((P->t[q].k == TK_STR || P->t[q].k == TK_DQ) && !strcmp(P->t[q].val, "merge") &&
                    is_p(&P->t[q + 1], "=>") &&
                    !((P->t[q + 2].k == TK_STR || P->t[q + 2].k == TK_DQ) && !strcmp(P->t[q + 2].val, "first")))
                    merged = true;
    /* whether the value names classes to include: hiera_include(), lookup(...).include / .contain,
     * include(lookup(...)), lookup(...).each |$c| { include $c } */
    bool classes = is_n(fn, "hiera_include");
    if (close + 2 < P->n && is_p(&P->t[close + 1], ".") &&
        (is_n(&P->t[close + 2], "include") || is_n(&P->t[close + 2], "contain")))
        classes = true;
    if (i >= 2 && is_p(&P->t[i - 1], "(") && (is_n(&P->t[i - 2], "include") || is_n(&P->t[i - 2], "contain")))
        classes = true;
    if (i >= 1 && (is_n(&P->t[i - 1], "include") || is_n(&P->t[i - 1], "contain")))
        classes = true;
    if (close + 3 < P->n && is_p(&P->t[close + 1], ".") && is_n(&P->t[close + 2], "each")) {
        /* the lambda's body */
        size_t b = close + 3;
        while (b < P->n && !is_p(&P->t[b], "{") && !is_p(&P->t[b], ";"))
            b++;
        size_t be = b < P->n && is_p(&P->t[b], "{") ? matching(P, b) : b;
        for (size_t q = b; q + 1 < be && q + 1 < P->n; q++)
            if ((is_n(&P->t[q], "include") || is_n(&P->t[q], "contain")) &&
                (P->t[q + 1].k == TK_VAR || (is_p(&P->t[q + 1], "(") && q + 2 < be && P->t[q + 2].k == TK_VAR)))
                classes = true;
    }
    if (nargs) {
        const tok *k = &P->t[args[0]];
        /* a single token argument: a bare word (lookup(ntp::servers)) or a variable */
        size_t a_end = args[0] + 1;
        bool alone = a_end < P->n && (is_p(&P->t[a_end], ",") || is_p(&P->t[a_end], ")"));
        if (k->k == TK_STR || k->k == TK_DQ || (alone && (k->k == TK_VAR || (k->k == TK_NAME && plain_string(k))))) {
            add_lookup(P, k, merged, classes);
        } else if (is_p(k, "[")) {
            size_t e = matching(P, args[0]);
            for (size_t q = args[0] + 1; q < e && q < close; q++)
                if (P->t[q].k == TK_STR || P->t[q].k == TK_DQ)
                    add_lookup(P, &P->t[q], merged, classes);
        } else if (is_p(k, "{")) {
            for (size_t q = args[0]; q + 2 < close; q++)
                if ((P->t[q].k == TK_STR || P->t[q].k == TK_DQ) && !strcmp(P->t[q].val, "name") && is_p(&P->t[q + 1], "=>") &&
                    (P->t[q + 2].k == TK_STR || P->t[q + 2].k == TK_DQ))
                    add_lookup(P, &P->t[q + 2], merged, classes);
        }
    }
    return close;
}

/* include a, b / include(a, b) / contain / require (i at the name) */
static bool class_name_tok(const tok *t)
{
    return (t->k == TK_NAME || t->k == TK_STR || (t->k == TK_DQ && !t->interp)) && t->val[0] && !is_n(t, "undef") &&
           !is_n(t, "true") && !is_n(t, "false");
}

static void include_call(parser *P, size_t i)
{
    size_t j = i + 1, end = P->n;
    bool parens = j < P->n && is_p(&P->t[j], "(");
    if (parens) {
        end = matching(P, j);
        j++;
    }
    /* arguments: names or strings, or arrays of them, separated by commas */
    while (j < end) {
        const tok *t = &P->t[j];
        if (is_p(t, "[")) {
            size_t close = matching(P, j);
            for (size_t q = j + 1; q < close && q < end; q++)
                if (class_name_tok(&P->t[q]) && !(q + 1 < P->n && is_p(&P->t[q + 1], "(")))
                    add_decl(P, P->t[q].val, false, &P->t[q], NULL, NULL, 0);
            j = close + 1;
        } else if (class_name_tok(t) && !(j + 1 < P->n && is_p(&P->t[j + 1], "("))) {
            add_decl(P, t->val, false, t, NULL, NULL, 0);
            j++;
        } else {
            break;
        }
        if (j < end && is_p(&P->t[j], ","))
            j++;
        else if (!parens)
            break;
    }
}

static void add_topvar(parser *P, const char *name)
{
    pp_index *x = P->x;
    const char *n = name[0] == ':' && name[1] == ':' ? name + 2 : name;
    for (size_t i = 0; i < x->ntopvars; i++)
        if (!strcmp(x->topvars[i], n))
            return;
    GROW(x->topvars, x->ntopvars, x->captopvars);
    x->topvars[x->ntopvars++] = xstrdup(n);
}

/* type Name = <type expression>  (i at 'type') */
static size_t type_alias(parser *P, size_t i)
{
    size_t j = i + 3, k = j;
    int depth = 0;
    while (k < P->n) {
        const tok *t = &P->t[k];
        if (depth == 0 && k > j) {
            const tok *prev = &P->t[k - 1];
            bool prev_end = prev->k == TK_NAME || prev->k == TK_CLASSREF || prev->k == TK_STR || prev->k == TK_DQ ||
                            prev->k == TK_NUM || prev->k == TK_REGEX || is_p(prev, "]") || is_p(prev, "}") ||
                            is_p(prev, ")");
            if ((t->nl_before && prev_end && !opener(t)) || is_p(t, ";"))
                break;
        }
        if (opener(t))
            depth++;
        else if (closer(t) && depth-- == 0)
            break;
        k++;
    }
    pp_index *x = P->x;
    GROW(x->aliases, x->naliases, x->capaliases);
    x->aliases[x->naliases++] =
        (pp_alias){xstrdup(P->t[i + 1].val), join_tokens(P, j, k), xstrdup(P->path), P->t[i].line, P->t[i].col};
    return k;
}

static void parse(parser *P)
{
    for (size_t i = 0; i < P->n; i++) {
        tok *t = &P->t[i];
        const tok *nx = i + 1 < P->n ? &P->t[i + 1] : NULL;
        if (t->k == TK_PUNCT) {
            if (is_p(t, "{")) {
                /* the body of a condition, a selector or a lambda: what it declares may not be */
                if (P->next_kind == SC_OTHER &&
                    (P->cond_pending || (i > 0 && (is_p(&P->t[i - 1], "|") || is_p(&P->t[i - 1], "?")))))
                    P->next_kind = SC_COND;
                P->cond_pending = false;
                GROW(P->stack, P->depth, P->cap);
                P->stack[P->depth++] = (scope){P->next_kind, P->next_name, P->next_node};
                P->next_kind = SC_OTHER;
                P->next_name = NULL;
                P->next_node = -1;
            } else if (is_p(t, "}")) {
                if (P->depth) {
                    P->depth--;
                    free(P->stack[P->depth].name);
                }
            }
            continue;
        }
        if (t->k == TK_VAR) {
            if (nx && is_p(nx, "=") && !in_code_scope(P))
                add_topvar(P, t->val);
            else if (nx && is_p(nx, "=") && enclosing_owner(P) && i + 2 < P->n && plain_string(&P->t[i + 2]) &&
                     (i + 3 >= P->n || P->t[i + 3].nl_before || is_p(&P->t[i + 3], ";") || is_p(&P->t[i + 3], "}"))) {
                pp_index *x = P->x;
                GROW(x->assigns, x->nassigns, x->capassigns);
                x->assigns[x->nassigns++] =
                    (pp_assign){xstrdup(enclosing_owner(P)), xstrdup(t->val), xstrdup(P->t[i + 2].val)};
            }
            continue;
        }
        if (t->k != TK_NAME || (nx && is_p(nx, "=>")))
            continue;
        /* a name used as a hash key or attribute (name =>) is not a keyword */
        if (is_n(t, "if") || is_n(t, "unless") || is_n(t, "elsif") || is_n(t, "else") || is_n(t, "case")) {
            P->cond_pending = true;
            continue;
        }
        if (is_n(t, "class") && nx) {
            if (is_p(nx, "{"))
                class_resource(P, i);
            else if (nx->k == TK_NAME)
                i = class_definition(P, i) - 1;
        } else if ((is_n(t, "define") || is_n(t, "function") || is_n(t, "plan")) && nx &&
                   (nx->k == TK_NAME || nx->k == TK_CLASSREF)) {
            P->next_kind = is_n(t, "define") ? SC_DEFINE : SC_FUNCTION;
            char *dname = NULL;
            if (is_n(t, "define") && nx->k == TK_NAME) {
                GROW(P->x->defines, P->x->ndefines, P->x->capdefines);
                P->x->defines[P->x->ndefines++] = lower_name(nx->val);
                dname = lower_name(nx->val);
                free(P->next_name);
                P->next_name = xstrdup(dname);
            }
            /* parameters: their defaults are not code of the body (lookups there count) */
            if (i + 2 < P->n && is_p(&P->t[i + 2], "(")) {
                size_t close = matching(P, i + 2);
                P->params_owner = dname;
                if (close < P->n)
                    scan_params(P, i + 2, close);
                P->params_owner = NULL;
                i = close < P->n ? close : P->n;
            }
            free(dname);
        } else if (is_n(t, "node") && nx && !is_p(nx, "(") && !is_p(nx, ".")) {
            P->next_kind = SC_NODE;
            pp_index *x = P->x;
            GROW(x->nodes, x->nnodes, x->capnodes);
            pp_node *nd = &x->nodes[x->nnodes];
            memset(nd, 0, sizeof *nd);
            size_t capn = 0, capr = 0;
            for (size_t q = i + 1; q < P->n && !is_p(&P->t[q], "{"); q++) {
                const tok *tq = &P->t[q];
                if (is_n(tq, "default")) {
                    nd->is_default = true;
                } else if (tq->k == TK_STR || tq->k == TK_DQ || tq->k == TK_NAME) {
                    GROW(nd->names, nd->nnames, capn);
                    nd->names[nd->nnames++] = lower_name(tq->val);
                } else if (tq->k == TK_REGEX && strlen(tq->val) >= 2) {
                    GROW(nd->regexps, nd->nregexps, capr);
                    nd->regexps[nd->nregexps++] = xstrndup(tq->val + 1, strlen(tq->val) - 2);
                }
            }
            P->next_node = (int)x->nnodes++;
        } else if (is_n(t, "type") && nx && nx->k == TK_CLASSREF && i + 2 < P->n && is_p(&P->t[i + 2], "=")) {
            i = type_alias(P, i) - 1;
        } else if ((is_n(t, "include") || is_n(t, "contain") || is_n(t, "require")) && nx &&
                   !(i > 0 && is_p(&P->t[i - 1], "."))) {
            include_call(P, i);
        } else if (is_lookup_fn(t) && nx && is_p(nx, "(")) {
            lookup_call(P, i);
        }
    }
    if (P->depth && !P->L->failed) {
        const scope *s = &P->stack[P->depth - 1];
        problem(P->x, P->path, P->L->line, 1, "a '{' is not closed by the end of the file%s%s",
                s->kind == SC_CLASS ? " (in class " : "", s->kind == SC_CLASS ? s->name : "");
        if (s->kind == SC_CLASS) {
            pp_problem *pr = &P->x->problems[P->x->nproblems - 1];
            char *m = xjoin(pr->message, ")", NULL);
            free(pr->message);
            pr->message = m;
        }
    }
    while (P->depth)
        free(P->stack[--P->depth].name);
    free(P->stack);
    free(P->next_name);
}

bool pp_lex(pp_index *x, const char *path, const char *text, size_t len, tok **toks, size_t *n)
{
    lexer L = {.path = path, .src = text, .len = len, .line = 1, .x = x};
    lex(&L);
    for (size_t h = 0; h < L.npending; h++) /* heredocs still open when the lexer stopped early */
        free(L.pending[h]);
    *toks = L.toks;
    *n = L.ntoks;
    return !L.failed;
}

void pp_toks_free(tok *toks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(toks[i].val);
    free(toks);
}

void pp_index_add_text(pp_index *x, const char *path, const char *text, size_t len)
{
    lexer L = {.path = path, .src = text, .len = len, .line = 1, .x = x};
    lex(&L);
    for (size_t h = 0; h < L.npending; h++) /* heredocs still open when the lexer stopped early */
        free(L.pending[h]);
    L.npending = 0;
    parser P = {.L = &L, .x = x, .path = path, .t = L.toks, .n = L.ntoks, .next_node = -1};
    parse(&P);
    for (size_t i = 0; i < L.ntoks; i++)
        free(L.toks[i].val);
    free(L.toks);
    x->files++;
}

void pp_index_add_file(pp_index *x, const char *path)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe)) {
        problem(x, path, 0, 0, "cannot read the manifest: %s", ERRNO_TEXT(fe.err));
        sb_free(&b);
        return;
    }
    pp_index_add_text(x, path, sb_str(&b), b.len);
    sb_free(&b);
}

/* ------------------------------------------------------------------ templates */

/* lookup('k') and the like found as text in s (a template, a string's interpolations, a heredoc),
 * with line numbers from first_line */
static void scan_text_lookups(pp_index *x, const char *path, const char *s, size_t len, uint32_t first_line)
{
    static const char *const fns[] = {"lookup", "hiera", "hiera_array", "hiera_hash", NULL};
    uint32_t line = first_line;
    size_t line_start = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n') {
            line++;
            line_start = i + 1;
            continue;
        }
        if (s[i] != 'l' && s[i] != 'h')
            continue;
        for (size_t k = 0; fns[k]; k++) {
            size_t fl = strlen(fns[k]);
            if (len - i < fl + 3 || memcmp(s + i, fns[k], fl) != 0 || (i > 0 && (is_word(s[i - 1]))))
                continue;
            size_t j = i + fl;
            /* lookup('k')  |  call_function('lookup', ['k'])  |  function_hiera(['k']) */
            if (s[j] == '\'' || s[j] == '"') {
                if (i < 14 || memcmp(s + i - 14, "call_function(", 14) != 0)
                    continue;
                j++;
                while (j < len && (s[j] == ' ' || s[j] == ','))
                    j++;
                if (j < len && s[j] == '\'')
                    continue;
            }
            if (j < len && is_word(s[j]))
                continue;
            while (j < len && (s[j] == ' ' || s[j] == '(' || s[j] == '[' || s[j] == ','))
                j++;
            if (j < len && s[j] >= 'a' && s[j] <= 'z' && s[j - 1] == '(') {
                /* a bare word, as Puppet code takes it (a name is a string): lookup(ntp::servers)
                 * in a string's "${...}" or an EPP template; in ERB (Ruby) only a qualified
                 * name, which no Ruby variable is */
                size_t we = j;
                bool qualified = false;
                while (we < len && (is_word(s[we]) || (s[we] == ':' && we + 2 < len && s[we + 1] == ':' &&
                                                      s[we + 2] >= 'a' && s[we + 2] <= 'z'))) {
                    if (s[we] == ':') {
                        qualified = true;
                        we += 2;
                    } else {
                        we++;
                    }
                }
                size_t after = we;
                while (after < len && s[after] == ' ')
                    after++;
                size_t pl = strlen(path);
                bool erb = pl >= 4 && !strcmp(path + pl - 4, ".erb");
                if (after < len && (s[after] == ')' || s[after] == ',') && (qualified || !erb)) {
                    GROW(x->lookups, x->nlookups, x->caplookups);
                    x->lookups[x->nlookups++] = (pp_lookup){xstrndup(s + j, we - j), false, xstrdup(""), k >= 2,
                                                            xstrdup(path), line, (uint32_t)(i - line_start + 1),
                                                            false, NULL, -1, false, NULL, NULL};
                }
                continue;
            }
            if (j >= len || (s[j] != '\'' && s[j] != '"'))
                continue;
            char q = s[j];
            size_t ks = j + 1, ke = ks;
            while (ke < len && s[ke] != q && s[ke] != '\n')
                ke++;
            if (ke >= len || s[ke] != q || ke == ks)
                continue;
            char *key = xstrndup(s + ks, ke - ks);
            char *interp = q == '"' ? strstr(key, "#{") : NULL;
            char *pinterp = q == '"' ? strstr(key, "${") : NULL;
            char *cut = interp && (!pinterp || interp < pinterp) ? interp : pinterp;
            bool prefix = cut != NULL;
            char *suffix = xstrdup("");
            if (cut) {
                char *close = strrchr(cut, '}');
                free(suffix);
                suffix = xstrdup(close ? close + 1 : "");
                *cut = 0;
            }
            GROW(x->lookups, x->nlookups, x->caplookups);
            x->lookups[x->nlookups++] = (pp_lookup){key, prefix, suffix, k >= 2, xstrdup(path), line,
                                                    (uint32_t)(i - line_start + 1), false, NULL, -1, false, NULL, NULL};
        }
    }
}

void pp_index_add_template(pp_index *x, const char *path)
{
    sbuf b = {0};
    file_read(path, &b, NULL, NULL); /* an unreadable template has no lookups */
    scan_text_lookups(x, path, sb_str(&b), b.len, 1);
    sb_free(&b);
}
