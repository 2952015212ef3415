/* serve_cmd.c - `hiera serve`: the command line of the lookup service (src/serve/). */
#include "cli/common.h"
#include "cli/serve_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/edit_effects.h"
#include "cli/facts_opts.h"
#include "formats/diskcache.h"
#include "serve/serve.h"

static const char *SERVE_USAGE =
    "usage: hiera serve [--codedir DIR] [--confdir DIR] [--environmentpath DIR] [--hiera_config FILE]\n"
    "                   [--environment ENV] [--facts-dir DIR] [--listen [ADDR:]PORT] [--threads N]\n"
    "                   [--tls-cert FILE --tls-key FILE [--tls-ca FILE] [--admin NAME,...]]\n"
    "                   [--token-file FILE] [--access-log FILE|-] [--max-body BYTES]\n"
    "                   [--max-connections N] [--timeout SECONDS] [--request-time SECONDS]\n"
    "                   [--max-memory SIZE] [--no-watch] [--unsafe-fact-paths]\n"
    "                   [--from-puppetdb | --puppetdb URL|FILE] [--nodes-query QUERY]\n"
    "                   [--include-inactive] [--puppetdb-refresh SECONDS]\n"
    "                   [--allow-edits [--audit-log FILE] [--edits-commit]] ...\n"
    "\n"
    "Answers lookups over HTTP (JSON API under /v1, a web page at /). Each environment is read when\n"
    "first asked for (identical files in several environments are parsed once) and read again in\n"
    "the background when its files change (inotify: only the paths that changed; and on SIGHUP);\n"
    "a change that breaks a hiera.yaml or data file is refused and the last good build goes on\n"
    "serving (/healthz says \"degraded\"). SIGTERM stops accepting, lets requests in flight finish,\n"
    "and exits.\n"
    "Puppet's settings are read as hiera lookup reads them: puppet.conf in the confdir (the installed\n"
    "Puppet's when --confdir is not given), the folders given here over it, each environment's\n"
    "environment.conf (its modulepath); see hiera lookup --help.\n"
    "\n"
    "  --listen [ADDR:]PORT     where to listen (default 127.0.0.1:8150; port 0: any free port)\n"
    "  --facts-dir DIR          the nodes: one facts file per node (NAME.yaml, NAME.yml, NAME.json)\n"
    "  --environment ENV        the environment of requests that name none (default production)\n"
    "  --threads N              server threads (default: one per CPU)\n"
    "  --tls-cert, --tls-key    serve HTTPS with this certificate and key (PEM)\n"
    "  --tls-ca FILE            ask for client certificates and verify them against this CA (Puppet's\n"
    "                           CA works): a node's certificate reads only that node's answers\n"
    "  --admin NAME,...         certificate names that may read every node\n"
    "  --token-file FILE        a bearer token (one line, 16+ characters) that may read every node\n"
    "  --access-log FILE|-      one JSON line per request (- for stderr)\n"
    "  --max-body BYTES         largest request body (default 1048576)\n"
    "  --max-connections N      connections at once (default 4096)\n"
    "  --timeout SECONDS        a connection whose request is not whole this long after it opened\n"
    "                           or after its last answer is closed, idle or slow (default 30)\n"
    "  --request-time SECONDS   work a batch request may take (default 60)\n"
    "  --max-memory SIZE        keep at most this much of parsed environments (N, NK, NM, NG):\n"
    "                           those asked least recently are dropped, and read again (from the\n"
    "                           disk cache, HIERA_CACHE_DIR) when asked (default: no bound)\n"
    "  --no-watch               do not watch the files (SIGHUP still reloads)\n"
    "  --allow-edits            admins (--admin certificates, the --token-file token) may change data\n"
    "                           (POST /v1/edit and the page's Edit): one key of one file at a time,\n"
    "                           byte for byte where it is, with a preview of the diff, the nodes whose\n"
    "                           answers change and hiera check's new findings (see hiera set --help)\n"
    "  --audit-log FILE         one JSON line per saved edit: time, who, environment, file, key,\n"
    "                           digests before and after, old and new values (not secrets)\n"
    "  --edits-commit           commit each saved edit in the git work tree holding its file, with the\n"
    "                           editor as author and the key in the message\n"
    "  --puppetdb-refresh SECONDS  fetch PuppetDB's nodes and facts again this often (default 300;\n"
    "                           0: on SIGHUP only); a fetch that fails keeps the facts fetched before\n"
    "Without --token-file and --tls-ca anyone who reaches the port reads every node, with secrets\n"
    "(Sensitive values, eyaml blocks) redacted; with either, callers must authenticate.\n"
    "The nodes may come from PuppetDB instead of --facts-dir, with the facts `hiera lookup --node`\n"
    "takes from there:\n";

static bool number(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v > max)
        return false;
    *out = v;
    return true;
}

