/* common.h - what the subcommands of the hiera command share (common.c). */
#ifndef HIERA_CLI_COMMON_H
#define HIERA_CLI_COMMON_H

#include "hiera.h"
#include "base/util.h"

/* The file cache the commands use: kept on disk between runs (HIERA_CACHE_DIR names the folder;
 * "off" keeps it in memory only). Release with hiera_cache_free. */
hiera_cache *cli_cache(void);
/* Releases it at the end of a one-shot command: the parsed files are left for the process exit
 * to reclaim (tearing a large tree down costs more than the lookup), unless HIERA_FREE_AT_EXIT is
 * set or the build runs under a sanitizer. */
void cli_cache_release(hiera_cache *c);
/* Whether a one-shot command frees what it made before it returns (HIERA_FREE_AT_EXIT set, a
 * build with HIERA_FREE_ON_EXIT or under a sanitizer); otherwise the process exit reclaims it. */
bool cli_free_at_exit(void);
/* What identifies this run's program and where and as whom it runs: "hiera VERSION", NUL, the
 * device, inode, size, modification and change times of /proc/self/exe, the working folder, the
 * user, effective user and group ids (found once); NULL when they cannot be read. The result
 * cache's call key and the settings check's kept verdict start with it. */
const sbuf *cli_run_identity(void);
/* The commands' diagnostics callback (hiera_options.diagnostics): "Warning: <message>" on stderr,
 * as Puppet prints its warnings. */
void cli_print_diagnostic(const hiera_diagnostic *d, void *userdata);

/* One problem of a key listing (hiera_keys' "errors"), on one line: "module ntp, level \"Common\":
 * <message> (file: F, line: L)" (the file when the message does not name it already). A new
 * string (free). env names the environment layer. */
char *cli_listing_problem(const hiera_value *e, const char *env);

/* ------------------------------------------------------------------ puppet lookup's command line
 *
 * `hiera lookup` and `hiera batch` read their command line as `puppet lookup` reads it, in
 * Puppet's two passes: first every Puppet setting given with its exact name (--codedir DIR,
 * --codedir=DIR, --no-<boolean>, -E ENV) is taken for the settings (Puppet's global option pass),
 * then Ruby's OptionParser reads everything: the command's options and the settings again, long
 * options abbreviated to any unambiguous prefix ("--expl" is --explain, "--deb" --debug), '_' and
 * '-' alike, one-letter options (-d, -h, -V...), a lone letter completing a long option when only
 * one starts with it ("-m" is ambiguous). A setting that only the second pass understands (an
 * abbreviation, or --hiera-config for --hiera_config) is accepted and NOT applied, as in Puppet;
 * hiera says so on stderr. */

typedef enum {
    CLI_VALUE,    /* takes a value: a const char * at `offset` in the command's arguments */
    CLI_FLAG,     /* takes none: a bool at `offset` */
    CLI_HELP,     /* prints the command's help, exits 0 */
    CLI_VERSION,  /* prints hiera's version, exits 0 */
    CLI_REFUSED,  /* fails with `why` (an option hiera cannot honour) */
} cli_kind;

typedef struct {
    const char *name; /* the long name as the command declares it ("render-as", "node") */
    char short_opt;   /* its one-letter form, or 0 */
    cli_kind kind;
    size_t offset;    /* CLI_VALUE, CLI_FLAG: where in the command's argument struct */
    const char *why;  /* CLI_REFUSED */
} cli_option;

/* Options several commands share: the first n of a table whose offsets are in a struct of their
 * own (each command's arguments hold it) */
typedef struct {
    const cli_option *v;
    size_t n;
} cli_options;

typedef struct {
    hiera_setting *settings; /* the Puppet settings given (first pass), in order */
    size_t nsettings;
    const char **args;       /* the other arguments (keys), in order */
    size_t nargs;
    hiera_puppet_version puppet_version; /* the Puppet answered as (cli_puppet_version) */
    char *puppet_version_why;            /* where that choice comes from (a sentence) */
} cli_parsed;

/* Parses argv (the arguments after the subcommand) into target (the command's argument struct)
 * and out. `usage` is printed for --help. Returns 0, or 1 after printing the error as Puppet words
 * it ("Error: Could not parse application options: invalid option: --x", "Error: Could not
 * initialize global default settings: ..."). The Puppet chosen (cli_chosen_puppet_version: main.c
 * took --puppet-version away) decides whose settings the command line may name. The command's
 * options are its own (own, nown) and the shared ones (NULL: none), whose struct target holds at
 * shared_at: read as if own listed them too. */
int cli_parse(const char *command, int argc, char **argv, const cli_option *own, size_t nown,
              const cli_options *shared, size_t shared_at, void *target, const char *usage, cli_parsed *out);
void cli_parsed_free(cli_parsed *p);

/* The Puppet a command answers as: --puppet-version 7|8 (or --puppet-version=N) when argv has it
 * (argv[i] and its value are then marked in skip, which may be NULL), else HIERA_PUPPET_VERSION,
 * else the installed Puppet (hiera_puppet_version_find). *why (may be NULL) gets a malloc'ed
 * sentence saying where it comes from. Returns HIERA_PUPPET_AUTO after printing the error (a
 * value that is not 7 or 8). opt names the option (e.g. "puppet-version", "old-puppet-version"). */
hiera_puppet_version cli_puppet_version(int argc, char **argv, const char *opt, bool *skip, char **why);
/* main.c's: takes --puppet-version N (or =N) out of argv (argc updated; argv NULL-terminated
 * again) and chooses the Puppet every command but diff answers as: that option, else
 * HIERA_PUPPET_VERSION, else the installed Puppet. When the option is given, HIERA_PUPPET_VERSION
 * is set to it, so that the library's HIERA_PUPPET_AUTO (hiera serve's and hiera check's contexts)
 * and the processes hiera starts follow it. HIERA_PUPPET_AUTO after printing an error. */
hiera_puppet_version cli_choose_puppet_version(int *argc, char **argv);
/* That choice (made now when main.c made none), *why (may be NULL) a malloc'ed sentence. */
hiera_puppet_version cli_chosen_puppet_version(char **why);
/* "Puppet 8.10 and Hiera 3.12" for 8, "Puppet 7.23 and Hiera 3.10" for 7: what hiera answers as. */
const char *cli_puppet_version_text(hiera_puppet_version v);

/* The settings of a parsed command line resolved (puppet.conf read) and its environment loaded
 * (hiera_settings_load, hiera_environment_load), diagnostics printed; NULL after printing the
 * error. */
hiera_settings *cli_settings(const cli_parsed *p);
hiera_environment *cli_environment(const hiera_settings *s);

/* Puppet settings whose effect on `puppet lookup` hiera does not reproduce: when one is given on
 * the command line with a value that matters, prints why and returns 1. */
int cli_refuse_settings(const char *command, const cli_parsed *p);

#endif
