/* convert.c - the Ruby conversions that String.new's formatting (format.c) and new() (new.c)
 * share: Float#to_i, Integer#to_f, Array.new(from), and an error from a message. */
#include "types/types_int.h"

#include <stdio.h>

#include "formats/render.h"

/* Float#to_i (truncation; large values become big integers). */
hv *pt_float_to_i(double d, char **msg)
{
    if (isnan(d) || isinf(d)) {
        sbuf m = {0};
        ruby_float_to_s(&m, d);
        *msg = sb_take(&m);
        return NULL;
    }
    double t = trunc(d);
    if (t >= -9223372036854775808.0 && t < 9223372036854775808.0)
        return hv_int((int64_t)t);
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", t);
    return hv_bigint(buf, strlen(buf));
}

double pt_int_to_float(const hv *v)
{
    return hv_is(v, HV_INT) ? (double)hv_int_val(v) : big_to_double(v);
}

bool pt_set_msg_err(herr *err, char *msg)
{
    herr_set(err, HERR_ERROR, "%s", msg);
    free(msg);
    return false;
}

/* Array.new(from): arrays as is, hashes as [key, value] pairs, strings as characters, an
 * Integer n as 0..n-1. */
#define MAX_ITERATE 1000000

hv *pt_array_from(const hv *from, herr *err)
{
    switch (hv_kind_of(from)) {
    case HV_ARRAY: return hv_incref((hv *)from);
    case HV_HASH: {
        hv *a = hv_array_sized(hv_hash_len(from));
        for (size_t i = 0; i < hv_hash_len(from); i++) {
            hv *pair = hv_array_sized(2);
            hv_array_push(pair, hv_incref(hv_hash_key_at(from, i)));
            hv_array_push(pair, hv_incref(hv_hash_val_at(from, i)));
            hv_array_push(a, pair);
        }
        return a;
    }
    case HV_STRING: {
        const char *s = hv_str_ptr(from);
        size_t n = hv_str_len(from);
        hv *a = hv_array();
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            size_t l = pt_utf8_next(s + i, n - i, &cp);
            hv_array_push(a, hv_strn(s + i, l));
            i += l;
        }
        return a;
    }
    case HV_INT: case HV_BIGINT: {
        int64_t n = hv_is(from, HV_INT) ? hv_int_val(from) : INT64_MAX;
        if (n > MAX_ITERATE) {
            herr_set(err, HERR_ERROR, "Iterating over %s values is not supported here", hv_is(from, HV_INT) ? "so many" : "that many");
            return NULL;
        }
        hv *a = hv_array_sized((size_t)(n > 0 ? n : 0));
        for (int64_t i = 0; i < n; i++)
            hv_array_push(a, hv_int(i));
        return a;
    }
    default:
        herr_set(err, HERR_ERROR, "Value cannot be iterated");
        return NULL;
    }
}
