/* lookup_cmd.c - `hiera lookup`: the `puppet lookup` command line over libhiera. Flags, output
 * and exit status follow lib/puppet/application/lookup.rb: the value rendered as yaml (default),
 * json or s; exit 0 when found (or a default applies), 1 when not found or on a lookup error
 * (nothing on stdout), 1 with "Error: Could not run: <message>" for other errors; with
 * --explain the explanation is printed and the status is 0 unless a non-lookup error occurs. */
#include "cli/common.h"
#include "cli/facts.h"
#include "cli/factsrc.h"
#include "cli/lookup_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUN_HELP "Run 'puppet lookup --help' for more details"

typedef struct {
    const char *node, *facts, *environment, *codedir, *confdir, *environmentpath, *hiera_config;
    const char *trusted, *vardir, *yamldir, *certname;
    /* where --node's facts come from (Puppet's settings of these names) and PuppetDB */
    cli_puppet_settings_args ps;
    cli_pdb_args pdb;
    const char *merge, *prefix, *default_value, *type, *render_as;
    bool unsafe_fact_paths, has_default, sort_merged_arrays, merge_hash_arrays, explain, explain_options, provenance;
    const char **keys;
    size_t nkeys;
} lookup_args;

static const char *LOOKUP_USAGE =
    "usage: hiera lookup [--help] [--type <TYPESTRING>] [--merge first|unique|hash|deep]\n"
    "                    [--knock-out-prefix <PREFIX-STRING>] [--sort-merged-arrays]\n"
    "                    [--merge-hash-arrays] [--explain] [--explain-options]\n"
    "                    [--environment <ENV>] [--default <VALUE>] [--node <NODE-NAME>]\n"
    "                    [--facts <FILE>] [--codedir <DIR>] [--confdir <DIR>]\n"
    "                    [--environmentpath <DIR>] [--hiera_config <FILE>]\n"
    "                    [--render-as s|json|yaml] [--provenance] [--unsafe-fact-paths]\n"
    "                    [--trusted <FILE>] [--vardir <DIR>] [--yamldir <DIR>] [--certname <NAME>]\n"
    "                    [--from-puppetdb | --puppetdb <URL|FILE>] [--cert <FILE> --key <FILE>]\n"
    "                    [--cacert <FILE>] [--puppetdb-timeout <SECONDS>] <keys>\n"
    "\n"
    "Looks up keys in Hiera 5 data exactly as `puppet lookup` does; the first key found wins.\n"
    "Exit status: 0 found (or default), 1 not found or error.\n"
    "--provenance prints the value with the layer, level, file and line each part came from\n"
    "(after the explanation when --explain is given too; as data with --render-as json|yaml).\n"
    "A location in hiera.yaml whose interpolation of facts adds a '..' segment, makes it absolute\n"
    "or adds glob characters to a glob is refused; --unsafe-fact-paths follows it as Puppet does.\n"
    "Facts: with --node, the node's facts from Puppet's YAML facts cache (<vardir>/yaml/facts/NODE.yaml,\n"
    "vardir /var/cache/puppet as root), or from PuppetDB where puppet lookup takes them from there\n"
    "(routes.yaml's lookup: facts: terminus or cache, facts_terminus = puppetdb, storeconfigs; PuppetDB\n"
    "as <confdir>/puppetdb.conf and Puppet's certificate say) or with --puppetdb URL|FILE or\n"
    "--from-puppetdb; then --facts FILE over them; without --node, the local machine's facts from\n"
    "`facter` (which must be installed), then --facts FILE over them.\n"
    "--trusted FILE (YAML or JSON) gives $trusted as an agent's certificate would: a hash with\n"
    "authenticated, certname and extensions (hostname and domain follow from certname). Without it,\n"
    "$trusted is the node's `trusted` fact when that is such a hash, else built from the clientcert fact.\n";

