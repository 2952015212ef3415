/* hiera3.c - the Hiera 3 engine: what the Hiera 3.10 gem (lib/hiera.rb, hiera/config.rb,
 * hiera/backend.rb, hiera/interpolate.rb, hiera/filecache.rb, the yaml and json backends) does
 * for the `hiera` command and for Ruby callers of Hiera#lookup, quirks included (each is marked
 * "Ruby quirk"), plus the text forms the command prints (Ruby 3.1's pp, json 2.6's JSON.dump)
 * and the Hiera 3 section of the public API (include/hiera.h).
 *
 * The flow follows the Ruby one so that its observable behaviour (what is read when, which
 * error wins, what a recursion guard has seen) is the same:
 *   h3_lookup -> h3_backend_lookup (Backend.lookup: the backends, in order, as an outer
 *   hierarchy) -> a backend's lookup (every hierarchy level: h3_datasources) -> Filecache ->
 *   h3_parse_answer (interpolation) -> merge_answer / resolve_answer.
 */
#include "hiera3/hiera3.h"

#include "hiera.h" /* the public API, Hiera 3 section */
#include "engine/merge.h"
#include "formats/json.h"
#include "formats/render.h"
#include "formats/psych.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Nested lookups (hiera()/alias() inside data) and nested interpolations are refused with Ruby's
 * SystemStackError message where Ruby 3.1 (1 MiB VM stack) gives up: it follows a chain of 408
 * hiera() lookups but not 409, and a chain of 2779 scope variables (a: "%{b}", b: "%{c}"...)
 * but not 2780. A nested lookup costs H3_LOOKUP_COST units, a nested interpolation
 * H3_INTERP_COST, out of H3_STACK_BUDGET. */
#define H3_STACK_BUDGET 27790
#define H3_INTERP_COST 10
#define H3_LOOKUP_COST 68
/* Nesting bound for walking values (flatten, pp, JSON.dump); YAML loads at most 1000 deep. */
#define H3_MAX_VALUE_DEPTH 10000
/* Nested hiera()/alias() lookups one lookup may make (interpolated strings are bounded as in
 * the Puppet engine: MAX_INTERPOLATED_SIZE). Depth alone does not bound the work: values like
 * "%{hiera('k2')}%{hiera('k2')}" over 30 keys need 2^30 lookups (the Ruby gem runs for hours).
 * Hiera 3 stats its data files on every lookup, so a nested one costs microseconds: 100,000
 * keeps a refusal well under a second. */
#define H3_MAX_NESTED_LOOKUPS 100000

/* ------------------------------------------------------------------ the object */

typedef struct {
    const h3_backend *ops;
    hv *name; /* as configured: the key of Ruby's @backends */
    void *state;
    bool created;
} h3_inst;

typedef enum { LOG_CONSOLE, LOG_NOOP, LOG_CALLBACK } log_kind;

struct hiera3 {
    hv *config;  /* Hiera::Config's hash (symbol keys) */
    hv *backends; /* Config[:backends], flattened */
    h3_inst *insts;
    size_t ninsts;
    log_kind logk;
    h3_log_fn log_fn;
    void *log_ud;
    hiera3_log_fn pub_fn; /* a callback given through the public API */
    void *pub_ud;
    FILE *console;
    h3_ctx *cfg_ctx; /* Backend's @config_lookup_context while a config entry is interpolated */
    int depth;
    size_t nested; /* nested lookups since the top-level lookup began */
    h3_errclass errclass;
    const char *rbclass;
};

/* ------------------------------------------------------------------ the backends */

static const h3_backend h3_yaml_backend, h3_json_backend;
static h3_inst *canonical_inst(h3 *h, size_t i);

/* hiera-eyaml's backend (eyaml_backend.c) */
extern const h3_backend h3_eyaml_backend;

/* Every backend :backends: may name (Ruby: require "hiera/backend/<name>_backend"). */
static const h3_backend *const h3_backend_table[] = {
    &h3_yaml_backend,
    &h3_json_backend,
    &h3_eyaml_backend,
};

/* ------------------------------------------------------------------ errors */

void h3_raise(h3 *h, herr *err, h3_errclass cls, const char *rbclass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    herr_setv(err, HERR_ERROR, fmt, ap);
    va_end(ap);
    if (h) {
        h->errclass = cls;
        h->rbclass = rbclass ? rbclass : "RuntimeError";
    }
}

h3_errclass h3_last_errclass(const h3 *h) { return h ? h->errclass : H3E_LOOKUP; }
const char *h3_last_rbclass(const h3 *h) { return h && h->rbclass ? h->rbclass : "RuntimeError"; }

/* An error that came from another module (YAML, JSON, deep_merge): record its class. */
static void note_error(h3 *h, h3_errclass cls, const char *rbclass)
{
    h->errclass = cls;
    h->rbclass = rbclass;
}

/* The Ruby exception class behind a message of formats/psych.c (Psych's errors, File.read's). */
const char *h3_psych_class(const char *msg)
{
    if (!msg)
        return "RuntimeError";
    if (strstr(msg, "Tried to load unspecified class"))
        return "Psych::DisallowedClass";
    if (strstr(msg, "Unknown alias") || strstr(msg, "Alias parsing was not enabled"))
        return "Psych::BadAlias";
    if (strstr(msg, "stack level too deep"))
        return "SystemStackError";
    if (strstr(msg, "@ rb_sysopen") || strstr(msg, "@ io_fread")) {
        if (strstr(msg, "Is a directory"))
            return "Errno::EISDIR";
        if (strstr(msg, "Permission denied"))
            return "Errno::EACCES";
        return "Errno::ENOENT";
    }
    if (msg[0] == '(')
        return "Psych::SyntaxError";
    return "Psych::Exception";
}

/* ------------------------------------------------------------------ Ruby helpers */

const char *h3_ruby_class(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF: return "NilClass";
    case HV_BOOL: return hv_bool_val(v) ? "TrueClass" : "FalseClass";
    case HV_INT:
    case HV_BIGINT: return "Integer";
    case HV_FLOAT: return "Float";
    case HV_STRING: return "String";
    case HV_ARRAY: return "Array";
    case HV_HASH: return "Hash";
    case HV_SENSITIVE: return "Object";
    case HV_SYMBOL: return "Symbol";
    }
    return "Object";
}

/* Ruby's to_s as string interpolation ("#{v}") and gsub's block result use it: strings and
 * symbols verbatim, nil as "", everything else as inspect. */
static void rb_to_s(sbuf *out, const hv *v)
{
    if (hv_is(v, HV_SYMBOL))
        sb_addn(out, hv_str_ptr(v), hv_str_len(v));
    else
        ruby_to_s(out, v);
}

char *h3_to_s_dup(const hv *v)
{
    sbuf b = {0};
    rb_to_s(&b, v);
    return sb_take(&b);
}

/* v.inspect, for NoMethodError messages ("undefined method `x' for 5:Integer") */
char *h3_inspect_dup(const hv *v)
{
    sbuf b = {0};
    ruby_inspect(&b, v);
    return sb_take(&b);
}

static bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* String#strip's characters: whitespace and NUL */
static bool is_strip(unsigned char c) { return c == 0 || c == ' ' || (c >= '\t' && c <= '\r'); }

/* Whether a string equals name, as a Ruby symbol or string would be compared with == */
static bool name_is(const hv *v, const char *name)
{
    return (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)) && hv_str_len(v) == strlen(name) &&
           memcmp(hv_str_ptr(v), name, hv_str_len(v)) == 0;
}

