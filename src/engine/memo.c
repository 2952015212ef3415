/* memo.c - work remembered by a frozen cache; see memo.h. An open-addressing table of byte
 * keys (addresses and small numbers) to values. */
#include "engine/memo.h"
#include "base/util.h"
#include "base/fsjournal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What the table may hold: past either bound nothing more is remembered (entries cannot be
 * dropped: a key holds the addresses of values the table keeps alive), work is simply redone.
 * Shared work shows up with the first nodes, so a full table keeps what pays. */
#define MEMO_MAX_ENTRIES (4u << 20)
#define MEMO_MAX_BYTES ((size_t)256 << 20)

typedef struct {
    uint64_t code; /* 0: empty slot (first: oa_regrow) */
    uint32_t len;
    char *key;
    hv *value;
} memo_slot;

/* Admission: a key is remembered only when it is put for the second time. Most of what a fleet
 * computes once is never asked again (a merge of one node's own files, a path with its name in
 * it: 95-98% of the table's entries on the benchmark), and keeping it cost the time to copy the
 * key and mark the value stable, and the memory (page faults) to hold it all for the run. The
 * codes of the keys put once are kept in a set (open addressing, at most half full) of at most
 * 1 << SEEN_MAX_BITS codes, emptied when full: a mark lost then only delays an admission. */
#define SEEN_MIN_BITS 12
#define SEEN_MAX_BITS 19

struct memo {
    memo_slot *slots;
    size_t cap, n; /* cap: a power of two */
    size_t bytes;  /* keys, slots and (roughly) values held */
    size_t max_entries;
    code_set seen; /* the codes of keys put once */
};

/* A value's size, roughly: its node and its first level of elements. */
static size_t value_bytes(const hv *v)
{
    if (hv_is(v, HV_ARRAY))
        return 48 + hv_array_len(v) * 40;
    if (hv_is(v, HV_HASH))
        return 64 + hv_hash_len(v) * 72;
    if (hv_is(v, HV_STRING))
        return 48 + hv_str_len(v);
    return 32;
}

memo *memo_new(void)
{
    memo *m = xcalloc(1, sizeof(memo));
    m->max_entries = MEMO_MAX_ENTRIES;
    m->seen = (code_set){.min_bits = SEEN_MIN_BITS, .max_bits = SEEN_MAX_BITS};
    /* tests fill the table early to see that a full one changes no answer */
    const char *limit = fs_getenv("HIERA_MEMO_MAX_ENTRIES");
    if (limit && *limit) {
        char *end;
        unsigned long long n = strtoull(limit, &end, 10);
        if (!*end && n < MEMO_MAX_ENTRIES)
            m->max_entries = (size_t)n;
    }
    return m;
}

void memo_free(memo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].code) {
            free(m->slots[i].key);
            hv_decref(m->slots[i].value);
        }
    free(m->slots);
    code_set_free(&m->seen);
    free(m);
}

/* (keys are mostly addresses; a code is never 0: 0 marks an empty slot) */
static uint64_t key_code(const void *key, size_t len) { return hash_bytes(key, len) | 1; }

static memo_slot *find(const memo *m, const void *key, size_t len, uint64_t code)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)code & mask;; i = (i + 1) & mask) {
        memo_slot *s = &m->slots[i];
        if (!s->code)
            return s;
        if (s->code == code && s->len == len && memcmp(s->key, key, len) == 0)
            return s;
    }
}

hv *memo_get(memo *m, const void *key, size_t len)
{
    memo_slot *s = find(m, key, len, key_code(key, len));
    return s && s->code ? s->value : NULL;
}

static void grow(memo *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    m->slots = oa_regrow(m->slots, m->cap, ncap, sizeof *m->slots);
    m->cap = ncap;
}

bool memo_put(memo *m, const void *key, size_t len, hv *value)
{
    size_t cost = len + 2 * sizeof(memo_slot) + value_bytes(value);
    if (m->n >= m->max_entries || len > UINT32_MAX || m->bytes + cost > MEMO_MAX_BYTES)
        return false;
    uint64_t code = key_code(key, len);
    if (!code_set_seen(&m->seen, code))
        return false;
    if ((m->n + 1) * 4 > m->cap * 3)
        grow(m);
    memo_slot *s = find(m, key, len, code);
    if (s->code)
        return false; /* (a caller found nothing, then made the value: keep the first) */
    s->code = code;
    s->len = (uint32_t)len;
    s->key = xmalloc(len ? len : 1);
    memcpy(s->key, key, len);
    s->value = hv_incref(value);
    hv_set_stable_deep(value);
    m->n++;
    m->bytes += cost;
    return true;
}

hv *memo_intern(memo *m, const hv *src, hv *fresh)
{
    struct {
        char tag; /* every kind of key starts with its own letter */
        const hv *src;
        uint64_t content;
    } key;
    memset(&key, 0, sizeof key);
    key.src = src;
    key.tag = 'i';
    if (hv_is_stable(fresh) || !hv_identity_code(fresh, &key.content))
        return fresh;
    hv *known = memo_get(m, &key, sizeof key);
    if (known) {
        if (!hv_identical(known, fresh))
            return fresh; /* two contents with one code: the first keeps the place */
        hv_decref(fresh);
        return hv_incref(known);
    }
    memo_put(m, &key, sizeof key, fresh);
    return fresh;
}
