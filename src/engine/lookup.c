/* lookup.c - the Hiera 5 lookup engine, following Puppet's lookup classes step by step
 * (lib/puppet/pops/lookup.rb, lookup_adapter.rb, configured_data_provider.rb,
 * data_hash_function_provider.rb, hiera_config.rb, location_resolver.rb): names tried in order,
 * lookup_options found first with a hash merge, then the merge strategy run over the layers
 * (global, environment, module), inside each layer over its hierarchy entries, inside each entry
 * over its locations; then dotted sub-keys are dug, then convert_to, then the type is asserted.
 * Every step reports to the explainer when one is attached (one NULL test otherwise).
 *
 * In layers, each file calling only those before it (lookup_int.h lists what they share):
 * lookup_layers.c (the global, environment and module layers and their legacy settings),
 * lookup_data.c (the data hash functions: a location's data), lookup_levels.c (a hierarchy
 * level's locations, the facts rule, remembered levels), lookup_walk.c (the recursion guard,
 * merge strategies over entries, layers and the provider stack), lookup_options.c
 * (lookup_options found, compiled and remembered), and this file: the adapter's lookup (the key
 * parsed, lookup_options, the stack, dig, convert_to, the type) and the context. */
#include "engine/lookup_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ small helpers */


/* The name of the key's module: the root key's text before its first "::". */
static char *module_of(const char *root)
{
    const char *q = strstr(root, "::");
    return q ? xstrndup(root, (size_t)(q - root)) : NULL;
}

/* ------------------------------------------------------------------ the adapter's lookup */

typedef struct {
    char *text;     /* the key as given */
    char *root;     /* root key */
    char *module;   /* module name or NULL */
    hv *segments;   /* all segments (root first); NULL for a plain key */
    bool plain;     /* text and root borrow the caller's key */
    bool borrowed;  /* everything borrowed from the caller and a frozen cache (lkey_parse_remembered) */
    size_t root_len;
    uint64_t root_code;
} lookup_key;

static void lkey_free(lookup_key *k)
{
    if (k->borrowed)
        return;
    if (!k->plain) {
        free(k->text);
        free(k->root);
    }
    free(k->module);
    hv_decref(k->segments);
}

static bool lkey_parse(const char *key, lookup_key *k, herr *err)
{
    memset(k, 0, sizeof *k);
    if (!strpbrk(key, "'\".")) {
        /* a plain key: no segments to split */
        k->text = k->root = (char *)key;
        k->plain = true;
        const char *q = strstr(key, "::");
        k->module = q ? xstrndup(key, (size_t)(q - key)) : NULL;
        return true;
    }
    hv *segs = split_key(key, strlen(key));
    if (!segs) {
        herr_set(err, HERR_LOOKUP, "Syntax error in key: '%s'", key);
        return false;
    }
    const hv *root = hv_array_get(segs, 0);
    if (hv_is(root, HV_STRING)) {
        k->root = xstrndup(hv_str_ptr(root), hv_str_len(root));
    } else {
        sbuf b = {0};
        ruby_to_s(&b, root);
        k->root = sb_take(&b);
    }
    k->text = xstrdup(key);
    k->module = module_of(k->root);
    k->segments = segs;
    return true;
}

/* Where a key's text is looked for among the keys parsed: its first and last eight bytes and
 * its length mixed (the text is compared anyway; hashing all of it cost 40 instructions a
 * lookup). */
static inline uint64_t recent_code(const char *key, size_t len)
{
    uint64_t a = 0, b = 0;
    if (len >= 8) {
        memcpy(&a, key, 8);
        memcpy(&b, key + len - 8, 8);
    } else {
        memcpy(&a, key, len);
    }
    uint64_t h = (a ^ (b << 29 | b >> 35) ^ len) * 0x9e3779b97f4a7c15ULL;
    return h ^ h >> 32;
}

/* The module name as one string for every key of the module (a new reference): the keys' entries
 * share it, and the module's layer and options are then found by its address (recent_get). */