/* hash[:name] */
static hv *sym_get(const hv *hash, const char *name)
{
    if (!hv_is(hash, HV_HASH))
        return NULL;
    hv *k = hv_symbol(name, strlen(name));
    hv *v = hv_hash_get(hash, k);
    hv_decref(k);
    return v;
}

/* hash[:name], or hash["name"] when lenient (options given through the C API) */
static hv *opt_get(const hv *hash, const char *name, bool lenient)
{
    hv *v = sym_get(hash, name);
    if (!v && lenient)
        v = hv_hash_gets(hash, name);
    return v;
}

/* ------------------------------------------------------------------ loggers */

static void console_line(h3 *h, const char *level, const char *msg)
{
    /* Console_logger: STDERR.puts("WARN: %s: %s" % [Time.now.to_s, msg]) */
    char stamp[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S %z", &tm);
    FILE *f = h->console ? h->console : stderr;
    size_t n = strlen(msg);
    fprintf(f, "%s: %s: %s%s", level, stamp, msg, n && msg[n - 1] == '\n' ? "" : "\n");
    fflush(f);
}

static void h3_log(h3 *h, h3_log_level level, const char *fmt, va_list ap)
{
    if (!h || h->logk == LOG_NOOP || (h->logk == LOG_CALLBACK && !h->log_fn))
        return;
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    if (h->logk == LOG_CALLBACK)
        h->log_fn(level, sb_str(&b), h->log_ud);
    else
        console_line(h, level == H3_LOG_DEBUG ? "DEBUG" : "WARN", sb_str(&b));
    sb_free(&b);
}

void h3_debug(h3 *h, const char *fmt, ...)
{
    if (!h || h->logk == LOG_NOOP)
        return;
    va_list ap;
    va_start(ap, fmt);
    h3_log(h, H3_LOG_DEBUG, fmt, ap);
    va_end(ap);
}

void h3_warn(h3 *h, const char *fmt, ...)
{
    if (!h || h->logk == LOG_NOOP)
        return;
    va_list ap;
    va_start(ap, fmt);
    h3_log(h, H3_LOG_WARN, fmt, ap);
    va_end(ap);
}

void h3_set_console_stream(h3 *h, FILE *f) { h->console = f; }

void h3_set_logger(h3 *h, const char *name)
{
    /* Hiera.logger=: require "hiera/#{name}_logger", wrapped in a FallbackLogger that falls back
     * to the console when the logger is not suitable; a failure warns through the console. */
    if (strcmp(name, "noop") == 0) {
        h->logk = LOG_NOOP;
        return;
    }
    h->logk = LOG_CONSOLE;
    if (strcmp(name, "console") == 0)
        return;
    if (strcmp(name, "puppet") == 0)
        h3_warn(h, "Not using Hiera::Puppet_logger. It does not report itself to be suitable.");
    else
        h3_warn(h, "Failed to load %s logger: LoadError: cannot load such file -- hiera/%s_logger", name, name);
}

void h3_set_log_callback(h3 *h, h3_log_fn fn, void *userdata)
{
    h->logk = LOG_CALLBACK;
    h->log_fn = fn;
    h->log_ud = userdata;
}

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
static h3_result qualified_lookup(h3 *h, const hv *segs, size_t from, const hv *value, const char *full_key, hv **out,
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
                         h3_ruby_class(v), idx, suffix);
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
            h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "undefined method `include?' for %s:%s", ins,
                     h3_ruby_class(v));
            free(ins);
            r = H3_ERROR;
            break;
        }
        h3_raise(h, err, H3E_LOOKUP, "Exception",
                 "Hiera type mismatch: Got %s when a hash-like object was expected to access value using '%s'%s",
                 h3_ruby_class(v), hv_str_ptr(seg), suffix);
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

static hv *interpolate_ctx(h3 *h, const hv *data, const hv *scope, const h3_ctx *ctx, herr *err);

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
    h3_result r = qualified_lookup(h, segs, 0, scope, full, val, err);
    if (r == H3_NOT_FOUND) {
        hv *extra = hv_hash();
        r = qualified_lookup(h, segs, 0, extra, full, val, err);
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
        h3_result r = h3_backend_lookup(h, k, NULL, scope, ctx->order_override, &pr, ctx, &got, err);
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

static hv *interpolate_ctx(h3 *h, const hv *data, const hv *scope, const h3_ctx *ctx, herr *err)
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
        rb_to_s(&out, val);
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
    return interpolate_ctx(h, data, scope, ctx, err);
}

/* Backend.interpolate_config(entry, scope, override): hierarchy entries and datadirs. The
 * outermost call owns a context with a fresh guard; lookups made from it (hiera() in a
 * hierarchy) interpolate their own config entries in that same context. */
