/* parse.c - the lexer and parser of Puppet type expressions ("Hash[String, Array[Integer]]"):
 * text to tokens to an AST (types/parse.h), with Puppet's syntax errors. interpret.c turns the
 * AST into types. */
#include "types/types_int.h"

#include <ctype.h>

#include "types/parse.h"

/* ======================================================================================
 * Lexer for type expressions (the token rules of Puppet's Lexer2 that matter here)
 * ====================================================================================== */

/* " (line: L, column: C)" for a byte offset, columns counted in characters. */
static void pos_suffix(sbuf *b, const char *src, size_t off)
{
    int line = 1;
    size_t ls = 0;
    for (size_t i = 0; i < off; i++)
        if (src[i] == '\n') {
            line++;
            ls = i + 1;
        }
    sb_addf(b, " (line: %d, column: %zu)", line, pt_utf8_len(src + ls, off - ls) + 1);
}

static void lex_error(lexer *lx, size_t off, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void lex_error(lexer *lx, size_t off, const char *fmt, ...)
{
    sbuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    pos_suffix(&b, lx->src, off);
    herr_set(lx->err, HERR_PUPPET, "%s", sb_str(&b));
    sb_free(&b);
}

static void emit(lexer *lx, tok k, size_t start, size_t end, char *val, size_t vlen)
{
    if (lx->ntoks == lx->cap) {
        lx->cap = lx->cap ? lx->cap * 2 : 16;
        lx->toks = xrealloc(lx->toks, lx->cap * sizeof *lx->toks);
    }
    if (!val) {
        val = xstrndup(lx->src + start, end - start);
        vlen = end - start;
    }
    lx->toks[lx->ntoks++] = (token){k, start, end, val, vlen};
}

void pt_lx_free(lexer *lx)
{
    for (size_t i = 0; i < lx->ntoks; i++)
        free(lx->toks[i].val);
    free(lx->toks);
}

static tok last_tok(const lexer *lx) { return lx->ntoks ? lx->toks[lx->ntoks - 1].k : TK_EOF; }

static bool is_word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* followed_by: the next five characters and "...", or <eof> */
static void followed_by(sbuf *b, const char *s, size_t n)
{
    if (!n) {
        sb_adds(b, "<eof>");
        return;
    }
    size_t i = 0, chars = 0;
    while (i < n && chars < 5) {
        uint32_t cp;
        size_t l = pt_utf8_next(s + i, n - i, &cp);
        if (s[i] == '\t')
            sb_adds(b, "\\t");
        else if (s[i] == '\n')
            sb_adds(b, "\\n");
        else if (s[i] == '\r')
            sb_adds(b, "\\r");
        else
            sb_addn(b, s + i, l);
        i += l;
        chars++;
    }
    sb_adds(b, "...");
}

/* Single quoted string: \\ and \' are escapes, other backslashes stay. */
static bool lex_sq(lexer *lx, size_t *pos)
{
    size_t start = *pos, i = start + 1;
    sbuf v = {0};
    for (; i < lx->len; i++) {
        char c = lx->src[i];
        if (c == '\\' && i + 1 < lx->len && (lx->src[i + 1] == '\\' || lx->src[i + 1] == '\'')) {
            sb_addc(&v, lx->src[++i]);
            continue;
        }
        if (c == '\'')
            break;
        sb_addc(&v, c);
    }
    if (i >= lx->len) {
        sbuf m = {0};
        followed_by(&m, lx->src + start + 1, lx->len - start - 1);
        lex_error(lx, start + 1, "Unclosed quote after \"'\" followed by '%s'", sb_str(&m));
        sb_free(&m);
        sb_free(&v);
        return false;
    }
    size_t vlen = v.len;
    emit(lx, TK_STRING, start, i + 1, sb_take(&v), vlen);
    *pos = i + 1;
    return true;
}

/* Double quoted string. An interpolation ($name or ${...}) makes it a string expression, which
 * is not a valid type parameter; the token then only records its extent. */
static bool lex_dq(lexer *lx, size_t *pos)
{
    size_t start = *pos, i = start + 1;
    sbuf v = {0};
    bool interp = false;
    while (i < lx->len && lx->src[i] != '"') {
        char c = lx->src[i];
        if (c == '\\' && i + 1 < lx->len) {
            char e = lx->src[i + 1];
            i += 2;
            switch (e) {
            case '\\': sb_addc(&v, '\\'); break;
            case '$': sb_addc(&v, '$'); break;
            case '\'': sb_addc(&v, '\''); break;
            case '"': sb_addc(&v, '"'); break;
            case 'r': sb_addc(&v, '\r'); break;
            case 'n': sb_addc(&v, '\n'); break;
            case 't': sb_addc(&v, '\t'); break;
            case 's': sb_addc(&v, ' '); break;
            case '\n': break;
            case 'u': {
                uint32_t cp = 0;
                size_t k = i, nd = 0;
                if (k < lx->len && lx->src[k] == '{') {
                    k++;
                    while (k < lx->len && nd < 6 && isxdigit((unsigned char)lx->src[k]))
                        cp = cp * 16 + (uint32_t)(isdigit((unsigned char)lx->src[k]) ? lx->src[k] - '0' : (tolower((unsigned char)lx->src[k]) - 'a' + 10)), k++, nd++;
                    if (nd && k < lx->len && lx->src[k] == '}') {
                        pt_add_utf8(&v, cp);
                        i = k + 1;
                        break;
                    }
                } else {
                    while (k < lx->len && nd < 4 && isxdigit((unsigned char)lx->src[k]))
                        cp = cp * 16 + (uint32_t)(isdigit((unsigned char)lx->src[k]) ? lx->src[k] - '0' : (tolower((unsigned char)lx->src[k]) - 'a' + 10)), k++, nd++;
                    if (nd == 4) {
                        pt_add_utf8(&v, cp);
                        i = k;
                        break;
                    }
                }
                sb_adds(&v, "\\u");
                break;
            }
            default:
                sb_addc(&v, '\\');
                sb_addc(&v, e);
            }
            continue;
        }
        if (c == '$' && i + 1 < lx->len &&
            (lx->src[i + 1] == '{' || lx->src[i + 1] == ':' || is_word_char(lx->src[i + 1]))) {
            interp = true;
            if (lx->src[i + 1] == '{') {
                int depth = 0;
                for (i++; i < lx->len; i++) {
                    if (lx->src[i] == '{')
                        depth++;
                    else if (lx->src[i] == '}' && --depth == 0)
                        break;
                }
                if (i < lx->len)
                    i++;
            } else {
                i++;
                while (i < lx->len && (is_word_char(lx->src[i]) || lx->src[i] == ':'))
                    i++;
            }
            continue;
        }
        sb_addc(&v, c);
        i++;
    }
    if (i >= lx->len) {
        sbuf m = {0};
        followed_by(&m, lx->src + start + 1, lx->len - start - 1);
        lex_error(lx, start + 1, "Unclosed quote after '\"' followed by '%s'", sb_str(&m));
        sb_free(&m);
        sb_free(&v);
        return false;
    }
    size_t vlen = v.len;
    emit(lx, interp ? TK_DQINTERP : TK_STRING, start, i + 1, sb_take(&v), vlen);
    *pos = i + 1;
    return true;
}

/* PATTERN_NUMBER: 0[xX]hex | 0?digits(.digits)?([eE]-?digits)?, followed by a word boundary. */
static bool lex_number(lexer *lx, size_t *pos)
{
    const char *s = lx->src;
    size_t start = *pos, i = start, n = lx->len;
    bool ok = false;
    if (s[i] == '0' && i + 1 < n && (s[i + 1] == 'x' || s[i + 1] == 'X') && i + 2 < n &&
        isxdigit((unsigned char)s[i + 2])) {
        i += 2;
        while (i < n && isxdigit((unsigned char)s[i]))
            i++;
        ok = true;
    } else {
        while (i < n && isdigit((unsigned char)s[i]))
            i++;
        if (i + 1 < n && s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
            i++;
            while (i < n && isdigit((unsigned char)s[i]))
                i++;
        }
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
            size_t k = i + 1;
            if (k < n && s[k] == '-')
                k++;
            if (k < n && isdigit((unsigned char)s[k])) {
                while (k < n && isdigit((unsigned char)s[k]))
                    k++;
                i = k;
            }
        }
        ok = true;
    }
    if (ok && i < n && is_word_char(s[i]))
        ok = false; /* no word boundary: \w+ follows */
    if (!ok) {
        size_t e = start;
        while (e < n && is_word_char(s[e]))
            e++;
        char *text = xstrndup(s + start, e - start);
        if ((text[0] == '0' && (text[1] == 'x' || text[1] == 'X')))
            lex_error(lx, start, "Not a valid hex number %s", text);
        else if (text[0] == '0' && text[1] && text[1] != '.')
            lex_error(lx, start, "Not a valid octal number %s", text);
        else
            lex_error(lx, start, "Illegal number '%s'", text);
        free(text);
        return false;
    }
    /* assert_numeric */
    char *text = xstrndup(s + start, i - start);
    bool valid = true;
    const char *what = NULL;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        what = "hex";
    } else if (text[0] == '0' && text[1] && text[1] != '.') {
        for (const char *p = text + 1; *p; p++)
            if (*p < '0' || *p > '7')
                valid = false;
        what = "octal";
    }
    if (!valid) {
        lex_error(lx, start, "Not a valid %s number %s", what, text);
        free(text);
        return false;
    }
    emit(lx, TK_NUMBER, start, i, text, i - start);
    *pos = i;
    return true;
}

