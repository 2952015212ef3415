/* provenance.h - which layer, hierarchy level and file each piece of a looked-up value came
 * from (the --provenance view of an explanation). */
#ifndef HIERA_PROVENANCE_H
#define HIERA_PROVENANCE_H

#include "base/util.h"
#include "base/value.h"

typedef struct prov_registry prov_registry;

prov_registry *prov_new(void);
void prov_free(prov_registry *p);

/* Registers every node of a value just found (and private to the lookup: freshly interpolated)
 * as coming from layer/level/file, found under a key on line key_line of that file (0: unknown);
 * the entries of its hashes are reported with their own keys' lines. Returns the value to use
 * from then on (a new reference): the same containers, with the true/false/nil singletons inside
 * replaced by private nodes so that they can be traced too. */
hv *prov_register(prov_registry *p, hv *value, const char *layer, const char *level, const char *file, uint32_t key_line);

/* The value of `key` printed one node per line, each with where it came from: layer, level, file
 * and line (malloc'ed). The line of a hash entry is its key's line in the file the entry came
 * from; the looked-up value's is the line of the key it was found under; an array element's its
 * own first line. */
char *prov_render_text(const prov_registry *p, const char *key, const hv *value);
/* The same as data: {"key", "value", "provenance": {layer, level, file, line | merged,
 * entries {k: node} | elements [node] | value}} (new reference). */
hv *prov_to_value(const prov_registry *p, const char *key, const hv *value);

#endif
