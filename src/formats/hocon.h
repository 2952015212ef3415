/* hocon.h - HOCON (.conf) data, read as Puppet's hocon_data (the ruby hocon gem 1.3) reads it. */
#ifndef HIERA_HOCON_H
#define HIERA_HOCON_H

#include "base/util.h"
#include "base/value.h"

/* Parses HOCON text into a new hash value (the root object, with substitutions resolved), key
 * order as the hocon gem's resolved object gives it. NULL with err set (HERR_ERROR, file = name,
 * line, col, message) on a syntax error or an unresolvable substitution. */
hv *hocon_parse(const char *text, size_t len, const char *name, herr *err);
hv *hocon_load_file(const char *path, herr *err);

#endif