static const char *const keywords[] = {"case", "class", "define", "if", "elsif", "else", "inherits",
                                       "node", "and", "or", "in", "unless", "function", "type",
                                       "attr", "private", NULL};

static bool lex_word(lexer *lx, size_t *pos)
{
    const char *s = lx->src;
    size_t start = *pos, i = start, n = lx->len;
    /* PATTERN_BARE_WORD: ((::)?[a-z_]([\w-]*\w)?)+ */
    bool any = false;
    for (;;) {
        size_t j = i;
        if (j + 1 < n && s[j] == ':' && s[j + 1] == ':')
            j += 2;
        if (j < n && (islower((unsigned char)s[j]) || s[j] == '_')) {
            j++;
            size_t last_ok = j;
            while (j < n && (is_word_char(s[j]) || s[j] == '-')) {
                j++;
                if (is_word_char(s[j - 1]))
                    last_ok = j;
            }
            i = last_ok;
            any = true;
        } else {
            break;
        }
    }
    if (!any) {
        lex_error(lx, start + 1, "Illegal name or bare word");
        return false;
    }
    char *w = xstrndup(s + start, i - start);
    /* PATTERN_NAME: ((::)?[a-z]\w*)(::[a-z]\w*)* */
    bool is_name = true;
    const char *p = w;
    if (p[0] == ':' && p[1] == ':')
        p += 2;
    for (;;) {
        if (!islower((unsigned char)*p)) {
            is_name = false;
            break;
        }
        while (is_word_char(*p))
            p++;
        if (!*p)
            break;
        if (p[0] == ':' && p[1] == ':')
            p += 2;
        else {
            is_name = false;
            break;
        }
    }
    tok k = is_name ? TK_NAME : TK_WORD;
    if (is_name) {
        if (!strcmp(w, "true") || !strcmp(w, "false"))
            k = TK_BOOLEAN;
        else if (!strcmp(w, "default"))
            k = TK_DEFAULT;
        else if (!strcmp(w, "undef"))
            k = TK_UNDEF;
        else
            for (int q = 0; keywords[q]; q++)
                if (!strcmp(w, keywords[q]))
                    k = (!strcmp(w, "and") || !strcmp(w, "or") || !strcmp(w, "in")) ? TK_BINOP : TK_KEYWORD;
    }
    emit(lx, k, start, i, w, i - start);
    *pos = i;
    return true;
}

