/* test_program.c - the main manifest's top scope and node definitions evaluated per node
 * (puppet/program.c): Puppet's semantics where a value is computed, unknown where it is not. */
#include "testutil.h"

#include "formats/json.h"
#include "puppet/program.h"

typedef struct {
    pp_program *p;
    pp_eval_result r;
    hv *scope;
} evald;

static hv *facts_scope(const char *certname, const char *ext_json, const char *extra_json)
{
    herr err = {0};
    hv *facts = extra_json ? hjson_parse(extra_json, strlen(extra_json), "<facts>", &err) : hv_hash();
    hv_hash_sets(facts, "clientcert", hv_str(certname));
    hv *scope = hv_copy(facts);
    hv_hash_sets(scope, "facts", facts);
    hv *trusted = hv_hash();
    hv_hash_sets(trusted, "certname", hv_str(certname));
    hv_hash_sets(trusted, "extensions", ext_json ? hjson_parse(ext_json, strlen(ext_json), "<ext>", &err) : hv_hash());
    hv_hash_sets(scope, "trusted", trusted);
    hv_hash_sets(scope, "environment", hv_str("production"));
    herr_clear(&err);
    return scope;
}

static pp_fn_kind kinds(void *data, const char *name)
{
    (void)data;
    if (!strcmp(name, "role"))
        return PP_FN_ANY;
    if (!strcmp(name, "mymod::helper"))
        return PP_FN_CLASSES;
    return PP_FN_PURE;
}

static hv *lookups(void *data, const hv *scope, const char *key, const char *merge, const hv *dflt)
{
    (void)data;
    (void)merge;
    if (!strcmp(key, "classes"))
        return hjson_parse("[\"base\", \"Web::Front\"]", 22, "<x>", NULL);
    if (!strcmp(key, "site_of_role")) {
        /* reads what the code set before it */
        const hv *r = hv_hash_gets(scope, "role");
        return r ? hv_str(hv_str_ptr(r)) : hv_str("none");
    }
    return dflt ? hv_incref((hv *)dflt) : NULL;
}

static bool exists(void *data, const char *name)
{
    (void)data;
    return !strcmp(name, "role::web");
}

static void eval(evald *e, const char *code, const char *certname, const char *ext, const char *extra)
{
    e->p = pp_program_new();
    pp_program_add_text(e->p, "site.pp", code, strlen(code));
    e->scope = facts_scope(certname, ext, extra);
    pp_eval_env env = {kinds, lookups, exists, NULL};
    pp_program_eval(e->p, pp_program_match_node(e->p, certname), e->scope, &env, &e->r);
}

static void done(evald *e)
{
    pp_eval_result_free(&e->r);
    pp_program_free(e->p);
    hv_decref(e->scope);
}

static const char *var(const evald *e, const char *name)
{
    const hv *v = hv_hash_gets(e->r.vars, name);
    return v && hv_is(v, HV_STRING) ? hv_str_ptr(v) : v ? "<not a string>" : NULL;
}

static bool unknown(const evald *e, const char *name) { return hv_hash_gets(e->r.unknown, name) != NULL; }
static bool declared(const evald *e, const char *cls) { return hv_hash_gets(e->r.classes, cls) != NULL; }

static void trusted_role(void **state)
{
    (void)state;
    evald e;
    eval(&e,
         "if defined('$facts') and defined('$trusted') {\n"
         "  if $trusted['extensions']['pp_role'] and ! getvar('facts.role') {\n"
         "    $role = $trusted['extensions']['pp_role']\n"
         "  }\n"
         "  $zone = $trusted['extensions']['pp_zone'] ? { undef => 'default', default => downcase($trusted['extensions']['pp_zone']) }\n"
         "}\n"
         "$label = \"${role}-${::zone}\"\n",
         "web1.example.com", "{\"pp_role\": \"web\", \"pp_zone\": \"LAB\"}", NULL);
    assert_string_equal(var(&e, "role"), "web");
    assert_string_equal(var(&e, "zone"), "lab");
    assert_string_equal(var(&e, "label"), "web-lab");
    assert_false(e.r.any);
    done(&e);
    /* the fact wins: $role is not set */
    eval(&e,
         "if $trusted['extensions']['pp_role'] and ! getvar('facts.role') {\n  $role = 'from_trusted'\n}\n",
         "web1.example.com", "{\"pp_role\": \"web\"}", "{\"role\": \"db\"}");
    assert_null(var(&e, "role"));
    done(&e);
}

