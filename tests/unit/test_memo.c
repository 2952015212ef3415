/* Unit tests for what a frozen cache remembers: src/engine/memo.c (the table, interning), the
 * identity of values it relies on (value.c: hv_identical, hv_identity_code, stable marks) and
 * the key index of loaded data files (cache.c). Whole lookups through remembered merges are
 * compared with plain ones by tests/batch/memo-compare.py. */
#include <unistd.h>

#include "testutil.h"

#include "engine/engine.h"
#include "engine/memo.h"

/* hash_bytes against the definition it keeps: words of eight bytes, then the rest as a
 * little-endian word (read byte by byte here), for every length up to 64 at every alignment */
static uint64_t hash_reference(const unsigned char *b, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        w = 0;
        for (size_t j = 0; j < 8; j++)
            w |= (uint64_t)b[i + j] << (8 * j);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    if (i < n) {
        w = 0;
        for (size_t j = 0; i + j < n; j++)
            w |= (uint64_t)b[i + j] << (8 * j);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static void test_hash_bytes(void **state)
{
    (void)state;
    unsigned char buf[96];
    uint64_t x = 88172645463325252ULL;
    for (int round = 0; round < 50; round++) {
        for (size_t i = 0; i < sizeof buf; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (unsigned char)x;
        }
        for (size_t off = 0; off < 8; off++)
            for (size_t n = 0; n <= 64; n++)
                assert_true(hash_bytes(buf + off, n) == hash_reference(buf + off, n));
    }
    /* a byte past the end never counts */
    memcpy(buf, "abcdefghij", 10);
    uint64_t a = hash_bytes(buf + 1, 3);
    buf[4] = 'X';
    assert_true(hash_bytes(buf + 1, 3) == a);
    assert_true(hash_bytes("ab", 2) != hash_bytes("ba", 2));
}

static void test_identical(void **state)
{
    (void)state;
    hv *a = testutil_json("{\"x\": [1, 2.5, \"s\", null, true], \"y\": {\"z\": 1}}");
    hv *b = testutil_json("{\"x\": [1, 2.5, \"s\", null, true], \"y\": {\"z\": 1}}");
    hv *reordered = testutil_json("{\"y\": {\"z\": 1}, \"x\": [1, 2.5, \"s\", null, true]}");
    hv *float_one = testutil_json("{\"x\": [1.0, 2.5, \"s\", null, true], \"y\": {\"z\": 1}}");
    assert_true(hv_identical(a, b));
    assert_true(hv_eql(a, reordered));        /* Ruby eql? ignores order ... */
    assert_false(hv_identical(a, reordered)); /* ... what renders does not */
    assert_false(hv_identical(a, float_one)); /* 1 and 1.0 print differently */
    uint64_t ca, cb;
    assert_true(hv_identity_code(a, &ca));
    assert_true(hv_identity_code(b, &cb));
    assert_true(ca == cb);
    hv *zero = hv_float(0.0), *negzero = hv_float(-0.0);
    assert_true(hv_equal(zero, negzero));
    assert_false(hv_identical(zero, negzero)); /* "0.0" and "-0.0" */
    hv *sens = hv_sensitive_new(hv_str("secret"));
    assert_false(hv_identity_code(sens, &ca)); /* never interned */
    assert_true(hv_identical(sens, sens)); /* the same object is itself */
    hv_decref(sens);
    hv_decref(zero);
    hv_decref(negzero);
    hv_decref(a);
    hv_decref(b);
    hv_decref(reordered);
    hv_decref(float_one);
}

static void test_stable_marks(void **state)
{
    (void)state;
    hv *s = hv_str("x");
    assert_false(hv_is_stable(s));
    hv_set_stable_deep(s);
    assert_true(hv_is_stable(s));
    hv *copy = hv_copy(s); /* (a string copy is the same object) */
    assert_true(copy == s);
    hv_decref(copy);
    hv *h = testutil_json("{\"a\": 1}");
    hv_set_stable_deep(h);
    hv *hc = hv_copy(h);
    assert_false(hv_is_stable(hc)); /* a copy is a new, private value */
    assert_true(hv_is_stable(hv_undef()) && hv_is_stable(hv_true())); /* immortal */
    hv_decref(hc);
    hv_decref(h);
    hv_decref(s);
}

static void test_table(void **state)
{
    (void)state;
    memo *m = memo_new();
    char key[64];
    /* a key put for the first time is not kept (most work is done once): the second time it is */
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        hv *v = hv_int(i);
        assert_false(memo_put(m, key, (size_t)n, v));
        assert_false(hv_is_stable(v));
        assert_null(memo_get(m, key, (size_t)n));
        hv_decref(v);
    }
    /* more entries than the first table holds: it grows and keeps them all (and the marks of
     * the keys put once outgrow their first array: none is lost on the way) */
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        hv *v = hv_int(i);
        assert_true(memo_put(m, key, (size_t)n, v));
        assert_true(hv_is_stable(v)); /* the table keeps it: stable now */
        hv_decref(v);
    }
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(key, sizeof key, "key-%d", i);
        hv *v = memo_get(m, key, (size_t)n);
        assert_non_null(v);
        assert_int_equal(hv_int_val(v), i);
    }
    assert_null(memo_get(m, "key-5000", 8));
    assert_null(memo_get(m, "key-1", 4)); /* a prefix is another key */
    /* past the bound of the set of keys put once, it is emptied: admissions go on */
    for (int i = 0; i < 300000; i++) {
        int n = snprintf(key, sizeof key, "once-%d", i);
        assert_false(memo_put(m, key, (size_t)n, hv_true()));
    }
    assert_false(memo_put(m, "late", 4, hv_true()));
    assert_true(memo_put(m, "late", 4, hv_true()));
    assert_true(memo_get(m, "late", 4) == hv_true());
    hv *other = hv_int(-1);
    assert_false(memo_put(m, "key-7", 5, other)); /* the first value keeps its place */
    assert_int_equal(hv_int_val(memo_get(m, "key-7", 5)), 7);
    hv_decref(other);
    memo_free(m);
}

