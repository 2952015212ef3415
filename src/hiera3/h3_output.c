/* h3_output.c - the text forms the `hiera` command prints: Ruby 3.1's pp (with its line width
 * taken from the terminal) and json 2.6's JSON.dump. */
#include "hiera3/hiera3_int.h"
#include "formats/render.h"
#include "base/fsjournal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* ------------------------------------------------------------------ Ruby 3.1's pp */

/* PrettyPrint (prettyprint.rb) driven as PP does it for hashes and arrays: a faithful port of
 * its buffer / group queue algorithm (Oppen's), because where lines break depends on it. */

typedef struct pp_group {
    int depth;
    long nbreak; /* breakables of the group still in the buffer */
    bool brk;
    bool queued;
} pp_group;

typedef struct {
    bool is_break;
    sbuf text;  /* Text: its pieces, concatenated */
    long width;
    const char *sep; /* Breakable */
    long indent;
    pp_group *group;
} pp_item;

typedef struct {
    pp_group **g;
    size_t n, cap, dead;
} pp_level;

typedef struct {
    sbuf *out;
    long maxwidth, output_width, buffer_width, indent;
    pp_item *buf; /* the buffer: buf[head..n) */
    size_t head, n, cap;
    pp_group **stack;
    size_t nstack, capstack;
    pp_level *queue;
    size_t nlevels;
    pp_group **all; /* every group, freed at the end */
    size_t nall, capall;
} pp_state;

static long utf8_width(const char *s, size_t n)
{
    long w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            w++;
    return w;
}

static void pq_enq(pp_state *q, pp_group *g)
{
    while ((size_t)g->depth >= q->nlevels) {
        q->queue = xrealloc(q->queue, (q->nlevels + 1) * sizeof *q->queue);
        memset(&q->queue[q->nlevels], 0, sizeof *q->queue);
        q->nlevels++;
    }
    pp_level *l = &q->queue[g->depth];
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->g = xrealloc(l->g, l->cap * sizeof *l->g);
    }
    l->g[l->n++] = g;
    g->queued = true;
}

/* GroupQueue#delete, lazily: the entry is dropped from its level when next compacted */
static void pq_delete(pp_state *q, pp_group *g)
{
    if (!g->queued)
        return;
    g->queued = false;
    pp_level *l = &q->queue[g->depth];
    l->dead++;
    while (l->n && !l->g[l->n - 1]->queued) {
        l->n--;
        l->dead--;
    }
    if (l->dead > 32 && l->dead * 2 > l->n) {
        size_t w = 0;
        for (size_t i = 0; i < l->n; i++)
            if (l->g[i]->queued)
                l->g[w++] = l->g[i];
        l->n = w;
        l->dead = 0;
    }
}

/* GroupQueue#deq: the outermost level first, its most recent group that has breakables (broken
 * and taken out); a level without one has all its groups broken and cleared. */
static pp_group *pq_deq(pp_state *q)
{
    for (size_t d = 0; d < q->nlevels; d++) {
        pp_level *l = &q->queue[d];
        for (size_t i = l->n; i-- > 0;) {
            pp_group *g = l->g[i];
            if (g->queued && g->nbreak > 0) {
                g->queued = false;
                memmove(&l->g[i], &l->g[i + 1], (l->n - i - 1) * sizeof *l->g);
                l->n--;
                g->brk = true;
                return g;
            }
        }
        for (size_t i = 0; i < l->n; i++)
            if (l->g[i]->queued) {
                l->g[i]->brk = true;
                l->g[i]->queued = false;
            }
        l->n = 0;
        l->dead = 0;
    }
    return NULL;
}

static void add_spaces(sbuf *out, long n)
{
    for (long i = 0; i < n; i++)
        sb_addc(out, ' ');
}

