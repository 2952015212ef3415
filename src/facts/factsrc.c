/* factsrc.c - the node set and the facts of nodes, from a folder or from PuppetDB (factsrc.h). */
#include "facts/factsrc.h"
#include "base/fsjournal.h"

#include "base/util.h"
#include "base/value.h"
#include "formats/psych.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PAGE 50
#define MAX_FAILED_PAGES 3

/* ------------------------------------------------------------------ Puppet's settings */

/* A setting's value as `puppet lookup` resolves it, or NULL */
static char *setting(const hiera_settings *s, const char *name)
{
    hiera_error err = {0};
    char *v = hiera_settings_get(s, name, &err);
    hiera_error_clear(&err);
    return v;
}

void cli_puppet_settings_get(const hiera_settings *s, cli_puppet_settings *out)
{
    memset(out, 0, sizeof *out);
    out->hs = s;
    out->confdir = setting(s, "confdir");
    out->localcacert = setting(s, "localcacert");
    out->hostcrl = setting(s, "hostcrl");
    char *rev = setting(s, "certificate_revocation");
    out->crl_check = !rev || strcmp(rev, "false") != 0;
    free(rev);
    /* the lookup application's default is yaml (Puppet::Application::Lookup#app_defaults): the
     * setting counts where it is given, on the command line or in puppet.conf's sections */
    static const char *const where[] = {"cli", "server", "master", "main"};
    for (size_t i = 0; i < 4 && !out->facts_terminus; i++) {
        char *given = hiera_settings_given(s, "facts_terminus", where[i]);
        if (given)
            out->facts_terminus = setting(s, "facts_terminus");
        free(given);
    }
    if (!out->facts_terminus)
        out->facts_terminus = xstrdup("yaml");
    char *sc = setting(s, "storeconfigs");
    out->storeconfigs = sc && !strcmp(sc, "true");
    free(sc);
    out->storeconfigs_backend = setting(s, "storeconfigs_backend");
    if (!out->storeconfigs_backend)
        out->storeconfigs_backend = xstrdup("puppetdb");
    out->route_file = setting(s, "route_file");
    char *t = setting(s, "http_connect_timeout");
    long secs = t ? strtol(t, NULL, 10) : 0;
    out->http_connect_timeout = secs > 0 && secs < 86400 ? (int)secs : 120;
    free(t);
}

/* hostcert and hostprivkey ($certdir/$certname.pem, $privatekeydir/$certname.pem) */
static void ssl_paths(cli_puppet_settings *s)
{
    if (!s->hostcert)
        s->hostcert = setting(s->hs, "hostcert");
    if (!s->hostprivkey)
        s->hostprivkey = setting(s->hs, "hostprivkey");
}

void cli_puppet_settings_free(cli_puppet_settings *s)
{
    free(s->confdir);
    free(s->hostcert);
    free(s->hostprivkey);
    free(s->localcacert);
    free(s->hostcrl);
    free(s->facts_terminus);
    free(s->storeconfigs_backend);
    free(s->route_file);
    memset(s, 0, sizeof *s);
}

static const struct {
    const char *name;
    size_t off;
} PUPPET_SETTINGS[] = {
    {"confdir", offsetof(cli_puppet_settings_args, confdir)},
    {"ssldir", offsetof(cli_puppet_settings_args, ssldir)},
    {"certname", offsetof(cli_puppet_settings_args, certname)},
    {"hostcert", offsetof(cli_puppet_settings_args, hostcert)},
    {"hostprivkey", offsetof(cli_puppet_settings_args, hostprivkey)},
    {"localcacert", offsetof(cli_puppet_settings_args, localcacert)},
    {"hostcrl", offsetof(cli_puppet_settings_args, hostcrl)},
    {"certificate_revocation", offsetof(cli_puppet_settings_args, certificate_revocation)},
    {"facts_terminus", offsetof(cli_puppet_settings_args, facts_terminus)},
    {"storeconfigs", offsetof(cli_puppet_settings_args, storeconfigs)},
    {"storeconfigs_backend", offsetof(cli_puppet_settings_args, storeconfigs_backend)},
    {"route_file", offsetof(cli_puppet_settings_args, route_file)},
};
#define NPUPPET_SETTINGS (sizeof PUPPET_SETTINGS / sizeof *PUPPET_SETTINGS)

