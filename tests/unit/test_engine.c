/* Unit tests for the engine's building blocks: Pathname#plus (pathname.c), key splitting
 * (interp.c split_key), the deep_merge gem's deep_merge! (merge.c) and the merge strategies.
 * Every expectation was recorded from Ruby 3.1 / deep_merge 1.1.1 / Puppet 7.23. */
#include "testutil.h"

#include "engine/engine.h"
#include "base/pathname.h"
#include "types/ptype.h"
#include "base/rregex.h"

static void test_pathname_plus(void **state)
{
    (void)state;
    static const char *rows[][3] = {
        {"/a/b/data", "c/d.yaml", "/a/b/data/c/d.yaml"},
        {"/a/b/data", "/x/y", "/x/y"},
        {"/a/b/data", "../x.yaml", "/a/b/x.yaml"},
        {"/a/b/data", "./x.yaml", "/a/b/data/x.yaml"},
        {"/a/b/data", "nodes/../../x", "/a/b/data/nodes/../../x"},
        {"/a/b/data", "x/./y", "/a/b/data/x/./y"},
        {"/a/b/data", "../../../../x", "/x"},
        {"/a/b/data", "", "/a/b/data"},
        {"/a/b/data", ".", "/a/b/data"},
        {"/a/b/data", "x//y", "/a/b/data/x//y"},
        {"/a/b/data", "nodes/.yaml", "/a/b/data/nodes/.yaml"},
        {"/a/b/data", "x/", "/a/b/data/x/"},
        {"/a/b/", "c", "/a/b/c"},
        {"/", "../x", "/x"},
        {"a/b", "../../../x", "../x"},
        {"/a//b", "c", "/a//b/c"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        char *r = pn_plus(rows[i][0], rows[i][1]);
        if (strcmp(r, rows[i][2]) != 0)
            print_error("%s + %s: expected %s, got %s\n", rows[i][0], rows[i][1], rows[i][2], r);
        assert_string_equal(r, rows[i][2]);
        free(r);
    }
}

static void test_split_key(void **state)
{
    (void)state;
    static const char *rows[][2] = {
        {"plain", "[\"plain\"]"},
        {"a.b.c", "[\"a\",\"b\",\"c\"]"},
        {"a.0.-1.+2", "[\"a\",0,-1,2]"},
        {"a.:5", "[\"a\",0]"},
        {"a.'b.c'.\"d.e\"", "[\"a\",\"b.c\",\"d.e\"]"},
        {" a . b ", "[\"a\",\"b\"]"},
        {"mod::key.x", "[\"mod::key\",\"x\"]"},
        {"a.12345678901234567890", "[\"a\",12345678901234567890]"},
        {"a.9223372036854775807.b", "[\"a\",9223372036854775807,\"b\"]"},
        {"a..b", NULL},
        {"a.", NULL},
        {".a", NULL},
        {"a.'b", NULL},
        {"a.\"b'", NULL},
        {"''", NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        hv *segs = split_key(rows[i][0], strlen(rows[i][0]));
        if (!rows[i][1]) {
            if (segs)
                print_error("'%s' should be a syntax error\n", rows[i][0]);
            assert_null(segs);
            continue;
        }
        assert_non_null(segs);
        assert_value_json(segs, rows[i][1]);
        hv_decref(segs);
    }
    /* a key of plain dotted segments (split directly) is split as the same key with blanks
     * around its segments (which takes the token scan) */
    static const char *plain[] = {"a.b", "a.00.x", "a.-0", "a.1-2", "a.+", "a.-", "a.:", "a.::x", "x.+007.y",
                                  "a.9223372036854775807", "a.-9223372036854775808", "a.9223372036854775808",
                                  "a.-00000000000000000000000000012", "a.%{x}", "a.b:c.d/e", "1.2.3", "a.\x01",
                                  "a.9223372036854775807.b", "a.-9223372036854775808.b", "9223372036854775807.x"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        sbuf spaced = {0};
        sb_addc(&spaced, ' ');
        for (const char *c = plain[i]; *c; c++)
            sb_adds(&spaced, *c == '.' ? " \t. " : (char[]){*c, 0});
        sb_addc(&spaced, ' ');
        hv *direct = split_key(plain[i], strlen(plain[i]));
        hv *scanned = split_key(spaced.s, spaced.len);
        assert_non_null(direct);
        assert_non_null(scanned);
        char *want = hjson_debug(scanned), *got = hjson_debug(direct);
        bool same = hv_eql(direct, scanned) && !strcmp(want, got);
        if (!same)
            print_error("'%s': %s, the token scan %s\n", plain[i], got, want);
        free(want);
        free(got);
        assert_true(same);
        hv_decref(direct);
        hv_decref(scanned);
        sb_free(&spaced);
    }
}

typedef struct {
    const char *source, *dest, *ko;
    bool sort, hash_arrays, preserve;
    const char *unpack, *result, *error;
} dm_row;

/* recorded with deep_merge 1.1.1: DeepMerge.deep_merge!(source, dest, options) */
static const dm_row dm_rows[] = {
#include "deep_merge_rows.inc"
};


/* One recorded row through the in-place merge or, with cow, the merge as lookups make it (copy
 * on write: the inputs, shared, are left as they were). */
static void check_dm_row(size_t i, const dm_row *r, bool cow)
{
    dm_options o = {r->ko, r->preserve, r->sort, r->hash_arrays, r->unpack, NULL, NULL};
    herr e = {0};
    hv *src = testutil_json(r->source), *dst = testutil_json(r->dest);
    char *src_before = cow ? hjson_debug(src) : NULL, *dst_before = cow ? hjson_debug(dst) : NULL;
    hv *res = cow ? deep_merge_cow(hv_incref(src), hv_incref(dst), &o, &e) : deep_merge_bang(src, dst, &o, &e);
    if (r->error) {
        assert_null(res);
        assert_string_equal(e.msg, r->error);
        herr_clear(&e);
    } else {
        if (!res)
            print_error("row %zu: %s\n", i, e.msg);
        assert_non_null(res);
        assert_value_json(res, r->result);
    }
    if (cow) {
        char *src_after = hjson_debug(src), *dst_after = hjson_debug(dst);
        assert_string_equal(src_after, src_before);
        assert_string_equal(dst_after, dst_before);
        free(src_before), free(dst_before), free(src_after), free(dst_after);
        hv_decref(src), hv_decref(dst);
    }
    hv_decref(res);
}

static void test_deep_merge(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof dm_rows / sizeof *dm_rows; i++) {
        check_dm_row(i, &dm_rows[i], false);
        check_dm_row(i, &dm_rows[i], true);
    }
}

/* The merge as lookups make it (copy on write, a value merged with its own copy given back as it
 * is when that changes nothing; against the recorded answers in test_deep_merge) against the
 * in-place merge on values whose copy merges do change something (knock-outs, repeated array
 * elements, nils, nested arrays) or not. */
static const char *const self_merge_sources[] = {
    "{\"n\":{\"h\":{\"x\":1,\"l\":[\"a\",\"b\"]},\"f\":false,\"u\":null}}",
    "{\"n\":[\"a\",\"a\"]}",
    "{\"n\":[1,1.0]}",
    "{\"n\":{\"s\":\"--x\",\"t\":\"a\\n--b\"}}",
    "{\"n\":[\"--a\",\"b\"]}",
    "{\"n\":[\"--\",\"b\"]}",
    "{\"n\":[[1],[1]]}",
    "{\"n\":[{\"a\":1},{\"a\":1}]}",
    "{\"n\":[\"b\",\"a\",3]}",
    "{\"n\":[\"a,b\",\"c\"]}",
    "{\"n\":{\"--k\":null,\"k\":{\"--\":1}}}",
};

static void test_deep_merge_cow(void **state)
{
    (void)state;
    const char *kos[] = {NULL, "--"};
    for (size_t i = 0; i < sizeof self_merge_sources / sizeof *self_merge_sources; i++)
        for (int opt = 0; opt < 16; opt++) {
            const char *ko = kos[opt & 1];
            bool sort = opt & 2, hash_arrays = opt & 4, preserve = (opt & 8) && !ko;
            dm_options o = {ko, preserve, sort, hash_arrays, (opt & 8) && ko ? "," : NULL, NULL, NULL};
            const char *dests[] = {"{}", "{\"n\":{\"z\":1}}", "{\"m\":2}"};
            for (size_t d = 0; d < 3; d++) {
                herr e1 = {0}, e2 = {0};
                hv *in_place = deep_merge_bang(testutil_json(self_merge_sources[i]), testutil_json(dests[d]), &o, &e1);
                hv *cow = deep_merge_cow(testutil_json(self_merge_sources[i]), testutil_json(dests[d]), &o, &e2);
                if (!in_place) {
                    assert_null(cow);
                    assert_string_equal(e1.msg, e2.msg);
                } else {
                    char *a = hjson_debug(in_place), *b = hjson_debug(cow);
                    if (strcmp(a, b) != 0)
                        print_error("source %s dest %s options %d: in place %s, copy on write %s\n",
                                    self_merge_sources[i], dests[d], opt, a, b);
                    assert_string_equal(a, b);
                    free(a), free(b);
                }
                herr_clear(&e1), herr_clear(&e2);
                hv_decref(in_place), hv_decref(cow);
            }
        }
}

static void test_deep_merge_errors(void **state)
{
    (void)state;
    herr e = {0};
    dm_options o = {"", false, false, false, NULL, NULL, NULL};
    assert_null(deep_merge_bang(hv_array(), hv_array(), &o, &e));
    assert_string_equal(e.msg, "knockout_prefix cannot be an empty string in deep_merge!");
    herr_clear(&e);
    dm_options p = {"--", true, false, false, NULL, NULL, NULL};
    assert_null(deep_merge_bang(hv_array(), hv_array(), &p, &e));
    assert_string_equal(e.msg, "overwrite_unmergeable must be true if knockout_prefix is specified in deep_merge!");
    herr_clear(&e);
    dm_options s = {NULL, false, true, false, NULL, NULL, NULL};
    assert_null(deep_merge_bang(testutil_json("[1]"), testutil_json("[\"a\"]"), &s, &e));
    assert_non_null(strstr(e.msg, "comparison of"));
    herr_clear(&e);
}

static void test_strategies(void **state)
{
    (void)state;
    herr e = {0};
    /* unique: convert (flatten) the first value, then union high -> low */
    merge_strategy *u = ms_new(MS_UNIQUE);
    hv *a = testutil_json("[\"c\",\"a\",\"c\",[\"x\",[\"c\"]]]");
    hv *single = ms_merge_single(u, a);
    assert_value_json(single, "[\"c\",\"a\",[\"x\",[\"c\"]]]");
    hv *first = ms_convert_value(u, a);
    assert_value_json(first, "[\"c\",\"a\",\"c\",\"x\",\"c\"]");
    hv *b = testutil_json("[1,\"a\",1.0]");
    hv *m = ms_merge(u, first, b, false, &e);
    assert_value_json(m, "[\"c\",\"a\",\"x\",1,1.0]");
    hv_decref(m);
    hv_decref(first);
    hv_decref(single);
    ms_free(u);
    /* hash: lower.merge(higher) key order */
    merge_strategy *h = ms_new(MS_HASH);
    hv *hi = testutil_json("{\"x\":1,\"z\":3}"), *lo = testutil_json("{\"y\":2,\"x\":10,\"w\":0}");
    m = ms_merge(h, hi, lo, false, &e);
    assert_value_json(m, "{\"y\":2,\"x\":1,\"w\":0,\"z\":3}");
    hv_decref(m);
    ms_free(h);
    /* strategy names and option checks are Puppet's */
    hv *bad = hv_str("bogus");
    assert_null(ms_from_value(bad, &e));
    assert_string_equal(e.msg, "Unknown merge strategy: 'bogus'");
    herr_clear(&e);
    hv_decref(bad);
    hv *nos = testutil_json("{\"knockout_prefix\":\"--\"}");
    assert_null(ms_from_value(nos, &e));
    assert_string_equal(e.msg, "The hash given as 'merge' must contain the name of a strategy in string form for the key 'strategy'");
    herr_clear(&e);
    hv_decref(nos);
    hv_decref(a);
    hv_decref(b);
    hv_decref(hi);
    hv_decref(lo);
}

static void test_rregex_gsub(void **state)
{
    (void)state;
    herr e = {0};
    rregex *re = rregex_new("^--", 3, &e);
    size_t n;
    char *r = rregex_gsub_empty(re, "--a\n--b", 7, &n);
    assert_string_equal(r, "a\nb"); /* ^ is a line anchor in Ruby */
    free(r);
    assert_null(rregex_gsub_empty(re, "a--", 3, &n));
    rregex_free(re);
    assert_null(rregex_new("*", 1, &e));
    herr_clear(&e);
}

/* The fast config check never accepts what Puppet's schema refuses: random configs built from
 * the schema's own pieces (valid and broken variants), each held to the full type check. */
static unsigned rng_state = 12345;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) % n;
}

