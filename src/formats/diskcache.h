/* diskcache.h - parsed data files kept on disk between runs (see diskcache.c). */
#ifndef HIERA_DISKCACHE_H
#define HIERA_DISKCACHE_H

#include <stdbool.h>
#include <sys/stat.h>

#include "base/util.h"
#include "base/value.h"

typedef struct diskcache diskcache;

/* Opens (creating it private) the cache folder dir, or when dir is NULL or empty
 * $XDG_CACHE_HOME/hiera or $HOME/.cache/hiera. NULL when no safe folder is available. */
diskcache *diskcache_open(const char *dir);
void diskcache_close(diskcache *c);
/* The folder it keeps its entries in (BORROWED). */
const char *diskcache_dir(const diskcache *c);

/* The value parsed from path (format fmt) when the cache holds it for exactly this stat identity;
 * a new reference, or NULL. *flags gets the flags it was stored with. */
hv *diskcache_get(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags);
/* Stores the value parsed from path; failures are silent (the cache is only an optimisation). */
void diskcache_put(diskcache *c, const char *path, int fmt, const struct stat *st, const hv *value, unsigned flags);

#endif
