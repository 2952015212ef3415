/* batch_cmd.c - `hiera batch`: looks up many keys for many nodes in one run and prints one
 * document {node: {key: value, ...}, ...}.
 *
 * Code, environment and merge flags are those of `hiera lookup` (puppet lookup's); the nodes
 * come from --facts-dir DIR (one facts file per node: NAME.yaml, NAME.yml or NAME.json) or
 * --facts FILE (one node, named by --node or by the file name), the keys from --keys-file FILE
 * (one key per line, blank lines and # comments ignored; "-" reads stdin) and/or the arguments;
 * with neither, each node's own keys: every key it can see (hiera_key_names, as `hiera keys` lists
 * them), sorted, each in the form a lookup takes (hiera_key_lookup_form).
 * Every (node, key) is an independent lookup with exactly the request `hiera lookup KEY` would
 * make, so each value is the one `hiera lookup --render-as json` prints for that node and key,
 * byte for byte (it is rendered by the same hiera_render).
 *
 * Output (JSON, the default; --render-as yaml gives the same document as YAML):
 *
 *   {
 *     "node1": {
 *       "key1": <value as hiera lookup --render-as json prints it>,
 *       ...
 *     },
 *     "node2": {},
 *     ".errors": {
 *       "node3": "why the node could not be looked up at all",
 *       "node1": {"key2": "why this lookup failed"}
 *     }
 *   }
 *
 * Nodes appear in byte order of their names, keys in the given order (duplicates dropped; a
 * node's own keys in byte order); a key
 * not found (what makes `hiera lookup` exit 1 silently) is left out. ".errors" is present only
 * when something failed; it cannot clash with a node, since hidden files (names starting with
 * '.') in the facts folder are skipped and --node refuses such names. A node whose facts cannot
 * be used appears only under ".errors" (as a string); a failed lookup leaves its key out of the
 * node and adds it under ".errors" (as {key: message}); what kept a node's own keys from being all
 * listed is its entry ".keys" there (no real key starts with a dot). Exit status: see
 * batch_cmd.h.
 *
 * A facts file is either a hash of facts (as `hiera lookup --facts` reads it) or a node's file of
 * Puppet's YAML facts cache (a !ruby/object:Puppet::Node::Facts document), so that
 * --facts-dir /var/cache/puppet/yaml/facts looks up every node Puppet has facts for, each with
 * exactly the facts `hiera lookup --node NODE` reads from there. A node's facts are its file's
 * alone: unlike `hiera lookup --node NODE --facts FILE`, the facts cache is not read under them.
 *
 * $trusted: Puppet's YAML facts cache does not hold it (the catalog request carries it, from the
 * agent's certificate); Puppet takes it from a node's `trusted` fact when that is a hash with
 * authenticated, certname and extensions (PuppetDB stores it so), and so does every node here.
 * --trusted-dir DIR gives each node NAME the trusted hash of DIR/NAME.yaml, .yml or .json
 * instead (a node without one fails), --trusted FILE the one node of --facts FILE; these are
 * read as `hiera lookup --trusted` reads its file.
 *
 * All contexts share one hiera_cache, so every data file and hiera.yaml is parsed once per run.
 * A progress line is written (and rewritten with \r) on stderr only when stderr is a terminal;
 * when lookups failed, a summary is written on stderr at the end: how many nodes and lookups
 * failed, and the first few distinct messages, each with how often it came. */
#include "cli/batch_cmd.h"

#include "cli/common.h"
#include "cli/facts_opts.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_HELP "Run 'hiera batch --help' for more details"
#define ERRORS_KEY ".errors"
/* under ".errors", a node's entry for what kept its keys from being all listed (no key starts
 * with '.': Puppet refuses such a key, "Syntax error in key") */
#define LISTING_KEY ".keys"

static const char *BATCH_USAGE =
    "usage: hiera batch [--help] [--version] (--facts-dir <DIR> | --facts <FILE> [--node <NODE-NAME>])\n"
    "                   [--keys-file <FILE>] [<keys>] [--type <TYPESTRING>]\n"
    "                   [--merge first|unique|hash|deep] [--knock-out-prefix <PREFIX-STRING>]\n"
    "                   [--sort-merged-arrays] [--merge-hash-arrays] [--default <VALUE>]\n"
    "                   [--environment <ENV>] [--render-as json|yaml] [--jobs <N>]\n"
    "                   [--unsafe-fact-paths] [--trusted-dir <DIR> | --trusted <FILE>]\n"
    "                   [--<puppet setting> <VALUE>]\n"
    "       hiera batch (--from-puppetdb | --puppetdb <URL|FILE>) [--nodes-query <QUERY>]\n"
    "                   [--include-inactive] [--cert <FILE> --key <FILE>] [--cacert <FILE>] ...\n"
    "\n"
    "Looks up every key for every node (one facts file per node in --facts-dir: NAME.yaml,\n"
    "NAME.yml or NAME.json: a hash of facts, or a file of Puppet's YAML facts cache, as in\n"
    "--facts-dir /var/cache/puppet/yaml/facts) and prints {node: {key: value}} with nodes\n"
    "sorted, keys in the given order and keys that are not found left out. Failures are\n"
    "listed under \".errors\":\n"
    "{node: message} when a node could not be looked up, {node: {key: message}} per lookup.\n"
    "--keys-file: one key per line, blank lines and lines starting with # ignored (- is stdin).\n"
    "No keys at all (no <keys>, no --keys-file): each node's own keys, every key it can see (as\n"
    "`hiera keys` lists them: its data files' top-level keys, a module's in its namespace, in the\n"
    "form a lookup takes, sorted); what keeps a node's keys from being all listed (a hiera.yaml\n"
    "or data file that does not parse) is its \".keys\" entry under \".errors\".\n"
    "--jobs: processes that share the nodes (default: one per CPU; JSON output only).\n"
    "$trusted: the node's `trusted` fact when it is a hash with authenticated, certname and\n"
    "extensions, else built from its clientcert fact; --trusted-dir DIR: DIR/NAME.yaml|yml|json\n"
    "for each node; --trusted FILE: for the one node of --facts.\n"
    "Settings, options and the environment are read as `hiera lookup` reads them (see hiera lookup\n"
    "--help): puppet.conf from the confdir, any Puppet setting on the command line (--confdir,\n"
    "--codedir, --environmentpath, --hiera_config, --modulepath...), environment.conf. The\n"
    "environment's config_version command runs once, before the first node (`puppet lookup` runs\n"
    "it for every lookup); if it fails, nothing is looked up. Refused: --explain and\n"
    "--explain-options (use hiera lookup), --compile, --debug and --log_level debug.\n"
    "The nodes may come from PuppetDB instead, with their facts as `hiera lookup --node` takes them\n"
    "from there (fetched a page of nodes at a time; a node that cannot be fetched is listed under\n"
    "\".errors\" and the run goes on):\n"
    CLI_PDB_USAGE
    "Exit status: 0 done, 1 nothing printed (bad options, settings or environment), 2 printed with\n"
    "errors (summed up on stderr).\n";

typedef struct {
    const char *node, *facts, *facts_dir, *keys_file, *trusted, *trusted_dir;
    const char *merge, *prefix, *default_value, *type, *render_as, *jobs;
    bool sort_merged_arrays, merge_hash_arrays, unsafe_fact_paths, verbose;
    const hiera_settings *settings;
    const hiera_environment *env;
    cli_pdb_args pdb; /* PuppetDB as the node set */
} batch_args;

#define EXPLAIN_WHY "there is no explanation in batch mode: use hiera lookup"

/* hiera lookup's options (common.c reads them as puppet lookup does), with batch's own */
static const cli_option BATCH_OPTIONS[] = {
    {"help", 'h', CLI_HELP, 0, NULL},
    {"version", 'V', CLI_VERSION, 0, NULL},
    {"merge", 0, CLI_VALUE, offsetof(batch_args, merge), NULL},
    {"debug", 'd', CLI_REFUSED, 0, "Puppet's debug log is not reproduced"},
    {"verbose", 'v', CLI_FLAG, offsetof(batch_args, verbose), NULL},
    {"render-as", 0, CLI_VALUE, offsetof(batch_args, render_as), NULL},
    {"type", 0, CLI_VALUE, offsetof(batch_args, type), NULL},
    {"compile", 'c', CLI_REFUSED, 0, "site.pp's top-scope variables need Puppet's language; give them as facts"},
    {"knock-out-prefix", 0, CLI_VALUE, offsetof(batch_args, prefix), NULL},
    {"sort-merged-arrays", 0, CLI_FLAG, offsetof(batch_args, sort_merged_arrays), NULL},
    {"merge-hash-arrays", 0, CLI_FLAG, offsetof(batch_args, merge_hash_arrays), NULL},
    {"explain", 0, CLI_REFUSED, 0, EXPLAIN_WHY},
    {"explain-options", 0, CLI_REFUSED, 0, EXPLAIN_WHY},
    {"default", 0, CLI_VALUE, offsetof(batch_args, default_value), NULL},
    {"trusted", 0, CLI_VALUE, offsetof(batch_args, trusted), NULL}, /* puppet lookup's takes no file */
    {"node", 0, CLI_VALUE, offsetof(batch_args, node), NULL},
    {"facts", 0, CLI_VALUE, offsetof(batch_args, facts), NULL},
    /* hiera's */
    {"unsafe-fact-paths", 0, CLI_FLAG, offsetof(batch_args, unsafe_fact_paths), NULL},
    {"facts-dir", 0, CLI_VALUE, offsetof(batch_args, facts_dir), NULL},
    {"keys-file", 0, CLI_VALUE, offsetof(batch_args, keys_file), NULL},
    {"jobs", 0, CLI_VALUE, offsetof(batch_args, jobs), NULL},
    {"trusted-dir", 0, CLI_VALUE, offsetof(batch_args, trusted_dir), NULL},
    {"puppetdb", 0, CLI_VALUE, offsetof(batch_args, pdb.puppetdb), NULL},
    {"from-puppetdb", 0, CLI_FLAG, offsetof(batch_args, pdb.from_puppetdb), NULL},
    {"nodes-query", 0, CLI_VALUE, offsetof(batch_args, pdb.nodes_query), NULL},
    {"include-inactive", 0, CLI_FLAG, offsetof(batch_args, pdb.include_inactive), NULL},
    {"cert", 0, CLI_VALUE, offsetof(batch_args, pdb.cert), NULL},
    {"key", 0, CLI_VALUE, offsetof(batch_args, pdb.key), NULL},
    {"cacert", 0, CLI_VALUE, offsetof(batch_args, pdb.cacert), NULL}, /* (also Puppet's setting; no effect there) */
    {"puppetdb-timeout", 0, CLI_VALUE, offsetof(batch_args, pdb.timeout), NULL},
};

