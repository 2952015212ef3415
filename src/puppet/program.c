/* program.c - the main manifest's top scope and node definitions, parsed into statements and
 * expressions and evaluated per node (program.h).
 *
 * The parser works on the tokens of lex.h: statements it knows (assignments, if/unless/case,
 * include/contain/require, class { 'x': }, function calls, node definitions) become a small tree;
 * everything else (resources, defaults, collectors, class and define definitions) is stepped over
 * by its brackets. Expressions are read by precedence climbing with Puppet's precedences (egrammar):
 * or < and < comparisons < == != < =~ !~ < in < << >> < + - < * / % < selector < unary < [] and
 * method calls. Written by hand: no C library reads Puppet.
 *
 * The evaluator follows Puppet's semantics where it computes anything: == compares strings
 * case-insensitively, undef and false are falsy, $x reads the node scope, then the top scope
 * (facts are top-scope variables), $::x the top scope only; a double-quoted string interpolates
 * undef as ''. A value it cannot compute is NULL (unknown) and every decision that depends on it
 * is left open rather than guessed (program.h). */
#include "puppet/program.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fileio.h"
#include "base/rregex.h"
#include "base/util.h"
#include "formats/render.h"
#include "puppet/lex.h"

/* ------------------------------------------------------------------ the tree */

typedef enum {
    PX_LIT,     /* lit */
    PX_VAR,     /* s: the name as written (::x for top scope) */
    PX_STR,     /* a: the parts of an interpolated string */
    PX_ACCESS,  /* a[0][a[1], ...] */
    PX_CALL,    /* s(a...) */
    PX_METHOD,  /* a[0].s(a[1]...) */
    PX_NOT,     /* !a[0] */
    PX_NEG,     /* -a[0] */
    PX_BIN,     /* a[0] s a[1] */
    PX_SELECT,  /* a[0] ? { a[1] => a[2], ... } */
    PX_ARRAY,   /* [a...] */
    PX_HASH,    /* {a[0] => a[1], ...} */
    PX_REGEX,   /* s: the source */
    PX_DEFAULT, /* default */
    PX_TYPE,    /* s: a type (its name) */
    PX_UNKNOWN  /* anything else */
} px_kind;

typedef struct pp_expr {
    px_kind k;
    char *s;
    hv *lit;
    struct pp_expr **a;
    size_t na, cap;
    bool lambda;          /* PX_CALL/PX_METHOD: a lambda follows */
    bool lambda_includes; /* its body includes/contains one of its parameters (each |$c| { include $c }) */
    uint32_t line;
} pp_expr;

typedef enum { PS_ASSIGN, PS_IF, PS_CASE, PS_EXPR, PS_INCLUDE } ps_kind;

typedef struct pp_stmt pp_stmt;

typedef struct {
    pp_stmt **v;
    size_t n, cap;
} pp_block;

typedef struct {
    pp_expr **opts;
    size_t nopts, cap;
    pp_block body;
} pp_case;

struct pp_stmt {
    ps_kind k;
    char *var;      /* PS_ASSIGN */
    pp_expr *e;     /* the value, condition, case subject, call; PS_INCLUDE: an array of what is declared */
    bool negate;    /* unless */
    pp_block then, els;
    pp_case *cases; /* PS_CASE */
    size_t ncases, capcases;
    const char *file; /* the program's copy */
    uint32_t line;
};

typedef struct {
    char **names; /* lower case */
    size_t nnames;
    rregex **regexps;
    size_t nregexps;
    bool dflt;
    pp_block body;
    const char *file;
} pp_nodedef;

struct pp_program {
    hv_nodes lits; /* the literals, immortal: threads evaluate the program at once */
    pp_block top;
    pp_nodedef *nodes;
    size_t nnodes, capnodes;
    char **files; /* the paths read (statements point at them) */
    size_t nfiles;
};

#define GROW(arr, n, cap)                                                  \
    do {                                                                   \
        if ((n) == (cap)) {                                                \
            (cap) = (cap) ? (cap) * 2 : 8;                                 \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));                \
        }                                                                  \
    } while (0)

static pp_expr *ex_new(px_kind k, uint32_t line)
{
    pp_expr *e = xcalloc(1, sizeof *e);
    e->k = k;
    e->line = line;
    return e;
}

static void ex_add(pp_expr *e, pp_expr *kid)
{
    GROW(e->a, e->na, e->cap);
    e->a[e->na++] = kid;
}

static void ex_free(pp_expr *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->na; i++)
        ex_free(e->a[i]);
    free(e->a);
    free(e->s);
    hv_decref(e->lit);
    free(e);
}

static void block_free(pp_block *b);

static void st_free(pp_stmt *s)
{
    if (!s)
        return;
    free(s->var);
    ex_free(s->e);
    block_free(&s->then);
    block_free(&s->els);
    for (size_t i = 0; i < s->ncases; i++) {
        for (size_t j = 0; j < s->cases[i].nopts; j++)
            ex_free(s->cases[i].opts[j]);
        free(s->cases[i].opts);
        block_free(&s->cases[i].body);
    }
    free(s->cases);
    free(s);
}

static void block_free(pp_block *b)
{
    for (size_t i = 0; i < b->n; i++)
        st_free(b->v[i]);
    free(b->v);
    memset(b, 0, sizeof *b);
}

static void block_add(pp_block *b, pp_stmt *s)
{
    if (!s)
        return;
    GROW(b->v, b->n, b->cap);
    b->v[b->n++] = s;
}

pp_program *pp_program_new(void) { return xcalloc(1, sizeof(pp_program)); }

void pp_program_free(pp_program *p)
{
    if (!p)
        return;
    block_free(&p->top);
    for (size_t i = 0; i < p->nnodes; i++) {
        pp_nodedef *nd = &p->nodes[i];
        for (size_t j = 0; j < nd->nnames; j++)
            free(nd->names[j]);
        free(nd->names);
        for (size_t j = 0; j < nd->nregexps; j++)
            rregex_free(nd->regexps[j]);
        free(nd->regexps);
        block_free(&nd->body);
    }
    free(p->nodes);
    for (size_t i = 0; i < p->nfiles; i++)
        free(p->files[i]);
    free(p->files);
    hv_free_immortal(&p->lits);
    free(p);
}

static void immortal_expr(pp_program *p, pp_expr *e)
{
    if (!e)
        return;
    if (e->lit)
        hv_make_immortal(e->lit, &p->lits);
    for (size_t i = 0; i < e->na; i++)
        immortal_expr(p, e->a[i]);
}

static void immortal_block(pp_program *p, pp_block *b)
{
    for (size_t i = 0; i < b->n; i++) {
        pp_stmt *s = b->v[i];
        immortal_expr(p, s->e);
        immortal_block(p, &s->then);
        immortal_block(p, &s->els);
        for (size_t j = 0; j < s->ncases; j++) {
            for (size_t k = 0; k < s->cases[j].nopts; k++)
                immortal_expr(p, s->cases[j].opts[k]);
            immortal_block(p, &s->cases[j].body);
        }
    }
}

bool pp_program_empty(const pp_program *p) { return !p || (!p->top.n && !p->nnodes); }

/* ------------------------------------------------------------------ the parser */

#define MAX_DEPTH 200

typedef struct {
    pp_program *prog;
    const char *file; /* the program's copy of the path */
    const char *src;
    tok *t;
    size_t n;
    int depth;
} parser;

static bool is_p(const tok *t, const char *p) { return t->k == TK_PUNCT && strcmp(t->val, p) == 0; }
static bool is_n(const tok *t, const char *n) { return t->k == TK_NAME && strcmp(t->val, n) == 0; }
static bool opener(const tok *t) { return is_p(t, "(") || is_p(t, "[") || is_p(t, "{"); }
static bool closer(const tok *t) { return is_p(t, ")") || is_p(t, "]") || is_p(t, "}"); }

/* the bracket closing the one at i (or end when none does before it) */
static size_t close_of(const parser *P, size_t i, size_t end)
{
    int depth = 0;
    for (size_t j = i; j < end; j++) {
        if (opener(&P->t[j]))
            depth++;
        else if (closer(&P->t[j]) && --depth == 0)
            return j;
    }
    return end;
}

static bool at_p(const parser *P, size_t i, size_t end, const char *p) { return i < end && is_p(&P->t[i], p); }
static bool at_n(const parser *P, size_t i, size_t end, const char *n) { return i < end && is_n(&P->t[i], n); }

static pp_expr *parse_expr(parser *P, size_t *i, size_t end, int minbp);
static void parse_block(parser *P, size_t i, size_t end, pp_block *out);

