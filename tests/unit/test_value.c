/* Unit tests for the value type (src/base/value.c). */
#include "testutil.h"

static void test_hash_order_and_replace(void **state)
{
    (void)state;
    hv *h = hv_hash();
    hv_hash_sets(h, "b", hv_int(1));
    hv_hash_sets(h, "a", hv_int(2));
    hv_hash_sets(h, "b", hv_int(3)); /* replaced in place */
    assert_value_json(h, "{\"b\":3,\"a\":2}");
    assert_true(hv_hash_del(h, hv_hash_key_at(h, 0)));
    assert_value_json(h, "{\"a\":2}");
    hv_decref(h);
}

/* {"<prefix>0": base, "<prefix>1": base + 1, ...} with n entries, set with hv_hash_sets */
static hv *numbered_hash(const char *prefix, int n, int base)
{
    hv *h = hv_hash();
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s%d", prefix, i);
        hv_hash_sets(h, key, hv_int(base + i));
    }
    return h;
}

/* h maps "<prefix>i" to base + i for i in [from, to) */
static void assert_numbered(const hv *h, const char *prefix, int from, int to, int base)
{
    for (int i = from; i < to; i++) {
        char key[32];
        snprintf(key, sizeof key, "%s%d", prefix, i);
        const hv *v = hv_hash_gets(h, key);
        assert_non_null(v);
        assert_int_equal(hv_int_val(v), base + i);
    }
}

/* hv_hash_add refuses a key already held; hv_hash_put_at replaces at the index hv_hash_index
 * gave, or appends for -1; both keep the index of a large hash right */
static void test_hash_add_and_put_at(void **state)
{
    (void)state;
    for (int size = 2; size <= 40; size += 19) {
        hv *h = hv_hash();
        for (int i = 0; i < size; i++) {
            char key[32];
            snprintf(key, sizeof key, "k%d", i);
            assert_true(hv_hash_add(h, hv_str(key), hv_int(i)));
        }
        hv *dup = hv_str("k1"), *val = hv_int(-1);
        assert_false(hv_hash_add(h, dup, val)); /* nothing taken */
        assert_int_equal(hv_int_val(hv_hash_gets(h, "k1")), 1);
        hv_decref(dup);
        hv_decref(val);
        hv *k = hv_str("k0");
        long at = hv_hash_index(h, k);
        assert_int_equal(at, 0);
        hv_hash_put_at(h, at, k, hv_int(100));
        k = hv_str("new");
        at = hv_hash_index(h, k);
        assert_int_equal(at, -1);
        hv_hash_put_at(h, at, k, hv_int(200));
        assert_int_equal(hv_hash_len(h), size + 1);
        assert_int_equal(hv_int_val(hv_hash_gets(h, "k0")), 100);
        assert_int_equal(hv_int_val(hv_hash_gets(h, "new")), 200);
        assert_string_equal(hv_str_ptr(hv_hash_key_at(h, (size_t)size)), "new");
        assert_numbered(h, "k", 1, size, 0);
        hv_decref(h);
    }
}

/* hv_copy of a hash copies entries and index: the copy finds every key, and changing it (keys
 * added, replaced, deleted) leaves the original as it was */
static void test_hash_copy_independent(void **state)
{
    (void)state;
    for (int size = 0; size <= 60; size += 6) {
        hv *h = numbered_hash("k", size, 0);
        hv *c = hv_copy(h);
        assert_int_equal(hv_hash_len(c), size);
        assert_numbered(c, "k", 0, size, 0);
        for (int i = 0; i < size; i++)
            assert_true(hv_equal(hv_hash_key_at(c, (size_t)i), hv_hash_key_at(h, (size_t)i)));
        hv *more = numbered_hash("n", 20, 1000);
        for (size_t i = 0; i < hv_hash_len(more); i++)
            hv_hash_set(c, hv_incref(hv_hash_key_at(more, i)), hv_incref(hv_hash_val_at(more, i)));
        hv_decref(more);
        if (size) {
            hv_hash_sets(c, "k0", hv_int(-1));
            hv *k = hv_str("k1");
            hv_hash_del(c, k);
            hv_decref(k);
        }
        assert_int_equal(hv_hash_len(h), size);
        assert_null(hv_hash_gets(h, "n0"));
        assert_numbered(h, "k", 0, size, 0);
        assert_numbered(c, "n", 0, 20, 1000);
        if (size) {
            assert_int_equal(hv_int_val(hv_hash_gets(c, "k0")), -1);
            assert_null(hv_hash_gets(c, "k1"));
        }
        hv_decref(c);
        hv_decref(h);
    }
}

