/* env.c - what the rules ask of an environment being checked: its keys, the modules it has and
 * the lookups see, a class parameter a key names, the lookup_options of a key, and the YAML traps
 * of a plain scalar (with the hint a definition's value gets). data.c, classes.c and nodes.c
 * share these; this file calls none of them. */
#include "check/ck_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/rregex.h"
#include "formats/psych.h"
#include "formats/render.h"

/* ------------------------------------------------------------------ keys, modules, classes */

ck_key *ck_key_get(ck_env *e, const char *name)
{
    hv *ix = hv_hash_gets(e->key_index, name);
    return ix ? &e->keys[hv_int_val(ix)] : NULL;
}

ck_key *ck_key_add(ck_env *e, const char *name)
{
    ck_key *k = ck_key_get(e, name);
    if (k)
        return k;
    if (e->nkeys == e->capkeys) {
        e->capkeys = e->capkeys ? e->capkeys * 2 : 256;
        e->keys = xrealloc(e->keys, e->capkeys * sizeof *e->keys);
    }
    k = &e->keys[e->nkeys];
    memset(k, 0, sizeof *k);
    k->name = xstrdup(name);
    hv_hash_sets(e->key_index, name, hv_int((int64_t)e->nkeys));
    e->nkeys++;
    return k;
}

bool ck_module_present(const ck_env *e, const char *name) { return hv_hash_gets(e->modules_present, name) != NULL; }

bool ck_module_visible(const ck_env *e, const char *module)
{
    for (size_t i = 0; e->engine_roots && e->engine_roots[i]; i++) {
        char *p = xjoin(e->engine_roots[i], "/", module, NULL);
        bool r = path_is_dir(p);
        free(p);
        if (r)
            return true;
    }
    return false;
}

bool ck_is_external_module(const ck_env *e, const char *name)
{
    for (size_t i = 0; i < e->nexternal; i++)
        if (strcmp(e->external[i], name) == 0)
            return true;
    return false;
}

size_t ck_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if ((la > lb ? la - lb : lb - la) > cap)
        return cap + 1;
    size_t *row = xmalloc((lb + 1) * sizeof *row);
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t prev = row[0], best = i;
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cur = row[j];
            size_t sub = prev + (a[i - 1] != b[j - 1]);
            size_t del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
            if (row[j] < best)
                best = row[j];
        }
        if (best > cap) {
            free(row);
            return cap + 1;
        }
    }
    size_t d = row[lb];
    free(row);
    return d > cap ? cap + 1 : d;
}

char *ck_class_ref(const char *name)
{
    sbuf b = {0};
    sb_adds(&b, "Class[");
    bool start = true;
    for (const char *p = name; *p; p++) {
        char ch = *p;
        if (start && ch >= 'a' && ch <= 'z')
            ch = (char)(ch - 'a' + 'A');
        start = ch == ':';
        sb_addc(&b, ch);
    }
    sb_addc(&b, ']');
    return sb_take(&b);
}

const pp_param *ck_class_param(ck_env *e, const char *key, const pp_class **cls)
{
    if (!e->pp)
        return NULL;
    const char *sep = NULL;
    for (const char *p = strstr(key, "::"); p; p = strstr(p + 2, "::"))
        sep = p;
    if (!sep)
        return NULL;
    char *cname = xstrndup(key, (size_t)(sep - key));
    const pp_class *c = pp_find_class(e->pp, cname);
    free(cname);
    if (cls)
        *cls = c;
    if (!c)
        return NULL;
    for (size_t i = 0; i < c->nparams; i++)
        if (!strcmp(c->params[i].name, sep + 2))
            return &c->params[i];
    return NULL;
}

/* ------------------------------------------------------------------ lookup_options of a key */

/* The merge (0 first, 1 unique, 2 hash/deep) and convert_to that lookup_options give key, from
 * the global and environment layers and, for a module's key, the module's data. */
void ck_key_options(ck_env *e, const char *key, int *merge, const hv **convert_to)
{
    *merge = 0;
    *convert_to = NULL;
    const ck_key *k = ck_key_get(e, key);
    if (k && k->merge)
        *merge = k->merge;
    const char *sep = strstr(key, "::");
    size_t ml = sep ? (size_t)(sep - key) : 0;
    const hv *found = NULL;
    size_t nlo = hv_array_len(e->lo_entries);
    if (e->nlo_regexps != nlo) {
        for (size_t i = 0; i < e->nlo_regexps; i++)
            rregex_free(e->lo_regexps[i]);
        e->lo_regexps = xrealloc(e->lo_regexps, (nlo ? nlo : 1) * sizeof *e->lo_regexps);
        for (size_t i = 0; i < nlo; i++) {
            const hv *rec = hv_array_get(e->lo_entries, i);
            const char *lk = hv_str_ptr(hv_array_get(rec, 3));
            herr err = {0};
            e->lo_regexps[i] = hv_bool_val(hv_array_get(rec, 4)) ? rregex_new(lk, strlen(lk), &err) : NULL;
            herr_clear(&err);
        }
        e->nlo_regexps = nlo;
    }
    for (int pass = 0; pass < 2 && !found; pass++) {
        for (size_t i = 0; i < hv_array_len(e->lo_entries) && !found; i++) {
            const hv *rec = hv_array_get(e->lo_entries, i);
            const ck_file *f = &e->files[hv_int_val(hv_array_get(rec, 0))];
            if (f->layer == LAYER_MODULE && (!f->module || !sep || strlen(f->module) != ml || strncmp(f->module, key, ml)))
                continue;
            const char *lk = hv_str_ptr(hv_array_get(rec, 3));
            bool pattern = hv_bool_val(hv_array_get(rec, 4));
            if (pass == 0 && !pattern && !strcmp(lk, key)) {
                found = rec;
            } else if (pass == 1 && pattern && e->lo_regexps[i] && rregex_search(e->lo_regexps[i], key, strlen(key))) {
                found = rec;
            }
        }
    }
    if (found) {
        int m = (int)hv_int_val(hv_array_get(found, 5));
        if (m > *merge)
            *merge = m;
        const hv *conv = hv_array_get(found, 6);
        if (!hv_is(conv, HV_UNDEF))
            *convert_to = conv;
    }
}

