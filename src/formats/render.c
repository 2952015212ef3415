/* render.c - the text forms of values, byte for byte as Ruby/Puppet 7.23 print them:
 *   - render_json: `puppet lookup --render-as json`, i.e. Ruby's json 2.6 ext generator (to_json);
 *   - render_yaml: `--render-as yaml`, i.e. Psych 4's YAMLTree visitor driving libyaml's emitter
 *     (we drive the same libyaml emitter with the same events and scalar styles);
 *   - render_s / ruby_to_s / ruby_inspect / ruby_float_to_s: Ruby 3.1's to_s and inspect;
 *   - render_explain_value: the lookup explainer's dump_value.
 * Strings are assumed to be UTF-8 (Ruby with a UTF-8 locale). */
#include "formats/render.h"
#include "base/rregex.h"
#include "base/rubyver.h"

#include <limits.h>
#include <math.h>
#include <oniguruma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h> /* libyaml */

/* Deepest nesting rendered. Ruby has no fixed limit for inspect/to_yaml (it would end in
 * SystemStackError); we stop well before our own stack could overflow. */
#define RENDER_MAX_DEPTH 1000
/* Ruby's JSON generator: State#max_nesting defaults to 100. */
#define JSON_MAX_NESTING 100

#define SENSITIVE_TEXT "Sensitive [value redacted]"
#define SENSITIVE_TAG "!ruby/object:Puppet::Pops::Types::PSensitiveType::Sensitive"

/* ------------------------------------------------------------------------------------------ */
/* UTF-8                                                                                       */

/* Decodes one character at s[0..n) as Ruby's UTF-8 encoding does (no overlong forms, no
 * surrogates, nothing above U+10FFFF). Returns its length in bytes, or 0 when invalid. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_char(p + i, n - i, &cp);
        if (!l)
            return false;
        i += l;
    }
    return true;
}

/* Number of characters of a valid UTF-8 string (Ruby's String#length). */
static size_t utf8_length(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            count++;
    return count;
}

/* Characters first assigned in Unicode 14.0: Oniguruma 6.9.8 knows them, Ruby 3.1's Onigmo
 * (Unicode 13.0) does not, so Ruby's inspect escapes them as unassigned. */
static const uint32_t unicode14_new[][2] = {
    {0x61D, 0x61D}, {0x870, 0x88E}, {0x890, 0x891}, {0x898, 0x89F}, {0x8B5, 0x8B5}, {0x8C8, 0x8D2},
    {0xC3C, 0xC3C}, {0xC5D, 0xC5D}, {0xCDD, 0xCDD}, {0x170D, 0x170D}, {0x1715, 0x1715},
    {0x171F, 0x171F}, {0x180F, 0x180F}, {0x1AC1, 0x1ACE}, {0x1B4C, 0x1B4C}, {0x1B7D, 0x1B7E},
    {0x1DFA, 0x1DFA}, {0x20C0, 0x20C0}, {0x2C2F, 0x2C2F}, {0x2C5F, 0x2C5F}, {0x2E53, 0x2E5D},
    {0x9FFD, 0x9FFF}, {0xA7C0, 0xA7C1}, {0xA7D0, 0xA7D1}, {0xA7D3, 0xA7D3}, {0xA7D5, 0xA7D9},
    {0xA7F2, 0xA7F4}, {0xFBC2, 0xFBC2}, {0xFD40, 0xFD4F}, {0xFDCF, 0xFDCF}, {0xFDFE, 0xFDFF},
    {0x10570, 0x1057A}, {0x1057C, 0x1058A}, {0x1058C, 0x10592}, {0x10594, 0x10595},
    {0x10597, 0x105A1}, {0x105A3, 0x105B1}, {0x105B3, 0x105B9}, {0x105BB, 0x105BC},
    {0x10780, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x10F70, 0x10F89},
    {0x11070, 0x11075}, {0x110C2, 0x110C2}, {0x116B9, 0x116B9}, {0x11740, 0x11746},
    {0x11AB0, 0x11ABF}, {0x12F90, 0x12FF2}, {0x16A70, 0x16ABE}, {0x16AC0, 0x16AC9},
    {0x1AFF0, 0x1AFF3}, {0x1AFF5, 0x1AFFB}, {0x1AFFD, 0x1AFFE}, {0x1B11F, 0x1B122},
    {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46}, {0x1CF50, 0x1CFC3}, {0x1D1E9, 0x1D1EA},
    {0x1DF00, 0x1DF1E}, {0x1E290, 0x1E2AE}, {0x1E7E0, 0x1E7E6}, {0x1E7E8, 0x1E7EB},
    {0x1E7ED, 0x1E7EE}, {0x1E7F0, 0x1E7FE}, {0x1F6DD, 0x1F6DF}, {0x1F7F0, 0x1F7F0},
    {0x1F979, 0x1F979}, {0x1F9CC, 0x1F9CC}, {0x1FA7B, 0x1FA7C}, {0x1FAA9, 0x1FAAC},
    {0x1FAB7, 0x1FABA}, {0x1FAC3, 0x1FAC5}, {0x1FAD7, 0x1FAD9}, {0x1FAE0, 0x1FAE7},
    {0x1FAF0, 0x1FAF6}, {0x2A6DE, 0x2A6DF}, {0x2B735, 0x2B738},
};

static bool unassigned_in_ruby(uint32_t c)
{
    size_t lo = 0, hi = sizeof unicode14_new / sizeof unicode14_new[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < unicode14_new[mid][0])
            hi = mid;
        else if (c > unicode14_new[mid][1])
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Ruby's rb_enc_isprint for UTF-8 (Onigmo's Print class, from Oniguruma's tables as of 13.0). */
static bool code_printable(uint32_t c)
{
    if (c < 0x80)
        return c >= 0x20 && c < 0x7F;
    if (unassigned_in_ruby(c))
        return false;
    if (!rregex_init()) /* Oniguruma's tables (the hiera command loads it on first use) */
        return true;    /* (it cannot: the thread is marked, the public call fails) */
    return ONIGENC_IS_CODE_PRINT(ONIG_ENCODING_UTF8, (OnigCodePoint)c) != 0;
}

/* For matching Ruby's Unicode classes ([[:alpha:]], [[:word:]]) with Oniguruma: a copy of the
 * valid UTF-8 string s where each character Ruby 3.1 does not know yet is replaced by U+0378
 * (unassigned in both), or NULL when there is none. Characters keep their count. */
static char *ruby_unicode_view(const char *s, size_t n, size_t *outn)
{
    const unsigned char *p = (const unsigned char *)s;
    sbuf b = {0};
    bool changed = false;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = utf8_char(p + i, n - i, &c);
        if (!l)
            l = 1;
        if (l > 1 && unassigned_in_ruby(c)) {
            sb_adds(&b, "\xCD\xB8");
            changed = true;
        } else {
            sb_addn(&b, s + i, l);
        }
        i += l;
    }
    if (!changed) {
        sb_free(&b);
        return NULL;
    }
    *outn = b.len;
    return sb_take(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* Float#to_s                                                                                  */

/* Shortest decimal digits that read back as d (d finite and > 0), like Ruby's dtoa mode 0:
 * fills dig (no trailing zeros) and returns their count; *decpt is the decimal point position
 * (d = 0.DIGITS * 10^decpt). */
static int shortest_digits_of(double d, char dig[32], int *decpt)
{
    char buf[64];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, d);
        /* buf is "D.DDDDe[+-]XX": mantissa digits as an integer m, value = m * 10^q */
        char *e = strchr(buf, 'e');
        if (!e)
            break;
        int exp10 = atoi(e + 1);
        uint64_t m = 0;
        for (char *c = buf; c < e; c++)
            if (*c >= '0' && *c <= '9')
                m = m * 10 + (uint64_t)(*c - '0');
        int q = exp10 - (p - 1);
        /* the correctly rounded p digits first; at a power of two the neighbour above can be the
         * shortest one that reads back (the gap below is half the gap above) */
        uint64_t cands[3] = {m, m + 1, m > 0 ? m - 1 : m};
        for (int k = 0; k < 3; k++) {
            char t[64];
            snprintf(t, sizeof t, "%llue%d", (unsigned long long)cands[k], q);
            if (strtod(t, NULL) != d)
                continue;
            int n = snprintf(dig, 32, "%llu", (unsigned long long)cands[k]);
            *decpt = n + q;
            while (n > 1 && dig[n - 1] == '0')
                dig[--n] = 0;
            return n;
        }
    }
    /* not reached for finite doubles: 17 digits always read back */
    int n = snprintf(dig, 32, "%.0f", d);
    *decpt = n;
    return n;
}

