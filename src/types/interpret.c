/* interpret.c - TypeParser#interpret: the AST of a type expression (parse.c) to types, with the
 * type map, the built-in aliases (Data, RichData, ...; made in ptype.c) and resource types of
 * Puppet's static loader, and Puppet's messages for invalid type specifications; ptype_parse and
 * ptype_parse_cli. */
#include "types/types_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>

#include "types/parse.h"

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
    pt_unref(v->t);
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
    const char *src;
    bool cli; /* `puppet lookup --type`: names outside the type map are loaded through the scope */
    const local_alias *locals;
    size_t nlocals;
    herr *err;
    int depth;
    struct ptype_aliases *ua; /* user-defined aliases (type Name = ... in modules), or NULL */
} ictx;

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

/* Puppet's built-in resource types (StaticLoader::BUILTIN_TYPE_NAMES). */
static const char *const resource_names[] = {"Component", "Exec", "File", "Filebucket", "Group",
                                             "Node", "Notify", "Package", "Resources", "Schedule",
                                             "Service", "Stage", "Tidy", "User", "Whit", NULL};

static const char *resource_name(const char *name, size_t n)
{
    for (int i = 0; resource_names[i]; i++)
        if (pt_ascii_casecmp_eq(resource_names[i], strlen(resource_names[i]), name, n))
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
            return pt_dflt(map[i].k);
        }
    return NULL;
}

char *pt_lower_dup(const char *s, size_t n)
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

static ptype *user_alias(struct ptype_aliases *ua, const char *name, size_t n);

/* A name that is not in the type map: loaded (static loader, local aliases, user aliases) or a
 * reference. */
