/* value.c - reference-counted values; see value.h for ownership rules. */
#include "base/value.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct hv {
    uint32_t rc; /* 0: immortal */
    uint8_t kind;
    uint8_t pad[3];
    uint32_t line;
};

typedef struct {
    hv h;
    union {
        bool b;
        int64_t i;
        double f;
        hv *inner;
    } u;
} hv_scalar;

typedef struct {
    hv h;
    size_t len;
    uint64_t hash; /* 0: not computed */
    char s[];
} hv_string;

typedef struct {
    hv h;
    size_t n, cap;
    hv **items;
} hv_arr;

typedef struct {
    hv *key;
    hv *val;
    uint64_t code;
} hv_entry;

typedef struct {
    hv h;
    size_t n, cap;
    hv_entry *items;
    uint32_t *idx; /* open addressing: slot holds entry index + 1, 0 empty */
    size_t idxcap; /* power of two, or 0 while small */
} hv_hashv;

#define HASH_INDEX_MIN 9

static hv_scalar s_undef = {{0, HV_UNDEF, {0}, 0}, {0}};
static hv_scalar s_true = {{0, HV_BOOL, {0}, 0}, {.b = true}};
static hv_scalar s_false = {{0, HV_BOOL, {0}, 0}, {.b = false}};

/* A node with its header set; each constructor sets the rest (no zeroing of the whole: most
 * values are short strings, made by the hundred thousand in a batch run). */
static void *alloc_node(size_t size, hv_kind kind)
{
    hv *v = xmalloc(size);
    *v = (hv){.rc = 1, .kind = (uint8_t)kind};
    return v;
}

hv *hv_undef(void) { return &s_undef.h; }
hv *hv_true(void) { return &s_true.h; }
hv *hv_false(void) { return &s_false.h; }
hv *hv_bool(bool b) { return b ? &s_true.h : &s_false.h; }

hv *hv_int(int64_t i)
{
    hv_scalar *s = alloc_node(sizeof *s, HV_INT);
    s->u.i = i;
    return &s->h;
}

hv *hv_float(double d)
{
    hv_scalar *s = alloc_node(sizeof *s, HV_FLOAT);
    s->u.f = d;
    return &s->h;
}

static hv *new_string(const char *p, size_t len, hv_kind kind)
{
    hv_string *s = alloc_node(sizeof *s + len + 1, kind);
    s->len = len;
    s->hash = 0;
    if (len)
        memcpy(s->s, p, len);
    s->s[len] = 0;
    return &s->h;
}

hv *hv_bigint(const char *digits, size_t len) { return new_string(digits, len, HV_BIGINT); }
hv *hv_str(const char *s) { return new_string(s, strlen(s), HV_STRING); }
hv *hv_strn(const char *s, size_t len) { return new_string(s, len, HV_STRING); }
hv *hv_symbol(const char *name, size_t len) { return new_string(name, len, HV_SYMBOL); }

hv *hv_str_take(char *s, size_t len)
{
    hv *v = new_string(s, len, HV_STRING);
    free(s);
    return v;
}

/* A container made with its size known keeps its first items in the node's own block (one
 * allocation, and one free, instead of two: a batch run over the benchmark fleet makes 280,000 of
 * them); HV_FLAG_INLINE says so until it grows. */
#define HV_FLAG_INLINE 2
#define ITEMS_INLINE(v) (((const hv *)(v))->pad[0] & HV_FLAG_INLINE)

/* base bytes and cap items of size bytes (SIZE_MAX when that overflows: the allocation fails) */
static size_t with_items(size_t base, size_t cap, size_t size)
{
    return cap > (SIZE_MAX - base) / size ? SIZE_MAX : base + cap * size;
}

/* A full container's items with room for twice as many, out of the node's block from now on. */
static void *grow_items(hv *v, void *items, size_t *cap, size_t size)
{
    size_t ncap = *cap ? *cap * 2 : 4;
    void *p;
    if (ITEMS_INLINE(v)) {
        p = xmalloc(with_items(0, ncap, size));
        memcpy(p, items, *cap * size);
        v->pad[0] &= (uint8_t)~HV_FLAG_INLINE;
    } else {
        p = xrealloc(items, with_items(0, ncap, size));
    }
    *cap = ncap;
    return p;
}