static bool lex_classref(lexer *lx, size_t *pos)
{
    const char *s = lx->src;
    size_t start = *pos, i = start, n = lx->len;
    /* PATTERN_CLASSREF: ((::)?[A-Z]\w*)+ */
    for (;;) {
        size_t j = i;
        if (j + 1 < n && s[j] == ':' && s[j + 1] == ':')
            j += 2;
        if (j < n && isupper((unsigned char)s[j])) {
            j++;
            while (j < n && is_word_char(s[j]))
                j++;
            i = j;
        } else {
            break;
        }
    }
    if (i == start || (i + 1 < n && s[i] == ':' && s[i + 1] == ':')) {
        lex_error(lx, start + 1, "Illegal class reference");
        return false;
    }
    emit(lx, TK_CLASSREF, start, i, NULL, 0);
    *pos = i;
    return true;
}

/* regexp_acceptable?: a '/' starts a regexp unless it follows an operand. */
static bool regexp_acceptable(const lexer *lx)
{
    switch (last_tok(lx)) {
    case TK_RPAREN: case TK_RBRACK: case TK_NAME: case TK_CLASSREF: case TK_NUMBER: case TK_STRING:
    case TK_BOOLEAN: case TK_DQINTERP: case TK_REGEX: case TK_VARIABLE: case TK_WORD:
        return false;
    default:
        return true;
    }
}

