/* hocon_lex.c - stage 1 of the HOCON reader (see hocon.c): characters and numbers as the gem
 * reads them, and the pull lexer (the gem's Tokenizer, with its whitespace rule and its messages),
 * including the paths of keys and ${} substitutions (PathParser). */
#include "formats/hocon_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* characters                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Decodes the UTF-8 character at s[0..n): its length, with *cp = -1 for an invalid sequence
 * (then the length is 1). Ruby reads the content as UTF-8 and its regexp tests raise on invalid
 * bytes, so the lexer treats them as errors outside comments and triple-quoted strings. */
size_t hc_utf8_char(const unsigned char *s, size_t n, long *cp)
{
    unsigned c = s[0];
    size_t len;
    long v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = -1;
        return 1;
    }
    if (n < len) {
        *cp = -1;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return len;
}

/* Ruby's /[[:space:]]/ on a UTF-8 character (ConfigImplUtil.whitespace?) */
static bool is_space_cp(long c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* Ruby's /[[:cntrl:]]/ */
bool hc_is_cntrl_cp(long c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

/* Tokenizer::NOT_IN_UNQUOTED_TEXT */
static bool is_reserved(int c) { return c && strchr("$\"{}[]:=,+#`^?!@*&\\", c) != NULL; }

static void utf8_put(sbuf *b, long cp)
{
    char u[4];
    if (cp < 0x80) {
        sb_addc(b, (char)cp);
        return;
    }
    if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 4);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* numbers, as Ruby's Integer()/Float() accept them and ConfigNumber.new_number types them      */
/* ------------------------------------------------------------------------------------------ */

/* decimal text of an octal digit string (Ruby Integer("0...") is octal) */
static char *octal_to_decimal(const char *d, size_t n)
{
    size_t cap = n / 9 + 2, nl = 1;
    uint32_t *limb = xcalloc(cap, sizeof *limb); /* base 1e9, little-endian */
    for (size_t i = 0; i < n; i++) {
        uint64_t carry = (uint64_t)(d[i] - '0');
        for (size_t j = 0; j < nl; j++) {
            uint64_t x = (uint64_t)limb[j] * 8 + carry;
            limb[j] = (uint32_t)(x % 1000000000u);
            carry = x / 1000000000u;
        }
        if (carry)
            limb[nl++] = (uint32_t)carry;
    }
    sbuf b = {0};
    sb_addf(&b, "%u", limb[nl - 1]);
    for (size_t j = nl - 1; j-- > 0;)
        sb_addf(&b, "%09u", limb[j]);
    free(limb);
    return sb_take(&b);
}

/* value of decimal digits with an optional minus, as an int or a bigint */
static hv *int_from_decimal(bool neg, const char *d, size_t n)
{
    while (n > 1 && d[0] == '0')
        d++, n--;
    uint64_t v = 0;
    bool big = n > 19;
    for (size_t i = 0; i < n && !big; i++) {
        uint64_t digit = (uint64_t)(d[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            big = true;
        else
            v = v * 10 + digit;
    }
    if (!big && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX)) {
        if (neg)
            return hv_int(v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v);
        return hv_int((int64_t)v);
    }
    sbuf b = {0};
    if (neg)
        sb_addc(&b, '-');
    sb_addn(&b, d, n);
    hv *r = hv_bigint(b.s, b.len);
    sb_free(&b);
    return r;
}

/* Ruby Integer(s) for s made of digits, '+' and '-' (what the lexer collects without '.'/e/E):
 * an optional minus, then decimal digits, or octal ones after a leading 0. NULL if invalid. */
static hv *ruby_integer(const char *s, size_t n, const char **why)
{
    bool neg = n > 0 && s[0] == '-';
    const char *d = s + (neg ? 1 : 0);
    size_t m = n - (neg ? 1 : 0);
    *why = NULL;
    if (m == 0)
        return NULL;
    for (size_t i = 0; i < m; i++)
        if (d[i] < '0' || d[i] > '9')
            return NULL;
    if (m > 1 && d[0] == '0') {
        for (size_t i = 0; i < m; i++)
            if (d[i] > '7')
                return NULL;
        while (m > 1 && d[0] == '0')
            d++, m--;
        if (m > MAX_OCTAL_DIGITS) {
            *why = "octal number too long";
            return NULL;
        }
        char *dec = octal_to_decimal(d, m);
        hv *r = int_from_decimal(neg, dec, strlen(dec));
        free(dec);
        return r;
    }
    return int_from_decimal(neg, d, m);
}

/* Ruby Float(s) syntax for what the lexer collects: -?(digits(.digits)?|.digits)([eE][+-]?digits)? */
static bool ruby_float_syntax(const char *s, size_t n)
{
    size_t i = 0, a, b = 0;
    if (i < n && s[i] == '-')
        i++;
    for (a = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        a++;
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            b++;
        if (b == 0)
            return false;
    }
    if (a == 0 && b == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            e++;
        if (e == 0)
            return false;
    }
    return i == n;
}

/* ConfigNumber.new_number for a Float: a float equal to its to_i becomes an Integer (so 5.0 and
 * 1e3 are integers, as in the gem); *why is set for Infinity (Ruby raises FloatDomainError). */
static hv *number_from_double(double d, const char **why)
{
    *why = NULL;
    if (!isfinite(d)) {
        *why = "Infinity"; /* FloatDomainError */
        return NULL;
    }
    if (d != trunc(d))
        return hv_float(d);
    if (fabs(d) < 9.0e18)
        return hv_int((int64_t)d);
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", d);
    return hv_bigint(buf, strlen(buf));
}

/* ------------------------------------------------------------------------------------------ */
/* lexer                                                                                       */
/* ------------------------------------------------------------------------------------------ */

void hc_tok_free(token *t)
{
    hv_decref(t->str);
    hv_decref(t->num);
    hc_nfree(t->ref);
    free(t->problem);
    t->str = t->num = NULL;
    t->ref = NULL;
    t->problem = NULL;
}

static const char *tok_name(ttype t)
{
    switch (t) {
    case T_EOF: return "end of file";
    case T_COMMA: return "','";
    case T_COLON: return "':'";
    case T_EQUALS: return "'='";
    case T_PLUSEQ: return "'+='";
    case T_LBRACE: return "'{'";
    case T_RBRACE: return "'}'";
    case T_LBRACKET: return "'['";
    case T_RBRACKET: return "']'";
    case T_NEWLINE: return "newline";
    case T_WS: return "whitespace";
    case T_COMMENT: return "comment";
    case T_SUBST: return "substitution";
    case T_TRUE: return "'true'";
    case T_FALSE: return "'false'";
    case T_NULL: return "'null'";
    default: return "token";
    }
}

/* a token as the gem's messages show it */
void hc_tok_describe(sbuf *b, const token *t)
{
    if (t->type == T_UNQ || t->type == T_STRING || t->type == T_NUMBER) {
        sb_addc(b, '\'');
        sb_addn(b, hv_str_ptr(t->str), hv_str_len(t->str));
        sb_addc(b, '\'');
    } else {
        sb_adds(b, tok_name(t->type));
    }
}

/* A tokenizer problem: like the gem, the token becomes a problem token, which is an error only
 * when the parser gets to it (the gem's tokenizer reads one token ahead of its parser). Errors
 * that are Ruby exceptions in the gem (fail_ruby) stop everything at once instead. */
static void lx_fail(lexer *L, int line, int col, const char *fmt, ...) HIERA_PRINTF(4, 5);
static void lx_fail(lexer *L, int line, int col, const char *fmt, ...)
{
    if (L->problem)
        return;
    va_list ap;
    sbuf b = {0};
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    L->problem = sb_take(&b);
    L->pline = line;
    L->pcol = col;
    L->pruby = false;
}

static void lx_advance(lexer *L, size_t n)
{
    for (size_t i = 0; i < n && L->pos < L->len; i++) {
        unsigned char c = L->s[L->pos++];
        if (c == '\n') {
            L->line++;
            L->col = 1;
        } else if ((c & 0xC0) != 0x80) {
            L->col++;
        }
    }
}

static int lx_peek(const lexer *L, size_t off)
{
    return L->pos + off < L->len ? L->s[L->pos + off] : -1;
}

static bool comment_start(const lexer *L)
{
    int c = lx_peek(L, 0);
    return c == '#' || (c == '/' && lx_peek(L, 1) == '/');
}

static void set_error(lexer *L, token *t)
{
    t->type = T_ERROR;
    if (L->problem) {
        free(t->problem);
        t->problem = L->problem;
        t->line = L->pline;
        t->col = L->pcol;
        t->pruby = L->pruby;
        L->problem = NULL;
    }
}

/* a character for messages, as Tokenizer.as_string names it */
static void char_name(sbuf *b, const lexer *L)
{
    int c = lx_peek(L, 0);
    if (c < 0)
        sb_adds(b, "end of file");
    else if (c == '\n')
        sb_adds(b, "newline");
    else if (c == '\t')
        sb_adds(b, "tab");
    else if (c < 0x20 || c == 0x7F)
        sb_addf(b, "control character 0x%x", c);
    else {
        long cp;
        size_t n = hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        sb_addn(b, (const char *)L->s + L->pos, n);
    }
}

/* consumes the character that made a problem, as the gem's tokenizer has read it */
static void skip_char(lexer *L)
{
    long cp;
    if (L->pos < L->len)
        lx_advance(L, hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp));
}

/* skips blanks other than newlines, remembering them in the saver; false on invalid UTF-8 */
static bool skip_blanks(lexer *L, wsaver *sv)
{
    size_t start = L->pos;
    int line = L->line, col = L->col;
    while (L->pos < L->len) {
        unsigned char c = L->s[L->pos];
        if (c == '\n')
            break;
        long cp;
        size_t n = c < 0x80 ? (cp = c, 1) : hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            hc_fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            return false;
        }
        if (!is_space_cp(cp))
            break;
        lx_advance(L, n);
    }
    if (L->pos > start) {
        /* the saver is emptied after every token, so these are the blanks before this one */
        sv->start = start;
        sv->end = L->pos;
        sv->line = line;
        sv->col = col;
    }
    return true;
}

static void lex_token(lexer *L, wsaver *sv, token *t);

static void lex_comment(lexer *L, token *t)
{
    while (L->pos < L->len && L->s[L->pos] != '\n')
        lx_advance(L, 1);
    t->type = T_COMMENT;
}

/* a \uXXXX escape: Ruby takes 4 characters and String#hex of them */
static bool lex_unicode_escape(lexer *L, sbuf *b)
{
    const unsigned char *start = L->s + L->pos;
    for (int i = 0; i < 4; i++) {
        if (L->pos >= L->len) {
            lx_fail(L, L->line, L->col, "End of input but expecting 4 hex digits for \\uXXXX escape");
            return false;
        }
        long cp;
        lx_advance(L, hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp));
    }
    /* String#hex: leading blanks, a sign, an optional 0x, hex digits (underscores between) */
    const unsigned char *p = start, *e = L->s + L->pos;
    long v = 0;
    bool neg = false;
    while (p < e && (*p == ' ' || (*p >= 9 && *p <= 13)))
        p++;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (e - p >= 3 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit(p[2]))
        p += 2;
    for (bool prev_digit = false; p < e; p++) {
        if (*p == '_' && prev_digit && p + 1 < e && isxdigit(p[1])) {
            prev_digit = false;
            continue;
        }
        if (!isxdigit(*p))
            break;
        v = v * 16 + (isdigit(*p) ? *p - '0' : (tolower(*p) - 'a' + 10));
        prev_digit = true;
    }
    if (neg && v != 0) {
        hc_fail_ruby(L->cx, L->org, L->line, L->col, "pack(U): value out of range");
        return false;
    }
    utf8_put(b, v);
    return true;
}

