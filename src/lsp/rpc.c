/* rpc.c - JSON-RPC 2.0 framing for the Language Server Protocol, JSON access, and positions.
 *
 * The framing (a `Content-Length: N` header, a blank line, N bytes of JSON) is written here: no
 * Debian package offers LSP or JSON-RPC framing in C (jsonrpc-glib is GObject over GIO streams
 * and frames messages by newlines, not by Content-Length), and it is a few dozen lines. The JSON
 * itself is the project's: formats/json.c reads it, formats/render.c writes it. */
#include "lsp/lsp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "formats/render.h"

/* ------------------------------------------------------------------ reading */

/* Makes at least one more byte available; false at the end of input. */
static bool fill(rpc_reader *r)
{
    if (r->pos > 0 && r->pos == r->len) {
        r->pos = r->len = 0;
    } else if (r->pos > 65536) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->len == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 65536;
        r->buf = xrealloc(r->buf, r->cap);
    }
    for (;;) {
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n > 0) {
            r->len += (size_t)n;
            return true;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return false;
    }
}

/* One header line (without its CR LF) into line; false at the end of input. */
static bool read_line(rpc_reader *r, sbuf *line)
{
    line->len = 0;
    for (;;) {
        char *nl = r->pos < r->len ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - (r->buf + r->pos));
            if (line->len < 8192)
                sb_addn(line, r->buf + r->pos, n < 8192 ? n : 8192);
            r->pos += n + 1;
            if (line->len && line->s[line->len - 1] == '\r')
                line->s[--line->len] = 0;
            return true;
        }
        if (line->len < 8192)
            sb_addn(line, r->buf + r->pos, r->len - r->pos < 8192 ? r->len - r->pos : 8192);
        r->pos = r->len;
        if (!fill(r))
            return false;
    }
}

int rpc_read(rpc_reader *r, sbuf *body, char **problem)
{
    sbuf line = {0};
    long long length = -1;
    bool any = false;
    *problem = NULL;
    for (;;) {
        if (!read_line(r, &line)) {
            sb_free(&line);
            return 0;
        }
        if (!line.len) {
            if (!any)
                continue; /* blank lines between messages */
            break;
        }
        any = true;
        const char *s = sb_str(&line);
        if (!strncasecmp(s, "Content-Length:", 15)) {
            char *end;
            errno = 0;
            length = strtoll(s + 15, &end, 10);
            while (*end == ' ' || *end == '\t')
                end++;
            if (errno || *end || length < 0)
                length = -2;
        }
    }
    sb_free(&line);
    if (length < 0) {
        *problem = xstrdup(length == -1 ? "a message without a Content-Length header" : "a bad Content-Length header");
        return -1;
    }
    size_t want = (size_t)length;
    bool keep = want <= RPC_MAX_BODY;
    body->len = 0;
    while (want) {
        if (r->pos == r->len && !fill(r))
            return 0;
        size_t n = r->len - r->pos < want ? r->len - r->pos : want;
        if (keep)
            sb_addn(body, r->buf + r->pos, n);
        r->pos += n;
        want -= n;
    }
    if (!keep) {
        *problem = xasprintf("a message of %lld bytes (at most %zu are read)", length, RPC_MAX_BODY);
        return -1;
    }
    if (!body->s)
        sb_addn(body, "", 0);
    return 1;
}

/* ------------------------------------------------------------------ writing */

void rpc_log(rpc_writer *w, const char *dir, const char *text, size_t len)
{
    if (!w->log)
        return;
    fprintf(w->log, "%s %.*s\n", dir, (int)(len > 4000 ? 4000 : len), text);
    fflush(w->log);
}

