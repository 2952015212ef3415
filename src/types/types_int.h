/* types_int.h - what the files of src/types share: the type node model (struct ptype), numbers
 * and strings as types hold them, and the functions each file offers the others. Internal to
 * src/types; the rest of the library uses types/ptype.h.
 *
 * The files, in the order of the pipeline a type goes through:
 *   ptype.c      numbers, strings, regexps, type nodes and their constructors, structural
 *                equality, generalize, the immortal DEFAULT types and the built-in aliases
 *   parse.c      the lexer and parser of type expressions (text -> AST, types/parse.h)
 *   match.c      normalize, assignable?, instance?, type inference, ptype_match
 *   convert.c    the Ruby conversions that String.new and new() share
 *   format.c     printing types (TypeFormatter) and values (String.new / puppet_string)
 *   interpret.c  the interpreter (AST -> types), ptype_parse
 *   describe.c   the mismatch describer (TypeMismatchDescriber), ptype_mismatch
 *   new.c        Puppet's new(Type, value, *args) (ptype_convert)
 *
 * Each file calls only those listed above it.
 * Functions named pt_* are shared between these files; the small ones that need nothing but
 * the model are inline here (those that call a file's functions are defined in that file, so
 * that this header calls no file). */
#ifndef HIERA_TYPES_INT_H
#define HIERA_TYPES_INT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <oniguruma.h>

#include "base/util.h"
#include "base/value.h"
#include "types/ptype.h"

/* Bounds on recursion: type nesting from the parser, value nesting, alias expansion. */
#define MAX_DEPTH 200
#define MAX_ALIAS_DEPTH 24
#define MAX_VALUE_DEPTH 1000

/* ---- numbers (ptype.c): Ruby Integer (64-bit or big, kept as an HV_BIGINT value) or Float ---- */

typedef enum { N_INT, N_FLOAT, N_BIG } nkind;
typedef struct {
    nkind k;
    int64_t i;
    double d;
    hv *big; /* N_BIG: an HV_BIGINT value (owned reference) */
} num;

static inline num n_int(int64_t i) { return (num){N_INT, i, 0, NULL}; }
static inline num n_float(double d) { return (num){N_FLOAT, 0, d, NULL}; }
static inline num n_neginf(void) { return n_float(-INFINITY); }
static inline num n_posinf(void) { return n_float(INFINITY); }
static inline num n_copy(num n)
{
    if (n.k == N_BIG)
        hv_incref(n.big);
    return n;
}
static inline void n_drop(num *n)
{
    if (n->k == N_BIG)
        hv_decref(n->big);
    n->big = NULL;
}
static inline bool n_is_neginf(num n) { return n.k == N_FLOAT && isinf(n.d) && n.d < 0; }
static inline bool n_is_posinf(num n) { return n.k == N_FLOAT && isinf(n.d) && n.d > 0; }

static inline int big_sign(const hv *b) { return hv_bigint_digits(b)[0] == '-' ? -1 : 1; }
static inline double big_to_double(const hv *b) { return strtod(hv_bigint_digits(b), NULL); }

/* -1, 0, 1, or 2 when unordered (NaN involved). */
int pt_n_cmp(num a, num b);
bool pt_n_le(num a, num b);
bool pt_n_lt(num a, num b);
bool pt_n_eq(num a, num b);
num pt_n_min(num a, num b);
num pt_n_max(num a, num b);

/* n + 1 (used by Integer range adjacency); infinities stay. */
static inline num n_succ(num n)
{
    if (n.k == N_INT && n.i < INT64_MAX)
        return n_int(n.i + 1);
    if (n.k == N_FLOAT)
        return n_float(n.d + 1);
    return n; /* big or INT64_MAX: adjacency at such bounds does not matter here */
}

num pt_n_negate(num n);
void pt_n_to_s(sbuf *b, num n);

/* ---- strings (ptype.c) ---- */

typedef struct {
    char *p;
    size_t n;
} pstr;

static inline pstr ps_dup(const char *p, size_t n) { return (pstr){xstrndup(p, n), n}; }
static inline bool ps_eq(pstr a, pstr b) { return a.n == b.n && memcmp(a.p, b.p, a.n) == 0; }

