/* Unit tests for the fleet run (src/fleet/fleet.c, hiera_fleet_run in include/hiera_fleet.h):
 * every node's answers are those of a context made alone (hiera_new + hiera_lookup), their JSON
 * text hiera_render's, whatever the number of threads; ordered runs hand the nodes over in order;
 * the callback is never called twice at once; a node's own keys; nodes given with their facts;
 * failures per node and per lookup; $trusted from a folder; a run stopped by its callback.
 * The diff run (hiera_diff_run, src/diff/run.c): the changes of an edited copy of the tree, the
 * same on 1 to 3 threads, its callbacks and diagnostics one at a time, each diagnostic with its
 * side and node. */
#include "testutil.h"

#include "hiera_fleet.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static char dir[64], dir2[64];
#define NODES 50

static int setup(void **state)
{
    (void)state;
    if (testutil_scratch(dir, "fleet"))
        return -1;
    free(testutil_write_under(dir, "hiera.yaml",
                              "version: 5\n"
                              "hierarchy:\n"
                              "  - name: node\n"
                              "    path: nodes/%{trusted.certname}.yaml\n"
                              "  - name: role\n"
                              "    path: role/%{facts.role}.yaml\n"
                              "  - name: common\n"
                              "    path: common.yaml\n"));
    free(testutil_write_under(dir, "environments/production/.keep", ""));
    free(testutil_write_under(dir, "data/common.yaml",
                              "lookup_options:\n"
                              "  merged: {merge: deep}\n"
                              "greeting: 'hello %{facts.role}'\n"
                              "list: [1, 2.5, true, null]\n"
                              "merged: {a: common}\n"
                              "big: 123456789012345678901234567890\n"
                              "bad: '%{lookup(\"bad\")}'\n"
                              "\"dotted.key\": dotted\n"));
    free(testutil_write_under(dir, "data/role/web.yaml", "merged: {b: web}\nweb_only: yes\n"));
    free(testutil_write_under(dir, "data/role/db.yaml", "merged: {b: db}\n"));
    free(testutil_write_under(dir, "data/nodes/n07.example.com.yaml", "greeting: special\n"));
    for (int i = 0; i < NODES; i++) {
        char rel[64], text[256];
        snprintf(rel, sizeof rel, "facts/n%02d.example.com.yaml", i);
        snprintf(text, sizeof text, "role: %s\nclientcert: n%02d.example.com\nhostname: n%02d\ndomain: example.com\n"
                                    "fqdn: n%02d.example.com\n", i % 3 == 0 ? "db" : "web", i, i, i);
        free(testutil_write_under(dir, rel, text));
        /* $trusted for every node: its own certname, but n01 claims n07's */
        snprintf(rel, sizeof rel, "trusted/n%02d.example.com.yaml", i);
        snprintf(text, sizeof text, "authenticated: remote\ncertname: n%02d.example.com\nextensions: {}\n", i == 1 ? 7 : i);
        free(testutil_write_under(dir, rel, text));
    }
    free(testutil_write_under(dir, "facts/zbroken.yaml", "role: [\n"));
    /* the new side of the diff tests: the greeting changed, db's data a list (not a hash) */
    if (testutil_scratch(dir2, "fleet-new"))
        return -1;
    free(testutil_write_under(dir2, "hiera.yaml",
                              "version: 5\n"
                              "hierarchy:\n"
                              "  - name: node\n"
                              "    path: nodes/%{trusted.certname}.yaml\n"
                              "  - name: role\n"
                              "    path: role/%{facts.role}.yaml\n"
                              "  - name: common\n"
                              "    path: common.yaml\n"));
    free(testutil_write_under(dir2, "environments/production/.keep", ""));
    free(testutil_write_under(dir2, "data/common.yaml",
                              "lookup_options:\n"
                              "  merged: {merge: deep}\n"
                              "greeting: 'hi %{facts.role}'\n"
                              "list: [1, 2.5, true, null]\n"
                              "merged: {a: common}\n"
                              "big: 123456789012345678901234567890\n"
                              "bad: '%{lookup(\"bad\")}'\n"
                              "\"dotted.key\": dotted\n"));
    free(testutil_write_under(dir2, "data/role/web.yaml", "merged: {b: web}\nweb_only: yes\n"));
    free(testutil_write_under(dir2, "data/role/db.yaml", "- merged\n"));
    free(testutil_write_under(dir2, "data/nodes/n07.example.com.yaml", "greeting: special\n"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    testutil_remove_tree(dir);
    testutil_remove_tree(dir2);
    return 0;
}

static const char *const KEYS[] = {"greeting", "list", "merged", "big", "bad", "missing", "web_only", "\"dotted.key\""};
#define NKEYS (sizeof KEYS / sizeof *KEYS)

typedef struct {
    char *text; /* every node's answers as text, in node order */
    size_t len, cap;
    int in_callback; /* atomic: callbacks at once */
    bool overlapped;
    size_t last_index;
    bool out_of_order;
    size_t nodes, calls;
    int stop_after; /* 0: never */
    bool render;
} seen;

static void put(seen *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0)
        abort();
    va_end(ap);
    size_t n = strlen(t);
    if (s->len + n + 1 > s->cap) {
        s->cap = (s->len + n + 1) * 2;
        s->text = realloc(s->text, s->cap);
    }
    memcpy(s->text + s->len, t, n + 1);
    s->len += n;
    free(t);
}

/* one node's answers as a line each: "node key status text-or-error" */
static int collect(const hiera_fleet_node *n, void *data)
{
    seen *s = data;
    if (__atomic_add_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST) != 1)
        s->overlapped = true;
    if (s->calls && n->index <= s->last_index)
        s->out_of_order = true;
    s->last_index = n->index;
    s->calls++;
    if (n->error) {
        put(s, "%s ERROR %s\n", n->name, n->error);
    } else {
        for (size_t k = 0; k < n->nanswers; k++) {
            const hiera_fleet_answer *a = &n->answers[k];
            if (a->status == HIERA_OK) {
                hiera_error err = {0};
                char *json = hiera_render(a->value, HIERA_RENDER_JSON, &err);
                if (s->render && (!a->text || strcmp(a->text, json) != 0 || a->text_length != strlen(json)))
                    put(s, "TEXT MISMATCH %s %s\n", n->name, a->key);
                if (s->render && (!a->key_json || strlen(a->key_json) != a->key_json_length))
                    put(s, "KEY JSON MISSING %s\n", a->key);
                put(s, "%s %s = %s\n", n->name, a->key, json);
                free(json);
                hiera_error_clear(&err);
            } else if (a->status == HIERA_ERROR) {
                put(s, "%s %s ! %s\n", n->name, a->key, a->error);
            } else {
                put(s, "%s %s -\n", n->name, a->key);
            }
        }
    }
    s->nodes++;
    int stop = s->stop_after && (int)s->nodes >= s->stop_after;
    __atomic_sub_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST);
    return stop;
}

