/* error.c - internal errors made public (error.h), and hiera_error_clear. */
#include "base/error.h"

#include <stdlib.h>
#include <string.h>

void herr_to_public(hiera_error *out, herr *in)
{
    if (!out) {
        herr_clear(in);
        return;
    }
    hiera_error_clear(out);
    out->kind = in->kind == HERR_NONE ? HIERA_ERR_NONE
                : (in->kind == HERR_LOOKUP || in->kind == HERR_LOOKUP_ISSUE) ? HIERA_ERR_LOOKUP
                                                                              : HIERA_ERR_FATAL;
    out->message = in->msg;
    out->file = in->file;
    out->line = in->line;
    out->column = in->col;
    in->msg = in->file = NULL;
    in->kind = HERR_NONE;
}

bool herr_public_missing(hiera_error *out, const char *missing)
{
    if (__builtin_expect(missing == NULL, 1))
        return false;
    herr e = {0};
    herr_set(&e, HERR_ERROR, "%s", missing);
    herr_to_public(out, &e);
    return true;
}

void hiera_error_clear(hiera_error *err)
{
    if (!err)
        return;
    free(err->message);
    free(err->file);
    memset(err, 0, sizeof *err);
}
