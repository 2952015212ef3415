/* Unit tests for the facts sources (src/facts/factsrc.c, include/hiera_fleet.h) and the parts of
 * the PuppetDB client that need no server (src/facts/puppetdb.c): PuppetDB's answers split into their
 * elements as they arrive, whatever the chunks (checked against parsing the whole answer, with
 * random cuts), the nesting limit Puppet's JSON.parse has, puppetdb.conf read as the terminus'
 * Config.load reads it, server URLs, CGI.escape, and facts folders (listing, a node with two
 * files, Puppet's facts cache, a reader and a pager over a list), Puppet's facts routes, and
 * warnings handed to the caller's callback. The module's files are compiled in here (for their
 * static parts). */
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

/* one node's facts from a source: its status, the facts (base or given) and the message */
static hiera_status get(hiera_facts_source *s, const char *name, hiera_node_facts *nf, char **msg)
{
    hiera_error err = {0};
    hiera_status st = hiera_facts_source_get(s, name, NULL, nf, &err);
    *msg = err.message;
    err.message = NULL;
    hiera_error_clear(&err);
    return st;
}

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
    free(write_file("facts/half.json", "{\"hostname\": \"h\"}"));
    char *sub = xjoin(dir, "/folder.yaml", NULL);
    assert_int_equal(mkdir(sub, 0755), 0);
    free(sub);
    hiera_error err = {0};
    hiera_facts_source *s = hiera_facts_source_dir(dir, &err);
    assert_non_null(s);
    char *described = xjoin("the facts folder ", dir, NULL);
    assert_string_equal(hiera_facts_source_describe(s), described);
    free(described);
    /* before a listing, a node is found by its files; after it, from the listing */
    for (int listed = 0; listed < 2; listed++) {
        hiera_node_facts nf;
        char *msg = NULL;
        assert_int_equal(get(s, "a", &nf, &msg), HIERA_ERROR);
        assert_null(nf.base);
        assert_null(nf.given);
        /* (the two files in byte order of their paths) */
        char *want = xasprintf("more than one facts file for this node: %s/a.json and %s/a.yaml", dir, dir);
        assert_string_equal(msg, want);
        free(want);
        free(msg);
        assert_int_equal(get(s, "b", &nf, &msg), HIERA_OK);
        assert_non_null(nf.base); /* a file of Puppet's facts cache: stored facts */
        assert_null(nf.given);
        assert_string_equal(nf.node, "b");
        assert_value_json((hv *)nf.base, "{\"role\": \"cache\"}");
        hiera_node_facts_clear(&nf);
        assert_int_equal(get(s, "../facts/b", &nf, &msg), HIERA_NOT_FOUND);
        assert_string_equal(msg, "No facts available for target node: ../facts/b");
        free(msg);
        /* puppet lookup --facts's rule for the four facts that make the trusted information */
        assert_int_equal(get(s, "half", &nf, &msg), HIERA_ERROR);
        assert_non_null(strstr(msg, "they must all be overridden"));
        free(msg);
        if (!listed) {
            hiera_value *names = hiera_facts_source_nodes(s, &err);
            assert_non_null(names);
            assert_value_json((hv *)names, "[\"a\", \"b\", \"empty\", \"half\", \"list\"]");
            hiera_value_decref(names);
        }
    }
    /* a reader over a list, in its order, with a node the folder does not have */
    const char *list[] = {"list", "b", "zz", "empty"};
    hiera_facts_reader *r = hiera_facts_reader_new(s, list, 4, NULL);
    hiera_node_facts nf;
    hiera_status st;
    assert_true(hiera_facts_reader_next(r, &st, &nf, &err));
    assert_int_equal(st, HIERA_ERROR);
    assert_non_null(strstr(err.message, "Incorrectly formatted data"));
    hiera_error_clear(&err);
    assert_true(hiera_facts_reader_next(r, &st, &nf, &err));
    assert_int_equal(st, HIERA_OK);
    assert_non_null(nf.base);
    hiera_node_facts_clear(&nf);
    assert_true(hiera_facts_reader_next(r, &st, &nf, &err));
    assert_int_equal(st, HIERA_NOT_FOUND);
    assert_string_equal(err.message, "No facts available for target node: zz");
    hiera_error_clear(&err);
    assert_true(hiera_facts_reader_next(r, &st, &nf, &err));
    assert_int_equal(st, HIERA_NOT_FOUND);
    assert_string_equal(err.message, "No facts available for target node: empty");
    hiera_error_clear(&err);
    assert_false(hiera_facts_reader_next(r, &st, &nf, &err));
    hiera_facts_reader_free(r);
    /* a pager: any order, from threads */
    hiera_facts_pager *p = hiera_facts_pager_new(s, list, 4, NULL);
    assert_int_equal(hiera_facts_pager_get(p, 1, &nf, &err), HIERA_OK);
    hiera_node_facts_clear(&nf);
    assert_int_equal(hiera_facts_pager_get(p, 2, &nf, &err), HIERA_NOT_FOUND);
    hiera_error_clear(&err);
    assert_int_equal(hiera_facts_pager_get(p, 9, &nf, &err), HIERA_ERROR);
    hiera_error_clear(&err);
    hiera_facts_pager_free(p);
    hiera_facts_source_free(s);
    /* a folder that is not one */
    assert_null(hiera_facts_source_dir("/nonexistent/facts", &err));
    assert_non_null(strstr(err.message, "cannot read the facts folder /nonexistent/facts"));
    hiera_error_clear(&err);
    free(dir);
}

