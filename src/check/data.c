/* data.c - the rules that read data files: syntax and orphans, YAML traps, interpolation,
 * eyaml blocks, lookup_options and module namespaces, per file; then what needs every file
 * (lookup()/alias() of keys nobody defines, loops, lookup_options that match nothing, variables).
 *
 * Positions come from the file's marks (yscan.h): a finding about a scalar points at it, one
 * about a %{...} or an ENC[...] inside a scalar at that text when it is found as written in the
 * source (escapes and folding can hide it: the scalar's start then). */
#include "check/ck_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rregex.h"
#include "crypto/eyaml.h"
#include "engine/engine.h"
#include "engine/merge.h"
#include "formats/psych.h"
#include "formats/render.h"

/* ------------------------------------------------------------------ interpolation scanner */

static bool is_word_char(unsigned char c) { return isalnum(c) || c == '_'; }

void ck_scan_interpolations(const char *s, size_t len, ix_fn fn, void *data)
{
    static const ix_kind kinds[] = {[INTERP_EMPTY] = IX_EMPTY,     [INTERP_SCOPE] = IX_SCOPE,
                                    [INTERP_LOOKUP] = IX_LOOKUP,   [INTERP_ALIAS] = IX_ALIAS,
                                    [INTERP_LITERAL] = IX_LITERAL, [INTERP_UNKNOWN] = IX_UNKNOWN_METHOD};
    size_t pos = 0, ob;
    const char *p;
    size_t n;
    int r;
    while ((r = interp_next_expr(s, len, &pos, &ob, &p, &n)) != 0) {
        ix_item it = {0};
        it.start = ob;
        if (r < 0) {
            it.kind = IX_UNCLOSED;
            it.expr = s + ob + 2;
            it.len = len - ob - 2;
            it.end = len;
            fn(&it, data);
            return;
        }
        it.expr = p;
        it.len = n;
        it.end = pos;
        char *arg = NULL;
        interp_kind k = interp_parse_expr(p, n, &arg);
        it.kind = kinds[k];
        if (k == INTERP_EMPTY) {
            free(arg);
            arg = NULL;
        } else if (k == INTERP_SCOPE && strlen(arg) == n && memcmp(arg, p, n) == 0) {
            /* a plain name (not scope('...')): one that looks like a call is a method Puppet
             * does not know the syntax of */
            size_t i = 0;
            while (i < n && is_word_char((unsigned char)p[i]))
                i++;
            if (i > 0 && i < n && p[i] == '(') {
                it.kind = IX_BAD_CALL;
                free(arg);
                arg = xstrndup(p, i);
            }
        }
        it.arg = arg;
        fn(&it, data);
        free(it.arg);
    }
}

/* ------------------------------------------------------------------ positions in a file */

typedef struct {
    ck_ctx *c;
    ck_env *e;
    ck_file *f;
    uint32_t fi;
    size_t *ls;    /* byte offset of each line's start */
    size_t nls;
    const char *top_key;   /* the top-level key whose value is being walked, or NULL */
    bool in_lookup_options;
    /* ENC[...] blocks in a file that no eyaml level reads */
    size_t plain_enc;
    uint32_t plain_enc_line, plain_enc_col;
    bool eyaml;              /* an eyaml level reads the file */
    const hv *eyaml_options; /* that level's options (NULL: none) */
    hv *dec_options;         /* those options with the key files found (NULL: the private key is not here) */
    bool dec_done;
    const char *eyaml_level;
    eyaml_ctx *ey;
} fctx;

static void line_starts(fctx *x)
{
    if (!x->f->text)
        return;
    size_t cap = 64;
    x->ls = xmalloc(cap * sizeof *x->ls);
    x->ls[x->nls++] = 0;
    for (size_t i = 0; i < x->f->len; i++)
        if (x->f->text[i] == '\n') {
            if (x->nls == cap) {
                cap *= 2;
                x->ls = xrealloc(x->ls, cap * sizeof *x->ls);
            }
            x->ls[x->nls++] = i + 1;
        }
}

/* The byte offset of a 1-based (line, column in characters) mark. */
static size_t offset_of(const fctx *x, uint32_t line, uint32_t col)
{
    if (!x->nls || !line)
        return 0;
    size_t o = x->ls[line - 1 < x->nls ? line - 1 : x->nls - 1];
    for (uint32_t c = 1; c < col && o < x->f->len && x->f->text[o] != '\n'; c++) {
        o++;
        while (o < x->f->len && ((unsigned char)x->f->text[o] & 0xC0) == 0x80)
            o++;
    }
    return o;
}

