/* edit/: byte-preserving edits of YAML data files (hiera_edit_text), the files they read and write
 * (hiera_file_replace, hiera_text_digest, hiera_text_diff), and a randomized test: random documents
 * in every style the editor meets (comments, blank lines, quoting, block scalars, flow and block
 * collections, anchors, CRLF, document markers) and random edits, each result checked against the
 * loader (formats/psych.h: what Puppet reads) and against the old text outside the edited lines. */
#include "testutil.h"

#include "formats/psych.h"
#include "hiera.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static int setup(void **state)
{
    (void)state;
    return testutil_scratch(root, "edit");
}

static int teardown(void **state)
{
    (void)state;
    return testutil_remove_tree(root);
}

/* ------------------------------------------------------------------ helpers */

/* text edited: key set to the YAML value (NULL: unset); the result, or NULL when refused (*why then
 * holds the message, malloc'ed) */
static char *edit(const char *text, const char *key, const char *yaml, char **why, int *line)
{
    hiera_error err = {0};
    hiera_value *v = yaml ? hiera_value_from_yaml(yaml, strlen(yaml), &err) : NULL;
    if (yaml)
        assert_non_null(v);
    hiera_edit e = HIERA_EDIT_INIT;
    e.file = "data.yaml";
    e.key = key;
    e.value = v;
    hiera_edit_result r;
    hiera_status st = hiera_edit_text(text, strlen(text), &e, &r, &err);
    hiera_value_decref(v);
    char *out = NULL;
    if (st == HIERA_OK) {
        out = xstrdup(r.text);
    } else {
        if (why)
            *why = xstrdup(err.message ? err.message : st == HIERA_NOT_FOUND ? "not found" : "");
        if (line)
            *line = err.line;
        if (st == HIERA_ERROR)
            assert_int_equal(err.kind, HIERA_ERR_REFUSED);
    }
    hiera_edit_result_clear(&r);
    hiera_error_clear(&err);
    return out;
}

#define EDIT_OK(text, key, yaml, want)                                                                 \
    do {                                                                                               \
        char *why_ = NULL;                                                                             \
        char *got_ = edit((text), (key), (yaml), &why_, NULL);                                         \
        if (!got_ || strcmp(got_, (want)) != 0)                                                        \
            print_error("edit %s = %s of:\n%s\ngot:\n%s\n(%s)\nexpected:\n%s\n", (key), (yaml) ? (yaml) : "(unset)", \
                        (text), got_ ? got_ : "(refused)", why_ ? why_ : "", (want));                 \
        assert_non_null(got_);                                                                         \
        assert_string_equal(got_, (want));                                                             \
        free(got_);                                                                                    \
        free(why_);                                                                                    \
    } while (0)

#define EDIT_REFUSED(text, key, yaml, because, at_line)                                                \
    do {                                                                                               \
        char *why_ = NULL;                                                                             \
        int line_ = -1;                                                                                \
        char *got_ = edit((text), (key), (yaml), &why_, &line_);                                       \
        if (got_ || !why_ || !strstr(why_, (because)))                                                 \
            print_error("edit %s of:\n%s\nnot refused for '%s': %s\n", (key), (text), (because),       \
                        got_ ? got_ : why_);                                                           \
        assert_null(got_);                                                                             \
        assert_non_null(strstr(why_, (because)));                                                      \
        assert_int_equal(line_, (at_line));                                                            \
        free(why_);                                                                                    \
    } while (0)

/* ------------------------------------------------------------------ fixed cases */

