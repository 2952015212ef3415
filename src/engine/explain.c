/* explain.c - the explanation of a lookup as a tree of events (Puppet's Explainer,
 * lib/puppet/pops/lookup/explainer.rb): the engine pushes a node for each step (data provider,
 * hierarchy entry, location, merge, interpolation, sub-key...), records outcomes on the current
 * node, and pops. The tree prints as Puppet's text or converts to a value for JSON output. */
#include "engine/explain.h"
#include "formats/render.h"

#include <stdlib.h>
#include <string.h>

typedef struct exnode {
    ex_type type;
    struct exnode *parent;
    struct exnode **branches;
    size_t nb, capb;
    char *text;  /* key, name, expression, path, merge source, module */
    char *text2; /* original path, configuration path */
    char *module;
    bool is_uri;
    ms_kind merge_kind;
    hv *merge_options; /* without "strategy", or NULL */
    hv *segments;      /* sub lookup segments / segment value */
    ex_event event;
    char *key;
    hv *value;
    char **texts;
    size_t ntexts;
} exnode;

struct explainer {
    exnode root;
    exnode *current;
    bool explain_options, only_options;
    int redact; /* > 0: values are recorded as Sensitive (a key converted to Sensitive) */
};

explainer *ex_new(bool explain_options, bool only_explain_options)
{
    explainer *ex = xcalloc(1, sizeof *ex);
    ex->root.type = EX_ROOT;
    ex->current = &ex->root;
    ex->explain_options = explain_options;
    ex->only_options = only_explain_options;
    return ex;
}

static void node_clear(exnode *n)
{
    for (size_t i = 0; i < n->nb; i++) {
        node_clear(n->branches[i]);
        free(n->branches[i]);
    }
    free(n->branches);
    free(n->text);
    free(n->text2);
    free(n->module);
    hv_decref(n->merge_options);
    hv_decref(n->segments);
    free(n->key);
    hv_decref(n->value);
    for (size_t i = 0; i < n->ntexts; i++)
        free(n->texts[i]);
    free(n->texts);
}

void ex_free(explainer *ex)
{
    if (!ex)
        return;
    node_clear(&ex->root);
    free(ex);
}

bool ex_only_options(const explainer *ex) { return ex && ex->only_options; }

static exnode *add_node(explainer *ex, ex_type t)
{
    exnode *p = ex->current, *n = xcalloc(1, sizeof *n);
    n->type = t;
    n->parent = p;
    if (p->nb == p->capb) {
        p->capb = p->capb ? p->capb * 2 : 4;
        p->branches = xrealloc(p->branches, p->capb * sizeof *p->branches);
    }
    p->branches[p->nb++] = n;
    return n;
}

void ex_push(explainer *ex, ex_type t, const char *text, const char *text2)
{
    exnode *n = add_node(ex, t);
    n->text = text ? xstrdup(text) : NULL;
    n->text2 = text2 ? xstrdup(text2) : NULL;
    ex->current = n;
}

void ex_push_merge(explainer *ex, const merge_strategy *ms)
{
    exnode *n = add_node(ex, EX_MERGE);
    n->merge_kind = ms->kind;
    if (ms->options && hv_hash_len(ms->options)) {
        hv *o = hv_copy(ms->options);
        hv *k = hv_str("strategy");
        hv_hash_del(o, k);
        hv_decref(k);
        if (hv_hash_len(o))
            n->merge_options = o;
        else
            hv_decref(o);
    }
    ex->current = n;
}

void ex_push_sub_lookup(explainer *ex, const hv *segments)
{
    exnode *n = add_node(ex, EX_SUB_LOOKUP);
    n->segments = hv_incref((hv *)segments);
    ex->current = n;
}

void ex_push_segment(explainer *ex, const hv *segment)
{
    exnode *n = add_node(ex, EX_SEGMENT);
    n->segments = hv_incref((hv *)segment);
    ex->current = n;
}

void ex_push_location(explainer *ex, const char *path, const char *original, bool is_uri)
{
    ex_push(ex, EX_LOCATION, path, original);
    ex->current->is_uri = is_uri;
}

void ex_push_provider(explainer *ex, const char *name, const char *config_path, const char *module)
{
    ex_push(ex, EX_DATA_PROVIDER, name, config_path);
    ex->current->module = module ? xstrdup(module) : NULL;
}

void ex_pop(explainer *ex)
{
    if (ex->current->parent)
        ex->current = ex->current->parent;
}

