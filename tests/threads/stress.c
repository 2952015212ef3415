/* stress.c - answers every recorded case (tests/cases/NAME/case.json) from many threads at once,
 * each thread with its own contexts and its own cache, and checks that every answer is the one a
 * single thread gives. Built with ThreadSanitizer by `make check-tsan`, which makes any data race
 * between separate contexts a failure.
 *
 * A case is answered as tests/run-cases.py has the hiera command answer it, in process:
 *  - Hiera 5 (puppet lookup): the facts file, hiera_new and hiera_lookup_result as `hiera lookup`
 *    uses them (src/cli/lookup_cmd.c), the answer being what that command would print (exit code,
 *    stdout, and the error message it prints on stderr);
 *  - Hiera 3: h3_new_file / h3_lookup and the command's output forms (JSON.dump, YAML, pp) as
 *    `hiera -c` prints them (src/cli/hiera3_cmd.c).
 * Paths the cases give relative to the working directory, which threads share, are made absolute:
 * a version 3 hiera.yaml (Hiera 3, or Puppet's global one) is copied into a scratch folder with its
 * :datadir: and eyaml key paths absolute, and a relative `keydir` fact (eyaml keys) is prefixed
 * with the case folder.
 * THREADS threads each answer every query ROUNDS times, each round in its own shuffled order, with a
 * new context per query (over one cache per thread, frozen in every other thread). They run first,
 * so that they meet the library's process-wide state (lazily built types, Oniguruma) uninitialised.
 * Then the main thread answers every query once, in case order, and its answers are checked
 * against expected.json as run-cases.py checks them (value, not found, errors, exact text with the
 * case folder written <CASE>), except the text of Hiera 3 output forms other than JSON and of
 * explanations that name the paths of a copied configuration, which run-cases.py checks; Hiera 3
 * queries that give the command more than a key (options, scope files, defaults) are left to
 * run-cases.py too. Every thread's answer must equal the single-thread one.
 *
 * Values never cross threads: every thread builds its own requests, facts and scopes from plain C
 * strings read once by the main thread.
 *
 * usage: stress [--threads N] [--rounds N] [--scratch DIR] CASES_DIR
 * Prints one FAIL line per wrong answer and ends with "N passed, N failed". */
#include "hiera.h"

#include "base/util.h"
#include "base/value.h"
#include "formats/render.h"
#include "hiera3/hiera3.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ cases and queries */

typedef struct {
    char *dir;    /* absolute */
    char *name;   /* folder name */
    bool hiera3;  /* engine hiera3 */
    char *node, *environment, *facts;
    char *h3config; /* a version 3 hiera.yaml copied with absolute paths (see the top) */
} scase;

typedef struct {
    scase *c;
    int index;
    char **keys;
    size_t nkeys;
    /* Hiera 5 */
    char *merge; /* strategy, or NULL */
    char *knockout_prefix;
    bool sort_merged_arrays, merge_hash_arrays;
    char *dflt; /* default (a string, as the command passes it), or NULL */
    char *type;
    bool explain, explain_options;
    char *render; /* --render-as, or NULL */
    /* Hiera 3 */
    char *format;   /* json (default here, as run-cases.py asks), yaml, ruby */
    int resolution; /* 0 priority, 1 array, 2 hash */
    char **scope;   /* name, value, name, value... */
    size_t nscope;
    /* expected.json */
    enum { X_VALUE, X_OUTPUT, X_LOOKUP_ERROR, X_ERROR, X_NOT_FOUND } x;
    char *x_value; /* X_VALUE: the expected value as hiera_render writes it in JSON */
    char *x_output;
    int x_status;
    char *baseline; /* the single-thread answer */
} squery;

static scase *cases;
static size_t ncases;
static squery *queries;
static size_t nqueries;
static size_t nskipped; /* queries that give the command line its own arguments (Hiera 3 options,
                          * a case's "args", a facts cache, Facter): run-cases.py runs those */

static char *dupstr(const char *s) { return s ? xstrdup(s) : NULL; }

static const char *str_of(const hiera_value *v)
{
    return v && hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
}

static bool bool_of(const hiera_value *v) { return v && hiera_value_kind(v) == HIERA_BOOLEAN && hiera_value_bool(v); }