/* A lambda |params| { body } at *i: stepped over; whether its body includes/contains a variable. */
static bool skip_lambda(parser *P, size_t *i, size_t end, bool *includes)
{
    if (!at_p(P, *i, end, "|"))
        return false;
    size_t j = *i + 1;
    while (j < end && !is_p(&P->t[j], "|"))
        j++;
    if (j >= end || !at_p(P, j + 1, end, "{"))
        return false;
    size_t close = close_of(P, j + 1, end);
    for (size_t q = j + 2; q + 1 < close; q++)
        if ((is_n(&P->t[q], "include") || is_n(&P->t[q], "contain")) &&
            (P->t[q + 1].k == TK_VAR || (is_p(&P->t[q + 1], "(") && q + 2 < close && P->t[q + 2].k == TK_VAR)))
            *includes = true;
    *i = close < end ? close + 1 : end;
    return true;
}

/* arguments a, b, c up to the closing bracket at close (i just past the opener) */
static void parse_args(parser *P, size_t i, size_t close, pp_expr *into)
{
    while (i < close) {
        size_t before = i;
        pp_expr *a = parse_expr(P, &i, close, 0);
        ex_add(into, a);
        if (i < close && is_p(&P->t[i], ","))
            i++;
        else if (i < close || i == before)
            break;
    }
}

/* A double-quoted string's text (between its quotes): literal parts and interpolations. */
static pp_expr *parse_dq(parser *P, const char *s, size_t n, uint32_t line)
{
    pp_expr *e = ex_new(PX_STR, line);
    sbuf lit = {0};
    size_t i = 0;
    bool ok = true;
    while (i < n && ok) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            char x = s[i + 1];
            switch (x) {
            case 'n': sb_addc(&lit, '\n'); break;
            case 't': sb_addc(&lit, '\t'); break;
            case 'r': sb_addc(&lit, '\r'); break;
            case 's': sb_addc(&lit, ' '); break;
            case '"': case '\'': case '\\': case '$': sb_addc(&lit, x); break;
            case '\n': break;
            case 'u': ok = false; break; /* \u{...}: not computed */
            default: sb_addc(&lit, '\\'); sb_addc(&lit, x); break;
            }
            i += 2;
            continue;
        }
        if (c == '$' && i + 1 < n && (s[i + 1] == '{' || isalnum((unsigned char)s[i + 1]) || s[i + 1] == '_' ||
                                      (s[i + 1] == ':' && i + 2 < n && s[i + 2] == ':'))) {
            if (lit.len) {
                pp_expr *l = ex_new(PX_LIT, line);
                l->lit = hv_strn(lit.s, lit.len);
                ex_add(e, l);
                lit.len = 0;
            }
            if (s[i + 1] != '{') {
                /* $name: a variable ($a::b qualified) */
                size_t j = i + 1;
                if (s[j] == ':')
                    j += 2;
                while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_' ||
                                 (s[j] == ':' && j + 2 < n && s[j + 1] == ':' && (isalnum((unsigned char)s[j + 2]) || s[j + 2] == '_'))))
                    j += s[j] == ':' ? 2 : 1;
                pp_expr *v = ex_new(PX_VAR, line);
                v->s = xstrndup(s + i + 1, j - i - 1);
                ex_add(e, v);
                i = j;
                continue;
            }
            /* ${ expression }: the braces matched over the text (strings inside are lexed below) */
            size_t j = i + 2;
            int depth = 1;
            char q = 0;
            while (j < n && depth) {
                if (q) {
                    if (s[j] == '\\')
                        j++;
                    else if (s[j] == q)
                        q = 0;
                } else if (s[j] == '"' || s[j] == '\'') {
                    q = s[j];
                } else if (s[j] == '{') {
                    depth++;
                } else if (s[j] == '}') {
                    depth--;
                    if (!depth)
                        break;
                }
                j++;
            }
            if (depth) {
                ok = false;
                break;
            }
            tok *toks = NULL;
            size_t nt = 0;
            char *inner = xstrndup(s + i + 2, j - i - 2);
            bool lexed = pp_lex(NULL, P->file, inner, strlen(inner), &toks, &nt);
            pp_expr *x = NULL;
            if (lexed && nt && P->depth < MAX_DEPTH) {
                /* ${name...}: a bare name first is the variable $name */
                if (toks[0].k == TK_NAME && !(nt > 1 && is_p(&toks[1], "("))) {
                    toks[0].k = TK_VAR;
                }
                parser sub = {P->prog, P->file, inner, toks, nt, P->depth + 1};
                size_t k = 0;
                x = parse_expr(&sub, &k, nt, 0);
                if (k != nt) {
                    ex_free(x);
                    x = NULL;
                }
            }
            pp_toks_free(toks, nt);
            free(inner);
            ex_add(e, x ? x : ex_new(PX_UNKNOWN, line));
            i = j + 1;
            continue;
        }
        sb_addc(&lit, c);
        i++;
    }
    if (!ok) {
        sb_free(&lit);
        ex_free(e);
        return ex_new(PX_UNKNOWN, line);
    }
    if (lit.len || !e->na) {
        pp_expr *l = ex_new(PX_LIT, line);
        l->lit = hv_strn(lit.s ? lit.s : "", lit.len);
        ex_add(e, l);
    }
    sb_free(&lit);
    return e;
}

static hv *number_of(const char *s)
{
    char *end = NULL;
    if (strchr(s, '.') || ((strchr(s, 'e') || strchr(s, 'E')) && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))) {
        double d = strtod(s, &end);
        return end && !*end ? hv_float(d) : NULL;
    }
    long long v;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        v = strtoll(s + 2, &end, 16);
    else if (s[0] == '0' && s[1])
        v = strtoll(s + 1, &end, 8);
    else
        v = strtoll(s, &end, 10);
    return end && !*end ? hv_int(v) : NULL;
}

/* if/unless/case used as an expression ($x = if ...): stepped over, unknown */
static void skip_control(parser *P, size_t *i, size_t end)
{
    size_t j = *i + 1;
    for (;;) {
        while (j < end && !is_p(&P->t[j], "{"))
            j++;
        if (j >= end)
            break;
        j = close_of(P, j, end) + 1;
        if (at_n(P, j, end, "elsif") || at_n(P, j, end, "else")) {
            j++;
            continue;
        }
        break;
    }
    *i = j < end ? j : end;
}

static pp_expr *parse_primary(parser *P, size_t *i, size_t end)
{
    if (*i >= end)
        return ex_new(PX_UNKNOWN, 0);
    tok *t = &P->t[*i];
    uint32_t line = t->line;
    pp_expr *e;
    switch (t->k) {
    case TK_STR:
        e = ex_new(PX_LIT, line);
        e->lit = hv_str(t->val);
        (*i)++;
        return e;
    case TK_DQ:
        (*i)++;
        if (!t->interp) {
            e = ex_new(PX_LIT, line);
            e->lit = hv_str(t->val);
            return e;
        }
        return parse_dq(P, P->src + t->s + 1, t->e - t->s - 2, line);
    case TK_NUM: {
        (*i)++;
        hv *v = number_of(t->val);
        e = ex_new(v ? PX_LIT : PX_UNKNOWN, line);
        e->lit = v;
        return e;
    }
    case TK_REGEX:
        (*i)++;
        e = ex_new(PX_REGEX, line);
        e->s = xstrndup(t->val + 1, strlen(t->val) >= 2 ? strlen(t->val) - 2 : 0);
        return e;
    case TK_VAR:
        (*i)++;
        e = ex_new(PX_VAR, line);
        e->s = xstrdup(t->val);
        return e;
    case TK_HEREDOC:
        (*i)++;
        return ex_new(PX_UNKNOWN, line);
    case TK_NAME:
        if (is_n(t, "true") || is_n(t, "false")) {
            (*i)++;
            e = ex_new(PX_LIT, line);
            e->lit = hv_bool(is_n(t, "true"));
            return e;
        }
        if (is_n(t, "undef")) {
            (*i)++;
            e = ex_new(PX_LIT, line);
            e->lit = hv_undef();
            return e;
        }
        if (is_n(t, "default")) {
            (*i)++;
            return ex_new(PX_DEFAULT, line);
        }
        if (is_n(t, "if") || is_n(t, "unless") || is_n(t, "case")) {
            skip_control(P, i, end);
            return ex_new(PX_UNKNOWN, line);
        }
        if (at_p(P, *i + 1, end, "(")) {
            size_t close = close_of(P, *i + 1, end);
            e = ex_new(PX_CALL, line);
            e->s = xstrdup(t->val[0] == ':' && t->val[1] == ':' ? t->val + 2 : t->val);
            parse_args(P, *i + 2, close, e);
            *i = close < end ? close + 1 : end;
            e->lambda = skip_lambda(P, i, end, &e->lambda_includes);
            return e;
        }
        /* a bare word is a string */
        (*i)++;
        e = ex_new(PX_LIT, line);
        e->lit = hv_str(t->val);
        return e;
    case TK_CLASSREF:
        (*i)++;
        e = ex_new(PX_TYPE, line);
        e->s = xstrdup(t->val);
        if (at_p(P, *i, end, "[") && P->t[*i].s == t->e) {
            size_t close = close_of(P, *i, end);
            *i = close < end ? close + 1 : end;
        }
        if (at_p(P, *i, end, "(")) {
            /* Type(value): a conversion; String(x) is computed */
            size_t close = close_of(P, *i, end);
            pp_expr *c = ex_new(PX_CALL, line);
            c->s = xjoin("new:", e->s, NULL);
            parse_args(P, *i + 1, close, c);
            *i = close < end ? close + 1 : end;
            ex_free(e);
            return c;
        }
        return e;
    case TK_PUNCT:
        if (is_p(t, "(")) {
            size_t close = close_of(P, *i, end);
            size_t k = *i + 1;
            e = parse_expr(P, &k, close, 0);
            if (k != close) {
                ex_free(e);
                e = ex_new(PX_UNKNOWN, line);
            }
            *i = close < end ? close + 1 : end;
            return e;
        }
        if (is_p(t, "[")) {
            size_t close = close_of(P, *i, end);
            e = ex_new(PX_ARRAY, line);
            parse_args(P, *i + 1, close, e);
            *i = close < end ? close + 1 : end;
            return e;
        }
        if (is_p(t, "{")) {
            size_t close = close_of(P, *i, end);
            e = ex_new(PX_HASH, line);
            size_t k = *i + 1;
            while (k < close) {
                pp_expr *key = parse_expr(P, &k, close, 0);
                if (!at_p(P, k, close, "=>")) {
                    ex_free(key);
                    ex_free(e);
                    e = ex_new(PX_UNKNOWN, line);
                    break;
                }
                k++;
                pp_expr *val = parse_expr(P, &k, close, 0);
                ex_add(e, key);
                ex_add(e, val);
                if (at_p(P, k, close, ","))
                    k++;
                else if (k < close) {
                    ex_free(e);
                    e = ex_new(PX_UNKNOWN, line);
                    break;
                }
            }
            *i = close < end ? close + 1 : end;
            return e;
        }
        if (is_p(t, "!")) {
            (*i)++;
            e = ex_new(PX_NOT, line);
            ex_add(e, parse_expr(P, i, end, 11));
            return e;
        }
        if (is_p(t, "-")) {
            (*i)++;
            e = ex_new(PX_NEG, line);
            ex_add(e, parse_expr(P, i, end, 11));
            return e;
        }
        break;
    default:
        break;
    }
    (*i)++;
    return ex_new(PX_UNKNOWN, line);
}

