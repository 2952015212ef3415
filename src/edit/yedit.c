/* yedit.c - byte-preserving edits of YAML data files (include/hiera.h: hiera_edit_text).
 *
 * libyaml's events carry a start and an end mark for every scalar, sequence and mapping, so an
 * edit can replace exactly the bytes of one entry and leave everything else as it was: comments
 * (above and beside the key too), blank lines, key order, indentation, quoting, document markers,
 * line endings. The file is read into a tree of nodes with their byte ranges (libyaml counts
 * characters: the marks are turned into byte offsets here), the key's path is followed from the
 * root mapping, and one range of the text is replaced: a value, a whole entry (unset), or nothing
 * by a new entry after the mapping's last one. What cannot be edited exactly is refused with the
 * line and the reason, never rewritten: the key defined twice in a mapping on the way, a merge
 * key, an anchor or alias in the way, a flow mapping to edit inside, a document that is not a
 * hash. Every result is read back with Puppet's YAML rules (formats/psych.h) and must equal the
 * old document with the key replaced; if it does not, the edit is refused too. */
#include "hiera.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/error.h"
#include "base/util.h"
#include "base/value.h"
#include "edit/emit.h"
#include "engine/engine.h"
#include "formats/psych.h"

/* ------------------------------------------------------------------ the tree */

typedef enum { YN_SCALAR, YN_SEQ, YN_MAP, YN_ALIAS } yn_kind;
enum { YN_BLOCK = 1, YN_FLOW = 2 }; /* collections' style */

typedef struct ynode {
    yn_kind kind;
    int style;          /* scalars: yaml_scalar_style_t; collections: YN_BLOCK or YN_FLOW */
    size_t start, end;  /* bytes: from the node's first byte (its anchor or tag when it has one) to
                           just past it; a block collection ends where its last item ends */
    char *anchor, *tag; /* or NULL */
    char *text;         /* a scalar's value, an alias' name */
    size_t len;
    struct ynode **kids; /* a sequence's items; a mapping's keys and values, alternating */
    size_t n, cap;
} ynode;

typedef struct {
    const char *t;
    size_t len;
    size_t ci, bi;      /* where the last mark was: its character index and byte offset */
    size_t bom;         /* bytes of a UTF-8 byte order mark (a character for libyaml, not part of a line) */
    ynode *root;        /* the first document's root, or NULL when there is no document */
    bool explicit_start;
    size_t start_end;   /* just past the first document's "---" */
    ynode **aliases;
    size_t naliases, capaliases;
} ytree;

static void ynode_free(ynode *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        ynode_free(n->kids[i]);
    free(n->kids);
    free(n->anchor);
    free(n->tag);
    free(n->text);
    free(n);
}

/* The byte offset of character index ci (libyaml's mark.index), walking from the last one. */
static size_t byte_of(ytree *y, size_t ci)
{
    while (y->ci < ci && y->bi < y->len) {
        unsigned char c = (unsigned char)y->t[y->bi];
        y->bi += c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
        if (y->bi > y->len)
            y->bi = y->len;
        y->ci++;
    }
    while (y->ci > ci && y->bi > 0) {
        y->bi--;
        while (y->bi > 0 && ((unsigned char)y->t[y->bi] & 0xC0) == 0x80)
            y->bi--;
        y->ci--;
    }
    return y->bi;
}

static char *dup_opt(const yaml_char_t *s) { return s ? xstrdup((const char *)s) : NULL; }

static void add_kid(ynode *parent, ynode *kid)
{
    if (parent->n == parent->cap) {
        parent->cap = parent->cap ? parent->cap * 2 : 8;
        parent->kids = xrealloc(parent->kids, parent->cap * sizeof *parent->kids);
    }
    parent->kids[parent->n++] = kid;
}

/* Reads the first document into y (the text parsed before with Puppet's rules, so libyaml
 * accepts it and the nesting is bounded). false with err when libyaml fails anyway. */
static bool ytree_build(ytree *y, const char *name, herr *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        herr_set(err, HERR_ERROR, "out of memory");
        return false;
    }
    yaml_parser_set_encoding(&p, YAML_UTF8_ENCODING);
    yaml_parser_set_input_string(&p, (const unsigned char *)y->t, y->len);
    ynode **stack = NULL;
    size_t depth = 0, cap = 0;
    bool ok = true, done = false;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            herr_set(err, HERR_ERROR, "(%s): %s at line %zu column %zu", name, p.problem ? p.problem : "syntax error",
                     p.problem_mark.line + 1, p.problem_mark.column + 1);
            ok = false;
            break;
        }
        ynode *node = NULL;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            y->explicit_start = !ev.data.document_start.implicit;
            y->start_end = byte_of(y, ev.end_mark.index);
            break;
        case YAML_DOCUMENT_END_EVENT:
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            node = xcalloc(1, sizeof *node);
            node->start = byte_of(y, ev.start_mark.index);
            if (ev.type == YAML_SCALAR_EVENT) {
                node->kind = YN_SCALAR;
                node->style = ev.data.scalar.style;
                node->anchor = dup_opt(ev.data.scalar.anchor);
                node->tag = dup_opt(ev.data.scalar.tag);
                node->text = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
                node->len = ev.data.scalar.length;
                node->end = byte_of(y, ev.end_mark.index);
            } else if (ev.type == YAML_ALIAS_EVENT) {
                node->kind = YN_ALIAS;
                node->text = dup_opt(ev.data.alias.anchor);
                node->len = node->text ? strlen(node->text) : 0;
                node->end = byte_of(y, ev.end_mark.index);
                if (y->naliases == y->capaliases) {
                    y->capaliases = y->capaliases ? y->capaliases * 2 : 8;
                    y->aliases = xrealloc(y->aliases, y->capaliases * sizeof *y->aliases);
                }
                y->aliases[y->naliases++] = node;
            } else if (ev.type == YAML_SEQUENCE_START_EVENT) {
                node->kind = YN_SEQ;
                node->style = ev.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE ? YN_FLOW : YN_BLOCK;
                node->anchor = dup_opt(ev.data.sequence_start.anchor);
                node->tag = dup_opt(ev.data.sequence_start.tag);
            } else {
                node->kind = YN_MAP;
                node->style = ev.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE ? YN_FLOW : YN_BLOCK;
                node->anchor = dup_opt(ev.data.mapping_start.anchor);
                node->tag = dup_opt(ev.data.mapping_start.tag);
            }
            if (depth)
                add_kid(stack[depth - 1], node);
            else if (!y->root)
                y->root = node;
            else
                ynode_free(node); /* (never: one root per document) */
            if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
                if (depth == cap) {
                    cap = cap ? cap * 2 : 32;
                    stack = xrealloc(stack, cap * sizeof *stack);
                }
                stack[depth++] = node;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth) {
                ynode *c = stack[--depth];
                if (c->style == YN_FLOW)
                    c->end = byte_of(y, ev.end_mark.index);
                else
                    c->end = c->n ? c->kids[c->n - 1]->end : c->start;
            }
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    free(stack);
    yaml_parser_delete(&p);
    return ok;
}

