/* lookup_options.c - the lookup_options of a key (lookup.c gives the overview): each layer's
 * lookup_options hash found, validated, its patterns compiled, the merge over the layers, and
 * the result remembered per module; the merge strategy a key's options or the caller name. */
#include "engine/lookup_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ lookup_options */

void lo_free(lo_compiled *c)
{
    if (!c)
        return;
    hv_decref(c->memo);
    hv_decref(c->literal);
    for (size_t i = 0; i < c->npats; i++) {
        rregex_free(c->pats[i]);
        hv_decref(c->pat_values[i]);
    }
    free(c->pats);
    free(c->pat_values);
    free(c);
}

/* LookupAdapter#validate_lookup_options */
bool validate_lookup_options(const hv *opts, const char *module, herr *err)
{
    if (!opts)
        return true;
    if (!hv_is(opts, HV_HASH)) {
        herr_set(err, HERR_LOOKUP, "value of lookup_options must be a hash");
        return false;
    }
    if (!module)
        return true;
    char *pfx = xasprintf("%s::", module);
    size_t pl = strlen(pfx);
    bool ok = true;
    for (size_t i = 0; i < hv_hash_len(opts) && ok; i++) {
        const hv *k = hv_hash_key_at(opts, i);
        const char *ks = hv_is(k, HV_STRING) ? hv_str_ptr(k) : "";
        size_t kl = hv_is(k, HV_STRING) ? hv_str_len(k) : 0;
        if (kl && ks[0] == '^') {
            if (kl < pl + 1 || memcmp(ks + 1, pfx, pl) != 0) {
                herr_set(err, HERR_LOOKUP, "all lookup_options patterns must match a key starting with module name '%s'", module);
                ok = false;
            }
        } else if (kl < pl || memcmp(ks, pfx, pl) != 0) {
            herr_set(err, HERR_LOOKUP, "all lookup_options keys must start with module name '%s'", module);
            ok = false;
        }
    }
    free(pfx);
    return ok;
}

/* LookupAdapter#compile_patterns; NULL options give NULL. false with err on a bad regexp. */
bool compile_patterns(const hv *opts, lo_compiled **out, herr *err)
{
    *out = NULL;
    if (!opts)
        return true;
    lo_compiled *c = xcalloc(1, sizeof *c);
    for (size_t i = 0; i < hv_hash_len(opts); i++) {
        hv *k = hv_hash_key_at(opts, i), *v = hv_hash_val_at(opts, i);
        if (hv_is(k, HV_STRING) && hv_str_len(k) && hv_str_ptr(k)[0] == '^') {
            rregex *re = rregex_new(hv_str_ptr(k), hv_str_len(k), err);
            if (!re) {
                lo_free(c);
                return false;
            }
            c->pats = xrealloc(c->pats, (c->npats + 1) * sizeof *c->pats);
            c->pat_values = xrealloc(c->pat_values, (c->npats + 1) * sizeof *c->pat_values);
            c->pats[c->npats] = re;
            c->pat_values[c->npats] = hv_incref(v);
            c->npats++;
        } else {
            if (!c->literal)
                c->literal = hv_hash();
            hv_hash_set(c->literal, hv_incref(k), hv_incref(v));
        }
    }
    *out = c;
    return true;
}

static hv *extract_lookup_options_uncached(const lo_compiled *c, const char *root_key)
{
    if (c->literal) {
        hv *v = hv_hash_gets(c->literal, root_key);
        if (v && !hv_is(v, HV_UNDEF))
            return v;
    }
    for (size_t i = 0; i < c->npats; i++)
        if (rregex_search(c->pats[i], root_key, strlen(root_key)))
            return c->pat_values[i];
    return NULL;
}

/* LookupAdapter#extract_lookup_options_for_key, remembered per root key (BORROWED result);
 * root_len and root_code: the key's length and hv_str_code. */
hv *extract_lookup_options(lo_compiled *c, const char *root_key, size_t root_len, uint64_t root_code)
{
    if (!c)
        return NULL;
    if (!c->memo)
        c->memo = hv_hash();
    hv *known = hv_hash_getsn_code(c->memo, root_key, root_len, root_code);
    if (known)
        return hv_is(known, HV_BOOL) && !hv_bool_val(known) ? NULL : hv_array_get(known, 0);
    hv *found = extract_lookup_options_uncached(c, root_key);
    hv *box = hv_array();
    if (found)
        hv_array_push(box, hv_incref(found));
    hv_hash_sets(c->memo, root_key, found ? box : (hv_decref(box), hv_false()));
    return found;
}

/* Looks the key "lookup_options" up in one layer with the hash strategy. */
typedef lr (*layer_lookup_fn)(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);

