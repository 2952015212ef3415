/* facts_opts.c - the facts and PuppetDB options of the commands over the library's facts API
 * (facts_opts.h). */
#include "cli/facts_opts.h"
#include "cli/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_print_error(const hiera_error *err)
{
    const char *m = err && err->message ? err->message : "";
    if (err && err->kind == HIERA_ERR_CONFIG)
        fprintf(stderr, "Error: %s\n", m);
    else
        fprintf(stderr, "Error: Could not run: %s\n", m);
}

/* ------------------------------------------------------------------ Puppet's settings */

static const struct {
    const char *name;
    size_t off;
} PUPPET_SETTINGS[] = {
    {"confdir", offsetof(cli_puppet_settings_args, confdir)},
    {"ssldir", offsetof(cli_puppet_settings_args, ssldir)},
    {"certname", offsetof(cli_puppet_settings_args, certname)},
    {"hostcert", offsetof(cli_puppet_settings_args, hostcert)},
    {"hostprivkey", offsetof(cli_puppet_settings_args, hostprivkey)},
    {"localcacert", offsetof(cli_puppet_settings_args, localcacert)},
    {"hostcrl", offsetof(cli_puppet_settings_args, hostcrl)},
    {"certificate_revocation", offsetof(cli_puppet_settings_args, certificate_revocation)},
    {"facts_terminus", offsetof(cli_puppet_settings_args, facts_terminus)},
    {"storeconfigs", offsetof(cli_puppet_settings_args, storeconfigs)},
    {"storeconfigs_backend", offsetof(cli_puppet_settings_args, storeconfigs_backend)},
    {"route_file", offsetof(cli_puppet_settings_args, route_file)},
};
#define NPUPPET_SETTINGS (sizeof PUPPET_SETTINGS / sizeof *PUPPET_SETTINGS)

/* Puppet settings may be written with dashes or underscores */
static bool flag_eq(const char *given, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char x = given[i] == '_' ? '-' : given[i], y = name[i] == '_' ? '-' : name[i];
        if (x != y)
            return false;
    }
    return true;
}

/* arg as --NAME or --NAME=VALUE: false when it is not a long option */
static bool long_option(const char *arg, const char **name, size_t *nlen, const char **eq)
{
    if (arg[0] != '-' || arg[1] != '-')
        return false;
    *name = arg + 2;
    *eq = strchr(*name, '=');
    *nlen = *eq ? (size_t)(*eq - *name) : strlen(*name);
    return true;
}

/* The value of option --name (after its '=' eq, else the next argument, consumed) stored at off in
 * a: 1, or -1 after printing that it is missing */
static int take_value(void *a, size_t off, const char *name, const char *eq, int argc, char **argv, int *i)
{
    const char *val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    if (!val) {
        fprintf(stderr, "Error: Could not run: option '--%s' needs a value\n", name);
        return -1;
    }
    *(const char **)((char *)a + off) = val;
    return 1;
}

int cli_puppet_settings_parse_arg(cli_puppet_settings_args *a, int argc, char **argv, int *i)
{
    const char *name, *eq;
    size_t nlen;
    if (!long_option(argv[*i], &name, &nlen, &eq))
        return 0;
    for (size_t f = 1; f < NPUPPET_SETTINGS; f++) /* (confdir: the command's own) */
        if (flag_eq(name, nlen, PUPPET_SETTINGS[f].name))
            return take_value(a, PUPPET_SETTINGS[f].off, PUPPET_SETTINGS[f].name, eq, argc, argv, i);
    return 0;
}

size_t cli_puppet_settings_list(const cli_puppet_settings_args *a, hiera_setting *out)
{
    _Static_assert(NPUPPET_SETTINGS == CLI_PUPPET_SETTINGS_MAX, "one entry per setting");
    size_t n = 0;
    for (size_t f = 0; f < NPUPPET_SETTINGS; f++) {
        const char *v = *(const char *const *)((const char *)a + PUPPET_SETTINGS[f].off);
        if (v)
            out[n++] = (hiera_setting){PUPPET_SETTINGS[f].name, v};
    }
    return n;
}

