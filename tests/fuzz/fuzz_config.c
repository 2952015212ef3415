/* fuzz_config.c - libFuzzer harness: hiera.yaml loading and validation (src/engine/config.c, versions
 * 3, 4 and 5) through config_load on a file. Input: one byte choosing the layer (global,
 * environment, module), then the file's text. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const layer_kind layers[] = {LAYER_GLOBAL, LAYER_ENV, LAYER_MODULE};
    layer_kind layer = layers[data[0] % 3];
    char *path = fz_write("cfg/hiera.yaml", data + 1, size - 1);
    hiera_cache *cache = cache_new(); /* fresh: the file changes within one mtime tick */
    bool ignored = false;
    herr e = {0};
    hcfg *c = config_load(cache, path, layer, &ignored, &e);
    if (c) {
        if (herr_isset(&e))
            abort();
        config_find_line(c, "\\s+path:", 1);
        config_free(c);
    } else if (!ignored && !e.msg) {
        abort(); /* a refusal must say why */
    }
    herr_clear(&e);
    cache_free(cache);
    free(path);
    return 0;
}
