/* plan.c - what can differ between two snapshots (plan.h). */
#include "diff/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/pathname.h"
#include "base/rregex.h"
#include "engine/cache.h"
#include "engine/config.h"
#include "engine/engine.h"

#define LOOKUP_OPTIONS "lookup_options"

typedef struct {
    const char *abs; /* BORROWED from the snapshot */
    char *rel;
    file_format fmt;
    const hv *value; /* NULL when err is set */
    const herr *err;
    char *module;    /* the module whose folder holds the file, or NULL */
    bool paired;
    bool same;       /* paired with a file of the same value */
} pfile;

typedef struct {
    const snapshot *s;
    const char *root;
    pfile *f;
    size_t n, cap;
    hv *index;   /* "<fmt>:<rel>" -> position in f */
    hv *moddirs; /* relative module folder -> module name */
} side;

typedef struct {
    const dplan_opts *o;
    bool full;
    hv *reasons, *files;
    hv *allkeys;    /* every top-level key of either side's data -> true */
    hv *changed;    /* keys changed in the files -> true */
    hv *lo_changes; /* [module | undef, old | undef, new | undef, rel] */
} plan;

/* ------------------------------------------------------------------ files */

static char *relative(const char *root, const char *abs)
{
    size_t rl = root ? strlen(root) : 0;
    while (rl > 1 && root[rl - 1] == '/')
        rl--;
    if (rl && strncmp(abs, root, rl) == 0 && abs[rl] == '/')
        return xstrdup(abs + rl + 1);
    return xstrdup(abs);
}

static char *index_key(file_format fmt, const char *rel) { return xasprintf("%d:%s", (int)fmt, rel); }

static const char *module_of(const side *sd, const char *rel)
{
    for (size_t i = 0; i < hv_hash_len(sd->moddirs); i++) {
        const hv *d = hv_hash_key_at(sd->moddirs, i);
        size_t dl = hv_str_len(d);
        if (strncmp(rel, hv_str_ptr(d), dl) == 0 && rel[dl] == '/')
            return hv_str_ptr(hv_hash_val_at(sd->moddirs, i));
    }
    return NULL;
}

static void side_load(side *sd, const snapshot *s, const char *root)
{
    memset(sd, 0, sizeof *sd);
    sd->s = s;
    sd->root = root;
    sd->index = hv_hash();
    sd->moddirs = hv_hash();
    hv *d = snapshot_describe(s);
    const hv *configs = hv_hash_gets(d, "configs");
    for (size_t i = 0; i < hv_array_len(configs); i++) {
        const hv *c = hv_array_get(configs, i);
        const hv *lk = hv_hash_gets(c, "layer"), *mod = hv_hash_gets(c, "module");
        if (!hv_is(lk, HV_STRING) || strcmp(hv_str_ptr(lk), "module") || !hv_is(mod, HV_STRING))
            continue;
        char *dir = pn_dirname(hv_str_ptr(hv_hash_gets(c, "path")));
        char *rel = relative(root, dir);
        hv_hash_sets(sd->moddirs, rel, hv_incref((hv *)mod));
        free(rel);
        free(dir);
    }
    hv_decref(d);
    size_t it = 0;
    const char *path;
    file_format fmt;
    snapshot_file sf;
    while (snapshot_next_file(s, &it, &path, &fmt, &sf)) {
        if (sd->n == sd->cap) {
            sd->cap = sd->cap ? sd->cap * 2 : 64;
            sd->f = xrealloc(sd->f, sd->cap * sizeof *sd->f);
        }
        pfile *f = &sd->f[sd->n];
        f->abs = path;
        f->rel = relative(root, path);
        f->fmt = fmt;
        f->value = sf.value;
        f->err = sf.err;
        const char *m = fmt == FMT_CONFIG ? NULL : module_of(sd, f->rel);
        f->module = m ? xstrdup(m) : NULL;
        f->paired = false;
        f->same = false;
        char *k = index_key(fmt, f->rel);
        hv_hash_sets(sd->index, k, hv_int((int64_t)sd->n));
        free(k);
        sd->n++;
    }
}

static void side_free(side *sd)
{
    for (size_t i = 0; i < sd->n; i++) {
        free(sd->f[i].rel);
        free(sd->f[i].module);
    }
    free(sd->f);
    hv_decref(sd->index);
    hv_decref(sd->moddirs);
}

