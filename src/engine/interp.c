/* interp.c - %{} interpolation, scope variables and dotted keys, as Puppet's Interpolation and
 * SubLookup modules do them (lib/puppet/pops/lookup/interpolation.rb, sub_lookup.rb). */
#include "base/diag.h"
#include "base/rubyver.h"
#include "engine/engine.h"
#include "engine/settings.h"
#include "engine/memo.h"
#include "engine/serverfacts.h"
#include "formats/render.h"
#include "base/rregex.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ split_key */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Tries the token regexp (\s*"[^"]+"\s*|\s*'[^']+'\s*|[^'".]+) at position p; returns the end of
 * the match or 0 when nothing matches there. */
static size_t token_at(const char *s, size_t len, size_t p)
{
    for (int q = 0; q < 2; q++) {
        char quote = q == 0 ? '"' : '\'';
        size_t i = p;
        while (i < len && is_space(s[i]))
            i++;
        if (i < len && s[i] == quote) {
            size_t j = i + 1;
            while (j < len && s[j] != quote)
                j++;
            if (j < len && j > i + 1) {
                j++;
                while (j < len && is_space(s[j]))
                    j++;
                return j;
            }
        }
    }
    size_t i = p;
    while (i < len && s[i] != '\'' && s[i] != '"' && s[i] != '.')
        i++;
    return i > p ? i : 0;
}

/* /^(:?[+-]?[0-9]+)$/ then to_i (the ':?' is Puppet's, so ":5" is the integer 0) */
static hv *integer_segment(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == ':')
        i++;
    size_t num = i;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t digits = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    if (i == digits || i != n)
        return NULL;
    if (num > 0)
        return hv_int(0); /* ":5".to_i */
    bool neg = s[num] == '-';
    const char *d = s + digits;
    size_t dn = n - digits;
    while (dn > 1 && *d == '0') {
        d++;
        dn--;
    }
    if (dn < 19) { /* fits: read the digits here (d is not a C string: strtoll would read past it) */
        long long v = 0;
        for (size_t k = 0; k < dn; k++)
            v = v * 10 + (d[k] - '0');
        return hv_int(neg ? -v : v);
    }
    sbuf b = {0};
    if (neg && !(dn == 1 && *d == '0'))
        sb_addc(&b, '-');
    sb_addn(&b, d, dn);
    hv *r;
    if (dn == 19 && memcmp(d, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0) /* (d is not a C string) */
        r = hv_int(strtoll(sb_str(&b), NULL, 10));
    else
        r = hv_bigint(b.s, b.len);
    sb_free(&b);
    return r;
}