static hv *interpolate_config(h3 *h, const hv *entry, const hv *scope, const hv *override, herr *err)
{
    if (!h->cfg_ctx) {
        h3_guard g = {hv_array()};
        h3_ctx c = {&g, override, true};
        h->cfg_ctx = &c;
        hv *r = interpolate_ctx(h, entry, scope, &c, err);
        h->cfg_ctx = NULL;
        hv_decref(g.seen);
        return r;
    }
    h3_ctx c = *h->cfg_ctx;
    c.order_override = override;
    return interpolate_ctx(h, entry, scope, &c, err);
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
        return interpolate_ctx(h, data, scope, ctx, err);
    case HV_HASH: {
        if (depth > H3_MAX_VALUE_DEPTH) {
            h3_raise(h, err, H3E_LOOKUP, "SystemStackError", "stack level too deep");
            return NULL;
        }
        hv *ans = hv_hash_sized(hv_hash_len(data));
        for (size_t i = 0; i < hv_hash_len(data); i++) {
            hv *k = interpolate_ctx(h, hv_hash_key_at(data, i), scope, ctx, err);
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

/* ------------------------------------------------------------------ merges */

/* The deep_merge options of a merge (symbol keys; string keys too when lenient), on top of the
 * rails_compat default for preserve_unmergeables. Returns false with err when an option cannot
 * be honoured. Strings put in o are owned by *keep (freed by the caller). */
static bool dm_opts_from(h3 *h, const hv *options, bool lenient, bool preserve_default, dm_options *o, char **keep,
                         herr *err)
{
    memset(o, 0, sizeof *o);
    o->preserve_unmergeables = preserve_default;
    keep[0] = keep[1] = NULL;
    if (!options || hv_is(options, HV_UNDEF) || (hv_is(options, HV_BOOL) && !hv_bool_val(options)))
        return true;
    if (!hv_is(options, HV_HASH)) {
        h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of %s into Hash", h3_ruby_class(options));
        return false;
    }
    static const char *const unsupported[] = {"overwrite_arrays", "extend_existing_arrays", "merge_debug"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        if (hv_truthy(opt_get(options, unsupported[i], lenient))) {
            h3_raise(h, err, H3E_LOOKUP, "ArgumentError", "the deep_merge option :%s is not supported",
                     unsupported[i]);
            return false;
        }
    }
    const hv *ko = opt_get(options, "knockout_prefix", lenient);
    if (hv_truthy(ko)) /* the regexp is %r{^#{knockout_prefix}}: anything goes through to_s */
        o->knockout_prefix = keep[0] = h3_to_s_dup(ko);
    const hv *pu = opt_get(options, "preserve_unmergeables", lenient);
    if (pu)
        o->preserve_unmergeables = hv_truthy(pu);
    o->sort_merged_arrays = hv_truthy(opt_get(options, "sort_merged_arrays", lenient));
    o->merge_hash_arrays = hv_truthy(opt_get(options, "merge_hash_arrays", lenient));
    const hv *ua = opt_get(options, "unpack_arrays", lenient);
    if (hv_truthy(ua)) {
        if (!hv_is(ua, HV_STRING)) {
            free(keep[0]);
            keep[0] = NULL;
            h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of %s into String",
                     hv_is(ua, HV_BOOL) ? "true" : h3_ruby_class(ua));
            return false;
        }
        o->unpack_arrays = keep[1] = xstrndup(hv_str_ptr(ua), hv_str_len(ua));
    }
    return true;
}

/* left.merge(right): left's keys in order, right's values winning, right's new keys appended */
static hv *native_merge(hv *left, hv *right)
{
    hv *out = hv_copy(left);
    for (size_t i = 0; i < hv_hash_len(right); i++)
        hv_hash_set(out, hv_incref(hv_hash_key_at(right, i)), hv_incref(hv_hash_val_at(right, i)));
    hv_decref(left);
    hv_decref(right);
    return out;
}

hv *h3_merge_answer(h3 *h, hv *left, hv *right, const h3_resolution *res, herr *err)
{
    const hv *behavior;
    const hv *options;
    bool lenient;
    hv *bstr = NULL;
    if (res && res->has_merge) {
        bstr = res->behavior ? hv_str(res->behavior) : NULL;
        behavior = bstr;
        options = res->merge_options;
        lenient = true;
    } else {
        behavior = sym_get(h->config, "merge_behavior");
        options = sym_get(h->config, "deep_merge_options");
        lenient = false;
    }
    bool deeper = name_is(behavior, "deeper"), deep = name_is(behavior, "deep");
    hv_decref(bstr);
    if (!deeper && !deep)
        return native_merge(left, right); /* native and anything unknown */
    dm_options o;
    char *keep[2];
    if (!dm_opts_from(h, options, lenient, deep, &o, keep, err)) {
        hv_decref(left);
        hv_decref(right);
        return NULL;
    }
    /* rails_compat: left.deeper_merge!(right) is DeepMerge.deep_merge!(right, left): the
     * accumulated higher-priority answer is the SOURCE, the newly found lower level the DEST */
    hv *r = deep_merge_bang(right, left, &o, err);
    free(keep[0]);
    free(keep[1]);
    if (!r)
        note_error(h, H3E_LOOKUP, strstr(err->msg ? err->msg : "", "deep_merge!") ? "DeepMerge::InvalidParameter"
                                                                                   : "ArgumentError");
    return r;
}

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

/* ------------------------------------------------------------------ datadir and datasources */

char *h3_datadir(h3 *h, const char *backend, const hv *scope, herr *err)
{
    const hv *sect = sym_get(h->config, backend);
    const hv *dir = NULL;
    if (hv_truthy(sect)) {
        if (hv_is(sect, HV_HASH)) {
            dir = sym_get(sect, "datadir");
        } else if (hv_is(sect, HV_STRING) || hv_is(sect, HV_ARRAY) || hv_is(sect, HV_INT)) {
            h3_raise(h, err, H3E_CONFIG, "TypeError", "no implicit conversion of Symbol into Integer");
            return NULL;
        } else {
            char *ins = h3_inspect_dup(sect);
            h3_raise(h, err, H3E_CONFIG, "NoMethodError", "undefined method `[]' for %s:%s", ins, h3_ruby_class(sect));
            free(ins);
            return NULL;
        }
    }
    hv *def = NULL;
    if (!hv_truthy(dir))
        dir = def = hv_str("/etc/puppet/environments/%{environment}/hieradata"); /* Hiera::Util.var_dir */
    if (!hv_is(dir, HV_STRING)) {
        h3_raise(h, err, H3E_CONFIG, "Hiera::InvalidConfigurationError", "datadir for %s cannot be an array", backend);
        return NULL;
    }
    hv *r = interpolate_config(h, dir, scope, NULL, err);
    hv_decref(def);
    if (!r)
        return NULL;
    char *s = h3_to_s_dup(r);
    hv_decref(r);
    return s;
}

char *h3_datafile_path(const char *datadir, const char *source, const char *ext)
{
    /* File.join(datadir, "#{source}.#{ext}") */
    size_t dl = strlen(datadir);
    sbuf b = {0};
    sb_adds(&b, datadir);
    if (dl && datadir[dl - 1] == '/') {
        while (*source == '/')
            source++;
    } else if (*source != '/') {
        sb_addc(&b, '/');
    }
    sb_adds(&b, source);
    sb_addc(&b, '.');
    sb_adds(&b, ext);
    return sb_take(&b);
}

/* source =~ /(^\/|\/\/|\/$)/ with Ruby's line anchors */
static bool bad_source(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '/')
            continue;
        if (i == 0 || s[i - 1] == '\n' || i + 1 == n || s[i + 1] == '\n' || s[i + 1] == '/')
            return true;
    }
    return false;
}

static void flatten_entries(hv *out, const hv *v, int depth)
{
    if (hv_is(v, HV_ARRAY) && depth < H3_MAX_VALUE_DEPTH) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            flatten_entries(out, hv_array_get(v, i), depth + 1);
    } else {
        hv_array_push(out, hv_incref((hv *)v));
    }
}

int h3_datasources(h3 *h, const hv *scope, const hv *override, h3_source_fn fn, void *arg, herr *err)
{
    hv *entries = hv_array();
    if (override)
        flatten_entries(entries, override, 0);
    const hv *hier = sym_get(h->config, "hierarchy");
    if (hier)
        flatten_entries(entries, hier, 0);
    else
        hv_array_push(entries, hv_str("common"));
    int rc = 0;
    for (size_t i = 0; i < hv_array_len(entries) && rc == 0; i++) {
        hv *src = interpolate_config(h, hv_array_get(entries, i), scope, override, err);
        if (!src) {
            rc = -1;
            break;
        }
        char *s = h3_to_s_dup(src);
        size_t n = hv_is(src, HV_STRING) || hv_is(src, HV_SYMBOL) ? hv_str_len(src) : strlen(s);
        bool is_str = hv_is(src, HV_STRING), is_sym = hv_is(src, HV_SYMBOL);
        hv_decref(src);
        if ((is_str && n == 0) || ((is_str || is_sym) && bad_source(s, n))) {
            h3_debug(h, "Ignoring bad definition in :hierarchy: '%s'", s);
        } else if (memchr(s, 0, n)) {
            h3_raise(h, err, H3E_LOOKUP, "ArgumentError", "string contains null byte");
            rc = -1;
        } else {
            rc = fn(h, s, arg, err);
        }
        free(s);
    }
    hv_decref(entries);
    return rc < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ Hiera::Filecache */

typedef struct {
    char *path;
    bool has_meta;
    ino_t ino;
    struct timespec mtime;
    off_t size;
    hv *data; /* NULL: Ruby's nil (never read successfully) */
} fc_entry;

struct h3_filecache {
    fc_entry *e;
    size_t n, cap;
};

h3_filecache *h3_filecache_new(void) { return xcalloc(1, sizeof(h3_filecache)); }

void h3_filecache_free(h3_filecache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].path);
        hv_decref(c->e[i].data);
    }
    free(c->e);
    free(c);
}

static fc_entry *fc_find(h3_filecache *c, const char *path)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->e[i].path, path) == 0)
            return &c->e[i];
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->e = xrealloc(c->e, c->cap * sizeof *c->e);
    }
    fc_entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->path = xstrdup(path);
    return e;
}

