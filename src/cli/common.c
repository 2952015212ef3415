/* common.c - what the subcommands share: the file cache they use (kept on disk between runs). */
#include "cli/common.h"
#include "base/fsjournal.h"

#include "formats/diskcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>

hiera_cache *cli_cache(void)
{
    hiera_cache *c = hiera_cache_new();
    const char *dir = fs_getenv("HIERA_CACHE_DIR");
    if (!dir || strcmp(dir, "off") != 0) {
        /* the library reads the bound itself and takes the default for what is not a size: say so */
        const char *max = fs_getenv("HIERA_CACHE_MAX_SIZE");
        uint64_t bytes;
        if (max && *max && !diskcache_parse_size(max, &bytes))
            fprintf(stderr, "Warning: HIERA_CACHE_MAX_SIZE=%s is not a size (bytes, or a number followed by K, M or "
                            "G): the disk cache keeps its default bound of %lluM\n",
                    max, (unsigned long long)(DISKCACHE_DEFAULT_MAX_SIZE >> 20));
        hiera_cache_use_disk(c, dir);
    }
    return c;
}

#if defined(__SANITIZE_ADDRESS__)
#define FREE_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FREE_AT_EXIT 1
#endif
#endif
#if !defined(FREE_AT_EXIT) && defined(HIERA_FREE_ON_EXIT)
#define FREE_AT_EXIT 1
#endif
#ifndef FREE_AT_EXIT
#define FREE_AT_EXIT 0
#endif

bool cli_free_at_exit(void) { return FREE_AT_EXIT || getenv("HIERA_FREE_AT_EXIT"); }

/* kept reachable so that leak checkers see it as such */
hiera_cache *hiera_kept_cache; /* external: never optimised away */

const sbuf *cli_run_identity(void)
{
    static sbuf id;
    static bool done, ok;
    if (!done) {
        struct stat st;
        char cwd[PATH_MAX];
        done = true;
        ok = stat("/proc/self/exe", &st) == 0 && getcwd(cwd, sizeof cwd);
        if (ok) {
            sb_adds(&id, "hiera ");
            sb_adds(&id, HIERA_VERSION);
            sb_addc(&id, 0);
            sb_add_u64(&id, (uint64_t)st.st_dev);
            sb_add_u64(&id, (uint64_t)st.st_ino);
            sb_add_u64(&id, (uint64_t)st.st_size);
            sb_add_u64(&id, (uint64_t)st.st_mtim.tv_sec);
            sb_add_u64(&id, (uint64_t)st.st_mtim.tv_nsec);
            sb_add_u64(&id, (uint64_t)st.st_ctim.tv_sec);
            sb_add_u64(&id, (uint64_t)st.st_ctim.tv_nsec);
            sb_addn(&id, cwd, strlen(cwd) + 1);
            sb_add_u32(&id, (uint32_t)getuid());
            sb_add_u32(&id, (uint32_t)geteuid());
            sb_add_u32(&id, (uint32_t)getegid());
        }
    }
    return ok ? &id : NULL;
}

void cli_cache_release(hiera_cache *c)
{
    if (cli_free_at_exit()) {
        hiera_cache_free(c);
        return;
    }
    hiera_kept_cache = c;
}

void cli_print_diagnostic(const hiera_diagnostic *d, void *userdata)
{
    (void)userdata;
    /* Puppet.warn_once('deprecations', 'hiera.yaml', ...): the key is the same for every
     * version 3 and 4 hiera.yaml, so a process says it of the first one it loads only (a v3
     * global hiera.yaml and a v3 environment one: the global one's) */
    static _Atomic bool deprecated_said;
    if (d->code && !strcmp(d->code, "config-deprecated") && atomic_exchange(&deprecated_said, true))
        return;
    fprintf(stderr, "%s: %s\n",
            d->severity == HIERA_DIAG_CRITICAL ? "Critical" : d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning",
            d->message);
}

static const char *str_at(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
}

