/* settings.c - Puppet's settings and environments as `puppet lookup` (Puppet 7.23, run mode
 * "server") resolves them: lib/puppet/settings.rb (the value chain and "$name" interpolation),
 * settings/<type>_setting.rb (each type's conversion), defaults.rb (settings_table.h), environments.rb
 * and settings/environment_conf.rb (environments, environment.conf), node/environment.rb
 * (modulepath, modules), resource/type_collection.rb and util/execution.rb (config_version).
 *
 * The value of a setting comes from the first of: the command line, the environment's
 * environment.conf (modulepath, manifest, config_version, environment_timeout,
 * environment_data_provider, static_catalogs, rich_data), puppet.conf's [server], [master] and
 * [main] sections, the application's defaults (the run mode's directories), Puppet's default. */
#include "engine/settings.h"
#include "base/once.h"
#include "base/error.h"
#include "base/fsjournal.h"

#include "base/diag.h"
#include "base/fileio.h"
#include "base/glob.h"
#include "base/pathname.h"
#include "engine/cache.h"
#include "engine/installed.h"
#include "formats/diskcache.h"
#include "formats/ini.h"
#include "formats/json.h"
#include "formats/render.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ the table */

typedef enum {
    ST_STRING, ST_FILE, ST_DIRECTORY, ST_FILE_OR_DIRECTORY, ST_PATH, ST_BOOLEAN, ST_INTEGER,
    ST_PORT, ST_DURATION, ST_TTL, ST_ENUM, ST_SYMBOLIC_ENUM, ST_PRIORITY, ST_ARRAY, ST_TERMINUS,
    ST_AUTOSIGN, ST_CERTIFICATE_REVOCATION, ST_SERVER_LIST, ST_HTTP_EXTRA_HEADERS, ST_ALIAS,
} skind;

/* DEF_ABSENT: not a setting of that version of Puppet */
typedef enum { DEF_NIL, DEF_STRING, DEF_TRUE, DEF_FALSE, DEF_INTEGER, DEF_SYMBOL, DEF_EMPTY_ARRAY, DEF_COMPUTED, DEF_ABSENT } dkind;

/* The versions of Puppet whose settings the table holds: index 0 Puppet 7.23, 1 Puppet 8.10. */
#define NVERSIONS 2
static int version_index(hiera_puppet_version v) { return v == HIERA_PUPPET_8 ? 1 : 0; }

typedef struct {
    const char *name;
    skind kind;
    char short_opt;
    dkind dk[NVERSIONS]; /* each version's default */
    const char *dv[NVERSIONS];
    const char *extra; /* allowed values ("a\0b\0"), or the aliased setting */
} sdef;

static const sdef DEFS[] = {
#define SETTING(n, k, s, dk7, dv7, dk8, dv8, x) {n, k, s, {dk7, dk8}, {dv7, dv8}, x},
#include "engine/settings_table.h"
#undef SETTING
};
#define NDEFS (sizeof DEFS / sizeof *DEFS)

static bool in_version(int idx, int vi) { return idx >= 0 && DEFS[idx].dk[vi] != DEF_ABSENT; }

/* The table's indexes by name: an open-addressing table of FNV-1a hashes, made once. (It was a
 * qsort of the names: 330,000 instructions, 5% of a one-shot lookup; filling this table takes
 * about 20,000.) */
#define BY_NAME_SLOTS 1024 /* a power of two, well above twice the settings */
static short BY_NAME[BY_NAME_SLOTS]; /* index + 1, 0 empty */
static hiera_once by_name_once = HIERA_ONCE_INIT;

static uint32_t name_hash(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

/* the settings environment.conf may hold (EnvironmentConf::VALID_SETTINGS) */
static const char *const ENV_SETTINGS[] = {"modulepath", "manifest", "config_version", "environment_timeout",
                                           "environment_data_provider", "static_catalogs", "rich_data", NULL};
static bool is_env_setting(const char *name)
{
    for (size_t i = 0; ENV_SETTINGS[i]; i++)
        if (!strcmp(ENV_SETTINGS[i], name))
            return true;
    return false;
}

/* what lookup_raw asks of every setting, found once by name: environment.conf may hold it
 * (is_env_setting), the application gives it a default (app_default) */
enum { DEF_ENV_CONF = 1, DEF_APP_DEFAULT = 2, DEF_HOOKED = 4, DEF_HOOKED_8 = 8 };
static unsigned char DEF_FLAGS[NDEFS];
static int find_index(const char *name);
static const char *const APP_DEFAULTS[] = {"confdir", "codedir", "vardir", "publicdir", "rundir", "logdir",
                                           "ssldir", "name", "facts_terminus", NULL};

/* the settings a value given to them is checked for when it is set (a hook in defaults.rb) */
static const char *const HOOKED[] = {"log_level", "disable_warnings", "strict", "disable_i18n", "trace", "autoflush", "path",
                                     "daemonize", "data_binding_terminus", "http_proxy_password", "filetimeout",
                                     "environment_data_provider", "certname", "supported_checksum_types",
                                     "disable_per_environment_manifest", "node_name_fact", "pluginsync", "factpath",
                                     "storeconfigs", NULL};

static void by_name_init(void)
{
    _Static_assert(NDEFS * 2 < BY_NAME_SLOTS, "BY_NAME_SLOTS too small");
    for (size_t i = 0; i < NDEFS; i++) {
        uint32_t at = name_hash(DEFS[i].name) & (BY_NAME_SLOTS - 1);
        while (BY_NAME[at])
            at = (at + 1) & (BY_NAME_SLOTS - 1);
        BY_NAME[at] = (short)(i + 1);
    }
    for (size_t k = 0; ENV_SETTINGS[k]; k++) {
        int i = find_index(ENV_SETTINGS[k]);
        if (i >= 0)
            DEF_FLAGS[i] |= DEF_ENV_CONF;
    }
    for (size_t k = 0; APP_DEFAULTS[k]; k++) {
        int i = find_index(APP_DEFAULTS[k]);
        if (i >= 0)
            DEF_FLAGS[i] |= DEF_APP_DEFAULT;
    }
    for (size_t k = 0; HOOKED[k]; k++) {
        int i = find_index(HOOKED[k]);
        if (i >= 0)
            DEF_FLAGS[i] |= DEF_HOOKED;
    }
    int psf = find_index("preferred_serialization_format");
    if (psf >= 0)
        DEF_FLAGS[psf] |= DEF_HOOKED_8;
}

static int def_index(const char *name)
{
    hiera_once_run(&by_name_once, by_name_init);
    return find_index(name);
}

static int find_index(const char *name)
{
    for (uint32_t at = name_hash(name) & (BY_NAME_SLOTS - 1); BY_NAME[at]; at = (at + 1) & (BY_NAME_SLOTS - 1))
        if (strcmp(DEFS[BY_NAME[at] - 1].name, name) == 0)
            return BY_NAME[at] - 1;
    return -1;
}

/* The index of a setting of version vi's Puppet, or -1 when that Puppet has no such setting. */
static int version_def_index(const char *name, int vi)
{
    int idx = def_index(name);
    return in_version(idx, vi) ? idx : -1;
}

/* Each version's settings in its order, as indexes into DEFS (hiera_puppet_setting_info). */
static short VERSION_ORDER[NVERSIONS][NDEFS];
static size_t VERSION_COUNT[NVERSIONS];
static hiera_once version_order_once = HIERA_ONCE_INIT;

static void version_order_init(void)
{
    for (int vi = 0; vi < NVERSIONS; vi++)
        for (size_t i = 0; i < NDEFS; i++)
            if (DEFS[i].dk[vi] != DEF_ABSENT)
                VERSION_ORDER[vi][VERSION_COUNT[vi]++] = (short)i;
}

static unsigned def_flags(int idx)
{
    hiera_once_run(&by_name_once, by_name_init);
    return DEF_FLAGS[idx];
}

bool hiera_setting_exists(const char *name) { return name && version_def_index(name, 0) >= 0; }

bool hiera_puppet_setting_exists(hiera_puppet_version v, const char *name)
{
    return name && version_def_index(name, version_index(puppet_version_resolve(v))) >= 0;
}

/* ------------------------------------------------------------------ objects */

typedef struct {
    bool set;
    ini_kind kind;
    char *value;
} cli_value;

struct hiera_settings {
    hiera_layout layout;
    hiera_puppet_version version; /* the Puppet whose settings these are (7 or 8) */
    int vi;                       /* its index in the table's defaults (version_index) */
    bool root;
    bool ssl_owned; /* Debian: /var/lib/puppet/ssl belongs to the effective user */
    cli_value cli[NDEFS];
    ini_file conf;
    bool have_conf;
    /* each setting's line in puppet.conf as lookup_raw takes it: [server]'s, else [master]'s, else
     * [main]'s (the first of its name in the section), or NULL (index_conf) */
    const ini_setting *conf_at[NDEFS];
    char *conf_path;
    diag_sink sink; /* the caller's diagnostics (hiera_settings_options.diagnostics): */
    hiera_diagnostic_fn user_diag;
    void *user_diag_data;
    /* the host's name as Facter would give it, for the certname and srv_domain defaults: found
     * once, when first needed */
    pthread_mutex_t host_lock;
    bool host_done;
    char *fqdn, *domain;
};

struct hiera_environment {
    const hiera_settings *s;
    char *name;
    char *dir;             /* NULL: the default production environment, without a folder */
    ini_file conf;         /* environment.conf (empty when missing) */
    char **modulepath;     /* every folder, PUPPETLIB's first */
    size_t nmodulepath;
    char *config_version;  /* NULL: none */
    pthread_mutex_t lock;  /* for what is found when first needed: */
    hv *modules;           /* module name -> folder (string) or false */
    hv *vars;              /* settings::<name> (built once) */
    herr vars_err;
    bool vars_done;
    bool check_done;       /* hiera_environment_check's answer, found once */
    herr check_err;
};

static void settings_diag(int severity, const char *code, const char *file, int line, int col, const char *message, void *data)
{
    const hiera_settings *s = data;
    hiera_diagnostic d = {(hiera_severity)severity, code, file, line, col, message};
    s->user_diag(&d, s->user_diag_data);
}

/* Reports a warning (or an error Puppet goes on after) to the calling thread's diagnostics sink,
 * once per `seen` hash (Puppet warns once where it warns at all). */
static void report(hv *seen, int severity, const char *code, const char *file, const char *msg)
{
    if (seen) {
        if (hv_hash_gets(seen, msg))
            return;
        hv_hash_sets(seen, msg, hv_true());
    }
    diag_report(severity, code, file, 0, 0, "%s", msg);
}

/* ------------------------------------------------------------------ Ruby's helpers */

static char *cwd_path(void)
{
    size_t cap = 256;
    for (;;) {
        char *buf = xmalloc(cap);
        if (getcwd(buf, cap))
            return buf;
        free(buf);
        if (errno != ERANGE)
            return xstrdup("/");
        cap *= 2;
    }
}

/* Ruby's default home: $HOME, else the user's passwd entry. */
static char *home_dir(herr *err)
{
    const char *h = fs_getenv("HOME");
    if (h && *h) {
        if (h[0] != '/') {
            herr_set(err, HERR_PUPPET, "non-absolute home");
            return NULL;
        }
        return xstrdup(h);
    }
    char buf[4096];
    struct passwd pwbuf, *pw = NULL;
    fsj_taint("the user database was read");
    if (getpwuid_r(getuid(), &pwbuf, buf, sizeof buf, &pw) == 0 && pw && pw->pw_dir)
        return xstrdup(pw->pw_dir);
    herr_set(err, HERR_PUPPET, "couldn't find login name -- expanding `~'");
    return NULL;
}

/* Ruby's File.expand_path(path, dir): "~" and "~user" expanded, relative paths made absolute
 * against dir (itself expanded) or the working directory, "." and ".." resolved, repeated and
 * trailing slashes dropped (leading ones are kept as written). malloc'ed, or NULL with err. */
/* Whether an absolute path is already as expand_path gives it: one leading slash, then
 * components that are neither empty, "." nor "..", no trailing slash ("/" itself included). */
static bool path_is_expanded(const char *p)
{
    if (p[0] != '/' || p[1] == '/')
        return false;
    for (const char *c = p + 1; *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || (c[0] == '.' && (len == 1 || (len == 2 && c[1] == '.'))))
            return false;
        if (!e)
            break;
        c = e + 1;
        if (!*c)
            return false; /* a trailing slash */
    }
    return true;
}

