/* provenance.c - where each piece of a looked-up value came from.
 *
 * While a lookup runs in provenance mode, every value found in a data file is registered node by
 * node (hash, array, scalar) with the layer, hierarchy level and file it was read from; merges
 * keep the nodes they take from their inputs (deep_merge!, unique and hash merges move nodes, they
 * do not copy scalars), so after the lookup each node of the result can be looked up in the
 * registry. Containers a merge built are reported as merged, with their entries annotated one by
 * one. Singletons (true, false, nil) are boxed into private nodes when registered so that they
 * too can be told apart. */
#include "engine/provenance.h"
#include "formats/render.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *layer;
    char *level;
    char *file;
} origin;

/* What is known of one node: where it came from, and the line of the key it was found under in
 * its file (an editor's line for a hash entry; 0 for array elements and unknown lines). */
typedef struct {
    int origin;
    uint32_t key_line;
} node_info;

struct prov_registry {
    const hv **keys; /* open addressing by pointer */
    node_info *vals;
    size_t cap, n;
    origin *origins;
    size_t norigins;
};

prov_registry *prov_new(void) { return xcalloc(1, sizeof(prov_registry)); }

void prov_free(prov_registry *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->cap; i++)
        if (p->keys[i])
            hv_decref((hv *)p->keys[i]);
    free(p->keys);
    free(p->vals);
    for (size_t i = 0; i < p->norigins; i++) {
        free(p->origins[i].layer);
        free(p->origins[i].level);
        free(p->origins[i].file);
    }
    free(p->origins);
    free(p);
}

static size_t slot_of(const prov_registry *p, const hv *v)
{
    size_t i = (((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ULL) & (p->cap - 1);
    while (p->keys[i] && p->keys[i] != v)
        i = (i + 1) & (p->cap - 1);
    return i;
}

static void grow(prov_registry *p)
{
    const hv **ok = p->keys;
    node_info *ov = p->vals;
    size_t oc = p->cap;
    p->cap = oc ? oc * 2 : 256;
    p->keys = xcalloc(p->cap, sizeof *p->keys);
    p->vals = xcalloc(p->cap, sizeof *p->vals);
    for (size_t i = 0; i < oc; i++)
        if (ok[i]) {
            size_t j = slot_of(p, ok[i]);
            p->keys[j] = ok[i];
            p->vals[j] = ov[i];
        }
    free(ok);
    free(ov);
}

static const node_info *info_of(const prov_registry *p, const hv *v)
{
    if (!p->cap || !v)
        return NULL;
    size_t i = slot_of(p, v);
    return p->keys[i] ? &p->vals[i] : NULL;
}

static int find(const prov_registry *p, const hv *v)
{
    const node_info *ni = info_of(p, v);
    return ni ? ni->origin : -1;
}

static void put(prov_registry *p, hv *v, int origin_index, uint32_t key_line)
{
    if ((p->n + 1) * 2 > p->cap)
        grow(p);
    size_t i = slot_of(p, v);
    if (p->keys[i])
        return; /* the first registration wins */
    p->keys[i] = hv_incref(v); /* kept alive so that the pointer cannot be reused */
    p->vals[i] = (node_info){origin_index, key_line};
    p->n++;
}

static bool immortal(const hv *v) { return hv_is_immortal(v); }

/* Replaces the singletons inside a private container by boxed copies; returns the (possibly
 * replaced) value, a new reference. */
static hv *box(hv *v, int depth)
{
    if (depth > 1000)
        return hv_incref(v);
    if (immortal(v))
        return hv_clone_scalar(v);
    if (hv_is(v, HV_ARRAY) && !hv_is_shared(v)) {
        for (size_t i = 0; i < hv_array_len(v); i++) {
            hv *e = hv_array_get(v, i);
            hv *b = box(e, depth + 1);
            if (b != e)
                hv_array_set(v, i, b);
            else
                hv_decref(b);
        }
    } else if (hv_is(v, HV_HASH) && !hv_is_shared(v)) {
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            hv *e = hv_hash_val_at(v, i);
            hv *b = box(e, depth + 1);
            if (b != e)
                hv_hash_set(v, hv_incref(hv_hash_key_at(v, i)), b);
            else
                hv_decref(b);
        }
    }
    return hv_incref(v);
}

static void walk_register(prov_registry *p, hv *v, int o, uint32_t key_line, int depth)
{
    if (depth > 1000 || !v || immortal(v) || find(p, v) >= 0)
        return;
    put(p, v, o, key_line);
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            walk_register(p, hv_array_get(v, i), o, 0, depth + 1);
    } else if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            hv *k = hv_hash_key_at(v, i);
            walk_register(p, k, o, 0, depth + 1);
            walk_register(p, hv_hash_val_at(v, i), o, hv_line(k), depth + 1);
        }
    }
}

