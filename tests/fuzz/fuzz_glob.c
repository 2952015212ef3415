/* fuzz_glob.c - libFuzzer harness: Ruby's Dir.glob as glob/globs levels use it (src/base/glob.c),
 * over a small fixed tree. Input: the pattern, relative to the tree's root. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "base/glob.h"

static const char *const TREE[] = {
    "data/common.yaml", "data/a.yaml", "data/a/z.yaml", "data/nodes/n1.example.com.yaml",
    "data/nodes/.hidden.yaml", "data/{x}/b.yaml", "data/[y]/c.json", "data/deep/1/2/3/4/5/d.yaml",
    "data/ünï/é.yaml", "data/star*/s.yaml", "other/o.yaml", NULL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *root;
    if (!root) {
        root = fz_dir();
        for (int i = 0; TREE[i]; i++)
            free(fz_write_str(TREE[i], "x: 1\n"));
        char *link = xasprintf("%s/data/loop", root);
        if (symlink(".", link) != 0) {
            /* the tree works without it */
        }
        free(link);
    }
    if (memchr(data, 0, size) || memmem(data, size, "..", 2))
        return 0; /* patterns are C strings; ".." would walk the whole file system */
    char *pattern = xasprintf("%s/%.*s", root, (int)size, (const char *)data);
    glob_result r = {0};
    int rc = glob_expand(pattern, &r, 50);
    if (r.n > 50 || (rc != 0 && rc != -1))
        abort();
    for (size_t i = 0; i < r.n; i++)
        if (!r.paths[i] || strncmp(r.paths[i], root, strlen(root)) != 0)
            abort(); /* a result outside the tree */
    glob_free(&r);
    free(pattern);
    return 0;
}