/* Python's str() of a scalar, as run-cases.py passes it on the command line */
static char *scalar_text(const hiera_value *v)
{
    hiera_error e = {0};
    if (hiera_value_kind(v) == HIERA_STRING)
        return xstrdup(hiera_value_string(v));
    if (hiera_value_kind(v) == HIERA_BOOLEAN)
        return xstrdup(hiera_value_bool(v) ? "True" : "False");
    char *t = hiera_render(v, HIERA_RENDER_JSON, &e);
    hiera_error_clear(&e);
    return t ? t : xstrdup("");
}

/* ------------------------------------------------------------------ Hiera 3 configuration copy */

static bool path_key(const char *line, size_t *vstart)
{
    static const char *const keys[] = {":datadir:", ":pkcs7_private_key:", ":pkcs7_public_key:"};
    const char *p = line;
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        size_t n = strlen(keys[i]);
        if (strncmp(p, keys[i], n) == 0) {
            p += n;
            while (*p == ' ')
                p++;
            *vstart = (size_t)(p - line);
            return true;
        }
    }
    return false;
}

/* Copies a v3 hiera.yaml with relative :datadir: and key paths made absolute (dir/...). */
static char *copy_h3_config(const char *dir, const char *scratch, const char *name)
{
    char *src = xasprintf("%s/hiera.yaml", dir);
    FILE *in = fopen(src, "r");
    if (!in) {
        fprintf(stderr, "stress: cannot read %s: %s\n", src, strerror(errno));
        exit(2);
    }
    char *dst = xasprintf("%s/%s.yaml", scratch, name);
    FILE *out = fopen(dst, "w");
    if (!out) {
        fprintf(stderr, "stress: cannot write %s: %s\n", dst, strerror(errno));
        exit(2);
    }
    char line[4096];
    while (fgets(line, sizeof line, in)) {
        size_t v;
        if (path_key(line, &v)) {
            char *val = line + v;
            val[strcspn(val, "\n")] = 0;
            size_t n = strlen(val);
            if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
                val[n - 1] = 0;
                val++;
            }
            if (val[0] != '/')
                fprintf(out, "%.*s\"%s/%s\"\n", (int)v, line, dir, val);
            else
                fprintf(out, "%.*s\"%s\"\n", (int)v, line, val);
        } else {
            fputs(line, out);
        }
    }
    fclose(in);
    if (fclose(out) != 0) {
        fprintf(stderr, "stress: cannot write %s\n", dst);
        exit(2);
    }
    free(src);
    return dst;
}

/* A version 3 hiera.yaml (Puppet reads one as the global configuration too). */
static bool is_v3_config(const char *dir)
{
    char *p = xasprintf("%s/hiera.yaml", dir);
    FILE *f = fopen(p, "r");
    free(p);
    if (!f)
        return false;
    char line[4096];
    bool v3 = false;
    while (!v3 && fgets(line, sizeof line, f))
        v3 = strncmp(line, ":backends:", 10) == 0;
    fclose(f);
    return v3;
}

/* ------------------------------------------------------------------ reading the cases */

/* Python's json writes NaN, Infinity and -Infinity (expected.json may hold them): they become the
 * string NONFINITE, whose queries only run-cases.py checks. */
#define NONFINITE "\"(non-finite float)\""