static void position_of(const fctx *x, size_t off, uint32_t *line, uint32_t *col)
{
    size_t lo = 0, hi = x->nls;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (x->ls[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    *line = (uint32_t)lo + 1;
    uint32_t c = 1;
    for (size_t i = x->ls[lo]; i < off && i < x->f->len; i++)
        if (((unsigned char)x->f->text[i] & 0xC0) != 0x80)
            c++;
    *col = c;
}

/* Where needle (as written) is in the source of node n, searching from *cursor (a byte offset;
 * 0 for the node's start), moved past it. false: not found as written. */
static bool find_in_node(const fctx *x, const ysnode *n, const char *needle, size_t nlen, size_t *cursor,
                         uint32_t *line, uint32_t *col)
{
    if (!n || !x->f->text)
        return false;
    size_t start = offset_of(x, n->line, n->col), end = offset_of(x, n->eline, n->ecol);
    if (*cursor > start)
        start = *cursor;
    if (end <= start || end - start < nlen)
        return false;
    const char *hit = memmem(x->f->text + start, end - start, needle, nlen);
    if (!hit)
        return false;
    size_t off = (size_t)(hit - x->f->text);
    *cursor = off + nlen;
    position_of(x, off, line, col);
    return true;
}

static const char *layer_word(layer_kind k)
{
    return k == LAYER_GLOBAL ? "global" : k == LAYER_ENV ? "environment" : "module";
}

/* ------------------------------------------------------------------ interpolation */

typedef struct {
    ck_ctx *c;
    fctx *x;            /* a data file's (positions from its marks), or NULL */
    const ysnode *node; /* the scalar, for positions */
    uint32_t line, col; /* its start (or the value's line without marks) */
    const char *s;
    size_t len;
    size_t cursor;
    bool config;        /* in a hiera.yaml: no method syntax */
    int cfg;            /* that hiera.yaml's number, or -1 */
    const char *file;
    const char *top_key;
    uint32_t fi;        /* the data file's number, or UINT32_MAX */
    const char *mapped; /* in a mapped_paths template: the element's name (no variable), or NULL */
    bool unshielded;    /* in a hiera.yaml's datadir or options (ck_var's) */
} ictx;

static void item_pos(ictx *ic, const ix_item *it, uint32_t *line, uint32_t *col)
{
    *line = ic->line;
    *col = ic->col;
    if (ic->x && ic->node)
        find_in_node(ic->x, ic->node, ic->s + it->start, it->end - it->start, &ic->cursor, line, col);
    else if (ic->node && ic->cfg >= 0) {
        /* a hiera.yaml: its marks and text are the configuration's */
        const ck_config *cf = &ic->c->env->configs[ic->cfg];
        ck_file tmp = {.text = cf->text, .len = cf->len};
        fctx fx = {.f = &tmp};
        line_starts(&fx);
        find_in_node(&fx, ic->node, ic->s + it->start, it->end - it->start, &ic->cursor, line, col);
        free(fx.ls);
    }
}

static void add_ref(ck_env *e, const char *key, const char *from, uint32_t file, uint32_t line, uint32_t col, bool alias)
{
    if (e->nrefs == e->caprefs) {
        e->caprefs = e->caprefs ? e->caprefs * 2 : 64;
        e->refs = xrealloc(e->refs, e->caprefs * sizeof *e->refs);
    }
    /* the root key: a dotted key digs into the value (SubLookup) */
    hv *segs = split_key(key, strlen(key));
    const hv *root = segs && hv_array_len(segs) ? hv_array_get(segs, 0) : NULL;
    char *rk = root && hv_is(root, HV_STRING) ? xstrdup(hv_str_ptr(root)) : xstrdup(key);
    hv_decref(segs);
    e->refs[e->nrefs++] = (ck_ref){rk, from ? xstrdup(from) : NULL, file, line, col, alias};
    ck_key *k = ck_key_get(e, rk);
    if (k)
        k->referenced = true;
}

static void add_var(ck_env *e, const char *expr, hv *segs, uint32_t file, int cfg, uint32_t line, uint32_t col,
                    bool unshielded)
{
    if (e->nvars == e->capvars) {
        e->capvars = e->capvars ? e->capvars * 2 : 64;
        e->vars = xrealloc(e->vars, e->capvars * sizeof *e->vars);
    }
    e->vars[e->nvars++] = (ck_var){xstrdup(expr), segs, file, cfg, line, col, unshielded};
}

static void on_interpolation(const ix_item *it, void *data)
{
    ictx *ic = data;
    ck_ctx *c = ic->c;
    ck_env *e = c->env;
    uint32_t line, col;
    item_pos(ic, it, &line, &col);
    const char *file = ic->file;
    bool method = it->kind == IX_LOOKUP || it->kind == IX_ALIAS || it->kind == IX_LITERAL || it->kind == IX_UNKNOWN_METHOD ||
                  (it->kind == IX_SCOPE && it->arg && (size_t)(it->len) != strlen(it->arg));
    if (ic->config && method) {
        ck_add(c, "interpolation-function", 0, file, line, col,
               "Interpolation using method syntax is not allowed in this context: %%{%.*s}", (int)it->len, it->expr);
        return;
    }
    switch (it->kind) {
    case IX_EMPTY:
    case IX_LITERAL:
        break;
    case IX_UNCLOSED:
        ck_add(c, "interpolation-syntax", 0, file, line, col, "'%%{' without a closing '}': the text is left as it is");
        break;
    case IX_UNKNOWN_METHOD:
        ck_add(c, "interpolation-function", 0, file, line, col, "Unknown interpolation method '%s'", it->arg);
        break;
    case IX_BAD_CALL:
        ck_add(c, "interpolation-syntax", 0, file, line, col,
               "%%{%.*s} is not a call of %s(): the argument must be one quoted string, as in %%{%s('key')}; Puppet reads "
               "it as a variable and interpolates an empty string",
               (int)it->len, it->expr, it->arg, it->arg);
        break;
    case IX_ALIAS:
        if (!(it->start == 0 && it->end == ic->len)) {
            ck_add(c, "alias-not-alone", 0, file, line, col,
                   "'alias' interpolation is only permitted if the expression is equal to the entire string");
            break;
        }
        /* fall through */
    case IX_LOOKUP:
        add_ref(e, it->arg, ic->top_key, ic->fi, line, col, it->kind == IX_ALIAS);
        break;
    case IX_SCOPE: {
        hv *segs = split_key(it->arg, strlen(it->arg));
        if (!segs) {
            ck_add(c, "interpolation-syntax", 0, file, line, col, "Syntax error in string: %.*s", (int)ic->len, ic->s);
            break;
        }
        const char *expr = it->arg[0] == ':' && it->arg[1] == ':' ? it->arg + 2 : it->arg;
        /* a name no variable can have ([beat.version], +yyyy.MM.dd: another tool's syntax) */
        const hv *root = hv_array_get(segs, 0);
        bool odd = false;
        for (const char *q = hv_is(root, HV_STRING) ? hv_str_ptr(root) : ""; *q && !odd; q++)
            odd = !(is_word_char((unsigned char)*q) || *q == ':' || *q == '-');
        if (odd) {
            ck_add(c, "interpolation-syntax", 0, file, line, col,
                   "%%{%.*s} is not a variable Puppet can have: it interpolates an empty string (for the text itself, "
                   "write %%{literal('%%')}{%.*s})",
                   (int)it->len, it->expr, (int)it->len, it->expr);
            hv_decref(segs);
            break;
        }
        const char *rn = hv_is(root, HV_STRING) ? hv_str_ptr(root) : "";
        if (ic->mapped && !strcmp(rn[0] == ':' && rn[1] == ':' ? rn + 2 : rn, ic->mapped))
            hv_decref(segs); /* the mapped_paths element, not a variable */
        else
            add_var(e, expr, segs, ic->fi, ic->cfg, line, col, ic->unshielded);
        break;
    }
    }
}

/* ------------------------------------------------------------------ eyaml */

static bool b64_char(unsigned char ch) { return isalnum(ch) || ch == '+' || ch == '/'; }

static bool readable(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* The eyaml level's options with its key files found: a relative path is relative to the working
 * folder (as for Puppet), else to the repository checked, else to the hiera.yaml's folder (CI runs
 * from anywhere). NULL when the private key is nowhere; *not_cwd is set when it is not where the
 * lookups look (the working folder), so that their failures to decrypt are not reported. */
static hv *key_options(fctx *x, bool *not_cwd)
{
    const ck_config *cf = NULL;
    for (size_t r = 0; r < x->f->nreach && !cf; r++)
        if (x->e->configs[x->f->reach[r].cfg].levels[x->f->reach[r].level].eyaml)
            cf = &x->e->configs[x->f->reach[r].cfg];
    hv *opts = hv_copy(x->eyaml_options);
    static const char *const names[] = {"pkcs7_private_key", "pkcs7_public_key"};
    bool found_private = false;
    for (size_t n = 0; n < 2; n++) {
        const hv *v = hv_hash_gets(opts, names[n]);
        if (!v || !hv_is(v, HV_STRING))
            continue;
        const char *path = hv_str_ptr(v);
        if (readable(path)) {
            found_private |= n == 0;
            continue;
        }
        if (path[0] == '/')
            continue;
        const char *bases[2] = {x->e->real_dir, cf && cf->cfg ? cf->cfg->root : NULL};
        for (size_t b = 0; b < 2; b++) {
            if (!bases[b])
                continue;
            char *p = xjoin(bases[b], "/", path, NULL);
            if (readable(p)) {
                hv_hash_sets(opts, names[n], hv_str(p));
                found_private |= n == 0;
                if (n == 0)
                    *not_cwd = true;
                free(p);
                break;
            }
            free(p);
        }
    }
    if (!found_private) {
        *not_cwd = true;
        hv_decref(opts);
        return NULL;
    }
    return opts;
}

/* The ENC[...] blocks of a string: malformed ones, decryption, levels that do not decrypt. */
static void check_enc(fctx *x, const ysnode *node, uint32_t nline, uint32_t ncol, const char *s, size_t len)
{
    ck_ctx *c = x->c;
    size_t cursor = 0;
    for (size_t pos = 0; pos + 4 <= len;) {
        const char *hit = memmem(s + pos, len - pos, "ENC[", 4);
        if (!hit)
            break;
        size_t i = (size_t)(hit - s);
        uint32_t line = nline, col = ncol;
        find_in_node(x, node, "ENC[", 4, &cursor, &line, &col);
        /* ENC[ (\w+,)? [a-zA-Z0-9+/= \n]+ ] */
        size_t p = i + 4, q = p;
        while (q < len && is_word_char((unsigned char)s[q]))
            q++;
        size_t scheme = p, scheme_len = 0;
        if (q < len && s[q] == ',' && q > p) {
            scheme_len = q - p;
            q++;
        }
        size_t payload = q;
        bool bad_char = false;
        while (q < len && s[q] != ']') {
            if (!b64_char((unsigned char)s[q]) && s[q] != '=' && s[q] != ' ' && s[q] != '\n')
                bad_char = true;
            q++;
        }
        pos = q < len ? q + 1 : len;
        if (q >= len) {
            ck_add(c, "eyaml-malformed", 0, x->f->path, line, col, "ENC[ without its closing ']'");
            continue;
        }
        if (bad_char || q == payload) {
            ck_add(c, "eyaml-malformed", 0, x->f->path, line, col,
                   q == payload ? "an empty ENC[] block" : "ENC[...] holds characters that are not base64");
            continue;
        }
        bool pkcs7 = scheme_len == 0 || (scheme_len == 5 && !memcmp(s + scheme, "PKCS7", 5));
        if (!pkcs7)
            continue; /* another encryption scheme (GPG...): a plugin of its own, not checked */
        /* the base64 payload: groups of four once spaces and newlines are gone */
        size_t nb = 0, pad = 0;
        bool pad_inside = false;
        for (size_t k = payload; k < q; k++) {
            if (s[k] == ' ' || s[k] == '\n')
                continue;
            if (s[k] == '=')
                pad++;
            else if (pad)
                pad_inside = true;
            nb++;
        }
        if (nb % 4 != 0 || pad > 2 || pad_inside || nb < 16) {
            ck_add(c, "eyaml-malformed", 0, x->f->path, line, col,
                   "the base64 text of this ENC[PKCS7,...] block is %s", nb < 16 ? "too short to be a PKCS7 message"
                                                                          : "not complete (a block cut or mangled?)");
            continue;
        }
        if (!x->eyaml) {
            if (!x->plain_enc++) {
                x->plain_enc_line = line;
                x->plain_enc_col = col;
            }
            continue;
        }
        if (node && node->style == YS_LITERAL && memchr(s + i, '\n', q - i)) {
            ck_add(c, "eyaml-not-decrypted", 0, x->f->path, line, col,
                   "this ENC[...] block spans several lines of a literal block scalar (|): eyaml_lookup_key does not "
                   "decrypt it and the value stays the encrypted text (use a folded scalar: >)");
            continue;
        }
        /* decryption, when the level's private key is here */
        const hv *key = x->eyaml_options ? hv_hash_gets(x->eyaml_options, "pkcs7_private_key") : NULL;
        if (!key || !hv_is(key, HV_STRING) || strstr(hv_str_ptr(key), "%{"))
            continue;
        if (!x->dec_done) {
            x->dec_done = true;
            x->dec_options = key_options(x, &x->e->eyaml_key_missing);
            if (!x->dec_options)
                ck_note(c, xasprintf("eyaml: the private key %s is not here: ENC[...] blocks are checked for their form only",
                                     hv_str_ptr(key)));
        }
        if (!x->dec_options)
            continue;
        if (!x->ey)
            x->ey = eyaml_new();
        herr err = {0};
        size_t plen = 0;
        char *plain = eyaml_decrypt_block(x->ey, scheme_len ? s + scheme : NULL, scheme_len, s + payload, q - payload,
                                          x->dec_options, &plen, &err);
        if (plain) {
            memset(plain, 0, plen); /* the plaintext is never kept nor shown */
            free(plain);
        } else {
            ck_add(c, "eyaml-decrypt", 0, x->f->path, line, col, "cannot be decrypted with the key %s (level '%s'): %s",
                   hv_str_ptr(key), x->eyaml_level ? x->eyaml_level : "", err.msg ? err.msg : "decryption failed");
        }
        herr_clear(&err);
    }
}

/* ------------------------------------------------------------------ scalars */

/* Whether a scalar loads as a string (for interpolation and eyaml). */
static bool scalar_string(const ysnode *n, bool json)
{
    if (n->tag)
        return !strcmp(n->tag, "tag:yaml.org,2002:str") || !strcmp(n->tag, "!str") || !strcmp(n->tag, "!!str");
    if (n->style != YS_PLAIN)
        return true;
    if (json || !n->len)
        return false; /* JSON's bare words are numbers, true, false and null */
    herr err = {0};
    hv *v = yaml_plain_scalar(n->text, n->len, &err);
    herr_clear(&err);
    bool s = v && hv_is(v, HV_STRING);
    hv_decref(v);
    return s;
}

static void string_value(fctx *x, const ysnode *n, uint32_t line, uint32_t col, const char *s, size_t len)
{
    if (memmem(s, len, "%{", 2)) {
        ictx ic = {x->c, x, n, line, col, s, len, 0, false, -1, x->f->path, x->top_key, x->fi, NULL, false};
        ck_scan_interpolations(s, len, on_interpolation, &ic);
    }
    if (memmem(s, len, "ENC[", 4))
        check_enc(x, n, line, col, s, len);
}

static void walk(fctx *x, const ysnode *n, int depth, bool is_key, bool in_seq);

/* The duplicate keys of a mapping (the later one wins, as in Psych). */
static void dup_keys(fctx *x, const ysnode *m)
{
    bool json = x->f->fmt == FMT_JSON;
    hv *seen = hv_hash(); /* canonical key -> line of its first occurrence */
    for (uint32_t i = 0; i + 1 < m->n; i += 2) {
        const ysnode *k = m->kids[i];
        if (k->kind != YS_SCALAR)
            continue;
        if (k->style == YS_PLAIN && !k->tag && k->len == 2 && !memcmp(k->text, "<<", 2))
            continue; /* a merge key */
        sbuf canon = {0};
        if (k->style != YS_PLAIN || json || k->tag) {
            sb_addc(&canon, 's');
            sb_addn(&canon, k->text, k->len);
        } else {
            herr err = {0};
            hv *v = yaml_plain_scalar(k->text, k->len, &err);
            herr_clear(&err);
            if (!v || hv_is(v, HV_STRING)) {
                sb_addc(&canon, 's');
                sb_addn(&canon, k->text, k->len);
            } else {
                sb_addc(&canon, 'v');
                ruby_to_s(&canon, v);
                sb_addc(&canon, ':');
                sb_adds(&canon, hv_kind_name(hv_kind_of(v)));
            }
            hv_decref(v);
        }
        const hv *first = hv_hash_getsn(seen, canon.s ? canon.s : "", canon.len);
        if (first)
            ck_add(x->c, "duplicate-key", 0, x->f->path, k->line, k->col,
                   "key '%.*s' is already in this mapping at line %lld: this later value wins and the earlier one is "
                   "ignored",
                   (int)k->len, k->text, (long long)hv_int_val(first));
        else
            hv_hash_set(seen, hv_strn(canon.s ? canon.s : "", canon.len), hv_int(k->line));
        sb_free(&canon);
    }
    hv_decref(seen);
}

static void walk(fctx *x, const ysnode *n, int depth, bool is_key, bool in_seq);

static void walk_map(fctx *x, const ysnode *m, int depth)
{
    dup_keys(x, m);
    for (uint32_t i = 0; i + 1 < m->n; i += 2) {
        walk(x, m->kids[i], depth + 1, true, false);
        walk(x, m->kids[i + 1], depth + 1, false, false);
    }
}

/* When key is a class parameter whose type takes the value a plain scalar reads as and not its
 * text: "parameter 'p' of Class[X] (Type)" (malloc'ed), else NULL. */
static char *trap_as_meant(ck_env *e, const char *key, const char *text, size_t len)
{
    const pp_class *cls = NULL;
    const pp_param *p = ck_class_param(e, key, &cls);
    if (!p || !p->type || !e->aliases)
        return NULL;
    herr err = {0};
    ptype *t = ptype_parse_with(p->type, e->aliases, &err);
    herr_clear(&err);
    char *unresolved = t ? ptype_unresolved(t) : NULL;
    char *r = NULL;
    if (t && !unresolved) {
        hv *read = yaml_plain_scalar(text, len, &err);
        herr_clear(&err);
        hv *str = hv_strn(text, len);
        if (read && ptype_match(t, read) && !ptype_match(t, str)) {
            char *ref = ck_class_ref(cls->name);
            r = xasprintf("parameter '%s' of %s (%s)", p->name, ref, p->type);
            free(ref);
        }
        hv_decref(read);
        hv_decref(str);
    }
    free(unresolved);
    ptype_free(t);
    return r;
}

static void walk(fctx *x, const ysnode *n, int depth, bool is_key, bool in_seq)
{
    if (!n || depth > 200)
        return;
    bool json = x->f->fmt == FMT_JSON;
    switch (n->kind) {
    case YS_MAP:
        walk_map(x, n, depth);
        return;
    case YS_SEQ:
        for (uint32_t i = 0; i < n->n; i++)
            walk(x, n->kids[i], depth + 1, false, true);
        return;
    case YS_ALIAS:
        return;
    case YS_SCALAR:
        break;
    }
    if (!json && n->style == YS_PLAIN && !n->tag) {
        if (n->len == 0 && !is_key && !x->in_lookup_options) {
            ck_add(x->c, "empty-value", 0, x->f->path, n->line, n->col,
                   in_seq ? "an item without a value: it is read as undef (write ~ if that is meant)"
                          : "a key without a value: it is read as undef (write ~ if that is meant, or give the value)");
        } else {
            char msg[256];
            const char *rule = ck_plain_trap(n->text, n->len, msg, sizeof msg);
            if (rule) {
                const char *advice = !strcmp(rule, "yaml-boolean") ? "quote it if the word was meant, or write true/false"
                                                                   : "quote it if the text was meant";
                /* the whole value of a class parameter whose type takes what YAML reads and not the
                 * text: the value is as meant, only written in a surprising way (a note) */
                char *as = !is_key && depth == 1 && x->top_key && !x->in_lookup_options
                               ? trap_as_meant(x->e, x->top_key, n->text, n->len)
                               : NULL;
                if (as)
                    ck_add(x->c, rule, CHECK_NOTE, x->f->path, n->line, n->col, "%s, as %s takes it: %s", msg, as,
                           !strcmp(rule, "yaml-boolean") ? "write true/false to say so" : "a plain number says so more clearly");
                else
                    ck_add(x->c, rule, 0, x->f->path, n->line, n->col, "%s%s: %s", msg, is_key ? " (a hash key)" : "",
                           advice);
                free(as);
            }
        }
    }
    if (scalar_string(n, json))
        string_value(x, n, n->line, n->col, n->text, n->len);
}

/* Values without marks (HOCON, or a file libyaml cannot scan): strings at any depth. */
static void walk_value(fctx *x, const hv *v, int depth)
{
    if (!v || depth > 200)
        return;
    if (hv_is(v, HV_STRING)) {
        string_value(x, NULL, hv_line(v), 1, hv_str_ptr(v), hv_str_len(v));
    } else if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            walk_value(x, hv_array_get(v, i), depth + 1);
    } else if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            walk_value(x, hv_hash_key_at(v, i), depth + 1);
            walk_value(x, hv_hash_val_at(v, i), depth + 1);
        }
    }
}

