/* main.c - the hiera command: `hiera lookup ...` is `puppet lookup`; other forms are the Hiera 3
 * command line. */
#include "cli.h"
#include "batch_cmd.h"
#include "eyaml_cmd.h"

#include <stdio.h>
#include <string.h>

static const char *USAGE =
    "usage: hiera lookup [puppet lookup flags] <keys>   (see hiera lookup --help)\n"
    "       hiera batch --facts-dir DIR --keys-file FILE  (see hiera batch --help)\n"
    "       hiera eyaml encrypt|decrypt|createkeys ...  (see hiera eyaml --help)\n"
    "       hiera --version\n";

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
        return lookup_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "batch") == 0)
        return batch_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "eyaml") == 0)
        return eyaml_main(argc - 2, argv + 2);
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("%s\n", hiera_version());
        return 0;
    }
    fputs(USAGE, stderr);
    return 1;
}
