/* h3_interp.c - Hiera 3's interpolation (hiera/interpolate.rb): Hiera::Util.split_key, the
 * recursion guard, qualified lookups into values (Backend.qualified_lookup), the %{...}
 * interpolation of data and of config entries, and parse_answer (see hiera3.c for the flow). */
#include "hiera3/hiera3_int.h"
#include "base/rubyver.h"
#include "formats/render.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ Hiera::Util.split_key */

hv *h3_split_key(const char *key, size_t len)
{
    /* key.split(/(?:"([^"]+)"|'([^']+)'|([^'".]+))/) must give "", seg, ".", seg, ..., seg:
     * segments are "quoted" or 'quoted' (non-empty) or runs without quotes and dots, joined by
     * single dots. */
    hv *segs = hv_array();
    size_t i = 0;
    if (len == 0)
        return segs; /* Ruby quirk: split_key('') is '' and the lookup key becomes nil */
    for (;;) {
        size_t start, end;
        if (key[i] == '"' || key[i] == '\'') {
            char q = key[i];
            const char *close = memchr(key + i + 1, q, len - i - 1);
            if (!close || close == key + i + 1)
                goto syntax;
            start = i + 1;
            end = (size_t)(close - key);
            i = end + 1;
        } else {
            start = i;
            while (i < len && key[i] != '"' && key[i] != '\'' && key[i] != '.')
                i++;
            if (i == start)
                goto syntax;
            end = i;
        }
        hv_array_push(segs, hv_strn(key + start, end - start));
        if (i == len)
            return segs;
        if (key[i] != '.' || i + 1 == len)
            goto syntax;
        i++;
    }
syntax:
    hv_decref(segs);
    return NULL;
}

/* ------------------------------------------------------------------ Hiera::RecursiveGuard */

struct h3_guard {
    hv *seen; /* array of strings */
};

static bool guard_check_push(h3 *h, h3_guard *g, const char *var, size_t len, herr *err)
{
    for (size_t i = 0; i < hv_array_len(g->seen); i++) {
        const hv *s = hv_array_get(g->seen, i);
        if (hv_str_len(s) == len && memcmp(hv_str_ptr(s), var, len) == 0) {
            sbuf b = {0};
            for (size_t j = 0; j < hv_array_len(g->seen); j++) {
                if (j)
                    sb_adds(&b, ", ");
                const hv *e = hv_array_get(g->seen, j);
                sb_addn(&b, hv_str_ptr(e), hv_str_len(e));
            }
            h3_raise(h, err, H3E_INTERP, "Hiera::InterpolationLoop", "Lookup recursion detected in [%s]", sb_str(&b));
            sb_free(&b);
            return false;
        }
    }
    hv_array_push(g->seen, hv_strn(var, len));
    return true;
}

static void guard_pop(h3_guard *g)
{
    size_t n = hv_array_len(g->seen);
    if (n)
        hv_array_truncate(g->seen, n - 1);
}

/* ------------------------------------------------------------------ qualified_lookup */

/* segment =~ /^[0-9]+$/ (any line of it all digits) */
static bool numeric_segment(const hv *seg)
{
    const char *s = hv_str_ptr(seg);
    size_t n = hv_str_len(seg);
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j > i && (j == n || s[j] == '\n'))
            return true;
        while (j < n && s[j] != '\n')
            j++;
        i = j + 1;
    }
    return false;
}

/* String#to_i of a segment (leading digits; 0 when none), saturated */
static long long seg_to_i(const hv *seg)
{
    const char *s = hv_str_ptr(seg);
    size_t n = hv_str_len(seg), i = 0;
    while (i < n && is_strip((unsigned char)s[i]) && s[i])
        i++;
    long long r = 0;
    for (; i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '_' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9' && r)); i++) {
        if (s[i] == '_')
            continue;
        if (r > (LLONG_MAX - 9) / 10)
            return LLONG_MAX;
        r = r * 10 + (s[i] - '0');
    }
    return r;
}

/* Backend.qualified_lookup(segments, value, full_key): digs segs (from index `from`) into value.
 * H3_NOT_FOUND is Ruby's throw :no_such_key. */
