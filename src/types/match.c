/* match.c - the type calculator (type_calculator.rb and each type's _assignable?):
 * generalize and normalize, assignability of a type to a type, instance? of a value, and the
 * type Puppet infers for a value; ptype_match. */
#include "types/types_int.h"

#include <ctype.h>

/* ======================================================================================
 * generalize and normalize
 * ====================================================================================== */

/* Integer ranges of a Variant merged as PVariantType#merge_ranges does. */
static bool int_merge(const ptype *a, const ptype *b, num *from, num *to)
{
    bool intersect = !(pt_n_lt(a->to, b->from) || pt_n_lt(b->to, a->from));
    /* adjacent?: @to + 1 == o.from || o.to + 1 == @from, where from/to are nil when unbounded */
    bool adjacent = (!n_is_neginf(b->from) && pt_n_eq(n_succ(a->to), b->from)) ||
                    (!n_is_posinf(b->to) && !n_is_neginf(a->from) && pt_n_eq(n_succ(b->to), a->from));
    if (a->k == K_FLOAT)
        adjacent = false;
    if (!intersect && !adjacent)
        return false;
    *from = pt_n_min(a->from, b->from);
    *to = pt_n_max(a->to, b->to);
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
                    ptype *m = k == K_INTEGER ? pt_mk_int(n_copy(from), n_copy(to))
                                              : pt_mk_float(n_copy(from), n_copy(to));
                    pt_unref(memo);
                    pt_unref(ranges.v[i]);
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
            tl_push(&inner, nus.v[i]->t ? pt_ref(nus.v[i]->t) : pt_mk(K_ANY));
        pt_tl_free(&nus);
        ptype *v = pt_maybe_create(&inner);
        ptype *nv = pt_normalize(v);
        pt_unref(v);
        tl_push(&others, pt_mk_contained(K_NOTUNDEF, nv));
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
        ptype *m = pt_mk_enum(vals, nv, ci);
        if (ci)
            for (size_t i = 0; i < nv; i++)
                free(vals[i].p);
        free(vals);
        pt_tl_free(&enums);
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
                tl_push(&res, pt_ref(pats.v[i]->v[j]));
        pt_tl_uniq(&res);
        pt_tl_free(&pats);
        tl_push(&others, pt_mk_pattern(res.v, res.n));
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
        return pt_ref(t);
    tlist types = {0};
    bool has_undef = false, modified = false;
    for (size_t i = 0; i < t->n; i++) {
        ptype *n = pt_normalize(t->v[i]);
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
            tl_push(&rest, is_k(x, K_OPTIONAL) ? (x->t ? pt_ref(x->t) : pt_mk(K_ANY)) : pt_ref(x));
        }
        pt_tl_free(&types);
        ptype *o = pt_mk_contained(K_OPTIONAL, pt_maybe_create(&rest));
        ptype *r = pt_normalize(o);
        pt_unref(o);
        return r;
    }
    /* flatten_variants */
    tlist flat = {0};
    for (size_t i = 0; i < types.n; i++) {
        ptype *x = types.v[i];
        if (is_k(x, K_VARIANT)) {
            for (size_t j = 0; j < x->n; j++)
                tl_push(&flat, pt_ref(x->v[j]));
            pt_unref(x);
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
        pt_tl_free(&flat);
        return pt_ref(t);
    }
    return pt_maybe_create(&flat);
}

/* normalize keeps Ruby's object identity: a type whose parts did not change is returned itself,
 * which matters because constructors such as Sensitive's generalize their argument again. */
static ptype *normalize_contained(const ptype *t)
{
    if (!t->t)
        return pt_dflt(t->k);
    ptype *inner = pt_normalize(t->t), *n;
    if (inner == t->t) {
        pt_unref(inner);
        n = pt_ref(t);
    } else {
        n = pt_mk_contained(t->k, inner);
    }
    if (!n->t)
        return n;
    if (t->k == K_NOTUNDEF) {
        if (is_k(n->t, K_OPTIONAL)) { /* no point in an Optional inside a NotUndef */
            ptype *x = pt_mk_contained(K_NOTUNDEF, pt_ref(n->t->t));
            pt_unref(n);
            ptype *r = pt_normalize(x);
            pt_unref(x);
            return r;
        }
        if (!pt_accepts_undef(n->t)) { /* NotUndef anyway */
            ptype *r = pt_ref(n->t);
            pt_unref(n);
            return r;
        }
    } else if (t->k == K_OPTIONAL) {
        if (is_k(n->t, K_NOTUNDEF)) {
            ptype *x = pt_mk_contained(K_OPTIONAL, pt_ref(n->t->t));
            pt_unref(n);
            ptype *r = pt_normalize(x);
            pt_unref(x);
            return r;
        }
        if (pt_accepts_undef(n->t)) { /* Optional anyway */
            ptype *r = pt_ref(n->t);
            pt_unref(n);
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
            out[i] = pt_ref(in[i]);
            continue;
        }
        out[i] = pt_normalize(in[i]);
        same &= out[i] == in[i];
    }
    return same;
}