hv *split_key(const char *key, size_t len)
{
    bool special = false, plain = len > 0;
    for (size_t i = 0; i < len; i++) {
        char c = key[i];
        if (c == '\'' || c == '"' || c == '.')
            special = true;
        /* plain: dotted segments, none empty, without quotes, blanks or NULs */
        if (c == '\'' || c == '"' || is_space(c) || c == 0 || (c == '.' && (i == 0 || i + 1 == len || key[i + 1] == '.')))
            plain = false;
    }
    hv *out = hv_array();
    if (!special) {
        hv_array_push(out, hv_strn(key, len));
        return out;
    }
    if (plain) {
        /* what the split below makes of such a key: each segment as it is, or its integer */
        for (size_t start = 0; start < len;) {
            const char *dot = memchr(key + start, '.', len - start);
            size_t end = dot ? (size_t)(dot - key) : len;
            hv *v = integer_segment(key + start, end - start);
            hv_array_push(out, v ? v : hv_strn(key + start, end - start));
            start = end + 1;
        }
        return out;
    }
    /* String#split with a capturing regexp: pieces between matches and the matches themselves */
    hv *pieces = hv_array();
    size_t last = 0, p = 0;
    while (p < len) {
        size_t end = token_at(key, len, p);
        if (!end) {
            p++;
            continue;
        }
        hv_array_push(pieces, hv_strn(key + last, p - last));
        hv_array_push(pieces, hv_strn(key + p, end - p));
        last = p = end;
    }
    hv_array_push(pieces, hv_strn(key + last, len - last));
    while (hv_array_len(pieces) && hv_str_len(hv_array_get(pieces, hv_array_len(pieces) - 1)) == 0)
        hv_array_truncate(pieces, hv_array_len(pieces) - 1);

    bool ok = hv_array_len(pieces) > 0 && hv_str_len(hv_array_get(pieces, 0)) == 0;
    size_t count = ok ? hv_array_len(pieces) - 1 : 0;
    if (ok && count == 0)
        ok = false;
    size_t kept = 0;
    for (size_t i = 1; ok && i < hv_array_len(pieces); i++) {
        const hv *seg = hv_array_get(pieces, i);
        if (hv_str_len(seg) == 1 && hv_str_ptr(seg)[0] == '.')
            continue;
        kept++;
        /* strip, unquote, integers */
        const char *s = hv_str_ptr(seg);
        size_t n = hv_str_len(seg);
        while (n && (is_space(*s) || *s == 0)) {
            s++;
            n--;
        }
        while (n && (is_space(s[n - 1]) || s[n - 1] == 0))
            n--;
        hv *v;
        if (n && (s[0] == '"' || s[0] == '\''))
            v = hv_strn(s + 1, n >= 2 ? n - 2 : 0);
        else if (!(v = integer_segment(s, n)))
            v = hv_strn(s, n);
        hv_array_push(out, v);
    }
    if (ok && kept * 2 != count + 1)
        ok = false;
    hv_decref(pieces);
    if (!ok) {
        hv_decref(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------------ sub_lookup */

static void seg_text(sbuf *b, const hv *seg)
{
    if (hv_is(seg, HV_STRING))
        sb_addn(b, hv_str_ptr(seg), hv_str_len(seg));
    else
        ruby_to_s(b, seg);
}

lr sub_lookup(inv *I, const char *key, const hv *segments, size_t from, hv *value, hv **out, herr *err)
{
    explainer *ex = I->h->ex;
    if (ex) {
        hv *segs = hv_array();
        for (size_t i = from; i < hv_array_len(segments); i++)
            hv_array_push(segs, hv_incref(hv_array_get(segments, i)));
        ex_push_sub_lookup(ex, segs);
        hv_decref(segs);
    }
    hv *cur = hv_incref(value);
    lr r = LR_FOUND;
    for (size_t i = from; i < hv_array_len(segments); i++) {
        const hv *seg = hv_array_get(segments, i);
        if (ex)
            ex_push_segment(ex, seg);
        if (hv_is(cur, HV_UNDEF)) {
            if (ex)
                ex_not_found(ex, seg);
            r = LR_NOT_FOUND;
        } else if (hv_is(seg, HV_INT) && hv_is(cur, HV_ARRAY)) {
            int64_t ix = hv_int_val(seg);
            if (ix < 0 || (uint64_t)ix >= hv_array_len(cur)) {
                if (ex)
                    ex_not_found(ex, seg);
                r = LR_NOT_FOUND;
            } else {
                hv *next = hv_incref(hv_array_get(cur, (size_t)ix));
                hv_decref(cur);
                cur = next;
            }
        } else if (hv_is(cur, HV_HASH)) {
            hv *next = hv_hash_get(cur, seg);
            if (!next) {
                if (ex)
                    ex_not_found(ex, seg);
                r = LR_NOT_FOUND;
            } else {
                hv_incref(next);
                hv_decref(cur);
                cur = next;
            }
        } else if (hv_is(cur, HV_INT) || hv_is(cur, HV_BIGINT) || hv_is(cur, HV_SYMBOL)) {
            /* responds to [] but has no include?: Ruby's NoMethodError */
            sbuf b = {0};
            ruby_inspect(&b, cur);
            char *m = ruby_no_method("include?", sb_str(&b), ruby_class_name(cur));
            herr_set(err, HERR_ERROR, "%s", m);
            free(m);
            sb_free(&b);
            r = LR_ERROR;
        } else {
            sbuf b = {0};
            seg_text(&b, seg);
            herr_set(err, HERR_LOOKUP,
                     "Data Provider type mismatch: Got %s when a hash-like object was expected to access value using '%s' from key '%s'",
                     ruby_class_name(cur), sb_str(&b), key);
            sb_free(&b);
            r = LR_ERROR;
        }
        if (r == LR_FOUND && ex)
            ex_found(ex, seg, cur);
        if (ex)
            ex_pop(ex);
        if (r != LR_FOUND)
            break;
    }
    if (ex)
        ex_pop(ex);
    if (r == LR_FOUND)
        *out = cur;
    else
        hv_decref(cur);
    return r;
}

/* ------------------------------------------------------------------ scope */

/* Puppet 8's server facts as top-scope variables: each fact, and server_facts (the facts and
 * the environment). The warnings ServerFacts.load gives are given. */
static hv *server_scope_vars(hiera_ctx *h)
{
    hv *warnings = NULL;
    hv *facts = server_facts_local(&warnings);
    for (size_t i = 0; i < hv_array_len(warnings); i++)
        diag_warn("server-facts", NULL, 0, 0, "%s", hv_str_ptr(hv_array_get(warnings, i)));
    hv_decref(warnings);
    hv *vars = hv_hash();
    for (size_t i = 0; i < hv_hash_len(facts); i++)
        hv_hash_set(vars, hv_incref((hv *)hv_hash_key_at(facts, i)), hv_incref(hv_hash_val_at(facts, i)));
    hv_hash_sets(facts, "environment", hv_str(h->env_name ? h->env_name : "production"));
    hv_hash_sets(vars, "server_facts", facts);
    return vars;
}

/* The names Hiera::Scope#[] answers itself (not '::calling_class': an ordinary variable). */
static bool hiera3_scope_name(const char *name)
{
    return name[0] == 'c' &&
           (!strcmp(name, "calling_class") || !strcmp(name, "calling_class_path") || !strcmp(name, "calling_module"));
}

/* A variable of the scope: the mapped_paths local first (unless the name is "::"-qualified). */
static hv *scope_get(inv *I, const char *name, bool *exists)
{
    if (I->h->hiera3_scope && hiera3_scope_name(name)) {
        /* Hiera::Scope#[]: the class of the scope (find_hostclass: main's name, '', at top
         * scope) and the top scope's module_name (''), both given as nil; never a variable of
         * that name, never undefined */
        *exists = true;
        return hv_undef();
    }
    bool top = strncmp(name, "::", 2) == 0;
    if (top)
        name += 2;
    else if (I->local_scope) {
        hv *v = hv_hash_gets(I->local_scope, name);
        if (v) {
            *exists = true;
            return v;
        }
    }
    hv *v = hv_hash_gets(I->h->scope, name);
    if (!v && I->h->version == HIERA_PUPPET_8 && (!strcmp(name, "server_facts") || server_fact_name(name))) {
        /* Puppet 8's lookup adds the server facts (Node#add_server_facts): made when first read,
         * a fact of the same name having kept its place */
        if (!I->h->server_vars)
            I->h->server_vars = server_scope_vars(I->h);
        v = hv_hash_gets(I->h->server_vars, name);
    }
    if (!v && I->h->environment && !strncmp(name, "settings::", 10)) {
        /* the settings class's variables (Scope#merge_settings), made when first read */
        if (!I->h->settings_vars) {
            herr ignore = {0};
            I->h->settings_vars = settings_scope_vars(I->h->environment, &ignore);
            herr_clear(&ignore);
            if (!I->h->settings_vars)
                I->h->settings_vars = hv_hash();
        }
        v = hv_hash_gets(I->h->settings_vars, name);
    }
    *exists = v != NULL;
    return v;
}

/* Scope#variable_not_found for a variable the scope does not have: nothing when Puppet's strict
 * setting is off, a warning (once per name) when it is "warning", an error when it is "error"
 * (Puppet 8, in a version 5 location: a warning that compilation continues).
 * module_name, caller_module_name and numeric names always exist; a qualified name reports the
 * class that is missing (Scope#handle_not_found; strict_variables changes none of this here). */
static lr undefined_variable(inv *I, const char *name, herr *err)
{
    hiera_ctx *h = I->h;
    if (!h->strict || !strcmp(name, "module_name") || !strcmp(name, "caller_module_name"))
        return LR_FOUND;
    bool numeric = *name && (name[0] != '0' || !name[1]);
    for (const char *p = name; *p && numeric; p++)
        numeric = *p >= '0' && *p <= '9';
    if (numeric)
        return LR_FOUND;
    char *shown = NULL, *reason = NULL;
    const char *q = strstr(name, "::");
    if (q) {
        const char *fqn = q == name ? name + 2 : name;
        const char *leaf = NULL;
        for (const char *p = strstr(fqn, "::"); p; p = strstr(p + 2, "::"))
            leaf = p;
        if (leaf && !(leaf - fqn == 8 && !strncmp(fqn, "settings", 8))) {
            shown = xstrdup(fqn);
            reason = xasprintf("class %.*s could not be found", (int)(leaf - fqn), fqn);
        } else {
            shown = xjoin("::", fqn, NULL);
        }
    } else {
        shown = xstrdup(name);
    }
    lr r = LR_FOUND;
    if (h->strict == 2 && !h->shield_undefined) {
        herr_set(err, HERR_ERROR, "Undefined variable '%s'; %s", shown, reason ? reason : "");
        r = LR_ERROR;
    } else {
        /* Puppet.warn_once: one warning per name, whichever of the two texts came first */
        if (!h->warned_vars)
            h->warned_vars = hv_hash();
        if (!hv_hash_gets(h->warned_vars, shown)) {
            hv_hash_sets(h->warned_vars, shown, hv_true());
            if (h->strict == 2) /* Puppet 8 shields a version 5 location (avoid_hiera_interpolation_errors) */
                diag_warn("undefined-variable", NULL, 0, 0, "Interpolation failed with '%s', but compilation continuing; %s",
                          shown, reason ? reason : "");
            else
                diag_warn("undefined-variable", NULL, 0, 0, "Undefined variable '%s'; %s", shown, reason ? reason : "");
        }
    }
    free(shown);
    free(reason);
    return r;
}

/* scope_lookup with the key already split (segs: root then sub-keys). */
static lr scope_lookup_segs(inv *I, const char *key, const hv *segs, hv **out, herr *err)
{
    explainer *ex = I->h->ex;
    const hv *root = hv_array_get(segs, 0);
    char buf[128];
    const char *rootname;
    char *owned = NULL;
    if (hv_is(root, HV_STRING) && hv_str_len(root) < sizeof buf) {
        memcpy(buf, hv_str_ptr(root), hv_str_len(root) + 1);
        rootname = buf;
    } else {
        sbuf b = {0};
        ruby_to_s(&b, root);
        rootname = owned = sb_take(&b);
    }
    if (ex)
        ex_push(ex, EX_SCOPE, "Global Scope", NULL);
    bool exists = false;
    hv *val = scope_get(I, rootname, &exists);
    if (ex) {
        if (exists)
            ex_found_str(ex, rootname, val);
        ex_pop(ex);
    }
    if (!exists && undefined_variable(I, rootname, err) == LR_ERROR) {
        free(owned);
        return LR_ERROR;
    }
    free(owned);
    lr r = LR_FOUND;
    hv *result = hv_incref(val ? val : hv_undef());
    if (!hv_is(result, HV_UNDEF) && hv_array_len(segs) > 1) {
        hv *found = NULL;
        r = sub_lookup(I, key, segs, 1, result, &found, err);
        hv_decref(result);
        if (r == LR_ERROR)
            return LR_ERROR;
        result = r == LR_FOUND ? found : hv_undef();
        r = LR_FOUND;
    }
    *out = result;
    return r;
}

lr scope_lookup(inv *I, const char *key, const char *subject, hv **out, herr *err)
{
    hv *segs = split_key(key, strlen(key));
    if (!segs) {
        herr_set(err, HERR_LOOKUP, "Syntax error in string: %s", subject);
        return LR_ERROR;
    }
    lr r = scope_lookup_segs(I, key, segs, out, err);
    hv_decref(segs);
    return r;
}

/* ------------------------------------------------------------------ interpolation */

static void fail_issue(inv *I, herr *err, const char *msg)
{
    if (I->config && I->config->path)
        herr_set(err, HERR_LOOKUP_ISSUE, "%s (file: %s)", msg, I->config->path);
    else
        herr_set(err, HERR_LOOKUP_ISSUE, "%s", msg);
    if (I->config)
        herr_at(err, I->config->path, 0, 0);
}

static bool is_word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* get_method_and_data: /^(\w+)\((?:["]([^"]+)["]|[']([^']+)['])\)$/ (Ruby's ^ and $ are line
 * anchors). Returns true for the method form with the method name and argument. */
static bool method_form(const char *e, size_t n, char **method, char **arg)
{
    for (size_t start = 0; start <= n; start++) {
        if (start > 0 && e[start - 1] != '\n')
            continue;
        size_t i = start;
        while (i < n && is_word_char((unsigned char)e[i]))
            i++;
        if (i == start || i >= n || e[i] != '(')
            continue;
        size_t mend = i;
        i++;
        if (i >= n || (e[i] != '"' && e[i] != '\''))
            continue;
        char q = e[i++];
        size_t abeg = i;
        while (i < n && e[i] != q)
            i++;
        if (i >= n || i == abeg)
            continue;
        size_t aend = i++;
        if (i >= n || e[i] != ')')
            continue;
        i++;
        if (i != n && e[i] != '\n')
            continue;
        *method = xstrndup(e + start, mend - start);
        *arg = xstrndup(e + abeg, aend - abeg);
        return true;
    }
    return false;
}

static bool empty_interpolation(const char *e, size_t n)
{
    static const char *empties[] = {"", "::", "\"\"", "''", "\"::\"", "'::'"};
    for (size_t i = 0; i < sizeof empties / sizeof *empties; i++)
        if (strlen(empties[i]) == n && memcmp(empties[i], e, n) == 0)
            return true;
    return false;
}

interp_kind interp_parse_expr(const char *e, size_t n, char **arg)
{
    if (empty_interpolation(e, n)) {
        *arg = xstrdup("");
        return INTERP_EMPTY;
    }
    char *method = NULL;
    if (!method_form(e, n, &method, arg)) {
        *arg = xstrndup(e, n);
        return INTERP_SCOPE;
    }
    interp_kind kind = !strcmp(method, "lookup") || !strcmp(method, "hiera") ? INTERP_LOOKUP
                       : !strcmp(method, "alias")                            ? INTERP_ALIAS
                       : !strcmp(method, "literal")                          ? INTERP_LITERAL
                       : !strcmp(method, "scope")                            ? INTERP_SCOPE
                                                                             : INTERP_UNKNOWN;
    if (kind == INTERP_UNKNOWN) {
        free(*arg);
        *arg = method; /* the unknown method's name, for the message */
    } else {
        free(method);
    }
    return kind;
}

/* Names of interp_kind as the parsed entries keep them */
enum { X_EMPTY = INTERP_EMPTY, X_SCOPE = INTERP_SCOPE, X_LOOKUP = INTERP_LOOKUP, X_ALIAS = INTERP_ALIAS,
       X_LITERAL = INTERP_LITERAL, X_UNKNOWN = INTERP_UNKNOWN };

/* What an expression between %{ and } means, parsed once per process (the memo is kept with
 * the file cache): [kind, argument, segments of a scope key or false, recursion guard name]. */
static const hv *parse_expr(inv *I, const char *e, size_t en)
{
    hv *parsed = cache_memo(I->h->cache);
    hv *known = hv_hash_getsn(parsed, e, en);
    if (known)
        return known;
    hv *entry = hv_array_sized(4);
    char *arg = NULL;
    int kind = (int)interp_parse_expr(e, en, &arg);
    hv_array_push(entry, hv_int(kind));
    hv_array_push(entry, hv_str(arg));
    hv *segs = kind == X_SCOPE ? split_key(arg, strlen(arg)) : NULL;
    hv_array_push(entry, segs ? segs : hv_false());
    char *guard = kind == X_SCOPE ? xasprintf("scope:%s", arg) : xstrdup(arg);
    hv_array_push(entry, hv_str(guard));
    /* whether the expression was in method form (a method form is refused in hiera.yaml) */
    hv_array_push(entry, hv_bool(kind != X_SCOPE || strncmp(e, arg, en) != 0 || strlen(arg) != en));
    free(guard);
    free(arg);
    hv_hash_set(parsed, hv_strn(e, en), entry);
    return entry;
}

int interp_next_expr(const char *s, size_t len, size_t *pos, size_t *obeg, const char **e, size_t *en)
{
    if (*pos >= len)
        return 0;
    const char *open = find_interp_open(s + *pos, len - *pos);
    if (!open)
        return 0;
    size_t ob = (size_t)(open - s);
    *obeg = ob;
    const char *close = memchr(s + ob + 2, '}', len - ob - 2);
    if (!close)
        return -1;
    size_t cend = (size_t)(close - s);
    *pos = cend + 1;
    const char *p = s + ob + 2;
    size_t n = cend - ob - 2;
    while (n && (is_space(*p) || *p == 0)) {
        p++;
        n--;
    }
    while (n && (is_space(p[n - 1]) || p[n - 1] == 0))
        n--;
    *e = p;
    *en = n;
    return 1;
}

/* The keys a value's interpolations look up (engine.h). */
void interp_lookup_roots(const hv *value, void (*fn)(const char *root, size_t len, void *data), void *data)
{
    switch (hv_kind_of(value)) {
    case HV_STRING: {
        const char *s = hv_str_ptr(value), *e;
        size_t len = hv_str_len(value), pos = 0, obeg, en;
        while (interp_next_expr(s, len, &pos, &obeg, &e, &en) > 0) {
            char *arg = NULL;
            interp_kind kind = interp_parse_expr(e, en, &arg);
            if (kind == INTERP_LOOKUP || kind == INTERP_ALIAS) {
                hv *segs = split_key(arg, strlen(arg));
                const hv *root = segs && hv_array_len(segs) ? hv_array_get(segs, 0) : NULL;
                if (hv_is(root, HV_STRING))
                    fn(hv_str_ptr(root), hv_str_len(root), data);
                else if (!segs)
                    fn(arg, strlen(arg), data);
                hv_decref(segs);
            }
            free(arg);
        }
        return;
    }
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(value); i++)
            interp_lookup_roots(hv_array_get(value, i), fn, data);
        return;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(value); i++) {
            interp_lookup_roots(hv_hash_key_at(value, i), fn, data);
            interp_lookup_roots(hv_hash_val_at(value, i), fn, data);
        }
        return;
    default:
        return;
    }
}

/* What a variable expression reads in a context: its part of a key (key_value's bytes), or
 * len -1 when it cannot stand in one. The scope of a context never changes, and the frozen cache
 * keeps parse_expr's entries, so each expression is read once per context (a node reads a few
 * variables in many values). */
struct var_read {
    uint64_t code; /* the entry's address, mixed; 0: empty slot (oa_regrow) */
    const hv *x;
    char *bytes;
    ptrdiff_t len;
    hv *value; /* what it read (a reference), NULL when the scope lookup failed */
    bool h3;   /* read through Hiera::Scope (calling_class... in a version 3 global layer) */
};

static const struct var_read *var_read(inv *I, const hv *x);

static lr interpolate_string(inv *I, hv *subject, bool allow_methods, hv **out, herr *err)
{
    const char *s = hv_str_ptr(subject);
    size_t len = hv_str_len(subject);
    explainer *ex = I->h->ex;
    if (ex)
        ex_push(ex, EX_INTERPOLATE, s, NULL);
    sbuf b = {0};
    size_t pos = 0, obeg, prev = 0;
    lr r = LR_FOUND;
    hv *alias_value = NULL;
    const char *e;
    size_t en;
    while (interp_next_expr(s, len, &pos, &obeg, &e, &en) > 0) {
        sb_addn(&b, s + prev, obeg - prev);
        prev = pos;
        const hv *x = parse_expr(I, e, en);
        int kind = (int)hv_int_val(hv_array_get(x, 0));
        const char *arg = hv_str_ptr(hv_array_get(x, 1));
        bool is_method = hv_bool_val(hv_array_get(x, 4));
        if (kind == X_EMPTY)
            continue;
        hv *value = NULL;
        bool plain = false; /* value needs no interpolation again */
        if (is_method && !allow_methods) {
            fail_issue(I, err, "Interpolation using method syntax is not allowed in this context");
            r = LR_ERROR;
        } else if (kind == X_ALIAS && !(obeg == 0 && pos == len)) {
            fail_issue(I, err, "'alias' interpolation is only permitted if the expression is equal to the entire string");
            r = LR_ERROR;
        } else if (kind == X_LOOKUP || kind == X_ALIAS) {
            r = I->h->hooks->lookup(I, arg, &value, err);
            if (r == LR_FOUND && kind == X_ALIAS) {
                alias_value = value;
                value = NULL;
            }
        } else if (kind == X_LITERAL) {
            value = hv_str(arg);
        } else if (kind == X_UNKNOWN) {
            char *msg = xasprintf("Unknown interpolation method '%s'", arg);
            fail_issue(I, err, msg);
            free(msg);
            r = LR_ERROR;
        } else {
            const hv *segs = hv_array_get(x, 2);
            if (!hv_is(segs, HV_ARRAY)) {
                herr_set(err, HERR_LOOKUP, "Syntax error in string: %s", s);
                r = LR_ERROR;
            } else {
                /* a frozen cache's context reads each variable once (var_read) */
                const struct var_read *known =
                    !ex && !I->local_scope && cache_is_frozen(I->h->cache) ? var_read(I, x) : NULL;
                if (known && known->value) {
                    value = hv_incref(known->value);
                    /* a plain scalar (key_value took it: a string without %{) comes back from
                     * interpolating it again as it is; the guard is only passed through */
                    plain = known->len >= 0 && I->h->hooks->pass(I, hv_str_ptr(hv_array_get(x, 3)));
                } else {
                    r = scope_lookup_segs(I, arg, segs, &value, err);
                }
            }
        }
        if (r == LR_FOUND && alias_value)
            break;
        if (r == LR_FOUND && value && !plain) {
            /* the value found is interpolated again, under the recursion guard */
            const char *guard = hv_str_ptr(hv_array_get(x, 3));
            if (I->h->hooks->enter(I, guard, err)) {
                hv *again = NULL;
                r = interpolate(I, value, allow_methods, &again, err);
                I->h->hooks->leave(I, err);
                if (r == LR_FOUND) {
                    hv_decref(value);
                    value = again;
                }
            } else {
                r = LR_ERROR;
            }
        }
        if (r != LR_FOUND) {
            hv_decref(value);
            break;
        }
        if (value && !hv_is(value, HV_UNDEF))
            ruby_to_s(&b, value);
        hv_decref(value);
        if (b.len > MAX_INTERPOLATED_SIZE) {
            herr_set(err, HERR_ERROR, MAX_INTERPOLATED_MSG, s, MAX_INTERPOLATED_SIZE);
            r = LR_ERROR;
            break;
        }
    }
    if (ex)
        ex_pop(ex);
    if (r != LR_FOUND) {
        sb_free(&b);
        return r;
    }
    if (alias_value) {
        sb_free(&b);
        *out = alias_value;
        return LR_FOUND;
    }
    if (pos < len)
        sb_addn(&b, s + pos, len - pos);
    hv *res = hv_strn(sb_str(&b), b.len);
    hv_set_line(res, hv_line(subject));
    sb_free(&b);
    *out = res;
    return LR_FOUND;
}

lr interpolate(inv *I, hv *value, bool allow_methods, hv **out, herr *err)
{
    /* Puppet always builds new containers; that is only visible when explaining (where values
     * are shown after merges edited them) and needed when tracing provenance */
    bool fresh = I->h->ex != NULL || I->h->prov != NULL;
    switch (hv_kind_of(value)) {
    case HV_STRING:
        if (!find_interp_open(hv_str_ptr(value), hv_str_len(value))) {
            *out = hv_incref(value);
            return LR_FOUND;
        }
        return interpolate_string(I, value, allow_methods, out, err);
    case HV_ARRAY: {
        size_t n = hv_array_len(value);
        hv *res = NULL;
        for (size_t i = 0; i < n; i++) {
            hv *e = hv_array_get(value, i), *ie = NULL;
            lr r = interpolate(I, e, allow_methods, &ie, err);
            if (r != LR_FOUND) {
                hv_decref(res);
                return r;
            }
            if (!res && (ie != e || fresh)) {
                res = hv_array_sized(n);
                hv_set_line(res, hv_line(value));
                for (size_t j = 0; j < i; j++)
                    hv_array_push(res, hv_incref(hv_array_get(value, j)));
            }
            if (res)
                hv_array_push(res, ie);
            else
                hv_decref(ie);
        }
        *out = res ? res : hv_incref(value);
        return LR_FOUND;
    }
    case HV_HASH: {
        size_t n = hv_hash_len(value);
        hv *res = NULL;
        for (size_t i = 0; i < n; i++) {
            hv *k = hv_hash_key_at(value, i), *v = hv_hash_val_at(value, i), *ik = NULL, *iv = NULL;
            lr r = interpolate(I, k, allow_methods, &ik, err);
            if (r == LR_FOUND)
                r = interpolate(I, v, allow_methods, &iv, err);
            if (r != LR_FOUND) {
                hv_decref(ik);
                hv_decref(res);
                return r;
            }
            if (!res && (ik != k || iv != v || fresh)) {
                res = hv_hash_sized(n);
                hv_set_line(res, hv_line(value));
                for (size_t j = 0; j < i; j++)
                    hv_hash_set(res, hv_incref(hv_hash_key_at(value, j)), hv_incref(hv_hash_val_at(value, j)));
            }
            if (res) {
                hv_hash_set(res, ik, iv);
            } else {
                hv_decref(ik);
                hv_decref(iv);
            }
        }
        *out = res ? res : hv_incref(value);
        return LR_FOUND;
    }
    default:
        *out = hv_incref(value);
        return LR_FOUND;
    }
}

/* ------------------------------------------------------------------ remembered interpolations
 *
 * With a frozen cache, the interpolation of a data value that reads only scope variables
 * (facts, trusted, top-scope) and literals is a function of the value's address and of the
 * variables' values: remembered under both, it is found again for every node whose variables
 * have the same values. What it reads is listed once per value; a variable whose value is not a
 * plain scalar, or that holds %{ (interpolated again), makes the plain path run instead. */

/* The parsed expressions of value, in the order interpolate meets them, appended to deps;
 * false when one of them is not a scope variable, a literal or empty, or, with no_methods (in
 * hiera.yaml, which refuses them), is in method syntax. */
static bool collect_deps(inv *I, const hv *value, hv *deps, bool no_methods)
{
    switch (hv_kind_of(value)) {
    case HV_STRING: {
        const char *s = hv_str_ptr(value), *e;
        size_t len = hv_str_len(value), pos = 0, obeg, en;
        while (interp_next_expr(s, len, &pos, &obeg, &e, &en) > 0) {
            const hv *x = parse_expr(I, e, en);
            int kind = (int)hv_int_val(hv_array_get(x, 0));
            if (kind == X_EMPTY)
                continue;
            if ((kind != X_SCOPE && kind != X_LITERAL) || (kind == X_SCOPE && !hv_is(hv_array_get(x, 2), HV_ARRAY)) ||
                (no_methods && hv_bool_val(hv_array_get(x, 4))))
                return false;
            hv_array_push(deps, hv_incref((hv *)x));
        }
        return true;
    }
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(value); i++)
            if (!collect_deps(I, hv_array_get(value, i), deps, no_methods))
                return false;
        return true;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(value); i++)
            if (!collect_deps(I, hv_hash_key_at(value, i), deps, no_methods) ||
                !collect_deps(I, hv_hash_val_at(value, i), deps, no_methods))
                return false;
        return true;
    default:
        return true;
    }
}

