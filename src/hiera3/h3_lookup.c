/* h3_lookup.c - Hiera.new and Backend.lookup (see hiera3.c for the flow): the backends in
 * order as an outer hierarchy, the answers merged or resolved; the object made through
 * h3_config.c with Backend.lookup as the nested lookup that interpolation's hiera() and alias()
 * call back. */
#include "hiera3/hiera3_int.h"
#include "base/rubyver.h"
#include "formats/render.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ Backend.resolve_answer */

/* [answer].flatten.uniq.compact */
static bool flatten_into(h3 *h, hv *out, hv *seen, const hv *v, int depth, herr *err)
{
    if (hv_is(v, HV_ARRAY)) {
        if (depth > H3_MAX_VALUE_DEPTH) {
            h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
            return false;
        }
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (!flatten_into(h, out, seen, hv_array_get(v, i), depth + 1, err))
                return false;
        return true;
    }
    if (hv_hash_get(seen, v))
        return true;
    hv_hash_set(seen, hv_incref((hv *)v), hv_true());
    if (!hv_is(v, HV_UNDEF))
        hv_array_push(out, hv_incref((hv *)v));
    return true;
}

static hv *resolve_array(h3 *h, const hv *answer, herr *err)
{
    hv *out = hv_array(), *seen = hv_hash();
    bool ok = flatten_into(h, out, seen, answer, 0, err);
    hv_decref(seen);
    if (!ok) {
        hv_decref(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------------ Backend.lookup */

static const char *strategy_name(h3_strategy s)
{
    return s == H3_ARRAY ? "array" : s == H3_HASH ? "hash" : "priority";
}

static bool inst_ready(h3 *h, h3_inst *in, herr *err)
{
    if (in->created)
        return true;
    herr e = {0};
    in->state = in->ops->create(h, &e);
    if (herr_isset(&e)) {
        herr_move(err, &e);
        return false;
    }
    in->created = true;
    return true;
}

h3_result h3_backend_lookup(h3 *h, const char *key, const hv *dflt, const hv *scope, const hv *order_override,
                            const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    static const h3_resolution priority = {H3_PRIORITY, false, NULL, NULL};
    *out = NULL;
    if (!res)
        res = &priority;
    if (h->depth > H3_STACK_BUDGET) {
        h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
        return H3_ERROR;
    }
    h3_ctx local = {0};
    if (!ctx)
        ctx = &local;
    /* order_override ||= context[:order_override]; context[:order_override] ||= order_override */
    if (!order_override)
        order_override = ctx->order_override;
    if (!ctx->order_override)
        ctx->order_override = order_override;
    h3_strategy strategy = res->has_merge ? H3_HASH : res->strategy;

    hv *segs = h3_split_key(key, strlen(key));
    if (!segs) {
        h3_raise(h, err, H3E_LOOKUP, "ArgumentError", "Syntax error in key: %s", key);
        return H3_ERROR;
    }
    if (hv_array_len(segs) > 1 && strategy != H3_PRIORITY) {
        h3_raise(h, err, H3E_LOOKUP, "ArgumentError",
                 "Resolution type :%s is illegal when accessing values using dotted keys. Offending key was '%s'",
                 strategy_name(strategy), key);
        hv_decref(segs);
        return H3_ERROR;
    }
    hv *k0 = hv_array_len(segs) ? hv_incref(hv_array_get(segs, 0)) : hv_undef();

    bool found = false;
    hv *answer = NULL;
    h3_result rc = H3_FOUND;
    for (size_t i = 0; i < h->ninsts; i++) {
        h3_inst *in = h3_canonical_inst(h, i);
        if (!inst_ready(h, in, err)) {
            rc = H3_ERROR;
            break;
        }
        hv *nv = NULL;
        h3_result r = in->ops->lookup(h, in->state, k0, scope, order_override, res, ctx, &nv, err);
        if (r == H3_ERROR) {
            rc = H3_ERROR;
            break;
        }
        if (r == H3_NOT_FOUND)
            continue;
        if (hv_array_len(segs) > 1) {
            hv *sub = NULL;
            r = h3_qualified_lookup(h, segs, 1, nv, key, &sub, err);
            hv_decref(nv);
            if (r == H3_ERROR) {
                rc = H3_ERROR;
                break;
            }
            if (r == H3_NOT_FOUND)
                continue;
            nv = sub;
        }
        found = true;
        if (strategy == H3_ARRAY) {
            if (!hv_is(nv, HV_ARRAY) && !hv_is(nv, HV_STRING)) {
                h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Array and got %s",
                         key, ruby_class_name(nv));
                hv_decref(nv);
                rc = H3_ERROR;
                break;
            }
            if (!answer)
                answer = hv_array();
            hv_array_push(answer, nv);
        } else if (strategy == H3_HASH) {
            if (!hv_is(nv, HV_HASH)) {
                h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Hash and got %s",
                         key, ruby_class_name(nv));
                hv_decref(nv);
                rc = H3_ERROR;
                break;
            }
            if (!answer)
                answer = hv_hash();
            answer = h3_merge_answer(h, nv, answer, res, err);
            if (!answer) {
                rc = H3_ERROR;
                break;
            }
        } else {
            hv_decref(answer);
            answer = nv;
            break;
        }
    }
    hv_decref(k0);
    hv_decref(segs);
    if (rc == H3_ERROR) {
        hv_decref(answer);
        return H3_ERROR;
    }
    if (answer && strategy == H3_ARRAY) {
        hv *r = resolve_array(h, answer, err);
        hv_decref(answer);
        if (!r)
            return H3_ERROR;
        answer = r;
    }
    if (!found && hv_is(dflt, HV_STRING)) {
        hv_decref(answer);
        answer = h3_interpolate_ctx(h, dflt, scope, ctx, err); /* Ruby quirk: a String default IS interpolated */
        if (!answer)
            return H3_ERROR;
    }
    if (!found) {
        if (!answer || hv_is(answer, HV_UNDEF)) {
            hv_decref(answer);
            *out = dflt ? hv_incref((hv *)dflt) : NULL;
        } else {
            *out = answer;
        }
        return H3_NOT_FOUND;
    }
    *out = answer ? answer : hv_undef();
    return H3_FOUND;
}

h3_result h3_lookup(h3 *h, const char *key, const hv *dflt, const hv *scope, const hv *order_override,
                    const h3_resolution *res, hv **out, herr *err)
{
    /* Hiera#lookup -> Backend.lookup with a fresh context {:recurse_guard => nil} */
    h3_ctx ctx = {0};
    h->depth = 0;
    h->nested = 0;
    h->cfg_ctx = NULL;
    h->errclass = H3E_LOOKUP;
    h->rbclass = NULL;
    ruby_ver was = rubyver_enter(h->ruby33 ? RUBY_33 : RUBY_31);
    h3_result r = h3_backend_lookup(h, key ? key : "", dflt, scope, order_override, res, &ctx, out, err);
    rubyver_leave(was);
    return r;
}

/* ------------------------------------------------------------------ Hiera.new */

h3 *h3_new_file(const char *path, const char **rbclass, herr *err)
{
    return h3_config_new_file(path, h3_backend_lookup, rbclass, err);
}

h3 *h3_new_hash(const hv *config, const char **rbclass, herr *err)
{
    return h3_config_new_hash(config, h3_backend_lookup, rbclass, err);
}
