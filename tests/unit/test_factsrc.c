/* Unit tests for the facts sources of the hiera command (src/cli/factsrc.c) and the parts of its
 * PuppetDB client that need no server (src/cli/puppetdb.c): PuppetDB's answers split into their
 * elements as they arrive, whatever the chunks (checked against parsing the whole answer, with
 * random cuts), the nesting limit Puppet's JSON.parse has, puppetdb.conf read as the terminus'
 * Config.load reads it, server URLs, CGI.escape, and facts folders (listing, a node with two
 * files, Puppet's facts cache, a reader over a list). The command's files are compiled in here
 * (they are not part of libhiera). */
#include "testutil.h"

#include "../../src/facts/curl_lib.c"
#include "../../src/facts/puppetdb.c"
#include "../../src/facts/factsrc.c"

#include <unistd.h>

/* ------------------------------------------------------------------ the answer splitter */

typedef struct {
    sbuf got; /* each element as hjson_debug, one a line */
    int resets;
} rows_seen;

static int collect(hiera_value *row, void *data, char **stop)
{
    (void)stop;
    rows_seen *r = data;
    char *t = hjson_debug((hv *)row);
    sb_addf(&r->got, "%s\n", t);
    free(t);
    return 0;
}

/* feeds text in random pieces; returns the final state and fills r */
static int feed_random(const char *text, unsigned seed, rows_seen *r, char **error)
{
    jstream js = {0};
    js.source = "test";
    js.row = collect;
    js.data = r;
    js_reset(&js);
    size_t n = strlen(text), i = 0;
    srand(seed);
    while (i < n && js.state != JS_FAILED) {
        size_t step = seed == 0 ? n : (size_t)(rand() % 9) + 1;
        if (step > n - i)
            step = n - i;
        js_feed(&js, text + i, step);
        i += step;
    }
    int st = js.state;
    *error = js.error ? xstrdup(js.error) : NULL;
    sb_free(&js.elem);
    free(js.error);
    return st;
}

static void test_split_matches_whole_parse(void **state)
{
    (void)state;
    static const char *answers[] = {
        "[]",
        "  [ ]  ",
        "[{\"certname\": \"a\", \"name\": \"os\", \"value\": {\"family\": \"Debian\", \"x\": [1, 2, {\"y\": null}]}}]",
        "[{\"s\": \"a ] b } c [ { \\\" \\\\\"}, {\"t\": \"\\u00e9\\u2603\\n\\\\\\\"]\"},\n {}]",
        "[1, -2.5e3, 12345678901234567890, true, false, null, \"str]ing\", \"\", [], {}]",
        "[\n  {\n    \"deep\": [[[[[\"x\"]]]]]\n  },\n  \"tail\"\n]\n",
        "[\"a\",\"b\",\"c\"]",
        "[ 1 ,2, 3 ]",
    };
    for (size_t a = 0; a < sizeof answers / sizeof *answers; a++) {
        /* the expectation: the whole answer parsed, each element on a line */
        herr e = {0};
        hv *whole = hjson_parse(answers[a], strlen(answers[a]), "whole", &e);
        assert_non_null(whole);
        sbuf want = {0};
        for (size_t i = 0; i < hv_array_len(whole); i++) {
            char *t = hjson_debug(hv_array_get(whole, i));
            sb_addf(&want, "%s\n", t);
            free(t);
        }
        hv_decref(whole);
        for (unsigned seed = 0; seed < 60; seed++) {
            rows_seen r = {0};
            char *err = NULL;
            int st = feed_random(answers[a], seed, &r, &err);
            if (st != JS_DONE || strcmp(sb_str(&r.got), sb_str(&want)) != 0)
                print_error("answer %zu seed %u: state %d (%s)\n  want %s\n  got  %s\n", a, seed, st, err ? err : "",
                            sb_str(&want), sb_str(&r.got));
            assert_int_equal(st, JS_DONE);
            assert_string_equal(sb_str(&r.got), sb_str(&want));
            sb_free(&r.got);
            free(err);
        }
        sb_free(&want);
    }
}