static __attribute__((noinline)) hv *module_name_of(memo *m, const char *module)
{
    size_t len = strlen(module);
    char buf[128];
    if (len + 1 > sizeof buf)
        return hv_strn(module, len);
    buf[0] = 'M';
    memcpy(buf + 1, module, len);
    hv *known = memo_get(m, buf, len + 1);
    if (known)
        return hv_incref(known);
    hv *name = hv_strn(module, len);
    memo_put(m, buf, len + 1, name);
    return name;
}

/* lkey_parse, remembered by a frozen cache: a batch asks the same keys for every node. The
 * entry [root, module or undef, segments or false, root hash] lives in the cache's table; the
 * key's text is the caller's. */
static bool lkey_parse_remembered(hiera_ctx *h, const char *key, lookup_key *k, recent_key **rk, herr *err)
{
    *rk = NULL;
    memo *m = cache_work_memo(h->cache);
    recent_key *r = m ? cache_recent_at(h->cache, key) : NULL; /* (the same text as last time) */
    size_t len = r ? r->len : strlen(key);
    char stack_key[128];
    char *mk = len + 1 + sizeof len <= sizeof stack_key ? stack_key : NULL;
    if (m && mk) {
        uint64_t code = r ? r->code : recent_code(key, len);
        if (!r)
            r = cache_recent_find(h->cache, key, len, code);
        const hv *e = r ? r->entry : NULL;
        *rk = r;
        if (!e) {
            mk[0] = 'k';
            memcpy(mk + 1, &len, sizeof len);
            memcpy(mk + 1 + sizeof len, key, len);
            e = memo_get(m, mk, 1 + sizeof len + len);
            if (e)
                *rk = cache_recent_add(h->cache, key, len, code, e);
        }
        if (e) {
            recent_key local, *slot = *rk ? *rk : &local; /* (no slot: read into a local one) */
            if (slot == &local || !slot->parts) {
                const hv *module = hv_array_get(e, 1), *segs = hv_array_get(e, 2);
                slot->parts = true;
                slot->root = hv_str_ptr(hv_array_get(e, 0));
                slot->module = hv_is(module, HV_STRING) ? hv_str_ptr(module) : NULL;
                slot->segments = hv_is(segs, HV_ARRAY) ? segs : NULL;
                slot->root_len = hv_str_len(hv_array_get(e, 0));
                slot->root_code = (uint64_t)hv_int_val(hv_array_get(e, 3));
            }
            /* (the parts kept in the key's slot: no reading of the entry a lookup) */
            *k = (lookup_key){.text = (char *)key, .root = (char *)slot->root, .module = (char *)slot->module,
                              .segments = (hv *)slot->segments, .plain = slot->segments == NULL, .borrowed = true,
                              .root_len = slot->root_len, .root_code = slot->root_code};
            return true;
        }
    }
    if (!lkey_parse(key, k, err))
        return false;
    k->root_len = strlen(k->root);
    k->root_code = hv_str_code(k->root, k->root_len);
    if (m && mk) {
        hv *e = hv_array_sized(4);
        hv_array_push(e, hv_strn(k->root, k->root_len));
        hv_array_push(e, k->module ? module_name_of(m, k->module) : hv_undef());
        hv_array_push(e, k->segments ? hv_incref(k->segments) : hv_false());
        hv_array_push(e, hv_int((int64_t)k->root_code));
        memo_put(m, mk, 1 + sizeof len + len, e);
        hv_decref(e);
    }
    return true;
}

