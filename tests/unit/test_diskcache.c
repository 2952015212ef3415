/* Tests of the on-disk cache of parsed files (src/formats/diskcache.c): round trips keep values, lines
 * and shared nodes; a changed source, a corrupt or foreign cache file is a miss. */
#include "testutil.h"

#include "formats/diskcache.h"
#include "hiera.h"
#include "formats/psych.h"

#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/hiera-dc-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_corrupt_entries),
        cmocka_unit_test(test_value_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