/* shortest_digits_of, remembered: the search costs some 30,000 instructions (up to 17 precisions,
 * each printed and read back), and a batch renders the same few values of its data files again
 * for node after node whenever the table of rendered answers has lost them (a fleet run rendered
 * 425 floats, 14 M instructions, 1% of the run). A small table per thread, by the double's bits. */
#define FLOAT_MEMO_BITS 6
static int shortest_digits(double d, char dig[32], int *decpt)
{
    static _Thread_local struct {
        uint64_t bits;
        int n, decpt; /* n 0: an empty slot */
        char dig[32];
    } memo[1u << FLOAT_MEMO_BITS];
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    size_t i = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> (64 - FLOAT_MEMO_BITS));
    if (memo[i].n && memo[i].bits == bits) {
        memcpy(dig, memo[i].dig, 32);
        *decpt = memo[i].decpt;
        return memo[i].n;
    }
    int n = shortest_digits_of(d, dig, decpt);
    if (n > 0 && n < 32) {
        memo[i].bits = bits;
        memo[i].n = n;
        memo[i].decpt = *decpt;
        memcpy(memo[i].dig, dig, 32);
    }
    return n;
}

void ruby_float_to_s(sbuf *out, double d)
{
    if (isnan(d)) {
        sb_adds(out, "NaN");
        return;
    }
    if (isinf(d)) {
        sb_adds(out, d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (signbit(d))
        sb_addc(out, '-');
    d = fabs(d);
    if (d == 0) {
        sb_adds(out, "0.0");
        return;
    }
    char dig[32];
    int decpt, n = shortest_digits(d, dig, &decpt);
    /* Ruby's flo_to_s: plain notation for 1e-4 <= |d| < 1e15, and up to 1e16 when there are
     * digits after the point (1e15 is "1.0e+15" but 3301126940684084.5 stays), else d.ddde+XX */
    if (decpt > 0 && (decpt < 16 || (decpt == 16 && n > decpt))) {
        if (n <= decpt) {
            sb_addn(out, dig, (size_t)n);
            for (int i = n; i < decpt; i++)
                sb_addc(out, '0');
            sb_adds(out, ".0");
        } else {
            sb_addn(out, dig, (size_t)decpt);
            sb_addc(out, '.');
            sb_addn(out, dig + decpt, (size_t)(n - decpt));
        }
    } else if (decpt <= 0 && decpt > -4) {
        sb_adds(out, "0.");
        for (int i = 0; i < -decpt; i++)
            sb_addc(out, '0');
        sb_addn(out, dig, (size_t)n);
    } else {
        sb_addc(out, dig[0]);
        sb_addc(out, '.');
        if (n > 1)
            sb_addn(out, dig + 1, (size_t)(n - 1));
        else
            sb_addc(out, '0');
        sb_addf(out, "e%+03d", decpt - 1);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* inspect / to_s                                                                              */

/* Ruby 3.1 String#inspect for a UTF-8 string (rb_str_inspect with a UTF-8 result encoding).
 * `us_ascii`: the string is US-ASCII encoded (as Ruby encodes an all-ASCII Symbol's name), so
 * unprintable characters come out as \xHH instead of \uHHHH. */
static void inspect_string_enc(sbuf *out, const char *s, size_t n, bool us_ascii)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_addc(out, '"');
    for (size_t i = 0; i < n;) {
        uint32_t c;
        size_t l = utf8_char(p + i, n - i, &c);
        if (!l) { /* each byte of a broken sequence on its own */
            sb_addf(out, "\\x%02X", p[i]);
            i++;
            continue;
        }
        size_t next = i + l;
        const char *esc = NULL;
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\f': esc = "\\f"; break;
        case '\v': esc = "\\v"; break;
        case '\b': esc = "\\b"; break;
        case '\a': esc = "\\a"; break;
        case 033: esc = "\\e"; break;
        case '#': /* "#{", "#$" and "#@" would interpolate: Ruby escapes the '#' */
            if (next < n && (p[next] == '{' || p[next] == '$' || p[next] == '@'))
                esc = "\\#";
            break;
        default: break;
        }
        if (esc)
            sb_adds(out, esc);
        else if (code_printable(c))
            sb_addn(out, s + i, l);
        else if (us_ascii)
            sb_addf(out, "\\x%02X", (unsigned)c);
        else if (c < 0x10000)
            sb_addf(out, "\\u%04X", (unsigned)c);
        else
            sb_addf(out, "\\u{%X}", (unsigned)c);
        i = next;
    }
    sb_addc(out, '"');
}

static void inspect_string(sbuf *out, const char *s, size_t n)
{
    inspect_string_enc(out, s, n, false);
}

void ruby_inspect_string(sbuf *out, const char *s, size_t n) { inspect_string(out, s, n); }

static bool ident_char(unsigned char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

/* Ruby's is_special_global_name: what may follow '$' in a plain symbol ($~, $1, $-w, ...). */
static bool special_global(const unsigned char *m, const unsigned char *e)
{
    if (m >= e)
        return false;
    if (*m && strchr("~*$?!@/\\;,.=:<>\"&`'+0", *m)) {
        m++;
    } else if (*m == '-') {
        if (++m >= e)
            return false;
        if (ident_char(*m)) {
            uint32_t cp;
            size_t l = utf8_char(m, (size_t)(e - m), &cp);
            m += l ? l : 1;
        }
    } else {
        if (!(*m >= '0' && *m <= '9'))
            return false;
        while (m < e && *m >= '0' && *m <= '9')
            m++;
    }
    return m == e;
}

enum { SYM_BAD, SYM_OP, SYM_LOCAL, SYM_GLOBAL, SYM_IVAR, SYM_CVAR, SYM_JUNK, SYM_ATTRSET };

enum { SYM_FALLBACK = -1 };

/* Ruby's rb_enc_symname_type (with the attrset rules used by Symbol#inspect), except that where
 * Ruby recurses on the name without its final '=' this returns SYM_FALLBACK. */
static int symname_type_step(const unsigned char *s, size_t len)
{
    const unsigned char *m = s, *e = s + len;
    int type = SYM_OP;
    if (len == 0)
        return SYM_BAD;
    switch (*m) {
    case '$':
        type = SYM_GLOBAL;
        if (special_global(++m, e))
            return type;
        goto id;
    case '@':
        type = SYM_IVAR;
        if (++m < e && *m == '@') {
            ++m;
            type = SYM_CVAR;
        }
        goto id;
    case '<':
        ++m;
        if (m < e && *m == '<')
            ++m;
        else if (m < e && *m == '=') {
            ++m;
            if (m < e && *m == '>')
                ++m;
        }
        break;
    case '>':
        ++m;
        if (m < e && (*m == '>' || *m == '='))
            ++m;
        break;
    case '=':
        ++m;
        if (m < e && *m == '~')
            ++m;
        else if (m < e && *m == '=') {
            ++m;
            if (m < e && *m == '=')
                ++m;
        } else
            return SYM_BAD;
        break;
    case '*':
        ++m;
        if (m < e && *m == '*')
            ++m;
        break;
    case '+': case '-':
        ++m;
        if (m < e && *m == '@')
            ++m;
        break;
    case '|': case '^': case '&': case '/': case '%': case '~': case '`':
        ++m;
        break;
    case '[':
        if (len < 2 || m[1] != ']')
            goto id;
        m += 2;
        if (m < e && *m == '=')
            ++m;
        break;
    case '!':
        if (len == 1)
            return SYM_JUNK;
        ++m;
        if (*m == '=' || *m == '~')
            ++m;
        else
            return SYM_BAD;
        break;
    default:
        type = SYM_LOCAL;
        goto id;
    }
    return m == e ? type : SYM_BAD;
id:
    if (m >= e || (*m != '_' && *m < 0x80 && !((*m >= 'a' && *m <= 'z') || (*m >= 'A' && *m <= 'Z')))) {
        if (len > 1 && s[len - 1] == '=')
            return SYM_FALLBACK;
        return SYM_BAD;
    }
    while (m < e && ident_char(*m)) {
        uint32_t cp;
        size_t l = *m < 0x80 ? 1 : utf8_char(m, (size_t)(e - m), &cp);
        if (!l)
            return SYM_BAD;
        m += l;
    }
    if (m < e) {
        if (*m == '!' || *m == '?') {
            if (type == SYM_GLOBAL || type == SYM_CVAR || type == SYM_IVAR)
                return SYM_BAD;
            type = SYM_JUNK;
            ++m;
        } else if (*m == '=') {
            if (type != SYM_LOCAL)
                return SYM_BAD;
            type = SYM_ATTRSET;
            ++m;
        }
    }
    return m == e ? type : SYM_BAD;
}

/* Whether a symbol prints bare (:name, :+, :@iv, :$0, :a=, :b?) rather than quoted
 * (:"odd sym"). Ruby quirk: when the name does not start like an identifier, whatever precedes
 * a final '=' (even an invalid name: :"1a=" prints as :1a=, :" =" as : =) makes an attribute
 * writer, unless it is one already; Ruby recurses, we loop. */
static int symname_type(const unsigned char *s, size_t len)
{
    size_t dropped = 0;
    int t;
    while ((t = symname_type_step(s, len - dropped)) == SYM_FALLBACK)
        dropped++;
    while (dropped--)
        t = t != SYM_ATTRSET ? SYM_ATTRSET : SYM_BAD;
    return t;
}

/* Symbol#inspect: bare when the name is a plain method/variable/operator name and printable. */
static void inspect_symbol(sbuf *out, const char *name, size_t len)
{
    bool bare = symname_type((const unsigned char *)name, len) != SYM_BAD;
    if (bare) {
        const unsigned char *p = (const unsigned char *)name;
        for (size_t i = 0; i < len && bare;) {
            uint32_t c;
            size_t l = utf8_char(p + i, len - i, &c);
            if (!l || !code_printable(c))
                bare = false;
            i += l ? l : 1;
        }
    }
    bool ascii = true;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] >= 0x80)
            ascii = false;
    sb_addc(out, ':');
    if (bare)
        sb_addn(out, name, len);
    else
        inspect_string_enc(out, name, len, ascii);
}

static void int_to_s(sbuf *out, const hv *v)
{
    if (hv_kind_of(v) == HV_BIGINT)
        sb_adds(out, hv_bigint_digits(v));
    else {
        /* what "%lld" prints, without printf (integers are most of what is rendered) */
        int64_t i = hv_int_val(v);
        uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        char buf[24];
        size_t n = sizeof buf;
        do {
            buf[--n] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (i < 0)
            buf[--n] = '-';
        sb_addn(out, buf + n, sizeof buf - n);
    }
}

static void inspect_rec(sbuf *out, const hv *v, int depth)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(out, "nil"); break;
    case HV_BOOL: sb_adds(out, hv_bool_val(v) ? "true" : "false"); break;
    case HV_INT:
    case HV_BIGINT: int_to_s(out, v); break;
    case HV_FLOAT: ruby_float_to_s(out, hv_float_val(v)); break;
    case HV_STRING: inspect_string(out, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SYMBOL: inspect_symbol(out, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SENSITIVE: sb_adds(out, "#<" SENSITIVE_TEXT ">"); break; /* Sensitive#inspect */
    case HV_ARRAY:
        if (depth >= RENDER_MAX_DEPTH) { /* Ruby prints recursion this way */
            sb_adds(out, "[...]");
            break;
        }
        sb_addc(out, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_adds(out, ", ");
            inspect_rec(out, hv_array_get(v, i), depth + 1);
        }
        sb_addc(out, ']');
        break;
    case HV_HASH:
        if (depth >= RENDER_MAX_DEPTH) {
            sb_adds(out, "{...}");
            break;
        }
        sb_addc(out, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_adds(out, ", ");
            inspect_rec(out, hv_hash_key_at(v, i), depth + 1);
            sb_adds(out, "=>"); /* Ruby 3.1 style, no spaces */
            inspect_rec(out, hv_hash_val_at(v, i), depth + 1);
        }
        sb_addc(out, '}');
        break;
    }
}

void ruby_inspect(sbuf *out, const hv *v)
{
    if (!v) {
        sb_adds(out, "nil");
        return;
    }
    inspect_rec(out, v, 0);
}

void ruby_to_s(sbuf *out, const hv *v)
{
    switch (v ? hv_kind_of(v) : HV_UNDEF) {
    case HV_UNDEF: break; /* nil.to_s is "" */
    case HV_STRING:
    case HV_SYMBOL: sb_addn(out, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SENSITIVE: sb_adds(out, SENSITIVE_TEXT); break; /* Sensitive#to_s */
    default: inspect_rec(out, v, 0); break;                  /* Array/Hash#to_s is inspect */
    }
}

const char *ruby_class_name(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: return "NilClass";
    case HV_BOOL: return hv_bool_val(v) ? "TrueClass" : "FalseClass";
    case HV_INT:
    case HV_BIGINT: return "Integer";
    case HV_FLOAT: return "Float";
    case HV_STRING: return "String";
    case HV_ARRAY: return "Array";
    case HV_HASH: return "Hash";
    case HV_SENSITIVE: return "Puppet::Pops::Types::PSensitiveType::Sensitive";
    case HV_SYMBOL: return "Symbol";
    }
    return "Object";
}

const char *ruby_conversion_name(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: return "nil";
    case HV_BOOL: return hv_bool_val(v) ? "true" : "false";
    default: return ruby_class_name(v);
    }
}

int render_s(sbuf *out, const hv *v, herr *err)
{
    ruby_to_s(out, v);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* explain                                                                                     */

static void add_spaces(sbuf *out, int n)
{
    for (int i = 0; i < n; i++)
        sb_addc(out, ' ');
}

/* Puppet's ExplainTreeNode#dump_value: hashes and arrays one entry a line, two more spaces per
 * level, everything else as inspect. */
static void explain_rec(sbuf *out, const hv *v, int indent, int depth)
{
    hv_kind k = hv_kind_of(v);
    if ((k != HV_HASH && k != HV_ARRAY) || depth >= RENDER_MAX_DEPTH) {
        inspect_rec(out, v, depth);
        return;
    }
    bool hash = k == HV_HASH;
    size_t n = hash ? hv_hash_len(v) : hv_array_len(v);
    sb_addc(out, hash ? '{' : '[');
    if (n) {
        for (size_t i = 0; i < n; i++) {
            sb_adds(out, i ? ",\n" : "\n");
            add_spaces(out, indent + 2);
            if (hash) {
                explain_rec(out, hv_hash_key_at(v, i), indent + 2, depth + 1);
                sb_adds(out, " => ");
                explain_rec(out, hv_hash_val_at(v, i), indent + 2, depth + 1);
            } else {
                explain_rec(out, hv_array_get(v, i), indent + 2, depth + 1);
            }
        }
        sb_addc(out, '\n');
        add_spaces(out, indent);
    }
    sb_addc(out, hash ? '}' : ']');
}

void render_explain_value(sbuf *out, const hv *v, int indent)
{
    if (!v) {
        sb_adds(out, "nil");
        return;
    }
    explain_rec(out, v, indent < 0 ? 0 : indent, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* JSON (json 2.6 ext generator, default State: compact, no NaN, max_nesting 100)              */

/* json's trailingBytesForUTF8 table, by lead byte. */
static int json_trailing(unsigned char c)
{
    if (c < 0xC0)
        return 0;
    if (c < 0xE0)
        return 1;
    if (c < 0xF0)
        return 2;
    if (c < 0xF8)
        return 3;
    if (c < 0xFC)
        return 4;
    return 5;
}

/* Whether the clen bytes at p pass json 2.6's isLegalUTF8 check. Quirk kept: after an ED or F4
 * lead the second byte only has an upper bound, so "\xED\x00\x80" passes (and is copied raw). */
static bool json_legal_utf8(const unsigned char *p, size_t clen)
{
    if (clen > 4 || (p[0] >= 0x80 && p[0] < 0xC2) || p[0] > 0xF4)
        return false;
    for (size_t i = 2; i < clen; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return false;
    if (clen < 2)
        return true;
    unsigned char lo = 0x80, hi = 0xBF, b = p[1];
    switch (p[0]) {
    case 0xE0: lo = 0xA0; break;
    case 0xED: lo = 0x00, hi = 0x9F; break;
    case 0xF0: lo = 0x90; break;
    case 0xF4: lo = 0x00, hi = 0x8F; break;
    default: break;
    }
    return b >= lo && b <= hi;
}

/* Bytes that a JSON string takes as they are: printable ASCII but '"' and '\\'. */
#define T true
#define F false
#define P16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
static const bool json_plain[256] = {
    P16(F), P16(F),
    T, T, F, T, T, T, T, T, T, T, T, T, T, T, T, T, /* 0x22 '"' */
    P16(T), P16(T),
    T, T, T, T, T, T, T, T, T, T, T, T, F, T, T, T, /* 0x5c '\\' */
    P16(T), P16(T),
    P16(F), P16(F), P16(F), P16(F), P16(F), P16(F), P16(F), P16(F),
};
#undef P16
#undef T
#undef F

/* Whether the eight bytes at p are all json_plain: ASCII, none below 0x20, no '"' or '\\' (the
 * classic tests for a byte below n and for a zero byte, on the word and its xors). */
static inline bool json_plain_word(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t bad = w | ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
    return (bad & highs) == 0;
}

/* json's convert_UTF8_to_JSON: escapes '"', '\\' and control characters (\b \f \n \r \t by name,
 * others as lowercase \u00xx); "/", DEL and all non-ASCII are copied; broken UTF-8 raises. */
static int json_string(sbuf *out, const char *s, size_t n, herr *err)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_addc(out, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x20) {
            switch (c) {
            case '\n': sb_adds(out, "\\n"); break;
            case '\r': sb_adds(out, "\\r"); break;
            case '\t': sb_adds(out, "\\t"); break;
            case '\f': sb_adds(out, "\\f"); break;
            case '\b': sb_adds(out, "\\b"); break;
            default: sb_addf(out, "\\u%04x", c); break;
            }
            i++;
        } else if (c == '"' || c == '\\') {
            sb_addc(out, '\\');
            sb_addc(out, (char)c);
            i++;
        } else if (json_plain[c]) {
            /* a run of plain bytes is copied at once (the whole of the usual string), found
             * eight bytes at a time while they are all plain */
            size_t j = i + 1;
            while (j + 8 <= n && json_plain_word(p + j))
                j += 8;
            while (j < n && json_plain[p[j]])
                j++;
            sb_addn(out, s + i, j - i);
            i = j;
        } else {
            size_t clen = 1 + (size_t)json_trailing(c);
            if (i + clen > n) {
                herr_set(err, HERR_ERROR, "partial character in source, but hit end");
                return -1;
            }
            if (!json_legal_utf8(p + i, clen)) {
                herr_set(err, HERR_ERROR, "source sequence is illegal/malformed utf-8");
                return -1;
            }
            sb_addn(out, s + i, clen);
            i += clen;
        }
    }
    sb_addc(out, '"');
    return 0;
}

/* ---- the JSON text of stable containers, remembered (render.h json_memo) ---- */

static int json_container(sbuf *out, const hv *v, int depth, json_memo *jm, herr *err);

typedef struct {
    hv *v;       /* a reference: the address stays this value's while the entry lives */
    char *text;
    size_t len;
    int depth;   /* the depth it was rendered at: deeper, the nesting limit may be met */
} jm_slot;

struct json_memo {
    jm_slot *slots;
    size_t cap, n, bytes;
};

#define JM_MAX_BYTES ((size_t)32 << 20)

json_memo *json_memo_new(void) { return xcalloc(1, sizeof(json_memo)); }

void json_memo_free(json_memo *jm)
{
    if (!jm)
        return;
    for (size_t i = 0; i < jm->cap; i++) {
        hv_decref(jm->slots[i].v);
        free(jm->slots[i].text);
    }
    free(jm->slots);
    free(jm);
}

static size_t jm_index(const json_memo *jm, const hv *v)
{
    return (size_t)(((uint64_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (jm->cap - 1);
}

static jm_slot *jm_find(const json_memo *jm, const hv *v)
{
    if (!jm->cap)
        return NULL;
    for (size_t i = jm_index(jm, v);; i = (i + 1) & (jm->cap - 1)) {
        jm_slot *s = &jm->slots[i];
        if (!s->v || s->v == v)
            return s;
    }
}

static void jm_put(json_memo *jm, const hv *v, const char *text, size_t len, int depth)
{
    if (jm->bytes + len > JM_MAX_BYTES)
        return; /* (full: rendered each time from then on) */
    if (2 * (jm->n + 1) > jm->cap) {
        size_t ncap = jm->cap ? 2 * jm->cap : 1024;
        jm_slot *old = jm->slots;
        size_t ocap = jm->cap;
        jm->slots = xcalloc(ncap, sizeof *jm->slots);
        jm->cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].v)
                *jm_find(jm, old[i].v) = old[i];
        free(old);
    }
    jm_slot *s = jm_find(jm, v);
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    *s = (jm_slot){hv_incref((hv *)v), copy, len, depth};
    jm->n++;
    jm->bytes += len;
}

/* A stable container's text: remembered, or rendered and remembered. */
static int json_remembered(sbuf *out, const hv *v, int depth, json_memo *jm, herr *err)
{
    jm_slot *s = jm_find(jm, v);
    bool known = s && s->v == v;
    if (known && depth <= s->depth) {
        sb_addn(out, s->text, s->len);
        return 0;
    }
    /* (s is not used past this point: the containers inside may grow the table) */
    size_t at = out->len;
    int r = json_container(out, v, depth, jm, err);
    if (r == 0 && !known)
        jm_put(jm, v, out->s + at, out->len - at, depth);
    return r;
}

static int json_rec(sbuf *out, const hv *v, int depth, json_memo *jm, herr *err)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(out, "null"); return 0;
    case HV_BOOL: sb_adds(out, hv_bool_val(v) ? "true" : "false"); return 0;
    case HV_INT:
    case HV_BIGINT: int_to_s(out, v); return 0;
    case HV_FLOAT: {
        double d = hv_float_val(v);
        /* the numbers are the generator.c source lines Ruby's json 2.6.1 puts in the message */
        if (isinf(d)) {
            herr_set(err, HERR_ERROR, "%s%s not allowed in JSON", rubyver() == RUBY_33 ? "" : "1000: ",
                     d > 0 ? "Infinity" : "-Infinity");
            return -1;
        }
        if (isnan(d)) {
            herr_set(err, HERR_ERROR, "%sNaN not allowed in JSON", rubyver() == RUBY_33 ? "" : "1003: ");
            return -1;
        }
        ruby_float_to_s(out, d);
        return 0;
    }
    case HV_STRING:
    case HV_SYMBOL: /* Symbol#to_json is to_s.to_json */
        return json_string(out, hv_str_ptr(v), hv_str_len(v), err);
    case HV_SENSITIVE: /* no to_json of its own: Object#to_json is to_s.to_json */
        sb_adds(out, "\"" SENSITIVE_TEXT "\"");
        return 0;
    case HV_ARRAY:
    case HV_HASH:
        break;
    }
    if (depth + 1 > JSON_MAX_NESTING) {
        herr_set(err, HERR_ERROR, "nesting of %d is too deep", depth);
        return -1;
    }
    if (jm && hv_is_stable(v))
        return json_remembered(out, v, depth, jm, err);
    return json_container(out, v, depth, jm, err);
}

static int json_container(sbuf *out, const hv *v, int depth, json_memo *jm, herr *err)
{
    if (hv_kind_of(v) == HV_ARRAY) {
        sb_addc(out, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(out, ',');
            if (json_rec(out, hv_array_get(v, i), depth + 1, jm, err))
                return -1;
        }
        sb_addc(out, ']');
        return 0;
    }
    sb_addc(out, '{');
    for (size_t i = 0; i < hv_hash_len(v); i++) {
        if (i)
            sb_addc(out, ',');
        /* keys: strings as they are, anything else through to_s (1 -> "1", nil -> "") */
        const hv *k = hv_hash_key_at(v, i);
        int r;
        if (hv_is(k, HV_STRING) || hv_is(k, HV_SYMBOL)) {
            r = json_string(out, hv_str_ptr(k), hv_str_len(k), err);
        } else {
            sbuf ks = {0};
            ruby_to_s(&ks, k);
            r = json_string(out, sb_str(&ks), ks.len, err);
            sb_free(&ks);
        }
        if (r)
            return -1;
        sb_addc(out, ':');
        if (json_rec(out, hv_hash_val_at(v, i), depth + 1, jm, err))
            return -1;
    }
    sb_addc(out, '}');
    return 0;
}

int render_json(sbuf *out, const hv *v, herr *err) { return render_json_memo(out, v, NULL, err); }

int render_json_memo(sbuf *out, const hv *v, json_memo *jm, herr *err)
{
    /* written in place; on an error, out is cut back to what it held */
    size_t at = out->len;
    int r = v ? json_rec(out, v, 0, jm, err) : (sb_adds(out, "null"), 0);
    if (r != 0 && out->s) {
        out->len = at;
        out->s[at] = 0;
    }
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* YAML: Psych's YAMLTree choices, emitted by libyaml                                          */

/* The regular expressions of Psych's visit_String and ScalarScanner#tokenize, in Ruby syntax
 * (so ^ and $ are line anchors, [[:alpha:]] and [[:word:]] are Unicode, \d and \s ASCII). */
enum {
    RE_LITERAL, RE_DQUOTE, RE_OCTAL89, RE_WORDISH, RE_NOT_YTONF, RE_NULL, RE_TRUE, RE_FALSE,
    RE_TIME, RE_DATE, RE_PINF, RE_NINF, RE_NAN, RE_SYMBOL, RE_SEXA_INT, RE_SEXA_FLOAT, RE_FLOAT,
    RE_DOT_ONLY, RE_INTEGER, RE_COUNT
};

static const struct {
    const char *pattern;
    bool icase;
} psych_res[RE_COUNT] = {
    [RE_LITERAL] = {"\\n(?!\\Z)", false},
    [RE_DQUOTE] = {"^[^[:word:]][^\"]*$", false},
    [RE_OCTAL89] = {"\\A0[0-7]*[89]", false},
    [RE_WORDISH] = {"^[^\\d.:-]?[[:alpha:]_\\s!@#$%\\^&*(){}<>|/\\\\~;=]+", false},
    [RE_NOT_YTONF] = {"^[^ytonf~]", true},
    [RE_NULL] = {"^null$", true},
    [RE_TRUE] = {"^(yes|true|on)$", true},
    [RE_FALSE] = {"^(no|false|off)$", true},
    [RE_TIME] = {"^-?\\d{4}-\\d{1,2}-\\d{1,2}(?:[Tt]|\\s+)\\d{1,2}:\\d\\d:\\d\\d(?:\\.\\d*)?"
                 "(?:\\s*(?:Z|[-+]\\d{1,2}:?(?:\\d\\d)?))?$", false},
    [RE_DATE] = {"^\\d{4}-(?:1[012]|0\\d|\\d)-(?:[12]\\d|3[01]|0\\d|\\d)$", false},
    [RE_PINF] = {"^\\+?\\.inf$", true},
    [RE_NINF] = {"^-\\.inf$", true},
    [RE_NAN] = {"^\\.nan$", true},
    [RE_SYMBOL] = {"^:.", false},
    [RE_SEXA_INT] = {"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}$", false},
    [RE_SEXA_FLOAT] = {"^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}\\.[0-9_]*$", false},
    [RE_FLOAT] = {"^(?:[-+]?([0-9][0-9_,]*)?\\.[0-9]*([eE][-+][0-9]+)?)$", false},
    [RE_DOT_ONLY] = {"\\A[-+]?\\.\\Z", false},
    [RE_INTEGER] = {"^(?:[-+]?0b[0-1_,]+|[-+]?0[0-7_,]+|[-+]?(?:0|[1-9](?:[0-9]|,[0-9]|_[0-9])*)"
                    "|[-+]?0x[0-9a-fA-F_,]+)$", false},
};

/* Shared containers for render_yaml_shared: Psych gives an object that appears twice an anchor
 * numbered in the order its first repeat is met, and emits later appearances as aliases. */
typedef struct {
    const hv **keys;
    int *ids;        /* 0: seen once; >0: anchor number */
    bool *emitted;
    size_t cap, n;
    int counter;
} ptrmap;

typedef struct {
    yaml_emitter_t em;
    sbuf *out;
    herr *err;
    OnigRegex re[RE_COUNT];
    bool re_failed;
    ptrmap *shared; /* NULL: no anchors (values that merely share storage print twice) */
} yctx;

static size_t ptrmap_slot(const ptrmap *m, const hv *p)
{
    size_t h = ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL;
    size_t i = h & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != p)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void ptrmap_grow(ptrmap *m)
{
    ptrmap old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->ids = xcalloc(m->cap, sizeof *m->ids);
    m->emitted = xcalloc(m->cap, sizeof *m->emitted);
    m->n = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) {
            size_t j = ptrmap_slot(m, old.keys[i]);
            m->keys[j] = old.keys[i];
            m->ids[j] = old.ids[i];
            m->n++;
        }
    free(old.keys);
    free(old.ids);
    free(old.emitted);
}

static void ptrmap_count(ptrmap *m, const hv *v, int depth)
{
    hv_kind k = hv_kind_of(v);
    if (depth > RENDER_MAX_DEPTH || !(k == HV_ARRAY || k == HV_HASH || k == HV_SENSITIVE))
        return;
    if ((m->n + 1) * 2 > m->cap)
        ptrmap_grow(m);
    size_t i = ptrmap_slot(m, v);
    if (m->keys[i]) {
        if (!m->ids[i])
            m->ids[i] = ++m->counter;
        return;
    }
    m->keys[i] = v;
    m->n++;
    if (k == HV_ARRAY)
        for (size_t j = 0; j < hv_array_len(v); j++)
            ptrmap_count(m, hv_array_get(v, j), depth + 1);
    else if (k == HV_HASH)
        for (size_t j = 0; j < hv_hash_len(v); j++) {
            ptrmap_count(m, hv_hash_key_at(v, j), depth + 1);
            ptrmap_count(m, hv_hash_val_at(v, j), depth + 1);
        }
    else
        ptrmap_count(m, hv_sensitive_inner(v), depth + 1);
}

/* Whether Psych's pattern `which` matches s; patterns are compiled when first needed. */
static bool re_match(yctx *y, int which, const char *s, size_t n)
{
    if (!y->re[which]) {
        if (!rregex_ready(y->err)) { /* Oniguruma, once per process */
            y->re_failed = true;
            return false;
        }
        OnigErrorInfo einfo;
        const char *pat = psych_res[which].pattern;
        OnigOptionType opt = ONIG_OPTION_DIGIT_IS_ASCII | ONIG_OPTION_SPACE_IS_ASCII |
                             (psych_res[which].icase ? ONIG_OPTION_IGNORECASE : 0);
        if (onig_new(&y->re[which], (const OnigUChar *)pat, (const OnigUChar *)pat + strlen(pat), opt,
                     ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &einfo) != ONIG_NORMAL) {
            y->re[which] = NULL;
            y->re_failed = true;
            herr_set(y->err, HERR_ERROR, "internal error: cannot compile a YAML quoting pattern");
            return false;
        }
    }
    const OnigUChar *b = (const OnigUChar *)s, *e = b + n;
    return onig_search(y->re[which], b, e, b, e, NULL, ONIG_OPTION_NONE) >= 0;
}

/* Proleptic calendars as Ruby's Date uses them with Date::ITALY: Julian before 1582-10-15. */
static bool date_valid(long y, int m, int d)
{
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return false;
    bool julian = y < 1582 || (y == 1582 && (m < 10 || (m == 10 && d < 15)));
    if (y == 1582 && m == 10 && d > 4 && d < 15)
        return false; /* the days dropped by the Gregorian reform */
    bool leap = julian ? y % 4 == 0 : (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
    int max = mdays[m - 1] + (m == 2 && leap);
    return d <= max;
}

/* Reads decimal digits (at most 9 are kept significant); *p moves past them. */
static long read_num(const char **p, const char *e)
{
    long v = 0;
    int count = 0;
    while (*p < e && **p >= '0' && **p <= '9') {
        if (count++ < 9)
            v = v * 10 + (**p - '0');
        (*p)++;
    }
    return v;
}

/* The NoMethodError messages (with Ruby 3.1's error_highlight snippet) Psych's parse_time raises
 * when a time's date and time are separated only by whitespace other than ' '. */
#define PSYCH_TIME_NIL_MSG                                                                           \
    "undefined method `match' for nil:NilClass\n\n"                                                  \
    "      md = time.match(/(\\d+:\\d+:\\d+)(?:\\.(\\d*))?\\s*(Z|[-+]\\d+(:\\d\\d)?)?/)\n"           \
    "               ^^^^^^"
#define PSYCH_MD_NIL_MSG                                                                             \
    "undefined method `[]' for nil:NilClass\n\n"                                                     \
    "      (hh, mm, ss) = md[1].split(':').map { |x| x.to_i }\n"                                     \
    "                       ^^^"

/* Psych's ScalarScanner#parse_time on a string that matched its TIME pattern: 1 when it yields
 * a Time, 0 when Time raises ArgumentError (tokenize then keeps the string), -1 on the
 * NoMethodError parse_time hits when its split on /[ tT]/ goes wrong. */
static int psych_time_valid(const char *s, size_t n, herr *err)
{
    const char *e = s + n, *p = s;
    /* date, time = *(string.split(/[ tT]/, 2)) */
    const char *sep = NULL;
    for (const char *q = s; q < e; q++)
        if (*q == ' ' || *q == 't' || *q == 'T') {
            sep = q;
            break;
        }
    if (!sep) {
        herr_set(err, HERR_ERROR, "%s", PSYCH_TIME_NIL_MSG);
        return -1;
    }
    /* the date: /^(-?\d{4})-(\d{1,2})-(\d{1,2})/ */
    if (p < e && *p == '-')
        p++;
    read_num(&p, e); /* the year: any is fine */
    p++;
    int mon = (int)read_num(&p, e);
    p++;
    int mday = (int)read_num(&p, e);
    /* the time: the first /(\d+:\d+:\d+)(?:\.(\d*))?\s*(Z|[-+]\d+(:\d\d)?)?/ after the split */
    const char *t = sep + 1, *hms = NULL;
    for (const char *q = t; q < e && !hms; q++) {
        const char *r = q;
        int groups = 0;
        while (groups < 3) {
            const char *st = r;
            while (r < e && *r >= '0' && *r <= '9')
                r++;
            if (r == st)
                break;
            groups++;
            if (groups < 3) {
                if (r < e && *r == ':')
                    r++;
                else
                    break;
            }
        }
        if (groups == 3)
            hms = q;
    }
    if (!hms) {
        herr_set(err, HERR_ERROR, "%s", PSYCH_MD_NIL_MSG);
        return -1;
    }
    p = hms;
    long hh = read_num(&p, e);
    p++;
    long mm = read_num(&p, e);
    p++;
    long ss = read_num(&p, e);
    /* Time.utc's checks */
    if (mon < 1 || mon > 12 || mday < 1 || mday > 31 || hh > 24 || mm > 59 || ss > 60)
        return 0;
    if (hh == 24 && (mm != 0 || ss != 0))
        return 0;
    /* fraction, then \s* and the zone */
    if (p < e && *p == '.') {
        p++;
        read_num(&p, e);
    }
    while (p < e && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
        p++;
    if (p >= e || *p == 'Z')
        return 1;
    /* zone "[-+]\d+(:\d\d)?" read back by /^([+\-]?\d{1,2})\:?(\d{1,2})?$/ */
    char zsign = *p++;
    const char *zd = p;
    while (p < e && *p >= '0' && *p <= '9')
        p++;
    size_t zdl = (size_t)(p - zd);
    long zh, zm = 0;
    if (p < e && *p == ':') { /* "+H:MM" or "+HH:MM" */
        const char *q = zd;
        zh = read_num(&q, zd + zdl);
        q = p + 1;
        zm = read_num(&q, e);
    } else { /* "+H", "+HH", "+HHM", "+HHMM": the hours are the first one or two digits */
        size_t hl = zdl < 2 ? zdl : 2;
        const char *q = zd;
        zh = read_num(&q, zd + hl);
        q = zd + hl;
        zm = read_num(&q, zd + zdl);
    }
    long offset = zh * 3600;
    if (zsign == '-')
        offset = -offset;
    /* Psych subtracts the minutes only when the hours are negative ("-00:30" is +00:30) */
    offset += offset < 0 ? -zm * 60 : zm * 60;
    return offset > -86400 && offset < 86400 ? 1 : 0;
}

/* Integer(string.delete(',_')) on a string matching Psych's INTEGER pattern: fails only when
 * nothing is left after a 0b/0x prefix. */
static int psych_int_valid(const char *s, size_t n, herr *err)
{
    sbuf clean = {0};
    for (size_t i = 0; i < n; i++)
        if (s[i] != ',' && s[i] != '_')
            sb_addc(&clean, s[i]);
    const char *c = sb_str(&clean);
    if (*c == '-' || *c == '+')
        c++;
    int r = 1;
    if (c[0] == '0' && (c[1] == 'b' || c[1] == 'x') && c[2] == 0) {
        sbuf msg = {0};
        inspect_string(&msg, sb_str(&clean), clean.len);
        herr_set(err, HERR_ERROR, "invalid value for Integer(): %s", sb_str(&msg));
        sb_free(&msg);
        r = -1;
    }
    sb_free(&clean);
    return r;
}

/* Float(string.delete(',_').gsub(/\.([Ee]|$)/, '\1')) on a string matching Psych's FLOAT
 * pattern: fails when no mantissa digit is left. */
static int psych_float_valid(const char *s, size_t n, herr *err)
{
    sbuf clean = {0};
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ',' || s[i] == '_')
            continue;
        if (s[i] == '.') {
            size_t j = i + 1;
            while (j < n && (s[j] == ',' || s[j] == '_'))
                j++;
            if (j >= n || s[j] == 'e' || s[j] == 'E')
                continue;
        }
        sb_addc(&clean, s[i]);
    }
    bool digit = false;
    for (size_t i = 0; i < clean.len && clean.s[i] != 'e' && clean.s[i] != 'E'; i++)
        if (clean.s[i] >= '0' && clean.s[i] <= '9')
            digit = true;
    int r = 1;
    if (!digit) {
        sbuf msg = {0};
        inspect_string(&msg, sb_str(&clean), clean.len);
        herr_set(err, HERR_ERROR, "invalid value for Float(): %s", sb_str(&msg));
        sb_free(&msg);
        r = -1;
    }
    sb_free(&clean);
    return r;
}

/* Psych's ScalarScanner#tokenize, reduced to what YAMLTree asks of it: 0 when the string would
 * read back as a String, 1 when as something else (nil, boolean, number, time, date, symbol),
 * -1 with err set when tokenize raises. */
static int psych_tokenize_other(yctx *y, const char *s, size_t n)
{
    if (n == 0)
        return 1;
    if (re_match(y, RE_WORDISH, s, n) || memchr(s, '\n', n)) {
        if (utf8_length(s, n) > 5)
            return 0;
        if (re_match(y, RE_NOT_YTONF, s, n))
            return 0;
        if ((n == 1 && s[0] == '~') || re_match(y, RE_NULL, s, n))
            return 1;
        if (re_match(y, RE_TRUE, s, n) || re_match(y, RE_FALSE, s, n))
            return 1;
        return 0;
    }
    if (re_match(y, RE_TIME, s, n))
        return psych_time_valid(s, n, y->err);
    if (re_match(y, RE_DATE, s, n)) {
        const char *p = s, *e = s + n;
        long yy = read_num(&p, e);
        p++;
        int m = (int)read_num(&p, e);
        p++;
        int d = (int)read_num(&p, e);
        return date_valid(yy, m, d) ? 1 : 0;
    }
    if (re_match(y, RE_PINF, s, n) || re_match(y, RE_NINF, s, n) || re_match(y, RE_NAN, s, n))
        return 1;
    if (re_match(y, RE_SYMBOL, s, n))
        return 1;
    if (re_match(y, RE_SEXA_INT, s, n) || re_match(y, RE_SEXA_FLOAT, s, n))
        return 1;
    if (re_match(y, RE_FLOAT, s, n))
        return re_match(y, RE_DOT_ONLY, s, n) ? 0 : psych_float_valid(s, n, y->err);
    if (re_match(y, RE_INTEGER, s, n))
        return psych_int_valid(s, n, y->err);
    return 0;
}

static int y_emit(yctx *y, yaml_event_t *ev, int ok)
{
    if (!ok) {
        herr_set(y->err, HERR_ERROR, "YAML emitter error: invalid event");
        return -1;
    }
    if (!yaml_emitter_emit(&y->em, ev)) {
        herr_set(y->err, HERR_ERROR, "%s", y->em.problem ? y->em.problem : "YAML emitter error");
        return -1;
    }
    return 0;
}

static int y_scalar(yctx *y, const char *tag, const char *s, size_t n, int plain, int quoted,
                    yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (n > INT_MAX) {
        herr_set(y->err, HERR_ERROR, "string too long for YAML");
        return -1;
    }
    int ok = yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)tag, (yaml_char_t *)s, (int)n,
                                          plain, quoted, style);
    if (!ok) { /* libyaml checks the text is UTF-8 */
        herr_set(y->err, HERR_ERROR, "invalid byte sequence in UTF-8");
        return -1;
    }
    return y_emit(y, &ev, 1);
}

