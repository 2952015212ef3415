/* lookup_walk.c - the merge strategies over the lookup's providers (lookup.c gives the
 * overview): the recursion guard, MergeStrategy#lookup over one hierarchy entry's locations, over
 * one layer's entries (the walk with its probe plan, and merges remembered) and over the
 * provider stack (global, environment, module). */
#include "engine/lookup_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ recursion guard */

/* check_enter's failures, out of its line: what the hot path leaves to them */
__attribute__((noinline, cold)) bool check_refuse(inv *I, const char *name, herr *err)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++) {
        if (strcmp(h->stack[i], name) == 0) {
            sbuf b = {0};
            for (size_t j = 0; j < h->nstack; j++) {
                if (j)
                    sb_adds(&b, ", ");
                sb_adds(&b, h->stack[j]);
            }
            herr_set(err, HERR_LOOKUP, "Recursive lookup detected in [%s]", sb_str(&b));
            sb_free(&b);
            return false;
        }
    }
    if (h->nested_lookups > MAX_NESTED_LOOKUPS) {
        herr_set(err, HERR_ERROR, "Lookup of '%s' needs more than %d nested lookups (interpolations that multiply)",
                 h->top_name ? h->top_name : name, MAX_NESTED_LOOKUPS);
        return false;
    }
    herr_set(err, HERR_LOOKUP, "Lookups nested deeper than %d levels (at '%s')", MAX_STACK, name);
    return false;
}


/* check_enter then check_leave, for a guard that is only passed through (interp.c deps_key):
 * false, with nothing counted, when check_enter would refuse. */
bool check_pass(inv *I, const char *name)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++)
        if (strcmp(h->stack[i], name) == 0)
            return false;
    if (h->nested_lookups + 1 > MAX_NESTED_LOOKUPS || h->nstack >= MAX_STACK)
        return false;
    h->nested_lookups++;
    return true;
}

void check_leave(inv *I, herr *err)
{
    hiera_ctx *h = I->h;
    --h->nstack;
    /* Invocation#check: a Puppet::Error raised inside becomes a LookupError */
    if (err && err->kind == HERR_PUPPET)
        err->kind = HERR_LOOKUP;
}

/* ------------------------------------------------------------------ strategy lookups */

static lr strategy_fold(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err);

/* MergeStrategy#lookup: first found, or the fold of all found values (merge node in the
 * explanation when there is more than one variant). Without an explanation, the fold is
 * remembered as layer_walk's is (see deferral below). */
lr strategy_lookup(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err)
{
    if (ms_is_first(ms)) {
        for (size_t i = 0; i < n; i++) {
            lr r = fn(arg, i, out, err);
            if (r != LR_NOT_FOUND)
                return r;
        }
        return LR_NOT_FOUND;
    }
    if (n == 0)
        return LR_NOT_FOUND;
    explainer *ex = h->ex;
    if (!ex)
        return strategy_fold(h, ms, n, fn, arg, out, err);
    if (n == 1) {
        hv *v = NULL;
        lr r = fn(arg, 0, &v, err);
        if (r != LR_FOUND)
            return r;
        *out = ms_merge_single(ms, v);
        hv_decref(v);
        return LR_FOUND;
    }
    ex_push_merge(ex, ms);
    hv *acc = NULL;
    lr result = LR_FOUND;
    for (size_t i = 0; i < n; i++) {
        hv *v = NULL;
        lr r = fn(arg, i, &v, err);
        if (r == LR_ERROR) {
            result = LR_ERROR;
            break;
        }
        if (r == LR_NOT_FOUND)
            continue;
        hv *next;
        if (!acc) {
            next = ms_convert_value(ms, v);
        } else {
            next = ms_merge(ms, acc, v, true, err);
            if (!next) {
                hv_decref(v);
                result = LR_ERROR;
                break;
            }
        }
        hv_decref(v);
        hv_decref(acc);
        acc = next;
    }
    if (result == LR_FOUND && !acc)
        result = LR_NOT_FOUND;
    if (result == LR_FOUND) {
        ex_result(ex, acc);
        *out = acc;
    } else {
        hv_decref(acc);
    }
    ex_pop(ex);
    return result;
}

/* ---- one hierarchy entry ---- */

typedef struct {
    inv *I;
    const layer *l;
    provider *p;
    const char *root_key;
    const merge_strategy *ms;
    size_t root_len;
    uint64_t root_code; /* the root key's hash, computed once for every level probed */
    /* frozen cache: the key's entry in the key index, as of kx_gen indexed files (kept in the
     * invocation when the key is its own: fetched once for all layers) */
    bool use_kx, kx_in_inv;
    uint32_t kx_gen;
    const key_index *kx;
} entry_arg;

static inline __attribute__((always_inline)) entry_arg entry_args(inv *I, const layer *l, provider *p, const char *root_key, const merge_strategy *ms)
{
    hiera_ctx *h = I->h;
    entry_arg a = {I, l, p, root_key, ms, 0, 0, cache_is_frozen(h->cache) && !h->ex && !h->prov, false, 0, NULL};
    if (I->root_key == root_key) { /* the lookup's own key: its hash is known */
        a.root_len = I->root_len;
        a.root_code = I->root_code;
        a.kx_in_inv = true;
    } else {
        a.root_len = strlen(root_key);
        a.root_code = hv_str_code(root_key, a.root_len);
    }
    return a;
}

/* LookupKeyFunctionProvider#lookup_key: the provider's answer for the key at the location, one
 * per key and location, remembered (the function caches, so interpolation runs once). */