static char *expand_path(const char *path, const char *dir, herr *err)
{
    if (path_is_expanded(path))
        return xstrdup(path); /* (most settings: no work to do) */
    char *base = NULL;
    const char *rest = path;
    if (path[0] == '~') {
        const char *slash = strchr(path, '/');
        size_t ulen = slash ? (size_t)(slash - path - 1) : strlen(path) - 1;
        if (ulen == 0) {
            base = home_dir(err);
        } else {
            char *user = xstrndup(path + 1, ulen);
            char buf[4096];
            struct passwd pwbuf, *pw = NULL;
            fsj_taint("the user database was read");
            if (getpwnam_r(user, &pwbuf, buf, sizeof buf, &pw) != 0)
                pw = NULL;
            if (pw && pw->pw_dir)
                base = xstrdup(pw->pw_dir);
            else
                herr_set(err, HERR_PUPPET, "user %s doesn't exist", user);
            free(user);
        }
        if (!base)
            return NULL;
        rest = slash ? slash : "";
    } else if (path[0] != '/') {
        base = dir ? expand_path(dir, NULL, err) : cwd_path();
        if (!base)
            return NULL;
    }
    char *whole = base ? xjoin(base, "/", rest, NULL) : xstrdup(rest);
    free(base);
    /* normalise after the leading slashes */
    size_t lead = 0;
    while (whole[lead] == '/')
        lead++;
    char **parts = NULL;
    size_t n = 0;
    char *save = NULL;
    for (char *p = strtok_r(whole + lead, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
        if (!strcmp(p, "."))
            continue;
        if (!strcmp(p, "..")) {
            if (n)
                n--;
            continue;
        }
        parts = xrealloc(parts, (n + 1) * sizeof *parts);
        parts[n++] = p;
    }
    sbuf b = {0};
    if (lead == 0)
        lead = 1;
    for (size_t i = 0; i < lead; i++)
        sb_addc(&b, '/');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_addc(&b, '/');
        sb_adds(&b, parts[i]);
    }
    free(parts);
    free(whole);
    return sb_take(&b);
}

/* Ruby's str.split(sep) for a one-character separator: empty pieces kept except at the end
 * (so "" gives none). The pieces are malloc'ed. */