/* Text#output / Breakable#output */
static long item_output(pp_state *q, pp_item *it, long output_width)
{
    if (!it->is_break) {
        sb_addn(q->out, sb_str(&it->text), it->text.len);
        return output_width + it->width;
    }
    it->group->nbreak--;
    if (it->group->brk) {
        sb_addc(q->out, '\n');
        add_spaces(q->out, it->indent);
        return it->indent;
    }
    if (it->group->nbreak == 0)
        pq_delete(q, it->group);
    sb_adds(q->out, it->sep);
    return output_width + it->width;
}

static pp_item *buf_first(pp_state *q) { return q->head < q->n ? &q->buf[q->head] : NULL; }

static void buf_shift_output(pp_state *q)
{
    pp_item *it = &q->buf[q->head++];
    q->output_width = item_output(q, it, q->output_width);
    q->buffer_width -= it->width;
    sb_free(&it->text);
    if (q->head == q->n)
        q->head = q->n = 0;
}

static pp_item *buf_push(pp_state *q)
{
    if (q->n == q->cap) {
        if (q->head > 0) {
            memmove(q->buf, q->buf + q->head, (q->n - q->head) * sizeof *q->buf);
            q->n -= q->head;
            q->head = 0;
        }
        if (q->n == q->cap) {
            q->cap = q->cap ? q->cap * 2 : 16;
            q->buf = xrealloc(q->buf, q->cap * sizeof *q->buf);
        }
    }
    pp_item *it = &q->buf[q->n++];
    memset(it, 0, sizeof *it);
    return it;
}

static void break_outmost_groups(pp_state *q)
{
    while (q->maxwidth < q->output_width + q->buffer_width) {
        pp_group *g = pq_deq(q);
        if (!g)
            return;
        while (g->nbreak > 0 && buf_first(q))
            buf_shift_output(q);
        while (buf_first(q) && !buf_first(q)->is_break)
            buf_shift_output(q);
    }
}

static void pp_text(pp_state *q, const char *s, size_t n)
{
    long width = utf8_width(s, n);
    if (q->head == q->n) {
        sb_addn(q->out, s, n);
        q->output_width += width;
        return;
    }
    pp_item *last = &q->buf[q->n - 1];
    if (last->is_break)
        last = buf_push(q);
    sb_addn(&last->text, s, n);
    last->width += width;
    q->buffer_width += width;
    break_outmost_groups(q);
}

static void pp_flush(pp_state *q)
{
    while (buf_first(q))
        buf_shift_output(q);
    q->buffer_width = 0;
}

static void pp_breakable(pp_state *q, const char *sep)
{
    pp_group *g = q->stack[q->nstack - 1];
    long width = (long)strlen(sep);
    if (g->brk) {
        pp_flush(q);
        sb_addc(q->out, '\n');
        add_spaces(q->out, q->indent);
        q->output_width = q->indent;
        q->buffer_width = 0;
        return;
    }
    pp_item *it = buf_push(q);
    it->is_break = true;
    it->sep = sep;
    it->width = width;
    it->indent = q->indent;
    it->group = g;
    g->nbreak++;
    q->buffer_width += width;
    break_outmost_groups(q);
}

static void group_open(pp_state *q, long indent, const char *open)
{
    pp_text(q, open, strlen(open));
    pp_group *g = xcalloc(1, sizeof *g);
    g->depth = q->stack[q->nstack - 1]->depth + 1;
    if (q->nall == q->capall) {
        q->capall = q->capall ? q->capall * 2 : 64;
        q->all = xrealloc(q->all, q->capall * sizeof *q->all);
    }
    q->all[q->nall++] = g;
    if (q->nstack == q->capstack) {
        q->capstack *= 2;
        q->stack = xrealloc(q->stack, q->capstack * sizeof *q->stack);
    }
    q->stack[q->nstack++] = g;
    pq_enq(q, g);
    q->indent += indent;
}

static void group_close(pp_state *q, long indent, const char *close)
{
    q->indent -= indent;
    pp_group *g = q->stack[--q->nstack];
    if (g->nbreak == 0)
        pq_delete(q, g);
    pp_text(q, close, strlen(close));
}

/* self.lines.size > 1 */
static bool multi_line(const char *s, size_t n)
{
    const char *nl = memchr(s, '\n', n);
    return nl && nl + 1 < s + n;
}