hv *prov_register(prov_registry *p, hv *value, const char *layer, const char *level, const char *file, uint32_t key_line)
{
    hv *boxed = box(value, 0);
    int o = -1;
    for (size_t i = 0; i < p->norigins; i++)
        if (!strcmp(p->origins[i].layer, layer) && !strcmp(p->origins[i].level, level) &&
            !strcmp(p->origins[i].file, file ? file : ""))
            o = (int)i;
    if (o < 0) {
        p->origins = xrealloc(p->origins, (p->norigins + 1) * sizeof *p->origins);
        p->origins[p->norigins] = (origin){xstrdup(layer), xstrdup(level), xstrdup(file ? file : "")};
        o = (int)p->norigins++;
    }
    walk_register(p, boxed, o, key_line, 0);
    return boxed;
}

/* ------------------------------------------------------------------ reports */

static void scalar_text(sbuf *b, const hv *v)
{
    if (hv_is(v, HV_SENSITIVE)) {
        sb_adds(b, "Sensitive [value redacted]");
        return;
    }
    herr e = {0};
    size_t before = b->len;
    if (render_json(b, v, &e) != 0) {
        b->len = before;
        if (b->s)
            b->s[before] = 0;
        ruby_inspect(b, v);
    }
    herr_clear(&e);
}

/* The origin of a node: its own, or for a container a merge built, the one origin all of its
 * entries share (-1: none known, -2: several). */
static int origin_of(const prov_registry *p, const hv *v, int depth)
{
    int o = find(p, v);
    if (o >= 0 || depth > 100)
        return o;
    if (!(hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY)))
        return -1;
    int common = -1;
    size_t n = hv_is(v, HV_HASH) ? hv_hash_len(v) : hv_array_len(v);
    for (size_t i = 0; i < n; i++) {
        int c = origin_of(p, hv_is(v, HV_HASH) ? hv_hash_val_at(v, i) : hv_array_get(v, i), depth + 1);
        if (c < 0)
            return -2;
        if (common >= 0 && c != common)
            return -2;
        common = c;
    }
    return common;
}

/* The line to show for node v of origin o, found under key (NULL for the top value and array
 * elements): a hash entry's line is its key's, as an editor would want ("alice:" rather than the
 * first line of alice's value). The key object of the entry tells when it came from the same file
 * (a merge may keep the key of one file with the value of another); else the line of the key v
 * was registered under; else v's own line. 0 when unknown. */
static uint32_t line_of(const prov_registry *p, const hv *v, const hv *key, int o)
{
    if (key && hv_line(key) && find(p, key) == o)
        return hv_line(key);
    const node_info *ni = info_of(p, v);
    if (ni && ni->origin == o && ni->key_line)
        return ni->key_line;
    return hv_line(v);
}

static void annotation(const prov_registry *p, const hv *v, const hv *key, sbuf *b)
{
    int o = origin_of(p, v, 0);
    if (o >= 0) {
        const origin *org = &p->origins[o];
        sb_addf(b, "%s, %s", org->layer, org->level);
        if (*org->file) {
            sb_addf(b, ", %s", org->file);
            uint32_t line = line_of(p, v, key, o);
            if (line)
                sb_addf(b, ":%u", (unsigned)line);
        }
    } else if (hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY)) {
        sb_adds(b, "merged");
    } else {
        sb_adds(b, "not from data (a default or a converted value)");
    }
}

typedef struct {
    char **text, **note;
    size_t n, cap;
} lines;

static void add_line(lines *l, char *text, char *note)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 32;
        l->text = xrealloc(l->text, l->cap * sizeof *l->text);
        l->note = xrealloc(l->note, l->cap * sizeof *l->note);
    }
    l->text[l->n] = text;
    l->note[l->n] = note;
    l->n++;
}

