/* glob.c - file name patterns expanded the way Ruby 3.1's Dir.glob (and so Pathname.glob, which
 * Hiera 5's glob/globs levels call) expands them on Linux, directories left out afterwards as
 * Puppet's LocationResolver#expand_globs does (`reject { |path| path.directory? }`).
 *
 * The shape follows Ruby's dir.c so that the order and the odd corners come out the same:
 *  - the pattern is cut into segments at '/' (not inside [...] or {...}); "**" followed by '/'
 *    is a recursive segment; a run of non-magic segments is kept together as one literal path;
 *  - one walk goes down the tree with a *list* of pattern positions that are still alive, so
 *    `**` never yields a path twice; each directory is read whole and sorted bytewise (strcmp),
 *    and every entry is visited (and yielded) before the next entry, i.e. results come out in
 *    depth-first pre-order of sorted names: "a/z.yaml" comes before "a.yaml" because 'a' < 'a.';
 *  - a segment holding '{' is brace-expanded where the walk meets it and each alternative is
 *    walked separately, results concatenated in alternative order and duplicates kept
 *    ("{a,a}.yaml" yields a.yaml twice); but after `**` a brace without '/' is matched entry by
 *    entry instead, in the one sorted walk;
 *  - `**` descends only into real directories (never through symlinks) and never into names
 *    starting with '.'; `*`, `?` and `[..]` never match a leading '.' unless the segment starts
 *    with a literal '.'; ".." is never produced by a wildcard and "." only in the first directory
 *    a wildcard lists;
 *  - unreadable or missing directories are skipped silently. Where Ruby raises instead (opendir
 *    failing with anything but ENOENT/ENOTDIR/EACCES, e.g. ELOOP on a symlink pointing at
 *    itself; an invalid UTF-8 byte compared against a [x-y] range) we skip too: glob.h has no
 *    error channel.
 * Characters are UTF-8 (Hiera's patterns are UTF-8 strings): '?' and [...] consume a whole
 * character, and ranges compare code points, as Ruby's fnmatch does for a UTF-8 pattern.
 *
 * Bounds (hostile patterns): the number of results (`limit`), the directory depth, the brace
 * nesting and the total work (entries examined times live pattern positions, brace
 * alternatives generated). Hitting any of them stops the walk and glob_expand returns -1. */
#include "base/glob.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fsjournal.h"
#include "base/util.h"

#define GLOB_MAX_DEPTH 256        /* nested glob_helper calls (directory levels + brace steps) */
#define GLOB_MAX_BRACE_GROUPS 64  /* brace groups expanded inside one string */
#define GLOB_MAX_WORK 2000000UL   /* work units, see spend() */
#define COST_SYSCALL 4            /* an lstat, stat or opendir */

/* ---------------------------------------------------------------- UTF-8 characters */

/* Length of the valid UTF-8 character at p (p < e), or 0 when the bytes there are not one
 * (Ruby's UTF-8 table: no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_valid_len(const unsigned char *p, const unsigned char *e)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(e - p) < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* Ruby's rb_enc_mbclen: the character's length, or 1 for a byte that starts no valid one. */
static size_t char_len(const char *p, const char *e)
{
    if (p >= e)
        return 0;
    size_t n = utf8_valid_len((const unsigned char *)p, (const unsigned char *)e);
    return n ? n : 1;
}

/* Code point of the character at p, or -1 when it is not valid UTF-8 (Ruby raises
 * ArgumentError "invalid byte sequence" there; we let the bracket item not match). */