static bool flag_eq(const char *given, size_t len, const char *name);

int cli_puppet_settings_parse_arg(cli_puppet_settings_args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (arg[0] != '-' || arg[1] != '-')
        return 0;
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    for (size_t f = 1; f < NPUPPET_SETTINGS; f++) { /* (confdir: the command's own) */
        if (!flag_eq(name, nlen, PUPPET_SETTINGS[f].name))
            continue;
        const char *val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
        if (!val) {
            fprintf(stderr, "Error: Could not run: option '--%s' needs a value\n", PUPPET_SETTINGS[f].name);
            return -1;
        }
        *(const char **)((char *)a + PUPPET_SETTINGS[f].off) = val;
        return 1;
    }
    return 0;
}

size_t cli_puppet_settings_list(const cli_puppet_settings_args *a, hiera_setting *out)
{
    _Static_assert(NPUPPET_SETTINGS == CLI_PUPPET_SETTINGS_MAX, "one entry per setting");
    size_t n = 0;
    for (size_t f = 0; f < NPUPPET_SETTINGS; f++) {
        const char *v = *(const char *const *)((const char *)a + PUPPET_SETTINGS[f].off);
        if (v)
            out[n++] = (hiera_setting){PUPPET_SETTINGS[f].name, v};
    }
    return n;
}

/* puppet.conf's problems, as the commands print them (cli_print_diagnostic's words) */
static void settings_diag(const hiera_diagnostic *d, void *data)
{
    (void)data;
    fprintf(stderr, "%s: %s\n", d->severity == HIERA_DIAG_ERROR ? "Error" : "Warning", d->message);
}

hiera_settings *cli_puppet_settings_load(const cli_puppet_settings_args *a)
{
    hiera_setting cli[NPUPPET_SETTINGS];
    size_t n = cli_puppet_settings_list(a, cli);
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = n;
    so.diagnostics = settings_diag;
    hiera_error err = {0};
    hiera_settings *s = hiera_settings_load(&so, &err);
    if (!s)
        fprintf(stderr, "Error: Could not initialize global default settings: %s\n", err.message ? err.message : "");
    hiera_error_clear(&err);
    return s;
}

/* ------------------------------------------------------------------ the options */

bool cli_pdb_wanted(const cli_pdb_args *a)
{
    return a->puppetdb || a->from_puppetdb || a->nodes_query || a->include_inactive;
}

static bool flag_eq(const char *given, size_t len, const char *name)
{
    if (strlen(name) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char x = given[i] == '_' ? '-' : given[i], y = name[i] == '_' ? '-' : name[i];
        if (x != y)
            return false;
    }
    return true;
}

int cli_pdb_parse_arg(cli_pdb_args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (arg[0] != '-' || arg[1] != '-')
        return 0;
    const char *name = arg + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    static const struct {
        const char *name;
        size_t off;
    } values[] = {
        {"puppetdb", offsetof(cli_pdb_args, puppetdb)},   {"nodes-query", offsetof(cli_pdb_args, nodes_query)},
        {"cert", offsetof(cli_pdb_args, cert)},           {"key", offsetof(cli_pdb_args, key)},
        {"cacert", offsetof(cli_pdb_args, cacert)},       {"puppetdb-timeout", offsetof(cli_pdb_args, timeout)},
    };
    for (size_t f = 0; f < sizeof values / sizeof *values; f++) {
        if (!flag_eq(name, nlen, values[f].name))
            continue;
        const char *val = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
        if (!val) {
            fprintf(stderr, "Error: Could not run: option '--%s' needs a value\n", values[f].name);
            return -1;
        }
        *(const char **)((char *)a + values[f].off) = val;
        return 1;
    }
    if (flag_eq(name, nlen, "from-puppetdb") && !eq) {
        a->from_puppetdb = true;
        return 1;
    }
    if (flag_eq(name, nlen, "include-inactive") && !eq) {
        a->include_inactive = true;
        return 1;
    }
    return 0;
}

