/* fsjournal.c - see fsjournal.h
 *
 * An observation is (what was asked, of which path, what came back). Asked: 'S' stat, 'L' lstat,
 * 'D' opendir, 'O' open for reading, 'A' access with a mode, 'K' readlink, 'R' realpath, 'V' an
 * environment variable (the path is its name), 'W' the whole environment (path ""). What came
 * back: an errno value (ENOENT for a variable that is not set), or for success of S/L/D/O the
 * identity of what was found (mode, device, inode, size, modification and change times to the
 * nanosecond: what the disk cache trusts as "unchanged"), for K/R the text, for V two 64-bit
 * hashes of the value (never its text: it may be a secret), for W the same of every variable.
 * A D or O is checked again by stat() when it succeeded (a folder's times change with its
 * entries, a file's with its bytes) and by the same call when it failed; an O that found what an
 * earlier S of the same path found is not recorded again.
 *
 * Serialised form (native byte order; the result cache that keeps it names its own version):
 * u32 count, then per observation u8 op, i32 arg, i32 err, u32 length, the path, then the
 * identity (8 x u64) or the text (u32 length, bytes) when the call succeeded. */
#include "base/fsjournal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    char op;
    int arg;
    int err;
    char *path;
    uint64_t id[8]; /* mode, dev, ino, size, mtime s, ns, ctime s, ns */
    char *text;
    struct stat st; /* S and L: what the call said, whole (fs_stat's answer the next time) */
} obs;

static atomic_bool active;
static atomic_uint session;
/* the sub-record (fsj_sub_begin): every observation made while it is on, whether or not the
 * journal is, and recorded there even when the journal has it already */
static atomic_bool sub_active;
static obs *sub_list;
static size_t sub_n, sub_cap;
static const char *sub_tainted;

/* whether anything records: the journal or a sub-record */
static inline bool recording(void)
{
    return atomic_load_explicit(&active, memory_order_relaxed) || atomic_load_explicit(&sub_active, memory_order_relaxed);
}
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static obs *list;
static size_t n, cap;
static size_t *slots; /* open addressing over list indexes + 1; 0 is empty */
static size_t nslots;
static const char *tainted;

static bool has_identity(char op) { return op == 'S' || op == 'L' || op == 'D' || op == 'O'; }
static bool has_text(char op) { return op == 'K' || op == 'R' || op == 'V' || op == 'W'; }

static void identity(uint64_t id[8], const struct stat *st)
{
    id[0] = (uint64_t)st->st_mode;
    id[1] = (uint64_t)st->st_dev;
    id[2] = (uint64_t)st->st_ino;
    id[3] = (uint64_t)st->st_size;
    id[4] = (uint64_t)st->st_mtim.tv_sec;
    id[5] = (uint64_t)st->st_mtim.tv_nsec;
    id[6] = (uint64_t)st->st_ctim.tv_sec;
    id[7] = (uint64_t)st->st_ctim.tv_nsec;
}

/* the path's hash (hash_bytes, eight bytes at a time) with the call mixed in */
static uint64_t path_hash(const char *path) { return hash_bytes(path, strlen(path)); }

static uint64_t call_hash(uint64_t ph, char op, int arg)
{
    return hash_mix(ph ^ ((uint64_t)(unsigned char)op << 32 | (uint32_t)arg));
}

static uint64_t obs_hash(const obs *o) { return call_hash(path_hash(o->path), o->op, o->arg); }

static void rehash(void)
{
    free(slots);
    nslots = nslots ? nslots * 2 : 64;
    slots = xcalloc(nslots, sizeof *slots);
    for (size_t i = 0; i < n; i++) {
        size_t s = (size_t)obs_hash(&list[i]) & (nslots - 1);
        while (slots[s])
            s = (s + 1) & (nslots - 1);
        slots[s] = i + 1;
    }
}