static void comparisons(void **state)
{
    (void)state;
    evald e;
    eval(&e,
         "$a = 'Web' == 'web'\n"               /* strings compare without case */
         "$b = 1 == 1.0\n"
         "$c = 'x' in ['a', 'X']\n"
         "$d = $facts['kernel'] =~ /^Lin/\n"
         "$e = 'abc' in 'xabcx'\n"
         "$f = $nosuch == undef\n"             /* an unset variable is undef */
         "$g = !$facts['missing']\n"
         "$h = 'db' in { 'DB' => 1, 'web' => 2 }\n"  /* a hash: its keys */
         "$i = !('x' in { 'y' => 'x' })\n",
         "n1.example.com", NULL, "{\"kernel\": \"Linux\"}");
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
    for (size_t i = 0; i < 9; i++) {
        const hv *v = hv_hash_gets(e.r.vars, names[i]);
        assert_non_null(v);
        assert_true(hv_is(v, HV_BOOL) && hv_bool_val(v));
    }
    done(&e);
}

static void case_and_selector(void **state)
{
    (void)state;
    evald e;
    eval(&e,
         "case $facts['os']['family'] {\n"
         "  'RedHat', 'Suse': { $pkg = 'rpm' }\n"
         "  /^Deb/: { $pkg = 'deb' }\n"
         "  default: { $pkg = 'other' }\n"
         "}\n"
         "$site = $facts['ip'] ? { /^10\\.64\\./ => 'eqiad', /^10\\.192\\./ => 'codfw', default => '(undefined)' }\n"
         "$parts = split('a.b.c', '[.]')\n"
         "$first = $parts[0]\n"
         "$last = $parts[-1]\n"
         "$certname = $trusted['certname'].lest || { $facts['fqdn'] }\n",
         "n1.example.com", NULL, "{\"os\": {\"family\": \"Debian\"}, \"ip\": \"10.192.1.2\"}");
    assert_string_equal(var(&e, "pkg"), "deb");
    assert_string_equal(var(&e, "site"), "codfw");
    assert_string_equal(var(&e, "first"), "a");
    assert_string_equal(var(&e, "last"), "c");
    assert_string_equal(var(&e, "certname"), "n1.example.com");
    done(&e);
}

static void unknowns(void **state)
{
    (void)state;
    evald e;
    /* a value that cannot be computed, a branch on it, a function that may set variables */
    eval(&e,
         "$cls = govuk_node_class()\n"
         "if $cls == 'frontend' {\n  $tier = 'front'\n  include web\n}\n"
         "$known = 'yes'\n",
         "n1.example.com", NULL, NULL);
    assert_true(unknown(&e, "cls"));
    assert_true(unknown(&e, "tier"));
    assert_string_equal(var(&e, "known"), "yes");
    assert_false(declared(&e, "web"));
    assert_true(e.r.classes_unknown);
    done(&e);
    eval(&e, "node /^web\\d+\\./ {\n  role(webserver)\n}\nnode default { $x = 1 }\n", "web3.eqiad.wmnet", NULL, NULL);
    assert_true(e.r.any);
    assert_non_null(e.r.any_why);
    assert_true(strstr(e.r.any_why, "role() at site.pp:2") != NULL);
    assert_null(hv_hash_gets(e.r.vars, "x"));
    done(&e);
}

