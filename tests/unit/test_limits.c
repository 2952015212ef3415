/* Tests of the limits that keep hostile data from crashing, hanging or exhausting memory:
 * YAML alias expansion (billion laughs) and nesting (in the text and through aliases), JSON and
 * HOCON nesting, data file size, nested lookups (interpolation depth and recursion), regexp
 * match effort (lookup_options patterns, knockout prefixes), glob result counts and work. What
 * facts may do to an interpolated path is tested in test_facts_rule.c.
 * Where Puppet answers, the expectation is Puppet 7.23's answer; where Puppet hangs or dies
 * ("stack level too deep"), the limit is ours and the message is checked as written here.
 * Nothing here is timed: a limit that failed to hold would hang or exhaust the test instead. */
#include "testutil.h"

#include "base/glob.h"
#include "hiera.h"
#include "engine/engine.h"
#include "formats/hocon.h"
#include "base/rregex.h"
#include "formats/psych.h"

#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ a private folder */

static char root[64];

/* Writes root/rel (folders made as needed); returns the malloc'ed path. */
static char *write_path(const char *rel, const char *text) { return testutil_write_under(root, rel, text); }

static void write_file(const char *rel, const char *text) { free(write_path(rel, text)); }

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(root, "limits");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

/* ------------------------------------------------------------------ YAML */

/* lN: &lN [*lN-1 x 10], from l0 (ten strings) up to l<levels> */
static void laughs(sbuf *b, int levels)
{
    sb_adds(b, "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (int i = 1; i <= levels; i++) {
        sb_addf(b, "l%d: &l%d [", i, i);
        for (int j = 0; j < 10; j++)
            sb_addf(b, "%s*l%d", j ? ", " : "", i - 1);
        sb_adds(b, "]\n");
    }
    sb_adds(b, "small: ok\n");
}

static void test_yaml_alias_bomb(void **state)
{
    (void)state;
    /* 10^6 values when walked: loads, shared (Puppet manages it too, slowly) */
    sbuf b = {0};
    laughs(&b, 5);
    herr e = {0};
    hv *v = yaml_parse(b.s, b.len, "laughs.yaml", YAML_PUPPET, &e);
    assert_non_null(v);
    assert_ptr_equal(hv_array_get(hv_hash_gets(v, "l5"), 0), hv_hash_gets(v, "l4"));
    hv_decref(v);
    sb_free(&b);

    /* 10^9: Puppet's yaml_data hangs in symkeys_to_string (even to look up "small"); refused */
    laughs(&b, 8);
    assert_null(yaml_parse(b.s, b.len, "laughs.yaml", YAML_PUPPET, &e));
    assert_string_equal(e.msg, "(laughs.yaml): YAML document too large (its aliases expand to more than 10000000 values)");
    assert_string_equal(e.file, "laughs.yaml");
    herr_clear(&e);
    sb_free(&b);

    /* merge keys copy entries: counted as they are made */
    sb_adds(&b, "a0: &a0 {");
    for (int i = 0; i < 1000; i++)
        sb_addf(&b, "%sk%d: %d", i ? ", " : "", i, i);
    sb_adds(&b, "}\n");
    for (int i = 0; i < 20000; i++)
        sb_addf(&b, "m%d: {<<: *a0}\n", i);
    assert_null(yaml_parse(b.s, b.len, "merges.yaml", YAML_PUPPET, &e));
    assert_string_equal(e.msg, "YAML document too large (more than 10000000 nodes, counting merged entries)");
    herr_clear(&e);
    sb_free(&b);
}

/* anchors each nesting the previous one `per` levels deeper: a<n-1> is n*per deep */
static void deep_anchors(sbuf *b, int n, int per)
{
    for (int i = 0; i < n; i++) {
        sb_addf(b, "a%d: &a%d ", i, i);
        for (int j = 0; j < per; j++)
            sb_addc(b, '[');
        if (i)
            sb_addf(b, "*a%d", i - 1);
        else
            sb_adds(b, "x");
        for (int j = 0; j < per; j++)
            sb_addc(b, ']');
        sb_addc(b, '\n');
    }
    sb_adds(b, "small: ok\n");
}

