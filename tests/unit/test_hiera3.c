/* Unit tests for src/hiera3: the Hiera 3 engine through the public API (include/hiera.h, Hiera 3 section)
 * (in-memory configurations, order_override, resolution types, deep-merge option sets,
 * defaults, loggers, error kinds, the Filecache's quirks), Hiera::Util.split_key, Ruby 3.1's
 * `pp` and JSON.dump.
 *
 * The expectations come from the reference, not from reading the code: the lookups were run
 * through Hiera 3.10's Ruby API (ruby -r hiera -e 'h = Hiera.new(:config => {...}); p
 * h.lookup(...)') on the same files, split_key through Hiera::Util.split_key, the pp table by
 * PP.pp(JSON.parse(j), out, width) under Ruby 3.1, JSON.dump by json 2.6.1. */
#include "testutil.h"

#include <libgen.h>
#include <math.h>
#include <unistd.h>

#include "hiera.h"
#include "hiera3/hiera3.h"

/* ------------------------------------------------------------------ fixtures */

static char *datadir; /* the temporary folder holding the data files */

static void write_data(const char *name, const char *text)
{
    char *p = testutil_write_tmp(name, text);
    if (!datadir) {
        char *copy = xstrdup(p);
        datadir = xstrdup(dirname(copy));
        free(copy);
    }
    free(p);
}

static int setup_files(void **state)
{
    write_data("common.yaml", "k: common\n"
                              "arr: [c]\n"
                              "h: {a: common, l: [1]}\n"
                              "greet: \"hi %{name}\"\n"
                              "loop: \"%{hiera('loop')}\"\n"
                              "mixed: text\n");
    write_data("special.yaml", "k: special\n"
                               "arr: [s]\n"
                               "h: {b: special, l: [2, \"--1\"]}\n"
                               "mixed: {a: 1}\n");
    write_data("list.yaml", "- k\n- other\n");
    write_data("str.yaml", "hello k world\n");
    return 0;
}

/* {:backends => ["yaml"], :hierarchy => ["%{lvl}", "common"], :yaml => {:datadir => D}},
 * written with string keys as a C caller would */
static hiera3 *new_h3(const char *logger)
{
    hiera_value *cfg = hiera_value_new_hash();
    hiera_value *b = hiera_value_new_array();
    hiera_value_array_push(b, hiera_value_new_string("yaml"));
    hiera_value_hash_set(cfg, "backends", b);
    hiera_value *hier = hiera_value_new_array();
    hiera_value_array_push(hier, hiera_value_new_string("%{lvl}"));
    hiera_value_array_push(hier, hiera_value_new_string("common"));
    hiera_value_hash_set(cfg, "hierarchy", hier);
    hiera_value *y = hiera_value_new_hash();
    hiera_value_hash_set(y, "datadir", hiera_value_new_string(datadir));
    hiera_value_hash_set(cfg, "yaml", y);
    if (logger)
        hiera_value_hash_set(cfg, "logger", hiera_value_new_string(logger));
    hiera_error err = {0};
    hiera3 *h = hiera3_new_from_config(cfg, &err);
    assert_non_null(h);
    hiera_value_decref(cfg);
    return h;
}

static hiera_value *scope1(const char *k, const char *v)
{
    hiera_value *s = hiera_value_new_hash();
    if (k)
        hiera_value_hash_set(s, k, hiera_value_new_string(v));
    return s;
}

/* one lookup, expecting HIERA_OK and a value equal to the JSON text */
static void expect(hiera3 *h, const char *key, const hiera_value *dflt, const hiera_value *scope,
                   const char *override, const hiera3_resolution *res, const char *json)
{
    hiera_error err = {0};
    hiera_value *v = NULL;
    hiera_status st = hiera3_lookup(h, key, dflt, scope, override, res, &v, &err);
    if (st != HIERA_OK)
        print_error("lookup of %s: status %d: %s\n", key, st, err.message ? err.message : "");
    assert_int_equal(st, HIERA_OK);
    assert_value_json(v, json);
    hiera_value_decref(v);
    hiera_error_clear(&err);
}

