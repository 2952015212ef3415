/* hocon_parse.c - stage 2 of the HOCON reader (see hocon.c): the recursive-descent parser that
 * builds config nodes as the gem's ConfigDocumentParser and ConfigParser do, and `include`. */
#include "formats/hocon_int.h"
#include "base/fileio.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

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

static node *placeholder(int line, int col) { return hc_nprim(N_NULL, hv_undef(), line, col, NULL); }

static void perr(parser *P, const token *t, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void perr(parser *P, const token *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hc_failv(P->cx, E_CONFIG, P->L.org, t ? t->line : P->L.line, t ? t->col : P->L.col, fmt, ap);
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

void hc_ref_describe(sbuf *b, const node *r)
{
    sb_adds(b, r->optional ? "${?" : "${");
    render_path(b, r->keys, r->n);
    sb_addc(b, '}');
}

/* next_token_collecting_whitespace: skips blanks, newlines and comments */
static void next_tcw(parser *P, token *t)
{
    for (;;) {
        hc_lx_next(&P->L, t);
        if (t->type == T_WS || t->type == T_NEWLINE || t->type == T_COMMENT || (t->type == T_UNQ && t->wsonly)) {
            hc_tok_free(t);
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
        hc_lx_next(&P->L, &t);
        if (t.type == T_WS || t.type == T_COMMENT || (t.type == T_UNQ && t.wsonly)) {
            hc_tok_free(&t);
        } else if (t.type == T_NEWLINE) {
            saw = true;
        } else if (t.type == T_COMMA) {
            return true;
        } else {
            hc_lx_back(&P->L, &t);
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
    case T_STRING: v = hc_nstr(t->str, true, t->line, t->col, org); t->str = NULL; break;
    case T_UNQ: v = hc_nstr(t->str, false, t->line, t->col, org); t->str = NULL; break;
    case T_NUMBER:
        v = hc_nprim(N_NUM, t->num, t->line, t->col, org);
        v->text = t->str;
        t->num = t->str = NULL;
        break;
    case T_TRUE: v = hc_nprim(N_BOOL, hv_true(), t->line, t->col, org); break;
    case T_FALSE: v = hc_nprim(N_BOOL, hv_false(), t->line, t->col, org); break;
    case T_NULL: v = hc_nprim(N_NULL, hv_undef(), t->line, t->col, org); break;
    case T_SUBST:
        if (t->problem) { /* ConfigBadPathError, raised when the gem makes the value */
            if (building(P)) {
                hc_fail(P->cx, org, t->line, t->col, "%s", t->problem);
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
        hc_tok_describe(&d, t);
        perr(P, t, "Expecting a value but got wrong token: %s", sb_str(&d));
        sb_free(&d);
    }
    }
    hc_tok_free(t);
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
            hc_tok_free(&t);
        } else if (starts_value(t.type)) {
            node *v = parse_value(P, &t);
            if (!v) {
                hc_nv_free(&pieces);
                return -1;
            }
            hc_nv_push(&pieces, v);
        } else {
            break;
        }
        hc_lx_next(&P->L, &t);
    }
    hc_lx_back(&P->L, &t);
    if (pieces.n == 1) {
        *out = pieces.v[0];
        pieces.n = 0;
    } else if (pieces.n > 1) {
        if (!building(P))
            *out = placeholder(pieces.v[0]->line, pieces.v[0]->col);
        else if (hc_concatenate(P->cx, pieces.v, pieces.n, out) < 0) {
            defer(P);
            *out = placeholder(pieces.v[0]->line, pieces.v[0]->col);
        }
    }
    hc_nv_free(&pieces);
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
        hc_pb_token(&pb, t);
        got = true;
        hc_tok_free(t);
        hc_lx_next(&P->L, t);
    }
    if (!got) {
        sbuf d = {0};
        hc_tok_describe(&d, t);
        perr(P, t, "expecting a close brace or a field name here, got %s", sb_str(&d));
        sb_free(&d);
        hc_tok_free(t);
        hc_pb_free(&pb);
        return NULL;
    }
    hc_lx_back(&P->L, t);
    const char *why = NULL;
    hv **keys = hc_pb_finish(&pb, n, &why);
    if (!keys) {
        hc_fail_bare(P->cx, P->L.org, *line, *col, "%s", why); /* a ConfigBadPathError without origin */
    } else if (P->depth + *n > MAX_PARSE_DEPTH) { /* a.b.c... nests objects too */
        hc_fail(P->cx, P->L.org, *line, *col, "objects and arrays nested more than %d levels deep", MAX_PARSE_DEPTH);
        free_keys(keys, *n);
        keys = NULL;
    }
    hc_pb_free(&pb);
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
        node *r = hc_ref_new(k, pn + v->n, v->optional, v->line, v->col, v->org);
        r->prefix = v->prefix + pn;
        return r;
    }
    if (!is_container(v) || !v->unresolved)
        return hc_nref(v);
    node *r = hc_shallow_copy(v);
    for (size_t i = 0; i < r->n; i++) {
        node *c = relativize(r->items[i], prefix, pn);
        hc_nfree(r->items[i]);
        r->items[i] = c;
    }
    return r;
}

/* ConfigParser#parse_object for one field: duplicates merge through with_fallback, a dotted path
 * becomes nested objects, += becomes ${?path} [value]. Steals keys and v. */
static int add_field(parser *P, node *o, hv **keys, size_t n, bool pluseq, node *v)
{
    if (!building(P)) {
        hc_nfree(v);
        free_keys(keys, n);
        return 0;
    }
    if (pluseq) {
        node *pieces[2];
        pieces[0] = hc_ref_new(keys_copy(P->path, P->pn), P->pn, true, v->line, v->col, P->L.org);
        pieces[1] = hc_nnew(N_LIST, v->line, v->col, P->L.org);
        hc_items_push(pieces[1], v);
        node *c = NULL;
        int rc = hc_concatenate(P->cx, pieces, 2, &c); /* a reference and a list: cannot fail */
        hc_nfree(pieces[0]);
        hc_nfree(pieces[1]);
        if (rc < 0) {
            defer(P);
            c = placeholder(0, 0);
        }
        v = c;
    }
    for (size_t i = n; i-- > 1;) {
        node *w = hc_nnew(N_OBJ, v->line, v->col, v->org);
        hc_obj_append(w, keys[i], v);
        hc_fix_status(w);
        v = w;
    }
    node *existing = hc_obj_get(o, keys[0]);
    bool was = existing && existing->unresolved; /* before it is possibly merged into in place */
    if (existing) {
        node *m = hc_with_fallback_into(P->cx, v, existing); /* existing is replaced below */
        if (m) {
            hc_nfree(v);
            v = m;
        } else {
            defer(P);
        }
    }
    hc_obj_put(o, keys[0], v);
    if (was && !v->unresolved)
        hc_fix_status(o);
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
            hc_tok_describe(&d, &t);
            perr(P, &t,
                 "expecting include parameter to be quoted filename, file(), classpath(), or url(). No spaces are "
                 "allowed before the open paren. Not expecting: %s",
                 sb_str(&d));
            goto bad;
        }
        hc_tok_free(&t);
        next_tcw(P, &t);
        if (t.type != T_STRING) {
            hc_tok_describe(&d, &t);
            perr(P, &t, "expecting a quoted string inside file(), classpath(), or url(), rather than: %s", sb_str(&d));
            goto bad;
        }
        name = hv_incref(t.str);
        hc_tok_free(&t);
        next_tcw(P, &t);
        if (t.type != T_UNQ || strcmp(hv_str_ptr(t.str), ")") != 0) {
            hc_tok_describe(&d, &t);
            perr(P, &t, "expecting a close parentheses ')' here, not: %s", sb_str(&d));
            goto bad;
        }
    } else if (t.type == T_STRING) {
        kind = "heuristic";
        name = hv_incref(t.str);
    } else {
        hc_tok_describe(&d, &t);
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
        hc_nfree(inc);
        goto done;
    }
    if (P->pn > 0) {
        node *r = relativize(inc, P->path, P->pn);
        hc_nfree(inc);
        inc = r;
    }
    for (size_t i = 0; i < inc->n; i++) {
        node *v = inc->items[i], *existing = hc_obj_get(o, inc->keys[i]);
        node *m = existing ? hc_with_fallback(P->cx, v, existing) : hc_nref(v);
        if (!m) {
            defer(P);
            break;
        }
        hc_obj_put(o, hv_incref(inc->keys[i]), m);
    }
    hc_nfree(inc);
