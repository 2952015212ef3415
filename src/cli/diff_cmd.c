/* diff_cmd.c - `hiera diff OLD NEW`: which nodes' answers change, and how, between two versions of
 * the Hiera data (two folders, or two revisions of a git repository).
 *
 * Each side is read whole once (a snapshot); hiera_snapshot_compare says which keys can answer
 * differently (the keys changed in files, those that read them through interpolation, every key
 * when a hiera.yaml changed); only those are looked up again, on both sides, for every node,
 * by worker threads that each have their own caches over the two snapshots. Answers that differ
 * are grouped (per key, the nodes that got the same change) and printed by diff_report.c.
 *
 * The flags are those of `hiera batch` for what the lookups need (--environment, --facts-dir,
 * --facts, --hiera_config, --merge...); the sides give the code directories. The flag parser is
 * this file's own, small on purpose: the commands are moving to one shared parser (cli/common.c). */
#include "cli/diff_cmd.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "cli/common.h"
#include "cli/diff_report.h"
#include "cli/diff_side.h"
#include "cli/facts_opts.h"

static const char *DIFF_USAGE =
    "usage: hiera diff [--help] OLD NEW [<keys>] [--git-dir <REPO>] [--tree codedir|environment]\n"
    "                  (--facts-dir <DIR> | --old-facts-dir <DIR> --new-facts-dir <DIR> |\n"
    "                   --facts <FILE> [--node <NODE-NAME>] [--trusted <FILE>])\n"
    "                  [--trusted-dir <DIR>] [--keys-file <FILE>]\n"
    "                  [--environment <ENV>] [--confdir <DIR>] [--hiera_config <FILE>]\n"
    "                  [--merge first|unique|hash|deep] [--knock-out-prefix <PREFIX-STRING>]\n"
    "                  [--sort-merged-arrays] [--merge-hash-arrays] [--type <TYPESTRING>]\n"
    "                  [--default <VALUE>] [--format text|json|markdown] [--nodes]\n"
    "                  [--color auto|always|never] [--fail-on changes|failures] [--full]\n"
    "                  [--jobs <N>] [--unsafe-fact-paths]\n"
    "                  [--from-puppetdb | --puppetdb <URL|FILE>] [--nodes-query <QUERY>] ...\n"
    "       hiera diff OLD NEW --explain <KEY> --node <NODE-NAME> [the flags above]\n"
    "\n"
    "Compares the answers of two versions of the Hiera data, for every node and key: added,\n"
    "removed, changed (the paths inside hashes that changed), now failing, no longer failing.\n"
    "OLD and NEW are folders (a code directory with environments/, or an environment), or with\n"
    "--git-dir revisions of that repository (main, HEAD~1, a branch, a tag), read from git\n"
    "without touching its work tree or index (write ./NAME for a folder when --git-dir is given).\n"
    "The nodes are the facts files (NAME.yaml, NAME.yml, NAME.json: a hash of facts, or a file of\n"
    "Puppet's YAML facts cache) of --facts-dir, $trusted as hiera batch takes it, the keys every\n"
    "key either side's data defines, or --keys-file (one per line) and the <keys> given. Only the\n"
    "keys whose answers can differ are looked up again (--full: every key). Values compare as\n"
    "Puppet's == with the types kept apart: hash order does not matter, 1 and 1.0 differ.\n"
    "A relative --hiera_config names the file in each side's tree (an absolute one serves both).\n"
    "--format: text (grouped by key, then by change, with a few nodes each; --nodes lists them\n"
    "all; coloured on a terminal), json (the schema is in README.md) or markdown (for a merge\n"
    "request comment). --explain KEY --node N shows where both sides' answers come from.\n"
    "Exit status: 0 no change, 1 changes (with --fail-on failures: only lookups that now fail),\n"
    "2 trouble (bad options, a side that cannot be read, nodes that could not be compared).\n"
    "The nodes may come from PuppetDB instead of --facts-dir, with the facts hiera lookup --node\n"
    "takes from there (the same facts on both sides):\n"
    "%s";

typedef struct {
    const char *sides[2];
    const char *git_dir, *tree_kind;
    const char *node, *facts, *facts_dir, *facts_dirs[2], *keys_file, *environment, *confdir, *hiera_config;
    const char *merge, *prefix, *default_value, *type, *format, *color, *fail_on, *explain, *jobs, *trusted, *trusted_dir;
    bool has_default, sort_merged_arrays, merge_hash_arrays, unsafe_fact_paths, all_nodes, full;
    cli_pdb_args pdb;            /* PuppetDB as the node set */
    cli_puppet_settings_args ps; /* Puppet's settings for its client */
    const char **keys;
    size_t nkeys;
} diff_args;

/* PuppetDB's nodes: a node whose facts path is "" takes them from here (one pager per run) */
static hiera_facts_source *pdb_src;
static hiera_facts_pager *pdb_pager;

static int usage_error(const char *fmt, const char *arg)
{
    fputs("hiera diff: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nRun 'hiera diff --help' for more details\n", stderr);
    return 2;
}

static void *xmalloc_(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

static void *xrealloc_(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return p;
}

static char *xstrdup_(const char *s)
{
    char *d = strdup(s);
    if (!d) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return d;
}

/* ------------------------------------------------------------------ options */

/* Puppet settings may be written with dashes or underscores; "--name=value" works too. */
static bool flag_is(const char *given, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char a = given[i] == '-' ? '_' : given[i], b = name[i] == '-' ? '_' : name[i];
        if (a != b)
            return false;
    }
    return true;
}

static int parse(int argc, char **argv, diff_args *a)
{
    a->keys = xmalloc_(((size_t)argc + 1) * sizeof *a->keys);
    static const struct {
        const char *name;
        size_t off;
    } value_flags[] = {
        {"git_dir", offsetof(diff_args, git_dir)},
        {"tree", offsetof(diff_args, tree_kind)},
        {"node", offsetof(diff_args, node)},
        {"facts", offsetof(diff_args, facts)},
        {"facts_dir", offsetof(diff_args, facts_dir)},
        {"old_facts_dir", offsetof(diff_args, facts_dirs[0])},
        {"new_facts_dir", offsetof(diff_args, facts_dirs[1])},
        {"keys_file", offsetof(diff_args, keys_file)},
        {"environment", offsetof(diff_args, environment)},
        {"confdir", offsetof(diff_args, confdir)},
        {"hiera_config", offsetof(diff_args, hiera_config)},
        {"merge", offsetof(diff_args, merge)},
        {"knock_out_prefix", offsetof(diff_args, prefix)},
        {"type", offsetof(diff_args, type)},
        {"format", offsetof(diff_args, format)},
        {"color", offsetof(diff_args, color)},
        {"fail_on", offsetof(diff_args, fail_on)},
        {"explain", offsetof(diff_args, explain)},
        {"jobs", offsetof(diff_args, jobs)},
        {"trusted", offsetof(diff_args, trusted)},
        {"trusted_dir", offsetof(diff_args, trusted_dir)},
        {"certname", offsetof(diff_args, ps.certname)},
        {"ssldir", offsetof(diff_args, ps.ssldir)},
        {"hostcert", offsetof(diff_args, ps.hostcert)},
        {"hostprivkey", offsetof(diff_args, ps.hostprivkey)},
        {"localcacert", offsetof(diff_args, ps.localcacert)},
        {"hostcrl", offsetof(diff_args, ps.hostcrl)},
        {"certificate_revocation", offsetof(diff_args, ps.certificate_revocation)},
    };
    size_t npos = 0;
    bool options_done = false;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] != '-' || arg[2] == 0) {
            if (!options_done && strcmp(arg, "--") == 0) {
                options_done = true;
                continue;
            }
            if (npos < 2)
                a->sides[npos++] = arg;
            else
                a->keys[a->nkeys++] = arg;
            continue;
        }
        int pr = cli_pdb_parse_arg(&a->pdb, argc, argv, &i);
        if (pr < 0)
            return 2;
        if (pr > 0)
            continue;
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        bool matched = false;
        for (size_t f = 0; f < sizeof value_flags / sizeof *value_flags && !matched; f++) {
            if (!flag_is(name, nlen, value_flags[f].name))
                continue;
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                return usage_error("option '--%s' needs a value", value_flags[f].name);
            *(const char **)((char *)a + value_flags[f].off) = val;
            matched = true;
        }
        if (matched)
            continue;
        if (flag_is(name, nlen, "default")) {
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                return usage_error("option '--%s' needs a value", "default");
            a->default_value = val;
            a->has_default = true;
        } else if (flag_is(name, nlen, "sort_merged_arrays")) {
            a->sort_merged_arrays = true;
        } else if (flag_is(name, nlen, "merge_hash_arrays")) {
            a->merge_hash_arrays = true;
        } else if (flag_is(name, nlen, "unsafe_fact_paths")) {
            a->unsafe_fact_paths = true;
        } else if (flag_is(name, nlen, "nodes")) {
            a->all_nodes = true;
        } else if (flag_is(name, nlen, "full")) {
            a->full = true;
        } else if (flag_is(name, nlen, "no_color")) {
            a->color = "never";
        } else if (flag_is(name, nlen, "help")) {
            printf(DIFF_USAGE, CLI_PDB_USAGE);
            exit(0);
        } else if (flag_is(name, nlen, "codedir") || flag_is(name, nlen, "environmentpath")) {
            return usage_error("%s: the two sides (OLD and NEW) give the code directories", arg);
        } else {
            return usage_error("invalid option: %s", arg);
        }
    }
    if (npos < 2)
        return usage_error("%s", "give the two sides to compare: hiera diff OLD NEW");
    return 0;
}

