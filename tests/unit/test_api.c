/* Tests of the public API (include/hiera.h) over a small control repository written at test
 * time: lookups, defaults, errors, explanations, and provenance of merged values. */
#include "testutil.h"

#include "hiera.h"

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void write_file(const char *rel, const char *text) { free(testutil_write_under(root, rel, text)); }

static int setup(void **state)
{
    (void)state;
    if (testutil_scratch(root, "api") != 0)
        return -1;
    write_file("environments/production/hiera.yaml",
               "version: 5\n"
               "hierarchy:\n"
               "  - {name: node, path: \"nodes/%{trusted.certname}.yaml\"}\n"
               "  - {name: common, path: common.yaml}\n");
    write_file("environments/production/data/nodes/n1.example.com.yaml",
               "users:\n"
               "  bob:\n"
               "    shell: /bin/zsh\n"
               "list: [n]\n"
               "flag: false\n"
               "team:\n"
               "  lead:\n"
               "    name: n\n");
    write_file("environments/production/data/common.yaml",
               "lookup_options:\n"
               "  users: {merge: deep}\n"
               "  team: {merge: deep}\n"
               "  list: {merge: unique}\n"
               "  secret: {convert_to: Sensitive}\n"
               "users:\n"
               "  bob:\n"
               "    uid: 1002\n"
               "    shell: /bin/bash\n"
               "  alice: {uid: 1001}\n"
               "list: [c]\n"
               "flag: true\n"
               "greeting: \"hello %{facts.hostname}\"\n"
               "secret: hunter2\n"
               "block:\n"
               "  inner:\n"
               "    - x: 1\n"
               "      y:\n"
               "        2\n"
               "team:\n"
               "  lead:\n"
               "    since: 2020\n"
               "    name: c\n");
    /* legacy module data providers (metadata.json "data_provider") */
    static const char meta[] = "{\"name\": \"x-m\", \"version\": \"1.0.0\", \"author\": \"x\", \"license\": \"l\", "
                               "\"source\": \"s\", \"dependencies\": [], \"data_provider\": ";
    char text[256];
    snprintf(text, sizeof text, "%s\"hiera\"}\n", meta);
    write_file("environments/production/modules/legacyhiera/metadata.json", text);
    write_file("environments/production/modules/legacyhiera/data/common.yaml", "legacyhiera::x: from data/common.yaml\n");
    snprintf(text, sizeof text, "%s\"function\"}\n", meta);
    write_file("environments/production/modules/legacyrb/metadata.json", text);
    write_file("environments/production/modules/legacyrb/lib/puppet/functions/legacyrb/data.rb",
               "Puppet::Functions.create_function(:'legacyrb::data') do\n  def data()\n    { 'legacyrb::x' => 1 }\n  end\nend\n");
    write_file("environments/production/modules/legacynone/metadata.json", text);
    write_file("environments/diag/hiera.yaml",
               "version: 5\n"
               "hierarchy:\n"
               "  - {name: scalar, path: scalar.yaml}\n"
               "  - {name: common, path: common.yaml}\n");
    write_file("environments/diag/data/scalar.yaml", "just a string\n");
    write_file("environments/diag/data/common.yaml", "k: v\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

typedef struct {
    int n;
    char code[64], message[512];
    int severity;
} diag_log;

static void on_diag(const hiera_diagnostic *d, void *data)
{
    diag_log *l = data;
    l->n++;
    l->severity = d->severity;
    snprintf(l->code, sizeof l->code, "%s", d->code);
    snprintf(l->message, sizeof l->message, "%s", d->message);
}

/* A context of the "diag" environment (a data file that is not a hash) with opts' diagnostics. */
static hiera *diag_ctx(hiera_options o)
{
    hiera_error err = {0};
    hiera_value *facts = hiera_value_from_json("{\"clientcert\":\"n1.example.com\",\"hostname\":\"n1\",\"domain\":\"example.com\",\"fqdn\":\"n1.example.com\"}", &err);
    char envpath[128], config[128];
    snprintf(envpath, sizeof envpath, "%s/environments", root);
    snprintf(config, sizeof config, "%s/hiera.yaml", root);
    o.codedir = root;
    o.environmentpath = envpath;
    o.hiera_config = config;
    o.environment = "diag";
    o.facts = facts;
    hiera *h = hiera_new(&o, &err);
    hiera_value_decref(facts);
    assert_non_null(h);
    return h;
}

/* Warnings reach the caller's callback, never stderr; a struct whose size stops before the
 * callback fields gets none. */
static void test_diagnostics(void **state)
{
    (void)state;
    diag_log log = {0};
    hiera_options o = HIERA_OPTIONS_INIT;
    o.diagnostics = on_diag;
    o.diagnostics_data = &log;
    hiera *h = diag_ctx(o);
    hiera_value *v = NULL;
    hiera_error err = {0};
    assert_int_equal(hiera_lookup_key(h, "k", &v, &err), HIERA_OK);
    hiera_value_decref(v);
    hiera_free(h);
    assert_int_equal(log.n, 1);
    assert_int_equal(log.severity, HIERA_DIAG_WARNING);
    assert_string_equal(log.code, "data-not-hash");
    assert_non_null(strstr(log.message, "scalar.yaml: file does not contain a valid yaml hash"));

    /* no callback: nothing on stderr */
    fflush(stderr);
    int saved = dup(2);
    char path[] = "/tmp/hiera-api-stderr-XXXXXX";
    int fd = mkstemp(path);
    dup2(fd, 2);
    hiera_options quiet = HIERA_OPTIONS_INIT;
    h = diag_ctx(quiet);
    assert_int_equal(hiera_lookup_key(h, "k", &v, &err), HIERA_OK);
    hiera_value_decref(v);
    hiera_free(h);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 0);
    close(fd);
    unlink(path);

    /* an older caller's struct: the size ends before the callback, which is then not read */
    diag_log none = {0};
    hiera_options old = HIERA_OPTIONS_INIT;
    old.size = offsetof(hiera_options, diagnostics);
    old.diagnostics = on_diag;
    old.diagnostics_data = &none;
    h = diag_ctx(old);
    assert_int_equal(hiera_lookup_key(h, "k", &v, &err), HIERA_OK);
    hiera_value_decref(v);
    hiera_free(h);
    assert_int_equal(none.n, 0);
}

static hiera *open_ctx(void)
{
    hiera_error err = {0};
    hiera_value *facts = hiera_value_from_json(
        "{\"hostname\":\"n1\",\"domain\":\"example.com\",\"fqdn\":\"n1.example.com\",\"clientcert\":\"n1.example.com\"}", &err);
    assert_non_null(facts);
    char envpath[128], config[128];
    snprintf(envpath, sizeof envpath, "%s/environments", root);
    snprintf(config, sizeof config, "%s/hiera.yaml", root);
    hiera_options o = {.codedir = root, .environmentpath = envpath, .hiera_config = config, .node = "n1.example.com",
                       .facts = facts};
    hiera *h = hiera_new(&o, &err);
    hiera_value_decref(facts);
    assert_non_null(h);
    return h;
}

static void test_lookup_and_errors(void **state)
{
    (void)state;
    hiera *h = open_ctx();
    hiera_error err = {0};
    hiera_value *v = NULL;
    assert_int_equal(hiera_lookup_key(h, "greeting", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "hello n1");
    hiera_value_decref(v);
    assert_int_equal(hiera_lookup_key(h, "users", &v, &err), HIERA_OK);
    assert_value_json(v, "{\"bob\":{\"uid\":1002,\"shell\":\"/bin/zsh\"},\"alice\":{\"uid\":1001}}");
    hiera_value_decref(v);
    assert_int_equal(hiera_lookup_key(h, "nope", &v, &err), HIERA_NOT_FOUND);
    assert_null(v);
    assert_int_equal(hiera_lookup_key(h, "a..b", &v, &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_LOOKUP);
    assert_string_equal(err.message, "Syntax error in key: 'a..b'");
    hiera_error_clear(&err);
    /* a default, and a type that rejects it */
    const char *keys[] = {"nope", "also_nope"};
    hiera_value *dflt = hiera_value_new_string("fallback");
    hiera_request r = {.keys = keys, .nkeys = 2, .default_value = dflt};
    assert_int_equal(hiera_lookup(h, &r, &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "fallback");
    hiera_value_decref(v);
    r.type = "Integer";
    assert_int_equal(hiera_lookup(h, &r, &v, &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_FATAL);
    assert_string_equal(err.message, "Default value has wrong type, expects an Integer value, got String");
    hiera_error_clear(&err);
    hiera_value_decref(dflt);
    hiera_free(h);
}

/* A value is shared while a reference other than the caller's holds it: the caller's own new
 * value is not; a value the library keeps (one found as it is in a data file) is. */
static void test_value_is_shared(void **state)
{
    (void)state;
    hiera_value *s = hiera_value_new_string("x");
    assert_false(hiera_value_is_shared(s));
    hiera_value_incref(s);
    assert_true(hiera_value_is_shared(s));
    hiera_value_decref(s);
    assert_false(hiera_value_is_shared(s));
    hiera_value *h = hiera_value_new_hash();
    hiera_value_hash_set(h, "k", s); /* (steals it) */
    assert_false(hiera_value_is_shared(hiera_value_hash_get(h, "k")));
    hiera_value *held = hiera_value_incref(hiera_value_hash_get(h, "k"));
    assert_true(hiera_value_is_shared(held));
    hiera_value_decref(h);
    assert_false(hiera_value_is_shared(held));
    hiera_value_decref(held);

    hiera *ctx = open_ctx();
    hiera_error err = {0};
    hiera_value *v = NULL;
    assert_int_equal(hiera_lookup_key(ctx, "block", &v, &err), HIERA_OK);
    assert_true(hiera_value_is_shared(v)); /* the data file's value, which the cache keeps */
    hiera_value_decref(v);
    hiera_free(ctx);
}

static void test_explanation(void **state)
{
    (void)state;
    hiera *h = open_ctx();
    hiera_error err = {0};
    hiera_value *v = NULL;
    const char *key = "flag";
    hiera_request r = {.keys = &key, .nkeys = 1, .explain = HIERA_EXPLAIN_DATA};
    hiera_result *res = NULL;
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    v = hiera_value_incref(hiera_result_value(res));
    /* the result is the lookup's own: a later lookup on the context does not change it */
    hiera_value *other = NULL;
    const char *other_key = "users";
    hiera_request r2 = {.keys = &other_key, .nkeys = 1, .explain = HIERA_EXPLAIN_DATA};
    assert_int_equal(hiera_lookup(h, &r2, &other, &err), HIERA_OK);
    hiera_value_decref(other);
    char *text = hiera_result_explanation_text(res);
    assert_null(strstr(text, "Searching for \"users\""));
    assert_non_null(strstr(text, "Searching for \"flag\""));
    assert_non_null(strstr(text, "Found key: \"flag\" value: false"));
    free(text);
    hiera_value *tree = hiera_result_explanation_tree(res);
    assert_non_null(tree);
    hiera_value_decref(tree);
    assert_null(hiera_result_provenance_text(res)); /* not asked for */
    hiera_result_free(res);
    hiera_value_decref(v);
    hiera_free(h);
}

/* a key converted to Sensitive never shows in clear, in any form of explanation */
static void test_sensitive_redacted(void **state)
{
    (void)state;
    hiera *h = open_ctx();
    hiera_error err = {0};
    hiera_value *v = NULL;
    const char *key = "secret";
    hiera_request r = {.keys = &key, .nkeys = 1, .explain = HIERA_EXPLAIN_DATA | HIERA_EXPLAIN_PROVENANCE};
    hiera_result *res = NULL;
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    v = hiera_value_incref(hiera_result_value(res));
    assert_int_equal(hiera_value_kind(v), HIERA_SENSITIVE);
    char *text = hiera_result_explanation_text(res);
    assert_null(strstr(text, "hunter2"));
    assert_non_null(strstr(text, "Sensitive [value redacted]"));
    free(text);
    hiera_value *tree = hiera_result_explanation_tree(res);
    char *json = hiera_render(tree, HIERA_RENDER_JSON, &err);
    assert_null(strstr(json, "hunter2"));
    free(json);
    hiera_value_decref(tree);
    text = hiera_result_provenance_text(res);
    assert_null(strstr(text, "hunter2"));
    free(text);
    hiera_result_free(res);
    hiera_value_decref(v);
    hiera_free(h);
}

static void test_provenance(void **state)
{
    (void)state;
    hiera *h = open_ctx();
    hiera_error err = {0};
    const char *key = "users";
    hiera_request r = {.keys = &key, .nkeys = 1, .explain = HIERA_EXPLAIN_PROVENANCE};
    hiera_result *res = NULL;
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    hiera_value *tree = hiera_result_provenance_tree(res);
    hiera_value *p = hiera_value_hash_get(tree, "provenance");
    assert_true(hiera_value_bool(hiera_value_hash_get(p, "merged")));
    hiera_value *bob = hiera_value_hash_get(hiera_value_hash_get(p, "entries"), "bob");
    hiera_value *shell = hiera_value_hash_get(hiera_value_hash_get(bob, "entries"), "shell");
    hiera_value *uid = hiera_value_hash_get(hiera_value_hash_get(bob, "entries"), "uid");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(shell, "level")), "node");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(shell, "line")), 3);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(uid, "level")), "common");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(uid, "line")), 8);
    /* alice's entries all come from common: the merge-built hash reports that one origin */
    hiera_value *alice = hiera_value_hash_get(hiera_value_hash_get(p, "entries"), "alice");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(alice, "level")), "common");
    hiera_value_decref(tree);
    hiera_result_free(res);

    /* unique merge: each element from its level; singletons (false) are traced too */
    key = "list";
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    char *text = hiera_result_provenance_text(res);
    assert_non_null(strstr(text, "- \"n\""));
    assert_non_null(strstr(text, "node, "));
    assert_non_null(strstr(text, "common, "));
    free(text);
    hiera_result_free(res);
    key = "flag";
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    tree = hiera_result_provenance_tree(res);
    p = hiera_value_hash_get(tree, "provenance");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(p, "level")), "node");
    assert_false(hiera_value_bool(hiera_value_hash_get(p, "value")));
    hiera_value_decref(tree);
    hiera_result_free(res);

    /* the line of a hash entry is its key's line, not the first line of its value */
    key = "block";
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    text = hiera_result_provenance_text(res);
    char *at;
    while ((at = strstr(text, root)) != NULL) /* the scratch folder's name varies */
        memmove(at, at + strlen(root) + 1, strlen(at + strlen(root) + 1) + 1);
    assert_string_equal(text,
                        "block:        # Environment, common, environments/production/data/common.yaml:15\n"
                        "  \"inner\":    # Environment, common, environments/production/data/common.yaml:16\n"
                        "    -         # Environment, common, environments/production/data/common.yaml:17\n"
                        "      \"x\": 1  # Environment, common, environments/production/data/common.yaml:17\n"
                        "      \"y\": 2  # Environment, common, environments/production/data/common.yaml:18\n");
    free(text);
    hiera_result_free(res);

    /* a deep merge: each entry's line is its key's in the file its value came from */
    key = "team";
    assert_int_equal(hiera_lookup_result(h, &r, &res, &err), HIERA_OK);
    tree = hiera_result_provenance_tree(res);
    hiera_value *lead = hiera_value_hash_get(hiera_value_hash_get(hiera_value_hash_get(tree, "provenance"), "entries"), "lead");
    assert_true(hiera_value_bool(hiera_value_hash_get(lead, "merged")));
    hiera_value *name = hiera_value_hash_get(hiera_value_hash_get(lead, "entries"), "name");
    hiera_value *since = hiera_value_hash_get(hiera_value_hash_get(lead, "entries"), "since");
    assert_string_equal(hiera_value_string(hiera_value_hash_get(name, "level")), "node");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(name, "line")), 8);
    assert_string_equal(hiera_value_string(hiera_value_hash_get(since, "level")), "common");
    assert_int_equal(hiera_value_int(hiera_value_hash_get(since, "line")), 22);
    hiera_value_decref(tree);
    hiera_result_free(res);
    hiera_free(h);
}