static pfile *side_find(side *sd, file_format fmt, const char *rel)
{
    char *k = index_key(fmt, rel);
    const hv *i = hv_hash_gets(sd->index, k);
    free(k);
    return i ? &sd->f[hv_int_val(i)] : NULL;
}

/* ------------------------------------------------------------------ the plan */

/* A top-level key's name: a string, or a symbol (yaml_data makes ":k:" the key "k"); NULL for
 * keys of other kinds (no lookup can name them). */
static const char *key_name(const hv *k)
{
    return hv_is(k, HV_STRING) || hv_is(k, HV_SYMBOL) ? hv_str_ptr(k) : NULL;
}

static void go_full(plan *p, char *reason)
{
    p->full = true;
    hv_array_push(p->reasons, hv_str(reason));
    free(reason);
}

static hv *file_record(const pfile *f, const char *status)
{
    hv *r = hv_hash();
    hv_hash_sets(r, "path", hv_str(f->rel));
    hv_hash_sets(r, "status", hv_str(status));
    hv_hash_sets(r, "kind", hv_str(f->fmt == FMT_CONFIG ? "config" : "data"));
    return r;
}

/* A data file's top as Puppet's data functions take it: a hash (undef: an empty file). */
static bool hashish(const hv *v) { return hv_is(v, HV_HASH) || hv_is(v, HV_UNDEF); }

static void mark(plan *p, hv *keys, const char *k)
{
    if (!hv_hash_gets(p->changed, k))
        hv_hash_sets(p->changed, k, hv_true());
    if (keys)
        hv_array_push(keys, hv_str(k));
}

static void note_lookup_options(plan *p, const pfile *f, const hv *old, const hv *new_)
{
    if ((!old && !new_) || (old && new_ && hv_identical(old, new_)))
        return;
    hv *rec = hv_array();
    hv_array_push(rec, f->module ? hv_str(f->module) : hv_undef());
    hv_array_push(rec, old ? hv_incref((hv *)old) : hv_undef());
    hv_array_push(rec, new_ ? hv_incref((hv *)new_) : hv_undef());
    hv_array_push(rec, hv_str(f->rel));
    hv_array_push(p->lo_changes, rec);
}

/* A data file on one side only (old NULL: added; new NULL: removed). */
static void data_alone(plan *p, const pfile *f, bool added)
{
    hv *rec = file_record(f, added ? "added" : "removed");
    if (!f->value || !hashish(f->value)) {
        go_full(p, xasprintf("%s was %s and %s", f->rel, added ? "added" : "removed",
                             f->value ? "its top is not a hash" : "it does not parse"));
    } else {
        hv *keys = hv_array();
        for (size_t i = 0; i < hv_hash_len(f->value); i++) {
            const char *name = key_name(hv_hash_key_at(f->value, i));
            if (!name)
                continue;
            if (strcmp(name, LOOKUP_OPTIONS) == 0)
                note_lookup_options(p, f, added ? NULL : hv_hash_val_at(f->value, i),
                                    added ? hv_hash_val_at(f->value, i) : NULL);
            else
                mark(p, keys, name);
        }
        hv_hash_sets(rec, "keys", keys);
    }
    hv_array_push(p->files, rec);
}

static void data_both(plan *p, const pfile *a, const pfile *b)
{
    if (!a->value || !b->value) {
        if (file_same_bytes(a->abs, b->abs))
            return;
        hv_array_push(p->files, file_record(b, "modified"));
        const pfile *bad = !b->value ? b : a;
        go_full(p, xasprintf("%s does not parse on the %s side: %s", bad->rel, bad == a ? "old" : "new",
                             bad->err && bad->err->msg ? bad->err->msg : "error"));
        return;
    }
    if (hv_identical(a->value, b->value)) {
        ((pfile *)b)->same = true;
        return;
    }
    hv *rec = file_record(b, "modified");
    if (!hashish(a->value) || !hashish(b->value)) {
        go_full(p, xasprintf("%s changed and its top is not a hash on the %s side", a->rel,
                             !hashish(a->value) ? "old" : "new"));
        hv_array_push(p->files, rec);
        return;
    }
    hv *keys = hv_array();
    /* (a key that turned from a symbol into a string of the same name is a change of both names:
     * conservative, as is a nested one compared as it is) */
    for (size_t i = 0; i < hv_hash_len(a->value); i++) {
        const hv *k = hv_hash_key_at(a->value, i), *v = hv_hash_val_at(a->value, i);
        const char *name = key_name(k);
        if (!name)
            continue;
        const hv *w = hv_hash_get(b->value, k);
        if (w && hv_identical(v, w))
            continue;
        if (strcmp(name, LOOKUP_OPTIONS) == 0)
            note_lookup_options(p, a, v, w);
        else
            mark(p, keys, name);
    }
    for (size_t i = 0; i < hv_hash_len(b->value); i++) {
        const hv *k = hv_hash_key_at(b->value, i);
        const char *name = key_name(k);
        if (!name || hv_hash_get(a->value, k))
            continue;
        if (strcmp(name, LOOKUP_OPTIONS) == 0)
            note_lookup_options(p, a, NULL, hv_hash_val_at(b->value, i));
        else
            mark(p, keys, name);
    }
    hv_hash_sets(rec, "keys", keys);
    hv_array_push(p->files, rec);
}

