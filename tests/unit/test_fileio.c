/* base/fileio.c: reading a whole file (bounds, which call failed, regular files only, key
 * material, sizes that stat does not give), Ruby's File.read messages, and comparing files. */
#include "testutil.h"

#include "base/fileio.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static char *path_of(const char *rel) { return xasprintf("%s/%s", root, rel); }

static char *write_bytes(const char *rel, const char *bytes, size_t n)
{
    char *p = path_of(rel);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    fclose(f);
    return p;
}

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(root, "fileio");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

static void test_whole_file(void **state)
{
    (void)state;
    /* bytes past a NUL, more than one growth of the buffer */
    size_t n = 200000;
    char *bytes = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        bytes[i] = (char)(i * 7 % 251);
    char *p = write_bytes("big", bytes, n);
    sbuf b = {0};
    sb_adds(&b, "head:");
    file_read_error fe;
    struct stat st;
    assert_true(file_read(p, &b, &(file_read_opts){.st = &st}, &fe));
    assert_int_equal(fe.failed, FILE_READ_OK);
    assert_int_equal(fe.err, 0);
    assert_int_equal(b.len, 5 + n); /* appended to what was there */
    assert_memory_equal(b.s, "head:", 5);
    assert_memory_equal(b.s + 5, bytes, n);
    assert_int_equal(b.s[b.len], 0);
    assert_int_equal(st.st_size, (off_t)n);
    assert_true(S_ISREG(st.st_mode));
    sb_free(&b);
    /* key material: the same bytes (its old buffers are wiped, not checked here) */
    assert_true(file_read(p, &b, &(file_read_opts){.secret = true}, NULL));
    assert_int_equal(b.len, n);
    assert_memory_equal(b.s, bytes, n);
    sb_free(&b);
    free(bytes);
    free(p);
    /* an empty file gives "", not NULL */
    p = write_bytes("empty", "", 0);
    assert_true(file_read(p, &b, NULL, NULL));
    assert_non_null(b.s);
    assert_int_equal(b.len, 0);
    sb_free(&b);
    free(p);
}

/* A file whose stat size is 0 though it has bytes (as /proc's): read to its end all the same. */
static void test_unsized_file(void **state)
{
    (void)state;
    sbuf b = {0};
    assert_true(file_read("/proc/self/status", &b, NULL, NULL));
    assert_non_null(strstr(sb_str(&b), "Name:"));
    assert_int_equal(strlen(b.s), b.len);
    sb_free(&b);
    assert_true(file_read("/proc/self/status", &b, &(file_read_opts){.secret = true}, NULL));
    assert_non_null(strstr(sb_str(&b), "\nPid:"));
    sb_free(&b);
}

static void test_bound(void **state)
{
    (void)state;
    char *p = write_bytes("ten", "0123456789", 10);
    sbuf b = {0};
    file_read_error fe;
    /* a file of exactly the bound is read; one byte more is too big */
    assert_true(file_read(p, &b, &(file_read_opts){.max = 10}, &fe));
    assert_string_equal(b.s, "0123456789");
    sb_free(&b);
    assert_false(file_read(p, &b, &(file_read_opts){.max = 9}, &fe));
    assert_int_equal(fe.failed, FILE_READ_TOO_BIG);
    assert_int_equal(fe.err, EFBIG);
    sb_free(&b);
    /* regular_only refuses it before reading */
    assert_false(file_read(p, &b, &(file_read_opts){.max = 9, .regular_only = true}, &fe));
    assert_int_equal(fe.failed, FILE_READ_TOO_BIG);
    assert_int_equal(b.len, 0);
    sb_free(&b);
    /* the bound holds where stat gives no size */
    assert_false(file_read("/proc/self/status", &b, &(file_read_opts){.max = 16}, &fe));
    assert_int_equal(fe.failed, FILE_READ_TOO_BIG);
    assert_true(b.len <= 17);
    sb_free(&b);
    free(p);
}

