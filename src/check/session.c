/* session.c - hiera check run again over the same code with other unsaved texts (check.h:
 * check_session; hiera lsp's diagnostics after each keystroke).
 *
 * A run of check_run reads each environment (its model: snapshot, manifests, configurations,
 * levels, every data file parsed and scanned: ck_env_model) and then runs the rules over it
 * (ck_env_rules, ck_nodes). A session keeps the model between runs. When the texts of a run differ
 * from the last run's only in data files the model holds (the same paths given), those files are
 * parsed again from their new text, what the rules built is cleared (ck_env_rules_reset) and the
 * rules run again: every finding is computed as check_run computes it, over the same model, so
 * the report is check_run's. Anything else — a hiera.yaml, a manifest, a file the model does not
 * hold, a text given or no longer given — reads everything again. The findings and notes of
 * reading (a configuration that does not load...) are kept and given again by every run. */
#include "check/ck_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/psych.h"

typedef struct {
    ck_finding_int *v; /* the findings of reading the environment */
    size_t n;
} model_findings;

struct check_session {
    check_options o;     /* the caller's, with texts = ours */
    check_text *texts;   /* the texts the model was read or brought up to date with (owned) */
    size_t ntexts;
    bool open;           /* run holds a model */
    ck_run run;
    check_report model;  /* what reading gave: counters and notes */
    model_findings *mf;  /* per environment */
    size_t nreads;       /* runs that read everything, and that reused the model */
    size_t nreuses;
};

static void finding_copy(ck_finding_int *d, const ck_finding_int *s)
{
    *d = *s;
    d->file = s->file ? xstrdup(s->file) : NULL;
    d->message = s->message ? xstrdup(s->message) : NULL;
    d->nodes = s->nnodes ? xcalloc(s->nnodes, sizeof *d->nodes) : NULL;
    for (size_t i = 0; i < s->nnodes; i++)
        d->nodes[i] = xstrdup(s->nodes[i]);
}

static void finding_free(ck_finding_int *f)
{
    free(f->file);
    free(f->message);
    for (size_t i = 0; i < f->nnodes; i++)
        free(f->nodes[i]);
    free(f->nodes);
}

static void texts_free(check_text *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free((char *)t[i].path);
        free((char *)t[i].text);
    }
    free(t);
}

static void close_model(check_session *s)
{
    if (!s->open)
        return;
    for (size_t e = 0; e < s->run.envs.n; e++) {
        for (size_t i = 0; i < s->mf[e].n; i++)
            finding_free(&s->mf[e].v[i]);
        free(s->mf[e].v);
    }
    free(s->mf);
    s->mf = NULL;
    ck_run_close(&s->run);
    check_report_free(&s->model);
    s->open = false;
}

check_session *check_session_new(const check_options *o)
{
    check_session *s = xcalloc(1, sizeof *s);
    s->o = *o;
    s->o.texts = NULL;
    s->o.ntexts = 0;
    return s;
}

void check_session_free(check_session *s)
{
    if (!s)
        return;
    close_model(s);
    texts_free(s->texts, s->ntexts);
    free(s);
}

void check_session_stats(const check_session *s, size_t *reads, size_t *reuses)
{
    *reads = s->nreads;
    *reuses = s->nreuses;
}

static const check_text *text_named(const check_text *t, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].path, path))
            return &t[i];
    return NULL;
}

/* Reads everything again, with texts (copied). */
static int read_model(check_session *s, const check_text *texts, size_t n, char **error)
{
    close_model(s);
    texts_free(s->texts, s->ntexts);
    s->texts = xcalloc(n + 1, sizeof *s->texts);
    for (size_t i = 0; i < n; i++)
        s->texts[i] = (check_text){xstrdup(texts[i].path), xstrndup(texts[i].text, texts[i].len), texts[i].len};
    s->ntexts = n;
    s->o.texts = s->texts;
    s->o.ntexts = n;
    if (ck_run_open(&s->run, &s->o, &s->model, error) != 0) {
        check_report_free(&s->model);
        return -1;
    }
    s->open = true;
    s->nreads++;
    ck_run *r = &s->run;
    s->mf = xcalloc(r->envs.n + 1, sizeof *s->mf);
    diag_sink saved;
    ck_diag_enter(&r->c, &saved);
    for (size_t e = 0; e < r->envs.n; e++) {
        r->c.env = &r->envs.v[e];
        size_t first = r->c.nf;
        ck_env_model(&r->c);
        r->c.env->facts_memo = hv_hash(); /* the nodes' facts read once */
        r->c.env->node_memo = ck_node_memo_new(); /* and their lookups' results remembered */
        /* its findings, kept for every run */
        s->mf[e].n = r->c.nf - first;
        s->mf[e].v = xcalloc(s->mf[e].n + 1, sizeof *s->mf[e].v);
        if (s->mf[e].n)
            memcpy(s->mf[e].v, r->c.f + first, s->mf[e].n * sizeof *s->mf[e].v);
        r->c.nf = first;
    }
    diag_leave(&saved);
    return 0;
}

