/* facts.c - a node's facts as `puppet lookup` 7.23 finds them (lib/puppet/application/lookup.rb,
 * generate_scope and retrieve_node_facts):
 *  - --facts FILE is read and checked first;
 *  - with --node NODE the node's facts come from the facts terminus, which `puppet lookup` sets
 *    to yaml: the YAML facts cache <yamldir>/facts/NODE.yaml (hiera_facts_cached); no file means
 *    no facts;
 *  - without --node the node is the certname and its facts come from Facter
 *    (lib/puppet/indirector/facts/facter.rb): Puppet calls Facter in its own process; here the
 *    `facter` command is run with the same facts asked for (legacy facts included when Puppet's
 *    include_legacy_facts setting is true: Puppet 7's default, not 8's) and the same custom and
 *    external fact folders, then the
 *    facts Puppet adds itself (puppetversion, agent_specified_environment, clientcert,
 *    clientversion, clientnoop) are added;
 *  - the file's facts go over those, and no facts at all is "No facts available for target
 *    node: NODE". */
#include "facts/facts.h"
#include "facts/factsrc.h"
#include "base/error.h"
#include "base/fileio.h"
#include "base/fsjournal.h"
#include "base/rubyver.h"
#include "base/util.h"

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

static char *cat3(const char *a, const char *b, const char *c) { return xjoin(a, b, c, NULL); }

/* Puppet's vardir on this machine: /var/cache/puppet as root (the Debian package's layout), else
 * ~/.puppet/cache. malloc'ed. */
static char *default_vardir(void)
{
    /* lib/puppet/util/run_mode.rb (UnixRunMode#var_dir, as Debian ships it) */
    if (geteuid() == 0)
        return cat3("/var/cache/puppet", "", "");
    const char *home = fs_getenv("HOME");
    return cat3(home ? home : "", "/.puppet/cache", "");
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
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
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
            char *e = xmalloc(n + 1);
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

/* `facter --json [--show-legacy]` with the folders Puppet gives Facter (modulepath: the
 * environment's module folders, ':'-separated; legacy: the legacy facts too): the facts as a hash,
 * or NULL with err. Facter's own messages (errors it logs while resolving facts) go to the
 * process's standard error as they do under Puppet; Facter then exits 1, but its facts are used,
 * as Puppet uses them. */
static hiera_value *run_facter(const char *modulepath, const char *vardir, bool legacy, herr *err)
{
    list custom = {0}, external = {0}, seen = {0}, argv = {0};
    each_entry(modulepath, custom_dirs_of, &custom);
    char *factpath = cat3(vardir, "/lib/facter:", vardir);
    char *fp2 = cat3(factpath, "/facts", "");
    free(factpath);
    each_entry(fp2, add_if_dir, &custom); /* Puppet's factpath default: $vardir/lib/facter:$vardir/facts */
    free(fp2);
    ext_walk w = {&seen, &external};
    each_entry(modulepath, external_dirs_of, &w);
    char *pluginfactdest = cat3(vardir, "/facts.d", "");
    add_if_dir(pluginfactdest, &external);
    free(pluginfactdest);

    push(&argv, cat3("facter", "", ""));
    push(&argv, cat3("--json", "", ""));
    if (legacy)
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
        herr_set(err, HERR_ERROR, "cannot run facter: %s", ERRNO_TEXT(errno));
        goto done;
    }
    fa_ok = posix_spawn_file_actions_init(&fa) == 0 && posix_spawn_file_actions_adddup2(&fa, fds[1], 1) == 0 &&
            posix_spawn_file_actions_addclose(&fa, fds[0]) == 0 && posix_spawn_file_actions_addclose(&fa, fds[1]) == 0;
    if (!fa_ok) {
        herr_set(err, HERR_ERROR, "cannot run facter: %s", ERRNO_TEXT(errno));
        goto done;
    }
    fsj_taint("facter was run");
    int rc = posix_spawnp(&pid, "facter", &fa, NULL, argv.v, environ);
    close(fds[1]);
    fds[1] = -1;
    if (rc != 0) {
        pid = -1;
        if (rc == ENOENT)
            herr_set(err, HERR_ERROR, "%s",
                     "facter is not installed (no `facter` command on PATH). Without --node, puppet lookup takes the "
                     "local machine's facts from Facter: install it (Debian package facter), or name a node with "
                     "--node NODE (its facts from Puppet's facts cache or --facts FILE)");
        else
            herr_set(err, HERR_ERROR, "cannot run facter: %s", ERRNO_TEXT(rc));
        goto done;
    }
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 262144;
            out = xrealloc(out, cap + 1);
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
        herr_set(err, HERR_ERROR, "facter was killed by signal %d", WTERMSIG(status));
        goto done;
    }
    out = out ? out : xmalloc(1);
    out[len] = 0;
    hiera_error jerr = {0};
    facts = len && strlen(out) == len ? hiera_value_from_json(out, &jerr) : NULL;
    if (!facts || hiera_value_kind(facts) != HIERA_HASH) {
        herr_set(err, HERR_ERROR, "facter --json gave no facts (exit status %d)%s", WEXITSTATUS(status),
                 len ? ": its output is not a JSON object" : ": it printed nothing");
        hiera_value_decref(facts);
        facts = NULL;
    }
    hiera_error_clear(&jerr);
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