static int binop_bp(const tok *t)
{
    if (t->k == TK_NAME)
        return !strcmp(t->val, "or") ? 1 : !strcmp(t->val, "and") ? 2 : !strcmp(t->val, "in") ? 6 : 0;
    if (t->k != TK_PUNCT)
        return 0;
    static const struct {
        const char *op;
        int bp;
    } ops[] = {{"<", 3},  {">", 3},  {"<=", 3}, {">=", 3}, {"==", 4}, {"!=", 4}, {"=~", 5}, {"!~", 5},
               {"<<", 7}, {">>", 7}, {"+", 8},  {"-", 8},  {"*", 9},  {"/", 9},  {"%", 9}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(t->val, ops[i].op))
            return ops[i].bp;
    return 0;
}

#define SELECTOR_BP 10

static pp_expr *parse_expr(parser *P, size_t *i, size_t end, int minbp)
{
    if (P->depth >= MAX_DEPTH) {
        *i = end;
        return ex_new(PX_UNKNOWN, 0);
    }
    P->depth++;
    pp_expr *lhs = parse_primary(P, i, end);
    while (*i < end) {
        const tok *t = &P->t[*i];
        if (is_p(t, "[") && *i > 0 && P->t[*i - 1].e == t->s) {
            size_t close = close_of(P, *i, end);
            pp_expr *a = ex_new(PX_ACCESS, t->line);
            ex_add(a, lhs);
            parse_args(P, *i + 1, close, a);
            *i = close < end ? close + 1 : end;
            lhs = a;
            continue;
        }
        if (is_p(t, ".") && *i + 1 < end && (P->t[*i + 1].k == TK_NAME)) {
            pp_expr *m = ex_new(PX_METHOD, t->line);
            m->s = xstrdup(P->t[*i + 1].val);
            ex_add(m, lhs);
            *i += 2;
            if (at_p(P, *i, end, "(") && P->t[*i].s == P->t[*i - 1].e) {
                size_t close = close_of(P, *i, end);
                parse_args(P, *i + 1, close, m);
                *i = close < end ? close + 1 : end;
            }
            m->lambda = skip_lambda(P, i, end, &m->lambda_includes);
            lhs = m;
            continue;
        }
        if (is_p(t, "?") && at_p(P, *i + 1, end, "{")) {
            if (SELECTOR_BP < minbp)
                break;
            size_t close = close_of(P, *i + 1, end);
            pp_expr *s = ex_new(PX_SELECT, t->line);
            ex_add(s, lhs);
            size_t k = *i + 2;
            bool ok = true;
            while (k < close && ok) {
                pp_expr *opt = parse_expr(P, &k, close, 0);
                if (!at_p(P, k, close, "=>")) {
                    ex_free(opt);
                    ok = false;
                    break;
                }
                k++;
                pp_expr *val = parse_expr(P, &k, close, 0);
                ex_add(s, opt);
                ex_add(s, val);
                if (at_p(P, k, close, ","))
                    k++;
                else if (k < close)
                    ok = false;
            }
            if (!ok) {
                ex_free(s);
                s = ex_new(PX_UNKNOWN, t->line);
            }
            *i = close < end ? close + 1 : end;
            lhs = s;
            continue;
        }
        int bp = binop_bp(t);
        if (!bp || bp < minbp)
            break;
        (*i)++;
        pp_expr *b = ex_new(PX_BIN, t->line);
        b->s = xstrdup(t->val);
        ex_add(b, lhs);
        ex_add(b, parse_expr(P, i, end, bp + 1));
        lhs = b;
    }
    P->depth--;
    return lhs;
}

static pp_stmt *st_new(parser *P, ps_kind k, const tok *at)
{
    pp_stmt *s = xcalloc(1, sizeof *s);
    s->k = k;
    s->file = P->file;
    s->line = at->line;
    return s;
}

/* { body } at *i: its statements into out; *i past the closing brace. False when no brace. */
static bool parse_braced(parser *P, size_t *i, size_t end, pp_block *out)
{
    if (!at_p(P, *i, end, "{"))
        return false;
    size_t close = close_of(P, *i, end);
    if (P->depth < MAX_DEPTH) {
        P->depth++;
        parse_block(P, *i + 1, close, out);
        P->depth--;
    }
    *i = close < end ? close + 1 : end;
    return true;
}

/* The statements functions called without parentheses may start (egrammar's statement calls). */
static bool statement_call(const tok *t)
{
    static const char *const names[] = {"require", "realize", "include", "contain", "tag", "debug", "info", "notice",
                                        "warning", "err", "alert", "crit", "emerg", "fail", "hiera_include", NULL};
    for (size_t i = 0; names[i]; i++)
        if (is_n(t, names[i]))
            return true;
    return false;
}

/* node 'a', /re/, default { body } (i at 'node') */
static void parse_node(parser *P, size_t *i, size_t end)
{
    pp_program *p = P->prog;
    GROW(p->nodes, p->nnodes, p->capnodes);
    pp_nodedef *nd = &p->nodes[p->nnodes++];
    memset(nd, 0, sizeof *nd);
    nd->file = P->file;
    size_t capn = 0, capr = 0;
    size_t j = *i + 1;
    for (; j < end && !is_p(&P->t[j], "{"); j++) {
        const tok *t = &P->t[j];
        if (is_n(t, "default")) {
            nd->dflt = true;
        } else if (t->k == TK_STR || t->k == TK_DQ || t->k == TK_NAME) {
            GROW(nd->names, nd->nnames, capn);
            char *n = xstrdup(t->val);
            for (char *q = n; *q; q++)
                *q = (char)tolower((unsigned char)*q);
            nd->names[nd->nnames++] = n;
        } else if (t->k == TK_REGEX && strlen(t->val) >= 2) {
            herr err = {0};
            rregex *re = rregex_new(t->val + 1, strlen(t->val) - 2, &err);
            herr_clear(&err);
            if (re) {
                GROW(nd->regexps, nd->nregexps, capr);
                nd->regexps[nd->nregexps++] = re;
            }
        }
    }
    *i = j;
    parse_braced(P, i, end, &nd->body);
}

/* Steps over a definition: class/define/function/plan NAME (params) [inherits X] [>> Type] { body } */
static void skip_definition(parser *P, size_t *i, size_t end)
{
    size_t j = *i + 1;
    while (j < end && !is_p(&P->t[j], "{")) {
        if (opener(&P->t[j]))
            j = close_of(P, j, end);
        j++;
    }
    *i = j < end ? close_of(P, j, end) + 1 : end;
    if (*i > end)
        *i = end;
}

