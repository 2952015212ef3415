/* lookup_cmd.h - `hiera lookup`: the `puppet lookup` command line (see lookup_cmd.c). */
#ifndef HIERA_CLI_LOOKUP_CMD_H
#define HIERA_CLI_LOOKUP_CMD_H

/* `hiera lookup ...` (argv after "lookup"); returns the exit status */
int lookup_main(int argc, char **argv);

#endif
