/* main.c - the hiera command: `hiera lookup ...` is `puppet lookup`, `hiera batch` many lookups,
 * `hiera keys` the keys a node can see, `hiera check` a linter, `hiera diff` the fleet impact of a
 * change, `hiera set`/`unset` change one key of a data file, `hiera serve` answers over HTTP, `hiera lsp` a language server for editors, `hiera
 * eyaml` hiera-eyaml, `hiera version` this hiera's version; other forms are the Hiera 3 command
 * line (`hiera -- version` looks up the key "version"). Every subcommand the dispatcher below
 * knows has a line in SUBCOMMANDS (hiera --help) and a man page, docs/hiera-NAME.1 (or .8):
 * tests/docs/check.py finds the subcommands in main() and checks both. `--puppet-version 7|8`
 * anywhere (but in hiera diff, whose sides name their own) chooses the Puppet answered as
 * (cli/common.h cli_choose_puppet_version); `hiera version` says which. */
#include "cli/batch_cmd.h"
#include "cli/check_cmd.h"
#include "cli/common.h"
#include "cli/diff_cmd.h"
#include "cli/eyaml_cmd.h"
#include "cli/hiera3_cmd.h"
#include "cli/keys_cmd.h"
#include "cli/lookup_cmd.h"
#include "cli/lsp_cmd.h"
#include "cli/result_cache.h"
#include "cli/serve_cmd.h"
#include "cli/set_cmd.h"

#include "base/fsjournal.h"
#include "hiera.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* `hiera --help`'s list (hiera3_cmd.c prints it before Hiera 3's usage): one entry per subcommand
 * of main(), its summary's lines broken by \n */
static const struct {
    const char *name, *summary;
} SUBCOMMANDS[] = {
    {"lookup", "look up keys as `puppet lookup` (Puppet 7.23) does: Puppet's settings,\n"
               "environments and modules (hiera lookup --help)"},
    {"batch", "look up many keys for many nodes in one run (hiera batch --help)"},
    {"keys", "list the keys a node can see, with the file and line of each, or its\n"
             "hierarchy's layers, levels and files (hiera keys --help)"},
    {"check", "lint a control repository: hiera.yaml, data, interpolation, lookup_options,\n"
              "eyaml, keys against class parameters (hiera check --help)"},
    {"diff", "which nodes' answers two versions of the data change, and how\n"
             "(hiera diff --help)"},
    {"set", "set one key of a data file, byte for byte where it is, with the diff, the\n"
            "nodes whose answers change and hiera check's new findings (hiera set --help)"},
    {"unset", "remove one key of a data file, likewise (hiera unset --help)"},
    {"serve", "answer lookups over HTTP (JSON API and a web page) from a snapshot kept\n"
              "current with the files (hiera serve --help)"},
    {"lsp", "a Language Server Protocol server for editors: diagnostics, hover,\n"
            "definitions and completion on hiera.yaml, data and manifests (hiera lsp --help)"},
    {"eyaml", "hiera-eyaml 3.3's commands: createkeys, encrypt, decrypt, version\n"
              "(hiera eyaml --help)"},
    {"version", "print this hiera's version (" HIERA_VERSION "); hiera --version prints Hiera 3's"},
};

void cli_print_subcommands(FILE *out)
{
    fputs("usage: hiera <subcommand> [arguments]\n"
          "   or: hiera [options] key [default value] [variable='text'...]   (Hiera 3.10's command line)\n"
          "\n"
          "Subcommands:\n",
          out);
    for (size_t i = 0; i < sizeof SUBCOMMANDS / sizeof *SUBCOMMANDS; i++) {
        const char *s = SUBCOMMANDS[i].summary;
        fprintf(out, "    %-9s ", SUBCOMMANDS[i].name);
        for (const char *nl; (nl = strchr(s, '\n')) != NULL; s = nl + 1)
            fprintf(out, "%.*s\n%14s", (int)(nl - s), s, "");
        fprintf(out, "%s\n", s);
    }
    fputs("\nEvery subcommand has a man page: man hiera-lookup, man hiera-serve...\n"
          "\n"
          "--puppet-version 7|8 (anywhere, or HIERA_PUPPET_VERSION=7|8) answers as Puppet 7.23 and Hiera\n"
          "3.10 (Debian 12) or as Puppet 8.10 and Hiera 3.12 (Debian 13); default: the installed Puppet.\n"
          "\n"
          "Without a subcommand (or after --), hiera is Hiera 3.10's command line:\n"
          "\n",
          out);
}

