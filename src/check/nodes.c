/* nodes.c - hiera check --facts-dir: what each node of a facts folder gets.
 *
 * Every node is looked up as `puppet lookup --node N --facts F` would (contexts of libhiera over a
 * snapshot of the tree, one frozen cache per thread). For each node:
 *  - the data files its hierarchy reads, in lookup order: files no node reads are reported
 *    (unreached-file), and a definition of a key that a higher level of the same layer defines
 *    for every node reading its file is never used (shadowed-key; keys merged by lookup_options
 *    or by the manifests' lookups are left out: every level contributes to them);
 *  - the value of every class parameter key some file defines, as the lookup gives it (merged,
 *    interpolated, converted), against the parameter's type: Puppet's message, at the definition
 *    the node finds first, naming the nodes (parameter-type); a lookup that fails (lookup-error);
 *  - the classes the node includes (include/contain/require from the main manifest, node
 *    definitions, the classes those include, and class lists looked up from data), and their
 *    parameters that get no value and have no default (parameter-missing).
 * Variables in interpolations are checked against every node's facts (interpolation-variable).
 *
 * Threads: the nodes are shared out to --jobs threads; each keeps its own findings, marks and
 * parsed types (types keep compiled regexps), merged when all are done. */
#include "check/ck_int.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/rregex.h"
#include "engine/engine.h"
#include "engine/providers.h"
#include "engine/tmplmatch.h"

/* ------------------------------------------------------------------ facts */

typedef struct {
    char *name;
    char *path;
} nodesrc;

static size_t facts_name_len(const char *file)
{
    size_t n = strlen(file);
    static const char *const exts[] = {".yaml", ".yml", ".json"};
    for (size_t i = 0; i < 3; i++) {
        size_t el = strlen(exts[i]);
        if (n > el && !strcmp(file + n - el, exts[i]))
            return n - el;
    }
    return 0;
}

static int cmp_node(const void *a, const void *b) { return strcmp(((const nodesrc *)a)->name, ((const nodesrc *)b)->name); }

static bool list_nodes(const char *dir, nodesrc **out, size_t *n, char **error)
{
    DIR *d = opendir(dir);
    if (!d) {
        *error = xasprintf("cannot read the facts folder %s", dir);
        return false;
    }
    size_t cap = 64;
    *out = xmalloc(cap * sizeof **out);
    *n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        size_t nl = facts_name_len(de->d_name);
        if (!nl)
            continue;
        char *path = xjoin(dir, "/", de->d_name, NULL);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (*n == cap) {
            cap *= 2;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (nodesrc){xstrndup(de->d_name, nl), path};
    }
    closedir(d);
    qsort(*out, *n, sizeof **out, cmp_node);
    return true;
}

/* A facts file: a hash of facts (YAML or JSON, as `puppet lookup --facts`), Puppet's YAML facts
 * cache (hiera_facts_load reads both), or the JSON terminus's {"name", "values"}: the facts (a
 * new reference; *cached: from a cache, the node's stored facts), or NULL with *msg. */
static hv *load_facts(const char *path, const char *node, bool *cached, char **msg)
{
    hiera_error err = {0};
    int kind = 0;
    hv *v = hiera_facts_load(NULL, path, node, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
    if (!v) {
        *msg = xstrdup(err.message ? err.message : "cannot be read");
        hiera_error_clear(&err);
        return NULL;
    }
    *cached = kind == HIERA_FACTS_CACHE;
    if (hv_is(v, HV_HASH) && !*cached) {
        const hv *vals = hv_hash_gets(v, "values"), *name = hv_hash_gets(v, "name");
        if (vals && hv_is(vals, HV_HASH) && name && hv_is(name, HV_STRING) && hv_hash_len(v) <= 4) {
            hv *r = hv_incref((hv *)vals);
            hv_decref(v);
            v = r;
            *cached = true;
        }
    }
    if (!hv_is(v, HV_HASH)) {
        *msg = xasprintf("%s: not a hash of facts", path);
        hv_decref(v);
        return NULL;
    }
    return v;
}

/* load_facts, remembered for the environment's next runs when it keeps them (a session keeps
 * the model between runs: e->facts_memo, path -> [immortal facts, cached]) */
static pthread_mutex_t facts_memo_lock = PTHREAD_MUTEX_INITIALIZER;

static hv *node_facts_file(ck_env *e, const char *path, const char *node, bool *cached, char **msg)
{
    if (!e->facts_memo)
        return load_facts(path, node, cached, msg);
    pthread_mutex_lock(&facts_memo_lock);
    const hv *m = hv_hash_gets(e->facts_memo, path);
    if (!m) {
        hv *v = load_facts(path, node, cached, msg);
        if (!v) {
            pthread_mutex_unlock(&facts_memo_lock);
            return NULL;
        }
        hv *ent = hv_array();
        hv_array_push(ent, v);
        hv_array_push(ent, hv_bool(*cached));
        hv_make_immortal(ent, &e->facts_nodes);
        hv_hash_sets(e->facts_memo, path, ent);
        m = ent;
    }
    *cached = hv_bool_val(hv_array_get(m, 1));
    hv *v = hv_incref((hv *)hv_array_get(m, 0));
    pthread_mutex_unlock(&facts_memo_lock);
    return v;
}

/* The node's facts with what the agent and Facter always give (clientcert, and hostname, domain
 * and fqdn, which `puppet lookup` wants all or none of) taken from the node's name when missing. */
static hv *complete_facts(hv *facts, const char *node)
{
    hv *f = hv_copy(facts);
    hv_decref(facts);
    if (!hv_hash_gets(f, "clientcert"))
        hv_hash_sets(f, "clientcert", hv_str(node));
    const char *dot = strchr(node, '.');
    if (!hv_hash_gets(f, "fqdn"))
        hv_hash_sets(f, "fqdn", hv_str(node));
    if (!hv_hash_gets(f, "hostname"))
        hv_hash_sets(f, "hostname", dot ? hv_strn(node, (size_t)(dot - node)) : hv_str(node));
    if (!hv_hash_gets(f, "domain"))
        hv_hash_sets(f, "domain", hv_str(dot ? dot + 1 : ""));
    return f;
}

/* The shape of every node's facts merged: key -> sub-shape (a hash) or true (a leaf). */
static void union_into(hv *u, const hv *v, int depth)
{
    if (!hv_is(v, HV_HASH) || depth > 6)
        return;
    for (size_t i = 0; i < hv_hash_len(v); i++) {
        const hv *k = hv_hash_key_at(v, i), *val = hv_hash_val_at(v, i);
        if (!hv_is(k, HV_STRING))
            continue;
        hv *sub = hv_hash_gets(u, hv_str_ptr(k));
        if (hv_is(val, HV_HASH)) {
            if (!sub || !hv_is(sub, HV_HASH)) {
                sub = hv_hash();
                hv_hash_sets(u, hv_str_ptr(k), sub);
            }
            union_into(sub, val, depth + 1);
        } else if (!sub) {
            hv_hash_sets(u, hv_str_ptr(k), hv_true());
        }
    }
}

static void union_merge(hv *u, const hv *o)
{
    for (size_t i = 0; i < hv_hash_len(o); i++) {
        const char *k = hv_str_ptr(hv_hash_key_at(o, i));
        const hv *ov = hv_hash_val_at(o, i);
        hv *uv = hv_hash_gets(u, k);
        if (hv_is(ov, HV_HASH)) {
            if (!uv || !hv_is(uv, HV_HASH)) {
                uv = hv_hash();
                hv_hash_sets(u, k, uv);
            }
            union_merge(uv, ov);
        } else if (!uv) {
            hv_hash_sets(u, k, hv_true());
        }
    }
}

/* ------------------------------------------------------------------ the shared plan */

typedef struct {
    uint32_t key;        /* in ck_env.keys, or UINT32_MAX: no file defines it */
    const char *name;    /* the key */
    const pp_class *cls;
    const pp_param *param;
    bool typed;          /* its type resolves (checked) */
    /* data of a module the lookups do not see (outside their modulepath) defines it: a node
     * without the value may have it there, so no parameter-missing */
    bool unseen_data;
} cand;

typedef struct {
    uint32_t key, def;
} fkey;

typedef struct {
    ck_ctx *c;
    ck_env *e;
    nodesrc *nodes;
    size_t nnodes;
    size_t next; /* the next node to take (atomic) */
    /* per file: its keys and the definitions they are */
    fkey **fkeys;
    size_t *nfkeys;
    size_t *def_base; /* per key: index of its first definition in the flat numbering */
    size_t ndefs;
    bool *merged;     /* per key */
    uint8_t *interp;  /* per flat definition: its value interpolates (its result may differ per node):
                       * 1 facts and variables only, 2 lookups of other keys too (value_interp) */
    uint8_t *has_lo;  /* per file: it defines lookup_options */
    /* what a lookup's result depends on, named the same from one run to the next (a session's
     * runs remember results: ck_env.node_memo): per flat definition its file, key, value and how
     * a scalar is written (trap hints); per file its lookup_options or its load error; per cand
     * its key and type */
    uint64_t *def_id, *lo_id, *cand_id;
    /* per module configuration the engine can see: its module name */
    cand *cands;
    size_t ncands;
    hv *cand_index;   /* key name -> cand index */
    hv *class_params; /* class -> array of cand indexes (all its parameters) */
    hv *decls_by_scope; /* class ("" top scope) -> array of decl indexes */
    bool has_inclusion; /* any declaration or class list: parameter-missing is checked */
    int *node_match;  /* per node: the node definition that applies, or -1 */
    int *prog_node;   /* per node: the main manifest's node definition it gets (pp_program), or -1 */
    /* the location templates that interpolate variables, and their variables (flat numbering) */
    struct tvar {
        uint32_t cfg, level;
        const char *tmpl; /* BORROWED from the level */
        bool glob;
        const char *mapped; /* mapped_paths: the name each element gets (not a variable of the scope) */
        char **exprs;     /* the variable expressions ("role", "facts.os.family"; no leading ::) */
        size_t nexprs, base;
    } *tvars;
    size_t ntvars, nexprs;
    size_t *lvl_base;   /* per configuration: the flat number of its first level */
    uint32_t **lvl_files; /* per flat level: the files it can read */
    size_t *nlvl_files;
} plan;

struct memo_ent {
    uint64_t a, b; /* a == 0: empty */
    int st;        /* 0 fine, 1 type error, 2 lookup error, 3 not found */
    char *msg;
};

/* The results a session keeps between runs (ck_env.node_memo) */
struct ck_node_memo {
    struct memo_ent *v;
    size_t n, cap;
};

typedef struct {
    plan *p;
    hiera_cache *view;
    ptype_aliases *aliases;
    ptype **types; /* per cand */
    hv *agg;       /* "rule\tfile\tline\tcol\tmessage" -> array of node names */
    uint8_t *reached;  /* per file */
    uint8_t *used;     /* per flat definition */
    uint32_t *over;    /* per flat definition: the file that shadows it (UINT32_MAX: none seen) */
    uint32_t *stamp0, *stampm; /* per key: the node that met it last (layers global+env, modules) */
    uint32_t *first0, *firstm; /* per key: the definition met first (flat), this node */
    /* per key, this node: what its lookup depends on (the definitions met, in order), whether one
     * of them interpolates */
    uint32_t *sigstamp;
    uint64_t *siga, *sigb;
    uint8_t *sigi;
    /* results of lookups that depend on nothing else: (what they depend on) -> result */
    struct memo_ent *memo;
    size_t memo_n, memo_cap;
    hv *facts;     /* the union of the facts' shapes */
    hv *errors;    /* node -> message */
    size_t done;
    /* files a node may read through a variable the check cannot compute for it (the main
     * manifest sets it from what cannot be evaluated): maybe (any node), maybe_stamp (this one) */
    uint8_t *maybe;
    uint32_t *maybe_stamp;
    uint8_t *provided; /* per template variable (flat): some node has a value for it */
    hv *unknown_vars;  /* variable -> why it cannot be computed (those templates read) */
    hv *failed;        /* node -> the fail() its main manifest reaches */
} worker;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static void interp_item(const ix_item *it, void *data)
{
    if (it->kind != IX_SCOPE && it->kind != IX_LITERAL && it->kind != IX_EMPTY)
        *(uint8_t *)data = 2;
}

/* 0: v does not interpolate; 1: only variables (the node's facts); 2: other keys too, or a
 * %{...} that does not parse */
static uint8_t value_interp(const hv *v, int depth)
{
    if (!hv_has_interpolation(v, 0))
        return 0;
    uint8_t k = 1;
    if (depth > 64)
        return 2;
    if (hv_is(v, HV_STRING)) {
        ck_scan_interpolations(hv_str_ptr(v), hv_str_len(v), interp_item, &k);
    } else if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v) && k < 2; i++)
            k = (uint8_t)(k | value_interp(hv_array_get(v, i), depth + 1));
    } else if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v) && k < 2; i++) {
            k = (uint8_t)(k | value_interp(hv_hash_key_at(v, i), depth + 1));
            k = (uint8_t)(k | value_interp(hv_hash_val_at(v, i), depth + 1));
        }
    }
    return k > 1 ? 2 : 1;
}

