/* hiera3_cmd.c - `hiera` without a subcommand: Hiera 3.10's bin/hiera. Options are parsed as
 * Ruby's OptionParser#parse! does it (options anywhere unless POSIXLY_CORRECT is set, bundled
 * short options, unique prefixes of long options in any case, `--` ends the options), each
 * option acting when it is met (-V prints the version at once, -c checks its file at once);
 * then the scope files, KEY [DEFAULT] [VAR=VALUE...], the lookup, and output_answer. Where
 * Ruby would die with a stack trace we print one line "hiera: <message>" and exit 1. */
#include "cli/common.h"
#include "cli/hiera3_cmd.h"
#include "base/fsjournal.h"

#include "hiera.h"

#include "hiera3/hiera3.h" /* the engine; the public API is in include/hiera.h */
#include "formats/diskcache.h"
#include "formats/json.h"
#include "formats/render.h"
#include "formats/psych.h"
#include "base/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char HELP[] =
    "Usage: hiera [options] key [default value] [variable='text'...]\n"
    "\n"
    "The default value will be used if no value is found for the key. Scope variables\n"
    "will be interpolated into %{variable} placeholders in the hierarchy and in\n"
    "returned values.\n"
    "\n"
    "    -V, --version                    Version information\n"
    "    -d, --debug                      Show debugging information\n"
    "    -a, --array                      Return all values as an array\n"
    "    -h, --hash                       Return all values as a hash\n"
    "    -c, --config CONFIG              Configuration file\n"
    "    -j, --json SCOPE                 JSON format file to load scope from\n"
    "    -y, --yaml SCOPE                 YAML format file to load scope from\n"
    "    -m, --mcollective IDENTITY       Use facts from a node (via mcollective) as scope\n"
    "    -i, --inventory_service IDENTITY Use facts from a node (via Puppet's inventory service) as scope\n"
    "    -f, --format TYPE                Output the result in a specific format (ruby, yaml or json); default is 'ruby'\n";

/* The switches, in OptionParser's terms. Long names are kept with '-' for '_' as OptionParser
 * stores them. */
typedef struct {
    const char *name;
    char shortc;
    bool arg;
} opt_def;

static const opt_def OPTS[] = {
    {"version", 'V', false}, {"debug", 'd', false},      {"array", 'a', false},
    {"hash", 'h', false},    {"config", 'c', true},      {"json", 'j', true},
    {"yaml", 'y', true},     {"mcollective", 'm', true}, {"inventory-service", 'i', true},
    {"format", 'f', true},
};
static const opt_def HELP_OPT = {"help", 0, false}; /* OptionParser's own (Officious) */

enum { FMT_RUBY, FMT_JSON, FMT_YAML };
enum { SC_JSON, SC_YAML, SC_MCO, SC_INV };

typedef struct {
    int type;
    const char *value;
} scope_src;

typedef struct {
    const char *config;
    bool verbose;
    h3_strategy strategy;
    int format;
    scope_src *scopes;
    size_t nscopes;
    const char **pos; /* non-option arguments */
    size_t npos;
} options;

/* ------------------------------------------------------------------ option parsing */

static bool is_wordc(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c; }

/* OptionParser::Completion.regexp(key, icase): /\A<key with \w* after each word>/ */
static bool completes(const char *key, const char *name, bool icase)
{
    size_t i = 0, j = 0, kn = strlen(key), nn = strlen(name);
    while (i < kn) {
        if (is_wordc((unsigned char)key[i])) {
            while (i < kn && is_wordc((unsigned char)key[i])) {
                if (j >= nn)
                    return false;
                unsigned char a = (unsigned char)key[i], b = (unsigned char)name[j];
                if (icase ? lower(a) != lower(b) : a != b)
                    return false;
                i++, j++;
            }
            while (j < nn && is_wordc((unsigned char)name[j]))
                j++;
        } else {
            if (j >= nn || key[i] != name[j])
                return false;
            i++, j++;
        }
    }
    return true;
}

/* complete(:long, key): an exact name, else the one name of our list the key abbreviates,
 * else OptionParser's own --help. NULL: invalid option. */
