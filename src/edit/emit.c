/* emit.c - values written as YAML text (emit.h).
 *
 * libyaml has an emitter, but it writes whole documents: it decides the indentation of a
 * collection from its own settings, wraps long scalars, and has no way to start a block at the
 * indentation of the entry being replaced or to keep a scalar's style when the new text allows it
 * and fall back when it does not. An entry of a file people wrote needs exactly that, so the few
 * rules are written here: which characters a plain or quoted scalar may hold (libyaml's reader and
 * scanner), and what Psych reads a plain scalar as (psych.h's yaml_plain_scalar, the loader's own
 * resolver). The editor reads every result back with the loader and compares (yedit.c). */
#include "edit/emit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/psych.h"

/* ------------------------------------------------------------------ characters */

/* The code point at s[*i] (advancing *i), or -1 when the bytes are not UTF-8. */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *i)
{
    unsigned c = s[*i];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || *i + len > n)
        return -1;
    int32_t cp = len == 1 ? (int32_t)c : len == 2 ? (int32_t)(c & 0x1F) : len == 3 ? (int32_t)(c & 0x0F) : (int32_t)(c & 0x07);
    for (size_t k = 1; k < len; k++) {
        unsigned d = s[*i + k];
        if ((d & 0xC0) != 0x80)
            return -1;
        cp = (cp << 6) | (int32_t)(d & 0x3F);
    }
    static const int32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *i += len;
    return cp;
}

/* A character that may stand as it is inside a one-line scalar: printable for libyaml's reader,
 * and not one it takes for a line break (NEL, LS, PS) or a byte order mark. Tab apart. */
static bool raw_ok(int32_t cp)
{
    return (cp >= 0x20 && cp <= 0x7E) || (cp >= 0xA0 && cp <= 0xD7FF && cp != 0x2028 && cp != 0x2029) ||
           (cp >= 0xE000 && cp <= 0xFFFD && cp != 0xFEFF) || cp >= 0x10000;
}

static bool is_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;)
        if (utf8_next((const unsigned char *)s, n, &i) < 0)
            return false;
    return true;
}

/* ------------------------------------------------------------------ scalar styles */

static bool reads_as_itself(const char *s, size_t n)
{
    herr e = {0};
    hv *v = yaml_plain_scalar(s, n, &e);
    herr_clear(&e);
    bool ok = v && hv_is(v, HV_STRING) && hv_str_len(v) == n && memcmp(hv_str_ptr(v), s, n) == 0;
    hv_decref(v);
    return ok;
}

static bool flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }

/* Whether s may be written as a plain scalar and read back as the same string: no indicator where
 * libyaml would see one, no ": " or " #", nothing but printable characters, no leading or
 * trailing blank, and Psych's resolver gives a string (not a boolean, a number, nil, a symbol...).
 * flow: inside a flow collection (no ",[]{}"). */
static bool plain_ok(const char *s, size_t n, bool flow)
{
    if (n == 0 || s[0] == ' ' || s[n - 1] == ' ' || s[n - 1] == ':')
        return false;
    if (n >= 3 && (!strncmp(s, "---", 3) || !strncmp(s, "...", 3)))
        return false;
    unsigned char f = (unsigned char)s[0];
    if (strchr("?:-", f)) {
        /* an indicator may start a plain scalar when a non-blank follows it */
        if (n < 2 || s[1] == ' ' || s[1] == '\t' || (flow && flow_indicator(s[1])))
            return false;
    } else if (strchr(",[]{}#&*!|>'\"%@`", f)) {
        return false;
    }
    for (size_t i = 0; i < n;) {
        size_t at = i;
        int32_t cp = utf8_next((const unsigned char *)s, n, &i);
        if (cp < 0 || !raw_ok(cp))
            return false;
        char c = s[at];
        if (c == ':' && at + 1 < n && (s[at + 1] == ' ' || (flow && flow_indicator(s[at + 1]))))
            return false;
        if (c == '#' && at > 0 && s[at - 1] == ' ')
            return false;
        if (flow && flow_indicator(c))
            return false;
    }
    return reads_as_itself(s, n);
}

/* One line in single quotes: every character printable (tabs too), no line break. */
static bool single_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int32_t cp = utf8_next((const unsigned char *)s, n, &i);
        if (cp < 0 || (cp != '\t' && !raw_ok(cp)))
            return false;
    }
    return true;
}

static void put_single(sbuf *out, const char *s, size_t n)
{
    sb_addc(out, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            sb_addc(out, '\'');
        sb_addc(out, s[i]);
    }
    sb_addc(out, '\'');
}

