/* util.h - allocation that never returns NULL, a growable string buffer, and the error record
 * every stage fills in. */
#ifndef HIERA_UTIL_H
#define HIERA_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define HIERA_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HIERA_PRINTF(a, b)
#endif

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) HIERA_PRINTF(1, 2);
/* The strings given, up to a NULL, joined (malloc'ed): xasprintf without a format, for the
 * paths and names made for every node. */
char *xjoin(const char *first, ...) __attribute__((sentinel));

/* A caller's options struct (given, or NULL: none), whose first field is the size_t size it was
 * built with (0: this version's), in this version's layout: out (n bytes) gets the bytes given
 * has, zeros past them, and n as its size. */
void options_take(void *out, size_t n, const void *given);

/* A hash of n bytes, eight at a time, each word mixed in, then finished (murmur's fmix64): the
 * hash of hv strings (value.c) and of the work table's keys (memo.c). Codes of one build and
 * machine: never compare them across builds without a check (the disk cache's indexes check
 * the code of "lookup_options" before they use theirs). */
uint64_t hash_bytes(const void *p, size_t n);
/* h as 16 lower-case hexadecimal digits, most significant first, into out (no NUL): the names
 * of the disk cache's entries. */
void hex64(uint64_t h, char out[16]);
/* A set of non-zero 64-bit codes met once (what a table admits on the second meeting): open
 * addressing, at most half full, growing from 1 << min_bits to 1 << max_bits places, and emptied
 * when full there (a mark lost then only delays an admission). Zero-initialise it with the two
 * bounds set. */
typedef struct {
    uint64_t *codes;
    unsigned bits, min_bits, max_bits;
    size_t n;
} code_set;
/* Whether code was met before; marks it when not. */
bool code_set_seen(code_set *s, uint64_t code);
void code_set_free(code_set *s);
/* The finalizer of MurmurHash3 (fmix64): every bit of h moves every bit of the result. hash_bytes
 * ends with it; value and report codes mix their parts with it. */
static inline uint64_t hash_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* A growable NUL-terminated byte buffer. Zero-initialise (sbuf b = {0}) to start. */
typedef struct {
    char *s;
    size_t len, cap;
} sbuf;
/* (sb_addn and sb_addc are inline where the buffer has room: the renderers and the key
 * builders of every lookup call them for each piece; the _grow forms make room first) */
void sb_addn_grow(sbuf *b, const char *s, size_t n);
void sb_addc_grow(sbuf *b, char c);
static inline void sb_addn(sbuf *b, const char *s, size_t n)
{
    if (n >= b->cap - b->len) { /* (room for n bytes and the NUL: n < cap - len) */
        sb_addn_grow(b, s, n);
        return;
    }
    if (n)
        memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}
static inline void sb_addc(sbuf *b, char c)
{
    if (b->cap - b->len < 2) {
        sb_addc_grow(b, c);
        return;
    }
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}
/* The first "%{" in s[0..n), or NULL: memmem's search for a two-byte needle, by memchr for the
 * '%' (every interpolation check of every value asks it). */
static inline const char *find_interp_open(const char *s, size_t n)
{
    const char *end = s + n;
    while (s < end) {
        const char *p = memchr(s, '%', (size_t)(end - s));
        if (!p || p + 1 >= end)
            return NULL;
        if (p[1] == '{')
            return p;
        s = p + 1;
    }
    return NULL;
}
void sb_adds(sbuf *b, const char *s);
void sb_addf(sbuf *b, const char *fmt, ...) HIERA_PRINTF(2, 3);
void sb_vaddf(sbuf *b, const char *fmt, va_list ap);
char *sb_take(sbuf *b); /* returns the malloc'ed string ("" when empty) and resets b */
void sb_free(sbuf *b);
/* A number appended in the machine's byte order (files of one machine: the disk cache's). */
void sb_add_u32(sbuf *b, uint32_t v);
void sb_add_u64(sbuf *b, uint64_t v);

/* Bytes read back front to back (what sb_add_u32/sb_add_u64 and sb_addn wrote): each take
 * fails, taking nothing, when fewer bytes are left than it needs. */
typedef struct {
    const unsigned char *p, *end;
} byte_reader;
bool br_u32(byte_reader *r, uint32_t *v);
bool br_u64(byte_reader *r, uint64_t *v);
/* n bytes: *out points at them (BORROWED from the buffer read). */
bool br_bytes(byte_reader *r, size_t n, const unsigned char **out);
const char *sb_str(const sbuf *b); /* "" when empty; BORROWED */

/* Error kinds, after the Ruby exception classes Puppet's lookup raises, because they decide
 * what `puppet lookup` does with the error:
 *  - HERR_LOOKUP: Puppet::DataBinding::LookupError (no issue code). `puppet lookup` exits 1 and
 *    prints nothing (--explain shows the message). A failing lookup in the global layer rewraps
 *    it as a Puppet::Error "Lookup of key 'k' failed: ...".
 *  - HERR_LOOKUP_ISSUE: a LookupError that carries an issue code (hiera.yaml semantic checks,
 *    interpolation syntax); like HERR_LOOKUP but never rewrapped.
 *  - HERR_PUPPET: any other Puppet::Error (type assertion, YAML load of hiera.yaml). Printed as
 *    "Error: Could not run: <msg>", but inside a data provider's recursion guard it becomes a
 *    HERR_LOOKUP with the same message.
 *  - HERR_ERROR: any other Ruby StandardError (ArgumentError...): printed, never converted. */
typedef enum {
    HERR_NONE = 0,
    HERR_LOOKUP,
    HERR_LOOKUP_ISSUE,
    HERR_PUPPET,
    HERR_ERROR,
} herr_kind;

typedef struct {
    herr_kind kind;
    char *msg;  /* malloc'ed message, without file/line suffix */
    char *file; /* malloc'ed path, or NULL */
    int line;   /* 1-based, 0 when unknown */
    int col;    /* 1-based, 0 when unknown */
} herr;

void herr_set(herr *e, herr_kind kind, const char *fmt, ...) HIERA_PRINTF(3, 4);
void herr_setv(herr *e, herr_kind kind, const char *fmt, va_list ap);
/* herr_set with a message taken as it is (no formatting) */
void herr_set_text(herr *e, herr_kind kind, const char *msg);
void herr_at(herr *e, const char *file, int line, int col); /* sets the location */
void herr_clear(herr *e);
void herr_move(herr *dst, herr *src); /* dst takes src's contents; src is cleared */
bool herr_isset(const herr *e);

/* strerror(e), thread-safe: the text is written into buf (len bytes) when the C library does not
 * return a static string. ERRNO_TEXT(e) gives it a buffer that lives until the end of the
 * enclosing block, for use inside one message call. */
const char *errno_text(int e, char *buf, size_t len);
#define ERRNO_TEXT(e) errno_text((e), (char[128]){0}, 128)

/* Open-addressing tables (linear probing) whose slots start with a uint64_t hash code, 0 for an
 * empty slot: a table of ncap slots (a power of two) holding the entries of old (ocap slots of
 * slot_size bytes), which is freed. */
void *oa_regrow(void *old, size_t ocap, size_t ncap, size_t slot_size);

/* An interpolated string may not grow past this (data files are capped at 256 MB; a value that
 * repeats a long one many times could otherwise take all memory); the message names the text
 * interpolated (its first 100 bytes) and the bound. */
#define MAX_INTERPOLATED_SIZE (64 * 1024 * 1024)
#define MAX_INTERPOLATED_MSG "Interpolation of '%.100s' gives a string longer than %d bytes"

#endif