/* Appends what a variable's value contributes to the key; false when it cannot stand in one. */
static bool key_value(sbuf *k, const hv *v)
{
    hv_kind kind = hv_kind_of(v);
    char tag = (char)('A' + kind);
    switch (kind) {
    case HV_UNDEF:
        sb_addn(k, &tag, 1);
        return true;
    case HV_BOOL: {
        char b = hv_bool_val(v) ? 't' : 'f';
        sb_addn(k, &tag, 1);
        sb_addn(k, &b, 1);
        return true;
    }
    case HV_INT: {
        int64_t i = hv_int_val(v);
        sb_addn(k, &tag, 1);
        sb_addn(k, (const char *)&i, sizeof i);
        return true;
    }
    case HV_FLOAT: {
        double d = hv_float_val(v);
        sb_addn(k, &tag, 1);
        sb_addn(k, (const char *)&d, sizeof d);
        return true;
    }
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL: {
        size_t n = hv_str_len(v);
        if (kind == HV_STRING && find_interp_open(hv_str_ptr(v), n))
            return false; /* interpolated again: more than its text */
        sb_addn(k, &tag, 1);
        sb_addn(k, (const char *)&n, sizeof n);
        sb_addn(k, hv_str_ptr(v), n);
        return true;
    }
    default:
        return false;
    }
}

