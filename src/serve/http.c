/* http.c - the server of `hiera serve` (serve.h) on libmicrohttpd: a pool of threads (epoll), a
 * request body read up to its bound, who is asking (a client certificate verified against the
 * CA, or a bearer token), the access log (one JSON line per request), the metrics it counts
 * (metrics.c), and the signals:
 * SIGHUP reloads, SIGTERM and SIGINT stop accepting, let the requests in flight finish, and exit. */
#include "serve/serve.h"
#include "serve/libs.h"
#include "serve/systemd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "base/fileio.h"

/* ------------------------------------------------------------------ the server */

typedef struct {
    serve_state *st;
    const serve_options *o;
    char *token;          /* the bearer token, or NULL */
    char **admins;        /* NULL-terminated */
    bool auth_required;
    FILE *log;
    pthread_mutex_t log_lock;
} server;

/* One request being read (made when its request line arrives: uri_start). */
typedef struct {
    sbuf body;
    bool too_big;
    bool started;     /* the handler was called for it (its headers are in) */
    bool control;     /* its URL holds a control character (a NUL would cut a name short) */
    struct timespec t0;
} pending;

static uint64_t in_flight; /* requests being answered (atomic) */

/* ---- connections: a request must be whole within --timeout
 * libmicrohttpd's timeout closes a connection that stays idle, not one that sends a byte every
 * second: each connection is remembered here with when it started waiting for its next request
 * (accepted, or its last answer sent); one whose request is not whole --timeout after that is
 * shut down by the reaper thread. (The table's lock is also held while libmicrohttpd says a
 * connection is closed, before it closes the descriptor: a descriptor shut down is always the
 * connection's own.) */
typedef struct conn_track {
    int fd;
    uint64_t since_ms; /* atomic */
    int busy;          /* atomic: a whole request is being answered */
    struct conn_track *prev, *next;
} conn_track;

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static conn_track *conns;
static unsigned conn_timeout;
static pthread_t reaper;
static int reaper_pipe[2] = {-1, -1};

static uint64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                              enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD.get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_track *t = xcalloc(1, sizeof *t);
        t->fd = ci ? ci->connect_fd : -1;
        t->since_ms = mono_ms();
        pthread_mutex_lock(&conns_lock);
        t->next = conns;
        if (conns)
            conns->prev = t;
        conns = t;
        pthread_mutex_unlock(&conns_lock);
        *socket_context = t;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_track *t = *socket_context;
        if (!t)
            return;
        pthread_mutex_lock(&conns_lock);
        if (t->prev)
            t->prev->next = t->next;
        else
            conns = t->next;
        if (t->next)
            t->next->prev = t->prev;
        pthread_mutex_unlock(&conns_lock);
        free(t);
        *socket_context = NULL;
    }
}

static conn_track *track_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD.get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void *reaper_main(void *arg)
{
    (void)arg;
    uint64_t limit = (uint64_t)conn_timeout * 1000;
    int tick = conn_timeout >= 4 ? 1000 : (int)(conn_timeout * 250);
    for (;;) {
        struct pollfd p = {reaper_pipe[0], POLLIN, 0};
        if (poll(&p, 1, tick) > 0)
            return NULL;
        uint64_t now = mono_ms();
        pthread_mutex_lock(&conns_lock);
        for (conn_track *t = conns; t; t = t->next) {
            uint64_t since = __atomic_load_n(&t->since_ms, __ATOMIC_RELAXED);
            if (!__atomic_load_n(&t->busy, __ATOMIC_RELAXED) && t->fd >= 0 && now > since + limit) {
                shutdown(t->fd, SHUT_RDWR); /* (libmicrohttpd sees the end and closes it) */
                __atomic_store_n(&t->since_ms, now, __ATOMIC_RELAXED);
            }
        }
        pthread_mutex_unlock(&conns_lock);
    }
}

/* Whether the raw URL (escapes not decoded yet) holds a control character, as a byte or %XX. */
static bool url_has_control(const char *u)
{
    for (const unsigned char *p = (const unsigned char *)u; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return true;
        if (*p == '%' && p[1] && p[2]) {
            int hi = p[1] >= '0' && p[1] <= '9' ? p[1] - '0' : (p[1] | 32) >= 'a' && (p[1] | 32) <= 'f' ? (p[1] | 32) - 'a' + 10 : -1;
            int lo = p[2] >= '0' && p[2] <= '9' ? p[2] - '0' : (p[2] | 32) >= 'a' && (p[2] | 32) <= 'f' ? (p[2] | 32) - 'a' + 10 : -1;
            if (hi >= 0 && lo >= 0 && (hi * 16 + lo < 0x20 || hi * 16 + lo == 0x7f))
                return true;
        }
    }
    return false;
}

