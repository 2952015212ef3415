/* keys_cmd.c - `hiera keys`: every key a node can see (the union over its layers, levels and
 * data files), or with --hierarchy its layers, levels and the files they resolve to. The node,
 * facts, environment and Puppet settings are given as to `hiera lookup` (the same command line
 * reader, common.c), and the listing walks the very layers, levels and files a lookup for that
 * node walks (hiera_keys, hiera_hierarchy: src/engine/enumerate.c).
 *
 * What a key is, as Puppet has it: a top-level key of a data file a level of the node resolves
 * to; a module's data only for keys in the module's namespace ("mod::..." in module mod: Puppet
 * asks module mod for those keys and no other module, nor mod for other keys); lookup_options is
 * not a key (a lookup never finds it) and is listed apart in the structured output. A key that
 * holds a dot or a quote is looked up quoted whole ("\"a.b\"": a.b unquoted is b inside a); the
 * text list gives each key in the form `hiera lookup` and `hiera batch` take.
 *
 * Output: text (default; one key per line, sorted, or with --long each key followed by where it
 * is defined, in lookup order), or --render-as json|yaml: {"node", "environment", "keys": [{"key",
 * "lookup_key", "definitions": [{"layer", "module"?, "level", "default_hierarchy"?, "file",
 * "line"}]}], "lookup_options": [...], "errors": [...]}. Exit status: 0 listed, 1 nothing listed
 * (bad options, settings, environment or facts), 2 listed but part of the node's hierarchy could
 * not be read (each problem on stderr, and under "errors"). */
#include "cli/keys_cmd.h"

#include "cli/common.h"
#include "cli/facts_opts.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
    const char *render_as;
    bool long_form, hierarchy;
    cli_facts_args f; /* (--node's facts from PuppetDB) */
} keys_args;

#define COMPILE_WHY "it evaluates the environment's manifests (site.pp and what they include) to set top-scope " \
                    "variables, which needs Puppet's language; give such variables as facts (--facts) instead"

/* hiera lookup's node, facts and settings options (common.c reads them as puppet lookup does),
 * with the listing's own */
static const cli_option KEYS_OPTIONS[] = {
    {"help", 'h', CLI_HELP, 0, NULL},
    {"version", 'V', CLI_VERSION, 0, NULL},
    {"debug", 'd', CLI_REFUSED, 0, "Puppet's debug log is not reproduced"},
    {"compile", 'c', CLI_REFUSED, 0, COMPILE_WHY},
    {"render-as", 0, CLI_VALUE, offsetof(keys_args, render_as), NULL},
    {"long", 'l', CLI_FLAG, offsetof(keys_args, long_form), NULL},
    {"verbose", 'v', CLI_FLAG, offsetof(keys_args, long_form), NULL},
    {"hierarchy", 0, CLI_FLAG, offsetof(keys_args, hierarchy), NULL},
};

static const char *KEYS_USAGE =
    "usage: hiera keys [--help] [--version] [--node <NODE-NAME>] [--facts <FILE>] [--trusted <FILE>]\n"
    "                  [--environment <ENV>] [--long] [--hierarchy] [--render-as s|json|yaml]\n"
    "                  [--unsafe-fact-paths] [--<puppet setting> <VALUE>]\n"
    "                  [--from-puppetdb | --puppetdb <URL|FILE>] [--cert <FILE> --key <FILE>]\n"
    "                  [--cacert <FILE>] [--puppetdb-timeout <SECONDS>] [<pattern>...]\n"
    "\n"
    "Lists every key the node can see: the top-level keys of the data files its hierarchy levels\n"
    "resolve to, in its global, environment and module layers (a module's data only for keys of\n"
    "the module's namespace, mod::..., the only keys Puppet asks a module for; a module's\n"
    "default_hierarchy too). lookup_options is not a key: it is left out of the list (the json and\n"
    "yaml forms say where it is defined). Keys are sorted, one per line, each in the form\n"
    "`hiera lookup` and `hiera batch` take: a key holding a dot or a quote is quoted whole\n"
    "(\"a.b\"), as a lookup reads a.b as b inside a. Patterns (shell wildcards: 'profile::*') keep\n"
    "the keys that match one of them.\n"
    "\n"
    "  --long, -l, --verbose  each key followed by where it is defined, in lookup order (the first\n"
    "                         is the one a first-found lookup answers from): file:line, layer, level\n"
    "  --hierarchy            the layers instead: each one's hiera.yaml, its levels and the files\n"
    "                         (or uris) each level resolves to for this node, found or not\n"
    "  --render-as json|yaml  the same as a document: {\"node\", \"environment\", \"keys\": [{\"key\",\n"
    "                         \"lookup_key\", \"definitions\": [{\"layer\", \"module\", \"level\",\n"
    "                         \"default_hierarchy\", \"file\", \"line\"}]}], \"lookup_options\": [...],\n"
    "                         \"errors\": [...]}; with --hierarchy {\"node\", \"environment\", \"layers\"}\n"
    "                         (s, the default, is the text form)\n"
    "\n"
    "The node, its facts and the settings are given as to `hiera lookup` (see hiera lookup --help):\n"
    "--node (facts from Puppet's YAML facts cache or PuppetDB), --facts FILE over them, --trusted,\n"
    "--environment, --codedir, --confdir, --environmentpath, --hiera_config, --modulepath,\n"
    "--basemodulepath and any other Puppet setting; without --node the local machine's facts from\n"
    "`facter`. Interpolated paths are those of this node. A level whose function hiera does not\n"
    "run (a custom lookup_key or data_dig function) is a problem, as a lookup reaching it fails;\n"
    "uris are not read. The environment's config_version command is not run.\n"
    "\n"
    "Exit status: 0 listed; 1 nothing listed (bad options, settings, environment or facts); 2 listed,\n"
    "but part of the hierarchy could not be read (a hiera.yaml or data file that does not parse...):\n"
    "each problem is said on stderr (and under \"errors\" in json and yaml).\n";