static const char *errno_class(int e)
{
    switch (e) {
    case ENOENT: return "Errno::ENOENT";
    case EACCES: return "Errno::EACCES";
    case EISDIR: return "Errno::EISDIR";
    default: return "SystemCallError";
    }
}

/* File.read(path, :encoding => 'BOM|UTF-8') */
static char *read_whole(h3 *h, const char *path, size_t *len, herr *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        h3_raise(h, err, H3E_LOOKUP, errno_class(e), "%s @ rb_sysopen - %s", strerror(e), path);
        return NULL;
    }
    sbuf b = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_addn(&b, buf, n);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        sb_free(&b);
        h3_raise(h, err, H3E_LOOKUP, errno_class(e), "%s @ io_fread - %s", strerror(e), path);
        return NULL;
    }
    fclose(f);
    *len = b.len;
    char *s = sb_take(&b);
    if (*len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB && (unsigned char)s[2] == 0xBF) {
        memmove(s, s + 3, *len - 2);
        *len -= 3;
    }
    return s;
}

hv *h3_filecache_read(h3 *h, h3_filecache *c, const char *path, h3_parse_fn parse, herr *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        h3_raise(h, err, H3E_LOOKUP, errno_class(e), "%s @ rb_file_s_stat - %s", strerror(e), path);
        return NULL;
    }
    fc_entry *e = fc_find(c, path);
    bool stale = !(e->has_meta && e->ino == st.st_ino && e->size == st.st_size && e->mtime.tv_sec == st.st_mtim.tv_sec &&
                   e->mtime.tv_nsec == st.st_mtim.tv_nsec);
    if (stale) {
        /* Ruby quirk: the metadata is recorded before reading, so a file that failed to load
         * is not read again until it changes; its previous data (or nil) is served instead */
        e->has_meta = true;
        e->ino = st.st_ino;
        e->size = st.st_size;
        e->mtime = st.st_mtim;
        size_t len;
        char *text = read_whole(h, path, &len, err);
        if (!text)
            return NULL;
        herr perr = {0};
        hv *v = parse(text, len, path, &perr);
        free(text);
        if (!v) {
            const char *cls = h3_psych_class(perr.msg);
            herr_move(err, &perr);
            note_error(h, H3E_LOOKUP, cls);
            return NULL;
        }
        hv_decref(e->data);
        e->data = v;
        if (!hv_is(v, HV_HASH)) {
            h3_raise(h, err, H3E_LOOKUP, "TypeError", "Data retrieved from %s is %s not Hash", path, h3_ruby_class(v));
            return NULL;
        }
    }
    return e->data ? hv_incref(e->data) : hv_undef();
}

/* ------------------------------------------------------------------ the yaml and json backends */

typedef struct {
    const char *section; /* :yaml / :json */
    const char *ext;
    const char *label;   /* "YAML" / "JSON" in debug messages */
    h3_parse_fn parse;
    bool datadir_first; /* yaml uses datasourcefiles (datadir once, up front) */
    bool found_debug;
} file_backend_def;

static hv *parse_yaml3(const char *text, size_t len, const char *path, herr *err)
{
    hv *v = yaml_parse(text, len, path, YAML_HIERA3, err);
    if (v && !hv_truthy(v)) { /* YAML.load(data) || {} */
        hv_decref(v);
        v = hv_hash();
    }
    return v;
}

static hv *parse_json3(const char *text, size_t len, const char *path, herr *err)
{
    hv *v = hjson_parse(text, len, path, err);
    if (!v && err->msg) {
        /* JSON.parse's exception escapes Hiera 3 as it is: its message without json_data's
         * "Unable to parse (<path>): " */
        char *prefix = xasprintf("Unable to parse (%s): ", path);
        size_t n = strlen(prefix);
        if (strncmp(err->msg, prefix, n) == 0)
            memmove(err->msg, err->msg + n, strlen(err->msg + n) + 1);
        free(prefix);
    }
    return v; /* (the parser itself refuses the 101st level, as JSON.parse does) */
}

static const file_backend_def yaml_def = {"yaml", "yaml", "YAML", parse_yaml3, true, true};
static const file_backend_def json_def = {"json", "json", "JSON", parse_json3, false, false};

typedef struct {
    const file_backend_def *def;
    h3_filecache *cache;
    char *datadir;
    const hv *key;
    const char *keys; /* key.to_s for messages */
    const hv *scope;
    const h3_resolution *res;
    h3_strategy strategy;
    h3_ctx *ctx;
    bool found;
    hv *answer;
} file_walk;

/* What `data.empty?`, `data.include?(key)` and `data[key]` do when the Filecache hands back a
 * value that is not a hash (Ruby quirk: only after it once raised its TypeError). Returns 0 to
 * skip the file, 1 with *value when found, -1 on error. */
static int non_hash_data(h3 *h, const hv *data, const hv *key, hv **value, herr *err)
{
    if (hv_is(data, HV_ARRAY)) {
        bool has = false;
        for (size_t i = 0; i < hv_array_len(data) && !has; i++)
            has = hv_equal(hv_array_get(data, i), key);
        if (!hv_array_len(data) || !has)
            return 0;
        h3_raise(h, err, H3E_LOOKUP, "TypeError", hv_is(key, HV_UNDEF) ? "no implicit conversion from nil to integer"
                                                                      : "no implicit conversion of String into Integer");
        return -1;
    }
    if (hv_is(data, HV_STRING)) {
        if (!hv_str_len(data))
            return 0;
        if (!hv_is(key, HV_STRING)) {
            h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of nil into String");
            return -1;
        }
        if (!memmem(hv_str_ptr(data), hv_str_len(data), hv_str_ptr(key), hv_str_len(key)))
            return 0;
        *value = hv_incref((hv *)key); /* String#[](str) is str when it occurs */
        return 1;
    }
    if (hv_is(data, HV_SYMBOL) && !hv_str_len(data))
        return 0;
    char *ins = h3_inspect_dup(data);
    h3_raise(h, err, H3E_LOOKUP, "NoMethodError", "undefined method `%s' for %s:%s",
             hv_is(data, HV_SYMBOL) ? "include?" : "empty?", ins, h3_ruby_class(data));
    free(ins);
    return -1;
}