static void expect_error(hiera3 *h, const char *key, const hiera_value *scope, const hiera3_resolution *res,
                         hiera_error_kind kind, const char *message)
{
    hiera_error err = {0};
    hiera_value *v = NULL;
    assert_int_equal(hiera3_lookup(h, key, NULL, scope, NULL, res, &v, &err), HIERA_ERROR);
    assert_null(v);
    assert_int_equal(err.kind, kind);
    assert_string_equal(err.message, message);
    hiera_error_clear(&err);
}

/* ------------------------------------------------------------------ lookups */

static void test_priority_and_override(void **state)
{
    hiera3 *h = new_h3("noop");
    hiera_value *s = scope1(NULL, NULL);
    expect(h, "k", NULL, s, NULL, NULL, "\"common\"");
    expect(h, "k", NULL, s, "special", NULL, "\"special\"");
    hiera_value *sl = scope1("lvl", "special");
    /* the override is interpolated, and a missing source is simply skipped */
    expect(h, "k", NULL, sl, "%{lvl}x", NULL, "\"special\"");
    hiera_value_decref(sl);
    hiera_value_decref(s);
    hiera3_free(h);
}

static void test_resolution_types(void **state)
{
    hiera3 *h = new_h3("noop");
    hiera_value *s = scope1(NULL, NULL);
    hiera3_resolution array = {.kind = HIERA3_ARRAY}, hash = {.kind = HIERA3_HASH};
    expect(h, "arr", NULL, s, "special", &array, "[\"s\", \"c\"]");
    expect(h, "h", NULL, s, "special", &hash, "{\"a\": \"common\", \"l\": [2, \"--1\"], \"b\": \"special\"}");
    /* {:behavior => :deeper, :knockout_prefix => "--"} */
    hiera3_resolution deeper = {.kind = HIERA3_MERGE, .behavior = "deeper", .knockout_prefix = "--",
                                .preserve_unmergeables = -1};
    expect(h, "h", NULL, s, "special", &deeper, "{\"a\": \"common\", \"l\": [1, 2], \"b\": \"special\"}");
    /* {:behavior => "deep"} */
    hiera3_resolution deep = {.kind = HIERA3_MERGE, .behavior = "deep", .preserve_unmergeables = -1};
    expect(h, "h", NULL, s, "special", &deep, "{\"a\": \"common\", \"l\": [1, 2, \"--1\"], \"b\": \"special\"}");
    /* deep with a knockout prefix is refused by deep_merge */
    hiera3_resolution deepko = {.kind = HIERA3_MERGE, .behavior = "deep", .knockout_prefix = "--",
                                .preserve_unmergeables = -1};
    hiera_value *sl = scope1("lvl", "special");
    expect_error(h, "h", sl, &deepko, HIERA_ERR_LOOKUP,
                 "overwrite_unmergeable must be true if knockout_prefix is specified in deep_merge!");
    expect_error(h, "mixed", sl, &hash, HIERA_ERR_LOOKUP,
                 "Hiera type mismatch for key 'mixed': expected Hash and got String");
    expect_error(h, "k.x", sl, &hash, HIERA_ERR_LOOKUP,
                 "Resolution type :hash is illegal when accessing values using dotted keys. Offending key was 'k.x'");
    hiera_value_decref(sl);
    hiera_value_decref(s);
    hiera3_free(h);
}

static void test_defaults_and_not_found(void **state)
{
    hiera3 *h = new_h3("noop");
    hiera_value *s = scope1("name", "bob");
    expect(h, "greet", NULL, s, NULL, NULL, "\"hi bob\"");
    hiera_value *d = hiera_value_new_string("dflt %{name}");
    expect(h, "nope", d, s, NULL, NULL, "\"dflt bob\""); /* a String default is interpolated */
    hiera_value_decref(d);
    hiera_value *five = hiera_value_new_int(5);
    expect(h, "nope", five, s, NULL, NULL, "5");
    hiera_value_decref(five);
    hiera_error err = {0};
    hiera_value *v = NULL;
    assert_int_equal(hiera3_lookup(h, "nope", NULL, s, NULL, NULL, &v, &err), HIERA_NOT_FOUND);
    assert_null(v);
    assert_null(err.message);
    hiera_value_decref(s);
    hiera3_free(h);
}