/* Adds an observation to the sub-record (under the lock): the first of (op, arg, path) only. */
static void sub_add(char op, int arg, const char *path, int err, const struct stat *st, const uint64_t *id,
                    const char *text)
{
    for (size_t i = 0; i < sub_n; i++)
        if (sub_list[i].op == op && sub_list[i].arg == arg && !strcmp(sub_list[i].path, path))
            return;
    if (sub_n == sub_cap) {
        sub_cap = sub_cap ? sub_cap * 2 : 16;
        sub_list = xrealloc(sub_list, sub_cap * sizeof *sub_list);
    }
    obs *o = &sub_list[sub_n++];
    memset(o, 0, sizeof *o);
    o->op = op;
    o->arg = arg;
    o->err = err;
    o->path = xstrdup(path);
    if (!err && st)
        identity(o->id, st);
    else if (!err && id)
        memcpy(o->id, id, sizeof o->id);
    if (!err && text)
        o->text = xstrdup(text);
}

/* Records the first observation of (op, arg, path); a later one of the same is the same call
 * made again in the same run (the first is what the result was computed from). */
static void note_h(uint64_t ph, char op, int arg, const char *path, int err, const struct stat *st, const char *text)
{
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&sub_active, memory_order_relaxed))
        sub_add(op, arg, path, err, st, NULL, text);
    if (atomic_load_explicit(&active, memory_order_relaxed)) {
        if ((n + 1) * 2 > nslots)
            rehash();
        size_t s = (size_t)call_hash(ph, op, arg) & (nslots - 1);
        bool seen = false;
        for (; slots[s]; s = (s + 1) & (nslots - 1)) {
            const obs *o = &list[slots[s] - 1];
            if (o->op == op && o->arg == arg && !strcmp(o->path, path)) {
                seen = true;
                break;
            }
        }
        if (!seen && op == 'O' && !err) {
            /* opened after a stat() that saw the same file: the stat checks both */
            size_t t = (size_t)call_hash(ph, 'S', 0) & (nslots - 1);
            uint64_t id[8];
            identity(id, st);
            for (; slots[t]; t = (t + 1) & (nslots - 1)) {
                const obs *o = &list[slots[t] - 1];
                if (o->op == 'S' && !strcmp(o->path, path)) {
                    seen = !o->err && !memcmp(o->id, id, sizeof id);
                    break;
                }
            }
        }
        if (!seen) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                list = xrealloc(list, cap * sizeof *list);
            }
            obs *o = &list[n];
            memset(o, 0, sizeof *o);
            o->op = op;
            o->arg = arg;
            o->err = err;
            o->path = xstrdup(path);
            if (!err && st) {
                identity(o->id, st);
                if (op == 'S' || op == 'L')
                    o->st = *st;
            }
            if (!err && text)
                o->text = xstrdup(text);
            slots[s] = ++n;
        }
    }
    pthread_mutex_unlock(&lock);
}

static void note(char op, int arg, const char *path, int err, const struct stat *st, const char *text)
{
    if (!recording() || !path)
        return;
    note_h(path_hash(path), op, arg, path, err, st, text);
}

void fsj_taint(const char *why)
{
    if (!recording())
        return;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&sub_active, memory_order_relaxed) && !sub_tainted)
        sub_tainted = why;
    if (atomic_load_explicit(&active, memory_order_relaxed) && !tainted)
        tainted = why;
    pthread_mutex_unlock(&lock);
}

void fsj_note_open(const char *path, const struct stat *st, int err)
{
    if (!recording())
        return;
    if (st && !S_ISREG(st->st_mode))
        fsj_taint("a file that is not a regular file was read");
    note('O', 0, path, st ? 0 : (err ? err : EIO), st, NULL);
}

/* What a call that returned rc (0 or -1 with errno) saw, noted; errno kept for the caller. */
static int noted(char op, int arg, const char *path, int rc, const struct stat *st)
{
    if (recording()) {
        int e = errno;
        note(op, arg, path, rc ? e : 0, st, NULL);
        errno = e;
    }
    return rc;
}

