/* features.c - what hiera lsp answers: hover, definition, references, completion, code actions,
 * document symbols, hiera/lookup, and a document's syntax error. Every function reads one state
 * (lstate: the workspace and the open documents at one moment) and makes its own lookup contexts
 * over it, so any number of them run at once on different threads. */
#include "lsp/lsp_int.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/pathname.h"
#include "check/check.h"
#include "check/yscan.h"
#include "formats/render.h"

/* ------------------------------------------------------------------ documents and positions */

typedef struct {
    char *uri;
    char *path;  /* real */
    char *epath; /* as the engine names it */
    char *text;
    size_t len;
    ltext t;
    size_t off;  /* the request's position */
    ysdoc *ys;   /* data files and hiera.yaml: the scan, made on first use */
} cursor;

static const char *ext_of(const char *p)
{
    const char *dot = NULL;
    for (; p && *p; p++)
        if (*p == '.')
            dot = p;
        else if (*p == '/')
            dot = NULL;
    return dot ? dot : "";
}

static bool is_data(const char *p)
{
    const char *e = ext_of(p);
    return !strcmp(e, ".yaml") || !strcmp(e, ".yml") || !strcmp(e, ".json") || !strcmp(e, ".eyaml");
}

static bool is_config(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b && !strcmp(b, "/hiera.yaml");
}

static bool is_pp(const char *p) { return !strcmp(ext_of(p), ".pp"); }

static void cursor_free(cursor *c)
{
    free(c->uri);
    free(c->path);
    free(c->epath);
    free(c->text);
    if (c->ys)
        ys_free(c->ys);
}

/* The request's document and position; false (with the request's error) when there is none. */
static bool cursor_get(lreq *r, cursor *c)
{
    memset(c, 0, sizeof *c);
    const char *uri = jstr(jobj(r->params, "textDocument"), "uri");
    if (!uri) {
        r->err_code = RPC_INVALID_PARAMS;
        r->err_msg = xstrdup("textDocument.uri is missing");
        return false;
    }
    c->uri = xstrdup(uri);
    const ldoc *d = lstate_doc(r->s, uri);
    if (d) {
        c->path = d->path ? xstrdup(d->path) : NULL;
        c->text = xstrndup(d->text, d->len);
        c->len = d->len;
    } else {
        char *p = path_of_uri(uri);
        char *rp = p ? realpath(p, NULL) : NULL;
        c->path = rp ? rp : p ? xstrdup(p) : NULL;
        free(p);
        c->text = c->path ? lstate_text(r->s, c->path, &c->len) : NULL;
        if (!c->text) {
            r->err_code = RPC_INVALID_PARAMS;
            r->err_msg = xasprintf("%s is not open and cannot be read", uri);
            cursor_free(c);
            return false;
        }
    }
    c->epath = c->path ? ws_engine_path(r->s->w, c->path) : NULL;
    c->t = (ltext){.text = c->text, .len = c->len, .utf8 = r->s->utf8};
    const hv *pos = jobj(r->params, "position");
    int64_t line = 0, ch = 0;
    jint(pos, "line", &line), jint(pos, "character", &ch);
    c->off = lt_offset(&c->t, line, ch);
    return true;
}

static ysdoc *cursor_ys(cursor *c)
{
    if (!c->ys)
        c->ys = ys_parse(c->text, c->len);
    return c->ys;
}

/* 1-based line and code-point column of a byte offset (yscan's marks) */
static void line_col(const char *text, size_t off, uint32_t *line, uint32_t *col)
{
    uint32_t l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static bool before(uint32_t l1, uint32_t c1, uint32_t l2, uint32_t c2) { return l1 < l2 || (l1 == l2 && c1 < c2); }

/* whether (l, c) is in n: from its start to its end, the end itself for a scalar (a cursor just
 * after it) but not for a block collection (whose end is where the next entry starts) */
static bool node_has(const ysnode *n, uint32_t l, uint32_t c)
{
    if (!n || before(l, c, n->line, n->col))
        return false;
    return before(l, c, n->eline, n->ecol) || (n->kind == YS_SCALAR && l == n->eline && c == n->ecol);
}

static const ysnode *top_map(ysdoc *ys) { return ys && ys->ndocs && ys->docs[0] && ys->docs[0]->kind == YS_MAP ? ys->docs[0] : NULL; }

/* The top-level key whose entry holds the position (its key node in *keynode, whether the position
 * is on the key itself in *on_key), or NULL. */
static const char *top_key_at(ysdoc *ys, uint32_t l, uint32_t c, const ysnode **keynode, bool *on_key)
{
    const ysnode *m = top_map(ys);
    if (!m)
        return NULL;
    for (uint32_t i = 0; i + 1 < m->n; i += 2) {
        const ysnode *k = m->kids[i], *v = m->kids[i + 1];
        bool in_key = node_has(k, l, c);
        /* the value, or between the key and the value (on the key's line) */
        bool in_val = v && (node_has(v, l, c) || (l == k->line && !before(l, c, k->eline, k->ecol) && before(l, c, v->line, v->col)));
        if ((in_key || in_val) && k->kind == YS_SCALAR) {
            if (keynode)
                *keynode = k;
            if (on_key)
                *on_key = in_key;
            return k->text;
        }
    }
    return NULL;
}

/* The key node of a top-level key in a scan, or NULL */
static const ysnode *top_key_node(ysdoc *ys, const char *key)
{
    const ysnode *m = top_map(ys);
    return m ? ys_map_key(m, key) : NULL;
}

/* ------------------------------------------------------------------ interpolations */

typedef struct {
    size_t start, end;  /* of %{ ... } in the text */
    char method[16];    /* lookup, alias, hiera, literal, or "" for a variable */
    char *arg;          /* the key, or the variable */
} interp;

/* The interpolation of text[from..to) at offset off (or the first at or after off with
 * any_after), parsed; false when none. */
static bool interp_at(const char *text, size_t len, size_t off, interp *it)
{
    size_t ls = off;
    while (ls > 0 && text[ls - 1] != '\n')
        ls--;
    size_t le = off;
    while (le < len && text[le] != '\n')
        le++;
    for (size_t i = ls; i + 1 < le; i++) {
        if (text[i] != '%' || text[i + 1] != '{')
            continue;
        size_t j = i + 2;
        while (j < le && text[j] != '}')
            j++;
        if (off < i || off > j)
            continue;
        const char *e = text + i + 2;
        size_t n = j - i - 2;
        while (n && isspace((unsigned char)*e))
            e++, n--;
        while (n && isspace((unsigned char)e[n - 1]))
            n--;
        memset(it, 0, sizeof *it);
        it->start = i;
        it->end = j < le ? j + 1 : j;
        size_t k = 0;
        while (k < n && (isalnum((unsigned char)e[k]) || e[k] == '_'))
            k++;
        if (k < n && e[k] == '(' && k < sizeof it->method) {
            memcpy(it->method, e, k);
            it->method[k] = 0;
            const char *a = e + k + 1;
            size_t an = n - k - 1;
            while (an && isspace((unsigned char)*a))
                a++, an--;
            if (an && (*a == '\'' || *a == '"')) {
                const char *q = memchr(a + 1, *a, an - 1);
                it->arg = xstrndup(a + 1, q ? (size_t)(q - a - 1) : an - 1);
            } else {
                it->arg = xstrdup("");
            }
        } else {
            it->arg = xstrndup(e[0] == ':' && n > 1 && e[1] == ':' ? e + 2 : e, e[0] == ':' && n > 1 && e[1] == ':' ? n - 2 : n);
        }
        return true;
    }
    return false;
}

static bool names_key(const interp *it)
{
    return !strcmp(it->method, "lookup") || !strcmp(it->method, "alias") || !strcmp(it->method, "hiera");
}

/* the root key of a dotted key ("a.b" -> "a"; quoted segments kept whole) */
static char *root_key(const char *k)
{
    if (*k == '"' || *k == '\'') {
        const char *q = strchr(k + 1, *k);
        return q ? xstrndup(k + 1, (size_t)(q - k - 1)) : xstrdup(k + 1);
    }
    const char *dot = strchr(k, '.');
    return dot ? xstrndup(k, (size_t)(dot - k)) : xstrdup(k);
}

/* every %{lookup/alias/hiera('key')} of text naming key: calls fn with its offsets */
static void each_key_interp(const char *text, size_t len, const char *key, void (*fn)(size_t s, size_t e, void *d), void *data)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (text[i] != '%' || text[i + 1] != '{')
            continue;
        interp it;
        if (interp_at(text, len, i + 2, &it)) {
            if (names_key(&it)) {
                char *rk = root_key(it.arg);
                if (!strcmp(rk, key))
                    fn(it.start, it.end, data);
                free(rk);
            }
            free(it.arg);
            if (it.end > i)
                i = it.end - 1;
        }
    }
}

