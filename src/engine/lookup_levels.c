/* lookup_levels.c - a hierarchy level's locations (lookup.c gives the overview): paths, globs,
 * URIs and mapped paths interpolated and checked (the facts rule), and with a frozen cache the
 * levels' expansions remembered. */
#include "engine/lookup_int.h"
#include "engine/installed.h"
#include "base/once.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ locations */

static void add_location(location **locs, size_t *n, size_t *cap, char *path, char *original, bool exists, bool is_uri)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *locs = xrealloc(*locs, *cap * sizeof **locs);
    }
    (*locs)[(*n)++] = (location){.path = path, .original = original, .exists = exists, .is_uri = is_uri};
}

/* A location whose existence is checked now (what stat() said kept for its load). */
static void add_checked_location(hiera_cache *c, location **locs, size_t *n, size_t *cap, char *path, char *original)
{
    struct stat *st;
    bool exists = cache_file_exists_stat(c, path, &st);
    add_location(locs, n, cap, path, original, exists, false);
    (*locs)[*n - 1].st = st;
}

/* ------------------------------------------------------------------ the facts rule
 *
 * Facts (and other scope variables) are sent by nodes: what they may do to a location.
 *  - Always, as Puppet does: a NUL byte in an interpolated path, glob or datadir is an error
 *    (Ruby's Pathname raises ArgumentError "pathname contains null byte"; a URI gives URI's
 *    InvalidURIError). A C string would silently end at the NUL and drop the rest of the path.
 *  - Unless the caller opts out (hiera_options.unsafe_fact_paths, `--unsafe-fact-paths`): the
 *    interpolation may not add a ".." segment, may not make a relative location absolute, and
 *    in a glob may not add glob metacharacters. Such a location is refused: it is kept with the
 *    path Puppet computes (so --explain shows it as Puppet does) but treated as a file that does
 *    not exist, never read or matched (a glob matches nothing; a refused datadir refuses every
 *    location under it), and a warning says so once per text. The other levels still answer, as
 *    in Puppet whenever the file the facts point at does not exist: a fact that is missing where
 *    a location begins with it ("%{facts.dc}/common.yaml" gives "/common.yaml") is the common
 *    case. Puppet has no such rule (it follows "..", absolute values and glob characters that
 *    facts bring), so the opt-out gives Puppet's answers for such facts; data whose hiera.yaml
 *    itself writes ".." or globs is not affected, only what interpolation adds. */

/* The number of ".." segments of s; with strip_expressions, a segment holding a "%{...}"
 * expression never counts (it is the template of an interpolation). */
static size_t dotdot_segments(const char *s, size_t len, bool strip_expressions)
{
    size_t n = 0, seg = 0;
    bool expr = false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || s[i] == '/') {
            if (!expr && i - seg == 2 && s[seg] == '.' && s[seg + 1] == '.')
                n++;
            seg = i + 1;
            expr = false;
        } else if (strip_expressions && s[i] == '%' && i + 1 < len && s[i + 1] == '{') {
            const char *close = memchr(s + i, '}', len - i);
            if (close) {
                i = (size_t)(close - s);
                expr = true;
            }
        }
    }
    return n;
}

/* The number of glob metacharacters of s (outside "%{...}" with strip_expressions). */
static size_t glob_chars(const char *s, size_t len, bool strip_expressions)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (strip_expressions && i + 1 < len && s[i] == '%' && s[i + 1] == '{') {
            const char *close = memchr(s + i, '}', len - i);
            if (close) {
                i = (size_t)(close - s);
                continue;
            }
        }
        if (strchr("*?[]{}\\", s[i]))
            n++;
    }
    return n;
}

/* Checks the interpolated location res of template tmpl (a location relative to the datadir,
 * or the datadir itself) under the facts rule: false with err for a NUL byte; true otherwise,
 * with *refused set when the rule refuses the location (and a warning given once). */