/* While the journal is on, a stat() or lstat() of a path this run made already: what it said
 * then, as the call's answer (1: *st filled, 0: failed with errno set), else -1. The record
 * holds the first answer, so the run computes from that one (a second call could see a file
 * that changed since, and the answer kept would not be the one its record checks). */
static int recall(uint64_t ph, char op, const char *path, struct stat *st)
{
    int r = -1;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&active, memory_order_relaxed) && nslots) {
        for (size_t s = (size_t)call_hash(ph, op, 0) & (nslots - 1); slots[s]; s = (s + 1) & (nslots - 1)) {
            const obs *o = &list[slots[s] - 1];
            if (o->op == op && o->arg == 0 && !strcmp(o->path, path)) {
                if (o->err)
                    errno = o->err;
                else
                    *st = o->st;
                r = !o->err;
                if (atomic_load_explicit(&sub_active, memory_order_relaxed))
                    sub_add(op, 0, path, o->err, o->err ? NULL : &o->st, NULL, NULL);
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static int stat_call(char op, const char *path, struct stat *st)
{
    if (!recording() || !path)
        return op == 'S' ? stat(path, st) : lstat(path, st);
    uint64_t ph = path_hash(path);
    int r = atomic_load_explicit(&active, memory_order_relaxed) ? recall(ph, op, path, st) : -1;
    if (r >= 0)
        return r ? 0 : -1;
    int rc = op == 'S' ? stat(path, st) : lstat(path, st);
    int e = errno;
    note_h(ph, op, 0, path, rc ? e : 0, st, NULL);
    errno = e;
    return rc;
}

int fs_stat(const char *path, struct stat *st) { return stat_call('S', path, st); }

int fs_lstat(const char *path, struct stat *st) { return stat_call('L', path, st); }

int fs_access(const char *path, int mode) { return noted('A', mode, path, access(path, mode), NULL); }

ssize_t fs_readlink(const char *path, char *buf, size_t size)
{
    if (size == 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    ssize_t r = readlink(path, buf, size);
    int e = errno;
    if (r >= 0 && (size_t)r >= size) {
        r = -1;
        e = ENAMETOOLONG;
    }
    if (r >= 0)
        buf[r] = 0;
    if (recording())
        note('K', 0, path, r < 0 ? e : 0, NULL, r < 0 ? NULL : buf);
    errno = e;
    return r;
}

char *fs_realpath(const char *path)
{
    char *r = realpath(path, NULL);
    int e = errno;
    if (recording())
        note('R', 0, path, r ? 0 : e, NULL, r);
    errno = e;
    return r;
}

DIR *fs_opendir(const char *path)
{
    DIR *d = opendir(path);
    int e = errno;
    if (recording()) {
        struct stat st;
        bool known = d && fstat(dirfd(d), &st) == 0;
        note('D', 0, path, d ? (known ? 0 : EIO) : e, known ? &st : NULL, NULL);
    }
    errno = e;
    return d;
}

extern char **environ;

/* Two independent 64-bit hashes of the strings given (each with its NUL), as 32 hex digits: a
 * variable's value is recorded as this, never as its text (it may be a secret). */
static void digest_of(char *const *strings, size_t count, char out[33])
{
    uint64_t a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < count && strings[i]; i++)
        for (const unsigned char *p = (const unsigned char *)strings[i];; p++) {
            a = (a ^ *p) * 1099511628211ULL;
            b = (b ^ *p) * 0xff51afd7ed558ccdULL;
            b ^= b >> 29;
            if (!*p)
                break;
        }
    hex64(a, out);
    hex64(b, out + 16);
    out[32] = 0;
}

static void environ_digest(char out[33]) { digest_of(environ, environ ? SIZE_MAX : 0, out); }

static void value_digest(const char *v, char out[33])
{
    char *one[1] = {(char *)v};
    digest_of(one, 1, out);
}

const char *fs_getenv(const char *name)
{
    const char *v = getenv(name);
    if (recording()) {
        char digest[33];
        if (v)
            value_digest(v, digest);
        note('V', 0, name, v ? 0 : ENOENT, NULL, v ? digest : NULL);
    }
    return v;
}

void fsj_note_environ(void)
{
    if (!recording())
        return;
    char digest[33];
    environ_digest(digest);
    note('W', 0, "", 0, NULL, digest);
}

static void forget(void)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].path);
        free(list[i].text);
    }
    free(list);
    free(slots);
    list = NULL;
    slots = NULL;
    n = cap = nslots = 0;
    tainted = NULL;
}

