/* tmplmatch.h - which existing files a hierarchy location can name, for any values of the
 * variables it interpolates: a location template ("nodes/%{trusted.certname}.yaml", a glob
 * "roles/%{role}/web*.yaml") read as a pattern over the files that exist (snapshots, `hiera check`).
 *
 * In a template, "%{...}" stands for any text (a variable's value may hold '/'); in a glob
 * template, '*', '**' + '/', '?', "[...]" and "{a,b}" keep their glob meanings too. The match is
 * a superset of what Ruby's glob would give for the same values (a leading '.' is not treated
 * specially): a file that matches may be read by some node; a file that does not, by none. */
#ifndef HIERA_ENGINE_TMPLMATCH_H
#define HIERA_ENGINE_TMPLMATCH_H

#include <stdbool.h>
#include <stddef.h>

/* Whether path (absolute) matches the absolute template tmpl. */
bool tmpl_match(const char *tmpl, const char *path, bool glob);

/* The folder under which every match of tmpl lies: its leading components that hold no "%{" and
 * (for a glob) no glob character, joined (malloc'ed; "/" at least). */
char *tmpl_base_dir(const char *tmpl, bool glob);

/* Whether tmpl holds anything but literal text (an interpolation, or glob characters). */
bool tmpl_is_pattern(const char *tmpl, bool glob);

#endif