static bool lex_escape(lexer *L, sbuf *b)
{
    lx_advance(L, 1); /* the backslash */
    int c = lx_peek(L, 0);
    if (c < 0) {
        lx_fail(L, L->line, L->col, "End of input but backslash in string had nothing after it");
        return false;
    }
    const char *rep = NULL;
    switch (c) {
    case '"': rep = "\""; break;
    case '\\': rep = "\\"; break;
    case '/': rep = "/"; break;
    case 'b': rep = "\b"; break;
    case 'f': rep = "\f"; break;
    case 'n': rep = "\n"; break;
    case 'r': rep = "\r"; break;
    case 't': rep = "\t"; break;
    case 'u': lx_advance(L, 1); return lex_unicode_escape(L, b);
    default: {
        /* the gem means to say "backslash followed by 'q', this is not a valid escape sequence",
         * but builds that error with a string for its origin and fails with NoMethodError */
        sbuf nm = {0};
        char_name(&nm, L);
        lx_fail(L, L->line, L->col, "undefined method `line_number' for \"%s\":String", sb_str(&nm));
        L->pruby = true; /* raised when the parser asks the problem token for its line */
        sb_free(&nm);
        return false;
    }
    }
    sb_adds(b, rep);
    lx_advance(L, 1);
    return true;
}