static ptype *load_type(ictx *c, const char *name, size_t n)
{
    if (c->cli) {
        scope_load_error(c);
        return NULL;
    }
    for (size_t i = 0; i < c->nlocals; i++)
        if (pt_ascii_casecmp_eq(c->locals[i].name, strlen(c->locals[i].name), name, n))
            return pt_ref(c->locals[i].type);
    ptype *a = pt_builtin_alias(name, n);
    if (a)
        return pt_ref(a);
    if (c->ua && (a = user_alias(c->ua, name, n)))
        return a;
    const char *r = resource_name(name, n);
    if (r)
        return pt_mk_named(K_RESOURCE, r, strlen(r));
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

static pval *interp_qref(ictx *c, const ast *a)
{
    const char *name;
    size_t n;
    qref_name(c, a, &name, &n);
    char *lname = pt_lower_dup(name, n);
    ptype *t = type_map(lname);
    free(lname);
    if (!t) {
        t = load_type(c, name, n);
        if (!t && herr_isset(c->err))
            return NULL;
        if (!t)
            t = pt_mk_named(K_TYPEREF, c->src + a->start, a->end - a->start);
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
    case PV_TYPE: return pt_eq(a->t, b->t);
    case PV_NUM: return a->n.k == b->n.k && pt_n_eq(a->n, b->n);
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
        num neg = pt_n_negate(x->n);
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
        pt_n_to_s(b, v->n);
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
    if (pt_n_cmp(f, t) == 1) {
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
    return pt_mk_int(f, t);
}

/* TypeFactory.type_of */
static ptype *type_of(const pval *v)
{
    switch (v->k) {
    case PV_TYPE: return pt_ref(v->t);
    case PV_STR: return pt_mk_runtime("ruby", 4, true, v->s.p, v->s.n, true);
    case PV_NUM: return pt_dflt(v->n.k == N_FLOAT ? K_FLOAT : K_INTEGER);
    case PV_BOOL: return pt_dflt(K_BOOLEAN);
    case PV_DEFAULT: return pt_mk(K_DEFAULT);
    case PV_NIL: return pt_mk(K_UNDEF);
    case PV_REGEX: return pt_mk_regexp(v->s.p, v->s.n, true);
    case PV_ARRAY: return pt_dflt(K_ARRAY);
    default: return pt_dflt(K_HASH);
    }
}

/* Ruby class name of a parameter value, for messages. */
/* Ruby's class name of a parameter value, for messages; buf holds a type's. */
static const char *pv_class(const pval *v, char buf[static 64])
{
    switch (v->k) {
    case PV_TYPE:
        snprintf(buf, 64, "Puppet::Pops::Types::P%sType", v->t->k == K_ALIAS ? "TypeAlias" : pt_simple_names[v->t->k]);
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
    return pt_ref(v->t);
}

/* A size parameter: an Integer type, or a range parameter giving the lower bound. */
static ptype *size_param(ictx *c, const ast *a, const pval *v)
{
    if (is_type(v) && v->t->k == K_INTEGER)
        return pt_ref(v->t);
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
                pt_unref(vt);
                goto fail;
            }
            kt = pt_mk_string_val(k->s.p, k->s.n);
            if (pt_accepts_undef(vt))
                kt = pt_mk_contained(K_OPTIONAL, kt);
        } else {
            const ptype *s = NULL;
            kt = NULL;
            if (is_type(k)) {
                const ptype *t = k->t;
                if (t->k == K_NOTUNDEF) {
                    kt = t->t ? pt_ref(t->t) : NULL;
                    s = kt;
                } else if (t->k == K_OPTIONAL) {
                    kt = pt_ref(t);
                    s = t->t;
                } else if (t->k == K_STRING) {
                    kt = pt_ref(t);
                    s = t;
                } else if (t->k == K_ENUM) {
                    if (t->nvals == 1)
                        kt = pt_mk_string_val(t->vals[0].p, t->vals[0].n);
                    s = kt;
                } else {
                    char cls[64];
                    herr_set(c->err, HERR_ERROR,
                             "Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: %s",
                             pv_class(k, cls));
                    pt_unref(vt);
                    goto fail;
                }
            } else {
                char cls[64];
                herr_set(c->err, HERR_ERROR,
                         "Illegal Struct member key type. Expected NotUndef, Optional, String, or Enum. Got: %s",
                         pv_class(k, cls));
                pt_unref(vt);
                goto fail;
            }
            if (!is_k(s, K_STRING) || !s->has_s) {
                char *ks = pt_to_s(k->t);
                herr_set(c->err, HERR_ERROR,
                         "Unable to extract a non-empty literal string from Struct member key type %s", ks);
                free(ks);
                pt_unref(kt);
                pt_unref(vt);
                goto fail;
            }
        }
        pairs[2 * i] = kt;
        pairs[2 * i + 1] = vt;
    }
    return pt_mk_struct(pairs, n);
fail:
    for (size_t i = 0; i < 2 * n; i++)
        pt_unref(pairs[i]);
    free(pairs);
    return NULL;
}

static ptype *make_pattern(ictx *c, pval **params, size_t np)
{
    tlist l = {0};
    for (size_t i = 0; i < np; i++) {
        const pval *p = params[i];
        if (p->k == PV_STR || p->k == PV_REGEX) {
            regex_t *re = pt_re_compile(p->s.p, p->s.n, c->err);
            if (!re) {
                pt_tl_free(&l);
                return NULL;
            }
            ptype *rt = pt_mk_regexp(p->s.p, p->s.n, true);
            rt->re = re;
            tl_push(&l, rt);
        } else if (is_type(p) && p->t->k == K_REGEXP) {
            tl_push(&l, pt_ref(p->t));
        } else if (is_type(p) && p->t->k == K_PATTERN) {
            for (size_t j = 0; j < p->t->n; j++)
                tl_push(&l, pt_ref(p->t->v[j]));
        } else {
            char cls[64];
            herr_set(c->err, HERR_ERROR, "Only String, Regexp, Pattern-Type, and Regexp-Type are allowed: got '%s",
                     pv_class(p, cls));
            pt_tl_free(&l);
            return NULL;
        }
    }
    pt_tl_uniq(&l);
    return pt_mk_pattern(l.v, l.n);
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
        block = pt_ref(ps[np - 1]->t);
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
        pt_unref(ret);
        pt_unref(block);
        return NULL;
    }
    tlist types = {0};
    for (size_t i = 0; i < np; i++)
        tl_push(&types, type_of(ps[i]));
    if (!types.n && size && pt_n_lt(n_int(0), size->to))
        tl_push(&types, pt_mk(K_UNIT));
    return pt_mk_callable(pt_mk_tuple(types.v, types.n, size), block, ret);
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
    return pt_mk_tuple(types, n, size);
}