static long codepoint(const char *p, const char *e)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t n = p < e ? utf8_valid_len(u, (const unsigned char *)e) : 0;
    switch (n) {
    case 1:
        return u[0];
    case 2:
        return ((long)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    case 3:
        return ((long)(u[0] & 0x0F) << 12) | ((long)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    case 4:
        return ((long)(u[0] & 0x07) << 18) | ((long)(u[1] & 0x3F) << 12) | ((long)(u[2] & 0x3F) << 6) |
               (u[3] & 0x3F);
    default:
        return -1;
    }
}

/* ---------------------------------------------------------------- matching one name */

/* Matches the bracket expression starting just after '[' against the character at s. Returns
 * the position after the closing ']' on a match, NULL otherwise (also for an unterminated
 * bracket, which therefore never matches: Ruby quirk). "[]" matches nothing, "[!]" anything. */
static const char *bracket(const char *p, const char *pend, const char *s, const char *send)
{
    bool ok = false, negate = false;
    if (p >= pend)
        return NULL;
    if (*p == '!' || *p == '^') {
        negate = true;
        p++;
    }
    while (*p != ']') {
        const char *t1 = p;
        if (*t1 == '\\')
            t1++;
        if (!*t1)
            return NULL;
        size_t r1 = char_len(t1, pend);
        p = t1 + r1;
        if (p >= pend)
            return NULL;
        if (p[0] == '-' && p[1] != ']') { /* a range t1-t2 */
            const char *t2 = p + 1;
            if (*t2 == '\\')
                t2++;
            if (!*t2)
                return NULL;
            size_t r2 = char_len(t2, pend);
            p = t2 + r2;
            if (ok)
                continue;
            if ((r1 <= (size_t)(send - s) && memcmp(t1, s, r1) == 0) ||
                (r2 <= (size_t)(send - s) && memcmp(t2, s, r2) == 0)) {
                ok = true;
                continue;
            }
            long c = codepoint(s, send), lo = codepoint(t1, pend), hi = codepoint(t2, pend);
            if (c < 0 || lo < 0 || hi < 0 || c < lo || c > hi)
                continue;
            ok = true;
        } else {
            if (ok)
                continue;
            if (r1 <= (size_t)(send - s) && memcmp(t1, s, r1) == 0)
                ok = true;
        }
    }
    return ok == negate ? NULL : p + 1;
}

/* Ruby's fnmatch without FNM_PATHNAME/FNM_DOTMATCH/FNM_CASEFOLD, which is what Dir.glob applies
 * to each directory entry: '*' backtracks to the last star only, a backslash quotes the next
 * character, and a name starting with '.' only matches a pattern starting with a literal '.'. */
static bool name_match(const char *pat, const char *name)
{
    const char *p = pat, *pend = pat + strlen(pat);
    const char *s = name, *send = name + strlen(name);
    const char *ptmp = NULL, *stmp = NULL;
#define UNESC(q) (*(q) == '\\' ? (q) + 1 : (q))
    if (*s == '.' && *UNESC(p) != '.')
        return false;
    for (;;) {
        if (*p == '*') {
            while (*p == '*')
                p++;
            if (!*UNESC(p))
                return true;
            if (!*s)
                return false;
            ptmp = p;
            stmp = s;
            continue;
        }
        if (*p == '?') {
            if (!*s)
                return false;
            p++;
            s += char_len(s, send);
            continue;
        }
        if (*p == '[') {
            const char *t;
            if (!*s)
                return false;
            if ((t = bracket(p + 1, pend, s, send)) != NULL) {
                p = t;
                s += char_len(s, send);
                continue;
            }
            goto failed;
        }
        /* an ordinary (possibly quoted) character */
        p = UNESC(p);
        if (!*s)
            return !*p;
        if (!*p)
            goto failed;
        {
            /* a pattern byte that starts no valid character never matches (Ruby quirk) */
            size_t r = utf8_valid_len((const unsigned char *)p, (const unsigned char *)pend);
            if (!r)
                goto failed;
            if (r <= (size_t)(send - s) && memcmp(p, s, r) == 0) {
                p += r;
                s += r;
                continue;
            }
        }
    failed:
        if (ptmp && stmp && stmp < send) { /* stmp never reaches the end here; guard anyway */
            p = ptmp;
            stmp += char_len(stmp, send);
            s = stmp;
            continue;
        }
        return false;
    }
#undef UNESC
}

/* ---------------------------------------------------------------- walk state */

typedef struct {
    glob_result *out;
    size_t cap;
    size_t limit;
    unsigned long work;
    bool stopped; /* a bound was hit: glob_expand returns -1 */
    bool with_dirs; /* directories are results too (Dir.glob), not only files (Hiera) */
} gstate;

/* Charges n units of work; false (and the walk stops) once the budget is spent. A unit is
 * about one step through the tree: a directory entry read, a call of the walker, a name match
 * or brace alternative per 16 bytes of pattern; a system call costs COST_SYSCALL. */
static bool spend(gstate *g, unsigned long n)
{
    if (g->stopped)
        return false;
    g->work += n;
    if (g->work > GLOB_MAX_WORK) {
        g->stopped = true;
        return false;
    }
    return true;
}

/* A path Ruby's glob yields: kept unless it is a directory (stat follows symlinks, as
 * Pathname#directory? does). Returns nonzero to stop the walk. */
static int emit(gstate *g, const char *path)
{
    struct stat st;
    if (!spend(g, COST_SYSCALL))
        return 1;
    if (!g->with_dirs && fs_stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (g->limit && g->out->n >= g->limit) {
        g->stopped = true;
        return 1;
    }
    if (g->out->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->out->paths = xrealloc(g->out->paths, g->cap * sizeof *g->out->paths);
    }
    g->out->paths[g->out->n++] = xstrdup(path);
    return 0;
}

/* ---------------------------------------------------------------- brace expansion */

typedef int (*brace_fn)(gstate *g, const char *s, void *arg);

/* Ruby's ruby_brace_expand: finds the first '{' and its matching '}' and calls itself for each
 * comma-separated alternative (prefix + alternative + rest); a string without braces is passed
 * to fn. A '{' without its '}' makes the whole string produce nothing (Ruby quirk). Returns the
 * first nonzero fn result (which stops the expansion), or 1 when a bound was hit. */
static int brace_expand(gstate *g, const char *str, brace_fn fn, void *arg, int groups)
{
    const char *p = str, *lbrace = NULL, *rbrace = NULL;
    int nest = 0, status = 0;
    while (*p) {
        if (*p == '{' && nest++ == 0)
            lbrace = p;
        if (*p == '}' && lbrace && --nest == 0) {
            rbrace = p;
            break;
        }
        if (*p == '\\' && !*++p)
            break;
        p++;
    }
    if (!lbrace && !rbrace) {
        if (!spend(g, 1 + strlen(str) / 16))
            return 1;
        return fn(g, str, arg);
    }
    if (!lbrace || !rbrace)
        return 0;
    if (groups >= GLOB_MAX_BRACE_GROUPS) {
        g->stopped = true;
        return 1;
    }
    size_t len = strlen(str), pre = (size_t)(lbrace - str), restlen = len - (size_t)(rbrace + 1 - str);
    char *buf = xmalloc(len + 1);
    memcpy(buf, str, pre);
    p = lbrace;
    while (p < rbrace) {
        const char *t = ++p;
        nest = 0;
        while (p < rbrace && !(*p == ',' && nest == 0)) {
            if (*p == '{')
                nest++;
            if (*p == '}')
                nest--;
            if (*p == '\\' && ++p == rbrace)
                break;
            p++;
        }
        memcpy(buf + pre, t, (size_t)(p - t));
        memcpy(buf + pre + (size_t)(p - t), rbrace + 1, restlen + 1);
        status = brace_expand(g, buf, fn, arg, groups + 1);
        if (status)
            break;
    }
    free(buf);
    return status;
}

static int brace_name_match(gstate *g, const char *alt, void *name)
{
    (void)g;
    return name_match(alt, name) ? 1 : 0;
}

/* A brace segment met after `**`: does any alternative match the entry name? */
static bool brace_match(gstate *g, const char *pat, const char *name)
{
    return brace_expand(g, pat, brace_name_match, (void *)name, 0) == 1 && !g->stopped;
}

/* ---------------------------------------------------------------- the pattern list */

typedef enum {
    GP_PLAIN,     /* no magic: a literal name, or several literal segments joined by '/' */
    GP_BRACE,     /* holds '{' */
    GP_MAGICAL,   /* holds '*', '?' or '[' */
    GP_RECURSIVE, /* "**" followed by a slash */
    GP_MATCH_ALL, /* end of pattern: yield the path */
    GP_MATCH_DIR, /* end of a pattern ending in '/': yield the path if it is a directory */
} gp_type;

typedef struct gpat {
    gp_type type;
    char *str; /* the segment text (escapes kept), NULL for the last three types */
    struct gpat *next;
} gpat;

/* Classifies a segment [p, e): BRACE as soon as a '{' is seen, MAGICAL for '*', '?', '['. */
static gp_type seg_magic(const char *p, const char *e)
{
    bool magical = false;
    while (p < e && *p) {
        char c = *p++;
        if (c == '{')
            return GP_BRACE;
        if (c == '*' || c == '?' || c == '[')
            magical = true;
        else if (c == '\\' && p < e && *p)
            p++;
    }
    return magical ? GP_MAGICAL : GP_PLAIN;
}

/* The next '/' outside [...] and {...} (Ruby tracks one open flag for both, without nesting),
 * or the terminating NUL. */
static const char *find_dirsep(const char *p)
{
    bool open = false;
    for (; *p; p++) {
        switch (*p) {
        case '[':
        case '{':
            open = true;
            break;
        case ']':
        case '}':
            open = false;
            break;
        case '/':
            if (!open)
                return p;
            break;
        case '\\':
            if (!p[1])
                return p + 1;
            p++;
            break;
        }
    }
    return p;
}

static void free_pattern(gpat *l)
{
    while (l) {
        gpat *n = l->next;
        free(l->str);
        free(l);
        l = n;
    }
}

/* Ruby's glob_make_pattern: the segment list of a pattern (without its leading '/'). */
static gpat *make_pattern(const char *p)
{
    gpat *list = NULL, **tail = &list;
    bool dirsep = false, recursive = false;
    while (*p) {
        gpat *t = xcalloc(1, sizeof *t);
        if (p[0] == '*' && p[1] == '*' && p[2] == '/') {
            /* consecutive recursive segments (and extra slashes) fold into one */
            do {
                p += 3;
                while (*p == '/')
                    p++;
            } while (p[0] == '*' && p[1] == '*' && p[2] == '/');
            t->type = GP_RECURSIVE;
            dirsep = recursive = true;
        } else {
            const char *m = find_dirsep(p);
            gp_type magic = seg_magic(p, m);
            /* Before any `**`, literal segments that are not the last are joined with the
             * following literal ones: they are looked up directly, not listed. */
            if (magic == GP_PLAIN && !recursive && *m) {
                const char *m2;
                while (seg_magic(m + 1, m2 = find_dirsep(m + 1)) == GP_PLAIN && *m2)
                    m = m2;
            }
            t->type = magic;
            t->str = xstrndup(p, (size_t)(m - p));
            if (*m) {
                dirsep = true;
                p = m + 1;
            } else {
                dirsep = false;
                p = m;
            }
        }
        *tail = t;
        tail = &t->next;
    }
    gpat *end = xcalloc(1, sizeof *end);
    end->type = dirsep ? GP_MATCH_DIR : GP_MATCH_ALL;
    *tail = end;
    return list;
}

/* Ruby's join_path_from_pattern: the pattern text from p to the end ("**" for recursive
 * segments, a trailing "/" for MATCH_DIR), NULL when there is none. */
static char *pattern_text(const gpat *p)
{
    sbuf b = {0};
    bool any = false;
    for (; p; p = p->next) {
        const char *s;
        if (p->type == GP_RECURSIVE)
            s = "**";
        else if (p->type == GP_MATCH_DIR)
            s = "";
        else if (p->str)
            s = p->str;
        else
            continue;
        if (any)
            sb_addc(&b, '/');
        sb_adds(&b, s);
        any = true;
    }
    return any ? sb_take(&b) : NULL;
}

/* Removes quoting backslashes: "a\*b" -> "a*b". */
static char *unescape(const char *s)
{
    char *r = xmalloc(strlen(s) + 1), *o = r;
    while (*s) {
        if (*s == '\\') {
            s++;
            if (!*s)
                break;
        }
        *o++ = *s++;
    }
    *o = '\0';
    return r;
}

/* ---------------------------------------------------------------- the walk */

typedef enum { PT_UNKNOWN = -2, PT_NOENT = -1, PT_DIR, PT_LINK, PT_OTHER } ptype;

static ptype mode_type(mode_t m)
{
    return S_ISDIR(m) ? PT_DIR : S_ISLNK(m) ? PT_LINK : PT_OTHER;
}

static ptype lstat_type(const char *path)
{
    struct stat st;
    return fs_lstat(path, &st) == 0 ? mode_type(st.st_mode) : PT_NOENT;
}

static ptype stat_type(const char *path)
{
    struct stat st;
    return fs_stat(path, &st) == 0 ? mode_type(st.st_mode) : PT_NOENT;
}

static ptype dtype_type(unsigned char d)
{
#ifdef DT_UNKNOWN
    switch (d) {
    case DT_UNKNOWN:
        return PT_UNKNOWN;
    case DT_DIR:
        return PT_DIR;
    case DT_LNK:
        return PT_LINK;
    default:
        return PT_OTHER;
    }
#else
    (void)d;
    return PT_UNKNOWN;
#endif
}

/* Where the walk stands: a path, whether a '/' goes before a child name, what the path is. */
typedef struct {
    const char *path;
    bool dirsep;
    ptype type;
    bool skipdot; /* "." entries are skipped: set below the first directory listed */
    int depth;
} gpos;

static int helper(gstate *g, const gpos *pos, gpat **beg, size_t n);

static char *join_path(const char *path, bool dirsep, const char *name)
{
    return xasprintf("%s%s%s", path, dirsep ? "/" : "", name);
}

/* Brace mode: each alternative is parsed afresh and walked from the same place. */
static int brace_alt_walk(gstate *g, const char *alt, void *arg)
{
    const gpos *pos = arg;
    gpat *list = make_pattern(alt);
    gpos sub = *pos;
    sub.depth++;
    int status = helper(g, &sub, &list, 1);
    free_pattern(list);
    return status;
}

typedef struct {
    char *name;
    unsigned char dtype;
} gent;

static int gent_cmp(const void *a, const void *b)
{
    return strcmp(((const gent *)a)->name, ((const gent *)b)->name);
}

/* Reads a whole directory, sorted bytewise by name as Ruby 3.x does by default. NULL when it
 * cannot be opened (missing, not a directory, unreadable, symlink loop: all skipped). */
static gent *read_sorted(gstate *g, const char *path, size_t *count)
{
    if (!spend(g, COST_SYSCALL))
        return NULL;
    DIR *d = fs_opendir(*path ? path : ".");
    if (!d)
        return NULL;
    gent *ents = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!spend(g, 1))
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            ents = xrealloc(ents, cap * sizeof *ents);
        }
        ents[n].name = xstrdup(de->d_name);
#ifdef DT_UNKNOWN
        ents[n].dtype = de->d_type;
#else
        ents[n].dtype = 0;
#endif
        n++;
    }
    closedir(d);
    if (n)
        qsort(ents, n, sizeof *ents, gent_cmp);
    *count = n;
    return ents;
}

