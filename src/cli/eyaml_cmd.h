/* eyaml_cmd.h - `hiera eyaml ...`, the hiera-eyaml 3.3 command line (encrypt, decrypt,
 * createkeys) on top of src/crypto/eyaml.c. */
#ifndef HIERA_EYAML_CMD_H
#define HIERA_EYAML_CMD_H

/* argv holds the arguments after "eyaml" (argv[0] is the subcommand); returns the exit
 * status: 0, or 1 after a message on stderr. */
int eyaml_main(int argc, char **argv);

#endif
