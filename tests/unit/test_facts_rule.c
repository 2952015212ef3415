/* The facts rule (issue 7): facts are sent by nodes, so what an interpolated fact may do to a
 * hierarchy location is limited. By default a location whose interpolation adds a ".." segment,
 * makes a relative location absolute, or adds glob characters to a glob fails the lookup; a NUL
 * byte always does ("pathname contains null byte", as Puppet). With unsafe_fact_paths the
 * locations are resolved as Puppet 7.23 resolves them, and the answers below under "puppet" are
 * the ones `puppet lookup --merge unique where` gave for the same tree and facts. */
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

/* `lookup --merge unique where` with these facts */
static hiera_status lookup_where(const char *facts_json, bool unsafe, hiera_value **v, hiera_error *err)
{
    char *codedir = xasprintf("%s/t", root);
    char *envpath = xasprintf("%s/environments", codedir);
    char *config = xasprintf("%s/hiera.yaml", codedir);
    hiera_value *facts = hiera_value_from_json(facts_json, err);
    assert_non_null(facts);
    hiera_options o = {.codedir = codedir, .confdir = codedir, .environmentpath = envpath, .hiera_config = config,
                       .node = "n1.example.com", .facts = facts, .unsafe_fact_paths = unsafe};
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

/* Facts that would lead a location elsewhere: refused by default, followed (as Puppet) when
 * the caller opts out. */
static void test_hostile_facts(void **state)
{
    (void)state;
    char *outside = xasprintf("%s/t/outside", root);
    char *abs_facts = xasprintf("{\"evil\": \"%s\", \"evil_list\": [\"%s\"], \"role\": \"web\"}", outside, outside);
    struct {
        const char *facts;
        const char *puppet;
    } rows[] = {
        {"{\"evil\": \"../secret\", \"evil_list\": [\"../secret\"], \"role\": \"web\"}",
         "[\"in-data-secret\",\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"../../secret\", \"evil_list\": [\"../../secret\"], \"role\": \"web\"}",
         "[\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"../../../../outside\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"codedir-outside\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"n1\", \"evil_list\": [\"../../secret\"], \"role\": \"web\"}",
         "[\"node-n1\",\"env-secret-outside-datadir\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {abs_facts, "[\"codedir-outside\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"*\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"{a,b}\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"[ab]\", \"evil_list\": [\"m\"], \"role\": \"web\"}",
         "[\"glob-a\",\"glob-b\",\"mapped-m\",\"written-dotdot\",\"dc-web-x\",\"common\"]"},
        {"{\"evil\": \"x\", \"evil_list\": [\"m\"], \"role\": \"../../data/globbed\"}",
         "[\"mapped-m\",\"glob-a\",\"glob-b\",\"common\"]"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        hiera_value *v = NULL;
        hiera_error err = {0};
        hiera_status st = lookup_where(rows[i].facts, true, &v, &err);
        if (st != HIERA_OK)
            print_error("unsafe, facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
        assert_int_equal(st, HIERA_OK);
        assert_value_json(v, rows[i].puppet);
        hiera_value_decref(v);
        hiera_error_clear(&err);

        st = lookup_where(rows[i].facts, false, &v, &err);
        if (st != HIERA_ERROR)
            print_error("default, facts %s: not refused\n", rows[i].facts);
        assert_int_equal(st, HIERA_ERROR);
        assert_null(v);
        assert_non_null(strstr(err.message, "may not lead a location out of its datadir"));
        assert_int_equal(err.kind, HIERA_ERR_FATAL);
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
            hiera_status st = lookup_where(rows[i].facts, unsafe, &v, &err);
            if (st != HIERA_OK)
                print_error("facts %s: %s\n", rows[i].facts, err.message ? err.message : "not found");
            assert_int_equal(st, HIERA_OK);
            assert_value_json(v, rows[i].want);
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
        cmocka_unit_test(test_nul),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