/* after the opening """: up to the first run of three or more quotes, whose last three close it */
static bool lex_triple(lexer *L, sbuf *b)
{
    int quotes = 0;
    for (;;) {
        int c = lx_peek(L, 0);
        if (c == '"') {
            quotes++;
        } else if (quotes >= 3) {
            b->len -= 3;
            b->s[b->len] = 0;
            return true;
        } else {
            quotes = 0;
            if (c < 0) {
                lx_fail(L, L->line, L->col, "End of input but triple-quoted string was still open");
                return false;
            }
        }
        sb_addc(b, (char)c);
        lx_advance(L, 1);
    }
}

static void lex_quoted(lexer *L, token *t)
{
    sbuf b = {0};
    lx_advance(L, 1);
    for (;;) {
        if (L->pos >= L->len) {
            lx_fail(L, L->line, L->col, "End of input but string quote was still open");
            goto bad;
        }
        unsigned char c = L->s[L->pos];
        if (c == '\\') {
            if (!lex_escape(L, &b))
                goto bad;
            continue;
        }
        if (c == '"') {
            lx_advance(L, 1);
            break;
        }
        long cp;
        size_t n = hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            hc_fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            goto bad;
        }
        if (hc_is_cntrl_cp(cp)) {
            sbuf nm = {0};
            char_name(&nm, L);
            lx_fail(L, L->line, L->col,
                    "JSON does not allow unescaped %s in quoted strings, use a backslash escape", sb_str(&nm));
            sb_free(&nm);
            skip_char(L);
            goto bad;
        }
        sb_addn(&b, (const char *)L->s + L->pos, n);
        lx_advance(L, n);
    }
    if (b.len == 0 && lx_peek(L, 0) == '"') {
        lx_advance(L, 1);
        if (!lex_triple(L, &b))
            goto bad;
    }
    t->type = T_STRING;
    t->str = hv_strn(b.s ? b.s : "", b.len);
    sb_free(&b);
    return;
