/* diff_cmd.h - `hiera diff`: which nodes' answers change, and how, between two versions of the
 * data (see diff_cmd.c). */
#ifndef HIERA_CLI_DIFF_CMD_H
#define HIERA_CLI_DIFF_CMD_H

/* `hiera diff ...` (argv after "diff"); returns the exit status: 0 no change, 1 changes (or, with
 * --fail-on failures, lookups that now fail), 2 trouble. */
int diff_main(int argc, char **argv);

#endif