h3_result h3_qualified_lookup(h3 *h, const hv *segs, size_t from, const hv *value, const char *full_key, hv **out,
                              herr *err)
{
    char *suffix = full_key ? xasprintf(" from key '%s'", full_key) : xstrdup("");
    const hv *v = value;
    h3_result r = H3_FOUND;
    for (size_t i = from; i < hv_array_len(segs); i++) {
        const hv *seg = hv_array_get(segs, i);
        if (!v || hv_is(v, HV_UNDEF)) {
            r = H3_NOT_FOUND;
            break;
        }
        if (numeric_segment(seg)) {
            long long idx = seg_to_i(seg);
            if (!hv_is(v, HV_ARRAY)) {
                h3_raise(h, err, H3E_LOOKUP, "Exception",
                         "Hiera type mismatch: Got %s when Array was expected to access value using '%lld'%s",
                         ruby_class_name(v), idx, suffix);
                r = H3_ERROR;
                break;
            }
            if ((unsigned long long)idx >= hv_array_len(v)) {
                r = H3_NOT_FOUND;
                break;
            }
            v = hv_array_get(v, (size_t)idx);
            continue;
        }
        if (hv_is(v, HV_HASH)) {
            const hv *next = hv_hash_get(v, seg);
            if (!next) {
                r = H3_NOT_FOUND;
                break;
            }
            v = next;
            continue;
        }
        if (hv_is(v, HV_INT) || hv_is(v, HV_BIGINT) || hv_is(v, HV_SYMBOL)) {
            /* Ruby quirk: these respond to [] and get as far as include? */
            char *ins = h3_inspect_dup(v);
            {
            char *nm = ruby_no_method("include?", ins, ruby_class_name(v));
            h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "%s", nm);
            free(nm);
        }
            free(ins);
            r = H3_ERROR;
            break;
        }
        h3_raise(h, err, H3E_LOOKUP, "Exception",
                 "Hiera type mismatch: Got %s when a hash-like object was expected to access value using '%s'%s",
                 ruby_class_name(v), hv_str_ptr(seg), suffix);
        r = H3_ERROR;
        break;
    }
    free(suffix);
    if (r == H3_FOUND)
        *out = hv_incref((hv *)v);
    return r;
}

/* ------------------------------------------------------------------ Hiera::Interpolate */

enum { M_NONE, M_SCOPE, M_HIERA, M_LITERAL, M_ALIAS };

/* RX_INTERPOLATION = /%\{([^\}]*)\}/ from byte `from`: the match is [*ms, *me). */
static bool find_interp(const char *s, size_t n, size_t from, size_t *ms, size_t *me)
{
    for (size_t i = from; i + 1 < n; i++) {
        if (s[i] != '%' || s[i + 1] != '{')
            continue;
        const char *close = memchr(s + i + 2, '}', n - i - 2);
        if (!close)
            return false;
        *ms = i;
        *me = (size_t)(close - s) + 1;
        return true;
    }
    return false;
}

/* RX_ONLY_INTERPOLATION = /^%\{([^\}]*)\}$/: some line is exactly one %{...} */
static bool only_interpolation(const char *s, size_t n)
{
    size_t i = 0;
    while (i <= n) {
        size_t eol = i;
        while (eol < n && s[eol] != '\n')
            eol++;
        if (eol - i >= 3 && s[i] == '%' && s[i + 1] == '{' && s[eol - 1] == '}' &&
            !memchr(s + i + 2, '}', eol - i - 3))
            return true;
        i = eol + 1;
    }
    return false;
}

/* EMPTY_INTERPOLATIONS[var.strip] */
static bool empty_interpolation(const char *s, size_t n)
{
    while (n && is_strip((unsigned char)*s))
        s++, n--;
    while (n && is_strip((unsigned char)s[n - 1]))
        n--;
    static const char *const empties[] = {"", "::", "\"\"", "''", "\"::\"", "'::'"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++)
        if (strlen(empties[i]) == n && memcmp(empties[i], s, n) == 0)
            return true;
    return false;
}