static bool lex_slash(lexer *lx, size_t *pos)
{
    const char *s = lx->src;
    size_t start = *pos, n = lx->len;
    if (start + 1 < n && s[start + 1] == '*') {
        const char *end = NULL;
        for (size_t i = start + 2; i + 1 < n; i++)
            if (s[i] == '*' && s[i + 1] == '/') {
                end = s + i;
                break;
            }
        if (!end) {
            lex_error(lx, start, "Unclosed multiline comment");
            return false;
        }
        *pos = (size_t)(end - s) + 2;
        return true;
    }
    if (regexp_acceptable(lx)) {
        /* /[^/]*\/ with an escaped slash continuing the regexp */
        size_t i = start + 1;
        for (;;) {
            while (i < n && s[i] != '/')
                i++;
            if (i >= n)
                break;
            size_t bs = 0;
            for (size_t k = i; k > start + 1 && s[k - 1] == '\\'; k--)
                bs++;
            if (bs % 2 == 1) {
                i++;
                continue;
            }
            break;
        }
        if (i < n) {
            sbuf v = {0};
            for (size_t k = start + 1; k < i; k++) {
                if (s[k] == '\\' && k + 1 < i && s[k + 1] == '/') {
                    sb_addc(&v, '/');
                    k++;
                } else {
                    sb_addc(&v, s[k]);
                }
            }
            /* the lexer compiles it: an invalid regexp fails here, without a position */
            regex_t *re = pt_re_compile(v.s ? v.s : "", v.len, lx->err);
            if (!re) {
                sb_free(&v);
                return false;
            }
            onig_free(re);
            size_t vlen = v.len;
            emit(lx, TK_REGEX, start, i + 1, sb_take(&v), vlen);
            *pos = i + 1;
            return true;
        }
    }
    emit(lx, TK_BINOP, start, start + 1, NULL, 0);
    *pos = start + 1;
    return true;
}

/* Operators: the longest of the Puppet operator tokens at pos. */
static size_t op_len(const char *s, size_t n)
{
    static const char *const ops[] = {"<<|", "|>>", "=>", "==", "=~", "+=", "+>", "-=", "->", "!=", "!~",
                                      ">=", "<=", "<<", ">>", "<|", "|>", "<-", "<~", "~>", "@@", NULL};
    for (int i = 0; ops[i]; i++) {
        size_t l = strlen(ops[i]);
        if (l <= n && memcmp(s, ops[i], l) == 0)
            return l;
    }
    return 1;
}

