/* ini.c - puppet.conf and environment.conf, read as Puppet 7 reads them
 * (lib/puppet/settings/ini_file.rb, config_file.rb, value_translator.rb).
 *
 * Written by hand rather than with an INI library: Puppet's format is its own (Ruby regexps
 * decide what a section, a setting, a comment and an error are; values keep inline '#'; quotes
 * and "{mode = ...}" groups are peeled in a fixed order; the first of two equal settings wins)
 * and no library reads it the same way. Section and setting names are Ruby's [[:word:]]
 * (Unicode letters, marks, digits and connector punctuation), classified with Oniguruma's
 * tables; blanks are Ruby's \s (space, \t, \r, \n, \f, \v). */
#include "formats/ini.h"
#include "base/rregex.h"

#include <oniguruma.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

static bool is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Decodes the UTF-8 character at p (the text was validated): its code point and length. */
static size_t utf8_decode(const unsigned char *p, unsigned *cp)
{
    if (p[0] < 0x80) {
        *cp = p[0];
        return 1;
    }
    if ((p[0] & 0xE0) == 0xC0) {
        *cp = ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        return 2;
    }
    if ((p[0] & 0xF0) == 0xE0) {
        *cp = ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        return 3;
    }
    *cp = ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    return 4;
}

/* The length of the [[:word:]] character at s[i] (within n), 0 when it is none. */
static size_t word_char(const char *s, size_t i, size_t n)
{
    unsigned char c = (unsigned char)s[i];
    if (c < 0x80)
        return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') ? 1 : 0;
    unsigned cp;
    size_t len = utf8_decode((const unsigned char *)s + i, &cp);
    if (i + len > n)
        return 0;
    if (!rregex_init()) /* Oniguruma's tables (the hiera command loads it on first use) */
        return 0;       /* (it cannot: the thread is marked, the public call fails) */
    return ONIGENC_IS_CODE_WORD(ONIG_ENCODING_UTF8, cp) ? len : 0;
}

/* Ruby raises "invalid byte sequence in UTF-8" when a regexp meets such a line; Puppet then
 * gives up on the whole file. */
static bool valid_utf8(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    while (p < end) {
        unsigned c = *p;
        size_t n;
        unsigned cp, min;
        if (c < 0x80) {
            p++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if ((size_t)(end - p) < n)
            return false;
        for (size_t i = 1; i < n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += n;
    }
    return true;
}

/* /^(\s*)\[([[:word:]]+)\](\s*)$/ on a chomped line: the name's bounds. */
static bool match_section(const char *s, size_t n, size_t *nb, size_t *ne)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i >= n || s[i] != '[')
        return false;
    size_t b = ++i, w;
    while (i < n && (w = word_char(s, i, n)) > 0)
        i += w;
    if (i == b || i >= n || s[i] != ']')
        return false;
    size_t e = i++;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i != n)
        return false;
    *nb = b;
    *ne = e;
    return true;
}

/* /^(\s*)([[:word:]]+)(\s*=\s*)(.*?)(\s*)$/ on a chomped line: name and value bounds. */
static bool match_setting(const char *s, size_t n, size_t *nb, size_t *ne, size_t *vb, size_t *ve)
{
    size_t i = 0, w;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    size_t b = i;
    while (i < n && (w = word_char(s, i, n)) > 0)
        i += w;
    if (i == b)
        return false;
    size_t e = i;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i >= n || s[i] != '=')
        return false;
    i++;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    size_t end = n;
    while (end > i && is_space((unsigned char)s[end - 1]))
        end--;
    *nb = b, *ne = e, *vb = i, *ve = end;
    return true;
}

ini_kind ini_translate(const char *text, char **value)
{
    *value = NULL;
    if (!strcasecmp(text, "false"))
        return INI_FALSE;
    if (!strcasecmp(text, "true"))
        return INI_TRUE;
    /* gsub(/^["']|["']$/, '') then sub(/\s+$/, '') */
    size_t n = strlen(text), b = 0;
    if (n && (text[0] == '"' || text[0] == '\''))
        b = 1;
    if (n > b && (text[n - 1] == '"' || text[n - 1] == '\''))
        n--;
    while (n > b && is_space((unsigned char)text[n - 1]))
        n--;
    *value = xstrndup(text + b, n - b);
    return INI_STRING;
}

static bool ascii_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* One "name = value" of a metadata group: /^\s*(\w+)\s*=\s*([\w]+)\s*$/. */
static bool match_param(const char *s, size_t n, size_t *nb, size_t *ne, size_t *vb, size_t *ve)
{
    size_t i = 0;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    size_t b = i;
    while (i < n && ascii_word(s[i]))
        i++;
    if (i == b)
        return false;
    size_t e = i;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i >= n || s[i] != '=')
        return false;
    i++;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    size_t v = i;
    while (i < n && ascii_word(s[i]))
        i++;
    if (i == v)
        return false;
    size_t ve_ = i;
    while (i < n && is_space((unsigned char)s[i]))
        i++;
    if (i != n)
        return false;
    *nb = b, *ne = e, *vb = v, *ve = ve_;
    return true;
}

