/* snapshot.h - everything parsed from one code directory at one moment, shared read-only by any
 * number of threads (snapshot.c).
 *
 * A snapshot reads, once, every hiera.yaml of the tree (the global one, each environment's, each
 * module's) and every data file a level of theirs can name for some node (location templates
 * read as patterns over the files that exist: tmplmatch.h), parses them, and keeps the results:
 * values (immortal: value.h) and parse errors, and what exists in the folders it listed. It never
 * changes afterwards. Lookups reach it through caches made over it (snapshot_new_view): a view is a
 * frozen cache that belongs to one thread, finds files in the snapshot instead of reading them,
 * and keeps its own work (compiled configurations, key index, remembered merges). A file the
 * snapshot does not hold (a location no pattern could foresee) is read by the view itself.
 *
 * Reload is replacement: build a new snapshot aside, make new views over it, and release the old
 * one; it is freed when its last view is. */
#ifndef HIERA_ENGINE_SNAPSHOT_H
#define HIERA_ENGINE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "base/value.h"
#include "engine/cache.h"

typedef struct snapshot snapshot;

/* What to read. Strings are BORROWED during snapshot_build. */
typedef struct {
    const char *codedir;
    const char *environmentpath;     /* ':'-separated folders of environments */
    const char *global_config;       /* the global hiera.yaml (it may not exist) */
    const char *const *environments; /* the environments to read; NULL: every one found */
    size_t nenvironments;
    const char *disk_cache;          /* a disk cache folder used while parsing, or NULL */
    /* The module folders of an environment in modulepath order (a new NULL-terminated array of
     * malloc'ed paths, or NULL when it cannot be had); NULL: <env>/modules then <codedir>/modules. */
    char **(*module_roots)(const char *environment, void *data);
    void *module_roots_data;
    /* hiera check and hiera diff: a datadir under one of Puppet's default environmentpaths is read
     * under this folder of environments instead (envpath_remap), or NULL */
    const char *remap_envpath;
} snapshot_spec;

/* Builds a snapshot (never NULL: problems are kept in it, see snapshot_problems). The result
 * holds one reference. With prev (a snapshot of the same tree, BORROWED), a file whose stat
 * identity (device, inode, size, modification and change times) is the one prev parsed, or that
 * spec->changed says did not change, is not read again: the two share its parse. A data file read
 * is named by a digest of its bytes: when a snapshot alive in the process (any tree, any path)
 * holds a parse of the same bytes in the same format, or the disk cache (spec->disk_cache) has
 * one, that parse is taken instead of parsing. Any thread; several builds may run at once. */
snapshot *snapshot_build(const snapshot_spec *spec, const snapshot *prev);
/* snapshot_build for a caller that watches the tree (inotify): changed(path, data) tells whether
 * path (a file or a folder prev read or listed) may have changed since prev was built. false: its
 * state, its bytes and, for a folder, its entries are those prev saw, and they are taken from
 * prev without asking the file system, so that a rebuild costs what changed. changed NULL: as
 * snapshot_build. Called on the calling thread, during the call. */
typedef bool (*snapshot_changed_fn)(const char *path, void *data);
snapshot *snapshot_build_changed(const snapshot_spec *spec, const snapshot *prev, snapshot_changed_fn changed, void *data);
/* References (atomic: any thread may take or drop one). */
snapshot *snapshot_retain(snapshot *s);
void snapshot_release(snapshot *s);

/* A parsed file of the snapshot: its value (immortal) or the error its parse gave. */
typedef struct {
    const hv *value; /* NULL when err is set */
    const herr *err;
} snapshot_file;

/* The file at path as parsed with fmt, when the snapshot read it. */
bool snapshot_get(const snapshot *s, const char *path, file_format fmt, snapshot_file *out);
/* A frozen cache over s for one thread (cache_new_view with the snapshot as its file source);
 * it holds a reference on s. */
hiera_cache *snapshot_new_view(snapshot *s);
/* Every file of the snapshot, one per call (in no particular order): start with *i = 0; false
 * when there are no more. path is BORROWED from the snapshot. */
bool snapshot_next_file(const snapshot *s, size_t *i, const char **path, file_format *fmt, snapshot_file *out);
/* What the snapshot knows of path: -1 nothing (ask the file system), else as cache.c's
 * path_state: 0 nothing there, 1 a file (not a directory), 2 a directory. */
int snapshot_path_state(const snapshot *s, const char *path);

/* The files, configurations and environments read, for enumeration: a new hash
 * {"environments": [name...], "configs": [{"path", "layer", "environment", "module"}...],
 *  "files": [{"path", "format", "error"?}...]}. */
hv *snapshot_describe(const snapshot *s);
/* Problems met while building (configs that do not load, files that do not parse), as a new
 * array of {"severity", "code", "file", "line", "column", "message"} hashes. */
hv *snapshot_problems(const snapshot *s);
/* Build statistics: files held, folders listed, files taken unchanged from the previous snapshot. */
void snapshot_stats(const snapshot *s, size_t *files, size_t *dirs, size_t *reused);
/* The same and more: files parsed, taken from the store of parses by content, read back from the
 * disk cache; paths asked of the file system (stat, a folder listed); what the snapshot takes in
 * memory itself, estimated (its tables; the parses it holds are counted by snapshot_store_usage). */
typedef struct {
    size_t files, dirs, reused, parsed, shared, from_disk, looked, own_bytes;
} snapshot_counts;
void snapshot_counts_of(const snapshot *s, snapshot_counts *out);
/* The parses named by content alive in the process (held by some snapshot), and what they take in
 * memory, estimated. Any thread. */
void snapshot_store_usage(size_t *parses, size_t *bytes);
/* SHA-256 of bytes: what names a parse by its content. */
#define SNAPSHOT_DIGEST_SIZE 32
void snapshot_digest(const void *bytes, size_t len, unsigned char digest[SNAPSHOT_DIGEST_SIZE]);

#endif
