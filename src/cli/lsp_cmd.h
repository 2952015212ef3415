/* lsp_cmd.h - `hiera lsp`: the Language Server Protocol server (see lsp_cmd.c, src/lsp/). */
#ifndef HIERA_CLI_LSP_CMD_H
#define HIERA_CLI_LSP_CMD_H

/* `hiera lsp ...` (argv after "lsp"); returns the exit status: 0 after shutdown and exit, 1 when
 * the client went away without them, 2 on a bad command line. */
int lsp_main(int argc, char **argv);

#endif