static const opt_def *complete_long(const char *key, bool icase)
{
    for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i++)
        if (strcmp(OPTS[i].name, key) == 0)
            return &OPTS[i];
    if (strcmp(key, "help") == 0)
        return &HELP_OPT;
    for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i++)
        if (completes(key, OPTS[i].name, icase))
            return &OPTS[i];
    if (completes(key, "help", icase))
        return &HELP_OPT;
    return NULL;
}

static const opt_def *find_short(char c)
{
    for (size_t i = 0; i < sizeof OPTS / sizeof *OPTS; i++)
        if (OPTS[i].shortc == c)
            return &OPTS[i];
    return NULL;
}

static int fail(const char *what, const char *arg)
{
    fprintf(stderr, "hiera: %s: %s\n", what, arg);
    return 1;
}

/* The option's block. Returns -1 to go on, else the exit status. */
static int act(options *o, const opt_def *d, const char *val)
{
    switch (d->shortc) {
    case 0: /* --help */
        cli_print_subcommands(stdout); /* the hiera command's own, before Hiera 3's usage */
        fputs(HELP, stdout);
        return 0;
    case 'V':
        if (cli_chosen_puppet_version(NULL) == HIERA_PUPPET_8) {
            /* Hiera 3.12's Hiera.version calls File.exists?, which Ruby 3.2 removed: on Debian 13
             * `hiera --version` fails so */
            fputs("/usr/lib/ruby/vendor_ruby/hiera/version.rb:84:in `read_version_file': undefined method `exists?' "
                  "for class File (NoMethodError)\n",
                  stderr);
            return 1;
        }
        printf("%s\n", H3_HIERA_VERSION);
        return 0;
    case 'd': o->verbose = true; break;
    case 'a': o->strategy = H3_ARRAY; break;
    case 'h': o->strategy = H3_HASH; break;
    case 'c':
        if (!path_exists(val)) {
            fprintf(stderr, "Cannot find config file: %s\n", val);
            return 1;
        }
        o->config = val;
        break;
    case 'f':
        if (strcmp(val, "json") == 0)
            o->format = FMT_JSON;
        else if (strcmp(val, "ruby") == 0)
            o->format = FMT_RUBY;
        else if (strcmp(val, "yaml") == 0)
            o->format = FMT_YAML;
        else {
            fprintf(stderr, "Unknown output format: %s\n", val);
            return 1;
        }
        break;
    default: {
        int type = d->shortc == 'j' ? SC_JSON : d->shortc == 'y' ? SC_YAML : d->shortc == 'm' ? SC_MCO : SC_INV;
        o->scopes = realloc(o->scopes, (o->nscopes + 1) * sizeof *o->scopes);
        if (!o->scopes)
            abort();
        o->scopes[o->nscopes++] = (scope_src){type, val};
        break;
    }
    }
    return -1;
}

/* A long option ("--name", "--name=value"); *i is advanced past a consumed value. */
static int long_option(options *o, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *body = arg + 2, *eq = strchr(body, '=');
    size_t nlen = eq ? (size_t)(eq - body) : strlen(body);
    char *key = malloc(nlen + 1);
    if (!key)
        abort();
    for (size_t k = 0; k < nlen; k++)
        key[k] = body[k] == '_' ? '-' : body[k];
    key[nlen] = 0;
    const opt_def *d = complete_long(key, true);
    free(key);
    if (!d)
        return fail("invalid option", arg);
    const char *val = eq ? eq + 1 : NULL;
    if (d->arg) {
        if (!val) {
            if (*i + 1 >= argc)
                return fail("missing argument", arg);
            val = argv[++*i];
        }
    } else if (val) {
        return fail("needless argument", arg);
    }
    return act(o, d, val);
}

/* A bundle of short options ("-ad", "-fjson", "-c FILE"). */
static int short_options(options *o, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *p = arg + 1;
    while (*p) {
        char c = *p;
        const char *rest = p[1] ? p + 1 : NULL;
        const opt_def *d = find_short(c);
        if (!d && c == 'v')
            d = &OPTS[0]; /* no short -v: OptionParser completes it to the long --version */
        if (!d) {
            char opt[3] = {'-', c, 0};
            return fail("invalid option", opt);
        }
        if (d->arg) {
            const char *val = rest;
            if (!val) {
                if (*i + 1 >= argc)
                    return fail("missing argument", arg);
                val = argv[++*i];
            }
            return act(o, d, val); /* the rest of the bundle was the value */
        }
        if (rest && *rest == '=')
            return fail("needless argument", arg);
        int r = act(o, d, NULL);
        if (r >= 0)
            return r;
        if (!rest)
            break;
        /* the rest goes on as "-" + rest with its leading dashes dropped */
        while (*rest == '-')
            rest++;
        p = rest;
    }
    return -1;
}