static void test_scalars_keep_their_place_and_style(void **state)
{
    (void)state;
    const char *doc = "# top\n---\nntp::servers:   # the servers\n  - a\n  - b\n# between\n"
                      "port: 8080   # the port\nname: \"web\"\nsingle: 'x'\n";
    EDIT_OK(doc, "port", "8443", "# top\n---\nntp::servers:   # the servers\n  - a\n  - b\n# between\n"
                                 "port: 8443   # the port\nname: \"web\"\nsingle: 'x'\n");
    /* a string Psych would read as a number is quoted; quoted styles stay */
    EDIT_OK("port: 8080 # p\n", "port", "'8443'", "port: '8443' # p\n");
    EDIT_OK("name: \"web\"\n", "name", "web2", "name: \"web2\"\n");
    EDIT_OK("name: 'web'\n", "name", "it's", "name: 'it''s'\n");
    EDIT_OK("name: plain\n", "name", "'yes'", "name: 'yes'\n");
    EDIT_OK("name: plain\n", "name", "'1.10'", "name: '1.10'\n");
    EDIT_OK("name: plain\n", "name", "':sym'", "name: ':sym'\n");
    EDIT_OK("name: plain\n", "name", "'2024-01-01'", "name: '2024-01-01'\n");
    EDIT_OK("name: plain\n", "name", "'a: b'", "name: 'a: b'\n");
    EDIT_OK("name: plain\n", "name", "'a #b'", "name: 'a #b'\n");
    EDIT_OK("name: plain\n", "name", "''", "name: ''\n");
    EDIT_OK("name: plain\n", "name", "\"\\x01\"", "name: \"\\x01\"\n");
    EDIT_OK("name: plain\n", "name", "-Xmx512m", "name: -Xmx512m\n");
    EDIT_OK("name: plain\n", "name", "true", "name: true\n");
    EDIT_OK("name: plain\n", "name", "1.5", "name: 1.5\n");
    EDIT_OK("name: plain\n", "name", "~", "name: ~\n");
    EDIT_OK("name: plain\n", "name", "123456789012345678901234567890", "name: 123456789012345678901234567890\n");
    /* block scalars keep their style; more lines come as a literal block */
    EDIT_OK("motd: |\n  one\n  two\nnext: 1\n", "motd", "\"three\\nfour\\n\"", "motd: |\n  three\n  four\nnext: 1\n");
    EDIT_OK("motd: |\n  one\n\nnext: 1\n", "motd", "x", "motd: |-\n  x\n\nnext: 1\n");
    EDIT_OK("motd: >\n  folded\n  text\nnext: 1\n", "motd", "\"new\\n\"", "motd: >\n  new\nnext: 1\n");
    EDIT_OK("motd: plain\n", "motd", "\"a\\nb\"", "motd: |-\n  a\n  b\n");
    EDIT_OK("motd: plain\n", "motd", "\"a\\n\\n\"", "motd: \"a\\n\\n\"\n");
    /* the same value: nothing changes, byte for byte */
    EDIT_OK("port: 0x1F90 # hex\n", "port", "8080", "port: 0x1F90 # hex\n");
    EDIT_OK("list: [a,   b]\n", "list", "[a, b]", "list: [a,   b]\n");
}

static void test_collections(void **state)
{
    (void)state;
    const char *doc = "a:   # list\n  - 1\n  - 2   # two\nb: 3\n";
    EDIT_OK(doc, "a", "x", "a: x   # list\nb: 3\n");
    EDIT_OK(doc, "a", "[k, v]", "a:   # list\n  - k\n  - v\nb: 3\n");
    EDIT_OK(doc, "a", "{k: v}", "a:   # list\n  k: v\nb: 3\n");
    EDIT_OK("a:\n- 1\n- 2\nb: 3\n", "a", "[x]", "a:\n- x\nb: 3\n");
    EDIT_OK("a: 1 # c\n", "a", "{x: {y: [1, {z: w}]}}", "a: # c\n  x:\n    y:\n      - 1\n      - z: w\n");
    EDIT_OK("a:\n    x: 1\nb: 2\n", "c", "{d: [1, 2]}", "a:\n    x: 1\nb: 2\nc:\n    d:\n        - 1\n        - 2\n");
    EDIT_OK("a: [1, 2]\n", "a", "[3, 4]", "a: [3, 4]\n");
    EDIT_OK("a: {x: 1}\n", "a", "{y: 'a b', z: 'c, d'}", "a: {y: a b, z: 'c, d'}\n");
    EDIT_OK("a: [1]\n", "a", "[]", "a: []\n");
    EDIT_OK("a:\n  - 1\n", "a", "{}", "a: {}\n");
    EDIT_OK("a: # c\nb: 3\n", "a", "[1]", "a: # c\n  - 1\nb: 3\n");
    EDIT_OK("a: # c\nb: 3\n", "a", "1", "a: 1 # c\nb: 3\n");
    EDIT_OK("a: &x\n  k: 1\nb: 2\n", "a", "3", "a: 3\nb: 2\n");
}