void fsj_begin(void)
{
    pthread_mutex_lock(&lock);
    forget();
    atomic_fetch_add(&session, 1);
    atomic_store(&active, true);
    pthread_mutex_unlock(&lock);
}

bool fsj_active(void) { return atomic_load_explicit(&active, memory_order_relaxed); }

unsigned fsj_session(void) { return atomic_load(&session); }

const char *fsj_end(void)
{
    atomic_store(&active, false);
    atomic_fetch_add(&session, 1);
    return tainted;
}

/* ------------------------------------------------------------------ serialised form */

/* A change made within this many seconds of now could leave a file's times as they were. */
#define RACY_SECONDS 1

static bool racy(const obs *o, time_t now)
{
    return (int64_t)o->id[4] > (int64_t)now - RACY_SECONDS - 1 || (int64_t)o->id[6] > (int64_t)now - RACY_SECONDS - 1;
}

/* The observations l[0, count) serialised (under the lock), or false with *why */
static bool serialise_list(const obs *l, size_t count, sbuf *out, const char **why)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (count > UINT32_MAX)
        return false;
    for (size_t i = 0; i < count; i++)
        if (has_identity(l[i].op) && !l[i].err && racy(&l[i], ts.tv_sec)) {
            *why = "a file it read changed less than a second ago";
            return false;
        }
    sb_add_u32(out, (uint32_t)count);
    for (size_t i = 0; i < count; i++) {
        const obs *o = &l[i];
        sb_addc(out, o->op);
        sb_add_u32(out, (uint32_t)o->arg);
        sb_add_u32(out, (uint32_t)o->err);
        size_t len = strlen(o->path);
        sb_add_u32(out, (uint32_t)len);
        sb_addn(out, o->path, len);
        if (o->err)
            continue;
        if (has_identity(o->op)) {
            for (int k = 0; k < 8; k++)
                sb_add_u64(out, o->id[k]);
        } else if (has_text(o->op)) {
            size_t tl = o->text ? strlen(o->text) : 0;
            sb_add_u32(out, (uint32_t)tl);
            sb_addn(out, o->text ? o->text : "", tl);
        }
    }
    return true;
}

bool fsj_serialise(sbuf *out, const char **why)
{
    pthread_mutex_lock(&lock);
    bool ok = serialise_list(list, n, out, why);
    pthread_mutex_unlock(&lock);
    return ok;
}

static void sub_forget(void)
{
    for (size_t i = 0; i < sub_n; i++) {
        free(sub_list[i].path);
        free(sub_list[i].text);
    }
    free(sub_list);
    sub_list = NULL;
    sub_n = sub_cap = 0;
    sub_tainted = NULL;
}

void fsj_sub_begin(void)
{
    pthread_mutex_lock(&lock);
    sub_forget();
    atomic_store(&sub_active, true);
    pthread_mutex_unlock(&lock);
}

bool fsj_sub_end(sbuf *out, const char **why)
{
    pthread_mutex_lock(&lock);
    atomic_store(&sub_active, false);
    bool ok = !sub_tainted;
    if (!ok)
        *why = sub_tainted;
    else if (out)
        ok = serialise_list(sub_list, sub_n, out, why);
    sub_forget();
    pthread_mutex_unlock(&lock);
    return ok;
}

