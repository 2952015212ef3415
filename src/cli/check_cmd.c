/* check_cmd.c - `hiera check`: lints a control repository (src/check) and prints what it found
 * as text (file:line:column: severity: message [rule], grouped by file and coloured on a
 * terminal, with a summary), json, junit, sarif or GitHub workflow annotations.
 *
 * Exit status: 0 no error (warnings allowed), 1 errors found, 2 the check could not run (bad
 * options, a path that does not exist, an unreadable configuration or facts folder). */
#include "cli/check_cmd.h"

#include "check/check.h"
#include "cli/facts_opts.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *CHECK_USAGE =
    "usage: hiera check [--codedir <DIR> [--environment <ENV> | --all-environments]]\n"
    "                   [--environmentpath <DIR>] [--confdir <DIR>] [--hiera_config <FILE>]\n"
    "                   [--facts-dir <DIR>] [--format text|json|junit|sarif|github]\n"
    "                   [--rule <NAME>=off|note|warning|error ...] [--warnings-as-errors]\n"
    "                   [--config <FILE> | --no-config] [--color auto|always|never] [--jobs <N>]\n"
    "                   [--list-rules] [--puppet-version 7|8] [<PATH>...]\n"
    "                   [--from-puppetdb | --puppetdb <URL|FILE>] [--nodes-query <QUERY>] ...\n"
    "\n"
    "Checks a control repository: every hiera.yaml and data file (syntax, files no level reads,\n"
    "YAML traps, interpolation, lookup_options, eyaml), the keys against the classes and\n"
    "parameters of the manifests on the modulepath (unknown parameters and classes, values\n"
    "against parameter types), and with --facts-dir what each node gets (types after merging,\n"
    "interpolation and convert_to; files no node reads; keys always overridden).\n"
    "\n"
    "PATH: a control repository or environment folder (default: the current folder), a module\n"
    "(a folder with metadata.json), or a code directory (a folder with environments/). Without\n"
    "PATH, --codedir checks its environment --environment (default production).\n"
    "--facts-dir: one facts file per node (NAME.yaml, NAME.yml, NAME.json, or Puppet's YAML\n"
    "facts cache); or the nodes and facts of PuppetDB, as hiera batch takes them (see below).\n"
    "Configuration: .hiera-check.yaml at the root of what is checked (or --config FILE):\n"
    "  rules: {RULE: off|note|warning|error}, exclude: [path patterns], warnings_as_errors: bool.\n"
    "A comment '# hiera-check: disable=RULE[,RULE]' turns rules off for its line (or, alone on\n"
    "its line, for the next one); '# hiera-check: disable-file=RULE' for the whole file.\n"
    "--puppet-version (default: the installed Puppet): the puppet8-* rules, what Puppet 8's\n"
    "defaults refuse, are errors where the lookups fail (strict = error: Puppet 8's default, or\n"
    "puppet.conf's: of --confdir, else of Puppet's default confdir as hiera lookup reads it),\n"
    "warnings as Puppet 7 or with strict = warning or off.\n"
    "Exit status: 0 no error (warnings and notes allowed), 1 errors found, 2 the check could not run.\n"
    "\n"
    "%s";

typedef struct {
    check_options o;
    const char **paths, **rules;
    const char *format, *color, *jobs;
    bool list_rules;
    cli_pdb_args pdb;              /* PuppetDB as the node set */
    cli_puppet_settings_args ps;   /* Puppet's settings for its client */
} check_args;

