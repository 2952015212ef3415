/* facts.c - a node's facts as `puppet lookup` gets them: the --facts file, Puppet's YAML facts
 * cache ($vardir/yaml/facts/NODE.yaml, a !ruby/object:Puppet::Node::Facts document), the
 * sanitizing Puppet::Node::Facts applies before the compiler sees them, and $trusted.
 *
 * Learnt from Puppet 7.23: lib/puppet/indirector/yaml.rb (find: no file is no facts; load_file
 * permits [Puppet::Node::Facts, Symbol]; a YamlLoadError becomes "Could not parse YAML data for
 * facts NODE: ..."), lib/puppet/node/facts.rb (initialize_from_hash, sanitize),
 * lib/puppet/node.rb (sanitize: the trusted data), lib/puppet/context/trusted_information.rb. */
#include "hiera.h"
#include "base/error.h"
#include "base/fsjournal.h"

#include "api/facts.h"
#include "base/rubyver.h"
#include "base/fileio.h"
#include "engine/cache.h"
#include "formats/diskcache.h"
#include "formats/json.h"
#include "formats/psych.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FACTS_MAX_SIZE (64L * 1024 * 1024)

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A whole file as a string value, or NULL with Ruby's File.read message. */
static hv *read_text(const char *path, herr *err)
{
    struct stat st;
    if (fs_stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        herr_set(err, HERR_PUPPET, "%s is not a regular file", path);
        herr_at(err, path, 0, 0);
        return NULL;
    }
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, &(file_read_opts){.max = (size_t)FACTS_MAX_SIZE}, &fe)) {
        sb_free(&b);
        if (fe.failed == FILE_READ_TOO_BIG) {
            herr_set(err, HERR_PUPPET, "%s is larger than %ld bytes", path, FACTS_MAX_SIZE);
            herr_at(err, path, 0, 0);
        } else {
            herr_file_read(err, HERR_PUPPET, path, &fe);
        }
        return NULL;
    }
    size_t len = b.len; /* before sb_take empties b */
    return hv_str_take(sb_take(&b), len);
}

