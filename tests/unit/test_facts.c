/* Facts as Puppet 7.23 reads and hands them over (src/api/facts.c, src/formats/psych.c): the
 * YAML facts cache ($vardir/yaml/facts/NODE.yaml, !ruby/object:Puppet::Node::Facts), --facts
 * files (no Ruby class at all), Puppet::Node::Facts#sanitize, and $trusted. The messages are
 * Puppet's (recorded in tests/cases/facts-cache and trusted). */
#include "testutil.h"

#include "hiera.h"
#include "hiera_fleet.h"

#include "api/facts.h"
#include "formats/psych.h"

#include <unistd.h>

static char root[64];

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(root, "factsunit");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

static char *cache_file(const char *node, const char *text)
{
    char *rel = xasprintf("yaml/facts/%s.yaml", node);
    char *p = testutil_write_under(root, rel, text);
    free(rel);
    return p;
}

static char *yamldir(void) { return xasprintf("%s/yaml", root); }

/* ------------------------------------------------------------------ the YAML reader */

static hv *parse_cache(const char *text, bool plain_too, bool *object, herr *e)
{
    return yaml_parse_facts_cache(text, strlen(text), "f.yaml", plain_too, object, e);
}

static void test_reader_facts_tag(void **state)
{
    (void)state;
    herr e = {0};
    bool object = false;
    hv *v = parse_cache("--- !ruby/object:Puppet::Node::Facts\nname: n\nvalues:\n  a: :sym\n  b: !ruby/sym s2\n"
                        "timestamp: '2024-01-01T10:00:00.1+00:00'\n",
                        false, &object, &e);
    assert_non_null(v);
    assert_true(object);
    assert_true(hv_is(hv_hash_gets(hv_hash_gets(v, "values"), "a"), HV_SYMBOL));
    assert_true(hv_is(hv_hash_gets(hv_hash_gets(v, "values"), "b"), HV_SYMBOL));
    hv_decref(v);

    /* a plain document is read (Puppet's load_file permits it; what follows refuses it) */
    v = parse_cache("name: n\nvalues: {a: 1}\n", false, &object, &e);
    assert_non_null(v);
    assert_false(object);
    hv_decref(v);

    /* the tag anywhere but on the document */
    v = parse_cache("--- !ruby/object:Puppet::Node::Facts\nvalues:\n  x: !ruby/object:Puppet::Node::Facts\n    a: 1\n", false,
                    &object, &e);
    assert_null(v);
    assert_non_null(strstr(e.msg, "a Puppet::Node::Facts object inside the facts is not supported"));
    herr_clear(&e);

    /* other Ruby classes stay refused, with Puppet's message */
    v = parse_cache("--- !ruby/object:Puppet::Node::Facts\nvalues:\n  t: 2024-01-01 10:00:00.5 +00:00\n", false, &object, &e);
    assert_null(v);
    assert_string_equal(e.msg, "(f.yaml): Tried to load unspecified class: Time");
    herr_clear(&e);
    v = parse_cache("--- !ruby/object:Puppet::Node\nname: n\n", false, &object, &e);
    assert_null(v);
    assert_string_equal(e.msg, "(f.yaml): Tried to load unspecified class: Puppet::Node");
    herr_clear(&e);

    /* on a scalar the tag is ignored, as Psych ignores it */
    v = parse_cache("--- !ruby/object:Puppet::Node::Facts text\n", false, &object, &e);
    assert_non_null(v);
    assert_false(object);
    assert_true(hv_is(v, HV_STRING));
    hv_decref(v);
}

static void test_reader_plain_too(void **state)
{
    (void)state;
    herr e = {0};
    bool object = true;
    /* not a facts object: read as a --facts file, which permits no Symbol */
    hv *v = parse_cache("role: :web\n", true, &object, &e);
    assert_null(v);
    assert_false(object);
    assert_string_equal(e.msg, "(f.yaml): Tried to load unspecified class: Symbol");
    herr_clear(&e);
    v = parse_cache("role: web\nx: !ruby/object:Puppet::Node::Facts\n  a: 1\n", true, &object, &e);
    assert_null(v);
    assert_string_equal(e.msg, "(f.yaml): Tried to load unspecified class: Puppet::Node::Facts");
    herr_clear(&e);
    v = parse_cache("--- !ruby/object:Puppet::Node::Facts\nvalues:\n  a: :web\n", true, &object, &e);
    assert_non_null(v);
    assert_true(object);
    hv_decref(v);
}