static lr lookup_key_value(entry_arg *a, location *loc, hv **out, herr *err)
{
    hiera_ctx *h = a->I->h;
    explainer *ex = h->ex;
    const provider_def *pd = provider_find(a->p->lvl->fname);
    if (!pd || !pd->key_value) {
        if (h->opaque_unknown) {
            h->opaque_hits++;
            return LR_NOT_FOUND;
        }
        function_not_found(a->I->h, a->l, a->p, err);
        return LR_ERROR;
    }
    if (!loc->data_err.msg && !loc->loaded && (a->p->nil_location || loc->is_uri)) {
        herr_set(err, HERR_ERROR,
                 "'%s': one of 'path', 'paths' 'glob', 'globs' or 'mapped_paths' must be declared in hiera.yaml when using this lookup_key function",
                 pd->name);
        return LR_ERROR;
    }
    hv *known = hv_hash_gets(loc->memo, a->root_key);
    if (known) {
        *out = hv_incref(known);
        return LR_FOUND;
    }
    hv *hash = location_data(h, a->l, a->p, loc, err);
    if (!hash)
        return LR_ERROR;
    hv *raw = hv_hash_gets(hash, a->root_key);
    if (!raw) {
        if (ex)
            ex_not_found_str(ex, a->root_key);
        return LR_NOT_FOUND;
    }
    hv *value = NULL;
    provider_call call = {a->I, a->p->options, a->root_key, loc->path ? loc->path : ""};
    if (pd->key_value(&call, raw, &value, err) != LR_FOUND)
        return LR_ERROR;
    if (!hv_is_rich_data(value, 0)) {
        char *got = infer_type_name(value);
        herr_set(err, HERR_PUPPET,
                 "Value for key '%s', returned from %s function '%s', when using location '%s', has wrong type, expects Puppet::LookupValue, got %s",
                 a->root_key, a->l->cfg && a->l->cfg->version == 3 ? "v3_lookup_key" : "lookup_key", a->p->lvl->fname,
                 loc->path ? loc->path : "", got);
        free(got);
        hv_decref(value);
        return LR_ERROR;
    }
    if (!loc->memo)
        loc->memo = hv_hash();
    hv_hash_sets(loc->memo, a->root_key, hv_incref(value));
    *out = value;
    return LR_FOUND;
}

/* Provenance mode: registers the nodes of a value found at a location. */
static hv *trace(entry_arg *a, const location *loc, hv *value)
{
    const layer *l = a->l;
    char *layer_name = l->kind == LAYER_GLOBAL ? xstrdup("Global") : l->kind == LAYER_ENV ? xstrdup("Environment")
                                                                                         : xasprintf("Module %s", l->module);
    uint32_t key_line = 0; /* the line of the found key in the location's file */
    if (loc->data) {
        hv *k = hv_strn(a->root_key, a->root_len);
        long at = hv_hash_index(loc->data, k);
        hv_decref(k);
        if (at >= 0)
            key_line = hv_line(hv_hash_key_at(loc->data, (size_t)at));
    }
    hv *res = prov_register(a->I->h->prov, value, layer_name, a->p->lvl->name, loc->path, key_line);
    free(layer_name);
    hv_decref(value);
    return res;
}

/* root_key's entry in c's key index, kept in *kx as of *kx_gen and fetched again when the index
 * has grown since (files were added: the entry may move). */
static inline const key_index *kx_current(hiera_cache *c, const char *root_key, size_t len, uint64_t code,
                                          uint32_t *kx_gen, const key_index **kx)
{
    uint32_t gen = cache_key_index_gen(c);
    if (gen != *kx_gen) {
        *kx = cache_key_index(c, root_key, len, code);
        *kx_gen = gen;
    }
    return *kx;
}

/* The lookup's key's entry in the frozen cache's key index, kept where the entry argument says. */
static inline const key_index *entry_kx(entry_arg *a)
{
    uint32_t *kx_gen = a->kx_in_inv ? &a->I->kx_gen : &a->kx_gen;
    const key_index **kx = a->kx_in_inv ? &a->I->kx : &a->kx;
    return kx_current(a->I->h->cache, a->root_key, a->root_len, a->root_code, kx_gen, kx);
}

static lr data_value(entry_arg *a, location *loc, hv **out, herr *err)
{
    if (a->p->lvl->fkind == FN_LOOKUP_KEY) {
        a->I->h->walk_interps++; /* (a function's answer: never remembered by answer_signature) */
        a->I->h->walk_rec.ok = false;
        lr r = lookup_key_value(a, loc, out, err);
        if (r == LR_FOUND && a->I->h->prov)
            *out = trace(a, loc, *out);
        if (r == LR_FOUND && a->I->h->ex)
            ex_found_str(a->I->h->ex, a->root_key, *out);
        return r;
    }
    hiera_ctx *h = a->I->h;
    explainer *ex = h->ex;
    bool known;
    provider_format(a->p, &known);
    if (a->p->lvl->fkind != FN_DATA_HASH || !known) {
        if (h->opaque_unknown) {
            h->opaque_hits++;
            return LR_NOT_FOUND;
        }
        function_not_found(a->I->h, a->l, a->p, err);
        return LR_ERROR;
    }
    if (!location_load(h, a->p, loc, err))
        return LR_ERROR;
    hv *value;
    key_hit *hit = NULL;
    if (loc->kid && a->use_kx) {
        hit = key_index_find(entry_kx(a), loc->kid);
        value = hit ? hit->value : NULL;
    } else if (location_value(loc, a->root_key, a->root_len, a->root_code, &value, err) < 0) {
        return LR_ERROR;
    }
    if (!value) {
        if (ex)
            ex_not_found_str(ex, a->root_key);
        return LR_NOT_FOUND;
    }
    int flags;
    if (hit && hit->flags >= 0)
        flags = hit->flags;
    else if (loc->keyflags)
        flags = cache_key_flags(loc->keyflags, a->root_key, a->root_len, a->root_code, value);
    else
        flags = KEY_INTERP | (hv_is_rich_data(value, 0) ? 0 : KEY_INVALID);
    if (hit)
        hit->flags = flags;
    bool invalid = (flags & KEY_INVALID) != 0;
    if (invalid) {
        char *got = infer_type_name(value);
        if (loc->path && !a->p->nil_location)
            herr_set(err, HERR_PUPPET,
                     "Value for key '%s', in hash returned from data_hash function '%s', when using location '%s', has wrong type, expects Puppet::LookupValue, got %s",
                     a->root_key, a->p->lvl->fname, loc->path, got);
        else
            herr_set(err, HERR_PUPPET,
                     "Value for key '%s', in hash returned from data_hash function '%s', has wrong type, expects Puppet::LookupValue, got %s",
                     a->root_key, a->p->lvl->fname, got);
        free(got);
        return LR_ERROR;
    }
    hv *res = NULL;
    bool plain = !(flags & KEY_INTERP) && !ex && !h->prov;
    memo *m = !ex && !h->prov ? cache_work_memo(h->cache) : NULL;
    if (plain) {
        res = hv_incref(value); /* nothing to interpolate: the value as it is (stable when its
                                 * file is in a frozen cache's key index) */
    } else {
        h->walk_interps++;
        lr r = m ? interpolate_remembered(a->I, m, value, hit ? &hit->deps : NULL, hit ? &hit->odds : NULL, &res, err)
                 : interpolate(a->I, value, true, &res, err);
        if (h->walk_rec.on) {
            /* (what the value read: its variables, listed once for the file's entry) */
            if (m && hit && hv_is(hit->deps, HV_ARRAY) && h->walk_rec.n < WALK_REC_MAX)
                h->walk_rec.lists[h->walk_rec.n++] = hit->deps;
            else
                h->walk_rec.ok = false;
        }
        if (r != LR_FOUND)
            return r;
    }
    if (h->prov)
        res = trace(a, loc, res);
    if (ex)
        ex_found_str(ex, a->root_key, res);
    *out = res;
    return LR_FOUND;
}