static bool location_allowed(inv *I, const hlevel *lvl, const char *tmpl, const char *res, size_t reslen, bool glob,
                             bool uri, bool *refused, herr *err)
{
    *refused = false;
    if (memchr(res, 0, reslen)) {
        if (uri) {
            sbuf b = {0};
            hv *s = hv_strn(res, reslen);
            ruby_inspect(&b, s);
            hv_decref(s);
            herr_set(err, HERR_ERROR, "bad URI(is not URI?): %s", sb_str(&b));
            sb_free(&b);
        } else {
            herr_set(err, HERR_ERROR, "pathname contains null byte");
        }
        return false;
    }
    if (!I->h->strict_paths || uri)
        return true;
    const char *why = NULL;
    if (dotdot_segments(res, reslen, false) > dotdot_segments(tmpl, strlen(tmpl), true))
        why = "adds a '..' segment";
    else if (res[0] == '/' && tmpl[0] != '/')
        why = "makes the path absolute";
    else if (glob && glob_chars(res, reslen, false) > glob_chars(tmpl, strlen(tmpl), true))
        why = "adds glob characters";
    if (!why)
        return true;
    *refused = true;
    char *id = xasprintf("location-refused-%s-%s-%s", lvl ? lvl->name : "", tmpl, res);
    if (cache_warn_once(I->h->cache, id))
        diag_warn("location-refused", NULL, 0, 0,
                  "Interpolation of '%s' in hierarchy entry '%s' gave '%s', which %s: facts and variables may not "
                  "lead a location out of its datadir, so it is treated as missing (--unsafe-fact-paths follows "
                  "it, as Puppet does)",
                  tmpl, lvl ? lvl->name : "", res, why);
    free(id);
    return true;
}

/* Interpolates a location (or datadir) string: the result is checked with its length, so that
 * a NUL is seen, then returned as a C string; *refused tells whether the facts rule refuses it
 * (then it is never remembered: the warning comes from the check). */
static lr interp_location(inv *I, const hlevel *lvl, const char *s, bool glob, bool uri, char **out, bool *refused,
                          herr *err)
{
    *refused = false;
    if (!strstr(s, "%{")) {
        /* nothing to interpolate: the text itself, which the facts rule always allows */
        *out = xstrdup(s);
        return LR_FOUND;
    }
    /* a frozen cache remembers the checked text for the values of the variables it reads */
    memo *m = cache_work_memo(I->h->cache);
    sbuf key = {0};
    char *known = location_remembered(I, m, s, glob, uri, &key);
    if (known) {
        *out = known;
        return LR_FOUND;
    }
    hv *in = hv_str(s), *res = NULL;
    lr r = interpolate(I, in, false, &res, err);
    hv_decref(in);
    if (r != LR_FOUND) {
        sb_free(&key);
        return r;
    }
    sbuf b = {0};
    ruby_to_s(&b, res);
    hv_decref(res);
    if (!location_allowed(I, lvl, s, sb_str(&b), b.len, glob, uri, refused, err)) {
        sb_free(&key);
        sb_free(&b);
        return LR_ERROR;
    }
    if (key.len && !*refused) {
        hv *text = hv_strn(b.s ? b.s : "", b.len);
        memo_put(m, key.s, key.len, text);
        hv_decref(text);
    }
    sb_free(&key);
    *out = sb_take(&b);
    return LR_FOUND;
}

/* LocationResolver#resolve_paths, #expand_globs, #expand_uris, #expand_mapped_paths; with
 * dd_refused (the facts rule refused the datadir), every path and glob under it is refused. */