static void test_error_kinds(void **state)
{
    hiera_error err = {0};
    assert_null(hiera3_new("/nonexistent/hiera.yaml", &err));
    assert_int_equal(err.kind, HIERA_ERR_CONFIG);
    assert_string_equal(err.message, "Config file /nonexistent/hiera.yaml not found");
    hiera_error_clear(&err);

    char *v5 = testutil_write_tmp("v5.yaml", "version: 5\n");
    assert_null(hiera3_new(v5, &err));
    assert_int_equal(err.kind, HIERA_ERR_CONFIG);
    assert_string_equal(err.message, "v5 hiera.yaml is only to be used inside an environment or a module and "
                                     "cannot be given to the global hiera");
    hiera_error_clear(&err);
    free(v5);

    char *bad = testutil_write_tmp("badbackend.yaml", ":backends: [yaml, mongo]\n");
    assert_null(hiera3_new(bad, &err));
    assert_int_equal(err.kind, HIERA_ERR_CONFIG);
    assert_string_equal(err.message, "Cannot load backend mongo: cannot load such file -- hiera/backend/mongo_backend");
    hiera_error_clear(&err);
    free(bad);

    hiera3 *h = new_h3("noop");
    hiera_value *s = scope1(NULL, NULL);
    expect_error(h, "loop", s, NULL, HIERA_ERR_INTERPOLATION, "Lookup recursion detected in [hiera('loop')]");
    expect_error(h, "a..b", s, NULL, HIERA_ERR_LOOKUP, "Syntax error in key: a..b");
    hiera_value_decref(s);
    hiera3_free(h);

    /* a datadir that is not a string is a configuration error, found by the lookup */
    hiera_value *cfg = hiera_value_new_hash();
    hiera_value *y = hiera_value_new_hash();
    hiera_value_hash_set(y, "datadir", hiera_value_new_array());
    hiera_value_hash_set(cfg, "yaml", y);
    hiera_value_hash_set(cfg, "logger", hiera_value_new_string("noop"));
    h = hiera3_new_from_config(cfg, &err);
    assert_non_null(h);
    expect_error(h, "k", NULL, NULL, HIERA_ERR_CONFIG, "datadir for yaml cannot be an array");
    hiera3_free(h);
    hiera_value_decref(cfg);
}

/* Filecache: a file whose top is not a hash fails once, then is kept and used as it is
 * (Array#include?, String#include? and #[]). */
static void test_filecache_quirks(void **state)
{
    hiera3 *h = new_h3("noop");
    hiera_value *list = scope1("lvl", "list"), *str = scope1("lvl", "str");
    char *msg = xasprintf("Data retrieved from %s/list.yaml is Array not Hash", datadir);
    expect_error(h, "k", list, NULL, HIERA_ERR_LOOKUP, msg);
    free(msg);
    expect_error(h, "k", list, NULL, HIERA_ERR_LOOKUP, "no implicit conversion of String into Integer");
    expect(h, "arr", NULL, list, NULL, NULL, "[\"c\"]");
    msg = xasprintf("Data retrieved from %s/str.yaml is String not Hash", datadir);
    hiera3_resolution array = {.kind = HIERA3_ARRAY};
    expect_error(h, "arr", str, &array, HIERA_ERR_LOOKUP, msg);
    free(msg);
    expect(h, "arr", NULL, str, NULL, &array, "[\"c\"]");
    expect(h, "k", NULL, str, NULL, NULL, "\"k\"");
    hiera_value_decref(list);
    hiera_value_decref(str);
    hiera3_free(h);
}

