/* hiera3_cmd.h - the Hiera 3 command line: `hiera [options] key [default] [var=value...]`, as
 * Hiera 3.10's bin/hiera parses and answers it. */
#ifndef HIERA_CLI_HIERA3_CMD_H
#define HIERA_CLI_HIERA3_CMD_H

#include <stdio.h>

/* argv is the whole command line (argv[0] is the program name). Returns the exit status:
 * 0 after printing the answer (nil when nothing was found), 1 on any error (one line on
 * stderr). `--` ends the options, so `hiera -- lookup` looks up a key named lookup. */
int hiera3_main(int argc, char **argv);

/* The hiera command's usage and its subcommands, one entry each (main.c, whose dispatcher they
 * are): what --help prints before Hiera 3's usage. */
void cli_print_subcommands(FILE *out);

#endif
