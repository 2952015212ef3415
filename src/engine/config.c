/* config.c - hiera.yaml (versions 3, 4 and 5) loaded and validated as Puppet's HieraConfig does
 * (lib/puppet/pops/lookup/hiera_config.rb): the structure is type-checked with Puppet's own type
 * (so the messages are Puppet's), then the semantic checks raise LookupErrors naming the file. */
#include "engine/config.h"
#include "base/once.h"
#include "engine/providers.h"
#include "base/diag.h"
#include "base/fileio.h"
#include "base/pathname.h"
#include "types/ptype.h"
#include "formats/render.h"
#include "base/rregex.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const FUNCTION_KEYS[] = {"data_hash", "lookup_key", "data_dig", "hiera3_backend"};
static const char *const LOCATION_KEYS[] = {"path", "paths", "glob", "globs", "uri", "uris", "mapped_paths"};
#define NFUNC 4
#define NLOC 7

#define OPTION_NAME_T "Pattern[/\\A[A-Za-z](:?[0-9A-Za-z_-]*[0-9A-Za-z])?\\z/]"
#define HIERARCHY_T                                                                                        \
    "Array[Struct[{name=>String[1],Optional[options]=>Hash[" OPTION_NAME_T ",Data],"                      \
    "Optional[data_hash]=>String[1],Optional[lookup_key]=>String[1],Optional[hiera3_backend]=>String[1]," \
    "Optional[v4_data_hash]=>String[1],Optional[data_dig]=>String[1],Optional[path]=>String[1],"          \
    "Optional[paths]=>Array[String[1],1],Optional[glob]=>String[1],Optional[globs]=>Array[String[1],1],"  \
    "Optional[uri]=>String[1],Optional[uris]=>Array[String[1],1],"                                        \
    "Optional[mapped_paths]=>Array[String[1],3,3],Optional[datadir]=>String[1]}]]"
static const char *V5_TYPE =
    "Struct[{version=>Integer[5,5],"
    "Optional[defaults]=>Struct[{Optional[data_hash]=>String[1],Optional[lookup_key]=>String[1],"
    "Optional[data_dig]=>String[1],Optional[datadir]=>String[1],Optional[options]=>Hash[" OPTION_NAME_T ",Data]}],"
    "Optional[hierarchy]=>" HIERARCHY_T ",Optional[plan_hierarchy]=>" HIERARCHY_T
    ",Optional[default_hierarchy]=>" HIERARCHY_T "}]";
static const char *V4_TYPE =
    "Struct[{version=>Integer[4,4],Optional[datadir]=>String[1],"
    "Optional[hierarchy]=>Array[Struct[{backend=>String[1],name=>String[1],Optional[datadir]=>String[1],"
    "Optional[path]=>String[1],Optional[paths]=>Array[String[1]]}]]}]";

/* ------------------------------------------------------------------ helpers */

void config_level_free(hlevel *l)
{
    free(l->name);
    free(l->fname);
    free(l->datadir);
    for (size_t i = 0; i < l->nlocs; i++)
        free(l->locs[i]);
    free(l->locs);
    hv_decref(l->options);
    free(l->extension);
}

void config_free(hcfg *c)
{
    if (!c || --c->refs > 0)
        return;
    for (size_t i = 0; i < c->nlevels; i++)
        config_level_free(&c->levels[i]);
    for (size_t i = 0; i < c->ndlevels; i++)
        config_level_free(&c->dlevels[i]);
    free(c->levels);
    free(c->dlevels);
    free(c->path);
    free(c->root);
    herr_clear(&c->lazy_err);
    free(c->merge_behavior);
    hv_decref(c->deep_merge_options);
    hv_decref(c->raw);
    free(c);
}

static const char *str_or_null(const hv *v) { return hv_is(v, HV_STRING) ? hv_str_ptr(v) : NULL; }

/* Puppet::Util::Errors.error_location appended to a message */
static void fail_at(herr *err, const hcfg *c, int line, const char *fmt, ...) HIERA_PRINTF(4, 5);
static void fail_at(herr *err, const hcfg *c, int line, const char *fmt, ...)
{
    sbuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    if (c->path && line)
        sb_addf(&b, " (file: %s, line: %d)", c->path, line);
    else if (c->path)
        sb_addf(&b, " (file: %s)", c->path);
    else if (line)
        sb_addf(&b, " (line: %d)", line);
    herr_set(err, HERR_LOOKUP_ISSUE, "%s", sb_str(&b));
    herr_at(err, c->path, line, 0);
    sb_free(&b);
}

void config_undefined_variable(const hcfg *c, herr *err)
{
    static const char head[] = "Undefined variable '";
    if (!herr_isset(err) || !err->msg || strncmp(err->msg, head, sizeof head - 1))
        return;
    const char *name = err->msg + sizeof head - 1, *end = strchr(name, '\'');
    if (!end || end == name)
        return;
    char *var = xstrndup(name, (size_t)(end - name));
    char *re = xasprintf("%%\\{['\"]?%s['\"]?}", var);
    int line = config_find_line(c, re, 1);
    free(re);
    herr_clear(err);
    fail_at(err, c, line, "Undefined variable '%s'", var);
    free(var);
}

