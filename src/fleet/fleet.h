/* fleet.h - what the diff run (src/diff/run.c) shares with the fleet run (fleet.c): reading a
 * node's facts, trusted hash and a facts file given for a node, as hiera batch reads them. */
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

/* A node's facts as the fleet and diff runs look it up with them: its facts (given) or Puppet's
 * YAML facts cache of them (base), and its $trusted (each a reference, or NULL). */
typedef struct {
    hiera_value *given, *base, *trusted;
} fleet_node_facts;

void fleet_node_facts_clear(fleet_node_facts *nf);

/* Where a node's facts come from: the node given (in: its facts file, facts, base facts, trusted
 * hash, trusted file, as hiera_fleet_options.nodes), else its facts source read a page at a time
 * (pager, the node at index), else that source (source, the node by name); then, with
 * trusted_dir, its $trusted from DIR/NAME.yaml, .yml or .json (hiera_fleet_options.trusted_dir). */
typedef struct {
    const char *name;
    const hiera_fleet_input *in;
    hiera_facts_pager *pager;
    size_t index;
    hiera_facts_source *source;
    const char *trusted_dir;
} fleet_facts_from;

/* The node's facts as hiera_fleet_run and hiera_diff_run read them (the `hiera diff --explain`
 * command reads them so too), files through cache: true with *nf filled (release with
 * fleet_node_facts_clear), or false with *nf empty and *msg (malloc'ed). Thread-safe as the pager
 * and cache are. */
bool fleet_load_node_facts(const fleet_facts_from *from, hiera_cache *cache, fleet_node_facts *nf, char **msg);

/* The number of CPUs this process may run on, at most 8. */
unsigned fleet_cpus(void);

#endif