/* Puppet reads facts files with encoding 'bom|utf-8': a UTF-8 byte order mark is dropped. */
static size_t bom_length(const char *s, size_t len)
{
    return len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* ------------------------------------------------------------------ --facts FILE */

/* lib/puppet/application/lookup.rb: .json is JSON, .yml/.yaml YAML (safe_load_file, no class
 * permitted), anything else JSON, then YAML. */
hiera_value *hiera_value_load_file(const char *path, hiera_error *err)
{
    herr e = {0};
    hv *text = read_text(path, &e);
    if (!text) {
        herr_to_public(err, &e);
        return NULL;
    }
    hv *v = NULL;
    const char *s = hv_str_ptr(text);
    size_t len = hv_str_len(text), skip = bom_length(s, len);
    if (ends_with(path, ".json")) {
        v = hjson_parse_puppet(s, len, path, &e);
    } else if (ends_with(path, ".yaml") || ends_with(path, ".yml")) {
        v = yaml_parse(s + skip, len - skip, path, YAML_PUPPET_FACTS, &e);
    } else {
        v = hjson_parse_puppet(s, len, path, &e);
        if (!v) {
            herr_clear(&e);
            v = yaml_parse(s + skip, len - skip, path, YAML_PUPPET_FACTS, &e);
        }
    }
    hv_decref(text);
    if (!v) {
        e.kind = HERR_PUPPET;
        herr_to_public(err, &e);
    }
    return v;
}

/* ------------------------------------------------------------------ the YAML facts cache */

static void cache_error(herr *err, const char *node, const char *path, const char *fmt, ...) HIERA_PRINTF(4, 5);

/* Puppet::Indirector::Yaml#find: "Could not parse YAML data for facts NODE: <detail>" */
static void cache_error(herr *err, const char *node, const char *path, const char *fmt, ...)
{
    sbuf b = {0};
    sb_addf(&b, "Could not parse YAML data for facts %s: ", node ? node : "");
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    int line = err->line, col = err->col;
    herr_set_text(err, HERR_PUPPET, sb_str(&b));
    herr_at(err, path, line, col);
    sb_free(&b);
}

/* Puppet::Node::Facts#initialize_from_hash over the members Psych revived (name, values,
 * timestamp, expiration): the values, without the `_timestamp` an old cache keeps among them.
 * The timestamps are not needed by a lookup and are not checked (Puppet parses a string one with
 * Ruby's Time.parse). */
static hv *facts_object_values(const hv *members, const char *path, const char *node, herr *err)
{
    const hv *values = hv_hash_gets(members, "values");
    if (!values || hv_is(values, HV_UNDEF)) {
        /* Ruby 3.1's NoMethodError, with the line error_highlight adds (Ruby 3.3 words it
         * otherwise, without the line) */
        cache_error(err, node, path, "%s",
                    rubyver() == RUBY_33 ? "undefined method `delete' for nil"
                                         : "undefined method `delete' for nil:NilClass\n\n    timestamp = @values.delete('_timestamp')\n"
                                           "                       ^^^^^^^");
        return NULL;
    }
    if (!hv_is(values, HV_HASH)) {
        cache_error(err, node, path, "the values of the Puppet::Node::Facts in %s are not a Hash (%s)", path,
                    hv_kind_name(hv_kind_of(values)));
        return NULL;
    }
    hv *out = hv_copy(values);
    hv *ts = hv_str("_timestamp");
    hv_hash_del(out, ts);
    hv_decref(ts);
    return out;
}

/* The text of a facts cache file (plain_too: or of a --facts YAML file, told apart by the root's
 * tag) to its hash of facts. */
static hv *parse_cache_text(const char *s, size_t len, const char *path, const char *node, bool plain_too, int *kind,
                            herr *err)
{
    size_t skip = bom_length(s, len);
    bool object = false;
    hv *v = yaml_parse_facts_cache(s + skip, len - skip, path, plain_too, &object, err);
    if (!v) {
        if (object || !plain_too)
            cache_error(err, node, path, "%s", err->msg ? err->msg : "");
        err->kind = HERR_PUPPET;
        return NULL;
    }
    if (object) {
        *kind = HIERA_FACTS_CACHE;
        hv *values = facts_object_values(v, path, node, err);
        hv_decref(v);
        return values;
    }
    if (plain_too)
        return v;
    hv_decref(v);
    herr_set(err, HERR_PUPPET,
             "The facts cache file %s does not hold a Puppet::Node::Facts (a YAML document tagged "
             "!ruby/object:Puppet::Node::Facts with name and values), which is what Puppet stores and reads there",
             path);
    herr_at(err, path, 0, 0);
    return NULL;
}

/* the disk cache's format codes for facts files (data files use their file_format; 64 was a
 * --facts file before Symbols were refused in them) */
#define DISK_FMT_FACTS_BASE 68

static hv *load_facts(const char *path, const char *node, int formats, int *kind, herr *e)
{
    *kind = HIERA_FACTS_FILE;
    if (!(formats & HIERA_FACTS_CACHE) || ((formats & HIERA_FACTS_FILE) && ends_with(path, ".json"))) {
        hiera_error pe = {0};
        hv *v = hiera_value_load_file(path, &pe);
        if (!v) {
            herr_set_text(e, HERR_PUPPET, pe.message ? pe.message : "cannot read the facts file");
            herr_at(e, pe.file, pe.line, pe.column);
        }
        hiera_error_clear(&pe);
        return v;
    }
    hv *text = read_text(path, e);
    if (!text)
        return NULL;
    hv *v = NULL;
    bool plain = (formats & HIERA_FACTS_FILE) != 0;
    if (plain && !ends_with(path, ".yaml") && !ends_with(path, ".yml")) {
        /* as --facts: JSON first */
        v = hjson_parse_puppet(hv_str_ptr(text), hv_str_len(text), path, e);
        if (!v)
            herr_clear(e);
    }
    if (!v)
        v = parse_cache_text(hv_str_ptr(text), hv_str_len(text), path, node, plain, kind, e);
    hv_decref(text);
    return v;
}

hiera_value *hiera_facts_load(hiera_cache *c, const char *path, const char *node, int formats, int *format_read,
                              hiera_error *err)
{
    herr e = {0};
    int kind = HIERA_FACTS_FILE;
    formats &= HIERA_FACTS_FILE | HIERA_FACTS_CACHE;
    if (!formats)
        formats = HIERA_FACTS_FILE;
    diskcache *d = c ? cache_disk(c) : NULL;
    struct stat st;
    bool cacheable = d && fs_stat(path, &st) == 0 && S_ISREG(st.st_mode);
    int fmt = DISK_FMT_FACTS_BASE + formats;
    if (cacheable) {
        unsigned flags;
        hv *v = diskcache_get_shared(d, path, fmt, &st, &flags, cache_facts_strings(c));
        if (v) {
            if (format_read)
                *format_read = flags == HIERA_FACTS_CACHE ? HIERA_FACTS_CACHE : HIERA_FACTS_FILE;
            return v;
        }
    }
    hv *v = load_facts(path, node, formats, &kind, &e);
    if (!v) {
        herr_to_public(err, &e);
        return NULL;
    }
    if (cacheable)
        diskcache_put(d, path, fmt, &st, v, (unsigned)kind);
    if (format_read)
        *format_read = kind;
    return v;
}

hiera_value *hiera_cache_load_value_file(hiera_cache *c, const char *path, hiera_error *err)
{
    return hiera_facts_load(c, path, NULL, HIERA_FACTS_FILE, NULL, err);
}

/* Puppet::Indirector::BadNameRegexp: a name starting a line with "..", holding a slash, a
 * backslash or a NUL, or starting a line with a drive letter and ':'. */
static bool bad_name(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        bool line_start = i == 0 || s[i - 1] == '\n';
        if (s[i] == '/' || s[i] == '\\' || s[i] == 0)
            return true;
        if (line_start && i + 1 < len && s[i] == '.' && s[i + 1] == '.')
            return true;
        char ch = s[i];
        if (line_start && i + 1 < len && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) && s[i + 1] == ':')
            return true;
    }
    return false;
}

