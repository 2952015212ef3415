/* diag.c - the calling thread's diagnostics sink (diag.h). */
#include "base/diag.h"

#include <stdarg.h>
#include <stdlib.h>

static _Thread_local diag_sink current;

void diag_enter(diag_sink sink, diag_sink *saved)
{
    *saved = current;
    sink.missing = NULL;
    current = sink;
}

const char *diag_leave(const diag_sink *saved)
{
    const char *missing = current.missing;
    current = *saved;
    if (missing && !current.missing)
        current.missing = missing;
    return missing;
}

void diag_lib_missing(const char *why)
{
    if (!current.missing)
        current.missing = why ? why : "a library could not be loaded";
}

const char *diag_lib_missing_take(void)
{
    const char *m = current.missing;
    current.missing = NULL;
    return m;
}

diag_sink diag_current(void) { return current; }

void diag_report(int severity, const char *code, const char *file, int line, int col, const char *fmt, ...)
{
    diag_sink s = current;
    if (!s.fn)
        return;
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    s.fn(severity, code, file, line, col, sb_str(&b), s.data);
    sb_free(&b);
}