/* ------------------------------------------------------------------ tabs */

static void check_tabs(fctx *x)
{
    const ck_file *f = x->f;
    if (!f->text || !memchr(f->text, '\t', f->len))
        return;
    /* the spans of quoted and block scalars, where a tab is text */
    for (size_t l = 0; l < x->nls; l++) {
        size_t s = x->ls[l], e = l + 1 < x->nls ? x->ls[l + 1] : f->len;
        const char *tab = memchr(f->text + s, '\t', e - s);
        if (!tab)
            continue;
        size_t off = (size_t)(tab - f->text);
        /* a comment before it: fine */
        const char *hash = memchr(f->text + s, '#', off - s);
        if (hash)
            continue;
        uint32_t line, col;
        position_of(x, off, &line, &col);
        /* inside a quoted or block scalar? look for the scalar holding it */
        bool quoted = false;
        const ysnode *stack[256];
        size_t sp = 0;
        for (size_t d = 0; d < (f->ys ? f->ys->ndocs : 0); d++)
            if (f->ys->docs[d] && sp < 256)
                stack[sp++] = f->ys->docs[d];
        while (sp && !quoted) {
            const ysnode *n = stack[--sp];
            bool after_start = line > n->line || (line == n->line && col >= n->col);
            bool before_end = line < n->eline || (line == n->eline && col < n->ecol);
            if (!(after_start && before_end) && n->kind != YS_MAP && n->kind != YS_SEQ)
                continue;
            if (n->kind == YS_SCALAR && n->style != YS_PLAIN && after_start && before_end)
                quoted = true;
            for (uint32_t i = 0; i < n->n && sp < 256; i++)
                stack[sp++] = n->kids[i];
        }
        if (!quoted)
            ck_add(x->c, "tab", 0, f->path, line, col,
                   "a tab character: YAML does not allow tabs for indentation, and in a plain value it becomes part of "
                   "the text");
    }
}

