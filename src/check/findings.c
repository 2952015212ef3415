/* findings.c - what hiera check reports: the rules, the findings the rules add, the notes for
 * the reader, and messages with an environment's link replaced by its real folder. Every other
 * file of src/check stands on this one; it calls none of them. */
#include "check/ck_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the rules */

const check_rule check_rules[] = {
    /* 1. syntax and reachability */
    {"config-syntax", CHECK_ERROR, "syntax", "a hiera.yaml does not parse"},
    {"config-invalid", CHECK_ERROR, "syntax", "a hiera.yaml is not a valid configuration (Puppet's message)"},
    {"data-syntax", CHECK_ERROR, "syntax", "a data file does not parse (YAML, JSON or HOCON)"},
    {"orphan-file", CHECK_WARNING, "syntax", "a data file in a data folder that no hierarchy level can read"},
    /* 2. YAML traps */
    {"duplicate-key", CHECK_WARNING, "yaml", "a key appears twice in one mapping: the later value wins"},
    {"yaml-boolean", CHECK_WARNING, "yaml", "a plain yes/no/on/off that YAML reads as a boolean"},
    {"yaml-octal", CHECK_WARNING, "yaml", "a plain number with a leading 0 that YAML reads as octal"},
    {"yaml-sexagesimal", CHECK_WARNING, "yaml", "a plain 1:30 that YAML reads as a base-60 number"},
    {"yaml-version-float", CHECK_WARNING, "yaml", "a plain 1.10 that YAML reads as the float 1.1"},
    {"empty-value", CHECK_NOTE, "yaml", "a key or item without a value (read as undef)"},
    {"tab", CHECK_WARNING, "yaml", "a tab character outside quoted text"},
    {"not-a-hash", CHECK_WARNING, "yaml", "a data file whose document is not a hash (Puppet ignores it)"},
    {"extra-document", CHECK_WARNING, "yaml", "a data file with more than one YAML document (only the first is read)"},
    /* 3. interpolation */
    {"interpolation-syntax", CHECK_ERROR, "interpolation", "a %{...} that does not parse or does not do what it seems to"},
    {"interpolation-function", CHECK_ERROR, "interpolation", "an unknown interpolation function, or a function where none is allowed"},
    {"alias-not-alone", CHECK_ERROR, "interpolation", "%{alias(...)} that is not the whole string"},
    {"interpolation-key", CHECK_ERROR, "interpolation", "lookup()/alias() of a key that no data file defines"},
    {"interpolation-loop", CHECK_ERROR, "interpolation", "keys that interpolate each other in a loop"},
    {"interpolation-variable", CHECK_WARNING, "interpolation", "a variable that no fact source provides"},
    /* 4. lookup_options */
    {"lookup-options-invalid", CHECK_ERROR, "lookup_options", "lookup_options, or an entry of it, that is not a hash"},
    {"lookup-options-unknown", CHECK_WARNING, "lookup_options", "an option lookup_options does not know (merge and convert_to are)"},
    {"lookup-options-merge", CHECK_ERROR, "lookup_options", "an invalid merge strategy or merge option"},
    {"lookup-options-regexp", CHECK_ERROR, "lookup_options", "a key pattern that is not a valid Ruby regexp"},
    {"lookup-options-convert-to", CHECK_ERROR, "lookup_options", "an invalid convert_to"},
    {"lookup-options-unused", CHECK_NOTE, "lookup_options", "a key or pattern that matches no key anywhere"},
    {"module-namespace", CHECK_ERROR, "lookup_options", "module data or lookup_options outside the module's namespace"},
    /* 5. eyaml */
    {"eyaml-malformed", CHECK_ERROR, "eyaml", "an ENC[...] block that is not well formed"},
    {"eyaml-decrypt", CHECK_ERROR, "eyaml", "an ENC[...] block the configured key cannot decrypt"},
    {"eyaml-not-decrypted", CHECK_WARNING, "eyaml", "an ENC[...] block in a file read by a level that does not decrypt"},
    /* 6. classes and their parameters */
    {"manifest-syntax", CHECK_WARNING, "classes", "a manifest that cannot be read (its classes may be missed)"},
    {"unknown-parameter", CHECK_ERROR, "classes", "a key for a class that exists but has no such parameter"},
    {"unknown-class", CHECK_WARNING, "classes", "a key for a class that exists nowhere and that nothing looks up"},
    {"parameter-type", CHECK_ERROR, "classes", "a value that does not match the class parameter's type"},
    {"parameter-missing", CHECK_ERROR, "classes", "a required parameter of an included class without a value (--facts-dir)"},
    {"lookup-error", CHECK_ERROR, "classes", "the lookup of a class parameter fails for some nodes (--facts-dir)"},
    /* 7. what Puppet 8's defaults refuse (puppet8.c): warnings under Puppet 7, errors under 8 */
    {"puppet8-undefined-variable", CHECK_WARNING, "puppet8", "data interpolating a legacy fact, which Puppet 8 leaves undefined"},
    {"puppet8-not-a-hash", CHECK_WARNING, "puppet8", "a YAML data file that is a list or a scalar (Puppet 8 fails its lookups)"},
    {"puppet8-v3-config", CHECK_WARNING, "puppet8", "a version 3 hiera.yaml in an environment or a module (Puppet 8 fails there)"},
    {"puppet8-v4-path-variable", CHECK_WARNING, "puppet8", "a version 4 hierarchy interpolating a legacy fact (Puppet 8 fails)"},
    /* 8. nodes */
    {"unreached-file", CHECK_WARNING, "nodes", "a data file that no node of --facts-dir reads"},
    {"shadowed-key", CHECK_WARNING, "nodes", "a key that a higher level always overrides for every node reading it"},
    {NULL, 0, NULL, NULL},
};

