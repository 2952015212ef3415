/* diskcache.h - parsed data files kept on disk between runs (see diskcache.c). */
#ifndef HIERA_DISKCACHE_H
#define HIERA_DISKCACHE_H

#include <stdbool.h>
#include <sys/stat.h>

#include "base/util.h"
#include "base/value.h"

typedef struct diskcache diskcache;

/* The first 8 bytes of an entry: "HIERAC", the format's version, 0 (diskcache.c describes the
 * form; the fuzz harness builds entries with it) */
#define DISKCACHE_MAGIC "HIERAC\4\0"

/* The first 8 bytes of a result entry (kept by the command's result cache, cli/result_cache.c):
 * "HIERAR", its version, 0. */
#define DISKCACHE_RESULT_MAGIC "HIERAR\1\0"
/* The first 8 bytes of a kept verdict (<16 hex digits>.hk: the settings check's, with the record
 * of what it observed; engine/settings.c, settings_check_kept). */
#define DISKCACHE_VERDICT_MAGIC "HIERAK\1\0"

/* The bound of the entries' total size when HIERA_CACHE_MAX_SIZE does not give one. */
#define DISKCACHE_DEFAULT_MAX_SIZE ((uint64_t)256 << 20)

/* Opens (creating it private) the cache folder dir, or when dir is NULL or empty
 * $XDG_CACHE_HOME/hiera or $HOME/.cache/hiera. NULL when no safe folder is available. Its size
 * limit is HIERA_CACHE_MAX_SIZE when that is a size (diskcache_parse_size), else the default. */
diskcache *diskcache_open(const char *dir);
/* The folder diskcache_open(dir) would use (malloc'ed), or NULL; nothing is looked at or made. */
char *diskcache_folder(const char *dir);
/* Whether a folder that lstat() says *st of may hold entries: a folder of this process's
 * effective user that no one else can write into. */
bool diskcache_folder_safe(const struct stat *st);
void diskcache_close(diskcache *c);
/* Sets the size limit (bytes) of c's sweeps; an entry larger than it is not written. */
void diskcache_set_max_size(diskcache *c, uint64_t bytes);
/* "N", "NK", "NM" or "NG" (powers of 1024, either case) as bytes; false for anything else. */
bool diskcache_parse_size(const char *s, uint64_t *bytes);
/* The folder it keeps its entries in (BORROWED). */
const char *diskcache_dir(const diskcache *c);

/* The value parsed from path (format fmt) when the cache holds it for exactly this stat identity;
 * a new reference, or NULL. *flags gets the flags it was stored with. */
hv *diskcache_get(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags);
/* Strings shared between the values of several entries (diskcache.c): each string met in a
 * second entry becomes immortal (value.h) and is given to every later entry that holds it (same
 * bytes, same line). Values read with a table hold its strings: release them before the table.
 * A table serves one thread at a time. */
typedef struct dc_strings dc_strings;
dc_strings *dc_strings_new(void);
void dc_strings_free(dc_strings *t);
/* diskcache_get, the strings of the value shared through strings (may be NULL: none shared). */
hv *diskcache_get_shared(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags,
                         dc_strings *strings);
/* An entry mapped for reading parts of it (diskcache_get_lazy). */
typedef struct dc_map dc_map;
/* diskcache_get for a value that may be read in parts: when the entry holds a hash with an index
 * of its top-level keys, NULL with *map set (the entry mapped, nothing decoded yet; dc_map_free
 * it), else what diskcache_get gives, with *map NULL. */
hv *diskcache_get_lazy(diskcache *c, const char *path, int fmt, const struct stat *st, unsigned *flags, dc_map **map);
/* The value of the top-level string key (code: hv_str_code) of a mapped hash: 1 with *out (a new
 * reference), 0 when the hash has no such key, -1 when the entry turns out to be corrupt. */
int dc_map_get(const dc_map *m, const char *key, size_t len, uint64_t code, hv **out);
/* The whole value of a mapped entry (a new reference), NULL when it is corrupt. */
hv *dc_map_value(const dc_map *m);
void dc_map_free(dc_map *m);

/* Parsed files named by their content: a SHA-256 digest (DISKCACHE_DIGEST_SIZE bytes) of the bytes
 * the caller read and parsed as fmt. The same bytes under any path share one entry; it never goes
 * stale (a sweep removes it by use alone). get: a new reference, or NULL (*flags as for
 * diskcache_get); put: as diskcache_put. */
#define DISKCACHE_DIGEST_MAGIC "HIERAD\1\0"
#define DISKCACHE_DIGEST_SIZE 32
hv *diskcache_get_digest(diskcache *c, const unsigned char *digest, int fmt, unsigned *flags);
void diskcache_put_digest(diskcache *c, const unsigned char *digest, int fmt, const hv *value, unsigned flags);
/* The entry file of a digest (malloc'ed): for tests. */
char *diskcache_digest_entry_path(const diskcache *c, const unsigned char *digest, int fmt);

/* Stores the value parsed from path; failures are silent (the cache is only an optimisation).
 * Starts a sweep when one is due (see diskcache_sweep). */
void diskcache_put(diskcache *c, const char *path, int fmt, const struct stat *st, const hv *value, unsigned flags);

/* Stores data[0, len) whole as the entry file `name` of the folder (<16 hex digits>.hr or .hk:
 * the sweep keeps such files by their use alone, and removes those not starting with
 * DISKCACHE_RESULT_MAGIC, DISKCACHE_VERDICT_MAGIC); silent on failure, like diskcache_put. */
void diskcache_put_named(diskcache *c, const char *name, const void *data, size_t len);

/* Removes the entries that can never be used again (their source is gone or has changed, or
 * they are of another version), temporary files abandoned an hour ago, and then, while the
 * entries take more than the size limit, the least recently used (the later of a file's access
 * and modification times). Runs when due (the last sweep is a day old, or an eighth of the limit
 * has been written since) or when force is set, and only when no other process or thread is
 * sweeping this folder. Returns how many files it removed, or -1 when it did not run. */
int diskcache_sweep(diskcache *c, bool force);
/* The entry file of path in format fmt (malloc'ed): for tests. */
char *diskcache_entry_path(const diskcache *c, const char *path, int fmt);

#endif