/* The data file of env e at the reported path, or NULL. */
static ck_file *model_file(ck_env *e, const char *path)
{
    char *ep = ck_engine_path(e, path);
    const hv *fi = hv_hash_gets(e->file_index, ep);
    free(ep);
    return fi ? &e->files[hv_int_val(fi)] : NULL;
}

/* Whether the model can be brought up to date with texts: the same paths, and every text that
 * changed a data file of the model (no hiera.yaml, manifest or file it does not hold). */
static bool can_update(check_session *s, const check_text *texts, size_t n)
{
    if (!s->open || n != s->ntexts)
        return false;
    for (size_t i = 0; i < n; i++) {
        const check_text *old = text_named(s->texts, s->ntexts, texts[i].path);
        if (!old)
            return false;
        if (old->len == texts[i].len && !memcmp(old->text, texts[i].text, old->len))
            continue;
        bool held = false;
        for (size_t e = 0; e < s->run.envs.n; e++)
            if (model_file(&s->run.envs.v[e], texts[i].path))
                held = true;
        if (!held)
            return false;
    }
    return true;
}

/* A data file read again from its new text, as ck_env_model reads a given text. */
static void reload_file(ck_file *f, const check_text *t)
{
    hv_decref(f->own_value);
    herr_clear(&f->err);
    f->own_value = cache_parse_text(f->path, t->text, t->len, f->fmt, &f->err);
    f->value = f->own_value;
    free(f->text);
    ys_free(f->ys);
    f->text = NULL;
    f->ys = NULL;
    if (f->fmt == FMT_YAML || f->fmt == FMT_JSON) {
        f->text = xstrndup(t->text, t->len);
        f->len = t->len;
        f->ys = ys_parse(f->text, f->len);
    }
}

static void update_model(check_session *s, const check_text *texts, size_t n)
{
    ck_run *r = &s->run;
    for (size_t i = 0; i < n; i++) {
        check_text *old = (check_text *)text_named(s->texts, s->ntexts, texts[i].path);
        if (old->len == texts[i].len && !memcmp(old->text, texts[i].text, old->len))
            continue;
        free((char *)old->text);
        old->text = xstrndup(texts[i].text, texts[i].len);
        old->len = texts[i].len;
        for (size_t e = 0; e < r->envs.n; e++) {
            ck_file *f = model_file(&r->envs.v[e], old->path);
            if (f)
                reload_file(f, old);
        }
        /* its inline comments are read again */
        hv *key = hv_str(old->path);
        hv_hash_del(r->inline_cache, key);
        hv_decref(key);
    }
    /* the nodes' lookups read the new texts */
    for (size_t e = 0; e < r->envs.n; e++) {
        ck_env *env = &r->envs.v[e];
        r->c.env = env;
        if (env->node_texts)
            overlay_release(env->node_texts);
        env->node_texts = s->o.ntexts ? ck_texts_overlay(&r->c, env->snap) : NULL;
    }
    s->nreuses++;
}

int check_session_run(check_session *s, const check_text *texts, size_t ntexts, check_report *report, char **error)
{
    memset(report, 0, sizeof *report);
    *error = NULL;
    if (can_update(s, texts, ntexts))
        update_model(s, texts, ntexts);
    else if (read_model(s, texts, ntexts, error) != 0)
        return -1;
    ck_run *r = &s->run;
    /* what reading gave */
    report->configs = s->model.configs;
    report->data_files = s->model.data_files;
    report->manifests = s->model.manifests;
    report->environments = s->model.environments;
    report->nodes = s->model.nodes;
    for (size_t i = 0; i < s->model.nnotes; i++)
        ck_note(&(ck_ctx){.report = report}, xstrdup(s->model.notes[i]));
    r->c.report = report;
    bool ok = true;
    diag_sink saved;
    ck_diag_enter(&r->c, &saved);
    for (size_t e = 0; ok && e < r->envs.n; e++) {
        ck_env *env = &r->envs.v[e];
        r->c.env = env;
        size_t first = r->c.nf;
        for (size_t i = 0; i < s->mf[e].n; i++) {
            if (r->c.nf == r->c.capf) {
                r->c.capf = r->c.capf ? r->c.capf * 2 : 64;
                r->c.f = xrealloc(r->c.f, r->c.capf * sizeof *r->c.f);
            }
            finding_copy(&r->c.f[r->c.nf++], &s->mf[e].v[i]);
        }
        ck_env_rules_reset(env);
        ck_env_rules(&r->c);
        if ((s->o.facts_dir || s->o.nodes) && ck_nodes(&r->c, error) != 0)
            ok = false;
        ck_run_report(r, first);
    }
    diag_leave(&saved);
    r->c.report = &s->model;
    if (!ok) {
        check_report_free(report);
        close_model(s); /* read again next time */
        return -1;
    }
    ck_report_sort(report);
    return 0;
}
