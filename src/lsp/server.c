/* server.c - the server of hiera lsp: the message loop, documents, states, the request threads,
 * cancellation and diagnostics.
 *
 * Threads:
 *  - the main thread reads messages, answers what is immediate (initialize, shutdown, unknown
 *    methods, malformed messages), applies document changes and settings, and queues requests;
 *  - request threads (lsp_options.jobs, 2 by default) answer the queued requests, each over the
 *    state (lstate) current when the request arrived: the workspace and the open documents at that
 *    moment, never changed afterwards, so that no lock is held while a request runs and a slow one
 *    never holds the others (the second thread goes on);
 *  - the background thread builds the workspace (at start, after a setting changed or a file was
 *    saved) and runs hiera check over the open documents' unsaved text, newest state first; its
 *    results are published as diagnostics.
 * $/cancelRequest marks a queued or running request: it is answered RequestCancelled (a queued one
 * without being run). A client that goes away (end of input, a write that fails) ends the loop;
 * the threads finish the request they run and stop. */
#include "lsp/lsp.h"
#include "lsp/lsp_int.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check/check.h"
#include "check/yscan.h"
#include "base/fileio.h"
#include "formats/json.h"

/* unsaved texts larger than this get their syntax checked, not hiera check's rules */
#define LSP_CHECK_MAX (1 << 20)

/* ------------------------------------------------------------------ states */