bool rpc_send(rpc_writer *w, const hv *msg)
{
    sbuf b = {0};
    herr err = {0};
    if (render_json(&b, msg, &err) != 0) {
        /* a value JSON cannot hold (Infinity): said as an error instead */
        sb_free(&b);
        hv *e = rpc_error(jget(msg, "id"), RPC_INTERNAL_ERROR, err.msg ? err.msg : "cannot render the answer");
        herr_clear(&err);
        render_json(&b, e, &err);
        hv_decref(e);
        herr_clear(&err);
    }
    char head[64];
    int hn = snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", b.len);
    pthread_mutex_lock(&w->lock);
    bool ok = !w->dead;
    if (ok)
        ok = fd_write_full(w->fd, head, (size_t)hn) && fd_write_full(w->fd, sb_str(&b), b.len);
    if (!ok)
        w->dead = true;
    rpc_log(w, "<-", sb_str(&b), b.len);
    pthread_mutex_unlock(&w->lock);
    sb_free(&b);
    return ok;
}

static hv *message(void)
{
    hv *m = hv_hash();
    jset(m, "jsonrpc", hv_str("2.0"));
    return m;
}

hv *rpc_response(const hv *id, hv *result)
{
    hv *m = message();
    jset(m, "id", id ? hv_copy(id) : hv_undef());
    jset(m, "result", result ? result : hv_undef());
    return m;
}

hv *rpc_error(const hv *id, int code, const char *text)
{
    hv *m = message();
    jset(m, "id", id ? hv_copy(id) : hv_undef());
    hv *e = hv_hash();
    jset(e, "code", hv_int(code));
    jset(e, "message", hv_str(text));
    jset(m, "error", e);
    return m;
}

hv *rpc_notification(const char *method, hv *params)
{
    hv *m = message();
    jset(m, "method", hv_str(method));
    jset(m, "params", params ? params : hv_hash());
    return m;
}

/* ------------------------------------------------------------------ JSON access */

const hv *jget(const hv *o, const char *key) { return hv_is(o, HV_HASH) ? hv_hash_gets(o, key) : NULL; }

const char *jstr(const hv *o, const char *key)
{
    const hv *v = jget(o, key);
    return hv_is(v, HV_STRING) ? hv_str_ptr(v) : NULL;
}

const hv *jobj(const hv *o, const char *key)
{
    const hv *v = jget(o, key);
    return hv_is(v, HV_HASH) ? v : NULL;
}

const hv *jarr(const hv *o, const char *key)
{
    const hv *v = jget(o, key);
    return hv_is(v, HV_ARRAY) ? v : NULL;
}