static void test_split_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int state;
        const char *message; /* a part of it, or NULL */
    } bad[] = {
        {"{\"error\": \"x\"}", JS_FAILED, "is not a JSON array"},
        {"[1,,2]", JS_FAILED, "is not a JSON array"},
        {"[1 2]", JS_FAILED, "is not a JSON array"},
        {"[1] x", JS_FAILED, "is not a JSON array"},
        {"[,1]", JS_FAILED, "is not a JSON array"},
        {"[1,]", JS_FAILED, "is not a JSON array"},
        {"[1}", JS_FAILED, "is not a JSON array"},
        {"[{\"a\": }]", JS_FAILED, "unexpected token"},
        {"[tru]", JS_FAILED, "unexpected token"},
        {"[", JS_BEFORE_ELEMENT, NULL},
        {"[{\"a\": [1, 2]", JS_ELEMENT, NULL},
        {"[1, 2", JS_ELEMENT, NULL},
        {"", JS_START, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (unsigned seed = 0; seed < 20; seed++) {
            rows_seen r = {0};
            char *err = NULL;
            int st = feed_random(bad[i].text, seed, &r, &err);
            if (st != bad[i].state)
                print_error("'%s' seed %u: state %d, want %d (%s)\n", bad[i].text, seed, st, bad[i].state, err ? err : "");
            assert_int_equal(st, bad[i].state);
            if (bad[i].message) {
                assert_non_null(err);
                assert_non_null(strstr(err, bad[i].message));
            }
            sb_free(&r.got);
            free(err);
        }
    }
}

/* Ruby's JSON.parse refuses the 101st level, counted from the answer's own array */
static void test_split_nesting(void **state)
{
    (void)state;
    for (int levels = 99; levels <= 100; levels++) {
        sbuf t = {0};
        sb_addc(&t, '[');
        for (int i = 0; i < levels; i++)
            sb_addc(&t, '[');
        sb_adds(&t, "1");
        for (int i = 0; i < levels; i++)
            sb_addc(&t, ']');
        sb_addc(&t, ']');
        rows_seen r = {0};
        char *err = NULL;
        int st = feed_random(sb_str(&t), 3, &r, &err);
        /* 1 + levels containers: 100 are allowed */
        assert_int_equal(st, levels + 1 <= 100 ? JS_DONE : JS_FAILED);
        if (levels + 1 > 100)
            assert_non_null(strstr(err, "nesting of 101 is too deep"));
        /* and the whole text as Ruby's parser sees it */
        herr e = {0};
        hv *v = hjson_parse(sb_str(&t), t.len, "whole", &e);
        assert_true((v != NULL) == (levels + 1 <= 100));
        hv_decref(v);
        herr_clear(&e);
        sb_free(&t);
        sb_free(&r.got);
        free(err);
    }
}

/* ------------------------------------------------------------------ puppetdb.conf and URLs */

static char *scratch;

static char *write_file(const char *name, const char *text)
{
    char *path = xjoin(scratch, "/", name, NULL);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static pdb *open_conf(const char *text, char **err)
{
    char *path = write_file("puppetdb.conf", text);
    pdb_config c = {.conf_file = path};
    pdb *db = pdb_open(&c, err);
    free(path);
    return db;
}

static void test_conf(void **state)
{
    (void)state;
    char *err = NULL;
    pdb *db = open_conf("# comment\n; another\n\n[main]\nserver_urls = https://a.example.com:8081, https://b.example.com/ ,"
                        "https://[::1]:9\nserver_url_timeout = 7s\nsticky_read_failover = true\n[other]\nserver_urls = x\n",
                        &err);
    assert_non_null(db);
    assert_string_equal(pdb_servers(db), "https://a.example.com:8081, https://b.example.com, https://[::1]:9");
    assert_int_equal(db->timeout, 7);
    assert_true(db->sticky);
    assert_true(db->send_client_cert);
    assert_int_equal(db->servers[1].port, 443);
    assert_string_equal(db->servers[2].host, "::1");
    assert_int_equal(db->servers[2].port, 9);
    pdb_close(db);
    /* a missing file: Puppet's default */
    pdb_config c = {.conf_file = "/nonexistent/puppetdb.conf"};
    db = pdb_open(&c, &err);
    assert_non_null(db);
    assert_string_equal(pdb_servers(db), "https://puppetdb:8081");
    assert_int_equal(db->timeout, 30);
    pdb_close(db);
    /* verify_client_certificate = false: no client certificate sent */
    db = open_conf("[main ]\nserver_urls = https://x:1\nverify_client_certificate = false\n", &err);
    assert_non_null(db);
    assert_false(db->send_client_cert);
    pdb_close(db);
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"[main]\nserver_urls = http://x:8080\n", "PuppetDB 'server_urls' must be https, found 'http://x:8080'"},
        {"[main]\nserver_urls = https://x:8081/pdb\n", "PuppetDB 'server_urls' cannot contain URL paths, found 'https://x:8081/pdb'"},
        {"[main]\nserver_urls = https://x:99999\n", "bad port"},
        {"[main]\nserver_urls = https://x,\n", "must be https, found ''"},
        {"server_urls = https://x\n", "is illegal outside of section in PuppetDB config"},
        {"[main]\nthis is not a setting\n", "Unparseable line 'this is not a setting' in PuppetDB config"},
        {"[ main]\n", "Unparseable line '[ main]'"},
        {"[main]\nsoft_write_failure = maybe\n", "invalid value for Boolean: \"maybe\""},
        {"[main]\nsubmit_only_server_urls = http://y\n", "must be https, found 'http://y'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = NULL;
        db = open_conf(bad[i].text, &err);
        if (db || !err || !strstr(err, bad[i].message))
            print_error("'%s': got '%s'\n", bad[i].text, err ? err : "(accepted)");
        assert_null(db);
        assert_non_null(strstr(err, bad[i].message));
        free(err);
    }
    /* retired settings: a warning, the line ignored */
    db = open_conf("[main]\nserver = old\nport = 1\nserver_urls = https://z:2\n", &err);
    assert_non_null(db);
    assert_string_equal(pdb_servers(db), "https://z:2");
    pdb_close(db);
}