static void unref_all(ptype **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pt_unref(v[i]);
    free(v);
}

ptype *pt_normalize(const ptype *t)
{
    switch (t->k) {
    case K_NOTUNDEF: case K_TYPE: case K_OPTIONAL: case K_ITERABLE: case K_ITERATOR: case K_INIT:
    case K_SENSITIVE:
        return normalize_contained(t);
    case K_COLLECTION:
        return pt_dflt(K_COLLECTION); /* PCollectionType#normalize drops the size */
    case K_STRUCT: case K_TUPLE: {
        if ((t->k == K_STRUCT && !t->n) || is_tuple_default(t))
            return pt_dflt(t->k);
        ptype **v = xcalloc(t->n ? t->n : 1, sizeof *v);
        if (normalize_all(t->v, t->n, t->k == K_STRUCT ? 2 : 1, v)) {
            unref_all(v, t->n);
            return pt_ref(t);
        }
        return t->k == K_STRUCT ? pt_mk_struct(v, st_count(t)) : pt_mk_tuple(v, t->n, pt_ref(t->size));
    }
    case K_ARRAY: {
        if (is_k(t->t, K_ANY))
            return pt_dflt(K_ARRAY); /* Array[Any, ...] normalizes to Array, dropping the size */
        ptype *e = pt_normalize(t->t);
        if (e == t->t) {
            pt_unref(e);
            return pt_ref(t);
        }
        return pt_mk_array(e, pt_ref(t->size));
    }
    case K_HASH: {
        if (is_hash_default(t) || pt_is_hash_empty(t))
            return pt_ref(t);
        ptype *k = pt_normalize(t->t), *v = pt_normalize(t->t2);
        if (!t->size && k == t->t && v == t->t2) {
            pt_unref(k);
            pt_unref(v);
            return pt_ref(t);
        }
        return pt_mk_hash(k, v, pt_ref(t->size));
    }
    case K_VARIANT:
        return normalize_variant(t);
    case K_CALLABLE: {
        if (!t->t && !t->t2 && !t->t3)
            return pt_dflt(K_CALLABLE);
        ptype *p = t->t ? pt_normalize(t->t) : NULL, *b = t->t2 ? pt_normalize(t->t2) : NULL,
              *r = t->t3 ? pt_normalize(t->t3) : NULL;
        if (p == t->t && b == t->t2 && r == t->t3) {
            pt_unref(p);
            pt_unref(b);
            pt_unref(r);
            return pt_ref(t);
        }
        return pt_mk_callable(p, b, r);
    }
    default:
        return pt_ref(t);
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
static bool iterable(const ptype *t, int depth);
static ptype *iterable_type(const ptype *t, int depth);
static bool re_type_match(ptype *re, const char *s, size_t n);

/* Runs pt_assignable(t, o) with the pair pushed on the guard; true when already present. */
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
    bool r = via_that ? pt_assignable(t, o->t, g) : asg_base(t, o, g);
    g->n--;
    return r;
}

bool pt_assignable(const ptype *t, const ptype *o, guard *g)
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

bool pt_accepts_undef(const ptype *t) { return pt_assignable(t, pt_D(K_UNDEF), NULL); }

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
            if (!pt_assignable(t, o->v[i], g))
                return false;
        return true;
    case K_OPTIONAL:
        return pt_assignable(t, pt_D(K_UNDEF), g) && (!o->t || pt_assignable(t, o->t, g));
    case K_NOTUNDEF:
        if (o->t && !pt_accepts_undef(o->t))
            return pt_assignable(t, o->t, g);
        return asg_impl(t, o, g);
    default:
        return asg_impl(t, o, g);
    }
}

/* PStringType#derived_size_type */
static ptype *derived_size(const ptype *s)
{
    if (s->size)
        return pt_ref(s->size);
    if (s->has_s) {
        int64_t l = (int64_t)pt_utf8_len(s->s.p, s->s.n);
        return pt_mk_intv(l, l);
    }
    return pt_default_size();
}