static lr entry_location(void *arg, size_t i, hv **out, herr *err)
{
    entry_arg *a = arg;
    explainer *ex = a->I->h->ex;
    if (a->p->nil_location)
        return data_value(a, &a->p->nil_loc, out, err);
    location *loc = &a->p->locs[i];
    if (ex)
        ex_push_location(ex, loc->path, loc->original, loc->is_uri);
    lr r;
    if (!a->I->h->opaque_unknown && hiera3_backend_unloadable(a->I->h, a->p)) {
        r = LR_NOT_FOUND; /* (whether the file exists or not: Ruby cannot load the backend) */
    } else if (loc->exists) {
        r = data_value(a, loc, out, err);
    } else {
        if (ex)
            ex_location_not_found(ex);
        r = LR_NOT_FOUND;
    }
    if (ex)
        ex_pop(ex);
    return r;
}

static lr entry_lookup(inv *I, const layer *l, provider *p, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    explainer *ex = I->h->ex;
    if (ex) {
        /* the provider's name: V4DataHashFunctionProvider names its function */
        char *name = p->lvl->fkind == FN_V4_DATA_HASH ? xasprintf("Deprecated API function \"%s\"", p->lvl->fname)
                                                       : xasprintf("Hierarchy entry \"%s\"", p->lvl->name);
        ex_push(ex, EX_HIERARCHY_ENTRY, name, NULL);
        free(name);
    }
    entry_arg a = entry_args(I, l, p, root_key, ms);
    lr r = strategy_lookup(I->h, ms, p->nil_location ? 1 : p->nlocs, entry_location, &a, out, err);
    if (ex)
        ex_pop(ex);
    return r;
}

/* ---- one layer (ConfiguredDataProvider) ---- */

typedef struct {
    inv *I;
    const layer *l;
    provider *provs;
    const char *root_key;
    const merge_strategy *ms;
} layer_arg;

static lr layer_entry(void *arg, size_t i, hv **out, herr *err)
{
    layer_arg *a = arg;
    return entry_lookup(a->I, a->l, &a->provs[i], a->root_key, a->ms, out, err);
}

/* strategy_lookup's fold over n variants, one value at a time (v is consumed). */
typedef struct {
    const merge_strategy *ms;
    size_t n;
    hv *memo;
} fold;

static lr fold_add(fold *f, hv *v, herr *err)
{
    hv *next;
    if (f->n == 1)
        next = ms_merge_single(f->ms, v);
    else if (!f->memo)
        next = ms_convert_value(f->ms, v);
    else if (!(next = ms_merge(f->ms, f->memo, v, false, err))) {
        hv_decref(v);
        return LR_ERROR;
    }
    hv_decref(v);
    hv_decref(f->memo);
    f->memo = next;
    return LR_FOUND;
}

/* ---- merges remembered (memo.h) ----
 *
 * With a frozen cache, a merge whose found values are all stable is a function of their
 * addresses: the walk defers the fold, and looks the whole of it up under a key made of the
 * strategy and, for each value, where it was found. A value that is not stable, too many values,
 * or an error ends the deferral: what was deferred is folded then, in the order of the walk
 * (a merge error the plain fold would have met first still comes first). */

#define DEFER_MAX 48

typedef struct {
    uint32_t outer, inner_n, inner; /* variant, its number of sub-variants, sub-variant */
    uint32_t pad;
    const hv *value;
} defer_item;

typedef struct {
    memo *m;              /* NULL: not deferring */
    const merge_strategy *ms;
    uint32_t n;           /* variants of the outer fold */
    size_t count;
    struct {
        char tag; /* 'l' layer, 's' strategy (memo keys start with their kind's letter) */
        char pad[3];
        uint32_t n;
        const merge_strategy *ms;
    } head;
    defer_item items[DEFER_MAX];
} deferral;

/* A deferred value in the memo key: where it was found and its address (16 bytes; the key of a
 * merge of three values fits a cache line). Of the variant's number of sub-variants the fold
 * only tells one from more (a fold of one is merge_single): the top bit of inner. */
typedef struct {
    uint32_t outer, inner;
    const hv *value;
} defer_key_item;
#define DEFER_SINGLE 0x80000000u

static inline void defer_start(deferral *d, hiera_ctx *h, const merge_strategy *ms, size_t n, char tag)
{
    d->m = !ms_is_first(ms) && ms->stable && !h->ex && !h->prov ? cache_work_memo(h->cache) : NULL;
    d->ms = ms;
    d->n = (uint32_t)n;
    d->count = 0;
    memset(&d->head, 0, sizeof d->head);
    d->head.ms = ms;
    d->head.n = (uint32_t)n;
    d->head.tag = tag;
}

/* Keeps v (a reference) for later; false when it cannot be deferred (the caller folds instead). */
static bool defer_add(deferral *d, size_t outer, size_t inner_n, size_t inner, hv *v)
{
    if (!d->m || d->count == DEFER_MAX || !hv_is_stable(v))
        return false;
    defer_item *it = &d->items[d->count++];
    memset(it, 0, sizeof *it);
    it->outer = (uint32_t)outer;
    it->inner_n = (uint32_t)inner_n;
    it->inner = (uint32_t)inner;
    it->value = v;
    return true;
}