done:
    hc_tok_free(&t);
    hv_decref(name);
    return 0;
bad:
    sb_free(&d);
    hc_tok_free(&t);
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
        hc_tok_describe(&d, &a);
        perr(P, &a, "Key '%s' may not be followed by token: %s", sb_str(&k), sb_str(&d));
        sb_free(&d);
        sb_free(&k);
        hc_tok_free(&a);
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
        hc_tok_free(&a);
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
        hc_fail(P->cx, P->L.org, line, col, "objects and arrays nested more than %d levels deep", MAX_PARSE_DEPTH);
        return false;
    }
    return true;
}

static node *parse_object(parser *P, bool curly, int line, int col)
{
    if (!enter(P, line, col))
        return NULL;
    node *o = hc_nnew(N_OBJ, line, col, P->L.org);
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
            hc_lx_back(&P->L, &t);
            break;
        }
        if (t.type == T_UNQ && strcmp(hv_str_ptr(t.str), "include") == 0) {
            hc_tok_free(&t);
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
            hc_lx_back(&P->L, &t);
            break;
        }
        hc_tok_describe(&d, &t);
        perr(P, &t, "Expecting close brace } or a comma, got %s", sb_str(&d));
        goto bad;
    }
    hc_tok_free(&t);
    P->depth--;
    return o;
