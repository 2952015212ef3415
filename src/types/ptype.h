/* ptype.h - Puppet data types as users write them for `--type` and lookup_options convert_to:
 * parsing, matching values, Puppet's mismatch messages, and Puppet's new(Type, value, *args). */
#ifndef HIERA_PTYPE_H
#define HIERA_PTYPE_H

#include <stdbool.h>

#include "base/util.h"
#include "base/value.h"

typedef struct ptype ptype;

/* Parses a type expression such as "Hash[String, Array[Integer[0,65535]]]". Returns NULL with err
 * set (HERR_ERROR, Puppet's message) when it is not a valid type. Free with ptype_free. */
ptype *ptype_parse(const char *text, herr *err);
void ptype_free(ptype *t);

/* Parses a type as `puppet lookup --type` does: only the names the type parser itself knows
 * resolve (Data, RichData, resource types and unknown names are errors there, as in Puppet). */
ptype *ptype_parse_cli(const char *text, herr *err);

/* Whether v is an instance of t (Puppet's `v =~ T`). */
bool ptype_match(const ptype *t, const hv *v);

/* The Puppet message for a value that does not match, as TypeAsserter words it, e.g.
 * ptype_mismatch(t, v, "Found value") -> "Found value has wrong type, expects an Integer value, got String".
 * Returns a malloc'ed string. */
char *ptype_mismatch(const ptype *t, const hv *v, const char *subject);

/* Puppet's type of a value as mismatch messages name it ("String", "Integer", "Tuple",
 * "Struct", "Undef", ...). Returns a malloc'ed string. */
char *ptype_name_of_value(const hv *v);

/* TypeCalculator#infer of a value as text, e.g. "Hash[String, Runtime[ruby, 'Symbol'], 1, 1]"
 * (what DataProvider#validate_data_value names). Returns a malloc'ed string. */
char *ptype_infer_to_s(const hv *v);

/* The canonical text of a type (as Puppet prints it). Returns a malloc'ed string. */
char *ptype_to_s(const ptype *t);

/* lookup_options convert_to: Puppet's `new(Type, value, *args)`. `spec` is the option's value:
 * a type name string ("Integer") or an array [type, args...]. Returns a new value or NULL with err
 * set; err->msg is the inner message only (the caller wraps it), with err->kind HERR_LOOKUP when
 * the type cannot be parsed (msg like "could not parse ...") and HERR_ERROR when the conversion
 * fails. */
hv *ptype_convert(const hv *spec, const hv *value, herr *err);

/* Makes t safe to share between threads: its regexps are compiled now (matching compiles them on
 * first use otherwise) and it becomes immortal, never to be freed (ptype_free does nothing). For
 * types built once and kept for the life of the process (pthread_once). */
void ptype_freeze(ptype *t);

/* ---- user-defined type aliases (`type Name = <type>` in modules), for class parameters
 * (interpret.c, describe.c) ---- */

/* A set of aliases by name (case-insensitive); types parsed with it may name them, and the
 * aliases may name each other and themselves. Types parsed with a set must be freed before it. */
typedef struct ptype_aliases ptype_aliases;
ptype_aliases *ptype_aliases_new(void);
/* Adds name = body (both copied); a name already present keeps its first definition. */
void ptype_aliases_add(ptype_aliases *a, const char *name, const char *body);
void ptype_aliases_free(ptype_aliases *a);
/* Why the alias's body does not parse (BORROWED; *body, when given, receives the body), or NULL
 * when it parses or there is no such alias. */
const char *ptype_aliases_error(ptype_aliases *a, const char *name, const char **body);
/* ptype_parse with the aliases of a (NULL: none) resolved; names neither built in nor in a stay
 * type references. */
ptype *ptype_parse_with(const char *text, ptype_aliases *a, herr *err);
/* The name of the first type reference that does not resolve (a type Puppet would not find here:
 * a module that is not installed, a type written in Ruby), malloc'ed, or NULL when none. */
char *ptype_unresolved(const ptype *t);
/* Puppet's message for a class parameter whose value does not match its type, as
 * TypeMismatchDescriber#validate_parameters words it after "Class[Name]:" ("parameter 'port'
 * expects an Integer value, got String"; several mismatches one per line), malloc'ed; NULL when v
 * matches. */
char *ptype_describe_param(const ptype *t, const hv *v, const char *param);
/* Whether some string is an instance of t (String, Pattern, Enum, Scalar, Any..., through
 * Optional, NotUndef, Variant and aliases): a value that interpolation makes may then match. */
bool ptype_may_match_string(const ptype *t);
/* The message for a parameter without a value and without a default. */
char *ptype_describe_missing(const char *param);

/* Puppet's String.new(v) / "%s" formatting of a value: ['a', 'b'], {'a' => 1}, 1.500000 ... */
void puppet_string(sbuf *out, const hv *v);

#endif