static void defer_drop(deferral *d, size_t from)
{
    for (size_t k = from; k < d->count; k++)
        hv_decref((hv *)d->items[k].value);
    d->count = 0;
    d->m = NULL;
}

/* Ends the deferral: folds the deferred values into outer, those of the variant `live` (when
 * nested) into *inner, which stays open. */
static lr defer_replay(deferral *d, fold *outer, fold *inner, size_t live, herr *err)
{
    size_t count = d->count;
    d->m = NULL;
    d->count = 0;
    fold tmp = {d->ms, 0, NULL};
    for (size_t k = 0; k < count; k++) {
        defer_item *it = &d->items[k];
        hv *v = (hv *)it->value;
        lr r;
        if (!inner) {
            r = fold_add(outer, v, err);
        } else if (it->outer == live) {
            r = fold_add(inner, v, err);
        } else {
            if (!tmp.n)
                tmp = (fold){d->ms, it->inner_n, NULL};
            r = fold_add(&tmp, v, err);
            if (r != LR_ERROR && (k + 1 == count || d->items[k + 1].outer != it->outer)) {
                hv *done = tmp.memo;
                tmp = (fold){d->ms, 0, NULL};
                if (done)
                    r = fold_add(outer, done, err);
            }
        }
        if (r == LR_ERROR) {
            hv_decref(tmp.memo);
            d->count = count;
            defer_drop(d, k + 1);
            return LR_ERROR;
        }
    }
    return LR_FOUND;
}

/* Ends the deferral before the walk folds a value it could not defer, or reports an error: the
 * deferred values are folded first, and a merge error among them replaces err (the plain fold
 * would have met it first). false on that error. */
static bool defer_flush(deferral *d, fold *outer, fold *inner, size_t live, herr *err)
{
    if (!d->m)
        return true;
    herr merr = {0};
    if (defer_replay(d, outer, inner, live, &merr) != LR_ERROR)
        return true;
    herr_clear(err);
    *err = merr;
    return false;
}

/* The end of a walk that deferred all it found (outer has folded nothing): not found, the one
 * value (a fold of one value is the value itself: convert_value and merge_single only change
 * arrays for unique), the fold remembered, or the fold made now (providers' folds in inner when
 * nested, as replayed) and remembered. */
static lr defer_finish(deferral *d, fold *outer, fold *inner, hv **out, herr *err)
{
    if (!d->count)
        return LR_NOT_FOUND;
    if (d->count == 1 && d->ms->kind != MS_UNIQUE) {
        *out = (hv *)d->items[0].value;
        return LR_FOUND;
    }
    char key[sizeof d->head + DEFER_MAX * sizeof(defer_key_item)];
    size_t klen = sizeof d->head + d->count * sizeof(defer_key_item);
    memcpy(key, &d->head, sizeof d->head);
    bool keyed = true;
    for (size_t k = 0; k < d->count; k++) {
        const defer_item *it = &d->items[k];
        defer_key_item ki = {it->outer, it->inner | (it->inner_n == 1 ? DEFER_SINGLE : 0), it->value};
        keyed = keyed && it->inner < DEFER_SINGLE;
        memcpy(key + sizeof d->head + k * sizeof ki, &ki, sizeof ki);
    }
    memo *m = keyed ? d->m : NULL;
    hv *known = m ? memo_get(m, key, klen) : NULL;
    if (known) {
        defer_drop(d, 0);
        *out = hv_incref(known);
        return LR_FOUND;
    }
    if (defer_replay(d, outer, inner, d->n, err) == LR_ERROR) {
        hv_decref(outer->memo);
        return LR_ERROR;
    }
    if (!outer->memo)
        return LR_NOT_FOUND;
    if (m)
        memo_put(m, key, klen, outer->memo);
    *out = outer->memo;
    return LR_FOUND;
}

/* strategy_lookup's fold without an explanation, deferred and remembered when it can be. */
static lr strategy_fold(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err)
{
    deferral d;
    defer_start(&d, h, ms, n, 's');
    fold f = {ms, n, NULL};
    for (size_t i = 0; i < n; i++) {
        hv *v = NULL;
        lr r = fn(arg, i, &v, err);
        if (r == LR_NOT_FOUND)
            continue;
        if (r == LR_FOUND && defer_add(&d, i, 1, 0, v))
            continue;
        if (!defer_flush(&d, &f, NULL, 0, err)) {
            hv_decref(v);
            hv_decref(f.memo);
            return LR_ERROR;
        }
        if (r == LR_ERROR || fold_add(&f, v, err) == LR_ERROR) {
            hv_decref(f.memo);
            return LR_ERROR;
        }
    }
    if (d.m)
        return defer_finish(&d, &f, NULL, out, err);
    if (!f.memo)
        return LR_NOT_FOUND;
    *out = f.memo;
    return LR_FOUND;
}

/* The layer's probe plan for provs (engine.h), or NULL while it cannot be used: a location not
 * loaded yet (asked again at the next walk), or for good: a provider that is not a data hash
 * with locations, a file that failed to load or that the key index lacks. */
static const probe_plan *layer_plan(layer *l, const provider *provs, size_t n)
{
    probe_plan *pl = provs == l->provs ? &l->plan : provs == l->dprovs ? &l->dplan : NULL;
    if (!pl)
        return NULL;
    if (pl->state && (pl->provs != provs || pl->nprovs != n))
        plan_clear(pl);
    if (pl->state)
        return pl->state > 0 ? pl : NULL;
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        provider *p = (provider *)&provs[i];
        bool known = false;
        if (p->nil_location || p->options_refused || p->lvl->fkind != FN_DATA_HASH || (provider_format(p, &known), !known)) {
            pl->state = -1;
            return NULL;
        }
        for (size_t j = 0; j < p->nlocs; j++) {
            const location *loc = &p->locs[j];
            if (!loc->exists)
                continue;
            if (!loc->loaded)
                return NULL;
            if (!loc->data || !loc->kid || j > UINT32_MAX) {
                pl->state = -1;
                return NULL;
            }
            count++;
        }
    }
    if (count > UINT32_MAX || n > UINT32_MAX) {
        pl->state = -1;
        return NULL;
    }
    pl->probes = xmalloc((count ? count : 1) * sizeof *pl->probes);
    pl->nprobes = count;
    count = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < provs[i].nlocs; j++)
            if (provs[i].locs[j].exists)
                pl->probes[count++] = (struct probe){provs[i].locs[j].kid, (uint32_t)i, (uint32_t)j};
    /* the words: one per distinct kid / 64 (a few: files are numbered as they load) */
    pl->words = xmalloc((count ? count : 1) * sizeof *pl->words);
    pl->nwords = 0;
    pl->direct = count < UINT8_MAX;
    for (size_t k = 0; k < count; k++) {
        uint32_t word = pl->probes[k].kid / 64, bit = pl->probes[k].kid % 64;
        size_t w = 0;
        while (w < pl->nwords && pl->words[w].word != word)
            w++;
        if (w == pl->nwords)
            pl->words[pl->nwords++] = (struct plan_word){word, 0, {0}};
        if (pl->words[w].bits >> bit & 1)
            pl->direct = false; /* (a file two levels lead to) */
        pl->words[w].bits |= 1ull << bit;
        pl->words[w].at[bit] = (uint8_t)k;
    }
    pl->provs = provs;
    pl->nprovs = n;
    pl->state = 1;
    return pl;
}