static bool readable(const char *path) { return path && fs_access(path, R_OK) == 0; }

bool cli_pdb_config_get(const cli_pdb_args *a, cli_puppet_settings *s, cli_pdb_config *out)
{
    memset(out, 0, sizeof *out);
    if (!a->cert || !a->key)
        ssl_paths(s);
    pdb_config *c = &out->c;
    bool direct = a->puppetdb && strstr(a->puppetdb, "://");
    if (direct) {
        c->urls = a->puppetdb;
        /* Puppet's certificate when it is there; the system's CAs when Puppet's CA is not */
        c->cert = a->cert ? a->cert : readable(s->hostcert) ? s->hostcert : NULL;
        c->key = a->key ? a->key : readable(s->hostprivkey) ? s->hostprivkey : NULL;
        c->cacert = a->cacert ? a->cacert : readable(s->localcacert) ? s->localcacert : NULL;
        c->crl = !a->cacert && s->crl_check && readable(s->hostcrl) ? s->hostcrl : NULL;
        c->crl_check = c->crl != NULL;
    } else {
        out->conf_path = a->puppetdb ? xstrdup(a->puppetdb) : xjoin(s->confdir, "/puppetdb.conf", NULL);
        c->conf_file = out->conf_path;
        c->cert = a->cert ? a->cert : s->hostcert;
        c->key = a->key ? a->key : s->hostprivkey;
        c->cacert = a->cacert ? a->cacert : s->localcacert;
        c->crl = s->hostcrl;
        c->crl_check = s->crl_check && !a->cacert;
    }
    if ((a->cert == NULL) != (a->key == NULL)) {
        fprintf(stderr, "Error: Could not run: --cert and --key go together\n");
        return false;
    }
    c->connect_timeout = s->http_connect_timeout;
    if (a->timeout) {
        char *end;
        errno = 0;
        long t = strtol(a->timeout, &end, 10);
        if (errno || end == a->timeout || *end || t < 1 || t > 86400) {
            fprintf(stderr, "Error: Could not run: --puppetdb-timeout takes seconds (1 to 86400), not '%s'\n", a->timeout);
            return false;
        }
        c->timeout = (int)t;
    }
    return true;
}

void cli_pdb_config_free(cli_pdb_config *c)
{
    free(c->conf_path);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ sources */

struct factsrc {
    char *dir; /* a folder, or NULL */
    pdb *db;   /* PuppetDB, or NULL */
    char *nodes_query;
    bool include_inactive;
    size_t page;
    char *description;
};

factsrc *factsrc_open_dir(const char *dir)
{
    struct stat st;
    if (fs_stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "Error: Could not run: cannot read the facts folder %s: %s\n", dir,
                fs_stat(dir, &st) != 0 ? ERRNO_TEXT(errno) : "not a folder");
        return NULL;
    }
    factsrc *s = xcalloc(1, sizeof *s);
    s->dir = xstrdup(dir);
    s->description = xasprintf("the facts folder %s", dir);
    return s;
}

factsrc *factsrc_open_puppetdb(const pdb_config *c, const char *nodes_query, bool include_inactive)
{
    char *err = NULL;
    pdb *db = pdb_open(c, &err);
    if (!db) {
        fprintf(stderr, "Error: Could not run: %s\n", err);
        free(err);
        return NULL;
    }
    factsrc *s = xcalloc(1, sizeof *s);
    s->db = db;
    s->nodes_query = nodes_query ? xstrdup(nodes_query) : NULL;
    s->include_inactive = include_inactive;
    s->page = DEFAULT_PAGE;
    s->description = xasprintf("PuppetDB at %s", pdb_servers(db));
    return s;
}