/* Puppet's settings with these command-line settings (puppet.conf read from the confdir) */
static hiera_settings *settings_with(const hiera_setting *cli, size_t n)
{
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = n;
    hiera_error err = {0};
    hiera_settings *hs = hiera_settings_load(&so, &err);
    hiera_error_clear(&err);
    return hs;
}

typedef struct {
    int n;
    char *last;
} diags_seen;

static void count_diag(const hiera_diagnostic *d, void *data)
{
    diags_seen *seen = data;
    seen->n++;
    free(seen->last);
    seen->last = xasprintf("%s %s", d->code, d->message);
}

static void test_route(void **state)
{
    (void)state;
    char *routes = write_file("routes.yaml", "server:\n  facts: {terminus: puppetdb}\nmaster: {}\nlookup:\n  facts:\n    cache: :store_configs\n");
    hiera_setting a[] = {{"confdir", scratch}, {"route_file", routes}};
    hiera_settings *hs = settings_with(a, 2);
    assert_non_null(hs);
    puppet_facts_settings ps;
    herr e = {0};
    assert_true(puppet_facts_settings_get(hs, &ps, &e));
    assert_string_equal(ps.facts_terminus, "yaml"); /* the lookup application's default, not facter */
    facts_route r;
    diags_seen seen = {0};
    assert_true(facts_route_get(&ps, &r, count_diag, &seen, &e));
    assert_string_equal(r.terminus, "yaml");
    assert_string_equal(r.cache, "puppetdb"); /* store_configs: storeconfigs_backend */
    assert_true(facts_route_uses_puppetdb(&r));
    /* both server and master routes: Puppet's warning */
    assert_int_equal(seen.n, 1);
    assert_non_null(strstr(seen.last, "facts-route-both Route file"));
    free(seen.last);
    facts_route_free(&r);
    puppet_facts_settings_free(&ps);
    hiera_settings_free(hs);
    /* puppet.conf's [server] section counts for puppet lookup, [agent] does not */
    free(write_file("puppet.conf", "[agent]\nfacts_terminus = json\n[server]\nstoreconfigs = true\n"));
    hiera_setting b[] = {{"confdir", scratch}, {"route_file", "/nonexistent/routes.yaml"}, {"ssldir", "/x/ssl"},
                         {"certname", "me.example.com"}};
    hs = settings_with(b, 4);
    assert_non_null(hs);
    assert_true(puppet_facts_settings_get(hs, &ps, &e));
    assert_string_equal(ps.facts_terminus, "yaml");
    assert_true(ps.storeconfigs);
    assert_string_equal(ps.localcacert, "/x/ssl/certs/ca.pem");
    assert_string_equal(ps.hostcrl, "/x/ssl/crl.pem");
    assert_null(ps.hostcert);
    ssl_paths(&ps);
    assert_string_equal(ps.hostcert, "/x/ssl/certs/me.example.com.pem");
    assert_string_equal(ps.hostprivkey, "/x/ssl/private_keys/me.example.com.pem");
    assert_true(facts_route_get(&ps, &r, NULL, NULL, &e));
    assert_string_equal(r.terminus, "yaml");
    assert_string_equal(r.cache, "puppetdb");
    facts_route_free(&r);
    puppet_facts_settings_free(&ps);
    hiera_settings_free(hs);
    free(write_file("puppet.conf", "[main]\nfacts_terminus = puppetdb\ncertificate_revocation = false\n"));
    hs = settings_with(b, 4);
    assert_true(puppet_facts_settings_get(hs, &ps, &e));
    assert_string_equal(ps.facts_terminus, "puppetdb");
    assert_false(ps.crl_check);
    puppet_facts_settings_free(&ps);
    hiera_settings_free(hs);
    /* a routes.yaml that cannot be read: Puppet's own set-up error */
    free(write_file("routes.yaml", "lookup:\n  facts:\n    terminus: nosuch\n"));
    hs = settings_with(a, 2);
    assert_true(puppet_facts_settings_get(hs, &ps, &e));
    assert_false(facts_route_get(&ps, &r, NULL, NULL, &e));
    assert_int_equal(e.kind, HERR_PUPPET);
    assert_non_null(strstr(e.msg, "Could not configure routes from"));
    assert_non_null(strstr(e.msg, "Could not find terminus nosuch for indirection facts"));
    herr_clear(&e);
    puppet_facts_settings_free(&ps);
    hiera_settings_free(hs);
    free(write_file("puppet.conf", ""));
    free(routes);
}

