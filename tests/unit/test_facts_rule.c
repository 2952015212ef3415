/* The facts rule (issue 7): facts are sent by nodes, so what an interpolated fact may do to a
 * hierarchy location is limited. By default a location whose interpolation adds a ".." segment,
 * makes a relative location absolute, or adds glob characters to a glob is treated as missing
 * (never read, a glob matching nothing), with a "location-refused" warning, and the other levels
 * answer; a NUL byte fails the lookup in both modes ("pathname contains null byte", as Puppet).
 * With unsafe_fact_paths the locations are resolved as Puppet 7.23 resolves them, and the
 * answers below under "puppet" are the ones `puppet lookup --merge unique where` gave for the
 * same tree and facts. */
#include "testutil.h"

#include "hiera.h"

#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void write_file(const char *rel, const char *text) { free(testutil_write_under(root, rel, text)); }

static int setup(void **state)
{
    (void)state;
    if (testutil_scratch(root, "facts") != 0)
        return -1;
    write_file("t/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("t/environments/production/hiera.yaml",
               "version: 5\n"
               "hierarchy:\n"
               "  - {name: node, path: \"nodes/%{facts.evil}.yaml\"}\n"
               "  - {name: bare, path: \"%{facts.evil}.yaml\"}\n"
               "  - {name: glob, glob: \"globbed/%{facts.evil}.yaml\"}\n"
               "  - {name: mapped, mapped_paths: [evil_list, e, \"mapped/%{e}.yaml\"]}\n"
               "  - {name: written, path: \"../shared/%{facts.role}.yaml\"}\n"
               "  - {name: dc, glob: \"dc/%{facts.role}/*.yaml\"}\n"
               "  - {name: common, path: common.yaml}\n");
    write_file("t/environments/production/data/common.yaml", "where: common\n");
    write_file("t/environments/production/data/secret.yaml", "where: in-data-secret\n");
    write_file("t/environments/production/secret.yaml", "where: env-secret-outside-datadir\n");
    write_file("t/outside.yaml", "where: codedir-outside\n");
    write_file("t/environments/production/data/nodes/n1.yaml", "where: node-n1\n");
    write_file("t/environments/production/data/globbed/a.yaml", "where: glob-a\n");
    write_file("t/environments/production/data/globbed/b.yaml", "where: glob-b\n");
    write_file("t/environments/production/data/mapped/m.yaml", "where: mapped-m\n");
    write_file("t/environments/production/shared/web.yaml", "where: written-dotdot\n");
    write_file("t/environments/production/data/dc/web/x.yaml", "where: dc-web-x\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

/* The "location-refused" warnings a context gave (each must name the rule). */
static void count_refused(const hiera_diagnostic *d, void *data)
{
    if (strcmp(d->code, "location-refused") != 0)
        return;
    assert_int_equal(d->severity, HIERA_DIAG_WARNING);
    assert_non_null(strstr(d->message, "may not lead a location out of its datadir, so it is treated as missing"));
    ++*(int *)data;
}

/* `lookup --merge unique where` with these facts; *refused counts the refusal warnings */
static hiera_status lookup_where_in(const char *tree, const char *facts_json, bool unsafe, hiera_value **v, int *refused,
                                    hiera_error *err)
{
    char *codedir = xasprintf("%s/%s", root, tree);
    char *envpath = xasprintf("%s/environments", codedir);
    char *config = xasprintf("%s/hiera.yaml", codedir);
    hiera_value *facts = hiera_value_from_json(facts_json, err);
    assert_non_null(facts);
    *refused = 0;
    hiera_options o = {.codedir = codedir, .confdir = codedir, .environmentpath = envpath, .hiera_config = config,
                       .node = "n1.example.com", .facts = facts, .unsafe_fact_paths = unsafe,
                       .diagnostics = count_refused, .diagnostics_data = refused};
    hiera *h = hiera_new(&o, err);
    assert_non_null(h);
    hiera_value *merge = hiera_value_new_string("unique");
    const char *keys[] = {"where"};
    hiera_request rq = {.keys = keys, .nkeys = 1, .merge = merge};
    *v = NULL;
    hiera_status st = hiera_lookup(h, &rq, v, err);
    hiera_value_decref(merge);
    hiera_value_decref(facts);
    hiera_free(h);
    free(codedir);
    free(envpath);
    free(config);
    return st;
}

static hiera_status lookup_where(const char *facts_json, bool unsafe, hiera_value **v, int *refused, hiera_error *err)
{
    return lookup_where_in("t", facts_json, unsafe, v, refused, err);
}

/* Facts that would lead a location elsewhere: refused by default (the location is missing, the
 * others answer), followed (as Puppet) when the caller opts out. */
static void test_hostile_facts(void **state)
{
    (void)state;
    char *outside = xasprintf("%s/t/outside", root);
    char *abs_facts = xasprintf("{\"evil\": \"%s\", \"evil_list\": [\"%s\"], \"role\": \"web\"}", outside, outside);
    /* (safe: what the default gives, and how many locations it refuses) */
    struct {
        const char *facts;
        const char *puppet, *safe;
        int refused;
    } rows[] = {
        {"{\"evil\": \"../secret\", \"evil_list\": [\"../secret\"], \"role\": \"web\"}",
         "[\"in-data-secret\",\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"written-dotdot\",\"dc-web-x\",\"common\"]", 4},
        {"{\"evil\": \"../../secret\", \"evil_list\": [\"../../secret\"], \"role\": \"web\"}",
         "[\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"written-dotdot\",\"dc-web-x\",\"common\"]", 4},
        {"{\"evil\": \"../../../../outside\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"codedir-outside\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]", 3},
        {"{\"evil\": \"n1\", \"evil_list\": [\"../../secret\"], \"role\": \"web\"}",
         "[\"node-n1\",\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"node-n1\",\"written-dotdot\",\"dc-web-x\",\"common\"]", 1},
        /* ("nodes/" + an absolute value stays relative: only the bare level is refused) */
        {abs_facts, "[\"codedir-outside\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"written-dotdot\",\"dc-web-x\",\"common\"]", 1},
        {"{\"evil\": \"*\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]", 1},
        {"{\"evil\": \"{a,b}\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]", 1},
        {"{\"evil\": \"[ab]\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]",
         "[\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]", 1},
        {"{\"evil\": \"x\", \"evil_list\": [\"m\"], \"role\": \"../../data/globbed\"}",
         "[\"mapped-m\",\"glob-a\",\"glob-b\",\"common\"]", "[\"mapped-m\",\"common\"]", 2},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        hiera_value *v = NULL;
        hiera_error err = {0};
        int refused = 0;
        hiera_status st = lookup_where(rows[i].facts, true, &v, &refused, &err);
        if (st != HIERA_OK)
            print_error("unsafe, facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
        assert_int_equal(st, HIERA_OK);
        assert_value_json(v, rows[i].puppet);
        assert_int_equal(refused, 0);
        hiera_value_decref(v);
        hiera_error_clear(&err);

        st = lookup_where(rows[i].facts, false, &v, &refused, &err);
        if (st != HIERA_OK)
            print_error("default, facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
        assert_int_equal(st, HIERA_OK);
        assert_value_json(v, rows[i].safe);
        if (refused != rows[i].refused)
            print_error("default, facts %s: %d refusals\n", rows[i].facts, refused);
        assert_int_equal(refused, rows[i].refused);
        hiera_value_decref(v);
        hiera_error_clear(&err);
    }
    free(outside);
    free(abs_facts);
}

/* What facts may still do: plain values, "/" and "." inside a segment, and ".." or globs the
 * hiera.yaml writes itself. */
static void test_ordinary_facts(void **state)
{
    (void)state;
    struct {
        const char *facts;
        const char *want;
    } rows[] = {
        {"{\"evil\": \"n1\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"node-n1\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"x/y\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"a..b\", \"evil_list\": [\"..m\"], \"role\": \"web\"}", "[\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"..\", \"evil_list\": [\"..\"], \"role\": \"web\"}", /* "...yaml": not a ".." segment */
         "[\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil_list\": [], \"role\": \"none\"}", "[\"common\"]"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        for (int unsafe = 0; unsafe <= 1; unsafe++) {
            hiera_value *v = NULL;
            hiera_error err = {0};
            int refused = 0;
            hiera_status st = lookup_where(rows[i].facts, unsafe, &v, &refused, &err);
            if (st != HIERA_OK)
                print_error("facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
            assert_int_equal(st, HIERA_OK);
            assert_value_json(v, rows[i].want);
            assert_int_equal(refused, 0);
            hiera_value_decref(v);
            hiera_error_clear(&err);
        }
    }
}

/* A refused datadir refuses every path, glob and mapped path under it; a fact missing where a
 * location begins ("%{facts.poodle}/common.yaml" gives "/common.yaml") refuses that location
 * only, and the answer is then Puppet's (its "/common.yaml" does not exist). The "puppet" answers
 * are `puppet lookup --merge unique where`'s for the same tree and facts. */
static void test_refused_datadir_and_missing_fact(void **state)
{
    (void)state;
    write_file("dd/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("dd/environments/production/hiera.yaml",
               "version: 5\n"
               "hierarchy:\n"
               "  - {name: d, datadir: \"data/%{facts.site}\", path: common.yaml}\n"
               "  - {name: dg, datadir: \"data/%{facts.site}\", glob: \"*.yaml\"}\n"
               "  - {name: dm, datadir: \"data/%{facts.site}\", mapped_paths: [list, e, \"%{e}.yaml\"]}\n"
               "  - {name: poodle, path: \"%{facts.poodle}/common.yaml\"}\n"
               "  - {name: c, path: common.yaml}\n");
    write_file("dd/environments/production/data/common.yaml", "where: common\n");
    write_file("dd/environments/production/data/s1/common.yaml", "where: s1-common\n");
    write_file("dd/environments/production/data/s1/extra.yaml", "where: s1-extra\n");
    write_file("dd/environments/production/common.yaml", "where: env-outside\n");
    struct {
        const char *facts;
        const char *puppet, *safe;
        int refused;
    } rows[] = {
        {"{\"site\": \"s1\", \"list\": [\"common\"]}", "[\"s1-common\",\"s1-extra\",\"common\"]",
         "[\"s1-common\",\"s1-extra\",\"common\"]", 1},
        {"{\"site\": \"..\", \"list\": [\"common\"]}", "[\"env-outside\",\"common\"]", "[\"common\"]", 4},
        {"{\"site\": \"s1\", \"list\": [\"common\"], \"poodle\": \"s1\"}",
         "[\"s1-common\",\"s1-extra\",\"common\"]", "[\"s1-common\",\"s1-extra\",\"common\"]", 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        for (int unsafe = 0; unsafe <= 1; unsafe++) {
            hiera_value *v = NULL;
            hiera_error err = {0};
            int refused = 0;
            hiera_status st = lookup_where_in("dd", rows[i].facts, unsafe, &v, &refused, &err);
            if (st != HIERA_OK)
                print_error("facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
            assert_int_equal(st, HIERA_OK);
            assert_value_json(v, unsafe ? rows[i].puppet : rows[i].safe);
            if (refused != (unsafe ? 0 : rows[i].refused))
                print_error("facts %s, unsafe %d: %d refusals\n", rows[i].facts, unsafe, refused);
            assert_int_equal(refused, unsafe ? 0 : rows[i].refused);
            hiera_value_decref(v);
            hiera_error_clear(&err);
        }
    }
}

/* A NUL in a fact used in a location: Puppet fails with "pathname contains null byte" (path,
 * glob, mapped_paths and datadir alike); a C string would end at the NUL instead and let a fact
 * drop the ".yaml" suffix. Refused in both modes. */
static void test_nul(void **state)
{
    (void)state;
    write_file("nul/hiera.yaml", "version: 5\nhierarchy: []\n");
    write_file("nul/environments/production/data/common.yaml", "where: common\n");
    write_file("nul/environments/production/data/n1", "where: truncated\n");
    static const char *const levels[] = {
        "  - {name: p, path: \"%{facts.evil}.yaml\"}\n",
        "  - {name: g, glob: \"%{facts.evil}.yaml\"}\n",
        "  - {name: m, mapped_paths: [list, e, \"%{e}.yaml\"]}\n",
        "  - {name: d, datadir: \"data/%{facts.evil}\", path: common.yaml}\n",
    };
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
        char *cfg = xasprintf("version: 5\nhierarchy:\n%s  - {name: c, path: common.yaml}\n", levels[i]);
        write_file("nul/environments/production/hiera.yaml", cfg);
        free(cfg);
        for (int unsafe = 0; unsafe <= 1; unsafe++) {
            char *codedir = xasprintf("%s/nul", root);
            char *envpath = xasprintf("%s/environments", codedir);
            char *config = xasprintf("%s/hiera.yaml", codedir);
            hiera_error err = {0};
            hiera_value *facts = hiera_value_from_json("{\"evil\": \"n1\\u0000x\", \"list\": [\"n1\\u0000x\"]}", &err);
            hiera_options o = {.codedir = codedir, .environmentpath = envpath, .hiera_config = config,
                               .node = "n1.example.com", .facts = facts, .unsafe_fact_paths = unsafe};
            hiera *h = hiera_new(&o, &err);
            assert_non_null(h);
            hiera_value *v = NULL;
            assert_int_equal(hiera_lookup_key(h, "where", &v, &err), HIERA_ERROR);
            assert_string_equal(err.message, "pathname contains null byte");
            assert_int_equal(err.kind, HIERA_ERR_FATAL);
            hiera_error_clear(&err);
            hiera_free(h);
            hiera_value_decref(facts);
            free(codedir);
            free(envpath);
            free(config);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_facts),
        cmocka_unit_test(test_ordinary_facts),
        cmocka_unit_test(test_refused_datadir_and_missing_fact),
        cmocka_unit_test(test_nul),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
