/* hocon_merge.c - the value operations the HOCON parser and resolver share (see hocon.c):
 * merging (with_fallback, delayed merges) and value concatenation, as the gem does them. */
#include "formats/hocon_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* merging (with_fallback), as the gem's AbstractConfigValue and its subclasses do it           */
/* ------------------------------------------------------------------------------------------ */

bool hc_ignores_fallbacks(const node *v)
{
    switch (v->kind) {
    case N_OBJ: return v->ignores;
    case N_LIST: return !v->unresolved;
    case N_REF:
    case N_CONCAT: return false;
    case N_MERGE:
    case N_MERGEOBJ: return hc_ignores_fallbacks(v->items[v->n - 1]);
    default: return true; /* resolved primitives */
    }
}

/* the values a delayed merge would stack for v (ConfigDelayedMerge#unmerged_values) */
static void push_unmerged(node *m, node *v)
{
    if (v->kind == N_MERGE || v->kind == N_MERGEOBJ)
        for (size_t i = 0; i < v->n; i++)
            hc_items_push(m, hc_nref(v->items[i]));
    else
        hc_items_push(m, hc_nref(v));
}

/* Quirk of the gem (confirmed with `puppet lookup`): AbstractConfigObject#construct_delayed_merge
 * names Hocon::Impl::ConfigDelayedMergeObject without requiring its file, which is only loaded by
 * the first ConfigDelayedMerge (AbstractConfigValue#construct_delayed_merge requires it). Until a
 * process has made one, making a delayed merge object raises NameError, which Puppet reports as
 * "Error: Could not run: uninitialized constant ...". This flag is that process-wide state; it
 * only ever goes from false to true, atomically (parses on other threads may set it). */
atomic_bool hc_delayed_merge_loaded;

/* construct_delayed_merge: an object (or delayed merge object) makes a ConfigDelayedMergeObject;
 * NULL for the quirk above (see with_fallback). A parse works on its own copy of the flag
 * (hctx.merge_loaded), kept only if the gem would have got as far (see parse_document). */
static node *delay_merge(hctx *cx, node *self, node *other, bool flatten_other)
{
    if (!is_objectish(self))
        cx->merge_loaded = true;
    else if (!cx->merge_loaded)
        return NULL;
    node *m = hc_nnew(is_objectish(self) ? N_MERGEOBJ : N_MERGE, self->line, self->col, self->org);
    push_unmerged(m, self);
    if (flatten_other)
        push_unmerged(m, other);
    else
        hc_items_push(m, hc_nref(other));
    m->unresolved = true;
    return m;
}

/* Ruby's `first == kept` as SimpleConfigObject#merged_with_object evaluates it (to tell whether
 * the merge changed anything) for a value and what merging changed it into: 1 equal, 0 not, -1
 * when Ruby raises. Quirk: SimpleConfigObject#== compares key sets, and asking a delayed merge
 * object for its keys raises ConfigNotResolvedError; so an object field merged over a
 * substitution (e.g. `a.x = ${y}` then `a { x { p = 1 } }`) fails to parse. Other pairs that
 * arise here are identical, or of different classes (not equal, no raise). */
static int rb_eq(const node *a, const node *b)
{
    if (a == b)
        return 1;
    if (a->kind != N_OBJ)
        return 0;
    if (b->kind == N_MERGEOBJ)
        return -1;
    if (b->kind != N_OBJ || a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (hc_obj_find((node *)b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i])) < 0)
            return 0;
    for (size_t i = 0; i < a->n; i++) {
        int r = rb_eq(a->items[i], hc_obj_get((node *)b, a->keys[i]));
        if (r <= 0)
            return r;
    }
    return 1;
}

/* SimpleConfigObject#merged_with_object: own keys first, then the fallback's other keys.
 * Quirk: when every merged field is == (Ruby value equality) to the original, the gem keeps its
 * own fields, not the merged ones (which may differ in ignoring fallbacks). */
