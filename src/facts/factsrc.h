/* factsrc.h - where the commands that look at many nodes (hiera batch, serve, check, diff) take
 * the node set and each node's facts from, and where `hiera lookup --node` takes a node's facts
 * from when Puppet would ask PuppetDB (factsrc.c):
 *
 *  - a folder of facts files, one per node: NAME.yaml, NAME.yml or NAME.json holding a hash of
 *    facts (as `hiera lookup --facts` reads it) or a file of Puppet's YAML facts cache (so that
 *    /var/cache/puppet/yaml/facts is such a folder);
 *  - PuppetDB (puppetdb.h): every node it has facts for (active ones unless include_inactive),
 *    or the nodes a query selects; the facts are fetched a page of nodes at a time, read as they
 *    arrive, and handed over node by node (the source keeps no node once handed over).
 *
 * A command that wants both the list and the facts: factsrc_open, factsrc_list, then a reader
 * over the list (or a part of it: a worker process's share) that gives each node's facts in the
 * list's order: factsrc_reader_new / factsrc_reader_next. factsrc_get gives one node's facts
 * alone (one request to PuppetDB: for a few nodes, not a fleet).
 *
 * hiera check --facts-dir and hiera diff can take PuppetDB the same way: open the source from
 * their options (factsrc_add_options' flags), list, and read; each node's facts then go to
 * hiera_options.base_facts when `stored` is set (Puppet's facts cache, PuppetDB: the node's
 * stored facts, as `puppet lookup --node` takes them) and to hiera_options.facts otherwise (a
 * --facts file's, with the hostname/domain/fqdn/clientcert rule).
 *
 * Objects belong to one thread at a time. */
#ifndef HIERA_CLI_FACTSRC_H
#define HIERA_CLI_FACTSRC_H

#include <stdbool.h>
#include <stddef.h>

#include "facts/puppetdb.h"
#include "hiera.h"

/* ------------------------------------------------------------------ Puppet's settings for it */

/* What Puppet's settings say about its facts and its PuppetDB client (the Puppet settings of
 * the same names, as `puppet lookup` resolves them: command line, puppet.conf's [server],
 * [master] and [main], Puppet's defaults); filled by cli_puppet_settings_get. */
typedef struct {
    const hiera_settings *hs;   /* BORROWED: what the rest is read from */
    char *confdir;              /* puppetdb.conf is read from there */
    char *hostcert, *hostprivkey; /* NULL until first needed (they name the certname, which may
                                     take a DNS query to find) */
    char *localcacert, *hostcrl;
    bool crl_check;             /* certificate_revocation is chain or leaf (not false) */
    char *facts_terminus;       /* as `puppet lookup` has it: the setting when given, else yaml
                                   (the lookup application's default) */
    bool storeconfigs;
    char *storeconfigs_backend; /* puppetdb */
    char *route_file;           /* $confdir/routes.yaml */
    int http_connect_timeout;   /* seconds (120) */
} cli_puppet_settings;

/* s must outlive out. */
void cli_puppet_settings_get(const hiera_settings *s, cli_puppet_settings *out);
void cli_puppet_settings_free(cli_puppet_settings *s);

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

/* The client configuration the options and settings give; the strings point into a, s and a
 * buffer of out (release with cli_pdb_config_free). false after printing the error. hostcert
 * and hostprivkey are found in s when needed. */
typedef struct {
    pdb_config c;
    char *conf_path; /* owned */
} cli_pdb_config;
bool cli_pdb_config_get(const cli_pdb_args *a, cli_puppet_settings *s, cli_pdb_config *out);
void cli_pdb_config_free(cli_pdb_config *c);

/* ------------------------------------------------------------------ sources */

typedef struct factsrc factsrc;

/* The source a command's options name: PuppetDB when they ask for it (cli_pdb_wanted; Puppet's
 * settings hs say where and how), else the folder facts_dir. warn_fn: where PuppetDB's warnings
 * go (NULL: stderr). NULL after printing why (a bad configuration, a folder that cannot be read,
 * both a folder and PuppetDB, neither). This is the one call hiera check and hiera diff need to
 * take PuppetDB's nodes as batch does. */
factsrc *cli_factsrc_open(const char *facts_dir, const cli_pdb_args *pdb, const hiera_settings *hs,
                          pdb_warn_fn warn_fn, void *warn_data);

/* A folder of facts files. NULL after printing why (the folder cannot be read). */
factsrc *factsrc_open_dir(const char *dir);
/* PuppetDB (nothing is asked yet). NULL after printing why (a bad configuration). */
factsrc *factsrc_open_puppetdb(const pdb_config *c, const char *nodes_query, bool include_inactive);
void factsrc_free(factsrc *s);
/* "the facts folder DIR" or "PuppetDB at URL, URL" (for messages). BORROWED. */
const char *factsrc_describe(const factsrc *s);
/* Facts fetched per request from PuppetDB (default 50 nodes). */
void factsrc_set_page_size(factsrc *s, size_t n);