/* ------------------------------------------------------------------ lines */

static bool is_break(char c) { return c == '\n' || c == '\r'; }

static size_t lstart(const ytree *y, size_t pos)
{
    while (pos > 0 && !is_break(y->t[pos - 1]))
        pos--;
    return pos < y->bom ? y->bom : pos; /* (a byte order mark is no part of the first line) */
}

static size_t lend(const ytree *y, size_t pos)
{
    while (pos < y->len && !is_break(y->t[pos]))
        pos++;
    return pos;
}

/* past the line break at pos (the end of a line), or pos at the end of the text */
static size_t past_break(const ytree *y, size_t pos)
{
    if (pos < y->len && y->t[pos] == '\r') {
        pos++;
        if (pos < y->len && y->t[pos] == '\n')
            pos++;
    } else if (pos < y->len && y->t[pos] == '\n') {
        pos++;
    }
    return pos;
}

static size_t lnext(const ytree *y, size_t pos) { return past_break(y, lend(y, pos)); }

/* 1-based line of pos */
static int line_of(const ytree *y, size_t pos)
{
    int line = 1;
    for (size_t i = 0; i < pos && i < y->len; i++)
        if (y->t[i] == '\n' || (y->t[i] == '\r' && (i + 1 >= y->len || y->t[i + 1] != '\n')))
            line++;
    return line;
}

static bool blank_between(const ytree *y, size_t a, size_t b)
{
    for (size_t i = a; i < b; i++)
        if (y->t[i] != ' ' && y->t[i] != '\t')
            return false;
    return true;
}

/* The end of a node's text on its last line: a block scalar's last line (without the blank lines
 * a clipped or stripped one ends with: they are not its content), a block collection's last
 * item's, any other node's end. */
static size_t content_end(const ytree *y, const ynode *n)
{
    if ((n->kind == YN_SEQ || n->kind == YN_MAP) && n->style == YN_BLOCK && n->n)
        return content_end(y, n->kids[n->n - 1]);
    if (n->kind != YN_SCALAR || (n->style != YAML_LITERAL_SCALAR_STYLE && n->style != YAML_FOLDED_SCALAR_STYLE))
        return n->end;
    size_t e = n->end;
    if (e > n->start && is_break(y->t[e - 1])) {
        e--;
        if (e > n->start && y->t[e] == '\n' && y->t[e - 1] == '\r')
            e--;
    }
    /* keep chomping ("|+"): the trailing blank lines are content */
    size_t hdr = lend(y, n->start);
    bool keep = memchr(y->t + n->start, '+', hdr - n->start) != NULL;
    while (!keep && e > hdr) {
        size_t ls = lstart(y, e);
        if (ls <= hdr || !blank_between(y, ls, e))
            break;
        e = ls - 1; /* the previous line's end (its break) */
        if (e > hdr && y->t[e] == '\n' && y->t[e - 1] == '\r')
            e--;
    }
    return e < hdr ? hdr : e;
}

/* ------------------------------------------------------------------ keys */

/* A mapping key as Hiera reads it: a string (a plain scalar resolved as Psych resolves it, a
 * symbol's name: data keys that are symbols become strings), or NULL for a key of another kind. */
static char *key_string(const ynode *k)
{
    if (k->kind != YN_SCALAR)
        return NULL;
    if (k->tag) {
        if (!strcmp(k->tag, "tag:yaml.org,2002:str") || !strcmp(k->tag, "!") || !strcmp(k->tag, "!ruby/symbol") ||
            !strcmp(k->tag, "!ruby/sym"))
            return xstrndup(k->text, k->len);
        return NULL;
    }
    if (k->style != YAML_PLAIN_SCALAR_STYLE)
        return xstrndup(k->text, k->len);
    herr e = {0};
    hv *v = yaml_plain_scalar(k->text, k->len, &e);
    herr_clear(&e);
    char *s = v && (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)) ? xstrndup(hv_str_ptr(v), hv_str_len(v)) : NULL;
    hv_decref(v);
    return s;
}