typedef struct {
    char **v;
    size_t n, cap;
} strvec;

/* a node and where its facts are */
typedef struct {
    char *name;
    char *path;
    char *other_path; /* a second facts file for the same name: the node is refused */
} node_src;

/* What a worker process tells its parent while it runs and when it ends (shared memory). */
struct worker_share {
    size_t done_nodes, lookups, nerrors;
    int finished; /* 1: its output is complete */
};

typedef struct {
    hiera_cache *cache;
    hiera_facts_source *src; /* PuppetDB, or NULL: facts files */
    hiera_render_format rf;
    hiera_request req;
    const batch_args *a;
    /* the keys, unique, in the given order, and their JSON forms */
    char **keys;
    char **keys_json;
    size_t *keys_json_len;
    size_t nkeys;
    bool all_keys; /* no keys given: each node's own, every key it can see (hiera_key_names) */
    hiera_value *key_forms; /* all_keys: key as written -> [lookup form, its JSON] | why none */
    /* output */
    size_t nodes_printed;
    hiera_value *doc;    /* YAML: the whole document, built as we go */
    hiera_value *errors; /* node -> message | {key -> message}; NULL until the first error */
    /* a worker process of a parallel run: its counters, read by the parent */
    struct worker_share *share;
    size_t jobs;     /* worker processes (1: none) */
    bool jobs_given; /* by --jobs */
    /* progress */
    bool progress;
    struct timespec last_progress;
    size_t done_nodes, nnodes, lookups, nerrors;
} batch;

/* ------------------------------------------------------------------ small helpers */

static int fail(const char *fmt, const char *arg)
{
    fputs("Error: Could not run: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s);
    char *d = xalloc(n + 1);
    memcpy(d, s, n + 1);
    return d;
}

static void sv_push(strvec *sv, char *s)
{
    if (sv->n == sv->cap) {
        size_t cap = sv->cap ? sv->cap * 2 : 16;
        char **v = realloc(sv->v, cap * sizeof *v);
        if (!v) {
            fputs("hiera batch: out of memory\n", stderr);
            exit(1);
        }
        sv->v = v;
        sv->cap = cap;
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

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A string's JSON form as hiera_render writes it (malloc'ed), or NULL when it cannot be (bad
 * UTF-8: Ruby's JSON refuses it too). */
static char *json_string(const char *s)
{
    hiera_value *v = hiera_value_new_string(s);
    hiera_error err = {0};
    char *text = hiera_render(v, HIERA_RENDER_JSON, &err);
    hiera_value_decref(v);
    hiera_error_clear(&err);
    return text;
}

/* A message as JSON; bytes JSON cannot carry (invalid UTF-8) become '?' so that the message is
 * never lost. */
static char *json_message(const char *msg)
{
    char *text = json_string(msg);
    if (text)
        return text;
    char *copy = dupstr(msg);
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    text = json_string(copy);
    free(copy);
    return text ? text : dupstr("\"(message not representable)\"");
}

/* ------------------------------------------------------------------ options */

/* The merge option exactly as hiera lookup (puppet lookup) builds it; NULL when not given.
 * Returns -1 after printing the error. */
static int build_merge(const batch_args *a, hiera_value **out)
{
    *out = NULL;
    if ((a->sort_merged_arrays || a->merge_hash_arrays || a->prefix) && (!a->merge || strcmp(a->merge, "deep") != 0)) {
        fail("The options --knock-out-prefix, --sort-merged-arrays, and --merge-hash-arrays are only available with '--merge deep'\n%s",
             RUN_HELP);
        return -1;
    }
    if (!a->merge)
        return 0;
    if (strcmp(a->merge, "first") && strcmp(a->merge, "hash") && strcmp(a->merge, "unique") && strcmp(a->merge, "deep")) {
        fail("The --merge option only accepts 'first', 'hash', 'unique', or 'deep'\n%s", RUN_HELP);
        return -1;
    }
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

/* One key per line; surrounding blanks are dropped, blank lines and lines whose first non-blank
 * character is '#' are skipped. */
static int read_keys_file(const char *path, strvec *keys)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "r");
    if (!f) {
        fprintf(stderr, "Error: Could not run: cannot read the keys file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        size_t len = strlen(line); /* a NUL byte ends the key */
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
            line[--len] = 0;
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == 0 || *s == '#')
            continue;
        sv_push(keys, dupstr(s));
    }
    bool bad = ferror(f);
    int e = errno;
    free(line);
    if (!is_stdin)
        fclose(f);
    if (bad) {
        fprintf(stderr, "Error: Could not run: cannot read the keys file %s: %s\n", path, strerror(e));
        return -1;
    }
    return 0;
}

static int cmp_index_by_string(const void *pa, const void *pb, void *ctx)
{
    char **v = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    int c = strcmp(v[a], v[b]);
    return c ? c : (a < b ? -1 : a > b);
}

/* Drops repeated keys (the first occurrence stays, so the order is the given one). */
static void dedupe_keys(strvec *keys)
{
    if (keys->n < 2)
        return;
    size_t *idx = xalloc(keys->n * sizeof *idx);
    bool *drop = calloc(keys->n, sizeof *drop);
    if (!drop) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    for (size_t i = 0; i < keys->n; i++)
        idx[i] = i;
    qsort_r(idx, keys->n, sizeof *idx, cmp_index_by_string, keys->v);
    for (size_t i = 1; i < keys->n; i++)
        if (strcmp(keys->v[idx[i]], keys->v[idx[i - 1]]) == 0)
            drop[idx[i]] = true; /* equal keys are sorted by position: the later one goes */
    size_t j = 0;
    for (size_t i = 0; i < keys->n; i++) {
        if (drop[i])
            free(keys->v[i]);
        else
            keys->v[j++] = keys->v[i];
    }
    keys->n = j;
    free(idx);
    free(drop);
}

/* ------------------------------------------------------------------ nodes */

/* NAME.yaml, NAME.yml, NAME.json -> the length of NAME, or 0 when the file is not a facts file */
static size_t facts_name_len(const char *file)
{
    static const char *exts[] = {".yaml", ".yml", ".json"};
    for (size_t i = 0; i < 3; i++)
        if (ends_with(file, exts[i]) && strlen(file) > strlen(exts[i]))
            return strlen(file) - strlen(exts[i]);
    return 0;
}

static int cmp_node(const void *pa, const void *pb)
{
    const node_src *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->path, b->path);
}

static void free_nodes(node_src *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(nodes[i].name);
        free(nodes[i].path);
        free(nodes[i].other_path);
    }
    free(nodes);
}

/* dir/name, malloc'ed */
static char *join_path(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl && dir[dl - 1] != '/';
    char *path = xalloc(dl + slash + nl + 1);
    memcpy(path, dir, dl);
    if (slash)
        path[dl] = '/';
    memcpy(path + dl + slash, name, nl + 1);
    return path;
}

/* The facts files of a folder, sorted by node name; hidden files and folders are skipped. Two
 * files for one name (web.yaml and web.json) keep the first and note the second. */
static int list_facts_dir(const char *dir, node_src **out, size_t *nout)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "Error: Could not run: cannot read the facts folder %s: %s\n", dir, strerror(errno));
        return -1;
    }
    node_src *nodes = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        size_t nl = facts_name_len(de->d_name);
        if (!nl)
            continue;
        if (de->d_type != DT_REG && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
            continue;
        char *path = join_path(dir, de->d_name);
        struct stat st;
        /* (a regular file by the folder's word needs no stat; a link is followed) */
        if (de->d_type != DT_REG && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) {
            free(path);
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            node_src *nn = realloc(nodes, cap * sizeof *nn);
            if (!nn) {
                fputs("hiera batch: out of memory\n", stderr);
                exit(1);
            }
            nodes = nn;
        }
        char *name = xalloc(nl + 1);
        memcpy(name, de->d_name, nl);
        name[nl] = 0;
        nodes[n++] = (node_src){name, path, NULL};
    }
    closedir(d);
    if (n)
        qsort(nodes, n, sizeof *nodes, cmp_node);
    /* fold duplicates: the first path (in byte order) stays, the next one is remembered */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (j && strcmp(nodes[j - 1].name, nodes[i].name) == 0) {
            if (!nodes[j - 1].other_path)
                nodes[j - 1].other_path = nodes[i].path;
            else
                free(nodes[i].path);
            free(nodes[i].name);
            continue;
        }
        nodes[j++] = nodes[i];
    }
    *out = nodes;
    *nout = j;
    return 0;
}

