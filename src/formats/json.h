/* json.h - JSON as Ruby's JSON.parse (json gem 2.6.1) reads it: its language (comments, lenient
 * escapes, big integers) and its error messages; key order kept, lines recorded. */
#ifndef HIERA_JSON_H
#define HIERA_JSON_H

#include "base/util.h"
#include "base/value.h"

/* Parses JSON text into a new value, each node with hv_set_line() = its 1-based start line; NULL
 * with err set on failure (HERR_ERROR, with line/column): "Unable to parse (<name>): " and the
 * gem's message, e.g. "859: unexpected token at '{...'". `name` is a file path or "<string>".
 * Any top-level value is accepted. */
hv *hjson_parse(const char *text, size_t len, const char *name, herr *err);
hv *hjson_load_file(const char *path, herr *err); /* reads and parses a whole file */
/* hjson_parse as Puppet::Util::Json.load reads: under Ruby 3.3 (Puppet 8.10 on Debian 13, where
 * multi_json is installed with Puppet) through MultiJson, which refuses a text that is empty or
 * only blanks before the gem sees it, with an error whose message is its class name ("Unable to
 * parse (<name>): JSON::ParserError"). */
hv *hjson_parse_puppet(const char *text, size_t len, const char *name, herr *err);

/* A plain compact JSON text of v for debugging and tests (not Puppet's rendering: see render.h).
 * Returns a malloc'ed string. */
char *hjson_debug(const hv *v);

#endif