hiera_settings *cli_puppet_settings_load(const cli_puppet_settings_args *a)
{
    hiera_setting cli[NPUPPET_SETTINGS];
    size_t n = cli_puppet_settings_list(a, cli);
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = n;
    so.diagnostics = cli_print_diagnostic;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&so, &err);
    if (!s)
        fprintf(stderr, "Error: Could not initialize global default settings: %s\n", err.message ? err.message : "");
    hiera_error_clear(&err);
    return s;
}

/* ------------------------------------------------------------------ the facts and PuppetDB options */

#define AT(field) offsetof(cli_facts_args, field)
static const cli_option FACTS_OPTIONS[] = {
    /* the node and its facts */
    {"node", 0, CLI_VALUE, AT(node), NULL},
    {"facts", 0, CLI_VALUE, AT(facts), NULL},
    {"trusted", 0, CLI_VALUE, AT(trusted), NULL}, /* (puppet lookup's takes no file) */
    {"unsafe-fact-paths", 0, CLI_FLAG, AT(unsafe_fact_paths), NULL},
    /* PuppetDB: its servers */
    {"puppetdb", 0, CLI_VALUE, AT(pdb.puppetdb), NULL},
    {"from-puppetdb", 0, CLI_FLAG, AT(pdb.from_puppetdb), NULL},
    {"cert", 0, CLI_VALUE, AT(pdb.cert), NULL},
    {"key", 0, CLI_VALUE, AT(pdb.key), NULL},
    {"cacert", 0, CLI_VALUE, AT(pdb.cacert), NULL}, /* (also Puppet's setting; no effect there) */
    {"puppetdb-timeout", 0, CLI_VALUE, AT(pdb.timeout), NULL},
    /* PuppetDB: its node set */
    {"nodes-query", 0, CLI_VALUE, AT(pdb.nodes_query), NULL},
    {"include-inactive", 0, CLI_FLAG, AT(pdb.include_inactive), NULL},
    /* the facts folders */
    {"facts-dir", 0, CLI_VALUE, AT(facts_dir), NULL},
    {"trusted-dir", 0, CLI_VALUE, AT(trusted_dir), NULL},
};
#undef AT
enum { PDB_FIRST = 4, NODE_END = 10, NODE_SET_END = 12, FLEET_END = sizeof FACTS_OPTIONS / sizeof *FACTS_OPTIONS };
_Static_assert(FLEET_END == 14, "the facts options' groups as the counts say");

const cli_options CLI_FACTS_NODE = {FACTS_OPTIONS, NODE_END};
const cli_options CLI_FACTS_NODE_SET = {FACTS_OPTIONS, NODE_SET_END};
const cli_options CLI_FACTS_FLEET = {FACTS_OPTIONS, FLEET_END};

bool cli_pdb_wanted(const cli_pdb_args *a)
{
    return a->puppetdb || a->from_puppetdb || a->nodes_query || a->include_inactive;
}

int cli_pdb_parse_arg(cli_pdb_args *a, int argc, char **argv, int *i)
{
    const char *name, *eq;
    size_t nlen;
    if (!long_option(argv[*i], &name, &nlen, &eq))
        return 0;
    for (size_t f = PDB_FIRST; f < NODE_SET_END; f++) { /* (FACTS_OPTIONS' PuppetDB options) */
        const cli_option *o = &FACTS_OPTIONS[f];
        if (!flag_eq(name, nlen, o->name))
            continue;
        size_t off = o->offset - offsetof(cli_facts_args, pdb);
        if (o->kind == CLI_VALUE)
            return take_value(a, off, o->name, eq, argc, argv, i);
        if (eq)
            return 0;
        *(bool *)((char *)a + off) = true;
        return 1;
    }
    return 0;
}

/* PuppetDB's warnings, as Puppet prints them (after what stdout holds, so that a document and
 * the warnings keep their order on a terminal) */
static void print_pdb_diagnostic(const hiera_diagnostic *d, void *data)
{
    (void)data;
    fflush(stdout);
    cli_print_diagnostic(d, NULL);
}

