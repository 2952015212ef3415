/* fileio.h - reading a whole file into a buffer (with a bound, saying which system call failed),
 * Ruby's words for File.read's failures, and comparing two files' bytes.
 *
 * Every reader of the project (data files, facts, key files, HOCON includes, manifests, the
 * server's certificates...) goes through file_read; what each says when it fails stays its own. */
#ifndef HIERA_FILEIO_H
#define HIERA_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "base/util.h"

/* Which step of reading a file failed. */
typedef enum {
    FILE_READ_OK = 0,
    FILE_READ_OPEN,        /* open(2): err is its errno */
    FILE_READ_READ,        /* read(2) (a directory: EISDIR): err is its errno */
    FILE_READ_TOO_BIG,     /* more than the bound: err is EFBIG */
    FILE_READ_NOT_REGULAR, /* regular_only and not a regular file: err is EISDIR or EINVAL */
} file_read_step;

typedef struct {
    file_read_step failed;
    int err; /* an errno value, 0 when nothing failed */
} file_read_error;

typedef struct {
    size_t max;        /* a file of more bytes fails with FILE_READ_TOO_BIG; 0: no bound */
    bool regular_only; /* opened without blocking, and refused unless a regular file (a FIFO would
                        * block, a device never end); a size over max is refused before reading */
    bool secret;       /* the bytes are key material: buffers the text is moved out of are wiped */
    struct stat *st;   /* when given: fstat(2) of the opened file (zeroed when fstat fails) */
} file_read_opts;

/* Appends the whole file at path to out (NUL-terminated; out->s is set even for an empty file).
 * o may be NULL (no bound, any kind of file). On failure returns false with *fe saying what
 * failed (fe may be NULL); out then holds what was read before the failure (the caller frees it). */
bool file_read(const char *path, sbuf *out, const file_read_opts *o, file_read_error *fe);

/* Ruby's File.read message for a failure: "<strerror> @ rb_sysopen - <path>" when the file could
 * not be opened, "<strerror> @ io_fread - <path>" otherwise. malloc'ed. */
char *file_read_ruby_message(const char *path, const file_read_error *fe);
/* The same message set on e with the given kind, located at path (line 0). */
void herr_file_read(herr *e, herr_kind kind, const char *path, const file_read_error *fe);

/* Fills buf[0, size) from fd as far as the file goes (read(2) may return less than asked, and is
 * asked again after EINTR): the bytes read (fewer than size at the end of the file), or -1 on an
 * error. */
ssize_t fd_read_full(int fd, void *buf, size_t size);
/* Writes buf[0, size) whole to fd (write(2) may take less than given, and is asked again after
 * EINTR); false when a write fails (errno from it) or takes nothing. */
bool fd_write_full(int fd, const void *buf, size_t size);

/* Whether two files hold the same bytes (true for the same path; false when either cannot be
 * read to its end). */
bool file_same_bytes(const char *a, const char *b);

/* Removes the folder dir and everything under it (links are removed, never followed); what cannot
 * be removed is left. */
void path_remove_tree(const char *dir);

/* stat(2) of path (links followed) succeeds / finds a folder / finds a regular file. */
bool path_exists(const char *path);
bool path_is_dir(const char *path);
bool path_is_file(const char *path);

#endif
