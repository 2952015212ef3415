/* result_cache.h - a one-shot command's whole answer (what it printed, its exit status) kept in
 * the disk cache folder and given again by a later identical call, while every file it looked
 * at is as it was (see result_cache.c). */
#ifndef HIERA_RESULT_CACHE_H
#define HIERA_RESULT_CACHE_H

#include <stdbool.h>

/* The command run (lookup_main or hiera3_main with these arguments). */
typedef int (*result_cache_cmd)(int argc, char **argv);

/* Whether result_cache_run would use the cache (HIERA_CACHE_DIR and HIERA_RESULT_CACHE not "off",
 * standard output not a terminal). main.c begins the file system journal (fsj_begin) before it
 * searches PATH for Puppet when the command is one result_cache_run answers and this says so:
 * result_cache_run then keeps that journal (the search is recorded once, and checked once when a
 * kept answer is given again); it stops a journal it does not use. */
bool result_cache_wanted(void);

/* Runs cmd(argc - skip, argv + skip) for the call argv[0, argc) of the hiera command: answered
 * from the result cache when a kept answer of the same call still holds; otherwise run with its
 * file system observations recorded and its output captured, then printed, and kept when it
 * may be. Returns the exit status. Not when the cache is off (HIERA_CACHE_DIR=off,
 * HIERA_RESULT_CACHE=off) or standard output is a terminal: then simply cmd(...). */
int result_cache_run(int argc, char **argv, int skip, result_cache_cmd cmd);

#endif