void ex_redact(explainer *ex, bool on) { ex->redact += on ? 1 : -1; }

static void set_event(explainer *ex, ex_event ev, char *key, hv *value)
{
    exnode *n = ex->current;
    hv *wrapped = NULL;
    if (ex->redact > 0 && value && !hv_is(value, HV_SENSITIVE))
        value = wrapped = hv_sensitive_new(hv_incref(value));
    n->event = ev;
    if (key) {
        free(n->key);
        n->key = key;
    }
    if (value || ev == EV_NOT_FOUND || ev == EV_LOCATION_NOT_FOUND) {
        hv_decref(n->value);
        n->value = value ? hv_incref(value) : NULL;
    }
    hv_decref(wrapped);
}

static char *key_text(const hv *key)
{
    if (hv_is(key, HV_STRING))
        return xstrndup(hv_str_ptr(key), hv_str_len(key));
    sbuf b = {0};
    ruby_to_s(&b, key);
    return sb_take(&b);
}

void ex_found(explainer *ex, const hv *key, hv *value) { set_event(ex, EV_FOUND, key_text(key), value); }
void ex_found_str(explainer *ex, const char *key, hv *value) { set_event(ex, EV_FOUND, xstrdup(key), value); }
void ex_found_in_defaults(explainer *ex, const char *key, hv *value)
{
    set_event(ex, EV_FOUND_IN_DEFAULTS, xstrdup(key), value);
}
void ex_not_found(explainer *ex, const hv *key) { set_event(ex, EV_NOT_FOUND, key_text(key), NULL); }
void ex_not_found_str(explainer *ex, const char *key) { set_event(ex, EV_NOT_FOUND, xstrdup(key), NULL); }
void ex_location_not_found(explainer *ex) { ex->current->event = EV_LOCATION_NOT_FOUND; }
void ex_result(explainer *ex, hv *value) { set_event(ex, EV_RESULT, NULL, value); }

void ex_text(explainer *ex, const char *text)
{
    exnode *n = ex->current;
    n->texts = xrealloc(n->texts, (n->ntexts + 1) * sizeof *n->texts);
    n->texts[n->ntexts++] = xstrdup(text);
}

void ex_merge_source(explainer *ex, const char *source)
{
    exnode *n = add_node(ex, EX_MERGE_SOURCE);
    n->text = xstrdup(source);
}

void ex_module_event(explainer *ex, const char *module, ex_event ev)
{
    exnode *n = add_node(ex, EX_MODULE);
    n->text = xstrdup(module);
    n->event = ev;
}

/* ------------------------------------------------------------------ text */

static void indent_to(sbuf *b, int n)
{
    for (int i = 0; i < n; i++)
        sb_addc(b, ' ');
}

static void dump_texts(sbuf *b, const exnode *n, int indent)
{
    for (size_t i = 0; i < n->ntexts; i++) {
        indent_to(b, indent);
        sb_adds(b, n->texts[i]);
        sb_addc(b, '\n');
    }
}

static void dump_outcome(sbuf *b, const exnode *n, int indent)
{
    switch (n->event) {
    case EV_NOT_FOUND:
        indent_to(b, indent);
        sb_addf(b, "No such key: \"%s\"\n", n->key ? n->key : "");
        break;
    case EV_FOUND:
    case EV_FOUND_IN_OVERRIDES:
    case EV_FOUND_IN_DEFAULTS:
        indent_to(b, indent);
        sb_addf(b, "Found key: \"%s\" value: ", n->key ? n->key : "");
        render_explain_value(b, n->value ? n->value : hv_undef(), indent);
        if (n->event == EV_FOUND_IN_OVERRIDES)
            sb_adds(b, " in overrides");
        if (n->event == EV_FOUND_IN_DEFAULTS)
            sb_adds(b, " in defaults");
        sb_addc(b, '\n');
        break;
    default:
        break;
    }
    dump_texts(b, n, indent);
}

static const char *merge_key(ms_kind k)
{
    switch (k) {
    case MS_FIRST: return "first";
    case MS_DEFAULT: return "default";
    case MS_UNIQUE: return "unique";
    case MS_HASH: return "hash";
    case MS_DEEP: return "deep";
    case MS_UNCONSTRAINED_DEEP: return "unconstrained_deep";
    case MS_REVERSE_DEEP: return "reverse_deep";
    }
    return "?";
}

static void dump_node(sbuf *b, const exnode *n, int indent, int first_indent);

