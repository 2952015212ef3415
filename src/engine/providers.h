/* providers.h - the data provider functions a hierarchy level can name (providers.c): one table
 * that says, for each, what kind of function it is and which files it reads. */
#ifndef HIERA_ENGINE_PROVIDERS_H
#define HIERA_ENGINE_PROVIDERS_H

#include "engine/cache.h"
#include "engine/config.h"

typedef struct {
    const char *name;   /* as a hiera.yaml names it: "yaml_data" */
    fn_kind kind;       /* FN_DATA_HASH or FN_LOOKUP_KEY */
    file_format format; /* the format of the files it reads */
} provider_def;

/* The function named name, or NULL when no such provider exists. */
const provider_def *provider_find(const char *name);

#endif