static hiera_value *load_json(const char *path)
{
    hiera_error e = {0};
    FILE *f = fopen(path, "r");
    sbuf text = {0};
    if (f) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            sb_addn(&text, buf, n);
        fclose(f);
    }
    sbuf clean = {0};
    bool in_str = false;
    for (size_t i = 0; i < text.len; i++) {
        char c = text.s[i];
        if (in_str) {
            sb_addc(&clean, c);
            if (c == '\\' && i + 1 < text.len)
                sb_addc(&clean, text.s[++i]);
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
            sb_addc(&clean, c);
        } else if (!strncmp(text.s + i, "NaN", 3) || !strncmp(text.s + i, "Infinity", 8) ||
                   !strncmp(text.s + i, "-Infinity", 9)) {
            sb_adds(&clean, NONFINITE);
            i += text.s[i] == 'N' ? 2 : text.s[i] == 'I' ? 7 : 8;
        } else {
            sb_addc(&clean, c);
        }
    }
    hiera_value *v = f ? hiera_value_from_json(sb_str(&clean), &e) : NULL;
    sb_free(&text);
    sb_free(&clean);
    if (!v) {
        fprintf(stderr, "stress: %s: %s\n", path, e.message ? e.message : "cannot read");
        exit(2);
    }
    return v;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void read_cases(const char *root, const char *scratch)
{
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "stress: %s: %s\n", root, strerror(errno));
        exit(2);
    }
    char **names = NULL;
    size_t nnames = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *p = xasprintf("%s/%s/case.json", root, de->d_name);
        struct stat st;
        if (stat(p, &st) == 0) {
            names = xrealloc(names, (nnames + 1) * sizeof *names);
            names[nnames++] = xstrdup(de->d_name);
        }
        free(p);
    }
    closedir(d);
    qsort(names, nnames, sizeof *names, cmp_names);
    char *absroot = realpath(root, NULL);
    cases = xcalloc(nnames ? nnames : 1, sizeof *cases);
    for (size_t i = 0; i < nnames; i++) {
        scase *c = &cases[ncases++];
        c->name = names[i];
        c->dir = xasprintf("%s/%s", absroot, names[i]);
        char *p = xasprintf("%s/case.json", c->dir);
        hiera_value *spec = load_json(p);
        free(p);
        p = xasprintf("%s/expected.json", c->dir);
        hiera_value *exp = load_json(p);
        free(p);
        const char *engine = str_of(hiera_value_hash_get(spec, "engine"));
        c->hiera3 = engine && strcmp(engine, "hiera3") == 0;
        const char *s = str_of(hiera_value_hash_get(spec, "node"));
        c->node = xstrdup(s ? s : "node1.example.com");
        s = str_of(hiera_value_hash_get(spec, "environment"));
        c->environment = xstrdup(s ? s : "production");
        s = str_of(hiera_value_hash_get(spec, "facts"));
        c->facts = xasprintf("%s/%s", c->dir, s ? s : "facts.yaml");
        if (c->hiera3 || is_v3_config(c->dir))
            c->h3config = copy_h3_config(c->dir, scratch, c->name);
        const hiera_value *qs = hiera_value_hash_get(spec, "queries");
        const hiera_value *spec_scope = hiera_value_hash_get(spec, "scope");
        size_t nq = hiera_value_array_size(qs);
        if (hiera_value_array_size(exp) != nq) {
            fprintf(stderr, "stress: %s: %zu queries but %zu answers\n", c->name, nq, hiera_value_array_size(exp));
            exit(2);
        }
        queries = xrealloc(queries, (nqueries + nq) * sizeof *queries);
        for (size_t j = 0; j < nq; j++) {
            const hiera_value *q = hiera_value_array_get(qs, j), *x = hiera_value_array_get(exp, j);
            squery *sq = &queries[nqueries++];
            memset(sq, 0, sizeof *sq);
            sq->c = c;
            sq->index = (int)j;
            const hiera_value *k = hiera_value_hash_get(q, "key");
            const char *k0 = hiera_value_kind(k) == HIERA_ARRAY ? str_of(hiera_value_array_get(k, 0)) : str_of(k);
            /* the command line's own arguments, or an environment of the query's own (a context
                             * is made per case here) */
            bool own_args = hiera_value_hash_get(spec, "args") || hiera_value_hash_get(spec, "hiera_args") ||
                            hiera_value_hash_get(spec, "needs") || hiera_value_hash_get(q, "args") ||
                            hiera_value_hash_get(q, "hiera_args") || hiera_value_hash_get(q, "environment");
            if (own_args || (c->hiera3 && ((hiera_value_kind(k) == HIERA_ARRAY && hiera_value_array_size(k) > 1) ||
                                           (k0 && k0[0] == '-')))) {
                /* `hiera KEY ARGS...`: options, scope files and defaults the command parses */
                nqueries--;
                nskipped++;
                continue;
            }
            if (hiera_value_kind(k) == HIERA_ARRAY) {
                sq->nkeys = hiera_value_array_size(k);
                sq->keys = xcalloc(sq->nkeys ? sq->nkeys : 1, sizeof *sq->keys);
                for (size_t m = 0; m < sq->nkeys; m++)
                    sq->keys[m] = xstrdup(str_of(hiera_value_array_get(k, m)));
            } else {
                sq->nkeys = 1;
                sq->keys = xcalloc(1, sizeof *sq->keys);
                sq->keys[0] = xstrdup(str_of(k));
            }
            const hiera_value *m = hiera_value_hash_get(q, "merge");
            if (m && hiera_value_kind(m) == HIERA_STRING) {
                sq->merge = xstrdup(hiera_value_string(m));
            } else if (m && hiera_value_kind(m) == HIERA_HASH) {
                sq->merge = dupstr(str_of(hiera_value_hash_get(m, "strategy")));
                sq->knockout_prefix = dupstr(str_of(hiera_value_hash_get(m, "knockout_prefix")));
                sq->sort_merged_arrays = bool_of(hiera_value_hash_get(m, "sort_merged_arrays"));
                sq->merge_hash_arrays = bool_of(hiera_value_hash_get(m, "merge_hash_arrays"));
            }
            const hiera_value *dv = hiera_value_hash_get(q, "default");
            if (dv)
                sq->dflt = scalar_text(dv);
            sq->type = dupstr(str_of(hiera_value_hash_get(q, "type")));
            sq->explain = bool_of(hiera_value_hash_get(q, "explain"));
            sq->explain_options = bool_of(hiera_value_hash_get(q, "explain_options"));
            sq->render = dupstr(str_of(hiera_value_hash_get(q, "render")));
            const char *fmt = str_of(hiera_value_hash_get(q, "format"));
            sq->format = xstrdup(fmt ? fmt : "json");
            const char *res = str_of(hiera_value_hash_get(q, "resolution"));
            sq->resolution = !res ? 0 : !strcmp(res, "array") ? 1 : !strcmp(res, "hash") ? 2 : 0;
            const hiera_value *sc = hiera_value_hash_get(q, "scope");
            if (!sc)
                sc = spec_scope;
            if (sc) {
                sq->nscope = hiera_value_hash_size(sc);
                sq->scope = xcalloc(2 * sq->nscope + 1, sizeof *sq->scope);
                for (size_t m2 = 0; m2 < sq->nscope; m2++) {
                    sq->scope[2 * m2] = scalar_text(hiera_value_hash_key(sc, m2));
                    sq->scope[2 * m2 + 1] = scalar_text(hiera_value_hash_value(sc, m2));
                }
            }
            if (hiera_value_hash_get(x, "output")) {
                sq->x = X_OUTPUT;
                sq->x_output = xstrdup(str_of(hiera_value_hash_get(x, "output")));
                const hiera_value *st = hiera_value_hash_get(x, "status");
                sq->x_status = st ? (int)hiera_value_int(st) : 0;
            } else if (hiera_value_hash_get(x, "lookup_error")) {
                sq->x = X_LOOKUP_ERROR;
            } else if (hiera_value_hash_get(x, "error")) {
                sq->x = X_ERROR;
            } else if (hiera_value_hash_get(x, "not_found")) {
                sq->x = X_NOT_FOUND;
            } else {
                hiera_error e = {0};
                sq->x = X_VALUE;
                sq->x_value = hiera_render(hiera_value_hash_get(x, "value"), HIERA_RENDER_JSON, &e);
                hiera_error_clear(&e);
            }
        }
        hiera_value_decref(spec);
        hiera_value_decref(exp);
    }
    free(names);
    free(absroot);
}

