/* Unit tests for snapshots (src/engine/snapshot.c) and location templates as patterns
 * (src/engine/tmplmatch.c): what a snapshot reads, the problems it keeps, lookups through views
 * answering as lookups without one, views on several threads, and reload by replacement. */
#include "testutil.h"

#include <pthread.h>
#include <unistd.h>

#include "base/fileio.h"
#include "engine/snapshot.h"
#include "engine/tmplmatch.h"
#include "formats/render.h"
#include "hiera.h"

static void test_tmpl_match(void **state)
{
    (void)state;
    static const struct {
        const char *tmpl, *path;
        bool glob, want;
    } rows[] = {
        {"/d/nodes/%{trusted.certname}.yaml", "/d/nodes/web01.example.com.yaml", false, true},
        {"/d/nodes/%{trusted.certname}.yaml", "/d/nodes/web01.json", false, false},
        {"/d/nodes/%{trusted.certname}.yaml", "/d/nodes/a/b.yaml", false, true}, /* a value may hold '/' */
        {"/d/nodes/%{trusted.certname}.yaml", "/d/common.yaml", false, false},
        {"/d/os/%{facts.os.family}/%{facts.os.release.major}.yaml", "/d/os/Debian/12.yaml", false, true},
        {"/d/os/%{facts.os.family}/%{facts.os.release.major}.yaml", "/d/os/Debian.yaml", false, false},
        {"/d/%{a}%{b}.yaml", "/d/x.yaml", false, true},
        {"/d/%{lookup('a}b')}.yaml", "/d/q.yaml", false, true}, /* a quoted '}' does not end it */
        {"/d/dc/%{facts.dc}/*.yaml", "/d/dc/ams1/a.yaml", true, true},
        {"/d/dc/%{facts.dc}/*.yaml", "/d/dc/ams1/sub/a.yaml", true, true}, /* through %{} */
        {"/d/dc/*.yaml", "/d/dc/sub/a.yaml", true, false},                  /* '*' stops at '/' */
        {"/d/**/*.yaml", "/d/a/b/c.yaml", true, true},
        {"/d/**/*.yaml", "/d/c.yaml", true, true},
        {"/d/{a,b}.yaml", "/d/b.yaml", true, true},
        {"/d/{a,b}.yaml", "/d/c.yaml", true, false},
        {"/d/{a,{b,c}x}.yaml", "/d/cx.yaml", true, true},
        {"/d/[ab]?.yaml", "/d/a1.yaml", true, true},
        {"/d/[ab]?.yaml", "/d/c1.yaml", true, false},
        {"/d/[!ab]?.yaml", "/d/c1.yaml", true, true},
        {"/d/*.yaml", "/d/*.yaml", false, true}, /* not a glob: '*' is literal */
        {"/d/*.yaml", "/d/x.yaml", false, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        bool got = tmpl_match(rows[i].tmpl, rows[i].path, rows[i].glob);
        if (got != rows[i].want)
            print_error("tmpl_match(%s, %s, %d) = %d\n", rows[i].tmpl, rows[i].path, rows[i].glob, got);
        assert_int_equal(got, rows[i].want);
    }
    char *b = tmpl_base_dir("/d/nodes/%{x}/y.yaml", false);
    assert_string_equal(b, "/d/nodes");
    free(b);
    b = tmpl_base_dir("/d/dc/*/x.yaml", true);
    assert_string_equal(b, "/d/dc");
    free(b);
    b = tmpl_base_dir("/d/dc/*/x.yaml", false);
    assert_string_equal(b, "/d/dc/*");
    free(b);
    assert_false(tmpl_is_pattern("/d/common.yaml", true));
    assert_true(tmpl_is_pattern("/d/%{x}.yaml", false));
    /* a hostile template ends (the budget makes it a match) */
    assert_true(tmpl_match("/%{a}%{b}%{c}%{d}%{e}%{f}%{g}%{h}x", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaay", false));
}

/* ---- a small tree ---- */

static char *tree;

static void write_tree(const char *common_value)
{
    static const char *files[][2] = {
        {"hiera.yaml", "version: 5\ndefaults: {datadir: gdata, data_hash: yaml_data}\nhierarchy:\n  - {name: c, path: common.yaml}\n"},
        {"gdata/common.yaml", "global::key: global\n"},
        {"environments/production/hiera.yaml",
         "version: 5\ndefaults: {data_hash: yaml_data}\nhierarchy:\n"
         "  - {name: nodes, path: \"nodes/%{trusted.certname}.yaml\"}\n"
         "  - {name: roles, glob: \"roles/%{facts.role}/*.yaml\"}\n"
         "  - {name: services, mapped_paths: [facts.services, s, \"svc/%{s}.json\"], data_hash: json_data}\n"
         "  - {name: common, path: common.yaml}\n"},
        {"environments/production/data/nodes/web01.example.com.yaml", "node::key: web01\nlist: [n]\n"},
        {"environments/production/data/nodes/broken.example.com.yaml", "a: [\n"},
        {"environments/production/data/roles/web/a.yaml", "role::key: web a\nlist: [r]\n"},
        {"environments/production/data/svc/ntp.json", "{\"svc::ntp\": true}"},
        {"environments/production/data/orphan.txt", "never read\n"},
        {"environments/production/modules/mymod/hiera.yaml", "version: 5\ndefaults: {data_hash: yaml_data}\nhierarchy:\n  - {name: c, path: common.yaml}\n"},
        {"environments/production/modules/mymod/data/common.yaml", "mymod::x: from module\n"},
        {"environments/staging/hiera.yaml", "version: 5\nhierarchy:\n  - {name: [bad]}\n"},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        free(testutil_write_under(tree, files[i][0], files[i][1]));
    char *text = xasprintf("common::key: %s\nlist: [c]\nlookup_options: {list: {merge: unique}}\n", common_value);
    free(testutil_write_under(tree, "environments/production/data/common.yaml", text));
    free(text);
}

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/hiera-snapshot-XXXXXX";
    tree = xstrdup(mkdtemp(tmpl));
    write_tree("one");
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

static hiera_snapshot *snap_of_tree(void)
{
    hiera_options o = {0};
    o.codedir = tree;
    return hiera_snapshot_new(&o, NULL);
}

static bool lists_path(const hiera_value *list, const char *suffix)
{
    for (size_t i = 0; i < hiera_value_array_size(list); i++) {
        const char *p = hiera_value_string(hiera_value_hash_get(hiera_value_array_get(list, i), "path"));
        size_t n = strlen(p), m = strlen(suffix);
        if (n >= m && strcmp(p + n - m, suffix) == 0)
            return true;
    }
    return false;
}

static void test_what_is_read(void **state)
{
    (void)state;
    hiera_snapshot *s = snap_of_tree();
    hiera_value *d = hiera_snapshot_describe(s);
    const hiera_value *files = hiera_value_hash_get(d, "files");
    assert_true(lists_path(files, "/gdata/common.yaml"));
    assert_true(lists_path(files, "/nodes/web01.example.com.yaml"));
    assert_true(lists_path(files, "/nodes/broken.example.com.yaml"));
    assert_true(lists_path(files, "/roles/web/a.yaml"));
    assert_true(lists_path(files, "/svc/ntp.json"));
    assert_true(lists_path(files, "/mymod/data/common.yaml"));
    assert_false(lists_path(files, "/orphan.txt"));
    const hiera_value *configs = hiera_value_hash_get(d, "configs");
    assert_true(lists_path(configs, "/environments/staging/hiera.yaml"));
    assert_int_equal(hiera_value_array_size(hiera_value_hash_get(d, "environments")), 2);
    hiera_value_decref(d);

    /* the broken data file and the invalid staging configuration are problems */
    hiera_value *p = hiera_snapshot_problems(s);
    assert_int_equal(hiera_value_array_size(p), 2);
    bool broken = false, invalid = false;
    for (size_t i = 0; i < hiera_value_array_size(p); i++) {
        const hiera_value *e = hiera_value_array_get(p, i);
        const char *code = hiera_value_string(hiera_value_hash_get(e, "code"));
        const char *file = hiera_value_string(hiera_value_hash_get(e, "file"));
        if (!strcmp(code, "data-syntax") && strstr(file, "broken.example.com.yaml")) {
            broken = true;
            assert_true(hiera_value_int(hiera_value_hash_get(e, "line")) > 0);
        }
        if (!strcmp(code, "config-invalid") && strstr(file, "staging/hiera.yaml"))
            invalid = true;
    }
    assert_true(broken);
    assert_true(invalid);
    hiera_value_decref(p);

    /* what exists is known without asking the file system */
    snapshot *es = (snapshot *)s;
    char *path = xasprintf("%s/environments/production/data/nodes/web01.example.com.yaml", tree);
    assert_int_equal(snapshot_path_state(es, path), 1);
    free(path);
    path = xasprintf("%s/environments/production/data/nodes/nobody.yaml", tree);
    assert_int_equal(snapshot_path_state(es, path), 0);
    free(path);
    assert_int_equal(snapshot_path_state(es, "/no/such/folder/x.yaml"), -1);
    hiera_snapshot_release(s);
}

/* The answers (JSON or the error message) of keys for a node, through cache c. */
static char *answers(hiera_cache *c, const char *certname, const char *role)
{
    hiera_value *facts = hiera_value_new_hash();
    hiera_value_hash_set(facts, "role", hiera_value_new_string(role));
    hiera_value *svc = hiera_value_new_array();
    hiera_value_array_push(svc, hiera_value_new_string("ntp"));
    hiera_value_hash_set(facts, "services", svc);
    hiera_value_hash_set(facts, "clientcert", hiera_value_new_string(certname));
    hiera_value_hash_set(facts, "fqdn", hiera_value_new_string(certname));
    hiera_value_hash_set(facts, "hostname", hiera_value_new_string("x"));
    hiera_value_hash_set(facts, "domain", hiera_value_new_string("example.com"));
    hiera_options o = {0};
    o.codedir = tree;
    o.node = certname;
    o.facts = facts;
    o.cache = c;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    assert_non_null(h);
    static const char *keys[] = {"global::key", "node::key", "role::key", "svc::ntp", "common::key", "list", "mymod::x", "nope"};
    sbuf out = {0};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        hiera_value *v = NULL;
        hiera_status st = hiera_lookup_key(h, keys[i], &v, &err);
        if (st == HIERA_OK) {
            char *j = hiera_render(v, HIERA_RENDER_JSON, NULL);
            sb_addf(&out, "%s=%s\n", keys[i], j);
            free(j);
        } else {
            sb_addf(&out, "%s:%d:%s\n", keys[i], st, err.message ? err.message : "");
        }
        hiera_value_decref(v);
        hiera_error_clear(&err);
    }
    hiera_free(h);
    hiera_value_decref(facts);
    return sb_take(&out);
}

static void test_views_answer_alike(void **state)
{
    (void)state;
    hiera_snapshot *s = snap_of_tree();
    static const char *nodes[][2] = {{"web01.example.com", "web"}, {"broken.example.com", "web"}, {"db1.example.com", "db"}};
    for (size_t i = 0; i < 3; i++) {
        hiera_cache *plain = hiera_cache_new(), *view = hiera_cache_new_from_snapshot(s);
        char *a = answers(plain, nodes[i][0], nodes[i][1]), *b = answers(view, nodes[i][0], nodes[i][1]);
        assert_string_equal(a, b);
        if (i == 0)
            assert_non_null(strstr(a, "list=[\"n\",\"r\",\"c\"]"));
        if (i == 1)
            assert_non_null(strstr(a, "node::key:2:")); /* the broken file fails the lookup */
        free(a);
        free(b);
        hiera_cache_free(plain);
        hiera_cache_free(view);
    }
    hiera_snapshot_release(s);
}

/* ---- threads: every thread its own view over one snapshot ---- */

typedef struct {
    hiera_snapshot *s;
    const char *expect;
    int wrong;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    hiera_cache *view = hiera_cache_new_from_snapshot(a->s);
    for (int r = 0; r < 20; r++) {
        char *got = answers(view, "web01.example.com", "web");
        if (strcmp(got, a->expect) != 0)
            a->wrong++;
        free(got);
    }
    hiera_cache_free(view);
    return NULL;
}

static void test_threads_share_a_snapshot(void **state)
{
    (void)state;
    hiera_cache *plain = hiera_cache_new();
    char *expect = answers(plain, "web01.example.com", "web");
    hiera_cache_free(plain);
    hiera_snapshot *s = snap_of_tree();
    enum { N = 6 };
    pthread_t t[N];
    worker_arg args[N];
    for (int i = 0; i < N; i++) {
        args[i] = (worker_arg){hiera_snapshot_retain(s), expect, 0};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &args[i]), 0);
    }
    hiera_snapshot_release(s); /* the threads hold their own references */
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(args[i].wrong, 0);
        hiera_snapshot_release(args[i].s);
    }
    free(expect);
}