bad:
    sb_free(&b);
    set_error(L, t);
}

static void lex_number(lexer *L, token *t)
{
    size_t start = L->pos;
    bool has_dec = false;
    lx_advance(L, 1);
    for (int c; (c = lx_peek(L, 0)) >= 0 && strchr("0123456789eE+-.", c); lx_advance(L, 1))
        if (c == '.' || c == 'e' || c == 'E')
            has_dec = true;
    const char *s = (const char *)L->s + start;
    size_t n = L->pos - start;
    const char *why = NULL;
    hv *v = NULL;
    if (has_dec) {
        if (ruby_float_syntax(s, n)) {
            char *tmp = xstrndup(s, n);
            double d = strtod(tmp, NULL);
            free(tmp);
            v = number_from_double(d, &why);
        }
    } else {
        v = ruby_integer(s, n, &why);
    }
    if (why) {
        if (strcmp(why, "Infinity") == 0) /* FloatDomainError */
            hc_fail_ruby(L->cx, L->org, t->line, t->col, "%s", why);
        else
            lx_fail(L, t->line, t->col, "%s", why);
        set_error(L, t);
        return;
    }
    if (!v) {
        /* not a number after all: unquoted text, unless it holds a reserved character */
        if (memchr(s, '+', n)) {
            lx_fail(L, t->line, t->col, "Reserved character '+' is not allowed outside quotes");
            set_error(L, t);
            return;
        }
        t->type = T_UNQ;
        t->str = hv_strn(s, n);
        return;
    }
    t->type = T_NUMBER;
    t->num = v;
    t->str = hv_strn(s, n);
}

