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
#include "cli/result_cache.h"
#include "cli/lsp_cmd.h"
#include "cli/serve_cmd.h"

#include "hiera.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HIERA_MIMALLOC_SO
/* The variable that tells a process started again with mimalloc preloaded what LD_PRELOAD was:
 * "=VALUE", or "-" for unset. */
#define PRELOAD_SAVED "HIERA_PRELOAD_SAVED"

/* Puts LD_PRELOAD back as the user gave it: the commands hiera runs (facter, config_version
 * scripts) must not inherit mimalloc. */
static void preload_restore(const char *saved)
{
    if (saved[0] == '=')
        setenv("LD_PRELOAD", saved + 1, 1);
    else
        unsetenv("LD_PRELOAD");
    unsetenv(PRELOAD_SAVED);
}

/* hiera batch, serve, check and diff allocate and free millions of small values, where mimalloc
 * spends less CPU than glibc's malloc; a one-shot lookup is faster without it (loading it, and
 * its first page of every size class). The command is linked without it, and a long run starts
 * again at once (exec of /proc/self/exe, same arguments, same process) with it preloaded. Not
 * when the user preloads anything (another allocator, a sanitizer), when HIERA_NO_MIMALLOC is
 * set, or when the library is not there; when the exec fails, the run goes on as it is. */
static void long_run_allocator(char **argv)
{
    const char *saved = getenv(PRELOAD_SAVED);
    if (saved) {
        preload_restore(saved);
        return;
    }
    const char *pre = getenv("LD_PRELOAD");
    if ((pre && *pre) || getenv("HIERA_NO_MIMALLOC") || access(HIERA_MIMALLOC_SO, R_OK) != 0)
        return;
    if (setenv(PRELOAD_SAVED, pre ? "=" : "-", 1) != 0)
        return;
    if (setenv("LD_PRELOAD", HIERA_MIMALLOC_SO, 1) == 0)
        execv("/proc/self/exe", argv);
    preload_restore(pre ? "=" : "-");
}
#else
static void long_run_allocator(char **argv) { (void)argv; }
#endif

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "batch") || !strcmp(argv[1], "serve") || !strcmp(argv[1], "check") ||
                      !strcmp(argv[1], "diff")))
        long_run_allocator(argv);
    if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
        return result_cache_run(argc, argv, 2, lookup_main);
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
    if (argc >= 2 && strcmp(argv[1], "lsp") == 0)
        return lsp_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "eyaml") == 0)
        return eyaml_main(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        printf("%s\n", hiera_version());
        return 0;
    }
    /* everything else is the Hiera 3 command line (`hiera -- lookup` looks up a key "lookup") */
    return result_cache_run(argc, argv, 0, hiera3_main);
}
