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
 * Layout: src/types holds one file per stage (see types_int.h): parse.c and interpret.c (type
 * expressions to types), match.c (the type calculator: generalize, normalize, assignable?,
 * instance?, inference), describe.c (mismatch messages), format.c (printing types and values)
 * and new.c (new() and its Ruby conversions). This file holds what they all build on: numbers,
 * strings, regexps, type nodes and their constructors, structural equality, and the immortal
 * DEFAULT types.
 */
#include "types/types_int.h"
#include "base/once.h"
#include "base/rregex.h"
#include "formats/render.h"

#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>

/* ======================================================================================
 * Numbers: Ruby Integer (64-bit or big, kept as an HV_BIGINT value) or Float. Unbounded range
 * ends are Float infinities, as in Ruby (PNumericType uses -Float::INFINITY/Float::INFINITY).
 * ====================================================================================== */

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
int pt_n_cmp(num a, num b)
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
num pt_n_negate(num n)
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

/* Ruby's Integer#to_s / Float#to_s of a number. */
void pt_n_to_s(sbuf *b, num n)
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

/* Ruby String#size for UTF-8 text: characters; a byte that does not start a valid sequence
 * counts as one character. */
size_t pt_utf8_len(const char *s, size_t n)
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
size_t pt_utf8_next(const char *s, size_t n, uint32_t *cp)
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

void pt_add_utf8(sbuf *b, uint32_t cp)
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

/* Ruby String#casecmp == 0: ASCII-only case folding. */
bool pt_ascii_casecmp_eq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return true;
}

/* ======================================================================================
 * Regular expressions (Ruby semantics through Oniguruma's Ruby syntax, UTF-8)
 * ====================================================================================== */

/* Compiles src; on failure returns NULL and sets err to Ruby's RegexpError text
 * ("<reason>: /<source>/"). */