static void dump_branches(sbuf *b, const exnode *n, int indent)
{
    for (size_t i = 0; i < n->nb; i++)
        dump_node(b, n->branches[i], indent, indent);
}

static void dump_node(sbuf *b, const exnode *n, int indent, int first_indent)
{
    switch (n->type) {
    case EX_ROOT:
        for (size_t i = 0; i < n->nb; i++)
            dump_node(b, n->branches[i], indent, first_indent);
        dump_texts(b, n, indent);
        break;
    case EX_TOP:
        indent_to(b, first_indent);
        sb_addf(b, "Searching for \"%s\"\n", n->text);
        dump_branches(b, n, indent + 2);
        break;
    case EX_INVALID_KEY:
        indent_to(b, first_indent);
        sb_addf(b, "Invalid key \"%s\"\n", n->text);
        break;
    case EX_MERGE_SOURCE:
        indent_to(b, first_indent);
        sb_addf(b, "Using merge options from \"%s\" hash\n", n->text);
        break;
    case EX_MODULE:
        indent_to(b, indent);
        if (n->event == EV_MODULE_NOT_FOUND)
            sb_addf(b, "Module \"%s\" not found\n", n->text);
        else if (n->event == EV_MODULE_PROVIDER_NOT_FOUND)
            sb_addf(b, "Module data provider for module \"%s\" not found\n", n->text);
        break;
    case EX_INTERPOLATE:
        indent_to(b, first_indent);
        sb_addf(b, "Interpolation on \"%s\"\n", n->text);
        dump_branches(b, n, indent + 2);
        break;
    case EX_MERGE:
        if (n->nb == 0)
            break;
        if (n->nb == 1) {
            dump_node(b, n->branches[0], indent, first_indent);
            break;
        }
        indent_to(b, first_indent);
        sb_addf(b, "Merge strategy %s\n", merge_key(n->merge_kind));
        if (n->merge_options) {
            indent_to(b, indent + 2);
            sb_adds(b, "Options: ");
            render_explain_value(b, n->merge_options, indent + 2);
            sb_addc(b, '\n');
        }
        dump_branches(b, n, indent + 2);
        if (n->event == EV_RESULT) {
            indent_to(b, indent + 2);
            sb_adds(b, "Merged result: ");
            render_explain_value(b, n->value ? n->value : hv_undef(), indent + 2);
            sb_addc(b, '\n');
        }
        break;
    case EX_DATA_PROVIDER:
    case EX_HIERARCHY_ENTRY:
        indent_to(b, first_indent);
        sb_adds(b, n->text);
        sb_addc(b, '\n');
        if (n->text2) {
            indent_to(b, indent + 2);
            sb_addf(b, "Using configuration \"%s\"\n", n->text2);
        }
        dump_branches(b, n, indent + 2);
        dump_outcome(b, n, indent + 2);
        break;
    case EX_LOCATION: {
        const char *tn = n->is_uri ? "URI" : "Path";
        indent_to(b, indent);
        sb_addf(b, "%s \"%s\"\n", tn, n->text);
        indent_to(b, indent + 2);
        sb_addf(b, "Original %s: \"%s\"\n", n->is_uri ? "uri" : "path", n->text2 ? n->text2 : "");
        dump_branches(b, n, indent + 2);
        if (n->event == EV_LOCATION_NOT_FOUND) {
            indent_to(b, indent + 2);
            sb_addf(b, "%s not found\n", tn);
        }
        dump_outcome(b, n, indent + 2);
        break;
    }
    case EX_SUB_LOOKUP: {
        indent_to(b, indent);
        sb_adds(b, "Sub key: \"");
        for (size_t i = 0; i < hv_array_len(n->segments); i++) {
            if (i)
                sb_addc(b, '.');
            ruby_to_s(b, hv_array_get(n->segments, i));
        }
        sb_adds(b, "\"\n");
        dump_branches(b, n, indent + 2);
        dump_outcome(b, n, indent + 2);
        break;
    }
    case EX_SEGMENT:
        dump_outcome(b, n, indent);
        break;
    case EX_SCOPE:
        indent_to(b, indent);
        sb_adds(b, n->text);
        sb_addc(b, '\n');
        dump_branches(b, n, indent + 2);
        dump_outcome(b, n, indent + 2);
        break;
    }
}

char *ex_render_text(const explainer *ex)
{
    sbuf b = {0};
    dump_node(&b, &ex->root, 0, 0);
    return sb_take(&b);
}

/* ------------------------------------------------------------------ as data */