int config_find_line(const hcfg *c, const char *ruby_regexp, int start_line)
{
    if (!c->path)
        return 0;
    herr e = {0};
    rregex *re = rregex_new(ruby_regexp, strlen(ruby_regexp), &e);
    herr_clear(&e);
    if (!re)
        return 0;
    sbuf text = {0};
    file_read(c->path, &text, NULL, NULL); /* what could be read: nothing when it cannot be opened */
    int lineno = 0, found = 0;
    sbuf stripped = {0};
    for (size_t pos = 0; pos < text.len;) {
        /* the line with its "\n" */
        const char *line = text.s + pos, *nl = memchr(line, '\n', text.len - pos);
        size_t n = nl ? (size_t)(nl - line) + 1 : text.len - pos;
        pos += n;
        lineno++;
        if (lineno < start_line)
            continue;
        stripped.len = 0;
        char quote = 0;
        for (size_t i = 0; i < n; i++) {
            char ch = line[i];
            if (ch == '"' || ch == '\'') {
                if (quote == ch)
                    quote = 0;
                else if (!quote)
                    quote = ch;
            } else if (ch == '#') {
                /* Puppet breaks on every hash mark, quoted or not */
                break;
            }
            sb_addc(&stripped, ch);
        }
        if (rregex_search(re, sb_str(&stripped), stripped.len)) {
            found = lineno;
            break;
        }
    }
    sb_free(&text);
    sb_free(&stripped);
    rregex_free(re);
    return found;
}

/* Appends the regexp-source form of a name (unescaped, as Puppet interpolates it) */
static char *line_regexp(const char *fmt, const char *name) { return xasprintf(fmt, name); }

/* Puppet's "... defined more than once. First defined at (line: N)" location search */
static void duplicate_lines(const hcfg *c, const char *regexp, int *first, int *line)
{
    *first = config_find_line(c, regexp, 1);
    *line = *first ? config_find_line(c, regexp, *first + 1) : 0;
    if (!*line) {
        *line = *first;
        *first = 0;
    }
}

/* ---- a fast path for the common case: a version 5 config that certainly matches the schema.
 * Anything it is not sure of (nil values included) goes to the full type check, which alone
 * words the messages; it never accepts what the type would refuse (tests/unit/test_engine.c
 * holds it to the type over random configs). */

static bool nes(const hv *v) { return hv_is(v, HV_STRING) && hv_str_len(v) > 0; }

static bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* /\A[A-Za-z](:?[0-9A-Za-z_-]*[0-9A-Za-z])?\z/ */
static bool option_name_ok(const hv *k)
{
    if (!hv_is(k, HV_STRING) || hv_str_len(k) == 0)
        return false;
    const char *p = hv_str_ptr(k);
    size_t n = hv_str_len(k);
    if (!is_alpha(p[0]))
        return false;
    if (n == 1)
        return true;
    size_t i = 1;
    if (p[i] == ':')
        i++;
    if (i >= n || !is_alnum(p[n - 1]))
        return false;
    for (; i < n - 1; i++)
        if (!is_alnum(p[i]) && p[i] != '_' && p[i] != '-')
            return false;
    return true;
}

static bool data_ok(const hv *v, int depth)
{
    if (depth > 100)
        return false;
    switch (hv_kind_of(v)) {
    case HV_UNDEF: case HV_BOOL: case HV_INT: case HV_BIGINT: case HV_FLOAT: case HV_STRING:
        return true;
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (!data_ok(hv_array_get(v, i), depth + 1))
                return false;
        return true;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (!hv_is(hv_hash_key_at(v, i), HV_STRING) || !data_ok(hv_hash_val_at(v, i), depth + 1))
                return false;
        return true;
    default:
        return false;
    }
}

static bool options_ok(const hv *o)
{
    if (!hv_is(o, HV_HASH))
        return false;
    for (size_t i = 0; i < hv_hash_len(o); i++)
        if (!option_name_ok(hv_hash_key_at(o, i)) || !data_ok(hv_hash_val_at(o, i), 0))
            return false;
    return true;
}

static bool nes_list(const hv *v, size_t min, size_t max)
{
    if (!hv_is(v, HV_ARRAY) || hv_array_len(v) < min || hv_array_len(v) > max)
        return false;
    for (size_t i = 0; i < hv_array_len(v); i++)
        if (!nes(hv_array_get(v, i)))
            return false;
    return true;
}

static bool key_is(const hv *k, const char *name) { return hv_is(k, HV_STRING) && strcmp(hv_str_ptr(k), name) == 0; }

static bool v5_entry_ok(const hv *he)
{
    if (!hv_is(he, HV_HASH) || !nes(hv_hash_gets(he, "name")))
        return false;
    static const char *strings[] = {"name", "data_hash", "lookup_key", "hiera3_backend", "v4_data_hash",
                                    "data_dig", "path", "glob", "uri", "datadir"};
    for (size_t i = 0; i < hv_hash_len(he); i++) {
        const hv *k = hv_hash_key_at(he, i), *v = hv_hash_val_at(he, i);
        bool ok = false;
        for (size_t j = 0; j < sizeof strings / sizeof *strings && !ok; j++)
            if (key_is(k, strings[j]))
                ok = nes(v);
        if (key_is(k, "options"))
            ok = options_ok(v);
        else if (key_is(k, "paths") || key_is(k, "globs") || key_is(k, "uris"))
            ok = nes_list(v, 1, SIZE_MAX);
        else if (key_is(k, "mapped_paths"))
            ok = nes_list(v, 3, 3);
        if (!ok)
            return false;
    }
    return true;
}

const char *config_v5_type(void) { return V5_TYPE; }