static bool flag_is(const char *given, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char a = given[i] == '-' ? '_' : given[i], b = name[i] == '-' ? '_' : name[i];
        if (a != b)
            return false;
    }
    return true;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("hiera check: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nRun 'hiera check --help' for the options.\n", stderr);
    return 2;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, check_args *a)
{
    a->paths = calloc((size_t)argc + 1, sizeof *a->paths);
    a->rules = calloc((size_t)argc + 1, sizeof *a->rules);
    if (!a->paths || !a->rules)
        return usage_error("%s", "out of memory");
    size_t np = 0, nr = 0;
    bool done = false;
    static const struct {
        const char *name;
        size_t off;
    } value_flags[] = {
        {"codedir", offsetof(check_args, o.codedir)},
        {"confdir", offsetof(check_args, o.confdir)},
        {"environmentpath", offsetof(check_args, o.environmentpath)},
        {"hiera_config", offsetof(check_args, o.hiera_config)},
        {"environment", offsetof(check_args, o.environment)},
        {"facts_dir", offsetof(check_args, o.facts_dir)},
        {"config", offsetof(check_args, o.config_file)},
        {"format", offsetof(check_args, format)},
        {"color", offsetof(check_args, color)},
        {"jobs", offsetof(check_args, jobs)},
        {"certname", offsetof(check_args, ps.certname)},
        {"ssldir", offsetof(check_args, ps.ssldir)},
        {"hostcert", offsetof(check_args, ps.hostcert)},
        {"hostprivkey", offsetof(check_args, ps.hostprivkey)},
        {"localcacert", offsetof(check_args, ps.localcacert)},
        {"hostcrl", offsetof(check_args, ps.hostcrl)},
        {"certificate_revocation", offsetof(check_args, ps.certificate_revocation)},
    };
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (done || arg[0] != '-' || (arg[1] != '-' && arg[1] != 'h') || (arg[1] == '-' && !arg[2])) {
            if (!done && !strcmp(arg, "--")) {
                done = true;
                continue;
            }
            if (!done && arg[0] == '-' && arg[1])
                return usage_error("unknown option %s", arg);
            a->paths[np++] = arg;
            continue;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            printf(CHECK_USAGE, CLI_PDB_USAGE);
            return 0;
        }
        int pr = cli_pdb_parse_arg(&a->pdb, argc, argv, &i);
        if (pr < 0)
            return 2;
        if (pr > 0)
            continue;
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        bool matched = false;
        for (size_t f = 0; f < sizeof value_flags / sizeof *value_flags && !matched; f++) {
            if (!flag_is(name, nlen, value_flags[f].name))
                continue;
            const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!val)
                return usage_error("option --%s needs a value", value_flags[f].name);
            *(const char **)((char *)a + value_flags[f].off) = val;
            matched = true;
        }
        if (matched)
            continue;
        if (flag_is(name, nlen, "rule")) {
            const char *val = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            if (!val)
                return usage_error("option --%s needs a value", "rule");
            a->rules[nr++] = val;
        } else if (flag_is(name, nlen, "all_environments")) {
            a->o.all_environments = true;
        } else if (flag_is(name, nlen, "warnings_as_errors")) {
            a->o.warnings_as_errors = true;
        } else if (flag_is(name, nlen, "no_config")) {
            a->o.no_config = true;
        } else if (flag_is(name, nlen, "list_rules")) {
            a->list_rules = true;
        } else {
            return usage_error("unknown option %s", arg);
        }
    }
    a->o.paths = a->paths;
    a->o.npaths = np;
    a->o.rule_overrides = a->rules;
    a->o.nrule_overrides = nr;
    if (a->o.all_environments && a->o.environment)
        return usage_error("%s", "give --environment or --all-environments, not both");
    if (a->jobs) {
        char *end;
        long j = strtol(a->jobs, &end, 10);
        if (*end || j < 1 || j > 256)
            return usage_error("--jobs %s: expected a number from 1 to 256", a->jobs);
        a->o.jobs = (int)j;
    }
    if (!a->format)
        a->format = "text";
    if (strcmp(a->format, "text") && strcmp(a->format, "json") && strcmp(a->format, "junit") &&
        strcmp(a->format, "sarif") && strcmp(a->format, "github"))
        return usage_error("--format %s: expected text, json, junit, sarif or github", a->format);
    if (a->color && strcmp(a->color, "auto") && strcmp(a->color, "always") && strcmp(a->color, "never"))
        return usage_error("--color %s: expected auto, always or never", a->color);
    return -1;
}

/* ------------------------------------------------------------------ PuppetDB's nodes */

/* The check's threads ask for node i's facts; a pager per pass over the nodes (environment). */
typedef struct {
    hiera_facts_source *src;
    hiera_value *list;  /* the node names */
    const char **names; /* (list's strings) */
    size_t n;
    hiera_facts_pager *pager;
} pdb_nodes;

static void pdb_begin(void *data)
{
    pdb_nodes *pn = data;
    hiera_facts_pager_free(pn->pager);
    pn->pager = hiera_facts_pager_new(pn->src, pn->names, pn->n, NULL);
}

static struct hv *pdb_facts(void *data, size_t i, bool *stored, char **msg)
{
    pdb_nodes *pn = data;
    hiera_node_facts nf;
    hiera_error err = {0};
    struct hv *f = NULL;
    *msg = NULL;
    if (hiera_facts_pager_get(pn->pager, i, &nf, &err) == HIERA_OK) {
        *stored = nf.base != NULL;
        f = (struct hv *)(nf.base ? nf.base : nf.given);
        nf.base = nf.given = NULL;
    } else {
        *msg = err.message ? err.message : strdup("no facts");
        err.message = NULL;
    }
    hiera_node_facts_clear(&nf);
    hiera_error_clear(&err);
    return f;
}