/* ------------------------------------------------------------------ lookup_options */

static bool key_of_missing_module(const ck_env *e, const char *key);

static void lo_entry(fctx *x, const char *key, const hv *opts, uint32_t line, uint32_t col)
{
    ck_ctx *c = x->c;
    ck_env *e = x->e;
    const char *path = x->f->path;
    bool pattern = key[0] == '^';
    if (pattern) {
        herr err = {0};
        rregex *re = rregex_new(key, strlen(key), &err);
        if (!re)
            ck_add(c, "lookup-options-regexp", 0, path, line, col, "lookup_options pattern '%s' is not a valid Ruby regexp: %s",
                   key, err.msg ? err.msg : "");
        rregex_free(re);
        herr_clear(&err);
    }
    int merge = 0;
    const hv *conv = NULL;
    if (!hv_is(opts, HV_HASH)) {
        if (!hv_is(opts, HV_UNDEF))
            ck_add(c, "lookup-options-invalid", 0, path, line, col,
                   "the lookup_options of '%s' must be a hash (merge: ..., convert_to: ...)", key);
    } else {
        for (size_t i = 0; i < hv_hash_len(opts); i++) {
            const hv *k = hv_hash_key_at(opts, i), *v = hv_hash_val_at(opts, i);
            const char *ks = hv_is(k, HV_STRING) ? hv_str_ptr(k) : "";
            if (!strcmp(ks, "merge")) {
                herr err = {0};
                merge_strategy *ms = ms_from_value(v, &err);
                if (!ms) {
                    ck_add(c, "lookup-options-merge", 0, path, line, col, "lookup_options of '%s': %s", key,
                           err.msg ? err.msg : "invalid merge");
                } else {
                    merge = ms->kind == MS_UNIQUE ? 1 : ms_is_first(ms) ? 0 : 2;
                    ms_free(ms);
                }
                herr_clear(&err);
            } else if (!strcmp(ks, "convert_to")) {
                const hv *type = hv_is(v, HV_ARRAY) ? hv_array_get(v, 0) : v;
                if (!type || !hv_is(type, HV_STRING)) {
                    ck_add(c, "lookup-options-convert-to", 0, path, line, col,
                           "lookup_options of '%s': convert_to must be a type name or an array [type, arguments...]", key);
                } else {
                    herr err = {0};
                    ptype *t = ptype_parse_with(hv_str_ptr(type), e->aliases, &err);
                    char *ref = t ? ptype_unresolved(t) : NULL;
                    if (!t) {
                        ck_add(c, "lookup-options-convert-to", 0, path, line, col,
                               "Invalid data type in lookup_options for key '%s' could not parse '%s', error: '%s", key,
                               hv_str_ptr(type), err.msg ? err.msg : "");
                    } else if (ref && !key_of_missing_module(e, ref)) {
                        ck_add(c, "lookup-options-convert-to", 0, path, line, col,
                               "lookup_options of '%s': convert_to names the type '%s', which does not exist: the lookup "
                               "fails",
                               key, ref);
                    } else if (!ref) {
                        conv = v;
                    }
                    free(ref);
                    ptype_free(t);
                    herr_clear(&err);
                }
            } else {
                char *s = NULL;
                size_t d1 = ck_distance(ks, "merge", 2), d2 = ck_distance(ks, "convert_to", 3);
                if (!strcmp(ks, "knockout_prefix") || !strcmp(ks, "sort_merged_arrays") ||
                    !strcmp(ks, "merge_hash_arrays") || !strcmp(ks, "strategy"))
                    s = xasprintf(" (a merge option: write merge: {strategy: deep, %s: ...})", ks);
                else if (d1 <= 2 || !strncmp(ks, "merge", 5))
                    s = xstrdup(" (did you mean 'merge'?)");
                else if (d2 <= 3 || !strncmp(ks, "convert", 7))
                    s = xstrdup(" (did you mean 'convert_to'?)");
                ck_add(c, "lookup-options-unknown", 0, path, line, col,
                       "lookup_options of '%s': '%s' is not an option (merge and convert_to are): it is ignored%s", key, ks,
                       s ? s : "");
                free(s);
            }
        }
    }
    /* kept for the checks across files and for classes.c: [file, line, col, key, pattern?, merge, convert_to] */
    hv *rec = hv_array();
    hv_array_push(rec, hv_int(x->fi));
    hv_array_push(rec, hv_int(line));
    hv_array_push(rec, hv_int(col));
    hv_array_push(rec, hv_str(key));
    hv_array_push(rec, hv_bool(pattern));
    hv_array_push(rec, hv_int(merge));
    hv_array_push(rec, conv ? hv_incref((hv *)conv) : hv_undef());
    hv_array_push(e->lo_entries, rec);
}

