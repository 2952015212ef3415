/* base/fsjournal.c: what a computation saw of the file system, recorded once per call and path,
 * serialised, and checked again: each kind of observation stops holding when what it saw
 * changes; taints; files changed a moment ago are not trusted; a malformed record never holds. */
#include "testutil.h"

#include "base/fileio.h"
#include "base/fsjournal.h"
#include "engine/installed.h"

#include <errno.h>
#include <unistd.h>

static char root[64];

static char *path_of(const char *rel) { return xasprintf("%s/%s", root, rel); }

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(root, "fsjournal");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

/* The record of what was observed since fsj_begin (NULL when it cannot be kept). */
static char *record(size_t *len, const char **why)
{
    sbuf b = {0};
    *why = NULL;
    assert_null(fsj_end());
    if (!fsj_serialise(&b, why)) {
        sb_free(&b);
        return NULL;
    }
    *len = b.len;
    return sb_take(&b);
}

static bool holds(const char *rec, size_t len)
{
    byte_reader r = {(const unsigned char *)rec, (const unsigned char *)rec + len};
    bool ok = fsj_check(&r);
    if (ok)
        assert_ptr_equal(r.p, r.end); /* the whole record read */
    return ok;
}

/* Observations of what is not there (no times to distrust): each stops holding when it appears. */
static void test_missing_things_appear(void **state)
{
    (void)state;
    char *file = path_of("f.yaml"), *dir = path_of("d"), *link = path_of("l"), *acc = path_of("a");
    struct stat st;
    char buf[64];
    fsj_begin();
    assert_int_not_equal(fs_stat(file, &st), 0);
    assert_int_equal(errno, ENOENT); /* errno kept for the caller */
    assert_int_not_equal(fs_stat(file, &st), 0); /* the same again: one observation */
    assert_null(fs_opendir(dir));
    assert_int_equal(fs_readlink(link, buf, sizeof buf), -1);
    assert_int_not_equal(fs_access(acc, R_OK), 0);
    sbuf content = {0};
    assert_false(file_read(file, &content, NULL, NULL)); /* an open that failed */
    sb_free(&content);
    size_t len;
    const char *why;
    char *rec = record(&len, &why);
    assert_non_null(rec);
    assert_true(holds(rec, len));

    FILE *f = fopen(file, "w");
    fclose(f);
    assert_false(holds(rec, len));
    unlink(file);
    assert_true(holds(rec, len));
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_false(holds(rec, len));
    rmdir(dir);
    assert_int_equal(symlink("x", link), 0);
    assert_false(holds(rec, len));
    unlink(link);
    f = fopen(acc, "w");
    fclose(f);
    assert_false(holds(rec, len));
    unlink(acc);
    assert_true(holds(rec, len));
    free(rec);
    free(file);
    free(dir);
    free(link);
    free(acc);
}

/* A file, a folder and a link that exist were changed a moment ago: not kept, and said why. */
static void test_fresh_files_not_trusted(void **state)
{
    (void)state;
    char *file = path_of("fresh.yaml");
    FILE *f = fopen(file, "w");
    fputs("a: 1\n", f);
    fclose(f);
    struct stat st;
    fsj_begin();
    assert_int_equal(fs_stat(file, &st), 0);
    size_t len;
    const char *why;
    char *rec = record(&len, &why);
    assert_null(rec);
    assert_non_null(why);
    assert_non_null(strstr(why, "less than a second ago"));
    unlink(file);
    free(file);
}

/* realpath and readlink record their text; a link pointed elsewhere stops holding. */
static void test_links(void **state)
{
    (void)state;
    char *link = path_of("ln"), *missing = path_of("nothing/here");
    assert_int_equal(symlink("/nonexistent-target-a", link), 0);
    char buf[128];
    fsj_begin();
    assert_int_equal(fs_readlink(link, buf, sizeof buf), (ssize_t)strlen("/nonexistent-target-a"));
    assert_string_equal(buf, "/nonexistent-target-a");
    assert_int_equal(fs_readlink(link, buf, 4), -1); /* does not fit */
    assert_null(fs_realpath(missing));
    size_t len;
    const char *why;
    /* the link itself is fresh, but only its text was observed: no times to distrust */
    char *rec = record(&len, &why);
    assert_non_null(rec);
    assert_true(holds(rec, len));
    unlink(link);
    assert_int_equal(symlink("/nonexistent-target-b", link), 0);
    assert_false(holds(rec, len));
    unlink(link);
    free(rec);
    free(link);
    free(missing);
}