char *cli_listing_problem(const hiera_value *e, const char *env)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    const char *layer = str_at(e, "layer"), *module = str_at(e, "module"), *level = str_at(e, "level");
    const char *msg = str_at(e, "message"), *file = str_at(e, "file");
    fputs(layer ? layer : "?", f);
    if (module)
        fprintf(f, " %s", module);
    else if (layer && !strcmp(layer, "environment") && env)
        fprintf(f, " %s", env);
    if (level)
        fprintf(f, ", level \"%s\"", level);
    fprintf(f, ": %s", msg && *msg ? msg : "unknown error");
    const hiera_value *line = hiera_value_hash_get(e, "line");
    if (file && (!msg || !strstr(msg, file))) {
        fprintf(f, " (file: %s", file);
        if (line && hiera_value_kind(line) == HIERA_INTEGER && hiera_value_int(line))
            fprintf(f, ", line: %lld", (long long)hiera_value_int(line));
        fputc(')', f);
    }
    fclose(f);
    return text;
}

/* ------------------------------------------------------------------ puppet lookup's command line */

#include <ctype.h>

/* A switch of the second pass: an option of the command or a Puppet setting (negated: --no-x). */
typedef struct {
    char *name;          /* as OptionParser keeps it: lower case, '_' as '-' */
    int opt;             /* index in the command's options, or -1 */
    int setting;         /* index in Puppet's settings, or -1 */
    bool negated;
    bool takes_value;
} sw_t;

typedef struct {
    sw_t *v;
    size_t n;
} sw_list;

/* p, or the end of the command when an allocation failed */
static void *need(void *p)
{
    if (!p) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *optparse_name(const char *s, const char *prefix)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    char *r = malloc(pl + strlen(s) + 1);
    if (!r) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    memcpy(r, prefix ? prefix : "", pl);
    char *p = r + pl;
    for (; *s; s++)
        *p++ = *s == '_' ? '-' : (char)tolower((unsigned char)*s);
    *p = 0;
    return r;
}

static void sw_add(sw_list *l, char *name, sw_t sw)
{
    sw_t *v = realloc(l->v, (l->n + 1) * sizeof *v);
    if (!v) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    l->v = v;
    sw.name = name;
    l->v[l->n++] = sw;
}

static bool rb_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* OptionParser::Completion.regexp(key): each run of word characters of the key is a prefix of a
 * run in the name, other characters are themselves; the name may go on after the key. */
static bool completes(const char *key, const char *name, bool icase)
{
    const char *k = key, *n = name;
    while (*k) {
        if (rb_word(*k)) {
            for (; rb_word(*k); k++, n++)
                if (!*n || (icase ? tolower((unsigned char)*k) != tolower((unsigned char)*n) : *k != *n))
                    return false;
            while (rb_word(*n))
                n++;
        } else {
            if (*k != *n)
                return false;
            k++, n++;
        }
    }
    return true;
}

typedef struct {
    const char *name;
    bool boolean;
    char short_opt;
} setting_info;

/* The switch of the command's option i, and of setting i (its "no-" form when negated); the
 * table's entries carry their names, these do not. */
static sw_t option_switch(const cli_option *opts, size_t i)
{
    return (sw_t){NULL, (int)i, -1, false, opts[i].kind == CLI_VALUE};
}

static sw_t setting_switch(const setting_info *si, size_t i, bool negated)
{
    return (sw_t){NULL, -1, (int)i, negated, !negated && !si[i].boolean};
}

/* key == optparse_name(name, prefix), without making the name */
static bool is_switch_name(const char *key, const char *prefix, const char *name)
{
    if (prefix) {
        size_t pl = strlen(prefix);
        if (strncmp(key, prefix, pl))
            return false;
        key += pl;
    }
    for (; *name; name++, key++)
        if (*key != (*name == '_' ? '-' : (char)tolower((unsigned char)*name)))
            return false;
    return !*key;
}

/* The switch named exactly key, as complete() finds it first (the command's options, then each
 * setting and its "no-" form), made without the table: nearly every option is given whole, and
 * the table of every setting's switches costs more than the rest of a lookup's parsing. */
static bool exact_switch(const char *key, const cli_option *opts, size_t nopts, const setting_info *si, size_t nsi,
                         sw_t *out)
{
    for (size_t i = 0; i < nopts; i++)
        if (is_switch_name(key, NULL, opts[i].name)) {
            *out = option_switch(opts, i);
            return true;
        }
    for (size_t i = 0; i < nsi; i++) {
        if (is_switch_name(key, NULL, si[i].name)) {
            *out = setting_switch(si, i, false);
            return true;
        }
        if (si[i].boolean && is_switch_name(key, "no-", si[i].name)) {
            *out = setting_switch(si, i, true);
            return true;
        }
    }
    return false;
}