/* Double quotes hold anything that is UTF-8: what is not printable is escaped. */
static bool put_double(sbuf *out, const char *s, size_t n, herr *err)
{
    sb_addc(out, '"');
    for (size_t i = 0; i < n;) {
        size_t at = i;
        int32_t cp = utf8_next((const unsigned char *)s, n, &i);
        if (cp < 0) {
            herr_set(err, HERR_ERROR, "the value holds bytes that are not UTF-8 text: YAML cannot hold it");
            return false;
        }
        switch (cp) {
        case '"': sb_adds(out, "\\\""); continue;
        case '\\': sb_adds(out, "\\\\"); continue;
        case 0: sb_adds(out, "\\0"); continue;
        case 7: sb_adds(out, "\\a"); continue;
        case 8: sb_adds(out, "\\b"); continue;
        case 9: sb_adds(out, "\\t"); continue;
        case 10: sb_adds(out, "\\n"); continue;
        case 11: sb_adds(out, "\\v"); continue;
        case 12: sb_adds(out, "\\f"); continue;
        case 13: sb_adds(out, "\\r"); continue;
        case 27: sb_adds(out, "\\e"); continue;
        case 0x85: sb_adds(out, "\\N"); continue;
        case 0x2028: sb_adds(out, "\\L"); continue;
        case 0x2029: sb_adds(out, "\\P"); continue;
        default: break;
        }
        if (raw_ok(cp))
            sb_addn(out, s + at, i - at);
        else if (cp <= 0xFF)
            sb_addf(out, "\\x%02X", (unsigned)cp);
        else
            sb_addf(out, "\\u%04X", (unsigned)cp);
    }
    sb_addc(out, '"');
    return true;
}

/* A literal block scalar (|) holds s when it is several lines of printable text whose first line
 * does not start with a blank (the indentation would be read from it) and that ends with at most
 * one line break ("|" keeps one, "|-" none; more would need "|+", which keeps the blank lines that
 * follow in the file too). */
static bool literal_ok(const char *s, size_t n, bool one_line_ok)
{
    if (n == 0)
        return false;
    size_t body = n;
    if (s[body - 1] == '\n')
        body--;
    if (body == 0 || s[body - 1] == '\n' || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
        return false;
    bool several = memchr(s, '\n', body) != NULL;
    if (!several && !one_line_ok)
        return false;
    for (size_t i = 0; i < body;) {
        int32_t cp = utf8_next((const unsigned char *)s, body, &i);
        if (cp < 0 || (cp != '\t' && cp != '\n' && !raw_ok(cp)))
            return false;
    }
    /* a line of blanks only would be read as an empty line of less indentation */
    for (size_t i = 0; i < body;) {
        size_t e = i;
        while (e < body && s[e] != '\n')
            e++;
        bool blank = e > i;
        for (size_t k = i; k < e; k++)
            blank &= s[k] == ' ' || s[k] == '\t';
        if (blank)
            return false;
        i = e + 1;
    }
    return true;
}

static void pad(sbuf *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb_addc(out, ' ');
}

/* header ("|" or ">", chomping) then each line at indentation ind (empty lines left empty) */
static void put_block_scalar(sbuf *out, char indicator, const char *s, size_t n, size_t ind, const emit_style *st)
{
    bool keep_break = n && s[n - 1] == '\n';
    size_t body = keep_break ? n - 1 : n;
    sb_addc(out, indicator);
    if (!keep_break)
        sb_addc(out, '-');
    for (size_t i = 0; i <= body;) {
        size_t e = i;
        while (e < body && s[e] != '\n')
            e++;
        sb_adds(out, st->eol);
        if (e > i) {
            pad(out, ind);
            sb_addn(out, s + i, e - i);
        }
        i = e + 1;
    }
}

/* ------------------------------------------------------------------ scalars */

static bool put_float(sbuf *out, double d, herr *err)
{
    if (isnan(d)) {
        sb_adds(out, ".nan");
        return true;
    }
    if (isinf(d)) {
        sb_adds(out, d > 0 ? ".inf" : "-.inf");
        return true;
    }
    char buf[64];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    /* Psych reads a float only with a '.' (and an exponent with its sign: %g gives it) */
    char text[80];
    char *e = strchr(buf, 'e');
    if (!strchr(buf, '.')) {
        if (e)
            snprintf(text, sizeof text, "%.*s.0%s", (int)(e - buf), buf, e);
        else
            snprintf(text, sizeof text, "%s.0", buf);
    } else {
        snprintf(text, sizeof text, "%s", buf);
    }
    herr pe = {0};
    hv *back = yaml_plain_scalar(text, strlen(text), &pe);
    herr_clear(&pe);
    bool ok = back && hv_is(back, HV_FLOAT) && hv_float_val(back) == d;
    hv_decref(back);
    if (!ok) {
        herr_set(err, HERR_ERROR, "the float %s cannot be written so that YAML reads it back", text);
        return false;
    }
    sb_adds(out, text);
    return true;
}

/* A scalar that is not a string, as Psych reads it back: true, 8443, 1.5, ~, :sym. */
static bool put_plain_scalar(sbuf *out, const hv *v, herr *err)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(out, "~"); return true;
    case HV_BOOL: sb_adds(out, hv_bool_val(v) ? "true" : "false"); return true;
    case HV_INT: sb_addf(out, "%lld", (long long)hv_int_val(v)); return true;
    case HV_BIGINT: sb_adds(out, hv_bigint_digits(v)); return true;
    case HV_FLOAT: return put_float(out, hv_float_val(v), err);
    case HV_SYMBOL: {
        char *t = xjoin(":", hv_str_ptr(v), NULL);
        herr pe = {0};
        hv *back = yaml_plain_scalar(t, strlen(t), &pe);
        herr_clear(&pe);
        bool ok = back && hv_is(back, HV_SYMBOL) && !strcmp(hv_str_ptr(back), hv_str_ptr(v)) && single_ok(t, strlen(t));
        hv_decref(back);
        if (ok)
            sb_adds(out, t);
        else
            herr_set(err, HERR_ERROR, "the symbol :%s cannot be written as YAML", hv_str_ptr(v));
        free(t);
        return ok;
    }
    case HV_SENSITIVE:
        herr_set(err, HERR_ERROR, "a Sensitive value cannot be written to a data file (encrypt it: --encrypt)");
        return false;
    default:
        herr_set(err, HERR_ERROR, "a %s cannot be written as a YAML scalar", hv_kind_name(hv_kind_of(v)));
        return false;
    }
}