/* ------------------------------------------------------------------ what is at the cursor */

typedef enum { AT_NONE, AT_KEY, AT_FACT, AT_CONFIG_PATH } at_kind;

typedef struct {
    at_kind kind;
    char *key;            /* AT_KEY: the key; AT_FACT: the variable ("facts.os.family") */
    size_t start, end;    /* the word's offsets (for ranges) */
    bool on_top_key;      /* AT_KEY: the cursor is on a top-level key of a data file */
    char *level;          /* AT_CONFIG_PATH: the hierarchy entry's name */
} at_info;

static void at_free(at_info *a)
{
    free(a->key);
    free(a->level);
}

/* the string literal of a manifest line around off: its content, or NULL */
static char *pp_string_at(const cursor *c, size_t *s, size_t *e)
{
    size_t ls = c->off;
    while (ls > 0 && c->text[ls - 1] != '\n')
        ls--;
    char q = 0;
    size_t open = 0;
    for (size_t i = ls; i < c->len && c->text[i] != '\n'; i++) {
        char ch = c->text[i];
        if (!q && (ch == '\'' || ch == '"')) {
            q = ch;
            open = i;
        } else if (q && ch == '\\') {
            i++;
        } else if (q && ch == q) {
            if (c->off > open && c->off <= i) {
                *s = open + 1;
                *e = i;
                return xstrndup(c->text + open + 1, i - open - 1);
            }
            q = 0;
        } else if (!q && ch == '#') {
            break;
        }
    }
    return NULL;
}

static const pp_index *const *pp_indexes(const lstate *s, size_t *n)
{
    static __thread const pp_index *idx[2];
    idx[0] = s->pp_open;
    idx[1] = s->w->pp;
    *n = 2;
    return idx;
}

static at_info what_is_at(lreq *r, cursor *c)
{
    at_info a = {0};
    const char *p = c->path ? c->path : c->uri;
    interp it;
    if ((is_data(p) || is_config(p)) && interp_at(c->text, c->len, c->off, &it)) {
        if (names_key(&it)) {
            a.kind = AT_KEY;
            a.key = root_key(it.arg);
        } else if (!it.method[0]) {
            a.kind = AT_FACT;
            a.key = xstrdup(it.arg);
        }
        free(it.arg);
        a.start = it.start;
        a.end = it.end;
        if (a.kind)
            return a;
    }
    uint32_t l, col;
    line_col(c->text, c->off, &l, &col);
    if (is_config(p)) {
        /* a location of a hierarchy entry: the entry's name */
        const ysnode *m = top_map(cursor_ys(c));
        const ysnode *h = m ? ys_map_get(m, "hierarchy") : NULL;
        for (uint32_t i = 0; h && h->kind == YS_SEQ && i < h->n; i++) {
            const ysnode *e = h->kids[i];
            if (e->kind != YS_MAP || !node_has(e, l, col))
                continue;
            const ysnode *name = ys_map_get(e, "name");
            static const char *const locs[] = {"path", "paths", "glob", "globs", "mapped_paths", NULL};
            for (size_t k = 0; locs[k]; k++) {
                const ysnode *v = ys_map_get(e, locs[k]);
                if (v && node_has(v, l, col) && name && name->kind == YS_SCALAR) {
                    a.kind = AT_CONFIG_PATH;
                    a.level = xstrdup(name->text);
                    a.start = lt_offset_lc(&c->t, v->line, v->col);
                    a.end = lt_offset_lc(&c->t, v->eline, v->ecol);
                    return a;
                }
            }
        }
        return a;
    }
    if (is_data(p)) {
        const ysnode *k = NULL;
        bool on_key = false;
        const char *key = top_key_at(cursor_ys(c), l, col, &k, &on_key);
        if (key && strcmp(key, "lookup_options") != 0) {
            a.kind = AT_KEY;
            a.key = xstrdup(key);
            a.on_top_key = on_key;
            a.start = lt_offset_lc(&c->t, k->line, k->col);
            a.end = lt_offset_lc(&c->t, k->eline, k->ecol);
        }
        return a;
    }
    if (is_pp(p)) {
        size_t s = 0, e = 0;
        char *str = pp_string_at(c, &s, &e);
        if (str && strstr(str, "::") && !strchr(str, '$')) {
            a.kind = AT_KEY;
            a.key = str;
            a.start = s;
            a.end = e;
            return a;
        }
        free(str);
        /* a class parameter: $name in the header of a class of this file */
        size_t ws_ = c->off, we = c->off;
        while (ws_ > 0 && (isalnum((unsigned char)c->text[ws_ - 1]) || c->text[ws_ - 1] == '_'))
            ws_--;
        while (we < c->len && (isalnum((unsigned char)c->text[we]) || c->text[we] == '_'))
            we++;
        if (ws_ == 0 || c->text[ws_ - 1] != '$' || we == ws_)
            return a;
        char *word = xstrndup(c->text + ws_, we - ws_);
        size_t n;
        const pp_index *const *idx = pp_indexes(r->s, &n);
        for (size_t x = 0; x < n && !a.kind; x++)
            for (size_t i = 0; idx[x] && i < idx[x]->nclasses && !a.kind; i++) {
                const pp_class *cl = &idx[x]->classes[i];
                if (!c->epath || strcmp(cl->file, c->epath) != 0)
                    continue;
                for (size_t j = 0; j < cl->nparams; j++)
                    if (cl->params[j].line == l && !strcmp(cl->params[j].name, word)) {
                        a.kind = AT_KEY;
                        a.key = xasprintf("%s::%s", cl->name, word);
                        a.start = ws_ - 1;
                        a.end = we;
                        break;
                    }
            }
        free(word);
    }
    return a;
}

/* ------------------------------------------------------------------ lookups */

typedef struct {
    hiera_status st;
    hv *value;      /* the value (a new reference), or NULL */
    char *error;
    hv *prov;       /* provenance tree, or NULL */
    char *explain;  /* with explain */
} answer;

static void answer_free(answer *a)
{
    hv_decref(a->value);
    hv_decref(a->prov);
    free(a->error);
    free(a->explain);
}

/* key looked up for node i over the state */
static answer lookup_for(const lstate *s, size_t i, const char *key, const hv *merge, bool explain)
{
    answer a = {0};
    hiera_cache *view = overlay_new_view(s->ov);
    hiera_error err = {0};
    hiera *h = ws_context(s->w, i, view, &err);
    if (!h) {
        a.st = HIERA_ERROR;
        a.error = xstrdup(err.message ? err.message : "cannot make a context");
    } else {
        char *lk = hiera_key_lookup_form(key);
        const char *keys[1] = {lk ? lk : key};
        hiera_request rq = HIERA_REQUEST_INIT;
        rq.keys = keys;
        rq.nkeys = 1;
        rq.merge = merge;
        rq.explain = HIERA_EXPLAIN_PROVENANCE | (explain ? HIERA_EXPLAIN_DATA : 0);
        hiera_result *res = NULL;
        a.st = hiera_lookup_result(h, &rq, &res, &err);
        if (a.st == HIERA_ERROR)
            a.error = xstrdup(err.message ? err.message : "lookup failed");
        if (res) {
            if (hiera_result_value(res))
                a.value = hv_deep_copy(hiera_result_value(res));
            hv *p = hiera_result_provenance_tree(res);
            a.prov = p ? hv_deep_copy(p) : NULL;
            hv_decref(p);
            if (explain)
                a.explain = hiera_result_explanation_text(res);
            hiera_result_free(res);
        }
        free(lk);
        hiera_free(h);
    }
    hiera_error_clear(&err);
    cache_free(view);
    return a;
}