static int fail(const char *fmt, const char *arg)
{
    fputs("Error: Could not run: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

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

static int parse(int argc, char **argv, lookup_args *a)
{
    a->keys = calloc((size_t)argc + 1, sizeof *a->keys);
    bool options_done = false;
    static const struct {
        const char *name;
        size_t off;
    } value_flags[] = {
        {"node", offsetof(lookup_args, node)},
        {"facts", offsetof(lookup_args, facts)},
        {"environment", offsetof(lookup_args, environment)},
        {"codedir", offsetof(lookup_args, codedir)},
        {"confdir", offsetof(lookup_args, confdir)},
        {"environmentpath", offsetof(lookup_args, environmentpath)},
        {"hiera_config", offsetof(lookup_args, hiera_config)},
        {"trusted", offsetof(lookup_args, trusted)},
        {"vardir", offsetof(lookup_args, vardir)},
        {"yamldir", offsetof(lookup_args, yamldir)},
        {"certname", offsetof(lookup_args, certname)},
        {"ssldir", offsetof(lookup_args, ps.ssldir)},
        {"hostcert", offsetof(lookup_args, ps.hostcert)},
        {"hostprivkey", offsetof(lookup_args, ps.hostprivkey)},
        {"localcacert", offsetof(lookup_args, ps.localcacert)},
        {"hostcrl", offsetof(lookup_args, ps.hostcrl)},
        {"certificate_revocation", offsetof(lookup_args, ps.certificate_revocation)},
        {"facts_terminus", offsetof(lookup_args, ps.facts_terminus)},
        {"storeconfigs_backend", offsetof(lookup_args, ps.storeconfigs_backend)},
        {"route_file", offsetof(lookup_args, ps.route_file)},
        {"merge", offsetof(lookup_args, merge)},
        {"knock_out_prefix", offsetof(lookup_args, prefix)},
        {"type", offsetof(lookup_args, type)},
        {"render_as", offsetof(lookup_args, render_as)},
    };
    /* Puppet settings that take a value and do not matter here */
    static const char *ignored_value_flags[] = {"logdir", "rundir", "config", "basemodulepath",
                                                "modulepath", "server", "strict", "log_level"};
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || arg[1] != '-' || arg[2] == 0) {
            if (!options_done && strcmp(arg, "--") == 0) {
                options_done = true;
                continue;
            }
            a->keys[a->nkeys++] = arg;
            continue;
        }
        int pr = cli_pdb_parse_arg(&a->pdb, argc, argv, &i);
        if (pr < 0)
            return 1;
        if (pr > 0)
            continue;
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        bool matched = false;
        for (size_t f = 0; f < sizeof value_flags / sizeof *value_flags; f++) {
            if (!flag_is(name, nlen, value_flags[f].name))
                continue;
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                return fail("option '--%s' needs a value", value_flags[f].name), 1;
            *(const char **)((char *)a + value_flags[f].off) = val;
            matched = true;
        }
        if (matched)
            continue;
        if (flag_is(name, nlen, "default")) {
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val)
                return fail("option '--%s' needs a value", "default"), 1;
            a->default_value = val;
            a->has_default = true;
        } else if (flag_is(name, nlen, "sort_merged_arrays")) {
            a->sort_merged_arrays = true;
        } else if (flag_is(name, nlen, "merge_hash_arrays")) {
            a->merge_hash_arrays = true;
        } else if (flag_is(name, nlen, "explain")) {
            a->explain = true;
        } else if (flag_is(name, nlen, "unsafe_fact_paths")) {
            a->unsafe_fact_paths = true;
        } else if (flag_is(name, nlen, "explain_options")) {
            a->explain_options = true;
        } else if (flag_is(name, nlen, "provenance")) {
            a->provenance = true;
        } else if (flag_is(name, nlen, "storeconfigs") || flag_is(name, nlen, "no_storeconfigs")) {
            a->ps.storeconfigs = name[0] == 'n' ? "false" : "true";
        } else if (flag_is(name, nlen, "help")) {
            fputs(LOOKUP_USAGE, stdout);
            exit(0);
        } else if (flag_is(name, nlen, "compile") || flag_is(name, nlen, "debug") || flag_is(name, nlen, "verbose") ||
                   flag_is(name, nlen, "trace") || flag_is(name, nlen, "color")) {
            /* accepted for compatibility; no effect here */
        } else {
            bool known = false;
            for (size_t f = 0; f < sizeof ignored_value_flags / sizeof *ignored_value_flags; f++)
                if (flag_is(name, nlen, ignored_value_flags[f])) {
                    known = true;
                    if (!eq)
                        i++;
                }
            if (!known) {
                fprintf(stderr, "Error: Could not parse application options: invalid option: %s\n", arg);
                return 1;
            }
        }
    }
    return 0;
}

/* The module folders whose custom and external facts Facter is given for the local machine:
 * Puppet's defaults for the environment (its modules folder, then <codedir>/modules and
 * /usr/share/puppet/modules). malloc'ed. */
