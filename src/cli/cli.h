/* cli.h - the subcommands of the hiera command. */
#ifndef HIERA_CLI_H
#define HIERA_CLI_H

#include <stddef.h>
#include <strings.h>

#include "hiera.h"

/* `hiera lookup ...` (argv after "lookup"); returns the exit status */
int lookup_main(int argc, char **argv);

#endif
