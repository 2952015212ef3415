/* diag.c - the calling thread's diagnostics sink (diag.h). */
#include "base/diag.h"

#include <stdarg.h>
#include <stdlib.h>

static _Thread_local diag_sink current;

void diag_enter(diag_sink sink, diag_sink *saved)
{
    *saved = current;
    current = sink;
}

void diag_leave(const diag_sink *saved) { current = *saved; }

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
