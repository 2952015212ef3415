/* facts.c - a node's facts as `puppet lookup` 7.23 finds them (lib/puppet/application/lookup.rb,
 * generate_scope and retrieve_node_facts):
 *  - --facts FILE is read and checked first;
 *  - with --node NODE the node's facts come from the facts terminus, which `puppet lookup` sets
 *    to yaml: the YAML facts cache <yamldir>/facts/NODE.yaml (hiera_facts_cached); no file means
 *    no facts;
 *  - without --node the node is the certname and its facts come from Facter
 *    (lib/puppet/indirector/facts/facter.rb): Puppet calls Facter in its own process; here the
 *    `facter` command is run with the same facts asked for (legacy facts included, as Puppet's
 *    include_legacy_facts default wants) and the same custom and external fact folders, then the
 *    facts Puppet adds itself (puppetversion, agent_specified_environment, clientcert,
 *    clientversion, clientnoop) are added;
 *  - the file's facts go over those, and no facts at all is "No facts available for target
 *    node: NODE". */
#include "facts/facts.h"
#include "cli/common.h"
#include "base/fileio.h"
#include "base/fsjournal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void say(const char *fmt, const char *a, const char *b)
{
    fputs("Error: Could not run: ", stderr);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("hiera: out of memory\n", stderr);
        exit(1);
    }
    return p;
}

static char *cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = xalloc(la + lb + lc + 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

char *cli_default_vardir(void)
{
    /* lib/puppet/util/run_mode.rb (UnixRunMode#var_dir, as Debian ships it) */
    if (geteuid() == 0)
        return cat3("/var/cache/puppet", "", "");
    const char *home = fs_getenv("HOME");
    return cat3(home ? home : "", "/.puppet/cache", "");
}

char *cli_default_modulepath(const char *codedir, const char *env_dir)
{
    char *base = cat3(codedir, "/modules:/usr/share/puppet/modules", "");
    if (!env_dir)
        return base;
    char *mp = cat3(env_dir, "/modules:", base);
    free(base);
    return mp;
}

/* ------------------------------------------------------------------ a list of strings */

typedef struct {
    char **v;
    size_t n, cap;
} list;

static void push(list *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, l->cap * sizeof *v);
        if (!v) {
            fputs("hiera: out of memory\n", stderr);
            exit(1);
        }
        l->v = v;
    }
    l->v[l->n++] = s;
}

static bool has(const list *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return true;
    return false;
}

static void list_free(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Each ':'-separated entry of path (empty ones skipped), given to fn. */
static void each_entry(const char *path, void (*fn)(const char *entry, void *arg), void *arg)
{
    if (!path)
        return;
    const char *p = path;
    while (*p) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n) {
            char *e = xalloc(n + 1);
            memcpy(e, p, n);
            e[n] = 0;
            fn(e, arg);
            free(e);
        }
        p += n;
        if (*p == ':')
            p++;
    }
}

/* ------------------------------------------------------------------ Facter's folders */

/* Facter.search: the lib/facter and plugins/facter folders of every module in each folder of
 * the modulepath (Ruby's Dir.glob, sorted), then the factpath; only existing folders. */
static void custom_dirs_of(const char *moddir, void *arg)
{
    list *out = arg;
    fsj_taint("facter's folders were searched"); /* (for facter, which taints anyway) */
    static const char *subs[] = {"/*/lib/facter", "/*/plugins/facter"};
    for (size_t s = 0; s < 2; s++) {
        char *pattern = cat3(moddir, subs[s], "");
        glob_t g;
        if (glob(pattern, GLOB_ONLYDIR, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++)
                if (path_is_dir(g.gl_pathv[i]))
                    push(out, cat3(g.gl_pathv[i], "", ""));
            globfree(&g);
        }
        free(pattern);
    }
}

static void add_if_dir(const char *dir, void *arg)
{
    if (path_is_dir(dir))
        push(arg, cat3(dir, "", ""));
}