static char **split_char(const char *s, char sep, size_t *n)
{
    char **out = NULL;
    *n = 0;
    const char *p = s;
    for (;;) {
        const char *q = strchr(p, sep);
        size_t len = q ? (size_t)(q - p) : strlen(p);
        out = xrealloc(out, (*n + 1) * sizeof *out);
        out[(*n)++] = xstrndup(p, len);
        if (!q)
            break;
        p = q + 1;
    }
    while (*n && !*out[*n - 1])
        free(out[--*n]);
    return out;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static bool ascii_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

/* Ruby's str.split(/\s*,\s*\/) as an array value */
static hv *split_commas(const char *s)
{
    hv *a = hv_array();
    size_t len = strlen(s), p = 0;
    size_t nempty = 0; /* empty pieces wait: at the end they are dropped */
    for (;;) {
        size_t q = p;
        while (q < len && s[q] != ',')
            q++;
        size_t e = q;
        if (q < len)
            while (e > p && is_blank(s[e - 1]))
                e--;
        if (e > p) {
            for (; nempty; nempty--)
                hv_array_push(a, hv_str(""));
            hv_array_push(a, hv_strn(s + p, e - p));
        } else {
            nempty++;
        }
        if (q >= len)
            break;
        p = q + 1;
        while (p < len && is_blank(s[p]))
            p++;
    }
    return a;
}

/* Ruby's Integer(str): blanks around, a sign, 0x/0b/0o/0d or a leading 0 (octal), digits with
 * single underscores between them. */
static bool ruby_integer(const char *s, int64_t *out)
{
    while (is_blank(*s))
        s++;
    bool neg = false;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2;
    else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        base = 2, s += 2;
    else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
        base = 8, s += 2;
    else if (s[0] == '0' && (s[1] == 'd' || s[1] == 'D'))
        base = 10, s += 2;
    else if (s[0] == '0' && s[1])
        base = 8, s += 1;
    uint64_t v = 0;
    bool any = false, last_us = false;
    for (; *s && !is_blank(*s); s++) {
        if (*s == '_') {
            if (!any || last_us)
                return false;
            last_us = true;
            continue;
        }
        int d = (*s >= '0' && *s <= '9') ? *s - '0' : (*s >= 'a' && *s <= 'z') ? *s - 'a' + 10 : (*s >= 'A' && *s <= 'Z') ? *s - 'A' + 10 : 99;
        if (d >= base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
        any = true;
        last_us = false;
    }
    while (is_blank(*s))
        s++;
    if (*s || last_us || (!any && base == 10))
        return false;
    if (!any && base != 8)
        return false;
    if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static char *inspect_str(const hv *v)
{
    sbuf b = {0};
    ruby_inspect(&b, v);
    return sb_take(&b);
}

/* ------------------------------------------------------------------ layout and host */

#define DEBIAN_LIBRARY "/usr/lib/ruby/vendor_ruby/puppet/util/run_mode.rb"

static hiera_layout find_layout(void)
{
    const char *forced = fs_getenv("HIERA_PUPPET_LAYOUT");
    if (forced && !strcmp(forced, "debian"))
        return HIERA_LAYOUT_DEBIAN;
    if (forced && !strcmp(forced, "puppetlabs"))
        return HIERA_LAYOUT_PUPPETLABS;
    char *cmd = installed_puppet_command();
    if (cmd) {
        hiera_layout found = !strncmp(cmd, "/opt/puppetlabs/", 16)                          ? HIERA_LAYOUT_PUPPETLABS
                             : !strcmp(cmd, "/usr/bin/puppet") && path_exists(DEBIAN_LIBRARY) ? HIERA_LAYOUT_DEBIAN
                                                                                             : HIERA_LAYOUT_PUPPETLABS; /* a gem: Puppet's own code */
        free(cmd);
        return found;
    }
    if (path_exists("/opt/puppetlabs/bin/puppet"))
        return HIERA_LAYOUT_PUPPETLABS;
    return HIERA_LAYOUT_DEBIAN;
}

/* The layout, found again only when HIERA_PUPPET_LAYOUT or PATH changed (a process that makes
 * many settings does not search PATH each time). */
static hiera_layout detect_layout(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *last_forced, *last_path;
    static bool known;
    static hiera_layout last;
    const char *forced = fs_getenv("HIERA_PUPPET_LAYOUT"), *path = fs_getenv("PATH");
    pthread_mutex_lock(&lock);
    bool same = known && !strcmp(forced ? forced : "\n", last_forced) && !strcmp(path ? path : "\n", last_path);
    hiera_layout l = same ? last : find_layout();
    if (!same) {
        free(last_forced);
        free(last_path);
        last_forced = xstrdup(forced ? forced : "\n"); /* "\n": unset (no value holds it alone) */
        last_path = xstrdup(path ? path : "\n");
        last = l;
        known = true;
    }
    pthread_mutex_unlock(&lock);
    return l;
}

/* Facter's hostname and domain: the host name up to its first dot, the domain after it, else
 * the canonical name's, else /etc/resolv.conf's "domain" or first "search" entry. */
static void find_host(hiera_settings *s)
{
    fsj_taint("the host's name was asked");
    pthread_mutex_lock(&s->host_lock);
    if (!s->host_done) {
        char host[HOST_NAME_MAX + 1] = "";
        gethostname(host, sizeof host - 1);
        char *domain = NULL;
        char *dot = strchr(host, '.');
        if (dot) {
            domain = xstrdup(dot + 1);
            *dot = 0;
        } else if (*host) {
            struct addrinfo hints = {0}, *res = NULL;
            hints.ai_flags = AI_CANONNAME;
            if (getaddrinfo(host, NULL, &hints, &res) == 0 && res) {
                const char *canon = res->ai_canonname;
                const char *d = canon ? strchr(canon, '.') : NULL;
                if (d && d[1])
                    domain = xstrdup(d + 1);
                freeaddrinfo(res);
            }
        }
        if (!domain) {
            FILE *f = fopen("/etc/resolv.conf", "r");
            char line[512];
            while (f && !domain && fgets(line, sizeof line, f)) {
                char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
                if (w && (!strcmp(w, "domain") || !strcmp(w, "search"))) {
                    char *v = strtok_r(NULL, " \t\r\n", &save);
                    if (v)
                        domain = xstrdup(v);
                }
            }
            if (f)
                fclose(f);
        }
        s->domain = domain;
        s->fqdn = domain ? xjoin(host, ".", domain, NULL) : xstrdup(host);
        for (char *p = s->fqdn; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        size_t l = strlen(s->fqdn);
        while (l && s->fqdn[l - 1] == '.')
            s->fqdn[--l] = 0;
        s->host_done = true;
    }
    pthread_mutex_unlock(&s->host_lock);
}

/* ------------------------------------------------------------------ raw values */

typedef enum { RV_NIL, RV_STRING, RV_TRUE, RV_FALSE, RV_INTEGER, RV_INFINITY, RV_EMPTY_ARRAY, RV_VALUE } rv_kind;

typedef struct {
    rv_kind kind;
    char *s;   /* RV_STRING (owned) */
    int64_t i; /* RV_INTEGER */
    hv *v;     /* RV_VALUE: an already converted value (owned) */
} rawval;

static void rv_free(rawval *r)
{
    free(r->s);
    hv_decref(r->v);
    memset(r, 0, sizeof *r);
}

static rawval rv_str(char *s) { return (rawval){RV_STRING, s, 0, NULL}; }

/* a converted value as a raw one (STEALS v) */
static rawval rv_from_value(hv *v)
{
    rawval r = {RV_VALUE, NULL, 0, v};
    switch (hv_kind_of(v)) {
    case HV_UNDEF: r.kind = RV_NIL; break;
    case HV_BOOL: r.kind = hv_bool_val(v) ? RV_TRUE : RV_FALSE; break;
    case HV_INT: r.kind = RV_INTEGER, r.i = hv_int_val(v); break;
    case HV_FLOAT: r.kind = RV_INFINITY; break;
    case HV_STRING: r.kind = RV_STRING, r.s = xstrdup(hv_str_ptr(v)); break;
    default: return r;
    }
    hv_decref(v);
    r.v = NULL;
    return r;
}

static rawval rv_ini(ini_kind k, const char *value)
{
    if (k == INI_TRUE)
        return (rawval){RV_TRUE, NULL, 0, NULL};
    if (k == INI_FALSE)
        return (rawval){RV_FALSE, NULL, 0, NULL};
    return rv_str(xstrdup(value ? value : ""));
}

/* ------------------------------------------------------------------ the chain */

typedef struct {
    const hiera_settings *s;
    const hiera_environment *env; /* the environment whose environment.conf is in the chain */
    const char *env_name;         /* $environment in config_version */
    int depth;
    bool checking;                /* hiera_environment_check: the host need not be looked up */
    hv *seen;                     /* warnings reported (once each), or NULL: report none */
    /* the values already interpolated in this chain (all_settings: each setting is asked for
     * itself and for every "$name" naming it), or NULL; memo_height[i]: how much deeper than
     * its own call setting i's interpolation went, so that a value is reused only where making
     * it again would pass the depth bound too */
    hv **memo;
    int *memo_height;
    int reached; /* the deepest call so far (depth at its check) */
} chain;

/* an error that interpolation wraps ("Error converting value for param...") or not */
typedef struct {
    herr e;
    bool interp;
} serr;

static hv *chain_interpolate(chain *ch, int idx, serr *err);
static char *interpolate_string(chain *ch, const char *name, serr *err);

static const char *app_default(const hiera_settings *s, const char *name, char **owned)
{
    bool deb = s->layout == HIERA_LAYOUT_DEBIAN;
    const char *sys = NULL, *user = NULL;
    if (!strcmp(name, "confdir"))
        sys = deb ? "/etc/puppet" : "/etc/puppetlabs/puppet", user = deb ? "~/.puppet/etc" : "~/.puppetlabs/etc/puppet";
    else if (!strcmp(name, "codedir"))
        sys = deb ? "/etc/puppet/code" : "/etc/puppetlabs/code", user = deb ? "~/.puppet/code" : "~/.puppetlabs/etc/code";
    else if (!strcmp(name, "vardir"))
        sys = deb ? "/var/cache/puppet" : "/opt/puppetlabs/puppet/cache",
        user = deb ? "~/.puppet/cache" : "~/.puppetlabs/opt/puppet/cache";
    else if (!strcmp(name, "publicdir"))
        sys = deb ? "/var/cache/puppet/public" : "/opt/puppetlabs/puppet/public",
        user = deb ? "~/.puppet/cache/public" : "~/.puppetlabs/opt/puppet/public";
    else if (!strcmp(name, "rundir"))
        sys = deb ? "/run/puppet" : "/var/run/puppetlabs", user = deb ? "~/.puppet/var/run" : "~/.puppetlabs/var/run";
    else if (!strcmp(name, "logdir"))
        sys = deb ? "/var/log/puppet" : "/var/log/puppetlabs/puppet", user = deb ? "~/.puppet/var/log" : "~/.puppetlabs/var/log";
    else if (!strcmp(name, "ssldir") && deb) {
        /* Debian's run mode: the system folder as root or when it is ours */
        return s->root || s->ssl_owned ? "/var/lib/puppet/ssl" : "$confdir/ssl";
    } else if (!strcmp(name, "name"))
        return "lookup";
    else if (!strcmp(name, "facts_terminus"))
        return "yaml";
    if (!sys)
        return NULL;
    if (s->root)
        return sys;
    herr e = {0};
    *owned = expand_path(user, NULL, &e);
    herr_clear(&e);
    return *owned ? *owned : user;
}

/* A default computed by Ruby code in defaults.rb. */
static int computed_default(chain *ch, const char *name, rawval *out, serr *err)
{
    const hiera_settings *s = ch->s;
    bool deb = s->layout == HIERA_LAYOUT_DEBIAN;
    if (!strcmp(name, "basemodulepath")) {
        *out = rv_str(xstrdup(deb ? "$codedir/modules:/usr/share/puppet/modules" : "$codedir/modules:/opt/puppetlabs/puppet/modules"));
    } else if (!strcmp(name, "vendormoduledir")) {
        *out = rv_str(xstrdup(deb ? "/usr/share/puppet/vendor_modules" : "/opt/puppetlabs/puppet/vendor_modules"));
    } else if (!strcmp(name, "diff_args")) {
        *out = rv_str(xstrdup("-u"));
    } else if (!strcmp(name, "digest_algorithm")) {
        *out = rv_str(xstrdup("sha256"));
    } else if (!strcmp(name, "supported_checksum_types")) {
        hv *a = hv_array();
        static const char *types[] = {"sha256", "sha384", "sha512", "sha224", "md5"};
        for (size_t i = 0; i < 5; i++)
            hv_array_push(a, hv_str(types[i]));
        *out = (rawval){RV_VALUE, NULL, 0, a};
    } else if (!strcmp(name, "certname") || !strcmp(name, "srv_domain")) {
        if (ch->checking) {
            *out = rv_str(xstrdup("localhost")); /* any name does to check the others */
            return 0;
        }
        find_host((hiera_settings *)s);
        if (!strcmp(name, "certname"))
            *out = rv_str(xstrdup(s->fqdn));
        else
            *out = s->domain ? rv_str(xstrdup(s->domain)) : (rawval){RV_NIL, NULL, 0, NULL};
    } else if (!strcmp(name, "hiera_config")) {
        /* $codedir/hiera.yaml when it exists, else $confdir/hiera.yaml */
        char *codedir = interpolate_string(ch, "codedir", err);
        if (!codedir)
            return -1;
        char *p = xjoin(codedir, "/hiera.yaml", NULL);
        free(codedir);
        if (path_exists(p)) {
            *out = rv_str(p);
            return 0;
        }
        free(p);
        char *confdir = interpolate_string(ch, "confdir", err);
        if (!confdir)
            return -1;
        *out = rv_str(xjoin(confdir, "/hiera.yaml", NULL));
        free(confdir);
    } else if (!strcmp(name, "cadir")) {
        char *ssldir = interpolate_string(ch, "ssldir", err);
        if (!ssldir)
            return -1;
        char *old = xjoin(ssldir, "/ca", NULL);
        free(ssldir);
        struct stat st;
        if (fs_lstat(old, &st) == 0) {
            if (S_ISLNK(st.st_mode)) {
                char buf[PATH_MAX];
                ssize_t n = fs_readlink(old, buf, sizeof buf);
                if (n >= 0) {
                    buf[n] = 0;
                    free(old);
                    old = xstrdup(buf);
                }
            }
            *out = rv_str(old);
        } else {
            free(old);
            *out = rv_str(xstrdup(deb ? "/etc/puppet/puppetserver/ca" : "/etc/puppetlabs/puppetserver/ca"));
        }
    } else {
        *out = (rawval){RV_NIL, NULL, 0, NULL};
    }
    return 0;
}

static int env_conf_value(chain *ch, const char *name, rawval *out, serr *err);

/* The default Puppet's table writes for d (not a computed one). */
static rawval table_default(const sdef *d, int vi)
{
    rawval r = {RV_NIL, NULL, 0, NULL};
    switch (d->dk[vi]) {
    case DEF_STRING:
    case DEF_SYMBOL: r = rv_str(xstrdup(d->dv[vi])); break;
    case DEF_TRUE: r.kind = RV_TRUE; break;
    case DEF_FALSE: r.kind = RV_FALSE; break;
    case DEF_INTEGER: r.kind = RV_INTEGER, r.i = strtoll(d->dv[vi], NULL, 10); break;
    case DEF_EMPTY_ARRAY: r.kind = RV_EMPTY_ARRAY; break;
    case DEF_NIL:
    case DEF_COMPUTED:
    case DEF_ABSENT: break;
    }
    return r;
}

/* ChainedValues#lookup: the first source that has the setting; nil there falls to the default. */
static int lookup_raw(chain *ch, int idx, rawval *out, serr *err)
{
    const hiera_settings *s = ch->s;
    const sdef *d = &DEFS[idx];
    *out = (rawval){RV_NIL, NULL, 0, NULL};
    bool to_default = false;
    if (s->cli[idx].set) {
        *out = rv_ini(s->cli[idx].kind, s->cli[idx].value);
        return 0;
    }
    unsigned flags = def_flags(idx);
    if (ch->env && (flags & DEF_ENV_CONF)) {
        if (env_conf_value(ch, d->name, out, err))
            return -1;
        if (out->kind != RV_NIL)
            return 0;
        to_default = true;
    }
    if (!to_default && s->conf_at[idx]) {
        *out = rv_ini(s->conf_at[idx]->kind, s->conf_at[idx]->value);
        return 0;
    }
    if (!to_default && (flags & DEF_APP_DEFAULT)) {
        char *owned = NULL;
        const char *app = app_default(s, d->name, &owned);
        if (app) {
            *out = rv_str(owned ? owned : xstrdup(app));
            return 0;
        }
    }
    if (d->kind == ST_ALIAS) {
        int target = def_index(d->extra);
        if (target >= 0) {
            if (lookup_raw(ch, target, out, err))
                return -1;
            if (out->kind != RV_NIL)
                return 0;
        }
    }
    if (d->dk[s->vi] == DEF_COMPUTED)
        return computed_default(ch, d->name, out, err);
    *out = table_default(d, s->vi);
    return 0;
}

static hv *rv_to_value(const rawval *r)
{
    switch (r->kind) {
    case RV_NIL: return hv_undef();
    case RV_STRING: return hv_str(r->s);
    case RV_TRUE: return hv_true();
    case RV_FALSE: return hv_false();
    case RV_INTEGER: return hv_int(r->i);
    case RV_INFINITY: return hv_float(INFINITY);
    case RV_EMPTY_ARRAY: return hv_array();
    case RV_VALUE: return hv_incref(r->v);
    }
    return hv_undef();
}

/* ChainedValues#convert: "$name" and "${name}" replaced by the settings' values. */
static int convert(chain *ch, const sdef *d, rawval *r, serr *err)
{
    if (r->kind != RV_STRING || !strchr(r->s, '$'))
        return 0;
    const char *s = r->s;
    sbuf b = {0};
    bool env_failed = false;
    for (size_t i = 0; s[i];) {
        if (s[i] != '$') {
            sb_addc(&b, s[i++]);
            continue;
        }
        size_t nb, ne, end;
        if (s[i + 1] && (ascii_word_char(s[i + 1]))) {
            nb = i + 1;
            ne = nb;
            while (ascii_word_char(s[ne]))
                ne++;
            end = ne;
        } else if (s[i + 1] == '{' && ascii_word_char(s[i + 2])) {
            nb = i + 2;
            ne = nb;
            while (ascii_word_char(s[ne]))
                ne++;
            if (s[ne] != '}') {
                sb_addc(&b, s[i++]);
                continue;
            }
            end = ne + 1;
        } else {
            sb_addc(&b, s[i++]);
            continue;
        }
        char *var = xstrndup(s + nb, ne - nb);
        if (!strcmp(var, "environment") && strcmp(d->name, "config_version")) {
            sb_addn(&b, s + i, end - i); /* stays as written */
            env_failed = true;
        } else if (!strcmp(var, "environment") && ch->env_name) {
            sb_adds(&b, ch->env_name);
        } else if (!strcmp(var, "run_mode")) {
            sb_adds(&b, "server");
        } else {
            int vi = version_def_index(var, ch->s->vi);
            hv *v = NULL;
            if (vi >= 0) {
                v = chain_interpolate(ch, vi, err);
                if (!v) {
                    free(var);
                    sb_free(&b);
                    return -1;
                }
            }
            if (!v || hv_is(v, HV_UNDEF)) {
                hv_decref(v);
                herr_set(&err->e, HERR_PUPPET, "Could not find value for %.*s", (int)(end - i), s + i);
                err->interp = true;
                free(var);
                sb_free(&b);
                return -1;
            }
            ruby_to_s(&b, v);
            hv_decref(v);
        }
        free(var);
        i = end;
    }
    free(r->s);
    r->s = sb_take(&b);
    if (env_failed && ch->seen) {
        char *msg = xasprintf("You cannot interpolate $environment within '%s' when using directory environments. Its value will remain %s.",
                              d->name, r->s);
        report(ch->seen, DIAG_WARNING, "setting-environment", NULL, msg);
        free(msg);
    }
    return 0;
}

/* ------------------------------------------------------------------ conversions */

static const char *class_name(const rawval *r)
{
    switch (r->kind) {
    case RV_NIL: return "NilClass";
    case RV_TRUE: return "TrueClass";
    case RV_FALSE: return "FalseClass";
    case RV_INTEGER: return "Integer";
    case RV_INFINITY: return "Float";
    case RV_STRING: return "String";
    default: return hv_is(r->v, HV_HASH) ? "Hash" : "Array";
    }
}

/* value.inspect / value.to_s for messages */
static char *rv_inspect(const rawval *r)
{
    hv *v = rv_to_value(r);
    char *s = inspect_str(v);
    hv_decref(v);
    return s;
}

static char *rv_to_s(const rawval *r)
{
    hv *v = rv_to_value(r);
    sbuf b = {0};
    ruby_to_s(&b, v);
    hv_decref(v);
    return sb_take(&b);
}

static hv *fail_value(serr *err, const char *fmt, const char *a, const char *b)
{
    herr_set(&err->e, HERR_PUPPET, fmt, a, b);
    err->interp = false;
    return NULL;
}

/* /^(\d+)(y|d|h|m|s)?$/ -> seconds */
static bool duration_format(const char *s, int64_t *out)
{
    const char *p = s;
    uint64_t v = 0;
    if (!(*p >= '0' && *p <= '9'))
        return false;
    while (*p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    uint64_t unit = 1;
    if (*p) {
        unit = *p == 'y' ? 365ull * 24 * 3600 : *p == 'd' ? 24ull * 3600 : *p == 'h' ? 3600 : *p == 'm' ? 60 : *p == 's' ? 1 : 0;
        if (!unit || p[1])
            return false;
    }
    if (v > (uint64_t)INT64_MAX / unit)
        return false;
    *out = (int64_t)(v * unit);
    return true;
}

static bool in_list(const char *list, const char *v)
{
    for (const char *p = list; p && *p; p += strlen(p) + 1)
        if (!strcmp(p, v))
            return true;
    return false;
}

static char *joined_list(const char *list)
{
    sbuf b = {0};
    for (const char *p = list; p && *p; p += strlen(p) + 1) {
        if (b.len)
            sb_adds(&b, "', '");
        sb_adds(&b, p);
    }
    return sb_take(&b);
}

static hv *split_colons_value(const char *s)
{
    size_t n;
    char **parts = split_char(s, ':', &n);
    hv *a = hv_array();
    for (size_t i = 0; i < n; i++)
        hv_array_push(a, hv_str(parts[i]));
    free_list(parts, n);
    return a;
}

/* Each setting type's munge. */
static hv *munge(const sdef *d, skind kind, rawval *r, serr *err)
{
    bool is_str = r->kind == RV_STRING;
    const char *s = is_str ? r->s : NULL;
    switch (kind) {
    case ST_STRING: return rv_to_value(r);
    case ST_FILE:
    case ST_DIRECTORY:
    case ST_FILE_OR_DIRECTORY: {
        if (!is_str || !strcmp(s, ":memory:"))
            return rv_to_value(r);
        char *p = expand_path(s, NULL, &err->e);
        if (!p) {
            err->interp = false;
            return NULL;
        }
        return hv_str_take(p, strlen(p));
    }
    case ST_PATH: {
        if (!is_str)
            return rv_to_value(r);
        size_t n;
        char **parts = split_char(s, ':', &n);
        sbuf b = {0};
        for (size_t i = 0; i < n; i++) {
            char *p = expand_path(parts[i], NULL, &err->e);
            if (!p) {
                err->interp = false;
                free_list(parts, n);
                sb_free(&b);
                return NULL;
            }
            if (i)
                sb_addc(&b, ':');
            sb_adds(&b, p);
            free(p);
        }
        free_list(parts, n);
        size_t len = b.len;
        return hv_str_take(sb_take(&b), len);
    }
    case ST_BOOLEAN:
        if (r->kind == RV_TRUE || (is_str && !strcmp(s, "true")))
            return hv_true();
        if (r->kind == RV_FALSE || (is_str && !strcmp(s, "false")))
            return hv_false();
        {
            char *ins = rv_inspect(r);
            fail_value(err, "Invalid value '%s' for boolean parameter: %s", ins, d->name);
            free(ins);
            return NULL;
        }
    case ST_INTEGER:
    case ST_PORT: {
        int64_t v = 0;
        bool ok = r->kind == RV_INTEGER ? (v = r->i, true) : is_str && ruby_integer(s, &v);
        if (!ok) {
            char *ins = rv_inspect(r);
            fail_value(err, "Cannot convert '%s' to an integer for parameter: %s", ins, d->name);
            free(ins);
            return NULL;
        }
        if (kind == ST_PORT && (v < 0 || v > 65535)) {
            char num[32];
            snprintf(num, sizeof num, "%lld", (long long)v);
            return fail_value(err, "Value '%s' is not a valid port number for parameter: %s", num, d->name);
        }
        return hv_int(v);
    }
    case ST_DURATION: {
        int64_t v;
        if (r->kind == RV_INTEGER || r->kind == RV_NIL)
            return rv_to_value(r);
        if (is_str && duration_format(s, &v))
            return hv_int(v);
        char *ins = rv_inspect(r);
        fail_value(err, "Invalid duration format '%s' for parameter: %s", ins, d->name);
        free(ins);
        return NULL;
    }
    case ST_TTL: {
        int64_t v;
        if (r->kind == RV_INTEGER && r->i < 0) {
            char *ins = rv_inspect(r);
            fail_value(err, "Invalid negative 'time to live' %s - did you mean 'unlimited'?%s", ins, "");
            free(ins);
            return NULL;
        }
        if (r->kind == RV_INTEGER || r->kind == RV_INFINITY)
            return rv_to_value(r);
        if (is_str && !strcmp(s, "unlimited"))
            return hv_float(INFINITY);
        if (is_str && duration_format(s, &v))
            return hv_int(v);
        char *ins = rv_inspect(r);
        fail_value(err, "Invalid 'time to live' format '%s' for parameter: %s", ins, d->name);
        free(ins);
        return NULL;
    }
    case ST_ENUM:
    case ST_SYMBOLIC_ENUM: {
        if (kind == ST_SYMBOLIC_ENUM && !is_str) {
            char *ins = rv_inspect(r);
            fail_value(err, "undefined method `to_sym' for %s:%s", ins, class_name(r));
            free(ins);
            return NULL;
        }
        if (is_str && in_list(d->extra, s))
            return hv_str(s);
        char *v = rv_to_s(r), *allowed = joined_list(d->extra);
        herr_set(&err->e, HERR_PUPPET, "Invalid value '%s' for parameter %s. Allowed values are '%s'", v, d->name, allowed);
        err->interp = false;
        free(v);
        free(allowed);
        return NULL;
    }
    case ST_PRIORITY: {
        if (r->kind == RV_NIL || r->kind == RV_FALSE)
            return hv_undef();
        if (r->kind == RV_INTEGER)
            return hv_int(r->i);
        if (is_str && strpbrk(s, "0123456789"))
            return hv_int(strtoll(s, NULL, 10)); /* String#to_i */
        static const struct {
            const char *name;
            int v;
        } map[] = {{"high", -10}, {"normal", 0}, {"low", 10}, {"idle", 19}};
        for (size_t i = 0; is_str && i < 4; i++)
            if (!strcmp(s, map[i].name))
                return hv_int(map[i].v);
        char *ins = rv_inspect(r);
        fail_value(err, "Invalid priority format '%s' for parameter: %s", ins, d->name);
        free(ins);
        return NULL;
    }
    case ST_ARRAY:
    case ST_SERVER_LIST:
    case ST_HTTP_EXTRA_HEADERS: {
        hv *a;
        if (is_str)
            a = split_commas(s);
        else if (r->kind == RV_EMPTY_ARRAY)
            a = hv_array();
        else if (r->kind == RV_VALUE && hv_is(r->v, HV_ARRAY))
            a = hv_copy(r->v);
        else if (kind == ST_HTTP_EXTRA_HEADERS && r->kind == RV_VALUE && hv_is(r->v, HV_HASH))
            return hv_incref(r->v);
        else if (kind == ST_HTTP_EXTRA_HEADERS)
            return fail_value(err, "Expected an Array, String, or Hash, got a %s%s", class_name(r), "");
        else
            return fail_value(err, "Expected an Array or String, got a %s%s", class_name(r), "");
        if (kind == ST_ARRAY)
            return a;
        hv *out = hv_array();
        for (size_t i = 0; i < hv_array_len(a); i++) {
            hv *e = hv_array_get(a, i);
            hv_array_push(out, hv_is(e, HV_STRING) ? split_colons_value(hv_str_ptr(e)) : hv_incref(e));
        }
        hv_decref(a);
        return out;
    }
    case ST_TERMINUS:
        if (r->kind == RV_NIL || (is_str && !*s))
            return hv_undef();
        if (is_str)
            return hv_str(s);
        {
            char *v = rv_to_s(r);
            fail_value(err, "Invalid terminus setting: %s%s", v, "");
            free(v);
            return NULL;
        }
    case ST_AUTOSIGN:
        if (r->kind == RV_TRUE || (is_str && !strcmp(s, "true")))
            return hv_true();
        if (r->kind == RV_FALSE || r->kind == RV_NIL || (is_str && !strcmp(s, "false")))
            return hv_false();
        if (is_str && s[0] == '/')
            return hv_str(s);
        {
            char *v = rv_to_s(r);
            fail_value(err, "Invalid autosign value %s: must be 'true'/'false' or an absolute path%s", v, "");
            free(v);
            return NULL;
        }
    case ST_CERTIFICATE_REVOCATION:
        if (r->kind == RV_TRUE || (is_str && (!strcmp(s, "chain") || !strcmp(s, "true"))))
            return hv_str("chain");
        if (is_str && !strcmp(s, "leaf"))
            return hv_str("leaf");
        if (r->kind == RV_FALSE || r->kind == RV_NIL || (is_str && !strcmp(s, "false")))
            return hv_false();
        {
            char *v = rv_to_s(r);
            fail_value(err, "Invalid certificate revocation value %s: must be one of 'true', 'chain', 'leaf', or 'false'%s", v, "");
            free(v);
            return NULL;
        }
    case ST_ALIAS: {
        int target = def_index(d->extra);
        return target >= 0 ? munge(d, DEFS[target].kind, r, err) : rv_to_value(r);
    }
    }
    return rv_to_value(r);
}

#define MAX_DEPTH 200

/* ChainedValues#interpolate: the value looked up, "$name"s replaced, converted. */
static hv *chain_interpolate(chain *ch, int idx, serr *err)
{
    const sdef *d = &DEFS[idx];
    if (ch->depth >= MAX_DEPTH) {
        herr_set(&err->e, HERR_PUPPET, "stack level too deep");
        err->interp = false;
        return NULL;
    }
    if (ch->memo && ch->memo[idx] && ch->depth + ch->memo_height[idx] < MAX_DEPTH)
        return hv_incref(ch->memo[idx]);
    int entry = ch->depth, reached_before = ch->reached;
    ch->reached = entry;
    ch->depth++;
    rawval r;
    hv *v = NULL;
    if (lookup_raw(ch, idx, &r, err) == 0) {
        if (!strcmp(d->name, "code")) {
            v = rv_to_value(&r); /* Puppet leaves code as it is */
        } else if (convert(ch, d, &r, err) == 0) {
            v = munge(d, d->kind, &r, err);
        } else if (err->interp) {
            char *inner = err->e.msg;
            err->e.msg = xasprintf("Error converting value for param '%s': %s", d->name, inner);
            free(inner);
        }
    }
    rv_free(&r);
    ch->depth--;
    if (v && ch->memo && !ch->memo[idx]) {
        ch->memo[idx] = hv_incref(v);
        ch->memo_height[idx] = ch->reached - entry;
    }
    if (reached_before > ch->reached)
        ch->reached = reached_before;
    return v;
}

static char *value_to_s(const hv *v)
{
    sbuf b = {0};
    ruby_to_s(&b, v);
    return sb_take(&b);
}

/* The setting as a string (to_s); NULL with err, also for nil ("Could not find value"). */
static char *interpolate_string(chain *ch, const char *name, serr *err)
{
    int idx = def_index(name);
    hv *v = idx >= 0 ? chain_interpolate(ch, idx, err) : NULL;
    if (!v)
        return NULL;
    char *s = hv_is(v, HV_UNDEF) ? NULL : value_to_s(v);
    hv_decref(v);
    if (!s) {
        herr_set(&err->e, HERR_PUPPET, "Could not find value for $%s", name);
        err->interp = true;
    }
    return s;
}

/* ------------------------------------------------------------------ environment.conf */

/* EnvironmentConf#absolute: kept when it starts with "$", else expanded against the environment */
static char *env_absolute(const hiera_environment *env, const char *p, serr *err)
{
    if (p[0] == '$')
        return xstrdup(p);
    char *r = expand_path(p, env->dir, &err->e);
    if (!r)
        err->interp = false;
    return r;
}

static const ini_setting *env_raw(const hiera_environment *env, const char *name)
{
    return ini_setting_get(ini_section_get(&env->conf, "main"), name);
}

static char *raw_text(const ini_setting *st)
{
    return xstrdup(st->kind == INI_STRING ? st->value : st->kind == INI_TRUE ? "true" : "false");
}

/* Dir.glob of a modulepath entry (absolute, or relative to the working directory), sorted */
static void add_globbed(sbuf *out, const char *pattern, size_t *count)
{
    char *abs = pattern[0] == '/' ? xstrdup(pattern) : NULL;
    char *cwd = NULL;
    if (!abs) {
        cwd = cwd_path();
        abs = xjoin(cwd, "/", pattern, NULL);
    }
    glob_result g;
    glob_expand_all(abs, &g, 100000);
    size_t cl = cwd ? strlen(cwd) + 1 : 0;
    for (size_t i = 0; i < g.n; i++) {
        if ((*count)++)
            sb_addc(out, ':');
        sb_adds(out, g.paths[i] + cl);
    }
    glob_free(&g);
    free(abs);
    free(cwd);
}

static int env_conf_value(chain *ch, const char *name, rawval *out, serr *err)
{
    const hiera_environment *env = ch->env;
    chain plain = *ch;
    plain.env = NULL;
    *out = (rawval){RV_NIL, NULL, 0, NULL};
    if (!env->dir) {
        /* EnvironmentConf::Static: the environment's own values */
        if (!strcmp(name, "modulepath")) {
            sbuf b = {0};
            for (size_t i = 0; i < env->nmodulepath; i++)
                if (path_is_dir(env->modulepath[i])) {
                    if (b.len)
                        sb_addc(&b, ':');
                    sb_adds(&b, env->modulepath[i]);
                }
            *out = rv_str(sb_take(&b));
        } else if (!strcmp(name, "manifest")) {
            *out = rv_str(xstrdup("no_manifest"));
        } else if (!strcmp(name, "config_version")) {
            if (env->config_version)
                *out = rv_str(xstrdup(env->config_version));
        } else if (strcmp(name, "environment_data_provider")) {
            hv *v = chain_interpolate(&plain, def_index(name), err);
            if (!v)
                return -1;
            *out = rv_from_value(v);
        }
        return 0;
    }
    const ini_setting *raw = env_raw(env, name);
    if (!strcmp(name, "modulepath")) {
        size_t n = 0;
        char **parts;
        if (raw) {
            char *t = raw_text(raw);
            parts = split_char(t, ':', &n);
            free(t);
        } else {
            /* <env>/modules, then the basemodulepath */
            char *base = interpolate_string(&plain, "basemodulepath", err);
            if (!base)
                return -1;
            size_t nb;
            char **bp = split_char(base, ':', &nb);
            free(base);
            parts = xmalloc((nb + 1) * sizeof *parts);
            parts[n++] = xjoin(env->dir, "/modules", NULL);
            for (size_t i = 0; i < nb; i++) {
                char *e = expand_path(bp[i], NULL, &err->e);
                if (!e) {
                    err->interp = false;
                    free_list(bp, nb);
                    free_list(parts, n);
                    return -1;
                }
                parts[n++] = e;
            }
            free_list(bp, nb);
        }
        sbuf b = {0};
        size_t count = 0;
        for (size_t i = 0; i < n; i++) {
            char *a = env_absolute(env, parts[i], err);
            if (!a) {
                free_list(parts, n);
                sb_free(&b);
                return -1;
            }
            if (strpbrk(a, "*?[{")) {
                add_globbed(&b, a, &count);
            } else {
                if (count++)
                    sb_addc(&b, ':');
                sb_adds(&b, a);
            }
            free(a);
        }
        free_list(parts, n);
        *out = rv_str(sb_take(&b));
        return 0;
    }
    if (!strcmp(name, "manifest")) {
        char *dm = interpolate_string(&plain, "default_manifest", err);
        if (!dm)
            return -1;
        hv *disable = chain_interpolate(&plain, def_index("disable_per_environment_manifest"), err);
        if (!disable) {
            free(dm);
            return -1;
        }
        char *fallback = dm[0] == '/' ? xstrdup(dm) : xjoin(env->dir, "/", dm, NULL);
        if (hv_truthy(disable)) {
            if (raw) {
                char *t = raw_text(raw);
                char *m = env_absolute(env, t, err);
                free(t);
                if (m && strcmp(m, fallback) && ch->seen) {
                    char *msg = xasprintf("The 'disable_per_environment_manifest' setting is true, but the environment located at %s has a "
                                          "manifest setting in its environment.conf of '%s' which does not match the default_manifest setting "
                                          "'%s'. If this environment is expecting to find modules in '%s', they will not be available!",
                                          env->dir, m, dm, m);
                    report(ch->seen, DIAG_ERROR, "manifest-conflict", NULL, msg);
                    free(msg);
                }
                free(m);
            }
            *out = rv_str(fallback);
        } else {
            char *t = raw ? raw_text(raw) : xstrdup(fallback);
            char *m = env_absolute(env, t, err);
            free(t);
            free(fallback);
            if (!m) {
                free(dm);
                hv_decref(disable);
                return -1;
            }
            *out = rv_str(m);
        }
        free(dm);
        hv_decref(disable);
        return 0;
    }
    if (!strcmp(name, "config_version")) {
        if (raw) {
            char *t = raw_text(raw);
            char *m = env_absolute(env, t, err);
            free(t);
            if (!m)
                return -1;
            *out = rv_str(m);
        }
        return 0;
    }
    if (!strcmp(name, "environment_timeout")) {
        rawval r;
        if (raw) {
            r = rv_ini(raw->kind, raw->value);
        } else {
            hv *v = chain_interpolate(&plain, def_index(name), err);
            if (!v)
                return -1;
            r = rv_from_value(v);
        }
        hv *v = munge(&DEFS[def_index(name)], ST_TTL, &r, err);
        rv_free(&r);
        if (!v)
            return -1;
        *out = hv_is(v, HV_INT) ? (rawval){RV_INTEGER, NULL, hv_int_val(v), NULL} : (rawval){RV_INFINITY, NULL, 0, NULL};
        hv_decref(v);
        return 0;
    }
    /* environment_data_provider, static_catalogs, rich_data: environment.conf's, else the setting */
    if (raw) {
        *out = rv_ini(raw->kind, raw->value);
        return 0;
    }
    hv *v = chain_interpolate(&plain, def_index(name), err);
    if (!v)
        return -1;
    *out = rv_from_value(v);
    return 0;
}

/* ------------------------------------------------------------------ settings */

static void serr_to_public(hiera_error *out, serr *e)
{
    if (!out) {
        herr_clear(&e->e);
        return;
    }
    hiera_error_clear(out);
    out->kind = HIERA_ERR_FATAL;
    out->message = e->e.msg;
    out->file = e->e.file;
    out->line = e->e.line;
    out->column = e->e.col;
    e->e.msg = e->e.file = NULL;
    e->e.kind = HERR_NONE;
}

static chain plain_chain(const hiera_settings *s, hv *seen)
{
    return (chain){s, NULL, NULL, 0, false, seen, NULL, NULL, 0};
}

/* Puppet 8 hooks preferred_serialization_format too: PSON needs the puppet-pson gem, which Debian
 * 13 does not package. */
static bool hooked(const hiera_settings *s, int idx)
{
    /* (flags found once by name, by_name_init: the names compared for every setting were 8% of a
     * one-shot lookup's instructions) */
    hiera_once_run(&by_name_once, by_name_init);
    return (DEF_FLAGS[idx] & DEF_HOOKED) || (s->version == HIERA_PUPPET_8 && (DEF_FLAGS[idx] & DEF_HOOKED_8));
}

/* A hooked setting's value (given on the command line or in puppet.conf) checked as its hook
 * does: converted, and what the hook itself refuses. false with e. */
static bool hook_check(chain *ch, int idx, serr *e)
{
    hv *v = chain_interpolate(ch, idx, e);
    if (!v)
        return false;
    bool ok = true;
    if (!strcmp(DEFS[idx].name, "preferred_serialization_format") && hv_is(v, HV_STRING) &&
        !strcmp(hv_str_ptr(v), "pson")) {
        herr_set(&e->e, HERR_PUPPET, "The 'puppet-pson' gem must be installed to use the PSON serialization format.");
        ok = false;
    }
    hv_decref(v);
    return ok;
}

static int read_file_text(const char *path, char **text, size_t *len, herr *err)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, &(file_read_opts){.max = 64u * 1024 * 1024}, &fe)) {
        sb_free(&b);
        if (fe.failed == FILE_READ_TOO_BIG) {
            herr_set(err, HERR_PUPPET, "%s is larger than 64 MB", path);
        } else {
            char *m = file_read_ruby_message(path, &fe);
            herr_set_text(err, HERR_PUPPET, m);
            free(m);
        }
        return -1;
    }
    *len = b.len;
    *text = sb_take(&b);
    return 0;
}

static void index_conf(hiera_settings *s)
{
    static const char *const sections[] = {"main", "master", "server"}; /* the last found wins */
    for (size_t k = 0; k < 3; k++) {
        const ini_section *sec = ini_section_get(&s->conf, sections[k]);
        for (size_t i = sec ? sec->n : 0; i-- > 0;) { /* backwards: the first of a name wins */
            int idx = def_index(sec->settings[i].name);
            if (idx >= 0)
                s->conf_at[idx] = &sec->settings[i];
        }
    }
}

hiera_settings *hiera_settings_load(const hiera_settings_options *given, hiera_error *err)
{
    /* the caller's struct in this version's layout: fields past its size are zero */
    hiera_settings_options opts;
    memset(&opts, 0, sizeof opts);
    if (given)
        memcpy(&opts, given, given->size && given->size < sizeof opts ? given->size : sizeof opts);
    const hiera_settings_options *o = &opts;
    hiera_settings *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->host_lock, NULL);
    s->sink = (diag_sink){.fn = o->diagnostics ? settings_diag : NULL, .data = s};
    s->user_diag = o->diagnostics;
    s->user_diag_data = o->diagnostics_data;
    diag_sink saved;
    diag_enter(s->sink, &saved);
    hv *seen = hv_hash();
    s->layout = o->layout != HIERA_LAYOUT_AUTO ? o->layout : detect_layout();
    s->version = puppet_version_resolve(o->puppet_version);
    s->vi = version_index(s->version);
    s->root = getuid() == 0;
    if (s->layout == HIERA_LAYOUT_DEBIAN && !s->root) {
        struct stat st;
        s->ssl_owned = fs_stat("/var/lib/puppet/ssl", &st) == 0 && st.st_uid == geteuid();
    }
    serr e = {0};
    if (!s->version) {
        char *why = NULL;
        hiera_puppet_version_find(&why);
        herr_set(&e.e, HERR_PUPPET, "%s", why ? why : "HIERA_PUPPET_VERSION must be 7 or 8");
        free(why);
        goto fail;
    }
    for (size_t i = 0; i < o->ncli; i++) {
        int idx = o->cli[i].name ? version_def_index(o->cli[i].name, s->vi) : -1;
        if (idx < 0) {
            herr_set(&e.e, HERR_PUPPET, "Attempt to assign a value to unknown setting :%s", o->cli[i].name ? o->cli[i].name : "");
            goto fail;
        }
        free(s->cli[idx].value);
        s->cli[idx].set = true;
        s->cli[idx].kind = ini_translate(o->cli[i].value ? o->cli[i].value : "", &s->cli[idx].value);
    }
    chain ch = plain_chain(s, seen);
    /* the settings checked when they are set */
    for (size_t idx = 0; idx < NDEFS; idx++)
        if (s->cli[idx].set && hooked(s, (int)idx) && !hook_check(&ch, (int)idx, &e))
            goto fail;
    if (!o->no_puppet_conf) {
        /* Settings#which_configuration_file: --config or --confdir name it, else the run mode's */
        char *path = NULL;
        if (s->cli[def_index("config")].set || s->cli[def_index("confdir")].set) {
            path = interpolate_string(&ch, "config", &e);
            if (!path)
                goto fail;
        } else {
            char *owned = NULL;
            const char *confdir = app_default(s, "confdir", &owned);
            char *name = interpolate_string(&ch, "config_file_name", &e);
            if (!name) {
                free(owned);
                goto fail;
            }
            path = xjoin(confdir, "/", name, NULL);
            free(name);
            free(owned);
        }
        s->conf_path = path;
        if (path_exists(path)) {
            char *text = NULL;
            size_t len = 0;
            if (read_file_text(path, &text, &len, &e.e)) {
                char *m = xasprintf("Could not load %s: %s", path, e.e.msg);
                herr_set_text(&e.e, HERR_PUPPET, m);
                free(m);
                goto fail;
            }
            static const char *const allowed[] = {"main", "server", "master", "agent", "user", NULL};
            herr pe = {0};
            if (ini_parse(text, len, path, allowed, &s->conf, &pe) == 0) {
                s->have_conf = true;
                index_conf(s);
            } else {
                /* Puppet prints the error and goes on without the file */
                char *m = pe.line ? xasprintf("Could not parse %s: %s (file: %s, line: %d)", path, pe.msg, pe.file, pe.line)
                                  : xasprintf("Could not parse %s: %s", path, pe.msg);
                report(seen, DIAG_ERROR, "puppet-conf-syntax", path, m);
                free(m);
                herr_clear(&pe);
            }
            free(text);
        }
    }
    if (s->have_conf) {
        /* screen_non_puppet_conf_settings */
        for (size_t i = 0; i < s->conf.n; i++) {
            sbuf names = {0};
            for (size_t k = 0; k < s->conf.sections[i].n; k++) {
                const char *n = s->conf.sections[i].settings[k].name;
                if (!strcmp(n, "modulepath") || !strcmp(n, "manifest") || !strcmp(n, "config_version")) {
                    if (names.len)
                        sb_adds(&names, ", ");
                    sb_adds(&names, n);
                }
            }
            if (names.len) {
                herr_set(&e.e, HERR_PUPPET, "Cannot set %s settings in puppet.conf", sb_str(&names));
                sb_free(&names);
                goto fail;
            }
        }
        for (size_t idx = 0; idx < NDEFS; idx++) {
            if (s->cli[idx].set || !hooked(s, (int)idx))
                continue;
            bool in_conf = false;
            static const char *const sections[] = {"server", "master", "main", "user"};
            for (size_t k = 0; k < 4; k++)
                in_conf |= ini_setting_get(ini_section_get(&s->conf, sections[k]), DEFS[idx].name) != NULL;
            if (in_conf && !hook_check(&ch, (int)idx, &e))
                goto fail;
        }
    }
    /* what every run needs, resolved now so that their errors come first */
    static const char *const early[] = {"logdir", "confdir", "vardir", "codedir", "environment", "environmentpath",
                                        "basemodulepath", "hiera_config", NULL};
    for (size_t i = 0; early[i]; i++) {
        hv *v = chain_interpolate(&ch, def_index(early[i]), &e);
        if (!v)
            goto fail;
        hv_decref(v);
    }
    hv_decref(seen);
    if (herr_public_missing(err, diag_leave(&saved))) { /* (a library the command could not load) */
        hiera_settings_free(s);
        return NULL;
    }
    return s;
fail:
    hv_decref(seen);
    diag_leave(&saved);
    serr_to_public(err, &e);
    hiera_settings_free(s);
    return NULL;
}

void hiera_settings_free(hiera_settings *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < NDEFS; i++)
        free(s->cli[i].value);
    ini_free(&s->conf);
    free(s->conf_path);
    free(s->fqdn);
    free(s->domain);
    pthread_mutex_destroy(&s->host_lock);
    free(s);
}

