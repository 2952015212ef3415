/* lazylib.c - why a library opened on first use could not be (lazylib.h). */
#include "base/lazylib.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(char *) failures[LAZYLIB_COUNT];

void lazylib_failed(lazylib_id id, const char *why)
{
    if ((unsigned)id >= LAZYLIB_COUNT || atomic_load_explicit(&failures[id], memory_order_acquire))
        return;
    char *copy = strdup(why ? why : "cannot be loaded");
    if (!copy)
        return; /* (out of memory: the next failure records it) */
    char *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&failures[id], &expected, copy, memory_order_acq_rel,
                                                 memory_order_acquire))
        free(copy);
    /* (kept for the life of the process: callers hold on to the text) */
}

const char *lazylib_failure(lazylib_id id)
{
    return (unsigned)id < LAZYLIB_COUNT ? atomic_load_explicit(&failures[id], memory_order_acquire) : NULL;
}