static const struct var_read *var_read(inv *I, const hv *x)
{
    hiera_ctx *h = I->h;
    /* (the product's high bits, moved down: an address's low bits are alike) */
    uint64_t code = (((uint64_t)(uintptr_t)x * 0x9e3779b97f4a7c15ull) >> 24) | 1;
    /* calling_class, calling_class_path and calling_module read otherwise inside a version 3
     * global layer (scope_get): such a read has an entry of its own */
    bool h3 = false;
    if (h->hiera3_scope) {
        const hv *segs = hv_array_get(x, 2);
        const hv *root = hv_is(segs, HV_ARRAY) ? hv_array_get(segs, 0) : NULL;
        h3 = root && hv_is(root, HV_STRING) && hiera3_scope_name(hv_str_ptr(root));
    }
    size_t mask = h->vars_cap - 1;
    if (h->vars_cap)
        for (size_t i = (size_t)code & mask; h->vars[i].code; i = (i + 1) & mask)
            if (h->vars[i].x == x && h->vars[i].h3 == h3)
                return &h->vars[i];
    sbuf b = {0};
    herr ignore = {0};
    const char *arg = hv_str_ptr(hv_array_get(x, 1));
    hv *v = NULL;
    bool usable = true;
    if (hv_int_val(hv_array_get(x, 0)) == X_LITERAL)
        v = hv_str(arg);
    else if (scope_lookup_segs(I, arg, hv_array_get(x, 2), &v, &ignore) != LR_FOUND)
        usable = false;
    hv *value = usable ? v : NULL;
    usable = usable && key_value(&b, v);
    if (!value)
        hv_decref(v);
    herr_clear(&ignore);
    if (2 * (h->nvars + 1) > h->vars_cap) {
        size_t ncap = h->vars_cap ? 2 * h->vars_cap : 16;
        h->vars = oa_regrow(h->vars, h->vars_cap, ncap, sizeof *h->vars);
        h->vars_cap = ncap;
        mask = ncap - 1;
    }
    size_t i = (size_t)code & mask;
    while (h->vars[i].code)
        i = (i + 1) & mask;
    ptrdiff_t len = usable ? (ptrdiff_t)b.len : -1;
    h->vars[i] = (struct var_read){code, x, usable ? sb_take(&b) : NULL, len, value, h3};
    sb_free(&b);
    h->nvars++;
    return &h->vars[i];
}