bool pt_lex_all(lexer *lx)
{
    const char *s = lx->src;
    size_t i = 0, n = lx->len;
    while (i < n) {
        char c = s[i];
        size_t start = i;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            i++;
            continue;
        }
        if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            if (!lex_number(lx, &i))
                return false;
            continue;
        }
        if (islower((unsigned char)c) || c == '_') {
            if (!lex_word(lx, &i))
                return false;
            continue;
        }
        if (isupper((unsigned char)c)) {
            if (!lex_classref(lx, &i))
                return false;
            continue;
        }
        switch (c) {
        case '\'':
            if (!lex_sq(lx, &i))
                return false;
            continue;
        case '"':
            if (!lex_dq(lx, &i))
                return false;
            continue;
        case '/':
            if (!lex_slash(lx, &i))
                return false;
            continue;
        case ':':
            if (i + 2 < n && s[i + 1] == ':' && isupper((unsigned char)s[i + 2])) {
                if (!lex_classref(lx, &i))
                    return false;
            } else if (i + 1 < n && s[i + 1] == ':') {
                if (!lex_word(lx, &i))
                    return false;
            } else {
                emit(lx, TK_BINOP, i, i + 1, NULL, 0);
                i++;
            }
            continue;
        case '$': {
            /* PATTERN_DOLLAR_VAR: \$(::)?(\w+::)*\w+ ; a lone $ is an empty variable */
            size_t j = i + 1, end = i + 1;
            if (j + 1 < n && s[j] == ':' && s[j + 1] == ':')
                j += 2;
            for (;;) {
                size_t w = j;
                while (w < n && is_word_char(s[w]))
                    w++;
                if (w == j)
                    break;
                end = w;
                if (w + 2 < n && s[w] == ':' && s[w + 1] == ':' && is_word_char(s[w + 2]))
                    j = w + 2;
                else
                    break;
            }
            emit(lx, TK_VARIABLE, start, end, xstrndup(s + start + 1, end - start - 1), end - start - 1);
            i = end;
            continue;
        }
        case '[':
            emit(lx, (i == 0 || isspace((unsigned char)s[i - 1])) ? TK_LISTSTART : TK_LBRACK, i, i + 1, NULL, 0);
            i++;
            continue;
        case ']': emit(lx, TK_RBRACK, i, i + 1, NULL, 0); i++; continue;
        case '{': emit(lx, TK_LBRACE, i, i + 1, NULL, 0); i++; continue;
        case '}': emit(lx, TK_RBRACE, i, i + 1, NULL, 0); i++; continue;
        case ')': emit(lx, TK_RPAREN, i, i + 1, NULL, 0); i++; continue;
        case ',': emit(lx, TK_COMMA, i, i + 1, NULL, 0); i++; continue;
        case ';': emit(lx, TK_SEMIC, i, i + 1, NULL, 0); i++; continue;
        case '?': emit(lx, TK_QMARK, i, i + 1, NULL, 0); i++; continue;
        case '.': emit(lx, TK_DOT, i, i + 1, NULL, 0); i++; continue;
        case '(': {
            size_t ls = i;
            while (ls > 0 && s[ls - 1] != '\n')
                ls--;
            bool ws_only = true;
            for (size_t k = ls; k < i; k++)
                if (s[k] != ' ' && s[k] != '\t' && s[k] != '\r')
                    ws_only = false;
            emit(lx, ws_only ? TK_WSLPAREN : TK_LPAREN, i, i + 1, NULL, 0);
            i++;
            continue;
        }
        default:
            break;
        }
        if (strchr("=+-!<>|~*%@", c)) {
            size_t l = op_len(s + i, n - i);
            tok k = TK_BINOP;
            if (l == 2 && s[i] == '=' && s[i + 1] == '>')
                k = TK_FARROW;
            else if (l == 1 && c == '-')
                k = TK_MINUS;
            else if (l == 1 && (c == '!' || c == '*' || c == '@'))
                k = TK_PREFIX;
            else if (l == 2 && c == '@')
                k = TK_PREFIX;
            emit(lx, k, i, i + l, NULL, 0);
            i += l;
            continue;
        }
        /* an unrecognized character: Puppet's OTHER token, whose text reads as '' */
        uint32_t cp;
        size_t l = pt_utf8_next(s + i, n - i, &cp);
        emit(lx, TK_OTHER, i, i + l, xstrdup(""), 0);
        i += l;
    }
    emit(lx, TK_EOF, n, n, xstrdup(""), 0);
    return true;
}

