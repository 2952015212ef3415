/* lsp.h - `hiera lsp`: a Language Server Protocol (3.17) server for Hiera, over JSON-RPC 2.0 on a
 * pair of file descriptors (stdin and stdout) with Content-Length framing.
 *
 * The files of this folder:
 *   rpc.c        framing (reading and writing messages), JSON in and out, positions (UTF-16)
 *   server.c     the message loop, the request queue and its worker threads, cancellation,
 *                documents and the states built from them, diagnostics
 *   workspace.c  the workspace (the code it reads, the nodes shown, the snapshot of the tree, the
 *                manifests), immutable once built and shared by the threads
 *   features.c   hover, definition, references, completion, code actions, symbols, hiera/lookup
 * Only the command links it (src/cli/lsp_cmd.c). */
#ifndef HIERA_LSP_LSP_H
#define HIERA_LSP_LSP_H

typedef struct {
    const char *log_file; /* where to log the messages (NULL: nowhere) */
    int jobs;             /* request threads (0: 2) */
} lsp_options;

/* Serves the client on in_fd/out_fd until it says exit or goes away. Returns the exit status:
 * 0 after shutdown and exit, 1 when the client exited or vanished without shutdown. */
int lsp_run(int in_fd, int out_fd, const lsp_options *o);

#endif