/* ------------------------------------------------------------------ paths */

static char *cwd;

/* A file as shown: relative to the working folder when it is under it. */
static const char *shown(const char *file)
{
    if (!cwd || !*file)
        return file;
    size_t n = strlen(cwd);
    if (strncmp(file, cwd, n) == 0 && file[n] == '/')
        return file + n + 1;
    return file;
}

static const char *sev_word(int s) { return check_severity_name(s); }

/* ", on nodes a, b, c and N more" */
static void nodes_text(FILE *out, const check_finding *f)
{
    if (!f->nnodes)
        return;
    fputs(f->nnodes == 1 ? " [node " : " [nodes ", out);
    size_t show = f->nnodes <= 5 ? f->nnodes : 3;
    for (size_t i = 0; i < show; i++)
        fprintf(out, "%s%s", i ? ", " : "", f->nodes[i]);
    if (show < f->nnodes)
        fprintf(out, " and %zu more", f->nnodes - show);
    fputc(']', out);
}

/* ------------------------------------------------------------------ text */

static void print_text(const check_report *r, bool color)
{
    const char *bold = color ? "\033[1m" : "", *red = color ? "\033[1;31m" : "", *yellow = color ? "\033[1;33m" : "",
               *dim = color ? "\033[2m" : "", *reset = color ? "\033[0m" : "";
    size_t errors = 0, warnings = 0, notes = 0, files = 0;
    const char *last = NULL;
    const char *cyan = color ? "\033[1;36m" : "";
    for (size_t i = 0; i < r->n; i++) {
        const check_finding *f = &r->v[i];
        if (!last || strcmp(last, f->file) != 0) {
            if (color && last)
                fputc('\n', stdout);
            if (color)
                printf("%s%s%s\n", bold, *f->file ? shown(f->file) : "(no file)", reset);
            files++;
            last = f->file;
        }
        if (f->severity == CHECK_ERROR)
            errors++;
        else if (f->severity == CHECK_NOTE)
            notes++;
        else
            warnings++;
        printf("%s%s%s:%u:%u: %s%s%s: %s", color ? "  " : "", bold, shown(f->file), f->line, f->col,
               f->severity == CHECK_ERROR ? red : f->severity == CHECK_NOTE ? cyan : yellow, sev_word(f->severity), reset,
               f->message);
        nodes_text(stdout, f);
        printf(" %s[%s]%s\n", dim, f->rule, reset);
    }
    for (size_t i = 0; i < r->nnotes; i++)
        printf("%snote: %s%s\n", dim, r->notes[i], reset);
    if (r->n && color)
        fputc('\n', stdout);
    printf("%s%zu error%s, %zu warning%s%s", errors ? red : "", errors, errors == 1 ? "" : "s", warnings,
           warnings == 1 ? "" : "s", errors ? reset : "");
    if (notes)
        printf(", %zu note%s", notes, notes == 1 ? "" : "s");
    if (files)
        printf(" in %zu file%s", files, files == 1 ? "" : "s");
    printf(" (checked %zu hiera.yaml, %zu data file%s, %zu manifest%s", r->configs, r->data_files,
           r->data_files == 1 ? "" : "s", r->manifests, r->manifests == 1 ? "" : "s");
    if (r->nodes)
        printf(", %zu node%s", r->nodes, r->nodes == 1 ? "" : "s");
    printf(")\n");
}

/* ------------------------------------------------------------------ json, sarif */

/* The length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (!n || (n == 2 && s[0] < 0xC2))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A JSON string; bytes that are not UTF-8 become '?' so that the text is never lost. */
static void jstr(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            putchar('\\');
            putchar(c);
            p++;
        } else if (c == '\n') {
            fputs("\\n", stdout);
            p++;
        } else if (c == '\t') {
            fputs("\\t", stdout);
            p++;
        } else if (c == '\r') {
            fputs("\\r", stdout);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            printf("\\u%04x", c);
            p++;
        } else {
            size_t n = utf8_seq(p);
            if (!n) {
                putchar('?');
                p++;
            } else {
                fwrite(p, 1, n, stdout);
                p += n;
            }
        }
    }
    putchar('"');
}

