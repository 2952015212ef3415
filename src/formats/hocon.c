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
 *
 * Layout (see hocon_int.h): hocon_lex.c is stage 1, hocon_parse.c stage 2 (with includes),
 * hocon_resolve.c stage 3, hocon_merge.c the merging and concatenation that stages 2 and 3
 * share, and hocon_node.c the parse context's errors and the nodes that all of them use. This
 * file holds the public API. Each stands only on the ones before it in the order node, lex,
 * merge, parse, resolve.
 */
#include "formats/hocon.h"
#include "formats/hocon_int.h"

#include <stdlib.h>
#include <string.h>

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
    cx.merge_loaded = atomic_load(&hc_delayed_merge_loaded);
    cx.err = err ? err : &scratch;
    cx.name = name ? name : "<string>";
    hv *result = NULL;
    node *root = hc_parse_document(&cx, text ? text : "", text ? len : 0, NULL, NULL);
    if (root) {
        /* Hocon.parse merges the document over reference.conf, which the ruby gem never finds, so
         * that merge changes nothing; then hc_resolve() */
        rctx R = {0};
        rsrc s;
        node *res = NULL;
        R.cx = &cx;
        hc_src_set(&s, root, NULL, 0, false);
        int rc = hc_resolve(&R, root, &s, NULL, &res);
        hc_src_free(&s);
        if (rc == R_CYCLE)
            hc_bug(&R, "NotPossibleToResolve was thrown from an outermost resolve");
        if (rc == R_OK && res) {
            result = unwrap(res);
            if (!result)
                hc_bug(&R, "unresolved value after resolve");
        }
        hc_nfree(res);
        free(R.cycle);
        free(R.trace.v);
        hc_nfree(root);
    }
    if (cx.merge_loaded)
        atomic_store(&hc_delayed_merge_loaded, true);
    for (size_t i = 0; i < cx.norigins; i++)
        free(cx.origins[i]);
    free(cx.origins);
    if (!result && !cx.failed)
        hc_fail(&cx, NULL, 0, 0, "could not parse");
    herr_clear(&scratch);
    return result;
}

hv *hocon_load_file(const char *path, herr *err)
{
    sbuf text = {0};
    int e = 0;
    if (!hc_read_file(path, &text, &e)) {
        sb_free(&text);
        herr_set(err, HERR_ERROR, "Unable to read %s: %s", path, ERRNO_TEXT(e));
        herr_at(err, path, 0, 0);
        return NULL;
    }
    hv *v = hocon_parse(sb_str(&text), text.len, path, err);
    sb_free(&text);
    return v;
}