bool jint(const hv *o, const char *key, int64_t *out)
{
    const hv *v = jget(o, key);
    if (hv_is(v, HV_INT)) {
        *out = hv_int_val(v);
        return true;
    }
    if (hv_is(v, HV_FLOAT) && hv_float_val(v) >= 0 && hv_float_val(v) < 9e15) {
        *out = (int64_t)hv_float_val(v);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------ positions */

/* the length of the UTF-8 sequence starting with byte c (1 for a stray continuation byte) */
static size_t seq_len(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

void lt_index(ltext *t)
{
    size_t cap = 64;
    t->lines = xmalloc(cap * sizeof *t->lines);
    t->nlines = 0;
    t->lines[t->nlines++] = 0;
    for (const char *p = t->text, *end = t->text + t->len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        if (t->nlines == cap) {
            cap *= 2;
            t->lines = xrealloc(t->lines, cap * sizeof *t->lines);
        }
        t->lines[t->nlines++] = (size_t)(nl - t->text) + 1;
        p = nl + 1;
    }
}

void lt_index_free(ltext *t)
{
    free(t->lines);
    t->lines = NULL;
    t->nlines = 0;
}

size_t lt_line_start(const ltext *t, uint32_t line)
{
    if (t->lines)
        return line < t->nlines ? t->lines[line] : t->len;
    size_t off = 0;
    for (uint32_t l = 0; l < line; l++) {
        const char *nl = memchr(t->text + off, '\n', t->len - off);
        if (!nl)
            return t->len;
        off = (size_t)(nl - t->text) + 1;
    }
    return off;
}

size_t lt_offset(const ltext *t, int64_t line, int64_t character)
{
    if (line < 0)
        return 0;
    if (line > UINT32_MAX)
        return t->len;
    size_t off = lt_line_start(t, (uint32_t)line);
    int64_t units = 0;
    while (off < t->len && t->text[off] != '\n' && units < character) {
        size_t n = seq_len((unsigned char)t->text[off]);
        if (off + n > t->len)
            n = t->len - off;
        units += t->utf8 ? (int64_t)n : n == 4 ? 2 : 1;
        off += n;
    }
    if (off < t->len && t->text[off] == '\n' && off > 0 && t->text[off - 1] == '\r' && units < character)
        off--; /* never between CR and LF */
    return off;
}

size_t lt_offset_lc(const ltext *t, uint32_t line, uint32_t col)
{
    size_t off = lt_line_start(t, line ? line - 1 : 0);
    for (uint32_t c = 1; c < col && off < t->len && t->text[off] != '\n'; c++) {
        size_t n = seq_len((unsigned char)t->text[off]);
        off += off + n > t->len ? t->len - off : n;
    }
    return off;
}

void lt_position(const ltext *t, size_t off, uint32_t *line, uint32_t *character)
{
    if (off > t->len)
        off = t->len;
    uint32_t l = 0;
    size_t start = 0;
    if (t->lines) {
        /* the last line starting at or before off */
        size_t lo = 0, hi = t->nlines;
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (t->lines[mid] <= off)
                lo = mid;
            else
                hi = mid;
        }
        l = (uint32_t)lo;
        start = t->lines[lo];
    }
    for (const char *p = t->text + start; !t->lines && p && (size_t)(p - t->text) < off;) {
        const char *nl = memchr(p, '\n', off - (size_t)(p - t->text));
        if (!nl)
            break;
        l++;
        start = (size_t)(nl - t->text) + 1;
        p = nl + 1;
    }
    uint32_t units = 0;
    for (size_t i = start; i < off;) {
        size_t n = seq_len((unsigned char)t->text[i]);
        if (i + n > off)
            n = off - i;
        units += t->utf8 ? (uint32_t)n : n == 4 ? 2 : 1;
        i += n;
    }
    *line = l;
    *character = units;
}

hv *lsp_position(uint32_t line, uint32_t character)
{
    hv *p = hv_hash();
    jset(p, "line", hv_int(line));
    jset(p, "character", hv_int(character));
    return p;
}

hv *lsp_range_of(const ltext *t, size_t start, size_t end)
{
    uint32_t l, c;
    hv *r = hv_hash();
    lt_position(t, start, &l, &c);
    jset(r, "start", lsp_position(l, c));
    lt_position(t, end, &l, &c);
    jset(r, "end", lsp_position(l, c));
    return r;
}

/* ------------------------------------------------------------------ URIs */

char *uri_of_path(const char *path)
{
    sbuf b = {0};
    sb_adds(&b, "file://");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-_.~@+", *p))
            sb_addc(&b, (char)*p);
        else
            sb_addf(&b, "%%%02X", *p);
    }
    return sb_take(&b);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

char *path_of_uri(const char *uri)
{
    if (strncmp(uri, "file://", 7) != 0)
        return NULL;
    const char *p = uri + 7;
    if (*p != '/') { /* file://host/path: only localhost */
        if (strncmp(p, "localhost/", 10) != 0)
            return NULL;
        p += 9;
    }
    sbuf b = {0};
    for (; *p && *p != '?' && *p != '#'; p++) {
        int h, l;
        if (*p == '%' && (h = hexval(p[1])) >= 0 && (l = hexval(p[2])) >= 0) {
            char c = (char)(h * 16 + l);
            if (!c) {
                sb_free(&b);
                return NULL;
            }
            sb_addc(&b, c);
            p += 2;
        } else {
            sb_addc(&b, *p);
        }
    }
    return sb_take(&b);
}
