/* result_cache.c - a one-shot command's answer kept between runs.
 *
 * A script that calls `hiera lookup` or `hiera KEY` once per key (Ansible's hiera lookup plugin
 * does, run after run) asks the same questions of files that rarely change. Even with every
 * data file's parse in the disk cache, an answer costs reading those entries, the settings,
 * the hierarchy, the merge: about twice what starting a bare process costs. The answer itself
 * is a function of the call (arguments, working folder, user, this hiera binary) and of the
 * environment variables it read and the files it looked at, which fsjournal records (only the
 * variables read: hyperfine, for one, sets a variable of random length on every run): so the bytes the command
 * wrote to standard output and error, in the order and pieces it wrote them, and its exit
 * status, are kept in an entry of the disk cache folder named by a hash of the call. A later
 * identical call reads the entry, makes every recorded file system call again (stat of each file,
 * folder listings by their folder's times, links, the search of PATH), and when each sees what
 * it saw, writes the same bytes and exits with the same status without looking at anything
 * else.
 *
 * Not kept: a run that used what cannot be checked this way (the clock in a message, the host's
 * name, facter or another command, PuppetDB, standard input, a decrypted eyaml value, which is
 * never written to disk), a run whose files changed less than a second before (a change in the
 * same clock tick would not show in their times), a run that could not write its output. Not
 * used at all when standard output is a terminal (a person is reading: the time saved is
 * nothing), when the disk cache is off (HIERA_CACHE_DIR=off) or HIERA_RESULT_CACHE=off.
 * HIERA_RESULT_CACHE_TRACE (set to anything) writes one line to standard error saying whether
 * the call was answered from the cache, or why its answer was not kept.
 *
 * Entry: DISKCACHE_RESULT_MAGIC, the call (u32 length, bytes; compared whole, so a collision of
 * the entry names is a miss), the journal (fsj_serialise), the exit status (i32), the pieces written (u32 count; per piece u8
 * file descriptor, u32 length, bytes). Native byte order: the folder is
 * one user's on one machine. */
#include "cli/result_cache.h"

#include "cli/common.h"

#include "base/fileio.h"
#include "base/fsjournal.h"
#include "base/util.h"
#include "formats/diskcache.h"
#include "hiera.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An entry larger than this is not read (nor written). */
#define MAX_ENTRY ((size_t)64 << 20)

/* The call: what the answer may depend on besides the files it looks at. False when it cannot
 * be told (no working folder, no binary to stat). */
static bool call_key(int argc, char **argv, sbuf *key)
{
    const sbuf *id = cli_run_identity(); /* (the program, the working folder, the user) */
    if (!id)
        return false;
    sb_addn(key, id->s, id->len);
    sb_add_u32(key, (uint32_t)argc);
    for (int i = 0; i < argc; i++)
        sb_addn(key, argv[i], strlen(argv[i]) + 1);
    /* the Puppet answered as, and why (--explain says it): main.c took --puppet-version out of argv */
    char *why = NULL;
    sb_add_u32(key, (uint32_t)cli_chosen_puppet_version(&why));
    sb_adds(key, why ? why : "");
    sb_addc(key, 0);
    free(why);
    return true;
}

static void entry_name(const sbuf *key, char name[20])
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < key->len; i++)
        h = (h ^ (unsigned char)key->s[i]) * 1099511628211ULL;
    hex64(h, name);
    memcpy(name + 16, ".hr", 4);
}

static void trace(const char *what, const char *why)
{
    if (!getenv("HIERA_RESULT_CACHE_TRACE"))
        return;
    sbuf b = {0};
    sb_addf(&b, "hiera: result cache: %s%s%s\n", what, why ? ": " : "", why ? why : "");
    if (write(STDERR_FILENO, b.s, b.len) < 0) {
        /* a trace that cannot be written is not one */
    }
    sb_free(&b);
}

/* The kept answer of the call named `name` in folder, given again: true with *status when it
 * was (every observation held and its pieces were written). */
static bool replay(const char *folder, const char *name, const sbuf *key, int *status)
{
    struct stat st;
    if (lstat(folder, &st) != 0 || !diskcache_folder_safe(&st))
        return false;
    char *path = xjoin(folder, "/", name, NULL);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    unsigned char *data = NULL;
    ssize_t got = -1;
    st.st_size = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 8 &&
        (size_t)st.st_size <= MAX_ENTRY) {
        data = xmalloc((size_t)st.st_size);
        got = fd_read_full(fd, data, (size_t)st.st_size);
    }
    close(fd);
    byte_reader r = {data, data + (got > 0 ? got : 0)};
    const unsigned char *magic, *call, *pieces;
    uint32_t klen, rc, count;
    bool ok = got == st.st_size && br_bytes(&r, 8, &magic) && memcmp(magic, DISKCACHE_RESULT_MAGIC, 8) == 0 &&
              br_u32(&r, &klen) && klen == key->len && br_bytes(&r, klen, &call) && memcmp(call, key->s, klen) == 0 &&
              fsj_check(&r) && br_u32(&r, &rc) && br_u32(&r, &count);
    /* the pieces are all there before any is written */
    pieces = r.p;
    for (uint32_t i = 0; ok && i < count; i++) {
        const unsigned char *to, *bytes;
        uint32_t len;
        ok = br_bytes(&r, 1, &to) && (*to == 1 || *to == 2) && br_u32(&r, &len) && br_bytes(&r, len, &bytes);
    }
    ok = ok && r.p == r.end;
    if (ok) {
        trace("hit", NULL);
        *status = (int)rc;
        r.p = pieces;
        for (uint32_t i = 0; i < count; i++) {
            const unsigned char *to, *bytes;
            uint32_t len;
            br_bytes(&r, 1, &to);
            br_u32(&r, &len);
            br_bytes(&r, len, &bytes);
            if (!fd_write_full(*to, (const char *)bytes, len) && *status == 0)
                *status = 1;
        }
    }
    free(data);
    return ok;
}