static int fail(const char *fmt, const char *arg)
{
    fputs("Error: Could not run: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 1;
}

static const char *str_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_STRING ? hiera_value_string(v) : NULL;
}

static int64_t int_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_INTEGER ? hiera_value_int(v) : 0;
}

static bool bool_of(const hiera_value *h, const char *key)
{
    const hiera_value *v = h ? hiera_value_hash_get(h, key) : NULL;
    return v && hiera_value_kind(v) == HIERA_BOOLEAN && hiera_value_bool(v);
}

/* "global", "environment production", "module ntp" */
static void put_layer(FILE *out, const hiera_value *d, const char *env)
{
    const char *layer = str_of(d, "layer"), *module = str_of(d, "module");
    fputs(layer ? layer : "?", out);
    if (module)
        fprintf(out, " %s", module);
    else if (layer && !strcmp(layer, "environment") && env)
        fprintf(out, " %s", env);
}

/* The problems the listing met, one line each on stderr. */
static void report_errors(const hiera_value *errors, const char *env)
{
    for (size_t i = 0; i < hiera_value_array_size(errors); i++) {
        char *line = cli_listing_problem(hiera_value_array_get(errors, i), env);
        fprintf(stderr, "Error: hiera keys: %s\n", line);
        free(line);
    }
}

typedef struct {
    const char *key;          /* as written in the data */
    char *lookup;             /* the key to look it up with, or NULL: none reaches it */
    const hiera_value *defs;  /* BORROWED from the listing */
} key_entry;

/* by the key as looked up (as hiera batch orders a node's keys), else as written */
static int cmp_entry(const void *pa, const void *pb)
{
    const key_entry *a = pa, *b = pb;
    return strcmp(a->lookup ? a->lookup : a->key, b->lookup ? b->lookup : b->key);
}

static bool wanted(const key_entry *k, const char *const *patterns, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (fnmatch(patterns[i], k->key, 0) == 0 || (k->lookup && fnmatch(patterns[i], k->lookup, 0) == 0))
            return true;
    return false;
}

/* The keys of the listing that the patterns keep, sorted by their bytes. */
static key_entry *sorted_keys(const hiera_value *keys, const char *const *patterns, size_t npatterns, size_t *n)
{
    size_t total = hiera_value_hash_size(keys), m = 0;
    key_entry *v = calloc(total ? total : 1, sizeof *v);
    if (!v) {
        fputs("hiera keys: out of memory\n", stderr);
        exit(1);
    }
    for (size_t i = 0; i < total; i++) {
        key_entry e = {hiera_value_string(hiera_value_hash_key(keys, i)), NULL, hiera_value_hash_value(keys, i)};
        e.lookup = hiera_key_lookup_form(e.key);
        if (wanted(&e, patterns, npatterns))
            v[m++] = e;
        else
            free(e.lookup);
    }
    qsort(v, m, sizeof *v, cmp_entry);
    *n = m;
    return v;
}

static void put_definition(const hiera_value *d, const char *env)
{
    printf("    %s:%lld  ", str_of(d, "file") ? str_of(d, "file") : "?", (long long)int_of(d, "line"));
    put_layer(stdout, d, env);
    printf(", level \"%s\"%s\n", str_of(d, "level") ? str_of(d, "level") : "",
           bool_of(d, "default_hierarchy") ? " (default_hierarchy)" : "");
}