hiera_status hiera_facts_cached(const char *yamldir, const char *node, hiera_value **facts, hiera_error *err)
{
    herr e = {0};
    *facts = NULL;
    if (!yamldir || !node) {
        herr_set(&e, HERR_PUPPET, "hiera_facts_cached needs the yamldir and the node name");
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    if (bad_name(node, strlen(node))) {
        herr_set(&e, HERR_PUPPET, "invalid key");
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    char *path = xjoin(yamldir, "/facts/", node, ".yaml", NULL);
    struct stat st;
    /* Puppet::FileSystem.exist? follows links; anything that exists is read */
    if (fs_stat(path, &st) != 0) {
        free(path);
        return HIERA_NOT_FOUND;
    }
    int kind;
    hv *v = load_facts(path, node, HIERA_FACTS_CACHE, &kind, &e);
    free(path);
    if (!v) {
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    *facts = v;
    return HIERA_OK;
}

/* ------------------------------------------------------------------ given facts */

/* lib/puppet/application/lookup.rb's TRUSTED_INFORMATION_FACTS */
static const char *const TRUSTED_INFORMATION_FACTS[] = {"hostname", "domain", "fqdn", "clientcert"};

bool facts_check_given(const hv *facts, const char *file, herr *e)
{
    if (!hv_is(facts, HV_HASH)) {
        herr_set(e, HERR_PUPPET, "Incorrectly formatted data%s%s given via the --facts flag (only accepts yaml and json files)",
                 file ? " in " : "", file ? file : "");
        return false;
    }
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (hv_hash_gets(facts, TRUSTED_INFORMATION_FACTS[i]))
            n++;
    if (n && n != 4) {
        herr_set(e, HERR_PUPPET,
                 "When overriding any of the hostname,domain,fqdn,clientcert facts with %s%s, they must all be overridden.",
                 file ? file : "the --facts flag", file ? " given via the --facts flag" : "");
        return false;
    }
    return true;
}

hiera_status hiera_facts_check_given(const hiera_value *facts, const char *file, hiera_error *err)
{
    herr e = {0};
    if (facts_check_given(facts, file, &e))
        return HIERA_OK;
    herr_to_public(err, &e);
    return HIERA_ERROR;
}

/* ------------------------------------------------------------------ sanitize */

static hv *sanitize_value(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        return hv_str("");
    case HV_SYMBOL:
        return hv_strn(hv_str_ptr(v), hv_str_len(v));
    case HV_SENSITIVE:
        return hv_str("Sensitive [value redacted]");
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        hv *a = hv_array_sized(n);
        for (size_t i = 0; i < n; i++)
            hv_array_push(a, sanitize_value(hv_array_get(v, i)));
        return a;
    }
    case HV_HASH: {
        /* ret[sanitize_fact k] = sanitize_fact v: keys that become equal keep the first place and
         * the last value */
        size_t n = hv_hash_len(v);
        hv *h = hv_hash_sized(n);
        for (size_t i = 0; i < n; i++)
            hv_hash_set(h, sanitize_value(hv_hash_key_at(v, i)), sanitize_value(hv_hash_val_at(v, i)));
        return h;
    }
    default:
        return hv_incref((hv *)v);
    }
}

/* Whether v holds something sanitize would change (most facts hold nothing of the kind: then
 * the hash is shared, not copied). */
static bool needs_sanitize(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
    case HV_SYMBOL:
    case HV_SENSITIVE:
        return true;
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (needs_sanitize(hv_array_get(v, i)))
                return true;
        return false;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (needs_sanitize(hv_hash_key_at(v, i)) || needs_sanitize(hv_hash_val_at(v, i)))
                return true;
        return false;
    default:
        return false;
    }
}