/* Psych's visit_String choice of scalar style for the valid UTF-8 string s: sets *style, and
 * *merge_key for "<<" (which Psych tags as a plain str). -1 when tokenize raises. */
static int psych_string_style(yctx *y, const char *s, size_t n, yaml_scalar_style_t *style, bool *merge_key)
{
    *style = YAML_PLAIN_SCALAR_STYLE;
    *merge_key = false;
    if (re_match(y, RE_LITERAL, s, n)) {
        *style = YAML_LITERAL_SCALAR_STYLE;
    } else if (n == 2 && memcmp(s, "<<", 2) == 0) {
        *style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
        *merge_key = true;
    } else if (n == 1 && (s[0] == 'y' || s[0] == 'n')) {
        *style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    } else if (re_match(y, RE_DQUOTE, s, n)) {
        *style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    } else {
        int other = psych_tokenize_other(y, s, n);
        if (other < 0)
            return -1;
        if (other || re_match(y, RE_OCTAL89, s, n))
            *style = YAML_SINGLE_QUOTED_SCALAR_STYLE;
    }
    return 0;
}

/* A string: Psych picks the style, then libyaml may still overrule it (a plain scalar that is
 * not allowed becomes quoted, etc.) exactly as it does under Psych. */
static int y_string(yctx *y, const char *s, size_t n)
{
    if (!utf8_valid(s, n)) { /* Ruby's regexp match on the broken string raises */
        herr_set(y->err, HERR_ERROR, "invalid byte sequence in UTF-8");
        return -1;
    }
    size_t vn = 0;
    char *view = ruby_unicode_view(s, n, &vn);
    yaml_scalar_style_t style;
    bool merge_key;
    int r = psych_string_style(y, view ? view : s, view ? vn : n, &style, &merge_key);
    free(view);
    if (r || y->re_failed)
        return -1;
    if (merge_key)
        return y_scalar(y, "tag:yaml.org,2002:str", s, n, 0, 0, style);
    return y_scalar(y, NULL, s, n, 1, 1, style);
}