static ptype *make_runtime(ictx *c, const ast *a, pval **params)
{
    const pval *rt = params[0], *name = params[1];
    if ((rt->k != PV_STR && rt->k != PV_NIL) || (name->k != PV_STR && name->k != PV_NIL)) {
        invalid_spec(c, a);
        return NULL;
    }
    return pt_mk_runtime(rt->s.p, rt->s.n, rt->k == PV_STR, name->s.p, name->s.n, name->k == PV_STR);
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
    char *lname = pt_lower_dup(name, nlen);
    ptype *r = NULL;
#define IS(s) (!strcmp(lname, s))
    if (IS("array")) {
        if (np == 1) {
            ptype *e = need_type(c, a, params[0]);
            r = e ? pt_mk_array(e, NULL) : NULL;
        } else if (np == 2) {
            if (is_type(params[0])) {
                ptype *s = size_param(c, a, params[1]);
                r = s ? pt_mk_array(pt_ref(params[0]->t), s) : NULL;
            } else {
                ptype *s = two_ranges(c, a, params[0], params[1]);
                r = s ? pt_mk_array(pt_mk(K_DEFAULT), s) : NULL; /* array_of(:default) is Array[Default] */
            }
        } else if (np == 3) {
            ptype *e = need_type(c, a, params[0]);
            ptype *s = e ? two_ranges(c, a, params[1], params[2]) : NULL;
            r = s ? pt_mk_array(e, s) : NULL;
            if (!s)
                pt_unref(e);
        } else {
            invalid_params(c, "Array", "1 to 3", np);
        }
    } else if (IS("hash")) {
        if (np == 2) {
            if (is_type(params[0]) && is_type(params[1])) {
                r = pt_mk_hash(pt_ref(params[0]->t), pt_ref(params[1]->t), NULL);
            } else {
                ptype *s = two_ranges(c, a, params[0], params[1]);
                r = s ? pt_mk_hash(pt_mk(K_DEFAULT), pt_mk(K_DEFAULT), s) : NULL;
            }
        } else if (np == 3) {
            ptype *s = size_param(c, a, params[2]);
            if (s && (!is_type(params[0]) || !is_type(params[1]))) {
                invalid_spec(c, a);
                pt_unref(s);
                s = NULL;
            }
            r = s ? pt_mk_hash(pt_ref(params[0]->t), pt_ref(params[1]->t), s) : NULL;
        } else if (np == 4) {
            ptype *s = two_ranges(c, a, params[2], params[3]);
            if (s && (!is_type(params[0]) || !is_type(params[1]))) {
                invalid_spec(c, a);
                pt_unref(s);
                s = NULL;
            }
            r = s ? pt_mk_hash(pt_ref(params[0]->t), pt_ref(params[1]->t), s) : NULL;
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
        r = s ? pt_mk_collection(s) : NULL;
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
            r = pt_mk_named(K_CLASS, s, sn);
        }
    } else if (IS("regexp")) {
        if (np != 1)
            invalid_params(c, "Regexp", "1", np);
        else if (params[0]->k == PV_STR || params[0]->k == PV_REGEX) {
            /* Ruby compiles the pattern when the type is first used; it fails the same way */
            regex_t *re = pt_re_compile(params[0]->s.p, params[0]->s.n, c->err);
            if (re) {
                r = pt_mk_regexp(params[0]->s.p, params[0]->s.n, true);
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
                r = pt_mk_enum(vals, n, ci);
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
                tl_push(&l, pt_ref(params[i]->t));
        }
        if (ok) {
            r = pt_maybe_create(&l);
        } else {
            pt_tl_free(&l);
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
            r = pt_mk_bool(params[0]->b);
    } else if (IS("integer") || IS("float")) {
        bool fl = IS("float");
        if (np == 1) {
            if (is_int(params[0]) || (fl && params[0]->k == PV_NUM)) {
                ptype *x = int_range(c, params[0], NULL);
                r = x;
            } else if (is_default(params[0])) {
                r = pt_dflt(K_INTEGER); /* made a Float below */
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
            ptype *x = pt_mk_float(f, t);
            pt_unref(r);
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
        r = s ? pt_mk_string_size(s) : NULL;
    } else if (IS("sensitive")) {
        if (np != 1)
            invalid_params(c, "Sensitive", "0 to 1", np);
        else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? pt_mk_contained(K_SENSITIVE, t) : NULL;
        }
    } else if (IS("optional") || IS("notundef")) {
        bool opt = IS("optional");
        if (np != 1) {
            invalid_params(c, opt ? "Optional" : "NotUndef", opt ? "1" : "0 to 1", np);
        } else if (params[0]->k == PV_STR) {
            r = pt_mk_contained(opt ? K_OPTIONAL : K_NOTUNDEF, pt_mk_string_val(params[0]->s.p, params[0]->s.n));
        } else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? pt_mk_contained(opt ? K_OPTIONAL : K_NOTUNDEF, t) : NULL;
        }
    } else if (IS("type") || IS("iterable") || IS("iterator")) {
        const char *cap = IS("type") ? "Type" : IS("iterable") ? "Iterable" : "Iterator";
        tkind k = IS("type") ? K_TYPE : IS("iterable") ? K_ITERABLE : K_ITERATOR;
        if (np != 1) {
            invalid_params(c, cap, "1", np);
        } else {
            ptype *t = need_type(c, a, params[0]);
            r = t ? pt_mk_contained(k, t) : NULL;
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
            r = pt_mk_named(K_RESOURCE, cn, rl);
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
            pt_unref(t);
        } else if (!t) {
            r = pt_mk_named(K_TYPEREF, c->src + a->start, a->end - a->start);
        } else if (t->k == K_RESOURCE) {
            if (np != 1) {
                char *cased = xstrndup(name, nlen);
                invalid_params(c, cased, "1", np);
                free(cased);
            } else {
                r = pt_ref(t); /* the title is kept out: Resource titles describe no value here */
            }
            pt_unref(t);
        } else {
            pt_unref(t);
            unparameterized(c, q);
        }
    }
#undef IS
    free(lname);
    return r;
}

static ptype *parse_type_e(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                           struct ptype_aliases *ua, herr *err);

/* Parses text as a type (err may be NULL). cli selects `puppet lookup --type` behaviour (see
 * scope_load_error); locals are a new function's local type aliases. */
ptype *pt_parse_type(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                     herr *err)
{
    herr local = {0};
    ptype *t = parse_type_e(text, len, cli, locals, nlocals, NULL, err ? err : &local);
    herr_clear(&local);
    return t;
}

static ptype *parse_type_e(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                           struct ptype_aliases *ua, herr *err)
{
    /* TypeParser.opt_type_map: these exact strings bypass the parser; of them only "Array[1]"
     * differs from what parsing gives (parsed, Array[1] is not a valid type) */
    if (len == 8 && !memcmp(text, "Array[1]", 8))
        return pt_mk_array(pt_mk(K_ANY), pt_mk_int(n_int(1), n_posinf()));
    lexer lx = {text, len, NULL, 0, 0, err};
    if (!pt_lex_all(&lx)) {
        pt_lx_free(&lx);
        return NULL;
    }
    parser p = {&lx, 0, 0, err};
    ast *a = pt_p_program(&p);
    ptype *r = NULL;
    if (a) {
        ictx c = {text, cli, locals, nlocals, err, 0, ua};
        pval *v = interp(&c, a);
        if (v && v->k == PV_TYPE)
            r = pt_ref(v->t);
        else if (v)
            invalid_spec(&c, a);
        pv_free(v);
        pt_a_free(a);
    }
    pt_lx_free(&lx);
    return r;
}

/* Parses as Puppet's TypeParser does with a loader: the built-in aliases (Data, RichData, ...)
 * and resource types resolve, other unknown names become type references. */
ptype *ptype_parse(const char *text, herr *err)
{
    if (!text) {
        herr_set(err, HERR_PUPPET, "The expression <> is not a valid type specification.");
        return NULL;
    }
    return pt_parse_type(text, strlen(text), false, NULL, 0, err);
}

/* `puppet lookup --type T` parses T with the Scope as loader context. Any name outside the
 * parser's own type map (Data, RichData, File, an unknown Foo, ...) then fails with a Ruby
 * NoMethodError: "private method `load' called for Scope(Class[main]):Puppet::Parser::Scope". */
ptype *ptype_parse_cli(const char *text, herr *err)
{
    if (!text) {
        herr_set(err, HERR_PUPPET, "The expression <> is not a valid type specification.");
        return NULL;
    }
    return pt_parse_type(text, strlen(text), true, NULL, 0, err);
}

/* ======================================================================================
 * User-defined type aliases (`type Name = <type>` in a module's types/ folder), for the class
 * parameters hiera check reads: each alias becomes a TypeAlias node (named as written, shown
 * expanded in messages as Puppet shows a module's aliases) whose type is parsed on first use,
 * with the same set of aliases, so that aliases may name each other and themselves.
 * ====================================================================================== */

typedef struct {
    char *name; /* as written */
    char *body;
    ptype *node;  /* the alias node (immortal: the table owns it), once asked for */
    int state;    /* 0 not parsed, 1 being parsed, 2 parsed, 3 its body does not parse */
    char *error;
} ualias;

struct ptype_aliases {
    ualias *v;
    size_t n, cap;
};

ptype_aliases *ptype_aliases_new(void) { return xcalloc(1, sizeof(ptype_aliases)); }

void ptype_aliases_add(ptype_aliases *a, const char *name, const char *body)
{
    for (size_t i = 0; i < a->n; i++)
        if (pt_ascii_casecmp_eq(a->v[i].name, strlen(a->v[i].name), name, strlen(name)))
            return; /* the first definition wins (modules earlier on the modulepath) */
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 32;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = (ualias){xstrdup(name), xstrdup(body), NULL, 0, NULL};
}

void ptype_aliases_free(ptype_aliases *a)
{
    if (!a)
        return;
    /* the nodes may refer to each other: drop every body first, then the nodes */
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i].node) {
            ptype *t = a->v[i].node->t;
            a->v[i].node->t = NULL;
            pt_unref(t);
        }
    for (size_t i = 0; i < a->n; i++) {
        if (a->v[i].node) {
            a->v[i].node->refs = 1;
            pt_unref(a->v[i].node);
        }
        free(a->v[i].name);
        free(a->v[i].body);
        free(a->v[i].error);
    }
    free(a->v);
    free(a);
}