/* What Puppet's settings say about where a node's facts come from: the vardir and yamldir, the
 * certname when the command line or puppet.conf gives it (else NULL: Facter's), the environment
 * given on the command line or in puppet.conf's [agent] or [main] (the agent_specified_environment
 * fact), the environment's modulepath (':'-joined), the Puppet version the settings answer as
 * (the puppetversion and clientversion facts) and whether Facter gives its legacy facts too
 * (Puppet's include_legacy_facts: true in Puppet 7, false in 8). */
typedef struct {
    char *vardir, *yamldir, *certname, *environment, *modulepath;
    const char *puppet_version;
    bool legacy_facts;
} facts_settings;

static void facts_settings_get(const hiera_settings *s, const hiera_environment *env, facts_settings *out)
{
    memset(out, 0, sizeof *out);
    out->vardir = hiera_settings_get(s, "vardir", NULL);
    out->yamldir = hiera_settings_get(s, "yamldir", NULL);
    static const char *const certname_from[] = {"cli", "server", "master", "main"};
    for (size_t i = 0; i < 4 && !out->certname; i++) {
        char *given = hiera_settings_given(s, "certname", certname_from[i]);
        if (given)
            out->certname = hiera_settings_get(s, "certname", NULL);
        free(given);
    }
    static const char *const env_from[] = {"cli", "agent", "main"};
    for (size_t i = 0; i < 3 && !out->environment; i++)
        out->environment = hiera_settings_given(s, "environment", env_from[i]);
    sbuf mp = {0};
    size_t n = env ? hiera_environment_modulepath_count(env) : 0;
    for (size_t i = 0; i < n; i++)
        sb_addf(&mp, "%s%s", i ? ":" : "", hiera_environment_modulepath(env, i));
    out->modulepath = sb_take(&mp);
    out->puppet_version = hiera_settings_puppet_version(s) == HIERA_PUPPET_8 ? CLI_PUPPET8_VERSION : CLI_PUPPET_VERSION;
    char *legacy = hiera_settings_get(s, "include_legacy_facts", NULL);
    out->legacy_facts = !legacy || strcmp(legacy, "false") != 0;
    free(legacy);
}

static void facts_settings_free(facts_settings *f)
{
    free(f->vardir);
    free(f->yamldir);
    free(f->certname);
    free(f->environment);
    free(f->modulepath);
    memset(f, 0, sizeof *f);
}