static void test_yaml_nesting(void **state)
{
    (void)state;
    herr e = {0};
    sbuf b = {0};
    /* in the text: Psych's visitor dies at about 1000 levels */
    for (int i = 0; i < 100000; i++)
        sb_addc(&b, '{');
    assert_null(yaml_parse(b.s, b.len, "deep.yaml", YAML_PUPPET, &e));
    assert_string_equal(e.msg, "stack level too deep (YAML nesting deeper than 1000 levels)");
    assert_int_equal(e.line, 1);
    herr_clear(&e);
    sb_free(&b);

    /* through aliases: 6 x 500 = 3000 levels load (Puppet manages 3000, dies at 3500) */
    deep_anchors(&b, 6, 500);
    hv *v = yaml_parse(b.s, b.len, "anchors.yaml", YAML_PUPPET, &e);
    assert_non_null(v);
    hv_decref(v);
    sb_free(&b);
    /* 7 x 500: refused, as Puppet's "stack level too deep" */
    deep_anchors(&b, 7, 500);
    assert_null(yaml_parse(b.s, b.len, "anchors.yaml", YAML_PUPPET, &e));
    assert_string_equal(e.msg, "stack level too deep (YAML aliases nest values deeper than 3000 levels in anchors.yaml)");
    herr_clear(&e);
    sb_free(&b);
    /* 300 anchors of 999 levels: 300000 levels, refused without walking them (and freed
     * without recursion: the C stack would not hold it) */
    deep_anchors(&b, 300, 999);
    assert_null(yaml_parse(b.s, b.len, "anchors.yaml", YAML_PUPPET, &e));
    herr_clear(&e);
    sb_free(&b);
}

/* Values nested a million deep (only the API can build them) are freed without recursion. */
static void test_deep_value_free(void **state)
{
    (void)state;
    hv *v = hv_str("leaf");
    for (int i = 0; i < 1000000; i++) {
        hv *c = (i % 3 == 0) ? hv_array() : (i % 3 == 1) ? hv_hash() : NULL;
        if (!c) {
            v = hv_sensitive_new(v);
            continue;
        }
        if (hv_is(c, HV_ARRAY))
            hv_array_push(c, v);
        else
            hv_hash_set(c, hv_str("k"), v);
        v = c;
    }
    hv *shared = hv_incref(v);
    hv_decref(v);      /* still held */
    hv_decref(shared); /* now the whole chain goes */
}

/* ------------------------------------------------------------------ JSON and HOCON */

/* {"small": 1, "deep": [[...]]} nested `depth` levels in all (arrays, or arrays and objects) */
static char *nested_json(int depth, bool objects)
{
    sbuf b = {0};
    sb_adds(&b, "{\"small\": 1,\n \"deep\": ");
    for (int i = 1; i < depth; i++)
        sb_adds(&b, objects && i % 2 == 0 ? "{\"k\": " : "[");
    sb_adds(&b, "1");
    for (int i = depth - 1; i >= 1; i--)
        sb_adds(&b, objects && i % 2 == 0 ? "}" : "]");
    sb_adds(&b, "}");
    return sb_take(&b);
}

static void test_json_nesting(void **state)
{
    (void)state;
    herr e = {0};
    /* Ruby's JSON.parse (json_data, --facts, Hiera 3's json backend): max_nesting 100 */
    char *t = nested_json(100, true);
    hv *v = hjson_parse(t, strlen(t), "ok.json", &e);
    assert_non_null(v);
    hv_decref(v);
    free(t);
    t = nested_json(101, true);
    assert_null(hjson_parse(t, strlen(t), "deep.json", &e));
    assert_string_equal(e.msg, "Unable to parse (deep.json): nesting of 101 is too deep");
    herr_clear(&e);
    free(t);
    t = nested_json(101, false);
    assert_null(hjson_parse(t, strlen(t), "deep.json", &e));
    assert_string_equal(e.msg, "Unable to parse (deep.json): nesting of 101 is too deep");
    assert_string_equal(e.file, "deep.json");
    assert_int_equal(e.line, 2);
    assert_int_equal(e.col, 109); /* the 101st bracket */
    herr_clear(&e);
    free(t);
    /* 200,000 deep: the same message, no deep recursion */
    t = nested_json(200000, false);
    assert_null(hjson_parse(t, strlen(t), "deep.json", &e));
    assert_string_equal(e.msg, "Unable to parse (deep.json): nesting of 101 is too deep");
    herr_clear(&e);
    free(t);
    /* a syntax error before the deep part is reported first, as Ruby does */
    const char *bad = "{\"a\": tru, \"b\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]";
    assert_null(hjson_parse(bad, strlen(bad), "bad.json", &e));
    assert_null(strstr(e.msg, "nesting"));
    herr_clear(&e);
    /* brackets inside strings do not count */
    sbuf b = {0};
    sb_adds(&b, "{\"s\": \"");
    for (int i = 0; i < 500; i++)
        sb_adds(&b, "[{");
    sb_adds(&b, "\\\"[\"}");
    v = hjson_parse(b.s, b.len, "strings.json", &e);
    assert_non_null(v);
    hv_decref(v);
    sb_free(&b);
}