/* OptionParser#parse!: returns -1 when the command goes on, else the exit status. */
static int parse_options(options *o, int argc, char **argv)
{
    bool in_order = fs_getenv("POSIXLY_CORRECT") != NULL;
    o->pos = calloc((size_t)argc + 1, sizeof *o->pos);
    if (!o->pos)
        abort();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = -1;
        if (strcmp(a, "--") == 0) {
            for (i++; i < argc; i++)
                o->pos[o->npos++] = argv[i];
            break;
        }
        if (a[0] == '-' && a[1] == '-') {
            if (a[2] == '=') /* the empty long option (the terminator) with a value */
                return fail("needless argument", a);
            r = long_option(o, argc, argv, &i);
        } else if (a[0] == '-' && a[1]) {
            r = short_options(o, argc, argv, &i);
        } else if (in_order) {
            for (; i < argc; i++)
                o->pos[o->npos++] = argv[i];
            break;
        } else {
            o->pos[o->npos++] = a;
        }
        if (r >= 0)
            return r;
    }
    return -1;
}

/* ------------------------------------------------------------------ scope */

static char *read_file(const char *path, size_t *len, char **why)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, NULL, &fe)) {
        sb_free(&b);
        *why = file_read_ruby_message(path, &fe);
        return NULL;
    }
    *len = b.len;
    return sb_take(&b);
}

/* load_scope(source, type); NULL with *msg ("Class: message") on failure */
static hv *load_scope(const scope_src *s, char **msg)
{
    const char *tname = s->type == SC_JSON ? "json" : "yaml";
    if (s->type == SC_MCO) {
        *msg = xstrdup("RuntimeError: Don't know how to load data type mcollective");
        return NULL;
    }
    if (s->type == SC_INV) {
        *msg = xstrdup("SystemExit: the Puppet inventory service is not supported");
        return NULL;
    }
    if (!path_exists(s->value)) {
        *msg = xasprintf("RuntimeError: Cannot find scope %s file %s", tname, s->value);
        return NULL;
    }
    size_t len = 0;
    char *why = NULL;
    char *text = read_file(s->value, &len, &why);
    if (!text) {
        *msg = xasprintf("SystemCallError: %s", why);
        free(why);
        return NULL;
    }
    herr e = {0};
    hv *v;
    if (s->type == SC_JSON) {
        /* JSON.load: an empty source is nil */
        v = len == 0 ? hv_undef() : hjson_parse(text, len, s->value, &e);
    } else {
        v = yaml_parse(text, len, s->value, YAML_HIERA3, &e);
    }
    free(text);
    if (!v) {
        const char *m = e.msg ? e.msg : "parse error";
        if (s->type == SC_JSON)
            *msg = xasprintf("JSON::ParserError: %s", m);
        else if (strncmp(m, "(<unknown>): ", 13) == 0) /* load_file names the file */
            *msg = xasprintf("Psych::SyntaxError: (%s): %s", s->value, m + 13);
        else
            *msg = xasprintf("%s: %s", h3_psych_class(m), m);
        herr_clear(&e);
        return NULL;
    }
    if (!hv_is(v, HV_HASH)) {
        hv_decref(v);
        *msg = xasprintf("RuntimeError: Scope from %s file %s should be a Hash", tname, s->value);
        return NULL;
    }
    return v;
}

/* arg =~ /^(.+?)=(.+?)$/ (line anchors): the first line holding name=value with both sides
 * non-empty; the name is the shortest such prefix. */