hv *facts_sanitize(const hv *facts, herr *err)
{
    size_t n = hv_hash_len(facts);
    for (size_t i = 0; i < n; i++) {
        if (hv_is(hv_hash_key_at(facts, i), HV_SYMBOL)) {
            herr_set(err, HERR_PUPPET, "Unsupported data type: 'Symbol'");
            return NULL;
        }
    }
    size_t first = 0; /* the first value to sanitize */
    while (first < n && !needs_sanitize(hv_hash_val_at(facts, first)))
        first++;
    if (first == n) {
        /* (the usual case: a copy of the hash, its index with it, rather than a rebuilt one) */
        hv *out = hv_copy(facts);
        hv_set_line(out, 0);
        return out;
    }
    hv *out = hv_hash_sized(n);
    for (size_t i = 0; i < n; i++) {
        const hv *val = hv_hash_val_at(facts, i);
        hv_hash_set(out, hv_incref(hv_hash_key_at(facts, i)),
                    needs_sanitize(val) ? sanitize_value(val) : hv_incref((hv *)val));
    }
    return out;
}

/* ------------------------------------------------------------------ $trusted */

/* hostname and domain from a certname, as TrustedInformation#initialize splits it */
static void split_certname(const hv *certname, hv **hostname, hv **domain)
{
    if (!hv_is(certname, HV_STRING)) {
        *hostname = hv_undef();
        *domain = hv_undef();
        return;
    }
    const char *s = hv_str_ptr(certname);
    size_t len = hv_str_len(certname);
    const char *dot = memchr(s, '.', len);
    if (dot) {
        *hostname = hv_strn(s, (size_t)(dot - s));
        *domain = hv_strn(dot + 1, len - (size_t)(dot - s) - 1);
    } else {
        *hostname = hv_strn(s, len);
        *domain = hv_undef();
    }
}

/* TrustedInformation.local(node).to_h: `puppet lookup` without a certificate */
static hv *trusted_local(const hv *facts)
{
    hv *t = hv_hash();
    const hv *cc = facts ? hv_hash_gets(facts, "clientcert") : NULL;
    hv *hostname, *domain;
    split_certname(cc, &hostname, &domain);
    hv_hash_sets(t, "authenticated", hv_str("local"));
    hv_hash_sets(t, "certname", cc ? hv_incref((hv *)cc) : hv_undef());
    hv_hash_sets(t, "extensions", hv_hash());
    hv_hash_sets(t, "hostname", hostname);
    hv_hash_sets(t, "domain", domain);
    hv_hash_sets(t, "external", hv_hash());
    return t;
}

/* Node#sanitize resurrects a `trusted` fact that is a Hash with these keys */
static bool trusted_fact_ok(const hv *t)
{
    return hv_is(t, HV_HASH) && hv_hash_gets(t, "authenticated") && hv_hash_gets(t, "certname") &&
           hv_hash_gets(t, "extensions");
}

