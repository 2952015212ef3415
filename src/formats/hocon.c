/* hocon.c - HOCON (.conf) data, read as Puppet's hocon_data reads it.
 *
 * Puppet 7's hocon_data reads the file into a string and calls Hocon.parse(content) from the ruby
 * hocon gem 1.3.1: ConfigFactory.parse_string, then resolve with the default options (a
 * substitution that is not found in the document falls back to an environment variable; an
 * unresolved required substitution is an error), then the root object unwrapped to a Ruby hash.
 * This file gives the same values and the same hash key order, in three stages:
 *
 *  1. a pull lexer: one pass over the bytes, no regexps, the gem's token kinds, including its
 *     whitespace rule: blanks between two "simple values" are unquoted text (so they end up in a
 *     value concatenation, `a b  c` is "a b  c"), any other blanks are ignored;
 *  2. a recursive-descent parser that builds "config nodes" as the gem's ConfigParser does:
 *     a repeated key goes through with_fallback, `a.b = 1` builds nested objects, `+=` becomes
 *     `${?path} [value]`, adjacent values are joined (concatenation), and whatever cannot be
 *     decided before substitutions are known stays a reference, a concatenation or a delayed
 *     merge stack;
 *  3. a resolver following the gem's algorithm: a lookup resolves the root only along the path
 *     looked up, a delayed merge resolves each of its layers with the merge replaced (in a copy of
 *     the root) by the layers below it - which is what lets `a = ${a} [2]` see the earlier `a` -
 *     and a cycle is detected by markers on the references being resolved.
 *
 * Key order is a consequence of the gem's merge (SimpleConfigObject#merged_with_object): an object
 * merged over an older one lists its own keys first, then the older object's other keys (Ruby
 * Set#union), while repeating a key inside one object literal keeps its first position (Ruby
 * Hash#[]=). So `s.a = 1`, `s.b = 2`, `s { c = 3 }` gives s = {c, b, a}.
 *
 * Nodes are reference counted and immutable once built; like the gem's values they are shared
 * between trees, and node identity matters where the gem compares with equal? (replacing a child
 * in its parent, cycle markers).
 */
#include "formats/hocon.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#undef R_OK /* access()'s flag; the name is a resolve result here */

extern char **environ;

#define MAX_PARSE_DEPTH 500    /* nested objects/arrays (and dotted key parts) in one document */
#define MAX_RESOLVE_DEPTH 1000 /* nested resolve calls (substitution chains) */
#define MAX_WORK 2000000L      /* bound on the total work, see work() */
#define MAX_INCLUDE_DEPTH 50   /* Parseable::MAX_INCLUDE_DEPTH */
#define MAX_OCTAL_DIGITS 100000

/* ------------------------------------------------------------------------------------------ */
/* errors                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    herr *err;
    const char *name; /* the data file, as given by the caller */
    bool failed;
    char **origins; /* names of included files (node origins point into this) */
    size_t norigins;
    int include_depth;
    long work; /* units of work done (values copied by merges, resolve calls) */
    bool merge_loaded; /* this parse's view of delayed_merge_loaded (see delay_merge) */
} hctx;

enum { E_CONFIG, E_NO_ORIGIN, E_RUBY };

/* Records the first error only. A Hocon::ConfigError becomes Puppet's LookupError message
 * "Unable to parse (NAME): ORIGIN: LINE: message", where ORIGIN is "String" for the document itself
 * (the gem parses a string) or an included file's name; `how` is E_CONFIG for that, E_NO_ORIGIN for
 * a ConfigError without origin (no "String: N:", the location is still recorded), E_RUBY for a Ruby
 * exception that is not a ConfigError (Puppet prints those as they are, without "Unable to parse"). */
static void failv(hctx *cx, int how, const char *org, int line, int col, const char *fmt, va_list ap)
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