/* PuppetDB's nodes for the server (serve_options.puppetdb): listed, then read a page at a time */
static bool fetch_nodes(void *data, hv *facts, hv *errors, char **why)
{
    hiera_facts_source *src = data;
    hiera_error err = {0};
    hiera_value *list = hiera_facts_source_nodes(src, &err);
    if (!list) {
        *why = err.message ? err.message : strdup("cannot list the nodes");
        err.message = NULL;
        hiera_error_clear(&err);
        return false;
    }
    size_t n = hiera_value_array_size(list);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names) {
        fputs("hiera: out of memory\n", stderr);
        abort();
    }
    for (size_t i = 0; i < n; i++)
        names[i] = hiera_value_string(hiera_value_array_get(list, i));
    hiera_facts_reader *r = hiera_facts_reader_new(src, names, n, NULL);
    for (size_t i = 0; i < n; i++) {
        hiera_node_facts nf;
        hiera_status st;
        hiera_facts_reader_next(r, &st, &nf, &err);
        if (st == HIERA_OK) {
            hv_hash_sets(facts, names[i], (hv *)nf.base);
            nf.base = NULL;
        } else {
            hv_hash_sets(errors, names[i], hv_str(err.message ? err.message : "no facts"));
        }
        hiera_node_facts_clear(&nf);
        hiera_error_clear(&err);
    }
    hiera_facts_reader_free(r);
    free(names);
    hiera_value_decref(list);
    return true;
}

/* PuppetDB's warnings (a server failed, the next one is asked) in the server's log */
static void pdb_warning(const hiera_diagnostic *d, void *data)
{
    (void)data;
    fprintf(stderr, "hiera serve: warning: %s\n", d->message);
}

/* ------------------------------------------------------------------ edits */

typedef struct {
    const serve_options *o;
    hiera_settings *settings;    /* Puppet's, as the server was started with */
    char *confdir, *hiera_config;
    const char **node_args;      /* what gives hiera diff the served nodes */
    size_t nnode_args;
} edit_hooks;

static hiera_value *edit_effects_hook(void *data, const char *environment, const char *file, const char *text, size_t len)
{
    edit_hooks *eh = data;
    hiera_error err = {0};
    hiera_environment *env = hiera_environment_load(eh->settings, environment, &err);
    hiera_error_clear(&err);
    effects_request er = {.file = file, .new_text = text, .new_len = len, .codedir = eh->o->codedir,
                          .environmentpath = eh->o->environmentpath, .environment = environment,
                          .env_dir = env ? hiera_environment_dir(env) : NULL, .confdir = eh->confdir,
                          .hiera_config = eh->hiera_config, .node_args = eh->node_args, .nnode_args = eh->nnode_args,
                          .facts_dir = eh->o->facts_dir, .impact_json = true, .check = true};
    effects fx;
    edit_effects(&er, &fx);
    hiera_environment_free(env);
    hiera_value *out = hiera_value_new_hash();
    hiera_value *im = fx.impact ? hiera_value_from_json(fx.impact, NULL) : NULL;
    hiera_value_hash_set(out, "impact", im ? im : hiera_value_undef());
    if (fx.impact_note)
        hiera_value_hash_set(out, "impact_note", hiera_value_new_string(fx.impact_note));
    hiera_value_hash_set(out, "findings", fx.findings ? hiera_value_incref(fx.findings) : hiera_value_new_array());
    if (fx.check_note)
        hiera_value_hash_set(out, "check_note", hiera_value_new_string(fx.check_note));
    effects_free(&fx);
    return out;
}

static bool edit_commit_hook(void *data, const char *file, const char *author, const char *message, char **note)
{
    (void)data;
    return edit_git_commit(file, author, message, note);
}