static int file_source(h3 *h, const char *source, void *arg, herr *err)
{
    file_walk *w = arg;
    const file_backend_def *def = w->def;
    char *datadir = w->datadir;
    h3_debug(h, "Looking for data source %s", source);
    if (!def->datadir_first) {
        datadir = h3_datadir(h, def->section, w->scope, err);
        if (!datadir)
            return -1;
    }
    char *path = h3_datafile_path(datadir, source, def->ext);
    if (datadir != w->datadir)
        free(datadir);
    struct stat st;
    if (stat(path, &st) != 0) {
        h3_debug(h, "Cannot find datafile %s, skipping", path);
        free(path);
        return 0;
    }
    hv *data = h3_filecache_read(h, w->cache, path, def->parse, err);
    free(path);
    if (!data)
        return -1;
    hv *raw = NULL;
    if (hv_is(data, HV_HASH)) {
        if (!hv_hash_len(data) || !(raw = hv_hash_get(data, w->key))) {
            hv_decref(data);
            return 0;
        }
        hv_incref(raw);
    } else {
        int q = non_hash_data(h, data, w->key, &raw, err);
        if (q <= 0) {
            hv_decref(data);
            return q;
        }
    }
    hv_decref(data);
    w->found = true;
    if (def->found_debug)
        h3_debug(h, "Found %s in %s", w->keys, source);
    hv *ans = h3_parse_answer(h, raw, w->scope, w->ctx, err);
    hv_decref(raw);
    if (!ans)
        return -1;
    switch (w->strategy) {
    case H3_ARRAY:
        if (!hv_is(ans, HV_ARRAY) && !hv_is(ans, HV_STRING)) {
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Array and got %s",
                     w->keys, h3_ruby_class(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_array();
        hv_array_push(w->answer, ans);
        return 0;
    case H3_HASH:
        if (!hv_is(ans, HV_HASH)) {
            h3_raise(h, err, H3E_LOOKUP, "Exception", "Hiera type mismatch for key '%s': expected Hash and got %s",
                     w->keys, h3_ruby_class(ans));
            hv_decref(ans);
            return -1;
        }
        if (!w->answer)
            w->answer = hv_hash();
        w->answer = h3_merge_answer(h, ans, w->answer, w->res, err);
        return w->answer ? 0 : -1;
    case H3_PRIORITY:
        hv_decref(w->answer);
        w->answer = ans;
        return 1;
    }
    return 0;
}

static h3_result file_lookup(h3 *h, const file_backend_def *def, void *state, const hv *key, const hv *scope,
                             const hv *override, const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    file_walk w = {def, state, NULL, key, NULL, scope, res, res->has_merge ? H3_HASH : res->strategy, ctx, false, NULL};
    char *keys = h3_to_s_dup(key);
    w.keys = keys;
    h3_debug(h, "Looking up %s in %s backend", keys, def->label);
    int rc = 0;
    if (def->datadir_first) {
        w.datadir = h3_datadir(h, def->section, scope, err);
        if (!w.datadir)
            rc = -1;
    }
    if (rc == 0)
        rc = h3_datasources(h, scope, override, file_source, &w, err);
    free(w.datadir);
    free(keys);
    if (rc < 0) {
        hv_decref(w.answer);
        return H3_ERROR;
    }
    if (!w.found) {
        hv_decref(w.answer);
        return H3_NOT_FOUND;
    }
    *out = w.answer ? w.answer : hv_undef();
    return H3_FOUND;
}

static void *file_create(h3 *h, const char *label)
{
    h3_debug(h, "Hiera %s backend starting", label);
    return h3_filecache_new();
}

static void *yaml_create(h3 *h, herr *err) { return file_create(h, "YAML"); }
static void *json_create(h3 *h, herr *err) { return file_create(h, "JSON"); }
static void file_destroy(void *state) { h3_filecache_free(state); }

static h3_result yaml_lookup(h3 *h, void *state, const hv *key, const hv *scope, const hv *override,
                             const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    return file_lookup(h, &yaml_def, state, key, scope, override, res, ctx, out, err);
}

static h3_result json_lookup(h3 *h, void *state, const hv *key, const hv *scope, const hv *override,
                             const h3_resolution *res, h3_ctx *ctx, hv **out, herr *err)
{
    return file_lookup(h, &json_def, state, key, scope, override, res, ctx, out, err);
}

static const h3_backend h3_yaml_backend = {"yaml", yaml_create, file_destroy, yaml_lookup};
static const h3_backend h3_json_backend = {"json", json_create, file_destroy, json_lookup};

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
        h3_inst *in = canonical_inst(h, i);
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
            r = qualified_lookup(h, segs, 1, nv, key, &sub, err);
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
                         key, h3_ruby_class(nv));
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
                         key, h3_ruby_class(nv));
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
        answer = interpolate_ctx(h, dflt, scope, ctx, err); /* Ruby quirk: a String default IS interpolated */
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
    return h3_backend_lookup(h, key ? key : "", dflt, scope, order_override, res, &ctx, out, err);
}

/* ------------------------------------------------------------------ Hiera::Config.load */

static hv *config_defaults(void)
{
    hv *c = hv_hash();
    hv *b = hv_array();
    hv_array_push(b, hv_str("yaml"));
    hv_hash_set(c, hv_symbol("backends", 8), b);
    hv *hier = hv_array();
    hv_array_push(hier, hv_str("nodes/%{::trusted.certname}"));
    hv_array_push(hier, hv_str("common"));
    hv_hash_set(c, hv_symbol("hierarchy", 9), hier);
    hv_hash_set(c, hv_symbol("merge_behavior", 14), hv_symbol("native", 6));
    return c;
}

/* Keys given as strings become symbols (the in-memory config of the C API). */
static hv *symbolize(const hv *hash, bool nested)
{
    hv *out = hv_hash_sized(hv_hash_len(hash));
    for (size_t i = 0; i < hv_hash_len(hash); i++) {
        const hv *k = hv_hash_key_at(hash, i), *v = hv_hash_val_at(hash, i);
        hv *nk = hv_is(k, HV_STRING) ? hv_symbol(hv_str_ptr(k), hv_str_len(k)) : hv_incref((hv *)k);
        hv *nv = nested && hv_is(v, HV_HASH) ? symbolize(v, false) : hv_incref((hv *)v);
        hv_hash_set(out, nk, nv);
    }
    return out;
}

/* The `version` check of Config.load: 0 to go on, -1 with err. */
static int check_version(h3 *h, const hv *config, const char *path, herr *err)
{
    const hv *v = hv_hash_gets(config, "version");
    if (!hv_truthy(v))
        v = sym_get(config, "version");
    if (!hv_truthy(v))
        return 0; /* version 3 */
    bool big = false;
    switch (hv_kind_of(v)) {
    case HV_INT: big = hv_int_val(v) >= 4; break;
    case HV_BIGINT: big = hv_bigint_digits(v)[0] != '-'; break;
    case HV_FLOAT: big = hv_float_val(v) >= 4; break; /* NaN passes, as in Ruby */
    case HV_STRING:
    case HV_SYMBOL:
        h3_raise(h, err, H3E_CONFIG, "ArgumentError", "comparison of %s with 4 failed", h3_ruby_class(v));
        return -1;
    case HV_HASH:
        h3_raise(h, err, H3E_CONFIG, "TypeError", "no implicit conversion of Integer into Hash");
        return -1;
    default: {
        char *ins = h3_inspect_dup(v);
        h3_raise(h, err, H3E_CONFIG, "NoMethodError", "undefined method `>=' for %s:%s", ins, h3_ruby_class(v));
        free(ins);
        return -1;
    }
    }
    if (big) {
        char *vs = h3_to_s_dup(v);
        h3_raise(h, err, H3E_CONFIG, "RuntimeError",
                 "v%s hiera.yaml is only to be used inside an environment or a module and cannot be given to the global hiera",
                 vs);
        free(vs);
        return -1;
    }
    return 0;
}