static void test_dotted_keys(void **state)
{
    (void)state;
    const char *users = "profile::users:\n  bob:\n    uid: 1002\n    shell: /bin/bash\n\nlast: 1\n";
    EDIT_OK(users, "profile::users.bob.shell", "/bin/zsh",
            "profile::users:\n  bob:\n    uid: 1002\n    shell: /bin/zsh\n\nlast: 1\n");
    EDIT_OK(users, "profile::users.carol", "{uid: 1003}",
            "profile::users:\n  bob:\n    uid: 1002\n    shell: /bin/bash\n  carol:\n    uid: 1003\n\nlast: 1\n");
    EDIT_OK(users, "profile::users.bob.groups.admin", "true",
            "profile::users:\n  bob:\n    uid: 1002\n    shell: /bin/bash\n    groups:\n      admin: true\n\nlast: 1\n");
    EDIT_OK(users, "new.a.b", "1", "profile::users:\n  bob:\n    uid: 1002\n    shell: /bin/bash\n\nlast: 1\nnew:\n  a:\n    b: 1\n");
    EDIT_OK("a: {}\n", "a.y", "2", "a:\n  y: 2\n");
    EDIT_OK("a:\nb: 1\n", "a.y", "2", "a:\n  y: 2\nb: 1\n");
    EDIT_OK("a: ~ # c\n", "a.y", "2", "a: # c\n  y: 2\n");
    /* a key holding a dot, quoted */
    EDIT_OK("a: 1\n", "\"x.y\"", "2", "a: 1\nx.y: 2\n");
    EDIT_OK("\"x.y\": 1\n", "'x.y'", "2", "\"x.y\": 2\n");
    /* keys written otherwise: quoted, symbols */
    EDIT_OK("'k': 1\n:s: 2\n", "s", "3", "'k': 1\n:s: 3\n");
    EDIT_OK("'k': 1\n", "k", "3", "'k': 3\n");
    EDIT_OK("a: 1\n", "yes", "2", "a: 1\n'yes': 2\n");
    EDIT_OK("a: 1\n", "<<", "2", "a: 1\n'<<': 2\n");
    EDIT_REFUSED("a: [1, 2]\n", "a.0", "2", "array index", 0);
}

static void test_unset(void **state)
{
    (void)state;
    const char *doc = "# about a\na: 1   # one\n\n# about b\nb:\n  c: 2\n  d: 3\nlast: |\n  text\n";
    EDIT_OK(doc, "a", NULL, "# about a\n\n# about b\nb:\n  c: 2\n  d: 3\nlast: |\n  text\n");
    EDIT_OK(doc, "b", NULL, "# about a\na: 1   # one\n\n# about b\nlast: |\n  text\n");
    EDIT_OK(doc, "b.c", NULL, "# about a\na: 1   # one\n\n# about b\nb:\n  d: 3\nlast: |\n  text\n");
    EDIT_OK(doc, "last", NULL, "# about a\na: 1   # one\n\n# about b\nb:\n  c: 2\n  d: 3\n");
    /* the last key of a nested hash: the hash stays, empty */
    EDIT_OK("a:\n  b:\n    c: 1\nz: 0\n", "a.b.c", NULL, "a:\n  b: {}\nz: 0\n");
    EDIT_OK("a: 1\nb: 2", "b", NULL, "a: 1\n");
    EDIT_OK("---\na: 1\n", "a", NULL, "---\n");
    char *why = NULL;
    assert_null(edit(doc, "nope", NULL, &why, NULL));
    assert_string_equal(why, "not found");
    free(why);
    why = NULL;
    assert_null(edit(doc, "b.x.y", NULL, &why, NULL));
    assert_string_equal(why, "not found");
    free(why);
}