#ifdef HIERA_MIMALLOC_SO
/* The variable that tells a process started again with mimalloc preloaded what LD_PRELOAD was:
 * "=VALUE", or "-" for unset. */
#define PRELOAD_SAVED "HIERA_PRELOAD_SAVED"

/* Set (to "1") when the restarted process's MIMALLOC_LARGE_OS_PAGES is hiera's, not the user's */
#define LARGE_PAGES_SET "HIERA_LARGE_PAGES_SET"

/* Puts LD_PRELOAD back as the user gave it: the commands hiera runs (facter, config_version
 * scripts) must not inherit mimalloc, nor its options. */
static void preload_restore(const char *saved)
{
    if (saved[0] == '=')
        setenv("LD_PRELOAD", saved + 1, 1);
    else
        unsetenv("LD_PRELOAD");
    unsetenv(PRELOAD_SAVED);
    if (getenv(LARGE_PAGES_SET)) {
        unsetenv("MIMALLOC_LARGE_OS_PAGES");
        unsetenv(LARGE_PAGES_SET);
    }
}

/* Whether mimalloc may be told to take 2 MiB pages: transparent huge pages are not switched off,
 * and the system keeps no pool of huge pages (vm.nr_hugepages is 0). mimalloc asks for such pages
 * first (MAP_HUGETLB) and falls back to transparent ones; a pool is kept for a program that
 * needs it (a database), and a run of hiera must not take part of it. Anything unreadable: no. */
static bool large_pages_fit(void)
{
    char buf[128];
    FILE *f = fopen("/proc/sys/vm/nr_hugepages", "re");
    bool none = f && fgets(buf, sizeof buf, f) && strcmp(buf, "0\n") == 0;
    if (f)
        fclose(f);
    if (!none)
        return false;
    f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
    bool thp = f && fgets(buf, sizeof buf, f) && !strstr(buf, "[never]");
    if (f)
        fclose(f);
    return thp;
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
    /* The runs over many nodes (batch, check, diff) grow their heap to 10-20 MB in a fraction of a
     * second, and the first touch of each 4 KiB page is a fault (13 us each on the virtual
     * machines of bench/README.md: a sixth of `hiera batch`'s CPU time on the benchmark fleet).
     * mimalloc then takes its memory in 2 MiB pages (transparent huge pages, which it asks for
     * with madvise): 3,300 faults become 500, `hiera batch --jobs 1` takes 10% less CPU, check
     * 19% and diff 25% less, for 3-5 MB more peak RSS (bench/README.md, "Large pages"). Not
     * `hiera serve`, which lives long and holds many trees: its faults are paid once. The user's
     * own MIMALLOC_LARGE_OS_PAGES wins; not where large_pages_fit says no. */
    if (strcmp(argv[1], "serve") != 0 && !getenv("MIMALLOC_LARGE_OS_PAGES") && large_pages_fit() &&
        setenv("MIMALLOC_LARGE_OS_PAGES", "1", 1) == 0)
        setenv(LARGE_PAGES_SET, "1", 1);
    if (setenv("LD_PRELOAD", HIERA_MIMALLOC_SO, 1) == 0)
        execv("/proc/self/exe", argv);
    preload_restore(pre ? "=" : "-");
}
#else
static void long_run_allocator(char **argv) { (void)argv; }
#endif

