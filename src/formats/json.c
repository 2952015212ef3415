/* json.c - JSON as Ruby's JSON.parse reads it (the json gem 2.6.1 of Ruby 3.1, which Puppet's
 * json_data, Puppet::Util::Json and Hiera 3's json backend call; under Ruby 3.3, the json 2.7.2
 * Puppet 8.10 runs with: see below), and a debugging printer.
 *
 * Written by hand rather than through a JSON library because what Puppet accepts and says is that
 * gem's Ragel machines (ext/json/parser/parser.rl), and no library parses the same language: the
 * gem takes C comments and // comments wherever blanks may be, any bytes in strings (invalid UTF-8
 * too), "\q" as "q", lone surrogates as their raw 3-byte form, a high surrogate not followed by a
 * \u escape as "?" (eating one more character), and integers of any size; it refuses NaN and
 * Infinity. Its error messages name the line of parser.rl that raised and quote the source from
 * where its machine stopped to the end of the text (or a NUL): "859: unexpected token at '...'"
 * for the document, "451: ..." from the array machine, "225"/"232"/"249" for NaN, Infinity and
 * -Infinity, "521: incomplete surrogate pair at '...'", and "nesting of 101 is too deep". The
 * functions below follow the machines: where each one stops, and what its caller then reports.
 *   - an object that fails, or a string, or a literal, makes its value fail at its first
 *     character; the array around it then raises there (451), the document reports there (859);
 *   - an array raises itself (451) where its own machine stopped, or at a failed element;
 *   - numbers take the longest float the grammar allows, but a float followed by a digit, 'e',
 *     'E', '.' or '-' is no float at all; then the longest integer (no leading zeros).
 * json 2.7 (Ruby 3.3, rubyver.h) parses the same language with the same machines; its messages
 * drop the line of parser.rl ("unexpected token at '...'"), and an Infinity is quoted from its
 * first letter (2.6 quoted from the character before it, or nothing at the very start). */
#include "formats/json.h"
#include "base/fileio.h"
#include "base/rubyver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUBY_JSON_MAX_NESTING 100 /* JSON.parse's max_nesting */

typedef struct {
    const char *src, *end;
    const char *name;
    herr *err;
    bool raised; /* err holds the exception: every machine unwinds */
    /* line counting: the line of `at`, advanced as values are met in order */
    const char *at;
    uint32_t line;
} jparse;

/* The line (1-based) of position p; positions are asked mostly in increasing order. */
static uint32_t line_of(jparse *j, const char *p)
{
    if (p < j->at) {
        j->at = j->src;
        j->line = 1;
    }
    for (const char *q = j->at; q < p; q++)
        if (*q == '\n')
            j->line++;
    j->at = p;
    return j->line;
}

/* Raises JSON::ParserError "<rl_line>: <what> at '<source from p>'" (the source up to a NUL:
 * the gem prints it with %s). */
static void raise_at(jparse *j, int rl_line, const char *what, const char *p)
{
    if (j->raised)
        return;
    const char *q = p && p >= j->src ? p : j->end;
    const char *stop = memchr(q, 0, (size_t)(j->end - q));
    size_t n = (size_t)((stop ? stop : j->end) - q);
    if (rubyver() == RUBY_33)
        herr_set(j->err, HERR_ERROR, "Unable to parse (%s): %s at '%.*s'", j->name, what, (int)n, q);
    else
        herr_set(j->err, HERR_ERROR, "Unable to parse (%s): %d: %s at '%.*s'", j->name, rl_line, what, (int)n, q);
    int col = 1;
    for (const char *c = q; c > j->src && c[-1] != '\n'; c--)
        col++;
    herr_at(j->err, j->name, (int)line_of(j, q), col);
    j->raised = true;
}

static void raise_nesting(jparse *j, int depth, const char *p)
{
    if (j->raised)
        return;
    herr_set(j->err, HERR_ERROR, "Unable to parse (%s): nesting of %d is too deep", j->name, depth);
    int col = 1;
    for (const char *c = p; c > j->src && c[-1] != '\n'; c--)
        col++;
    herr_at(j->err, j->name, (int)line_of(j, p), col);
    j->raised = true;
}

