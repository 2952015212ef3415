/* common.c - what the subcommands share: the file cache they use (kept on disk between runs). */
#include "cli/common.h"

#include "formats/diskcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hiera_cache *cli_cache(void)
{
    hiera_cache *c = hiera_cache_new();
    const char *dir = getenv("HIERA_CACHE_DIR");
    if (!dir || strcmp(dir, "off") != 0) {
        /* the library reads the bound itself and takes the default for what is not a size: say so */
        const char *max = getenv("HIERA_CACHE_MAX_SIZE");
        uint64_t bytes;
        if (max && *max && !diskcache_parse_size(max, &bytes))
            fprintf(stderr, "Warning: HIERA_CACHE_MAX_SIZE=%s is not a size (bytes, or a number followed by K, M or "
                            "G): the disk cache keeps its default bound of %lluM\n",
                    max, (unsigned long long)(DISKCACHE_DEFAULT_MAX_SIZE >> 20));
        hiera_cache_use_disk(c, dir);
    }
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

void cli_print_diagnostic(const hiera_diagnostic *d, void *userdata)
{
    (void)userdata;
    fprintf(stderr, "%s: %s\n", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", d->message);
}
