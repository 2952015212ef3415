/* lookup_cmd.c - `hiera lookup`: the `puppet lookup` command line over libhiera. Flags, output
 * and exit status follow lib/puppet/application/lookup.rb: the value rendered as yaml (default),
 * json or s; exit 0 when found (or a default applies), 1 when not found or on a lookup error
 * (nothing on stdout or stderr), 1 with "Error: Could not run: <message>" for other errors; with
 * --explain the explanation is printed and the status is 0 unless a non-lookup error occurs. */
#include "cli/common.h"
#include "cli/facts_opts.h"
#include "cli/lookup_cmd.h"
#include "engine/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RUN_HELP "Run 'puppet lookup --help' for more details"

typedef struct {
    const char *merge, *prefix, *default_value, *type, *render_as;
    bool sort_merged_arrays, merge_hash_arrays, explain, explain_options, provenance;
    bool verbose;
    cli_facts_args f; /* (--node's facts from PuppetDB) */
} lookup_args;

#define COMPILE_WHY "it evaluates the environment's manifests (site.pp and what they include) to set top-scope " \
                    "variables, which needs Puppet's language; give such variables as facts (--facts) instead"
#define DEBUG_WHY "Puppet's debug log is not reproduced (--explain shows how a value is found)"

/* puppet lookup's options (lib/puppet/application/lookup.rb, with Puppet::Application's
 * --help and --version), then hiera's own; every Puppet setting is an option too (common.c). */
static const cli_option LOOKUP_OPTIONS[] = {
    {"help", 'h', CLI_HELP, 0, NULL},
    {"version", 'V', CLI_VERSION, 0, NULL},
    {"merge", 0, CLI_VALUE, offsetof(lookup_args, merge), NULL},
    {"debug", 'd', CLI_REFUSED, 0, DEBUG_WHY},
    {"verbose", 'v', CLI_FLAG, offsetof(lookup_args, verbose), NULL},
    {"render-as", 0, CLI_VALUE, offsetof(lookup_args, render_as), NULL},
    {"type", 0, CLI_VALUE, offsetof(lookup_args, type), NULL},
    {"compile", 'c', CLI_REFUSED, 0, COMPILE_WHY},
    {"knock-out-prefix", 0, CLI_VALUE, offsetof(lookup_args, prefix), NULL},
    {"sort-merged-arrays", 0, CLI_FLAG, offsetof(lookup_args, sort_merged_arrays), NULL},
    {"merge-hash-arrays", 0, CLI_FLAG, offsetof(lookup_args, merge_hash_arrays), NULL},
    {"explain", 0, CLI_FLAG, offsetof(lookup_args, explain), NULL},
    {"explain-options", 0, CLI_FLAG, offsetof(lookup_args, explain_options), NULL},
    {"default", 0, CLI_VALUE, offsetof(lookup_args, default_value), NULL},
    /* hiera's */
    {"provenance", 0, CLI_FLAG, offsetof(lookup_args, provenance), NULL},
};