/* A request's line has arrived: its state, with its start time and whether its URL is hostile. */
static void *uri_start(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    pending *p = xcalloc(1, sizeof *p);
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    p->control = uri && url_has_control(uri);
    __atomic_add_fetch(&in_flight, 1, __ATOMIC_RELAXED);
    return p;
}

static double elapsed(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static const char *get_arg(void *conn, const char *name)
{
    return MHD.lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/* Equal strings, in time that does not depend on where they differ. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

/* The name on a verified client certificate, or "" (TLS with a CA only). */
static void client_name(const server *s, struct MHD_Connection *conn, char *out, size_t cap)
{
    out[0] = 0;
    if (!s->o->tls_ca)
        return;
    const union MHD_ConnectionInfo *ci = MHD.get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return;
    gnutls_session_t session = ci->tls_session;
    unsigned status = 0;
    if (TLS.verify_peers2(session, &status) != 0 || status != 0)
        return;
    unsigned n = 0;
    const gnutls_datum_t *certs = TLS.get_peers(session, &n);
    if (!certs || !n)
        return;
    gnutls_x509_crt_t crt;
    if (TLS.crt_init(&crt) != 0)
        return;
    size_t size = cap;
    if (TLS.crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) != 0 ||
        TLS.crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, out, &size) != 0 || size >= cap)
        out[0] = 0;
    TLS.crt_deinit(crt);
    /* the whole name or none: a NUL (or any control character) inside it would make a shorter
     * name compare equal to another node's */
    for (size_t i = 0; out[0] && i < size; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            out[0] = 0;
    if (out[0] && strlen(out) != size)
        out[0] = 0;
}

static who identify(const server *s, struct MHD_Connection *conn)
{
    who w = {WHO_ANYONE, "", s->auth_required};
    if (!s->auth_required)
        return w; /* no authentication configured: anyone reads everything, secrets redacted */
    const char *auth = MHD.lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (s->token && auth && strncmp(auth, "Bearer ", 7) == 0 && same_secret(auth + 7, s->token)) {
        w.kind = WHO_ADMIN;
        snprintf(w.name, sizeof w.name, "token");
        return w;
    }
    client_name(s, conn, w.name, sizeof w.name);
    if (!w.name[0])
        return w;
    w.kind = WHO_NODE;
    for (size_t i = 0; s->admins && s->admins[i]; i++)
        if (strcmp(s->admins[i], w.name) == 0)
            w.kind = WHO_ADMIN;
    return w;
}

static void json_str(sbuf *b, const char *s)
{
    hiera_value *v = hiera_value_new_string(s ? s : "");
    char *j = hiera_render(v, HIERA_RENDER_JSON, NULL);
    sb_adds(b, j ? j : "\"\"");
    free(j);
    hiera_value_decref(v);
}

static void access_log(server *s, struct MHD_Connection *conn, const char *method, const char *url, int status,
                       size_t bytes, double seconds, const who *w)
{
    if (!s->log)
        return;
    char addr[INET6_ADDRSTRLEN] = "";
    const union MHD_ConnectionInfo *ci = MHD.get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        if (ci->client_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, addr, sizeof addr);
        else if (ci->client_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, addr, sizeof addr);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    char ts[64];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    sbuf b = {0};
    sb_addf(&b, "{\"time\":\"%s.%03ldZ\",\"remote\":\"%s\",\"method\":", ts, now.tv_nsec / 1000000, addr);
    json_str(&b, method);
    sb_adds(&b, ",\"url\":");
    json_str(&b, url);
    sb_addf(&b, ",\"status\":%d,\"bytes\":%zu,\"seconds\":%.6f,\"client\":", status, bytes, seconds);
    json_str(&b, w->name[0] ? w->name : "anonymous");
    sb_adds(&b, "}\n");
    pthread_mutex_lock(&s->log_lock);
    fwrite(b.s, 1, b.len, s->log);
    fflush(s->log);
    pthread_mutex_unlock(&s->log_lock);
    sb_free(&b);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    server *s = cls;
    pending *p = *con_cls;
    if (!p) { /* (uri_start makes it: not reached) */
        p = uri_start(NULL, NULL, conn);
        *con_cls = p;
    }
    if (!p->started) {
        p->started = true;
        /* a body announced beyond --max-body by a client that waits for "100 Continue" before
         * sending it: 413 at once, and none of it is read. (A client that sends its body
         * without waiting has it read and dropped, then gets 413: answering before would close
         * the connection under its feet, and it would see a reset rather than the answer.) */
        const char *cl = MHD.lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
        const char *expect = MHD.lookup_connection_value(conn, MHD_HEADER_KIND, "Expect");
        char *end = NULL;
        unsigned long long announced = cl ? strtoull(cl, &end, 10) : 0;
        bool refuse = expect && strcasecmp(expect, "100-continue") == 0 && cl && end != cl && announced > s->o->max_body;
        if (!p->control && !refuse)
            return MHD_YES;
        p->too_big = !p->control;
    }
    if (*upload_size) {
        if (!p->too_big && p->body.len + *upload_size <= s->o->max_body)
            sb_addn(&p->body, upload_data, *upload_size);
        else
            p->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    response r = {0};
    const char *endpoint = "other";
    who w = identify(s, conn);
    conn_track *track = track_of(conn);
    if (track)
        __atomic_store_n(&track->busy, 1, __ATOMIC_RELAXED); /* whole: answered whatever it takes */
    if (p->control) {
        r.status = 400;
        r.body = xstrdup("{\"error\":\"the URL holds a control character\"}\n");
        r.len = strlen(r.body);
    } else if (p->too_big) {
        r.status = 413;
        r.body = xasprintf("{\"error\":\"the request body is larger than %zu bytes\"}\n", s->o->max_body);
        r.len = strlen(r.body);
    } else {
        request rq = {method, url, get_arg, conn, p->body.s ? p->body.s : "", p->body.len, w, s->st, s->o};
        route(&rq, &r, &endpoint);
    }
    struct MHD_Response *resp = MHD.create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_FREE);
    MHD.add_response_header(resp, "Content-Type", r.content_type ? r.content_type : "application/json");
    MHD.add_response_header(resp, "Cache-Control", r.cache_control ? r.cache_control : "no-store");
    MHD.add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (r.status == 401)
        MHD.add_response_header(resp, "WWW-Authenticate", "Bearer");
    enum MHD_Result ok = MHD.queue_response(conn, (unsigned)r.status, resp);
    MHD.destroy_response(resp);
    double secs = elapsed(&p->t0);
    metrics_request(endpoint, r.status, secs);
    access_log(s, conn, method, url, r.status, r.len, secs, &w);
    return ok;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    conn_track *track = track_of(conn);
    if (track) { /* the next request's time starts now */
        __atomic_store_n(&track->since_ms, mono_ms(), __ATOMIC_RELAXED);
        __atomic_store_n(&track->busy, 0, __ATOMIC_RELAXED);
    }
    pending *p = *con_cls;
    if (!p)
        return;
    sb_free(&p->body);
    free(p);
    *con_cls = NULL;
    __atomic_sub_fetch(&in_flight, 1, __ATOMIC_RELAXED);
}

/* libmicrohttpd's messages, but not those every client that hangs up or sends garbage causes (the
 * access log has those requests that got an answer; a flood of them would flood the log). */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    static const char *const routine[] = {"Connection was closed by remote side", "Error processing request",
                                          "Socket has been disconnected", "Failed to receive data", "Failed to send data",
                                          "Error: received handshake message out of context"};
    for (size_t i = 0; i < sizeof routine / sizeof *routine; i++)
        if (strncmp(msg, routine[i], strlen(routine[i])) == 0)
            return;
    fprintf(stderr, "hiera serve: %s%s", msg, strchr(msg, '\n') ? "" : "\n");
}