/* class { 'a': p => v; 'b': ... }  (i at 'class'): declares the titles */
static pp_stmt *class_resource(parser *P, size_t *i, size_t end)
{
    const tok *at = &P->t[*i];
    size_t open = *i + 1, close = close_of(P, open, end);
    pp_stmt *s = st_new(P, PS_INCLUDE, at);
    s->e = ex_new(PX_ARRAY, at->line);
    size_t k = open + 1;
    while (k < close) {
        /* titles up to ':' */
        size_t colon = k;
        while (colon < close && !is_p(&P->t[colon], ":"))
            colon++;
        if (colon >= close)
            break;
        size_t q = k;
        pp_expr *title = parse_expr(P, &q, colon, 0);
        /* the attributes (given parameters), to the next ';' at this depth */
        pp_expr *given = ex_new(PX_LIT, at->line);
        given->lit = hv_array();
        k = colon + 1;
        while (k < close && !is_p(&P->t[k], ";")) {
            if (P->t[k].k == TK_NAME && at_p(P, k + 1, close, "=>") && (k == colon + 1 || is_p(&P->t[k - 1], ",")))
                hv_array_push(given->lit, hv_str(P->t[k].val));
            if (opener(&P->t[k]))
                k = close_of(P, k, close);
            k++;
        }
        k++;
        /* a pair: the title, then the names of the parameters given */
        pp_expr *pair = ex_new(PX_ARRAY, at->line);
        ex_add(pair, title);
        ex_add(pair, given);
        ex_add(s->e, pair);
    }
    *i = close < end ? close + 1 : end;
    return s;
}

/* One statement at *i (advanced past it); NULL when it does nothing the evaluation sees. */
static pp_stmt *parse_statement(parser *P, size_t *i, size_t end)
{
    tok *t = &P->t[*i];
    if (t->k == TK_VAR && at_p(P, *i + 1, end, "=")) {
        pp_stmt *s = st_new(P, PS_ASSIGN, t);
        s->var = xstrdup(t->val[0] == ':' && t->val[1] == ':' ? t->val + 2 : t->val);
        *i += 2;
        s->e = parse_expr(P, i, end, 0);
        return s;
    }
    if (t->k == TK_NAME) {
        if (is_n(t, "if") || is_n(t, "unless")) {
            pp_stmt *s = st_new(P, PS_IF, t);
            s->negate = is_n(t, "unless");
            (*i)++;
            s->e = parse_expr(P, i, end, 0);
            if (!parse_braced(P, i, end, &s->then)) {
                st_free(s);
                return NULL;
            }
            if (at_n(P, *i, end, "elsif") && !s->negate) {
                free(P->t[*i].val); /* "elsif" read as an "if" in the else branch */
                P->t[*i].val = xstrdup("if");
                pp_stmt *nested = parse_statement(P, i, end);
                block_add(&s->els, nested);
            } else if (at_n(P, *i, end, "else")) {
                (*i)++;
                parse_braced(P, i, end, &s->els);
            }
            return s;
        }
        if (is_n(t, "case")) {
            pp_stmt *s = st_new(P, PS_CASE, t);
            (*i)++;
            s->e = parse_expr(P, i, end, 0);
            if (!at_p(P, *i, end, "{")) {
                st_free(s);
                return NULL;
            }
            size_t close = close_of(P, *i, end);
            size_t k = *i + 1;
            while (k < close) {
                GROW(s->cases, s->ncases, s->capcases);
                pp_case *c = &s->cases[s->ncases++];
                memset(c, 0, sizeof *c);
                while (k < close && !is_p(&P->t[k], ":")) {
                    size_t before = k;
                    pp_expr *o = parse_expr(P, &k, close, 0);
                    GROW(c->opts, c->nopts, c->cap);
                    c->opts[c->nopts++] = o;
                    if (at_p(P, k, close, ","))
                        k++;
                    else if (!at_p(P, k, close, ":") || k == before)
                        break;
                }
                if (!at_p(P, k, close, ":")) {
                    break;
                }
                k++;
                if (!parse_braced(P, &k, close, &c->body))
                    break;
            }
            *i = close < end ? close + 1 : end;
            return s;
        }
        if (is_n(t, "node") && *i + 1 < end && !is_p(&P->t[*i + 1], "(") && !is_p(&P->t[*i + 1], "=>")) {
            parse_node(P, i, end);
            return NULL;
        }
        if (is_n(t, "class") && at_p(P, *i + 1, end, "{"))
            return class_resource(P, i, end);
        if ((is_n(t, "class") || is_n(t, "define") || is_n(t, "function") || is_n(t, "plan") || is_n(t, "application") ||
             is_n(t, "site")) &&
            *i + 1 < end && (P->t[*i + 1].k == TK_NAME || P->t[*i + 1].k == TK_CLASSREF || is_p(&P->t[*i + 1], "{"))) {
            skip_definition(P, i, end);
            return NULL;
        }
        if (is_n(t, "type") && *i + 1 < end && P->t[*i + 1].k == TK_CLASSREF) {
            *i += 2;
            if (at_p(P, *i, end, "=")) {
                (*i)++;
                ex_free(parse_expr(P, i, end, 0));
            }
            return NULL;
        }
        if (statement_call(t) && !at_p(P, *i + 1, end, "(")) {
            /* include a, b / notice 'x' / fail "x": a call without parentheses */
            pp_expr *c = ex_new(PX_CALL, t->line);
            c->s = xstrdup(t->val);
            (*i)++;
            while (*i < end) {
                const tok *a = &P->t[*i];
                if (a->nl_before && c->na == 0 && !(a->k == TK_STR || a->k == TK_DQ || a->k == TK_NAME || a->k == TK_VAR ||
                                                    is_p(a, "[")))
                    break;
                size_t before = *i;
                ex_add(c, parse_expr(P, i, end, 0));
                if (at_p(P, *i, end, ","))
                    (*i)++;
                else
                    break;
                if (*i == before)
                    break;
            }
            pp_stmt *s = st_new(P, PS_EXPR, t);
            s->e = c;
            return s;
        }
        if (at_p(P, *i + 1, end, "(")) {
            pp_stmt *s = st_new(P, PS_EXPR, t);
            s->e = parse_expr(P, i, end, 0);
            return s;
        }
        if (at_p(P, *i + 1, end, "{")) {
            /* a resource: type { 'title': ... } */
            size_t close = close_of(P, *i + 1, end);
            *i = close < end ? close + 1 : end;
            return NULL;
        }
        (*i)++;
        return NULL;
    }
    if (t->k == TK_VAR || t->k == TK_STR || t->k == TK_DQ || is_p(t, "[") || is_p(t, "(")) {
        /* an expression used for its effects: $list.each |$x| { ... }, ['a'].include */
        pp_stmt *s = st_new(P, PS_EXPR, t);
        size_t before = *i;
        s->e = parse_expr(P, i, end, 0);
        if (*i == before)
            (*i)++;
        if (s->e->k != PX_METHOD && s->e->k != PX_CALL) {
            st_free(s);
            return NULL;
        }
        return s;
    }
    if (t->k == TK_CLASSREF && at_p(P, *i + 1, end, "{")) {
        size_t close = close_of(P, *i + 1, end); /* resource defaults */
        *i = close < end ? close + 1 : end;
        return NULL;
    }
    if (opener(t)) {
        size_t close = close_of(P, *i, end);
        *i = close < end ? close + 1 : end;
        return NULL;
    }
    (*i)++;
    return NULL;
}

static void parse_block(parser *P, size_t i, size_t end, pp_block *out)
{
    while (i < end) {
        size_t before = i;
        block_add(out, parse_statement(P, &i, end));
        if (i <= before)
            i = before + 1;
    }
}

void pp_program_add_text(pp_program *p, const char *path, const char *text, size_t len)
{
    tok *toks = NULL;
    size_t n = 0;
    pp_lex(NULL, path, text, len, &toks, &n); /* (a file that does not lex whole: what was read) */
    p->files = xrealloc(p->files, (p->nfiles + 1) * sizeof *p->files);
    p->files[p->nfiles] = xstrdup(path);
    parser P = {p, p->files[p->nfiles], text, toks, n, 0};
    p->nfiles++;
    size_t first_node = p->nnodes, first_top = p->top.n;
    parse_block(&P, 0, n, &p->top);
    pp_toks_free(toks, n);
    pp_block added = {p->top.v + first_top, p->top.n - first_top, 0};
    immortal_block(p, &added);
    for (size_t i = first_node; i < p->nnodes; i++)
        immortal_block(p, &p->nodes[i].body);
}

void pp_program_add_file(pp_program *p, const char *path)
{
    sbuf b = {0};
    if (file_read(path, &b, NULL, NULL))
        pp_program_add_text(p, path, sb_str(&b), b.len);
    sb_free(&b);
}