static hiera_options context(hiera_settings **s, hiera_environment **e)
{
    char *global = xasprintf("%s/hiera.yaml", dir), *envpath = xasprintf("%s/environments", dir);
    hiera_setting cli[] = {{"codedir", dir}, {"environmentpath", envpath}, {"hiera_config", global}};
    hiera_settings_options so = HIERA_SETTINGS_OPTIONS_INIT;
    so.cli = cli;
    so.ncli = 3;
    so.no_puppet_conf = true;
    hiera_error err = {0};
    *s = hiera_settings_load(&so, &err);
    assert_non_null(*s);
    *e = hiera_environment_load(*s, NULL, &err);
    assert_non_null(*e);
    free(global);
    free(envpath);
    hiera_options o = HIERA_OPTIONS_INIT;
    o.settings = *s;
    o.env = *e;
    return o;
}

/* The same answers, node by node, made the plain way: a context per node, a lookup per key. */
static char *expected(const hiera_options *base, hiera_facts_source *src, const char *trusted_dir)
{
    seen s = {0};
    hiera_error err = {0};
    hiera_value *names = hiera_facts_source_nodes(src, &err);
    hiera_cache *c = hiera_cache_new();
    for (size_t i = 0; i < hiera_value_array_size(names); i++) {
        const char *name = hiera_value_string(hiera_value_array_get(names, i));
        hiera_node_facts nf;
        if (hiera_facts_source_get(src, name, NULL, &nf, &err) != HIERA_OK) {
            put(&s, "%s ERROR %s\n", name, err.message);
            hiera_error_clear(&err);
            continue;
        }
        hiera_value *trusted = NULL;
        if (trusted_dir) {
            char *p = xasprintf("%s/%s.yaml", trusted_dir, name);
            trusted = access(p, R_OK) == 0 ? hiera_value_load_file(p, &err) : NULL;
            free(p);
        }
        hiera_options o = *base;
        o.node = name;
        o.facts = nf.given;
        o.base_facts = nf.base;
        o.trusted = trusted;
        o.cache = c;
        hiera *h = hiera_new(&o, &err);
        assert_non_null(h);
        for (size_t k = 0; k < NKEYS; k++) {
            hiera_value *v = NULL;
            hiera_status st = hiera_lookup_key(h, KEYS[k], &v, &err);
            if (st == HIERA_OK) {
                char *json = hiera_render(v, HIERA_RENDER_JSON, &err);
                put(&s, "%s %s = %s\n", name, KEYS[k], json);
                free(json);
            } else if (st == HIERA_ERROR) {
                put(&s, "%s %s ! %s\n", name, KEYS[k], err.message);
            } else {
                put(&s, "%s %s -\n", name, KEYS[k]);
            }
            hiera_value_decref(v);
            hiera_error_clear(&err);
        }
        hiera_free(h);
        hiera_value_decref(trusted);
        hiera_node_facts_clear(&nf);
    }
    hiera_cache_free(c);
    hiera_value_decref(names);
    return s.text;
}

