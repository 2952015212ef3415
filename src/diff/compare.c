/* compare.c - answers compared as hiera diff compares them, and the paths where they differ
 * (compare.h). */
#include "diff/compare.h"

#include "formats/render.h"

#include <math.h>
#include <string.h>

bool dv_same(const hv *a, const hv *b)
{
    if (a == b)
        return true;
    hv_kind ka = hv_kind_of(a);
    if (ka != hv_kind_of(b))
        return false;
    switch (ka) {
    case HV_UNDEF:
        return true;
    case HV_BOOL:
        return hv_bool_val(a) == hv_bool_val(b);
    case HV_INT:
        return hv_int_val(a) == hv_int_val(b);
    case HV_FLOAT: {
        double x = hv_float_val(a), y = hv_float_val(b);
        return x == y || (isnan(x) && isnan(y));
    }
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        return hv_str_len(a) == hv_str_len(b) && memcmp(hv_str_ptr(a), hv_str_ptr(b), hv_str_len(a)) == 0;
    case HV_ARRAY: {
        size_t n = hv_array_len(a);
        if (n != hv_array_len(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!dv_same(hv_array_get(a, i), hv_array_get(b, i)))
                return false;
        return true;
    }
    case HV_HASH: {
        size_t n = hv_hash_len(a);
        if (n != hv_hash_len(b))
            return false;
        for (size_t i = 0; i < n; i++) {
            const hv *other = hv_hash_get(b, hv_hash_key_at(a, i));
            if (!other || !dv_same(hv_hash_val_at(a, i), other))
                return false;
        }
        return true;
    }
    case HV_SENSITIVE:
        return dv_same(hv_sensitive_inner(a), hv_sensitive_inner(b));
    }
    return false;
}

uint64_t dv_code(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        return 0x9e3779b97f4a7c15ULL;
    case HV_BOOL:
        return hv_bool_val(v) ? 0x1234567ULL : 0x7654321ULL;
    case HV_INT:
        return hash_mix((uint64_t)hv_int_val(v) + 0x51ULL);
    case HV_FLOAT: {
        double d = hv_float_val(v);
        if (isnan(d))
            return 0x7ff8badULL;
        if (d == 0)
            d = 0; /* -0.0 is the same as 0.0 */
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return hash_mix(bits ^ 0xf10a7ULL);
    }
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        return hv_hash_code(v); /* the bytes and the kind */
    case HV_ARRAY: {
        uint64_t h = 0xa77a1ULL;
        for (size_t i = 0; i < hv_array_len(v); i++)
            h = hash_mix(h * 31 + dv_code(hv_array_get(v, i)));
        return h;
    }
    case HV_HASH: {
        uint64_t h = 0x4a54ULL;
        for (size_t i = 0; i < hv_hash_len(v); i++)
            h += hash_mix(hv_hash_code(hv_hash_key_at(v, i)) * 7 + dv_code(hv_hash_val_at(v, i))); /* any order */
        return h;
    }
    case HV_SENSITIVE:
        return hash_mix(dv_code(hv_sensitive_inner(v)) ^ 0x5e45ULL);
    }
    return 0;
}

/* ------------------------------------------------------------------ change paths */

static void add_change(hv *out, const hv *path, const char *kind, const hv *old, const hv *new_)
{
    hv *c = hv_hash_sized(4);
    hv_hash_sets(c, "path", hv_incref((hv *)path));
    hv_hash_sets(c, "kind", hv_str(kind));
    if (old)
        hv_hash_sets(c, "old", hv_incref((hv *)old));
    if (new_)
        hv_hash_sets(c, "new", hv_incref((hv *)new_));
    hv_array_push(out, c);
}

static hv *path_plus(const hv *path, const hv *seg)
{
    hv *p = hv_array_sized(hv_array_len(path) + 1);
    for (size_t i = 0; i < hv_array_len(path); i++)
        hv_array_push(p, hv_incref(hv_array_get(path, i)));
    hv_array_push(p, hv_incref((hv *)seg));
    return p;
}

static void changes(hv *out, const hv *path, const hv *old, const hv *new_)
{
    if (dv_same(old, new_))
        return;
    if (hv_is(old, HV_HASH) && hv_is(new_, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(old); i++) {
            const hv *k = hv_hash_key_at(old, i);
            hv *p = path_plus(path, k);
            const hv *other = hv_hash_get(new_, k);
            if (other)
                changes(out, p, hv_hash_val_at(old, i), other);
            else
                add_change(out, p, "removed", hv_hash_val_at(old, i), NULL);
            hv_decref(p);
        }
        for (size_t i = 0; i < hv_hash_len(new_); i++) {
            const hv *k = hv_hash_key_at(new_, i);
            if (hv_hash_get(old, k))
                continue;
            hv *p = path_plus(path, k);
            add_change(out, p, "added", NULL, hv_hash_val_at(new_, i));
            hv_decref(p);
        }
        return;
    }
    if (hv_is(old, HV_ARRAY) && hv_is(new_, HV_ARRAY) && hv_array_len(old) == hv_array_len(new_)) {
        for (size_t i = 0; i < hv_array_len(old); i++) {
            hv *idx = hv_int((int64_t)i);
            hv *p = path_plus(path, idx);
            changes(out, p, hv_array_get(old, i), hv_array_get(new_, i));
            hv_decref(p);
            hv_decref(idx);
        }
        return;
    }
    add_change(out, path, "changed", old, new_);
}

hv *dv_changes(const hv *old, const hv *new_)
{
    hv *out = hv_array();
    hv *root = hv_array();
    changes(out, root, old, new_);
    hv_decref(root);
    return out;
}

/* /^:?[+-]?[0-9]+$/: a segment Puppet's split_key would read as an integer */
static bool reads_as_integer(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == ':')
        i++;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    if (i == n)
        return false;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0; }

void dv_path_text(sbuf *b, const hv *path)
{
    for (size_t i = 0; i < hv_array_len(path); i++) {
        const hv *seg = hv_array_get(path, i);
        if (i)
            sb_addc(b, '.');
        switch (hv_kind_of(seg)) {
        case HV_INT:
            sb_addf(b, "%lld", (long long)hv_int_val(seg));
            break;
        case HV_STRING: {
            const char *s = hv_str_ptr(seg);
            size_t n = hv_str_len(seg);
            bool plain = n > 0 && !memchr(s, '.', n) && !memchr(s, '"', n) && !memchr(s, '\'', n) &&
                         !is_blank(s[0]) && !is_blank(s[n - 1]) && !reads_as_integer(s, n);
            if (plain) {
                sb_addn(b, s, n);
            } else {
                char q = memchr(s, '"', n) ? '\'' : '"';
                sb_addc(b, q);
                sb_addn(b, s, n);
                sb_addc(b, q);
            }
            break;
        }
        default: {
            /* a key of another kind (Puppet's dotted keys cannot name it): its inspect form */
            sbuf t = {0};
            ruby_inspect(&t, seg);
            sb_addc(b, '[');
            sb_addn(b, sb_str(&t), t.len);
            sb_addc(b, ']');
            sb_free(&t);
        }
        }
    }
}