/* PuppetDB's nodes (--from-puppetdb, --puppetdb, --nodes-query): *src is the source their facts
 * are read from. -1 after printing the error. */
static int list_puppetdb(batch_args *a, hiera_facts_source **src, node_src **out, size_t *nout)
{
    *src = cli_factsrc_open(NULL, &a->pdb, a->settings, NULL, NULL);
    if (!*src)
        return -1;
    hiera_error lerr = {0};
    hiera_value *list = hiera_facts_source_nodes(*src, &lerr);
    if (!list) {
        fail("%s", lerr.message);
        hiera_error_clear(&lerr);
        return -1;
    }
    size_t n = hiera_value_array_size(list);
    char **names = xalloc((n ? n : 1) * sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = dupstr(hiera_value_string(hiera_value_array_get(list, i)));
    hiera_value_decref(list);
    node_src *nodes = xalloc((n ? n : 1) * sizeof *nodes);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (names[i][0] == '.' || names[i][0] == 0) {
            /* (".errors" is the document's own) */
            fprintf(stderr, "Warning: PuppetDB's node '%s' is left out: hiera batch reserves names starting with '.'\n",
                    names[i]);
            free(names[i]);
            continue;
        }
        nodes[j++] = (node_src){names[i], NULL, NULL};
    }
    free(names);
    *out = nodes;
    *nout = j;
    return 0;
}

/* The node name for --facts FILE: --node, else the file name without folder and extension. */
static char *single_node_name(const batch_args *a)
{
    if (a->node)
        return dupstr(a->node);
    const char *base = strrchr(a->facts, '/');
    base = base ? base + 1 : a->facts;
    size_t nl = facts_name_len(base);
    if (!nl)
        nl = strlen(base);
    char *name = xalloc(nl + 1);
    memcpy(name, base, nl);
    name[nl] = 0;
    return name;
}

/* ------------------------------------------------------------------ errors and progress */

static void add_error(batch *b, const char *node, const char *key, const char *msg)
{
    if (!msg || !*msg)
        msg = "unknown error";
    if (!b->errors)
        b->errors = hiera_value_new_hash();
    b->nerrors++;
    if (b->share)
        __atomic_store_n(&b->share->nerrors, b->nerrors, __ATOMIC_RELAXED);
    if (!key) {
        hiera_value_hash_set(b->errors, node, hiera_value_new_string(msg));
        return;
    }
    hiera_value *per = hiera_value_hash_get(b->errors, node);
    if (per && hiera_value_kind(per) != HIERA_HASH)
        return; /* the node failed as a whole: that says it all */
    if (!per) {
        per = hiera_value_new_hash();
        hiera_value_hash_set(b->errors, node, per); /* stays owned by b->errors alone */
    }
    hiera_value_hash_set(per, key, hiera_value_new_string(msg));
}

static double elapsed(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress(batch *b, bool final)
{
    if (!b->progress)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!final && elapsed(&b->last_progress, &now) < 0.1)
        return;
    b->last_progress = now;
    if (final) {
        fputs("\r\033[K", stderr);
    } else {
        fprintf(stderr, "\rhiera batch: %zu/%zu nodes, %zu lookups, %zu errors\033[K", b->done_nodes, b->nnodes,
                b->lookups, b->nerrors);
    }
    fflush(stderr);
}

/* ------------------------------------------------------------------ output */

/* JSON is streamed node by node, every value on its own line as hiera lookup prints it. The
 * pieces of a node go through a buffer of their own (one thread writes stdout): a call of
 * fwrite per piece cost a hundred instructions each, a value and its key a copy of a few words.
 * The buffer is written out a megabyte at a time: each write to a file costs the kernel more
 * than its bytes (the file's times updated, its pages reserved), and with 64 KiB the 400 writes
 * of a fleet run (26 MB) took a fifth of its system time, 4% of its CPU time. */
static struct {
    size_t len;
    int err; /* errno of a failed write, 0 */
    char buf[1 << 20];
} json_out;

/* Writes n bytes to standard output itself, after what stdio holds (a block through fwrite
 * was copied once more into stdio's buffer: 26 MB a fleet run). */
static void out_write(const char *s, size_t n)
{
    if (fflush(stdout) != 0 && !json_out.err)
        json_out.err = errno ? errno : EIO;
    while (n && !json_out.err) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            json_out.err = w < 0 ? errno : EIO;
            break;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Hands what json_out holds to stdout (before anything else is written there). */
static void json_out_flush(void)
{
    if (json_out.len)
        out_write(json_out.buf, json_out.len);
    json_out.len = 0;
}

/* Whether everything written to standard output went (what json_out wrote itself included);
 * errno tells why not. */
static bool out_ok(void)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return false;
    if (json_out.err) {
        errno = json_out.err;
        return false;
    }
    return true;
}

static void json_put_slow(const char *s, size_t n)
{
    json_out_flush();
    if (n >= sizeof json_out.buf) {
        out_write(s, n);
        return;
    }
    memcpy(json_out.buf, s, n);
    json_out.len = n;
}

static inline void json_put(const char *s, size_t n)
{
    if (n > sizeof json_out.buf - json_out.len) {
        json_put_slow(s, n);
        return;
    }
    memcpy(json_out.buf + json_out.len, s, n);
    json_out.len += n;
}

static void json_begin_node(batch *b, const char *name_json)
{
    json_put(b->nodes_printed ? ",\n  " : "{\n  ", 4);
    json_put(name_json, strlen(name_json));
    json_put(": {", 3);
    b->nodes_printed++;
}

static void json_node_value(size_t nth, const char *key_json, size_t key_len, const char *value_json, size_t value_len)
{
    json_put(nth ? ",\n    " : "\n    ", nth ? 6 : 5);
    json_put(key_json, key_len);
    json_put(": ", 2);
    json_put(value_json, value_len);
}

static void json_end_node(size_t nvalues) { json_put(nvalues ? "\n  }" : "}", nvalues ? 4 : 1); }

/* The entries of ".errors", each written as ",\n    NODE: MESSAGE-OR-HASH" (the first comma is
 * dropped when printed), so that the entries of several worker processes simply concatenate. */
static void json_error_entries(FILE *out, const hiera_value *errors)
{
    for (size_t i = 0; errors && i < hiera_value_hash_size(errors); i++) {
        char *node = json_message(hiera_value_string(hiera_value_hash_key(errors, i)));
        hiera_value *e = hiera_value_hash_value(errors, i);
        fputs(",\n    ", out);
        fputs(node, out);
        fputs(": ", out);
        free(node);
        if (hiera_value_kind(e) == HIERA_STRING) {
            char *m = json_message(hiera_value_string(e));
            fputs(m, out);
            free(m);
            continue;
        }
        fputc('{', out);
        for (size_t k = 0; k < hiera_value_hash_size(e); k++) {
            char *key = json_message(hiera_value_string(hiera_value_hash_key(e, k)));
            char *m = json_message(hiera_value_string(hiera_value_hash_value(e, k)));
            fputs(k ? ",\n      " : "\n      ", out);
            fputs(key, out);
            fputs(": ", out);
            fputs(m, out);
            free(key);
            free(m);
        }
        fputs("\n    }", out);
    }
}

/* ".errors" from its entries (as json_error_entries writes them) */
static void json_print_error_entries(batch *b, const char *entries, size_t len)
{
    if (len < 1)
        return;
    json_begin_node(b, "\"" ERRORS_KEY "\"");
    json_put(entries + 1, len - 1);
    json_put("\n  }", 4);
    json_out_flush();
}

static void json_print_errors(batch *b)
{
    if (!b->errors)
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    json_error_entries(mem, b->errors);
    fclose(mem);
    json_print_error_entries(b, text, len);
    free(text);
}

/* YAML: the document is built as the nodes are looked up and rendered once at the end, with
 * ".errors" last. */
static char *yaml_try(batch *b)
{
    hiera_value *top = hiera_value_new_hash();
    for (size_t i = 0; i < hiera_value_hash_size(b->doc); i++)
        hiera_value_hash_set(top, hiera_value_string(hiera_value_hash_key(b->doc, i)),
                             hiera_value_incref(hiera_value_hash_value(b->doc, i)));
    if (b->errors)
        hiera_value_hash_set(top, ERRORS_KEY, hiera_value_incref(b->errors));
    hiera_error err = {0};
    char *text = hiera_render(top, HIERA_RENDER_YAML, &err);
    hiera_error_clear(&err);
    hiera_value_decref(top);
    return text;
}

/* When the document cannot be rendered, a value that YAML cannot show is to blame: every value
 * is tried alone and the ones that fail move to the errors, as hiera lookup would fail on them. */
static void yaml_drop_unrenderable(batch *b)
{
    hiera_value *old = b->doc;
    b->doc = hiera_value_new_hash();
    hiera_error err = {0};
    for (size_t i = 0; i < hiera_value_hash_size(old); i++) {
        const char *node = hiera_value_string(hiera_value_hash_key(old, i));
        hiera_value *vals = hiera_value_hash_value(old, i);
        hiera_value *kept = hiera_value_new_hash();
        for (size_t k = 0; k < hiera_value_hash_size(vals); k++) {
            const char *key = hiera_value_string(hiera_value_hash_key(vals, k));
            hiera_value *v = hiera_value_hash_value(vals, k);
            char *t = hiera_render(v, HIERA_RENDER_YAML, &err);
            if (t)
                hiera_value_hash_set(kept, key, hiera_value_incref(v));
            else
                add_error(b, node, key, err.message);
            free(t);
            hiera_error_clear(&err);
        }
        hiera_value_hash_set(b->doc, node, kept);
    }
    hiera_value_decref(old);
}

