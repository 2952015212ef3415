/* merge.h - the merge strategies (merge.c): Puppet's first/unique/hash/deep and Hiera 3's deep
 * merges through Puppet, and the deep_merge gem's deep_merge! that both engines use. */
#ifndef HIERA_ENGINE_MERGE_H
#define HIERA_ENGINE_MERGE_H

#include <stdbool.h>

#include "base/util.h"
#include "base/value.h"

struct memo;

typedef enum {
    MS_FIRST,
    MS_DEFAULT, /* first found; what `merge: nil` means */
    MS_UNIQUE,
    MS_HASH,
    MS_DEEP,
    MS_UNCONSTRAINED_DEEP, /* Hiera 3 'deeper' through Puppet */
    MS_REVERSE_DEEP,       /* Hiera 3 'deep' through Puppet */
} ms_kind;

typedef struct merge_strategy {
    ms_kind kind;
    hv *options;          /* the options hash as given (with or without "strategy"), or NULL */
    char *knockout_prefix;
    bool sort_merged_arrays, merge_hash_arrays, merge_debug;
    /* kept by a frozen cache to its end: merges with it may be remembered in memo (memo.h) */
    bool stable;
    struct memo *memo;
    /* Hiera 3 deep_merge options */
    bool preserve_unmergeables;
    char *unpack_arrays;
} merge_strategy;

/* Puppet's MergeStrategy.strategy(merge): merge is NULL/undef, a string or a hash. Returns a new
 * strategy or NULL with err (HERR_ERROR: ArgumentError / TypeAssertionError messages). */
merge_strategy *ms_from_value(const hv *merge, herr *err);
merge_strategy *ms_new(ms_kind kind);
void ms_free(merge_strategy *ms);
const char *ms_name(const merge_strategy *ms);
bool ms_is_first(const merge_strategy *ms);

/* Puppet's strategy steps: convert_value for the first found value, merge(memo, value) for each
 * next one (memo is the higher-priority side), merge_single when exactly one variant exists.
 * All return new references; merge returns NULL with err on a type or deep_merge error.
 * When `inplace` is set, deep merges may edit e1's containers (Puppet's deep_merge! does); only
 * pass it for values nobody else holds except the explainer. */
hv *ms_convert_value(const merge_strategy *ms, hv *v);
hv *ms_merge_single(const merge_strategy *ms, hv *v);
hv *ms_merge(const merge_strategy *ms, hv *e1, hv *e2, bool inplace, herr *err);

/* The deep_merge gem's deep_merge!(source, dest, options) on private, mutable values. Consumes
 * source and dest, returns the result (new reference) or NULL with err. */
typedef struct {
    const char *knockout_prefix;
    bool preserve_unmergeables;
    bool sort_merged_arrays;
    bool merge_hash_arrays;
    const char *unpack_arrays;
    /* a frozen cache's table (memo.h) and what stands for these options in its keys, or NULL:
     * the merge of a stable value with its own copy is remembered there */
    struct memo *memo;
    const void *memo_id;
} dm_options;
hv *deep_merge_bang(hv *source, hv *dest, const dm_options *o, herr *err);
/* deep_merge_bang as lookups merge (ms_merge without an explanation): source and dest may be
 * shared and are left unchanged (copy on write); the result is the same value. */
hv *deep_merge_cow(hv *source, hv *dest, const dm_options *o, herr *err);

#endif