/* LookupAdapter#lookup_default_in_module */
static lr lookup_default_in_module(inv *I, const lookup_key *k, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!I->module_name)
        return LR_NOT_FOUND;
    mod_state st;
    layer *l = inv_module_layer(I, &st, err);
    if (!l)
        return herr_isset(err) ? LR_ERROR : LR_NOT_FOUND;
    if (!l->cfg->has_default_hierarchy)
        return LR_NOT_FOUND;
    explainer *ex = h->ex;
    char *title = xasprintf("Searching default_hierarchy of module \"%s\"", I->module_name);
    if (ex)
        ex_push(ex, EX_SCOPE, title, NULL);
    free(title);
    lr r = LR_FOUND;
    bool present;
    lo_compiled *c = lo_cache_get(h->dlo_index, h->dlo_cache, I->module_name, &present);
    if (!present) {
        inv meta = {h, I->module_name, LOOKUP_OPTIONS, NULL, NULL, LOOKUP_OPTIONS, 0, 0, 0, NULL, I->module_stable};
        inv_root(&meta);
        if (ex)
            ex_push(ex, EX_SCOPE, "Searching for \"lookup_options\"", NULL);
        merge_strategy *hash = ms_new(MS_HASH);
        hv *raw = NULL;
        lr lr_ = LR_NOT_FOUND;
        if (check_enter(&meta, LOOKUP_OPTIONS, err)) {
            lr_ = unchecked_layer_lookup(&meta, l, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, true, &raw, err);
            check_leave(&meta, err);
        } else {
            lr_ = LR_ERROR;
        }
        ms_free(hash);
        if (ex)
            ex_pop(ex);
        if (lr_ == LR_ERROR) {
            r = LR_ERROR;
        } else {
            hv *opts = lr_ == LR_FOUND && !hv_is(raw, HV_UNDEF) ? raw : NULL;
            if (opts && !validate_lookup_options(opts, I->module_name, err))
                r = LR_ERROR;
            else if (!compile_patterns(opts, &c, err))
                r = LR_ERROR;
            else
                lo_cache_put(&h->dlo_index, &h->dlo_cache, &h->ndlo_cache, I->module_name, c);
        }
        hv_decref(raw);
    }
    if (r == LR_FOUND) {
        hv *lo = extract_lookup_options(c, k->root, k->root_len, k->root_code);
        hv *merge = lo && hv_is(lo, HV_HASH) ? hv_hash_gets(lo, "merge") : NULL;
        bool ms_owned;
        merge_strategy *ms = merge_strategy_for(h, merge, &ms_owned, err);
        if (!ms) {
            r = LR_ERROR;
        } else {
            char *t = xasprintf("Searching for \"%s\"", k->text);
            if (ex)
                ex_push(ex, EX_SCOPE, t, NULL);
            free(t);
            if (check_enter(I, k->text, err)) {
                r = unchecked_layer_lookup(I, l, k->text, k->root, ms, true, out, err);
                check_leave(I, err);
            } else {
                r = LR_ERROR;
            }
            if (ex)
                ex_pop(ex);
            if (ms_owned)
                ms_free(ms);
        }
    }
    if (ex)
        ex_pop(ex);
    return r;
}

static lr dig(inv *I, const lookup_key *k, hv *value, hv **out, herr *err)
{
    if (hv_array_len(k->segments) < 2) {
        *out = hv_incref(value);
        return LR_FOUND;
    }
    return sub_lookup(I, k->text, k->segments, 1, value, out, err);
}

/* A lookup_options entry's value for one option: Ruby's opts[name] on whatever the entry is. */
static bool lo_option(hiera_ctx *h, const hv *lo, lo_name which, const hv **out, herr *err)
{
    static const char *const names[] = {"merge", "convert_to"};
    static const size_t lens[] = {5, 10};
    static uint64_t codes[2]; /* (hv_str_code of each name, computed once: every lookup asks) */
    const char *name = names[which];
    *out = NULL;
    if (!lo || hv_is(lo, HV_UNDEF))
        return true;
    if (hv_is(lo, HV_HASH)) {
        uint64_t code = __atomic_load_n(&codes[which], __ATOMIC_RELAXED);
        if (!code) {
            code = hv_str_code(name, lens[which]);
            __atomic_store_n(&codes[which], code, __ATOMIC_RELAXED);
        }
        *out = hv_hash_getsn_code(lo, name, lens[which], code);
        return true;
    }
    if (hv_is(lo, HV_STRING)) {
        /* String#[] with a string: the substring when present (a string the context keeps, one
         * per name: both may be in use at once) */
        if (strstr(hv_str_ptr(lo), name)) {
            if (!h->lo_names[which])
                h->lo_names[which] = hv_str(name);
            *out = h->lo_names[which];
        }
        return true;
    }
    herr_set(err, HERR_ERROR, "no implicit conversion of String into Integer");
    return false;
}

