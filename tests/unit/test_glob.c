/* Unit tests for src/base/glob.c: glob_expand compared with what Ruby 3.1's
 * `Pathname.glob(root + pattern).reject(&:directory?)` printed for an identical tree (the tree
 * is built below; expectations are relative to its root, entries separated by '|'). */
#include <errno.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "base/glob.h"

static char root[64];

static void mk_dir(const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        abort();
    free(p);
}

static void mk_file(const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    FILE *f = fopen(p, "wb");
    if (!f)
        abort();
    fputs("x\n", f);
    fclose(f);
    free(p);
}

static void mk_link(const char *target, const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    if (symlink(target, p) != 0)
        abort();
    free(p);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (flag == FTW_DP)
        chmod(path, 0755); /* make a closed directory removable */
    remove(path);
    return 0;
}

static void rm_tree(const char *dir)
{
    /* reopen closed directories first so nftw can list them */
    char *closed = xasprintf("%s/perm/closed", dir);
    chmod(closed, 0755);
    free(closed);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The tree Ruby was run on: files, nested directories, dotfiles, a directory named x.yaml,
 * upper case and non-ASCII names, names with glob characters, and symlinks (to a directory,
 * to a file, dangling, and one to its own directory). */
static int setup_tree(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/hiera-glob-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    chmod(root, 0755);
    static const char *dirs[] = {"a", "a/b", "a/b/c", "nodes", "x.yaml", ".hid", ".hid/sub", "dirA", "B",
                                 "sub2", "sub2/deep", "sub2/deep/er", "emptydir"};
    static const char *files[] = {"a.yaml", "b.yaml", "B.yaml", "c.yml", ".dot.yaml", "we ird.yaml",
                                  "q[1].yaml", "star*.yaml", "\xc3\xa9.yaml", "a-b.yaml", "a,b.yaml",
                                  "{x}.yaml", "A.YAML", "a/z.yaml", "a/.h.yaml", "a/b/y.yaml",
                                  "a/b/c/x.yaml", "nodes/n1.yaml", "nodes/n2.json", "nodes/N3.yaml",
                                  "x.yaml/inner.yaml", ".hid/h.yaml", ".hid/sub/s.yaml", "dirA/A.yaml",
                                  "B/b.yaml", "sub2/deep/er/e.yaml"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        mk_dir(dirs[i]);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        mk_file(files[i]);
    mk_link("a", "linka");
    mk_link("b.yaml", "linkb.yaml");
    mk_link("nonexist", "broken.yaml");
    mk_link(".", "selfloop");
    return 0;
}

static int teardown_tree(void **state)
{
    (void)state;
    rm_tree(root);
    return 0;
}

/* Runs glob_expand(root + pat) and renders the result relative to root, '|'-separated. */
static char *expand_rel(const char *pat, size_t limit, int *rc)
{
    char *full = xasprintf("%s%s", root, pat);
    glob_result r;
    *rc = glob_expand(full, &r, limit);
    sbuf b = {0};
    size_t rl = strlen(root);
    for (size_t i = 0; i < r.n; i++) {
        if (i)
            sb_addc(&b, '|');
        sb_adds(&b, strncmp(r.paths[i], root, rl) == 0 ? r.paths[i] + rl : r.paths[i]);
    }
    glob_free(&r);
    free(full);
    return sb_take(&b);
}

static const struct {
    const char *pattern;
    const char *ruby; /* what Ruby 3.1 printed */
} cases[] = {
    {"/**/*.yaml", "/B/b.yaml|/B.yaml|/a/b/c/x.yaml|/a/b/y.yaml|/a/z.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/dirA/A.yaml|/linkb.yaml|/nodes/N3.yaml|/nodes/n1.yaml|/q[1].yaml|/star*.yaml|/sub2/deep/er/e.yaml|/we ird.yaml|/x.yaml/inner.yaml|/{x}.yaml|/\xc3""\xa9"".yaml"},
    {"/*.yaml", "/B.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/linkb.yaml|/q[1].yaml|/star*.yaml|/we ird.yaml|/{x}.yaml|/\xc3""\xa9"".yaml"},
    {"/*", "/A.YAML|/B.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/c.yml|/linkb.yaml|/q[1].yaml|/star*.yaml|/we ird.yaml|/{x}.yaml|/\xc3""\xa9"".yaml"},
    {"/.*", "/.dot.yaml"},
    {"/**/.*", "/.dot.yaml|/a/.h.yaml"},
    {"/*/.*", "/a/.h.yaml|/linka/.h.yaml|/selfloop/.dot.yaml"},
    {"/.*/*.yaml", "/./B.yaml|/./a,b.yaml|/./a-b.yaml|/./a.yaml|/./b.yaml|/./broken.yaml|/./linkb.yaml|/./q[1].yaml|/./star*.yaml|/./we ird.yaml|/./{x}.yaml|/./\xc3""\xa9"".yaml|/.hid/h.yaml"},
    {"/a/.*/*.yaml", "/a/./z.yaml"},
    {"/**/{a,b}.yaml", "/B/b.yaml|/a.yaml|/b.yaml"},
    {"/{b,a}.yaml", "/b.yaml|/a.yaml"},
    {"/{a,a}.yaml", "/a.yaml|/a.yaml"},
    {"/{a,*}.yaml", "/a.yaml|/B.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/linkb.yaml|/q[1].yaml|/star*.yaml|/we ird.yaml|/{x}.yaml|/\xc3""\xa9"".yaml"},
    {"/*.{yaml,yml}", "/B.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/linkb.yaml|/q[1].yaml|/star*.yaml|/we ird.yaml|/{x}.yaml|/\xc3""\xa9"".yaml|/c.yml"},
    {"/{nodes,dirA}/*.yaml", "/nodes/N3.yaml|/nodes/n1.yaml|/dirA/A.yaml"},
    {"/{a/,B/}*.yaml", "/a/z.yaml|/B/b.yaml"},
    {"/{{a,b},c}*.y*ml", "/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/c.yml"},
    {"/[ab].yaml", "/a.yaml|/b.yaml"},
    {"/[!a].yaml", "/B.yaml|/b.yaml|/\xc3""\xa9"".yaml"},
    {"/[^a].yaml", "/B.yaml|/b.yaml|/\xc3""\xa9"".yaml"},
    {"/[a-c].yaml", "/a.yaml|/b.yaml"},
    {"/[A-Z]*.yaml", "/B.yaml"},
    {"/*.YAML", "/A.YAML"},
    {"/?.yaml", "/B.yaml|/a.yaml|/b.yaml|/\xc3""\xa9"".yaml"},
    {"/[\xc3""\xa0""-\xc3""\xaa""].yaml", "/\xc3""\xa9"".yaml"},
    {"/q\\[1\\].yaml", "/q[1].yaml"},
    {"/star\\*.yaml", "/star*.yaml"},
    {"/\\{x\\}.yaml", "/{x}.yaml"},
    {"/{x}.yaml", ""},
    {"/a{", ""},
    {"/[ab", ""},
    {"/a/b/c/x.yaml", "/a/b/c/x.yaml"},
    {"/a/b/c/nope.yaml", ""},
    {"/a/../b.yaml", "/a/../b.yaml"},
    {"/*/../a.yaml", "/B/../a.yaml|/a/../a.yaml|/dirA/../a.yaml|/emptydir/../a.yaml|/linka/../a.yaml|/nodes/../a.yaml|/sub2/../a.yaml|/x.yaml/../a.yaml"},
    {"/a/", ""},
    {"/b.yaml/", ""},
    {"/linka/**/*.yaml", "/linka/b/c/x.yaml|/linka/b/y.yaml|/linka/z.yaml"},
    {"/**/z.yaml", "/a/z.yaml"},
    {"/*/z.yaml", "/a/z.yaml|/linka/z.yaml"},
    {"/selfloop/*.yaml", "/selfloop/B.yaml|/selfloop/a,b.yaml|/selfloop/a-b.yaml|/selfloop/a.yaml|/selfloop/b.yaml|/selfloop/broken.yaml|/selfloop/linkb.yaml|/selfloop/q[1].yaml|/selfloop/star*.yaml|/selfloop/we ird.yaml|/selfloop/{x}.yaml|/selfloop/\xc3""\xa9"".yaml"},
    {"/**/x.yaml", "/a/b/c/x.yaml"},
    {"/x.yaml/*", "/x.yaml/inner.yaml"},
    {"/**/", ""},
    {"/**", "/A.YAML|/B.yaml|/a,b.yaml|/a-b.yaml|/a.yaml|/b.yaml|/broken.yaml|/c.yml|/linkb.yaml|/q[1].yaml|/star*.yaml|/we ird.yaml|/{x}.yaml|/\xc3""\xa9"".yaml"},
    {"/a/**/b/**/x.yaml", "/a/b/c/x.yaml"},
    {"/**/*/**/y.yaml", "/a/b/y.yaml|/linka/b/y.yaml|/selfloop/a/b/y.yaml"},
    {"/emptydir/*", ""},
    {"/nothere/**/*.yaml", ""},
    {"/{**/,}x.yaml", "/a/b/c/x.yaml"},
    {"/**/n*/*.yaml", "/nodes/N3.yaml|/nodes/n1.yaml"},
    {"/.hid/**/*.yaml", "/.hid/h.yaml|/.hid/sub/s.yaml"},
    {"/**/.hid/*", "/.hid/h.yaml"},
    {"/[.]dot.yaml", ""},
    {"/\\.dot.yaml", "/.dot.yaml"},
    {"/?dot.yaml", ""},
    {"/broken*", "/broken.yaml"},
    {"/a//z.yaml", "/a//z.yaml"},
    {"/**/*.{json,yml}", "/c.yml|/nodes/n2.json"},
    {"/*/.*/*.yaml", "/selfloop/.hid/h.yaml"},
    {"/{a,B}/.*/*.yaml", "/a/./z.yaml|/B/./b.yaml"},
    {"/**/.*/*.yaml", "/.hid/h.yaml"},
};

static void test_patterns_like_ruby(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc;
        char *got = expand_rel(cases[i].pattern, 0, &rc);
        if (rc != 0 || strcmp(got, cases[i].ruby) != 0) {
            print_error("pattern %s\n  ruby: %s\n  got:  %s (rc %d)\n", cases[i].pattern, cases[i].ruby, got, rc);
            failures++;
        }
        free(got);
    }
    assert_int_equal(failures, 0);
}

static void test_limit(void **state)
{
    (void)state;
    int rc;
    char *all = expand_rel("/**/*.yaml", 0, &rc);
    assert_int_equal(rc, 0);
    size_t n = 1;
    for (const char *p = all; *p; p++)
        n += *p == '|';
    assert_int_equal(n, 21);

    char *five = expand_rel("/**/*.yaml", 5, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(five, "/B/b.yaml|/B.yaml|/a/b/c/x.yaml|/a/b/y.yaml|/a/z.yaml");
    free(five);

    char *exact = expand_rel("/**/*.yaml", 21, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(exact, all);
    free(exact);

    /* directories do not count against the cap */
    char *one = expand_rel("/x.yaml*", 1, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(one, "");
    free(one);
    free(all);
}

static void test_degenerate_patterns(void **state)
{
    (void)state;
    glob_result r;
    assert_int_equal(glob_expand(NULL, &r, 0), 0);
    assert_int_equal(r.n, 0);
    glob_free(&r);
    assert_int_equal(glob_expand("", &r, 0), 0);
    assert_int_equal(r.n, 0);
    glob_free(&r);
    glob_free(NULL);
}

/* Hostile patterns stop on the work bound instead of running for ages: 2^30 alternatives. */
static void test_brace_bomb_is_bounded(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 30; i++)
        sb_adds(&b, "/{a,b}");
    int rc;
    char *got = expand_rel(sb_str(&b), 0, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(got, "");
    free(got);
    sb_free(&b);

    /* 10000 nested braces: Ruby recurses once per group; we stop at a fixed nesting */
    for (int i = 0; i < 10000; i++)
        sb_addc(&b, '{');
    sb_adds(&b, "a.yaml");
    for (int i = 0; i < 10000; i++)
        sb_addc(&b, '}');
    char *pat = xasprintf("/%s", sb_str(&b));
    got = expand_rel(pat, 0, &rc);
    assert_int_equal(rc, -1);
    free(got);
    free(pat);
    sb_free(&b);
}

/* "selfloop" points at its own directory: `**` does not follow it, and a long chain of '*'
 * through it ends when the kernel refuses the path (ELOOP), without hanging. */
static void test_symlink_cycles_terminate(void **state)
{
    (void)state;
    sbuf b = {0};
    for (int i = 0; i < 300; i++)
        sb_adds(&b, "/*");
    sb_adds(&b, ".yaml");
    int rc;
    char *got = expand_rel(sb_str(&b), 0, &rc);
    assert_string_equal(got, "");
    free(got);
    sb_free(&b);

    /* a symlink pointing at itself: Ruby raises Errno::ELOOP from opendir here; we skip it */
    mk_link("loopy", "loopy");
    got = expand_rel("/loopy/*", 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "");
    free(got);
    char *p = xasprintf("%s/loopy", root);
    unlink(p);
    free(p);
}

/* A real directory chain deeper than the walker goes: the walk stops and says so. */
static void test_depth_bound(void **state)
{
    (void)state;
    sbuf rel = {0};
    sb_adds(&rel, "deep");
    mk_dir(sb_str(&rel));
    for (int i = 0; i < 300; i++) {
        sb_adds(&rel, "/d");
        mk_dir(sb_str(&rel));
    }
    sb_adds(&rel, "/bottom.yaml");
    mk_file(sb_str(&rel));
    int rc;
    char *got = expand_rel("/deep/**/bottom.yaml", 0, &rc);
    assert_int_equal(rc, -1);
    assert_string_equal(got, "");
    free(got);
    /* a shallow pattern into the same chain is fine */
    got = expand_rel("/deep/d/d/*", 0, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(got, "");
    free(got);
    char *dir = xasprintf("%s/deep", root);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
    sb_free(&rel);
}

/* Unreadable directories are skipped silently (Ruby only warns for EACCES). Expectations from
 * Ruby run as nobody on the same tree. Root ignores permissions, so as root the check runs in
 * a child that drops to uid/gid 65534. */
static int check_unreadable(void)
{
    static const struct {
        const char *pattern, *ruby;
    } pc[] = {
        {"/perm/**/*.yaml", "/perm/open/a.yaml|/perm/z.yaml"},
        {"/perm/*/*.yaml", "/perm/open/a.yaml"},
        {"/perm/closed/*.yaml", ""},
        {"/perm/closed/b.yaml", ""},
        {"/perm/closed/inner/*.yaml", ""},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof pc / sizeof *pc; i++) {
        int rc;
        char *got = expand_rel(pc[i].pattern, 0, &rc);
        if (rc != 0 || strcmp(got, pc[i].ruby) != 0) {
            fprintf(stderr, "pattern %s\n  ruby: %s\n  got:  %s\n", pc[i].pattern, pc[i].ruby, got);
            bad++;
        }
        free(got);
    }
    return bad;
}

static void test_unreadable_dirs_skipped(void **state)
{
    (void)state;
    mk_dir("perm");
    mk_dir("perm/open");
    mk_dir("perm/closed");
    mk_dir("perm/closed/inner");
    mk_file("perm/open/a.yaml");
    mk_file("perm/closed/b.yaml");
    mk_file("perm/closed/inner/c.yaml");
    mk_file("perm/z.yaml");
    char *closed = xasprintf("%s/perm/closed", root);
    assert_int_equal(chmod(closed, 0), 0);
    if (geteuid() != 0) {
        assert_int_equal(check_unreadable(), 0);
    } else {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0)
                _exit(77);
            _exit(check_unreadable() ? 1 : 0);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) == 77)
            print_message("cannot drop privileges: unreadable-directory check skipped\n");
        else
            assert_int_equal(WEXITSTATUS(st), 0);
    }
    chmod(closed, 0755);
    free(closed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns_like_ruby),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_degenerate_patterns),
        cmocka_unit_test(test_brace_bomb_is_bounded),
        cmocka_unit_test(test_symlink_cycles_terminate),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_unreadable_dirs_skipped),
    };
    return cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}