/* ConfigFile#extract_fileinfo: the first "{...}" group (at least one character inside) holds
 * "owner = x, group = y, mode = 0644" and is removed from the value. Takes over *value. */
static int extract_fileinfo(char **value, herr *err)
{
    char *s = *value;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '{')
            continue;
        const char *close = memchr(s + i + 1, '}', n - i - 1);
        if (!close)
            break; /* no later '{' can close either */
        size_t j = (size_t)(close - s);
        if (j == i + 1)
            continue; /* "{}": [^}]+ needs a character */
        /* \s*([^}]+)\s* : $1 is the inside without its leading blanks (one kept if all are) */
        size_t b = i + 1;
        while (b < j && is_space((unsigned char)s[b]))
            b++;
        if (b == j)
            b = j - 1;
        /* $1 split at commas (and the blanks around them); empty pieces at the end dropped */
        size_t p = b;
        char **pieces = NULL;
        size_t np = 0;
        while (p <= j) {
            size_t q = p;
            while (q < j && s[q] != ',')
                q++;
            size_t pe = q;
            while (pe > p && q < j && is_space((unsigned char)s[pe - 1]))
                pe--; /* blanks before a comma belong to the separator */
            pieces = xrealloc(pieces, (np + 1) * sizeof *pieces);
            pieces[np++] = xstrndup(s + p, pe - p);
            if (q >= j)
                break;
            p = q + 1;
            while (p < j && is_space((unsigned char)s[p]))
                p++; /* and blanks after it */
        }
        while (np && !*pieces[np - 1])
            free(pieces[--np]);
        int rc = 0;
        for (size_t k = 0; k < np && rc == 0; k++) {
            size_t nb, ne, vb, ve, len = strlen(pieces[k]);
            if (!match_param(pieces[k], len, &nb, &ne, &vb, &ve)) {
                herr_set(err, HERR_PUPPET, "Could not parse '%s'", s);
                rc = -1;
                break;
            }
            char *name = xstrndup(pieces[k] + nb, ne - nb);
            if (strcmp(name, "owner") && strcmp(name, "group") && strcmp(name, "mode")) {
                herr_set(err, HERR_PUPPET, "Invalid file option '%s'", name);
                rc = -1;
            } else if (!strcmp(name, "mode")) {
                for (size_t c = vb; c < ve; c++)
                    if (pieces[k][c] < '0' || pieces[k][c] > '9') {
                        herr_set(err, HERR_PUPPET, "File modes must be numbers");
                        rc = -1;
                        break;
                    }
            }
            free(name);
        }
        for (size_t k = 0; k < np; k++)
            free(pieces[k]);
        free(pieces);
        if (rc)
            return -1;
        memmove(s + i, s + j + 1, n - j); /* with the NUL */
        n -= j + 1 - i;
        break;
    }
    while (n && is_space((unsigned char)s[n - 1]))
        s[--n] = 0;
    return 0;
}

typedef enum { L_OTHER, L_SECTION, L_SETTING } line_kind;

typedef struct {
    line_kind kind;
    const char *text; /* the line as read, with its newline */
    size_t len;
    size_t nb, ne, vb, ve; /* name and value bounds in the chomped line */
    int number;
    size_t section; /* index in the file's sections of the section it belongs to */
} line_rec;

static ini_section *section_for(ini_file *f, const char *name, size_t len, int line, size_t *index)
{
    for (size_t i = 0; i < f->n; i++)
        if (strlen(f->sections[i].name) == len && !memcmp(f->sections[i].name, name, len)) {
            *index = i;
            return &f->sections[i];
        }
    f->sections = xrealloc(f->sections, (f->n + 1) * sizeof *f->sections);
    ini_section *s = &f->sections[f->n];
    memset(s, 0, sizeof *s);
    s->name = xstrndup(name, len);
    s->line = line;
    *index = f->n++;
    return s;
}

static bool allowed_name(const char *const *allowed, const char *name, size_t len)
{
    if (len == 4 && !memcmp(name, "main", 4))
        return true;
    for (size_t i = 0; allowed[i]; i++)
        if (strlen(allowed[i]) == len && !memcmp(allowed[i], name, len))
            return true;
    return false;
}