static void test_documents(void **state)
{
    (void)state;
    EDIT_OK("", "a", "1", "a: 1\n");
    EDIT_OK("# only a comment", "a", "1", "# only a comment\na: 1\n");
    EDIT_OK("---\n", "a", "{b: 1}", "---\na:\n  b: 1\n");
    EDIT_OK("--- ~\n", "a", "1", "---\na: 1\n");
    EDIT_OK("--- {}\n", "a", "1", "---\na: 1\n");
    EDIT_OK("{}\n", "a", "1", "a: 1\n");
    EDIT_OK("---\n...\n", "a", "1", "---\na: 1\n...\n");
    EDIT_OK("---\na: 1\n---\nb: 2\n", "c", "3", "---\na: 1\nc: 3\n---\nb: 2\n");
    EDIT_OK("---\na: 1\n...\n", "c", "3", "---\na: 1\nc: 3\n...\n");
    EDIT_OK("a: 1", "c", "3", "a: 1\nc: 3\n");
    /* line endings: the file's own */
    EDIT_OK("a: 1\r\nb:\r\n  c: 2\r\n", "b.d", "[x, y]", "a: 1\r\nb:\r\n  c: 2\r\n  d:\r\n    - x\r\n    - y\r\n");
    EDIT_OK("a: 1\r\n", "a", "\"x\\ny\"", "a: |-\r\n  x\r\n  y\r\n");
    /* a new file starts with --- */
    hiera_error err = {0};
    hiera_value *v = hiera_value_new_int(1);
    hiera_edit e = HIERA_EDIT_INIT;
    e.key = "a";
    e.value = v;
    e.new_file = true;
    hiera_edit_result r;
    assert_int_equal(hiera_edit_text(NULL, 0, &e, &r, &err), HIERA_OK);
    assert_string_equal(r.text, "---\na: 1\n");
    assert_int_equal(r.first_line, 1);
    assert_int_equal(r.last_line, 0);
    hiera_edit_result_clear(&r);
    hiera_value_decref(v);
}

