/* hocon_resolve.c - stage 3 of the HOCON reader (see hocon.c): the resolver, following the gem's
 * algorithm: substitutions looked up along the path only, delayed merges resolved layer by layer,
 * cycles detected by markers, and the environment as the last fallback. */
#include "formats/hocon_int.h"

#include "base/fsjournal.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

/* ------------------------------------------------------------------------------------------ */
/* resolver                                                                                    */
/* ------------------------------------------------------------------------------------------ */

void hc_src_set(rsrc *s, node *root, node *const *par, size_t npar, bool has)
{
    s->root = hc_nref(root);
    s->has = has;
    s->npar = has ? npar : 0;
    s->par = NULL;
    if (s->npar) {
        s->par = xmalloc(npar * sizeof *s->par);
        for (size_t i = 0; i < npar; i++)
            s->par[i] = hc_nref(par[i]);
    }
}

void hc_src_free(rsrc *s)
{
    for (size_t i = 0; i < s->npar; i++)
        hc_nfree(s->par[i]);
    free(s->par);
    hc_nfree(s->root);
    memset(s, 0, sizeof *s);
}

/* ResolveSource#push_parent */
static void src_push(const rsrc *s, node *parent, rsrc *out)
{
    if (!s->has) {
        if (parent == s->root)
            hc_src_set(out, s->root, &parent, 1, true);
        else
            hc_src_set(out, s->root, NULL, 0, false);
        return;
    }
    hc_src_set(out, s->root, s->par, s->npar, true);
    out->par = xrealloc(out->par, (out->npar + 1) * sizeof *out->par);
    out->par[out->npar++] = hc_nref(parent);
}

void hc_bug(rctx *R, const char *msg) { hc_fail(R->cx, NULL, 0, 0, "%s", msg); }

static node *empty_object(void) { return hc_nnew(N_OBJ, 0, 0, NULL); }

/* replace_child of a container: a copy with `child` (found by identity) replaced by repl, or
 * removed when repl is NULL. *out may be NULL (a list that became empty). */
static int replace_child(rctx *R, node *parent, node *child, node *repl, node **out)
{
    *out = NULL;
    size_t i = 0;
    while (i < parent->n && parent->items[i] != child)
        i++;
    if (parent->kind == N_OBJ) {
        if (i == parent->n) {
            hc_bug(R, "SimpleConfigObject.replaceChild did not find the child in its parent");
            return R_ERR;
        }
        node *o = hc_obj_new_like(parent);
        for (size_t j = 0; j < parent->n; j++) {
            if (j != i)
                hc_obj_append(o, hv_incref(parent->keys[j]), hc_nref(parent->items[j]));
            else if (repl)
                hc_obj_append(o, hv_incref(parent->keys[j]), hc_nref(repl));
        }
        hc_fix_status(o);
        *out = o;
        return R_OK;
    }
    if (parent->kind == N_MERGEOBJ) {
        if (i == parent->n) {
            hc_bug(R, "tried to replace a child which is not in the delayed merge");
            return R_ERR;
        }
        /* Quirk: with no replacement the gem's replace_child_in_list calls Array#delete(i),
         * which removes nothing, so the stack stays as it was */
        node *m = hc_shallow_copy(parent);
        if (repl) {
            hc_nfree(m->items[i]);
            m->items[i] = hc_nref(repl);
        }
        *out = m;
        return R_OK;
    }
    /* lists, delayed merges and concatenations call replace_child_in_list unqualified in the gem,
     * which raises NoMethodError (that a list being resolved turns into "unexpected exception") */
    hc_fail_ruby(R->cx, parent->org, parent->line, parent->col, "undefined method `replace_child_in_list' for %s",
                 parent->kind == N_LIST ? "SimpleConfigList" : parent->kind == N_MERGE ? "ConfigDelayedMerge"
                                                                                    : "ConfigConcatenation");
    return R_ERR;
}

/* ResolveSource.replace: rebuilds the chain of containers after replacing its innermost one;
 * *out is NULL when nothing is left */