/* ------------------------------------------------------------------ answering */

typedef struct {
    int status;   /* the command's exit code */
    sbuf out;     /* what it prints on stdout */
    sbuf err;     /* the message it prints on stderr */
} answer;

/* Ruby's puts */
static void puts_to(sbuf *b, const char *text)
{
    size_t n = strlen(text);
    sb_addn(b, text, n);
    if (n == 0 || text[n - 1] != '\n')
        sb_addc(b, '\n');
}

/* A thread's contexts for the current round, one per case, made on first use. */
typedef struct {
    hiera_cache *cache;
    hiera **ctx;          /* per case; NULL: not made yet */
    hiera_value **facts;  /* per case */
    char **ctx_error;     /* per case: why hiera_new or the facts failed (the command's message) */
} worker_state;

static void state_reset(worker_state *w)
{
    for (size_t i = 0; i < ncases; i++) {
        hiera_free(w->ctx[i]);
        hiera_value_decref(w->facts[i]);
        free(w->ctx_error[i]);
        w->ctx[i] = NULL;
        w->facts[i] = NULL;
        w->ctx_error[i] = NULL;
    }
}

/* hiera_new as `hiera lookup` calls it (the facts file, the facts rule) */
static hiera *context_for(worker_state *w, const scase *c, answer *a)
{
    size_t ci = (size_t)(c - cases);
    if (!w->ctx[ci] && !w->ctx_error[ci]) {
        hiera_error err = {0};
        hiera_value *facts = hiera_value_load_file(c->facts, &err);
        const char *keydir = facts ? str_of(hiera_value_hash_get(facts, "keydir")) : NULL;
        if (keydir && keydir[0] != '/' && !c->h3config) {
            /* eyaml key paths are relative to the working directory: made absolute (a copied v3
             * configuration has them absolute already) */
            hiera_value *abs = hiera_value_new_hash();
            for (size_t i = 0; i < hiera_value_hash_size(facts); i++) {
                const char *k = hiera_value_string(hiera_value_hash_key(facts, i));
                if (strcmp(k, "keydir") == 0) {
                    char *p = xasprintf("%s/%s", c->dir, keydir);
                    hiera_value_hash_set(abs, k, hiera_value_new_string(p));
                    free(p);
                } else {
                    hiera_value_hash_set(abs, k, hiera_value_incref(hiera_value_hash_value(facts, i)));
                }
            }
            hiera_value_decref(facts);
            facts = abs;
        }
        if (!facts) {
            w->ctx_error[ci] = xasprintf("Error: Could not run: %s", err.message);
        } else if (hiera_value_kind(facts) != HIERA_HASH) {
            w->ctx_error[ci] = xasprintf("Error: Could not run: Incorrectly formatted data in %s given via the --facts flag (only accepts yaml and json files)", c->facts);
        } else {
            static const char *trusted[] = {"hostname", "domain", "fqdn", "clientcert"};
            int n = 0;
            for (int i = 0; i < 4; i++)
                if (hiera_value_hash_get(facts, trusted[i]))
                    n++;
            if (n && n != 4)
                w->ctx_error[ci] = xasprintf("Error: Could not run: When overriding any of the hostname,domain,fqdn,clientcert facts with %s given via the --facts flag, they must all be overridden.", c->facts);
            else if (hiera_value_hash_size(facts) == 0)
                w->ctx_error[ci] = xasprintf("Error: Could not run: No facts available for target node: %s", c->node);
        }
        if (!w->ctx_error[ci]) {
            char *envpath = xasprintf("%s/environments", c->dir);
            char *config = c->h3config ? xstrdup(c->h3config) : xasprintf("%s/hiera.yaml", c->dir);
            hiera_options o = {.size = sizeof o, .codedir = c->dir, .environmentpath = envpath, .hiera_config = config,
                               .environment = c->environment, .node = c->node, .facts = facts, .cache = w->cache};
            w->ctx[ci] = hiera_new(&o, &err);
            if (!w->ctx[ci])
                w->ctx_error[ci] = xasprintf("Error: Could not run: %s", err.message);
            free(envpath);
            free(config);
        }
        w->facts[ci] = facts;
        hiera_error_clear(&err);
    }
    if (!w->ctx[ci]) {
        a->status = 1;
        sb_adds(&a->err, w->ctx_error[ci]);
    }
    return w->ctx[ci];
}

