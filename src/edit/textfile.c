/* textfile.c - the files an edit reads and writes (include/hiera.h: hiera_text_digest,
 * hiera_text_diff, hiera_file_read_text, hiera_file_replace).
 *
 * A data file is replaced atomically: a temporary file in the same folder is written, fsync'ed,
 * given the old file's mode and owner, and renamed over the old one; the folder is fsync'ed so
 * the rename survives a crash. The version an edit started from is named by the SHA-256 of the
 * file's bytes (OpenSSL); the check that the file is still that version and the rename happen
 * under a lock on the folder (flock), which hiera set and hiera serve both take, so that two
 * edits from the same version never both land. */
#include "hiera.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/fileio.h"
#include "base/pathname.h"
#include "base/util.h"

#define MAX_DATA_FILE (256u * 1024 * 1024)

/* ------------------------------------------------------------------ digests */

char *hiera_text_digest(const char *text, size_t len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_Digest(text ? text : "", text ? len : 0, md, &n, EVP_sha256(), NULL))
        n = 0;
    char *out = xmalloc(7 + 2 * (size_t)n + 1);
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < n; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
    out[7 + 2 * n] = 0;
    return out;
}

/* ------------------------------------------------------------------ unified diffs */

typedef struct {
    const char *s;
    size_t len;     /* with its line break */
} line_t;

static line_t *split_lines(const char *t, size_t n, size_t *count)
{
    size_t cap = 16, k = 0;
    line_t *v = xmalloc(cap * sizeof *v);
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(t + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - t) + 1 : n;
        if (k == cap) {
            cap *= 2;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[k++] = (line_t){t + i, e - i};
        i = e;
    }
    *count = k;
    return v;
}

static bool same_line(const line_t *a, const line_t *b) { return a->len == b->len && !memcmp(a->s, b->s, a->len); }

static void put_line(sbuf *b, char mark, const line_t *l)
{
    sb_addc(b, mark);
    sb_addn(b, l->s, l->len);
    if (!l->len || l->s[l->len - 1] != '\n')
        sb_adds(b, "\n\\ No newline at end of file\n");
}

/* "-a,b": the first line of a range (the line before an empty one) and its count */
static void put_range(sbuf *b, char sign, size_t first, size_t count)
{
    if (count == 1)
        sb_addf(b, "%c%zu", sign, first + 1);
    else
        sb_addf(b, "%c%zu,%zu", sign, count ? first + 1 : first, count);
}

char *hiera_text_diff(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
                      const char *old_label, const char *new_label)
{
    size_t no, nn;
    line_t *o = split_lines(old_text ? old_text : "", old_text ? old_len : 0, &no);
    line_t *w = split_lines(new_text ? new_text : "", new_text ? new_len : 0, &nn);
    /* the lines both start and end with: an edit changes one range of lines */
    size_t pre = 0, suf = 0;
    while (pre < no && pre < nn && same_line(&o[pre], &w[pre]))
        pre++;
    while (suf < no - pre && suf < nn - pre && same_line(&o[no - 1 - suf], &w[nn - 1 - suf]))
        suf++;
    sbuf b = {0};
    if (pre == no && pre == nn) {
        free(o);
        free(w);
        return xstrdup("");
    }
    const size_t ctx = 3;
    size_t from = pre > ctx ? pre - ctx : 0;
    size_t o_to = no - suf + (suf > ctx ? ctx : suf), w_to = nn - suf + (suf > ctx ? ctx : suf);
    sb_addf(&b, "--- %s\n+++ %s\n@@ ", old_label ? old_label : "a", new_label ? new_label : "b");
    put_range(&b, '-', from, o_to - from);
    sb_addc(&b, ' ');
    put_range(&b, '+', from, w_to - from);
    sb_adds(&b, " @@\n");
    for (size_t i = from; i < pre; i++)
        put_line(&b, ' ', &o[i]);
    for (size_t i = pre; i < no - suf; i++)
        put_line(&b, '-', &o[i]);
    for (size_t i = pre; i < nn - suf; i++)
        put_line(&b, '+', &w[i]);
    for (size_t i = no - suf; i < o_to; i++)
        put_line(&b, ' ', &o[i]);
    free(o);
    free(w);
    return sb_take(&b);
}

/* ------------------------------------------------------------------ reading */

static hiera_status read_text(const char *path, char **text, size_t *len, struct stat *st, hiera_error *err)
{
    sbuf b = {0};
    file_read_error fe;
    *text = NULL;
    *len = 0;
    file_read_opts o = {.max = MAX_DATA_FILE, .regular_only = true, .st = st};
    if (!file_read(path, &b, &o, &fe)) {
        sb_free(&b);
        if (fe.failed == FILE_READ_OPEN && fe.err == ENOENT) {
            *text = xstrdup("");
            return HIERA_NOT_FOUND;
        }
        herr e = {0};
        if (fe.failed == FILE_READ_TOO_BIG)
            herr_set(&e, HERR_ERROR, "%s is larger than 256 MB", path);
        else if (fe.failed == FILE_READ_NOT_REGULAR)
            herr_set(&e, HERR_ERROR, "%s is not a regular file", path);
        else
            herr_set(&e, HERR_ERROR, "cannot read %s: %s", path, ERRNO_TEXT(fe.err));
        herr_at(&e, path, 0, 0);
        herr_to_public(err, &e);
        return HIERA_ERROR;
    }
    *len = b.len;
    *text = sb_take(&b);
    return HIERA_OK;
}

