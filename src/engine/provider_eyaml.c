/* provider_eyaml.c - the eyaml_lookup_key data provider (providers.h): hiera-eyaml's lookup_key
 * function as Puppet runs it. The data files are YAML; a key's value is decrypted where it holds
 * ENC[...] blocks (crypto/eyaml.c, each block once per cache) and interpolated; hash keys are
 * interpolated, never decrypted; arrays element by element. For a caller who may not see secrets
 * (hiera_options.redact_encrypted) a block is not decrypted at all: it reads as a Sensitive. */
#include "engine/providers.h"

#include "crypto/eyaml.h"
#include "engine/engine.h"

/* eyaml_lookup_key's decrypt_value. */
lr eyaml_key_value(const provider_call *c, hv *v, hv **out, herr *err)
{
    switch (hv_kind_of(v)) {
    case HV_STRING: {
        hv *plain = NULL;
        if (c->I->h->redact_encrypted && eyaml_is_encrypted(hv_str_ptr(v), hv_str_len(v))) {
            /* a caller who may not see secrets: the block is not even decrypted (the Sensitive holds
             * the encrypted text, never shown: a comparison sees a block that changed) */
            *out = hv_sensitive_new(hv_incref(v));
            return LR_FOUND;
        }
        if (eyaml_is_encrypted(hv_str_ptr(v), hv_str_len(v))) {
            herr e = {0};
            size_t n = 0;
            eyaml_set_debian13(cache_eyaml(c->I->h->cache), c->I->h->version == HIERA_PUPPET_8);
            char *text = eyaml_decrypt_text(cache_eyaml(c->I->h->cache), hv_str_ptr(v), hv_str_len(v), c->options, &n, &e);
            if (!text) {
                if (eyaml_last_error_class(cache_eyaml(c->I->h->cache)) == EYAML_ERR_LOAD) {
                    /* a LoadError (an encryption scheme without its plugin) is not rescued */
                    herr_move(err, &e);
                    err->kind = HERR_ERROR;
                    return LR_ERROR;
                }
                herr_set(err, HERR_LOOKUP,
                         "hiera-eyaml backend error decrypting %s when looking up %s in %s. Error was %s", hv_str_ptr(v),
                         c->key, c->location, e.msg ? e.msg : "");
                herr_clear(&e);
                return LR_ERROR;
            }
            plain = hv_str_take(text, n);
        } else {
            plain = hv_incref(v);
        }
        lr r = interpolate(c->I, plain, true, out, err);
        hv_decref(plain);
        return r;
    }
    case HV_HASH: {
        hv *res = hv_hash_sized(hv_hash_len(v));
        hv_set_line(res, hv_line(v));
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            hv *k = NULL, *val = NULL;
            if (interpolate(c->I, hv_hash_key_at(v, i), true, &k, err) != LR_FOUND ||
                eyaml_key_value(c, hv_hash_val_at(v, i), &val, err) != LR_FOUND) {
                hv_decref(k);
                hv_decref(res);
                return LR_ERROR;
            }
            hv_hash_set(res, k, val);
        }
        *out = res;
        return LR_FOUND;
    }
    case HV_ARRAY: {
        hv *res = hv_array_sized(hv_array_len(v));
        hv_set_line(res, hv_line(v));
        for (size_t i = 0; i < hv_array_len(v); i++) {
            hv *e = NULL;
            if (eyaml_key_value(c, hv_array_get(v, i), &e, err) != LR_FOUND) {
                hv_decref(res);
                return LR_ERROR;
            }
            hv_array_push(res, e);
        }
        *out = res;
        return LR_FOUND;
    }
    default:
        *out = hv_incref(v);
        return LR_FOUND;
    }
}