static lr resolve_locations(inv *I, const hcfg *cfg, const hlevel *lvl, const char *datadir, bool dd_refused,
                            location **locs, size_t *nlocs, herr *err)
{
    bool refused;
    size_t cap = 0;
    *locs = NULL;
    *nlocs = 0;
    bool is_default = cfg->path == NULL;
    switch (lvl->lkind) {
    case LOC_PATH:
    case LOC_PATHS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], false, false, &p, &refused, err) != LR_FOUND)
                return LR_ERROR;
            if (lvl->extension) {
                size_t pl = strlen(p), el = strlen(lvl->extension);
                if (pl < el || strcmp(p + pl - el, lvl->extension) != 0) {
                    char *q = xasprintf("%s%s", p, lvl->extension);
                    free(p);
                    p = q;
                }
            }
            char *full = pn_plus(datadir, p);
            free(p);
            struct stat *st = NULL;
            bool exists = !refused && !dd_refused && cache_file_exists_stat(I->h->cache, full, &st);
            if (is_default && !exists) {
                free(full);
                continue;
            }
            add_location(locs, nlocs, &cap, full, xstrdup(lvl->locs[i]), exists, false);
            (*locs)[*nlocs - 1].st = st;
        }
        return LR_FOUND;
    case LOC_GLOB:
    case LOC_GLOBS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], true, false, &p, &refused, err) != LR_FOUND)
                return LR_ERROR;
            char *pattern = pn_plus(datadir, p);
            free(p);
            if (refused || dd_refused) {
                free(pattern); /* (a refused glob matches nothing) */
                continue;
            }
            glob_result g = {0};
            if (cache_glob(I->h->cache, pattern, GLOB_LIMIT, &g) < 0) {
                glob_free(&g);
                herr_set(err, HERR_LOOKUP, "Glob pattern '%s' of hierarchy entry '%s' matches too many paths (more than %d) or needs too much work",
                         pattern, lvl->name, GLOB_LIMIT);
                free(pattern);
                return LR_ERROR;
            }
            for (size_t j = 0; j < g.n; j++) {
                add_location(locs, nlocs, &cap, g.paths[j], xstrdup(pattern), true, false);
                g.paths[j] = NULL;
            }
            glob_free(&g);
            free(pattern);
        }
        return LR_FOUND;
    case LOC_URI:
    case LOC_URIS:
        for (size_t i = 0; i < lvl->nlocs; i++) {
            char *p;
            if (interp_location(I, lvl, lvl->locs[i], false, true, &p, &refused, err) != LR_FOUND)
                return LR_ERROR; /* (the rule leaves URIs alone: never refused) */
            add_location(locs, nlocs, &cap, p, xstrdup(lvl->locs[i]), true, true);
        }
        return LR_FOUND;
    case LOC_MAPPED_PATHS: {
        if (lvl->nlocs != 3)
            return LR_FOUND;
        hv *vars = NULL;
        if (scope_lookup(I, lvl->locs[0], "mapped_path[0]", &vars, err) != LR_FOUND)
            return LR_ERROR;
        hv *list = NULL;
        if (hv_is(vars, HV_STRING)) {
            if (hv_str_len(vars)) {
                list = hv_array();
                hv_array_push(list, hv_incref(vars));
            }
        } else if (hv_is(vars, HV_ARRAY)) {
            list = hv_incref(vars);
        } else if (hv_is(vars, HV_HASH)) {
            list = hv_array();
            for (size_t i = 0; i < hv_hash_len(vars); i++) {
                hv *pair = hv_array();
                hv_array_push(pair, hv_incref(hv_hash_key_at(vars, i)));
                hv_array_push(pair, hv_incref(hv_hash_val_at(vars, i)));
                hv_array_push(list, pair);
            }
        }
        hv_decref(vars);
        lr r = LR_FOUND;
        for (size_t i = 0; list && i < hv_array_len(list); i++) {
            hv *local = hv_hash();
            hv_hash_sets(local, lvl->locs[1], hv_incref(hv_array_get(list, i)));
            const hv *save = I->local_scope;
            I->local_scope = local;
            char *p = NULL;
            r = interp_location(I, lvl, lvl->locs[2], false, false, &p, &refused, err);
            I->local_scope = save;
            hv_decref(local);
            if (r != LR_FOUND)
                break;
            char *full = pn_plus(datadir, p);
            free(p);
            if (refused || dd_refused)
                add_location(locs, nlocs, &cap, full, xstrdup(lvl->locs[2]), false, false);
            else
                add_checked_location(I->h->cache, locs, nlocs, &cap, full, xstrdup(lvl->locs[2]));
        }
        hv_decref(list);
        return r;
    }
    case LOC_NONE:
        return LR_FOUND;
    }
    return LR_FOUND;
}