/* ------------------------------------------------------------------ blanks and comments */

enum { IGN_OK, IGN_BAD, IGN_EOF };

/* ignore*: blanks, C comments and // comments (up to and with their newline). *state: IGN_OK with the result at the next
 * other character (or at the end, outside a comment); IGN_BAD: the character after a '/' that
 * starts no comment (where the machine stops); IGN_EOF: the text ends inside a comment (the
 * machine is left in no final state, at the end). */
static const char *skip_ignore(const char *p, const char *end, int *state)
{
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
            p++;
        if (p == end || *p != '/') {
            *state = IGN_OK;
            return p;
        }
        if (p + 1 == end) {
            *state = IGN_EOF;
            return end;
        }
        if (p[1] == '*') {
            const char *q = p + 2;
            for (;;) {
                q = memchr(q, '*', (size_t)(end - q));
                if (!q || q + 1 >= end) {
                    *state = IGN_EOF;
                    return end;
                }
                if (q[1] == '/')
                    break;
                q++;
            }
            p = q + 2;
        } else if (p[1] == '/') {
            const char *q = memchr(p + 2, '\n', (size_t)(end - p - 2));
            if (!q) {
                *state = IGN_EOF;
                return end;
            }
            p = q + 1;
        } else {
            *state = IGN_BAD;
            return p + 1;
        }
    }
}

static bool begin_value(char c)
{
    return c == '"' || c == '-' || c == '[' || c == '{' || c == 'n' || c == 'f' || c == 't' || c == 'N' ||
           c == 'I' || (c >= '0' && c <= '9');
}

/* ------------------------------------------------------------------ strings */

static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static uint32_t unescape_unicode(const char *p)
{
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        int d = hexval((unsigned char)p[i]);
        if (d < 0)
            return 0xFFFD;
        r = r << 4 | (uint32_t)d;
    }
    return r;
}

static int utf32_to_utf8(char *buf, uint32_t ch)
{
    if (ch <= 0x7F) {
        buf[0] = (char)ch;
        return 1;
    }
    if (ch <= 0x7FF) {
        buf[0] = (char)(ch >> 6 | 0xC0);
        buf[1] = (char)((ch & 0x3F) | 0x80);
        return 2;
    }
    if (ch <= 0xFFFF) {
        buf[0] = (char)(ch >> 12 | 0xE0);
        buf[1] = (char)((ch >> 6 & 0x3F) | 0x80);
        buf[2] = (char)((ch & 0x3F) | 0x80);
        return 3;
    }
    if (ch <= 0x1FFFFF) {
        buf[0] = (char)(ch >> 18 | 0xF0);
        buf[1] = (char)((ch >> 12 & 0x3F) | 0x80);
        buf[2] = (char)((ch >> 6 & 0x3F) | 0x80);
        buf[3] = (char)((ch & 0x3F) | 0x80);
        return 4;
    }
    buf[0] = '?';
    return 1;
}

/* json_string_unescape of the text between the quotes (s..e, already checked by the string
 * machine). NULL when it raised. */
static hv *unescape(jparse *j, const char *s, const char *e)
{
    const char *bs = memchr(s, '\\', (size_t)(e - s));
    if (!bs)
        return hv_strn(s, (size_t)(e - s));
    sbuf b = {0};
    const char *p = s, *pe = bs;
    while (pe < e) {
        if (*pe != '\\') {
            pe++;
            continue;
        }
        const char *out = "?";
        int outlen = 1;
        char buf[4];
        if (pe > p)
            sb_addn(&b, p, (size_t)(pe - p));
        switch (*++pe) {
        case 'n': out = "\n"; break;
        case 'r': out = "\r"; break;
        case 't': out = "\t"; break;
        case '"': out = "\""; break;
        case '\\': out = "\\"; break;
        case 'b': out = "\b"; break;
        case 'f': out = "\f"; break;
        case 'u': {
            uint32_t ch = unescape_unicode(++pe);
            pe += 3;
            if ((ch & 0xFC00) == 0xD800) {
                pe++;
                if (e - pe < 6) {
                    sb_free(&b);
                    raise_at(j, 521, "incomplete surrogate pair", p);
                    return NULL;
                }
                if (pe[0] == '\\' && pe[1] == 'u') {
                    uint32_t sur = unescape_unicode(pe + 2);
                    ch = ((ch & 0x3F) << 10) | ((((ch >> 6) & 0xF) + 1) << 16) | (sur & 0x3FF);
                    pe += 5;
                } else {
                    out = "?"; /* (and the character after the escape is skipped below) */
                    break;
                }
            }
            outlen = utf32_to_utf8(buf, ch);
            out = buf;
            break;
        }
        default: /* any other escaped character stands for itself */
            p = pe;
            continue;
        }
        sb_addn(&b, out, (size_t)outlen);
        p = ++pe;
    }
    if (pe > p)
        sb_addn(&b, p, (size_t)(pe - p));
    size_t n = b.len;
    if (!b.s)
        return hv_strn("", 0);
    return hv_str_take(sb_take(&b), n);
}