bad:
    sb_free(&d);
    hc_tok_free(&t);
    hc_nfree(o);
    return NULL;
}

static node *parse_array(parser *P, int line, int col)
{
    if (!enter(P, line, col))
        return NULL;
    node *l = hc_nnew(N_LIST, line, col, P->L.org), *v = NULL;
    token t = {0};
    sbuf d = {0};
    P->array_count++;
    if (consolidate_values(P, &v) < 0)
        goto bad;
    if (!v) {
        next_tcw(P, &t);
        if (t.type == T_RBRACKET)
            goto done;
        hc_tok_describe(&d, &t);
        perr(P, &t,
             "List should have ] or a first element after the open [, instead had token: %s (if you want %s to be "
             "part of a string value, then double-quote it)",
             sb_str(&d), sb_str(&d));
        goto bad;
    }
    hc_items_push(l, v);
    for (;;) {
        if (!check_sep(P)) {
            next_tcw(P, &t);
            if (t.type == T_RBRACKET)
                goto done;
            hc_tok_describe(&d, &t);
            perr(P, &t,
                 "List should have ended with ] or had a comma, instead had token: %s (if you want %s to be part of a "
                 "string value, then double-quote it)",
                 sb_str(&d), sb_str(&d));
            goto bad;
        }
        if (consolidate_values(P, &v) < 0)
            goto bad;
        if (v) {
            hc_items_push(l, v);
            continue;
        }
        next_tcw(P, &t);
        if (t.type != T_RBRACKET) {
            hc_tok_describe(&d, &t);
            perr(P, &t,
                 "List should have had new element after a comma, instead had token: %s (if you want the comma or %s "
                 "to be part of a string value, then double-quote it)",
                 sb_str(&d), sb_str(&d));
            goto bad;
        }
        hc_lx_back(&P->L, &t); /* one trailing comma is allowed */
    }
done:
    hc_tok_free(&t);
    P->array_count--;
    P->depth--;
    return l;
bad:
    sb_free(&d);
    hc_tok_free(&t);
    hc_nfree(l);
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
        hc_lx_back(&P->L, &t);
        v = parse_object(P, false, P->L.line, P->L.col);
    }
    if (!v)
        return NULL;
    next_tcw(P, &t);
    if (t.type != T_EOF) {
        sbuf d = {0};
        hc_tok_describe(&d, &t);
        perr(P, &t, "Document has trailing tokens after first object or array: %s", sb_str(&d));
        sb_free(&d);
        hc_tok_free(&t);
        hc_nfree(v);
        return NULL;
    }
    hc_tok_free(&t);
    return v;
}