size_t pt_utf8_len(const char *s, size_t n);
size_t pt_utf8_next(const char *s, size_t n, uint32_t *cp);
void pt_add_utf8(sbuf *b, uint32_t cp);
bool pt_ascii_casecmp_eq(const char *a, size_t an, const char *b, size_t bn);

/* ---- regular expressions (ptype.c) ---- */

regex_t *pt_re_compile(const char *src, size_t n, herr *err);

/* ---- type nodes (ptype.c) ---- */

typedef enum {
    K_ANY, K_UNIT, K_UNDEF, K_DEFAULT,
    K_CONTAINED, /* abstract: PTypeWithContainedType */
    K_NOTUNDEF, K_TYPE, K_OPTIONAL, K_SENSITIVE, K_ITERABLE, K_ITERATOR, K_INIT,
    K_SCALAR, K_SCALARDATA, K_NUMERIC, K_INTEGER, K_FLOAT, K_STRING, K_ENUM, K_PATTERN, K_BOOLEAN,
    K_REGEXP, K_SEMVER,
    K_TIMEDATA, /* abstract: PAbstractTimeDataType */
    K_TIMESPAN, K_TIMESTAMP, K_SEMVERRANGE, K_BINARY, K_URI,
    K_META, /* abstract: PMetaType */
    K_OBJECT, K_TYPESET,
    K_COLLECTION, K_ARRAY, K_HASH, K_TUPLE, K_STRUCT, K_VARIANT, K_CALLABLE, K_RUNTIME, K_TYPEREF,
    K_ALIAS, K_CATALOGENTRY, K_CLASS, K_RESOURCE,
    K_COUNT
} tkind;

struct ptype {
    int refs; /* < 0: immortal (the built-in aliases) */
    tkind k;
    num from, to;   /* NUMERIC, INTEGER, FLOAT */
    ptype *t;       /* contained type; ARRAY element; HASH key; CALLABLE params; ALIAS resolved */
    ptype *t2;      /* HASH value; CALLABLE block */
    ptype *t3;      /* CALLABLE return */
    ptype *size;    /* STRING, COLLECTION, ARRAY, HASH, TUPLE: an INTEGER size type, or NULL */
    ptype **v;      /* VARIANT, TUPLE types; STRUCT key/value pairs (2n); PATTERN regexp types */
    size_t n;
    pstr s;         /* STRING value, REGEXP pattern, TYPEREF text, ALIAS/CLASS/RESOURCE name, RUNTIME name */
    bool has_s;
    pstr rt;        /* RUNTIME runtime name */
    bool has_rt;
    pstr *vals;     /* ENUM values, sorted and unique */
    size_t nvals;
    int flag;       /* BOOLEAN: -1 any, 0 false, 1 true; ENUM: case-insensitive */
    regex_t *re;    /* REGEXP: compiled once */
    bool re_failed;
};

extern const char *const pt_simple_names[K_COUNT];

/* Ruby's is_a? on the type classes. */
bool pt_is_a(const ptype *t, tkind k);
static inline bool is_k(const ptype *t, tkind k) { return t && t->k == k; }
bool pt_is_contained(const ptype *t);

static inline ptype *pt_ref(const ptype *ct)
{
    ptype *t = (ptype *)ct;
    if (t && t->refs > 0)
        t->refs++;
    return t;
}
void pt_unref(ptype *t);

/* A growable list of type references (owned). */
typedef struct {
    ptype **v;
    size_t n, cap;
} tlist;

static inline void tl_push(tlist *l, ptype *t) /* steals t */
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = t;
}
void pt_tl_free(tlist *l);

