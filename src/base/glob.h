/* glob.h - file name patterns as Ruby's Dir.glob / Pathname.glob expands them for Hiera's
 * glob/globs levels: '*', '**' (recursive), '?', '[...]', '{a,b}', sorted as Ruby 3.1 sorts. */
#ifndef HIERA_GLOB_H
#define HIERA_GLOB_H

#include <stddef.h>

typedef struct {
    char **paths; /* malloc'ed array of malloc'ed paths */
    size_t n;
} glob_result;

/* Expands an absolute pattern. Fills out with the matching paths in the order Ruby's
 * Pathname.glob(pattern) returns them, directories left out (Hiera rejects them). `limit` caps
 * the number of results (0: no cap); returns 0 on success, -1 when the cap was exceeded (out holds
 * the first `limit` matches). */
int glob_expand(const char *pattern, glob_result *out, size_t limit);
/* glob_expand with the directories that match too (Ruby's Dir.glob, for a modulepath's entries). */
int glob_expand_all(const char *pattern, glob_result *out, size_t limit);
void glob_free(glob_result *r);

#endif
