/* value.h - the one value type of libhiera.
 *
 * A value (hv) is a reference-counted, heap-allocated node. The kinds are the data Puppet's
 * lookup can produce: undef, boolean, 64-bit integer (with a decimal "bigint" escape hatch for
 * the integers Ruby keeps exact beyond 64 bits), float, string, array, insertion-ordered hash,
 * sensitive (a wrapper) and symbol (a Ruby Symbol as Psych loads ":name"; not valid Puppet data).
 *
 * Ownership, in one sentence (as jansson says it): every function that returns an hv* returns a
 * NEW reference the caller must hv_decref(), except the accessors documented as BORROWED
 * (hv_array_get, hv_hash_get*, hv_hash_key_at, hv_hash_val_at, hv_sensitive_inner); every
 * function taking an hv* argument BORROWS it, except the ones documented as STEALING
 * (hv_array_push, hv_hash_set, hv_sensitive_new) which take over the caller's reference.
 *
 * Values are mutable only while their creator holds the single reference (refcount 1);
 * once shared they must be treated as immutable. hv_is_shared() tells. Not thread-safe:
 * one value graph belongs to one thread at a time, except immortal values (hv_make_immortal),
 * which any number of threads may read at once.
 */
#ifndef HIERA_VALUE_H
#define HIERA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    HV_UNDEF = 0, /* Ruby nil, YAML ~, JSON null */
    HV_BOOL,
    HV_INT,       /* int64_t */
    HV_BIGINT,    /* an integer outside int64_t, kept as decimal text ("-"? digits) */
    HV_FLOAT,     /* double */
    HV_STRING,    /* length-counted bytes, normally UTF-8; may contain NUL */
    HV_ARRAY,
    HV_HASH,      /* keys are values of any kind; insertion order is kept */
    HV_SENSITIVE, /* wraps one value; never printed in clear */
    HV_SYMBOL,    /* Ruby Symbol (name without the colon); loads from YAML, is not Puppet data */
} hv_kind;

typedef struct hv hv;

/* ---- constructors (all return a new reference; never NULL except on out-of-memory abort) ---- */
hv *hv_undef(void);
hv *hv_true(void);
hv *hv_false(void);
hv *hv_bool(bool b);
hv *hv_int(int64_t i);
hv *hv_bigint(const char *digits, size_t len); /* digits: optional '-' then decimal digits */
hv *hv_float(double d);
hv *hv_str(const char *s);                  /* copies a NUL-terminated string */
hv *hv_strn(const char *s, size_t len);     /* copies len bytes */
hv *hv_str_take(char *s, size_t len);       /* takes a malloc'ed buffer of len+1 bytes, s[len]==0 */
hv *hv_symbol(const char *name, size_t len);
hv *hv_array(void);
hv *hv_array_sized(size_t capacity);
hv *hv_hash(void);
hv *hv_hash_sized(size_t capacity);
hv *hv_sensitive_new(hv *inner);            /* STEALS inner */

/* ---- reference counting ---- */
hv *hv_incref(hv *v);  /* returns v; NULL-safe */
void hv_decref(hv *v); /* NULL-safe */
bool hv_is_shared(const hv *v);

/* ---- inspection ---- */
hv_kind hv_kind_of(const hv *v);
const char *hv_kind_name(hv_kind k); /* "undef", "boolean", ... for messages */
static inline bool hv_is(const hv *v, hv_kind k) { return v && hv_kind_of(v) == k; }
bool hv_is_integer(const hv *v); /* HV_INT or HV_BIGINT */
bool hv_is_scalar(const hv *v);  /* bool, int, bigint, float, string (Puppet's Scalar) */
bool hv_truthy(const hv *v);     /* Ruby truthiness: everything except undef and false */

bool hv_bool_val(const hv *v);
int64_t hv_int_val(const hv *v);
const char *hv_bigint_digits(const hv *v); /* NUL-terminated decimal text */
double hv_float_val(const hv *v);
const char *hv_str_ptr(const hv *v); /* NUL-terminated (also for HV_SYMBOL); BORROWED */
size_t hv_str_len(const hv *v);

/* Source line (1-based) where the value started in its data file; 0 when unknown. */
uint32_t hv_line(const hv *v);
void hv_set_line(hv *v, uint32_t line);

/* ---- arrays ---- */
size_t hv_array_len(const hv *a);
hv *hv_array_get(const hv *a, size_t i); /* BORROWED; NULL when out of range */
void hv_array_push(hv *a, hv *v);        /* STEALS v */
void hv_array_set(hv *a, size_t i, hv *v); /* STEALS v; i < len */
void hv_array_truncate(hv *a, size_t n);   /* drops elements from n on */

