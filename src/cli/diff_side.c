/* diff_side.c - the two sides of `hiera diff` (diff_side.h).
 *
 * A git revision is read with git itself (plumbing commands, run without a shell): `git
 * read-tree` into an index file of our own (GIT_INDEX_FILE in the scratch folder) and `git
 * checkout-index` into the scratch folder, so the repository's work tree and index are never
 * touched and what lands on disk is what a checkout of the revision holds (filters and
 * attributes applied as git applies them; `git archive` would leave out export-ignore paths).
 * libgit2 would save the processes but not the writes, and git is what the repository's owner
 * already trusts with it. */
#include "cli/diff_side.h"

#include "base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hiera.h"

static char *xstrdup_(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    return d;
}

static char *xprintf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    va_end(ap);
    return s;
}

/* ------------------------------------------------------------------ scratch folder */

static char scratch_dir[PATH_MAX];
static volatile sig_atomic_t scratch_made;

void diff_scratch_cleanup(void)
{
    if (!scratch_made)
        return;
    scratch_made = 0;
    path_remove_tree(scratch_dir);
}

/* On a signal the folder goes too: nftw is not safe in a handler, so a child runs rm. */
static void on_signal(int sig)
{
    if (scratch_made) {
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/rm", "rm", "-rf", "--", scratch_dir, (char *)NULL);
            _exit(127);
        }
        if (pid > 0)
            waitpid(pid, NULL, 0);
        scratch_made = 0;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

const char *diff_scratch(char **err)
{
    if (scratch_made)
        return scratch_dir;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || tmp[0] != '/')
        tmp = "/tmp";
    if ((size_t)snprintf(scratch_dir, sizeof scratch_dir, "%s/hiera-diff-XXXXXX", tmp) >= sizeof scratch_dir ||
        !mkdtemp(scratch_dir)) {
        *err = xprintf_("cannot make a scratch folder in %s: %s", tmp, strerror(errno));
        return NULL;
    }
    scratch_made = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaction(sigs[i], &sa, NULL);
    return scratch_dir;
}

/* ------------------------------------------------------------------ running git */

typedef struct {
    char *out, *err;
    size_t out_len, err_len;
    int status; /* the exit status; 127 when git could not be run */
} cmd_result;

static void cmd_free(cmd_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
    char *b = realloc(*buf, *len + n + 1);
    if (!b) {
        fputs("hiera diff: out of memory\n", stderr);
        exit(2);
    }
    memcpy(b + *len, data, n);
    *len += n;
    b[*len] = 0;
    *buf = b;
}

/* Runs git with argv (argv[0] is "git"), in cwd when given, with GIT_INDEX_FILE set to index when
 * given, and input written to its stdin; stdout and stderr are collected. */
static void run_git(const char *const *argv, const char *cwd, const char *index, const char *input, size_t input_len,
                    cmd_result *r)
{
    memset(r, 0, sizeof *r);
    int po[2], pe[2], pi[2];
    if (pipe(po) || pipe(pe) || pipe(pi)) {
        r->status = 127;
        append(&r->err, &r->err_len, "cannot make a pipe", 18);
        return;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pi[0], 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(pi[0]); close(pi[1]); close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        /* the repository and index are the ones named here, whatever the environment says */
        unsetenv("GIT_DIR");
        unsetenv("GIT_WORK_TREE");
        unsetenv("GIT_INDEX_FILE");
        unsetenv("GIT_PREFIX");
        if (index)
            setenv("GIT_INDEX_FILE", index, 1);
        execvp("git", (char *const *)argv);
        fprintf(stderr, "cannot run git: %s", strerror(errno));
        _exit(127);
    }
    close(pi[0]);
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(pi[1]);
        close(po[0]);
        close(pe[0]);
        r->status = 127;
        append(&r->err, &r->err_len, "cannot start git", 16);
        return;
    }
    size_t written = 0;
    if (!input || input_len == 0) {
        close(pi[1]);
        pi[1] = -1;
    } else {
        fcntl(pi[1], F_SETFL, O_NONBLOCK);
    }
    struct pollfd fds[3] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}, {pi[1], POLLOUT, 0}};
    int open_fds = 2;
    char buf[1 << 15];
    while (open_fds > 0 || fds[2].fd >= 0) {
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                append(&r->out, &r->out_len, buf, (size_t)n);
            } else {
                append(&r->err, &r->err_len, buf, (size_t)n);
            }
        }
        if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(fds[2].fd, input + written, input_len - written);
            if (n > 0)
                written += (size_t)n;
            if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input_len) {
                close(fds[2].fd);
                fds[2].fd = -1;
            }
        }
    }
    if (fds[2].fd >= 0)
        close(fds[2].fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    if (!r->out)
        append(&r->out, &r->out_len, "", 0);
    if (!r->err)
        append(&r->err, &r->err_len, "", 0);
}