int serve_main(int argc, char **argv)
{
    serve_options o = {0};
    cli_pdb_args pa = {0};
    cli_puppet_settings_args psa = {0};
    o.puppetdb_refresh = 300;
    o.watch = true;
    o.max_body = 1 << 20;
    o.max_connections = 4096;
    o.timeout = 30;
    o.request_time = 60;
    bool allow_edits = false, edits_commit = false;
    const char *audit_log = NULL;
    static const struct {
        const char *name;
        size_t off;
    } strings[] = {
        {"codedir", offsetof(serve_options, codedir)},
        {"confdir", offsetof(serve_options, confdir)},
        {"environmentpath", offsetof(serve_options, environmentpath)},
        {"hiera_config", offsetof(serve_options, hiera_config)},
        {"environment", offsetof(serve_options, environment)},
        {"facts-dir", offsetof(serve_options, facts_dir)},
        {"listen", offsetof(serve_options, listen)},
        {"tls-cert", offsetof(serve_options, tls_cert)},
        {"tls-key", offsetof(serve_options, tls_key)},
        {"tls-ca", offsetof(serve_options, tls_ca)},
        {"admin", offsetof(serve_options, admins)},
        {"token-file", offsetof(serve_options, token_file)},
        {"access-log", offsetof(serve_options, access_log)},
    };
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            fputs(SERVE_USAGE, stdout);
            fputs(CLI_PDB_USAGE, stdout);
            return 0;
        }
        int pr = cli_pdb_parse_arg(&pa, argc, argv, &i);
        if (pr == 0)
            pr = cli_puppet_settings_parse_arg(&psa, argc, argv, &i);
        if (pr < 0)
            return 2;
        if (pr > 0)
            continue;
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "Error: hiera serve: unexpected argument '%s'\n%s", arg, SERVE_USAGE);
            return 2;
        }
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        if (nlen == 8 && !strncmp(name, "no-watch", 8)) {
            o.watch = false;
            continue;
        }
        if (nlen == 11 && !strncmp(name, "allow-edits", 11)) {
            allow_edits = true;
            continue;
        }
        if (nlen == 12 && !strncmp(name, "edits-commit", 12)) {
            edits_commit = true;
            continue;
        }
        if (nlen == 9 && !strncmp(name, "audit-log", 9)) {
            audit_log = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!audit_log) {
                fprintf(stderr, "Error: hiera serve: --audit-log needs a file\n");
                return 2;
            }
            continue;
        }
        if (nlen == 17 && (!strncmp(name, "unsafe-fact-paths", 17) || !strncmp(name, "unsafe_fact_paths", 17))) {
            o.unsafe_fact_paths = true;
            continue;
        }
        const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (nlen == 10 && !strncmp(name, "max-memory", 10)) {
            if (!val || !diskcache_parse_size(val, &o.max_memory)) {
                fprintf(stderr, "Error: hiera serve: --max-memory needs a size (bytes, or a number followed by K, M or G)\n");
                return 2;
            }
            continue;
        }
        bool known = false;
        for (size_t f = 0; f < sizeof strings / sizeof *strings; f++) {
            if (strlen(strings[f].name) != nlen || strncmp(strings[f].name, name, nlen) != 0)
                continue;
            known = true;
            if (!val) {
                fprintf(stderr, "Error: hiera serve: --%s needs a value\n", strings[f].name);
                return 2;
            }
            const char **slot = (const char **)((char *)&o + strings[f].off);
            if (!strcmp(strings[f].name, "admin") && *slot) {
                /* --admin may be given several times */
                size_t n = strlen(*slot) + strlen(val) + 2;
                char *joined = malloc(n);
                snprintf(joined, n, "%s,%s", *slot, val);
                *slot = joined;
            } else {
                *slot = val;
            }
        }
        if (known)
            continue;
        unsigned long v;
        struct {
            const char *name;
            unsigned long max;
        } nums[] = {{"threads", 256}, {"max-body", 1UL << 30}, {"max-connections", 1000000}, {"timeout", 86400},
                    {"request-time", 86400}, {"puppetdb-refresh", 86400 * 7}};
        size_t which = 6;
        for (size_t f = 0; f < 6; f++)
            if (strlen(nums[f].name) == nlen && !strncmp(nums[f].name, name, nlen))
                which = f;
        if (which == 6) {
            fprintf(stderr, "Error: hiera serve: unknown option '%.*s'\n%s", (int)nlen + 2, arg, SERVE_USAGE);
            return 2;
        }
        if (!val || !number(val, nums[which].max, &v)) {
            fprintf(stderr, "Error: hiera serve: --%s needs a number up to %lu\n", nums[which].name, nums[which].max);
            return 2;
        }
        switch (which) {
        case 0: o.threads = (unsigned)v; break;
        case 1: o.max_body = v; break;
        case 2: o.max_connections = (unsigned)v; break;
        case 3: o.timeout = (unsigned)v; break;
        case 4: o.request_time = (unsigned)v; break;
        default: o.puppetdb_refresh = (unsigned)v; break;
        }
    }
    /* the folders not given are Puppet's settings' (puppet.conf in the confdir, then Puppet's
     * defaults), as hiera lookup finds them; the watcher watches them */
    hiera_setting cli[4 + CLI_PUPPET_SETTINGS_MAX];
    size_t ncli = 0;
    if (o.confdir)
        cli[ncli++] = (hiera_setting){"confdir", o.confdir};
    if (o.codedir)
        cli[ncli++] = (hiera_setting){"codedir", o.codedir};
    if (o.environmentpath)
        cli[ncli++] = (hiera_setting){"environmentpath", o.environmentpath};
    if (o.hiera_config)
        cli[ncli++] = (hiera_setting){"hiera_config", o.hiera_config};
    ncli += cli_puppet_settings_list(&psa, cli + ncli); /* (PuppetDB's client: ssldir, certname...) */
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = ncli;
    so.diagnostics = cli_print_diagnostic;
    hiera_error err = {0};
    hiera_settings *settings = hiera_settings_load(&so, &err);
    if (!settings) {
        fprintf(stderr, "Error: Could not initialize global default settings: %s\n", err.message ? err.message : "");
        hiera_error_clear(&err);
        return 1;
    }
    char *codedir = NULL, *envpath = NULL;
    if (!o.codedir)
        o.codedir = codedir = hiera_settings_get(settings, "codedir", NULL);
    if (!o.environmentpath)
        o.environmentpath = envpath = hiera_settings_get(settings, "environmentpath", NULL);
    hiera_facts_source *src = NULL;
    struct serve_nodes nodes = {fetch_nodes, NULL, NULL};
    if (cli_pdb_wanted(&pa)) {
        if (o.facts_dir) {
            fprintf(stderr, "Error: hiera serve: give either --facts-dir or PuppetDB (--from-puppetdb, --puppetdb), not both\n");
            hiera_settings_free(settings);
            free(codedir);
            free(envpath);
            return 2;
        }
        src = cli_factsrc_open(NULL, &pa, settings, pdb_warning, NULL);
        if (!src) {
            hiera_settings_free(settings);
            free(codedir);
            free(envpath);
            return 2;
        }
        nodes.data = src;
        nodes.what = hiera_facts_source_describe(src);
        o.puppetdb = &nodes;
    }
    /* edits: the fleet of hiera diff is the served one */
    struct serve_edits edits = {audit_log, edits_commit, edit_effects_hook, edit_commit_hook, NULL};
    edit_hooks eh = {&o, settings, NULL, NULL, NULL, 0};
    const char *node_args[48];
    char *owned[CLI_PUPPET_SETTINGS_MAX] = {0};
    if ((audit_log || edits_commit) && !allow_edits) {
        fprintf(stderr, "Error: hiera serve: --audit-log and --edits-commit go with --allow-edits\n");
        hiera_settings_free(settings);
        hiera_facts_source_free(src);
        free(codedir);
        free(envpath);
        return 2;
    }
    if (allow_edits) {
        size_t n = 0;
        if (o.facts_dir) {
            node_args[n++] = "--facts-dir";
            node_args[n++] = o.facts_dir;
        } else if (src) {
            if (pa.from_puppetdb)
                node_args[n++] = "--from-puppetdb";
            const char *const pv[][2] = {{"--puppetdb", pa.puppetdb}, {"--nodes-query", pa.nodes_query}, {"--cert", pa.cert},
                                         {"--key", pa.key}, {"--cacert", pa.cacert}, {"--puppetdb-timeout", pa.timeout}};
            for (size_t i = 0; i < sizeof pv / sizeof *pv; i++)
                if (pv[i][1]) {
                    node_args[n++] = pv[i][0];
                    node_args[n++] = pv[i][1];
                }
            if (pa.include_inactive)
                node_args[n++] = "--include-inactive";
            hiera_setting ps[CLI_PUPPET_SETTINGS_MAX];
            size_t nps = cli_puppet_settings_list(&psa, ps);
            for (size_t i = 0; i < nps; i++)
                if (strcmp(ps[i].name, "confdir") && asprintf(&owned[i], "--%s=%s", ps[i].name, ps[i].value) >= 0)
                    node_args[n++] = owned[i];
        }
        if (o.unsafe_fact_paths)
            node_args[n++] = "--unsafe-fact-paths";
        eh.node_args = n && (o.facts_dir || src) ? node_args : NULL;
        eh.nnode_args = eh.node_args ? n : 0;
        eh.confdir = hiera_settings_get(settings, "confdir", NULL);
        eh.hiera_config = hiera_settings_get(settings, "hiera_config", NULL);
        if (eh.hiera_config && o.codedir) {
            size_t cl = strlen(o.codedir);
            if (!strncmp(eh.hiera_config, o.codedir, cl) && !strcmp(eh.hiera_config + cl, "/hiera.yaml")) {
                free(eh.hiera_config);
                eh.hiera_config = NULL; /* (each tree's own) */
            }
        }
        edits.data = &eh;
        o.edits = &edits;
    }
    /* the disk cache (HIERA_CACHE_DIR; "off": none): an environment dropped beyond --max-memory
     * comes back from it, parses named by content */
    o.disk = cli_cache();
    int rc = serve_run(&o);
    cli_cache_release(o.disk);
    free(eh.confdir);
    free(eh.hiera_config);
    for (size_t i = 0; i < CLI_PUPPET_SETTINGS_MAX; i++)
        free(owned[i]);
    hiera_settings_free(settings);
    hiera_facts_source_free(src);
    free(codedir);
    free(envpath);
    return rc;
}
