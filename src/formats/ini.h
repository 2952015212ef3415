/* ini.h - Puppet's configuration files (puppet.conf, environment.conf) read as Puppet 7's
 * Puppet::Settings::ConfigFile and IniFile read them: "[section]" lines, "name = value" lines
 * (no inline comments, a value runs to the end of the line), "#" comments and blank lines;
 * a value loses one leading and one trailing quote, "true"/"false" (any case) are booleans,
 * and a "{owner = x, group = y, mode = 0644}" group is file metadata, removed from the value. */
#ifndef HIERA_INI_H
#define HIERA_INI_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

typedef enum { INI_STRING, INI_TRUE, INI_FALSE } ini_kind;

typedef struct {
    char *name;
    ini_kind kind;
    char *value; /* INI_STRING: the value as Puppet keeps it; NULL for the booleans */
    int line;    /* 1-based */
} ini_setting;

typedef struct {
    char *name;   /* "main" for the lines before any section line */
    int line;     /* of its first "[name]" line; 0 for the implicit main section */
    ini_setting *settings; /* every setting of every section line of that name, in file order */
    size_t n;
} ini_section;

typedef struct {
    ini_section *sections; /* in the order their names first appear, "main" first */
    size_t n;
} ini_file;

/* Parses text (the contents of `file`, which is named in messages) into out. `allowed`: the
 * section names allowed (NULL-terminated; NULL: any, as environment.conf), "main" always being
 * one. Returns 0, or -1 with err (HERR_PUPPET) worded as Puppet's error: "Could not match line
 * <text>" with the file and line, "Illegal section 'x' in config file at (file: F, line: L)...",
 * "Invalid file option 'x'", "File modes must be numbers", "Could not parse '<value>'" or
 * "invalid byte sequence in UTF-8". As in Puppet, the sections are checked in the order above, so
 * an error in [main] is reported before one in an earlier [server]. out is empty on failure. */
int ini_parse(const char *text, size_t len, const char *file, const char *const *allowed, ini_file *out, herr *err);
void ini_free(ini_file *f);

/* A section by name, or NULL. BORROWED. */
const ini_section *ini_section_get(const ini_file *f, const char *name);
/* The first setting of that name in the section (Puppet uses the first), or NULL. BORROWED. */
const ini_setting *ini_setting_get(const ini_section *s, const char *name);

/* Puppet's ValueTranslator on a value given on the command line: "true"/"false" (any case) are
 * booleans, else one leading and one trailing quote go and trailing blanks are dropped. *value
 * gets a malloc'ed string for INI_STRING, NULL otherwise. */
ini_kind ini_translate(const char *text, char **value);

#endif
