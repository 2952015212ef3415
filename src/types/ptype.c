/* ptype.c - Puppet's data types as `puppet lookup` uses them: the type expressions users give to
 * --type and to lookup_options convert_to, matching values against them (Puppet's instance?),
 * the mismatch messages of Puppet's TypeMismatchDescriber, Puppet's new(Type, value, *args) for
 * convert_to, and Puppet's String.new(value) formatting.
 *
 * The model follows puppet/pops/types (types.rb, type_calculator.rb, type_formatter.rb,
 * type_mismatch_describer.rb, type_parser.rb, string_converter.rb) of Puppet 7.23: a mismatch is
 * described by comparing the expected type with the type Puppet infers for the value, so types
 * here support assignability (type against type), generalization, normalization and Puppet's
 * printed form. Comments name the Ruby quirks that the output depends on.
 *
 * Two parsers: ptype_parse parses as Puppet does with a loader (convert_to, Hiera's own schema
 * checks): Data, RichData and the built-in resource types resolve, unknown names become type
 * references. ptype_parse_cli is `puppet lookup --type`, where the loader context is a Scope and
 * every name outside the parser's type map fails (see scope_load_error).
 *
 * Not supported (no value of ours can hold the result): new() of Type, Regexp, Timespan,
 * Timestamp, SemVer, Binary, URI and Object; parameterized Timespan/Timestamp/SemVer/URI/Object/
 * Init types; type aliases defined in modules (they parse as references); String.new with a map
 * of formats or with flags on container formats.
 *
 * Layout: numbers, type nodes, printing, type algebra (equality, generalize, normalize,
 * assignable), values (instance, infer), the describer, the type-expression lexer/parser, the
 * new() functions, String.new formatting, and the public functions.
 */
#include "types/ptype.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oniguruma.h>

/* Bounds on recursion: type nesting from the parser, value nesting, alias expansion. */
#define MAX_DEPTH 200
#define MAX_ALIAS_DEPTH 24

/* ======================================================================================
 * Numbers: Ruby Integer (64-bit or big, kept as an HV_BIGINT value) or Float. Unbounded range
 * ends are Float infinities, as in Ruby (PNumericType uses -Float::INFINITY/Float::INFINITY).
 * ====================================================================================== */

typedef enum { N_INT, N_FLOAT, N_BIG } nkind;
typedef struct {
    nkind k;
    int64_t i;
    double d;
    hv *big; /* N_BIG: an HV_BIGINT value (owned reference) */
} num;

static num n_int(int64_t i) { return (num){N_INT, i, 0, NULL}; }
static num n_float(double d) { return (num){N_FLOAT, 0, d, NULL}; }
static num n_neginf(void) { return n_float(-INFINITY); }
static num n_posinf(void) { return n_float(INFINITY); }
static num n_copy(num n)
{
    if (n.k == N_BIG)
        hv_incref(n.big);
    return n;
}
static void n_drop(num *n)
{
    if (n->k == N_BIG)
        hv_decref(n->big);
    n->big = NULL;
}
static bool n_is_neginf(num n) { return n.k == N_FLOAT && isinf(n.d) && n.d < 0; }
static bool n_is_posinf(num n) { return n.k == N_FLOAT && isinf(n.d) && n.d > 0; }

static int big_sign(const hv *b) { return hv_bigint_digits(b)[0] == '-' ? -1 : 1; }
static double big_to_double(const hv *b) { return strtod(hv_bigint_digits(b), NULL); }

/* Compares two big integers given as decimal text. */
static int big_cmp_text(const char *a, const char *b)
{
    int sa = a[0] == '-' ? -1 : 1, sb = b[0] == '-' ? -1 : 1;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    if (sa < 0)
        a++, b++;
    size_t la = strlen(a), lb = strlen(b);
    int c = la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
    if (c)
        c = c < 0 ? -1 : 1;
    return sa < 0 ? -c : c;
}

/* Exact comparison of an integer with a double, as Ruby compares Integer with Float. */
static int int_float_cmp(int64_t i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    double t = trunc(d);
    int64_t ti = (int64_t)t;
    if (i != ti)
        return i < ti ? -1 : 1;
    if (d > t)
        return -1;
    if (d < t)
        return 1;
    return 0;
}

/* -1, 0, 1, or 2 when unordered (NaN involved). */
static int n_cmp(num a, num b)
{
    if (a.k == N_FLOAT && isnan(a.d))
        return 2;
    if (b.k == N_FLOAT && isnan(b.d))
        return 2;
    if (a.k == N_INT && b.k == N_INT)
        return a.i < b.i ? -1 : a.i > b.i;
    if (a.k == N_FLOAT && b.k == N_FLOAT)
        return a.d < b.d ? -1 : a.d > b.d;
    if (a.k == N_INT && b.k == N_FLOAT)
        return int_float_cmp(a.i, b.d);
    if (a.k == N_FLOAT && b.k == N_INT)
        return -int_float_cmp(b.i, a.d);
    if (a.k == N_BIG && b.k == N_BIG)
        return big_cmp_text(hv_bigint_digits(a.big), hv_bigint_digits(b.big));
    if (a.k == N_BIG && b.k == N_INT)
        return big_sign(a.big);
    if (a.k == N_INT && b.k == N_BIG)
        return -big_sign(b.big);
    if (a.k == N_BIG) { /* b float */
        double x = big_to_double(a.big);
        return x < b.d ? -1 : x > b.d;
    }
    double y = big_to_double(b.big);
    return a.d < y ? -1 : a.d > y;
}
static bool n_le(num a, num b) { int c = n_cmp(a, b); return c == -1 || c == 0; }
static bool n_lt(num a, num b) { return n_cmp(a, b) == -1; }
static bool n_eq(num a, num b) { return n_cmp(a, b) == 0; }
static num n_min(num a, num b) { return n_le(a, b) ? a : b; }
static num n_max(num a, num b) { return n_le(b, a) ? a : b; }

/* n + 1 (used by Integer range adjacency); infinities stay. */
static num n_succ(num n)
{
    if (n.k == N_INT && n.i < INT64_MAX)
        return n_int(n.i + 1);
    if (n.k == N_FLOAT)
        return n_float(n.d + 1);
    return n; /* big or INT64_MAX: adjacency at such bounds does not matter here */
}

/* Ruby's Float#to_s: shortest round-trip digits, fixed notation for exponents -4 < e <= 16. */
static void ruby_float_to_s(sbuf *b, double d)
{
    if (isnan(d)) {
        sb_adds(b, "NaN");
        return;
    }
    if (isinf(d)) {
        sb_adds(b, d < 0 ? "-Infinity" : "Infinity");
        return;
    }
    if (d == 0) {
        sb_adds(b, signbit(d) ? "-0.0" : "0.0");
        return;
    }
    char buf[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    /* buf: [-]d[.ddd]e[+-]XX -> digits and decimal exponent */
    char digits[32];
    int nd = 0;
    const char *p = buf;
    bool neg = false;
    if (*p == '-')
        neg = true, p++;
    for (; *p && *p != 'e'; p++)
        if (isdigit((unsigned char)*p))
            digits[nd++] = *p;
    int e10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    int decpt = e10 + 1; /* digits are 0.DIGITS * 10^decpt */
    if (neg)
        sb_addc(b, '-');
    if (decpt > 0 && (decpt <= DBL_DIG || (decpt == DBL_DIG + 1 && nd > decpt))) {
        for (int i = 0; i < decpt; i++)
            sb_addc(b, i < nd ? digits[i] : '0');
        sb_addc(b, '.');
        if (nd > decpt)
            sb_addn(b, digits + decpt, (size_t)(nd - decpt));
        else
            sb_addc(b, '0');
    } else if (decpt <= 0 && decpt > -4) {
        sb_adds(b, "0.");
        for (int i = 0; i < -decpt; i++)
            sb_addc(b, '0');
        sb_addn(b, digits, (size_t)nd);
    } else {
        sb_addc(b, digits[0]);
        sb_addc(b, '.');
        if (nd > 1)
            sb_addn(b, digits + 1, (size_t)(nd - 1));
        else
            sb_addc(b, '0');
        sb_addf(b, "e%c%02d", decpt - 1 < 0 ? '-' : '+', abs(decpt - 1));
    }
}

/* Ruby's Integer#to_s / Float#to_s of a number. */
static void n_to_s(sbuf *b, num n)
{
    if (n.k == N_INT)
        sb_addf(b, "%" PRId64, n.i);
    else if (n.k == N_BIG)
        sb_adds(b, hv_bigint_digits(n.big));
    else
        ruby_float_to_s(b, n.d);
}

/* ======================================================================================
 * Strings
 * ====================================================================================== */

typedef struct {
    char *p;
    size_t n;
} pstr;

static pstr ps_dup(const char *p, size_t n) { return (pstr){xstrndup(p, n), n}; }
static bool ps_eq(pstr a, pstr b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

/* Ruby String#size for UTF-8 text: characters; a byte that does not start a valid sequence
 * counts as one character. */
static size_t utf8_len(const char *s, size_t n)
{
    size_t count = 0, i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        if (len > 1) {
            if (i + len > n)
                len = 1;
            else
                for (size_t k = 1; k < len; k++)
                    if (((unsigned char)s[i + k] >> 6) != 2) {
                        len = 1;
                        break;
                    }
        }
        i += len;
        count++;
    }
    return count;
}

/* Decodes one UTF-8 character at s (n bytes available); returns its length (1 for a bad byte,
 * with *cp the byte value). */
static size_t utf8_next(const char *s, size_t n, uint32_t *cp)
{
    unsigned char c = (unsigned char)s[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (len == 1 || len > n) {
        *cp = c;
        return 1;
    }
    uint32_t v = c & (0x7f >> len);
    for (size_t k = 1; k < len; k++) {
        unsigned char d = (unsigned char)s[k];
        if ((d >> 6) != 2) {
            *cp = c;
            return 1;
        }
        v = (v << 6) | (d & 0x3f);
    }
    *cp = v;
    return len;
}

/* Ruby String#casecmp == 0: ASCII-only case folding. */
static bool ascii_casecmp_eq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return true;
}

/* Puppet's double-quoted form of a string (StringConverter#puppet_double_quote). */
static void puppet_double_quote(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = utf8_next(s + i, n - i, &cp);
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

/* ======================================================================================
 * Regular expressions (Ruby semantics through Oniguruma's Ruby syntax, UTF-8)
 * ====================================================================================== */

static void onig_init_once(void)
{
    static bool done;
    if (!done) {
        OnigEncoding encs[1] = {ONIG_ENCODING_UTF8};
        onig_initialize(encs, 1);
        done = true;
    }
}

/* Compiles src; on failure returns NULL and sets err to Ruby's RegexpError text
 * ("<reason>: /<source>/"). */
static regex_t *re_compile(const char *src, size_t n, herr *err)
{
    onig_init_once();
    regex_t *re = NULL;
    OnigErrorInfo einfo;
    const OnigUChar *p = (const OnigUChar *)src;
    int r = onig_new(&re, p, p + n, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &einfo);
    if (r != ONIG_NORMAL) {
        OnigUChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &einfo);
        if (err)
            herr_set(err, HERR_ERROR, "%s: /%.*s/", (char *)msg, (int)n, src);
        return NULL;
    }
    return re;
}

/* Ruby's `re =~ s` (unanchored search). */
static bool re_search(regex_t *re, const char *s, size_t n)
{
    const OnigUChar *p = (const OnigUChar *)s;
    int r = onig_search(re, p, p + n, p, p + n, NULL, ONIG_OPTION_NONE);
    return r >= 0;
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

/* ======================================================================================
 * Type nodes
 * ====================================================================================== */

typedef enum {
    K_ANY, K_UNIT, K_UNDEF, K_DEFAULT,
    K_CONTAINED, /* abstract: PTypeWithContainedType */
    K_NOTUNDEF, K_TYPE, K_OPTIONAL, K_SENSITIVE, K_ITERABLE, K_ITERATOR, K_INIT,
    K_SCALAR, K_SCALARDATA, K_NUMERIC, K_INTEGER, K_FLOAT, K_STRING, K_ENUM, K_PATTERN, K_BOOLEAN,
    K_REGEXP, K_SEMVER,
    K_TIMEDATA, /* abstract: PAbstractTimeDataType */
    K_TIMESPAN, K_TIMESTAMP, K_SEMVERRANGE, K_BINARY, K_URI,
    K_META, /* abstract: PMetaType */
    K_OBJECT, K_TYPESET,
    K_COLLECTION, K_ARRAY, K_HASH, K_TUPLE, K_STRUCT, K_VARIANT, K_CALLABLE, K_RUNTIME, K_TYPEREF,
    K_ALIAS, K_CATALOGENTRY, K_CLASS, K_RESOURCE,
    K_COUNT
} tkind;

struct ptype {
    int refs; /* < 0: immortal (the built-in aliases) */
    tkind k;
    num from, to;   /* NUMERIC, INTEGER, FLOAT */
    ptype *t;       /* contained type; ARRAY element; HASH key; CALLABLE params; ALIAS resolved */
    ptype *t2;      /* HASH value; CALLABLE block */
    ptype *t3;      /* CALLABLE return */
    ptype *size;    /* STRING, COLLECTION, ARRAY, HASH, TUPLE: an INTEGER size type, or NULL */
    ptype **v;      /* VARIANT, TUPLE types; STRUCT key/value pairs (2n); PATTERN regexp types */
    size_t n;
    pstr s;         /* STRING value, REGEXP pattern, TYPEREF text, ALIAS/CLASS/RESOURCE name, RUNTIME name */
    bool has_s;
    pstr rt;        /* RUNTIME runtime name */
    bool has_rt;
    pstr *vals;     /* ENUM values, sorted and unique */
    size_t nvals;
    int flag;       /* BOOLEAN: -1 any, 0 false, 1 true; ENUM: case-insensitive */
    regex_t *re;    /* REGEXP: compiled once */
    bool re_failed;
};

static const tkind parent_of[K_COUNT] = {
    [K_ANY] = K_ANY, [K_UNIT] = K_ANY, [K_UNDEF] = K_ANY, [K_DEFAULT] = K_ANY,
    [K_CONTAINED] = K_ANY, [K_NOTUNDEF] = K_CONTAINED, [K_TYPE] = K_CONTAINED,
    [K_OPTIONAL] = K_CONTAINED, [K_SENSITIVE] = K_CONTAINED, [K_ITERABLE] = K_CONTAINED,
    [K_ITERATOR] = K_CONTAINED, [K_INIT] = K_CONTAINED,
    [K_SCALAR] = K_ANY, [K_SCALARDATA] = K_SCALAR, [K_NUMERIC] = K_SCALARDATA,
    [K_INTEGER] = K_NUMERIC, [K_FLOAT] = K_NUMERIC, [K_STRING] = K_SCALARDATA,
    [K_ENUM] = K_SCALARDATA, [K_PATTERN] = K_SCALARDATA, [K_BOOLEAN] = K_SCALARDATA,
    [K_REGEXP] = K_SCALAR, [K_SEMVER] = K_SCALAR, [K_TIMEDATA] = K_SCALAR,
    [K_TIMESPAN] = K_TIMEDATA, [K_TIMESTAMP] = K_TIMEDATA, [K_SEMVERRANGE] = K_ANY,
    [K_BINARY] = K_ANY, [K_URI] = K_ANY, [K_META] = K_ANY, [K_OBJECT] = K_META,
    [K_TYPESET] = K_META, [K_COLLECTION] = K_ANY, [K_ARRAY] = K_COLLECTION,
    [K_HASH] = K_COLLECTION, [K_TUPLE] = K_ANY, [K_STRUCT] = K_ANY, [K_VARIANT] = K_ANY,
    [K_CALLABLE] = K_ANY, [K_RUNTIME] = K_ANY, [K_TYPEREF] = K_ANY, [K_ALIAS] = K_ANY,
    [K_CATALOGENTRY] = K_ANY, [K_CLASS] = K_CATALOGENTRY, [K_RESOURCE] = K_CATALOGENTRY,
};

static const char *const simple_names[K_COUNT] = {
    "Any", "Unit", "Undef", "Default", "TypeWithContainedType", "NotUndef", "Type", "Optional",
    "Sensitive", "Iterable", "Iterator", "Init", "Scalar", "ScalarData", "Numeric", "Integer",
    "Float", "String", "Enum", "Pattern", "Boolean", "Regexp", "SemVer", "AbstractTimeData",
    "Timespan", "Timestamp", "SemVerRange", "Binary", "URI", "Meta", "Object", "TypeSet",
    "Collection", "Array", "Hash", "Tuple", "Struct", "Variant", "Callable", "Runtime",
    "TypeReference", "TypeAlias", "CatalogEntry", "Class", "Resource",
};

/* Ruby's is_a? on the type classes. */
static bool is_a(const ptype *t, tkind k)
{
    if (!t)
        return false;
    for (tkind c = t->k;; c = parent_of[c]) {
        if (c == k)
            return true;
        if (c == K_ANY)
            return false;
    }
}
static bool is_k(const ptype *t, tkind k) { return t && t->k == k; }
static bool is_contained(const ptype *t) { return is_a(t, K_CONTAINED); }

static ptype *t_new(tkind k)
{
    ptype *t = xcalloc(1, sizeof *t);
    t->refs = 1;
    t->k = k;
    t->from = n_neginf();
    t->to = n_posinf();
    t->flag = k == K_BOOLEAN ? -1 : 0;
    return t;
}

static ptype *t_ref(const ptype *ct)
{
    ptype *t = (ptype *)ct;
    if (t && t->refs > 0)
        t->refs++;
    return t;
}

static void t_unref(ptype *t)
{
    if (!t || t->refs < 0 || --t->refs > 0)
        return;
    n_drop(&t->from);
    n_drop(&t->to);
    t_unref(t->t);
    t_unref(t->t2);
    t_unref(t->t3);
    t_unref(t->size);
    for (size_t i = 0; i < t->n; i++)
        t_unref(t->v[i]);
    free(t->v);
    free(t->s.p);
    free(t->rt.p);
    for (size_t i = 0; i < t->nvals; i++)
        free(t->vals[i].p);
    free(t->vals);
    if (t->re)
        onig_free(t->re);
    free(t);
}

/* A growable list of type references (owned). */
typedef struct {
    ptype **v;
    size_t n, cap;
} tlist;

static void tl_push(tlist *l, ptype *t) /* steals t */
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = t;
}
static void tl_free(tlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        t_unref(l->v[i]);
    free(l->v);
    *l = (tlist){0};
}

/* ---- constructors (they steal their type arguments) ---- */

static ptype *mk(tkind k) { return t_new(k); }

static ptype *mk_int(num from, num to)
{
    ptype *t = t_new(K_INTEGER);
    t->from = from;
    t->to = to;
    return t;
}
static ptype *mk_intv(int64_t from, int64_t to) { return mk_int(n_int(from), n_int(to)); }

static ptype *mk_float(num from, num to)
{
    ptype *t = t_new(K_FLOAT);
    t->from = from;
    t->to = to;
    return t;
}

/* PIntegerType#to_size: a range whose both ends are >= 0. */
static ptype *to_size(ptype *size)
{
    if (!size || n_le(n_int(0), size->from))
        return size;
    num to = n_lt(size->to, n_int(0)) ? n_int(0) : n_copy(size->to);
    t_unref(size);
    return mk_int(n_int(0), to);
}

static bool size_is_zero(const ptype *size)
{
    return size && n_eq(size->from, n_int(0)) && n_eq(size->to, n_int(0));
}

static ptype *mk_string_size(ptype *size)
{
    ptype *t = t_new(K_STRING);
    t->size = to_size(size);
    return t;
}
static ptype *mk_string_val(const char *p, size_t n)
{
    ptype *t = t_new(K_STRING);
    t->s = ps_dup(p, n);
    t->has_s = true;
    return t;
}

static int pstr_cmp(const void *a, const void *b)
{
    const pstr *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, m);
    return c ? c : (x->n < y->n ? -1 : x->n > y->n);
}

/* PEnumType.new: values are made unique and sorted (Ruby's String#<=>, bytewise). Copies. */
static ptype *mk_enum(const pstr *vals, size_t n, bool ci)
{
    ptype *t = t_new(K_ENUM);
    t->vals = xcalloc(n ? n : 1, sizeof *t->vals);
    for (size_t i = 0; i < n; i++)
        t->vals[i] = ps_dup(vals[i].p, vals[i].n);
    qsort(t->vals, n, sizeof *t->vals, pstr_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && ps_eq(t->vals[w - 1], t->vals[i]))
            free(t->vals[i].p);
        else
            t->vals[w++] = t->vals[i];
    }
    t->nvals = w;
    t->flag = ci;
    return t;
}

static ptype *mk_regexp(const char *p, size_t n, bool has)
{
    ptype *t = t_new(K_REGEXP);
    if (has) {
        t->s = ps_dup(p, n);
        t->has_s = true;
    }
    return t;
}

static ptype *mk_bool(int flag)
{
    ptype *t = t_new(K_BOOLEAN);
    t->flag = flag;
    return t;
}

static ptype *mk_collection(ptype *size)
{
    ptype *t = t_new(K_COLLECTION);
    t->size = to_size(size);
    return t;
}

/* PArrayType.new: a [0,0] size makes the element type Unit; no element type means Any. */
static ptype *mk_array(ptype *elem, ptype *size)
{
    ptype *t = t_new(K_ARRAY);
    t->size = to_size(size);
    if (size_is_zero(t->size)) {
        t_unref(elem);
        elem = mk(K_UNIT);
    }
    t->t = elem ? elem : mk(K_ANY);
    return t;
}

static ptype *mk_hash(ptype *key, ptype *value, ptype *size)
{
    ptype *t = t_new(K_HASH);
    t->size = to_size(size);
    if (size_is_zero(t->size)) {
        t_unref(key);
        t_unref(value);
        key = mk(K_UNIT);
        value = mk(K_UNIT);
    }
    t->t = key ? key : mk(K_ANY);
    t->t2 = value ? value : mk(K_ANY);
    return t;
}

static ptype *mk_tuple(ptype **types, size_t n, ptype *size) /* steals types array */
{
    ptype *t = t_new(K_TUPLE);
    t->v = types ? types : xcalloc(1, sizeof *t->v);
    t->n = n;
    t->size = to_size(size);
    return t;
}

static ptype *mk_struct(ptype **pairs, size_t nelems) /* steals the pairs array (2*nelems) */
{
    ptype *t = t_new(K_STRUCT);
    t->v = pairs ? pairs : xcalloc(1, sizeof *t->v);
    t->n = nelems * 2;
    return t;
}

static ptype *mk_variant(ptype **types, size_t n) /* steals types array */
{
    ptype *t = t_new(K_VARIANT);
    t->v = types ? types : xcalloc(1, sizeof *t->v);
    t->n = n;
    return t;
}

static ptype *mk_pattern(ptype **regexps, size_t n) /* steals */
{
    ptype *t = t_new(K_PATTERN);
    t->v = regexps ? regexps : xcalloc(1, sizeof *t->v);
    t->n = n;
    return t;
}

static ptype *generalize(const ptype *t);

/* Constructors of the types with one contained type, with their Ruby initialize quirks:
 * NotUndef[Any] keeps no type; Sensitive generalizes its type and defaults to Any. */
static ptype *mk_contained(tkind k, ptype *inner)
{
    ptype *t = t_new(k);
    if (k == K_NOTUNDEF && is_k(inner, K_ANY)) {
        t_unref(inner);
        inner = NULL;
    }
    if (k == K_SENSITIVE) {
        if (!inner) {
            inner = mk(K_ANY);
        } else {
            ptype *g = generalize(inner);
            t_unref(inner);
            inner = g;
        }
    }
    t->t = inner;
    return t;
}

static ptype *mk_callable(ptype *params, ptype *block, ptype *ret)
{
    ptype *t = t_new(K_CALLABLE);
    t->t = params;
    t->t2 = block;
    if (is_k(ret, K_ANY)) {
        t_unref(ret);
        ret = NULL;
    }
    t->t3 = ret;
    return t;
}

static ptype *mk_named(tkind k, const char *p, size_t n)
{
    ptype *t = t_new(k);
    t->s = ps_dup(p, n);
    t->has_s = true;
    return t;
}

static ptype *mk_runtime(const char *rt, size_t rtn, bool has_rt, const char *name, size_t nn, bool has_name)
{
    ptype *t = t_new(K_RUNTIME);
    if (has_rt) {
        t->rt = ps_dup(rt, rtn);
        t->has_rt = true;
    }
    if (has_name) {
        t->s = ps_dup(name, nn);
        t->has_s = true;
    }
    return t;
}

/* The DEFAULT instance of a type class. */
static ptype *dflt(tkind k)
{
    switch (k) {
    case K_ARRAY: return mk_array(NULL, NULL);
    case K_HASH: return mk_hash(NULL, NULL, NULL);
    case K_SENSITIVE: return mk_contained(K_SENSITIVE, NULL);
    case K_TYPEREF: return mk_named(K_TYPEREF, "UnresolvedReference", 19);
    case K_ALIAS: { /* PTypeAliasType::DEFAULT */
        ptype *a = mk_named(K_ALIAS, "UnresolvedAlias", 15);
        a->t = mk_named(K_TYPEREF, "UnresolvedReference", 19);
        return a;
    }
    default: return mk(k);
    }
}

static ptype *hash_empty(void) { return mk_hash(mk(K_UNIT), mk(K_UNIT), mk_intv(0, 0)); }
static ptype *array_empty(void) { return mk_array(mk(K_UNIT), mk_intv(0, 0)); }
static ptype *default_size(void) { return mk_int(n_int(0), n_posinf()); }

/* ---- element accessors ---- */
static const ptype *st_key(const ptype *s, size_t i) { return s->v[2 * i]; }
static const ptype *st_val(const ptype *s, size_t i) { return s->v[2 * i + 1]; }
static size_t st_count(const ptype *s) { return s->n / 2; }
/* PStructElement#name: the literal string of the (possibly optional) key type. */
static pstr st_name(const ptype *s, size_t i)
{
    const ptype *k = st_key(s, i);
    if (is_k(k, K_OPTIONAL) && k->t)
        k = k->t;
    return k->s;
}

static bool is_unbounded(const ptype *t) { return n_is_neginf(t->from) && n_is_posinf(t->to); }