static bool enum_has(const ptype *e, const char *s, size_t n)
{
    for (size_t i = 0; i < e->nvals; i++)
        if (e->flag ? pt_ascii_casecmp_eq(e->vals[i].p, e->vals[i].n, s, n)
                    : (e->vals[i].n == n && memcmp(e->vals[i].p, s, n) == 0))
            return true;
    return false;
}

static bool size_assignable(const ptype *size_s, const ptype *size_o, guard *g)
{
    ptype *ds = size_s ? NULL : pt_default_size(), *dso = size_o ? NULL : pt_default_size();
    bool r = pt_assignable(size_s ? size_s : ds, size_o ? size_o : dso, g);
    pt_unref(ds);
    pt_unref(dso);
    return r;
}

static bool size_assignable_n(const ptype *size_s, int64_t from, int64_t to, guard *g)
{
    ptype *o = pt_mk_intv(from, to);
    bool r = size_assignable(size_s, o, g);
    pt_unref(o);
    return r;
}

static bool range_contains(const ptype *r, num v)
{
    return pt_n_le(r->from, v) && pt_n_le(v, r->to);
}

static bool asg_string(const ptype *t, const ptype *o, guard *g)
{
    if (t->size) {
        /* a size constrained String */
        if (o->k == K_STRING) {
            ptype *d = derived_size(o);
            bool r = pt_assignable(t->size, d, g);
            pt_unref(d);
            return r;
        }
        if (o->k == K_ENUM) {
            if (!o->nvals)
                return size_assignable(t->size, NULL, g);
            size_t lo = SIZE_MAX, hi = 0;
            for (size_t i = 0; i < o->nvals; i++) {
                size_t l = pt_utf8_len(o->vals[i].p, o->vals[i].n);
                lo = l < lo ? l : lo;
                hi = l > hi ? l : hi;
            }
            return pt_n_le(t->size->from, n_int((int64_t)lo)) && pt_n_le(n_int((int64_t)hi), t->size->to);
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
    if (pt_eq(t, o))
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
    if (pt_eq(t, o))
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
                if (!pt_accepts_undef(st_key(t, i)))
                    return false;
            } else {
                matched++;
                if (!pt_assignable(st_key(t, i), e2k, g) || !pt_assignable(st_val(t, i), e2v, g))
                    return false;
            }
        }
        return matched == st_count(o);
    }
    if (o->k == K_HASH) {
        int64_t required = 0;
        for (size_t i = 0; i < st_count(t); i++) {
            const ptype *k = st_key(t, i);
            if (pt_accepts_undef(k))
                continue;
            required++;
            if (!pt_assignable(st_val(t, i), o->t2, g))
                return false;
            ptype *gk = pt_generalize(k);
            bool ok = pt_assignable(gk, o->t, g);
            pt_unref(gk);
            if (!ok)
                return false;
        }
        ptype *r = pt_mk_intv(required, (int64_t)st_count(t));
        bool ok = size_assignable(r, o->size, g);
        pt_unref(r);
        return ok;
    }
    return false;
}

/* PTupleType#size_range as an Integer type. */
ptype *pt_tuple_size_type(const ptype *t)
{
    if (t->size)
        return pt_ref(t->size);
    if (t->n == 0)
        return pt_default_size();
    return pt_mk_intv((int64_t)t->n, (int64_t)t->n);
}

static bool asg_tuple(const ptype *t, const ptype *o, guard *g)
{
    if (pt_eq(t, o))
        return true;
    if (o->k != K_TUPLE && o->k != K_ARRAY)
        return false;
    ptype *size_s = pt_tuple_size_type(t);
    bool r = true;
    if (o->k == K_TUPLE) {
        ptype *size_o = pt_tuple_size_type(o);
        r = pt_assignable(size_s, size_o, g);
        pt_unref(size_o);
        if (r && t->n) {
            if (o->n == 0) {
                r = pt_n_eq(size_s->from, n_int(0));
            } else {
                for (size_t i = 0; i < o->n && r; i++)
                    r = pt_assignable(t->v[i < t->n ? i : t->n - 1], o->v[i], g);
            }
        }
    } else {
        r = size_assignable(size_s, o->size, g);
        if (r && t->n) {
            /* [s_types.size, size_o.range[1]].min entries must accept the element type */
            num max = o->size ? o->size->to : n_posinf();
            size_t count = t->n;
            if (pt_n_lt(max, n_int((int64_t)count)))
                count = max.k == N_INT && max.i > 0 ? (size_t)max.i : 0;
            for (size_t i = 0; i < count && r; i++)
                r = pt_assignable(t->v[i], o->t, g);
        }
    }
    pt_unref(size_s);
    return r;
}

