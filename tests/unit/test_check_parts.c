/* test_check_parts.c - the pieces hiera check is built from: the manifest reader
 * (puppet/manifest.c), the YAML scanner with marks (check/yscan.c), the plain-scalar resolution
 * it shares with the loader (yaml_plain_scalar), user-defined type aliases and the class
 * parameter messages (types/ptype.c). */
#include "testutil.h"

#include "check/ck_int.h"
#include "check/yscan.h"
#include "formats/psych.h"
#include "puppet/manifest.h"
#include "types/ptype.h"

static pp_index *read_pp(const char *text)
{
    pp_index *x = pp_index_new();
    pp_index_add_text(x, "test.pp", text, strlen(text));
    return x;
}

static const pp_param *param(const pp_class *c, const char *name)
{
    for (size_t i = 0; c && i < c->nparams; i++)
        if (!strcmp(c->params[i].name, name))
            return &c->params[i];
    return NULL;
}

static bool has_lookup(const pp_index *x, const char *key, bool prefix)
{
    for (size_t i = 0; i < x->nlookups; i++)
        if (!strcmp(x->lookups[i].key, key) && x->lookups[i].prefix == prefix)
            return true;
    return false;
}

static void class_headers(void **state)
{
    (void)state;
    pp_index *x = read_pp("# a comment with class foo ( $x ) {\n"
                          "class ntp::config (\n"
                          "  Optional[Variant[String, Array[String]]] $servers = ['a', 'b'], # comment\n"
                          "  Stdlib::Port $port = 123,\n"
                          "  $untyped,\n"
                          "  Hash[String, Struct[{a => Integer, Optional[b] => String}]] $h = { 'x' => { 'a' => 1 } },\n"
                          "  Pattern[/^[a-z]+\\/(x)$/] $re = 'a/x',\n"
                          ") inherits ntp::params {\n"
                          "  $s = \"text with ${braces['}']} and \\\" quotes\"\n"
                          "  class inner { }\n"
                          "}\n");
    assert_int_equal(x->nproblems, 0);
    const pp_class *c = pp_find_class(x, "ntp::config");
    assert_non_null(c);
    assert_true(c->header_ok);
    assert_string_equal(c->parent, "ntp::params");
    assert_int_equal(c->nparams, 5);
    assert_string_equal(param(c, "servers")->type, "Optional[Variant[String, Array[String]]]");
    assert_true(param(c, "servers")->has_default);
    assert_string_equal(param(c, "port")->type, "Stdlib::Port");
    assert_null(param(c, "untyped")->type);
    assert_false(param(c, "untyped")->has_default);
    assert_string_equal(param(c, "re")->type, "Pattern[/^[a-z]+\\/(x)$/]");
    assert_int_equal(param(c, "port")->line, 4);
    assert_non_null(pp_find_class(x, "ntp::config::inner")); /* nested: named inside its class */
    pp_index_free(x);
}

static void strings_heredocs_regexps(void **state)
{
    (void)state;
    pp_index *x = read_pp("$a = @(EOT)\n"
                          "  class nope ( $x ) {\n"
                          "  | EOT\n"
                          "$b = @(\"ONE\"/L), @(TWO)\n"
                          "  ${lookup('in::heredoc')}\n"
                          "  ONE\n"
                          "  two }\n"
                          "  TWO\n"
                          "if $x =~ /class {/ { $y = 10 / 2 }\n"
                          "$c = 'it''s \\' { '\n"
                          "$d = \"prefix::${lookup('in::string')}\"\n"
                          "class real { }\n");
    assert_int_equal(x->nproblems, 0);
    assert_null(pp_find_class(x, "nope"));
    assert_non_null(pp_find_class(x, "real"));
    assert_true(has_lookup(x, "in::heredoc", false));
    assert_true(has_lookup(x, "in::string", false));
    pp_index_free(x);
}