regex_t *pt_re_compile(const char *src, size_t n, herr *err)
{
    herr missing = {0};
    if (!rregex_ready(err ? err : &missing)) { /* Oniguruma, once per process */
        herr_clear(&missing);
        return NULL;
    }
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

/* ======================================================================================
 * Type nodes
 * ====================================================================================== */

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

const char *const pt_simple_names[K_COUNT] = {
    "Any", "Unit", "Undef", "Default", "TypeWithContainedType", "NotUndef", "Type", "Optional",
    "Sensitive", "Iterable", "Iterator", "Init", "Scalar", "ScalarData", "Numeric", "Integer",
    "Float", "String", "Enum", "Pattern", "Boolean", "Regexp", "SemVer", "AbstractTimeData",
    "Timespan", "Timestamp", "SemVerRange", "Binary", "URI", "Meta", "Object", "TypeSet",
    "Collection", "Array", "Hash", "Tuple", "Struct", "Variant", "Callable", "Runtime",
    "TypeReference", "TypeAlias", "CatalogEntry", "Class", "Resource",
};

/* Ruby's is_a? on the type classes. */
bool pt_is_a(const ptype *t, tkind k)
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

void pt_unref(ptype *t)
{
    if (!t || t->refs < 0 || --t->refs > 0)
        return;
    n_drop(&t->from);
    n_drop(&t->to);
    pt_unref(t->t);
    pt_unref(t->t2);
    pt_unref(t->t3);
    pt_unref(t->size);
    for (size_t i = 0; i < t->n; i++)
        pt_unref(t->v[i]);
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
/* ---- constructors (they steal their type arguments) ---- */

ptype *pt_mk(tkind k) { return t_new(k); }

ptype *pt_mk_int(num from, num to)
{
    ptype *t = t_new(K_INTEGER);
    t->from = from;
    t->to = to;
    return t;
}
ptype *pt_mk_float(num from, num to)
{
    ptype *t = t_new(K_FLOAT);
    t->from = from;
    t->to = to;
    return t;
}

/* PIntegerType#to_size: a range whose both ends are >= 0. */
static ptype *to_size(ptype *size)
{
    if (!size || pt_n_le(n_int(0), size->from))
        return size;
    num to = pt_n_lt(size->to, n_int(0)) ? n_int(0) : n_copy(size->to);
    pt_unref(size);
    return pt_mk_int(n_int(0), to);
}

ptype *pt_mk_string_size(ptype *size)
{
    ptype *t = t_new(K_STRING);
    t->size = to_size(size);
    return t;
}
ptype *pt_mk_string_val(const char *p, size_t n)
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
ptype *pt_mk_enum(const pstr *vals, size_t n, bool ci)
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

ptype *pt_mk_regexp(const char *p, size_t n, bool has)
{
    ptype *t = t_new(K_REGEXP);
    if (has) {
        t->s = ps_dup(p, n);
        t->has_s = true;
    }
    return t;
}

ptype *pt_mk_bool(int flag)
{
    ptype *t = t_new(K_BOOLEAN);
    t->flag = flag;
    return t;
}

ptype *pt_mk_collection(ptype *size)
{
    ptype *t = t_new(K_COLLECTION);
    t->size = to_size(size);
    return t;
}

/* PArrayType.new: a [0,0] size makes the element type Unit; no element type means Any. */
ptype *pt_mk_array(ptype *elem, ptype *size)
{
    ptype *t = t_new(K_ARRAY);
    t->size = to_size(size);
    if (pt_size_is_zero(t->size)) {
        pt_unref(elem);
        elem = pt_mk(K_UNIT);
    }
    t->t = elem ? elem : pt_mk(K_ANY);
    return t;
}

ptype *pt_mk_hash(ptype *key, ptype *value, ptype *size)
{
    ptype *t = t_new(K_HASH);
    t->size = to_size(size);
    if (pt_size_is_zero(t->size)) {
        pt_unref(key);
        pt_unref(value);
        key = pt_mk(K_UNIT);
        value = pt_mk(K_UNIT);
    }
    t->t = key ? key : pt_mk(K_ANY);
    t->t2 = value ? value : pt_mk(K_ANY);
    return t;
}

ptype *pt_mk_tuple(ptype **types, size_t n, ptype *size) /* steals types array */
{
    ptype *t = t_new(K_TUPLE);
    t->v = types ? types : xcalloc(1, sizeof *t->v);
    t->n = n;
    t->size = to_size(size);
    return t;
}

ptype *pt_mk_struct(ptype **pairs, size_t nelems) /* steals the pairs array (2*nelems) */
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

ptype *pt_mk_pattern(ptype **regexps, size_t n) /* steals */
{
    ptype *t = t_new(K_PATTERN);
    t->v = regexps ? regexps : xcalloc(1, sizeof *t->v);
    t->n = n;
    return t;
}

/* Constructors of the types with one contained type, with their Ruby initialize quirks:
 * NotUndef[Any] keeps no type; Sensitive generalizes its type and defaults to Any. */
ptype *pt_mk_contained(tkind k, ptype *inner)
{
    ptype *t = t_new(k);
    if (k == K_NOTUNDEF && is_k(inner, K_ANY)) {
        pt_unref(inner);
        inner = NULL;
    }
    if (k == K_SENSITIVE) {
        if (!inner) {
            inner = pt_mk(K_ANY);
        } else {
            ptype *g = pt_generalize(inner);
            pt_unref(inner);
            inner = g;
        }
    }
    t->t = inner;
    return t;
}

ptype *pt_mk_callable(ptype *params, ptype *block, ptype *ret)
{
    ptype *t = t_new(K_CALLABLE);
    t->t = params;
    t->t2 = block;
    if (is_k(ret, K_ANY)) {
        pt_unref(ret);
        ret = NULL;
    }
    t->t3 = ret;
    return t;
}

ptype *pt_mk_named(tkind k, const char *p, size_t n)
{
    ptype *t = t_new(k);
    t->s = ps_dup(p, n);
    t->has_s = true;
    return t;
}

ptype *pt_mk_runtime(const char *rt, size_t rtn, bool has_rt, const char *name, size_t nn, bool has_name)
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
ptype *pt_dflt(tkind k)
{
    switch (k) {
    case K_ARRAY: return pt_mk_array(NULL, NULL);
    case K_HASH: return pt_mk_hash(NULL, NULL, NULL);
    case K_SENSITIVE: return pt_mk_contained(K_SENSITIVE, NULL);
    case K_TYPEREF: return pt_mk_named(K_TYPEREF, "UnresolvedReference", 19);
    case K_ALIAS: { /* PTypeAliasType::DEFAULT */
        ptype *a = pt_mk_named(K_ALIAS, "UnresolvedAlias", 15);
        a->t = pt_mk_named(K_TYPEREF, "UnresolvedReference", 19);
        return a;
    }
    default: return pt_mk(k);
    }
}

/* ======================================================================================
 * Structural equality (Ruby eql? / == on types)
 * ====================================================================================== */

static bool opt_eq(const ptype *a, const ptype *b)
{
    if (!a || !b)
        return a == b;
    return pt_eq(a, b);
}

/* Ruby's (a - b).empty? on type arrays: every element of a is in b. */
static bool tv_subset(ptype *const *a, size_t an, ptype *const *b, size_t bn)
{
    for (size_t i = 0; i < an; i++) {
        bool found = false;
        for (size_t j = 0; j < bn && !found; j++)
            found = pt_eq(a[i], b[j]);
        if (!found)
            return false;
    }
    return true;
}

bool pt_eq(const ptype *a, const ptype *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->k != b->k)
        return false;
    switch (a->k) {
    case K_NUMERIC: case K_INTEGER: case K_FLOAT:
        return pt_n_eq(a->from, b->from) && pt_n_eq(a->to, b->to);
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
        return a->has_s == b->has_s && (!a->has_s || pt_ascii_casecmp_eq(a->s.p, a->s.n, b->s.p, b->s.n));
    case K_RUNTIME:
        return a->has_s == b->has_s && (!a->has_s || ps_eq(a->s, b->s)) && a->has_rt == b->has_rt &&
               (!a->has_rt || ps_eq(a->rt, b->rt));
    case K_BOOLEAN:
        return a->flag == b->flag;
    case K_COLLECTION:
        return opt_eq(a->size, b->size);
    case K_ARRAY:
        return opt_eq(a->size, b->size) && pt_eq(a->t, b->t);
    case K_HASH:
        return opt_eq(a->size, b->size) && pt_eq(a->t, b->t) && pt_eq(a->t2, b->t2);
    case K_TUPLE:
        if (a->n != b->n || !opt_eq(a->size, b->size))
            return false;
        for (size_t i = 0; i < a->n; i++)
            if (!pt_eq(a->v[i], b->v[i]))
                return false;
        return true;
    case K_STRUCT:
        if (a->n != b->n)
            return false;
        for (size_t i = 0; i < a->n; i++)
            if (!pt_eq(a->v[i], b->v[i]))
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
void pt_tl_uniq(tlist *l)
{
    uint64_t *d = xcalloc(l->n ? l->n : 1, sizeof *d);
    size_t w = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t di = t_digest(l->v[i]);
        bool dup = false;
        for (size_t j = 0; j < w && !dup; j++)
            dup = d[j] == di && pt_eq(l->v[j], l->v[i]);
        if (dup) {
            pt_unref(l->v[i]);
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
ptype *pt_maybe_create(tlist *l)
{
    tlist flat = {0};
    for (size_t i = 0; i < l->n; i++) {
        ptype *t = l->v[i];
        if (is_k(t, K_VARIANT)) {
            for (size_t j = 0; j < t->n; j++)
                tl_push(&flat, pt_ref(t->v[j]));
            pt_unref(t);
        } else {
            tl_push(&flat, t);
        }
    }
    free(l->v);
    *l = (tlist){0};
    pt_tl_uniq(&flat);
    if (flat.n == 1) {
        ptype *t = flat.v[0];
        free(flat.v);
        return t;
    }
    return mk_variant(flat.v, flat.n);
}

void ptype_free(ptype *t) { pt_unref(t); }

/* ======================================================================================
 * Immortal default types used in comparisons (Ruby's PXxxType::DEFAULT constants)
 * ====================================================================================== */

/* Built all at once, the first time one is needed: they are shared by every thread. */
static ptype *defaults[K_COUNT];
static hiera_once defaults_once = HIERA_ONCE_INIT;

static void make_defaults(void)
{
    for (int k = 0; k < K_COUNT; k++) {
        defaults[k] = pt_dflt((tkind)k);
        ptype_freeze(defaults[k]);
    }
}

const ptype *pt_D(tkind k)
{
    hiera_once_run(&defaults_once, make_defaults);
    return defaults[k];
}

/* ======================================================================================
 * Types shared between threads
 * ====================================================================================== */

/* A Regexp type's compiled regexp (compiled on first use; NULL when the pattern is invalid). */
regex_t *pt_regexp_compiled(ptype *re)
{
    if (!re->re && !re->re_failed) {
        re->re = pt_re_compile(re->has_s ? re->s.p : "", re->has_s ? re->s.n : 0, NULL);
        re->re_failed = !re->re;
    }
    return re->re;
}

/* Every node immortal (reference counts are never written again) and every regexp compiled
 * (matching never writes), down to nodes already immortal (the built-in aliases, other frozen
 * types), which are frozen on their own. */
static void freeze(ptype *t, int depth)
{
    if (!t || t->refs < 0 || depth > MAX_DEPTH)
        return;
    make_immortal(t);
    if (t->k == K_REGEXP)
        pt_regexp_compiled(t);
    freeze(t->t, depth + 1);
    freeze(t->t2, depth + 1);
    freeze(t->t3, depth + 1);
    freeze(t->size, depth + 1);
    for (size_t i = 0; i < t->n; i++)
        freeze(t->v[i], depth + 1);
}

void ptype_freeze(ptype *t) { freeze(t, 0); }

/* ---- generalize (each type's generalize; match.c's type calculator uses it, and Sensitive's
 * constructor above) ---- */

ptype *pt_generalize(const ptype *t)
{
    switch (t->k) {
    case K_NOTUNDEF: case K_TYPE: case K_OPTIONAL: case K_ITERABLE: case K_ITERATOR: case K_INIT:
    case K_SENSITIVE:
        if (!t->t)
            return pt_dflt(t->k);
        return pt_mk_contained(t->k, pt_generalize(t->t));
    case K_ENUM: {
        if (!t->nvals)
            return pt_dflt(K_STRING);
        size_t lo = SIZE_MAX, hi = 0;
        for (size_t i = 0; i < t->nvals; i++) {
            size_t l = pt_utf8_len(t->vals[i].p, t->vals[i].n);
            lo = l < lo ? l : lo;
            hi = l > hi ? l : hi;
        }
        return pt_mk_string_size(pt_mk_intv((int64_t)lo, (int64_t)hi));
    }
    case K_INTEGER: case K_FLOAT: case K_STRING: case K_BOOLEAN: case K_COLLECTION:
        return pt_dflt(t->k);
    case K_STRUCT: {
        if (!t->n)
            return pt_dflt(K_STRUCT);
        ptype **v = xcalloc(t->n, sizeof *v);
        for (size_t i = 0; i < st_count(t); i++) {
            v[2 * i] = pt_ref(st_key(t, i));
            v[2 * i + 1] = pt_generalize(st_val(t, i));
        }
        return pt_mk_struct(v, st_count(t));
    }
    case K_TUPLE: {
        if (is_tuple_default(t))
            return pt_dflt(K_TUPLE);
        ptype **v = xcalloc(t->n ? t->n : 1, sizeof *v);
        for (size_t i = 0; i < t->n; i++)
            v[i] = pt_generalize(t->v[i]);
        return pt_mk_tuple(v, t->n, pt_ref(t->size));
    }
    case K_CALLABLE:
        if (!t->t && !t->t2 && !t->t3)
            return pt_dflt(K_CALLABLE);
        return pt_mk_callable(t->t ? pt_generalize(t->t) : NULL, t->t2 ? pt_generalize(t->t2) : NULL,
                              t->t3 ? pt_generalize(t->t3) : NULL);
    case K_ARRAY:
        if (is_k(t->t, K_ANY))
            return pt_dflt(K_ARRAY);
        return pt_mk_array(pt_generalize(t->t), NULL);
    case K_HASH:
        if (is_hash_default(t) || pt_is_hash_empty(t))
            return pt_ref(t);
        return pt_mk_hash(pt_generalize(t->t), pt_generalize(t->t2), NULL);
    case K_VARIANT: {
        if (!t->n)
            return pt_ref(t);
        tlist l = {0};
        for (size_t i = 0; i < t->n; i++)
            tl_push(&l, pt_generalize(t->v[i]));
        return pt_maybe_create(&l);
    }
    default:
        return pt_ref(t);
    }
}

/* ---- the built-in aliases of the static loader ---- */

/* Data, RichDataKey, RichData, Puppet::LookupKey and Puppet::LookupValue, made as TypeParser
 * makes them from their definitions (test_ptype parses the texts and compares):
 *   Data = Variant[ScalarData,Undef,Hash[String,Data],Array[Data]]
 *   RichDataKey = Variant[String,Numeric]
 *   RichData = Variant[Scalar,SemVerRange,Binary,Sensitive,Type,TypeSet,URI,Object,Undef,Default,
 *                      Hash[RichDataKey,RichData],Array[RichData]]
 *   Puppet::LookupKey = RichDataKey, Puppet::LookupValue = RichData
 * They are built here, from constructors, so that the type calculator (match.c), which needs
 * Data and RichData, does not call up into the parser (interpret.c), which calls it. */
enum { AL_DATA, AL_RICHDATAKEY, AL_RICHDATA, AL_LOOKUPKEY, AL_LOOKUPVALUE, N_ALIASES };
static const char *const alias_names[N_ALIASES] = {"Data", "RichDataKey", "RichData", "Puppet::LookupKey",
                                                   "Puppet::LookupValue"};
static ptype *builtin_alias_nodes[N_ALIASES];
static hiera_once builtin_aliases_once = HIERA_ONCE_INIT;

/* Variant[ks..., more...] as the parser makes it (Variant's parameters in order, then
 * pt_maybe_create); more is NULL-terminated and stolen */
static ptype *variant_of(const tkind *ks, size_t nk, ptype *const *more)
{
    tlist l = {0};
    for (size_t i = 0; i < nk; i++)
        tl_push(&l, pt_dflt(ks[i]));
    for (size_t i = 0; more[i]; i++)
        tl_push(&l, more[i]);
    return pt_maybe_create(&l);
}

/* Built once, the first time one is needed, and frozen: they are shared by every thread. */
static void make_builtin_aliases(void)
{
    ptype **a = builtin_alias_nodes;
    for (size_t i = 0; i < N_ALIASES; i++) {
        a[i] = pt_mk_named(K_ALIAS, alias_names[i], strlen(alias_names[i]));
        a[i]->flag = 1; /* built in: never printed expanded */
        make_immortal(a[i]);
    }
    static const tkind data[] = {K_SCALARDATA, K_UNDEF};
    a[AL_DATA]->t = variant_of(data, 2, (ptype *[]){pt_mk_hash(pt_dflt(K_STRING), pt_ref(a[AL_DATA]), NULL),
                                                    pt_mk_array(pt_ref(a[AL_DATA]), NULL), NULL});
    static const tkind key[] = {K_STRING, K_NUMERIC};
    a[AL_RICHDATAKEY]->t = variant_of(key, 2, (ptype *[]){NULL});
    static const tkind rich[] = {K_SCALAR, K_SEMVERRANGE, K_BINARY, K_SENSITIVE, K_TYPE,
                                 K_TYPESET, K_URI, K_OBJECT, K_UNDEF, K_DEFAULT};
    a[AL_RICHDATA]->t =
        variant_of(rich, sizeof rich / sizeof *rich,
                   (ptype *[]){pt_mk_hash(pt_ref(a[AL_RICHDATAKEY]), pt_ref(a[AL_RICHDATA]), NULL),
                               pt_mk_array(pt_ref(a[AL_RICHDATA]), NULL), NULL});
    a[AL_LOOKUPKEY]->t = pt_ref(a[AL_RICHDATAKEY]);
    a[AL_LOOKUPVALUE]->t = pt_ref(a[AL_RICHDATA]);
    for (size_t i = 0; i < N_ALIASES; i++)
        ptype_freeze(a[i]->t);
}

ptype *pt_builtin_alias(const char *name, size_t n)
{
    hiera_once_run(&builtin_aliases_once, make_builtin_aliases);
    for (size_t i = 0; i < N_ALIASES; i++)
        if (pt_ascii_casecmp_eq(alias_names[i], strlen(alias_names[i]), name, n))
            return builtin_alias_nodes[i];
    return NULL;
}

/* ---- small helpers over numbers and type nodes (declared in types_int.h) ---- */

bool pt_n_le(num a, num b)
{
    int c = pt_n_cmp(a, b);
    return c == -1 || c == 0;
}
bool pt_n_lt(num a, num b) { return pt_n_cmp(a, b) == -1; }
bool pt_n_eq(num a, num b) { return pt_n_cmp(a, b) == 0; }
num pt_n_min(num a, num b) { return pt_n_le(a, b) ? a : b; }
num pt_n_max(num a, num b) { return pt_n_le(b, a) ? a : b; }

bool pt_is_contained(const ptype *t) { return pt_is_a(t, K_CONTAINED); }

void pt_tl_free(tlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        pt_unref(l->v[i]);
    free(l->v);
    *l = (tlist){0};
}

ptype *pt_mk_intv(int64_t from, int64_t to) { return pt_mk_int(n_int(from), n_int(to)); }

bool pt_size_is_zero(const ptype *size)
{
    return size && pt_n_eq(size->from, n_int(0)) && pt_n_eq(size->to, n_int(0));
}

ptype *pt_hash_empty(void) { return pt_mk_hash(pt_mk(K_UNIT), pt_mk(K_UNIT), pt_mk_intv(0, 0)); }
ptype *pt_array_empty(void) { return pt_mk_array(pt_mk(K_UNIT), pt_mk_intv(0, 0)); }
ptype *pt_default_size(void) { return pt_mk_int(n_int(0), n_posinf()); }

bool pt_is_hash_empty(const ptype *t)
{
    return is_k(t, K_HASH) && pt_size_is_zero(t->size) && is_k(t->t, K_UNIT) && is_k(t->t2, K_UNIT);
}

ptype *pt_data_alias(void) { return pt_builtin_alias("Data", 4); }

const char *pt_t_name(const ptype *t)
{
    if (t->k == K_ALIAS)
        return t->s.p;
    if (t->k == K_TYPESET)
        return "DefaultTypeSet";
    return pt_simple_names[t->k];
}