void interp_ctx_free(hiera_ctx *h)
{
    for (size_t i = 0; i < h->vars_cap; i++) {
        free(h->vars[i].bytes);
        hv_decref(h->vars[i].value);
    }
    free(h->vars);
    sb_free(&h->vkey);
    h->vars = NULL;
    h->vars_cap = h->nvars = 0;
}

/* Appends to k, for each expression of deps in order, what it reads (the recursion guard
 * entered and left as interpolate does); false when that cannot stand for the result or an
 * error would come (the caller interpolates then, which reports it). */
static bool deps_key(inv *I, const hv *deps, sbuf *k)
{
    bool usable = true;
    for (size_t i = 0; i < hv_array_len(deps) && usable; i++) {
        const hv *x = hv_array_get(deps, i);
        const struct var_read *r = var_read(I, x);
        if (r->len < 0) {
            usable = false;
            break;
        }
        sb_addn(k, r->bytes, (size_t)r->len);
        usable = I->h->hooks->pass(I, hv_str_ptr(hv_array_get(x, 3)));
    }
    return usable;
}

/* A key buffer with room for most keys from the start. */
static void key_start(sbuf *k)
{
    k->cap = 256;
    k->s = xmalloc(k->cap);
    k->len = 0;
    k->s[0] = 0;
}

