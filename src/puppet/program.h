/* program.h - the main manifest's code at top scope and in node definitions (program.c), read
 * once and evaluated for one node at a time: which variables it sets (what hiera.yaml's
 * %{::role} reads) and which classes it declares.
 *
 * Only as much of the Puppet language as that takes: assignments, if/elsif/else, unless, case,
 * selectors, strings with interpolation, access ($trusted['extensions']['pp_role']), the
 * operators, a few pure functions (defined, getvar, fact, empty, downcase, split...), lookups
 * (through the caller), include/contain/require and resource-like class declarations, and node
 * definitions matched as Puppet matches them. What cannot be computed is *unknown*, never
 * guessed: a variable set from it is unknown, a branch taken on it makes every variable it sets
 * unknown and every class it declares uncertain, and a call of a function that may set
 * variables itself (a Ruby function such as role()) makes every variable not yet set unknown.
 *
 * Threads: a program is read-only once built; pp_program_eval may run on any number of threads
 * at once (each with its own result). */
#ifndef HIERA_PUPPET_PROGRAM_H
#define HIERA_PUPPET_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/value.h"

typedef struct pp_program pp_program;

pp_program *pp_program_new(void);
void pp_program_free(pp_program *p);
/* Adds a main manifest file's text, in the order Puppet reads them (a folder's *.pp files, at any
 * depth, sorted by path). path names the file in results. */
void pp_program_add_text(pp_program *p, const char *path, const char *text, size_t len);
/* The same from a file (one that cannot be read adds nothing). */
void pp_program_add_file(pp_program *p, const char *path);
/* Whether the program has code that may set variables or declare classes (anything to evaluate). */
bool pp_program_empty(const pp_program *p);
/* The node definition Puppet 7 picks for a certname: the one naming it (case-insensitively), else
 * the first whose regexp matches it, else default; -1 when none. */
int pp_program_match_node(const pp_program *p, const char *certname);

/* What a function call may do, besides giving a value. */
typedef enum {
    PP_FN_PURE,    /* nothing the evaluation sees (a Puppet built-in, stdlib...) */
    PP_FN_CLASSES, /* may declare classes (a Puppet language function, a Ruby function that does) */
    PP_FN_ANY      /* may set variables of the calling scope and declare classes (a Ruby function
                    * that sets scope variables, or one that cannot be found) */
} pp_fn_kind;

typedef struct {
    /* what calling the function name (lower case, as written) may do; NULL: every function that is
     * not one of Puppet's own is PP_FN_ANY */
    pp_fn_kind (*function_kind)(void *data, const char *name);
    /* a lookup as the code makes it, with scope the variables as they are at that point (facts,
     * then what the code set); merge is NULL or a strategy name; dflt NULL when no default is
     * given. A new reference, or NULL when the answer cannot be known (not found without a
     * default: the compile fails; an error). NULL callback: every lookup is unknown. */
    hv *(*lookup)(void *data, const hv *scope, const char *key, const char *merge, const hv *dflt);
    /* defined('name::x'): whether such a class or defined type exists (NULL: unknown) */
    bool (*type_exists)(void *data, const char *name);
    void *data;
} pp_eval_env;

typedef struct {
    hv *vars;          /* name -> value: the variables the code sets to a known value (top scope, then
                        * the node definition's) */
    hv *unknown;       /* name -> true: variables it sets to values that cannot be computed */
    bool any;          /* a function that may set variables was called (any_why says which, where) */
    char *any_why;     /* "role() at manifests/site.pp:12", or NULL */
    hv *classes;       /* class name (lower case, no leading ::) -> true: declared for sure; or the
                        * names of the parameters a resource-like declaration gives it (an array) */
    bool classes_unknown; /* other classes may be declared (a name or a branch that cannot be computed) */
    char *failed;      /* fail() was called for sure: "message (file:line)"; evaluation stopped there */
} pp_eval_result;

/* Evaluates the top scope, then node definition node (pp_program_match_node; -1: none), for a node
 * whose variables before any code runs are scope (facts as top-scope variables, $facts, $trusted,
 * $environment...: BORROWED, not changed). *out is filled (pp_eval_result_free). */
void pp_program_eval(const pp_program *p, int node, const hv *scope, const pp_eval_env *env, pp_eval_result *out);
void pp_eval_result_free(pp_eval_result *r);

#endif