static ptype *user_alias(struct ptype_aliases *ua, const char *name, size_t n)
{
    for (size_t i = 0; i < ua->n; i++) {
        ualias *u = &ua->v[i];
        if (!pt_ascii_casecmp_eq(u->name, strlen(u->name), name, n))
            continue;
        if (u->state == 0) {
            u->node = pt_mk_named(K_ALIAS, u->name, strlen(u->name));
            make_immortal(u->node);
            u->state = 1;
            herr e = {0};
            ptype *t = parse_type_e(u->body, strlen(u->body), false, NULL, 0, ua, &e);
            if (t) {
                u->node->t = t;
                u->state = 2;
            } else {
                /* the alias stands for nothing we can check: an unresolved reference */
                u->node->t = pt_mk_named(K_TYPEREF, u->name, strlen(u->name));
                u->error = xstrdup(e.msg ? e.msg : "not a type");
                u->state = 3;
            }
            herr_clear(&e);
        }
        return u->node;
    }
    return NULL;
}

const char *ptype_aliases_error(ptype_aliases *a, const char *name, const char **body)
{
    for (size_t i = 0; i < a->n; i++) {
        ualias *u = &a->v[i];
        if (!pt_ascii_casecmp_eq(u->name, strlen(u->name), name, strlen(name)))
            continue;
        user_alias(a, name, strlen(name));
        if (body)
            *body = u->body;
        return u->error;
    }
    return NULL;
}

ptype *ptype_parse_with(const char *text, ptype_aliases *a, herr *err)
{
    if (!text) {
        herr_set(err, HERR_PUPPET, "The expression <> is not a valid type specification.");
        return NULL;
    }
    herr local = {0};
    ptype *t = parse_type_e(text, strlen(text), false, NULL, 0, a, err ? err : &local);
    herr_clear(&local);
    return t;
}
