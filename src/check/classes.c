/* classes.c - the rules about classes and their parameters (manifests read by
 * puppet/manifest.c): keys for parameters a class does not have, keys for classes that exist
 * nowhere, and values that do not match the parameter's type, with Puppet's own message
 * (types/ptype.c, the module's type aliases resolved). These run per data file, on the value
 * written there; nodes.c checks the value each node gets. */
#include "check/ck_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------------ types */

/* A parameter's type, parsed once (NULL when it does not parse or names a type we cannot
 * resolve: such parameters are not checked). */
typedef struct {
    hv *index;     /* "class::param" -> slot */
    ptype **types; /* NULL: not checked */
    size_t n;
    hv *unresolved; /* type name -> true */
} type_cache;

static const ptype *param_type(ck_env *e, type_cache *tc, const char *key, const pp_param *p)
{
    const hv *known = hv_hash_gets(tc->index, key);
    if (known)
        return tc->types[hv_int_val(known)];
    herr err = {0};
    ptype *t = ptype_parse_with(p->type, e->aliases, &err);
    herr_clear(&err);
    if (t) {
        char *ref = ptype_unresolved(t);
        if (ref) {
            hv_hash_sets(tc->unresolved, ref, hv_true());
            free(ref);
            ptype_free(t);
            t = NULL;
        }
    }
    tc->types = xrealloc(tc->types, (tc->n + 1) * sizeof *tc->types);
    tc->types[tc->n] = t;
    hv_hash_sets(tc->index, key, hv_int((int64_t)tc->n));
    tc->n++;
    return t;
}

/* ------------------------------------------------------------------ the value written in a file */

/* Whether a type mismatch of a merged key's partial value may be made good by other levels */
static bool partial_ok(const char *msg)
{
    return strstr(msg, "expects a value for key") || strstr(msg, "expects size to be");
}

static void check_value(ck_ctx *c, type_cache *tc, const ck_key *k, const ck_def *d, const pp_class *cls,
                        const pp_param *p)
{
    ck_env *e = c->env;
    const ptype *t = param_type(e, tc, k->name, p);
    if (!t)
        return;
    const hv *v = d->value;
    int merge;
    const hv *conv;
    ck_key_options(e, k->name, &merge, &conv);
    hv *owned = NULL;
    if (hv_has_interpolation(v, 0)) {
        /* interpolation gives strings (alias() keeps another key's value): only a type that takes
         * no string at all is certainly wrong here; the rest is judged per node */
        if (!hv_is(v, HV_STRING) || strstr(hv_str_ptr(v), "alias(") || ptype_may_match_string(t))
            return;
    }
    if (hv_is(v, HV_UNDEF) && p->has_default)
        return; /* undef from data leaves the default in place */
    if (merge == 1 && !hv_is(v, HV_ARRAY)) {
        owned = hv_array();
        hv_array_push(owned, hv_incref((hv *)v));
        v = owned;
    }
    if (conv) {
        herr err = {0};
        hv *cv = ptype_convert(conv, v, &err);
        herr_clear(&err);
        hv_decref(owned);
        if (!cv)
            return; /* the conversion fails: a lookup error, reported per node */
        owned = cv;
        v = cv;
    }
    char *msg = ptype_describe_param(t, v, p->name);
    /* a merge may make a partial value whole: lookup_options say so, or may say so where the
     * check cannot read (a level whose data it cannot see) */
    if (msg && (merge || e->opaque_level) && partial_ok(msg)) {
        free(msg);
        msg = NULL;
    }
    if (msg) {
        char *ref = ck_class_ref(cls->name);
        sbuf m = {0};
        sb_addf(&m, "%s: ", ref);
        for (char *q = msg; *q; q++) {
            if (*q == '\n')
                sb_adds(&m, "; ");
            else
                sb_addc(&m, *q);
        }
        ck_trap_hint(e, d, k->name, &m);
        ck_add(c, "parameter-type", 0, e->files[d->file].path, d->line, d->col, "%s", sb_str(&m));
        sb_free(&m);
        free(ref);
    }
    free(msg);
    hv_decref(owned);
}

/* ------------------------------------------------------------------ keys */