/* The merge option as hiera lookup (puppet lookup) builds it; NULL when not given. */
static int build_merge(const diff_args *a, hiera_value **out)
{
    *out = NULL;
    if ((a->sort_merged_arrays || a->merge_hash_arrays || a->prefix) && (!a->merge || strcmp(a->merge, "deep") != 0))
        return usage_error("%s", "The options --knock-out-prefix, --sort-merged-arrays, and --merge-hash-arrays are only "
                                 "available with '--merge deep'");
    if (!a->merge)
        return 0;
    if (strcmp(a->merge, "first") && strcmp(a->merge, "hash") && strcmp(a->merge, "unique") && strcmp(a->merge, "deep"))
        return usage_error("%s", "The --merge option only accepts 'first', 'hash', 'unique', or 'deep'");
    hiera_value *m = hiera_value_new_hash();
    hiera_value_hash_set(m, "strategy", hiera_value_new_string(a->merge));
    if (strcmp(a->merge, "deep") == 0) {
        hiera_value_hash_set(m, "sort_merged_arrays", hiera_value_new_bool(a->sort_merged_arrays));
        hiera_value_hash_set(m, "merge_hash_arrays", hiera_value_new_bool(a->merge_hash_arrays));
        if (a->prefix)
            hiera_value_hash_set(m, "knockout_prefix", hiera_value_new_string(a->prefix));
    }
    *out = m;
    return 0;
}

/* ------------------------------------------------------------------ keys */

typedef struct {
    char **v;
    size_t n, cap;
} strvec;

static void sv_push(strvec *sv, char *s)
{
    if (sv->n == sv->cap) {
        sv->cap = sv->cap ? sv->cap * 2 : 16;
        sv->v = xrealloc_(sv->v, sv->cap * sizeof *sv->v);
    }
    sv->v[sv->n++] = s;
}

static void sv_free(strvec *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    memset(sv, 0, sizeof *sv);
}

/* One key per line; blanks around it dropped; blank lines and # comments skipped. */
static int read_keys_file(const char *path, strvec *keys)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hiera diff: cannot read the keys file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = 0;
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s && *s != '#')
            sv_push(keys, xstrdup_(s));
    }
    bool bad = ferror(f);
    free(line);
    if (!is_stdin)
        fclose(f);
    if (bad) {
        fprintf(stderr, "hiera diff: cannot read the keys file %s\n", path);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ nodes */

typedef struct {
    char *name;
    char *facts[2];    /* the facts file on each side (the same string when shared), NULL: none */
    char *refused[2];  /* why the node's facts cannot be used on a side (two files for it) */
} dnode;

static size_t facts_name_len(const char *file)
{
    static const char *exts[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(file);
    for (size_t i = 0; i < 3; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcmp(file + n - e, exts[i]) == 0)
            return n - e;
    }
    return 0;
}

typedef struct {
    char *name, *path;
} facts_file;

static int cmp_facts_file(const void *a, const void *b)
{
    const facts_file *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->path, y->path);
}

/* The facts files of a folder, sorted by node name (hidden files and folders skipped). */
static int list_facts_dir(const char *dir, facts_file **out, size_t *nout)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "hiera diff: cannot read the facts folder %s: %s\n", dir, strerror(errno));
        return -1;
    }
    facts_file *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t nl = facts_name_len(de->d_name);
        if (de->d_name[0] == '.' || !nl)
            continue;
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
            continue;
        struct stat st;
        if (de->d_type != DT_REG && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) {
            free(path);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            v = xrealloc_(v, cap * sizeof *v);
        }
        v[n].name = strndup(de->d_name, nl);
        v[n].path = path;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, n, sizeof *v, cmp_facts_file);
    *out = v;
    *nout = n;
    return 0;
}

static void free_facts_files(facts_file *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].path);
    }
    free(v);
}

/* The nodes of both sides by name: lists[s] sorted (names may repeat: two files for a node). */
static dnode *merge_nodes(facts_file *lists[2], size_t counts[2], bool shared, size_t *nout)
{
    dnode *nodes = NULL;
    size_t n = 0, cap = 0, i[2] = {0, 0};
    while (i[0] < counts[0] || i[1] < counts[1]) {
        const char *name = NULL;
        for (int s = 0; s < 2; s++)
            if (i[s] < counts[s] && (!name || strcmp(lists[s][i[s]].name, name) < 0))
                name = lists[s][i[s]].name;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            nodes = xrealloc_(nodes, cap * sizeof *nodes);
        }
        dnode *d = &nodes[n++];
        memset(d, 0, sizeof *d);
        d->name = xstrdup_(name);
        for (int s = 0; s < 2; s++) {
            while (i[s] < counts[s] && strcmp(lists[s][i[s]].name, name) == 0) {
                if (!d->facts[s]) {
                    d->facts[s] = xstrdup_(lists[s][i[s]].path);
                } else if (!d->refused[s]) {
                    if (asprintf(&d->refused[s], "more than one facts file for this node: %s and %s", d->facts[s],
                                 lists[s][i[s]].path) < 0)
                        d->refused[s] = NULL;
                }
                i[s]++;
            }
        }
        if (shared && d->facts[0] && d->facts[1] && strcmp(d->facts[0], d->facts[1]) == 0) {
            free(d->facts[1]);
            d->facts[1] = d->facts[0]; /* read once for both sides */
        }
    }
    *nout = n;
    return nodes;
}

static void free_nodes(dnode *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(nodes[i].name);
        free(nodes[i].facts[0]);
        if (nodes[i].facts[1] != nodes[i].facts[0])
            free(nodes[i].facts[1]);
        free(nodes[i].refused[0]);
        free(nodes[i].refused[1]);
    }
    free(nodes);
}

/* ------------------------------------------------------------------ messages */

/* msg with the side's folders written relative to its tree (the same file is then named alike
 * on both sides, and the scratch folder of a git side never shows). malloc'ed. */
static char *normalize(const diff_side *s, const char *msg)
{
    if (!msg || !*msg)
        return xstrdup_("unknown error");
    struct {
        const char *from;
        const char *to;
        bool slash;
    } subs[] = {
        {s->root, "", true}, {s->tree, "", true}, {s->root, ".", false}, {s->tree, ".", false},
        {s->environmentpath, "<environmentpath>", false}, {s->codedir, "<codedir>", false},
    };
    char *cur = xstrdup_(msg);
    for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
        if (!subs[i].from || !*subs[i].from)
            continue;
        size_t fl = strlen(subs[i].from) + (subs[i].slash ? 1 : 0), tl = strlen(subs[i].to);
        char *pat = xmalloc_(fl + 1);
        memcpy(pat, subs[i].from, fl - (subs[i].slash ? 1 : 0));
        if (subs[i].slash)
            pat[fl - 1] = '/';
        pat[fl] = 0;
        if (!strstr(cur, pat)) {
            free(pat);
            continue;
        }
        size_t cap = strlen(cur) + 1, len = 0;
        char *out = xmalloc_(cap);
        for (const char *p = cur; *p;) {
            const char *hit = strstr(p, pat);
            size_t take = hit ? (size_t)(hit - p) : strlen(p);
            if (len + take + tl + 1 > cap) {
                cap = (len + take + tl + 1) * 2;
                out = xrealloc_(out, cap);
            }
            memcpy(out + len, p, take);
            len += take;
            p += take;
            if (!hit)
                break;
            memcpy(out + len, subs[i].to, tl);
            len += tl;
            p += fl;
        }
        out[len] = 0;
        free(cur);
        free(pat);
        cur = out;
    }
    return cur;
}

/* ------------------------------------------------------------------ diagnostics */

/* Warnings are said once each (per side), at the end: thousands of nodes would repeat them. */
static pthread_mutex_t diag_mu = PTHREAD_MUTEX_INITIALIZER;
static strvec diag_seen;