hv *settings_value(const hiera_settings *s, const hiera_environment *env, const char *name, herr *err)
{
    int idx = version_def_index(name, s->vi);
    if (idx < 0) {
        herr_set(err, HERR_PUPPET, "'%s' is not a Puppet setting", name);
        return NULL;
    }
    chain ch = {s, env, env ? env->name : NULL, 0, false, NULL, NULL, NULL, 0};
    serr e = {0};
    hv *v = chain_interpolate(&ch, idx, &e);
    if (!v)
        herr_move(err, &e.e);
    return v;
}

char *settings_string(const hiera_settings *s, const hiera_environment *env, const char *name, herr *err)
{
    hv *v = settings_value(s, env, name, err);
    if (!v)
        return NULL;
    char *r = NULL;
    if (hv_is(v, HV_UNDEF)) {
        herr_set(err, HERR_PUPPET, "Could not find value for $%s", name);
    } else if (hv_is(v, HV_ARRAY)) {
        sbuf b = {0};
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(&b, ',');
            ruby_to_s(&b, hv_array_get(v, i));
        }
        r = sb_take(&b);
    } else {
        r = value_to_s(v);
    }
    hv_decref(v);
    return r;
}

char *hiera_settings_get(const hiera_settings *s, const char *name, hiera_error *err)
{
    herr e = {0};
    if (!s) {
        herr_set(&e, HERR_PUPPET, "no settings");
        serr se = {e, false};
        serr_to_public(err, &se);
        return NULL;
    }
    char *r = settings_string(s, NULL, name ? name : "", &e);
    if (!r) {
        serr se = {e, false};
        serr_to_public(err, &se);
    }
    return r;
}