static bool looked_up(const ck_env *e, const ck_key *k)
{
    if (k->referenced)
        return true;
    for (size_t i = 0; i < e->pp->nlookups; i++) {
        const pp_lookup *l = &e->pp->lookups[i];
        if (pp_lookup_matches(l, k->name))
            return true;
    }
    return false;
}

static const char *closest_param(const pp_class *cls, const char *name)
{
    size_t len = strlen(name), cap = len < 4 ? 1 : len < 8 ? 2 : 3, bd = cap + 1;
    const char *best = NULL;
    for (size_t i = 0; i < cls->nparams; i++) {
        size_t d = ck_distance(name, cls->params[i].name, cap);
        if (d < bd) {
            bd = d;
            best = cls->params[i].name;
        }
    }
    /* a prefix or suffix of one (server -> servers, ntp_servers -> servers) */
    for (size_t i = 0; !best && i < cls->nparams; i++) {
        const char *pn = cls->params[i].name;
        size_t pl = strlen(pn);
        if (pl >= 4 && len >= 4 && (strstr(pn, name) || strstr(name, pn)))
            best = pn;
    }
    return best;
}

static const char *closest_class(const ck_env *e, const char *name)
{
    size_t len = strlen(name), cap = len < 8 ? 1 : 2, bd = cap + 1;
    const char *best = NULL;
    for (size_t i = 0; i < e->pp->nclasses; i++) {
        size_t d = ck_distance(name, e->pp->classes[i].name, cap);
        if (d < bd) {
            bd = d;
            best = e->pp->classes[i].name;
        }
    }
    return best;
}

/* Modules Puppet Enterprise installs itself (not in a Puppetfile) */
static bool pe_module(const char *m)
{
    static const char *const pe[] = {"puppet_enterprise", "sce_linux", "sce_windows", "cd4pe", "cem_linux", "cem_windows",
                                     NULL};
    for (size_t i = 0; pe[i]; i++)
        if (!strcmp(pe[i], m))
            return true;
    return !strncmp(m, "pe_", 3);
}

static void check_key(ck_ctx *c, type_cache *tc, const ck_key *k, hv *missing_modules)
{
    ck_env *e = c->env;
    const char *msep0 = strstr(k->name, "::");
    if (msep0 && e->dyn_lookups && hv_hash_getsn(e->dyn_lookups, k->name, (size_t)(msep0 - k->name))) {
        /* a lookup($var) of the module may read it: only the value's type is judged */
        const pp_class *cls = NULL;
        const pp_param *p = ck_class_param(e, k->name, &cls);
        if (p && p->type)
            for (size_t i = 0; i < k->ndefs; i++)
                if (!e->files[k->defs[i].file].orphan)
                    check_value(c, tc, k, &k->defs[i], cls, p);
        return;
    }
    const char *sep = NULL;
    for (const char *p = strstr(k->name, "::"); p; p = strstr(p + 2, "::"))
        sep = p;
    if (!sep || sep == k->name || !sep[2])
        return;
    char *cname = xstrndup(k->name, (size_t)(sep - k->name));
    const char *pname = sep + 2;
    const pp_class *cls = pp_find_class(e->pp, cname);
    bool refd = looked_up(e, k);
    if (cls) {
        const pp_param *p = NULL;
        for (size_t i = 0; i < cls->nparams && !p; i++)
            if (!strcmp(cls->params[i].name, pname))
                p = &cls->params[i];
        if (p && p->type) {
            for (size_t i = 0; i < k->ndefs; i++)
                if (!e->files[k->defs[i].file].orphan)
                    check_value(c, tc, k, &k->defs[i], cls, p);
        } else if (!p && cls->header_ok && !refd) {
            const char *best = closest_param(cls, pname);
            char *ref = ck_class_ref(cls->name);
            for (size_t i = 0; i < k->ndefs; i++) {
                const ck_def *d = &k->defs[i];
                ck_add(c, "unknown-parameter", 0, e->files[d->file].path, d->line, d->col,
                       "%s has no parameter '%s'%s%s%s (defined at %s:%u): the key is never used", ref, pname,
                       best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "", cls->file, cls->line);
            }
            free(ref);
        }
        free(cname);
        return;
    }
    if (refd) {
        free(cname);
        return;
    }
    const char *msep = strstr(k->name, "::");
    char *module = xstrndup(k->name, (size_t)(msep - k->name));
    bool present = ck_module_present(e, module);
    if (pp_is_define(e->pp, cname)) {
        for (size_t i = 0; i < k->ndefs; i++) {
            const ck_def *d = &k->defs[i];
            if (!e->files[d->file].orphan)
                ck_add(c, "unknown-class", 0, e->files[d->file].path, d->line, d->col,
                       "'%s' is a defined type, not a class: Puppet looks up no data for the parameters of defined "
                       "types, and nothing looks up '%s' by name",
                       cname, k->name);
        }
        free(module);
        free(cname);
        return;
    }
    if (!present && (ck_is_external_module(e, module) || pe_module(module))) {
        if (!pe_module(module))
            hv_hash_sets(missing_modules, module, hv_true());
        free(module);
        free(cname);
        return;
    }
    const char *best = closest_class(e, cname);
    for (size_t i = 0; i < k->ndefs; i++) {
        const ck_def *d = &k->defs[i];
        if (e->files[d->file].orphan)
            continue;
        if (present)
            ck_add(c, "unknown-class", 0, e->files[d->file].path, d->line, d->col,
                   "no class '%s' in module '%s'%s%s%s, and nothing looks up '%s' by name: the key is never used", cname,
                   module, best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "", k->name);
        else
            ck_add(c, "unknown-class", 0, e->files[d->file].path, d->line, d->col,
                   "no class '%s' (no module '%s' on the modulepath%s)%s%s%s, and nothing looks up '%s' by name", cname,
                   module, e->has_puppetfile ? " nor in the Puppetfile" : "", best ? "; did you mean '" : "",
                   best ? best : "", best ? "'?" : "", k->name);
    }
    free(module);
    free(cname);
}