/* The local machine's facts as Puppet's facter terminus makes them; NULL with err. */
static hiera_value *local_facts(const facts_settings *fs, const char *vardir, char **certname, herr *err)
{
    hiera_value *facts = run_facter(fs->modulepath, vardir, fs->legacy_facts, err);
    if (!facts)
        return NULL;
    *certname = fs->certname ? xstrdup(fs->certname) : default_certname(facts);
    if (!*certname) {
        herr_set(err, HERR_ERROR, "%s",
                 "cannot tell the certname: Facter gave no hostname (give --certname NAME or --node NODE)");
        hiera_value_decref(facts);
        return NULL;
    }
    /* Puppet.initialize_facts, then Puppet::Node::Facts#add_local_facts */
    hiera_value_hash_set(facts, "puppetversion", hiera_value_new_string(fs->puppet_version));
    if (fs->environment)
        hiera_value_hash_set(facts, "agent_specified_environment", hiera_value_new_string(fs->environment));
    hiera_value_hash_set(facts, "clientcert", hiera_value_new_string(*certname));
    hiera_value_hash_set(facts, "clientversion", hiera_value_new_string(fs->puppet_version));
    hiera_value_hash_set(facts, "clientnoop", hiera_value_new_bool(false));
    return facts;
}

/* ------------------------------------------------------------------ gathering */

typedef struct {
    hiera_diagnostic_fn fn;
    void *data;
} diag_to;

static void pdb_warning(const char *code, const char *message, void *data)
{
    const diag_to *d = data;
    facts_diag(d->fn, d->data, HIERA_DIAG_WARNING, code, "%s", message);
}

/* Where the node's facts are taken from: Puppet's route for the facts indirection (PuppetDB when
 * o->puppetdb says so), with PuppetDB's client configured when the route asks it. */
typedef struct {
    puppet_facts_settings ps;
    facts_route route;
    pdb_setup setup;
    hiera_puppetdb_options pdb;
    diag_to dt;
} facts_plan;

static bool plan_prepare(const hiera_node_facts_options *o, facts_plan *p, herr *err)
{
    memset(p, 0, sizeof *p);
    options_take(&p->pdb, sizeof p->pdb, o->puppetdb); /* (the caller's struct in this version's layout) */
    /* PuppetDB's warnings: to its options' callback, else to the call's */
    p->dt = (diag_to){p->pdb.diagnostics ? p->pdb.diagnostics : o->diagnostics,
                      p->pdb.diagnostics ? p->pdb.diagnostics_data : o->diagnostics_data};
    if (!puppet_facts_settings_get(o->settings, &p->ps, err))
        return false;
    bool ok;
    if (o->puppetdb) {
        /* --puppetdb, --from-puppetdb: PuppetDB is the facts terminus */
        p->route.terminus = xstrdup("puppetdb");
        ok = pdb_setup_get(&p->pdb, &p->ps, &p->setup, err);
    } else {
        ok = facts_route_get(&p->ps, &p->route, o->diagnostics, o->diagnostics_data, err) &&
             (!facts_route_uses_puppetdb(&p->route) || pdb_setup_get(&p->pdb, &p->ps, &p->setup, err));
    }
    p->setup.c.warn = pdb_warning;
    p->setup.c.warn_data = &p->dt;
    return ok;
}

static void plan_free(facts_plan *p)
{
    facts_route_free(&p->route);
    pdb_setup_free(&p->setup);
    puppet_facts_settings_free(&p->ps);
}