static uint64_t text_id(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return mix(h, 0x2545f4914f6cdd1dULL);
}

static struct memo_ent *memo_slot(worker *w, uint64_t a, uint64_t b, bool create)
{
    if (create && (w->memo_n + 1) * 10 > w->memo_cap * 7) {
        size_t ncap = w->memo_cap ? w->memo_cap * 2 : 1024;
        struct memo_ent *nt = xcalloc(ncap, sizeof *nt);
        for (size_t i = 0; i < w->memo_cap; i++)
            if (w->memo[i].a) {
                size_t j = (size_t)w->memo[i].a & (ncap - 1);
                while (nt[j].a)
                    j = (j + 1) & (ncap - 1);
                nt[j] = w->memo[i];
            }
        free(w->memo);
        w->memo = nt;
        w->memo_cap = ncap;
    }
    if (!w->memo_cap)
        return NULL;
    for (size_t j = (size_t)a & (w->memo_cap - 1);; j = (j + 1) & (w->memo_cap - 1)) {
        struct memo_ent *m = &w->memo[j];
        if (!m->a) {
            if (!create)
                return NULL;
            m->a = a;
            m->b = b;
            w->memo_n++;
            return m;
        }
        if (m->a == a && m->b == b)
            return m;
    }
}

static void agg_add(worker *w, const char *rule, const char *file, uint32_t line, uint32_t col, const char *msg,
                    const char *node)
{
    char *k = xasprintf("%s\t%s\t%u\t%u\t%s", rule, file, line, col, msg);
    hv *list = hv_hash_gets(w->agg, k);
    if (!list) {
        list = hv_array();
        hv_hash_sets(w->agg, k, list);
    }
    hv_array_push(list, hv_str(node));
    free(k);
}

/* ------------------------------------------------------------------ one node */

typedef struct {
    uint32_t file;
    int group; /* 0: global and environment layers; 1: a module's hierarchy; 2: its default_hierarchy */
} reach_item;

static void add_layer_files(worker *w, hiera *h, layer *l, bool dflt, int group, reach_item **items, size_t *n,
                            size_t *cap, bool *opaque)
{
    provider *provs;
    size_t np;
    herr err = {0};
    if (layer_providers(h, l, dflt, &provs, &np, &err) != LR_FOUND) {
        herr_clear(&err);
        return;
    }
    ck_env *e = w->p->e;
    for (size_t i = 0; i < np; i++) {
        /* a level whose data function hiera cannot run, that this node reaches */
        const provider_def *pd = provider_find(provs[i].lvl->fname ? provs[i].lvl->fname : "");
        bool runs = pd && (provs[i].lvl->fkind == FN_LOOKUP_KEY ? pd->key_value != NULL : provs[i].lvl->fkind == FN_DATA_HASH);
        bool exists = provs[i].nil_location;
        for (size_t j = 0; j < provs[i].nlocs && !exists; j++)
            exists = provs[i].locs[j].exists;
        if (!runs && exists)
            *opaque = true;
        for (size_t j = 0; j < provs[i].nlocs; j++) {
            const location *loc = &provs[i].locs[j];
            if (!loc->exists || loc->is_uri || !loc->path)
                continue;
            const hv *fi = hv_hash_gets(e->file_index, loc->path);
            if (!fi)
                continue;
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 32;
                *items = xrealloc(*items, *cap * sizeof **items);
            }
            (*items)[(*n)++] = (reach_item){(uint32_t)hv_int_val(fi), group};
        }
    }
}

/* The classes the node includes (lower case names -> true). */
static void add_class(worker *w, hiera *h, hv *inc, const char *cls, const char *node, int depth);