static void config_both(plan *p, const pfile *a, const pfile *b)
{
    if (a->value && b->value && hv_identical(a->value, b->value))
        return;
    if (file_same_bytes(a->abs, b->abs))
        return;
    hv_array_push(p->files, file_record(b, "modified"));
    go_full(p, xasprintf("%s changed", a->rel));
}

static void collect_keys(hv *set, const side *sd)
{
    for (size_t i = 0; i < sd->n; i++) {
        const pfile *f = &sd->f[i];
        if (f->fmt == FMT_CONFIG || !hv_is(f->value, HV_HASH))
            continue;
        for (size_t j = 0; j < hv_hash_len(f->value); j++) {
            const char *name = key_name(hv_hash_key_at(f->value, j));
            if (name && strcmp(name, LOOKUP_OPTIONS) != 0 && !hv_hash_gets(set, name))
                hv_hash_sets(set, name, hv_true());
        }
    }
}

/* ------------------------------------------------------------------ lookup_options */

/* Marks what the entry named name (a key or a ^pattern) applies to; false (and full) when the
 * pattern does not compile. */
static bool mark_entry(plan *p, const char *name, size_t len, const char *rel)
{
    if (len == 0 || name[0] != '^') {
        mark(p, NULL, name);
        return true;
    }
    herr err = {0};
    rregex *re = rregex_new(name, len, &err);
    if (!re) {
        go_full(p, xasprintf("lookup_options in %s: the pattern %s does not compile: %s", rel, name,
                             err.msg ? err.msg : ""));
        herr_clear(&err);
        return false;
    }
    for (size_t i = 0; i < hv_hash_len(p->allkeys); i++) {
        const hv *k = hv_hash_key_at(p->allkeys, i);
        if (rregex_search(re, hv_str_ptr(k), hv_str_len(k)))
            mark(p, NULL, hv_str_ptr(k));
    }
    rregex_free(re);
    return true;
}

static bool usable_options(plan *p, const hv *lo, const char *rel, const char *side_name)
{
    if (hv_is(lo, HV_UNDEF))
        return true;
    if (!hv_is(lo, HV_HASH)) {
        go_full(p, xasprintf("lookup_options in %s is not a hash on the %s side", rel, side_name));
        return false;
    }
    for (size_t i = 0; i < hv_hash_len(lo); i++)
        if (!hv_is(hv_hash_key_at(lo, i), HV_STRING)) {
            go_full(p, xasprintf("lookup_options in %s has a key that is not a string on the %s side", rel, side_name));
            return false;
        }
    return true;
}

static bool is_pattern(const hv *k) { return hv_str_len(k) && hv_str_ptr(k)[0] == '^'; }

/* The order in which the patterns both sides have come (the first that matches a key wins). */
static bool same_pattern_order(const hv *a, const hv *b)
{
    size_t j = 0;
    for (size_t i = 0; i < hv_hash_len(a); i++) {
        const hv *k = hv_hash_key_at(a, i);
        if (!is_pattern(k) || !hv_hash_get(b, k))
            continue;
        while (j < hv_hash_len(b) && !(is_pattern(hv_hash_key_at(b, j)) && hv_hash_get(a, hv_hash_key_at(b, j))))
            j++;
        if (j == hv_hash_len(b) || !hv_eql(hv_hash_key_at(b, j), k))
            return false;
        j++;
    }
    return true;
}