static bool asg_array(const ptype *t, const ptype *o, guard *g)
{
    if (o->k == K_TUPLE) {
        ptype *size_o = o->size ? pt_ref(o->size) : pt_mk_intv((int64_t)o->n, (int64_t)o->n);
        bool r = size_assignable(t->size, size_o, g);
        pt_unref(size_o);
        for (size_t i = 0; i < o->n && r; i++)
            r = pt_assignable(t->t, o->v[i], g);
        return r;
    }
    if (o->k == K_ARRAY)
        return size_assignable(t->size, o->size, g) && pt_assignable(t->t, o->t, g);
    return false;
}

static bool value_instance_of_string(const ptype *t, pstr s, guard *g);

static bool asg_hash(const ptype *t, const ptype *o, guard *g)
{
    if (o->k == K_HASH) {
        if ((!t->size || pt_n_eq(t->size->from, n_int(0))) && pt_is_hash_empty(o))
            return true;
        return pt_assignable(t->t, o->t, g) && pt_assignable(t->t2, o->t2, g) && size_assignable(t->size, o->size, g);
    }
    if (o->k == K_STRUCT) {
        ptype *ds = t->size ? NULL : pt_default_size();
        bool r = range_contains(t->size ? t->size : ds, n_int((int64_t)st_count(o)));
        pt_unref(ds);
        for (size_t i = 0; i < st_count(o) && r; i++)
            r = value_instance_of_string(t->t, st_name(o, i), g) && pt_assignable(t->t2, st_val(o, i), g);
        return r;
    }
    return false;
}

static bool asg_callable(const ptype *t, const ptype *o, guard *g)
{
    if (o->k != K_CALLABLE)
        return false;
    if (t->t3 && !pt_assignable(t->t3, o->t3 ? o->t3 : pt_D(K_ANY), g))
        return false;
    if (!t->t)
        return true;
    if (!o->t || !pt_assignable(o->t, t->t, g))
        return false;
    const ptype *tb = t->t2 ? t->t2 : pt_D(K_UNDEF), *ob = o->t2 ? o->t2 : pt_D(K_UNDEF);
    return pt_assignable(ob, tb, g);
}