static void print_keys_text(const key_entry *v, size_t n, bool long_form, const char *env)
{
    for (size_t i = 0; i < n; i++) {
        if (!v[i].lookup) {
            fprintf(stderr, "Warning: hiera keys: the key '%s' holds both quotes and a dot or quote: no lookup can "
                            "reach it (Puppet's neither); left out\n", v[i].key);
            continue;
        }
        puts(v[i].lookup);
        if (long_form)
            for (size_t d = 0; d < hiera_value_array_size(v[i].defs); d++)
                put_definition(hiera_value_array_get(v[i].defs, d), env);
    }
}

static hiera_value *keys_document(const key_entry *v, size_t n)
{
    hiera_value *list = hiera_value_new_array();
    for (size_t i = 0; i < n; i++) {
        hiera_value *k = hiera_value_new_hash();
        hiera_value_hash_set(k, "key", hiera_value_new_string(v[i].key));
        hiera_value_hash_set(k, "lookup_key", v[i].lookup ? hiera_value_new_string(v[i].lookup) : hiera_value_undef());
        hiera_value_hash_set(k, "definitions", hiera_value_incref((hiera_value *)v[i].defs));
        hiera_value_array_push(list, k);
    }
    return list;
}

/* --hierarchy as text: each layer, its levels, and the locations of each */
static void put_levels(const hiera_value *levels)
{
    for (size_t i = 0; i < hiera_value_array_size(levels); i++) {
        const hiera_value *lv = hiera_value_array_get(levels, i);
        printf("  %s (%s %s)\n", str_of(lv, "name") ? str_of(lv, "name") : "", str_of(lv, "kind") ? str_of(lv, "kind") : "",
               str_of(lv, "function") ? str_of(lv, "function") : "");
        const hiera_value *locs = hiera_value_hash_get(lv, "locations");
        for (size_t j = 0; j < hiera_value_array_size(locs); j++) {
            const hiera_value *lc = hiera_value_array_get(locs, j);
            if (str_of(lc, "uri"))
                printf("    uri %s\n", str_of(lc, "uri"));
            else
                printf("    %s%s\n", str_of(lc, "path") ? str_of(lc, "path") : "", bool_of(lc, "exists") ? "" : " (not found)");
        }
    }
}

static bool print_hierarchy_text(const hiera_value *layers, const char *env)
{
    bool errors = false;
    for (size_t i = 0; i < hiera_value_array_size(layers); i++) {
        const hiera_value *d = hiera_value_array_get(layers, i);
        put_layer(stdout, d, env);
        const char *config = str_of(d, "config");
        const hiera_value *err = hiera_value_hash_get(d, "error");
        if (config)
            printf(": %s (version %lld)\n", config, (long long)int_of(d, "version"));
        else if (hiera_value_hash_get(d, "version"))
            printf(": built-in default (version %lld)\n", (long long)int_of(d, "version"));
        else
            fputs(":\n", stdout);
        put_levels(hiera_value_hash_get(d, "levels"));
        if (hiera_value_hash_get(d, "default_levels")) {
            puts("  default_hierarchy:");
            put_levels(hiera_value_hash_get(d, "default_levels"));
        }
        if (err) {
            const char *msg = str_of(err, "message");
            printf("  error: %s\n", msg ? msg : "");
            fputs("Error: hiera keys: ", stderr);
            put_layer(stderr, d, env);
            fprintf(stderr, ": %s\n", msg ? msg : "");
            errors = true;
        }
    }
    return errors;
}

static bool print_rendered(const hiera_value *doc, hiera_render_format rf)
{
    hiera_error err = {0};
    char *text = hiera_render(doc, rf, &err);
    if (!text) {
        fail("%s", err.message ? err.message : "cannot render the document");
        hiera_error_clear(&err);
        return false;
    }
    fputs(text, stdout);
    size_t n = strlen(text);
    if (n == 0 || text[n - 1] != '\n')
        fputc('\n', stdout);
    free(text);
    return true;
}