bool config_v5_quick_valid(const hv *config)
{
    if (!hv_is(config, HV_HASH))
        return false;
    for (size_t i = 0; i < hv_hash_len(config); i++) {
        const hv *k = hv_hash_key_at(config, i), *v = hv_hash_val_at(config, i);
        if (key_is(k, "version")) {
            if (!hv_is(v, HV_INT) || hv_int_val(v) != 5)
                return false;
        } else if (key_is(k, "defaults")) {
            if (!hv_is(v, HV_HASH))
                return false;
            for (size_t j = 0; j < hv_hash_len(v); j++) {
                const hv *dk = hv_hash_key_at(v, j), *dv = hv_hash_val_at(v, j);
                if (key_is(dk, "options")) {
                    if (!options_ok(dv))
                        return false;
                } else if (key_is(dk, "data_hash") || key_is(dk, "lookup_key") || key_is(dk, "data_dig") ||
                           key_is(dk, "datadir")) {
                    if (!nes(dv))
                        return false;
                } else {
                    return false;
                }
            }
        } else if (key_is(k, "hierarchy") || key_is(k, "plan_hierarchy") || key_is(k, "default_hierarchy")) {
            if (!hv_is(v, HV_ARRAY))
                return false;
            for (size_t j = 0; j < hv_array_len(v); j++)
                if (!v5_entry_ok(hv_array_get(v, j)))
                    return false;
        } else {
            return false;
        }
    }
    return hv_hash_gets(config, "version") != NULL;
}

/* The v4 and v5 schemas, parsed once per process and frozen: every thread shares them. NULL (not
 * expected) when one does not parse. */
static ptype *v4_schema, *v5_schema;
static hiera_once schemas_once = HIERA_ONCE_INIT;

static ptype *parse_frozen(const char *type_text)
{
    herr perr = {0};
    ptype *t = ptype_parse(type_text, &perr);
    herr_clear(&perr);
    if (t)
        ptype_freeze(t);
    return t;
}

static void parse_schemas(void)
{
    v4_schema = parse_frozen(V4_TYPE);
    v5_schema = parse_frozen(V5_TYPE);
}

/* Type-checks the config hash against Puppet's schema (the shared one of its version, or else
 * type_text parsed for this check); false with a HERR_PUPPET message "The Lookup Configuration at
 * '<path>' has wrong type, ..." */
static bool check_schema(const char *type_text, int version, const hv *config, const hcfg *c, herr *err)
{
    ptype *t = NULL, *own = NULL;
    if (version) {
        hiera_once_run(&schemas_once, parse_schemas);
        t = version == 4 ? v4_schema : v5_schema;
        if (!t) {
            herr_set(err, HERR_ERROR, "internal: bad config type: version %d", version);
            return false;
        }
    } else {
        herr perr = {0};
        t = own = ptype_parse(type_text, &perr);
        if (!t) {
            herr_set(err, HERR_ERROR, "internal: bad config type: %s", perr.msg ? perr.msg : "?");
            herr_clear(&perr);
            return false;
        }
    }
    bool ok = ptype_match(t, config);
    if (!ok) {
        char *subject = xasprintf("The Lookup Configuration at '%s'", c->path ? c->path : "");
        char *msg = ptype_mismatch(t, config, subject);
        herr_set(err, HERR_PUPPET, "%s", msg);
        herr_at(err, c->path, 0, 0);
        free(msg);
        free(subject);
    }
    ptype_free(own);
    return ok;
}

static char **str_list(const hv *v, size_t *n)
{
    if (hv_is(v, HV_ARRAY)) {
        *n = hv_array_len(v);
        char **out = xcalloc(*n ? *n : 1, sizeof *out);
        for (size_t i = 0; i < *n; i++) {
            const hv *e = hv_array_get(v, i);
            out[i] = hv_is(e, HV_STRING) ? xstrndup(hv_str_ptr(e), hv_str_len(e)) : xstrdup("");
        }
        return out;
    }
    *n = 1;
    char **out = xcalloc(1, sizeof *out);
    out[0] = hv_is(v, HV_STRING) ? xstrndup(hv_str_ptr(v), hv_str_len(v)) : xstrdup("");
    return out;
}

/* ------------------------------------------------------------------ version 5 */

static bool validate_v5_entry(const hcfg *c, const hv *he, const hv *defaults, layer_kind layer, herr *err)
{
    const char *name = str_or_null(hv_hash_gets(he, "name"));
    int nfunc = 0;
    for (int i = 0; i < NFUNC; i++)
        if (hv_hash_gets(he, FUNCTION_KEYS[i]))
            nfunc++;
    if (hv_hash_gets(he, "v4_data_hash"))
        nfunc++;
    if (nfunc == 0) {
        int ndef = 0;
        for (int i = 0; defaults && i < NFUNC; i++)
            if (hv_hash_gets(defaults, FUNCTION_KEYS[i]))
                ndef++;
        if (ndef == 0) {
            fail_at(err, c, 0, "One of data_hash, lookup_key, data_dig, or hiera3_backend must be defined in hierarchy '%s'", name);
            return false;
        }
    } else if (nfunc > 1) {
        fail_at(err, c, 0, "Only one of data_hash, lookup_key, data_dig, or hiera3_backend can be defined in hierarchy '%s'", name);
        return false;
    }
    const char *v3 = str_or_null(hv_hash_gets(he, "hiera3_backend"));
    if (v3) {
        if (layer != LAYER_GLOBAL) {
            fail_at(err, c, config_find_line(c, "\\s+hiera3_backend:", 1), "'hiera3_backend' is only allowed in the global layer");
            return false;
        }
        if (!strcmp(v3, "json") || !strcmp(v3, "yaml") || !strcmp(v3, "hocon")) {
            char *re = line_regexp("\\s+hiera3_backend:\\s*['\"]?%s(?:[^\\w]|$)", v3);
            int line = config_find_line(c, re, 1);
            free(re);
            fail_at(err, c, line, "Use \"data_hash: %s_data\" instead of \"hiera3_backend: %s\"", v3, v3);
            return false;
        }
    }
    int nloc = 0;
    for (int i = 0; i < NLOC; i++)
        if (hv_hash_gets(he, LOCATION_KEYS[i]))
            nloc++;
    if (nloc > 1) {
        fail_at(err, c, 0, "Only one of path, paths, glob, globs, uri, uris, or mapped_paths can be defined in hierarchy '%s'", name);
        return false;
    }
    const hv *options = hv_hash_gets(he, "options");
    if (hv_is(options, HV_HASH)) {
        static const char *reserved[] = {"path", "uri"};
        for (int i = 0; i < 2; i++)
            if (hv_hash_gets(options, reserved[i])) {
                fail_at(err, c, 0, "Option key '%s' used in hierarchy '%s' is reserved by Puppet", reserved[i], name);
                return false;
            }
    }
    return true;
}