static void lookup_options(fctx *x, const hv *lo, const ysnode *knode, const ysnode *vnode)
{
    ck_ctx *c = x->c;
    const char *path = x->f->path;
    uint32_t line = knode ? knode->line : hv_line(lo), col = knode ? knode->col : 1;
    if (!hv_is(lo, HV_HASH)) {
        if (!hv_is(lo, HV_UNDEF))
            ck_add(c, "lookup-options-invalid", 0, path, line, col, "value of lookup_options must be a hash");
        return;
    }
    const char *module = x->f->layer == LAYER_MODULE ? x->f->module : NULL;
    for (size_t i = 0; i < hv_hash_len(lo); i++) {
        const hv *k = hv_hash_key_at(lo, i);
        if (!hv_is(k, HV_STRING))
            continue;
        const char *ks = hv_str_ptr(k);
        const ysnode *kn = vnode ? ys_map_key(vnode, ks) : NULL;
        uint32_t l = kn ? kn->line : hv_line(k) ? hv_line(k) : line, cl = kn ? kn->col : 1;
        if (module) {
            size_t ml = strlen(module);
            bool pat = ks[0] == '^';
            const char *rest = pat ? ks + 1 : ks;
            if (strncmp(rest, module, ml) != 0 || strncmp(rest + ml, "::", 2) != 0)
                ck_add(c, "module-namespace", 0, path, l, cl,
                       pat ? "all lookup_options patterns must match a key starting with module name '%s' ('%s' does not)"
                           : "all lookup_options keys must start with module name '%s' ('%s' does not)",
                       module, ks);
        }
        lo_entry(x, ks, hv_hash_val_at(lo, i), l, cl);
    }
}

/* ------------------------------------------------------------------ one file */

static void check_tabs(fctx *x);


static void file_levels(fctx *x)
{
    const ck_file *f = x->f;
    for (size_t r = 0; r < f->nreach; r++) {
        const ck_config *cf = &x->e->configs[f->reach[r].cfg];
        const ck_level *L = &cf->levels[f->reach[r].level];
        if (L->eyaml && !x->eyaml) {
            x->eyaml = true;
            x->eyaml_options = L->lvl->options;
            x->eyaml_level = L->name;
        }
    }
}

void ck_data_file(ck_ctx *c, uint32_t fi)
{
    ck_env *e = c->env;
    ck_file *f = &e->files[fi];
    if (!f->value) {
        uint32_t line = f->err.line > 0 ? (uint32_t)f->err.line : 1, col = f->err.col > 0 ? (uint32_t)f->err.col : 1;
        ck_add(c, "data-syntax", 0, f->path, line, col, "%s", f->err.msg ? f->err.msg : "cannot be read");
        if (f->fmt == FMT_YAML && f->text && memchr(f->text, '\t', f->len)) {
            /* a tab is a common cause: say where they are */
            fctx tx = {.c = c, .e = e, .f = f, .fi = fi};
            line_starts(&tx);
            check_tabs(&tx);
            free(tx.ls);
        }
        return;
    }
    if (f->orphan) {
        const ck_config *cf = &e->configs[f->cfg_owner];
        ck_add(c, "orphan-file", 0, f->path, 1, 1,
               "no level of %s (%s layer%s%s) reads this file: a location that does not match it, or a misspelt name?",
               cf->path, layer_word(cf->layer), cf->module ? " of module " : "", cf->module ? cf->module : "");
        return;
    }
    fctx x = {.c = c, .e = e, .f = f, .fi = fi};
    line_starts(&x);
    file_levels(&x);
    bool yaml = f->fmt == FMT_YAML;
    const ysnode *root = f->ys && f->ys->ndocs ? f->ys->docs[0] : NULL;
    /* the document (yaml_data reads a document that is not a hash as {} after a warning: the
     * loaded value is then {}, so the marks tell) */
    bool not_hash = false, empty = false;
    const char *what = "a scalar";
    if (yaml && f->ys && !f->ys->failed) {
        not_hash = !root || root->kind != YS_MAP;
        empty = !root || (root->kind == YS_SCALAR && root->style == YS_PLAIN && !root->tag &&
                          (root->len == 0 || (root->len == 1 && root->text[0] == '~') ||
                           (root->len == 4 && !strncasecmp(root->text, "null", 4))));
        what = root && root->kind == YS_SEQ ? "an array" : "a scalar";
    } else if (f->fmt == FMT_JSON) {
        not_hash = !hv_is(f->value, HV_HASH);
        empty = hv_is(f->value, HV_UNDEF);
        what = hv_is(f->value, HV_ARRAY) ? "an array" : "a scalar";
    }
    if (not_hash && !empty && f->fmt == FMT_YAML && ck_strict_error(c->env) && !(hv_is(f->value, HV_BOOL) && !hv_bool_val(f->value)))
        not_hash = false; /* strict = error fails, not ignores: puppet8-not-a-hash (puppet8.c) */
    if (not_hash) {
        uint32_t line = root && !empty ? root->line : 1, col = root && !empty ? root->col : 1;
        if (empty)
            ck_add(c, "not-a-hash", 0, f->path, line, col,
                   "the file holds no data: Puppet warns 'file does not contain a valid yaml hash' each time it reads "
                   "it (write {} for an empty hash)");
        else
            ck_add(c, "not-a-hash", 0, f->path, line, col,
                   "the document is %s, not a hash: Puppet warns 'file does not contain a valid yaml hash' and reads no "
                   "data from it",
                   what);
    }
    if (yaml && f->ys) {
        for (size_t d = 1; d < f->ys->ndocs; d++)
            if (f->ys->docs[d] && !(f->ys->docs[d]->kind == YS_SCALAR && f->ys->docs[d]->len == 0 &&
                                    f->ys->docs[d]->style == YS_PLAIN)) {
                ck_add(c, "extra-document", 0, f->path, f->ys->docs[d]->line, f->ys->docs[d]->col,
                       "a second YAML document: Puppet reads only the first document of a data file");
                break;
            }
        check_tabs(&x);
    }
    /* the keys */
    if (hv_is(f->value, HV_HASH)) {
        const hv *h = f->value;
        const char *module = f->layer == LAYER_MODULE ? f->module : NULL;
        size_t ml = module ? strlen(module) : 0;
        for (size_t i = 0; i < hv_hash_len(h); i++) {
            const hv *k = hv_hash_key_at(h, i), *v = hv_hash_val_at(h, i);
            const char *ks = hv_is(k, HV_STRING) || hv_is(k, HV_SYMBOL) ? hv_str_ptr(k) : NULL;
            const ysnode *kn = ks && root ? ys_map_key(root, ks) : NULL;
            const ysnode *vn = ks && root ? ys_map_get(root, ks) : NULL;
            uint32_t line = kn ? kn->line : hv_line(k) ? hv_line(k) : hv_line(v), col = kn ? kn->col : 1;
            if (!ks)
                continue;
            if (!strcmp(ks, "lookup_options")) {
                lookup_options(&x, v, kn, vn);
                continue;
            }
            if (module && (strncmp(ks, module, ml) != 0 || strncmp(ks + ml, "::", 2) != 0)) {
                ck_add(c, "module-namespace", CHECK_WARNING, f->path, line, col,
                       "Module '%s': key '%s' is not in the module's namespace: Puppet warns that module data must use "
                       "keys qualified with the name of the module, and drops it",
                       module, ks);
                continue;
            }
            ck_key *key = ck_key_add(e, ks);
            if (key->ndefs == key->cap) {
                key->cap = key->cap ? key->cap * 2 : 4;
                key->defs = xrealloc(key->defs, key->cap * sizeof *key->defs);
            }
            key->defs[key->ndefs++] = (ck_def){fi, line, col, v};
        }
    }
    /* every value: traps, interpolation, eyaml */
    if (root && (yaml || f->fmt == FMT_JSON) && !f->ys->failed) {
        if (root->kind == YS_MAP) {
            dup_keys(&x, root);
            for (uint32_t i = 0; i + 1 < root->n; i += 2) {
                const ysnode *k = root->kids[i];
                x.top_key = k->kind == YS_SCALAR ? k->text : NULL;
                x.in_lookup_options = x.top_key && !strcmp(x.top_key, "lookup_options");
                walk(&x, k, 1, true, false);
                walk(&x, root->kids[i + 1], 1, false, false);
            }
            x.top_key = NULL;
        } else if (root->kind != YS_SCALAR) {
            walk(&x, root, 0, false, false);
        }
    } else if (hv_is(f->value, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(f->value); i++) {
            const hv *k = hv_hash_key_at(f->value, i);
            x.top_key = hv_is(k, HV_STRING) ? hv_str_ptr(k) : NULL;
            walk_value(&x, hv_hash_val_at(f->value, i), 1);
        }
    }
    if (x.plain_enc) {
        const ck_reach *r = f->nreach ? &f->reach[0] : NULL;
        const ck_level *L = r ? &e->configs[r->cfg].levels[r->level] : NULL;
        ck_add(c, "eyaml-not-decrypted", 0, f->path, x.plain_enc_line, x.plain_enc_col,
               "%zu ENC[...] value%s in this file %s read by level '%s' (%s), which does not decrypt: %s the encrypted "
               "text",
               x.plain_enc, x.plain_enc == 1 ? "" : "s", x.plain_enc == 1 ? "is" : "are", L ? L->name : "?",
               L ? L->function : "?", x.plain_enc == 1 ? "its value is" : "their values are");
    }
    if (x.ey)
        eyaml_free(x.ey);
    hv_decref(x.dec_options);
    free(x.ls);
}

