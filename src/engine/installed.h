/* installed.h - which Puppet is installed on this machine, as the hiera command answers as it
 * (installed.c): the `puppet` command found on PATH and the Ruby library behind it, read as
 * files (no Ruby is started). */
#ifndef HIERA_ENGINE_INSTALLED_H
#define HIERA_ENGINE_INSTALLED_H

#include "hiera.h"

/* The first `puppet` on PATH that is an executable regular file (a folder named twice is looked
 * in once), its links resolved: a new string (free), or NULL when PATH has none. */
char *installed_puppet_command(void);

/* The version a context answers as for v: v itself when 7 or 8, else (HIERA_PUPPET_AUTO) the
 * installed one (hiera_puppet_version_find), found again only when HIERA_PUPPET_VERSION or PATH
 * changed. An unusable HIERA_PUPPET_VERSION gives 0 (hiera_settings_load and hiera_new refuse it,
 * saying why). Thread-safe. */
hiera_puppet_version puppet_version_resolve(hiera_puppet_version v);

/* Whether Hiera 3's library is there for Puppet 8 (Puppet.features.hiera?, which a version 3
 * backend of Hiera's own needs): only when the installed Puppet is 8 and hiera.rb is in its Ruby
 * library (Debian 13's puppet-agent does not pull in the hiera package). Answering as Puppet 8
 * while another Puppet is installed: false, as Debian 13's puppet-agent alone. */
bool installed_puppet8_has_hiera3(void);

#endif