/* ---- remembered levels
 *
 * With a frozen cache, where a version 5 level's paths or globs lead is a function of the level
 * and of what its templates (datadir and locations) read: its locations are remembered under
 * 'E', the level's address (its configuration lives as long as the cache) and those values, as
 * [path, original, exists, file number] for each location. Every node of a fleet expands every
 * level; most levels give the same few results (a role, a datacenter), and a remembered one is
 * copied instead of being interpolated, joined to its datadir and checked for existence again. */

typedef struct {
    char tag;
    const hlevel *lvl;
} level_id;

/* The key of lvl's remembered locations, in k; false when it cannot have one (k is then empty). */
static bool level_key(inv *I, memo *m, const hlevel *lvl, sbuf *k)
{
    k->len = 0;
    if (!m || I->h->ex || lvl->v3_datadir_abs || I->config->version != 5 ||
        (lvl->lkind != LOC_PATH && lvl->lkind != LOC_PATHS && lvl->lkind != LOC_GLOB && lvl->lkind != LOC_GLOBS))
        return false;
    level_id id;
    memset(&id, 0, sizeof id);
    id.tag = 'e';
    id.lvl = lvl;
    hv *deps = hv_incref(memo_get(m, &id, sizeof id));
    if (!deps) {
        /* what the templates read, listed once per level */
        const char **t = xmalloc((lvl->nlocs + 1) * sizeof *t);
        char *joined = pn_plus(I->config->root, lvl->datadir);
        t[0] = joined;
        for (size_t i = 0; i < lvl->nlocs; i++)
            t[i + 1] = lvl->locs[i];
        deps = templates_deps(I, t, lvl->nlocs + 1);
        free(joined);
        free(t);
        memo_put(m, &id, sizeof id, deps);
    }
    id.tag = 'E';
    sb_addn(k, (const char *)&id, sizeof id);
    sb_addc(k, I->h->strict_paths ? 's' : '-');
    bool usable = templates_key(I, deps, k);
    hv_decref(deps);
    if (!usable)
        k->len = 0;
    return usable;
}

/* The provider's locations from a remembered level, their texts borrowed from it (the provider
 * holds a reference: two allocations a location and node fewer, a fifth of a fleet run's). */
static void level_recall(provider *p, const hv *known)
{
    size_t n = hv_array_len(known) / 4;
    p->locs = n ? xmalloc(n * sizeof *p->locs) : NULL;
    p->nlocs = n;
    p->recalled = hv_incref((hv *)known);
    for (size_t j = 0; j < n; j++) {
        const hv *path = hv_array_get(known, 4 * j), *orig = hv_array_get(known, 4 * j + 1);
        p->locs[j] = (location){.path = (char *)hv_str_ptr(path),
                                .original = (char *)hv_str_ptr(orig),
                                .exists = hv_bool_val(hv_array_get(known, 4 * j + 2)),
                                .kid = (uint32_t)hv_int_val(hv_array_get(known, 4 * j + 3))};
    }
}


/* Remembers the provider's locations under key (its level's, from level_key), each with the
 * number of its data hash when the cache has loaded it already (location_load then finds it by
 * that number instead of by its path). */
