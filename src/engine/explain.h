/* explain.h - explanations (explain.c): the tree of events a lookup records when asked to explain,
 * rendered as Puppet's --explain text or as data. */
#ifndef HIERA_ENGINE_EXPLAIN_H
#define HIERA_ENGINE_EXPLAIN_H

#include <stdbool.h>

#include "base/value.h"
#include "engine/merge.h"

typedef struct explainer explainer;

typedef enum {
    EX_ROOT,
    EX_TOP,         /* Searching for "key" (:data or :meta) */
    EX_INVALID_KEY, /* Invalid key "lookup_options" */
    EX_MERGE_SOURCE,
    EX_MODULE,      /* module not found / provider not found */
    EX_INTERPOLATE,
    EX_MERGE,
    EX_DATA_PROVIDER,
    EX_HIERARCHY_ENTRY, /* a function provider: Hierarchy entry "name" */
    EX_LOCATION,
    EX_SUB_LOOKUP,
    EX_SEGMENT,
    EX_SCOPE,
} ex_type;

typedef enum {
    EV_NONE,
    EV_FOUND,
    EV_FOUND_IN_OVERRIDES,
    EV_FOUND_IN_DEFAULTS,
    EV_RESULT,
    EV_NOT_FOUND,
    EV_LOCATION_NOT_FOUND,
    EV_MODULE_NOT_FOUND,
    EV_MODULE_PROVIDER_NOT_FOUND,
} ex_event;

explainer *ex_new(bool explain_options, bool only_explain_options);
void ex_free(explainer *ex);
bool ex_only_options(const explainer *ex);
/* Pushes a node of the given type. text: the key / name / expression / path depending on type;
 * text2: original path (EX_LOCATION), configuration path (EX_DATA_PROVIDER); ms: EX_MERGE's
 * strategy (copied); segs: EX_SUB_LOOKUP's segments (copied); flag: EX_LOCATION is a URI. */
void ex_push(explainer *ex, ex_type t, const char *text, const char *text2);
void ex_push_merge(explainer *ex, const merge_strategy *ms);
void ex_push_sub_lookup(explainer *ex, const hv *segments);
void ex_push_segment(explainer *ex, const hv *segment);
void ex_push_location(explainer *ex, const char *path, const char *original, bool is_uri);
void ex_push_provider(explainer *ex, const char *name, const char *config_path, const char *module);
void ex_pop(explainer *ex);
/* While on (calls nest), values recorded are wrapped as Sensitive so that no explanation form
 * prints them in clear: used for keys whose lookup_options convert them to Sensitive. */
void ex_redact(explainer *ex, bool on);
void ex_found(explainer *ex, const hv *key, hv *value);      /* value borrowed (incref'd) */
void ex_found_str(explainer *ex, const char *key, hv *value);
void ex_found_in_defaults(explainer *ex, const char *key, hv *value);
void ex_not_found(explainer *ex, const hv *key);
void ex_not_found_str(explainer *ex, const char *key);
void ex_location_not_found(explainer *ex);
void ex_result(explainer *ex, hv *value);
void ex_text(explainer *ex, const char *text);
void ex_merge_source(explainer *ex, const char *source);
void ex_module_event(explainer *ex, const char *module, ex_event ev);
/* Puppet's text form (`--explain`). Returns a malloc'ed string. */
char *ex_render_text(const explainer *ex);
/* The tree as a value (`--explain --render-as json`), new reference. */
hv *ex_to_value(const explainer *ex);

#endif