/* git's complaint, trimmed to its first line without "fatal: " */
static char *git_message(const cmd_result *r)
{
    const char *m = r->err && *r->err ? r->err : "git failed";
    if (strncmp(m, "fatal: ", 7) == 0)
        m += 7;
    else if (strncmp(m, "error: ", 7) == 0)
        m += 7;
    size_t n = strcspn(m, "\n");
    char *s = xstrdup_(m);
    s[n] = 0;
    return s;
}

static char *trim_line(char *s)
{
    s[strcspn(s, "\r\n")] = 0;
    return s;
}

/* The repository's git folder (absolute), or NULL with *err. */
static char *resolve_git_dir(const char *repo, char **err)
{
    const char *argv[] = {"git", "-C", repo, "rev-parse", "--absolute-git-dir", NULL};
    cmd_result r;
    run_git(argv, NULL, NULL, NULL, 0, &r);
    char *dir = NULL;
    if (r.status == 127) {
        *err = xprintf_("cannot run git (needed for --git-dir): %s", r.err);
    } else if (r.status != 0) {
        char *m = git_message(&r);
        *err = xprintf_("%s is not a git repository: %s", repo, m);
        free(m);
    } else {
        dir = xstrdup_(trim_line(r.out));
    }
    cmd_free(&r);
    return dir;
}

/* rev^{what}'s full id, or NULL when rev does not name one. */
static char *rev_parse(const char *git_dir, const char *rev, const char *what)
{
    char *gd = xprintf_("--git-dir=%s", git_dir);
    char *spec = xprintf_("%s^{%s}", rev, what);
    const char *argv[] = {"git", gd, "rev-parse", "--verify", "--quiet", spec, NULL};
    cmd_result r;
    run_git(argv, NULL, NULL, NULL, 0, &r);
    char *id = r.status == 0 && *r.out ? xstrdup_(trim_line(r.out)) : NULL;
    cmd_free(&r);
    free(gd);
    free(spec);
    return id;
}

static bool make_dir(const char *path, char **err)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        *err = xprintf_("cannot make %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ checkouts */

/* Paths changed between two trees (git diff-tree -z --name-status): a NUL-separated list. */
typedef struct {
    char **paths;  /* relative, sorted */
    size_t n;
    char **wanted; /* those the revision has */
    size_t nwanted;
    char *buf;
} changed_paths;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_changed(const changed_paths *c, const char *rel)
{
    return bsearch(&rel, c->paths, c->n, sizeof *c->paths, cmp_str) != NULL;
}

/* The hard-linked copy of base's tree, without the changed paths. */
typedef struct {
    const char *from;
    size_t from_len;
    const char *to;
    const changed_paths *changed;
    bool ok;
} link_walk;

static link_walk *the_walk; /* nftw has no user data */

static int link_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    link_walk *w = the_walk;
    const char *rel = path + w->from_len;
    if (*rel == '/')
        rel++;
    char *dest = *rel ? xprintf_("%s/%s", w->to, rel) : xstrdup_(w->to);
    bool fine = true;
    if (flag == FTW_D) {
        fine = mkdir(dest, 0700) == 0 || errno == EEXIST;
    } else if (*rel && !is_changed(w->changed, rel)) {
        if (flag == FTW_SL) {
            char target[PATH_MAX];
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n >= 0) {
                target[n] = 0;
                fine = symlink(target, dest) == 0;
            } else {
                fine = false;
            }
        } else if (S_ISREG(st->st_mode)) {
            fine = link(path, dest) == 0;
        }
    }
    free(dest);
    if (!fine) {
        w->ok = false;
        return 1;
    }
    return 0;
}

