/* overlay.c - files given in memory over a snapshot (overlay.h). */
#include "engine/overlay.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "base/value.h"

/* one text, and its parse per format asked (a file is asked as one format, seldom two) */
#define NFORMATS (FMT_TEXT + 1)
typedef struct {
    char *path;
    char *text;
    size_t len;
    struct {
        bool done;
        hv *value; /* immortal, or NULL with err */
        herr err;
    } parsed[NFORMATS];
} otext;

struct overlay {
    int refs;
    snapshot *base;
    otext *texts;
    size_t n;
    pthread_mutex_t lock; /* the parses made on first use */
    hv_nodes nodes;       /* what the parses made immortal */
};

overlay *overlay_new(snapshot *base, const overlay_text *texts, size_t n)
{
    overlay *o = xcalloc(1, sizeof *o);
    o->refs = 1;
    o->base = base ? snapshot_retain(base) : NULL;
    o->texts = xcalloc(n ? n : 1, sizeof *o->texts);
    for (size_t i = 0; i < n; i++) {
        o->texts[i].path = xstrdup(texts[i].path);
        o->texts[i].text = xstrndup(texts[i].text, texts[i].len);
        o->texts[i].len = texts[i].len;
    }
    o->n = n;
    pthread_mutex_init(&o->lock, NULL);
    return o;
}

overlay *overlay_retain(overlay *o)
{
    __atomic_add_fetch(&o->refs, 1, __ATOMIC_RELAXED);
    return o;
}

void overlay_release(overlay *o)
{
    if (!o || __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < o->n; i++) {
        free(o->texts[i].path);
        free(o->texts[i].text);
        for (int j = 0; j < NFORMATS; j++)
            herr_clear(&o->texts[i].parsed[j].err);
    }
    hv_free_immortal(&o->nodes);
    free(o->texts);
    pthread_mutex_destroy(&o->lock);
    if (o->base)
        snapshot_release(o->base);
    free(o);
}

static otext *find(const overlay *o, const char *path)
{
    for (size_t i = 0; i < o->n; i++)
        if (!strcmp(o->texts[i].path, path))
            return &o->texts[i];
    return NULL;
}

const char *overlay_text_of(const overlay *o, const char *path, size_t *len)
{
    otext *t = find(o, path);
    if (!t)
        return NULL;
    *len = t->len;
    return t->text;
}

snapshot *overlay_base(const overlay *o) { return o->base; }

static bool source_get(const void *src, const char *path, file_format fmt, const hv **value, const herr **err)
{
    overlay *o = (overlay *)src;
    otext *t = find(o, path);
    if (!t) {
        snapshot_file f;
        if (!o->base || !snapshot_get(o->base, path, fmt, &f))
            return false;
        *value = f.value;
        *err = f.err;
        return true;
    }
    if ((unsigned)fmt >= NFORMATS)
        return false;
    pthread_mutex_lock(&o->lock);
    int j = (int)fmt;
    if (!t->parsed[j].done) {
        t->parsed[j].done = true;
        t->parsed[j].value = cache_parse_text(path, t->text, t->len, fmt, &t->parsed[j].err);
        if (t->parsed[j].value)
            hv_make_immortal(t->parsed[j].value, &o->nodes);
    }
    *value = t->parsed[j].value;
    *err = &t->parsed[j].err;
    pthread_mutex_unlock(&o->lock);
    return true;
}

static int source_path_state(const void *src, const char *path)
{
    const overlay *o = src;
    if (find(o, path))
        return 1;
    return o->base ? snapshot_path_state(o->base, path) : -1;
}

static void source_release(void *src) { overlay_release(src); }

hiera_cache *overlay_new_view(overlay *o)
{
    static const file_source ops = {source_get, source_path_state, source_release};
    return cache_new_view(&ops, overlay_retain(o));
}
