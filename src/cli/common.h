/* common.h - what the subcommands of the hiera command share (common.c). */
#ifndef HIERA_CLI_COMMON_H
#define HIERA_CLI_COMMON_H

#include "hiera.h"

/* The file cache the commands use: kept on disk between runs (HIERA_CACHE_DIR names the folder;
 * "off" keeps it in memory only). Release with hiera_cache_free. */
hiera_cache *cli_cache(void);
/* Releases it at the end of a one-shot command: the parsed files are left for the process exit
 * to reclaim (tearing a large tree down costs more than the lookup), unless HIERA_FREE_AT_EXIT is
 * set or the build runs under a sanitizer. */
void cli_cache_release(hiera_cache *c);
/* The commands' diagnostics callback (hiera_options.diagnostics): "Warning: <message>" on stderr,
 * as Puppet prints its warnings. */
void cli_print_diagnostic(const hiera_diagnostic *d, void *userdata);

#endif
