/* factsrc.c - the node set and the facts of nodes, from a folder or from PuppetDB: the public
 * hiera_facts_source_*, hiera_facts_reader_*, hiera_facts_pager_* and hiera_puppetdb_*
 * (include/hiera_fleet.h), Puppet's settings for its facts and PuppetDB client, and its facts
 * routes (factsrc.h). */
#include "facts/factsrc.h"

#include "base/error.h"
#include "base/fsjournal.h"
#include "base/util.h"
#include "base/value.h"
#include "formats/psych.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_PAGE 50
#define MAX_FAILED_PAGES 3

void facts_diag(hiera_diagnostic_fn fn, void *data, hiera_severity severity, const char *code, const char *fmt, ...)
{
    if (!fn)
        return;
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    hiera_diagnostic d = {.severity = severity, .code = code, .message = sb_str(&b)};
    fn(&d, data);
    sb_free(&b);
}

char *facts_none_message(const char *node) { return xasprintf("No facts available for target node: %s", node); }

/* err: "No facts available for target node: NAME" (with HIERA_NOT_FOUND) */
static void no_facts(herr *err, const char *node)
{
    herr_set(err, HERR_ERROR, "No facts available for target node: %s", node);
}

void hiera_node_facts_clear(hiera_node_facts *f)
{
    if (!f)
        return;
    free(f->node);
    hiera_value_decref(f->base);
    hiera_value_decref(f->given);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------------ Puppet's settings */

/* A setting's value as `puppet lookup` resolves it, or NULL */
static char *setting(const hiera_settings *s, const char *name)
{
    hiera_error err = {0};
    char *v = hiera_settings_get(s, name, &err);
    hiera_error_clear(&err);
    return v;
}

bool puppet_facts_settings_get(const hiera_settings *s, puppet_facts_settings *out, herr *err)
{
    memset(out, 0, sizeof *out);
    if (!s) {
        hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
        so.no_puppet_conf = true;
        hiera_error e = {0};
        out->own = hiera_settings_load(&so, &e);
        if (!out->own) {
            herr_set(err, HERR_ERROR, "%s", e.message ? e.message : "Puppet's default settings cannot be made");
            hiera_error_clear(&e);
            return false;
        }
        s = out->own;
    }
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
    return true;
}

/* hostcert and hostprivkey ($certdir/$certname.pem, $privatekeydir/$certname.pem) */
static void ssl_paths(puppet_facts_settings *s)
{
    if (!s->hostcert)
        s->hostcert = setting(s->hs, "hostcert");
    if (!s->hostprivkey)
        s->hostprivkey = setting(s->hs, "hostprivkey");
}

void puppet_facts_settings_free(puppet_facts_settings *s)
{
    free(s->confdir);
    free(s->hostcert);
    free(s->hostprivkey);
    free(s->localcacert);
    free(s->hostcrl);
    free(s->facts_terminus);
    free(s->storeconfigs_backend);
    free(s->route_file);
    hiera_settings_free(s->own);
    memset(s, 0, sizeof *s);
}

static bool readable(const char *path) { return path && fs_access(path, R_OK) == 0; }

bool pdb_setup_get(const hiera_puppetdb_options *o, puppet_facts_settings *s, pdb_setup *out, herr *err)
{
    memset(out, 0, sizeof *out);
    if ((o->cert == NULL) != (o->key == NULL)) {
        herr_set(err, HERR_ERROR, "--cert and --key go together");
        return false;
    }
    if (o->timeout < 0 || o->timeout > 86400) {
        herr_set(err, HERR_ERROR, "--puppetdb-timeout takes seconds (1 to 86400), not '%d'", o->timeout);
        return false;
    }
    if (!o->cert || !o->key)
        ssl_paths(s);
    pdb_config *c = &out->c;
    if (o->urls) {
        c->urls = o->urls;
        /* Puppet's certificate when it is there; the system's CAs when Puppet's CA is not */
        c->cert = o->cert ? o->cert : readable(s->hostcert) ? s->hostcert : NULL;
        c->key = o->key ? o->key : readable(s->hostprivkey) ? s->hostprivkey : NULL;
        c->cacert = o->cacert ? o->cacert : readable(s->localcacert) ? s->localcacert : NULL;
        c->crl = !o->cacert && s->crl_check && readable(s->hostcrl) ? s->hostcrl : NULL;
        c->crl_check = c->crl != NULL;
    } else {
        out->conf_path = o->conf_file ? xstrdup(o->conf_file) : xjoin(s->confdir, "/puppetdb.conf", NULL);
        c->conf_file = out->conf_path;
        c->cert = o->cert ? o->cert : s->hostcert;
        c->key = o->key ? o->key : s->hostprivkey;
        c->cacert = o->cacert ? o->cacert : s->localcacert;
        c->crl = s->hostcrl;
        c->crl_check = s->crl_check && !o->cacert;
    }
    c->connect_timeout = s->http_connect_timeout;
    c->timeout = o->timeout;
    return true;
}

void pdb_setup_free(pdb_setup *s)
{
    free(s->conf_path);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ PuppetDB handles */

struct hiera_puppetdb {
    pdb *db;
    hiera_diagnostic_fn diag;
    void *diag_data;
};

static void pdb_warning(const char *code, const char *message, void *data)
{
    hiera_puppetdb *h = data;
    facts_diag(h->diag, h->diag_data, HIERA_DIAG_WARNING, code, "%s", message);
}

/* Opens h's client from o (h's address is the warnings' callback data: h must not move). */
static bool pdb_handle_open(hiera_puppetdb *h, const hiera_puppetdb_options *o, herr *err)
{
    memset(h, 0, sizeof *h);
    h->diag = o->diagnostics;
    h->diag_data = o->diagnostics_data;
    puppet_facts_settings ps;
    if (!puppet_facts_settings_get(o->settings, &ps, err))
        return false;
    pdb_setup setup;
    bool ok = pdb_setup_get(o, &ps, &setup, err);
    if (ok) {
        setup.c.warn = pdb_warning;
        setup.c.warn_data = h;
        char *e = NULL;
        h->db = pdb_open(&setup.c, &e);
        if (!h->db) {
            herr_set(err, HERR_ERROR, "%s", e ? e : "PuppetDB cannot be configured");
            ok = false;
        }
        free(e);
    }
    pdb_setup_free(&setup);
    puppet_facts_settings_free(&ps);
    return ok;
}

hiera_puppetdb *hiera_puppetdb_open(const hiera_puppetdb_options *given, hiera_error *err)
{
    hiera_puppetdb_options o; /* (the caller's struct in this version's layout) */
    options_take(&o, sizeof o, given);
    hiera_puppetdb *h = xcalloc(1, sizeof *h);
    herr e = {0};
    if (!pdb_handle_open(h, &o, &e)) {
        herr_to_public(err, &e);
        free(h);
        return NULL;
    }
    return h;
}

void hiera_puppetdb_close(hiera_puppetdb *h)
{
    if (!h)
        return;
    pdb_close(h->db);
    free(h);
}

const char *hiera_puppetdb_servers(const hiera_puppetdb *h) { return pdb_servers(h->db); }

static hiera_status pdb_error(pdb_status st, char *msg, hiera_error *err)
{
    herr e = {0};
    if (st != PDB_OK)
        herr_set(&e, HERR_ERROR, "%s", msg ? msg : "PuppetDB failed");
    free(msg);
    if (st == PDB_OK)
        return HIERA_OK;
    if (st == PDB_NOT_FOUND) {
        herr_clear(&e);
        return HIERA_NOT_FOUND;
    }
    herr_to_public(err, &e);
    return HIERA_ERROR;
}

hiera_status hiera_puppetdb_node_facts(hiera_puppetdb *h, const char *node, hiera_value **facts, hiera_error *err)
{
    char *e = NULL;
    *facts = NULL;
    return pdb_error(pdb_node_facts(h->db, node, facts, &e), e, err);
}

hiera_value *hiera_puppetdb_nodes(hiera_puppetdb *h, const char *query, bool include_inactive, hiera_error *err)
{
    char **names = NULL, *e = NULL;
    size_t n = 0;
    pdb_status st = pdb_list_nodes(h->db, query, include_inactive, &names, &n, &e);
    if (pdb_error(st, e, err) != HIERA_OK)
        return NULL;
    hv *a = hv_array();
    for (size_t i = 0; i < n; i++) {
        hv_array_push(a, hv_str(names[i]));
        free(names[i]);
    }
    free(names);
    return a;
}

typedef struct {
    hiera_puppetdb_row_fn row;
    void *data;
} row_pass;

static int pass_row(hiera_value *row, void *data, char **stop_msg)
{
    row_pass *p = data;
    int rc = p->row(row, p->data);
    if (rc)
        *stop_msg = xstrdup("stopped");
    return rc;
}

hiera_status hiera_puppetdb_query(hiera_puppetdb *h, const char *query, hiera_puppetdb_row_fn row, void *userdata,
                                  hiera_error *err)
{
    char *e = NULL;
    row_pass p = {row, userdata};
    pdb_status st = pdb_query(h->db, query ? query : "", NULL, row ? pass_row : NULL, &p, &e);
    return pdb_error(st == PDB_NOT_FOUND ? PDB_ERROR : st, e, err);
}

/* ------------------------------------------------------------------ sources */

/* a facts folder's node: its file, and a second one when there is one (the node is refused) */
typedef struct {
    char *name, *path, *other;
} dir_node;

struct hiera_facts_source {
    char *dir;              /* a folder, or NULL */
    dir_node *listed;       /* the folder's nodes as last listed, by name */
    size_t nlisted;
    hiera_puppetdb pdb;     /* PuppetDB (pdb.db set), or none */
    char *nodes_query;
    bool include_inactive;
    size_t page;
    char *description;
};

static void free_listed(hiera_facts_source *s)
{
    for (size_t i = 0; i < s->nlisted; i++) {
        free(s->listed[i].name);
        free(s->listed[i].path);
        free(s->listed[i].other);
    }
    free(s->listed);
    s->listed = NULL;
    s->nlisted = 0;
}

hiera_facts_source *hiera_facts_source_dir(const char *dir, hiera_error *err)
{
    struct stat st;
    if (fs_stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        herr e = {0};
        herr_set(&e, HERR_ERROR, "cannot read the facts folder %s: %s", dir,
                 fs_stat(dir, &st) != 0 ? ERRNO_TEXT(errno) : "not a folder");
        herr_to_public(err, &e);
        return NULL;
    }
    hiera_facts_source *s = xcalloc(1, sizeof *s);
    s->dir = xstrdup(dir);
    s->description = xasprintf("the facts folder %s", dir);
    return s;
}

hiera_facts_source *hiera_facts_source_puppetdb(const hiera_puppetdb_options *given, hiera_error *err)
{
    hiera_puppetdb_options o; /* (the caller's struct in this version's layout) */
    options_take(&o, sizeof o, given);
    hiera_facts_source *s = xcalloc(1, sizeof *s);
    herr e = {0};
    if (!pdb_handle_open(&s->pdb, &o, &e)) {
        herr_to_public(err, &e);
        free(s);
        return NULL;
    }
    s->nodes_query = o.nodes_query ? xstrdup(o.nodes_query) : NULL;
    s->include_inactive = o.include_inactive;
    s->page = o.page_size ? o.page_size : DEFAULT_PAGE;
    s->description = xasprintf("PuppetDB at %s", pdb_servers(s->pdb.db));
    return s;
}

void hiera_facts_source_free(hiera_facts_source *s)
{
    if (!s)
        return;
    pdb_close(s->pdb.db);
    free_listed(s);
    free(s->dir);
    free(s->nodes_query);
    free(s->description);
    free(s);
}

const char *hiera_facts_source_describe(const hiera_facts_source *s) { return s->description; }

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

/* dir/name without doubling a slash the folder ends with. malloc'ed. */
static char *join_path(const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    return dl && dir[dl - 1] == '/' ? xjoin(dir, name, NULL) : xjoin(dir, "/", name, NULL);
}

static int cmp_dir_node(const void *pa, const void *pb)
{
    const dir_node *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->path, b->path);
}

/* The facts files of the folder, sorted by node name, then path; hidden files and what is not a
 * regular file (or a link to one) are skipped; a name with two files keeps the first path (in
 * byte order) and notes the second. */
static bool list_dir(hiera_facts_source *s, herr *err)
{
    DIR *d = fs_opendir(s->dir);
    if (!d) {
        herr_set(err, HERR_ERROR, "cannot read the facts folder %s: %s", s->dir, ERRNO_TEXT(errno));
        return false;
    }
    free_listed(s);
    dir_node *v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t nl = de->d_name[0] == '.' ? 0 : facts_name_len(de->d_name);
        if (!nl)
            continue;
        if (de->d_type != DT_REG && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
            continue;
        char *path = join_path(s->dir, de->d_name);
        struct stat st;
        /* (a regular file by the folder's word needs no stat; a link is followed) */
        if (de->d_type != DT_REG && (fs_stat(path, &st) != 0 || !S_ISREG(st.st_mode))) {
            free(path);
            continue;
        }
        if (len == cap) {
            cap = cap ? cap * 2 : 64;
            v = xrealloc(v, cap * sizeof *v);
        }
        v[len++] = (dir_node){xstrndup(de->d_name, nl), path, NULL};
    }
    closedir(d);
    if (len)
        qsort(v, len, sizeof *v, cmp_dir_node);
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
        if (j && !strcmp(v[j - 1].name, v[i].name)) {
            if (!v[j - 1].other)
                v[j - 1].other = v[i].path;
            else
                free(v[i].path);
            free(v[i].name);
            continue;
        }
        v[j++] = v[i];
    }
    s->listed = v;
    s->nlisted = j;
    return true;
}