hv *hv_array_sized(size_t cap)
{
    hv_arr *a = alloc_node(with_items(sizeof *a, cap, sizeof *a->items), HV_ARRAY);
    if (cap)
        a->h.pad[0] = HV_FLAG_INLINE;
    a->n = 0;
    a->cap = cap;
    a->items = cap ? (hv **)(a + 1) : NULL;
    return &a->h;
}
hv *hv_array(void) { return hv_array_sized(0); }

hv *hv_hash_sized(size_t cap)
{
    hv_hashv *h = alloc_node(with_items(sizeof *h, cap, sizeof *h->items), HV_HASH);
    if (cap)
        h->h.pad[0] = HV_FLAG_INLINE;
    h->n = 0;
    h->cap = cap;
    h->items = cap ? (hv_entry *)(h + 1) : NULL;
    h->idx = NULL;
    h->idxcap = 0;
    return &h->h;
}
hv *hv_hash(void) { return hv_hash_sized(0); }

hv *hv_sensitive_new(hv *inner)
{
    hv_scalar *s = alloc_node(sizeof *s, HV_SENSITIVE);
    s->u.inner = inner ? inner : hv_undef();
    return &s->h;
}

hv *hv_incref(hv *v)
{
    if (v && v->rc)
        v->rc++;
    return v;
}

/* Frees dead nodes without recursion: values can nest deeper than the C stack allows (YAML
 * aliases stack anchors on anchors), so the children that die with a node wait on an explicit
 * stack (a small one on the C stack first, then the heap). */
typedef struct {
    hv **items;
    size_t n, cap;
    hv *small[64];
} dead_stack;

static void dead_grow(dead_stack *st)
{
    size_t ncap = st->cap * 2;
    if (st->items == st->small) {
        st->items = xmalloc(ncap * sizeof *st->items);
        memcpy(st->items, st->small, st->n * sizeof *st->items);
    } else {
        st->items = xrealloc(st->items, ncap * sizeof *st->items);
    }
    st->cap = ncap;
}

/* (inline: it is called for every child of every node freed; most children live on) */
static inline void dead_push(dead_stack *st, hv *c)
{
    if (!c || !c->rc || --c->rc != 0)
        return;
    if (st->n == st->cap)
        dead_grow(st);
    st->items[st->n++] = c;
}

static void free_node(dead_stack *st, hv *v)
{
    switch ((hv_kind)v->kind) {
    case HV_ARRAY: {
        hv_arr *a = (hv_arr *)v;
        for (size_t i = 0; i < a->n; i++)
            dead_push(st, a->items[i]);
        if (!ITEMS_INLINE(v))
            free(a->items);
        break;
    }
    case HV_HASH: {
        hv_hashv *h = (hv_hashv *)v;
        for (size_t i = 0; i < h->n; i++) {
            dead_push(st, h->items[i].key);
            dead_push(st, h->items[i].val);
        }
        if (!ITEMS_INLINE(v))
            free(h->items);
        free(h->idx);
        break;
    }
    case HV_SENSITIVE:
        dead_push(st, ((hv_scalar *)v)->u.inner);
        break;
    default:
        break;
    }
    free(v);
}

/* The last reference gone: frees v and what only it held. Kept out of line (noipa): the
 * immortal singletons (rc 0) never get here, but a compiler inlining it where one of them is
 * passed could not tell, and would warn of a free of a static object. */
__attribute__((noipa)) static void release(hv *v)
{
    switch ((hv_kind)v->kind) {
    case HV_ARRAY:
    case HV_HASH:
    case HV_SENSITIVE: {
        dead_stack st;
        st.items = st.small;
        st.n = 0;
        st.cap = sizeof st.small / sizeof *st.small;
        free_node(&st, v);
        while (st.n)
            free_node(&st, st.items[--st.n]);
        if (st.items != st.small)
            free(st.items);
        break;
    }
    default:
        free(v);
    }
}

void hv_decref(hv *v)
{
    if (v && v->rc && --v->rc == 0)
        release(v);
}

