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
 *
 * Layout (see hiera3_int.h): this file holds what every other file uses: errors, the Ruby
 * helpers, loggers, merges and the configuration's sections; h3_interp.c the interpolation,
 * h3_backends.c the datasources, file cache and the yaml and json backends, h3_config.c
 * Hiera::Config.load, h3_lookup.c Hiera.new and Backend.lookup, h3_output.c pp and JSON.dump,
 * h3_api.c the public API.
 */
#include "hiera3/hiera3_int.h"
#include "engine/merge.h"
#include "formats/render.h"
#include "base/fsjournal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
void h3_note_error(h3 *h, h3_errclass cls, const char *rbclass)
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
    if (strstr(msg, "Alias parsing was not enabled"))
        return "Psych::AliasesNotEnabled"; /* (Psych 5, a BadAlias) */
    if (strstr(msg, "Unknown alias"))
        return "Psych::BadAlias";
    if (strstr(msg, "An alias referenced an unknown anchor"))
        return "Psych::AnchorNotDefined"; /* (Psych 5, a BadAlias) */
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

/* Ruby's to_s as string interpolation ("#{v}") and gsub's block result use it: strings and
 * symbols verbatim, nil as "", everything else as inspect. */
void h3_rb_to_s(sbuf *out, const hv *v)
{
    if (hv_is(v, HV_SYMBOL))
        sb_addn(out, hv_str_ptr(v), hv_str_len(v));
    else
        ruby_to_s(out, v);
}

char *h3_to_s_dup(const hv *v)
{
    sbuf b = {0};
    h3_rb_to_s(&b, v);
    return sb_take(&b);
}

/* v.inspect, for NoMethodError messages ("undefined method `x' for 5:Integer") */
char *h3_inspect_dup(const hv *v)
{
    sbuf b = {0};
    ruby_inspect(&b, v);
    return sb_take(&b);
}

/* Whether a string equals name, as a Ruby symbol or string would be compared with == */
static bool name_is(const hv *v, const char *name)
{
    return (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)) && hv_str_len(v) == strlen(name) &&
           memcmp(hv_str_ptr(v), name, hv_str_len(v)) == 0;
}

/* hash[:name] */
hv *h3_sym_get(const hv *hash, const char *name)
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
    hv *v = h3_sym_get(hash, name);
    if (!v && lenient)
        v = hv_hash_gets(hash, name);
    return v;
}

/* ------------------------------------------------------------------ loggers */

static void console_line(h3 *h, const char *level, const char *msg)
{
    /* Console_logger: STDERR.puts("WARN: %s: %s" % [Time.now.to_s, msg]) */
    char stamp[64];
    fsj_taint("a message with the time was written");
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
        h3_raise(h, err, H3E_LOOKUP, "TypeError", "no implicit conversion of %s into Hash", ruby_conversion_name(options));
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
                     ruby_conversion_name(ua));
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
        behavior = h3_sym_get(h->config, "merge_behavior");
        options = h3_sym_get(h->config, "deep_merge_options");
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
        h3_note_error(h, H3E_LOOKUP, strstr(err->msg ? err->msg : "", "deep_merge!") ? "DeepMerge::InvalidParameter"
                                                                                   : "ArgumentError");
    return r;
}

/* ------------------------------------------------------------------ the configuration */

const hv *h3_config_get(const h3 *h, const char *section, const char *key)
{
    const hv *s = h3_sym_get(h->config, section);
    return key ? h3_sym_get(s, key) : s;
}