static void fail(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
static void fail(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(cx, E_CONFIG, org, line, col, fmt, ap);
    va_end(ap);
}

static void fail_ruby(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
static void fail_ruby(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(cx, E_RUBY, org, line, col, fmt, ap);
    va_end(ap);
}

/* Counts work (resolve calls, merges, copied text); false (with an error) past MAX_WORK. The gem
 * does not memoize lookups, so chains of substitutions and self-referencing stacks (`a += x` many
 * times) take it exponential time: past this bound the gem would take hours, while real files use
 * a few percent of it. */
static bool work(hctx *cx, size_t units)
{
    cx->work += (long)(units < (size_t)MAX_WORK ? units : (size_t)MAX_WORK);
    if (cx->work <= MAX_WORK)
        return true;
    fail(cx, NULL, 0, 0, "too complex to resolve (more than %ld steps)", MAX_WORK);
    return false;
}

static void fail_bare(hctx *cx, const char *org, int line, int col, const char *fmt, ...) HIERA_PRINTF(5, 6);
static void fail_bare(hctx *cx, const char *org, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(cx, E_NO_ORIGIN, org, line, col, fmt, ap);
    va_end(ap);
}

/* Quirk: SimpleConfigList#resolve_substitutions turns any exception raised while resolving its
 * elements (ConfigError or not) into ConfigBugOrBrokenError "unexpected exception" */
static void rewrap_unexpected(hctx *cx)
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

enum {
    N_NULL,     /* ConfigNull */
    N_BOOL,     /* ConfigBoolean */
    N_NUM,      /* ConfigInt / ConfigDouble: value plus the original text */
    N_STR,      /* ConfigString (Quoted or Unquoted) */
    N_OBJ,      /* SimpleConfigObject */
    N_LIST,     /* SimpleConfigList */
    N_REF,      /* ConfigReference: ${path} or ${?path} */
    N_CONCAT,   /* ConfigConcatenation: pieces waiting for substitutions */
    N_MERGE,    /* ConfigDelayedMerge: stack of values, newest first */
    N_MERGEOBJ, /* ConfigDelayedMergeObject: the same, known to become an object */
};

typedef struct node node;
struct node {
    unsigned char kind;
    bool unresolved; /* resolve status: contains references somewhere */
    bool ignores;    /* N_OBJ: ignores fallbacks (it was merged over a non-object) */
    bool quoted;     /* N_STR: Quoted (or joined), as opposed to one unquoted token */
    bool optional;   /* N_REF: ${?...} */
    int refs;
    int line, col;
    const char *org; /* origin: NULL for the document, else an included file */
    hv *val;         /* primitives: the data value */
    hv *text;        /* N_NUM: the original text, used when concatenated */
    size_t n, cap;
    size_t front;    /* N_OBJ: free slots before items/keys in their allocations (obj_prepend) */
    node **items;    /* N_OBJ values, N_LIST elements, N_CONCAT pieces, N_MERGE* stack */
    hv **keys;       /* N_OBJ keys, N_REF path elements (hv strings) */
    uint32_t *index; /* N_OBJ: open-addressing index (front + position + 1), for larger objects */
    size_t icap;
    size_t prefix; /* N_REF: length of the include prefix the path was relativized with */
    int marked;    /* N_REF: being resolved (a cycle marker) */
    signed char badpath; /* N_REF: its path cannot be written in messages (-1: not known yet) */
};

static node *nnew(int kind, int line, int col, const char *org)
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

static node *nref(node *n)
{
    if (n)
        n->refs++;
    return n;
}

static void nfree(node *n)
{
    if (!n || --n->refs > 0)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (n->items)
            nfree(n->items[i]);
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

static bool is_unmergeable(const node *v)
{
    return v->kind == N_REF || v->kind == N_CONCAT || v->kind == N_MERGE || v->kind == N_MERGEOBJ;
}
static bool is_objectish(const node *v) { return v->kind == N_OBJ || v->kind == N_MERGEOBJ; }
static bool is_container(const node *v)
{
    return v->kind == N_OBJ || v->kind == N_MERGEOBJ || v->kind == N_LIST || v->kind == N_CONCAT ||
           v->kind == N_MERGE;
}

/* Appends a child reference (stolen); objects use obj_append. */
static void items_push(node *n, node *child)
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

static node *nprim(int kind, hv *val, int line, int col, const char *org)
{
    node *n = nnew(kind, line, col, org);
    n->val = val;
    return n;
}

static node *nstr(hv *s, bool quoted, int line, int col, const char *org)
{
    node *n = nprim(N_STR, s, line, col, org);
    n->quoted = quoted;
    return n;
}

/* recomputes the resolve status of an object or list from its children */
static void fix_status(node *n)
{
    n->unresolved = false;
    for (size_t i = 0; i < n->n; i++)
        if (n->items[i]->unresolved)
            n->unresolved = true;
}

/* ---- objects: insertion-ordered keys with an index for the larger ones ---- */

static uint64_t key_hash(const char *s, size_t n)
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
    size_t i = (size_t)key_hash(hv_str_ptr(o->keys[pos]), hv_str_len(o->keys[pos])) & mask;
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

static long obj_find(node *o, const char *s, size_t n)
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
    for (size_t i = (size_t)key_hash(s, n) & mask; o->index[i]; i = (i + 1) & mask) {
        size_t pos = o->index[i] - 1 - o->front;
        if (key_eq(o->keys[pos], s, n))
            return (long)pos;
    }
    return -1;
}

static node *obj_get(node *o, const hv *key)
{
    long i = obj_find(o, hv_str_ptr(key), hv_str_len(key));
    return i < 0 ? NULL : o->items[i];
}

/* appends a key known to be absent; steals key and val */
static void obj_append(node *o, hv *key, node *val)
{
    items_push(o, val);
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
static void obj_prepend(node *o, hv *key, node *val)
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
static void obj_put(node *o, hv *key, node *val)
{
    long i = obj_find(o, hv_str_ptr(key), hv_str_len(key));
    if (i < 0) {
        obj_append(o, key, val);
        return;
    }
    hv_decref(key);
    bool was = o->items[i]->unresolved;
    nfree(o->items[i]);
    o->items[i] = val;
    if (val->unresolved)
        o->unresolved = true;
    else if (was)
        fix_status(o);
}

static node *obj_new_like(const node *o)
{
    node *r = nnew(N_OBJ, o->line, o->col, o->org);
    r->ignores = o->ignores;
    return r;
}

/* a new node of the same container kind with the same children (shared) */
static node *shallow_copy(const node *v)
{
    node *r = nnew(v->kind, v->line, v->col, v->org);
    r->ignores = v->ignores;
    for (size_t i = 0; i < v->n; i++) {
        items_push(r, nref(v->items[i]));
        if (v->kind == N_OBJ)
            r->keys[i] = hv_incref(v->keys[i]);
    }
    if (v->kind == N_OBJ || v->kind == N_LIST)
        fix_status(r);
    else
        r->unresolved = true;
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* merging (with_fallback), as the gem's AbstractConfigValue and its subclasses do it           */
/* ------------------------------------------------------------------------------------------ */

static bool ignores_fallbacks(const node *v)
{
    switch (v->kind) {
    case N_OBJ: return v->ignores;
    case N_LIST: return !v->unresolved;
    case N_REF:
    case N_CONCAT: return false;
    case N_MERGE:
    case N_MERGEOBJ: return ignores_fallbacks(v->items[v->n - 1]);
    default: return true; /* resolved primitives */
    }
}

/* the values a delayed merge would stack for v (ConfigDelayedMerge#unmerged_values) */
static void push_unmerged(node *m, node *v)
{
    if (v->kind == N_MERGE || v->kind == N_MERGEOBJ)
        for (size_t i = 0; i < v->n; i++)
            items_push(m, nref(v->items[i]));
    else
        items_push(m, nref(v));
}

/* Quirk of the gem (confirmed with `puppet lookup`): AbstractConfigObject#construct_delayed_merge
 * names Hocon::Impl::ConfigDelayedMergeObject without requiring its file, which is only loaded by
 * the first ConfigDelayedMerge (AbstractConfigValue#construct_delayed_merge requires it). Until a
 * process has made one, making a delayed merge object raises NameError, which Puppet reports as
 * "Error: Could not run: uninitialized constant ...". This flag is that process-wide state. */
static bool delayed_merge_loaded;

/* construct_delayed_merge: an object (or delayed merge object) makes a ConfigDelayedMergeObject;
 * NULL for the quirk above (see with_fallback). A parse works on its own copy of the flag
 * (hctx.merge_loaded), kept only if the gem would have got as far (see parse_document). */
static node *delay_merge(hctx *cx, node *self, node *other, bool flatten_other)
{
    if (!is_objectish(self))
        cx->merge_loaded = true;
    else if (!cx->merge_loaded)
        return NULL;
    node *m = nnew(is_objectish(self) ? N_MERGEOBJ : N_MERGE, self->line, self->col, self->org);
    push_unmerged(m, self);
    if (flatten_other)
        push_unmerged(m, other);
    else
        items_push(m, nref(other));
    m->unresolved = true;
    return m;
}

static node *with_fallback(hctx *cx, node *self, node *other);

/* Ruby's `first == kept` as SimpleConfigObject#merged_with_object evaluates it (to tell whether
 * the merge changed anything) for a value and what merging changed it into: 1 equal, 0 not, -1
 * when Ruby raises. Quirk: SimpleConfigObject#== compares key sets, and asking a delayed merge
 * object for its keys raises ConfigNotResolvedError; so an object field merged over a
 * substitution (e.g. `a.x = ${y}` then `a { x { p = 1 } }`) fails to parse. Other pairs that
 * arise here are identical, or of different classes (not equal, no raise). */
static int rb_eq(const node *a, const node *b)
{
    if (a == b)
        return 1;
    if (a->kind != N_OBJ)
        return 0;
    if (b->kind == N_MERGEOBJ)
        return -1;
    if (b->kind != N_OBJ || a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (obj_find((node *)b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i])) < 0)
            return 0;
    for (size_t i = 0; i < a->n; i++) {
        int r = rb_eq(a->items[i], obj_get((node *)b, a->keys[i]));
        if (r <= 0)
            return r;
    }
    return 1;
}

/* SimpleConfigObject#merged_with_object: own keys first, then the fallback's other keys.
 * Quirk: when every merged field is == (Ruby value equality) to the original, the gem keeps its
 * own fields, not the merged ones (which may differ in ignoring fallbacks). */
static node *merge_objects(hctx *cx, node *a, node *b)
{
    if (!work(cx, 1 + (a->n + b->n) / 16))
        return NULL;
    node *o = nnew(N_OBJ, a->line, a->col, a->org);
    bool changed = false;
    for (size_t i = 0; i < a->n; i++) {
        node *second = obj_get(b, a->keys[i]);
        node *kept = second ? with_fallback(cx, a->items[i], second) : nref(a->items[i]);
        int eq = kept ? rb_eq(a->items[i], kept) : 1;
        if (!kept || eq < 0) {
            if (kept)
                fail(cx, NULL, 0, 0,
                     "need to Config#resolve() before using this object, see the API docs for Config#resolve()");
            nfree(kept);
            nfree(o);
            return NULL;
        }
        if (eq == 0)
            changed = true;
        obj_append(o, hv_incref(a->keys[i]), kept);
    }
    for (size_t i = 0; i < b->n; i++) {
        if (obj_find(a, hv_str_ptr(b->keys[i]), hv_str_len(b->keys[i])) >= 0)
            continue;
        obj_append(o, hv_incref(b->keys[i]), nref(b->items[i]));
        changed = true;
    }
    o->ignores = b->ignores;
    fix_status(o);
    if (!changed) {
        bool ignores = o->ignores, unresolved = o->unresolved;
        nfree(o);
        if (ignores == a->ignores && unresolved == a->unresolved)
            return nref(a);
        o = shallow_copy(a); /* new_copy_with_status */
        o->ignores = ignores;
        o->unresolved = unresolved;
    }
    return o;
}

/* moves b's entry p first, its value replaced by val (stolen), keeping the index right */
static void obj_move_first(node *b, size_t p, node *val)
{
    hv *key = b->keys[p];
    size_t *slots = NULL;
    if (b->index && p > 0) { /* the index slots of the entries that move, found before moving them */
        size_t mask = b->icap - 1;
        slots = xmalloc((p + 1) * sizeof *slots);
        for (size_t j = 0; j <= p; j++) {
            size_t i = (size_t)key_hash(hv_str_ptr(b->keys[j]), hv_str_len(b->keys[j])) & mask;
            while (b->index[i] != b->front + j + 1)
                i = (i + 1) & mask;
            slots[j] = i;
        }
    }
    nfree(b->items[p]);
    memmove(b->items + 1, b->items, p * sizeof *b->items);
    memmove(b->keys + 1, b->keys, p * sizeof *b->keys);
    b->items[0] = val;
    b->keys[0] = key;
    if (slots) {
        for (size_t j = 0; j < p; j++)
            b->index[slots[j]] = (uint32_t)(b->front + j + 2);
        b->index[slots[p]] = (uint32_t)(b->front + 1);
        free(slots);
    }
    if (val->unresolved)
        b->unresolved = true;
}

/* merge_objects(a, b) for a fallback b that the caller holds the only reference to and drops
 * afterwards (a field being set again while parsing): b itself becomes the result, a's fields
 * moved first, in time proportional to a, not b. Copying b would make many dotted keys under one
 * parent (`s.k1 = 1`, `s.k2 = 2`, ... each merges a one-key object over the growing s) quadratic.
 * Same result as merge_objects. */
static node *merge_objects_into(hctx *cx, node *a, node *b)
{
    if (!work(cx, 1 + a->n / 16))
        return NULL;
    /* the merged fields, in a's order (as the gem computes them, errors included) */
    node **kept = xcalloc(a->n, sizeof *kept);
    bool replaced_unresolved = false, kept_unresolved = false, changed = false;
    size_t common = 0;
    for (size_t i = 0; i < a->n; i++) {
        long p = obj_find(b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i]));
        node *first = a->items[i], *second = p >= 0 ? b->items[p] : NULL, *k;
        if (!second) {
            k = nref(first);
        } else {
            common++;
            replaced_unresolved |= second->unresolved;
            k = second->refs == 1 && first->kind == N_OBJ && second->kind == N_OBJ && !first->ignores
                    ? merge_objects_into(cx, first, second) /* second is b's alone: merged in place */
                    : with_fallback(cx, first, second);
            int eq = k ? rb_eq(first, k) : 1;
            if (!k || eq < 0) {
                if (k)
                    fail(cx, NULL, 0, 0,
                         "need to Config#resolve() before using this object, see the API docs for "
                         "Config#resolve()");
                nfree(k);
                for (size_t j = 0; j < i; j++)
                    nfree(kept[j]);
                free(kept);
                return NULL;
            }
            changed |= eq == 0;
        }
        kept_unresolved |= k->unresolved;
        kept[i] = k;
    }
    if (!changed && common == b->n) { /* as merge_objects: the gem keeps a's own fields */
        for (size_t i = 0; i < a->n; i++)
            nfree(kept[i]);
        free(kept);
        if (b->ignores == a->ignores && kept_unresolved == a->unresolved)
            return nref(a);
        node *o = shallow_copy(a);
        o->ignores = b->ignores;
        o->unresolved = kept_unresolved;
        return o;
    }
    /* a's keys first, in a's order, then b's other keys */
    for (size_t i = a->n; i-- > 0;) {
        long p = obj_find(b, hv_str_ptr(a->keys[i]), hv_str_len(a->keys[i]));
        if (p < 0)
            obj_prepend(b, hv_incref(a->keys[i]), kept[i]);
        else
            obj_move_first(b, (size_t)p, kept[i]);
    }
    free(kept);
    if (!kept_unresolved && replaced_unresolved)
        fix_status(b);
    return nref(b);
}

/* with_fallback for a fallback the caller owns alone and drops afterwards (see above) */
static node *with_fallback_into(hctx *cx, node *self, node *other)
{
    if (other->refs == 1 && self->kind == N_OBJ && other->kind == N_OBJ && !self->ignores)
        return merge_objects_into(cx, self, other);
    return with_fallback(cx, self, other);
}

/* AbstractConfigValue#with_fallback and the merged_with_* methods of each class; NULL after an
 * error (the quirks of delay_merge and rb_eq) */
static node *with_fallback(hctx *cx, node *self, node *other)
{
    node *r;
    if (ignores_fallbacks(self))
        return nref(self);
    if (!work(cx, 1 + (self->kind == N_MERGE || self->kind == N_MERGEOBJ ? self->n : 0) +
                      (other->kind == N_MERGE || other->kind == N_MERGEOBJ ? other->n : 0)))
        return NULL;
    if (is_unmergeable(other))
        r = delay_merge(cx, self, other, true);
    else if (other->kind == N_OBJ && self->kind == N_OBJ)
        return merge_objects(cx, self, other);
    else if (other->kind != N_OBJ && self->kind == N_OBJ && !self->unresolved) {
        /* a resolved object over a primitive or a list: the object wins, and ignores what is below */
        r = shallow_copy(self);
        r->ignores = true;
        return r;
    } else
        r = delay_merge(cx, self, other, false);
    if (!r)
        fail_ruby(cx, self->org, self->line, self->col, "uninitialized constant Hocon::Impl::ConfigDelayedMergeObject");
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* value concatenation (ConfigConcatenation.concatenate)                                       */
/* ------------------------------------------------------------------------------------------ */

static size_t utf8_char(const unsigned char *s, size_t n, long *cp);
static bool is_cntrl_cp(long c);

/* Quirk: the gem writes strings into its messages with ConfigImplUtil.render_json_string, which
 * formats a control character other than \b \f \n \r \t with "\\u%04x" % char - an
 * ArgumentError (invalid value for Integer()) - and whose regexp test raises ArgumentError on
 * invalid UTF-8. True (with that Ruby error recorded) when writing s would raise. */
static bool text_renders_badly(const char *s, size_t n, long *bad)
{
    for (size_t i = 0; i < n;) {
        long cp;
        size_t l = utf8_char((const unsigned char *)s + i, n - i, &cp);
        if (cp < 0 || (is_cntrl_cp(cp) && cp != '\b' && cp != '\f' && cp != '\n' && cp != '\r' && cp != '\t')) {
            *bad = cp;
            return true;
        }
        i += l;
    }
    return false;
}

static bool text_render_raises(hctx *cx, const node *at, const char *s, size_t n)
{
    long cp;
    if (!text_renders_badly(s, n, &cp))
        return false;
    if (cp < 0)
        fail_ruby(cx, at->org, at->line, at->col, "invalid byte sequence in UTF-8");
    else
        fail_ruby(cx, at->org, at->line, at->col, "invalid value for Integer(): \"\\u%04lx\"", cp);
    return true;
}

/* whether a reference's path cannot be written in messages (computed once) */
static bool ref_badpath(node *r)
{
    if (r->badpath < 0) {
        long cp;
        r->badpath = 0;
        for (size_t i = 0; i < r->n && !r->badpath; i++)
            r->badpath = text_renders_badly(hv_str_ptr(r->keys[i]), hv_str_len(r->keys[i]), &cp);
    }
    return r->badpath;
}

/* the same for a whole value as the gem's to_s renders it (strings, keys, substitution paths) */
static bool value_render_raises(hctx *cx, const node *v)
{
    if (v->kind == N_STR)
        return text_render_raises(cx, v, hv_str_ptr(v->val), hv_str_len(v->val));
    if (v->kind == N_REF || v->kind == N_OBJ)
        for (size_t i = 0; i < v->n; i++)
            if (text_render_raises(cx, v, hv_str_ptr(v->keys[i]), hv_str_len(v->keys[i])))
                return true;
    if (v->kind != N_REF && v->items)
        for (size_t i = 0; i < v->n; i++)
            if (value_render_raises(cx, v->items[i]))
                return true;
    return false;
}

/* transform_to_string: the text a primitive contributes to a string concatenation */
static bool as_text(const node *v, const char **s, size_t *n)
{
    switch (v->kind) {
    case N_STR: *s = hv_str_ptr(v->val); *n = hv_str_len(v->val); return true;
    case N_NUM: *s = hv_str_ptr(v->text); *n = hv_str_len(v->text); return true;
    case N_BOOL:
        *s = hv_bool_val(v->val) ? "true" : "false";
        *n = strlen(*s);
        return true;
    case N_NULL: *s = "null"; *n = 4; return true;
    default: return false;
    }
}

/* a short description of a node for messages, after the gem's to_s */
static void describe(sbuf *b, const node *v)
{
    const char *s;
    size_t n;
    switch (v->kind) {
    case N_STR: sb_adds(b, v->quoted ? "Quoted(\"" : "Unquoted(\""); break;
    case N_NUM: sb_adds(b, hv_is(v->val, HV_FLOAT) ? "ConfigDouble(" : "ConfigInt("); break;
    case N_BOOL: sb_adds(b, "ConfigBoolean("); break;
    case N_NULL: sb_adds(b, "ConfigNull("); break;
    case N_OBJ: sb_adds(b, "SimpleConfigObject(...)"); return;
    case N_LIST: sb_adds(b, "SimpleConfigList(...)"); return;
    case N_MERGEOBJ: sb_adds(b, "ConfigDelayedMergeObject(...)"); return;
    default: sb_adds(b, "unresolved value"); return;
    }
    as_text(v, &s, &n);
    sb_addn(b, s, n);
    sb_adds(b, v->kind == N_STR ? "\")" : ")");
}

typedef struct {
    node **v;
    size_t n, cap;
} nvec;

static void nv_push(nvec *a, node *v)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 8;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = v;
}

static void nv_free(nvec *a)
{
    for (size_t i = 0; i < a->n; i++)
        nfree(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* Ruby Integer(key, 10) >= 0: blanks around, a sign, digits with single underscores between */
static bool numeric_key(const hv *key)
{
    const char *s = hv_str_ptr(key), *e = s + hv_str_len(key);
    while (s < e && (*s == ' ' || (*s >= 9 && *s <= 13)))
        s++;
    while (e > s && (e[-1] == ' ' || (e[-1] >= 9 && e[-1] <= 13)))
        e--;
    bool neg = false, digit = false, nonzero = false;
    if (s < e && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    for (; s < e; s++) {
        if (*s == '_' && digit && s + 1 < e && isdigit((unsigned char)s[1]))
            continue;
        if (!isdigit((unsigned char)*s))
            return false;
        digit = true;
        nonzero |= *s != '0';
    }
    return digit && !(neg && nonzero);
}

/* ConfigConcatenation.join tries DefaultTransformer.transform(object, LIST) before joining an
 * object and a list. In the gem 1.3.1 that raises NameError when the object has a numeric key
 * (the transformer names SimpleConfigList without loading it), ConfigNotResolvedError for a
 * delayed merge object; otherwise the object is left as it is and cannot be joined. */
static int join_object_list(hctx *cx, node *left, node *right)
{
    node *o = is_objectish(left) ? left : right;
    if (o->kind == N_MERGEOBJ) {
        fail(cx, NULL, 0, 0,
             "need to Config#resolve() before using this object, see the API docs for Config#resolve()");
        return -1;
    }
    for (size_t i = 0; i < o->n; i++) {
        if (numeric_key(o->keys[i])) {
            fail_ruby(cx, o->org, o->line, o->col,
                      "uninitialized constant Hocon::Impl::DefaultTransformer::SimpleConfigList");
            return -1;
        }
    }
    if (value_render_raises(cx, left) || value_render_raises(cx, right))
        return -1;
    fail(cx, left->org, left->line, left->col,
         "Cannot concatenate object or list with a non-object-or-list, %s and %s are not compatible",
         left->kind == N_LIST ? "SimpleConfigList(...)" : "SimpleConfigObject(...)",
         right->kind == N_LIST ? "SimpleConfigList(...)" : "SimpleConfigObject(...)");
    return -1;
}

/* ConfigConcatenation.join: adds `right` (borrowed) to the builder, merged with its last value
 * when they can be joined. 0, or -1 with an error. */
static int concat_join(hctx *cx, nvec *b, node *right)
{
    node *left = b->v[b->n - 1], *joined = NULL;
    if ((is_objectish(left) && right->kind == N_LIST) || (left->kind == N_LIST && is_objectish(right)))
        return join_object_list(cx, left, right);
    if (is_objectish(left) && is_objectish(right)) {
        if (!(joined = with_fallback(cx, right, left)))
            return -1;
    } else if (left->kind == N_LIST && right->kind == N_LIST) {
        if (!work(cx, left->n + right->n))
            return -1;
        joined = nnew(N_LIST, left->line, left->col, left->org);
        for (size_t i = 0; i < left->n; i++)
            items_push(joined, nref(left->items[i]));
        for (size_t i = 0; i < right->n; i++)
            items_push(joined, nref(right->items[i]));
    } else if ((left->kind == N_LIST || is_objectish(left)) && right->kind == N_STR && !right->quoted) {
        /* Quirk: any unquoted string after a list or object is dropped (is_ignored_whitespace
         * only checks "unquoted"), so `[1] foo` is [1]. */
        joined = nref(left);
    } else if (is_unmergeable(left) || is_unmergeable(right)) {
        joined = NULL;
    } else {
        const char *s1, *s2;
        size_t n1, n2;
        if (!as_text(left, &s1, &n1) || !as_text(right, &s2, &n2)) {
            if (value_render_raises(cx, left) || value_render_raises(cx, right))
                return -1;
            sbuf l = {0}, r = {0};
            describe(&l, left);
            describe(&r, right);
            fail(cx, left->org, left->line, left->col,
                 "Cannot concatenate object or list with a non-object-or-list, %s and %s are not compatible",
                 sb_str(&l), sb_str(&r));
            sb_free(&l);
            sb_free(&r);
            return -1;
        }
        if (!work(cx, (n1 + n2) / 8))
            return -1;
        char *s = xmalloc(n1 + n2 + 1);
        memcpy(s, s1, n1);
        memcpy(s + n1, s2, n2);
        s[n1 + n2] = 0;
        joined = nstr(hv_str_take(s, n1 + n2), true, left->line, left->col, left->org);
    }
    if (!joined) {
        nv_push(b, nref(right));
    } else {
        nfree(b->v[b->n - 1]);
        b->v[b->n - 1] = joined;
    }
    return 0;
}

/* ConfigConcatenation.consolidate: flattens nested concatenations and joins what can be joined.
 * Pieces are borrowed; the result vector holds new references. */
static int consolidate(hctx *cx, node **pieces, size_t n, nvec *out)
{
    for (size_t i = 0; i < n; i++) {
        node *p = pieces[i];
        size_t m = p->kind == N_CONCAT ? p->n : 1;
        for (size_t j = 0; j < m; j++) {
            node *q = p->kind == N_CONCAT ? p->items[j] : p;
            if (out->n == 0)
                nv_push(out, nref(q));
            else if (concat_join(cx, out, q) < 0)
                return -1;
        }
    }
    return 0;
}

/* ConfigConcatenation.concatenate: *out is NULL when there were no pieces */
static int concatenate(hctx *cx, node **pieces, size_t n, node **out)
{
    nvec c = {0};
    *out = NULL;
    if (consolidate(cx, pieces, n, &c) < 0) {
        nv_free(&c);
        return -1;
    }
    if (c.n == 1) {
        *out = c.v[0];
        c.n = 0;
    } else if (c.n > 1) {
        node *r = nnew(N_CONCAT, c.v[0]->line, c.v[0]->col, c.v[0]->org);
        for (size_t i = 0; i < c.n; i++)
            items_push(r, c.v[i]);
        c.n = 0;
        *out = r;
    }
    nv_free(&c);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* characters                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Decodes the UTF-8 character at s[0..n): its length, with *cp = -1 for an invalid sequence
 * (then the length is 1). Ruby reads the content as UTF-8 and its regexp tests raise on invalid
 * bytes, so the lexer treats them as errors outside comments and triple-quoted strings. */
static size_t utf8_char(const unsigned char *s, size_t n, long *cp)
{
    unsigned c = s[0];
    size_t len;
    long v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = -1;
        return 1;
    }
    if (n < len) {
        *cp = -1;
        return 1;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return len;
}

/* Ruby's /[[:space:]]/ on a UTF-8 character (ConfigImplUtil.whitespace?) */
static bool is_space_cp(long c)
{
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

/* Ruby's /[[:cntrl:]]/ */
static bool is_cntrl_cp(long c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

/* Tokenizer::NOT_IN_UNQUOTED_TEXT */
static bool is_reserved(int c) { return c && strchr("$\"{}[]:=,+#`^?!@*&\\", c) != NULL; }

static void utf8_put(sbuf *b, long cp)
{
    char u[4];
    if (cp < 0x80) {
        sb_addc(b, (char)cp);
        return;
    }
    if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        sb_addn(b, u, 4);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* numbers, as Ruby's Integer()/Float() accept them and ConfigNumber.new_number types them      */
/* ------------------------------------------------------------------------------------------ */

/* decimal text of an octal digit string (Ruby Integer("0...") is octal) */
static char *octal_to_decimal(const char *d, size_t n)
{
    size_t cap = n / 9 + 2, nl = 1;
    uint32_t *limb = xcalloc(cap, sizeof *limb); /* base 1e9, little-endian */
    for (size_t i = 0; i < n; i++) {
        uint64_t carry = (uint64_t)(d[i] - '0');
        for (size_t j = 0; j < nl; j++) {
            uint64_t x = (uint64_t)limb[j] * 8 + carry;
            limb[j] = (uint32_t)(x % 1000000000u);
            carry = x / 1000000000u;
        }
        if (carry)
            limb[nl++] = (uint32_t)carry;
    }
    sbuf b = {0};
    sb_addf(&b, "%u", limb[nl - 1]);
    for (size_t j = nl - 1; j-- > 0;)
        sb_addf(&b, "%09u", limb[j]);
    free(limb);
    return sb_take(&b);
}

/* value of decimal digits with an optional minus, as an int or a bigint */
static hv *int_from_decimal(bool neg, const char *d, size_t n)
{
    while (n > 1 && d[0] == '0')
        d++, n--;
    uint64_t v = 0;
    bool big = n > 19;
    for (size_t i = 0; i < n && !big; i++) {
        uint64_t digit = (uint64_t)(d[i] - '0');
        if (v > (UINT64_MAX - digit) / 10)
            big = true;
        else
            v = v * 10 + digit;
    }
    if (!big && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX)) {
        if (neg)
            return hv_int(v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v);
        return hv_int((int64_t)v);
    }
    sbuf b = {0};
    if (neg)
        sb_addc(&b, '-');
    sb_addn(&b, d, n);
    hv *r = hv_bigint(b.s, b.len);
    sb_free(&b);
    return r;
}

/* Ruby Integer(s) for s made of digits, '+' and '-' (what the lexer collects without '.'/e/E):
 * an optional minus, then decimal digits, or octal ones after a leading 0. NULL if invalid. */
static hv *ruby_integer(const char *s, size_t n, const char **why)
{
    bool neg = n > 0 && s[0] == '-';
    const char *d = s + (neg ? 1 : 0);
    size_t m = n - (neg ? 1 : 0);
    *why = NULL;
    if (m == 0)
        return NULL;
    for (size_t i = 0; i < m; i++)
        if (d[i] < '0' || d[i] > '9')
            return NULL;
    if (m > 1 && d[0] == '0') {
        for (size_t i = 0; i < m; i++)
            if (d[i] > '7')
                return NULL;
        while (m > 1 && d[0] == '0')
            d++, m--;
        if (m > MAX_OCTAL_DIGITS) {
            *why = "octal number too long";
            return NULL;
        }
        char *dec = octal_to_decimal(d, m);
        hv *r = int_from_decimal(neg, dec, strlen(dec));
        free(dec);
        return r;
    }
    return int_from_decimal(neg, d, m);
}

/* Ruby Float(s) syntax for what the lexer collects: -?(digits(.digits)?|.digits)([eE][+-]?digits)? */
static bool ruby_float_syntax(const char *s, size_t n)
{
    size_t i = 0, a, b = 0;
    if (i < n && s[i] == '-')
        i++;
    for (a = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        a++;
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            b++;
        if (b == 0)
            return false;
    }
    if (a == 0 && b == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            e++;
        if (e == 0)
            return false;
    }
    return i == n;
}

/* ConfigNumber.new_number for a Float: a float equal to its to_i becomes an Integer (so 5.0 and
 * 1e3 are integers, as in the gem); *why is set for Infinity (Ruby raises FloatDomainError). */
static hv *number_from_double(double d, const char **why)
{
    *why = NULL;
    if (!isfinite(d)) {
        *why = "Infinity"; /* FloatDomainError */
        return NULL;
    }
    if (d != trunc(d))
        return hv_float(d);
    if (fabs(d) < 9.0e18)
        return hv_int((int64_t)d);
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", d);
    return hv_bigint(buf, strlen(buf));
}

/* ------------------------------------------------------------------------------------------ */
/* lexer                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    T_EOF,
    T_ERROR, /* a problem; the error is already recorded */
    T_COMMA,
    T_COLON,
    T_EQUALS,
    T_PLUSEQ,
    T_LBRACE,
    T_RBRACE,
    T_LBRACKET,
    T_RBRACKET,
    T_NEWLINE,
    T_WS,  /* ignored whitespace */
    T_UNQ, /* unquoted text (also whitespace between two simple values) */
    T_STRING,
    T_NUMBER,
    T_TRUE,
    T_FALSE,
    T_NULL,
    T_COMMENT,
    T_SUBST,
} ttype;

typedef struct {
    ttype type;
    int line, col;
    bool wsonly; /* T_UNQ made of the blanks between two simple values */
    hv *str;     /* T_UNQ text, T_STRING value, T_NUMBER original text */
    hv *num;       /* T_NUMBER value */
    node *ref;     /* T_SUBST */
    char *problem; /* T_ERROR: the tokenizer's problem; T_SUBST: why its path is invalid */
    bool pruby;    /* the problem is a Ruby exception in the gem, not a ConfigError */
} token;

static void tok_free(token *t)
{
    hv_decref(t->str);
    hv_decref(t->num);
    nfree(t->ref);
    free(t->problem);
    t->str = t->num = NULL;
    t->ref = NULL;
    t->problem = NULL;
}

/* Tokenizer::WhitespaceSaver: the blanks right before the next token */
typedef struct {
    size_t start, end;
    int line, col;
    bool last_simple;
} wsaver;

typedef struct {
    hctx *cx;
    const char *org;
    const unsigned char *s;
    size_t len, pos;
    int line, col;
    int subst_depth;
    wsaver ws;
    char *problem; /* the problem found while lexing the current token */
    int pline, pcol;
    bool pruby;
    token q[2]; /* lexed tokens not handed out yet (a whitespace token and the next one) */
    int nq;
    token back[8]; /* the parser's put-back stack */
    int nback;
} lexer;

static const char *tok_name(ttype t)
{
    switch (t) {
    case T_EOF: return "end of file";
    case T_COMMA: return "','";
    case T_COLON: return "':'";
    case T_EQUALS: return "'='";
    case T_PLUSEQ: return "'+='";
    case T_LBRACE: return "'{'";
    case T_RBRACE: return "'}'";
    case T_LBRACKET: return "'['";
    case T_RBRACKET: return "']'";
    case T_NEWLINE: return "newline";
    case T_WS: return "whitespace";
    case T_COMMENT: return "comment";
    case T_SUBST: return "substitution";
    case T_TRUE: return "'true'";
    case T_FALSE: return "'false'";
    case T_NULL: return "'null'";
    default: return "token";
    }
}

/* a token as the gem's messages show it */
static void tok_describe(sbuf *b, const token *t)
{
    if (t->type == T_UNQ || t->type == T_STRING || t->type == T_NUMBER) {
        sb_addc(b, '\'');
        sb_addn(b, hv_str_ptr(t->str), hv_str_len(t->str));
        sb_addc(b, '\'');
    } else {
        sb_adds(b, tok_name(t->type));
    }
}

/* A tokenizer problem: like the gem, the token becomes a problem token, which is an error only
 * when the parser gets to it (the gem's tokenizer reads one token ahead of its parser). Errors
 * that are Ruby exceptions in the gem (fail_ruby) stop everything at once instead. */
static void lx_fail(lexer *L, int line, int col, const char *fmt, ...) HIERA_PRINTF(4, 5);
static void lx_fail(lexer *L, int line, int col, const char *fmt, ...)
{
    if (L->problem)
        return;
    va_list ap;
    sbuf b = {0};
    va_start(ap, fmt);
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    L->problem = sb_take(&b);
    L->pline = line;
    L->pcol = col;
    L->pruby = false;
}

static void lx_advance(lexer *L, size_t n)
{
    for (size_t i = 0; i < n && L->pos < L->len; i++) {
        unsigned char c = L->s[L->pos++];
        if (c == '\n') {
            L->line++;
            L->col = 1;
        } else if ((c & 0xC0) != 0x80) {
            L->col++;
        }
    }
}

static int lx_peek(const lexer *L, size_t off)
{
    return L->pos + off < L->len ? L->s[L->pos + off] : -1;
}

static bool comment_start(const lexer *L)
{
    int c = lx_peek(L, 0);
    return c == '#' || (c == '/' && lx_peek(L, 1) == '/');
}

static void set_error(lexer *L, token *t)
{
    t->type = T_ERROR;
    if (L->problem) {
        free(t->problem);
        t->problem = L->problem;
        t->line = L->pline;
        t->col = L->pcol;
        t->pruby = L->pruby;
        L->problem = NULL;
    }
}

/* a character for messages, as Tokenizer.as_string names it */
static void char_name(sbuf *b, const lexer *L)
{
    int c = lx_peek(L, 0);
    if (c < 0)
        sb_adds(b, "end of file");
    else if (c == '\n')
        sb_adds(b, "newline");
    else if (c == '\t')
        sb_adds(b, "tab");
    else if (c < 0x20 || c == 0x7F)
        sb_addf(b, "control character 0x%x", c);
    else {
        long cp;
        size_t n = utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        sb_addn(b, (const char *)L->s + L->pos, n);
    }
}

/* consumes the character that made a problem, as the gem's tokenizer has read it */
static void skip_char(lexer *L)
{
    long cp;
    if (L->pos < L->len)
        lx_advance(L, utf8_char(L->s + L->pos, L->len - L->pos, &cp));
}

/* skips blanks other than newlines, remembering them in the saver; false on invalid UTF-8 */
static bool skip_blanks(lexer *L, wsaver *sv)
{
    size_t start = L->pos;
    int line = L->line, col = L->col;
    while (L->pos < L->len) {
        unsigned char c = L->s[L->pos];
        if (c == '\n')
            break;
        long cp;
        size_t n = c < 0x80 ? (cp = c, 1) : utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            return false;
        }
        if (!is_space_cp(cp))
            break;
        lx_advance(L, n);
    }
    if (L->pos > start) {
        /* the saver is emptied after every token, so these are the blanks before this one */
        sv->start = start;
        sv->end = L->pos;
        sv->line = line;
        sv->col = col;
    }
    return true;
}

static void lex_token(lexer *L, wsaver *sv, token *t);

static void lex_comment(lexer *L, token *t)
{
    while (L->pos < L->len && L->s[L->pos] != '\n')
        lx_advance(L, 1);
    t->type = T_COMMENT;
}

/* a \uXXXX escape: Ruby takes 4 characters and String#hex of them */
static bool lex_unicode_escape(lexer *L, sbuf *b)
{
    const unsigned char *start = L->s + L->pos;
    for (int i = 0; i < 4; i++) {
        if (L->pos >= L->len) {
            lx_fail(L, L->line, L->col, "End of input but expecting 4 hex digits for \\uXXXX escape");
            return false;
        }
        long cp;
        lx_advance(L, utf8_char(L->s + L->pos, L->len - L->pos, &cp));
    }
    /* String#hex: leading blanks, a sign, an optional 0x, hex digits (underscores between) */
    const unsigned char *p = start, *e = L->s + L->pos;
    long v = 0;
    bool neg = false;
    while (p < e && (*p == ' ' || (*p >= 9 && *p <= 13)))
        p++;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (e - p >= 3 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit(p[2]))
        p += 2;
    for (bool prev_digit = false; p < e; p++) {
        if (*p == '_' && prev_digit && p + 1 < e && isxdigit(p[1])) {
            prev_digit = false;
            continue;
        }
        if (!isxdigit(*p))
            break;
        v = v * 16 + (isdigit(*p) ? *p - '0' : (tolower(*p) - 'a' + 10));
        prev_digit = true;
    }
    if (neg && v != 0) {
        fail_ruby(L->cx, L->org, L->line, L->col, "pack(U): value out of range");
        return false;
    }
    utf8_put(b, v);
    return true;
}

static bool lex_escape(lexer *L, sbuf *b)
{
    lx_advance(L, 1); /* the backslash */
    int c = lx_peek(L, 0);
    if (c < 0) {
        lx_fail(L, L->line, L->col, "End of input but backslash in string had nothing after it");
        return false;
    }
    const char *rep = NULL;
    switch (c) {
    case '"': rep = "\""; break;
    case '\\': rep = "\\"; break;
    case '/': rep = "/"; break;
    case 'b': rep = "\b"; break;
    case 'f': rep = "\f"; break;
    case 'n': rep = "\n"; break;
    case 'r': rep = "\r"; break;
    case 't': rep = "\t"; break;
    case 'u': lx_advance(L, 1); return lex_unicode_escape(L, b);
    default: {
        /* the gem means to say "backslash followed by 'q', this is not a valid escape sequence",
         * but builds that error with a string for its origin and fails with NoMethodError */
        sbuf nm = {0};
        char_name(&nm, L);
        lx_fail(L, L->line, L->col, "undefined method `line_number' for \"%s\":String", sb_str(&nm));
        L->pruby = true; /* raised when the parser asks the problem token for its line */
        sb_free(&nm);
        return false;
    }
    }
    sb_adds(b, rep);
    lx_advance(L, 1);
    return true;
}

/* after the opening """: up to the first run of three or more quotes, whose last three close it */
static bool lex_triple(lexer *L, sbuf *b)
{
    int quotes = 0;
    for (;;) {
        int c = lx_peek(L, 0);
        if (c == '"') {
            quotes++;
        } else if (quotes >= 3) {
            b->len -= 3;
            b->s[b->len] = 0;
            return true;
        } else {
            quotes = 0;
            if (c < 0) {
                lx_fail(L, L->line, L->col, "End of input but triple-quoted string was still open");
                return false;
            }
        }
        sb_addc(b, (char)c);
        lx_advance(L, 1);
    }
}

static void lex_quoted(lexer *L, token *t)
{
    sbuf b = {0};
    lx_advance(L, 1);
    for (;;) {
        if (L->pos >= L->len) {
            lx_fail(L, L->line, L->col, "End of input but string quote was still open");
            goto bad;
        }
        unsigned char c = L->s[L->pos];
        if (c == '\\') {
            if (!lex_escape(L, &b))
                goto bad;
            continue;
        }
        if (c == '"') {
            lx_advance(L, 1);
            break;
        }
        long cp;
        size_t n = utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            goto bad;
        }
        if (is_cntrl_cp(cp)) {
            sbuf nm = {0};
            char_name(&nm, L);
            lx_fail(L, L->line, L->col,
                    "JSON does not allow unescaped %s in quoted strings, use a backslash escape", sb_str(&nm));
            sb_free(&nm);
            skip_char(L);
            goto bad;
        }
        sb_addn(&b, (const char *)L->s + L->pos, n);
        lx_advance(L, n);
    }
    if (b.len == 0 && lx_peek(L, 0) == '"') {
        lx_advance(L, 1);
        if (!lex_triple(L, &b))
            goto bad;
    }
    t->type = T_STRING;
    t->str = hv_strn(b.s ? b.s : "", b.len);
    sb_free(&b);
    return;
bad:
    sb_free(&b);
    set_error(L, t);
}

static void lex_number(lexer *L, token *t)
{
    size_t start = L->pos;
    bool has_dec = false;
    lx_advance(L, 1);
    for (int c; (c = lx_peek(L, 0)) >= 0 && strchr("0123456789eE+-.", c); lx_advance(L, 1))
        if (c == '.' || c == 'e' || c == 'E')
            has_dec = true;
    const char *s = (const char *)L->s + start;
    size_t n = L->pos - start;
    const char *why = NULL;
    hv *v = NULL;
    if (has_dec) {
        if (ruby_float_syntax(s, n)) {
            char *tmp = xstrndup(s, n);
            double d = strtod(tmp, NULL);
            free(tmp);
            v = number_from_double(d, &why);
        }
    } else {
        v = ruby_integer(s, n, &why);
    }
    if (why) {
        if (strcmp(why, "Infinity") == 0) /* FloatDomainError */
            fail_ruby(L->cx, L->org, t->line, t->col, "%s", why);
        else
            lx_fail(L, t->line, t->col, "%s", why);
        set_error(L, t);
        return;
    }
    if (!v) {
        /* not a number after all: unquoted text, unless it holds a reserved character */
        if (memchr(s, '+', n)) {
            lx_fail(L, t->line, t->col, "Reserved character '+' is not allowed outside quotes");
            set_error(L, t);
            return;
        }
        t->type = T_UNQ;
        t->str = hv_strn(s, n);
        return;
    }
    t->type = T_NUMBER;
    t->num = v;
    t->str = hv_strn(s, n);
}

static void lex_unquoted(lexer *L, token *t)
{
    size_t start = L->pos;
    for (;;) {
        int c = lx_peek(L, 0);
        if (c < 0 || is_reserved(c) || comment_start(L))
            break;
        long cp;
        size_t n = utf8_char(L->s + L->pos, L->len - L->pos, &cp);
        if (cp < 0) {
            fail_ruby(L->cx, L->org, L->line, L->col, "invalid byte sequence in UTF-8");
            set_error(L, t);
            return;
        }
        if (is_space_cp(cp))
            break;
        lx_advance(L, n);
        /* true/false/null are recognized at the start of an unquoted token whatever follows */
        size_t len = L->pos - start;
        const char *s = (const char *)L->s + start;
        if (len == 4 && memcmp(s, "true", 4) == 0) {
            t->type = T_TRUE;
            return;
        }
        if (len == 4 && memcmp(s, "null", 4) == 0) {
            t->type = T_NULL;
            return;
        }
        if (len == 5 && memcmp(s, "false", 5) == 0) {
            t->type = T_FALSE;
            return;
        }
    }
    t->type = T_UNQ;
    t->str = hv_strn((const char *)L->s + start, L->pos - start);
}

/* PathParser: builds path elements from text pieces; a period splits elements unless quoted */
typedef struct {
    sbuf *el;
    bool *can_empty;
    size_t n, cap;
    bool any;
} pbuild;

static void pb_new_element(pbuild *pb)
{
    if (pb->n == pb->cap) {
        pb->cap = pb->cap ? pb->cap * 2 : 4;
        pb->el = xrealloc(pb->el, pb->cap * sizeof *pb->el);
        pb->can_empty = xrealloc(pb->can_empty, pb->cap * sizeof *pb->can_empty);
    }
    memset(&pb->el[pb->n], 0, sizeof pb->el[pb->n]);
    pb->can_empty[pb->n++] = false;
}

static void pb_add(pbuild *pb, bool quoted, const char *s, size_t n)
{
    if (pb->n == 0)
        pb_new_element(pb);
    pb->any = true;
    if (quoted) {
        sb_addn(&pb->el[pb->n - 1], s, n);
        if (pb->el[pb->n - 1].len == 0)
            pb->can_empty[pb->n - 1] = true;
        return;
    }
    for (;;) {
        const char *dot = memchr(s, '.', n);
        if (!dot) {
            sb_addn(&pb->el[pb->n - 1], s, n);
            return;
        }
        sb_addn(&pb->el[pb->n - 1], s, (size_t)(dot - s));
        pb_new_element(pb);
        n -= (size_t)(dot - s) + 1;
        s = dot + 1;
    }
}

static void pb_free(pbuild *pb)
{
    for (size_t i = 0; i < pb->n; i++)
        sb_free(&pb->el[i]);
    free(pb->el);
    free(pb->can_empty);
    memset(pb, 0, sizeof *pb);
}

/* feeds one token of a key or a ${} expression; false for a token not allowed in a path */
static bool pb_token(pbuild *pb, const token *t)
{
    switch (t->type) {
    case T_WS: return true;
    case T_STRING: pb_add(pb, true, hv_str_ptr(t->str), hv_str_len(t->str)); return true;
    case T_UNQ:
    case T_NUMBER: pb_add(pb, false, hv_str_ptr(t->str), hv_str_len(t->str)); return true;
    case T_TRUE: pb_add(pb, false, "true", 4); return true;
    case T_FALSE: pb_add(pb, false, "false", 5); return true;
    case T_NULL: pb_add(pb, false, "null", 4); return true;
    default: return false;
    }
}

/* the finished path as hv strings; NULL with *why when it has an empty element */
static hv **pb_finish(pbuild *pb, size_t *n, const char **why)
{
    if (!pb->any) {
        *why = "Expecting a field name or path here, but got nothing";
        return NULL;
    }
    for (size_t i = 0; i < pb->n; i++) {
        if (pb->el[i].len == 0 && !pb->can_empty[i]) {
            *why = "path has a leading, trailing, or two adjacent period '.' (use quoted \"\" empty string "
                   "if you want an empty element)";
            return NULL;
        }
    }
    hv **keys = xmalloc(pb->n * sizeof *keys);
    for (size_t i = 0; i < pb->n; i++)
        keys[i] = hv_strn(pb->el[i].s ? pb->el[i].s : "", pb->el[i].len);
    *n = pb->n;
    return keys;
}

static node *ref_new(hv **keys, size_t n, bool optional, int line, int col, const char *org)
{
    node *r = nnew(N_REF, line, col, org);
    r->keys = keys;
    r->n = r->cap = n;
    r->optional = optional;
    return r;
}

static bool is_simple(ttype t)
{
    return t == T_SUBST || t == T_UNQ || t == T_STRING || t == T_NUMBER || t == T_TRUE || t == T_FALSE ||
           t == T_NULL;
}

/* WhitespaceSaver#check: the saved blanks become unquoted text between two simple values and an
 * ignored-whitespace token otherwise. True when *out was filled. */
static bool ws_check(lexer *L, wsaver *sv, const token *t, token *out)
{
    bool have = sv->end > sv->start, simple = is_simple(t->type);
    bool unq = have && simple && sv->last_simple;
    sv->last_simple = simple;
    if (!have)
        return false;
    memset(out, 0, sizeof *out);
    out->type = unq ? T_UNQ : T_WS;
    out->wsonly = true;
    out->line = sv->line;
    out->col = sv->col;
    if (unq)
        out->str = hv_strn((const char *)L->s + sv->start, sv->end - sv->start);
    sv->start = sv->end = 0;
    return true;
}

/* ${path} or ${?path}: the expression's tokens are read with their own whitespace saver */
static void lex_subst(lexer *L, token *t)
{
    lx_advance(L, 1);
    if (lx_peek(L, 0) != '{') {
        sbuf nm = {0};
        char_name(&nm, L);
        lx_fail(L, L->line, L->col, "'$' not followed by {, '%s' not allowed after '$'", sb_str(&nm));
        sb_free(&nm);
        skip_char(L);
        set_error(L, t);
        return;
    }
    lx_advance(L, 1);
    bool optional = false;
    if (lx_peek(L, 0) == '?') {
        optional = true;
        lx_advance(L, 1);
    }
    if (++L->subst_depth > 64) {
        lx_fail(L, L->line, L->col, "substitutions nested too deeply");
        set_error(L, t);
        return;
    }
    wsaver sv = {0};
    pbuild pb = {0};
    sbuf bad = {0};
    for (;;) {
        token x = {0}, w;
        lex_token(L, &sv, &x);
        if (x.type == T_ERROR) { /* the substitution is that problem */
            L->problem = x.problem;
            L->pline = x.line;
            L->pcol = x.col;
            L->pruby = x.pruby;
            x.problem = NULL;
            tok_free(&x);
            goto fail;
        }
        if (x.type == T_RBRACE) {
            tok_free(&x);
            break;
        }
        if (x.type == T_EOF) {
            lx_fail(L, L->line, L->col, "Substitution ${ was not closed with a }");
            goto fail;
        }
        if (ws_check(L, &sv, &x, &w)) {
            pb_token(&pb, &w);
            tok_free(&w);
        }
        if (!pb_token(&pb, &x) && bad.len == 0) {
            sb_adds(&bad, "Token not allowed in path expression: ");
            tok_describe(&bad, &x);
            sb_adds(&bad, " (you can double-quote this token if you really want it here)");
        }
        tok_free(&x);
    }
    L->subst_depth--;
    t->line = L->line; /* the gem's token origin is the line where the substitution ends */
    const char *why = NULL;
    size_t n = 0;
    hv **keys = bad.len ? NULL : pb_finish(&pb, &n, &why);
    t->type = T_SUBST;
    if (keys) /* else the gem finds the bad path when it makes the value (ConfigParser) */
        t->ref = ref_new(keys, n, optional, t->line, t->col, L->org);
    else
        t->problem = bad.len ? sb_take(&bad) : xstrdup(why);
    pb_free(&pb);
    sb_free(&bad);
    return;
fail:
    L->subst_depth--;
    pb_free(&pb);
    sb_free(&bad);
    set_error(L, t);
}

/* Tokenizer#pull_next_token */
static void lex_token(lexer *L, wsaver *sv, token *t)
{
    memset(t, 0, sizeof *t);
    if (L->cx->failed || !skip_blanks(L, sv)) {
        set_error(L, t);
        return;
    }
    t->line = L->line;
    t->col = L->col;
    int c = lx_peek(L, 0);
    if (c < 0) {
        t->type = T_EOF;
        return;
    }
    if (c == '\n') {
        t->type = T_NEWLINE;
        lx_advance(L, 1);
        return;
    }
    if (comment_start(L)) {
        lex_comment(L, t);
        return;
    }
    switch (c) {
    case '"': lex_quoted(L, t); return;
    case '$': lex_subst(L, t); return;
    case ':': t->type = T_COLON; break;
    case ',': t->type = T_COMMA; break;
    case '=': t->type = T_EQUALS; break;
    case '{': t->type = T_LBRACE; break;
    case '}': t->type = T_RBRACE; break;
    case '[': t->type = T_LBRACKET; break;
    case ']': t->type = T_RBRACKET; break;
    case '+':
        lx_advance(L, 1);
        if (lx_peek(L, 0) != '=') {
            sbuf nm = {0};
            char_name(&nm, L);
            lx_fail(L, L->line, L->col, "'+' not followed by =, '%s' not allowed after '+'", sb_str(&nm));
            sb_free(&nm);
            skip_char(L);
            set_error(L, t);
            return;
        }
        t->type = T_PLUSEQ;
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            lex_number(L, t);
        } else if (is_reserved(c)) {
            lx_fail(L, L->line, L->col, "Reserved character '%c' is not allowed outside quotes", c);
            skip_char(L);
            set_error(L, t);
        } else {
            lex_unquoted(L, t);
        }
        return;
    }
    lx_advance(L, 1);
}

/* the parser's next token (ParseContext#next_token): put-back tokens first, then the lexer's
 * stream with the whitespace tokens the saver produces */
static void lx_fill(lexer *L)
{
    token x, w;
    lex_token(L, &L->ws, &x);
    L->nq = 0;
    if (x.type != T_ERROR && ws_check(L, &L->ws, &x, &w))
        L->q[L->nq++] = w;
    L->q[L->nq++] = x;
}

static void lx_next(lexer *L, token *t)
{
    if (L->nback) {
        *t = L->back[--L->nback];
        return;
    }
    if (L->nq == 0)
        lx_fill(L);
    *t = L->q[0];
    L->q[0] = L->q[1];
    L->nq--;
    if (L->nq == 0 && t->type != T_EOF && !L->cx->failed)
        lx_fill(L); /* TokenIterator#next reads the next token before returning this one */
    if (t->type == T_ERROR && t->problem) {
        if (t->pruby)
            fail_ruby(L->cx, L->org, t->line, t->col, "%s", t->problem);
        else
            fail(L->cx, L->org, t->line, t->col, "%s", t->problem);
    }
}

static void lx_back(lexer *L, token *t)
{
    if (L->nback < (int)(sizeof L->back / sizeof L->back[0]))
        L->back[L->nback++] = *t;
    else
        tok_free(t); /* cannot happen: the parser puts back at most two tokens */
    memset(t, 0, sizeof *t);
}

static void lx_free(lexer *L)
{
    while (L->nback)
        tok_free(&L->back[--L->nback]);
    while (L->nq)
        tok_free(&L->q[--L->nq]);
    free(L->problem);
    L->problem = NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* parser: ConfigDocumentParser and ConfigParser in one pass                                   */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    hctx *cx;
    lexer L;
    int depth;
    int array_count; /* ConfigParser's @array_count: inside a list, or the value of a += */
    hv **path;       /* ConfigParser's path stack, flattened, outermost key first */
    size_t pn, pcap;
    const char *dir; /* directory of the included file being parsed, NULL for the document */
    bool deferred;   /* a ConfigParser-level error happened (kept in derr) */
    herr derr;
} parser;

/* The gem tokenizes and parses the whole document (ConfigDocumentParser) before it makes values
 * (ConfigParser), so an error of the second stage (a bad concatenation or substitution path, a
 * failed merge, += in a list, an include) only counts if the rest of the document is well-formed.
 * This moves such an error, just recorded, aside; parsing goes on to check the syntax. */
static void defer(parser *P)
{
    hctx *cx = P->cx;
    if (!cx->failed || P->deferred)
        return;
    P->deferred = true;
    herr_move(&P->derr, cx->err);
    cx->failed = false;
}

/* whether the ConfigParser stage still runs: not after an error of either stage (the values made
 * after that are placeholders, and the merges and includes the gem would not do are skipped) */
static bool building(const parser *P) { return !P->cx->failed && !P->deferred; }

static node *placeholder(int line, int col) { return nprim(N_NULL, hv_undef(), line, col, NULL); }

static node *parse_document(hctx *cx, const char *text, size_t len, const char *org, const char *dir);

static void perr(parser *P, const token *t, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void perr(parser *P, const token *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(P->cx, E_CONFIG, P->L.org, t ? t->line : P->L.line, t ? t->col : P->L.col, fmt, ap);
    va_end(ap);
}

/* Path#render: keys joined by '.', quoted when they hold anything but letters, digits, - and _ */
static void render_path(sbuf *b, hv *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = hv_str_ptr(keys[i]);
        size_t len = hv_str_len(keys[i]);
        bool funky = len == 0;
        for (size_t j = 0; j < len && !funky; j++) {
            unsigned char c = (unsigned char)s[j];
            if (!(isalnum(c) || c == '-' || c == '_' || c >= 0x80))
                funky = true;
        }
        if (i)
            sb_addc(b, '.');
        if (!funky) {
            sb_addn(b, s, len);
            continue;
        }
        sb_addc(b, '"');
        for (size_t j = 0; j < len; j++) {
            unsigned char c = (unsigned char)s[j];
            if (c == '"' || c == '\\')
                sb_addf(b, "\\%c", c);
            else if (c == '\n')
                sb_adds(b, "\\n");
            else if (c < 0x20)
                sb_addf(b, "\\u%04x", c);
            else
                sb_addc(b, (char)c);
        }
        sb_addc(b, '"');
    }
}

static void ref_describe(sbuf *b, const node *r)
{
    sb_adds(b, r->optional ? "${?" : "${");
    render_path(b, r->keys, r->n);
    sb_addc(b, '}');
}

/* next_token_collecting_whitespace: skips blanks, newlines and comments */
static void next_tcw(parser *P, token *t)
{
    for (;;) {
        lx_next(&P->L, t);
        if (t->type == T_WS || t->type == T_NEWLINE || t->type == T_COMMENT || (t->type == T_UNQ && t->wsonly)) {
            tok_free(t);
            continue;
        }
        return;
    }
}

/* check_element_separator: a comma, or at least one newline, between elements */
static bool check_sep(parser *P)
{
    bool saw = false;
    for (;;) {
        token t;
        lx_next(&P->L, &t);
        if (t.type == T_WS || t.type == T_COMMENT || (t.type == T_UNQ && t.wsonly)) {
            tok_free(&t);
        } else if (t.type == T_NEWLINE) {
            saw = true;
        } else if (t.type == T_COMMA) {
            return true;
        } else {
            lx_back(&P->L, &t);
            return saw;
        }
    }
}

static bool starts_value(ttype t)
{
    return t == T_STRING || t == T_NUMBER || t == T_TRUE || t == T_FALSE || t == T_NULL || t == T_UNQ ||
           t == T_SUBST || t == T_LBRACE || t == T_LBRACKET;
}

static node *parse_object(parser *P, bool curly, int line, int col);
static node *parse_array(parser *P, int line, int col);

/* a value starting with token t (consumed) */
static node *parse_value(parser *P, token *t)
{
    node *v = NULL;
    const char *org = P->L.org;
    switch (t->type) {
    case T_STRING: v = nstr(t->str, true, t->line, t->col, org); t->str = NULL; break;
    case T_UNQ: v = nstr(t->str, false, t->line, t->col, org); t->str = NULL; break;
    case T_NUMBER:
        v = nprim(N_NUM, t->num, t->line, t->col, org);
        v->text = t->str;
        t->num = t->str = NULL;
        break;
    case T_TRUE: v = nprim(N_BOOL, hv_true(), t->line, t->col, org); break;
    case T_FALSE: v = nprim(N_BOOL, hv_false(), t->line, t->col, org); break;
    case T_NULL: v = nprim(N_NULL, hv_undef(), t->line, t->col, org); break;
    case T_SUBST:
        if (t->problem) { /* ConfigBadPathError, raised when the gem makes the value */
            if (building(P)) {
                fail(P->cx, org, t->line, t->col, "%s", t->problem);
                defer(P);
            }
            v = placeholder(t->line, t->col);
        } else {
            v = t->ref;
            t->ref = NULL;
        }
        break;
    case T_LBRACE: v = parse_object(P, true, t->line, t->col); break;
    case T_LBRACKET: v = parse_array(P, t->line, t->col); break;
    default: {
        sbuf d = {0};
        tok_describe(&d, t);
        perr(P, t, "Expecting a value but got wrong token: %s", sb_str(&d));
        sb_free(&d);
    }
    }
    tok_free(t);
    return v;
}

/* consolidate_values: one value, or a concatenation of adjacent values on one line. *out is NULL
 * when no value starts here. 0, or -1 with an error. */
static int consolidate_values(parser *P, node **out)
{
    nvec pieces = {0};
    token t;
    *out = NULL;
    next_tcw(P, &t);
    for (;;) {
        if (t.type == T_WS) {
            tok_free(&t);
        } else if (starts_value(t.type)) {
            node *v = parse_value(P, &t);
            if (!v) {
                nv_free(&pieces);
                return -1;
            }
            nv_push(&pieces, v);
        } else {
            break;
        }
        lx_next(&P->L, &t);
    }
    lx_back(&P->L, &t);
    if (pieces.n == 1) {
        *out = pieces.v[0];
        pieces.n = 0;
    } else if (pieces.n > 1) {
        if (!building(P))
            *out = placeholder(pieces.v[0]->line, pieces.v[0]->col);
        else if (concatenate(P->cx, pieces.v, pieces.n, out) < 0) {
            defer(P);
            *out = placeholder(pieces.v[0]->line, pieces.v[0]->col);
        }
    }
    nv_free(&pieces);
    return 0;
}

static void free_keys(hv **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hv_decref(keys[i]);
    free(keys);
}

/* parse_key: the key tokens up to the separator, as a path */
static hv **parse_key(parser *P, token *t, size_t *n, int *line, int *col)
{
    pbuild pb = {0};
    bool got = false;
    *line = t->line;
    *col = t->col;
    while (t->type == T_STRING || t->type == T_NUMBER || t->type == T_TRUE || t->type == T_FALSE ||
           t->type == T_NULL || t->type == T_UNQ) {
        pb_token(&pb, t);
        got = true;
        tok_free(t);
        lx_next(&P->L, t);
    }
    if (!got) {
        sbuf d = {0};
        tok_describe(&d, t);
        perr(P, t, "expecting a close brace or a field name here, got %s", sb_str(&d));
        sb_free(&d);
        tok_free(t);
        pb_free(&pb);
        return NULL;
    }
    lx_back(&P->L, t);
    const char *why = NULL;
    hv **keys = pb_finish(&pb, n, &why);
    if (!keys) {
        fail_bare(P->cx, P->L.org, *line, *col, "%s", why); /* a ConfigBadPathError without origin */
    } else if (P->depth + *n > MAX_PARSE_DEPTH) { /* a.b.c... nests objects too */
        fail(P->cx, P->L.org, *line, *col, "objects and arrays nested more than %d levels deep", MAX_PARSE_DEPTH);
        free_keys(keys, *n);
        keys = NULL;
    }
    pb_free(&pb);
    return keys;
}

static void path_push(parser *P, hv **keys, size_t n)
{
    if (P->pn + n > P->pcap) {
        P->pcap = (P->pn + n) * 2;
        P->path = xrealloc(P->path, P->pcap * sizeof *P->path);
    }
    for (size_t i = 0; i < n; i++)
        P->path[P->pn++] = hv_incref(keys[i]);
}

static void path_pop(parser *P, size_t n)
{
    while (n-- > 0)
        hv_decref(P->path[--P->pn]);
}

static hv **keys_copy(hv *const *keys, size_t n)
{
    hv **k = xmalloc((n ? n : 1) * sizeof *k);
    for (size_t i = 0; i < n; i++)
        k[i] = hv_incref(keys[i]);
    return k;
}

/* SimpleConfigObject#relativized: references of an included file are prefixed with the path it
 * was included at (and remember that prefix, to fall back to the unprefixed path) */
static node *relativize(node *v, hv *const *prefix, size_t pn)
{
    if (v->kind == N_REF) {
        hv **k = xmalloc((pn + v->n) * sizeof *k);
        for (size_t i = 0; i < pn; i++)
            k[i] = hv_incref(prefix[i]);
        for (size_t i = 0; i < v->n; i++)
            k[pn + i] = hv_incref(v->keys[i]);
        node *r = ref_new(k, pn + v->n, v->optional, v->line, v->col, v->org);
        r->prefix = v->prefix + pn;
        return r;
    }
    if (!is_container(v) || !v->unresolved)
        return nref(v);
    node *r = shallow_copy(v);
    for (size_t i = 0; i < r->n; i++) {
        node *c = relativize(r->items[i], prefix, pn);
        nfree(r->items[i]);
        r->items[i] = c;
    }
    return r;
}

/* ConfigParser#parse_object for one field: duplicates merge through with_fallback, a dotted path
 * becomes nested objects, += becomes ${?path} [value]. Steals keys and v. */
static int add_field(parser *P, node *o, hv **keys, size_t n, bool pluseq, node *v)
{
    if (!building(P)) {
        nfree(v);
        free_keys(keys, n);
        return 0;
    }
    if (pluseq) {
        node *pieces[2];
        pieces[0] = ref_new(keys_copy(P->path, P->pn), P->pn, true, v->line, v->col, P->L.org);
        pieces[1] = nnew(N_LIST, v->line, v->col, P->L.org);
        items_push(pieces[1], v);
        node *c = NULL;
        int rc = concatenate(P->cx, pieces, 2, &c); /* a reference and a list: cannot fail */
        nfree(pieces[0]);
        nfree(pieces[1]);
        if (rc < 0) {
            defer(P);
            c = placeholder(0, 0);
        }
        v = c;
    }
    for (size_t i = n; i-- > 1;) {
        node *w = nnew(N_OBJ, v->line, v->col, v->org);
        obj_append(w, keys[i], v);
        fix_status(w);
        v = w;
    }
    node *existing = obj_get(o, keys[0]);
    bool was = existing && existing->unresolved; /* before it is possibly merged into in place */
    if (existing) {
        node *m = with_fallback_into(P->cx, v, existing); /* existing is replaced below */
        if (m) {
            nfree(v);
            v = m;
        } else {
            defer(P);
        }
    }
    obj_put(o, keys[0], v);
    if (was && !v->unresolved)
        fix_status(o);
    free(keys);
    return 0;
}

static node *include_load(parser *P, const char *kind, hv *name, const token *at);

/* an include statement (ConfigDocumentParser#parse_include + ConfigParser#parse_include) */
static int parse_include(parser *P, node *o)
{
    token t;
    const char *kind = NULL;
    hv *name = NULL;
    sbuf d = {0};
    next_tcw(P, &t);
    if (t.type == T_UNQ) {
        const char *k = hv_str_ptr(t.str);
        if (strcmp(k, "url(") == 0 || strcmp(k, "file(") == 0 || strcmp(k, "classpath(") == 0) {
            kind = strcmp(k, "url(") == 0 ? "url" : strcmp(k, "file(") == 0 ? "file" : "classpath";
        } else {
            tok_describe(&d, &t);
            perr(P, &t,
                 "expecting include parameter to be quoted filename, file(), classpath(), or url(). No spaces are "
                 "allowed before the open paren. Not expecting: %s",
                 sb_str(&d));
            goto bad;
        }
        tok_free(&t);
        next_tcw(P, &t);
        if (t.type != T_STRING) {
            tok_describe(&d, &t);
            perr(P, &t, "expecting a quoted string inside file(), classpath(), or url(), rather than: %s", sb_str(&d));
            goto bad;
        }
        name = hv_incref(t.str);
        tok_free(&t);
        next_tcw(P, &t);
        if (t.type != T_UNQ || strcmp(hv_str_ptr(t.str), ")") != 0) {
            tok_describe(&d, &t);
            perr(P, &t, "expecting a close parentheses ')' here, not: %s", sb_str(&d));
            goto bad;
        }
    } else if (t.type == T_STRING) {
        kind = "heuristic";
        name = hv_incref(t.str);
    } else {
        tok_describe(&d, &t);
        perr(P, &t, "include keyword is not followed by a quoted string, but by: %s", sb_str(&d));
        goto bad;
    }
    if (!building(P)) /* the gem would not get to this include */
        goto done;
    node *inc = include_load(P, kind, name, &t);
    if (!inc) {
        defer(P);
        goto done;
    }
    if (P->array_count > 0 && inc->unresolved) {
        perr(P, &t,
             "Due to current limitations of the config parser, when an include statement is nested inside a list "
             "value, ${} substitutions inside the included file cannot be resolved correctly. Either move the "
             "include outside of the list value or remove the ${} statements from the included file.");
        defer(P);
        nfree(inc);
        goto done;
    }
    if (P->pn > 0) {
        node *r = relativize(inc, P->path, P->pn);
        nfree(inc);
        inc = r;
    }
    for (size_t i = 0; i < inc->n; i++) {
        node *v = inc->items[i], *existing = obj_get(o, inc->keys[i]);
        node *m = existing ? with_fallback(P->cx, v, existing) : nref(v);
        if (!m) {
            defer(P);
            break;
        }
        obj_put(o, hv_incref(inc->keys[i]), m);
    }
    nfree(inc);
done:
    tok_free(&t);
    hv_decref(name);
    return 0;
bad:
    sb_free(&d);
    tok_free(&t);
    hv_decref(name);
    return -1;
}

/* one `key sep value` (or `key { ... }`) of an object */
static int parse_field(parser *P, node *o, token *t)
{
    size_t n = 0;
    int line, col;
    hv **keys = parse_key(P, t, &n, &line, &col);
    if (!keys)
        return -1;
    token a;
    bool pluseq = false;
    node *v = NULL;
    next_tcw(P, &a);
    if (a.type != T_LBRACE && a.type != T_COLON && a.type != T_EQUALS && a.type != T_PLUSEQ) {
        sbuf d = {0}, k = {0};
        render_path(&k, keys, n);
        tok_describe(&d, &a);
        perr(P, &a, "Key '%s' may not be followed by token: %s", sb_str(&k), sb_str(&d));
        sb_free(&d);
        sb_free(&k);
        tok_free(&a);
        free_keys(keys, n);
        return -1;
    }
    pluseq = a.type == T_PLUSEQ;
    if (pluseq && P->array_count > 0 && building(P)) {
        perr(P, &a,
             "Due to current limitations of the config parser, += does not work nested inside a list. += expands to "
             "a ${} substitution and the path in ${} cannot currently refer to list elements. You might be able to "
             "move the += outside of the list and then refer to it from inside the list with ${}.");
        defer(P);
    }
    path_push(P, keys, n);
    if (pluseq)
        P->array_count++;
    if (a.type == T_LBRACE) {
        v = parse_value(P, &a);
    } else {
        tok_free(&a);
        if (consolidate_values(P, &v) == 0 && !v) {
            next_tcw(P, &a);
            v = parse_value(P, &a);
        }
    }
    if (pluseq)
        P->array_count--;
    int rc = -1;
    if (v)
        rc = add_field(P, o, keys, n, pluseq, v); /* uses the path stack for += */
    else
        free_keys(keys, n);
    path_pop(P, n);
    return rc;
}

static bool enter(parser *P, int line, int col)
{
    if (++P->depth > MAX_PARSE_DEPTH) {
        fail(P->cx, P->L.org, line, col, "objects and arrays nested more than %d levels deep", MAX_PARSE_DEPTH);
        return false;
    }
    return true;
}

static node *parse_object(parser *P, bool curly, int line, int col)
{
    if (!enter(P, line, col))
        return NULL;
    node *o = nnew(N_OBJ, line, col, P->L.org);
    token t;
    sbuf d = {0};
    for (;;) {
        next_tcw(P, &t);
        if (t.type == T_RBRACE) {
            if (!curly) {
                perr(P, &t, "unbalanced close brace '}' with no open brace");
                goto bad;
            }
            break;
        }
        if (t.type == T_EOF && !curly) {
            lx_back(&P->L, &t);
            break;
        }
        if (t.type == T_UNQ && strcmp(hv_str_ptr(t.str), "include") == 0) {
            tok_free(&t);
            if (parse_include(P, o) < 0)
                goto bad;
        } else if (parse_field(P, o, &t) < 0) {
            goto bad;
        }
        if (check_sep(P))
            continue;
        next_tcw(P, &t);
        if (t.type == T_RBRACE) {
            if (!curly) {
                perr(P, &t, "unbalanced close brace '}' with no open brace");
                goto bad;
            }
            break;
        }
        if (t.type == T_EOF && !curly) {
            lx_back(&P->L, &t);
            break;
        }
        tok_describe(&d, &t);
        perr(P, &t, "Expecting close brace } or a comma, got %s", sb_str(&d));
        goto bad;
    }
    tok_free(&t);
    P->depth--;
    return o;
bad:
    sb_free(&d);
    tok_free(&t);
    nfree(o);
    return NULL;
}

static node *parse_array(parser *P, int line, int col)
{
    if (!enter(P, line, col))
        return NULL;
    node *l = nnew(N_LIST, line, col, P->L.org), *v = NULL;
    token t = {0};
    sbuf d = {0};
    P->array_count++;
    if (consolidate_values(P, &v) < 0)
        goto bad;
    if (!v) {
        next_tcw(P, &t);
        if (t.type == T_RBRACKET)
            goto done;
        tok_describe(&d, &t);
        perr(P, &t,
             "List should have ] or a first element after the open [, instead had token: %s (if you want %s to be "
             "part of a string value, then double-quote it)",
             sb_str(&d), sb_str(&d));
        goto bad;
    }
    items_push(l, v);
    for (;;) {
        if (!check_sep(P)) {
            next_tcw(P, &t);
            if (t.type == T_RBRACKET)
                goto done;
            tok_describe(&d, &t);
            perr(P, &t,
                 "List should have ended with ] or had a comma, instead had token: %s (if you want %s to be part of a "
                 "string value, then double-quote it)",
                 sb_str(&d), sb_str(&d));
            goto bad;
        }
        if (consolidate_values(P, &v) < 0)
            goto bad;
        if (v) {
            items_push(l, v);
            continue;
        }
        next_tcw(P, &t);
        if (t.type != T_RBRACKET) {
            tok_describe(&d, &t);
            perr(P, &t,
                 "List should have had new element after a comma, instead had token: %s (if you want the comma or %s "
                 "to be part of a string value, then double-quote it)",
                 sb_str(&d), sb_str(&d));
            goto bad;
        }
        lx_back(&P->L, &t); /* one trailing comma is allowed */
    }
done:
    tok_free(&t);
    P->array_count--;
    P->depth--;
    return l;
bad:
    sb_free(&d);
    tok_free(&t);
    nfree(l);
    return NULL;
}

/* ConfigDocumentParser#parse: the root object, with or without braces */
static node *parse_root(parser *P)
{
    token t;
    node *v;
    next_tcw(P, &t);
    if (t.type == T_LBRACE || t.type == T_LBRACKET) {
        v = parse_value(P, &t);
    } else {
        lx_back(&P->L, &t);
        v = parse_object(P, false, P->L.line, P->L.col);
    }
    if (!v)
        return NULL;
    next_tcw(P, &t);
    if (t.type != T_EOF) {
        sbuf d = {0};
        tok_describe(&d, &t);
        perr(P, &t, "Document has trailing tokens after first object or array: %s", sb_str(&d));
        sb_free(&d);
        tok_free(&t);
        nfree(v);
        return NULL;
    }
    tok_free(&t);
    return v;
}

static node *parse_document(hctx *cx, const char *text, size_t len, const char *org, const char *dir)
{
    parser P = {0};
    bool merge_loaded = cx->merge_loaded;
    P.cx = cx;
    P.dir = dir;
    P.L.cx = cx;
    P.L.org = org;
    P.L.s = (const unsigned char *)text;
    P.L.len = len;
    P.L.line = 1;
    P.L.col = 1;
    node *root = parse_root(&P);
    lx_free(&P.L);
    path_pop(&P, P.pn);
    free(P.path);
    if (cx->failed) /* the gem stopped before making any value: it made no delayed merge */
        cx->merge_loaded = merge_loaded;
    else if (P.deferred) { /* the document is well-formed: the ConfigParser error stands */
        herr_move(cx->err, &P.derr);
        cx->failed = true;
    }
    herr_clear(&P.derr);
    if (root && !cx->failed && root->kind != N_OBJ) /* Parseable.force_parsed_to_object */
        fail(cx, org, root->line, root->col, " has type LIST rather than object at file root");
    if (root && cx->failed) {
        nfree(root);
        root = NULL;
    }
    return root;
}

/* ---- includes ---- */

/* An included file: regular files only (a FIFO would block, a device never end), at most
 * MAX_INCLUDE_SIZE bytes; *err_no is set on failure (EFBIG when too large). */
#define MAX_INCLUDE_SIZE ((off_t)256 * 1024 * 1024)

static bool read_file(const char *path, sbuf *out, int *err_no)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *err_no = errno;
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_INCLUDE_SIZE) {
        *err_no = S_ISDIR(st.st_mode) ? EISDIR : !S_ISREG(st.st_mode) ? EINVAL : EFBIG;
        close(fd);
        return false;
    }
    char buf[65536];
    ssize_t n;
    bool ok = true;
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            ok = false;
            break;
        }
        if ((off_t)(out->len + (size_t)n) > MAX_INCLUDE_SIZE) {
            errno = EFBIG;
            ok = false;
            break;
        }
        sb_addn(out, buf, (size_t)n);
    }
    *err_no = ok ? 0 : errno;
    close(fd);
    return ok;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* parses an existing included file into its root object (NULL on error) */
