/* diff_report.h - what `hiera diff` found, grouped, and its three forms: text, JSON and markdown
 * (diff_report.c). */
#ifndef HIERA_CLI_DIFF_REPORT_H
#define HIERA_CLI_DIFF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/diff_side.h"
#include "hiera.h"

typedef enum { CH_ADDED, CH_REMOVED, CH_CHANGED, CH_NOW_FAILING, CH_FIXED, CH_FAILURE_CHANGED, CH_KINDS } change_kind;

/* One side's answer for a node and key. */
typedef struct {
    hiera_status st; /* HIERA_OK, HIERA_NOT_FOUND or HIERA_ERROR */
    hiera_value *v;  /* HIERA_OK: the value (a reference) */
    char *msg;       /* HIERA_ERROR: the message, with paths relative to the side's tree (malloc'ed) */
} outcome;

void outcome_clear(outcome *o);
/* Whether two answers are the same (values by hiera_value_same, failures by their message). */
bool outcome_same(const outcome *a, const outcome *b);

/* The nodes that got the same change for one key. For the failure kinds the answer on the side
 * that does not fail is not part of the change: the first one is kept, and varies says whether
 * the others were the same. */
typedef struct dgroup {
    uint64_t sig;
    uint32_t key;
    change_kind kind;
    outcome old, new_;
    bool varies;
    bool said_once; /* part of a failure said once for several keys */
    uint32_t *nodes;
    size_t n, cap;
    struct dgroup *next;
} dgroup;

typedef struct {
    dgroup **buckets;
    size_t nb, count;
} gtable;

/* Adds node's change of key (old and new differ); takes both outcomes over. */
void gt_add(gtable *t, uint32_t key, uint32_t node, outcome *old, outcome *new_);
/* Moves every group of from into into (from is left empty). */
void gt_merge(gtable *into, gtable *from);
void gt_free(gtable *t);

typedef struct {
    uint32_t node;
    char *msg;
} trouble;

typedef enum { FMT_TEXT, FMT_JSON, FMT_MARKDOWN } report_format;

typedef struct {
    report_format format;
    bool color, all_nodes;
    const diff_side *old, *new_;
    const char *environment;
    const hiera_value *plan;   /* hiera_snapshot_compare's answer */
    const char *const *keys;   /* every key considered, sorted: dgroup.key indexes them */
    size_t nkeys;
    size_t nkeys_looked_up;    /* how many were looked up again for every node */
    const char *const *nodes;  /* every node, sorted: dgroup.nodes index them */
    size_t nnodes;
    const uint32_t *only_old, *only_new; /* nodes with facts on one side only */
    size_t nonly_old, nonly_new;
    const trouble *troubles;   /* nodes that could not be compared */
    size_t ntroubles;
    const char *const *setup_notes; /* problems said once (a side's hiera.yaml...) */
    size_t nsetup_notes;
    const hiera_value *warnings; /* the lookups' warnings, once each: [{"message", "old_nodes", "new_nodes"}] */
    gtable *groups;
    size_t lookups;
    double seconds;
} diff_report;

typedef struct {
    size_t changes, nodes_changed, keys_changed, now_failing, fixed;
} report_counts;

/* Prints the report; fills counts. Returns false when the output could not be written. */
bool report_print(diff_report *r, FILE *out, report_counts *counts);

#endif