int ini_parse(const char *text, size_t len, const char *file, const char *const *allowed, ini_file *out, herr *err)
{
    memset(out, 0, sizeof *out);
    if (!valid_utf8(text, len)) {
        herr_set(err, HERR_PUPPET, "invalid byte sequence in UTF-8");
        return -1;
    }
    /* IniFile.parse: every line classified */
    line_rec *lines = NULL;
    size_t nlines = 0, cap = 0;
    size_t cur = 0;
    section_for(out, "main", 4, 0, &cur);
    int number = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(text + p, '\n', len - p);
        size_t l = nl ? (size_t)(nl - (text + p)) + 1 : len - p;
        const char *s = text + p;
        size_t n = l; /* chomp: "\r\n", "\n" or "\r" */
        if (n && s[n - 1] == '\n') {
            n--;
            if (n && s[n - 1] == '\r')
                n--;
        } else if (n && s[n - 1] == '\r') {
            n--;
        }
        if (nlines == cap) {
            cap = cap ? cap * 2 : 32;
            lines = xrealloc(lines, cap * sizeof *lines);
        }
        line_rec *r = &lines[nlines++];
        memset(r, 0, sizeof *r);
        r->text = s;
        r->len = l;
        r->number = ++number;
        if (match_section(s, n, &r->nb, &r->ne)) {
            r->kind = L_SECTION;
            section_for(out, s + r->nb, r->ne - r->nb, r->number, &cur);
        } else if (match_setting(s, n, &r->nb, &r->ne, &r->vb, &r->ve)) {
            r->kind = L_SETTING;
        }
        r->section = cur;
        p += l;
    }
    /* ConfigFile#unique_sections_in: every section line in the file's order */
    int rc = 0;
    if (allowed) {
        for (size_t i = 0; i < nlines; i++) {
            line_rec *r = &lines[i];
            if (r->kind != L_SECTION || allowed_name(allowed, r->text + r->nb, r->ne - r->nb))
                continue;
            sbuf names = {0};
            sb_adds(&names, "main");
            for (size_t k = 0; allowed[k]; k++)
                if (strcmp(allowed[k], "main"))
                    sb_addf(&names, ", %s", allowed[k]);
            herr_set(err, HERR_PUPPET,
                     "Illegal section '%.*s' in config file at (file: %s, line: %d). The only valid puppet.conf sections are: [%s]. "
                     "Please use the directory environments feature to specify environments. "
                     "(See https://puppet.com/docs/puppet/latest/environments_about.html)",
                     (int)(r->ne - r->nb), r->text + r->nb, file, r->number, sb_str(&names));
            sb_free(&names);
            rc = -1;
            break;
        }
    }
    /* ConfigFile#parse_file: section by section, each section's lines in the file's order */
    for (size_t si = 0; si < out->n && rc == 0; si++) {
        ini_section *sec = &out->sections[si];
        for (size_t i = 0; i < nlines && rc == 0; i++) {
            line_rec *r = &lines[i];
            if (r->section != si || r->kind == L_SECTION)
                continue;
            if (r->kind == L_OTHER) {
                /* /^\s*#|^\s*$/ on the line as read */
                size_t k = 0;
                while (k < r->len && is_space((unsigned char)r->text[k]))
                    k++;
                if (k == r->len || r->text[k] == '#')
                    continue;
                herr_set(err, HERR_PUPPET, "Could not match line %.*s", (int)r->len, r->text);
                herr_at(err, file, r->number, 0);
                rc = -1;
                break;
            }
            char *raw = xstrndup(r->text + r->vb, r->ve - r->vb);
            char *value = NULL;
            ini_kind kind = ini_translate(raw, &value);
            free(raw);
            if (kind == INI_STRING && extract_fileinfo(&value, err)) {
                free(value);
                rc = -1;
                break;
            }
            sec->settings = xrealloc(sec->settings, (sec->n + 1) * sizeof *sec->settings);
            sec->settings[sec->n++] = (ini_setting){xstrndup(r->text + r->nb, r->ne - r->nb), kind, value, r->number};
        }
    }
    free(lines);
    if (rc)
        ini_free(out);
    return rc;
}

void ini_free(ini_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        for (size_t k = 0; k < f->sections[i].n; k++) {
            free(f->sections[i].settings[k].name);
            free(f->sections[i].settings[k].value);
        }
        free(f->sections[i].settings);
        free(f->sections[i].name);
    }
    free(f->sections);
    memset(f, 0, sizeof *f);
}

const ini_section *ini_section_get(const ini_file *f, const char *name)
{
    for (size_t i = 0; f && i < f->n; i++)
        if (!strcmp(f->sections[i].name, name))
            return &f->sections[i];
    return NULL;
}

const ini_setting *ini_setting_get(const ini_section *s, const char *name)
{
    for (size_t i = 0; s && i < s->n; i++)
        if (!strcmp(s->settings[i].name, name))
            return &s->settings[i];
    return NULL;
}