/* A token, certificate or key file (at most 1 MB); NULL with errno set when it cannot be read. */
static char *read_text(const char *path)
{
    sbuf b = {0};
    file_read_error fe;
    if (!file_read(path, &b, &(file_read_opts){.max = 1 << 20}, &fe)) {
        sb_free(&b);
        errno = fe.err;
        return NULL;
    }
    return sb_take(&b);
}

/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT" into *ss; false when it is not one. */
static bool parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof *ss);
    char host[128] = "127.0.0.1";
    const char *port = spec;
    const char *colon = strrchr(spec, ':');
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof host)
            return false;
        memcpy(host, spec + 1, (size_t)(close - spec - 1));
        host[close - spec - 1] = 0;
        port = close + 2;
    } else if (colon) {
        if ((size_t)(colon - spec) >= sizeof host)
            return false;
        memcpy(host, spec, (size_t)(colon - spec));
        host[colon - spec] = 0;
        port = colon + 1;
    }
    char *end;
    long pn = strtol(port, &end, 10);
    if (!*port || *end || pn < 0 || pn > 65535)
        return false;
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)pn);
        *len = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)pn);
        *len = sizeof *v6;
        return true;
    }
    return false;
}

/* The port actually bound (for "PORT" 0: one the system picked), or 0. */
static unsigned bound_port(struct MHD_Daemon *d)
{
    const union MHD_DaemonInfo *di = MHD.get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    if (!di)
        return 0;
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    if (getsockname(di->listen_fd, (struct sockaddr *)&ss, &l) != 0)
        return 0;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
}