static bool layer_lookup_options(inv *I, layer_lookup_fn fn, const char *module, hv **out, herr *err)
{
    merge_strategy *hash = ms_new(MS_HASH);
    hv *v = NULL;
    lr r = fn(I, LOOKUP_OPTIONS, I->root_key == NULL ? LOOKUP_OPTIONS : I->root_key, hash, &v, err);
    ms_free(hash);
    *out = NULL;
    if (r == LR_ERROR)
        return false;
    if (r == LR_NOT_FOUND)
        return true;
    if (hv_is(v, HV_UNDEF)) {
        hv_decref(v);
        return true;
    }
    if (!validate_lookup_options(v, module, err)) {
        hv_decref(v);
        return false;
    }
    *out = v;
    return true;
}

static bool global_lookup_options(inv *I, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!h->global_lo_done) {
        h->global_lo_done = true;
        if (!layer_lookup_options(I, lookup_global, NULL, &h->global_lo, &h->global_lo_err)) {
            h->global_lo_done = false; /* not remembered on failure */
            herr_move(err, &h->global_lo_err);
            return false;
        }
    }
    *out = h->global_lo;
    return true;
}

static bool env_lookup_options(inv *I, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!h->env_lo_done) {
        hv *global = NULL, *env = NULL;
        if (!global_lookup_options(I, &global, err))
            return false;
        if (!layer_lookup_options(I, lookup_in_environment, NULL, &env, err))
            return false;
        if (!global) {
            h->env_lo = env;
        } else if (!env) {
            h->env_lo = hv_incref(global);
        } else {
            merge_strategy *hash = ms_new(MS_HASH);
            h->env_lo = ms_merge(hash, global, env, false, err);
            ms_free(hash);
            hv_decref(env);
            if (!h->env_lo)
                return false;
        }
        h->env_lo_done = true;
    }
    *out = h->env_lo;
    return true;
}

lo_compiled *lo_cache_get(hv *index, lo_compiled **cache, const char *module, bool *present)
{
    hv *i = hv_hash_gets(index, module ? module : "");
    *present = i != NULL;
    return i ? cache[hv_int_val(i)] : NULL;
}

/* lo_cache_get of the context's options, the last two modules remembered */
static lo_compiled *lo_cache_recent(hiera_ctx *h, const char *module, const char *stable, bool *present)
{
    const recent_name *known = recent_get(h->lo_recent, module ? module : "", stable);
    if (known) {
        *present = true;
        return known->obj;
    }
    lo_compiled *c = lo_cache_get(h->lo_index, h->lo_cache, module, present);
    if (*present)
        recent_put(h->lo_recent, module ? module : "", c, 0, stable);
    return c;
}

void lo_cache_put(hv **index, lo_compiled ***cache, size_t *n, const char *module, lo_compiled *c)
{
    if (!*index)
        *index = hv_hash();
    *cache = xrealloc(*cache, (*n + 1) * sizeof **cache);
    (*cache)[*n] = c;
    hv_hash_sets(*index, module ? module : "", hv_int((int64_t)*n));
    (*n)++;
}

typedef struct {
    inv *I;
    hv *values[2];
    const char *names[2];
} lo_merge_arg;

static lr lo_merge_variant(void *arg, size_t i, hv **out, herr *err)
{
    lo_merge_arg *a = arg;
    explainer *ex = a->I->h->ex;
    if (ex) {
        ex_push(ex, EX_SCOPE, a->names[i], NULL);
        ex_found_str(ex, LOOKUP_OPTIONS, a->values[i]);
        ex_pop(ex);
    }
    *out = hv_incref(a->values[i]);
    return LR_FOUND;
}