static int y_node(yctx *y, const hv *v, int depth);

static int y_mapping_start(yctx *y, const char *anchor, const char *tag, int implicit)
{
    yaml_event_t ev;
    int ok = yaml_mapping_start_event_initialize(&ev, (yaml_char_t *)anchor, (yaml_char_t *)tag, implicit,
                                                 YAML_BLOCK_MAPPING_STYLE);
    return y_emit(y, &ev, ok);
}

static int y_end(yctx *y, bool mapping)
{
    yaml_event_t ev;
    int ok = mapping ? yaml_mapping_end_event_initialize(&ev) : yaml_sequence_end_event_initialize(&ev);
    return y_emit(y, &ev, ok);
}

static int y_container(yctx *y, const hv *v, int depth)
{
    if (depth >= RENDER_MAX_DEPTH) {
        herr_set(y->err, HERR_ERROR, "stack level too deep");
        return -1;
    }
    char anchor_buf[24];
    const char *anchor = NULL;
    if (y->shared && y->shared->cap) {
        size_t slot = ptrmap_slot(y->shared, v);
        if (y->shared->keys[slot] == v && y->shared->ids[slot]) {
            snprintf(anchor_buf, sizeof anchor_buf, "%d", y->shared->ids[slot]);
            if (y->shared->emitted[slot]) {
                yaml_event_t ev;
                return y_emit(y, &ev, yaml_alias_event_initialize(&ev, (yaml_char_t *)anchor_buf));
            }
            y->shared->emitted[slot] = true;
            anchor = anchor_buf;
        }
    }
    if (hv_kind_of(v) == HV_ARRAY) {
        yaml_event_t ev;
        if (y_emit(y, &ev, yaml_sequence_start_event_initialize(&ev, (yaml_char_t *)anchor, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE)))
            return -1;
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (y_node(y, hv_array_get(v, i), depth + 1))
                return -1;
        return y_end(y, false);
    }
    if (hv_kind_of(v) == HV_SENSITIVE) {
        /* Psych's visit_Object: a tagged mapping of the instance variables, so YAML shows the
         * sensitive value in clear (a Puppet quirk, reproduced) */
        if (y_mapping_start(y, anchor, SENSITIVE_TAG, 0) || y_scalar(y, NULL, "value", 5, 1, 0, YAML_ANY_SCALAR_STYLE) ||
            y_node(y, hv_sensitive_inner(v), depth + 1))
            return -1;
        return y_end(y, true);
    }
    if (y_mapping_start(y, anchor, NULL, 1))
        return -1;
    for (size_t i = 0; i < hv_hash_len(v); i++)
        if (y_node(y, hv_hash_key_at(v, i), depth + 1) || y_node(y, hv_hash_val_at(v, i), depth + 1))
            return -1;
    return y_end(y, true);
}