hiera_status hiera_file_read_text(const char *path, char **text, size_t *len, hiera_error *err)
{
    return read_text(path, text, len, NULL, err);
}

/* ------------------------------------------------------------------ writing */

static hiera_status write_failed(hiera_error *err, const char *path, const char *what, int e)
{
    herr h = {0};
    herr_set(&h, HERR_ERROR, "cannot write %s: %s: %s (the file is left as it was)", path, what, ERRNO_TEXT(e));
    herr_at(&h, path, 0, 0);
    herr_to_public(err, &h);
    return HIERA_ERROR;
}

/* mkdir -p of dir (each folder made with 0777 less the umask) */
static bool make_dirs(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) || (errno = ENOTDIR, false);
    char *parent = pn_dirname(dir);
    bool ok = strcmp(parent, dir) == 0 || make_dirs(parent);
    free(parent);
    return ok && (mkdir(dir, 0777) == 0 || errno == EEXIST);
}

hiera_status hiera_file_replace(const char *path, const char *text, size_t len, const char *expected_digest,
                                 hiera_error *err)
{
    /* a link is followed: its target is replaced (the link stays) */
    char *real = realpath(path, NULL);
    const char *target = real ? real : path;
    char *dir = pn_dirname(target);
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    hiera_status st = HIERA_ERROR;
    int dfd = -1, fd = -1;
    char *tmp = NULL;
    if (!make_dirs(dir)) {
        st = write_failed(err, path, "cannot make its folder", errno);
        goto out;
    }
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        st = write_failed(err, path, "cannot open its folder", errno);
        goto out;
    }
    while (flock(dfd, LOCK_EX) != 0)
        if (errno != EINTR) {
            st = write_failed(err, path, "cannot lock its folder", errno);
            goto out;
        }
    /* the version the edit started from */
    struct stat old;
    memset(&old, 0, sizeof old);
    char *cur = NULL;
    size_t cur_len = 0;
    hiera_error rerr = {0};
    hiera_status rs = read_text(target, &cur, &cur_len, &old, &rerr);
    if (rs == HIERA_ERROR) {
        free(cur);
        hiera_error_clear(err ? err : &rerr);
        if (err)
            *err = rerr;
        else
            hiera_error_clear(&rerr);
        goto out;
    }
    if (expected_digest) {
        char *d = rs == HIERA_OK ? hiera_text_digest(cur, cur_len) : NULL;
        bool same = *expected_digest ? d && !strcmp(d, expected_digest) : rs == HIERA_NOT_FOUND;
        if (!same) {
            herr h = {0};
            herr_set(&h, HERR_ERROR, "%s changed since the edit started (it is now %s): nothing written", path,
                     d ? d : "gone");
            herr_at(&h, path, 0, 0);
            herr_to_public(err, &h);
            if (err)
                err->kind = HIERA_ERR_STALE;
            free(d);
            free(cur);
            goto out;
        }
        free(d);
    }
    free(cur);
    /* the temporary file, beside the old one (0666 less the umask, as a new file gets) */
    unsigned char rnd[8];
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)tries;
            memcpy(rnd, &x, sizeof rnd);
        }
        free(tmp);
        tmp = xasprintf(".%s.hiera-%02x%02x%02x%02x%02x%02x", base, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) {
            st = write_failed(err, path, "cannot make a temporary file beside it", errno);
            goto out;
        }
    }
    if (fd < 0) {
        st = write_failed(err, path, "cannot make a temporary file beside it", EEXIST);
        goto out;
    }
    if ((len && !fd_write_full(fd, text, len)) || fsync(fd) != 0) {
        st = write_failed(err, path, "writing", errno);
        goto out_unlink;
    }
    if (old.st_ino) {
        /* the old file's mode and owner (a file someone else owns stays theirs, or nothing is written) */
        struct stat now;
        if (fchmod(fd, old.st_mode & 07777) != 0 || fstat(fd, &now) != 0) {
            st = write_failed(err, path, "keeping its mode", errno);
            goto out_unlink;
        }
        if ((now.st_uid != old.st_uid || now.st_gid != old.st_gid) && fchown(fd, old.st_uid, old.st_gid) != 0) {
            st = write_failed(err, path, "keeping its owner and group (write it as its owner, or as root)", errno);
            goto out_unlink;
        }
    }
    if (close(fd) != 0) {
        fd = -1;
        st = write_failed(err, path, "writing", errno);
        goto out_unlink;
    }
    fd = -1;
    if (renameat(dfd, tmp, dfd, base) != 0) {
        st = write_failed(err, path, "renaming the new text into place", errno);
        goto out_unlink;
    }
    fsync(dfd);
    st = HIERA_OK;
    goto out;
out_unlink:
    unlinkat(dfd, tmp, 0);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd); /* (the lock goes with it) */
    free(tmp);
    free(dir);
    free(real);
    return st;
}