static node *include_parse_file(parser *P, const char *path, const token *at)
{
    hctx *cx = P->cx;
    if (ends_with(path, ".properties")) {
        perr(P, at, "include of a .properties file is not supported: %s", path);
        return NULL;
    }
    if (cx->include_depth >= MAX_INCLUDE_DEPTH) {
        perr(P, at, "include statements nested more than %d times, you probably have a cycle in your includes",
             MAX_INCLUDE_DEPTH);
        return NULL;
    }
    sbuf text = {0};
    int e = 0;
    if (!read_file(path, &text, &e)) {
        sb_free(&text);
        perr(P, at, "could not read included file %s: %s", path,
             e == EINVAL ? "not a regular file" : e == EFBIG ? "larger than 256 MB" : strerror(e));
        return NULL;
    }
    cx->origins = xrealloc(cx->origins, (cx->norigins + 1) * sizeof *cx->origins);
    char *org = cx->origins[cx->norigins++] = xstrdup(path);
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = 0;
    else
        strcpy(dir, ".");
    cx->include_depth++;
    node *root = parse_document(cx, sb_str(&text), text.len, org, dir);
    cx->include_depth--;
    free(dir);
    sb_free(&text);
    return root;
}

/* SimpleIncluder.from_basename: name.conf/.json as is, else name.conf merged over name.json;
 * a missing file includes nothing (includes are allowed to be missing) */
