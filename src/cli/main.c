/* main.c - the hiera command: `hiera lookup ...` is `puppet lookup`; other forms are the Hiera 3
 * command line. */
#include "cli.h"
#include "batch_cmd.h"
#include "eyaml_cmd.h"
#include "hiera3_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hiera_cache *cli_cache(void)
{
    hiera_cache *c = hiera_cache_new();
    const char *dir = getenv("HIERA_CACHE_DIR");
    if (!dir || strcmp(dir, "off") != 0)
        hiera_cache_use_disk(c, dir);
    return c;
}

#if defined(__SANITIZE_ADDRESS__)
#define FREE_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FREE_AT_EXIT 1
#endif
#endif
#ifndef FREE_AT_EXIT
#define FREE_AT_EXIT 0
#endif

/* kept reachable so that leak checkers see it as such */
hiera_cache *hiera_kept_cache; /* external: never optimised away */

void cli_cache_release(hiera_cache *c)
{
    if (FREE_AT_EXIT || getenv("HIERA_FREE_AT_EXIT")) {
        hiera_cache_free(c);
        return;
    }
    hiera_kept_cache = c;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
        return lookup_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "batch") == 0)
        return batch_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "eyaml") == 0)
        return eyaml_main(argc - 2, argv + 2);
    /* everything else is the Hiera 3 command line (`hiera -- lookup` looks up a key "lookup") */
    return hiera3_main(argc, argv);
}
