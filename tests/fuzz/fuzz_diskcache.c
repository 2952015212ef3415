/* fuzz_diskcache.c - libFuzzer harness: the on-disk cache of parsed files (src/formats/diskcache.c).
 * "Anything unexpected (a short or corrupt file...) is a miss": a corrupt entry must never crash.
 * Input: byte 0 even: the rest is the entry's body after a valid identity header (flags varint,
 * then the value), read back with diskcache_get; odd: the rest is YAML, stored with
 * diskcache_put and read back, which must give an equal value. Even inputs are also an entry's
 * header after the magic, in a second entry file, and a forced sweep reads it (the source path and
 * identity it names; the sweep removes it or not, and never the valid entry of src). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/diskcache.h"
#include "fuzz_common.h"
#include "base/value.h"
#include "formats/psych.h"

static diskcache *dc;
static char *src, *entry, *other;
static struct stat src_st;

static void put_var(sbuf *b, uint64_t v)
{
    while (v >= 0x80) {
        sb_addc(b, (char)(v | 0x80));
        v >>= 7;
    }
    sb_addc(b, (char)v);
}

static void put_u64(sbuf *b, uint64_t v) { sb_addn(b, (const char *)&v, 8); }

/* the header diskcache.c writes: magic (with the format's version), source identity, format */
static void identity(sbuf *b, int fmt)
{
    sb_addn(b, DISKCACHE_MAGIC, 8);
    put_var(b, strlen(src));
    sb_adds(b, src);
    put_u64(b, (uint64_t)src_st.st_dev);
    put_u64(b, (uint64_t)src_st.st_ino);
    put_u64(b, (uint64_t)src_st.st_size);
    put_u64(b, (uint64_t)src_st.st_mtim.tv_sec);
    put_u64(b, (uint64_t)src_st.st_mtim.tv_nsec);
    put_u64(b, (uint64_t)src_st.st_ctim.tv_sec);
    put_u64(b, (uint64_t)src_st.st_ctim.tv_nsec);
    put_var(b, (uint64_t)fmt);
}

static void setup(void)
{
    src = fz_write_str("src/data.yaml", "a: 1\n");
    if (stat(src, &src_st) != 0)
        abort();
    char *dir = xasprintf("%s/cache", fz_dir());
    dc = diskcache_open(dir);
    if (!dc)
        abort();
    /* the entry's name: diskcache.c's FNV-1a of the path, seeded with the format */
    uint64_t h = 1469598103934665603ULL ^ 0u;
    for (const char *p = src; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    entry = xasprintf("%s/%016llx.hc", dir, (unsigned long long)h);
    other = xasprintf("%s/0000000000000000.hc", dir);
    free(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!dc)
        setup();
    unsigned flags = 0;
    if (data[0] % 2 == 0) {
        sbuf b = {0};
        identity(&b, 0);
        sb_addn(&b, (const char *)data + 1, size - 1);
        FILE *f = fopen(entry, "wb");
        if (!f)
            abort();
        fwrite(b.s, 1, b.len, f);
        fclose(f);
        sb_free(&b);
        f = fopen(other, "wb");
        if (!f)
            abort();
        fwrite(DISKCACHE_MAGIC, 1, 8, f);
        fwrite(data + 1, 1, size - 1, f);
        fclose(f);
        if (diskcache_sweep(dc, true) < 0 || access(entry, F_OK) != 0)
            abort();
        hv *v = diskcache_get(dc, src, 0, &src_st, &flags);
        if (v) {
            /* what was read is written and read back the same */
            diskcache_put(dc, src, 0, &src_st, v, flags);
            unsigned f2 = 0;
            hv *w = diskcache_get(dc, src, 0, &src_st, &f2);
            if (!w || (!fz_has_nan(v) && !hv_eql(v, w)) || f2 != flags)
                abort();
            hv_decref(w);
            hv_decref(v);
        }
        return 0;
    }
    herr e = {0};
    hv *v = yaml_parse((const char *)data + 1, size - 1, "fuzz.yaml", YAML_PUPPET, &e);
    herr_clear(&e);
    if (!v)
        return 0;
    unlink(entry);
    diskcache_put(dc, src, 0, &src_st, v, 3);
    hv *w = diskcache_get(dc, src, 0, &src_st, &flags);
    /* a value the writer refuses (too deep) is simply not cached */
    if (w && ((!fz_has_nan(v) && !hv_eql(v, w)) || flags != 3))
        abort();
    hv_decref(w);
    hv_decref(v);
    return 0;
}