static bool validate_v5_defaults(const hcfg *c, const hv *defaults, herr *err)
{
    int n = 0;
    for (int i = 0; i < NFUNC; i++)
        if (hv_hash_gets(defaults, FUNCTION_KEYS[i]))
            n++;
    if (n > 1) {
        fail_at(err, c, 0, "Only one of data_hash, lookup_key, data_dig, or hiera3_backend can be defined in defaults");
        return false;
    }
    const hv *options = hv_hash_gets(defaults, "options");
    if (hv_is(options, HV_HASH)) {
        static const char *reserved[] = {"path", "uri"};
        for (int i = 0; i < 2; i++)
            if (hv_hash_gets(options, reserved[i])) {
                fail_at(err, c, 0, "Option key '%s' used in defaults is reserved by Puppet", reserved[i]);
                return false;
            }
    }
    return true;
}

static const struct {
    const char *key;
    fn_kind kind;
} FN_KINDS[] = {
    {"data_hash", FN_DATA_HASH},       {"lookup_key", FN_LOOKUP_KEY},     {"data_dig", FN_DATA_DIG},
    {"hiera3_backend", FN_HIERA3_BACKEND}, {"v4_data_hash", FN_V4_DATA_HASH},
};

static const struct {
    const char *key;
    loc_kind kind;
} LOC_KINDS[] = {
    {"path", LOC_PATH}, {"paths", LOC_PATHS}, {"glob", LOC_GLOB}, {"globs", LOC_GLOBS},
    {"uri", LOC_URI},   {"uris", LOC_URIS},   {"mapped_paths", LOC_MAPPED_PATHS},
};

/* Builds the levels of one v5 hierarchy (create_configured_data_providers' static part). */
static hlevel *build_v5_levels(hcfg *c, const hv *list, const hv *defaults, size_t *nout)
{
    size_t n = hv_array_len(list);
    hlevel *levels = xcalloc(n ? n : 1, sizeof *levels);
    const char *def_datadir = defaults ? str_or_null(hv_hash_gets(defaults, "datadir")) : NULL;
    hv *seen = hv_hash();
    for (size_t i = 0; i < n; i++) {
        const hv *he = hv_array_get(list, i);
        hlevel *l = &levels[i];
        const char *name = str_or_null(hv_hash_gets(he, "name"));
        l->name = xstrdup(name ? name : "");
        if (hv_hash_get(seen, hv_hash_gets(he, "name")) && !herr_isset(&c->lazy_err)) {
            char *re = line_regexp("\\s+name:\\s+['\"]?%s(?:[^\\w]|$)", l->name);
            int first, line;
            duplicate_lines(c, re, &first, &line);
            free(re);
            if (first)
                fail_at(&c->lazy_err, c, line, "Hierarchy name '%s' defined more than once. First defined at (line: %d)", l->name, first);
            else
                fail_at(&c->lazy_err, c, line, "Hierarchy name '%s' defined more than once.", l->name);
        }
        hv_hash_set(seen, hv_incref(hv_hash_gets(he, "name")), hv_true());
        /* the entry's function, else the first one defaults names */
        for (size_t k = 0; k < sizeof FN_KINDS / sizeof *FN_KINDS; k++) {
            const hv *f = hv_hash_gets(he, FN_KINDS[k].key);
            if (f) {
                l->fkind = FN_KINDS[k].kind;
                l->fname = xstrdup(str_or_null(f) ? str_or_null(f) : "");
                break;
            }
        }
        if (!l->fkind && defaults) {
            for (int k = 0; k < NFUNC; k++) {
                const hv *f = hv_hash_gets(defaults, FUNCTION_KEYS[k]);
                if (f) {
                    l->fkind = FN_KINDS[k].kind;
                    l->fname = xstrdup(str_or_null(f) ? str_or_null(f) : "");
                    break;
                }
            }
        }
        const char *dd = str_or_null(hv_hash_gets(he, "datadir"));
        l->datadir = xstrdup(dd ? dd : def_datadir ? def_datadir : "data");
        for (size_t k = 0; k < sizeof LOC_KINDS / sizeof *LOC_KINDS; k++) {
            const hv *lv = hv_hash_gets(he, LOC_KINDS[k].key);
            if (lv) {
                l->lkind = LOC_KINDS[k].kind;
                l->locs = str_list(lv, &l->nlocs);
                break;
            }
        }
        const hv *opts = hv_hash_gets(he, "options");
        if (!opts && defaults)
            opts = hv_hash_gets(defaults, "options");
        if (opts && !hv_is(opts, HV_UNDEF))
            l->options = hv_incref((hv *)opts);
    }
    hv_decref(seen);
    *nout = n;
    return levels;
}