node *hc_parse_document(hctx *cx, const char *text, size_t len, const char *org, const char *dir)
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
    hc_lx_free(&P.L);
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
        hc_fail(cx, org, root->line, root->col, " has type LIST rather than object at file root");
    if (root && cx->failed) {
        hc_nfree(root);
        root = NULL;
    }
    return root;
}

/* ---- includes ---- */

/* An included file: regular files only (a FIFO would block, a device never end), at most
 * MAX_INCLUDE_SIZE bytes; *err_no is set on failure (EFBIG when too large). */
#define MAX_INCLUDE_SIZE ((size_t)256 * 1024 * 1024)

bool hc_read_file(const char *path, sbuf *out, int *err_no)
{
    file_read_error fe;
    bool ok = file_read(path, out, &(file_read_opts){.max = MAX_INCLUDE_SIZE, .regular_only = true}, &fe);
    *err_no = fe.err;
    return ok;
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
    if (!hc_read_file(path, &text, &e)) {
        sb_free(&text);
        perr(P, at, "could not read included file %s: %s", path,
             e == EINVAL ? "not a regular file" : e == EFBIG ? "larger than 256 MB" : ERRNO_TEXT(e));
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
    node *root = hc_parse_document(cx, sb_str(&text), text.len, org, dir);
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
        if (!path_exists(path))
            return hc_nnew(N_OBJ, at->line, at->col, P->L.org);
        return include_parse_file(P, path, at);
    }
    node *obj = NULL;
    char *conf = xasprintf("%s.conf", path), *json = xasprintf("%s.json", path);
    if (path_exists(conf) && !(obj = include_parse_file(P, conf, at)))
        goto out;
    if (path_exists(json)) {
        node *j = include_parse_file(P, json, at);
        if (!j) {
            hc_nfree(obj);
            obj = NULL;
            goto out;
        }
        if (obj) {
            node *m = hc_with_fallback(P->cx, obj, j);
            hc_nfree(obj);
            hc_nfree(j);
            if (!(obj = m))
                goto out;
        } else {
            obj = j;
        }
    }
    if (!obj)
        obj = hc_nnew(N_OBJ, at->line, at->col, P->L.org);
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
            hc_fail_ruby(P->cx, P->L.org, at->line, at->col,
                         "undefined method `include_url' for #<Hocon::Impl::SimpleIncluder>");
        else
            perr(P, at, "include url() specifies an invalid URL: %s", s);
        return NULL;
    }
    if (strcmp(kind, "classpath") == 0) { /* the gem's SimpleIncluder lacks include_resources */
        hc_fail_ruby(P->cx, P->L.org, at->line, at->col,
                     "undefined method `include_resources' for #<Hocon::Impl::SimpleIncluder>");
        return NULL;
    }
    if (strcmp(kind, "file") == 0)
        return include_basename(P, s, at);
    if (is_http_url(s)) { /* nor an include_url_without_fallback */
        hc_fail_ruby(P->cx, P->L.org, at->line, at->col,
                     "undefined method `include_url_without_fallback' for Hocon::Impl::SimpleIncluder:Class");
        return NULL;
    }
    if (!P->dir)
        return hc_nnew(N_OBJ, at->line, at->col, P->L.org);
    char *path = s[0] == '/' ? xstrdup(s) : xasprintf("%s/%s", P->dir, s);
    node *r = include_basename(P, path, at);
    free(path);
    return r;
}