static void lookup_options_change(plan *p, const hv *rec)
{
    const hv *module = hv_array_get(rec, 0), *old = hv_array_get(rec, 1), *new_ = hv_array_get(rec, 2);
    const char *rel = hv_str_ptr(hv_array_get(rec, 3));
    mark(p, NULL, LOOKUP_OPTIONS); /* for lookup('lookup_options') */
    if (hv_is(module, HV_STRING)) {
        /* a module's options are checked against its namespace: any change may fail its keys */
        char *pfx = xasprintf("%s::", hv_str_ptr(module));
        size_t pl = strlen(pfx);
        for (size_t i = 0; i < hv_hash_len(p->allkeys); i++) {
            const hv *k = hv_hash_key_at(p->allkeys, i);
            if (hv_str_len(k) >= pl && memcmp(hv_str_ptr(k), pfx, pl) == 0)
                mark(p, NULL, hv_str_ptr(k));
        }
        free(pfx);
    }
    if (!usable_options(p, old, rel, "old") || !usable_options(p, new_, rel, "new"))
        return;
    const hv *sides[2] = {old, new_};
    for (int s = 0; s < 2; s++) {
        const hv *lo = sides[s], *other = sides[1 - s];
        for (size_t i = 0; i < hv_hash_len(lo); i++) {
            const hv *k = hv_hash_key_at(lo, i), *v = hv_hash_val_at(lo, i);
            const hv *w = hv_hash_get(other, k);
            if (w && hv_identical(v, w))
                continue;
            if (!mark_entry(p, hv_str_ptr(k), hv_str_len(k), rel))
                return;
        }
    }
    if (hv_is(old, HV_HASH) && hv_is(new_, HV_HASH) && !same_pattern_order(old, new_)) {
        for (size_t i = 0; i < hv_hash_len(old); i++)
            if (is_pattern(hv_hash_key_at(old, i)) &&
                !mark_entry(p, hv_str_ptr(hv_hash_key_at(old, i)), hv_str_len(hv_hash_key_at(old, i)), rel))
                return;
    }
}

/* ------------------------------------------------------------------ interpolation */

typedef struct {
    hv *deps; /* root key -> keys whose values interpolate it */
    const hv *key;
} dep_walk;

static void add_dep(const char *root, size_t len, void *data)
{
    dep_walk *w = data;
    hv *list = hv_hash_getsn(w->deps, root, len);
    if (!list) {
        list = hv_array();
        hv_hash_set(w->deps, hv_strn(root, len), list);
    }
    size_t n = hv_array_len(list);
    if (n && hv_array_get(list, n - 1) == w->key)
        return; /* (the same key again: its values are walked one after the other) */
    hv_array_push(list, hv_incref((hv *)w->key));
}

/* (skip_same: leave out the files whose value the other side has too: walked there) */
static void collect_deps(hv *deps, const side *sd, bool skip_same)
{
    for (size_t i = 0; i < sd->n; i++) {
        const pfile *f = &sd->f[i];
        if (f->fmt == FMT_CONFIG || !hv_is(f->value, HV_HASH) || (skip_same && f->same))
            continue;
        for (size_t j = 0; j < hv_hash_len(f->value); j++) {
            const hv *k = hv_hash_key_at(f->value, j);
            const char *name = key_name(k);
            if (!name || strcmp(name, LOOKUP_OPTIONS) == 0)
                continue;
            hv *key = hv_is(k, HV_STRING) ? hv_incref((hv *)k) : hv_str(name);
            dep_walk w = {deps, key};
            interp_lookup_roots(hv_hash_val_at(f->value, j), add_dep, &w);
            hv_decref(key);
        }
    }
}

/* ------------------------------------------------------------------ result */

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The keys of set (a hash of string keys) as a sorted array; only those also in filter, when
 * given. */
static hv *sorted_keys(const hv *set, const hv *filter)
{
    size_t n = hv_hash_len(set), m = 0;
    const char **names = xmalloc((n ? n : 1) * sizeof *names);
    for (size_t i = 0; i < n; i++) {
        const hv *k = hv_hash_key_at(set, i);
        if (!filter || hv_hash_get(filter, k))
            names[m++] = hv_str_ptr(k);
    }
    qsort(names, m, sizeof *names, cmp_cstr);
    hv *out = hv_array_sized(m);
    for (size_t i = 0; i < m; i++)
        hv_array_push(out, hv_str(names[i]));
    free(names);
    return out;
}

