/* plan.h - what can differ between two snapshots of a code directory, so that hiera diff looks
 * up again only the keys whose answers can change (plan.c).
 *
 * Files are paired by their path relative to each side's root (a file outside the root, such as a
 * --hiera_config given by path, by its absolute path). Then:
 *  - a hiera.yaml (any layer's) that differs, appears or goes, changes every answer;
 *  - a data file that does not parse on a side (and is not byte for byte the same on the other),
 *    or whose top is not a hash, changes every answer (its keys are unknown);
 *  - otherwise each top-level key whose value differs, appears or goes is "changed" (values
 *    compared exactly: kinds, order and floats bit for bit), and so is each key whose
 *    lookup_options entry differs: a literal entry names its key, a pattern entry every key it
 *    matches; in a module's data every key of the module. lookup_options that cannot be used on a
 *    side (not a hash, a key that is not a string, a pattern that does not compile) change every
 *    answer;
 *  - the keys looked up again are the changed keys and, transitively, every key whose value (on
 *    either side, in any file) interpolates one of them with lookup(), hiera() or alias().
 * Every other answer is the same on both sides: it reads the same values through the same
 * hierarchy. What this does not see: files no level of either snapshot can name (a location that
 * interpolation sends outside every template, read by the lookup itself), and key files of eyaml
 * levels (their options are in hiera.yaml, but not their content). */
#ifndef HIERA_DIFF_PLAN_H
#define HIERA_DIFF_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/value.h"
#include "engine/snapshot.h"

typedef struct {
    const char *old_root, *new_root; /* the trees' roots, absolute, as the snapshots name files */
    const char *const *keys;         /* the keys to consider; NULL: every key of either side's data */
    size_t nkeys;
    bool full;                       /* every key considered is looked up again */
    const char *full_reason;         /* not NULL: so too, for this reason */
} dplan_opts;

/* A new hash:
 *   {"full": bool, "reasons": [text...] (why every key, when full; sorted after the given ones),
 *    "files": [{"path": relative, "status": "modified"|"added"|"removed", "kind": "config"|"data",
 *               "keys": [changed top-level keys] (data files whose keys are known)}...],
 *    "keys": [every key considered, sorted],
 *    "dirty": [the keys to look up again, sorted],
 *    "changed": [the keys changed in the files themselves, sorted],
 *    "reached": [every key whose answer may differ, also outside "keys" (for values met outside
 *                the data, such as facts that interpolate lookups), sorted],
 *    "datadirs": [{"side": "old"|"new", "config": path, "level": name, "datadir": as written,
 *                  "kind": "mapped" (under one of Puppet's default environmentpaths: read in the
 *                  side's tree, "environmentpath" says which) | "outside" (any other absolute
 *                  folder outside the side's root: both sides read the same files there)}]}
 * "files" are sorted by path. */
hv *dplan_compare(const snapshot *old, const snapshot *new_, const dplan_opts *o);

#endif