static int yaml_output(batch *b)
{
    char *text = yaml_try(b);
    if (!text) {
        yaml_drop_unrenderable(b);
        text = yaml_try(b);
    }
    if (!text)
        return fail("%s", "the document cannot be rendered as YAML");
    fputs(text, stdout);
    free(text);
    return 0;
}

/* ------------------------------------------------------------------ facts */

/* The checks hiera lookup makes on a facts file before it builds a context; a message (malloc'ed)
 * when the node cannot be looked up. */
static char *check_facts(const char *path, const char *node, const hiera_value *facts)
{
    char buf[4096];
    if (hiera_value_kind(facts) != HIERA_HASH) {
        snprintf(buf, sizeof buf,
                 "Incorrectly formatted data in %s given via the --facts flag (only accepts yaml and json files)", path);
        return dupstr(buf);
    }
    static const char *trusted[] = {"hostname", "domain", "fqdn", "clientcert"};
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (hiera_value_hash_get(facts, trusted[i]))
            n++;
    if (n && n != 4) {
        snprintf(buf, sizeof buf,
                 "When overriding any of the hostname,domain,fqdn,clientcert facts with %s given via the --facts flag, "
                 "they must all be overridden.",
                 path);
        return dupstr(buf);
    }
    if (hiera_value_hash_size(facts) == 0) {
        snprintf(buf, sizeof buf, "No facts available for target node: %s", node);
        return dupstr(buf);
    }
    return NULL;
}

/* A node's trusted hash from --trusted FILE or --trusted-dir DIR: a new reference, NULL when
 * neither is given, or NULL with *msg. */
static hiera_value *load_node_trusted(hiera_cache *cache, const batch_args *a, const node_src *n, char **msg)
{
    char *path = NULL;
    if (a->trusted) {
        path = dupstr(a->trusted);
    } else if (a->trusted_dir) {
        static const char *exts[] = {".yaml", ".yml", ".json"};
        for (size_t i = 0; i < 3 && !path; i++) {
            char *file = xalloc(strlen(n->name) + 6);
            strcpy(file, n->name);
            strcat(file, exts[i]);
            char *p = join_path(a->trusted_dir, file);
            free(file);
            struct stat st;
            if (stat(p, &st) == 0)
                path = p;
            else
                free(p);
        }
        if (!path) {
            size_t len = strlen(a->trusted_dir) + 3 * strlen(n->name) + 96;
            *msg = xalloc(len);
            snprintf(*msg, len, "no trusted data for this node in %s (%s.yaml, %s.yml or %s.json)", a->trusted_dir, n->name,
                     n->name, n->name);
            return NULL;
        }
    } else {
        return NULL;
    }
    hiera_error err = {0};
    hiera_value *t = hiera_cache_load_value_file(cache, path, &err);
    if (!t)
        *msg = dupstr(err.message && *err.message ? err.message : "cannot read the trusted data file");
    hiera_error_clear(&err);
    free(path);
    return t;
}

/* What a node is looked up with: its facts (given like --facts, or stored like the facts cache's
 * are under --node), its trusted hash, or why it cannot be. */
typedef struct {
    hiera_value *facts;   /* NULL with msg */
    bool stored;          /* the facts are a node's stored facts (a file of Puppet's facts cache) */
    hiera_value *trusted; /* NULL: none given */
    char *msg;            /* malloc'ed, or NULL */
} node_input;

static void node_input_free(node_input *in)
{
    hiera_value_decref(in->facts);
    hiera_value_decref(in->trusted);
    free(in->msg);
    memset(in, 0, sizeof *in);
}

/* A node's facts, read and checked as hiera lookup --facts does (for a file of the facts cache:
 * as hiera lookup --node reads it there; from PuppetDB: the reader's next node, as hiera lookup
 * --node takes it from there), and its trusted hash. Touches nothing shared, so that the
 * prefetch thread may call it. */
