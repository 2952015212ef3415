/* installed.c - which Puppet is installed: the `puppet` command on PATH, and the version its Ruby
 * library says (lib/puppet/version.rb's PUPPETVERSION, or the VERSION file beside it, which
 * Puppet.version prefers), read as text so that no Ruby has to start. Where the library is, by
 * the command:
 *   /opt/puppetlabs/...            Puppet's (or OpenVox's) packages: /opt/puppetlabs/puppet/lib/ruby/vendor_ruby
 *   /usr/bin/puppet                Debian's package: /usr/lib/ruby/vendor_ruby
 *   PREFIX/bin/puppet              PREFIX/lib/ruby/vendor_ruby when it has puppet/version.rb
 *   anything else                  a checkout (<dir>/../lib) or a gem: the newest puppet-* or
 *                                  openvox-* gem in GEM_HOME, GEM_PATH, the Ruby folders beside the
 *                                  command (<dir>/../lib/ruby/gems/x/), /var/lib/gems/x/,
 *                                  /usr/local/lib/ruby/gems/x/, /usr/share/rubygems-integration/all
 * With no puppet on PATH: Puppet's packages' library, else Debian's, when present; with no Puppet
 * at all, Debian's Hiera 3 library (3.12 is Debian 13's, beside Puppet 8). */
#include "engine/installed.h"

#include "base/fileio.h"
#include "base/fsjournal.h"
#include "base/util.h"

#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The parts of a ':'-separated list, each a new string (free the array with free_parts). */
static char **colon_parts(const char *s, size_t *n)
{
    size_t cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ':';
    char **v = xcalloc(cap, sizeof *v);
    *n = 0;
    for (const char *p = s;; p++) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        v[(*n)++] = xstrndup(p, len);
        if (!e)
            break;
        p = e;
    }
    return v;
}

static void free_parts(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static char *search_path(const char *path);

/* The search made once for a value of PATH (the Puppet version and the file layout both ask),
 * within one session of the file system journal: the calls it made are then in the journal's
 * record (fsj_session) */
char *installed_puppet_command(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *last_path, *last_found;
    static unsigned last_session;
    static bool known;
    const char *path = fs_getenv("PATH");
    if (!path)
        return NULL;
    pthread_mutex_lock(&lock);
    unsigned session = fsj_session();
    if (!known || session != last_session || strcmp(path, last_path)) {
        free(last_path);
        free(last_found);
        last_path = xstrdup(path);
        last_found = search_path(path);
        last_session = session;
        known = true;
    }
    char *r = last_found ? xstrdup(last_found) : NULL;
    pthread_mutex_unlock(&lock);
    return r;
}

/* the first folder of path holding an executable puppet (its real path), or NULL */
static char *search_path(const char *path)
{
    size_t n;
    char **dirs = colon_parts(path, &n);
    char *found = NULL;
    for (size_t i = 0; i < n && !found; i++) {
        bool seen = false; /* a folder named twice holds no puppet the first time either */
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(dirs[j], dirs[i]);
        if (seen)
            continue;
        char *exe = xjoin(*dirs[i] ? dirs[i] : ".", "/puppet", NULL);
        struct stat st;
        if (fs_stat(exe, &st) == 0 && S_ISREG(st.st_mode) && fs_access(exe, X_OK) == 0) {
            found = fs_realpath(exe);
            if (!found)
                found = xstrdup(exe);
        }
        free(exe);
    }
    free_parts(dirs, n);
    return found;
}

/* "8.10.0" from lib/puppet/version.rb (PUPPETVERSION = '8.10.0'), or from the VERSION file
 * beside it when there is one; NULL when neither reads. */
/* The quoted text of the first assignment of a Ruby constant in the file at path
 * ("NAME = '8.10.0'", the name whole), or NULL. */
static char *ruby_constant(const char *path, const char *name)
{
    sbuf b = {0};
    char *v = NULL;
    size_t n = strlen(name);
    if (!path_is_file(path) || !file_read(path, &b, &(file_read_opts){.max = 1 << 20}, NULL) || !b.len) {
        sb_free(&b);
        return NULL;
    }
    for (const char *p = strstr(b.s, name); p && !v; p = strstr(p + 1, name)) {
        if (p > b.s && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == ':'))
            continue; /* (PUPPETVERSION is not VERSION; Hiera::VERSION is no assignment) */
        const char *q = p + n;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q != '=' || q[1] == '=')
            continue;
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        const char *end = (*q == '\'' || *q == '"') ? strchr(q + 1, *q) : NULL;
        if (end && end > q + 1)
            v = xstrndup(q + 1, (size_t)(end - q - 1));
    }
    sb_free(&b);
    return v;
}