static int chain_replace(rctx *R, node *const *chain, size_t n, node *old, node *repl, node ***out, size_t *outn)
{
    *out = NULL;
    *outn = 0;
    if (n == 0 || chain[n - 1] != old) {
        hc_bug(R, "Can only replace() the top node we're resolving");
        return R_ERR;
    }
    node *parent = n >= 2 ? chain[n - 2] : NULL, *np = NULL;
    if (!parent) {
        if (repl && is_container(repl)) {
            *out = xmalloc(sizeof **out);
            (*out)[0] = hc_nref(repl);
            *outn = 1;
        }
        return R_OK;
    }
    bool keep = repl && is_container(repl);
    int rc = replace_child(R, parent, old, keep ? repl : NULL, &np);
    if (rc == R_OK)
        rc = chain_replace(R, chain, n - 1, parent, np, out, outn);
    hc_nfree(np);
    if (rc != R_OK || !keep)
        return rc;
    *out = xrealloc(*out, (*outn + 1) * sizeof **out);
    (*out)[(*outn)++] = hc_nref(repl);
    return R_OK;
}

static node *root_must_be_obj(node *v) { return is_objectish(v) ? hc_nref(v) : empty_object(); }

/* ResolveSource#replace_current_parent */
static int src_replace_current(rctx *R, const rsrc *s, node *old, node *repl, rsrc *out)
{
    if (old == repl) {
        hc_src_set(out, s->root, s->par, s->npar, s->has);
        return R_OK;
    }
    if (s->has) {
        node **chain;
        size_t n;
        int rc = chain_replace(R, s->par, s->npar, old, repl, &chain, &n);
        if (rc != R_OK)
            return rc;
        if (chain) {
            hc_src_set(out, chain[0], chain, n, true);
            for (size_t i = 0; i < n; i++)
                hc_nfree(chain[i]);
            free(chain);
        } else {
            node *e = empty_object();
            hc_src_set(out, e, NULL, 0, false);
            hc_nfree(e);
        }
        return R_OK;
    }
    if (old != s->root) {
        hc_bug(R, "attempt to replace root with something else");
        return R_ERR;
    }
    node *r = root_must_be_obj(repl);
    hc_src_set(out, r, NULL, 0, false);
    hc_nfree(r);
    return R_OK;
}

/* ResolveSource#replace_within_current_parent (repl may be NULL: remove) */
static int src_replace_within(rctx *R, const rsrc *s, node *old, node *repl, rsrc *out)
{
    if (s->has) {
        node *parent = s->par[s->npar - 1], *np = NULL;
        int rc = replace_child(R, parent, old, repl, &np);
        if (rc == R_OK)
            rc = src_replace_current(R, s, parent, np && is_container(np) ? np : NULL, out);
        hc_nfree(np);
        return rc;
    }
    if (old == s->root && repl && is_container(repl)) {
        node *r = root_must_be_obj(repl);
        hc_src_set(out, r, NULL, 0, false);
        hc_nfree(r);
        return R_OK;
    }
    hc_bug(R, "replace in parent not possible");
    return R_ERR;
}

