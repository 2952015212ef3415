/* diag.h - diagnostics (warnings the engines meet while they work) handed to whoever asked for
 * them: the library never prints. The public API sets the sink of its caller for the duration of a
 * call (diag_enter/diag_leave, per thread); code anywhere below reports with diag_warn, which
 * does nothing when no sink is set. */
#ifndef HIERA_DIAG_H
#define HIERA_DIAG_H

#include "base/util.h"

enum { DIAG_WARNING = 1, DIAG_ERROR = 2 };

/* severity, a stable code ("data-not-hash"...), the file (or NULL), 1-based line and column (0:
 * unknown), the message as Puppet words it (after its "Warning: "); strings BORROWED. */
typedef void (*diag_fn)(int severity, const char *code, const char *file, int line, int col, const char *message,
                        void *data);

typedef struct {
    diag_fn fn;
    void *data;
    const char *missing; /* (diag_lib_missing's mark: set by diag.c only) */
} diag_sink;

/* Makes sink (fn may be NULL: nothing is reported) the calling thread's sink; *saved receives the
 * one in effect before, which diag_leave puts back. Calls nest. diag_leave returns what
 * diag_lib_missing marked since the matching diag_enter (NULL almost always): the call that
 * entered must then fail with that text (an enclosing call sees it too). */
void diag_enter(diag_sink sink, diag_sink *saved);
const char *diag_leave(const diag_sink *saved);
/* A library opened on first use could not be (base/lazylib.h) and the code running on this
 * thread needed it where it cannot return an error itself: marks the thread with why (the first
 * mark stays until taken). */
void diag_lib_missing(const char *why);
/* The mark (NULL: none), cleared: for public calls that do not enter a sink (rendering). */
const char *diag_lib_missing_take(void);

/* The calling thread's sink. */
diag_sink diag_current(void);

void diag_report(int severity, const char *code, const char *file, int line, int col, const char *fmt, ...)
    HIERA_PRINTF(6, 7);
#define diag_warn(code, file, line, col, ...) diag_report(DIAG_WARNING, code, file, line, col, __VA_ARGS__)

#endif