static void test_refusals(void **state)
{
    (void)state;
    EDIT_REFUSED("a: 1\na: 2\n", "a", "3", "defined twice", 2);
    EDIT_REFUSED("x:\n  k: 1\n  k: 2\n", "x.k", NULL, "defined twice", 3);
    EDIT_REFUSED("x: &d\n  k: 1\ny: *d\n", "x.k", "2", "anchor &d is used by an alias at line 3", 1);
    EDIT_REFUSED("x: &d\n  k: 1\ny: *d\n", "y.k", "2", "is an alias (*d)", 3);
    EDIT_REFUSED("x: &d\n  k: 1\ny: *d\n", "x", "2", "would break that", 1);
    EDIT_REFUSED("x: &d\n  k: 1\ny: *d\n", "x", NULL, "would break that", 1);
    EDIT_REFUSED("x:\n  <<: {a: 1}\n  b: 2\n", "x.c", "2", "merge key", 2);
    EDIT_REFUSED("a: {x: 1}\n", "a.y", "2", "flow mapping", 1);
    EDIT_REFUSED("{a: 1}\n", "b", "2", "flow mapping", 1);
    EDIT_REFUSED("- a\n- b\n", "k", "v", "not a hash", 1);
    EDIT_REFUSED("just text\n", "k", "v", "not a hash", 1);
    EDIT_REFUSED("a: [1]\n", "a.b", "2", "an array, not a hash", 1);
    EDIT_REFUSED("a: text\n", "a.b", "2", "a scalar, not a hash", 1);
    EDIT_REFUSED("a: [1\n", "a", "2", "does not parse", 1);
    EDIT_REFUSED("\xEF\xBB\xBF" "a: 1\n", "a", "2", "byte order mark", 1);
    EDIT_REFUSED("a: \"x\xE2\x80\xA8y\"\n", "a", "2", "separator", 0);
    EDIT_REFUSED("? a\n: 1\n", "a", "2", "does not start its line", 1);
    /* a Sensitive value is not written */
    hiera_error err = {0};
    hv *s = hv_array();
    hv_array_push(s, hv_sensitive_new(hv_str("secret")));
    hiera_edit e = HIERA_EDIT_INIT;
    e.key = "k";
    e.value = s;
    hiera_edit_result r;
    assert_int_equal(hiera_edit_text("k: 1\n", 5, &e, &r, &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_FATAL);
    assert_non_null(strstr(err.message, "Sensitive"));
    hiera_error_clear(&err);
    hv_decref(s);
}

/* ------------------------------------------------------------------ files */

static void test_digest_and_diff(void **state)
{
    (void)state;
    char *d = hiera_text_digest("abc", 3);
    assert_string_equal(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    free(d);
    char *diff = hiera_text_diff("a\nb\nc\nd\ne\nf\ng\nh\n", 16, "a\nb\nc\nd\nX\nf\ng\nh\n", 16, "old", "new");
    assert_string_equal(diff, "--- old\n+++ new\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+X\n f\n g\n h\n");
    free(diff);
    diff = hiera_text_diff("", 0, "---\na: 1\n", 9, "/dev/null", "f");
    assert_string_equal(diff, "--- /dev/null\n+++ f\n@@ -0,0 +1,2 @@\n+---\n+a: 1\n");
    free(diff);
    diff = hiera_text_diff("a: 1", 4, "a: 2", 4, "f", "f");
    assert_string_equal(diff, "--- f\n+++ f\n@@ -1 +1 @@\n-a: 1\n\\ No newline at end of file\n+a: 2\n\\ No newline at end of file\n");
    free(diff);
    diff = hiera_text_diff("same\n", 5, "same\n", 5, "f", "f");
    assert_string_equal(diff, "");
    free(diff);
}

static void test_replace_is_atomic_and_keeps_mode(void **state)
{
    (void)state;
    char *path = xasprintf("%s/sub/dir/data.yaml", root);
    hiera_error err = {0};
    /* a new file: its folders made, "" requires that none exists */
    assert_int_equal(hiera_file_replace(path, "a: 1\n", 5, "", &err), HIERA_OK);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(hiera_file_read_text(path, &text, &len, &err), HIERA_OK);
    assert_string_equal(text, "a: 1\n");
    char *d1 = hiera_text_digest(text, len);
    free(text);
    assert_int_equal(chmod(path, 0640), 0);
    /* from the right version: written, the mode kept */
    assert_int_equal(hiera_file_replace(path, "a: 2\n", 5, d1, &err), HIERA_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    /* from a stale one: refused, nothing written */
    assert_int_equal(hiera_file_replace(path, "a: 3\n", 5, d1, &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_STALE);
    hiera_error_clear(&err);
    assert_int_equal(hiera_file_replace(path, "a: 3\n", 5, "", &err), HIERA_ERROR);
    assert_int_equal(err.kind, HIERA_ERR_STALE);
    hiera_error_clear(&err);
    assert_int_equal(hiera_file_read_text(path, &text, &len, &err), HIERA_OK);
    assert_string_equal(text, "a: 2\n");
    free(text);
    /* no temporary file left beside it */
    char *dir = xasprintf("%s/sub/dir", root);
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(dh)) != NULL)
        if (de->d_name[0] != '.' || strstr(de->d_name, "hiera-"))
            n++;
    closedir(dh);
    assert_int_equal(n, 1);
    /* a link is followed: its target changes, the link stays */
    char *link_path = xasprintf("%s/link.yaml", root);
    assert_int_equal(symlink(path, link_path), 0);
    assert_int_equal(hiera_file_replace(link_path, "a: 4\n", 5, NULL, &err), HIERA_OK);
    struct stat ls;
    assert_int_equal(lstat(link_path, &ls), 0);
    assert_true(S_ISLNK(ls.st_mode));
    assert_int_equal(hiera_file_read_text(path, &text, &len, &err), HIERA_OK);
    assert_string_equal(text, "a: 4\n");
    free(text);
    assert_int_equal(hiera_file_read_text("/nonexistent/x.yaml", &text, &len, &err), HIERA_NOT_FOUND);
    free(text);
    free(link_path);
    free(dir);
    free(d1);
    free(path);
}

/* ------------------------------------------------------------------ random documents, random edits */

typedef struct {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r, uint32_t n)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return n ? (uint32_t)(r->s % n) : 0;
}

typedef struct {
    rng *r;
    sbuf b;
    const char *eol;
    int step, seq;
    int anchors; /* anchors defined so far (&a0, &a1...) */
} gen;

static const char *const KEYS[] = {"a", "b", "c", "profile::users", "ntp::servers", "x.y", "yes", "1", "k", "bob",
                                   "shell", "port", "with space", "q'uote", "dou\"ble", "::top", "é"};
static const char *const WORDS[] = {"x", "plain text", "yes", "no", "on", "1", "0x1F", "1.10", "1:30", "~", "null", "-x",
                                    ":sym", "a: b", "a #b", "tab\there", "'q'", "\"dq\"", "2024-01-01", "é ü", ""};

static void pad(gen *g, int n)
{
    for (int i = 0; i < n; i++)
        sb_addc(&g->b, ' ');
}

static void comment(gen *g)
{
    if (rnd(g->r, 4) == 0)
        sb_adds(&g->b, rnd(g->r, 2) ? "   # a comment" : " #c");
}

static void key(gen *g)
{
    const char *k = KEYS[rnd(g->r, sizeof KEYS / sizeof *KEYS)];
    bool needs = strpbrk(k, "'\" ") || !strcmp(k, "yes") || !strcmp(k, "1") || !strncmp(k, "::", 2);
    int style = needs ? 1 + (int)rnd(g->r, 2) : (int)rnd(g->r, 3);
    if (style == 1 && !strchr(k, '\'')) {
        sb_addf(&g->b, "'%s'", k);
    } else if (style >= 1) {
        sb_addc(&g->b, '"');
        for (const char *p = k; *p; p++) {
            if (*p == '"' || *p == '\\')
                sb_addc(&g->b, '\\');
            sb_addc(&g->b, *p);
        }
        sb_addc(&g->b, '"');
    } else {
        sb_adds(&g->b, k);
    }
}

static void scalar(gen *g, int ind)
{
    const char *w = WORDS[rnd(g->r, sizeof WORDS / sizeof *WORDS)];
    switch (rnd(g->r, 7)) {
    case 0:
        if (w[0] && !strpbrk(w, ":#\t'\"") && strcmp(w, "-x") && strcmp(w, "~")) {
            sb_adds(&g->b, w);
            break;
        }
        /* fall through */
    case 1:
        if (!strchr(w, '\'')) {
            sb_addf(&g->b, "'%s'", w);
            break;
        }
        /* fall through */
    case 2:
        sb_adds(&g->b, "\"");
        for (const char *p = w; *p; p++)
            if (*p == '"')
                sb_adds(&g->b, "\\\"");
            else if (*p == '\t')
                sb_adds(&g->b, "\\t");
            else
                sb_addc(&g->b, *p);
        sb_adds(&g->b, "\\n\"");
        break;
    case 3:
        sb_addf(&g->b, "%d", (int)rnd(g->r, 100000) - 500);
        break;
    case 4: {
        static const char *const hdr[] = {"|", "|-", ">", ">-", "|+"};
        sb_adds(&g->b, hdr[rnd(g->r, 5)]);
        int lines = 1 + (int)rnd(g->r, 3);
        for (int i = 0; i < lines; i++) {
            sb_adds(&g->b, g->eol);
            pad(g, ind + g->step);
            sb_adds(&g->b, i ? "more text" : "block text");
        }
        if (rnd(g->r, 2))
            sb_adds(&g->b, g->eol);
        return; /* (no comment after a block scalar's text) */
    }
    case 5:
        sb_adds(&g->b, rnd(g->r, 2) ? "true" : "1.5");
        break;
    default:
        sb_adds(&g->b, rnd(g->r, 2) ? "[a, 'b c', {k: v}]" : "{x: 1, y: [2]}");
        break;
    }
}

static void mapping(gen *g, int ind, int depth, int n);

/* what follows "key:" */
static void value(gen *g, int ind, int depth)
{
    uint32_t kind = rnd(g->r, depth < 3 ? 10 : 6);
    if (kind == 0 && g->anchors) {
        sb_addf(&g->b, " *a%u", rnd(g->r, (uint32_t)g->anchors));
        comment(g);
        return;
    }
    if (kind == 1) {
        comment(g); /* an empty value */
        return;
    }
    if (kind < 6) {
        sb_addc(&g->b, ' ');
        if (rnd(g->r, 12) == 0)
            sb_addf(&g->b, "&a%d ", g->anchors++);
        scalar(g, ind);
        comment(g);
        return;
    }
    if (kind < 8) {
        if (rnd(g->r, 10) == 0)
            sb_addf(&g->b, " &a%d", g->anchors++);
        comment(g);
        sb_adds(&g->b, g->eol);
        mapping(g, ind + g->step, depth + 1, 1 + (int)rnd(g->r, 3));
        return;
    }
    /* a block sequence */
    comment(g);
    int n = 1 + (int)rnd(g->r, 3), si = ind + g->seq;
    for (int i = 0; i < n; i++) {
        sb_adds(&g->b, g->eol);
        pad(g, si);
        sb_adds(&g->b, "- ");
        scalar(g, si);
    }
}

static void mapping(gen *g, int ind, int depth, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sb_adds(&g->b, g->eol);
        if (rnd(g->r, 6) == 0) {
            pad(g, ind);
            sb_adds(&g->b, "# above");
            sb_adds(&g->b, g->eol);
        }
        if (rnd(g->r, 8) == 0)
            sb_adds(&g->b, g->eol);
        pad(g, ind);
        key(g);
        sb_addc(&g->b, ':');
        value(g, ind, depth);
    }
}