/* each part of a provenance tree that came from a file: "level (layer) — file:line", once per
 * file (at its first line) */
static void prov_parts(const ws *w, const hv *node, hv *out, int depth)
{
    if (!hv_is(node, HV_HASH) || depth > 64 || hv_array_len(out) > 50)
        return;
    const hv *p = jget(node, "provenance");
    if (!p)
        p = node;
    if (jstr(p, "file")) {
        char *real = ws_real_path(w, jstr(p, "file"));
        int64_t line = 0;
        jint(p, "line", &line);
        char *where = xasprintf(" — %s:", real);
        bool seen = false;
        for (size_t i = 0; i < hv_array_len(out) && !seen; i++)
            seen = strstr(hv_str_ptr(hv_array_get(out, i)), where) != NULL;
        if (!seen) {
            const char *level = jstr(p, "level"), *layer = jstr(p, "layer");
            char *text = xasprintf("%s%s%s%s%s%lld", level ? level : "", layer ? " (" : "", layer ? layer : "",
                                   layer ? ")" : "", where, (long long)line);
            hv_array_push(out, hv_str(text));
            free(text);
        }
        free(where);
        free(real);
    }
    const hv *entries = jobj(p, "entries");
    for (size_t i = 0; entries && i < hv_hash_len(entries); i++)
        prov_parts(w, hv_hash_val_at(entries, i), out, depth + 1);
    const hv *elems = jarr(p, "elements");
    for (size_t i = 0; elems && i < hv_array_len(elems); i++)
        prov_parts(w, hv_array_get(elems, i), out, depth + 1);
}

static char *render_value(const hv *v)
{
    sbuf b = {0};
    herr err = {0};
    if (render_yaml(&b, v, &err) != 0) {
        herr_clear(&err);
        b.len = 0;
        ruby_inspect(&b, v);
    }
    char *s = sb_take(&b);
    /* without the "---" header */
    if (!strncmp(s, "--- ", 4))
        memmove(s, s + 4, strlen(s + 4) + 1);
    else if (!strncmp(s, "---\n", 4))
        memmove(s, s + 4, strlen(s + 4) + 1);
    size_t n = strlen(s);
    while (n && s[n - 1] == '\n')
        s[--n] = 0;
    if (n > 4000)
        strcpy(s + 3990, "\n...");
    return s;
}

/* ------------------------------------------------------------------ lookup_options */

static bool lo_matches(const char *pattern, const char *key)
{
    if (pattern[0] != '^')
        return !strcmp(pattern, key);
    regex_t re;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return false;
    bool m = regexec(&re, key, 0, NULL, 0) == 0;
    regfree(&re);
    return m;
}

/* the lookup_options entries (of every data file that has some) that apply to key */
static void lookup_options_of(const lstate *s, const char *key, sbuf *out)
{
    const ws *w = s->w;
    const hv *files = hv_hash_gets(w->key_files, "lookup_options");
    hiera_cache *view = overlay_new_view(s->ov);
    for (size_t i = 0; files && i < hv_array_len(files); i++) {
        const ws_file *f = &w->files[hv_int_val(hv_array_get(files, i))];
        herr err = {0};
        hv *v = cache_load(view, f->path, !strcmp(ext_of(f->path), ".json") ? FMT_JSON : FMT_YAML, &err);
        herr_clear(&err);
        const hv *lo = hv_is(v, HV_HASH) ? hv_hash_gets(v, "lookup_options") : NULL;
        for (size_t k = 0; hv_is(lo, HV_HASH) && k < hv_hash_len(lo); k++) {
            const hv *pk = hv_hash_key_at(lo, k);
            if (!hv_is(pk, HV_STRING) || !lo_matches(hv_str_ptr(pk), key))
                continue;
            char *real = ws_real_path(w, f->path);
            char *val = render_value(hv_hash_val_at(lo, k));
            sb_addf(out, "- `%s` in %s: `%s`\n", hv_str_ptr(pk), real, val);
            free(val);
            free(real);
        }
        hv_decref(v);
    }
    cache_free(view);
}

/* ------------------------------------------------------------------ hover */

static void class_param_text(lreq *r, const char *key, const hv *const *values, size_t nvalues, sbuf *md)
{
    size_t n;
    const pp_index *const *idx = pp_indexes(r->s, &n);
    const pp_class *cls = NULL;
    const pp_param *p = ws_class_param(idx, n, key, &cls);
    if (!p)
        return;
    char *real = ws_real_path(r->s->w, cls->file);
    sb_addf(md, "\n**Class parameter** `%s` of class `%s` (%s:%u): type `%s`%s\n", p->name, cls->name, real, p->line,
            p->type ? p->type : "Any", p->has_default ? ", with a default" : ", no default");
    free(real);
    if (!p->type)
        return;
    /* the workspace's type aliases resolve on first use: one thread at a time */
    static pthread_mutex_t types_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&types_lock);
    herr err = {0};
    ptype *t = ptype_parse_with(p->type, r->s->w->aliases, &err);
    herr_clear(&err);
    if (!t) {
        pthread_mutex_unlock(&types_lock);
        return;
    }
    for (size_t i = 0; i < nvalues; i++) {
        if (!values[i])
            continue;
        const char *node = r->s->w->nodes[i].name ? r->s->w->nodes[i].name : "(no node)";
        if (ptype_match(t, values[i])) {
            sb_addf(md, "- %s: the value matches `%s`\n", node, p->type);
        } else {
            char *why = ptype_describe_param(t, values[i], p->name);
            sb_addf(md, "- %s: **the value does not match**: %s\n", node, why ? why : p->type);
            free(why);
        }
    }
    ptype_free(t);
    pthread_mutex_unlock(&types_lock);
}

static hv *hover_key(lreq *r, const char *key, const ltext *t, size_t s, size_t e)
{
    const ws *w = r->s->w;
    sbuf md = {0};
    sb_addf(&md, "### `%s`\n", key);
    hv **values = xcalloc(w->nnodes + 1, sizeof *values);
    for (size_t i = 0; i < w->nnodes; i++) {
        if (__atomic_load_n(r->cancelled, __ATOMIC_ACQUIRE))
            break;
        const char *node = w->nodes[i].name ? w->nodes[i].name : "(no node: no facts)";
        answer a = lookup_for(r->s, i, key, NULL, false);
        if (a.st == HIERA_OK) {
            char *v = render_value(a.value);
            sb_addf(&md, "\n**%s**:\n```yaml\n%s\n```\n", node, v);
            free(v);
            hv *parts = hv_array();
            prov_parts(w, a.prov, parts, 0);
            for (size_t k = 0; k < hv_array_len(parts); k++)
                sb_addf(&md, "- %s\n", hv_str_ptr(hv_array_get(parts, k)));
            hv_decref(parts);
            values[i] = hv_incref(a.value);
        } else if (a.st == HIERA_NOT_FOUND) {
            sb_addf(&md, "\n**%s**: not found\n", node);
        } else {
            sb_addf(&md, "\n**%s**: error: %s\n", node, a.error);
        }
        answer_free(&a);
    }
    sbuf lo = {0};
    lookup_options_of(r->s, key, &lo);
    if (lo.len)
        sb_addf(&md, "\n**lookup_options**:\n%s", sb_str(&lo));
    sb_free(&lo);
    class_param_text(r, key, (const hv *const *)values, w->nnodes, &md);
    for (size_t i = 0; i < w->nnodes; i++)
        hv_decref(values[i]);
    free(values);
    hv *res = hv_hash();
    hv *contents = hv_hash();
    jset(contents, "kind", hv_str("markdown"));
    char *text = sb_take(&md);
    jset(contents, "value", hv_str(text));
    free(text);
    jset(res, "contents", contents);
    jset(res, "range", lsp_range_of(t, s, e));
    return res;
}