static void lookups_and_declarations(void **state)
{
    (void)state;
    pp_index *x = read_pp("class profile::base (\n"
                          "  String $v = lookup('from::default'),\n"
                          ") {\n"
                          "  include ntp, apache::mod::ssl\n"
                          "  contain('profile::x')\n"
                          "  require ['a', 'b']\n"
                          "  class { 'sshd': port => 22, ciphers => [] }\n"
                          "  $x = lookup('plain')\n"
                          "  $y = lookup(\"dyn::${facts['role']}::z\")\n"
                          "  $z = lookup('merged', Array, 'unique', [])\n"
                          "  $w = hiera_hash('hh')\n"
                          "  file { '/x': require => Package['p'] }\n"
                          "}\n"
                          "node 'web1.example.com', /^db/ {\n"
                          "  $node_var = 1\n"
                          "  lookup('classes', Array[String], 'unique', []).include\n"
                          "}\n"
                          "node default { }\n"
                          "$top = 1\n"
                          "define my::type ($p) { $notop = 1 }\n");
    assert_int_equal(x->nproblems, 0);
    assert_true(has_lookup(x, "from::default", false));
    assert_true(has_lookup(x, "plain", false));
    assert_true(has_lookup(x, "dyn::", true));
    for (size_t i = 0; i < x->nlookups; i++)
        if (!strcmp(x->lookups[i].key, "dyn::")) {
            assert_string_equal(x->lookups[i].suffix, "::z");
            assert_true(pp_lookup_matches(&x->lookups[i], "dyn::web::z"));
            assert_false(pp_lookup_matches(&x->lookups[i], "dyn::web::y"));
        }
    const char *decls[] = {"ntp", "apache::mod::ssl", "profile::x", "a", "b", "sshd"};
    assert_int_equal(x->ndecls, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(x->decls[i].cls, decls[i]);
        assert_string_equal(x->decls[i].scope_class, "profile::base");
    }
    assert_true(x->decls[5].resource_like);
    assert_int_equal(x->decls[5].nparams, 2);
    for (size_t i = 0; i < x->nlookups; i++) {
        const pp_lookup *l = &x->lookups[i];
        if (!strcmp(l->key, "merged") || !strcmp(l->key, "hh"))
            assert_true(l->merged);
        else if (!strcmp(l->key, "plain"))
            assert_false(l->merged);
        if (!strcmp(l->key, "classes")) {
            assert_true(l->classes);
            assert_int_equal(l->scope_node, 0);
        }
    }
    assert_int_equal(x->nnodes, 2);
    assert_string_equal(x->nodes[0].names[0], "web1.example.com");
    assert_string_equal(x->nodes[0].regexps[0], "^db");
    assert_true(x->nodes[1].is_default);
    bool top = false, node_var = false, notop = false;
    for (size_t i = 0; i < x->ntopvars; i++) {
        top |= !strcmp(x->topvars[i], "top");
        node_var |= !strcmp(x->topvars[i], "node_var");
        notop |= !strcmp(x->topvars[i], "notop");
    }
    assert_true(top && node_var && !notop);
    assert_true(pp_is_define(x, "my::type"));
    pp_index_free(x);
}

static void type_aliases_read(void **state)
{
    (void)state;
    pp_index *x = read_pp("# the module's port\ntype Mod::Port = Variant[\n  Integer[1, 65535], # numbers\n  Pattern[/^\\d+$/],\n]\n");
    assert_int_equal(x->naliases, 1);
    assert_string_equal(x->aliases[0].name, "Mod::Port");
    assert_string_equal(x->aliases[0].body, "Variant[Integer[1, 65535], Pattern[/^\\d+$/], ]");
    pp_index_free(x);
}

static void manifest_problems(void **state)
{
    (void)state;
    pp_index *x = read_pp("class a {\n  $x = \"never closed\n}\n");
    assert_int_equal(x->nproblems, 1);
    assert_int_equal(x->problems[0].line, 2);
    assert_int_equal(x->problems[0].col, 8);
    pp_index_free(x);
    x = read_pp("class b::c:d { }\n");
    assert_int_equal(x->nproblems, 1);
    pp_index_free(x);
    x = read_pp("$x = @(END)\nnot ended\n");
    assert_int_equal(x->nproblems, 1);
    pp_index_free(x);
}

