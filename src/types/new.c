/* new.c - Puppet's new(Type, value, *args) for lookup_options convert_to (ptype_convert): the new
 * functions of the types (types.rb new_function) with their signatures and messages, and the
 * Ruby conversions they rely on (Integer(), Float(); inspect and to_s are formats/render.c's). */
#include "types/types_int.h"
#include "formats/render.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>

/* ======================================================================================
 * Ruby conversions used by the new() functions
 * ====================================================================================== */

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
        ruby_inspect_string(&m, s, n);
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
        ruby_inspect_string(&m, s, n);
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
        pt_unref(f->locals[i].type);
    }
    for (size_t i = 0; i < f->nsigs; i++)
        pt_unref(f->params[i]);
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
        ptype *al = pt_mk_named(K_ALIAS, def->locals[i], (size_t)(eq - def->locals[i]));
        al->t = pt_parse_type(body, strlen(body), false, f->locals, f->nlocals, err);
        if (!al->t) {
            pt_unref(al);
            return false;
        }
        f->locals[f->nlocals].name = pt_lower_dup(def->locals[i], (size_t)(eq - def->locals[i]));
        f->locals[f->nlocals++].type = al;
    }
    for (size_t s = 0; s < 5 && def->sigs[s].types[0]; s++) {
        const sigdef *sd = &def->sigs[s];
        size_t nt = 0;
        while (nt < 3 && sd->types[nt])
            nt++;
        ptype **types = xcalloc(nt, sizeof *types);
        for (size_t k = 0; k < nt; k++) {
            types[k] = pt_parse_type(sd->types[k], strlen(sd->types[k]), false, f->locals, f->nlocals, err);
            if (!types[k]) {
                for (size_t j = 0; j < k; j++)
                    pt_unref(types[j]);
                free(types);
                return false;
            }
        }
        ptype *size = (sd->min > 0 && sd->min == sd->max)
                          ? NULL
                          : pt_mk_int(n_int(sd->min), sd->max < 0 ? n_posinf() : n_int(sd->max));
        f->params[f->nsigs++] = pt_mk_tuple(types, nt, size);
    }
    return true;
}

/* ---- describe_signatures: the message when no signature accepts the arguments ---- */

static void signature_string(sbuf *b, const nfun *f, size_t s)
{
    const ptype *pt = f->params[s];
    const sigdef *sd = &f->def->sigs[s];
    ptype *range = pt_tuple_size_type(pt);
    num from = range->from, to = range->to;
    size_t nnames = 0;
    while (nnames < 3 && sd->names[nnames])
        nnames++;
    if (!(pt_n_eq(from, n_int(0)) && pt_n_eq(to, n_int(0)))) {
        for (size_t i = 0; i < nnames; i++) {
            const ptype *type = pt->v[i < pt->n ? i : pt->n - 1];
            const char *indicator = "";
            if (n_is_posinf(to) && i == nnames - 1) {
                indicator = pt_n_eq(from, n_int((int64_t)nnames)) ? "+" : "*";
            } else if (pt_n_lt(from, n_int((int64_t)i + 1))) {
                indicator = "?";
                if (is_k(type, K_OPTIONAL) && type->t)
                    type = type->t;
            }
            if (i)
                sb_adds(b, ", ");
            char *ts = pt_to_s(type);
            sb_addf(b, "%s %s%s", ts, sd->names[i], indicator);
            free(ts);
        }
    }
    pt_unref(range);
}

/* describe_signature_arguments for one signature and the arguments' inferred types */
static mlist describe_sig_args(const nfun *f, size_t s, const ptype *args_tuple)
{
    const ptype *pt = f->params[s];
    const sigdef *sd = &f->def->sigs[s];
    tpath root = {0};
    tpath p = pt_path_plus(&root, PE_SIGNATURE, NULL, 0, s);
    ptype *psize = pt_tuple_size_type(pt);
    ptype *asize = pt_tuple_size_type(args_tuple);
    mlist d = {0};
    if (pt_assignable(psize, asize, NULL)) {
        for (size_t i = 0; i < args_tuple->n; i++) {
            size_t adx = i < pt->n ? i : pt->n - 1;
            if (pt_assignable(pt->v[adx], args_tuple->v[i], NULL))
                continue;
            const char *name = sd->names[adx < 3 ? adx : 2];
            tpath pp = pt_path_plus(&p, PE_PARAM, name, strlen(name), 0);
            d = pt_describe(pt->v[adx], args_tuple->v[i], &pp);
            pt_path_free(&pp);
            if (d.n)
                break;
        }
    } else {
        pt_ml_push(&d, pt_m_new(M_COUNT, &p, psize, asize));
    }
    pt_unref(psize);
    pt_unref(asize);
    pt_path_free(&p);
    return d;
}