static hiera_status gather(const hiera_node_facts_options *o, hiera_node_facts *out, herr *err)
{
    if (!o->settings || !o->env) {
        herr_set(err, HERR_ERROR, "hiera_node_facts_find: the settings and the environment are needed");
        return HIERA_ERROR;
    }
    facts_settings fs;
    facts_settings_get(o->settings, o->env, &fs);
    hiera_status st = HIERA_ERROR;
    char *vardir = NULL;
    /* with a node, Puppet's facts indirection is configured first (routes.yaml, PuppetDB) */
    facts_plan plan;
    bool planned = o->node != NULL;
    if (planned && !plan_prepare(o, &plan, err))
        goto out;
    if (fs.certname) {
        for (const char *p = fs.certname; *p; p++)
            if (*p >= 'A' && *p <= 'Z') {
                herr_set(err, HERR_PUPPET, "Could not initialize global default settings: Certificate names must be lower case");
                goto out;
            }
    }
    if (o->facts_file) {
        hiera_error e = {0};
        out->given = o->cache ? hiera_cache_load_value_file(o->cache, o->facts_file, &e)
                              : hiera_value_load_file(o->facts_file, &e);
        if (!out->given || hiera_facts_check_given(out->given, o->facts_file, &e) != HIERA_OK) {
            herr_set(err, HERR_ERROR, "%s", e.message ? e.message : "cannot read the facts file");
            if (e.file)
                herr_at(err, e.file, e.line, e.column);
            hiera_error_clear(&e);
            goto out;
        }
        out->path = xstrdup(o->facts_file);
    }
    vardir = fs.vardir ? xstrdup(fs.vardir) : default_vardir();
    if (o->node) {
        out->node = xstrdup(o->node);
        bool use_yaml = true;
        if (!facts_route_find(&plan.route, &plan.setup.c, o->node, &use_yaml, &out->base, o->diagnostics,
                              o->diagnostics_data, err))
            goto out;
        char *yamldir = fs.yamldir ? xstrdup(fs.yamldir) : cat3(vardir, "/yaml", "");
        hiera_error e = {0};
        hiera_status cst = use_yaml ? hiera_facts_cached(yamldir, o->node, &out->base, &e) : HIERA_OK;
        free(yamldir);
        if (cst == HIERA_ERROR) {
            if (e.message && strcmp(e.message, "invalid key") == 0) {
                /* Puppet::Indirector::Yaml#path logs this before refusing the name */
                hiera_value *n = hiera_value_new_string(o->node);
                hiera_error re = {0};
                char *q = hiera_render(n, HIERA_RENDER_JSON, &re);
                facts_diag(o->diagnostics, o->diagnostics_data, HIERA_DIAG_CRITICAL, "facts-directory-traversal",
                           "directory traversal detected in Puppet::Node::Facts::Yaml: %s", q ? q : o->node);
                free(q);
                hiera_error_clear(&re);
                hiera_value_decref(n);
            }
            herr_set(err, HERR_ERROR, "%s", e.message ? e.message : "cannot read the facts cache");
            if (e.file)
                herr_at(err, e.file, e.line, e.column);
            hiera_error_clear(&e);
            goto out;
        }
    } else {
        out->base = local_facts(&fs, vardir, &out->node, err);
        if (!out->base)
            goto out;
    }
    if (hiera_value_hash_size(out->base) == 0 && hiera_value_hash_size(out->given) == 0) {
        herr_set(err, HERR_ERROR, "No facts available for target node: %s", out->node);
        goto out;
    }
    st = HIERA_OK;
out:
    if (planned)
        plan_free(&plan);
    free(vardir);
    facts_settings_free(&fs);
    return st;
}

hiera_status hiera_node_facts_find(const hiera_node_facts_options *given, hiera_node_facts *out, hiera_error *err)
{
    hiera_node_facts_options o;
    options_take(&o, sizeof o, given);
    memset(out, 0, sizeof *out);
    herr e = {0};
    /* (the files read word their errors as the settings' Puppet, as a context's calls do) */
    ruby_ver was = rubyver_enter(o.settings && hiera_settings_puppet_version(o.settings) == HIERA_PUPPET_8 ? RUBY_33 : RUBY_31);
    hiera_status st = gather(&o, out, &e);
    rubyver_leave(was);
    if (st == HIERA_OK)
        return st;
    hiera_node_facts_clear(out);
    bool config = e.kind == HERR_PUPPET; /* (Puppet's set-up refused: see the header) */
    herr_to_public(err, &e);
    if (err && config)
        err->kind = HIERA_ERR_CONFIG;
    return HIERA_ERROR;
}