const char *check_severity_name(int severity)
{
    switch (severity) {
    case CHECK_ERROR: return "error";
    case CHECK_WARNING: return "warning";
    case CHECK_NOTE: return "note";
    default: return "off";
    }
}

const check_rule *check_rule_find(const char *name)
{
    for (const check_rule *r = check_rules; r->name; r++)
        if (strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

/* ------------------------------------------------------------------ findings */

static void add_finding(ck_ctx *c, const char *rule, int sev, const char *file, uint32_t line, uint32_t col,
                        char *message, char **nodes, size_t nnodes)
{
    const check_rule *r = check_rule_find(rule);
    if (c->nf == c->capf) {
        c->capf = c->capf ? c->capf * 2 : 64;
        c->f = xrealloc(c->f, c->capf * sizeof *c->f);
    }
    c->f[c->nf++] = (ck_finding_int){r ? r->name : rule, sev ? sev : r ? r->severity : CHECK_ERROR,
                                     xstrdup(file ? file : ""), line, col, message, nodes, nnodes};
}

void ck_add(ck_ctx *c, const char *rule, int sev, const char *file, uint32_t line, uint32_t col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    add_finding(c, rule, sev, file, line, col, sb_take(&b), NULL, 0);
}

void ck_add_nodes(ck_ctx *c, const char *rule, int sev, const char *file, uint32_t line, uint32_t col,
                  char **nodes, size_t nnodes, const char *message)
{
    char **copy = NULL;
    if (nnodes) {
        copy = xmalloc(nnodes * sizeof *copy);
        for (size_t i = 0; i < nnodes; i++)
            copy[i] = xstrdup(nodes[i]);
    }
    add_finding(c, rule, sev, file, line, col, xstrdup(message), copy, nnodes);
}

/* ------------------------------------------------------------------ notes and messages */

/* A message with the environment's link replaced by its real folder. */
char *ck_report_text(const ck_env *e, char *msg)
{
    const char *dir = e->only_module ? e->only_module : e->dir;
    size_t dl = strlen(dir);
    if (!e->real_dir || !strcmp(dir, e->real_dir) || !strstr(msg, dir))
        return msg;
    sbuf b = {0};
    for (const char *p = msg; *p;) {
        const char *hit = strstr(p, dir);
        if (!hit) {
            sb_adds(&b, p);
            break;
        }
        sb_addn(&b, p, (size_t)(hit - p));
        sb_adds(&b, e->real_dir);
        p = hit + dl;
    }
    free(msg);
    return sb_take(&b);
}

void ck_note(ck_ctx *c, char *text)
{
    check_report *r = c->report;
    if (c->env)
        text = ck_report_text(c->env, text);
    for (size_t i = 0; i < r->nnotes; i++)
        if (!strcmp(r->notes[i], text)) {
            free(text);
            return;
        }
    r->notes = xrealloc(r->notes, (r->nnotes + 1) * sizeof *r->notes);
    r->notes[r->nnotes++] = text;
}