static void fatal(answer *a, const char *msg)
{
    a->status = 1;
    sb_addf(&a->err, "Error: Could not run: %s", msg ? msg : "");
}

/* src/cli/lookup_cmd.c's lookup_main, printing into a */
static void answer_puppet(worker_state *w, const squery *q, answer *a)
{
    bool deep = q->merge && strcmp(q->merge, "deep") == 0;
    if ((q->sort_merged_arrays || q->merge_hash_arrays || q->knockout_prefix) && !deep) {
        fatal(a, "The options --knock-out-prefix, --sort-merged-arrays, and --merge-hash-arrays are only available with '--merge deep'");
        return;
    }
    hiera_value *merge = NULL, *dflt = NULL;
    if (q->merge) {
        merge = hiera_value_new_hash();
        hiera_value_hash_set(merge, "strategy", hiera_value_new_string(q->merge));
        if (deep) {
            hiera_value_hash_set(merge, "sort_merged_arrays", hiera_value_new_bool(q->sort_merged_arrays));
            hiera_value_hash_set(merge, "merge_hash_arrays", hiera_value_new_bool(q->merge_hash_arrays));
            if (q->knockout_prefix)
                hiera_value_hash_set(merge, "knockout_prefix", hiera_value_new_string(q->knockout_prefix));
        }
    }
    bool explain = q->explain || q->explain_options;
    const char *format = q->render ? q->render : explain ? "s" : "json";
    hiera_render_format rf = !strcmp(format, "yaml") ? HIERA_RENDER_YAML : !strcmp(format, "s") ? HIERA_RENDER_S
                                                                                                 : HIERA_RENDER_JSON;
    hiera *h = context_for(w, q->c, a);
    if (!h) {
        hiera_value_decref(merge);
        return;
    }
    if (q->dflt)
        dflt = hiera_value_new_string(q->dflt);
    hiera_request req = {.size = sizeof req, .keys = (const char *const *)q->keys, .nkeys = q->nkeys, .merge = merge,
                         .default_value = dflt, .type = q->type};
    if (q->explain)
        req.explain |= HIERA_EXPLAIN_DATA;
    if (q->explain_options)
        req.explain |= HIERA_EXPLAIN_OPTIONS;
    hiera_result *result = NULL;
    hiera_error err = {0};
    hiera_status st = hiera_lookup_result(h, &req, &result, &err);
    const hiera_value *value = hiera_result_value(result);
    if (st == HIERA_ERROR && err.kind == HIERA_ERR_FATAL) {
        fatal(a, err.message);
    } else if (explain) {
        if (rf == HIERA_RENDER_S) {
            char *text = hiera_result_explanation_text(result);
            sb_adds(&a->out, text ? text : "");
            if (!text || !*text)
                sb_addc(&a->out, '\n');
            free(text);
        } else {
            hiera_value *tree = hiera_result_explanation_tree(result);
            hiera_error rerr = {0};
            char *text = hiera_render(tree, rf == HIERA_RENDER_YAML ? HIERA_RENDER_YAML_SHARED : rf, &rerr);
            hiera_value_decref(tree);
            if (text)
                puts_to(&a->out, text);
            else
                fatal(a, rerr.message);
            free(text);
            hiera_error_clear(&rerr);
        }
    } else if (st == HIERA_OK) {
        char *text = hiera_render(value, rf, &err);
        if (text)
            puts_to(&a->out, text);
        else
            fatal(a, err.message);
        free(text);
    } else {
        a->status = 1;
        if (st == HIERA_ERROR && err.message)
            sb_addf(&a->err, "Error: %s", err.message);
    }
    hiera_result_free(result);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    hiera_error_clear(&err);
    state_reset(w); /* a context per query, as the command makes one per run */
}

