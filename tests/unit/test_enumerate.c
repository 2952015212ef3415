/* Unit tests for enumeration (src/engine/enumerate.c): the layers, levels and locations a node
 * sees (hiera_hierarchy) and the keys it can see with their files and lines (hiera_keys). */
#include "testutil.h"

#include "hiera.h"

static char *tree;

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/hiera-enumerate-XXXXXX";
    tree = xstrdup(mkdtemp(tmpl));
    static const char *files[][2] = {
        {"hiera.yaml", "version: 5\ndefaults: {datadir: gdata, data_hash: yaml_data}\nhierarchy:\n  - {name: Global, path: common.yaml}\n"},
        {"gdata/common.yaml", "g::key: 1\nshared: global\n"},
        {"environments/production/hiera.yaml",
         "version: 5\ndefaults: {data_hash: yaml_data}\nhierarchy:\n"
         "  - {name: Nodes, path: \"nodes/%{trusted.certname}.yaml\"}\n"
         "  - {name: Roles, paths: [\"role/%{facts.role}.yaml\", missing.yaml]}\n"
         "  - {name: Broken, path: broken.yaml}\n"
         "  - {name: Common, path: common.yaml}\n"},
        {"environments/production/data/nodes/n1.example.com.yaml", "# a comment\nnode::key: n1\n\nshared: node\n"},
        {"environments/production/data/role/web.yaml", "role::key: web\n"},
        {"environments/production/data/broken.yaml", "a: [\n"},
        {"environments/production/data/common.yaml",
         "lookup_options:\n  shared: {merge: first}\nshared: common\ncommon::key: c\n"},
        {"environments/production/modules/mod/hiera.yaml",
         "version: 5\ndefaults: {data_hash: yaml_data}\nhierarchy:\n  - {name: M, path: m.yaml}\n"
         "default_hierarchy:\n  - {name: D, path: d.yaml}\n"},
        {"environments/production/modules/mod/data/m.yaml", "mod::a: 1\nother::b: not visible\nmodx::c: not visible either\n"},
        {"environments/production/modules/mod/data/d.yaml", "mod::d: from the default hierarchy\n"},
        {"environments/production/modules/bad/hiera.yaml", "version: 5\nhierarchy: 12\n"},
        {"modules/codemod/hiera.yaml", "version: 5\ndefaults: {data_hash: yaml_data}\nhierarchy:\n  - {name: C, path: c.yaml}\n"},
        {"modules/codemod/data/c.yaml", "codemod::x: 1\n"},
        {"modules/mod/hiera.yaml", "version: 5\n"}, /* shadowed by the environment's mod */
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        free(testutil_write_under(tree, files[i][0], files[i][1]));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", tree);
    if (system(cmd) != 0)
        print_error("could not remove %s\n", tree);
    free(cmd);
    free(tree);
    return 0;
}

static hiera *node(hiera_value **facts_out)
{
    hiera_value *facts = hiera_value_new_hash();
    hiera_value_hash_set(facts, "role", hiera_value_new_string("web"));
    hiera_value_hash_set(facts, "clientcert", hiera_value_new_string("n1.example.com"));
    hiera_value_hash_set(facts, "fqdn", hiera_value_new_string("n1.example.com"));
    hiera_value_hash_set(facts, "hostname", hiera_value_new_string("n1"));
    hiera_value_hash_set(facts, "domain", hiera_value_new_string("example.com"));
    hiera_options o = {0};
    o.codedir = tree;
    o.node = "n1.example.com";
    o.facts = facts;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        print_error("hiera_new: %s\n", err.message);
    assert_non_null(h);
    *facts_out = facts;
    return h;
}

static const hiera_value *find_layer(const hiera_value *layers, const char *kind, const char *module)
{
    for (size_t i = 0; i < hiera_value_array_size(layers); i++) {
        const hiera_value *l = hiera_value_array_get(layers, i);
        const hiera_value *m = hiera_value_hash_get(l, "module");
        if (!strcmp(hiera_value_string(hiera_value_hash_get(l, "layer")), kind) &&
            (!module || (m && !strcmp(hiera_value_string(m), module))))
            return l;
    }
    return NULL;
}

static void test_hierarchy(void **state)
{
    (void)state;
    hiera_value *facts;
    hiera *h = node(&facts);
    hiera_value *layers = hiera_hierarchy(h);
    /* global, environment, then the modules by name: bad, codemod, mod */
    assert_int_equal(hiera_value_array_size(layers), 5);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(layers, 0), "layer")), "global");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(layers, 1), "layer")), "environment");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(layers, 2), "module")), "bad");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(layers, 3), "module")), "codemod");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(layers, 4), "module")), "mod");

    const hiera_value *env = find_layer(layers, "environment", NULL);
    const hiera_value *levels = hiera_value_hash_get(env, "levels");
    assert_int_equal(hiera_value_array_size(levels), 4);
    const hiera_value *roles = hiera_value_array_get(levels, 1);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(roles, "name")), "Roles");
    const hiera_value *locs = hiera_value_hash_get(roles, "locations");
    assert_int_equal(hiera_value_array_size(locs), 2);
    const hiera_value *first = hiera_value_array_get(locs, 0);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(first, "original")), "role/%{facts.role}.yaml");
    assert_non_null(strstr(hiera_value_string(hiera_value_hash_get(first, "path")), "/data/role/web.yaml"));
    assert_true(hiera_value_bool(hiera_value_hash_get(first, "exists")));
    assert_false(hiera_value_bool(hiera_value_hash_get(hiera_value_array_get(locs, 1), "exists")));

    /* the environment's module wins over <codedir>/modules/mod; its default hierarchy is listed */
    const hiera_value *mod = find_layer(layers, "module", "mod");
    assert_non_null(strstr(hiera_value_string(hiera_value_hash_get(mod, "config")), "/environments/production/modules/mod/"));
    assert_int_equal(hiera_value_array_size(hiera_value_hash_get(mod, "default_levels")), 1);
    /* a module whose hiera.yaml is not valid: the layer carries the error */
    const hiera_value *bad = find_layer(layers, "module", "bad");
    assert_non_null(hiera_value_hash_get(bad, "error"));
    hiera_value_decref(layers);
    hiera_free(h);
    hiera_value_decref(facts);
}