const char *hiera_settings_file(const hiera_settings *s) { return s && s->have_conf ? s->conf_path : NULL; }

hiera_puppet_version hiera_settings_puppet_version(const hiera_settings *s) { return s ? s->version : HIERA_PUPPET_7; }

char *hiera_settings_given(const hiera_settings *s, const char *name, const char *where)
{
    int idx = s && name ? version_def_index(name, s->vi) : -1;
    if (idx < 0 || !where)
        return NULL;
    ini_kind kind;
    const char *value;
    if (!strcmp(where, "cli")) {
        if (!s->cli[idx].set)
            return NULL;
        kind = s->cli[idx].kind, value = s->cli[idx].value;
    } else {
        const ini_setting *st = s->have_conf ? ini_setting_get(ini_section_get(&s->conf, where), name) : NULL;
        if (!st)
            return NULL;
        kind = st->kind, value = st->value;
    }
    return xstrdup(kind == INI_TRUE ? "true" : kind == INI_FALSE ? "false" : value ? value : "");
}

bool hiera_puppet_setting_info(hiera_puppet_version v, size_t i, const char **name, bool *boolean, char *short_option)
{
    hiera_once_run(&version_order_once, version_order_init);
    int vi = version_index(puppet_version_resolve(v));
    if (i >= VERSION_COUNT[vi])
        return false;
    const sdef *d = &DEFS[VERSION_ORDER[vi][i]];
    if (name)
        *name = d->name;
    if (boolean)
        *boolean = d->kind == ST_BOOLEAN;
    if (short_option)
        *short_option = d->short_opt;
    return true;
}