/* "data_provider" in a module's metadata.json: 'hiera' without a hiera.yaml reads data/common.yaml;
 * 'function' names <module>::data, which Puppet would run when the module defines it (this engine
 * cannot: it says so) and which is not found otherwise */
static void test_legacy_module_providers(void **state)
{
    (void)state;
    hiera *h = open_ctx();
    hiera_error err = {0};
    hiera_value *v = NULL;
    assert_int_equal(hiera_lookup_key(h, "legacyhiera::x", &v, &err), HIERA_OK);
    assert_string_equal(hiera_value_string(v), "from data/common.yaml");
    hiera_value_decref(v);
    assert_int_equal(hiera_lookup_key(h, "legacyrb::x", &v, &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_FATAL);
    assert_non_null(strstr(err.message, "The v4_data_hash function 'legacyrb::data' is Ruby or Puppet code ("));
    assert_non_null(strstr(err.message, "/modules/legacyrb/lib/puppet/functions/legacyrb/data.rb): hiera runs no such functions"));
    hiera_error_clear(&err);
    assert_int_equal(hiera_lookup_key(h, "legacynone::x", &v, &err), HIERA_ERROR);
    assert_string_equal(err.message, "Unable to find 'v4_data_hash' function named 'legacynone::data'");
    hiera_error_clear(&err);
    hiera_free(h);
}

/* hiera_options.puppet_version: the same tree answered as Puppet 7.23 and as Puppet 8.10 (strict
 * defaults to error: an undefined variable in data and a list data file fail the lookup; Puppet 8's
 * lookup sets $server_facts); an invalid HIERA_PUPPET_VERSION fails AUTO. */
static void test_puppet_version(void **state)
{
    (void)state;
    write_file("p8/environments/production/hiera.yaml",
               "version: 5\ndefaults: {datadir: data, data_hash: yaml_data}\n"
               "hierarchy:\n  - {name: role, path: 'role/%{facts.role}.yaml'}\n  - {name: common, path: common.yaml}\n");
    write_file("p8/environments/production/data/common.yaml",
               "undef: 'a%{nosuch}b'\nplain: 1\nserver: '%{server_facts.serverversion}'\n");
    write_file("p8/environments/production/data/role/db.yaml", "- not\n- a hash\n");
    char codedir[128], envpath[160];
    snprintf(codedir, sizeof codedir, "%s/p8", root);
    snprintf(envpath, sizeof envpath, "%s/environments", codedir);
    for (int role = 0; role < 2; role++) {
        for (int ver = 7; ver <= 8; ver++) {
            hiera_error err = {0};
            hiera_value *facts = hiera_value_from_json(role ? "{\"role\":\"db\"}" : "{\"role\":\"web\"}", &err);
            hiera_options o = {.codedir = codedir, .environmentpath = envpath, .node = "n1.example.com", .facts = facts,
                               .puppet_version = (hiera_puppet_version)ver};
            hiera *h = hiera_new(&o, &err);
            hiera_value_decref(facts);
            assert_non_null(h);
            hiera_value *v = NULL;
            hiera_status st = hiera_lookup_key(h, "undef", &v, &err);
            if (ver == 7) {
                assert_int_equal(st, HIERA_OK);
                assert_string_equal(hiera_value_string(v), "ab");
                hiera_value_decref(v);
            } else {
                assert_int_equal(st, HIERA_ERROR);
                assert_non_null(strstr(err.message, role ? "file does not contain a valid yaml hash" : "Undefined variable 'nosuch'"));
                hiera_error_clear(&err);
            }
            st = hiera_lookup_key(h, "plain", &v, &err);
            assert_int_equal(st, ver == 8 && role ? HIERA_ERROR : HIERA_OK);
            hiera_error_clear(&err);
            hiera_value_decref(v);
            v = NULL;
            if (!role) {
                st = hiera_lookup_key(h, "server", &v, &err);
                if (ver == 8) {
                    assert_int_equal(st, HIERA_OK);
                    assert_string_equal(hiera_value_string(v), "8.10.0");
                } else { /* (Puppet 7's lookup sets no $server_facts: an undefined variable, a warning) */
                    assert_int_equal(st, HIERA_OK);
                    assert_string_equal(hiera_value_string(v), "");
                }
                hiera_value_decref(v);
                hiera_error_clear(&err);
            }
            hiera_free(h);
        }
    }
    /* AUTO follows HIERA_PUPPET_VERSION; a bad value fails */
    const char *was = getenv("HIERA_PUPPET_VERSION");
    char *saved = was ? strdup(was) : NULL;
    setenv("HIERA_PUPPET_VERSION", "8", 1);
    char *why = NULL;
    assert_int_equal(hiera_puppet_version_find(&why), HIERA_PUPPET_8);
    assert_non_null(why);
    assert_non_null(strstr(why, "HIERA_PUPPET_VERSION=8"));
    free(why);
    setenv("HIERA_PUPPET_VERSION", "6", 1);
    assert_int_equal(hiera_puppet_version_find(NULL), HIERA_PUPPET_AUTO);
    hiera_error err = {0};
    hiera_options o = {.codedir = codedir, .environmentpath = envpath, .node = "n1.example.com"};
    assert_null(hiera_new(&o, &err));
    assert_non_null(err.message);
    assert_non_null(strstr(err.message, "HIERA_PUPPET_VERSION"));
    hiera_error_clear(&err);
    if (saved)
        setenv("HIERA_PUPPET_VERSION", saved, 1);
    else
        unsetenv("HIERA_PUPPET_VERSION");
    free(saved);
}

/* A fake Puppet on PATH: DIR/bin/puppet and its library's puppet/version.rb, read as text */
static void fake_puppet(const char *dir, const char *version)
{
    char rel[160];
    snprintf(rel, sizeof rel, "%s/bin/puppet", dir);
    write_file(rel, "#!/bin/sh\nexit 3\n");
    char *cmd = xasprintf("%s/%s", root, rel);
    assert_int_equal(chmod(cmd, 0755), 0);
    free(cmd);
    snprintf(rel, sizeof rel, "%s/lib/ruby/vendor_ruby/puppet/version.rb", dir);
    char *text = xasprintf("module Puppet\n  PUPPETVERSION = '%s'.freeze\nend\n", version);
    write_file(rel, text);
    free(text);
}

/* hiera_thread_puppet_version(HIERA_PUPPET_AUTO) is the installed Puppet (as a context's AUTO),
 * not Puppet 7 whatever is installed: the messages of calls without a context follow it */
static void test_thread_puppet_version_auto(void **state)
{
    (void)state;
    const char *was_v = getenv("HIERA_PUPPET_VERSION"), *was_path = getenv("PATH");
    char *saved_v = was_v ? strdup(was_v) : NULL, *saved_path = was_path ? strdup(was_path) : NULL;
    unsetenv("HIERA_PUPPET_VERSION");
    write_file("thread/bad.json", "{\"a\": 1,\n \"b\": }\n");
    char *bad = xasprintf("%s/thread/bad.json", root);
    struct { const char *dir, *installed; hiera_puppet_version want; } runs[] = {
        {"thread/p8", "8.10.0", HIERA_PUPPET_8}, {"thread/p7", "7.23.0", HIERA_PUPPET_7},
        {"thread/p9", "9.1.0", HIERA_PUPPET_8}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        fake_puppet(runs[i].dir, runs[i].installed);
        char *path = xasprintf("%s/%s/bin:%s", root, runs[i].dir, saved_path ? saved_path : "/usr/bin:/bin");
        setenv("PATH", path, 1);
        free(path);
        assert_int_equal(hiera_puppet_version_find(NULL), runs[i].want);
        hiera_puppet_version before = hiera_thread_puppet_version(HIERA_PUPPET_AUTO);
        assert_int_equal(before, HIERA_PUPPET_7); /* (a thread starts as Puppet 7) */
        hiera_error err = {0};
        assert_null(hiera_value_load_file(bad, &err));
        assert_non_null(err.message);
        /* json 2.6 (Puppet 7) prefixes the parser's message with a number, json 2.7 (Puppet 8) does not */
        const char *at = strstr(err.message, "unexpected token at");
        assert_non_null(at);
        bool prefixed = at >= err.message + 3 && at[-1] == ' ' && at[-2] == ':' && isdigit((unsigned char)at[-3]);
        assert_int_equal(prefixed, runs[i].want == HIERA_PUPPET_7);
        hiera_error_clear(&err);
        /* the one in effect is what AUTO found; back to Puppet 7 */
        assert_int_equal(hiera_thread_puppet_version(HIERA_PUPPET_7), runs[i].want);
    }
    /* HIERA_PUPPET_VERSION over the installed one */
    setenv("HIERA_PUPPET_VERSION", "7", 1);
    hiera_thread_puppet_version(HIERA_PUPPET_AUTO);
    assert_int_equal(hiera_thread_puppet_version(HIERA_PUPPET_7), HIERA_PUPPET_7);
    setenv("HIERA_PUPPET_VERSION", "8", 1);
    hiera_thread_puppet_version(HIERA_PUPPET_AUTO);
    assert_int_equal(hiera_thread_puppet_version(HIERA_PUPPET_7), HIERA_PUPPET_8);
    free(bad);
    if (saved_v)
        setenv("HIERA_PUPPET_VERSION", saved_v, 1);
    else
        unsetenv("HIERA_PUPPET_VERSION");
    if (saved_path)
        setenv("PATH", saved_path, 1);
    free(saved_v);
    free(saved_path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_and_errors),
        cmocka_unit_test(test_explanation),
        cmocka_unit_test(test_value_is_shared),
        cmocka_unit_test(test_provenance),
        cmocka_unit_test(test_sensitive_redacted),
        cmocka_unit_test(test_legacy_module_providers),
        cmocka_unit_test(test_diagnostics),
        cmocka_unit_test(test_puppet_version),
        cmocka_unit_test(test_thread_puppet_version_auto),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
