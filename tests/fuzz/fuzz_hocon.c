/* fuzz_hocon.c - libFuzzer harness: HOCON data (src/formats/hocon*.c, hocon_data), parse and resolve.
 * The document is named as a file in a private folder; includes of relative names are read from
 * the working directory (run the fuzzer from an empty one). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "formats/hocon.h"
#include "formats/render.h"
#include "base/value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *name;
    if (!name) {
        name = xasprintf("%s/data/fuzz.conf", fz_dir());
        fz_mkdirs("data/x");
    }
    herr e = {0};
    hv *v = hocon_parse((const char *)data, size, name, &e);
    if (v) {
        sbuf b = {0};
        render_json(&b, v, &e);
        herr_clear(&e);
        sb_free(&b);
        hv_decref(v);
    } else if (!e.msg) {
        abort();
    }
    herr_clear(&e);
    return 0;
}