static node *include_basename(parser *P, const char *path, const token *at)
{
    if (ends_with(path, ".conf") || ends_with(path, ".json") || ends_with(path, ".properties")) {
        if (!file_exists(path))
            return nnew(N_OBJ, at->line, at->col, P->L.org);
        return include_parse_file(P, path, at);
    }
    node *obj = NULL;
    char *conf = xasprintf("%s.conf", path), *json = xasprintf("%s.json", path);
    if (file_exists(conf) && !(obj = include_parse_file(P, conf, at)))
        goto out;
    if (file_exists(json)) {
        node *j = include_parse_file(P, json, at);
        if (!j) {
            nfree(obj);
            obj = NULL;
            goto out;
        }
        if (obj) {
            node *m = with_fallback(P->cx, obj, j);
            nfree(obj);
            nfree(j);
            if (!(obj = m))
                goto out;
        } else {
            obj = j;
        }
    }
    if (!obj)
        obj = nnew(N_OBJ, at->line, at->col, P->L.org);
out:
    free(conf);
    free(json);
    return obj;
}

/* Hocon::Impl::Url.new accepts what Ruby's URI.parse reads as an http(s) URI (approximated) */
static bool is_http_url(const char *s)
{
    if (strncasecmp(s, "http://", 7) != 0 && strncasecmp(s, "https://", 8) != 0)
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= ' ' || *p >= 0x7F || strchr("<>\"{}|\\^`", *p))
            return false;
    return true;
}

