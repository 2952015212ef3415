/* Tests of the on-disk cache of parsed files (src/formats/diskcache.c): round trips keep values, lines
 * and shared nodes; a changed source, a corrupt or foreign cache file is a miss; the sweep removes
 * entries of vanished and changed sources, abandoned temporary files, and the least recently used
 * entries beyond the size limit, when due and never two at once; processes writing, reading and
 * sweeping one folder at the same time only ever read whole, right values. */
#include "testutil.h"

#include "base/fileio.h"
#include "formats/diskcache.h"
#include "hiera.h"
#include "formats/psych.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(dir, "dc");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(dir);
}

static char *write_src(const char *name, const char *text)
{
    char *p = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char *DOC = "base: &b {port: 80, tags: [a, b]}\n"
                         "use: *b\n"
                         "big: 12345678901234567890\n"
                         "sym: :name\n"
                         "f: 1.5\n"
                         "n: ~\n"
                         "t: true\n"
                         "s: \"x\\u0000y\"\n";

static void test_round_trip(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/cache", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    char *src = write_src("a.yaml", DOC);
    struct stat st;
    assert_int_equal(stat(src, &st), 0);
    herr e = {0};
    hv *v = yaml_parse(DOC, strlen(DOC), src, YAML_PUPPET, &e);
    assert_non_null(v);
    unsigned flags = 0;
    assert_null(diskcache_get(c, src, 0, &st, &flags)); /* nothing yet */
    diskcache_put(c, src, 0, &st, v, 5);
    hv *back = diskcache_get(c, src, 0, &st, &flags);
    assert_non_null(back);
    assert_int_equal(flags, 5);
    assert_true(hv_eql(v, back));
    /* lines kept, and the aliased hash is one node again */
    assert_int_equal(hv_line(hv_hash_gets(back, "use")), hv_line(hv_hash_gets(v, "use")));
    assert_ptr_equal(hv_hash_gets(back, "base"), hv_hash_gets(back, "use"));
    assert_int_equal(hv_kind_of(hv_hash_gets(back, "big")), HV_BIGINT);
    assert_int_equal(hv_kind_of(hv_hash_gets(back, "sym")), HV_SYMBOL);
    assert_int_equal(hv_str_len(hv_hash_gets(back, "s")), 3);
    hv_decref(back);
    /* another format of the same path is another entry */
    assert_null(diskcache_get(c, src, 1, &st, &flags));
    /* a changed source (size, times) is a miss */
    struct stat changed = st;
    changed.st_mtim.tv_nsec ^= 1;
    assert_null(diskcache_get(c, src, 0, &changed, &flags));
    changed = st;
    changed.st_ino ^= 1;
    assert_null(diskcache_get(c, src, 0, &changed, &flags));
    hv_decref(v);
    diskcache_close(c);
    free(src);
    free(cdir);
}

/* A source file of text written and stored in c under its stat identity: its path (free it), with
 * *st and *parsed (a reference) as stored. */
static char *cached_source(diskcache *c, const char *name, const char *text, struct stat *st, hv **parsed)
{
    char *src = write_src(name, text);
    assert_int_equal(stat(src, st), 0);
    herr e = {0};
    *parsed = yaml_parse(text, strlen(text), src, YAML_PUPPET, &e);
    assert_non_null(*parsed);
    diskcache_put(c, src, 0, st, *parsed, 0);
    return src;
}

/* Entries read with a string table: the same values as without one (lines, aliases, kinds); a
 * string met in a second entry (same bytes, same line) is one immortal node from then on, in
 * every entry read later; other strings stay each entry's own. */
static void test_shared_strings(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/cache-shared", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    const char *docs[] = {"host: one\nos: {family: RedHat, name: CentOS}\nlist: [x, RedHat]\nalias: &a {k: v}\nagain: *a\n",
                          "host: two\nos: {family: RedHat, name: CentOS}\nlist: [x, RedHat]\nalias: &a {k: v}\nagain: *a\n",
                          "host: three\nos: {family: RedHat, name: CentOS}\nlist: [x, RedHat]\nalias: &a {k: v}\nagain: *a\n",
                          "\nhost: four\nos: {family: RedHat}\n"};
    dc_strings *t = dc_strings_new();
    hv *back[4];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d.yaml", i);
        struct stat st;
        hv *v;
        char *src = cached_source(c, name, docs[i], &st, &v);
        unsigned flags = 0;
        hv *plain = diskcache_get(c, src, 0, &st, &flags);
        back[i] = diskcache_get_shared(c, src, 0, &st, &flags, t);
        assert_non_null(plain);
        assert_non_null(back[i]);
        assert_true(hv_identical(plain, back[i]));
        assert_true(hv_eql(v, back[i]));
        assert_int_equal(hv_line(hv_hash_gets(back[i], "os")), hv_line(hv_hash_gets(v, "os")));
        assert_int_equal(hv_line(hv_hash_key_at(back[i], 1)), hv_line(hv_hash_key_at(v, 1)));
        if (i < 3)
            assert_ptr_equal(hv_hash_gets(back[i], "alias"), hv_hash_gets(back[i], "again"));
        hv_decref(plain);
        hv_decref(v);
        free(src);
    }
    /* "os" (line 2) met in entries 0 and 1: shared by entry 2; unique values stay unique */
    const hv *k1 = hv_hash_key_at(back[1], 1), *k2 = hv_hash_key_at(back[2], 1);
    assert_string_equal(hv_str_ptr(k2), "os");
    assert_ptr_equal(k1, k2);
    assert_true(hv_is_stable(k2) && hv_is_shared(k2)); /* (immortal: no count kept) */
    const hv *fam1 = hv_hash_gets(hv_hash_gets(back[1], "os"), "family");
    const hv *fam2 = hv_hash_gets(hv_hash_gets(back[2], "os"), "family");
    assert_ptr_equal(fam1, fam2);
    assert_ptr_not_equal(hv_hash_gets(back[1], "host"), hv_hash_gets(back[2], "host"));
    /* entry 3 has "os" on line 3: another string, not the one of line 2 */
    const hv *k3 = hv_hash_key_at(back[3], 1);
    assert_string_equal(hv_str_ptr(k3), "os");
    assert_ptr_not_equal(k3, k2);
    assert_int_equal(hv_line(k3), 3);
    for (int i = 0; i < 4; i++)
        hv_decref(back[i]);
    /* 3000 strings shared: the table grows past its first size and keeps finding them */
    sbuf doc = {0};
    for (int i = 0; i < 1500; i++)
        sb_addf(&doc, "key%d: value%d\n", i, i);
    hv *reads[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "big%d.yaml", i);
        struct stat st;
        hv *v;
        char *src = cached_source(c, name, doc.s, &st, &v);
        unsigned flags = 0;
        reads[i] = diskcache_get_shared(c, src, 0, &st, &flags, t);
        assert_non_null(reads[i]);
        assert_true(hv_eql(v, reads[i]));
        hv_decref(v);
        free(src);
    }
    for (size_t k = 0; k < 1500; k += 7) {
        assert_ptr_equal(hv_hash_key_at(reads[1], k), hv_hash_key_at(reads[2], k));
        assert_ptr_equal(hv_hash_val_at(reads[1], k), hv_hash_val_at(reads[2], k));
    }
    for (int i = 0; i < 3; i++)
        hv_decref(reads[i]);
    sb_free(&doc);
    dc_strings_free(t);
    diskcache_close(c);
    free(cdir);
}

