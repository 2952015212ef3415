/* fsjournal.h - what one computation observed of the file system, so that its result can be
 * kept between runs and used again only while every observation still holds.
 *
 * A one-shot `hiera lookup` depends on nothing but its arguments, its environment and the files
 * it looks at: which exist, what stat() says of them, what links point to. The process-wide
 * journal, when started (fsj_begin), records each such observation once: the fs_* calls below
 * are the system calls they name, and record what they saw. fsj_check answers later, by making
 * the same calls again, whether the file system still looks the same to the computation.
 *
 * A computation that used anything else (the clock, the host's name, a command it ran, the
 * network, standard input, a decrypted secret that must not be kept on disk) marks the journal
 * tainted (fsj_taint): its result is then never kept.
 *
 * Every reader of files in the library and in the one-shot commands goes through these calls
 * (fileio's file_read records the file it opened). While the journal is stopped each is the bare
 * system call and one load of a flag. Thread-safety: the calls may be made from any thread; the
 * journal itself is begun, serialised and ended by one thread while no other uses it. */
#ifndef HIERA_FSJOURNAL_H
#define HIERA_FSJOURNAL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"

/* stat(2), lstat(2), access(2), readlink(2) (NUL-terminated into buf; -1 when it does not fit),
 * realpath(3) (malloc'ed, or NULL with errno set) and opendir(3) (the folder's stat recorded:
 * its times change when an entry is added, removed or renamed), recording what they saw. While
 * the journal is on, fs_stat and fs_lstat of a path asked already answer what the first call
 * said without making it again: the run computes from what its record holds. */
int fs_stat(const char *path, struct stat *st);
int fs_lstat(const char *path, struct stat *st);
int fs_access(const char *path, int mode);
ssize_t fs_readlink(const char *path, char *buf, size_t size);
char *fs_realpath(const char *path);
DIR *fs_opendir(const char *path);

/* getenv(3), recording the value (or its absence): the environment is checked like the files. */
const char *fs_getenv(const char *name);
/* Records the whole environment (a reader that scans it, as HOCON's ${?NAME} lists do). */
void fsj_note_environ(void);

/* Records that the file at path was opened for reading and fstat(2) said *st of it (st NULL:
 * the open failed with err). A file that is not a regular file (a FIFO, a device, standard
 * input) taints the journal. */
void fsj_note_open(const char *path, const struct stat *st, int err);
/* Marks the journal: what is computed now depends on something it cannot check (why: a short
 * phrase, static, for the trace). */
void fsj_taint(const char *why);

/* Starts recording (forgetting any earlier record). */
void fsj_begin(void);
/* Whether recording is on. */
bool fsj_active(void);
/* A number that changes whenever recording begins or ends: a result that a process keeps of
 * calls it made is used again without making them only within the same number (made under this
 * journal, the calls are in its record; made before it began, they are not). */
unsigned fsj_session(void);
/* Stops recording. NULL when nothing taints the record, else the first reason given. */
const char *fsj_end(void);
/* The record, serialised (appended to out); false when it cannot be kept: an observed file or
 * folder changed less than a second before now (a change in the same clock tick would leave its
 * times as they are), with *why saying so. */
bool fsj_serialise(sbuf *out, const char **why);
/* Whether every observation of the record r is at (fsj_serialise's bytes) still holds (each
 * call made again; while the journal is on, one that this run made already, moments before, is
 * compared with what it saw instead); r is left after the record. False on the first that does
 * not, or when the record is malformed. */
bool fsj_check(byte_reader *r);

/* A sub-record: what one part of a computation observes, kept apart so that its result can be
 * kept on its own (the settings check's verdict) and used again while it holds. fsj_sub_begin
 * starts it (forgetting an earlier one); every fs_* call then records there too, whether or not
 * the journal is on, and even when the journal has the same observation already. fsj_sub_end
 * stops it and appends it to out in fsj_serialise's form: false (with *why) when it was tainted
 * or cannot be kept (a file changed a moment ago). One at a time in a process. */
void fsj_sub_begin(void);
bool fsj_sub_end(sbuf *out, const char **why);
/* Whether every observation of a sub-record (at r; r left after it) still holds: each call is
 * made again through the fs_* calls, so that the journal, when on, records what the part that
 * is not computed again depends on. */
bool fsj_sub_check(byte_reader *r);

#endif
