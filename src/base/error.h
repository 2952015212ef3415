/* error.h - the library's error record (util.h's herr) handed to the caller as the public
 * hiera_error (include/hiera.h), and hiera_error_clear: the one place both meet. */
#ifndef HIERA_BASE_ERROR_H
#define HIERA_BASE_ERROR_H

#include "base/util.h"
#include "hiera.h"

/* Moves in into out (out's old contents released; in left cleared). The kinds map as Puppet's
 * lookup treats them: lookup errors (HERR_LOOKUP, HERR_LOOKUP_ISSUE) to HIERA_ERR_LOOKUP, every
 * other error to HIERA_ERR_FATAL. out NULL: in is simply cleared. */
void herr_to_public(hiera_error *out, herr *in);

/* A public call that met a library it could not load (what diag_leave or diag_lib_missing_take
 * returned: NULL almost always) fails with that reason: true after filling out (HIERA_ERR_FATAL);
 * false when missing is NULL. */
bool herr_public_missing(hiera_error *out, const char *missing);

#endif
