/* facts_opts.h - the command-line options that point a command at its nodes' facts (a facts
 * folder, PuppetDB, Puppet's settings for its PuppetDB client), turned into the library's facts
 * API (include/hiera_fleet.h), with errors printed as Puppet words them (facts_opts.c). */
#ifndef HIERA_CLI_FACTS_OPTS_H
#define HIERA_CLI_FACTS_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/common.h"
#include "hiera_fleet.h"

/* ------------------------------------------------------------------ Puppet's settings for it */

/* The Puppet settings the PuppetDB options of a command without Puppet's command line (serve,
 * check, diff) take: each, when given, is a command-line setting of that name. */
typedef struct {
    const char *confdir, *ssldir, *certname, *hostcert, *hostprivkey, *localcacert, *hostcrl;
    const char *certificate_revocation, *facts_terminus, *storeconfigs, *storeconfigs_backend, *route_file;
} cli_puppet_settings_args;
/* Consumes argv[*i] when it is one of them (--name VALUE, --name=VALUE; confdir is left to the
 * command); 1: consumed, 0: not one, -1: printed an error. */
int cli_puppet_settings_parse_arg(cli_puppet_settings_args *a, int argc, char **argv, int *i);
/* Puppet's settings with those (puppet.conf in the confdir read); NULL after printing why.
 * Release with hiera_settings_free. */
hiera_settings *cli_puppet_settings_load(const cli_puppet_settings_args *a);
/* Those given, as command-line settings into out (room for CLI_PUPPET_SETTINGS_MAX); how many. */
#define CLI_PUPPET_SETTINGS_MAX 12
size_t cli_puppet_settings_list(const cli_puppet_settings_args *a, hiera_setting *out);

/* ------------------------------------------------------------------ the PuppetDB options */

/* The command-line options that point a command at PuppetDB (the same for lookup, batch, serve,
 * check and diff):
 *   --puppetdb URL[,URL...]|FILE   this PuppetDB (http:// or https://), or the puppetdb.conf FILE
 *   --from-puppetdb                the PuppetDB of Puppet's configuration (<confdir>/puppetdb.conf)
 *   --nodes-query QUERY            the nodes a PQL (or AST) query selects (implies --from-puppetdb
 *                                  without --puppetdb)
 *   --include-inactive             deactivated and expired nodes too
 *   --cert FILE --key FILE --cacert FILE   the client certificate, its key and the CA (default:
 *                                  Puppet's hostcert, hostprivkey and localcacert)
 *   --puppetdb-timeout SECONDS     per request and server (default: server_url_timeout, 30) */
typedef struct {
    const char *puppetdb, *nodes_query, *cert, *key, *cacert, *timeout;
    bool from_puppetdb, include_inactive;
} cli_pdb_args;

/* The options a command takes for its nodes' facts (cli_parse's shared options, their values in a
 * cli_facts_args): the node and its facts (--node NAME, --facts FILE, --trusted FILE,
 * --unsafe-fact-paths) and PuppetDB (above); the fleet's commands (set, batch) also take facts
 * folders (--facts-dir DIR, --trusted-dir DIR). */
typedef struct {
    const char *node, *facts, *trusted, *facts_dir, *trusted_dir;
    bool unsafe_fact_paths;
    cli_pdb_args pdb;
} cli_facts_args;
/* keys: the node and its facts, PuppetDB's servers (not --nodes-query, --include-inactive) */
extern const cli_options CLI_FACTS_NODE;
/* lookup: those and PuppetDB's node set (--nodes-query, --include-inactive: lookup says why it
 * does not take them) */
extern const cli_options CLI_FACTS_NODE_SET;
/* set, batch: those and the facts folders */
extern const cli_options CLI_FACTS_FLEET;

/* true when the options ask for PuppetDB */
bool cli_pdb_wanted(const cli_pdb_args *a);
/* Consumes argv[*i] when it is one of the options above (its value from "=VALUE" or the next
 * argument); 1: consumed, 0: not one of them, -1: printed an error (a value missing). */
int cli_pdb_parse_arg(cli_pdb_args *a, int argc, char **argv, int *i);
/* The help lines for them (a string literal). */
#define CLI_PDB_USAGE                                                                                         \
    "PuppetDB (the node set and its facts):\n"                                                                 \
    "  --puppetdb URL[,URL...]|FILE  this PuppetDB (http://localhost:8080, https://puppetdb:8081), or the\n"   \
    "                                servers, timeout and TLS choices of a puppetdb.conf FILE\n"              \
    "  --from-puppetdb               the PuppetDB Puppet uses: <confdir>/puppetdb.conf and Puppet's\n"         \
    "                                certificate (hostcert, hostprivkey, localcacert, hostcrl)\n"              \
    "  --nodes-query QUERY           the nodes a PQL or AST query selects, e.g.\n"                             \
    "                                'inventory[certname] { facts.os.family = \"Debian\" }'\n"                \
    "  --include-inactive            deactivated and expired nodes too\n"                                      \
    "  --cert FILE --key FILE --cacert FILE   client certificate, key and CA for https\n"                      \
    "  --puppetdb-timeout SECONDS    per request and server (default: server_url_timeout, 30)\n"

/* The library's PuppetDB options for the command-line ones and Puppet's settings hs (pointers
 * into a and hs: keep them alive). PuppetDB's warnings go to diag (NULL: printed as Puppet prints
 * them, "Warning: <message>" on stderr). false after printing the error (a bad timeout). */
bool cli_pdb_options(const cli_pdb_args *a, const hiera_settings *hs, hiera_diagnostic_fn diag, void *diag_data,
                     hiera_puppetdb_options *out);

/* The source a command's options name: PuppetDB when they ask for it (cli_pdb_wanted; Puppet's
 * settings hs say where and how), else the folder facts_dir. NULL after printing why (a bad
 * configuration, a folder that cannot be read, both a folder and PuppetDB, neither). diag as
 * for cli_pdb_options. */
hiera_facts_source *cli_factsrc_open(const char *facts_dir, const cli_pdb_args *pdb, const hiera_settings *hs,
                                     hiera_diagnostic_fn diag, void *diag_data);

/* ------------------------------------------------------------------ one node (lookup, keys) */

/* The node's facts as `puppet lookup` takes them (hiera_node_facts_find): with node, Puppet's
 * facts terminus (PuppetDB when pdb asks for it), else Facter; the facts_file (or NULL) over
 * them; its messages printed as Puppet prints them. 0, or 1 after printing the error (pdb without
 * node too). Release out with hiera_node_facts_clear. */
int cli_node_facts(const hiera_settings *settings, const hiera_environment *env, const char *node,
                   const char *facts_file, const cli_pdb_args *pdb, hiera_cache *cache, hiera_node_facts *out);

/* A --trusted FILE (YAML or JSON, read as --facts files are): a new value, or NULL after
 * printing the error. */
hiera_value *cli_load_trusted(const char *path);

/* "Error: Could not run: <message>" for a library error (HIERA_ERR_CONFIG: "Error: <message>"). */
void cli_print_error(const hiera_error *err);

#endif