/* the value of a variable for a node: facts.a.b, trusted.x, or a top-level fact */
static const hv *variable_value(const ws_node *n, const char *var, hv **made)
{
    *made = NULL;
    const hv *root = NULL;
    const char *rest = var;
    hv *merged = hv_hash();
    for (int pass = 0; pass < 2; pass++) {
        const hv *f = pass ? n->facts : n->base;
        for (size_t i = 0; hv_is(f, HV_HASH) && i < hv_hash_len(f); i++)
            hv_hash_set(merged, hv_incref(hv_hash_key_at(f, i)), hv_incref(hv_hash_val_at(f, i)));
    }
    if (!strncmp(var, "facts.", 6) || !strcmp(var, "facts")) {
        root = merged;
        rest = var[5] ? var + 6 : "";
    } else if (!strncmp(var, "trusted.", 8)) {
        root = hv_hash_gets(merged, "trusted");
        rest = var + 8;
    } else {
        root = merged;
    }
    const hv *v = root;
    while (v && *rest) {
        const char *dot = strchr(rest, '.');
        size_t len = dot ? (size_t)(dot - rest) : strlen(rest);
        v = hv_is(v, HV_HASH) ? hv_hash_getsn(v, rest, len) : NULL;
        rest = dot ? dot + 1 : "";
    }
    *made = merged;
    return v;
}

static hv *hover_fact(lreq *r, const char *var, const ltext *t, size_t s, size_t e)
{
    const ws *w = r->s->w;
    sbuf md = {0};
    sb_addf(&md, "### `%%{%s}`\n", var);
    for (size_t i = 0; i < w->nnodes; i++) {
        if (!w->nodes[i].name)
            continue;
        hv *made;
        const hv *v = variable_value(&w->nodes[i], var, &made);
        if (v) {
            char *text = render_value(v);
            sb_addf(&md, "\n**%s**: `%s`\n", w->nodes[i].name, text);
            free(text);
        } else {
            sb_addf(&md, "\n**%s**: not set\n", w->nodes[i].name);
        }
        hv_decref(made);
    }
    hv *res = hv_hash();
    hv *contents = hv_hash();
    jset(contents, "kind", hv_str("markdown"));
    char *text = sb_take(&md);
    jset(contents, "value", hv_str(text));
    free(text);
    jset(res, "contents", contents);
    jset(res, "range", lsp_range_of(t, s, e));
    return res;
}

hv *feat_hover(lreq *r)
{
    cursor c;
    if (!cursor_get(r, &c))
        return NULL;
    at_info a = what_is_at(r, &c);
    hv *res = NULL;
    if (a.kind == AT_KEY && !r->s->w->error)
        res = hover_key(r, a.key, &c.t, a.start, a.end);
    else if (a.kind == AT_FACT && !r->s->w->error)
        res = hover_fact(r, a.key, &c.t, a.start, a.end);
    at_free(&a);
    cursor_free(&c);
    return res ? res : hv_undef();
}

/* ------------------------------------------------------------------ locations */

static hv *location(const char *real, const ltext *t, size_t s, size_t e)
{
    hv *l = hv_hash();
    char *uri = uri_of_path(real);
    jset(l, "uri", hv_str(uri));
    free(uri);
    if (t) {
        jset(l, "range", lsp_range_of(t, s, e));
    } else {
        hv *rg = hv_hash();
        jset(rg, "start", lsp_position(0, 0));
        jset(rg, "end", lsp_position(0, 0));
        jset(l, "range", rg);
    }
    return l;
}

static bool has_location(const hv *list, const char *real)
{
    char *uri = uri_of_path(real);
    bool found = false;
    for (size_t i = 0; i < hv_array_len(list) && !found; i++)
        found = !strcmp(jstr(hv_array_get(list, i), "uri"), uri);
    free(uri);
    return found;
}

/* key's definition in a data file (its key node), appended to out */
static bool add_key_def(const lstate *s, const char *real, const char *key, hv *out, bool utf8)
{
    size_t len;
    char *text = lstate_text(s, real, &len);
    if (!text)
        return false;
    ysdoc *ys = ys_parse(text, len);
    const ysnode *k = top_key_node(ys, key);
    bool ok = k != NULL;
    if (k) {
        ltext t = {.text = text, .len = len, .utf8 = utf8};
        hv_array_push(out, location(real, &t, lt_offset_lc(&t, k->line, k->col), lt_offset_lc(&t, k->eline, k->ecol)));
    }
    ys_free(ys);
    free(text);
    return ok;
}

static void key_definitions(lreq *r, const char *key, hv *out)
{
    const lstate *s = r->s;
    const ws *w = s->w;
    /* every file that defines it in hierarchy order, the open documents' text first */
    const hv *files = w->key_files ? hv_hash_gets(w->key_files, key) : NULL;
    for (size_t i = 0; i < w->nfiles; i++) {
        bool open = false;
        char *real = ws_real_path(w, w->files[i].path);
        for (size_t d = 0; d < s->ndocs && !open; d++)
            open = s->docs[d].path && !strcmp(s->docs[d].path, real);
        bool listed = false;
        for (size_t k = 0; files && k < hv_array_len(files) && !listed; k++)
            listed = (size_t)hv_int_val(hv_array_get(files, k)) == i;
        if ((listed || open) && !has_location(out, real))
            add_key_def(s, real, key, out, s->utf8);
        free(real);
    }
    /* open data files no level reads */
    for (size_t d = 0; d < s->ndocs; d++)
        if (s->docs[d].path && is_data(s->docs[d].path) && !has_location(out, s->docs[d].path))
            add_key_def(s, s->docs[d].path, key, out, s->utf8);
    /* the class parameter */
    size_t n;
    const pp_index *const *idx = pp_indexes(s, &n);
    const pp_class *cls = NULL;
    const pp_param *p = ws_class_param(idx, n, key, &cls);
    if (p) {
        char *real = ws_real_path(w, cls->file);
        size_t len;
        char *text = lstate_text(s, real, &len);
        if (text) {
            ltext t = {.text = text, .len = len, .utf8 = s->utf8};
            size_t off = lt_offset_lc(&t, p->line, p->col);
            size_t end = off;
            while (end < len && (text[end] == '$' || isalnum((unsigned char)text[end]) || text[end] == '_'))
                end++;
            hv_array_push(out, location(real, &t, off, end));
            free(text);
        }
        free(real);
    }
}

static void config_path_targets(lreq *r, const cursor *c, const char *level, hv *out)
{
    const ws *w = r->s->w;
    for (size_t i = 0; i < w->nnodes; i++) {
        hiera_cache *view = overlay_new_view(r->s->ov);
        hiera_error err = {0};
        hiera *h = ws_context(w, i, view, &err);
        hiera_error_clear(&err);
        hv *layers = h ? hiera_hierarchy(h) : NULL;
        for (size_t li = 0; layers && li < hv_array_len(layers); li++) {
            const hv *L = hv_array_get(layers, li);
            const char *cfg = jstr(L, "config");
            if (!cfg || !c->epath || strcmp(cfg, c->epath) != 0)
                continue;
            static const char *const which[] = {"levels", "default_levels", NULL};
            for (size_t wi = 0; which[wi]; wi++) {
                const hv *levels = jarr(L, which[wi]);
                for (size_t k = 0; levels && k < hv_array_len(levels); k++) {
                    const hv *lv = hv_array_get(levels, k);
                    if (!jstr(lv, "name") || strcmp(jstr(lv, "name"), level) != 0)
                        continue;
                    const hv *locs = jarr(lv, "locations");
                    for (size_t m = 0; locs && m < hv_array_len(locs); m++) {
                        const hv *loc = hv_array_get(locs, m);
                        const hv *ex = jget(loc, "exists");
                        if (!jstr(loc, "path") || !hv_truthy(ex))
                            continue;
                        char *real = ws_real_path(w, jstr(loc, "path"));
                        if (!has_location(out, real))
                            hv_array_push(out, location(real, NULL, 0, 0));
                        free(real);
                    }
                }
            }
        }
        hv_decref(layers);
        hiera_free(h);
        cache_free(view);
    }
}