char *location_remembered(inv *I, memo *m, const char *s, bool glob, bool uri, sbuf *key)
{
    hiera_ctx *h = I->h;
    key->len = 0;
    if (!m || h->ex || I->local_scope)
        return NULL;
    size_t len = strlen(s);
    /* the expressions of the template, listed once per text */
    sbuf k;
    key_start(&k);
    sb_adds(&k, "D");
    sb_addn(&k, (const char *)&len, sizeof len); /* (the length first: keys cannot run into each other) */
    sb_addn(&k, s, len);
    hv *deps = memo_get(m, k.s, k.len);
    if (!deps) {
        deps = hv_array();
        hv *tmpl = hv_strn(s, len);
        bool ok = collect_deps(I, tmpl, deps, true);
        hv_decref(tmpl);
        if (!ok) {
            hv_decref(deps);
            deps = hv_false();
        }
        bool kept = memo_put(m, k.s, k.len, deps);
        hv_decref(deps);
        if (!kept) {
            sb_free(&k);
            return NULL; /* a full table: interpolated plainly */
        }
    }
    if (!hv_is(deps, HV_ARRAY)) {
        sb_free(&k);
        return NULL;
    }
    size_t counted = h->nested_lookups;
    k.s[0] = 'L';
    char flags[3] = {glob ? 'g' : '-', uri ? 'u' : '-', h->strict_paths ? 's' : '-'};
    sb_addn(&k, flags, sizeof flags);
    if (!deps_key(I, deps, &k)) {
        h->nested_lookups = counted;
        sb_free(&k);
        return NULL;
    }
    hv *known = memo_get(m, k.s, k.len);
    if (known) {
        sb_free(&k);
        return xstrndup(hv_str_ptr(known), hv_str_len(known));
    }
    h->nested_lookups = counted; /* the caller interpolates: it counts its own */
    *key = k;
    return NULL;
}

