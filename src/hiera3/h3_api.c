/* h3_api.c - the Hiera 3 section of the public API (include/hiera.h: hiera3_new, hiera3_lookup,
 * ...) on top of the engine's h3_* functions. */
#include "hiera3/hiera3_int.h"
#include "base/diag.h"
#include "base/error.h"
#include "formats/render.h"

#include <string.h>

#include <stdlib.h>

/* ------------------------------------------------------------------ the public API */

static void to_public(h3 *h, hiera_error *out, herr *in)
{
    if (!out) {
        herr_clear(in);
        return;
    }
    hiera_error_clear(out);
    h3_errclass cls = h3_last_errclass(h);
    out->kind = cls == H3E_CONFIG ? HIERA_ERR_CONFIG : cls == H3E_INTERP ? HIERA_ERR_INTERPOLATION : HIERA_ERR_LOOKUP;
    out->message = in->msg;
    out->file = in->file;
    out->line = in->line;
    out->column = in->col;
    in->msg = in->file = NULL;
    herr_clear(in);
}

static void config_error(hiera_error *out, herr *in)
{
    if (!out) {
        herr_clear(in);
        return;
    }
    hiera_error_clear(out);
    out->kind = HIERA_ERR_CONFIG;
    out->message = in->msg;
    out->file = in->file;
    out->line = in->line;
    out->column = in->col;
    in->msg = in->file = NULL;
    herr_clear(in);
}

hiera3 *hiera3_new(const char *config_path, hiera_error *err)
{
    herr e = {0};
    h3 *h = h3_new_file(config_path, NULL, &e);
    if (!h)
        config_error(err, &e);
    return h;
}

hiera3 *hiera3_new_from_config(const hiera_value *config, hiera_error *err)
{
    herr e = {0};
    h3 *h = h3_new_hash(config, NULL, &e);
    if (!h)
        config_error(err, &e);
    return h;
}

void hiera3_free(hiera3 *h) { h3_free(h); }

void hiera3_set_logger(hiera3 *h, const char *name) { h3_set_logger(h, name ? name : ""); }

static void pub_log(h3_log_level level, const char *msg, void *ud)
{
    h3 *h = ud;
    if (h->pub_fn)
        h->pub_fn(level == H3_LOG_DEBUG ? HIERA3_LOG_DEBUG : HIERA3_LOG_WARN, msg, h->pub_ud);
}

void hiera3_set_log_callback(hiera3 *h, hiera3_log_fn fn, void *userdata)
{
    h->pub_fn = fn;
    h->pub_ud = userdata;
    h3_set_log_callback(h, pub_log, h);
}

hiera_status hiera3_lookup(hiera3 *h, const char *key, const hiera_value *default_value, const hiera_value *scope,
                           const char *order_override, const hiera3_resolution *resolution, hiera_value **value,
                           hiera_error *err)
{
    *value = NULL;
    h3_resolution res = {H3_PRIORITY, false, NULL, NULL};
    hv *opts = NULL;
    /* the caller's struct copied into this version's layout (fields past its size are zero; a
     * size of 0 reads the fields of version 0.2: all of today's) */
    hiera3_resolution given;
    if (resolution) {
        options_take(&given, sizeof given, resolution);
        resolution = &given;
    }
    if (resolution) {
        switch (resolution->kind) {
        case HIERA3_ARRAY: res.strategy = H3_ARRAY; break;
        case HIERA3_HASH: res.strategy = H3_HASH; break;
        case HIERA3_MERGE:
            res.strategy = H3_HASH;
            res.has_merge = true;
            res.behavior = resolution->behavior;
            opts = hv_hash();
            if (resolution->knockout_prefix)
                hv_hash_set(opts, hv_symbol("knockout_prefix", 15), hv_str(resolution->knockout_prefix));
            if (resolution->sort_merged_arrays)
                hv_hash_set(opts, hv_symbol("sort_merged_arrays", 18), hv_true());
            if (resolution->merge_hash_arrays)
                hv_hash_set(opts, hv_symbol("merge_hash_arrays", 17), hv_true());
            if (resolution->unpack_arrays)
                hv_hash_set(opts, hv_symbol("unpack_arrays", 13), hv_str(resolution->unpack_arrays));
            if (resolution->preserve_unmergeables >= 0)
                hv_hash_set(opts, hv_symbol("preserve_unmergeables", 21), hv_bool(resolution->preserve_unmergeables));
            res.merge_options = opts;
            break;
        default: break;
        }
    }
    hv *ov = order_override ? hv_str(order_override) : NULL;
    herr e = {0};
    hv *out = NULL;
    diag_sink saved; /* (a scope for a library the command could not load: base/lazylib.h) */
    diag_enter(diag_current(), &saved);
    h3_result r = h3_lookup(h, key, default_value, scope, ov, &res, &out, &e);
    const char *missing = diag_leave(&saved);
    hv_decref(ov);
    hv_decref(opts);
    if (__builtin_expect(missing != NULL, 0)) {
        hv_decref(out);
        herr_clear(&e);
        herr_public_missing(err, missing);
        return HIERA_ERROR;
    }
    if (r == H3_ERROR) {
        to_public(h, err, &e);
        return HIERA_ERROR;
    }
    if (!out)
        return HIERA_NOT_FOUND;
    *value = out;
    return HIERA_OK;
}

char *hiera3_render(const hiera_value *v, hiera3_format format, long width, hiera_error *err)
{
    hv *nil = v ? NULL : hv_undef();
    const hv *x = v ? v : nil;
    sbuf out = {0};
    herr e = {0};
    int rc = 0;
    if (format == HIERA3_FORMAT_JSON) {
        rc = h3_json_dump(&out, x, &e);
        sb_addc(&out, '\n');
    } else if (format == HIERA3_FORMAT_YAML) {
        rc = render_yaml(&out, x, &e);
        if (rc >= 0 && (!out.len || out.s[out.len - 1] != '\n'))
            sb_addc(&out, '\n');
    } else if (hv_is(x, HV_STRING)) {
        /* puts: a newline unless the string ends with one */
        sb_addn(&out, hv_str_ptr(x), hv_str_len(x));
        if (!out.len || out.s[out.len - 1] != '\n')
            sb_addc(&out, '\n');
    } else {
        h3_pp(&out, x, width > 0 ? width - 1 : h3_pp_width(-1));
    }
    hv_decref(nil);
    if (rc < 0) {
        sb_free(&out);
        herr_to_public(err, &e);
        return NULL;
    }
    sb_addc(&out, 0);
    return out.s;
}

const char *hiera3_version(void) { return H3_HIERA_VERSION; }