static void yaml_marks(void **state)
{
    (void)state;
    const char *text = "---\nkey: plain\nq: 'single'\nd: \"double\"\nb: |\n  block\nempty:\nl: [1, yes]\n---\nsecond: 1\n";
    ysdoc *d = ys_parse(text, strlen(text));
    assert_false(d->failed);
    assert_int_equal(d->ndocs, 2);
    const ysnode *root = d->docs[0];
    assert_int_equal(root->kind, YS_MAP);
    const ysnode *k = ys_map_key(root, "q"), *v = ys_map_get(root, "q");
    assert_int_equal(k->line, 3);
    assert_int_equal(k->col, 1);
    assert_int_equal(v->col, 4);
    assert_int_equal(v->style, YS_SINGLE);
    assert_int_equal(ys_map_get(root, "d")->style, YS_DOUBLE);
    assert_int_equal(ys_map_get(root, "b")->style, YS_LITERAL);
    const ysnode *e = ys_map_get(root, "empty");
    assert_int_equal(e->len, 0);
    assert_int_equal(e->style, YS_PLAIN);
    const ysnode *l = ys_map_get(root, "l");
    assert_int_equal(l->style, YS_FLOW);
    assert_int_equal(l->n, 2);
    assert_int_equal(l->kids[1]->col, 8);
    ys_free(d);
    d = ys_parse("a: [1,\n", 7);
    assert_true(d->failed);
    assert_non_null(d->error);
    ys_free(d);
}

/* A large mapping is looked up through its key index: the same answers as a scan (the last
 * entry of a repeated key, quoted keys by their text, non-scalar keys never, absent keys NULL). */
static void yaml_key_index(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 500; i++)
        sb_addf(&b, "key_%03d: %d\n", (i * 7) % 500, i); /* every key once, out of order */
    sb_adds(&b, "dup: first\n'': empty\n[a, b]: seq\n\"key_001\": again\ndup: second\nzz: 1\n");
    ysdoc *d = ys_parse(b.s, b.len);
    assert_false(d->failed);
    const ysnode *root = d->docs[0];
    assert_non_null(root->index);
    for (int i = 0; i < 500; i++) {
        char key[16];
        snprintf(key, sizeof key, "key_%03d", i);
        const ysnode *k = ys_map_key(root, key), *v = ys_map_get(root, key);
        assert_non_null(k);
        assert_string_equal(k->text, key);
        if (i != 1) {
            assert_int_equal(k->line, v->line);
            int at = 0;
            while ((at * 7) % 500 != i)
                at++;
            assert_int_equal(strtol(v->text, NULL, 10), at);
        }
    }
    assert_string_equal(ys_map_get(root, "key_001")->text, "again"); /* the later entry wins */
    assert_string_equal(ys_map_get(root, "dup")->text, "second");
    assert_int_equal(ys_map_key(root, "dup")->line, 505);
    assert_string_equal(ys_map_get(root, "")->text, "empty");
    assert_string_equal(ys_map_get(root, "zz")->text, "1");
    assert_null(ys_map_get(root, "key_500"));
    assert_null(ys_map_get(root, "a"));
    assert_null(ys_map_get(root, "zzz"));
    assert_null(ys_map_get(root, "key_00"));
    ys_free(d);
    sb_free(&b);
}

