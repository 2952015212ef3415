/* main.c - the hiera command: `hiera lookup ...` is `puppet lookup`, `hiera batch` many lookups,
 * `hiera keys` the keys a node can see,
 * `hiera eyaml` hiera-eyaml, `hiera version` this hiera's version; other forms are the Hiera 3
 * command line (`hiera -- version` looks up the key "version"). */
#include "cli/batch_cmd.h"
#include "cli/check_cmd.h"
#include "cli/diff_cmd.h"
#include "cli/eyaml_cmd.h"
#include "cli/hiera3_cmd.h"
#include "cli/keys_cmd.h"
#include "cli/lookup_cmd.h"
#include "cli/serve_cmd.h"

#include "hiera.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
        return lookup_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "batch") == 0)
        return batch_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "keys") == 0)
        return keys_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return check_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "diff") == 0)
        return diff_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0)
        return serve_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "eyaml") == 0)
        return eyaml_main(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        printf("%s\n", hiera_version());
        return 0;
    }
    /* everything else is the Hiera 3 command line (`hiera -- lookup` looks up a key "lookup") */
    return hiera3_main(argc, argv);
}