static void free_ents(gent *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
}

/* The pattern positions alive for a child entry of a listed directory. */
static size_t next_positions(gstate *g, gpat **beg, size_t n, const char *name, ptype type, int dotfile,
                             gpat **out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        gpat *p = beg[i];
        if (p->type == GP_RECURSIVE) {
            /* `**` goes on into real directories only, never into dot names */
            if (type == PT_DIR && dotfile == 0)
                out[k++] = p;
            p = p->next; /* and also matches zero directories */
        }
        switch (p->type) {
        case GP_BRACE:
            /* brace_expand charges each alternative */
            if (brace_match(g, p->str, name))
                out[k++] = p->next;
            break;
        case GP_PLAIN:
        case GP_MAGICAL:
            if (!spend(g, 1 + strlen(p->str) / 16))
                return k;
            if (name_match(p->str, name))
                out[k++] = p->next;
            break;
        default:
            break;
        }
    }
    return k;
}

/* Lists pos->path and walks each entry with the positions it keeps alive. */
static int walk_listing(gstate *g, const gpos *pos, gpat **beg, size_t n, bool recursive)
{
    size_t count = 0;
    gent *ents = read_sorted(g, pos->path, &count);
    if (!ents)
        return g->stopped ? 1 : 0;
    int status = 0;
    gpat **nb = xmalloc(2 * n * sizeof *nb);
    for (size_t i = 0; i < count && !status; i++) {
        const char *name = ents[i].name;
        ptype type = PT_UNKNOWN;
        int dotfile = 0;
        if (name[0] == '.') {
            dotfile = 1;
            if (!name[1]) {
                /* "." only in the first directory listed, and never for `**` */
                if (recursive || pos->skipdot)
                    continue;
                dotfile = 2;
                type = PT_DIR;
            } else if (name[1] == '.' && !name[2])
                continue; /* ".." never */
        }
        if (!spend(g, 1)) {
            status = 1;
            break;
        }
        char *buf = join_path(pos->path, pos->dirsep, name);
        if (dtype_type(ents[i].dtype) != PT_UNKNOWN)
            type = dtype_type(ents[i].dtype);
        if (recursive && dotfile == 0 && type == PT_UNKNOWN)
            type = spend(g, COST_SYSCALL) ? lstat_type(buf) : PT_NOENT;
        size_t k = next_positions(g, beg, n, name, type, dotfile, nb);
        if (g->stopped)
            status = 1;
        else {
            gpos sub = {buf, true, type, true, pos->depth + 1};
            status = helper(g, &sub, nb, k);
        }
        free(buf);
    }
    free(nb);
    free_ents(ents, count);
    return status;
}