static void test_hash_index_large(void **state)
{
    (void)state;
    hv *h = hv_hash();
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        hv_hash_sets(h, key, hv_int(i));
    }
    for (int i = 0; i < 1000; i += 7) {
        snprintf(key, sizeof key, "k%d", i);
        hv *v = hv_hash_gets(h, key);
        assert_non_null(v);
        assert_int_equal(hv_int_val(v), i);
    }
    assert_null(hv_hash_gets(h, "nope"));
    /* deleting keeps order and the index */
    hv *k = hv_str("k500");
    assert_true(hv_hash_del(h, k));
    assert_null(hv_hash_get(h, k));
    assert_int_equal(hv_hash_len(h), 999);
    assert_string_equal(hv_str_ptr(hv_hash_key_at(h, 500)), "k501");
    hv_decref(k);
    hv_decref(h);
}

static void test_eql_is_ruby_eql(void **state)
{
    (void)state;
    hv *one = hv_int(1), *onef = hv_float(1.0), *ones = hv_str("1");
    assert_false(hv_eql(one, onef));
    assert_true(hv_equal(one, onef));
    assert_false(hv_eql(one, ones));
    hv *h = hv_hash();
    hv_hash_set(h, hv_incref(one), hv_str("int"));
    hv_hash_set(h, hv_incref(ones), hv_str("str"));
    assert_int_equal(hv_hash_len(h), 2);
    assert_string_equal(hv_str_ptr(hv_hash_get(h, one)), "int");
    assert_string_equal(hv_str_ptr(hv_hash_gets(h, "1")), "str");
    hv_decref(h);
    hv_decref(one);
    hv_decref(onef);
    hv_decref(ones);
}

static void test_deep_copy_independent(void **state)
{
    (void)state;
    herr e = {0};
    const char *src = "{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}";
    hv *v = hjson_parse(src, strlen(src), "<t>", &e);
    hv *c = hv_deep_copy(v);
    assert_true(hv_eql(v, c));
    hv_array_push(hv_hash_gets(c, "a"), hv_int(3));
    assert_false(hv_eql(v, c));
    assert_value_json(v, src);
    hv_decref(v);
    hv_decref(c);
}

/* JSON as Ruby's JSON.parse reads it (answers checked with Ruby 3.1): integers beyond 64 bits stay
 * exact, data strings that start with NUL stay strings even where a number overflowed (the
 * overflow path marks numbers with a leading NUL), and a leading zero is refused. */
static void test_json_big_numbers_and_nul_strings(void **state)
{
    (void)state;
    herr e = {0};
    const char *src = "{\"a\": \"\\u0000N12\", \"b\": 99999999999999999999999, \"c\": \"\\u0000\", \"d\": \"\\u0000F1\", "
                      "\"e\": [\"\\u0000Nx\", \"\\u0000\\u0000\"]}";
    hv *v = hjson_parse(src, strlen(src), "<t>", &e);
    assert_non_null(v);
    assert_value_json(v, "{\"a\":\"\\u0000N12\",\"b\":99999999999999999999999,\"c\":\"\\u0000\",\"d\":\"\\u0000F1\","
                          "\"e\":[\"\\u0000Nx\",\"\\u0000\\u0000\"]}");
    assert_true(hv_is(hv_hash_gets(v, "a"), HV_STRING));
    assert_int_equal(hv_str_len(hv_hash_gets(v, "a")), 4);
    assert_true(hv_is(hv_hash_gets(v, "d"), HV_STRING));
    hv_decref(v);
    /* without an overflowing number the same strings */
    const char *plain = "[\"\\u0000N12\", \"\\u0000F1\"]";
    v = hjson_parse(plain, strlen(plain), "<t>", &e);
    assert_value_json(v, "[\"\\u0000N12\",\"\\u0000F1\"]");
    hv_decref(v);
    /* Ruby: "unexpected token" for a leading zero, also on a number beyond 64 bits */
    const char *zeros[] = {"{\"big\": 0001}", "{\"big\": 0000000009166039088418347512}", "[-012345678901234567890123]"};
    for (size_t i = 0; i < sizeof zeros / sizeof *zeros; i++) {
        assert_null(hjson_parse(zeros[i], strlen(zeros[i]), "<t>", &e));
        assert_non_null(strstr(e.msg, "Unable to parse (<t>)"));
        herr_clear(&e);
    }
}

/* HieraConfig.symkeys_to_string: symbol keys at every depth, values and keys inside keys kept,
 * a string key met again takes the later value in its own place, unchanged parts not copied,
 * nodes reached twice (YAML aliases) converted once and still shared, lines kept. */