/* The included object, or NULL on error. Puppet parses the data file as a string, so a plain
 * `include "name"` in it finds nothing (the gem falls back to a classpath resource, which the
 * ruby gem never finds); `include file("name")` reads the name as given, relative to the
 * process's working directory; in an included file `include "name"` is relative to that file. */
static node *include_load(parser *P, const char *kind, hv *name, const token *at)
{
    const char *s = hv_str_ptr(name);
    if (memchr(s, 0, hv_str_len(name))) {
        perr(P, at, "include name contains a NUL character");
        return NULL;
    }
    if (strcmp(kind, "url") == 0) {
        if (is_http_url(s)) /* the gem's SimpleIncluder has no include_url */
            fail_ruby(P->cx, P->L.org, at->line, at->col,
                      "undefined method `include_url' for #<Hocon::Impl::SimpleIncluder>");
        else
            perr(P, at, "include url() specifies an invalid URL: %s", s);
        return NULL;
    }
    if (strcmp(kind, "classpath") == 0) { /* the gem's SimpleIncluder lacks include_resources */
        fail_ruby(P->cx, P->L.org, at->line, at->col,
                  "undefined method `include_resources' for #<Hocon::Impl::SimpleIncluder>");
        return NULL;
    }
    if (strcmp(kind, "file") == 0)
        return include_basename(P, s, at);
    if (is_http_url(s)) { /* nor an include_url_without_fallback */
        fail_ruby(P->cx, P->L.org, at->line, at->col,
                  "undefined method `include_url_without_fallback' for Hocon::Impl::SimpleIncluder:Class");
        return NULL;
    }
    if (!P->dir)
        return nnew(N_OBJ, at->line, at->col, P->L.org);
    char *path = s[0] == '/' ? xstrdup(s) : xasprintf("%s/%s", P->dir, s);
    node *r = include_basename(P, path, at);
    free(path);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* resolver                                                                                    */
/* ------------------------------------------------------------------------------------------ */

enum { R_OK = 0, R_ERR = -1, R_CYCLE = -2 /* NotPossibleToResolve */ };

/* ResolveSource: the root to look substitutions up in, and (when known) the chain of containers
 * from that root down to the value being resolved, which a delayed merge uses to replace itself */
typedef struct {
    node *root;
    node **par; /* par[0] is the root end, par[npar - 1] the innermost container */
    size_t npar;
    bool has;
} rsrc;

/* a restriction to a child path (resolve only along it); NULL means resolve everything */
typedef struct {
    hv *const *k;
    size_t n;
} rpath;

typedef struct {
    hctx *cx;
    nvec trace;  /* references on the resolve stack, for the cycle message (borrowed) */
    size_t nbad; /* how many of them have a path that cannot be written in messages */
    int depth;
    char *cycle; /* the trace when a cycle was found, if the reference catching it needs it */
} rctx;

static void src_set(rsrc *s, node *root, node *const *par, size_t npar, bool has)
{
    s->root = nref(root);
    s->has = has;
    s->npar = has ? npar : 0;
    s->par = NULL;
    if (s->npar) {
        s->par = xmalloc(npar * sizeof *s->par);
        for (size_t i = 0; i < npar; i++)
            s->par[i] = nref(par[i]);
    }
}

static void src_free(rsrc *s)
{
    for (size_t i = 0; i < s->npar; i++)
        nfree(s->par[i]);
    free(s->par);
    nfree(s->root);
    memset(s, 0, sizeof *s);
}

/* ResolveSource#push_parent */
static void src_push(const rsrc *s, node *parent, rsrc *out)
{
    if (!s->has) {
        if (parent == s->root)
            src_set(out, s->root, &parent, 1, true);
        else
            src_set(out, s->root, NULL, 0, false);
        return;
    }
    src_set(out, s->root, s->par, s->npar, true);
    out->par = xrealloc(out->par, (out->npar + 1) * sizeof *out->par);
    out->par[out->npar++] = nref(parent);
}

static void bug(rctx *R, const char *msg) { fail(R->cx, NULL, 0, 0, "%s", msg); }

static node *empty_object(void) { return nnew(N_OBJ, 0, 0, NULL); }

/* replace_child of a container: a copy with `child` (found by identity) replaced by repl, or
 * removed when repl is NULL. *out may be NULL (a list that became empty). */
static int replace_child(rctx *R, node *parent, node *child, node *repl, node **out)
{
    *out = NULL;
    size_t i = 0;
    while (i < parent->n && parent->items[i] != child)
        i++;
    if (parent->kind == N_OBJ) {
        if (i == parent->n) {
            bug(R, "SimpleConfigObject.replaceChild did not find the child in its parent");
            return R_ERR;
        }
        node *o = obj_new_like(parent);
        for (size_t j = 0; j < parent->n; j++) {
            if (j != i)
                obj_append(o, hv_incref(parent->keys[j]), nref(parent->items[j]));
            else if (repl)
                obj_append(o, hv_incref(parent->keys[j]), nref(repl));
        }
        fix_status(o);
        *out = o;
        return R_OK;
    }
    if (parent->kind == N_MERGEOBJ) {
        if (i == parent->n) {
            bug(R, "tried to replace a child which is not in the delayed merge");
            return R_ERR;
        }
        /* Quirk: with no replacement the gem's replace_child_in_list calls Array#delete(i),
         * which removes nothing, so the stack stays as it was */
        node *m = shallow_copy(parent);
        if (repl) {
            nfree(m->items[i]);
            m->items[i] = nref(repl);
        }
        *out = m;
        return R_OK;
    }
    /* lists, delayed merges and concatenations call replace_child_in_list unqualified in the gem,
     * which raises NoMethodError (that a list being resolved turns into "unexpected exception") */
    fail_ruby(R->cx, parent->org, parent->line, parent->col, "undefined method `replace_child_in_list' for %s",
              parent->kind == N_LIST ? "SimpleConfigList" : parent->kind == N_MERGE ? "ConfigDelayedMerge"
                                                                                    : "ConfigConcatenation");
    return R_ERR;
}

/* ResolveSource.replace: rebuilds the chain of containers after replacing its innermost one;
 * *out is NULL when nothing is left */
static int chain_replace(rctx *R, node *const *chain, size_t n, node *old, node *repl, node ***out, size_t *outn)
{
    *out = NULL;
    *outn = 0;
    if (n == 0 || chain[n - 1] != old) {
        bug(R, "Can only replace() the top node we're resolving");
        return R_ERR;
    }
    node *parent = n >= 2 ? chain[n - 2] : NULL, *np = NULL;
    if (!parent) {
        if (repl && is_container(repl)) {
            *out = xmalloc(sizeof **out);
            (*out)[0] = nref(repl);
            *outn = 1;
        }
        return R_OK;
    }
    bool keep = repl && is_container(repl);
    int rc = replace_child(R, parent, old, keep ? repl : NULL, &np);
    if (rc == R_OK)
        rc = chain_replace(R, chain, n - 1, parent, np, out, outn);
    nfree(np);
    if (rc != R_OK || !keep)
        return rc;
    *out = xrealloc(*out, (*outn + 1) * sizeof **out);
    (*out)[(*outn)++] = nref(repl);
    return R_OK;
}

static node *root_must_be_obj(node *v) { return is_objectish(v) ? nref(v) : empty_object(); }

/* ResolveSource#replace_current_parent */
static int src_replace_current(rctx *R, const rsrc *s, node *old, node *repl, rsrc *out)
{
    if (old == repl) {
        src_set(out, s->root, s->par, s->npar, s->has);
        return R_OK;
    }
    if (s->has) {
        node **chain;
        size_t n;
        int rc = chain_replace(R, s->par, s->npar, old, repl, &chain, &n);
        if (rc != R_OK)
            return rc;
        if (chain) {
            src_set(out, chain[0], chain, n, true);
            for (size_t i = 0; i < n; i++)
                nfree(chain[i]);
            free(chain);
        } else {
            node *e = empty_object();
            src_set(out, e, NULL, 0, false);
            nfree(e);
        }
        return R_OK;
    }
    if (old != s->root) {
        bug(R, "attempt to replace root with something else");
        return R_ERR;
    }
    node *r = root_must_be_obj(repl);
    src_set(out, r, NULL, 0, false);
    nfree(r);
    return R_OK;
}

/* ResolveSource#replace_within_current_parent (repl may be NULL: remove) */
static int src_replace_within(rctx *R, const rsrc *s, node *old, node *repl, rsrc *out)
{
    if (s->has) {
        node *parent = s->par[s->npar - 1], *np = NULL;
        int rc = replace_child(R, parent, old, repl, &np);
        if (rc == R_OK)
            rc = src_replace_current(R, s, parent, np && is_container(np) ? np : NULL, out);
        nfree(np);
        return rc;
    }
    if (old == s->root && repl && is_container(repl)) {
        node *r = root_must_be_obj(repl);
        src_set(out, r, NULL, 0, false);
        nfree(r);
        return R_OK;
    }
    bug(R, "replace in parent not possible");
    return R_ERR;
}

static int resolve(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out);

static int resolve_obj(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    if (!v->unresolved) {
        *out = nref(v);
        return R_OK;
    }
    /* restricted: only the child on the path, and not the leaf itself */
    size_t from = 0, to = v->n;
    if (rp) {
        long i = rp->n > 1 ? obj_find(v, hv_str_ptr(rp->k[0]), hv_str_len(rp->k[0])) : -1;
        if (i < 0) {
            *out = nref(v);
            return R_OK;
        }
        from = (size_t)i;
        to = from + 1;
    }
    rsrc s2;
    src_push(src, v, &s2);
    node **nv = NULL; /* new children, made on the first change; NULL entries are removed */
    int rc = R_OK;
    for (size_t i = from; i < to; i++) {
        node *c = v->items[i], *r = NULL;
        if (rp) {
            rpath sub = {rp->k + 1, rp->n - 1};
            rc = resolve(R, c, &s2, &sub, &r);
        } else {
            rc = resolve(R, c, &s2, NULL, &r);
        }
        if (rc != R_OK)
            break;
        if (r == c) {
            nfree(r);
            continue;
        }
        if (!nv) {
            nv = xmalloc(v->n * sizeof *nv);
            for (size_t j = 0; j < v->n; j++)
                nv[j] = nref(v->items[j]);
        }
        nfree(nv[i]);
        nv[i] = r;
    }
    src_free(&s2);
    if (rc != R_OK || !nv) {
        if (nv) {
            for (size_t j = 0; j < v->n; j++)
                nfree(nv[j]);
            free(nv);
        }
        *out = rc == R_OK ? nref(v) : NULL;
        return rc;
    }
    node *o = obj_new_like(v);
    for (size_t j = 0; j < v->n; j++)
        if (nv[j])
            obj_append(o, hv_incref(v->keys[j]), nv[j]);
    free(nv);
    fix_status(o);
    *out = o;
    return R_OK;
}

static int resolve_list(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    if (!v->unresolved || rp) { /* a list has no child paths to restrict to */
        *out = nref(v);
        return R_OK;
    }
    rsrc s2;
    src_push(src, v, &s2);
    node *l = nnew(N_LIST, v->line, v->col, v->org);
    bool changed = false;
    int rc = R_OK;
    for (size_t i = 0; i < v->n; i++) {
        node *r = NULL;
        rc = resolve(R, v->items[i], &s2, NULL, &r);
        if (rc == R_ERR)
            rewrap_unexpected(R->cx);
        if (rc != R_OK)
            break;
        if (r != v->items[i])
            changed = true;
        if (r)
            items_push(l, r);
    }
    src_free(&s2);
    if (rc != R_OK || !changed) {
        nfree(l);
        *out = rc == R_OK ? nref(v) : NULL;
        return rc;
    }
    *out = l;
    return R_OK;
}

/* AbstractConfigObject#attempt_peek_with_partial_resolve */
static int peek(rctx *R, node *obj, hv *key, node **out)
{
    *out = NULL;
    if (obj->kind == N_OBJ) {
        *out = obj_get(obj, key);
        return R_OK;
    }
    for (size_t i = 0; i < obj->n; i++) { /* a delayed merge object: look through its layers */
        node *layer = obj->items[i];
        if (layer->kind == N_OBJ) {
            node *c = obj_get(layer, key);
            if (c && ignores_fallbacks(c)) {
                *out = c;
                return R_OK;
            }
        } else if (is_unmergeable(layer)) {
            fail(R->cx, obj->org, obj->line, obj->col,
                 "Key '%s' is not available because a value has not been resolved and may turn out to contain or "
                 "hide it",
                 hv_str_ptr(key));
            return R_ERR;
        } else {
            /* the gem's typo (layer.resolved_status) raises NoMethodError for any other layer */
            fail_ruby(R->cx, obj->org, obj->line, obj->col, "undefined method `resolved_status'");
            return R_ERR;
        }
    }
    bug(R, "Delayed merge stack does not contain any unmergeable values");
    return R_ERR;
}

/* ResolveSource#find_in_object: resolves obj only along the path, then walks it. *found is a new
 * reference or NULL; *fs is the source to resolve it against (its root and containers). */
static int find_in_object(rctx *R, node *obj, const rpath *path, node **found, rsrc *fs)
{
    rsrc plain;
    node *partial = NULL;
    *found = NULL;
    memset(fs, 0, sizeof *fs);
    src_set(&plain, obj, NULL, 0, false);
    int rc = resolve(R, obj, &plain, path, &partial);
    src_free(&plain);
    if (rc != R_OK)
        return rc;
    if (!partial || !is_objectish(partial)) {
        nfree(partial);
        bug(R, "resolved object to non-object");
        return R_ERR;
    }
    node **chain = xmalloc(path->n * sizeof *chain);
    size_t nchain = 0;
    node *cur = partial, *c = NULL;
    chain[nchain++] = partial;
    for (size_t i = 0; i < path->n; i++) {
        rc = peek(R, cur, path->k[i], &c);
        if (rc != R_OK || i + 1 == path->n)
            break;
        if (!c || !is_objectish(c)) {
            c = NULL;
            break;
        }
        chain[nchain++] = c;
        cur = c;
    }
    if (rc == R_OK) {
        *found = nref(c);
        src_set(fs, partial, chain, nchain, true);
    }
    free(chain);
    nfree(partial);
    return rc;
}

/* the environment as the gem's ConfigImpl.env_variables_as_config_object sees it, for a one-key
 * path: NAME, or NAME.0, NAME.1, ... made into a list (which wins over NAME) */
static node *env_lookup(hv *name)
{
    const char *nm = hv_str_ptr(name);
    size_t nlen = hv_str_len(name);
    if (memchr(nm, 0, nlen) || !environ)
        return NULL;
    const char *plain = NULL;
    long *idx = NULL;
    const char **vals = NULL;
    size_t n = 0;
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t klen = (size_t)(eq - *e);
        if (klen == nlen && memcmp(*e, nm, nlen) == 0) {
            plain = eq + 1;
            continue;
        }
        /* NAME.<digits>, the digits read by Integer() (octal after a leading 0) */
        if (klen < nlen + 2 || memcmp(*e, nm, nlen) != 0 || (*e)[nlen] != '.')
            continue;
        const char *d = *e + nlen + 1;
        size_t dn = klen - nlen - 1;
        bool digits = dn > 0 && dn < 18, octal = dn > 1 && d[0] == '0';
        long v = 0;
        for (size_t i = 0; i < dn && digits; i++) {
            if (d[i] < '0' || d[i] > (octal ? '7' : '9'))
                digits = false;
            else
                v = v * (octal ? 8 : 10) + (d[i] - '0');
        }
        if (!digits)
            continue;
        size_t j = 0;
        while (j < n && idx[j] != v)
            j++;
        if (j == n) {
            idx = xrealloc(idx, (n + 1) * sizeof *idx);
            vals = xrealloc(vals, (n + 1) * sizeof *vals);
            n++;
        }
        idx[j] = v;
        vals[j] = eq + 1;
    }
    node *r = NULL;
    if (n) {
        for (size_t i = 1; i < n; i++) /* sorted by index */
            for (size_t j = i; j > 0 && idx[j - 1] > idx[j]; j--) {
                long ti = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = ti;
                const char *tv = vals[j];
                vals[j] = vals[j - 1];
                vals[j - 1] = tv;
            }
        r = nnew(N_LIST, 0, 0, NULL);
        for (size_t i = 0; i < n; i++)
            items_push(r, nstr(hv_str(vals[i]), true, 0, 0, NULL));
    } else if (plain) {
        r = nstr(hv_str(plain), true, 0, 0, NULL);
    }
    free(idx);
    free(vals);
    return r;
}