static void jnodes(const check_finding *f)
{
    putchar('[');
    for (size_t i = 0; i < f->nnodes; i++) {
        if (i)
            fputs(", ", stdout);
        jstr(f->nodes[i]);
    }
    putchar(']');
}

static void print_json(const check_report *r)
{
    size_t errors = 0, warnings = 0, notes = 0;
    fputs("{\n  \"findings\": [", stdout);
    for (size_t i = 0; i < r->n; i++) {
        const check_finding *f = &r->v[i];
        fputs(i ? ",\n    {" : "\n    {", stdout);
        fputs("\"file\": ", stdout);
        jstr(shown(f->file));
        printf(", \"line\": %u, \"column\": %u, \"severity\": ", f->line, f->col);
        jstr(sev_word(f->severity));
        fputs(", \"rule\": ", stdout);
        jstr(f->rule);
        fputs(", \"message\": ", stdout);
        jstr(f->message);
        if (f->nnodes) {
            fputs(", \"nodes\": ", stdout);
            jnodes(f);
        }
        putchar('}');
        if (f->severity == CHECK_ERROR)
            errors++;
        else if (f->severity == CHECK_NOTE)
            notes++;
        else
            warnings++;
    }
    fputs(r->n ? "\n  ],\n  \"notes\": [" : "],\n  \"notes\": [", stdout);
    for (size_t i = 0; i < r->nnotes; i++) {
        fputs(i ? ",\n    " : "\n    ", stdout);
        jstr(r->notes[i]);
    }
    fputs(r->nnotes ? "\n  ],\n" : "],\n", stdout);
    printf("  \"summary\": {\"errors\": %zu, \"warnings\": %zu, \"notes\": %zu, \"configs\": %zu, \"data_files\": %zu, "
           "\"manifests\": %zu, \"nodes\": %zu}\n}\n",
           errors, warnings, notes, r->configs, r->data_files, r->manifests, r->nodes);
}

/* path with the characters a URI cannot hold as they are percent-encoded (malloc'ed) */
static char *uri_path(const char *path)
{
    size_t n = strlen(path);
    char *out = malloc(3 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~/!$&'()*+,;=:@", *p)) {
            *o++ = (char)*p;
        } else {
            sprintf(o, "%%%02X", *p);
            o += 3;
        }
    }
    *o = 0;
    return out;
}

/* file:///path (a folder ends in '/') */
static char *file_uri(const char *path, bool folder)
{
    char *enc = uri_path(path);
    size_t n = strlen(enc);
    char *out = malloc(n + 10);
    if (out)
        sprintf(out, "file://%s%s", enc, folder && (!n || enc[n - 1] != '/') ? "/" : "");
    free(enc);
    return out;
}

/* file relative to root when it is under it, else NULL */
static const char *under_root(const char *root, const char *file)
{
    if (!root)
        return NULL;
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (strncmp(file, root, n) == 0 && file[n] == '/')
        return file + n + 1;
    return NULL;
}

static void print_sarif(const check_report *r)
{
    fputs("{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"version\": \"2.1.0\",\n"
          "  \"runs\": [\n    {\n      \"tool\": {\n        \"driver\": {\n          \"name\": \"hiera check\",\n"
          "          \"rules\": [",
          stdout);
    for (const check_rule *cr = check_rules; cr->name; cr++) {
        fputs(cr == check_rules ? "\n            {" : ",\n            {", stdout);
        fputs("\"id\": ", stdout);
        jstr(cr->name);
        fputs(", \"shortDescription\": {\"text\": ", stdout);
        jstr(cr->summary);
        printf("}, \"defaultConfiguration\": {\"level\": \"%s\"}, \"properties\": {\"tags\": [",
               sev_word(cr->severity));
        jstr(cr->group);
        fputs("]}}", stdout);
    }
    fputs("\n          ]\n        }\n      },\n", stdout);
    if (r->root) {
        /* locations are relative to the folder checked (SRCROOT), as code-scanning tools expect */
        fputs("      \"originalUriBaseIds\": {\"SRCROOT\": {\"uri\": ", stdout);
        char *uri = file_uri(r->root, true);
        jstr(uri);
        free(uri);
        fputs("}},\n", stdout);
    }
    fputs("      \"results\": [", stdout);
    for (size_t i = 0; i < r->n; i++) {
        const check_finding *f = &r->v[i];
        fputs(i ? ",\n        {" : "\n        {", stdout);
        fputs("\"ruleId\": ", stdout);
        jstr(f->rule);
        printf(", \"level\": \"%s\", \"message\": {\"text\": ", sev_word(f->severity));
        jstr(f->message);
        putchar('}');
        if (*f->file) {
            fputs(", \"locations\": [{\"physicalLocation\": {\"artifactLocation\": {\"uri\": ", stdout);
            const char *rel = under_root(r->root, f->file);
            if (rel) {
                char *uri = uri_path(rel);
                jstr(uri);
                free(uri);
                fputs(", \"uriBaseId\": \"SRCROOT\"", stdout);
            } else {
                char *uri = file_uri(f->file, false);
                jstr(uri);
                free(uri);
            }
            putchar('}');
            if (f->line) {
                printf(", \"region\": {\"startLine\": %u", f->line);
                if (f->col)
                    printf(", \"startColumn\": %u", f->col);
                putchar('}');
            }
            fputs("}}]", stdout);
        }
        if (f->nnodes) {
            fputs(", \"properties\": {\"nodes\": ", stdout);
            jnodes(f);
            putchar('}');
        }
        putchar('}');
    }
    fputs(r->n ? "\n      ]\n    }\n  ]\n}\n" : "]\n    }\n  ]\n}\n", stdout);
}