/* LookupAdapter#convert_result (*known: lo's convert_to when the caller has it, else NULL) */
static lr convert_result(inv *I, const char *key, const hv *lo, const hv *const *known, hv *value, hv **out, herr *err)
{
    const hv *convert_to = NULL;
    if (known)
        convert_to = *known;
    else if (!lo_option(I->h, lo, LO_CONVERT_TO, &convert_to, err))
        return LR_ERROR;
    if (!convert_to || hv_is(convert_to, HV_UNDEF)) {
        *out = hv_incref(value);
        return LR_FOUND;
    }
    const hv *type = hv_is(convert_to, HV_ARRAY) ? hv_array_get(convert_to, 0) : convert_to;
    if (hv_is(type, HV_STRING)) {
        herr perr = {0};
        ptype *t = ptype_parse(hv_str_ptr(type), &perr);
        if (!t) {
            herr_set(err, HERR_LOOKUP, "Invalid data type in lookup_options for key '%s' could not parse '%s', error: '%s", key,
                     hv_str_ptr(type), perr.msg ? perr.msg : "");
            herr_clear(&perr);
            return LR_ERROR;
        }
        ptype_free(t);
    }
    herr cerr = {0};
    hv *res = ptype_convert(convert_to, value, &cerr);
    if (!res) {
        herr_set(err, HERR_LOOKUP, "The convert_to lookup_option for key '%s' raised error: %s", key, cerr.msg ? cerr.msg : "");
        herr_clear(&cerr);
        return LR_ERROR;
    }
    if (I->h->ex) {
        /* StringConverter of [Type, args...]: the type (already parsed) prints bare */
        sbuf b = {0};
        sb_addc(&b, '[');
        if (hv_is(type, HV_STRING)) {
            ptype *t = ptype_parse(hv_str_ptr(type), NULL);
            char *ts = t ? ptype_to_s(t) : xstrdup(hv_str_ptr(type));
            sb_adds(&b, ts);
            free(ts);
            ptype_free(t);
        } else {
            puppet_string(&b, type);
        }
        for (size_t i = 1; hv_is(convert_to, HV_ARRAY) && i < hv_array_len(convert_to); i++) {
            sb_adds(&b, ", ");
            puppet_string(&b, hv_array_get(convert_to, i));
        }
        sb_addc(&b, ']');
        char *t = xasprintf("Applying convert_to lookup_option with arguments %s", sb_str(&b));
        ex_text(I->h->ex, t);
        free(t);
        sb_free(&b);
    }
    *out = res;
    return LR_FOUND;
}

/* The part of a remembered answer's key that tells what its walk's interpolations read (after
 * the walk's signature in buf, from *at, at most cap bytes): for each of the n lists (rec's
 * elements, or lists[]: one per value interpolated, in the walk's order), what each expression reads in this context, read under the
 * recursion guard as the walk reads it (the key entered). false when that cannot stand for the
 * interpolations (interp.c templates_key: a variable that is not a plain scalar, ...) or does not
 * fit; nothing counted either way. */
static bool answer_vars(inv *I, const char *key, const hv *rec, const hv *const *lists, size_t n, unsigned char *buf,
                        size_t *at, size_t cap)
{
    hiera_ctx *h = I->h;
    size_t counted = h->nested_lookups;
    herr ignore = {0};
    if (!check_enter(I, key, &ignore)) {
        herr_clear(&ignore);
        h->nested_lookups = counted;
        return false;
    }
    sbuf *k = &h->vkey;
    k->len = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = templates_key(I, rec ? hv_array_get(rec, i) : lists[i], k);
    check_leave(I, NULL);
    h->nested_lookups = counted;
    if (!ok || *at + 1 + k->len > cap)
        return false;
    buf[(*at)++] = 'V';
    memcpy(buf + *at, k->s, k->len);
    *at += k->len;
    return true;
}

/* A remembered answer's entry: an array of the value (found), or empty (not found). */
static void remember_answer(memo *am, const unsigned char *sig, size_t siglen, lr r, hv *v)
{
    hv *e = hv_array_sized(1);
    if (r == LR_FOUND)
        hv_array_push(e, hv_incref(v));
    memo_put(am, sig, siglen, e);
    hv_decref(e);
}