static void load_node_input(hiera_cache *cache, const batch_args *a, const node_src *n, hiera_facts_reader *rd,
                            node_input *in)
{
    memset(in, 0, sizeof *in);
    if (rd) {
        hiera_node_facts fn;
        hiera_status fst;
        hiera_error ferr = {0};
        hiera_facts_reader_next(rd, &fst, &fn, &ferr);
        if (fst == HIERA_OK) {
            in->stored = fn.base != NULL;
            in->facts = in->stored ? fn.base : fn.given;
            fn.base = fn.given = NULL;
        } else {
            in->msg = ferr.message ? ferr.message : dupstr("no facts");
            ferr.message = NULL;
        }
        hiera_node_facts_clear(&fn);
        hiera_error_clear(&ferr);
        if (!in->msg)
            in->trusted = load_node_trusted(cache, a, n, &in->msg);
        if (in->msg) {
            hiera_value_decref(in->facts);
            hiera_value_decref(in->trusted);
            in->facts = in->trusted = NULL;
        }
        return;
    }
    if (n->other_path) {
        size_t len = strlen(n->path) + strlen(n->other_path) + 64;
        in->msg = xalloc(len);
        snprintf(in->msg, len, "more than one facts file for this node: %s and %s", n->path, n->other_path);
        return;
    }
    hiera_error err = {0};
    int kind = HIERA_FACTS_FILE;
    hiera_value *f = hiera_facts_load(cache, n->path, n->name, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
    if (!f) {
        in->msg = dupstr(err.message && *err.message ? err.message : "cannot read the facts file");
        hiera_error_clear(&err);
        return;
    }
    in->stored = kind == HIERA_FACTS_CACHE;
    if (in->stored && hiera_value_hash_size(f) == 0) {
        char buf[4096];
        snprintf(buf, sizeof buf, "No facts available for target node: %s", n->name);
        in->msg = dupstr(buf);
    } else if (!in->stored) {
        in->msg = check_facts(n->path, n->name, f);
    }
    if (!in->msg)
        in->trusted = load_node_trusted(cache, a, n, &in->msg);
    if (in->msg) {
        hiera_value_decref(f);
        hiera_value_decref(in->trusted);
        in->trusted = NULL;
        return;
    }
    in->facts = f;
}

/* ------------------------------------------------------------------ facts prefetch */

/* Parsing facts files costs about as much as a sixth of the lookups, and PuppetDB's answers come
 * over the network: a second thread then reads them ahead of the lookups (at most PREFETCH_AHEAD
 * nodes ahead). The thread only runs hiera_facts_load (or PuppetDB's reader), which share no
 * state, and hands each result over under the mutex; everything else (contexts, cache, output)
 * stays on the main thread. Facts the disk cache holds are read faster than a thread hands them
 * over: values made by one thread and freed by another cost the allocator more than the reading
 * (on the benchmark fleet, 23% of the CPU time of a run over all nodes with one key). So facts
 * files are read on the main thread while they come at most PREFETCH_SLOW_NS each: the first
 * PREFETCH_SAMPLE nodes tell, and the thread starts only when they were slower (no disk cache
 * yet, a slow file system). */
#define PREFETCH_AHEAD 64
#define PREFETCH_SAMPLE 8
#define PREFETCH_SLOW_NS 60000

typedef struct {
    hiera_cache *cache; /* only its disk cache is used (hiera_cache_load_value_file) */
    const batch_args *a;
    const node_src *nodes;
    size_t n;
    node_input *in; /* slot i: node i's */
    bool *ready;
    size_t consumed; /* nodes taken by the main thread */
    bool producer_waits, consumer_waits; /* who sleeps on cv */
    size_t waiting_at;                   /* the node the sleeping producer would read next */
    bool stop;
    bool threaded;
    size_t first;     /* the first node the thread reads (those before: the main thread) */
    long long spent;  /* CPU time (ns) of the main thread's first reads, for the choice */
    hiera_facts_reader *reader; /* PuppetDB's nodes, read in order (by the thread) */
    const char **names;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} prefetch;

static void *prefetch_thread(void *arg)
{
    prefetch *p = arg;
    for (size_t i = p->first; i < p->n; i++) {
        pthread_mutex_lock(&p->mu);
        if (!p->stop && i >= p->consumed + PREFETCH_AHEAD) {
            /* far enough ahead: sleep until the main thread has used half of the window */
            p->producer_waits = true;
            p->waiting_at = i;
            while (!p->stop && i >= p->consumed + PREFETCH_AHEAD / 2)
                pthread_cond_wait(&p->cv, &p->mu);
            p->producer_waits = false;
        }
        bool stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        node_input in;
        load_node_input(p->cache, p->a, &p->nodes[i], p->reader, &in);
        pthread_mutex_lock(&p->mu);
        p->in[i] = in;
        p->ready[i] = true;
        if (p->consumer_waits)
            pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* The thread, reading from node `first` on (none for fewer than two nodes: not worth it). */
static void prefetch_thread_start(prefetch *p, size_t first)
{
    if (p->n < first + 2)
        return;
    p->first = first;
    p->consumed = first;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threaded = pthread_create(&p->thread, NULL, prefetch_thread, p) == 0;
    if (!p->threaded) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
}

static void prefetch_start(prefetch *p, hiera_cache *cache, const batch_args *a, hiera_facts_source *src, const node_src *nodes,
                           size_t n)
{
    memset(p, 0, sizeof *p);
    if (src) {
        p->names = xalloc((n ? n : 1) * sizeof *p->names);
        for (size_t i = 0; i < n; i++)
            p->names[i] = nodes[i].name;
        p->reader = hiera_facts_reader_new(src, p->names, n, cache);
    }
    p->cache = cache;
    p->a = a;
    p->nodes = nodes;
    p->n = n;
    p->in = calloc(n ? n : 1, sizeof *p->in);
    p->ready = calloc(n ? n : 1, sizeof *p->ready);
    if (!p->in || !p->ready) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    if (src)
        prefetch_thread_start(p, 0); /* (files: prefetch_take decides) */
}

static long long thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Node i's input (the caller owns it), in order; without the thread it is read here. */
static void prefetch_take(prefetch *p, size_t i, node_input *in)
{
    if (!p->threaded) {
        bool sampling = !p->reader && i < PREFETCH_SAMPLE;
        long long t0 = sampling ? thread_cpu_ns() : 0;
        load_node_input(p->cache, p->a, &p->nodes[i], p->reader, in);
        if (sampling) {
            p->spent += thread_cpu_ns() - t0;
            if (i + 1 == PREFETCH_SAMPLE && p->spent > (long long)PREFETCH_SAMPLE * PREFETCH_SLOW_NS)
                prefetch_thread_start(p, i + 1);
        }
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->consumer_waits = true;
    while (!p->ready[i])
        pthread_cond_wait(&p->cv, &p->mu);
    p->consumer_waits = false;
    *in = p->in[i];
    memset(&p->in[i], 0, sizeof p->in[i]);
    p->consumed = i + 1;
    if (p->producer_waits && p->waiting_at < p->consumed + PREFETCH_AHEAD / 2)
        pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void prefetch_stop(prefetch *p)
{
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    for (size_t i = 0; i < p->n; i++)
        node_input_free(&p->in[i]);
    free(p->in);
    free(p->ready);
    hiera_facts_reader_free(p->reader);
    free(p->names);
}

/* ------------------------------------------------------------------ the run */

/* Builds that look for leaks free everything before exiting. */
#if defined(HIERA_FREE_ON_EXIT) || defined(__SANITIZE_ADDRESS__)
#define FREE_ON_EXIT 1
#else
#define FREE_ON_EXIT 0
static hiera_cache *exit_cache;
#endif

/* Many nodes get the very same value object (a value found as it is in a data file, or the
 * same merge): its JSON text is remembered by address in a small table, which holds a reference
 * so that the address cannot be reused by another value while the entry lives. A value no one
 * else holds (a node's own merge or interpolation) cannot come back from another lookup: its
 * text is not kept, nor is the value held past its node (keeping them grew the run's heap by
 * 5 MiB on the benchmark fleet, and its CPU time by a tenth, from the cache misses). */
#define RENDER_MEMO_BITS 14
typedef struct {
    hiera_value *v;
    char *text;
    size_t len;
} render_slot;
static render_slot render_memo[1u << RENDER_MEMO_BITS];

/* v's JSON text; *once: the caller frees it (not remembered) */
static const char *render_json_memo(hiera_cache *c, hiera_value *v, size_t *len, bool *once, hiera_error *err)
{
    /* a value no one else holds is in no slot (a slot holds a reference): its slot, far from
     * what the node's rendering reads, is not read */
    *once = !hiera_value_is_shared(v);
    size_t i = (size_t)(((uint64_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull >> (64 - RENDER_MEMO_BITS));
    render_slot *s = &render_memo[i];
    if (!*once && s->v == v) {
        *len = s->len;
        return s->text;
    }
    char *text = hiera_cache_render(c, v, HIERA_RENDER_JSON, err); /* (parts shared by nodes: written once) */
    if (!text)
        return NULL;
    *len = strlen(text);
    if (*once)
        return text;
    hiera_value_decref(s->v);
    free(s->text);
    s->v = hiera_value_incref(v);
    s->text = text;
    s->len = *len;
    return text;
}

static void render_memo_clear(void)
{
    for (size_t i = 0; i < sizeof render_memo / sizeof *render_memo; i++) {
        hiera_value_decref(render_memo[i].v);
        free(render_memo[i].text);
        render_memo[i] = (render_slot){NULL, NULL, 0};
    }
}

/* Nodes are taken a block at a time: every key is looked up for each node of the block before
 * the next key, so that what the engine keeps for a key (its key index entry, its options, the
 * merges remembered for it) is still in the CPU's caches for the next node; each node's answers
 * are then written, and its errors listed, in node order as before. 8 nodes: the contexts
 * alive at once (facts, scope, levels, answers) must stay in the caches too. On the benchmark
 * fleet, against blocks of 32, 8 took 0.7% more instructions but had 62% fewer last-level
 * misses (cachegrind, 2 MiB): 1.89 -> 0.71 M (16: 1.17 M; 4: 0.60 M for 1.1% more
 * instructions), and 4-9% less CPU time. */
#define NODE_BLOCK 8

/* A lookup's answer, kept until its node is written: a block's answers are written by every
 * lookup and read back after the block's lookups, so they are kept small (as hiera_status and
 * hiera_error they took 48 bytes a key: with them a sixth of a run's last-level misses on the
 * benchmark fleet, in blocks of 32). */
typedef struct {
    hiera_value *v; /* HIERA_OK: the value (a reference), else NULL */
    char *msg;      /* HIERA_ERROR: the message (malloc'ed, maybe ""), else NULL; both NULL: not found */
} answer;

typedef struct {
    hiera *h;       /* NULL: the node failed as a whole (msg) */
    char *msg;      /* why (malloc'ed), or NULL */
    answer *answers; /* one per key, key k's at answers[k * stride] */
    size_t stride;
    /* its keys: the batch's, or with all_keys its own (owned, with answers) */
    char **keys, **keys_json;
    size_t *keys_json_len;
    size_t nkeys;
    char *listing_msg; /* all_keys: what kept keys from being listed (malloc'ed), or NULL */
} node_run;

/* The contexts' diagnostics: each distinct message once per run (every node meets the same
 * undefined variable or deprecated hiera.yaml) */
static void print_diagnostic_once(const hiera_diagnostic *d, void *userdata)
{
    static hiera_value *seen;
    if (!seen)
        seen = hiera_value_new_hash();
    if (hiera_value_hash_get(seen, d->message))
        return;
    hiera_value_hash_set(seen, d->message, hiera_value_new_bool(true));
    cli_print_diagnostic(d, userdata);
}

/* a node's key: its lookup form and the form's JSON (borrowed from batch.key_forms) */
typedef struct {
    const char *form;
    const hiera_value *json;
} key_form;

static int cmp_form(const void *a, const void *b) { return strcmp(((const key_form *)a)->form, ((const key_form *)b)->form); }

/* The node's own keys (all_keys): every key it can see, each in the form a lookup takes
 * (hiera_key_lookup_form), sorted by their bytes; what could not be listed goes to
 * r->listing_msg, one problem a line. The forms of a key and their JSON are made once per run
 * (b->key_forms: key as written -> [form, form's JSON], or a message when it has none), and the
 * node's keys borrow them. */
static void node_list_keys(batch *b, node_run *r)
{
    hiera_value *all = hiera_key_names(r->h);
    const hiera_value *keys = hiera_value_hash_get(all, "keys"), *errors = hiera_value_hash_get(all, "errors");
    size_t n = hiera_value_array_size(keys), m = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *problems = open_memstream(&text, &len);
    if (!problems) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    const char *env = hiera_environment_name(b->a->env);
    for (size_t i = 0; i < hiera_value_array_size(errors); i++) {
        char *line = cli_listing_problem(hiera_value_array_get(errors, i), env);
        fprintf(problems, "%s%s", ftell(problems) ? "\n" : "", line);
        free(line);
    }
    if (!b->key_forms)
        b->key_forms = hiera_value_new_hash();
    key_form *forms = xalloc((n ? n : 1) * sizeof *forms);
    for (size_t i = 0; i < n; i++) {
        const char *key = hiera_value_string(hiera_value_array_get(keys, i));
        hiera_value *f = hiera_value_hash_get(b->key_forms, key);
        if (!f) {
            char *lf = hiera_key_lookup_form(key), *lj = lf ? json_string(lf) : NULL;
            if (lj) {
                f = hiera_value_new_array();
                hiera_value_array_push(f, hiera_value_new_string(lf));
                hiera_value_array_push(f, hiera_value_new_string(lj));
            } else {
                f = hiera_value_new_string(lf ? "a key is not valid UTF-8: it cannot be written as JSON"
                                              : "holds both quotes and a dot or quote: no lookup can reach it");
            }
            free(lf);
            free(lj);
            hiera_value_hash_set(b->key_forms, key, f); /* (f stays borrowed from b->key_forms) */
        }
        if (hiera_value_kind(f) == HIERA_STRING) {
            fprintf(problems, "%sthe key '%s' %s", ftell(problems) ? "\n" : "", key, hiera_value_string(f));
            continue;
        }
        forms[m++] = (key_form){hiera_value_string(hiera_value_array_get(f, 0)), hiera_value_array_get(f, 1)};
    }
    hiera_value_decref(all);
    qsort(forms, m, sizeof *forms, cmp_form);
    r->keys = xalloc((m ? m : 1) * sizeof *r->keys);
    r->keys_json = xalloc((m ? m : 1) * sizeof *r->keys_json);
    r->keys_json_len = xalloc((m ? m : 1) * sizeof *r->keys_json_len);
    for (size_t i = 0; i < m; i++) {
        r->keys[i] = (char *)forms[i].form;
        r->keys_json[i] = (char *)hiera_value_string(forms[i].json);
        r->keys_json_len[i] = hiera_value_string_length(forms[i].json);
    }
    free(forms);
    r->nkeys = m;
    fclose(problems);
    if (len)
        r->listing_msg = text;
    else
        free(text);
    r->answers = xalloc((m ? m : 1) * sizeof *r->answers);
    r->stride = 1;
}

/* (the strings are b->key_forms') */
static void node_keys_free(node_run *r)
{
    free(r->keys);
    free(r->keys_json);
    free(r->keys_json_len);
    free(r->answers);
    free(r->listing_msg);
}

/* Opens node n's context (in: released here). */
static void node_open(batch *b, const node_src *n, node_input *in, node_run *r)
{
    const batch_args *a = b->a;
    r->h = NULL;
    r->listing_msg = NULL;
    if (b->all_keys) {
        r->keys = r->keys_json = NULL;
        r->keys_json_len = NULL;
        r->nkeys = 0;
        r->answers = NULL;
        r->stride = 1;
    } else {
        r->keys = b->keys;
        r->keys_json = b->keys_json;
        r->keys_json_len = b->keys_json_len;
        r->nkeys = b->nkeys;
    }
    r->msg = in->msg;
    in->msg = NULL;
    if (r->msg) {
        node_input_free(in);
        return;
    }
    hiera_error err = {0};
    hiera_options o = {.size = sizeof o, .node = n->name, .facts = in->stored ? NULL : in->facts, .cache = b->cache,
                       .unsafe_fact_paths = a->unsafe_fact_paths, .diagnostics = print_diagnostic_once,
                       .trusted = in->trusted, .base_facts = in->stored ? in->facts : NULL,
                       .settings = a->settings, .env = a->env};
    r->h = hiera_new(&o, &err);
    node_input_free(in); /* the context keeps its own copies */
    if (!r->h)
        r->msg = dupstr(err.message ? err.message : "");
    hiera_error_clear(&err);
    if (r->h && b->all_keys)
        node_list_keys(b, r);
}

static void node_lookup(batch *b, node_run *r, size_t k)
{
    answer *an = &r->answers[k * r->stride];
    const char *key = r->keys[k];
    b->req.keys = &key;
    hiera_error err = {0};
    an->v = NULL;
    an->msg = NULL;
    if (hiera_lookup(r->h, &b->req, &an->v, &err) == HIERA_ERROR) {
        an->msg = err.message ? err.message : dupstr("");
        err.message = NULL;
    }
    hiera_error_clear(&err);
    b->lookups++;
    if (b->share)
        __atomic_store_n(&b->share->lookups, b->lookups, __ATOMIC_RELAXED);
}

/* Writes node n's answers (or the YAML document's entry) and lists its errors, then closes it. */
static void node_emit(batch *b, const node_src *n, const char *name_json, node_run *r)
{
    if (!r->h) {
        add_error(b, n->name, NULL, r->msg);
        free(r->msg);
        return;
    }
    if (r->listing_msg)
        add_error(b, n->name, LISTING_KEY, r->listing_msg);
    hiera_value *node_hash = NULL;
    if (b->rf == HIERA_RENDER_JSON)
        json_begin_node(b, name_json);
    else
        node_hash = hiera_value_new_hash();
    size_t printed = 0;
    for (size_t k = 0; k < r->nkeys; k++) {
        answer *an = &r->answers[k * r->stride];
        const char *key = r->keys[k];
        if (an->v) {
            if (node_hash) {
                hiera_value_hash_set(node_hash, key, an->v); /* steals the value */
                continue;
            }
            size_t len;
            bool once;
            hiera_error err = {0};
            const char *text = render_json_memo(b->cache, an->v, &len, &once, &err);
            hiera_value_decref(an->v);
            if (text) {
                json_node_value(printed++, r->keys_json[k], r->keys_json_len[k], text, len);
                if (once)
                    free((char *)text);
                continue;
            }
            add_error(b, n->name, key, err.message);
            hiera_error_clear(&err);
        } else if (an->msg) {
            add_error(b, n->name, key, an->msg);
            free(an->msg);
        }
    }
    if (node_hash)
        hiera_value_hash_set(b->doc, n->name, node_hash);
    else
        json_end_node(printed);
    hiera_free(r->h);
    if (b->all_keys)
        node_keys_free(r);
}

/* ------------------------------------------------------------------ the summary on stderr */

/* ".errors" back from the entries the worker processes wrote (json_error_entries), for the
 * summary. */
static void errors_from_entries(batch *b, const char *entries, size_t len)
{
    if (len < 1 || b->errors)
        return;
    char *text = xalloc(len + 2);
    text[0] = '{';
    memcpy(text + 1, entries + 1, len - 1);
    text[len] = '}';
    text[len + 1] = 0;
    hiera_error err = {0};
    b->errors = hiera_value_from_json(text, &err);
    hiera_error_clear(&err);
    free(text);
}

#define SUMMARY_MESSAGES 5
#define SUMMARY_MESSAGE_MAX 400

typedef struct {
    const char *msg;
    size_t nodes, lookups, listings;
    const char *node, *key; /* where it came first */
} distinct;

/* A message on one line of at most SUMMARY_MESSAGE_MAX bytes (more is cut, at a character). */
static void put_message(const char *msg)
{
    size_t n = 0;
    for (const char *p = msg; *p; p++, n++) {
        if (n >= SUMMARY_MESSAGE_MAX && ((unsigned char)*p & 0xC0) != 0x80) {
            fputs("...", stderr);
            return;
        }
        fputc(*p == '\n' ? ' ' : *p, stderr);
    }
}

/* How many nodes and lookups failed, and the first SUMMARY_MESSAGES distinct messages (in the
 * order of the nodes), each once with how many nodes or lookups it stands for: a data file that
 * does not parse fails every lookup that reads it with the same message. */
static void print_summary(const batch *b)
{
    const hiera_value *errors = b->errors;
    size_t nerr = hiera_value_hash_size(errors);
    if (!nerr)
        return;
    distinct *d = NULL;
    size_t nd = 0, cap = 0, failed_nodes = 0, failed_lookups = 0, failed_listings = 0;
    for (size_t i = 0; i < nerr; i++) {
        const char *node = hiera_value_string(hiera_value_hash_key(errors, i));
        const hiera_value *e = hiera_value_hash_value(errors, i);
        bool whole = hiera_value_kind(e) == HIERA_STRING;
        size_t n = whole ? 1 : hiera_value_hash_size(e);
        for (size_t k = 0; k < n; k++) {
            const char *key = whole ? NULL : hiera_value_string(hiera_value_hash_key(e, k));
            const char *msg = hiera_value_string(whole ? e : hiera_value_hash_value(e, k));
            if (!msg)
                continue;
            bool listing = key && !strcmp(key, LISTING_KEY); /* (no key but the node's listing) */
            if (whole)
                failed_nodes++;
            else if (listing)
                failed_listings++;
            else
                failed_lookups++;
            size_t j = 0;
            while (j < nd && strcmp(d[j].msg, msg) != 0)
                j++;
            if (j == nd) {
                if (nd == cap) {
                    cap = cap ? cap * 2 : 16;
                    distinct *nd2 = realloc(d, cap * sizeof *d);
                    if (!nd2) {
                        fputs("hiera batch: out of memory\n", stderr);
                        exit(1);
                    }
                    d = nd2;
                }
                d[nd++] = (distinct){msg, 0, 0, 0, node, listing ? NULL : key};
            }
            if (whole)
                d[j].nodes++;
            else if (listing)
                d[j].listings++;
            else
                d[j].lookups++;
        }
    }
    fprintf(stderr, "hiera batch: ");
    if (failed_nodes)
        fprintf(stderr, "%zu of %zu node%s could not be looked up", failed_nodes, b->nnodes, b->nnodes == 1 ? "" : "s");
    if (failed_listings)
        fprintf(stderr, "%s%zu of %zu node%s could not list all their keys", failed_nodes ? "; " : "", failed_listings,
                b->nnodes, b->nnodes == 1 ? "" : "s");
    if ((failed_nodes || failed_listings) && failed_lookups)
        fputs("; ", stderr);
    if (failed_lookups)
        fprintf(stderr, "%zu of %zu lookup%s failed", failed_lookups, b->lookups, b->lookups == 1 ? "" : "s");
    fprintf(stderr, " (%zu distinct message%s; \"%s\" in the output lists them all):\n", nd, nd == 1 ? "" : "s",
            ERRORS_KEY);
    for (size_t j = 0; j < nd && j < SUMMARY_MESSAGES; j++) {
        fputs("  ", stderr);
        if (d[j].nodes)
            fprintf(stderr, "%zu node%s", d[j].nodes, d[j].nodes == 1 ? "" : "s");
        if (d[j].listings)
            fprintf(stderr, "%s%zu key listing%s", d[j].nodes ? ", " : "", d[j].listings, d[j].listings == 1 ? "" : "s");
        if ((d[j].nodes || d[j].listings) && d[j].lookups)
            fputs(", ", stderr);
        if (d[j].lookups)
            fprintf(stderr, "%zu lookup%s", d[j].lookups, d[j].lookups == 1 ? "" : "s");
        fputs(" (first: ", stderr);
        put_message(d[j].node);
        if (d[j].key) {
            fputs(", key ", stderr);
            put_message(d[j].key);
        }
        fputs("): ", stderr);
        put_message(d[j].msg);
        fputc('\n', stderr);
    }
    if (nd > SUMMARY_MESSAGES)
        fprintf(stderr, "  ... and %zu more distinct message%s\n", nd - SUMMARY_MESSAGES,
                nd - SUMMARY_MESSAGES == 1 ? "" : "s");
    free(d);
}

/* ------------------------------------------------------------------ parallel runs */

/* fewer nodes than this per process are not worth a process of their own (each one reads the
 * data files again) */
#define MIN_NODES_PER_JOB 16

/* The nodes [lo, hi) with their output in this process (the sequential loop). */
static void run_nodes(batch *b, node_src *nodes, char **names_json, size_t lo, size_t hi)
{
    prefetch pf;
    prefetch_start(&pf, b->cache, b->a, b->src, nodes + lo, hi - lo);
    node_run runs[NODE_BLOCK];
    /* (with all_keys each node has its own keys and answers) */
    answer *answers = b->all_keys ? NULL : xalloc(NODE_BLOCK * (b->nkeys ? b->nkeys : 1) * sizeof *answers);
    for (size_t i0 = lo; i0 < hi; i0 += NODE_BLOCK) {
        size_t n = hi - i0 < NODE_BLOCK ? hi - i0 : NODE_BLOCK;
        for (size_t j = 0; j < n; j++) {
            node_input in;
            prefetch_take(&pf, i0 + j - lo, &in);
            node_open(b, &nodes[i0 + j], &in, &runs[j]);
            if (!b->all_keys) {
                /* (key by key, as they are looked up) */
                runs[j].answers = answers + j;
                runs[j].stride = n;
            }
        }
        /* (a node's own keys are sorted: the nodes of a block mostly meet the same key at once) */
        size_t nkeys = b->nkeys;
        for (size_t j = 0; j < n; j++)
            if (runs[j].h && runs[j].nkeys > nkeys)
                nkeys = runs[j].nkeys;
        for (size_t k = 0; k < nkeys; k++)
            for (size_t j = 0; j < n; j++)
                if (runs[j].h && k < runs[j].nkeys)
                    node_lookup(b, &runs[j], k);
        for (size_t j = 0; j < n; j++) {
            node_emit(b, &nodes[i0 + j], names_json[i0 + j], &runs[j]);
            b->done_nodes++;
            if (b->share)
                __atomic_store_n(&b->share->done_nodes, b->done_nodes, __ATOMIC_RELAXED);
            progress(b, false);
        }
    }
    json_out_flush();
    free(answers);
    prefetch_stop(&pf);
}

/* A file in memory for a worker's output (memfd, else an unlinked temporary file); -1 on failure. */
static int scratch_fd(void)
{
    int fd = memfd_create("hiera-batch", MFD_CLOEXEC);
    if (fd >= 0)
        return fd;
    FILE *t = tmpfile();
    if (!t)
        return -1;
    fd = dup(fileno(t));
    fclose(t);
    return fd;
}

/* Copies fd from its start to stdout, without its first `skip` bytes, through json_out's buffer
 * (a megabyte a write, as a single process writes; a failed write is json_out.err, which out_ok
 * reports); false on a read error. */
static bool copy_out(int fd, size_t skip)
{
    if (lseek(fd, 0, SEEK_SET) != 0)
        return false;
    json_out_flush();
    for (;;) {
        ssize_t n = read(fd, json_out.buf, sizeof json_out.buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        size_t off = skip < (size_t)n ? skip : (size_t)n;
        skip -= off;
        out_write(json_out.buf + off, (size_t)n - off);
    }
}

static off_t fd_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : 0;
}

/* The worker: nodes [lo, hi); node entries go to out_fd, each beginning with ",\n  ", and the
 * ".errors" entries to err_fd (json_error_entries). Never returns. */
static void worker(batch *b, node_src *nodes, char **names_json, size_t lo, size_t hi, int out_fd, int err_fd,
                   struct worker_share *share)
{
    if (dup2(out_fd, STDOUT_FILENO) < 0)
        _exit(3);
    b->share = share;
    b->progress = false;
    b->nodes_printed = 1; /* every node entry starts with a comma */
    run_nodes(b, nodes, names_json, lo, hi);
    FILE *ef = fdopen(err_fd, "w");
    if (!ef)
        _exit(3);
    json_error_entries(ef, b->errors);
    bool ok = out_ok() && fflush(ef) == 0 && !ferror(ef);
    __atomic_store_n(&share->finished, ok ? 1 : 0, __ATOMIC_RELEASE);
    _exit(ok ? 0 : 3);
}

/* JSON output over `jobs` worker processes, each taking a contiguous run of the sorted nodes; the
 * parent shows the progress and then prints the workers' outputs in order, so the document is
 * byte for byte the one a single process prints. Returns 0, or 1 when a worker failed (after
 * saying why). */
static int run_parallel(batch *b, node_src *nodes, char **names_json, size_t nnodes, size_t jobs)
{
    struct worker_share *share =
        mmap(NULL, jobs * sizeof *share, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (share == MAP_FAILED)
        return -1;
    memset(share, 0, jobs * sizeof *share);
    int *out_fd = xalloc(jobs * sizeof *out_fd), *err_fd = xalloc(jobs * sizeof *err_fd);
    pid_t *pid = xalloc(jobs * sizeof *pid);
    size_t started = 0;
    int rc = 0;
    bool setup_failed = false;
    fflush(stdout);
    fflush(stderr);
    for (; started < jobs; started++) {
        size_t w = started, lo = nnodes * w / jobs, hi = nnodes * (w + 1) / jobs;
        out_fd[w] = scratch_fd();
        err_fd[w] = out_fd[w] >= 0 ? scratch_fd() : -1;
        pid[w] = err_fd[w] >= 0 ? fork() : -1;
        if (pid[w] == 0)
            worker(b, nodes, names_json, lo, hi, out_fd[w], err_fd[w], &share[w]);
        if (pid[w] < 0) {
            /* the workers started so far are waited for and their work dropped */
            if (out_fd[w] >= 0)
                close(out_fd[w]);
            if (err_fd[w] >= 0)
                close(err_fd[w]);
            setup_failed = true;
            break;
        }
    }
    /* wait, showing the progress */
    size_t running = started;
    while (running) {
        int status;
        pid_t done = waitpid(-1, &status, b->progress ? WNOHANG : 0);
        if (done < 0 && errno == EINTR)
            continue;
        if (done < 0)
            break;
        if (done == 0) {
            size_t d = 0, l = 0, e = 0;
            for (size_t w = 0; w < started; w++) {
                d += __atomic_load_n(&share[w].done_nodes, __ATOMIC_RELAXED);
                l += __atomic_load_n(&share[w].lookups, __ATOMIC_RELAXED);
                e += __atomic_load_n(&share[w].nerrors, __ATOMIC_RELAXED);
            }
            b->done_nodes = d;
            b->lookups = l;
            b->nerrors = e;
            progress(b, false);
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
            continue;
        }
        for (size_t w = 0; w < started; w++) {
            if (pid[w] != done)
                continue;
            pid[w] = 0;
            running--;
            if (WIFSIGNALED(status)) {
                fprintf(stderr, "Error: Could not run: a worker process was killed by signal %d\n", WTERMSIG(status));
                rc = 1;
            } else if (WEXITSTATUS(status) != 0 || !__atomic_load_n(&share[w].finished, __ATOMIC_ACQUIRE)) {
                fprintf(stderr, "Error: Could not run: a worker process failed (status %d)\n", WEXITSTATUS(status));
                rc = 1;
            }
        }
    }
    b->done_nodes = b->lookups = b->nerrors = 0;
    if (setup_failed) {
        rc = -1;
        goto out;
    }
    for (size_t w = 0; w < started; w++) {
        b->done_nodes += share[w].done_nodes;
        b->lookups += share[w].lookups;
        b->nerrors += share[w].nerrors;
    }
    progress(b, true);
    if (rc == 0) {
        /* the node entries, then ".errors", as one process would have printed them */
        for (size_t w = 0; w < started && rc == 0; w++) {
            if (fd_size(out_fd[w]) <= 0)
                continue;
            if (!b->nodes_printed)
                fputc('{', stdout); /* "{\n  " where the first entry has ",\n  " */
            if (!copy_out(out_fd[w], b->nodes_printed ? 0 : 1))
                rc = 1;
            b->nodes_printed = 1;
        }
        char *errs = NULL;
        size_t elen = 0;
        FILE *mem = open_memstream(&errs, &elen);
        for (size_t w = 0; mem && w < started && rc == 0; w++) {
            int fd = dup(err_fd[w]);
            FILE *ef = fd >= 0 ? fdopen(fd, "r") : NULL;
            if (!ef || fseek(ef, 0, SEEK_SET) != 0) {
                rc = 1;
            } else {
                char buf[1 << 14];
                size_t n;
                while ((n = fread(buf, 1, sizeof buf, ef)) > 0)
                    fwrite(buf, 1, n, mem);
                if (ferror(ef))
                    rc = 1;
            }
            if (ef)
                fclose(ef);
            else if (fd >= 0)
                close(fd);
        }
        if (!mem) {
            rc = 1;
        } else {
            fclose(mem);
            if (rc == 0) {
                json_print_error_entries(b, errs, elen);
                errors_from_entries(b, errs, elen);
            }
            free(errs);
        }
        if (rc)
            fprintf(stderr, "Error: Could not run: cannot read a worker's output: %s\n", strerror(errno));
    }
out:
    for (size_t w = 0; w < started; w++) {
        close(out_fd[w]);
        close(err_fd[w]);
    }
    free(out_fd);
    free(err_fd);
    free(pid);
    munmap(share, jobs * sizeof *share);
    return rc;
}

static int run(batch *b, node_src *nodes, size_t nnodes)
{
    /* every name must be writable as JSON before anything is printed */
    char **names_json = xalloc((nnodes ? nnodes : 1) * sizeof *names_json);
    size_t ok = 0;
    int rc = 0;
    for (; ok < nnodes; ok++) {
        names_json[ok] = json_string(nodes[ok].name);
        if (!names_json[ok]) {
            rc = fail("the node name '%s' is not valid UTF-8", nodes[ok].name);
            goto out;
        }
    }
    b->nnodes = nnodes;
    /* --jobs N is obeyed (at most one process per node); the default keeps to what pays */
    size_t cap = b->jobs_given ? nnodes : nnodes / MIN_NODES_PER_JOB;
    size_t jobs = b->jobs < cap ? b->jobs : cap;
    if (b->rf == HIERA_RENDER_JSON && jobs > 1) {
        int r = run_parallel(b, nodes, names_json, nnodes, jobs);
        if (r >= 0) {
            if (r == 0)
                fputs(b->nodes_printed ? "\n}\n" : "{}\n", stdout);
            rc = r;
            goto out;
        }
        /* no worker could be started: do it here */
    }
    if (b->rf == HIERA_RENDER_YAML)
        b->doc = hiera_value_new_hash();
    run_nodes(b, nodes, names_json, 0, nnodes);
    progress(b, true);
    if (b->rf == HIERA_RENDER_JSON) {
        json_print_errors(b);
        fputs(b->nodes_printed ? "\n}\n" : "{}\n", stdout);
    } else if (yaml_output(b)) {
        rc = 1;
    }
out:
    for (size_t i = 0; i < ok; i++)
        free(names_json[i]);
    free(names_json);
    return rc;
}

#define MAX_JOBS 64
#define MAX_JOBS_TEXT "64"

/* One worker per CPU this process may run on, at most 8. */
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

int batch_main(int argc, char **argv)
{
    batch_args a = {0};
    strvec keys = {0}, keys_json = {0};
    node_src *nodes = NULL;
    size_t nnodes = 0;
    hiera_value *merge = NULL, *dflt = NULL;
    batch b = {0};
    int rc = 1;
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    cli_parsed p;
    hiera_settings *settings = NULL;
    hiera_environment *env = NULL;
    if (cli_parse("hiera batch", argc, argv, BATCH_OPTIONS, sizeof BATCH_OPTIONS / sizeof *BATCH_OPTIONS, &a, BATCH_USAGE, &p) ||
        cli_refuse_settings("hiera batch", &p))
        goto out;
    /* Puppet's settings and the environment, once for every node */
    settings = cli_settings(&p);
    if (!settings)
        goto out;
    env = cli_environment(settings);
    if (!env)
        goto out;
    a.settings = settings;
    a.env = env;
    if (build_merge(&a, &merge))
        goto out;
    const char *format = a.render_as ? a.render_as : "json";
    if (!strcasecmp(format, "json") || !strcasecmp(format, "pson")) {
        b.rf = HIERA_RENDER_JSON;
    } else if (!strcasecmp(format, "yaml")) {
        b.rf = HIERA_RENDER_YAML;
    } else {
        fail("Unknown rendering format '%s' (hiera batch renders json or yaml)", format);
        goto out;
    }
    bool from_pdb = cli_pdb_wanted(&a.pdb);
    if (a.facts && a.facts_dir) {
        fail("%s", "Give either --facts or --facts-dir, not both");
        goto out;
    }
    if (from_pdb && (a.facts || a.facts_dir)) {
        fail("%s", "Give either facts files (--facts-dir, --facts) or PuppetDB (--from-puppetdb, --puppetdb, --nodes-query), not both");
        goto out;
    }
    if (!a.facts && !a.facts_dir && !from_pdb) {
        fail("%s", "No facts given: use --facts-dir DIR (one file per node), --facts FILE, or PuppetDB (--from-puppetdb, --puppetdb URL)");
        goto out;
    }
    if (a.node && (a.facts_dir || from_pdb)) {
        fail("%s", "--node goes with --facts; with --facts-dir the node names are the file names, with PuppetDB its certnames");
        goto out;
    }
    if (a.trusted && from_pdb) {
        fail("%s", "--trusted goes with --facts (one node); with PuppetDB give --trusted-dir DIR (DIR/NAME.yaml for node NAME), or none: PuppetDB keeps each node's trusted data");
        goto out;
    }
    if (a.trusted && a.facts_dir) {
        fail("%s", "--trusted goes with --facts (one node); with --facts-dir give --trusted-dir DIR (DIR/NAME.yaml for node NAME)");
        goto out;
    }
    if (a.trusted && a.trusted_dir) {
        fail("%s", "Give either --trusted or --trusted-dir, not both");
        goto out;
    }
    if (a.trusted_dir) {
        struct stat st;
        int sr = stat(a.trusted_dir, &st);
        if (sr != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "Error: Could not run: cannot read the trusted data folder %s: %s\n", a.trusted_dir,
                    sr != 0 ? strerror(errno) : "not a folder");
            goto out;
        }
    }
    if (a.keys_file && read_keys_file(a.keys_file, &keys))
        goto out;
    for (size_t i = 0; i < p.nargs; i++)
        sv_push(&keys, dupstr(p.args[i]));
    dedupe_keys(&keys);
    /* no keys at all: each node's own, every key it can see */
    b.all_keys = !a.keys_file && p.nargs == 0;
    if (keys.n == 0 && !b.all_keys) {
        fail("%s", "No keys were given to lookup.");
        goto out;
    }
    for (size_t i = 0; i < keys.n; i++) {
        char *kj = json_string(keys.v[i]);
        if (!kj) {
            fail("the key '%s' is not valid UTF-8", keys.v[i]);
            goto out;
        }
        sv_push(&keys_json, kj);
    }
    if (from_pdb) {
        if (list_puppetdb(&a, &b.src, &nodes, &nnodes))
            goto out;
    } else if (a.facts_dir) {
        if (list_facts_dir(a.facts_dir, &nodes, &nnodes))
            goto out;
    } else {
        nodes = xalloc(sizeof *nodes);
        nodes[0] = (node_src){single_node_name(&a), dupstr(a.facts), NULL};
        nnodes = 1;
        if (nodes[0].name[0] == '.' || nodes[0].name[0] == 0) {
            fail("the node name '%s' is reserved (names starting with '.' and the empty name)", nodes[0].name);
            goto out;
        }
    }
    if (a.default_value)
        dflt = hiera_value_new_string(a.default_value);

    /* what Puppet does as it sets up a node's scope, done once: the environment's config_version
     * command, then every setting converted */
    hiera_error cverr = {0};
    if (!hiera_environment_run_config_version(env, NULL, &cverr) || !hiera_environment_check(env, &cverr)) {
        fail("%s", cverr.message ? cverr.message : "");
        hiera_error_clear(&cverr);
        goto out;
    }

    b.jobs = default_jobs();
    if (a.jobs) {
        char *end;
        errno = 0;
        long j = strtol(a.jobs, &end, 10);
        if (errno || end == a.jobs || *end || j < 1 || j > MAX_JOBS) {
            fail("--jobs takes a number of processes from 1 to " MAX_JOBS_TEXT ", not '%s'", a.jobs);
            goto out;
        }
        b.jobs = (size_t)j;
        b.jobs_given = true;
    }
    b.a = &a;
    b.cache = cli_cache();
    hiera_cache_freeze(b.cache); /* one run over one tree: files are read and listed once */
    hiera_cache_share_facts_strings(b.cache); /* (facts are read by one thread at a time) */
    b.keys = keys.v;
    b.keys_json = keys_json.v;
    b.keys_json_len = xalloc(keys_json.n * sizeof *b.keys_json_len);
    for (size_t i = 0; i < keys_json.n; i++)
        b.keys_json_len[i] = strlen(keys_json.v[i]);
    b.nkeys = keys.n;
    b.req = (hiera_request){.size = sizeof b.req, .nkeys = 1, .merge = merge, .default_value = dflt, .type = a.type};
    b.progress = isatty(STDERR_FILENO) != 0;
    clock_gettime(CLOCK_MONOTONIC, &b.last_progress);
    if (run(&b, nodes, nnodes) == 0) {
        rc = b.nerrors ? 2 : 0;
        fflush(stdout); /* the document first, then the summary after it (a terminal shows both) */
        if (rc == 2)
            print_summary(&b);
    }
out:
    render_memo_clear();
    hiera_value_decref(b.doc);
    hiera_value_decref(b.errors);
    hiera_value_decref(b.key_forms);
#if FREE_ON_EXIT
    hiera_cache_free(b.cache);
#else
    /* the process ends: its memory goes back at once, where freeing every file, compiled
     * option and remembered merge one by one was 4% of a fleet run (b.cache stays reachable) */
    exit_cache = b.cache;
#endif
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    hiera_facts_source_free(b.src);
    free_nodes(nodes, nnodes);
    sv_free(&keys);
    sv_free(&keys_json);
    free(b.keys_json_len);
    hiera_environment_free(env);
    hiera_settings_free(settings);
    cli_parsed_free(&p);
    if (!out_ok()) {
        fprintf(stderr, "Error: Could not run: cannot write the output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