/* ------------------------------------------------------------------ junit */

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' && *s != '\r')
                fputc('?', out);
            else
                fputc(*s, out);
        }
    }
}

/* One test suite per file with findings; each finding is a test case, an error a failure (a
 * warning is reported in the case's output and passes, unless --warnings-as-errors made it an
 * error). */
static void print_junit(const check_report *r)
{
    size_t errors = 0;
    for (size_t i = 0; i < r->n; i++)
        errors += r->v[i].severity == CHECK_ERROR;
    printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    printf("<testsuites name=\"hiera check\" tests=\"%zu\" failures=\"%zu\">\n", r->n ? r->n : 1, errors);
    if (!r->n) {
        printf("  <testsuite name=\"hiera check\" tests=\"1\" failures=\"0\">\n");
        printf("    <testcase classname=\"hiera check\" name=\"no problems found\"/>\n  </testsuite>\n");
    }
    for (size_t i = 0; i < r->n;) {
        size_t j = i, fails = 0;
        while (j < r->n && !strcmp(r->v[j].file, r->v[i].file)) {
            fails += r->v[j].severity == CHECK_ERROR;
            j++;
        }
        printf("  <testsuite name=\"");
        xml_text(stdout, *r->v[i].file ? shown(r->v[i].file) : "(no file)");
        printf("\" tests=\"%zu\" failures=\"%zu\">\n", j - i, fails);
        for (size_t k = i; k < j; k++) {
            const check_finding *f = &r->v[k];
            printf("    <testcase classname=\"%s\" name=\"", f->rule);
            xml_text(stdout, shown(f->file));
            printf(":%u:%u\">\n", f->line, f->col);
            {
                char *msg = NULL;
                size_t len = 0;
                FILE *m = open_memstream(&msg, &len);
                if (m) {
                    fputs(f->message, m);
                    nodes_text(m, f);
                    fclose(m);
                }
                if (f->severity == CHECK_ERROR) {
                    printf("      <failure type=\"%s\" message=\"", f->rule);
                    xml_text(stdout, msg ? msg : f->message);
                    printf("\">");
                    xml_text(stdout, shown(f->file));
                    printf(":%u:%u: error: ", f->line, f->col);
                    xml_text(stdout, msg ? msg : f->message);
                    printf(" [%s]</failure>\n", f->rule);
                } else {
                    printf("      <system-out>");
                    xml_text(stdout, shown(f->file));
                    printf(":%u:%u: %s: ", f->line, f->col, sev_word(f->severity));
                    xml_text(stdout, msg ? msg : f->message);
                    printf(" [%s]</system-out>\n", f->rule);
                }
                free(msg);
            }
            printf("    </testcase>\n");
        }
        printf("  </testsuite>\n");
        i = j;
    }
    printf("</testsuites>\n");
}

/* ------------------------------------------------------------------ github */

static void gh_escape(const char *s, bool property)
{
    for (; *s; s++) {
        switch (*s) {
        case '%': fputs("%25", stdout); break;
        case '\r': fputs("%0D", stdout); break;
        case '\n': fputs("%0A", stdout); break;
        case ':': fputs(property ? "%3A" : ":", stdout); break;
        case ',': fputs(property ? "%2C" : ",", stdout); break;
        default: fputc(*s, stdout);
        }
    }
}