static void test_intern(void **state)
{
    (void)state;
    memo *m = memo_new();
    hv *src = hv_str("%{facts.role}-x"); /* a data value, as the cache holds it */
    hv_set_stable_deep(src);
    /* a content met once comes back as it is; from the second time, one stable value */
    hv *once = memo_intern(m, src, hv_str("web-x"));
    assert_false(hv_is_stable(once));
    hv *first = memo_intern(m, src, hv_str("web-x"));
    hv *again = memo_intern(m, src, hv_str("web-x"));
    assert_true(first == again); /* one value for one content */
    assert_true(first != once);
    assert_true(hv_is_stable(first));
    hv_decref(memo_intern(m, src, hv_str("db-x")));
    hv *other = memo_intern(m, src, hv_str("db-x"));
    assert_true(other != first);
    assert_true(hv_is_stable(other));
    assert_string_equal(hv_str_ptr(other), "db-x");
    /* another source with the same content keeps its own value */
    hv *src2 = hv_str("%{facts.role}-x ");
    hv_set_stable_deep(src2);
    hv_decref(memo_intern(m, src2, hv_str("web-x")));
    hv *third = memo_intern(m, src2, hv_str("web-x"));
    assert_true(hv_is_stable(third));
    assert_true(third != first);
    /* what cannot be interned comes back as it is */
    hv *sens = hv_sensitive_new(hv_str("web-x"));
    hv *back = memo_intern(m, src, sens);
    assert_true(back == sens);
    assert_false(hv_is_stable(back));
    hv_decref(back);
    hv_decref(once);
    hv_decref(first);
    hv_decref(again);
    hv_decref(other);
    hv_decref(third);
    memo_free(m);
    hv_decref(src);
    hv_decref(src2);
}