static void test_failures(void **state)
{
    (void)state;
    sbuf b = {0};
    file_read_error fe;
    char *missing = path_of("missing.yaml");
    assert_false(file_read(missing, &b, NULL, &fe));
    assert_int_equal(fe.failed, FILE_READ_OPEN);
    assert_int_equal(fe.err, ENOENT);
    char *m = file_read_ruby_message(missing, &fe);
    char *want = xasprintf("No such file or directory @ rb_sysopen - %s", missing);
    assert_string_equal(m, want);
    free(m);
    free(want);
    herr e = {0};
    herr_file_read(&e, HERR_PUPPET, missing, &fe);
    assert_int_equal(e.kind, HERR_PUPPET);
    assert_string_equal(e.file, missing);
    assert_int_equal(e.line, 0);
    assert_non_null(strstr(e.msg, "@ rb_sysopen - "));
    herr_clear(&e);
    sb_free(&b);
    free(missing);

    /* a folder opens, then read(2) fails: Ruby's "Is a directory @ io_fread" */
    assert_false(file_read(root, &b, NULL, &fe));
    assert_int_equal(fe.failed, FILE_READ_READ);
    assert_int_equal(fe.err, EISDIR);
    m = file_read_ruby_message(root, &fe);
    want = xasprintf("Is a directory @ io_fread - %s", root);
    assert_string_equal(m, want);
    free(m);
    free(want);
    sb_free(&b);
    /* regular files only: a folder, a FIFO (which would block) */
    assert_false(file_read(root, &b, &(file_read_opts){.regular_only = true}, &fe));
    assert_int_equal(fe.failed, FILE_READ_NOT_REGULAR);
    assert_int_equal(fe.err, EISDIR);
    char *fifo = path_of("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_false(file_read(fifo, &b, &(file_read_opts){.regular_only = true}, &fe));
    assert_int_equal(fe.failed, FILE_READ_NOT_REGULAR);
    assert_int_equal(fe.err, EINVAL);
    sb_free(&b);
    free(fifo);
    /* no permission (root reads everything: only checked for other users) */
    if (geteuid() != 0) {
        char *p = write_bytes("secret", "x", 1);
        assert_int_equal(chmod(p, 0), 0);
        assert_false(file_read(p, &b, NULL, &fe));
        assert_int_equal(fe.failed, FILE_READ_OPEN);
        assert_int_equal(fe.err, EACCES);
        sb_free(&b);
        free(p);
    }
}

static void test_same_bytes(void **state)
{
    (void)state;
    size_t n = 70000; /* several of the comparison's blocks */
    char *x = xmalloc(n);
    for (size_t i = 0; i < n; i++)
        x[i] = (char)(i % 97);
    char *a = write_bytes("a", x, n), *b = write_bytes("b", x, n);
    assert_true(file_same_bytes(a, b));
    assert_true(file_same_bytes(a, a));
    x[n - 1] ^= 1;
    char *c = write_bytes("c", x, n); /* differs in its last byte */
    assert_false(file_same_bytes(a, c));
    char *d = write_bytes("d", x, n - 1); /* a prefix */
    assert_false(file_same_bytes(a, d));
    assert_false(file_same_bytes(d, a));
    char *e = write_bytes("e", "", 0), *f = write_bytes("f", "", 0);
    assert_true(file_same_bytes(e, f));
    char *missing = path_of("missing");
    assert_false(file_same_bytes(a, missing));
    assert_false(file_same_bytes(missing, a));
    /* two folders cannot be read: not the same */
    char *sub = path_of("sub");
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_false(file_same_bytes(root, sub));
    free(x);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(f);
    free(missing);
    free(sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_file), cmocka_unit_test(test_unsized_file), cmocka_unit_test(test_bound),
        cmocka_unit_test(test_failures),   cmocka_unit_test(test_same_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