static char *library_version(const char *version_rb)
{
    char *dir = xstrdup(version_rb);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    char *vfile = xjoin(dir, "/VERSION", NULL);
    free(dir);
    sbuf b = {0};
    char *v = NULL;
    if (path_is_file(vfile) && file_read(vfile, &b, &(file_read_opts){.max = 4096}, NULL)) {
        size_t s = 0, e = b.len;
        while (s < e && isspace((unsigned char)b.s[s]))
            s++;
        while (e > s && isspace((unsigned char)b.s[e - 1]))
            e--;
        if (e > s)
            v = xstrndup(b.s + s, e - s);
    }
    free(vfile);
    sb_free(&b);
    return v ? v : ruby_constant(version_rb, "PUPPETVERSION");
}

/* Compares dotted versions numerically ("8.10.0" > "8.9.1"). */
static int version_cmp(const char *a, const char *b)
{
    while (*a || *b) {
        long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
        if (x != y)
            return x < y ? -1 : 1;
        while (*a && *a != '.')
            a++;
        while (*b && *b != '.')
            b++;
        if (*a == '.')
            a++;
        if (*b == '.')
            b++;
        if (!*a && !*b)
            break;
    }
    return 0;
}

/* The newest puppet-X or openvox-X gem's lib/puppet/version.rb under gems_dir/gems, kept in
 * *best (with its version) when newer than what *best holds. */
static void newest_gem(const char *gems_dir, char **best, char **best_version)
{
    char *gdir = xjoin(gems_dir, "/gems", NULL);
    DIR *d = fs_opendir(gdir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *v = !strncmp(de->d_name, "puppet-", 7) ? de->d_name + 7
                        : !strncmp(de->d_name, "openvox-", 8) ? de->d_name + 8 : NULL;
        if (!v || !isdigit((unsigned char)*v))
            continue;
        char *rb = xjoin(gdir, "/", de->d_name, "/lib/puppet/version.rb", NULL);
        if (path_is_file(rb) && (!*best || version_cmp(v, *best_version) > 0)) {
            free(*best);
            free(*best_version);
            *best = rb;
            *best_version = xstrdup(v);
        } else {
            free(rb);
        }
    }
    if (d)
        closedir(d);
    free(gdir);
}

/* Each folder under parent (one level: the Ruby ABI versions "3.1.0", "3.3.0"...) as a gems dir. */
static void newest_gem_under(const char *parent, char **best, char **best_version)
{
    DIR *d = fs_opendir(parent);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *g = xjoin(parent, "/", de->d_name, NULL);
        newest_gem(g, best, best_version);
        free(g);
    }
    if (d)
        closedir(d);
}

/* The version.rb of the library behind the puppet command cmd (resolved), or NULL. */
static char *library_of(const char *cmd)
{
    if (!strncmp(cmd, "/opt/puppetlabs/", 16))
        return xstrdup("/opt/puppetlabs/puppet/lib/ruby/vendor_ruby/puppet/version.rb");
    if (!strcmp(cmd, "/usr/bin/puppet") && path_is_file("/usr/lib/ruby/vendor_ruby/puppet/version.rb"))
        return xstrdup("/usr/lib/ruby/vendor_ruby/puppet/version.rb");
    char *dir = xstrdup(cmd);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    /* a Ruby's vendor library beside the command (PREFIX/bin/puppet, PREFIX/lib/ruby/vendor_ruby:
     * a Debian root elsewhere), a checkout or an unpacked gem (bin/puppet beside lib/puppet) */
    static const char *const near[] = {"/../lib/ruby/vendor_ruby/puppet/version.rb", "/../lib/puppet/version.rb"};
    for (size_t i = 0; i < 2; i++) {
        char *rb = xjoin(dir, near[i], NULL);
        if (path_is_file(rb)) {
            free(dir);
            return rb;
        }
        free(rb);
    }
    char *best = NULL, *best_version = NULL;
    const char *home = fs_getenv("GEM_HOME"), *gp = fs_getenv("GEM_PATH");
    if (home && *home)
        newest_gem(home, &best, &best_version);
    if (gp && *gp) {
        size_t n;
        char **parts = colon_parts(gp, &n);
        for (size_t i = 0; i < n; i++)
            if (*parts[i])
                newest_gem(parts[i], &best, &best_version);
        free_parts(parts, n);
    }
    char *beside = xjoin(dir, "/../lib/ruby/gems", NULL);
    newest_gem_under(beside, &best, &best_version);
    free(beside);
    newest_gem_under("/var/lib/gems", &best, &best_version);
    newest_gem_under("/usr/local/lib/ruby/gems", &best, &best_version);
    newest_gem("/usr/share/rubygems-integration/all", &best, &best_version);
    free(dir);
    free(best_version);
    return best;
}

#define HIERA3_LIBRARY "/usr/lib/ruby/vendor_ruby/hiera/version.rb"