static void test_reader_modes_elsewhere(void **state)
{
    (void)state;
    herr e = {0};
    /* data files refuse the facts tag exactly as before; a --facts file refuses Symbols */
    const char *doc = "--- !ruby/object:Puppet::Node::Facts\nvalues: {a: 1}\n";
    assert_null(yaml_parse(doc, strlen(doc), "d.yaml", YAML_PUPPET, &e));
    assert_string_equal(e.msg, "(d.yaml): Tried to load unspecified class: Puppet::Node::Facts");
    herr_clear(&e);
    assert_null(yaml_parse(doc, strlen(doc), "d.yaml", YAML_HIERA3, &e));
    assert_string_equal(e.msg, "Tried to load unspecified class: Puppet::Node::Facts");
    herr_clear(&e);
    const char *sym = "a: :x\n";
    hv *v = yaml_parse(sym, strlen(sym), "d.yaml", YAML_PUPPET, &e);
    assert_true(hv_is(hv_hash_gets(v, "a"), HV_SYMBOL));
    hv_decref(v);
    static const char *refused[] = {"a: :x\n", "a: !ruby/sym x\n", "a: !ruby/symbol x\n", ":a: 1\n",
                                    "a: !ruby/class Symbol\n", "a: !str:Symbol\n  str: x\n"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        v = yaml_parse(refused[i], strlen(refused[i]), "f.yaml", YAML_PUPPET_FACTS, &e);
        if (v)
            print_error("accepted: %s", refused[i]);
        assert_null(v);
        assert_string_equal(e.msg, "(f.yaml): Tried to load unspecified class: Symbol");
        herr_clear(&e);
    }
}

/* ------------------------------------------------------------------ the facts cache */

static void test_cached(void **state)
{
    (void)state;
    char *yd = yamldir();
    hiera_value *f = NULL;
    hiera_error err = {0};
    free(cache_file("web01", "--- !ruby/object:Puppet::Node::Facts\nname: web01\nvalues:\n  role: web\n"
                             "  _timestamp: '2015-01-01 00:00:00 +0000'\n  nothing:\n"
                             "timestamp: '2024-01-01T10:00:00.123456789+00:00'\n"
                             "expiration: '2024-01-01T10:30:00.123456789+00:00'\n"));
    assert_int_equal(hiera_facts_cached(yd, "web01", &f, &err), HIERA_OK);
    assert_value_json(f, "{\"role\": \"web\", \"nothing\": null}"); /* _timestamp dropped */
    hiera_value_decref(f);

    assert_int_equal(hiera_facts_cached(yd, "nosuch", &f, &err), HIERA_NOT_FOUND);
    assert_null(f);

    static const char *bad_names[] = {"../web01", "a/b", "a\\b", "C:x", "x\n..y", "..", "x\ny:"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        assert_int_equal(hiera_facts_cached(yd, bad_names[i], &f, &err), HIERA_ERROR);
        assert_string_equal(err.message, "invalid key");
        hiera_error_clear(&err);
    }
    /* names that only look odd are fine */
    assert_int_equal(hiera_facts_cached(yd, "web..01", &f, &err), HIERA_NOT_FOUND);
    assert_int_equal(hiera_facts_cached(yd, "xy:z", &f, &err), HIERA_NOT_FOUND);

    free(cache_file("novalues", "--- !ruby/object:Puppet::Node::Facts\nname: novalues\n"));
    assert_int_equal(hiera_facts_cached(yd, "novalues", &f, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "Could not parse YAML data for facts novalues: undefined method `delete' for nil:NilClass"));
    hiera_error_clear(&err);

    free(cache_file("time", "--- !ruby/object:Puppet::Node::Facts\nvalues: {}\ntimestamp: 2024-01-01 10:00:00 +00:00\n"));
    assert_int_equal(hiera_facts_cached(yd, "time", &f, &err), HIERA_ERROR);
    char *want = xasprintf("Could not parse YAML data for facts time: (%s/facts/time.yaml): Tried to load unspecified class: Time", yd);
    assert_string_equal(err.message, want);
    free(want);
    hiera_error_clear(&err);

    free(cache_file("plain", "name: plain\nvalues: {a: 1}\n"));
    assert_int_equal(hiera_facts_cached(yd, "plain", &f, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "does not hold a Puppet::Node::Facts"));
    hiera_error_clear(&err);

    free(cache_file("bom", "\xEF\xBB\xBF--- !ruby/object:Puppet::Node::Facts\nvalues: {role: bom}\n"));
    assert_int_equal(hiera_facts_cached(yd, "bom", &f, &err), HIERA_OK);
    assert_value_json(f, "{\"role\": \"bom\"}");
    hiera_value_decref(f);
    free(yd);
}

