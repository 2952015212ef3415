/* providers.c - the table of data provider functions (providers.h). */
#include "engine/providers.h"

#include <string.h>

static const provider_def PROVIDERS[] = {
    {"yaml_data", FN_DATA_HASH, FMT_YAML},
    {"json_data", FN_DATA_HASH, FMT_JSON},
    {"hocon_data", FN_DATA_HASH, FMT_HOCON},
    {"eyaml_lookup_key", FN_LOOKUP_KEY, FMT_YAML},
};

const provider_def *provider_find(const char *name)
{
    for (size_t i = 0; i < sizeof PROVIDERS / sizeof *PROVIDERS; i++)
        if (strcmp(PROVIDERS[i].name, name) == 0)
            return &PROVIDERS[i];
    return NULL;
}