static void lex_unquoted(lexer *L, token *t)
{
    size_t start = L->pos;
    for (;;) {
        int c = lx_peek(L, 0);
        if (c < 0 || is_reserved(c) || comment_start(L))
            break;
        long cp;
        size_t n = hc_utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            hc_fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            set_error(L, t);
            return;
        }
        if (is_space_cp(cp))
            break;
        lx_advance(L, n);
        /* true/false/null are recognized at the start of an unquoted token whatever follows */
        size_t len = L->pos - start;
        const char *s = (const char *)L->s + start;
        if (len == 4 && memcmp(s, "true", 4) == 0) {
            t->type = T_TRUE;
            return;
        }
        if (len == 4 && memcmp(s, "null", 4) == 0) {
            t->type = T_NULL;
            return;
        }
        if (len == 5 && memcmp(s, "false", 5) == 0) {
            t->type = T_FALSE;
            return;
        }
    }
    t->type = T_UNQ;
    t->str = hv_strn((const char *)L->s + start, L->pos - start);
}

static void pb_new_element(pbuild *pb)
{
    if (pb->n == pb->cap) {
        pb->cap = pb->cap ? pb->cap * 2 : 4;
        pb->el = xrealloc(pb->el, pb->cap * sizeof *pb->el);
        pb->can_empty = xrealloc(pb->can_empty, pb->cap * sizeof *pb->can_empty);
    }
    memset(&pb->el[pb->n], 0, sizeof pb->el[pb->n]);
    pb->can_empty[pb->n++] = false;
}

static void pb_add(pbuild *pb, bool quoted, const char *s, size_t n)
{
    if (pb->n == 0)
        pb_new_element(pb);
    pb->any = true;
    if (quoted) {
        sb_addn(&pb->el[pb->n - 1], s, n);
        if (pb->el[pb->n - 1].len == 0)
            pb->can_empty[pb->n - 1] = true;
        return;
    }
    for (;;) {
        const char *dot = memchr(s, '.', n);
        if (!dot) {
            sb_addn(&pb->el[pb->n - 1], s, n);
            return;
        }
        sb_addn(&pb->el[pb->n - 1], s, (size_t)(dot - s));
        pb_new_element(pb);
        n -= (size_t)(dot - s) + 1;
        s = dot + 1;
    }
}

void hc_pb_free(pbuild *pb)
{
    for (size_t i = 0; i < pb->n; i++)
        sb_free(&pb->el[i]);
    free(pb->el);
    free(pb->can_empty);
    memset(pb, 0, sizeof *pb);
}

/* feeds one token of a key or a ${} expression; false for a token not allowed in a path */
bool hc_pb_token(pbuild *pb, const token *t)
{
    switch (t->type) {
    case T_WS: return true;
    case T_STRING: pb_add(pb, true, hv_str_ptr(t->str), hv_str_len(t->str)); return true;
    case T_UNQ:
    case T_NUMBER: pb_add(pb, false, hv_str_ptr(t->str), hv_str_len(t->str)); return true;
    case T_TRUE: pb_add(pb, false, "true", 4); return true;
    case T_FALSE: pb_add(pb, false, "false", 5); return true;
    case T_NULL: pb_add(pb, false, "null", 4); return true;
    default: return false;
    }
}