static void test_taint(void **state)
{
    (void)state;
    fsj_taint("before"); /* not recording: nothing */
    fsj_begin();
    assert_true(fsj_active());
    fsj_taint("the first reason");
    fsj_taint("the second");
    const char *why = fsj_end();
    assert_false(fsj_active());
    assert_non_null(why);
    assert_string_equal(why, "the first reason");
    fsj_begin(); /* forgotten */
    assert_null(fsj_end());
}

/* Truncated or corrupt records never hold (and never read past their end). */
static void test_malformed(void **state)
{
    (void)state;
    char *file = path_of("nope");
    struct stat st;
    fsj_begin();
    assert_int_not_equal(fs_stat(file, &st), 0);
    assert_int_not_equal(fs_lstat(file, &st), 0);
    size_t len;
    const char *why;
    char *rec = record(&len, &why);
    assert_non_null(rec);
    for (size_t cut = 0; cut < len; cut++) {
        char *part = xmalloc(cut ? cut : 1);
        memcpy(part, rec, cut);
        byte_reader r = {(const unsigned char *)part, (const unsigned char *)part + cut};
        assert_false(fsj_check(&r));
        free(part);
    }
    rec[4] = 'Z'; /* an operation that does not exist */
    assert_false(holds(rec, len));
    free(rec);
    free(file);
}

/* While the journal is on, an observation this run made already is compared with what it saw
 * then (moments before), not made again: what was seen decides, both ways. */
static void test_checked_against_this_run(void **state)
{
    (void)state;
    char *file = path_of("seen-now.yaml"), *other = path_of("other.yaml");
    struct stat st;
    fsj_begin();
    assert_int_not_equal(fs_stat(file, &st), 0);
    assert_int_not_equal(fs_stat(other, &st), 0);
    size_t len;
    const char *why;
    char *rec = record(&len, &why); /* both missing */
    assert_non_null(rec);

    fsj_begin();
    assert_int_not_equal(fs_stat(file, &st), 0); /* this run saw it missing... */
    FILE *f = fopen(file, "w");                   /* ...and it appears after */
    fclose(f);
    assert_true(holds(rec, len)); /* what this run saw (missing) is the record's */
    f = fopen(other, "w");        /* not seen by this run: the call is made */
    fclose(f);
    assert_false(holds(rec, len));
    unlink(other);
    assert_true(holds(rec, len));
    assert_null(fsj_end());
    assert_false(holds(rec, len)); /* the journal stopped: every call made again */

    unlink(file);
    fsj_begin();
    f = fopen(file, "w");
    fclose(f);
    assert_int_equal(fs_stat(file, &st), 0); /* this run saw it there */
    unlink(file);
    assert_false(holds(rec, len)); /* though it is missing again, as the record says */
    assert_null(fsj_end());
    assert_true(holds(rec, len));
    free(rec);
    free(file);
    free(other);
}

/* The search of PATH for puppet is made once a session of the journal: one made before the
 * journal began is made again under it (its calls must be in the record), and one made under it
 * is not made again (installed.c) */
static void test_puppet_search_per_session(void **state)
{
    (void)state;
    char *bin = path_of("bin"), *puppet = path_of("bin/puppet");
    char *old = getenv("PATH") ? xstrdup(getenv("PATH")) : NULL;
    assert_int_equal(mkdir(bin, 0755), 0);
    setenv("PATH", bin, 1);
    free(installed_puppet_command()); /* journal off: nothing recorded */
    fsj_begin();
    assert_null(installed_puppet_command()); /* searched again: bin/puppet seen missing */
    assert_null(installed_puppet_command()); /* (the same session: not again) */
    size_t len;
    const char *why;
    char *rec = record(&len, &why);
    assert_non_null(rec);
    assert_true(holds(rec, len));
    FILE *f = fopen(puppet, "w");
    fclose(f);
    assert_int_equal(chmod(puppet, 0755), 0);
    assert_false(holds(rec, len)); /* a puppet installed where the search looked */
    unlink(puppet);
    assert_true(holds(rec, len));
    if (old)
        setenv("PATH", old, 1);
    else
        unsetenv("PATH");
    rmdir(bin);
    free(old);
    free(rec);
    free(bin);
    free(puppet);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_things_appear), cmocka_unit_test(test_fresh_files_not_trusted),
        cmocka_unit_test(test_links), cmocka_unit_test(test_taint), cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_checked_against_this_run), cmocka_unit_test(test_puppet_search_per_session),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