/* LookupAdapter#lookup */
static lr adapter_lookup(inv *parent, const char *key, const hv *merge, hv **out, herr *err)
{
    hiera_ctx *h = parent->h;
    explainer *ex = h->ex;
    if (key[0] == LOOKUP_OPTIONS[0] && strncmp(key, LOOKUP_OPTIONS, sizeof LOOKUP_OPTIONS - 1) == 0 &&
        (key[sizeof LOOKUP_OPTIONS - 1] == 0 || key[sizeof LOOKUP_OPTIONS - 1] == '.')) {
        if (ex) {
            ex_push(ex, EX_INVALID_KEY, LOOKUP_OPTIONS, NULL);
            ex_pop(ex);
        }
        return LR_NOT_FOUND;
    }
    /* a lookup made inside a walk whose interpolations are recorded: the walk's answer depends on
     * more than its files and variables (not remembered) */
    if (h->walk_rec.on)
        h->walk_rec.ok = false;
    lookup_key k;
    recent_key *rk;
    if (!lkey_parse_remembered(h, key, &k, &rk, err))
        return LR_ERROR;
    inv I = {h, k.module, k.text, NULL, NULL, k.root, k.root_len, k.root_code, 0, NULL, k.borrowed};
    /* the key's entry in the key index, as the key's last lookup left it (valid while the
     * index has not grown since: entry_kx checks the generation) */
    const hv *rk_entry = rk ? rk->entry : NULL;
    if (rk) {
        I.kx_gen = rk->kx_gen;
        I.kx = rk->kx;
    }
    lr r;
    if (ex && ex_only_options(ex)) {
        merge_strategy *hash = ms_new(MS_HASH);
        hv *v = NULL;
        r = provider_stack(&I, LOOKUP_OPTIONS, LOOKUP_OPTIONS, hash, &v, err);
        hv_decref(v);
        ms_free(hash);
        lkey_free(&k);
        if (r == LR_ERROR)
            return r;
        *out = hv_undef();
        return LR_FOUND;
    }
    lo_compiled *lc = NULL;
    if (!lookup_lookup_options(&I, k.module, &lc, err)) {
        lkey_free(&k);
        return LR_ERROR;
    }
    /* the key's options and their merge and convert_to: the same for every node whose compiled
     * options are the same shared ones (a batch asks for them node after node), so they are kept
     * with the key's recent entry */
    const hv *lo, *opt_merge = NULL, *conv = NULL;
    herr merge_err = {0};
    recent_options *ro = NULL;
    if (rk && lc && lc->shared) {
        /* (the place found last first: the nodes of a block mostly share their options) */
        if (rk->opts[rk->last_opt].lo_c == lc) {
            ro = &rk->opts[rk->last_opt];
        } else {
            for (unsigned i = 0; i < RECENT_OPTIONS && !ro; i++)
                if (rk->opts[i].lo_c == lc) {
                    ro = &rk->opts[i];
                    rk->last_opt = i;
                }
        }
    }
    bool kept = ro != NULL;
    bool options_ok = true; /* (lo_option fails for both names alike: for lo of a wrong kind) */
    if (kept) {
        lo = ro->lo;
        opt_merge = ro->merge;
        conv = ro->conv;
    } else {
        lo = extract_lookup_options(lc, k.root, k.root_len, k.root_code);
        bool merge_ok = lo_option(h, lo, LO_MERGE, &opt_merge, &merge_err);
        options_ok = merge_ok;
        herr ignore = {0};
        lo_option(h, lo, LO_CONVERT_TO, &conv, &ignore);
        herr_clear(&ignore);
        /* (what a string's String#[] gives belongs to the context) */
        kept = rk && lc && lc->shared && merge_ok && !hv_is(lo, HV_STRING);
        if (kept) {
            rk->last_opt = rk->next_opt;
            ro = &rk->opts[rk->next_opt];
            rk->next_opt = (rk->next_opt + 1) % RECENT_OPTIONS;
            *ro = (recent_options){lc, lo, opt_merge, conv, NULL};
        }
    }
    const hv *m = merge;
    if (!m) {
        if (herr_isset(&merge_err)) {
            herr_move(err, &merge_err);
            lkey_free(&k);
            return LR_ERROR;
        }
        m = opt_merge;
        if (m && hv_is(m, HV_UNDEF))
            m = NULL;
        if (m && ex)
            ex_merge_source(ex, LOOKUP_OPTIONS);
    }
    herr_clear(&merge_err);
    hv *found = NULL;
    /* a key converted to Sensitive is never shown in clear in an explanation */
    const hv *conv_type = hv_is(conv, HV_ARRAY) ? hv_array_get(conv, 0) : conv;
    bool redact = ex && hv_is(conv_type, HV_STRING) && strncmp(hv_str_ptr(conv_type), "Sensitive", 9) == 0;
    if (redact)
        ex_redact(ex, true);
    if (ex)
        ex_push(ex, EX_TOP, k.text, NULL);
    bool ms_owned = false;
    merge_strategy *ms;
    if (kept && m == ro->merge && ro->ms) {
        ms = ro->ms; /* (kept by the cache) */
    } else {
        ms = merge_strategy_for(h, m, &ms_owned, err);
        if (ms && !ms_owned && kept && m == ro->merge)
            ro->ms = ms;
    }
    if (!ms) {
        r = LR_ERROR;
    } else {
        hv *v = NULL;
        /* A merged key's answer remembered (frozen cache, a top-level lookup as the options give
         * it): under its key, options, merge and the probes its walk reads (answer_signature),
         * when that walk interpolated nothing. Nodes whose files holding the key are the same get
         * the same answer without the walk and its merges. A key whose signatures rarely come
         * again (one that interpolates, or held by the nodes' own files) stops looking after 64
         * tries with fewer than one in 8 found. */
        unsigned char sig[1024];
        size_t siglen = 0, walk_sig = 0;
        const hv *rec = NULL; /* the lists of what the walk interpolated, when it did */
        memo *am = NULL;
        bool answered = false;
        if (!merge && h->nstack == 0 && lc && lc->shared && !ms_is_first(ms) && (!rk || rk->ans_tries < 64 || rk->ans_found * 8 >= rk->ans_tries) &&
            (am = cache_work_memo(h->cache)) != NULL) {
            sig[0] = 'A';
            sig[1] = (unsigned char)h->version;
            memcpy(sig + 2, &lc, sizeof lc);
            memcpy(sig + 2 + sizeof lc, &k.root_len, sizeof k.root_len);
            siglen = 2 + sizeof lc + sizeof k.root_len;
            size_t tlen = strlen(k.text);
            if (siglen + tlen + 1 <= sizeof sig) {
                memcpy(sig + siglen, k.text, tlen + 1);
                siglen += tlen + 1;
                if (!answer_signature(&I, sig, &siglen, sizeof sig))
                    siglen = 0;
            } else {
                siglen = 0;
            }
            if (siglen) {
                const hv *e = memo_get(am, sig, siglen);
                walk_sig = siglen;
                if (e && hv_array_len(e) == 2) {
                    /* the walk interpolated variables: the answer is kept under what they read */
                    rec = hv_array_get(e, 0);
                    e = NULL;
                    if (answer_vars(&I, k.text, rec, NULL, hv_array_len(rec), sig, &siglen, sizeof sig))
                        e = memo_get(am, sig, siglen);
                    else
                        siglen = 0;
                }
                if (rk && rk->entry == rk_entry) {
                    rk->ans_tries++;
                    rk->ans_found += e != NULL;
                }
                if (e) {
                    answered = true;
                    if (hv_array_len(e)) {
                        v = hv_incref((hv *)hv_array_get(e, 0));
                        r = LR_FOUND;
                    } else {
                        r = LR_NOT_FOUND;
                    }
                }
            }
        }
        if (!answered && ms_is_first(ms) && !merge) {
            int ff = first_found_plain(&I, k.text, &v, err);
            if (ff != -1) {
                answered = true;
                r = ff == 1 ? LR_FOUND : ff == 0 ? LR_NOT_FOUND : LR_ERROR;
            }
        }
        if (!answered) {
            uint64_t interps = h->walk_interps;
            bool recording = siglen != 0; /* (a top-level lookup: no walk is being recorded) */
            if (recording) {
                h->walk_rec.on = true;
                h->walk_rec.ok = true;
                h->walk_rec.n = 0;
            }
            r = provider_stack(&I, k.text, k.root, ms, &v, err);
            if (recording)
                h->walk_rec.on = false;
            bool interpolated = h->walk_interps != interps;
            if (siglen && r != LR_ERROR && !interpolated && !rec) {
                remember_answer(am, sig, siglen, r, v);
            } else if (siglen && r != LR_ERROR && interpolated && h->walk_rec.ok && h->walk_rec.n) {
                /* interpolated variables only: the answer under what they read (the record of
                 * them kept under the walk's signature, for the nodes that meet it next) */
                bool same = !rec;
                if (rec && hv_array_len(rec) == h->walk_rec.n) {
                    same = true;
                    for (unsigned i = 0; i < h->walk_rec.n && same; i++)
                        same = hv_array_get(rec, i) == h->walk_rec.lists[i];
                }
                if (!rec) {
                    hv *lists = hv_array_sized(h->walk_rec.n);
                    for (unsigned i = 0; i < h->walk_rec.n; i++)
                        hv_array_push(lists, hv_incref((hv *)h->walk_rec.lists[i]));
                    hv *e = hv_array_sized(2);
                    hv_array_push(e, lists);
                    hv_array_push(e, hv_undef());
                    memo_put(am, sig, walk_sig, e);
                    hv_decref(e);
                    if (!answer_vars(&I, k.text, NULL, h->walk_rec.lists, h->walk_rec.n, sig, &siglen, sizeof sig))
                        same = false;
                }
                if (same)
                    remember_answer(am, sig, siglen, r, v);
            }
        }
        if (rk && rk->entry == rk_entry) {
            /* (the slot may have been given to another key by the nested lookups: then not) */
            rk->kx_gen = I.kx_gen;
            rk->kx = I.kx;
        }
        if (r == LR_FOUND) {
            r = dig(&I, &k, v, &found, err);
            hv_decref(v);
        }
        if (r == LR_NOT_FOUND && !h->global_only) {
            v = NULL;
            r = lookup_default_in_module(&I, &k, &v, err);
            if (r == LR_FOUND) {
                r = dig(&I, &k, v, &found, err);
                hv_decref(v);
            }
        }
        if (ms_owned)
            ms_free(ms);
    }
    if (ex)
        ex_pop(ex);
    if (r == LR_FOUND) {
        hv *converted = NULL;
        r = convert_result(&I, k.text, lo, options_ok ? &conv : NULL, found, &converted, err);
        hv_decref(found);
        if (r == LR_FOUND)
            *out = converted;
    }
    if (redact)
        ex_redact(ex, false);
    lkey_free(&k);
    return r;
}