static void text_node(const prov_registry *p, lines *l, const hv *v, const hv *key, const char *lead, int indent, int depth)
{
    sbuf t = {0}, n = {0};
    for (int i = 0; i < indent; i++)
        sb_addc(&t, ' ');
    sb_adds(&t, lead);
    bool container = (hv_is(v, HV_HASH) && hv_hash_len(v)) || (hv_is(v, HV_ARRAY) && hv_array_len(v));
    if (!container || depth > 100) {
        if (*lead)
            sb_addc(&t, ' ');
        scalar_text(&t, v);
    }
    annotation(p, v, key, &n);
    add_line(l, sb_take(&t), sb_take(&n));
    if (!container || depth > 100)
        return;
    if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            sbuf k = {0};
            scalar_text(&k, hv_hash_key_at(v, i));
            sb_addc(&k, ':');
            text_node(p, l, hv_hash_val_at(v, i), hv_hash_key_at(v, i), sb_str(&k), indent + 2, depth + 1);
            sb_free(&k);
        }
    } else {
        for (size_t i = 0; i < hv_array_len(v); i++)
            text_node(p, l, hv_array_get(v, i), NULL, "-", indent + 2, depth + 1);
    }
}

char *prov_render_text(const prov_registry *p, const char *key, const hv *value)
{
    lines l = {0};
    sbuf lead = {0};
    sb_addf(&lead, "%s:", key);
    text_node(p, &l, value, NULL, sb_str(&lead), 0, 0);
    sb_free(&lead);
    size_t width = 0;
    for (size_t i = 0; i < l.n; i++)
        if (strlen(l.text[i]) > width)
            width = strlen(l.text[i]);
    if (width > 60)
        width = 60;
    sbuf out = {0};
    for (size_t i = 0; i < l.n; i++) {
        sb_adds(&out, l.text[i]);
        for (size_t w = strlen(l.text[i]); w < width; w++)
            sb_addc(&out, ' ');
        sb_adds(&out, "  # ");
        sb_adds(&out, l.note[i]);
        sb_addc(&out, '\n');
        free(l.text[i]);
        free(l.note[i]);
    }
    free(l.text);
    free(l.note);
    return sb_take(&out);
}

static hv *tree_node(const prov_registry *p, const hv *v, const hv *key, int depth)
{
    hv *n = hv_hash();
    int o = origin_of(p, v, 0);
    if (o >= 0) {
        const origin *org = &p->origins[o];
        hv_hash_sets(n, "layer", hv_str(org->layer));
        hv_hash_sets(n, "level", hv_str(org->level));
        if (*org->file) {
            hv_hash_sets(n, "file", hv_str(org->file));
            uint32_t line = line_of(p, v, key, o);
            if (line)
                hv_hash_sets(n, "line", hv_int(line));
        }
    } else if (hv_is(v, HV_HASH) || hv_is(v, HV_ARRAY)) {
        hv_hash_sets(n, "merged", hv_true());
    } else {
        hv_hash_sets(n, "from_data", hv_false());
    }
    if (depth > 100)
        return n;
    if (hv_is(v, HV_HASH)) {
        hv *entries = hv_hash();
        for (size_t i = 0; i < hv_hash_len(v); i++)
            hv_hash_set(entries, hv_incref(hv_hash_key_at(v, i)), tree_node(p, hv_hash_val_at(v, i), hv_hash_key_at(v, i), depth + 1));
        hv_hash_sets(n, "entries", entries);
    } else if (hv_is(v, HV_ARRAY)) {
        hv *elements = hv_array();
        for (size_t i = 0; i < hv_array_len(v); i++)
            hv_array_push(elements, tree_node(p, hv_array_get(v, i), NULL, depth + 1));
        hv_hash_sets(n, "elements", elements);
    } else {
        hv_hash_sets(n, "value", hv_is(v, HV_SENSITIVE) ? hv_str("Sensitive [value redacted]") : hv_incref((hv *)v));
    }
    return n;
}

hv *prov_to_value(const prov_registry *p, const char *key, const hv *value)
{
    hv *h = hv_hash();
    hv_hash_sets(h, "key", hv_str(key));
    hv_hash_sets(h, "value", hv_is(value, HV_SENSITIVE) ? hv_str("Sensitive [value redacted]") : hv_incref((hv *)value));
    hv_hash_sets(h, "provenance", tree_node(p, value, NULL, 0));
    return h;
}