static bool is_merge_key(const ynode *k)
{
    return k->kind == YN_SCALAR && !k->tag && k->style == YAML_PLAIN_SCALAR_STYLE && k->len == 2 && !memcmp(k->text, "<<", 2);
}

/* a plain null: "", "~", "null", "Null", "NULL" (no tag, no anchor) */
static bool is_null(const ynode *n)
{
    if (n->kind != YN_SCALAR || n->tag || n->anchor || n->style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    return n->len == 0 || !strcmp(n->text, "~") || !strcmp(n->text, "null") || !strcmp(n->text, "Null") ||
           !strcmp(n->text, "NULL");
}

static bool is_empty_flow_map(const ynode *n) { return n->kind == YN_MAP && n->style == YN_FLOW && n->n == 0; }

/* ------------------------------------------------------------------ the edit */

typedef struct {
    ytree y;
    const char *name;
    emit_style st;
    herr *err;
    /* the one change: [a, b) of the old text replaced by repl */
    size_t a, b;
    sbuf repl;
    bool wide; /* a removed entry takes the blank lines after it along */
} editor;

static bool refuse(editor *ed, size_t pos, const char *fmt, ...) HIERA_PRINTF(3, 4);
static bool refuse(editor *ed, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    herr_setv(ed->err, HERR_ERROR, fmt, ap);
    va_end(ap);
    int line = line_of(&ed->y, pos);
    size_t ls = lstart(&ed->y, pos);
    herr_at(ed->err, ed->name, line, (int)(pos - ls) + 1);
    return false;
}

/* The emitter's error (in ed->err) as the refusal at pos. */
static bool refuse_unwritable(editor *ed, size_t pos)
{
    char *msg = ed->err->msg;
    ed->err->msg = NULL;
    refuse(ed, pos, "%s", msg ? msg : "the value cannot be written");
    free(msg);
    return false;
}

static const char *kind_word(const ynode *n)
{
    switch (n->kind) {
    case YN_SEQ: return "an array";
    case YN_MAP: return "a hash";
    case YN_ALIAS: return "an alias";
    default: return n->style == YAML_PLAIN_SCALAR_STYLE && is_null(n) ? "empty (undef)" : "a scalar";
    }
}

/* Whether an alias anywhere names this anchor (then changing what it anchors changes that too). */
static const ynode *alias_of(const ytree *y, const char *anchor, size_t outside_a, size_t outside_b)
{
    if (!anchor)
        return NULL;
    for (size_t i = 0; i < y->naliases; i++) {
        const ynode *al = y->aliases[i];
        if (al->text && !strcmp(al->text, anchor) && (al->start < outside_a || al->start >= outside_b))
            return al;
    }
    return NULL;
}

/* An anchor defined in [a, b) that an alias outside it uses. */
static bool anchors_used_outside(editor *ed, const ynode *n, size_t a, size_t b)
{
    if (n->start >= a && n->start < b && n->anchor) {
        const ynode *al = alias_of(&ed->y, n->anchor, a, b);
        if (al)
            return !refuse(ed, n->start, "the anchor &%s is used by an alias at line %d: removing it would break that",
                           n->anchor, line_of(&ed->y, al->start));
    }
    for (size_t i = 0; i < n->n; i++)
        if (anchors_used_outside(ed, n->kids[i], a, b))
            return true;
    return false;
}

/* A container the edit changes: refused when an alias shows it elsewhere too. */
static bool anchored_in_the_way(editor *ed, const ynode *n)
{
    const ynode *al = alias_of(&ed->y, n->anchor, 0, 0);
    if (al)
        return !refuse(ed, n->start, "the anchor &%s is used by an alias at line %d: changing it would change that too",
                       n->anchor, line_of(&ed->y, al->start));
    return false;
}

/* Just past the ':' of a key (on the key's line), or 0 when there is none there. */
static size_t colon_after(const ytree *y, const ynode *k)
{
    size_t p = k->end;
    while (p < y->len && (y->t[p] == ' ' || y->t[p] == '\t'))
        p++;
    return p < y->len && y->t[p] == ':' ? p + 1 : 0;
}

/* The entry of key k: it must start its line (no "? key", nothing before it). */
static bool entry_ok(editor *ed, const ynode *k, size_t *colon)
{
    size_t ls = lstart(&ed->y, k->start);
    if (!blank_between(&ed->y, ls, k->start))
        return refuse(ed, k->start, "the key does not start its line");
    if (k->kind != YN_SCALAR || !(*colon = colon_after(&ed->y, k)))
        return refuse(ed, k->start, "the key is not a simple key followed by ':' on its line");
    return true;
}

/* the end of the entry's text on its last line (an empty value: the colon) */
static size_t entry_content_end(const ytree *y, const ynode *v, size_t colon)
{
    return (v->kind == YN_SCALAR && v->len == 0 && v->start == v->end && !v->tag && !v->anchor) ? colon : content_end(y, v);
}

/* The style a replaced value keeps: its scalar style, or flow for a flow collection. */
static emit_scalar_style kept_style(const ynode *v, bool *flow)
{
    *flow = (v->kind == YN_SEQ || v->kind == YN_MAP) && v->style == YN_FLOW;
    if (v->kind != YN_SCALAR || is_null(v) || v->tag)
        return EMIT_ANY;
    return (emit_scalar_style)v->style;
}

/* the comment on the line from pos on, with the blanks before it ("   # ..."), or NULL */
static const char *comment_from(const ytree *y, size_t pos, size_t *n)
{
    size_t e = lend(y, pos);
    for (size_t i = pos; i < e; i++)
        if (y->t[i] == '#' && (i == pos || y->t[i - 1] == ' ' || y->t[i - 1] == '\t')) {
            size_t b = i;
            while (b > pos && (y->t[b - 1] == ' ' || y->t[b - 1] == '\t'))
                b--;
            if (b == i)
                return NULL; /* ("key:#x" is no comment) */
            *n = e - b;
            return y->t + b;
        }
    *n = 0;
    return NULL;
}

static size_t column(const ytree *y, size_t pos) { return pos - lstart(y, pos); }

/* Replaces the value v of key k (indentation of the mapping: key_col) with nv. flow_ok: the new
 * value may keep a flow style (not when it replaces a placeholder to edit inside). */
static bool replace_value(editor *ed, const ynode *k, const ynode *v, const hv *nv, bool flow_ok)
{
    ytree *y = &ed->y;
    size_t colon;
    if (!entry_ok(ed, k, &colon))
        return false;
    size_t key_col = column(y, k->start);
    bool empty = v->kind == YN_SCALAR && v->len == 0 && v->start == v->end && !v->tag && !v->anchor;
    bool flow = false;
    emit_scalar_style style = kept_style(v, &flow);
    flow = flow && flow_ok;
    size_t cend = entry_content_end(y, v, colon);
    bool multi_line = !empty && lstart(y, cend) != lstart(y, v->start);
    bool same_line = empty || lstart(y, v->start) == lstart(y, k->start);
    sbuf text = {0};
    /* a block scalar for a block scalar: at the old one's indentation (the lines after it may
     * count on it) */
    emit_style st = ed->st;
    if (v->kind == YN_SCALAR && (v->style == YAML_LITERAL_SCALAR_STYLE || v->style == YAML_FOLDED_SCALAR_STYLE)) {
        for (size_t p = lnext(y, v->start); p < v->end; p = lnext(y, p)) {
            size_t q = p;
            while (q < y->len && y->t[q] == ' ')
                q++;
            if (q < y->len && !is_break(y->t[q])) {
                if (q - p > key_col)
                    st.step = q - p - key_col;
                break;
            }
        }
    }
    /* what follows the key's ':' for the new value (" value" or eol + block lines) */
    if (!emit_after_key(&text, nv, key_col, &st, style, flow, ed->err)) {
        sb_free(&text);
        return refuse_unwritable(ed, k->start);
    }
    herr_clear(ed->err);
    bool inline_new = text.len == 0 || text.s[0] == ' ';
    size_t cn = 0;
    if (same_line && inline_new) {
        if (empty) {
            /* "key:" or "key: # c" -> "key: new # c" */
            ed->a = ed->b = colon;
            sb_addn(&ed->repl, text.s, text.len);
        } else {
            /* "key:   old # c" -> "key:   new # c": the blanks before and the comment after stay
             * (a value over several lines: up to the end of its last line) */
            bool spaced = v->start > colon;
            ed->a = spaced ? v->start : colon;
            ed->b = multi_line ? lend(y, cend) : v->end;
            sb_addn(&ed->repl, text.s + spaced, text.len - spaced);
            if (!multi_line && ed->b < y->len && y->t[ed->b] == '#')
                sb_addc(&ed->repl, ' '); /* ("x"# c: after a plain scalar the '#' would be text) */
        }
    } else if (same_line) {
        /* a block under the key: the comment of the key's line stays on it */
        const char *c = empty ? comment_from(y, colon, &cn) : !multi_line ? comment_from(y, v->end, &cn) : NULL;
        ed->a = colon;
        ed->b = empty ? lend(y, colon) : multi_line ? lend(y, cend) : lend(y, v->end);
        if (c)
            sb_addn(&ed->repl, c, cn);
        sb_addn(&ed->repl, text.s, text.len);
    } else if (inline_new) {
        /* "key: # c\n  - a\n  - b" -> "key: new # c" */
        const char *c = comment_from(y, colon, &cn);
        ed->a = colon;
        ed->b = lend(y, cend);
        char *eol = c ? strstr(text.s, ed->st.eol) : NULL;
        size_t head = eol ? (size_t)(eol - text.s) : text.len;
        sb_addn(&ed->repl, text.s, head);
        if (c)
            sb_addn(&ed->repl, c, cn);
        sb_addn(&ed->repl, text.s + head, text.len - head);
    } else {
        /* a block for a block: the lines of the old value replaced, at its indentation when the
         * new one is of the same kind */
        size_t ind = key_col + (hv_is(nv, HV_HASH) ? ed->st.step : ed->st.seq_indent);
        if ((v->kind == YN_MAP && hv_is(nv, HV_HASH)) || (v->kind == YN_SEQ && hv_is(nv, HV_ARRAY))) {
            const ynode *first = v->n ? v->kids[0] : v;
            ind = column(y, v->kind == YN_MAP ? first->start : v->start);
        }
        ed->a = lstart(y, v->start);
        ed->b = lend(y, cend);
        if (!emit_block(&ed->repl, nv, ind, &ed->st, true, ed->err)) {
            sb_free(&text);
            return refuse_unwritable(ed, k->start);
        }
    }
    sb_free(&text);
    return !anchors_used_outside(ed, v, ed->a, ed->b);
}

/* A new entry key: value after the last entry of mapping m (NULL: the document is empty). */
static bool insert_entry(editor *ed, const ynode *m, const char *key, const hv *nv)
{
    ytree *y = &ed->y;
    hv *one = hv_hash();
    hv_hash_sets(one, key, hv_incref((hv *)nv));
    size_t ind = 0, at;
    bool before_break = false; /* the text goes at the end of a line: a break before it */
    if (m && m->n) {
        const ynode *lk = m->kids[m->n - 2], *lv = m->kids[m->n - 1];
        size_t colon;
        if (!entry_ok(ed, lk, &colon)) {
            hv_decref(one);
            return false;
        }
        ind = column(y, m->kids[0]->start);
        at = lnext(y, entry_content_end(y, lv, colon));
        before_break = at == y->len && (y->len == 0 || !is_break(y->t[y->len - 1]));
        /* the file ends in a block scalar's last line without its break: a break after it would
         * become part of the scalar (unless it strips its breaks) */
        const ynode *leaf = lv;
        while ((leaf->kind == YN_MAP || leaf->kind == YN_SEQ) && leaf->style == YN_BLOCK && leaf->n)
            leaf = leaf->kids[leaf->n - 1];
        if (before_break && leaf->kind == YN_SCALAR &&
            (leaf->style == YAML_LITERAL_SCALAR_STYLE || leaf->style == YAML_FOLDED_SCALAR_STYLE) &&
            !memchr(y->t + leaf->start, '-', lend(y, leaf->start) - leaf->start)) {
            hv_decref(one);
            return refuse(ed, leaf->start, "the file ends in this block scalar without a line break: a key after it "
                          "would change its value; add the line break by hand first");
        }
    } else if (!y->root) {
        at = y->len;
        before_break = y->len > 0 && !is_break(y->t[y->len - 1]);
    } else if (y->root->kind == YN_SCALAR && y->root->len == 0 && !y->root->tag && !y->root->anchor) {
        /* an empty document ("---" alone): after its "---" line */
        at = y->explicit_start ? lnext(y, y->start_end) : lstart(y, y->root->start);
        before_break = at == y->len && y->len > 0 && !is_break(y->t[y->len - 1]);
    } else {
        /* "--- ~" or "{}": the whole root replaced by the new mapping */
        const ynode *r = y->root;
        bool after_marker = y->explicit_start && lstart(y, r->start) == lstart(y, y->start_end);
        ed->a = after_marker ? y->start_end : r->start;
        ed->b = r->end;
        if (after_marker)
            sb_adds(&ed->repl, ed->st.eol);
        bool ok = emit_block(&ed->repl, one, 0, &ed->st, true, ed->err);
        hv_decref(one);
        return ok || refuse_unwritable(ed, r->start);
    }
    ed->a = ed->b = at;
    if (before_break)
        sb_adds(&ed->repl, ed->st.eol);
    bool ok = emit_block(&ed->repl, one, ind, &ed->st, true, ed->err);
    hv_decref(one);
    if (!ok)
        return refuse_unwritable(ed, at);
    sb_adds(&ed->repl, ed->st.eol);
    return true;
}

/* Removes the entry k: v of mapping m. */
static bool remove_entry(editor *ed, const ynode *k, const ynode *v)
{
    size_t colon;
    if (!entry_ok(ed, k, &colon))
        return false;
    ed->a = lstart(&ed->y, k->start);
    ed->b = lnext(&ed->y, entry_content_end(&ed->y, v, colon));
    /* (blank lines left after a block scalar that keeps its trailing lines would join it) */
    while (ed->wide && ed->b < ed->y.len && blank_between(&ed->y, ed->b, lend(&ed->y, ed->b)))
        ed->b = lnext(&ed->y, ed->b);
    return !anchors_used_outside(ed, v, ed->a, ed->b);
}

/* The entries of m whose key reads as key: *found the value (or NULL), refused when several. */
static bool find_entry(editor *ed, const ynode *m, const char *key, size_t klen, const ynode **kfound, const ynode **vfound)
{
    *kfound = *vfound = NULL;
    for (size_t i = 0; i + 1 < m->n; i += 2) {
        const ynode *k = m->kids[i];
        if (is_merge_key(k))
            return refuse(ed, k->start, "the mapping holds a merge key (<<): its keys may come from an alias");
        char *s = key_string(k);
        bool match = s && strlen(s) == klen && !memcmp(s, key, klen);
        free(s);
        if (!match)
            continue;
        if (*kfound)
            return refuse(ed, k->start, "'%.*s' is defined twice in this mapping (lines %d and %d): Puppet reads the "
                          "last one; remove one by hand first", (int)klen, key, line_of(&ed->y, (*kfound)->start),
                          line_of(&ed->y, k->start));
        *kfound = k;
        *vfound = m->kids[i + 1];
    }
    return true;
}

/* ------------------------------------------------------------------ the documents */

/* Equal values with the order of hashes kept (what the file says, not only what Puppet compares). */
static bool same_strict(const hv *a, const hv *b)
{
    if (!a || !b)
        return a == b;
    if (hv_kind_of(a) != hv_kind_of(b))
        return false;
    switch (hv_kind_of(a)) {
    case HV_UNDEF: return true;
    case HV_BOOL: return hv_bool_val(a) == hv_bool_val(b);
    case HV_INT: return hv_int_val(a) == hv_int_val(b);
    case HV_BIGINT: return !strcmp(hv_bigint_digits(a), hv_bigint_digits(b));
    case HV_FLOAT: {
        double x = hv_float_val(a), y = hv_float_val(b);
        return x == y || (x != x && y != y);
    }
    case HV_STRING:
    case HV_SYMBOL:
        return hv_str_len(a) == hv_str_len(b) && !memcmp(hv_str_ptr(a), hv_str_ptr(b), hv_str_len(a));
    case HV_ARRAY:
        if (hv_array_len(a) != hv_array_len(b))
            return false;
        for (size_t i = 0; i < hv_array_len(a); i++)
            if (!same_strict(hv_array_get(a, i), hv_array_get(b, i)))
                return false;
        return true;
    case HV_HASH:
        if (hv_hash_len(a) != hv_hash_len(b))
            return false;
        for (size_t i = 0; i < hv_hash_len(a); i++)
            if (!same_strict(hv_hash_key_at(a, i), hv_hash_key_at(b, i)) ||
                !same_strict(hv_hash_val_at(a, i), hv_hash_val_at(b, i)))
                return false;
        return true;
    default:
        return false;
    }
}

static bool holds_sensitive(const hv *v)
{
    if (hv_is(v, HV_SENSITIVE))
        return true;
    for (size_t i = 0; hv_is(v, HV_ARRAY) && i < hv_array_len(v); i++)
        if (holds_sensitive(hv_array_get(v, i)))
            return true;
    for (size_t i = 0; hv_is(v, HV_HASH) && i < hv_hash_len(v); i++)
        if (holds_sensitive(hv_hash_val_at(v, i)))
            return true;
    return false;
}

/* The document as Hiera reads it (symbol keys as strings), undef for an empty one; NULL with err. */
static hv *read_doc(const char *text, size_t len, const char *name, herr *err)
{
    hv *v = yaml_parse(text, len, name, YAML_PUPPET, err);
    return v ? hv_symkeys_to_string(v) : NULL;
}

/* What the key holds in doc (BORROWED), or NULL. */
static const hv *dig(const hv *doc, const hv *segs)
{
    const hv *cur = doc;
    for (size_t i = 0; i < hv_array_len(segs); i++) {
        if (!hv_is(cur, HV_HASH))
            return NULL;
        cur = hv_hash_get(cur, hv_array_get(segs, i));
        if (!cur)
            return NULL;
    }
    return cur;
}

/* The old document with the key set to nv (NULL: removed), as the new text must read. */
static hv *expected_doc(const hv *old, const hv *segs, const hv *nv)
{
    hv *doc = hv_is(old, HV_HASH) ? hv_deep_copy(old) : hv_hash();
    hv *cur = doc;
    size_t n = hv_array_len(segs);
    for (size_t i = 0; i + 1 < n; i++) {
        hv *seg = hv_array_get(segs, i);
        hv *child = hv_hash_get(cur, seg);
        if (!hv_is(child, HV_HASH) || hv_is_shared(child)) {
            child = hv_is(child, HV_HASH) ? hv_deep_copy(child) : hv_hash();
            hv_hash_set(cur, hv_incref(seg), child);
        }
        cur = child;
    }
    hv *last = hv_array_get(segs, n - 1);
    if (nv)
        hv_hash_set(cur, hv_incref(last), hv_deep_copy(nv));
    else
        hv_hash_del(cur, last);
    return doc;
}

/* The key's segments: a key without dots or quotes is itself; any other is split as a lookup
 * splits it ("a.b" is b inside a; '"a.b".c'). Array indexes are refused. */
static hv *key_segments(const char *key, const char *name, herr *err)
{
    if (!*key) {
        herr_set(err, HERR_ERROR, "the key is empty");
        return NULL;
    }
    if (!strpbrk(key, ".'\"")) {
        hv *one = hv_array();
        hv_array_push(one, hv_str(key));
        return one;
    }
    hv *segs = split_key(key, strlen(key));
    if (!segs) {
        herr_set(err, HERR_ERROR, "Syntax error in string: %s", key);
        return NULL;
    }
    for (size_t i = 0; i < hv_array_len(segs); i++)
        if (!hv_is(hv_array_get(segs, i), HV_STRING)) {
            herr_set(err, HERR_ERROR, "'%s': segment %zu is an array index; an edit sets a whole array (give the key "
                     "up to it)", key, i + 1);
            hv_decref(segs);
            return NULL;
        }
    (void)name;
    return segs;
}

/* a file with a line break libyaml knows and these line functions do not */
static bool unicode_breaks(const char *t, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == 0xC2 && (unsigned char)t[i + 1] == 0x85)
            return true;
        if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
            ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9))
            return true;
    }
    return false;
}