/* Constructors (they steal their type arguments). */
ptype *pt_mk(tkind k);
ptype *pt_mk_int(num from, num to);
ptype *pt_mk_float(num from, num to);
ptype *pt_mk_string_size(ptype *size);
ptype *pt_mk_string_val(const char *p, size_t n);
ptype *pt_mk_enum(const pstr *vals, size_t n, bool ci); /* copies vals */
ptype *pt_mk_regexp(const char *p, size_t n, bool has);
ptype *pt_mk_bool(int flag);
ptype *pt_mk_collection(ptype *size);
ptype *pt_mk_array(ptype *elem, ptype *size);
ptype *pt_mk_hash(ptype *key, ptype *value, ptype *size);
ptype *pt_mk_tuple(ptype **types, size_t n, ptype *size); /* steals the types array */
ptype *pt_mk_struct(ptype **pairs, size_t nelems);        /* steals the pairs array (2*nelems) */
ptype *pt_mk_pattern(ptype **regexps, size_t n);          /* steals the array */
ptype *pt_mk_contained(tkind k, ptype *inner);
ptype *pt_mk_callable(ptype *params, ptype *block, ptype *ret);
ptype *pt_mk_named(tkind k, const char *p, size_t n);
ptype *pt_mk_runtime(const char *rt, size_t rtn, bool has_rt, const char *name, size_t nn, bool has_name);
/* The DEFAULT instance of a type class (a new reference). */
ptype *pt_dflt(tkind k);

ptype *pt_mk_intv(int64_t from, int64_t to);

bool pt_size_is_zero(const ptype *size);

ptype *pt_hash_empty(void);
ptype *pt_array_empty(void);
ptype *pt_default_size(void);

/* Hash[0, 0] of Unit types (Hash's empty form), Hash of Any without a size (its default), Tuple's default */
bool pt_is_hash_empty(const ptype *t);
static inline bool is_hash_default(const ptype *t)
{
    return is_k(t, K_HASH) && !t->size && is_k(t->t, K_ANY) && is_k(t->t2, K_ANY);
}
static inline bool is_tuple_default(const ptype *t) { return is_k(t, K_TUPLE) && t->n == 0 && !t->size; }

/* Each type's generalize (ranges, sizes and values dropped). */
ptype *pt_generalize(const ptype *t);
/* The built-in alias of that name (Data, RichData, ...; immortal), or NULL. */
ptype *pt_builtin_alias(const char *name, size_t n);
ptype *pt_data_alias(void);

/* ---- element accessors ---- */
static inline const ptype *st_key(const ptype *s, size_t i) { return s->v[2 * i]; }
static inline const ptype *st_val(const ptype *s, size_t i) { return s->v[2 * i + 1]; }
static inline size_t st_count(const ptype *s) { return s->n / 2; }
/* PStructElement#name: the literal string of the (possibly optional) key type. */
static inline pstr st_name(const ptype *s, size_t i)
{
    const ptype *k = st_key(s, i);
    if (is_k(k, K_OPTIONAL) && k->t)
        k = k->t;
    return k->s;
}

static inline bool is_unbounded(const ptype *t) { return n_is_neginf(t->from) && n_is_posinf(t->to); }

/* Ruby `name`: the alias name for aliases, otherwise the simple name. */
const char *pt_t_name(const ptype *t);

/* Structural equality (Ruby eql? / == on types). */
bool pt_eq(const ptype *a, const ptype *b);
/* Array#uniq on types (first occurrence kept). */
void pt_tl_uniq(tlist *l);
/* PVariantType.maybe_create: flattens nested variants, removes duplicates, and returns the only
 * type when one remains. Steals the list's types. */
ptype *pt_maybe_create(tlist *l);

static inline void make_immortal(ptype *t) { t->refs = -1; }
/* The immortal DEFAULT type of a class (Ruby's PXxxType::DEFAULT constants): not to be unref'ed;
 * frozen (ptype_freeze), shared by every thread. */
const ptype *pt_D(tkind k);
/* A Regexp type's compiled regexp, compiled on first use (a write: a type shared between threads
 * is frozen, see ptype_freeze); NULL when its pattern is invalid. */
regex_t *pt_regexp_compiled(ptype *re);

/* ---- format.c: printing types (TypeFormatter#string) and values (String.new) ---- */

char *pt_to_s(const ptype *t);  /* to_s (malloc'ed) */
char *pt_to_xs(const ptype *t); /* to_alias_expanded_s (malloc'ed) */
/* String.new(v, fmt): fmt is a single format string or a hash of formats. */
bool pt_string_format(sbuf *out, const hv *v, const hv *fmt, herr *err);

