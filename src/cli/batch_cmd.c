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
 * The lookups are the library's fleet run (hiera_fleet_run, src/fleet/fleet.c): its workers
 * (--jobs threads; each has its own cache, so every data file and hiera.yaml is parsed once per
 * thread) hand each node's answers, rendered, to a callback that writes them in node order.
 * A progress line is written (and rewritten with \r) on stderr only when stderr is a terminal;
 * when lookups failed, a summary is written on stderr at the end: how many nodes and lookups
 * failed, and the first few distinct messages, each with how often it came. */
#include "cli/batch_cmd.h"

#include "cli/common.h"
#include "cli/facts_opts.h"
#include "hiera_fleet.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    "--jobs: threads that share the nodes (default: one per CPU, at most 8, one per 16 nodes;\n"
    "JSON output only).\n"
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
    const char *keys_file;
    const char *merge, *prefix, *default_value, *type, *render_as, *jobs;
    bool sort_merged_arrays, merge_hash_arrays, verbose;
    const hiera_settings *settings;
    const hiera_environment *env;
    cli_facts_args f; /* (PuppetDB as the node set) */
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
    /* hiera's */
    {"keys-file", 0, CLI_VALUE, offsetof(batch_args, keys_file), NULL},
    {"jobs", 0, CLI_VALUE, offsetof(batch_args, jobs), NULL},
};


typedef struct {
    char **v;
    size_t n, cap;
} strvec;

