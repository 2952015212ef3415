/* set_cmd.h - `hiera set KEY VALUE` and `hiera unset KEY`: change one key of a data file, byte for
 * byte where it is, with the change's effect on the fleet and hiera check's findings (set_cmd.c). */
#ifndef HIERA_CLI_SET_CMD_H
#define HIERA_CLI_SET_CMD_H

#include <stdbool.h>

/* argv after "set" or "unset"; returns the exit status: 0 written (or a dry run, or nothing to
 * change), 1 refused, 2 trouble. */
int set_main(int argc, char **argv, bool unset);

#endif