/* ------------------------------------------------------------------ hiera.yaml */

/* Where a hiera.yaml's scalar is: in a location (path, paths, glob, globs, uri, uris, mapped_paths,
 * which Puppet interpolates shielded: an undefined variable gives '' with a warning under any
 * strict setting), in a datadir or options (interpolated unshielded), or elsewhere. */
enum { CFG_ELSEWHERE, CFG_LOCATION, CFG_UNSHIELDED };

static int config_part(const ysnode *k, int part)
{
    static const char *const locations[] = {"path", "paths", "glob", "globs", "uri", "uris", "mapped_paths", NULL};
    if (!k || k->kind != YS_SCALAR || part != CFG_ELSEWHERE)
        return part;
    for (size_t i = 0; locations[i]; i++)
        if (!strcmp(k->text, locations[i]))
            return CFG_LOCATION;
    return !strcmp(k->text, "datadir") || !strcmp(k->text, "options") ? CFG_UNSHIELDED : CFG_ELSEWHERE;
}

static void config_walk(ck_ctx *c, int ci, const ysnode *n, int depth, bool v5, const char *mapped, int part)
{
    if (!n || depth > 100)
        return;
    if (n->kind == YS_MAP) {
        for (uint32_t i = 0; i + 1 < n->n; i += 2) {
            const ysnode *k = n->kids[i], *v = n->kids[i + 1];
            /* mapped_paths: [source, name, template]: %{name} in the template is each element */
            bool mp = k && k->kind == YS_SCALAR && !strcmp(k->text, "mapped_paths") && v && v->kind == YS_SEQ &&
                      v->n == 3 && v->kids[1] && v->kids[1]->kind == YS_SCALAR;
            config_walk(c, ci, k, depth + 1, v5, NULL, part);
            config_walk(c, ci, v, depth + 1, v5, mp ? v->kids[1]->text : NULL, config_part(k, part));
        }
        return;
    }
    if (n->kind == YS_SEQ) {
        for (uint32_t i = 0; i < n->n; i++)
            config_walk(c, ci, n->kids[i], depth + 1, v5, mapped && i == 2 ? mapped : NULL, part);
        return;
    }
    if (n->kind != YS_SCALAR || !memmem(n->text, n->len, "%{", 2))
        return;
    const ck_config *cf = &c->env->configs[ci];
    ictx ic = {c, NULL, n, n->line, n->col, n->text, n->len, 0, v5, ci, cf->path, NULL, UINT32_MAX, mapped,
               part == CFG_UNSHIELDED};
    ck_scan_interpolations(n->text, n->len, on_interpolation, &ic);
}

void ck_config_interpolations(ck_ctx *c, int ci)
{
    const ck_config *cf = &c->env->configs[ci];
    if (!cf->ys || cf->ys->failed || !cf->ys->ndocs || !cf->ys->docs[0])
        return;
    if (cf->layer != LAYER_GLOBAL && cf->ys->docs[0]->kind == YS_MAP) {
        /* a version 3 hiera.yaml (version: 3, or none) of an environment or a module: Puppet
         * ignores it (strict = warning) or fails every lookup there (strict = error), and never
         * interpolates it (config-v3-ignored, puppet8-v3-config say so) */
        const ysnode *v = ys_map_get(cf->ys->docs[0], "version");
        if (!v || (v->kind == YS_SCALAR && v->len == 1 && v->text[0] == '3'))
            return;
    }
    bool v5 = !cf->cfg || cf->cfg->version >= 4;
    config_walk(c, ci, cf->ys->docs[0], 0, v5, NULL, CFG_ELSEWHERE);
}

/* ------------------------------------------------------------------ across files */

/* The keys manifests look up by name (literal, or as a prefix of a key built at run time). */
static bool looked_up_by_manifests(const ck_env *e, const char *key)
{
    for (size_t i = 0; e->pp && i < e->pp->nlookups; i++) {
        const pp_lookup *l = &e->pp->lookups[i];
        if (pp_lookup_matches(l, key))
            return true;
    }
    return false;
}

/* Whether a key may be defined where we cannot see: the data of a module the Puppetfile names
 * but that is not installed. */
static bool key_of_missing_module(const ck_env *e, const char *key)
{
    const char *sep = strstr(key, "::");
    if (!sep)
        return false;
    char *mod = xstrndup(key, (size_t)(sep - key));
    bool r = !ck_module_present(e, mod) && ck_is_external_module(e, mod);
    free(mod);
    return r;
}

static const char *ref_file(const ck_env *e, const ck_ref *r)
{
    return r->file < e->nfiles ? e->files[r->file].path : "";
}

/* lookup()/alias() of keys that nobody defines */
static void unknown_refs(ck_ctx *c)
{
    ck_env *e = c->env;
    if (e->opaque_level) {
        if (e->nrefs)
            ck_note(c, xasprintf("%s, which hiera check cannot read: lookup()/alias() of keys no file defines are "
                                 "not reported, nor lookup_options that match no key",
                                 e->opaque_level));
        return;
    }
    for (size_t i = 0; i < e->nrefs; i++) {
        const ck_ref *r = &e->refs[i];
        if (ck_key_get(e, r->key) || key_of_missing_module(e, r->key))
            continue;
        if (!strcmp(r->key, "lookup_options"))
            continue;
        /* a close key name, for the message */
        const char *best = NULL;
        size_t bd = 3;
        for (size_t k = 0; k < e->nkeys; k++) {
            size_t d = ck_distance(r->key, e->keys[k].name, 2);
            if (d < bd) {
                bd = d;
                best = e->keys[k].name;
            }
        }
        char hint[300] = "";
        if (best)
            snprintf(hint, sizeof hint, " (did you mean '%.250s'?)", best);
        ck_add(c, "interpolation-key", 0, ref_file(e, r), r->line, r->col,
               "%s('%s'): no data file defines '%s'%s; the lookup gives %s", r->alias ? "alias" : "lookup", r->key, r->key,
               hint, r->alias ? "an empty string" : "an empty string");
    }
}

/* Loops: key -> keys its values interpolate with lookup()/alias(). Each loop is reported once,
 * at the reference of its smallest key. */