static char *random_doc(rng *r)
{
    gen g = {r, {0}, rnd(r, 5) ? "\n" : "\r\n", rnd(r, 2) ? 2 : 4, 0, 0};
    g.seq = rnd(r, 2) ? 0 : g.step;
    if (rnd(r, 3) == 0) {
        sb_adds(&g.b, "# a file");
        sb_adds(&g.b, g.eol);
    }
    if (rnd(r, 2)) {
        sb_adds(&g.b, "---");
        sb_adds(&g.b, g.eol);
    }
    if (rnd(r, 20))
        mapping(&g, 0, 0, 1 + (int)rnd(r, 6));
    if (rnd(r, 2))
        sb_adds(&g.b, g.eol);
    if (rnd(r, 8) == 0) {
        sb_adds(&g.b, "# the end");
        sb_adds(&g.b, g.eol);
    }
    return sb_take(&g.b);
}

static hv *random_value(rng *r, int depth)
{
    switch (rnd(r, depth < 2 ? 9 : 6)) {
    case 0: return hv_int((int64_t)rnd(r, 2000000) - 1000000);
    case 1: return hv_float((double)rnd(r, 1000) / 8.0);
    case 2: return hv_bool(rnd(r, 2));
    case 3: return hv_undef();
    case 4: {
        static const char *const s[] = {"x", "a: b", "#", "yes", "1", "multi\nline\n", "two\nlines", " lead", "trail ",
                                        "q'uote", "dq\"", "\\", "é", "ENC[PKCS7,MIIB+/=]", "", "\x01", "%{facts.x}",
                                        "- dash", "[x]", "{y}", "a\n\nb\n\n"};
        return hv_str(s[rnd(r, sizeof s / sizeof *s)]);
    }
    case 5: return hv_str(WORDS[rnd(r, sizeof WORDS / sizeof *WORDS)]);
    case 6:
    case 7: {
        hv *h = hv_hash();
        int n = (int)rnd(r, 3);
        for (int i = 0; i < n; i++)
            hv_hash_sets(h, KEYS[rnd(r, sizeof KEYS / sizeof *KEYS)], random_value(r, depth + 1));
        return h;
    }
    default: {
        hv *a = hv_array();
        int n = (int)rnd(r, 3);
        for (int i = 0; i < n; i++)
            hv_array_push(a, random_value(r, depth + 1));
        return a;
    }
    }
}

