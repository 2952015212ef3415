/* puppetdb.c - PuppetDB's query API over libcurl, as Puppet's puppetdb terminus asks it
 * (puppetdb.h). */
#include "facts/puppetdb.h"
#include "base/fsjournal.h"

#include "base/util.h"
#include "base/value.h"
#include "facts/curl_lib.h"
#include "formats/json.h"
#include "formats/render.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FAILOVER_MSG "Failing over to the next PuppetDB server_url in the 'server_urls' list"
/* Puppet::Util::Puppetdb::Config's defaults */
#define DEFAULT_SERVER_URLS "https://puppetdb:8081"
#define DEFAULT_TIMEOUT 30
#define DEFAULT_CONNECT_TIMEOUT 120 /* Puppet's http_connect_timeout */
/* the most of an error answer kept for the message, and of one element of an answer */
#define MAX_ERROR_BODY 4096
#define MAX_ELEMENT ((size_t)1 << 30)
/* Ruby's JSON.parse, which Puppet reads the answers with: max_nesting 100 */
#define MAX_NESTING 100

typedef struct {
    char *url;  /* as Puppet prints it: scheme://host[:port][/prefix], no trailing slash */
    char *host; /* for messages */
    long port;
} server;

struct pdb {
    server *servers;
    size_t nservers;
    char *servers_text;
    int timeout; /* seconds; <= 0: none */
    int connect_timeout;
    bool sticky;
    bool send_client_cert;
    char *cert, *key, *cacert, *crl;
    bool crl_check;
    pdb_warn_fn warn;
    void *warn_data;
    CURL *h;
    pid_t h_pid; /* the process that made h */
    size_t last_good;
};

/* ------------------------------------------------------------------ small helpers */

/* A warning for the caller's callback (none: dropped; the library never prints). */
static void warn_code(pdb *db, const char *code, const char *fmt, ...) HIERA_PRINTF(3, 4);
static void warn_code(pdb *db, const char *code, const char *fmt, ...)
{
    if (!db->warn)
        return;
    va_list ap;
    va_start(ap, fmt);
    sbuf b = {0};
    sb_vaddf(&b, fmt, ap);
    va_end(ap);
    db->warn(code, sb_str(&b), db->warn_data);
    sb_free(&b);
}
#define warn(db, ...) warn_code(db, "puppetdb-failover", __VA_ARGS__)

static bool readable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

char *pdb_cgi_escape(const char *s)
{
    /* CGI.escape: bytes other than a-zA-Z0-9 _ . - ~ and space become %XX (upper case), space '+' */
    sbuf b = {0};
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '_' || *p == '.' || *p == '-' || *p == '~')
            sb_addc(&b, (char)*p);
        else if (*p == ' ')
            sb_addc(&b, '+');
        else
            sb_addf(&b, "%%%02X", *p);
    }
    return sb_take(&b);
}

/* Ruby's String#to_i: leading blanks, an optional sign, digits; 0 when none. */
static long ruby_to_i(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')
        s++;
    bool neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > 100000000)
            v = 100000000; /* far beyond any timeout */
        else
            v = v * 10 + (*s - '0');
        if (s[1] == '_' && s[2] >= '0' && s[2] <= '9')
            s++;
    }
    return neg ? -v : v;
}

static char *strip(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return xstrndup(s, n);
}

/* ------------------------------------------------------------------ server URLs */

/* Parses one URL. conf: as puppetdb.conf's server_urls (https only, no path, as
 * Config.convert_and_validate_urls). NULL with *err. */
static bool parse_url(const char *text, bool conf, server *out, char **err)
{
    memset(out, 0, sizeof *out);
    const char *sep = strstr(text, "://");
    const char *scheme_end = sep;
    if (sep) {
        for (const char *p = text; p < sep; p++)
            if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
                scheme_end = NULL;
    }
    if (!scheme_end || scheme_end == text) {
        *err = conf ? xasprintf("PuppetDB 'server_urls' must be https, found '%s'", text)
                    : xasprintf("'%s' is not a PuppetDB URL (http://HOST:PORT or https://HOST:PORT)", text);
        return false;
    }
    size_t slen = (size_t)(scheme_end - text);
    char *scheme = xstrndup(text, slen);
    for (char *p = scheme; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    bool https = strcmp(scheme, "https") == 0, http = strcmp(scheme, "http") == 0;
    free(scheme);
    if (conf ? !https : !(https || http)) {
        *err = conf ? xasprintf("PuppetDB 'server_urls' must be https, found '%s'", text)
                    : xasprintf("'%s' is not a PuppetDB URL: only http:// and https:// are", text);
        return false;
    }
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *rest = auth + alen;
    if (*rest == '?' || *rest == '#' || strchr(rest, '?') || strchr(rest, '#')) {
        *err = xasprintf("'%s': a PuppetDB URL cannot have a query or a fragment", text);
        return false;
    }
    size_t plen = strlen(rest);
    while (plen && rest[plen - 1] == '/')
        plen--;
    if (conf && plen) {
        *err = xasprintf("PuppetDB 'server_urls' cannot contain URL paths, found '%s'", text);
        return false;
    }
    const char *at = memchr(auth, '@', alen);
    const char *hp = at ? at + 1 : auth;
    size_t hplen = alen - (size_t)(hp - auth);
    const char *host = hp;
    size_t hlen = hplen;
    long port = https ? 443 : 80;
    const char *colon = NULL;
    if (hplen && hp[0] == '[') {
        const char *close = memchr(hp, ']', hplen);
        if (!close) {
            *err = xasprintf("Error parsing URL '%s': a bad IPv6 address", text);
            return false;
        }
        host = hp + 1;
        hlen = (size_t)(close - hp - 1);
        if (close + 1 < hp + hplen && close[1] == ':')
            colon = close + 1;
        else if (close + 1 != hp + hplen) {
            *err = xasprintf("Error parsing URL '%s'", text);
            return false;
        }
    } else {
        colon = memchr(hp, ':', hplen);
        if (colon)
            hlen = (size_t)(colon - hp);
    }
    if (colon) {
        const char *ps = colon + 1, *pe = hp + hplen;
        if (ps < pe) {
            long v = 0;
            for (const char *p = ps; p < pe; p++) {
                if (*p < '0' || *p > '9' || v > 65535) {
                    *err = xasprintf("Error parsing URL '%s': bad port", text);
                    return false;
                }
                v = v * 10 + (*p - '0');
            }
            if (v > 65535) {
                *err = xasprintf("Error parsing URL '%s': bad port", text);
                return false;
            }
            port = v;
        }
    }
    if (hlen == 0) {
        *err = xasprintf("Error parsing URL '%s': no host", text);
        return false;
    }
    out->host = xstrndup(host, hlen);
    out->port = port;
    out->url = xstrndup(text, (size_t)(rest - text) + plen);
    return true;
}

static void free_servers(server *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].url);
        free(s[i].host);
    }
    free(s);
}