int pp_program_match_node(const pp_program *p, const char *certname)
{
    if (!p)
        return -1;
    char *name = xstrdup(certname);
    for (char *q = name; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    int found = -1;
    for (size_t i = 0; i < p->nnodes && found < 0; i++)
        for (size_t j = 0; j < p->nodes[i].nnames; j++)
            if (!strcmp(p->nodes[i].names[j], name))
                found = (int)i;
    for (size_t i = 0; i < p->nnodes && found < 0; i++)
        for (size_t j = 0; j < p->nodes[i].nregexps; j++)
            if (rregex_search(p->nodes[i].regexps[j], name, strlen(name))) {
                found = (int)i;
                break;
            }
    for (size_t i = 0; i < p->nnodes && found < 0; i++)
        if (p->nodes[i].dflt)
            found = (int)i;
    free(name);
    return found;
}

/* ------------------------------------------------------------------ the evaluator */

typedef struct {
    const pp_program *p;
    const pp_eval_env *env;
    const hv *scope; /* before any code */
    hv *top;         /* set at top scope */
    hv *local;       /* set in the node definition (NULL at top scope) */
    pp_eval_result *r;
    int uncertain;   /* > 0: in a branch that may or may not run */
    bool stop;       /* fail() was called */
    int depth;
    const char *file;
} ev;

static hv *ev_expr(ev *E, const pp_expr *x);
static void ev_block(ev *E, const pp_block *b);

/* $name: NULL when unknown (a new reference otherwise) */
static hv *get_var(ev *E, const char *name)
{
    bool top = name[0] == ':' && name[1] == ':';
    if (top)
        name += 2;
    if (strstr(name, "::")) {
        if (!strncmp(name, "settings::", 10)) {
            hv *v = hv_hash_gets(E->scope, name);
            return v ? hv_incref(v) : NULL;
        }
        return NULL; /* a class's variable */
    }
    if (!*name || isdigit((unsigned char)name[0]))
        return NULL; /* match results */
    if (!top && E->local) {
        hv *v = hv_hash_gets(E->local, name);
        if (v)
            return hv_incref(v);
    }
    if (hv_hash_gets(E->r->unknown, name))
        return NULL;
    hv *v = hv_hash_gets(E->top, name);
    if (!v)
        v = hv_hash_gets(E->scope, name);
    if (v)
        return hv_incref(v);
    return E->r->any ? NULL : hv_undef();
}

static void set_var(ev *E, const char *name, hv *value /* taken; NULL: unknown */)
{
    if (strstr(name, "::") || !*name) {
        hv_decref(value);
        return;
    }
    hv *where = E->local ? E->local : E->top;
    if (E->uncertain || !value) {
        if (!hv_hash_gets(where, name))
            hv_hash_sets(E->r->unknown, name, hv_true());
        hv_decref(value);
        return;
    }
    hv *key = hv_str(name);
    hv_hash_del(E->r->unknown, key);
    hv_decref(key);
    hv_hash_sets(where, name, value);
}

static bool truthy(const hv *v) { return hv_truthy(v); }

/* Puppet's string form of a value in an interpolation; false when not computed */
static bool to_s(const hv *v, sbuf *out)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: return true;
    case HV_STRING: sb_addn(out, hv_str_ptr(v), hv_str_len(v)); return true;
    case HV_BOOL: sb_adds(out, hv_bool_val(v) ? "true" : "false"); return true;
    case HV_INT: sb_addf(out, "%lld", (long long)hv_int_val(v)); return true;
    case HV_BIGINT: sb_adds(out, hv_bigint_digits(v)); return true;
    case HV_FLOAT: ruby_float_to_s(out, hv_float_val(v)); return true;
    default: return false;
    }
}

static bool is_num(const hv *v) { return hv_is(v, HV_INT) || hv_is(v, HV_FLOAT); }
static double num_of(const hv *v) { return hv_is(v, HV_INT) ? (double)hv_int_val(v) : hv_float_val(v); }

/* Puppet's ==: 1 equal, 0 not, -1 cannot say */
static int eq(const hv *a, const hv *b)
{
    if (!a || !b)
        return -1;
    if (hv_is(a, HV_STRING) && hv_is(b, HV_STRING))
        return hv_str_len(a) == hv_str_len(b) && !strncasecmp(hv_str_ptr(a), hv_str_ptr(b), hv_str_len(a));
    if (is_num(a) && is_num(b))
        return num_of(a) == num_of(b);
    hv_kind ka = hv_kind_of(a), kb = hv_kind_of(b);
    if (ka == HV_BIGINT || kb == HV_BIGINT)
        return -1;
    if (ka != kb)
        return (ka == HV_UNDEF || kb == HV_UNDEF || ka == HV_BOOL || kb == HV_BOOL || ka == HV_STRING || kb == HV_STRING ||
                is_num(a) || is_num(b))
                   ? 0
                   : -1;
    if (ka == HV_UNDEF)
        return 1;
    if (ka == HV_BOOL)
        return hv_bool_val(a) == hv_bool_val(b);
    if (ka == HV_ARRAY) {
        if (hv_array_len(a) != hv_array_len(b))
            return 0;
        for (size_t i = 0; i < hv_array_len(a); i++) {
            int r = eq(hv_array_get(a, i), hv_array_get(b, i));
            if (r != 1)
                return r;
        }
        return 1;
    }
    if (ka == HV_HASH) {
        if (hv_hash_len(a) != hv_hash_len(b))
            return 0;
        for (size_t i = 0; i < hv_hash_len(a); i++) {
            const hv *bv = hv_hash_get(b, hv_hash_key_at(a, i));
            if (!bv)
                return 0;
            int r = eq(hv_hash_val_at(a, i), bv);
            if (r != 1)
                return r;
        }
        return 1;
    }
    return -1;
}

/* subject =~ the regexp source: 1, 0, -1 */
static int regex_match(const hv *subject, const char *src, size_t len)
{
    if (!hv_is(subject, HV_STRING))
        return -1;
    herr err = {0};
    rregex *re = rregex_new(src, len, &err);
    herr_clear(&err);
    if (!re)
        return -1;
    bool m = rregex_search(re, hv_str_ptr(subject), hv_str_len(subject));
    rregex_free(re);
    return m;
}

/* Whether a case or selector option matches the subject: 1, 0, -1 */
static int option_matches(ev *E, const hv *subject, const pp_expr *opt)
{
    if (opt->k == PX_REGEX)
        return regex_match(subject, opt->s, strlen(opt->s));
    if (opt->k == PX_TYPE)
        return -1;
    hv *o = ev_expr(E, opt);
    if (!o)
        return -1;
    int r;
    if (hv_is(o, HV_ARRAY) && !hv_is(subject, HV_ARRAY)) {
        r = 0;
        for (size_t i = 0; i < hv_array_len(o) && r != 1; i++) {
            int m = eq(subject, hv_array_get(o, i));
            if (m == -1)
                r = -1;
            else if (m == 1)
                r = 1;
        }
    } else {
        r = eq(subject, o);
    }
    hv_decref(o);
    return r;
}

static hv *dig(const hv *v, const char *path)
{
    const hv *cur = v;
    const char *p = path;
    while (*p && cur) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (hv_is(cur, HV_HASH)) {
            cur = hv_hash_getsn(cur, p, n);
        } else if (hv_is(cur, HV_ARRAY)) {
            char *end = NULL;
            char *seg = xstrndup(p, n);
            long ix = strtol(seg, &end, 10);
            bool ok = end && !*end && *seg;
            free(seg);
            if (!ok)
                return NULL;
            cur = ix >= 0 ? hv_array_get(cur, (size_t)ix) : NULL;
        } else if (hv_is(cur, HV_UNDEF)) {
            return hv_undef();
        } else {
            return NULL;
        }
        if (!cur)
            return hv_undef();
        p = dot ? dot + 1 : p + n;
    }
    return cur ? hv_incref((hv *)cur) : hv_undef();
}

static void declare_with(ev *E, const hv *v, const hv *given);

static void declare(ev *E, const hv *v) { declare_with(E, v, NULL); }

/* Declares the classes v names (a string or an array of them); given: the parameters a
 * resource-like declaration gives (an array of names), recorded as the class's value. */
static void declare_with(ev *E, const hv *v, const hv *given)
{
    if (!v) {
        E->r->classes_unknown = true;
        return;
    }
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            declare_with(E, hv_array_get(v, i), given);
        return;
    }
    if (!hv_is(v, HV_STRING) || !hv_str_len(v)) {
        if (!hv_is(v, HV_UNDEF))
            E->r->classes_unknown = true;
        return;
    }
    if (E->uncertain) {
        E->r->classes_unknown = true;
        return;
    }
    const char *s = hv_str_ptr(v);
    if (s[0] == ':' && s[1] == ':')
        s += 2;
    char *name = xstrdup(s);
    for (char *q = name; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    hv *cur = hv_hash_gets(E->r->classes, name);
    if (given && hv_array_len(given)) {
        hv *list = cur && hv_is(cur, HV_ARRAY) ? hv_copy(cur) : hv_array();
        for (size_t i = 0; i < hv_array_len(given); i++)
            hv_array_push(list, hv_incref(hv_array_get(given, i)));
        hv_hash_sets(E->r->classes, name, list);
    } else if (!cur) {
        hv_hash_sets(E->r->classes, name, hv_true());
    }
    free(name);
}

