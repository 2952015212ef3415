/* lookup_int.h - what the files of the Hiera 5 lookup engine share (lookup.c gives the overview
 * and the order of the files: each calls only those before it): the limits, the functions one
 * file calls in another, and the few small ones every lookup passes through, inline here. */
#ifndef HIERA_LOOKUP_INT_H
#define HIERA_LOOKUP_INT_H

#include "engine/engine.h"
#include "engine/providers.h"
#include "base/diag.h"
#include "base/fsjournal.h"
#include "base/rubyver.h"
#include "crypto/eyaml.h"
#include "base/glob.h"
#include "engine/memo.h"
#include "engine/provenance.h"
#include "engine/settings.h"
#include "base/pathname.h"
#include "types/ptype.h"
#include "formats/render.h"
#include "base/rregex.h"

#include <string.h>

#define LOOKUP_OPTIONS "lookup_options"
#define GLOB_LIMIT 100000
#define MAX_STACK 1000
/* Nested lookups one top-level lookup may make. Depth alone does not bound the work: values
 * like "%{lookup('k2')}%{lookup('k2')}" over 30 keys need 2^30 lookups (Puppet takes hours). */
#define MAX_NESTED_LOOKUPS 1000000

/* NoMethodError on nil, as the context's Ruby words it */
#define NIL_NO_METHOD(m) (rubyver() == RUBY_33 ? "undefined method `" m "' for nil" : "undefined method `" m "' for nil:NilClass")

/* ---- lookup.c ---- */

/* Computes the invocation's root key length and hash once. */
static inline void inv_root(inv *I)
{
    I->root_len = strlen(I->root_key);
    I->root_code = hv_str_code(I->root_key, I->root_len);
}

/* ---- lookup_layers.c ---- */

void layer_free(layer *l);
void providers_free(provider *p, size_t n);
void plan_clear(probe_plan *pl);
char *module_dir(hiera_ctx *h, const char *name);
void recent_put(recent_name *r, const char *name, void *obj, int st, const char *stable);
layer *module_layer_known(hiera_ctx *h, const char *name, const char *stable, mod_state *state, herr *err);

/* The entry of r (two names, the last asked first) for name, or NULL; stable: name's address
 * when it lives as long as the cache (else NULL), found by address when it was asked before. */
static inline const recent_name *recent_get(recent_name *r, const char *name, const char *stable)
{
    if (stable)
        for (size_t i = 0; i < 2; i++)
            if (r[i].stable == stable)
                return &r[i];
    for (size_t i = 0; i < 2; i++)
        if (r[i].name && strcmp(r[i].name, name) == 0) {
            if (stable)
                r[i].stable = stable;
            return &r[i];
        }
    return NULL;
}

/* (the names asked last, inline: every lookup of a module's key asks) */
static inline layer *module_layer_of(hiera_ctx *h, const char *name, const char *stable, mod_state *state, herr *err)
{
    const recent_name *known = recent_get(h->mod_recent, name, stable);
    if (known) {
        *state = (mod_state)known->st;
        return known->obj;
    }
    return module_layer_known(h, name, stable, state, err);
}

/* module_layer for the module of I's key */
static inline layer *inv_module_layer(inv *I, mod_state *state, herr *err)
{
    return module_layer_of(I->h, I->module_name, I->module_stable ? I->module_name : NULL, state, err);
}

/* ---- lookup_data.c ---- */

void function_not_found(hiera_ctx *h, const layer *l, const provider *p, herr *err);
bool hiera3_backend_unloadable(hiera_ctx *h, provider *p);
char *infer_type_name(const hv *v);
file_format data_hash_format(const char *fname, bool *known);
bool location_load(hiera_ctx *h, provider *p, location *loc, herr *err);
int location_value(location *loc, const char *key, size_t len, uint64_t code, hv **out, herr *err);

/* data_hash_format of the provider's function, remembered in the provider. */
static inline file_format provider_format(provider *p, bool *known)
{
    if (!p->fmt_set) {
        p->fmt = data_hash_format(p->lvl->fname, &p->fmt_known);
        p->fmt_set = true;
    }
    *known = p->fmt_known;
    return p->fmt;
}

/* ---- lookup_levels.c ---- */


/* ---- lookup_walk.c ---- */

typedef lr (*variant_fn)(void *arg, size_t i, hv **out, herr *err);
bool check_refuse(inv *I, const char *name, herr *err);
bool check_pass(inv *I, const char *name);
void check_leave(inv *I, herr *err);
lr strategy_lookup(hiera_ctx *h, const merge_strategy *ms, size_t n, variant_fn fn, void *arg, hv **out, herr *err);
lr unchecked_layer_lookup(inv *I, layer *l, const char *key, const char *root_key, const merge_strategy *ms,
                          bool use_default, hv **out, herr *err);
lr lookup_global(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);
lr lookup_in_environment(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);
lr lookup_in_module(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);
lr provider_stack(inv *I, const char *key, const char *root_key, const merge_strategy *ms, hv **out, herr *err);
bool answer_signature(inv *I, unsigned char *buf, size_t *at, size_t cap);
/* provider_stack for a first-found lookup of key told from the layers' plans alone (a frozen
 * cache, every layer set up and planned, a key the recursion guard lets in): 1 with *out the
 * value of the first file holding the key (interpolated when it must be, outside the global
 * layer), 0 when no file holds it, -2 with err for an error, -1 when the walk must tell. */
int first_found_plain(inv *I, const char *key, hv **out, herr *err);

static inline bool check_enter(inv *I, const char *name, herr *err)
{
    hiera_ctx *h = I->h;
    for (size_t i = 0; i < h->nstack; i++)
        if (strcmp(h->stack[i], name) == 0)
            return check_refuse(I, name, err);
    if (++h->nested_lookups > MAX_NESTED_LOOKUPS || h->nstack >= MAX_STACK)
        return check_refuse(I, name, err);
    if (h->nstack == h->capstack) {
        h->capstack = h->capstack ? h->capstack * 2 : 16;
        h->stack = xrealloc(h->stack, h->capstack * sizeof *h->stack);
    }
    h->stack[h->nstack++] = (char *)name; /* borrowed: the caller's string outlives the guard */
    return true;
}

/* ---- lookup_options.c ---- */

void lo_free(lo_compiled *c);
bool validate_lookup_options(const hv *opts, const char *module, herr *err);
bool compile_patterns(const hv *opts, lo_compiled **out, herr *err);
hv *extract_lookup_options(lo_compiled *c, const char *root_key, size_t root_len, uint64_t root_code);
lo_compiled *lo_cache_get(hv *index, lo_compiled **cache, const char *module, bool *present);
void lo_cache_put(hv **index, lo_compiled ***cache, size_t *n, const char *module, lo_compiled *c);
merge_strategy *merge_strategy_for(hiera_ctx *h, const hv *merge, bool *owned, herr *err);
bool lookup_lookup_options(inv *I, const char *module, lo_compiled **compiled, herr *err);

#endif
