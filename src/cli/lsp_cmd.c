/* lsp_cmd.c - `hiera lsp`: the command line of the language server (src/lsp/ serves). */
#include "cli/lsp_cmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hiera.h"
#include "lsp/lsp.h"

static const char usage[] =
    "usage: hiera lsp [--help] [--version] [--stdio] [--log <FILE>] [--jobs <N>]\n"
    "\n"
    "A Language Server Protocol (3.17) server for hiera.yaml, Hiera data files (.yaml, .yml,\n"
    ".json, .eyaml) and manifests (.pp), over JSON-RPC on standard input and output. An editor\n"
    "starts it; the workspace folder it opens is the control repository, environment or code\n"
    "directory read. Settings come from initializationOptions and didChangeConfiguration:\n"
    "node (a name or a list), factsDir, puppetdb, environment, codedir, confdir.\n"
    "\n"
    "  --stdio        speak on standard input and output (the only transport; accepted for the\n"
    "                 editors that pass it)\n"
    "  --log FILE     append every message received and sent to FILE\n"
    "  --jobs N       request threads (default 2)\n";

int lsp_main(int argc, char **argv)
{
    lsp_options o = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("%s\n", hiera_version());
            return 0;
        } else if (!strcmp(a, "--stdio")) {
            /* the default */
        } else if ((!strcmp(a, "--log") || !strcmp(a, "--jobs")) && i + 1 < argc) {
            if (!strcmp(a, "--log")) {
                o.log_file = argv[++i];
            } else {
                char *end;
                long n = strtol(argv[++i], &end, 10);
                if (*end || n < 1 || n > 64) {
                    fprintf(stderr, "Error: --jobs expects a number from 1 to 64, not '%s'\n", argv[i]);
                    return 2;
                }
                o.jobs = (int)n;
            }
        } else if (!strncmp(a, "--log=", 6)) {
            o.log_file = a + 6;
        } else if (!strncmp(a, "--clientProcessId", 17)) {
            if (!strchr(a, '=') && i + 1 < argc)
                i++;
        } else {
            fprintf(stderr, "Error: unknown option '%s'\n%s", a, usage);
            return 2;
        }
    }
    return lsp_run(STDIN_FILENO, STDOUT_FILENO, &o);
}