static void plain_scalars(void **state)
{
    (void)state;
    static const struct {
        const char *text, *json;
    } cases[] = {
        {"yes", "true"}, {"Off", "false"}, {"y", "\"y\""}, {"n", "\"n\""}, {"0755", "493"}, {"08", "\"08\""},
        {"1:30", "5400"}, {"1.10", "1.1"}, {"~", "null"}, {"0x1F", "31"}, {"1e3", "\"1e3\""}, {"true", "true"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        herr err = {0};
        hv *v = yaml_plain_scalar(cases[i].text, strlen(cases[i].text), &err);
        assert_non_null(v);
        assert_value_json(v, cases[i].json);
        hv_decref(v);
    }
    herr err = {0};
    assert_null(yaml_plain_scalar("2024-01-02", 10, &err)); /* a Date: refused as safe_load refuses it */
    herr_clear(&err);
}

static void user_aliases_and_messages(void **state)
{
    (void)state;
    ptype_aliases *a = ptype_aliases_new();
    ptype_aliases_add(a, "Mod::Port", "Integer[1, 65535]");
    ptype_aliases_add(a, "Mod::Tree", "Variant[String, Array[Mod::Tree]]");
    ptype_aliases_add(a, "Mod::Broken", "Integer[");
    herr err = {0};
    ptype *t = ptype_parse_with("Optional[Mod::Port]", a, &err);
    assert_non_null(t);
    assert_null(ptype_unresolved(t));
    hv *s = hv_str("80");
    char *m = ptype_describe_param(t, s, "port");
    /* as Puppet 7 words it (an alias inside Optional is named, not "Undef or") */
    assert_string_equal(m, "parameter 'port' expects a Mod::Port = Integer[1, 65535] value, got String");
    free(m);
    hv *i = hv_int(80);
    assert_null(ptype_describe_param(t, i, "port"));
    ptype_free(t);
    /* recursive aliases */
    t = ptype_parse_with("Mod::Tree", a, &err);
    assert_non_null(t);
    hv *tree = hv_array();
    hv_array_push(tree, hv_str("leaf"));
    hv *sub = hv_array();
    hv_array_push(sub, hv_str("x"));
    hv_array_push(tree, sub);
    assert_true(ptype_match(t, tree));
    hv_array_push(tree, hv_int(1));
    assert_false(ptype_match(t, tree));
    ptype_free(t);
    /* names that do not resolve, and aliases whose body does not parse */
    t = ptype_parse_with("Array[Other::Type]", a, &err);
    char *ref = ptype_unresolved(t);
    assert_string_equal(ref, "Other::Type");
    free(ref);
    ptype_free(t);
    t = ptype_parse_with("Mod::Broken", a, &err);
    ref = ptype_unresolved(t);
    assert_non_null(ref);
    free(ref);
    ptype_free(t);
    assert_non_null(ptype_aliases_error(a, "Mod::Broken", NULL));
    /* what interpolation may match */
    t = ptype_parse_with("Variant[Integer, Pattern[/x/]]", a, &err);
    assert_true(ptype_may_match_string(t));
    ptype_free(t);
    t = ptype_parse_with("Optional[Array[String]]", a, &err);
    assert_false(ptype_may_match_string(t));
    ptype_free(t);
    hv_decref(s);
    hv_decref(i);
    hv_decref(tree);
    ptype_aliases_free(a);
}

/* hiera check's YAML traps name the float a plain scalar reads as, printed as Ruby's Float#to_s
 * prints it (1.0e+16, not 1e+16); the values are Psych's (Ruby 3.1: YAML.load("a: 1:30.5") is
 * 5430.0) */
static void plain_traps_float_text(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"1.10", "yaml-version-float", "unquoted '1.10' is read as the float 1.1"},
        {"10000000000000000.00", "yaml-version-float", "unquoted '10000000000000000.00' is read as the float 1.0e+16"},
        {"0.0000010", "yaml-version-float", "unquoted '0.0000010' is read as the float 1.0e-06"},
        {"1:30.5", "yaml-sexagesimal", "unquoted '1:30.5' is read as the base-60 number 5430.0"},
        {"190:20:30.15", "yaml-sexagesimal", "unquoted '190:20:30.15' is read as the base-60 number 685230.15"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char msg[256] = "";
        const char *rule = ck_plain_trap(cases[i][0], strlen(cases[i][0]), msg, sizeof msg);
        assert_non_null(rule);
        assert_string_equal(rule, cases[i][1]);
        assert_string_equal(msg, cases[i][2]);
    }
}

/* ------------------------------------------------------------------ check sessions */

/* A report as one comparable text */
static char *report_text(const check_report *r)
{
    sbuf b = {0};
    for (size_t i = 0; i < r->n; i++) {
        const check_finding *f = &r->v[i];
        sb_addf(&b, "%s:%u:%u %s %d %s", f->file, f->line, f->col, f->rule, f->severity, f->message);
        for (size_t j = 0; j < f->nnodes; j++)
            sb_addf(&b, " [%s]", f->nodes[j]);
        sb_addc(&b, '\n');
    }
    for (size_t i = 0; i < r->nnotes; i++)
        sb_addf(&b, "note %s\n", r->notes[i]);
    sb_addf(&b, "%zu %zu %zu %zu %zu\n", r->configs, r->data_files, r->manifests, r->nodes, r->environments);
    return sb_take(&b);
}

/* A session's run with texts gives check_run's report with the same texts; a run whose texts
 * change only data files keeps what was read, one that changes hiera.yaml, a manifest or the set
 * of texts reads again. */
