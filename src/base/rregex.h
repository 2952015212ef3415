/* rregex.h - Ruby regular expressions (Oniguruma with its Ruby syntax, UTF-8), as Puppet uses
 * them: lookup_options patterns (=~, unanchored), knockout prefixes (/^prefix/ with gsub). */
#ifndef HIERA_RREGEX_H
#define HIERA_RREGEX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

typedef struct rregex rregex;

/* Initialises Oniguruma (UTF-8, the backtracking bound) once per process; thread-safe. Called by
 * rregex_new, and by every other user of Oniguruma before its first onig_new or use of its
 * tables. false: Oniguruma cannot be used (the hiera command opens it on first use and it could
 * not be: lazylib_failure(LAZYLIB_ONIG) says why, and the calling thread is marked with it, see
 * diag_lib_missing); the caller must then not call Oniguruma and returns an error (or falls back,
 * the mark making the public call fail). */
bool rregex_init(void);
/* rregex_init, with the reason in err (HERR_ERROR) when it fails. */
bool rregex_ready(herr *err);

/* Compiles a Ruby regexp source. NULL with err (HERR_ERROR, Ruby's RegexpError wording as far as
 * Oniguruma gives it) when invalid. */
rregex *rregex_new(const char *src, size_t len, herr *err);
void rregex_free(rregex *re);
/* Ruby's `re =~ s`: true when the regexp matches anywhere in s. A match that exceeds the
 * backtracking limit counts as no match and sets *limit_hit when given. */
bool rregex_search(const rregex *re, const char *s, size_t len);
/* The first match at or after byte from: true with its bytes [*mbeg, *mend) (for split). */
bool rregex_match_at(const rregex *re, const char *s, size_t len, size_t from, size_t *mbeg, size_t *mend);
/* Ruby's s.gsub(re, ""): a new malloc'ed string with every match removed; *outlen gets its length.
 * Returns NULL when nothing matched (the caller keeps s). */
char *rregex_gsub_empty(const rregex *re, const char *s, size_t len, size_t *outlen);

#endif
