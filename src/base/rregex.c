/* rregex.c - Ruby regexps through Oniguruma (ONIG_SYNTAX_RUBY, UTF-8).
 *
 * Match effort is bounded (Ruby's Onigmo is not: a lookup_options pattern such as /(a|a?)+$/
 * hangs Puppet on a long enough key). A search that gives up counts as no match, and a warning
 * naming the pattern is printed once per compiled regexp.
 *
 * Literal patterns (lookup_options keys such as "^site::deep_" or "^profile::(list|hash)_": an
 * optional ^ or \A, printable ASCII characters that are not special or are escaped punctuation,
 * groups of such alternatives, an optional $, \z or \Z) are matched without Oniguruma against
 * strings of ASCII without a newline, where such a pattern can only mean its bytes at the start,
 * the end or anywhere (and such a pattern is always valid); any other string compiles the pattern
 * on first need. A one-shot `hiera lookup` then needs no Oniguruma at all (the command loads it
 * only when first called: src/base/lazy/oniguruma.c). */
#include "base/rregex.h"
#include "base/diag.h"
#include "base/lazylib.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rregex {
    _Atomic(regex_t *) re; /* NULL until first needed for a literal pattern */
    char *src;             /* the pattern, for the warning (its first 200 bytes) */
    int srclen;
    atomic_bool warned; /* a compiled regexp may be shared by the threads of a snapshot */
    /* a literal pattern (see above): nseg segments, each one of its alternatives (alts[seg_first
     * [k]] to alts[seg_first[k + 1] - 1]), at the start, the end, both or anywhere */
    char *full; /* the whole pattern (to compile it when a string is not plain ASCII) */
    size_t full_len;
    char **alts;
    size_t *alt_len, nalts;
    size_t *seg_first, nseg;
    bool literal, at_start, at_end;
    char *lit; /* one segment of one alternative: its bytes (lit_len), searched with memmem */
    size_t lit_len;
};

/* More alternatives than this (their product over the segments) are left to Oniguruma. */
#define LITERAL_MAX_PATHS 256

static void add_alt(rregex *rr, sbuf *a)
{
    rr->alts = xrealloc(rr->alts, (rr->nalts + 1) * sizeof *rr->alts);
    rr->alt_len = xrealloc(rr->alt_len, (rr->nalts + 1) * sizeof *rr->alt_len);
    rr->alt_len[rr->nalts] = a->len;
    rr->alts[rr->nalts++] = sb_take(a);
}

static void start_seg(rregex *rr)
{
    rr->seg_first = xrealloc(rr->seg_first, (rr->nseg + 2) * sizeof *rr->seg_first);
    rr->seg_first[rr->nseg++] = rr->nalts;
}

static void forget_literal(rregex *rr)
{
    for (size_t i = 0; i < rr->nalts; i++)
        free(rr->alts[i]);
    free(rr->alts);
    free(rr->alt_len);
    free(rr->seg_first);
    rr->alts = NULL;
    rr->alt_len = NULL;
    rr->seg_first = NULL;
    rr->nalts = rr->nseg = 0;
    rr->at_start = rr->at_end = false;
}

/* The next literal character of src (printable ASCII that is not special, or escaped
 * punctuation) into *c, advancing *i; false when src[*i] is anything else. */
static bool literal_char(const char *src, size_t end, size_t *i, char *c)
{
    unsigned char ch = (unsigned char)src[*i];
    if (ch == '\\' && *i + 1 < end && src[*i + 1] && strchr("!\"#$%&()*+,-./:;=?@[\\]^_{|}~", src[*i + 1])) {
        *c = src[*i + 1]; /* an escaped punctuation character is itself */
        *i += 2;
        return true;
    }
    if (ch < 0x20 || ch > 0x7e || strchr(".*+?()[]{}|\\^$", ch))
        return false;
    *c = (char)ch;
    *i += 1;
    return true;
}

/* The pattern as a literal one (see above): false when it is not. */
static bool literal_pattern(const char *src, size_t len, rregex *rr)
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
    size_t paths = 1, min_len = 0;
    char c;
    while (i < end) {
        if (src[i] == '(') {
            /* a group of literal alternatives: (a|b) or (?:a|b) */
            i += (i + 2 < end && src[i + 1] == '?' && src[i + 2] == ':') ? 3 : 1;
            if (lit.len) {
                start_seg(rr);
                min_len += lit.len;
                add_alt(rr, &lit);
            }
            start_seg(rr);
            size_t first = rr->nalts, shortest = SIZE_MAX;
            for (;;) {
                while (i < end && literal_char(src, end, &i, &c))
                    sb_addc(&lit, c);
                if (i >= end || (src[i] != '|' && src[i] != ')') || !lit.len)
                    goto not_literal; /* (empty alternatives too) */
                if (lit.len < shortest)
                    shortest = lit.len;
                add_alt(rr, &lit);
                if (src[i++] == ')')
                    break;
            }
            paths *= rr->nalts - first;
            min_len += shortest;
            if (paths > LITERAL_MAX_PATHS)
                goto not_literal;
            continue;
        }
        if (!literal_char(src, end, &i, &c))
            goto not_literal;
        sb_addc(&lit, c);
    }
    if (lit.len) {
        start_seg(rr);
        min_len += lit.len;
        add_alt(rr, &lit);
    }
    if (!min_len) /* (empty matches: left to Oniguruma) */
        goto not_literal;
    rr->seg_first[rr->nseg] = rr->nalts;
    if (rr->nseg == 1 && rr->nalts == 1) {
        rr->lit = rr->alts[0];
        rr->lit_len = rr->alt_len[0];
    }
    rr->literal = true;
    return true;