hv *feat_definition(lreq *r)
{
    cursor c;
    if (!cursor_get(r, &c))
        return NULL;
    at_info a = what_is_at(r, &c);
    hv *out = hv_array();
    if (!r->s->w->error) {
        if (a.kind == AT_KEY)
            key_definitions(r, a.key, out);
        else if (a.kind == AT_CONFIG_PATH)
            config_path_targets(r, &c, a.level, out);
    }
    at_free(&a);
    cursor_free(&c);
    return out;
}

/* ------------------------------------------------------------------ references */

typedef struct {
    hv *out;
    const char *real;
    const ltext *t;
} ref_ctx;

static void add_ref(size_t s, size_t e, void *data)
{
    ref_ctx *rc = data;
    hv_array_push(rc->out, location(rc->real, rc->t, s, e));
}

static void pp_refs(const lstate *s, const pp_index *pp, const char *key, bool skip_open, hv *out)
{
    for (size_t i = 0; pp && i < pp->nlookups; i++) {
        const pp_lookup *l = &pp->lookups[i];
        bool match = l->prefix ? !strncmp(key, l->key, strlen(l->key)) : !strcmp(l->key, key);
        if (!match)
            continue;
        char *real = ws_real_path(s->w, l->file);
        bool open = false;
        for (size_t d = 0; d < s->ndocs && skip_open; d++)
            open = open || (s->docs[d].path && !strcmp(s->docs[d].path, real));
        if (!open) {
            size_t len;
            char *text = lstate_text(s, real, &len);
            if (text) {
                ltext t = {.text = text, .len = len, .utf8 = s->utf8};
                size_t off = lt_offset_lc(&t, l->line, l->col), end = off;
                while (end < len && text[end] != '\n' && text[end] != ')')
                    end++;
                hv_array_push(out, location(real, &t, off, end < len && text[end] == ')' ? end + 1 : end));
                free(text);
            }
        }
        free(real);
    }
}

hv *feat_references(lreq *r)
{
    cursor c;
    if (!cursor_get(r, &c))
        return NULL;
    at_info a = what_is_at(r, &c);
    hv *out = hv_array();
    const lstate *s = r->s;
    const ws *w = s->w;
    if (a.kind == AT_KEY && !w->error) {
        /* manifests: lookup(), hiera*() */
        pp_refs(s, s->pp_open, a.key, false, out);
        pp_refs(s, w->pp, a.key, true, out);
        /* the class parameter it binds to (automatic parameter lookup) */
        size_t n;
        const pp_index *const *idx = pp_indexes(s, &n);
        const pp_class *cls = NULL;
        const pp_param *p = ws_class_param(idx, n, a.key, &cls);
        if (p) {
            char *real = ws_real_path(w, cls->file);
            size_t len;
            char *text = lstate_text(s, real, &len);
            if (text) {
                ltext t = {.text = text, .len = len, .utf8 = s->utf8};
                size_t off = lt_offset_lc(&t, p->line, p->col), end = off;
                while (end < len && (text[end] == '$' || isalnum((unsigned char)text[end]) || text[end] == '_'))
                    end++;
                hv_array_push(out, location(real, &t, off, end));
                free(text);
            }
            free(real);
        }
        /* interpolations in data and hiera.yaml files */
        hv *seen = hv_hash();
        for (size_t i = 0; i < w->nfiles + s->ndocs; i++) {
            if (__atomic_load_n(r->cancelled, __ATOMIC_ACQUIRE))
                break;
            char *real = i < w->nfiles ? ws_real_path(w, w->files[i].path)
                                       : s->docs[i - w->nfiles].path ? xstrdup(s->docs[i - w->nfiles].path) : NULL;
            if (!real || hv_hash_gets(seen, real) || (i >= w->nfiles && !is_data(real) && !is_config(real))) {
                free(real);
                continue;
            }
            hv_hash_sets(seen, real, hv_true());
            size_t len;
            char *text = lstate_text(s, real, &len);
            if (text && strstr(text, a.key)) {
                ltext t = {.text = text, .len = len, .utf8 = s->utf8};
                ref_ctx rc = {out, real, &t};
                each_key_interp(text, len, a.key, add_ref, &rc);
            }
            free(text);
            free(real);
        }
        hv_decref(seen);
        /* and, when asked, its definitions */
        if (hv_truthy(jget(jobj(r->params, "context"), "includeDeclaration")))
            key_definitions(r, a.key, out);
    }
    at_free(&a);
    cursor_free(&c);
    return out;
}

/* ------------------------------------------------------------------ completion */

static void add_item(hv *items, const char *label, int kind, const char *detail, const char *doc, const char *insert)
{
    hv *it = hv_hash();
    jset(it, "label", hv_str(label));
    jset(it, "kind", hv_int(kind));
    if (detail)
        jset(it, "detail", hv_str(detail));
    if (doc) {
        hv *d = hv_hash();
        jset(d, "kind", hv_str("markdown"));
        jset(d, "value", hv_str(doc));
        jset(it, "documentation", d);
    }
    if (insert)
        jset(it, "insertText", hv_str(insert));
    hv_array_push(items, it);
}

/* a parameter's default as written: the text after '=' up to the ',' or ')' that ends it */
static char *param_default(const lstate *s, const pp_class *cls, const pp_param *p)
{
    if (!p->has_default)
        return NULL;
    char *real = ws_real_path(s->w, cls->file);
    size_t len;
    char *text = lstate_text(s, real, &len);
    free(real);
    if (!text)
        return NULL;
    ltext t = {.text = text, .len = len, .utf8 = false};
    size_t i = lt_offset_lc(&t, p->line, p->col);
    while (i < len && text[i] != '=' && text[i] != ',' && text[i] != ')')
        i++;
    char *out = NULL;
    if (i < len && text[i] == '=') {
        size_t st = ++i;
        int depth = 0;
        char q = 0;
        for (; i < len; i++) {
            char ch = text[i];
            if (q) {
                if (ch == '\\')
                    i++;
                else if (ch == q)
                    q = 0;
            } else if (ch == '\'' || ch == '"') {
                q = ch;
            } else if (ch == '[' || ch == '{' || ch == '(') {
                depth++;
            } else if (ch == ']' || ch == '}' || ch == ')') {
                if (!depth)
                    break;
                depth--;
            } else if (ch == ',' && !depth) {
                break;
            }
        }
        while (st < i && isspace((unsigned char)text[st]))
            st++;
        while (i > st && isspace((unsigned char)text[i - 1]))
            i--;
        if (i - st > 400)
            i = st + 400;
        out = xstrndup(text + st, i - st);
    }
    free(text);
    return out;
}