static void test_facts_load(void **state)
{
    (void)state;
    hiera_error err = {0};
    int kind = 0;
    char *cache = cache_file("either", "--- !ruby/object:Puppet::Node::Facts\nvalues:\n  role: :web\n");
    char *plain = testutil_write_under(root, "plain/either.yaml", "role: web\n");
    char *json = testutil_write_under(root, "plain/j.json", "{\"role\": \"json\"}");
    hiera_cache *c = hiera_cache_new();
    char *dc = xasprintf("%s/diskcache", root);
    assert_true(hiera_cache_use_disk(c, dc));
    for (int round = 0; round < 2; round++) { /* the second round comes from the disk cache */
        hiera_value *v = hiera_facts_load(c, cache, "either", HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
        assert_non_null(v);
        assert_int_equal(kind, HIERA_FACTS_CACHE);
        assert_true(hv_is(hv_hash_gets(v, "role"), HV_SYMBOL));
        hiera_value_decref(v);
        v = hiera_facts_load(c, plain, "either", HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
        assert_non_null(v);
        assert_int_equal(kind, HIERA_FACTS_FILE);
        hiera_value_decref(v);
        v = hiera_facts_load(c, json, "j", HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
        assert_non_null(v);
        assert_int_equal(kind, HIERA_FACTS_FILE);
        assert_value_json(v, "{\"role\": \"json\"}");
        hiera_value_decref(v);
    }
    /* a cache file where only --facts files are accepted, and the other way round */
    assert_null(hiera_facts_load(NULL, cache, "either", HIERA_FACTS_FILE, &kind, &err));
    assert_non_null(strstr(err.message, "Tried to load unspecified class: Puppet::Node::Facts"));
    hiera_error_clear(&err);
    assert_null(hiera_value_load_file(cache, &err));
    hiera_error_clear(&err);
    assert_null(hiera_facts_load(NULL, plain, "either", HIERA_FACTS_CACHE, &kind, &err));
    assert_non_null(strstr(err.message, "does not hold a Puppet::Node::Facts"));
    hiera_error_clear(&err);
    hiera_cache_free(c);
    free(dc);
    free(cache);
    free(plain);
    free(json);
}

/* ------------------------------------------------------------------ sanitize */

static void test_sanitize(void **state)
{
    (void)state;
    herr e = {0};
    hv *facts = hv_hash();
    hv_hash_sets(facts, "a", hv_undef());
    hv_hash_sets(facts, "s", hv_symbol("sym", 3));
    hv *nested = hv_hash();
    hv_hash_set(nested, hv_symbol("k", 1), hv_int(1));
    hv_hash_set(nested, hv_undef(), hv_int(2));
    hv_hash_sets(nested, "k", hv_str("dup")); /* becomes equal to :k: keeps its place, last value */
    hv *list = hv_array();
    hv_array_push(list, hv_symbol("c", 1));
    hv_array_push(list, hv_undef());
    hv_array_push(list, hv_float(2.5));
    hv_hash_sets(nested, "list", list);
    hv_hash_sets(facts, "nested", nested);
    hv_hash_sets(facts, "secret", hv_sensitive_new(hv_str("x")));
    hv_hash_sets(facts, "plain", hv_int(3));
    hv *clean = facts_sanitize(facts, &e);
    assert_non_null(clean);
    assert_value_json(clean, "{\"a\": \"\", \"s\": \"sym\", \"nested\": {\"k\": \"dup\", \"\": 2, \"list\": [\"c\", \"\", 2.5]},"
                             " \"secret\": \"Sensitive [value redacted]\", \"plain\": 3}");
    /* what needs nothing is shared, not copied */
    assert_ptr_equal(hv_hash_gets(clean, "plain"), hv_hash_gets(facts, "plain"));
    hv_decref(clean);
    /* a fact name that is a Symbol: the compiler's deep_freeze refuses it */
    hv_hash_set(facts, hv_symbol("role", 4), hv_str("web"));
    assert_null(facts_sanitize(facts, &e));
    assert_string_equal(e.msg, "Unsupported data type: 'Symbol'");
    herr_clear(&e);
    hv_decref(facts);
}

/* ------------------------------------------------------------------ $trusted */

static void test_trusted(void **state)
{
    (void)state;
    herr e = {0};
    hv *given = testutil_json("{\"certname\": \"web01.example.com\", \"extensions\": {\"pp_role\": \"web\"},"
                              " \"authenticated\": \"remote\", \"extra\": 1}");
    hv *t = trusted_complete(given, &e);
    assert_value_json(t, "{\"authenticated\": \"remote\", \"certname\": \"web01.example.com\", \"extensions\": "
                         "{\"pp_role\": \"web\"}, \"hostname\": \"web01\", \"domain\": \"example.com\", \"external\": {}, \"extra\": 1}");
    hv_decref(t);
    hv_decref(given);
    given = testutil_json("{\"authenticated\": false, \"certname\": null, \"extensions\": {}}");
    t = trusted_complete(given, &e);
    assert_value_json(t, "{\"authenticated\": false, \"certname\": null, \"extensions\": {}, \"hostname\": null, \"domain\": null, \"external\": {}}");
    hv_decref(t);
    hv_decref(given);
    given = testutil_json("{\"authenticated\": \"local\", \"certname\": \"vm\", \"extensions\": {}, \"hostname\": \"own\"}");
    t = trusted_complete(given, &e);
    assert_value_json(t, "{\"authenticated\": \"local\", \"certname\": \"vm\", \"extensions\": {}, \"hostname\": \"own\", \"domain\": null, \"external\": {}}");
    hv_decref(t);
    hv_decref(given);
    static const char *bad[] = {"[1]", "{\"certname\": \"x\", \"extensions\": {}}",
                                "{\"authenticated\": true, \"certname\": \"x\", \"extensions\": {}}",
                                "{\"authenticated\": \"remote\", \"certname\": 1, \"extensions\": {}}",
                                "{\"authenticated\": \"remote\", \"certname\": \"x\", \"extensions\": []}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        given = testutil_json(bad[i]);
        assert_null(trusted_complete(given, &e));
        assert_non_null(e.msg);
        herr_clear(&e);
        hv_decref(given);
    }
    given = testutil_json("{\"authenticated\": \"remote\", \"certname\": \"x\", \"extensions\": {}}");
    hv_hash_sets((hv *)hv_hash_gets(given, "extensions"), "s", hv_symbol("y", 1));
    assert_null(trusted_complete(given, &e));
    assert_string_equal(e.msg, "Unsupported data type: 'Symbol'");
    herr_clear(&e);
    hv_decref(given);

    /* without one given: a full trusted fact as it is, else the local one from clientcert */
    hv *facts = testutil_json("{\"clientcert\": \"n1.example.com\", \"trusted\": {\"authenticated\": \"remote\","
                              " \"certname\": \"pdb\", \"extensions\": {\"a\": 1}}}");
    t = trusted_for(facts, NULL);
    assert_value_json(t, "{\"authenticated\": \"remote\", \"certname\": \"pdb\", \"extensions\": {\"a\": 1}}");
    hv_decref(t);
    hv_decref(facts);
    facts = testutil_json("{\"clientcert\": \"n1.example.com\", \"trusted\": {\"certname\": \"forged\", \"extensions\": {}}}");
    t = trusted_for(facts, NULL);
    assert_value_json(t, "{\"authenticated\": \"local\", \"certname\": \"n1.example.com\", \"extensions\": {},"
                         " \"hostname\": \"n1\", \"domain\": \"example.com\", \"external\": {}}");
    hv_decref(t);
    hv_decref(facts);
}

/* ------------------------------------------------------------------ through hiera_new */

static hiera_status lookup_with(const hiera_options *o, const char *key, hiera_value **v, hiera_error *err)
{
    hiera *h = hiera_new(o, err);
    if (!h)
        return HIERA_ERROR;
    hiera_status st = hiera_lookup_key(h, key, v, err);
    hiera_free(h);
    return st;
}

static void test_hiera_new(void **state)
{
    (void)state;
    free(testutil_write_under(root, "code/hiera.yaml", "version: 5\nhierarchy:\n  - {name: c, path: c.yaml}\n"));
    free(testutil_write_under(root, "code/data/c.yaml",
                              "role: \"%{facts.role}\"\nos: \"%{facts.os}\"\nall: \"%{facts}\"\n"
                              "pp_role: \"%{trusted.extensions.pp_role}\"\nhost: \"%{trusted.hostname}\"\n"));
    char *envs = xasprintf("%s/code/environments", root);
    mkdir(envs, 0755);
    free(envs);
    char *code = xasprintf("%s/code", root);
    char *env = xasprintf("%s/code/environments/production", root);
    mkdir(env, 0755);
    /* stored facts without domain, given facts over them: the facts rule is for the given ones */
    hv *base = testutil_json("{\"hostname\": \"h\", \"fqdn\": \"h\", \"clientcert\": \"h\", \"role\": \"base\", \"os\": \"linux\","
                             " \"nil\": null}");
    hv *given = testutil_json("{\"role\": \"given\"}");
    hiera_options o = {.size = sizeof o, .codedir = code, .facts = given, .base_facts = base};
    hiera_value *v = NULL;
    hiera_error err = {0};
    assert_int_equal(lookup_with(&o, "role", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "given");
    hiera_value_decref(v);
    assert_int_equal(lookup_with(&o, "os", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "linux");
    hiera_value_decref(v);
    assert_int_equal(lookup_with(&o, "all", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v),
                        "{\"hostname\"=>\"h\", \"fqdn\"=>\"h\", \"clientcert\"=>\"h\", \"role\"=>\"given\", \"os\"=>\"linux\", \"nil\"=>\"\"}");
    hiera_value_decref(v);
    hv_decref(given);
    given = testutil_json("{\"hostname\": \"x\"}");
    o.facts = given;
    assert_null(hiera_new(&o, &err));
    assert_non_null(strstr(err.message, "they must all be overridden"));
    hiera_error_clear(&err);
    /* a trusted hash */
    o.facts = NULL;
    hv *trusted = testutil_json("{\"authenticated\": \"remote\", \"certname\": \"web01.example.com\", \"extensions\": {\"pp_role\": \"web\"}}");
    o.trusted = trusted;
    assert_int_equal(lookup_with(&o, "pp_role", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "web");
    hiera_value_decref(v);
    assert_int_equal(lookup_with(&o, "host", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "web01");
    hiera_value_decref(v);
    /* a caller of version 0.2 (size 0, or the size of the 0.2 struct) never has them read */
    o.size = offsetof(hiera_options, trusted);
    assert_int_equal(lookup_with(&o, "pp_role", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "");
    hiera_value_decref(v);
    o.size = sizeof o;
    hv_decref(trusted);
    trusted = testutil_json("{\"certname\": \"web01.example.com\"}");
    o.trusted = trusted;
    assert_null(hiera_new(&o, &err));
    assert_non_null(strstr(err.message, "missing: authenticated extensions"));
    hiera_error_clear(&err);
    hv_decref(trusted);
    hv_decref(given);
    hv_decref(base);
    free(code);
    free(env);
}

/* hiera_facts_check_given: lookup.rb's checks of --facts, in its words with and without a file */
static void test_facts_check_given(void **state)
{
    (void)state;
    static const char *const ok[] = {"{}", "{\"role\": \"web\"}",
                                     "{\"hostname\": \"h\", \"domain\": \"d\", \"fqdn\": \"h.d\", \"clientcert\": \"h.d\"}",
                                     "{\"hostname\": null, \"domain\": 1, \"fqdn\": [], \"clientcert\": {}}"};
    hiera_error err = {0};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        hv *f = testutil_json(ok[i]);
        assert_int_equal(hiera_facts_check_given(f, "f.yaml", &err), HIERA_OK);
        assert_null(err.message);
        hv_decref(f);
    }
    static const char *const partial[] = {"{\"hostname\": \"h\"}", "{\"clientcert\": \"c\", \"role\": 1}",
                                          "{\"hostname\": \"h\", \"domain\": \"d\", \"fqdn\": \"h.d\"}"};
    for (size_t i = 0; i < sizeof partial / sizeof *partial; i++) {
        hv *f = testutil_json(partial[i]);
        assert_int_equal(hiera_facts_check_given(f, "/x/f.yaml", &err), HIERA_ERROR);
        assert_int_equal(err.kind, HIERA_ERR_FATAL);
        assert_string_equal(err.message, "When overriding any of the hostname,domain,fqdn,clientcert facts with "
                                         "/x/f.yaml given via the --facts flag, they must all be overridden.");
        hiera_error_clear(&err);
        assert_int_equal(hiera_facts_check_given(f, NULL, &err), HIERA_ERROR);
        assert_string_equal(err.message, "When overriding any of the hostname,domain,fqdn,clientcert facts with the "
                                         "--facts flag, they must all be overridden.");
        hiera_error_clear(&err);
        hv_decref(f);
    }
    hv *list = testutil_json("[1]");
    assert_int_equal(hiera_facts_check_given(list, "f.json", &err), HIERA_ERROR);
    assert_string_equal(err.message,
                        "Incorrectly formatted data in f.json given via the --facts flag (only accepts yaml and json files)");
    hiera_error_clear(&err);
    assert_int_equal(hiera_facts_check_given(list, NULL, &err), HIERA_ERROR);
    assert_string_equal(err.message, "Incorrectly formatted data given via the --facts flag (only accepts yaml and json files)");
    hiera_error_clear(&err);
    assert_int_equal(hiera_facts_check_given(NULL, NULL, &err), HIERA_ERROR);
    hiera_error_clear(&err);
    hv_decref(list);
}

/* hiera_node_facts_find words a facts file's errors as the settings' Puppet, whatever the
 * calling thread's is (json 2.6's "859: unexpected token" as 7, json 2.7's without the number
 * as 8) */
static void test_node_facts_find_version(void **state)
{
    (void)state;
    char *bad = testutil_write_under(root, "nfv/bad.json", "{\"a\": 1,\n \"b\": }\n");
    char *codedir = xasprintf("%s/nfv/code", root);
    free(testutil_write_under(root, "nfv/code/environments/production/.keep", ""));
    hiera_setting cli[] = {{"confdir", codedir}, {"codedir", codedir}, {"vardir", codedir}};
    hiera_puppet_version thread_was = hiera_thread_puppet_version(HIERA_PUPPET_7);
    for (int ver = 7; ver <= 8; ver++) {
        for (int thread = 7; thread <= 8; thread++) {
            hiera_thread_puppet_version((hiera_puppet_version)thread);
            hiera_settings_options so = {.size = sizeof so, .cli = cli, .ncli = 3, .no_puppet_conf = true,
                                         .puppet_version = (hiera_puppet_version)ver};
            hiera_error err = {0};
            hiera_settings *s = hiera_settings_load(&so, &err);
            assert_non_null(s);
            hiera_environment *env = hiera_environment_load(s, NULL, &err);
            assert_non_null(env);
            hiera_node_facts_options o = {.size = sizeof o, .settings = s, .env = env, .node = "n1",
                                          .facts_file = bad};
            hiera_node_facts out;
            assert_int_equal(hiera_node_facts_find(&o, &out, &err), HIERA_ERROR);
            assert_non_null(err.message);
            assert_non_null(strstr(err.message, ver == 8 ? "): unexpected token at" : "): 859: unexpected token at"));
            hiera_error_clear(&err);
            /* the thread's own is as it was */
            assert_int_equal(hiera_thread_puppet_version((hiera_puppet_version)thread), (hiera_puppet_version)thread);
            hiera_environment_free(env);
            hiera_settings_free(s);
        }
    }
    hiera_thread_puppet_version(thread_was);
    free(codedir);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader_facts_tag),
        cmocka_unit_test(test_facts_check_given),
        cmocka_unit_test(test_reader_plain_too),
        cmocka_unit_test(test_reader_modes_elsewhere),
        cmocka_unit_test(test_cached),
        cmocka_unit_test(test_facts_load),
        cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_trusted),
        cmocka_unit_test(test_hiera_new),
        cmocka_unit_test(test_node_facts_find_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