static int resolve_obj(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    if (!v->unresolved) {
        *out = hc_nref(v);
        return R_OK;
    }
    /* restricted: only the child on the path, and not the leaf itself */
    size_t from = 0, to = v->n;
    if (rp) {
        long i = rp->n > 1 ? hc_obj_find(v, hv_str_ptr(rp->k[0]), hv_str_len(rp->k[0])) : -1;
        if (i < 0) {
            *out = hc_nref(v);
            return R_OK;
        }
        from = (size_t)i;
        to = from + 1;
    }
    rsrc s2;
    src_push(src, v, &s2);
    node **nv = NULL; /* new children, made on the first change; NULL entries are removed */
    int rc = R_OK;
    for (size_t i = from; i < to; i++) {
        node *c = v->items[i], *r = NULL;
        if (rp) {
            rpath sub = {rp->k + 1, rp->n - 1};
            rc = hc_resolve(R, c, &s2, &sub, &r);
        } else {
            rc = hc_resolve(R, c, &s2, NULL, &r);
        }
        if (rc != R_OK)
            break;
        if (r == c) {
            hc_nfree(r);
            continue;
        }
        if (!nv) {
            nv = xmalloc(v->n * sizeof *nv);
            for (size_t j = 0; j < v->n; j++)
                nv[j] = hc_nref(v->items[j]);
        }
        hc_nfree(nv[i]);
        nv[i] = r;
    }
    hc_src_free(&s2);
    if (rc != R_OK || !nv) {
        if (nv) {
            for (size_t j = 0; j < v->n; j++)
                hc_nfree(nv[j]);
            free(nv);
        }
        *out = rc == R_OK ? hc_nref(v) : NULL;
        return rc;
    }
    node *o = hc_obj_new_like(v);
    for (size_t j = 0; j < v->n; j++)
        if (nv[j])
            hc_obj_append(o, hv_incref(v->keys[j]), nv[j]);
    free(nv);
    hc_fix_status(o);
    *out = o;
    return R_OK;
}

static int resolve_list(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    if (!v->unresolved || rp) { /* a list has no child paths to restrict to */
        *out = hc_nref(v);
        return R_OK;
    }
    rsrc s2;
    src_push(src, v, &s2);
    node *l = hc_nnew(N_LIST, v->line, v->col, v->org);
    bool changed = false;
    int rc = R_OK;
    for (size_t i = 0; i < v->n; i++) {
        node *r = NULL;
        rc = hc_resolve(R, v->items[i], &s2, NULL, &r);
        if (rc == R_ERR)
            hc_rewrap_unexpected(R->cx);
        if (rc != R_OK)
            break;
        if (r != v->items[i])
            changed = true;
        if (r)
            hc_items_push(l, r);
    }
    hc_src_free(&s2);
    if (rc != R_OK || !changed) {
        hc_nfree(l);
        *out = rc == R_OK ? hc_nref(v) : NULL;
        return rc;
    }
    *out = l;
    return R_OK;
}

/* AbstractConfigObject#attempt_peek_with_partial_resolve */
static int peek(rctx *R, node *obj, hv *key, node **out)
{
    *out = NULL;
    if (obj->kind == N_OBJ) {
        *out = hc_obj_get(obj, key);
        return R_OK;
    }
    for (size_t i = 0; i < obj->n; i++) { /* a delayed merge object: look through its layers */
        node *layer = obj->items[i];
        if (layer->kind == N_OBJ) {
            node *c = hc_obj_get(layer, key);
            if (c && hc_ignores_fallbacks(c)) {
                *out = c;
                return R_OK;
            }
        } else if (is_unmergeable(layer)) {
            hc_fail(R->cx, obj->org, obj->line, obj->col,
                    "Key '%s' is not available because a value has not been resolved and may turn out to contain or "
                    "hide it",
                    hv_str_ptr(key));
            return R_ERR;
        } else {
            /* the gem's typo (layer.resolved_status) raises NoMethodError for any other layer */
            hc_fail_ruby(R->cx, obj->org, obj->line, obj->col, "undefined method `resolved_status'");
            return R_ERR;
        }
    }
    hc_bug(R, "Delayed merge stack does not contain any unmergeable values");
    return R_ERR;
}

/* ResolveSource#find_in_object: resolves obj only along the path, then walks it. *found is a new
 * reference or NULL; *fs is the source to resolve it against (its root and containers). */