bool hv_is_shared(const hv *v) { return v && v->rc != 1; }

hv_kind hv_kind_of(const hv *v) { return v ? (hv_kind)v->kind : HV_UNDEF; }

const char *hv_kind_name(hv_kind k)
{
    static const char *names[] = {"undef", "boolean", "integer", "integer", "float",
                                  "string", "array", "hash", "sensitive", "symbol"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

bool hv_is_integer(const hv *v) { return hv_is(v, HV_INT) || hv_is(v, HV_BIGINT); }

bool hv_is_scalar(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_BOOL: case HV_INT: case HV_BIGINT: case HV_FLOAT: case HV_STRING:
        return true;
    default:
        return false;
    }
}

bool hv_truthy(const hv *v)
{
    if (!v || v->kind == HV_UNDEF)
        return false;
    if (v->kind == HV_BOOL)
        return ((const hv_scalar *)v)->u.b;
    return true;
}

bool hv_bool_val(const hv *v) { return v && v->kind == HV_BOOL && ((const hv_scalar *)v)->u.b; }
int64_t hv_int_val(const hv *v) { return ((const hv_scalar *)v)->u.i; }
double hv_float_val(const hv *v) { return ((const hv_scalar *)v)->u.f; }
const char *hv_bigint_digits(const hv *v) { return ((const hv_string *)v)->s; }
const char *hv_str_ptr(const hv *v) { return ((const hv_string *)v)->s; }
size_t hv_str_len(const hv *v) { return ((const hv_string *)v)->len; }

uint32_t hv_line(const hv *v) { return v ? v->line : 0; }
void hv_set_line(hv *v, uint32_t line)
{
    if (v && v->rc)
        v->line = line;
}

/* ---- arrays ---- */

size_t hv_array_len(const hv *a) { return a && a->kind == HV_ARRAY ? ((const hv_arr *)a)->n : 0; }

hv *hv_array_get(const hv *a, size_t i)
{
    if (!a || a->kind != HV_ARRAY)
        return NULL;
    const hv_arr *arr = (const hv_arr *)a;
    return i < arr->n ? arr->items[i] : NULL;
}

void hv_array_push(hv *a, hv *v)
{
    hv_arr *arr = (hv_arr *)a;
    if (arr->n == arr->cap)
        arr->items = grow_items(a, arr->items, &arr->cap, sizeof *arr->items);
    arr->items[arr->n++] = v;
}

void hv_array_set(hv *a, size_t i, hv *v)
{
    hv_arr *arr = (hv_arr *)a;
    hv_decref(arr->items[i]);
    arr->items[i] = v;
}

void hv_array_truncate(hv *a, size_t n)
{
    hv_arr *arr = (hv_arr *)a;
    while (arr->n > n)
        hv_decref(arr->items[--arr->n]);
}

/* ---- hashing and equality ---- */

/* The code of a string, big integer or symbol: computed on first use and kept in the value,
 * which may be shared between threads (an immortal value of a snapshot): a relaxed atomic load
 * and store, since every thread that computes it stores the same code. */
static inline uint64_t string_code(const hv *v)
{
    hv_string *s = (hv_string *)v;
    uint64_t code = __atomic_load_n(&s->hash, __ATOMIC_RELAXED);
    if (!code) {
        code = (hash_bytes(s->s, s->len) + v->kind) | 1;
        __atomic_store_n(&s->hash, code, __ATOMIC_RELAXED);
    }
    return code;
}

/* hv_hash_code (identity false), or hv_identity_code's code (identity: floats bit for bit,
 * hash entries in order; *ok false for a Sensitive). */
static uint64_t code_impl(const hv *v, bool identity, bool *ok)
{
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        return 0x9e3779b97f4a7c15ULL;
    case HV_BOOL:
        return hv_bool_val(v) ? 0x1234567ULL : 0x7654321ULL;
    case HV_INT:
        return hash_mix((uint64_t)hv_int_val(v) + 0x51ULL);
    case HV_FLOAT: {
        double d = hv_float_val(v);
        if (d == 0 && !identity)
            d = 0; /* -0.0 and 0.0 are eql? */
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        return hash_mix(bits ^ 0xf10a7ULL);
    }
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        return string_code(v);
    case HV_ARRAY: {
        uint64_t h = 0xa77a1ULL;
        for (size_t i = 0; i < hv_array_len(v); i++)
            h = hash_mix(h * 31 + code_impl(hv_array_get(v, i), identity, ok));
        return h;
    }
    case HV_HASH: {
        uint64_t h = 0x4a54ULL;
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            uint64_t k = code_impl(hv_hash_key_at(v, i), identity, ok), e = code_impl(hv_hash_val_at(v, i), identity, ok);
            if (identity)
                h = hash_mix(hash_mix(h * 31 + k) * 7 + e); /* in order */
            else
                h += hash_mix(k * 7 + e); /* order-independent, as Ruby's Hash#hash */
        }
        return h;
    }
    case HV_SENSITIVE:
        if (identity)
            *ok = false;
        return (uint64_t)(uintptr_t)v; /* identity, as Ruby objects without eql? */
    }
    return 0;
}

