/* diff_cmd.c - `hiera diff OLD NEW`: which nodes' answers change, and how, between two versions of
 * the Hiera data (two folders, or two revisions of a git repository).
 *
 * Each side is read whole once (a snapshot); the library's diff run (hiera_diff_run,
 * src/diff/run.c) compares them: hiera_snapshot_compare says which keys can answer differently
 * (the keys changed in files, those that read them through interpolation, every key when a
 * hiera.yaml changed); only those are looked up again, on both sides, for every node, by worker
 * threads that each have their own caches over the two snapshots. This file opens the sides (a
 * folder or a git revision, diff_side.c), finds the changes the snapshots cannot see, groups the
 * answers that differ (per key, the nodes that got the same change) and prints them
 * (diff_report.c).
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
#include "diff/run.h"
#include "fleet/fleet.h"
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
    "                  [--puppet-version 7|8 | --old-puppet-version 7|8 --new-puppet-version 7|8]\n"
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
    "Each side answers as the installed Puppet (HIERA_PUPPET_VERSION), or as --puppet-version for\n"
    "both, --old-puppet-version and --new-puppet-version each: the same tree on both sides with\n"
    "--old-puppet-version 7 --new-puppet-version 8 shows what moving to Puppet 8 changes.\n"
    "A relative --hiera_config names the file in each side's tree (an absolute one serves both).\n"
    "--format: text (grouped by key, then by change, with a few nodes each; --nodes lists them\n"
    "all; coloured on a terminal), json (the schema is in README.md) or markdown (for a merge\n"
    "request comment). --explain KEY --node N shows where both sides' answers come from.\n"
    "--redact-secrets: eyaml blocks are not decrypted; their answers show as Sensitive (redacted),\n"
    "changed when their encrypted text changed.\n"
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
    bool has_default, sort_merged_arrays, merge_hash_arrays, unsafe_fact_paths, all_nodes, full, redact;
    cli_pdb_args pdb;            /* PuppetDB as the node set */
    cli_puppet_settings_args ps; /* Puppet's settings for its client */
    const char **keys;
    size_t nkeys;
    hiera_puppet_version versions[2]; /* the Puppet each side answers as (diff_puppet_versions) */
} diff_args;

/* PuppetDB's nodes: a node whose facts path is "" takes them from here (one pager per run) */

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

/* --puppet-version (both sides), --old-puppet-version, --new-puppet-version: taken out of argv
 * before the other options are read; a side without one answers as the installed Puppet. */
static int diff_puppet_versions(int *argc, char **argv, diff_args *a)
{
    static const char *const opts[3] = {"puppet-version", "old-puppet-version", "new-puppet-version"};
    hiera_puppet_version given[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        bool *skip = calloc((size_t)*argc + 1, sizeof *skip);
        if (!skip)
            return usage_error("%s", "out of memory");
        bool seen = false;
        hiera_puppet_version v = cli_puppet_version(*argc, argv, opts[k], skip, NULL);
        int n = 0;
        for (int i = 0; i < *argc; i++) {
            seen |= skip[i];
            if (!skip[i])
                argv[n++] = argv[i];
        }
        *argc = n;
        free(skip);
        if (!v)
            return 2;
        if (seen)
            given[k] = v;
    }
    for (int s = 0; s < 2; s++)
        a->versions[s] = given[1 + s] ? given[1 + s] : given[0] ? given[0] : cli_puppet_version(0, NULL, opts[0], NULL, NULL);
    return a->versions[0] && a->versions[1] ? 0 : 2;
}