/* the finished path as hv strings; NULL with *why when it has an empty element */
hv **hc_pb_finish(pbuild *pb, size_t *n, const char **why)
{
    if (!pb->any) {
        *why = "Expecting a field name or path here, but got nothing";
        return NULL;
    }
    for (size_t i = 0; i < pb->n; i++) {
        if (pb->el[i].len == 0 && !pb->can_empty[i]) {
            *why = "path has a leading, trailing, or two adjacent period '.' (use quoted \"\" empty string "
                   "if you want an empty element)";
            return NULL;
        }
    }
    hv **keys = xmalloc(pb->n * sizeof *keys);
    for (size_t i = 0; i < pb->n; i++)
        keys[i] = hv_strn(pb->el[i].s ? pb->el[i].s : "", pb->el[i].len);
    *n = pb->n;
    return keys;
}

node *hc_ref_new(hv **keys, size_t n, bool optional, int line, int col, const char *org)
{
    node *r = hc_nnew(N_REF, line, col, org);
    r->keys = keys;
    r->n = r->cap = n;
    r->optional = optional;
    return r;
}

static bool is_simple(ttype t)
{
    return t == T_SUBST || t == T_UNQ || t == T_STRING || t == T_NUMBER || t == T_TRUE || t == T_FALSE ||
           t == T_NULL;
}

/* WhitespaceSaver#check: the saved blanks become unquoted text between two simple values and an
 * ignored-whitespace token otherwise. True when *out was filled. */
static bool ws_check(lexer *L, wsaver *sv, const token *t, token *out)
{
    bool have = sv->end > sv->start, simple = is_simple(t->type);
    bool unq = have && simple && sv->last_simple;
    sv->last_simple = simple;
    if (!have)
        return false;
    memset(out, 0, sizeof *out);
    out->type = unq ? T_UNQ : T_WS;
    out->wsonly = true;
    out->line = sv->line;
    out->col = sv->col;
    if (unq)
        out->str = hv_strn((const char *)L->s + sv->start, sv->end - sv->start);
    sv->start = sv->end = 0;
    return true;
}

/* ${path} or ${?path}: the expression's tokens are read with their own whitespace saver */
static void lex_subst(lexer *L, token *t)
{
    lx_advance(L, 1);
    if (lx_peek(L, 0) != '{') {
        sbuf nm = {0};
        char_name(&nm, L);
        lx_fail(L, L->line, L->col, "'$' not followed by {, '%s' not allowed after '$'", sb_str(&nm));
        sb_free(&nm);
        skip_char(L);
        set_error(L, t);
        return;
    }
    lx_advance(L, 1);
    bool optional = false;
    if (lx_peek(L, 0) == '?') {
        optional = true;
        lx_advance(L, 1);
    }
    if (++L->subst_depth > 64) {
        lx_fail(L, L->line, L->col, "substitutions nested too deeply");
        set_error(L, t);
        return;
    }
    wsaver sv = {0};
    pbuild pb = {0};
    sbuf bad = {0};
    for (;;) {
        token x = {0}, w;
        lex_token(L, &sv, &x);
        if (x.type == T_ERROR) { /* the substitution is that problem */
            L->problem = x.problem;
            L->pline = x.line;
            L->pcol = x.col;
            L->pruby = x.pruby;
            x.problem = NULL;
            hc_tok_free(&x);
            goto fail;
        }
        if (x.type == T_RBRACE) {
            hc_tok_free(&x);
            break;
        }
        if (x.type == T_EOF) {
            lx_fail(L, L->line, L->col, "Substitution ${ was not closed with a }");
            goto fail;
        }
        if (ws_check(L, &sv, &x, &w)) {
            hc_pb_token(&pb, &w);
            hc_tok_free(&w);
        }
        if (!hc_pb_token(&pb, &x) && bad.len == 0) {
            sb_adds(&bad, "Token not allowed in path expression: ");
            hc_tok_describe(&bad, &x);
            sb_adds(&bad, " (you can double-quote this token if you really want it here)");
        }
        hc_tok_free(&x);
    }
    L->subst_depth--;
    t->line = L->line; /* the gem's token origin is the line where the substitution ends */
    const char *why = NULL;
    size_t n = 0;
    hv **keys = bad.len ? NULL : hc_pb_finish(&pb, &n, &why);
    t->type = T_SUBST;
    if (keys) /* else the gem finds the bad path when it makes the value (ConfigParser) */
        t->ref = hc_ref_new(keys, n, optional, t->line, t->col, L->org);
    else
        t->problem = bad.len ? sb_take(&bad) : xstrdup(why);
    hc_pb_free(&pb);
    sb_free(&bad);
    return;
fail:
    L->subst_depth--;
    hc_pb_free(&pb);
    sb_free(&bad);
    set_error(L, t);
}