static hv *random_scalar(void)
{
    switch (rnd(9)) {
    case 0: return hv_undef();
    case 1: return hv_str("");
    case 2: return hv_str("common.yaml");
    case 3: return hv_int(5);
    case 4: return hv_true();
    case 5: return hv_float(1.5);
    case 6: return hv_symbol("sym", 3);
    case 7: return hv_str("a:b");
    default: return hv_str("x");
    }
}

static hv *random_value(int depth)
{
    unsigned c = rnd(depth > 2 ? 1 : 4);
    if (c == 0)
        return random_scalar();
    if (c == 1) {
        hv *a = hv_array();
        for (unsigned i = rnd(4); i > 0; i--)
            hv_array_push(a, c == 1 && rnd(2) ? hv_str("p.yaml") : random_value(depth + 1));
        return a;
    }
    hv *h = hv_hash();
    static const char *names[] = {"name", "path", "paths", "glob", "globs", "uri", "uris", "mapped_paths",
                                  "datadir", "data_hash", "lookup_key", "options", "o1", "9bad", "a:", "a:b", "x-y",
                                  "version", "defaults", "hierarchy", "default_hierarchy", "bogus"};
    for (unsigned i = rnd(5); i > 0; i--) {
        const char *k = names[rnd(sizeof names / sizeof *names)];
        hv *key = rnd(10) == 0 ? hv_int(1) : hv_str(k);
        hv_hash_set(h, key, random_value(depth + 1));
    }
    return h;
}