/* No wildcard at this level: the literal names are looked up directly (a literal that another
 * literal of the list also matches is walked once, with both positions). */
static int walk_literal(gstate *g, const gpos *pos, gpat **beg, size_t n)
{
    gpat **copy = xmalloc(n * sizeof *copy), **nb = xmalloc(n * sizeof *nb);
    int status = 0;
    for (size_t i = 0; i < n; i++)
        copy[i] = beg[i]->type == GP_PLAIN ? beg[i] : NULL;
    for (size_t i = 0; i < n && !status; i++) {
        if (!copy[i])
            continue;
        char *name = unescape(copy[i]->str);
        size_t k = 0;
        nb[k++] = copy[i]->next;
        for (size_t j = i + 1; j < n; j++) {
            if (copy[j] && spend(g, 1 + strlen(copy[j]->str) / 16) && name_match(copy[j]->str, name)) {
                nb[k++] = copy[j]->next;
                copy[j] = NULL;
            }
        }
        char *buf = join_path(pos->path, pos->dirsep, name);
        free(name);
        gpos sub = {buf, true, PT_UNKNOWN, pos->skipdot, pos->depth + 1};
        status = helper(g, &sub, nb, k);
        free(buf);
    }
    free(copy);
    free(nb);
    return status;
}

/* Ruby's glob_helper: yields pos->path if a pattern ended there, then goes one level down. */
static int helper(gstate *g, const gpos *pos, gpat **beg, size_t n)
{
    bool plain = false, brace = false, magical = false, recursive = false, match_all = false,
         match_dir = false;
    if (!spend(g, 1))
        return 1;
    if (pos->depth > GLOB_MAX_DEPTH) {
        g->stopped = true;
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        const gpat *p = beg[i];
        if (p->type == GP_RECURSIVE) {
            recursive = true;
            p = p->next;
        }
        switch (p->type) {
        case GP_PLAIN:
            plain = true;
            break;
        case GP_BRACE:
            /* after `**` (anywhere earlier in the list: Ruby quirk) a brace without '/' is
             * matched per entry; otherwise it is expanded here */
            if (!recursive || strchr(p->str, '/'))
                brace = true;
            break;
        case GP_MAGICAL:
            magical = true;
            break;
        case GP_MATCH_ALL:
            match_all = true;
            break;
        case GP_MATCH_DIR:
            match_dir = true;
            break;
        case GP_RECURSIVE:
            break; /* folded by make_pattern: cannot follow another */
        }
    }

    if (brace) {
        /* only the first position's pattern is expanded (Ruby's join_path_from_pattern(beg)) */
        char *text = pattern_text(beg[0]);
        if (!text)
            return 0;
        int status = brace_expand(g, text, brace_alt_walk, (void *)pos, 0);
        free(text);
        return status;
    }

    ptype type = pos->type;
    if (*pos->path) {
        if ((match_all && type == PT_UNKNOWN) || (match_dir && (type == PT_UNKNOWN || type == PT_LINK))) {
            if (!spend(g, COST_SYSCALL))
                return 1;
        }
        if (match_all && type == PT_UNKNOWN)
            type = lstat_type(pos->path);
        if (match_dir && (type == PT_UNKNOWN || type == PT_LINK))
            type = stat_type(pos->path);
        if (match_all && type != PT_NOENT && emit(g, pos->path))
            return 1;
        /* a MATCH_DIR hit yields "path/" only for a directory, which Hiera drops */
    }
    if (type == PT_NOENT)
        return 0;

    gpos here = *pos;
    here.type = type;
    if (magical || recursive)
        return walk_listing(g, &here, beg, n, recursive);
    if (plain)
        return walk_literal(g, &here, beg, n);
    return 0;
}