static void loops(ck_ctx *c)
{
    ck_env *e = c->env;
    size_t n = e->nkeys;
    if (!n || !e->nrefs)
        return;
    /* adjacency in CSR form */
    size_t *deg = xcalloc(n + 1, sizeof *deg);
    for (size_t i = 0; i < e->nrefs; i++) {
        const ck_ref *r = &e->refs[i];
        ck_key *from = r->from ? ck_key_get(e, r->from) : NULL, *to = ck_key_get(e, r->key);
        if (from && to)
            deg[from - e->keys]++;
    }
    size_t *start = xcalloc(n + 1, sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[i + 1] = start[i] + deg[i];
    size_t *adj = xmalloc((start[n] ? start[n] : 1) * sizeof *adj), *ref_of = xmalloc((start[n] ? start[n] : 1) * sizeof *ref_of);
    memset(deg, 0, (n + 1) * sizeof *deg);
    for (size_t i = 0; i < e->nrefs; i++) {
        const ck_ref *r = &e->refs[i];
        ck_key *from = r->from ? ck_key_get(e, r->from) : NULL, *to = ck_key_get(e, r->key);
        if (from && to) {
            size_t f = (size_t)(from - e->keys);
            adj[start[f] + deg[f]] = (size_t)(to - e->keys);
            ref_of[start[f] + deg[f]] = i;
            deg[f]++;
        }
    }
    /* Tarjan's strongly connected components, iteratively */
    size_t *index = xmalloc(n * sizeof *index), *low = xmalloc(n * sizeof *low), *stack = xmalloc(n * sizeof *stack);
    bool *on = xcalloc(n, sizeof *on);
    size_t *cs_node = xmalloc(n * sizeof *cs_node), *cs_edge = xmalloc(n * sizeof *cs_edge);
    for (size_t i = 0; i < n; i++)
        index[i] = SIZE_MAX;
    size_t counter = 0, sp = 0;
    for (size_t root = 0; root < n; root++) {
        if (index[root] != SIZE_MAX || start[root] == start[root + 1])
            continue;
        size_t csp = 0;
        cs_node[csp] = root;
        cs_edge[csp++] = start[root];
        index[root] = low[root] = counter++;
        stack[sp++] = root;
        on[root] = true;
        while (csp) {
            size_t v = cs_node[csp - 1];
            if (cs_edge[csp - 1] < start[v + 1]) {
                size_t w = adj[cs_edge[csp - 1]++];
                if (index[w] == SIZE_MAX) {
                    index[w] = low[w] = counter++;
                    stack[sp++] = w;
                    on[w] = true;
                    cs_node[csp] = w;
                    cs_edge[csp++] = start[w];
                } else if (on[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            if (low[v] == index[v]) {
                /* a component: a loop when it has several keys or a key that refers to itself */
                size_t first = sp;
                while (first > 0 && stack[first - 1] != v)
                    first--;
                first--;
                size_t count = sp - first;
                bool self = false;
                for (size_t k = start[v]; k < start[v + 1]; k++)
                    if (adj[k] == v)
                        self = true;
                if (count > 1 || self) {
                    /* the smallest key of the loop, and its reference into the loop */
                    size_t m = stack[first];
                    for (size_t k = first; k < sp; k++)
                        if (strcmp(e->keys[stack[k]].name, e->keys[m].name) < 0)
                            m = stack[k];
                    size_t ri = SIZE_MAX;
                    for (size_t k = start[m]; k < start[m + 1] && ri == SIZE_MAX; k++)
                        for (size_t q = first; q < sp; q++)
                            if (adj[k] == stack[q])
                                ri = ref_of[k];
                    sbuf names = {0};
                    for (size_t k = first; k < sp; k++) {
                        if (k > first)
                            sb_adds(&names, ", ");
                        sb_addf(&names, "'%s'", e->keys[stack[k]].name);
                    }
                    const ck_ref *r = ri != SIZE_MAX ? &e->refs[ri] : NULL;
                    ck_add(c, "interpolation-loop", 0, r ? ref_file(e, r) : "", r ? r->line : 0, r ? r->col : 0,
                           count > 1 ? "keys %s interpolate each other in a loop: their lookup fails with 'Recursive "
                                       "lookup detected'"
                                     : "key %s interpolates itself: its lookup fails with 'Recursive lookup detected'",
                           sb_str(&names));
                    sb_free(&names);
                }
                for (size_t k = first; k < sp; k++)
                    on[stack[k]] = false;
                sp = first;
            }
            csp--;
            if (csp) {
                size_t u = cs_node[csp - 1];
                if (low[v] < low[u])
                    low[u] = low[v];
            }
        }
    }
    free(deg);
    free(start);
    free(adj);
    free(ref_of);
    free(index);
    free(low);
    free(stack);
    free(on);
    free(cs_node);
    free(cs_edge);
}

/* lookup_options keys and patterns that match no key of any data file, nor one the manifests
 * look up, nor a class parameter */
static void unused_lookup_options(ck_ctx *c)
{
    ck_env *e = c->env;
    if (e->opaque_level)
        return;
    for (size_t i = 0; i < hv_array_len(e->lo_entries); i++) {
        const hv *rec = hv_array_get(e->lo_entries, i);
        uint32_t fi = (uint32_t)hv_int_val(hv_array_get(rec, 0));
        const char *key = hv_str_ptr(hv_array_get(rec, 3));
        bool pattern = hv_bool_val(hv_array_get(rec, 4));
        bool used = false;
        /* an entry outside its module's namespace is reported as such (module-namespace) */
        const ck_file *lf = &e->files[fi];
        if (lf->layer == LAYER_MODULE && lf->module) {
            size_t ml = strlen(lf->module);
            const char *rest = pattern ? key + 1 : key;
            if (strncmp(rest, lf->module, ml) != 0 || strncmp(rest + ml, "::", 2) != 0)
                continue;
        }
        if (!pattern) {
            used = ck_key_get(e, key) || looked_up_by_manifests(e, key) || key_of_missing_module(e, key) ||
                   ck_class_param(e, key, NULL);
        } else {
            herr err = {0};
            rregex *re = rregex_new(key, strlen(key), &err);
            herr_clear(&err);
            if (!re)
                continue; /* reported as lookup-options-regexp */
            for (size_t k = 0; k < e->nkeys && !used; k++)
                used = rregex_search(re, e->keys[k].name, strlen(e->keys[k].name));
            for (size_t k = 0; e->pp && k < e->pp->nlookups && !used; k++)
                used = !e->pp->lookups[k].prefix && rregex_search(re, e->pp->lookups[k].key, strlen(e->pp->lookups[k].key));
            /* a pattern for a module we cannot see: ^ntp:: */
            const char *sep = strstr(key, "::");
            if (!used && sep && key[0] == '^') {
                char *mod = xstrndup(key + 1, (size_t)(sep - key - 1));
                used = valid_module_name(mod) && !ck_module_present(e, mod) && ck_is_external_module(e, mod);
                free(mod);
            }
            rregex_free(re);
        }
        if (!used)
            ck_add(c, "lookup-options-unused", 0, e->files[fi].path, (uint32_t)hv_int_val(hv_array_get(rec, 1)),
                   (uint32_t)hv_int_val(hv_array_get(rec, 2)),
                   pattern ? "lookup_options pattern '%s' matches no key of any data file" : "lookup_options for '%s', which no data file defines",
                   key);
    }
}

/* ------------------------------------------------------------------ variables */

/* Facter 4's core facts and the legacy ones, with what the agent adds (clientcert...). */
static const char *const core_facts[] = {
    "aio_agent_version", "architecture", "augeas", "augeasversion", "az_metadata", "bios_release_date", "bios_vendor",
    "bios_version", "blockdevices", "boardassettag", "boardmanufacturer", "boardproductname", "boardserialnumber",
    "chassisassettag", "chassistype", "clientcert", "clientnoop", "clientversion", "agent_specified_environment",
    "cloud", "dhcp_servers", "disks", "dmi", "domain", "ec2_metadata", "ec2_userdata", "env_windows_installdir",
    "facterversion", "filesystems", "fips_enabled", "fqdn", "gce", "gid", "hardwareisa", "hardwaremodel", "hostname",
    "hypervisors", "id", "identity", "interfaces", "ipaddress", "ipaddress6", "is_virtual", "kernel",
    "kernelmajversion", "kernelrelease", "kernelversion", "ldom", "load_averages", "lsbdistcodename",
    "lsbdistdescription", "lsbdistid", "lsbdistrelease", "lsbmajdistrelease", "lsbminordistrelease", "lsbrelease",
    "macaddress", "manufacturer", "memory", "memoryfree", "memoryfree_mb", "memorysize", "memorysize_mb", "mountpoints",
    "mtu", "netmask", "netmask6", "network", "network6", "networking", "operatingsystem", "operatingsystemmajrelease",
    "operatingsystemrelease", "os", "osfamily", "partitions", "path", "physicalprocessorcount", "processor",
    "processorcount", "processors", "productname", "puppetversion", "ruby", "rubyplatform", "rubysitedir",
    "rubyversion", "scope6", "selinux", "selinux_config_mode", "selinux_config_policy", "selinux_current_mode",
    "selinux_enforced", "selinux_policyversion", "serialnumber", "solaris_zones", "ssh", "sshdsakey", "sshecdsakey",
    "sshed25519key", "sshfp_dsa", "sshfp_ecdsa", "sshfp_ed25519", "sshfp_rsa", "sshrsakey", "swapencrypted",
    "swapfree", "swapfree_mb", "swapsize", "swapsize_mb", "system_profiler", "system_uptime", "timezone", "uptime",
    "uptime_days", "uptime_hours", "uptime_seconds", "uuid", "virtual", "xen", "zfs_featurenumbers", "zfs_version",
    "zpool_featureflags", "zpool_featurenumbers", "zpool_version", NULL};

/* The keys of the structured facts whose shape is fixed */
static const struct {
    const char *fact;
    const char *const keys[16];
} fact_keys[] = {
    {"os", {"architecture", "distro", "family", "hardware", "name", "release", "selinux", "windows", "macosx", NULL}},
    {"networking", {"domain", "fqdn", "hostname", "interfaces", "ip", "ip6", "mac", "mtu", "netmask", "netmask6",
                    "network", "network6", "primary", "scope6", "dhcp", NULL}},
    {"processors", {"cores", "count", "isa", "models", "physicalcount", "speed", "threads", "extensions", NULL}},
    {"memory", {"system", "swap", NULL}},
    {"identity", {"gid", "group", "privileged", "uid", "user", NULL}},
    {"ruby", {"platform", "sitedir", "version", NULL}},
    {"system_uptime", {"days", "hours", "seconds", "uptime", NULL}},
    {"dmi", {"bios", "board", "chassis", "manufacturer", "product", NULL}},
};

static const char *const trusted_keys[] = {"authenticated", "certname", "domain", "extensions", "hostname", "external", NULL};

/* Variables Puppet sets (or the agent sends) besides facts */
static const char *const builtin_vars[] = {"environment", "facts", "trusted", "server_facts", "name", "title",
                                           "module_name", "clientcert", "clientversion", "clientnoop",
                                           "agent_specified_environment", "servername", "serverip", "serverversion",
                                           "calling_module", "calling_class", "calling_class_path", NULL};

static bool in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(list[i], s))
            return true;
    return false;
}

/* The closest name of list to s within a small distance, or NULL. */
static const char *closest(const char *const *list, const char *s)
{
    size_t len = strlen(s), cap = len < 5 ? 1 : 2, bd = cap + 1;
    const char *best = NULL;
    for (size_t i = 0; list[i]; i++) {
        size_t d = ck_distance(s, list[i], cap);
        if (d < bd) {
            bd = d;
            best = list[i];
        }
    }
    return best;
}

static void var_pos(const ck_env *e, const ck_var *v, const char **file)
{
    *file = v->file != UINT32_MAX ? e->files[v->file].path : v->cfg >= 0 ? e->configs[v->cfg].path : "";
}

/* Without facts: a variable is judged against the names Facter gives every node, the trusted
 * keys, the variables Puppet sets and those the manifests set at top scope, and the names used
 * elsewhere in the repository; only a name close to one of those (a misspelling) is reported. */
static void variables_without_facts(ck_ctx *c)
{
    ck_env *e = c->env;
    /* how often each fact name is used */
    hv *uses = hv_hash();
    for (size_t i = 0; i < e->nvars; i++) {
        const ck_var *v = &e->vars[i];
        const hv *r = hv_array_get(v->segs, 0);
        if (!hv_is(r, HV_STRING))
            continue;
        const char *root = hv_str_ptr(r);
        const char *name = NULL;
        if (!strcmp(root, "facts") && hv_array_len(v->segs) > 1 && hv_is(hv_array_get(v->segs, 1), HV_STRING))
            name = hv_str_ptr(hv_array_get(v->segs, 1));
        else if (!strstr(root, "::") && !in_list(builtin_vars, root))
            name = root;
        if (name) {
            /* a name a hierarchy uses is the repository's own: it weighs more than any use in data */
            int64_t w = v->file == UINT32_MAX ? 100 : 1;
            hv *n = hv_hash_gets(uses, name);
            hv_hash_sets(uses, name, hv_int(n ? hv_int_val(n) + w : w));
        }
    }
    for (size_t i = 0; i < e->nvars; i++) {
        const ck_var *v = &e->vars[i];
        const hv *r = hv_array_get(v->segs, 0);
        if (!hv_is(r, HV_STRING))
            continue;
        const char *root = hv_str_ptr(r), *file;
        var_pos(e, v, &file);
        size_t nseg = hv_array_len(v->segs);
        const hv *s1 = nseg > 1 ? hv_array_get(v->segs, 1) : NULL;
        const char *k1 = s1 && hv_is(s1, HV_STRING) ? hv_str_ptr(s1) : NULL;
        if (!strcmp(root, "trusted")) {
            if (k1 && !in_list(trusted_keys, k1)) {
                const char *best = closest(trusted_keys, k1);
                ck_add(c, "interpolation-variable", 0, file, v->line, v->col,
                       "%%{%s}: $trusted has no key '%s'%s%s%s (it has authenticated, certname, domain, extensions, "
                       "hostname, external): the interpolation gives an empty string",
                       v->expr, k1, best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
            }
            continue;
        }
        if (strstr(root, "::") || (strcmp(root, "facts") && in_list(builtin_vars, root)))
            continue;
        bool via_facts = !strcmp(root, "facts");
        const char *name = via_facts ? k1 : root;
        if (!name)
            continue;
        if (!via_facts) {
            bool top = false;
            for (size_t t = 0; e->pp && t < e->pp->ntopvars; t++)
                if (!strcmp(e->pp->topvars[t], name))
                    top = true;
            if (top)
                continue;
        }
        if (in_list(core_facts, name)) {
            /* a structured fact of fixed shape: its next key */
            size_t at = via_facts ? 2 : 1;
            const hv *sk = nseg > at ? hv_array_get(v->segs, at) : NULL;
            if (!sk || !hv_is(sk, HV_STRING))
                continue;
            for (size_t f = 0; f < sizeof fact_keys / sizeof *fact_keys; f++) {
                if (strcmp(fact_keys[f].fact, name) != 0)
                    continue;
                const char *sub = hv_str_ptr(sk);
                if (!in_list(fact_keys[f].keys, sub)) {
                    const char *best = closest(fact_keys[f].keys, sub);
                    ck_add(c, "interpolation-variable", 0, file, v->line, v->col,
                           "%%{%s}: the fact %s has no key '%s'%s%s%s: the interpolation gives an empty string", v->expr,
                           name, sub, best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
                }
            }
            continue;
        }
        /* a name that is no core fact: custom facts are everyone's own, so only a near miss of a
         * core fact or of a name used more often is reported */
        const char *best = closest(core_facts, name);
        if (!best) {
            size_t mine = (size_t)hv_int_val(hv_hash_gets(uses, name)), bd = 3;
            for (size_t u = 0; u < hv_hash_len(uses); u++) {
                const char *other = hv_str_ptr(hv_hash_key_at(uses, u));
                size_t cnt = (size_t)hv_int_val(hv_hash_val_at(uses, u));
                if (cnt <= mine || !strcmp(other, name))
                    continue;
                size_t cap = strlen(name) < 5 ? 1 : 2;
                size_t d = ck_distance(name, other, cap);
                if (d <= cap && d < bd) {
                    bd = d;
                    best = other;
                }
            }
        }
        if (best)
            ck_add(c, "interpolation-variable", 0, file, v->line, v->col,
                   "%%{%s}: no fact or variable '%s' is known (did you mean '%s'?): the interpolation gives an empty "
                   "string",
                   v->expr, name, best);
    }
    hv_decref(uses);
}

void ck_data_cross(ck_ctx *c)
{
    /* keys manifests look up by name count as referenced */
    ck_env *e = c->env;
    for (size_t i = 0; e->pp && i < e->pp->nlookups; i++) {
        const pp_lookup *l = &e->pp->lookups[i];
        if (l->var)
            continue;
        if (!l->prefix) {
            ck_key *k = ck_key_get(e, l->key);
            if (k) {
                k->referenced = true;
                if (l->merged && !k->merge)
                    k->merge = 2; /* a merge reads every level: none shadows another */
            }
            continue;
        }
        /* "profile::${x}": every key it may ask for */
        for (size_t j = 0; j < e->nkeys; j++)
            if (pp_lookup_matches(l, e->keys[j].name)) {
                e->keys[j].referenced = true;
                if (l->merged && !e->keys[j].merge)
                    e->keys[j].merge = 2;
            }
    }
    unknown_refs(c);
    loops(c);
    unused_lookup_options(c);
    if (!c->o->facts_dir && !c->o->nodes)
        variables_without_facts(c);
}