static char **source_names(hiera_facts_source *s, size_t *n, herr *err)
{
    *n = 0;
    if (s->dir) {
        if (!list_dir(s, err))
            return NULL;
        char **names = xmalloc((s->nlisted ? s->nlisted : 1) * sizeof *names);
        for (size_t i = 0; i < s->nlisted; i++)
            names[i] = s->listed[i].name;
        *n = s->nlisted;
        return names; /* (the strings are s->listed's) */
    }
    char **names = NULL, *e = NULL;
    pdb_status st = pdb_list_nodes(s->pdb.db, s->nodes_query, s->include_inactive, &names, n, &e);
    if (st != PDB_OK) {
        herr_set(err, HERR_ERROR, "cannot list the nodes of PuppetDB: %s", e ? e : "unknown error");
        free(e);
        return NULL;
    }
    return names;
}

hiera_value *hiera_facts_source_nodes(hiera_facts_source *s, hiera_error *err)
{
    herr e = {0};
    size_t n = 0;
    char **names = source_names(s, &n, &e);
    if (!names) {
        herr_to_public(err, &e);
        return NULL;
    }
    hv *a = hv_array();
    for (size_t i = 0; i < n; i++) {
        hv_array_push(a, hv_str(names[i]));
        if (!s->dir)
            free(names[i]);
    }
    free(names);
    return a;
}

