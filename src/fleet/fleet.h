/* fleet.h - what the diff run (src/diff/run.c) shares with the fleet run (fleet.c): reading a
 * node's trusted hash and a facts file given for a node, as hiera batch reads them. */
#ifndef HIERA_FLEET_FLEET_H
#define HIERA_FLEET_FLEET_H

#include "hiera_fleet.h"

/* A node's $trusted from DIR/NAME.yaml, .yml or .json, read through cache's disk cache: a new
 * reference, or NULL with *msg (malloc'ed). */
hiera_value *fleet_load_trusted(hiera_cache *cache, const char *dir, const char *name, char **msg);

/* A facts file given for a node, read as a facts folder's file is: a hash of facts (checked as
 * `puppet lookup --facts` checks it: *given) or a file of Puppet's YAML facts cache (*base);
 * false with *msg (malloc'ed). */
bool fleet_load_facts_file(hiera_cache *cache, const char *path, const char *name, hiera_value **given,
                           hiera_value **base, char **msg);

/* The number of CPUs this process may run on, at most 8. */
unsigned fleet_cpus(void);

#endif