/* LookupAdapter#retrieve_lookup_options */
static bool retrieve_lookup_options(inv *I, const char *module, lo_compiled **out, herr *err)
{
    hiera_ctx *h = I->h;
    inv meta = {h, I->module_name, LOOKUP_OPTIONS, NULL, NULL, LOOKUP_OPTIONS, 0, 0, 0, NULL, I->module_stable};
    inv_root(&meta);
    explainer *ex = h->ex;
    if (ex)
        ex_push(ex, EX_TOP, LOOKUP_OPTIONS, NULL);
    bool ok = true;
    hv *opts = NULL;
    if (h->global_only) {
        hv *g = NULL;
        ok = global_lookup_options(&meta, &g, err);
        opts = hv_incref(g);
    } else {
        hv *e = NULL;
        ok = env_lookup_options(&meta, &e, err);
        opts = hv_incref(e);
        if (ok && module) {
            bool present;
            lo_cache_get(h->lo_index, h->lo_cache, NULL, &present);
            if (!present) {
                lo_compiled *c = NULL;
                if (!compile_patterns(opts, &c, err))
                    ok = false;
                else
                    lo_cache_put(&h->lo_index, &h->lo_cache, &h->nlo_cache, NULL, c);
            }
            hv *mod_opts = NULL;
            merge_strategy *hash = ms_new(MS_HASH);
            hv *raw = NULL;
            lr r = ok ? lookup_in_module(&meta, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, &raw, err) : LR_ERROR;
            if (r == LR_ERROR) {
                ok = false;
            } else if (r == LR_FOUND) {
                if (!hv_is(raw, HV_UNDEF) && !validate_lookup_options(raw, module, err)) {
                    ok = false;
                } else {
                    mod_opts = hv_is(raw, HV_UNDEF) ? NULL : hv_incref(raw);
                    if (!opts) {
                        opts = mod_opts;
                        mod_opts = NULL;
                    } else if (mod_opts) {
                        char *mname = xasprintf("Module %s", I->module_name ? I->module_name : module);
                        lo_merge_arg a = {&meta, {opts, mod_opts}, {"Global and Environment", mname}};
                        hv *merged = NULL;
                        lr mr = strategy_lookup(h, hash, 2, lo_merge_variant, &a, &merged, err);
                        free(mname);
                        if (mr == LR_ERROR) {
                            ok = false;
                        } else {
                            hv_decref(opts);
                            opts = merged;
                        }
                    }
                }
            }
            hv_decref(raw);
            hv_decref(mod_opts);
            ms_free(hash);
        }
    }
    if (ok && !compile_patterns(opts, out, err))
        ok = false;
    hv_decref(opts);
    if (ex)
        ex_pop(ex);
    return ok;
}

/* LookupAdapter#lookup_lookup_options: the options that apply to the key (borrowed), or NULL */

/* x in hexadecimal, written at dst (what "%lx" prints, without printf); returns its length */
static size_t put_hex(char *dst, uintptr_t x)
{
    char buf[2 * sizeof x];
    size_t n = 0;
    do {
        buf[sizeof buf - ++n] = "0123456789abcdef"[x & 15];
        x >>= 4;
    } while (x);
    memcpy(dst, buf + sizeof buf - n, n);
    return n;
}

static void sb_add_hex(sbuf *b, uintptr_t x, char sep)
{
    char buf[2 * sizeof x + 1];
    size_t n = put_hex(buf, x);
    buf[n++] = sep;
    sb_addn(b, buf, n);
}

/* ms_from_value, remembered: with a frozen cache the merge options of lookup_options (and of a
 * batch's --merge) are the same objects for every node, and checking an options hash against its
 * type costs more than many lookups; the strategy made for each is kept with the cache. *owned
 * tells whether the caller frees the result. */
#define MS_MEMO_MAX 10000

typedef struct {
    hv *merge; /* held: its address stays its own */
    merge_strategy *ms;
} ms_memo;

static void ms_memo_free(void *p)
{
    ms_memo *m = p;
    hv_decref(m->merge);
    ms_free(m->ms);
    free(m);
}

merge_strategy *merge_strategy_for(hiera_ctx *h, const hv *merge, bool *owned, herr *err)
{
    *owned = true;
    if (!cache_is_frozen(h->cache) || (merge && !hv_is(merge, HV_HASH) && !hv_is(merge, HV_STRING)))
        return ms_from_value(merge, err);
    for (size_t i = 0; i < sizeof h->ms_recent / sizeof *h->ms_recent; i++)
        if (h->ms_recent[i].ms && h->ms_recent[i].merge == merge) {
            *owned = false;
            return h->ms_recent[i].ms;
        }
    char key[48] = "merge strategy ";
    size_t n = strlen(key);
    n += put_hex(key + n, (uintptr_t)merge);
    key[n] = 0;
    bool found;
    ms_memo *m = cache_shared_get(h->cache, key, &found);
    if (!m) {
        /* a caller making a new merge value for each lookup would make the table grow: it is
         * kept to MS_MEMO_MAX strategies (counted in a shared counter) */
        size_t *count = cache_shared_get(h->cache, "merge strategies", &found);
        if (!count) {
            count = xcalloc(1, sizeof *count);
            cache_shared_put(h->cache, "merge strategies", count, free);
        }
        if (*count >= MS_MEMO_MAX)
            return ms_from_value(merge, err);
        merge_strategy *ms = ms_from_value(merge, err);
        if (!ms)
            return NULL;
        ++*count;
        ms->stable = true;
        ms->memo = cache_work_memo(h->cache);
        m = xcalloc(1, sizeof *m);
        m->merge = merge ? hv_incref((hv *)merge) : NULL;
        m->ms = ms;
        cache_shared_put(h->cache, key, m, ms_memo_free);
    }
    *owned = false;
    h->ms_recent[h->ms_next].merge = merge;
    h->ms_recent[h->ms_next].ms = m->ms;
    h->ms_next = (h->ms_next + 1) % (sizeof h->ms_recent / sizeof *h->ms_recent);
    return m->ms;
}