/* A string in one line (plain, single or double quotes), as a key or inside a flow collection. */
static bool put_line_string(sbuf *out, const char *s, size_t n, emit_scalar_style style, bool flow, herr *err)
{
    if ((style == EMIT_ANY || style == EMIT_PLAIN) && plain_ok(s, n, flow)) {
        sb_addn(out, s, n);
        return true;
    }
    if (style != EMIT_DOUBLE && single_ok(s, n)) {
        put_single(out, s, n);
        return true;
    }
    return put_double(out, s, n, err);
}

bool emit_key(sbuf *out, const hv *key, herr *err)
{
    if (!hv_is(key, HV_STRING))
        return put_plain_scalar(out, key, err);
    const char *s = hv_str_ptr(key);
    size_t n = hv_str_len(key);
    if (!is_utf8(s, n)) {
        herr_set(err, HERR_ERROR, "the key holds bytes that are not UTF-8 text: YAML cannot hold it");
        return false;
    }
    /* a simple key is at most 1024 characters; "<<" is the merge key */
    size_t before = out->len;
    bool ok = (n == 2 && !memcmp(s, "<<", 2)) ? (put_single(out, s, n), true) : put_line_string(out, s, n, EMIT_ANY, false, err);
    if (ok && out->len - before > 1024) {
        out->len = before;
        out->s[before] = 0;
        herr_set(err, HERR_ERROR, "a key longer than 1024 characters cannot be written as a YAML key");
        return false;
    }
    return ok;
}

/* ------------------------------------------------------------------ collections */

bool emit_is_inline(const hv *v, bool flow)
{
    if (hv_is(v, HV_HASH))
        return flow || hv_hash_len(v) == 0;
    if (hv_is(v, HV_ARRAY))
        return flow || hv_array_len(v) == 0;
    return true;
}

static bool put_flow(sbuf *out, const hv *v, herr *err)
{
    if (hv_is(v, HV_ARRAY)) {
        sb_addc(out, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_adds(out, ", ");
            if (!put_flow(out, hv_array_get(v, i), err))
                return false;
        }
        sb_addc(out, ']');
        return true;
    }
    if (hv_is(v, HV_HASH)) {
        sb_addc(out, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_adds(out, ", ");
            const hv *k = hv_hash_key_at(v, i);
            if (hv_is(k, HV_STRING)) {
                if (hv_str_len(k) == 2 && !memcmp(hv_str_ptr(k), "<<", 2))
                    put_single(out, "<<", 2);
                else if (!put_line_string(out, hv_str_ptr(k), hv_str_len(k), EMIT_ANY, true, err))
                    return false;
            } else if (!put_plain_scalar(out, k, err)) {
                return false;
            }
            sb_adds(out, ": ");
            if (!put_flow(out, hv_hash_val_at(v, i), err))
                return false;
        }
        sb_addc(out, '}');
        return true;
    }
    if (hv_is(v, HV_STRING))
        return put_line_string(out, hv_str_ptr(v), hv_str_len(v), EMIT_ANY, true, err);
    return put_plain_scalar(out, v, err);
}