static void test_threads_same_answers(void **state)
{
    (void)state;
    hiera_settings *hs;
    hiera_environment *env;
    hiera_options ctx = context(&hs, &env);
    char *facts = xasprintf("%s/facts", dir), *trusted = xasprintf("%s/trusted", dir);
    hiera_error err = {0};
    hiera_facts_source *src = hiera_facts_source_dir(facts, &err);
    assert_non_null(src);
    char *want = expected(&ctx, src, trusted);
    assert_non_null(strstr(want, "n07.example.com greeting = \"special\""));
    assert_non_null(strstr(want, "n01.example.com greeting = \"special\"")); /* (its trusted certname) */
    assert_non_null(strstr(want, "zbroken ERROR"));
    assert_non_null(strstr(want, "bad ! "));
    for (unsigned threads = 1; threads <= 4; threads++) {
        for (int render = 0; render < 2; render++) {
            seen s = {.render = render};
            hiera_fleet_options fo = HIERA_FLEET_OPTIONS_INIT;
            fo.context = &ctx;
            fo.keys = KEYS;
            fo.nkeys = NKEYS;
            fo.source = src;
            fo.trusted_dir = trusted;
            fo.threads = threads;
            fo.ordered = true;
            fo.render_json = render;
            fo.callback = collect;
            fo.userdata = &s;
            hiera_fleet_stats st;
            assert_int_equal(hiera_fleet_run(&fo, &st, &err), HIERA_OK);
            assert_int_equal(st.nodes, NODES + 1);
            assert_int_equal(st.failed_nodes, 1);
            assert_true(st.threads >= 1 && st.threads <= threads);
            assert_false(s.overlapped);
            assert_false(s.out_of_order);
            if (strcmp(s.text, want) != 0)
                print_error("threads %u render %d:\n%s\n---- expected ----\n%s\n", threads, render, s.text, want);
            assert_string_equal(s.text, want);
            free(s.text);
        }
    }
    /* unordered: the same nodes, each once, never two callbacks at once */
    seen s = {0};
    hiera_fleet_options fo = HIERA_FLEET_OPTIONS_INIT;
    fo.context = &ctx;
    fo.keys = KEYS;
    fo.nkeys = NKEYS;
    fo.source = src;
    fo.threads = 3;
    fo.callback = collect;
    fo.userdata = &s;
    assert_int_equal(hiera_fleet_run(&fo, NULL, &err), HIERA_OK);
    assert_int_equal(s.nodes, NODES + 1);
    assert_false(s.overlapped);
    free(s.text);
    free(want);
    hiera_facts_source_free(src);
    hiera_environment_free(env);
    hiera_settings_free(hs);
    free(facts);
    free(trusted);
}

static int own_keys(const hiera_fleet_node *n, void *data)
{
    seen *s = data;
    s->nodes++;
    if (n->error)
        return 0;
    /* the node's own keys, sorted, in the form a lookup takes */
    for (size_t k = 1; k < n->nanswers; k++)
        if (strcmp(n->answers[k - 1].key, n->answers[k].key) >= 0)
            s->out_of_order = true;
    for (size_t k = 0; k < n->nanswers; k++)
        put(s, "%s%s", k ? "," : "", n->answers[k].key);
    put(s, "\n");
    return 0;
}