/* ------------------------------------------------------------------ capture */

/* The run's standard output and error are streams whose writes go straight to file descriptors
 * 1 and 2, as stdio would make them (same buffering), and are also noted as pieces. */
typedef struct {
    sbuf log;      /* the pieces, as the entry keeps them */
    uint32_t count;
    bool failed;   /* a write failed: the answer is not kept */
} capture;

typedef struct {
    int fd;
    capture *c;
} tee_stream;

static ssize_t tee_write(void *cookie, const char *buf, size_t size)
{
    tee_stream *t = cookie;
    if (!fd_write_full(t->fd, buf, size)) {
        t->c->failed = true;
        return -1;
    }
    if (size) {
        sb_addc(&t->c->log, (char)t->fd);
        sb_add_u32(&t->c->log, (uint32_t)size);
        sb_addn(&t->c->log, buf, size);
        t->c->count++;
    }
    return (ssize_t)size;
}

static FILE *tee_open(tee_stream *t)
{
    cookie_io_functions_t io = {.write = tee_write};
    FILE *f = fopencookie(t, "w", io);
    if (!f)
        return NULL;
    struct stat st;
    if (t->fd == STDERR_FILENO)
        setvbuf(f, NULL, _IONBF, 0);
    else if (fstat(t->fd, &st) == 0 && st.st_blksize > 0)
        setvbuf(f, NULL, _IOFBF, (size_t)st.st_blksize);
    return f;
}

bool result_cache_wanted(void)
{
    const char *dir = getenv("HIERA_CACHE_DIR"), *onoff = getenv("HIERA_RESULT_CACHE");
    return !(dir && !strcmp(dir, "off")) && !(onoff && !strcmp(onoff, "off")) && !isatty(STDOUT_FILENO);
}

/* The command run without the cache (the journal main.c may have begun stopped: nothing keeps it). */
static int uncached(int argc, char **argv, int skip, result_cache_cmd cmd)
{
    if (fsj_active())
        (void)fsj_end();
    return cmd(argc - skip, argv + skip);
}

int result_cache_run(int argc, char **argv, int skip, result_cache_cmd cmd)
{
    if (!result_cache_wanted())
        return uncached(argc, argv, skip, cmd);
    /* main.c began the journal before it searched PATH for Puppet (result_cache_wanted): what it
     * observed is recorded, and a kept answer's record is checked against it without making
     * those calls again */
    bool begun = fsj_active();
    char *folder = diskcache_folder(getenv("HIERA_CACHE_DIR"));
    sbuf key = {0};
    if (!folder || !call_key(argc, argv, &key)) {
        free(folder);
        sb_free(&key);
        return uncached(argc, argv, skip, cmd);
    }
    char name[20];
    entry_name(&key, name);
    int status;
    if (replay(folder, name, &key, &status)) {
        free(folder);
        sb_free(&key);
        return status;
    }

    capture cap = {{0}, 0, false};
    tee_stream to_out = {STDOUT_FILENO, &cap}, to_err = {STDERR_FILENO, &cap};
    FILE *real_out = stdout, *real_err = stderr;
    fflush(real_out);
    FILE *out = tee_open(&to_out), *err = out ? tee_open(&to_err) : NULL;
    if (!err) {
        if (out)
            fclose(out);
        free(folder);
        sb_free(&key);
        return uncached(argc, argv, skip, cmd);
    }
    stdout = out;
    stderr = err;
    if (!begun) {
        fsj_begin();
        /* which Puppet is installed was found before the journal began: found again under it,
         * so that the files and variables that decided (PATH's puppet, its version.rb) are
         * checked when the answer is given again */
        char *w = NULL;
        (void)hiera_puppet_version_find(&w);
        free(w);
    }
    status = cmd(argc - skip, argv + skip);
    const char *why = fsj_end();
    fflush(out);
    stdout = real_out;
    stderr = real_err;
    fclose(out);
    fclose(err);

    sbuf entry = {0};
    if (!why && cap.failed)
        why = "its output could not be written";
    if (!why) {
        sb_addn(&entry, DISKCACHE_RESULT_MAGIC, 8);
        sb_add_u32(&entry, (uint32_t)key.len);
        sb_addn(&entry, key.s, key.len);
        if (!fsj_serialise(&entry, &why))
            sb_free(&entry);
    }
    if (!why) {
        sb_add_u32(&entry, (uint32_t)status);
        sb_add_u32(&entry, cap.count);
        sb_addn(&entry, cap.log.s ? cap.log.s : "", cap.log.len);
        if (entry.len > MAX_ENTRY) {
            why = "its answer is too large";
        } else {
            diskcache *dc = diskcache_open(folder);
            if (dc) {
                diskcache_put_named(dc, name, entry.s, entry.len);
                diskcache_close(dc);
            } else {
                why = "the cache folder cannot be used";
            }
        }
    }
    trace(why ? "not kept" : "kept", why);
    sb_free(&entry);
    sb_free(&cap.log);
    sb_free(&key);
    free(folder);
    return status;
}