static void test_hocon_nesting(void **state)
{
    (void)state;
    herr e = {0};
    sbuf b = {0};
    sb_adds(&b, "a = ");
    for (int i = 0; i < 100000; i++)
        sb_adds(&b, i % 2 ? "[" : "{b: ");
    assert_null(hocon_parse(b.s, b.len, "deep.conf", &e));
    assert_non_null(strstr(e.msg, "nested more than 500 levels deep"));
    herr_clear(&e);
    sb_free(&b);
    /* a chain of substitutions */
    sb_adds(&b, "k0 = x\n");
    for (int i = 1; i < 5000; i++)
        sb_addf(&b, "k%d = ${k%d}\n", i, i - 1);
    hv *v = hocon_parse(b.s, b.len, "chain.conf", &e);
    assert_true(v != NULL || strstr(e.msg, "substitutions nested more than") != NULL);
    hv_decref(v);
    herr_clear(&e);
    sb_free(&b);
}

/* ------------------------------------------------------------------ file size */

static void test_file_size(void **state)
{
    (void)state;
    /* a sparse file of 300 MB: refused from its size, before reading */
    char *path = write_path("big/common.yaml", "");
    assert_int_equal(truncate(path, (off_t)300 * 1024 * 1024), 0);
    hiera_cache *c = cache_new();
    herr e = {0};
    assert_null(cache_load(c, path, FMT_YAML, &e));
    char *want = xasprintf("File '%s' is larger than 268435456 bytes", path);
    assert_string_equal(e.msg, want);
    assert_int_equal(e.kind, HERR_LOOKUP);
    assert_string_equal(e.file, path);
    free(want);
    herr_clear(&e);
    cache_free(c);
    unlink(path);
    free(path);
}

/* the warnings given once: each id once, and at most 4096 ids a cache (they can hold what facts
 * bring: a long-lived cache must not grow with them) */
static void test_warn_once_bound(void **state)
{
    (void)state;
    hiera_cache *c = cache_new();
    assert_true(cache_warn_once(c, "first"));
    assert_false(cache_warn_once(c, "first"));
    for (int i = 1; i < 4096; i++) {
        char id[32];
        snprintf(id, sizeof id, "id-%d", i);
        assert_true(cache_warn_once(c, id));
    }
    assert_false(cache_warn_once(c, "one too many"));
    assert_false(cache_warn_once(c, "one too many"));
    assert_false(cache_warn_once(c, "id-7"));
    cache_free(c);
}

/* a FIFO named as a data file would block and a device never end: refused without reading; a
 * facts file is read at most 64 MB */