static void switch_table(sw_list *longs, const cli_option *opts, size_t nopts, const setting_info *si, size_t nsi)
{
    if (longs->n)
        return;
    for (size_t i = 0; i < nopts; i++)
        sw_add(longs, optparse_name(opts[i].name, NULL), option_switch(opts, i));
    for (size_t i = 0; i < nsi; i++) {
        sw_add(longs, optparse_name(si[i].name, NULL), setting_switch(si, i, false));
        if (si[i].boolean)
            sw_add(longs, optparse_name(si[i].name, "no-"), setting_switch(si, i, true));
    }
}

static bool same_switch(const sw_t *a, const sw_t *b)
{
    return a->opt == b->opt && a->setting == b->setting && a->negated == b->negated;
}

/* OptionParser#complete: an exact name, else the shortest completion when every other one
 * extends it. NULL with *ambiguous set or not. */
static const sw_t *complete(const sw_list *l, const char *key, bool icase, bool *ambiguous)
{
    *ambiguous = false;
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, key))
            return &l->v[i];
    const sw_t *best = NULL;
    for (size_t i = 0; i < l->n; i++)
        if (completes(key, l->v[i].name, icase) && (!best || strlen(l->v[i].name) < strlen(best->name)))
            best = &l->v[i];
    if (!best)
        return NULL;
    size_t bl = strlen(best->name);
    for (size_t i = 0; i < l->n; i++) {
        const sw_t *c = &l->v[i];
        if (c == best || same_switch(c, best) || !completes(key, c->name, icase))
            continue;
        if (strncmp(c->name, best->name, bl) == 0)
            continue;
        *ambiguous = true;
        return NULL;
    }
    return best;
}

static int parse_fail(const char *what, const char *arg)
{
    fprintf(stderr, "Error: Could not parse application options: %s: %s\n", what, arg);
    return 1;
}

static setting_info *all_settings(hiera_puppet_version version, size_t *n)
{
    size_t cap = 0;
    while (hiera_puppet_setting_info(version, cap, NULL, NULL, NULL))
        cap++;
    setting_info *v = calloc(cap + 1, sizeof *v);
    if (!v) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    for (size_t i = 0; i < cap; i++)
        hiera_puppet_setting_info(version, i, &v[i].name, &v[i].boolean, &v[i].short_opt);
    *n = cap;
    return v;
}

/* Trollop's PARAM_RE: what cannot be an option's parameter */
static bool looks_like_option(const char *a)
{
    return a[0] == '-' && (a[1] == '-' || (a[1] == '.' && !a[2]) || (a[1] && a[1] != '.' && !isdigit((unsigned char)a[1])));
}

/* Puppet 8's Trollop: an option that names no setting as given but does with '-' for '_' (or
 * '_' for '-') is that setting ("--hiera-config" is --hiera_config), with a deprecation warning;
 * "--no-..." only a boolean. The setting's index, or -1. (Puppet 7 ignores such an option here.) */
static int partial_match(const char *name, size_t nlen, const setting_info *si, size_t nsi, bool *negated)
{
    bool no = nlen > 3 && !strncmp(name, "no-", 3);
    const char *base = no ? name + 3 : name;
    size_t blen = no ? nlen - 3 : nlen;
    for (int pass = 0; pass < 2; pass++) {
        char from = pass ? '_' : '-', to = pass ? '-' : '_';
        char *alt = need(strndup(base, blen));
        for (char *p = alt; *p; p++)
            if (*p == from)
                *p = to;
        for (size_t s = 0; s < nsi; s++) {
            if (strcmp(si[s].name, alt) || (no && !si[s].boolean))
                continue;
            fprintf(stderr, "Warning: Partial argument match detected: correct argument is --%s%s, got --%.*s. Partial "
                            "argument matching is deprecated and will be removed in a future release.\n   (location: "
                            "/usr/lib/ruby/vendor_ruby/puppet/util/command_line/trollop.rb:%d:in `block in parse')\n",
                    si[s].boolean ? "[no-]" : "", si[s].name, (int)nlen, name, no ? 342 : 353);
            free(alt);
            *negated = no;
            return (int)s;
        }
        free(alt);
    }
    return -1;
}