/* Ruby `name`: the alias name for aliases, otherwise the simple name. */
static const char *t_name(const ptype *t)
{
    if (t->k == K_ALIAS)
        return t->s.p;
    if (t->k == K_TYPESET)
        return "DefaultTypeSet";
    return simple_names[t->k];
}

/* ======================================================================================
 * Structural equality (Ruby eql? / == on types)
 * ====================================================================================== */

static bool t_eq(const ptype *a, const ptype *b);

static bool opt_eq(const ptype *a, const ptype *b)
{
    if (!a || !b)
        return a == b;
    return t_eq(a, b);
}

/* Ruby's (a - b).empty? on type arrays: every element of a is in b. */
static bool tv_subset(ptype *const *a, size_t an, ptype *const *b, size_t bn)
{
    for (size_t i = 0; i < an; i++) {
        bool found = false;
        for (size_t j = 0; j < bn && !found; j++)
            found = t_eq(a[i], b[j]);
        if (!found)
            return false;
    }
    return true;
}

static bool t_eq(const ptype *a, const ptype *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->k != b->k)
        return false;
    switch (a->k) {
    case K_NUMERIC: case K_INTEGER: case K_FLOAT:
        return n_eq(a->from, b->from) && n_eq(a->to, b->to);
    case K_STRING:
        if (a->has_s || b->has_s)
            return a->has_s && b->has_s && ps_eq(a->s, b->s);
        return opt_eq(a->size, b->size);
    case K_ENUM:
        if (a->nvals != b->nvals || a->flag != b->flag)
            return false;
        for (size_t i = 0; i < a->nvals; i++)
            if (!ps_eq(a->vals[i], b->vals[i]))
                return false;
        return true;
    case K_PATTERN:
        return a->n == b->n && tv_subset(a->v, a->n, b->v, b->n);
    case K_VARIANT:
        return a->n == b->n && tv_subset(a->v, a->n, b->v, b->n);
    case K_REGEXP: case K_TYPEREF: case K_ALIAS: case K_CLASS:
        return a->has_s == b->has_s && (!a->has_s || ps_eq(a->s, b->s));
    case K_RESOURCE:
        return a->has_s == b->has_s && (!a->has_s || ascii_casecmp_eq(a->s.p, a->s.n, b->s.p, b->s.n));
    case K_RUNTIME:
        return a->has_s == b->has_s && (!a->has_s || ps_eq(a->s, b->s)) && a->has_rt == b->has_rt &&
               (!a->has_rt || ps_eq(a->rt, b->rt));
    case K_BOOLEAN:
        return a->flag == b->flag;
    case K_COLLECTION:
        return opt_eq(a->size, b->size);
    case K_ARRAY:
        return opt_eq(a->size, b->size) && t_eq(a->t, b->t);
    case K_HASH:
        return opt_eq(a->size, b->size) && t_eq(a->t, b->t) && t_eq(a->t2, b->t2);
    case K_TUPLE:
        if (a->n != b->n || !opt_eq(a->size, b->size))
            return false;
        for (size_t i = 0; i < a->n; i++)
            if (!t_eq(a->v[i], b->v[i]))
                return false;
        return true;
    case K_STRUCT:
        if (a->n != b->n)
            return false;
        for (size_t i = 0; i < a->n; i++)
            if (!t_eq(a->v[i], b->v[i]))
                return false;
        return true;
    case K_CALLABLE:
        return opt_eq(a->t, b->t) && opt_eq(a->t2, b->t2) && opt_eq(a->t3, b->t3);
    case K_NOTUNDEF: case K_TYPE: case K_OPTIONAL: case K_SENSITIVE: case K_ITERABLE:
    case K_ITERATOR: case K_INIT:
        return opt_eq(a->t, b->t);
    default:
        return true;
    }
}

/* A cheap digest of a type: equal types have equal digests. */
static uint64_t t_digest(const ptype *t)
{
    uint64_t h = (uint64_t)t->k * 0x9e3779b97f4a7c15ull;
    if (t->has_s)
        for (size_t i = 0; i < t->s.n; i++)
            h = (h ^ (unsigned char)t->s.p[i]) * 0x100000001b3ull;
    if ((t->k == K_INTEGER || t->k == K_FLOAT) && t->from.k == N_INT)
        h ^= (uint64_t)t->from.i * 31;
    return h ^ t->n ^ ((uint64_t)t->nvals << 8) ^ ((uint64_t)(t->flag + 1) << 16);
}

/* Array#uniq on types (first occurrence kept). */
static void tl_uniq(tlist *l)
{
    uint64_t *d = xcalloc(l->n ? l->n : 1, sizeof *d);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t di = t_digest(l->v[i]);
        bool dup = false;
        for (size_t j = 0; j < w && !dup; j++)
            dup = d[j] == di && t_eq(l->v[j], l->v[i]);
        if (dup) {
            t_unref(l->v[i]);
        } else {
            d[w] = di;
            l->v[w++] = l->v[i];
        }
    }
    l->n = w;
    free(d);
}

/* PVariantType.maybe_create: flattens nested variants, removes duplicates, and returns the only
 * type when one remains. Steals the list's types. */
static ptype *maybe_create(tlist *l)
{
    tlist flat = {0};
    for (size_t i = 0; i < l->n; i++) {
        ptype *t = l->v[i];
        if (is_k(t, K_VARIANT)) {
            for (size_t j = 0; j < t->n; j++)
                tl_push(&flat, t_ref(t->v[j]));
            t_unref(t);
        } else {
            tl_push(&flat, t);
        }
    }
    free(l->v);
    *l = (tlist){0};
    tl_uniq(&flat);
    if (flat.n == 1) {
        ptype *t = flat.v[0];
        free(flat.v);
        return t;
    }
    return mk_variant(flat.v, flat.n);
}

/* ======================================================================================
 * Printing types (TypeFormatter#string)
 * ====================================================================================== */

typedef struct guard guard;
static bool assignable(const ptype *t, const ptype *o, guard *g);
static bool accepts_undef(const ptype *t);

static void tfx(sbuf *b, const ptype *t, bool x);