/* The node names, sorted in byte order, each once. false with *err (malloc'ed): the folder or
 * PuppetDB could not be read. *names: malloc'ed array of malloc'ed strings (factsrc_names_free). */
bool factsrc_list(factsrc *s, char ***names, size_t *n, char **err);
void factsrc_names_free(char **names, size_t n);

/* A node's facts, or why there are none. */
typedef struct {
    hiera_value *facts; /* a hash (the caller owns it), or NULL with msg */
    bool stored;        /* the node's stored facts (a facts cache file, PuppetDB): for
                           hiera_options.base_facts; false: given facts (hiera_options.facts) */
    char *msg;          /* malloc'ed, or NULL */
    char *path;         /* the file read (folders), or NULL; malloc'ed */
} factsrc_node;
void factsrc_node_free(factsrc_node *n);

/* One node's facts (folders: its file, through c's disk cache when c is given; PuppetDB: the
 * request Puppet's facts terminus makes). A node without facts, or that the source does not
 * know, gets "No facts available for target node: NAME". */
void factsrc_get(factsrc *s, const char *name, hiera_cache *c, factsrc_node *out);

/* The facts of names[0..n) in that order (the caller keeps names alive meanwhile). From PuppetDB
 * a page of nodes is fetched when the reader reaches it; when a page cannot be fetched its nodes
 * get the error, and after three such pages in a row the rest get it without asking again. */
typedef struct factsrc_reader factsrc_reader;
factsrc_reader *factsrc_reader_new(factsrc *s, const char *const *names, size_t n, hiera_cache *c);
/* The next node's facts (out->facts NULL with msg when it has none); false past the end. */
bool factsrc_reader_next(factsrc_reader *r, factsrc_node *out);
void factsrc_reader_free(factsrc_reader *r);

/* The facts of names[0..n) for worker threads that take the nodes by position, about in the
 * list's order (an atomic counter): thread-safe. From PuppetDB the page holding node i (50 nodes)
 * is fetched when node i is first asked for (the threads asking meanwhile wait for it); a node is
 * handed over once and dropped. Folders are read without any lock (c's disk cache may be shared
 * by the threads, see hiera_cache_load_value_file). Failing pages as for readers. */
typedef struct factsrc_pager factsrc_pager;
factsrc_pager *factsrc_pager_new(factsrc *s, const char *const *names, size_t n, hiera_cache *c);
/* Node i's facts (each i once; out->facts NULL with msg when it has none). */
void factsrc_pager_get(factsrc_pager *p, size_t i, factsrc_node *out);
void factsrc_pager_free(factsrc_pager *p);

/* ------------------------------------------------------------------ hiera lookup --node */

/* Where `puppet lookup --node NODE` takes the node's facts from: Puppet's facts indirection as
 * the lookup application sets it up: the terminus is routes.yaml's lookup: facts: terminus, else
 * the facts_terminus setting (yaml unless puppet.conf or the command line say otherwise); the
 * cache is routes.yaml's lookup: facts: cache, else store_configs when storeconfigs is true
 * (store_configs means storeconfigs_backend, puppetdb). A routes.yaml section for another
 * application (server:, master:, agent:) does not count. */
typedef struct {
    char *terminus; /* "yaml", "puppetdb", ... */
    char *cache;    /* NULL, or "puppetdb", ... */
} cli_facts_route;
/* false after printing the error (routes.yaml cannot be read, an unknown terminus). */
bool cli_facts_route_get(const cli_puppet_settings *s, cli_facts_route *out);
void cli_facts_route_free(cli_facts_route *r);
/* true when the route asks PuppetDB (as terminus or cache). */
bool cli_facts_route_uses_puppetdb(const cli_facts_route *r);

/* The node's facts as Puppet's facts indirection finds them along the route, where PuppetDB is
 * involved (cli_facts_route_uses_puppetdb): the cache first (a failure is reported as Puppet
 * reports it, "Error: Cached facts for N failed: ...", and the terminus is asked; an answer, even
 * without facts, is taken), then the terminus. Returns 0 with *facts (NULL: no facts) or with
 * *use_yaml (the terminus is yaml: the caller reads Puppet's YAML facts cache), or 1 after
 * printing the error. */
int cli_facts_route_find(const cli_facts_route *r, const pdb_config *c, const char *node, bool *use_yaml,
                         hiera_value **facts);

#endif