/* Whether the lookup_options value of a location interpolates: asked of its file's key flags,
 * computed once per file (lo_signature runs for every node). */
static bool lo_interpolates(location *loc, const hv *lo)
{
    size_t len = sizeof LOOKUP_OPTIONS - 1;
    if (!loc->keyflags)
        return hv_has_interpolation(lo, 0);
    return cache_key_flags(loc->keyflags, LOOKUP_OPTIONS, len, hv_str_code(LOOKUP_OPTIONS, len), lo) & KEY_INTERP;
}

/* What the lookup_options of a context depend on: the lookup_options values of the data files
 * each layer consults, in order. Contexts with the same signature (nodes whose files hold the
 * same options) get the same compiled options, computed once per cache. NULL when sharing is not safe:
 * explaining (the search must be shown), errors, lookup_key functions, or options that
 * interpolate (they depend on the node). */
static char *lo_signature(hiera_ctx *h, const char *module)
{
    if (h->ex || h->prov || !cache_is_frozen(h->cache))
        return NULL; /* (without a frozen cache a file may change between contexts) */
    sbuf b = {0};
    herr e = {0};
    /* (no printf: this runs for every node) */
    sb_adds(&b, h->global_only ? "1|" : "0|");
    sb_adds(&b, module ? module : "");
    sb_adds(&b, "|");
    layer *ls[3] = {global_layer(h), NULL, NULL};
    bool ok = global_config(h, ls[0], &e);
    if (ok && !h->global_only) {
        ls[1] = env_layer(h, &e);
        ok = !herr_isset(&e);
        if (ok && module) {
            mod_state st;
            ls[2] = module_layer(h, module, &st, &e);
            ok = !herr_isset(&e);
            char t[4] = {'m', (char)('0' + (int)st), '|', 0};
            sb_adds(&b, t);
        }
    }
    for (int i = 0; ok && i < 3; i++) {
        layer *l = ls[i];
        if (!l)
            continue;
        char t[4] = {'L', (char)('0' + i), '|', 0};
        sb_adds(&b, t);
        provider *provs = NULL;
        size_t n = 0;
        if (layer_providers(h, l, false, &provs, &n, &e) != LR_FOUND) {
            ok = false;
            break;
        }
        for (size_t j = 0; ok && j < n; j++) {
            provider *p = &provs[j];
            bool known;
            provider_format(p, &known);
            if (p->lvl->fkind != FN_DATA_HASH || !known || p->nil_location || p->options_refused) {
                ok = false;
                break;
            }
            for (size_t k = 0; ok && k < p->nlocs; k++) {
                location *loc = &p->locs[k];
                if (!loc->exists)
                    continue;
                if (loc->is_uri) {
                    ok = false;
                    break;
                }
                hv *data = location_data(h, l, p, loc, &e);
                const hv *lo = data ? hv_hash_gets(data, LOOKUP_OPTIONS) : NULL;
                if (!data || (lo && lo_interpolates(loc, lo)))
                    ok = false;
                else if (lo)
                    /* the options themselves: a frozen cache keeps each file's value, so the
                     * same file contributes the same object to every context */
                    sb_add_hex(&b, (uintptr_t)lo, ';');
            }
        }
    }
    herr_clear(&e);
    if (!ok) {
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

static void lo_free_shared(void *c) { lo_free(c); }

/* LookupAdapter#lookup_lookup_options, up to the options compiled for the module (*compiled,
 * BORROWED; NULL for none): extract_lookup_options gives a key's own */
bool lookup_lookup_options(inv *I, const char *module, lo_compiled **compiled, herr *err)
{
    hiera_ctx *h = I->h;
    bool present;
    lo_compiled *c = lo_cache_recent(h, module, I->module_stable && module == I->module_name ? module : NULL, &present);
    if (!present) {
        char *sig = lo_signature(h, module);
        bool found = false;
        if (sig)
            c = cache_shared_get(h->cache, sig, &found);
        if (!found) {
            if (!retrieve_lookup_options(I, module, &c, err)) {
                free(sig);
                return false;
            }
            if (sig) {
                if (!c)
                    c = xcalloc(1, sizeof *c);
                c->shared = true;
                cache_shared_put(h->cache, sig, c, lo_free_shared);
            }
        }
        free(sig);
        lo_cache_put(&h->lo_index, &h->lo_cache, &h->nlo_cache, module, c);
    }
    *compiled = c;
    return true;
}