static node *merge_objects(hctx *cx, node *a, node *b)
{
    if (!hc_work(cx, 1 + (a->n + b->n) / 16))
        return NULL;
    node *o = hc_nnew(N_OBJ, a->line, a->col, a->org);
    bool changed = false;
    for (size_t i = 0; i < a->n; i++) {
        node *second = hc_obj_get(b, a->keys[i]);
        node *kept = second ? hc_with_fallback(cx, a->items[i], second) : hc_nref(a->items[i]);
        int eq = kept ? rb_eq(a->items[i], kept) : 1;
        if (!kept || eq < 0) {
            if (kept)
                hc_fail(cx, NULL, 0, 0,
                        "need to Config#resolve() before using this object, see the API docs for Config#resolve()");
            hc_nfree(kept);
            hc_nfree(o);
            return NULL;
        }
        if (eq == 0)
            changed = true;
        hc_obj_append(o, hv_incref(a->keys[i]), kept);
    }
    for (size_t i = 0; i < b->n; i++) {
        if (hc_obj_find(a, hv_str_ptr(b->keys[i]), hv_str_len(b->keys[i])) >= 0)
            continue;
        hc_obj_append(o, hv_incref(b->keys[i]), hc_nref(b->items[i]));
        changed = true;
    }
    o->ignores = b->ignores;
    hc_fix_status(o);
    if (!changed) {
        bool ignores = o->ignores, unresolved = o->unresolved;
        hc_nfree(o);
        if (ignores == a->ignores && unresolved == a->unresolved)
            return hc_nref(a);
        o = hc_shallow_copy(a); /* new_copy_with_status */
        o->ignores = ignores;
        o->unresolved = unresolved;
    }
    return o;
}

/* moves b's entry p first, its value replaced by val (stolen), keeping the index right */
static void obj_move_first(node *b, size_t p, node *val)
{
    hv *key = b->keys[p];
    size_t *slots = NULL;
    if (b->index && p > 0) { /* the index slots of the entries that move, found before moving them */
        size_t mask = b->icap - 1;
        slots = xmalloc((p + 1) * sizeof *slots);
        for (size_t j = 0; j <= p; j++) {
            size_t i = (size_t)hc_key_hash(hv_str_ptr(b->keys[j]), hv_str_len(b->keys[j])) & mask;
            while (b->index[i] != b->front + j + 1)
                i = (i + 1) & mask;
            slots[j] = i;
        }
    }
    hc_nfree(b->items[p]);
    memmove(b->items + 1, b->items, p * sizeof *b->items);
    memmove(b->keys + 1, b->keys, p * sizeof *b->keys);
    b->items[0] = val;
    b->keys[0] = key;
    if (slots) {
        for (size_t j = 0; j < p; j++)
            b->index[slots[j]] = (uint32_t)(b->front + j + 2);
        b->index[slots[p]] = (uint32_t)(b->front + 1);
        free(slots);
    }
    if (val->unresolved)
        b->unresolved = true;
}

/* merge_objects(a, b) for a fallback b that the caller holds the only reference to and drops
 * afterwards (a field being set again while parsing): b itself becomes the result, a's fields
 * moved first, in time proportional to a, not b. Copying b would make many dotted keys under one
 * parent (`s.k1 = 1`, `s.k2 = 2`, ... each merges a one-key object over the growing s) quadratic.
 * Same result as merge_objects. */
static node *merge_objects_into(hctx *cx, node *a, node *b)
{
    if (!hc_work(cx, 1 + a->n / 16))
        return NULL;
    /* the merged fields, in a's order (as the gem computes them, errors included) */
    node **kept = xcalloc(a->n, sizeof *kept);
    bool replaced_unresolved = false, kept_unresolved = false, changed = false;
    size_t common = 0;
    for (size_t i = 0; i < a->n; i++) {
        long p = hc_obj_find(b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i]));
        node *first = a->items[i], *second = p >= 0 ? b->items[p] : NULL, *k;
        if (!second) {
            k = hc_nref(first);
        } else {
            common++;
            replaced_unresolved |= second->unresolved;
            k = second->refs == 1 && first->kind == N_OBJ && second->kind == N_OBJ && !first->ignores
                    ? merge_objects_into(cx, first, second) /* second is b's alone: merged in place */
                    : hc_with_fallback(cx, first, second);
            int eq = k ? rb_eq(first, k) : 1;
            if (!k || eq < 0) {
                if (k)
                    hc_fail(cx, NULL, 0, 0,
                            "need to Config#resolve() before using this object, see the API docs for "
                            "Config#resolve()");
                hc_nfree(k);
                for (size_t j = 0; j < i; j++)
                    hc_nfree(kept[j]);
                free(kept);
                return NULL;
            }
            changed |= eq == 0;
        }
        kept_unresolved |= k->unresolved;
        kept[i] = k;
    }
    if (!changed && common == b->n) { /* as merge_objects: the gem keeps a's own fields */
        for (size_t i = 0; i < a->n; i++)
            hc_nfree(kept[i]);
        free(kept);
        if (b->ignores == a->ignores && kept_unresolved == a->unresolved)
            return hc_nref(a);
        node *o = hc_shallow_copy(a);
        o->ignores = b->ignores;
        o->unresolved = kept_unresolved;
        return o;
    }
    /* a's keys first, in a's order, then b's other keys */
    for (size_t i = a->n; i-- > 0;) {
        long p = hc_obj_find(b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i]));
        if (p < 0)
            hc_obj_prepend(b, hv_incref(a->keys[i]), kept[i]);
        else
            obj_move_first(b, (size_t)p, kept[i]);
    }
    free(kept);
    if (!kept_unresolved && replaced_unresolved)
        hc_fix_status(b);
    return hc_nref(b);
}

