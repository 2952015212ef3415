/* pathname.c - Pathname#plus, File.basename and File.dirname as Ruby 3.1 computes them. */
#include "base/pathname.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *pn_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 1 && path[0] == '/')
        return xstrdup("/");
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    return xstrndup(path + b, n - b);
}

char *pn_dirname(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    if (b == 0)
        return xstrdup(".");
    while (b > 1 && path[b - 1] == '/')
        b--;
    return xstrndup(path, b);
}

/* Pathname's chop_basename: splits off the last component. Returns false when path has none
 * (empty or only slashes); otherwise *prefix_len is the length of what precedes the basename
 * and base/base_len the basename itself. */
static bool chop_basename(const char *path, size_t len, size_t *prefix_len, const char **base, size_t *base_len)
{
    size_t n = len;
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 0 || (n == 1 && path[0] == '/'))
        return false;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/')
        b--;
    *base = path + b;
    *base_len = n - b;
    /* path[0, path.rindex(base)]: the text before the last occurrence of base */
    size_t at = len - *base_len;
    while (at > 0 && memcmp(path + at, *base, *base_len) != 0)
        at--;
    *prefix_len = at;
    return true;
}

static bool is_dot(const char *s, size_t n) { return n == 1 && s[0] == '.'; }
static bool is_dotdot(const char *s, size_t n) { return n == 2 && s[0] == '.' && s[1] == '.'; }

char *pn_plus(const char *path1, const char *path2)
{
    size_t len2 = strlen(path2);
    /* the usual case without splitting: a relative path2 whose first component is a name, after
     * a path1 whose last component is a name, is path1 (less trailing slashes) "/" path2 */
    size_t c2 = strcspn(path2, "/");
    if (len2 && path2[0] != '/' && !is_dot(path2, c2) && !is_dotdot(path2, c2)) {
        size_t pl, bl;
        const char *b;
        if (chop_basename(path1, strlen(path1), &pl, &b, &bl) && !is_dot(b, bl) && !is_dotdot(b, bl)) {
            size_t n1 = (size_t)(b - path1) + bl;
            char *out = xmalloc(n1 + 1 + len2 + 1);
            memcpy(out, path1, n1);
            out[n1] = '/';
            memcpy(out + n1 + 1, path2, len2 + 1);
            return out;
        }
    }
    /* split path2 into components, remembering where each starts */
    size_t cap = 8, nc = 0;
    size_t *idx = xmalloc(cap * sizeof *idx), *clen = xmalloc(cap * sizeof *clen);
    size_t prefix2 = len2;
    size_t pl;
    const char *bs;
    size_t bl;
    while (chop_basename(path2, prefix2, &pl, &bs, &bl)) {
        if (nc == cap) {
            cap *= 2;
            idx = xrealloc(idx, cap * sizeof *idx);
            clen = xrealloc(clen, cap * sizeof *clen);
        }
        memmove(idx + 1, idx, nc * sizeof *idx);
        memmove(clen + 1, clen, nc * sizeof *clen);
        idx[0] = pl;
        clen[0] = bl;
        nc++;
        prefix2 = pl;
    }
    if (prefix2 != 0) { /* absolute path2 */
        free(idx);
        free(clen);
        return xstrdup(path2);
    }
    size_t first = 0; /* components of path2 consumed so far */
    size_t prefix1 = strlen(path1);
    bool r1;
    for (;;) {
        while (first < nc && is_dot(path2 + idx[first], clen[first]))
            first++;
        size_t p1;
        const char *b1;
        size_t b1l;
        if (!chop_basename(path1, prefix1, &p1, &b1, &b1l))
            break;
        prefix1 = p1;
        if (is_dot(b1, b1l))
            continue;
        if (is_dotdot(b1, b1l) || first == nc || !is_dotdot(path2 + idx[first], clen[first])) {
            prefix1 = (size_t)(b1 - path1) + b1l;
            break;
        }
        first++;
    }
    size_t p1;
    const char *b1;
    size_t b1l;
    r1 = chop_basename(path1, prefix1, &p1, &b1, &b1l);
    if (!r1) {
        char *pre = xstrndup(path1, prefix1);
        char *base = pn_basename(pre);
        if (strchr(base, '/')) {
            while (first < nc && is_dotdot(path2 + idx[first], clen[first]))
                first++;
        }
        free(base);
        free(pre);
    }
    sbuf out = {0};
    if (first < nc) {
        const char *suffix = path2 + idx[first];
        if (r1) {
            /* File.join(prefix1, suffix2) */
            size_t n = prefix1;
            while (n > 0 && path1[n - 1] == '/')
                n--;
            sb_addn(&out, path1, n);
            if (n > 0 || prefix1 > 0)
                sb_addc(&out, '/');
            while (*suffix == '/')
                suffix++;
            sb_adds(&out, suffix);
        } else {
            sb_addn(&out, path1, prefix1);
            sb_adds(&out, suffix);
        }
    } else if (r1) {
        sb_addn(&out, path1, prefix1);
    } else {
        char *pre = xstrndup(path1, prefix1);
        char *d = pn_dirname(pre);
        sb_adds(&out, d);
        free(d);
        free(pre);
    }
    free(idx);
    free(clen);
    return sb_take(&out);
}