/* An entry whose top-level values stand alone has an index: each key's value read alone is the
 * one the whole value holds (lines and aliases inside a value kept); keys it lacks (or holds
 * only as numbers) are absent; an entry whose values share a node across keys has none. */
static void test_lazy_entries(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/cache-lazy", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    sbuf doc = {0};
    sb_adds(&doc, "a: 1\nb: [x, y]\nc: {p: &q [1, 2], r: *q}\n2: two\n'': empty\nlookup_options: {x: {merge: deep}}\n");
    for (int i = 0; i < 300; i++)
        sb_addf(&doc, "key%d: {v: %d, s: \"text %d\"}\n", i, i, i);
    char *src = write_src("lazy.yaml", sb_str(&doc));
    struct stat st;
    assert_int_equal(stat(src, &st), 0);
    herr e = {0};
    hv *v = yaml_parse(doc.s, doc.len, src, YAML_PUPPET, &e);
    assert_non_null(v);
    diskcache_put(c, src, 0, &st, v, 1);
    dc_map *m = NULL;
    unsigned flags = 0;
    assert_null(diskcache_get_lazy(c, src, 0, &st, &flags, &m));
    assert_non_null(m);
    assert_int_equal(flags, 1);
    for (size_t i = 0; i < hv_hash_len(v); i++) {
        const hv *k = hv_hash_key_at(v, i);
        if (!hv_is(k, HV_STRING))
            continue;
        hv *got = NULL;
        assert_int_equal(dc_map_get(m, hv_str_ptr(k), hv_str_len(k), hv_str_code(hv_str_ptr(k), hv_str_len(k)), &got), 1);
        assert_true(hv_eql(got, hv_hash_val_at(v, i)));
        assert_int_equal(hv_line(got), hv_line(hv_hash_val_at(v, i)));
        if (!strcmp(hv_str_ptr(k), "c"))
            assert_ptr_equal(hv_hash_gets(got, "p"), hv_hash_gets(got, "r")); /* one node, as written */
        hv_decref(got);
    }
    hv *got = NULL;
    assert_int_equal(dc_map_get(m, "nope", 4, hv_str_code("nope", 4), &got), 0);
    assert_int_equal(dc_map_get(m, "2", 1, hv_str_code("2", 1), &got), 0); /* the key is the number 2 */
    assert_null(got);
    hv *whole = dc_map_value(m);
    assert_true(hv_eql(whole, v));
    hv_decref(whole);
    dc_map_free(m);
    /* the plain reader reads an indexed entry whole */
    hv *back = diskcache_get(c, src, 0, &st, &flags);
    assert_true(hv_eql(back, v));
    hv_decref(back);
    /* DOC's "use" is "base"'s node: no index, the value whole */
    char *src2 = write_src("shared.yaml", DOC);
    assert_int_equal(stat(src2, &st), 0);
    hv *v2 = yaml_parse(DOC, strlen(DOC), src2, YAML_PUPPET, &e);
    diskcache_put(c, src2, 0, &st, v2, 0);
    back = diskcache_get_lazy(c, src2, 0, &st, &flags, &m);
    assert_null(m);
    assert_non_null(back);
    assert_true(hv_eql(back, v2));
    hv_decref(back);
    hv_decref(v2);
    hv_decref(v);
    sb_free(&doc);
    diskcache_close(c);
    free(src);
    free(src2);
    free(cdir);
}

