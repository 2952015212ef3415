/* fuzz_ptype.c - libFuzzer harness: Puppet's type language (src/types): parsing (as
 * lookup_options/convert_to and as `--type` parse it), matching, mismatch messages, printing,
 * and new(Type, value). Input: the type's text, a newline, then a value as YAML. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "types/ptype.h"
#include "base/value.h"
#include "formats/psych.h"

static void use_type(ptype *t, const hv *v)
{
    ptype_match(t, v);
    free(ptype_mismatch(t, v, "Found value"));
    char *s = ptype_to_s(t);
    /* what Puppet prints for a type parses again */
    herr e = {0};
    ptype *again = ptype_parse(s, &e);
    ptype_free(again);
    herr_clear(&e);
    free(s);
}

static bool has_big_int(const hv *v, int depth)
{
    if (depth > 50)
        return true;
    if (hv_is(v, HV_BIGINT) || (hv_is(v, HV_INT) && (hv_int_val(v) > 10000 || hv_int_val(v) < -10000)))
        return true;
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (has_big_int(hv_array_get(v, i), depth + 1))
                return true;
    } else if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (has_big_int(hv_hash_key_at(v, i), depth + 1) || has_big_int(hv_hash_val_at(v, i), depth + 1))
                return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t tlen = nl ? (size_t)(nl - data) : size;
    char *text = xstrndup((const char *)data, tlen);
    herr e = {0};
    hv *v = NULL;
    if (nl)
        v = yaml_parse((const char *)nl + 1, size - tlen - 1, "value.yaml", YAML_PUPPET, &e);
    herr_clear(&e);
    if (!v)
        v = hv_str(text);

    ptype *t = ptype_parse(text, &e);
    if (t)
        use_type(t, v);
    else if (!e.msg)
        abort();
    herr_clear(&e);
    ptype_free(t);

    t = ptype_parse_cli(text, &e);
    if (t)
        use_type(t, v);
    herr_clear(&e);
    ptype_free(t);

    free(ptype_name_of_value(v));
    sbuf b = {0};
    puppet_string(&b, v);
    sb_free(&b);

    /* convert_to: "Type" and [Type, args...] (the args from the value when it is an array).
     * Array.new(n) iterates 0...n (up to a million, as new.c allows) and Puppet's mismatch
     * message then names every index: linear but slow, so big integers are kept out. */
    if (has_big_int(v, 0)) {
        hv_decref(v);
        free(text);
        return 0;
    }
    hv *spec = hv_strn(text, strlen(text));
    hv *r = ptype_convert(spec, v, &e);
    hv_decref(r);
    herr_clear(&e);
    hv_decref(spec);
    if (hv_is(v, HV_ARRAY) && hv_array_len(v) > 0) {
        spec = hv_array();
        hv_array_push(spec, hv_strn(text, strlen(text)));
        for (size_t i = 1; i < hv_array_len(v); i++)
            hv_array_push(spec, hv_incref(hv_array_get(v, i)));
        r = ptype_convert(spec, hv_array_get(v, 0), &e);
        hv_decref(r);
        herr_clear(&e);
        hv_decref(spec);
    }
    hv_decref(v);
    free(text);
    return 0;
}