static void test_special_files(void **state)
{
    (void)state;
    char *fifo = xasprintf("%s/fifo.yaml", root);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    hiera_cache *c = cache_new();
    herr e = {0};
    assert_null(cache_load(c, fifo, FMT_YAML, &e));
    char *want = xasprintf("File '%s' is not a regular file", fifo);
    assert_string_equal(e.msg, want);
    free(want);
    herr_clear(&e);
    assert_null(cache_load(c, "/dev/zero", FMT_YAML, &e));
    assert_string_equal(e.msg, "File '/dev/zero' is not a regular file");
    herr_clear(&e);
    cache_free(c);

    hiera_error err = {0};
    assert_null(hiera_value_load_file(fifo, &err));
    assert_non_null(strstr(err.message, "is not a regular file"));
    hiera_error_clear(&err);
    assert_null(hiera_value_load_file("/dev/zero", &err));
    assert_non_null(strstr(err.message, "/dev/zero is not a regular file"));
    hiera_error_clear(&err);
    unlink(fifo);
    free(fifo);

    char *big = write_path("big-facts.yaml", "");
    assert_int_equal(truncate(big, (off_t)65 * 1024 * 1024), 0);
    assert_null(hiera_value_load_file(big, &err));
    want = xasprintf("%s is larger than 67108864 bytes", big);
    assert_string_equal(err.message, want);
    free(want);
    hiera_error_clear(&err);
    unlink(big);
    free(big);
}

/* ------------------------------------------------------------------ lookups */

static hiera *open_tree(const char *name, const char *facts_json)
{
    char *codedir = xasprintf("%s/%s", root, name);
    char *envpath = xasprintf("%s/environments", codedir);
    char *config = xasprintf("%s/hiera.yaml", codedir);
    hiera_error err = {0};
    hiera_value *facts = hiera_value_from_json(facts_json, &err);
    assert_non_null(facts);
    hiera_options o = {.codedir = codedir, .confdir = codedir, .environmentpath = envpath, .hiera_config = config,
                       .node = "n1.example.com", .facts = facts};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        print_error("hiera_new: %s\n", err.message);
    assert_non_null(h);
    hiera_value_decref(facts);
    free(codedir);
    free(envpath);
    free(config);
    return h;
}