static int find_in_object(rctx *R, node *obj, const rpath *path, node **found, rsrc *fs)
{
    rsrc plain;
    node *partial = NULL;
    *found = NULL;
    memset(fs, 0, sizeof *fs);
    hc_src_set(&plain, obj, NULL, 0, false);
    int rc = hc_resolve(R, obj, &plain, path, &partial);
    hc_src_free(&plain);
    if (rc != R_OK)
        return rc;
    if (!partial || !is_objectish(partial)) {
        hc_nfree(partial);
        hc_bug(R, "resolved object to non-object");
        return R_ERR;
    }
    node **chain = xmalloc(path->n * sizeof *chain);
    size_t nchain = 0;
    node *cur = partial, *c = NULL;
    chain[nchain++] = partial;
    for (size_t i = 0; i < path->n; i++) {
        rc = peek(R, cur, path->k[i], &c);
        if (rc != R_OK || i + 1 == path->n)
            break;
        if (!c || !is_objectish(c)) {
            c = NULL;
            break;
        }
        chain[nchain++] = c;
        cur = c;
    }
    if (rc == R_OK) {
        *found = hc_nref(c);
        hc_src_set(fs, partial, chain, nchain, true);
    }
    free(chain);
    hc_nfree(partial);
    return rc;
}

/* the environment as the gem's ConfigImpl.env_variables_as_config_object sees it, for a one-key
 * path: NAME, or NAME.0, NAME.1, ... made into a list (which wins over NAME) */
static node *env_lookup(hv *name)
{
    const char *nm = hv_str_ptr(name);
    size_t nlen = hv_str_len(name);
    if (memchr(nm, 0, nlen) || !environ)
        return NULL;
    fsj_note_environ();
    const char *plain = NULL;
    long *idx = NULL;
    const char **vals = NULL;
    size_t n = 0;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t klen = (size_t)(eq - *e);
        if (klen == nlen && memcmp(*e, nm, nlen) == 0) {
            plain = eq + 1;
            continue;
        }
        /* NAME.<digits>, the digits read by Integer() (octal after a leading 0) */
        if (klen < nlen + 2 || memcmp(*e, nm, nlen) != 0 || (*e)[nlen] != '.')
            continue;
        const char *d = *e + nlen + 1;
        size_t dn = klen - nlen - 1;
        bool digits = dn > 0 && dn < 18, octal = dn > 1 && d[0] == '0';
        long v = 0;
        for (size_t i = 0; i < dn && digits; i++) {
            if (d[i] < '0' || d[i] > (octal ? '7' : '9'))
                digits = false;
            else
                v = v * (octal ? 8 : 10) + (d[i] - '0');
        }
        if (!digits)
            continue;
        size_t j = 0;
        while (j < n && idx[j] != v)
            j++;
        if (j == n) {
            idx = xrealloc(idx, (n + 1) * sizeof *idx);
            vals = xrealloc(vals, (n + 1) * sizeof *vals);
            n++;
        }
        idx[j] = v;
        vals[j] = eq + 1;
    }
    node *r = NULL;
    if (n) {
        for (size_t i = 1; i < n; i++) /* sorted by index */
            for (size_t j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
                long ti = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = ti;
                const char *tv = vals[j];
                vals[j] = vals[j - 1];
                vals[j - 1] = tv;
            }
        r = hc_nnew(N_LIST, 0, 0, NULL);
        for (size_t i = 0; i < n; i++)
            hc_items_push(r, hc_nstr(hv_str(vals[i]), true, 0, 0, NULL));
    } else if (plain) {
        r = hc_nstr(hv_str(plain), true, 0, 0, NULL);
    }
    free(idx);
    free(vals);
    return r;
}

/* ResolveSource#lookup_subst: the full path, then (for an included file) the path without its
 * include prefix, then the environment */
static int lookup_subst(rctx *R, node *ref, const rsrc *src, node **found, rsrc *fs)
{
    rpath full = {ref->keys, ref->n}, bare = {ref->keys + ref->prefix, ref->n - ref->prefix};
    int rc = find_in_object(R, src->root, &full, found, fs);
    if (rc != R_OK || *found)
        return rc;
    hc_src_free(fs);
    if (ref->prefix > 0) {
        rc = find_in_object(R, src->root, &bare, found, fs);
        if (rc != R_OK || *found)
            return rc;
        hc_src_free(fs);
    }
    if (bare.n == 1 && (*found = env_lookup(bare.k[0])) != NULL)
        hc_src_set(fs, *found, NULL, 0, false);
    return R_OK;
}