bool diff_hiera_reads(const char *path)
{
    static const char *const ext[] = {".yaml", ".yml", ".json", ".eyaml", ".conf", NULL};
    size_t n = strlen(path);
    for (size_t i = 0; ext[i]; i++) {
        size_t e = strlen(ext[i]);
        if (n >= e && strcmp(path + n - e, ext[i]) == 0)
            return true;
    }
    return false;
}

/* The files of the index (of the revision read) whose blobs the repository does not have: a
 * snapshot or a copy made without its large files. Those Hiera never reads are taken out of the
 * index (*left_out: their paths, ", " between them, the first few); one Hiera could read is an
 * error (its answers would not be the revision's). Returns false when there were none to take
 * out (then the failure stands as git gave it) or on such an error. */
static bool drop_missing_blobs(const char *gd, const char *dest, const char *index, char **left_out, char **err)
{
    cmd_result ls, cat, rm;
    const char *lsv[] = {"git", gd, "ls-files", "-s", "-z", NULL};
    run_git(lsv, dest, index, NULL, 0, &ls);
    if (ls.status != 0) {
        cmd_free(&ls);
        return false;
    }
    /* "mode sha stage\tpath" NUL-separated: the blobs' ids, one a line, to git cat-file */
    size_t n = 0, cap = 16, in_len = 0;
    char **paths = malloc(cap * sizeof *paths), *in = NULL;
    for (char *e = ls.out; paths && e < ls.out + ls.out_len && *e; e += strlen(e) + 1) {
        char *tab = strchr(e, '\t'), *sha = strchr(e, ' ');
        if (!tab || !sha || strncmp(e, "160000", 6) == 0) /* (a submodule: no blob to check out) */
            continue;
        sha++;
        char *end = strchr(sha, ' ');
        if (!end || end > tab)
            continue;
        if (n == cap) {
            char **more = realloc(paths, (cap *= 2) * sizeof *paths);
            if (!more)
                break;
            paths = more;
        }
        paths[n++] = tab + 1;
        append(&in, &in_len, sha, (size_t)(end - sha));
        append(&in, &in_len, "\n", 1);
    }
    const char *catv[] = {"git", gd, "cat-file", "--batch-check", NULL};
    run_git(catv, dest, index, in, in_len, &cat);
    free(in);
    bool dropped = false;
    size_t nmissing = 0, line = 0, rm_len = 0;
    char *rm_in = NULL, *shown = NULL;
    size_t shown_len = 0;
    for (char *l = cat.out; cat.status == 0 && paths && l && *l && line < n; line++) {
        char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (len >= 8 && strncmp(l + len - 8, " missing", 8) == 0) {
            const char *path = paths[line];
            if (diff_hiera_reads(path)) {
                *err = xprintf_("the repository does not have %s (object %.*s): a file Hiera reads", path,
                                (int)(len - 8), l);
                nmissing = 0;
                break;
            }
            append(&rm_in, &rm_len, path, strlen(path) + 1);
            if (nmissing < 3) {
                if (shown_len)
                    append(&shown, &shown_len, ", ", 2);
                append(&shown, &shown_len, path, strlen(path));
            }
            nmissing++;
        }
        l = nl ? nl + 1 : NULL;
    }
    if (nmissing && !*err) {
        const char *rmv[] = {"git", gd, "update-index", "--force-remove", "-z", "--stdin", NULL};
        run_git(rmv, dest, index, rm_in, rm_len, &rm);
        dropped = rm.status == 0;
        cmd_free(&rm);
        if (dropped) {
            if (nmissing > 3) {
                char *more = xprintf_(" and %zu more", nmissing - 3);
                append(&shown, &shown_len, more, strlen(more));
                free(more);
            }
            *left_out = shown;
            shown = NULL;
        }
    }
    free(shown);
    free(rm_in);
    free(paths);
    cmd_free(&cat);
    cmd_free(&ls);
    return dropped;
}