factsrc *cli_factsrc_open(const char *facts_dir, const cli_pdb_args *pa, const hiera_settings *hs,
                          pdb_warn_fn warn_fn, void *warn_data)
{
    bool want = cli_pdb_wanted(pa);
    if (want && facts_dir) {
        fprintf(stderr, "Error: Could not run: give either a facts folder or PuppetDB (--from-puppetdb, --puppetdb, "
                        "--nodes-query), not both\n");
        return NULL;
    }
    if (!want) {
        if (!facts_dir) {
            fprintf(stderr, "Error: Could not run: no nodes: give a facts folder or PuppetDB (--from-puppetdb, --puppetdb URL)\n");
            return NULL;
        }
        return factsrc_open_dir(facts_dir);
    }
    cli_puppet_settings ps;
    cli_puppet_settings_get(hs, &ps);
    cli_pdb_config pc;
    factsrc *s = NULL;
    if (cli_pdb_config_get(pa, &ps, &pc)) {
        pc.c.warn = warn_fn;
        pc.c.warn_data = warn_data;
        s = factsrc_open_puppetdb(&pc.c, pa->nodes_query, pa->include_inactive);
    }
    cli_pdb_config_free(&pc);
    cli_puppet_settings_free(&ps);
    return s;
}

void factsrc_free(factsrc *s)
{
    if (!s)
        return;
    pdb_close(s->db);
    free(s->dir);
    free(s->nodes_query);
    free(s->description);
    free(s);
}

const char *factsrc_describe(const factsrc *s) { return s->description; }

void factsrc_set_page_size(factsrc *s, size_t n) { s->page = n ? n : DEFAULT_PAGE; }

void factsrc_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void factsrc_node_free(factsrc_node *n)
{
    hiera_value_decref(n->facts);
    free(n->msg);
    free(n->path);
    memset(n, 0, sizeof *n);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static const char *const FACT_EXTS[] = {".yaml", ".yml", ".json"};

static size_t facts_name_len(const char *file)
{
    for (size_t i = 0; i < 3; i++)
        if (ends_with(file, FACT_EXTS[i]))
            return strlen(file) - strlen(FACT_EXTS[i]);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool list_dir(const char *dir, char ***names, size_t *n, char **err)
{
    DIR *d = fs_opendir(dir);
    if (!d) {
        *err = xasprintf("cannot read the facts folder %s: %s", dir, ERRNO_TEXT(errno));
        return false;
    }
    char **v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t nl = de->d_name[0] == '.' ? 0 : facts_name_len(de->d_name);
        if (!nl)
            continue;
        char *path = xjoin(dir, "/", de->d_name, NULL);
        struct stat st;
        bool file = fs_stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!file)
            continue;
        if (len == cap) {
            cap = cap ? cap * 2 : 64;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[len++] = xstrndup(de->d_name, nl);
    }
    closedir(d);
    if (len)
        qsort(v, len, sizeof *v, cmp_str);
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
        if (j && !strcmp(v[j - 1], v[i]))
            free(v[i]);
        else
            v[j++] = v[i];
    }
    *names = v;
    *n = j;
    return true;
}

bool factsrc_list(factsrc *s, char ***names, size_t *n, char **err)
{
    *names = NULL;
    *n = 0;
    *err = NULL;
    if (s->dir)
        return list_dir(s->dir, names, n, err);
    char *e = NULL;
    pdb_status st = pdb_list_nodes(s->db, s->nodes_query, s->include_inactive, names, n, &e);
    if (st == PDB_OK)
        return true;
    *err = xasprintf("cannot list the nodes of PuppetDB: %s", e ? e : "unknown error");
    free(e);
    return false;
}

