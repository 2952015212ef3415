/* check_cmd.h - `hiera check`: lints a control repository (see check_cmd.c). */
#ifndef HIERA_CHECK_CMD_H
#define HIERA_CHECK_CMD_H

/* `hiera check ...` (argv after "check"); returns the exit status: 0 no error, 1 errors found,
 * 2 the check could not run. */
int check_main(int argc, char **argv);

#endif