/* Puppet's global option pass (Trollop over the settings, invalid options ignored): the
 * settings given with their exact names, in order; used[i] marks the arguments it took. */
static int settings_pass(int argc, char **argv, const setting_info *si, size_t nsi, cli_parsed *out, bool *used)
{
    /* per setting: whether it was given, and the last value given with a parameter */
    int *given_order = need(calloc(nsi + 1, sizeof *given_order));
    const char **last = need(calloc(nsi + 1, sizeof *last));
    char **given_as = need(calloc(nsi + 1, sizeof *given_as)); /* the option as Trollop names it */
    int ngiven = 0;
    int rc = 0;
    const char *run_mode = NULL;
    for (int i = 0; i < argc && rc == 0;) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        const char *name = NULL;
        size_t nlen = 0;
        const char *inline_value = NULL;
        bool is_short = false;
        if (a[0] == '-' && a[1] == '-' && a[2]) {
            const char *eq = strchr(a + 2, '=');
            bool blank = false;
            for (const char *p = a + 2; *p && (!eq || p < eq); p++)
                blank |= isspace((unsigned char)*p);
            if (blank) {
                i++;
                continue;
            }
            name = a + 2;
            nlen = eq ? (size_t)(eq - name) : strlen(name);
            inline_value = eq ? eq + 1 : NULL;
            if (eq && nlen == 0) {
                i++;
                continue;
            }
            if (name[0] == '-') {
                fprintf(stderr, "Error: Could not initialize global default settings: Error parsing arguments\nWrapped exception:\n"
                                "invalid argument syntax: '%.*s'\n", (int)(nlen + 2), a);
                rc = 1;
                break;
            }
        } else if (a[0] == '-' && a[1] && a[1] != '-') {
            is_short = true;
        } else {
            i++;
            continue;
        }
        /* the parameters that follow */
        int np = 0;
        if (!inline_value)
            while (i + 1 + np < argc && !looks_like_option(argv[i + 1 + np]) && strcmp(argv[i + 1 + np], "--"))
                np++;
        if (is_short) {
            size_t len = strlen(a + 1);
            int taken = 0;
            for (size_t k = 0; k < len; k++) {
                int idx = -1;
                for (size_t s = 0; s < nsi; s++)
                    if (si[s].short_opt && si[s].short_opt == a[1 + k])
                        idx = (int)s;
                if (idx < 0)
                    continue;
                bool lastc = k + 1 == len;
                if (!given_as[idx])
                    given_order[ngiven++] = idx;
                free(given_as[idx]);
                given_as[idx] = need(strndup(a + k, 2)); /* "-E" */
                given_as[idx][0] = '-';
                if (si[idx].boolean) {
                    last[idx] = "true";
                } else if (lastc && np > 0) {
                    last[idx] = argv[i + 1];
                    taken = 1;
                }
                used[i] = true;
            }
            if (taken)
                used[i + 1] = true;
            i += 1 + taken;
            continue;
        }
        /* --no-x, --x */
        int idx = -1;
        bool negated = false;
        if (nlen > 3 && !strncmp(name, "no-", 3)) {
            for (size_t s = 0; s < nsi && idx < 0; s++)
                if (si[s].boolean && strlen(si[s].name) == nlen - 3 && !strncmp(si[s].name, name + 3, nlen - 3))
                    idx = (int)s, negated = true;
        } else {
            for (size_t s = 0; s < nsi && idx < 0; s++)
                if (strlen(si[s].name) == nlen && !strncmp(si[s].name, name, nlen))
                    idx = (int)s;
        }
        if (idx < 0 && cli_chosen_puppet_version(NULL) == HIERA_PUPPET_8)
            idx = partial_match(name, nlen, si, nsi, &negated);
        if (idx < 0 && nlen == 8 && !strncmp(name, "run_mode", 8)) {
            const char *v = inline_value ? inline_value : np > 0 ? argv[i + 1] : NULL;
            if (v)
                run_mode = v;
            if (v && !inline_value)
                i++;
            i++;
            continue;
        }
        if (idx < 0) {
            i++;
            continue;
        }
        used[i] = true;
        if (!given_as[idx])
            given_order[ngiven++] = idx;
        free(given_as[idx]);
        given_as[idx] = need(strndup(a, nlen + 2));
        if (si[idx].boolean) {
            last[idx] = negated ? "false" : "true";
            i++;
            continue;
        }
        if (inline_value) {
            last[idx] = inline_value;
            i++;
        } else if (np > 0) {
            last[idx] = argv[i + 1];
            used[i + 1] = true;
            i += 2;
        } else {
            i++;
        }
    }
    if (rc == 0 && run_mode && strcmp(run_mode, "server") && strcmp(run_mode, "master") && strcmp(run_mode, "agent") &&
        strcmp(run_mode, "user")) {
        fprintf(stderr, "Error: Could not initialize global default settings: Invalid run mode '%s'\n", run_mode);
        rc = 1;
    }
    for (int g = 0; g < ngiven && rc == 0; g++) {
        int idx = given_order[g];
        if (!last[idx]) {
            fprintf(stderr, "Error: Could not initialize global default settings: Error parsing arguments\nWrapped exception:\n"
                            "option '%s' needs a parameter\n", given_as[idx]);
            rc = 1;
            break;
        }
        out->settings = need(realloc(out->settings, (out->nsettings + 1) * sizeof *out->settings));
        out->settings[out->nsettings++] = (hiera_setting){si[idx].name, last[idx]};
    }
    for (size_t k = 0; k < nsi; k++)
        free(given_as[k]);
    free(given_order);
    free(last);
    free(given_as);
    return rc;
}