static const char *LOOKUP_USAGE =
    "usage: hiera lookup [--help] [--version] [--type <TYPESTRING>] [--merge first|unique|hash|deep]\n"
    "                    [--knock-out-prefix <PREFIX-STRING>] [--sort-merged-arrays]\n"
    "                    [--merge-hash-arrays] [--explain] [--explain-options]\n"
    "                    [--environment <ENV>] [--default <VALUE>] [--node <NODE-NAME>]\n"
    "                    [--facts <FILE>] [--trusted <FILE>] [--render-as s|json|yaml]\n"
    "                    [--provenance] [--unsafe-fact-paths] [--<puppet setting> <VALUE>]\n"
    "                    [--from-puppetdb | --puppetdb <URL|FILE>] [--cert <FILE> --key <FILE>]\n"
    "                    [--cacert <FILE>] [--puppetdb-timeout <SECONDS>] <keys>\n"
    "\n"
    "Looks up keys in Hiera 5 data exactly as `puppet lookup` (Puppet 7.23) does; the first key found\n"
    "wins. Exit status: 0 found (or default), 1 not found or error.\n"
    "\n"
    "Settings are Puppet's: puppet.conf in the confdir ([server], [master] and [main] sections, $name\n"
    "interpolation), the environment's environment.conf (modulepath, config_version...), and any Puppet\n"
    "setting on the command line (--confdir, --codedir, --environmentpath, --hiera_config, --vardir,\n"
    "--basemodulepath, --modulepath, --config...), which wins. Without --confdir the confdir is the\n"
    "installed Puppet's (/etc/puppet for Debian's package, /etc/puppetlabs/puppet for Puppet's own;\n"
    "~/.puppet/etc or ~/.puppetlabs/etc/puppet for other users than root; HIERA_PUPPET_LAYOUT=debian\n"
    "or puppetlabs chooses). Modules come from the environment's modulepath, the first folder that has\n"
    "a module winning. The environment's config_version command runs before the lookup, as in Puppet;\n"
    "if it fails, so does the lookup.\n"
    "\n"
    "Options are read as Puppet reads them: abbreviations (--expl), -h, -V, -v, -E <ENV>. A setting\n"
    "Puppet accepts without applying it (an abbreviation such as --codedi, or --hiera-config for\n"
    "--hiera_config) is not applied here either, with a warning. --verbose is accepted and changes\n"
    "nothing, as in `puppet lookup` here. Refused: --compile (site.pp needs Puppet's language),\n"
    "--debug and --log_level debug (Puppet's debug log is not reproduced).\n"
    "\n"
    "Facts: with --node, the node's facts from Puppet's YAML facts cache (<yamldir>/facts/NODE.yaml,\n"
    "yamldir $vardir/yaml), or from PuppetDB where puppet lookup takes them from there (routes.yaml's\n"
    "lookup: facts: terminus or cache, facts_terminus = puppetdb, storeconfigs; PuppetDB as\n"
    "<confdir>/puppetdb.conf and Puppet's certificate say) or with --puppetdb URL|FILE or\n"
    "--from-puppetdb (--cert, --key, --cacert: another identity and CA than Puppet's); then --facts\n"
    "FILE over them; without --node, the local machine's facts from `facter` (which must be\n"
    "installed), then --facts FILE over them; the node is then the certname.\n"
    "--trusted FILE (YAML or JSON; puppet lookup's --trusted takes no file and does nothing) gives\n"
    "$trusted as an agent's certificate would: a hash with authenticated, certname and extensions\n"
    "(hostname and domain follow from certname). Without it, $trusted is the node's `trusted` fact when\n"
    "that is such a hash, else built from the clientcert fact.\n"
    "\n"
    "--provenance prints the value with the layer, level, file and line each part came from\n"
    "(after the explanation when --explain is given too; as data with --render-as json|yaml).\n"
    "A location in hiera.yaml whose interpolation of facts adds a '..' segment, makes it absolute\n"
    "or adds glob characters to a glob is refused (treated as missing, with a warning);\n"
    "--unsafe-fact-paths follows it as Puppet does.\n";

