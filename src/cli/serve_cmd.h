/* serve_cmd.h - `hiera serve`: the lookup service and its web page (see serve_cmd.c, src/serve/). */
#ifndef HIERA_CLI_SERVE_CMD_H
#define HIERA_CLI_SERVE_CMD_H

/* `hiera serve ...` (argv after "serve"); returns the exit status: 0 after a clean stop
 * (SIGTERM/SIGINT), 2 when the server cannot start. */
int serve_main(int argc, char **argv);

#endif