static void nodes(void **state)
{
    (void)state;
    evald e;
    const char *code = "$top = 'all'\n"
                       "node 'db1.example.com', 'db2.example.com' { $role = 'db' }\n"
                       "node /^web\\d+/ { $role = 'web' }\n"
                       "node /^web1/ { $role = 'never' }\n"
                       "node default { $role = 'other' }\n";
    eval(&e, code, "DB2.example.com", NULL, NULL); /* names match without case */
    assert_string_equal(var(&e, "role"), "db");
    assert_string_equal(var(&e, "top"), "all");
    done(&e);
    eval(&e, code, "web12.example.com", NULL, NULL); /* the first regexp that matches */
    assert_string_equal(var(&e, "role"), "web");
    done(&e);
    eval(&e, code, "mail.example.com", NULL, NULL);
    assert_string_equal(var(&e, "role"), "other");
    done(&e);
}

static void declarations(void **state)
{
    (void)state;
    evald e;
    eval(&e,
         "include base, '::ntp'\n"
         "contain(['a::b'])\n"
         "lookup('classes').include\n"
         "class { 'profile::tomcat': version => '8', dir => $x }\n"
         "$role = 'web'\n"
         "if defined(\"role::${role}\") { include \"role::${role}\" }\n"
         "if defined('role::db') { include role::db }\n",
         "n1.example.com", NULL, NULL);
    assert_true(declared(&e, "base"));
    assert_true(declared(&e, "ntp"));
    assert_true(declared(&e, "a::b"));
    assert_true(declared(&e, "web::front"));
    assert_true(declared(&e, "role::web"));
    assert_false(declared(&e, "role::db"));
    const hv *given = hv_hash_gets(e.r.classes, "profile::tomcat");
    assert_true(hv_is(given, HV_ARRAY) && hv_array_len(given) == 2);
    assert_false(e.r.classes_unknown);
    done(&e);
}

static void lookups_and_fail(void **state)
{
    (void)state;
    evald e;
    eval(&e,
         "$role = 'db'\n"
         "$site = lookup('site_of_role')\n"
         "$noop = lookup('noop_mode', Boolean, 'first', false)\n"
         "$gone = lookup('nosuch')\n"
         "if $noop == true { noop() }\n"
         "if $role == 'db' { fail('no db here') }\n"
         "$after = 1\n",
         "n1.example.com", NULL, NULL);
    assert_string_equal(var(&e, "site"), "db");
    assert_true(hv_is(hv_hash_gets(e.r.vars, "noop"), HV_BOOL));
    assert_true(unknown(&e, "gone"));
    assert_non_null(e.r.failed);
    assert_true(strstr(e.r.failed, "no db here (site.pp:6)") != NULL);
    assert_null(hv_hash_gets(e.r.vars, "after"));
    done(&e);
}

static void syntax(void **state)
{
    (void)state;
    evald e;
    /* resources, defaults, collectors, definitions and heredocs are stepped over; a no-break
     * space is a blank (Puppet's lexer) */
    eval(&e,
         "File { backup => false }\n"
         "Package <| provider == 'apt' |>\n"
         "file { '/etc/motd': content => @(EOT)\n  $not = 'a statement'\n  | EOT\n}\n"
         "class foo ($p = 1) { $inner = 2 }\n"
         "define bar () { $inner2 = 3 }\n"
         "$after\xc2\xa0= \"ok\"\n"
         "$list = [1, 2].map |$x| { $x * 2 }\n",
         "n1.example.com", NULL, NULL);
    assert_string_equal(var(&e, "after"), "ok");
    assert_null(hv_hash_gets(e.r.vars, "not"));
    assert_null(hv_hash_gets(e.r.vars, "inner"));
    assert_null(hv_hash_gets(e.r.vars, "inner2"));
    assert_true(unknown(&e, "list"));
    done(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trusted_role), cmocka_unit_test(comparisons), cmocka_unit_test(case_and_selector),
        cmocka_unit_test(unknowns),     cmocka_unit_test(nodes),       cmocka_unit_test(declarations),
        cmocka_unit_test(lookups_and_fail), cmocka_unit_test(syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