/* Where a walk is: provider i, location j, or probe k of a plan; or, with a direct plan, the
 * next of the nhits probes holding the key (hits, in order), once listed. */
#define WALK_HITS 32
typedef struct {
    size_t i, j, k;
    bool listed;
    uint8_t nhits, next;
    uint8_t hits[WALK_HITS];
} walk_pos;

/* Whether any of the plan's files is among bits (a key's bitmap of nwords words): when none is,
 * the layer holds nothing for the key. */
static inline bool plan_meets(const probe_plan *pl, const uint64_t *bits, uint32_t nwords)
{
    for (size_t i = 0; i < pl->nwords; i++)
        if (pl->words[i].word < nwords && (bits[pl->words[i].word] & pl->words[i].bits))
            return true;
    return false;
}

/* The probes of a direct plan whose files the key's bitmap holds, in the walk's order, into w
 * (false: more than WALK_HITS, to be walked probe by probe). */
static inline bool list_hits(const probe_plan *pl, const uint64_t *bits, uint32_t nwords, walk_pos *w)
{
    unsigned nh = 0;
    for (size_t i = 0; i < pl->nwords; i++) {
        const struct plan_word *pw = &pl->words[i];
        if (pw->word >= nwords)
            continue;
        for (uint64_t m = bits[pw->word] & pw->bits; m; m &= m - 1) {
            if (nh == WALK_HITS)
                return false;
            uint8_t k = pw->at[__builtin_ctzll(m)];
            unsigned at = nh++;
            while (at && w->hits[at - 1] > k) { /* (a few: sorted as they come) */
                w->hits[at] = w->hits[at - 1];
                at--;
            }
            w->hits[at] = k;
        }
    }
    w->nhits = (uint8_t)nh;
    w->next = 0;
    w->listed = true;
    return true;
}

/* The next location of the walk that may hold the key (*pi provider, *pj location; a provider
 * without locations gives j 0 once). Most locations do not hold the key: with the key index, a
 * location whose file is loaded is passed over at the cost of a search in the key's list of
 * files (what data_value finds first for it: its checks only come for a found value); with a
 * plan, only those searches are made. */
static inline bool walk_next(entry_arg *a, provider *provs, size_t n, const probe_plan *pl, walk_pos *w, size_t *pi,
                             size_t *pj)
{
    if (pl) {
        const key_index *kx = entry_kx(a); /* (moves only when data_value loads files) */
        const struct probe *probes = pl->probes;
        size_t k = w->k, count = pl->nprobes;
        if (kx && kx->bits) {
            /* key_index_has with the bitmap in registers (the walk's hottest loop) */
            const uint64_t *bits = kx->bits;
            uint32_t nwords = kx->nwords;
            if (k == 0 && !w->listed && !(pl->direct && list_hits(pl, bits, nwords, w)) &&
                !plan_meets(pl, bits, nwords)) {
                /* none of the layer's files holds the key: no walk (a module's key, walked
                 * through the environment's layer first) */
                w->k = count;
                return false;
            }
            if (w->listed) {
                /* (the files' bits stay as they are while the walk loads others: the list holds) */
                if (w->next == w->nhits) {
                    w->k = count;
                    return false;
                }
                k = w->hits[w->next++];
                goto hit;
            }
            for (; k < count; k++) {
                uint32_t kid = probes[k].kid;
                if (kid / 64 < nwords && (bits[kid / 64] >> (kid % 64) & 1))
                    goto hit;
            }
        } else {
            for (; k < count; k++)
                if (key_index_has(kx, probes[k].kid))
                    goto hit;
        }
        w->k = k;
        return false;
    hit:
        *pi = probes[k].prov;
        *pj = probes[k].loc;
        w->k = k + 1;
        return true;
    }
    for (; w->i < n; w->i++, w->j = 0) {
        provider *p = &provs[w->i];
        if (p->lvl->fkind == FN_HIERA3_BACKEND && !a->I->h->opaque_unknown && hiera3_backend_unloadable(a->I->h, p))
            continue; /* (not found at any of its locations) */
        if (p->nil_location) {
            if (w->j)
                continue;
            *pi = w->i;
            *pj = w->j++;
            return true;
        }
        bool known = false;
        bool indexed = a->use_kx && p->lvl->fkind == FN_DATA_HASH && (provider_format(p, &known), known);
        for (; w->j < p->nlocs; w->j++) {
            const location *loc = &p->locs[w->j];
            if (!loc->exists || (indexed && loc->data && loc->kid && !key_index_has(entry_kx(a), loc->kid)))
                continue;
            *pi = w->i;
            *pj = w->j++;
            return true;
        }
    }
    return false;
}

/* The layer's hierarchy without an explanation: what strategy_lookup over layer_entry, then over
 * entry_location, computes, as one plain loop over the locations that may hold the key (the
 * lookup's hottest path). */