/* Tokenizer#pull_next_token */
static void lex_token(lexer *L, wsaver *sv, token *t)
{
    memset(t, 0, sizeof *t);
    if (L->cx->failed || !skip_blanks(L, sv)) {
        set_error(L, t);
        return;
    }
    t->line = L->line;
    t->col = L->col;
    int c = lx_peek(L, 0);
    if (c < 0) {
        t->type = T_EOF;
        return;
    }
    if (c == '\n') {
        t->type = T_NEWLINE;
        lx_advance(L, 1);
        return;
    }
    if (comment_start(L)) {
        lex_comment(L, t);
        return;
    }
    switch (c) {
    case '"': lex_quoted(L, t); return;
    case '$': lex_subst(L, t); return;
    case ':': t->type = T_COLON; break;
    case ',': t->type = T_COMMA; break;
    case '=': t->type = T_EQUALS; break;
    case '{': t->type = T_LBRACE; break;
    case '}': t->type = T_RBRACE; break;
    case '[': t->type = T_LBRACKET; break;
    case ']': t->type = T_RBRACKET; break;
    case '+':
        lx_advance(L, 1);
        if (lx_peek(L, 0) != '=') {
            sbuf nm = {0};
            char_name(&nm, L);
            lx_fail(L, L->line, L->col, "'+' not followed by =, '%s' not allowed after '+'", sb_str(&nm));
            sb_free(&nm);
            skip_char(L);
            set_error(L, t);
            return;
        }
        t->type = T_PLUSEQ;
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            lex_number(L, t);
        } else if (is_reserved(c)) {
            lx_fail(L, L->line, L->col, "Reserved character '%c' is not allowed outside quotes", c);
            skip_char(L);
            set_error(L, t);
        } else {
            lex_unquoted(L, t);
        }
        return;
    }
    lx_advance(L, 1);
}

/* the parser's next token (ParseContext#next_token): put-back tokens first, then the lexer's
 * stream with the whitespace tokens the saver produces */
static void lx_fill(lexer *L)
{
    token x, w;
    lex_token(L, &L->ws, &x);
    L->nq = 0;
    if (x.type != T_ERROR && ws_check(L, &L->ws, &x, &w))
        L->q[L->nq++] = w;
    L->q[L->nq++] = x;
}

void hc_lx_next(lexer *L, token *t)
{
    if (L->nback) {
        *t = L->back[--L->nback];
        return;
    }
    if (L->nq == 0)
        lx_fill(L);
    *t = L->q[0];
    L->q[0] = L->q[1];
    L->nq--;
    if (L->nq == 0 && t->type != T_EOF && !L->cx->failed)
        lx_fill(L); /* TokenIterator#next reads the next token before returning this one */
    if (t->type == T_ERROR && t->problem) {
        if (t->pruby)
            hc_fail_ruby(L->cx, L->org, t->line, t->col, "%s", t->problem);
        else
            hc_fail(L->cx, L->org, t->line, t->col, "%s", t->problem);
    }
}

void hc_lx_back(lexer *L, token *t)
{
    if (L->nback < (int)(sizeof L->back / sizeof L->back[0]))
        L->back[L->nback++] = *t;
    else
        hc_tok_free(t); /* cannot happen: the parser puts back at most two tokens */
    memset(t, 0, sizeof *t);
}

void hc_lx_free(lexer *L)
{
    while (L->nback)
        hc_tok_free(&L->back[--L->nback]);
    while (L->nq)
        hc_tok_free(&L->q[--L->nq]);
    free(L->problem);
    L->problem = NULL;
}