/* with_fallback for a fallback the caller owns alone and drops afterwards (see above) */
node *hc_with_fallback_into(hctx *cx, node *self, node *other)
{
    if (other->refs == 1 && self->kind == N_OBJ && other->kind == N_OBJ && !self->ignores)
        return merge_objects_into(cx, self, other);
    return hc_with_fallback(cx, self, other);
}

/* AbstractConfigValue#with_fallback and the merged_with_* methods of each class; NULL after an
 * error (the quirks of delay_merge and rb_eq) */
node *hc_with_fallback(hctx *cx, node *self, node *other)
{
    node *r;
    if (hc_ignores_fallbacks(self))
        return hc_nref(self);
    if (!hc_work(cx, 1 + (self->kind == N_MERGE || self->kind == N_MERGEOBJ ? self->n : 0) +
                         (other->kind == N_MERGE || other->kind == N_MERGEOBJ ? other->n : 0)))
        return NULL;
    if (is_unmergeable(other))
        r = delay_merge(cx, self, other, true);
    else if (other->kind == N_OBJ && self->kind == N_OBJ)
        return merge_objects(cx, self, other);
    else if (other->kind != N_OBJ && self->kind == N_OBJ && !self->unresolved) {
        /* a resolved object over a primitive or a list: the object wins, and ignores what is below */
        r = hc_shallow_copy(self);
        r->ignores = true;
        return r;
    } else
        r = delay_merge(cx, self, other, false);
    if (!r)
        hc_fail_ruby(cx, self->org, self->line, self->col,
                     "uninitialized constant Hocon::Impl::ConfigDelayedMergeObject");
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* value concatenation (ConfigConcatenation.concatenate)                                       */
/* ------------------------------------------------------------------------------------------ */

/* Quirk: the gem writes strings into its messages with ConfigImplUtil.render_json_string, which
 * formats a control character other than \b \f \n \r \t with "\\u%04x" % char - an
 * ArgumentError (invalid value for Integer()) - and whose regexp test raises ArgumentError on
 * invalid UTF-8. True (with that Ruby error recorded) when writing s would raise. */
static bool text_renders_badly(const char *s, size_t n, long *bad)
{
    for (size_t i = 0; i < n;) {
        long cp;
        size_t l = hc_utf8_char((const unsigned char *)s + i, n - i, &cp);
        if (cp < 0 || (hc_is_cntrl_cp(cp) && cp != '\b' && cp != '\f' && cp != '\n' && cp != '\r' && cp != '\t')) {
            *bad = cp;
            return true;
        }
        i += l;
    }
    return false;
}

static bool text_render_raises(hctx *cx, const node *at, const char *s, size_t n)
{
    long cp;
    if (!text_renders_badly(s, n, &cp))
        return false;
    if (cp < 0)
        hc_fail_ruby(cx, at->org, at->line, at->col, "invalid byte sequence in UTF-8");
    else
        hc_fail_ruby(cx, at->org, at->line, at->col, "invalid value for Integer(): \"\\u%04lx\"", cp);
    return true;
}

/* whether a reference's path cannot be written in messages (computed once) */
bool hc_ref_badpath(node *r)
{
    if (r->badpath < 0) {
        long cp;
        r->badpath = 0;
        for (size_t i = 0; i < r->n && !r->badpath; i++)
            r->badpath = text_renders_badly(hv_str_ptr(r->keys[i]), hv_str_len(r->keys[i]), &cp);
    }
    return r->badpath;
}

/* the same for a whole value as the gem's to_s renders it (strings, keys, substitution paths) */
bool hc_value_render_raises(hctx *cx, const node *v)
{
    if (v->kind == N_STR)
        return text_render_raises(cx, v, hv_str_ptr(v->val), hv_str_len(v->val));
    if (v->kind == N_REF || v->kind == N_OBJ)
        for (size_t i = 0; i < v->n; i++)
            if (text_render_raises(cx, v, hv_str_ptr(v->keys[i]), hv_str_len(v->keys[i])))
                return true;
    if (v->kind != N_REF && v->items)
        for (size_t i = 0; i < v->n; i++)
            if (hc_value_render_raises(cx, v->items[i]))
                return true;
    return false;
}

/* transform_to_string: the text a primitive contributes to a string concatenation */
static bool as_text(const node *v, const char **s, size_t *n)
{
    switch (v->kind) {
    case N_STR: *s = hv_str_ptr(v->val); *n = hv_str_len(v->val); return true;
    case N_NUM: *s = hv_str_ptr(v->text); *n = hv_str_len(v->text); return true;
    case N_BOOL:
        *s = hv_bool_val(v->val) ? "true" : "false";
        *n = strlen(*s);
        return true;
    case N_NULL: *s = "null"; *n = 4; return true;
    default: return false;
    }
}

/* a short description of a node for messages, after the gem's to_s */
static void describe(sbuf *b, const node *v)
{
    const char *s;
    size_t n;
    switch (v->kind) {
    case N_STR: sb_adds(b, v->quoted ? "Quoted(\"" : "Unquoted(\""); break;
    case N_NUM: sb_adds(b, hv_is(v->val, HV_FLOAT) ? "ConfigDouble(" : "ConfigInt("); break;
    case N_BOOL: sb_adds(b, "ConfigBoolean("); break;
    case N_NULL: sb_adds(b, "ConfigNull("); break;
    case N_OBJ: sb_adds(b, "SimpleConfigObject(...)"); return;
    case N_LIST: sb_adds(b, "SimpleConfigList(...)"); return;
    case N_MERGEOBJ: sb_adds(b, "ConfigDelayedMergeObject(...)"); return;
    default: sb_adds(b, "unresolved value"); return;
    }
    as_text(v, &s, &n);
    sb_addn(b, s, n);
    sb_adds(b, v->kind == N_STR ? "\")" : ")");
}

void hc_nv_push(nvec *a, node *v)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 8;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = v;
}