static void test_own_keys_and_given_nodes(void **state)
{
    (void)state;
    hiera_settings *hs;
    hiera_environment *env;
    hiera_options ctx = context(&hs, &env);
    hiera_value *web = hiera_value_new_hash(), *db = hiera_value_new_hash();
    hiera_value_hash_set(web, "role", hiera_value_new_string("web"));
    hiera_value_hash_set(db, "role", hiera_value_new_string("db"));
    char *file = xasprintf("%s/facts/n03.example.com.yaml", dir);
    hiera_fleet_input nodes[] = {
        {.name = "w", .facts = web},
        {.name = "d", .base_facts = db},
        {.name = "f", .facts_file = file},
        {.name = "x", .facts_file = "/nonexistent/facts.yaml"},
    };
    seen s = {0};
    hiera_fleet_options fo = HIERA_FLEET_OPTIONS_INIT;
    fo.context = &ctx;
    fo.nodes = nodes;
    fo.nnodes = 4;
    fo.threads = 1;
    fo.render_json = true;
    fo.callback = own_keys;
    fo.userdata = &s;
    hiera_error err = {0};
    hiera_fleet_stats st;
    assert_int_equal(hiera_fleet_run(&fo, &st, &err), HIERA_OK);
    assert_int_equal(st.nodes, 4);
    assert_int_equal(st.failed_nodes, 1);
    assert_false(s.out_of_order);
    /* web sees web_only; the dotted key in its quoted form */
    assert_string_equal(s.text, "\"dotted.key\",bad,big,greeting,list,merged,web_only\n"
                                "\"dotted.key\",bad,big,greeting,list,merged\n"
                                "\"dotted.key\",bad,big,greeting,list,merged\n");
    free(s.text);
    /* both a source and nodes: refused */
    hiera_facts_source *src = hiera_facts_source_dir(dir, &err);
    fo.source = src;
    assert_int_equal(hiera_fleet_run(&fo, NULL, &err), HIERA_ERROR);
    assert_non_null(strstr(err.message, "either a facts source or nodes"));
    hiera_error_clear(&err);
    hiera_facts_source_free(src);
    /* no context: refused */
    fo = (hiera_fleet_options)HIERA_FLEET_OPTIONS_INIT;
    assert_int_equal(hiera_fleet_run(&fo, NULL, &err), HIERA_ERROR);
    hiera_error_clear(&err);
    hiera_value_decref(web);
    hiera_value_decref(db);
    free(file);
    hiera_environment_free(env);
    hiera_settings_free(hs);
}

static void test_stop(void **state)
{
    (void)state;
    hiera_settings *hs;
    hiera_environment *env;
    hiera_options ctx = context(&hs, &env);
    char *facts = xasprintf("%s/facts", dir);
    hiera_error err = {0};
    hiera_facts_source *src = hiera_facts_source_dir(facts, &err);
    for (unsigned threads = 1; threads <= 3; threads++) {
        seen s = {.stop_after = 5};
        hiera_fleet_options fo = HIERA_FLEET_OPTIONS_INIT;
        fo.context = &ctx;
        fo.keys = KEYS;
        fo.nkeys = 2;
        fo.source = src;
        fo.threads = threads;
        fo.ordered = threads != 2;
        fo.callback = collect;
        fo.userdata = &s;
        assert_int_equal(hiera_fleet_run(&fo, NULL, &err), HIERA_ERROR);
        assert_non_null(strstr(err.message, "stopped"));
        hiera_error_clear(&err);
        assert_int_equal(s.nodes, 5); /* not one more */
        free(s.text);
    }
    hiera_facts_source_free(src);
    free(facts);
    hiera_environment_free(env);
    hiera_settings_free(hs);
}

/* ------------------------------------------------------------------ the diff run */

typedef struct {
    int in_callback; /* atomic: callbacks (events and diagnostics) at once */
    bool overlapped;
    size_t changes[NKEYS], troubles, only, done, lookups;
    bool bad_change; /* a change whose answers are the same, or of a node it cannot be */
    size_t diags, diags_new_db; /* diagnostics; of which the new side's, of a db node, on db's list */
    bool diag_bad;              /* one without a diagnostic, or an old side's */
} diff_seen;

static bool db_node(const char *name) { return name && name[0] == 'n' && atoi(name + 1) % 3 == 0; }

