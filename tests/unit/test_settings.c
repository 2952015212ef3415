/* Unit tests for src/formats/ini.c (puppet.conf and environment.conf as Puppet 7.23's ConfigFile
 * reads them; the expectations are what Puppet::Settings::ConfigFile#parse_file gave for the same
 * text) and src/engine/settings.c (settings, environments, config_version) through the public API,
 * over a tree built in a scratch folder. */
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "engine/settings.h"
#include "formats/ini.h"
#include "hiera.h"

/* ------------------------------------------------------------------ ini */

/* "section:name=value|..." (booleans as <true>/<false>), or "error:<line>:<message>" */
static char *dump(const char *text, bool any_section)
{
    static const char *const allowed[] = {"main", "server", "master", "agent", "user", NULL};
    ini_file f;
    herr e = {0};
    sbuf b = {0};
    if (ini_parse(text, strlen(text), "F", any_section ? NULL : allowed, &f, &e)) {
        sb_addf(&b, "error:%d:%s", e.line, e.msg);
        herr_clear(&e);
        return sb_take(&b);
    }
    for (size_t i = 0; i < f.n; i++)
        for (size_t k = 0; k < f.sections[i].n; k++) {
            const ini_setting *s = &f.sections[i].settings[k];
            sb_addf(&b, "%s%s:%s=%s", b.len ? "|" : "", f.sections[i].name, s->name,
                    s->kind == INI_STRING ? s->value : s->kind == INI_TRUE ? "<true>" : "<false>");
        }
    ini_free(&f);
    return sb_take(&b);
}

#define assert_ini(text, want) assert_ini_mode(text, false, want)
static void assert_ini_mode(const char *text, bool any, const char *want)
{
    char *got = dump(text, any);
    if (strcmp(got, want))
        print_error("text %s\n  expected %s\n       got %s\n", text, want, got);
    assert_string_equal(got, want);
    free(got);
}

static void test_ini_sections(void **state)
{
    (void)state;
    /* lines before a section are [main]; sections keep the order of their first line, [main]
     * first; a repeated section's lines join the first's */
    assert_ini("a = 1\n[server]\nb = 2\n[main]\nc = 3\n[server]\nd = 4\n", "main:a=1|main:c=3|server:b=2|server:d=4");
    assert_ini("  [agent]  \nx=1\n", "agent:x=1");
    assert_ini("[bogus]\nx = 1\n",
               "error:0:Illegal section 'bogus' in config file at (file: F, line: 1). The only valid puppet.conf sections are: "
               "[main, server, master, agent, user]. Please use the directory environments feature to specify environments. "
               "(See https://puppet.com/docs/puppet/latest/environments_about.html)");
    assert_ini_mode("[bogus]\nx = 1\n", true, "bogus:x=1");
    /* a section line with anything after it, or a name that is not [[:word:]], is no section */
    assert_ini("[main] # c\n", "error:1:Could not match line [main] # c\n");
    assert_ini("[a-b]\n", "error:1:Could not match line [a-b]\n");
    assert_ini_mode("[mäin]\nx=1\n", true, "mäin:x=1");
}

static void test_ini_lines(void **state)
{
    (void)state;
    assert_ini("# c\n\n   \n\t# c\n x\t=\t1  \n", "main:x=1");
    assert_ini("a = 1\r\nb = 2\r\n", "main:a=1|main:b=2");
    assert_ini("x = v # not a comment\n", "main:x=v # not a comment");
    assert_ini("x = \n", "main:x=");
    assert_ini("x = a = b\n", "main:x=a = b");
    assert_ini("é€ = 1\n", "error:1:Could not match line é€ = 1\n"); /* € is not [[:word:]] */
    assert_ini("ké = 1\n", "main:ké=1");
    /* the first error in section order, with the line as read (and its newline) */
    assert_ini("[server]\nbad one\n[main]\nbad two", "error:4:Could not match line bad two");
    assert_ini("; comment\n", "error:1:Could not match line ; comment\n");
    assert_ini("\xef\xbb\xbf[main]\n", "error:1:Could not match line \xef\xbb\xbf[main]\n"); /* a BOM is text */
    assert_ini("x = \xff\n", "error:0:invalid byte sequence in UTF-8");
}

