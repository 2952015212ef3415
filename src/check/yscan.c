/* yscan.c - every document of a YAML text as libyaml's events give it, with marks (yscan.h).
 *
 * Nodes live in an arena freed at once with the document. Collections are built with an
 * explicit stack (no recursion), nesting capped as the loader caps it. */
#include "check/yscan.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/util.h"

#define YS_MAX_DEPTH 1000

/* ------------------------------------------------------------------ arena */

typedef struct ys_chunk {
    struct ys_chunk *next;
    size_t used, cap;
    max_align_t data[];
} ys_chunk;

struct ys_arena {
    ys_chunk *head;
};

static void *arena_alloc(struct ys_arena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    ys_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = xmalloc(sizeof *c + cap);
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static const char *arena_strn(struct ys_arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* ------------------------------------------------------------------ the key index
 * A mapping of YS_INDEX_MIN entries or more gets its scalar keys' entry numbers sorted by text
 * (length, bytes, then entry number), so that ys_map_get/ys_map_key find a key by binary search:
 * the rules ask for every key of a file, and a linear scan made that quadratic in its keys. */

#define YS_INDEX_MIN 8

static int key_cmp(const ysnode *a, uint32_t ai, const ysnode *b, uint32_t bi)
{
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    int r = a->len ? memcmp(a->text, b->text, a->len) : 0;
    return r ? r : ai < bi ? -1 : ai > bi;
}

typedef struct {
    const ysnode *key;
    uint32_t entry;
} key_ent;

static int key_ent_cmp(const void *x, const void *y)
{
    const key_ent *a = x, *b = y;
    return key_cmp(a->key, a->entry, b->key, b->entry);
}

static void index_map(ysdoc *d, ysnode *m)
{
    uint32_t entries = m->n / 2, nk = 0;
    if (m->kind != YS_MAP || entries < YS_INDEX_MIN)
        return;
    key_ent *v = xmalloc(entries * sizeof *v);
    for (uint32_t i = 0; i < entries; i++)
        if (m->kids[2 * i]->kind == YS_SCALAR)
            v[nk++] = (key_ent){m->kids[2 * i], i};
    qsort(v, nk, sizeof *v, key_ent_cmp);
    m->index = arena_alloc(d->arena, (nk ? nk : 1) * sizeof *m->index);
    for (uint32_t i = 0; i < nk; i++)
        m->index[i] = v[i].entry;
    m->nindex = nk;
    free(v);
}

/* The entry number of key in m (the last when repeated), or UINT32_MAX. */
static uint32_t map_find(const ysnode *m, const char *key)
{
    if (!m || m->kind != YS_MAP)
        return UINT32_MAX;
    size_t kl = strlen(key);
    uint32_t found = UINT32_MAX;
    if (!m->index) {
        for (uint32_t i = 0; i + 1 < m->n; i += 2) {
            const ysnode *k = m->kids[i];
            if (k->kind == YS_SCALAR && k->len == kl && memcmp(k->text, key, kl) == 0)
                found = i / 2;
        }
        return found;
    }
    /* the first index position whose key is not below key, then the last equal one */
    uint32_t lo = 0, hi = m->nindex;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const ysnode *k = m->kids[2 * m->index[mid]];
        int r = k->len != kl ? (k->len < kl ? -1 : 1) : kl ? memcmp(k->text, key, kl) : 0;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t i = lo; i < m->nindex; i++) {
        const ysnode *k = m->kids[2 * m->index[i]];
        if (k->len != kl || memcmp(k->text, key, kl) != 0)
            break;
        found = m->index[i];
    }
    return found;
}

/* ------------------------------------------------------------------ building */

/* A collection being filled: its children gathered in a growable array, copied into the arena
 * when it ends. */
typedef struct {
    ysnode *node;
    ysnode **kids;
    uint32_t n, cap;
} open_coll;

static ysnode *new_node(ysdoc *d, ys_kind kind, const yaml_event_t *ev)
{
    ysnode *n = arena_alloc(d->arena, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = (uint32_t)ev->start_mark.line + 1;
    n->col = (uint32_t)ev->start_mark.column + 1;
    n->eline = (uint32_t)ev->end_mark.line + 1;
    n->ecol = (uint32_t)ev->end_mark.column + 1;
    const yaml_char_t *tag = NULL, *anchor = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        tag = ev->data.scalar.tag;
        anchor = ev->data.scalar.anchor;
        n->text = arena_strn(d->arena, (const char *)ev->data.scalar.value, ev->data.scalar.length);
        n->len = ev->data.scalar.length;
        switch (ev->data.scalar.style) {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: n->style = YS_SINGLE; break;
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: n->style = YS_DOUBLE; break;
        case YAML_LITERAL_SCALAR_STYLE: n->style = YS_LITERAL; break;
        case YAML_FOLDED_SCALAR_STYLE: n->style = YS_FOLDED; break;
        default: n->style = YS_PLAIN; break;
        }
        break;
    case YAML_SEQUENCE_START_EVENT:
        tag = ev->data.sequence_start.tag;
        anchor = ev->data.sequence_start.anchor;
        n->style = ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE ? YS_FLOW : YS_BLOCK;
        break;
    case YAML_MAPPING_START_EVENT:
        tag = ev->data.mapping_start.tag;
        anchor = ev->data.mapping_start.anchor;
        n->style = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE ? YS_FLOW : YS_BLOCK;
        break;
    case YAML_ALIAS_EVENT:
        n->text = arena_strn(d->arena, (const char *)ev->data.alias.anchor, strlen((const char *)ev->data.alias.anchor));
        n->len = strlen(n->text);
        break;
    default:
        break;
    }
    if (tag)
        n->tag = arena_strn(d->arena, (const char *)tag, strlen((const char *)tag));
    if (anchor)
        n->anchor = arena_strn(d->arena, (const char *)anchor, strlen((const char *)anchor));
    return n;
}

static void attach(ysdoc *d, open_coll *stack, size_t depth, ysnode *n)
{
    if (depth == 0) {
        d->docs[d->ndocs - 1] = n;
        return;
    }
    open_coll *o = &stack[depth - 1];
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 8;
        o->kids = xrealloc(o->kids, o->cap * sizeof *o->kids);
    }
    o->kids[o->n++] = n;
}

