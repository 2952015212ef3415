/* fuzz_edit.c - libFuzzer harness: byte-preserving edits of YAML data files (src/edit/:
 * hiera_edit_text) and the unified diff (hiera_text_diff).
 * Input: one flags byte (bit 0: unset, bit 1: the file is new), the key up to a newline, the new
 * value in YAML up to a newline, then the document.
 * What must hold: a refusal says why; an edit's result reads (with Puppet's YAML rules) as the old
 * document with the key set or removed; every byte of the old text outside the lines the edit says
 * it replaced is still there, before and after; the same edit again changes nothing; a diff of two
 * texts is empty exactly when they are the same. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "engine/engine.h"
#include "formats/psych.h"
#include "hiera.h"

static size_t line_start(const char *t, size_t len, int line)
{
    /* (lines end as the editor counts them: "\n", "\r\n" or a lone "\r") */
    size_t p = 0;
    for (int l = 1; l < line && p < len; p++)
        if (t[p] == '\n' || (t[p] == '\r' && (p + 1 >= len || t[p + 1] != '\n')))
            l++;
    return p;
}

/* the old document with the key's path set to v (NULL: removed), as hiera reads data */
static hv *expected(const hv *old, const hv *segs, const hv *v)
{
    hv *doc = hv_is(old, HV_HASH) ? hv_deep_copy(old) : hv_hash();
    hv *cur = doc;
    size_t n = hv_array_len(segs);
    for (size_t i = 0; i + 1 < n; i++) {
        hv *child = hv_hash_get(cur, hv_array_get(segs, i));
        if (!hv_is(child, HV_HASH)) {
            child = hv_hash();
            hv_hash_set(cur, hv_incref(hv_array_get(segs, i)), child);
        }
        cur = child;
    }
    if (v)
        hv_hash_set(cur, hv_incref(hv_array_get(segs, n - 1)), hv_deep_copy(v));
    else
        hv_hash_del(cur, hv_array_get(segs, n - 1));
    return doc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    const char *nl1 = memchr(p, '\n', (size_t)(end - p));
    if (!nl1)
        return 0;
    const char *nl2 = memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1));
    if (!nl2)
        return 0;
    char *key = xstrndup(p, (size_t)(nl1 - p));
    const char *text = nl2 + 1;
    size_t len = (size_t)(end - text);
    bool unset = data[0] & 1;
    herr pe = {0};
    hv *v = unset ? NULL : yaml_parse(nl1 + 1, (size_t)(nl2 - nl1 - 1), "value", YAML_PUPPET, &pe);
    herr_clear(&pe);
    if (!unset && !v) {
        free(key);
        return 0;
    }
    hiera_edit e = HIERA_EDIT_INIT;
    e.file = "fuzz.yaml";
    e.key = key;
    e.value = v;
    e.new_file = (data[0] & 2) && len == 0;
    hiera_edit_result r;
    hiera_error err = {0};
    hiera_status st = hiera_edit_text(text, len, &e, &r, &err);
    if (st == HIERA_ERROR && (!err.message || (err.kind != HIERA_ERR_REFUSED && err.kind != HIERA_ERR_FATAL)))
        abort(); /* a refusal says why */
    if (st == HIERA_OK && r.changed) {
        /* what Puppet reads */
        hv *got = yaml_parse(r.text, r.len, "fuzz.yaml", YAML_PUPPET, &pe);
        herr_clear(&pe);
        hv *old = yaml_parse(text, len, "fuzz.yaml", YAML_PUPPET, &pe);
        herr_clear(&pe);
        if (!got || !old)
            abort();
        got = hv_symkeys_to_string(got);
        old = hv_symkeys_to_string(old);
        if (hv_is(got, HV_UNDEF)) {
            hv_decref(got);
            got = hv_hash();
        }
        hv *segs = strpbrk(key, ".'\"") ? split_key(key, strlen(key)) : NULL;
        if (!segs) {
            segs = hv_array();
            hv_array_push(segs, hv_str(key));
        }
        hv *want = expected(old, segs, v);
        if (!fz_has_nan(want) && !hv_eql(got, want))
            abort();
        hv_decref(want);
        hv_decref(segs);
        hv_decref(old);
        hv_decref(got);
        /* the bytes outside the replaced lines */
        size_t a = line_start(text, len, r.first_line);
        size_t b = r.last_line < r.first_line ? a : line_start(text, len, r.last_line + 1);
        if (r.len < a + (len - b) || memcmp(r.text, text, a) || memcmp(r.text + r.len - (len - b), text + b, len - b))
            abort();
        /* once is enough */
        if (v) {
            hiera_edit_result again;
            hiera_error e2 = {0};
            if (hiera_edit_text(r.text, r.len, &e, &again, &e2) != HIERA_OK || again.changed)
                abort();
            hiera_edit_result_clear(&again);
            hiera_error_clear(&e2);
        }
        char *d = hiera_text_diff(text, len, r.text, r.len, "a", "b");
        if (!d[0] != (len == r.len && !memcmp(text, r.text, len)))
            abort();
        free(d);
    }
    hiera_edit_result_clear(&r);
    hiera_error_clear(&err);
    hv_decref(v);
    free(key);
    return 0;
}
