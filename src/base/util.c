/* util.c - see util.h */
#include "base/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(void)
{
    fputs("hiera: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    if (!p)
        return xmalloc(n); /* (a first block: the allocator's realloc path is the longer one) */
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

void options_take(void *out, size_t n, const void *given)
{
    memset(out, 0, n);
    if (given) {
        size_t size = *(const size_t *)given;
        memcpy(out, given, size && size < n ? size : n);
    }
    *(size_t *)out = n;
}

char *xasprintf(const char *fmt, ...)
{
    sbuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    return sb_take(&b);
}

char *xjoin(const char *first, ...)
{
    va_list ap;
    size_t len = 0;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *))
        len += strlen(s);
    va_end(ap);
    char *out = xmalloc(len + 1), *p = out;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        size_t n = strlen(s);
        memcpy(p, s, n);
        p += n;
    }
    va_end(ap);
    *p = 0;
    return out;
}

static void sb_grow(sbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 128;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void sb_addn_grow(sbuf *b, const char *s, size_t n)
{
    sb_grow(b, n);
    if (n)
        memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sb_adds(sbuf *b, const char *s) { sb_addn(b, s, strlen(s)); }

void sb_addc_grow(sbuf *b, char c)
{
    sb_grow(b, 1);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void sb_vaddf(sbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n <= 0)
        return;
    sb_grow(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sb_addf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(b, fmt, ap);
    va_end(ap);
}

char *sb_take(sbuf *b)
{
    char *s = b->s ? b->s : xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

void sb_free(sbuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void sb_add_u32(sbuf *b, uint32_t v) { sb_addn(b, (const char *)&v, sizeof v); }
void hex64(uint64_t h, char out[16])
{
    for (int i = 0; i < 16; i++)
        out[i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
}

uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    if (i < n) {
        /* the r last bytes as a little-endian word; on a little-endian machine by loads that
         * overlap what was read (a loop over the bytes cost as much as the rest of the hash) */
        size_t r = n - i;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n >= 8) {
            memcpy(&w, b + n - 8, 8);
            w >>= 8 * (8 - r);
        } else if (r >= 4) {
            uint32_t lo, hi;
            memcpy(&lo, b, 4);
            memcpy(&hi, b + r - 4, 4);
            w = lo | (uint64_t)hi << (8 * (r - 4));
        } else {
            w = b[0] | (uint64_t)b[r / 2] << (8 * (r / 2)) | (uint64_t)b[r - 1] << (8 * (r - 1));
        }
#else
        w = 0;
        for (size_t j = 0; j < r; j++)
            w |= (uint64_t)b[i + j] << (8 * j);
#endif
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    return hash_mix(h);
}

bool code_set_seen(code_set *s, uint64_t code)
{
    size_t cap = s->codes ? (size_t)1 << s->bits : 0;
    if (s->n * 2 >= cap) {
        if (s->codes && s->bits >= s->max_bits) {
            memset(s->codes, 0, cap * sizeof *s->codes);
            s->n = 0;
        } else {
            unsigned bits = s->codes ? s->bits + 1 : s->min_bits;
            uint64_t *codes = xcalloc((size_t)1 << bits, sizeof *codes);
            for (size_t i = 0; i < cap; i++) {
                if (!s->codes[i])
                    continue;
                size_t j = (size_t)(s->codes[i] >> (64 - bits));
                while (codes[j])
                    j = (j + 1) & (((size_t)1 << bits) - 1);
                codes[j] = s->codes[i];
            }
            free(s->codes);
            s->codes = codes;
            s->bits = bits;
        }
        cap = (size_t)1 << s->bits;
    }
    for (size_t i = (size_t)(code >> (64 - s->bits));; i = (i + 1) & (cap - 1)) {
        if (s->codes[i] == code)
            return true;
        if (!s->codes[i]) {
            s->codes[i] = code;
            s->n++;
            return false;
        }
    }
}

void code_set_free(code_set *s)
{
    free(s->codes);
    *s = (code_set){NULL, 0, s->min_bits, s->max_bits, 0};
}

void sb_add_u64(sbuf *b, uint64_t v) { sb_addn(b, (const char *)&v, sizeof v); }

bool br_bytes(byte_reader *r, size_t n, const unsigned char **out)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    *out = r->p;
    r->p += n;
    return true;
}

/* The next n bytes copied into out (a number in the machine's byte order). */
static bool br_copy(byte_reader *r, void *out, size_t n)
{
    const unsigned char *at;
    if (!br_bytes(r, n, &at))
        return false;
    memcpy(out, at, n);
    return true;
}

bool br_u32(byte_reader *r, uint32_t *v) { return br_copy(r, v, sizeof *v); }

bool br_u64(byte_reader *r, uint64_t *v) { return br_copy(r, v, sizeof *v); }

const char *sb_str(const sbuf *b) { return b->s ? b->s : ""; }

void herr_setv(herr *e, herr_kind kind, const char *fmt, va_list ap)
{
    if (!e)
        return;
    herr_clear(e);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    e->kind = kind;
    e->msg = sb_take(&b);
}

void herr_set_text(herr *e, herr_kind kind, const char *msg)
{
    if (!e)
        return;
    herr_clear(e);
    e->kind = kind;
    e->msg = xstrdup(msg);
}

void herr_set(herr *e, herr_kind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    herr_setv(e, kind, fmt, ap);
    va_end(ap);
}

void herr_at(herr *e, const char *file, int line, int col)
{
    if (!e)
        return;
    free(e->file);
    e->file = file ? xstrdup(file) : NULL;
    e->line = line;
    e->col = col;
}

void herr_clear(herr *e)
{
    if (!e)
        return;
    if (e->msg || e->file) { /* (most are clear: no call to free for nothing, twice a lookup) */
        free(e->msg);
        free(e->file);
    }
    e->msg = e->file = NULL;
    e->kind = HERR_NONE;
    e->line = e->col = 0;
}

void herr_move(herr *dst, herr *src)
{
    if (dst == src)
        return;
    herr_clear(dst);
    *dst = *src;
    src->msg = src->file = NULL;
    src->kind = HERR_NONE;
    src->line = src->col = 0;
}

bool herr_isset(const herr *e) { return e && e->kind != HERR_NONE; }

void *oa_regrow(void *old, size_t ocap, size_t ncap, size_t slot_size)
{
    unsigned char *slots = xcalloc(ncap, slot_size);
    const unsigned char *from = old;
    for (size_t i = 0; i < ocap; i++) {
        uint64_t code;
        memcpy(&code, from + i * slot_size, sizeof code);
        if (!code)
            continue;
        size_t j = (size_t)code & (ncap - 1);
        for (;;) {
            uint64_t taken;
            memcpy(&taken, slots + j * slot_size, sizeof taken);
            if (!taken)
                break;
            j = (j + 1) & (ncap - 1);
        }
        memcpy(slots + j * slot_size, from + i * slot_size, slot_size);
    }
    free(old);
    return slots;
}

const char *errno_text(int e, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, len); /* the GNU variant: a static string or buf */
#else
    if (strerror_r(e, buf, len) != 0)
        snprintf(buf, len, "Unknown error %d", e);
    return buf;
#endif
}