/* Puppet::Module.is_module_directory_name?: /^[a-z][a-z0-9_]*$/ */
static bool module_name_ok(const char *s)
{
    if (!(*s >= 'a' && *s <= 'z'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
    list *seen;    /* module names met so far: the first folder of the modulepath wins */
    list *out;     /* the external fact folders */
} ext_walk;

/* Facter.search_external: the facts.d of every module of the environment (the first module of
 * a name along the modulepath) that has one. */
static void external_dirs_of(const char *moddir, void *arg)
{
    ext_walk *w = arg;
    DIR *d = fs_opendir(moddir);
    if (!d)
        return;
    list names = {0};
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!module_name_ok(de->d_name))
            continue;
        char *p = cat3(moddir, "/", de->d_name);
        if (path_is_dir(p))
            push(&names, cat3(de->d_name, "", ""));
        free(p);
    }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        if (has(w->seen, names.v[i]))
            continue;
        push(w->seen, cat3(names.v[i], "", ""));
        char *fd = cat3(moddir, "/", names.v[i]);
        char *facts_d = cat3(fd, "/facts.d", "");
        free(fd);
        if (path_is_dir(facts_d))
            push(w->out, facts_d);
        else
            free(facts_d);
    }
    list_free(&names);
}

/* ------------------------------------------------------------------ running facter */

/* `facter --json --show-legacy` with the folders Puppet gives Facter: the facts as a hash, or
 * NULL after printing why. Facter's own messages (errors it logs while resolving facts) go to
 * stderr as they do under Puppet; Facter then exits 1, but its facts are used, as Puppet uses
 * them. */
static hiera_value *run_facter(const cli_facts_request *r, const char *vardir)
{
    list custom = {0}, external = {0}, seen = {0}, argv = {0};
    each_entry(r->modulepath, custom_dirs_of, &custom);
    char *factpath = cat3(vardir, "/lib/facter:", vardir);
    char *fp2 = cat3(factpath, "/facts", "");
    free(factpath);
    each_entry(fp2, add_if_dir, &custom); /* Puppet's factpath default: $vardir/lib/facter:$vardir/facts */
    free(fp2);
    ext_walk w = {&seen, &external};
    each_entry(r->modulepath, external_dirs_of, &w);
    char *pluginfactdest = cat3(vardir, "/facts.d", "");
    add_if_dir(pluginfactdest, &external);
    free(pluginfactdest);

    push(&argv, cat3("facter", "", ""));
    push(&argv, cat3("--json", "", ""));
    push(&argv, cat3("--show-legacy", "", ""));
    for (size_t i = 0; i < custom.n; i++) {
        push(&argv, cat3("--custom-dir", "", ""));
        push(&argv, cat3(custom.v[i], "", ""));
    }
    for (size_t i = 0; i < external.n; i++) {
        push(&argv, cat3("--external-dir", "", ""));
        push(&argv, cat3(external.v[i], "", ""));
    }
    push(&argv, NULL);
    argv.n--;

    hiera_value *facts = NULL;
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    bool fa_ok = false;
    pid_t pid = -1;
    char *out = NULL;
    size_t len = 0, cap = 0;
    if (pipe(fds) != 0) {
        say("cannot run facter: %s%s", strerror(errno), "");
        goto done;
    }
    fa_ok = posix_spawn_file_actions_init(&fa) == 0 && posix_spawn_file_actions_adddup2(&fa, fds[1], 1) == 0 &&
            posix_spawn_file_actions_addclose(&fa, fds[0]) == 0 && posix_spawn_file_actions_addclose(&fa, fds[1]) == 0;
    if (!fa_ok) {
        say("cannot run facter: %s%s", strerror(errno), "");
        goto done;
    }
    fsj_taint("facter was run");
    int rc = posix_spawnp(&pid, "facter", &fa, NULL, argv.v, environ);
    close(fds[1]);
    fds[1] = -1;
    if (rc != 0) {
        pid = -1;
        if (rc == ENOENT)
            say("%s%s",
                "facter is not installed (no `facter` command on PATH). Without --node, puppet lookup takes the "
                "local machine's facts from Facter: install it (Debian package facter), or name a node with "
                "--node NODE (its facts from Puppet's facts cache or --facts FILE)",
                "");
        else
            say("cannot run facter: %s%s", strerror(rc), "");
        goto done;
    }
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 262144;
            char *n = realloc(out, cap + 1);
            if (!n) {
                fputs("hiera: out of memory\n", stderr);
                exit(1);
            }
            out = n;
        }
        ssize_t got = read(fds[0], out + len, cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        char sig[16];
        snprintf(sig, sizeof sig, "%d", WTERMSIG(status));
        say("facter was killed by signal %s%s", sig, "");
        goto done;
    }
    out = out ? out : xalloc(1);
    out[len] = 0;
    hiera_error err = {0};
    facts = len && strlen(out) == len ? hiera_value_from_json(out, &err) : NULL;
    if (!facts || hiera_value_kind(facts) != HIERA_HASH) {
        char st[16];
        snprintf(st, sizeof st, "%d", WEXITSTATUS(status));
        say("facter --json gave no facts (exit status %s)%s", st,
            len ? ": its output is not a JSON object" : ": it printed nothing");
        hiera_value_decref(facts);
        facts = NULL;
    }
    hiera_error_clear(&err);