bool hiera_setting_info(size_t i, const char **name, bool *boolean, char *short_option)
{
    return hiera_puppet_setting_info(HIERA_PUPPET_7, i, name, boolean, short_option);
}

/* ------------------------------------------------------------------ environments */

/* Environment.valid_name?: /\A\w+\Z/ */
static bool valid_env_name(const char *n)
{
    if (!*n)
        return false;
    for (const char *p = n; *p; p++)
        if (!ascii_word_char(*p))
            return false;
    return true;
}

static char *env_dir_of(const hiera_settings *s, const char *envdir, const char *name, chain *ch, serr *err, bool *failed)
{
    *failed = false;
    char *candidate = xjoin(envdir, "/", name, NULL);
    char *base = pn_basename(candidate);
    hv *versioned = chain_interpolate(ch, def_index("versioned_environment_dirs"), err);
    if (!versioned) {
        *failed = true;
        free(base);
        free(candidate);
        return NULL;
    }
    struct stat st;
    if (hv_truthy(versioned) && fs_lstat(candidate, &st) == 0 && S_ISLNK(st.st_mode)) {
        char buf[PATH_MAX];
        ssize_t n = fs_readlink(candidate, buf, sizeof buf);
        if (n >= 0) {
            buf[n] = 0;
            herr ignore = {0};
            char *real = expand_path(buf, NULL, &ignore);
            herr_clear(&ignore);
            if (real) {
                free(candidate);
                candidate = real;
            }
        }
    }
    hv_decref(versioned);
    bool ok = path_is_dir(candidate) && valid_env_name(base);
    free(base);
    (void)s;
    if (!ok) {
        free(candidate);
        return NULL;
    }
    return candidate;
}

static int load_env_conf(hiera_environment *env, hv *seen, serr *err)
{
    char *path = xjoin(env->dir, "/environment.conf", NULL);
    struct stat st;
    int rc = 0;
    if (fs_stat(path, &st) == 0) {
        char *text = NULL;
        size_t len = 0;
        if (read_file_text(path, &text, &len, &err->e)) {
            rc = -1;
        } else if (ini_parse(text, len, path, NULL, &env->conf, &err->e)) {
            rc = -1;
        } else {
            /* EnvironmentConf.validate */
            if (env->conf.n > 1) {
                sbuf names = {0};
                for (size_t i = 0; i < env->conf.n; i++)
                    if (strcmp(env->conf.sections[i].name, "main")) {
                        if (names.len)
                            sb_addc(&names, ',');
                        sb_adds(&names, env->conf.sections[i].name);
                    }
                char *m = xasprintf("Invalid sections in environment.conf at '%s'. Environment conf may not have sections. "
                                    "The following sections are being ignored: '%s'", path, sb_str(&names));
                report(seen, DIAG_WARNING, "environment-conf", path, m);
                free(m);
                sb_free(&names);
            }
            const ini_section *m = ini_section_get(&env->conf, "main");
            sbuf unknown = {0};
            for (size_t i = 0; m && i < m->n; i++)
                if (!is_env_setting(m->settings[i].name)) {
                    if (unknown.len)
                        sb_adds(&unknown, ", ");
                    sb_adds(&unknown, m->settings[i].name);
                }
            if (unknown.len) {
                char *w = xasprintf("Invalid settings in environment.conf at '%s'. The following unknown setting(s) are being ignored: %s",
                                    path, sb_str(&unknown));
                report(seen, DIAG_WARNING, "environment-conf", path, w);
                free(w);
            }
            sb_free(&unknown);
        }
        free(text);
    }
    free(path);
    err->interp = false;
    return rc;
}

/* PUPPETLIB's folders, then the given ones, each expanded */
static int set_modulepath(hiera_environment *env, const char *joined, serr *err)
{
    size_t nl = 0, n = 0;
    const char *lib = fs_getenv("PUPPETLIB");
    char **libs = lib ? split_char(lib, ':', &nl) : NULL;
    char **parts = split_char(joined, ':', &n);
    env->modulepath = xcalloc(nl + n + 1, sizeof *env->modulepath);
    int rc = 0;
    for (size_t i = 0; i < nl + n && rc == 0; i++) {
        char *p = expand_path(i < nl ? libs[i] : parts[i - nl], NULL, &err->e);
        if (!p) {
            err->interp = false;
            rc = -1;
            break;
        }
        env->modulepath[env->nmodulepath++] = p;
    }
    free_list(libs, nl);
    free_list(parts, n);
    return rc;
}