/* How the file is written: its first line break, and the indentation of its nested mappings and
 * of sequences under keys (the first ones found; 2 and indented when none). */
static void find_style(const ytree *y, const ynode *n, emit_style *st, bool *step_set, bool *seq_set)
{
    if (n->kind != YN_MAP || n->style != YN_BLOCK)
        for (size_t i = 0; n->kind == YN_SEQ && i < n->n; i++)
            find_style(y, n->kids[i], st, step_set, seq_set);
    if (n->kind != YN_MAP)
        return;
    for (size_t i = 0; i + 1 < n->n; i += 2) {
        const ynode *k = n->kids[i], *v = n->kids[i + 1];
        if (n->style == YN_BLOCK && v->style == YN_BLOCK && v->n && lstart(y, v->start) != lstart(y, k->start)) {
            size_t kc = column(y, k->start);
            size_t vc = column(y, v->kind == YN_MAP ? v->kids[0]->start : v->start);
            if (v->kind == YN_MAP && !*step_set && vc > kc) {
                st->step = vc - kc;
                *step_set = true;
            } else if (v->kind == YN_SEQ && !*seq_set && vc >= kc) {
                st->seq_indent = vc - kc;
                *seq_set = true;
            }
        }
        find_style(y, v, st, step_set, seq_set);
        if (*step_set && *seq_set)
            return;
    }
}