static bool scope_arg(const char *a, size_t *nlen, const char **val, size_t *vlen)
{
    const char *line = a;
    for (;;) {
        const char *eol = strchr(line, '\n');
        size_t ll = eol ? (size_t)(eol - line) : strlen(line);
        for (size_t k = 1; k + 1 < ll; k++) {
            if (line[k] == '=') {
                *nlen = k;
                *val = line + k + 1;
                *vlen = ll - k - 1;
                /* the name starts at the line's start */
                return true;
            }
        }
        if (!eol)
            return false;
        line = eol + 1;
    }
}

/* ------------------------------------------------------------------ output_answer */

static int output_answer(const hv *ans, int format)
{
    hiera_error e = {0};
    long width = h3_pp_width(STDOUT_FILENO) + 1;
    char *text = hiera3_render(ans, format == FMT_JSON ? HIERA3_FORMAT_JSON : format == FMT_YAML ? HIERA3_FORMAT_YAML
                                                                                                   : HIERA3_FORMAT_RUBY,
                               width, &e);
    if (!text) {
        fprintf(stderr, "hiera: %s\n", e.message ? e.message : "cannot render the answer");
        hiera_error_clear(&e);
        return 1;
    }
    fputs(text, stdout);
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ main */

static int run(options *o)
{
    hv *scope = hv_hash();
    for (size_t i = 0; i < o->nscopes; i++) {
        char *msg = NULL;
        hv *s = load_scope(&o->scopes[i], &msg);
        if (!s) {
            const char *names[] = {"JSON", "YAML", "Mcollective", "Puppet inventory service"};
            fprintf(stderr, "Could not load %s scope: %s\n", names[o->scopes[i].type], msg);
            free(msg);
            hv_decref(scope);
            return 1;
        }
        hv_decref(scope);
        scope = s; /* the last scope file wins */
    }
    if (o->npos == 0) {
        fputs("Please supply a data item to look up\n", stderr);
        hv_decref(scope);
        return 1;
    }
    const char *key = o->pos[0];
    hv *dflt = NULL;
    for (size_t i = 1; i < o->npos; i++) {
        const char *a = o->pos[i], *val;
        size_t nlen, vlen;
        if (scope_arg(a, &nlen, &val, &vlen)) {
            const char *line = val - nlen - 1;
            hv_hash_set(scope, hv_strn(line, nlen), hv_strn(val, vlen));
        } else if (!dflt) {
            dflt = hv_str(a);
        } else {
            fprintf(stderr, "Don't know how to parse scope argument: %s\n", a);
        }
    }

    herr e = {0};
    const char *rbclass = "RuntimeError";
    h3 *h = h3_new_file(o->config, &rbclass, &e);
    if (!h) {
        fprintf(stderr, "Failed to start Hiera: %s: %s\n", rbclass, e.msg);
        herr_clear(&e);
        hv_decref(scope);
        hv_decref(dflt);
        return 1;
    }
    if (!o->verbose)
        h3_set_logger(h, "noop");
    /* the data files parsed once, kept on disk between runs (HIERA_CACHE_DIR, "off": none) */
    const char *cache_dir = fs_getenv("HIERA_CACHE_DIR");
    diskcache *disk = cache_dir && !strcmp(cache_dir, "off") ? NULL : diskcache_open(cache_dir);
    h3_set_disk(h, disk);
    h3_resolution res = {o->strategy, false, NULL, NULL};
    hv *ans = NULL;
    h3_result r = h3_lookup(h, key, dflt, scope, NULL, &res, &ans, &e);
    int status;
    if (r == H3_ERROR) {
        fprintf(stderr, "hiera: %s\n", e.msg ? e.msg : "lookup failed");
        herr_clear(&e);
        status = 1;
    } else {
        hv *nil = NULL;
        if (!ans)
            ans = nil = hv_undef();
        status = output_answer(ans, o->format);
        if (ans != nil)
            hv_decref(ans);
        hv_decref(nil);
    }
    h3_free(h);
    diskcache_close(disk);
    hv_decref(scope);
    hv_decref(dflt);
    return status;
}

int hiera3_main(int argc, char **argv)
{
    options o;
    memset(&o, 0, sizeof o);
    o.strategy = H3_PRIORITY;
    o.format = FMT_RUBY;
    int r = parse_options(&o, argc, argv);
    if (r < 0)
        r = run(&o);
    free(o.scopes);
    free(o.pos);
    return r;
}