/* ======================================================================================
 * Parser: the part of Puppet's expression grammar that type expressions use. Anything else
 * that Puppet would parse (operators, variables, calls, ...) becomes an opaque node, which the
 * interpreter rejects as "not a valid type specification", as Puppet does.
 * ====================================================================================== */

static ast *a_new(akind k, size_t start, size_t end)
{
    ast *a = xcalloc(1, sizeof *a);
    a->k = k;
    a->start = start;
    a->end = end;
    return a;
}
static void a_push(ast *a, ast *kid)
{
    a->kids = xrealloc(a->kids, (a->nk + 1) * sizeof *a->kids);
    a->kids[a->nk++] = kid;
    if (kid->end > a->end)
        a->end = kid->end;
}
void pt_a_free(ast *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nk; i++)
        pt_a_free(a->kids[i]);
    free(a->kids);
    free(a);
}
static ast *opaque(ast *a, size_t end) /* widens a into an opaque node (frees a) */
{
    ast *o = a_new(A_OPAQUE, a->start, end > a->end ? end : a->end);
    pt_a_free(a);
    return o;
}

static const token *cur(parser *p) { return &p->lx->toks[p->i]; }
static tok cur_k(parser *p) { return cur(p)->k; }
static void advance(parser *p)
{
    if (cur_k(p) != TK_EOF)
        p->i++;
}

static ast *syntax_error(parser *p)
{
    const token *t = cur(p);
    if (herr_isset(p->err))
        return NULL;
    if (t->k == TK_EOF) {
        herr_set(p->err, HERR_PUPPET, "Syntax error at end of input");
        return NULL;
    }
    sbuf b = {0};
    sb_addf(&b, "Syntax error at '");
    if (t->k == TK_REGEX) {
        sb_adds(&b, "(?-mix:");
        sb_addn(&b, t->val, t->vlen);
        sb_addc(&b, ')');
    } else {
        sb_addn(&b, t->val, t->vlen);
    }
    sb_addc(&b, '\'');
    pos_suffix(&b, p->lx->src, t->start);
    herr_set(p->err, HERR_PUPPET, "%s", sb_str(&b));
    sb_free(&b);
    return NULL;
}

static ast *p_assignment(parser *p);

/* Skips a balanced {...} (resource bodies, selectors, lambdas); returns the end offset. */
static bool skip_braces(parser *p, size_t *end)
{
    int depth = 0;
    do {
        tok k = cur_k(p);
        if (k == TK_EOF) {
            syntax_error(p);
            return false;
        }
        if (k == TK_LBRACE)
            depth++;
        else if (k == TK_RBRACE)
            depth--;
        *end = cur(p)->end;
        advance(p);
    } while (depth > 0);
    return true;
}

/* entries of a list, access or hash: entry (=> entry)? separated by commas, optional trailing
 * comma. Pairs written without braces become one hash (Factory.ARGUMENTS merges them). */