static void test_config_quick_check(void **state)
{
    (void)state;
    herr e = {0};
    ptype *t = ptype_parse(config_v5_type(), &e);
    assert_non_null(t);
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        hv *cfg = hv_hash();
        hv_hash_sets(cfg, "version", rnd(8) ? hv_int(5) : random_scalar());
        if (rnd(2))
            hv_hash_sets(cfg, "defaults", random_value(1));
        hv *list = hv_array();
        for (unsigned j = rnd(3); j > 0; j--) {
            hv *entry = rnd(5) ? hv_hash() : random_value(2);
            if (hv_is(entry, HV_HASH) && rnd(4))
                hv_hash_sets(entry, "name", hv_str("level"));
            if (hv_is(entry, HV_HASH) && rnd(2))
                hv_hash_sets(entry, "path", random_scalar());
            if (hv_is(entry, HV_HASH) && rnd(3) == 0)
                hv_hash_sets(entry, "options", random_value(2));
            if (hv_is(entry, HV_HASH) && rnd(4) == 0)
                hv_hash_sets(entry, rnd(2) ? "paths" : "mapped_paths", random_value(2));
            hv_array_push(list, entry);
        }
        hv_hash_sets(cfg, rnd(6) ? "hierarchy" : "default_hierarchy", list);
        if (rnd(10) == 0)
            hv_hash_sets(cfg, "extra", hv_str("x"));
        bool quick = config_v5_quick_valid(cfg);
        if (quick) {
            accepted++;
            if (!ptype_match(t, cfg)) {
                char *j = hjson_debug(cfg);
                print_error("the fast check accepted what the schema refuses: %s\n", j);
                free(j);
                fail();
            }
        }
        hv_decref(cfg);
    }
    assert_true(accepted > 100); /* the fast path is exercised */
    ptype_free(t);
}