static void test_urls_and_escapes(void **state)
{
    (void)state;
    char *err = NULL;
    pdb_config c = {.urls = "http://localhost:8080, https://pdb.example.com:8081/prefix/"};
    pdb *db = pdb_open(&c, &err);
    assert_non_null(db);
    assert_string_equal(pdb_servers(db), "http://localhost:8080, https://pdb.example.com:8081/prefix");
    assert_int_equal(db->servers[0].port, 8080);
    pdb_close(db);
    static const char *bad[] = {"ftp://x", "localhost:8080", "http://", "http://x:1?q=1", "http://x:port"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pdb_config b = {.urls = bad[i]};
        err = NULL;
        db = pdb_open(&b, &err);
        assert_null(db);
        assert_non_null(err);
        free(err);
    }
    char *e = pdb_cgi_escape("web01.example.com");
    assert_string_equal(e, "web01.example.com");
    free(e);
    e = pdb_cgi_escape("a b/c+d%e~f_g-h\xc3\xa9");
    assert_string_equal(e, "a+b%2Fc%2Bd%25e~f_g-h%C3%A9");
    free(e);
    assert_int_equal(ruby_to_i(" 42abc"), 42);
    assert_int_equal(ruby_to_i("-3"), -3);
    assert_int_equal(ruby_to_i("1_000"), 1000);
    assert_int_equal(ruby_to_i("x"), 0);
}

/* ------------------------------------------------------------------ facts folders */

static void test_folder(void **state)
{
    (void)state;
    char *dir = xjoin(scratch, "/facts", NULL);
    assert_int_equal(mkdir(dir, 0755), 0);
    free(write_file("facts/a.yaml", "role: web\n"));
    free(write_file("facts/a.json", "{\"role\": \"db\"}"));
    free(write_file("facts/.hidden.yaml", "x: 1\n"));
    free(write_file("facts/b.yml", "--- !ruby/object:Puppet::Node::Facts\nname: b\nvalues:\n  role: cache\n  _timestamp: x\n"));
    free(write_file("facts/c.txt", "x: 1\n"));
    free(write_file("facts/empty.json", "{}"));
    free(write_file("facts/list.json", "[1]"));
    char *sub = xjoin(dir, "/folder.yaml", NULL);
    assert_int_equal(mkdir(sub, 0755), 0);
    free(sub);
    factsrc *s = factsrc_open_dir(dir);
    assert_non_null(s);
    char **names = NULL, *err = NULL;
    size_t n = 0;
    assert_true(factsrc_list(s, &names, &n, &err));
    assert_int_equal(n, 4);
    assert_string_equal(names[0], "a");
    assert_string_equal(names[1], "b");
    assert_string_equal(names[2], "empty");
    assert_string_equal(names[3], "list");
    factsrc_node fn;
    factsrc_get(s, "a", NULL, &fn);
    assert_null(fn.facts);
    assert_non_null(strstr(fn.msg, "more than one facts file for this node"));
    factsrc_node_free(&fn);
    factsrc_get(s, "b", NULL, &fn);
    assert_non_null(fn.facts);
    assert_true(fn.stored);
    assert_value_json((hv *)fn.facts, "{\"role\": \"cache\"}");
    factsrc_node_free(&fn);
    factsrc_get(s, "../facts/b", NULL, &fn);
    assert_null(fn.facts);
    factsrc_node_free(&fn);
    /* a reader over a list, in its order, with a node the folder does not have */
    const char *list[] = {"list", "b", "zz", "empty"};
    factsrc_reader *r = factsrc_reader_new(s, list, 4, NULL);
    assert_true(factsrc_reader_next(r, &fn));
    assert_non_null(strstr(fn.msg, "Incorrectly formatted data"));
    factsrc_node_free(&fn);
    assert_true(factsrc_reader_next(r, &fn));
    assert_non_null(fn.facts);
    factsrc_node_free(&fn);
    assert_true(factsrc_reader_next(r, &fn));
    assert_string_equal(fn.msg, "No facts available for target node: zz");
    factsrc_node_free(&fn);
    assert_true(factsrc_reader_next(r, &fn));
    assert_string_equal(fn.msg, "No facts available for target node: empty");
    factsrc_node_free(&fn);
    assert_false(factsrc_reader_next(r, &fn));
    factsrc_reader_free(r);
    factsrc_names_free(names, n);
    factsrc_free(s);
    free(dir);
}