int keys_main(int argc, char **argv)
{
    keys_args a = {0};
    cli_parsed p;
    int rc = 1;
    hiera_value *trusted = NULL, *listing = NULL, *doc = NULL;
    hiera_node_facts nf = {0};
    hiera *h = NULL;
    hiera_cache *cache = NULL;
    hiera_error err = {0};
    hiera_settings *settings = NULL;
    hiera_environment *env = NULL;
    key_entry *entries = NULL;
    size_t nentries = 0;

    if (cli_parse("hiera keys", argc, argv, KEYS_OPTIONS, sizeof KEYS_OPTIONS / sizeof *KEYS_OPTIONS,
                  &CLI_FACTS_NODE, offsetof(keys_args, f), &a, KEYS_USAGE, &p))
        goto out;
    if (cli_refuse_settings("hiera keys", &p))
        goto out;
    settings = cli_settings(&p);
    if (!settings)
        goto out;
    env = cli_environment(settings);
    if (!env)
        goto out;
    const char *format = a.render_as ? a.render_as : "s";
    hiera_render_format rf;
    if (!strcasecmp(format, "s") || !strcasecmp(format, "text")) {
        rf = HIERA_RENDER_S;
    } else if (!strcasecmp(format, "json") || !strcasecmp(format, "pson")) {
        rf = HIERA_RENDER_JSON;
    } else if (!strcasecmp(format, "yaml")) {
        rf = HIERA_RENDER_YAML;
    } else {
        fail("Unknown rendering format '%s' (hiera keys renders s, json or yaml)", format);
        goto out;
    }
    if (a.hierarchy && p.nargs) {
        fail("%s", "--hierarchy lists the layers: it takes no key patterns");
        goto out;
    }
    /* the node's facts, exactly as hiera lookup gathers them */
    int gathered = cli_node_facts(settings, env, a.f.node, a.f.facts, &a.f.pdb, NULL, &nf);
    if (gathered)
        goto out;
    if (a.f.trusted && !(trusted = cli_load_trusted(a.f.trusted)))
        goto out;
    cache = cli_cache();
    hiera_options o = {.size = sizeof o, .node = nf.node, .facts = nf.given, .cache = cache,
                       .unsafe_fact_paths = a.f.unsafe_fact_paths, .diagnostics = cli_print_diagnostic,
                       .trusted = trusted, .base_facts = nf.base, .settings = settings, .env = env};
    h = hiera_new(&o, &err);
    if (!h) {
        fail("%s", err.message ? err.message : "");
        goto out;
    }
    const char *env_name = hiera_environment_name(env);
    if (a.hierarchy) {
        hiera_value *layers = hiera_hierarchy(h);
        if (rf == HIERA_RENDER_S) {
            rc = print_hierarchy_text(layers, env_name) ? 2 : 0;
            hiera_value_decref(layers);
            goto out;
        }
        bool errors = false;
        for (size_t i = 0; i < hiera_value_array_size(layers); i++)
            errors |= hiera_value_hash_get(hiera_value_array_get(layers, i), "error") != NULL;
        doc = hiera_value_new_hash();
        hiera_value_hash_set(doc, "node", hiera_value_new_string(nf.node ? nf.node : ""));
        hiera_value_hash_set(doc, "environment", hiera_value_new_string(env_name ? env_name : ""));
        hiera_value_hash_set(doc, "layers", layers);
        if (print_rendered(doc, rf))
            rc = errors ? 2 : 0;
        goto out;
    }
    listing = hiera_keys(h);
    const hiera_value *errors = hiera_value_hash_get(listing, "errors");
    entries = sorted_keys(hiera_value_hash_get(listing, "keys"), p.args, p.nargs, &nentries);
    if (rf == HIERA_RENDER_S) {
        print_keys_text(entries, nentries, a.long_form, env_name);
        rc = 0;
    } else {
        doc = hiera_value_new_hash();
        hiera_value_hash_set(doc, "node", hiera_value_new_string(nf.node ? nf.node : ""));
        hiera_value_hash_set(doc, "environment", hiera_value_new_string(env_name ? env_name : ""));
        hiera_value_hash_set(doc, "keys", keys_document(entries, nentries));
        hiera_value_hash_set(doc, "lookup_options", hiera_value_incref(hiera_value_hash_get(listing, "lookup_options")));
        hiera_value_hash_set(doc, "errors", hiera_value_incref((hiera_value *)errors));
        rc = print_rendered(doc, rf) ? 0 : 1;
    }
    fflush(stdout);
    if (rc == 0 && hiera_value_array_size(errors)) {
        report_errors(errors, env_name);
        rc = 2;
    }
out:
    for (size_t i = 0; i < nentries; i++)
        free(entries[i].lookup);
    free(entries);
    hiera_value_decref(doc);
    hiera_value_decref(listing);
    hiera_value_decref(trusted);
    hiera_node_facts_clear(&nf);
    hiera_free(h);
    cli_cache_release(cache);
    hiera_error_clear(&err);
    hiera_environment_free(env);
    hiera_settings_free(settings);
    cli_parsed_free(&p);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "Error: Could not run: cannot write the output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