/* A one-shot lookup touches some 100 KB of fresh heap, and the first touch of each page is a page
 * fault (about 3 us each on the virtual machines of bench/README.md: a tenth of the time of
 * /bin/true for 25 of them). glibc's malloc takes its heap from brk in one 132 KB step at the first
 * allocation; its pages are filled here in one call instead (MADV_POPULATE_WRITE, Linux 5.14; an
 * older kernel refuses it and nothing changes). Only when the first block does come from that
 * heap (not under another allocator or a sanitizer). */
static void oneshot_heap(void)
{
#ifdef MADV_POPULATE_WRITE
    void *first = malloc(1);
    char *end = sbrk(0), *start = (char *)((uintptr_t)first & ~(uintptr_t)4095);
    if (first && end != (char *)-1 && start < end && end - start <= (ptrdiff_t)1 << 20)
        madvise(start, (size_t)(end - start), MADV_POPULATE_WRITE);
    free(first);
#endif
}

/* Whether the command line is one result_cache_run answers (`hiera lookup`, Hiera 3's command
 * line): the dispatch below. */
static bool result_cached(int argc, char **argv)
{
    static const char *const own[] = {"batch", "keys", "check", "diff", "serve", "set", "unset", "lsp", "eyaml"};
    if (argc < 2)
        return true;
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (!strcmp(argv[1], own[i]))
            return false;
    return !(!strcmp(argv[1], "version") && (argc == 2 || (argc == 3 && !strcmp(argv[2], "--help"))));
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "batch") || !strcmp(argv[1], "serve") || !strcmp(argv[1], "check") ||
                      !strcmp(argv[1], "diff")))
        long_run_allocator(argv);
    /* a call the result cache may answer is recorded from here: the search of PATH for Puppet
     * that follows is then made once, not again under the journal (result_cache.h) */
    bool journal = result_cached(argc, argv) && result_cache_wanted();
    if (journal)
        fsj_begin();
    if (!(argc >= 2 && !strcmp(argv[1], "diff"))) {
        hiera_puppet_version v = cli_choose_puppet_version(&argc, argv);
        if (!v)
            return argc >= 2 && !strcmp(argv[1], "check") ? 2 : 1;
        hiera_thread_puppet_version(v); /* (the messages of what is read and written outside a context) */
    }
    if (journal && !result_cached(argc, argv)) /* (--puppet-version came first) */
        (void)fsj_end();
    bool oneshot = !(argc >= 2 && (!strcmp(argv[1], "batch") || !strcmp(argv[1], "serve") || !strcmp(argv[1], "check") ||
                                   !strcmp(argv[1], "diff") || !strcmp(argv[1], "keys") || !strcmp(argv[1], "lsp")));
    if (oneshot)
        oneshot_heap();
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
    if (argc >= 2 && (strcmp(argv[1], "set") == 0 || strcmp(argv[1], "unset") == 0))
        return set_main(argc - 2, argv + 2, argv[1][0] == 'u');
    if (argc >= 2 && strcmp(argv[1], "lsp") == 0)
        return lsp_main(argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[1], "eyaml") == 0)
        return eyaml_main(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "version") == 0) {
        char *why = NULL;
        hiera_puppet_version v = cli_chosen_puppet_version(&why);
        printf("%s\nanswers as %s (%s)\n", hiera_version(), cli_puppet_version_text(v), why ? why : "");
        free(why);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "version") == 0 && strcmp(argv[2], "--help") == 0) {
        printf("usage: hiera version\n\nPrints this hiera's version (%s), then the Puppet and Hiera 3 it answers as\n"
               "(--puppet-version, HIERA_PUPPET_VERSION, else the installed Puppet). `hiera --version` (Hiera 3's option)\n"
               "prints the version of the Hiera 3 command it answers as (%s). Any other argument\n"
               "after version is Hiera 3's command line: `hiera version VALUE` looks up the key\n"
               "\"version\" with the default VALUE.\n",
               hiera_version(), hiera3_version());
        return 0;
    }
    /* everything else is the Hiera 3 command line (`hiera -- lookup` looks up a key "lookup") */
    return result_cache_run(argc, argv, 0, hiera3_main);
}