void ck_classes(ck_ctx *c)
{
    ck_env *e = c->env;
    for (size_t i = 0; i < e->pp->nproblems; i++) {
        const pp_problem *p = &e->pp->problems[i];
        ck_add(c, "manifest-syntax", 0, p->file, p->line ? p->line : 1, p->col ? p->col : 1, "%s", p->message);
    }
    type_cache tc = {hv_hash(), NULL, 0, hv_hash()};
    hv *missing = hv_hash();
    for (size_t i = 0; i < e->nkeys; i++)
        check_key(c, &tc, &e->keys[i], missing);
    if (hv_hash_len(missing)) {
        sbuf b = {0};
        for (size_t i = 0; i < hv_hash_len(missing); i++)
            sb_addf(&b, "%s%s", i ? ", " : "", hv_str_ptr(hv_hash_key_at(missing, i)));
        ck_note(c, xasprintf("module%s of the Puppetfile not installed (the keys of %s classes are not checked): %s",
                             hv_hash_len(missing) == 1 ? "" : "s", hv_hash_len(missing) == 1 ? "its" : "their", sb_str(&b)));
        sb_free(&b);
    }
    if (hv_hash_len(tc.unresolved)) {
        sbuf b = {0};
        for (size_t i = 0; i < hv_hash_len(tc.unresolved) && i < 8; i++)
            sb_addf(&b, "%s%s", i ? ", " : "", hv_str_ptr(hv_hash_key_at(tc.unresolved, i)));
        if (hv_hash_len(tc.unresolved) > 8)
            sb_addf(&b, " and %zu more", hv_hash_len(tc.unresolved) - 8);
        ck_note(c, xasprintf("types not found on the modulepath (%s): parameters of these types are not checked", sb_str(&b)));
        sb_free(&b);
    }
    hv_decref(missing);
    for (size_t i = 0; i < tc.n; i++)
        ptype_free(tc.types[i]);
    free(tc.types);
    hv_decref(tc.index);
    hv_decref(tc.unresolved);
}

/* ------------------------------------------------------------------ lookup($var) */

static void add_candidate(hv *keys, const hv *v)
{
    if (hv_is(v, HV_STRING) && hv_str_len(v) && !strchr(hv_str_ptr(v), '%')) {
        hv_hash_sets(keys, hv_str_ptr(v), hv_true());
    } else if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (hv_is(hv_array_get(v, i), HV_STRING))
                add_candidate(keys, hv_array_get(v, i));
    }
}

