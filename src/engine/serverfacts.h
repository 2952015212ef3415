/* serverfacts.h - what Puppet 8's `puppet lookup` adds to a node's scope (serverfacts.c):
 * Puppet::Node::ServerFacts.load of the local machine (Facter's networking facts) and
 * Node#add_server_facts. Puppet 7's lookup application adds none ($server_facts is {}). */
#ifndef HIERA_ENGINE_SERVERFACTS_H
#define HIERA_ENGINE_SERVERFACTS_H

#include "base/value.h"

/* The server facts of this machine, as ServerFacts.load makes them, in its order:
 * pe_serverversion (when /opt/puppetlabs/server/pe_version has one), serverversion "8.10.0",
 * servername (Facter's networking.fqdn, else hostname.domain), serverip and serverip6 (the
 * primary interface's networking.ip and .ip6), each when known. A new hash (fresh values: any
 * thread may own it). The machine is asked once per process; *warnings (may be NULL) gets the
 * warnings ServerFacts.load gives ("Could not retrieve fact servername"...), an array of strings
 * (a new reference), empty when none. */
hv *server_facts_local(hv **warnings);

/* The names Node#add_server_facts makes top-scope variables of (server_facts itself aside). */
bool server_fact_name(const char *name);

#endif