hv *templates_deps(inv *I, const char *const *t, size_t n)
{
    hv *deps = hv_array();
    for (size_t i = 0; i < n; i++) {
        hv *tmpl = hv_str(t[i]);
        bool ok = collect_deps(I, tmpl, deps, true);
        hv_decref(tmpl);
        if (!ok) {
            hv_decref(deps);
            return hv_false();
        }
    }
    return deps;
}

bool templates_key(inv *I, const hv *deps, sbuf *k)
{
    hiera_ctx *h = I->h;
    size_t counted = h->nested_lookups;
    if (!hv_is(deps, HV_ARRAY) || h->ex || I->local_scope || !deps_key(I, deps, k)) {
        h->nested_lookups = counted;
        return false;
    }
    return true;
}

/* For a string that is one alias expression and nothing else ("%{alias('k')}", what
 * interpolate_string accepts as an alias), the key k as a new string; else NULL. */
static hv *alias_only(inv *I, const hv *value)
{
    if (!hv_is(value, HV_STRING))
        return NULL;
    const char *s = hv_str_ptr(value), *e;
    size_t len = hv_str_len(value), pos = 0, obeg, en;
    if (interp_next_expr(s, len, &pos, &obeg, &e, &en) <= 0 || obeg != 0 || pos != len)
        return NULL;
    const hv *x = parse_expr(I, e, en);
    if (hv_int_val(hv_array_get(x, 0)) != X_ALIAS)
        return NULL;
    return hv_incref(hv_array_get(x, 1));
}