typedef struct {
    hiera_cache *cache;
    hiera_facts_source *src; /* the facts folder or PuppetDB; NULL: one --facts file */
    hiera_render_format rf;
    const batch_args *a;
    bool all_keys; /* no keys given: each node's own, every key it can see (hiera_key_names) */
    char **names_json; /* each node's name as JSON, by index */
    /* output */
    size_t nodes_printed;
    hiera_value *doc;    /* YAML: the whole document, built as we go */
    hiera_value *errors; /* node -> message | {key -> message}; NULL until the first error */
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

/* The nodes of the facts source b->src (a folder's files, PuppetDB's nodes), sorted. PuppetDB's
 * names that start with '.' are left out (".errors" is the document's own). -1 after printing the
 * error. */
static int list_nodes(batch *b, strvec *out)
{
    hiera_error lerr = {0};
    hiera_value *list = hiera_facts_source_nodes(b->src, &lerr);
    if (!list) {
        fail("%s", lerr.message);
        hiera_error_clear(&lerr);
        return -1;
    }
    for (size_t i = 0; i < hiera_value_array_size(list); i++) {
        const char *name = hiera_value_string(hiera_value_array_get(list, i));
        if (name[0] == '.' || name[0] == 0) {
            fprintf(stderr, "Warning: PuppetDB's node '%s' is left out: hiera batch reserves names starting with '.'\n",
                    name);
            continue;
        }
        sv_push(out, dupstr(name));
    }
    hiera_value_decref(list);
    return 0;
}

/* The node name for --facts FILE: --node, else the file name without folder and extension. */
static char *single_node_name(const batch_args *a)
{
    if (a->f.node)
        return dupstr(a->f.node);
    const char *base = strrchr(a->f.facts, '/');
    base = base ? base + 1 : a->f.facts;
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
 * dropped when printed). */
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

/* ------------------------------------------------------------------ the answers */

/* The contexts' diagnostics: each distinct message once per run (every node meets the same
 * undefined variable or deprecated hiera.yaml); the fleet calls it one call at a time */
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

/* What kept a node's own keys from being all listed, one problem a line (malloc'ed) */
static char *listing_text(const batch *b, const hiera_value *errors)
{
    char *text = NULL;
    size_t len = 0;
    FILE *problems = open_memstream(&text, &len);
    if (!problems) {
        fputs("hiera batch: out of memory\n", stderr);
        exit(1);
    }
    const char *env = hiera_environment_name(b->a->env);
    for (size_t i = 0; i < hiera_value_array_size(errors); i++) {
        const hiera_value *e = hiera_value_array_get(errors, i);
        const hiera_value *key = hiera_value_hash_get(e, "key");
        if (key) {
            fprintf(problems, "%sthe key '%s' %s", ftell(problems) ? "\n" : "", hiera_value_string(key),
                    hiera_value_string(hiera_value_hash_get(e, "message")));
            continue;
        }
        char *line = cli_listing_problem(e, env);
        fprintf(problems, "%s%s", ftell(problems) ? "\n" : "", line);
        free(line);
    }
    fclose(problems);
    return text;
}

/* A node's answers (hiera_fleet_run calls it in node order, one call at a time): its JSON entry
 * written (or its hash of the YAML document made), its failures listed under ".errors". */
static int node_done(const hiera_fleet_node *n, void *data)
{
    batch *b = data;
    b->done_nodes++;
    if (n->error) {
        add_error(b, n->name, NULL, n->error);
        progress(b, false);
        return 0;
    }
    if (n->listing_errors) {
        char *text = listing_text(b, n->listing_errors);
        add_error(b, n->name, LISTING_KEY, text);
        free(text);
    }
    hiera_value *node_hash = NULL;
    if (b->rf == HIERA_RENDER_JSON)
        json_begin_node(b, b->names_json[n->index]);
    else
        node_hash = hiera_value_new_hash();
    size_t printed = 0;
    for (size_t k = 0; k < n->nanswers; k++) {
        const hiera_fleet_answer *an = &n->answers[k];
        if (an->status == HIERA_OK) {
            if (node_hash)
                hiera_value_hash_set(node_hash, an->key, hiera_value_incref(an->value)); /* (one thread: see below) */
            else
                json_node_value(printed++, an->key_json, an->key_json_length, an->text, an->text_length);
        } else if (an->status == HIERA_ERROR) {
            add_error(b, n->name, an->key, an->error);
        }
    }
    if (node_hash)
        hiera_value_hash_set(b->doc, n->name, node_hash);
    else
        json_end_node(printed);
    b->lookups += n->nanswers;
    progress(b, false);
    return 0;
}

/* ------------------------------------------------------------------ the summary on stderr */

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

/* ------------------------------------------------------------------ the run */

/* Builds that look for leaks free everything before exiting. */
#if defined(HIERA_FREE_ON_EXIT) || defined(__SANITIZE_ADDRESS__)
#define FREE_ON_EXIT 1
#else
#define FREE_ON_EXIT 0
static hiera_cache *exit_cache;
#endif

#define MAX_JOBS 64
#define MAX_JOBS_TEXT "64"

/* The lookups of every node, printed; 0, or 1 after printing why nothing could be. */
static int run(batch *b, const hiera_fleet_options *fo, const char *const *names, size_t nnodes)
{
    /* every name must be writable as JSON before anything is printed */
    b->names_json = xalloc((nnodes ? nnodes : 1) * sizeof *b->names_json);
    size_t ok = 0;
    int rc = 0;
    for (; ok < nnodes; ok++) {
        b->names_json[ok] = json_string(names[ok]);
        if (!b->names_json[ok]) {
            rc = fail("the node name '%s' is not valid UTF-8", names[ok]);
            goto out;
        }
    }
    b->nnodes = nnodes;
    if (b->rf == HIERA_RENDER_YAML)
        b->doc = hiera_value_new_hash();
    hiera_fleet_stats stats;
    hiera_error err = {0};
    if (hiera_fleet_run(fo, &stats, &err) != HIERA_OK) {
        rc = fail("%s", err.message ? err.message : "the lookups could not run");
        hiera_error_clear(&err);
        goto out;
    }
    json_out_flush();
    progress(b, true);
    if (b->rf == HIERA_RENDER_JSON) {
        json_print_errors(b);
        fputs(b->nodes_printed ? "\n}\n" : "{}\n", stdout);
    } else if (yaml_output(b)) {
        rc = 1;
    }
out:
    for (size_t i = 0; i < ok; i++)
        free(b->names_json[i]);
    free(b->names_json);
    b->names_json = NULL;
    return rc;
}

int batch_main(int argc, char **argv)
{
    batch_args a = {0};
    strvec keys = {0}, names = {0};
    hiera_value *merge = NULL, *dflt = NULL;
    batch b = {0};
    int rc = 1;
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    cli_parsed p;
    hiera_settings *settings = NULL;
    hiera_environment *env = NULL;
    if (cli_parse("hiera batch", argc, argv, BATCH_OPTIONS, sizeof BATCH_OPTIONS / sizeof *BATCH_OPTIONS,
                  &CLI_FACTS_FLEET, offsetof(batch_args, f), &a, BATCH_USAGE, &p) ||
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
    bool from_pdb = cli_pdb_wanted(&a.f.pdb);
    if (a.f.facts && a.f.facts_dir) {
        fail("%s", "Give either --facts or --facts-dir, not both");
        goto out;
    }
    if (from_pdb && (a.f.facts || a.f.facts_dir)) {
        fail("%s", "Give either facts files (--facts-dir, --facts) or PuppetDB (--from-puppetdb, --puppetdb, --nodes-query), not both");
        goto out;
    }
    if (!a.f.facts && !a.f.facts_dir && !from_pdb) {
        fail("%s", "No facts given: use --facts-dir DIR (one file per node), --facts FILE, or PuppetDB (--from-puppetdb, --puppetdb URL)");
        goto out;
    }
    if (a.f.node && (a.f.facts_dir || from_pdb)) {
        fail("%s", "--node goes with --facts; with --facts-dir the node names are the file names, with PuppetDB its certnames");
        goto out;
    }
    if (a.f.trusted && from_pdb) {
        fail("%s", "--trusted goes with --facts (one node); with PuppetDB give --trusted-dir DIR (DIR/NAME.yaml for node NAME), or none: PuppetDB keeps each node's trusted data");
        goto out;
    }
    if (a.f.trusted && a.f.facts_dir) {
        fail("%s", "--trusted goes with --facts (one node); with --facts-dir give --trusted-dir DIR (DIR/NAME.yaml for node NAME)");
        goto out;
    }
    if (a.f.trusted && a.f.trusted_dir) {
        fail("%s", "Give either --trusted or --trusted-dir, not both");
        goto out;
    }
    if (a.f.trusted_dir) {
        struct stat st;
        int sr = stat(a.f.trusted_dir, &st);
        if (sr != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "Error: Could not run: cannot read the trusted data folder %s: %s\n", a.f.trusted_dir,
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
    /* (a key JSON cannot hold fails the run before anything is printed: hiera_fleet_run says so) */
    hiera_fleet_input single = {0};
    if (from_pdb || a.f.facts_dir) {
        b.src = cli_factsrc_open(a.f.facts_dir, &a.f.pdb, settings, NULL, NULL);
        if (!b.src || list_nodes(&b, &names))
            goto out;
    } else {
        sv_push(&names, single_node_name(&a));
        if (names.v[0][0] == '.' || names.v[0][0] == 0) {
            fail("the node name '%s' is reserved (names starting with '.' and the empty name)", names.v[0]);
            goto out;
        }
        single = (hiera_fleet_input){.name = names.v[0], .facts_file = a.f.facts, .trusted_file = a.f.trusted};
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

    unsigned jobs = 0; /* (the fleet's default: one per CPU, at most 8, one per 16 nodes) */
    if (a.jobs) {
        char *end;
        errno = 0;
        long j = strtol(a.jobs, &end, 10);
        if (errno || end == a.jobs || *end || j < 1 || j > MAX_JOBS) {
            fail("--jobs takes a number of threads from 1 to " MAX_JOBS_TEXT ", not '%s'", a.jobs);
            goto out;
        }
        jobs = (unsigned)j;
    }
    if (b.rf == HIERA_RENDER_YAML)
        jobs = 1; /* (the document keeps the values: they must stay with the one cache) */
    b.a = &a;
    b.cache = cli_cache();
    hiera_options ctx = HIERA_OPTIONS_INIT;
    ctx.unsafe_fact_paths = a.f.unsafe_fact_paths;
    ctx.diagnostics = print_diagnostic_once;
    ctx.settings = settings;
    ctx.env = env;
    hiera_request req = HIERA_REQUEST_INIT;
    req.merge = merge;
    req.default_value = dflt;
    req.type = a.type;
    hiera_fleet_options fo = HIERA_FLEET_OPTIONS_INIT;
    fo.context = &ctx;
    fo.request = &req;
    fo.keys = b.all_keys ? NULL : (const char *const *)keys.v;
    fo.nkeys = b.all_keys ? 0 : keys.n;
    fo.source = b.src;
    fo.names = b.src ? (const char *const *)names.v : NULL;
    fo.nnames = b.src ? names.n : 0;
    fo.nodes = b.src ? NULL : &single;
    fo.nnodes = b.src ? 0 : 1;
    fo.trusted_dir = a.f.trusted_dir;
    fo.threads = jobs;
    fo.cache = b.cache;
    fo.render_json = b.rf == HIERA_RENDER_JSON;
    fo.ordered = true;
    fo.callback = node_done;
    fo.userdata = &b;
    b.progress = isatty(STDERR_FILENO) != 0;
    clock_gettime(CLOCK_MONOTONIC, &b.last_progress);
    if (run(&b, &fo, (const char *const *)names.v, names.n) == 0) {
        rc = b.nerrors ? 2 : 0;
        fflush(stdout); /* the document first, then the summary after it (a terminal shows both) */
        if (rc == 2)
            print_summary(&b);
    }
out:
    hiera_value_decref(b.doc);
    hiera_value_decref(b.errors);
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
    sv_free(&names);
    sv_free(&keys);
    hiera_environment_free(env);
    hiera_settings_free(settings);
    cli_parsed_free(&p);
    if (!out_ok()) {
        fprintf(stderr, "Error: Could not run: cannot write the output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