static void complete_keys(lreq *r, const char *prefix, hv *items, bool insert_colon)
{
    const lstate *s = r->s;
    hv *seen = hv_hash();
    size_t n;
    const pp_index *const *idx = pp_indexes(s, &n);
    size_t pl = strlen(prefix);
    for (size_t x = 0; x < n; x++)
        for (size_t i = 0; idx[x] && i < idx[x]->nclasses; i++) {
            const pp_class *cls = &idx[x]->classes[i];
            for (size_t j = 0; j < cls->nparams; j++) {
                char *key = xasprintf("%s::%s", cls->name, cls->params[j].name);
                if (!hv_hash_gets(seen, key) && !strncmp(key, prefix, pl) && hv_array_len(items) < 5000) {
                    hv_hash_sets(seen, key, hv_true());
                    char *def = param_default(s, cls, &cls->params[j]);
                    char *doc = xasprintf("Parameter of class `%s`%s%s%s", cls->name, def ? "; default: `" : "; no default",
                                          def ? def : "", def ? "`" : "");
                    char *ins = insert_colon ? xasprintf("%s: ", key) : NULL;
                    add_item(items, key, 10 /* Property */, cls->params[j].type ? cls->params[j].type : "Any", doc, ins);
                    free(ins);
                    free(doc);
                    free(def);
                }
                free(key);
            }
        }
    const hv *kf = s->w->key_files;
    for (size_t i = 0; kf && i < hv_hash_len(kf); i++) {
        const char *key = hv_str_ptr(hv_hash_key_at(kf, i));
        if (hv_hash_gets(seen, key) || strncmp(key, prefix, pl) != 0 || !strcmp(key, "lookup_options") || hv_array_len(items) >= 5000)
            continue;
        hv_hash_sets(seen, key, hv_true());
        const hv *files = hv_hash_val_at(kf, i);
        sbuf doc = {0};
        sb_adds(&doc, "Defined in:\n");
        for (size_t k = 0; k < hv_array_len(files) && k < 8; k++) {
            const ws_file *f = &s->w->files[hv_int_val(hv_array_get(files, k))];
            char *real = ws_real_path(s->w, f->path);
            sb_addf(&doc, "- %s%s%s%s\n", f->level ? f->level : "", f->level ? " — " : "", real, "");
            free(real);
        }
        char *d = sb_take(&doc);
        char *detail = xasprintf("key (%zu file%s)", hv_array_len(files), hv_array_len(files) == 1 ? "" : "s");
        char *ins = insert_colon ? xasprintf("%s: ", key) : NULL;
        add_item(items, key, 14 /* Keyword */, detail, d, ins);
        free(ins);
        free(detail);
        free(d);
    }
    hv_decref(seen);
}

static void complete_variable(lreq *r, const char *expr, hv *items)
{
    const ws *w = r->s->w;
    const char *dot = strrchr(expr, '.');
    char *parent = dot ? xstrndup(expr, (size_t)(dot - expr)) : NULL;
    hv *seen = hv_hash();
    if (!parent) {
        static const char *const roots[] = {"facts", "trusted", "environment", "server_facts", NULL};
        for (size_t i = 0; roots[i]; i++)
            add_item(items, roots[i], 6 /* Variable */, NULL, NULL, NULL);
        static const char *const fns[] = {"lookup('", "alias('", "literal('", NULL};
        for (size_t i = 0; fns[i]; i++)
            add_item(items, fns[i], 3 /* Function */, NULL, NULL, NULL);
    }
    for (size_t i = 0; parent && i < w->nnodes; i++) {
        if (!w->nodes[i].name)
            continue;
        hv *made;
        const hv *v = variable_value(&w->nodes[i], parent, &made);
        if (!v && !strcmp(parent, "trusted")) {
            static const char *const tk[] = {"certname", "domain", "hostname", "authenticated", "extensions", "external", NULL};
            for (size_t k = 0; tk[k]; k++)
                if (!hv_hash_gets(seen, tk[k])) {
                    hv_hash_sets(seen, tk[k], hv_true());
                    add_item(items, tk[k], 5 /* Field */, "trusted", NULL, NULL);
                }
        }
        for (size_t k = 0; hv_is(v, HV_HASH) && k < hv_hash_len(v); k++) {
            const hv *fk = hv_hash_key_at(v, k);
            if (!hv_is(fk, HV_STRING) || hv_hash_gets(seen, hv_str_ptr(fk)))
                continue;
            hv_hash_sets(seen, hv_str_ptr(fk), hv_true());
            char *val = render_value(hv_hash_val_at(v, k));
            char *doc = xasprintf("%s: `%.200s`", w->nodes[i].name, val);
            add_item(items, hv_str_ptr(fk), 5 /* Field */, hv_kind_name(hv_kind_of(hv_hash_val_at(v, k))), doc, NULL);
            free(doc);
            free(val);
        }
        hv_decref(made);
    }
    hv_decref(seen);
    free(parent);
}

static void complete_merge(hv *items)
{
    static const char *const names[] = {"first", "unique", "hash", "deep", NULL};
    static const char *const docs[] = {
        "The first value found (no merge): the default.",
        "Arrays (and scalars) of every level flattened into one array, duplicates removed; the higher level's come first.",
        "Hashes of every level merged on their top-level keys; the higher level wins a key.",
        "Hashes merged recursively, arrays merged unique; options: knockout_prefix, sort_merged_arrays, merge_hash_arrays.",
        NULL};
    for (size_t i = 0; names[i]; i++)
        add_item(items, names[i], 12 /* Value */, "merge strategy", docs[i], NULL);
}

hv *feat_completion(lreq *r)
{
    cursor c;
    if (!cursor_get(r, &c))
        return NULL;
    hv *items = hv_array();
    const char *p = c.path ? c.path : c.uri;
    size_t ls = c.off;
    while (ls > 0 && c.text[ls - 1] != '\n')
        ls--;
    char *line = xstrndup(c.text + ls, c.off - ls); /* the line up to the cursor */
    char *open = NULL;
    for (char *q = strstr(line, "%{"); q; q = strstr(q + 2, "%{"))
        open = strchr(q, '}') ? NULL : q;
    if (r->s->w->error) {
        /* nothing known */
    } else if (open && (is_data(p) || is_config(p))) {
        const char *expr = open + 2;
        while (*expr == ' ' || *expr == ':')
            expr++;
        const char *paren = strchr(expr, '(');
        if (paren && (paren[1] == '\'' || paren[1] == '"'))
            complete_keys(r, paren + 2, items, false);
        else
            complete_variable(r, expr, items);
    } else if (is_data(p) && (strstr(line, "merge:") || strstr(line, "strategy:"))) {
        complete_merge(items);
    } else if (is_data(p) && !strstr(line, ": ") && line[0] != ' ' && line[0] != '\t' && line[0] != '-' && line[0] != '#') {
        complete_keys(r, line, items, true);
    } else if (is_pp(p)) {
        const char *q = strstr(line, "lookup(");
        if (!q)
            q = strstr(line, "hiera(");
        if (q) {
            const char *arg = strchr(q, '(') + 1;
            while (*arg == ' ')
                arg++;
            if (*arg == '\'' || *arg == '"')
                complete_keys(r, arg + 1, items, false);
        }
    }
    free(line);
    cursor_free(&c);
    hv *res = hv_hash();
    jset(res, "isIncomplete", hv_bool(hv_array_len(items) >= 5000));
    jset(res, "items", items);
    return res;
}

/* ------------------------------------------------------------------ code actions */

static hv *text_edit(const ltext *t, size_t s, size_t e, const char *text)
{
    hv *ed = hv_hash();
    jset(ed, "range", lsp_range_of(t, s, e));
    jset(ed, "newText", hv_str(text));
    return ed;
}

static hv *doc_edit(const char *uri, hv *edits)
{
    hv *de = hv_hash();
    hv *td = hv_hash();
    jset(td, "uri", hv_str(uri));
    jset(td, "version", hv_undef());
    jset(de, "textDocument", td);
    jset(de, "edits", edits);
    return de;
}

