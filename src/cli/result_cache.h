/* result_cache.h - a one-shot command's whole answer (what it printed, its exit status) kept in
 * the disk cache folder and given again by a later identical call, while every file it looked
 * at is as it was (see result_cache.c). */
#ifndef HIERA_RESULT_CACHE_H
#define HIERA_RESULT_CACHE_H

#include <stdbool.h>

/* The command run (lookup_main or hiera3_main with these arguments). */
typedef int (*result_cache_cmd)(int argc, char **argv);

/* Runs cmd(argc - skip, argv + skip) for the call argv[0, argc) of the hiera command: answered
 * from the result cache when a kept answer of the same call still holds; otherwise run with its
 * file system observations recorded and its output captured, then printed, and kept when it
 * may be. Returns the exit status. Not when the cache is off (HIERA_CACHE_DIR=off,
 * HIERA_RESULT_CACHE=off) or standard output is a terminal: then simply cmd(...). */
int result_cache_run(int argc, char **argv, int skip, result_cache_cmd cmd);

#endif
