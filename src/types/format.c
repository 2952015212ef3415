/* format.c - Puppet's printed forms: types as TypeFormatter writes them (ptype_to_s), and values
 * as String.new / StringConverter formats them (puppet_string, and the single format strings
 * new() accepts). */
#include "types/types_int.h"
#include "formats/render.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

/* ======================================================================================
 * Printing types (TypeFormatter#string)
 * ====================================================================================== */

/* Puppet's double-quoted form of a string (StringConverter#puppet_double_quote). */
static void puppet_double_quote(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = pt_utf8_next(s + i, n - i, &cp);
        switch (cp) {
        case '\t': sb_adds(b, "\\t"); break;
        case '\n': sb_adds(b, "\\n"); break;
        case '\r': sb_adds(b, "\\r"); break;
        case '"': sb_adds(b, "\\\""); break;
        case '$': sb_adds(b, "\\$"); break;
        case '\\': sb_adds(b, "\\\\"); break;
        default:
            if (cp < 0x20)
                sb_addf(b, "\\u{%X}", (unsigned)cp);
            else
                sb_addn(b, s + i, len);
        }
        i += len;
    }
    sb_addc(b, '"');
}

/* Puppet's quoted form of a string (StringConverter#puppet_quote): single quotes unless a control
 * character forces double quotes; a backslash escapes the next character. */
static void puppet_quote(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20) {
            puppet_double_quote(b, s, n);
            return;
        }
    sb_addc(b, '\'');
    bool escaped = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (escaped) {
            sb_addc(b, '\\');
            sb_addc(b, c);
            escaped = false;
        } else if (c == '\'') {
            sb_adds(b, "\\'");
        } else if (c == '\\') {
            escaped = true;
        } else {
            sb_addc(b, c);
        }
    }
    if (escaped)
        sb_addc(b, '\\');
    sb_addc(b, '\'');
}

/* Ruby's Regexp#inspect of a regexp with no options: /source/ with unescaped slashes escaped and
 * non-printing ASCII shown as \xHH. */
static void regexp_inspect(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '/');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' && i + 1 < n) {
            sb_addc(b, '\\');
            sb_addc(b, s[++i]);
        } else if (c == '/') {
            sb_adds(b, "\\/");
        } else if ((c < 0x20 && !isspace(c)) || c == 0x7f) {
            sb_addf(b, "\\x%02X", c);
        } else {
            sb_addc(b, (char)c);
        }
    }
    sb_addc(b, '/');
}

static void tfx(sbuf *b, const ptype *t, bool x);

/* range_array_part: [] when unbounded, otherwise [from|'default'] + [to] when bounded. */
static void tf_range(sbuf *b, const ptype *r, bool continued)
{
    if (!r || is_unbounded(r))
        return;
    if (n_is_neginf(r->from))
        sb_adds(b, "default");
    else
        pt_n_to_s(b, r->from);
    if (!n_is_posinf(r->to)) {
        sb_adds(b, ", ");
        pt_n_to_s(b, r->to);
    }
    if (continued)
        sb_adds(b, ", ");
}

static void chomp_list(sbuf *b)
{
    if (b->len >= 2 && b->s[b->len - 2] == ',' && b->s[b->len - 1] == ' ') {
        b->len -= 2;
        b->s[b->len] = 0;
    }
}

static void tf_list(sbuf *b, ptype *const *v, size_t n, bool x)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_adds(b, ", ");
        tfx(b, v[i], x);
    }
}

static void tf_regexp(sbuf *b, const ptype *re)
{
    regexp_inspect(b, re->s.p, re->s.n);
}

/* A contained type that is a String with a value is printed as its quoted value. */
static void tf_maybe_value(sbuf *b, const ptype *t, bool x)
{
    if (is_k(t, K_STRING) && t->has_s)
        puppet_quote(b, t->s.p, t->s.n);
    else
        tfx(b, t, x);
}

