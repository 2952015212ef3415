/* describe.c - Puppet's TypeMismatchDescriber: why a value does not match a type, worded as
 * Puppet words it ("expects an Integer value, got String"); ptype_mismatch and
 * ptype_name_of_value. */
#include "types/types_int.h"

#include <ctype.h>

/* ======================================================================================
 * The mismatch describer (TypeMismatchDescriber)
 * ====================================================================================== */

tpath pt_path_plus(const tpath *p, pekind k, const char *key, size_t keylen, size_t idx)
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
void pt_path_free(tpath *p)
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

mismatch *pt_m_new(mkind k, const tpath *p, const ptype *e, const ptype *a)
{
    mismatch *m = xcalloc(1, sizeof *m);
    m->k = k;
    m->p = path_copy(p);
    m->e = e ? pt_normalize(e) : NULL;
    m->a = a ? pt_normalize(a) : NULL;
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
    pt_path_free(&m->p);
    pt_unref(m->e);
    pt_unref(m->a);
    free(m->key);
    free(m);
}
void pt_ml_push(mlist *l, mismatch *m)
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
        pt_ml_push(l, o->v[i]);
    free(o->v);
    *o = (mlist){0};
}
void pt_ml_free(mlist *l)
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
mismatch *pt_m_chop(mismatch *m, size_t index)
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
        ptype *r = pt_mk_int(n_copy(pt_n_lt(f1, f2) ? f1 : f2), n_copy(pt_n_lt(t2, t1) ? t1 : t2));
        mismatch *m = pt_m_new(prev->k, &prev->p, r, prev->a);
        pt_unref(r);
        return m;
    }
    tlist l = {0};
    tl_push(&l, pt_ref(prev->e));
    tl_push(&l, pt_ref(curr->e));
    pt_tl_uniq(&l);
    ptype *e = pt_maybe_create(&l);
    mismatch *m = pt_m_new(prev->k, &prev->p, e, prev->a);
    pt_unref(e);
    return m;
}

/* merge_descriptions: when every variant failed the same way at the same place, one merged
 * mismatch replaces them. Steals the lists. */
mlist pt_merge_descriptions(size_t varying, mkind size_class, mlist *variants, size_t nvariants)
{
    mlist all = {0};
    for (size_t i = 0; i < nvariants; i++)
        ml_concat(&all, &variants[i]);
    mkind classes[2] = {size_class, M_TYPE};
    for (int c = 0; c < 2; c++) {
        mlist sel = {0};
        for (size_t i = 0; i < all.n; i++)
            if (m_is(all.v[i], classes[c]))
                pt_ml_push(&sel, all.v[i]);
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
                pt_ml_push(&all, generic);
                break;
            }
            m_free(generic);
        }
        free(sel.v);
    }
    /* uniq: Mismatch#== never holds between two objects (it compares a boolean with the
     * other mismatch), so nothing is removed */
    if (all.n == 1)
        pt_m_chop(all.v[0], varying);
    return all;
}

static mlist internal_describe(const ptype *e, const ptype *original, const ptype *actual, const tpath *p);

static mlist one(mismatch *m)
{
    mlist l = {0};
    pt_ml_push(&l, m);
    return l;
}