/* The same call made again: does it see what was recorded? */
static bool holds(char op, int arg, int err, const char *path, const uint64_t id[8], const char *text, size_t tlen)
{
    struct stat st;
    uint64_t now[8];
    int rc, e;
    switch (op) {
    case 'S':
    case 'L':
        rc = op == 'S' ? stat(path, &st) : lstat(path, &st);
        break;
    case 'D':
    case 'O':
        if (!err) {
            rc = stat(path, &st);
            break;
        }
        if (op == 'D') {
            DIR *d = opendir(path);
            e = d ? 0 : errno;
            if (d)
                closedir(d);
        } else {
            int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            e = fd >= 0 ? 0 : errno;
            if (fd >= 0)
                close(fd);
        }
        return e == err;
    case 'A':
        rc = access(path, arg);
        return (rc ? errno : 0) == err;
    case 'K': {
        char buf[PATH_MAX];
        ssize_t r = readlink(path, buf, sizeof buf);
        if (r < 0 || (size_t)r >= sizeof buf)
            return r < 0 && errno == err;
        return !err && (size_t)r == tlen && memcmp(buf, text, tlen) == 0;
    }
    case 'V': {
        const char *v = getenv(path);
        if (!v)
            return err == ENOENT;
        char digest[33];
        value_digest(v, digest);
        return !err && tlen == 32 && memcmp(digest, text, 32) == 0;
    }
    case 'W': {
        char digest[33];
        environ_digest(digest);
        return !err && tlen == 32 && memcmp(digest, text, 32) == 0;
    }
    case 'R': {
        char *r = realpath(path, NULL);
        if (!r)
            return errno == err;
        bool same = !err && strlen(r) == tlen && memcmp(r, text, tlen) == 0;
        free(r);
        return same;
    }
    default:
        return false;
    }
    if (rc)
        return errno == err;
    if (err)
        return false;
    identity(now, &st);
    return memcmp(now, id, sizeof now) == 0;
}

/* The record's observation number i made in this run already, as this run's observation i (the
 * journal is on, and the call was made a moment ago; a record made by the same code starts with
 * the same calls in the same order: main.c's search of PATH): 1 when it saw what was recorded, 0
 * when it did not, -1 when this run's observation i is another (the call must be made). */