uint64_t hv_hash_code(const hv *v)
{
    /* a string without the call (the hash functions below ask for their key's code each time;
     * most keys are strings) */
    if (v && v->kind == HV_STRING)
        return string_code(v);
    bool ok = true;
    return code_impl(v, false, &ok);
}

/* Ruby ==, Ruby eql?, and hv_identical (what renders the same: floats bit for bit, hash keys in
 * the same order). */
typedef enum { EQ_EQUAL, EQ_EQL, EQ_IDENTICAL } eq_mode;

static bool same_float(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool eq_impl(const hv *a, const hv *b, eq_mode mode)
{
    if (a == b)
        return true;
    hv_kind ka = hv_kind_of(a), kb = hv_kind_of(b);
    if (mode == EQ_EQUAL && ka != kb) {
        if (ka == HV_INT && kb == HV_FLOAT)
            return (double)hv_int_val(a) == hv_float_val(b);
        if (ka == HV_FLOAT && kb == HV_INT)
            return hv_float_val(a) == (double)hv_int_val(b);
    }
    if (ka != kb)
        return false;
    switch (ka) {
    case HV_UNDEF:
        return true;
    case HV_BOOL:
        return hv_bool_val(a) == hv_bool_val(b);
    case HV_INT:
        return hv_int_val(a) == hv_int_val(b);
    case HV_FLOAT:
        return mode == EQ_IDENTICAL ? same_float(hv_float_val(a), hv_float_val(b)) : hv_float_val(a) == hv_float_val(b);
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        return hv_str_len(a) == hv_str_len(b) && memcmp(hv_str_ptr(a), hv_str_ptr(b), hv_str_len(a)) == 0;
    case HV_ARRAY: {
        size_t n = hv_array_len(a);
        if (n != hv_array_len(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!eq_impl(hv_array_get(a, i), hv_array_get(b, i), mode))
                return false;
        return true;
    }
    case HV_HASH: {
        size_t n = hv_hash_len(a);
        if (n != hv_hash_len(b))
            return false;
        for (size_t i = 0; i < n; i++) {
            if (mode == EQ_IDENTICAL) {
                if (!eq_impl(hv_hash_key_at(a, i), hv_hash_key_at(b, i), mode) ||
                    !eq_impl(hv_hash_val_at(a, i), hv_hash_val_at(b, i), mode))
                    return false;
                continue;
            }
            hv *other = hv_hash_get(b, hv_hash_key_at(a, i));
            if (!other || !eq_impl(hv_hash_val_at(a, i), other, mode))
                return false;
        }
        return true;
    }
    case HV_SENSITIVE:
        return false;
    }
    return false;
}

bool hv_eql(const hv *a, const hv *b) { return eq_impl(a, b, EQ_EQL); }
bool hv_equal(const hv *a, const hv *b) { return eq_impl(a, b, EQ_EQUAL); }
bool hv_identical(const hv *a, const hv *b) { return eq_impl(a, b, EQ_IDENTICAL); }

/* ---- hashes ---- */

size_t hv_hash_len(const hv *h) { return h && h->kind == HV_HASH ? ((const hv_hashv *)h)->n : 0; }
hv *hv_hash_key_at(const hv *h, size_t i) { return ((const hv_hashv *)h)->items[i].key; }
hv *hv_hash_val_at(const hv *h, size_t i) { return ((const hv_hashv *)h)->items[i].val; }

static void index_insert(hv_hashv *h, size_t entry)
{
    size_t mask = h->idxcap - 1, slot = (size_t)h->items[entry].code & mask;
    while (h->idx[slot])
        slot = (slot + 1) & mask;
    h->idx[slot] = (uint32_t)(entry + 1);
}

static void index_rebuild(hv_hashv *h)
{
    size_t want = 16;
    while (want < h->n * 2 + 2)
        want *= 2;
    free(h->idx);
    h->idx = xcalloc(want, sizeof *h->idx);
    h->idxcap = want;
    for (size_t i = 0; i < h->n; i++)
        index_insert(h, i);
}

static long find_entry(const hv_hashv *h, const hv *key, uint64_t code)
{
    if (h->idxcap) {
        size_t mask = h->idxcap - 1, slot = (size_t)code & mask;
        while (h->idx[slot]) {
            const hv_entry *e = &h->items[h->idx[slot] - 1];
            if (e->code == code && hv_eql(e->key, key))
                return (long)(h->idx[slot] - 1);
            slot = (slot + 1) & mask;
        }
        return -1;
    }
    for (size_t i = 0; i < h->n; i++)
        if (h->items[i].code == code && hv_eql(h->items[i].key, key))
            return (long)i;
    return -1;
}

long hv_hash_index(const hv *h, const hv *key)
{
    if (!h || h->kind != HV_HASH)
        return -1;
    return find_entry((const hv_hashv *)h, key, hv_hash_code(key));
}

hv *hv_hash_get(const hv *h, const hv *key)
{
    long i = hv_hash_index(h, key);
    return i < 0 ? NULL : ((const hv_hashv *)h)->items[i].val;
}

uint64_t hv_str_code(const char *key, size_t len) { return (hash_bytes(key, len) + HV_STRING) | 1; }

hv *hv_hash_getsn(const hv *h, const char *key, size_t len)
{
    return hv_hash_getsn_code(h, key, len, hv_str_code(key, len));
}

hv *hv_hash_getsn_code(const hv *h, const char *key, size_t len, uint64_t code)
{
    /* a stack string node: hashing and equality only look at kind, len and bytes */
    if (!h || h->kind != HV_HASH)
        return NULL;
    const hv_hashv *hh = (const hv_hashv *)h;
    if (hh->n == 0)
        return NULL;
    if (hh->idxcap) {
        size_t mask = hh->idxcap - 1, slot = (size_t)code & mask;
        while (hh->idx[slot]) {
            const hv_entry *e = &hh->items[hh->idx[slot] - 1];
            if (e->code == code && e->key->kind == HV_STRING && hv_str_len(e->key) == len &&
                memcmp(hv_str_ptr(e->key), key, len) == 0)
                return e->val;
            slot = (slot + 1) & mask;
        }
        return NULL;
    }
    for (size_t i = 0; i < hh->n; i++) {
        const hv_entry *e = &hh->items[i];
        if (e->code == code && e->key->kind == HV_STRING && hv_str_len(e->key) == len &&
            memcmp(hv_str_ptr(e->key), key, len) == 0)
            return e->val;
    }
    return NULL;
}

hv *hv_hash_gets(const hv *h, const char *key) { return hv_hash_getsn(h, key, strlen(key)); }

static void append_entry(hv_hashv *h, hv *key, hv *val, uint64_t code);

/* The value at position at (found for key) replaced, or (at -1) the entry appended. */
static void put_entry(hv_hashv *h, long at, hv *key, hv *val, uint64_t code)
{
    if (at >= 0) {
        hv_decref(h->items[at].val);
        h->items[at].val = val;
        hv_decref(key);
        return;
    }
    append_entry(h, key, val, code);
}

void hv_hash_set(hv *hh, hv *key, hv *val)
{
    hv_hashv *h = (hv_hashv *)hh;
    uint64_t code = hv_hash_code(key);
    put_entry(h, find_entry(h, key, code), key, val, code);
}

bool hv_hash_add(hv *hh, hv *key, hv *val)
{
    hv_hashv *h = (hv_hashv *)hh;
    uint64_t code = hv_hash_code(key);
    if (find_entry(h, key, code) >= 0)
        return false;
    append_entry(h, key, val, code);
    return true;
}

void hv_hash_put_at(hv *hh, long at, hv *key, hv *val)
{
    put_entry((hv_hashv *)hh, at, key, val, at >= 0 ? 0 : hv_hash_code(key));
}

static void append_entry(hv_hashv *h, hv *key, hv *val, uint64_t code)
{
    if (h->n == h->cap)
        h->items = grow_items(&h->h, h->items, &h->cap, sizeof *h->items);
    h->items[h->n] = (hv_entry){key, val, code};
    h->n++;
    if (h->n >= HASH_INDEX_MIN) {
        if (!h->idxcap || h->n * 2 + 2 > h->idxcap)
            index_rebuild(h);
        else
            index_insert(h, h->n - 1);
    }
}

void hv_hash_sets(hv *h, const char *key, hv *val) { hv_hash_set(h, hv_str(key), val); }

bool hv_hash_del(hv *hh, const hv *key)
{
    hv_hashv *h = (hv_hashv *)hh;
    long i = find_entry(h, key, hv_hash_code(key));
    if (i < 0)
        return false;
    hv_decref(h->items[i].key);
    hv_decref(h->items[i].val);
    memmove(&h->items[i], &h->items[i + 1], (h->n - (size_t)i - 1) * sizeof *h->items);
    h->n--;
    if (h->idxcap) {
        if (h->n >= HASH_INDEX_MIN) {
            index_rebuild(h);
        } else {
            free(h->idx);
            h->idx = NULL;
            h->idxcap = 0;
        }
    }
    return true;
}

hv *hv_sensitive_inner(const hv *s) { return ((const hv_scalar *)s)->u.inner; }

/* ---- copies ---- */

bool hv_is_immortal(const hv *v) { return v && v->rc == 0; }

#define HV_FLAG_STABLE 1

bool hv_is_stable(const hv *v) { return v && (v->rc == 0 || (v->pad[0] & HV_FLAG_STABLE)); }

void hv_set_stable_deep(hv *v)
{
    if (!v || hv_is_stable(v))
        return; /* (what a stable value holds is marked already) */
    v->pad[0] |= HV_FLAG_STABLE;
    switch ((hv_kind)v->kind) {
    case HV_ARRAY: {
        hv_arr *a = (hv_arr *)v;
        for (size_t i = 0; i < a->n; i++)
            hv_set_stable_deep(a->items[i]);
        break;
    }
    case HV_HASH: {
        hv_hashv *h = (hv_hashv *)v;
        for (size_t i = 0; i < h->n; i++) {
            hv_set_stable_deep(h->items[i].key);
            hv_set_stable_deep(h->items[i].val);
        }
        break;
    }
    case HV_SENSITIVE:
        hv_set_stable_deep(((hv_scalar *)v)->u.inner);
        break;
    default:
        break;
    }
}

/* The explicit stack of hv_make_immortal's walk (values can nest deeper than the C stack). */
static void node_push(hv_nodes *st, hv *v)
{
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 256;
        st->items = xrealloc(st->items, st->cap * sizeof *st->items);
    }
    st->items[st->n++] = v;
}

/* Marks one node immortal and queues its children (those not immortal already). */
static void immortalize(hv *v, hv_nodes *todo, hv_nodes *out)
{
    v->rc = 0;
    v->pad[0] |= HV_FLAG_STABLE;
    node_push(out, v);
    switch ((hv_kind)v->kind) {
    case HV_ARRAY: {
        hv_arr *a = (hv_arr *)v;
        for (size_t i = 0; i < a->n; i++)
            if (a->items[i]->rc)
                node_push(todo, a->items[i]);
        break;
    }
    case HV_HASH: {
        hv_hashv *h = (hv_hashv *)v;
        for (size_t i = 0; i < h->n; i++) {
            if (h->items[i].key->rc)
                node_push(todo, h->items[i].key);
            if (h->items[i].val->rc)
                node_push(todo, h->items[i].val);
        }
        break;
    }
    case HV_SENSITIVE:
        if (((hv_scalar *)v)->u.inner->rc)
            node_push(todo, ((hv_scalar *)v)->u.inner);
        break;
    default: {
        /* the hash code a lookup would compute, computed now: the node is read-only from here */
        (void)hv_hash_code(v);
        break;
    }
    }
}

void hv_make_immortal(hv *v, hv_nodes *out)
{
    if (!v || !v->rc)
        return;
    hv_nodes todo = {0};
    node_push(&todo, v);
    while (todo.n) {
        hv *n = todo.items[--todo.n];
        if (n->rc) /* (a node reached twice: a YAML alias) */
            immortalize(n, &todo, out);
    }
    free(todo.items);
}

void hv_free_immortal(hv_nodes *nodes)
{
    for (size_t i = 0; i < nodes->n; i++) {
        hv *v = nodes->items[i];
        if (v->kind == HV_ARRAY) {
            if (!ITEMS_INLINE(v))
                free(((hv_arr *)v)->items);
        } else if (v->kind == HV_HASH) {
            if (!ITEMS_INLINE(v))
                free(((hv_hashv *)v)->items);
            free(((hv_hashv *)v)->idx);
        }
        free(v);
    }
    free(nodes->items);
    *nodes = (hv_nodes){0};
}

bool hv_identity_code(const hv *v, uint64_t *code)
{
    bool ok = true;
    *code = code_impl(v, true, &ok);
    return ok;
}

hv *hv_clone_scalar(const hv *v)
{
    hv *c;
    switch (hv_kind_of(v)) {
    case HV_UNDEF:
        c = alloc_node(sizeof(hv_scalar), HV_UNDEF);
        ((hv_scalar *)c)->u.i = 0;
        break;
    case HV_BOOL:
        c = alloc_node(sizeof(hv_scalar), HV_BOOL);
        ((hv_scalar *)c)->u.i = 0;
        ((hv_scalar *)c)->u.b = hv_bool_val(v);
        break;
    case HV_INT:
        c = hv_int(hv_int_val(v));
        break;
    case HV_FLOAT:
        c = hv_float(hv_float_val(v));
        break;
    case HV_STRING: case HV_BIGINT: case HV_SYMBOL:
        c = new_string(hv_str_ptr(v), hv_str_len(v), hv_kind_of(v));
        break;
    default:
        return hv_incref((hv *)v);
    }
    c->line = hv_line(v);
    return c;
}

hv *hv_copy(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        hv *a = hv_array_sized(n);
        for (size_t i = 0; i < n; i++)
            hv_array_push(a, hv_incref(hv_array_get(v, i)));
        hv_set_line(a, hv_line(v));
        return a;
    }
    case HV_HASH: {
        /* the entries (codes included) and the index as they are: the keys are known distinct;
         * room for a few more (a copy is made to be changed: merges add keys) */
        const hv_hashv *from = (const hv_hashv *)v;
        hv_hashv *h = (hv_hashv *)hv_hash_sized(from->n + 4);
        if (from->n)
            memcpy(h->items, from->items, from->n * sizeof *h->items);
        for (size_t i = 0; i < from->n; i++) {
            hv_incref(h->items[i].key);
            hv_incref(h->items[i].val);
        }
        h->n = from->n;
        if (from->idxcap) {
            h->idx = xmalloc(from->idxcap * sizeof *h->idx);
            memcpy(h->idx, from->idx, from->idxcap * sizeof *h->idx);
            h->idxcap = from->idxcap;
        }
        hv_set_line(&h->h, hv_line(v));
        return &h->h;
    }
    default:
        return hv_incref((hv *)v);
    }
}