/* A changed file is read again. */
static void test_filecache_reload(void **state)
{
    write_data("changing.yaml", "v: one\n");
    hiera3 *h = new_h3("noop");
    hiera_value *s = scope1("lvl", "changing");
    expect(h, "v", NULL, s, NULL, NULL, "\"one\"");
    write_data("changing.yaml", "v: second\n"); /* another size */
    expect(h, "v", NULL, s, NULL, NULL, "\"second\"");
    hiera_value_decref(s);
    hiera3_free(h);
}

/* ------------------------------------------------------------------ loggers */

typedef struct {
    sbuf text;
    int debug, warn;
} log_sink;

static void sink(hiera3_log_level level, const char *message, void *ud)
{
    log_sink *l = ud;
    if (level == HIERA3_LOG_DEBUG)
        l->debug++;
    else
        l->warn++;
    sb_adds(&l->text, level == HIERA3_LOG_DEBUG ? "D " : "W ");
    sb_adds(&l->text, message);
    sb_addc(&l->text, '\n');
}

static void test_loggers(void **state)
{
    hiera3 *h = new_h3("noop");
    log_sink l = {{0}, 0, 0};
    hiera3_set_log_callback(h, sink, &l);
    hiera_value *s = scope1("lvl", "special");
    expect(h, "k", NULL, s, NULL, NULL, "\"special\"");
    /* the messages Hiera 3.10 logs, in its order (hiera -d shows the same) */
    assert_string_equal(sb_str(&l.text), "D Hiera YAML backend starting\n"
                                         "D Looking up k in YAML backend\n"
                                         "D Looking for data source special\n"
                                         "D Found k in special\n");
    hiera3_set_logger(h, "noop");
    expect(h, "k", NULL, s, NULL, NULL, "\"special\"");
    assert_int_equal(l.debug, 4);
    sb_free(&l.text);

    /* a console logger writes "DEBUG: <time>: msg"; an unknown logger warns and uses it */
    char *path = testutil_write_tmp("console.log", "");
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    h3_set_console_stream(h, f);
    hiera3_set_logger(h, "bogus");
    expect(h, "k", NULL, s, NULL, NULL, "\"special\"");
    fflush(f);
    rewind(f);
    char line[512];
    assert_non_null(fgets(line, sizeof line, f));
    assert_true(strncmp(line, "WARN: ", 6) == 0);
    assert_non_null(strstr(line, ": Failed to load bogus logger: LoadError: cannot load such file -- hiera/bogus_logger\n"));
    assert_non_null(fgets(line, sizeof line, f));
    assert_true(strncmp(line, "DEBUG: ", 7) == 0);
    assert_non_null(strstr(line, ": Looking up k in YAML backend\n"));
    fclose(f);
    free(path);
    hiera_value_decref(s);
    hiera3_free(h);
}

/* ------------------------------------------------------------------ Hiera::Util.split_key */

