/* edit_effects.h - what an edit of a data file would do, before it is written (edit_effects.c):
 * which nodes' answers change (hiera diff's fast path, between the tree as it is and the same tree
 * with the file's new text) and what hiera check finds new in the file. Shared by `hiera set` and
 * `hiera unset` (set_cmd.c) and hiera serve's edits (through serve_options.edits). */
#ifndef HIERA_CLI_EDIT_EFFECTS_H
#define HIERA_CLI_EDIT_EFFECTS_H

#include <stdbool.h>
#include <stddef.h>

#include "hiera.h"

typedef struct {
    const char *file;             /* the edited file (absolute) */
    const char *new_text;         /* its new text */
    size_t new_len;
    /* the tree: Puppet's folders as the lookups have them */
    const char *codedir, *environmentpath, *environment, *env_dir, *confdir;
    const char *hiera_config;     /* the global hiera.yaml, when it is not <codedir>/hiera.yaml; or NULL */
    /* the fleet: the arguments that give hiera diff its nodes (--facts-dir DIR, PuppetDB's...);
     * none: no impact is computed */
    const char *const *node_args;
    size_t nnode_args;
    const char *facts_dir;        /* the nodes for hiera check's node rules, or NULL */
    bool impact_json;             /* hiera diff's JSON document (else its text) */
    bool color;                   /* its text coloured */
    bool redact;                  /* eyaml blocks not decrypted (hiera diff --redact-secrets) */
    bool check;                   /* run hiera check on both trees */
} effects_request;

typedef struct {
    /* the fleet's impact: hiera diff's exit status (0 no change, 1 changes, 2 trouble), or -1 when
     * it was not computed (impact_note says why, or no nodes were given) */
    int impact_status;
    char *impact;                 /* what hiera diff printed (text or JSON), or NULL */
    char *impact_errors;          /* what it said on stderr, or NULL */
    char *impact_note;            /* why the impact was not computed, or NULL */
    /* hiera check: the findings of the new tree in the file that the old tree does not have, as
     * [{"rule", "severity", "line", "column", "message"}] (the file's real path in messages) */
    hiera_value *findings;
    size_t new_errors;
    char *check_note;             /* why the check could not run, or NULL */
} effects;

/* Computes what was asked (a scratch copy of the tree, hard links but for the file, removed
 * afterwards). Never fails as a whole: what cannot be done is said in the notes. Any thread (it
 * runs hiera diff as a process). */
void edit_effects(const effects_request *r, effects *out);
void effects_free(effects *e);

/* Runs argv (argv[0] a path) with stdin from /dev/null, in cwd when not NULL, with extra_env
 * ("NAME=VALUE"..., NULL-terminated) added to the environment; its stdout and stderr collected
 * (malloc'ed, NUL-terminated). Returns its exit status, or -1 when it could not be started (*err
 * says why). Safe in a threaded process (posix_spawn, descriptors close-on-exec). */
int edit_run(const char *const *argv, const char *cwd, const char *const *extra_env, char **out, char **err);

/* Commits the file in the git work tree that holds it (when it is in one: true with *note NULL
 * when nothing was to be done, e.g. not a work tree): `git add` and `git commit` of that file
 * alone, author "name <email>", message given. false with *note (malloc'ed) saying why. */
bool edit_git_commit(const char *file, const char *author, const char *message, char **note);

#endif