static void check_session_runs(void **state)
{
    (void)state;
    char dir[64];
    assert_int_equal(testutil_scratch(dir, "session"), 0);
    free(testutil_write_under(dir, "hiera.yaml",
                              "---\nversion: 5\ndefaults:\n  datadir: data\n  data_hash: yaml_data\nhierarchy:\n"
                              "  - name: node\n    path: \"nodes/%{trusted.certname}.yaml\"\n"
                              "  - name: common\n    path: common.yaml\n"));
    char *common = testutil_write_under(dir, "data/common.yaml", "---\nprofile::x::n: 1\nprofile::x::s: 'a'\n");
    char *nodef = testutil_write_under(dir, "data/nodes/n1.example.com.yaml", "---\nprofile::x::n: 2\n");
    char *pp = testutil_write_under(dir, "site-modules/profile/manifests/x.pp",
                                    "class profile::x (Integer $n, String $s = 'b') {}\n");
    free(testutil_write_under(dir, "manifests/site.pp", "node default { include profile::x }\n"));
    free(testutil_write_under(dir, "environment.conf", "modulepath = site-modules:modules\n"));
    free(testutil_write_under(dir, "facts/n1.example.com.yaml", "---\nos:\n  family: Debian\n"));
    free(testutil_write_under(dir, "facts/n2.example.com.yaml", "---\nos:\n  family: RedHat\n"));
    char *facts = xasprintf("%s/facts", dir);
    char *hy = xasprintf("%s/hiera.yaml", dir);
    const char *paths[1] = {dir};
    check_options o = {.paths = paths, .npaths = 1, .facts_dir = facts, .jobs = 1};
    check_session *cs = check_session_new(&o);
    const struct {
        const char *path, *text;
        size_t reads, reuses; /* after the run */
    } steps[] = {
        {common, "---\nprofile::x::n: 1\nprofile::x::s: 'a'\nprofile::x::zz: 1\n", 1, 0},
        {common, "---\n# moved\nprofile::x::n: 'one'\nprofile::x::s: yes\nprofile::x::zz: 1\n", 1, 1},
        {nodef, "---\nprofile::x::n: [2]\n", 2, 1},          /* another text given: read again */
        {common, "---\nprofile::x::n: 1\nprofile::x::s: '%{facts.os.family}'\n", 2, 2},
        {nodef, "---\nprofile::x::n: 3\nprofile::x::s: 0755\n", 2, 3},
        {pp, "class profile::x (String $n, String $s = 'b') {}\n", 3, 3}, /* a manifest: read again */
        {nodef, "---\nprofile::x::n: 4\n", 3, 4},
        {hy, "---\nversion: 5\nhierarchy:\n  - name: common\n    path: common.yaml\n", 4, 4},
        {common, "---\nprofile::x::n: 5\n", 4, 5},
    };
    check_text texts[4];
    size_t nt = 0;
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        size_t k = 0;
        while (k < nt && strcmp(texts[k].path, steps[i].path))
            k++;
        texts[k] = (check_text){steps[i].path, steps[i].text, strlen(steps[i].text)};
        if (k == nt)
            nt++;
        check_report got, want;
        char *err = NULL;
        assert_int_equal(check_session_run(cs, texts, nt, &got, &err), 0);
        check_options oo = o;
        oo.texts = texts;
        oo.ntexts = nt;
        assert_int_equal(check_run(&oo, &want, &err), 0);
        char *g = report_text(&got), *w = report_text(&want);
        if (strcmp(g, w))
            fprintf(stderr, "step %zu:\n--- session\n%s--- check_run\n%s", i, g, w);
        assert_string_equal(g, w);
        assert_true(want.n > 0);
        size_t reads, reuses;
        check_session_stats(cs, &reads, &reuses);
        assert_int_equal(reads, steps[i].reads);
        assert_int_equal(reuses, steps[i].reuses);
        free(g);
        free(w);
        check_report_free(&got);
        check_report_free(&want);
    }
    check_session_free(cs);
    free(common);
    free(nodef);
    free(pp);
    free(facts);
    free(hy);
    testutil_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(class_headers),
        cmocka_unit_test(strings_heredocs_regexps),
        cmocka_unit_test(lookups_and_declarations),
        cmocka_unit_test(type_aliases_read),
        cmocka_unit_test(manifest_problems),
        cmocka_unit_test(yaml_marks),
        cmocka_unit_test(yaml_key_index),
        cmocka_unit_test(check_session_runs),
        cmocka_unit_test(plain_scalars),
        cmocka_unit_test(plain_traps_float_text),
        cmocka_unit_test(user_aliases_and_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
