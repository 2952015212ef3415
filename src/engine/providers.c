/* providers.c - the table of data provider functions (providers.h). */
#include "engine/providers.h"

#include <string.h>

static const provider_def PROVIDERS[] = {
    {"yaml_data", FN_DATA_HASH, FMT_YAML, "yaml", ".yaml", NULL},
    {"json_data", FN_DATA_HASH, FMT_JSON, "json", ".json", NULL},
    {"hocon_data", FN_DATA_HASH, FMT_HOCON, "hocon", ".conf", NULL},
    {"eyaml_lookup_key", FN_LOOKUP_KEY, FMT_YAML, "eyaml", ".eyaml", eyaml_key_value},
};

const provider_def *provider_find(const char *name)
{
    for (size_t i = 0; i < sizeof PROVIDERS / sizeof *PROVIDERS; i++)
        if (strcmp(PROVIDERS[i].name, name) == 0)
            return &PROVIDERS[i];
    return NULL;
}

const provider_def *provider_for_backend(const char *backend)
{
    for (size_t i = 0; i < sizeof PROVIDERS / sizeof *PROVIDERS; i++)
        if (PROVIDERS[i].backend && strcmp(PROVIDERS[i].backend, backend) == 0)
            return &PROVIDERS[i];
    return NULL;
}

bool provider_options_refused(int version, const char *fname, const hv *options)
{
    if (version != 5 || !fname || !hv_is(options, HV_HASH) || hv_hash_len(options) == 0)
        return false;
    const provider_def *pd = provider_find(fname);
    return pd && pd->kind == FN_DATA_HASH;
}