int serve_run(const serve_options *o)
{
    if (!serve_load_mhd())
        return 2;
    if (o->tls_ca && !serve_load_tls())
        return 2;
    server s = {0};
    s.o = o;
    pthread_mutex_init(&s.log_lock, NULL);
    if (o->access_log)
        s.log = strcmp(o->access_log, "-") == 0 ? stderr : fopen(o->access_log, "a");
    if (o->access_log && !s.log) {
        fprintf(stderr, "Error: hiera serve: cannot open the access log %s: %s\n", o->access_log, strerror(errno));
        return 2;
    }
    if (o->token_file) {
        char *t = read_text(o->token_file);
        if (!t) {
            fprintf(stderr, "Error: hiera serve: cannot read the token file %s: %s\n", o->token_file, strerror(errno));
            return 2;
        }
        t[strcspn(t, "\r\n")] = 0;
        if (strlen(t) < 16) {
            fprintf(stderr, "Error: hiera serve: the token in %s is shorter than 16 characters\n", o->token_file);
            free(t);
            return 2;
        }
        s.token = t;
    }
    if (o->admins) {
        size_t n = 1;
        for (const char *p = o->admins; *p; p++)
            n += *p == ',';
        s.admins = xcalloc(n + 1, sizeof *s.admins);
        char *copy = xstrdup(o->admins), *save = NULL;
        size_t i = 0;
        for (char *a = strtok_r(copy, ",", &save); a; a = strtok_r(NULL, ",", &save))
            s.admins[i++] = xstrdup(a);
        free(copy);
    }
    s.auth_required = o->token_file || o->tls_ca;

    /* the socket systemd passed (socket activation) is served instead of --listen's */
    int passed = serve_systemd_listen_fd();
    if (passed == -2)
        return 2;
    struct sockaddr_storage addr = {0};
    socklen_t addrlen;
    if (passed < 0 && !parse_listen(o->listen ? o->listen : "127.0.0.1:8150", &addr, &addrlen)) {
        fprintf(stderr, "Error: hiera serve: --listen '%s' is not PORT, ADDRESS:PORT or [ADDRESS]:PORT\n", o->listen);
        return 2;
    }
    char *cert = NULL, *key = NULL, *ca = NULL;
    if (o->tls_cert || o->tls_key) {
        if (!o->tls_cert || !o->tls_key) {
            fprintf(stderr, "Error: hiera serve: --tls-cert and --tls-key go together\n");
            return 2;
        }
        cert = read_text(o->tls_cert);
        key = cert ? read_text(o->tls_key) : NULL; /* errno: the first failure's */
        if (!cert || !key) {
            fprintf(stderr, "Error: hiera serve: cannot read %s: %s\n", !cert ? o->tls_cert : o->tls_key, strerror(errno));
            return 2;
        }
    }
    if (o->tls_ca) {
        if (!cert) {
            fprintf(stderr, "Error: hiera serve: --tls-ca (client certificates) needs --tls-cert and --tls-key\n");
            return 2;
        }
        ca = read_text(o->tls_ca);
        if (!ca) {
            fprintf(stderr, "Error: hiera serve: cannot read %s: %s\n", o->tls_ca, strerror(errno));
            return 2;
        }
    }

    /* many idle connections need many descriptors */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    serve_state st;
    if (!state_init(&st, o)) {
        state_free(&st);
        free(cert);
        free(key);
        free(ca);
        return 1;
    }
    s.st = &st;
    metrics_start();

    /* the signals are taken by this thread alone (sigwait), never by the server's threads */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned threads = o->threads;
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 2;
    }
    struct MHD_OptionItem opts[20];
    size_t no = 0;
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL}; /* first, as MHD asks */
    if (passed >= 0)
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, passed, NULL};
    else
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &addr};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, o->max_connections, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, o->timeout, NULL};
    /* the request line and headers must fit in this (a flood of headers gets 431 or 413) */
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 64 * 1024, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_connection, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_start, NULL};
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL};
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_TURBO;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (cert) {
        flags |= MHD_USE_TLS;
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, cert};
        opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, key};
        if (ca)
            opts[no++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, ca};
    }
    opts[no++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *d = MHD.start_daemon(flags, 0, NULL, NULL, answer, &s, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "Error: hiera serve: cannot listen on %s: %s\n", o->listen ? o->listen : "127.0.0.1:8150",
                strerror(errno));
        state_free(&st);
        return 2;
    }
    generation *g = state_current(&st);
    hv *envs = state_env_names(g);
    fprintf(stderr, "hiera serve: listening on %s%s port %u (%u threads); %zu environments (each built when first asked), "
                    "%zu nodes, ready in %.3f s\n",
            cert ? "https " : "", passed >= 0 ? "the socket systemd passed," : o->listen ? o->listen : "127.0.0.1:8150",
            bound_port(d), threads, hv_array_len(envs), hv_array_len(g->nodes), g->build_seconds);
    hv_decref(envs);
    generation_release(g);
    bool ready = !state_start(&st); /* (systemd hears READY=1 once the builder's first work is done) */
    if (ready) {
        fprintf(stderr, "hiera serve: warning: cannot start the builder; nothing is served\n");
        serve_systemd_ready(&st, true);
    }
    conn_timeout = o->timeout;
    bool reaping = o->timeout && pipe(reaper_pipe) == 0 && pthread_create(&reaper, NULL, reaper_main, NULL) == 0;

    /* the signals, and whether the builder's first work (the facts, the default environment) is
     * done, then once a second whether a reload ended (systemd is told: READY=1 at the first, and
     * after the reload SIGHUP asked for; the served generation after any) */
    int sig = 0;
    bool reloading = false;
    uint64_t reloads = __atomic_load_n(&st.reloads_ok, __ATOMIC_RELAXED) + __atomic_load_n(&st.reloads_refused, __ATOMIC_RELAXED);
    for (;;) {
        sig = sigtimedwait(&sigs, NULL, ready ? &(struct timespec){1, 0} : &(struct timespec){0, 20000000});
        uint64_t now = __atomic_load_n(&st.reloads_ok, __ATOMIC_RELAXED) + __atomic_load_n(&st.reloads_refused, __ATOMIC_RELAXED);
        if (!ready) {
            if (__atomic_load_n(&st.warmed, __ATOMIC_ACQUIRE)) {
                ready = true;
                reloads = now;
                serve_systemd_ready(&st, true);
            }
        } else if (now != reloads) {
            reloads = now;
            serve_systemd_ready(&st, reloading);
            reloading = false;
        }
        if (sig < 0)
            continue;
        if (sig == SIGHUP) {
            serve_systemd_notify("RELOADING=1");
            reloading = true;
            state_request_reload(&st);
            continue;
        }
        break;
    }
    serve_systemd_notify("STOPPING=1");
    /* drain: no new connections; the requests in flight finish (10 s at most) */
    fprintf(stderr, "hiera serve: %s: stopping (%llu requests in flight)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            (unsigned long long)__atomic_load_n(&in_flight, __ATOMIC_RELAXED));
    int lfd = MHD.quiesce_daemon(d);
    if (lfd >= 0)
        close(lfd);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (__atomic_load_n(&in_flight, __ATOMIC_RELAXED) > 0 && elapsed(&t0) < 10.0)
        usleep(10000);
    MHD.stop_daemon(d);
    if (reaping) {
        ssize_t wr = write(reaper_pipe[1], "q", 1);
        (void)wr;
        pthread_join(reaper, NULL);
        close(reaper_pipe[0]);
        close(reaper_pipe[1]);
    }
    state_stop(&st);
    state_free(&st);
    if (s.log && s.log != stderr)
        fclose(s.log);
    free(cert);
    free(key);
    free(ca);
    free(s.token);
    for (size_t i = 0; s.admins && s.admins[i]; i++)
        free(s.admins[i]);
    free(s.admins);
    fprintf(stderr, "hiera serve: stopped\n");
    return 0;
}