/* a key of the document (or a new one), as a dotted key */
static char *random_key(rng *r, const hv *doc)
{
    sbuf b = {0};
    const hv *cur = doc;
    for (int depth = 0; depth < 4; depth++) {
        const char *k;
        if (hv_is(cur, HV_HASH) && hv_hash_len(cur) && rnd(r, 4)) {
            const hv *kv = hv_hash_key_at(cur, rnd(r, (uint32_t)hv_hash_len(cur)));
            if (!hv_is(kv, HV_STRING))
                break;
            k = hv_str_ptr(kv);
            cur = hv_hash_gets(cur, k);
        } else {
            k = KEYS[rnd(r, sizeof KEYS / sizeof *KEYS)];
            cur = NULL;
        }
        if (depth)
            sb_addc(&b, '.');
        if (strpbrk(k, ".'\"") || strspn(k, "0123456789") == strlen(k)) {
            if (strchr(k, '"') && strchr(k, '\''))
                break;
            char q = strchr(k, '"') ? '\'' : '"';
            sb_addf(&b, "%c%s%c", q, k, q);
        } else {
            sb_adds(&b, k);
        }
        if (rnd(r, 2) || !hv_is(cur, HV_HASH))
            break;
    }
    if (!b.len)
        sb_adds(&b, "a");
    return sb_take(&b);
}

/* lines 1..n of text (each with its break) */
static size_t line_start(const char *t, size_t len, int line)
{
    /* (lines end as the editor counts them: "\n", "\r\n" or a lone "\r") */
    size_t p = 0;
    for (int l = 1; l < line && p < len; p++)
        if (t[p] == '\n' || (t[p] == '\r' && (p + 1 >= len || t[p + 1] != '\n')))
            l++;
    return p;
}