void hiera_edit_result_clear(hiera_edit_result *r)
{
    if (!r)
        return;
    free(r->text);
    hv_decref(r->old_value);
    memset(r, 0, sizeof *r);
}

static hiera_status fail_refused(hiera_error *err, herr *e)
{
    herr_to_public(err, e);
    if (err)
        err->kind = HIERA_ERR_REFUSED;
    return HIERA_ERROR;
}

/* One try at the edit (no_block: strings of several lines in double quotes, never as block
 * scalars). HIERA_OK, HIERA_NOT_FOUND, or HIERA_ERROR with e set (*read_back when the result did
 * not read back as it should). */
static hiera_status attempt(const char *text, size_t len, const hiera_edit *edit, const char *name, const hv *segs,
                            const hv *old, bool no_block, bool wide, hiera_edit_result *result, herr *ep, bool *read_back)
{
    herr e = {0};
    *read_back = false;
    editor ed = {0};
    ed.y.t = text ? text : "";
    ed.y.len = len;
    ed.y.bom = len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3) ? 3 : 0;
    ed.name = name;
    ed.err = &e;
    ed.st.eol = "\n";
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n' || text[i] == '\r') {
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                ed.st.eol = "\r\n";
            break;
        }
    ed.st.step = 2;
    ed.st.seq_indent = 2;
    ed.st.no_block = no_block;
    ed.wide = wide;
    hiera_status status = HIERA_ERROR;
    hv *expected = NULL, *got = NULL;
    const hv *nv = edit->value;
    const hv *current = dig(old, segs);
    size_t nsegs = hv_array_len(segs);
    if (!ytree_build(&ed.y, name, &e)) {
        herr_at(&e, name, e.line, e.col);
        goto refused;
    }
    bool step_set = false, seq_set = false;
    if (ed.y.root)
        find_style(&ed.y, ed.y.root, &ed.st, &step_set, &seq_set);
    if (!seq_set)
        ed.st.seq_indent = ed.st.step;
    const ynode *root = ed.y.root;
    if (root && !(root->kind == YN_MAP && root->style == YN_BLOCK) && !is_null(root) && !is_empty_flow_map(root)) {
        refuse(&ed, root->start, root->kind == YN_MAP ? "the document is a flow mapping ({...}): edit it by hand"
                                                    : "the document is not a hash (it is %s): Puppet reads no keys from it",
               kind_word(root));
        goto refused;
    }
    if (root && anchored_in_the_way(&ed, root))
        goto refused;
    /* the key as it is: nothing to write */
    if (nv && current && same_strict(current, nv)) {
        result->text = xstrndup(ed.y.t, len);
        result->len = len;
        result->changed = false;
        result->old_value = hv_incref((hv *)current);
        status = HIERA_OK;
        goto done;
    }
    if (!nv && !current) {
        status = HIERA_NOT_FOUND;
        goto done;
    }
    const ynode *m = root && root->kind == YN_MAP && root->n ? root : NULL;
    const ynode *pk = NULL; /* the key whose value m is (NULL: m is the root) */
    bool ok = false;
    for (size_t i = 0; i < nsegs; i++) {
        const hv *seg = hv_array_get(segs, i);
        const ynode *k = NULL, *v = NULL;
        if (m && !find_entry(&ed, m, hv_str_ptr(seg), hv_str_len(seg), &k, &v))
            goto refused;
        bool last = i + 1 == nsegs;
        if (!k && !nv) {
            status = HIERA_NOT_FOUND; /* (the parsed document said otherwise: a merge key...) */
            goto done;
        }
        if (last && !nv) {
            if (m->n == 2 && pk) {
                /* the last key of a nested hash: the hash stays, empty ("key: {}") */
                hv *empty = hv_hash();
                ok = replace_value(&ed, pk, m, empty, false);
                hv_decref(empty);
            } else {
                ok = remove_entry(&ed, k, v);
            }
            break;
        }
        if (last && k) {
            ok = replace_value(&ed, k, v, nv, true);
            break;
        }
        /* the value for what is missing from here on: {seg2: {...: nv}} */
        hv *rest = nv ? hv_deep_copy(nv) : NULL;
        for (size_t j = nsegs - 1; rest && j > i; j--) {
            hv *h = hv_hash();
            hv_hash_set(h, hv_incref(hv_array_get(segs, j)), rest);
            rest = h;
        }
        if (!k) {
            ok = insert_entry(&ed, m, hv_str_ptr(seg), rest);
            hv_decref(rest);
            break;
        }
        if (v->kind == YN_MAP && v->style == YN_BLOCK && v->n) {
            hv_decref(rest);
            if (anchored_in_the_way(&ed, v))
                goto refused;
            m = v;
            pk = k;
            continue;
        }
        if (nv && (is_null(v) || is_empty_flow_map(v))) {
            ok = replace_value(&ed, k, v, rest, false);
            hv_decref(rest);
            break;
        }
        hv_decref(rest);
        if (!nv && (is_null(v) || is_empty_flow_map(v))) {
            status = HIERA_NOT_FOUND;
            goto done;
        }
        if (v->kind == YN_ALIAS)
            refuse(&ed, v->start, "'%s' is an alias (*%s): changing it would change what it points at",
                   hv_str_ptr(seg), v->text ? v->text : "");
        else if (v->kind == YN_MAP)
            refuse(&ed, v->start, "'%s' is a flow mapping ({...}): edit inside it by hand, or set its whole value",
                   hv_str_ptr(seg));
        else
            refuse(&ed, v->start, "'%s' is %s, not a hash: nothing can be set inside it", hv_str_ptr(seg), kind_word(v));
        goto refused;
    }
    if (!ok)
        goto refused;
    if (edit->new_file && len == 0) {
        /* a new file starts with "---" */
        sbuf s = {0};
        sb_adds(&s, "---");
        sb_adds(&s, ed.st.eol);
        sb_addn(&s, ed.repl.s ? ed.repl.s : "", ed.repl.len);
        sb_free(&ed.repl);
        ed.repl = s;
    }
    /* the new text */
    sbuf out = {0};
    sb_addn(&out, ed.y.t, ed.a);
    sb_addn(&out, ed.repl.s ? ed.repl.s : "", ed.repl.len);
    sb_addn(&out, ed.y.t + ed.b, len - ed.b);
    size_t out_len = out.len;
    char *out_text = sb_take(&out);
    /* read back: the old document with the key replaced, or nothing is written */
    herr back = {0};
    got = read_doc(out_text, out_len, name, &back);
    if (got && hv_is(got, HV_UNDEF)) {
        /* a document left empty: Puppet reads it as an empty hash */
        hv_decref(got);
        got = hv_hash();
    }
    expected = expected_doc(old, segs, nv);
    if (!got || !same_strict(got, expected)) {
        herr_set(&e, HERR_ERROR, "the edited file would not read back as the old one with '%s' %s (%s): hiera's "
                 "editor cannot write this one exactly; edit it by hand", edit->key, nv ? "set" : "removed",
                 got ? "another value" : back.msg ? back.msg : "it does not parse");
        herr_at(&e, name, line_of(&ed.y, ed.a), 0);
        herr_clear(&back);
        free(out_text);
        *read_back = true;
        goto refused;
    }
    herr_clear(&back);
    result->text = out_text;
    result->len = out_len;
    result->changed = true;
    result->first_line = line_of(&ed.y, ed.a);
    /* an insertion at the start of a line adds lines before it; anywhere else it changes its line */
    result->last_line = ed.b > ed.a ? line_of(&ed.y, ed.b - 1)
                        : ed.a == lstart(&ed.y, ed.a) ? result->first_line - 1 : result->first_line;
    result->old_value = current ? hv_incref((hv *)current) : NULL;
    status = HIERA_OK;
    goto done;