static void level_remember(hiera_cache *c, memo *m, const sbuf *key, provider *p)
{
    bool known = false;
    file_format fmt = provider_format(p, &known);
    hv *rec = hv_array_sized(4 * p->nlocs);
    for (size_t j = 0; j < p->nlocs; j++) {
        const location *loc = &p->locs[j];
        hv_array_push(rec, hv_str(loc->path));
        hv_array_push(rec, hv_str(loc->original));
        hv_array_push(rec, hv_bool(loc->exists));
        uint32_t kid = known && p->lvl->fkind == FN_DATA_HASH && loc->exists ? cache_loaded_kid(c, loc->path, fmt) : 0;
        hv_array_push(rec, hv_int(kid));
    }
    memo_put(m, key->s, key->len, rec);
    hv_decref(rec);
}

/* installed_puppet8_has_hiera3, asked once per process (what is installed does not change) */
static bool hiera3_p8;
static void hiera3_p8_find(void) { hiera3_p8 = installed_puppet8_has_hiera3(); }
static bool hiera3_for_puppet8(void)
{
    static hiera_once once = HIERA_ONCE_INIT;
    hiera_once_run(&once, hiera3_p8_find);
    return hiera3_p8;
}

static lr expand_levels_body(hiera_ctx *h, layer *l, const hlevel *levels, size_t n, provider **out, size_t *nout,
                             herr *err)
{
    const hcfg *cfg = l->cfg;
    inv I = {h, NULL, NULL, NULL, cfg, NULL, 0, 0, 0, NULL, false};
    provider *provs = xcalloc(n ? n : 1, sizeof *provs);
    size_t np = 0;
    memo *m = cache_work_memo(h->cache);
    sbuf key = {0};
    for (size_t i = 0; i < n; i++) {
        const hlevel *lvl = &levels[i];
        provider *p = &provs[np];
        memset(p, 0, sizeof *p);
        p->lvl = lvl;
        size_t counted = h->nested_lookups;
        if (level_key(&I, m, lvl, &key)) {
            const hv *known = memo_get(m, key.s, key.len);
            if (known) {
                level_recall(p, known);
                goto resolved;
            }
            h->nested_lookups = counted; /* (the expansion counts its own) */
        }
        char *datadir;
        bool dd_refused = false;
        if (lvl->v3_datadir_abs) {
            /* Hiera 3 backends: the backend's :datadir: (interpolated), else the default */
            const char *dd = lvl->datadir;
            char *def = NULL;
            if (!dd)
                dd = def = xasprintf("%s/environments/%%{::environment}/hieradata", h->codedir);
            lr r = interp_location(&I, lvl, dd, false, false, &datadir, &dd_refused, err);
            free(def);
            if (r != LR_FOUND) {
                goto fail;
            }
        } else {
            char *joined = pn_plus(cfg->root, lvl->datadir);
            lr r = cfg->version == 4 ? (datadir = xstrdup(joined), LR_FOUND)
                                     : interp_location(&I, lvl, joined, false, false, &datadir, &dd_refused, err);
            free(joined);
            if (r != LR_FOUND) {
                goto fail;
            }
        }
        if (h->remap_envpath) {
            char *mapped = envpath_remap(datadir, h->remap_envpath, NULL);
            if (mapped) {
                free(datadir);
                datadir = mapped;
            }
        }
        if (lvl->lkind == LOC_NONE) {
            p->nil_location = true;
        } else {
            /* Puppet 8 resolves a version 5 level's locations (not its datadir, not its options)
             * with avoid_hiera_interpolation_errors */
            bool shield = h->shield_undefined;
            h->shield_undefined = h->version == HIERA_PUPPET_8 && cfg->version == 5;
            lr r = resolve_locations(&I, cfg, lvl, datadir, dd_refused, &p->locs, &p->nlocs, err);
            h->shield_undefined = shield;
            if (r != LR_FOUND) {
                free(datadir);
                goto fail;
            }
        }
        free(datadir);
        if (key.len)
            level_remember(h->cache, m, &key, p);
    resolved:
        if (!cfg->path && !p->nil_location && p->nlocs == 0) {
            free(p->locs);
            hv_decref(p->recalled);
            continue; /* default config and no existing paths */
        }
        if (lvl->options && cfg->version == 5) {
            hv *opts = NULL;
            if (interpolate(&I, lvl->options, false, &opts, err) != LR_FOUND) {
                goto fail;
            }
            p->options = opts;
        } else if (lvl->options) {
            hv *opts = NULL;
            if (interpolate(&I, lvl->options, false, &opts, err) != LR_FOUND) {
                goto fail;
            }
            p->options = opts;
        }
        p->options_refused = provider_options_refused(cfg->version, lvl->fname, p->options);
        if (lvl->fkind == FN_HIERA3_BACKEND && h->version == HIERA_PUPPET_8 && !hiera3_for_puppet8()) {
            /* Puppet 8's create_hiera3_backend_provider: a LookupError (rewrapped by
             * lookup_global) for every lookup that reaches the layer */
            herr_set(err, HERR_LOOKUP, "Hiera 3 is not installed");
            goto fail;
        }
        np++;
    }
    sb_free(&key);
    *out = provs;
    *nout = np;
    return LR_FOUND;
fail:
    /* (provs[np], the provider being made, is zeroed or partly made: freed with the others) */
    sb_free(&key);
    providers_free(provs, np + 1);
    return LR_ERROR;
}