static void tf_struct(sbuf *b, const ptype *t, bool x)
{
    sb_adds(b, "Struct");
    if (t->n == 0)
        return;
    sb_adds(b, "[{");
    for (size_t i = 0; i < st_count(t); i++) {
        const ptype *k = st_key(t, i), *v = st_val(t, i);
        bool value_optional = pt_accepts_undef(v);
        pstr name = st_name(t, i);
        if (i)
            sb_adds(b, ", ");
        /* struct_element_pair: an optional key is written as a plain name when the value accepts
         * undef anyway; a required key as NotUndef[name] when the value accepts undef. */
        if (is_k(k, K_OPTIONAL)) {
            if (value_optional)
                puppet_quote(b, name.p, name.n);
            else
                tfx(b, k, x);
        } else if (value_optional) {
            sb_adds(b, "NotUndef[");
            tf_maybe_value(b, k, x);
            sb_addc(b, ']');
        } else {
            puppet_quote(b, name.p, name.n);
        }
        sb_adds(b, " => ");
        tfx(b, v, x);
    }
    sb_adds(b, "}]");
}

static void tf_callable_params(sbuf *b, const ptype *t, bool x)
{
    const ptype *pt = t->t;
    for (size_t i = 0; i < pt->n; i++) { /* Unit parameters are left out */
        if (is_k(pt->v[i], K_UNIT))
            continue;
        tfx(b, pt->v[i], x);
        sb_adds(b, ", ");
    }
    if (pt->n == 0)
        sb_adds(b, "0, 0, ");
    else
        tf_range(b, pt->size, true);
    if (t->t2) {
        tfx(b, t->t2, x);
        sb_adds(b, ", ");
    }
    chomp_list(b);
}

static void tf_contained(sbuf *b, const char *name, const ptype *inner, bool x)
{
    sb_adds(b, name);
    if (inner) {
        sb_addc(b, '[');
        tfx(b, inner, x);
        sb_addc(b, ']');
    }
}

