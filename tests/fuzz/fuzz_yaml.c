/* fuzz_yaml.c - libFuzzer harness: the YAML loader (src/formats/psych.c) in its modes, then every text
 * form of what it loaded (src/formats/render.c), the value operations of src/base/value.c and
 * Puppet's sanitizing of facts (src/api/facts.c).
 * Input: one byte choosing the mode (bits 0-1: Puppet's safe_load of data, Hiera 3's YAML.load, a
 * --facts file, Puppet's YAML facts cache; bit 2: the cache read with plain_too), then the YAML
 * text. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "formats/json.h"
#include "formats/render.h"
#include "base/value.h"
#include "formats/psych.h"
#include "api/facts.h"

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
    static const yaml_mode modes[] = {YAML_PUPPET, YAML_HIERA3, YAML_PUPPET_FACTS, YAML_PUPPET_FACTS_CACHE};
    yaml_mode mode = modes[data[0] & 3];
    herr e = {0};
    bool object = false;
    hv *v = mode == YAML_PUPPET_FACTS_CACHE
                ? yaml_parse_facts_cache((const char *)data + 1, size - 1, "fuzz.yaml", (data[0] & 4) != 0, &object, &e)
                : yaml_parse((const char *)data + 1, size - 1, "fuzz.yaml", mode, &e);
    if (v) {
        if (herr_isset(&e))
            abort(); /* a value and an error at once */
        if (object && !hv_is(v, HV_HASH))
            abort(); /* a Puppet::Node::Facts is read as the hash of its members */
        exercise(v);
        if (hv_is(v, HV_HASH)) {
            hv *clean = facts_sanitize(v, &e);
            if (clean)
                exercise(clean);
            hv_decref(clean);
            herr_clear(&e);
        }
        hv_decref(v);
    } else if (!e.msg) {
        abort(); /* a failure must say why */
    }
    herr_clear(&e);
    return 0;
}
