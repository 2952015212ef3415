/* fileio.c - see fileio.h */
#include "base/fileio.h"

#include "base/fsjournal.h"

#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* out's room made at least want bytes past len (and the NUL); a secret's old buffer is wiped
 * before it is freed instead of being left to realloc. */
static void reserve(sbuf *out, size_t want, bool secret)
{
    if (out->cap && out->cap - out->len - 1 >= want)
        return;
    size_t cap = out->cap ? out->cap : 64;
    while (cap - out->len - 1 < want)
        cap *= 2;
    if (!secret || !out->s) {
        out->s = xrealloc(out->s, cap);
    } else {
        char *s = xmalloc(cap);
        memcpy(s, out->s, out->len + 1);
        explicit_bzero(out->s, out->cap);
        free(out->s);
        out->s = s;
    }
    out->cap = cap;
}

static bool fail(file_read_error *fe, file_read_step step, int err)
{
    fe->failed = step;
    fe->err = err;
    return false;
}

bool file_read(const char *path, sbuf *out, const file_read_opts *o, file_read_error *fe)
{
    static const file_read_opts plain = {0};
    file_read_error ignored;
    if (!o)
        o = &plain;
    if (!fe)
        fe = &ignored;
    *fe = (file_read_error){FILE_READ_OK, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | (o->regular_only ? O_NONBLOCK : 0));
    if (fd < 0) {
        int e = errno;
        fsj_note_open(path, NULL, e);
        return fail(fe, FILE_READ_OPEN, e);
    }
    struct stat st;
    bool have_st = fstat(fd, &st) == 0;
    fsj_note_open(path, have_st ? &st : NULL, EIO);
    if (o->st) {
        if (have_st)
            *o->st = st;
        else
            memset(o->st, 0, sizeof *o->st);
    }
    if (o->regular_only && (!have_st || !S_ISREG(st.st_mode) || (o->max && st.st_size > (off_t)o->max))) {
        close(fd);
        if (have_st && S_ISREG(st.st_mode))
            return fail(fe, FILE_READ_TOO_BIG, EFBIG);
        return fail(fe, FILE_READ_NOT_REGULAR, have_st && S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
    }
    /* a regular file's size read in one go (the read at its end finds the room for EOF) */
    size_t first = 65536;
    if (have_st && S_ISREG(st.st_mode) && st.st_size > 0)
        first = o->max && st.st_size > (off_t)o->max ? o->max + 1 : (size_t)st.st_size + 1;
    reserve(out, first, o->secret);
    size_t got = 0;
    bool ok = true;
    for (;;) {
        if (out->cap - out->len - 1 == 0)
            reserve(out, out->cap, o->secret);
        size_t room = out->cap - out->len - 1;
        if (o->max && room > o->max - got + 1)
            room = o->max - got + 1;
        ssize_t r = read(fd, out->s + out->len, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            ok = fail(fe, FILE_READ_READ, errno);
            break;
        }
        if (r == 0)
            break;
        out->len += (size_t)r;
        got += (size_t)r;
        if (o->max && got > o->max) {
            ok = fail(fe, FILE_READ_TOO_BIG, EFBIG);
            break;
        }
        /* a regular file read short once its size is in is at its end: no read for EOF (a
         * system call less per file; /proc's files, whose size says 0, are read to the end) */
        if (have_st && S_ISREG(st.st_mode) && st.st_size > 0 && got >= (size_t)st.st_size && (size_t)r < room)
            break;
    }
    out->s[out->len] = 0;
    close(fd);
    return ok;
}

char *file_read_ruby_message(const char *path, const file_read_error *fe)
{
    return xasprintf("%s @ %s - %s", ERRNO_TEXT(fe->err), fe->failed == FILE_READ_OPEN ? "rb_sysopen" : "io_fread",
                     path);
}

void herr_file_read(herr *e, herr_kind kind, const char *path, const file_read_error *fe)
{
    char *m = file_read_ruby_message(path, fe);
    herr_set_text(e, kind, m);
    free(m);
    herr_at(e, path, 0, 0);
}

ssize_t fd_read_full(int fd, void *buf, size_t size)
{
    size_t n = 0;
    while (n < size) {
        ssize_t r = read(fd, (char *)buf + n, size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

bool fd_write_full(int fd, const void *buf, size_t size)
{
    const char *p = buf;
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        size -= (size_t)w;
    }
    return true;
}

bool file_same_bytes(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return true;
    int fa = open(a, O_RDONLY | O_CLOEXEC), fb = fa < 0 ? -1 : open(b, O_RDONLY | O_CLOEXEC);
    bool same = fa >= 0 && fb >= 0;
    char ba[1 << 14], bb[1 << 14];
    while (same) {
        ssize_t na = fd_read_full(fa, ba, sizeof ba), nb = na < 0 ? -1 : fd_read_full(fb, bb, sizeof bb);
        if (na < 0 || nb < 0 || na != nb || memcmp(ba, bb, (size_t)na) != 0)
            same = false;
        else if ((size_t)na < sizeof ba)
            break;
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return same;
}

bool path_exists(const char *path)
{
    struct stat st;
    return fs_stat(path, &st) == 0;
}

bool path_is_dir(const char *path)
{
    struct stat st;
    return fs_stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool path_is_file(const char *path)
{
    struct stat st;
    return fs_stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void path_remove_tree(const char *dir)
{
    if (dir)
        nftw(dir, remove_entry, 32, FTW_DEPTH | FTW_PHYS);
}
