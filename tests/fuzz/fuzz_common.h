/* fuzz_common.h - helpers shared by the libFuzzer harnesses in tests/fuzz/fuzz_*.c: a private
 * temporary folder per process, writing files into it, and cutting an input into sections. */
#ifndef HIERA_FUZZ_COMMON_H
#define HIERA_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "base/value.h"

/* The process' own folder under $TMPDIR (or /tmp), made on first use and removed at exit. */
static char fz_dir_buf[512];
static inline void fz_rm_tree(void)
{
    if (fz_dir_buf[0]) {
        char *cmd = xasprintf("rm -rf '%s'", fz_dir_buf);
        if (system(cmd) != 0) {
            /* nothing to do: a leftover temporary folder */
        }
        free(cmd);
    }
}
static inline const char *fz_dir(void)
{
    if (!fz_dir_buf[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fz_dir_buf, sizeof fz_dir_buf, "%s/hiera-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fz_dir_buf))
            abort();
        atexit(fz_rm_tree);
    }
    return fz_dir_buf;
}

/* Makes every folder of rel (relative to fz_dir()) up to its last '/'. */
static inline void fz_mkdirs(const char *rel)
{
    char *p = xasprintf("%s/%s", fz_dir(), rel);
    for (char *s = p + strlen(fz_dir()) + 1; *s; s++) {
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    }
    free(p);
}

/* Writes len bytes to fz_dir()/rel (folders made as needed); returns the malloc'ed full path. */
static inline char *fz_write(const char *rel, const void *data, size_t len)
{
    fz_mkdirs(rel);
    char *path = xasprintf("%s/%s", fz_dir(), rel);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (len && fwrite(data, 1, len, f) != len)
        abort();
    fclose(f);
    return path;
}

static inline char *fz_write_str(const char *rel, const char *text) { return fz_write(rel, text, strlen(text)); }

/* Cuts data at each occurrence of sep into at most max sections (the last keeps the rest).
 * Returns how many sections were found; starts[i]/lens[i] describe them. */
static inline size_t fz_split(const uint8_t *data, size_t size, const char *sep, const uint8_t **starts, size_t *lens,
                       size_t max)
{
    size_t n = 0, seplen = strlen(sep), from = 0;
    while (n + 1 < max) {
        const uint8_t *hit = seplen <= size - from ? memmem(data + from, size - from, sep, seplen) : NULL;
        if (!hit)
            break;
        starts[n] = data + from;
        lens[n] = (size_t)(hit - (data + from));
        n++;
        from = (size_t)(hit - data) + seplen;
    }
    starts[n] = data + from;
    lens[n] = size - from;
    return n + 1;
}

/* Whether leaf says yes of a scalar (or key) anywhere in v, Sensitive values included. */
static inline bool fz_any_leaf(const hv *v, bool (*leaf)(const hv *))
{
    if (hv_is(v, HV_SENSITIVE))
        return fz_any_leaf(hv_sensitive_inner(v), leaf);
    if (hv_is(v, HV_ARRAY)) {
        for (size_t i = 0; i < hv_array_len(v); i++)
            if (fz_any_leaf(hv_array_get(v, i), leaf))
                return true;
        return false;
    }
    if (hv_is(v, HV_HASH)) {
        for (size_t i = 0; i < hv_hash_len(v); i++)
            if (fz_any_leaf(hv_hash_key_at(v, i), leaf) || fz_any_leaf(hv_hash_val_at(v, i), leaf))
                return true;
        return false;
    }
    return leaf(v);
}

static inline bool fz_is_nan(const hv *v) { return hv_is(v, HV_FLOAT) && hv_float_val(v) != hv_float_val(v); }

/* Whether v holds a NaN anywhere (NaN is not equal to itself, so equality checks skip it). */
static inline bool fz_has_nan(const hv *v) { return fz_any_leaf(v, fz_is_nan); }

/* json 2.6's isLegalUTF8 quirk in one string (render.c json_legal_utf8): after an ED or F4 lead
 * the second byte only has an upper bound, so the generator copies, say, F4 09 9E 99 raw -- a
 * raw tab its own parser then refuses. Ruby's to_json prints such JSON too: no round trip is
 * owed for it. */
static inline bool fz_is_json_quirk(const hv *v)
{
    if (!hv_is(v, HV_STRING))
        return false;
    const unsigned char *p = (const unsigned char *)hv_str_ptr(v);
    size_t n = hv_str_len(v);
    for (size_t i = 0; i + 1 < n; i++)
        if ((p[i] == 0xED || p[i] == 0xF4) && p[i + 1] < 0x80)
            return true;
    return false;
}

/* Whether a string of v (or a key) has the quirk above. */
static inline bool fz_has_json_quirk(const hv *v) { return fz_any_leaf(v, fz_is_json_quirk); }

#endif