static void print_github(const check_report *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const check_finding *f = &r->v[i];
        printf("::%s ", f->severity == CHECK_ERROR ? "error" : f->severity == CHECK_NOTE ? "notice" : "warning");
        if (*f->file) {
            fputs("file=", stdout);
            gh_escape(shown(f->file), true);
            if (f->line)
                printf(",line=%u", f->line);
            if (f->col)
                printf(",col=%u", f->col);
            fputc(',', stdout);
        }
        fputs("title=", stdout);
        gh_escape(f->rule, true);
        fputs("::", stdout);
        char *msg = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&msg, &len);
        if (m) {
            fputs(f->message, m);
            nodes_text(m, f);
            fclose(m);
        }
        gh_escape(msg ? msg : f->message, false);
        free(msg);
        fputc('\n', stdout);
    }
    for (size_t i = 0; i < r->nnotes; i++) {
        fputs("::notice title=hiera check::", stdout);
        gh_escape(r->notes[i], false);
        fputc('\n', stdout);
    }
}

/* ------------------------------------------------------------------ main */

static void list_rules(void)
{
    const char *group = NULL;
    for (const check_rule *r = check_rules; r->name; r++) {
        if (!group || strcmp(group, r->group) != 0) {
            printf("%s%s:\n", group ? "\n" : "", r->group);
            group = r->group;
        }
        printf("  %-26s %-7s %s\n", r->name, sev_word(r->severity), r->summary);
    }
}

int check_main(int argc, char **argv)
{
    check_args a = {0};
    int st = parse(argc, argv, &a);
    if (st >= 0) {
        free(a.paths);
        free(a.rules);
        return st;
    }
    if (a.list_rules) {
        list_rules();
        free(a.paths);
        free(a.rules);
        return 0;
    }
    check_report r;
    char *error = NULL;
    pdb_nodes pn = {0};
    check_nodes given = {0};
    if (cli_pdb_wanted(&a.pdb)) {
        a.ps.confdir = a.o.confdir;
        hiera_settings *hs = cli_puppet_settings_load(&a.ps);
        pn.src = hs ? cli_factsrc_open(a.o.facts_dir, &a.pdb, hs, NULL, NULL) : NULL;
        hiera_settings_free(hs);
        hiera_error lerr = {0};
        if (pn.src && (pn.list = hiera_facts_source_nodes(pn.src, &lerr)) != NULL) {
            pn.n = hiera_value_array_size(pn.list);
            pn.names = malloc((pn.n ? pn.n : 1) * sizeof *pn.names);
            for (size_t i = 0; pn.names && i < pn.n; i++)
                pn.names[i] = hiera_value_string(hiera_value_array_get(pn.list, i));
        }
        if (!pn.src || !pn.list || !pn.names) {
            if (lerr.message)
                fprintf(stderr, "hiera check: %s\n", lerr.message);
            hiera_error_clear(&lerr);
            hiera_value_decref(pn.list);
            free(pn.names);
            hiera_facts_source_free(pn.src);
            free(a.paths);
            free(a.rules);
            return 2;
        }
        given = (check_nodes){pn.names, pn.n, pdb_begin, pdb_facts, &pn};
        a.o.nodes = &given;
    }
    int ran = check_run(&a.o, &r, &error);
    hiera_facts_pager_free(pn.pager);
    free(pn.names);
    hiera_value_decref(pn.list);
    hiera_facts_source_free(pn.src);
    if (ran != 0) {
        fprintf(stderr, "hiera check: %s\n", error ? error : "the check could not run");
        free(error);
        free(a.paths);
        free(a.rules);
        return 2;
    }
    cwd = getcwd(NULL, 0);
    bool color = false;
    if (!strcmp(a.format, "text")) {
        const char *c = a.color ? a.color : "auto";
        color = !strcmp(c, "always") || (!strcmp(c, "auto") && isatty(STDOUT_FILENO) && !getenv("NO_COLOR"));
        print_text(&r, color);
    } else if (!strcmp(a.format, "json")) {
        print_json(&r);
    } else if (!strcmp(a.format, "junit")) {
        print_junit(&r);
    } else if (!strcmp(a.format, "sarif")) {
        print_sarif(&r);
    } else {
        print_github(&r);
    }
    fflush(stdout);
    int status = 0;
    for (size_t i = 0; i < r.n; i++)
        if (r.v[i].severity == CHECK_ERROR)
            status = 1;
    check_report_free(&r);
    free(cwd);
    free(a.paths);
    free(a.rules);
    return status;
}