/* The variables as they are now (for a lookup): the scope with what the code set over it */
static hv *scope_now(ev *E)
{
    hv *s = hv_copy(E->scope);
    for (size_t i = 0; i < hv_hash_len(E->top); i++)
        hv_hash_set(s, hv_incref(hv_hash_key_at(E->top, i)), hv_incref(hv_hash_val_at(E->top, i)));
    for (size_t i = 0; E->local && i < hv_hash_len(E->local); i++)
        hv_hash_set(s, hv_incref(hv_hash_key_at(E->local, i)), hv_incref(hv_hash_val_at(E->local, i)));
    return s;
}

static hv *do_lookup(ev *E, const char *fn, hv **args, size_t nargs)
{
    if (!E->env || !E->env->lookup || !nargs)
        return NULL;
    const hv *name = args[0], *dflt = NULL;
    const char *merge = NULL;
    bool merge_known = true;
    if (!strcmp(fn, "lookup")) {
        if (hv_is(name, HV_HASH)) {
            const hv *h = name;
            name = hv_hash_gets(h, "name");
            const hv *m = hv_hash_gets(h, "merge");
            if (m && hv_is(m, HV_STRING))
                merge = hv_str_ptr(m);
            else if (m && !hv_is(m, HV_UNDEF))
                merge_known = false;
            dflt = hv_hash_gets(h, "default_value");
        } else {
            if (nargs >= 3 && args[2]) {
                if (hv_is(args[2], HV_STRING))
                    merge = hv_str_ptr(args[2]);
                else if (!hv_is(args[2], HV_UNDEF))
                    merge_known = false;
            } else if (nargs >= 3) {
                merge_known = false;
            }
            if (nargs >= 4)
                dflt = args[3];
            if (nargs >= 4 && !dflt)
                return NULL;
        }
    } else {
        if (!strcmp(fn, "hiera_array") || !strcmp(fn, "hiera_include"))
            merge = "unique";
        else if (!strcmp(fn, "hiera_hash"))
            merge = "hash";
        if (nargs >= 2) {
            dflt = args[1];
            if (!dflt)
                return NULL;
        }
    }
    if (!merge_known || !name || !hv_is(name, HV_STRING))
        return NULL;
    if (merge && !strcmp(merge, "first"))
        merge = NULL;
    hv *s = scope_now(E);
    hv *v = E->env->lookup(E->env->data, s, hv_str_ptr(name), merge, dflt);
    hv_decref(s);
    return v;
}

static void effects_of(ev *E, const char *fn, uint32_t line)
{
    pp_fn_kind k = E->env && E->env->function_kind ? E->env->function_kind(E->env->data, fn) : PP_FN_ANY;
    if (k == PP_FN_PURE)
        return;
    E->r->classes_unknown = true;
    if (k == PP_FN_ANY && !E->r->any) {
        E->r->any = true;
        E->r->any_why = xasprintf("%s() at %s:%u", fn, E->file ? E->file : "?", line);
    }
}

/* Puppet's built-in functions (7.x): none sets a variable of its caller */
static bool builtin(const char *fn)
{
    static const char *const names[] = {
        "abs", "alert", "all", "annotate", "any", "assert_type", "binary_file", "break", "call", "camelcase", "capitalize",
        "ceiling", "chomp", "chop", "compare", "contain", "convert_to", "create_resources", "crit", "debug", "defined",
        "dig", "digest", "downcase", "each", "emerg", "empty", "epp", "err", "eyaml_lookup_key", "fail", "file", "filter",
        "find_file", "find_template", "flatten", "floor", "fqdn_rand", "generate", "get", "getvar", "group", "hiera",
        "hiera_array", "hiera_hash", "hiera_include", "hocon_data", "import", "include", "index", "info", "inline_epp",
        "inline_template", "join", "json_data", "keys", "length", "lest", "lookup", "lstrip", "map", "match", "max", "md5",
        "min", "module_directory", "new", "next", "notice", "partition", "realize", "reduce", "regsubst", "require",
        "return", "reverse_each", "round", "rstrip", "scanf", "sha1", "sha256", "shellquote", "size", "slice", "sort",
        "split", "sprintf", "step", "strftime", "strip", "tag", "tagged", "template", "then", "tree_each", "type",
        "unique", "unwrap", "upcase", "values", "versioncmp", "warning", "with", "yaml_data", "fact", "str2bool",
        "is_string", "validate_string", "ensure_packages", "ensure_resource", "ensure_resources", NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(names[i], fn))
            return true;
    return false;
}

static hv *string_fn(const char *fn, const hv *v)
{
    if (!hv_is(v, HV_STRING))
        return NULL;
    const char *s = hv_str_ptr(v);
    size_t n = hv_str_len(v);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80)
            return NULL; /* (Unicode case rules: not computed) */
    char *r = xstrndup(s, n);
    if (!strcmp(fn, "downcase")) {
        for (size_t i = 0; i < n; i++)
            r[i] = (char)tolower((unsigned char)r[i]);
    } else if (!strcmp(fn, "upcase")) {
        for (size_t i = 0; i < n; i++)
            r[i] = (char)toupper((unsigned char)r[i]);
    } else if (!strcmp(fn, "capitalize")) {
        for (size_t i = 0; i < n; i++)
            r[i] = (char)(i ? tolower((unsigned char)r[i]) : toupper((unsigned char)r[i]));
    } else if (!strcmp(fn, "strip") || !strcmp(fn, "lstrip") || !strcmp(fn, "rstrip") || !strcmp(fn, "chomp")) {
        size_t a = 0, b = n;
        if (!strcmp(fn, "chomp")) {
            if (b && r[b - 1] == '\n')
                b--;
            if (b && r[b - 1] == '\r')
                b--;
        } else {
            if (strcmp(fn, "rstrip"))
                while (a < b && isspace((unsigned char)r[a]))
                    a++;
            if (strcmp(fn, "lstrip"))
                while (b > a && isspace((unsigned char)r[b - 1]))
                    b--;
        }
        hv *out = hv_strn(r + a, b - a);
        free(r);
        return out;
    } else {
        free(r);
        return NULL;
    }
    return hv_str_take(r, n);
}

static hv *split_fn(const hv *s, const hv *sep)
{
    if (!hv_is(s, HV_STRING) || !hv_is(sep, HV_STRING))
        return NULL;
    herr err = {0};
    rregex *re = rregex_new(hv_str_ptr(sep), hv_str_len(sep), &err);
    herr_clear(&err);
    if (!re)
        return NULL;
    const char *t = hv_str_ptr(s);
    size_t n = hv_str_len(s), pos = 0, from = 0, b, e;
    hv *out = hv_array();
    bool ok = true;
    while (from <= n && rregex_match_at(re, t, n, from, &b, &e)) {
        if (e == b) {
            ok = false; /* a pattern that matches empty: Ruby splits into characters; not computed */
            break;
        }
        hv_array_push(out, hv_strn(t + pos, b - pos));
        pos = from = e;
    }
    rregex_free(re);
    if (!ok) {
        hv_decref(out);
        return NULL;
    }
    hv_array_push(out, hv_strn(t + pos, n - pos));
    /* Ruby drops trailing empty strings */
    while (hv_array_len(out) && hv_is(hv_array_get(out, hv_array_len(out) - 1), HV_STRING) &&
           !hv_str_len(hv_array_get(out, hv_array_len(out) - 1)))
        hv_array_truncate(out, hv_array_len(out) - 1);
    return out;
}