static void test_key_index(void **state)
{
    (void)state;
    char dir[] = "/tmp/hiera-memo-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *a = testutil_write_under(dir, "a.json", "{\"k\": 1, \"only_a\": true, \"7\": 7}");
    char *b = testutil_write_under(dir, "b.json", "{\"k\": 2}");
    hiera_cache *c = cache_new();
    hv *flags;
    uint32_t kid_a, kid_b;
    herr e = {0};
    /* not frozen: nothing indexed */
    hv *va = cache_load_data(c, a, FMT_JSON, &flags, &kid_a, NULL, NULL, &e);
    assert_non_null(va);
    assert_int_equal(kid_a, 0);
    assert_int_equal(cache_key_index_gen(c), 0);
    hv_decref(va);
    cache_freeze(c);
    assert_null(cache_key_index(c, "k", 1, hv_str_code("k", 1)));
    va = cache_load_data(c, a, FMT_JSON, &flags, &kid_a, NULL, NULL, &e);
    assert_true(kid_a > 0);
    uint32_t gen = cache_key_index_gen(c);
    assert_int_not_equal(gen, 0); /* keys were added: a lookup that found none must ask again */
    uint64_t code = hv_str_code("k", 1);
    const key_index *before = cache_key_index(c, "k", 1, code);
    assert_non_null(before);
    hv *vb = cache_load_data(c, b, FMT_JSON, &flags, &kid_b, NULL, NULL, &e);
    assert_true(kid_b > kid_a);
    /* b's only key was indexed already: its entry grew in place, and an entry fetched before
     * (kept by a lookup while the generation holds) sees b too */
    assert_int_equal(cache_key_index_gen(c), gen);
    const key_index *x = cache_key_index(c, "k", 1, code);
    assert_ptr_equal(x, before);
    key_hit *ha = key_index_find(x, kid_a), *hb = key_index_find(x, kid_b);
    assert_non_null(ha);
    assert_non_null(hb);
    assert_true(ha->value == hv_hash_gets(va, "k"));
    assert_int_equal(hv_int_val(hb->value), 2);
    assert_int_equal(ha->flags, -1); /* not known until asked */
    x = cache_key_index(c, "only_a", 6, hv_str_code("only_a", 6));
    assert_non_null(key_index_find(x, kid_a));
    assert_null(key_index_find(x, kid_b));
    assert_null(cache_key_index(c, "missing", 7, hv_str_code("missing", 7)));
    assert_null(key_index_find(NULL, kid_a));
    /* loading a file again does not index it twice */
    uint32_t again;
    hv *va2 = cache_load_data(c, a, FMT_JSON, &flags, &again, NULL, NULL, &e);
    assert_int_equal(again, kid_a);
    x = cache_key_index(c, "k", 1, code);
    assert_non_null(key_index_find(x, kid_a));
    assert_int_equal(cache_key_index_gen(c), gen);
    /* a file with a key the index lacked: the generation changes (a lookup of that key kept
     * "none"); thousands of new keys grow the table (entries move), and the entries fetched
     * again hold every file */
    char *d = testutil_write_under(dir, "d.json", "{\"k\": 4, \"new_in_d\": 4}");
    uint32_t kid_d;
    hv *vd = cache_load_data(c, d, FMT_JSON, &flags, &kid_d, NULL, NULL, &e);
    assert_true(kid_d > kid_b);
    assert_int_not_equal(cache_key_index_gen(c), gen);
    assert_non_null(key_index_find(cache_key_index(c, "new_in_d", 8, hv_str_code("new_in_d", 8)), kid_d));
    gen = cache_key_index_gen(c);
    sbuf big = {0};
    sb_adds(&big, "{\"k\": 5");
    for (int i = 0; i < 5000; i++)
        sb_addf(&big, ", \"many_%d\": %d", i, i);
    sb_adds(&big, "}");
    char *m = testutil_write_under(dir, "many.json", big.s);
    sb_free(&big);
    uint32_t kid_m;
    hv *vm = cache_load_data(c, m, FMT_JSON, &flags, &kid_m, NULL, NULL, &e);
    assert_non_null(vm);
    assert_int_not_equal(cache_key_index_gen(c), gen);
    x = cache_key_index(c, "k", 1, code);
    assert_non_null(key_index_find(x, kid_a));
    assert_non_null(key_index_find(x, kid_m));
    assert_non_null(key_index_find(cache_key_index(c, "many_4999", 9, hv_str_code("many_4999", 9)), kid_m));
    hv_decref(va2);
    hv_decref(va);
    hv_decref(vb);
    hv_decref(vd);
    hv_decref(vm);
    cache_free(c);
    unlink(a);
    unlink(b);
    unlink(d);
    unlink(m);
    rmdir(dir);
    free(a);
    free(b);
    free(d);
    free(m);
}

/* key_index_has answers as key_index_find does, whether the key's files are kept as a bitmap
 * (a key in many files) or only searched (a key in a few) */
static void test_key_index_has(void **state)
{
    (void)state;
    char dir[] = "/tmp/hiera-memo-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    enum { FILES = 300 };
    char *paths[FILES];
    uint32_t kids[FILES];
    hiera_cache *c = cache_new();
    cache_freeze(c);
    herr e = {0};
    for (int i = 0; i < FILES; i++) {
        char name[32], text[160];
        snprintf(name, sizeof name, "f%d.json", i);
        snprintf(text, sizeof text, "{\"all\": %d%s%s%s}", i, i % 2 ? ", \"odd\": 1" : "", i % 40 == 0 ? ", \"sparse\": 1" : "",
                 i == 0 || i == FILES - 1 ? ", \"ends\": 1" : "");
        paths[i] = testutil_write_under(dir, name, text);
        hv *flags;
        hv *v = cache_load_data(c, paths[i], FMT_JSON, &flags, &kids[i], NULL, NULL, &e);
        assert_non_null(v);
        assert_true(kids[i] > 0);
        hv_decref(v);
    }
    const char *keys[] = {"all", "odd", "sparse", "ends", "none"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const key_index *x = cache_key_index(c, keys[k], strlen(keys[k]), hv_str_code(keys[k], strlen(keys[k])));
        for (uint32_t kid = 0; kid <= kids[FILES - 1] + 70; kid++)
            assert_int_equal(key_index_has(x, kid), key_index_find(x, kid) != NULL);
        for (int i = 0; i < FILES; i++) {
            bool holds = k == 0 || (k == 1 && i % 2) || (k == 2 && i % 40 == 0) || (k == 3 && (i == 0 || i == FILES - 1));
            assert_int_equal(key_index_has(x, kids[i]), holds);
        }
    }
    cache_free(c);
    for (int i = 0; i < FILES; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_bytes),
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_stable_marks),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_intern),
        cmocka_unit_test(test_key_index),
        cmocka_unit_test(test_key_index_has),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