not_literal:
    sb_free(&lit);
    forget_literal(rr);
    return false;
}

/* Whether a literal pattern can be matched on s by its bytes: s is ASCII without a newline. */
static bool plain_subject(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80 || s[i] == '\n')
            return false;
    return true;
}

/* Where the one literal of a pattern (lit) first matches s at or after from, or -1. */
static long lit_search(const rregex *re, const char *s, size_t len, size_t from)
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

/* Whether segments seg.. of a literal pattern match s at pos (and end there when anchored). */
static bool segs_at(const rregex *re, size_t seg, const char *s, size_t len, size_t pos)
{
    if (seg == re->nseg)
        return !re->at_end || pos == len;
    for (size_t a = re->seg_first[seg]; a < re->seg_first[seg + 1]; a++) {
        size_t n = re->alt_len[a];
        if (len - pos >= n && memcmp(s + pos, re->alts[a], n) == 0 && segs_at(re, seg + 1, s, len, pos + n))
            return true;
    }
    return false;
}

static bool literal_match(const rregex *re, const char *s, size_t len)
{
    if (re->lit)
        return lit_search(re, s, len, 0) >= 0;
    if (re->at_start)
        return segs_at(re, 0, s, len, 0);
    for (size_t pos = 0; pos < len; pos++)
        if (segs_at(re, 0, s, len, pos))
            return true;
    return false;
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
bool rregex_init(void)
{
    pthread_once(&onig_once, onig_setup);
    const char *why = lazylib_failure(LAZYLIB_ONIG);
    if (__builtin_expect(why != NULL, 0)) {
        diag_lib_missing(why);
        return false;
    }
    return true;
}

bool rregex_ready(herr *err)
{
    if (rregex_init())
        return true;
    herr_set(err, HERR_ERROR, "%s", lazylib_failure(LAZYLIB_ONIG));
    return false;
}

static regex_t *compile(const char *src, size_t len, herr *err)
{
    if (!rregex_ready(err))
        return NULL;
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
    if (literal_pattern(src, len, rr)) {
        rr->full = xstrndup(src, len); /* (no NUL in a literal pattern) */
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

/* The compiled pattern, compiled now when it was literal (a compiled regexp may be shared by
 * threads: the first one compiled is kept). */
static regex_t *compiled(const rregex *re)
{
    regex_t *r = atomic_load_explicit(&re->re, memory_order_acquire);
    if (r)
        return r;
    herr e = {0};
    r = compile(re->full, re->full_len, &e); /* (a literal pattern always compiles, when Oniguruma can be
                                                 loaded: else NULL, the thread marked, no match) */
    herr_clear(&e);
    if (!r)
        return NULL;
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
    forget_literal(re);
    free(re);
}

static long search_from(const rregex *re, const char *s, size_t len, size_t from, OnigRegion *region)
{
    const UChar *start = (const UChar *)s, *end = start + len;
    regex_t *c = compiled(re);
    if (!c)
        return ONIG_MISMATCH; /* (Oniguruma missing: the thread is marked, the public call fails) */
    long r = onig_search(c, start, end, start + from, end, region, ONIG_OPTION_NONE);
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
    if (re->literal && plain_subject(s, len))
        return literal_match(re, s, len);
    return search_from(re, s, len, 0, NULL) >= 0;
}

bool rregex_match_at(const rregex *re, const char *s, size_t len, size_t from, size_t *mbeg, size_t *mend)
{
    if (from > len)
        return false;
    OnigRegion *region = onig_region_new();
    bool found = search_from(re, s, len, from, region) >= 0;
    if (found) {
        *mbeg = (size_t)region->beg[0];
        *mend = (size_t)region->end[0];
    }
    onig_region_free(region, 1);
    return found;
}

char *rregex_gsub_empty(const rregex *re, const char *s, size_t len, size_t *outlen)
{
    if (re->lit && plain_subject(s, len)) {
        /* (a literal pattern never matches empty) */
        sbuf out = {0};
        size_t pos = 0;
        bool any = false;
        long at;
        while (pos < len && (at = lit_search(re, s, len, pos)) >= 0) {
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
    if (!compiled(re))
        return NULL; /* (Oniguruma missing: the thread is marked) */
    OnigRegion *region = onig_region_new();
    if (!region)
        return NULL;
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