lstate *lstate_retain(lstate *s)
{
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void lstate_release(lstate *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    for (size_t i = 0; i < s->ndocs; i++) {
        free(s->docs[i].uri);
        free(s->docs[i].path);
        free(s->docs[i].epath);
        free(s->docs[i].text);
    }
    free(s->docs);
    if (s->ov)
        overlay_release(s->ov);
    if (s->pp_open)
        pp_index_free(s->pp_open);
    ws_release(s->w);
    free(s);
}

const ldoc *lstate_doc(const lstate *s, const char *uri)
{
    for (size_t i = 0; uri && i < s->ndocs; i++)
        if (!strcmp(s->docs[i].uri, uri))
            return &s->docs[i];
    return NULL;
}

char *lstate_text(const lstate *s, const char *real_path, size_t *len)
{
    for (size_t i = 0; i < s->ndocs; i++)
        if (s->docs[i].path && !strcmp(s->docs[i].path, real_path)) {
            *len = s->docs[i].len;
            return xstrndup(s->docs[i].text, s->docs[i].len);
        }
    sbuf b = {0};
    if (!file_read(real_path, &b, NULL, NULL)) {
        sb_free(&b);
        return NULL;
    }
    *len = b.len;
    return sb_take(&b);
}

static bool is_manifest(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && !strcmp(path + n - 3, ".pp");
}

/* ------------------------------------------------------------------ the server */

typedef struct job {
    struct job *next;
    hv *id;
    char *method;
    hv *params;
    lstate *s;
    int cancelled;
    bool running;
} job;

typedef struct {
    rpc_writer out;
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* request threads: a job or the end */
    pthread_cond_t bg_wake;   /* the background thread: work or the end */
    job *head, *tail;         /* queued */
    job **running;            /* one slot per request thread */
    int nthreads;
    bool stopping;

    /* documents (the main thread's), and the state made from them */
    ldoc *docs;
    size_t ndocs;
    lstate *cur;              /* NULL until the workspace is built */
    ws *w;
    ws_settings set;
    bool utf8;
    bool initialized, shut_down;

    /* background work */
    bool rebuild;             /* build the workspace again (settings, saved files) */
    uint64_t generation;      /* of the documents: diagnostics are due when it moves */
    uint64_t checked;         /* the generation last checked */
    hv *published;            /* uri -> true: documents given diagnostics */
    /* the background thread's: hiera check kept between changes over one workspace (its
     * options name the workspace's strings: it holds a reference) */
    check_session *cs;
    ws *cs_w;
    const char *cs_paths[1];
    check_options cs_o;
    /* with puppetdb (and no factsDir): check's per-node rules over the configured nodes that
     * PuppetDB gave facts, names sorted; cs_nix[i] is the index in cs_w->nodes of cs_names[i] */
    check_nodes cs_nodes;
    const char **cs_names;
    size_t *cs_nix;
} server;

/* check_nodes' facts: node i's PuppetDB facts, as the workspace read them (immortal) */
static struct hv *cs_node_facts(void *data, size_t i, bool *stored, char **msg)
{
    const server *sv = data;
    *stored = true;
    *msg = NULL;
    return hv_incref(sv->cs_w->nodes[sv->cs_nix[i]].base);
}

static int cmp_node_ix(const void *a, const void *b, void *data)
{
    const ws *w = data;
    return strcmp(w->nodes[*(const size_t *)a].name, w->nodes[*(const size_t *)b].name);
}

/* The check's nodes of cs_w when its facts come from PuppetDB: sets cs_nodes; false when none. */
static bool cs_puppetdb_nodes(server *sv)
{
    const ws *w = sv->cs_w;
    free(sv->cs_names);
    free(sv->cs_nix);
    sv->cs_names = NULL;
    sv->cs_nix = NULL;
    if (w->set.facts_dir || !w->set.puppetdb)
        return false;
    size_t n = 0;
    sv->cs_nix = xcalloc(w->nnodes + 1, sizeof *sv->cs_nix);
    for (size_t i = 0; i < w->nnodes; i++)
        if (w->nodes[i].name && w->nodes[i].base)
            sv->cs_nix[n++] = i;
    if (!n)
        return false;
    qsort_r(sv->cs_nix, n, sizeof *sv->cs_nix, cmp_node_ix, (void *)w);
    sv->cs_names = xcalloc(n, sizeof *sv->cs_names);
    for (size_t i = 0; i < n; i++)
        sv->cs_names[i] = w->nodes[sv->cs_nix[i]].name;
    sv->cs_nodes = (check_nodes){sv->cs_names, n, NULL, cs_node_facts, sv};
    return true;
}

/* A new state from the documents and the workspace (lock held). */
static void new_state(server *sv)
{
    if (!sv->w)
        return;
    lstate *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->w = ws_retain(sv->w);
    s->utf8 = sv->utf8;
    s->docs = xcalloc(sv->ndocs + 1, sizeof *s->docs);
    overlay_text *t = xcalloc(sv->ndocs + 1, sizeof *t);
    size_t nt = 0;
    for (size_t i = 0; i < sv->ndocs; i++) {
        const ldoc *d = &sv->docs[i];
        ldoc *c = &s->docs[s->ndocs++];
        c->uri = xstrdup(d->uri);
        c->path = d->path ? xstrdup(d->path) : NULL;
        c->epath = d->path ? ws_engine_path(s->w, d->path) : NULL;
        c->text = xstrndup(d->text, d->len);
        c->len = d->len;
        c->version = d->version;
        if (c->epath)
            t[nt++] = (overlay_text){c->epath, c->text, c->len};
        if (is_manifest(c->path)) {
            if (!s->pp_open)
                s->pp_open = pp_index_new();
            pp_index_add_text(s->pp_open, c->epath, c->text, c->len);
        }
    }
    s->ov = overlay_new(s->w->snap, t, nt);
    free(t);
    lstate *old = sv->cur;
    sv->cur = s;
    lstate_release(old);
}

static void send(server *sv, hv *msg)
{
    rpc_send(&sv->out, msg);
    hv_decref(msg);
}

static void log_message(server *sv, int type, const char *text)
{
    hv *p = hv_hash();
    jset(p, "type", hv_int(type));
    jset(p, "message", hv_str(text));
    send(sv, rpc_notification("window/logMessage", p));
}

/* ------------------------------------------------------------------ requests */

static hv *dispatch(const char *method, lreq *r)
{
    if (!strcmp(method, "textDocument/hover"))
        return feat_hover(r);
    if (!strcmp(method, "textDocument/definition"))
        return feat_definition(r);
    if (!strcmp(method, "textDocument/references"))
        return feat_references(r);
    if (!strcmp(method, "textDocument/completion"))
        return feat_completion(r);
    if (!strcmp(method, "textDocument/codeAction"))
        return feat_code_action(r);
    if (!strcmp(method, "textDocument/documentSymbol"))
        return feat_document_symbol(r);
    if (!strcmp(method, "hiera/lookup"))
        return feat_lookup(r);
    return NULL;
}

static bool known_request(const char *m)
{
    static const char *const names[] = {"textDocument/hover",      "textDocument/definition", "textDocument/references",
                                        "textDocument/completion", "textDocument/codeAction", "textDocument/documentSymbol",
                                        "hiera/lookup",            NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(m, names[i]))
            return true;
    return false;
}

static void job_free(job *j)
{
    hv_decref(j->id);
    hv_decref(j->params);
    free(j->method);
    if (j->s)
        lstate_release(j->s);
    free(j);
}

typedef struct {
    server *sv;
    int slot;
} worker_arg;

static void *worker(void *arg)
{
    worker_arg *wa = arg;
    server *sv = wa->sv;
    pthread_mutex_lock(&sv->lock);
    for (;;) {
        /* a job can run once the workspace is built (its state is then taken) */
        while (!sv->stopping && (!sv->head || !sv->cur))
            pthread_cond_wait(&sv->wake, &sv->lock);
        if (sv->stopping)
            break;
        job *j = sv->head;
        sv->head = j->next;
        if (!sv->head)
            sv->tail = NULL;
        if (!j->s)
            j->s = lstate_retain(sv->cur);
        j->running = true;
        sv->running[wa->slot] = j;
        pthread_mutex_unlock(&sv->lock);

        hv *msg;
        if (__atomic_load_n(&j->cancelled, __ATOMIC_ACQUIRE)) {
            msg = rpc_error(j->id, RPC_REQUEST_CANCELLED, "cancelled");
        } else {
            lreq r = {j->s, j->params, &j->cancelled, 0, NULL};
            hv *result = dispatch(j->method, &r);
            if (__atomic_load_n(&j->cancelled, __ATOMIC_ACQUIRE)) {
                hv_decref(result);
                msg = rpc_error(j->id, RPC_REQUEST_CANCELLED, "cancelled");
            } else if (r.err_code) {
                hv_decref(result);
                msg = rpc_error(j->id, r.err_code, r.err_msg ? r.err_msg : "failed");
            } else {
                msg = rpc_response(j->id, result);
            }
            free(r.err_msg);
        }
        send(sv, msg);
        pthread_mutex_lock(&sv->lock);
        sv->running[wa->slot] = NULL;
        job_free(j);
    }
    pthread_mutex_unlock(&sv->lock);
    return NULL;
}

static void cancel(server *sv, const hv *id)
{
    if (!id)
        return;
    pthread_mutex_lock(&sv->lock);
    for (job *j = sv->head; j; j = j->next)
        if (hv_eql(j->id, id))
            __atomic_store_n(&j->cancelled, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < sv->nthreads; i++)
        if (sv->running[i] && hv_eql(sv->running[i]->id, id))
            __atomic_store_n(&sv->running[i]->cancelled, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&sv->lock);
}

/* ------------------------------------------------------------------ diagnostics */

/* the position of a finding in the document (its word: a key, a scalar, an interpolation) */
static hv *finding_range(const ltext *t, uint32_t line, uint32_t col)
{
    size_t start = lt_offset_lc(t, line ? line : 1, col ? col : 1), end = start;
    while (end < t->len && t->text[end] != '\n' && t->text[end] != '\r' && t->text[end] != ' ' && t->text[end] != ',' &&
           !(t->text[end] == ':' && (end + 1 >= t->len || t->text[end + 1] == ' ' || t->text[end + 1] == '\n')))
        end++;
    if (end == start) { /* nothing there: the rest of the line */
        while (end < t->len && t->text[end] != '\n')
            end++;
    }
    return lsp_range_of(t, start, end);
}

static hv *finding_diagnostic(const ltext *t, const check_finding *f)
{
    hv *d = hv_hash();
    jset(d, "range", finding_range(t, f->line, f->col));
    jset(d, "severity", hv_int(f->severity == CHECK_ERROR ? 1 : 2));
    jset(d, "code", hv_str(f->rule));
    hv *cd = hv_hash();
    char *link = rule_link(f->rule);
    jset(cd, "href", hv_str(link));
    free(link);
    jset(d, "codeDescription", cd);
    jset(d, "source", hv_str("hiera check"));
    sbuf m = {0};
    sb_adds(&m, f->message);
    if (f->nnodes) {
        sb_adds(&m, " (nodes: ");
        for (size_t i = 0; i < f->nnodes && i < 10; i++)
            sb_addf(&m, "%s%s", i ? ", " : "", f->nodes[i]);
        if (f->nnodes > 10)
            sb_addf(&m, " and %zu more", f->nnodes - 10);
        sb_addc(&m, ')');
    }
    char *text = sb_take(&m);
    jset(d, "message", hv_str(text));
    free(text);
    return d;
}

static void publish(server *sv, const ldoc *d, hv *diags)
{
    hv *p = hv_hash();
    jset(p, "uri", hv_str(d->uri));
    jset(p, "version", hv_int(d->version));
    jset(p, "diagnostics", diags);
    send(sv, rpc_notification("textDocument/publishDiagnostics", p));
}

static ldoc *find_doc(server *sv, const char *uri);

/* Checks the open documents of s: a document that does not parse gets its syntax error alone;
 * the others hiera check's findings on their unsaved text. */
static void diagnose(server *sv, lstate *s)
{
    const ws *w = s->w;
    size_t n = s->ndocs;
    hv **diags = xcalloc(n + 1, sizeof *diags);
    bool *syntax_only = xcalloc(n + 1, sizeof *syntax_only);
    bool any_check = false;
    for (size_t i = 0; i < n; i++) {
        diags[i] = hv_array();
        hv *syntax = doc_syntax_error(s, &s->docs[i]);
        if (syntax) {
            hv_array_push(diags[i], syntax); /* its syntax error, nothing else */
            syntax_only[i] = true;
        } else if (s->docs[i].len > LSP_CHECK_MAX) {
            /* hiera check's rules are not run on so large an unsaved text (it parsed: fine) */
            hv *d = hv_hash();
            ltext t = {.text = s->docs[i].text, .len = s->docs[i].len, .utf8 = s->utf8};
            jset(d, "range", lsp_range_of(&t, 0, 0));
            jset(d, "severity", hv_int(3));
            jset(d, "source", hv_str("hiera lsp"));
            char *m = xasprintf("%zu bytes: hiera check's rules run on files up to %d MiB in the editor; run hiera check",
                                s->docs[i].len, LSP_CHECK_MAX >> 20);
            jset(d, "message", hv_str(m));
            free(m);
            hv_array_push(diags[i], d);
            syntax_only[i] = true;
        } else if (s->docs[i].path) {
            any_check = true;
        }
    }
    if (any_check && !w->error) {
        check_text *texts = xcalloc(n + 1, sizeof *texts);
        size_t nt = 0;
        for (size_t i = 0; i < n; i++)
            if (s->docs[i].path && !syntax_only[i])
                texts[nt++] = (check_text){s->docs[i].path, s->docs[i].text, s->docs[i].len};
        if (sv->cs_w != w) {
            /* another workspace (settings, saved files): a new session over it */
            check_session_free(sv->cs);
            ws_release(sv->cs_w);
            sv->cs_w = ws_retain((ws *)w);
            check_options *o = &sv->cs_o;
            memset(o, 0, sizeof *o);
            sv->cs_paths[0] = w->check_path;
            if (w->check_path) {
                o->paths = sv->cs_paths;
                o->npaths = 1;
            } else {
                o->codedir = w->codedir;
            }
            o->confdir = w->set.confdir;
            o->environment = w->env_name;
            o->facts_dir = w->set.facts_dir;
            if (cs_puppetdb_nodes(sv))
                o->nodes = &sv->cs_nodes;
            o->jobs = 1;
            sv->cs = check_session_new(o);
        }
        check_report rep;
        char *error = NULL;
        if (check_session_run(sv->cs, texts, nt, &rep, &error) == 0) {
            /* positions found through an index of each document's lines (a file may have
             * thousands of findings) */
            ltext *lt = xcalloc(n + 1, sizeof *lt);
            for (size_t k = 0; k < rep.n; k++) {
                const check_finding *f = &rep.v[k];
                for (size_t i = 0; i < n; i++) {
                    if (syntax_only[i] || !s->docs[i].path || strcmp(s->docs[i].path, f->file) != 0)
                        continue;
                    if (!lt[i].lines) {
                        lt[i] = (ltext){s->docs[i].text, s->docs[i].len, s->utf8, NULL, 0};
                        lt_index(&lt[i]);
                    }
                    hv_array_push(diags[i], finding_diagnostic(&lt[i], f));
                }
            }
            for (size_t i = 0; i < n; i++)
                lt_index_free(&lt[i]);
            free(lt);
            check_report_free(&rep);
        } else {
            char *m = xasprintf("hiera check: %s", error ? error : "failed");
            log_message(sv, 1, m);
            free(m);
            free(error);
        }
        free(texts);
    }
    /* only for the documents still open: one closed meanwhile keeps the empty diagnostics its
     * didClose published (they were not cleared when a check of the text before ended after it) */
    pthread_mutex_lock(&sv->lock);
    for (size_t i = 0; i < n; i++) {
        if (find_doc(sv, s->docs[i].uri))
            publish(sv, &s->docs[i], diags[i]);
        else
            hv_decref(diags[i]);
    }
    pthread_mutex_unlock(&sv->lock);
    free(diags);
    free(syntax_only);
}

static void *background(void *arg)
{
    server *sv = arg;
    pthread_mutex_lock(&sv->lock);
    for (;;) {
        while (!sv->stopping && !sv->rebuild && (sv->generation == sv->checked || !sv->cur))
            pthread_cond_wait(&sv->bg_wake, &sv->lock);
        if (sv->stopping)
            break;
        if (sv->rebuild) {
            sv->rebuild = false;
            ws_settings set;
            ws_settings_copy(&set, &sv->set);
            ws *prev = sv->w ? ws_retain(sv->w) : NULL;
            pthread_mutex_unlock(&sv->lock);
            ws *w = ws_build(&set, prev);
            ws_settings_free(&set);
            if (w->error) {
                char *m = xasprintf("hiera lsp: %s", w->error);
                log_message(sv, 1, m);
                free(m);
            }
            for (size_t i = 0; i < w->nnodes; i++)
                if (w->nodes[i].problem) {
                    char *m = xasprintf("hiera lsp: node %s: %s", w->nodes[i].name, w->nodes[i].problem);
                    log_message(sv, 2, m);
                    free(m);
                }
            ws_release(prev);
            pthread_mutex_lock(&sv->lock);
            ws_release(sv->w);
            sv->w = w;
            new_state(sv);
            sv->generation++;
            pthread_cond_broadcast(&sv->wake);
            continue;
        }
        uint64_t gen = sv->generation;
        lstate *s = lstate_retain(sv->cur);
        pthread_mutex_unlock(&sv->lock);
        diagnose(sv, s);
        lstate_release(s);
        pthread_mutex_lock(&sv->lock);
        sv->checked = gen;
    }
    pthread_mutex_unlock(&sv->lock);
    return NULL;
}

/* ------------------------------------------------------------------ documents */

static ldoc *find_doc(server *sv, const char *uri)
{
    for (size_t i = 0; uri && i < sv->ndocs; i++)
        if (!strcmp(sv->docs[i].uri, uri))
            return &sv->docs[i];
    return NULL;
}

static void doc_free(ldoc *d)
{
    free(d->uri);
    free(d->path);
    free(d->epath);
    free(d->text);
}

/* Applies one contentChanges entry (a range, or the whole text) */
static void apply_change(server *sv, ldoc *d, const hv *ch)
{
    const char *text = jstr(ch, "text");
    if (!text)
        return;
    size_t tl = hv_str_len(jget(ch, "text"));
    const hv *range = jobj(ch, "range");
    if (!range) {
        free(d->text);
        d->text = xstrndup(text, tl);
        d->len = tl;
        return;
    }
    const hv *a = jobj(range, "start"), *b = jobj(range, "end");
    int64_t al = 0, ac = 0, bl = 0, bc = 0;
    jint(a, "line", &al), jint(a, "character", &ac), jint(b, "line", &bl), jint(b, "character", &bc);
    ltext t = {.text = d->text, .len = d->len, .utf8 = sv->utf8};
    size_t s = lt_offset(&t, al, ac), e = lt_offset(&t, bl, bc);
    if (e < s)
        e = s;
    char *nt = xmalloc(d->len - (e - s) + tl + 1);
    memcpy(nt, d->text, s);
    memcpy(nt + s, text, tl);
    memcpy(nt + s + tl, d->text + e, d->len - e);
    d->len = d->len - (e - s) + tl;
    nt[d->len] = 0;
    free(d->text);
    d->text = nt;
}

static void documents_changed(server *sv)
{
    pthread_mutex_lock(&sv->lock);
    new_state(sv);
    sv->generation++;
    pthread_cond_signal(&sv->bg_wake);
    pthread_mutex_unlock(&sv->lock);
}

static void did_open(server *sv, const hv *params)
{
    const hv *td = jobj(params, "textDocument");
    const char *uri = jstr(td, "uri"), *text = jstr(td, "text");
    if (!uri || !text)
        return;
    pthread_mutex_lock(&sv->lock);
    ldoc *d = find_doc(sv, uri);
    if (!d) {
        sv->docs = xrealloc(sv->docs, (sv->ndocs + 1) * sizeof *sv->docs);
        d = &sv->docs[sv->ndocs++];
        memset(d, 0, sizeof *d);
        d->uri = xstrdup(uri);
        char *p = path_of_uri(uri);
        char *rp = p ? realpath(p, NULL) : NULL;
        d->path = rp ? rp : p ? xstrdup(p) : NULL;
        free(p);
    }
    free(d->text);
    d->len = hv_str_len(jget(td, "text"));
    d->text = xstrndup(text, d->len);
    int64_t v = 0;
    jint(td, "version", &v);
    d->version = v;
    pthread_mutex_unlock(&sv->lock);
    documents_changed(sv);
}

static void did_change(server *sv, const hv *params)
{
    const hv *td = jobj(params, "textDocument");
    const hv *changes = jarr(params, "contentChanges");
    pthread_mutex_lock(&sv->lock);
    ldoc *d = find_doc(sv, jstr(td, "uri"));
    if (d && changes) {
        for (size_t i = 0; i < hv_array_len(changes); i++)
            apply_change(sv, d, hv_array_get(changes, i));
        int64_t v;
        if (jint(td, "version", &v))
            d->version = v;
    }
    pthread_mutex_unlock(&sv->lock);
    if (d)
        documents_changed(sv);
}

static void did_close(server *sv, const hv *params)
{
    const char *uri = jstr(jobj(params, "textDocument"), "uri");
    pthread_mutex_lock(&sv->lock);
    ldoc *d = find_doc(sv, uri);
    if (d) {
        /* its diagnostics are cleared: the file on disk is no longer the editor's */
        hv *p = hv_hash();
        jset(p, "uri", hv_str(d->uri));
        jset(p, "diagnostics", hv_array());
        send(sv, rpc_notification("textDocument/publishDiagnostics", p));
        doc_free(d);
        size_t i = (size_t)(d - sv->docs);
        memmove(d, d + 1, (sv->ndocs - i - 1) * sizeof *d);
        sv->ndocs--;
    }
    pthread_mutex_unlock(&sv->lock);
    if (d)
        documents_changed(sv);
}

static void request_rebuild(server *sv)
{
    pthread_mutex_lock(&sv->lock);
    sv->rebuild = true;
    pthread_cond_signal(&sv->bg_wake);
    pthread_mutex_unlock(&sv->lock);
}

/* ------------------------------------------------------------------ initialize */

static hv *strings(const char *const *v)
{
    hv *a = hv_array();
    for (size_t i = 0; v[i]; i++)
        hv_array_push(a, hv_str(v[i]));
    return a;
}

static hv *initialize(server *sv, const hv *params)
{
    /* position encoding: utf-8 when the client offers it, else UTF-16 */
    const hv *encs = jarr(jobj(jobj(params, "capabilities"), "general"), "positionEncodings");
    for (size_t i = 0; encs && i < hv_array_len(encs); i++)
        if (hv_is(hv_array_get(encs, i), HV_STRING) && !strcmp(hv_str_ptr(hv_array_get(encs, i)), "utf-8"))
            sv->utf8 = true;
    const char *root = NULL;
    const hv *folders = jarr(params, "workspaceFolders");
    if (folders && hv_array_len(folders))
        root = jstr(hv_array_get(folders, 0), "uri");
    if (!root)
        root = jstr(params, "rootUri");
    char *rp = root ? path_of_uri(root) : NULL;
    if (!rp && jstr(params, "rootPath"))
        rp = xstrdup(jstr(params, "rootPath"));
    pthread_mutex_lock(&sv->lock);
    free(sv->set.root);
    sv->set.root = rp;
    ws_settings_apply(&sv->set, jget(params, "initializationOptions"));
    sv->rebuild = true;
    pthread_cond_signal(&sv->bg_wake);
    pthread_mutex_unlock(&sv->lock);

    hv *caps = hv_hash();
    jset(caps, "positionEncoding", hv_str(sv->utf8 ? "utf-8" : "utf-16"));
    hv *sync = hv_hash();
    jset(sync, "openClose", hv_true());
    jset(sync, "change", hv_int(2));
    hv *save = hv_hash();
    jset(save, "includeText", hv_false());
    jset(sync, "save", save);
    jset(caps, "textDocumentSync", sync);
    jset(caps, "hoverProvider", hv_true());
    jset(caps, "definitionProvider", hv_true());
    jset(caps, "referencesProvider", hv_true());
    hv *comp = hv_hash();
    static const char *const triggers[] = {".", ":", "{", "'", "\"", NULL};
    jset(comp, "triggerCharacters", strings(triggers));
    jset(caps, "completionProvider", comp);
    hv *ca = hv_hash();
    static const char *const kinds[] = {"quickfix", "refactor.move", NULL};
    jset(ca, "codeActionKinds", strings(kinds));
    jset(caps, "codeActionProvider", ca);
    jset(caps, "documentSymbolProvider", hv_true());
    hv *result = hv_hash();
    jset(result, "capabilities", caps);
    hv *info = hv_hash();
    jset(info, "name", hv_str("hiera lsp"));
    jset(info, "version", hv_str(HIERA_VERSION));
    jset(result, "serverInfo", info);
    return result;
}

/* ------------------------------------------------------------------ the loop */

static void handle(server *sv, const char *body, size_t len)
{
    herr err = {0};
    hv *msg = hjson_parse(body, len, "<message>", &err);
    if (!msg) {
        send(sv, rpc_error(NULL, RPC_PARSE_ERROR, err.msg ? err.msg : "not JSON"));
        herr_clear(&err);
        return;
    }
    const hv *id = jget(msg, "id");
    const char *method = jstr(msg, "method");
    const hv *params = jget(msg, "params");
    if (id && !hv_is(id, HV_INT) && !hv_is(id, HV_STRING) && !hv_is(id, HV_UNDEF))
        id = NULL;
    if (!hv_is(msg, HV_HASH) || (!method && !(jget(msg, "result") || jget(msg, "error")))) {
        send(sv, rpc_error(id, RPC_INVALID_REQUEST, "not a JSON-RPC request, notification or response"));
        hv_decref(msg);
        return;
    }
    if (!method) { /* a response to a request of ours: none are made */
        hv_decref(msg);
        return;
    }
    bool request = jget(msg, "id") != NULL;
    if (request && !strcmp(method, "initialize")) {
        if (sv->initialized)
            send(sv, rpc_error(id, RPC_INVALID_REQUEST, "initialize was already received"));
        else {
            sv->initialized = true;
            send(sv, rpc_response(id, initialize(sv, params)));
        }
    } else if (!strcmp(method, "exit")) {
        hv_decref(msg);
        pthread_mutex_lock(&sv->lock);
        sv->stopping = true;
        pthread_mutex_unlock(&sv->lock);
        return;
    } else if (request && !sv->initialized) {
        send(sv, rpc_error(id, RPC_SERVER_NOT_INITIALIZED, "the server is not initialized"));
    } else if (request && !strcmp(method, "shutdown")) {
        sv->shut_down = true;
        send(sv, rpc_response(id, NULL));
    } else if (request && sv->shut_down) {
        send(sv, rpc_error(id, RPC_INVALID_REQUEST, "the server is shut down"));
    } else if (request && known_request(method)) {
        if (!hv_is(params, HV_HASH)) {
            send(sv, rpc_error(id, RPC_INVALID_PARAMS, "params must be an object"));
        } else {
            job *j = xcalloc(1, sizeof *j);
            j->id = hv_copy(id);
            j->method = xstrdup(method);
            j->params = hv_incref((hv *)params);
            pthread_mutex_lock(&sv->lock);
            if (sv->cur)
                j->s = lstate_retain(sv->cur);
            if (sv->tail)
                sv->tail->next = j;
            else
                sv->head = j;
            sv->tail = j;
            pthread_cond_signal(&sv->wake);
            pthread_mutex_unlock(&sv->lock);
        }
    } else if (request) {
        char *m = xasprintf("unknown method '%s'", method);
        send(sv, rpc_error(id, RPC_METHOD_NOT_FOUND, m));
        free(m);
    } else if (!sv->initialized || sv->shut_down) {
        /* notifications before initialize (but exit) and after shutdown are dropped */
    } else if (!strcmp(method, "textDocument/didOpen")) {
        did_open(sv, params);
    } else if (!strcmp(method, "textDocument/didChange")) {
        did_change(sv, params);
    } else if (!strcmp(method, "textDocument/didClose")) {
        did_close(sv, params);
    } else if (!strcmp(method, "textDocument/didSave") || !strcmp(method, "workspace/didChangeWatchedFiles")) {
        request_rebuild(sv);
    } else if (!strcmp(method, "workspace/didChangeConfiguration")) {
        pthread_mutex_lock(&sv->lock);
        ws_settings_apply(&sv->set, jget(params, "settings"));
        pthread_mutex_unlock(&sv->lock);
        request_rebuild(sv);
    } else if (!strcmp(method, "$/cancelRequest")) {
        cancel(sv, jget(params, "id"));
    }
    /* other notifications (initialized, $/setTrace...) need nothing */
    hv_decref(msg);
}

int lsp_run(int in_fd, int out_fd, const lsp_options *o)
{
    signal(SIGPIPE, SIG_IGN);
    server sv = {0};
    sv.out.fd = out_fd;
    pthread_mutex_init(&sv.out.lock, NULL);
    if (o && o->log_file)
        sv.out.log = fopen(o->log_file, "a");
    pthread_mutex_init(&sv.lock, NULL);
    pthread_cond_init(&sv.wake, NULL);
    pthread_cond_init(&sv.bg_wake, NULL);
    sv.nthreads = o && o->jobs > 0 ? o->jobs : 2;
    sv.running = xcalloc((size_t)sv.nthreads, sizeof *sv.running);
    pthread_t *threads = xcalloc((size_t)sv.nthreads, sizeof *threads);
    worker_arg *args = xcalloc((size_t)sv.nthreads, sizeof *args);
    for (int i = 0; i < sv.nthreads; i++) {
        args[i] = (worker_arg){&sv, i};
        pthread_create(&threads[i], NULL, worker, &args[i]);
    }
    pthread_t bg;
    pthread_create(&bg, NULL, background, &sv);

    rpc_reader in = {.fd = in_fd};
    sbuf body = {0};
    for (;;) {
        pthread_mutex_lock(&sv.lock);
        bool stop = sv.stopping;
        pthread_mutex_unlock(&sv.lock);
        if (stop || sv.out.dead)
            break;
        char *problem = NULL;
        int r = rpc_read(&in, &body, &problem);
        if (r == 0)
            break;
        if (r < 0) {
            send(&sv, rpc_error(NULL, RPC_INVALID_REQUEST, problem));
            free(problem);
            continue;
        }
        rpc_log(&sv.out, "->", sb_str(&body), body.len);
        handle(&sv, sb_str(&body), body.len);
    }
    sb_free(&body);
    free(in.buf);

    pthread_mutex_lock(&sv.lock);
    sv.stopping = true;
    pthread_cond_broadcast(&sv.wake);
    pthread_cond_broadcast(&sv.bg_wake);
    pthread_mutex_unlock(&sv.lock);
    /* the request threads finish what they run; the background thread may be in a long hiera
     * check (a large repository): it is given a few seconds, and otherwise left to the process's
     * exit, now (the client is gone or said exit: nothing waits for it; the server's state lives
     * on this stack, which the thread still reads, so the process ends here) */
    for (int i = 0; i < sv.nthreads; i++)
        pthread_join(threads[i], NULL);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    if (pthread_timedjoin_np(bg, NULL, &until) != 0) {
        if (sv.out.log)
            fflush(sv.out.log);
        _exit(sv.shut_down ? 0 : 1);
    }
    while (sv.head) {
        job *j = sv.head;
        sv.head = j->next;
        job_free(j);
    }
    check_session_free(sv.cs);
    ws_release(sv.cs_w);
    free(sv.cs_names);
    free(sv.cs_nix);
    for (size_t i = 0; i < sv.ndocs; i++)
        doc_free(&sv.docs[i]);
    free(sv.docs);
    lstate_release(sv.cur);
    ws_release(sv.w);
    ws_settings_free(&sv.set);
    hv_decref(sv.published);
    free(threads);
    free(args);
    free(sv.running);
    if (sv.out.log)
        fclose(sv.out.log);
    pthread_mutex_destroy(&sv.out.lock);
    pthread_mutex_destroy(&sv.lock);
    pthread_cond_destroy(&sv.wake);
    pthread_cond_destroy(&sv.bg_wake);
    return sv.shut_down ? 0 : 1;
}