ysdoc *ys_parse(const char *text, size_t len)
{
    ysdoc *d = xcalloc(1, sizeof *d);
    d->arena = xcalloc(1, sizeof *d->arena);
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        d->failed = true;
        d->error = xstrdup("failed to allocate memory");
        return d;
    }
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&p, (const unsigned char *)(text ? text : ""), text ? len : 0);
    open_coll *stack = NULL;
    size_t depth = 0, cap = 0, dcap = 0;
    bool done = false;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            d->failed = true;
            const yaml_mark_t *m = p.context ? &p.context_mark : &p.problem_mark;
            if (p.problem_mark.line || p.problem_mark.column)
                m = &p.problem_mark;
            d->err_line = (uint32_t)m->line + 1;
            d->err_col = (uint32_t)m->column + 1;
            d->error = p.context ? xasprintf("%s %s", p.problem ? p.problem : "syntax error", p.context)
                                 : xstrdup(p.problem ? p.problem : "syntax error");
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (d->ndocs == dcap) {
                dcap = dcap ? dcap * 2 : 2;
                d->docs = xrealloc(d->docs, dcap * sizeof *d->docs);
            }
            d->docs[d->ndocs++] = NULL;
            break;
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
            attach(d, stack, depth, new_node(d, ev.type == YAML_SCALAR_EVENT ? YS_SCALAR : YS_ALIAS, &ev));
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            if (depth >= YS_MAX_DEPTH) {
                d->failed = true;
                d->err_line = (uint32_t)ev.start_mark.line + 1;
                d->err_col = (uint32_t)ev.start_mark.column + 1;
                d->error = xasprintf("nesting deeper than %d levels", YS_MAX_DEPTH);
                done = true;
                break;
            }
            ysnode *n = new_node(d, ev.type == YAML_SEQUENCE_START_EVENT ? YS_SEQ : YS_MAP, &ev);
            attach(d, stack, depth, n);
            if (depth == cap) {
                cap = cap ? cap * 2 : 16;
                stack = xrealloc(stack, cap * sizeof *stack);
            }
            stack[depth++] = (open_coll){n, NULL, 0, 0};
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth) {
                open_coll *o = &stack[--depth];
                o->node->n = o->n;
                if (o->n) {
                    o->node->kids = arena_alloc(d->arena, o->n * sizeof *o->node->kids);
                    memcpy(o->node->kids, o->kids, o->n * sizeof *o->kids);
                }
                o->node->eline = (uint32_t)ev.end_mark.line + 1;
                o->node->ecol = (uint32_t)ev.end_mark.column + 1;
                free(o->kids);
                index_map(d, o->node);
            }
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    /* collections left open by an error keep the children read so far */
    while (depth) {
        open_coll *o = &stack[--depth];
        o->node->n = o->n;
        if (o->n) {
            o->node->kids = arena_alloc(d->arena, o->n * sizeof *o->node->kids);
            memcpy(o->node->kids, o->kids, o->n * sizeof *o->kids);
        }
        free(o->kids);
        index_map(d, o->node);
    }
    free(stack);
    yaml_parser_delete(&p);
    return d;
}

void ys_free(ysdoc *d)
{
    if (!d)
        return;
    for (ys_chunk *c = d->arena->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(d->arena);
    free(d->docs);
    free(d->error);
    free(d);
}

const ysnode *ys_map_key(const ysnode *m, const char *key)
{
    uint32_t e = map_find(m, key);
    return e == UINT32_MAX ? NULL : m->kids[2 * e];
}

const ysnode *ys_map_get(const ysnode *m, const char *key)
{
    uint32_t e = map_find(m, key);
    return e == UINT32_MAX ? NULL : m->kids[2 * e + 1];
}