static lr interp_global_lookup(inv *I, const char *key, hv **out, herr *err)
{
    hv *v = NULL;
    lr r = adapter_lookup(I, key, NULL, &v, err);
    if (r == LR_NOT_FOUND) {
        *out = hv_str(""); /* the default '' */
        return LR_FOUND;
    }
    if (r == LR_FOUND)
        *out = v;
    return r;
}

/* ------------------------------------------------------------------ context */

void hctx_free(hiera_ctx *h);

hiera_ctx *hctx_new(const char *codedir, const char *env_dir, const char *env_name, const char *global_config,
                    hv *scope, hiera_cache *cache)
{
    hiera_ctx *h = xcalloc(1, sizeof *h);
    h->codedir = xstrdup(codedir);
    h->env_name = xstrdup(env_name);
    h->env_dir = env_dir ? xstrdup(env_dir) : NULL;
    h->global_config = xstrdup(global_config);
    h->scope = hv_incref(scope);
    h->version = HIERA_PUPPET_7;
    if (cache) {
        h->cache = cache;
    } else {
        h->cache = cache_new();
        h->own_cache = true;
    }
    h->modules = hv_hash();
    static const struct interp_hooks hooks = {check_enter, check_leave, check_pass, interp_global_lookup};
    h->hooks = &hooks;
    return h;
}

