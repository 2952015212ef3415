/* check.h - `hiera check`: lint a control repository (check.c and the rules in this folder).
 *
 * check_run reads one or more environments (a control repository checked out in CI, a code
 * directory's environments, or a module), and reports every problem it finds as a finding with a
 * stable rule name, a severity, the file, line and column, and a message. The library prints
 * nothing: the command (cli/check_cmd.c) formats the findings (text, json, junit, sarif, github).
 *
 * Rules are listed in check_rules (name, default severity, what it checks); README.md documents
 * each with an example. Severities come from the rule's default, then the repository's
 * configuration file (.hiera-check.yaml), then the caller's overrides; `# hiera-check:
 * disable=RULE[,RULE...]` on a line (or alone on the line before) turns rules off for that line,
 * `# hiera-check: disable-file=RULE[,...]` for the whole file. */
#ifndef HIERA_CHECK_CHECK_H
#define HIERA_CHECK_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Severities: an error makes the exit status 1; a warning is something a maintainer would fix; a
 * note is an observation of style or a consequence already reported (never promoted by
 * --warnings-as-errors). */
enum { CHECK_OFF = 0, CHECK_WARNING = 1, CHECK_ERROR = 2, CHECK_NOTE = 3 };

/* "error", "warning", "note" (or "off") */
const char *check_severity_name(int severity);

typedef struct {
    const char *name;
    int severity;        /* default */
    const char *group;   /* "syntax", "yaml", "interpolation", "lookup_options", "eyaml", "classes", "nodes" */
    const char *summary; /* one line */
} check_rule;

/* The rules, ending with a {NULL} entry. */
extern const check_rule check_rules[];
const check_rule *check_rule_find(const char *name);

typedef struct {
    const char *rule;  /* a check_rules name (static) */
    int severity;      /* CHECK_NOTE, CHECK_WARNING or CHECK_ERROR, after configuration */
    char *file;        /* absolute path as found (the command shortens it), or "" */
    uint32_t line, col; /* 1-based, 0 when unknown */
    char *message;
    char **nodes;      /* with --facts-dir: the nodes it concerns (sorted), or NULL */
    size_t nnodes;
} check_finding;

typedef struct {
    check_finding *v;
    size_t n, cap;
    /* what was read */
    size_t configs, data_files, manifests, nodes, environments;
    /* notes for the reader (a module the Puppetfile names but that is not installed...): one
     * line each, malloc'ed */
    char **notes;
    size_t nnotes;
    /* the folder what was checked lies in (the first PATH, or the code directory), absolute:
     * SARIF names files relative to it; NULL when not known */
    char *root;
} check_report;

/* Nodes the caller gives instead of a facts folder (the command takes them from PuppetDB): their
 * names, sorted, and node i's facts, asked from the check's threads, each node once per pass over
 * the nodes (one pass per environment checked; begin, when given, is called before each pass). */
typedef struct {
    const char *const *names;
    size_t n;
    void (*begin)(void *data);
    /* node i's facts (a new reference to a hash) and whether they are the node's stored facts
     * (hiera_options.base_facts, as PuppetDB's are), or NULL with *msg (malloc'ed) */
    struct hv *(*facts)(void *data, size_t i, bool *stored, char **msg);
    void *data;
} check_nodes;

/* A file's text given by the caller (an editor's unsaved buffer), read instead of the file */
typedef struct {
    const char *path; /* absolute, as findings name it (the real folder, not a link) */
    const char *text;
    size_t len;
} check_text;

typedef struct {
    /* where the code is: a code directory (its environments), or PATHs (a control repository,
     * an environment folder, a module, or a code directory) */
    const char *codedir;
    const char *confdir;
    const char *environmentpath;
    const char *hiera_config;
    const char *environment;   /* with codedir: the one to check (default production) */
    bool all_environments;
    const char *const *paths;
    size_t npaths;
    const char *facts_dir;     /* one facts file per node: NAME.yaml/.yml/.json, or Puppet's cache format */
    const check_nodes *nodes;  /* or the caller's nodes (NULL: none) */
    const char *config_file;   /* NULL: .hiera-check.yaml at the root of what is checked */
    bool no_config;            /* do not read a configuration file */
    /* rule overrides: "name=off|warning|error" */
    const char *const *rule_overrides;
    size_t nrule_overrides;
    bool warnings_as_errors;
    int jobs;                  /* threads for --facts-dir (0: one per CPU, at most 8) */
    /* texts read instead of the files at their paths (data files, hiera.yaml, manifests; BORROWED
     * during check_run): a file must exist on disk to be found, its text is then this one */
    const check_text *texts;
    size_t ntexts;
} check_options;

/* Runs the check. Returns 0 when it ran (findings in *report, sorted by file, line, column), or
 * -1 when it could not (a message in *error, malloc'ed): a path that does not exist, a bad rule
 * override, an unreadable facts folder. */
int check_run(const check_options *o, check_report *report, char **error);
void check_report_free(check_report *r);

/* A session (session.c): the check run again and again over the same code with other unsaved
 * texts (an editor's buffers). The first run reads everything; a run whose texts differ from the
 * last one's only in data files the check read (the same paths given) keeps what was read
 * (snapshot, manifests, configurations, the other files' parses) and runs the rules again over
 * it; any other change (a hiera.yaml's or a manifest's text, a text given or no longer given)
 * reads everything again. Each run's report is check_run's with the same options and texts. The
 * files on disk are taken as unchanged while a session lives: make a new one when they change.
 * One thread at a time; o (but its texts) is BORROWED for the session's life. */
typedef struct check_session check_session;
check_session *check_session_new(const check_options *o);
/* A run with texts (BORROWED during the call): as check_run. */
int check_session_run(check_session *s, const check_text *texts, size_t ntexts, check_report *report, char **error);
/* Runs that read everything, and runs that kept what was read. */
void check_session_stats(const check_session *s, size_t *reads, size_t *reuses);
void check_session_free(check_session *s);

#endif