static int seen_now(size_t i, char op, int arg, int err, const char *path, const uint64_t id[8], const char *text,
                    size_t tlen)
{
    if (!atomic_load_explicit(&active, memory_order_relaxed))
        return -1;
    int verdict = -1;
    pthread_mutex_lock(&lock);
    if (i < n) {
        const obs *o = &list[i];
        if (o->op == op && o->arg == arg && !strcmp(o->path, path)) {
            if (o->err != err)
                verdict = 0;
            else if (err)
                verdict = 1;
            else if (has_identity(op))
                verdict = memcmp(o->id, id, sizeof o->id) == 0;
            else if (has_text(op))
                verdict = (o->text ? strlen(o->text) : 0) == tlen && (!tlen || memcmp(o->text, text, tlen) == 0);
            else
                verdict = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return verdict;
}

/* One observation of a record, read from r (path into the caller's PATH_MAX buffer; text points
 * into r's bytes); false when the record ends or is malformed. */
typedef struct {
    char op;
    int arg, err;
    uint64_t id[8];
    const char *text;
    uint32_t tlen;
} observation;

static bool read_observation(byte_reader *r, char *path, observation *o)
{
    const unsigned char *op, *p, *text = NULL;
    uint32_t arg, err, plen, tlen = 0;
    if (!br_bytes(r, 1, &op) || !br_u32(r, &arg) || !br_u32(r, &err) || !br_u32(r, &plen) || plen >= PATH_MAX ||
        !br_bytes(r, plen, &p))
        return false;
    memcpy(path, p, plen);
    path[plen] = 0;
    memset(o->id, 0, sizeof o->id);
    if (!err && has_identity((char)*op)) {
        for (int k = 0; k < 8; k++)
            if (!br_u64(r, &o->id[k]))
                return false;
    } else if (!err && has_text((char)*op)) {
        if (!br_u32(r, &tlen) || !br_bytes(r, tlen, &text))
            return false;
    }
    o->op = (char)*op;
    o->arg = (int)arg;
    o->err = (int)err;
    o->text = (const char *)text;
    o->tlen = tlen;
    return true;
}

bool fsj_check(byte_reader *r)
{
    uint32_t count;
    if (!br_u32(r, &count))
        return false;
    char path[PATH_MAX];
    observation o;
    for (uint32_t i = 0; i < count; i++) {
        if (!read_observation(r, path, &o))
            return false;
        int now = seen_now(i, o.op, o.arg, o.err, path, o.id, o.text, o.tlen);
        if (now == 0 || (now < 0 && !holds(o.op, o.arg, o.err, path, o.id, o.text, o.tlen)))
            return false;
    }
    return true;
}

/* The same call made again through the fs_* calls (so that the journal, when on, records it),
 * compared with what was recorded. */
static bool holds_noted(char op, int arg, int err, const char *path, const uint64_t id[8], const char *text, size_t tlen)
{
    struct stat st;
    uint64_t now[8];
    int rc;
    switch (op) {
    case 'S':
        rc = fs_stat(path, &st);
        break;
    case 'L':
        rc = fs_lstat(path, &st);
        break;
    case 'D':
    case 'O':
        if (!err) {
            rc = fs_stat(path, &st);
            break;
        }
        if (op == 'D') {
            DIR *d = fs_opendir(path);
            int e = d ? 0 : errno;
            if (d)
                closedir(d);
            return e == err;
        } else {
            int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
            int e = fd >= 0 ? 0 : errno;
            if (fd >= 0) {
                rc = fstat(fd, &st);
                fsj_note_open(path, rc == 0 ? &st : NULL, rc == 0 ? 0 : errno);
                close(fd);
            } else {
                fsj_note_open(path, NULL, e);
            }
            return e == err;
        }
    case 'A':
        rc = fs_access(path, arg);
        return (rc ? errno : 0) == err;
    case 'K': {
        char buf[PATH_MAX];
        ssize_t r = fs_readlink(path, buf, sizeof buf);
        if (r < 0)
            return errno == err;
        return !err && (size_t)r == tlen && memcmp(buf, text, tlen) == 0;
    }
    case 'V': {
        const char *v = fs_getenv(path);
        if (!v)
            return err == ENOENT;
        char digest[33];
        value_digest(v, digest);
        return !err && tlen == 32 && memcmp(digest, text, 32) == 0;
    }
    case 'W': {
        fsj_note_environ();
        char digest[33];
        environ_digest(digest);
        return !err && tlen == 32 && memcmp(digest, text, 32) == 0;
    }
    case 'R': {
        char *r = fs_realpath(path);
        if (!r)
            return errno == err;
        bool same = !err && strlen(r) == tlen && memcmp(r, text, tlen) == 0;
        free(r);
        return same;
    }
    default:
        return false;
    }
    if (rc)
        return errno == err;
    if (err)
        return false;
    identity(now, &st);
    return memcmp(now, id, sizeof now) == 0;
}

bool fsj_sub_check(byte_reader *r)
{
    uint32_t count;
    if (!br_u32(r, &count))
        return false;
    char path[PATH_MAX];
    observation o;
    for (uint32_t i = 0; i < count; i++)
        if (!read_observation(r, path, &o) || !holds_noted(o.op, o.arg, o.err, path, o.id, o.text, o.tlen))
            return false;
    return true;
}