hiera_environment *hiera_environment_load(const hiera_settings *s, const char *name, hiera_error *err)
{
    serr e = {0};
    if (!s) {
        herr_set(&e.e, HERR_PUPPET, "no settings");
        serr_to_public(err, &e);
        return NULL;
    }
    hiera_environment *env = xcalloc(1, sizeof *env);
    env->s = s;
    pthread_mutex_init(&env->lock, NULL);
    diag_sink saved;
    diag_enter(s->sink, &saved);
    hv *seen = hv_hash();
    chain ch = plain_chain(s, seen);
    char *configured = interpolate_string(&ch, "environment", &e);
    char *envpath = NULL;
    if (!configured)
        goto fail;
    env->name = xstrdup(name ? name : configured);
    envpath = interpolate_string(&ch, "environmentpath", &e);
    if (!envpath)
        goto fail;
    if (!*envpath) {
        herr_set(&e.e, HERR_PUPPET, "The environmentpath setting cannot be empty or nil.");
        goto fail;
    }
    size_t ndirs;
    char **dirs = split_char(envpath, ':', &ndirs);
    for (size_t i = 0; i < ndirs && !env->dir; i++) {
        char *d = expand_path(dirs[i], NULL, &e.e);
        if (!d) {
            free_list(dirs, ndirs);
            goto fail;
        }
        bool failed;
        env->dir = env_dir_of(s, d, env->name, &ch, &e, &failed);
        free(d);
        if (failed) {
            free_list(dirs, ndirs);
            goto fail;
        }
    }
    free_list(dirs, ndirs);
    if (!env->dir && !(strcmp(env->name, "production") == 0 && strcmp(configured, "production") == 0)) {
        herr_set(&e.e, HERR_PUPPET, "Could not find a directory environment named '%s' anywhere in the path: %s. Does the directory exist?",
                 env->name, envpath);
        goto fail;
    }
    if (env->dir) {
        if (load_env_conf(env, seen, &e))
            goto fail;
        chain ech = {s, env, env->name, 0, false, seen, NULL, NULL, 0};
        /* Cached#entry: the environment_timeout is converted as the environment is loaded */
        hv *ttl = chain_interpolate(&ech, def_index("environment_timeout"), &e);
        if (!ttl)
            goto fail;
        hv_decref(ttl);
        /* Directories#create_environment */
        char *mp = interpolate_string(&ech, "modulepath", &e);
        if (!mp || set_modulepath(env, mp, &e)) {
            free(mp);
            goto fail;
        }
        free(mp);
        hv *manifest = chain_interpolate(&ech, def_index("manifest"), &e);
        if (!manifest)
            goto fail;
        hv_decref(manifest);
        char *cv = interpolate_string(&ech, "config_version", &e);
        if (!cv)
            goto fail;
        if (*cv)
            env->config_version = cv;
        else
            free(cv);
    } else {
        /* Puppet's default production environment: --modulepath, else the basemodulepath */
        char *mp = interpolate_string(&ch, "modulepath", &e);
        if (!mp)
            goto fail;
        if (!*mp) {
            free(mp);
            mp = interpolate_string(&ch, "basemodulepath", &e);
            if (!mp)
                goto fail;
        }
        int rc = set_modulepath(env, mp, &e);
        free(mp);
        if (rc)
            goto fail;
        if (s->cli[def_index("config_version")].set) {
            char *cv = interpolate_string(&ch, "config_version", &e);
            if (!cv)
                goto fail;
            if (*cv)
                env->config_version = cv;
            else
                free(cv);
        }
    }
    free(configured);
    free(envpath);
    hv_decref(seen);
    if (herr_public_missing(err, diag_leave(&saved))) { /* (a library the command could not load) */
        hiera_environment_free(env);
        return NULL;
    }
    return env;
fail:
    free(configured);
    free(envpath);
    hv_decref(seen);
    diag_leave(&saved);
    serr_to_public(err, &e);
    hiera_environment_free(env);
    return NULL;
}

void hiera_environment_free(hiera_environment *e)
{
    if (!e)
        return;
    free(e->name);
    free(e->dir);
    ini_free(&e->conf);
    free_list(e->modulepath, e->nmodulepath);
    free(e->config_version);
    herr_clear(&e->check_err);
    hv_decref(e->modules);
    hv_decref(e->vars);
    herr_clear(&e->vars_err);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

const char *hiera_environment_name(const hiera_environment *e) { return e ? e->name : NULL; }
const char *hiera_environment_dir(const hiera_environment *e) { return e ? e->dir : NULL; }
size_t hiera_environment_modulepath_count(const hiera_environment *e) { return e ? e->nmodulepath : 0; }
const char *hiera_environment_modulepath(const hiera_environment *e, size_t i)
{
    return e && i < e->nmodulepath ? e->modulepath[i] : NULL;
}
const char *hiera_environment_config_version(const hiera_environment *e) { return e ? e->config_version : NULL; }
const hiera_settings *settings_of(const hiera_environment *env) { return env->s; }

int settings_strict(const hiera_environment *env)
{
    herr e = {0};
    char *v = settings_string(env->s, env, "strict", &e);
    herr_clear(&e);
    int r = !v ? 1 : !strcmp(v, "off") ? 0 : !strcmp(v, "error") ? 2 : 1;
    free(v);
    return r;
}

/* ------------------------------------------------------------------ every setting */

/* Whether setting idx, when no source gives it, has a constant default: the table's, without
 * "$name", not computed, not the application's, not an alias, not "code" (which is not
 * converted). Converting such a value cannot fail and depends on nothing else (munge is a
 * function of the table's entry: settings_constant_defaults_convert, asked by the unit tests). */
static bool default_is_constant(int idx, int vi)
{
    const sdef *d = &DEFS[idx];
    if ((def_flags(idx) & (DEF_ENV_CONF | DEF_APP_DEFAULT)) || d->kind == ST_ALIAS || !strcmp(d->name, "code"))
        return false;
    switch (d->dk[vi]) {
    case DEF_NIL:
    case DEF_TRUE:
    case DEF_FALSE:
    case DEF_INTEGER:
    case DEF_EMPTY_ARRAY: return true;
    case DEF_STRING:
    case DEF_SYMBOL: return !strchr(d->dv[vi], '$');
    case DEF_COMPUTED:
    case DEF_ABSENT: return false;
    }
    return false;
}

/* The setting's value in this chain is a constant default: no source gives it (the command line,
 * puppet.conf; environment.conf's settings are never constant) and its default is constant. */
static bool constant_default(const chain *ch, int idx)
{
    const hiera_settings *s = ch->s;
    return !s->cli[idx].set && default_is_constant(idx, s->vi) && !s->conf_at[idx];
}

bool settings_constant_defaults_convert(const char **failed)
{
    *failed = NULL;
    for (int vi = 0; vi < NVERSIONS; vi++) {
        for (size_t i = 0; i < NDEFS; i++) {
            if (!default_is_constant((int)i, vi))
                continue;
            const sdef *d = &DEFS[i];
            rawval r = table_default(d, vi);
            serr e = {0};
            hv *v = munge(d, d->kind, &r, &e);
            rv_free(&r);
            herr_clear(&e.e);
            if (!v) {
                *failed = d->name;
                return false;
            }
            hv_decref(v);
        }
    }
    return true;
}

/* Scope#merge_settings: every setting but "name", in Puppet's order, as the settings class's
 * variables; the first that fails stops the compilation. A check (checking: only whether each
 * converts) passes over the settings whose value is a constant default. */
static hv *all_settings(const hiera_environment *env, bool checking, hv *seen, herr *err)
{
    hv *memo[NDEFS] = {0};
    int height[NDEFS];
    chain ch = {env->s, env, env->name, 0, checking, seen, memo, height, 0};
    hv *all = checking ? NULL : hv_hash(); /* (a check only needs to know that each converts) */
    for (size_t i = 0; i < NDEFS; i++) {
        if (!in_version((int)i, env->s->vi) || !strcmp(DEFS[i].name, "name") ||
            (checking && constant_default(&ch, (int)i)))
            continue;
        serr e = {0};
        hv *v = chain_interpolate(&ch, (int)i, &e);
        if (!v) {
            herr_move(err, &e.e);
            hv_decref(all);
            all = NULL;
            break;
        }
        if (all)
            hv_hash_sets(all, DEFS[i].name, v);
        else
            hv_decref(v);
    }
    for (size_t i = 0; i < NDEFS; i++)
        hv_decref(memo[i]);
    return all;
}

/* Counts what the check reports, passing it on to the sink in effect. */
typedef struct {
    diag_sink to;
    int count;
} counting_sink;

static void count_diag(int severity, const char *code, const char *file, int line, int col, const char *message, void *data)
{
    counting_sink *c = data;
    c->count++;
    if (c->to.fn)
        c->to.fn(severity, code, file, line, col, message, c->to.data);
}

/* The check made (env->lock held): its answer in env->check_err; how many diagnostics it gave
 * in *reported. */
static void run_check(hiera_environment *env, int *reported)
{
    counting_sink counter = {env->s->sink, 0};
    diag_sink saved;
    diag_enter((diag_sink){count_diag, &counter, NULL}, &saved);
    hv *seen = hv_hash();
    hv *all = all_settings(env, true, seen, &env->check_err);
    hv_decref(all);
    hv_decref(seen);
    diag_leave(&saved);
    env->check_done = true;
    *reported = counter.count;
}

static bool check_answer(hiera_environment *env, hiera_error *err)
{
    bool ok = !herr_isset(&env->check_err);
    if (!ok) {
        serr se = {{env->check_err.kind, xstrdup(env->check_err.msg), NULL, 0, 0}, false};
        serr_to_public(err, &se);
    }
    return ok;
}

bool hiera_environment_check(const hiera_environment *cenv, hiera_error *err)
{
    hiera_environment *env = (hiera_environment *)cenv; /* its answer is kept, under its lock */
    pthread_mutex_lock(&env->lock);
    if (!env->check_done) {
        int reported;
        run_check(env, &reported);
    }
    bool ok = check_answer(env, err);
    pthread_mutex_unlock(&env->lock);
    return ok;
}

/* ------------------------------------------------------------------ the check's verdict kept */

static void key_str(sbuf *k, const char *s)
{
    if (!s) {
        sb_add_u32(k, UINT32_MAX);
        return;
    }
    size_t len = strlen(s);
    sb_add_u32(k, (uint32_t)len);
    sb_addn(k, s, len);
}

static void key_ini(sbuf *k, const ini_file *f)
{
    sb_add_u32(k, (uint32_t)f->n);
    for (size_t i = 0; i < f->n; i++) {
        const ini_section *sec = &f->sections[i];
        key_str(k, sec->name);
        sb_add_u32(k, (uint32_t)sec->n);
        for (size_t j = 0; j < sec->n; j++) {
            key_str(k, sec->settings[j].name);
            sb_add_u32(k, (uint32_t)sec->settings[j].kind);
            key_str(k, sec->settings[j].value);
        }
    }
}

/* Everything the check computes from but the file system and the environment variables (which
 * its sub-record holds): the program, the working folder and the user (id: the caller's), and
 * the settings' and the environment's every input. */
static void check_key(const hiera_environment *env, const void *id, size_t idlen, sbuf *k)
{
    const hiera_settings *s = env->s;
    sb_adds(k, "hiera settings check 1");
    sb_addc(k, 0);
    sb_add_u32(k, (uint32_t)idlen);
    sb_addn(k, id, idlen);
    sb_add_u32(k, (uint32_t)s->layout);
    sb_add_u32(k, (uint32_t)s->version);
    sb_add_u32(k, (uint32_t)s->vi);
    sb_addc(k, (char)s->root);
    sb_addc(k, (char)s->ssl_owned);
    for (size_t i = 0; i < NDEFS; i++) {
        sb_addc(k, (char)s->cli[i].set);
        if (s->cli[i].set) {
            sb_add_u32(k, (uint32_t)s->cli[i].kind);
            key_str(k, s->cli[i].value);
        }
    }
    sb_addc(k, (char)s->have_conf);
    key_ini(k, &s->conf);
    key_str(k, s->conf_path);
    key_str(k, env->name);
    key_str(k, env->dir);
    key_ini(k, &env->conf);
    sb_add_u32(k, (uint32_t)env->nmodulepath);
    for (size_t i = 0; i < env->nmodulepath; i++)
        key_str(k, env->modulepath[i]);
    key_str(k, env->config_version);
}

static void check_entry_name(const sbuf *key, char name[20])
{
    hex64(hash_bytes(key->s, key->len), name);
    memcpy(name + 16, ".hk", 4);
}

/* Whether the verdict kept as the entry `name` of folder is for key, and every observation of
 * its record still holds (made again through the journal) */
static bool check_kept(const char *folder, const char *name, const sbuf *key)
{
    char *path = xjoin(folder, "/", name, NULL);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    struct stat st;
    unsigned char *data = NULL;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_size > 8 &&
        st.st_size <= (1 << 20)) {
        data = xmalloc((size_t)st.st_size);
        got = fd_read_full(fd, data, (size_t)st.st_size);
    }
    close(fd);
    byte_reader r = {data, data + (got > 0 ? got : 0)};
    const unsigned char *magic, *k;
    uint32_t klen, verdict;
    bool ok = got == st.st_size && br_bytes(&r, 8, &magic) && memcmp(magic, DISKCACHE_VERDICT_MAGIC, 8) == 0 &&
              br_u32(&r, &klen) && klen == key->len && br_bytes(&r, klen, &k) && memcmp(k, key->s, klen) == 0 &&
              fsj_sub_check(&r) && br_u32(&r, &verdict) && verdict == 0 && r.p == r.end;
    free(data);
    return ok;
}