/* ---- hashes (insertion-ordered; key equality is Ruby eql?) ---- */
size_t hv_hash_len(const hv *h);
hv *hv_hash_key_at(const hv *h, size_t i); /* BORROWED */
hv *hv_hash_val_at(const hv *h, size_t i); /* BORROWED */
hv *hv_hash_get(const hv *h, const hv *key);                /* BORROWED; NULL when absent */
hv *hv_hash_gets(const hv *h, const char *key);             /* string key; BORROWED */
hv *hv_hash_getsn(const hv *h, const char *key, size_t len); /* BORROWED */
/* The hash code hv_hash_getsn computes for a string key, and the lookup with it precomputed
 * (for a key probed in many hashes). */
uint64_t hv_str_code(const char *key, size_t len);
hv *hv_hash_getsn_code(const hv *h, const char *key, size_t len, uint64_t code); /* BORROWED */
long hv_hash_index(const hv *h, const hv *key);             /* position or -1 */
/* Sets key to val, STEALING both. An existing key keeps its position (Ruby semantics) and its
 * original key object; the new key reference is dropped. */
void hv_hash_set(hv *h, hv *key, hv *val);
void hv_hash_sets(hv *h, const char *key, hv *val); /* STEALS val */
/* hv_hash_set of a key h does not hold: false (nothing taken, nothing changed) when it does */
bool hv_hash_add(hv *h, hv *key, hv *val);
/* hv_hash_set where hv_hash_index(h, key) said `at` (h unchanged since): the value at that
 * position replaced, or (at -1) the entry appended; STEALS key and val */
void hv_hash_put_at(hv *h, long at, hv *key, hv *val);
bool hv_hash_del(hv *h, const hv *key);             /* keeps the order of the others */

/* ---- sensitive ---- */
hv *hv_sensitive_inner(const hv *s); /* BORROWED */

/* ---- whole values ---- */
bool hv_eql(const hv *a, const hv *b);   /* Ruby eql?: same kinds and values, deep; 1 != 1.0 */
bool hv_equal(const hv *a, const hv *b); /* Ruby ==: like eql? but 1 == 1.0 */
uint64_t hv_hash_code(const hv *v);      /* consistent with hv_eql */
hv *hv_clone_scalar(const hv *v); /* a private copy of a scalar (also of the shared singletons) */
bool hv_is_immortal(const hv *v);  /* the shared undef/true/false singletons */
/* Puppet's HieraConfig.symkeys_to_string: every hash key that is a Symbol, at any depth (hashes in
 * hashes and in arrays), becomes the String of its name; a String key of the same name already
 * there keeps its place and takes the later value (Ruby's Hash#[]=). Symbol VALUES, and keys that
 * are arrays or hashes holding symbols, stay as they are. STEALS v; returns a new reference (v
 * itself when nothing changed; only the containers on the way to a symbol key are copied, and a
 * node reached twice through YAML aliases is converted once and stays shared). */
hv *hv_symkeys_to_string(hv *v);
/* A stable value never changes and lives as long as whatever marked it keeps it (a frozen
 * cache's data, memo.h's table); its address can stand for its content. Immortal values are
 * stable. */
bool hv_is_stable(const hv *v);
/* Marks v and everything it holds (what a stable value holds is stable too). */
void hv_set_stable_deep(hv *v);
/* Same kinds and content all the way down, hash keys in the same order, floats bit for bit
 * (what renders the same); a Sensitive is identical only to itself. */
bool hv_identical(const hv *a, const hv *b);
/* Immortal values, for a snapshot shared by threads (engine/snapshot.c): their reference counts
 * are no longer kept (hv_incref/hv_decref do nothing), so any number of threads may hold and read
 * them at once, as long as nobody changes them. hv_make_immortal makes v and everything it holds
 * immortal (and stable), computing their hash codes now so that reading them never writes, and
 * appends every node it changed to *nodes; hv_free_immortal frees those nodes (each once, what
 * they hold being in the list too) and empties the list: only when no reader is left. */
typedef struct {
    hv **items;
    size_t n, cap;
} hv_nodes;
void hv_make_immortal(hv *v, hv_nodes *nodes);
void hv_free_immortal(hv_nodes *nodes);
/* A hash code consistent with hv_identical; false (no code) when v holds a Sensitive. */
bool hv_identity_code(const hv *v, uint64_t *code);
hv *hv_copy(const hv *v);      /* shallow copy of arrays/hashes (elements shared), incref of others */
hv *hv_deep_copy(const hv *v); /* fresh containers all the way down; scalars shared */

#endif
