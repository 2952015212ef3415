/* batch_cmd.h - `hiera batch`: many keys for many nodes in one run (see batch_cmd.c). */
#ifndef HIERA_BATCH_CMD_H
#define HIERA_BATCH_CMD_H

/* `hiera batch ...` (argv after "batch"); returns the exit status: 0 every lookup answered,
 * 1 nothing printed (bad options, unreadable keys or facts folder), 2 the document was printed
 * and holds errors under ".errors". */
int batch_main(int argc, char **argv);

#endif