static bool asg_impl(const ptype *t, const ptype *o, guard *g)
{
    switch (t->k) {
    case K_ANY: case K_UNIT:
        return true;
    case K_INIT:
        return pt_is_a(o, K_INIT) || (!t->t && pt_assignable(pt_builtin_alias("RichData", 8), o, g));
    case K_UNDEF: case K_DEFAULT: case K_CATALOGENTRY: case K_BINARY: case K_URI: case K_OBJECT:
    case K_TYPESET: case K_SEMVERRANGE: case K_SEMVER: case K_TIMESPAN: case K_TIMESTAMP:
        return pt_is_a(o, t->k);
    case K_NOTUNDEF:
        return !pt_accepts_undef(o) && (!t->t || pt_assignable(t->t, o, g));
    case K_TYPE:
        if (o->k != K_TYPE)
            return false;
        if (!t->t)
            return true;
        return o->t && pt_assignable(t->t, o->t, g);
    case K_SCALAR:
        return pt_is_a(o, K_SCALAR) || pt_assignable(pt_D(K_STRING), o, g) || pt_assignable(pt_D(K_INTEGER), o, g) ||
               pt_assignable(pt_D(K_FLOAT), o, g) || pt_assignable(pt_D(K_BOOLEAN), o, g) ||
               pt_assignable(pt_D(K_REGEXP), o, g) || pt_assignable(pt_D(K_SEMVER), o, g) ||
               pt_assignable(pt_D(K_SEMVERRANGE), o, g) || pt_assignable(pt_D(K_TIMESPAN), o, g) ||
               pt_assignable(pt_D(K_TIMESTAMP), o, g);
    case K_SCALARDATA:
        return pt_is_a(o, K_SCALARDATA) || pt_assignable(pt_D(K_STRING), o, g) ||
               pt_assignable(pt_D(K_INTEGER), o, g) || pt_assignable(pt_D(K_FLOAT), o, g) ||
               pt_assignable(pt_D(K_BOOLEAN), o, g);
    case K_ENUM:
        return asg_enum(t, o);
    case K_NUMERIC: case K_INTEGER: case K_FLOAT:
        /* o.is_a?(self.class) and the range of o within the range of t */
        return pt_is_a(o, t->k) && pt_n_le(t->from, o->from) && pt_n_le(o->to, t->to);
    case K_COLLECTION:
        if (pt_is_a(o, K_COLLECTION))
            return size_assignable(t->size, o->size, g);
        if (o->k == K_TUPLE) {
            ptype *so = o->size ? pt_ref(o->size) : pt_mk_intv((int64_t)o->n, (int64_t)o->n);
            bool r = size_assignable(t->size, so, g);
            pt_unref(so);
            return r;
        }
        if (o->k == K_STRUCT)
            return size_assignable_n(t->size, (int64_t)st_count(o), (int64_t)st_count(o), g);
        return false;
    case K_ITERABLE:
        if (!t->t || pt_assignable(t->t, pt_D(K_ANY), g))
            return iterable(o, 0);
        else {
            ptype *it = iterable_type(o, 0);
            bool r = it && it->t && pt_assignable(t->t, it->t, g);
            pt_unref(it);
            return r;
        }
    case K_ITERATOR:
        return o->k == K_ITERATOR && (!t->t || (o->t && pt_assignable(t->t, o->t, g)));
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
            if (pt_assignable(t->v[i], o, g))
                return true;
        return false;
    case K_OPTIONAL:
        if (o->k == K_UNDEF || !t->t)
            return true;
        if (o->k == K_OPTIONAL)
            return pt_assignable(t->t, o->t ? o->t : pt_D(K_ANY), g);
        return pt_assignable(t->t, o, g);
    case K_SENSITIVE:
        return o->k == K_SENSITIVE && pt_assignable(t->t, o->t, g);
    case K_TYPEREF:
        return pt_eq(t, o);
    case K_ALIAS:
        return t->t ? pt_assignable(t->t, o, g) : pt_eq(t, o);
    case K_CLASS:
        return o->k == K_CLASS && (!t->has_s || (o->has_s && ps_eq(t->s, o->s)));
    case K_RESOURCE:
        return o->k == K_RESOURCE &&
               (!t->has_s || (o->has_s && pt_ascii_casecmp_eq(t->s.p, t->s.n, o->s.p, o->s.n)));
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
    return pt_mk_tuple(types, 2, pt_mk_intv(2, 2));
}

static ptype *iterable_type(const ptype *t, int depth)
{
    if (depth > MAX_ALIAS_DEPTH)
        return NULL;
    switch (t->k) {
    case K_STRING: case K_ENUM:
        return pt_mk_contained(K_ITERABLE, pt_mk_string_size(pt_mk_intv(1, 1)));
    case K_INTEGER:
        return pt_mk_contained(K_ITERABLE, pt_dflt(K_INTEGER));
    case K_ARRAY:
        return is_k(t->t, K_ANY) ? pt_dflt(K_ITERABLE) : pt_mk_contained(K_ITERABLE, pt_ref(t->t));
    case K_HASH:
        if (is_hash_default(t) || pt_is_hash_empty(t))
            return pt_mk_contained(K_ITERABLE, key_pair_tuple(pt_mk(K_UNIT), pt_mk(K_UNIT)));
        return pt_mk_contained(K_ITERABLE, key_pair_tuple(pt_ref(t->t), pt_ref(t->t2)));
    case K_STRUCT: {
        if (!t->n)
            return pt_mk_contained(K_ITERABLE, key_pair_tuple(pt_mk(K_UNIT), pt_mk(K_UNIT)));
        tlist ks = {0}, vs = {0};
        for (size_t i = 0; i < st_count(t); i++) {
            tl_push(&ks, pt_ref(st_key(t, i)));
            tl_push(&vs, pt_ref(st_val(t, i)));
        }
        return pt_mk_contained(K_ITERABLE, key_pair_tuple(pt_maybe_create(&ks), pt_maybe_create(&vs)));
    }
    case K_TUPLE: {
        tlist l = {0};
        for (size_t i = 0; i < t->n; i++)
            tl_push(&l, pt_ref(t->v[i]));
        return pt_mk_contained(K_ITERABLE, pt_maybe_create(&l));
    }
    case K_ITERABLE:
        return pt_ref(t);
    case K_ITERATOR:
        return t->t ? pt_mk_contained(K_ITERABLE, pt_ref(t->t)) : pt_dflt(K_ITERABLE);
    case K_TYPE:
        if (iterable(t, depth))
            return pt_mk_contained(K_ITERABLE, pt_ref(t->t));
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

/* Ruby's `re =~ s` (unanchored search). */
static bool re_search(regex_t *re, const char *s, size_t n)
{
    const OnigUChar *p = (const OnigUChar *)s;
    int r = onig_search(re, p, p + n, p, p + n, NULL, ONIG_OPTION_NONE);
    return r >= 0;
}

static bool re_type_match(ptype *re, const char *s, size_t n)
{
    regex_t *r = pt_regexp_compiled(re);
    return r && re_search(r, s, n);
}

num pt_v_num(const hv *v)
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

static bool in_range(const ptype *t, const hv *v)
{
    num n = pt_v_num(v);
    bool r = range_contains(t, n);
    n_drop(&n);
    return r;
}

/* Whether the type inferred for v is assignable to t (used by types whose instance? does that). */
static bool instance_by_infer(const ptype *t, const hv *v, int depth)
{
    ptype *it = pt_infer(v, depth);
    bool r = pt_assignable(t, it, NULL);
    pt_unref(it);
    return r;
}

static bool value_instance_of_string(const ptype *t, pstr s, guard *g)
{
    hv *v = hv_strn(s.p, s.n);
    bool r = pt_instance(t, v, 0);
    hv_decref(v);
    return r;
}

bool pt_instance(const ptype *t, const hv *v, int depth)
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
        return !v_is_undef(v) && (!t->t || pt_instance(t->t, v, depth + 1));
    case K_OPTIONAL:
        return v_is_undef(v) || (t->t && pt_instance(t->t, v, depth + 1));
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
            return range_contains(t->size, n_int((int64_t)pt_utf8_len(hv_str_ptr(v), hv_str_len(v))));
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
            if (!pt_instance(t->t, hv_array_get(v, i), depth + 1))
                return false;
        return !t->size || range_contains(t->size, n_int((int64_t)hv_array_len(v)));
    case K_HASH:
        if (vk != HV_HASH)
            return false;
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!pt_instance(t->t, hv_hash_key_at(v, i), depth + 1))
                return false;
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!pt_instance(t->t2, hv_hash_val_at(v, i), depth + 1))
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
            if (!pt_instance(t->v[i < t->n ? i : t->n - 1], hv_array_get(v, i), depth + 1))
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
                if (!pt_accepts_undef(st_key(t, i)))
                    return false;
            } else {
                matched++;
                if (!pt_instance(st_val(t, i), x, depth + 1))
                    return false;
            }
        }
        return matched == hv_hash_len(v);
    }
    case K_VARIANT:
        for (size_t i = 0; i < t->n; i++)
            if (pt_instance(t->v[i], v, depth + 1))
                return true;
        return false;
    case K_SENSITIVE:
        return vk == HV_SENSITIVE && pt_instance(t->t, hv_sensitive_inner(v), depth + 1);
    case K_ITERABLE:
        if (!t->t || pt_assignable(t->t, pt_D(K_ANY), NULL)) {
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
        return t->t && pt_instance(t->t, v, depth + 1);
    case K_INIT: /* Init without a type: RichData */
        return !t->t && pt_instance(pt_builtin_alias("RichData", 8), v, depth + 1);
    default:
        /* Regexp, Type, Callable, Iterator, TypeReference, SemVer, Timespan, Binary, URI, Object,
         * ...: no value of ours is an instance */
        return false;
    }
}

