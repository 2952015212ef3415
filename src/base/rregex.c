/* rregex.c - Ruby regexps through Oniguruma (ONIG_SYNTAX_RUBY, UTF-8).
 *
 * Match effort is bounded (Ruby's Onigmo is not: a lookup_options pattern such as /(a|a?)+$/
 * hangs Puppet on a long enough key). A search that gives up counts as no match, and a warning
 * naming the pattern is printed once per compiled regexp. */
#include "base/rregex.h"
#include "base/diag.h"

#include <oniguruma.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rregex {
    regex_t *re;
    char *src; /* the pattern, for the warning */
    int srclen;
    atomic_bool warned; /* a compiled regexp may be shared by the threads of a snapshot */
};

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

rregex *rregex_new(const char *src, size_t len, herr *err)
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
    rregex *rr = xmalloc(sizeof *rr);
    rr->re = re;
    rr->srclen = len > 200 ? 200 : (int)len;
    rr->src = xstrndup(src, (size_t)rr->srclen);
    atomic_init(&rr->warned, false);
    return rr;
}

void rregex_free(rregex *re)
{
    if (!re)
        return;
    onig_free(re->re);
    free(re->src);
    free(re);
}

static long search_from(const rregex *re, const char *s, size_t len, size_t from, OnigRegion *region)
{
    const UChar *start = (const UChar *)s, *end = start + len;
    long r = onig_search(re->re, start, end, start + from, end, region, ONIG_OPTION_NONE);
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
    return search_from(re, s, len, 0, NULL) >= 0;
}

char *rregex_gsub_empty(const rregex *re, const char *s, size_t len, size_t *outlen)
{
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