/* A function call (receiver first for a method call): a new reference, or NULL */
static hv *ev_call(ev *E, const pp_expr *x, bool method)
{
    const char *fn = x->s;
    size_t na = x->na;
    hv **args = xcalloc(na ? na : 1, sizeof *args);
    for (size_t i = 0; i < na; i++)
        args[i] = ev_expr(E, x->a[i]);
    hv *r = NULL;
    if (!strcmp(fn, "include") || !strcmp(fn, "contain") || !strcmp(fn, "require")) {
        for (size_t i = 0; i < na; i++)
            declare(E, args[i]);
    } else if (!strcmp(fn, "lookup") || !strcmp(fn, "hiera") || !strcmp(fn, "hiera_array") || !strcmp(fn, "hiera_hash") ||
               !strcmp(fn, "hiera_include")) {
        r = x->lambda ? NULL : do_lookup(E, fn, args, na);
        if (!strcmp(fn, "hiera_include"))
            declare(E, r);
    } else if (!strcmp(fn, "fail")) {
        if (!E->uncertain && !E->stop) {
            sbuf m = {0};
            if (na && args[0] && to_s(args[0], &m))
                ;
            else
                sb_adds(&m, "(message not computed)");
            E->r->failed = xasprintf("%s (%s:%u)", sb_str(&m), E->file ? E->file : "?", x->line);
            sb_free(&m);
            E->stop = true;
        }
    } else if (!strcmp(fn, "defined") && na >= 1) {
        bool all = true;
        int result = 0;
        for (size_t i = 0; i < na && all; i++) {
            const hv *a = args[i];
            if (!hv_is(a, HV_STRING)) {
                all = false;
                break;
            }
            const char *s = hv_str_ptr(a);
            if (s[0] == '$') {
                const char *vn = s + 1;
                if (vn[0] == ':' && vn[1] == ':')
                    vn += 2;
                hv *v = get_var(E, vn);
                bool set = v && (hv_hash_gets(E->top, vn) || (E->local && hv_hash_gets(E->local, vn)) ||
                                 hv_hash_gets(E->scope, vn));
                if (!v && !strstr(vn, "::")) {
                    all = false;
                } else if (set) {
                    result = 1;
                } else if (!v) {
                    all = false;
                }
                hv_decref(v);
            } else if (E->env && E->env->type_exists) {
                if (E->env->type_exists(E->env->data, s))
                    result = 1;
            } else {
                all = false;
            }
        }
        r = all ? hv_bool(result) : NULL;
    } else if ((!strcmp(fn, "getvar") || !strcmp(fn, "fact")) && na >= 1 && hv_is(args[0], HV_STRING)) {
        const char *path = hv_str_ptr(args[0]);
        if (!strcmp(fn, "fact")) {
            const hv *facts = hv_hash_gets(E->scope, "facts");
            r = facts ? dig(facts, path) : NULL;
        } else {
            const char *dot = strchr(path, '.');
            char *root = dot ? xstrndup(path, (size_t)(dot - path)) : xstrdup(path);
            hv *v = get_var(E, root);
            free(root);
            if (v)
                r = dot ? dig(v, dot + 1) : hv_incref(v);
            hv_decref(v);
        }
        if (r && hv_is(r, HV_UNDEF) && na >= 2 && args[1]) {
            hv_decref(r);
            r = hv_incref(args[1]);
        }
    } else if (!strcmp(fn, "empty") && na == 1 && args[0]) {
        const hv *v = args[0];
        if (hv_is(v, HV_UNDEF))
            r = hv_true();
        else if (hv_is(v, HV_STRING))
            r = hv_bool(hv_str_len(v) == 0);
        else if (hv_is(v, HV_ARRAY))
            r = hv_bool(hv_array_len(v) == 0);
        else if (hv_is(v, HV_HASH))
            r = hv_bool(hv_hash_len(v) == 0);
        else if (is_num(v))
            r = hv_false();
    } else if ((!strcmp(fn, "size") || !strcmp(fn, "length")) && na == 1 && args[0]) {
        const hv *v = args[0];
        if (hv_is(v, HV_ARRAY))
            r = hv_int((int64_t)hv_array_len(v));
        else if (hv_is(v, HV_HASH))
            r = hv_int((int64_t)hv_hash_len(v));
        else if (hv_is(v, HV_STRING)) {
            bool ascii = true;
            for (size_t i = 0; i < hv_str_len(v); i++)
                ascii = ascii && (unsigned char)hv_str_ptr(v)[i] < 0x80;
            r = ascii ? hv_int((int64_t)hv_str_len(v)) : NULL;
        }
    } else if ((!strcmp(fn, "downcase") || !strcmp(fn, "upcase") || !strcmp(fn, "capitalize") || !strcmp(fn, "strip") ||
                !strcmp(fn, "lstrip") || !strcmp(fn, "rstrip") || !strcmp(fn, "chomp")) &&
               na == 1 && args[0]) {
        r = string_fn(fn, args[0]);
    } else if (!strcmp(fn, "split") && na == 2 && args[0] && args[1]) {
        r = split_fn(args[0], args[1]);
    } else if (!strcmp(fn, "join") && na >= 1 && hv_is(args[0], HV_ARRAY) && (na == 1 || hv_is(args[1], HV_STRING))) {
        sbuf b = {0};
        bool ok = true;
        for (size_t i = 0; i < hv_array_len(args[0]) && ok; i++) {
            if (i && na == 2)
                sb_addn(&b, hv_str_ptr(args[1]), hv_str_len(args[1]));
            ok = to_s(hv_array_get(args[0], i), &b);
        }
        r = ok ? hv_strn(b.s ? b.s : "", b.len) : NULL;
        sb_free(&b);
    } else if (!strcmp(fn, "lest") && method && na >= 1) {
        r = args[0] && !hv_is(args[0], HV_UNDEF) ? hv_incref(args[0]) : NULL;
    } else if (!strcmp(fn, "new:String") && na == 1 && args[0]) {
        sbuf b = {0};
        r = to_s(args[0], &b) ? hv_strn(b.s ? b.s : "", b.len) : NULL;
        sb_free(&b);
    } else if (method && (x->lambda_includes && (!strcmp(fn, "each") || !strcmp(fn, "map")))) {
        declare(E, na ? args[0] : NULL);
    } else if (!strncmp(fn, "new:", 4) || builtin(fn)) {
        /* a value not computed here; no effect on the scope */
    } else {
        effects_of(E, fn, x->line);
    }
    for (size_t i = 0; i < na; i++)
        hv_decref(args[i]);
    free(args);
    return r;
}

static hv *ev_bin(ev *E, const pp_expr *x)
{
    const char *op = x->s;
    if (!strcmp(op, "and") || !strcmp(op, "or")) {
        bool is_and = !strcmp(op, "and");
        hv *a = ev_expr(E, x->a[0]);
        if (a && truthy(a) != is_and) {
            hv_decref(a);
            return hv_bool(!is_and);
        }
        /* the right side runs only when the left does not decide */
        if (!a)
            E->uncertain++;
        hv *b = ev_expr(E, x->a[1]);
        if (!a)
            E->uncertain--;
        hv *r = NULL;
        if (b && truthy(b) != is_and)
            r = hv_bool(!is_and);
        else if (a && b)
            r = hv_bool(is_and);
        hv_decref(a);
        hv_decref(b);
        return r;
    }
    if ((!strcmp(op, "=~") || !strcmp(op, "!~")) && x->a[1]->k == PX_REGEX) {
        hv *a = ev_expr(E, x->a[0]);
        int m = a ? regex_match(a, x->a[1]->s, strlen(x->a[1]->s)) : -1;
        hv_decref(a);
        return m < 0 ? NULL : hv_bool((m == 1) == (op[0] == '='));
    }
    hv *a = ev_expr(E, x->a[0]);
    hv *b = ev_expr(E, x->a[1]);
    hv *r = NULL;
    if (!a || !b)
        goto done;
    if (!strcmp(op, "==") || !strcmp(op, "!=")) {
        int m = eq(a, b);
        if (m >= 0)
            r = hv_bool((m == 1) == (op[0] == '='));
    } else if (!strcmp(op, "=~") || !strcmp(op, "!~")) {
        if (hv_is(b, HV_STRING)) {
            int m = regex_match(a, hv_str_ptr(b), hv_str_len(b));
            if (m >= 0)
                r = hv_bool((m == 1) == (op[0] == '='));
        }
    } else if (!strcmp(op, "in")) {
        if (hv_is(b, HV_ARRAY) || hv_is(b, HV_HASH)) {
            /* an array's elements, a hash's keys; unknown when one comparison is */
            bool arr = hv_is(b, HV_ARRAY);
            size_t n = arr ? hv_array_len(b) : hv_hash_len(b);
            int found = 0;
            for (size_t i = 0; i < n && found != 1; i++) {
                int m = eq(a, arr ? hv_array_get(b, i) : hv_hash_key_at(b, i));
                if (m < 0)
                    found = -1;
                else if (m == 1)
                    found = 1;
            }
            if (found >= 0)
                r = hv_bool(found == 1);
        } else if (hv_is(a, HV_STRING) && hv_is(b, HV_STRING)) {
            const char *hay = hv_str_ptr(b), *needle = hv_str_ptr(a);
            size_t hl = hv_str_len(b), nl = hv_str_len(a);
            bool found = nl == 0;
            for (size_t i = 0; !found && i + nl <= hl; i++)
                found = !strncasecmp(hay + i, needle, nl);
            r = hv_bool(found);
        }
    } else if (!strcmp(op, "<") || !strcmp(op, ">") || !strcmp(op, "<=") || !strcmp(op, ">=")) {
        int c = 2;
        if (is_num(a) && is_num(b))
            c = num_of(a) < num_of(b) ? -1 : num_of(a) > num_of(b) ? 1 : 0;
        else if (hv_is(a, HV_STRING) && hv_is(b, HV_STRING))
            c = strcasecmp(hv_str_ptr(a), hv_str_ptr(b)), c = c < 0 ? -1 : c > 0;
        if (c != 2)
            r = hv_bool(op[0] == '<' ? (op[1] ? c <= 0 : c < 0) : (op[1] ? c >= 0 : c > 0));
    } else if (!strcmp(op, "+") && hv_is(a, HV_INT) && hv_is(b, HV_INT)) {
        r = hv_int(hv_int_val(a) + hv_int_val(b));
    } else if (!strcmp(op, "-") && hv_is(a, HV_INT) && hv_is(b, HV_INT)) {
        r = hv_int(hv_int_val(a) - hv_int_val(b));
    } else if (!strcmp(op, "+") && hv_is(a, HV_ARRAY)) {
        r = hv_copy(a);
        if (hv_is(b, HV_ARRAY))
            for (size_t i = 0; i < hv_array_len(b); i++)
                hv_array_push(r, hv_incref(hv_array_get(b, i)));
        else
            hv_array_push(r, hv_incref(b));
    }
done:
    hv_decref(a);
    hv_decref(b);
    return r;
}