static bool p_entries(parser *p, ast *into, tok close, bool allow_empty)
{
    if (cur_k(p) == close) {
        if (allow_empty)
            return true;
        syntax_error(p);
        return false;
    }
    for (;;) {
        ast *e = p_assignment(p);
        if (!e)
            return false;
        if (cur_k(p) == TK_FARROW) {
            advance(p);
            ast *v = p_assignment(p);
            if (!v) {
                pt_a_free(e);
                return false;
            }
            ast *last = into->nk ? into->kids[into->nk - 1] : NULL;
            if (last && last->k == A_HASH && last->unfolded && into->k != A_LIST) {
                a_push(last, e);
                a_push(last, v);
                if (last->end > into->end)
                    into->end = last->end;
            } else {
                ast *h = a_new(A_HASH, e->start, e->end);
                h->unfolded = true;
                a_push(h, e);
                a_push(h, v);
                a_push(into, h);
            }
        } else {
            a_push(into, e);
        }
        if (cur_k(p) == TK_COMMA) {
            advance(p);
            if (cur_k(p) == close)
                break;
            continue;
        }
        if (cur_k(p) == close)
            break;
        syntax_error(p);
        return false;
    }
    return true;
}

static ast *p_hash(parser *p)
{
    ast *h = a_new(A_HASH, cur(p)->start, cur(p)->end);
    advance(p);
    while (cur_k(p) != TK_RBRACE) {
        ast *k = p_assignment(p);
        if (!k)
            goto fail;
        if (cur_k(p) != TK_FARROW) {
            pt_a_free(k);
            syntax_error(p);
            goto fail;
        }
        advance(p);
        ast *v = p_assignment(p);
        if (!v) {
            pt_a_free(k);
            goto fail;
        }
        a_push(h, k);
        a_push(h, v);
        if (cur_k(p) == TK_COMMA) {
            advance(p);
            continue;
        }
        if (cur_k(p) != TK_RBRACE) {
            syntax_error(p);
            goto fail;
        }
    }
    h->end = cur(p)->end;
    advance(p);
    return h;
fail:
    pt_a_free(h);
    return NULL;
}

static ast *p_primary(parser *p)
{
    const token *t = cur(p);
    ast *a;
    switch (t->k) {
    case TK_CLASSREF: a = a_new(A_QREF, t->start, t->end); break;
    case TK_NAME: a = a_new(A_QNAME, t->start, t->end); break;
    case TK_WORD: case TK_STRING: a = a_new(A_STRING, t->start, t->end); break;
    case TK_NUMBER: a = a_new(A_NUMBER, t->start, t->end); break;
    case TK_REGEX: a = a_new(A_REGEX, t->start, t->end); break;
    case TK_BOOLEAN: a = a_new(A_BOOL, t->start, t->end); break;
    case TK_DEFAULT: a = a_new(A_DEFAULT, t->start, t->end); break;
    case TK_UNDEF: a = a_new(A_UNDEF, t->start, t->end); break;
    case TK_DQINTERP: case TK_VARIABLE: a = a_new(A_OPAQUE, t->start, t->end); break;
    case TK_LISTSTART: case TK_LBRACK: {
        a = a_new(A_LIST, t->start, t->end);
        advance(p);
        if (!p_entries(p, a, TK_RBRACK, true)) {
            pt_a_free(a);
            return NULL;
        }
        a->end = cur(p)->end;
        advance(p);
        return a;
    }
    case TK_LBRACE:
        return p_hash(p);
    case TK_LPAREN: case TK_WSLPAREN: {
        advance(p);
        ast *e = p_assignment(p);
        if (!e)
            return NULL;
        if (cur_k(p) != TK_RPAREN) {
            pt_a_free(e);
            return syntax_error(p);
        }
        /* the parenthesized expression's text ends with the inner expression */
        a = a_new(A_OPAQUE, t->start, e->end);
        pt_a_free(e);
        advance(p);
        return a;
    }
    default:
        return syntax_error(p);
    }
    a->tok = t;
    advance(p);
    return a;
}