void hc_nv_free(nvec *a)
{
    for (size_t i = 0; i < a->n; i++)
        hc_nfree(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* Ruby Integer(key, 10) >= 0: blanks around, a sign, digits with single underscores between */
static bool numeric_key(const hv *key)
{
    const char *s = hv_str_ptr(key), *e = s + hv_str_len(key);
    while (s < e && (*s == ' ' || (*s >= 9 && *s <= 13)))
        s++;
    while (e > s && (e[-1] == ' ' || (e[-1] >= 9 && e[-1] <= 13)))
        e--;
    bool neg = false, digit = false, nonzero = false;
    if (s < e && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    for (; s < e; s++) {
        if (*s == '_' && digit && s + 1 < e && isdigit((unsigned char)s[1]))
            continue;
        if (!isdigit((unsigned char)*s))
            return false;
        digit = true;
        nonzero |= *s != '0';
    }
    return digit && !(neg && nonzero);
}

/* ConfigConcatenation.join tries DefaultTransformer.transform(object, LIST) before joining an
 * object and a list. In the gem 1.3.1 that raises NameError when the object has a numeric key
 * (the transformer names SimpleConfigList without loading it), ConfigNotResolvedError for a
 * delayed merge object; otherwise the object is left as it is and cannot be joined. */
static int join_object_list(hctx *cx, node *left, node *right)
{
    node *o = is_objectish(left) ? left : right;
    if (o->kind == N_MERGEOBJ) {
        hc_fail(cx, NULL, 0, 0,
                "need to Config#resolve() before using this object, see the API docs for Config#resolve()");
        return -1;
    }
    for (size_t i = 0; i < o->n; i++) {
        if (numeric_key(o->keys[i])) {
            hc_fail_ruby(cx, o->org, o->line, o->col,
                         "uninitialized constant Hocon::Impl::DefaultTransformer::SimpleConfigList");
            return -1;
        }
    }
    if (hc_value_render_raises(cx, left) || hc_value_render_raises(cx, right))
        return -1;
    hc_fail(cx, left->org, left->line, left->col,
            "Cannot concatenate object or list with a non-object-or-list, %s and %s are not compatible",
            left->kind == N_LIST ? "SimpleConfigList(...)" : "SimpleConfigObject(...)",
            right->kind == N_LIST ? "SimpleConfigList(...)" : "SimpleConfigObject(...)");
    return -1;
}

/* ConfigConcatenation.join: adds `right` (borrowed) to the builder, merged with its last value
 * when they can be joined. 0, or -1 with an error. */
static int concat_join(hctx *cx, nvec *b, node *right)
{
    node *left = b->v[b->n - 1], *joined = NULL;
    if ((is_objectish(left) && right->kind == N_LIST) || (left->kind == N_LIST && is_objectish(right)))
        return join_object_list(cx, left, right);
    if (is_objectish(left) && is_objectish(right)) {
        if (!(joined = hc_with_fallback(cx, right, left)))
            return -1;
    } else if (left->kind == N_LIST && right->kind == N_LIST) {
        if (!hc_work(cx, left->n + right->n))
            return -1;
        joined = hc_nnew(N_LIST, left->line, left->col, left->org);
        for (size_t i = 0; i < left->n; i++)
            hc_items_push(joined, hc_nref(left->items[i]));
        for (size_t i = 0; i < right->n; i++)
            hc_items_push(joined, hc_nref(right->items[i]));
    } else if ((left->kind == N_LIST || is_objectish(left)) && right->kind == N_STR && !right->quoted) {
        /* Quirk: any unquoted string after a list or object is dropped (is_ignored_whitespace
         * only checks "unquoted"), so `[1] foo` is [1]. */
        joined = hc_nref(left);
    } else if (is_unmergeable(left) || is_unmergeable(right)) {
        joined = NULL;
    } else {
        const char *s1, *s2;
        size_t n1, n2;
        if (!as_text(left, &s1, &n1) || !as_text(right, &s2, &n2)) {
            if (hc_value_render_raises(cx, left) || hc_value_render_raises(cx, right))
                return -1;
            sbuf l = {0}, r = {0};
            describe(&l, left);
            describe(&r, right);
            hc_fail(cx, left->org, left->line, left->col,
                    "Cannot concatenate object or list with a non-object-or-list, %s and %s are not compatible",
                    sb_str(&l), sb_str(&r));
            sb_free(&l);
            sb_free(&r);
            return -1;
        }
        if (!hc_work(cx, (n1 + n2) / 8))
            return -1;
        char *s = xmalloc(n1 + n2 + 1);
        memcpy(s, s1, n1);
        memcpy(s + n1, s2, n2);
        s[n1 + n2] = 0;
        joined = hc_nstr(hv_str_take(s, n1 + n2), true, left->line, left->col, left->org);
    }
    if (!joined) {
        hc_nv_push(b, hc_nref(right));
    } else {
        hc_nfree(b->v[b->n - 1]);
        b->v[b->n - 1] = joined;
    }
    return 0;
}

/* ConfigConcatenation.consolidate: flattens nested concatenations and joins what can be joined.
 * Pieces are borrowed; the result vector holds new references. */
int hc_consolidate(hctx *cx, node **pieces, size_t n, nvec *out)
{
    for (size_t i = 0; i < n; i++) {
        node *p = pieces[i];
        size_t m = p->kind == N_CONCAT ? p->n : 1;
        for (size_t j = 0; j < m; j++) {
            node *q = p->kind == N_CONCAT ? p->items[j] : p;
            if (out->n == 0)
                hc_nv_push(out, hc_nref(q));
            else if (concat_join(cx, out, q) < 0)
                return -1;
        }
    }
    return 0;
}

/* ConfigConcatenation.concatenate: *out is NULL when there were no pieces */
int hc_concatenate(hctx *cx, node **pieces, size_t n, node **out)
{
    nvec c = {0};
    *out = NULL;
    if (hc_consolidate(cx, pieces, n, &c) < 0) {
        hc_nv_free(&c);
        return -1;
    }
    if (c.n == 1) {
        *out = c.v[0];
        c.n = 0;
    } else if (c.n > 1) {
        node *r = hc_nnew(N_CONCAT, c.v[0]->line, c.v[0]->col, c.v[0]->org);
        for (size_t i = 0; i < c.n; i++)
            hc_items_push(r, c.v[i]);
        c.n = 0;
        *out = r;
    }
    hc_nv_free(&c);
    return 0;
}
