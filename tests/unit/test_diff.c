/* Unit tests for hiera diff's library part: answers compared (src/diff/compare.c), the paths
 * where they differ, and what can differ between two snapshots (src/diff/plan.c) through the
 * public API (hiera_value_same, hiera_value_changes, hiera_value_path_text, hiera_value_lookups,
 * hiera_snapshot_compare). */
#include "testutil.h"

#include <unistd.h>

#include "diff/compare.h"
#include "hiera.h"

static void test_same(void **state)
{
    (void)state;
    static const struct {
        const char *a, *b;
        bool same;
    } rows[] = {
        {"{\"a\": 1, \"b\": [1, 2]}", "{\"b\": [1, 2], \"a\": 1}", true}, /* hash order does not matter */
        {"[1, 2]", "[2, 1]", false},                                   /* array order does */
        {"1", "1.0", false},                                           /* Integer is not Float */
        {"0.0", "-0.0", true},
        {"\"Abc\"", "\"abc\"", false},                                 /* strings byte for byte */
        {"null", "null", true},
        {"{\"a\": {\"x\": [1, {\"y\": null}]}}", "{\"a\": {\"x\": [1, {\"y\": null}]}}", true},
        {"{\"a\": {\"x\": [1, {\"y\": null}]}}", "{\"a\": {\"x\": [1, {\"y\": false}]}}", false},
        {"{\"a\": 1}", "{\"a\": 1, \"b\": null}", false},
        {"true", "\"true\"", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        hv *a = testutil_json(rows[i].a), *b = testutil_json(rows[i].b);
        if (hiera_value_same(a, b) != rows[i].same)
            print_error("same(%s, %s) should be %d\n", rows[i].a, rows[i].b, rows[i].same);
        assert_int_equal(hiera_value_same(a, b), rows[i].same);
        assert_int_equal(hiera_value_same(b, a), rows[i].same);
        if (rows[i].same)
            assert_true(hiera_value_same_code(a) == hiera_value_same_code(b));
        hv_decref(a);
        hv_decref(b);
    }
    /* Sensitive by what it wraps; NaN is NaN */
    hv *s1 = hv_sensitive_new(hv_str("pw")), *s2 = hv_sensitive_new(hv_str("pw")), *s3 = hv_sensitive_new(hv_str("x"));
    assert_true(hiera_value_same(s1, s2));
    assert_true(hiera_value_same_code(s1) == hiera_value_same_code(s2));
    assert_false(hiera_value_same(s1, s3));
    hv *n1 = hv_float(0.0 / 0.0), *n2 = hv_float(0.0 / 0.0);
    assert_true(hiera_value_same(n1, n2));
    hv_decref(s1);
    hv_decref(s2);
    hv_decref(s3);
    hv_decref(n1);
    hv_decref(n2);
}

static char *changes_text(const char *old, const char *new_)
{
    hv *a = testutil_json(old), *b = testutil_json(new_);
    hv *ch = hiera_value_changes(a, b);
    sbuf out = {0};
    for (size_t i = 0; i < hv_array_len(ch); i++) {
        const hv *c = hv_array_get(ch, i);
        char *p = hiera_value_path_text(hv_hash_gets(c, "path"));
        char *o = hv_hash_gets(c, "old") ? hjson_debug(hv_hash_gets(c, "old")) : xstrdup("-");
        char *n = hv_hash_gets(c, "new") ? hjson_debug(hv_hash_gets(c, "new")) : xstrdup("-");
        sb_addf(&out, "%s%s %s %s %s", i ? "; " : "", hv_str_ptr(hv_hash_gets(c, "kind")), p, o, n);
        free(p);
        free(o);
        free(n);
    }
    hv_decref(ch);
    hv_decref(a);
    hv_decref(b);
    return sb_take(&out);
}

static void test_changes(void **state)
{
    (void)state;
    static const struct {
        const char *old, *new_, *want;
    } rows[] = {
        {"{\"bob\": {\"shell\": \"/bin/bash\", \"uid\": 1}}", "{\"bob\": {\"uid\": 1, \"shell\": \"/bin/zsh\"}}",
         "changed bob.shell \"/bin/bash\" \"/bin/zsh\""},
        {"{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"c\": 3}", "removed a 1 -; added c - 3"},
        {"[1, 2, 3]", "[1, 5, 3]", "changed 1 2 5"},
        {"[1, 2]", "[1, 2, 3]", "changed  [1,2] [1,2,3]"}, /* lengths differ: the whole array */
        {"\"x\"", "{\"a\": 1}", "changed  \"x\" {\"a\":1}"},
        {"{\"a.b\": {\"0\": {\" c\": 1}}}", "{\"a.b\": {\"0\": {\" c\": 2}}}", "changed \"a.b\".\"0\".\" c\" 1 2"},
        {"{\"say \\\"hi\\\"\": 1}", "{\"say \\\"hi\\\"\": 2}", "changed 'say \"hi\"' 1 2"},
        {"{\"a\": [{\"x\": 1}]}", "{\"a\": [{\"x\": 1.5}]}", "changed a.0.x 1 1.5"},
        {"{\"a\": 1}", "{\"a\": 1}", ""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char *got = changes_text(rows[i].old, rows[i].new_);
        if (strcmp(got, rows[i].want) != 0)
            print_error("changes(%s, %s)\n  got  %s\n  want %s\n", rows[i].old, rows[i].new_, got, rows[i].want);
        assert_string_equal(got, rows[i].want);
        free(got);
    }
}

static void test_lookups(void **state)
{
    (void)state;
    hv *v = testutil_json("{\"%{lookup('k1')}\": [\"a %{hiera('k2')} b %{lookup('k1')}\", \"%{alias('m::x.y')}\"],"
                          " \"z\": \"%{facts.x} %{scope('y')} %{literal('%')} %{lookup('\\\"q.r\\\".s')}\"}");
    hv *roots = hiera_value_lookups(v);
    assert_value_json(roots, "[\"k1\", \"k2\", \"m::x\", \"q.r\"]");
    hv_decref(roots);
    hv_decref(v);
}

/* ------------------------------------------------------------------ snapshots compared */

static char *tmp_root;

static void put(const char *side, const char *rel, const char *text)
{
    char *path = xasprintf("%s/%s/%s", tmp_root, side, rel);
    char *dir = xstrdup(path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0700);
            *p = '/';
        }
    free(dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(path);
}

static const char *HIERA_YAML = "version: 5\n"
                                "hierarchy:\n"
                                "  - {name: node, path: \"nodes/%{trusted.certname}.yaml\"}\n"
                                "  - {name: common, path: common.yaml}\n";

static hiera_snapshot *snap(const char *side)
{
    char *code = xasprintf("%s/%s", tmp_root, side), *envs = xasprintf("%s/environments", code),
         *global = xasprintf("%s/hiera.yaml", code);
    hiera_options o = {.size = sizeof o, .codedir = code, .environmentpath = envs, .hiera_config = global,
                       .environment = "production"};
    hiera_error err = {0};
    hiera_snapshot *s = hiera_snapshot_new(&o, &err);
    hiera_error_clear(&err);
    free(code);
    free(envs);
    free(global);
    return s;
}

static hv *compare(const char *const *keys, size_t nkeys)
{
    char *a = xasprintf("%s/old", tmp_root), *b = xasprintf("%s/new", tmp_root);
    hiera_snapshot *sa = snap("old"), *sb = snap("new");
    hiera_compare_options o = {.size = sizeof o, .old_root = a, .new_root = b, .keys = keys, .nkeys = nkeys};
    hv *plan = hiera_snapshot_compare(sa, sb, &o);
    hiera_snapshot_release(sa);
    hiera_snapshot_release(sb);
    free(a);
    free(b);
    return plan;
}

static void both(const char *rel, const char *text)
{
    put("old", rel, text);
    put("new", rel, text);
}

static void test_plan(void **state)
{
    (void)state;
    char dir[] = "/tmp/hiera-test-diff-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tmp_root = dir;
    const char *E = "environments/production/";
    char *p;
    both(p = xasprintf("%shiera.yaml", E), HIERA_YAML);
    free(p);
    both(p = xasprintf("%sdata/nodes/n1.yaml", E), "a: 1\nb: \"%{lookup('c')}\"\n");
    free(p);
    both(p = xasprintf("%sdata/common.yaml", E),
         "c: 1\nd: 2\ne: \"%{alias('b')}\"\nf: x\nlookup_options:\n  \"^g\": {merge: deep}\n  d: {merge: unique}\n");
    free(p);

    /* nothing changed */
    hv *plan = compare(NULL, 0);
    assert_false(hv_bool_val(hv_hash_gets(plan, "full")));
    assert_value_json(hv_hash_gets(plan, "keys"), "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]");
    assert_value_json(hv_hash_gets(plan, "dirty"), "[]");
    assert_value_json(hv_hash_gets(plan, "files"), "[]");
    hv_decref(plan);

    /* c changes: b reads it through lookup(), e through alias() of b; a comment changes nothing */
    put("new", p = xasprintf("%sdata/common.yaml", E),
        "# a comment\nc: 2\nd: 2\ne: \"%{alias('b')}\"\nf: x\nlookup_options:\n  \"^g\": {merge: deep}\n  d: {merge: unique}\n");
    free(p);
    plan = compare(NULL, 0);
    assert_false(hv_bool_val(hv_hash_gets(plan, "full")));
    assert_value_json(hv_hash_gets(plan, "dirty"), "[\"b\", \"c\", \"e\"]");
    assert_value_json(hv_hash_gets(plan, "changed"), "[\"c\"]");
    assert_value_json(hv_hash_gets(plan, "files"),
                      "[{\"path\": \"environments/production/data/common.yaml\", \"status\": \"modified\", "
                      "\"kind\": \"data\", \"keys\": [\"c\"]}]");
    hv_decref(plan);
    /* the keys given restrict what is looked up again */
    const char *given[] = {"e", "f", "zz"};
    plan = compare(given, 3);
    assert_value_json(hv_hash_gets(plan, "keys"), "[\"e\", \"f\", \"zz\"]");
    assert_value_json(hv_hash_gets(plan, "dirty"), "[\"e\"]");
    hv_decref(plan);

    /* a lookup_options pattern changes: every key it matches (and none of the others) */
    put("new", p = xasprintf("%sdata/common.yaml", E),
        "c: 1\nd: 2\ne: \"%{alias('b')}\"\nf: x\ng1: 1\nlookup_options:\n  \"^[ef]\": {merge: deep}\n  d: {merge: unique}\n");
    free(p);
    plan = compare(NULL, 0);
    assert_value_json(hv_hash_gets(plan, "dirty"), "[\"e\", \"f\", \"g1\"]");
    hv_decref(plan);
    /* a pattern that does not compile: every key */
    put("new", p = xasprintf("%sdata/common.yaml", E), "c: 1\nlookup_options:\n  \"^(\": {merge: deep}\n");
    free(p);
    plan = compare(NULL, 0);
    assert_true(hv_bool_val(hv_hash_gets(plan, "full")));
    hv_decref(plan);
    /* a data file that does not parse: every key */
    put("new", p = xasprintf("%sdata/common.yaml", E), "c: [1\n");
    free(p);
    plan = compare(NULL, 0);
    assert_true(hv_bool_val(hv_hash_gets(plan, "full")));
    assert_value_json(hv_hash_gets(plan, "dirty"), "[\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]");
    hv_decref(plan);
    /* a node file added: its keys */
    put("new", p = xasprintf("%sdata/common.yaml", E),
        "c: 1\nd: 2\ne: \"%{alias('b')}\"\nf: x\nlookup_options:\n  \"^g\": {merge: deep}\n  d: {merge: unique}\n");
    free(p);
    put("new", p = xasprintf("%sdata/nodes/n2.yaml", E), "f: y\n");
    free(p);
    plan = compare(NULL, 0);
    assert_false(hv_bool_val(hv_hash_gets(plan, "full")));
    assert_value_json(hv_hash_gets(plan, "dirty"), "[\"f\"]");
    assert_string_equal(hv_str_ptr(hv_hash_gets(hv_array_get(hv_hash_gets(plan, "files"), 0), "status")), "added");
    hv_decref(plan);
    /* hiera.yaml changed: every key */
    put("new", p = xasprintf("%shiera.yaml", E), "version: 5\nhierarchy:\n  - {name: common, path: common.yaml}\n");
    free(p);
    plan = compare(NULL, 0);
    assert_true(hv_bool_val(hv_hash_gets(plan, "full")));
    assert_string_equal(hv_str_ptr(hv_array_get(hv_hash_gets(plan, "reasons"), 0)),
                        "environments/production/hiera.yaml changed");
    hv_decref(plan);

    char *cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