static int y_node(yctx *y, const hv *v, int depth)
{
    sbuf t = {0};
    int r;
    switch (v ? hv_kind_of(v) : HV_UNDEF) {
    case HV_UNDEF:
        return y_scalar(y, "tag:yaml.org,2002:null", "", 0, 1, 0, YAML_ANY_SCALAR_STYLE);
    case HV_BOOL:
        return y_scalar(y, NULL, hv_bool_val(v) ? "true" : "false", hv_bool_val(v) ? 4 : 5, 1, 0,
                        YAML_ANY_SCALAR_STYLE);
    case HV_INT:
    case HV_BIGINT:
    case HV_FLOAT:
        if (hv_kind_of(v) != HV_FLOAT)
            int_to_s(&t, v);
        else if (isnan(hv_float_val(v)))
            sb_adds(&t, ".nan");
        else if (isinf(hv_float_val(v)))
            sb_adds(&t, hv_float_val(v) > 0 ? ".inf" : "-.inf");
        else
            ruby_float_to_s(&t, hv_float_val(v));
        r = y_scalar(y, NULL, sb_str(&t), t.len, 1, 0, YAML_ANY_SCALAR_STYLE);
        sb_free(&t);
        return r;
    case HV_STRING:
        return y_string(y, hv_str_ptr(v), hv_str_len(v));
    case HV_SYMBOL: /* Psych's visit_Symbol: ":name", or an empty !ruby/symbol */
        if (hv_str_len(v) == 0)
            return y_scalar(y, "!ruby/symbol", "", 0, 0, 0, YAML_ANY_SCALAR_STYLE);
        sb_addc(&t, ':');
        sb_addn(&t, hv_str_ptr(v), hv_str_len(v));
        r = y_scalar(y, NULL, sb_str(&t), t.len, 1, 0, YAML_ANY_SCALAR_STYLE);
        sb_free(&t);
        return r;
    case HV_ARRAY:
    case HV_HASH:
    case HV_SENSITIVE:
        return y_container(y, v, depth);
    }
    return 0;
}