static bool load_v5(hcfg *c, hv *config, layer_kind layer, herr *err)
{
    /* config[defaults] ||= ...; config[hierarchy] ||= ... (nil counts as missing) */
    const hv *d = hv_hash_gets(config, "defaults");
    if (!hv_truthy(d)) {
        hv *def = hv_hash();
        hv_hash_sets(def, "datadir", hv_str("data"));
        hv_hash_sets(def, "data_hash", hv_str("yaml_data"));
        hv_hash_sets(config, "defaults", def);
    }
    if (!hv_truthy(hv_hash_gets(config, "hierarchy"))) {
        hv *h = hv_array(), *e = hv_hash();
        hv_hash_sets(e, "name", hv_str("Common"));
        hv_hash_sets(e, "path", hv_str("common.yaml"));
        hv_array_push(h, e);
        hv_hash_sets(config, "hierarchy", h);
    }
    if (!config_v5_quick_valid(config) && !check_schema(NULL, 5, config, c, err))
        return false;
    const hv *defaults = hv_hash_gets(config, "defaults");
    if (defaults && !validate_v5_defaults(c, defaults, err))
        return false;
    static const char *lists[] = {"hierarchy", "plan_hierarchy"};
    for (int k = 0; k < 2; k++) {
        const hv *list = hv_hash_gets(config, lists[k]);
        for (size_t i = 0; list && i < hv_array_len(list); i++)
            if (!validate_v5_entry(c, hv_array_get(list, i), defaults, layer, err))
                return false;
    }
    const hv *dh = hv_hash_gets(config, "default_hierarchy");
    if (dh) {
        if (layer != LAYER_MODULE) {
            fail_at(err, c, config_find_line(c, "(?:^|\\s+)default_hierarchy:", 1), "'default_hierarchy' is only allowed in the module layer");
            return false;
        }
        for (size_t i = 0; dh && i < hv_array_len(dh); i++)
            if (!validate_v5_entry(c, hv_array_get(dh, i), defaults, layer, err))
                return false;
    }
    c->levels = build_v5_levels(c, hv_hash_gets(config, "hierarchy"), defaults, &c->nlevels);
    if (hv_hash_gets(config, "default_hierarchy")) {
        c->has_default_hierarchy = true;
        if (dh)
            c->dlevels = build_v5_levels(c, dh, defaults, &c->ndlevels);
    }
    return true;
}

/* ------------------------------------------------------------------ version 4 */

static bool load_v4(hcfg *c, hv *config, herr *err)
{
    if (!hv_truthy(hv_hash_gets(config, "datadir")))
        hv_hash_sets(config, "datadir", hv_str("data"));
    if (!hv_truthy(hv_hash_gets(config, "hierarchy"))) {
        hv *h = hv_array(), *e = hv_hash();
        hv_hash_sets(e, "name", hv_str("common"));
        hv_hash_sets(e, "backend", hv_str("yaml"));
        hv_array_push(h, e);
        hv_hash_sets(config, "hierarchy", h);
    }
    if (!check_schema(NULL, 4, config, c, err))
        return false;
    const char *def_datadir = str_or_null(hv_hash_gets(config, "datadir"));
    const hv *list = hv_hash_gets(config, "hierarchy");
    size_t n = hv_array_len(list);
    c->levels = xcalloc(n ? n : 1, sizeof *c->levels);
    c->nlevels = n;
    hv *seen = hv_hash();
    for (size_t i = 0; i < n; i++) {
        const hv *he = hv_array_get(list, i);
        hlevel *l = &c->levels[i];
        const char *name = str_or_null(hv_hash_gets(he, "name"));
        const char *backend = str_or_null(hv_hash_gets(he, "backend"));
        l->name = xstrdup(name);
        if (hv_hash_get(seen, hv_hash_gets(he, "name")) && !herr_isset(&c->lazy_err)) {
            char *re = line_regexp("\\s+name:\\s+['\"]?%s(?:[^\\w]|$)", name);
            int first, line;
            duplicate_lines(c, re, &first, &line);
            free(re);
            if (first)
                fail_at(&c->lazy_err, c, line, "Hierarchy name '%s' defined more than once. First defined at (line: %d)", name, first);
            else
                fail_at(&c->lazy_err, c, line, "Hierarchy name '%s' defined more than once.", name);
        }
        hv_hash_set(seen, hv_incref(hv_hash_gets(he, "name")), hv_true());
        const hv *paths = hv_hash_gets(he, "paths");
        const hv *path = hv_hash_gets(he, "path");
        l->lkind = LOC_PATHS;
        if (paths)
            l->locs = str_list(paths, &l->nlocs);
        else
            l->locs = str_list(path ? path : hv_hash_gets(he, "name"), &l->nlocs);
        const char *dd = str_or_null(hv_hash_gets(he, "datadir"));
        l->datadir = xstrdup(dd ? dd : def_datadir);
        l->fkind = FN_DATA_HASH;
        /* version 4 knows the data_hash backends only (yaml, json, hocon) */
        const provider_def *pd = provider_for_backend(backend);
        if (pd && pd->kind == FN_DATA_HASH) {
            l->fname = xstrdup(pd->name);
            l->extension = xstrdup(pd->extension);
        } else if (!herr_isset(&c->lazy_err)) {
            char *re = line_regexp("[^\\w]%s(?:[^\\w]|$)", backend);
            int line = config_find_line(c, re, 1);
            free(re);
            fail_at(&c->lazy_err, c, line, "No data provider is registered for backend '%s'", backend);
        }
    }
    hv_decref(seen);
    return true;
}