/* JSON_parse_string at the opening quote: the position after the closing quote, or NULL when
 * the string machine stops (a control character, a bad \u escape, the end of the text). */
static const char *parse_string(jparse *j, const char *p, hv **out)
{
    const char *s = ++p, *end = j->end;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *out = unescape(j, s, p);
            return *out ? p + 1 : NULL;
        }
        if (c < 0x20)
            return NULL;
        if (c == '\\') {
            if (++p == end)
                return NULL;
            c = (unsigned char)*p;
            if (c < 0x20)
                return NULL;
            if (c == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (p + i >= end || hexval((unsigned char)p[i]) < 0)
                        return NULL;
                p += 4;
            }
        }
        p++;
    }
    return NULL;
}

/* ------------------------------------------------------------------ numbers */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The float machine: '-'? int ('.' digits+ exp? | exp), not followed by [0-9Ee.-]; its end or NULL. */
static const char *float_end(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p == end || !is_digit(*p))
        return NULL;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    bool frac = false;
    if (p < end && *p == '.') {
        p++;
        if (p == end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
        frac = true;
    } else if (p < end && is_digit(*p)) {
        return NULL; /* a leading zero */
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return NULL;
        while (p < end && is_digit(*p))
            p++;
    } else if (!frac) {
        return NULL;
    }
    if (p < end && (is_digit(*p) || *p == 'e' || *p == 'E' || *p == '.' || *p == '-'))
        return NULL;
    return p;
}

/* The integer machine: '-'? ('0' | [1-9][0-9]*), not followed by a digit; its end or NULL. */
static const char *integer_end(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p == end || !is_digit(*p))
        return NULL;
    if (*p == '0')
        return p + 1 < end && is_digit(p[1]) ? NULL : p + 1;
    while (p < end && is_digit(*p))
        p++;
    return p;
}

static hv *number_value(const char *s, const char *e, bool is_float)
{
    size_t n = (size_t)(e - s);
    char small[64];
    char *buf = n < sizeof small ? small : xmalloc(n + 1);
    memcpy(buf, s, n);
    buf[n] = 0;
    hv *v;
    if (is_float) {
        v = hv_float(strtod(buf, NULL)); /* out of range: +-Infinity or 0.0, as Ruby's */
    } else {
        const char *d = buf[0] == '-' ? buf + 1 : buf;
        size_t nd = strlen(d);
        if (nd < 19 || (nd == 19 && strcmp(d, buf[0] == '-' ? "9223372036854775808" : "9223372036854775807") <= 0))
            v = hv_int(strtoll(buf, NULL, 10));
        else
            v = hv_bigint(buf, n);
    }
    if (buf != small)
        free(buf);
    return v;
}

/* ------------------------------------------------------------------ values */

static const char *parse_array(jparse *j, const char *p, int depth, hv **out);
static const char *parse_object(jparse *j, const char *p, int depth, hv **out);

/* JSON_parse_value at a begin_value character: the position after the value, or NULL when it
 * failed (its caller then stops at p; j->raised when something raised). */
