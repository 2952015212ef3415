/* diff_side.h - the two sides of `hiera diff`: a folder, or a revision of a git repository
 * checked out into a private scratch folder (diff_side.c). */
#ifndef HIERA_CLI_DIFF_SIDE_H
#define HIERA_CLI_DIFF_SIDE_H

#include <stdbool.h>

typedef struct {
    char *spec;            /* as given on the command line */
    bool is_git;
    char *commit;          /* git: the full id of the revision's commit (or tree, for a tree id) */
    char *label;           /* for people: "main (1a2b3c4)", or the folder as given */
    char *tree;            /* the files: the folder, or the scratch checkout (absolute, resolved) */
    bool env_kind;         /* the tree is an environment (else a code directory with environments/) */
    char *codedir;         /* what the lookups are given */
    char *environmentpath;
    char *root;            /* where the lookups find the tree's files (codedir, or <envpath>/<env>) */
    char *hiera_config;    /* the global hiera.yaml given (set by the caller; freed with the side) */
    const char *puppet;    /* the Puppet the side answers as, "7.23" or "8.10" (static; set by the caller) */
    char *left_out;        /* git: the files of the revision whose objects the repository lacks (a
                            * snapshot without its large files), left out: none Hiera reads; or NULL */
} diff_side;

/* The private scratch folder (created on first use under $TMPDIR or /tmp, mode 0700) and its
 * removal: at diff_scratch_cleanup, and when the process is interrupted (SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE). */
const char *diff_scratch(char **err);
void diff_scratch_cleanup(void);

/* Opens a side: spec is a folder, or with git_dir a revision of that repository (a revision wins
 * over a folder of the same name: write ./NAME for the folder). tree_kind "codedir",
 * "environment" or NULL (a tree with an environments/ folder is a code directory, any other an
 * environment). name is "old" or "new" (the scratch folder's part). Returns false with *err
 * (malloc'ed) saying why. A git side is checked out without touching the repository's work tree
 * or index: git read-tree into a private index file, then git checkout-index into the scratch
 * folder. When base (the other side, already open and from the same repository) is given, only
 * the files that differ between the two revisions are checked out; the others are hard links to
 * base's copies. Files whose objects the repository lacks are left out when Hiera never reads
 * them (left_out says which, for a warning); one it reads is an error. */
bool diff_side_open(diff_side *s, const char *spec, const char *git_dir, const char *environment, const char *tree_kind,
                    const char *name, const diff_side *base, char **err);
void diff_side_close(diff_side *s);

/* Whether Hiera could read a file of this name or path: a hiera.yaml, a data file of the built-in
 * backends (YAML, JSON, eyaml, HOCON) or a settings file (puppet.conf, environment.conf); a name
 * that is the extension alone (".yaml", what "%{x}.yaml" names when x is empty) is one. */
bool diff_hiera_reads(const char *path);

#endif
