/* overlay.h - files given in memory over a snapshot (overlay.c): an editor's unsaved buffers seen
 * by lookups and by hiera check as if they were on disk.
 *
 * An overlay holds texts by path (as the engine names the files) and, under them, a snapshot (or
 * nothing: the file system). A view over it (overlay_new_view) is a frozen cache that finds a
 * given text's parse first, then the snapshot's files, then the disk. An overlay never changes once
 * made (an editor's next keystroke makes a new one); it is shared read-only by any number of
 * threads: texts are parsed on first use, under a lock, and kept immortal (value.h) until the last
 * reference goes. */
#ifndef HIERA_ENGINE_OVERLAY_H
#define HIERA_ENGINE_OVERLAY_H

#include <stddef.h>

#include "engine/cache.h"
#include "engine/snapshot.h"

typedef struct overlay overlay;

typedef struct {
    const char *path; /* as the engine names the file (absolute) */
    const char *text;
    size_t len;
} overlay_text;

/* A new overlay of n texts (copied) over base (a reference is taken; NULL: the file system).
 * Holds one reference: release with overlay_release. */
overlay *overlay_new(snapshot *base, const overlay_text *texts, size_t n);
/* References (atomic: any thread may take or drop one). */
overlay *overlay_retain(overlay *o);
void overlay_release(overlay *o);
/* The text given for path (BORROWED, valid while o lives; *len its length), or NULL. */
const char *overlay_text_of(const overlay *o, const char *path, size_t *len);
/* A frozen cache over o for one thread (holds a reference on o): release with cache_free. */
hiera_cache *overlay_new_view(overlay *o);
/* The snapshot under o (BORROWED), or NULL. */
snapshot *overlay_base(const overlay *o);

#endif