static void describe_signatures(const nfun *f, const hv *args, herr *err)
{
    ptype *at = pt_infer_set(args, 0);
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
    mlist errs = pt_merge_descriptions(0, M_COUNT, arrays, ns);
    free(arrays);
    sbuf b = {0};
    if (errs.n == 1) {
        sb_addf(&b, "'%s'", f->def->name);
        pt_m_format(&b, errs.v[0]);
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
                pt_m_format(&b, pt_m_chop(d.v[k], 0));
            }
            pt_ml_free(&d);
        }
    }
    herr_set(err, HERR_ERROR, "%s", sb_str(&b));
    sb_free(&b);
    pt_ml_free(&errs);
    pt_unref(at);
}

/* ---- the handlers ---- */

static const hv *arg(const hv *args, size_t i) { return hv_array_get(args, i); }
static size_t nargs(const hv *args) { return hv_array_len(args); }

static char *generalized_type_name(const hv *v)
{
    ptype *t = pt_infer(v, 0), *g = pt_generalize(t);
    char *s = pt_to_s(g);
    pt_unref(t);
    pt_unref(g);
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
    pt_set_msg_err(err, msg);
    return NULL;
}

static hv *integer_from(const hv *from, const hv *radix, const hv *abs, herr *err)
{
    hv *r = NULL;
    switch (hv_kind_of(from)) {
    case HV_FLOAT: {
        char *msg = NULL;
        r = pt_float_to_i(hv_float_val(from), &msg);
        if (!r)
            pt_set_msg_err(err, msg);
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
    if (from && !pt_instance(nf_local(f, "convertible"), from, 0))
        return integer_on_error(from, NULL, err);
    const hv *radix = hv_hash_gets(h, "radix");
    if (radix && !v_is_undef(radix) && !v_is_default(radix) && !assert_radix(radix, err))
        return NULL;
    const ptype *named = nf_local(f, "namedargs");
    if (!pt_instance(named, h, 0)) {
        char *m = pt_assert_message("Integer.new", named, h);
        herr_set(err, HERR_ERROR, "%s", m);
        free(m);
        return NULL;
    }
    sbuf b = {0};
    ruby_inspect(&b, h);
    return sb_take(&b);
}

static hv *float_from(const hv *from, const hv *abs, herr *err)
{
    hv *r = NULL;
    switch (hv_kind_of(from)) {
    case HV_FLOAT: r = hv_incref((hv *)from); break;
    case HV_INT: case HV_BIGINT: r = hv_float(pt_int_to_float(from)); break;
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
                r = hv_float(pt_int_to_float(bin));
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
        pt_set_msg_err(err, msg);
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
    num in = pt_v_num(r);
    num n = pt_n_negate(in);
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
        bool f = pt_ascii_casecmp_eq(s, n, "false", 5) || pt_ascii_casecmp_eq(s, n, "no", 2) ||
                 pt_ascii_casecmp_eq(s, n, "n", 1);
        return hv_bool(!f);
    }
    default: return hv_true();
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
        if (pt_instance(pt_D(K_ITERABLE), from, 0)) {
            hv *a = pt_array_from(from, err);
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
            if (!pt_string_format(&b, a0, a1, err)) {
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
        return pt_array_from(a0, err);
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
        if (pt_instance(f.params[s], args, 0))
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
        char *ts = pt_to_s(t);
        herr_set(err, HERR_ERROR, "Creation of new instance of type '%s' is not supported by this implementation", ts);
        free(ts);
        return NULL;
    }
    default:
        break;
    }
    char *ts = pt_to_s(t);
    herr_set(err, HERR_ERROR, "Creation of new instance of type '%s' is not supported", ts);
    free(ts);
    return NULL;
}

/* The `new` function: new(t, args...) where args[0] is the value. */
static hv *new_instance(const ptype *t, const hv *args, herr *err)
{
    const hv *value = arg(args, 0);
    if (nargs(args) == 1 && t->k != K_INIT && pt_instance(t, value, 0))
        return hv_incref((hv *)value);
    const fndef *fn = new_function_for(t, err, 0);
    if (!fn)
        return NULL;
    hv *r = dispatch(fn, args, err);
    if (!r)
        return NULL;
    if (!pt_instance(t, r, 0)) {
        char *ts = pt_to_s(t);
        char *subject = xasprintf("Converted value from %s.new()", ts);
        char *m = pt_assert_message(subject, t, r);
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
        ptype *t = pt_parse_type(hv_str_ptr(t0), hv_str_len(t0), false, NULL, 0, &pe);
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