/* RX_METHOD_AND_ARG = /^(\w+)\(([^)]*)\)$/ (line anchors: the first line that starts a match) */
static bool match_method(const char *s, size_t n, size_t *m_len, size_t *m_start, size_t *a_start, size_t *a_len)
{
    size_t p = 0;
    while (p <= n) {
        size_t q = p;
        while (q < n && is_word((unsigned char)s[q]))
            q++;
        if (q > p && q < n && s[q] == '(') {
            const char *close = memchr(s + q + 1, ')', n - q - 1);
            if (close) {
                size_t t = (size_t)(close - s);
                if (t + 1 == n || s[t + 1] == '\n') {
                    *m_start = p;
                    *m_len = q - p;
                    *a_start = q + 1;
                    *a_len = t - q - 1;
                    return true;
                }
            }
        }
        const char *nl = memchr(s + p, '\n', n - p);
        if (!nl)
            break;
        p = (size_t)(nl - s) + 1;
    }
    return false;
}

/* Hiera::QUOTED_KEY = /^(?:"([^"]+)"|'([^']+)')$/ */
static bool match_quoted(const char *s, size_t n, size_t *k_start, size_t *k_len)
{
    size_t p = 0;
    while (p <= n) {
        if (p < n && (s[p] == '"' || s[p] == '\'')) {
            const char *close = p + 1 < n ? memchr(s + p + 1, s[p], n - p - 1) : NULL;
            if (close && close > s + p + 1) {
                size_t t = (size_t)(close - s);
                if (t + 1 == n || s[t + 1] == '\n') {
                    *k_start = p + 1;
                    *k_len = t - p - 1;
                    return true;
                }
            }
        }
        const char *nl = memchr(s + p, '\n', n - p);
        if (!nl)
            break;
        p = (size_t)(nl - s) + 1;
    }
    return false;
}

/* scope_interpolate: the variable (dotted) in the scope, then in the (always empty) extra data */
static int scope_interpolate(h3 *h, const char *match, size_t mlen, const char *key, size_t klen, const hv *scope,
                             hv **val, herr *err)
{
    hv *segs = h3_split_key(key, klen);
    if (!segs) {
        h3_raise(h, err, H3E_INTERP, "Hiera::InterpolationInvalidValue",
                 "Syntax error in interpolation expression: %.*s", (int)mlen, match);
        return -1;
    }
    char *full = xstrndup(key, klen);
    h3_result r = h3_qualified_lookup(h, segs, 0, scope, full, val, err);
    if (r == H3_NOT_FOUND) {
        hv *extra = hv_hash();
        r = h3_qualified_lookup(h, segs, 0, extra, full, val, err);
        hv_decref(extra);
        if (r == H3_NOT_FOUND) {
            *val = hv_undef();
            r = H3_FOUND;
        }
    }
    free(full);
    hv_decref(segs);
    return r == H3_ERROR ? -1 : 0;
}

/* do_interpolation(data, scope, extra, context): the value of data's first %{...}. *val is a
 * new reference, *method the interpolation method of that expression (M_NONE when data is not
 * a string with an expression). */