/* "did you mean 'X'" fixes of the diagnostics the client sends back */
static void did_you_mean(const cursor *c, const hv *diags, hv *out)
{
    for (size_t i = 0; diags && i < hv_array_len(diags); i++) {
        const hv *d = hv_array_get(diags, i);
        const char *msg = jstr(d, "message");
        const char *m = msg ? strstr(msg, "did you mean '") : NULL;
        if (!m)
            continue;
        m += 14;
        const char *q = strchr(m, '\'');
        if (!q)
            continue;
        char *best = xstrndup(m, (size_t)(q - m));
        const hv *rg = jobj(d, "range");
        int64_t sl = 0, sc = 0, el = 0, ec = 0;
        jint(jobj(rg, "start"), "line", &sl), jint(jobj(rg, "start"), "character", &sc);
        jint(jobj(rg, "end"), "line", &el), jint(jobj(rg, "end"), "character", &ec);
        size_t s = lt_offset(&c->t, sl, sc), e = lt_offset(&c->t, el, ec);
        /* the word of the range the suggestion replaces: the whole word when it has as many
         * segments, else its last segment ("profile::base::userz" -> "users"); inside an
         * interpolation, the variable */
        interp it;
        if (interp_at(c->text, c->len, s, &it)) {
            size_t vs = (size_t)(strstr(c->text + it.start, it.arg) ? strstr(c->text + it.start, it.arg) - c->text : (long)s);
            s = vs;
            e = vs + strlen(it.arg);
            free(it.arg);
        }
        while (e > s && (c->text[e - 1] == ':' || c->text[e - 1] == '"' || c->text[e - 1] == '\''))
            e--;
        while (s < e && (c->text[s] == '"' || c->text[s] == '\''))
            s++;
        char *word = xstrndup(c->text + s, e - s);
        size_t segs_w = 0, segs_b = 0;
        for (const char *x = word; (x = strstr(x, "::")); x += 2)
            segs_w++;
        for (const char *x = best; (x = strstr(x, "::")); x += 2)
            segs_b++;
        if (segs_w != segs_b) {
            const char *last = NULL;
            for (const char *x = word; (x = strstr(x, "::")); x += 2)
                last = x + 2;
            if (last && !strstr(best, "::"))
                s += (size_t)(last - word);
        } else if (!segs_w && strchr(word, '.') && !strchr(best, '.')) {
            s += (size_t)(strrchr(word, '.') + 1 - word);
        }
        hv *edits = hv_array();
        hv_array_push(edits, text_edit(&c->t, s, e, best));
        hv *changes = hv_array();
        hv_array_push(changes, doc_edit(c->uri, edits));
        hv *we = hv_hash();
        jset(we, "documentChanges", changes);
        hv *act = hv_hash();
        char *title = xasprintf("Change to '%s'", best);
        jset(act, "title", hv_str(title));
        free(title);
        jset(act, "kind", hv_str("quickfix"));
        hv *dl = hv_array();
        hv_array_push(dl, hv_copy(d));
        jset(act, "diagnostics", dl);
        jset(act, "isPreferred", hv_true());
        jset(act, "edit", we);
        hv_array_push(out, act);
        free(word);
        free(best);
    }
}

/* Actions moving the top-level key at the cursor to the file of another level. */
static void move_key(lreq *r, cursor *c, hv *out)
{
    const ws *w = r->s->w;
    if (!c->path || !is_data(c->path) || w->error)
        return;
    uint32_t l, col;
    line_col(c->text, c->off, &l, &col);
    const ysnode *k = NULL;
    const char *key = top_key_at(cursor_ys(c), l, col, &k, NULL);
    if (!key || !strcmp(key, "lookup_options"))
        return;
    const ysnode *m = top_map(cursor_ys(c));
    const ysnode *v = NULL;
    for (uint32_t i = 0; i + 1 < m->n; i += 2)
        if (m->kids[i] == k)
            v = m->kids[i + 1];
    if (!v || m->style == YS_FLOW || strcmp(ext_of(c->path), ".json") == 0)
        return;
    /* the entry's lines: from the key's line to the end of its value's last line */
    size_t s = lt_line_start(&c->t, k->line - 1);
    size_t e = lt_offset_lc(&c->t, v->eline, v->ecol);
    if (v->ecol > 1 || v->eline == k->line)
        while (e < c->len && c->text[e] != '\n')
            e++;
    if (e < c->len && c->text[e] == '\n')
        e++;
    char *entry = xstrndup(c->text + s, e - s);
    /* the targets: the other data files of the hierarchy, in the same layer */
    const hv *idx = hv_hash_gets(w->file_index, c->epath ? c->epath : "");
    int layer = idx ? w->files[hv_int_val(idx)].layer : 1;
    size_t count = 0;
    for (size_t i = 0; i < w->nfiles && count < 30; i++) {
        const ws_file *f = &w->files[i];
        if (f->layer != layer || !f->level || (c->epath && !strcmp(f->path, c->epath)) || !strcmp(ext_of(f->path), ".json"))
            continue;
        char *real = ws_real_path(w, f->path);
        size_t tl;
        char *ttext = lstate_text(r->s, real, &tl);
        if (!ttext) {
            free(real);
            continue;
        }
        ysdoc *tys = ys_parse(ttext, tl);
        bool defines = top_key_node(tys, key) != NULL, flow = top_map(tys) && top_map(tys)->style == YS_FLOW;
        ys_free(tys);
        if (!defines && !flow) {
            ltext tt = {.text = ttext, .len = tl, .utf8 = r->s->utf8};
            hv *tedits = hv_array();
            /* appended, after a line break when the file does not end with one */
            const char *sep = tl && ttext[tl - 1] != '\n' ? "\n" : "";
            bool empty_map = false;
            for (size_t x = 0; x < tl; x++)
                if (!isspace((unsigned char)ttext[x])) {
                    empty_map = ttext[x] == '-' && tl - x >= 3 && !strncmp(ttext + x, "---", 3) && !strchr(ttext + x + 3, ':');
                    break;
                }
            (void)empty_map;
            char *ins = xasprintf("%s%s", sep, entry);
            hv_array_push(tedits, text_edit(&tt, tl, tl, ins));
            free(ins);
            hv *sedits = hv_array();
            hv_array_push(sedits, text_edit(&c->t, s, e, ""));
            hv *changes = hv_array();
            hv_array_push(changes, doc_edit(c->uri, sedits));
            char *turi = uri_of_path(real);
            hv_array_push(changes, doc_edit(turi, tedits));
            free(turi);
            hv *we = hv_hash();
            jset(we, "documentChanges", changes);
            hv *act = hv_hash();
            char *rel = !strncmp(real, w->real_dir, strlen(w->real_dir)) ? xstrdup(real + strlen(w->real_dir) + 1) : xstrdup(real);
            char *title = xasprintf("Move '%s' to level '%s' (%s)", key, f->level, rel);
            jset(act, "title", hv_str(title));
            free(title);
            free(rel);
            jset(act, "kind", hv_str("refactor.move"));
            jset(act, "edit", we);
            hv_array_push(out, act);
            count++;
        }
        free(ttext);
        free(real);
    }
    free(entry);
}

hv *feat_code_action(lreq *r)
{
    cursor c;
    const hv *rg = jobj(r->params, "range");
    /* the position is the range's start */
    hv *params = hv_copy(r->params);
    if (rg && jobj(rg, "start"))
        jset(params, "position", hv_copy(jobj(rg, "start")));
    const hv *saved = r->params;
    r->params = params;
    bool ok = cursor_get(r, &c);
    r->params = saved;
    hv_decref(params);
    if (!ok)
        return NULL;
    hv *out = hv_array();
    const hv *only = jarr(jobj(r->params, "context"), "only");
    bool want_fix = !only, want_move = !only;
    for (size_t i = 0; only && i < hv_array_len(only); i++) {
        const char *k = hv_str_ptr(hv_array_get(only, i));
        want_fix = want_fix || !strncmp(k, "quickfix", 8);
        want_move = want_move || !strncmp(k, "refactor", 8);
    }
    if (want_fix)
        did_you_mean(&c, jarr(jobj(r->params, "context"), "diagnostics"), out);
    if (want_move)
        move_key(r, &c, out);
    cursor_free(&c);
    return out;
}