bool settings_check_kept(const hiera_environment *cenv, diskcache *dc, const void *id, size_t idlen, hiera_error *err)
{
    hiera_environment *env = (hiera_environment *)cenv;
    pthread_mutex_lock(&env->lock);
    if (!env->check_done) {
        sbuf key = {0};
        const char *folder = dc ? diskcache_dir(dc) : NULL;
        char name[20];
        bool keyed = folder != NULL;
        if (keyed) {
            check_key(env, id, idlen, &key);
            check_entry_name(&key, name);
        }
        if (keyed && check_kept(folder, name, &key)) {
            env->check_done = true; /* (passed, as it did when kept: check_err stays clear) */
        } else {
            int reported;
            if (keyed)
                fsj_sub_begin();
            run_check(env, &reported);
            sbuf entry = {0};
            const char *why = NULL;
            if (keyed) {
                sb_addn(&entry, DISKCACHE_VERDICT_MAGIC, 8);
                sb_add_u32(&entry, (uint32_t)key.len);
                sb_addn(&entry, key.s, key.len);
            }
            /* kept only when it passed without a word: nothing to say again */
            if (keyed && fsj_sub_end(&entry, &why) && !reported && !herr_isset(&env->check_err)) {
                sb_add_u32(&entry, 0);
                diskcache_put_named(dc, name, entry.s, entry.len);
            }
            sb_free(&entry);
        }
        sb_free(&key);
    }
    bool ok = check_answer(env, err);
    pthread_mutex_unlock(&env->lock);
    return ok;
}

/* a copy whose every node is new (no reference shared with v) */
static hv *fresh_copy(const hv *v)
{
    switch (hv_kind_of(v)) {
    case HV_STRING: return hv_strn(hv_str_ptr(v), hv_str_len(v));
    case HV_INT: return hv_int(hv_int_val(v));
    case HV_FLOAT: return hv_float(hv_float_val(v));
    case HV_BOOL: return hv_bool(hv_bool_val(v));
    case HV_ARRAY: {
        hv *a = hv_array_sized(hv_array_len(v));
        for (size_t i = 0; i < hv_array_len(v); i++)
            hv_array_push(a, fresh_copy(hv_array_get(v, i)));
        return a;
    }
    case HV_HASH: {
        hv *h = hv_hash_sized(hv_hash_len(v));
        for (size_t i = 0; i < hv_hash_len(v); i++)
            hv_hash_set(h, fresh_copy(hv_hash_key_at(v, i)), fresh_copy(hv_hash_val_at(v, i)));
        return h;
    }
    default: return hv_undef();
    }
}

hv *settings_scope_vars(const hiera_environment *cenv, herr *err)
{
    hiera_environment *env = (hiera_environment *)cenv; /* its lazily filled parts, under its lock */
    pthread_mutex_lock(&env->lock);
    if (!env->vars_done) {
        hv *all = all_settings(env, false, NULL, &env->vars_err);
        if (all) {
            hv *vars = hv_hash_sized(hv_hash_len(all) + 1);
            for (size_t i = 0; i < hv_hash_len(all); i++) {
                char *k = xjoin("settings::", hv_str_ptr(hv_hash_key_at(all, i)), NULL);
                hv_hash_sets(vars, k, hv_incref(hv_hash_val_at(all, i)));
                free(k);
            }
            hv_hash_sets(vars, "settings::all_local", all);
            /* the settings class's own scope variables */
            hv_hash_sets(vars, "settings::title", hv_str("settings"));
            hv_hash_sets(vars, "settings::name", hv_str("settings"));
            env->vars = vars;
        }
        env->vars_done = true;
    }
    hv *r = env->vars ? fresh_copy(env->vars) : NULL;
    if (!r)
        *err = (herr){env->vars_err.kind, xstrdup(env->vars_err.msg ? env->vars_err.msg : ""), NULL, 0, 0};
    pthread_mutex_unlock(&env->lock);
    return r;
}

/* ------------------------------------------------------------------ modules */

static bool module_name_ok(const char *n)
{
    if (!(*n >= 'a' && *n <= 'z'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

char *settings_module_dir(const hiera_environment *cenv, const char *name)
{
    if (!module_name_ok(name))
        return NULL;
    hiera_environment *env = (hiera_environment *)cenv;
    pthread_mutex_lock(&env->lock);
    if (!env->modules)
        env->modules = hv_hash();
    hv *known = hv_hash_gets(env->modules, name);
    char *r = NULL;
    if (known) {
        r = hv_is(known, HV_STRING) ? xstrdup(hv_str_ptr(known)) : NULL;
    } else {
        for (size_t i = 0; i < env->nmodulepath && !r; i++) {
            char *d = xjoin(env->modulepath[i], "/", name, NULL);
            if (path_is_dir(d))
                r = d;
            else
                free(d);
        }
        hv_hash_sets(env->modules, name, r ? hv_str(r) : hv_false());
    }
    pthread_mutex_unlock(&env->lock);
    return r;
}

/* ------------------------------------------------------------------ config_version */

/* Ruby's exec(string): through /bin/sh when the string holds a shell character, an "=" in its
 * first word or starts with a shell keyword (process.c), else split at blanks. */
static bool needs_shell(const char *cmd)
{
    static const char *const sh_cmds[] = {"!", ".", ":", "break", "case", "continue", "do", "done", "elif", "else", "esac",
                                          "eval", "exec", "exit", "export", "fi", "for", "if", "in", "readonly", "return",
                                          "set", "shift", "then", "times", "trap", "unset", "until", "while", NULL};
    const char *first = NULL;
    size_t first_len = 0;
    bool first_done = false;
    for (const char *p = cmd; *p; p++) {
        if (*p == ' ' || *p == '\t') {
            if (first && !first_done) {
                first_len = (size_t)(p - first);
                first_done = true;
            }
        } else if (!first) {
            first = p;
        }
        if (strchr("*?{}[]<>()~&|\\$;'`\"\n#", *p))
            return true;
        if (!first_done && first) {
            if (*p == '=')
                return true;
            if (*p == '/')
                first_done = true, first_len = 0x100;
        }
    }
    if (first && !first_done)
        first_len = strlen(first);
    for (size_t i = 0; first && sh_cmds[i]; i++)
        if (strlen(sh_cmds[i]) == first_len && !strncmp(first, sh_cmds[i], first_len))
            return true;
    return false;
}

static bool executable_file(const char *p)
{
    struct stat st;
    return fs_stat(p, &st) == 0 && S_ISREG(st.st_mode) && fs_access(p, X_OK) == 0;
}

/* Ruby's PATH search for a program without a "/" */
static char *find_program(const char *prog, const char *path)
{
    if (strchr(prog, '/') || !path)
        return xstrdup(prog);
    size_t n;
    char **dirs = split_char(path, ':', &n);
    char *found = NULL;
    for (size_t i = 0; i < n && !found; i++) {
        char *c = xjoin(*dirs[i] ? dirs[i] : ".", "/", prog, NULL);
        if (executable_file(c))
            found = c;
        else
            free(c);
    }
    free_list(dirs, n);
    return found ? found : xstrdup(prog);
}

extern char **environ;

/* the child's environment: Puppet's execute drops the locale and user variables, sets LANG and
 * LC_ALL to C, and the `path` setting (when not "none") is its PATH */
static char **child_environ(const char *path)
{
    static const char *const drop[] = {"LANG=", "LC_ALL=", "LC_MESSAGES=", "LANGUAGE=", "LC_COLLATE=", "LC_CTYPE=", "LC_MONETARY=",
                                       "LC_NUMERIC=", "LC_TIME=", "HOME=", "USER=", "LOGNAME=", NULL};
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = xcalloc(n + 4, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool skip = path && !strncmp(environ[i], "PATH=", 5);
        for (size_t d = 0; drop[d] && !skip; d++)
            skip = !strncmp(environ[i], drop[d], strlen(drop[d]));
        if (!skip)
            env[k++] = xstrdup(environ[i]);
    }
    env[k++] = xstrdup("LANG=C");
    env[k++] = xstrdup("LC_ALL=C");
    if (path)
        env[k++] = xjoin("PATH=", path, NULL);
    env[k] = NULL;
    return env;
}

#include <spawn.h>

#define CONFIG_VERSION_OUTPUT_MAX (1024 * 1024)

/* Puppet::Util::Execution.execute([cmd]): the output (stdout and stderr together) and the exit
 * status (-1 when a signal ended it). A program that cannot be started gives what Puppet's
 * forked child prints in that case, with status 1. */
static int run_command(const char *cmd, const char *path, char **output, int *status)
{
    char **argv;
    size_t argc = 0;
    bool shell = needs_shell(cmd);
    char *prog = NULL;
    if (shell) {
        argv = xcalloc(4, sizeof *argv);
        argv[argc++] = xstrdup("sh"); /* Ruby runs "/bin/sh" named "sh" */
        argv[argc++] = xstrdup("-c");
        argv[argc++] = xstrdup(cmd);
    } else {
        argv = xcalloc(strlen(cmd) / 2 + 2, sizeof *argv);
        char *copy = xstrdup(cmd), *save = NULL;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
            argv[argc++] = xstrdup(w);
        free(copy);
        if (!argc)
            argv[argc++] = xstrdup(cmd);
    }
    argv[argc] = NULL;
    prog = shell ? xstrdup("/bin/sh") : find_program(argv[0], path ? path : fs_getenv("PATH"));
    fsj_taint("a command was run");
    char **envp = child_environ(path);
    int fds[2];
    sbuf out = {0};
    *status = 1;
    if (pipe(fds) != 0) {
        sb_addf(&out, "Error: Could not execute posix command: %s - %s", ERRNO_TEXT(errno), argv[0]);
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        posix_spawnattr_init(&at);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
        pid_t pid;
        int rc = posix_spawn(&pid, prog, &fa, &at, argv, envp);
        if (rc == ENOEXEC && !shell) {
            /* a script without "#!": Ruby runs it with /bin/sh */
            char **sargv = xcalloc(argc + 2, sizeof *sargv);
            sargv[0] = "sh";
            sargv[1] = prog;
            for (size_t i = 1; i < argc; i++)
                sargv[i + 1] = argv[i];
            rc = posix_spawn(&pid, "/bin/sh", &fa, &at, sargv, envp);
            free(sargv);
        }
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        close(fds[1]);
        if (rc != 0) {
            sb_addf(&out, "Error: Could not execute posix command: %s - %s", ERRNO_TEXT(rc), argv[0]);
        } else {
            char buf[8192];
            ssize_t n;
            while ((n = read(fds[0], buf, sizeof buf)) != 0) {
                if (n < 0) {
                    if (errno == EINTR)
                        continue;
                    break;
                }
                if (out.len < CONFIG_VERSION_OUTPUT_MAX)
                    sb_addn(&out, buf, (size_t)n);
            }
            int ws = 0;
            while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
                ;
            *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
        }
        close(fds[0]);
    }
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
    free(prog);
    for (size_t i = 0; envp[i]; i++)
        free(envp[i]);
    free(envp);
    /* String#strip: blanks (and NULs at the end) */
    size_t b = 0, e = out.len;
    const char *s = sb_str(&out);
    while (b < e && (is_blank(s[b])))
        b++;
    while (e > b && (is_blank(s[e - 1]) || s[e - 1] == 0))
        e--;
    *output = xstrndup(s + b, e - b);
    sb_free(&out);
    return 0;
}

bool hiera_environment_run_config_version(const hiera_environment *env, char **output, hiera_error *err)
{
    if (output)
        *output = NULL;
    const char *cmd = env ? env->config_version : NULL;
    if (!cmd || !*cmd)
        return true;
    herr pe = {0};
    char *path = settings_string(env->s, NULL, "path", &pe);
    herr_clear(&pe);
    if (path && !strcmp(path, "none")) {
        free(path);
        path = NULL;
    }
    char *out = NULL;
    int status;
    run_command(cmd, path, &out, &status);
    free(path);
    if (status != 0) {
        char code[16] = "";
        if (status >= 0)
            snprintf(code, sizeof code, "%d", status);
        serr e = {0};
        herr_set(&e.e, HERR_PUPPET, "Execution of config_version command `%s` failed: Execution of '%s' returned %s: %s", cmd, cmd, code, out);
        free(out);
        serr_to_public(err, &e);
        return false;
    }
    if (output)
        *output = out;
    else
        free(out);
    return true;
}