/* src/cli/hiera3_cmd.c's run and output_answer, printing into a */
static void answer_hiera3(const squery *q, answer *a)
{
    hv *scope = hv_hash();
    for (size_t i = 0; i < q->nscope; i++)
        hv_hash_set(scope, hv_str(q->scope[2 * i]), hv_str(q->scope[2 * i + 1]));
    hv *dflt = q->dflt ? hv_str(q->dflt) : NULL;
    herr e = {0};
    const char *rbclass = "RuntimeError";
    h3 *h = h3_new_file(q->c->h3config, &rbclass, &e);
    if (!h) {
        a->status = 1;
        sb_addf(&a->err, "Failed to start Hiera: %s: %s", rbclass, e.msg);
        herr_clear(&e);
        hv_decref(scope);
        hv_decref(dflt);
        return;
    }
    h3_set_logger(h, "noop");
    h3_resolution res = {q->resolution == 1 ? H3_ARRAY : q->resolution == 2 ? H3_HASH : H3_PRIORITY, false, NULL, NULL};
    hv *ans = NULL;
    h3_result r = h3_lookup(h, q->keys[0], dflt, scope, NULL, &res, &ans, &e);
    if (r == H3_ERROR) {
        a->status = 1;
        sb_addf(&a->err, "hiera: %s", e.msg ? e.msg : "lookup failed");
    } else {
        if (!ans)
            ans = hv_undef();
        if (!strcmp(q->format, "json")) {
            if (h3_json_dump(&a->out, ans, &e) < 0) {
                a->status = 1;
                sb_addf(&a->err, "hiera: %s", e.msg);
            } else {
                sb_addc(&a->out, '\n');
            }
        } else if (!strcmp(q->format, "yaml")) {
            if (render_yaml(&a->out, ans, &e) < 0) {
                a->status = 1;
                sb_addf(&a->err, "hiera: %s", e.msg);
            } else if (!a->out.len || a->out.s[a->out.len - 1] != '\n') {
                sb_addc(&a->out, '\n');
            }
        } else if (hv_is(ans, HV_STRING)) {
            sb_addn(&a->out, hv_str_ptr(ans), hv_str_len(ans));
            if (!a->out.len || a->out.s[a->out.len - 1] != '\n')
                sb_addc(&a->out, '\n');
        } else {
            h3_pp(&a->out, ans, 79); /* not a terminal, no $COLUMNS: 80 - 1 */
        }
        hv_decref(ans);
    }
    herr_clear(&e);
    h3_free(h);
    hv_decref(scope);
    hv_decref(dflt);
}