/* ResolveSource#lookup_subst: the full path, then (for an included file) the path without its
 * include prefix, then the environment */
static int lookup_subst(rctx *R, node *ref, const rsrc *src, node **found, rsrc *fs)
{
    rpath full = {ref->keys, ref->n}, bare = {ref->keys + ref->prefix, ref->n - ref->prefix};
    int rc = find_in_object(R, src->root, &full, found, fs);
    if (rc != R_OK || *found)
        return rc;
    src_free(fs);
    if (ref->prefix > 0) {
        rc = find_in_object(R, src->root, &bare, found, fs);
        if (rc != R_OK || *found)
            return rc;
        src_free(fs);
    }
    if (bare.n == 1 && (*found = env_lookup(bare.k[0])) != NULL)
        src_set(fs, *found, NULL, 0, false);
    return R_OK;
}

static char *trace_string(rctx *R)
{
    sbuf b = {0};
    for (size_t i = 0; i < R->trace.n; i++) {
        if (i)
            sb_adds(&b, ", ");
        ref_describe(&b, R->trace.v[i]);
    }
    return sb_take(&b);
}

/* ConfigReference#resolve_substitutions */
static int resolve_ref(rctx *R, node *v, const rpath *rp, const rsrc *src, node **out)
{
    node *found = NULL, *r = NULL;
    rsrc fs;
    v->marked++; /* the cycle marker */
    int rc = lookup_subst(R, v, src, &found, &fs);
    if (rc == R_OK && found)
        rc = resolve(R, found, &fs, rp, &r);
    if (rc == R_OK || found)
        src_free(&fs);
    nfree(found);
    v->marked--;
    if (rc == R_CYCLE) {
        if (v->optional) {
            rc = R_OK;
        } else if (value_render_raises(R->cx, v)) {
            rc = R_ERR;
        } else {
            sbuf d = {0};
            ref_describe(&d, v);
            fail(R->cx, v->org, v->line, v->col,
                 "Could not resolve substitution to a value: %s was part of a cycle of substitutions involving %s",
                 sb_str(&d), R->cycle ? R->cycle : "");
            sb_free(&d);
            rc = R_ERR;
        }
        free(R->cycle);
        R->cycle = NULL;
    }
    if (rc == R_OK && !r && !v->optional && value_render_raises(R->cx, v)) {
        rc = R_ERR;
    } else if (rc == R_OK && !r && !v->optional) {
        sbuf d = {0};
        ref_describe(&d, v);
        fail(R->cx, v->org, v->line, v->col, "Could not resolve substitution to a value: %s", sb_str(&d));
        sb_free(&d);
        rc = R_ERR;
    }
    *out = rc == R_OK ? r : (nfree(r), NULL);
    return rc;
}