/* A value whose remembered interpolations are given up: tried this often, found in fewer than one
 * try in ODDS_GIVE_UP (a key, memo_get, a copy, memo_put and memo_intern each time, for nothing). */
#define ODDS_TRIES 64
#define ODDS_GIVE_UP 8

lr interpolate_remembered(inv *I, memo *m, hv *value, hv **deps_slot, interp_odds *odds, hv **out, herr *err)
{
    hiera_ctx *h = I->h;
    if (!m || h->ex || h->prov || I->local_scope ||
        (odds && odds->tried >= ODDS_TRIES && odds->found * ODDS_GIVE_UP < odds->tried))
        return interpolate(I, value, true, out, err);
    struct {
        char tag;
        const hv *value;
    } dkey;
    memset(&dkey, 0, sizeof dkey);
    dkey.tag = 'd';
    dkey.value = value;
    hv *deps = deps_slot ? *deps_slot : NULL;
    if (!deps)
        deps = memo_get(m, &dkey, sizeof dkey);
    if (!deps) {
        deps = alias_only(I, value);
        if (!deps) {
            deps = hv_array();
            if (!collect_deps(I, value, deps, false)) {
                hv_decref(deps);
                deps = hv_false();
            }
        }
        bool kept = memo_put(m, &dkey, sizeof dkey, deps);
        if (deps_slot) {
            *deps_slot = hv_incref(deps);
            kept = true;
        }
        hv_decref(deps);
        if (!kept)
            return interpolate(I, value, true, out, err); /* a full table: interpolated plainly */
    } else if (deps_slot && !*deps_slot) {
        *deps_slot = hv_incref(deps);
    }
    if (!hv_is(deps, HV_ARRAY)) {
        hv *res = NULL;
        /* "%{alias('k')}": k's value, as interpolate_string finds it (without reading the text
         * again); anything else that reads more than variables: interpolated */
        lr r = hv_is(deps, HV_STRING) ? h->hooks->lookup(I, hv_str_ptr(deps), &res, err) : interpolate(I, value, true, &res, err);
        if (r == LR_FOUND)
            *out = memo_intern(m, value, res);
        return r;
    }
    /* the key: the value, then what each expression reads (built in the context's buffer) */
    sbuf *k = &h->vkey;
    k->len = 0;
    size_t counted = h->nested_lookups;
    dkey.tag = 'v';
    sb_addn(k, (const char *)&dkey, sizeof dkey);
    bool usable = deps_key(I, deps, k);
    hv *known = usable ? memo_get(m, k->s, k->len) : NULL;
    if (odds && odds->tried < ODDS_TRIES) {
        odds->tried++;
        odds->found += known != NULL;
    }
    if (known) {
        *out = hv_incref(known);
        return LR_FOUND;
    }
    /* (interpolate may come back here for a nested lookup: the key is kept aside) */
    size_t klen = k->len;
    char *key = NULL;
    if (usable) {
        key = xmalloc(klen ? klen : 1);
        memcpy(key, k->s, klen);
    }
    h->nested_lookups = counted; /* interpolate counts its own */
    hv *res = NULL;
    lr r = interpolate(I, value, true, &res, err);
    if (r == LR_FOUND) {
        /* remembered under what it read (stable then), or else by its content */
        if (!usable || !memo_put(m, key, klen, res))
            res = memo_intern(m, value, res);
        *out = res;
    }
    free(key);
    return r;
}
