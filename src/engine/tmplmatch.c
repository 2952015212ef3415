/* tmplmatch.c - location templates as patterns over existing files (see tmplmatch.h). Written by
 * hand: fnmatch(3) has no "any text, '/' included" for an interpolation and no brace
 * alternatives, and glob(3) only lists what exists for one pattern, while a template must be
 * tested against files already listed. */
#include "engine/tmplmatch.h"

#include <string.h>

#include "base/util.h"

/* Matching backtracks; a hostile template ("%{a}%{b}%{c}..." against a long path) could take
 * exponential time, so the work is bounded, and a match that runs out of budget counts as a
 * match (the result stays a superset). */
#define MATCH_BUDGET 200000L

typedef struct {
    bool glob;
    long budget;
} mstate;

/* The end of the "%{...}" starting at p (just past its '}'), or NULL when it is not closed.
 * Quotes inside (lookup('a}')) are skipped. */
static const char *expr_end(const char *p)
{
    char quote = 0;
    for (const char *q = p + 2; *q; q++) {
        if (quote) {
            if (*q == quote)
                quote = 0;
        } else if (*q == '\'' || *q == '"') {
            quote = *q;
        } else if (*q == '}') {
            return q + 1;
        }
    }
    return NULL;
}

/* The end of the brace group starting at p (just past its '}'), or NULL. */
static const char *brace_end(const char *p)
{
    int depth = 0;
    for (const char *q = p; *q; q++) {
        if (*q == '\\' && q[1]) {
            q++;
        } else if (*q == '{') {
            depth++;
        } else if (*q == '}') {
            if (--depth == 0)
                return q + 1;
        }
    }
    return NULL;
}

static bool match(mstate *m, const char *p, const char *s);

/* "[...]" at p against the character at s: *next receives the pattern after the class. A class
 * naming a non-ASCII byte accepts any character (superset). */
static bool class_match(const char *p, const char *s, const char **next)
{
    const char *q = p + 1;
    bool neg = false, hit = false, wide = false;
    if (*q == '!' || *q == '^') {
        neg = true;
        q++;
    }
    bool first = true;
    for (; *q && (first || *q != ']'); q++, first = false) {
        unsigned char lo = (unsigned char)*q, hi = lo;
        if (*q == '\\' && q[1])
            lo = hi = (unsigned char)*++q;
        if (q[1] == '-' && q[2] && q[2] != ']') {
            hi = (unsigned char)q[2];
            q += 2;
        }
        if (lo >= 0x80 || hi >= 0x80)
            wide = true;
        if ((unsigned char)*s >= lo && (unsigned char)*s <= hi)
            hit = true;
    }
    if (*q != ']') { /* not a class: a literal '[' */
        *next = p + 1;
        return *s == '[';
    }
    *next = q + 1;
    if (*s == 0 || *s == '/')
        return false;
    if (wide || (unsigned char)*s >= 0x80)
        return true;
    return hit != neg;
}

/* The length of the UTF-8 character at s (1 for a stray byte). */
static size_t char_len(const char *s)
{
    unsigned char c = (unsigned char)*s;
    size_t n = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    for (size_t i = 1; i < n; i++)
        if (!s[i])
            return i;
    return n;
}

static bool match(mstate *m, const char *p, const char *s)
{
    for (;;) {
        if (--m->budget < 0)
            return true;
        if (*p == 0)
            return *s == 0;
        if (p[0] == '%' && p[1] == '{') {
            const char *after = expr_end(p);
            if (after) {
                for (const char *t = s;; t++) {
                    if (match(m, after, t))
                        return true;
                    if (!*t)
                        return false;
                }
            }
        }
        if (m->glob) {
            switch (*p) {
            case '*':
                if (p[1] == '*' && p[2] == '/') {
                    /* zero or more whole directories */
                    const char *rest = p + 3;
                    for (const char *t = s;;) {
                        if (match(m, rest, t))
                            return true;
                        t = strchr(t, '/');
                        if (!t)
                            return false;
                        t++;
                    }
                }
                while (p[1] == '*')
                    p++;
                for (const char *t = s;; t++) {
                    if (match(m, p + 1, t))
                        return true;
                    if (!*t || *t == '/')
                        return false;
                }
            case '?':
                if (!*s || *s == '/')
                    return false;
                s += char_len(s);
                p++;
                continue;
            case '[': {
                const char *next;
                if (!class_match(p, s, &next))
                    return false;
                if (next == p + 1) { /* a literal '[' */
                    p++;
                    s++;
                } else {
                    s += char_len(s);
                    p = next;
                }
                continue;
            }
            case '{': {
                const char *end = brace_end(p);
                if (!end)
                    break; /* a literal '{' */
                /* each alternative followed by the rest of the pattern */
                const char *alt = p + 1;
                int depth = 0;
                for (const char *q = alt;; q++) {
                    if (*q == '\\' && q[1]) {
                        q++;
                        continue;
                    }
                    if (*q == '{')
                        depth++;
                    else if (*q == '}' && depth)
                        depth--;
                    else if ((*q == ',' && !depth) || q == end - 1) {
                        sbuf b = {0};
                        sb_addn(&b, alt, (size_t)(q - alt));
                        sb_adds(&b, end);
                        bool hit = match(m, sb_str(&b), s);
                        sb_free(&b);
                        if (hit)
                            return true;
                        if (q == end - 1)
                            return false;
                        alt = q + 1;
                    }
                }
            }
            case '\\':
                if (p[1]) {
                    if (*s != p[1])
                        return false;
                    p += 2;
                    s++;
                    continue;
                }
                break;
            default:
                break;
            }
        }
        if (*p != *s)
            return false;
        p++;
        s++;
    }
}

bool tmpl_match(const char *tmpl, const char *path, bool glob)
{
    mstate m = {glob, MATCH_BUDGET};
    return match(&m, tmpl, path);
}

/* Whether the component [s, e) is literal. */
static bool literal_part(const char *s, const char *e, bool glob)
{
    for (const char *q = s; q < e; q++) {
        if (q[0] == '%' && q + 1 < e && q[1] == '{')
            return false;
        if (glob && strchr("*?[]{}\\", *q))
            return false;
    }
    return true;
}

bool tmpl_is_pattern(const char *tmpl, bool glob) { return !literal_part(tmpl, tmpl + strlen(tmpl), glob); }

char *tmpl_base_dir(const char *tmpl, bool glob)
{
    /* components up to (not including) the first one that is not literal, and never the last
     * one (a file name) */
    const char *keep = tmpl; /* end of the kept prefix */
    const char *s = tmpl;
    for (;;) {
        const char *slash = strchr(s, '/');
        if (!slash)
            break; /* the last component */
        if (!literal_part(s, slash, glob))
            break;
        keep = slash;
        s = slash + 1;
    }
    if (keep == tmpl)
        return xstrdup("/");
    return xstrndup(tmpl, (size_t)(keep - tmpl));
}