/* Splits "a, b" at commas (entries stripped, empty ones kept as Puppet keeps them: they fail). */
static bool parse_url_list(const char *list, bool conf, server **out, size_t *n, char **err)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char *one = strip(p, len);
        if (*one || conf) {
            if (*n == cap) {
                cap = cap ? cap * 2 : 4;
                *out = xrealloc(*out, cap * sizeof **out);
            }
            if (!parse_url(one, conf, &(*out)[*n], err)) {
                free(one);
                free_servers(*out, *n);
                *out = NULL;
                *n = 0;
                return false;
            }
            (*n)++;
        }
        free(one);
        if (!p[len])
            break;
        p += len + 1;
    }
    if (*n == 0) {
        *err = xasprintf("no PuppetDB URL in '%s'", list);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ puppetdb.conf */

typedef struct {
    char *server_urls, *server_url_timeout, *sticky_read_failover, *verify_client_certificate;
    char *soft_write_failure, *include_unchanged_resources, *command_broadcast, *submit_only_server_urls;
    char *min_successful_submissions;
} conf_values;

static void conf_free(conf_values *c)
{
    free(c->server_urls);
    free(c->server_url_timeout);
    free(c->sticky_read_failover);
    free(c->verify_client_certificate);
    free(c->soft_write_failure);
    free(c->include_unchanged_resources);
    free(c->command_broadcast);
    free(c->submit_only_server_urls);
    free(c->min_successful_submissions);
}

static bool is_word(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Config.load's reading of the file: "[section]" lines, "name = value" lines (value: the rest of
 * the line, stripped at its end when it has no blank inside, as the terminus' regexp takes it),
 * comments (# or ;) and blank lines; anything else stops it. The [main] section's values are
 * kept. Returns false with *err. A file that does not exist is Puppet's defaults. */
static bool read_conf(pdb *db, const char *path, conf_values *c, char **err)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return true;
        *err = xasprintf("cannot read the PuppetDB configuration %s: %s", path, ERRNO_TEXT(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int number = 0;
    char *section = NULL;
    bool ok = true;
    while (ok && (got = getline(&line, &cap, f)) >= 0) {
        number++;
        size_t len = (size_t)got;
        char *body = xstrndup(line, len);
        size_t blen = len;
        if (blen && body[blen - 1] == '\n')
            body[--blen] = 0;
        const char *p = body;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f' || *p == '\v')
            p++;
        if (body[0] == '[') {
            /* /^\[(\w+)\s*\]$/ */
            const char *q = body + 1;
            while (is_word(*q))
                q++;
            const char *name_end = q;
            while (isspace((unsigned char)*q))
                q++;
            if (name_end > body + 1 && *q == ']' && q[1] == 0) {
                free(section);
                section = xstrndup(body + 1, (size_t)(name_end - body - 1));
                free(body);
                continue;
            }
        }
        if (*p == '#' || *p == ';' || *p == 0) {
            free(body);
            continue;
        }
        const char *n0 = p, *n1 = p;
        while (is_word(*n1))
            n1++;
        const char *q = n1;
        while (*q == ' ' || *q == '\t')
            q++;
        if (n1 > n0 && *q == '=') {
            size_t nlen = (size_t)(n1 - n0);
            if ((nlen == 6 && !strncmp(n0, "server", 6)) || (nlen == 4 && !strncmp(n0, "port", 4))) {
                /* retired settings: Puppet warns and goes on */
                warn_code(db, "puppetdb-conf",
                          "Setting '%s' is retired: use 'server_urls' instead. Defaulting to "
                          "'server_urls=https://puppetdb:8081'.", body);
                free(body);
                continue;
            }
            q++;
            while (isspace((unsigned char)*q))
                q++;
            if (*q) {
                if (!section) {
                    *err = xasprintf("Setting '%s' is illegal outside of section in PuppetDB config %s:%d", line, path,
                                     number);
                    ok = false;
                    free(body);
                    break;
                }
                /* (\S+|[\S+\s*\,\s*\S]+)\s*$ : the value without its final blanks when it is one
                 * word, else the rest of the line as it is */
                size_t vlen = strlen(q);
                size_t w = strcspn(q, " \t\r\f\v");
                bool one_word = true;
                for (size_t i = w; i < vlen; i++)
                    if (!isspace((unsigned char)q[i]))
                        one_word = false;
                char *value = one_word ? xstrndup(q, w) : xstrdup(q);
                if (!strcmp(section, "main")) {
                    static const struct {
                        const char *name;
                        size_t off;
                    } known[] = {
                        {"server_urls", offsetof(conf_values, server_urls)},
                        {"server_url_timeout", offsetof(conf_values, server_url_timeout)},
                        {"sticky_read_failover", offsetof(conf_values, sticky_read_failover)},
                        {"verify_client_certificate", offsetof(conf_values, verify_client_certificate)},
                        {"soft_write_failure", offsetof(conf_values, soft_write_failure)},
                        {"include_unchanged_resources", offsetof(conf_values, include_unchanged_resources)},
                        {"command_broadcast", offsetof(conf_values, command_broadcast)},
                        {"submit_only_server_urls", offsetof(conf_values, submit_only_server_urls)},
                        {"min_successful_submissions", offsetof(conf_values, min_successful_submissions)},
                    };
                    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
                        if (strlen(known[i].name) == nlen && !strncmp(known[i].name, n0, nlen)) {
                            char **slot = (char **)((char *)c + known[i].off);
                            free(*slot);
                            *slot = value;
                            value = NULL;
                            break;
                        }
                }
                free(value);
                free(body);
                continue;
            }
        }
        /* chomp, as Ruby's message shows the line */
        *err = xasprintf("Unparseable line '%s' in PuppetDB config %s:%d", body, path, number);
        ok = false;
        free(body);
    }
    free(section);
    free(line);
    fclose(f);
    if (!ok)
        conf_free(c);
    return ok;
}

/* Puppet::Util::Puppetdb.to_bool */
static bool conf_bool(const char *v, bool dflt, const char *path, bool *out, char **err)
{
    if (!v) {
        *out = dflt;
        return true;
    }
    if (!strcmp(v, "true") || !strcmp(v, "false")) {
        *out = v[0] == 't';
        return true;
    }
    *err = xasprintf("invalid value for Boolean: \"%s\" in PuppetDB config %s", v, path);
    return false;
}

/* ------------------------------------------------------------------ open and close */

pdb *pdb_open(const pdb_config *c, char **err)
{
    fsj_taint("PuppetDB was asked");
    *err = NULL;
    pdb *db = xcalloc(1, sizeof *db);
    db->warn = c->warn;
    db->warn_data = c->warn_data;
    db->send_client_cert = true;
    db->timeout = DEFAULT_TIMEOUT;
    if (c->urls) {
        if (!parse_url_list(c->urls, false, &db->servers, &db->nservers, err))
            goto fail;
    } else {
        const char *path = c->conf_file ? c->conf_file : "/etc/puppet/puppetdb.conf";
        conf_values cv;
        if (!read_conf(db, path, &cv, err))
            goto fail;
        char *e = NULL;
        bool b;
        bool ok = parse_url_list(cv.server_urls ? cv.server_urls : DEFAULT_SERVER_URLS, true, &db->servers,
                                 &db->nservers, &e);
        if (ok && cv.server_url_timeout)
            db->timeout = (int)ruby_to_i(cv.server_url_timeout);
        ok = ok && conf_bool(cv.sticky_read_failover, false, path, &db->sticky, &e);
        ok = ok && conf_bool(cv.verify_client_certificate, true, path, &db->send_client_cert, &e);
        ok = ok && conf_bool(cv.soft_write_failure, false, path, &b, &e);
        ok = ok && conf_bool(cv.include_unchanged_resources, false, path, &b, &e);
        ok = ok && conf_bool(cv.command_broadcast, false, path, &b, &e);
        if (ok && cv.submit_only_server_urls && *cv.submit_only_server_urls) {
            server *s = NULL;
            size_t n = 0;
            ok = parse_url_list(cv.submit_only_server_urls, true, &s, &n, &e);
            free_servers(s, n);
        }
        conf_free(&cv);
        if (!ok) {
            *err = xasprintf("Could not configure PuppetDB terminuses: %s", e);
            free(e);
            goto fail;
        }
    }
    if (c->timeout)
        db->timeout = c->timeout;
    db->connect_timeout = c->connect_timeout > 0 ? c->connect_timeout : DEFAULT_CONNECT_TIMEOUT;
    db->cert = c->cert ? xstrdup(c->cert) : NULL;
    db->key = c->key ? xstrdup(c->key) : NULL;
    db->cacert = c->cacert ? xstrdup(c->cacert) : NULL;
    db->crl = c->crl ? xstrdup(c->crl) : NULL;
    db->crl_check = c->crl_check;
    sbuf t = {0};
    for (size_t i = 0; i < db->nservers; i++)
        sb_addf(&t, "%s%s", i ? ", " : "", db->servers[i].url);
    db->servers_text = sb_take(&t);
    return db;
fail:
    pdb_close(db);
    return NULL;
}

void pdb_close(pdb *db)
{
    if (!db)
        return;
    if (db->h && db->h_pid == getpid())
        LIBCURL.easy_cleanup(db->h);
    free_servers(db->servers, db->nservers);
    free(db->servers_text);
    free(db->cert);
    free(db->key);
    free(db->cacert);
    free(db->crl);
    free(db);
}

const char *pdb_servers(const pdb *db) { return db->servers_text; }

/* ------------------------------------------------------------------ an answer read as it arrives */

/* Splits the top-level JSON array of an answer into its elements as bytes arrive; each complete
 * element is parsed alone (Ruby's JSON, as Puppet reads the whole answer) and handed over. */
typedef struct {
    enum { JS_START, JS_BEFORE_ELEMENT, JS_ELEMENT, JS_AFTER_ELEMENT, JS_DONE, JS_FAILED } state;
    int depth; /* of containers open inside the element */
    bool in_string, escaped, scalar;
    sbuf elem;
    size_t nelements;
    const char *source; /* for messages: the route */
    pdb_row_fn row;
    void *data;
    char *error; /* why it stopped */
    bool stopped_by_row;
} jstream;

static void js_fail(jstream *js, char *msg)
{
    js->state = JS_FAILED;
    free(js->error);
    js->error = msg;
}

static void js_element_done(jstream *js)
{
    herr e = {0};
    char *name = xasprintf("PuppetDB's answer from %s", js->source);
    hv *v = hjson_parse(js->elem.s ? js->elem.s : "", js->elem.len, name, &e);
    free(name);
    js->elem.len = 0;
    if (js->elem.s)
        js->elem.s[0] = 0;
    if (!v) {
        js_fail(js, xstrdup(e.msg ? e.msg : "bad JSON"));
        herr_clear(&e);
        return;
    }
    js->nelements++;
    char *stop = NULL;
    int rc = js->row ? js->row((hiera_value *)v, js->data, &stop) : 0;
    hv_decref(v);
    if (rc) {
        js->stopped_by_row = true;
        js_fail(js, stop ? stop : xstrdup("stopped"));
    } else {
        free(stop);
    }
}

static void js_bad(jstream *js, const char *p, size_t left)
{
    size_t n = left < 40 ? left : 40;
    js_fail(js, xasprintf("PuppetDB's answer from %s is not a JSON array (at '%.*s')", js->source, (int)n, p));
}

static void js_feed(jstream *js, const char *p, size_t n)
{
    const char *end = p + n;
    while (p < end && js->state != JS_FAILED) {
        char c = *p;
        switch (js->state) {
        case JS_START:
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                p++;
            } else if (c == '[') {
                js->state = JS_BEFORE_ELEMENT;
                p++;
            } else {
                js_bad(js, p, (size_t)(end - p));
            }
            break;
        case JS_BEFORE_ELEMENT:
        case JS_AFTER_ELEMENT:
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                p++;
            } else if (c == ']' && (js->state == JS_AFTER_ELEMENT || js->nelements == 0)) {
                js->state = JS_DONE;
                p++;
            } else if (c == ',' && js->state == JS_AFTER_ELEMENT) {
                js->state = JS_BEFORE_ELEMENT;
                p++;
            } else if (js->state == JS_BEFORE_ELEMENT && c != ']' && c != ',') {
                js->state = JS_ELEMENT;
                js->depth = 0;
                js->in_string = js->escaped = false;
                js->scalar = c != '{' && c != '[';
            } else {
                js_bad(js, p, (size_t)(end - p));
            }
            break;
        case JS_ELEMENT: {
            /* copy bytes up to the element's end */
            const char *start = p;
            bool complete = false;
            for (; p < end; p++) {
                c = *p;
                if (js->in_string) {
                    if (js->escaped)
                        js->escaped = false;
                    else if (c == '\\')
                        js->escaped = true;
                    else if (c == '"') {
                        js->in_string = false;
                        if (js->scalar && js->depth == 0) {
                            p++;
                            complete = true;
                            break;
                        }
                    }
                    continue;
                }
                if (c == '"') {
                    js->in_string = true;
                } else if (c == '{' || c == '[') {
                    /* the answer's array is the first level */
                    if (++js->depth + 1 > MAX_NESTING) {
                        js_fail(js, xasprintf("PuppetDB's answer from %s: nesting of %d is too deep", js->source,
                                              js->depth + 1));
                        return;
                    }
                } else if (c == '}' || c == ']') {
                    if (js->scalar && js->depth == 0)
                        break; /* the end of the array after a scalar */
                    if (--js->depth == 0) {
                        p++;
                        complete = true;
                        break;
                    }
                } else if (js->scalar && js->depth == 0 &&
                           (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
                    break;
                }
            }
            if (js->elem.len + (size_t)(p - start) > MAX_ELEMENT) {
                js_fail(js, xasprintf("PuppetDB's answer from %s has an element of more than %zu bytes", js->source,
                                      MAX_ELEMENT));
                return;
            }
            sb_addn(&js->elem, start, (size_t)(p - start));
            if (complete || (p < end && js->scalar && js->depth == 0 && !js->in_string)) {
                js->state = JS_AFTER_ELEMENT;
                js_element_done(js);
            }
            break;
        }
        case JS_DONE:
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
                p++;
            else
                js_bad(js, p, (size_t)(end - p));
            break;
        case JS_FAILED:
            return;
        }
    }
}

static void js_reset(jstream *js)
{
    js->state = JS_START;
    js->depth = 0;
    js->in_string = js->escaped = js->scalar = false;
    js->elem.len = 0;
    js->nelements = 0;
    free(js->error);
    js->error = NULL;
    js->stopped_by_row = false;
}

/* ------------------------------------------------------------------ one request on one server */

typedef struct {
    pdb *db;
    jstream js;
    long status;
    char reason[128];
    sbuf body; /* the start of an answer that is not 2xx */
    bool first_byte;
    char first; /* the answer's first byte (Puppet's "looks like JSON" test for 404s) */
} transfer;

static size_t on_header(char *data, size_t size, size_t nitems, void *arg)
{
    transfer *t = arg;
    size_t n = size * nitems;
    if (n > 5 && !strncmp(data, "HTTP/", 5)) {
        /* a status line: "HTTP/1.1 404 Not Found" (each new one replaces the last: 100, redirects) */
        const char *p = memchr(data, ' ', n);
        t->status = 0;
        t->reason[0] = 0;
        if (p) {
            p++;
            long st = 0;
            const char *e = data + n;
            while (p < e && *p >= '0' && *p <= '9')
                st = st * 10 + (*p++ - '0');
            t->status = st;
            while (p < e && *p == ' ')
                p++;
            size_t rl = 0;
            while (p + rl < e && p[rl] != '\r' && p[rl] != '\n' && rl + 1 < sizeof t->reason)
                rl++;
            memcpy(t->reason, p, rl);
            t->reason[rl] = 0;
        }
    }
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    transfer *t = arg;
    size_t n = size * nmemb;
    if (n && !t->first_byte) {
        t->first_byte = true;
        t->first = data[0];
    }
    if (t->status >= 200 && t->status < 300) {
        js_feed(&t->js, data, n);
        return t->js.state == JS_FAILED ? 0 : n;
    }
    if (t->body.len < MAX_ERROR_BODY)
        sb_addn(&t->body, data, n < MAX_ERROR_BODY - t->body.len ? n : MAX_ERROR_BODY - t->body.len);
    return n;
}

static const char *reason_of(long status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
    }
}

/* libcurl's handle for this process, reset for a new request */
static CURL *handle(pdb *db, char **err)
{
    const char *why = NULL;
    if (!curl_lib_load(&why)) {
        *err = xstrdup(why);
        return NULL;
    }
    pid_t me = getpid();
    if (db->h && db->h_pid != me)
        db->h = NULL; /* the parent's: its connections are the parent's to use and close */
    if (!db->h) {
        db->h = LIBCURL.easy_init();
        db->h_pid = me;
        if (!db->h) {
            *err = xstrdup("libcurl could not make a handle (out of memory?)");
            return NULL;
        }
    } else {
        LIBCURL.easy_reset(db->h);
    }
    return db->h;
}

/* The TLS files a request to an https server needs, checked as Puppet's SSL provider checks them
 * before it connects; false with *err. */
static bool tls_files_ok(pdb *db, char **err)
{
    if (db->cacert && !readable_file(db->cacert)) {
        *err = xasprintf("The CA certificates are missing from '%s'", db->cacert);
        return false;
    }
    if (db->crl_check && db->crl && !readable_file(db->crl)) {
        *err = xasprintf("The CRL is missing from '%s'", db->crl);
        return false;
    }
    if (db->send_client_cert && db->key && !readable_file(db->key)) {
        *err = xasprintf("The private key is missing from '%s'", db->key);
        return false;
    }
    if (db->send_client_cert && db->cert && !readable_file(db->cert)) {
        *err = xasprintf("The client certificate is missing from '%s'", db->cert);
        return false;
    }
    return true;
}

typedef enum { TRY_OK, TRY_FAILOVER, TRY_NOTFOUND, TRY_FINAL } try_result;

/* One try on one server. TRY_OK: t->status is the answer's (2xx: rows given, else t->body);
 * TRY_FAILOVER: warned, the next server is to be asked; TRY_NOTFOUND: a JSON 404; TRY_FINAL: *err. */
static try_result try_server(pdb *db, const server *s, const char *path, const char *post, transfer *t, char **cause,
                             char **err)
{
    char *route = xasprintf("%s%s", s->url, path);
    try_result res = TRY_FINAL;
    char errbuf[CURL_ERROR_SIZE] = {0};
    CURL *h = handle(db, err);
    struct curl_slist *headers = NULL;
    if (!h)
        goto out;
    bool https = !strncasecmp(s->url, "https:", 6);
    if (https && !tls_files_ok(db, err))
        goto out;
    curl_set_str(h, CURLOPT_URL, route);
    curl_set_long(h, CURLOPT_NOSIGNAL, 1L);
    curl_set_str(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_set_str(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_set_long(h, CURLOPT_FOLLOWLOCATION, post ? 0L : 1L);
    curl_set_long(h, CURLOPT_MAXREDIRS, 10L);
    curl_set_str(h, CURLOPT_USERAGENT, "hiera/" HIERA_VERSION);
    curl_set_ptr(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_set_write_fn(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_set_ptr(h, CURLOPT_WRITEDATA, t);
    curl_set_write_fn(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_set_ptr(h, CURLOPT_HEADERDATA, t);
    curl_set_str(h, CURLOPT_ACCEPT_ENCODING, ""); /* whatever libcurl can decode (gzip) */
    if (db->timeout > 0) {
        curl_set_long(h, CURLOPT_TIMEOUT, (long)db->timeout);
        curl_set_long(h, CURLOPT_CONNECTTIMEOUT,
                      (long)(db->connect_timeout < db->timeout ? db->connect_timeout : db->timeout));
    } else {
        curl_set_long(h, CURLOPT_CONNECTTIMEOUT, (long)db->connect_timeout);
        /* Puppet's http_read_timeout (10 minutes) without a byte */
        curl_set_long(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_set_long(h, CURLOPT_LOW_SPEED_TIME, 600L);
    }
    headers = LIBCURL.slist_append(headers, "Accept: application/json");
    if (post) {
        headers = LIBCURL.slist_append(headers, "Content-Type: application/json; charset=UTF-8");
        curl_set_str(h, CURLOPT_POSTFIELDS, post);
    }
    curl_set_slist(h, CURLOPT_HTTPHEADER, headers);
    if (https) {
        curl_set_long(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_set_long(h, CURLOPT_SSL_VERIFYHOST, 2L);
        if (db->cacert) {
            curl_set_str(h, CURLOPT_CAINFO, db->cacert);
            curl_set_str(h, CURLOPT_CAPATH, NULL); /* Puppet's CA alone, not the system's too */
        }
        if (db->crl_check && db->crl)
            curl_set_str(h, CURLOPT_CRLFILE, db->crl);
        if (db->send_client_cert && db->cert) {
            curl_set_str(h, CURLOPT_SSLCERT, db->cert);
            curl_set_str(h, CURLOPT_SSLCERTTYPE, "PEM");
        }
        if (db->send_client_cert && db->key) {
            curl_set_str(h, CURLOPT_SSLKEY, db->key);
            curl_set_str(h, CURLOPT_SSLKEYTYPE, "PEM");
        }
    }
    t->status = 0;
    t->reason[0] = 0;
    t->first_byte = false;
    t->body.len = 0;
    CURLcode rc = LIBCURL.easy_perform(h);
    if (rc == CURLE_WRITE_ERROR && t->js.state == JS_FAILED) {
        /* the answer itself is wrong (or the reader stopped): no other server is asked */
        *err = xstrdup(t->js.error);
        goto out;
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        warn(db, "Request to %s on %ld at route %s timed out after %d seconds. " FAILOVER_MSG, s->host, s->port, route,
             db->timeout > 0 ? db->timeout : 600);
        *cause = xasprintf("%s: timed out after %d seconds", s->url, db->timeout > 0 ? db->timeout : 600);
        t->status = 0; /* (no answer, even when its head came) */
        res = TRY_FAILOVER;
        goto out;
    }
    if (rc != CURLE_OK) {
        const char *msg = errbuf[0] ? errbuf : LIBCURL.easy_strerror(rc);
        warn(db, "Error connecting to %s on %ld at route %s, error message received was '%s'. " FAILOVER_MSG, s->host,
             s->port, route, msg);
        *cause = xasprintf("%s: %s", s->url, msg);
        t->status = 0;
        res = TRY_FAILOVER;
        goto out;
    }
    if (!t->reason[0])
        snprintf(t->reason, sizeof t->reason, "%s", reason_of(t->status));
    if (t->status >= 500) {
        warn(db, "Error connecting to %s on %ld at route %s, error message received was '%s'. " FAILOVER_MSG, s->host,
             s->port, route, t->reason);
        *cause = xasprintf("%s: %ld %s", s->url, t->status, t->reason);
        res = TRY_FAILOVER;
        goto out;
    }
    if (t->status == 404) {
        if (t->first_byte && t->first == '{') {
            *cause = xasprintf("%s: 404 %s", s->url, t->reason);
            res = TRY_NOTFOUND;
        } else {
            warn(db, "Error connecting to %s on %ld at route %s, error message received was '%s'. " FAILOVER_MSG,
                 s->host, s->port, route, t->reason);
            *cause = xasprintf("%s: 404 %s (not PuppetDB's answer: is this PuppetDB, and has it started?)", s->url,
                               t->reason);
            res = TRY_FAILOVER;
        }
        goto out;
    }
    if (t->status >= 200 && t->status < 300 && t->js.state != JS_DONE) {
        *err = xasprintf("PuppetDB's answer from %s ended before its end (%s)", route,
                         t->js.state == JS_START ? "no JSON array" : "an incomplete JSON array");
        goto out;
    }
    res = TRY_OK;
out:
    if (headers)
        LIBCURL.slist_free_all(headers);
    free(route);
    return res;
}

/* Puppet's failover_action: each server in turn (from the last good one with
 * sticky_read_failover) until one answers. PDB_OK: t holds the answer (any status below 500 but
 * 404). */
static pdb_status request(pdb *db, const char *path, const char *post, transfer *t, char **err)
{
    fsj_taint("PuppetDB was asked");
    *err = NULL;
    size_t first = db->sticky ? db->last_good % db->nservers : 0;
    bool any_response = false, notfound = false;
    sbuf causes = {0};
    for (size_t k = 0; k < db->nservers; k++) {
        size_t i = (first + k) % db->nservers;
        char *cause = NULL;
        if (t->js.nelements && t->js.row) {
            char *ignored = NULL;
            t->js.row(NULL, t->js.data, &ignored); /* forget the rows of a failed answer */
            free(ignored);
        }
        js_reset(&t->js);
        try_result r = try_server(db, &db->servers[i], path, post, t, &cause, err);
        if (cause) {
            sb_addf(&causes, "%s%s", causes.len ? "; " : "", cause);
            free(cause);
        }
        if (r == TRY_FINAL) {
            sb_free(&causes);
            return PDB_ERROR;
        }
        if (r == TRY_OK) {
            if (k)
                db->last_good = i;
            sb_free(&causes);
            return PDB_OK;
        }
        if (r == TRY_NOTFOUND || (r == TRY_FAILOVER && t->status))
            any_response = true, notfound = r == TRY_NOTFOUND;
    }
    if (any_response && notfound) {
        *err = xasprintf("Failed to find '%s' on any of the following 'server_urls': %s", path, db->servers_text);
        sb_free(&causes);
        return PDB_NOT_FOUND;
    }
    *err = xasprintf("Failed to execute '%s' on at least 1 of the following 'server_urls': %s (%s)", path,
                     db->servers_text, sb_str(&causes));
    sb_free(&causes);
    return PDB_ERROR;
}

/* "[400 Bad Request] body" for an answer that is not 2xx (Puppet's words; its lines joined with a
 * space where Puppet simply drops the line breaks, and blanks folded, so that a PQL parse error
 * stays readable on one line). */
static char *status_error(const transfer *t)
{
    sbuf b = {0};
    sb_addf(&b, "[%ld %s] ", t->status, t->reason);
    bool blank = false;
    for (size_t i = 0; i < t->body.len; i++) {
        char c = t->body.s[i];
        if (c == '\r' || c == '\n' || c == ' ' || c == '\t') {
            blank = true;
            continue;
        }
        if (blank && b.len && b.s[b.len - 1] != ' ')
            sb_addc(&b, ' ');
        blank = false;
        sb_addc(&b, c);
    }
    while (b.len && b.s[b.len - 1] == ' ')
        b.s[--b.len] = 0;
    return sb_take(&b);
}

static void transfer_free(transfer *t)
{
    sb_free(&t->body);
    sb_free(&t->js.elem);
    free(t->js.error);
}

/* ------------------------------------------------------------------ facts of a node */

typedef struct {
    hv *facts;
} node_facts_acc;

static int node_fact_row(hiera_value *row, void *data, char **stop)
{
    node_facts_acc *a = data;
    if (!row) {
        hv_decref(a->facts);
        a->facts = hv_hash();
        return 0;
    }
    const hv *r = (const hv *)row;
    hv *name = hv_is(r, HV_HASH) ? hv_hash_gets(r, "name") : NULL;
    hv *value = hv_is(r, HV_HASH) ? hv_hash_gets(r, "value") : NULL;
    if (!name || !hv_is(name, HV_STRING) || !hv_hash_gets(r, "value")) {
        *stop = xstrdup("PuppetDB's answer is not a list of facts (no name and value in its rows)");
        return 1;
    }
    hv_hash_set(a->facts, hv_incref(name), value ? hv_incref(value) : hv_undef());
    return 0;
}

pdb_status pdb_node_facts(pdb *db, const char *node, hiera_value **facts, char **err)
{
    *facts = NULL;
    char *esc = pdb_cgi_escape(node);
    char *path = xasprintf("/pdb/query/v4/nodes/%s/facts", esc);
    free(esc);
    node_facts_acc acc = {hv_hash()};
    transfer t = {.db = db};
    t.js.source = path;
    t.js.row = node_fact_row;
    t.js.data = &acc;
    pdb_status st = request(db, path, NULL, &t, err);
    if (st == PDB_OK && (t.status < 200 || t.status >= 300)) {
        *err = status_error(&t);
        st = PDB_ERROR;
    }
    if (st == PDB_OK)
        *facts = (hiera_value *)acc.facts;
    else
        hv_decref(acc.facts);
    transfer_free(&t);
    free(path);
    return st;
}

/* ------------------------------------------------------------------ queries */

pdb_status pdb_query(pdb *db, const char *query, const char *paging, pdb_row_fn row, void *data, char **err)
{
    *err = NULL;
    /* the body: {"query": <PQL as a JSON string | the AST as given>, paging...} */
    sbuf body = {0};
    sb_adds(&body, "{\"query\": ");
    const char *q = query;
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
        q++;
    if (*q == '[') {
        /* an AST: checked here, so that a typo is reported as such */
        herr e = {0};
        hv *ast = hjson_parse(q, strlen(q), "the query", &e);
        if (!ast || !hv_is(ast, HV_ARRAY)) {
            *err = xasprintf("the query is neither PQL nor a JSON array (AST): %s",
                             e.msg ? e.msg : "not an array");
            herr_clear(&e);
            hv_decref(ast);
            sb_free(&body);
            return PDB_ERROR;
        }
        hv_decref(ast);
        sb_adds(&body, q);
    } else {
        hv *s = hv_str(query);
        herr e = {0};
        int rc = render_json(&body, s, &e);
        hv_decref(s);
        if (rc) {
            *err = xasprintf("the query cannot be sent: %s", e.msg ? e.msg : "not UTF-8");
            herr_clear(&e);
            sb_free(&body);
            return PDB_ERROR;
        }
    }
    if (paging && *paging)
        sb_addf(&body, ", %s", paging);
    sb_addc(&body, '}');
    const char *path = "/pdb/query/v4";
    transfer t = {.db = db};
    t.js.source = path;
    t.js.row = row;
    t.js.data = data;
    pdb_status st = request(db, path, sb_str(&body), &t, err);
    if (st == PDB_OK && (t.status < 200 || t.status >= 300)) {
        *err = status_error(&t);
        st = PDB_ERROR;
    }
    if (st == PDB_NOT_FOUND) {
        /* a 404 from /pdb/query/v4 is no PuppetDB there */
        st = PDB_ERROR;
    }
    transfer_free(&t);
    sb_free(&body);
    return st;
}

typedef struct {
    char **v;
    size_t n, cap;
} names_acc;

static void names_clear(names_acc *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    a->n = 0;
}

static int name_row(hiera_value *row, void *data, char **stop)
{
    names_acc *a = data;
    if (!row) {
        names_clear(a);
        return 0;
    }
    const hv *r = (const hv *)row;
    hv *c = hv_is(r, HV_HASH) ? hv_hash_gets(r, "certname") : NULL;
    if (!c || !hv_is(c, HV_STRING)) {
        char *j = hjson_debug(r);
        *stop = xasprintf("the nodes query must give rows with a certname (e.g. inventory[certname] { ... }), "
                          "not %.200s",
                          j);
        free(j);
        return 1;
    }
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 256;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = xstrndup(hv_str_ptr(c), hv_str_len(c));
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

pdb_status pdb_list_nodes(pdb *db, const char *query, bool include_inactive, char ***names, size_t *n, char **err)
{
    *names = NULL;
    *n = 0;
    names_acc a = {0};
    const char *q = query;
    if (!q)
        q = include_inactive ? "[\"from\", \"factsets\", [\"extract\", [\"certname\"], [\"=\", \"node_state\", \"any\"]]]"
                             : "[\"from\", \"factsets\", [\"extract\", [\"certname\"]]]";
    pdb_status st = pdb_query(db, q, NULL, name_row, &a, err);
    if (st != PDB_OK) {
        names_clear(&a);
        free(a.v);
        return st;
    }
    if (a.n)
        qsort(a.v, a.n, sizeof *a.v, cmp_names);
    size_t j = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (j && !strcmp(a.v[j - 1], a.v[i]))
            free(a.v[i]);
        else
            a.v[j++] = a.v[i];
    }
    *names = a.v;
    *n = j;
    return PDB_OK;
}

typedef struct {
    pdb_facts_fn got;
    void *data;
} facts_page;

static int facts_row(hiera_value *row, void *data, char **stop)
{
    facts_page *fp = data;
    if (!row) {
        fp->got(NULL, NULL, fp->data); /* a failed answer: its nodes come again from the next server */
        return 0;
    }
    const hv *r = (const hv *)row;
    hv *c = hv_is(r, HV_HASH) ? hv_hash_gets(r, "certname") : NULL;
    hv *f = hv_is(r, HV_HASH) ? hv_hash_gets(r, "facts") : NULL;
    if (!c || !hv_is(c, HV_STRING) || !f || !hv_is(f, HV_HASH)) {
        *stop = xstrdup("PuppetDB's inventory answer has rows without certname and facts");
        return 1;
    }
    fp->got(hv_str_ptr(c), (hiera_value *)f, fp->data);
    return 0;
}

pdb_status pdb_facts_of(pdb *db, const char *const *names, size_t n, pdb_facts_fn got, void *data, char **err)
{
    *err = NULL;
    if (n == 0)
        return PDB_OK;
    /* ["from", "inventory", ["extract", ["certname", "facts"], ["and", ["in", "certname", ["array",
     * [names]]], ["=", "node_state", "any"]]]] */
    hv *list = hv_array_sized(n);
    for (size_t i = 0; i < n; i++)
        hv_array_push(list, hv_str(names[i]));
    herr e = {0};
    sbuf q = {0};
    sb_adds(&q, "[\"from\", \"inventory\", [\"extract\", [\"certname\", \"facts\"], [\"and\", [\"in\", \"certname\", "
                "[\"array\", ");
    int rc = render_json(&q, list, &e);
    hv_decref(list);
    if (rc) {
        *err = xasprintf("a node name cannot be sent to PuppetDB: %s", e.msg ? e.msg : "not UTF-8");
        herr_clear(&e);
        sb_free(&q);
        return PDB_ERROR;
    }
    sb_adds(&q, "]], [\"=\", \"node_state\", \"any\"]]]]");
    facts_page fp = {got, data};
    pdb_status st = pdb_query(db, sb_str(&q), NULL, facts_row, &fp, err);
    sb_free(&q);
    return st;
}
