/* factsrc.h - the facts module's parts that other modules and the command use beside the public
 * API (include/hiera_fleet.h: facts sources, readers, pagers and PuppetDB handles are implemented
 * in factsrc.c): what Puppet's settings say about its facts and its PuppetDB client, Puppet's
 * facts indirection routes (where `puppet lookup --node` takes a node's facts from), and the
 * diagnostics of the module.
 *
 * The library never prints: warnings and errors Puppet logs and goes on after are diagnostics for
 * the caller's callback; errors are returned (herr). Objects belong to one thread at a time. */
#ifndef HIERA_FACTS_FACTSRC_H
#define HIERA_FACTS_FACTSRC_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "facts/puppetdb.h"
#include "hiera_fleet.h"

/* Calls fn (when not NULL) with a diagnostic of the facts module: severity, a stable code, the
 * message as Puppet words it (after its "Warning: " or "Error: "). */
void facts_diag(hiera_diagnostic_fn fn, void *data, hiera_severity severity, const char *code, const char *fmt, ...)
    HIERA_PRINTF(5, 6);

/* ------------------------------------------------------------------ Puppet's settings for it */

/* What Puppet's settings say about its facts and its PuppetDB client (the Puppet settings of
 * the same names, as `puppet lookup` resolves them: command line, puppet.conf's [server],
 * [master] and [main], Puppet's defaults); filled by puppet_facts_settings_get. */
typedef struct {
    const hiera_settings *hs;     /* BORROWED: what the rest is read from (NULL: Puppet's defaults) */
    hiera_settings *own;          /* the defaults' settings when none were given (owned) */
    char *confdir;                /* puppetdb.conf is read from there */
    char *hostcert, *hostprivkey; /* NULL until first needed (they name the certname, which may
                                     take a DNS query to find) */
    char *localcacert, *hostcrl;
    bool crl_check;               /* certificate_revocation is chain or leaf (not false) */
    char *facts_terminus;         /* as `puppet lookup` has it: the setting when given, else yaml
                                     (the lookup application's default) */
    bool storeconfigs;
    char *storeconfigs_backend;   /* puppetdb */
    char *route_file;             /* $confdir/routes.yaml */
    int http_connect_timeout;     /* seconds (120) */
} puppet_facts_settings;

/* s (NULL: Puppet's defaults, no puppet.conf read) must outlive out. false with err when the
 * defaults cannot be made. */
bool puppet_facts_settings_get(const hiera_settings *s, puppet_facts_settings *out, herr *err);
void puppet_facts_settings_free(puppet_facts_settings *s);

/* The client configuration the public options and the settings give (pdb_open's); the strings
 * point into o, ps and out (release with pdb_setup_free). false with err (bad options). */
typedef struct {
    pdb_config c;
    char *conf_path; /* owned */
} pdb_setup;
bool pdb_setup_get(const hiera_puppetdb_options *o, puppet_facts_settings *ps, pdb_setup *out, herr *err);
void pdb_setup_free(pdb_setup *s);

/* ------------------------------------------------------------------ puppet lookup --node */

/* Where `puppet lookup --node NODE` takes the node's facts from: Puppet's facts indirection as
 * the lookup application sets it up: the terminus is routes.yaml's lookup: facts: terminus, else
 * the facts_terminus setting (yaml unless puppet.conf or the command line say otherwise); the
 * cache is routes.yaml's lookup: facts: cache, else store_configs when storeconfigs is true
 * (store_configs means storeconfigs_backend, puppetdb). A routes.yaml section for another
 * application (server:, master:, agent:) does not count. */
typedef struct {
    char *terminus; /* "yaml", "puppetdb", ... */
    char *cache;    /* NULL, or "puppetdb", ... */
} facts_route;
/* false with err (routes.yaml cannot be read: HERR_PUPPET with the file, "Could not configure
 * routes from FILE: ..."; an unknown terminus: HERR_ERROR). A routes.yaml with both server and
 * master routes is a warning ("facts-route-both"). */
bool facts_route_get(const puppet_facts_settings *s, facts_route *out, hiera_diagnostic_fn diag, void *diag_data,
                     herr *err);
void facts_route_free(facts_route *r);
/* true when the route asks PuppetDB (as terminus or cache). */
bool facts_route_uses_puppetdb(const facts_route *r);

/* The node's facts as Puppet's facts indirection finds them along the route: the cache first (a
 * failure is a diagnostic, "facts-cache-failed": "Cached facts for N failed: ...", and the
 * terminus is asked; an answer, even without facts, is taken), then the terminus. true with
 * *facts (NULL: no facts) or with *use_yaml (the terminus is yaml: the caller reads Puppet's YAML
 * facts cache); false with err. */
bool facts_route_find(const facts_route *r, const pdb_config *c, const char *node, bool *use_yaml, hiera_value **facts,
                      hiera_diagnostic_fn diag, void *diag_data, herr *err);

/* hiera_facts_pager_get reading a folder's files through c (each worker of a fleet run its own
 * cache): thread-safe as the pager is. */
hiera_status facts_pager_get_with(hiera_facts_pager *p, size_t i, hiera_cache *c, hiera_node_facts *out, herr *err);

/* "No facts available for target node: NAME" (malloc'ed) */
char *facts_none_message(const char *node);

#endif