static int y_write(void *data, unsigned char *buffer, size_t size)
{
    sb_addn((sbuf *)data, (const char *)buffer, size);
    return 1;
}

static int render_yaml_impl(sbuf *out, const hv *v, herr *err, ptrmap *shared);

int render_yaml(sbuf *out, const hv *v, herr *err) { return render_yaml_impl(out, v, err, NULL); }

int render_yaml_shared(sbuf *out, const hv *v, herr *err)
{
    ptrmap m = {0};
    ptrmap_grow(&m);
    ptrmap_count(&m, v, 0);
    int r = render_yaml_impl(out, v, err, &m);
    free(m.keys);
    free(m.ids);
    free(m.emitted);
    return r;
}

static int render_yaml_impl(sbuf *out, const hv *v, herr *err, ptrmap *shared)
{
    yctx y;
    memset(&y, 0, sizeof y);
    y.shared = shared;
    sbuf tmp = {0};
    y.out = &tmp;
    y.err = err;
    if (!yaml_emitter_initialize(&y.em)) {
        herr_set(err, HERR_ERROR, "cannot initialise the YAML emitter");
        return -1;
    }
    /* Psych's emitter: UTF-8 output with unicode characters kept, indentation 2, width 80 */
    yaml_emitter_set_output(&y.em, y_write, &tmp);
    yaml_emitter_set_unicode(&y.em, 1);
    yaml_emitter_set_indent(&y.em, 2);
    yaml_event_t ev;
    int r = y_emit(&y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    if (!r)
        r = y_emit(&y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
    if (!r)
        r = y_node(&y, v, 0);
    if (!r)
        r = y_emit(&y, &ev, yaml_document_end_event_initialize(&ev, 1));
    if (!r)
        r = y_emit(&y, &ev, yaml_stream_end_event_initialize(&ev));
    if (!r && !yaml_emitter_flush(&y.em)) {
        herr_set(err, HERR_ERROR, "%s", y.em.problem ? y.em.problem : "YAML emitter error");
        r = -1;
    }
    yaml_emitter_delete(&y.em);
    for (int i = 0; i < RE_COUNT; i++)
        if (y.re[i])
            onig_free(y.re[i]);
    if (!r)
        sb_addn(out, sb_str(&tmp), tmp.len);
    sb_free(&tmp);
    return r;
}