static const char *parse_value(jparse *j, const char *p, int depth, hv **out)
{
    const char *end = j->end;
    size_t left = (size_t)(end - p);
    uint32_t line = line_of(j, p);
    const char *np = NULL;
    hv *v = NULL;
    switch (*p) {
    case 'n':
        if (left >= 4 && memcmp(p, "null", 4) == 0)
            np = p + 4, v = hv_undef();
        break;
    case 't':
        if (left >= 4 && memcmp(p, "true", 4) == 0)
            np = p + 4, v = hv_true();
        break;
    case 'f':
        if (left >= 5 && memcmp(p, "false", 5) == 0)
            np = p + 5, v = hv_false();
        break;
    case 'N':
        if (left >= 3 && memcmp(p, "NaN", 3) == 0)
            raise_at(j, 225, "unexpected token", p);
        break;
    case 'I':
        if (left >= 8 && memcmp(p, "Infinity", 8) == 0)
            raise_at(j, 232, "unexpected token",
                     rubyver() == RUBY_33 ? p : p > j->src ? p - 1 : j->end); /* (2.6: p - 8 from its last letter) */
        break;
    case '"':
        np = parse_string(j, p, &v);
        break;
    case '[':
        np = parse_array(j, p, depth + 1, &v);
        break;
    case '{':
        np = parse_object(j, p, depth + 1, &v);
        break;
    default: /* '-' or a digit */
        if (left > 8 && memcmp(p, "-Infinity", 9) == 0) {
            raise_at(j, 249, "unexpected token", p);
            break;
        }
        if ((np = float_end(p, end)) != NULL)
            v = number_value(p, np, true);
        else if ((np = integer_end(p, end)) != NULL)
            v = number_value(p, np, false);
        break;
    }
    if (!np || j->raised) {
        hv_decref(v);
        return NULL;
    }
    if (!hv_is_immortal(v))
        hv_set_line(v, line);
    *out = v;
    return np;
}

/* JSON_parse_array at '[': raises where its machine stops (a failed element: at its start). */
static const char *parse_array(jparse *j, const char *p, int depth, hv **out)
{
    if (depth > RUBY_JSON_MAX_NESTING) {
        raise_nesting(j, depth, p);
        return NULL;
    }
    hv *a = hv_array();
    int st;
    p = skip_ignore(p + 1, j->end, &st);
    bool first = true;
    for (;;) {
        if (st != IGN_OK || p == j->end)
            break;
        if (first && *p == ']') {
            *out = a;
            return p + 1;
        }
        if (!begin_value(*p))
            break;
        hv *v = NULL;
        const char *np = parse_value(j, p, depth, &v);
        if (!np)
            break;
        hv_array_push(a, v);
        first = false;
        p = skip_ignore(np, j->end, &st);
        if (st != IGN_OK || p == j->end)
            break;
        if (*p == ']') {
            *out = a;
            return p + 1;
        }
        if (*p != ',')
            break;
        p = skip_ignore(p + 1, j->end, &st);
        if (st == IGN_OK && p < j->end && *p == ']')
            break; /* a trailing comma */
    }
    hv_decref(a);
    raise_at(j, 451, "unexpected token", p);
    return NULL;
}

/* JSON_parse_object at '{': NULL whenever its machine stops (nothing raised of its own). */
static const char *parse_object(jparse *j, const char *p, int depth, hv **out)
{
    if (depth > RUBY_JSON_MAX_NESTING) {
        raise_nesting(j, depth, p);
        return NULL;
    }
    hv *h = hv_hash();
    int st;
    p = skip_ignore(p + 1, j->end, &st);
    if (st == IGN_OK && p < j->end && *p == '}') {
        *out = h;
        return p + 1;
    }
    for (;;) {
        if (st != IGN_OK || p == j->end || *p != '"')
            break;
        uint32_t kline = line_of(j, p);
        hv *k = NULL, *v = NULL;
        const char *np = parse_string(j, p, &k);
        if (!np)
            break;
        hv_set_line(k, kline);
        p = skip_ignore(np, j->end, &st);
        if (st != IGN_OK || p == j->end || *p != ':') {
            hv_decref(k);
            break;
        }
        p = skip_ignore(p + 1, j->end, &st);
        if (st != IGN_OK || p == j->end || !begin_value(*p) || !(np = parse_value(j, p, depth, &v))) {
            hv_decref(k);
            break;
        }
        hv_hash_set(h, k, v); /* a key met again: its first place, this value (Hash#[]=) */
        p = skip_ignore(np, j->end, &st);
        if (st != IGN_OK || p == j->end)
            break;
        if (*p == '}') {
            *out = h;
            return p + 1;
        }
        if (*p != ',')
            break;
        p = skip_ignore(p + 1, j->end, &st);
    }
    hv_decref(h);
    return NULL;
}

