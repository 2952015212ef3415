/* cli.h - the subcommands of the hiera command. */
#ifndef HIERA_CLI_H
#define HIERA_CLI_H

#include <stddef.h>
#include <strings.h>

#include "hiera.h"

/* `hiera lookup ...` (argv after "lookup"); returns the exit status */
int lookup_main(int argc, char **argv);

/* The file cache the commands use: kept on disk between runs (HIERA_CACHE_DIR names the folder;
 * "off" keeps it in memory only). Release with hiera_cache_free. */
hiera_cache *cli_cache(void);

#endif
