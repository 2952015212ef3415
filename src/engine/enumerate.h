/* enumerate.h - what a node sees, listed (enumerate.c). */
#ifndef HIERA_ENGINE_ENUMERATE_H
#define HIERA_ENGINE_ENUMERATE_H

#include "engine/engine.h"

/* The node's layers in lookup order, as a new array of
 * {"layer": "global"|"environment"|"module", "module"?, "name", "config", "version",
 *  "levels": [{"name", "function", "kind", "locations": [{"original", "path"|"uri", "exists"}]}],
 *  "default_levels"?: [...], "error"?: {"message", "file"?, "line"?}}. */
hv *enum_hierarchy(hiera_ctx *h);

/* Every key the node can see (top-level keys of the data files its levels read; a module's only
 * within its namespace; lookup_options left out), as a new hash
 * {"keys": {key: [{"layer", "module"?, "level", "default_hierarchy"?, "file", "line"}...]},
 *  "lookup_options": [{"layer", "module"?, "level", "default_hierarchy"?, "file", "line"}...],
 *  "errors": [{"layer", "module"?, "level"?, "message", "file"?, "line"?}...]}; definitions in
 * lookup order (the first is the one a first-found lookup answers from). */
hv *enum_keys(hiera_ctx *h);

/* The same keys without their definitions (cheaper): a new hash {"keys": [key...] (in the order
 * first met), "errors": [...]}. */
hv *enum_key_names(hiera_ctx *h);

/* The key to give a lookup to reach the top-level data key `key` (a new string): the key itself,
 * or the key quoted whole when it holds a dot or a quote; NULL when no key reaches it (it holds
 * both quotes and needs quoting). */
char *enum_lookup_form(const char *key);

#endif