static void test_reload_is_replacement(void **state)
{
    (void)state;
    hiera_snapshot *old = snap_of_tree();
    hiera_cache *old_view = hiera_cache_new_from_snapshot(old);
    char *before = answers(old_view, "web01.example.com", "web");
    /* the file changes (size too, so that a stat-checking cache would see it) */
    write_tree("two, and longer");
    hiera_snapshot *fresh = snap_of_tree();
    hiera_cache *new_view = hiera_cache_new_from_snapshot(fresh);
    hiera_snapshot_release(old); /* the old view keeps it alive */
    char *old_again = answers(old_view, "web01.example.com", "web");
    char *after = answers(new_view, "web01.example.com", "web");
    assert_string_equal(before, old_again);
    assert_non_null(strstr(before, "common::key=\"one\""));
    assert_non_null(strstr(after, "common::key=\"two, and longer\""));
    free(before);
    free(old_again);
    free(after);
    hiera_cache_free(old_view); /* frees the old snapshot */
    hiera_cache_free(new_view);
    hiera_snapshot_release(fresh);
    write_tree("one");
}

/* ---- parses named by content ---- */

static hiera_snapshot *snap_of_env(const char *env, const hiera_snapshot *prev, hiera_path_changed_fn changed, void *data)
{
    hiera_options o = {0};
    o.codedir = tree;
    o.environment = env;
    return hiera_snapshot_update_changed(prev, &o, changed, data, NULL);
}