void hctx_free(hiera_ctx *h)
{
    if (!h)
        return;
    free(h->codedir);
    free(h->env_name);
    hv_decref(h->settings_vars);
    hv_decref(h->server_vars);
    hv_decref(h->warned_vars);
    hiera_environment_free(h->own_env);
    hiera_settings_free(h->own_settings);
    free(h->env_dir);
    free(h->remap_envpath);
    free(h->global_config);
    hv_decref(h->scope);
    layer_free(h->global);
    layer_free(h->env);
    herr_clear(&h->env_provider_err);
    herr_clear(&h->env_err);
    for (size_t i = 0; i < h->nmod_layers; i++)
        layer_free(h->mod_layers[i]);
    free(h->mod_layers);
    hv_decref(h->modules);
    hv_decref(h->global_lo);
    herr_clear(&h->global_lo_err);
    hv_decref(h->env_lo);
    herr_clear(&h->env_lo_err);
    for (size_t i = 0; i < h->nlo_cache; i++)
        if (h->lo_cache[i] && !h->lo_cache[i]->shared)
            lo_free(h->lo_cache[i]);
    free(h->lo_cache);
    hv_decref(h->lo_index);
    for (size_t i = 0; i < h->ndlo_cache; i++)
        lo_free(h->dlo_cache[i]);
    free(h->dlo_cache);
    hv_decref(h->dlo_index);
    free(h->stack);
    interp_ctx_free(h);
    for (size_t i = 0; i < 2; i++) {
        free(h->mod_recent[i].name);
        free(h->lo_recent[i].name);
        hv_decref(h->lo_names[i]);
    }
    ex_free(h->ex);
    prov_free(h->prov);
    if (h->own_cache)
        cache_free(h->cache);
    free(h);
}