/* the listing's entry for name, or NULL when the folder was not listed or has no such node */
static const dir_node *listed_node(const hiera_facts_source *s, const char *name)
{
    size_t lo = 0, hi = s->nlisted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->listed[mid].name, name);
        if (c == 0)
            return &s->listed[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A node's file in a folder: NAME.yaml, .yml or .json (two of them: refused); its facts read as
 * hiera batch reads them: a file of Puppet's facts cache as the node's stored facts, any other as
 * given facts with `puppet lookup --facts`'s checks. */
static hiera_status get_from_dir(hiera_facts_source *s, const char *name, hiera_cache *c, hiera_node_facts *out,
                                 herr *err)
{
    if (strchr(name, '/') || name[0] == '.' || !name[0]) {
        no_facts(err, name);
        return HIERA_NOT_FOUND;
    }
    char *found = NULL, *other = NULL;
    const dir_node *ln = s->nlisted ? listed_node(s, name) : NULL;
    if (ln) {
        found = xstrdup(ln->path);
        other = ln->other ? xstrdup(ln->other) : NULL;
    } else if (!s->nlisted) {
        /* (not listed: the three names, in byte order of their paths) */
        static const char *const by_path[] = {".json", ".yaml", ".yml"};
        for (size_t i = 0; i < 3 && !other; i++) {
            char *file = xjoin(name, by_path[i], NULL), *p = join_path(s->dir, file);
            free(file);
            struct stat st;
            if (fs_stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                if (found)
                    other = p;
                else
                    found = p;
            } else {
                free(p);
            }
        }
    }
    if (other) {
        herr_set(err, HERR_ERROR, "more than one facts file for this node: %s and %s", found, other);
        free(found);
        free(other);
        return HIERA_ERROR;
    }
    if (!found) {
        no_facts(err, name);
        return HIERA_NOT_FOUND;
    }
    hiera_error e = {0};
    int kind = HIERA_FACTS_FILE;
    hiera_value *f = hiera_facts_load(c, found, name, HIERA_FACTS_FILE | HIERA_FACTS_CACHE, &kind, &e);
    hiera_status st = HIERA_ERROR;
    if (!f) {
        herr_set(err, HERR_ERROR, "%s", e.message && *e.message ? e.message : "cannot read the facts file");
        if (e.file)
            herr_at(err, e.file, e.line, e.column);
    } else if (hiera_value_kind(f) != HIERA_HASH) {
        herr_set(err, HERR_ERROR,
                 "Incorrectly formatted data in %s given via the --facts flag (only accepts yaml and json files)", found);
    } else if (kind != HIERA_FACTS_CACHE && hiera_facts_check_given(f, found, &e) != HIERA_OK) {
        herr_set(err, HERR_ERROR, "%s", e.message ? e.message : "");
    } else if (hiera_value_hash_size(f) == 0) {
        no_facts(err, name);
        st = HIERA_NOT_FOUND;
    } else {
        st = HIERA_OK;
    }
    hiera_error_clear(&e);
    if (st != HIERA_OK) {
        hiera_value_decref(f);
        free(found);
        return st;
    }
    out->node = xstrdup(name);
    out->path = found;
    if (kind == HIERA_FACTS_CACHE)
        out->base = f;
    else
        out->given = f;
    return HIERA_OK;
}

static hiera_status get_from_pdb(hiera_facts_source *s, const char *name, hiera_node_facts *out, herr *err)
{
    char *e = NULL;
    hiera_value *f = NULL;
    pdb_status st = pdb_node_facts(s->pdb.db, name, &f, &e);
    hiera_status rc = HIERA_OK;
    if (st == PDB_ERROR) {
        herr_set(err, HERR_ERROR, "Failed to find facts from PuppetDB at  %s", e ? e : "");
        rc = HIERA_ERROR;
    } else if (st == PDB_NOT_FOUND || hiera_value_hash_size(f) == 0) {
        no_facts(err, name);
        rc = HIERA_NOT_FOUND;
    } else {
        out->node = xstrdup(name);
        out->base = f;
        f = NULL;
    }
    hiera_value_decref(f);
    free(e);
    return rc;
}

static hiera_status source_get(hiera_facts_source *s, const char *name, hiera_cache *c, hiera_node_facts *out,
                               herr *err)
{
    memset(out, 0, sizeof *out);
    return s->dir ? get_from_dir(s, name, c, out, err) : get_from_pdb(s, name, out, err);
}

/* the status with the error made public (NOT_FOUND keeps its message too) */
static hiera_status public_status(hiera_status st, herr *e, hiera_error *err)
{
    if (st == HIERA_OK)
        herr_clear(e);
    else
        herr_to_public(err, e);
    return st;
}

hiera_status hiera_facts_source_get(hiera_facts_source *s, const char *node, hiera_cache *c, hiera_node_facts *out,
                                    hiera_error *err)
{
    herr e = {0};
    return public_status(source_get(s, node, c, out, &e), &e, err);
}

/* ------------------------------------------------------------------ readers */

struct hiera_facts_reader {
    hiera_facts_source *s;
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

hiera_facts_reader *hiera_facts_reader_new(hiera_facts_source *s, const char *const *names, size_t n, hiera_cache *c)
{
    hiera_facts_reader *r = xcalloc(1, sizeof *r);
    r->s = s;
    r->cache = c;
    r->names = names;
    r->n = n;
    return r;
}

void hiera_facts_reader_free(hiera_facts_reader *r)
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
    hv **page = data;
    if (!certname) {
        hv_decref(*page);
        *page = hv_hash();
        return;
    }
    hv_hash_sets(*page, certname, hv_incref((hv *)facts));
}

static void fetch_page(hiera_facts_reader *r)
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
    pdb_status st = pdb_facts_of(r->s->pdb.db, r->names + r->page_lo, r->page_hi - r->page_lo, page_got, &r->page, &e);
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

/* a node's facts handed over from a fetched page (and dropped from it) */
static hiera_status from_page(hv *page, const char *name, hiera_node_facts *out, herr *err)
{
    hv *key = hv_str(name);
    hv *f = hv_hash_get(page, key);
    hiera_status st = HIERA_OK;
    if (!f || !hv_is(f, HV_HASH) || hv_hash_len(f) == 0) {
        no_facts(err, name);
        st = HIERA_NOT_FOUND;
    } else {
        out->node = xstrdup(name);
        out->base = (hiera_value *)hv_incref(f);
    }
    hv_hash_del(page, key); /* handed over: the page keeps it no longer */
    hv_decref(key);
    return st;
}

bool hiera_facts_reader_next(hiera_facts_reader *r, hiera_status *status, hiera_node_facts *out, hiera_error *err)
{
    memset(out, 0, sizeof *out);
    if (r->next >= r->n)
        return false;
    const char *name = r->names[r->next];
    herr e = {0};
    hiera_status st;
    if (r->s->dir) {
        st = get_from_dir(r->s, name, r->cache, out, &e);
        r->next++;
    } else {
        if (!r->page || r->next >= r->page_hi)
            fetch_page(r);
        r->next++;
        if (r->page_err || (r->gave_up && !hv_hash_len(r->page))) {
            herr_set(&e, HERR_ERROR, "%s", r->page_err ? r->page_err : r->gave_up);
            st = HIERA_ERROR;
        } else {
            st = from_page(r->page, name, out, &e);
        }
    }
    *status = public_status(st, &e, err);
    return true;
}

/* ------------------------------------------------------------------ pagers (threads) */

struct hiera_facts_pager {
    hiera_facts_source *s;
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

hiera_facts_pager *hiera_facts_pager_new(hiera_facts_source *s, const char *const *names, size_t n, hiera_cache *c)
{
    hiera_facts_pager *p = xcalloc(1, sizeof *p);
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

void hiera_facts_pager_free(hiera_facts_pager *p)
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

hiera_status hiera_facts_pager_get(hiera_facts_pager *p, size_t i, hiera_node_facts *out, hiera_error *err)
{
    herr e = {0};
    return public_status(facts_pager_get_with(p, i, p->cache, out, &e), &e, err);
}

hiera_status facts_pager_get_with(hiera_facts_pager *p, size_t i, hiera_cache *c, hiera_node_facts *out, herr *err)
{
    memset(out, 0, sizeof *out);
    if (i >= p->n) {
        herr_set(err, HERR_ERROR, "no such node");
        return HIERA_ERROR;
    }
    const char *name = p->names[i];
    if (p->s->dir)
        return get_from_dir(p->s, name, c, out, err);
    size_t k = i / p->s->page;
    hiera_status st;
    pthread_mutex_lock(&p->mu);
    if (!p->fetched[k]) {
        p->fetched[k] = 1;
        size_t lo = k * p->s->page, hi = lo + p->s->page < p->n ? lo + p->s->page : p->n;
        if (p->gave_up) {
            p->page_err[k] = xstrdup(p->gave_up);
        } else {
            hv *page = hv_hash();
            char *pe = NULL;
            if (pdb_facts_of(p->s->pdb.db, p->names + lo, hi - lo, page_got, &page, &pe) == PDB_OK) {
                p->failed_pages = 0;
                for (size_t j = 0; j < hv_hash_len(page); j++)
                    hv_hash_set(p->waiting, hv_incref(hv_hash_key_at(page, j)), hv_incref(hv_hash_val_at(page, j)));
            } else {
                p->page_err[k] = xasprintf("cannot fetch the facts from PuppetDB: %s", pe ? pe : "unknown error");
                if (++p->failed_pages >= MAX_FAILED_PAGES)
                    p->gave_up = xasprintf("not fetched: PuppetDB failed %d times in a row (the last: %s)",
                                           p->failed_pages, p->page_err[k]);
            }
            free(pe);
            hv_decref(page);
        }
    }
    if (p->page_err[k]) {
        herr_set(err, HERR_ERROR, "%s", p->page_err[k]);
        st = HIERA_ERROR;
    } else {
        st = from_page(p->waiting, name, out, err);
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* ------------------------------------------------------------------ puppet lookup --node */

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

/* routes.yaml cannot be used: "Could not configure routes from FILE: why" (HERR_PUPPET: Puppet
 * prints it without "Could not run") */
static void route_error(herr *err, const char *file, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void route_error(herr *err, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    herr_set(err, HERR_PUPPET, "Could not configure routes from %s: %s", file, sb_str(&b));
    herr_at(err, file, 0, 0);
    sb_free(&b);
}

bool facts_route_get(const puppet_facts_settings *s, facts_route *out, hiera_diagnostic_fn diag, void *diag_data,
                     herr *err)
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
            route_error(err, s->route_file, "%s", e.msg ? e.msg : "");
            herr_clear(&e);
            facts_route_free(out);
            return false;
        }
        if (!hv_is(routes, HV_HASH)) {
            route_error(err, s->route_file, "undefined method `[]' for %s",
                        hv_is(routes, HV_UNDEF) ? "nil" : "the file's value (not a hash)");
            hv_decref(routes);
            facts_route_free(out);
            return false;
        }
        if (hv_hash_gets(routes, "server") && hv_hash_gets(routes, "master"))
            facts_diag(diag, diag_data, HIERA_DIAG_WARNING, "facts-route-both",
                       "Route file %s contains both server and master route settings.", s->route_file);
        hv *app = hv_hash_gets(routes, "lookup");
        hv *facts = app && hv_is(app, HV_HASH) ? hv_hash_gets(app, "facts") : NULL;
        if (facts && hv_is(facts, HV_HASH)) {
            char *t = route_name(hv_hash_gets(facts, "terminus"));
            char *c = route_name(hv_hash_gets(facts, "cache"));
            const char *bad = t && !known_terminus(t) ? t : c && !known_terminus(c) ? c : NULL;
            if (bad) {
                route_error(err, s->route_file, "Could not find terminus %s for indirection facts", bad);
                free(t);
                free(c);
                hv_decref(routes);
                facts_route_free(out);
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
        herr_set(err, HERR_ERROR, "Could not find terminus %s for indirection facts", out->terminus);
        facts_route_free(out);
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

void facts_route_free(facts_route *r)
{
    free(r->terminus);
    free(r->cache);
    memset(r, 0, sizeof *r);
}

bool facts_route_uses_puppetdb(const facts_route *r)
{
    return !strcmp(r->terminus, "puppetdb") || (r->cache && !strcmp(r->cache, "puppetdb"));
}

bool facts_route_find(const facts_route *r, const pdb_config *c, const char *node, bool *use_yaml, hiera_value **facts,
                      hiera_diagnostic_fn diag, void *diag_data, herr *err)
{
    *facts = NULL;
    *use_yaml = false;
    char *e = NULL;
    pdb *db = NULL;
    bool ok = true;
    if (r->cache && !strcmp(r->cache, "puppetdb")) {
        /* Indirection#find_in_cache: a failure is logged and the terminus asked */
        db = pdb_open(c, &e);
        pdb_status st = db ? pdb_node_facts(db, node, facts, &e) : PDB_ERROR;
        if (st == PDB_ERROR) {
            facts_diag(diag, diag_data, HIERA_DIAG_ERROR, "facts-cache-failed",
                       "Cached facts for %s failed: Failed to find facts from PuppetDB at  %s", node, e ? e : "");
            free(e);
            e = NULL;
        }
        if (st == PDB_OK)
            goto out; /* even empty (a deactivated node): the cache answered */
    } else if (r->cache && strcmp(r->cache, "puppetdb_apply") && strcmp(r->cache, "memory")) {
        herr_set(err, HERR_ERROR,
                 "hiera cannot read facts from Puppet's '%s' facts terminus (the cache of the facts indirection)",
                 r->cache);
        ok = false;
        goto out;
    }
    if (!strcmp(r->terminus, "yaml")) {
        *use_yaml = true;
    } else if (!strcmp(r->terminus, "puppetdb")) {
        if (!db)
            db = pdb_open(c, &e);
        pdb_status st = db ? pdb_node_facts(db, node, facts, &e) : PDB_ERROR;
        if (st == PDB_ERROR) {
            herr_set(err, HERR_ERROR, "Failed to find facts from PuppetDB at  %s", e ? e : "");
            ok = false;
        }
    } else if (strcmp(r->terminus, "puppetdb_apply") && strcmp(r->terminus, "memory")) {
        /* (puppetdb_apply and memory find nothing) */
        herr_set(err, HERR_ERROR,
                 "hiera cannot read facts from Puppet's '%s' facts terminus; give the node's facts with --facts FILE",
                 r->terminus);
        ok = false;
    }
out:
    free(e);
    pdb_close(db);
    return ok;
}