/* PP#pp(obj): group { obj.pretty_print(self) } */
static void pp_obj(pp_state *q, const hv *v, int depth)
{
    group_open(q, 0, "");
    if (hv_is(v, HV_ARRAY) && depth < H3_MAX_VALUE_DEPTH) {
        group_open(q, 1, "[");
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i) { /* comma_breakable */
                pp_text(q, ",", 1);
                pp_breakable(q, " ");
            }
            pp_obj(q, hv_array_get(v, i), depth + 1);
        }
        group_close(q, 1, "]");
    } else if (hv_is(v, HV_HASH) && depth < H3_MAX_VALUE_DEPTH) {
        group_open(q, 1, "{");
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i) {
                pp_text(q, ",", 1);
                pp_breakable(q, " ");
            }
            group_open(q, 0, "");
            pp_obj(q, hv_hash_key_at(v, i), depth + 1);
            pp_text(q, "=>", 2);
            group_open(q, 1, "");
            pp_breakable(q, "");
            pp_obj(q, hv_hash_val_at(v, i), depth + 1);
            group_close(q, 1, "");
            group_close(q, 0, "");
        }
        group_close(q, 1, "}");
    } else if (hv_is(v, HV_STRING) && multi_line(hv_str_ptr(v), hv_str_len(v))) {
        /* String#pretty_print: several lines are shown as "line\n" + "line" */
        const char *s = hv_str_ptr(v), *end = s + hv_str_len(v);
        group_open(q, 0, "");
        for (bool first = true; s < end; first = false) {
            const char *nl = memchr(s, '\n', (size_t)(end - s));
            const char *e = nl ? nl + 1 : end;
            if (!first) {
                pp_text(q, " +", 2);
                pp_breakable(q, " ");
            }
            hv *line = hv_strn(s, (size_t)(e - s));
            pp_obj(q, line, depth + 1);
            hv_decref(line);
            s = e;
        }
        group_close(q, 0, "");
    } else {
        sbuf b = {0};
        ruby_inspect(&b, v);
        pp_text(q, sb_str(&b), b.len);
        sb_free(&b);
    }
    group_close(q, 0, "");
}

void h3_pp(sbuf *out, const hv *v, long width)
{
    pp_state q;
    memset(&q, 0, sizeof q);
    q.out = out;
    q.maxwidth = width;
    pp_group *root = xcalloc(1, sizeof *root);
    q.capstack = 16;
    q.stack = xmalloc(q.capstack * sizeof *q.stack);
    q.stack[q.nstack++] = root;
    pq_enq(&q, root);
    pp_obj(&q, v, 0);
    pp_flush(&q);
    sb_addc(out, '\n');
    for (size_t i = q.head; i < q.n; i++)
        sb_free(&q.buf[i].text);
    free(q.buf);
    free(q.stack);
    for (size_t i = 0; i < q.nlevels; i++)
        free(q.queue[i].g);
    free(q.queue);
    for (size_t i = 0; i < q.nall; i++)
        free(q.all[i]);
    free(q.all);
    free(root);
}

long h3_pp_width(int fd)
{
    /* PP.width_for(out): out.winsize (a terminal), else ENV['COLUMNS'].to_i.nonzero?, else 80;
     * minus one */
    struct winsize ws;
    if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0)
        return (long)ws.ws_col - 1;
    const char *c = fs_getenv("COLUMNS");
    if (c) {
        while (is_strip((unsigned char)*c) && *c)
            c++;
        bool neg = *c == '-';
        if (*c == '-' || *c == '+')
            c++;
        long v = 0;
        for (; (*c >= '0' && *c <= '9') || (*c == '_' && c[1] >= '0' && c[1] <= '9' && v); c++) {
            if (*c == '_')
                continue;
            if (v > 1000000000L)
                break;
            v = v * 10 + (*c - '0');
        }
        if (v)
            return (neg ? -v : v) - 1;
    }
    return 79;
}

/* ------------------------------------------------------------------ JSON.dump */