static int do_interpolation(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, hv **val, int *method, herr *err)
{
    size_t ms, me;
    if (!hv_is(data, HV_STRING) || !find_interp(hv_str_ptr(data), hv_str_len(data), 0, &ms, &me)) {
        *val = hv_incref((hv *)data);
        *method = M_NONE;
        return 0;
    }
    const char *s = hv_str_ptr(data);
    const char *var = s + ms + 2;
    size_t vlen = me - ms - 3;
    if (empty_interpolation(var, vlen)) { /* HI-494 */
        *val = hv_str("");
        *method = M_NONE;
        return 0;
    }
    if (h->depth > H3_STACK_BUDGET) {
        h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
        return -1;
    }
    if (!guard_check_push(h, ctx->guard, var, vlen, err))
        return -1;

    /* get_interpolation_method_and_key */
    int m = M_SCOPE;
    const char *key = var;
    size_t klen = vlen;
    size_t mlen, mstart, astart, alen;
    if (match_method(var, vlen, &mlen, &mstart, &astart, &alen)) {
        if (ctx->is_config)
            h3_warn(h, "Use of interpolation methods in hiera configuration file is deprecated");
        const char *mn = var + mstart;
        if (mlen == 5 && memcmp(mn, "hiera", 5) == 0)
            m = M_HIERA;
        else if (mlen == 5 && memcmp(mn, "scope", 5) == 0)
            m = M_SCOPE;
        else if (mlen == 7 && memcmp(mn, "literal", 7) == 0)
            m = M_LITERAL;
        else if (mlen == 5 && memcmp(mn, "alias", 5) == 0)
            m = M_ALIAS;
        else {
            h3_raise(h, err, H3E_INTERP, "Hiera::InterpolationInvalidValue", "Invalid interpolation method '%.*s'",
                     (int)mlen, mn);
            return -1;
        }
        size_t ks, kl;
        if (!match_quoted(var + astart, alen, &ks, &kl)) {
            h3_raise(h, err, H3E_INTERP, "Hiera::InterpolationInvalidValue",
                     "Argument to interpolation method '%.*s' must be quoted, got '%.*s'", (int)mlen, mn, (int)alen,
                     var + astart);
            return -1;
        }
        key = var + astart + ks;
        klen = kl;
    }

    hv *got = NULL;
    switch (m) {
    case M_SCOPE:
        if (scope_interpolate(h, s + ms, me - ms, key, klen, scope, &got, err) < 0)
            return -1;
        break;
    case M_HIERA:
    case M_ALIAS: {
        char *k = xstrndup(key, klen);
        h3_resolution pr = {H3_PRIORITY, false, NULL, NULL};
        if (++h->nested > H3_MAX_NESTED_LOOKUPS) {
            h3_raise(h, err, H3E_LOOKUP, NULL, "Lookup needs more than %d nested lookups at '%s' (interpolations that multiply)",
                     H3_MAX_NESTED_LOOKUPS, k);
            free(k);
            return -1;
        }
        h->depth += H3_LOOKUP_COST;
        h3_result r = h->nested_lookup(h, k, NULL, scope, ctx->order_override, &pr, ctx, &got, err);
        h->depth -= H3_LOOKUP_COST;
        free(k);
        if (r == H3_ERROR)
            return -1;
        if (!got)
            got = hv_undef();
        break;
    }
    case M_LITERAL:
        /* Ruby quirk: `return` out of the guard's block, so the expression is never popped: a
         * second literal('x') under the same guard is a "recursion". */
        *val = hv_strn(key, klen);
        *method = M_LITERAL;
        return 0;
    }
    /* the value found is interpolated once more: its FIRST expression replaces it */
    hv *inner;
    int m2;
    h->depth += H3_INTERP_COST;
    int rc = do_interpolation(h, got, scope, ctx, &inner, &m2, err);
    h->depth -= H3_INTERP_COST;
    hv_decref(got);
    if (rc < 0)
        return -1;
    guard_pop(ctx->guard);
    *val = inner;
    *method = m;
    return 0;
}