/* The value of key in file (relative to the tree) as s holds it. */
static const hv *held(hiera_snapshot *s, const char *rel, const char *key)
{
    char *path = xasprintf("%s/%s", tree, rel);
    snapshot_file f;
    bool got = snapshot_get((const snapshot *)s, path, FMT_YAML, &f);
    free(path);
    return got && f.value ? hv_hash_gets(f.value, key) : NULL;
}

static void test_same_bytes_parsed_once(void **state)
{
    (void)state;
    /* a second environment: a copy of production (its files under other paths), one file differing */
    static const char *copies[][2] = {
        {"environments/copy/hiera.yaml", NULL}, {"environments/copy/data/common.yaml", NULL},
        {"environments/copy/data/nodes/web01.example.com.yaml", NULL}, {"environments/copy/data/roles/web/a.yaml", NULL},
    };
    for (size_t i = 0; i < sizeof copies / sizeof *copies; i++) {
        char *from = xasprintf("%s/environments/production/%s", tree, copies[i][0] + strlen("environments/copy/"));
        sbuf text = {0};
        assert_true(file_read(from, &text, NULL, NULL));
        free(testutil_write_under(tree, copies[i][0], text.s));
        sb_free(&text);
        free(from);
    }
    free(testutil_write_under(tree, "environments/copy/data/roles/web/a.yaml", "role::key: the copy's own\n"));
    size_t parses0, bytes0, parses1, bytes1, parses2, bytes2;
    snapshot_store_usage(&parses0, &bytes0);
    hiera_snapshot *prod = snap_of_env("production", NULL, NULL, NULL);
    snapshot_store_usage(&parses1, &bytes1);
    hiera_snapshot *copy = snap_of_env("copy", NULL, NULL, NULL);
    snapshot_store_usage(&parses2, &bytes2);
    snapshot_counts c;
    snapshot_counts_of((const snapshot *)copy, &c);
    /* the copy parsed its own role file only (and the hiera.yaml files, compiled by the builder's
     * cache from their own parse): common, the node file and the global data are shared */
    assert_int_equal(c.parsed, 3);
    assert_true(c.shared >= 3);
    assert_int_equal(parses2 - parses1, 1);
    assert_true(bytes2 > bytes1 && bytes1 > bytes0);
    /* one parse: the same nodes */
    assert_ptr_equal(held(prod, "environments/production/data/common.yaml", "common::key"),
                     held(copy, "environments/copy/data/common.yaml", "common::key"));
    assert_string_equal(hv_str_ptr(held(copy, "environments/copy/data/roles/web/a.yaml", "role::key")), "the copy's own");
    assert_string_equal(hv_str_ptr(held(prod, "environments/production/data/roles/web/a.yaml", "role::key")), "web a");
    /* released, the parses leave the store */
    hiera_snapshot_release(prod);
    hiera_snapshot_release(copy);
    size_t parses3, bytes3;
    snapshot_store_usage(&parses3, &bytes3);
    assert_int_equal(parses3, parses0);
    assert_int_equal(bytes3, bytes0);
    char *cmd = xasprintf("rm -rf '%s/environments/copy'", tree);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

/* changed(): paths that may have changed, by suffix; every other path is vouched for */
typedef struct {
    const char *const *suffixes;
    size_t asked;
} changes;

static bool changed_by_suffix(const char *path, void *data)
{
    changes *c = data;
    c->asked++;
    for (size_t i = 0; c->suffixes[i]; i++) {
        size_t n = strlen(path), m = strlen(c->suffixes[i]);
        if (n >= m && strcmp(path + n - m, c->suffixes[i]) == 0)
            return true;
    }
    return false;
}

static void test_rebuild_costs_what_changed(void **state)
{
    (void)state;
    hiera_snapshot *first = snap_of_env("production", NULL, NULL, NULL);
    snapshot_counts c1;
    snapshot_counts_of((const snapshot *)first, &c1);
    /* common.yaml rewritten: a rebuild told that nothing changed takes prev's parse */
    write_tree("owt");
    static const char *none[] = {NULL};
    changes nothing = {none, 0};
    hiera_snapshot *blind = snap_of_env("production", first, changed_by_suffix, &nothing);
    snapshot_counts c2;
    snapshot_counts_of((const snapshot *)blind, &c2);
    assert_int_equal(c2.looked, 0); /* nothing asked of the file system... */
    assert_int_equal(c2.parsed, 0); /* (the hiera.yaml files are compiled again, by the builder's cache) */
    assert_true(nothing.asked > 0);
    assert_int_equal(c2.files, c1.files);
    assert_string_equal(hv_str_ptr(held(blind, "environments/production/data/common.yaml", "common::key")), "one");
    /* told that common.yaml changed: that file read again, nothing else */
    static const char *common[] = {"/production/data/common.yaml", NULL};
    changes one = {common, 0};
    hiera_snapshot *told = snap_of_env("production", first, changed_by_suffix, &one);
    snapshot_counts c3;
    snapshot_counts_of((const snapshot *)told, &c3);
    assert_int_equal(c3.looked, 2); /* (its state in its folder, and the file read) */
    assert_string_equal(hv_str_ptr(held(told, "environments/production/data/common.yaml", "common::key")), "owt");
    assert_ptr_equal(held(told, "environments/production/data/nodes/web01.example.com.yaml", "node::key"),
                     held(first, "environments/production/data/nodes/web01.example.com.yaml", "node::key"));
    /* a file added in a folder: the folder is named (its entries changed) and the file with it */
    free(testutil_write_under(tree, "environments/production/data/roles/web/b.yaml", "role::b: new\n"));
    static const char *added[] = {"/roles/web", "/roles/web/b.yaml", NULL};
    changes add = {added, 0};
    hiera_snapshot *grown = snap_of_env("production", told, changed_by_suffix, &add);
    assert_string_equal(hv_str_ptr(held(grown, "environments/production/data/roles/web/b.yaml", "role::b")), "new");
    char *b = xasprintf("%s/environments/production/data/roles/web/b.yaml", tree);
    assert_int_equal(unlink(b), 0);
    free(b);
    hiera_snapshot_release(first);
    hiera_snapshot_release(blind);
    hiera_snapshot_release(told);
    hiera_snapshot_release(grown);
    write_tree("one");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmpl_match),
        cmocka_unit_test(test_what_is_read),
        cmocka_unit_test(test_views_answer_alike),
        cmocka_unit_test(test_threads_share_a_snapshot),
        cmocka_unit_test(test_reload_is_replacement),
        cmocka_unit_test(test_same_bytes_parsed_once),
        cmocka_unit_test(test_rebuild_costs_what_changed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