/* TypeCalculator#common_type, for the types inference produces. */
static ptype *common_type(ptype *t1, ptype *t2);

/* TypeCalculator#infer: the single common type of a value (arrays and hashes reduce their
 * elements to a common type). */
ptype *pt_infer(const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH)
        return pt_mk(K_ANY);
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        return pt_mk(K_UNDEF);
    case HV_BOOL:
        return pt_mk_bool(hv_bool_val(v));
    case HV_INT: case HV_BIGINT: case HV_FLOAT: {
        num a = pt_v_num(v), b = n_copy(a);
        return hv_is(v, HV_FLOAT) ? pt_mk_float(a, b) : pt_mk_int(a, b);
    }
    case HV_STRING:
        return pt_mk_string_val(hv_str_ptr(v), hv_str_len(v));
    case HV_SENSITIVE:
        return pt_mk_contained(K_SENSITIVE, pt_infer(hv_sensitive_inner(v), depth + 1));
    case HV_SYMBOL:
        if (sym_is(v, "default"))
            return pt_mk(K_DEFAULT);
        if (sym_is(v, "undef"))
            return pt_mk(K_UNDEF);
        return pt_mk_runtime("ruby", 4, true, "Symbol", 6, true);
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        if (!n)
            return pt_array_empty();
        ptype *c = NULL;
        for (size_t i = 0; i < n; i++)
            c = common_type(c, pt_infer(hv_array_get(v, i), depth + 1));
        return pt_mk_array(c, pt_mk_intv((int64_t)n, (int64_t)n));
    }
    case HV_HASH: {
        size_t n = hv_hash_len(v);
        if (!n)
            return pt_hash_empty();
        ptype *k = NULL, *e = NULL;
        for (size_t i = 0; i < n; i++)
            k = common_type(k, pt_infer(hv_hash_key_at(v, i), depth + 1));
        for (size_t i = 0; i < n; i++)
            e = common_type(e, pt_infer(hv_hash_val_at(v, i), depth + 1));
        return pt_mk_hash(k, e, pt_mk_intv((int64_t)n, (int64_t)n));
    }
    }
    return pt_mk(K_ANY);
}