/* ---- match.c: normalize, assignable?, instance?, inference ---- */

/* Guards alias recursion in assignable (match.c); NULL starts a new guard. */
typedef struct guard guard;

ptype *pt_normalize(const ptype *t);
bool pt_assignable(const ptype *t, const ptype *o, guard *g);
bool pt_accepts_undef(const ptype *t);
ptype *pt_tuple_size_type(const ptype *t);

/* A Ruby Symbol :undef / :default is Puppet's undef / default (Psych loads ":undef" as one). */
static inline bool sym_is(const hv *v, const char *name)
{
    return hv_is(v, HV_SYMBOL) && strcmp(hv_str_ptr(v), name) == 0;
}
static inline bool v_is_undef(const hv *v) { return !v || hv_is(v, HV_UNDEF) || sym_is(v, "undef"); }
static inline bool v_is_default(const hv *v) { return sym_is(v, "default"); }

num pt_v_num(const hv *v);
bool pt_instance(const ptype *t, const hv *v, int depth);
ptype *pt_infer(const hv *v, int depth);
ptype *pt_infer_set(const hv *v, int depth);

/* ---- describe.c: the mismatch describer (TypeMismatchDescriber) ---- */

typedef enum { PE_SUBJECT, PE_ENTRY_VALUE, PE_ENTRY_KEY, PE_PARAM, PE_ARRAY, PE_VARIANT, PE_SIGNATURE } pekind;
typedef struct {
    pekind k;
    char *key; /* SUBJECT text, entry key or parameter name */
    size_t idx;
} pelem;
typedef struct {
    pelem *v;
    size_t n;
} tpath;

typedef enum { M_TYPE, M_PATTERN, M_SIZE, M_COUNT, M_MISSING_KEY, M_EXTRA_KEY, M_UNRESOLVED } mkind;
typedef struct {
    mkind k;
    tpath p;
    ptype *e, *a; /* normalized expected and actual (TYPE, PATTERN, SIZE, COUNT) */
    char *key;    /* MISSING_KEY, EXTRA_KEY: the key; UNRESOLVED: the type reference */
} mismatch;
typedef struct {
    mismatch **v;
    size_t n, cap;
} mlist;

tpath pt_path_plus(const tpath *p, pekind k, const char *key, size_t keylen, size_t idx);
void pt_path_free(tpath *p);
mismatch *pt_m_new(mkind k, const tpath *p, const ptype *e, const ptype *a);
void pt_ml_push(mlist *l, mismatch *m);
void pt_ml_free(mlist *l);
mismatch *pt_m_chop(mismatch *m, size_t index);
mlist pt_merge_descriptions(size_t varying, mkind size_class, mlist *variants, size_t nvariants);
mlist pt_describe(const ptype *expected, const ptype *actual, const tpath *p);
void pt_m_format(sbuf *b, const mismatch *m);
char *pt_assert_message(const char *subject, const ptype *t, const hv *v);

/* ---- interpret.c: type expressions to types ---- */

typedef struct {
    const char *name; /* lower case */
    ptype *type;
} local_alias;

char *pt_lower_dup(const char *s, size_t n);
/* Parses text as a type (err may be NULL). cli selects `puppet lookup --type` behaviour; locals
 * are a new function's local type aliases. */
ptype *pt_parse_type(const char *text, size_t len, bool cli, const local_alias *locals, size_t nlocals,
                     herr *err);

/* ---- convert.c: the Ruby conversions String.new (format.c) and new() (new.c) share ---- */

/* Float#to_i (truncation; large values become big integers); NULL with *msg (malloc'ed, Ruby's
 * Float#to_s of d) for NaN and the infinities */
hv *pt_float_to_i(double d, char **msg);
/* Integer#to_f */
double pt_int_to_float(const hv *v);
/* Sets err to msg (malloc'ed, taken); false */
bool pt_set_msg_err(herr *err, char *msg);
/* Array.new(from): arrays as is, hashes as [key, value] pairs, strings as characters, an
 * Integer n as 0..n-1; NULL with err */
hv *pt_array_from(const hv *from, herr *err);

#endif