static void test_route(void **state)
{
    (void)state;
    char *routes = write_file("routes.yaml", "server:\n  facts: {terminus: puppetdb}\nlookup:\n  facts:\n    cache: :store_configs\n");
    cli_puppet_settings_args a = {.confdir = scratch, .route_file = routes};
    hiera_settings *hs = cli_puppet_settings_load(&a);
    assert_non_null(hs);
    cli_puppet_settings ps;
    cli_puppet_settings_get(hs, &ps);
    assert_string_equal(ps.facts_terminus, "yaml"); /* the lookup application's default, not facter */
    cli_facts_route r;
    assert_true(cli_facts_route_get(&ps, &r));
    assert_string_equal(r.terminus, "yaml");
    assert_string_equal(r.cache, "puppetdb"); /* store_configs: storeconfigs_backend */
    assert_true(cli_facts_route_uses_puppetdb(&r));
    cli_facts_route_free(&r);
    cli_puppet_settings_free(&ps);
    hiera_settings_free(hs);
    /* puppet.conf's [server] section counts for puppet lookup, [agent] does not */
    free(write_file("puppet.conf", "[agent]\nfacts_terminus = json\n[server]\nstoreconfigs = true\n"));
    cli_puppet_settings_args b = {.confdir = scratch, .route_file = "/nonexistent/routes.yaml",
                                  .ssldir = "/x/ssl", .certname = "me.example.com"};
    hs = cli_puppet_settings_load(&b);
    assert_non_null(hs);
    cli_puppet_settings_get(hs, &ps);
    assert_string_equal(ps.facts_terminus, "yaml");
    assert_true(ps.storeconfigs);
    assert_string_equal(ps.localcacert, "/x/ssl/certs/ca.pem");
    assert_string_equal(ps.hostcrl, "/x/ssl/crl.pem");
    assert_null(ps.hostcert);
    ssl_paths(&ps);
    assert_string_equal(ps.hostcert, "/x/ssl/certs/me.example.com.pem");
    assert_string_equal(ps.hostprivkey, "/x/ssl/private_keys/me.example.com.pem");
    assert_true(cli_facts_route_get(&ps, &r));
    assert_string_equal(r.terminus, "yaml");
    assert_string_equal(r.cache, "puppetdb");
    cli_facts_route_free(&r);
    cli_puppet_settings_free(&ps);
    hiera_settings_free(hs);
    free(write_file("puppet.conf", "[main]\nfacts_terminus = puppetdb\ncertificate_revocation = false\n"));
    hs = cli_puppet_settings_load(&b);
    cli_puppet_settings_get(hs, &ps);
    assert_string_equal(ps.facts_terminus, "puppetdb");
    assert_false(ps.crl_check);
    cli_puppet_settings_free(&ps);
    hiera_settings_free(hs);
    free(routes);
}

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/hiera-test-factsrc-XXXXXX";
    scratch = xstrdup(mkdtemp(tmpl));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = xjoin("rm -rf '", scratch, "'", NULL);
    int rc = system(cmd);
    (void)rc;
    free(cmd);
    free(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_matches_whole_parse),
        cmocka_unit_test(test_split_refuses),
        cmocka_unit_test(test_split_nesting),
        cmocka_unit_test(test_conf),
        cmocka_unit_test(test_urls_and_escapes),
        cmocka_unit_test(test_folder),
        cmocka_unit_test(test_route),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