/* A damaged indexed entry (cut anywhere, any byte changed) is a miss or reads some value: never
 * a crash, whatever is asked of it. */
static void test_lazy_corrupt(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/cache-lazy2", dir);
    diskcache *c = diskcache_open(cdir);
    static const char text[] = "a: 1\nb: [x, {y: z}]\nlong_key_name: text\n";
    char *src = write_src("lz.yaml", text);
    struct stat st;
    assert_int_equal(stat(src, &st), 0);
    herr e = {0};
    hv *v = yaml_parse(text, strlen(text), src, YAML_PUPPET, &e);
    diskcache_put(c, src, 0, &st, v, 0);
    char *entry = diskcache_entry_path(c, src, 0);
    FILE *f = fopen(entry, "rb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    static const char *keys[] = {"a", "b", "long_key_name", "zz"};
    unsigned flags;
    for (size_t variant = 0; variant < 2 * n; variant++) {
        char copy[4096];
        memcpy(copy, buf, n);
        size_t len = n;
        if (variant < n)
            len = variant; /* cut */
        else
            copy[variant - n] ^= (char)0x5a; /* a byte changed */
        f = fopen(entry, "wb");
        fwrite(copy, 1, len, f);
        fclose(f);
        dc_map *m = NULL;
        hv *r = diskcache_get_lazy(c, src, 0, &st, &flags, &m);
        if (variant < n)
            assert_true(!r && !m); /* a cut entry is a miss */
        hv_decref(r);
        for (size_t k = 0; m && k < 4; k++) {
            hv *got = NULL;
            dc_map_get(m, keys[k], strlen(keys[k]), hv_str_code(keys[k], strlen(keys[k])), &got);
            hv_decref(got);
        }
        if (m)
            hv_decref(dc_map_value(m));
        dc_map_free(m);
    }
    hv_decref(v);
    free(entry);
    diskcache_close(c);
    free(src);
    free(cdir);
}

static void test_corrupt_entries(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/cache2", dir);
    diskcache *c = diskcache_open(cdir);
    char *src = write_src("b.yaml", DOC);
    struct stat st;
    assert_int_equal(stat(src, &st), 0);
    herr e = {0};
    hv *v = yaml_parse(DOC, strlen(DOC), src, YAML_PUPPET, &e);
    diskcache_put(c, src, 0, &st, v, 0);
    /* find the entry and damage it in every way: truncations and flipped bytes */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/*.hc", cdir);
    FILE *ls = popen(cmd, "r");
    char entry[256] = {0};
    assert_non_null(fgets(entry, sizeof entry, ls));
    pclose(ls);
    entry[strcspn(entry, "\n")] = 0;
    FILE *f = fopen(entry, "rb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned flags;
    for (size_t cut = 0; cut < n; cut += 7) {
        f = fopen(entry, "wb");
        fwrite(buf, 1, cut, f);
        fclose(f);
        hv *r = diskcache_get(c, src, 0, &st, &flags);
        assert_null(r);
    }
    for (size_t i = 0; i < n; i++) {
        char copy[4096];
        memcpy(copy, buf, n);
        copy[i] ^= (char)0x5a;
        f = fopen(entry, "wb");
        fwrite(copy, 1, n, f);
        fclose(f);
        hv *r = diskcache_get(c, src, 0, &st, &flags); /* a miss, or some value: never a crash */
        hv_decref(r);
    }
    /* a cache folder others can write to is refused */
    diskcache_close(c);
    chmod(cdir, 0777);
    assert_null(diskcache_open(cdir));
    hv_decref(v);
    free(src);
    free(cdir);
}