bool cli_pdb_options(const cli_pdb_args *a, const hiera_settings *hs, hiera_diagnostic_fn diag, void *diag_data,
                     hiera_puppetdb_options *out)
{
    *out = (hiera_puppetdb_options)HIERA_PUPPETDB_OPTIONS_INIT;
    if (a->puppetdb && strstr(a->puppetdb, "://"))
        out->urls = a->puppetdb;
    else
        out->conf_file = a->puppetdb; /* (NULL: <confdir>/puppetdb.conf) */
    out->cert = a->cert;
    out->key = a->key;
    out->cacert = a->cacert;
    out->settings = hs;
    out->nodes_query = a->nodes_query;
    out->include_inactive = a->include_inactive;
    out->diagnostics = diag ? diag : print_pdb_diagnostic;
    out->diagnostics_data = diag_data;
    if (a->timeout) {
        char *end;
        errno = 0;
        long t = strtol(a->timeout, &end, 10);
        if (errno || end == a->timeout || *end || t < 1 || t > 86400) {
            fprintf(stderr, "Error: Could not run: --puppetdb-timeout takes seconds (1 to 86400), not '%s'\n", a->timeout);
            return false;
        }
        out->timeout = (int)t;
    }
    return true;
}

hiera_facts_source *cli_factsrc_open(const char *facts_dir, const cli_pdb_args *pa, const hiera_settings *hs,
                                     hiera_diagnostic_fn diag, void *diag_data)
{
    bool want = cli_pdb_wanted(pa);
    if (want && facts_dir) {
        fprintf(stderr, "Error: Could not run: give either a facts folder or PuppetDB (--from-puppetdb, --puppetdb, "
                        "--nodes-query), not both\n");
        return NULL;
    }
    hiera_error err = {0};
    hiera_facts_source *s = NULL;
    if (!want) {
        if (!facts_dir) {
            fprintf(stderr, "Error: Could not run: no nodes: give a facts folder or PuppetDB (--from-puppetdb, --puppetdb URL)\n");
            return NULL;
        }
        s = hiera_facts_source_dir(facts_dir, &err);
    } else {
        hiera_puppetdb_options po;
        if (!cli_pdb_options(pa, hs, diag, diag_data, &po))
            return NULL;
        s = hiera_facts_source_puppetdb(&po, &err);
    }
    if (!s)
        cli_print_error(&err);
    hiera_error_clear(&err);
    return s;
}

/* ------------------------------------------------------------------ one node */

/* hiera_node_facts_find's diagnostics as Puppet logs them */
static void print_facts_diagnostic(const hiera_diagnostic *d, void *data)
{
    (void)data;
    if (d->severity == HIERA_DIAG_CRITICAL) {
        fprintf(stderr, "Critical: %s\n", d->message);
        return;
    }
    print_pdb_diagnostic(d, NULL);
}

int cli_node_facts(const hiera_settings *settings, const hiera_environment *env, const char *node,
                   const char *facts_file, const cli_pdb_args *pdb, hiera_cache *cache, hiera_node_facts *out)
{
    memset(out, 0, sizeof *out);
    hiera_node_facts_options o = HIERA_NODE_FACTS_OPTIONS_INIT;
    o.settings = settings;
    o.env = env;
    o.node = node;
    o.facts_file = facts_file;
    o.cache = cache;
    o.diagnostics = print_facts_diagnostic;
    hiera_puppetdb_options po;
    if (cli_pdb_wanted(pdb)) {
        if (!node) {
            fputs("Error: Could not run: --puppetdb and --from-puppetdb go with --node (the node whose facts PuppetDB "
                  "gives)\n", stderr);
            return 1;
        }
        if (!cli_pdb_options(pdb, settings, print_facts_diagnostic, NULL, &po))
            return 1;
        o.puppetdb = &po;
    }
    hiera_error err = {0};
    hiera_status st = hiera_node_facts_find(&o, out, &err);
    if (st != HIERA_OK)
        cli_print_error(&err);
    hiera_error_clear(&err);
    return st == HIERA_OK ? 0 : 1;
}

hiera_value *cli_load_trusted(const char *path)
{
    hiera_error err = {0};
    hiera_value *t = hiera_value_load_file(path, &err);
    if (!t)
        fprintf(stderr, "Error: Could not run: %s\n", err.message ? err.message : "cannot read the trusted data file");
    hiera_error_clear(&err);
    return t;
}