/* ------------------------------------------------------------------ document symbols */

static int symbol_kind(const ysnode *v)
{
    if (!v)
        return 21; /* Null */
    if (v->kind == YS_MAP)
        return 19; /* Object */
    if (v->kind == YS_SEQ)
        return 18; /* Array */
    if (v->kind == YS_SCALAR && v->style == YS_PLAIN) {
        if (!strcmp(v->text, "true") || !strcmp(v->text, "false"))
            return 17; /* Boolean */
        if (v->len && (isdigit((unsigned char)v->text[0]) || v->text[0] == '-'))
            return 16; /* Number */
        if (!v->len || !strcmp(v->text, "~") || !strcmp(v->text, "null"))
            return 21;
    }
    return 15; /* String */
}

static hv *symbols_of(const ltext *t, const ysnode *m, int depth, size_t *count)
{
    hv *out = hv_array();
    for (uint32_t i = 0; m && m->kind == YS_MAP && i + 1 < m->n && *count < 20000; i += 2) {
        const ysnode *k = m->kids[i], *v = m->kids[i + 1];
        if (!k || k->kind != YS_SCALAR)
            continue;
        (*count)++;
        hv *s = hv_hash();
        jset(s, "name", hv_str(k->len ? k->text : "\"\""));
        jset(s, "kind", hv_int(symbol_kind(v)));
        if (v && v->kind == YS_SCALAR && v->len) {
            char *detail = xstrndup(v->text, v->len > 80 ? 80 : v->len);
            for (char *x = detail; *x; x++)
                if (*x == '\n')
                    *x = ' ';
            jset(s, "detail", hv_str(detail));
            free(detail);
        }
        size_t ks = lt_offset_lc(t, k->line, k->col), ke = lt_offset_lc(t, k->eline, k->ecol);
        size_t ve = v ? lt_offset_lc(t, v->eline, v->ecol) : ke;
        jset(s, "range", lsp_range_of(t, ks, ve > ks ? ve : ke));
        jset(s, "selectionRange", lsp_range_of(t, ks, ke));
        if (v && v->kind == YS_MAP && depth < 16)
            jset(s, "children", symbols_of(t, v, depth + 1, count));
        hv_array_push(out, s);
    }
    return out;
}

hv *feat_document_symbol(lreq *r)
{
    cursor c;
    if (!cursor_get(r, &c))
        return NULL;
    hv *out;
    const char *p = c.path ? c.path : c.uri;
    if (is_data(p) || is_config(p)) {
        size_t count = 0;
        out = symbols_of(&c.t, top_map(cursor_ys(&c)), 0, &count);
    } else {
        out = hv_array();
    }
    cursor_free(&c);
    return out;
}

/* ------------------------------------------------------------------ hiera/lookup */

hv *feat_lookup(lreq *r)
{
    const char *key = jstr(r->params, "key");
    if (!key || !*key) {
        r->err_code = RPC_INVALID_PARAMS;
        r->err_msg = xstrdup("hiera/lookup needs a key");
        return NULL;
    }
    const ws *w = r->s->w;
    if (w->error) {
        r->err_code = RPC_REQUEST_FAILED;
        r->err_msg = xstrdup(w->error);
        return NULL;
    }
    const char *only = jstr(r->params, "node");
    bool explain = hv_truthy(jget(r->params, "explain"));
    const hv *merge = jget(r->params, "merge");
    if (hv_is(merge, HV_UNDEF))
        merge = NULL;
    hv *nodes = hv_array();
    for (size_t i = 0; i < w->nnodes; i++) {
        if (only && (!w->nodes[i].name || strcmp(only, w->nodes[i].name) != 0))
            continue;
        if (__atomic_load_n(r->cancelled, __ATOMIC_ACQUIRE))
            break;
        answer a = lookup_for(r->s, i, key, merge, explain);
        hv *n = hv_hash();
        jset(n, "node", w->nodes[i].name ? hv_str(w->nodes[i].name) : hv_undef());
        jset(n, "found", hv_bool(a.st == HIERA_OK));
        if (a.value)
            jset(n, "value", hv_incref(a.value));
        if (a.error)
            jset(n, "error", hv_str(a.error));
        hv *parts = hv_array();
        prov_parts(w, a.prov, parts, 0);
        jset(n, "sources", parts);
        if (a.explain)
            jset(n, "explanation", hv_str(a.explain));
        hv_array_push(nodes, n);
        answer_free(&a);
    }
    if (only && !hv_array_len(nodes)) {
        hv_decref(nodes);
        r->err_code = RPC_INVALID_PARAMS;
        r->err_msg = xasprintf("node '%s' is not one of the configured nodes", only);
        return NULL;
    }
    hv *res = hv_hash();
    jset(res, "key", hv_str(key));
    jset(res, "nodes", nodes);
    return res;
}

/* ------------------------------------------------------------------ syntax and links */

hv *doc_syntax_error(const lstate *s, const ldoc *d)
{
    const char *p = d->path ? d->path : d->uri;
    if (!is_data(p) && !is_config(p))
        return NULL;
    file_format fmt = is_config(p) ? FMT_CONFIG : !strcmp(ext_of(p), ".json") ? FMT_JSON : FMT_YAML;
    herr err = {0};
    hv *v = cache_parse_text(d->epath ? d->epath : p, d->text, d->len, fmt, &err);
    if (v) {
        hv_decref(v);
        return NULL;
    }
    ltext t = {.text = d->text, .len = d->len, .utf8 = s->utf8};
    size_t off = lt_offset_lc(&t, err.line > 0 ? (uint32_t)err.line : 1, err.col > 0 ? (uint32_t)err.col : 1), end = off;
    while (end < d->len && d->text[end] != '\n')
        end++;
    hv *diag = hv_hash();
    jset(diag, "range", lsp_range_of(&t, off, end > off ? end : off));
    jset(diag, "severity", hv_int(1));
    const char *rule = fmt == FMT_CONFIG ? "config-syntax" : "data-syntax";
    jset(diag, "code", hv_str(rule));
    hv *cd = hv_hash();
    char *link = rule_link(rule);
    jset(cd, "href", hv_str(link));
    free(link);
    jset(diag, "codeDescription", cd);
    jset(diag, "source", hv_str("hiera check"));
    char *msg = err.msg ? xstrdup(err.msg) : xstrdup("does not parse");
    /* the engine names the file as it sees it: the real path instead */
    if (d->epath && d->path && strcmp(d->epath, d->path) != 0) {
        char *at = strstr(msg, d->epath);
        if (at) {
            char *fixed = xasprintf("%.*s%s%s", (int)(at - msg), msg, d->path, at + strlen(d->epath));
            free(msg);
            msg = fixed;
        }
    }
    jset(diag, "message", hv_str(msg));
    free(msg);
    herr_clear(&err);
    return diag;
}

/* the README's URI, found once: next to the command (a build tree), or where `make install` puts
 * it (../share/doc/hiera; the Debian package's ../share/doc/hiera-c) */
static char *readme_uri;
static void find_readme(void)
{
    static const char *const rel[] = {"/../README.md", "/../share/doc/hiera/README.md", "/../share/doc/hiera-c/README.md",
                                      NULL};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *dir = pn_dirname(exe);
        for (size_t i = 0; rel[i] && !readme_uri; i++) {
            char *p = xjoin(dir, rel[i], NULL);
            char *real = realpath(p, NULL);
            free(p);
            if (real)
                readme_uri = uri_of_path(real);
            free(real);
        }
        free(dir);
    }
    if (!readme_uri)
        readme_uri = xstrdup("file:///usr/share/doc/hiera/README.md");
}

char *rule_link(const char *rule)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_readme);
    return xasprintf("%s#the-rules:~:text=%s", readme_uri, rule);
}
