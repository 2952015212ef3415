/* testutil.h - shared by the cmocka unit tests in tests/unit/test_*.c. */
#ifndef HIERA_TESTUTIL_H
#define HIERA_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "formats/json.h"
#include "base/util.h"
#include "base/value.h"

/* Asserts that v renders (hjson_debug) exactly as the expected JSON text, compared after parsing
 * the expectation, so key order matters and 1 differs from 1.0. */
#define assert_value_json(v, expected_json) \
    testutil_assert_value_json((v), (expected_json), __FILE__, __LINE__)

static inline void testutil_assert_value_json(const hv *v, const char *expected, const char *file, int line)
{
    herr e = {0};
    hv *want = hjson_parse(expected, strlen(expected), "<expected>", &e);
    if (!want)
        _fail(file, line);
    char *got = hjson_debug(v), *exp = hjson_debug(want);
    bool same = v && hv_eql(v, want);
    if (!same)
        print_error("value mismatch\n  expected %s\n       got %s\n", exp, got);
    free(got);
    free(exp);
    hv_decref(want);
    if (!same)
        _fail(file, line);
}

/* The value of a JSON text (hjson_parse), which the test asserts parses; a new reference. */
static inline hv *testutil_json(const char *text)
{
    herr e = {0};
    hv *v = hjson_parse(text, strlen(text), "<test>", &e);
    if (!v)
        print_error("bad test JSON: %s\n", e.msg ? e.msg : "");
    assert_non_null(v);
    return v;
}

static char testutil_tmp_dir[64];

static inline int testutil_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path); /* what cannot be removed stays; the rest goes */
    return 0;
}

/* Removes dir and everything below it (links not followed): 0 when it is gone, else -1. */
static inline int testutil_remove_tree(const char *dir)
{
    nftw(dir, testutil_rm, 16, FTW_DEPTH | FTW_PHYS);
    struct stat st;
    return lstat(dir, &st) == 0 ? -1 : 0;
}

/* Makes a fresh folder /tmp/hiera-NAME-XXXXXX and writes its path into dir (64 bytes, as the
 * tests' static buffers): 0, or -1 when it cannot be made (a cmocka setup's answer). */
static inline int testutil_scratch(char dir[64], const char *name)
{
    snprintf(dir, 64, "/tmp/hiera-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

static inline void testutil_rm_tmp(void) { testutil_remove_tree(testutil_tmp_dir); }

/* Writes text to a fresh file under a temporary directory (removed when the program exits) and
 * returns its malloc'ed path. */
static inline char *testutil_write_tmp(const char *name, const char *text)
{
    char *dir = testutil_tmp_dir;
    if (!dir[0]) {
        snprintf(dir, sizeof testutil_tmp_dir, "/tmp/hiera-test-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(testutil_rm_tmp);
    }
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return path;
}

/* Writes dir/rel, making the folders rel names; returns the malloc'ed path. */
static inline char *testutil_write_under(const char *dir, const char *rel, const char *text)
{
    char *path = xasprintf("%s/%s", dir, rel);
    for (char *p = path + strlen(dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
    return path;
}

#endif
