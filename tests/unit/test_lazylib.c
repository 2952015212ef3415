/* Unit tests for the libraries the hiera command opens on first use (src/base/lazy/oniguruma.c,
 * src/crypto/lazy/libcrypto.c, base/lazylib.h) when they cannot be opened: the process is not
 * ended and nothing is printed; each public call that needs the library fails with an error
 * that carries dlerror's text, and calls that do not need it go on answering. The two loaders
 * are compiled in here (they are the command's, not libhiera's), and dlopen is replaced by one
 * that refuses Oniguruma and libcrypto with a known dlerror text. */
#include "testutil.h"

#include "../../src/base/lazy/oniguruma.c"
#include "../../src/crypto/lazy/libcrypto.c"

#include "base/rregex.h"
#include "hiera.h"

#include <unistd.h>

#define REFUSAL "test: this library is hidden"

static int refused;
static bool last_refused;

/* dlopen for this program: the two libraries are "missing", anything else is opened */
void *dlopen(const char *file, int mode)
{
    if (file && (strstr(file, "libonig") || strstr(file, "libcrypto"))) {
        refused++;
        last_refused = true;
        return NULL;
    }
    last_refused = false;
    void *(*real)(const char *, int);
    *(void **)&real = dlsym(RTLD_NEXT, "dlopen");
    return real(file, mode);
}

char *dlerror(void)
{
    if (last_refused) {
        last_refused = false;
        return (char *)REFUSAL;
    }
    char *(*real)(void);
    *(void **)&real = dlsym(RTLD_NEXT, "dlerror");
    return real();
}

static char dir[64];