/* Ruby's ruby_glob0 for one pattern: a leading '{' expands the whole pattern first (the
 * alternatives then hold no unquoted '{', so this recurses once at most). */
static int glob0(gstate *g, const char *pattern, void *unused)
{
    (void)unused;
    if (*pattern == '{')
        return brace_expand(g, pattern, glob0, NULL, 0);
    const char *root = pattern;
    if (*root == '/')
        root++;
    gpat *list = make_pattern(root);
    gpos start = {root > pattern ? "/" : "", false, PT_UNKNOWN, false, 0};
    int status = helper(g, &start, &list, 1);
    free_pattern(list);
    return status;
}

static int expand(const char *pattern, glob_result *out, size_t limit, bool with_dirs)
{
    gstate g = {out, 0, limit, 0, false, with_dirs};
    out->paths = NULL;
    out->n = 0;
    if (!pattern)
        return 0;
    glob0(&g, pattern, NULL);
    return g.stopped ? -1 : 0;
}

int glob_expand(const char *pattern, glob_result *out, size_t limit) { return expand(pattern, out, limit, false); }
int glob_expand_all(const char *pattern, glob_result *out, size_t limit) { return expand(pattern, out, limit, true); }

void glob_free(glob_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->paths[i]);
    free(r->paths);
    r->paths = NULL;
    r->n = 0;
}