static void test_ini_values(void **state)
{
    (void)state;
    /* the first setting of a name is the one Puppet uses; both are kept here */
    assert_ini("x = 1\nx = 2\n", "main:x=1|main:x=2");
    assert_ini("a = true\nb = FALSE\nc = True \nd = \"true\"\ne = truth\n", "main:a=<true>|main:b=<false>|main:c=<true>|main:d=true|main:e=truth");
    /* one leading and one trailing quote go, matching or not */
    assert_ini("a = 'v'\nb = \"v\"\nc = 'v\"\nd = \"v\ne = '\nf = ''\ng = v'\n", "main:a=v|main:b=v|main:c=v|main:d=v|main:e=|main:f=|main:g=v");
    /* file metadata */
    assert_ini("x = /p {mode = 0644, owner = root , group=g}\n", "main:x=/p");
    assert_ini("x = a{mode=1}b {owner=2}\n", "main:x=ab {owner=2}");
    assert_ini("x = v {}\ny = v { , }\n", "main:x=v {}|main:y=v");
    assert_ini("x = v {colour = blue}\n", "error:0:Invalid file option 'colour'");
    assert_ini("x = v {mode = rw}\n", "error:0:File modes must be numbers");
    assert_ini("x = ${confdir}/x\n", "error:0:Could not parse '${confdir}/x'");
    assert_ini("x = v {mode=1,,owner=2}\n", "error:0:Could not parse 'v {mode=1,,owner=2}'");
    char *v = NULL;
    assert_int_equal(ini_translate(" 'a b'  ", &v), INI_STRING);
    assert_string_equal(v, " 'a b'"); /* the quotes are not the first and last characters */
    free(v);
    assert_int_equal(ini_translate("false", &v), INI_FALSE);
    assert_null(v);
}

/* ------------------------------------------------------------------ a tree */

static char root[64];

static void put(const char *rel, const char *text, mode_t mode)
{
    char *p = xasprintf("%s/%s", root, rel);
    for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = 0;
        mkdir(p, 0755);
        *s = '/';
    }
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(p, mode);
    free(p);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    strcpy(root, "/tmp/hiera-settings-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    put("etc/puppet.conf",
        "[main]\ncodedir = $confdir/../code\nvardir = $codedir/../var\n[server]\nenvironment = staging\n[agent]\nenvironment = agent\n", 0644);
    put("etc-bad/puppet.conf", "[main]\ncodedir = $confdir/../code\nnot a setting\n", 0644);
    put("etc-undefined/puppet.conf", "[main]\ncodedir = $nosuch/code\n", 0644);
    put("code/environments/staging/environment.conf",
        "modulepath = site:mod*:$basemodulepath\nconfig_version = bin/version.sh $environment\nbogus = 1\n", 0644);
    put("code/environments/staging/site/.keep", "", 0644);
    put("code/environments/staging/modA/.keep", "", 0644);
    put("code/environments/staging/modB/.keep", "", 0644);
    put("code/environments/staging/bin/version.sh", "#!/bin/sh\necho \"v $1 $LANG\"\nexit 0\n", 0755);
    put("code/environments/failing/environment.conf", "config_version = bin/version.sh\n", 0644);
    put("code/environments/failing/bin/version.sh", "#!/bin/sh\necho broken\nexit 3\n", 0755);
    put("code/environments/bad/environment.conf", "modulepath = $nosuch\n", 0644);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static hiera_settings *load(const char *confdir, const hiera_setting *extra, size_t nextra, hiera_error *err)
{
    hiera_setting cli[8];
    size_t n = 0;
    char *c = xasprintf("%s/%s", root, confdir);
    cli[n++] = (hiera_setting){"confdir", c};
    for (size_t i = 0; i < nextra; i++)
        cli[n++] = extra[i];
    hiera_settings_options o = HIERA_SETTINGS_OPTIONS_INIT;
    o.cli = cli;
    o.ncli = n;
    o.layout = HIERA_LAYOUT_DEBIAN;
    hiera_settings *s = hiera_settings_load(&o, err);
    free(c);
    return s;
}