hv *hjson_parse(const char *text, size_t len, const char *name, herr *err)
{
    jparse j = {text, text + len, name, err, false, text, 1};
    int st;
    const char *p = skip_ignore(text, j.end, &st);
    hv *v = NULL;
    if (st == IGN_OK && p < j.end && begin_value(*p)) {
        const char *np = parse_value(&j, p, 0, &v);
        if (np) {
            const char *q = skip_ignore(np, j.end, &st);
            if (st == IGN_OK && q == j.end)
                return v;
            p = q;
        }
    }
    hv_decref(v);
    raise_at(&j, 859, "unexpected token", p);
    return NULL;
}

hv *hjson_parse_puppet(const char *text, size_t len, const char *name, herr *err)
{
    if (rubyver() == RUBY_33) {
        /* MultiJson::Adapter.load: blank?(input), /\A\s*\z/ */
        size_t i = 0;
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r' || text[i] == '\f' ||
                           text[i] == '\v'))
            i++;
        if (i == len) {
            herr_set(err, HERR_ERROR, "Unable to parse (%s): JSON::ParserError", name);
            herr_at(err, name, 1, 1);
            return NULL;
        }
    }
    return hjson_parse(text, len, name, err);
}

hv *hjson_load_file(const char *path, herr *err)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe) && fe.failed == FILE_READ_OPEN) {
        sb_free(&b);
        herr_set(err, HERR_ERROR, "Unable to read %s", path);
        herr_at(err, path, 0, 0);
        return NULL;
    }
    /* a read that fails later (a directory) parses what was read */
    hv *v = hjson_parse(sb_str(&b), b.len, path, err);
    sb_free(&b);
    return v;
}

static void debug_str(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            sb_addc(b, '\\');
            sb_addc(b, (char)c);
        } else if (c < 0x20) {
            sb_addf(b, "\\u%04x", c);
        } else {
            sb_addc(b, (char)c);
        }
    }
    sb_addc(b, '"');
}

static void debug_val(sbuf *b, const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(b, "null"); break;
    case HV_BOOL: sb_adds(b, hv_bool_val(v) ? "true" : "false"); break;
    case HV_INT: sb_addf(b, "%lld", (long long)hv_int_val(v)); break;
    case HV_BIGINT: sb_adds(b, hv_bigint_digits(v)); break;
    case HV_FLOAT: sb_addf(b, "%.17g", hv_float_val(v)); break;
    case HV_STRING: debug_str(b, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SYMBOL: sb_adds(b, "{\"symbol\":"); debug_str(b, hv_str_ptr(v), hv_str_len(v)); sb_addc(b, '}'); break;
    case HV_SENSITIVE: sb_adds(b, "{\"sensitive\":"); debug_val(b, hv_sensitive_inner(v)); sb_addc(b, '}'); break;
    case HV_ARRAY:
        sb_addc(b, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(b, ',');
            debug_val(b, hv_array_get(v, i));
        }
        sb_addc(b, ']');
        break;
    case HV_HASH:
        sb_addc(b, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            hv *k = hv_hash_key_at(v, i);
            if (i)
                sb_addc(b, ',');
            if (hv_is(k, HV_STRING)) {
                debug_str(b, hv_str_ptr(k), hv_str_len(k));
            } else {
                sbuf kb = {0};
                debug_val(&kb, k);
                debug_str(b, sb_str(&kb), kb.len);
                sb_free(&kb);
            }
            sb_addc(b, ':');
            debug_val(b, hv_hash_val_at(v, i));
        }
        sb_addc(b, '}');
        break;
    }
}

char *hjson_debug(const hv *v)
{
    sbuf b = {0};
    debug_val(&b, v);
    return sb_take(&b);
}