done:
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    free(out);
    list_free(&custom);
    list_free(&external);
    list_free(&seen);
    list_free(&argv);
    return facts;
}

/* Puppet::Settings.default_certname: Facter's hostname and domain, without a final dot,
 * downcased. malloc'ed, or NULL when Facter gave no hostname. */
static char *default_certname(const hiera_value *facts)
{
    const hiera_value *h = hiera_value_hash_get(facts, "hostname"), *d = hiera_value_hash_get(facts, "domain");
    if (hiera_value_kind(h) != HIERA_STRING) {
        const hiera_value *net = hiera_value_hash_get(facts, "networking");
        h = net ? hiera_value_hash_get(net, "hostname") : NULL;
        d = net ? hiera_value_hash_get(net, "domain") : NULL;
    }
    if (hiera_value_kind(h) != HIERA_STRING)
        return NULL;
    const char *ds = hiera_value_kind(d) == HIERA_STRING ? hiera_value_string(d) : "";
    char *name = *ds ? cat3(hiera_value_string(h), ".", ds) : cat3(hiera_value_string(h), "", "");
    size_t n = strlen(name);
    while (n && name[n - 1] == '.') /* gsub(/\.$/, '') */
        name[--n] = 0;
    for (char *p = name; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return name;
}

/* The local machine's facts as Puppet's facter terminus makes them; NULL after printing why. */
static hiera_value *local_facts(const cli_facts_request *r, const char *vardir, char **certname)
{
    hiera_value *facts = run_facter(r, vardir);
    if (!facts)
        return NULL;
    *certname = r->certname ? cat3(r->certname, "", "") : default_certname(facts);
    if (!*certname) {
        say("%s%s", "cannot tell the certname: Facter gave no hostname (give --certname NAME or --node NODE)", "");
        hiera_value_decref(facts);
        return NULL;
    }
    /* Puppet.initialize_facts, then Puppet::Node::Facts#add_local_facts */
    hiera_value_hash_set(facts, "puppetversion", hiera_value_new_string(CLI_PUPPET_VERSION));
    if (r->cli_environment)
        hiera_value_hash_set(facts, "agent_specified_environment", hiera_value_new_string(r->cli_environment));
    hiera_value_hash_set(facts, "clientcert", hiera_value_new_string(*certname));
    hiera_value_hash_set(facts, "clientversion", hiera_value_new_string(CLI_PUPPET_VERSION));
    hiera_value_hash_set(facts, "clientnoop", hiera_value_new_bool(false));
    return facts;
}

/* ------------------------------------------------------------------ gathering */

int cli_facts_gather(const cli_facts_request *r, cli_node_facts *out)
{
    memset(out, 0, sizeof *out);
    if (r->certname) {
        for (const char *p = r->certname; *p; p++)
            if (*p >= 'A' && *p <= 'Z') {
                fputs("Error: Could not initialize global default settings: Certificate names must be lower case\n", stderr);
                return 1;
            }
    }
    hiera_error err = {0};
    if (r->facts_file) {
        out->given = r->cache ? hiera_cache_load_value_file(r->cache, r->facts_file, &err)
                              : hiera_value_load_file(r->facts_file, &err);
        if (!out->given) {
            say("%s%s", err.message ? err.message : "cannot read the facts file", "");
            goto fail;
        }
        if (hiera_facts_check_given(out->given, r->facts_file, &err) != HIERA_OK) {
            say("%s%s", err.message, "");
            goto fail;
        }
    }
    char *vardir = r->vardir ? cat3(r->vardir, "", "") : cli_default_vardir();
    if (r->node) {
        out->node = cat3(r->node, "", "");
        bool use_yaml = true;
        if (r->route && cli_facts_route_find(r->route, r->pdb, r->node, &use_yaml, &out->base)) {
            free(vardir);
            goto fail;
        }
        char *yamldir = r->yamldir ? cat3(r->yamldir, "", "") : cat3(vardir, "/yaml", "");
        hiera_status st = use_yaml ? hiera_facts_cached(yamldir, r->node, &out->base, &err) : HIERA_OK;
        free(yamldir);
        if (st == HIERA_ERROR) {
            if (err.message && strcmp(err.message, "invalid key") == 0) {
                /* Puppet::Indirector::Yaml#path logs this before refusing the name */
                fputs("Critical: directory traversal detected in Puppet::Node::Facts::Yaml: ", stderr);
                hiera_value *n = hiera_value_new_string(r->node);
                hiera_error rerr = {0};
                char *q = hiera_render(n, HIERA_RENDER_JSON, &rerr);
                fprintf(stderr, "%s\n", q ? q : r->node);
                free(q);
                hiera_error_clear(&rerr);
                hiera_value_decref(n);
            }
            say("%s%s", err.message ? err.message : "cannot read the facts cache", "");
            free(vardir);
            goto fail;
        }
    } else {
        out->base = local_facts(r, vardir, &out->node);
        if (!out->base) {
            free(vardir);
            goto fail;
        }
    }
    free(vardir);
    if (hiera_value_hash_size(out->base) == 0 && hiera_value_hash_size(out->given) == 0) {
        say("No facts available for target node: %s%s", out->node, "");
        goto fail;
    }
    hiera_error_clear(&err);
    return 0;
fail:
    hiera_error_clear(&err);
    cli_node_facts_free(out);
    return 1;
}

void cli_node_facts_free(cli_node_facts *f)
{
    free(f->node);
    hiera_value_decref(f->base);
    hiera_value_decref(f->given);
    memset(f, 0, sizeof *f);
}

hiera_value *cli_load_trusted(const char *path)
{
    hiera_error err = {0};
    hiera_value *t = hiera_value_load_file(path, &err);
    if (!t)
        say("%s%s", err.message ? err.message : "cannot read the trusted data file", "");
    hiera_error_clear(&err);
    return t;
}

int cli_node_facts_get(const hiera_settings *settings, const hiera_environment *env, const char *node,
                       const char *facts_file, const cli_pdb_args *pdb_args, hiera_cache *cache, cli_node_facts *out)
{
    cli_facts_settings fs;
    cli_facts_settings_get(settings, env, &fs);
    cli_puppet_settings ps;
    cli_puppet_settings_get(settings, &ps);
    cli_facts_route route = {0};
    cli_pdb_config pc = {0};
    int failed = 0;
    if (!node && cli_pdb_wanted(pdb_args)) {
        say("%s%s", "--puppetdb and --from-puppetdb go with --node (the node whose facts PuppetDB gives)", "");
        failed = 1;
    } else if (node && cli_pdb_wanted(pdb_args)) {
        /* --puppetdb, --from-puppetdb: PuppetDB is the facts terminus */
        route.terminus = strdup("puppetdb");
        failed = route.terminus && cli_pdb_config_get(pdb_args, &ps, &pc) ? 0 : 1;
    } else if (node) {
        failed = cli_facts_route_get(&ps, &route) &&
                         (!cli_facts_route_uses_puppetdb(&route) || cli_pdb_config_get(pdb_args, &ps, &pc))
                     ? 0
                     : 1;
    }
    if (!failed) {
        cli_facts_request fr = {node, facts_file, fs.vardir, fs.yamldir, fs.certname, fs.environment,
                                node ? NULL : fs.modulepath, node ? &route : NULL, &pc.c, cache};
        failed = cli_facts_gather(&fr, out);
    }
    cli_facts_route_free(&route);
    cli_pdb_config_free(&pc);
    cli_puppet_settings_free(&ps);
    cli_facts_settings_free(&fs);
    return failed;
}