/* YAML.load_file(source) of the config, as a Hash to merge (NULL and no error: nothing to merge) */
static int load_config_file(h3 *h, const char *path, hv **out, herr *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        h3_raise(h, err, H3E_CONFIG, "RuntimeError", "Config file %s not found", path);
        return -1;
    }
    size_t len;
    char *text = read_whole(h, path, &len, err);
    if (!text) {
        h->errclass = H3E_CONFIG;
        return -1;
    }
    herr perr = {0};
    hv *v = yaml_parse(text, len, path, YAML_HIERA3, &perr);
    free(text);
    if (!v) {
        /* load_file names the file in Psych's message */
        const char *msg = perr.msg ? perr.msg : "";
        const char *cls = h3_psych_class(msg);
        if (strncmp(msg, "(<unknown>): ", 13) == 0)
            h3_raise(h, err, H3E_CONFIG, cls, "(%s): %s", path, msg + 13);
        else
            h3_raise(h, err, H3E_CONFIG, cls, "%s", msg);
        herr_clear(&perr);
        return -1;
    }
    if (!hv_truthy(v)) { /* an empty file: false, nothing merged */
        hv_decref(v);
        return 0;
    }
    if (!hv_is(v, HV_HASH)) {
        /* config['version'] on a non-Hash, then @config.merge!(config) */
        const char *cls = "TypeError";
        char *msg;
        if (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)) {
            msg = xstrdup("no implicit conversion of Symbol into Integer");
            if (memmem(hv_str_ptr(v), hv_str_len(v), "version", 7)) {
                cls = "ArgumentError";
                free(msg);
                msg = xasprintf("comparison of String with 4 failed");
            }
        } else if (hv_is(v, HV_ARRAY) || hv_is(v, HV_INT) || hv_is(v, HV_BIGINT)) {
            msg = xstrdup("no implicit conversion of String into Integer");
        } else {
            char *ins = h3_inspect_dup(v);
            cls = "NoMethodError";
            msg = xasprintf("undefined method `[]' for %s:%s", ins, h3_ruby_class(v));
            free(ins);
        }
        h3_raise(h, err, H3E_CONFIG, cls, "%s", msg);
        free(msg);
        hv_decref(v);
        return -1;
    }
    if (check_version(h, v, path, err) < 0) {
        hv_decref(v);
        return -1;
    }
    *out = v;
    return 0;
}

static bool known_backend_name(const char *name, const h3_backend **ops)
{
    for (size_t i = 0; i < sizeof h3_backend_table / sizeof *h3_backend_table; i++)
        if (strcmp(h3_backend_table[i]->name, name) == 0) {
            *ops = h3_backend_table[i];
            return true;
        }
    return false;
}

/* Config.load_backends and the backend instances (one per distinct configured name) */
static int load_backends(h3 *h, herr *err)
{
    size_t n = hv_array_len(h->backends);
    h->insts = xcalloc(n ? n : 1, sizeof *h->insts);
    for (size_t i = 0; i < n; i++) {
        const hv *b = hv_array_get(h->backends, i);
        if (!hv_is(b, HV_STRING) && !hv_is(b, HV_SYMBOL)) {
            char *ins = h3_inspect_dup(b);
            h3_raise(h, err, H3E_CONFIG, "NoMethodError", "undefined method `downcase' for %s:%s", ins,
                     h3_ruby_class(b));
            free(ins);
            return -1;
        }
        char *lower = xstrndup(hv_str_ptr(b), hv_str_len(b));
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        const h3_backend *ops = NULL;
        bool ok = strlen(lower) == hv_str_len(b) && known_backend_name(lower, &ops);
        if (!ok) {
            h3_raise(h, err, H3E_CONFIG, "RuntimeError",
                     "Cannot load backend %s: cannot load such file -- hiera/backend/%s_backend", hv_str_ptr(b), lower);
            free(lower);
            return -1;
        }
        free(lower);
        /* the same name twice shares one instance (Ruby's @backends[name]): see canonical_inst */
        h->insts[h->ninsts++] = (h3_inst){ops, hv_incref((hv *)b), NULL, false};
    }
    return 0;
}

static void free_insts(h3 *h)
{
    for (size_t i = 0; i < h->ninsts; i++) {
        bool shared = false;
        for (size_t j = 0; j < i; j++)
            if (hv_eql(h->insts[j].name, h->insts[i].name))
                shared = true;
        if (!shared && h->insts[i].created && h->insts[i].ops->destroy)
            h->insts[i].ops->destroy(h->insts[i].state);
        hv_decref(h->insts[i].name);
    }
    free(h->insts);
    h->insts = NULL;
    h->ninsts = 0;
}

/* The instance a lookup must use for entry i (duplicate names share the first one). */
static h3_inst *canonical_inst(h3 *h, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (hv_eql(h->insts[j].name, h->insts[i].name))
            return &h->insts[j];
    return &h->insts[i];
}

static h3 *h3_alloc(void)
{
    h3 *h = xcalloc(1, sizeof *h);
    h->logk = LOG_CONSOLE;
    return h;
}

/* Everything after the YAML/Hash source is known: merge, backends flattened, logger, backends */
static h3 *finish_config(h3 *h, hv *source, const char **rbclass, herr *err)
{
    h->config = config_defaults();
    if (source) {
        for (size_t i = 0; i < hv_hash_len(source); i++)
            hv_hash_set(h->config, hv_incref(hv_hash_key_at(source, i)), hv_incref(hv_hash_val_at(source, i)));
    }
    h->backends = hv_array();
    flatten_entries(h->backends, sym_get(h->config, "backends"), 0);
    hv *bk = hv_symbol("backends", 8);
    hv_hash_set(h->config, bk, hv_incref(h->backends));
    hv *logger = sym_get(h->config, "logger");
    if (logger) {
        char *name = h3_to_s_dup(logger);
        h3_set_logger(h, name);
        free(name);
    } else {
        hv_hash_set(h->config, hv_symbol("logger", 6), hv_str("console"));
        h3_set_logger(h, "console");
    }
    if (load_backends(h, err) < 0) {
        if (rbclass)
            *rbclass = h3_last_rbclass(h);
        h3_free(h);
        return NULL;
    }
    return h;
}

h3 *h3_new_file(const char *path, const char **rbclass, herr *err)
{
    h3 *h = h3_alloc();
    if (!path)
        path = "/etc/puppet/hiera.yaml"; /* File.join(Util.code_dir, 'hiera.yaml'), then config_dir's: the same */
    hv *src = NULL;
    if (load_config_file(h, path, &src, err) < 0) {
        if (rbclass)
            *rbclass = h3_last_rbclass(h);
        h3_free(h);
        return NULL;
    }
    h3 *r = finish_config(h, src, rbclass, err);
    hv_decref(src);
    return r;
}

h3 *h3_new_hash(const hv *config, const char **rbclass, herr *err)
{
    h3 *h = h3_alloc();
    hv *src = NULL;
    if (hv_is(config, HV_HASH))
        src = symbolize(config, true);
    h3 *r = finish_config(h, src, rbclass, err);
    hv_decref(src);
    return r;
}

void h3_free(h3 *h)
{
    if (!h)
        return;
    free_insts(h);
    hv_decref(h->config);
    hv_decref(h->backends);
    free(h);
}

const hv *h3_config(const h3 *h) { return h->config; }

const hv *h3_config_get(const h3 *h, const char *section, const char *key)
{
    const hv *s = sym_get(h->config, section);
    return key ? sym_get(s, key) : s;
}

/* ------------------------------------------------------------------ Ruby 3.1's pp */

/* PrettyPrint (prettyprint.rb) driven as PP does it for hashes and arrays: a faithful port of
 * its buffer / group queue algorithm (Oppen's), because where lines break depends on it. */

typedef struct pp_group {
    int depth;
    long nbreak; /* breakables of the group still in the buffer */
    bool brk;
    bool queued;
} pp_group;

typedef struct {
    bool is_break;
    sbuf text;  /* Text: its pieces, concatenated */
    long width;
    const char *sep; /* Breakable */
    long indent;
    pp_group *group;
} pp_item;

typedef struct {
    pp_group **g;
    size_t n, cap, dead;
} pp_level;