static ast *p_postfix(parser *p)
{
    ast *a = p_primary(p);
    while (a) {
        tok k = cur_k(p);
        if (k == TK_LBRACK) { /* access: X[args] */
            ast *acc = a_new(A_ACCESS, a->start, a->end);
            a_push(acc, a);
            advance(p);
            if (!p_entries(p, acc, TK_RBRACK, false)) {
                pt_a_free(acc);
                return NULL;
            }
            acc->end = cur(p)->end;
            advance(p);
            a = acc;
        } else if (k == TK_LPAREN) { /* a call */
            advance(p);
            ast *args = a_new(A_LIST, a->start, a->end);
            if (!p_entries(p, args, TK_RPAREN, true)) {
                pt_a_free(args);
                pt_a_free(a);
                return NULL;
            }
            size_t end = cur(p)->end;
            advance(p);
            pt_a_free(args);
            a = opaque(a, end);
        } else if (k == TK_DOT) { /* a method call */
            advance(p);
            tok nk = cur_k(p);
            if (nk != TK_NAME && nk != TK_CLASSREF && nk != TK_KEYWORD && nk != TK_DEFAULT && nk != TK_UNDEF &&
                nk != TK_BOOLEAN && nk != TK_BINOP) {
                pt_a_free(a);
                return syntax_error(p);
            }
            size_t end = cur(p)->end;
            advance(p);
            a = opaque(a, end);
        } else if (k == TK_LBRACE && (a->k == A_QREF || a->k == A_ACCESS || a->k == A_QNAME)) {
            size_t end;
            if (!skip_braces(p, &end)) {
                pt_a_free(a);
                return NULL;
            }
            a = opaque(a, end);
        } else {
            break;
        }
    }
    return a;
}

static ast *p_unary(parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        herr_set(p->err, HERR_ERROR, "type expression nested too deeply");
        return NULL;
    }
    const token *t = cur(p);
    ast *r;
    if (t->k == TK_MINUS || t->k == TK_PREFIX) {
        advance(p);
        ast *e = p_unary(p);
        if (!e) {
            r = NULL;
        } else if (t->k == TK_MINUS) {
            r = a_new(A_UMINUS, t->start, e->end);
            a_push(r, e);
        } else {
            r = a_new(A_OPAQUE, t->start, e->end);
            pt_a_free(e);
        }
    } else {
        r = p_postfix(p);
    }
    p->depth--;
    return r;
}

static bool is_binop(tok k) { return k == TK_BINOP || k == TK_MINUS; }

static ast *p_assignment(parser *p)
{
    ast *a = p_unary(p);
    while (a) {
        tok k = cur_k(p);
        if (is_binop(k) || (k == TK_PREFIX && cur(p)->val[0] == '*')) {
            advance(p);
            ast *r = p_unary(p);
            if (!r) {
                pt_a_free(a);
                return NULL;
            }
            size_t end = r->end;
            pt_a_free(r);
            a = opaque(a, end);
        } else if (k == TK_QMARK) { /* selector */
            advance(p);
            size_t end;
            if (cur_k(p) != TK_LBRACE || !skip_braces(p, &end)) {
                pt_a_free(a);
                return cur_k(p) != TK_LBRACE ? syntax_error(p) : NULL;
            }
            a = opaque(a, end);
        } else {
            break;
        }
    }
    return a;
}

/* program: statements (juxtaposed or separated by ';'); a comma continues a statement. */
ast *pt_p_program(parser *p)
{
    ast *first = NULL;
    size_t end = 0;
    int count = 0;
    while (cur_k(p) != TK_EOF) {
        ast *s = p_assignment(p);
        if (!s) {
            pt_a_free(first);
            return NULL;
        }
        while (cur_k(p) == TK_COMMA) {
            advance(p);
            ast *x = p_assignment(p);
            if (!x) {
                pt_a_free(s);
                pt_a_free(first);
                return NULL;
            }
            size_t e = x->end;
            pt_a_free(x);
            s = opaque(s, e);
        }
        end = s->end;
        if (!first)
            first = s;
        else
            pt_a_free(s);
        count++;
        if (cur_k(p) == TK_SEMIC) {
            advance(p);
            if (cur_k(p) == TK_EOF) /* a ';' must be followed by a statement */
                return syntax_error(p), pt_a_free(first), NULL;
        }
    }
    if (!first)
        return a_new(A_OPAQUE, 0, 0);
    if (count > 1)
        first = opaque(first, end);
    return first;
}