/* json 2.6's convert_UTF8_to_JSON (see render.c for the Puppet rendering of the same) */
static int jd_string(sbuf *out, const char *s, size_t n, herr *err)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_addc(out, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x20 || c == '"' || c == '\\') {
            switch (c) {
            case '"': sb_adds(out, "\\\""); break;
            case '\\': sb_adds(out, "\\\\"); break;
            case '\n': sb_adds(out, "\\n"); break;
            case '\r': sb_adds(out, "\\r"); break;
            case '\t': sb_adds(out, "\\t"); break;
            case '\f': sb_adds(out, "\\f"); break;
            case '\b': sb_adds(out, "\\b"); break;
            default: sb_addf(out, "\\u%04x", c); break;
            }
            i++;
            continue;
        }
        if (c < 0x80) {
            sb_addc(out, (char)c);
            i++;
            continue;
        }
        /* json's trailingBytesForUTF8 and isLegalUTF8 */
        size_t clen = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : c < 0xFC ? 5 : 6;
        if (i + clen > n) {
            herr_set(err, HERR_ERROR, "partial character in source, but hit end");
            return -1;
        }
        bool legal = clen <= 4 && !(c >= 0x80 && c < 0xC2) && c <= 0xF4;
        for (size_t k = 2; legal && k < clen; k++)
            legal = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
        if (legal && clen >= 2) {
            unsigned char lo = 0x80, hi = 0xBF, b = p[i + 1];
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                lo = 0x00, hi = 0x9F;
            else if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                lo = 0x00, hi = 0x8F;
            legal = b >= lo && b <= hi;
        }
        if (!legal) {
            herr_set(err, HERR_ERROR, "source sequence is illegal/malformed utf-8");
            return -1;
        }
        sb_addn(out, s + i, clen);
        i += clen;
    }
    sb_addc(out, '"');
    return 0;
}

static int jd_rec(sbuf *out, const hv *v, int depth, herr *err)
{
    if (depth > H3_MAX_VALUE_DEPTH) {
        herr_set(err, HERR_ERROR, "stack level too deep");
        return -1;
    }
    switch (hv_kind_of(v)) {
    case HV_FLOAT: {
        double d = hv_float_val(v);
        if (isnan(d))
            sb_adds(out, "NaN");
        else if (isinf(d))
            sb_adds(out, d > 0 ? "Infinity" : "-Infinity");
        else
            ruby_float_to_s(out, d);
        return 0;
    }
    case HV_STRING:
    case HV_SYMBOL:
        return jd_string(out, hv_str_ptr(v), hv_str_len(v), err);
    case HV_ARRAY:
        sb_addc(out, '[');
        for (size_t i = 0; i < hv_array_len(v); i++) {
            if (i)
                sb_addc(out, ',');
            if (jd_rec(out, hv_array_get(v, i), depth + 1, err))
                return -1;
        }
        sb_addc(out, ']');
        return 0;
    case HV_HASH:
        sb_addc(out, '{');
        for (size_t i = 0; i < hv_hash_len(v); i++) {
            if (i)
                sb_addc(out, ',');
            sbuf k = {0};
            h3_rb_to_s(&k, hv_hash_key_at(v, i)); /* keys through to_s */
            int r = jd_string(out, sb_str(&k), k.len, err);
            sb_free(&k);
            if (r)
                return -1;
            sb_addc(out, ':');
            if (jd_rec(out, hv_hash_val_at(v, i), depth + 1, err))
                return -1;
        }
        sb_addc(out, '}');
        return 0;
    default: /* nil, booleans, integers: their to_s */
        if (hv_is(v, HV_UNDEF))
            sb_adds(out, "null");
        else
            ruby_inspect(out, v);
        return 0;
    }
}

int h3_json_dump(sbuf *out, const hv *v, herr *err)
{
    sbuf tmp = {0};
    int r = jd_rec(&tmp, v, 0, err);
    if (r == 0)
        sb_addn(out, sb_str(&tmp), tmp.len);
    sb_free(&tmp);
    return r;
}