static char *trace_string(rctx *R)
{
    sbuf b = {0};
    for (size_t i = 0; i < R->trace.n; i++) {
        if (i)
            sb_adds(&b, ", ");
        hc_ref_describe(&b, R->trace.v[i]);
    }
    return sb_take(&b);
}

/* ConfigReference#resolve_substitutions */
static int resolve_ref(rctx *R, node *v, const rpath *rp, const rsrc *src, node **out)
{
    node *found = NULL, *r = NULL;
    rsrc fs;
    v->marked++; /* the cycle marker */
    int rc = lookup_subst(R, v, src, &found, &fs);
    if (rc == R_OK && found)
        rc = hc_resolve(R, found, &fs, rp, &r);
    if (rc == R_OK || found)
        hc_src_free(&fs);
    hc_nfree(found);
    v->marked--;
    if (rc == R_CYCLE) {
        if (v->optional) {
            rc = R_OK;
        } else if (hc_value_render_raises(R->cx, v)) {
            rc = R_ERR;
        } else {
            sbuf d = {0};
            hc_ref_describe(&d, v);
            hc_fail(R->cx, v->org, v->line, v->col,
                    "Could not resolve substitution to a value: %s was part of a cycle of substitutions involving %s",
                    sb_str(&d), R->cycle ? R->cycle : "");
            sb_free(&d);
            rc = R_ERR;
        }
        free(R->cycle);
        R->cycle = NULL;
    }
    if (rc == R_OK && !r && !v->optional && hc_value_render_raises(R->cx, v)) {
        rc = R_ERR;
    } else if (rc == R_OK && !r && !v->optional) {
        sbuf d = {0};
        hc_ref_describe(&d, v);
        hc_fail(R->cx, v->org, v->line, v->col, "Could not resolve substitution to a value: %s", sb_str(&d));
        sb_free(&d);
        rc = R_ERR;
    }
    *out = rc == R_OK ? r : (hc_nfree(r), NULL);
    return rc;
}

/* ConfigConcatenation#resolve_substitutions: every piece fully, then join them */
static int resolve_concat(rctx *R, node *v, const rsrc *src, node **out)
{
    nvec got = {0}, joined = {0};
    int rc = R_OK;
    for (size_t i = 0; i < v->n && rc == R_OK; i++) {
        node *r = NULL;
        rc = hc_resolve(R, v->items[i], src, NULL, &r);
        if (r)
            hc_nv_push(&got, r);
    }
    if (rc == R_OK && hc_consolidate(R->cx, got.v, got.n, &joined) < 0)
        rc = R_ERR;
    if (rc == R_OK && joined.n > 1) {
        hc_bug(R, "Bug in the library; resolved list was joined to too many values");
        rc = R_ERR;
    }
    if (rc == R_OK && joined.n == 1) {
        *out = joined.v[0];
        joined.n = 0;
    }
    hc_nv_free(&got);
    hc_nv_free(&joined);
    return rc;
}

/* ConfigDelayedMerge.make_replacement: the layers from `skip` on, merged (*out NULL if none) */
static int merge_rest(rctx *R, node *m, size_t skip, node **out)
{
    node *merged = NULL;
    for (size_t i = skip; i < m->n; i++) {
        if (!merged) {
            merged = hc_nref(m->items[i]);
        } else {
            node *x = hc_with_fallback(R->cx, merged, m->items[i]);
            hc_nfree(merged);
            if (!(merged = x))
                return R_ERR;
        }
    }
    *out = merged;
    return R_OK;
}

/* ConfigDelayedMerge.resolve_substitutions: each layer, newest first; a reference or a
 * concatenation is resolved against a root where this merge is replaced by the layers below it */