static ptype *unwrap_single_variant(ptype *t)
{
    if (is_k(t, K_VARIANT) && t->n == 1) {
        ptype *r = pt_ref(t->v[0]);
        pt_unref(t);
        return r;
    }
    return t;
}

/* TypeCalculator#infer_set: arrays become Tuples of their elements' types, hashes with non-empty
 * String keys become Structs. */
ptype *pt_infer_set(const hv *v, int depth)
{
    if (depth > MAX_VALUE_DEPTH)
        return pt_mk(K_ANY);
    if (hv_is(v, HV_ARRAY)) {
        size_t n = hv_array_len(v);
        if (!n)
            return pt_array_empty();
        ptype **types = xcalloc(n, sizeof *types);
        for (size_t i = 0; i < n; i++)
            types[i] = pt_infer_set(hv_array_get(v, i), depth + 1);
        return pt_mk_tuple(types, n, NULL);
    }
    if (hv_is(v, HV_HASH)) {
        size_t n = hv_hash_len(v);
        if (!n)
            return pt_hash_empty();
        bool all_strings = true;
        for (size_t i = 0; i < n && all_strings; i++) {
            const hv *k = hv_hash_key_at(v, i);
            all_strings = hv_is(k, HV_STRING) && hv_str_len(k) > 0;
        }
        if (all_strings) {
            ptype **pairs = xcalloc(2 * n, sizeof *pairs);
            for (size_t i = 0; i < n; i++) {
                const hv *k = hv_hash_key_at(v, i);
                pairs[2 * i] = pt_mk_string_val(hv_str_ptr(k), hv_str_len(k));
                pairs[2 * i + 1] = pt_infer_set(hv_hash_val_at(v, i), depth + 1);
            }
            return pt_mk_struct(pairs, n);
        }
        tlist ks = {0}, vs = {0};
        for (size_t i = 0; i < n; i++) {
            tl_push(&ks, pt_infer_set(hv_hash_key_at(v, i), depth + 1));
            tl_push(&vs, pt_infer_set(hv_hash_val_at(v, i), depth + 1));
        }
        ptype *kt = unwrap_single_variant(pt_maybe_create(&ks));
        ptype *vt = unwrap_single_variant(pt_maybe_create(&vs));
        return pt_mk_hash(kt, vt, pt_mk_intv((int64_t)n, (int64_t)n));
    }
    return pt_infer(v, depth);
}