static void assert_setting(const hiera_settings *s, const char *name, const char *want_rel)
{
    hiera_error err = {0};
    char *v = hiera_settings_get(s, name, &err);
    /* "=text": exactly that; "/path": that path; else a path under the tree */
    char *want = want_rel[0] == '=' ? xstrdup(want_rel + 1) : want_rel[0] == '/' ? xstrdup(want_rel) : xasprintf("%s/%s", root, want_rel);
    if (!v || strcmp(v, want))
        print_error("%s: expected %s, got %s (%s)\n", name, want, v ? v : "NULL", err.message ? err.message : "");
    assert_non_null(v);
    assert_string_equal(v, want);
    free(v);
    free(want);
    hiera_error_clear(&err);
}

static void test_settings_chain(void **state)
{
    (void)state;
    hiera_error err = {0};
    hiera_settings *s = load("etc", NULL, 0, &err);
    assert_non_null(s);
    assert_setting(s, "codedir", "code");
    assert_setting(s, "vardir", "var");
    assert_setting(s, "environmentpath", "code/environments");
    assert_setting(s, "basemodulepath", "code/modules:/usr/share/puppet/modules");
    assert_setting(s, "environment", "=staging"); /* [server] before [main]; [agent] not read */
    assert_setting(s, "hiera_config", "etc/hiera.yaml");
    char *f = xasprintf("%s/etc/puppet.conf", root);
    assert_string_equal(hiera_settings_file(s), f);
    free(f);
    hiera_settings_free(s);
    /* the command line wins */
    hiera_setting cli[] = {{"codedir", "/elsewhere"}, {"environment", "production"}};
    s = load("etc", cli, 2, &err);
    assert_setting(s, "codedir", "/elsewhere");
    assert_setting(s, "vardir", "/var"); /* $codedir/../var */
    assert_setting(s, "environment", "=production");
    hiera_settings_free(s);
    /* an unknown setting, an unresolvable one */
    hiera_setting bad[] = {{"colour", "blue"}};
    assert_null(load("etc", bad, 1, &err));
    assert_string_equal(err.message, "Attempt to assign a value to unknown setting :colour");
    hiera_error_clear(&err);
    assert_null(load("etc-undefined", NULL, 0, &err));
    assert_string_equal(err.message, "Error converting value for param 'codedir': Could not find value for $nosuch");
    hiera_error_clear(&err);
    assert_true(hiera_setting_exists("hiera_config"));
    assert_false(hiera_setting_exists("hiera-config"));
    size_t n = 0;
    const char *name;
    bool boolean;
    char shortopt;
    while (hiera_setting_info(n, &name, &boolean, &shortopt))
        n++;
    assert_int_equal(n, 233); /* Puppet 7.23's */
}

static int ndiag;
static char last_diag[512];
static void on_diag(const hiera_diagnostic *d, void *data)
{
    (void)data;
    ndiag++;
    snprintf(last_diag, sizeof last_diag, "%s %s", d->code, d->message);
}

static void test_settings_diagnostics(void **state)
{
    (void)state;
    hiera_setting cli[] = {{"confdir", NULL}};
    char *c = xasprintf("%s/etc-bad", root);
    cli[0].value = c;
    hiera_settings_options o = HIERA_SETTINGS_OPTIONS_INIT;
    o.cli = cli;
    o.ncli = 1;
    o.layout = HIERA_LAYOUT_DEBIAN;
    o.diagnostics = on_diag;
    hiera_error err = {0};
    ndiag = 0;
    hiera_settings *s = hiera_settings_load(&o, &err);
    assert_non_null(s);
    assert_int_equal(ndiag, 1);
    assert_non_null(strstr(last_diag, "puppet-conf-syntax Could not parse "));
    assert_non_null(strstr(last_diag, "Could not match line not a setting\n (file: "));
    assert_null(hiera_settings_file(s)); /* ignored as a whole */
    hiera_settings_free(s);
    free(c);
}

