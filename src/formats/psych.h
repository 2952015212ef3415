/* psych.h - YAML data through libyaml, resolved as Ruby's Psych resolves it.
 *
 * Modes, because the two Rubies that read hiera data load YAML differently, and Puppet permits
 * other classes in facts than in data:
 *  - YAML_PUPPET: Puppet's yaml_data and hiera.yaml loading: Psych safe_load with
 *    permitted_classes [Symbol] and aliases allowed (Puppet::Util::Yaml.safe_load).
 *  - YAML_HIERA3: Hiera 3.10's yaml backend: YAML.load under Psych 4 (a safe_load without
 *    aliases; Symbol permitted? see psych.c), as the `hiera` command reads data.
 *  - YAML_PUPPET_FACTS: a `puppet lookup --facts FILE` file: Puppet::Util::Yaml.safe_load_file
 *    with no permitted class at all, so a Symbol is refused ("Tried to load unspecified class:
 *    Symbol") as any other class.
 *  - YAML_PUPPET_FACTS_CACHE: Puppet's YAML facts cache ($vardir/yaml/facts/NODE.yaml, read by
 *    Puppet::Indirector::Yaml#load_file with permitted classes [Puppet::Node::Facts, Symbol]):
 *    as YAML_PUPPET, and the document's root mapping may be tagged
 *    !ruby/object:Puppet::Node::Facts (yaml_parse_facts_cache says whether it was). Only there:
 *    the permission is for these files alone, never for data files, which refuse the tag as
 *    Puppet does.
 */
#ifndef HIERA_PSYCH_H
#define HIERA_PSYCH_H

#include "base/util.h"
#include "base/value.h"

typedef enum {
    YAML_PUPPET = 0,
    YAML_HIERA3 = 1,
    YAML_PUPPET_FACTS = 2,
    YAML_PUPPET_FACTS_CACHE = 3,
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
/* yaml_parse in YAML_PUPPET_FACTS_CACHE mode; *facts_object (not NULL) is set to whether the
 * document's root is a mapping tagged !ruby/object:Puppet::Node::Facts, whose value is then the
 * hash of its members (name, values, timestamp, expiration), as Psych hands them to the class's
 * init_with (set even when the parse fails later). The tag anywhere else is refused with a
 * message saying so. plain_too: a document whose root is not so tagged is read as a --facts file
 * is (YAML_PUPPET_FACTS: no Symbol, the tag refused as any class), so that one parse reads a
 * file of either kind. */
hv *yaml_parse_facts_cache(const char *text, size_t len, const char *name, bool plain_too, bool *facts_object,
                           herr *err);

/* Reads and parses a whole file (see yaml_parse). A file that cannot be read is an error. */
hv *yaml_load_file(const char *path, yaml_mode mode, herr *err);

#endif