static lr layer_walk(inv *I, layer *l, provider *provs, size_t n, const char *root_key, const merge_strategy *ms,
                     hv **out, herr *err)
{
    entry_arg a = entry_args(I, l, NULL, root_key, ms);
    const probe_plan *pl = a.use_kx ? layer_plan(l, provs, n) : NULL;
    if (pl && !entry_kx(&a))
        return LR_NOT_FOUND; /* no file holds the key */
    bool first = ms_is_first(ms);
    deferral d;
    defer_start(&d, I->h, ms, n, 'l');
    fold outer = {ms, n, NULL};
    fold inner = {ms, 0, NULL}; /* the fold of provider `live` */
    size_t live = SIZE_MAX, i, j;
    walk_pos w; /* (hits: written before they are read) */
    w.i = w.j = w.k = 0;
    w.listed = false;
    w.nhits = w.next = 0;
    while (walk_next(&a, provs, n, pl, &w, &i, &j)) {
        if (i != live) {
            /* a provider's fold joins the layer's before the next provider is asked */
            if (inner.memo && fold_add(&outer, inner.memo, err) == LR_ERROR) {
                hv_decref(outer.memo);
                return LR_ERROR;
            }
            live = i;
            a.p = &provs[i];
            inner = (fold){ms, a.p->nil_location ? 1 : a.p->nlocs, NULL};
        }
        hv *v = NULL;
        lr r = data_value(&a, a.p->nil_location ? &a.p->nil_loc : &a.p->locs[j], &v, err);
        if (r == LR_NOT_FOUND)
            continue;
        if (r == LR_FOUND && first) {
            *out = v;
            return LR_FOUND;
        }
        if (r == LR_FOUND && defer_add(&d, i, inner.n, j, v))
            continue;
        if (!defer_flush(&d, &outer, &inner, i, err)) {
            hv_decref(v);
            hv_decref(inner.memo);
            hv_decref(outer.memo);
            return LR_ERROR;
        }
        if (r == LR_ERROR || fold_add(&inner, v, err) == LR_ERROR) {
            hv_decref(inner.memo);
            hv_decref(outer.memo);
            return LR_ERROR;
        }
    }
    if (inner.memo && fold_add(&outer, inner.memo, err) == LR_ERROR) {
        hv_decref(outer.memo);
        return LR_ERROR;
    }
    if (d.m) {
        fold none = {ms, 0, NULL}; /* (replayed providers' folds: no provider is still open) */
        return defer_finish(&d, &outer, &none, out, err);
    }
    if (!outer.memo)
        return LR_NOT_FOUND;
    *out = outer.memo;
    return LR_FOUND;
}

inline __attribute__((always_inline)) lr unchecked_layer_lookup(inv *I, layer *l, const char *key, const char *root_key, const merge_strategy *ms,
                                 bool use_default, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    explainer *ex = h->ex;
    if (l->kind == LAYER_GLOBAL && !global_config(h, l, err))
        return LR_ERROR;
    if (ex)
        ex_push_provider(ex, l->name, l->cfg ? l->cfg->path : NULL, l->module);
    provider *provs = NULL;
    size_t n = 0;
    lr r = layer_providers(h, l, use_default, &provs, &n, err);
    if (r == LR_FOUND) {
        if (n == 0) {
            if (ex)
                ex_not_found_str(ex, key);
            r = LR_NOT_FOUND;
        } else if (!ex) {
            r = layer_walk(I, l, provs, n, root_key, ms, out, err);
        } else {
            layer_arg a = {I, l, provs, root_key, ms};
            r = strategy_lookup(h, ms, n, layer_entry, &a, out, err);
        }
    }
    if (ex)
        ex_pop(ex);
    return r;
}

/* GlobalDataProvider with a version 3 config: lookups made from inside (interpolation) only see
 * the global layer unless the environment has a version 5 provider (has_environment_data_provider?,
 * which sets the environment's provider up: false with err when that fails, a version 3
 * hiera.yaml there under strict = error, a hiera.yaml that does not load). */
static __attribute__((noinline)) bool global_v3_scope(hiera_ctx *h, herr *err)
{
    herr e = {0};
    layer *env = env_layer(h, &e);
    if (herr_isset(&e)) {
        herr_move(err, &e);
        return false;
    }
    if (!env || env->cfg->version < 5)
        h->global_only = true;
    return true;
}

/* Whether the layer's probe plan tells at once that none of its files holds the lookup's own
 * key: what layer_walk finds first when the plan is ready (layer_plan) for a frozen cache
 * without explanation or provenance, told here without the walk's set-up. Most layers asked
 * hold nothing for the key (the global layer's few files, a module's key asked of the
 * environment). false: the walk decides. */
static inline bool layer_lacks_key(inv *I, const layer *l, const provider *provs, size_t n, const char *root_key)
{
    hiera_ctx *h = I->h;
    const probe_plan *pl = &l->plan; /* (as layer_plan gives it once made for provs) */
    if (I->root_key != root_key || pl->state <= 0 || pl->provs != provs || pl->nprovs != n || h->prov ||
        !cache_is_frozen(h->cache))
        return false;
    const key_index *kx = kx_current(h->cache, I->root_key, I->root_len, I->root_code, &I->kx_gen, &I->kx);
    return !kx || (kx->bits && !plan_meets(pl, kx->bits, kx->nwords));
}

/* (out of line: the explaining path kept apart from the lookups of a batch) */
static __attribute__((noinline)) lr explained_layer_lookup(inv *I, layer *l, const char *key, const char *root_key,
                                                          const merge_strategy *ms, hv **out, herr *err)
{
    return unchecked_layer_lookup(I, l, key, root_key, ms, false, out, err);
}

/* (layer_key_lookup, unchecked_layer_lookup and entry_args are inlined where they are called:
 * every lookup passes through them for each layer; calls between them cost about 4% of a batch
 * run's instructions) */