/* hiera_cache_load_value_file: the facts file parsed once, then read back while unchanged; a
 * changed file is parsed again; errors are not cached; without a disk cache it still loads. */
static void test_value_file(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/vcache", dir);
    hiera_cache *c = hiera_cache_new();
    assert_true(hiera_cache_use_disk(c, cdir));
    char *src = write_src("facts.yaml", "hostname: one\nlist: [1, 2.5, x]\n");
    hiera_error err = {0};
    hiera_value *a = hiera_cache_load_value_file(c, src, &err);
    assert_non_null(a);
    hiera_value *b = hiera_cache_load_value_file(c, src, &err); /* from the cache folder */
    assert_non_null(b);
    assert_true(hv_eql((hv *)a, (hv *)b));
    assert_string_equal(hiera_value_string(hiera_value_hash_get(b, "hostname")), "one");
    hiera_value_decref(b);
    /* changed: same size, other text -> parsed again (the change time differs) */
    usleep(20000);
    free(write_src("facts.yaml", "hostname: two\nlist: [1, 2.5, y]\n"));
    b = hiera_cache_load_value_file(c, src, &err);
    assert_non_null(b);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(b, "hostname")), "two");
    hiera_value_decref(b);
    free(write_src("facts.yaml", "a: [unclosed\n"));
    assert_null(hiera_cache_load_value_file(c, src, &err));
    assert_non_null(err.message);
    hiera_error_clear(&err);
    assert_null(hiera_cache_load_value_file(c, src, &err)); /* still an error: nothing was stored */
    hiera_error_clear(&err);
    hiera_cache_free(c);
    hiera_value *p = hiera_cache_load_value_file(NULL, src, &err);
    assert_null(p);
    hiera_error_clear(&err);
    hiera_value_decref(a);
    free(src);
    free(cdir);
}

/* ------------------------------------------------------------------ the sweep */

/* YAML text of n keys (about 26 bytes each), the i-th value tagged with tag */
static char *yaml_text(size_t n, int tag)
{
    sbuf b = {0};
    for (size_t i = 0; i < n; i++)
        sb_addf(&b, "key%zu: value %d of %zu\n", i, tag, i);
    return sb_take(&b);
}

/* Writes name (n keys; replaced whole, as a deployment does) and puts its parsed value in c, with
 * the identity of the file it read (another process may replace it at any time); returns the
 * source's path. No cmocka assertion: also used by forked processes. */