/* range_array_part: [] when unbounded, otherwise [from|'default'] + [to] when bounded. */
static void tf_range(sbuf *b, const ptype *r, bool continued)
{
    if (!r || is_unbounded(r))
        return;
    if (n_is_neginf(r->from))
        sb_adds(b, "default");
    else
        n_to_s(b, r->from);
    if (!n_is_posinf(r->to)) {
        sb_adds(b, ", ");
        n_to_s(b, r->to);
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
        bool value_optional = accepts_undef(v);
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
        sb_adds(b, simple_names[t->k]);
        if (!is_unbounded(t)) {
            sb_addc(b, '[');
            tf_range(b, t, false);
            sb_addc(b, ']');
        }
        break;
    case K_STRING: case K_COLLECTION:
        sb_adds(b, simple_names[t->k]);
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
        if (size_is_zero(t->size)) {
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
        if (size_is_zero(t->size)) {
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
        sb_adds(b, simple_names[t->k]);
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
        tf_contained(b, simple_names[t->k], t->t, x);
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
        sb_adds(b, simple_names[t->k]);
        break;
    }
}

static char *t_to_s(const ptype *t)
{
    sbuf b = {0};
    tfx(&b, t, t->k == K_ALIAS); /* PTypeAliasType#to_s is the expanded form */
    return sb_take(&b);
}

/* to_alias_expanded_s */
static char *t_to_xs(const ptype *t)
{
    sbuf b = {0};
    tfx(&b, t, true);
    return sb_take(&b);
}

/* ======================================================================================
 * Immortal default types used in comparisons (Ruby's PXxxType::DEFAULT constants)
 * ====================================================================================== */

static void make_immortal(ptype *t) { t->refs = -1; }

static const ptype *D(tkind k)
{
    static ptype *defaults[K_COUNT];
    if (!defaults[k]) {
        defaults[k] = dflt(k);
        make_immortal(defaults[k]);
    }
    return defaults[k];
}

/* ======================================================================================
 * generalize and normalize
 * ====================================================================================== */

static bool is_hash_empty(const ptype *t)
{
    return is_k(t, K_HASH) && size_is_zero(t->size) && is_k(t->t, K_UNIT) && is_k(t->t2, K_UNIT);
}
static bool is_hash_default(const ptype *t)
{
    return is_k(t, K_HASH) && !t->size && is_k(t->t, K_ANY) && is_k(t->t2, K_ANY);
}
static bool is_tuple_default(const ptype *t) { return is_k(t, K_TUPLE) && t->n == 0 && !t->size; }

static ptype *generalize(const ptype *t)
{
    switch (t->k) {
    case K_NOTUNDEF: case K_TYPE: case K_OPTIONAL: case K_ITERABLE: case K_ITERATOR: case K_INIT:
    case K_SENSITIVE:
        if (!t->t)
            return dflt(t->k);
        return mk_contained(t->k, generalize(t->t));
    case K_ENUM: {
        if (!t->nvals)
            return dflt(K_STRING);
        size_t lo = SIZE_MAX, hi = 0;
        for (size_t i = 0; i < t->nvals; i++) {
            size_t l = utf8_len(t->vals[i].p, t->vals[i].n);
            lo = l < lo ? l : lo;
            hi = l > hi ? l : hi;
        }
        return mk_string_size(mk_intv((int64_t)lo, (int64_t)hi));
    }
    case K_INTEGER: case K_FLOAT: case K_STRING: case K_BOOLEAN: case K_COLLECTION:
        return dflt(t->k);
    case K_STRUCT: {
        if (!t->n)
            return dflt(K_STRUCT);
        ptype **v = xcalloc(t->n, sizeof *v);
        for (size_t i = 0; i < st_count(t); i++) {
            v[2 * i] = t_ref(st_key(t, i));
            v[2 * i + 1] = generalize(st_val(t, i));
        }
        return mk_struct(v, st_count(t));
    }
    case K_TUPLE: {
        if (is_tuple_default(t))
            return dflt(K_TUPLE);
        ptype **v = xcalloc(t->n ? t->n : 1, sizeof *v);
        for (size_t i = 0; i < t->n; i++)
            v[i] = generalize(t->v[i]);
        return mk_tuple(v, t->n, t_ref(t->size));
    }
    case K_CALLABLE:
        if (!t->t && !t->t2 && !t->t3)
            return dflt(K_CALLABLE);
        return mk_callable(t->t ? generalize(t->t) : NULL, t->t2 ? generalize(t->t2) : NULL,
                           t->t3 ? generalize(t->t3) : NULL);
    case K_ARRAY:
        if (is_k(t->t, K_ANY))
            return dflt(K_ARRAY);
        return mk_array(generalize(t->t), NULL);
    case K_HASH:
        if (is_hash_default(t) || is_hash_empty(t))
            return t_ref(t);
        return mk_hash(generalize(t->t), generalize(t->t2), NULL);
    case K_VARIANT: {
        if (!t->n)
            return t_ref(t);
        tlist l = {0};
        for (size_t i = 0; i < t->n; i++)
            tl_push(&l, generalize(t->v[i]));
        return maybe_create(&l);
    }
    default:
        return t_ref(t);
    }
}

static ptype *normalize(const ptype *t);

/* Integer ranges of a Variant merged as PVariantType#merge_ranges does. */
static bool int_merge(const ptype *a, const ptype *b, num *from, num *to)
{
    bool intersect = !(n_lt(a->to, b->from) || n_lt(b->to, a->from));
    /* adjacent?: @to + 1 == o.from || o.to + 1 == @from, where from/to are nil when unbounded */
    bool adjacent = (!n_is_neginf(b->from) && n_eq(n_succ(a->to), b->from)) ||
                    (!n_is_posinf(b->to) && !n_is_neginf(a->from) && n_eq(n_succ(b->to), a->from));
    if (a->k == K_FLOAT)
        adjacent = false;
    if (!intersect && !adjacent)
        return false;
    *from = n_min(a->from, b->from);
    *to = n_max(a->to, b->to);
    return true;
}

static size_t count_kind(const tlist *types, tkind k)
{
    size_t n = 0;
    for (size_t i = 0; i < types->n; i++)
        n += is_k(types->v[i], k);
    return n;
}

static void merge_numbers(tkind k, tlist *types)
{
    if (count_kind(types, k) < 2) /* the list is only rearranged when ranges are merged */
        return;
    tlist ranges = {0}, others = {0};
    for (size_t i = 0; i < types->n; i++)
        tl_push(is_k(types->v[i], k) ? &ranges : &others, types->v[i]);
    free(types->v);
    *types = (tlist){0};
    if (ranges.n > 1) {
        tlist result = {0};
        while (ranges.n) {
            ptype *memo = ranges.v[--ranges.n];
            tlist unmerged = {0};
            for (size_t i = 0; i < ranges.n; i++) {
                num from, to;
                if (int_merge(memo, ranges.v[i], &from, &to)) {
                    ptype *m = k == K_INTEGER ? mk_int(n_copy(from), n_copy(to)) : mk_float(n_copy(from), n_copy(to));
                    t_unref(memo);
                    t_unref(ranges.v[i]);
                    memo = m;
                } else {
                    tl_push(&unmerged, ranges.v[i]);
                }
            }
            tl_push(&result, memo);
            free(ranges.v);
            ranges = unmerged;
        }
        free(ranges.v);
        ranges = result;
    }
    for (size_t i = 0; i < ranges.n; i++)
        tl_push(types, ranges.v[i]);
    for (size_t i = 0; i < others.n; i++)
        tl_push(types, others.v[i]);
    free(ranges.v);
    free(others.v);
}

static void swap_not_undefs(tlist *types)
{
    if (types->n < 2 || count_kind(types, K_NOTUNDEF) < 2)
        return;
    tlist nus = {0}, others = {0};
    for (size_t i = 0; i < types->n; i++)
        tl_push(is_k(types->v[i], K_NOTUNDEF) ? &nus : &others, types->v[i]);
    free(types->v);
    if (nus.n > 1) {
        tlist inner = {0};
        for (size_t i = 0; i < nus.n; i++)
            tl_push(&inner, nus.v[i]->t ? t_ref(nus.v[i]->t) : mk(K_ANY));
        tl_free(&nus);
        ptype *v = maybe_create(&inner);
        ptype *nv = normalize(v);
        t_unref(v);
        tl_push(&others, mk_contained(K_NOTUNDEF, nv));
    } else {
        for (size_t i = 0; i < nus.n; i++)
            tl_push(&others, nus.v[i]);
        free(nus.v);
    }
    *types = others;
}

static bool enum_mergeable(const ptype *t, bool ci)
{
    if (is_k(t, K_ENUM))
        return t->nvals && (bool)t->flag == ci;
    return !ci && is_k(t, K_STRING) && t->has_s;
}

static void merge_enums_pass(tlist *types, bool ci)
{
    size_t count = 0;
    for (size_t i = 0; i < types->n; i++)
        count += enum_mergeable(types->v[i], ci);
    if (types->n < 2 || count < 2)
        return;
    tlist enums = {0}, others = {0};
    for (size_t i = 0; i < types->n; i++)
        tl_push(enum_mergeable(types->v[i], ci) ? &enums : &others, types->v[i]);
    free(types->v);
    if (enums.n > 1) {
        size_t cap = 0;
        for (size_t i = 0; i < enums.n; i++)
            cap += is_k(enums.v[i], K_ENUM) ? enums.v[i]->nvals : 1;
        pstr *vals = xcalloc(cap ? cap : 1, sizeof *vals);
        size_t nv = 0;
        for (size_t i = 0; i < enums.n; i++) {
            const ptype *e = enums.v[i];
            if (is_k(e, K_STRING)) {
                vals[nv++] = e->s;
                continue;
            }
            for (size_t j = 0; j < e->nvals; j++)
                vals[nv++] = e->vals[j];
        }
        if (ci) { /* values are downcased (ASCII here) */
            for (size_t i = 0; i < nv; i++) {
                pstr d = ps_dup(vals[i].p, vals[i].n);
                for (size_t j = 0; j < d.n; j++)
                    d.p[j] = (char)tolower((unsigned char)d.p[j]);
                vals[i] = d;
            }
        }
        ptype *m = mk_enum(vals, nv, ci);
        if (ci)
            for (size_t i = 0; i < nv; i++)
                free(vals[i].p);
        free(vals);
        tl_free(&enums);
        tl_push(&others, m);
    } else {
        for (size_t i = 0; i < enums.n; i++)
            tl_push(&others, enums.v[i]);
        free(enums.v);
    }
    *types = others;
}

static void merge_patterns(tlist *types)
{
    if (types->n < 2 || count_kind(types, K_PATTERN) < 2)
        return;
    tlist pats = {0}, others = {0};
    for (size_t i = 0; i < types->n; i++)
        tl_push(is_k(types->v[i], K_PATTERN) ? &pats : &others, types->v[i]);
    free(types->v);
    if (pats.n > 1) {
        tlist res = {0};
        for (size_t i = 0; i < pats.n; i++)
            for (size_t j = 0; j < pats.v[i]->n; j++)
                tl_push(&res, t_ref(pats.v[i]->v[j]));
        tl_uniq(&res);
        tl_free(&pats);
        tl_push(&others, mk_pattern(res.v, res.n));
    } else {
        for (size_t i = 0; i < pats.n; i++)
            tl_push(&others, pats.v[i]);
        free(pats.v);
    }
    *types = others;
}

static ptype *normalize_variant(const ptype *t)
{
    if (!t->n)
        return t_ref(t);
    tlist types = {0};
    bool has_undef = false, modified = false;
    for (size_t i = 0; i < t->n; i++) {
        ptype *n = normalize(t->v[i]);
        has_undef |= is_k(n, K_UNDEF) || is_k(n, K_OPTIONAL);
        modified |= n != t->v[i];
        tl_push(&types, n);
    }
    if (types.n == 1) {
        ptype *r = types.v[0];
        free(types.v);
        return r;
    }
    if (has_undef) {
        /* Optional[Variant[<the others, Optional unwrapped>]].normalize */
        tlist rest = {0};
        for (size_t i = 0; i < types.n; i++) {
            ptype *x = types.v[i];
            if (is_k(x, K_UNDEF))
                continue;
            tl_push(&rest, is_k(x, K_OPTIONAL) ? (x->t ? t_ref(x->t) : mk(K_ANY)) : t_ref(x));
        }
        tl_free(&types);
        ptype *o = mk_contained(K_OPTIONAL, maybe_create(&rest));
        ptype *r = normalize(o);
        t_unref(o);
        return r;
    }
    /* flatten_variants */
    tlist flat = {0};
    for (size_t i = 0; i < types.n; i++) {
        ptype *x = types.v[i];
        if (is_k(x, K_VARIANT)) {
            for (size_t j = 0; j < x->n; j++)
                tl_push(&flat, t_ref(x->v[j]));
            t_unref(x);
        } else {
            tl_push(&flat, x);
        }
    }
    free(types.v);
    size_t before_merge = flat.n;
    swap_not_undefs(&flat);
    merge_enums_pass(&flat, false);
    merge_enums_pass(&flat, true);
    merge_patterns(&flat);
    merge_numbers(K_INTEGER, &flat);
    merge_numbers(K_FLOAT, &flat);
    if (flat.n == 1) {
        ptype *r = flat.v[0];
        free(flat.v);
        return r;
    }
    if (!modified && flat.n == before_merge) {
        tl_free(&flat);
        return t_ref(t);
    }
    return maybe_create(&flat);
}

/* normalize keeps Ruby's object identity: a type whose parts did not change is returned itself,
 * which matters because constructors such as Sensitive's generalize their argument again. */
static ptype *normalize_contained(const ptype *t)
{
    if (!t->t)
        return dflt(t->k);
    ptype *inner = normalize(t->t), *n;
    if (inner == t->t) {
        t_unref(inner);
        n = t_ref(t);
    } else {
        n = mk_contained(t->k, inner);
    }
    if (!n->t)
        return n;
    if (t->k == K_NOTUNDEF) {
        if (is_k(n->t, K_OPTIONAL)) { /* no point in an Optional inside a NotUndef */
            ptype *x = mk_contained(K_NOTUNDEF, t_ref(n->t->t));
            t_unref(n);
            ptype *r = normalize(x);
            t_unref(x);
            return r;
        }
        if (!accepts_undef(n->t)) { /* NotUndef anyway */
            ptype *r = t_ref(n->t);
            t_unref(n);
            return r;
        }
    } else if (t->k == K_OPTIONAL) {
        if (is_k(n->t, K_NOTUNDEF)) {
            ptype *x = mk_contained(K_OPTIONAL, t_ref(n->t->t));
            t_unref(n);
            ptype *r = normalize(x);
            t_unref(x);
            return r;
        }
        if (accepts_undef(n->t)) { /* Optional anyway */
            ptype *r = t_ref(n->t);
            t_unref(n);
            return r;
        }
    }
    return n;
}

/* Normalizes each of n types; true when none changed (then *out holds the same pointers). */
static bool normalize_all(ptype *const *in, size_t n, size_t step, ptype **out)
{
    bool same = true;
    for (size_t i = 0; i < n; i++) {
        if (step == 2 && i % 2 == 0) { /* struct keys stay */
            out[i] = t_ref(in[i]);
            continue;
        }
        out[i] = normalize(in[i]);
        same &= out[i] == in[i];
    }
    return same;
}

static void unref_all(ptype **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        t_unref(v[i]);
    free(v);
}

static ptype *normalize(const ptype *t)
{
    switch (t->k) {
    case K_NOTUNDEF: case K_TYPE: case K_OPTIONAL: case K_ITERABLE: case K_ITERATOR: case K_INIT:
    case K_SENSITIVE:
        return normalize_contained(t);
    case K_COLLECTION:
        return dflt(K_COLLECTION); /* PCollectionType#normalize drops the size */
    case K_STRUCT: case K_TUPLE: {
        if ((t->k == K_STRUCT && !t->n) || is_tuple_default(t))
            return dflt(t->k);
        ptype **v = xcalloc(t->n ? t->n : 1, sizeof *v);
        if (normalize_all(t->v, t->n, t->k == K_STRUCT ? 2 : 1, v)) {
            unref_all(v, t->n);
            return t_ref(t);
        }
        return t->k == K_STRUCT ? mk_struct(v, st_count(t)) : mk_tuple(v, t->n, t_ref(t->size));
    }
    case K_ARRAY: {
        if (is_k(t->t, K_ANY))
            return dflt(K_ARRAY); /* Array[Any, ...] normalizes to Array, dropping the size */
        ptype *e = normalize(t->t);
        if (e == t->t) {
            t_unref(e);
            return t_ref(t);
        }
        return mk_array(e, t_ref(t->size));
    }
    case K_HASH: {
        if (is_hash_default(t) || is_hash_empty(t))
            return t_ref(t);
        ptype *k = normalize(t->t), *v = normalize(t->t2);
        if (!t->size && k == t->t && v == t->t2) {
            t_unref(k);
            t_unref(v);
            return t_ref(t);
        }
        return mk_hash(k, v, t_ref(t->size));
    }
    case K_VARIANT:
        return normalize_variant(t);
    case K_CALLABLE: {
        if (!t->t && !t->t2 && !t->t3)
            return dflt(K_CALLABLE);
        ptype *p = t->t ? normalize(t->t) : NULL, *b = t->t2 ? normalize(t->t2) : NULL,
              *r = t->t3 ? normalize(t->t3) : NULL;
        if (p == t->t && b == t->t2 && r == t->t3) {
            t_unref(p);
            t_unref(b);
            t_unref(r);
            return t_ref(t);
        }
        return mk_callable(p, b, r);
    }
    default:
        return t_ref(t);
    }
}

/* ======================================================================================
 * Assignability (PAnyType#assignable? and each type's _assignable?)
 * ====================================================================================== */

/* Guards alias recursion: a (this, that) pair already being compared counts as assignable,
 * which is what Puppet's RecursionGuard concludes for self-recursive aliases. */
struct guard {
    const ptype *this_[MAX_ALIAS_DEPTH], *that_[MAX_ALIAS_DEPTH];
    bool via_that[MAX_ALIAS_DEPTH]; /* expanding the alias on the other side */
    int n;
};

static bool asg_base(const ptype *t, const ptype *o, guard *g);
static ptype *builtin_alias(const char *name, size_t n);
static bool iterable(const ptype *t, int depth);
static ptype *iterable_type(const ptype *t, int depth);
static bool re_type_match(ptype *re, const char *s, size_t n);

/* Runs assignable(t, o) with the pair pushed on the guard; true when already present. */
static bool asg_guarded(const ptype *t, const ptype *o, guard *g, bool via_that)
{
    guard local = {.n = 0};
    if (!g)
        g = &local;
    for (int i = 0; i < g->n; i++)
        if (g->this_[i] == t && g->that_[i] == o && g->via_that[i] == via_that)
            return true;
    if (g->n >= MAX_ALIAS_DEPTH)
        return true;
    g->this_[g->n] = t;
    g->that_[g->n] = o;
    g->via_that[g->n] = via_that;
    g->n++;
    bool r = via_that ? assignable(t, o->t, g) : asg_base(t, o, g);
    g->n--;
    return r;
}

static bool assignable(const ptype *t, const ptype *o, guard *g)
{
    if (!t || !o)
        return false;
    switch (t->k) {
    case K_UNIT:
        return true;
    case K_VARIANT:
        /* an empty Variant does not match Undef (it is void) */
        if (o->k == K_UNDEF && t->n == 0)
            return false;
        if (o->k != K_VARIANT)
            return asg_base(t, o, g);
        if (t->n == 0)
            return true;
        if (o->n == 0)
            return false;
        for (size_t i = 0; i < o->n; i++)
            if (!asg_base(t, o->v[i], g))
                return false;
        return true;
    case K_ALIAS:
        return asg_guarded(t, o, g, false);
    default:
        return asg_base(t, o, g);
    }
}

static bool accepts_undef(const ptype *t) { return assignable(t, D(K_UNDEF), NULL); }

static bool asg_impl(const ptype *t, const ptype *o, guard *g);

static bool asg_base(const ptype *t, const ptype *o, guard *g)
{
    switch (o->k) {
    case K_UNIT:
        return true;
    case K_ALIAS:
        if (!o->t)
            return asg_impl(t, o, g);
        return asg_guarded(t, o, g, true);
    case K_VARIANT:
        if (t->k == K_ANY)
            return true;
        if (t->k == K_NOTUNDEF && o->n == 0)
            return asg_impl(t, o, g);
        if (o->n == 0)
            return false;
        for (size_t i = 0; i < o->n; i++)
            if (!assignable(t, o->v[i], g))
                return false;
        return true;
    case K_OPTIONAL:
        return assignable(t, D(K_UNDEF), g) && (!o->t || assignable(t, o->t, g));
    case K_NOTUNDEF:
        if (o->t && !accepts_undef(o->t))
            return assignable(t, o->t, g);
        return asg_impl(t, o, g);
    default:
        return asg_impl(t, o, g);
    }
}

/* PStringType#derived_size_type */
static ptype *derived_size(const ptype *s)
{
    if (s->size)
        return t_ref(s->size);
    if (s->has_s) {
        int64_t l = (int64_t)utf8_len(s->s.p, s->s.n);
        return mk_intv(l, l);
    }
    return default_size();
}

static bool enum_has(const ptype *e, const char *s, size_t n)
{
    for (size_t i = 0; i < e->nvals; i++)
        if (e->flag ? ascii_casecmp_eq(e->vals[i].p, e->vals[i].n, s, n)
                    : (e->vals[i].n == n && memcmp(e->vals[i].p, s, n) == 0))
            return true;
    return false;
}

static bool size_assignable(const ptype *size_s, const ptype *size_o, guard *g)
{
    ptype *ds = size_s ? NULL : default_size(), *dso = size_o ? NULL : default_size();
    bool r = assignable(size_s ? size_s : ds, size_o ? size_o : dso, g);
    t_unref(ds);
    t_unref(dso);
    return r;
}

static bool size_assignable_n(const ptype *size_s, int64_t from, int64_t to, guard *g)
{
    ptype *o = mk_intv(from, to);
    bool r = size_assignable(size_s, o, g);
    t_unref(o);
    return r;
}

static bool range_contains(const ptype *r, num v)
{
    return n_le(r->from, v) && n_le(v, r->to);
}

static bool asg_string(const ptype *t, const ptype *o, guard *g)
{
    if (t->size) {
        /* a size constrained String */
        if (o->k == K_STRING) {
            ptype *d = derived_size(o);
            bool r = assignable(t->size, d, g);
            t_unref(d);
            return r;
        }
        if (o->k == K_ENUM) {
            if (!o->nvals)
                return size_assignable(t->size, NULL, g);
            size_t lo = SIZE_MAX, hi = 0;
            for (size_t i = 0; i < o->nvals; i++) {
                size_t l = utf8_len(o->vals[i].p, o->vals[i].n);
                lo = l < lo ? l : lo;
                hi = l > hi ? l : hi;
            }
            return n_le(t->size->from, n_int((int64_t)lo)) && n_le(n_int((int64_t)hi), t->size->to);
        }
        if (o->k == K_PATTERN)
            return size_assignable(t->size, NULL, g);
        return false;
    }
    if (o->k == K_STRING)
        return !t->has_s || (o->has_s && ps_eq(t->s, o->s)) ;
    if (o->k == K_ENUM)
        return !t->has_s || (o->nvals == 1 && !o->flag);
    if (o->k == K_PATTERN)
        return !t->has_s;
    return false;
}

static bool asg_pattern(const ptype *t, const ptype *o)
{
    if (t_eq(t, o))
        return true;
    if (o->k == K_STRING) {
        if (!o->has_s)
            return t->n == 0;
        if (t->n == 0)
            return true;
        for (size_t i = 0; i < t->n; i++)
            if (re_type_match(t->v[i], o->s.p, o->s.n))
                return true;
        return false;
    }
    if (o->k == K_ENUM) {
        if (!o->nvals)
            return t->n == 0;
        if (t->n == 0)
            return true;
        for (size_t j = 0; j < o->nvals; j++) {
            bool any = false;
            for (size_t i = 0; i < t->n && !any; i++)
                any = re_type_match(t->v[i], o->vals[j].p, o->vals[j].n);
            if (!any)
                return false;
        }
        return true;
    }
    if (o->k == K_PATTERN)
        return t->n == 0;
    return false;
}

static bool asg_enum(const ptype *t, const ptype *o)
{
    if (t_eq(t, o))
        return true;
    if (!t->nvals && (o->k == K_STRING || o->k == K_ENUM || o->k == K_PATTERN))
        return true;
    if (o->k == K_STRING)
        return o->has_s && enum_has(t, o->s.p, o->s.n);
    if (o->k == K_ENUM) {
        if (!o->nvals || (!t->flag && o->flag))
            return false;
        for (size_t i = 0; i < o->nvals; i++)
            if (!enum_has(t, o->vals[i].p, o->vals[i].n))
                return false;
        return true;
    }
    return false;
}

static bool asg_struct(const ptype *t, const ptype *o, guard *g)
{
    if (o->k == K_STRUCT) {
        size_t matched = 0;
        for (size_t i = 0; i < st_count(t); i++) {
            pstr name = st_name(t, i);
            const ptype *e2k = NULL, *e2v = NULL;
            for (size_t j = 0; j < st_count(o); j++)
                if (ps_eq(st_name(o, j), name)) {
                    e2k = st_key(o, j);
                    e2v = st_val(o, j);
                }
            if (!e2k) {
                if (!accepts_undef(st_key(t, i)))
                    return false;
            } else {
                matched++;
                if (!assignable(st_key(t, i), e2k, g) || !assignable(st_val(t, i), e2v, g))
                    return false;
            }
        }
        return matched == st_count(o);
    }
    if (o->k == K_HASH) {
        int64_t required = 0;
        for (size_t i = 0; i < st_count(t); i++) {
            const ptype *k = st_key(t, i);
            if (accepts_undef(k))
                continue;
            required++;
            if (!assignable(st_val(t, i), o->t2, g))
                return false;
            ptype *gk = generalize(k);
            bool ok = assignable(gk, o->t, g);
            t_unref(gk);
            if (!ok)
                return false;
        }
        ptype *r = mk_intv(required, (int64_t)st_count(t));
        bool ok = size_assignable(r, o->size, g);
        t_unref(r);
        return ok;
    }
    return false;
}

/* PTupleType#size_range as an Integer type. */
static ptype *tuple_size_type(const ptype *t)
{
    if (t->size)
        return t_ref(t->size);
    if (t->n == 0)
        return default_size();
    return mk_intv((int64_t)t->n, (int64_t)t->n);
}

static bool asg_tuple(const ptype *t, const ptype *o, guard *g)
{
    if (t_eq(t, o))
        return true;
    if (o->k != K_TUPLE && o->k != K_ARRAY)
        return false;
    ptype *size_s = tuple_size_type(t);
    bool r = true;
    if (o->k == K_TUPLE) {
        ptype *size_o = tuple_size_type(o);
        r = assignable(size_s, size_o, g);
        t_unref(size_o);
        if (r && t->n) {
            if (o->n == 0) {
                r = n_eq(size_s->from, n_int(0));
            } else {
                for (size_t i = 0; i < o->n && r; i++)
                    r = assignable(t->v[i < t->n ? i : t->n - 1], o->v[i], g);
            }
        }
    } else {
        r = size_assignable(size_s, o->size, g);
        if (r && t->n) {
            /* [s_types.size, size_o.range[1]].min entries must accept the element type */
            num max = o->size ? o->size->to : n_posinf();
            size_t count = t->n;
            if (n_lt(max, n_int((int64_t)count)))
                count = max.k == N_INT && max.i > 0 ? (size_t)max.i : 0;
            for (size_t i = 0; i < count && r; i++)
                r = assignable(t->v[i], o->t, g);
        }
    }
    t_unref(size_s);
    return r;
}

static bool asg_array(const ptype *t, const ptype *o, guard *g)
{
    if (o->k == K_TUPLE) {
        ptype *size_o = o->size ? t_ref(o->size) : mk_intv((int64_t)o->n, (int64_t)o->n);
        bool r = size_assignable(t->size, size_o, g);
        t_unref(size_o);
        for (size_t i = 0; i < o->n && r; i++)
            r = assignable(t->t, o->v[i], g);
        return r;
    }
    if (o->k == K_ARRAY)
        return size_assignable(t->size, o->size, g) && assignable(t->t, o->t, g);
    return false;
}

static bool value_instance_of_string(const ptype *t, pstr s, guard *g);

static bool asg_hash(const ptype *t, const ptype *o, guard *g)
{
    if (o->k == K_HASH) {
        if ((!t->size || n_eq(t->size->from, n_int(0))) && is_hash_empty(o))
            return true;
        return assignable(t->t, o->t, g) && assignable(t->t2, o->t2, g) && size_assignable(t->size, o->size, g);
    }
    if (o->k == K_STRUCT) {
        ptype *ds = t->size ? NULL : default_size();
        bool r = range_contains(t->size ? t->size : ds, n_int((int64_t)st_count(o)));
        t_unref(ds);
        for (size_t i = 0; i < st_count(o) && r; i++)
            r = value_instance_of_string(t->t, st_name(o, i), g) && assignable(t->t2, st_val(o, i), g);
        return r;
    }
    return false;
}

static bool asg_callable(const ptype *t, const ptype *o, guard *g)
{
    if (o->k != K_CALLABLE)
        return false;
    if (t->t3 && !assignable(t->t3, o->t3 ? o->t3 : D(K_ANY), g))
        return false;
    if (!t->t)
        return true;
    if (!o->t || !assignable(o->t, t->t, g))
        return false;
    const ptype *tb = t->t2 ? t->t2 : D(K_UNDEF), *ob = o->t2 ? o->t2 : D(K_UNDEF);
    return assignable(ob, tb, g);
}

static bool asg_impl(const ptype *t, const ptype *o, guard *g)
{
    switch (t->k) {
    case K_ANY: case K_UNIT:
        return true;
    case K_INIT:
        return is_a(o, K_INIT) || (!t->t && assignable(builtin_alias("RichData", 8), o, g));
    case K_UNDEF: case K_DEFAULT: case K_CATALOGENTRY: case K_BINARY: case K_URI: case K_OBJECT:
    case K_TYPESET: case K_SEMVERRANGE: case K_SEMVER: case K_TIMESPAN: case K_TIMESTAMP:
        return is_a(o, t->k);
    case K_NOTUNDEF:
        return !accepts_undef(o) && (!t->t || assignable(t->t, o, g));
    case K_TYPE:
        if (o->k != K_TYPE)
            return false;
        if (!t->t)
            return true;
        return o->t && assignable(t->t, o->t, g);
    case K_SCALAR:
        return is_a(o, K_SCALAR) || assignable(D(K_STRING), o, g) || assignable(D(K_INTEGER), o, g) ||
               assignable(D(K_FLOAT), o, g) || assignable(D(K_BOOLEAN), o, g) ||
               assignable(D(K_REGEXP), o, g) || assignable(D(K_SEMVER), o, g) ||
               assignable(D(K_SEMVERRANGE), o, g) || assignable(D(K_TIMESPAN), o, g) ||
               assignable(D(K_TIMESTAMP), o, g);
    case K_SCALARDATA:
        return is_a(o, K_SCALARDATA) || assignable(D(K_STRING), o, g) || assignable(D(K_INTEGER), o, g) ||
               assignable(D(K_FLOAT), o, g) || assignable(D(K_BOOLEAN), o, g);
    case K_ENUM:
        return asg_enum(t, o);
    case K_NUMERIC: case K_INTEGER: case K_FLOAT:
        /* o.is_a?(self.class) and the range of o within the range of t */
        return is_a(o, t->k) && n_le(t->from, o->from) && n_le(o->to, t->to);
    case K_COLLECTION:
        if (is_a(o, K_COLLECTION))
            return size_assignable(t->size, o->size, g);
        if (o->k == K_TUPLE) {
            ptype *so = o->size ? t_ref(o->size) : mk_intv((int64_t)o->n, (int64_t)o->n);
            bool r = size_assignable(t->size, so, g);
            t_unref(so);
            return r;
        }
        if (o->k == K_STRUCT)
            return size_assignable_n(t->size, (int64_t)st_count(o), (int64_t)st_count(o), g);
        return false;
    case K_ITERABLE:
        if (!t->t || assignable(t->t, D(K_ANY), g))
            return iterable(o, 0);
        else {
            ptype *it = iterable_type(o, 0);
            bool r = it && it->t && assignable(t->t, it->t, g);
            t_unref(it);
            return r;
        }
    case K_ITERATOR:
        return o->k == K_ITERATOR && (!t->t || (o->t && assignable(t->t, o->t, g)));
    case K_STRING:
        return asg_string(t, o, g);
    case K_REGEXP:
        return o->k == K_REGEXP && (!t->has_s || (o->has_s && ps_eq(t->s, o->s)));
    case K_PATTERN:
        return asg_pattern(t, o);
    case K_BOOLEAN:
        return o->k == K_BOOLEAN && (t->flag < 0 || t->flag == o->flag);
    case K_STRUCT:
        return asg_struct(t, o, g);
    case K_TUPLE:
        return asg_tuple(t, o, g);
    case K_CALLABLE:
        return asg_callable(t, o, g);
    case K_ARRAY:
        return asg_array(t, o, g);
    case K_HASH:
        return asg_hash(t, o, g);
    case K_VARIANT:
        for (size_t i = 0; i < t->n; i++)
            if (assignable(t->v[i], o, g))
                return true;
        return false;
    case K_OPTIONAL:
        if (o->k == K_UNDEF || !t->t)
            return true;
        if (o->k == K_OPTIONAL)
            return assignable(t->t, o->t ? o->t : D(K_ANY), g);
        return assignable(t->t, o, g);
    case K_SENSITIVE:
        return o->k == K_SENSITIVE && assignable(t->t, o->t, g);
    case K_TYPEREF:
        return t_eq(t, o);
    case K_ALIAS:
        return t->t ? assignable(t->t, o, g) : t_eq(t, o);
    case K_CLASS:
        return o->k == K_CLASS && (!t->has_s || (o->has_s && ps_eq(t->s, o->s)));
    case K_RESOURCE:
        return o->k == K_RESOURCE &&
               (!t->has_s || (o->has_s && ascii_casecmp_eq(t->s.p, t->s.n, o->s.p, o->s.n)));
    case K_RUNTIME:
        if (o->k != K_RUNTIME)
            return false;
        if (t->has_rt && !(o->has_rt && ps_eq(t->rt, o->rt)))
            return false;
        if (!t->has_s)
            return true;
        return o->has_s && ps_eq(t->s, o->s);
    default:
        return false;
    }
}

/* ---- iterable? and iterable_type ---- */

static bool iterable(const ptype *t, int depth)
{
    if (depth > MAX_ALIAS_DEPTH)
        return false;
    switch (t->k) {
    case K_STRING: case K_ENUM: case K_INTEGER: case K_COLLECTION: case K_ARRAY: case K_HASH:
    case K_STRUCT: case K_TUPLE: case K_ITERABLE: case K_ITERATOR:
        return true;
    case K_TYPE:
        return is_k(t->t, K_ENUM) || (is_k(t->t, K_INTEGER) && !n_is_neginf(t->t->from) && !n_is_posinf(t->t->to));
    case K_ALIAS:
        return t->t && iterable(t->t, depth + 1);
    default:
        return false;
    }
}

static ptype *key_pair_tuple(ptype *k, ptype *v)
{
    ptype **types = xcalloc(2, sizeof *types);
    types[0] = k;
    types[1] = v;
    return mk_tuple(types, 2, mk_intv(2, 2));
}

static ptype *iterable_type(const ptype *t, int depth)
{
    if (depth > MAX_ALIAS_DEPTH)
        return NULL;
    switch (t->k) {
    case K_STRING: case K_ENUM:
        return mk_contained(K_ITERABLE, mk_string_size(mk_intv(1, 1)));
    case K_INTEGER:
        return mk_contained(K_ITERABLE, dflt(K_INTEGER));
    case K_ARRAY:
        return is_k(t->t, K_ANY) ? dflt(K_ITERABLE) : mk_contained(K_ITERABLE, t_ref(t->t));
    case K_HASH:
        if (is_hash_default(t) || is_hash_empty(t))
            return mk_contained(K_ITERABLE, key_pair_tuple(mk(K_UNIT), mk(K_UNIT)));
        return mk_contained(K_ITERABLE, key_pair_tuple(t_ref(t->t), t_ref(t->t2)));
    case K_STRUCT: {
        if (!t->n)
            return mk_contained(K_ITERABLE, key_pair_tuple(mk(K_UNIT), mk(K_UNIT)));
        tlist ks = {0}, vs = {0};
        for (size_t i = 0; i < st_count(t); i++) {
            tl_push(&ks, t_ref(st_key(t, i)));
            tl_push(&vs, t_ref(st_val(t, i)));
        }
        return mk_contained(K_ITERABLE, key_pair_tuple(maybe_create(&ks), maybe_create(&vs)));
    }
    case K_TUPLE: {
        tlist l = {0};
        for (size_t i = 0; i < t->n; i++)
            tl_push(&l, t_ref(t->v[i]));
        return mk_contained(K_ITERABLE, maybe_create(&l));
    }
    case K_ITERABLE:
        return t_ref(t);
    case K_ITERATOR:
        return t->t ? mk_contained(K_ITERABLE, t_ref(t->t)) : dflt(K_ITERABLE);
    case K_TYPE:
        if (iterable(t, depth))
            return mk_contained(K_ITERABLE, t_ref(t->t));
        return NULL;
    case K_ALIAS:
        return t->t ? iterable_type(t->t, depth + 1) : NULL;
    default:
        return NULL;
    }
}

/* ======================================================================================
 * Values: instance? and type inference
 * ====================================================================================== */

#define MAX_VALUE_DEPTH 1000

/* A Ruby Symbol :undef / :default is Puppet's undef / default (Psych loads ":undef" as one). */
static bool sym_is(const hv *v, const char *name)
{
    return hv_is(v, HV_SYMBOL) && strcmp(hv_str_ptr(v), name) == 0;
}
static bool v_is_undef(const hv *v) { return !v || hv_is(v, HV_UNDEF) || sym_is(v, "undef"); }
static bool v_is_default(const hv *v) { return sym_is(v, "default"); }

static bool re_type_match(ptype *re, const char *s, size_t n)
{
    if (!re->re && !re->re_failed) {
        re->re = re_compile(re->has_s ? re->s.p : "", re->has_s ? re->s.n : 0, NULL);
        re->re_failed = !re->re;
    }
    return re->re && re_search(re->re, s, n);
}

static num v_num(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_INT: return n_int(hv_int_val(v));
    case HV_FLOAT: return n_float(hv_float_val(v));
    default: {
        num n = {N_BIG, 0, 0, hv_incref((hv *)v)};
        return n;
    }
    }
}

static bool instance(const ptype *t, const hv *v, int depth);
static ptype *infer(const hv *v, int depth);
static ptype *builtin_alias(const char *name, size_t n);

static bool in_range(const ptype *t, const hv *v)
{
    num n = v_num(v);
    bool r = range_contains(t, n);
    n_drop(&n);
    return r;
}

/* Whether the type inferred for v is assignable to t (used by types whose instance? does that). */
static bool instance_by_infer(const ptype *t, const hv *v, int depth)
{
    ptype *it = infer(v, depth);
    bool r = assignable(t, it, NULL);
    t_unref(it);
    return r;
}

static bool value_instance_of_string(const ptype *t, pstr s, guard *g)
{
    hv *v = hv_strn(s.p, s.n);
    bool r = instance(t, v, 0);
    hv_decref(v);
    return r;
}

static bool instance(const ptype *t, const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH)
        return false;
    hv_kind vk = hv_kind_of(v);
    switch (t->k) {
    case K_ANY: case K_UNIT:
        return true;
    case K_UNDEF:
        return v_is_undef(v);
    case K_DEFAULT:
        return v_is_default(v);
    case K_NOTUNDEF:
        return !v_is_undef(v) && (!t->t || instance(t->t, v, depth + 1));
    case K_OPTIONAL:
        return v_is_undef(v) || (t->t && instance(t->t, v, depth + 1));
    case K_SCALAR:
        if (hv_is_scalar(v))
            return true;
        if (vk == HV_ARRAY || vk == HV_HASH || v_is_undef(v))
            return false;
        return instance_by_infer(t, v, depth);
    case K_SCALARDATA:
        return hv_is_scalar(v);
    case K_NUMERIC:
        return (vk == HV_INT || vk == HV_BIGINT || vk == HV_FLOAT) && in_range(t, v);
    case K_INTEGER:
        return (vk == HV_INT || vk == HV_BIGINT) && in_range(t, v);
    case K_FLOAT:
        return vk == HV_FLOAT && in_range(t, v);
    case K_STRING:
        if (vk != HV_STRING)
            return false;
        if (t->size)
            return range_contains(t->size, n_int((int64_t)utf8_len(hv_str_ptr(v), hv_str_len(v))));
        return !t->has_s || (t->s.n == hv_str_len(v) && memcmp(t->s.p, hv_str_ptr(v), t->s.n) == 0);
    case K_ENUM:
        return vk == HV_STRING && enum_has(t, hv_str_ptr(v), hv_str_len(v));
    case K_PATTERN:
        if (vk != HV_STRING)
            return false;
        if (!t->n)
            return true;
        for (size_t i = 0; i < t->n; i++)
            if (re_type_match(t->v[i], hv_str_ptr(v), hv_str_len(v)))
                return true;
        return false;
    case K_BOOLEAN:
        return vk == HV_BOOL && (t->flag < 0 || t->flag == (int)hv_bool_val(v));
    case K_COLLECTION:
        if (vk == HV_ARRAY)
            return !t->size || range_contains(t->size, n_int((int64_t)hv_array_len(v)));
        if (vk == HV_HASH)
            return !t->size || range_contains(t->size, n_int((int64_t)hv_hash_len(v)));
        return false;
    case K_ARRAY:
        if (vk != HV_ARRAY)
            return false;
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (!instance(t->t, hv_array_get(v, i), depth + 1))
                return false;
        return !t->size || range_contains(t->size, n_int((int64_t)hv_array_len(v)));
    case K_HASH:
        if (vk != HV_HASH)
            return false;
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!instance(t->t, hv_hash_key_at(v, i), depth + 1))
                return false;
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!instance(t->t2, hv_hash_val_at(v, i), depth + 1))
                return false;
        return !t->size || range_contains(t->size, n_int((int64_t)hv_hash_len(v)));
    case K_TUPLE: {
        if (vk != HV_ARRAY)
            return false;
        size_t len = hv_array_len(v);
        if (t->size) {
            if (!range_contains(t->size, n_int((int64_t)len)))
                return false;
        } else if (t->n && t->n != len) {
            return false;
        }
        if (!t->n)
            return true;
        for (size_t i = 0; i < len; i++)
            if (!instance(t->v[i < t->n ? i : t->n - 1], hv_array_get(v, i), depth + 1))
                return false;
        return true;
    }
    case K_STRUCT: {
        if (vk != HV_HASH)
            return false;
        size_t matched = 0;
        for (size_t i = 0; i < st_count(t); i++) {
            pstr name = st_name(t, i);
            hv *x = hv_hash_getsn(v, name.p, name.n);
            if (!x) {
                if (!accepts_undef(st_key(t, i)))
                    return false;
            } else {
                matched++;
                if (!instance(st_val(t, i), x, depth + 1))
                    return false;
            }
        }
        return matched == hv_hash_len(v);
    }
    case K_VARIANT:
        for (size_t i = 0; i < t->n; i++)
            if (instance(t->v[i], v, depth + 1))
                return true;
        return false;
    case K_SENSITIVE:
        return vk == HV_SENSITIVE && instance(t->t, hv_sensitive_inner(v), depth + 1);
    case K_ITERABLE:
        if (!t->t || assignable(t->t, D(K_ANY), NULL)) {
            if (vk == HV_STRING || vk == HV_HASH || vk == HV_ARRAY)
                return true;
            if (vk == HV_INT)
                return hv_int_val(v) >= 0;
            if (vk == HV_BIGINT)
                return big_sign(v) > 0;
            return false;
        }
        return instance_by_infer(t, v, depth);
    case K_RUNTIME: case K_CATALOGENTRY: case K_CLASS: case K_RESOURCE:
        return instance_by_infer(t, v, depth);
    case K_ALIAS:
        return t->t && instance(t->t, v, depth + 1);
    case K_INIT: /* Init without a type: RichData */
        return !t->t && instance(builtin_alias("RichData", 8), v, depth + 1);
    default:
        /* Regexp, Type, Callable, Iterator, TypeReference, SemVer, Timespan, Binary, URI, Object,
         * ...: no value of ours is an instance */
        return false;
    }
}

/* TypeCalculator#common_type, for the types inference produces. */
static ptype *common_type(ptype *t1, ptype *t2);

static ptype *data_alias(void);

/* TypeCalculator#infer: the single common type of a value (arrays and hashes reduce their
 * elements to a common type). */
static ptype *infer(const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH)
        return mk(K_ANY);
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        return mk(K_UNDEF);
    case HV_BOOL:
        return mk_bool(hv_bool_val(v));
    case HV_INT: case HV_BIGINT: case HV_FLOAT: {
        num a = v_num(v), b = n_copy(a);
        return hv_is(v, HV_FLOAT) ? mk_float(a, b) : mk_int(a, b);
    }
    case HV_STRING:
        return mk_string_val(hv_str_ptr(v), hv_str_len(v));
    case HV_SENSITIVE:
        return mk_contained(K_SENSITIVE, infer(hv_sensitive_inner(v), depth + 1));
    case HV_SYMBOL:
        if (sym_is(v, "default"))
            return mk(K_DEFAULT);
        if (sym_is(v, "undef"))
            return mk(K_UNDEF);
        return mk_runtime("ruby", 4, true, "Symbol", 6, true);
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        if (!n)
            return array_empty();
        ptype *c = NULL;
        for (size_t i = 0; i < n; i++)
            c = common_type(c, infer(hv_array_get(v, i), depth + 1));
        return mk_array(c, mk_intv((int64_t)n, (int64_t)n));
    }
    case HV_HASH: {
        size_t n = hv_hash_len(v);
        if (!n)
            return hash_empty();
        ptype *k = NULL, *e = NULL;
        for (size_t i = 0; i < n; i++)
            k = common_type(k, infer(hv_hash_key_at(v, i), depth + 1));
        for (size_t i = 0; i < n; i++)
            e = common_type(e, infer(hv_hash_val_at(v, i), depth + 1));
        return mk_hash(k, e, mk_intv((int64_t)n, (int64_t)n));
    }
    }
    return mk(K_ANY);
}

static ptype *infer_set(const hv *v, int depth);