/* ------------------------------------------------------------------ YAML traps */

/* The YAML traps of a plain scalar (what it reads as, when that is probably not what was meant).
 * Returns the trap's rule (and the hint in msg), or NULL. */
const char *ck_plain_trap(const char *text, size_t len, char *msg, size_t msgsize)
{
    if (!len || len > 64)
        return NULL;
    char f0 = text[0];
    if (!strchr("yYnNoOtTfF0123456789+-.", f0))
        return NULL;
    herr err = {0};
    hv *v = yaml_plain_scalar(text, len, &err);
    herr_clear(&err);
    if (!v)
        return NULL;
    const char *rule = NULL;
    bool colon = memchr(text, ':', len) != NULL;
    if (hv_is(v, HV_BOOL)) {
        bool word_tf = (len == 4 && !strncasecmp(text, "true", 4)) || (len == 5 && !strncasecmp(text, "false", 5));
        if (!word_tf) {
            rule = "yaml-boolean";
            snprintf(msg, msgsize, "unquoted '%.*s' is read as the boolean %s", (int)len, text, hv_bool_val(v) ? "true" : "false");
        }
    } else if (hv_is(v, HV_INT) || hv_is(v, HV_BIGINT)) {
        size_t i = text[0] == '+' || text[0] == '-' ? 1 : 0;
        char num[64];
        if (hv_is(v, HV_INT))
            snprintf(num, sizeof num, "%lld", (long long)hv_int_val(v));
        else
            snprintf(num, sizeof num, "%s", hv_bigint_digits(v));
        if (colon) {
            rule = "yaml-sexagesimal";
            snprintf(msg, msgsize, "unquoted '%.*s' is read as the base-60 number %s", (int)len, text, num);
        } else if (len - i > 1 && text[i] == '0' && isdigit((unsigned char)text[i + 1])) {
            rule = "yaml-octal";
            snprintf(msg, msgsize, "unquoted '%.*s' is read as the octal number %s", (int)len, text, num);
        }
    } else if (hv_is(v, HV_FLOAT)) {
        sbuf fb = {0};
        ruby_float_to_s(&fb, hv_float_val(v)); /* as Ruby prints the value read */
        const char *ft = sb_str(&fb);
        if (colon) {
            rule = "yaml-sexagesimal";
            snprintf(msg, msgsize, "unquoted '%.*s' is read as the base-60 number %s", (int)len, text, ft);
        } else {
            /* digits.digits ending in 0, two decimals at least: 1.10, 2.20 (versions more than numbers) */
            size_t i = 0;
            while (i < len && isdigit((unsigned char)text[i]))
                i++;
            size_t dot = i;
            if (i > 0 && i < len && text[i] == '.') {
                i++;
                while (i < len && isdigit((unsigned char)text[i]))
                    i++;
                if (i == len && len - dot - 1 >= 2 && text[len - 1] == '0') {
                    rule = "yaml-version-float";
                    snprintf(msg, msgsize, "unquoted '%.*s' is read as the float %s", (int)len, text, ft);
                }
            }
        }
        sb_free(&fb);
    }
    hv_decref(v);
    return rule;
}

/* The hint for a value that is a YAML trap ("unquoted '0755' is read as the octal number 493") */
void ck_trap_hint(const ck_env *e, const ck_def *d, const char *key, sbuf *out)
{
    const ck_file *f = &e->files[d->file];
    if (f->fmt != FMT_YAML || !f->ys || !f->ys->ndocs)
        return;
    const ysnode *v = ys_map_get(f->ys->docs[0], key);
    if (!v || v->kind != YS_SCALAR || v->style != YS_PLAIN || v->tag)
        return;
    char msg[256];
    if (ck_plain_trap(v->text, v->len, msg, sizeof msg)) {
        sb_adds(out, " (");
        sb_adds(out, msg);
        sb_adds(out, ": quote it if the text was meant)");
    }
}