/* The levels' providers; a version 3 configuration's (HieraConfigV3#create_configured_data_providers)
 * see the scope through Hiera::Scope. */
static lr expand_levels(hiera_ctx *h, layer *l, const hlevel *levels, size_t n, provider **out, size_t *nout, herr *err)
{
    bool save = h->hiera3_scope;
    if (l->cfg->version == 3)
        h->hiera3_scope = true;
    lr r = expand_levels_body(h, l, levels, n, out, nout, err);
    h->hiera3_scope = save;
    return r;
}

/* layer_providers the first time, or with the configuration's error. */
static __attribute__((noinline)) lr layer_providers_first(hiera_ctx *h, layer *l, bool use_default, provider **out,
                                                         size_t *n, herr *err)
{
    if (herr_isset(&l->cfg->lazy_err)) {
        herr_clear(err);
        *err = (herr){l->cfg->lazy_err.kind, xstrdup(l->cfg->lazy_err.msg),
                      l->cfg->lazy_err.file ? xstrdup(l->cfg->lazy_err.file) : NULL, l->cfg->lazy_err.line, 0};
        return LR_ERROR;
    }
    if (!l->expanded) {
        explainer *save = h->ex;
        h->ex = NULL; /* Puppet's explanation shows no hierarchy interpolation */
        lr r = expand_levels(h, l, l->cfg->levels, l->cfg->nlevels, &l->provs, &l->nprovs, err);
        if (r == LR_FOUND && l->cfg->has_default_hierarchy)
            r = expand_levels(h, l, l->cfg->dlevels, l->cfg->ndlevels, &l->dprovs, &l->ndprovs, err);
        if (r == LR_ERROR)
            config_undefined_variable(l->cfg, err);
        h->ex = save;
        if (r != LR_FOUND) {
            providers_free(l->provs, l->nprovs);
            l->provs = NULL;
            l->nprovs = 0;
            return r;
        }
        l->expanded = true;
    }
    *out = use_default ? l->dprovs : l->provs;
    *n = use_default ? l->ndprovs : l->nprovs;
    return LR_FOUND;
}

/* HieraConfig#configured_data_providers, once per context (the scope does not change). The
 * providers made, inline (every layer of every lookup asks). */
lr layer_providers(hiera_ctx *h, layer *l, bool use_default, provider **out, size_t *n, herr *err)
{
    if (__builtin_expect(l->expanded && !herr_isset(&l->cfg->lazy_err), 1)) {
        *out = use_default ? l->dprovs : l->provs;
        *n = use_default ? l->ndprovs : l->nprovs;
        return LR_FOUND;
    }
    return layer_providers_first(h, l, use_default, out, n, err);
}