static int setup(void **state)
{
    (void)state;
    if (testutil_scratch(dir, "lazylib"))
        return -1;
    free(testutil_write_under(dir, "hiera.yaml",
                              "version: 5\n"
                              "hierarchy:\n"
                              "  - name: common\n"
                              "    path: common.yaml\n"
                              "  - name: secrets\n"
                              "    lookup_key: eyaml_lookup_key\n"
                              "    path: secrets.eyaml\n"
                              "    options:\n"
                              "      pkcs7_private_key: /nonexistent/private.pem\n"
                              "      pkcs7_public_key: /nonexistent/public.pem\n"));
    free(testutil_write_under(dir, "hiera-eyaml.yaml",
                              "version: 5\n"
                              "hierarchy:\n"
                              "  - name: secrets\n"
                              "    lookup_key: eyaml_lookup_key\n"
                              "    path: secrets.eyaml\n"
                              "    options:\n"
                              "      pkcs7_private_key: /nonexistent/private.pem\n"
                              "      pkcs7_public_key: /nonexistent/public.pem\n"));
    free(testutil_write_under(dir, "environments/production/.keep", ""));
    free(testutil_write_under(dir, "data/common.yaml",
                              "plain: value\n"
                              "lookup_options:\n"
                              "  '^pro(file|ject)::.+$':\n"
                              "    merge: deep\n"
                              "profile::x: 1\n"));
    free(testutil_write_under(dir, "data/secrets.eyaml", "secret: ENC[PKCS7,MIIBeQYJKoZIhvcNAQcDoIIBajCCAWYCAQA=]\n"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    testutil_remove_tree(dir);
    return 0;
}

static hiera *context(const char *config)
{
    char *codedir = xasprintf("%s", dir), *envpath = xasprintf("%s/environments", dir),
         *global = xasprintf("%s/%s", dir, config);
    hiera_value *facts = hiera_value_new_hash();
    hiera_options o = HIERA_OPTIONS_INIT;
    o.codedir = codedir;
    o.environmentpath = envpath;
    o.hiera_config = global;
    o.facts = facts;
    hiera_error err = {0};
    hiera *h = hiera_new(&o, &err);
    if (!h)
        print_error("hiera_new: %s\n", err.message);
    assert_non_null(h);
    hiera_error_clear(&err);
    hiera_value_decref(facts);
    free(codedir);
    free(envpath);
    free(global);
    return h;
}

/* A regexp needs Oniguruma: the error says why it is missing, with dlerror's text. */
static void test_regexp_error(void **state)
{
    (void)state;
    herr e = {0};
    rregex *re = rregex_new("a+(b|c)", 7, &e);
    assert_null(re);
    assert_non_null(e.msg);
    assert_non_null(strstr(e.msg, "cannot load Oniguruma's libonig"));
    assert_non_null(strstr(e.msg, REFUSAL));
    herr_clear(&e);
    assert_non_null(lazylib_failure(LAZYLIB_ONIG));
    /* a literal pattern needs no Oniguruma for ASCII text: it still matches */
    re = rregex_new("abc", 3, &e);
    assert_non_null(re);
    assert_true(rregex_search(re, "xxabcxx", 7));
    rregex_free(re);
}

/* A lookup whose lookup_options hold a regexp fails with the reason; the process goes on. */
static void test_lookup_error(void **state)
{
    (void)state;
    hiera *h = context("hiera.yaml");
    hiera_value *v = NULL;
    hiera_error err = {0};
    hiera_status st = hiera_lookup_key(h, "profile::x", &v, &err);
    assert_int_equal(st, HIERA_ERROR);
    assert_null(v);
    assert_int_equal(err.kind, HIERA_ERR_FATAL);
    assert_non_null(strstr(err.message, "cannot load Oniguruma's libonig"));
    assert_non_null(strstr(err.message, REFUSAL));
    hiera_error_clear(&err);
    hiera_free(h);
}

/* An eyaml value needs libcrypto: the lookup fails with the reason, never exits. */
static void test_eyaml_error(void **state)
{
    (void)state;
    hiera *h = context("hiera-eyaml.yaml");
    hiera_value *v = NULL;
    hiera_error err = {0};
    hiera_request r = HIERA_REQUEST_INIT;
    const char *key = "secret";
    r.keys = &key;
    r.nkeys = 1;
    hiera_status st = hiera_lookup(h, &r, &v, &err);
    assert_int_equal(st, HIERA_ERROR);
    assert_non_null(err.message);
    if (!strstr(err.message, "cannot load OpenSSL's libcrypto"))
        print_error("message: %s\n", err.message);
    assert_non_null(strstr(err.message, "cannot load OpenSSL's libcrypto"));
    assert_non_null(strstr(err.message, REFUSAL));
    hiera_error_clear(&err);
    hiera_free(h);
    assert_non_null(lazylib_failure(LAZYLIB_CRYPTO));
}

/* Rendering non-ASCII text the Ruby way needs Oniguruma's tables: hiera_render fails with the
 * reason (YAML and s), JSON needs nothing and answers. */
static void test_render_error(void **state)
{
    (void)state;
    hiera_value *v = hiera_value_new_string("caf\xc3\xa9 \xe2\x80\x8b");
    hiera_error err = {0};
    char *s = hiera_render(v, HIERA_RENDER_JSON, &err);
    assert_non_null(s);
    free(s);
    hiera_value *a = hiera_value_new_array();
    hiera_value_array_push(a, hiera_value_incref(v));
    s = hiera_render(a, HIERA_RENDER_S, &err);
    assert_null(s);
    assert_non_null(err.message);
    assert_non_null(strstr(err.message, "cannot load Oniguruma's libonig"));
    hiera_error_clear(&err);
    hiera_value_decref(a);
    hiera_value_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_regexp_error),
        cmocka_unit_test(test_lookup_error),
        cmocka_unit_test(test_eyaml_error),
        cmocka_unit_test(test_render_error),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    /* the loaders tried once each, whatever was asked afterwards */
    if (rc == 0 && refused > 4) {
        fprintf(stderr, "dlopen was asked %d times\n", refused);
        rc = 1;
    }
    return rc;
}