/* ------------------------------------------------------------------ version 3 */

static bool load_v3(hcfg *c, hv *config, herr *err)
{
    if (!hv_truthy(hv_hash_gets(config, "version")))
        hv_hash_sets(config, "version", hv_int(3));
    if (!hv_truthy(hv_hash_gets(config, "backends"))) {
        hv *b = hv_array();
        hv_array_push(b, hv_str("yaml"));
        hv_hash_sets(config, "backends", b);
    }
    if (!hv_truthy(hv_hash_gets(config, "hierarchy"))) {
        hv *h = hv_array();
        hv_array_push(h, hv_str("nodes/%{::trusted.certname}"));
        hv_array_push(h, hv_str("common"));
        hv_hash_sets(config, "hierarchy", h);
    }
    if (!hv_truthy(hv_hash_gets(config, "merge_behavior")))
        hv_hash_sets(config, "merge_behavior", hv_str("native"));
    if (!hv_truthy(hv_hash_gets(config, "deep_merge_options")))
        hv_hash_sets(config, "deep_merge_options", hv_hash());
    /* the schema names each backend as an optional key holding a hash */
    sbuf t = {0};
    sb_adds(&t, "Struct[{Optional[version]=>Integer[3,3],"
                "Optional[backends]=>Variant[String[1],Array[String[1]]],Optional[logger]=>String[1],"
                "Optional[merge_behavior]=>Enum[deep,deeper,native],"
                "Optional[deep_merge_options]=>Hash[String[1],Variant[String,Boolean]],"
                "Optional[hierarchy]=>Variant[String[1],Array[String[1]]]");
    const hv *backends = hv_hash_gets(config, "backends");
    size_t nb = 0;
    char **bl = str_list(backends, &nb);
    for (size_t i = 0; i < nb; i++) {
        sb_adds(&t, ",Optional['");
        for (const char *p = bl[i]; *p; p++) {
            if (*p == '\'' || *p == '\\')
                sb_addc(&t, '\\');
            sb_addc(&t, *p);
        }
        sb_adds(&t, "']=>Hash[String[1],Any]");
    }
    sb_adds(&t, "}]");
    bool ok = check_schema(sb_str(&t), 0, config, c, err);
    sb_free(&t);
    if (ok) {
        const hv *mb = hv_hash_gets(config, "merge_behavior");
        c->merge_behavior = xstrdup(str_or_null(mb) ? str_or_null(mb) : "native");
        c->deep_merge_options = hv_incref(hv_hash_gets(config, "deep_merge_options"));
        size_t nh = 0;
        char **hier = str_list(hv_hash_gets(config, "hierarchy"), &nh);
        c->levels = xcalloc(nb ? nb : 1, sizeof *c->levels);
        for (size_t i = 0; i < nb; i++) {
            hlevel *l = &c->levels[c->nlevels];
            bool dup = false;
            for (size_t j = 0; j < c->nlevels; j++)
                if (!strcmp(c->levels[j].name, bl[i]))
                    dup = true;
            if (dup) {
                if (!herr_isset(&c->lazy_err)) {
                    char *re = line_regexp("[^\\w]%s(?:[^\\w]|$)", bl[i]);
                    int first, line;
                    duplicate_lines(c, re, &first, &line);
                    free(re);
                    if (first)
                        fail_at(&c->lazy_err, c, line, "Backend '%s' is defined more than once. First defined at (line: %d)", bl[i], first);
                    else
                        fail_at(&c->lazy_err, c, line, "Backend '%s' is defined more than once.", bl[i]);
                }
                continue;
            }
            c->nlevels++;
            l->name = xstrdup(bl[i]);
            l->lkind = LOC_PATHS;
            l->nlocs = nh;
            l->locs = xcalloc(nh ? nh : 1, sizeof *l->locs);
            for (size_t j = 0; j < nh; j++)
                l->locs[j] = xstrdup(hier[j]);
            const hv *bc = hv_hash_gets(config, bl[i]);
            if (hv_is(bc, HV_HASH))
                l->options = hv_incref((hv *)bc);
            const char *ext = bc ? str_or_null(hv_hash_gets(bc, "extension")) : NULL;
            if (ext)
                l->extension = xasprintf(".%s", ext);
            const provider_def *pd = provider_for_backend(bl[i]);
            if (!ext)
                l->extension = pd ? xstrdup(pd->extension) : xasprintf(".%s", bl[i]);
            l->v3_datadir_abs = true;
            const char *dd = bc ? str_or_null(hv_hash_gets(bc, "datadir")) : NULL;
            l->datadir = dd ? xstrdup(dd) : NULL; /* NULL: <codedir>/environments/%{::environment}/hieradata */
            if (pd) {
                l->fkind = pd->kind;
                l->fname = xstrdup(pd->name);
            } else {
                /* a backend of Hiera 3's own (Ruby): the level fails when used */
                l->fkind = FN_HIERA3_BACKEND;
                l->fname = xstrdup(bl[i]);
            }
        }
        for (size_t j = 0; j < nh; j++)
            free(hier[j]);
        free(hier);
    }
    for (size_t i = 0; i < nb; i++)
        free(bl[i]);
    free(bl);
    return ok;
}

/* ------------------------------------------------------------------ entry */