static bool checkout(const char *git_dir, const char *tree_id, const char *dest, const char *index, const diff_side *base,
                     char **left_out, char **err)
{
    char *gd = xprintf_("--git-dir=%s", git_dir);
    char *wt = xprintf_("--work-tree=%s", dest);
    cmd_result r;
    bool ok = false;
    changed_paths ch = {0};
    const char *rt[] = {"git", gd, wt, "read-tree", tree_id, NULL};
    run_git(rt, dest, index, NULL, 0, &r);
    if (r.status != 0) {
        char *m = git_message(&r);
        *err = xprintf_("git read-tree %s failed: %s", tree_id, m);
        free(m);
        goto out;
    }
    cmd_free(&r);
    bool linked = false, tried = false;
    char *base_tree = base && base->is_git ? rev_parse(git_dir, base->commit, "tree") : NULL;
    if (base_tree) {
        /* only what differs from the other side is checked out; the rest are hard links */
        tried = true;
        const char *dt[] = {"git", gd, "diff-tree", "-r", "-z", "--no-renames", "--name-status", base_tree, tree_id, NULL};
        run_git(dt, NULL, NULL, NULL, 0, &r);
        if (r.status == 0) {
            ch.buf = r.out;
            size_t len = r.out_len;
            r.out = NULL;
            /* status, NUL, path, NUL: every changed path is left out of the links; those this
             * side has (not removed) are checked out */
            ch.paths = calloc(len / 2 + 1, sizeof *ch.paths);
            ch.wanted = calloc(len / 2 + 1, sizeof *ch.wanted);
            for (char *p = ch.buf; ch.paths && ch.wanted && p < ch.buf + len && *p;) {
                char *path = p + strlen(p) + 1;
                if (path >= ch.buf + len)
                    break;
                ch.paths[ch.n++] = path;
                if (p[0] != 'D')
                    ch.wanted[ch.nwanted++] = path;
                p = path + strlen(path) + 1;
            }
            if (ch.paths && ch.wanted) {
                qsort(ch.paths, ch.n, sizeof *ch.paths, cmp_str);
                link_walk w = {base->tree, strlen(base->tree), dest, &ch, true};
                the_walk = &w;
                nftw(base->tree, link_entry, 32, FTW_PHYS);
                the_walk = NULL;
                linked = w.ok;
            }
        }
        cmd_free(&r);
        free(base_tree);
    }
    if (linked) {
        /* the changed paths that this revision has */
        size_t len = 0;
        char *input = NULL;
        for (size_t i = 0; i < ch.nwanted; i++)
            append(&input, &len, ch.wanted[i], strlen(ch.wanted[i]) + 1);
        const char *co[] = {"git", gd, wt, "checkout-index", "-f", "-z", "--stdin", NULL};
        run_git(co, dest, index, input, len, &r);
        free(input);
        if (r.status != 0) {
            linked = false; /* (a folder that became a file...): a whole checkout instead */
            cmd_free(&r);
        }
    }
    if (!linked) {
        if (tried) {
            /* start again from an empty folder */
            path_remove_tree(dest);
            if (!make_dir(dest, err))
                goto out;
        }
        const char *co[] = {"git", gd, wt, "checkout-index", "-a", "-f", NULL};
        run_git(co, dest, index, NULL, 0, &r);
        if (r.status != 0 && drop_missing_blobs(gd, dest, index, left_out, err)) {
            /* again without the files whose objects the repository lacks */
            cmd_free(&r);
            path_remove_tree(dest);
            if (!make_dir(dest, err))
                goto out;
            run_git(co, dest, index, NULL, 0, &r);
        }
    }
    if (r.status != 0) {
        if (!*err) {
            char *m = git_message(&r);
            *err = xprintf_("git checkout-index failed: %s", m);
            free(m);
        }
        goto out;
    }
    ok = true;
out:
    cmd_free(&r);
    free(ch.paths);
    free(ch.wanted);
    free(ch.buf);
    free(gd);
    free(wt);
    return ok;
}