static char *put_file(diskcache *c, const char *name, size_t n, int tag)
{
    char *src = xasprintf("%s/%s", dir, name);
    char *text = yaml_text(n, tag);
    char *tmp = xasprintf("%s.new%d", src, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
        rename(tmp, src);
    }
    int fd = open(src, O_RDONLY);
    struct stat st;
    char buf[8192];
    ssize_t len = fd >= 0 && fstat(fd, &st) == 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    herr e = {0};
    hv *v = len > 0 ? yaml_parse(buf, (size_t)len, src, YAML_PUPPET, &e) : NULL;
    if (v)
        diskcache_put(c, src, 0, &st, v, 0);
    hv_decref(v);
    herr_clear(&e);
    free(tmp);
    free(text);
    return src;
}

static bool has_entry(const diskcache *c, const char *src)
{
    char *e = diskcache_entry_path(c, src, 0);
    bool there = access(e, F_OK) == 0;
    free(e);
    return there;
}

static uint64_t entry_size(const diskcache *c, const char *src)
{
    char *e = diskcache_entry_path(c, src, 0);
    struct stat st;
    assert_int_equal(stat(e, &st), 0);
    free(e);
    return (uint64_t)st.st_size;
}

/* Sets a file's access and modification times to now minus the given seconds. */
static void age(const char *file, time_t atime_ago, time_t mtime_ago)
{
    time_t now = time(NULL);
    struct timespec ts[2] = {{now - atime_ago, 0}, {now - mtime_ago, 0}};
    assert_int_equal(utimensat(AT_FDCWD, file, ts, 0), 0);
}

static void age_entry(const diskcache *c, const char *src, time_t atime_ago, time_t mtime_ago)
{
    char *e = diskcache_entry_path(c, src, 0);
    age(e, atime_ago, mtime_ago);
    free(e);
}

/* The value is read back (a hit) */
static bool hit(diskcache *c, const char *src)
{
    struct stat st;
    unsigned flags;
    if (stat(src, &st) != 0)
        return false;
    hv *v = diskcache_get(c, src, 0, &st, &flags);
    hv_decref(v);
    return v != NULL;
}

static void test_sweep_stale(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-stale", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    char *gone = put_file(c, "gone.yaml", 20, 0), *changed = put_file(c, "changed.yaml", 20, 0);
    char *kept = put_file(c, "kept.yaml", 20, 0);
    assert_true(has_entry(c, gone) && has_entry(c, changed) && hit(c, kept));
    /* an entry of a relative path: its source cannot be told from here, so it stays */
    struct stat st;
    assert_int_equal(stat(kept, &st), 0);
    hv *one = hv_int(1);
    diskcache_put(c, "relative/data.yaml", 0, &st, one, 0);
    hv_decref(one);
    assert_true(has_entry(c, "relative/data.yaml"));
    unlink(gone);
    free(write_src("changed.yaml", "other: text of another size\n"));
    /* temporary files: abandoned two hours ago (removed), being written (kept); an entry of
     * another version (removed); names that are not the cache's (kept) */
    char *old_tmp = xasprintf("%s/0123456789abcdef.hc.AbC123", cdir);
    char *new_tmp = xasprintf("%s/0123456789abcdef.hc.XyZ789", cdir);
    char *other_version = xasprintf("%s/fedcba9876543210.hc", cdir);
    char *foreign = xasprintf("%s/README", cdir), *odd = xasprintf("%s/0123456789abcdef.hc.kept", cdir);
    const char *files[] = {old_tmp, new_tmp, other_version, foreign, odd};
    for (size_t i = 0; i < 5; i++) {
        FILE *f = fopen(files[i], "w");
        assert_non_null(f);
        fputs(i == 2 ? "HIERAC\1\0 an entry of version 1" : "x", f);
        fclose(f);
    }
    age(old_tmp, 7200, 7200);
    assert_int_equal(diskcache_sweep(c, true), 4);
    assert_false(has_entry(c, gone));
    assert_false(has_entry(c, changed));
    assert_true(hit(c, kept));
    assert_true(has_entry(c, "relative/data.yaml"));
    assert_int_equal(access(old_tmp, F_OK), -1);
    assert_int_equal(access(other_version, F_OK), -1);
    assert_int_equal(access(new_tmp, F_OK), 0);
    assert_int_equal(access(foreign, F_OK), 0);
    assert_int_equal(access(odd, F_OK), 0);
    assert_int_equal(diskcache_sweep(c, true), 0); /* nothing more */
    for (size_t i = 0; i < 5; i++)
        free((char *)files[i]);
    diskcache_close(c);
    free(gone);
    free(changed);
    free(kept);
    free(cdir);
}