/* Merge options: what ms_from_value accepts (it skips the type for options that plainly match)
 * is what the strategy's type (merge_strategy.rb's options_t) accepts. */
static void test_merge_options_quick_check(void **state)
{
    (void)state;
    herr e = {0};
    ptype *deep = ptype_parse("Struct[{strategy=>Optional[Pattern[deep]],knockout_prefix=>Optional[String],"
                              "merge_debug=>Optional[Boolean],merge_hash_arrays=>Optional[Boolean],"
                              "sort_merged_arrays=>Optional[Boolean],}]",
                              &e);
    ptype *free_form = ptype_parse("Hash[String[1],Any]", &e);
    assert_non_null(deep);
    assert_non_null(free_form);
    static const char *names[] = {"strategy", "knockout_prefix", "merge_debug", "merge_hash_arrays", "sort_merged_arrays",
                                  "preserve_unmergeables", "", "strategy\0x", "Strategy"};
    static const char *strategies[] = {"deep", "reverse_deep", "unconstrained_deep"};
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        const char *strategy = strategies[rnd(3)];
        hv *merge = hv_hash();
        hv_hash_sets(merge, "strategy", rnd(10) ? hv_str(strategy) : rnd(2) ? hv_symbol(strategy, strlen(strategy)) : hv_str("deepish"));
        for (unsigned j = 1 + rnd(3); j > 0; j--) {
            size_t n = rnd(sizeof names / sizeof *names);
            hv *key = rnd(12) == 0 ? hv_symbol("merge_debug", 11) : hv_strn(names[n], n == 7 ? 10 : strlen(names[n]));
            hv *value = rnd(3) == 0 ? random_scalar() : rnd(2) ? hv_bool(rnd(2)) : hv_str("--");
            hv_hash_set(merge, key, value);
        }
        const hv *name = hv_hash_gets(merge, "strategy");
        bool known = false;
        for (size_t k = 0; k < 3 && hv_is(name, HV_STRING); k++)
            known |= strcmp(hv_str_ptr(name), strategies[k]) == 0;
        if (!known || hv_hash_len(merge) < 2) {
            hv_decref(merge);
            continue;
        }
        bool want = ptype_match(strcmp(hv_str_ptr(name), "deep") == 0 ? deep : free_form, merge);
        herr me = {0};
        merge_strategy *ms = ms_from_value(merge, &me);
        if ((ms != NULL) != want) {
            char *j = hjson_debug(merge);
            print_error("ms_from_value %s what the type %s: %s (%s)\n", ms ? "accepted" : "refused", want ? "accepts" : "refuses", j,
                        me.msg ? me.msg : "");
            free(j);
            fail();
        }
        accepted += ms != NULL;
        ms_free(ms);
        herr_clear(&me);
        hv_decref(merge);
    }
    assert_true(accepted > 100);
    ptype_free(deep);
    ptype_free(free_form);
}