static void test_keys(void **state)
{
    (void)state;
    hiera_value *facts;
    hiera *h = node(&facts);
    hiera_value *all = hiera_keys(h);
    const hiera_value *keys = hiera_value_hash_get(all, "keys");
    assert_non_null(hiera_value_hash_get(keys, "g::key"));
    assert_non_null(hiera_value_hash_get(keys, "node::key"));
    assert_non_null(hiera_value_hash_get(keys, "role::key"));
    assert_non_null(hiera_value_hash_get(keys, "common::key"));
    assert_non_null(hiera_value_hash_get(keys, "mod::a"));
    assert_non_null(hiera_value_hash_get(keys, "codemod::x"));
    assert_null(hiera_value_hash_get(keys, "other::b"));       /* outside the module's namespace */
    assert_null(hiera_value_hash_get(keys, "modx::c"));        /* "mod" is not a prefix of "modx::" */
    assert_null(hiera_value_hash_get(keys, "lookup_options")); /* not a key */
    const hiera_value *d = hiera_value_array_get(hiera_value_hash_get(keys, "mod::d"), 0);
    assert_true(hiera_value_bool(hiera_value_hash_get(d, "default_hierarchy")));

    /* "shared" in lookup order: global, node, common; the node file's on line 4 */
    const hiera_value *shared = hiera_value_hash_get(keys, "shared");
    assert_int_equal(hiera_value_array_size(shared), 3);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(hiera_value_array_get(shared, 0), "layer")), "global");
    const hiera_value *n = hiera_value_array_get(shared, 1);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(n, "level")), "Nodes");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(n, "line")), 4);
    assert_non_null(strstr(hiera_value_string(hiera_value_hash_get(n, "file")), "nodes/n1.example.com.yaml"));

    /* the broken file and the bad module are reported */
    const hiera_value *errors = hiera_value_hash_get(all, "errors");
    bool broken = false, bad = false;
    for (size_t i = 0; i < hiera_value_array_size(errors); i++) {
        const hiera_value *e = hiera_value_array_get(errors, i);
        const hiera_value *lv = hiera_value_hash_get(e, "level");
        const hiera_value *m = hiera_value_hash_get(e, "module");
        if (lv && !strcmp(hiera_value_string(lv), "Broken"))
            broken = true;
        if (m && !strcmp(hiera_value_string(m), "bad"))
            bad = true;
    }
    assert_true(broken);
    assert_true(bad);

    /* where lookup_options is defined, apart from the keys: the environment's common.yaml, line 1 */
    const hiera_value *lo = hiera_value_hash_get(all, "lookup_options");
    assert_int_equal(hiera_value_array_size(lo), 1);
    const hiera_value *lo0 = hiera_value_array_get(lo, 0);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(lo0, "level")), "Common");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(lo0, "line")), 1);
    assert_non_null(strstr(hiera_value_string(hiera_value_hash_get(lo0, "file")), "/data/common.yaml"));

    /* the names alone: the same keys in the same order, the same problems */
    hiera_value *names = hiera_key_names(h);
    const hiera_value *nk = hiera_value_hash_get(names, "keys");
    assert_int_equal(hiera_value_array_size(nk), hiera_value_hash_size(keys));
    for (size_t i = 0; i < hiera_value_hash_size(keys); i++)
        assert_string_equal(hiera_value_string(hiera_value_array_get(nk, i)), hiera_value_string(hiera_value_hash_key(keys, i)));
    assert_int_equal(hiera_value_array_size(hiera_value_hash_get(names, "errors")), hiera_value_array_size(errors));
    assert_null(hiera_value_hash_get(names, "lookup_options"));
    hiera_value_decref(names);
    hiera_value_decref(all);
    hiera_free(h);
    hiera_value_decref(facts);
}

/* the key a lookup takes for a data key (Puppet's split_key: a key with . ' or " is a path whose
 * segments may be quoted whole) */
static void test_lookup_form(void **state)
{
    (void)state;
    static const char *cases[][2] = {
        {"ntp::servers", "ntp::servers"},
        {"a.b", "\"a.b\""},
        {"it's", "\"it's\""},
        {"say \"hi\"", "'say \"hi\"'"},
        {"x.\"y", "'x.\"y'"},
        {" spaced ", " spaced "},
        {" a.b ", "\" a.b \""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *f = hiera_key_lookup_form(cases[i][0]);
        assert_non_null(f);
        assert_string_equal(f, cases[i][1]);
        free(f);
    }
    /* both quotes and a reason to quote: no lookup reaches it */
    assert_null(hiera_key_lookup_form("it's \"x\""));
    assert_null(hiera_key_lookup_form(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hierarchy),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_lookup_form),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
