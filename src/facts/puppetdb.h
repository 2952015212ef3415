/* puppetdb.h - a client of PuppetDB's query API (v4) for nodes and their facts, configured and
 * failing over as Puppet's puppetdb terminus (Debian's puppet-terminus-puppetdb 7.12,
 * puppet/util/puppetdb/{config,http}.rb and indirector/facts/puppetdb.rb) does (puppetdb.c).
 *
 * Servers: the server_urls of a puppetdb.conf read as Puppet::Util::Puppetdb::Config.load reads
 * it ([main] section; https URLs without a path; server_url_timeout, sticky_read_failover,
 * verify_client_certificate; the other settings are checked and unused, since nothing is written
 * to PuppetDB), or URLs given directly (http:// allowed, e.g. PuppetDB's plain port on localhost).
 *
 * Every request is tried on each server in turn, as Puppet's failover_action does: a server that
 * cannot be reached, fails TLS, times out (server_url_timeout seconds for the whole request,
 * 30 by default), answers 5xx or a 404 that is not JSON is reported with a warning naming it and
 * the cause, and the next one is asked; a JSON 404 ("No information is known about node x") is
 * "not found" on that server and the next is asked too. No server is asked twice.
 *
 * TLS is verified: the server's certificate against the CA file (Puppet's localcacert) and its
 * name against the URL's host, the client certificate and key sent (Puppet's hostcert and
 * hostprivkey; not when puppetdb.conf says verify_client_certificate = false), the CRL checked
 * when certificate_revocation asks for it (Puppet's hostcrl).
 *
 * libcurl is opened on the first request (curl_lib.h). A pdb object belongs to one thread at a
 * time; after a fork, the child opens its own connections (the parent's are left alone). The
 * public API over it is hiera_puppetdb_* (include/hiera_fleet.h, factsrc.c). */
#ifndef HIERA_FACTS_PUPPETDB_H
#define HIERA_FACTS_PUPPETDB_H

#include <stdbool.h>
#include <stddef.h>

#include "hiera.h"

/* Where warnings go, as Puppet words them (what follows its "Warning: "): code
 * "puppetdb-failover" (a server failed and the next is tried) or "puppetdb-conf" (a retired
 * puppetdb.conf setting). NULL drops them (the library never prints). */
typedef void (*pdb_warn_fn)(const char *code, const char *message, void *data);

typedef struct {
    const char *urls;      /* comma-separated server URLs (--puppetdb URL,...), or NULL: conf_file's */
    const char *conf_file; /* the puppetdb.conf read when urls is NULL (Puppet: <confdir>/puppetdb.conf;
                              a missing file means Puppet's default, https://puppetdb:8081) */
    /* TLS, from Puppet's SSL settings or given (--cert, --key, --cacert); NULL: not used (the
     * CA: the system's bundle) */
    const char *cert, *key, *cacert;
    const char *crl;       /* Puppet's hostcrl: checked when crl_check (certificate_revocation
                              chain or leaf); a missing file is then an error, as in Puppet */
    bool crl_check;
    int timeout;           /* seconds for each request on each server; 0: puppetdb.conf's
                              server_url_timeout (30 by default); negative: none */
    int connect_timeout;   /* Puppet's http_connect_timeout (0: 120) */
    pdb_warn_fn warn;
    void *warn_data;
} pdb_config;

typedef struct pdb pdb;

typedef enum { PDB_OK = 0, PDB_NOT_FOUND = 1, PDB_ERROR = 2 } pdb_status;

/* Reads the configuration (nothing is asked yet). NULL with *err (malloc'ed) when it is wrong:
 * a line of puppetdb.conf Puppet cannot parse, a URL that is not https (in puppetdb.conf), a bad
 * boolean... Release with pdb_close. */
pdb *pdb_open(const pdb_config *c, char **err);
void pdb_close(pdb *db);
/* The servers, as Puppet lists them in its messages ("https://a:8081, https://b:8081"). BORROWED. */
const char *pdb_servers(const pdb *db);

/* A node's facts as Puppet's facts terminus finds them (GET /pdb/query/v4/nodes/<node>/facts,
 * the facts merged name => value in the order given). PDB_OK: *facts is a new hash (empty when
 * PuppetDB has none: an unknown, deactivated or expired node). PDB_NOT_FOUND: every server said
 * 404 (Puppet then has no facts). PDB_ERROR: *err (malloc'ed) names the servers and the cause;
 * the warnings for each server that failed have been given. */
pdb_status pdb_node_facts(pdb *db, const char *node, hiera_value **facts, char **err);

/* A row of a query's answer (BORROWED: take a reference to keep it), or NULL: a server failed
 * in the middle of the answer and the next one answers from the start, so forget the rows given
 * so far. Return 0 to go on; anything else stops the query, which then fails with *stop_msg
 * (malloc'ed by the callback) as its message. */
typedef int (*pdb_row_fn)(hiera_value *row, void *data, char **stop_msg);

/* Runs a query on /pdb/query/v4 (POST, as Puppet's puppetdb_query function): PQL text, or an AST
 * when it starts with '[' (JSON). The answer is read as it arrives: each element of its array is
 * parsed alone and given to row, then dropped. paging: NULL, or a JSON object's members to add to
 * the request ("\"limit\": 100, \"order_by\": [...]"). */
pdb_status pdb_query(pdb *db, const char *query, const char *paging, pdb_row_fn row, void *data, char **err);

/* The nodes a query selects (PQL or AST; each row's "certname"), or with query NULL every
 * node PuppetDB knows with facts: active ones only unless include_inactive (deactivated and
 * expired nodes too). Sorted by name, each once. *names: malloc'ed array of malloc'ed strings. */
pdb_status pdb_list_nodes(pdb *db, const char *query, bool include_inactive, char ***names, size_t *n, char **err);

/* The facts of the nodes named (a page: at most a few hundred names), whatever their state, as
 * pdb_node_facts gives them: got(certname, facts) for each node PuppetDB has facts for, in no
 * particular order (facts BORROWED); got(NULL, NULL): a server failed in the middle of its answer,
 * forget what was given (the next server's answer gives it again). The top-level order of a node's facts may differ from
 * pdb_node_facts' (PuppetDB's order depends on its query plan); values are the same. */
typedef void (*pdb_facts_fn)(const char *certname, hiera_value *facts, void *data);
pdb_status pdb_facts_of(pdb *db, const char *const *names, size_t n, pdb_facts_fn got, void *data, char **err);

/* Ruby's CGI.escape (the node name in the facts terminus' route). malloc'ed. */
char *pdb_cgi_escape(const char *s);

#endif