static char *no_facts(const char *name) { return xasprintf("No facts available for target node: %s", name); }

/* A node's file in a folder: NAME.yaml, .yml or .json (two of them: refused, as hiera batch does). */
static void get_from_dir(factsrc *s, const char *name, hiera_cache *c, factsrc_node *out)
{
    char *found = NULL;
    for (size_t i = 0; i < 3; i++) {
        char *p = xjoin(s->dir, "/", name, FACT_EXTS[i], NULL);
        struct stat st;
        if (fs_stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            if (found) {
                out->msg = xasprintf("more than one facts file for this node: %s and %s", found, p);
                free(p);
                free(found);
                return;
            }
            found = p;
        } else {
            free(p);
        }
    }
    if (!found || strchr(name, '/') || name[0] == '.') {
        free(found);
        out->msg = no_facts(name);
        return;
    }
    out->path = found;
    hiera_error err = {0};
    int kind = HIERA_FACTS_FILE;
    out->facts = hiera_facts_load(c, found, name, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &err);
    if (!out->facts) {
        out->msg = xstrdup(err.message && *err.message ? err.message : "cannot read the facts file");
    } else if (hiera_value_kind(out->facts) != HIERA_HASH) {
        out->msg = xasprintf("Incorrectly formatted data in %s given via the --facts flag (only accepts yaml and json files)",
                             found);
    } else if (hiera_value_hash_size(out->facts) == 0) {
        out->msg = no_facts(name);
    }
    out->stored = kind == HIERA_FACTS_CACHE;
    if (out->msg) {
        hiera_value_decref(out->facts);
        out->facts = NULL;
    }
    hiera_error_clear(&err);
}

void factsrc_get(factsrc *s, const char *name, hiera_cache *c, factsrc_node *out)
{
    memset(out, 0, sizeof *out);
    if (s->dir) {
        get_from_dir(s, name, c, out);
        return;
    }
    char *e = NULL;
    hiera_value *f = NULL;
    pdb_status st = pdb_node_facts(s->db, name, &f, &e);
    if (st == PDB_ERROR) {
        out->msg = xasprintf("Failed to find facts from PuppetDB at  %s", e);
    } else if (st == PDB_NOT_FOUND || hiera_value_hash_size(f) == 0) {
        out->msg = no_facts(name);
    } else {
        out->facts = f;
        out->stored = true;
        f = NULL;
    }
    hiera_value_decref(f);
    free(e);
}

/* ------------------------------------------------------------------ readers */

struct factsrc_reader {
    factsrc *s;
    hiera_cache *cache;
    const char *const *names;
    size_t n, next;
    /* PuppetDB: the page being handed out */
    size_t page_lo, page_hi;
    hv *page;        /* certname -> facts */
    char *page_err;  /* why the page could not be fetched */
    int failed_pages;
    char *gave_up;   /* after MAX_FAILED_PAGES in a row: the message for the rest */
};

factsrc_reader *factsrc_reader_new(factsrc *s, const char *const *names, size_t n, hiera_cache *c)
{
    factsrc_reader *r = xcalloc(1, sizeof *r);
    r->s = s;
    r->cache = c;
    r->names = names;
    r->n = n;
    return r;
}

void factsrc_reader_free(factsrc_reader *r)
{
    if (!r)
        return;
    hv_decref(r->page);
    free(r->page_err);
    free(r->gave_up);
    free(r);
}

static void page_got(const char *certname, hiera_value *facts, void *data)
{
    factsrc_reader *r = data;
    if (!certname) {
        hv_decref(r->page);
        r->page = hv_hash();
        return;
    }
    hv_hash_sets(r->page, certname, hv_incref((hv *)facts));
}