static void test_environments(void **state)
{
    (void)state;
    hiera_error err = {0};
    hiera_settings *s = load("etc", NULL, 0, &err);
    ndiag = 0;
    hiera_environment *e = hiera_environment_load(s, NULL, &err);
    assert_non_null(e);
    assert_string_equal(hiera_environment_name(e), "staging");
    char *dir = xasprintf("%s/code/environments/staging", root);
    assert_string_equal(hiera_environment_dir(e), dir);
    /* site, the glob's folders in order, then the basemodulepath */
    assert_int_equal(hiera_environment_modulepath_count(e), 5);
    char *want[5] = {xasprintf("%s/site", dir), xasprintf("%s/modA", dir), xasprintf("%s/modB", dir),
                     xasprintf("%s/code/modules", root), xstrdup("/usr/share/puppet/modules")};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(hiera_environment_modulepath(e, i), want[i]);
        free(want[i]);
    }
    char *cv = xasprintf("%s/bin/version.sh staging", dir);
    assert_string_equal(hiera_environment_config_version(e), cv);
    char *out = NULL;
    assert_true(hiera_environment_run_config_version(e, &out, &err));
    assert_string_equal(out, "v staging C");
    free(out);
    assert_true(hiera_environment_check(e, &err));
    hiera_environment_free(e);
    /* failing config_version */
    e = hiera_environment_load(s, "failing", &err);
    assert_non_null(e);
    assert_false(hiera_environment_run_config_version(e, NULL, &err));
    char *msg = xasprintf("Execution of config_version command `%s/code/environments/failing/bin/version.sh` failed: Execution of "
                          "'%s/code/environments/failing/bin/version.sh' returned 3: broken", root, root);
    assert_string_equal(err.message, msg);
    free(msg);
    hiera_error_clear(&err);
    hiera_environment_free(e);
    /* errors */
    assert_null(hiera_environment_load(s, "bad", &err));
    assert_string_equal(err.message, "Error converting value for param 'modulepath': Could not find value for $nosuch");
    hiera_error_clear(&err);
    assert_null(hiera_environment_load(s, "nosuch", &err));
    assert_non_null(strstr(err.message, "Could not find a directory environment named 'nosuch' anywhere in the path: "));
    hiera_error_clear(&err);
    hiera_settings_free(s);
    /* Puppet's default production environment: the basemodulepath, no folder */
    hiera_setting cli[] = {{"environmentpath", "/nonexistent/envs"}, {"environment", "production"}};
    s = load("etc", cli, 2, &err);
    e = hiera_environment_load(s, NULL, &err);
    assert_non_null(e);
    assert_null(hiera_environment_dir(e));
    assert_int_equal(hiera_environment_modulepath_count(e), 2);
    assert_null(hiera_environment_config_version(e));
    hiera_environment_free(e);
    hiera_settings_free(s);
    free(dir);
    free(cv);
}

/* The environment check passes over settings whose value is a constant default: each must convert
 * (were one not to, every puppet lookup would fail, and the check would have to ask it). */
static void test_constant_defaults(void **state)
{
    (void)state;
    const char *failed = NULL;
    bool ok = settings_constant_defaults_convert(&failed);
    if (!ok)
        fail_msg("the constant default of %s does not convert", failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant_defaults),
        cmocka_unit_test(test_ini_sections),
        cmocka_unit_test(test_ini_lines),
        cmocka_unit_test(test_ini_values),
        cmocka_unit_test(test_settings_chain),
        cmocka_unit_test(test_settings_diagnostics),
        cmocka_unit_test(test_environments),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