static char *facter_modulepath(const lookup_args *a)
{
    char *codedir;
    if (a->codedir) {
        codedir = strdup(a->codedir);
    } else if (geteuid() == 0) {
        codedir = strdup("/etc/puppet/code");
    } else {
        const char *home = getenv("HOME");
        size_t n = strlen(home ? home : "") + 32;
        codedir = malloc(n);
        if (codedir)
            snprintf(codedir, n, "%s/.puppetlabs/etc/code", home ? home : "");
    }
    if (!codedir)
        return NULL;
    const char *env = a->environment ? a->environment : "production";
    char *envpath = a->environmentpath ? strdup(a->environmentpath) : NULL;
    if (!envpath) {
        size_t n = strlen(codedir) + 16;
        envpath = malloc(n);
        if (envpath)
            snprintf(envpath, n, "%s/environments", codedir);
    }
    char *env_dir = NULL, *save = NULL;
    for (char *p = envpath ? strtok_r(envpath, ":", &save) : NULL; p && !env_dir; p = strtok_r(NULL, ":", &save)) {
        size_t n = strlen(p) + strlen(env) + 2;
        char *d = malloc(n);
        struct stat st;
        if (d && (snprintf(d, n, "%s/%s", p, env), stat(d, &st) == 0 && S_ISDIR(st.st_mode)))
            env_dir = d;
        else
            free(d);
    }
    char *mp = cli_default_modulepath(codedir, env_dir);
    free(env_dir);
    free(envpath);
    free(codedir);
    return mp;
}

static void print_rendered(const char *text)
{
    /* Ruby's puts: a newline unless the text already ends with one */
    fputs(text, stdout);
    size_t n = strlen(text);
    if (n == 0 || text[n - 1] != '\n')
        fputc('\n', stdout);
}