/* The absolute data folders (as hiera.yaml writes them) of a side's configurations that are not
 * under its root: one under Puppet's default environmentpath is read in the side's own tree
 * ("mapped", see envpath_remap); any other is outside both trees ("outside": the same live files,
 * or none, on both sides). */
static void side_datadirs(hv *out, const snapshot *s, const char *root, const char *name)
{
    hv *d = snapshot_describe(s);
    const hv *configs = hv_hash_gets(d, "configs");
    hiera_cache *cache = cache_new();
    for (size_t i = 0; i < hv_array_len(configs); i++) {
        const hv *c = hv_array_get(configs, i);
        if (!hv_truthy(hv_hash_gets(c, "exists")))
            continue;
        const char *path = hv_str_ptr(hv_hash_gets(c, "path"));
        const char *lk = hv_str_ptr(hv_hash_gets(c, "layer"));
        layer_kind kind = !strcmp(lk, "global") ? LAYER_GLOBAL : !strcmp(lk, "environment") ? LAYER_ENV : LAYER_MODULE;
        bool ignored = false;
        herr err = {0};
        hcfg *cfg = config_load(cache, path, kind, &ignored, &err);
        herr_clear(&err);
        for (size_t l = 0; cfg && l < cfg->nlevels + cfg->ndlevels; l++) {
            const hlevel *lvl = l < cfg->nlevels ? &cfg->levels[l] : &cfg->dlevels[l - cfg->nlevels];
            if (!lvl->datadir || lvl->datadir[0] != '/')
                continue;
            size_t rl = root ? strlen(root) : 0;
            while (rl > 1 && root[rl - 1] == '/')
                rl--;
            if (rl && !strncmp(lvl->datadir, root, rl) && (lvl->datadir[rl] == '/' || !lvl->datadir[rl]))
                continue;
            const char *from = NULL;
            char *m = envpath_remap(lvl->datadir, "/", &from);
            free(m);
            hv *rec = hv_hash();
            hv_hash_sets(rec, "side", hv_str(name));
            char *rel = relative(root, path);
            hv_hash_sets(rec, "config", hv_str(rel));
            free(rel);
            hv_hash_sets(rec, "level", hv_str(lvl->name ? lvl->name : ""));
            hv_hash_sets(rec, "datadir", hv_str(lvl->datadir));
            hv_hash_sets(rec, "kind", hv_str(from ? "mapped" : "outside"));
            if (from)
                hv_hash_sets(rec, "environmentpath", hv_str(from));
            hv_array_push(out, rec);
        }
        if (cfg)
            config_free(cfg);
    }
    cache_free(cache);
    hv_decref(d);
}

static int cmp_record_path(const void *x, const void *y)
{
    const hv *a = *(const hv *const *)x, *b = *(const hv *const *)y;
    int r = strcmp(hv_str_ptr(hv_hash_gets(a, "path")), hv_str_ptr(hv_hash_gets(b, "path")));
    return r ? r : strcmp(hv_str_ptr(hv_hash_gets(a, "status")), hv_str_ptr(hv_hash_gets(b, "status")));
}

static int cmp_hv_str(const void *x, const void *y)
{
    return strcmp(hv_str_ptr(*(const hv *const *)x), hv_str_ptr(*(const hv *const *)y));
}

/* An array's elements sorted with cmp (a new array). */
static hv *sorted_array(const hv *a, int (*cmp)(const void *, const void *), size_t from)
{
    size_t n = hv_array_len(a);
    hv **v = xmalloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = hv_array_get(a, i);
    if (n > from)
        qsort(v + from, n - from, sizeof *v, cmp);
    hv *out = hv_array_sized(n);
    for (size_t i = 0; i < n; i++)
        hv_array_push(out, hv_incref(v[i]));
    free(v);
    return out;
}

