/* keys_cmd.h - `hiera keys`: every key a node can see, and where (see keys_cmd.c). */
#ifndef HIERA_CLI_KEYS_CMD_H
#define HIERA_CLI_KEYS_CMD_H

/* `hiera keys ...` (argv after "keys"); returns the exit status */
int keys_main(int argc, char **argv);

#endif
