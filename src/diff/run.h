/* run.h - the diff run's helpers the command shares (run.c; the run itself is hiera_diff_run in
 * include/hiera_fleet.h; a node's facts are read by fleet_load_node_facts, fleet/fleet.h). */
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

#endif
