/* compare.h - two answers compared as `hiera diff` compares them, and where they differ
 * (compare.c).
 *
 * Sameness is Puppet's == (and Ruby's Hash#==) with the types kept apart:
 *  - hashes are the same when they hold the same keys with the same values, in whatever order:
 *    Puppet's == ignores the order, and so does every use of a hash that a catalog can see
 *    except iteration; wherever the order does change an answer (a hash turned into an array by
 *    convert_to, or into a string by interpolation) that answer is an array or a string, which is
 *    compared in order;
 *  - arrays are compared in order;
 *  - an integer and a float are never the same (Puppet's 1 == 1.0 is true, but Integer[] type
 *    checks and the rendered text tell them apart); floats by value (0.0 and -0.0 alike), NaN
 *    the same as NaN;
 *  - strings byte for byte (Puppet's == ignores case, but a file built from the value does not);
 *  - a Sensitive value by what it wraps (two lookups never return the same Sensitive object).
 */
#ifndef HIERA_DIFF_COMPARE_H
#define HIERA_DIFF_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"
#include "base/value.h"

bool dv_same(const hv *a, const hv *b);
/* A hash code consistent with dv_same. */
uint64_t dv_code(const hv *v);

/* Where old and new differ, as a new array of changes in the order of old (then what new adds):
 *   {"path": [segment...], "kind": "changed" | "added" | "removed", "old": v, "new": v}
 * ("old" absent for added, "new" for removed). Hashes are followed key by key, arrays of the
 * same length index by index; anything else that differs is one change at its path (the whole
 * value when the top differs: path []). Empty when dv_same. */
hv *dv_changes(const hv *old, const hv *new_);

/* A path of dv_changes as Puppet's dotted key syntax reads it: segments joined by '.', a string
 * segment quoted ("a.b" or 'say "hi"') when it holds a dot or a quote, has blanks around it or
 * would read as an array index; integers (array indexes) as they are. Appended to b. */
void dv_path_text(sbuf *b, const hv *path);

#endif