static const char *type_name(const exnode *n)
{
    switch (n->type) {
    case EX_ROOT: return "root";
    case EX_TOP: return "root";
    case EX_INVALID_KEY: return "invalid_key";
    case EX_MERGE_SOURCE: return "merge_source";
    case EX_MODULE: return "module";
    case EX_INTERPOLATE: return "interpolate";
    case EX_MERGE: return "merge";
    case EX_DATA_PROVIDER: return "data_provider";
    case EX_HIERARCHY_ENTRY: return "data_provider";
    case EX_LOCATION: return n->is_uri ? "uri" : "path";
    case EX_SUB_LOOKUP: return "sub_key";
    case EX_SEGMENT: return "segment";
    case EX_SCOPE: return "scope";
    }
    return "?";
}

static const char *event_name(ex_event e)
{
    switch (e) {
    case EV_FOUND: return "found";
    case EV_FOUND_IN_OVERRIDES: return "found_in_overrides";
    case EV_FOUND_IN_DEFAULTS: return "found_in_defaults";
    case EV_RESULT: return "result";
    case EV_NOT_FOUND: return "not_found";
    case EV_LOCATION_NOT_FOUND: return "location_not_found";
    case EV_MODULE_NOT_FOUND: return "module_not_found";
    case EV_MODULE_PROVIDER_NOT_FOUND: return "module_provider_not_found";
    default: return NULL;
    }
}

/* Puppet's to_hash uses symbols for keys and for the event and type values (they show as
 * :name in YAML, as strings in JSON). */
static void put(hv *h, const char *key, hv *v) { hv_hash_set(h, hv_symbol(key, strlen(key)), v); }
static hv *sym(const char *s) { return hv_symbol(s, strlen(s)); }

static hv *node_value(const exnode *n)
{
    if (n->type == EX_MERGE && n->nb == 1)
        return node_value(n->branches[0]);
    hv *h = hv_hash();
    if (n->type == EX_MERGE_SOURCE) {
        put(h, "type", sym("merge_source"));
        put(h, "merge_source", hv_str(n->text));
        return h;
    }
    if (n->nb) {
        hv *a = hv_array();
        for (size_t i = 0; i < n->nb; i++)
            hv_array_push(a, node_value(n->branches[i]));
        put(h, "branches", a);
    }
    if (n->key)
        put(h, "key", hv_str(n->key));
    else if (n->type == EX_TOP || n->type == EX_INVALID_KEY)
        put(h, "key", hv_str(n->text));
    if (n->event == EV_FOUND || n->event == EV_FOUND_IN_DEFAULTS || n->event == EV_FOUND_IN_OVERRIDES || n->event == EV_RESULT)
        put(h, "value", hv_incref(n->value ? n->value : hv_undef()));
    if (event_name(n->event))
        put(h, "event", sym(event_name(n->event)));
    if (n->ntexts) {
        hv *a = hv_array();
        for (size_t i = 0; i < n->ntexts; i++)
            hv_array_push(a, hv_str(n->texts[i]));
        put(h, "texts", a);
    }
    put(h, "type", sym(type_name(n)));
    switch (n->type) {
    case EX_MERGE:
        put(h, "merge", sym(merge_key(n->merge_kind)));
        if (n->merge_options)
            put(h, "options", hv_incref(n->merge_options));
        break;
    case EX_DATA_PROVIDER:
    case EX_HIERARCHY_ENTRY:
        put(h, "name", hv_str(n->text));
        if (n->text2)
            put(h, "configuration_path", hv_str(n->text2));
        if (n->module)
            put(h, "module", hv_str(n->module));
        break;
    case EX_LOCATION:
        put(h, n->is_uri ? "original_uri" : "original_path", hv_str(n->text2 ? n->text2 : ""));
        put(h, n->is_uri ? "uri" : "path", hv_str(n->text));
        break;
    case EX_INTERPOLATE:
        put(h, "expression", hv_str(n->text));
        break;
    case EX_SCOPE:
        put(h, "name", hv_str(n->text));
        break;
    default:
        break;
    }
    return h;
}

hv *ex_to_value(const explainer *ex)
{
    if (ex->root.nb == 1)
        return node_value(ex->root.branches[0]);
    /* the Explainer itself: only its branches (its texts are not part of the hash) */
    hv *h = hv_hash(), *a = hv_array();
    for (size_t i = 0; i < ex->root.nb; i++)
        hv_array_push(a, node_value(ex->root.branches[i]));
    put(h, "branches", a);
    return h;
}
