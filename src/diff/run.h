/* run.h - the diff run's helpers the command shares (run.c; the run itself is hiera_diff_run in
 * include/hiera_fleet.h). */
#ifndef HIERA_DIFF_RUN_H
#define HIERA_DIFF_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "hiera_fleet.h"

/* msg with a side's folders written relative to its tree, as the diff run compares failures: root
 * and tree (its files: "" before a relative path, "." alone), environmentpath
 * ("<environmentpath>") and codedir ("<codedir>"); any of them may be NULL. malloc'ed ("unknown
 * error" for an empty message). */
char *diff_normalize(const char *msg, const char *root, const char *tree, const char *environmentpath,
                     const char *codedir);

/* A node's facts as the diff run looks it up with them: its facts (given) or Puppet's YAML facts
 * cache of them (base), and its $trusted (each a reference, or NULL). */
typedef struct {
    hiera_value *given, *base, *trusted;
} diff_node_facts;

void diff_node_facts_clear(diff_node_facts *nf);

/* Where a node's facts come from: the node given (in: its facts file, facts, base facts, trusted
 * hash, trusted file, as hiera_diff_options.nodes), else its side's facts source read a page at a
 * time (pager, the node at index), else that source (source, the node by name); then, with
 * trusted_dir, its $trusted from DIR/NAME.yaml, .yml or .json (hiera_diff_options.trusted_dir). */
typedef struct {
    const char *name;
    const hiera_fleet_input *in;
    hiera_facts_pager *pager;
    size_t index;
    hiera_facts_source *source;
    const char *trusted_dir;
} diff_facts_from;

/* The node's facts as hiera_diff_run reads them (the `hiera diff --explain` command reads them so
 * too), files through cache: true with *nf filled (release with diff_node_facts_clear), or false
 * with *nf empty and *msg (malloc'ed). Thread-safe as the pager and cache are. */
bool diff_load_node_facts(const diff_facts_from *from, hiera_cache *cache, diff_node_facts *nf, char **msg);

#endif