int lookup_main(int argc, char **argv)
{
    lookup_args a = {0};
    if (parse(argc, argv, &a)) {
        free(a.keys);
        return 1;
    }
    int rc = 1;
    hiera_value *trusted = NULL, *merge = NULL, *dflt = NULL, *value = NULL;
    cli_node_facts nf = {0};
    hiera *h = NULL;
    hiera_result *result = NULL;
    hiera_cache *cache = NULL;
    hiera_error err = {0};

    if ((a.sort_merged_arrays || a.merge_hash_arrays || a.prefix) && (!a.merge || strcmp(a.merge, "deep") != 0)) {
        fail("The options --knock-out-prefix, --sort-merged-arrays, and --merge-hash-arrays are only available with '--merge deep'\n%s",
             RUN_HELP);
        goto out;
    }
    if (a.merge) {
        if (strcmp(a.merge, "first") && strcmp(a.merge, "hash") && strcmp(a.merge, "unique") && strcmp(a.merge, "deep")) {
            fail("The --merge option only accepts 'first', 'hash', 'unique', or 'deep'\n%s", RUN_HELP);
            goto out;
        }
        merge = hiera_value_new_hash();
        hiera_value_hash_set(merge, "strategy", hiera_value_new_string(a.merge));
        if (strcmp(a.merge, "deep") == 0) {
            hiera_value_hash_set(merge, "sort_merged_arrays", hiera_value_new_bool(a.sort_merged_arrays));
            hiera_value_hash_set(merge, "merge_hash_arrays", hiera_value_new_bool(a.merge_hash_arrays));
            if (a.prefix)
                hiera_value_hash_set(merge, "knockout_prefix", hiera_value_new_string(a.prefix));
        }
    }
    bool explain = a.explain || a.explain_options;
    if (a.nkeys == 0) {
        if (a.explain_options && !a.explain) {
            a.keys[a.nkeys++] = "__global__";
        } else {
            fail("%s", "No keys were given to lookup.");
            goto out;
        }
    }
    const char *format = a.render_as ? a.render_as : explain ? "s" : "yaml";
    hiera_render_format rf;
    if (!strcasecmp(format, "yaml")) {
        rf = HIERA_RENDER_YAML;
    } else if (!strcasecmp(format, "json") || !strcasecmp(format, "pson")) {
        rf = HIERA_RENDER_JSON;
    } else if (!strcasecmp(format, "s")) {
        rf = HIERA_RENDER_S;
    } else {
        fail("Unknown rendering format '%s'", format);
        goto out;
    }
    char *modulepath = a.node ? NULL : facter_modulepath(&a);
    /* with --node: Puppet's facts terminus decides (PuppetDB when Puppet would ask it) */
    a.ps.confdir = a.confdir;
    a.ps.certname = a.certname;
    cli_puppet_settings ps;
    cli_puppet_settings_from_args(&a.ps, &ps);
    cli_facts_route route = {0};
    cli_pdb_config pc = {0};
    int gathered = 1;
    if (a.pdb.nodes_query || a.pdb.include_inactive) {
        fail("%s", "--nodes-query and --include-inactive choose the nodes of hiera batch and hiera serve; "
                   "hiera lookup looks up --node");
        gathered = 1;
    } else if (!a.node && cli_pdb_wanted(&a.pdb)) {
        fail("%s", "--puppetdb and --from-puppetdb go with --node (the node whose facts PuppetDB gives)");
        gathered = 1;
    } else if (a.node && cli_pdb_wanted(&a.pdb)) {
        /* --puppetdb, --from-puppetdb: PuppetDB is the facts terminus */
        route.terminus = strdup("puppetdb");
        gathered = route.terminus && cli_pdb_config_get(&a.pdb, &ps, &pc) ? 0 : 1;
    } else if (a.node) {
        gathered = cli_facts_route_get(&ps, &route) &&
                           (!cli_facts_route_uses_puppetdb(&route) || cli_pdb_config_get(&a.pdb, &ps, &pc))
                       ? 0
                       : 1;
    } else {
        gathered = 0;
    }
    if (!gathered) {
        cli_facts_request fr = {a.node, a.facts, a.vardir, a.yamldir, a.certname, a.environment, modulepath,
                                a.node ? &route : NULL, &pc.c};
        gathered = cli_facts_gather(&fr, &nf);
    }
    free(modulepath);
    cli_facts_route_free(&route);
    cli_pdb_config_free(&pc);
    cli_puppet_settings_free(&ps);
    if (gathered)
        goto out;
    if (a.trusted && !(trusted = cli_load_trusted(a.trusted)))
        goto out;
    cache = cli_cache();
    hiera_options o = {.size = sizeof o, .codedir = a.codedir, .confdir = a.confdir, .environmentpath = a.environmentpath,
                       .hiera_config = a.hiera_config, .environment = a.environment, .node = nf.node, .facts = nf.given,
                       .cache = cache, .unsafe_fact_paths = a.unsafe_fact_paths, .diagnostics = cli_print_diagnostic,
                       .trusted = trusted, .base_facts = nf.base};
    h = hiera_new(&o, &err);
    if (!h) {
        fail("%s", err.message);
        goto out;
    }
    if (a.has_default)
        dflt = hiera_value_new_string(a.default_value);
    hiera_request req = {.size = sizeof req, .keys = a.keys, .nkeys = a.nkeys, .merge = merge, .default_value = dflt, .type = a.type};
    if (a.explain)
        req.explain |= HIERA_EXPLAIN_DATA;
    if (a.explain_options)
        req.explain |= HIERA_EXPLAIN_OPTIONS;
    if (a.provenance)
        req.explain |= HIERA_EXPLAIN_PROVENANCE;
    hiera_status st = hiera_lookup_result(h, &req, &result, &err);
    value = hiera_value_incref(hiera_result_value(result));
    if (st == HIERA_ERROR && err.kind == HIERA_ERR_FATAL) {
        fail("%s", err.message);
        goto out;
    }
    if (explain && !(a.provenance && st == HIERA_OK && rf != HIERA_RENDER_S)) {
        if (rf == HIERA_RENDER_S) {
            char *text = hiera_result_explanation_text(result);
            fputs(text ? text : "", stdout);
            if (!text || !*text)
                fputc('\n', stdout);
            free(text);
        } else {
            hiera_value *tree = hiera_result_explanation_tree(result);
            hiera_error rerr = {0};
            char *text = hiera_render(tree, rf == HIERA_RENDER_YAML ? HIERA_RENDER_YAML_SHARED : rf, &rerr);
            hiera_value_decref(tree);
            if (!text) {
                fail("%s", rerr.message);
                hiera_error_clear(&rerr);
                goto out;
            }
            print_rendered(text);
            free(text);
        }
        rc = 0;
        if (!a.provenance || st != HIERA_OK)
            goto out;
        fputc('\n', stdout);
    }
    if (a.provenance && st == HIERA_OK) {
        if (rf == HIERA_RENDER_S || !a.render_as) {
            char *text = hiera_result_provenance_text(result);
            fputs(text ? text : "", stdout);
            free(text);
        } else {
            hiera_value *tree = hiera_result_provenance_tree(result);
            hiera_error rerr = {0};
            char *text = hiera_render(tree, rf, &rerr);
            hiera_value_decref(tree);
            if (!text) {
                fail("%s", rerr.message);
                hiera_error_clear(&rerr);
                goto out;
            }
            print_rendered(text);
            free(text);
        }
        rc = 0;
        goto out;
    }
    if (st == HIERA_OK) {
        char *text = hiera_render(value, rf, &err);
        if (!text) {
            fail("%s", err.message);
            goto out;
        }
        print_rendered(text);
        free(text);
        rc = 0;
    } else if (st == HIERA_ERROR && err.message) {
        /* puppet lookup says nothing about a lookup error; we say it on stderr */
        fprintf(stderr, "Error: %s\n", err.message);
    }
out:
    hiera_result_free(result);
    hiera_value_decref(value);
    cli_node_facts_free(&nf);
    hiera_value_decref(trusted);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    hiera_free(h);
    cli_cache_release(cache);
    hiera_error_clear(&err);
    free(a.keys);
    fflush(stdout);
    return rc;
}