hv *hv_deep_copy(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_ARRAY: {
        size_t n = hv_array_len(v);
        hv *a = hv_array_sized(n);
        for (size_t i = 0; i < n; i++)
            hv_array_push(a, hv_deep_copy(hv_array_get(v, i)));
        hv_set_line(a, hv_line(v));
        return a;
    }
    case HV_HASH: {
        size_t n = hv_hash_len(v);
        hv *h = hv_hash_sized(n);
        for (size_t i = 0; i < n; i++)
            hv_hash_set(h, hv_incref(hv_hash_key_at(v, i)), hv_deep_copy(hv_hash_val_at(v, i)));
        hv_set_line(h, hv_line(v));
        return h;
    }
    default:
        return hv_incref((hv *)v);
    }
}

/* ---- symbol keys ---- */

/* Containers already converted, by address: a node reached twice (a YAML alias) is converted
 * once and stays shared, so an alias bomb costs what its distinct nodes cost. */
typedef struct {
    const hv **from;
    hv **to;
    size_t cap, n;
} sym_memo;

static size_t sym_slot(const sym_memo *m, const hv *v)
{
    size_t i = (((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ULL) & (m->cap - 1);
    while (m->from[i] && m->from[i] != v)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void sym_put(sym_memo *m, const hv *v, hv *to)
{
    if ((m->n + 1) * 2 > m->cap) {
        sym_memo g = {xcalloc(m->cap ? m->cap * 2 : 64, sizeof *g.from), NULL, m->cap ? m->cap * 2 : 64, m->n};
        g.to = xcalloc(g.cap, sizeof *g.to);
        for (size_t i = 0; i < m->cap; i++)
            if (m->from[i]) {
                size_t j = sym_slot(&g, m->from[i]);
                g.from[j] = m->from[i];
                g.to[j] = m->to[i];
            }
        free(m->from);
        free(m->to);
        *m = g;
    }
    size_t i = sym_slot(m, v);
    m->from[i] = v;
    m->to[i] = hv_incref(to);
    m->n++;
}

static hv *symkeys(hv *v, sym_memo *m, int depth)
{
    bool arr = hv_is(v, HV_ARRAY);
    if ((!arr && !hv_is(v, HV_HASH)) || depth > 10000)
        return hv_incref(v);
    bool shared = hv_is_shared(v);
    if (shared && m->cap) {
        size_t i = sym_slot(m, v);
        if (m->from[i])
            return hv_incref(m->to[i]);
    }
    size_t n = arr ? hv_array_len(v) : hv_hash_len(v);
    hv *out = NULL; /* made on the first entry that changes */
    for (size_t i = 0; i < n; i++) {
        hv *e = arr ? hv_array_get(v, i) : hv_hash_val_at(v, i);
        hv *k = arr ? NULL : hv_hash_key_at(v, i);
        hv *ce = symkeys(e, m, depth + 1);
        bool sym = k && hv_is(k, HV_SYMBOL);
        if (!out && (ce != e || sym)) {
            out = arr ? hv_array_sized(n) : hv_hash_sized(n);
            hv_set_line(out, hv_line(v));
            for (size_t j = 0; j < i; j++) {
                if (arr)
                    hv_array_push(out, hv_incref(hv_array_get(v, j)));
                else
                    hv_hash_set(out, hv_incref(hv_hash_key_at(v, j)), hv_incref(hv_hash_val_at(v, j)));
            }
        }
        if (!out) {
            hv_decref(ce);
        } else if (arr) {
            hv_array_push(out, ce);
        } else {
            hv *nk = k;
            if (sym) {
                nk = hv_strn(hv_str_ptr(k), hv_str_len(k));
                hv_set_line(nk, hv_line(k));
            } else {
                hv_incref(k);
            }
            hv_hash_set(out, nk, ce); /* a string key met again keeps its place, takes this value */
        }
    }
    if (!out)
        out = hv_incref(v);
    if (shared)
        sym_put(m, v, out);
    return out;
}

hv *hv_symkeys_to_string(hv *v)
{
    sym_memo m = {0};
    hv *out = symkeys(v, &m, 0);
    for (size_t i = 0; i < m.cap; i++)
        if (m.from[i])
            hv_decref(m.to[i]);
    free(m.from);
    free(m.to);
    hv_decref(v);
    return out;
}