static void collect_diagnostic(const hiera_diagnostic *d, void *userdata)
{
    const diff_side *s = userdata;
    char *m = normalize(s, d->message);
    char *line = NULL;
    if (asprintf(&line, "%s: (%s) %s", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", s->label, m) < 0)
        line = NULL;
    free(m);
    if (!line)
        return;
    pthread_mutex_lock(&diag_mu);
    bool seen = false;
    for (size_t i = 0; i < diag_seen.n && !seen; i++)
        seen = strcmp(diag_seen.v[i], line) == 0;
    if (!seen && diag_seen.n < 1000)
        sv_push(&diag_seen, line);
    else
        free(line);
    pthread_mutex_unlock(&diag_mu);
}

static void print_diagnostics(void)
{
    for (size_t i = 0; i < diag_seen.n; i++)
        fprintf(stderr, "%s\n", diag_seen.v[i]);
    sv_free(&diag_seen);
}

/* ------------------------------------------------------------------ facts */

/* The checks hiera lookup makes on a facts file; a message (malloc'ed) when it cannot be used. */
static char *check_facts(const char *path, const char *node, const hiera_value *facts)
{
    char *m = NULL;
    hiera_error err = {0};
    if (hiera_facts_check_given(facts, path, &err) != HIERA_OK) {
        m = err.message;
        err.message = NULL;
        hiera_error_clear(&err);
        return m;
    }
    if (hiera_value_hash_size(facts) == 0) {
        if (asprintf(&m, "No facts available for target node: %s", node) < 0)
            m = NULL;
        return m ? m : xstrdup_("no facts");
    }
    return NULL;
}

/* What a node is looked up with on one side, as hiera batch reads it: its facts (given, as
 * --facts gives them, or stored: a file of Puppet's YAML facts cache, as --node reads it there)
 * and its trusted hash (--trusted FILE, --trusted-dir DIR; NULL: from its facts). */
typedef struct {
    hiera_value *facts;
    bool stored;
    hiera_value *trusted;
} node_facts;

static void node_facts_clear(node_facts *nf)
{
    hiera_value_decref(nf->facts);
    hiera_value_decref(nf->trusted);
    memset(nf, 0, sizeof *nf);
}

static hiera_value *load_trusted(hiera_cache *cache, const diff_args *a, const char *node, char **msg)
{
    char *path = NULL;
    if (a->trusted) {
        path = xstrdup_(a->trusted);
    } else if (a->trusted_dir) {
        static const char *exts[] = {".yaml", ".yml", ".json"};
        for (size_t i = 0; i < 3 && !path; i++) {
            char *p = NULL;
            struct stat st;
            if (asprintf(&p, "%s/%s%s", a->trusted_dir, node, exts[i]) >= 0 && stat(p, &st) == 0)
                path = p;
            else
                free(p);
        }
        if (!path) {
            if (asprintf(msg, "no trusted data for this node in %s (%s.yaml, %s.yml or %s.json)", a->trusted_dir, node,
                         node, node) < 0)
                *msg = xstrdup_("no trusted data for this node");
            return NULL;
        }
    } else {
        return NULL;
    }
    hiera_error err = {0};
    hiera_value *t = hiera_cache_load_value_file(cache, path, &err);
    if (!t)
        *msg = xstrdup_(err.message && *err.message ? err.message : "cannot read the trusted data file");
    hiera_error_clear(&err);
    free(path);
    return t;
}

/* A node's facts from PuppetDB (node i of the run, or by name without a run): as load_facts. */
static bool load_pdb_facts(hiera_cache *cache, const diff_args *a, size_t ni, const char *node, node_facts *nf,
                           char **msg)
{
    memset(nf, 0, sizeof *nf);
    hiera_node_facts fn;
    hiera_error ferr = {0};
    hiera_status fst = pdb_pager ? hiera_facts_pager_get(pdb_pager, ni, &fn, &ferr)
                                 : hiera_facts_source_get(pdb_src, node, NULL, &fn, &ferr);
    if (fst == HIERA_OK) {
        nf->stored = fn.base != NULL;
        nf->facts = nf->stored ? fn.base : fn.given;
        fn.base = fn.given = NULL;
    } else {
        *msg = ferr.message ? ferr.message : xstrdup_("no facts");
        ferr.message = NULL;
    }
    hiera_node_facts_clear(&fn);
    hiera_error_clear(&ferr);
    if (!*msg)
        nf->trusted = load_trusted(cache, a, node, msg);
    if (*msg) {
        node_facts_clear(nf);
        return false;
    }
    return true;
}

static bool load_facts(hiera_cache *cache, const diff_args *a, const char *path, const char *node, node_facts *nf,
                       char **msg)
{
    if (!*path)
        return load_pdb_facts(cache, a, 0, node, nf, msg);
    memset(nf, 0, sizeof *nf);
    hiera_error err = {0};
    int kind = HIERA_FACTS_FILE;
    hiera_value *f = hiera_facts_load(cache, path, node, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
    if (!f) {
        *msg = xstrdup_(err.message && *err.message ? err.message : "cannot read the facts file");
        hiera_error_clear(&err);
        return false;
    }
    nf->stored = kind == HIERA_FACTS_CACHE;
    if (nf->stored && hiera_value_hash_size(f) == 0) {
        if (asprintf(msg, "No facts available for target node: %s", node) < 0)
            *msg = xstrdup_("No facts available");
    } else if (!nf->stored) {
        *msg = check_facts(path, node, f);
    }
    if (!*msg)
        nf->trusted = load_trusted(cache, a, node, msg);
    nf->facts = f;
    if (*msg) {
        node_facts_clear(nf);
        return false;
    }
    return true;
}

static bool node_facts_same(const node_facts *x, const node_facts *y)
{
    return x->stored == y->stored && (x->facts == y->facts || hiera_value_same(x->facts, y->facts)) &&
           (x->trusted == y->trusted || (x->trusted && y->trusted && hiera_value_same(x->trusted, y->trusted)));
}

/* ------------------------------------------------------------------ the run */

typedef struct {
    const diff_args *a;
    diff_side *side[2];
    hiera_snapshot *snap[2];
    dnode *nodes;
    size_t nnodes;
    const char *const *dirty; /* the keys looked up again for every node */
    size_t ndirty;
    const char *const *all;   /* every key considered (a node whose facts differ gets them all) */
    size_t nall;
    uint32_t *dirty_idx;      /* a dirty key's index in all (the report's key list) */
    unsigned char *is_dirty;  /* per key of all */
    hiera_value *reached;     /* keys whose answers may differ (also outside the keys considered) */
    bool full;
    hiera_request req;
    hiera_cache *facts_cache;
    atomic_size_t next, done_nodes, lookups;
} run_s;

typedef struct {
    run_s *r;
    pthread_t th;
    bool started;
    hiera_cache *view[2];
    gtable groups;
    trouble *troubles;
    size_t ntroubles;
} worker;

static void add_trouble(worker *w, uint32_t node, char *msg)
{
    w->troubles = xrealloc_(w->troubles, (w->ntroubles + 1) * sizeof *w->troubles);
    w->troubles[w->ntroubles++] = (trouble){node, msg};
}

/* Whether facts interpolate (when looked up) a key whose answer may differ: such a node's every
 * key is looked up again. */
static bool facts_reach(const run_s *r, const hiera_value *facts)
{
    hiera_value *roots = hiera_value_lookups(facts);
    bool hit = false;
    for (size_t i = 0; i < hiera_value_array_size(roots) && !hit; i++)
        hit = hiera_value_hash_get(r->reached, hiera_value_string(hiera_value_array_get(roots, i))) != NULL;
    hiera_value_decref(roots);
    return hit;
}

static void lookup_outcome(run_s *r, int s, hiera *h, const char *key, outcome *o)
{
    hiera_request req = r->req;
    req.keys = &key;
    req.nkeys = 1;
    hiera_error err = {0};
    o->v = NULL;
    o->msg = NULL;
    o->st = hiera_lookup(h, &req, &o->v, &err);
    if (o->st == HIERA_ERROR)
        o->msg = normalize(r->side[s], err.message);
    hiera_error_clear(&err);
}

/* A node being compared: its contexts on both sides (or why one cannot be made). */
typedef struct {
    uint32_t ni;
    bool live;  /* compared (not refused, not a trouble) */
    bool whole; /* every key, not only the dirty ones */
    hiera *h[2];
    char *fail[2];
} node_run;

static void node_open(worker *w, uint32_t ni, node_run *nr)
{
    run_s *r = w->r;
    const dnode *d = &r->nodes[ni];
    memset(nr, 0, sizeof *nr);
    nr->ni = ni;
    if (!d->facts[0] || !d->facts[1])
        return; /* on one side only: said once, not compared */
    node_facts nf[2] = {{0}, {0}};
    char *msg = NULL;
    bool shared = d->facts[1] == d->facts[0];
    for (int s = 0; s < 2 && !msg; s++) {
        if (d->refused[s])
            msg = xstrdup_(d->refused[s]);
        else if (s == 1 && shared)
            nf[1] = (node_facts){hiera_value_incref(nf[0].facts), nf[0].stored, hiera_value_incref(nf[0].trusted)};
        else if (!*d->facts[s])
            load_pdb_facts(r->facts_cache, r->a, ni, d->name, &nf[s], &msg);
        else
            load_facts(r->facts_cache, r->a, d->facts[s], d->name, &nf[s], &msg);
    }
    if (msg) {
        add_trouble(w, ni, msg);
        node_facts_clear(&nf[0]);
        node_facts_clear(&nf[1]);
        return;
    }
    /* which keys: every one when the facts differ or reach a changed key */
    nr->whole = r->full || (!shared && !node_facts_same(&nf[0], &nf[1])) || facts_reach(r, nf[0].facts) ||
                (!shared && facts_reach(r, nf[1].facts));
    for (int s = 0; s < 2; s++) {
        const diff_side *sd = r->side[s];
        hiera_options o = {.size = sizeof o, .codedir = sd->codedir, .confdir = r->a->confdir,
                           .environmentpath = sd->environmentpath, .hiera_config = sd->hiera_config,
                           .environment = r->a->environment, .node = d->name,
                           .facts = nf[s].stored ? NULL : nf[s].facts, .base_facts = nf[s].stored ? nf[s].facts : NULL,
                           .trusted = nf[s].trusted, .cache = w->view[s], .unsafe_fact_paths = r->a->unsafe_fact_paths,
                           .diagnostics = collect_diagnostic, .diagnostics_data = (void *)sd};
        hiera_error err = {0};
        nr->h[s] = hiera_new(&o, &err);
        if (!nr->h[s])
            nr->fail[s] = normalize(sd, err.message);
        hiera_error_clear(&err);
        node_facts_clear(&nf[s]);
    }
    if (!nr->h[0] && !nr->h[1] && strcmp(nr->fail[0], nr->fail[1]) == 0) {
        add_trouble(w, ni, nr->fail[0]); /* nothing to compare */
        nr->fail[0] = NULL;
        free(nr->fail[1]);
        nr->fail[1] = NULL;
        return;
    }
    nr->live = true;
}

/* Compares key ki (an index into the keys considered) for the node. */
static size_t node_key(worker *w, node_run *nr, uint32_t ki)
{
    run_s *r = w->r;
    const char *key = r->all[ki];
    outcome o[2];
    size_t lookups = 0;
    for (int s = 0; s < 2; s++) {
        if (nr->h[s]) {
            lookup_outcome(r, s, nr->h[s], key, &o[s]);
            lookups++;
        } else {
            o[s] = (outcome){HIERA_ERROR, NULL, xstrdup_(nr->fail[s])};
        }
    }
    if (outcome_same(&o[0], &o[1])) {
        outcome_clear(&o[0]);
        outcome_clear(&o[1]);
    } else {
        gt_add(&w->groups, ki, nr->ni, &o[0], &o[1]);
    }
    return lookups;
}

static void node_close(node_run *nr)
{
    for (int s = 0; s < 2; s++) {
        hiera_free(nr->h[s]);
        free(nr->fail[s]);
    }
}

/* Nodes are taken a block at a time, and each key is compared for every node of the block
 * before the next key (as hiera batch does): what the caches keep for a key (its key index entry,
 * options, remembered merges) is then still at hand for the next node. */
#define NODE_BLOCK 16

static void *worker_main(void *arg)
{
    worker *w = arg;
    run_s *r = w->r;
    node_run nr[NODE_BLOCK];
    for (;;) {
        size_t lo = atomic_fetch_add(&r->next, NODE_BLOCK);
        if (lo >= r->nnodes)
            break;
        size_t hi = lo + NODE_BLOCK < r->nnodes ? lo + NODE_BLOCK : r->nnodes, n = hi - lo;
        bool any_whole = false;
        for (size_t j = 0; j < n; j++) {
            node_open(w, (uint32_t)(lo + j), &nr[j]);
            any_whole |= nr[j].live && nr[j].whole;
        }
        size_t lookups = 0;
        if (any_whole) {
            for (size_t k = 0; k < r->nall; k++)
                for (size_t j = 0; j < n; j++)
                    if (nr[j].live && (nr[j].whole || r->is_dirty[k]))
                        lookups += node_key(w, &nr[j], (uint32_t)k);
        } else {
            for (size_t d = 0; d < r->ndirty; d++)
                for (size_t j = 0; j < n; j++)
                    if (nr[j].live)
                        lookups += node_key(w, &nr[j], r->dirty_idx[d]);
        }
        for (size_t j = 0; j < n; j++)
            node_close(&nr[j]);
        atomic_fetch_add_explicit(&r->lookups, lookups, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->done_nodes, n, memory_order_relaxed);
    }
    return NULL;
}

static size_t default_jobs(void)
{
    long n = 0;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (size_t)n;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* HIERA_DIFF_TIMING=1: each phase's wall and CPU time on stderr (for bench/diff-bench.py) */
static void phase(const char *name, double t0)
{
    static int on = -1;
    static double last_wall, last_cpu;
    if (on < 0) {
        const char *e = getenv("HIERA_DIFF_TIMING");
        on = e && *e && strcmp(e, "0") != 0;
        last_wall = t0;
        last_cpu = 0;
    }
    if (!on)
        return;
    struct timespec c;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    double wall = now_seconds(), cpu = (double)c.tv_sec + (double)c.tv_nsec / 1e9;
    fprintf(stderr, "hiera diff: %-10s %7.3f s wall %7.3f s cpu\n", name, wall - last_wall, cpu - last_cpu);
    last_wall = wall;
    last_cpu = cpu;
}

/* ------------------------------------------------------------------ snapshots */

typedef struct {
    const diff_args *a;
    const diff_side *side;
    hiera_cache *disk; /* lends its disk cache to the parse (folders only), or NULL */
    hiera_snapshot *snap;
    pthread_t th;
} snap_job;

static void *build_snapshot(void *arg)
{
    snap_job *j = arg;
    hiera_options o = {.size = sizeof o, .codedir = j->side->codedir, .confdir = j->a->confdir,
                       .environmentpath = j->side->environmentpath, .hiera_config = j->side->hiera_config,
                       .environment = j->a->environment, .cache = j->disk};
    hiera_error err = {0};
    j->snap = hiera_snapshot_new(&o, &err);
    hiera_error_clear(&err);
    return NULL;
}

/* ------------------------------------------------------------------ files the snapshots do not read */

/* The snapshots hold every hiera.yaml and every file a hierarchy level can name. A layer can also
 * read data without a hiera.yaml of its own, through the deprecated settings Puppet 7 still honours
 * (environment_data_provider in environment.conf, "data_provider" in a module's metadata.json):
 * a change to such a setting, or to a data file of a layer that has one and no hiera.yaml (on
 * either side), is one the fast path cannot follow, and every key is looked up again. Other files
 * (manifests, templates, a module's files without data) change no answer. The folders walked are
 * the environment's and the modules'; a file both sides have with the same device and inode (a
 * checkout's hard link) is not read. */
typedef struct {
    const char *root[2];
    hiera_value *known; /* relative paths the snapshots read -> true */
    char *reason;       /* the first change that needs every key, or NULL */
    size_t entries;
} tree_walk;

static bool is_data_name(const char *name)
{
    static const char *exts[] = {".yaml", ".yml", ".json", ".conf", ".eyaml"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcmp(name + n - e, exts[i]) == 0)
            return true;
    }
    return false;
}

static bool same_file_bytes(const char *a, const char *b, const struct stat *sa, const struct stat *sb)
{
    if (sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino)
        return true;
    return sa->st_size == sb->st_size && file_same_bytes(a, b);
}

/* Whether a file of the layer folder (rel's first layer_len bytes; 0: the tree itself) holds text
 * on either side. */
static bool layer_file_has(const tree_walk *w, const char *rel, size_t layer_len, const char *file, const char *text)
{
    for (int s = 0; s < 2; s++) {
        char *p = NULL;
        if (asprintf(&p, "%s/%.*s%s%s", w->root[s], (int)layer_len, rel, layer_len ? "/" : "", file) < 0)
            return true;
        sbuf b = {0};
        file_read_error fe;
        bool opened = file_read(p, &b, NULL, &fe) || fe.failed != FILE_READ_OPEN;
        free(p);
        bool hit = opened && (!text || memmem(sb_str(&b), b.len, text, strlen(text)) != NULL);
        sb_free(&b);
        if (hit)
            return true;
    }
    return false;
}

/* The layer folder of rel (relative to a tree whose environment part starts at env_prefix): the
 * length of "modules/NAME" (or of env_prefix + "modules/NAME"), else of the environment folder. */
static size_t layer_of(const char *rel, const char *env_prefix)
{
    size_t el = strlen(env_prefix);
    const char *r = rel;
    if (el && strncmp(rel, env_prefix, el) == 0)
        r = rel + el;
    else if (strncmp(rel, "modules/", 8) != 0)
        return el ? el - 1 : 0;
    if (strncmp(r, "modules/", 8) == 0) {
        const char *end = strchr(r + 8, '/');
        if (end)
            return (size_t)(end - rel);
    }
    return el ? el - 1 : 0;
}

static void note_change(tree_walk *w, const char *rel, const char *env_prefix)
{
    if (w->reason || hiera_value_hash_get(w->known, rel))
        return;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    size_t layer = layer_of(rel, env_prefix);
    const char *setting = NULL;
    char *m = NULL;
    if (!strcmp(base, "environment.conf") && layer_file_has(w, rel, layer, "environment.conf", "environment_data_provider"))
        setting = "environment_data_provider";
    else if (!strcmp(base, "metadata.json") && layer_file_has(w, rel, layer, "metadata.json", "data_provider"))
        setting = "data_provider";
    if (setting) {
        if (asprintf(&m, "%s changed (its %s names a legacy data provider)", rel, setting) < 0)
            m = NULL;
    } else if (is_data_name(base) && !layer_file_has(w, rel, layer, "hiera.yaml", NULL) &&
               (layer_file_has(w, rel, layer, "metadata.json", "data_provider") ||
                layer_file_has(w, rel, layer, "environment.conf", "environment_data_provider"))) {
        if (asprintf(&m, "%s changed in a layer that a legacy data provider reads (no hiera.yaml)", rel) < 0)
            m = NULL;
    }
    w->reason = m;
}

static void walk_trees(tree_walk *w, const char *rel, const char *env_prefix, int depth)
{
    if (w->reason || depth > 32 || w->entries > 2000000)
        return;
    /* the names on both sides */
    strvec names = {0};
    hiera_value *seen = hiera_value_new_hash();
    for (int s = 0; s < 2; s++) {
        char *dir = NULL;
        if (asprintf(&dir, "%s%s%s", w->root[s], *rel ? "/" : "", rel) < 0)
            continue;
        DIR *d = opendir(dir);
        free(dir);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.')
                continue; /* (., .., .git and hidden files) */
            w->entries++;
            if (!hiera_value_hash_get(seen, de->d_name)) {
                hiera_value_hash_set(seen, de->d_name, hiera_value_new_bool(true));
                sv_push(&names, xstrdup_(de->d_name));
            }
        }
        closedir(d);
    }
    for (size_t i = 0; i < names.n && !w->reason; i++) {
        char *sub = NULL, *p[2] = {NULL, NULL};
        if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", names.v[i]) < 0)
            break;
        struct stat st[2];
        bool there[2];
        for (int s = 0; s < 2; s++) {
            if (asprintf(&p[s], "%s/%s", w->root[s], sub) < 0)
                p[s] = NULL;
            there[s] = p[s] && stat(p[s], &st[s]) == 0;
        }
        bool dir0 = there[0] && S_ISDIR(st[0].st_mode), dir1 = there[1] && S_ISDIR(st[1].st_mode);
        if (dir0 || dir1) {
            walk_trees(w, sub, env_prefix, depth + 1); /* (a side without it: all its files differ) */
            if (!(dir0 && dir1))
                note_change(w, sub, env_prefix);
        } else if (there[0] != there[1] || (there[0] && !same_file_bytes(p[0], p[1], &st[0], &st[1]))) {
            note_change(w, sub, env_prefix);
        }
        free(p[0]);
        free(p[1]);
        free(sub);
    }
    sv_free(&names);
    hiera_value_decref(seen);
}

/* The reason every key must be looked up again because of a file the snapshots do not read, or
 * NULL (malloc'ed). */
static char *unseen_changes(diff_side side[2], hiera_snapshot *snap[2], const char *environment)
{
    tree_walk w = {{side[0].tree, side[1].tree}, hiera_value_new_hash(), NULL, 0};
    for (int s = 0; s < 2; s++) {
        hiera_value *d = hiera_snapshot_describe(snap[s]);
        const char *lists[] = {"files", "configs"};
        size_t tl = strlen(side[s].root);
        for (int l = 0; l < 2; l++) {
            const hiera_value *arr = hiera_value_hash_get(d, lists[l]);
            for (size_t i = 0; i < hiera_value_array_size(arr); i++) {
                const char *path = hiera_value_string(hiera_value_hash_get(hiera_value_array_get(arr, i), "path"));
                if (path && strncmp(path, side[s].root, tl) == 0 && path[tl] == '/')
                    hiera_value_hash_set(w.known, path + tl + 1, hiera_value_new_bool(true));
            }
        }
        hiera_value_decref(d);
    }
    if (side[0].env_kind && side[1].env_kind) {
        walk_trees(&w, "", "", 0);
    } else {
        char *env = NULL;
        if (asprintf(&env, "environments/%s", environment) >= 0) {
            char *prefix = NULL;
            if (asprintf(&prefix, "%s/", env) >= 0)
                walk_trees(&w, env, prefix, 1);
            free(prefix);
        }
        free(env);
        walk_trees(&w, "modules", "", 1);
    }
    hiera_value_decref(w.known);
    return w.reason;
}

/* ------------------------------------------------------------------ --explain */

static void explain_side(const diff_args *a, const diff_side *s, const char *node, const char *facts_path,
                         const hiera_request *base, outcome *o, hiera_value **prov, char **text)
{
    *prov = NULL;
    *text = NULL;
    char *msg = NULL;
    hiera_cache *cache = hiera_cache_new();
    node_facts nf;
    if (!load_facts(cache, a, facts_path, node, &nf, &msg)) {
        *o = (outcome){HIERA_ERROR, NULL, msg};
        hiera_cache_free(cache);
        return;
    }
    hiera_options opts = {.size = sizeof opts, .codedir = s->codedir, .confdir = a->confdir,
                          .environmentpath = s->environmentpath, .hiera_config = s->hiera_config,
                          .environment = a->environment, .node = node, .facts = nf.stored ? NULL : nf.facts,
                          .base_facts = nf.stored ? nf.facts : NULL, .trusted = nf.trusted, .cache = cache,
                          .unsafe_fact_paths = a->unsafe_fact_paths, .diagnostics = collect_diagnostic,
                          .diagnostics_data = (void *)s};
    hiera_error err = {0};
    hiera *h = hiera_new(&opts, &err);
    node_facts_clear(&nf);
    if (!h) {
        *o = (outcome){HIERA_ERROR, NULL, normalize(s, err.message)};
        hiera_error_clear(&err);
        hiera_cache_free(cache);
        return;
    }
    hiera_request req = *base;
    req.keys = &a->explain;
    req.nkeys = 1;
    req.explain = HIERA_EXPLAIN_PROVENANCE;
    hiera_result *res = NULL;
    o->st = hiera_lookup_result(h, &req, &res, &err);
    o->v = o->st == HIERA_OK ? hiera_value_incref(hiera_result_value(res)) : NULL;
    o->msg = o->st == HIERA_ERROR ? normalize(s, err.message) : NULL;
    hiera_error_clear(&err);
    if (o->st == HIERA_OK) {
        hiera_value *tree = hiera_result_provenance_tree(res);
        char *t = hiera_result_provenance_text(res);
        *prov = tree;
        *text = t ? normalize(s, t) : NULL;
        free(t);
    } else {
        /* where it looked: the explanation */
        hiera_result_free(res);
        res = NULL;
        req.explain = HIERA_EXPLAIN_DATA;
        if (hiera_lookup_result(h, &req, &res, &err) != HIERA_OK || res) {
            char *t = res ? hiera_result_explanation_text(res) : NULL;
            *text = t ? normalize(s, t) : NULL;
            free(t);
        }
        hiera_error_clear(&err);
    }
    hiera_result_free(res);
    hiera_free(h);
    hiera_cache_free(cache);
}

static void print_outcome(FILE *out, const outcome *o)
{
    if (o->st == HIERA_OK) {
        hiera_error err = {0};
        char *t = hiera_render(o->v, HIERA_RENDER_JSON, &err);
        if (!t)
            t = hiera_render(o->v, HIERA_RENDER_S, &err);
        fprintf(out, "%s\n", t ? t : "?");
        free(t);
        hiera_error_clear(&err);
    } else if (o->st == HIERA_NOT_FOUND) {
        fputs("not found\n", out);
    } else {
        fprintf(out, "Error: %s\n", o->msg);
    }
}

static hiera_value *outcome_doc(const outcome *o, hiera_value *prov, const char *text)
{
    hiera_value *d = hiera_value_new_hash();
    hiera_value_hash_set(d, "status", hiera_value_new_string(o->st == HIERA_OK ? "found" : o->st == HIERA_ERROR ? "error"
                                                                                                            : "not_found"));
    if (o->st == HIERA_OK)
        hiera_value_hash_set(d, "value", hiera_value_incref(o->v));
    if (o->st == HIERA_ERROR)
        hiera_value_hash_set(d, "error", hiera_value_new_string(o->msg));
    if (prov)
        hiera_value_hash_set(d, "provenance", hiera_value_incref(hiera_value_hash_get(prov, "provenance")));
    else if (text)
        hiera_value_hash_set(d, "explanation", hiera_value_new_string(text));
    return d;
}

/* The lines of a text (pointers into it). */
typedef struct {
    const char **line;
    size_t *len;
    size_t n;
} lines_t;

static void split_lines(const char *t, lines_t *ls)
{
    memset(ls, 0, sizeof *ls);
    size_t cap = 0;
    for (const char *p = t; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (ls->n == cap) {
            cap = cap ? cap * 2 : 32;
            ls->line = xrealloc_(ls->line, cap * sizeof *ls->line);
            ls->len = xrealloc_(ls->len, cap * sizeof *ls->len);
        }
        ls->line[ls->n] = p;
        ls->len[ls->n++] = n;
        p = e ? e + 1 : p + n;
    }
}

/* Lines are the same when they differ only in the length of their runs of blanks after the
 * indentation: provenance aligns its comments on the longest line, which a change elsewhere
 * moves. */
static bool same_line(const lines_t *a, size_t i, const lines_t *b, size_t j)
{
    const char *p = a->line[i], *pe = p + a->len[i], *q = b->line[j], *qe = q + b->len[j];
    while (p < pe && q < qe && *p == ' ' && *q == ' ') { /* (the indentation is the structure) */
        p++;
        q++;
    }
    if ((p < pe && *p == ' ') != (q < qe && *q == ' '))
        return false;
    while (p < pe && q < qe) {
        if (*p == ' ' && *q == ' ') {
            while (p < pe && *p == ' ')
                p++;
            while (q < qe && *q == ' ')
                q++;
            continue;
        }
        if (*p++ != *q++)
            return false;
    }
    return p == pe && q == qe;
}

/* The lines both texts have, in order (a longest common subsequence): keep[s][i] set for them.
 * Texts too long for the table are compared line by line at the same positions. */
static void mark_common(const lines_t *a, const lines_t *b, unsigned char **ka, unsigned char **kb)
{
    *ka = calloc(a->n + 1, 1);
    *kb = calloc(b->n + 1, 1);
    if (!*ka || !*kb) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    if (a->n > 4000 || b->n > 4000) {
        for (size_t i = 0; i < a->n && i < b->n; i++)
            (*ka)[i] = (*kb)[i] = same_line(a, i, b, i);
        return;
    }
    size_t w = b->n + 1;
    uint32_t *t = calloc((a->n + 1) * w, sizeof *t);
    if (!t) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    for (size_t i = a->n; i-- > 0;)
        for (size_t j = b->n; j-- > 0;)
            t[i * w + j] = same_line(a, i, b, j) ? t[(i + 1) * w + j + 1] + 1
                           : t[(i + 1) * w + j] > t[i * w + j + 1] ? t[(i + 1) * w + j] : t[i * w + j + 1];
    for (size_t i = 0, j = 0; i < a->n && j < b->n;) {
        if (same_line(a, i, b, j)) {
            (*ka)[i++] = 1;
            (*kb)[j++] = 1;
        } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
            i++;
        } else {
            j++;
        }
    }
    free(t);
}

static int run_explain(const diff_args *a, diff_side side[2], const char *facts_path[2], const hiera_request *req,
                       report_format fmt)
{
    outcome o[2];
    hiera_value *prov[2];
    char *text[2];
    for (int s = 0; s < 2; s++)
        explain_side(a, &side[s], a->node, facts_path[s], req, &o[s], &prov[s], &text[s]);
    bool same = outcome_same(&o[0], &o[1]);
    const char *verdict = same ? "unchanged"
                          : o[0].st == HIERA_ERROR && o[1].st == HIERA_ERROR ? "failure changed"
                          : o[1].st == HIERA_ERROR                         ? "now failing"
                          : o[0].st == HIERA_ERROR                         ? "no longer failing"
                          : o[0].st == HIERA_NOT_FOUND                     ? "added"
                          : o[1].st == HIERA_NOT_FOUND                     ? "removed"
                                                                             : "changed";
    if (fmt == FMT_JSON) {
        hiera_value *d = hiera_value_new_hash();
        hiera_value_hash_set(d, "key", hiera_value_new_string(a->explain));
        hiera_value_hash_set(d, "node", hiera_value_new_string(a->node));
        hiera_value_hash_set(d, "change", hiera_value_new_string(verdict));
        hiera_value_hash_set(d, "old", outcome_doc(&o[0], prov[0], text[0]));
        hiera_value_hash_set(d, "new", outcome_doc(&o[1], prov[1], text[1]));
        hiera_error err = {0};
        char *t = hiera_render(d, HIERA_RENDER_JSON, &err);
        printf("%s\n", t ? t : "{}");
        free(t);
        hiera_error_clear(&err);
        hiera_value_decref(d);
    } else {
        printf("%s for %s: %s\n", a->explain, a->node, verdict);
        for (int s = 0; s < 2; s++) {
            printf("  %s (%s): ", s ? "new" : "old", side[s].label);
            print_outcome(stdout, &o[s]);
        }
        if (!same && o[0].st == HIERA_OK && o[1].st == HIERA_OK) {
            hiera_value *ch = hiera_value_changes(o[0].v, o[1].v);
            for (size_t i = 0; i < hiera_value_array_size(ch); i++) {
                const hiera_value *c = hiera_value_array_get(ch, i);
                char *p = hiera_value_path_text(hiera_value_hash_get(c, "path"));
                printf("  changed at %s%s%s (%s)\n", a->explain, *p ? "." : "", p,
                       hiera_value_string(hiera_value_hash_get(c, "kind")));
                free(p);
            }
            hiera_value_decref(ch);
        }
        /* each side's provenance (or explanation), its lines that the other side does not have
         * marked - (old) and + (new) */
        lines_t ls[2];
        for (int s = 0; s < 2; s++)
            split_lines(text[s], &ls[s]);
        unsigned char *keep[2];
        mark_common(&ls[0], &ls[1], &keep[0], &keep[1]);
        for (int s = 0; s < 2; s++) {
            printf("\n%s %s (%s):\n", s ? "+++" : "---", s ? "new" : "old", side[s].label);
            if (!text[s])
                print_outcome(stdout, &o[s]);
            for (size_t i = 0; i < ls[s].n; i++)
                printf("%s%.*s\n", keep[s][i] ? "  " : s ? "+ " : "- ", (int)ls[s].len[i], ls[s].line[i]);
            free(keep[s]);
            free(ls[s].line);
            free(ls[s].len);
        }
    }
    for (int s = 0; s < 2; s++) {
        outcome_clear(&o[s]);
        hiera_value_decref(prov[s]);
        free(text[s]);
    }
    return same ? 0 : 1;
}

/* ------------------------------------------------------------------ main */

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Builds that look for leaks free everything before exiting (as cli/common.c decides). */
#if defined(HIERA_FREE_ON_EXIT) || defined(__SANITIZE_ADDRESS__)
#define DIFF_FREE_ON_EXIT 1
#else
#define DIFF_FREE_ON_EXIT 0
#endif
void *diff_kept[4]; /* external: what is left for the process exit stays reachable */

static bool free_at_exit(void) { return DIFF_FREE_ON_EXIT || getenv("HIERA_FREE_AT_EXIT"); }

int diff_main(int argc, char **argv)
{
    diff_args a = {0};
    int rc = 2;
    diff_side side[2];
    memset(side, 0, sizeof side);
    hiera_value *merge = NULL, *dflt = NULL, *plan = NULL;
    strvec keys = {0};
    facts_file *lists[2] = {NULL, NULL};
    size_t counts[2] = {0, 0};
    dnode *nodes = NULL;
    size_t nnodes = 0;
    hiera_snapshot *snap[2] = {NULL, NULL};
    hiera_cache *facts_cache = NULL;
    worker *workers = NULL;
    size_t njobs = 0;
    gtable groups = {0};
    trouble *troubles = NULL;
    size_t ntroubles = 0;
    uint32_t *only[2] = {NULL, NULL};
    size_t nonly[2] = {0, 0};
    const char **dirty = NULL, **all = NULL, **pdb_names = NULL;
    uint32_t *dirty_idx = NULL;
    unsigned char *is_dirty = NULL;
    double t0 = now_seconds();

    if (parse(argc, argv, &a) || build_merge(&a, &merge))
        goto out;
    if (!a.environment)
        a.environment = "production";
    report_format fmt = FMT_TEXT;
    if (a.format && !strcasecmp(a.format, "json"))
        fmt = FMT_JSON;
    else if (a.format && (!strcasecmp(a.format, "markdown") || !strcasecmp(a.format, "md")))
        fmt = FMT_MARKDOWN;
    else if (a.format && strcasecmp(a.format, "text")) {
        usage_error("--format takes text, json or markdown, not '%s'", a.format);
        goto out;
    }
    bool color = false;
    if (!a.color || !strcmp(a.color, "auto"))
        color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(getenv("TERM") && !strcmp(getenv("TERM"), "dumb"));
    else if (!strcmp(a.color, "always"))
        color = true;
    else if (strcmp(a.color, "never")) {
        usage_error("--color takes auto, always or never, not '%s'", a.color);
        goto out;
    }
    bool fail_on_failures = false;
    if (a.fail_on && !strcmp(a.fail_on, "failures"))
        fail_on_failures = true;
    else if (a.fail_on && strcmp(a.fail_on, "changes")) {
        usage_error("--fail-on takes changes or failures, not '%s'", a.fail_on);
        goto out;
    }
    if (a.tree_kind && strcmp(a.tree_kind, "codedir") && strcmp(a.tree_kind, "environment")) {
        usage_error("--tree takes codedir or environment, not '%s'", a.tree_kind);
        goto out;
    }
    bool from_pdb = cli_pdb_wanted(&a.pdb);
    int nsources = !!a.facts + !!a.facts_dir + !!(a.facts_dirs[0] || a.facts_dirs[1]) + from_pdb;
    if (nsources != 1 || (!a.facts_dir && !a.facts && !(a.facts_dirs[0] && a.facts_dirs[1]) && !from_pdb)) {
        usage_error("%s", "give the nodes' facts: --facts-dir DIR, --old-facts-dir DIR and --new-facts-dir DIR, "
                          "--facts FILE, or PuppetDB (--from-puppetdb, --puppetdb URL)");
        goto out;
    }
    if (a.pdb.include_inactive && !from_pdb) {
        usage_error("%s", "--include-inactive goes with PuppetDB");
        goto out;
    }
    if (a.node && !a.facts && !a.explain) {
        usage_error("%s", "--node goes with --facts or --explain");
        goto out;
    }
    if (a.trusted && !a.facts) {
        usage_error("%s", "--trusted goes with --facts (--trusted-dir with a facts folder)");
        goto out;
    }
    if (a.trusted && a.trusted_dir) {
        usage_error("%s", "give either --trusted or --trusted-dir, not both");
        goto out;
    }
    if (a.explain && !a.node) {
        usage_error("%s", "--explain KEY needs --node NODE");
        goto out;
    }
    size_t jobs = default_jobs();
    if (a.jobs) {
        char *end;
        long j = strtol(a.jobs, &end, 10);
        if (end == a.jobs || *end || j < 1 || j > 64) {
            usage_error("--jobs takes a number from 1 to 64, not '%s'", a.jobs);
            goto out;
        }
        jobs = (size_t)j;
    }
    if (a.has_default)
        dflt = hiera_value_new_string(a.default_value);
    hiera_request req = {.size = sizeof req, .merge = merge, .default_value = dflt, .type = a.type};

    /* the nodes */
    if (a.facts) {
        const char *base = strrchr(a.facts, '/');
        base = base ? base + 1 : a.facts;
        size_t nl = facts_name_len(base);
        char *name = a.node ? xstrdup_(a.node) : strndup(base, nl ? nl : strlen(base));
        for (int s = 0; s < 2; s++) {
            lists[s] = xmalloc_(sizeof **lists);
            lists[s][0] = (facts_file){xstrdup_(name), xstrdup_(a.facts)};
            counts[s] = 1;
        }
        free(name);
    } else if (from_pdb) {
        /* PuppetDB's nodes, the same on both sides; their facts path "" (load_pdb_facts) */
        a.ps.confdir = a.confdir;
        hiera_settings *hs = cli_puppet_settings_load(&a.ps);
        pdb_src = hs ? cli_factsrc_open(NULL, &a.pdb, hs, NULL, NULL) : NULL;
        hiera_settings_free(hs);
        hiera_error lerr = {0};
        hiera_value *names = pdb_src ? hiera_facts_source_nodes(pdb_src, &lerr) : NULL;
        if (!names) {
            if (lerr.message)
                fprintf(stderr, "hiera diff: %s\n", lerr.message);
            hiera_error_clear(&lerr);
            goto out;
        }
        size_t n = hiera_value_array_size(names);
        for (int s = 0; s < 2; s++) {
            lists[s] = xmalloc_((n ? n : 1) * sizeof **lists);
            for (size_t i = 0; i < n; i++)
                lists[s][i] = (facts_file){xstrdup_(hiera_value_string(hiera_value_array_get(names, i))), xstrdup_("")};
            counts[s] = n;
        }
        hiera_value_decref(names);
    } else {
        for (int s = 0; s < 2; s++) {
            const char *dir = a.facts_dir ? a.facts_dir : a.facts_dirs[s];
            if (list_facts_dir(dir, &lists[s], &counts[s]))
                goto out;
        }
    }
    nodes = merge_nodes(lists, counts, a.facts_dir || a.facts || from_pdb, &nnodes);
    if (nnodes == 0) {
        if (from_pdb)
            fprintf(stderr, "hiera diff: no nodes in %s\n", hiera_facts_source_describe(pdb_src));
        else
            fprintf(stderr, "hiera diff: no facts files (NAME.yaml, NAME.yml, NAME.json) in %s\n",
                    a.facts_dir ? a.facts_dir : "the facts folders");
        goto out;
    }
    if (from_pdb) {
        /* node i's facts: the run's threads take the nodes in order, a page at a time */
        pdb_names = xmalloc_(nnodes * sizeof *pdb_names);
        for (size_t i = 0; i < nnodes; i++)
            pdb_names[i] = nodes[i].name;
    }

    /* the sides */
    for (int s = 0; s < 2; s++) {
        char *err = NULL;
        if (!diff_side_open(&side[s], a.sides[s], a.git_dir, a.environment, a.tree_kind, s ? "new" : "old",
                            s ? &side[0] : NULL, &err)) {
            fprintf(stderr, "hiera diff: %s\n", err ? err : "cannot read a side");
            free(err);
            goto out;
        }
        /* a relative --hiera_config is the file of that name in each side's tree */
        if (a.hiera_config && a.hiera_config[0] != '/') {
            if (asprintf(&side[s].hiera_config, "%s/%s", side[s].tree, a.hiera_config) < 0)
                side[s].hiera_config = NULL;
        } else if (a.hiera_config) {
            side[s].hiera_config = xstrdup_(a.hiera_config);
        }
    }

    if (a.explain) {
        const char *paths[2] = {NULL, NULL};
        for (size_t i = 0; i < nnodes; i++)
            if (strcmp(nodes[i].name, a.node) == 0)
                for (int s = 0; s < 2; s++)
                    paths[s] = nodes[i].facts[s];
        if (!paths[0] || !paths[1]) {
            fprintf(stderr, "hiera diff: no facts for node '%s' on the %s side\n", a.node,
                    !paths[0] && !paths[1] ? "old or the new" : !paths[0] ? "old" : "new");
            goto out;
        }
        rc = run_explain(&a, side, paths, &req, fmt);
        print_diagnostics();
        goto out;
    }

    phase("sides", t0);
    /* read both sides whole, at once */
    const char *cache_dir = getenv("HIERA_CACHE_DIR");
    bool use_disk = !cache_dir || strcmp(cache_dir, "off") != 0;
    facts_cache = hiera_cache_new();
    if (use_disk)
        hiera_cache_use_disk(facts_cache, cache_dir);
    snap_job sj[2];
    for (int s = 0; s < 2; s++) {
        /* a checkout's paths are new each run: kept on disk they would only pile up */
        sj[s] = (snap_job){&a, &side[s], side[s].is_git || !use_disk ? NULL : facts_cache, NULL, 0};
    }
    bool threaded = pthread_create(&sj[1].th, NULL, build_snapshot, &sj[1]) == 0;
    build_snapshot(&sj[0]);
    if (threaded)
        pthread_join(sj[1].th, NULL);
    else
        build_snapshot(&sj[1]);
    snap[0] = sj[0].snap;
    snap[1] = sj[1].snap;

    phase("snapshots", t0);
    /* what can differ */
    if (a.keys_file && read_keys_file(a.keys_file, &keys))
        goto out;
    for (size_t i = 0; i < a.nkeys; i++)
        sv_push(&keys, xstrdup_(a.keys[i]));
    bool explicit_keys = a.keys_file || a.nkeys;
    if (explicit_keys && keys.n == 0) {
        usage_error("%s", "the keys file holds no keys");
        goto out;
    }
    char *unseen = side[0].env_kind == side[1].env_kind ? unseen_changes(side, snap, a.environment) : NULL;
    hiera_compare_options co = {.size = sizeof co, .old_root = side[0].root, .new_root = side[1].root,
                                .keys = explicit_keys ? (const char *const *)keys.v : NULL, .nkeys = keys.n,
                                .full = a.full, .full_reason = unseen};
    plan = hiera_snapshot_compare(snap[0], snap[1], &co);
    free(unseen);
    const hiera_value *pd = hiera_value_hash_get(plan, "dirty"), *pk = hiera_value_hash_get(plan, "keys");
    size_t ndirty = hiera_value_array_size(pd), nall = hiera_value_array_size(pk);
    dirty = xmalloc_((ndirty ? ndirty : 1) * sizeof *dirty);
    for (size_t i = 0; i < ndirty; i++)
        dirty[i] = hiera_value_string(hiera_value_array_get(pd, i));
    all = xmalloc_((nall ? nall : 1) * sizeof *all);
    for (size_t i = 0; i < nall; i++)
        all[i] = hiera_value_string(hiera_value_array_get(pk, i));

    /* the report's keys are every key considered (sorted, as the dirty ones): a node whose facts
     * differ between the sides looks them all up */
    run_s r = {.a = &a, .side = {&side[0], &side[1]}, .snap = {snap[0], snap[1]}, .nodes = nodes, .nnodes = nnodes,
               .dirty = dirty, .ndirty = ndirty, .all = all, .nall = nall,
               .full = hiera_value_bool(hiera_value_hash_get(plan, "full")), .req = req, .facts_cache = facts_cache};
    dirty_idx = xmalloc_((ndirty ? ndirty : 1) * sizeof *dirty_idx);
    for (size_t i = 0; i < ndirty; i++) {
        const char **hit = bsearch(&dirty[i], all, nall, sizeof *all, cmp_cstr);
        dirty_idx[i] = hit ? (uint32_t)(hit - all) : 0; /* (always found: the dirty keys are among all) */
    }
    r.dirty_idx = dirty_idx;
    is_dirty = calloc(nall + 1, 1);
    if (!is_dirty) {
        fputs("hiera diff: out of memory\n", stderr);
        goto out;
    }
    for (size_t i = 0; i < ndirty; i++)
        is_dirty[dirty_idx[i]] = 1;
    r.is_dirty = is_dirty;
    r.reached = hiera_value_new_hash();
    const hiera_value *reached = hiera_value_hash_get(plan, "reached");
    for (size_t i = 0; i < hiera_value_array_size(reached); i++)
        hiera_value_hash_set(r.reached, hiera_value_string(hiera_value_array_get(reached, i)), hiera_value_new_bool(true));
    atomic_init(&r.next, 0);
    atomic_init(&r.done_nodes, 0);
    atomic_init(&r.lookups, 0);

    /* nodes with facts on one side only are said once each */
    for (size_t i = 0; i < nnodes; i++)
        for (int s = 0; s < 2; s++)
            if (nodes[i].facts[s] && !nodes[i].facts[1 - s]) {
                only[s] = xrealloc_(only[s], (nonly[s] + 1) * sizeof **only);
                only[s][nonly[s]++] = (uint32_t)i;
            }

    phase("plan", t0);
    /* the lookups */
    if (jobs > nnodes / 4 + 1)
        jobs = nnodes / 4 + 1;
    njobs = jobs;
    workers = calloc(njobs, sizeof *workers);
    if (!workers) {
        fputs("hiera diff: out of memory\n", stderr);
        goto out;
    }
    for (size_t i = 0; i < njobs; i++) {
        workers[i].r = &r;
        for (int s = 0; s < 2; s++)
            workers[i].view[s] = hiera_cache_new_from_snapshot(snap[s]);
    }
    if (pdb_names)
        pdb_pager = hiera_facts_pager_new(pdb_src, pdb_names, nnodes, NULL);
    /* on a terminal the main thread shows the progress while the workers run; else it works too */
    bool progress = isatty(STDERR_FILENO) != 0;
    for (size_t i = progress ? 0 : 1; i < njobs; i++)
        workers[i].started = pthread_create(&workers[i].th, NULL, worker_main, &workers[i]) == 0;
    if (progress) {
        bool any = false, shown = false;
        for (size_t i = 0; i < njobs; i++)
            any |= workers[i].started;
        for (unsigned tick = 0; any && atomic_load(&r.done_nodes) < nnodes; tick++) {
            nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
            size_t done = atomic_load(&r.done_nodes);
            if (tick >= 4 && done < nnodes) { /* (after 0.2 s: a quick run shows none) */
                fprintf(stderr, "\rhiera diff: %zu/%zu nodes, %zu lookups\033[K", done, nnodes, atomic_load(&r.lookups));
                shown = true;
            }
        }
        if (shown)
            fputs("\r\033[K", stderr);
    } else {
        worker_main(&workers[0]);
    }
    for (size_t i = progress ? 0 : 1; i < njobs; i++)
        if (workers[i].started)
            pthread_join(workers[i].th, NULL);
        else
            worker_main(&workers[i]); /* (a thread that could not start: its share is done here) */
    for (size_t i = 0; i < njobs; i++) {
        gt_merge(&groups, &workers[i].groups);
        troubles = xrealloc_(troubles, (ntroubles + workers[i].ntroubles + 1) * sizeof *troubles);
        if (workers[i].ntroubles)
            memcpy(troubles + ntroubles, workers[i].troubles, workers[i].ntroubles * sizeof *troubles);
        ntroubles += workers[i].ntroubles;
        free(workers[i].troubles);
        workers[i].troubles = NULL;
    }
    /* troubles in node order */
    for (size_t i = 1; i < ntroubles; i++)
        for (size_t j = i; j > 0 && troubles[j - 1].node > troubles[j].node; j--) {
            trouble t = troubles[j];
            troubles[j] = troubles[j - 1];
            troubles[j - 1] = t;
        }
    phase("lookups", t0);
    print_diagnostics();

    const char **node_names = xmalloc_((nnodes ? nnodes : 1) * sizeof *node_names);
    for (size_t i = 0; i < nnodes; i++)
        node_names[i] = nodes[i].name;
    diff_report rep = {.format = fmt, .color = color, .all_nodes = a.all_nodes, .old = &side[0], .new_ = &side[1],
                       .environment = a.environment, .plan = plan, .keys = all, .nkeys = nall, .nkeys_looked_up = ndirty,
                       .nodes = node_names, .nnodes = nnodes, .only_old = only[0],
                       .only_new = only[1], .nonly_old = nonly[0], .nonly_new = nonly[1], .troubles = troubles,
                       .ntroubles = ntroubles, .groups = &groups, .lookups = atomic_load(&r.lookups),
                       .seconds = now_seconds() - t0};
    report_counts c;
    bool printed = report_print(&rep, stdout, &c);
    fflush(stdout);
    phase("report", t0);
    if (!printed) {
        fprintf(stderr, "hiera diff: cannot write the report: %s\n", strerror(errno));
        rc = 2;
    } else if (ntroubles) {
        rc = 2;
    } else if (fail_on_failures) {
        rc = c.now_failing ? 1 : 0;
    } else {
        rc = c.changes || nonly[0] || nonly[1] ? 1 : 0;
    }
    free(node_names);
    hiera_value_decref(r.reached);
out:
    if (!free_at_exit()) {
        /* the process ends: the caches, snapshots and groups go back with it at once (tearing
         * them down value by value was a twentieth of a small run); kept reachable */
        diff_kept[0] = workers;
        diff_kept[1] = snap[0];
        diff_kept[2] = snap[1];
        diff_kept[3] = groups.buckets;
        workers = NULL;
        njobs = 0;
        snap[0] = snap[1] = NULL;
        memset(&groups, 0, sizeof groups);
    }
    for (size_t i = 0; i < njobs; i++) {
        for (int s = 0; s < 2; s++)
            hiera_cache_free(workers[i].view[s]);
        gt_free(&workers[i].groups);
        free(workers[i].troubles);
    }
    free(workers);
    gt_free(&groups);
    for (size_t i = 0; i < ntroubles; i++)
        free(troubles[i].msg);
    free(troubles);
    free(only[0]);
    free(only[1]);
    free(dirty);
    free(all);
    free(dirty_idx);
    free(is_dirty);
    hiera_value_decref(plan);
    hiera_facts_pager_free(pdb_pager);
    pdb_pager = NULL;
    hiera_facts_source_free(pdb_src);
    pdb_src = NULL;
    free(pdb_names);
    for (int s = 0; s < 2; s++) {
        hiera_snapshot_release(snap[s]);
        free_facts_files(lists[s], counts[s]);
        diff_side_close(&side[s]);
    }
    hiera_cache_free(facts_cache);
    free_nodes(nodes, nnodes);
    sv_free(&keys);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    free(a.keys);
    diff_scratch_cleanup();
    if (fflush(stdout) != 0 && rc != 2) {
        fprintf(stderr, "hiera diff: cannot write the output: %s\n", strerror(errno));
        rc = 2;
    }
    return rc;
}