/* The answer as one string: exit code, stdout, stderr message. */
static char *answer_query(worker_state *w, const squery *q)
{
    answer a = {0};
    if (q->c->hiera3)
        answer_hiera3(q, &a);
    else
        answer_puppet(w, q, &a);
    char *s = xasprintf("exit %d\n--- stdout\n%s--- stderr\n%s\n", a.status, sb_str(&a.out), sb_str(&a.err));
    sb_free(&a.out);
    sb_free(&a.err);
    return s;
}

/* ------------------------------------------------------------------ checking against expected.json */

/* the stdout section of an answer, with the case folder written <CASE> (as run-cases.py does) */
static char *stdout_of(const char *ans, const char *dir)
{
    const char *o = strstr(ans, "--- stdout\n") + 11, *e = strstr(o, "--- stderr\n");
    sbuf b = {0};
    size_t dl = strlen(dir);
    for (const char *p = o; p < e;) {
        if ((size_t)(e - p) >= dl && memcmp(p, dir, dl) == 0) {
            sb_adds(&b, "<CASE>");
            p += dl;
        } else {
            sb_addc(&b, *p++);
        }
    }
    return sb_take(&b);
}

/* NULL when the single-thread answer agrees with expected.json, else why not. "" when the
 * expectation cannot be checked without the command (see the top of this file). */
static char *check_expected(const squery *q, const char *ans)
{
    int status = atoi(ans + 5);
    char *out = stdout_of(ans, q->c->dir), *why = NULL;
    switch (q->x) {
    case X_OUTPUT:
        if (((q->c->hiera3 && strcmp(q->format, "json") != 0) || q->c->h3config) && status == q->x_status)
            why = xstrdup(""); /* pp and YAML forms, paths of the copied configuration: run-cases.py */
        else if (status != q->x_status)
            why = xasprintf("exit %d, expected %d", status, q->x_status);
        else if (strcmp(out, q->x_output) != 0)
            why = xasprintf("output differs:\n%s\nexpected:\n%s", out, q->x_output);
        break;
    case X_LOOKUP_ERROR:
    case X_NOT_FOUND:
        if (status != 1 || out[0])
            why = xasprintf("expected exit 1 and no output, got exit %d: %.300s", status, out);
        break;
    case X_ERROR:
        if (status == 0)
            why = xasprintf("expected an error, got exit 0: %.300s", out);
        break;
    case X_VALUE: {
        if (strstr(q->x_value, NONFINITE)) {
            why = xstrdup("");
            break;
        }
        hiera_error e = {0};
        hiera_value *v = status == 0 ? hiera_value_from_json(out, &e) : NULL;
        char *got = v ? hiera_render(v, HIERA_RENDER_JSON, &e) : NULL;
        if (!got)
            why = xasprintf("expected %.300s, got exit %d: %.300s %s", q->x_value, status, out, strstr(ans, "--- stderr\n") + 11);
        else if (strcmp(got, q->x_value) != 0)
            why = xasprintf("expected %.400s\n      got %.400s", q->x_value, got);
        free(got);
        hiera_value_decref(v);
        hiera_error_clear(&e);
        break;
    }
    }
    free(out);
    return why;
}

/* ------------------------------------------------------------------ threads */

static int nthreads = 8, nrounds = 3;
static long passed, failed;

