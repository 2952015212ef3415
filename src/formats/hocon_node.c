/* hocon_node.c - what every stage of the HOCON reader shares (see hocon.c, hocon_int.h): the
 * parse context's errors and work bound, and the config nodes (building, freeing, objects with
 * their key index). The lexer, the merging, the parser and the resolver stand on this file; it
 * calls none of them. */
#include "formats/hocon_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* errors                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Records the first error only. A Hocon::ConfigError becomes Puppet's LookupError message
 * "Unable to parse (NAME): ORIGIN: LINE: message", where ORIGIN is "String" for the document itself
 * (the gem parses a string) or an included file's name; `how` is E_CONFIG for that, E_NO_ORIGIN for
 * a ConfigError without origin (no "String: N:", the location is still recorded), E_RUBY for a Ruby
 * exception that is not a ConfigError (Puppet prints those as they are, without "Unable to parse"). */
void hc_failv(hctx *cx, int how, const char *org, int line, int col, const char *fmt, va_list ap)
{
    if (cx->failed)
        return;
    cx->failed = true;
    sbuf m = {0};
    sb_vaddf(&m, fmt, ap);
    if (how == E_RUBY)
        herr_set(cx->err, HERR_ERROR, "%s", sb_str(&m));
    else if (line > 0 && how == E_CONFIG)
        herr_set(cx->err, HERR_ERROR, "Unable to parse (%s): %s: %d: %s", cx->name, org ? org : "String", line,
                 sb_str(&m));
    else
        herr_set(cx->err, HERR_ERROR, "Unable to parse (%s): %s", cx->name, sb_str(&m));
    herr_at(cx->err, org ? org : cx->name, line > 0 ? line : 0, col > 0 ? col : 0);
    sb_free(&m);
}

void hc_fail(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hc_failv(cx, E_CONFIG, org, line, col, fmt, ap);
    va_end(ap);
}

void hc_fail_ruby(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hc_failv(cx, E_RUBY, org, line, col, fmt, ap);
    va_end(ap);
}

/* Counts hc_work (resolve calls, merges, copied text); false (with an error) past MAX_WORK. The gem
 * does not memoize lookups, so chains of substitutions and self-referencing stacks (`a += x` many
 * times) take it exponential time: past this bound the gem would take hours, while real files use
 * a few percent of it. */
bool hc_work(hctx *cx, size_t units)
{
    cx->work += (long)(units < (size_t)MAX_WORK ? units : (size_t)MAX_WORK);
    if (cx->work <= MAX_WORK)
        return true;
    hc_fail(cx, NULL, 0, 0, "too complex to resolve (more than %ld steps)", MAX_WORK);
    return false;
}

void hc_fail_bare(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hc_failv(cx, E_NO_ORIGIN, org, line, col, fmt, ap);
    va_end(ap);
}

/* Quirk: SimpleConfigList#resolve_substitutions turns any exception raised while resolving its
 * elements (ConfigError or not) into ConfigBugOrBrokenError "unexpected exception" */
void hc_rewrap_unexpected(hctx *cx)
{
    int line = cx->err->line, col = cx->err->col;
    char *file = cx->err->file ? xstrdup(cx->err->file) : NULL;
    herr_clear(cx->err);
    herr_set(cx->err, HERR_ERROR, "Unable to parse (%s): unexpected exception", cx->name);
    herr_at(cx->err, file, line, col);
    free(file);
    cx->failed = true;
}

/* ------------------------------------------------------------------------------------------ */
/* nodes                                                                                       */
/* ------------------------------------------------------------------------------------------ */

node *hc_nnew(int kind, int line, int col, const char *org)
{
    node *n = xcalloc(1, sizeof *n);
    n->badpath = -1;
    n->kind = (unsigned char)kind;
    n->refs = 1;
    n->line = line;
    n->col = col;
    n->org = org;
    if (kind == N_REF || kind == N_CONCAT || kind == N_MERGE || kind == N_MERGEOBJ)
        n->unresolved = true;
    return n;
}

void hc_nfree(node *n)
{
    if (!n || --n->refs > 0)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (n->items)
            hc_nfree(n->items[i]);
        if (n->keys)
            hv_decref(n->keys[i]);
    }
    if (n->items)
        free(n->items - n->front);
    if (n->keys)
        free(n->keys - n->front);
    free(n->index);
    hv_decref(n->val);
    hv_decref(n->text);
    free(n);
}

/* Appends a child reference (stolen); objects use obj_append. */
void hc_items_push(node *n, node *child)
{
    if (n->n == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 4;
        node **ib = n->items ? n->items - n->front : NULL;
        n->items = (node **)xrealloc(ib, (n->front + n->cap) * sizeof *ib) + n->front;
        if (n->kind == N_OBJ || n->kind == N_REF) {
            hv **kb = n->keys ? n->keys - n->front : NULL;
            n->keys = (hv **)xrealloc(kb, (n->front + n->cap) * sizeof *kb) + n->front;
        }
    }
    n->items[n->n++] = child;
    if (child && child->unresolved)
        n->unresolved = true;
}

node *hc_nprim(int kind, hv *val, int line, int col, const char *org)
{
    node *n = hc_nnew(kind, line, col, org);
    n->val = val;
    return n;
}