refused:
    status = HIERA_ERROR;
    herr_move(ep, &e);
done:
    herr_clear(&e);
    hv_decref(expected);
    hv_decref(got);
    sb_free(&ed.repl);
    ynode_free(ed.y.root);
    free(ed.y.aliases);
    return status;
}



hiera_status hiera_edit_text(const char *text, size_t len, const hiera_edit *edit, hiera_edit_result *result,
                             hiera_error *err)
{
    memset(result, 0, sizeof *result);
    herr e = {0};
    const char *name = edit && edit->file ? edit->file : "<text>";
    if (!edit || !edit->key) {
        herr_set(&e, HERR_ERROR, "an edit needs a key");
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    if (!text)
        len = 0;
    if (len >= 2 && (((unsigned char)text[0] == 0xFF && (unsigned char)text[1] == 0xFE) ||
                     ((unsigned char)text[0] == 0xFE && (unsigned char)text[1] == 0xFF))) {
        herr_set(&e, HERR_ERROR, "the file is UTF-16: only UTF-8 files are edited");
        herr_at(&e, name, 1, 1);
        return fail_refused(err, &e);
    }
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        /* (libyaml, as Psych hands it the text, ends the document after the first line) */
        herr_set(&e, HERR_ERROR, "the file starts with a byte order mark, after which Puppet's YAML reader sees only "
                 "the first line: remove the mark by hand first");
        herr_at(&e, name, 1, 1);
        return fail_refused(err, &e);
    }
    if (unicode_breaks(text, len)) {
        herr_set(&e, HERR_ERROR, "the file holds a Unicode line or paragraph separator (U+0085, U+2028, U+2029), "
                 "which YAML reads as a line break: edit it by hand");
        herr_at(&e, name, 0, 0);
        return fail_refused(err, &e);
    }
    if (edit->value && holds_sensitive(edit->value)) {
        herr_set(&e, HERR_ERROR, "a Sensitive value cannot be written to a data file (encrypt it instead)");
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    hv *segs = key_segments(edit->key, name, &e);
    if (!segs)
        return fail_refused(err, &e);
    hv *old = read_doc(text ? text : "", len, name, &e);
    if (!old) {
        char *msg = xjoin("the file does not parse: ", e.msg ? e.msg : "", NULL);
        free(e.msg);
        e.msg = msg;
        if (!e.file)
            herr_at(&e, name, e.line, e.col);
        hv_decref(segs);
        return fail_refused(err, &e);
    }
    /* when the result does not read back as it should (the lines around a block scalar would
     * change it), once more with strings in quotes, and with the blank lines after a removed entry
     * removed too */
    bool read_back = false;
    hiera_status st = HIERA_ERROR;
    for (int way = 0; way < 4 && (way == 0 || read_back); way++) {
        herr_clear(&e);
        st = attempt(text, len, edit, name, segs, old, way & 1, way & 2, result, &e, &read_back);
    }
    hv_decref(old);
    hv_decref(segs);
    if (st == HIERA_ERROR)
        return fail_refused(err, &e);
    herr_clear(&e);
    return st;
}

hiera_value *hiera_value_from_yaml(const char *text, size_t len, hiera_error *err)
{
    herr e = {0};
    hv *v = yaml_parse(text ? text : "", text ? len : 0, "<value>", YAML_PUPPET, &e);
    if (!v)
        herr_to_public(err, &e);
    return v;
}