static hv *ev_access(ev *E, const pp_expr *x)
{
    hv *t = ev_expr(E, x->a[0]);
    if (!t || x->na != 2) {
        for (size_t i = 1; i < x->na; i++)
            hv_decref(ev_expr(E, x->a[i]));
        hv_decref(t);
        return NULL;
    }
    hv *k = ev_expr(E, x->a[1]);
    hv *r = NULL;
    if (k && hv_is(t, HV_HASH)) {
        const hv *v = hv_hash_get(t, k);
        r = v ? hv_incref((hv *)v) : hv_undef();
    } else if (k && hv_is(t, HV_ARRAY) && hv_is(k, HV_INT)) {
        int64_t ix = hv_int_val(k), n = (int64_t)hv_array_len(t);
        if (ix < 0)
            ix += n;
        const hv *v = ix >= 0 && ix < n ? hv_array_get(t, (size_t)ix) : NULL;
        r = v ? hv_incref((hv *)v) : hv_undef();
    }
    /* (undef[...] fails the compile in Puppet: unknown here) */
    hv_decref(t);
    hv_decref(k);
    return r;
}

static hv *ev_expr(ev *E, const pp_expr *x)
{
    if (!x || E->depth > MAX_DEPTH)
        return NULL;
    E->depth++;
    hv *r = NULL;
    switch (x->k) {
    case PX_LIT:
        r = hv_incref(x->lit);
        break;
    case PX_VAR:
        r = get_var(E, x->s);
        break;
    case PX_STR: {
        sbuf b = {0};
        bool ok = true;
        for (size_t i = 0; i < x->na; i++) {
            hv *v = ev_expr(E, x->a[i]);
            if (!v || !to_s(v, &b))
                ok = false;
            hv_decref(v);
        }
        r = ok ? hv_strn(b.s ? b.s : "", b.len) : NULL;
        sb_free(&b);
        break;
    }
    case PX_ACCESS:
        r = ev_access(E, x);
        break;
    case PX_CALL:
        r = ev_call(E, x, false);
        break;
    case PX_METHOD: {
        if (!strcmp(x->s, "include") || !strcmp(x->s, "contain") || !strcmp(x->s, "require")) {
            hv *recv = ev_expr(E, x->a[0]);
            declare(E, recv);
            hv_decref(recv);
            break;
        }
        r = ev_call(E, x, true);
        break;
    }
    case PX_NOT: {
        hv *v = ev_expr(E, x->a[0]);
        r = v ? hv_bool(!truthy(v)) : NULL;
        hv_decref(v);
        break;
    }
    case PX_NEG: {
        hv *v = ev_expr(E, x->a[0]);
        if (hv_is(v, HV_INT))
            r = hv_int(-hv_int_val(v));
        else if (hv_is(v, HV_FLOAT))
            r = hv_float(-hv_float_val(v));
        hv_decref(v);
        break;
    }
    case PX_BIN:
        r = ev_bin(E, x);
        break;
    case PX_SELECT: {
        hv *subject = ev_expr(E, x->a[0]);
        const pp_expr *chosen = NULL, *dflt = NULL;
        bool open = !subject;
        for (size_t i = 1; i + 1 < x->na && !chosen && !open; i += 2) {
            if (x->a[i]->k == PX_DEFAULT) {
                dflt = x->a[i + 1];
                continue;
            }
            int m = option_matches(E, subject, x->a[i]);
            if (m < 0)
                open = true;
            else if (m == 1)
                chosen = x->a[i + 1];
        }
        if (!chosen && !open)
            chosen = dflt;
        r = chosen ? ev_expr(E, chosen) : NULL;
        hv_decref(subject);
        break;
    }
    case PX_ARRAY: {
        r = hv_array();
        for (size_t i = 0; i < x->na; i++) {
            hv *v = ev_expr(E, x->a[i]);
            if (!v) {
                hv_decref(r);
                r = NULL;
                for (size_t j = i + 1; j < x->na; j++)
                    hv_decref(ev_expr(E, x->a[j]));
                break;
            }
            hv_array_push(r, v);
        }
        break;
    }
    case PX_HASH: {
        r = hv_hash();
        for (size_t i = 0; i + 1 < x->na; i += 2) {
            hv *k = ev_expr(E, x->a[i]), *v = ev_expr(E, x->a[i + 1]);
            if (!k || !v || !(hv_is(k, HV_STRING) || hv_is_scalar(k))) {
                hv_decref(k);
                hv_decref(v);
                hv_decref(r);
                r = NULL;
                break;
            }
            hv_hash_set(r, k, v);
        }
        break;
    }
    default:
        break;
    }
    E->depth--;
    return r;
}

static void ev_stmt(ev *E, const pp_stmt *s)
{
    E->file = s->file;
    switch (s->k) {
    case PS_ASSIGN:
        set_var(E, s->var, ev_expr(E, s->e));
        break;
    case PS_EXPR:
        hv_decref(ev_expr(E, s->e));
        break;
    case PS_INCLUDE: {
        /* class { title: params }: pairs of the title and the parameters given */
        for (size_t i = 0; i < s->e->na; i++) {
            const pp_expr *pair = s->e->a[i];
            hv *v = ev_expr(E, pair->a[0]);
            declare_with(E, v, pair->a[1]->lit);
            hv_decref(v);
        }
        break;
    }
    case PS_IF: {
        hv *c = ev_expr(E, s->e);
        if (!c) {
            E->uncertain++;
            ev_block(E, &s->then);
            ev_block(E, &s->els);
            E->uncertain--;
        } else {
            bool t = truthy(c) != s->negate;
            ev_block(E, t ? &s->then : &s->els);
        }
        hv_decref(c);
        break;
    }
    case PS_CASE: {
        hv *subject = ev_expr(E, s->e);
        const pp_block *chosen = NULL, *dflt = NULL;
        bool open = !subject;
        for (size_t i = 0; i < s->ncases && !chosen && !open; i++)
            for (size_t j = 0; j < s->cases[i].nopts && !chosen && !open; j++) {
                const pp_expr *o = s->cases[i].opts[j];
                if (o->k == PX_DEFAULT) {
                    dflt = &s->cases[i].body;
                    continue;
                }
                int m = option_matches(E, subject, o);
                if (m < 0)
                    open = true;
                else if (m == 1)
                    chosen = &s->cases[i].body;
            }
        if (open) {
            E->uncertain++;
            for (size_t i = 0; i < s->ncases; i++)
                ev_block(E, &s->cases[i].body);
            E->uncertain--;
        } else if (chosen || dflt) {
            ev_block(E, chosen ? chosen : dflt);
        }
        hv_decref(subject);
        break;
    }
    }
}

static void ev_block(ev *E, const pp_block *b)
{
    if (E->depth > MAX_DEPTH)
        return;
    E->depth++;
    for (size_t i = 0; i < b->n && !E->stop; i++)
        ev_stmt(E, b->v[i]);
    E->depth--;
}

void pp_program_eval(const pp_program *p, int node, const hv *scope, const pp_eval_env *env, pp_eval_result *out)
{
    memset(out, 0, sizeof *out);
    out->vars = hv_hash();
    out->unknown = hv_hash();
    out->classes = hv_hash();
    if (!p)
        return;
    ev E = {p, env, scope, hv_hash(), NULL, out, 0, false, 0, NULL};
    ev_block(&E, &p->top);
    if (!E.stop && node >= 0 && (size_t)node < p->nnodes) {
        E.local = hv_hash();
        ev_block(&E, &p->nodes[node].body);
    }
    for (size_t i = 0; i < hv_hash_len(E.top); i++)
        hv_hash_set(out->vars, hv_incref(hv_hash_key_at(E.top, i)), hv_incref(hv_hash_val_at(E.top, i)));
    for (size_t i = 0; E.local && i < hv_hash_len(E.local); i++)
        hv_hash_set(out->vars, hv_incref(hv_hash_key_at(E.local, i)), hv_incref(hv_hash_val_at(E.local, i)));
    hv_decref(E.top);
    hv_decref(E.local);
}

void pp_eval_result_free(pp_eval_result *r)
{
    hv_decref(r->vars);
    hv_decref(r->unknown);
    hv_decref(r->classes);
    free(r->any_why);
    free(r->failed);
    memset(r, 0, sizeof *r);
}