/* DataProvider#key_lookup: the layer lookup under the recursion guard */
static inline __attribute__((always_inline)) lr layer_key_lookup(inv *I, layer *l, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (!check_enter(I, key, err))
        return LR_ERROR;
    hiera_ctx *h = I->h;
    bool save_global_only = h->global_only;
    if (l->kind == LAYER_GLOBAL && !global_config(h, l, err)) {
        check_leave(I, err);
        return LR_ERROR;
    }
    if (l->kind == LAYER_GLOBAL && l->cfg->version == 3 && !h->global_only && !global_v3_scope(h, err)) {
        check_leave(I, err);
        return LR_ERROR;
    }
    bool save_h3 = h->hiera3_scope;
    if (l->kind == LAYER_GLOBAL && l->cfg->version == 3)
        h->hiera3_scope = true; /* GlobalDataProvider: lookup_invocation.with_scope(Hiera::Scope.new(scope)) */
    lr r;
    if (h->ex) {
        r = explained_layer_lookup(I, l, key, root_key, ms, out, err);
    } else {
        /* unchecked_layer_lookup without an explanation (the global layer's configuration is
         * there: read above) */
        provider *provs = NULL;
        size_t n = 0;
        r = layer_providers(h, l, false, &provs, &n, err);
        if (r == LR_FOUND)
            r = n && !layer_lacks_key(I, l, provs, n, root_key) ? layer_walk(I, l, provs, n, root_key, ms, out, err)
                                                                 : LR_NOT_FOUND;
    }
    h->global_only = save_global_only;
    h->hiera3_scope = save_h3;
    check_leave(I, err);
    return r;
}

/* ---- the provider stack ---- */

typedef struct {
    inv *I;
    const char *key;      /* the whole key text */
    const char *root_key;
    const merge_strategy *ms;
} stack_arg;

/* LookupAdapter#lookup_global rewraps a LookupError without an issue code */
static void global_rewrap(inv *I, const char *key, herr *err)
{
    if (err->kind != HERR_LOOKUP)
        return;
    char *msg = xasprintf("Lookup of key '%s' failed: %s", I->top_key ? I->top_key : key, err->msg);
    free(err->msg);
    err->msg = msg;
    err->kind = HERR_PUPPET;
}

lr lookup_global(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    layer *l = global_layer(I->h);
    lr r = layer_key_lookup(I, l, key, root_key, ms, out, err);
    if (r == LR_ERROR)
        global_rewrap(I, key, err);
    return r;
}

lr lookup_in_environment(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    layer *l = env_layer(I->h, err);
    if (!l)
        return herr_isset(err) ? LR_ERROR : LR_NOT_FOUND;
    return layer_key_lookup(I, l, key, root_key, ms, out, err);
}

lr lookup_in_module(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (!I->module_name)
        return LR_NOT_FOUND;
    mod_state st;
    layer *l = inv_module_layer(I, &st, err);
    if (!l) {
        if (herr_isset(err))
            return LR_ERROR;
        if (I->h->ex)
            ex_module_event(I->h->ex, I->module_name, st == MOD_NOT_FOUND ? EV_MODULE_NOT_FOUND : EV_MODULE_PROVIDER_NOT_FOUND);
        return LR_NOT_FOUND;
    }
    return layer_key_lookup(I, l, key, root_key, ms, out, err);
}

static lr stack_variant(void *arg, size_t i, hv **out, herr *err)
{
    stack_arg *a = arg;
    switch (i) {
    case 0: return lookup_global(a->I, a->key, a->root_key, a->ms, out, err);
    case 1: return lookup_in_environment(a->I, a->key, a->root_key, a->ms, out, err);
    default: return lookup_in_module(a->I, a->key, a->root_key, a->ms, out, err);
    }
}

/* LookupAdapter#do_lookup without the dig: the merge over global, environment, module */
lr provider_stack(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err)
{
    if (I->h->global_only)
        return lookup_global(I, key, root_key, ms, out, err);
    if (ms_is_first(ms)) {
        /* strategy_lookup's first-found loop over the three variants, without the calls
         * through stack_variant (half the lookups of a batch come this way) */
        lr r = lookup_global(I, key, root_key, ms, out, err);
        if (r == LR_NOT_FOUND)
            r = lookup_in_environment(I, key, root_key, ms, out, err);
        if (r == LR_NOT_FOUND)
            r = lookup_in_module(I, key, root_key, ms, out, err);
        return r;
    }
    stack_arg a = {I, key, root_key, ms};
    return strategy_lookup(I->h, ms, 3, stack_variant, &a, out, err);
}

/* ---- what a lookup's walk depends on (lookup.c: answers remembered) ---- */

/* The probes of a direct plan whose files hold the key of kx, in the walk's order, into ks (at
 * most max); the count, or -1 when the plan is not direct or more probes hold it. From the key's
 * bitmap when it has one, else from its few files' numbers. */
static int plan_hits(const probe_plan *pl, const key_index *kx, uint8_t *ks, int max)
{
    if (!pl->direct)
        return -1;
    int nh = 0;
    for (size_t i = 0; i < pl->nwords; i++) {
        const struct plan_word *pw = &pl->words[i];
        uint64_t m = 0;
        if (kx->bits) {
            if (pw->word < kx->nwords)
                m = kx->bits[pw->word] & pw->bits;
        } else {
            for (uint32_t j = 0; j < kx->n; j++)
                if (kx->kids[j] / 64 == pw->word)
                    m |= 1ull << (kx->kids[j] % 64);
            m &= pw->bits;
        }
        for (; m; m &= m - 1) {
            if (nh == max)
                return -1;
            uint8_t k = pw->at[__builtin_ctzll(m)];
            int at = nh++;
            while (at && ks[at - 1] > k) {
                ks[at] = ks[at - 1];
                at--;
            }
            ks[at] = k;
        }
    }
    return nh;
}

/* Appends to buf (at most cap bytes from *at) the probes of l's plan whose files hold I's root
 * key, in the walk's order, as (file number, provider index) pairs after the tag byte; l NULL: no
 * layer. false when the layer cannot be told this way: not set up yet (its configuration, its
 * hierarchy, its plan: the walk makes them), a version 3 configuration, no room. */