hv *trusted_for(const hv *facts, const hv *given)
{
    if (given)
        return hv_incref((hv *)given);
    const hv *fact = facts ? hv_hash_gets(facts, "trusted") : NULL;
    if (trusted_fact_ok(fact))
        return hv_incref((hv *)fact);
    return trusted_local(facts);
}

/* Puppet data all the way down (the compiler's deep_freeze): no Symbol, no Sensitive */
static const char *non_data(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_SYMBOL:
        return "Symbol";
    case HV_SENSITIVE:
        return "Puppet::Pops::Types::PSensitiveType::Sensitive";
    case HV_ARRAY:
        for (size_t i = 0; i < hv_array_len(v); i++) {
            const char *k = non_data(hv_array_get(v, i));
            if (k)
                return k;
        }
        return NULL;
    case HV_HASH:
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            const char *k = non_data(hv_hash_key_at(v, i));
            if (!k)
                k = non_data(hv_hash_val_at(v, i));
            if (k)
                return k;
        }
        return NULL;
    default:
        return NULL;
    }
}

hv *trusted_complete(const hv *given, herr *err)
{
    static const char *required = "a Hash with the keys authenticated, certname and extensions";
    if (!hv_is(given, HV_HASH)) {
        herr_set(err, HERR_PUPPET, "Incorrectly formatted trusted data: %s is required (got %s)", required,
                 hv_kind_name(hv_kind_of(given)));
        return NULL;
    }
    const hv *auth = hv_hash_gets(given, "authenticated"), *certname = hv_hash_gets(given, "certname"),
             *ext = hv_hash_gets(given, "extensions");
    if (!auth || !certname || !ext) {
        herr_set(err, HERR_PUPPET, "Incorrectly formatted trusted data: %s is required (missing:%s%s%s)", required,
                 auth ? "" : " authenticated", certname ? "" : " certname", ext ? "" : " extensions");
        return NULL;
    }
    bool auth_ok = (hv_is(auth, HV_BOOL) && !hv_bool_val(auth)) ||
                   (hv_is(auth, HV_STRING) && (!strcmp(hv_str_ptr(auth), "remote") || !strcmp(hv_str_ptr(auth), "local")));
    if (!auth_ok) {
        herr_set(err, HERR_PUPPET, "Incorrectly formatted trusted data: authenticated must be 'remote', 'local' or false");
        return NULL;
    }
    if (!hv_is(certname, HV_STRING) && !hv_is(certname, HV_UNDEF)) {
        herr_set(err, HERR_PUPPET, "Incorrectly formatted trusted data: certname must be a String (or undef)");
        return NULL;
    }
    if (!hv_is(ext, HV_HASH)) {
        herr_set(err, HERR_PUPPET, "Incorrectly formatted trusted data: extensions must be a Hash");
        return NULL;
    }
    const char *bad = non_data(given);
    if (bad) {
        herr_set(err, HERR_PUPPET, "Unsupported data type: '%s'", bad);
        return NULL;
    }
    hv *t = hv_hash();
    hv *hostname, *domain;
    split_certname(certname, &hostname, &domain);
    const hv *h = hv_hash_gets(given, "hostname"), *d = hv_hash_gets(given, "domain"), *x = hv_hash_gets(given, "external");
    hv_hash_sets(t, "authenticated", hv_incref((hv *)auth));
    hv_hash_sets(t, "certname", hv_incref((hv *)certname));
    hv_hash_sets(t, "extensions", hv_incref((hv *)ext));
    hv_hash_sets(t, "hostname", h ? hv_incref((hv *)h) : hv_incref(hostname));
    hv_hash_sets(t, "domain", d ? hv_incref((hv *)d) : hv_incref(domain));
    hv_hash_sets(t, "external", x ? hv_incref((hv *)x) : hv_hash());
    hv_decref(hostname);
    hv_decref(domain);
    for (size_t i = 0; i < hv_hash_len(given); i++) {
        const hv *k = hv_hash_key_at(given, i);
        if (hv_hash_index(t, k) < 0)
            hv_hash_set(t, hv_incref((hv *)k), hv_incref(hv_hash_val_at(given, i)));
    }
    return t;
}