static void tfx(sbuf *b, const ptype *t, bool x)
{
    switch (t->k) {
    case K_INTEGER: case K_FLOAT:
        sb_adds(b, pt_simple_names[t->k]);
        if (!is_unbounded(t)) {
            sb_addc(b, '[');
            tf_range(b, t, false);
            sb_addc(b, ']');
        }
        break;
    case K_STRING: case K_COLLECTION:
        sb_adds(b, pt_simple_names[t->k]);
        if (t->size && !is_unbounded(t->size)) {
            sb_addc(b, '[');
            tf_range(b, t->size, false);
            sb_addc(b, ']');
        }
        break;
    case K_ENUM:
        sb_adds(b, "Enum");
        if (t->nvals) {
            sb_addc(b, '[');
            for (size_t i = 0; i < t->nvals; i++) {
                if (i)
                    sb_adds(b, ", ");
                puppet_quote(b, t->vals[i].p, t->vals[i].n);
            }
            if (t->flag)
                sb_adds(b, ", true");
            sb_addc(b, ']');
        }
        break;
    case K_PATTERN:
        sb_adds(b, "Pattern");
        if (t->n) {
            sb_addc(b, '[');
            for (size_t i = 0; i < t->n; i++) {
                if (i)
                    sb_adds(b, ", ");
                tf_regexp(b, t->v[i]);
            }
            sb_addc(b, ']');
        }
        break;
    case K_REGEXP:
        sb_adds(b, "Regexp");
        if (t->has_s) {
            sb_addc(b, '[');
            tf_regexp(b, t);
            sb_addc(b, ']');
        }
        break;
    case K_BOOLEAN:
        sb_adds(b, "Boolean");
        if (t->flag >= 0)
            sb_adds(b, t->flag ? "[true]" : "[false]");
        break;
    case K_VARIANT:
        sb_adds(b, "Variant");
        if (t->n) {
            sb_addc(b, '[');
            tf_list(b, t->v, t->n, x);
            sb_addc(b, ']');
        }
        break;
    case K_TUPLE:
        sb_adds(b, "Tuple");
        if (t->n) {
            sb_addc(b, '[');
            tf_list(b, t->v, t->n, x);
            sb_adds(b, ", ");
            tf_range(b, t->size, true);
            chomp_list(b);
            sb_addc(b, ']');
        }
        break;
    case K_STRUCT:
        tf_struct(b, t, x);
        break;
    case K_ARRAY:
        sb_adds(b, "Array");
        if (pt_size_is_zero(t->size)) {
            sb_adds(b, "[0, 0]");
        } else if (!(is_k(t->t, K_ANY) && !t->size)) {
            sb_addc(b, '[');
            tfx(b, t->t, x);
            sb_adds(b, ", ");
            tf_range(b, t->size, true);
            chomp_list(b);
            sb_addc(b, ']');
        }
        break;
    case K_HASH:
        sb_adds(b, "Hash");
        if (pt_size_is_zero(t->size)) {
            sb_adds(b, "[0, 0]");
        } else if (!(is_k(t->t, K_ANY) && is_k(t->t2, K_ANY) && !t->size)) {
            sb_addc(b, '[');
            tfx(b, t->t, x);
            sb_adds(b, ", ");
            tfx(b, t->t2, x);
            sb_adds(b, ", ");
            tf_range(b, t->size, true);
            chomp_list(b);
            sb_addc(b, ']');
        }
        break;
    case K_CALLABLE:
        sb_adds(b, "Callable");
        if (!t->t3) {
            if (t->t) {
                sb_addc(b, '[');
                tf_callable_params(b, t, x);
                sb_addc(b, ']');
            }
        } else if (!t->t) {
            sb_adds(b, "[[], ");
            tfx(b, t->t3, x);
            sb_addc(b, ']');
        } else {
            sb_adds(b, "[[");
            tf_callable_params(b, t, x);
            sb_adds(b, "], ");
            tfx(b, t->t3, x);
            sb_addc(b, ']');
        }
        break;
    case K_NOTUNDEF: case K_OPTIONAL:
        sb_adds(b, pt_simple_names[t->k]);
        if (t->t) {
            sb_addc(b, '[');
            tf_maybe_value(b, t->t, x);
            sb_addc(b, ']');
        }
        break;
    case K_SENSITIVE:
        tf_contained(b, "Sensitive", is_k(t->t, K_ANY) ? NULL : t->t, x);
        break;
    case K_TYPE: case K_ITERABLE: case K_ITERATOR: case K_INIT:
        tf_contained(b, pt_simple_names[t->k], t->t, x);
        break;
    case K_RUNTIME:
        sb_adds(b, "Runtime");
        if (t->has_rt || t->has_s) {
            sb_addc(b, '[');
            /* the runtime is a Symbol (printed bare), the name a String (quoted) */
            if (t->has_rt)
                sb_addn(b, t->rt.p, t->rt.n);
            else
                sb_adds(b, "undef");
            sb_adds(b, ", ");
            if (t->has_s)
                puppet_quote(b, t->s.p, t->s.n);
            else
                sb_adds(b, "undef");
            sb_addc(b, ']');
        }
        break;
    case K_TYPEREF:
        sb_adds(b, "TypeReference[");
        puppet_quote(b, t->s.p, t->s.n);
        sb_addc(b, ']');
        break;
    case K_ALIAS:
        sb_addn(b, t->s.p, t->s.n);
        /* the alias expanded form shows "Name = <type>" for aliases that are not built in */
        if (x && t->t && !t->flag) {
            sb_adds(b, " = ");
            tfx(b, t->t, x);
        }
        break;
    case K_CLASS:
        sb_adds(b, "Class");
        if (t->has_s) {
            sb_addc(b, '[');
            sb_addn(b, t->s.p, t->s.n);
            sb_addc(b, ']');
        }
        break;
    case K_RESOURCE:
        if (t->has_s)
            sb_addn(b, t->s.p, t->s.n);
        else
            sb_adds(b, "Resource");
        break;
    case K_OBJECT:
        sb_adds(b, "Object[{}]");
        break;
    case K_TYPESET:
        /* the default TypeSet prints its initialization hash */
        sb_adds(b, "TypeSet[{pcore_uri => 'http://puppet.com/2016.1/pcore', pcore_version => '1.0.0', "
                   "name_authority => 'http://puppet.com/2016.1/runtime', name => 'DefaultTypeSet', "
                   "version => '0.0.0'}]");
        break;
    default:
        sb_adds(b, pt_simple_names[t->k]);
        break;
    }
}

char *pt_to_s(const ptype *t)
{
    sbuf b = {0};
    tfx(&b, t, t->k == K_ALIAS); /* PTypeAliasType#to_s is the expanded form */
    return sb_take(&b);
}

/* to_alias_expanded_s */
char *pt_to_xs(const ptype *t)
{
    sbuf b = {0};
    tfx(&b, t, true);
    return sb_take(&b);
}

char *ptype_to_s(const ptype *t) { return pt_to_s(t); }

char *ptype_infer_to_s(const hv *v)
{
    ptype *t = pt_infer(v, 0);
    char *s = pt_to_s(t);
    pt_unref(t);
    return s;
}

/* ======================================================================================
 * String.new: StringConverter's default formats, and single format strings for scalars
 * ====================================================================================== */