static ptype *unwrap_single_variant(ptype *t)
{
    if (is_k(t, K_VARIANT) && t->n == 1) {
        ptype *r = t_ref(t->v[0]);
        t_unref(t);
        return r;
    }
    return t;
}

/* TypeCalculator#infer_set: arrays become Tuples of their elements' types, hashes with non-empty
 * String keys become Structs. */
static ptype *infer_set(const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH)
        return mk(K_ANY);
    if (hv_is(v, HV_ARRAY)) {
        size_t n = hv_array_len(v);
        if (!n)
            return array_empty();
        ptype **types = xcalloc(n, sizeof *types);
        for (size_t i = 0; i < n; i++)
            types[i] = infer_set(hv_array_get(v, i), depth + 1);
        return mk_tuple(types, n, NULL);
    }
    if (hv_is(v, HV_HASH)) {
        size_t n = hv_hash_len(v);
        if (!n)
            return hash_empty();
        bool all_strings = true;
        for (size_t i = 0; i < n && all_strings; i++) {
            const hv *k = hv_hash_key_at(v, i);
            all_strings = hv_is(k, HV_STRING) && hv_str_len(k) > 0;
        }
        if (all_strings) {
            ptype **pairs = xcalloc(2 * n, sizeof *pairs);
            for (size_t i = 0; i < n; i++) {
                const hv *k = hv_hash_key_at(v, i);
                pairs[2 * i] = mk_string_val(hv_str_ptr(k), hv_str_len(k));
                pairs[2 * i + 1] = infer_set(hv_hash_val_at(v, i), depth + 1);
            }
            return mk_struct(pairs, n);
        }
        tlist ks = {0}, vs = {0};
        for (size_t i = 0; i < n; i++) {
            tl_push(&ks, infer_set(hv_hash_key_at(v, i), depth + 1));
            tl_push(&vs, infer_set(hv_hash_val_at(v, i), depth + 1));
        }
        ptype *kt = unwrap_single_variant(maybe_create(&ks));
        ptype *vt = unwrap_single_variant(maybe_create(&vs));
        return mk_hash(kt, vt, mk_intv((int64_t)n, (int64_t)n));
    }
    return infer(v, depth);
}

static bool common_by(tkind k, const ptype *t1, const ptype *t2)
{
    return assignable(D(k), t1, NULL) && assignable(D(k), t2, NULL);
}

/* Steals t1 and t2. */
static ptype *common_type(ptype *t1, ptype *t2)
{
    if (!t1)
        return t2;
    if (!t2)
        return t1;
    ptype *r = NULL;
    if (is_k(t1, K_UNDEF)) { /* is_pnil?: Undef is no type at all here */
        r = t_ref(t2);
    } else if (is_k(t2, K_UNDEF)) {
        r = t_ref(t1);
    } else if (is_k(t1, K_UNIT)) {
        r = t_ref(t2);
    } else if (is_k(t2, K_UNIT)) {
        r = t_ref(t1);
    } else if (assignable(t1, t2, NULL)) {
        r = t_ref(t1);
    } else if (assignable(t2, t1, NULL)) {
        r = t_ref(t2);
    } else if (is_k(t1, K_ARRAY) && is_k(t2, K_ARRAY)) {
        r = mk_array(common_type(t_ref(t1->t), t_ref(t2->t)), NULL);
    } else if (is_k(t1, K_HASH) && is_k(t2, K_HASH)) {
        r = mk_hash(common_type(t_ref(t1->t), t_ref(t2->t)), common_type(t_ref(t1->t2), t_ref(t2->t2)), NULL);
    } else if (is_k(t1, K_INTEGER) && is_k(t2, K_INTEGER)) {
        r = mk_int(n_copy(n_min(t1->from, t2->from)), n_copy(n_max(t1->to, t2->to)));
    } else if (is_k(t1, K_FLOAT) && is_k(t2, K_FLOAT)) {
        r = mk_float(n_copy(n_min(t1->from, t2->from)), n_copy(n_max(t1->to, t2->to)));
    } else if (is_k(t1, K_STRING) && (is_k(t2, K_STRING) || is_k(t2, K_ENUM))) {
        if (is_k(t2, K_ENUM)) {
            if (!t1->has_s) {
                r = dflt(K_ENUM);
            } else {
                pstr *vals = xcalloc(t2->nvals + 1, sizeof *vals);
                memcpy(vals, t2->vals, t2->nvals * sizeof *vals);
                vals[t2->nvals] = t1->s;
                r = mk_enum(vals, t2->nvals + 1, false);
                free(vals);
            }
        } else if (!t1->size || !t2->size) {
            if (!t1->has_s || !t2->has_s) {
                r = dflt(K_STRING);
            } else {
                pstr vals[2] = {t1->s, t2->s};
                r = mk_enum(vals, 2, false);
            }
        } else {
            r = mk_string_size(common_type(t_ref(t1->size), t_ref(t2->size)));
        }
    } else if (is_k(t1, K_PATTERN) && is_k(t2, K_PATTERN)) {
        tlist l = {0};
        for (size_t i = 0; i < t1->n; i++)
            tl_push(&l, t_ref(t1->v[i]));
        for (size_t i = 0; i < t2->n; i++)
            tl_push(&l, t_ref(t2->v[i]));
        tl_uniq(&l);
        r = mk_pattern(l.v, l.n);
    } else if (is_k(t1, K_ENUM) && (is_k(t2, K_STRING) || is_k(t2, K_ENUM))) {
        if (is_k(t2, K_STRING) && !t2->has_s) {
            r = dflt(K_ENUM);
        } else {
            size_t n2 = is_k(t2, K_ENUM) ? t2->nvals : 1;
            pstr *vals = xcalloc(t1->nvals + n2, sizeof *vals);
            memcpy(vals, t1->vals, t1->nvals * sizeof *vals);
            if (is_k(t2, K_ENUM))
                memcpy(vals + t1->nvals, t2->vals, n2 * sizeof *vals);
            else
                vals[t1->nvals] = t2->s;
            r = mk_enum(vals, t1->nvals + n2, false);
            free(vals);
        }
    } else if (is_k(t1, K_VARIANT) && is_k(t2, K_VARIANT)) {
        tlist l = {0};
        for (size_t i = 0; i < t1->n; i++)
            tl_push(&l, t_ref(t1->v[i]));
        for (size_t i = 0; i < t2->n; i++)
            tl_push(&l, t_ref(t2->v[i]));
        tl_uniq(&l);
        r = maybe_create(&l);
    } else if (is_k(t1, K_REGEXP) && is_k(t2, K_REGEXP)) {
        r = dflt(K_REGEXP);
    } else if (is_k(t1, K_CALLABLE) && is_k(t2, K_CALLABLE)) {
        r = dflt(K_CALLABLE);
    } else if (common_by(K_NUMERIC, t1, t2)) {
        r = dflt(K_NUMERIC);
    } else if (common_by(K_SCALARDATA, t1, t2)) {
        r = dflt(K_SCALARDATA);
    } else if (common_by(K_SCALAR, t1, t2)) {
        r = dflt(K_SCALAR);
    } else if (assignable(data_alias(), t1, NULL) && assignable(data_alias(), t2, NULL)) {
        r = t_ref(data_alias());
    } else if (is_k(t1, K_TYPE) && is_k(t2, K_TYPE)) {
        r = mk_contained(K_TYPE, common_type(t_ref(t1->t), t_ref(t2->t)));
    } else if (assignable(builtin_alias("RichData", 8), t1, NULL) &&
               assignable(builtin_alias("RichData", 8), t2, NULL)) {
        r = t_ref(builtin_alias("RichData", 8));
    } else if (is_k(t1, K_RUNTIME) && is_k(t2, K_RUNTIME) && t_eq(t1, t2)) {
        r = t_ref(t1);
    } else {
        r = mk(K_ANY);
    }
    t_unref(t1);
    t_unref(t2);
    return r;
}

/* ======================================================================================
 * The mismatch describer (TypeMismatchDescriber)
 * ====================================================================================== */

typedef enum { PE_SUBJECT, PE_ENTRY_VALUE, PE_ENTRY_KEY, PE_PARAM, PE_ARRAY, PE_VARIANT, PE_SIGNATURE } pekind;
typedef struct {
    pekind k;
    char *key; /* SUBJECT text, entry key or parameter name */
    size_t idx;
} pelem;
typedef struct {
    pelem *v;
    size_t n;
} tpath;

typedef enum { M_TYPE, M_PATTERN, M_SIZE, M_COUNT, M_MISSING_KEY, M_EXTRA_KEY, M_UNRESOLVED } mkind;
typedef struct {
    mkind k;
    tpath p;
    ptype *e, *a; /* normalized expected and actual (TYPE, PATTERN, SIZE, COUNT) */
    char *key;    /* MISSING_KEY, EXTRA_KEY: the key; UNRESOLVED: the type reference */
} mismatch;
typedef struct {
    mismatch **v;
    size_t n, cap;
} mlist;

static tpath path_plus(const tpath *p, pekind k, const char *key, size_t keylen, size_t idx)
{
    tpath r = {xcalloc(p->n + 1, sizeof(pelem)), p->n + 1};
    for (size_t i = 0; i < p->n; i++) {
        r.v[i] = p->v[i];
        r.v[i].key = p->v[i].key ? xstrdup(p->v[i].key) : NULL;
    }
    r.v[p->n] = (pelem){k, key ? xstrndup(key, keylen) : NULL, idx};
    return r;
}
static tpath path_copy(const tpath *p)
{
    tpath r = {xcalloc(p->n ? p->n : 1, sizeof(pelem)), p->n};
    for (size_t i = 0; i < p->n; i++) {
        r.v[i] = p->v[i];
        r.v[i].key = p->v[i].key ? xstrdup(p->v[i].key) : NULL;
    }
    return r;
}
static void path_free(tpath *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].key);
    free(p->v);
    *p = (tpath){0};
}
static void pelem_to_s(sbuf *b, const pelem *e)
{
    switch (e->k) {
    case PE_SUBJECT: sb_adds(b, e->key); break;
    case PE_ENTRY_VALUE: sb_addf(b, "entry '%s'", e->key); break;
    case PE_ENTRY_KEY: sb_addf(b, "key of entry '%s'", e->key); break;
    case PE_PARAM: sb_addf(b, "parameter '%s'", e->key); break;
    case PE_ARRAY: sb_addf(b, "index %zu", e->idx); break;
    case PE_VARIANT: sb_addf(b, "variant %zu", e->idx); break;
    case PE_SIGNATURE: sb_addf(b, "%zu.", e->idx + 1); break;
    }
}
/* Mismatch#canonical_path equality: paths compared without their variant elements. */
static bool canonical_eq(const tpath *a, const tpath *b)
{
    size_t i = 0, j = 0;
    for (;;) {
        /* SignaturePathElement is a VariantPathElement: both are left out */
        while (i < a->n && (a->v[i].k == PE_VARIANT || a->v[i].k == PE_SIGNATURE))
            i++;
        while (j < b->n && (b->v[j].k == PE_VARIANT || b->v[j].k == PE_SIGNATURE))
            j++;
        if (i == a->n || j == b->n)
            return i == a->n && j == b->n;
        const pelem *x = &a->v[i], *y = &b->v[j];
        if (x->k != y->k || x->idx != y->idx || (x->key && (!y->key || strcmp(x->key, y->key))) || (!x->key && y->key))
            return false;
        i++, j++;
    }
}

static mismatch *m_new(mkind k, const tpath *p, const ptype *e, const ptype *a)
{
    mismatch *m = xcalloc(1, sizeof *m);
    m->k = k;
    m->p = path_copy(p);
    m->e = e ? normalize(e) : NULL;
    m->a = a ? normalize(a) : NULL;
    return m;
}
static mismatch *m_key(mkind k, const tpath *p, const char *key, size_t n)
{
    mismatch *m = xcalloc(1, sizeof *m);
    m->k = k;
    m->p = path_copy(p);
    m->key = xstrndup(key, n);
    return m;
}
static void m_free(mismatch *m)
{
    if (!m)
        return;
    path_free(&m->p);
    t_unref(m->e);
    t_unref(m->a);
    free(m->key);
    free(m);
}
static void ml_push(mlist *l, mismatch *m)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = m;
}
static void ml_concat(mlist *l, mlist *o) /* moves o's entries */
{
    for (size_t i = 0; i < o->n; i++)
        ml_push(l, o->v[i]);
    free(o->v);
    *o = (mlist){0};
}
static void ml_free(mlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        m_free(l->v[i]);
    free(l->v);
    *l = (mlist){0};
}
static bool m_is(const mismatch *m, mkind k)
{
    if (m->k == k)
        return true;
    return (k == M_TYPE && m->k == M_PATTERN) || (k == M_SIZE && m->k == M_COUNT);
}

/* Mismatch#chop_path */
static mismatch *m_chop(mismatch *m, size_t index)
{
    if (index >= m->p.n)
        return m;
    free(m->p.v[index].key);
    memmove(m->p.v + index, m->p.v + index + 1, (m->p.n - index - 1) * sizeof(pelem));
    m->p.n--;
    return m;
}

/* SizeMismatch from / to */
static num sm_from(const mismatch *m) { return n_is_neginf(m->e->from) ? n_int(0) : m->e->from; }
static num sm_to(const mismatch *m) { return m->e->to; }

/* Mismatch#merge: a TypeMismatch widens its expected types, a SizeMismatch its range. */
static mismatch *m_merge(const mismatch *prev, const mismatch *curr)
{
    if (m_is(prev, M_SIZE)) {
        num f1 = sm_from(prev), f2 = sm_from(curr), t1 = sm_to(prev), t2 = sm_to(curr);
        ptype *r = mk_int(n_copy(n_lt(f1, f2) ? f1 : f2), n_copy(n_lt(t2, t1) ? t1 : t2));
        mismatch *m = m_new(prev->k, &prev->p, r, prev->a);
        t_unref(r);
        return m;
    }
    tlist l = {0};
    tl_push(&l, t_ref(prev->e));
    tl_push(&l, t_ref(curr->e));
    tl_uniq(&l);
    ptype *e = maybe_create(&l);
    mismatch *m = m_new(prev->k, &prev->p, e, prev->a);
    t_unref(e);
    return m;
}

/* merge_descriptions: when every variant failed the same way at the same place, one merged
 * mismatch replaces them. Steals the lists. */
static mlist merge_descriptions(size_t varying, mkind size_class, mlist *variants, size_t nvariants)
{
    mlist all = {0};
    for (size_t i = 0; i < nvariants; i++)
        ml_concat(&all, &variants[i]);
    mkind classes[2] = {size_class, M_TYPE};
    for (int c = 0; c < 2; c++) {
        mlist sel = {0};
        for (size_t i = 0; i < all.n; i++)
            if (m_is(all.v[i], classes[c]))
                ml_push(&sel, all.v[i]);
        if (sel.n == nvariants && sel.n > 0) {
            mismatch *generic = NULL;
            bool ok = true;
            for (size_t i = 1; i < sel.n && ok; i++) {
                const mismatch *prev = generic ? generic : sel.v[0];
                if (!canonical_eq(&prev->p, &sel.v[i]->p)) {
                    ok = false;
                    break;
                }
                mismatch *nm = m_merge(prev, sel.v[i]);
                m_free(generic);
                generic = nm;
            }
            if (ok) {
                if (!generic) { /* a single mismatch: inject returns it as is */
                    for (size_t i = 0; i < all.n; i++)
                        if (all.v[i] == sel.v[0])
                            all.v[i] = NULL;
                    generic = sel.v[0];
                }
                free(sel.v);
                for (size_t i = 0; i < all.n; i++)
                    m_free(all.v[i]);
                all.n = 0;
                ml_push(&all, generic);
                break;
            }
            m_free(generic);
        }
        free(sel.v);
    }
    /* uniq: Mismatch#== never holds between two objects (it compares a boolean with the
     * other mismatch), so nothing is removed */
    if (all.n == 1)
        m_chop(all.v[0], varying);
    return all;
}

static mlist describe(const ptype *expected, const ptype *actual, const tpath *p);
static mlist internal_describe(const ptype *e, const ptype *original, const ptype *actual, const tpath *p);

static mlist one(mismatch *m)
{
    mlist l = {0};
    ml_push(&l, m);
    return l;
}