/* The command's own options and the shared ones after them, their offsets moved to where the
 * command's arguments hold their struct (shared_at): *n of them (free) */
static cli_option *all_options(const cli_option *own, size_t nown, const cli_options *shared, size_t shared_at,
                               size_t *n)
{
    size_t ns = shared ? shared->n : 0;
    cli_option *v = need(malloc((nown + ns ? nown + ns : 1) * sizeof *v));
    memcpy(v, own, nown * sizeof *v);
    for (size_t j = 0; j < ns; j++) {
        cli_option *o = &v[nown + j];
        *o = shared->v[j];
        if (o->kind == CLI_VALUE || o->kind == CLI_FLAG)
            o->offset += shared_at;
    }
    *n = nown + ns;
    return v;
}

int cli_parse(const char *command, int argc, char **argv, const cli_option *own, size_t nown,
              const cli_options *shared, size_t shared_at, void *target, const char *usage, cli_parsed *out)
{
    memset(out, 0, sizeof *out);
    out->args = calloc((size_t)argc + 1, sizeof *out->args);
    bool *used = calloc((size_t)argc + 1, sizeof *used);
    if (!out->args || !used) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    /* the Puppet answered as (main.c took --puppet-version away): whose settings may be named */
    out->puppet_version = cli_chosen_puppet_version(&out->puppet_version_why);
    if (!out->puppet_version) {
        free(used);
        return 1;
    }
    size_t nsi, nopts;
    setting_info *si = all_settings(out->puppet_version, &nsi);
    cli_option *opts = all_options(own, nown, shared, shared_at, &nopts);
    int rc = settings_pass(argc, argv, si, nsi, out, used);
    sw_list longs = {0}; /* every switch, made when an abbreviation is to be completed */
    sw_t found;           /* a switch found without the table */
    if (rc)
        goto done;
    bool posix = fs_getenv("POSIXLY_CORRECT") != NULL;
    /* arguments are read in turn; a bundle of one-letter options puts its rest back in front */
    char *pending = NULL;
    int i = 0, pending_at = -1;
    const cli_option *refused = NULL; /* reported once the whole line is read, as Puppet would fail later */
    while (rc == 0 && (pending || i < argc)) {
        int at = pending ? pending_at : i;
        char *a = pending ? pending : argv[i++];
        bool from_bundle = pending != NULL;
        if (!from_bundle && !strcmp(a, "--")) {
            while (i < argc)
                out->args[out->nargs++] = argv[i++];
            break;
        }
        const sw_t *sw = NULL;
        const char *value = NULL;
        if (a[0] == '-' && a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            char *key = need(eq ? strndup(a + 2, (size_t)(eq - a - 2)) : strdup(a + 2));
            for (char *p = key; *p; p++)
                if (*p == '_')
                    *p = '-';
            bool amb = false;
            if (exact_switch(key, opts, nopts, si, nsi, &found)) {
                sw = &found;
            } else {
                switch_table(&longs, opts, nopts, si, nsi);
                sw = complete(&longs, key, true, &amb);
            }
            free(key);
            if (!sw) {
                rc = parse_fail(amb ? "ambiguous option" : "invalid option", a);
                break;
            }
            if (eq && !sw->takes_value) {
                rc = parse_fail("needless argument", a);
                break;
            }
            if (sw->takes_value) {
                if (eq) {
                    value = eq + 1;
                } else if (i < argc) {
                    value = argv[i++];
                } else {
                    rc = parse_fail("missing argument", a);
                    break;
                }
            }
        } else if (a[0] == '-' && a[1]) {
            char c = a[1];
            const char *rest = a[2] ? a + 2 : NULL;
            bool eq = rest && rest[0] == '=';
            for (size_t k = 0; k < nopts && !sw; k++)
                if (opts[k].short_opt == c) {
                    found = option_switch(opts, k);
                    sw = &found;
                }
            for (size_t k = 0; k < nsi && !sw; k++)
                if (si[k].short_opt == c) {
                    found = setting_switch(si, k, false);
                    sw = &found;
                }
            if (!sw) {
                /* no such letter: a long option it alone begins */
                char key[2] = {c, 0};
                bool amb;
                switch_table(&longs, opts, nopts, si, nsi);
                sw = complete(&longs, key, false, &amb);
                if (!sw) {
                    rc = parse_fail(amb ? "ambiguous option" : "invalid option", a);
                    break;
                }
                eq = eq || !rest;
            }
            if (sw->takes_value) {
                if (rest) {
                    value = rest;
                } else if (i < argc) {
                    value = argv[i++];
                } else {
                    rc = parse_fail("missing argument", a);
                    break;
                }
            } else if (rest) {
                if (eq) {
                    rc = parse_fail("needless argument", a);
                    break;
                }
                /* the rest is the next letter(s) */
                char *next = need(malloc(strlen(rest) + 2));
                next[0] = '-';
                strcpy(next + 1, rest);
                free(from_bundle ? a : NULL);
                pending = next;
                pending_at = at;
                a = NULL;
            }
        } else {
            out->args[out->nargs++] = a;
            if (posix) {
                while (i < argc)
                    out->args[out->nargs++] = argv[i++];
                break;
            }
            continue;
        }
        if (a && from_bundle) {
            free(a);
            pending = NULL;
        }
        if (sw->setting >= 0) {
            if (at < 0 || !used[at]) {
                const char *exact = si[sw->setting].name;
                fprintf(stderr, "Warning: %s: %s is accepted by puppet lookup but not applied (Puppet applies a setting "
                                "only when given as --%s%s); ignored, as Puppet does\n",
                        command, at >= 0 ? argv[at] : "-", sw->negated ? "no-" : "", exact);
            }
            continue;
        }
        const cli_option *o = &opts[sw->opt];
        switch (o->kind) {
        case CLI_VALUE: *(const char **)((char *)target + o->offset) = value; break;
        case CLI_FLAG: *(bool *)((char *)target + o->offset) = true; break;
        case CLI_HELP: fputs(usage, stdout); exit(0);
        case CLI_VERSION: printf("%s\n", hiera_version()); exit(0);
        case CLI_REFUSED:
            if (!refused)
                refused = o;
            break;
        }
    }
    free(pending);
    if (rc == 0 && refused) {
        fprintf(stderr, "Error: %s: --%s is not supported: %s\n", command, refused->name, refused->why);
        rc = 1;
    }
done:
    for (size_t k = 0; k < longs.n; k++)
        free(longs.v[k].name);
    free(longs.v);
    free(opts);
    free(si);
    free(used);
    return rc;
}