void ck_resolve_lookups(ck_ctx *c)
{
    ck_env *e = c->env;
    pp_index *pp = e->pp;
    /* a session's next run: drop what the last one added */
    if (e->resolved_pp == pp)
        pp_lookups_truncate(pp, e->nlookups_read);
    e->resolved_pp = pp;
    e->nlookups_read = pp->nlookups;
    hv_decref(e->dyn_lookups);
    e->dyn_lookups = hv_hash();
    /* keys data interpolates with lookup()/alias(), whichever file was read first */
    for (size_t i = 0; i < e->nrefs; i++) {
        ck_key *k = ck_key_get(e, e->refs[i].key);
        if (k)
            k->referenced = true;
    }
    size_t n = pp->nlookups;
    for (size_t i = 0; i < n; i++) {
        const pp_lookup *l = &pp->lookups[i];
        if (!l->var)
            continue;
        /* what the variable may hold: the parameter's default, assignments in the same class or
         * defined type, what resource-like declarations of the class pass, and the parameter's data */
        hv *keys = hv_hash();
        const char *owner = l->owner;
        const char *var = l->var[0] == ':' && l->var[1] == ':' ? l->var + 2 : l->var;
        const pp_class *cls = owner ? pp_find_class(pp, owner) : NULL;
        for (size_t j = 0; cls && j < cls->nparams; j++)
            if (!strcmp(cls->params[j].name, var) && cls->params[j].default_str)
                hv_hash_sets(keys, cls->params[j].default_str, hv_true());
        for (size_t j = 0; owner && j < pp->nassigns; j++)
            if (!strcmp(pp->assigns[j].owner, owner) && !strcmp(pp->assigns[j].var, var))
                hv_hash_sets(keys, pp->assigns[j].value, hv_true());
        for (size_t j = 0; owner && j < pp->ndecls; j++) {
            const pp_decl *d = &pp->decls[j];
            if (!d->resource_like || strcmp(d->cls, owner))
                continue;
            for (size_t k = 0; k < d->nparams; k++)
                if (!strcmp(d->params[k], var) && d->values && d->values[k])
                    hv_hash_sets(keys, d->values[k], hv_true());
        }
        if (owner) {
            char *pk = xjoin(owner, "::", var, NULL);
            const ck_key *k = ck_key_get(e, pk);
            for (size_t d = 0; k && d < k->ndefs; d++)
                add_candidate(keys, k->defs[d].value);
            free(pk);
        }
        if (!hv_hash_len(keys)) {
            /* not known: keys of the module it is in are not claimed unused */
            const char *mod = owner ? owner : "";
            const char *sep = strstr(mod, "::");
            char *m = sep ? xstrndup(mod, (size_t)(sep - mod)) : xstrdup(mod);
            if (*m && !hv_hash_gets(e->dyn_lookups, m)) {
                char *at = xasprintf("%s:%u", l->file, l->line);
                hv_hash_sets(e->dyn_lookups, m, hv_str(at));
                free(at);
            }
            free(m);
        }
        for (size_t j = 0; j < hv_hash_len(keys); j++) {
            pp = e->pp;
            if (pp->nlookups == pp->caplookups) {
                pp->caplookups = pp->caplookups ? pp->caplookups * 2 : 16;
                pp->lookups = xrealloc(pp->lookups, pp->caplookups * sizeof *pp->lookups);
            }
            l = &pp->lookups[i];
            pp->lookups[pp->nlookups++] =
                (pp_lookup){xstrdup(hv_str_ptr(hv_hash_key_at(keys, j))), false, xstrdup(""), l->merged, xstrdup(l->file),
                            l->line, l->col, l->classes, l->scope_class ? xstrdup(l->scope_class) : NULL, l->scope_node,
                            l->conditional, NULL, l->owner ? xstrdup(l->owner) : NULL};
        }
        hv_decref(keys);
    }
    for (size_t i = 0; i < hv_hash_len(e->dyn_lookups); i++)
        ck_note(c, xasprintf("lookup() of a variable at %s: the keys it reads cannot be known here, so keys of module "
                             "'%s' are not reported as never used (unknown-class, unknown-parameter)",
                             hv_str_ptr(hv_hash_val_at(e->dyn_lookups, i)), hv_str_ptr(hv_hash_key_at(e->dyn_lookups, i))));
}
