/* edit_effects.c - what an edit would do before it is written (edit_effects.h).
 *
 * The change is one file's text. A scratch copy of the tree the lookups read (the code directory
 * with the edited environment alone, or the environment) is made of hard links to the real
 * files, but for the edited file, which gets its new text (the link is removed first: the real
 * file is never written through it). Then:
 *  - the fleet's impact is hiera diff between the real tree and the copy, run as a process of this
 *    very binary: its fast path looks up again only the keys the change can reach, for every node
 *    of the facts folder or PuppetDB, and says it as hiera diff says it (text or its JSON);
 *  - hiera check runs over both trees (the library, in this process); the findings in the edited
 *    file that the old tree does not have are the edit's (matched by rule, severity and message:
 *    the lines move).
 * The copy is removed at the end. Files on another file system than the scratch folder are
 * linked symbolically instead. */
#include "cli/edit_effects.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/util.h"
#include "check/check.h"

extern char **environ;

/* ------------------------------------------------------------------ processes */

static void drain_into(int fd, sbuf *b, bool *open_)
{
    char buf[1 << 15];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0)
        sb_addn(b, buf, (size_t)n);
    else if (n == 0 || (errno != EINTR && errno != EAGAIN))
        *open_ = false;
}

int edit_run(const char *const *argv, const char *cwd, const char *const *extra_env, char **out, char **err)
{
    *out = *err = NULL;
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC)) {
        *err = xasprintf("cannot make a pipe: %s", strerror(errno));
        if (po[0] >= 0) {
            close(po[0]);
            close(po[1]);
        }
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    if (cwd)
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    /* the environment, with the extra variables over it */
    size_t nenv = 0, nextra = 0;
    while (environ[nenv])
        nenv++;
    while (extra_env && extra_env[nextra])
        nextra++;
    const char **envp = xcalloc(nenv + nextra + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++) {
        bool replaced = false;
        for (size_t j = 0; j < nextra && !replaced; j++) {
            const char *eq = strchr(extra_env[j], '=');
            size_t nl = eq ? (size_t)(eq - extra_env[j]) + 1 : strlen(extra_env[j]);
            replaced = !strncmp(environ[i], extra_env[j], nl);
        }
        if (!replaced)
            envp[k++] = environ[i];
    }
    for (size_t j = 0; j < nextra; j++)
        envp[k++] = extra_env[j];
    envp[k] = NULL;
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, (char *const *)envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(po[1]);
    close(pe[1]);
    if (rc != 0) {
        close(po[0]);
        close(pe[0]);
        *err = xasprintf("cannot run %s: %s", argv[0], strerror(rc));
        return -1;
    }
    sbuf o = {0}, e = {0};
    bool oo = true, eo = true;
    while (oo || eo) {
        struct pollfd fds[2] = {{oo ? po[0] : -1, POLLIN, 0}, {eo ? pe[0] : -1, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (oo && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
            drain_into(po[0], &o, &oo);
        if (eo && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
            drain_into(pe[0], &e, &eo);
    }
    close(po[0]);
    close(pe[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *out = sb_take(&o);
    *err = sb_take(&e);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* ------------------------------------------------------------------ the scratch copy */

typedef struct {
    const char *file_rel;  /* the edited file, relative to the root */
    const char *only_env;  /* a code directory: under environments/, this environment alone */
    char *why;             /* the first failure */
} mirror;

static bool on_the_way(const char *rel, const char *file_rel)
{
    size_t n = strlen(rel);
    return !strncmp(file_rel, rel, n) && file_rel[n] == '/';
}

static void mirror_dir(mirror *m, const char *src, const char *dst, const char *rel, int depth)
{
    if (m->why)
        return;
    if (depth > 64 || (mkdir(dst, 0700) != 0 && errno != EEXIST)) {
        m->why = xasprintf("cannot make %s: %s", dst, depth > 64 ? "too deep" : strerror(errno));
        return;
    }
    DIR *d = opendir(src);
    if (!d)
        return; /* (a folder that cannot be read: the lookups cannot read it either) */
    struct dirent *de;
    while (!m->why && (de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, ".git"))
            continue;
        if (m->only_env && rel && !strcmp(rel, "environments") && strcmp(name, m->only_env) != 0)
            continue;
        char *s = xjoin(src, "/", name, NULL), *t = xjoin(dst, "/", name, NULL);
        char *r = rel ? xjoin(rel, "/", name, NULL) : xstrdup(name);
        struct stat st;
        if (!strcmp(r, m->file_rel) || lstat(s, &st) != 0) {
            /* the edited file is written afterwards */
        } else if (S_ISDIR(st.st_mode) || (S_ISLNK(st.st_mode) && on_the_way(r, m->file_rel))) {
            /* a folder (a link to one on the way to the edited file is made a folder: its file
             * must be the copy's own) */
            mirror_dir(m, s, t, r, depth + 1);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlink(s, target, sizeof target - 1);
            if (n >= 0) {
                target[n] = 0;
                if (symlink(target, t) != 0)
                    m->why = xasprintf("cannot make %s: %s", t, strerror(errno));
            }
        } else if (S_ISREG(st.st_mode)) {
            if (link(s, t) != 0 && symlink(s, t) != 0)
                m->why = xasprintf("cannot make %s: %s", t, strerror(errno));
        }
        free(s);
        free(t);
        free(r);
    }
    closedir(d);
}

/* path relative to root when under it, else NULL (BORROWED from path) */
static const char *under(const char *path, const char *root)
{
    size_t n = root ? strlen(root) : 0;
    while (n > 1 && root[n - 1] == '/')
        n--;
    return n && !strncmp(path, root, n) && path[n] == '/' ? path + n + 1 : NULL;
}

/* ------------------------------------------------------------------ hiera check */

static bool same_finding(const check_finding *a, const check_finding *b)
{
    return !strcmp(a->rule, b->rule) && a->severity == b->severity && !strcmp(a->message ? a->message : "", b->message ? b->message : "");
}

/* s with every occurrence of from replaced by to (a new string) */
static char *replace_all(const char *s, const char *from, const char *to)
{
    sbuf b = {0};
    size_t fl = strlen(from);
    for (const char *p = s; *p;) {
        const char *hit = fl ? strstr(p, from) : NULL;
        if (!hit) {
            sb_adds(&b, p);
            break;
        }
        sb_addn(&b, p, (size_t)(hit - p));
        sb_adds(&b, to);
        p = hit + fl;
    }
    return sb_take(&b);
}

static bool run_check(const effects_request *r, const char *root, bool codedir_kind, check_report *rep, char **why)
{
    check_options co = {0};
    const char *paths[1] = {root};
    if (codedir_kind) {
        co.codedir = root;
        co.environment = r->environment;
    } else {
        co.paths = paths;
        co.npaths = 1;
    }
    co.confdir = r->confdir;
    co.hiera_config = r->hiera_config;
    co.facts_dir = r->facts_dir;
    return check_run(&co, rep, why) == 0;
}

static void new_findings(const effects_request *r, const char *root, const char *copy, bool codedir_kind, effects *out)
{
    check_report old = {0}, now = {0};
    char *why = NULL;
    if (!run_check(r, root, codedir_kind, &old, &why) || !run_check(r, copy, codedir_kind, &now, &why)) {
        out->check_note = xasprintf("hiera check could not run: %s", why ? why : "");
        free(why);
        check_report_free(&old);
        check_report_free(&now);
        return;
    }
    const char *rel = under(r->file, root);
    char *copy_file = xjoin(copy, "/", rel, NULL);
    bool *used = xcalloc(old.n + 1, sizeof *used);
    out->findings = hiera_value_new_array();
    for (size_t i = 0; i < now.n; i++) {
        check_finding *f = &now.v[i];
        if (!f->file || strcmp(f->file, copy_file) != 0)
            continue;
        char *msg = replace_all(f->message ? f->message : "", copy, root);
        free(f->message);
        f->message = msg;
        bool seen = false;
        for (size_t j = 0; j < old.n && !seen; j++)
            if (!used[j] && old.v[j].file && !strcmp(old.v[j].file, r->file) && same_finding(&old.v[j], f))
                seen = used[j] = true;
        if (seen)
            continue;
        hiera_value *x = hiera_value_new_hash();
        hiera_value_hash_set(x, "rule", hiera_value_new_string(f->rule));
        hiera_value_hash_set(x, "severity", hiera_value_new_string(f->severity == CHECK_ERROR ? "error" : "warning"));
        hiera_value_hash_set(x, "line", hiera_value_new_int(f->line));
        hiera_value_hash_set(x, "column", hiera_value_new_int(f->col));
        hiera_value_hash_set(x, "message", hiera_value_new_string(f->message));
        hiera_value_array_push(out->findings, x);
        if (f->severity == CHECK_ERROR)
            out->new_errors++;
    }
    free(used);
    free(copy_file);
    check_report_free(&old);
    check_report_free(&now);
}

/* ------------------------------------------------------------------ the effects */

void edit_effects(const effects_request *r, effects *out)
{
    memset(out, 0, sizeof *out);
    out->impact_status = -1;
    if (!r->nnode_args && !r->check)
        return;
    /* the tree to copy: the code directory (its environments/ holding this environment), else the
     * environment alone */
    char *envs = r->codedir ? xjoin(r->codedir, "/environments", NULL) : NULL;
    bool std_envpath = envs && r->environmentpath && !strcmp(r->environmentpath, envs);
    free(envs);
    const char *root = NULL;
    bool codedir_kind = false;
    if (std_envpath && under(r->file, r->codedir)) {
        root = r->codedir;
        codedir_kind = true;
    } else if (r->env_dir && under(r->file, r->env_dir)) {
        root = r->env_dir;
    }
    if (!root) {
        const char *why = "the file is outside the environment and the code directory: its effects on the fleet and "
                          "hiera check's findings are not computed";
        if (r->nnode_args)
            out->impact_note = xstrdup(why);
        if (r->check)
            out->check_note = xstrdup(why);
        return;
    }
    const char *tmp = getenv("TMPDIR");
    char *scratch = xjoin(tmp && *tmp ? tmp : "/tmp", "/hiera-edit-XXXXXX", NULL);
    if (!mkdtemp(scratch)) {
        out->impact_note = xasprintf("cannot make a scratch folder %s: %s", scratch, strerror(errno));
        free(scratch);
        return;
    }
    char *copy = xjoin(scratch, "/tree", NULL);
    mirror m = {under(r->file, root), codedir_kind ? r->environment : NULL, NULL};
    mirror_dir(&m, root, copy, NULL, 0);
    if (!m.why) {
        /* the edited file in the copy: its folders made when it is new */
        char *f = xjoin(copy, "/", m.file_rel, NULL);
        for (char *p = f + strlen(copy) + 1; (p = strchr(p, '/')) != NULL; p++) {
            *p = 0;
            if (mkdir(f, 0700) != 0 && errno != EEXIST)
                m.why = xasprintf("cannot make %s: %s", f, strerror(errno));
            *p = '/';
        }
        unlink(f); /* (never written through a link to the real file) */
        int fd = m.why ? -1 : open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (!m.why && (fd < 0 || (r->new_len && write(fd, r->new_text, r->new_len) != (ssize_t)r->new_len)))
            m.why = xasprintf("cannot write %s: %s", f, strerror(errno));
        if (fd >= 0)
            close(fd);
        free(f);
    }
    if (m.why) {
        if (r->nnode_args)
            out->impact_note = xasprintf("cannot copy the tree: %s", m.why);
        if (r->check)
            out->check_note = xasprintf("cannot copy the tree: %s", m.why);
    } else {
        if (r->nnode_args) {
            /* hiera diff OLD NEW: this binary */
            const char **argv = xcalloc(r->nnode_args + 20, sizeof *argv);
            size_t n = 0;
            argv[n++] = "/proc/self/exe";
            argv[n++] = "diff";
            argv[n++] = root;
            argv[n++] = copy;
            argv[n++] = "--tree";
            argv[n++] = codedir_kind ? "codedir" : "environment";
            argv[n++] = "--environment";
            argv[n++] = r->environment ? r->environment : "production";
            argv[n++] = "--format";
            argv[n++] = r->impact_json ? "json" : "text";
            argv[n++] = "--color";
            argv[n++] = r->color ? "always" : "never";
            if (r->confdir) {
                argv[n++] = "--confdir";
                argv[n++] = r->confdir;
            }
            if (r->hiera_config) {
                argv[n++] = "--hiera_config";
                argv[n++] = r->hiera_config;
            }
            if (r->redact)
                argv[n++] = "--redact-secrets";
            for (size_t i = 0; i < r->nnode_args; i++)
                argv[n++] = r->node_args[i];
            argv[n] = NULL;
            char *o = NULL, *e = NULL;
            out->impact_status = edit_run(argv, NULL, NULL, &o, &e);
            free(argv);
            if (out->impact_status < 0 || (out->impact_status == 2 && (!o || !*o))) {
                char *msg = replace_all(e ? e : "", copy, root);
                out->impact_note = xasprintf("hiera diff could not compare: %s", *msg ? msg : "it failed");
                free(msg);
                free(o);
                out->impact_status = -1;
            } else {
                /* the copy is the tree with the edit: its name is the tree's (and said so once) */
                char *from = xjoin(" \xE2\x86\x92 ", copy, " (", NULL), *to = xjoin(" \xE2\x86\x92 ", root, " with the edit (", NULL);
                char *labelled = r->impact_json ? xstrdup(o ? o : "") : replace_all(o ? o : "", from, to);
                out->impact = replace_all(labelled, copy, root);
                free(labelled);
                free(from);
                free(to);
                free(o);
                if (e && *e)
                    out->impact_errors = replace_all(e, copy, root);
            }
            free(e);
        }
        if (r->check)
            new_findings(r, root, copy, codedir_kind, out);
    }
    free(m.why);
    path_remove_tree(scratch);
    free(copy);
    free(scratch);
}

void effects_free(effects *e)
{
    free(e->impact);
    free(e->impact_errors);
    free(e->impact_note);
    hiera_value_decref(e->findings);
    free(e->check_note);
    memset(e, 0, sizeof *e);
}

/* ------------------------------------------------------------------ git */

bool edit_git_commit(const char *file, const char *author, const char *message, char **note)
{
    *note = NULL;
    char *dir = xstrdup(file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    char *o = NULL, *e = NULL;
    const char *top_argv[] = {"/usr/bin/git", "rev-parse", "--show-toplevel", NULL};
    const char *git = access("/usr/bin/git", X_OK) == 0 ? "/usr/bin/git" : "/usr/local/bin/git";
    top_argv[0] = git;
    int rc = edit_run(top_argv, dir, NULL, &o, &e);
    bool ok = true;
    if (rc != 0) {
        /* not a work tree (or no git): nothing to commit */
        free(o);
        free(e);
        free(dir);
        if (rc < 0)
            *note = xstrdup("git cannot be run: the edit is not committed");
        return rc != 0 && rc > 0;
    }
    free(o);
    free(e);
    /* the committer is hiera when git has no identity here (a service user's checkout) */
    const char *env[] = {"GIT_COMMITTER_NAME=hiera", "GIT_COMMITTER_EMAIL=hiera@localhost", NULL};
    const char *add[] = {git, "add", "--", file, NULL};
    rc = edit_run(add, dir, NULL, &o, &e);
    if (rc == 0) {
        free(o);
        free(e);
        const char *commit[] = {git, "commit", "--quiet", "--no-verify", "--author", author, "-m", message, "--", file, NULL};
        const char *user = getenv("GIT_COMMITTER_NAME");
        rc = edit_run(commit, dir, user ? NULL : env, &o, &e);
    }
    if (rc != 0) {
        const char *m = e && *e ? e : o && *o ? o : "git failed";
        *note = xasprintf("git commit failed: %.*s", (int)strcspn(m, "\n"), m);
        ok = false;
    }
    free(o);
    free(e);
    free(dir);
    return ok;
}