static int diff_event(const hiera_diff_event *e, void *data)
{
    diff_seen *s = data;
    if (__atomic_add_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST) != 1)
        s->overlapped = true;
    switch (e->kind) {
    case HIERA_DIFF_CHANGE: {
        size_t k = 0;
        while (k < NKEYS && strcmp(KEYS[k], e->key) != 0)
            k++;
        if (k == NKEYS || (e->old_answer.status == HIERA_OK && e->new_answer.status == HIERA_OK &&
                           hiera_value_same(e->old_answer.value, e->new_answer.value)))
            s->bad_change = true;
        else
            s->changes[k]++;
        if (!strcmp(e->key, "merged") && !db_node(e->node))
            s->bad_change = true;
        break;
    }
    case HIERA_DIFF_TROUBLE:
        s->troubles++;
        if (strcmp(e->node, "zbroken") != 0 || !e->message)
            s->bad_change = true;
        break;
    case HIERA_DIFF_ONLY_OLD:
    case HIERA_DIFF_ONLY_NEW:
        s->only++;
        break;
    case HIERA_DIFF_NODE_DONE:
        s->done++;
        s->lookups += e->lookups;
        break;
    }
    __atomic_sub_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static void diff_diagnostic(const hiera_diff_diagnostic *d, void *data)
{
    diff_seen *s = data;
    if (__atomic_add_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST) != 1)
        s->overlapped = true;
    s->diags++;
    if (!d->diagnostic || !d->diagnostic->message || d->side != 1)
        s->diag_bad = true;
    else if (d->node && db_node(d->node) && strstr(d->diagnostic->message, "role/db.yaml") &&
             strstr(d->diagnostic->message, "valid yaml hash"))
        s->diags_new_db++;
    __atomic_sub_fetch(&s->in_callback, 1, __ATOMIC_SEQ_CST);
}

static hiera_options tree_context(const char *root, char **owned)
{
    owned[0] = xasprintf("%s/environments", root);
    owned[1] = xasprintf("%s/hiera.yaml", root);
    owned[2] = xasprintf("%s/confdir", root);
    hiera_options o = HIERA_OPTIONS_INIT;
    o.codedir = root;
    o.environmentpath = owned[0];
    o.hiera_config = owned[1];
    o.confdir = owned[2];
    o.puppet_version = HIERA_PUPPET_7; /* (strict is a warning: db's list is warned about, not fatal) */
    return o;
}

static void test_diff_run(void **state)
{
    (void)state;
    char *owned[6];
    hiera_options ctx[2] = {tree_context(dir, owned), tree_context(dir2, owned + 3)};
    char *facts = xasprintf("%s/facts", dir);
    hiera_error err = {0};
    hiera_facts_source *src = hiera_facts_source_dir(facts, &err);
    assert_non_null(src);
    for (unsigned threads = 1; threads <= 3; threads++) {
        diff_seen s = {0};
        hiera_diff_options o = HIERA_DIFF_OPTIONS_INIT;
        o.old_context = &ctx[0];
        o.new_context = &ctx[1];
        o.keys = KEYS;
        o.nkeys = NKEYS;
        o.old_source = o.new_source = src;
        o.threads = threads;
        o.callback = diff_event;
        o.userdata = &s;
        o.diagnostics = diff_diagnostic;
        o.diagnostics_data = &s;
        hiera_diff_stats st;
        hiera_value *plan = hiera_diff_run(&o, &st, &err);
        if (!plan)
            print_error("%s\n", err.message);
        assert_non_null(plan);
        assert_false(s.overlapped);
        assert_false(s.bad_change);
        /* greeting: every node but n07 (its own file); merged: the db nodes (0, 3 ... 48) */
        assert_int_equal(s.changes[0], NODES - 1);
        assert_int_equal(s.changes[2], (NODES + 2) / 3);
        for (size_t k = 0; k < NKEYS; k++)
            if (k != 0 && k != 2)
                assert_int_equal(s.changes[k], 0);
        assert_int_equal(s.troubles, 1);
        assert_int_equal(s.only, 0);
        assert_int_equal(s.done, NODES);
        assert_int_equal(st.changes, NODES - 1 + (NODES + 2) / 3);
        assert_int_equal(st.troubles, 1);
        assert_int_equal(st.nodes, NODES);
        assert_int_equal(st.lookups, s.lookups);
        /* db's list: warned about on the new side, for a db node */
        assert_false(s.diag_bad);
        if (s.diags_new_db == 0)
            print_error("threads %u: %zu diagnostics, none of a db node on db.yaml\n", threads, s.diags);
        assert_true(s.diags_new_db >= 1);
        /* the plan names the run's nodes and keys */
        assert_int_equal(hiera_value_array_size(hiera_value_hash_get(plan, "nodes")), NODES + 1);
        assert_int_equal(hiera_value_array_size(hiera_value_hash_get(plan, "keys")), NKEYS);
        hiera_value_decref(plan);
    }
    hiera_facts_source_free(src);
    free(facts);
    for (int i = 0; i < 6; i++)
        free(owned[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_same_answers),
        cmocka_unit_test(test_own_keys_and_given_nodes),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_diff_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