/* "3.12.0" from Hiera's version.rb (VERSION = "3.12.0"), or NULL. */
static char *hiera3_version_of(const char *version_rb)
{
    return ruby_constant(version_rb, "VERSION");
}

/* The major version a version text names, as hiera answers it: 8 from 8 on, else 7. */
static hiera_puppet_version major_of(const char *v) { return atoi(v) >= 8 ? HIERA_PUPPET_8 : HIERA_PUPPET_7; }

hiera_puppet_version hiera_puppet_version_find(char **why)
{
    if (why)
        *why = NULL;
    const char *forced = fs_getenv("HIERA_PUPPET_VERSION");
    if (forced && *forced) {
        if (!strcmp(forced, "7") || !strcmp(forced, "8")) {
            if (why)
                *why = xasprintf("HIERA_PUPPET_VERSION=%s", forced);
            return forced[0] == '8' ? HIERA_PUPPET_8 : HIERA_PUPPET_7;
        }
        if (why)
            *why = xasprintf("HIERA_PUPPET_VERSION must be 7 or 8, not '%s'", forced);
        return HIERA_PUPPET_AUTO;
    }
    char *cmd = installed_puppet_command();
    char *rb = cmd ? library_of(cmd) : NULL;
    if (!cmd) {
        if (path_is_file("/opt/puppetlabs/bin/puppet"))
            rb = xstrdup("/opt/puppetlabs/puppet/lib/ruby/vendor_ruby/puppet/version.rb");
        else if (path_is_file("/usr/lib/ruby/vendor_ruby/puppet/version.rb"))
            rb = xstrdup("/usr/lib/ruby/vendor_ruby/puppet/version.rb");
    }
    char *v = rb ? library_version(rb) : NULL;
    hiera_puppet_version r = HIERA_PUPPET_7;
    if (!cmd && !v) {
        /* no Puppet: the Hiera 3 installed (Debian's hiera package: 3.12 beside Puppet 8 in
         * Debian 13, 3.10 beside Puppet 7 in Debian 12) */
        char *h3 = hiera3_version_of(HIERA3_LIBRARY);
        if (h3) {
            if (why)
                *why = xasprintf("no Puppet installed; the installed Hiera %s: %s", h3, HIERA3_LIBRARY);
            r = version_cmp(h3, "3.12") >= 0 ? HIERA_PUPPET_8 : HIERA_PUPPET_7;
            free(h3);
            free(rb);
            return r;
        }
    }
    if (v) {
        r = major_of(v);
        if (why)
            *why = xasprintf("the installed Puppet %s: %s%s%s", v, cmd ? cmd : "", cmd ? ", " : "", rb);
    } else if (why) {
        *why = cmd ? xasprintf("no version found for %s: Puppet 7, the default", cmd)
                   : xstrdup("no Puppet installed: Puppet 7, the default");
    }
    free(v);
    free(rb);
    free(cmd);
    return r;
}

bool installed_puppet8_has_hiera3(void)
{
    char *cmd = installed_puppet_command();
    char *rb = cmd ? library_of(cmd) : NULL;
    char *v = rb ? library_version(rb) : NULL;
    bool r = false;
    if (v && major_of(v) == HIERA_PUPPET_8) {
        /* Hiera 3's hiera.rb in the same Ruby library as Puppet's (Debian's hiera package) */
        char *lib = xstrdup(rb);
        char *cut = strstr(lib, "/puppet/version.rb");
        if (cut) {
            *cut = 0;
            char *h = xjoin(lib, "/hiera.rb", NULL);
            r = path_is_file(h);
            free(h);
        }
        free(lib);
    }
    free(v);
    free(rb);
    free(cmd);
    return r;
}

hiera_puppet_version puppet_version_resolve(hiera_puppet_version v)
{
    if (v == HIERA_PUPPET_7 || v == HIERA_PUPPET_8)
        return v;
    /* found again only when what decides it changed (a process that makes many settings) */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *last_forced, *last_path;
    static bool known;
    static hiera_puppet_version last;
    const char *forced = fs_getenv("HIERA_PUPPET_VERSION"), *path = fs_getenv("PATH");
    pthread_mutex_lock(&lock);
    bool same = known && !strcmp(forced ? forced : "\n", last_forced) && !strcmp(path ? path : "\n", last_path);
    hiera_puppet_version r = same ? last : hiera_puppet_version_find(NULL);
    if (!same) {
        free(last_forced);
        free(last_path);
        last_forced = xstrdup(forced ? forced : "\n"); /* "\n": unset (no value holds it alone) */
        last_path = xstrdup(path ? path : "\n");
        last = r;
        known = true;
    }
    pthread_mutex_unlock(&lock);
    return r;
}