/* Literal patterns (matched without Oniguruma on ASCII strings without a newline) answer as the
 * same pattern compiled by Oniguruma: random literal patterns (groups of alternatives included)
 * against random strings, each also compiled as "(?:PATTERN){1}" (the same regexp, never
 * literal), for =~ and gsub. */
static void test_rregex_plain(void **state)
{
    (void)state;
    static const char *starts[] = {"", "", "^", "\\A"}, *ends[] = {"", "", "$", "\\z", "\\Z"};
    static const char *pieces[] = {"a", "b", ":", "::", "_", "-", "\\-", "\\.", "\\:", "/", " ", "#", "\\$", "\\^", "\\\\", "\\*", "x"};
    static const char *means[] = {"a", "b", ":", "::", "_", "-", "-", ".", ":", "/", " ", "#", "$", "^", "\\", "*", "x"};
    static const char *groups[] = {"(a|b)", "(?:ab|b)", "(::|_)", "(x|xa|a)", "(a)", "(\\-|\\.)"};
    static const char *group_means[] = {"b", "ab", "_", "xa", "a", "."};
    static const char *subj[] = {"a", "b", ":", "_", "-", ".", "/", " ", "#", "$", "^", "\\", "*", "x", "\n", "\xc3\xa9", "ab"};
    int plain_hits = 0;
    for (int i = 0; i < 20000; i++) {
        sbuf pat = {0}, wrapped = {0}, s = {0}, lit = {0};
        sb_adds(&pat, starts[rnd(4)]);
        for (unsigned j = 1 + rnd(3); j > 0; j--) {
            if (rnd(4) == 0) {
                unsigned k = rnd(sizeof groups / sizeof *groups);
                sb_adds(&pat, groups[k]);
                sb_adds(&lit, group_means[k]);
                continue;
            }
            unsigned k = rnd(sizeof pieces / sizeof *pieces);
            sb_adds(&pat, pieces[k]);
            sb_adds(&lit, means[k]);
        }
        sb_adds(&pat, ends[rnd(5)]);
        sb_adds(&wrapped, "(?:");
        sb_addn(&wrapped, pat.s, pat.len);
        sb_adds(&wrapped, "){1}");
        for (unsigned j = rnd(4); j > 0; j--)
            sb_adds(&s, subj[rnd(sizeof subj / sizeof *subj)]);
        if (rnd(2))
            sb_addn(&s, lit.s, lit.len);
        for (unsigned j = rnd(4); j > 0; j--)
            sb_adds(&s, rnd(2) ? means[rnd(sizeof means / sizeof *means)] : subj[rnd(sizeof subj / sizeof *subj)]);
        herr e = {0};
        rregex *a = rregex_new(pat.s, pat.len, &e), *b = rregex_new(wrapped.s, wrapped.len, &e);
        assert_non_null(a);
        assert_non_null(b);
        bool ma = rregex_search(a, s.s ? s.s : "", s.len), mb = rregex_search(b, s.s ? s.s : "", s.len);
        if (ma != mb)
            fail_msg("/%s/ =~ \"%s\": %d, as Oniguruma: %d", pat.s, s.s ? s.s : "", ma, mb);
        plain_hits += ma;
        size_t na = 0, nb = 0;
        char *ga = rregex_gsub_empty(a, s.s ? s.s : "", s.len, &na), *gb = rregex_gsub_empty(b, s.s ? s.s : "", s.len, &nb);
        if ((ga == NULL) != (gb == NULL) || (ga && (na != nb || memcmp(ga, gb, na) != 0)))
            fail_msg("\"%s\".gsub(/%s/, \"\") differs: \"%s\" / Oniguruma: \"%s\"", s.s ? s.s : "", pat.s, ga ? ga : "(none)",
                     gb ? gb : "(none)");
        free(ga);
        free(gb);
        rregex_free(a);
        rregex_free(b);
        sb_free(&pat);
        sb_free(&wrapped);
        sb_free(&s);
        sb_free(&lit);
    }
    assert_true(plain_hits > 2000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pathname_plus), cmocka_unit_test(test_split_key),
        cmocka_unit_test(test_deep_merge),    cmocka_unit_test(test_deep_merge_cow),
        cmocka_unit_test(test_deep_merge_errors),
        cmocka_unit_test(test_strategies),    cmocka_unit_test(test_rregex_gsub),
        cmocka_unit_test(test_config_quick_check), cmocka_unit_test(test_merge_options_quick_check),
        cmocka_unit_test(test_rregex_plain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