typedef struct {
    sbuf *out;
    long maxwidth, output_width, buffer_width, indent;
    pp_item *buf; /* the buffer: buf[head..n) */
    size_t head, n, cap;
    pp_group **stack;
    size_t nstack, capstack;
    pp_level *queue;
    size_t nlevels;
    pp_group **all; /* every group, freed at the end */
    size_t nall, capall;
} pp_state;

static long utf8_width(const char *s, size_t n)
{
    long w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            w++;
    return w;
}

static void pq_enq(pp_state *q, pp_group *g)
{
    while ((size_t)g->depth >= q->nlevels) {
        q->queue = xrealloc(q->queue, (q->nlevels + 1) * sizeof *q->queue);
        memset(&q->queue[q->nlevels], 0, sizeof *q->queue);
        q->nlevels++;
    }
    pp_level *l = &q->queue[g->depth];
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->g = xrealloc(l->g, l->cap * sizeof *l->g);
    }
    l->g[l->n++] = g;
    g->queued = true;
}

/* GroupQueue#delete, lazily: the entry is dropped from its level when next compacted */
static void pq_delete(pp_state *q, pp_group *g)
{
    if (!g->queued)
        return;
    g->queued = false;
    pp_level *l = &q->queue[g->depth];
    l->dead++;
    while (l->n && !l->g[l->n - 1]->queued) {
        l->n--;
        l->dead--;
    }
    if (l->dead > 32 && l->dead * 2 > l->n) {
        size_t w = 0;
        for (size_t i = 0; i < l->n; i++)
            if (l->g[i]->queued)
                l->g[w++] = l->g[i];
        l->n = w;
        l->dead = 0;
    }
}

/* GroupQueue#deq: the outermost level first, its most recent group that has breakables (broken
 * and taken out); a level without one has all its groups broken and cleared. */
static pp_group *pq_deq(pp_state *q)
{
    for (size_t d = 0; d < q->nlevels; d++) {
        pp_level *l = &q->queue[d];
        for (size_t i = l->n; i-- > 0;) {
            pp_group *g = l->g[i];
            if (g->queued && g->nbreak > 0) {
                g->queued = false;
                memmove(&l->g[i], &l->g[i + 1], (l->n - i - 1) * sizeof *l->g);
                l->n--;
                g->brk = true;
                return g;
            }
        }
        for (size_t i = 0; i < l->n; i++)
            if (l->g[i]->queued) {
                l->g[i]->brk = true;
                l->g[i]->queued = false;
            }
        l->n = 0;
        l->dead = 0;
    }
    return NULL;
}

static void add_spaces(sbuf *out, long n)
{
    for (long i = 0; i < n; i++)
        sb_addc(out, ' ');
}

/* Text#output / Breakable#output */
static long item_output(pp_state *q, pp_item *it, long output_width)
{
    if (!it->is_break) {
        sb_addn(q->out, sb_str(&it->text), it->text.len);
        return output_width + it->width;
    }
    it->group->nbreak--;
    if (it->group->brk) {
        sb_addc(q->out, '\n');
        add_spaces(q->out, it->indent);
        return it->indent;
    }
    if (it->group->nbreak == 0)
        pq_delete(q, it->group);
    sb_adds(q->out, it->sep);
    return output_width + it->width;
}

static pp_item *buf_first(pp_state *q) { return q->head < q->n ? &q->buf[q->head] : NULL; }

static void buf_shift_output(pp_state *q)
{
    pp_item *it = &q->buf[q->head++];
    q->output_width = item_output(q, it, q->output_width);
    q->buffer_width -= it->width;
    sb_free(&it->text);
    if (q->head == q->n)
        q->head = q->n = 0;
}

static pp_item *buf_push(pp_state *q)
{
    if (q->n == q->cap) {
        if (q->head > 0) {
            memmove(q->buf, q->buf + q->head, (q->n - q->head) * sizeof *q->buf);
            q->n -= q->head;
            q->head = 0;
        }
        if (q->n == q->cap) {
            q->cap = q->cap ? q->cap * 2 : 16;
            q->buf = xrealloc(q->buf, q->cap * sizeof *q->buf);
        }
    }
    pp_item *it = &q->buf[q->n++];
    memset(it, 0, sizeof *it);
    return it;
}

static void break_outmost_groups(pp_state *q)
{
    while (q->maxwidth < q->output_width + q->buffer_width) {
        pp_group *g = pq_deq(q);
        if (!g)
            return;
        while (g->nbreak > 0 && buf_first(q))
            buf_shift_output(q);
        while (buf_first(q) && !buf_first(q)->is_break)
            buf_shift_output(q);
    }
}

static void pp_text(pp_state *q, const char *s, size_t n)
{
    long width = utf8_width(s, n);
    if (q->head == q->n) {
        sb_addn(q->out, s, n);
        q->output_width += width;
        return;
    }
    pp_item *last = &q->buf[q->n - 1];
    if (last->is_break)
        last = buf_push(q);
    sb_addn(&last->text, s, n);
    last->width += width;
    q->buffer_width += width;
    break_outmost_groups(q);
}

static void pp_flush(pp_state *q)
{
    while (buf_first(q))
        buf_shift_output(q);
    q->buffer_width = 0;
}

static void pp_breakable(pp_state *q, const char *sep)
{
    pp_group *g = q->stack[q->nstack - 1];
    long width = (long)strlen(sep);
    if (g->brk) {
        pp_flush(q);
        sb_addc(q->out, '\n');
        add_spaces(q->out, q->indent);
        q->output_width = q->indent;
        q->buffer_width = 0;
        return;
    }
    pp_item *it = buf_push(q);
    it->is_break = true;
    it->sep = sep;
    it->width = width;
    it->indent = q->indent;
    it->group = g;
    g->nbreak++;
    q->buffer_width += width;
    break_outmost_groups(q);
}

static void group_open(pp_state *q, long indent, const char *open)
{
    pp_text(q, open, strlen(open));
    pp_group *g = xcalloc(1, sizeof *g);
    g->depth = q->stack[q->nstack - 1]->depth + 1;
    if (q->nall == q->capall) {
        q->capall = q->capall ? q->capall * 2 : 64;
        q->all = xrealloc(q->all, q->capall * sizeof *q->all);
    }
    q->all[q->nall++] = g;
    if (q->nstack == q->capstack) {
        q->capstack *= 2;
        q->stack = xrealloc(q->stack, q->capstack * sizeof *q->stack);
    }
    q->stack[q->nstack++] = g;
    pq_enq(q, g);
    q->indent += indent;
}

static void group_close(pp_state *q, long indent, const char *close)
{
    q->indent -= indent;
    pp_group *g = q->stack[--q->nstack];
    if (g->nbreak == 0)
        pq_delete(q, g);
    pp_text(q, close, strlen(close));
}

/* self.lines.size > 1 */
static bool multi_line(const char *s, size_t n)
{
    const char *nl = memchr(s, '\n', n);
    return nl && nl + 1 < s + n;
}