/* Result entries (<hex>.hr, cli/result_cache.c) and kept verdicts (<hex>.hk): written whole by
 * diskcache_put_named; a sweep keeps those of this version (what they depend on is checked when
 * used) and removes those of another version and abandoned temporary files. */
static void test_sweep_results(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-results", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    static const char good[] = DISKCACHE_RESULT_MAGIC "the rest of an entry";
    diskcache_put_named(c, "00112233445566aa.hr", good, sizeof good - 1);
    char *kept = xasprintf("%s/00112233445566aa.hr", cdir);
    char *other = xasprintf("%s/00112233445566bb.hr", cdir), *tmp = xasprintf("%s/00112233445566cc.hr.AbC123", cdir);
    sbuf got = {0};
    assert_true(file_read(kept, &got, NULL, NULL));
    assert_int_equal(got.len, sizeof good - 1);
    assert_memory_equal(got.s, good, sizeof good - 1);
    sb_free(&got);
    const char *files[] = {other, tmp};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "w");
        assert_non_null(f);
        fputs("HIERAR\7\0 another version", f);
        fclose(f);
    }
    age(tmp, 7200, 7200);
    assert_int_equal(diskcache_sweep(c, true), 2);
    assert_int_equal(access(kept, F_OK), 0);
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(access(tmp, F_OK), -1);
    /* an entry larger than the bound is not written */
    diskcache_set_max_size(c, 8);
    diskcache_put_named(c, "00112233445566dd.hr", good, sizeof good - 1);
    char *big = xasprintf("%s/00112233445566dd.hr", cdir);
    assert_int_equal(access(big, F_OK), -1);
    /* kept verdicts (<hex>.hk, engine/settings.c): the same, by their own magic */
    diskcache_set_max_size(c, 1 << 20);
    static const char verdict[] = DISKCACHE_VERDICT_MAGIC "a verdict";
    diskcache_put_named(c, "00112233445566ee.hk", verdict, sizeof verdict - 1);
    char *vkept = xasprintf("%s/00112233445566ee.hk", cdir), *vother = xasprintf("%s/00112233445566ff.hk", cdir);
    char *vresult = xasprintf("%s/0011223344556600.hk", cdir);
    FILE *f = fopen(vother, "w");
    assert_non_null(f);
    fputs("HIERAK\7\0 another version", f);
    fclose(f);
    f = fopen(vresult, "w"); /* (a result's magic is not a verdict's) */
    assert_non_null(f);
    fputs(good, f);
    fclose(f);
    assert_int_equal(diskcache_sweep(c, true), 2);
    assert_int_equal(access(vkept, F_OK), 0);
    assert_int_equal(access(vother, F_OK), -1);
    assert_int_equal(access(vresult, F_OK), -1);
    diskcache_close(c);
    free(vkept);
    free(vother);
    free(vresult);
    free(big);
    free(kept);
    free(other);
    free(tmp);
    free(cdir);
}

/* Beyond the limit, the least recently used go first: the later of access and modification */
static void test_sweep_size_limit(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-size", dir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    char *src[5];
    uint64_t size[5];
    for (int i = 0; i < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "lru%d.yaml", i);
        src[i] = put_file(c, name, 40 + 10 * (size_t)i, i);
        size[i] = entry_size(c, src[i]);
    }
    /* written long ago, newest last; 1 was read a minute ago, 3 was read a week ago (its access
     * time is older than its write: the write counts) */
    age_entry(c, src[0], 5000, 5000);
    age_entry(c, src[1], 60, 4000);
    age_entry(c, src[2], 3000, 3000);
    age_entry(c, src[3], 7 * 86400, 2000);
    age_entry(c, src[4], 1000, 1000);
    /* room for 4, 1 and 3 (and less than a byte more than that): 0 and 2 go */
    diskcache_set_max_size(c, size[4] + size[1] + size[3]);
    assert_int_equal(diskcache_sweep(c, true), 2);
    assert_false(has_entry(c, src[0]));
    assert_false(has_entry(c, src[2]));
    assert_true(has_entry(c, src[1]) && has_entry(c, src[3]) && has_entry(c, src[4]));
    /* one byte less: the next oldest, 3, goes too (reading the entries above would have been a
     * use: the file system updates the access time of one read after it was written) */
    diskcache_set_max_size(c, size[4] + size[1] + size[3] - 1);
    assert_int_equal(diskcache_sweep(c, true), 1);
    assert_false(has_entry(c, src[3]));
    assert_true(hit(c, src[1]) && hit(c, src[4]));
    /* an entry larger than the limit is not written at all */
    diskcache_set_max_size(c, 100);
    char *big = put_file(c, "big.yaml", 40, 9);
    assert_false(has_entry(c, big));
    /* a limit of 0 keeps nothing */
    diskcache_set_max_size(c, 0);
    assert_int_equal(diskcache_sweep(c, true), 2);
    assert_false(has_entry(c, src[1]) || has_entry(c, src[4]));
    diskcache_close(c);
    for (int i = 0; i < 5; i++)
        free(src[i]);
    free(big);
    free(cdir);
}

