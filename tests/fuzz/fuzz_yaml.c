/* fuzz_yaml.c - libFuzzer harness: the YAML loader (src/formats/psych.c) in both modes, then every text
 * form of what it loaded (src/formats/render.c) and the value operations of src/base/value.c.
 * Input: one byte choosing the mode (bit 0: Hiera 3's YAML.load, else Puppet's safe_load),
 * then the YAML text. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "formats/json.h"
#include "formats/render.h"
#include "base/value.h"
#include "formats/psych.h"

static void exercise(const hv *v)
{
    sbuf b = {0};
    herr e = {0};
    render_json(&b, v, &e);
    herr_clear(&e);
    sb_free(&b);
    render_yaml(&b, v, &e);
    herr_clear(&e);
    sb_free(&b);
    render_s(&b, v, &e);
    herr_clear(&e);
    sb_free(&b);
    ruby_inspect(&b, v);
    sb_free(&b);
    render_explain_value(&b, v, 2);
    sb_free(&b);
    free(hjson_debug(v));

    hv *shallow = hv_copy(v), *deep = hv_deep_copy(v);
    /* a deep copy is equal to its original, and hashes to the same code (NaN aside: it is not
     * equal to itself in Ruby either, so only check when the value is equal to itself) */
    if (!fz_has_nan(v) && (!hv_eql(v, deep) || hv_hash_code(v) != hv_hash_code(deep) || !hv_equal(v, shallow)))
        abort();
    hv_decref(shallow);
    hv_decref(deep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    yaml_mode mode = (data[0] & 1) ? YAML_HIERA3 : YAML_PUPPET;
    herr e = {0};
    hv *v = yaml_parse((const char *)data + 1, size - 1, "fuzz.yaml", mode, &e);
    if (v) {
        if (herr_isset(&e))
            abort(); /* a value and an error at once */
        exercise(v);
        hv_decref(v);
    } else if (!e.msg) {
        abort(); /* a failure must say why */
    }
    herr_clear(&e);
    return 0;
}