hv *h3_interpolate_ctx(h3 *h, const hv *data, const hv *scope, const h3_ctx *ctx, herr *err)
{
    if (!hv_is(data, HV_STRING))
        return hv_incref((hv *)data);
    const char *s = hv_str_ptr(data);
    size_t n = hv_str_len(data);
    size_t ms, me;
    if (!find_interp(s, n, 0, &ms, &me))
        return hv_incref((hv *)data);
    /* new_context = context.clone; new_context[:recurse_guard] ||= RecursiveGuard.new */
    h3_ctx nc = {0};
    if (ctx)
        nc = *ctx;
    h3_guard local = {NULL};
    if (!nc.guard) {
        local.seen = hv_array();
        nc.guard = &local;
    }
    hv *result = NULL;
    sbuf out = {0};
    size_t pos = 0;
    while (find_interp(s, n, pos, &ms, &me)) {
        sb_addn(&out, s + pos, ms - pos);
        hv *val;
        int method;
        hv *match = hv_strn(s + ms, me - ms);
        int rc = do_interpolation(h, match, scope, &nc, &val, &method, err);
        hv_decref(match);
        if (rc < 0)
            goto done;
        if (method == M_ALIAS && !hv_is(val, HV_STRING)) {
            if (only_interpolation(s, n)) {
                result = val; /* the alias' value itself, whatever surrounds it */
                goto done;
            }
            hv_decref(val);
            h3_raise(h, err, H3E_INTERP, "Hiera::InterpolationInvalidValue", "Cannot call alias in the string context");
            goto done;
        }
        h3_rb_to_s(&out, val);
        hv_decref(val);
        if (out.len > MAX_INTERPOLATED_SIZE) {
            h3_raise(h, err, H3E_INTERP, NULL, MAX_INTERPOLATED_MSG, s, MAX_INTERPOLATED_SIZE);
            goto done;
        }
        pos = me;
    }
    sb_addn(&out, s + pos, n - pos);
    result = hv_strn(sb_str(&out), out.len);
done:
    sb_free(&out);
    hv_decref(local.seen);
    return result;
}

hv *h3_interpolate(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, herr *err)
{
    return h3_interpolate_ctx(h, data, scope, ctx, err);
}

/* Backend.interpolate_config(entry, scope, override): hierarchy entries and datadirs. The
 * outermost call owns a context with a fresh guard; lookups made from it (hiera() in a
 * hierarchy) interpolate their own config entries in that same context. */
hv *h3_interpolate_config(h3 *h, const hv *entry, const hv *scope, const hv *override, herr *err)
{
    if (!h->cfg_ctx) {
        h3_guard g = {hv_array()};
        h3_ctx c = {&g, override, true};
        h->cfg_ctx = &c;
        hv *r = h3_interpolate_ctx(h, entry, scope, &c, err);
        h->cfg_ctx = NULL;
        hv_decref(g.seen);
        return r;
    }
    h3_ctx c = *h->cfg_ctx;
    c.order_override = override;
    return h3_interpolate_ctx(h, entry, scope, &c, err);
}

/* ------------------------------------------------------------------ parse_answer */

static hv *parse_answer_rec(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, int depth, herr *err)
{
    switch (hv_kind_of(data)) {
    case HV_BOOL:
    case HV_INT:
    case HV_BIGINT:
    case HV_FLOAT:
        return hv_incref((hv *)data);
    case HV_STRING:
        return h3_interpolate_ctx(h, data, scope, ctx, err);
    case HV_HASH: {
        if (depth > H3_MAX_VALUE_DEPTH) {
            h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
            return NULL;
        }
        hv *ans = hv_hash_sized(hv_hash_len(data));
        for (size_t i = 0; i < hv_hash_len(data); i++) {
            hv *k = h3_interpolate_ctx(h, hv_hash_key_at(data, i), scope, ctx, err);
            if (!k) {
                hv_decref(ans);
                return NULL;
            }
            hv *v = parse_answer_rec(h, hv_hash_val_at(data, i), scope, ctx, depth + 1, err);
            if (!v) {
                hv_decref(k);
                hv_decref(ans);
                return NULL;
            }
            hv_hash_set(ans, k, v);
        }
        return ans;
    }
    case HV_ARRAY: {
        if (depth > H3_MAX_VALUE_DEPTH) {
            h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
            return NULL;
        }
        hv *ans = hv_array_sized(hv_array_len(data));
        for (size_t i = 0; i < hv_array_len(data); i++) {
            hv *v = parse_answer_rec(h, hv_array_get(data, i), scope, ctx, depth + 1, err);
            if (!v) {
                hv_decref(ans);
                return NULL;
            }
            hv_array_push(ans, v);
        }
        return ans;
    }
    default:
        /* Ruby quirk: anything else (a Symbol value, nil) falls through parse_answer as nil */
        return hv_undef();
    }
}

hv *h3_parse_answer(h3 *h, const hv *data, const hv *scope, h3_ctx *ctx, herr *err)
{
    return parse_answer_rec(h, data, scope, ctx, 0, err);
}