static bool common_by(tkind k, const ptype *t1, const ptype *t2)
{
    return pt_assignable(pt_D(k), t1, NULL) && pt_assignable(pt_D(k), t2, NULL);
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
        r = pt_ref(t2);
    } else if (is_k(t2, K_UNDEF)) {
        r = pt_ref(t1);
    } else if (is_k(t1, K_UNIT)) {
        r = pt_ref(t2);
    } else if (is_k(t2, K_UNIT)) {
        r = pt_ref(t1);
    } else if (pt_assignable(t1, t2, NULL)) {
        r = pt_ref(t1);
    } else if (pt_assignable(t2, t1, NULL)) {
        r = pt_ref(t2);
    } else if (is_k(t1, K_ARRAY) && is_k(t2, K_ARRAY)) {
        r = pt_mk_array(common_type(pt_ref(t1->t), pt_ref(t2->t)), NULL);
    } else if (is_k(t1, K_HASH) && is_k(t2, K_HASH)) {
        r = pt_mk_hash(common_type(pt_ref(t1->t), pt_ref(t2->t)), common_type(pt_ref(t1->t2), pt_ref(t2->t2)), NULL);
    } else if (is_k(t1, K_INTEGER) && is_k(t2, K_INTEGER)) {
        r = pt_mk_int(n_copy(pt_n_min(t1->from, t2->from)), n_copy(pt_n_max(t1->to, t2->to)));
    } else if (is_k(t1, K_FLOAT) && is_k(t2, K_FLOAT)) {
        r = pt_mk_float(n_copy(pt_n_min(t1->from, t2->from)), n_copy(pt_n_max(t1->to, t2->to)));
    } else if (is_k(t1, K_STRING) && (is_k(t2, K_STRING) || is_k(t2, K_ENUM))) {
        if (is_k(t2, K_ENUM)) {
            if (!t1->has_s) {
                r = pt_dflt(K_ENUM);
            } else {
                pstr *vals = xcalloc(t2->nvals + 1, sizeof *vals);
                memcpy(vals, t2->vals, t2->nvals * sizeof *vals);
                vals[t2->nvals] = t1->s;
                r = pt_mk_enum(vals, t2->nvals + 1, false);
                free(vals);
            }
        } else if (!t1->size || !t2->size) {
            if (!t1->has_s || !t2->has_s) {
                r = pt_dflt(K_STRING);
            } else {
                pstr vals[2] = {t1->s, t2->s};
                r = pt_mk_enum(vals, 2, false);
            }
        } else {
            r = pt_mk_string_size(common_type(pt_ref(t1->size), pt_ref(t2->size)));
        }
    } else if (is_k(t1, K_PATTERN) && is_k(t2, K_PATTERN)) {
        tlist l = {0};
        for (size_t i = 0; i < t1->n; i++)
            tl_push(&l, pt_ref(t1->v[i]));
        for (size_t i = 0; i < t2->n; i++)
            tl_push(&l, pt_ref(t2->v[i]));
        pt_tl_uniq(&l);
        r = pt_mk_pattern(l.v, l.n);
    } else if (is_k(t1, K_ENUM) && (is_k(t2, K_STRING) || is_k(t2, K_ENUM))) {
        if (is_k(t2, K_STRING) && !t2->has_s) {
            r = pt_dflt(K_ENUM);
        } else {
            size_t n2 = is_k(t2, K_ENUM) ? t2->nvals : 1;
            pstr *vals = xcalloc(t1->nvals + n2, sizeof *vals);
            memcpy(vals, t1->vals, t1->nvals * sizeof *vals);
            if (is_k(t2, K_ENUM))
                memcpy(vals + t1->nvals, t2->vals, n2 * sizeof *vals);
            else
                vals[t1->nvals] = t2->s;
            r = pt_mk_enum(vals, t1->nvals + n2, false);
            free(vals);
        }
    } else if (is_k(t1, K_VARIANT) && is_k(t2, K_VARIANT)) {
        tlist l = {0};
        for (size_t i = 0; i < t1->n; i++)
            tl_push(&l, pt_ref(t1->v[i]));
        for (size_t i = 0; i < t2->n; i++)
            tl_push(&l, pt_ref(t2->v[i]));
        pt_tl_uniq(&l);
        r = pt_maybe_create(&l);
    } else if (is_k(t1, K_REGEXP) && is_k(t2, K_REGEXP)) {
        r = pt_dflt(K_REGEXP);
    } else if (is_k(t1, K_CALLABLE) && is_k(t2, K_CALLABLE)) {
        r = pt_dflt(K_CALLABLE);
    } else if (common_by(K_NUMERIC, t1, t2)) {
        r = pt_dflt(K_NUMERIC);
    } else if (common_by(K_SCALARDATA, t1, t2)) {
        r = pt_dflt(K_SCALARDATA);
    } else if (common_by(K_SCALAR, t1, t2)) {
        r = pt_dflt(K_SCALAR);
    } else if (pt_assignable(pt_data_alias(), t1, NULL) && pt_assignable(pt_data_alias(), t2, NULL)) {
        r = pt_ref(pt_data_alias());
    } else if (is_k(t1, K_TYPE) && is_k(t2, K_TYPE)) {
        r = pt_mk_contained(K_TYPE, common_type(pt_ref(t1->t), pt_ref(t2->t)));
    } else if (pt_assignable(pt_builtin_alias("RichData", 8), t1, NULL) &&
               pt_assignable(pt_builtin_alias("RichData", 8), t2, NULL)) {
        r = pt_ref(pt_builtin_alias("RichData", 8));
    } else if (is_k(t1, K_RUNTIME) && is_k(t2, K_RUNTIME) && pt_eq(t1, t2)) {
        r = pt_ref(t1);
    } else {
        r = pt_mk(K_ANY);
    }
    pt_unref(t1);
    pt_unref(t2);
    return r;
}

bool ptype_match(const ptype *t, const hv *v) { return t && pt_instance(t, v, 0); }