static bool layer_signature(inv *I, const layer *l, char tag, unsigned char *buf, size_t *at, size_t cap)
{
    size_t pos = *at;
    if (pos >= cap)
        return false;
    buf[pos++] = (unsigned char)tag;
    if (l) {
        if (!l->cfg || l->cfg->version != 5 || !l->expanded || herr_isset(&l->cfg->lazy_err))
            return false;
        if (l->nprovs) {
            const probe_plan *pl = &l->plan;
            if (pl->state <= 0 || pl->provs != l->provs || pl->nprovs != l->nprovs)
                return false;
            const key_index *kx = kx_current(I->h->cache, I->root_key, I->root_len, I->root_code, &I->kx_gen, &I->kx);
            uint8_t ks[WALK_HITS];
            int nh = kx ? plan_hits(pl, kx, ks, WALK_HITS) : 0;
            if (nh >= 0) {
                if (pos + 8 * (size_t)nh > cap)
                    return false;
                for (int i = 0; i < nh; i++) {
                    memcpy(buf + pos, &pl->probes[ks[i]].kid, 4);
                    memcpy(buf + pos + 4, &pl->probes[ks[i]].prov, 4);
                    pos += 8;
                }
            } else if (kx && (!kx->bits || plan_meets(pl, kx->bits, kx->nwords))) {
                for (size_t k = 0; k < pl->nprobes; k++) {
                    if (!key_index_has(kx, pl->probes[k].kid))
                        continue;
                    if (pos + 8 > cap)
                        return false;
                    memcpy(buf + pos, &pl->probes[k].kid, 4);
                    memcpy(buf + pos + 4, &pl->probes[k].prov, 4);
                    pos += 8;
                }
            }
        }
    }
    *at = pos;
    return true;
}

/* The signature of what provider_stack's answer for I's key depends on, when it can be told
 * (appended to buf from *at; false otherwise): with a frozen cache, once the three layers are set
 * up and planned, the walk reads only the files of the probes holding the key, in order, grouped
 * by provider and layer; their values, when none is interpolated, and the merge strategy (the
 * caller's part of the signature) make the answer. */
bool answer_signature(inv *I, unsigned char *buf, size_t *at, size_t cap)
{
    hiera_ctx *h = I->h;
    if (!cache_is_frozen(h->cache) || h->ex || h->prov || h->global_only || !h->global || !h->env_init ||
        herr_isset(&h->env_provider_err))
        return false;
    if (!layer_signature(I, h->global, 'g', buf, at, cap) || !layer_signature(I, h->env, 'e', buf, at, cap))
        return false;
    const layer *ml = NULL;
    if (I->module_name) {
        const recent_name *known = recent_get(h->mod_recent, I->module_name, I->module_stable ? I->module_name : NULL);
        if (!known)
            return false;
        ml = known->obj;
    }
    return layer_signature(I, ml, 'm', buf, at, cap);
}

/* The first value of a layer's walk for I's key, the layer planned (layer_signature's terms):
 * 1 with *hit the key's entry in the first file holding it, 0 when none of the layer's files
 * holds it, -1 when the layer cannot be told this way. */
static int layer_first_hit(inv *I, const layer *l, key_hit **hit)
{
    if (!l)
        return 0;
    if (!l->cfg || l->cfg->version != 5 || !l->expanded || herr_isset(&l->cfg->lazy_err))
        return -1;
    if (!l->nprovs)
        return 0;
    const probe_plan *pl = &l->plan;
    if (pl->state <= 0 || pl->provs != l->provs || pl->nprovs != l->nprovs)
        return -1;
    const key_index *kx = kx_current(I->h->cache, I->root_key, I->root_len, I->root_code, &I->kx_gen, &I->kx);
    if (!kx)
        return 0;
    uint8_t ks[WALK_HITS];
    int nh = plan_hits(pl, kx, ks, WALK_HITS);
    if (nh == 0)
        return 0;
    if (nh > 0) {
        *hit = key_index_find(kx, pl->probes[ks[0]].kid);
        return *hit ? 1 : -1;
    }
    for (size_t k = 0; k < pl->nprobes; k++) {
        if (!key_index_has(kx, pl->probes[k].kid))
            continue;
        *hit = key_index_find(kx, pl->probes[k].kid);
        return *hit ? 1 : -1;
    }
    return 0;
}

int first_found_plain(inv *I, const char *key, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!cache_is_frozen(h->cache) || h->ex || h->prov || h->global_only || !h->global || !h->env_init ||
        herr_isset(&h->env_provider_err))
        return -1;
    /* a nested lookup (an interpolation's): what check_enter would refuse, the walk refuses */
    if (h->nested_lookups + 3 > MAX_NESTED_LOOKUPS || h->nstack + 1 >= MAX_STACK)
        return -1;
    for (size_t i = 0; i < h->nstack; i++)
        if (strcmp(h->stack[i], key) == 0)
            return -1;
    const layer *ml = NULL;
    if (I->module_name) {
        const recent_name *known = recent_get(h->mod_recent, I->module_name, I->module_stable ? I->module_name : NULL);
        if (!known)
            return -1;
        ml = known->obj;
    }
    const layer *ls[3] = {h->global, h->env, ml};
    size_t entered = 0; /* (the layers whose guard the walk passes: check_enter counts each) */
    for (size_t i = 0; i < 3; i++) {
        key_hit *hit = NULL;
        int r = layer_first_hit(I, ls[i], &hit);
        if (r < 0)
            return -1;
        entered += ls[i] != NULL;
        if (r == 0)
            continue;
        if (hit->flags == 0) {
            h->nested_lookups += entered;
            *out = hv_incref(hit->value);
            return 1;
        }
        /* a value to interpolate, as data_value does it, under the layer's guard (in the
         * global layer, its errors rewrapped as lookup_global does); not an invalid value, not a
         * value whose flags are not known yet: the walk tells */
        memo *m = cache_work_memo(h->cache);
        if (hit->flags != KEY_INTERP || !m)
            return -1;
        h->nested_lookups += entered - 1;
        if (!check_enter(I, key, err))
            return -2;
        h->walk_interps++;
        h->walk_rec.ok = false; /* (a nested lookup's: not a merged walk's own value) */
        hv *res = NULL;
        lr ir = interpolate_remembered(I, m, hit->value, &hit->deps, &hit->odds, &res, err);
        h->global_only = false; /* (as layer_key_lookup restores it: false, tested above) */
        check_leave(I, err);
        if (ir == LR_ERROR && i == 0)
            global_rewrap(I, key, err);
        if (ir == LR_FOUND) {
            *out = res;
            return 1;
        }
        hv_decref(res);
        /* (interpolation answers found or an error: scope misses are undef, nested lookups '';
         * were it not found, the walk would go on to the next file: the walk tells) */
        return ir == LR_NOT_FOUND ? -1 : -2;
    }
    h->nested_lookups += entered;
    return 0;
}
