/* manifest.h - what `hiera check` needs to know of Puppet manifests (manifest.c): the classes
 * with their parameters (types as written, whether a default exists), type aliases, the keys
 * the code looks up by name, the classes it declares, and the variables it sets at top scope.
 *
 * Only as much of the Puppet language as that takes: a lexer that knows comments, strings with
 * their interpolations, heredocs, regexps and numbers, so that bodies can be skipped by their
 * braces; class and define headers; `type Name = ...`; calls of include/contain/require and of
 * lookup/hiera*. Everything else (resource bodies, expressions, conditionals) is passed over.
 * A file that cannot be lexed, or a class header that cannot be read, is reported as a problem
 * (file, line, column, message) and what was read before it is kept. */
#ifndef HIERA_PUPPET_MANIFEST_H
#define HIERA_PUPPET_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *name;        /* without the $ */
    char *type;        /* the type expression as written (tokens joined, comments and line breaks left out), or NULL */
    bool has_default;
    char *default_str; /* the default when it is a plain string ('x', "x", a bare word), or NULL */
    uint32_t line, col;
} pp_param;

typedef struct {
    char *name; /* lower case, fully qualified ("ntp", "profile::base") */
    char *file;
    uint32_t line, col;
    pp_param *params;
    size_t nparams;
    bool header_ok; /* false: its parameter list could not be read (unknown parameters are then not reported) */
    char *parent;   /* inherits, or NULL */
    bool shadowed;  /* another definition of the name is the one Puppet loads (set by the reader's
                     * caller, who knows the modulepath: see hiera check's read_manifests) */
} pp_class;

typedef struct {
    char *name; /* as written ("Stdlib::Port") */
    char *body; /* the type expression (tokens joined, comments and line breaks left out) */
    char *file;
    uint32_t line, col;
} pp_alias;

/* lookup('key'), hiera('key'), hiera_array/hiera_hash/hiera_include('key'), lookup(bare::word):
 * the literal key, or (prefix) the text before the first interpolation of a double-quoted key
 * ("profile::${x}"), or (var) a variable that holds it (lookup($name): key is ""). */
typedef struct {
    char *key;
    bool prefix;
    char *suffix;      /* prefix: the text after the last interpolation ("" when none) */
    bool merged; /* a merge other than first is asked for (or hiera_array/hash/include) */
    char *file;
    uint32_t line, col;
    bool classes;      /* its value names classes that are included (hiera_include, .include, include(lookup())...) */
    char *scope_class; /* the class whose body holds it, or NULL */
    int scope_node;    /* the node definition whose body holds it (index in nodes), or -1 */
    bool conditional;  /* under an if, unless, case, selector or lambda of that body: it may not run */
    char *var;         /* lookup($var): the variable (no $), or NULL */
    char *owner;       /* the class or defined type whose body (or parameter list) holds it, or NULL */
} pp_lookup;

/* $var = 'text' in the body of a class or defined type */
typedef struct {
    char *owner; /* the class or defined type (lower case) */
    char *var;
    char *value;
} pp_assign;

/* include/contain/require of a class by name, or a resource-like class { 'name': ... } */
typedef struct {
    char *cls; /* lower case, no leading :: */
    bool resource_like;
    char **params; /* resource-like: the attributes given */
    char **values; /* their values when plain strings, else NULL (parallel to params; NULL when none) */
    size_t nparams;
    char *file;
    uint32_t line, col;
    char *scope_class; /* the class whose body declares it, or NULL (top scope, a node, a define...) */
    int scope_node;    /* the node definition whose body declares it (index in nodes), or -1 */
    bool in_define;    /* declared by a defined type or a function (not known to be evaluated) */
    bool conditional;  /* under an if, unless, case, selector or lambda of its body: it may not be */
} pp_decl;

/* node 'a', 'b', /re/, default { ... } */
typedef struct {
    char **names; /* lower case */
    size_t nnames;
    char **regexps; /* the regexp sources, without the slashes */
    size_t nregexps;
    bool is_default;
} pp_node;

typedef struct {
    char *file;
    uint32_t line, col;
    char *message;
} pp_problem;

typedef struct pp_index {
    pp_class *classes;
    size_t nclasses, capclasses;
    pp_alias *aliases;
    size_t naliases, capaliases;
    pp_lookup *lookups;
    size_t nlookups, caplookups;
    pp_decl *decls;
    size_t ndecls, capdecls;
    pp_problem *problems;
    size_t nproblems, capproblems;
    pp_node *nodes;
    size_t nnodes, capnodes;
    char **defines; /* defined types (lower case) */
    size_t ndefines, capdefines;
    char **topvars; /* variables assigned outside classes, defines and functions (top and node scope) */
    size_t ntopvars, captopvars;
    pp_assign *assigns; /* string assignments in classes and defined types (for lookup($var)) */
    size_t nassigns, capassigns;
    size_t files;   /* files read */
} pp_index;

pp_index *pp_index_new(void);
void pp_index_free(pp_index *x);
/* Frees the lookups from the n-th on (those added after reading: see hiera check's lookup($var)). */
void pp_lookups_truncate(pp_index *x, size_t n);
/* Reads one manifest (path for messages and records) into x. */
void pp_index_add_text(pp_index *x, const char *path, const char *text, size_t len);
/* Reads a file; one that cannot be read is a problem. */
void pp_index_add_file(pp_index *x, const char *path);
/* Scans a template (.epp, .erb) for keys it looks up by name: lookup('k'), hiera('k'),
 * call_function('lookup', ['k']) and the like (text patterns: templates are not parsed). */
void pp_index_add_template(pp_index *x, const char *path);
/* Whether the lookup l may ask for key (its literal, or its prefix and suffix around what is
 * interpolated). */
bool pp_lookup_matches(const pp_lookup *l, const char *key);
/* Whether a defined type of that name (lower case) was read. */
bool pp_is_define(const pp_index *x, const char *name);
/* The class named (lower case), or NULL (of several definitions, the last one read that is not
 * shadowed). */
const pp_class *pp_find_class(const pp_index *x, const char *name);

#endif