static void test_interpolation_depth(void **state)
{
    (void)state;
    write_file("chain/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("chain/environments/production/hiera.yaml", "version: 5\nhierarchy:\n  - {name: c, path: common.yaml}\n");
    sbuf b = {0};
    for (int i = 0; i < 1100; i++)
        sb_addf(&b, "k%d: \"%%{lookup('k%d')}\"\n", i, i + 1);
    sb_adds(&b, "k1100: end\nloop_a: \"%{hiera('loop_b')}\"\nloop_b: \"x%{lookup('loop_a')}\"\n");
    write_file("chain/environments/production/data/common.yaml", b.s);
    sb_free(&b);
    hiera *h = open_tree("chain", "{\"a\": 1}");
    hiera_value *v = NULL;
    hiera_error err = {0};
    /* 100 nested lookups answer (Puppet manages about 150; it dies "stack level too deep" by 200) */
    assert_int_equal(hiera_lookup_key(h, "k1000", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "end");
    hiera_value_decref(v);
    /* 1100 are refused with a lookup error, not a stack overflow */
    v = NULL;
    assert_int_equal(hiera_lookup_key(h, "k0", &v, &err), HIERA_ERROR);
    assert_null(v);
    assert_non_null(strstr(err.message, "Lookups nested deeper than 1000 levels"));
    hiera_error_clear(&err);
    /* recursion */
    assert_int_equal(hiera_lookup_key(h, "loop_a", &v, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "Recursive lookup detected in [loop_a, loop_b]"));
    hiera_error_clear(&err);
    hiera_free(h);
}

/* Depth does not bound the work of interpolations whose lookups multiply: each key looking up
 * the next one twice needs 2^n lookups, and a long value repeated gives a long string. */
static void doubling_chain(sbuf *b, const char *fn, int n, const char *last)
{
    for (int i = 0; i < n; i++)
        sb_addf(b, "k%d: \"%%{%s('k%d')}%%{%s('k%d')}\"\n", i, fn, i + 1, fn, i + 1);
    sb_addf(b, "k%d: %s\n", n, last);
}

static void long_value(sbuf *b, const char *fn)
{
    sb_adds(b, "long: \"");
    for (int i = 0; i < 1024 * 1024; i++)
        sb_addc(b, 'x');
    sb_adds(b, "\"\nmany: \"");
    for (int i = 0; i < 70; i++)
        sb_addf(b, "%%{%s('long')}", fn);
    sb_adds(b, "\"\n");
}

static void test_multiplying_lookups(void **state)
{
    (void)state;
    write_file("mult/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("mult/environments/production/hiera.yaml", "version: 5\nhierarchy:\n  - {name: c, path: common.yaml}\n");
    sbuf b = {0};
    doubling_chain(&b, "lookup", 30, "x");
    long_value(&b, "lookup");
    write_file("mult/environments/production/data/common.yaml", b.s);
    sb_free(&b);
    hiera *h = open_tree("mult", "{\"a\": 1}");
    hiera_value *v = NULL;
    hiera_error err = {0};
    /* 2^10 lookups answer as Puppet does */
    assert_int_equal(hiera_lookup_key(h, "k20", &v, &err), HIERA_OK);
    assert_int_equal(strlen(hiera_value_string(v)), 1024);
    hiera_value_decref(v);
    v = NULL;
    /* 2^30 are refused (Puppet would take hours), naming the key asked for */
    assert_int_equal(hiera_lookup_key(h, "k0", &v, &err), HIERA_ERROR);
    assert_null(v);
    assert_string_equal(err.message, "Lookup of 'k0' needs more than 1000000 nested lookups (interpolations that multiply)");
    hiera_error_clear(&err);
    /* the counter starts again for each lookup */
    assert_int_equal(hiera_lookup_key(h, "k15", &v, &err), HIERA_OK);
    hiera_value_decref(v);
    v = NULL;
    /* 70 copies of a 1 MB value: more than 64 MB */
    assert_int_equal(hiera_lookup_key(h, "many", &v, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "gives a string longer than 67108864 bytes"));
    hiera_error_clear(&err);
    hiera_free(h);

    /* the Hiera 3 engine: the same limits */
    sb_addf(&b, "---\n:backends: [yaml]\n:logger: noop\n:yaml:\n  :datadir: %s/mult3\n:hierarchy: [common]\n", root);
    char *config = write_path("mult3/hiera.yaml", b.s);
    sb_free(&b);
    sb_adds(&b, "---\n");
    doubling_chain(&b, "hiera", 30, "x");
    long_value(&b, "hiera");
    write_file("mult3/common.yaml", b.s);
    sb_free(&b);
    hiera3 *h3 = hiera3_new(config, &err);
    assert_non_null(h3);
    hiera3_set_logger(h3, "noop");
    assert_int_equal(hiera3_lookup(h3, "k22", NULL, NULL, NULL, NULL, &v, &err), HIERA_OK);
    assert_int_equal(strlen(hiera_value_string(v)), 256);
    hiera_value_decref(v);
    v = NULL;
    assert_int_equal(hiera3_lookup(h3, "k0", NULL, NULL, NULL, NULL, &v, &err), HIERA_ERROR);
    assert_null(v);
    assert_non_null(strstr(err.message, "nested lookups"));
    hiera_error_clear(&err);
    assert_int_equal(hiera3_lookup(h3, "many", NULL, NULL, NULL, NULL, &v, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "gives a string longer than 67108864 bytes"));
    hiera_error_clear(&err);
    hiera3_free(h3);
    free(config);
}

/* ------------------------------------------------------------------ regexps */

static void test_regex_effort(void **state)
{
    (void)state;
    herr e = {0};
    /* exponential backtracking: Ruby 3.1 (no Regexp.timeout) hangs; we give up */
    static const char *const pats[] = {"(a|a?)+$", "(a|aa)+$", "^(\\w+\\s?)*$", "(.*a){25}!!"};
    char subject[5002];
    memset(subject, 'a', 5000);
    subject[5000] = '!';
    subject[5001] = 0;
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
        rregex *re = rregex_new(pats[i], strlen(pats[i]), &e);
        assert_non_null(re);
        assert_false(rregex_search(re, subject, 5001));
        size_t n;
        assert_null(rregex_gsub_empty(re, subject, 5001, &n));
        rregex_free(re);
    }
    /* ordinary patterns still match */
    rregex *re = rregex_new("^profile::", 10, &e);
    assert_true(rregex_search(re, "profile::base::users", 20));
    rregex_free(re);

    /* a hostile lookup_options pattern in data: the lookup answers promptly */
    write_file("re/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("re/environments/production/hiera.yaml", "version: 5\nhierarchy:\n  - {name: c, path: common.yaml}\n");
    sbuf key = {0}, b = {0};
    for (int i = 0; i < 3000; i++)
        sb_addc(&key, 'a');
    sb_addc(&key, '!');
    sb_addf(&b, "lookup_options:\n  '(a|a?)+$': {merge: unique}\n  '^a': {merge: first}\n? %s\n: [x]\n", key.s);
    write_file("re/environments/production/data/common.yaml", b.s);
    hiera *h = open_tree("re", "{\"a\": 1}");
    hiera_value *v = NULL;
    hiera_error err = {0};
    hiera_status st = hiera_lookup_key(h, key.s, &v, &err);
    if (st != HIERA_OK)
        print_error("lookup: %s\n", err.message ? err.message : "not found");
    assert_int_equal(st, HIERA_OK);
    assert_value_json(v, "[\"x\"]");
    hiera_value_decref(v);
    hiera_error_clear(&err);
    hiera_free(h);
    sb_free(&b);
    sb_free(&key);
}

/* ------------------------------------------------------------------ globs */

static void test_glob_limits(void **state)
{
    (void)state;
    char name[64];
    for (int i = 0; i < 30; i++) {
        snprintf(name, sizeof name, "glob/f%02d.yaml", i);
        write_file(name, "x: 1\n");
    }
    char *pattern = xasprintf("%s/glob/*.yaml", root);
    glob_result r = {0};
    assert_int_equal(glob_expand(pattern, &r, 0), 0);
    assert_int_equal(r.n, 30);
    glob_free(&r);
    /* the result count is capped: the first `limit` matches, and -1 */
    assert_int_equal(glob_expand(pattern, &r, 10), -1);
    assert_int_equal(r.n, 10);
    assert_non_null(strstr(r.paths[9], "/f09.yaml"));
    glob_free(&r);
    free(pattern);

    /* brace bombs and deep recursion end promptly with -1 */
    sbuf b = {0};
    sb_addf(&b, "%s/glob/", root);
    for (int i = 0; i < 40; i++)
        sb_adds(&b, "{a,b}");
    assert_int_equal(glob_expand(b.s, &r, 100000), -1);
    glob_free(&r);
    sb_free(&b);
    sb_addf(&b, "%s/", root);
    for (int i = 0; i < 300; i++)
        sb_adds(&b, "**/");
    sb_adds(&b, "*.yaml");
    glob_expand(b.s, &r, 100000);
    assert_true(r.n <= 100000);
    glob_free(&r);
    sb_free(&b);

    /* a glob level that hits a limit fails the lookup (it does not use a partial list) */
    write_file("globtree/hiera.yaml", "version: 5\nhierarchy: []\n");
    sb_adds(&b, "version: 5\nhierarchy:\n  - name: bomb\n    glob: \"");
    for (int i = 0; i < 40; i++)
        sb_adds(&b, "{a,b}");
    sb_adds(&b, ".yaml\"\n");
    write_file("globtree/environments/production/hiera.yaml", b.s);
    sb_free(&b);
    write_file("globtree/environments/production/data/a.yaml", "k: 1\n");
    hiera *h = open_tree("globtree", "{\"a\": 1}");
    hiera_value *v = NULL;
    hiera_error err = {0};
    assert_int_equal(hiera_lookup_key(h, "k", &v, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "of hierarchy entry 'bomb' matches too many paths (more than 100000) or needs too much work"));
    hiera_error_clear(&err);
    hiera_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_alias_bomb),    cmocka_unit_test(test_yaml_nesting),
        cmocka_unit_test(test_deep_value_free),
        cmocka_unit_test(test_json_nesting),       cmocka_unit_test(test_hocon_nesting),
        cmocka_unit_test(test_file_size),          cmocka_unit_test(test_warn_once_bound),
        cmocka_unit_test(test_special_files),          cmocka_unit_test(test_interpolation_depth),
        cmocka_unit_test(test_multiplying_lookups),
        cmocka_unit_test(test_regex_effort),       cmocka_unit_test(test_glob_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