static int parse(int argc, char **argv, diff_args *a)
{
    if (diff_puppet_versions(&argc, argv, a))
        return 2;
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
        } else if (flag_is(name, nlen, "redact_secrets")) {
            a->redact = true;
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

/* ------------------------------------------------------------------ messages */

/* msg with the side's folders written relative to its tree (the same file is then named alike
 * on both sides, and the scratch folder of a git side never shows), as the diff run compares
 * failures. malloc'ed. */
static char *normalize(const diff_side *s, const char *msg)
{
    return diff_normalize(msg, s->root, s->tree, s->environmentpath, s->codedir);
}

/* ------------------------------------------------------------------ diagnostics */

/* Warnings are said once per distinct message, whole (with Puppet's location line), at the end,
 * with how many nodes met it on each side: thousands of nodes would repeat them. */
typedef struct {
    int side;      /* 0 old, 1 new */
    uint32_t node; /* the node's number (UINT32_MAX: none, --explain's single node) */
} diag_src;

typedef struct {
    char *text;           /* "Warning: ..." / "Error: ...", whole */
    uint32_t *nodes[2];   /* the nodes that met it, per side (repeats removed when printed) */
    size_t n[2], cap[2];
    bool seen[2];
} diag_entry;

static pthread_mutex_t diag_mu = PTHREAD_MUTEX_INITIALIZER;
static diag_entry *diags;
static size_t ndiags;
static const diff_side *diag_sides[2];

static void collect_diagnostic(const hiera_diagnostic *d, void *userdata)
{
    const diag_src *src = userdata;
    const diff_side *s = diag_sides[src->side];
    char *m = s ? normalize(s, d->message) : xstrdup_(d->message);
    char *line = NULL;
    /* as Puppet prints it: its location line, or that it has none */
    const char *where = strstr(m, "\n   (file") ? "" : d->file ? "\n   (file: " : "\n   (file & line not available)";
    int ok;
    if (*where && d->file && d->line > 0)
        ok = asprintf(&line, "%s: %s%s%s, line: %d)", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", m, where,
                      d->file, d->line);
    else if (*where && d->file)
        ok = asprintf(&line, "%s: %s%s%s)", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", m, where, d->file);
    else
        ok = asprintf(&line, "%s: %s%s", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", m, where);
    free(m);
    if (ok < 0)
        return;
    pthread_mutex_lock(&diag_mu);
    diag_entry *e = NULL;
    for (size_t i = 0; i < ndiags && !e; i++)
        if (strcmp(diags[i].text, line) == 0)
            e = &diags[i];
    if (!e && ndiags < 1000) {
        diags = xrealloc_(diags, (ndiags + 1) * sizeof *diags);
        e = &diags[ndiags++];
        memset(e, 0, sizeof *e);
        e->text = line;
        line = NULL;
    }
    if (e) {
        int sd = src->side;
        e->seen[sd] = true;
        if (src->node != UINT32_MAX && (!e->n[sd] || e->nodes[sd][e->n[sd] - 1] != src->node)) {
            if (e->n[sd] == e->cap[sd]) {
                e->cap[sd] = e->cap[sd] ? e->cap[sd] * 2 : 8;
                e->nodes[sd] = xrealloc_(e->nodes[sd], e->cap[sd] * sizeof *e->nodes[sd]);
            }
            e->nodes[sd][e->n[sd]++] = src->node;
        }
    }
    pthread_mutex_unlock(&diag_mu);
    free(line);
}

/* the diff run's: with the side and the node */
static void run_diagnostic(const hiera_diff_diagnostic *d, void *userdata)
{
    (void)userdata;
    diag_src src = {d->side, d->node ? (uint32_t)d->node_index : UINT32_MAX};
    collect_diagnostic(d->diagnostic, &src);
}

static int cmp_u32_(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The distinct nodes of an entry's side (sorted, repeats removed): their count */
static size_t diag_nodes(diag_entry *e, int s)
{
    if (!e->n[s])
        return 0;
    qsort(e->nodes[s], e->n[s], sizeof *e->nodes[s], cmp_u32_);
    size_t k = 1;
    for (size_t i = 1; i < e->n[s]; i++)
        if (e->nodes[s][i] != e->nodes[s][k - 1])
            e->nodes[s][k++] = e->nodes[s][i];
    e->n[s] = k;
    return k;
}

/* Prints the warnings met (once each, with the nodes and the side), and gives them as a JSON array
 * [{"message", "old_nodes", "new_nodes"}] when asked. */
static hiera_value *print_diagnostics(bool with_nodes)
{
    hiera_value *doc = hiera_value_new_array();
    for (size_t i = 0; i < ndiags; i++) {
        diag_entry *e = &diags[i];
        size_t n0 = diag_nodes(e, 0), n1 = diag_nodes(e, 1);
        fprintf(stderr, "%s\n", e->text);
        if (with_nodes) {
            fputs("   (", stderr);
            for (int s = 0; s < 2; s++) {
                if (!e->seen[s])
                    continue;
                size_t n = s ? n1 : n0;
                if (s && e->seen[0])
                    fputs("; ", stderr);
                fprintf(stderr, "%s side: %zu node%s", s ? "new" : "old", n, n == 1 ? "" : "s");
            }
            fputs(")\n", stderr);
        }
        hiera_value *w = hiera_value_new_hash();
        hiera_value_hash_set(w, "message", hiera_value_new_string(e->text));
        hiera_value_hash_set(w, "old_nodes", hiera_value_new_int((int64_t)n0));
        hiera_value_hash_set(w, "new_nodes", hiera_value_new_int((int64_t)n1));
        hiera_value_array_push(doc, w);
        free(e->text);
        free(e->nodes[0]);
        free(e->nodes[1]);
    }
    free(diags);
    diags = NULL;
    ndiags = 0;
    return doc;
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
    hiera_puppet_version version; /* the side's (the parse errors' words) */
} snap_job;

static void *build_snapshot(void *arg)
{
    snap_job *j = arg;
    hiera_puppet_version was = hiera_thread_puppet_version(j->version);
    hiera_options o = {.size = sizeof o, .codedir = j->side->codedir, .confdir = j->a->confdir,
                       .environmentpath = j->side->environmentpath, .hiera_config = j->side->hiera_config,
                       .environment = j->a->environment, .cache = j->disk, .remap_default_environmentpath = true,
                       .puppet_version = j->version};
    hiera_error err = {0};
    j->snap = hiera_snapshot_new(&o, &err);
    hiera_error_clear(&err);
    hiera_thread_puppet_version(was);
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
#define WALK_DEPTH 32

typedef struct {
    const char *root[2];
    hiera_value *known; /* relative paths the snapshots read -> true */
    char *reason;       /* the first change that needs every key, or NULL */
    size_t entries;
    /* the folders on the path walked, per side (a symbolic link to a folder above, such as a
     * module that is the environment itself, modules/NAME -> .., is walked once more under its
     * own name, as Puppet reads it, and no deeper) */
    struct { dev_t dev; ino_t ino; bool set; } up[2][WALK_DEPTH + 4];
    int nup;
} tree_walk;

/* Whether the folder st (side s) is already twice on the path walked. */
static bool walk_loops(const tree_walk *w, int s, const struct stat *st)
{
    int seen = 0;
    for (int i = 0; i < w->nup; i++)
        seen += w->up[s][i].set && w->up[s][i].dev == st->st_dev && w->up[s][i].ino == st->st_ino;
    return seen >= 2;
}

static void walk_push(tree_walk *w, const bool dir[2], const struct stat st[2])
{
    for (int s = 0; s < 2; s++)
        w->up[s][w->nup].set = dir[s], w->up[s][w->nup].dev = dir[s] ? st[s].st_dev : 0,
        w->up[s][w->nup].ino = dir[s] ? st[s].st_ino : 0;
    w->nup++;
}

static bool same_file_bytes(const char *a, const char *b, const struct stat *sa, const struct stat *sb)
{
    if (sa->st_dev == sb->st_dev && sa->st_ino == sb->st_ino)
        return true;
    return sa->st_size == sb->st_size && file_same_bytes(a, b);
}

/* Whether a metadata.json's text names a data provider as Puppet reads it (Module#metadata's
 * ['data_provider'] not nil): a JSON object whose "data_provider" is not null, or a JSON string
 * holding the words (Ruby's String#[]). Text that is not JSON, or another kind of document, is
 * taken to name one (the fast path then gives way: Puppet fails or warns over such metadata). */
static bool metadata_names_provider(const char *text)
{
    hiera_error e = {0};
    hiera_value *md = hiera_value_from_json(text, &e);
    hiera_error_clear(&e);
    bool names = true;
    if (md && hiera_value_kind(md) == HIERA_HASH) {
        const hiera_value *v = hiera_value_hash_get(md, "data_provider");
        names = v && hiera_value_kind(v) != HIERA_UNDEF;
    } else if (md && hiera_value_kind(md) == HIERA_STRING) {
        names = strstr(hiera_value_string(md), "data_provider") != NULL;
    }
    hiera_value_decref(md);
    return names;
}

/* Whether a file of the layer folder (rel's first layer_len bytes; 0: the tree itself) holds text
 * on either side, and, when confirm is given, the file's text satisfies it. */
static bool layer_file_has(const tree_walk *w, const char *rel, size_t layer_len, const char *file, const char *text,
                           bool (*confirm)(const char *text))
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
        if (hit && confirm)
            hit = confirm(sb_str(&b));
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
    if (!strcmp(base, "environment.conf") && layer_file_has(w, rel, layer, "environment.conf", "environment_data_provider", NULL))
        setting = "environment_data_provider";
    else if (!strcmp(base, "metadata.json") && layer_file_has(w, rel, layer, "metadata.json", "data_provider", metadata_names_provider))
        setting = "data_provider";
    if (setting) {
        if (asprintf(&m, "%s changed (its %s names a legacy data provider)", rel, setting) < 0)
            m = NULL;
    } else if (diff_hiera_reads(base) && !layer_file_has(w, rel, layer, "hiera.yaml", NULL, NULL) &&
               (layer_file_has(w, rel, layer, "metadata.json", "data_provider", metadata_names_provider) ||
                layer_file_has(w, rel, layer, "environment.conf", "environment_data_provider", NULL))) {
        if (asprintf(&m, "%s changed in a layer that a legacy data provider reads (no hiera.yaml)", rel) < 0)
            m = NULL;
    }
    w->reason = m;
}

static void walk_trees(tree_walk *w, const char *rel, const char *env_prefix, int depth)
{
    if (w->reason || depth > WALK_DEPTH || w->entries > 2000000 || w->nup > WALK_DEPTH + 2)
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
            bool dir[2] = {dir0, dir1};
            if ((dir0 && walk_loops(w, 0, &st[0])) || (dir1 && walk_loops(w, 1, &st[1]))) {
                free(p[0]);
                free(p[1]);
                free(sub);
                continue; /* a link back up, walked already */
            }
            walk_push(w, dir, st);
            walk_trees(w, sub, env_prefix, depth + 1); /* (a side without it: all its files differ) */
            w->nup--;
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

/* Walks the folder rel of both trees, the folder itself on the path walked. */
static void walk_from(tree_walk *w, const char *rel, const char *env_prefix, int depth)
{
    struct stat st[2];
    bool dir[2];
    for (int s = 0; s < 2; s++) {
        char *p = NULL;
        dir[s] = asprintf(&p, "%s%s%s", w->root[s], *rel ? "/" : "", rel) >= 0 && stat(p, &st[s]) == 0 &&
                 S_ISDIR(st[s].st_mode);
        free(p);
    }
    walk_push(w, dir, st);
    walk_trees(w, rel, env_prefix, depth);
    w->nup--;
}

/* The reason every key must be looked up again because of a file the snapshots do not read, or
 * NULL (malloc'ed). */
static char *unseen_changes(diff_side side[2], hiera_snapshot *snap[2], const char *environment)
{
    tree_walk w = {{side[0].tree, side[1].tree}, hiera_value_new_hash(), NULL, 0, {{{0}}}, 0};
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
        walk_from(&w, "", "", 0);
    } else {
        char *env = NULL;
        if (asprintf(&env, "environments/%s", environment) >= 0) {
            char *prefix = NULL;
            if (asprintf(&prefix, "%s/", env) >= 0)
                walk_from(&w, env, prefix, 1);
            free(prefix);
        }
        free(env);
        walk_from(&w, "modules", "", 1);
    }
    hiera_value_decref(w.known);
    return w.reason;
}

/* ------------------------------------------------------------------ --explain */

static const diag_src explain_src[2] = {{0, UINT32_MAX}, {1, UINT32_MAX}};

static void explain_side(const diff_args *a, const diff_side *s, hiera_puppet_version version, const char *node,
                         hiera_facts_source *src, const hiera_request *base, outcome *o, hiera_value **prov,
                         char **text)
{
    *prov = NULL;
    *text = NULL;
    char *msg = NULL;
    hiera_cache *cache = hiera_cache_new();
    /* the node's facts as the diff run reads them: from the side's facts source, or --facts FILE
     * (--trusted FILE); --trusted-dir DIR */
    hiera_fleet_input given = {.name = node, .facts_file = a->facts, .trusted_file = a->trusted};
    fleet_facts_from from = {.name = node, .in = src ? NULL : &given, .source = src, .trusted_dir = a->trusted_dir};
    fleet_node_facts nf;
    if (!fleet_load_node_facts(&from, cache, &nf, &msg)) {
        *o = (outcome){HIERA_ERROR, NULL, msg};
        hiera_cache_free(cache);
        return;
    }
    hiera_options opts = {.size = sizeof opts, .codedir = s->codedir, .confdir = a->confdir,
                          .environmentpath = s->environmentpath, .hiera_config = s->hiera_config,
                          .environment = a->environment, .node = node, .facts = nf.given,
                          .base_facts = nf.base, .trusted = nf.trusted, .cache = cache,
                          .unsafe_fact_paths = a->unsafe_fact_paths, .redact_encrypted = a->redact,
                          .diagnostics = collect_diagnostic,
                          .diagnostics_data = (void *)&explain_src[s == diag_sides[1]],
                          .remap_default_environmentpath = true, .puppet_version = version};
    hiera_error err = {0};
    hiera *h = hiera_new(&opts, &err);
    fleet_node_facts_clear(&nf);
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

static int run_explain(const diff_args *a, diff_side side[2], hiera_facts_source *src[2], const hiera_request *req,
                       report_format fmt)
{
    outcome o[2];
    hiera_value *prov[2];
    char *text[2];
    for (int s = 0; s < 2; s++)
        explain_side(a, &side[s], a->versions[s], a->node, src[s], req, &o[s], &prov[s], &text[s]);
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


/* Builds that look for leaks free everything before exiting (as cli/common.c decides). */
#if defined(HIERA_FREE_ON_EXIT) || defined(__SANITIZE_ADDRESS__)
#define DIFF_FREE_ON_EXIT 1
#else
#define DIFF_FREE_ON_EXIT 0
#endif
void *diff_kept[4]; /* external: what is left for the process exit stays reachable */

static bool free_at_exit(void) { return DIFF_FREE_ON_EXIT || getenv("HIERA_FREE_AT_EXIT"); }


/* ------------------------------------------------------------------ the answers that differ */

/* what the diff run hands over, gathered for the report (one call at a time) */
typedef struct {
    gtable groups;
    trouble *troubles;
    size_t ntroubles;
    uint32_t *only[2];
    size_t nonly[2];
    size_t done_nodes, nnodes, lookups;
    bool progress, shown;
    double t0, last_shown;
} gathered;

static int gather(const hiera_diff_event *e, void *data)
{
    gathered *g = data;
    switch (e->kind) {
    case HIERA_DIFF_CHANGE: {
        /* (the values stay valid while the snapshots live: kept until the report is printed) */
        outcome o = {e->old_answer.status, hiera_value_incref(e->old_answer.value),
                     e->old_answer.error ? xstrdup_(e->old_answer.error) : NULL};
        outcome n = {e->new_answer.status, hiera_value_incref(e->new_answer.value),
                     e->new_answer.error ? xstrdup_(e->new_answer.error) : NULL};
        gt_add(&g->groups, (uint32_t)e->key_index, (uint32_t)e->node_index, &o, &n);
        break;
    }
    case HIERA_DIFF_TROUBLE:
        g->troubles = xrealloc_(g->troubles, (g->ntroubles + 1) * sizeof *g->troubles);
        g->troubles[g->ntroubles++] = (trouble){(uint32_t)e->node_index, xstrdup_(e->message)};
        break;
    case HIERA_DIFF_ONLY_OLD:
    case HIERA_DIFF_ONLY_NEW: {
        int s = e->kind == HIERA_DIFF_ONLY_NEW;
        g->only[s] = xrealloc_(g->only[s], (g->nonly[s] + 1) * sizeof **g->only);
        g->only[s][g->nonly[s]++] = (uint32_t)e->node_index;
        break;
    }
    case HIERA_DIFF_NODE_DONE: {
        g->done_nodes++;
        g->lookups += e->lookups;
        double now = g->progress ? now_seconds() : 0;
        /* on a terminal, the progress (after 0.2 s: a quick run shows none) */
        if (g->progress && now - g->t0 >= 0.2 && now - g->last_shown >= 0.05 && g->done_nodes < g->nnodes) {
            fprintf(stderr, "\rhiera diff: %zu/%zu nodes, %zu lookups\033[K", g->done_nodes, g->nnodes, g->lookups);
            g->shown = true;
            g->last_shown = now;
        }
        break;
    }
    }
    return 0;
}

/* The nodes of a facts source (sorted); NULL after printing why. */
static hiera_value *source_nodes(hiera_facts_source *src)
{
    hiera_error err = {0};
    hiera_value *names = hiera_facts_source_nodes(src, &err);
    if (!names)
        fprintf(stderr, "hiera diff: %s\n", err.message ? err.message : "cannot list the nodes");
    hiera_error_clear(&err);
    return names;
}

static bool has_node(const hiera_value *names, const char *node)
{
    size_t lo = 0, hi = hiera_value_array_size(names);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(hiera_value_string(hiera_value_array_get(names, mid)), node);
        if (!c)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

int diff_main(int argc, char **argv)
{
    diff_args a = {0};
    int rc = 2;
    diff_side side[2];
    memset(side, 0, sizeof side);
    hiera_value *merge = NULL, *dflt = NULL, *plan = NULL;
    strvec keys = {0};
    hiera_facts_source *src[2] = {NULL, NULL};
    hiera_value *listed[2] = {NULL, NULL};
    char *single_name = NULL;
    hiera_snapshot *snap[2] = {NULL, NULL};
    hiera_cache *facts_cache = NULL;
    gathered g = {0};
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
    unsigned jobs = 0; /* (the diff run's default: one per CPU, at most 8) */
    if (a.jobs) {
        char *end;
        long j = strtol(a.jobs, &end, 10);
        if (end == a.jobs || *end || j < 1 || j > 64) {
            usage_error("--jobs takes a number from 1 to 64, not '%s'", a.jobs);
            goto out;
        }
        jobs = (unsigned)j;
    }
    if (a.has_default)
        dflt = hiera_value_new_string(a.default_value);
    hiera_request req = {.size = sizeof req, .merge = merge, .default_value = dflt, .type = a.type};

    /* the nodes: a facts file (one node, the same on both sides), PuppetDB's (the same on both
     * sides), a facts folder's (one folder for both sides, or one each) */
    if (a.facts) {
        const char *base = strrchr(a.facts, '/');
        base = base ? base + 1 : a.facts;
        size_t nl = facts_name_len(base);
        single_name = a.node ? xstrdup_(a.node) : strndup(base, nl ? nl : strlen(base));
    } else if (from_pdb) {
        a.ps.confdir = a.confdir;
        hiera_settings *hs = cli_puppet_settings_load(&a.ps);
        src[0] = src[1] = hs ? cli_factsrc_open(NULL, &a.pdb, hs, NULL, NULL) : NULL;
        hiera_settings_free(hs);
        if (!src[0] || !(listed[0] = source_nodes(src[0])))
            goto out;
        listed[1] = hiera_value_incref(listed[0]);
    } else {
        for (int s = 0; s < 2; s++) {
            if (s == 1 && a.facts_dir) {
                src[1] = src[0];
                listed[1] = hiera_value_incref(listed[0]);
                break;
            }
            hiera_error err = {0};
            src[s] = hiera_facts_source_dir(a.facts_dir ? a.facts_dir : a.facts_dirs[s], &err);
            if (!src[s])
                fprintf(stderr, "hiera diff: %s\n", err.message ? err.message : "cannot read the facts folder");
            hiera_error_clear(&err);
            if (!src[s] || !(listed[s] = source_nodes(src[s])))
                goto out;
        }
    }
    if (!a.facts && hiera_value_array_size(listed[0]) + hiera_value_array_size(listed[1]) == 0) {
        if (from_pdb)
            fprintf(stderr, "hiera diff: no nodes in %s\n", hiera_facts_source_describe(src[0]));
        else
            fprintf(stderr, "hiera diff: no facts files (NAME.yaml, NAME.yml, NAME.json) in %s\n",
                    a.facts_dir ? a.facts_dir : "the facts folders");
        goto out;
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
        if (side[s].left_out)
            fprintf(stderr, "hiera diff: %s: left out, the repository does not have their objects (not files Hiera "
                    "reads): %s\n", side[s].label, side[s].left_out);
        side[s].puppet = a.versions[s] == HIERA_PUPPET_8 ? "8.10" : "7.23";
        if (a.versions[0] != a.versions[1]) { /* (the report names each side's Puppet) */
            char *l = NULL;
            if (asprintf(&l, "%s, Puppet %s", side[s].label, side[s].puppet) >= 0) {
                free(side[s].label);
                side[s].label = l;
            }
        }
        /* a relative --hiera_config is the file of that name in each side's tree */
        if (a.hiera_config && a.hiera_config[0] != '/') {
            if (asprintf(&side[s].hiera_config, "%s/%s", side[s].tree, a.hiera_config) < 0)
                side[s].hiera_config = NULL;
        } else if (a.hiera_config) {
            side[s].hiera_config = xstrdup_(a.hiera_config);
        }
    }

    diag_sides[0] = &side[0];
    diag_sides[1] = &side[1];
    if (a.explain) {
        bool there[2];
        for (int s = 0; s < 2; s++)
            there[s] = a.facts ? !strcmp(single_name, a.node) : has_node(listed[s], a.node);
        if (!there[0] || !there[1]) {
            fprintf(stderr, "hiera diff: no facts for node '%s' on the %s side\n", a.node,
                    !there[0] && !there[1] ? "old or the new" : !there[0] ? "old" : "new");
            goto out;
        }
        rc = run_explain(&a, side, src, &req, fmt);
        hiera_value_decref(print_diagnostics(false));
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
        sj[s] = (snap_job){&a, &side[s], side[s].is_git || !use_disk ? NULL : facts_cache, NULL, 0, a.versions[s]};
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
    if (!unseen && a.versions[0] != a.versions[1]) /* (the same files answer otherwise) */
        unseen = xstrdup_(a.versions[1] == HIERA_PUPPET_8 ? "the new side answers as Puppet 8.10, the old as Puppet 7.23"
                                                          : "the new side answers as Puppet 7.23, the old as Puppet 8.10");

    /* the lookups: the library's diff run, each side's contexts as hiera lookup would make them */
    hiera_options ctx[2];
    for (int s = 0; s < 2; s++)
        ctx[s] = (hiera_options){.size = sizeof ctx[s], .codedir = side[s].codedir, .confdir = a.confdir,
                                 .environmentpath = side[s].environmentpath, .hiera_config = side[s].hiera_config,
                                 .environment = a.environment, .unsafe_fact_paths = a.unsafe_fact_paths,
                                 .redact_encrypted = a.redact, .remap_default_environmentpath = true,
                                 .puppet_version = a.versions[s]};
    hiera_fleet_input single = {.name = single_name, .facts_file = a.facts, .trusted_file = a.trusted};
    hiera_diff_options dopt = HIERA_DIFF_OPTIONS_INIT;
    dopt.old_context = &ctx[0];
    dopt.new_context = &ctx[1];
    dopt.old_snapshot = snap[0];
    dopt.new_snapshot = snap[1];
    dopt.old_root = side[0].root;
    dopt.new_root = side[1].root;
    dopt.old_tree = side[0].tree;
    dopt.new_tree = side[1].tree;
    dopt.keys = explicit_keys ? (const char *const *)keys.v : NULL;
    dopt.nkeys = keys.n;
    dopt.full = a.full;
    dopt.full_reason = unseen;
    dopt.request = &req;
    dopt.old_source = src[0];
    dopt.new_source = src[1];
    dopt.nodes = a.facts ? &single : NULL;
    dopt.nnodes = a.facts ? 1 : 0;
    dopt.trusted_dir = a.trusted_dir;
    dopt.cache = facts_cache;
    dopt.threads = jobs;
    dopt.callback = gather;
    dopt.userdata = &g;
    dopt.diagnostics = run_diagnostic;
    g.progress = isatty(STDERR_FILENO) != 0;
    g.t0 = now_seconds();
    g.nnodes = a.facts ? 1 : hiera_value_array_size(listed[0]) + hiera_value_array_size(listed[1]);
    hiera_error derr = {0};
    hiera_diff_stats stats;
    phase("plan", t0);
    plan = hiera_diff_run(&dopt, &stats, &derr);
    free(unseen);
    if (g.shown)
        fputs("\r\033[K", stderr);
    if (!plan) {
        fprintf(stderr, "hiera diff: %s\n", derr.message ? derr.message : "the comparison could not run");
        hiera_error_clear(&derr);
        goto out;
    }
    /* troubles in node order */
    for (size_t i = 1; i < g.ntroubles; i++)
        for (size_t j = i; j > 0 && g.troubles[j - 1].node > g.troubles[j].node; j--) {
            trouble t = g.troubles[j];
            g.troubles[j] = g.troubles[j - 1];
            g.troubles[j - 1] = t;
        }
    phase("lookups", t0);
    hiera_value *warnings = print_diagnostics(true);

    const hiera_value *pk = hiera_value_hash_get(plan, "keys"), *pn = hiera_value_hash_get(plan, "nodes");
    size_t nall = hiera_value_array_size(pk), nnodes = hiera_value_array_size(pn);
    const char **all = xmalloc_((nall ? nall : 1) * sizeof *all);
    for (size_t i = 0; i < nall; i++)
        all[i] = hiera_value_string(hiera_value_array_get(pk, i));
    /* absolute data folders: one in Puppet's environmentpath is each side's own (said once); any
     * other outside both trees is read as it is on both sides: warned about on every run */
    strvec notes = {0};
    const hiera_value *dds = hiera_value_hash_get(plan, "datadirs");
    for (size_t i = 0; i < hiera_value_array_size(dds); i++) {
        const hiera_value *d = hiera_value_array_get(dds, i);
        const char *side_name = hiera_value_string(hiera_value_hash_get(d, "side"));
        const char *config = hiera_value_string(hiera_value_hash_get(d, "config"));
        const char *level = hiera_value_string(hiera_value_hash_get(d, "level"));
        const char *datadir = hiera_value_string(hiera_value_hash_get(d, "datadir"));
        bool mapped = !strcmp(hiera_value_string(hiera_value_hash_get(d, "kind")), "mapped");
        bool said = false, both = false; /* (the same record on the other side) */
        for (size_t j = 0; j < hiera_value_array_size(dds); j++) {
            const hiera_value *e = hiera_value_array_get(dds, j);
            bool same = j != i && !strcmp(hiera_value_string(hiera_value_hash_get(e, "config")), config) &&
                        !strcmp(hiera_value_string(hiera_value_hash_get(e, "level")), level) &&
                        !strcmp(hiera_value_string(hiera_value_hash_get(e, "datadir")), datadir);
            said |= same && j < i;
            both |= same;
        }
        if (said)
            continue;
        char *line = NULL;
        int ok;
        if (mapped)
            ok = asprintf(&line, "note: %s, level '%s': %s is in Puppet's environmentpath %s: read in each side's own tree",
                          config, level, datadir, hiera_value_string(hiera_value_hash_get(d, "environmentpath")));
        else
            ok = asprintf(&line, "%s, level '%s': %s is outside both trees: what is there on this machine (if "
                          "anything) is read as it is, by %s%s",
                          config, level, datadir, both ? "both sides" : side_name, both ? "" : " side");
        if (ok < 0)
            continue;
        if (mapped) {
            sv_push(&notes, line);
        } else {
            fprintf(stderr, "hiera diff: warning: %s\n", line);
            free(line);
        }
    }
    const char **node_names = xmalloc_((nnodes ? nnodes : 1) * sizeof *node_names);
    for (size_t i = 0; i < nnodes; i++)
        node_names[i] = hiera_value_string(hiera_value_array_get(pn, i));
    diff_report rep = {.format = fmt, .color = color, .all_nodes = a.all_nodes, .old = &side[0], .new_ = &side[1],
                       .environment = a.environment, .plan = plan, .keys = all, .nkeys = nall,
                       .nkeys_looked_up = hiera_value_array_size(hiera_value_hash_get(plan, "dirty")),
                       .nodes = node_names, .nnodes = nnodes, .only_old = g.only[0],
                       .only_new = g.only[1], .nonly_old = g.nonly[0], .nonly_new = g.nonly[1], .troubles = g.troubles,
                       .ntroubles = g.ntroubles, .groups = &g.groups, .lookups = stats.lookups,
                       .seconds = now_seconds() - t0, .setup_notes = (const char *const *)notes.v,
                       .nsetup_notes = notes.n, .warnings = warnings};
    report_counts c;
    bool printed = report_print(&rep, stdout, &c);
    fflush(stdout);
    phase("report", t0);
    if (!printed) {
        fprintf(stderr, "hiera diff: cannot write the report: %s\n", strerror(errno));
        rc = 2;
    } else if (g.ntroubles) {
        rc = 2;
    } else if (fail_on_failures) {
        rc = c.now_failing ? 1 : 0;
    } else {
        rc = c.changes || g.nonly[0] || g.nonly[1] ? 1 : 0;
    }
    free(node_names);
    free(all);
    sv_free(&notes);
    hiera_value_decref(warnings);
out:
    if (!free_at_exit()) {
        /* the process ends: the snapshots and groups go back with it at once (tearing them down
         * value by value was a twentieth of a small run); kept reachable */
        diff_kept[1] = snap[0];
        diff_kept[2] = snap[1];
        diff_kept[3] = g.groups.buckets;
        snap[0] = snap[1] = NULL;
        memset(&g.groups, 0, sizeof g.groups);
    }
    gt_free(&g.groups);
    for (size_t i = 0; i < g.ntroubles; i++)
        free(g.troubles[i].msg);
    free(g.troubles);
    free(g.only[0]);
    free(g.only[1]);
    hiera_value_decref(plan);
    for (int s = 0; s < 2; s++) {
        hiera_snapshot_release(snap[s]);
        hiera_value_decref(listed[s]);
        if (s == 0 || src[1] != src[0])
            hiera_facts_source_free(src[s]);
        diff_side_close(&side[s]);
    }
    free(single_name);
    hiera_cache_free(facts_cache);
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