static void fail_line(const squery *q, const char *fmt, ...) HIERA_PRINTF(2, 3);
static void fail_line(const squery *q, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s#%d %s: ", q->c->name, q->index, q->keys[0]);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static worker_state state_new(bool frozen)
{
    worker_state w = {hiera_cache_new(), xcalloc(ncases + 1, sizeof(hiera *)), xcalloc(ncases + 1, sizeof(hiera_value *)),
                      xcalloc(ncases + 1, sizeof(char *))};
    if (frozen)
        hiera_cache_freeze(w.cache);
    return w;
}

static void state_free(worker_state *w)
{
    state_reset(w);
    free(w->ctx);
    free(w->facts);
    free(w->ctx_error);
    hiera_cache_free(w->cache);
}

/* answers[(thread * nrounds + round) * nqueries + query] */
static char **answers;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    size_t *order = xcalloc(nqueries ? nqueries : 1, sizeof *order);
    worker_state w = state_new(id % 2 == 1);
    for (int round = 0; round < nrounds; round++) {
        for (size_t i = 0; i < nqueries; i++)
            order[i] = i;
        for (size_t i = nqueries; i > 1; i--) {
            size_t j = (size_t)(next_rand(&seed) % i);
            size_t t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        for (size_t i = 0; i < nqueries; i++)
            answers[((size_t)id * (size_t)nrounds + (size_t)round) * nqueries + order[i]] =
                answer_query(&w, &queries[order[i]]);
    }
    state_free(&w);
    free(order);
    return NULL;
}

/* ------------------------------------------------------------------ main */

static void usage(void)
{
    fputs("usage: stress [--threads N] [--rounds N] [--scratch DIR] CASES_DIR\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *root = NULL, *scratch = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            nrounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--scratch") && i + 1 < argc)
            scratch = argv[++i];
        else if (argv[i][0] == '-' || root)
            usage();
        else
            root = argv[i];
    }
    if (!root || nthreads < 1 || nrounds < 0)
        usage();
    char tmpl[] = "/tmp/hiera-stress-XXXXXX";
    char *made = NULL;
    if (!scratch) {
        made = mkdtemp(tmpl);
        if (!made) {
            fprintf(stderr, "stress: mkdtemp: %s\n", strerror(errno));
            return 2;
        }
        scratch = made;
    } else if (mkdir(scratch, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "stress: %s: %s\n", scratch, strerror(errno));
        return 2;
    }
    read_cases(root, scratch);

    /* the threads first, so that they meet the library's process-wide state uninitialised */
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    answers = xcalloc((size_t)nthreads * (size_t)nrounds * nqueries + 1, sizeof *answers);
    pthread_t *th = xcalloc((size_t)nthreads, sizeof *th);
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fprintf(stderr, "stress: pthread_create failed\n");
            return 2;
        }
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    /* then one thread, in case order: the reference answers, checked against expected.json */
    worker_state w = state_new(false);
    long unchecked = 0;
    for (size_t i = 0; i < nqueries; i++) {
        squery *q = &queries[i];
        q->baseline = answer_query(&w, q);
        char *why = check_expected(q, q->baseline);
        if (!why) {
            passed++;
        } else if (!*why) {
            unchecked++;
        } else {
            failed++;
            fail_line(q, "single thread: %s", why);
        }
        free(why);
    }
    state_free(&w);
    clock_gettime(CLOCK_MONOTONIC, &t2);

    for (int t = 0; t < nthreads; t++)
        for (int r = 0; r < nrounds; r++)
            for (size_t i = 0; i < nqueries; i++) {
                char *ans = answers[((size_t)t * (size_t)nrounds + (size_t)r) * nqueries + i];
                if (strcmp(ans, queries[i].baseline) == 0) {
                    passed++;
                } else {
                    failed++;
                    fail_line(&queries[i], "thread %d round %d answered\n%s      where one thread answered\n%s", t, r,
                              ans, queries[i].baseline);
                }
                free(ans);
            }
    free(answers);
    printf("stress: %d threads x %d rounds x %zu queries of %zu cases in %.2f s, then one thread in %.2f s\n", nthreads,
           nrounds, nqueries, ncases, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) / 1e9);
    printf("stress: %ld single-thread answers checked against expected.json only by run-cases.py (output forms), "
           "%zu queries with command-line arguments of their own (Hiera 3 options, a case's args, another environment) left to it\n", unchecked, nskipped);
    printf("%ld passed, %ld failed\n", (long)passed, (long)failed);

    for (size_t i = 0; i < ncases; i++) {
        if (cases[i].h3config)
            unlink(cases[i].h3config);
        free(cases[i].h3config);
        free(cases[i].dir);
        free(cases[i].name);
        free(cases[i].node);
        free(cases[i].environment);
        free(cases[i].facts);
    }
    for (size_t i = 0; i < nqueries; i++) {
        squery *q = &queries[i];
        for (size_t k = 0; k < q->nkeys; k++)
            free(q->keys[k]);
        free(q->keys);
        for (size_t k = 0; k < 2 * q->nscope; k++)
            free(q->scope[k]);
        free(q->scope);
        free(q->merge);
        free(q->knockout_prefix);
        free(q->dflt);
        free(q->type);
        free(q->render);
        free(q->format);
        free(q->x_value);
        free(q->x_output);
        free(q->baseline);
    }
    free(queries);
    free(cases);
    free(th);
    if (made)
        rmdir(made);
    return failed ? 1 : 0;
}
