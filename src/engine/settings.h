/* settings.h - Puppet's settings (puppet.conf, the command line, Puppet's defaults) and
 * environments (environment.conf, modulepath, config_version) as `puppet lookup` resolves them
 * (settings.c): the engine's side of hiera_settings / hiera_environment (include/hiera.h). */
#ifndef HIERA_ENGINE_SETTINGS_H
#define HIERA_ENGINE_SETTINGS_H

#include "hiera.h"

#include "base/util.h"
#include "base/value.h"

/* A setting's resolved value (interpolated and converted as Puppet's setting type does), as a
 * new value (undef for none), or NULL with err. env NULL: outside any environment. */
hv *settings_value(const hiera_settings *s, const hiera_environment *env, const char *name, herr *err);
/* The same as a string (Ruby's to_s), malloc'ed, or NULL with err (also when it has no value). */
char *settings_string(const hiera_settings *s, const hiera_environment *env, const char *name, herr *err);

/* Puppet's "strict" setting in the environment: 0 off, 1 warning, 2 error. */
int settings_strict(const hiera_environment *env);

/* The environment's settings as the top scope's "settings::<name>" variables (and
 * "settings::all_local"), computed once per environment: a new hash the caller owns (its values
 * are fresh, so that contexts on other threads never share a reference count). */
hv *settings_scope_vars(const hiera_environment *env, herr *err);

/* The folder of module `name` on the environment's modulepath (malloc'ed), or NULL: the first
 * modulepath folder holding a folder of that name (Environment#module; whether Puppet then
 * accepts the module, by its metadata.json, is lookup_layers.c's module_metadata). Remembered by the
 * environment. */
char *settings_module_dir(const hiera_environment *env, const char *name);

/* Whether every setting whose default is a constant (no "$name", not computed) converts as its
 * type does; false with *failed naming the first that does not (a setting of Puppet's table the
 * environment check passes over: asked by the unit tests). */
bool settings_constant_defaults_convert(const char **failed);

/* The settings an environment was loaded with (BORROWED). */
const hiera_settings *settings_of(const hiera_environment *env);

/* hiera_environment_check, its verdict kept in the disk cache dc (as a named entry) when the
 * check passed without a diagnostic, with the record of what it observed of the file system
 * and the environment variables (fsj_sub_begin), and used again while every observation
 * holds and every other input is the same: id[0, idlen) (the caller's: it must identify the
 * running program's code, the working folder and the user, as cli_run_identity does), the
 * settings' and the environment's (their command line values, puppet.conf, environment.conf).
 * The observations checked are made through the journal: a result the run keeps depends on
 * them. (A one-shot command's: the sub-record is one per process.) */
struct diskcache;
bool settings_check_kept(const hiera_environment *env, struct diskcache *dc, const void *id, size_t idlen,
                         hiera_error *err);

#endif