/* ConfigConcatenation#resolve_substitutions: every piece fully, then join them */
static int resolve_concat(rctx *R, node *v, const rsrc *src, node **out)
{
    nvec got = {0}, joined = {0};
    int rc = R_OK;
    for (size_t i = 0; i < v->n && rc == R_OK; i++) {
        node *r = NULL;
        rc = resolve(R, v->items[i], src, NULL, &r);
        if (r)
            nv_push(&got, r);
    }
    if (rc == R_OK && consolidate(R->cx, got.v, got.n, &joined) < 0)
        rc = R_ERR;
    if (rc == R_OK && joined.n > 1) {
        bug(R, "Bug in the library; resolved list was joined to too many values");
        rc = R_ERR;
    }
    if (rc == R_OK && joined.n == 1) {
        *out = joined.v[0];
        joined.n = 0;
    }
    nv_free(&got);
    nv_free(&joined);
    return rc;
}

/* ConfigDelayedMerge.make_replacement: the layers from `skip` on, merged (*out NULL if none) */
static int merge_rest(rctx *R, node *m, size_t skip, node **out)
{
    node *merged = NULL;
    for (size_t i = skip; i < m->n; i++) {
        if (!merged) {
            merged = nref(m->items[i]);
        } else {
            node *x = with_fallback(R->cx, merged, m->items[i]);
            nfree(merged);
            if (!(merged = x))
                return R_ERR;
        }
    }
    *out = merged;
    return R_OK;
}