hv *dplan_compare(const snapshot *old, const snapshot *new_, const dplan_opts *o)
{
    plan p = {.o = o, .reasons = hv_array(), .files = hv_array(), .allkeys = hv_hash(), .changed = hv_hash(),
              .lo_changes = hv_array()};
    side a, b;
    side_load(&a, old, o->old_root);
    side_load(&b, new_, o->new_root);
    if (o->full)
        go_full(&p, xstrdup("every key was asked for (--full)"));
    if (o->full_reason)
        go_full(&p, xstrdup(o->full_reason));

    for (size_t i = 0; i < a.n; i++) {
        pfile *f = &a.f[i];
        pfile *g = side_find(&b, f->fmt, f->rel);
        if (!g) {
            if (f->fmt == FMT_CONFIG) {
                hv_array_push(p.files, file_record(f, "removed"));
                go_full(&p, xasprintf("%s was removed", f->rel));
            } else {
                data_alone(&p, f, false);
            }
            continue;
        }
        g->paired = true;
        if (f->fmt == FMT_CONFIG)
            config_both(&p, f, g);
        else
            data_both(&p, f, g);
    }
    for (size_t i = 0; i < b.n; i++) {
        pfile *g = &b.f[i];
        if (g->paired)
            continue;
        if (g->fmt == FMT_CONFIG) {
            hv_array_push(p.files, file_record(g, "added"));
            go_full(&p, xasprintf("%s was added", g->rel));
        } else {
            data_alone(&p, g, true);
        }
    }

    collect_keys(p.allkeys, &a);
    collect_keys(p.allkeys, &b);
    hv *universe;
    if (o->keys) {
        universe = hv_hash();
        for (size_t i = 0; i < o->nkeys; i++) {
            if (!hv_hash_gets(universe, o->keys[i]))
                hv_hash_sets(universe, o->keys[i], hv_true());
            if (!hv_hash_gets(p.allkeys, o->keys[i]))
                hv_hash_sets(p.allkeys, o->keys[i], hv_true());
        }
    } else {
        universe = hv_incref(p.allkeys);
    }
    for (size_t i = 0; i < hv_array_len(p.lo_changes) && !p.full; i++)
        lookup_options_change(&p, hv_array_get(p.lo_changes, i));

    hv *dirty = NULL, *reached = NULL;
    if (!p.full) {
        /* the changed keys, then every key whose values interpolate a key already in */
        hv *deps = hv_hash();
        collect_deps(deps, &a, false);
        collect_deps(deps, &b, true);
        hv *seen = hv_hash();
        hv *queue = hv_array();
        for (size_t i = 0; i < hv_hash_len(p.changed); i++) {
            hv_hash_set(seen, hv_incref(hv_hash_key_at(p.changed, i)), hv_true());
            hv_array_push(queue, hv_incref(hv_hash_key_at(p.changed, i)));
        }
        for (size_t q = 0; q < hv_array_len(queue); q++) {
            const hv *readers = hv_hash_get(deps, hv_array_get(queue, q));
            for (size_t i = 0; i < hv_array_len(readers); i++) {
                hv *k = hv_array_get(readers, i);
                if (hv_hash_get(seen, k))
                    continue;
                hv_hash_set(seen, hv_incref(k), hv_true());
                hv_array_push(queue, hv_incref(k));
            }
        }
        dirty = sorted_keys(universe, seen);
        reached = sorted_keys(seen, NULL);
        hv_decref(queue);
        hv_decref(seen);
        hv_decref(deps);
    }

    hv *r = hv_hash();
    hv_hash_sets(r, "full", hv_bool(p.full));
    /* in a stable order: the snapshots list their files as their threads read them */
    size_t given = (o->full ? 1 : 0) + (o->full_reason ? 1 : 0);
    hv_hash_sets(r, "reasons", sorted_array(p.reasons, cmp_hv_str, given));
    hv_decref(p.reasons);
    hv_hash_sets(r, "files", sorted_array(p.files, cmp_record_path, 0));
    hv_decref(p.files);
    hv *datadirs = hv_array();
    side_datadirs(datadirs, old, o->old_root, "old");
    side_datadirs(datadirs, new_, o->new_root, "new");
    hv_hash_sets(r, "datadirs", datadirs);
    hv *keys = sorted_keys(universe, NULL);
    hv_hash_sets(r, "dirty", dirty ? dirty : hv_incref(keys));
    hv_hash_sets(r, "keys", keys);
    hv_hash_sets(r, "reached", reached ? reached : sorted_keys(p.allkeys, NULL));
    hv_hash_sets(r, "changed", sorted_keys(p.changed, NULL));
    hv_decref(universe);
    hv_decref(p.allkeys);
    hv_decref(p.changed);
    hv_decref(p.lo_changes);
    side_free(&a);
    side_free(&b);
    return r;
}