static void test_symkeys_to_string(void **state)
{
    (void)state;
    hv *shared = hv_hash();
    hv_hash_set(shared, hv_symbol("s", 1), hv_int(1));
    hv *untouched = hv_array();
    hv_array_push(untouched, hv_str("x"));
    hv *arrkey = hv_array();
    hv_array_push(arrkey, hv_symbol("k", 1));
    hv *inner = hv_hash();
    hv_hash_set(inner, hv_str("a"), hv_int(1));
    hv_hash_set(inner, hv_symbol("b", 1), hv_symbol("v", 1));
    hv *sk = hv_symbol("a", 1);
    hv_set_line(sk, 7);
    hv_hash_set(inner, sk, hv_int(3));
    hv_hash_set(inner, arrkey, hv_int(4));
    hv *list = hv_array();
    hv_array_push(list, hv_incref(shared));
    hv_array_push(list, hv_incref(untouched));
    hv *top = hv_hash();
    hv_hash_set(top, hv_symbol("inner", 5), inner);
    hv_hash_sets(top, "list", list);
    hv_hash_sets(top, "again", hv_incref(shared));
    hv_set_line(top, 3);
    hv *out = hv_symkeys_to_string(hv_incref(top));
    assert_ptr_not_equal(out, top);
    assert_int_equal(hv_line(out), 3);
    hv *oi = hv_hash_gets(out, "inner");
    assert_non_null(oi);
    assert_int_equal(hv_hash_len(oi), 3);
    assert_true(hv_is(hv_hash_key_at(oi, 0), HV_STRING));
    assert_int_equal(hv_int_val(hv_hash_gets(oi, "a")), 3); /* the symbol :a's value, in "a"'s place */
    assert_int_equal(hv_line(hv_hash_key_at(oi, 0)), 0);    /* "a" keeps its own key object */
    assert_true(hv_is(hv_hash_gets(oi, "b"), HV_SYMBOL));   /* a symbol value stays */
    assert_true(hv_is(hv_array_get(hv_hash_key_at(oi, 2), 0), HV_SYMBOL)); /* a key inside a key too */
    hv *ol = hv_hash_gets(out, "list");
    assert_ptr_equal(hv_array_get(ol, 1), untouched);       /* nothing to change: not copied */
    assert_ptr_equal(hv_array_get(ol, 0), hv_hash_gets(out, "again")); /* still one node */
    assert_non_null(hv_hash_gets(hv_hash_gets(out, "again"), "s"));
    assert_true(hv_is(hv_hash_key_at(inner, 1), HV_SYMBOL)); /* the input is unchanged */
    hv_decref(out);
    /* nothing to convert: the same value back */
    hv *plain = hv_array();
    hv_array_push(plain, hv_incref(untouched));
    hv *same = hv_symkeys_to_string(hv_incref(plain));
    assert_ptr_equal(same, plain);
    hv_decref(same);
    hv_decref(plain);
    hv_decref(top);
    hv_decref(shared);
    hv_decref(untouched);
}

/* Containers made with their size known keep their first items in their own block
 * (value.c): filled to that size, grown past it (the items move out), copied, made immortal
 * and freed, each keeps its items (ASan tells a block freed twice or never). */
static void test_sized_containers(void **state)
{
    (void)state;
    char key[32];
    for (size_t cap = 0; cap <= 20; cap += 5) {
        for (size_t n = 0; n <= 2 * cap + 12; n += 3) {
            hv *a = hv_array_sized(cap);
            hv *h = hv_hash_sized(cap);
            for (size_t i = 0; i < n; i++) {
                hv_array_push(a, hv_int((int64_t)i));
                snprintf(key, sizeof key, "k%zu", i);
                assert_true(hv_hash_add(h, hv_str(key), hv_int((int64_t)i)));
            }
            assert_int_equal(hv_array_len(a), n);
            assert_int_equal(hv_hash_len(h), n);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(hv_int_val(hv_array_get(a, i)), (int64_t)i);
                snprintf(key, sizeof key, "k%zu", i);
                assert_int_equal(hv_int_val(hv_hash_gets(h, key)), (int64_t)i);
            }
            hv *ca = hv_copy(a), *ch = hv_copy(h);
            hv_array_push(ca, hv_str("more"));
            hv_hash_sets(ch, "more", hv_int(-1));
            assert_int_equal(hv_array_len(a), n);
            assert_int_equal(hv_hash_len(h), n);
            assert_string_equal(hv_str_ptr(hv_array_get(ca, n)), "more");
            assert_int_equal(hv_int_val(hv_hash_gets(ch, "more")), -1);
            /* (the copies share the items: the originals go before the copies become immortal) */
            hv_decref(a);
            hv_decref(h);
            hv *top = hv_array_sized(2);
            hv_array_push(top, ca);
            hv_array_push(top, ch);
            hv_nodes nodes = {0};
            hv_make_immortal(top, &nodes);
            assert_true(hv_is_immortal(ca));
            assert_int_equal(hv_hash_len(ch), n + 1);
            hv_free_immortal(&nodes);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_order_and_replace),
        cmocka_unit_test(test_hash_add_and_put_at),
        cmocka_unit_test(test_hash_copy_independent),
        cmocka_unit_test(test_hash_index_large),
        cmocka_unit_test(test_eql_is_ruby_eql),
        cmocka_unit_test(test_deep_copy_independent),
        cmocka_unit_test(test_json_big_numbers_and_nul_strings),
        cmocka_unit_test(test_symkeys_to_string),
        cmocka_unit_test(test_sized_containers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