/* The retired settings of puppetdb.conf are a warning for the caller's callback (the library
 * never prints), with the PuppetDB handle of the public API. */
static void test_public_puppetdb(void **state)
{
    (void)state;
    char *conf = write_file("puppetdb.conf", "[main]\nserver = old\nserver_urls = https://z:2,https://y:3\n");
    diags_seen seen = {0};
    hiera_puppetdb_options o = HIERA_PUPPETDB_OPTIONS_INIT;
    o.conf_file = conf;
    o.diagnostics = count_diag;
    o.diagnostics_data = &seen;
    hiera_error err = {0};
    hiera_puppetdb *db = hiera_puppetdb_open(&o, &err);
    assert_non_null(db);
    assert_string_equal(hiera_puppetdb_servers(db), "https://z:2, https://y:3");
    assert_int_equal(seen.n, 1);
    assert_non_null(strstr(seen.last, "puppetdb-conf Setting 'server = old' is retired"));
    hiera_puppetdb_close(db);
    free(seen.last);
    /* options the library refuses */
    o.cert = "/x/cert.pem";
    assert_null(hiera_puppetdb_open(&o, &err));
    assert_string_equal(err.message, "--cert and --key go together");
    hiera_error_clear(&err);
    o.cert = NULL;
    o.urls = "ftp://x";
    assert_null(hiera_puppetdb_open(&o, &err));
    assert_non_null(err.message);
    hiera_error_clear(&err);
    /* a facts source over it */
    o.urls = "http://127.0.0.1:9";
    o.diagnostics = NULL;
    hiera_facts_source *s = hiera_facts_source_puppetdb(&o, &err);
    assert_non_null(s);
    assert_string_equal(hiera_facts_source_describe(s), "PuppetDB at http://127.0.0.1:9");
    hiera_facts_source_free(s);
    free(conf);
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
        cmocka_unit_test(test_public_puppetdb),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