static void fetch_page(factsrc_reader *r)
{
    hv_decref(r->page);
    r->page = hv_hash();
    free(r->page_err);
    r->page_err = NULL;
    r->page_lo = r->next;
    r->page_hi = r->next + r->s->page < r->n ? r->next + r->s->page : r->n;
    if (r->gave_up)
        return;
    char *e = NULL;
    pdb_status st = pdb_facts_of(r->s->db, r->names + r->page_lo, r->page_hi - r->page_lo, page_got, r, &e);
    if (st == PDB_OK) {
        r->failed_pages = 0;
        free(e);
        return;
    }
    r->page_err = xasprintf("cannot fetch the facts from PuppetDB: %s", e ? e : "unknown error");
    free(e);
    if (++r->failed_pages >= MAX_FAILED_PAGES && r->page_hi < r->n)
        r->gave_up = xasprintf("not fetched: PuppetDB failed %d times in a row (the last: %s)", r->failed_pages,
                               r->page_err);
}

bool factsrc_reader_next(factsrc_reader *r, factsrc_node *out)
{
    memset(out, 0, sizeof *out);
    if (r->next >= r->n)
        return false;
    const char *name = r->names[r->next];
    if (r->s->dir) {
        get_from_dir(r->s, name, r->cache, out);
        r->next++;
        return true;
    }
    if (!r->page || r->next >= r->page_hi)
        fetch_page(r);
    r->next++;
    if (r->page_err || (r->gave_up && !hv_hash_len(r->page))) {
        out->msg = xstrdup(r->page_err ? r->page_err : r->gave_up);
        return true;
    }
    hv *key = hv_str(name);
    hv *f = hv_hash_get(r->page, key);
    if (!f || !hv_is(f, HV_HASH) || hv_hash_len(f) == 0) {
        out->msg = no_facts(name);
    } else {
        out->facts = (hiera_value *)hv_incref(f);
        out->stored = true;
    }
    hv_hash_del(r->page, key); /* handed over: the page keeps it no longer */
    hv_decref(key);
    return true;
}

/* ------------------------------------------------------------------ pagers (threads) */

struct factsrc_pager {
    factsrc *s;
    hiera_cache *cache;
    const char *const *names;
    size_t n;
    pthread_mutex_t mu;
    unsigned char *fetched; /* per page */
    char **page_err;        /* per page: why it could not be fetched */
    hv *waiting;            /* certname -> facts, fetched and not handed over yet */
    int failed_pages;
    char *gave_up;
};