static mlist describe_variant(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    size_t extra = is_k(original, K_OPTIONAL) ? 1 : 0, nt = e->n + extra;
    mlist *vd = xcalloc(nt ? nt : 1, sizeof *vd);
    for (size_t i = 0; i < nt; i++) {
        const ptype *vt = extra && i == 0 ? pt_D(K_UNDEF) : e->v[i - extra];
        tpath vp = pt_path_plus(p, PE_VARIANT, NULL, 0, i);
        vd[i] = pt_describe(vt, actual, &vp);
        pt_path_free(&vp);
        if (vd[i].n == 0) {
            for (size_t j = 0; j < i; j++)
                pt_ml_free(&vd[j]);
            free(vd);
            return (mlist){0};
        }
    }
    mlist d = pt_merge_descriptions(p->n, M_SIZE, vd, nt);
    free(vd);
    if (is_k(original, K_ALIAS) && d.n == 1) {
        /* all variants of an alias failed: reported on the alias */
        pt_ml_free(&d);
        return one(pt_m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static mlist describe_array(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    mlist d = {0};
    const ptype *elem = e->t;
    if (is_k(actual, K_TUPLE)) {
        ptype *es = e->size ? pt_ref(e->size) : pt_default_size();
        ptype *as = actual->size ? pt_ref(actual->size) : pt_mk_intv((int64_t)actual->n, (int64_t)actual->n);
        if (pt_assignable(es, as, NULL)) {
            for (size_t i = 0; i < actual->n; i++) {
                if (pt_assignable(elem, actual->v[i], NULL))
                    continue;
                tpath ip = pt_path_plus(p, PE_ARRAY, NULL, 0, i);
                mlist x = pt_describe(elem, actual->v[i], &ip);
                ml_concat(&d, &x);
                pt_path_free(&ip);
            }
        } else {
            pt_ml_push(&d, pt_m_new(M_SIZE, p, es, as));
        }
        pt_unref(es);
        pt_unref(as);
    } else if (is_k(actual, K_ARRAY)) {
        ptype *as = actual->size ? pt_ref(actual->size) : pt_default_size();
        if (!e->size || pt_assignable(e->size, as, NULL)) {
            ptype *a2 = pt_mk_array(pt_ref(actual->t), NULL);
            pt_ml_push(&d, pt_m_new(M_TYPE, p, original, a2));
            pt_unref(a2);
        } else {
            pt_ml_push(&d, pt_m_new(M_SIZE, p, e->size, as));
        }
        pt_unref(as);
    } else {
        pt_ml_push(&d, pt_m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static int64_t struct_required(const ptype *s)
{
    int64_t n = 0;
    for (size_t i = 0; i < st_count(s); i++)
        if (!pt_accepts_undef(st_key(s, i)))
            n++;
    return n;
}

static mlist describe_hash(const ptype *e, const ptype *original, const ptype *actual, const tpath *p)
{
    mlist d = {0};
    if (is_k(actual, K_STRUCT)) {
        ptype *es = e->size ? pt_ref(e->size) : pt_default_size();
        ptype *as = pt_mk_intv(struct_required(actual), (int64_t)st_count(actual));
        if (pt_assignable(es, as, NULL)) {
            for (size_t i = 0; i < st_count(actual); i++) {
                pstr name = st_name(actual, i);
                if (!pt_assignable(e->t, st_key(actual, i), NULL)) {
                    tpath kp = pt_path_plus(p, PE_ENTRY_KEY, name.p, name.n, 0);
                    mlist x = pt_describe(e->t, st_key(actual, i), &kp);
                    ml_concat(&d, &x);
                    pt_path_free(&kp);
                }
                if (!pt_assignable(e->t2, st_val(actual, i), NULL)) {
                    tpath vp = pt_path_plus(p, PE_ENTRY_VALUE, name.p, name.n, 0);
                    mlist x = pt_describe(e->t2, st_val(actual, i), &vp);
                    ml_concat(&d, &x);
                    pt_path_free(&vp);
                }
            }
        } else {
            pt_ml_push(&d, pt_m_new(M_SIZE, p, es, as));
        }
        pt_unref(es);
        pt_unref(as);
    } else if (is_k(actual, K_HASH)) {
        ptype *as = actual->size ? pt_ref(actual->size) : pt_default_size();
        if (!e->size || pt_assignable(e->size, as, NULL)) {
            ptype *a2 = pt_mk_hash(pt_ref(actual->t), pt_ref(actual->t2), NULL);
            pt_ml_push(&d, pt_m_new(M_TYPE, p, original, a2));
            pt_unref(a2);
        } else {
            pt_ml_push(&d, pt_m_new(M_SIZE, p, e->size, as));
        }
        pt_unref(as);
    } else {
        pt_ml_push(&d, pt_m_new(M_TYPE, p, original, actual));
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
                if (!pt_accepts_undef(st_key(e, i)))
                    pt_ml_push(&d, m_key(M_MISSING_KEY, p, key.p, key.n));
                continue;
            }
            used[j] = true;
            if (!pt_assignable(st_key(e, i), st_key(actual, j), NULL)) {
                tpath kp = pt_path_plus(p, PE_ENTRY_KEY, key.p, key.n, 0);
                mlist x = pt_describe(st_key(e, i), st_key(actual, j), &kp);
                ml_concat(&d, &x);
                pt_path_free(&kp);
            }
            if (!pt_assignable(st_val(e, i), st_val(actual, j), NULL)) {
                tpath vp = pt_path_plus(p, PE_ENTRY_VALUE, key.p, key.n, 0);
                mlist x = pt_describe(st_val(e, i), st_val(actual, j), &vp);
                ml_concat(&d, &x);
                pt_path_free(&vp);
            }
        }
        for (size_t j = 0; j < na; j++)
            if (!used[j]) {
                pstr k = st_name(actual, j);
                pt_ml_push(&d, m_key(M_EXTRA_KEY, p, k.p, k.n));
            }
        free(used);
    } else if (is_k(actual, K_HASH)) {
        ptype *as = actual->size ? pt_ref(actual->size) : pt_default_size();
        ptype *es = pt_mk_intv(struct_required(e), (int64_t)st_count(e));
        if (pt_assignable(es, as, NULL)) {
            ptype *a2 = pt_mk_hash(pt_ref(actual->t), pt_ref(actual->t2), NULL);
            pt_ml_push(&d, pt_m_new(M_TYPE, p, original, a2));
            pt_unref(a2);
        } else {
            pt_ml_push(&d, pt_m_new(M_SIZE, p, es, as));
        }
        pt_unref(as);
        pt_unref(es);
    } else {
        pt_ml_push(&d, pt_m_new(M_TYPE, p, original, actual));
    }
    return d;
}

static mlist describe_tuple(const ptype *e, const ptype *original, const ptype *actual, const tpath *p,
                            mkind size_class)
{
    mlist d = {0};
    if (pt_eq(e, actual) || (e->n == 0 && is_k(actual, K_ARRAY)))
        return d;
    ptype *es = pt_tuple_size_type(e);
    if (is_k(actual, K_TUPLE)) {
        ptype *as = pt_tuple_size_type(actual);
        if (pt_assignable(es, as, NULL)) {
            if (e->n) {
                for (size_t i = 0; i < actual->n; i++) {
                    size_t adx = i < e->n ? i : e->n - 1;
                    tpath ip = pt_path_plus(p, PE_ARRAY, NULL, 0, adx);
                    mlist x = pt_describe(e->v[adx], actual->v[i], &ip);
                    ml_concat(&d, &x);
                    pt_path_free(&ip);
                }
            }
        } else {
            pt_ml_push(&d, pt_m_new(size_class, p, es, as));
        }
        pt_unref(as);
    } else if (is_k(actual, K_ARRAY)) {
        ptype *as = actual->size ? pt_ref(actual->size) : pt_default_size();
        if (pt_assignable(es, as, NULL)) {
            for (size_t i = 0; i < e->n; i++) {
                tpath ip = pt_path_plus(p, PE_ARRAY, NULL, 0, i);
                mlist x = pt_describe(e->v[i], actual->t, &ip);
                ml_concat(&d, &x);
                pt_path_free(&ip);
            }
        } else {
            pt_ml_push(&d, pt_m_new(size_class, p, es, as));
        }
        pt_unref(as);
    } else {
        pt_ml_push(&d, pt_m_new(M_TYPE, p, original, actual));
    }
    pt_unref(es);
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
        return one(pt_m_new(M_PATTERN, p, original, actual));
    case K_ALIAS: {
        if (!e->t)
            break;
        ptype *r = pt_normalize(e->t);
        mlist d = internal_describe(r, e, actual, p);
        pt_unref(r);
        return d;
    }
    default:
        break;
    }
    if (pt_assignable(e, actual, NULL))
        return (mlist){0};
    return one(pt_m_new(M_TYPE, p, original, actual));
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

mlist pt_describe(const ptype *expected, const ptype *actual, const tpath *p)
{
    const ptype *ref = find_typeref(expected, 0);
    if (ref)
        return one(m_key(M_UNRESOLVED, p, ref->s.p, ref->s.n));
    ptype *n = pt_normalize(expected);
    mlist d = internal_describe(n, expected, actual, p);
    pt_unref(n);
    return d;
}

/* ---- messages ---- */

/* short_name: Optional, NotUndef, Sensitive, Type (and the other contained types) keep their
 * contained type's name. */
static void short_name(sbuf *b, const ptype *t)
{
    if (pt_is_contained(t) && t->t && t->t->k != K_ANY)
        sb_addf(b, "%s[%s]", pt_t_name(t), pt_t_name(t->t));
    else
        sb_adds(b, pt_t_name(t));
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
    return (e->k == K_STRUCT && pt_is_a(a, K_HASH)) || (e->k == K_TUPLE && pt_is_a(a, K_ARRAY));
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
        if (pt_assignable(pt_D(e->k), a, NULL))
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
        r = pt_to_xs(a);
    } else {
        ptype *g = pt_generalize(a);
        bool any = false;
        for (size_t i = 0; i < n && !any; i++)
            any = pt_assignable(res[i], g, NULL);
        pt_unref(g);
        r = any ? pt_to_xs(a) : xstrdup(pt_simple_names[a->k]);
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
            names[nn++] = pt_to_xs(es[i]);
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
    if (pt_n_eq(min, max)) {
        if (pt_n_eq(min, n_int(0)))
            sb_adds(b, zero);
        else
            pt_n_to_s(b, min);
    } else if (pt_n_eq(min, n_int(0))) {
        if (n_is_posinf(max))
            sb_adds(b, "unlimited");
        else {
            sb_adds(b, "at most ");
            pt_n_to_s(b, max);
        }
    } else if (n_is_posinf(max)) {
        sb_adds(b, "at least ");
        pt_n_to_s(b, min);
    } else {
        sb_adds(b, "between ");
        pt_n_to_s(b, min);
        sb_adds(b, " and ");
        pt_n_to_s(b, max);
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
        char *es = pt_to_xs(e);
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
        bool one_ok = (pt_n_eq(min, n_int(1)) && (pt_n_eq(max, n_int(1)) || n_is_posinf(max))) ||
                      (pt_n_eq(min, n_int(0)) && pt_n_eq(max, n_int(1)));
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
void pt_m_format(sbuf *b, const mismatch *m)
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
    tpath root = pt_path_plus(&p, PE_SUBJECT, name, strlen(name), 0);
    mlist errs = pt_describe(expected, actual, &root);
    pt_path_free(&root);
    sbuf b = {0};
    char *r;
    if (errs.n == 1) {
        pt_m_format(&b, errs.v[0]);
        r = rstrip_take(&b);
    } else {
        for (size_t i = 0; i < errs.n; i++) {
            if (i)
                sb_adds(&b, "\n ");
            pt_m_format(&b, errs.v[i]);
        }
        r = sb_take(&b);
    }
    pt_ml_free(&errs);
    return r;
}

/* TypeAsserter.assert_instance_of's message for a value that is not an instance of t. */
char *pt_assert_message(const char *subject, const ptype *t, const hv *v)
{
    ptype *a = pt_infer_set(v, 0);
    char *name = xasprintf("%s has wrong type,", subject);
    char *r = describe_mismatch(name, t, a);
    free(name);
    pt_unref(a);
    return r;
}

char *ptype_mismatch(const ptype *t, const hv *v, const char *subject)
{
    return pt_assert_message(subject ? subject : "Value", t, v);
}

char *ptype_name_of_value(const hv *v)
{
    ptype *t = pt_infer_set(v, 0);
    sbuf b = {0};
    short_name(&b, t);
    pt_unref(t);
    return sb_take(&b);
}

/* ---- for hiera check's class parameters ---- */

char *ptype_unresolved(const ptype *t)
{
    const ptype *r = find_typeref(t, 0);
    return r ? xstrndup(r->s.p, r->s.n) : NULL;
}

/* TypeMismatchDescriber#describe_struct_signature's errors for one parameter. */
char *ptype_describe_param(const ptype *t, const hv *v, const char *param)
{
    if (pt_instance(t, v, 0))
        return NULL;
    ptype *a = pt_infer_set(v, 0);
    tpath p = {0};
    tpath root = pt_path_plus(&p, PE_PARAM, param, strlen(param), 0);
    mlist errs = pt_describe(t, a, &root);
    pt_path_free(&root);
    sbuf b = {0};
    for (size_t i = 0; i < errs.n; i++) {
        if (i)
            sb_addc(&b, '\n');
        sbuf one_msg = {0};
        pt_m_format(&one_msg, errs.v[i]);
        char *line = rstrip_take(&one_msg);
        sb_adds(&b, line);
        free(line);
    }
    pt_ml_free(&errs);
    pt_unref(a);
    if (!b.len) /* instance? said no but nothing was described: say it as the assertion does */
        sb_adds(&b, "has a value of the wrong type");
    return sb_take(&b);
}

char *ptype_describe_missing(const char *param) { return xasprintf("expects a value for parameter '%s'", param); }

/* Whether some string is an instance of t (what an interpolation gives may then match). */
static bool may_match_string(const ptype *t, int depth)
{
    if (!t || depth > MAX_ALIAS_DEPTH)
        return false;
    switch (t->k) {
    case K_ANY: case K_SCALAR: case K_SCALARDATA: case K_PATTERN: case K_ENUM: case K_STRING:
        return true;
    case K_NOTUNDEF: case K_OPTIONAL:
        return !t->t || may_match_string(t->t, depth + 1);
    case K_ALIAS:
        return may_match_string(t->t, depth + 1);
    case K_VARIANT:
        for (size_t i = 0; i < t->n; i++)
            if (may_match_string(t->v[i], depth + 1))
                return true;
        return false;
    default:
        return false;
    }
}

bool ptype_may_match_string(const ptype *t) { return may_match_string(t, 0); }