static hv *v5_default_config(void)
{
    hv *c = hv_hash(), *def = hv_hash(), *h = hv_array(), *e = hv_hash();
    hv_hash_sets(c, "version", hv_int(5));
    hv_hash_sets(def, "datadir", hv_str("data"));
    hv_hash_sets(def, "data_hash", hv_str("yaml_data"));
    hv_hash_sets(c, "defaults", def);
    hv_hash_sets(e, "name", hv_str("Common"));
    hv_hash_sets(e, "path", hv_str("common.yaml"));
    hv_array_push(h, e);
    hv_hash_sets(c, "hierarchy", h);
    return c;
}

static hv *v3_default_config(void)
{
    hv *c = hv_hash(), *b = hv_array(), *h = hv_array();
    hv_array_push(b, hv_str("yaml"));
    hv_hash_sets(c, "backends", b);
    hv_array_push(h, hv_str("nodes/%{::trusted.certname}"));
    hv_array_push(h, hv_str("common"));
    hv_hash_sets(c, "hierarchy", h);
    hv_hash_sets(c, "merge_behavior", hv_str("native"));
    return c;
}

/* Ruby's to_i on the version value; false when the value has no to_i (NoMethodError) */
static bool version_to_i(const hv *v, long long *out, herr *err)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: *out = 3; return true;
    case HV_INT: *out = hv_int_val(v); return true;
    case HV_FLOAT: *out = (long long)hv_float_val(v); return true;
    case HV_BIGINT: *out = 999999; return true;
    case HV_STRING: *out = strtoll(hv_str_ptr(v), NULL, 10); return true;
    default: {
        sbuf b = {0};
        ruby_inspect(&b, v);
        herr_set(err, HERR_ERROR, "undefined method `to_i' for %s", sb_str(&b));
        sb_free(&b);
        return false;
    }
    }
}

static hcfg *config_load_file(hiera_cache *cache, const char *path, layer_kind layer, int strict, bool *ignored, herr *err)
{
    *ignored = false;
    hcfg *c = xcalloc(1, sizeof *c);
    c->refs = 1;
    c->root = pn_dirname(path);
    hv *loaded;
    if (cache_file_exists(cache, path)) {
        c->path = xstrdup(path);
        herr perr = {0};
        hv *parsed = cache_load(cache, path, FMT_CONFIG, &perr);
        if (!parsed) {
            /* Puppet::Util::Yaml::YamlLoadError, a Puppet::Error */
            herr_move(err, &perr);
            if (err->kind == HERR_ERROR)
                err->kind = HERR_PUPPET;
            config_free(c);
            return NULL;
        }
        if (hv_is(parsed, HV_HASH)) {
            loaded = hv_symkeys_to_string(hv_deep_copy(parsed)); /* a private copy: the loaders add defaults */
        } else {
            diag_warn("config-not-hash", path, 0, 0,
                      "%s: File exists but does not contain a valid YAML hash. Falling back to Hiera version 3 default config", path);
            loaded = v3_default_config();
        }
        hv_decref(parsed);
    } else {
        loaded = v5_default_config();
    }
    const hv *vv = hv_hash_gets(loaded, "version");
    long long version;
    if (!version_to_i(vv, &version, err)) {
        hv_decref(loaded);
        config_free(c);
        return NULL;
    }
    bool ok;
    switch (version) {
    case 5:
        c->version = 5;
        ok = load_v5(c, loaded, layer, err);
        break;
    case 4:
        c->version = 4;
        if (strict) /* (unless Puppet[:strict] == :off) */
            diag_warn("config-deprecated", path, 0, 0,
                      "%s: Use of 'hiera.yaml' version 4 is deprecated. It should be converted to version 5\n   (file: %s)", path, path);
        ok = load_v4(c, loaded, err);
        break;
    case 3:
        c->version = 3;
        if (strict)
            diag_warn("config-deprecated", path, 0, 0,
                      "%s: Use of 'hiera.yaml' version 3 is deprecated. It should be converted to version 5\n   (file: %s)", path, path);
        ok = load_v3(c, loaded, err);
        break;
    default:
        fail_at(err, c, 0, "This runtime does not support hiera.yaml version %lld", version);
        ok = false;
        break;
    }
    c->raw = loaded;
    if (!ok) {
        config_free(c);
        return NULL;
    }
    if (version == 3 && layer != LAYER_GLOBAL) {
        /* EnvironmentDataProvider / ModuleDataProvider#assert_config_version */
        if (strict == 2)
            fail_at(err, c, 0, "hiera.yaml version 3 cannot be used in %s", layer == LAYER_ENV ? "an environment" : "a module");
        else if (layer == LAYER_ENV)
            diag_warn("config-v3-ignored", path, 0, 0, "hiera.yaml version 3 found at the environment root was ignored\n   (file: %s)", path);
        else
            diag_warn("config-v3-ignored", path, 0, 0, "hiera.yaml version 3 found at module root was ignored\n   (file: %s)", path);
        *ignored = strict != 2;
        config_free(c);
        return NULL;
    }
    if (version == 4 && layer == LAYER_GLOBAL) {
        fail_at(err, c, 0, "hiera.yaml version 4 cannot be used in the global layer");
        config_free(c);
        return NULL;
    }
    return c;
}

hcfg *config_legacy_function(const char *root, const char *function_name, layer_kind layer)
{
    hcfg *c = xcalloc(1, sizeof *c);
    c->refs = 1;
    c->version = 5;
    c->root = xstrdup(root);
    hv *loaded = hv_hash(), *list = hv_array(), *e = hv_hash();
    hv_hash_sets(loaded, "version", hv_int(5));
    char *name = xasprintf("Legacy function '%s'", function_name);
    hv_hash_sets(e, "name", hv_str(name));
    free(name);
    hv_hash_sets(e, "v4_data_hash", hv_str(function_name));
    hv_array_push(list, e);
    hv_hash_sets(loaded, "hierarchy", list);
    herr err = {0};
    if (!load_v5(c, loaded, layer, &err)) /* (valid by construction) */
        herr_move(&c->lazy_err, &err);
    c->raw = loaded;
    return c;
}