/* A resource-like declaration's attributes (names): those parameters are given, never looked up. */
static void given_params(hv *inc, const char *cls, const hv *names)
{
    const char *s = cls[0] == ':' && cls[1] == ':' ? cls + 2 : cls;
    char *name = xstrdup(s);
    for (char *q = name; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    hv *cur = hv_hash_gets(inc, name);
    if (!cur || !hv_is(cur, HV_ARRAY)) {
        cur = hv_array();
        hv_hash_sets(inc, name, cur);
    }
    for (size_t i = 0; i < hv_array_len(names); i++)
        hv_array_push(cur, hv_incref(hv_array_get(names, i)));
    free(name);
}

static void classes_of_lookup(worker *w, hiera *h, hv *inc, const pp_lookup *l, const char *node, int depth)
{
    if (l->prefix)
        return;
    hiera_value *v = NULL;
    hiera_error err = {0};
    if (hiera_lookup_key(h, l->key, &v, &err) == HIERA_OK) {
        if (hv_is(v, HV_STRING)) {
            add_class(w, h, inc, hv_str_ptr(v), node, depth + 1);
        } else if (hv_is(v, HV_ARRAY)) {
            for (size_t i = 0; i < hv_array_len(v); i++)
                if (hv_is(hv_array_get(v, i), HV_STRING))
                    add_class(w, h, inc, hv_str_ptr(hv_array_get(v, i)), node, depth + 1);
        }
    }
    hiera_value_decref(v);
    hiera_error_clear(&err);
}

static void add_scope(worker *w, hiera *h, hv *inc, const char *scope, int node_def, const char *node, int depth)
{
    const plan *p = w->p;
    const pp_index *pp = p->e->pp;
    const hv *list = hv_hash_gets(p->decls_by_scope, scope);
    for (size_t i = 0; list && i < hv_array_len(list); i++) {
        const pp_decl *d = &pp->decls[hv_int_val(hv_array_get(list, i))];
        if (d->in_define || d->conditional || (!*scope && d->scope_node >= 0 && d->scope_node != node_def))
            continue; /* (a declaration under a condition may not be made: its class is not counted) */
        if (d->resource_like && d->nparams) {
            hv *names = hv_array();
            for (size_t k = 0; k < d->nparams; k++)
                hv_array_push(names, hv_str(d->params[k]));
            add_class(w, h, inc, d->cls, node, depth + 1);
            given_params(inc, d->cls, names);
            hv_decref(names);
            continue;
        }
        add_class(w, h, inc, d->cls, node, depth + 1);
    }
    for (size_t i = 0; i < pp->nlookups; i++) {
        const pp_lookup *l = &pp->lookups[i];
        if (!l->classes || l->conditional)
            continue;
        bool here = *scope ? l->scope_class && !strcmp(l->scope_class, scope)
                           : !l->scope_class && (l->scope_node < 0 || l->scope_node == node_def);
        if (here)
            classes_of_lookup(w, h, inc, l, node, depth);
    }
}

static void add_class(worker *w, hiera *h, hv *inc, const char *cls, const char *node, int depth)
{
    if (depth > 64)
        return;
    const char *s = cls[0] == ':' && cls[1] == ':' ? cls + 2 : cls;
    char *name = xstrdup(s);
    for (char *q = name; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    if (hv_hash_gets(inc, name)) {
        free(name);
        return;
    }
    hv_hash_sets(inc, name, hv_true());
    const pp_class *c = pp_find_class(w->p->e->pp, name);
    if (c && c->parent)
        add_class(w, h, inc, c->parent, node, depth + 1);
    add_scope(w, h, inc, name, -1, node, depth);
    free(name);
}

static char *param_message(const pp_class *cls, const char *detail)
{
    char *ref = ck_class_ref(cls->name);
    sbuf m = {0};
    sb_addf(&m, "%s: ", ref);
    for (const char *q = detail; *q; q++) {
        if (*q == '\n')
            sb_adds(&m, "; ");
        else
            sb_addc(&m, *q);
    }
    free(ref);
    return sb_take(&m);
}

/* ------------------------------------------------------------------ the main manifest, per node */

typedef struct {
    worker *w;
    const hiera_options *o;
} evalctx;

static pp_fn_kind function_kind(void *data, const char *name)
{
    evalctx *x = data;
    const hv *k = hv_hash_gets(x->w->p->e->functions, name[0] == ':' && name[1] == ':' ? name + 2 : name);
    return k ? (pp_fn_kind)hv_int_val(k) : PP_FN_ANY;
}

static bool type_exists(void *data, const char *name)
{
    evalctx *x = data;
    const pp_index *pp = x->w->p->e->pp;
    char *n = xstrdup(name[0] == ':' && name[1] == ':' ? name + 2 : name);
    for (char *q = n; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    bool r = pp_find_class(pp, n) || pp_is_define(pp, n);
    free(n);
    return r;
}

/* A lookup the main manifest makes: a context of its own over the variables set so far */
static hv *eval_lookup(void *data, const hv *scope, const char *key, const char *merge, const hv *dflt)
{
    evalctx *x = data;
    hiera_error err = {0};
    hiera *h = hiera_new(x->o, &err);
    hiera_error_clear(&err);
    if (!h)
        return NULL;
    h->opaque_unknown = true;
    /* the strict setting of the environment's puppet.conf (hiera_new's options read none) */
    h->strict = x->w->p->e->strict;
    hv_decref(h->scope);
    h->scope = hv_incref((hv *)scope);
    hiera_request rq = HIERA_REQUEST_INIT;
    rq.keys = &key;
    rq.nkeys = 1;
    hv *m = merge ? hv_str(merge) : NULL;
    rq.merge = m;
    rq.default_value = dflt;
    hiera_value *v = NULL;
    hiera_status st = hiera_lookup(h, &rq, &v, &err);
    hiera_error_clear(&err);
    if (st != HIERA_OK || h->opaque_hits) {
        hiera_value_decref(v);
        v = NULL;
    }
    hv_decref(m);
    hiera_free(h);
    return v;
}

/* The value of a variable expression ("role", "facts.os.family") in a scope (BORROWED), or NULL. */
static const hv *scope_dig(const hv *scope, const char *expr)
{
    const hv *cur = scope;
    const char *p = expr[0] == ':' && expr[1] == ':' ? expr + 2 : expr;
    while (cur) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (!hv_is(cur, HV_HASH))
            return NULL;
        cur = hv_hash_getsn(cur, p, n);
        if (!dot)
            break;
        p = dot + 1;
    }
    return cur;
}

static bool usable_value(const hv *v)
{
    return v && ((hv_is(v, HV_STRING) && hv_str_len(v)) || hv_is(v, HV_INT) || hv_is(v, HV_FLOAT) || hv_is(v, HV_BOOL) ||
                 (hv_is(v, HV_ARRAY) && hv_array_len(v)) || (hv_is(v, HV_HASH) && hv_hash_len(v)));
}

static char *root_of(const char *expr)
{
    const char *p = expr[0] == ':' && expr[1] == ':' ? expr + 2 : expr;
    const char *dot = strchr(p, '.');
    return dot ? xstrndup(p, (size_t)(dot - p)) : xstrdup(p);
}

typedef struct {
    const hv *scope;
    const hv *unknown; /* roots */
    const char *mapped; /* mapped_paths: the element's name, left as any text */
    bool any;
    sbuf out;
    size_t last;
    const char *s;
} partial_ctx;

static void partial_item(const ix_item *it, void *data)
{
    partial_ctx *x = data;
    sb_addn(&x->out, x->s + x->last, it->start - x->last);
    x->last = it->end;
    const char *orig = x->s + it->start;
    size_t olen = it->end - it->start;
    if (it->kind != IX_SCOPE || !it->arg) {
        sb_addn(&x->out, orig, olen); /* (any text) */
        return;
    }
    char *root = root_of(it->arg);
    bool unknown = hv_hash_gets(x->unknown, root) || (x->any && !hv_hash_gets(x->scope, root)) ||
                   (x->mapped && !strcmp(root, x->mapped));
    free(root);
    if (unknown) {
        sb_addn(&x->out, orig, olen);
        return;
    }
    const hv *v = scope_dig(x->scope, it->arg);
    if (hv_is(v, HV_STRING))
        sb_addn(&x->out, hv_str_ptr(v), hv_str_len(v));
    else if (hv_is(v, HV_INT))
        sb_addf(&x->out, "%lld", (long long)hv_int_val(v));
    else if (v && !hv_is(v, HV_UNDEF))
        sb_addn(&x->out, orig, olen); /* (not computed here) */
}

/* The files this node may read through a template whose variables the check cannot compute for it
 * (maybe_stamp), and which template variables it has a value for (provided). */
static void node_templates(worker *w, const hv *scope, const pp_eval_result *res, uint32_t stamp, bool *any_maybe)
{
    plan *p = w->p;
    ck_env *e = p->e;
    for (size_t t = 0; t < p->ntvars; t++) {
        const struct tvar *T = &p->tvars[t];
        bool unk = false;
        for (size_t k = 0; k < T->nexprs; k++) {
            char *root = root_of(T->exprs[k]);
            bool u = res && (hv_hash_gets(res->unknown, root) || (res->any && !hv_hash_gets(scope, root)));
            if (u) {
                unk = true;
                if (!hv_hash_gets(w->unknown_vars, root))
                    hv_hash_sets(w->unknown_vars, root,
                                 hv_str(hv_hash_gets(res->unknown, root) || !res->any_why ? "" : res->any_why));
            } else if (usable_value(scope_dig(scope, T->exprs[k]))) {
                w->provided[T->base + k] = 1;
            }
            free(root);
        }
        if (!unk)
            continue;
        partial_ctx x = {scope, res->unknown, T->mapped, res->any, {0}, 0, T->tmpl};
        ck_scan_interpolations(T->tmpl, strlen(T->tmpl), partial_item, &x);
        sb_adds(&x.out, T->tmpl + x.last);
        size_t fl = p->lvl_base[T->cfg] + T->level;
        for (size_t i = 0; i < p->nlvl_files[fl]; i++) {
            uint32_t fi = p->lvl_files[fl][i];
            if (w->maybe_stamp[fi] != stamp && tmpl_match(sb_str(&x.out), e->files[fi].path, T->glob)) {
                w->maybe_stamp[fi] = stamp;
                w->maybe[fi] = 1;
                *any_maybe = true;
            }
        }
        sb_free(&x.out);
    }
}

static int layer_order(layer_kind k) { return k == LAYER_GLOBAL ? 0 : k == LAYER_ENV ? 1 : 2; }

/* Whether the value a lookup found first at def is the one Puppet finds: no level whose data is
 * outside what is checked (its files cannot be seen) comes before it. merged: every level counts. */
static bool before_outside(const ck_env *e, const ck_def *def, bool merged)
{
    const ck_file *f = &e->files[def->file];
    if (!f->nreach)
        return false;
    uint32_t ci = f->reach[0].cfg, li = f->reach[0].level;
    const ck_config *cf = &e->configs[ci];
    for (size_t cj = 0; cj < e->nconfigs; cj++) {
        const ck_config *o = &e->configs[cj];
        if (o->layer == LAYER_MODULE && cj != ci)
            continue;
        for (size_t lj = 0; lj < o->nlevels; lj++) {
            if (!o->levels[lj].outside)
                continue;
            if (merged || layer_order(o->layer) < layer_order(cf->layer) || (cj == ci && lj < li))
                return false;
        }
    }
    return true;
}

/* Whether a definition of the key is in a file the node may read without the check knowing. */
/* The definition of key the node finds first (it reads one). */
static const ck_def *win_of(const worker *w, const plan *p, uint32_t key, uint32_t stamp)
{
    const ck_key *kk = &p->e->keys[key];
    uint32_t flat = w->stamp0[key] == stamp ? w->first0[key] : w->firstm[key];
    return &kk->defs[flat - p->def_base[key]];
}

static bool key_maybe(const worker *w, const ck_env *e, uint32_t key, uint32_t stamp)
{
    const ck_key *k = &e->keys[key];
    for (size_t d = 0; d < k->ndefs; d++)
        if (w->maybe_stamp[k->defs[d].file] == stamp)
            return true;
    return false;
}

static void check_node(worker *w, size_t ni)
{
    plan *p = w->p;
    ck_env *e = p->e;
    const nodesrc *ns = &p->nodes[ni];
    char *msg = NULL;
    bool cached = false;
    const check_nodes *given = w->p->c->o->nodes;
    hv *facts = ns->path ? node_facts_file(e, ns->path, ns->name, &cached, &msg) : given->facts(given->data, ni, &cached, &msg);
    if (!facts) {
        hv_hash_sets(w->errors, ns->name, hv_str(msg));
        free(msg);
        return;
    }
    facts = complete_facts(facts, ns->name);
    union_into(w->facts, facts, 0);
    hiera_options o = HIERA_OPTIONS_INIT;
    o.codedir = e->codedir;
    o.confdir = e->confdir;
    o.environmentpath = e->envpath;
    o.hiera_config = e->hiera_config;
    o.environment = e->name;
    o.node = ns->name;
    /* a cache's facts are the node's stored facts (no rule on them), a file's are given ones */
    if (cached)
        o.base_facts = facts;
    else
        o.facts = facts;
    o.cache = w->view;
    o.remap_default_environmentpath = true;
    hiera_error herr_ = {0};
    hiera *h = hiera_new(&o, &herr_);
    if (!h) {
        hv_decref(facts);
        hv_hash_sets(w->errors, ns->name, hv_str(herr_.message ? herr_.message : "cannot be looked up"));
        hiera_error_clear(&herr_);
        return;
    }
    /* a level whose data function hiera cannot run gives an unknown answer, not a failure */
    h->opaque_unknown = true;
    h->strict = e->strict; /* as eval_lookup */
    /* $server_facts, as a compile sets it */
    hv *sf = hv_hash();
    hv_hash_sets(sf, "environment", hv_str(e->name));
    hv_hash_sets(h->scope, "server_facts", sf);
    uint32_t stamp = (uint32_t)ni + 1;
    /* the main manifest: the variables it sets (hiera.yaml reads them) and the classes it declares */
    pp_eval_result res;
    bool evaluated = !pp_program_empty(e->prog);
    if (evaluated) {
        evalctx ec = {w, &o};
        pp_eval_env env = {function_kind, eval_lookup, type_exists, &ec};
        pp_program_eval(e->prog, p->prog_node[ni], h->scope, &env, &res);
        for (size_t i = 0; i < hv_hash_len(res.vars); i++)
            hv_hash_set(h->scope, hv_incref(hv_hash_key_at(res.vars, i)), hv_incref(hv_hash_val_at(res.vars, i)));
        if (res.failed) {
            hv_hash_sets(w->failed, ns->name, hv_str(res.failed));
            if (!res.any) {
                res.any = true;
                res.any_why = xasprintf("fail() (%s)", res.failed);
            }
        }
    }
    hv_decref(facts);
    bool node_maybe = false;
    node_templates(w, h->scope, evaluated ? &res : NULL, stamp, &node_maybe);
    /* the files the node reads, in lookup order */
    bool node_opaque = false;
    reach_item *items = NULL;
    size_t nitems = 0, capitems = 0;
    herr err = {0};
    layer *g = global_layer(h);
    if (global_config(h, g, &err))
        add_layer_files(w, h, g, false, 0, &items, &nitems, &capitems, &node_opaque);
    herr_clear(&err);
    layer *env = env_layer(h, &err);
    if (env)
        add_layer_files(w, h, env, false, 0, &items, &nitems, &capitems, &node_opaque);
    herr_clear(&err);
    for (size_t ci = 0; ci < e->nconfigs; ci++) {
        const ck_config *cf = &e->configs[ci];
        if (cf->layer != LAYER_MODULE || !cf->module)
            continue;
        mod_state st;
        layer *ml = module_layer(h, cf->module, &st, &err);
        herr_clear(&err);
        if (!ml)
            continue;
        add_layer_files(w, h, ml, false, 1, &items, &nitems, &capitems, &node_opaque);
        if (ml->cfg && ml->cfg->has_default_hierarchy)
            add_layer_files(w, h, ml, true, 2, &items, &nitems, &capitems, &node_opaque);
    }
    /* which definition each key is found at first (per group), what shadows what, and what each
     * key's lookup depends on (with the lookup_options files the node reads) */
    uint64_t lo_a = 1, lo_b = 2;
    for (size_t i = 0; i < nitems; i++) {
        uint32_t fi = items[i].file;
        w->reached[fi] = 1;
        if (p->has_lo[fi]) {
            lo_a = mix(lo_a, p->lo_id[fi]);
            lo_b = mix(lo_b ^ 0x5bd1e995, p->lo_id[fi] + 7);
        }
        for (size_t k = 0; k < p->nfkeys[fi]; k++) {
            uint32_t key = p->fkeys[fi][k].key;
            size_t def = p->def_base[key] + p->fkeys[fi][k].def;
            if (w->sigstamp[key] != stamp) {
                w->sigstamp[key] = stamp;
                w->siga[key] = 3;
                w->sigb[key] = 4;
                w->sigi[key] = 0;
            }
            w->siga[key] = mix(w->siga[key], p->def_id[def]);
            w->sigb[key] = mix(w->sigb[key] ^ 0xc2b2ae35, p->def_id[def] * 31 + 11);
            w->sigi[key] |= p->interp[def];
            uint32_t *st = items[i].group == 0 ? w->stamp0 : w->stampm;
            uint32_t *first = items[i].group == 0 ? w->first0 : w->firstm;
            if (items[i].group == 2) {
                w->used[def] = 1; /* default_hierarchy: not judged */
                if (w->stampm[key] != stamp) {
                    w->stampm[key] = stamp;
                    w->firstm[key] = (uint32_t)def;
                }
                continue;
            }
            if (st[key] != stamp) {
                st[key] = stamp;
                first[key] = (uint32_t)def;
                w->used[def] = 1;
            } else if (p->merged[key]) {
                w->used[def] = 1;
            } else {
                /* the file of the definition met first (the smallest over the nodes: the same
                 * whatever thread saw which node) */
                const ck_key *kk = &e->keys[key];
                size_t d0 = first[key] - p->def_base[key];
                if (kk->defs[d0].file < w->over[def])
                    w->over[def] = kk->defs[d0].file;
            }
        }
    }
    /* the classes the node includes */
    hv *inc = NULL;
    if (evaluated && (p->has_inclusion || hv_hash_len(res.classes))) {
        /* the main manifest's declarations as evaluated for this node (those under a condition
         * that cannot be computed are not counted: the class may not be declared) */
        inc = hv_hash();
        for (size_t i = 0; i < hv_hash_len(res.classes); i++) {
            const char *cls = hv_str_ptr(hv_hash_key_at(res.classes, i));
            add_class(w, h, inc, cls, ns->name, 1);
            if (hv_is(hv_hash_val_at(res.classes, i), HV_ARRAY))
                given_params(inc, cls, hv_hash_val_at(res.classes, i));
        }
    } else if (p->has_inclusion) {
        inc = hv_hash();
        add_scope(w, h, inc, "", p->node_match[ni], ns->name, 0);
    }
    /* class parameters */
    for (size_t ci = 0; ci < p->ncands; ci++) {
        const cand *cd = &p->cands[ci];
        bool included = inc && hv_hash_gets(inc, cd->cls->name) && !cd->unseen_data;
        bool reached = cd->key != UINT32_MAX &&
                       (w->stamp0[cd->key] == stamp || w->stampm[cd->key] == stamp);
        if (node_maybe && cd->key != UINT32_MAX && key_maybe(w, e, cd->key, stamp))
            continue; /* the node may read a definition the check cannot tell it reads */
        const hv *incv = inc ? hv_hash_gets(inc, cd->cls->name) : NULL;
        bool passed = false;
        for (size_t k = 0; incv && hv_is(incv, HV_ARRAY) && k < hv_array_len(incv) && !passed; k++)
            passed = !strcmp(hv_str_ptr(hv_array_get(incv, k)), cd->param->name);
        if (passed)
            continue; /* a resource-like declaration gives it: Puppet does not look it up */
        if (!reached && !e->opaque_level) {
            /* nothing the node reads defines it: not found */
            if (included && !cd->param->has_default) {
                char *m = param_message(cd->cls, "expects a value for parameter '");
                sbuf b = {0};
                sb_addf(&b, "%s%s'", m, cd->param->name);
                agg_add(w, "parameter-missing", cd->cls->file, cd->param->line, cd->param->col, sb_str(&b), ns->name);
                sb_free(&b);
                free(m);
            }
            continue;
        }
        if (!cd->typed && !(included && !cd->param->has_default))
            continue;
        /* a result that depends only on the definitions met and the lookup_options read is
         * remembered for the next node that meets the same */
        struct memo_ent *known = NULL;
        uint64_t ma = 0, mb = 0;
        /* (in a session, one whose definitions interpolate facts only is remembered for this
         * node's next runs: its facts are the session's) */
        bool per_node = e->node_memo && w->sigi[cd->key] == 1;
        if (reached && (!w->sigi[cd->key] || per_node) && !e->opaque_level && !node_opaque && !node_maybe) {
            ma = mix(mix(w->siga[cd->key], lo_a), p->cand_id[ci]) | 1;
            mb = mix(mix(w->sigb[cd->key], lo_b), p->cand_id[ci] * 13 + 5);
            if (per_node) {
                ma = mix(ma, text_id(ns->name)) | 1;
                mb = mix(mb ^ 0x7f4a7c15, text_id(ns->name));
            }
            known = memo_slot(w, ma, mb, false);
        }
        if (known) {
            const ck_key *kk = &e->keys[cd->key];
            uint32_t flat = w->stamp0[cd->key] == stamp ? w->first0[cd->key] : w->firstm[cd->key];
            const ck_def *win = &kk->defs[flat - p->def_base[cd->key]];
            if (known->st == 1)
                agg_add(w, "parameter-type", e->files[win->file].path, win->line, win->col, known->msg, ns->name);
            else if (known->st == 2)
                agg_add(w, "lookup-error", e->files[win->file].path, win->line, win->col, known->msg, ns->name);
            else if (known->st == 3 && included && !cd->param->has_default)
                agg_add(w, "parameter-missing", cd->cls->file, cd->param->line, cd->param->col, known->msg, ns->name);
            continue;
        }
        int st = 0;
        char *memo_msg = NULL;
        hiera_value *v = NULL;
        hiera_error lerr = {0};
        unsigned opaque_before = h->opaque_hits;
        hiera_status rs = hiera_lookup_key(h, cd->name, &v, &lerr);
        if (h->opaque_hits != opaque_before || (e->opaque_level && rs == HIERA_NOT_FOUND) ||
            (e->opaque_level && rs == HIERA_OK && (!reached || !before_outside(e, win_of(w, p, cd->key, stamp), p->merged[cd->key])))) {
            /* a level whose function hiera cannot run was asked, or one whose data is not here may
             * hold the value: the answer is not known */
            hiera_value_decref(v);
            hiera_error_clear(&lerr);
            continue;
        }
        /* where the node finds it first */
        const char *file = cd->cls->file;
        uint32_t line = cd->param->line, col = cd->param->col;
        const ck_def *win = NULL;
        if (reached) {
            const ck_key *kk = &e->keys[cd->key];
            uint32_t flat = w->stamp0[cd->key] == stamp ? w->first0[cd->key] : w->firstm[cd->key];
            win = &kk->defs[flat - p->def_base[cd->key]];
            file = e->files[win->file].path;
            line = win->line;
            col = win->col;
        }
        if (rs == HIERA_ERROR) {
            char *m = xasprintf("the lookup of '%s' fails: %s", cd->name, lerr.message ? lerr.message : "");
            agg_add(w, "lookup-error", file, line, col, m, ns->name);
            st = 2;
            memo_msg = m;
        } else if (rs == HIERA_NOT_FOUND) {
            char *m = xasprintf("expects a value for parameter '%s'", cd->param->name);
            char *pm = param_message(cd->cls, m);
            free(m);
            if (included && !cd->param->has_default)
                agg_add(w, "parameter-missing", cd->cls->file, cd->param->line, cd->param->col, pm, ns->name);
            st = 3;
            memo_msg = pm;
        } else if (cd->typed && !(hv_is(v, HV_UNDEF) && cd->param->has_default)) {
            char *detail = ptype_describe_param(w->types[ci], v, cd->param->name);
            if (detail) {
                char *pm = param_message(cd->cls, detail);
                sbuf b = {0};
                sb_adds(&b, pm);
                if (win)
                    ck_trap_hint(e, win, cd->name, &b);
                agg_add(w, "parameter-type", file, line, col, sb_str(&b), ns->name);
                st = 1;
                memo_msg = sb_take(&b);
                free(pm);
                free(detail);
            }
        }
        if (ma) {
            struct memo_ent *m = memo_slot(w, ma, mb, true);
            m->st = st;
            m->msg = memo_msg;
        } else {
            free(memo_msg);
        }
        hiera_value_decref(v);
        hiera_error_clear(&lerr);
    }
    hv_decref(inc);
    free(items);
    hiera_free(h);
    if (evaluated)
        pp_eval_result_free(&res);
}

static void *work(void *arg)
{
    worker *w = arg;
    plan *p = w->p;
    for (;;) {
        size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (i >= p->nnodes)
            break;
        check_node(w, i);
        w->done++;
    }
    return NULL;
}

/* ------------------------------------------------------------------ the plan */

static bool node_def_matches(const pp_node *nd, const char *name)
{
    for (size_t i = 0; i < nd->nnames; i++)
        if (!strcmp(nd->names[i], name))
            return true;
    return false;
}

/* Puppet's node matching: a definition naming the node, else the first regexp that matches it,
 * else default. */
static int match_node(const pp_index *pp, const char *name)
{
    for (size_t i = 0; i < pp->nnodes; i++)
        if (node_def_matches(&pp->nodes[i], name))
            return (int)i;
    for (size_t i = 0; i < pp->nnodes; i++)
        for (size_t j = 0; j < pp->nodes[i].nregexps; j++) {
            herr err = {0};
            rregex *re = rregex_new(pp->nodes[i].regexps[j], strlen(pp->nodes[i].regexps[j]), &err);
            herr_clear(&err);
            bool m = re && rregex_search(re, name, strlen(name));
            rregex_free(re);
            if (m)
                return (int)i;
        }
    for (size_t i = 0; i < pp->nnodes; i++)
        if (pp->nodes[i].is_default)
            return (int)i;
    return -1;
}

static void tvar_item(const ix_item *it, void *data)
{
    struct tvar *T = data;
    if (it->kind != IX_SCOPE || !it->arg)
        return;
    const char *a = it->arg[0] == ':' && it->arg[1] == ':' ? it->arg + 2 : it->arg;
    if (T->mapped && (!strcmp(a, T->mapped) || (!strncmp(a, T->mapped, strlen(T->mapped)) && a[strlen(T->mapped)] == '.')))
        return; /* the element's name */
    T->exprs = xrealloc(T->exprs, (T->nexprs + 1) * sizeof *T->exprs);
    T->exprs[T->nexprs++] = xstrdup(a);
}

static void make_plan(plan *p)
{
    ck_env *e = p->e;
    /* definitions numbered, per file */
    p->def_base = xcalloc(e->nkeys + 1, sizeof *p->def_base);
    p->merged = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *p->merged);
    p->fkeys = xcalloc(e->nfiles ? e->nfiles : 1, sizeof *p->fkeys);
    p->nfkeys = xcalloc(e->nfiles ? e->nfiles : 1, sizeof *p->nfkeys);
    size_t *caps = xcalloc(e->nfiles ? e->nfiles : 1, sizeof *caps);
    for (size_t k = 0; k < e->nkeys; k++) {
        p->def_base[k] = p->ndefs;
        p->ndefs += e->keys[k].ndefs;
        int merge;
        const hv *conv;
        ck_key_options(e, e->keys[k].name, &merge, &conv);
        p->merged[k] = merge != 0;
        for (size_t d = 0; d < e->keys[k].ndefs; d++) {
            uint32_t fi = e->keys[k].defs[d].file;
            if (p->nfkeys[fi] == caps[fi]) {
                caps[fi] = caps[fi] ? caps[fi] * 2 : 16;
                p->fkeys[fi] = xrealloc(p->fkeys[fi], caps[fi] * sizeof **p->fkeys);
            }
            p->fkeys[fi][p->nfkeys[fi]++] = (fkey){(uint32_t)k, (uint32_t)d};
        }
    }
    p->def_base[e->nkeys] = p->ndefs;
    free(caps);
    p->interp = xcalloc(p->ndefs ? p->ndefs : 1, 1);
    p->def_id = xcalloc(p->ndefs ? p->ndefs : 1, sizeof *p->def_id);
    for (size_t k = 0; k < e->nkeys; k++) {
        uint64_t kh = text_id(e->keys[k].name);
        for (size_t d = 0; d < e->keys[k].ndefs; d++) {
            const ck_def *def = &e->keys[k].defs[d];
            size_t flat = p->def_base[k] + d;
            p->interp[flat] = value_interp(def->value, 0);
            uint64_t vc = 0;
            if (!hv_identity_code(def->value, &vc))
                p->interp[flat] = 1; /* a Sensitive: not remembered */
            uint64_t id = mix(mix(mix(0x243f6a8885a308d3ULL, def->file + 1), kh), vc);
            if (hv_is(def->value, HV_BOOL) || hv_is(def->value, HV_INT) || hv_is(def->value, HV_FLOAT)) {
                sbuf hint = {0}; /* a plain scalar read as a boolean or a number: the message says so */
                ck_trap_hint(e, def, e->keys[k].name, &hint);
                if (hint.len)
                    id = mix(id, text_id(sb_str(&hint)));
                sb_free(&hint);
            }
            p->def_id[flat] = id;
        }
    }
    p->has_lo = xcalloc(e->nfiles ? e->nfiles : 1, 1);
    p->lo_id = xcalloc(e->nfiles ? e->nfiles : 1, sizeof *p->lo_id);
    for (size_t fi = 0; fi < e->nfiles; fi++) {
        /* what else a lookup depends on: the lookup_options files read, and files that do not
         * load (a lookup that walks over one fails, whatever its key) */
        const hv *lo = hv_is(e->files[fi].value, HV_HASH) ? hv_hash_gets(e->files[fi].value, "lookup_options") : NULL;
        p->has_lo[fi] = !e->files[fi].value || lo;
        uint64_t c = 0;
        if (lo && !hv_identity_code(lo, &c))
            c = (uint64_t)fi * 0x9e3779b97f4a7c15ULL; /* (no Sensitive in lookup_options) */
        if (!e->files[fi].value)
            c = text_id(e->files[fi].err.msg ? e->files[fi].err.msg : "");
        p->lo_id[fi] = mix(mix(0x13198a2e03707344ULL, fi + 1), c);
    }
    /* declarations by the class (or "" for top scope) whose body holds them */
    p->decls_by_scope = hv_hash();
    const pp_index *pp = e->pp;
    for (size_t i = 0; i < pp->ndecls; i++) {
        const char *sc = pp->decls[i].scope_class ? pp->decls[i].scope_class : "";
        hv *list = hv_hash_gets(p->decls_by_scope, sc);
        if (!list) {
            list = hv_array();
            hv_hash_sets(p->decls_by_scope, sc, list);
        }
        hv_array_push(list, hv_int((int64_t)i));
        p->has_inclusion = true;
    }
    for (size_t i = 0; i < pp->nlookups; i++)
        if (pp->lookups[i].classes)
            p->has_inclusion = true;
    if (e->opaque_level)
        p->has_inclusion = p->has_inclusion; /* values may come from elsewhere: missing ones are still judged by the lookup */
    /* the class parameters to look up: every parameter of a class with data or declared */
    p->cand_index = hv_hash();
    size_t cap = 0;
    for (size_t ci = 0; ci < pp->nclasses; ci++) {
        const pp_class *cls = &pp->classes[ci];
        if (!cls->header_ok || pp_find_class(pp, cls->name) != cls)
            continue;
        for (size_t pi = 0; pi < cls->nparams; pi++) {
            const pp_param *prm = &cls->params[pi];
            char *key = xjoin(cls->name, "::", prm->name, NULL);
            const ck_key *k = ck_key_get(e, key);
            /* a parameter without data matters only when its class may be included */
            if (!k && (prm->has_default || !p->has_inclusion)) {
                free(key);
                continue;
            }
            if (p->ncands == cap) {
                cap = cap ? cap * 2 : 64;
                p->cands = xrealloc(p->cands, cap * sizeof *p->cands);
            }
            bool typed = false;
            if (prm->type) {
                herr err = {0};
                ptype *t = ptype_parse_with(prm->type, e->aliases, &err);
                herr_clear(&err);
                char *ref = t ? ptype_unresolved(t) : NULL;
                typed = t && !ref;
                free(ref);
                ptype_free(t);
            }
            bool unseen = false;
            for (size_t d = 0; k && d < k->ndefs; d++) {
                const ck_file *f = &e->files[k->defs[d].file];
                if (f->layer == LAYER_MODULE && f->module && !ck_module_visible(e, f->module))
                    unseen = true;
            }
            hv_hash_sets(p->cand_index, key, hv_int((int64_t)p->ncands));
            p->cands[p->ncands++] = (cand){k ? (uint32_t)(k - e->keys) : UINT32_MAX, NULL, cls, prm, typed, unseen};
            free(key);
        }
    }
    p->cand_id = xcalloc(p->ncands ? p->ncands : 1, sizeof *p->cand_id);
    for (size_t i = 0; i < p->ncands; i++) {
        p->cands[i].name = hv_str_ptr(hv_hash_key_at(p->cand_index, i));
        const pp_param *prm = p->cands[i].param;
        p->cand_id[i] = mix(mix(mix(text_id(p->cands[i].name), text_id(prm->type ? prm->type : "")), p->cands[i].typed),
                            prm->has_default);
    }
    p->node_match = xcalloc(p->nnodes ? p->nnodes : 1, sizeof *p->node_match);
    p->prog_node = xcalloc(p->nnodes ? p->nnodes : 1, sizeof *p->prog_node);
    for (size_t i = 0; i < p->nnodes; i++) {
        p->node_match[i] = match_node(pp, p->nodes[i].name);
        p->prog_node[i] = pp_program_match_node(e->prog, p->nodes[i].name);
    }
    /* the levels (flat numbering) and the files each can read */
    p->lvl_base = xcalloc(e->nconfigs + 1, sizeof *p->lvl_base);
    size_t nlv = 0;
    for (size_t ci = 0; ci < e->nconfigs; ci++) {
        p->lvl_base[ci] = nlv;
        nlv += e->configs[ci].nlevels;
    }
    p->lvl_base[e->nconfigs] = nlv;
    p->lvl_files = xcalloc(nlv ? nlv : 1, sizeof *p->lvl_files);
    p->nlvl_files = xcalloc(nlv ? nlv : 1, sizeof *p->nlvl_files);
    for (size_t fi = 0; fi < e->nfiles; fi++)
        for (size_t r = 0; r < e->files[fi].nreach; r++) {
            size_t fl = p->lvl_base[e->files[fi].reach[r].cfg] + e->files[fi].reach[r].level;
            p->lvl_files[fl] = xrealloc(p->lvl_files[fl], (p->nlvl_files[fl] + 1) * sizeof **p->lvl_files);
            p->lvl_files[fl][p->nlvl_files[fl]++] = (uint32_t)fi;
        }
    /* the templates that interpolate variables */
    size_t tcap = 0;
    for (size_t ci = 0; ci < e->nconfigs; ci++)
        for (size_t li = 0; li < e->configs[ci].nlevels; li++) {
            const ck_level *L = &e->configs[ci].levels[li];
            if (L->plan)
                continue;
            for (size_t t = 0; t < L->ntmpls; t++) {
                if (!strstr(L->tmpls[t], "%{"))
                    continue;
                bool mapped = L->lvl->lkind == LOC_MAPPED_PATHS && L->lvl->nlocs == 3;
                struct tvar T = {(uint32_t)ci, (uint32_t)li, L->tmpls[t], L->glob, mapped ? L->lvl->locs[1] : NULL,
                                 NULL, 0, p->nexprs};
                ck_scan_interpolations(L->tmpls[t], strlen(L->tmpls[t]), tvar_item, &T);
                if (mapped) {
                    /* the variable that holds the elements is what a node must have */
                    const char *src = L->lvl->locs[0][0] == ':' && L->lvl->locs[0][1] == ':' ? L->lvl->locs[0] + 2
                                                                                               : L->lvl->locs[0];
                    T.exprs = xrealloc(T.exprs, (T.nexprs + 1) * sizeof *T.exprs);
                    T.exprs[T.nexprs++] = xstrdup(src);
                }
                if (!T.nexprs) {
                    free(T.exprs);
                    continue;
                }
                if (p->ntvars == tcap) {
                    tcap = tcap ? tcap * 2 : 16;
                    p->tvars = xrealloc(p->tvars, tcap * sizeof *p->tvars);
                }
                p->tvars[p->ntvars++] = T;
                p->nexprs += T.nexprs;
            }
        }
}

static void free_plan(plan *p)
{
    for (size_t i = 0; i < p->e->nfiles; i++)
        free(p->fkeys[i]);
    free(p->fkeys);
    free(p->nfkeys);
    free(p->def_base);
    free(p->merged);
    free(p->interp);
    free(p->has_lo);
    free(p->def_id);
    free(p->lo_id);
    free(p->cand_id);
    free(p->cands);
    hv_decref(p->cand_index);
    hv_decref(p->decls_by_scope);
    free(p->node_match);
    free(p->prog_node);
    for (size_t t = 0; t < p->ntvars; t++) {
        for (size_t k = 0; k < p->tvars[t].nexprs; k++)
            free(p->tvars[t].exprs[k]);
        free(p->tvars[t].exprs);
    }
    free(p->tvars);
    for (size_t i = 0; p->lvl_base && i < p->lvl_base[p->e->nconfigs]; i++)
        free(p->lvl_files[i]);
    free(p->lvl_files);
    free(p->nlvl_files);
    free(p->lvl_base);
}

/* ------------------------------------------------------------------ after the nodes */

static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A path relative to the environment's folder, for messages. */
static const char *rel(const ck_env *e, const char *path)
{
    const char *roots[3] = {e->only_module, e->dir, e->codedir};
    for (size_t i = 0; i < 3; i++) {
        size_t dl = roots[i] ? strlen(roots[i]) : 0;
        if (dl && !strncmp(path, roots[i], dl) && path[dl] == '/')
            return path + dl + 1;
    }
    return path;
}

/* The findings of the aggregations: a per-node type error that the data file already shows (the
 * same place and message) names its nodes there instead of being reported twice. */
/* Whether a lookup error is the consequence of a problem already reported (a bad lookup_options
 * regexp or merge, an interpolation the rules refused, a file that does not parse...): the cause
 * is reported once, not again for every key and node it breaks. */
static bool caused_by_reported(ck_ctx *c, const char *msg)
{
    const char *m = strstr(msg, "fails: ");
    m = m ? m + 7 : msg;
    /* the key: "the lookup of 'KEY' fails: ..." */
    char quoted[512] = "";
    const char *ks = strchr(msg, '\''), *ke = ks ? strchr(ks + 1, '\'') : NULL;
    if (ks && ke && (size_t)(ke - ks) < sizeof quoted - 2)
        snprintf(quoted, sizeof quoted, "'%.*s'", (int)(ke - ks - 1), ks + 1);
    /* a block the missing key cannot decrypt (the note says the key is not here) */
    if (c->env->eyaml_key_missing && strstr(m, "hiera-eyaml"))
        return true;
    for (size_t i = 0; i < c->nf; i++) {
        const ck_finding_int *f = &c->f[i];
        if (f->sev != CHECK_ERROR || !strcmp(f->rule, "lookup-error") || !strcmp(f->rule, "parameter-type") ||
            !strcmp(f->rule, "parameter-missing"))
            continue;
        if ((*m && strstr(f->message, m)) || strstr(m, f->message))
            return true;
        if (!strcmp(f->rule, "interpolation-loop") && strstr(m, "Recursive lookup detected"))
            return true;
        if (!strcmp(f->rule, "lookup-options-convert-to") && strstr(m, "convert_to") && *quoted &&
            strstr(f->message, quoted))
            return true;
        if (!strcmp(f->rule, "data-syntax") && strstr(m, "Unable to parse"))
            return true;
    }
    return false;
}

static void emit(ck_ctx *c, hv *agg)
{
    hv *index = hv_hash(); /* "rule\tfile\tline\tcol\tmessage" of the findings so far -> their index */
    for (size_t i = 0; i < c->nf; i++) {
        ck_finding_int *f = &c->f[i];
        if (strcmp(f->rule, "parameter-type") != 0)
            continue;
        char *k = xasprintf("%s\t%s\t%u\t%u\t%s", f->rule, f->file, f->line, f->col, f->message);
        hv_hash_sets(index, k, hv_int((int64_t)i));
        free(k);
    }
    for (size_t i = 0; i < hv_hash_len(agg); i++) {
        const char *k = hv_str_ptr(hv_hash_key_at(agg, i));
        const hv *list = hv_hash_val_at(agg, i);
        size_t n = hv_array_len(list);
        char **names = xmalloc((n ? n : 1) * sizeof *names);
        for (size_t j = 0; j < n; j++)
            names[j] = xstrdup(hv_str_ptr(hv_array_get(list, j)));
        qsort(names, n, sizeof *names, cmp_strp);
        const hv *known = hv_hash_gets(index, k);
        if (known) {
            ck_finding_int *f = &c->f[hv_int_val(known)];
            f->nodes = names;
            f->nnodes = n;
            continue;
        }
        /* rule \t file \t line \t col \t message */
        char *copy = xstrdup(k);
        char *parts[5] = {0}, *save = NULL;
        char *q = copy;
        for (int j = 0; j < 4; j++) {
            char *tab = strchr(q, '\t');
            *tab = 0;
            parts[j] = q;
            q = tab + 1;
        }
        parts[4] = q;
        (void)save;
        if (!strcmp(parts[0], "lookup-error") && caused_by_reported(c, parts[4])) {
            for (size_t j = 0; j < n; j++)
                free(names[j]);
            free(names);
            free(copy);
            continue;
        }
        ck_add_nodes(c, parts[0], 0, parts[1], (uint32_t)strtoul(parts[2], NULL, 10), (uint32_t)strtoul(parts[3], NULL, 10),
                     names, n, parts[4]);
        for (size_t j = 0; j < n; j++)
            free(names[j]);
        free(names);
        free(copy);
    }
    hv_decref(index);
}

/* A variable against the facts of every node. */
static void check_variables(ck_ctx *c, const hv *facts)
{
    ck_env *e = c->env;
    static const char *const builtin[] = {"environment", "facts", "trusted", "server_facts", "name", "title",
                                          "module_name", "servername", "serverip", "serverversion", "calling_module",
                                          "calling_class", "calling_class_path", NULL};
    static const char *const trusted[] = {"authenticated", "certname", "domain", "extensions", "hostname", "external", NULL};
    for (size_t i = 0; i < e->nvars; i++) {
        const ck_var *v = &e->vars[i];
        const hv *r = hv_array_get(v->segs, 0);
        if (!hv_is(r, HV_STRING))
            continue;
        const char *root = hv_str_ptr(r);
        const char *file = v->file != UINT32_MAX ? e->files[v->file].path : v->cfg >= 0 ? e->configs[v->cfg].path : "";
        size_t n = hv_array_len(v->segs);
        if (strstr(root, "::"))
            continue; /* a class's variable */
        if (!strcmp(root, "trusted")) {
            const hv *s1 = n > 1 ? hv_array_get(v->segs, 1) : NULL;
            bool ok = !s1 || !hv_is(s1, HV_STRING);
            for (size_t t = 0; !ok && trusted[t]; t++)
                ok = !strcmp(trusted[t], hv_str_ptr(s1));
            if (!ok)
                ck_add(c, "interpolation-variable", 0, file, v->line, v->col,
                       "%%{%s}: $trusted has no key '%s': the interpolation gives an empty string", v->expr, hv_str_ptr(s1));
            continue;
        }
        size_t from = 0;
        if (!strcmp(root, "facts")) {
            from = 1;
        } else {
            bool known = false;
            for (size_t b = 0; builtin[b] && !known; b++)
                known = !strcmp(builtin[b], root);
            for (size_t t = 0; e->pp && t < e->pp->ntopvars && !known; t++)
                known = !strcmp(e->pp->topvars[t], root);
            if (known)
                continue;
        }
        /* walk the facts' shape */
        const hv *u = facts;
        sbuf path = {0};
        for (size_t s = from; s < n; s++) {
            const hv *seg = hv_array_get(v->segs, s);
            if (!hv_is(seg, HV_STRING) || !hv_is(u, HV_HASH))
                break; /* an index, or below a value every node has as a leaf */
            const hv *next = hv_hash_gets(u, hv_str_ptr(seg));
            if (path.len)
                sb_addc(&path, '.');
            sb_adds(&path, hv_str_ptr(seg));
            if (!next) {
                /* the closest name at that place */
                const char *best = NULL;
                size_t bd = 3, sl = strlen(hv_str_ptr(seg)), cap = sl < 5 ? 1 : 2;
                for (size_t k = 0; k < hv_hash_len(u); k++) {
                    const char *name = hv_str_ptr(hv_hash_key_at(u, k));
                    size_t d = ck_distance(hv_str_ptr(seg), name, cap);
                    if (d <= cap && d < bd) {
                        bd = d;
                        best = name;
                    }
                }
                ck_add(c, "interpolation-variable", 0, file, v->line, v->col,
                       "%%{%s}: no node of the facts folder has the fact '%s'%s%s%s: the interpolation gives an empty "
                       "string",
                       v->expr, sb_str(&path), best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
                break;
            }
            u = next;
        }
        sb_free(&path);
    }
}

int ck_nodes(ck_ctx *c, char **error)
{
    ck_env *e = c->env;
    plan p = {.c = c, .e = e};
    const check_nodes *given = c->o->nodes;
    if (given) {
        /* the caller's nodes (PuppetDB's): no file, node i's facts from the caller */
        p.nodes = xcalloc(given->n ? given->n : 1, sizeof *p.nodes);
        for (size_t i = 0; i < given->n; i++)
            p.nodes[i] = (nodesrc){xstrdup(given->names[i]), NULL};
        p.nnodes = given->n;
        if (given->begin)
            given->begin(given->data);
    } else if (!list_nodes(c->o->facts_dir, &p.nodes, &p.nnodes, error)) {
        return -1;
    }
    c->report->nodes += p.nnodes;
    make_plan(&p);
    /* the type system's built-in aliases are made on first use: made here, before the threads */
    ptype_free(ptype_parse("RichData", NULL));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nthreads = c->o->jobs > 0 ? (size_t)c->o->jobs : cpus > 0 ? (size_t)(cpus < 8 ? cpus : 8) : 1;
    if (nthreads > p.nnodes)
        nthreads = p.nnodes ? p.nnodes : 1;
    worker *ws = xcalloc(nthreads, sizeof *ws);
    pthread_t *tids = xcalloc(nthreads, sizeof *tids);
    for (size_t t = 0; t < nthreads; t++) {
        worker *w = &ws[t];
        w->p = &p;
        w->view = e->node_texts ? overlay_new_view(e->node_texts) : snapshot_new_view(e->snap); /* the caller's texts first */
        w->aliases = ptype_aliases_new();
        for (size_t i = 0; i < e->pp->naliases; i++)
            ptype_aliases_add(w->aliases, e->pp->aliases[i].name, e->pp->aliases[i].body);
        w->types = xcalloc(p.ncands ? p.ncands : 1, sizeof *w->types);
        for (size_t i = 0; i < p.ncands; i++)
            if (p.cands[i].typed)
                w->types[i] = ptype_parse_with(p.cands[i].param->type, w->aliases, NULL);
        w->agg = hv_hash();
        w->reached = xcalloc(e->nfiles ? e->nfiles : 1, 1);
        w->used = xcalloc(p.ndefs ? p.ndefs : 1, 1);
        w->over = xmalloc((p.ndefs ? p.ndefs : 1) * sizeof *w->over);
        memset(w->over, 0xff, (p.ndefs ? p.ndefs : 1) * sizeof *w->over);
        w->sigstamp = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->sigstamp);
        w->siga = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->siga);
        w->sigb = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->sigb);
        w->sigi = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->sigi);
        w->stamp0 = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->stamp0);
        w->stampm = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->stampm);
        w->first0 = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->first0);
        w->firstm = xcalloc(e->nkeys ? e->nkeys : 1, sizeof *w->firstm);
        w->facts = hv_hash();
        w->errors = hv_hash();
        w->maybe = xcalloc(e->nfiles ? e->nfiles : 1, 1);
        w->maybe_stamp = xcalloc(e->nfiles ? e->nfiles : 1, sizeof *w->maybe_stamp);
        w->provided = xcalloc(p.nexprs ? p.nexprs : 1, 1);
        w->unknown_vars = hv_hash();
        w->failed = hv_hash();
    }
    if (e->node_memo) {
        /* a session: the results of its last run (what they depend on names them) */
        for (size_t t = 0; t < nthreads; t++)
            for (size_t i = 0; i < e->node_memo->cap; i++) {
                const struct memo_ent *m = &e->node_memo->v[i];
                if (m->a) {
                    struct memo_ent *n = memo_slot(&ws[t], m->a, m->b, true);
                    n->st = m->st;
                    n->msg = m->msg ? xstrdup(m->msg) : NULL;
                }
            }
    }
    if (nthreads == 1) {
        work(&ws[0]);
    } else {
        for (size_t t = 0; t < nthreads; t++)
            if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0)
                tids[t] = 0, work(&ws[t]);
        for (size_t t = 0; t < nthreads; t++)
            if (tids[t])
                pthread_join(tids[t], NULL);
    }
    /* merge what the threads found */
    worker *w0 = &ws[0];
    for (size_t t = 1; t < nthreads; t++) {
        worker *w = &ws[t];
        for (size_t i = 0; i < e->nfiles; i++)
            w0->reached[i] |= w->reached[i];
        for (size_t i = 0; i < p.ndefs; i++) {
            w0->used[i] |= w->used[i];
            if (w->over[i] < w0->over[i])
                w0->over[i] = w->over[i];
        }
        for (size_t i = 0; i < hv_hash_len(w->agg); i++) {
            const char *k = hv_str_ptr(hv_hash_key_at(w->agg, i));
            const hv *list = hv_hash_val_at(w->agg, i);
            hv *mine = hv_hash_gets(w0->agg, k);
            if (!mine) {
                mine = hv_array();
                hv_hash_sets(w0->agg, k, mine);
            }
            for (size_t j = 0; j < hv_array_len(list); j++)
                hv_array_push(mine, hv_incref(hv_array_get(list, j)));
        }
        union_merge(w0->facts, w->facts);
        for (size_t i = 0; i < e->nfiles; i++)
            w0->maybe[i] |= w->maybe[i];
        for (size_t i = 0; i < p.nexprs; i++)
            w0->provided[i] |= w->provided[i];
        for (size_t i = 0; i < hv_hash_len(w->unknown_vars); i++)
            if (!hv_hash_get(w0->unknown_vars, hv_hash_key_at(w->unknown_vars, i)))
                hv_hash_set(w0->unknown_vars, hv_incref(hv_hash_key_at(w->unknown_vars, i)),
                            hv_incref(hv_hash_val_at(w->unknown_vars, i)));
        for (size_t i = 0; i < hv_hash_len(w->failed); i++)
            hv_hash_set(w0->failed, hv_incref(hv_hash_key_at(w->failed, i)), hv_incref(hv_hash_val_at(w->failed, i)));
        for (size_t i = 0; i < hv_hash_len(w->errors); i++)
            hv_hash_set(w0->errors, hv_incref(hv_hash_key_at(w->errors, i)), hv_incref(hv_hash_val_at(w->errors, i)));
    }
    emit(c, w0->agg);
    if (e->opaque_level)
        ck_note(c, xasprintf("%s, which hiera check cannot read: what a node's lookup finds there is not known, so no "
                             "lookup-error, parameter-type or parameter-missing is claimed for the nodes whose lookups "
                             "it may answer",
                             e->opaque_level));
    check_variables(c, w0->facts);
    for (size_t i = 0; i < hv_hash_len(w0->errors); i++)
        ck_note(c, xasprintf("node %s is not checked: %s", hv_str_ptr(hv_hash_key_at(w0->errors, i)),
                             hv_str_ptr(hv_hash_val_at(w0->errors, i))));
    /* files no node reads; definitions no node uses */
    bool any_node = p.nnodes > hv_hash_len(w0->errors);
    /* templates with a variable no node has a value for (a fact the facts folder lacks, an ENC's
     * parameter): their files are not claimed unreached (the variable's own finding says it) */
    uint8_t *unprovided = xcalloc(e->nfiles ? e->nfiles : 1, 1);
    for (size_t t = 0; any_node && t < p.ntvars; t++) {
        const struct tvar *T = &p.tvars[t];
        const char *missing = NULL;
        for (size_t k = 0; k < T->nexprs && !missing; k++) {
            char *root = root_of(T->exprs[k]);
            if (!w0->provided[T->base + k] && !hv_hash_gets(w0->unknown_vars, root))
                missing = T->exprs[k];
            free(root);
        }
        if (!missing)
            continue;
        size_t fl = p.lvl_base[T->cfg] + T->level, nf = 0;
        for (size_t i = 0; i < p.nlvl_files[fl]; i++) {
            uint32_t fi = p.lvl_files[fl][i];
            if (!w0->reached[fi] && !w0->maybe[fi] && tmpl_match(T->tmpl, e->files[fi].path, T->glob)) {
                nf += !unprovided[fi];
                unprovided[fi] = 1;
            }
        }
        if (nf)
            ck_note(c, xasprintf("no node of the facts folder has a value for %%{%s} (a fact the facts lack, a variable "
                                 "an ENC sets?): the %zu file%s level '%s' of %s reads with it %s not reported unreached",
                                 missing, nf, nf == 1 ? "" : "s", e->configs[T->cfg].levels[T->level].name,
                                 e->configs[T->cfg].path, nf == 1 ? "is" : "are"));
    }
    if (hv_hash_len(w0->unknown_vars)) {
        sbuf names = {0}, why = {0};
        for (size_t i = 0; i < hv_hash_len(w0->unknown_vars); i++) {
            sb_addf(&names, "%s$%s", i ? ", " : "", hv_str_ptr(hv_hash_key_at(w0->unknown_vars, i)));
            const char *y = hv_str_ptr(hv_hash_val_at(w0->unknown_vars, i));
            if (*y && !strstr(sb_str(&why), y))
                sb_addf(&why, "%s%s", why.len ? ", " : "", y);
        }
        ck_note(c, xasprintf("the main manifest sets %s for some nodes with code hiera check cannot evaluate%s%s%s: the "
                             "files the hierarchy may read with %s are not reported unreached, nor the values nodes "
                             "would find there",
                             sb_str(&names), why.len ? " (" : "", sb_str(&why), why.len ? ")" : "",
                             hv_hash_len(w0->unknown_vars) == 1 ? "it" : "them"));
        sb_free(&names);
        sb_free(&why);
    }
    for (size_t i = 0; i < hv_hash_len(w0->failed) && i < 5; i++)
        ck_note(c, xasprintf("node %s: the main manifest fails: %s", hv_str_ptr(hv_hash_key_at(w0->failed, i)),
                             hv_str_ptr(hv_hash_val_at(w0->failed, i))));
    if (hv_hash_len(w0->failed) > 5)
        ck_note(c, xasprintf("the main manifest fails for %zu more nodes", hv_hash_len(w0->failed) - 5));
    for (size_t fi = 0; any_node && fi < e->nfiles; fi++) {
        const ck_file *f = &e->files[fi];
        if (f->orphan || !f->value || w0->reached[fi] || w0->maybe[fi] || unprovided[fi])
            continue;
        /* a module the lookups cannot find (outside their modulepath) is not judged */
        bool judged = false;
        for (size_t r = 0; r < f->nreach && !judged; r++) {
            const ck_config *cf = &e->configs[f->reach[r].cfg];
            if (cf->levels[f->reach[r].level].plan)
                continue; /* plans' data: no node reads it */
            judged = cf->layer != LAYER_MODULE || (cf->module && ck_module_visible(e, cf->module));
        }
        if (judged)
            ck_add(c, "unreached-file", 0, f->path, 1, 1,
                   "no node of the facts folder (%zu node%s) reads this file: its data is never used", p.nnodes,
                   p.nnodes == 1 ? "" : "s");
    }
    free(unprovided);
    for (size_t k = 0; any_node && k < e->nkeys; k++) {
        const ck_key *kk = &e->keys[k];
        if (p.merged[k])
            continue;
        for (size_t d = 0; d < kk->ndefs; d++) {
            size_t flat = p.def_base[k] + d;
            const ck_def *def = &kk->defs[d];
            if (!w0->reached[def->file] || w0->used[flat] || w0->over[flat] == UINT32_MAX)
                continue;
            const ck_file *of = &e->files[w0->over[flat]];
            const ck_def *od = NULL;
            for (size_t x = 0; x < kk->ndefs; x++)
                if (kk->defs[x].file == w0->over[flat])
                    od = &kk->defs[x];
            bool by_env = of->nreach && e->configs[of->reach[0].cfg].levels[of->reach[0].level].by_env;
            ck_add(c, "shadowed-key", 0, e->files[def->file].path, def->line, def->col,
                   "'%s' is never used%s%s: every node that reads this file finds it first at a higher level (%s:%u)",
                   kk->name, by_env ? " in environment " : "", by_env ? e->name : "", rel(e, of->path), od ? od->line : 0);
        }
    }
    if (e->node_memo) {
        /* kept for the next run: the first thread's table, and what the others found */
        ck_node_memo_clear(e->node_memo);
        for (size_t t = 1; t < nthreads; t++)
            for (size_t i = 0; i < ws[t].memo_cap; i++) {
                struct memo_ent *m = &ws[t].memo[i];
                if (m->a && !memo_slot(&ws[0], m->a, m->b, false)) {
                    struct memo_ent *n = memo_slot(&ws[0], m->a, m->b, true);
                    n->st = m->st;
                    n->msg = m->msg;
                    m->msg = NULL;
                }
            }
        e->node_memo->v = ws[0].memo;
        e->node_memo->n = ws[0].memo_n;
        e->node_memo->cap = ws[0].memo_cap;
        ws[0].memo = NULL;
        ws[0].memo_n = ws[0].memo_cap = 0;
    }
    for (size_t t = 0; t < nthreads; t++) {
        worker *w = &ws[t];
        cache_free(w->view);
        for (size_t i = 0; i < p.ncands; i++)
            ptype_free(w->types[i]);
        free(w->types);
        ptype_aliases_free(w->aliases);
        hv_decref(w->agg);
        free(w->reached);
        free(w->used);
        free(w->over);
        free(w->sigstamp);
        free(w->siga);
        free(w->sigb);
        free(w->sigi);
        for (size_t i = 0; i < w->memo_cap; i++)
            free(w->memo[i].msg);
        free(w->memo);
        free(w->stamp0);
        free(w->stampm);
        free(w->first0);
        free(w->firstm);
        hv_decref(w->facts);
        hv_decref(w->errors);
        free(w->maybe);
        free(w->maybe_stamp);
        free(w->provided);
        hv_decref(w->unknown_vars);
        hv_decref(w->failed);
    }
    free(ws);
    free(tids);
    for (size_t i = 0; i < p.nnodes; i++) {
        free(p.nodes[i].name);
        free(p.nodes[i].path);
    }
    free(p.nodes);
    free_plan(&p);
    return 0;
}

struct ck_node_memo *ck_node_memo_new(void) { return xcalloc(1, sizeof(struct ck_node_memo)); }

void ck_node_memo_clear(struct ck_node_memo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->v[i].msg);
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
}

void ck_node_memo_free(struct ck_node_memo *m)
{
    if (m)
        ck_node_memo_clear(m);
    free(m);
}