static void test_random_edits(void **state)
{
    (void)state;
    rng r = {0x9E3779B97F4A7C15ULL};
    const char *seed = getenv("HIERA_EDIT_SEED");
    if (seed)
        r.s = strtoull(seed, NULL, 10) | 1;
    int rounds = getenv("HIERA_EDIT_ROUNDS") ? atoi(getenv("HIERA_EDIT_ROUNDS")) : 3000;
    int edited = 0, refused = 0, unparsed = 0, unchanged = 0;
    for (int round = 0; round < rounds; round++) {
        char *text = random_doc(&r);
        size_t len = strlen(text);
        herr pe = {0};
        hv *doc = yaml_parse(text, len, "random.yaml", YAML_PUPPET, &pe);
        herr_clear(&pe);
        if (!doc) {
            unparsed++; /* (the generator wrote something YAML refuses: not an edit's business) */
            free(text);
            continue;
        }
        doc = hv_symkeys_to_string(doc);
        char *k = random_key(&r, doc);
        hv *v = rnd(&r, 5) ? random_value(&r, 0) : NULL;
        hiera_edit e = HIERA_EDIT_INIT;
        e.file = "random.yaml";
        e.key = k;
        e.value = v;
        hiera_edit_result res;
        hiera_error err = {0};
        hiera_status st = hiera_edit_text(text, len, &e, &res, &err);
        if (st == HIERA_ERROR) {
            /* refused: never because the editor could not write exactly what it meant */
            if (err.kind != HIERA_ERR_REFUSED || strstr(err.message, "exactly")) {
                print_error("round %d: %s = %s\n---\n%s\n---\n%s\n", round, k, v ? hjson_debug(v) : "(unset)", text,
                            err.message);
                const char *dump = getenv("HIERA_EDIT_DUMP"); /* the document, for a closer look */
                FILE *f = dump ? fopen(dump, "wb") : NULL;
                if (f) {
                    fwrite(text, 1, len, f);
                    fclose(f);
                }
            }
            assert_int_equal(err.kind, HIERA_ERR_REFUSED);
            assert_null(strstr(err.message, "exactly"));
            refused++;
        } else if (st == HIERA_OK && res.changed) {
            edited++;
            /* what Puppet reads: the old document with the key replaced (the editor checked it; the
             * outside lines are checked here) */
            hv *got = yaml_parse(res.text, res.len, "random.yaml", YAML_PUPPET, &pe);
            herr_clear(&pe);
            assert_non_null(got);
            hv_decref(got);
            size_t a = line_start(text, len, res.first_line), b = line_start(text, len, res.last_line + 1);
            assert_true(a <= b || res.last_line == res.first_line - 1);
            if (res.last_line < res.first_line)
                b = a;
            assert_true(res.len >= a + (len - b));
            if (memcmp(res.text, text, a) != 0 || memcmp(res.text + res.len - (len - b), text + b, len - b) != 0)
                print_error("round %d: %s: bytes outside lines %d-%d changed\n---\n%s\n---\n%s\n", round, k,
                            res.first_line, res.last_line, text, res.text);
            assert_memory_equal(res.text, text, a);
            assert_memory_equal(res.text + res.len - (len - b), text + b, len - b);
            /* the same edit again changes nothing */
            if (v) {
                hiera_edit_result again;
                assert_int_equal(hiera_edit_text(res.text, res.len, &e, &again, &err), HIERA_OK);
                assert_false(again.changed);
                hiera_edit_result_clear(&again);
            }
        } else {
            unchanged++;
        }
        hiera_edit_result_clear(&res);
        hiera_error_clear(&err);
        hv_decref(v);
        hv_decref(doc);
        free(k);
        free(text);
    }
    print_message("random edits: %d edited, %d refused, %d unchanged, %d documents YAML refused\n", edited, refused,
                  unchanged, unparsed);
    assert_true(edited > rounds / 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars_keep_their_place_and_style),
        cmocka_unit_test(test_collections),
        cmocka_unit_test(test_dotted_keys),
        cmocka_unit_test(test_unset),
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_digest_and_diff),
        cmocka_unit_test_setup_teardown(test_replace_is_atomic_and_keeps_mode, setup, teardown),
        cmocka_unit_test(test_random_edits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
