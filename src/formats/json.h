/* json.h - JSON data files (json_data) through jansson, keeping key order. */
#ifndef HIERA_JSON_H
#define HIERA_JSON_H

#include "base/util.h"
#include "base/value.h"

/* Parses JSON text into a new value; NULL with err set (HERR_ERROR, with line/column) on failure.
 * `name` is used in messages (a file path or "<string>"). Any top-level value is accepted. */
hv *hjson_parse(const char *text, size_t len, const char *name, herr *err);
hv *hjson_load_file(const char *path, herr *err); /* reads and parses a whole file */

/* A plain compact JSON text of v for debugging and tests (not Puppet's rendering: see render.h).
 * Returns a malloc'ed string. */
char *hjson_debug(const hv *v);

#endif