/* ------------------------------------------------------------------ sides */

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool layout(diff_side *s, const char *environment, const char *tree_kind, const char *name, char **err)
{
    if (tree_kind)
        s->env_kind = strcmp(tree_kind, "environment") == 0;
    else {
        char *envs = xprintf_("%s/environments", s->tree);
        s->env_kind = !is_dir(envs);
        free(envs);
    }
    if (!s->env_kind) {
        s->codedir = xstrdup_(s->tree);
        s->environmentpath = xprintf_("%s/environments", s->tree);
        s->root = xstrdup_(s->tree);
        return true;
    }
    /* an environment: it becomes <scratch>/<name>/envs/<environment>, a link to the tree */
    const char *scratch = diff_scratch(err);
    if (!scratch)
        return false;
    char *top = xprintf_("%s/%s", scratch, name);
    s->codedir = xprintf_("%s/code", top);
    s->environmentpath = xprintf_("%s/envs", top);
    s->root = xprintf_("%s/%s", s->environmentpath, environment);
    bool ok = make_dir(top, err) && make_dir(s->codedir, err) && make_dir(s->environmentpath, err);
    if (ok && symlink(s->tree, s->root) != 0) {
        *err = xprintf_("cannot make %s: %s", s->root, strerror(errno));
        ok = false;
    }
    free(top);
    return ok;
}

bool diff_side_open(diff_side *s, const char *spec, const char *git_dir, const char *environment, const char *tree_kind,
                    const char *name, const diff_side *base, char **err)
{
    memset(s, 0, sizeof *s);
    s->spec = xstrdup_(spec);
    *err = NULL;
    char *gd = NULL, *tree_id = NULL;
    bool ok = false;
    if (git_dir) {
        gd = resolve_git_dir(git_dir, err);
        if (!gd)
            goto out;
        if (spec[0] != '-')
            tree_id = rev_parse(gd, spec, "tree");
        if (!tree_id && !is_dir(spec)) {
            *err = xprintf_("'%s' is not a revision of %s (nor a folder)", spec, git_dir);
            goto out;
        }
    } else if (!is_dir(spec)) {
        struct stat st;
        if (stat(spec, &st) == 0)
            *err = xprintf_("'%s' is not a folder", spec);
        else
            *err = xprintf_("'%s' is not a folder (%s; to compare revisions of a git repository, give --git-dir REPO)",
                            spec, strerror(errno));
        goto out;
    }
    if (tree_id) {
        s->is_git = true;
        char *commit = rev_parse(gd, spec, "commit");
        s->commit = commit ? commit : xstrdup_(tree_id);
        s->label = xprintf_("%s (%.10s)", spec, s->commit);
        const char *scratch = diff_scratch(err);
        if (!scratch)
            goto out;
        char *top = xprintf_("%s/%s", scratch, name);
        char *index = xprintf_("%s/%s.index", scratch, name);
        s->tree = xprintf_("%s/tree", top);
        bool made = make_dir(top, err) && make_dir(s->tree, err);
        const diff_side *b = base && base->is_git ? base : NULL;
        made = made && checkout(gd, tree_id, s->tree, index, b, &s->left_out, err);
        unlink(index);
        free(index);
        free(top);
        if (!made)
            goto out;
    } else {
        char *real = realpath(spec, NULL);
        if (!real) {
            *err = xprintf_("'%s' cannot be read: %s", spec, strerror(errno));
            goto out;
        }
        s->tree = real;
        s->label = xstrdup_(spec);
    }
    ok = layout(s, environment, tree_kind, name, err);
out:
    free(gd);
    free(tree_id);
    return ok;
}

void diff_side_close(diff_side *s)
{
    free(s->spec);
    free(s->commit);
    free(s->label);
    free(s->tree);
    free(s->codedir);
    free(s->environmentpath);
    free(s->root);
    free(s->hiera_config);
    free(s->left_out);
    memset(s, 0, sizeof *s);
}
