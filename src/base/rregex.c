/* rregex.c - Ruby regexps through Oniguruma (ONIG_SYNTAX_RUBY, UTF-8).
 *
 * Match effort is bounded (Ruby's Onigmo is not: a lookup_options pattern such as /(a|a?)+$/
 * hangs Puppet on a long enough key). A search that gives up counts as no match, and a warning
 * naming the pattern is printed once per compiled regexp.
 *
 * Plain patterns (lookup_options keys such as "^site::deep_": an optional ^ or \A, printable
 * ASCII characters that are not special or are escaped, an optional $, \z or \Z) are matched
 * without Oniguruma against strings of ASCII without a newline, where such a pattern can only
 * mean the bytes themselves at the start, the end or anywhere; any other string compiles the
 * pattern on first need. A one-shot `hiera lookup` then needs no Oniguruma at all (the command
 * loads it only when first called: src/base/lazy/oniguruma.c). */
#include "base/rregex.h"
#include "base/diag.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rregex {
    _Atomic(regex_t *) re; /* NULL until first needed for a plain pattern */
    char *src;             /* the pattern, for the warning (its first 200 bytes) */
    int srclen;
    atomic_bool warned; /* a compiled regexp may be shared by the threads of a snapshot */
    /* a plain pattern: lit (lit_len bytes) at the start, the end, both or anywhere */
    char *full; /* the whole pattern (to compile it when a string is not plain) */
    size_t full_len;
    char *lit;
    size_t lit_len;
    bool plain, at_start, at_end;
};

/* The pattern as a plain one (see above): false when it is not. */
static bool plain_pattern(const char *src, size_t len, rregex *rr)
{
    size_t i = 0;
    if (len >= 1 && src[0] == '^')
        i = 1, rr->at_start = true;
    else if (len >= 2 && src[0] == '\\' && src[1] == 'A')
        i = 2, rr->at_start = true;
    size_t end = len;
    if (end > i && src[end - 1] == '$' && (end - 1 == i || src[end - 2] != '\\'))
        end--, rr->at_end = true;
    else if (end >= i + 2 && src[end - 2] == '\\' && (src[end - 1] == 'z' || src[end - 1] == 'Z') &&
             (end - 2 == i || src[end - 3] != '\\'))
        end -= 2, rr->at_end = true;
    sbuf lit = {0};
    for (; i < end; i++) {
        unsigned char c = (unsigned char)src[i];
        if (c == '\\' && i + 1 < end && src[i + 1] && strchr("!\"#$%&()*+,-./:;=?@[\\]^_{|}~", src[i + 1])) {
            sb_addc(&lit, src[++i]); /* an escaped punctuation character is itself */
            continue;
        }
        if (c < 0x20 || c > 0x7e || strchr(".*+?()[]{}|\\^$", c)) {
            sb_free(&lit);
            return false;
        }
        sb_addc(&lit, (char)c);
    }
    if (!lit.len) { /* (empty matches: left to Oniguruma) */
        sb_free(&lit);
        return false;
    }
    rr->lit_len = lit.len;
    rr->lit = sb_take(&lit);
    rr->plain = true;
    return true;
}

/* Whether a plain pattern can be matched on s by its bytes: s is ASCII without a newline. */
static bool plain_subject(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80 || s[i] == '\n')
            return false;
    return true;
}

/* Where a plain pattern first matches s at or after from, or -1. */
static long plain_search(const rregex *re, const char *s, size_t len, size_t from)
{
    size_t n = re->lit_len;
    if (n > len)
        return -1;
    if (re->at_start) {
        if (from > 0 || memcmp(s, re->lit, n) != 0 || (re->at_end && n != len))
            return -1;
        return 0;
    }
    if (re->at_end)
        return len - n >= from && memcmp(s + len - n, re->lit, n) == 0 ? (long)(len - n) : -1;
    if (from > len - n)
        return -1;
    const char *at = memmem(s + from, len - from, re->lit, n);
    return at ? (long)(at - s) : -1;
}

/* Backtracking steps allowed in one search (Oniguruma gives up the whole search when one
 * match attempt passes it): about 10 ms of work. Patterns matched against keys and knockout
 * strings never come near it unless they backtrack exponentially. */
#define RREGEX_RETRY_LIMIT 1000000UL

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;