factsrc_pager *factsrc_pager_new(factsrc *s, const char *const *names, size_t n, hiera_cache *c)
{
    factsrc_pager *p = xcalloc(1, sizeof *p);
    p->s = s;
    p->cache = c;
    p->names = names;
    p->n = n;
    size_t pages = s->page ? (n + s->page - 1) / s->page : 0;
    p->fetched = xcalloc(pages ? pages : 1, 1);
    p->page_err = xcalloc(pages ? pages : 1, sizeof *p->page_err);
    p->waiting = hv_hash();
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void factsrc_pager_free(factsrc_pager *p)
{
    if (!p)
        return;
    size_t pages = p->s->page ? (p->n + p->s->page - 1) / p->s->page : 0;
    for (size_t k = 0; k < pages; k++)
        free(p->page_err[k]);
    free(p->page_err);
    free(p->fetched);
    free(p->gave_up);
    hv_decref(p->waiting);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void pager_got(const char *certname, hiera_value *facts, void *data)
{
    hv **into = data;
    if (!certname) {
        hv_decref(*into);
        *into = hv_hash();
        return;
    }
    hv_hash_sets(*into, certname, hv_incref((hv *)facts));
}

void factsrc_pager_get(factsrc_pager *p, size_t i, factsrc_node *out)
{
    memset(out, 0, sizeof *out);
    if (i >= p->n) {
        out->msg = xstrdup("no such node");
        return;
    }
    const char *name = p->names[i];
    if (p->s->dir) {
        get_from_dir(p->s, name, p->cache, out);
        return;
    }
    size_t k = i / p->s->page;
    pthread_mutex_lock(&p->mu);
    if (!p->fetched[k]) {
        p->fetched[k] = 1;
        size_t lo = k * p->s->page, hi = lo + p->s->page < p->n ? lo + p->s->page : p->n;
        if (p->gave_up) {
            p->page_err[k] = xstrdup(p->gave_up);
        } else {
            hv *page = hv_hash();
            char *e = NULL;
            if (pdb_facts_of(p->s->db, p->names + lo, hi - lo, pager_got, &page, &e) == PDB_OK) {
                p->failed_pages = 0;
                for (size_t j = 0; j < hv_hash_len(page); j++)
                    hv_hash_set(p->waiting, hv_incref(hv_hash_key_at(page, j)), hv_incref(hv_hash_val_at(page, j)));
            } else {
                p->page_err[k] = xasprintf("cannot fetch the facts from PuppetDB: %s", e ? e : "unknown error");
                if (++p->failed_pages >= MAX_FAILED_PAGES)
                    p->gave_up = xasprintf("not fetched: PuppetDB failed %d times in a row (the last: %s)",
                                           p->failed_pages, p->page_err[k]);
            }
            free(e);
            hv_decref(page);
        }
    }
    if (p->page_err[k]) {
        out->msg = xstrdup(p->page_err[k]);
    } else {
        hv *key = hv_str(name);
        hv *f = hv_hash_get(p->waiting, key);
        if (!f || !hv_is(f, HV_HASH) || hv_hash_len(f) == 0) {
            out->msg = no_facts(name);
        } else {
            out->facts = (hiera_value *)hv_incref(f);
            out->stored = true;
        }
        hv_hash_del(p->waiting, key); /* handed over */
        hv_decref(key);
    }
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------------ hiera lookup --node */

static const char *const FACTS_TERMINI[] = {"facter", "json", "memory", "network_device", "rest", "store_configs",
                                            "yaml", "puppetdb", "puppetdb_apply", NULL};

static bool known_terminus(const char *t)
{
    for (size_t i = 0; FACTS_TERMINI[i]; i++)
        if (!strcmp(FACTS_TERMINI[i], t))
            return true;
    return false;
}

/* A terminus name from routes.yaml: a String or a Symbol, else NULL */
static char *route_name(const hv *v)
{
    if (v && (hv_is(v, HV_STRING) || hv_is(v, HV_SYMBOL)))
        return xstrndup(hv_str_ptr(v), hv_str_len(v));
    return NULL;
}

bool cli_facts_route_get(const cli_puppet_settings *s, cli_facts_route *out)
{
    memset(out, 0, sizeof *out);
    out->terminus = xstrdup(s->facts_terminus);
    if (s->storeconfigs)
        out->cache = xstrdup("store_configs");
    struct stat st;
    if (s->route_file && fs_stat(s->route_file, &st) == 0) {
        /* Puppet::ApplicationSupport.configure_indirector_routes("lookup") */
        herr e = {0};
        hv *routes = yaml_load_file(s->route_file, YAML_PUPPET, &e);
        if (!routes) {
            fprintf(stderr, "Error: Could not configure routes from %s: %s\n", s->route_file, e.msg ? e.msg : "");
            herr_clear(&e);
            cli_facts_route_free(out);
            return false;
        }
        if (!hv_is(routes, HV_HASH)) {
            fprintf(stderr, "Error: Could not configure routes from %s: undefined method `[]' for %s\n", s->route_file,
                    hv_is(routes, HV_UNDEF) ? "nil" : "the file's value (not a hash)");
            hv_decref(routes);
            cli_facts_route_free(out);
            return false;
        }
        if (hv_hash_gets(routes, "server") && hv_hash_gets(routes, "master"))
            fprintf(stderr, "Warning: Route file %s contains both server and master route settings.\n", s->route_file);
        hv *app = hv_hash_gets(routes, "lookup");
        hv *facts = app && hv_is(app, HV_HASH) ? hv_hash_gets(app, "facts") : NULL;
        if (facts && hv_is(facts, HV_HASH)) {
            char *t = route_name(hv_hash_gets(facts, "terminus"));
            char *c = route_name(hv_hash_gets(facts, "cache"));
            const char *bad = t && !known_terminus(t) ? t : c && !known_terminus(c) ? c : NULL;
            if (bad) {
                fprintf(stderr, "Error: Could not configure routes from %s: Could not find terminus %s for indirection facts\n",
                        s->route_file, bad);
                free(t);
                free(c);
                hv_decref(routes);
                cli_facts_route_free(out);
                return false;
            }
            if (t) {
                free(out->terminus);
                out->terminus = t;
            }
            if (c) {
                free(out->cache);
                out->cache = c;
            }
        }
        hv_decref(routes);
    }
    if (!known_terminus(out->terminus)) {
        fprintf(stderr, "Error: Could not run: Could not find terminus %s for indirection facts\n", out->terminus);
        cli_facts_route_free(out);
        return false;
    }
    /* store_configs is the storeconfigs_backend's terminus */
    if (!strcmp(out->terminus, "store_configs")) {
        free(out->terminus);
        out->terminus = xstrdup(s->storeconfigs_backend);
    }
    if (out->cache && !strcmp(out->cache, "store_configs")) {
        free(out->cache);
        out->cache = xstrdup(s->storeconfigs_backend);
    }
    return true;
}

void cli_facts_route_free(cli_facts_route *r)
{
    free(r->terminus);
    free(r->cache);
    memset(r, 0, sizeof *r);
}

bool cli_facts_route_uses_puppetdb(const cli_facts_route *r)
{
    return !strcmp(r->terminus, "puppetdb") || (r->cache && !strcmp(r->cache, "puppetdb"));
}

int cli_facts_route_find(const cli_facts_route *r, const pdb_config *c, const char *node, bool *use_yaml,
                         hiera_value **facts)
{
    *facts = NULL;
    *use_yaml = false;
    char *err = NULL;
    pdb *db = NULL;
    int rc = 0;
    if (r->cache && !strcmp(r->cache, "puppetdb")) {
        /* Indirection#find_in_cache: a failure is logged and the terminus asked */
        db = pdb_open(c, &err);
        pdb_status st = db ? pdb_node_facts(db, node, facts, &err) : PDB_ERROR;
        if (st == PDB_ERROR) {
            fprintf(stderr, "Error: Cached facts for %s failed: Failed to find facts from PuppetDB at  %s\n", node, err);
            free(err);
            err = NULL;
        }
        if (st == PDB_OK)
            goto out; /* even empty (a deactivated node): the cache answered */
    } else if (r->cache && strcmp(r->cache, "puppetdb_apply") && strcmp(r->cache, "memory")) {
        fprintf(stderr, "Error: Could not run: hiera cannot read facts from Puppet's '%s' facts terminus (the cache of "
                        "the facts indirection)\n", r->cache);
        rc = 1;
        goto out;
    }
    if (!strcmp(r->terminus, "yaml")) {
        *use_yaml = true;
    } else if (!strcmp(r->terminus, "puppetdb")) {
        if (!db)
            db = pdb_open(c, &err);
        pdb_status st = db ? pdb_node_facts(db, node, facts, &err) : PDB_ERROR;
        if (st == PDB_ERROR) {
            fprintf(stderr, "Error: Could not run: Failed to find facts from PuppetDB at  %s\n", err);
            rc = 1;
        }
    } else if (strcmp(r->terminus, "puppetdb_apply") && strcmp(r->terminus, "memory")) {
        /* (puppetdb_apply and memory find nothing) */
        fprintf(stderr, "Error: Could not run: hiera cannot read facts from Puppet's '%s' facts terminus; give the "
                        "node's facts with --facts FILE\n", r->terminus);
        rc = 1;
    }
out:
    free(err);
    pdb_close(db);
    return rc;
}