static mlist describe_variant(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    size_t extra = is_k(original, K_OPTIONAL) ? 1 : 0, nt = e->n + extra;
    mlist *vd = xcalloc(nt ? nt : 1, sizeof *vd);
    for (size_t i = 0; i < nt; i++) {
        const ptype *vt = extra && i == 0 ? D(K_UNDEF) : e->v[i - extra];
        tpath vp = path_plus(p, PE_VARIANT, NULL, 0, i);
        vd[i] = describe(vt, actual, &vp);
        path_free(&vp);
        if (vd[i].n == 0) {
            for (size_t j = 0; j < i; j++)
                ml_free(&vd[j]);
            free(vd);
            return (mlist){0};
        }
    }
    mlist d = merge_descriptions(p->n, M_SIZE, vd, nt);
    free(vd);
    if (is_k(original, K_ALIAS) && d.n == 1) {
        /* all variants of an alias failed: reported on the alias */
        ml_free(&d);
        return one(m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static mlist describe_array(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    mlist d = {0};
    const ptype *elem = e->t;
    if (is_k(actual, K_TUPLE)) {
        ptype *es = e->size ? t_ref(e->size) : default_size();
        ptype *as = actual->size ? t_ref(actual->size) : mk_intv((int64_t)actual->n, (int64_t)actual->n);
        if (assignable(es, as, NULL)) {
            for (size_t i = 0; i < actual->n; i++) {
                if (assignable(elem, actual->v[i], NULL))
                    continue;
                tpath ip = path_plus(p, PE_ARRAY, NULL, 0, i);
                mlist x = describe(elem, actual->v[i], &ip);
                ml_concat(&d, &x);
                path_free(&ip);
            }
        } else {
            ml_push(&d, m_new(M_SIZE, p, es, as));
        }
        t_unref(es);
        t_unref(as);
    } else if (is_k(actual, K_ARRAY)) {
        ptype *as = actual->size ? t_ref(actual->size) : default_size();
        if (!e->size || assignable(e->size, as, NULL)) {
            ptype *a2 = mk_array(t_ref(actual->t), NULL);
            ml_push(&d, m_new(M_TYPE, p, original, a2));
            t_unref(a2);
        } else {
            ml_push(&d, m_new(M_SIZE, p, e->size, as));
        }
        t_unref(as);
    } else {
        ml_push(&d, m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static int64_t struct_required(const ptype *s)
{
    int64_t n = 0;
    for (size_t i = 0; i < st_count(s); i++)
        if (!accepts_undef(st_key(s, i)))
            n++;
    return n;
}

static mlist describe_hash(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    mlist d = {0};
    if (is_k(actual, K_STRUCT)) {
        ptype *es = e->size ? t_ref(e->size) : default_size();
        ptype *as = mk_intv(struct_required(actual), (int64_t)st_count(actual));
        if (assignable(es, as, NULL)) {
            for (size_t i = 0; i < st_count(actual); i++) {
                pstr name = st_name(actual, i);
                if (!assignable(e->t, st_key(actual, i), NULL)) {
                    tpath kp = path_plus(p, PE_ENTRY_KEY, name.p, name.n, 0);
                    mlist x = describe(e->t, st_key(actual, i), &kp);
                    ml_concat(&d, &x);
                    path_free(&kp);
                }
                if (!assignable(e->t2, st_val(actual, i), NULL)) {
                    tpath vp = path_plus(p, PE_ENTRY_VALUE, name.p, name.n, 0);
                    mlist x = describe(e->t2, st_val(actual, i), &vp);
                    ml_concat(&d, &x);
                    path_free(&vp);
                }
            }
        } else {
            ml_push(&d, m_new(M_SIZE, p, es, as));
        }
        t_unref(es);
        t_unref(as);
    } else if (is_k(actual, K_HASH)) {
        ptype *as = actual->size ? t_ref(actual->size) : default_size();
        if (!e->size || assignable(e->size, as, NULL)) {
            ptype *a2 = mk_hash(t_ref(actual->t), t_ref(actual->t2), NULL);
            ml_push(&d, m_new(M_TYPE, p, original, a2));
            t_unref(a2);
        } else {
            ml_push(&d, m_new(M_SIZE, p, e->size, as));
        }
        t_unref(as);
    } else {
        ml_push(&d, m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static mlist describe_struct(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    mlist d = {0};
    if (is_k(actual, K_STRUCT)) {
        size_t na = st_count(actual);
        bool *used = xcalloc(na ? na : 1, sizeof *used);
        for (size_t i = 0; i < st_count(e); i++) {
            pstr key = st_name(e, i);
            size_t j;
            for (j = 0; j < na; j++)
                if (!used[j] && ps_eq(st_name(actual, j), key))
                    break;
            if (j == na) {
                if (!accepts_undef(st_key(e, i)))
                    ml_push(&d, m_key(M_MISSING_KEY, p, key.p, key.n));
                continue;
            }
            used[j] = true;
            if (!assignable(st_key(e, i), st_key(actual, j), NULL)) {
                tpath kp = path_plus(p, PE_ENTRY_KEY, key.p, key.n, 0);
                mlist x = describe(st_key(e, i), st_key(actual, j), &kp);
                ml_concat(&d, &x);
                path_free(&kp);
            }
            if (!assignable(st_val(e, i), st_val(actual, j), NULL)) {
                tpath vp = path_plus(p, PE_ENTRY_VALUE, key.p, key.n, 0);
                mlist x = describe(st_val(e, i), st_val(actual, j), &vp);
                ml_concat(&d, &x);
                path_free(&vp);
            }
        }
        for (size_t j = 0; j < na; j++)
            if (!used[j]) {
                pstr k = st_name(actual, j);
                ml_push(&d, m_key(M_EXTRA_KEY, p, k.p, k.n));
            }
        free(used);
    } else if (is_k(actual, K_HASH)) {
        ptype *as = actual->size ? t_ref(actual->size) : default_size();
        ptype *es = mk_intv(struct_required(e), (int64_t)st_count(e));
        if (assignable(es, as, NULL)) {
            ptype *a2 = mk_hash(t_ref(actual->t), t_ref(actual->t2), NULL);
            ml_push(&d, m_new(M_TYPE, p, original, a2));
            t_unref(a2);
        } else {
            ml_push(&d, m_new(M_SIZE, p, es, as));
        }
        t_unref(as);
        t_unref(es);
    } else {
        ml_push(&d, m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static mlist describe_tuple(const ptype *e, const ptype *original, const ptype *actual, const tpath *p,
                            mkind size_class)
{
    mlist d = {0};
    if (t_eq(e, actual) || (e->n == 0 && is_k(actual, K_ARRAY)))
        return d;
    ptype *es = tuple_size_type(e);
    if (is_k(actual, K_TUPLE)) {
        ptype *as = tuple_size_type(actual);
        if (assignable(es, as, NULL)) {
            if (e->n) {
                for (size_t i = 0; i < actual->n; i++) {
                    size_t adx = i < e->n ? i : e->n - 1;
                    tpath ip = path_plus(p, PE_ARRAY, NULL, 0, adx);
                    mlist x = describe(e->v[adx], actual->v[i], &ip);
                    ml_concat(&d, &x);
                    path_free(&ip);
                }
            }
        } else {
            ml_push(&d, m_new(size_class, p, es, as));
        }
        t_unref(as);
    } else if (is_k(actual, K_ARRAY)) {
        ptype *as = actual->size ? t_ref(actual->size) : default_size();
        if (assignable(es, as, NULL)) {
            for (size_t i = 0; i < e->n; i++) {
                tpath ip = path_plus(p, PE_ARRAY, NULL, 0, i);
                mlist x = describe(e->v[i], actual->t, &ip);
                ml_concat(&d, &x);
                path_free(&ip);
            }
        } else {
            ml_push(&d, m_new(size_class, p, es, as));
        }
        t_unref(as);
    } else {
        ml_push(&d, m_new(M_TYPE, p, original, actual));
    }
    t_unref(es);
    return d;
}

static mlist internal_describe(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    switch (e->k) {
    case K_VARIANT:
        return describe_variant(e, original, actual, p);
    case K_STRUCT:
        return describe_struct(e, original, actual, p);
    case K_HASH:
        return describe_hash(e, original, actual, p);
    case K_TUPLE:
        return describe_tuple(e, original, actual, p, M_SIZE);
    case K_ARRAY:
        return describe_array(e, original, actual, p);
    case K_OPTIONAL:
        if (is_k(actual, K_UNDEF) || !e->t)
            return (mlist){0};
        return internal_describe(e->t, is_k(original, K_ALIAS) ? original : e, actual, p);
    case K_PATTERN: case K_ENUM:
        return one(m_new(M_PATTERN, p, original, actual));
    case K_ALIAS: {
        if (!e->t)
            break;
        ptype *r = normalize(e->t);
        mlist d = internal_describe(r, e, actual, p);
        t_unref(r);
        return d;
    }
    default:
        break;
    }
    if (assignable(e, actual, NULL))
        return (mlist){0};
    return one(m_new(M_TYPE, p, original, actual));
}

/* The first unresolved type reference in t (TypeAcceptor order), or NULL. */
static const ptype *find_typeref(const ptype *t, int depth)
{
    if (!t || depth > MAX_DEPTH)
        return NULL;
    if (t->k == K_TYPEREF)
        return t;
    if (t->k == K_ALIAS)
        return t->flag ? NULL : find_typeref(t->t, depth + 1); /* built-in aliases have none */
    const ptype *r;
    if ((r = find_typeref(t->size, depth + 1)))
        return r;
    if ((r = find_typeref(t->t, depth + 1)) || (r = find_typeref(t->t2, depth + 1)) ||
        (r = find_typeref(t->t3, depth + 1)))
        return r;
    for (size_t i = 0; i < t->n; i++)
        if ((r = find_typeref(t->v[i], depth + 1)))
            return r;
    return NULL;
}

static mlist describe(const ptype *expected, const ptype *actual, const tpath *p)
{
    const ptype *ref = find_typeref(expected, 0);
    if (ref)
        return one(m_key(M_UNRESOLVED, p, ref->s.p, ref->s.n));
    ptype *n = normalize(expected);
    mlist d = internal_describe(n, expected, actual, p);
    t_unref(n);
    return d;
}

/* ---- messages ---- */

/* short_name: Optional, NotUndef, Sensitive, Type (and the other contained types) keep their
 * contained type's name. */
static void short_name(sbuf *b, const ptype *t)
{
    if (is_contained(t) && t->t && t->t->k != K_ANY)
        sb_addf(b, "%s[%s]", t_name(t), t_name(t->t));
    else
        sb_adds(b, t_name(t));
}

static const ptype *resolved(const ptype *t)
{
    int n = 0;
    while (is_k(t, K_ALIAS) && t->t && n++ < MAX_ALIAS_DEPTH)
        t = t->t;
    return t;
}

static bool specialization(const ptype *e, const ptype *a)
{
    return (e->k == K_STRUCT && is_a(a, K_HASH)) || (e->k == K_TUPLE && is_a(a, K_ARRAY));
}

static bool always_fully_detailed(ptype *const *es, size_t n, const ptype *a)
{
    for (size_t i = 0; i < n; i++) {
        const ptype *e = es[i];
        if (e->k == a->k || e->k == K_ALIAS || a->k == K_ALIAS || specialization(e, a))
            return true;
    }
    return false;
}

static bool assignable_to_default(ptype *const *es, size_t n, const ptype *a)
{
    for (size_t i = 0; i < n; i++) {
        const ptype *e = resolved(es[i]);
        if (assignable(D(e->k), a, NULL))
            return true;
    }
    return false;
}

/* detailed_actual_to_s */
static char *detailed_actual(ptype *const *es, size_t n, const ptype *a)
{
    ptype **res = xcalloc(n ? n : 1, sizeof *res);
    for (size_t i = 0; i < n; i++)
        res[i] = (ptype *)resolved(es[i]);
    char *r;
    if (always_fully_detailed(res, n, a)) {
        r = t_to_xs(a);
    } else {
        ptype *g = generalize(a);
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = assignable(res[i], g, NULL);
        t_unref(g);
        r = any ? t_to_xs(a) : xstrdup(simple_names[a->k]);
    }
    free(res);
    return r;
}

static void a_an(sbuf *b, const char *text)
{
    char c = text[0];
    if (c == '"' || c == '\'')
        c = text[1];
    c = (char)tolower((unsigned char)c);
    sb_adds(b, strchr("aeiouy", c) && c ? "an " : "a ");
    sb_adds(b, text);
}

static void type_mismatch_message(sbuf *b, const mismatch *m, const char *variant, const char *position)
{
    const ptype *e = m->e;
    bool optional = false, multi = false;
    if (is_k(e, K_OPTIONAL) && e->t) {
        e = e->t;
        optional = true;
    }
    ptype *const *es;
    size_t ne;
    ptype *single[1] = {(ptype *)e};
    bool is_list = is_k(e, K_VARIANT);
    if (is_list) {
        es = e->v;
        ne = e->n;
    } else {
        es = single;
        ne = 1;
    }
    bool detailed = always_fully_detailed(es, ne, m->a) || assignable_to_default(es, ne, m->a);
    char *a;
    char **names = xcalloc(ne + 1, sizeof *names);
    size_t nn = 0;
    if (detailed) {
        a = detailed_actual(es, ne, m->a);
        for (size_t i = 0; i < ne; i++)
            names[nn++] = t_to_xs(es[i]);
    } else {
        sbuf ab = {0};
        short_name(&ab, m->a);
        a = sb_take(&ab);
        for (size_t i = 0; i < ne; i++) {
            sbuf nb = {0};
            short_name(&nb, es[i]);
            char *s = sb_take(&nb);
            bool dup = false;
            for (size_t j = 0; j < nn && !dup; j++)
                dup = strcmp(names[j], s) == 0;
            if (dup && is_list)
                free(s);
            else
                names[nn++] = s;
        }
    }
    sbuf eb = {0};
    if (is_list) {
        if (optional) {
            memmove(names + 1, names, nn * sizeof *names);
            names[0] = xstrdup("Undef");
            nn++;
        }
        if (nn == 1) {
            sb_adds(&eb, names[0]);
        } else if (nn == 2) {
            sb_addf(&eb, "%s or %s", names[0], names[1]);
            multi = true;
        } else {
            for (size_t i = 0; i + 1 < nn; i++)
                sb_addf(&eb, "%s%s", i ? ", " : "", names[i]);
            sb_addf(&eb, ", or %s", nn ? names[nn - 1] : "");
            multi = true;
        }
    } else {
        if (optional) {
            sb_addf(&eb, "Undef or %s", names[0]);
            multi = true;
        } else {
            sb_adds(&eb, names[0]);
        }
    }
    if (multi)
        sb_addf(b, "%s%s expects a value of type %s, got %s", variant, position, sb_str(&eb), a);
    else {
        sb_addf(b, "%s%s expects ", variant, position);
        a_an(b, sb_str(&eb));
        sb_addf(b, " value, got %s", a);
    }
    sb_free(&eb);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    free(a);
}

static void range_to_s(sbuf *b, const ptype *r, const char *zero)
{
    num min = n_is_neginf(r->from) ? n_int(0) : r->from, max = r->to;
    if (n_eq(min, max)) {
        if (n_eq(min, n_int(0)))
            sb_adds(b, zero);
        else
            n_to_s(b, min);
    } else if (n_eq(min, n_int(0))) {
        if (n_is_posinf(max))
            sb_adds(b, "unlimited");
        else {
            sb_adds(b, "at most ");
            n_to_s(b, max);
        }
    } else if (n_is_posinf(max)) {
        sb_adds(b, "at least ");
        n_to_s(b, min);
    } else {
        sb_adds(b, "between ");
        n_to_s(b, min);
        sb_adds(b, " and ");
        n_to_s(b, max);
    }
}

static void m_message(sbuf *b, const mismatch *m, const char *variant, const char *position)
{
    switch (m->k) {
    case M_TYPE:
        type_mismatch_message(b, m, variant, position);
        break;
    case M_PATTERN: {
        const ptype *e = m->e;
        const char *pfx = "";
        if (is_k(e, K_OPTIONAL) && e->t) {
            e = e->t;
            pfx = "an undef value or ";
        }
        char *es = t_to_xs(e);
        sb_addf(b, "%s%s expects %sa match for %s, got ", variant, position, pfx, es);
        free(es);
        if (is_k(m->a, K_STRING) && m->a->has_s) {
            sb_addc(b, '\'');
            sb_addn(b, m->a->s.p, m->a->s.n);
            sb_addc(b, '\'');
        } else {
            short_name(b, m->a);
        }
        break;
    }
    case M_SIZE:
        sb_addf(b, "%s%s expects size to be ", variant, position);
        range_to_s(b, m->e, "0");
        sb_adds(b, ", got ");
        range_to_s(b, m->a, "0");
        break;
    case M_COUNT: {
        num min = n_is_neginf(m->e->from) ? n_int(0) : m->e->from, max = m->e->to;
        bool one_ok = (n_eq(min, n_int(1)) && (n_eq(max, n_int(1)) || n_is_posinf(max))) ||
                      (n_eq(min, n_int(0)) && n_eq(max, n_int(1)));
        sb_addf(b, "%s%s expects ", variant, position);
        range_to_s(b, m->e, "no");
        sb_addf(b, " argument%s, got ", one_ok ? "" : "s");
        range_to_s(b, m->a, "none");
        break;
    }
    case M_MISSING_KEY:
        sb_addf(b, "%s%s expects a value for key '%s'", variant, position, m->key);
        break;
    case M_EXTRA_KEY:
        sb_addf(b, "%s%s unrecognized key '%s'", variant, position, m->key);
        break;
    case M_UNRESOLVED:
        sb_addf(b, "%s%s references an unresolved type '%s'", variant, position, m->key);
        break;
    }
}

/* Mismatch#format */
static void m_format(sbuf *b, const mismatch *m)
{
    sbuf variant = {0}, position = {0};
    size_t start = 0;
    if (m->p.n && m->p.v[0].k == PE_SIGNATURE) {
        sb_addc(&variant, ' ');
        pelem_to_s(&variant, &m->p.v[0]);
        start = 1;
    }
    for (size_t i = start; i < m->p.n; i++) {
        sb_addc(&position, ' ');
        pelem_to_s(&position, &m->p.v[i]);
    }
    m_message(b, m, sb_str(&variant), sb_str(&position));
    sb_free(&variant);
    sb_free(&position);
}

/* Ruby String#strip */
static char *rstrip_take(sbuf *b)
{
    char *s = sb_take(b);
    size_t n = strlen(s), i = 0;
    while (i < n && (isspace((unsigned char)s[i])))
        i++;
    while (n > i && (isspace((unsigned char)s[n - 1])))
        n--;
    memmove(s, s + i, n - i);
    s[n - i] = 0;
    return s;
}

/* TypeMismatchDescriber#describe_mismatch of an expected type and an actual (inferred) type. */
static char *describe_mismatch(const char *name, const ptype *expected, const ptype *actual)
{
    tpath p = {0};
    tpath root = path_plus(&p, PE_SUBJECT, name, strlen(name), 0);
    mlist errs = describe(expected, actual, &root);
    path_free(&root);
    sbuf b = {0};
    char *r;
    if (errs.n == 1) {
        m_format(&b, errs.v[0]);
        r = rstrip_take(&b);
    } else {
        for (size_t i = 0; i < errs.n; i++) {
            if (i)
                sb_adds(&b, "\n ");
            m_format(&b, errs.v[i]);
        }
        r = sb_take(&b);
    }
    ml_free(&errs);
    return r;
}

/* TypeAsserter.assert_instance_of's message for a value that is not an instance of t. */
static char *assert_message(const char *subject, const ptype *t, const hv *v)
{
    ptype *a = infer_set(v, 0);
    char *name = xasprintf("%s has wrong type,", subject);
    char *r = describe_mismatch(name, t, a);
    free(name);
    t_unref(a);
    return r;
}

/* ======================================================================================
 * Lexer for type expressions (the token rules of Puppet's Lexer2 that matter here)
 * ====================================================================================== */

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
    sb_addf(b, " (line: %d, column: %zu)", line, utf8_len(src + ls, off - ls) + 1);
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

static void lx_free(lexer *lx)
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
        size_t l = utf8_next(s + i, n - i, &cp);
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

static void add_utf8(sbuf *b, uint32_t cp)
{
    char buf[4];
    if (cp < 0x80) {
        sb_addc(b, (char)cp);
        return;
    }
    if (cp < 0x800) {
        buf[0] = (char)(0xc0 | (cp >> 6));
        buf[1] = (char)(0x80 | (cp & 0x3f));
        sb_addn(b, buf, 2);
    } else if (cp < 0x10000) {
        buf[0] = (char)(0xe0 | (cp >> 12));
        buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        buf[2] = (char)(0x80 | (cp & 0x3f));
        sb_addn(b, buf, 3);
    } else {
        buf[0] = (char)(0xf0 | (cp >> 18));
        buf[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        buf[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        buf[3] = (char)(0x80 | (cp & 0x3f));
        sb_addn(b, buf, 4);
    }
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
                        add_utf8(&v, cp);
                        i = k + 1;
                        break;
                    }
                } else {
                    while (k < lx->len && nd < 4 && isxdigit((unsigned char)lx->src[k]))
                        cp = cp * 16 + (uint32_t)(isdigit((unsigned char)lx->src[k]) ? lx->src[k] - '0' : (tolower((unsigned char)lx->src[k]) - 'a' + 10)), k++, nd++;
                    if (nd == 4) {
                        add_utf8(&v, cp);
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
            regex_t *re = re_compile(v.s ? v.s : "", v.len, lx->err);
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

static bool lex_all(lexer *lx)
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
        size_t l = utf8_next(s + i, n - i, &cp);
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
static void a_free(ast *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nk; i++)
        a_free(a->kids[i]);
    free(a->kids);
    free(a);
}
static ast *opaque(ast *a, size_t end) /* widens a into an opaque node (frees a) */
{
    ast *o = a_new(A_OPAQUE, a->start, end > a->end ? end : a->end);
    a_free(a);
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
                a_free(e);
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
            a_free(k);
            syntax_error(p);
            goto fail;
        }
        advance(p);
        ast *v = p_assignment(p);
        if (!v) {
            a_free(k);
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
    a_free(h);
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
            a_free(a);
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
            a_free(e);
            return syntax_error(p);
        }
        /* the parenthesized expression's text ends with the inner expression */
        a = a_new(A_OPAQUE, t->start, e->end);
        a_free(e);
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
                a_free(acc);
                return NULL;
            }
            acc->end = cur(p)->end;
            advance(p);
            a = acc;
        } else if (k == TK_LPAREN) { /* a call */
            advance(p);
            ast *args = a_new(A_LIST, a->start, a->end);
            if (!p_entries(p, args, TK_RPAREN, true)) {
                a_free(args);
                a_free(a);
                return NULL;
            }
            size_t end = cur(p)->end;
            advance(p);
            a_free(args);
            a = opaque(a, end);
        } else if (k == TK_DOT) { /* a method call */
            advance(p);
            tok nk = cur_k(p);
            if (nk != TK_NAME && nk != TK_CLASSREF && nk != TK_KEYWORD && nk != TK_DEFAULT && nk != TK_UNDEF &&
                nk != TK_BOOLEAN && nk != TK_BINOP) {
                a_free(a);
                return syntax_error(p);
            }
            size_t end = cur(p)->end;
            advance(p);
            a = opaque(a, end);
        } else if (k == TK_LBRACE && (a->k == A_QREF || a->k == A_ACCESS || a->k == A_QNAME)) {
            size_t end;
            if (!skip_braces(p, &end)) {
                a_free(a);
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
            a_free(e);
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
                a_free(a);
                return NULL;
            }
            size_t end = r->end;
            a_free(r);
            a = opaque(a, end);
        } else if (k == TK_QMARK) { /* selector */
            advance(p);
            size_t end;
            if (cur_k(p) != TK_LBRACE || !skip_braces(p, &end)) {
                a_free(a);
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
static ast *p_program(parser *p)
{
    ast *first = NULL;
    size_t end = 0;
    int count = 0;
    while (cur_k(p) != TK_EOF) {
        ast *s = p_assignment(p);
        if (!s) {
            a_free(first);
            return NULL;
        }
        while (cur_k(p) == TK_COMMA) {
            advance(p);
            ast *x = p_assignment(p);
            if (!x) {
                a_free(s);
                a_free(first);
                return NULL;
            }
            size_t e = x->end;
            a_free(x);
            s = opaque(s, e);
        }
        end = s->end;
        if (!first)
            first = s;
        else
            a_free(s);
        count++;
        if (cur_k(p) == TK_SEMIC) {
            advance(p);
            if (cur_k(p) == TK_EOF) /* a ';' must be followed by a statement */
                return syntax_error(p), a_free(first), NULL;
        }
    }
    if (!first)
        return a_new(A_OPAQUE, 0, 0);
    if (count > 1)
        first = opaque(first, end);
    return first;
}

/* ======================================================================================
 * Interpreter (TypeParser#interpret): AST to types
 * ====================================================================================== */

typedef enum { PV_TYPE, PV_NUM, PV_STR, PV_BOOL, PV_DEFAULT, PV_NIL, PV_REGEX, PV_ARRAY, PV_HASH } pvk;
typedef struct pval {
    pvk k;
    ptype *t;
    num n;
    pstr s;
    bool b;
    struct pval **items; /* ARRAY items; HASH key, value, ... */
    size_t nitems;
} pval;

static void pv_free(pval *v)
{
    if (!v)
        return;
    t_unref(v->t);
    n_drop(&v->n);
    free(v->s.p);
    for (size_t i = 0; i < v->nitems; i++)
        pv_free(v->items[i]);
    free(v->items);
    free(v);
}
static pval *pv_new(pvk k)
{
    pval *v = xcalloc(1, sizeof *v);
    v->k = k;
    return v;
}

typedef struct {
    const char *name; /* lower case */
    ptype *type;
} local_alias;

typedef struct {
    const char *src;
    bool cli; /* `puppet lookup --type`: names outside the type map are loaded through the scope */
    const local_alias *locals;
    size_t nlocals;
    herr *err;
    int depth;
} ictx;

static ptype *parse_type(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                         herr *err);

static void invalid_spec(ictx *c, const ast *a)
{
    if (!herr_isset(c->err))
        herr_set(c->err, HERR_PUPPET, "The expression <%.*s> is not a valid type specification.",
                 (int)(a->end - a->start), c->src + a->start);
}
static void invalid_params(ictx *c, const char *type, const char *required, size_t given)
{
    herr_set(c->err, HERR_PUPPET, "Invalid number of type parameters specified: %s requires %s, %zu provided", type,
             required, given);
}
static void unparameterized(ictx *c, const ast *q)
{
    herr_set(c->err, HERR_PUPPET, "Not a parameterized type <%.*s>", (int)(q->end - q->start), c->src + q->start);
}
/* Loading a type through the Scope given as context by `puppet lookup --type` fails like this. */
static void scope_load_error(ictx *c)
{
    herr_set(c->err, HERR_ERROR, "private method `load' called for Scope(Class[main]):Puppet::Parser::Scope");
}

/* ---- the built-in aliases of the static loader ---- */

static const char *const alias_names[] = {"Data", "RichDataKey", "RichData", "Puppet::LookupKey",
                                          "Puppet::LookupValue"};
static const char *const alias_defs[] = {
    "Variant[ScalarData,Undef,Hash[String,Data],Array[Data]]",
    "Variant[String,Numeric]",
    ("Variant[Scalar,SemVerRange,Binary,Sensitive,Type,TypeSet,URI,Object,Undef,Default,"
     "Hash[RichDataKey,RichData],Array[RichData]]"),
    "RichDataKey",
    "RichData",
};
#define N_ALIASES (sizeof alias_names / sizeof *alias_names)
static ptype *builtin_alias_nodes[N_ALIASES];

static void ensure_builtin_aliases(void)
{
    if (builtin_alias_nodes[0])
        return;
    for (size_t i = 0; i < N_ALIASES; i++) {
        ptype *a = mk_named(K_ALIAS, alias_names[i], strlen(alias_names[i]));
        a->flag = 1; /* built in: never printed expanded */
        make_immortal(a);
        builtin_alias_nodes[i] = a;
    }
    for (size_t i = 0; i < N_ALIASES; i++) {
        herr e = {0};
        builtin_alias_nodes[i]->t = parse_type(alias_defs[i], strlen(alias_defs[i]), false, NULL, 0, &e);
        herr_clear(&e);
    }
}

static ptype *builtin_alias(const char *name, size_t n)
{
    ensure_builtin_aliases();
    for (size_t i = 0; i < N_ALIASES; i++)
        if (ascii_casecmp_eq(alias_names[i], strlen(alias_names[i]), name, n))
            return builtin_alias_nodes[i];
    return NULL;
}

static ptype *data_alias(void) { return builtin_alias("Data", 4); }

/* Puppet's built-in resource types (StaticLoader::BUILTIN_TYPE_NAMES). */
static const char *const resource_names[] = {"Component", "Exec", "File", "Filebucket", "Group",
                                             "Node", "Notify", "Package", "Resources", "Schedule",
                                             "Service", "Stage", "Tidy", "User", "Whit", NULL};

static const char *resource_name(const char *name, size_t n)
{
    for (int i = 0; resource_names[i]; i++)
        if (ascii_casecmp_eq(resource_names[i], strlen(resource_names[i]), name, n))
            return resource_names[i];
    return NULL;
}

/* The type map of TypeParser (lower case names). */
static ptype *type_map(const char *lname)
{
    static const struct {
        const char *name;
        tkind k;
    } map[] = {
        {"integer", K_INTEGER}, {"float", K_FLOAT}, {"numeric", K_NUMERIC}, {"init", K_INIT},
        {"iterable", K_ITERABLE}, {"iterator", K_ITERATOR}, {"string", K_STRING}, {"binary", K_BINARY},
        {"sensitive", K_SENSITIVE}, {"enum", K_ENUM}, {"boolean", K_BOOLEAN}, {"pattern", K_PATTERN},
        {"regexp", K_REGEXP}, {"array", K_ARRAY}, {"hash", K_HASH}, {"class", K_CLASS},
        {"resource", K_RESOURCE}, {"collection", K_COLLECTION}, {"scalar", K_SCALAR},
        {"scalardata", K_SCALARDATA}, {"catalogentry", K_CATALOGENTRY}, {"undef", K_UNDEF},
        {"notundef", K_NOTUNDEF}, {"default", K_DEFAULT}, {"any", K_ANY}, {"variant", K_VARIANT},
        {"optional", K_OPTIONAL}, {"runtime", K_RUNTIME}, {"type", K_TYPE}, {"tuple", K_TUPLE},
        {"struct", K_STRUCT}, {"object", K_OBJECT}, {"typealias", K_ALIAS}, {"typereference", K_TYPEREF},
        {"typeset", K_TYPESET}, {"callable", K_CALLABLE}, {"semver", K_SEMVER},
        {"semverrange", K_SEMVERRANGE}, {"timestamp", K_TIMESTAMP}, {"timespan", K_TIMESPAN},
        {"uri", K_URI},
    };
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(map[i].name, lname)) {
            return dflt(map[i].k);
        }
    return NULL;
}

static char *lower_dup(const char *s, size_t n)
{
    char *r = xstrndup(s, n);
    for (size_t i = 0; i < n; i++)
        r[i] = (char)tolower((unsigned char)r[i]);
    return r;
}

/* QualifiedReference#value drops a leading "::". */
static void qref_name(const ictx *c, const ast *q, const char **p, size_t *n)
{
    *p = c->src + q->start;
    *n = q->end - q->start;
    if (*n > 2 && (*p)[0] == ':' && (*p)[1] == ':')
        *p += 2, *n -= 2;
}

/* A name that is not in the type map: loaded (static loader, local aliases) or a reference. */
static ptype *load_type(ictx *c, const char *name, size_t n)
{
    if (c->cli) {
        scope_load_error(c);
        return NULL;
    }
    for (size_t i = 0; i < c->nlocals; i++)
        if (ascii_casecmp_eq(c->locals[i].name, strlen(c->locals[i].name), name, n))
            return t_ref(c->locals[i].type);
    ptype *a = builtin_alias(name, n);
    if (a)
        return t_ref(a);
    const char *r = resource_name(name, n);
    if (r)
        return mk_named(K_RESOURCE, r, strlen(r));
    return NULL;
}

static pval *interp(ictx *c, const ast *a);
static ptype *access_type(ictx *c, const ast *a, pval **params, size_t np);

static pval *interp_number(ictx *c, const ast *a)
{
    const char *t = a->tok->val;
    pval *v = pv_new(PV_NUM);
    bool hex = t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
    if (!hex && strpbrk(t, ".eE")) {
        v->n = n_float(strtod(t, NULL));
        return v;
    }
    errno = 0;
    unsigned long long u = strtoull(t, NULL, hex ? 16 : (t[0] == '0' && t[1]) ? 8 : 10);
    if (errno == ERANGE || u > (unsigned long long)INT64_MAX) {
        if (hex || t[0] == '0') {
            invalid_spec(c, a);
            pv_free(v);
            return NULL;
        }
        v->n = (num){N_BIG, 0, 0, hv_bigint(t, strlen(t))};
        return v;
    }
    v->n = n_int((int64_t)u);
    return v;
}

static num n_negate(num n)
{
    if (n.k == N_FLOAT)
        return n_float(-n.d);
    if (n.k == N_INT && n.i != INT64_MIN)
        return n_int(-n.i);
    const char *d;
    char buf[32];
    if (n.k == N_INT) {
        snprintf(buf, sizeof buf, "%" PRId64, n.i);
        d = buf;
    } else {
        d = hv_bigint_digits(n.big);
    }
    sbuf b = {0};
    if (d[0] == '-')
        sb_adds(&b, d + 1);
    else {
        sb_addc(&b, '-');
        sb_adds(&b, d);
    }
    num r = {N_BIG, 0, 0, hv_bigint(b.s, b.len)};
    sb_free(&b);
    return r;
}

static pval *interp_qref(ictx *c, const ast *a)
{
    const char *name;
    size_t n;
    qref_name(c, a, &name, &n);
    char *lname = lower_dup(name, n);
    ptype *t = type_map(lname);
    free(lname);
    if (!t) {
        t = load_type(c, name, n);
        if (!t && herr_isset(c->err))
            return NULL;
        if (!t)
            t = mk_named(K_TYPEREF, c->src + a->start, a->end - a->start);
    }
    pval *v = pv_new(PV_TYPE);
    v->t = t;
    return v;
}

/* Ruby Hash semantics for interpreted hash literals: a repeated key replaces the value. */
static bool pv_eq(const pval *a, const pval *b)
{
    if (a->k != b->k)
        return false;
    switch (a->k) {
    case PV_TYPE: return t_eq(a->t, b->t);
    case PV_NUM: return a->n.k == b->n.k && n_eq(a->n, b->n);
    case PV_STR: case PV_REGEX: return ps_eq(a->s, b->s);
    case PV_BOOL: return a->b == b->b;
    case PV_DEFAULT: case PV_NIL: return true;
    default:
        if (a->nitems != b->nitems)
            return false;
        for (size_t i = 0; i < a->nitems; i++)
            if (!pv_eq(a->items[i], b->items[i]))
                return false;
        return true;
    }
}

static pval *interp(ictx *c, const ast *a)
{
    if (++c->depth > MAX_DEPTH) {
        herr_set(c->err, HERR_ERROR, "type expression nested too deeply");
        return NULL;
    }
    pval *v = NULL;
    const token *t = a->tok;
    switch (a->k) {
    case A_QREF: v = interp_qref(c, a); break;
    case A_QNAME: case A_STRING:
        v = pv_new(PV_STR);
        v->s = ps_dup(t->val, t->vlen);
        break;
    case A_REGEX:
        v = pv_new(PV_REGEX);
        v->s = ps_dup(t->val, t->vlen);
        break;
    case A_NUMBER: v = interp_number(c, a); break;
    case A_BOOL:
        v = pv_new(PV_BOOL);
        v->b = t->val[0] == 't';
        break;
    case A_DEFAULT: v = pv_new(PV_DEFAULT); break;
    case A_UNDEF: v = pv_new(PV_NIL); break;
    case A_UMINUS: {
        pval *x = interp(c, a->kids[0]);
        if (!x)
            break;
        if (x->k == PV_STR) { /* Ruby's String#-@ returns the (frozen) string */
            v = x;
            break;
        }
        if (x->k != PV_NUM) {
            /* NoMethodError for the values whose inspect form is fixed */
            const char *what = x->k == PV_DEFAULT ? ":default:Symbol"
                               : x->k == PV_NIL   ? "nil:NilClass"
                               : x->k == PV_BOOL  ? (x->b ? "true:TrueClass" : "false:FalseClass")
                                                  : NULL;
            if (what)
                herr_set(c->err, HERR_ERROR, "undefined method `-@' for %s", what);
            else
                invalid_spec(c, a);
            pv_free(x);
            break;
        }
        num neg = n_negate(x->n);
        n_drop(&x->n);
        x->n = neg;
        v = x;
        break;
    }
    case A_LIST: case A_HASH: {
        v = pv_new(a->k == A_LIST ? PV_ARRAY : PV_HASH);
        v->items = xcalloc(a->nk ? a->nk : 1, sizeof *v->items);
        for (size_t i = 0; i < a->nk; i++) {
            pval *x = interp(c, a->kids[i]);
            if (!x) {
                pv_free(v);
                v = NULL;
                break;
            }
            if (a->k == A_HASH && i % 2 == 1) {
                bool replaced = false;
                for (size_t j = 0; j + 1 < v->nitems && !replaced; j += 2)
                    if (pv_eq(v->items[j], v->items[v->nitems - 1])) {
                        pv_free(v->items[j + 1]);
                        v->items[j + 1] = x;
                        pv_free(v->items[--v->nitems]);
                        replaced = true;
                    }
                if (replaced)
                    continue;
            }
            v->items[v->nitems++] = x;
        }
        break;
    }
    case A_ACCESS: {
        pval **params = xcalloc(a->nk, sizeof *params);
        size_t np = 0;
        bool ok = true;
        for (size_t i = 1; i < a->nk && ok; i++) {
            params[np] = interp(c, a->kids[i]);
            ok = params[np++] != NULL;
        }
        ptype *r = ok ? access_type(c, a, params, np) : NULL;
        for (size_t i = 0; i < np; i++)
            pv_free(params[i]);
        free(params);
        if (r) {
            v = pv_new(PV_TYPE);
            v->t = r;
        }
        break;
    }
    case A_OPAQUE:
        invalid_spec(c, a);
        break;
    }
    c->depth--;
    return v;
}

/* ---- type construction from parameters (interpret_AccessExpression, TypeFactory) ---- */

static bool is_type(const pval *v) { return v->k == PV_TYPE; }
static bool is_int(const pval *v) { return v->k == PV_NUM && v->n.k != N_FLOAT; }
static bool is_default(const pval *v) { return v->k == PV_DEFAULT; }
static bool is_str(const pval *v, const char *s)
{
    return v->k == PV_STR && v->s.n == strlen(s) && memcmp(v->s.p, s, v->s.n) == 0;
}
/* TypeFactory.is_range_parameter? */
static bool is_range(const pval *v) { return is_int(v) || is_default(v) || is_str(v, "default"); }

/* Ruby's to_s of a range bound for the 'from' > 'to' message. */
static void bound_to_s(sbuf *b, const pval *v, bool upper)
{
    if (!v || is_default(v) || v->k == PV_NIL)
        sb_adds(b, upper ? "Infinity" : "-Infinity");
    else
        n_to_s(b, v->n);
}

/* PIntegerType.new(from, to) for parameter values (nil or default: unbounded). */
static ptype *int_range(ictx *c, const pval *from, const pval *to)
{
    /* TypeFactory.range turns a 'default' string for from into false (a Ruby slip) */
    if (from && is_str(from, "default")) {
        herr_set(c->err, HERR_ERROR, "undefined method `>' for false:FalseClass");
        return NULL;
    }
    num f = (!from || is_default(from) || from->k == PV_NIL) ? n_neginf() : n_copy(from->n);
    num t = (!to || is_default(to) || to->k == PV_NIL || is_str(to, "default")) ? n_posinf() : n_copy(to->n);
    if (n_cmp(f, t) == 1) {
        sbuf b = {0};
        sb_adds(&b, "'from' must be less or equal to 'to'. Got (");
        bound_to_s(&b, from, false);
        sb_adds(&b, ", ");
        bound_to_s(&b, (to && is_str(to, "default")) ? NULL : to, true);
        herr_set(c->err, HERR_ERROR, "%s", sb_str(&b));
        sb_free(&b);
        n_drop(&f);
        n_drop(&t);
        return NULL;
    }
    return mk_int(f, t);
}

/* TypeFactory.type_of */
static ptype *type_of(const pval *v)
{
    switch (v->k) {
    case PV_TYPE: return t_ref(v->t);
    case PV_STR: return mk_runtime("ruby", 4, true, v->s.p, v->s.n, true);
    case PV_NUM: return dflt(v->n.k == N_FLOAT ? K_FLOAT : K_INTEGER);
    case PV_BOOL: return dflt(K_BOOLEAN);
    case PV_DEFAULT: return mk(K_DEFAULT);
    case PV_NIL: return mk(K_UNDEF);
    case PV_REGEX: return mk_regexp(v->s.p, v->s.n, true);
    case PV_ARRAY: return dflt(K_ARRAY);
    default: return dflt(K_HASH);
    }
}

/* Ruby class name of a parameter value, for messages. */
static const char *pv_class(const pval *v)
{
    static char buf[64];
    switch (v->k) {
    case PV_TYPE:
        snprintf(buf, sizeof buf, "Puppet::Pops::Types::P%sType", v->t->k == K_ALIAS ? "TypeAlias" : simple_names[v->t->k]);
        return buf;
    case PV_NUM: return v->n.k == N_FLOAT ? "Float" : "Integer";
    case PV_STR: return "String";
    case PV_BOOL: return v->b ? "TrueClass" : "FalseClass";
    case PV_DEFAULT: return "Symbol";
    case PV_NIL: return "NilClass";
    case PV_REGEX: return "Regexp";
    case PV_ARRAY: return "Array";
    default: return "Hash";
    }
}

static ptype *need_type(ictx *c, const ast *a, const pval *v)
{
    if (!is_type(v)) {
        invalid_spec(c, a);
        return NULL;
    }
    return t_ref(v->t);
}

/* A size parameter: an Integer type, or a range parameter giving the lower bound. */
static ptype *size_param(ictx *c, const ast *a, const pval *v)
{
    if (is_type(v) && v->t->k == K_INTEGER)
        return t_ref(v->t);
    if (!is_range(v)) {
        invalid_spec(c, a);
        return NULL;
    }
    return int_range(c, v, NULL);
}

static ptype *two_ranges(ictx *c, const ast *a, const pval *from, const pval *to)
{
    if (!is_range(from) || !is_range(to)) {
        invalid_spec(c, a);
        return NULL;
    }
    return int_range(c, from, to);
}

static ptype *make_struct(ictx *c, const ast *a, const pval *h)
{
    size_t n = h->nitems / 2;
    ptype **pairs = xcalloc(2 * n + 1, sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
        const pval *k = h->items[2 * i], *v = h->items[2 * i + 1];
        ptype *vt = type_of(v), *kt;
        if (k->k == PV_STR) {
            if (!k->s.n) {
                herr_set(c->err, HERR_ERROR, "Struct element key cannot be an empty String");
                t_unref(vt);
                goto fail;
            }
            kt = mk_string_val(k->s.p, k->s.n);
            if (accepts_undef(vt))
                kt = mk_contained(K_OPTIONAL, kt);
        } else {
            const ptype *s = NULL;
            kt = NULL;
            if (is_type(k)) {
                const ptype *t = k->t;
                if (t->k == K_NOTUNDEF) {
                    kt = t->t ? t_ref(t->t) : NULL;
                    s = kt;
                } else if (t->k == K_OPTIONAL) {
                    kt = t_ref(t);
                    s = t->t;
                } else if (t->k == K_STRING) {
                    kt = t_ref(t);
                    s = t;
                } else if (t->k == K_ENUM) {
                    if (t->nvals == 1)
                        kt = mk_string_val(t->vals[0].p, t->vals[0].n);
                    s = kt;
                } else {
                    herr_set(c->err, HERR_ERROR,
                             "Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: %s",
                             pv_class(k));
                    t_unref(vt);
                    goto fail;
                }
            } else {
                herr_set(c->err, HERR_ERROR,
                         "Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: %s",
                         pv_class(k));
                t_unref(vt);
                goto fail;
            }
            if (!is_k(s, K_STRING) || !s->has_s) {
                char *ks = t_to_s(k->t);
                herr_set(c->err, HERR_ERROR,
                         "Unable to extract a non-empty literal string from Struct member key type %s", ks);
                free(ks);
                t_unref(kt);
                t_unref(vt);
                goto fail;
            }
        }
        pairs[2 * i] = kt;
        pairs[2 * i + 1] = vt;
    }
    return mk_struct(pairs, n);
fail:
    for (size_t i = 0; i < 2 * n; i++)
        t_unref(pairs[i]);
    free(pairs);
    return NULL;
}

static ptype *make_pattern(ictx *c, pval **params, size_t np)
{
    tlist l = {0};
    for (size_t i = 0; i < np; i++) {
        const pval *p = params[i];
        if (p->k == PV_STR || p->k == PV_REGEX) {
            regex_t *re = re_compile(p->s.p, p->s.n, c->err);
            if (!re) {
                tl_free(&l);
                return NULL;
            }
            ptype *rt = mk_regexp(p->s.p, p->s.n, true);
            rt->re = re;
            tl_push(&l, rt);
        } else if (is_type(p) && p->t->k == K_REGEXP) {
            tl_push(&l, t_ref(p->t));
        } else if (is_type(p) && p->t->k == K_PATTERN) {
            for (size_t j = 0; j < p->t->n; j++)
                tl_push(&l, t_ref(p->t->v[j]));
        } else {
            herr_set(c->err, HERR_ERROR, "Only String, Regexp, Pattern-Type, and Regexp-Type are allowed: got '%s",
                     pv_class(p));
            tl_free(&l);
            return NULL;
        }
    }
    tl_uniq(&l);
    return mk_pattern(l.v, l.n);
}

/* TypeFactory.callable */
static ptype *make_callable(ictx *c, const ast *a, pval **params, size_t np)
{
    ptype *ret = NULL;
    pval *const *ps = params;
    if (np == 2 && params[0]->k == PV_ARRAY) {
        ret = type_of(params[1]);
        ps = params[0]->items;
        np = params[0]->nitems;
    }
    ptype *block = NULL;
    if (np && is_type(ps[np - 1]) &&
        (ps[np - 1]->t->k == K_CALLABLE ||
         (ps[np - 1]->t->k == K_OPTIONAL && is_k(ps[np - 1]->t->t, K_CALLABLE)))) {
        block = t_ref(ps[np - 1]->t);
        np--;
    }
    ptype *size = NULL;
    if (np >= 2 && is_range(ps[np - 2]) && is_range(ps[np - 1])) {
        size = int_range(c, ps[np - 2], ps[np - 1]);
        np -= 2;
    } else if (np >= 1 && is_range(ps[np - 1])) {
        size = int_range(c, ps[np - 1], NULL);
        np -= 1;
    }
    if (herr_isset(c->err)) {
        t_unref(ret);
        t_unref(block);
        return NULL;
    }
    tlist types = {0};
    for (size_t i = 0; i < np; i++)
        tl_push(&types, type_of(ps[i]));
    if (!types.n && size && n_lt(n_int(0), size->to))
        tl_push(&types, mk(K_UNIT));
    return mk_callable(mk_tuple(types.v, types.n, size), block, ret);
}

static ptype *make_tuple(ictx *c, const ast *a, pval **params, size_t np)
{
    ptype *size = NULL;
    size_t n = np;
    if (np >= 2 && is_range(params[np - 2])) {
        const pval *min = params[np - 2], *max = params[np - 1];
        if (!is_range(max)) {
            invalid_spec(c, a);
            return NULL;
        }
        pval zero = {.k = PV_NUM, .n = n_int(0)};
        size = int_range(c, (is_default(min) || is_str(min, "default")) ? &zero : min, is_default(max) ? NULL : max);
        n = np - 2;
    } else if (np >= 1 && is_range(params[np - 1])) {
        const pval *min = params[np - 1];
        pval zero = {.k = PV_NUM, .n = n_int(0)};
        size = int_range(c, (is_default(min) || is_str(min, "default")) ? &zero : min, NULL);
        n = np - 1;
    }
    if (herr_isset(c->err))
        return NULL;
    ptype **types = xcalloc(n ? n : 1, sizeof *types);
    for (size_t i = 0; i < n; i++)
        types[i] = type_of(params[i]);
    return mk_tuple(types, n, size);
}

static ptype *make_runtime(ictx *c, const ast *a, pval **params)
{
    const pval *rt = params[0], *name = params[1];
    if ((rt->k != PV_STR && rt->k != PV_NIL) || (name->k != PV_STR && name->k != PV_NIL)) {
        invalid_spec(c, a);
        return NULL;
    }
    return mk_runtime(rt->s.p, rt->s.n, rt->k == PV_STR, name->s.p, name->s.n, name->k == PV_STR);
}

static ptype *access_type(ictx *c, const ast *a, pval **params, size_t np)
{
    const ast *q = a->kids[0];
    if (q->k != A_QREF) {
        invalid_spec(c, a);
        return NULL;
    }
    const char *name;
    size_t nlen;
    qref_name(c, q, &name, &nlen);
    char *lname = lower_dup(name, nlen);
    ptype *r = NULL;
#define IS(s) (!strcmp(lname, s))
    if (IS("array")) {
        if (np == 1) {
            ptype *e = need_type(c, a, params[0]);
            r = e ? mk_array(e, NULL) : NULL;
        } else if (np == 2) {
            if (is_type(params[0])) {
                ptype *s = size_param(c, a, params[1]);
                r = s ? mk_array(t_ref(params[0]->t), s) : NULL;
            } else {
                ptype *s = two_ranges(c, a, params[0], params[1]);
                r = s ? mk_array(mk(K_DEFAULT), s) : NULL; /* array_of(:default) is Array[Default] */
            }
        } else if (np == 3) {
            ptype *e = need_type(c, a, params[0]);
            ptype *s = e ? two_ranges(c, a, params[1], params[2]) : NULL;
            r = s ? mk_array(e, s) : NULL;
            if (!s)
                t_unref(e);
        } else {
            invalid_params(c, "Array", "1 to 3", np);
        }
    } else if (IS("hash")) {
        if (np == 2) {
            if (is_type(params[0]) && is_type(params[1])) {
                r = mk_hash(t_ref(params[0]->t), t_ref(params[1]->t), NULL);
            } else {
                ptype *s = two_ranges(c, a, params[0], params[1]);
                r = s ? mk_hash(mk(K_DEFAULT), mk(K_DEFAULT), s) : NULL;
            }
        } else if (np == 3) {
            ptype *s = size_param(c, a, params[2]);
            if (s && (!is_type(params[0]) || !is_type(params[1]))) {
                invalid_spec(c, a);
                t_unref(s);
                s = NULL;
            }
            r = s ? mk_hash(t_ref(params[0]->t), t_ref(params[1]->t), s) : NULL;
        } else if (np == 4) {
            ptype *s = two_ranges(c, a, params[2], params[3]);
            if (s && (!is_type(params[0]) || !is_type(params[1]))) {
                invalid_spec(c, a);
                t_unref(s);
                s = NULL;
            }
            r = s ? mk_hash(t_ref(params[0]->t), t_ref(params[1]->t), s) : NULL;
        } else {
            invalid_params(c, "Hash", "2 to 4", np);
        }
    } else if (IS("collection")) {
        ptype *s = NULL;
        if (np == 1)
            s = size_param(c, a, params[0]);
        else if (np == 2)
            s = two_ranges(c, a, params[0], params[1]);
        else
            invalid_params(c, "Collection", "1 to 2", np);
        r = s ? mk_collection(s) : NULL;
    } else if (IS("class")) {
        if (np != 1)
            invalid_params(c, "Class", "1", np);
        else if (params[0]->k != PV_STR)
            invalid_spec(c, a);
        else {
            const char *s = params[0]->s.p;
            size_t sn = params[0]->s.n;
            if (sn >= 2 && s[0] == ':' && s[1] == ':')
                s += 2, sn -= 2;
            r = mk_named(K_CLASS, s, sn);
        }
    } else if (IS("regexp")) {
        if (np != 1)
            invalid_params(c, "Regexp", "1", np);
        else if (params[0]->k == PV_STR || params[0]->k == PV_REGEX) {
            /* Ruby compiles the pattern when the type is first used; it fails the same way */
            regex_t *re = re_compile(params[0]->s.p, params[0]->s.n, c->err);
            if (re) {
                r = mk_regexp(params[0]->s.p, params[0]->s.n, true);
                r->re = re;
            }
        }
        else
            invalid_spec(c, a);
    } else if (IS("enum")) {
        bool ci = false;
        size_t n = np;
        if (n && params[n - 1]->k == PV_BOOL) {
            ci = params[n - 1]->b;
            n--;
        }
        if (n < 1) {
            invalid_params(c, "Enum", "1 or more", n);
        } else {
            pstr *vals = xcalloc(n, sizeof *vals);
            bool ok = true;
            for (size_t i = 0; i < n && ok; i++) {
                ok = params[i]->k == PV_STR;
                vals[i] = params[i]->s;
            }
            if (ok)
                r = mk_enum(vals, n, ci);
            else
                herr_set(c->err, HERR_PUPPET, "Enum parameters must be identifiers or strings");
            free(vals);
        }
    } else if (IS("pattern")) {
        if (np < 1)
            invalid_params(c, "Pattern", "1 or more", np);
        else
            r = make_pattern(c, params, np);
    } else if (IS("variant")) {
        tlist l = {0};
        bool ok = true;
        for (size_t i = 0; i < np && ok; i++) {
            ok = is_type(params[i]);
            if (ok)
                tl_push(&l, t_ref(params[i]->t));
        }
        if (ok) {
            r = maybe_create(&l);
        } else {
            tl_free(&l);
            invalid_spec(c, a);
        }
    } else if (IS("tuple")) {
        r = make_tuple(c, a, params, np);
    } else if (IS("callable")) {
        if (np > 1 && params[0]->k == PV_ARRAY && np != 2)
            invalid_params(c, "callable", "2 when first parameter is an array", np);
        else
            r = make_callable(c, a, params, np);
    } else if (IS("struct")) {
        if (np != 1)
            invalid_params(c, "Struct", "1", np);
        else if (params[0]->k != PV_HASH)
            invalid_spec(c, a);
        else
            r = make_struct(c, a, params[0]);
    } else if (IS("boolean")) {
        if (np != 1)
            invalid_params(c, "Boolean", "1", np);
        else if (params[0]->k != PV_BOOL)
            herr_set(c->err, HERR_PUPPET, "Boolean parameter must be true or false");
        else
            r = mk_bool(params[0]->b);
    } else if (IS("integer") || IS("float")) {
        bool fl = IS("float");
        if (np == 1) {
            if (is_int(params[0]) || (fl && params[0]->k == PV_NUM)) {
                ptype *x = int_range(c, params[0], NULL);
                r = x;
            } else if (is_default(params[0])) {
                r = dflt(K_INTEGER); /* made a Float below */
            } else {
                invalid_spec(c, a);
            }
        } else if (np == 2) {
            const pval *f = params[0], *t = params[1];
            bool okp = (f->k == PV_NUM || is_default(f)) && (t->k == PV_NUM || is_default(t) || is_str(t, "default"));
            if (!fl && is_str(f, "default"))
                r = int_range(c, f, t); /* fails as Ruby does */
            else if (!okp)
                invalid_spec(c, a);
            else
                r = int_range(c, f, t);
        } else {
            invalid_params(c, fl ? "Float" : "Integer", "1 or 2", np);
        }
        if (r && fl) {
            /* float_range: bounds become Floats */
            num f = r->from.k == N_FLOAT ? r->from : n_float(r->from.k == N_INT ? (double)r->from.i : big_to_double(r->from.big));
            num t = r->to.k == N_FLOAT ? r->to : n_float(r->to.k == N_INT ? (double)r->to.i : big_to_double(r->to.big));
            ptype *x = mk_float(f, t);
            t_unref(r);
            r = x;
        }
    } else if (IS("string")) {
        ptype *s = NULL;
        if (np == 1)
            s = size_param(c, a, params[0]);
        else if (np == 2)
            s = two_ranges(c, a, params[0], params[1]);
        else
            invalid_params(c, "String", "1 to 2", np);
        r = s ? mk_string_size(s) : NULL;
    } else if (IS("sensitive")) {
        if (np != 1)
            invalid_params(c, "Sensitive", "0 to 1", np);
        else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? mk_contained(K_SENSITIVE, t) : NULL;
        }
    } else if (IS("optional") || IS("notundef")) {
        bool opt = IS("optional");
        if (np != 1) {
            invalid_params(c, opt ? "Optional" : "NotUndef", opt ? "1" : "0 to 1", np);
        } else if (params[0]->k == PV_STR) {
            r = mk_contained(opt ? K_OPTIONAL : K_NOTUNDEF, mk_string_val(params[0]->s.p, params[0]->s.n));
        } else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? mk_contained(opt ? K_OPTIONAL : K_NOTUNDEF, t) : NULL;
        }
    } else if (IS("type") || IS("iterable") || IS("iterator")) {
        const char *cap = IS("type") ? "Type" : IS("iterable") ? "Iterable" : "Iterator";
        tkind k = IS("type") ? K_TYPE : IS("iterable") ? K_ITERABLE : K_ITERATOR;
        if (np != 1) {
            invalid_params(c, cap, "1", np);
        } else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? mk_contained(k, t) : NULL;
        }
    } else if (IS("any") || IS("data") || IS("catalogentry") || IS("scalar") || IS("undef") || IS("numeric") ||
               IS("default") || IS("semverrange")) {
        unparameterized(c, q);
    } else if (IS("runtime")) {
        if (np != 2)
            invalid_params(c, "Runtime", "2", np);
        else
            r = make_runtime(c, a, params);
    } else if (IS("resource")) {
        const pval *p0 = params[0];
        if (np > 2) {
            invalid_params(c, "Resource", "1 or 2", np);
        } else if (p0->k == PV_STR || (is_type(p0) && (p0->t->k == K_RESOURCE || p0->t->k == K_TYPEREF) && p0->t->has_s)) {
            const char *rn = p0->k == PV_STR ? p0->s.p : p0->t->s.p;
            size_t rl = p0->k == PV_STR ? p0->s.n : p0->t->s.n;
            char *cn = xstrndup(rn, rl);
            if (cn[0] && islower((unsigned char)cn[0])) /* capitalize_segments */
                for (size_t i = 0; i < rl; i++)
                    if (i == 0 || (i >= 2 && cn[i - 1] == ':' && cn[i - 2] == ':'))
                        cn[i] = (char)toupper((unsigned char)cn[i]);
            r = mk_named(K_RESOURCE, cn, rl);
            free(cn);
        } else {
            invalid_spec(c, a);
        }
    } else if (IS("timespan") || IS("timestamp") || IS("semver") || IS("uri") || IS("object") ||
               IS("typeset") || IS("init") || IS("binary") || IS("typealias") || IS("typereference")) {
        /* parameterized forms of these are not supported here: they describe no value we hold */
        invalid_spec(c, a);
    } else {
        /* a name outside the type map: a resource type, an alias (which takes no parameters),
         * or a reference to an unknown type */
        ptype *t = load_type(c, name, nlen);
        if (herr_isset(c->err)) {
            t_unref(t);
        } else if (!t) {
            r = mk_named(K_TYPEREF, c->src + a->start, a->end - a->start);
        } else if (t->k == K_RESOURCE) {
            if (np != 1) {
                char *cased = xstrndup(name, nlen);
                invalid_params(c, cased, "1", np);
                free(cased);
            } else {
                r = t_ref(t); /* the title is kept out: Resource titles describe no value here */
            }
            t_unref(t);
        } else {
            t_unref(t);
            unparameterized(c, q);
        }
    }
#undef IS
    free(lname);
    return r;
}

static ptype *parse_type_e(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                           herr *err);

/* Parses text as a type (err may be NULL). cli selects `puppet lookup --type` behaviour (see
 * scope_load_error); locals are a new function's local type aliases. */
static ptype *parse_type(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                         herr *err)
{
    herr local = {0};
    ptype *t = parse_type_e(text, len, cli, locals, nlocals, err ? err : &local);
    herr_clear(&local);
    return t;
}

static ptype *parse_type_e(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                           herr *err)
{
    /* TypeParser.opt_type_map: these exact strings bypass the parser; of them only "Array[1]"
     * differs from what parsing gives (parsed, Array[1] is not a valid type) */
    if (len == 8 && !memcmp(text, "Array[1]", 8))
        return mk_array(mk(K_ANY), mk_int(n_int(1), n_posinf()));
    lexer lx = {text, len, NULL, 0, 0, err};
    if (!lex_all(&lx)) {
        lx_free(&lx);
        return NULL;
    }
    parser p = {&lx, 0, 0, err};
    ast *a = p_program(&p);
    ptype *r = NULL;
    if (a) {
        ictx c = {text, cli, locals, nlocals, err, 0};
        pval *v = interp(&c, a);
        if (v && v->k == PV_TYPE)
            r = t_ref(v->t);
        else if (v)
            invalid_spec(&c, a);
        pv_free(v);
        a_free(a);
    }
    lx_free(&lx);
    return r;
}

/* ======================================================================================
 * Public: parsing, matching, messages
 * ====================================================================================== */

/* Parses as Puppet's TypeParser does with a loader: the built-in aliases (Data, RichData, ...)
 * and resource types resolve, other unknown names become type references. */
ptype *ptype_parse(const char *text, herr *err)
{
    if (!text) {
        herr_set(err, HERR_PUPPET, "The expression <> is not a valid type specification.");
        return NULL;
    }
    return parse_type(text, strlen(text), false, NULL, 0, err);
}

/* `puppet lookup --type T` parses T with the Scope as loader context. Any name outside the
 * parser's own type map (Data, RichData, File, an unknown Foo, ...) then fails with a Ruby
 * NoMethodError: "private method `load' called for Scope(Class[main]):Puppet::Parser::Scope".
 * Not declared in ptype.h (which this file may not change): the prototype is
 *     ptype *ptype_parse_cli(const char *text, herr *err);  */
ptype *ptype_parse_cli(const char *text, herr *err);
ptype *ptype_parse_cli(const char *text, herr *err)
{
    if (!text) {
        herr_set(err, HERR_PUPPET, "The expression <> is not a valid type specification.");
        return NULL;
    }
    return parse_type(text, strlen(text), true, NULL, 0, err);
}

void ptype_free(ptype *t) { t_unref(t); }

bool ptype_match(const ptype *t, const hv *v) { return t && instance(t, v, 0); }

char *ptype_mismatch(const ptype *t, const hv *v, const char *subject)
{
    return assert_message(subject ? subject : "Value", t, v);
}

char *ptype_name_of_value(const hv *v)
{
    ptype *t = infer_set(v, 0);
    sbuf b = {0};
    short_name(&b, t);
    t_unref(t);
    return sb_take(&b);
}

char *ptype_to_s(const ptype *t) { return t_to_s(t); }

char *ptype_infer_to_s(const hv *v)
{
    ptype *t = infer(v, 0);
    char *s = t_to_s(t);
    t_unref(t);
    return s;
}

/* ======================================================================================
 * Ruby conversions used by the new() functions
 * ====================================================================================== */

/* Ruby String#inspect (the parts that matter for messages). */
static void ruby_str_inspect(sbuf *b, const char *s, size_t n)
{
    sb_addc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': sb_adds(b, "\\\""); break;
        case '\\': sb_adds(b, "\\\\"); break;
        case '\n': sb_adds(b, "\\n"); break;
        case '\t': sb_adds(b, "\\t"); break;
        case '\r': sb_adds(b, "\\r"); break;
        case '\f': sb_adds(b, "\\f"); break;
        case '\v': sb_adds(b, "\\v"); break;
        case '\a': sb_adds(b, "\\a"); break;
        case '\b': sb_adds(b, "\\b"); break;
        case 0x1b: sb_adds(b, "\\e"); break;
        case '#':
            if (i + 1 < n && (s[i + 1] == '{' || s[i + 1] == '$' || s[i + 1] == '@'))
                sb_adds(b, "\\#");
            else
                sb_addc(b, '#');
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                sb_addf(b, "\\u%04X", c);
            else
                sb_addc(b, (char)c);
        }
    }
    sb_addc(b, '"');
}

/* Ruby's inspect of a value (Array#inspect, Hash#inspect in Ruby 3.1 form). */
static void ruby_inspect(sbuf *b, const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH) {
        sb_adds(b, "...");
        return;
    }
    switch (hv_kind_of(v)) {
    case HV_UNDEF: sb_adds(b, "nil"); break;
    case HV_BOOL: sb_adds(b, hv_bool_val(v) ? "true" : "false"); break;
    case HV_INT: sb_addf(b, "%" PRId64, hv_int_val(v)); break;
    case HV_BIGINT: sb_adds(b, hv_bigint_digits(v)); break;
    case HV_FLOAT: ruby_float_to_s(b, hv_float_val(v)); break;
    case HV_STRING: ruby_str_inspect(b, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SYMBOL: sb_addf(b, ":%s", hv_str_ptr(v)); break;
    case HV_SENSITIVE: sb_adds(b, "#<Sensitive [value redacted]>"); break;
    case HV_ARRAY:
        sb_addc(b, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_adds(b, ", ");
            ruby_inspect(b, hv_array_get(v, i), depth + 1);
        }
        sb_addc(b, ']');
        break;
    case HV_HASH:
        sb_addc(b, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_adds(b, ", ");
            ruby_inspect(b, hv_hash_key_at(v, i), depth + 1);
            sb_adds(b, "=>");
            ruby_inspect(b, hv_hash_val_at(v, i), depth + 1);
        }
        sb_addc(b, '}');
        break;
    }
}

/* Ruby's to_s of a value in string interpolation. */
static void ruby_to_s(sbuf *b, const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: break;
    case HV_STRING: case HV_SYMBOL: sb_addn(b, hv_str_ptr(v), hv_str_len(v)); break;
    case HV_SENSITIVE: sb_adds(b, "Sensitive [value redacted]"); break;
    default: ruby_inspect(b, v, 0); break;
    }
}

/* An integer given as digits in a base, as a value (HV_INT or, when large, HV_BIGINT). */
static hv *digits_to_value(const char *digits, size_t n, int base, bool neg)
{
    uint64_t acc = 0;
    bool big = false;
    for (size_t i = 0; i < n && !big; i++) {
        int d = isdigit((unsigned char)digits[i]) ? digits[i] - '0' : tolower((unsigned char)digits[i]) - 'a' + 10;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            big = true;
        else
            acc = acc * (uint64_t)base + (uint64_t)d;
    }
    if (!big && (acc <= (uint64_t)INT64_MAX || (neg && acc == (uint64_t)INT64_MAX + 1)))
        return hv_int(neg ? (acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc) : (int64_t)acc);
    /* long multiplication in base 10^9 */
    size_t cap = n + 2, len = 1;
    uint32_t *limbs = xcalloc(cap, sizeof *limbs);
    for (size_t i = 0; i < n; i++) {
        uint64_t carry = (uint64_t)(isdigit((unsigned char)digits[i]) ? digits[i] - '0' : tolower((unsigned char)digits[i]) - 'a' + 10);
        for (size_t k = 0; k < len; k++) {
            uint64_t x = (uint64_t)limbs[k] * (uint64_t)base + carry;
            limbs[k] = (uint32_t)(x % 1000000000u);
            carry = x / 1000000000u;
        }
        while (carry && len < cap) {
            limbs[len++] = (uint32_t)(carry % 1000000000u);
            carry /= 1000000000u;
        }
    }
    sbuf b = {0};
    if (neg)
        sb_addc(&b, '-');
    sb_addf(&b, "%u", limbs[len - 1]);
    for (size_t k = len - 1; k-- > 0;)
        sb_addf(&b, "%09u", limbs[k]);
    free(limbs);
    hv *r = hv_bigint(b.s, b.len);
    sb_free(&b);
    return r;
}

static int digit_value(char c)
{
    if (isdigit((unsigned char)c))
        return c - '0';
    if (isalpha((unsigned char)c))
        return tolower((unsigned char)c) - 'a' + 10;
    return 99;
}

/* Kernel#Integer(str) (base 0: prefixes 0x 0b 0o 0d and a leading 0 for octal) and
 * Integer(str, base). NULL with *msg set on failure. */
static hv *ruby_Integer(const char *s, size_t n, int base, char **msg)
{
    size_t i = 0, end = n;
    while (i < end && isspace((unsigned char)s[i]))
        i++;
    while (end > i && isspace((unsigned char)s[end - 1]))
        end--;
    bool neg = false;
    if (i < end && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i + 1 < end && s[i] == '0') {
        char p = (char)tolower((unsigned char)s[i + 1]);
        int pb = p == 'x' ? 16 : p == 'b' ? 2 : p == 'o' ? 8 : p == 'd' ? 10 : 0;
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            i += 2;
        } else if (base == 0) {
            base = 8;
        }
    }
    if (base == 0)
        base = 10;
    sbuf digits = {0};
    bool ok = i < end;
    for (size_t k = i; k < end && ok; k++) {
        if (s[k] == '_' && k > i && k + 1 < end && s[k - 1] != '_' && s[k + 1] != '_') {
            continue;
        }
        if (digit_value(s[k]) >= base)
            ok = false;
        else
            sb_addc(&digits, s[k]);
    }
    if (!ok || !digits.len) {
        sb_free(&digits);
        sbuf m = {0};
        sb_adds(&m, "invalid value for Integer(): ");
        ruby_str_inspect(&m, s, n);
        *msg = sb_take(&m);
        return NULL;
    }
    hv *r = digits_to_value(digits.s, digits.len, base, neg);
    sb_free(&digits);
    return r;
}

/* Kernel#Float(str) for the decimal and hexadecimal forms the Float patterns let through. */
static bool ruby_Float(const char *s, size_t n, double *out, char **msg)
{
    size_t i = 0, end = n;
    while (i < end && isspace((unsigned char)s[i]))
        i++;
    while (end > i && isspace((unsigned char)s[end - 1]))
        end--;
    sbuf clean = {0};
    bool ok = i < end;
    size_t k = i;
    if (k < end && (s[k] == '+' || s[k] == '-'))
        sb_addc(&clean, s[k++]);
    bool hex = k + 1 < end && s[k] == '0' && (s[k + 1] == 'x' || s[k + 1] == 'X');
    if (hex) {
        sb_adds(&clean, "0x");
        k += 2;
        if (k >= end)
            ok = false;
        for (; k < end && ok; k++) {
            if (!isxdigit((unsigned char)s[k]))
                ok = false;
            else
                sb_addc(&clean, s[k]);
        }
    } else {
        /* digits [. digits] [e [sign] digits], underscores between digits */
        bool seen_digit = false, seen_dot = false, seen_e = false;
        for (; k < end && ok; k++) {
            char c = s[k];
            if (isdigit((unsigned char)c)) {
                seen_digit = true;
                sb_addc(&clean, c);
            } else if (c == '_' && k > i && isdigit((unsigned char)s[k - 1]) && k + 1 < end &&
                       isdigit((unsigned char)s[k + 1])) {
                continue;
            } else if (c == '.' && !seen_dot && !seen_e && seen_digit && k + 1 < end &&
                       isdigit((unsigned char)s[k + 1])) {
                seen_dot = true;
                sb_addc(&clean, c);
            } else if ((c == 'e' || c == 'E') && !seen_e && seen_digit && k + 1 < end) {
                seen_e = true;
                sb_addc(&clean, c);
                if (s[k + 1] == '+' || s[k + 1] == '-')
                    sb_addc(&clean, s[++k]);
                if (k + 1 >= end || !isdigit((unsigned char)s[k + 1]))
                    ok = false;
            } else {
                ok = false;
            }
        }
        ok = ok && seen_digit;
    }
    if (!ok) {
        sb_free(&clean);
        sbuf m = {0};
        sb_adds(&m, "invalid value for Float(): ");
        ruby_str_inspect(&m, s, n);
        *msg = sb_take(&m);
        return false;
    }
    if (hex) {
        const char *p = clean.s;
        bool neg = *p == '-';
        if (*p == '+' || *p == '-')
            p++;
        double d = 0;
        for (p += 2; *p; p++)
            d = d * 16 + digit_value(*p);
        *out = neg ? -d : d;
    } else {
        *out = strtod(clean.s, NULL);
    }
    sb_free(&clean);
    return true;
}

/* WS_BETWEEN_SIGN_AND_NUMBER: "- 5" is retried as "-5". */
static bool ws_between_sign(const char *s, size_t n, sbuf *out)
{
    if (n < 2 || (s[0] != '+' && s[0] != '-') || (s[1] != ' ' && s[1] != '\t'))
        return false;
    size_t i = 1;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    sb_addc(out, s[0]);
    sb_addn(out, s + i, n - i);
    return true;
}

/* Float#to_i (truncation; large values become big integers). */
static hv *float_to_i(double d, char **msg)
{
    if (isnan(d) || isinf(d)) {
        sbuf m = {0};
        ruby_float_to_s(&m, d);
        *msg = sb_take(&m);
        return NULL;
    }
    double t = trunc(d);
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0)
        return hv_int((int64_t)t);
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", t);
    return hv_bigint(buf, strlen(buf));
}

static double int_to_float(const hv *v)
{
    return hv_is(v, HV_INT) ? (double)hv_int_val(v) : big_to_double(v);
}

/* Integer#abs / Float#abs */
static hv *num_abs(hv *v)
{
    if (hv_is(v, HV_INT) && hv_int_val(v) < 0) {
        int64_t i = hv_int_val(v);
        hv_decref(v);
        if (i == INT64_MIN)
            return hv_bigint("9223372036854775808", 19);
        return hv_int(-i);
    }
    if (hv_is(v, HV_FLOAT) && signbit(hv_float_val(v))) {
        double d = hv_float_val(v);
        hv_decref(v);
        return hv_float(fabs(d));
    }
    if (hv_is(v, HV_BIGINT) && big_sign(v) < 0) {
        const char *d = hv_bigint_digits(v) + 1;
        hv *r = hv_bigint(d, strlen(d));
        hv_decref(v);
        return r;
    }
    return v;
}

/* ======================================================================================
 * new(Type, value, *args): the new functions of the types (types.rb new_function)
 * ====================================================================================== */

#define INTEGER_PATTERN_LENIENT "\\A[+-]?\\s*(?:(?:\\d+)|(?:0[xX][0-9A-Fa-f]+)|(?:0[bB][01]+))\\z"
#define FLOAT_PATTERN                                                                                  \
    "\\A[+-]?\\s*(?:(?:(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE]-?\\d+)?)|(?:0[xX][0-9A-Fa-f]+)|(?:0[0-7]+)|" \
    "(?:0[bB][01]+))\\z"
#define FMT_PATTERN_STR "^%([\\s\\[+#0{<(|-]*)([1-9][0-9]*)?(?:\\.([0-9]+))?([a-zA-Z])$"

typedef enum {
    H_INT_ARGS, H_INT_HASH, H_INT_ERR_HASH, H_INT_ERR,
    H_FLOAT_ARGS, H_FLOAT_HASH, H_FLOAT_ERR,
    H_NUM_ARGS, H_NUM_HASH, H_NUM_ERR,
    H_BOOL, H_BOOL_ERR, H_STR,
    H_ARR_TO, H_ARR_WRAP, H_ARR_ERR,
    H_HASH_TREE, H_HASH_TUPLES, H_HASH_ARRAY,
    H_SENS_SENS, H_SENS_ANY, H_UNIT, H_NEW,
} handler_id;

typedef struct {
    const char *types[3];
    const char *names[3];
    int min, max; /* max < 0: repeated last parameter */
    handler_id h;
    bool mismatch; /* an argument_mismatch handler: its string becomes the error */
} sigdef;

typedef struct {
    const char *name;
    const char *locals[6]; /* "Name = <type>" */
    sigdef sigs[5];
} fndef;

static const fndef FN_INTEGER = {
    "new",
    {"Radix = Variant[Default, Integer[2,2], Integer[8,8], Integer[10,10], Integer[16,16]]",
     "Convertible = Variant[Numeric, Boolean, Pattern[/" INTEGER_PATTERN_LENIENT "/], Timespan, Timestamp]",
     "NamedArgs = Struct[{from => Convertible, Optional[radix] => Radix, Optional[abs] => Boolean}]"},
    {{{"Convertible", "Radix", "Boolean"}, {"from", "radix", "abs"}, 1, 3, H_INT_ARGS, false},
     {{"NamedArgs"}, {"hash_args"}, 1, 1, H_INT_HASH, false},
     {{"Hash"}, {"hash_args"}, 1, 1, H_INT_ERR_HASH, true},
     {{"Any", "Integer", "Boolean"}, {"from", "radix", "abs"}, 1, 3, H_INT_ERR, true}},
};
static const fndef FN_FLOAT = {
    "new_float",
    {"Convertible = Variant[Numeric, Boolean, Pattern[/" FLOAT_PATTERN "/], Timespan, Timestamp]",
     "NamedArgs = Struct[{from => Convertible, Optional[abs] => Boolean}]"},
    {{{"Convertible", "Boolean"}, {"from", "abs"}, 1, 2, H_FLOAT_ARGS, false},
     {{"NamedArgs"}, {"hash_args"}, 1, 1, H_FLOAT_HASH, false},
     {{"Any", "Boolean"}, {"from", "abs"}, 1, 2, H_FLOAT_ERR, true}},
};
static const fndef FN_NUMERIC = {
    "new_numeric",
    {"Convertible = Variant[Integer, Float, Boolean, Pattern[/" FLOAT_PATTERN "/], Timespan, Timestamp]",
     "NamedArgs = Struct[{from => Convertible, Optional[abs] => Boolean}]"},
    {{{"Convertible", "Boolean"}, {"from", "abs"}, 1, 2, H_NUM_ARGS, false},
     {{"NamedArgs"}, {"hash_args"}, 1, 1, H_NUM_HASH, false},
     {{"Any", "Boolean"}, {"from", "abs"}, 1, 2, H_NUM_ERR, true}},
};
static const fndef FN_BOOLEAN = {
    "new_boolean",
    {NULL},
    {{{"Variant[Integer, Float, Boolean, Enum['false','true','yes','no','y','n',true]]"}, {"from"}, 1, 1, H_BOOL, false},
     {{"Any"}, {"from"}, 1, 1, H_BOOL_ERR, true}},
};
static const fndef FN_STRING = {
    "new_string",
    {"Format = Pattern[/" FMT_PATTERN_STR "/]",
     "ContainerFormat = Struct[{Optional[format] => Format, Optional[separator] => String, "
     "Optional[separator2] => String, Optional[string_formats] => Hash[Type, Format]}]",
     "TypeMap = Hash[Type, Variant[Format, ContainerFormat]]", "Convertible = Any",
     "Formats = Variant[Default, String[1], TypeMap]"},
    {{{"Convertible", "Formats"}, {"from", "string_formats"}, 1, 2, H_STR, false}},
};
static const fndef FN_ARRAY = {
    "new_array",
    {NULL},
    {{{"Variant[Array,Hash,Binary,Iterable]", "Boolean[false]"}, {"from", "wrap"}, 1, 2, H_ARR_TO, false},
     {{"Any", "Boolean[true]"}, {"from", "wrap"}, 2, 2, H_ARR_WRAP, false},
     {{"Any", "Boolean"}, {"from", "wrap"}, 1, 2, H_ARR_ERR, true}},
};
static const fndef FN_HASH = {
    "new_hash",
    {"KeyValueArray = Array[Tuple[Any,Any],1]", "TreeArray = Array[Tuple[Array,Any],1]",
     "NewHashOption = Enum[tree, hash_tree]"},
    {{{"TreeArray", "NewHashOption"}, {"from", "build_option"}, 1, 2, H_HASH_TREE, false},
     {{"KeyValueArray"}, {"from"}, 1, 1, H_HASH_TUPLES, false},
     {{"Any"}, {"from"}, 1, 1, H_HASH_ARRAY, false}},
};
static const fndef FN_SENSITIVE = {
    "new_Sensitive",
    {NULL},
    {{{"Sensitive"}, {"value"}, 1, 1, H_SENS_SENS, false}, {{"Any"}, {"value"}, 1, 1, H_SENS_ANY, false}},
};
static const fndef FN_UNIT = {
    "new_unit",
    {NULL},
    {{{"Any"}, {"from"}, 1, 1, H_UNIT, false}},
};
/* the `new` function itself: new(Type type, Any *args) */
static const fndef FN_NEW = {
    "new",
    {NULL},
    {{{"Type", "Any"}, {"type", "args"}, 1, -1, H_NEW, false}},
};

/* A function ready to dispatch: its local aliases and signature types. */
typedef struct {
    const fndef *def;
    local_alias locals[6];
    size_t nlocals;
    ptype *params[5]; /* the Tuple of each signature */
    size_t nsigs;
    herr *err;
} nfun;

static void nf_free(nfun *f)
{
    for (size_t i = 0; i < f->nlocals; i++) {
        free((char *)f->locals[i].name);
        t_unref(f->locals[i].type);
    }
    for (size_t i = 0; i < f->nsigs; i++)
        t_unref(f->params[i]);
}

static const ptype *nf_local(const nfun *f, const char *name)
{
    for (size_t i = 0; i < f->nlocals; i++)
        if (!strcmp(f->locals[i].name, name))
            return f->locals[i].type;
    return NULL;
}

static bool nf_init(nfun *f, const fndef *def, herr *err)
{
    memset(f, 0, sizeof *f);
    f->def = def;
    f->err = err;
    for (size_t i = 0; i < 6 && def->locals[i]; i++) {
        const char *eq = strstr(def->locals[i], " = ");
        const char *body = eq + 3;
        ptype *al = mk_named(K_ALIAS, def->locals[i], (size_t)(eq - def->locals[i]));
        al->t = parse_type(body, strlen(body), false, f->locals, f->nlocals, err);
        if (!al->t) {
            t_unref(al);
            return false;
        }
        f->locals[f->nlocals].name = lower_dup(def->locals[i], (size_t)(eq - def->locals[i]));
        f->locals[f->nlocals++].type = al;
    }
    for (size_t s = 0; s < 5 && def->sigs[s].types[0]; s++) {
        const sigdef *sd = &def->sigs[s];
        size_t nt = 0;
        while (nt < 3 && sd->types[nt])
            nt++;
        ptype **types = xcalloc(nt, sizeof *types);
        for (size_t k = 0; k < nt; k++) {
            types[k] = parse_type(sd->types[k], strlen(sd->types[k]), false, f->locals, f->nlocals, err);
            if (!types[k]) {
                for (size_t j = 0; j < k; j++)
                    t_unref(types[j]);
                free(types);
                return false;
            }
        }
        ptype *size = (sd->min > 0 && sd->min == sd->max)
                          ? NULL
                          : mk_int(n_int(sd->min), sd->max < 0 ? n_posinf() : n_int(sd->max));
        f->params[f->nsigs++] = mk_tuple(types, nt, size);
    }
    return true;
}

/* ---- describe_signatures: the message when no signature accepts the arguments ---- */

static void signature_string(sbuf *b, const nfun *f, size_t s)
{
    const ptype *pt = f->params[s];
    const sigdef *sd = &f->def->sigs[s];
    ptype *range = tuple_size_type(pt);
    num from = range->from, to = range->to;
    size_t nnames = 0;
    while (nnames < 3 && sd->names[nnames])
        nnames++;
    if (!(n_eq(from, n_int(0)) && n_eq(to, n_int(0)))) {
        for (size_t i = 0; i < nnames; i++) {
            const ptype *type = pt->v[i < pt->n ? i : pt->n - 1];
            const char *indicator = "";
            if (n_is_posinf(to) && i == nnames - 1) {
                indicator = n_eq(from, n_int((int64_t)nnames)) ? "+" : "*";
            } else if (n_lt(from, n_int((int64_t)i + 1))) {
                indicator = "?";
                if (is_k(type, K_OPTIONAL) && type->t)
                    type = type->t;
            }
            if (i)
                sb_adds(b, ", ");
            char *ts = t_to_s(type);
            sb_addf(b, "%s %s%s", ts, sd->names[i], indicator);
            free(ts);
        }
    }
    t_unref(range);
}

/* describe_signature_arguments for one signature and the arguments' inferred types */
static mlist describe_sig_args(const nfun *f, size_t s, const ptype *args_tuple)
{
    const ptype *pt = f->params[s];
    const sigdef *sd = &f->def->sigs[s];
    tpath root = {0};
    tpath p = path_plus(&root, PE_SIGNATURE, NULL, 0, s);
    ptype *psize = tuple_size_type(pt);
    ptype *asize = tuple_size_type(args_tuple);
    mlist d = {0};
    if (assignable(psize, asize, NULL)) {
        for (size_t i = 0; i < args_tuple->n; i++) {
            size_t adx = i < pt->n ? i : pt->n - 1;
            if (assignable(pt->v[adx], args_tuple->v[i], NULL))
                continue;
            const char *name = sd->names[adx < 3 ? adx : 2];
            tpath pp = path_plus(&p, PE_PARAM, name, strlen(name), 0);
            d = describe(pt->v[adx], args_tuple->v[i], &pp);
            path_free(&pp);
            if (d.n)
                break;
        }
    } else {
        ml_push(&d, m_new(M_COUNT, &p, psize, asize));
    }
    t_unref(psize);
    t_unref(asize);
    path_free(&p);
    return d;
}

static void describe_signatures(const nfun *f, const hv *args, herr *err)
{
    ptype *at = infer_set(args, 0);
    size_t ns = 0;
    size_t idx[5];
    for (size_t s = 0; s < f->nsigs; s++)
        if (!f->def->sigs[s].mismatch)
            idx[ns++] = s;
    mlist *arrays = xcalloc(ns ? ns : 1, sizeof *arrays);
    for (size_t i = 0; i < ns; i++) {
        arrays[i] = describe_sig_args(f, idx[i], at);
        /* the signature index of the path counts the listed signatures only */
        for (size_t k = 0; k < arrays[i].n; k++)
            if (arrays[i].v[k]->p.n && arrays[i].v[k]->p.v[0].k == PE_SIGNATURE)
                arrays[i].v[k]->p.v[0].idx = i;
    }
    mlist errs = merge_descriptions(0, M_COUNT, arrays, ns);
    free(arrays);
    sbuf b = {0};
    if (errs.n == 1) {
        sb_addf(&b, "'%s'", f->def->name);
        m_format(&b, errs.v[0]);
    } else {
        if (ns == 1) {
            sb_addf(&b, "'%s' expects (", f->def->name);
            signature_string(&b, f, idx[0]);
            sb_addc(&b, ')');
        } else {
            sb_addf(&b, "The function '%s' was called with arguments it does not accept. It expects one of:",
                    f->def->name);
        }
        for (size_t i = 0; i < ns; i++) {
            if (ns > 1) {
                sb_adds(&b, "\n  (");
                signature_string(&b, f, idx[i]);
                sb_addc(&b, ')');
            }
            mlist d = describe_sig_args(f, idx[i], at);
            for (size_t k = 0; k < d.n; k++) {
                sb_adds(&b, ns > 1 ? "\n    rejected:" : "\n  rejected:");
                m_format(&b, m_chop(d.v[k], 0));
            }
            ml_free(&d);
        }
    }
    herr_set(err, HERR_ERROR, "%s", sb_str(&b));
    sb_free(&b);
    ml_free(&errs);
    t_unref(at);
}

/* ---- the handlers ---- */

static const hv *arg(const hv *args, size_t i) { return hv_array_get(args, i); }
static size_t nargs(const hv *args) { return hv_array_len(args); }

static char *generalized_type_name(const hv *v)
{
    ptype *t = infer(v, 0), *g = generalize(t);
    char *s = t_to_s(g);
    t_unref(t);
    t_unref(g);
    return s;
}

/* "The string '...' cannot be converted to T" / "Value of type X cannot be converted to T" */
static char *cannot_convert(const hv *from, const char *to)
{
    if (hv_is(from, HV_STRING))
        return xasprintf("The string '%s' cannot be converted to %s", hv_str_ptr(from), to);
    char *tn = generalized_type_name(from);
    char *m = xasprintf("Value of type %s cannot be converted to %s", tn, to);
    free(tn);
    return m;
}

static bool set_msg_err(herr *err, char *msg)
{
    herr_set(err, HERR_ERROR, "%s", msg);
    free(msg);
    return false;
}

/* Integer(from) or Integer(from, radix), retried without blanks after the sign. */
static hv *string_to_integer(const char *s, size_t n, int radix, herr *err)
{
    char *msg = NULL;
    hv *r = ruby_Integer(s, n, radix, &msg);
    if (r)
        return r;
    sbuf retry = {0};
    if (ws_between_sign(s, n, &retry)) {
        char *m2 = NULL;
        r = ruby_Integer(retry.s, retry.len, radix, &m2);
        free(m2);
    }
    sb_free(&retry);
    if (r) {
        free(msg);
        return r;
    }
    set_msg_err(err, msg);
    return NULL;
}

static hv *integer_from(const hv *from, const hv *radix, const hv *abs, herr *err)
{
    hv *r = NULL;
    switch (hv_kind_of(from)) {
    case HV_FLOAT: {
        char *msg = NULL;
        r = float_to_i(hv_float_val(from), &msg);
        if (!r)
            set_msg_err(err, msg);
        break;
    }
    case HV_INT: case HV_BIGINT: r = hv_incref((hv *)from); break;
    case HV_BOOL: r = hv_int(hv_bool_val(from) ? 1 : 0); break;
    case HV_STRING: {
        int base = (radix && hv_is(radix, HV_INT)) ? (int)hv_int_val(radix) : 0;
        r = string_to_integer(hv_str_ptr(from), hv_str_len(from), base, err);
        break;
    }
    default:
        herr_set(err, HERR_ERROR, "can't convert %s into Integer", hv_kind_name(hv_kind_of(from)));
        break;
    }
    if (r && abs && hv_truthy(abs))
        r = num_abs(r);
    return r;
}

static bool assert_radix(const hv *radix, herr *err)
{
    if (hv_is(radix, HV_INT)) {
        int64_t r = hv_int_val(radix);
        if (r == 2 || r == 8 || r == 10 || r == 16)
            return true;
    }
    sbuf b = {0};
    ruby_to_s(&b, radix);
    herr_set(err, HERR_ERROR, "Illegal radix: %s, expected 2, 8, 10, 16, or default", sb_str(&b));
    sb_free(&b);
    return false;
}

/* on_error of Integer.new: an illegal radix raises, otherwise the message */
static char *integer_on_error(const hv *from, const hv *radix, herr *err)
{
    if (radix && !v_is_default(radix) && !assert_radix(radix, err))
        return NULL;
    return cannot_convert(from, "Integer");
}

static char *integer_on_error_hash(const nfun *f, const hv *h, herr *err)
{
    const hv *from = hv_hash_gets(h, "from");
    if (from && !instance(nf_local(f, "convertible"), from, 0))
        return integer_on_error(from, NULL, err);
    const hv *radix = hv_hash_gets(h, "radix");
    if (radix && !v_is_undef(radix) && !v_is_default(radix) && !assert_radix(radix, err))
        return NULL;
    const ptype *named = nf_local(f, "namedargs");
    if (!instance(named, h, 0)) {
        char *m = assert_message("Integer.new", named, h);
        herr_set(err, HERR_ERROR, "%s", m);
        free(m);
        return NULL;
    }
    sbuf b = {0};
    ruby_inspect(&b, h, 0);
    return sb_take(&b);
}

static hv *float_from(const hv *from, const hv *abs, herr *err)
{
    hv *r = NULL;
    switch (hv_kind_of(from)) {
    case HV_FLOAT: r = hv_incref((hv *)from); break;
    case HV_INT: case HV_BIGINT: r = hv_float(int_to_float(from)); break;
    case HV_BOOL: r = hv_float(hv_bool_val(from) ? 1.0 : 0.0); break;
    case HV_STRING: {
        const char *s = hv_str_ptr(from);
        size_t n = hv_str_len(from);
        hv *bin = NULL;
        if (n && s[0] == '0') {
            /* from[1].casecmp('b'): a lone "0" has no second character (NoMethodError) */
            if (n == 1) {
                herr_set(err, HERR_ERROR, "undefined method `casecmp' for nil:NilClass");
                return NULL;
            }
            if (s[1] == 'b' || s[1] == 'B') {
                bin = string_to_integer(s, n, 0, err);
                if (!bin)
                    return NULL;
                r = hv_float(int_to_float(bin));
                hv_decref(bin);
                break;
            }
        }
        double d;
        char *msg = NULL;
        if (ruby_Float(s, n, &d, &msg)) {
            r = hv_float(d);
            break;
        }
        sbuf retry = {0};
        if (ws_between_sign(s, n, &retry)) {
            hv *rs = hv_strn(retry.s, retry.len);
            herr e2 = {0};
            r = float_from(rs, NULL, &e2);
            herr_clear(&e2);
            hv_decref(rs);
        }
        sb_free(&retry);
        if (r) {
            free(msg);
            break;
        }
        set_msg_err(err, msg);
        return NULL;
    }
    default:
        herr_set(err, HERR_ERROR, "can't convert %s into Float", hv_kind_name(hv_kind_of(from)));
        return NULL;
    }
    if (r && abs && hv_truthy(abs))
        r = num_abs(r);
    return r;
}

/* Puppet::Pops::Utils.to_n for strings: NUMERIC =
 * \A[[:blank:]]*([-+]?)[[:blank:]]*((0[xX][0-9A-Fa-f]+)|(0?\d+)((?:\.\d+)?(?:[eE]-?\d+)?))[[:blank:]]*\z
 * Returns NULL when to_n gives nil (not a number, or Integer() failing as for "09"). */
static hv *negate_value(hv *r)
{
    if (!r)
        return NULL;
    if (hv_is(r, HV_INT) && hv_int_val(r) != INT64_MIN) {
        int64_t x = hv_int_val(r);
        hv_decref(r);
        return hv_int(-x);
    }
    if (hv_is(r, HV_FLOAT)) {
        double d = hv_float_val(r);
        hv_decref(r);
        return hv_float(-d);
    }
    num in = v_num(r);
    num n = n_negate(in);
    n_drop(&in);
    hv_decref(r);
    hv *b = n.k == N_INT ? hv_int(n.i) : hv_incref(n.big);
    n_drop(&n);
    return b;
}

static hv *utils_to_n(const char *s, size_t n)
{
    if (n >= 2 && s[0] == ':' && s[1] == ':') /* relativize_name */
        s += 2, n -= 2;
    size_t i = 0, end = n;
    while (i < end && (s[i] == ' ' || s[i] == '\t'))
        i++;
    while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
        end--;
    bool neg = false;
    if (i < end && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    while (i < end && (s[i] == ' ' || s[i] == '\t'))
        i++;
    char *msg = NULL;
    if (i + 1 < end && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        size_t k = i + 2;
        while (k < end && isxdigit((unsigned char)s[k]))
            k++;
        if (k == i + 2 || k != end)
            return NULL;
        hv *r = ruby_Integer(s + i, end - i, 0, &msg);
        free(msg);
        return neg ? negate_value(r) : r;
    }
    size_t k = i;
    while (k < end && isdigit((unsigned char)s[k]))
        k++;
    if (k == i)
        return NULL;
    size_t m4_end = k;
    if (k + 1 < end && s[k] == '.' && isdigit((unsigned char)s[k + 1])) {
        k++;
        while (k < end && isdigit((unsigned char)s[k]))
            k++;
    }
    if (k < end && (s[k] == 'e' || s[k] == 'E')) {
        size_t e = k + 1;
        if (e < end && s[e] == '-')
            e++;
        if (e < end && isdigit((unsigned char)s[e])) {
            while (e < end && isdigit((unsigned char)s[e]))
                e++;
            k = e;
        }
    }
    if (k != end)
        return NULL;
    if (k > m4_end) { /* match[5] is present: a float (match_to_fp) */
        hv *m4 = ruby_Integer(s + i, m4_end - i, 0, &msg);
        free(msg);
        if (!m4)
            return NULL;
        bool zero = hv_is(m4, HV_INT) && hv_int_val(m4) == 0;
        hv_decref(m4);
        const char *f = s + m4_end;
        size_t fl = k - m4_end, q = 0;
        if (q < fl && f[q] == '.')
            q++;
        while (q < fl && f[q] == '0')
            q++;
        if (zero && q < fl && (f[q] == 'e' || f[q] == 'E'))
            return NULL; /* 0 raised to a power stays nil */
        char *text = xstrndup(s + i, k - i);
        double d = strtod(text, NULL);
        free(text);
        if (isinf(d))
            return NULL;
        return hv_float(neg ? -d : d);
    }
    hv *r = ruby_Integer(s + i, k - i, 0, &msg);
    free(msg);
    return neg ? negate_value(r) : r;
}

static hv *numeric_from(const hv *from, const hv *abs, herr *err)
{
    hv *r = NULL;
    switch (hv_kind_of(from)) {
    case HV_FLOAT: case HV_INT: case HV_BIGINT: r = hv_incref((hv *)from); break;
    case HV_BOOL: r = hv_int(hv_bool_val(from) ? 1 : 0); break;
    case HV_STRING: {
        const char *s = hv_str_ptr(from);
        size_t n = hv_str_len(from);
        if (n && s[0] == '0' && n > 1 && strchr("bBxX", s[1])) {
            r = string_to_integer(s, n, 0, err);
            if (!r)
                return NULL;
        } else {
            r = utils_to_n(s, n);
            if (!r)
                return hv_undef();
        }
        break;
    }
    default:
        herr_set(err, HERR_ERROR, "can't convert %s into Numeric", hv_kind_name(hv_kind_of(from)));
        return NULL;
    }
    if (r && abs && hv_truthy(abs))
        r = num_abs(r);
    return r;
}

static hv *boolean_from(const hv *from)
{
    switch (hv_kind_of(from)) {
    case HV_FLOAT: return hv_bool(hv_float_val(from) != 0.0);
    case HV_INT: return hv_bool(hv_int_val(from) != 0);
    case HV_BIGINT: return hv_true();
    case HV_BOOL: return hv_incref((hv *)from);
    case HV_STRING: {
        const char *s = hv_str_ptr(from);
        size_t n = hv_str_len(from);
        bool f = ascii_casecmp_eq(s, n, "false", 5) || ascii_casecmp_eq(s, n, "no", 2) || ascii_casecmp_eq(s, n, "n", 1);
        return hv_bool(!f);
    }
    default: return hv_true();
    }
}

static bool string_format(sbuf *out, const hv *v, const hv *fmt, herr *err);

/* Array.new(from): arrays as is, hashes as [key, value] pairs, strings as characters, an
 * Integer n as 0..n-1. */
#define MAX_ITERATE 1000000

static hv *array_from(const hv *from, herr *err)
{
    switch (hv_kind_of(from)) {
    case HV_ARRAY: return hv_incref((hv *)from);
    case HV_HASH: {
        hv *a = hv_array_sized(hv_hash_len(from));
        for (size_t i = 0; i < hv_hash_len(from); i++) {
            hv *pair = hv_array_sized(2);
            hv_array_push(pair, hv_incref(hv_hash_key_at(from, i)));
            hv_array_push(pair, hv_incref(hv_hash_val_at(from, i)));
            hv_array_push(a, pair);
        }
        return a;
    }
    case HV_STRING: {
        const char *s = hv_str_ptr(from);
        size_t n = hv_str_len(from);
        hv *a = hv_array();
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            size_t l = utf8_next(s + i, n - i, &cp);
            hv_array_push(a, hv_strn(s + i, l));
            i += l;
        }
        return a;
    }
    case HV_INT: case HV_BIGINT: {
        int64_t n = hv_is(from, HV_INT) ? hv_int_val(from) : INT64_MAX;
        if (n > MAX_ITERATE) {
            herr_set(err, HERR_ERROR, "Iterating over %s values is not supported here", hv_is(from, HV_INT) ? "so many" : "that many");
            return NULL;
        }
        hv *a = hv_array_sized((size_t)(n > 0 ? n : 0));
        for (int64_t i = 0; i < n; i++)
            hv_array_push(a, hv_int(i));
        return a;
    }
    default:
        herr_set(err, HERR_ERROR, "Value cannot be iterated");
        return NULL;
    }
}

static hv *hash_from_pairs(const hv *arr) /* Hash[[[k, v], ...]] */
{
    hv *h = hv_hash();
    for (size_t i = 0; i < hv_array_len(arr); i++) {
        const hv *pair = hv_array_get(arr, i);
        hv_hash_set(h, hv_incref(hv_array_get(pair, 0)), hv_incref(hv_array_get(pair, 1)));
    }
    return h;
}

static hv *hash_from_flat(const hv *arr, herr *err) /* Hash[*arr] */
{
    size_t n = hv_array_len(arr);
    if (n % 2) {
        herr_set(err, HERR_ERROR, "odd number of arguments for Hash");
        return NULL;
    }
    hv *h = hv_hash();
    for (size_t i = 0; i < n; i += 2)
        hv_hash_set(h, hv_incref(hv_array_get(arr, i)), hv_incref(hv_array_get(arr, i + 1)));
    return h;
}

/* PHashType.array_as_hash */
static hv *array_as_hash(const hv *v, int depth)
{
    if (!hv_is(v, HV_ARRAY) || depth > MAX_VALUE_DEPTH)
        return hv_incref((hv *)v);
    hv *h = hv_hash();
    for (size_t i = 0; i < hv_array_len(v); i++)
        hv_hash_set(h, hv_int((int64_t)i), array_as_hash(hv_array_get(v, i), depth + 1));
    return h;
}

/* Hash.new(tree, 'tree' | 'hash_tree'): entries [path, value] build nested hashes. The values
 * are copied where Ruby would modify them in place. */
static hv *hash_from_tree(const hv *entries, bool all_hashes, herr *err)
{
    hv *result = hv_hash();
    for (size_t i = 0; i < hv_array_len(entries); i++) {
        const hv *entry = hv_array_get(entries, i);
        const hv *path = hv_array_get(entry, 0), *value = hv_array_get(entry, 1);
        size_t plen = hv_array_len(path);
        if (!plen) {
            if (hv_is(value, HV_ARRAY)) {
                for (size_t k = 0; k < hv_array_len(value); k++)
                    hv_hash_set(result, hv_int((int64_t)k), hv_incref(hv_array_get(value, k)));
            } else if (hv_is(value, HV_HASH)) {
                for (size_t k = 0; k < hv_hash_len(value); k++)
                    hv_hash_set(result, hv_incref(hv_hash_key_at(value, k)), hv_incref(hv_hash_val_at(value, k)));
            } else {
                char *tn = generalized_type_name(value);
                herr_set(err, HERR_ERROR, "no implicit conversion into Hash (%s)", tn);
                free(tn);
                hv_decref(result);
                return NULL;
            }
            continue;
        }
        hv *memo = result;
        for (size_t k = 0; k + 1 < plen; k++) {
            const hv *idx = hv_array_get(path, k);
            if (!hv_is(memo, HV_HASH)) {
                herr_set(err, HERR_ERROR, "Hash.new tree: path element %zu does not lead to a hash", k);
                hv_decref(result);
                return NULL;
            }
            hv *next = hv_hash_get(memo, idx);
            if (!next) {
                hv_hash_set(memo, hv_incref((hv *)idx), hv_hash());
                next = hv_hash_get(memo, idx);
            } else if (hv_is_shared(next) && hv_is(next, HV_HASH)) {
                hv *copy = hv_copy(next);
                hv_hash_set(memo, hv_incref((hv *)idx), copy);
                next = copy;
            }
            memo = next;
        }
        if (!hv_is(memo, HV_HASH)) {
            herr_set(err, HERR_ERROR, "Hash.new tree: the path does not lead to a hash");
            hv_decref(result);
            return NULL;
        }
        hv_hash_set(memo, hv_incref(hv_array_get(path, plen - 1)),
                    all_hashes ? array_as_hash(value, 0) : hv_incref((hv *)value));
    }
    return result;
}

static hv *hash_from_any(const hv *from, herr *err)
{
    switch (hv_kind_of(from)) {
    case HV_ARRAY:
        return hash_from_flat(from, err);
    case HV_HASH:
        return hv_incref((hv *)from);
    case HV_STRING: case HV_INT: case HV_BIGINT:
        if (instance(D(K_ITERABLE), from, 0)) {
            hv *a = array_from(from, err);
            if (!a)
                return NULL;
            hv *h = hash_from_flat(a, err);
            hv_decref(a);
            return h;
        }
        /* fall through */
    default: {
        char *tn = generalized_type_name(from);
        herr_set(err, HERR_ERROR, "Value of type %s cannot be converted to Hash", tn);
        free(tn);
        return NULL;
    }
    }
}

/* Runs a handler; mismatch handlers return their message through *msg. */
static hv *call_handler(const nfun *f, handler_id h, const hv *args, char **msg, herr *err)
{
    size_t n = nargs(args);
    const hv *a0 = arg(args, 0), *a1 = n > 1 ? arg(args, 1) : NULL, *a2 = n > 2 ? arg(args, 2) : NULL;
    switch (h) {
    case H_INT_ARGS:
        return integer_from(a0, a1 && !v_is_default(a1) ? a1 : NULL, a2, err);
    case H_INT_HASH: {
        const hv *radix = hv_hash_gets(a0, "radix");
        return integer_from(hv_hash_gets(a0, "from"), radix && hv_truthy(radix) && !v_is_default(radix) ? radix : NULL,
                            hv_hash_gets(a0, "abs"), err);
    }
    case H_INT_ERR_HASH:
        *msg = integer_on_error_hash(f, a0, err);
        return NULL;
    case H_INT_ERR:
        *msg = integer_on_error(a0, a1, err);
        return NULL;
    case H_FLOAT_ARGS:
        return float_from(a0, a1, err);
    case H_FLOAT_HASH:
        return float_from(hv_hash_gets(a0, "from"), hv_hash_gets(a0, "abs"), err);
    case H_FLOAT_ERR:
        *msg = cannot_convert(a0, "Float");
        return NULL;
    case H_NUM_ARGS:
        return numeric_from(a0, a1, err);
    case H_NUM_HASH:
        return numeric_from(hv_hash_gets(a0, "from"), hv_hash_gets(a0, "abs"), err);
    case H_NUM_ERR:
        *msg = cannot_convert(a0, "Numeric");
        return NULL;
    case H_BOOL:
        return boolean_from(a0);
    case H_BOOL_ERR:
        *msg = cannot_convert(a0, "Boolean");
        return NULL;
    case H_STR: {
        sbuf b = {0};
        if (a1 && !v_is_default(a1)) {
            if (!string_format(&b, a0, a1, err)) {
                sb_free(&b);
                return NULL;
            }
        } else {
            puppet_string(&b, a0);
        }
        size_t len = b.len;
        char *s = sb_take(&b);
        return hv_str_take(s, len);
    }
    case H_ARR_TO:
        return array_from(a0, err);
    case H_ARR_WRAP:
        if (hv_is(a0, HV_ARRAY))
            return hv_incref((hv *)a0);
        else {
            hv *r = hv_array_sized(1);
            hv_array_push(r, hv_incref((hv *)a0));
            return r;
        }
    case H_ARR_ERR: {
        char *tn = generalized_type_name(a0);
        *msg = xasprintf("Value of type %s cannot be converted to Array", tn);
        free(tn);
        return NULL;
    }
    case H_HASH_TREE:
        if (!a1)
            return hash_from_pairs(a0);
        return hash_from_tree(a0, strcmp(hv_str_ptr(a1), "hash_tree") == 0, err);
    case H_HASH_TUPLES:
        return hash_from_pairs(a0);
    case H_HASH_ARRAY:
        return hash_from_any(a0, err);
    case H_SENS_SENS: case H_UNIT:
        return hv_incref((hv *)a0);
    case H_SENS_ANY:
        return hv_sensitive_new(hv_incref((hv *)a0));
    case H_NEW:
        break;
    }
    herr_set(err, HERR_ERROR, "unsupported conversion");
    return NULL;
}

/* Dispatcher#dispatch: the first signature whose parameter types accept the arguments. */
static hv *dispatch(const fndef *def, const hv *args, herr *err)
{
    nfun f;
    if (!nf_init(&f, def, err)) {
        nf_free(&f);
        return NULL;
    }
    hv *r = NULL;
    size_t s;
    for (s = 0; s < f.nsigs; s++)
        if (instance(f.params[s], args, 0))
            break;
    if (s == f.nsigs) {
        describe_signatures(&f, args, err);
    } else if (def->sigs[s].mismatch) {
        char *msg = NULL;
        call_handler(&f, def->sigs[s].h, args, &msg, err);
        if (msg) {
            herr_set(err, HERR_ERROR, "'%s' %s", def->name, msg);
            free(msg);
        }
    } else {
        char *msg = NULL;
        r = call_handler(&f, def->sigs[s].h, args, &msg, err);
        free(msg);
    }
    nf_free(&f);
    return r;
}

/* PAnyType#new_function for t: the function, or NULL with err set. */
static const fndef *new_function_for(const ptype *t, herr *err, int depth)
{
    if (depth > MAX_ALIAS_DEPTH) {
        herr_set(err, HERR_ERROR, "type alias nested too deeply");
        return NULL;
    }
    switch (t->k) {
    case K_INTEGER: return &FN_INTEGER;
    case K_FLOAT: return &FN_FLOAT;
    case K_NUMERIC: return &FN_NUMERIC;
    case K_BOOLEAN: return &FN_BOOLEAN;
    case K_STRING: return &FN_STRING;
    case K_ARRAY: case K_TUPLE: return &FN_ARRAY;
    case K_HASH: case K_STRUCT: return &FN_HASH;
    case K_SENSITIVE: return &FN_SENSITIVE;
    case K_UNIT: return &FN_UNIT;
    case K_NOTUNDEF:
        return t->t ? new_function_for(t->t, err, depth + 1) : &FN_UNIT;
    case K_OPTIONAL:
        if (!t->t) {
            herr_set(err, HERR_ERROR, "undefined method `new_function' for nil:NilClass");
            return NULL;
        }
        return new_function_for(t->t, err, depth + 1);
    case K_ALIAS:
        if (t->t)
            return new_function_for(t->t, err, depth + 1);
        break;
    case K_TYPE: case K_REGEXP: case K_TIMESPAN: case K_TIMESTAMP: case K_SEMVER: case K_SEMVERRANGE:
    case K_BINARY: case K_URI: case K_OBJECT: case K_TYPESET: {
        /* Puppet creates values of these types, which have no representation here */
        char *ts = t_to_s(t);
        herr_set(err, HERR_ERROR, "Creation of new instance of type '%s' is not supported by this implementation", ts);
        free(ts);
        return NULL;
    }
    default:
        break;
    }
    char *ts = t_to_s(t);
    herr_set(err, HERR_ERROR, "Creation of new instance of type '%s' is not supported", ts);
    free(ts);
    return NULL;
}

/* The `new` function: new(t, args...) where args[0] is the value. */
static hv *new_instance(const ptype *t, const hv *args, herr *err)
{
    const hv *value = arg(args, 0);
    if (nargs(args) == 1 && t->k != K_INIT && instance(t, value, 0))
        return hv_incref((hv *)value);
    const fndef *fn = new_function_for(t, err, 0);
    if (!fn)
        return NULL;
    hv *r = dispatch(fn, args, err);
    if (!r)
        return NULL;
    if (!instance(t, r, 0)) {
        char *ts = t_to_s(t);
        char *subject = xasprintf("Converted value from %s.new()", ts);
        char *m = assert_message(subject, t, r);
        herr_set(err, HERR_ERROR, "%s", m);
        free(m);
        free(subject);
        free(ts);
        hv_decref(r);
        return NULL;
    }
    return r;
}

static hv *convert_e(const hv *spec, const hv *value, herr *err);

hv *ptype_convert(const hv *spec, const hv *value, herr *err)
{
    herr local = {0};
    hv *r = convert_e(spec, value, err ? err : &local);
    herr_clear(&local);
    return r;
}

static hv *convert_e(const hv *spec, const hv *value, herr *err)
{
    const hv *t0 = spec;
    size_t first_arg = 0;
    if (hv_is(spec, HV_ARRAY)) {
        t0 = hv_array_get(spec, 0);
        first_arg = 1;
    }
    hv *args = hv_array();
    hv_array_push(args, hv_incref((hv *)value));
    if (hv_is(spec, HV_ARRAY))
        for (size_t i = first_arg; i < hv_array_len(spec); i++)
            hv_array_push(args, hv_incref(hv_array_get(spec, i)));
    hv *r = NULL;
    if (t0 && hv_is(t0, HV_STRING)) {
        herr pe = {0};
        ptype *t = parse_type(hv_str_ptr(t0), hv_str_len(t0), false, NULL, 0, &pe);
        if (!t) {
            /* the caller words it as "Invalid data type in lookup_options for key '<key>' <msg>" */
            herr_set(err, HERR_LOOKUP, "could not parse '%s', error: '%s", hv_str_ptr(t0), pe.msg ? pe.msg : "");
            herr_clear(&pe);
        } else {
            r = new_instance(t, args, err);
            ptype_free(t);
        }
    } else {
        /* not a type: the `new` function itself rejects its first argument */
        hv *full = hv_array();
        hv_array_push(full, t0 ? hv_incref((hv *)t0) : hv_undef());
        for (size_t i = 0; i < hv_array_len(args); i++)
            hv_array_push(full, hv_incref(hv_array_get(args, i)));
        nfun f;
        if (nf_init(&f, &FN_NEW, err))
            describe_signatures(&f, full, err);
        nf_free(&f);
        hv_decref(full);
    }
    hv_decref(args);
    return r;
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
            i += utf8_next(s + i, n - i, &cp);
            chars++;
        }
        n = i;
    }
    size_t len = utf8_len(s, n);
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
static bool string_format(sbuf *out, const hv *v, const hv *fmt, herr *err)
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
            format_float(out, &fs, c, int_to_float(v));
            return true;
        }
        if (c == 'p' || c == 's') {
            /* %s: the decimal string formatted with %s (%p when alternate: quoted) */
            sbuf d = {0};
            sbuf t = {0};
            ruby_to_s(&d, v);
            if (c == 's' && fs.alt)
                ruby_str_inspect(&t, d.s, d.len);
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
            add_utf8(&ch, (uint32_t)hv_int_val(v));
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
            hv *i = float_to_i(d, &msg);
            if (!i) {
                set_msg_err(err, msg);
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
            hv *pairs = array_from(v, &e2);
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
            bool r = string_format(out, u, fmt, err);
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