static int fail(const char *fmt, const char *arg)
{
    fputs("Error: Could not run: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

static void print_rendered(const char *text)
{
    /* Ruby's puts: a newline unless the text already ends with one */
    fputs(text, stdout);
    size_t n = strlen(text);
    if (n == 0 || text[n - 1] != '\n')
        fputc('\n', stdout);
}

/* what a lookup leaves to the process exit (cli_free_at_exit): external, never optimised away */
struct lookup_kept {
    hiera *h;
    hiera_result *result;
    hiera_environment *env;
    hiera_settings *settings;
    hiera_value *values[4];
    hiera_node_facts nf;
    cli_parsed p;
} lookup_kept;

int lookup_main(int argc, char **argv)
{
    lookup_args a = {0};
    cli_parsed p;
    int rc = 1;
    hiera_value *trusted = NULL, *merge = NULL, *dflt = NULL, *value = NULL;
    hiera_node_facts nf = {0};
    hiera *h = NULL;
    hiera_result *result = NULL;
    hiera_cache *cache = NULL;
    hiera_error err = {0};
    hiera_settings *settings = NULL;
    hiera_environment *env = NULL;
    const char **keys = NULL;
    size_t nkeys = 0;

    if (cli_parse("hiera lookup", argc, argv, LOOKUP_OPTIONS, sizeof LOOKUP_OPTIONS / sizeof *LOOKUP_OPTIONS,
                  &CLI_FACTS_NODE_SET, offsetof(lookup_args, f), &a, LOOKUP_USAGE, &p))
        goto out;
    if (cli_refuse_settings("hiera lookup", &p))
        goto out;
    keys = p.args;
    nkeys = p.nargs;
    /* Puppet reads its settings and finds the environment before anything else */
    settings = cli_settings(&p);
    if (!settings)
        goto out;
    env = cli_environment(settings);
    if (!env)
        goto out;
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
    if (explain) /* (on stderr: the explanation itself is Puppet's text, word for word) */
        fprintf(stderr, "hiera: explaining as Puppet %s does (%s)\n", p.puppet_version == HIERA_PUPPET_8 ? "8.10" : "7.23",
                p.puppet_version_why ? p.puppet_version_why : "");
    static const char *global_key[] = {"__global__"};
    if (nkeys == 0) {
        if (a.explain_options && !a.explain) {
            keys = global_key;
            nkeys = 1;
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
    /* the node's facts: its cache or Facter, the --facts file over them; with --node, Puppet's
     * facts terminus (and cache) decide, PuppetDB when Puppet would ask it */
    cache = cli_cache(); /* (the --facts file is read through its disk cache too) */
    cache_stat_once(cache); /* (one process, one answer: a file is stat()ed once) */
    const sbuf *id = cli_run_identity();
    if (id) /* the settings check's verdict kept in the disk cache */
        cache_set_run_identity(cache, id->s, id->len);
    int gathered;
    if (a.f.pdb.nodes_query || a.f.pdb.include_inactive) {
        fail("%s", "--nodes-query and --include-inactive choose the nodes of hiera batch and hiera serve; "
                   "hiera lookup looks up --node");
        gathered = 1;
    } else {
        gathered = cli_node_facts(settings, env, a.f.node, a.f.facts, &a.f.pdb, cache, &nf);
    }
    if (gathered)
        goto out;
    if (a.f.trusted && !(trusted = cli_load_trusted(a.f.trusted)))
        goto out;
    /* the node's scope: Puppet runs the environment's config_version first */
    if (!hiera_environment_run_config_version(env, NULL, &err)) {
        fail("%s", err.message);
        goto out;
    }
    hiera_options o = {.size = sizeof o, .node = nf.node, .facts = nf.given, .cache = cache,
                       .unsafe_fact_paths = a.f.unsafe_fact_paths, .diagnostics = cli_print_diagnostic,
                       .trusted = trusted, .base_facts = nf.base, .settings = settings, .env = env};
    h = hiera_new(&o, &err);
    if (!h) {
        fail("%s", err.message);
        goto out;
    }
    if (a.default_value)
        dflt = hiera_value_new_string(a.default_value);
    hiera_request req = {.size = sizeof req, .keys = keys, .nkeys = nkeys, .merge = merge, .default_value = dflt, .type = a.type};
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
    }
    /* a lookup error (Puppet's DataBinding::LookupError: a data file that does not parse, a type
     * mismatch...) ends the run with status 1 and not a word, as puppet lookup does (Puppet 7 and
     * 8: lookup.rb rescues it and exits 1); --explain tells it */
out:
    if (!cli_free_at_exit()) {
        /* the process ends now and its memory with it: the context, its layers and values are
         * not torn down one by one (some 70,000 instructions, 4% of a one-shot lookup); kept
         * reachable for leak checkers */
        lookup_kept = (struct lookup_kept){h, result, env, settings, {value, trusted, merge, dflt}, nf, p};
        cli_cache_release(cache);
        hiera_error_clear(&err);
        fflush(stdout);
        return rc;
    }
    hiera_result_free(result);
    hiera_value_decref(value);
    hiera_value_decref(trusted);
    hiera_node_facts_clear(&nf);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    hiera_free(h);
    cli_cache_release(cache);
    hiera_error_clear(&err);
    hiera_environment_free(env);
    hiera_settings_free(settings);
    cli_parsed_free(&p);
    fflush(stdout);
    return rc;
}
