/* psych.h - YAML data through libyaml, resolved as Ruby's Psych resolves it.
 *
 * Two modes, because the two Rubies that read hiera data load YAML differently:
 *  - YAML_PUPPET: Puppet's yaml_data and hiera.yaml loading: Psych safe_load with
 *    permitted_classes [Symbol] and aliases allowed (Puppet::Util::Yaml.safe_load).
 *  - YAML_HIERA3: Hiera 3.10's yaml backend: YAML.load under Psych 4 (a safe_load without
 *    aliases; Symbol permitted? see psych.c), as the `hiera` command reads data.
 */
#ifndef HIERA_PSYCH_H
#define HIERA_PSYCH_H

#include "base/util.h"
#include "base/value.h"

typedef enum {
    YAML_PUPPET = 0,
    YAML_HIERA3 = 1,
} yaml_mode;

/* Parses the first document of text. Returns a new reference to its value: an empty stream or
 * an empty document gives undef (hv_undef()). Every node gets hv_set_line() = its 1-based start
 * line. On failure returns NULL and fills err (kind HERR_ERROR, line/col, file = name) with the
 * message Psych/Puppet would give, e.g. "(<name>): did not find expected ',' or ']' while parsing
 * a flow sequence at line 2 column 15" or "Tried to load unspecified class: Date".
 * `name` is the file name used in messages. */
hv *yaml_parse(const char *text, size_t len, const char *name, yaml_mode mode, herr *err);

/* What a plain (unquoted, untagged) scalar with this text loads as: Psych's ScalarScanner
 * (a string, nil, true/false for yes/no/on/off..., integers in every base, sexagesimal numbers,
 * floats, symbols). NULL with err for what safe_load refuses (a date, a time). New reference. */
hv *yaml_plain_scalar(const char *s, size_t n, herr *err);

/* Reads and parses a whole file (see yaml_parse). A file that cannot be read is an error. */
hv *yaml_load_file(const char *path, yaml_mode mode, herr *err);

#endif