/* Kernel.format('%f', d) */
static void ruby_format_f(sbuf *b, double d)
{
    if (isnan(d))
        sb_adds(b, "NaN");
    else if (isinf(d))
        sb_adds(b, d < 0 ? "-Inf" : "Inf");
    else
        sb_addf(b, "%f", d);
}

/* A value inside an array or hash: the %p format (quoted strings, undef, inspect forms). */
static void ps_element(sbuf *b, const hv *v, int depth);

static void ps_container(sbuf *b, const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH) {
        sb_adds(b, "...");
        return;
    }
    if (hv_is(v, HV_ARRAY)) {
        sb_addc(b, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_adds(b, ", ");
            ps_element(b, hv_array_get(v, i), depth + 1);
        }
        sb_addc(b, ']');
    } else {
        sb_addc(b, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_adds(b, ", ");
            ps_element(b, hv_hash_key_at(v, i), depth + 1);
            sb_adds(b, " => ");
            ps_element(b, hv_hash_val_at(v, i), depth + 1);
        }
        sb_addc(b, '}');
    }
}

static void ps_element(sbuf *b, const hv *v, int depth)
{
    switch (hv_kind_of(v)) {
    case HV_ARRAY: case HV_HASH: ps_container(b, v, depth); break;
    case HV_STRING: puppet_quote(b, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_INT: sb_addf(b, "%" PRId64, hv_int_val(v)); break;
    case HV_BIGINT: sb_adds(b, hv_bigint_digits(v)); break;
    case HV_FLOAT: ruby_float_to_s(b, hv_float_val(v)); break;
    case HV_BOOL: sb_adds(b, hv_bool_val(v) ? "true" : "false"); break;
    case HV_UNDEF: sb_adds(b, "undef"); break;
    case HV_SENSITIVE: sb_adds(b, "#<Sensitive [value redacted]>"); break;
    case HV_SYMBOL:
        if (v_is_default(v))
            sb_adds(b, "default");
        else if (v_is_undef(v))
            sb_adds(b, "undef");
        else
            puppet_quote(b, hv_str_ptr(v), hv_str_len(v)); /* a Runtime value: its to_s quoted */
        break;
    }
}

void puppet_string(sbuf *out, const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_STRING: sb_addn(out, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_INT: sb_addf(out, "%" PRId64, hv_int_val(v)); break;
    case HV_BIGINT: sb_adds(out, hv_bigint_digits(v)); break;
    case HV_FLOAT: ruby_format_f(out, hv_float_val(v)); break; /* Float's default format is %f */
    case HV_BOOL: sb_adds(out, hv_bool_val(v) ? "true" : "false"); break;
    case HV_UNDEF: break;
    case HV_SENSITIVE: sb_adds(out, "Sensitive [value redacted]"); break;
    case HV_SYMBOL:
        if (v_is_default(v))
            sb_adds(out, "default");
        else if (!v_is_undef(v))
            sb_addn(out, hv_str_ptr(v), hv_str_len(v));
        break;
    case HV_ARRAY: case HV_HASH: ps_container(out, v, 0); break;
    }
}

/* ---- a single format string ('%<flags><width>.<prec><format>') ---- */

typedef struct {
    bool left, alt, plus, space, zero;
    int width, prec; /* -1: none */
    char conv;
    const char *orig;
} fmtspec;

static bool parse_format(const char *f, fmtspec *fs, herr *err)
{
    memset(fs, 0, sizeof *fs);
    fs->width = fs->prec = -1;
    fs->orig = f;
    const char *p = f;
    bool ok = *p == '%';
    if (ok)
        p++;
    const char *flags = p;
    while (ok && *p && strchr(" \t\n\r\f\v[+#0{<(|-", *p))
        p++;
    size_t nflags = (size_t)(p - flags);
    if (ok && *p >= '1' && *p <= '9') {
        fs->width = 0;
        while (isdigit((unsigned char)*p) && fs->width < 100000)
            fs->width = fs->width * 10 + (*p++ - '0');
    }
    if (ok && *p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            ok = false;
        fs->prec = 0;
        while (ok && isdigit((unsigned char)*p) && fs->prec < 100000)
            fs->prec = fs->prec * 10 + (*p++ - '0');
    }
    if (ok && isalpha((unsigned char)*p) && p[1] == 0)
        fs->conv = *p;
    else
        ok = false;
    if (!ok) {
        herr_set(err, HERR_ERROR, "The format '%s' is not a valid format on the form '%%<flags><width>.<prec><format>'", f);
        return false;
    }
    for (size_t i = 0; i < nflags; i++)
        for (size_t j = i + 1; j < nflags; j++)
            if (flags[i] == flags[j]) {
                herr_set(err, HERR_ERROR, "The same flag can only be used once, got '%s'", f);
                return false;
            }
    for (size_t i = 0; i < nflags; i++) {
        switch (flags[i]) {
        case '-': fs->left = true; break;
        case '#': fs->alt = true; break;
        case '+': fs->plus = true; break;
        case ' ': fs->space = true; break;
        case '0': fs->zero = true; break;
        default: break;
        }
    }
    return true;
}

/* Pads text to the width (characters), as %s does; prec truncates to that many characters. */
static void pad_str(sbuf *b, const fmtspec *fs, const char *s, size_t n, bool use_prec)
{
    if (use_prec && fs->prec >= 0) {
        size_t i = 0, chars = 0;
        while (i < n && chars < (size_t)fs->prec) {
            uint32_t cp;
            i += pt_utf8_next(s + i, n - i, &cp);
            chars++;
        }
        n = i;
    }
    size_t len = pt_utf8_len(s, n);
    size_t pad = fs->width > 0 && (size_t)fs->width > len ? (size_t)fs->width - len : 0;
    if (!fs->left)
        for (size_t i = 0; i < pad; i++)
            sb_addc(b, ' ');
    sb_addn(b, s, n);
    if (fs->left)
        for (size_t i = 0; i < pad; i++)
            sb_addc(b, ' ');
}

/* Ruby's two's complement form of a negative number in base 16, 8 or 2 without a sign flag:
 * "..f01" for -255 (the digits after "..", led by one all-ones digit). */
static char *twos_complement_digits(int64_t i, int base, bool upper)
{
    int bits = base == 16 ? 4 : base == 8 ? 3 : 1;
    uint64_t u = (uint64_t)i; /* two's complement in 64 bits */
    char buf[80];
    size_t k = sizeof buf;
    buf[--k] = 0;
    int ndigits = (64 + bits - 1) / bits;
    for (int d = 0; d < ndigits; d++) {
        int x = (int)(u & (uint64_t)(base - 1));
        if (bits == 3 && d == ndigits - 1)
            x = 7; /* the sign extends into the top octal digit */
        buf[--k] = (char)(x < 10 ? '0' + x : (upper ? 'A' : 'a') + x - 10);
        u >>= bits;
    }
    char top = (char)(base == 16 ? (upper ? 'F' : 'f') : base == 8 ? '7' : '1');
    const char *p = buf + k;
    while (p[0] == top && p[1] == top)
        p++;
    return xstrdup(p);
}

/* Kernel.format of an integer with d x X o b B. */
static void format_int(sbuf *b, const fmtspec *fs, char conv, const hv *v)
{
    int base = conv == 'd' ? 10 : (conv == 'x' || conv == 'X') ? 16 : conv == 'o' ? 8 : 2;
    bool neg;
    char *digits;
    if (hv_is(v, HV_INT) && hv_int_val(v) < 0 && base != 10 && !fs->plus && !fs->space) {
        char *d = twos_complement_digits(hv_int_val(v), base, conv == 'X');
        char top = d[0];
        sbuf body = {0};
        if (fs->alt && conv != 'o')
            sb_adds(&body, conv == 'x' ? "0x" : conv == 'X' ? "0X" : conv == 'b' ? "0b" : "0B");
        sb_adds(&body, "..");
        size_t target = fs->prec >= 0 ? (size_t)fs->prec
                        : (fs->zero && !fs->left && fs->width > 0) ? (size_t)fs->width : 0;
        for (size_t len = body.len + strlen(d); len < target; len++)
            sb_addc(&body, top);
        sb_adds(&body, d);
        free(d);
        pad_str(b, fs, body.s, body.len, false);
        sb_free(&body);
        return;
    }
    if (hv_is(v, HV_INT)) {
        int64_t i = hv_int_val(v);
        neg = i < 0;
        uint64_t u = neg ? (uint64_t)(-(i + 1)) + 1 : (uint64_t)i;
        char buf[80];
        size_t k = sizeof buf;
        buf[--k] = 0;
        do {
            int d = (int)(u % (uint64_t)base);
            buf[--k] = (char)(d < 10 ? '0' + d : (conv == 'X' ? 'A' : 'a') + d - 10);
            u /= (uint64_t)base;
        } while (u);
        digits = xstrdup(buf + k);
    } else { /* a big integer: decimal only here */
        const char *d = hv_bigint_digits(v);
        neg = d[0] == '-';
        digits = xstrdup(neg ? d + 1 : d);
    }
    sbuf body = {0};
    if (neg)
        sb_addc(&body, '-');
    else if (fs->plus)
        sb_addc(&body, '+');
    else if (fs->space)
        sb_addc(&body, ' ');
    if (fs->alt && !(digits[0] == '0' && !digits[1])) {
        if (conv == 'x') sb_adds(&body, "0x");
        else if (conv == 'X') sb_adds(&body, "0X");
        else if (conv == 'o') sb_adds(&body, "0");
        else if (conv == 'b') sb_adds(&body, "0b");
        else if (conv == 'B') sb_adds(&body, "0B");
    }
    size_t nd = strlen(digits);
    size_t zeros = fs->prec >= 0 && (size_t)fs->prec > nd ? (size_t)fs->prec - nd : 0;
    if (fs->zero && !fs->left && fs->prec < 0 && fs->width > 0 && (size_t)fs->width > body.len + nd)
        zeros = (size_t)fs->width - body.len - nd;
    for (size_t i = 0; i < zeros; i++)
        sb_addc(&body, '0');
    sb_adds(&body, digits);
    free(digits);
    fmtspec plain = *fs;
    pad_str(b, &plain, body.s, body.len, false);
    sb_free(&body);
}

/* Kernel.format of a float with e E f g G a A. */
static void format_float(sbuf *b, const fmtspec *fs, char conv, double d)
{
    if (isnan(d) || isinf(d)) {
        const char *t = isnan(d) ? "NaN" : d < 0 ? "-Inf" : fs->plus ? "+Inf" : "Inf";
        pad_str(b, fs, t, strlen(t), false);
        return;
    }
    char f[32], out[512];
    int k = 0;
    f[k++] = '%';
    if (fs->left) f[k++] = '-';
    if (fs->plus) f[k++] = '+';
    if (fs->space) f[k++] = ' ';
    if (fs->zero) f[k++] = '0';
    if (fs->alt) f[k++] = '#';
    f[k++] = '*';
    if (fs->prec >= 0) {
        f[k++] = '.';
        f[k++] = '*';
    }
    f[k++] = conv;
    f[k] = 0;
    int w = fs->width > 0 ? fs->width : 0;
    int n;
    if (fs->prec >= 0)
        n = snprintf(out, sizeof out, f, w, fs->prec > 300 ? 300 : fs->prec, d);
    else
        n = snprintf(out, sizeof out, f, w, d);
    if (n < 0 || (size_t)n >= sizeof out) {
        char *big = xasprintf("%f", d);
        sb_adds(b, big);
        free(big);
        return;
    }
    sb_adds(b, out);
}

static bool format_error(herr *err, const char *type, char conv, const char *expected)
{
    herr_set(err, HERR_ERROR,
             "Illegal format '%c' specified for value of %s type - expected one of the characters '%s'", conv, type,
             expected);
    return false;
}

static void capitalize(char *s, size_t n, bool first)
{
    for (size_t i = 0; i < n; i++)
        s[i] = (char)(i == 0 && first ? toupper((unsigned char)s[i]) : tolower((unsigned char)s[i]));
}

static bool format_string_value(sbuf *b, const fmtspec *fs, const char *s, size_t n, herr *err)
{
    char c = fs->conv;
    if (c == 's') {
        pad_str(b, fs, s, n, true);
        return true;
    }
    if (c == 'p') {
        sbuf q = {0};
        if (fs->alt)
            puppet_double_quote(&q, s, n);
        else
            puppet_quote(&q, s, n);
        pad_str(b, fs, q.s, q.len, true);
        sb_free(&q);
        return true;
    }
    if (!strchr("cCudt", c))
        return format_error(err, "String", c, "cCudspt");
    char *x = xstrndup(s, n);
    size_t xn = n;
    char *start = x;
    if (c == 'c') {
        capitalize(x, n, true);
    } else if (c == 'C') {
        bool seg_start = true;
        for (size_t i = 0; i < n; i++) {
            if (i + 1 < n && x[i] == ':' && x[i + 1] == ':') {
                i++;
                seg_start = true;
                continue;
            }
            x[i] = (char)(seg_start ? toupper((unsigned char)x[i]) : tolower((unsigned char)x[i]));
            seg_start = false;
        }
    } else if (c == 'u' || c == 'd') {
        for (size_t i = 0; i < n; i++)
            x[i] = (char)(c == 'u' ? toupper((unsigned char)x[i]) : tolower((unsigned char)x[i]));
    } else {
        while (xn && (isspace((unsigned char)*start) || *start == 0))
            start++, xn--;
        while (xn && (isspace((unsigned char)start[xn - 1]) || start[xn - 1] == 0))
            xn--;
    }
    if (fs->alt) {
        sbuf q = {0};
        puppet_quote(&q, start, xn);
        pad_str(b, fs, q.s, q.len, true);
        sb_free(&q);
    } else {
        pad_str(b, fs, start, xn, true);
    }
    free(x);
    return true;
}

/* StringConverter#convert(value, format) for a scalar value and one format string. */
bool pt_string_format(sbuf *out, const hv *v, const hv *fmt, herr *err)
{
    if (!hv_is(fmt, HV_STRING)) {
        herr_set(err, HERR_ERROR, "String conversion with a map of formats is not supported by this implementation");
        return false;
    }
    fmtspec fs;
    if (!parse_format(hv_str_ptr(fmt), &fs, err))
        return false;
    char c = fs.conv;
    switch (hv_kind_of(v)) {
    case HV_INT: case HV_BIGINT:
        if (strchr("dxXobB", c)) {
            if (hv_is(v, HV_BIGINT) && c != 'd')
                break;
            format_int(out, &fs, c, v);
            return true;
        }
        if (strchr("eEfgGaA", c)) {
            format_float(out, &fs, c, pt_int_to_float(v));
            return true;
        }
        if (c == 'p' || c == 's') {
            /* %s: the decimal string formatted with %s (%p when alternate: quoted) */
            sbuf d = {0};
            sbuf t = {0};
            ruby_to_s(&d, v);
            if (c == 's' && fs.alt)
                ruby_inspect_string(&t, d.s, d.len);
            else
                sb_addn(&t, d.s, d.len);
            pad_str(out, &fs, t.s, t.len, c == 's');
            sb_free(&d);
            sb_free(&t);
            return true;
        }
        if (c == 'c' && hv_is(v, HV_INT) && hv_int_val(v) >= 0 && hv_int_val(v) <= 0x10ffff) {
            sbuf ch = {0};
            if (fs.alt)
                sb_addc(&ch, '"');
            pt_add_utf8(&ch, (uint32_t)hv_int_val(v));
            if (fs.alt)
                sb_addc(&ch, '"');
            pad_str(out, &fs, ch.s, ch.len, true);
            sb_free(&ch);
            return true;
        }
        if (!strchr("c", c))
            return format_error(err, "Integer", c, "dxXobBeEfgGaAspc");
        break;
    case HV_FLOAT: {
        double d = hv_float_val(v);
        if (strchr("dxXobB", c)) {
            char *msg = NULL;
            hv *i = pt_float_to_i(d, &msg);
            if (!i) {
                pt_set_msg_err(err, msg);
                return false;
            }
            bool ok = !hv_is(i, HV_BIGINT) || c == 'd';
            if (ok)
                format_int(out, &fs, c, i);
            hv_decref(i);
            if (ok)
                return true;
            break;
        }
        if (strchr("eEfgGaA", c)) {
            format_float(out, &fs, c, d);
            return true;
        }
        if (c == 'p' || c == 's') {
            sbuf t = {0};
            if (c == 's' && fs.alt)
                sb_addc(&t, '"');
            ruby_float_to_s(&t, d);
            if (c == 's' && fs.alt)
                sb_addc(&t, '"');
            pad_str(out, &fs, t.s, t.len, c == 's');
            sb_free(&t);
            return true;
        }
        return format_error(err, "Float", c, "dxXobBeEfgGaAsp");
    }
    case HV_STRING:
        return format_string_value(out, &fs, hv_str_ptr(v), hv_str_len(v), err);
    case HV_BOOL: {
        bool bv = hv_bool_val(v);
        const char *t = NULL;
        char tmp[8];
        switch (c) {
        case 't': t = bv ? "true" : "false"; break;
        case 'T': t = bv ? "True" : "False"; break;
        case 'y': t = bv ? "yes" : "no"; break;
        case 'Y': t = bv ? "Yes" : "No"; break;
        case 's': case 'p': t = bv ? "true" : "false"; break;
        default: break;
        }
        if (t) {
            if (fs.alt && strchr("tTyY", c)) {
                tmp[0] = t[0];
                tmp[1] = 0;
                t = tmp;
            }
            pad_str(out, &fs, t, strlen(t), true);
            return true;
        }
        if (strchr("dxXobB", c)) {
            hv *i = hv_int(bv ? 1 : 0);
            format_int(out, &fs, c, i);
            hv_decref(i);
            return true;
        }
        if (strchr("eEfgGaA", c)) {
            format_float(out, &fs, c, bv ? 1.0 : 0.0);
            return true;
        }
        return format_error(err, "Boolean", c, "tTyYdxXobBeEfgGaAsp");
    }
    case HV_UNDEF: {
        const char *t = NULL;
        switch (c) {
        case 'n': t = fs.alt ? "null" : "nil"; break;
        case 'u': t = fs.alt ? "undefined" : "undef"; break;
        case 'v': t = "n/a"; break;
        case 'V': t = "N/A"; break;
        case 's': t = fs.alt ? "\"\"" : ""; break;
        case 'p': t = fs.alt ? "\"undef\"" : "undef"; break;
        default:
            if (strchr("dxXobBeEfgGaA", c))
                t = "NaN";
        }
        if (!t)
            return format_error(err, "Undef", c, "nudxXobBeEfgGaAvVsp");
        pad_str(out, &fs, t, strlen(t), true);
        return true;
    }
    case HV_ARRAY: case HV_HASH: {
        bool arr = hv_is(v, HV_ARRAY);
        if (!strchr(arr ? "asp" : "hasp", c))
            return format_error(err, arr ? "Array" : "Hash", c, arr ? "asp" : "hasp");
        if (fs.alt || fs.width >= 0 || fs.prec >= 0 || strlen(fs.orig) != 2)
            break; /* delimiters, indentation and widths of containers are not supported here */
        if (!arr && c == 'a') { /* a hash formatted as an array of [key, value] pairs */
            herr e2 = {0};
            hv *pairs = pt_array_from(v, &e2);
            herr_clear(&e2);
            ps_container(out, pairs, 0);
            hv_decref(pairs);
        } else {
            ps_container(out, v, 0);
        }
        return true;
    }
    case HV_SYMBOL: {
        const char *t = NULL;
        if (v_is_default(v)) { /* string_PDefaultType */
            if (strchr("dsp", c))
                t = fs.alt ? "\"default\"" : "default";
            else if (c == 'D')
                t = fs.alt ? "\"Default\"" : "Default";
            else
                return format_error(err, "Default", c, "dDsp");
            pad_str(out, &fs, t, strlen(t), true);
            return true;
        }
        if (v_is_undef(v)) {
            hv *u = hv_undef();
            bool r = pt_string_format(out, u, fmt, err);
            hv_decref(u);
            return r;
        }
        /* string_PRuntimeType */
        sbuf s = {0};
        if (c == 's')
            sb_addn(&s, hv_str_ptr(v), hv_str_len(v));
        else if (c == 'p')
            puppet_quote(&s, hv_str_ptr(v), hv_str_len(v));
        else if (c == 'q')
            sb_addf(&s, ":%s", hv_str_ptr(v));
        else
            return format_error(err, "Runtime", c, "spq");
        sb_addn(out, s.s ? s.s : "", s.len);
        sb_free(&s);
        return true;
    }
    case HV_SENSITIVE:
        /* string_PAnyType: Kernel.format(fmt, value) on the Sensitive object */
        if (c == 's' || c == 'p') {
            const char *t = c == 's' ? "Sensitive [value redacted]" : "#<Sensitive [value redacted]>";
            pad_str(out, &fs, t, strlen(t), true);
            return true;
        }
        if (strchr("dixXobBuc", c))
            herr_set(err, HERR_ERROR, "can't convert Puppet::Pops::Types::PSensitiveType::Sensitive into Integer");
        else if (strchr("eEfgGaA", c))
            herr_set(err, HERR_ERROR, "can't convert Puppet::Pops::Types::PSensitiveType::Sensitive into Float");
        else
            herr_set(err, HERR_ERROR, "malformed format string - %%%c", c);
        return false;
    default:
        break;
    }
    herr_set(err, HERR_ERROR, "String conversion with format '%s' of this value is not supported by this implementation",
             hv_str_ptr(fmt));
    return false;
}
