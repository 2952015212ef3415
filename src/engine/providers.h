/* providers.h - the data provider functions a hierarchy level can name: one table (providers.c)
 * that says, for each, what kind of function it is, which files it reads, the Hiera 3/4 backend
 * that stands for it in an older hiera.yaml, and (lookup_key functions) how it turns the raw value
 * of a key into the answer. A new provider is a file with its functions and one entry in the
 * table. */
#ifndef HIERA_ENGINE_PROVIDERS_H
#define HIERA_ENGINE_PROVIDERS_H

#include "engine/cache.h"
#include "engine/config.h"
#include "engine/result.h"

/* What a lookup_key function is given for one key at one location. */
typedef struct {
    struct inv *I;         /* the invocation (interpolation, the context: engine.h) */
    const hv *options;     /* the level's options, interpolated (NULL: none) */
    const char *key;       /* the root key looked up */
    const char *location;  /* the location's path (for messages), or "" */
} provider_call;

typedef struct {
    const char *name;       /* as a hiera.yaml names it: "yaml_data" */
    fn_kind kind;           /* FN_DATA_HASH or FN_LOOKUP_KEY */
    file_format format;     /* the format of the files it reads */
    const char *backend;    /* the backend of a version 3 or 4 hiera.yaml that means it, or NULL */
    const char *extension;  /* that backend's file extension (".yaml") */
    /* lookup_key functions: the answer for the raw value of the key in the location's data (a
     * new reference in *out); NULL for data_hash functions, whose values the lookup interpolates
     * itself */
    lr (*key_value)(const provider_call *c, hv *raw, hv **out, herr *err);
} provider_def;

/* The function named name, or NULL when no such provider exists. */
const provider_def *provider_find(const char *name);
/* The provider a version 3 or 4 backend name stands for ("yaml" -> yaml_data), or NULL. */
const provider_def *provider_for_backend(const char *backend);
/* Whether a version 5 level (options being its own or its defaults', interpolated or not) gives
 * options to a data_hash function of the table (yaml_data, json_data, hocon_data): Puppet's take
 * Struct[{path=>String[1]}], so every lookup reaching one of the level's files fails. */
bool provider_options_refused(int version, const char *fname, const hv *options);

/* eyaml_lookup_key (provider_eyaml.c) */
lr eyaml_key_value(const provider_call *c, hv *raw, hv **out, herr *err);

#endif