/* Lookup.lookup: the names in order, the first found wins; then the default. The type is asserted
 * on whichever value is returned. Returns LR_NOT_FOUND when nothing was found and there is no
 * default (Puppet's "did not find a value" LookupError; err gets that message). */
lr hctx_lookup(hiera_ctx *h, const char *const *names, size_t nnames, const ptype *type, const hv *dflt,
               const hv *merge, hv **out, herr *err)
{
    inv top = {h, NULL, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, false};
    for (size_t i = 0; i < nnames; i++) {
        hv *v = NULL;
        h->nested_lookups = 0;
        h->top_name = names[i];
        lr r = adapter_lookup(&top, names[i], merge, &v, err);
        h->top_name = NULL;
        if (r == LR_ERROR)
            return r;
        if (r == LR_FOUND) {
            if (type && !ptype_match(type, v)) {
                char *msg = ptype_mismatch(type, v, "Found value");
                herr_set(err, HERR_PUPPET, "%s", msg);
                free(msg);
                hv_decref(v);
                return LR_ERROR;
            }
            *out = v;
            return LR_FOUND;
        }
    }
    if (dflt) {
        if (type && !ptype_match(type, dflt)) {
            char *msg = ptype_mismatch(type, dflt, "Default value");
            herr_set(err, HERR_PUPPET, "%s", msg);
            free(msg);
            return LR_ERROR;
        }
        *out = hv_incref((hv *)dflt);
        return LR_FOUND;
    }
    if (!h->ex)
        return LR_NOT_FOUND; /* nobody reads the message of a plain not-found: none is made */
    sbuf b = {0};
    if (nnames == 1) {
        sb_addf(&b, "Function lookup() did not find a value for the name '%s'", names[0]);
    } else {
        sb_adds(&b, "Function lookup() did not find a value for any of the names [");
        for (size_t i = 0; i < nnames; i++)
            sb_addf(&b, "%s'%s'", i ? ", " : "", names[i]);
        sb_adds(&b, "]");
    }
    herr_set(err, HERR_LOOKUP, "%s", sb_str(&b));
    sb_free(&b);
    return LR_NOT_FOUND;
}