/* A string after "key:" or "-" (the text starts with its blank): in the style asked for when the
 * value allows it, else the next one that does. ind: the indentation of a block scalar's lines. */
static bool put_string_after(sbuf *out, const char *s, size_t n, size_t ind, const emit_style *st,
                             emit_scalar_style style, herr *err)
{
    if (!is_utf8(s, n)) {
        herr_set(err, HERR_ERROR, "the value holds bytes that are not UTF-8 text: YAML cannot hold it");
        return false;
    }
    bool several = memchr(s, '\n', n ? n - 1 : 0) != NULL;
    sb_addc(out, ' ');
    if (st->no_block && (style == EMIT_LITERAL || style == EMIT_FOLDED))
        style = several ? EMIT_DOUBLE : EMIT_ANY;
    if (st->no_block && several)
        return put_double(out, s, n, err);
    if (style == EMIT_FOLDED && !several) {
        /* one line folds to itself (no leading blank: that would be a more-indented line) */
        if (literal_ok(s, n, true)) {
            put_block_scalar(out, '>', s, n, ind, st);
            return true;
        }
        style = EMIT_LITERAL;
    }
    if ((style == EMIT_LITERAL || style == EMIT_FOLDED || ((style == EMIT_ANY || style == EMIT_PLAIN) && several)) &&
        literal_ok(s, n, style == EMIT_LITERAL)) {
        put_block_scalar(out, '|', s, n, ind, st);
        return true;
    }
    if (style == EMIT_LITERAL || style == EMIT_FOLDED)
        style = several ? EMIT_DOUBLE : EMIT_ANY;
    if (several || memchr(s, '\n', n))
        return put_double(out, s, n, err);
    return put_line_string(out, s, n, style, false, err);
}

/* what follows "-" for an item at indentation ind */
static bool after_dash(sbuf *out, const hv *v, size_t ind, const emit_style *st, herr *err)
{
    if ((hv_is(v, HV_HASH) && hv_hash_len(v)) || (hv_is(v, HV_ARRAY) && hv_array_len(v))) {
        sb_addc(out, ' ');
        return emit_block(out, v, ind + 2, st, false, err);
    }
    if (hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY)) {
        sb_addc(out, ' ');
        return put_flow(out, v, err);
    }
    if (hv_is(v, HV_STRING))
        return put_string_after(out, hv_str_ptr(v), hv_str_len(v), ind + 2, st, EMIT_ANY, err);
    sb_addc(out, ' ');
    return put_plain_scalar(out, v, err);
}

bool emit_after_key(sbuf *out, const hv *v, size_t ind, const emit_style *st, emit_scalar_style style, bool flow,
                    herr *err)
{
    if (hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY)) {
        if (emit_is_inline(v, flow)) {
            sb_addc(out, ' ');
            return put_flow(out, v, err);
        }
        sb_adds(out, st->eol);
        return emit_block(out, v, ind + (hv_is(v, HV_HASH) ? st->step : st->seq_indent), st, true, err);
    }
    if (hv_is(v, HV_STRING))
        return put_string_after(out, hv_str_ptr(v), hv_str_len(v), ind + st->step, st, flow ? EMIT_ANY : style, err);
    sb_addc(out, ' ');
    return put_plain_scalar(out, v, err);
}

bool emit_block(sbuf *out, const hv *v, size_t ind, const emit_style *st, bool first_indented, herr *err)
{
    if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_adds(out, st->eol);
            if (i || first_indented)
                pad(out, ind);
            if (!emit_key(out, hv_hash_key_at(v, i), err))
                return false;
            sb_addc(out, ':');
            if (!emit_after_key(out, hv_hash_val_at(v, i), ind, st, EMIT_ANY, false, err))
                return false;
        }
        return true;
    }
    for (size_t i = 0; i < hv_array_len(v); i++) {
        if (i)
            sb_adds(out, st->eol);
        if (i || first_indented)
            pad(out, ind);
        sb_addc(out, '-');
        if (!after_dash(out, hv_array_get(v, i), ind, st, err))
            return false;
    }
    return true;
}