/* A write sweeps when the last sweep is a day old (looked at once per process) or when an eighth
 * of the limit has been written since */
static void test_sweep_when_due(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-due", dir);
    char *stamp = xasprintf("%s/last-sweep", cdir);
    diskcache *c = diskcache_open(cdir);
    assert_non_null(c);
    char *first = put_file(c, "due-first.yaml", 20, 0); /* no stamp yet: this write sweeps */
    struct stat st;
    assert_int_equal(stat(stamp, &st), 0);
    assert_true(st.st_size > 0);
    char *gone = put_file(c, "due-gone.yaml", 20, 0);
    unlink(gone);
    diskcache_close(c);
    /* a new process: the stamp is fresh and little was written, so its write does not sweep */
    c = diskcache_open(cdir);
    free(put_file(c, "due-a.yaml", 20, 0));
    assert_true(has_entry(c, gone));
    /* the stamp is two days old, but this process has looked at it already */
    age(stamp, 2 * 86400, 2 * 86400);
    free(put_file(c, "due-b.yaml", 20, 0));
    assert_true(has_entry(c, gone));
    diskcache_close(c);
    /* the next process sweeps at its first write, and sets the stamp */
    c = diskcache_open(cdir);
    free(put_file(c, "due-c.yaml", 20, 0));
    assert_false(has_entry(c, gone));
    assert_int_equal(stat(stamp, &st), 0);
    assert_true(time(NULL) - st.st_mtim.tv_sec < 600);
    diskcache_close(c);
    /* by the amount written: a limit of 64 KiB sweeps after 8 KiB (two 4 KiB units; each entry
     * here is one) */
    c = diskcache_open(cdir);
    diskcache_set_max_size(c, 64 << 10);
    free(put_file(c, "due-gone.yaml", 20, 0)); /* one unit */
    unlink(gone);
    assert_true(has_entry(c, gone));
    free(put_file(c, "due-d.yaml", 20, 0)); /* two */
    assert_false(has_entry(c, gone));
    char *written = xasprintf("%s/written", cdir);
    assert_int_equal(stat(written, &st), 0);
    assert_int_equal(st.st_size, 0); /* counted from the sweep on */
    diskcache_close(c);
    /* a sweep that is not due does nothing; forced, it runs */
    c = diskcache_open(cdir);
    assert_int_equal(diskcache_sweep(c, false), -1);
    assert_int_equal(diskcache_sweep(c, true), 0);
    diskcache_close(c);
    free(written);
    free(first);
    free(gone);
    free(stamp);
    free(cdir);
}

