/* facts.h - where `hiera lookup` gets a node's facts, as `puppet lookup` gets them (facts.c). */
#ifndef HIERA_CLI_FACTS_H
#define HIERA_CLI_FACTS_H

#include <stddef.h>

#include "facts/factsrc.h"
#include "hiera.h"

/* The Puppet version whose behaviour this project implements; Puppet reports its own version in
 * the puppetversion and clientversion facts of the local machine. */
#define CLI_PUPPET_VERSION "7.23.0"

typedef struct {
    const char *node;            /* --node NODE; NULL: the local machine, whose facts come from Facter */
    const char *facts_file;      /* --facts FILE, or NULL */
    const char *vardir;          /* Puppet's vardir (--vardir, puppet.conf); NULL: cli_default_vardir() */
    const char *yamldir;         /* Puppet's yamldir; NULL: <vardir>/yaml */
    const char *certname;        /* Puppet's certname setting; NULL: from Facter's hostname and domain */
    const char *cli_environment; /* the environment when it was set (on the command line or in
                                    puppet.conf's [agent]/[main]): the agent_specified_environment fact */
    const char *modulepath;      /* the environment's module folders (':'-separated): Facter's custom
                                    facts (lib/facter) and external facts (facts.d) come from its modules */
    const cli_facts_route *route; /* with --node: Puppet's facts terminus and cache (factsrc.h);
                                    NULL: the YAML facts cache */
    const pdb_config *pdb;       /* PuppetDB, when the route asks it */
    hiera_cache *cache;          /* the --facts file is read through its disk cache; NULL: parsed */
} cli_facts_request;

typedef struct {
    char *node;          /* the node looked up: --node, else the certname */
    hiera_value *base;   /* the node's stored facts (YAML cache) or Facter's, or NULL: none */
    hiera_value *given;  /* the --facts file's, or NULL */
} cli_node_facts;

/* Gathers what `puppet lookup` starts from (Puppet::Application::Lookup#generate_scope and
 * retrieve_node_facts): the --facts file, read and checked first; with --node, the facts terminus
 * (and its cache) the route gives: PuppetDB, or the YAML facts cache <yamldir>/facts/NODE.yaml
 * (no file: no facts); without, Facter. Returns 0, or 1 after
 * printing "Error: Could not run: ..." on stderr (for "No facts available for target node: N"
 * too). Release out with cli_node_facts_free. */
int cli_facts_gather(const cli_facts_request *r, cli_node_facts *out);
void cli_node_facts_free(cli_node_facts *f);

/* The node's facts as `puppet lookup` (hiera lookup, hiera keys) takes them: settings and env
 * give the vardir, yamldir, certname and facts route; with node, Puppet's facts terminus and its
 * cache (PuppetDB when pdb_args asks for it or routes.yaml/facts_terminus say so), else Facter; the
 * facts_file (or NULL) over them. cache (or NULL) reads the --facts file through the disk cache.
 * Returns 0, or 1 after printing "Error: Could not run: ..." (pdb_args without node too). */
int cli_node_facts_get(const hiera_settings *settings, const hiera_environment *env, const char *node,
                       const char *facts_file, const cli_pdb_args *pdb_args, hiera_cache *cache, cli_node_facts *out);

/* Puppet's vardir on this machine: /var/cache/puppet as root (the Debian package's layout),
 * else ~/.puppet/cache. malloc'ed. */
char *cli_default_vardir(void);

/* The module folders Puppet's default settings give an environment: <env>/modules, then the
 * default basemodulepath <codedir>/modules:/usr/share/puppet/modules. env_dir may be NULL.
 * malloc'ed. */
char *cli_default_modulepath(const char *codedir, const char *env_dir);

/* A --trusted FILE (YAML or JSON, read as --facts files are): a new value, or NULL after
 * printing the error. */
hiera_value *cli_load_trusted(const char *path);

#endif