/* PP#pp(obj): group { obj.pretty_print(self) } */
static void pp_obj(pp_state *q, const hv *v, int depth)
{
    group_open(q, 0, "");
    if (hv_is(v, HV_ARRAY) && depth < H3_MAX_VALUE_DEPTH) {
        group_open(q, 1, "[");
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i) { /* comma_breakable */
                pp_text(q, ",", 1);
                pp_breakable(q, " ");
            }
            pp_obj(q, hv_array_get(v, i), depth + 1);
        }
        group_close(q, 1, "]");
    } else if (hv_is(v, HV_HASH) && depth < H3_MAX_VALUE_DEPTH) {
        group_open(q, 1, "{");
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i) {
                pp_text(q, ",", 1);
                pp_breakable(q, " ");
            }
            group_open(q, 0, "");
            pp_obj(q, hv_hash_key_at(v, i), depth + 1);
            pp_text(q, "=>", 2);
            group_open(q, 1, "");
            pp_breakable(q, "");
            pp_obj(q, hv_hash_val_at(v, i), depth + 1);
            group_close(q, 1, "");
            group_close(q, 0, "");
        }
        group_close(q, 1, "}");
    } else if (hv_is(v, HV_STRING) && multi_line(hv_str_ptr(v), hv_str_len(v))) {
        /* String#pretty_print: several lines are shown as "line\n" + "line" */
        const char *s = hv_str_ptr(v), *end = s + hv_str_len(v);
        group_open(q, 0, "");
        for (bool first = true; s < end; first = false) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            const char *e = nl ? nl + 1 : end;
            if (!first) {
                pp_text(q, " +", 2);
                pp_breakable(q, " ");
            }
            hv *line = hv_strn(s, (size_t)(e - s));
            pp_obj(q, line, depth + 1);
            hv_decref(line);
            s = e;
        }
        group_close(q, 0, "");
    } else {
        sbuf b = {0};
        ruby_inspect(&b, v);
        pp_text(q, sb_str(&b), b.len);
        sb_free(&b);
    }
    group_close(q, 0, "");
}

void h3_pp(sbuf *out, const hv *v, long width)
{
    pp_state q;
    memset(&q, 0, sizeof q);
    q.out = out;
    q.maxwidth = width;
    pp_group *root = xcalloc(1, sizeof *root);
    q.capstack = 16;
    q.stack = xmalloc(q.capstack * sizeof *q.stack);
    q.stack[q.nstack++] = root;
    pq_enq(&q, root);
    pp_obj(&q, v, 0);
    pp_flush(&q);
    sb_addc(out, '\n');
    for (size_t i = q.head; i < q.n; i++)
        sb_free(&q.buf[i].text);
    free(q.buf);
    free(q.stack);
    for (size_t i = 0; i < q.nlevels; i++)
        free(q.queue[i].g);
    free(q.queue);
    for (size_t i = 0; i < q.nall; i++)
        free(q.all[i]);
    free(q.all);
    free(root);
}

long h3_pp_width(int fd)
{
    /* PP.width_for(out): out.winsize (a terminal), else ENV['COLUMNS'].to_i.nonzero?, else 80;
     * minus one */
    struct winsize ws;
    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0)
        return (long)ws.ws_col - 1;
    const char *c = getenv("COLUMNS");
    if (c) {
        while (is_strip((unsigned char)*c) && *c)
            c++;
        bool neg = *c == '-';
        if (*c == '-' || *c == '+')
            c++;
        long v = 0;
        for (; (*c >= '0' && *c <= '9') || (*c == '_' && c[1] >= '0' && c[1] <= '9' && v); c++) {
            if (*c == '_')
                continue;
            if (v > 1000000000L)
                break;
            v = v * 10 + (*c - '0');
        }
        if (v)
            return (neg ? -v : v) - 1;
    }
    return 79;
}

/* ------------------------------------------------------------------ JSON.dump */

/* json 2.6's convert_UTF8_to_JSON (see render.c for the Puppet rendering of the same) */
static int jd_string(sbuf *out, const char *s, size_t n, herr *err)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_addc(out, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x20 || c == '"' || c == '\\') {
            switch (c) {
            case '"': sb_adds(out, "\\\""); break;
            case '\\': sb_adds(out, "\\\\"); break;
            case '\n': sb_adds(out, "\\n"); break;
            case '\r': sb_adds(out, "\\r"); break;
            case '\t': sb_adds(out, "\\t"); break;
            case '\f': sb_adds(out, "\\f"); break;
            case '\b': sb_adds(out, "\\b"); break;
            default: sb_addf(out, "\\u%04x", c); break;
            }
            i++;
            continue;
        }
        if (c < 0x80) {
            sb_addc(out, (char)c);
            i++;
            continue;
        }
        /* json's trailingBytesForUTF8 and isLegalUTF8 */
        size_t clen = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : c < 0xFC ? 5 : 6;
        if (i + clen > n) {
            herr_set(err, HERR_ERROR, "partial character in source, but hit end");
            return -1;
        }
        bool legal = clen <= 4 && !(c >= 0x80 && c < 0xC2) && c <= 0xF4;
        for (size_t k = 2; legal && k < clen; k++)
            legal = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
        if (legal && clen >= 2) {
            unsigned char lo = 0x80, hi = 0xBF, b = p[i + 1];
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                lo = 0x00, hi = 0x9F;
            else if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                lo = 0x00, hi = 0x8F;
            legal = b >= lo && b <= hi;
        }
        if (!legal) {
            herr_set(err, HERR_ERROR, "source sequence is illegal/malformed utf-8");
            return -1;
        }
        sb_addn(out, s + i, clen);
        i += clen;
    }
    sb_addc(out, '"');
    return 0;
}

static int jd_rec(sbuf *out, const hv *v, int depth, herr *err)
{
    if (depth > H3_MAX_VALUE_DEPTH) {
        herr_set(err, HERR_ERROR, "stack level too deep");
        return -1;
    }
    switch (hv_kind_of(v)) {
    case HV_FLOAT: {
        double d = hv_float_val(v);
        if (isnan(d))
            sb_adds(out, "NaN");
        else if (isinf(d))
            sb_adds(out, d > 0 ? "Infinity" : "-Infinity");
        else
            ruby_float_to_s(out, d);
        return 0;
    }
    case HV_STRING:
    case HV_SYMBOL:
        return jd_string(out, hv_str_ptr(v), hv_str_len(v), err);
    case HV_ARRAY:
        sb_addc(out, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(out, ',');
            if (jd_rec(out, hv_array_get(v, i), depth + 1, err))
                return -1;
        }
        sb_addc(out, ']');
        return 0;
    case HV_HASH:
        sb_addc(out, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_addc(out, ',');
            sbuf k = {0};
            rb_to_s(&k, hv_hash_key_at(v, i)); /* keys through to_s */
            int r = jd_string(out, sb_str(&k), k.len, err);
            sb_free(&k);
            if (r)
                return -1;
            sb_addc(out, ':');
            if (jd_rec(out, hv_hash_val_at(v, i), depth + 1, err))
                return -1;
        }
        sb_addc(out, '}');
        return 0;
    default: /* nil, booleans, integers: their to_s */
        if (hv_is(v, HV_UNDEF))
            sb_adds(out, "null");
        else
            ruby_inspect(out, v);
        return 0;
    }
}

int h3_json_dump(sbuf *out, const hv *v, herr *err)
{
    sbuf tmp = {0};
    int r = jd_rec(&tmp, v, 0, err);
    if (r == 0)
        sb_addn(out, sb_str(&tmp), tmp.len);
    sb_free(&tmp);
    return r;
}

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
    h3_result r = h3_lookup(h, key, default_value, scope, ov, &res, &out, &e);
    hv_decref(ov);
    hv_decref(opts);
    if (r == H3_ERROR) {
        to_public(h, err, &e);
        return HIERA_ERROR;
    }
    if (!out)
        return HIERA_NOT_FOUND;
    *value = out;
    return HIERA_OK;
}

const char *hiera3_version(void) { return H3_HIERA_VERSION; }