node *hc_nstr(hv *s, bool quoted, int line, int col, const char *org)
{
    node *n = hc_nprim(N_STR, s, line, col, org);
    n->quoted = quoted;
    return n;
}

/* recomputes the resolve status of an object or list from its children */
void hc_fix_status(node *n)
{
    n->unresolved = false;
    for (size_t i = 0; i < n->n; i++)
        if (n->items[i]->unresolved)
            n->unresolved = true;
}

/* ---- objects: insertion-ordered keys with an index for the larger ones ---- */

uint64_t hc_key_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static bool key_eq(const hv *k, const char *s, size_t n)
{
    return hv_str_len(k) == n && memcmp(hv_str_ptr(k), s, n) == 0;
}

static void index_put(node *o, size_t pos)
{
    size_t mask = o->icap - 1;
    size_t i = (size_t)hc_key_hash(hv_str_ptr(o->keys[pos]), hv_str_len(o->keys[pos])) & mask;
    while (o->index[i])
        i = (i + 1) & mask;
    o->index[i] = (uint32_t)(o->front + pos + 1);
}

static void index_rebuild(node *o)
{
    size_t cap = 16;
    while (cap < o->n * 2 + 2)
        cap *= 2;
    free(o->index);
    o->index = xcalloc(cap, sizeof *o->index);
    o->icap = cap;
    for (size_t i = 0; i < o->n; i++)
        index_put(o, i);
}

long hc_obj_find(node *o, const char *s, size_t n)
{
    if (o->n > 8 && !o->index)
        index_rebuild(o);
    if (!o->index) {
        for (size_t i = 0; i < o->n; i++)
            if (key_eq(o->keys[i], s, n))
                return (long)i;
        return -1;
    }
    size_t mask = o->icap - 1;
    for (size_t i = (size_t)hc_key_hash(s, n) & mask; o->index[i]; i = (i + 1) & mask) {
        size_t pos = o->index[i] - 1 - o->front;
        if (key_eq(o->keys[pos], s, n))
            return (long)pos;
    }
    return -1;
}

node *hc_obj_get(node *o, const hv *key)
{
    long i = hc_obj_find(o, hv_str_ptr(key), hv_str_len(key));
    return i < 0 ? NULL : o->items[i];
}

/* appends a key known to be absent; steals key and val */
void hc_obj_append(node *o, hv *key, node *val)
{
    hc_items_push(o, val);
    o->keys[o->n - 1] = key;
    if (o->index) {
        if ((o->n + 1) * 2 > o->icap)
            index_rebuild(o);
        else
            index_put(o, o->n - 1);
    }
}

/* puts a key known to be absent first; steals key and val. Amortized O(1): the arrays keep free
 * room before the first element. */
void hc_obj_prepend(node *o, hv *key, node *val)
{
    if (o->front == 0) {
        size_t room = o->n > 4 ? o->n : 4, total = room + o->cap;
        node **ib = xmalloc(total * sizeof *ib);
        hv **kb = xmalloc(total * sizeof *kb);
        if (o->n) {
            memcpy(ib + room, o->items, o->n * sizeof *ib);
            memcpy(kb + room, o->keys, o->n * sizeof *kb);
        }
        if (o->items)
            free(o->items - o->front);
        if (o->keys)
            free(o->keys - o->front);
        o->items = ib + room;
        o->keys = kb + room;
        o->front = room;
        if (o->index)
            index_rebuild(o);
    }
    o->front--;
    o->items--;
    o->keys--;
    o->n++;
    o->cap++;
    o->items[0] = val;
    o->keys[0] = key;
    if (val->unresolved)
        o->unresolved = true;
    if (o->index) {
        if ((o->n + 1) * 2 > o->icap)
            index_rebuild(o);
        else
            index_put(o, 0);
    }
}

/* Sets key to val as Ruby Hash#[]= does (an existing key keeps its position); steals both.
 * Only for objects still being built (one reference). */
void hc_obj_put(node *o, hv *key, node *val)
{
    long i = hc_obj_find(o, hv_str_ptr(key), hv_str_len(key));
    if (i < 0) {
        hc_obj_append(o, key, val);
        return;
    }
    hv_decref(key);
    bool was = o->items[i]->unresolved;
    hc_nfree(o->items[i]);
    o->items[i] = val;
    if (val->unresolved)
        o->unresolved = true;
    else if (was)
        hc_fix_status(o);
}

node *hc_obj_new_like(const node *o)
{
    node *r = hc_nnew(N_OBJ, o->line, o->col, o->org);
    r->ignores = o->ignores;
    return r;
}

/* a new node of the same container kind with the same children (shared) */
node *hc_shallow_copy(const node *v)
{
    node *r = hc_nnew(v->kind, v->line, v->col, v->org);
    r->ignores = v->ignores;
    for (size_t i = 0; i < v->n; i++) {
        hc_items_push(r, hc_nref(v->items[i]));
        if (v->kind == N_OBJ)
            r->keys[i] = hv_incref(v->keys[i]);
    }
    if (v->kind == N_OBJ || v->kind == N_LIST)
        hc_fix_status(r);
    else
        r->unresolved = true;
    return r;
}