static void config_release(void *c) { config_free(c); }

hcfg *config_load(hiera_cache *cache, const char *path, layer_kind layer, bool *ignored, herr *err)
{
    return config_load_strict(cache, path, layer, 1, ignored, err);
}

hcfg *config_load_strict(hiera_cache *cache, const char *path, layer_kind layer, int strict, bool *ignored, herr *err)
{
    if (!cache || !cache_is_frozen(cache))
        return config_load_file(cache, path, layer, strict, ignored, err);
    /* files do not change while the cache is frozen: a config that loaded is loaded once (its
     * warnings printed once); failures are not remembered (Puppet retries them) */
    char kind[3] = {(char)('0' + (int)layer), (char)('0' + strict), 0}; /* (single digits) */
    char *sig = xjoin("hiera.yaml\n", kind, "\n", path, NULL);
    bool found;
    hcfg *c = cache_shared_get(cache, sig, &found);
    if (found) {
        c->refs++;
        *ignored = false;
    } else {
        c = config_load_file(cache, path, layer, strict, ignored, err);
        if (c) {
            c->refs++;
            cache_shared_put(cache, sig, c, config_release);
        }
    }
    free(sig);
    return c;
}

/* ------------------------------------------------------------------ names */

bool valid_module_name(const char *n)
{
    if (!(*n >= 'a' && *n <= 'z'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

char *envpath_remap(const char *path, const char *own, const char **from)
{
    static const char *const defaults[] = {"/etc/puppetlabs/code/environments", "/etc/puppet/code/environments", NULL};
    if (!path || !own || path[0] != '/')
        return NULL;
    size_t ol = strlen(own);
    while (ol > 1 && own[ol - 1] == '/')
        ol--;
    for (size_t i = 0; defaults[i]; i++) {
        size_t dl = strlen(defaults[i]);
        if (strncmp(path, defaults[i], dl) != 0 || (path[dl] != '/' && path[dl]))
            continue;
        if (ol == dl && !strncmp(own, defaults[i], dl))
            return NULL; /* the tree is where the path says */
        if (from)
            *from = defaults[i];
        sbuf b = {0};
        sb_addn(&b, own, ol);
        sb_adds(&b, path + dl);
        return sb_take(&b);
    }
    return NULL;
}

/* ------------------------------------------------------------------ a level's files as templates */

/* the level's datadir made absolute (a new string) */
static char *level_datadir(const hcfg *cfg, const hlevel *lvl, const char *codedir)
{
    char *datadir;
    if (lvl->v3_datadir_abs)
        datadir = lvl->datadir ? xstrdup(lvl->datadir)
                               : xasprintf("%s/environments/%%{::environment}/hieradata", codedir ? codedir : "");
    else
        datadir = pn_plus(cfg->root, lvl->datadir);
    if (datadir[0] != '/') { /* Hiera 3's relative datadir: relative to the working folder */
        char *cwd = getcwd(NULL, 0);
        char *abs = pn_plus(cwd ? cwd : "/", datadir);
        free(cwd);
        free(datadir);
        datadir = abs;
    }
    return datadir;
}

void config_level_files(const hcfg *cfg, const hlevel *lvl, const char *codedir, const char *remap_envpath,
                        level_files *f)
{
    memset(f, 0, sizeof *f);
    f->datadir = level_datadir(cfg, lvl, codedir);
    char *mapped = envpath_remap(f->datadir, remap_envpath, &f->remapped_from);
    if (mapped) {
        f->unmapped = f->datadir;
        f->datadir = mapped;
    } else {
        f->remapped_from = NULL;
    }
    f->locs = xcalloc(lvl->nlocs + 1, sizeof *f->locs);
    f->tmpls = xcalloc(lvl->nlocs + 1, sizeof *f->tmpls);
    f->glob = lvl->lkind == LOC_GLOB || lvl->lkind == LOC_GLOBS;
    for (size_t j = 0; j < lvl->nlocs; j++) {
        char *loc;
        switch (lvl->lkind) {
        case LOC_PATH: case LOC_PATHS: case LOC_GLOB: case LOC_GLOBS: {
            size_t ll = strlen(lvl->locs[j]), el = lvl->extension ? strlen(lvl->extension) : 0;
            bool add = lvl->extension && (ll < el || strcmp(lvl->locs[j] + ll - el, lvl->extension) != 0);
            loc = add ? xjoin(lvl->locs[j], lvl->extension, NULL) : xstrdup(lvl->locs[j]);
            break;
        }
        case LOC_MAPPED_PATHS:
            if (j != 2)
                continue;
            loc = xstrdup(lvl->locs[2]);
            break;
        default:
            continue; /* URIs and levels without locations read no files */
        }
        f->locs[f->n] = loc;
        f->tmpls[f->n++] = pn_plus(f->datadir, loc);
    }
}

void config_level_files_free(level_files *f)
{
    for (size_t i = 0; i < f->n; i++) {
        free(f->locs[i]);
        free(f->tmpls[i]);
    }
    free(f->locs);
    free(f->tmpls);
    free(f->datadir);
    free(f->unmapped);
    memset(f, 0, sizeof *f);
}
