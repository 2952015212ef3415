/* memo.h - work remembered by a frozen cache (hiera batch), by the identity of its inputs.
 *
 * Node after node, a batch run merges the same data values of the same files, and interpolates
 * the same values with the same facts. With a frozen cache the values of its data files live,
 * unchanged, as long as the cache: such values are "stable", and so is every value this table
 * holds. A merge of stable values can then be remembered by their addresses (an address cannot
 * be reused while the table holds the value), and an interpolated value by the address of its
 * source and its content: equal results become one stable value, whose later merges and JSON
 * rendering are found by address again.
 *
 * Keys are bytes; each kind of key starts with its own letter ('i' interned values here, 'l' and
 * 's' merges, 'e'/'E' levels, 'k' parsed keys, 'A' answers and 'M' module names in lookup*.c,
 * 'm' self-merges and 'n' deep merges in merge.c, 'd'/'v' interpolations and 'D'/'L' locations
 * in interp.c), so that keys of different kinds never meet.
 *
 * Values given to the table must never change afterwards (value.h: shared values are immutable).
 * A key is kept the second time it is put: most of a fleet's work is done once. Entries are
 * never dropped; past 4M entries or about 256 MiB nothing more is remembered (the
 * environment variable HIERA_MEMO_MAX_ENTRIES lowers the first bound, for tests). */
#ifndef HIERA_MEMO_H
#define HIERA_MEMO_H

#include "base/value.h"

#include <stddef.h>

typedef struct memo memo;

memo *memo_new(void);
void memo_free(memo *m);

/* The value remembered under key (len bytes), BORROWED, or NULL. */
hv *memo_get(memo *m, const void *key, size_t len);
/* Remembers value (BORROWED: the table takes its own reference) under key and marks it stable.
 * false, value then not stable, when the table is full, the key is known already, or this is
 * the first time the key is put (memo.c: only keys put twice are kept). */
bool memo_put(memo *m, const void *key, size_t len, hv *value);

/* fresh, an interpolation of the stable value src, as a stable value: the one remembered for
 * src with identical content, or fresh itself, remembered now. STEALS fresh; returns a new
 * reference. Values the table cannot hold (a Sensitive inside) come back as they are. */
hv *memo_intern(memo *m, const hv *src, hv *fresh);

#endif