void cli_parsed_free(cli_parsed *p)
{
    free(p->settings);
    free(p->args);
    free(p->puppet_version_why);
    memset(p, 0, sizeof *p);
}

hiera_puppet_version cli_puppet_version(int argc, char **argv, const char *opt, bool *skip, char **why)
{
    if (why)
        *why = NULL;
    size_t olen = strlen(opt);
    const char *given = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (strncmp(a, "--", 2) || strncmp(a + 2, opt, olen) || (a[2 + olen] && a[2 + olen] != '='))
            continue;
        if (skip)
            skip[i] = true;
        if (a[2 + olen] == '=') {
            given = a + 3 + olen;
        } else if (i + 1 < argc) {
            given = argv[++i];
            if (skip)
                skip[i] = true;
        } else {
            fprintf(stderr, "Error: Could not parse application options: missing argument: %s\n", a);
            return HIERA_PUPPET_AUTO;
        }
    }
    if (given) {
        if (strcmp(given, "7") && strcmp(given, "8")) {
            fprintf(stderr, "Error: --%s takes 7 or 8 (the Puppet to answer as), not '%s'\n", opt, given);
            return HIERA_PUPPET_AUTO;
        }
        if (why) {
            size_t n = strlen(opt) + strlen(given) + 4;
            *why = malloc(n);
            if (*why)
                snprintf(*why, n, "--%s %s", opt, given);
        }
        return given[0] == '8' ? HIERA_PUPPET_8 : HIERA_PUPPET_7;
    }
    char *found = NULL;
    hiera_puppet_version v = hiera_puppet_version_find(&found);
    if (!v) {
        fprintf(stderr, "Error: %s\n", found ? found : "HIERA_PUPPET_VERSION must be 7 or 8");
        free(found);
        return HIERA_PUPPET_AUTO;
    }
    if (why)
        *why = found;
    else
        free(found);
    return v;
}

