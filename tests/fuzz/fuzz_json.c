/* fuzz_json.c - libFuzzer harness: JSON data (src/formats/json.c, json_data) and its renderings. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "formats/json.h"
#include "formats/render.h"
#include "base/value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    herr e = {0};
    hv *v = hjson_parse((const char *)data, size, "fuzz.json", &e);
    if (v) {
        sbuf b = {0};
        int rc = render_json(&b, v, &e);
        herr_clear(&e);
        /* what render_json printed must load again as an equal value (but where json 2.6's
         * generator itself prints what its parser refuses) */
        hv *back = rc == 0 ? hjson_parse(b.s, b.len, "back.json", &e) : NULL;
        if (rc == 0 && !fz_has_json_quirk(v) && (!back || (!fz_has_nan(v) && !hv_equal(v, back))))
            abort();
        hv_decref(back);
        herr_clear(&e);
        sb_free(&b);
        render_yaml(&b, v, &e);
        herr_clear(&e);
        sb_free(&b);
        hv_decref(v);
    } else if (!e.msg) {
        abort();
    }
    herr_clear(&e);
    return 0;
}