/* Only one sweep at a time: one that cannot take the lock leaves the work to the holder */
static void test_sweep_lock(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-lock", dir);
    char *stamp = xasprintf("%s/last-sweep", cdir);
    diskcache *c = diskcache_open(cdir);
    char *gone = put_file(c, "lock-gone.yaml", 20, 0);
    unlink(gone);
    int fd = open(stamp, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    assert_int_equal(diskcache_sweep(c, true), -1);
    assert_true(has_entry(c, gone));
    close(fd);
    assert_int_equal(diskcache_sweep(c, true), 1);
    assert_false(has_entry(c, gone));
    diskcache_close(c);
    free(gone);
    free(stamp);
    free(cdir);
}

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t b = 7;
    assert_true(diskcache_parse_size("0", &b) && b == 0);
    assert_true(diskcache_parse_size("12345", &b) && b == 12345);
    assert_true(diskcache_parse_size("512k", &b) && b == 512 << 10);
    assert_true(diskcache_parse_size("256M", &b) && b == 256 << 20);
    assert_true(diskcache_parse_size("2G", &b) && b == (uint64_t)2 << 30);
    const char *bad[] = {"", "M", "-1", " 5", "5 ", "5MB", "1.5G", "12x", "99999999999999999999", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(diskcache_parse_size(bad[i], &b));
    assert_int_equal(DISKCACHE_DEFAULT_MAX_SIZE, 256 << 20);
}

/* Processes writing, reading and sweeping one folder at once, with a limit that forces removals
 * all the time and sources that change under them: every value read back is the current one. */
static void test_sweep_concurrent(void **state)
{
    (void)state;
    char *cdir = xasprintf("%s/sweep-race", dir);
    diskcache *c0 = diskcache_open(cdir);
    assert_non_null(c0);
    diskcache_close(c0);
    enum { PROCS = 3, ROUNDS = 60, FILES = 4 };
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] > 0)
            continue;
        int bad = 0;
        diskcache *c = diskcache_open(cdir);
        if (!c)
            _exit(2);
        diskcache_set_max_size(c, 6 << 10);
        for (int r = 0; r < ROUNDS && !bad; r++) {
            for (int f = 0; f < FILES; f++) {
                /* half the files are shared by all processes (each writes its own version) */
                char name[32];
                snprintf(name, sizeof name, f % 2 ? "race-shared-%d.yaml" : "race-%d-%d.yaml", f, p);
                free(put_file(c, name, 30 + 5 * (size_t)f, r));
                /* the file as it is now (another process may replace it at any time: what is
                 * read is the file of the identity asked for), and what the cache gives for it */
                char *src = xasprintf("%s/%s", dir, name);
                int fd = open(src, O_RDONLY);
                struct stat st;
                char buf[8192];
                ssize_t n = fd >= 0 && fstat(fd, &st) == 0 ? read(fd, buf, sizeof buf) : -1;
                if (fd >= 0)
                    close(fd);
                if (n > 0) {
                    unsigned flags;
                    hv *got = diskcache_get(c, src, 0, &st, &flags);
                    herr e = {0};
                    hv *want = yaml_parse(buf, (size_t)n, src, YAML_PUPPET, &e);
                    herr_clear(&e);
                    if (!want || (got && !hv_eql(got, want))) {
                        fprintf(stderr, "process %d, %s: %s\n", p, name, !want ? "unreadable" : "another value");
                        bad = 1;
                    }
                    hv_decref(got);
                    hv_decref(want);
                }
                free(src);
            }
            if (r % 5 == p)
                diskcache_sweep(c, true);
        }
        diskcache_close(c);
        _exit(bad);
    }
    int status[PROCS];
    for (int p = 0; p < PROCS; p++)
        assert_int_equal(waitpid(pids[p], &status[p], 0), pids[p]);
    for (int p = 0; p < PROCS; p++) {
        assert_true(WIFEXITED(status[p]));
        assert_int_equal(WEXITSTATUS(status[p]), 0);
    }
    /* the folder holds no temporary file and stays within its limit after a last sweep */
    diskcache *c = diskcache_open(cdir);
    diskcache_set_max_size(c, 6 << 10);
    assert_true(diskcache_sweep(c, true) >= 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd %s && test -z \"$(ls | grep '\\.hc\\.')\" && test $(cat *.hc 2>/dev/null | wc -c) -le %d",
             cdir, 6 << 10);
    assert_int_equal(system(cmd), 0);
    diskcache_close(c);
    free(cdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_shared_strings),
        cmocka_unit_test(test_corrupt_entries),
        cmocka_unit_test(test_lazy_entries),
        cmocka_unit_test(test_lazy_corrupt),
        cmocka_unit_test(test_value_file),
        cmocka_unit_test(test_sweep_stale),
        cmocka_unit_test(test_sweep_results),
        cmocka_unit_test(test_sweep_size_limit),
        cmocka_unit_test(test_sweep_when_due),
        cmocka_unit_test(test_sweep_lock),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_sweep_concurrent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