/* what main.c found on the command line (cli_choose_puppet_version) */
static hiera_puppet_version chosen;
static char *chosen_why;

hiera_puppet_version cli_choose_puppet_version(int *argc, char **argv)
{
    bool *skip = calloc((size_t)*argc + 1, sizeof *skip);
    if (!skip) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    char *why = NULL;
    hiera_puppet_version v = cli_puppet_version(*argc, argv, "puppet-version", skip, &why);
    bool given = false;
    int n = 0;
    for (int i = 0; i < *argc; i++) {
        given |= skip[i];
        if (!skip[i])
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    *argc = n;
    free(skip);
    if (v && given)
        setenv("HIERA_PUPPET_VERSION", v == HIERA_PUPPET_8 ? "8" : "7", 1); /* (for what hiera runs, and the library's AUTO) */
    chosen = v;
    free(chosen_why);
    chosen_why = why;
    return v;
}

hiera_puppet_version cli_chosen_puppet_version(char **why)
{
    if (!chosen) /* (not chosen by main: the environment and the installed Puppet decide) */
        return cli_puppet_version(0, NULL, "puppet-version", NULL, why);
    if (why) {
        *why = chosen_why ? strdup(chosen_why) : NULL;
    }
    return chosen;
}

const char *cli_puppet_version_text(hiera_puppet_version v)
{
    return v == HIERA_PUPPET_8 ? "Puppet 8.10 and Hiera 3.12" : "Puppet 7.23 and Hiera 3.10";
}

hiera_settings *cli_settings(const cli_parsed *p)
{
    hiera_settings_options o = HIERA_SETTINGS_OPTIONS_INIT;
    o.cli = p->settings;
    o.ncli = p->nsettings;
    o.puppet_version = p->puppet_version;
    o.diagnostics = cli_print_diagnostic;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&o, &err);
    if (!s)
        fprintf(stderr, "Error: Could not initialize global default settings: %s\n", err.message ? err.message : "");
    hiera_error_clear(&err);
    return s;
}

hiera_environment *cli_environment(const hiera_settings *s)
{
    hiera_error err = {0};
    hiera_environment *e = hiera_environment_load(s, NULL, &err);
    if (!e) {
        if (err.file && err.line)
            fprintf(stderr, "Error: Could not run: %s (file: %s, line: %d)\n", err.message ? err.message : "", err.file, err.line);
        else
            fprintf(stderr, "Error: Could not run: %s\n", err.message ? err.message : "");
    }
    hiera_error_clear(&err);
    return e;
}

int cli_refuse_settings(const char *command, const cli_parsed *p)
{
    for (size_t i = 0; i < p->nsettings; i++) {
        const hiera_setting *s = &p->settings[i];
        if (!strcmp(s->name, "log_level") && !strcasecmp(s->value, "debug")) {
            fprintf(stderr, "Error: %s: --log_level debug is not supported: Puppet's debug log is not reproduced "
                            "(--explain shows how a value is found)\n", command);
            return 1;
        }
    }
    return 0;
}