static void test_split_key(void **state)
{
    static const struct {
        const char *key, *json; /* NULL: "Syntax error" */
    } cases[] = {
        {"a", "[\"a\"]"},
        {"a.b", "[\"a\", \"b\"]"},
        {"a..b", NULL},
        {"a.", NULL},
        {".a", NULL},
        {"\"a.b\".c", "[\"a.b\", \"c\"]"},
        {"'x'", "[\"x\"]"},
        {"a\"b", NULL},
        {"\"\"", NULL},
        {"", "[]"},
        {"a.0.b", "[\"a\", \"0\", \"b\"]"},
        {"a b.c d", "[\"a b\", \"c d\"]"},
        {"a.\"\".b", NULL},
        {"\xc3\xa9.\xc3\xbc", "[\"\xc3\xa9\", \"\xc3\xbc\"]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        hv *segs = h3_split_key(cases[i].key, strlen(cases[i].key));
        if (!cases[i].json) {
            assert_null(segs);
            continue;
        }
        assert_value_json(segs, cases[i].json);
        hv_decref(segs);
    }
}

/* ------------------------------------------------------------------ pp and JSON.dump */

static void test_pp(void **state)
{
    static const struct {
        const char *json;
        long width;
        const char *out;
    } cases[] = {
        {"{\"a\":1,\"b\":[1,2,3]}", 79, "{\"a\"=>1, \"b\"=>[1, 2, 3]}\n"},
        {"{\"a\":1,\"b\":[1,2,3]}", 20, "{\"a\"=>1,\n \"b\"=>[1, 2, 3]}\n"},
        {"[\"alpha\",\"bravo\",\"charlie\",\"delta\",\"echo\",\"foxtrot\",\"golf\",\"hotel\",\"india\",\"juliett\",\"kilo\"]",
         79,
         "[\"alpha\",\n \"bravo\",\n \"charlie\",\n \"delta\",\n \"echo\",\n \"foxtrot\",\n \"golf\",\n \"hotel\",\n "
         "\"india\",\n \"juliett\",\n \"kilo\"]\n"},
        {"{\"first_key_with_a_long_name\":\"some fairly long value that takes space\",\"second\":{\"nested\":[\"one\","
         "\"two\",\"three\",\"four\",\"five\",\"six\",\"seven\",\"eight\",\"nine\",\"ten\",\"eleven\"]}}",
         79,
         "{\"first_key_with_a_long_name\"=>\"some fairly long value that takes space\",\n \"second\"=>\n  "
         "{\"nested\"=>\n    [\"one\",\n     \"two\",\n     \"three\",\n     \"four\",\n     \"five\",\n     \"six\",\n"
         "     \"seven\",\n     \"eight\",\n     \"nine\",\n     \"ten\",\n     \"eleven\"]}}\n"},
        {"{\"first_key_with_a_long_name\":\"some fairly long value that takes space\",\"second\":{\"nested\":[\"one\","
         "\"two\",\"three\",\"four\",\"five\",\"six\",\"seven\",\"eight\",\"nine\",\"ten\",\"eleven\"]}}",
         20,
         "{\"first_key_with_a_long_name\"=>\n  \"some fairly long value that takes space\",\n \"second\"=>\n  "
         "{\"nested\"=>\n    [\"one\",\n     \"two\",\n     \"three\",\n     \"four\",\n     \"five\",\n     \"six\",\n"
         "     \"seven\",\n     \"eight\",\n     \"nine\",\n     \"ten\",\n     \"eleven\"]}}\n"},
        {"{\"multi\":\"a\\nb\\nc\",\"nl\":\"end\\n\"}", 79, "{\"multi\"=>\"a\\n\" + \"b\\n\" + \"c\", \"nl\"=>\"end\\n\"}\n"},
        {"{\"multi\":\"a\\nb\\nc\",\"nl\":\"end\\n\"}", 20,
         "{\"multi\"=>\n  \"a\\n\" +\n  \"b\\n\" +\n  \"c\",\n \"nl\"=>\"end\\n\"}\n"},
        {"[[[[[\"deep\",\"nesting\",\"of\",\"arrays\",\"with\",\"enough\",\"words\",\"to\",\"wrap\",\"the\",\"line\","
         "\"somewhere\"]]]]]",
         79,
         "[[[[[\"deep\",\n     \"nesting\",\n     \"of\",\n     \"arrays\",\n     \"with\",\n     \"enough\",\n     "
         "\"words\",\n     \"to\",\n     \"wrap\",\n     \"the\",\n     \"line\",\n     \"somewhere\"]]]]]\n"},
        {"{\"k\":{}, \"l\":[], \"n\":null, \"t\":true, \"f\":1.5e-05, \"u\":\"h\\u00e9llo \\u2603\"}", 79,
         "{\"k\"=>{}, \"l\"=>[], \"n\"=>nil, \"t\"=>true, \"f\"=>1.5e-05, \"u\"=>\"h\xc3\xa9llo \xe2\x98\x83\"}\n"},
        {"{\"k\":{}, \"l\":[], \"n\":null, \"t\":true, \"f\":1.5e-05, \"u\":\"h\\u00e9llo \\u2603\"}", 20,
         "{\"k\"=>{},\n \"l\"=>[],\n \"n\"=>nil,\n \"t\"=>true,\n \"f\"=>1.5e-05,\n \"u\"=>\"h\xc3\xa9llo "
         "\xe2\x98\x83\"}\n"},
        {"[12345678901234567890123, -0.0, 100.0, 1e+20]", 79, "[12345678901234567890123, -0.0, 100.0, 1.0e+20]\n"},
        {"[12345678901234567890123, -0.0, 100.0, 1e+20]", 20,
         "[12345678901234567890123,\n -0.0,\n 100.0,\n 1.0e+20]\n"},
        {"null", 79, "nil\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        herr e = {0};
        hv *v = hjson_parse(cases[i].json, strlen(cases[i].json), "t", &e);
        assert_non_null(v);
        sbuf out = {0};
        h3_pp(&out, v, cases[i].width);
        assert_string_equal(sb_str(&out), cases[i].out);
        sb_free(&out);
        hv_decref(v);
    }
}

static void test_pp_symbol_keys(void **state)
{
    hv *h = hv_hash();
    hv_hash_set(h, hv_symbol("symkey", 6), hv_str("v"));
    hv_hash_set(h, hv_int(4), hv_undef());
    sbuf out = {0};
    h3_pp(&out, h, 79);
    assert_string_equal(sb_str(&out), "{:symkey=>\"v\", 4=>nil}\n");
    sb_free(&out);
    hv_decref(h);
}

static void test_json_dump(void **state)
{
    hv *a = hv_array();
    hv_array_push(a, hv_float(NAN));
    hv_array_push(a, hv_float(INFINITY));
    hv_array_push(a, hv_float(-INFINITY));
    hv_array_push(a, hv_float(1e20));
    hv *h = hv_hash();
    hv_hash_set(h, hv_int(1), hv_undef());
    hv_hash_set(h, hv_symbol("s", 1), hv_symbol("v", 1));
    hv_hash_set(h, hv_undef(), hv_str("\x01/\x7f\xc3\xa9\""));
    hv_array_push(a, h);
    sbuf out = {0};
    herr e = {0};
    assert_int_equal(h3_json_dump(&out, a, &e), 0);
    /* JSON.dump([0.0/0, 1.0/0, -1.0/0, 1e20, {1=>nil, :s=>:v, nil=>"\u0001/\u007fé\""}]) */
    assert_string_equal(sb_str(&out), "[NaN,Infinity,-Infinity,1.0e+20,{\"1\":null,\"s\":\"v\",\"\":\"\\u0001/\x7f\xc3\xa9\\\"\"}]");
    sb_free(&out);
    hv_decref(a);
    /* json's own messages for broken UTF-8 */
    static const char *const bad[][2] = {
        {"\xff", "partial character in source, but hit end"},
        {"a\xc3", "partial character in source, but hit end"},
        {"\xc3(", "source sequence is illegal/malformed utf-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        hv *b = hv_str(bad[i][0]);
        assert_int_equal(h3_json_dump(&out, b, &e), -1);
        assert_string_equal(e.msg, bad[i][1]);
        herr_clear(&e);
        hv_decref(b);
    }
    sb_free(&out);
}

static void test_version(void **state) { assert_string_equal(hiera3_version(), "3.10.0"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_and_override),
        cmocka_unit_test(test_resolution_types),
        cmocka_unit_test(test_defaults_and_not_found),
        cmocka_unit_test(test_error_kinds),
        cmocka_unit_test(test_filecache_quirks),
        cmocka_unit_test(test_filecache_reload),
        cmocka_unit_test(test_loggers),
        cmocka_unit_test(test_split_key),
        cmocka_unit_test(test_pp),
        cmocka_unit_test(test_pp_symbol_keys),
        cmocka_unit_test(test_json_dump),
        cmocka_unit_test(test_version),
    };
    int r = cmocka_run_group_tests(tests, setup_files, NULL);
    free(datadir);
    return r;
}