static void onig_setup(void)
{
    OnigEncoding encs[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(encs, 1);
    onig_set_retry_limit_in_match(RREGEX_RETRY_LIMIT);
}

/* Oniguruma must be initialised once, before any onig_new, and its initialisation is not
 * thread-safe: every user of Oniguruma in the library (these regexps, the types' Pattern and
 * Regexp, the YAML writer's quoting patterns) calls this first. After it, onig_new and onig_search
 * may run on any thread. */
void rregex_init(void) { pthread_once(&onig_once, onig_setup); }

static regex_t *compile(const char *src, size_t len, herr *err)
{
    rregex_init();
    regex_t *re = NULL;
    OnigErrorInfo einfo;
    const UChar *p = (const UChar *)src;
    int r = onig_new(&re, p, p + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_RUBY, &einfo);
    if (r != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, r, &einfo);
        herr_set(err, HERR_ERROR, "%s: /%.*s/", (const char *)msg, (int)len, src);
        return NULL;
    }
    return re;
}

rregex *rregex_new(const char *src, size_t len, herr *err)
{
    rregex *rr = xcalloc(1, sizeof *rr);
    regex_t *re = NULL;
    if (plain_pattern(src, len, rr)) {
        rr->full = xstrndup(src, len); /* (no NUL in a plain pattern) */
        rr->full_len = len;
    } else if (!(re = compile(src, len, err))) {
        free(rr);
        return NULL;
    }
    atomic_init(&rr->re, re);
    rr->srclen = len > 200 ? 200 : (int)len;
    rr->src = xstrndup(src, (size_t)rr->srclen);
    atomic_init(&rr->warned, false);
    return rr;
}

/* The compiled pattern, compiled now when it was plain (a compiled regexp may be shared by
 * threads: the first one compiled is kept). */
static regex_t *compiled(const rregex *re)
{
    regex_t *r = atomic_load_explicit(&re->re, memory_order_acquire);
    if (r)
        return r;
    herr e = {0};
    r = compile(re->full, re->full_len, &e); /* (a plain pattern always compiles) */
    herr_clear(&e);
    regex_t *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&((rregex *)re)->re, &expected, r, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        onig_free(r);
        r = expected;
    }
    return r;
}

void rregex_free(rregex *re)
{
    if (!re)
        return;
    regex_t *r = atomic_load(&re->re);
    if (r)
        onig_free(r);
    free(re->src);
    free(re->full);
    free(re->lit);
    free(re);
}

static long search_from(const rregex *re, const char *s, size_t len, size_t from, OnigRegion *region)
{
    const UChar *start = (const UChar *)s, *end = start + len;
    long r = onig_search(compiled(re), start, end, start + from, end, region, ONIG_OPTION_NONE);
    if (r < 0 && r != ONIG_MISMATCH && !atomic_exchange_explicit(&((rregex *)re)->warned, true, memory_order_relaxed)) {
        /* the retry limit (or another match-time error): no match, said once */
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, (int)r);
        diag_warn("regexp-gave-up", NULL, 0, 0, "regexp /%.*s/ gave up matching (%s); treated as no match", re->srclen,
                  re->src, (const char *)msg);
    }
    return r;
}

bool rregex_search(const rregex *re, const char *s, size_t len)
{
    if (re->plain && plain_subject(s, len))
        return plain_search(re, s, len, 0) >= 0;
    return search_from(re, s, len, 0, NULL) >= 0;
}

char *rregex_gsub_empty(const rregex *re, const char *s, size_t len, size_t *outlen)
{
    if (re->plain && plain_subject(s, len)) {
        /* (a plain pattern never matches empty) */
        sbuf out = {0};
        size_t pos = 0;
        bool any = false;
        long at;
        while (pos < len && (at = plain_search(re, s, len, pos)) >= 0) {
            sb_addn(&out, s + pos, (size_t)at - pos);
            pos = (size_t)at + re->lit_len;
            any = true;
        }
        if (!any) {
            sb_free(&out);
            return NULL;
        }
        sb_addn(&out, s + pos, len - pos);
        *outlen = out.len;
        return sb_take(&out);
    }
    OnigRegion *region = onig_region_new();
    sbuf out = {0};
    size_t pos = 0, copied = 0;
    bool any = false;
    while (pos <= len) {
        long at = search_from(re, s, len, pos, region);
        if (at < 0)
            break;
        size_t mbeg = (size_t)region->beg[0], mend = (size_t)region->end[0];
        any = true;
        sb_addn(&out, s + copied, mbeg - copied);
        copied = mend;
        if (mend == mbeg) {
            /* empty match: step over one character, as Ruby does */
            if (mend >= len)
                break;
            size_t step = 1;
            unsigned char c = (unsigned char)s[mend];
            if (c >= 0xC0)
                step = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (mend + step > len)
                step = len - mend;
            sb_addn(&out, s + mend, step);
            copied = mend + step;
            pos = copied;
        } else {
            pos = mend;
        }
    }
    onig_region_free(region, 1);
    if (!any) {
        sb_free(&out);
        return NULL;
    }
    if (copied < len)
        sb_addn(&out, s + copied, len - copied);
    *outlen = out.len;
    return sb_take(&out);
}