static int resolve_merge(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    node *merged = NULL;
    int rc = R_OK;
    for (size_t i = 0; i < v->n && rc == R_OK; i++) {
        node *e = v->items[i], *r = NULL;
        rsrc se;
        if (e->kind == N_REF || e->kind == N_CONCAT) {
            node *rest = NULL;
            rsrc tmp;
            if ((rc = merge_rest(R, v, i + 1, &rest)) != R_OK)
                break;
            rc = src_replace_within(R, src, v, rest, &tmp);
            hc_nfree(rest);
            if (rc != R_OK)
                break;
            hc_src_set(&se, tmp.root, NULL, 0, false); /* reset_parents */
            hc_src_free(&tmp);
        } else if (e->kind == N_MERGE || e->kind == N_MERGEOBJ) {
            hc_bug(R, "A delayed merge should not contain another one");
            rc = R_ERR;
            break;
        } else {
            src_push(src, v, &se);
        }
        rc = hc_resolve(R, e, &se, rp, &r);
        hc_src_free(&se);
        if (rc != R_OK || !r)
            continue;
        if (!merged) {
            merged = r;
        } else {
            node *x = hc_with_fallback(R->cx, merged, r);
            hc_nfree(merged);
            hc_nfree(r);
            if (!(merged = x))
                rc = R_ERR;
        }
    }
    if (rc == R_OK && v->kind == N_MERGEOBJ && (!merged || !is_objectish(merged))) {
        hc_bug(R, "Expecting a resolve result to be an object");
        rc = R_ERR;
    }
    if (rc != R_OK) {
        hc_nfree(merged);
        merged = NULL;
    }
    *out = merged;
    return rc;
}

/* ResolveContext#resolve: *out is a new reference, or NULL for an optional substitution that
 * was not found (the value is then left out) */
int hc_resolve(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    *out = NULL;
    if (R->depth >= MAX_RESOLVE_DEPTH) {
        hc_fail(R->cx, v->org, v->line, v->col, "substitutions nested more than %d levels deep", MAX_RESOLVE_DEPTH);
        return R_ERR;
    }
    if (!hc_work(R->cx, 1 + (!rp && (v->kind == N_OBJ || v->kind == N_LIST) && v->unresolved ? v->n : 0)))
        return R_ERR;
    bool isref = v->kind == N_REF;
    int rc = R_OK;
    R->depth++;
    if (isref) {
        hc_nv_push(&R->trace, v);
        R->nbad += hc_ref_badpath(v);
        if (v->marked)
            rc = R_CYCLE;
    }
    if (rc == R_CYCLE) {
        /* NotPossibleToResolve renders the references being resolved when it is made (which
         * raises for some paths); the message is needed only if the reference that catches it
         * (the one resolving below this one) is not optional */
        for (size_t i = 0; i < R->trace.n && R->nbad; i++)
            if (hc_value_render_raises(R->cx, R->trace.v[i]))
                rc = R_ERR;
        free(R->cycle);
        R->cycle = NULL;
        if (rc == R_CYCLE && R->trace.n >= 2 && !R->trace.v[R->trace.n - 2]->optional)
            R->cycle = trace_string(R);
    } else {
        switch (v->kind) {
        case N_OBJ: rc = resolve_obj(R, v, src, rp, out); break;
        case N_LIST: rc = resolve_list(R, v, src, rp, out); break;
        case N_REF: rc = resolve_ref(R, v, rp, src, out); break;
        case N_CONCAT: rc = resolve_concat(R, v, src, out); break;
        case N_MERGE:
        case N_MERGEOBJ: rc = resolve_merge(R, v, src, rp, out); break;
        default: *out = hc_nref(v);
        }
    }
    if (rc == R_OK && *out && (*out)->unresolved && !rp) {
        hc_bug(R, "resolve_substitutions did not give us a resolved object");
        hc_nfree(*out);
        *out = NULL;
        rc = R_ERR;
    }
    if (isref) {
        R->trace.n--;
        R->nbad -= hc_ref_badpath(v);
    }
    R->depth--;
    return rc;
}