/* ConfigDelayedMerge.resolve_substitutions: each layer, newest first; a reference or a
 * concatenation is resolved against a root where this merge is replaced by the layers below it */
static int resolve_merge(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    node *merged = NULL;
    int rc = R_OK;
    for (size_t i = 0; i < v->n && rc == R_OK; i++) {
        node *e = v->items[i], *r = NULL;
        rsrc se;
        if (e->kind == N_REF || e->kind == N_CONCAT) {
            node *rest = NULL;
            rsrc tmp;
            if ((rc = merge_rest(R, v, i + 1, &rest)) != R_OK)
                break;
            rc = src_replace_within(R, src, v, rest, &tmp);
            nfree(rest);
            if (rc != R_OK)
                break;
            src_set(&se, tmp.root, NULL, 0, false); /* reset_parents */
            src_free(&tmp);
        } else if (e->kind == N_MERGE || e->kind == N_MERGEOBJ) {
            bug(R, "A delayed merge should not contain another one");
            rc = R_ERR;
            break;
        } else {
            src_push(src, v, &se);
        }
        rc = resolve(R, e, &se, rp, &r);
        src_free(&se);
        if (rc != R_OK || !r)
            continue;
        if (!merged) {
            merged = r;
        } else {
            node *x = with_fallback(R->cx, merged, r);
            nfree(merged);
            nfree(r);
            if (!(merged = x))
                rc = R_ERR;
        }
    }
    if (rc == R_OK && v->kind == N_MERGEOBJ && (!merged || !is_objectish(merged))) {
        bug(R, "Expecting a resolve result to be an object");
        rc = R_ERR;
    }
    if (rc != R_OK) {
        nfree(merged);
        merged = NULL;
    }
    *out = merged;
    return rc;
}

/* ResolveContext#resolve: *out is a new reference, or NULL for an optional substitution that
 * was not found (the value is then left out) */
static int resolve(rctx *R, node *v, const rsrc *src, const rpath *rp, node **out)
{
    *out = NULL;
    if (R->depth >= MAX_RESOLVE_DEPTH) {
        fail(R->cx, v->org, v->line, v->col, "substitutions nested more than %d levels deep", MAX_RESOLVE_DEPTH);
        return R_ERR;
    }
    if (!work(R->cx, 1 + (!rp && (v->kind == N_OBJ || v->kind == N_LIST) && v->unresolved ? v->n : 0)))
        return R_ERR;
    bool isref = v->kind == N_REF;
    int rc = R_OK;
    R->depth++;
    if (isref) {
        nv_push(&R->trace, v);
        R->nbad += ref_badpath(v);
        if (v->marked)
            rc = R_CYCLE;
    }
    if (rc == R_CYCLE) {
        /* NotPossibleToResolve renders the references being resolved when it is made (which
         * raises for some paths); the message is needed only if the reference that catches it
         * (the one resolving below this one) is not optional */
        for (size_t i = 0; i < R->trace.n && R->nbad; i++)
            if (value_render_raises(R->cx, R->trace.v[i]))
                rc = R_ERR;
        free(R->cycle);
        R->cycle = NULL;
        if (rc == R_CYCLE && R->trace.n >= 2 && !R->trace.v[R->trace.n - 2]->optional)
            R->cycle = trace_string(R);
    } else {
        switch (v->kind) {
        case N_OBJ: rc = resolve_obj(R, v, src, rp, out); break;
        case N_LIST: rc = resolve_list(R, v, src, rp, out); break;
        case N_REF: rc = resolve_ref(R, v, rp, src, out); break;
        case N_CONCAT: rc = resolve_concat(R, v, src, out); break;
        case N_MERGE:
        case N_MERGEOBJ: rc = resolve_merge(R, v, src, rp, out); break;
        default: *out = nref(v);
        }
    }
    if (rc == R_OK && *out && (*out)->unresolved && !rp) {
        bug(R, "resolve_substitutions did not give us a resolved object");
        nfree(*out);
        *out = NULL;
        rc = R_ERR;
    }
    if (isref) {
        R->trace.n--;
        R->nbad -= ref_badpath(v);
    }
    R->depth--;
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* public API                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* the resolved tree as plain data (ConfigValue#unwrapped); an entry from the document itself
 * (not from an included file) gets a key of its own carrying the line its value starts on, for
 * --provenance */
static hv *unwrap(node *v)
{
    switch (v->kind) {
    case N_OBJ: {
        hv *h = hv_hash_sized(v->n);
        if (!v->org && v->line > 0)
            hv_set_line(h, (uint32_t)v->line);
        for (size_t i = 0; i < v->n; i++) {
            hv *c = unwrap(v->items[i]);
            if (!c) {
                hv_decref(h);
                return NULL;
            }
            hv *k = v->keys[i];
            if (!v->items[i]->org && v->items[i]->line > 0) {
                k = hv_strn(hv_str_ptr(k), hv_str_len(k));
                hv_set_line(k, (uint32_t)v->items[i]->line);
            } else {
                hv_incref(k);
            }
            hv_hash_set(h, k, c);
        }
        return h;
    }
    case N_LIST: {
        hv *a = hv_array_sized(v->n);
        if (!v->org && v->line > 0)
            hv_set_line(a, (uint32_t)v->line);
        for (size_t i = 0; i < v->n; i++) {
            hv *c = unwrap(v->items[i]);
            if (!c) {
                hv_decref(a);
                return NULL;
            }
            hv_array_push(a, c);
        }
        return a;
    }
    case N_NULL:
    case N_BOOL:
    case N_NUM:
    case N_STR: return hv_incref(v->val);
    default: return NULL;
    }
}

hv *hocon_parse(const char *text, size_t len, const char *name, herr *err)
{
    hctx cx = {0};
    herr scratch = {0};
    cx.merge_loaded = delayed_merge_loaded;
    cx.err = err ? err : &scratch;
    cx.name = name ? name : "<string>";
    hv *result = NULL;
    node *root = parse_document(&cx, text ? text : "", text ? len : 0, NULL, NULL);
    if (root) {
        /* Hocon.parse merges the document over reference.conf, which the ruby gem never finds, so
         * that merge changes nothing; then resolve() */
        rctx R = {0};
        rsrc s;
        node *res = NULL;
        R.cx = &cx;
        src_set(&s, root, NULL, 0, false);
        int rc = resolve(&R, root, &s, NULL, &res);
        src_free(&s);
        if (rc == R_CYCLE)
            bug(&R, "NotPossibleToResolve was thrown from an outermost resolve");
        if (rc == R_OK && res) {
            result = unwrap(res);
            if (!result)
                bug(&R, "unresolved value after resolve");
        }
        nfree(res);
        free(R.cycle);
        free(R.trace.v);
        nfree(root);
    }
    delayed_merge_loaded = cx.merge_loaded;
    for (size_t i = 0; i < cx.norigins; i++)
        free(cx.origins[i]);
    free(cx.origins);
    if (!result && !cx.failed)
        fail(&cx, NULL, 0, 0, "could not parse");
    herr_clear(&scratch);
    return result;
}

hv *hocon_load_file(const char *path, herr *err)
{
    sbuf text = {0};
    int e = 0;
    if (!read_file(path, &text, &e)) {
        sb_free(&text);
        herr_set(err, HERR_ERROR, "Unable to read %s: %s", path, strerror(e));
        herr_at(err, path, 0, 0);
        return NULL;
    }
    hv *v = hocon_parse(sb_str(&text), text.len, path, err);
    sb_free(&text);
    return v;
}
