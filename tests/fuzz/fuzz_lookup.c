/* fuzz_lookup.c - libFuzzer harness: a whole lookup (src/api/api.c, lookup.c, merge.c, interp.c,
 * explain.c, cache.c, ...) over a generated small tree: a global layer, an environment layer
 * (node YAML, JSON, HOCON and glob levels) and a module, with every merge strategy.
 *
 * Input: byte 0 picks the merge (none, first, unique, hash, deep, deep with options, bad),
 * byte 1 holds flags (explain, default, type, key choice), then sections cut at "\n%%\n":
 *   0 global data/common.yaml             5 the environment's hiera.yaml (absent or empty: a fixed one)
 *   1 environment data/nodes/<node>.yaml  6 environment data/common.conf (HOCON)
 *   2 environment data/common.json        7 module mod's data/defaults.yaml (default_hierarchy)
 *   3 module mod's data/common.yaml       8 environment data/secure.eyaml (eyaml_lookup_key,
 *   4 the key (empty: one of KEYS)          keys of fuzz_keys.h)
 * A missing section is a missing file. Data files decide lookup_options too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fuzz_common.h"
#include "fuzz_keys.h"
#include "hiera.h"

static const char GLOBAL_CONFIG[] = "version: 5\n"
                                    "hierarchy:\n"
                                    "  - name: common\n"
                                    "    path: common.yaml\n";
static const char ENV_CONFIG_TMPL[] = "version: 5\n"
                                 "hierarchy:\n"
                                 "  - name: secrets\n"
                                 "    lookup_key: eyaml_lookup_key\n"
                                 "    path: secure.eyaml\n"
                                 "    options: {pkcs7_private_key: '@KEYS@/private_key.pkcs7.pem', pkcs7_public_key: '@KEYS@/public_key.pkcs7.pem'}\n"
                                 "  - name: node\n"
                                 "    path: \"nodes/%{trusted.certname}.yaml\"\n"
                                 "  - name: json\n"
                                 "    data_hash: json_data\n"
                                 "    path: common.json\n"
                                 "  - name: globbed\n"
                                 "    glob: \"glob/*.yaml\"\n"
                                 "  - name: mapped\n"
                                 "    mapped_paths: [roles, role, \"role/%{role}.yaml\"]\n"
                                 "  - name: hocon\n"
                                 "    data_hash: hocon_data\n"
                                 "    path: common.conf\n";
static const char MODULE_CONFIG[] = "version: 5\n"
                                    "hierarchy:\n"
                                    "  - name: common\n"
                                    "    path: common.yaml\n"
                                    "default_hierarchy:\n"
                                    "  - name: defaults\n"
                                    "    path: defaults.yaml\n";
static const char FACTS[] = "{\"clientcert\": \"n1.example.com\", \"hostname\": \"n1\", \"domain\": \"example.com\","
                            " \"fqdn\": \"n1.example.com\", \"os\": {\"family\": \"Debian\"},"
                            " \"roles\": [\"web\", \"db\"], \"n\": 5}";
/* another node: what the tree reads differs (the second node of a frozen-cache run) */
static const char OTHER_FACTS[] = "{\"clientcert\": \"n2.example.com\", \"hostname\": \"n2\", \"domain\": \"example.com\","
                                  " \"fqdn\": \"n2.example.com\", \"os\": {\"family\": \"RedHat\"},"
                                  " \"roles\": [\"db\"], \"n\": 6}";

static const char *const FILES[] = {
    "code/data/common.yaml",
    "code/environments/production/data/nodes/n1.example.com.yaml",
    "code/environments/production/data/common.json",
    "code/environments/production/modules/mod/data/common.yaml",
    NULL, /* the key */
    "code/environments/production/hiera.yaml",
    "code/environments/production/data/common.conf",
    "code/environments/production/modules/mod/data/defaults.yaml",
    "code/environments/production/data/secure.eyaml",
};
#define NSECT 9

static const char *const KEYS[] = {"a", "b", "h", "list", "mod::a", "mod::h", "h.x", "list.0", "lookup_options",
                                   "mod::list", "c", "x", "role", "nope", "h.x.y", "mod::h.z"};
static const char *const TYPES[] = {"Any", "Hash[String, Any]", "Array[Integer]", "Optional[Scalar]",
                                    "Variant[String, Array[String]]", "Data" /* refused, as by `puppet lookup` */};

static hiera_value *facts, *other_facts;
static char *codedir, *envpath, *global, *env_config;

static void setup(void)
{
    free(fz_write_str("code/hiera.yaml", GLOBAL_CONFIG));
    free(fz_write_str("code/environments/production/modules/mod/hiera.yaml", MODULE_CONFIG));
    free(fz_write_str("code/environments/production/data/glob/one.yaml", "a: glob-one\nlist: [g1]\nh: {x: {y: g}}\n"));
    free(fz_write_str("code/environments/production/data/glob/two.yaml", "b: glob-two\nlist: [g2]\n"));
    free(fz_write_str("code/environments/production/data/role/web.yaml", "role: web\nh: {web: true}\n"));
    free(fz_write_str("code/environments/production/data/role/db.yaml", "role: db\nlist: [db]\n"));
    hiera_error err = {0};
    facts = hiera_value_from_json(FACTS, &err);
    other_facts = hiera_value_from_json(OTHER_FACTS, &err);
    if (!facts || !other_facts)
        abort();
    char *priv = fz_write_str("keys/private_key.pkcs7.pem", PRIVATE_KEY);
    char *pub = fz_write_str("keys/public_key.pkcs7.pem", PUBLIC_KEY);
    free(priv);
    free(pub);
    /* the environment's hiera.yaml names the keys by their absolute paths */
    sbuf b = {0};
    const char *t = ENV_CONFIG_TMPL, *at;
    while ((at = strstr(t, "@KEYS@"))) {
        sb_addn(&b, t, (size_t)(at - t));
        sb_addf(&b, "%s/keys", fz_dir());
        t = at + 6;
    }
    sb_adds(&b, t);
    env_config = sb_take(&b);
    codedir = xasprintf("%s/code", fz_dir());
    envpath = xasprintf("%s/environments", codedir);
    global = xasprintf("%s/hiera.yaml", codedir);
}

static hiera_value *merge_of(uint8_t b)
{
    hiera_error err = {0};
    switch (b % 9) {
    case 0: return NULL;
    case 1: return hiera_value_new_string("first");
    case 2: return hiera_value_new_string("unique");
    case 3: return hiera_value_new_string("hash");
    case 4: return hiera_value_new_string("deep");
    case 5:
        return hiera_value_from_json("{\"strategy\": \"deep\", \"knockout_prefix\": \"--\", \"sort_merged_arrays\": true,"
                                     " \"merge_hash_arrays\": true}", &err);
    case 6: return hiera_value_from_json("{\"strategy\": \"deep\", \"knockout_prefix\": \"--\"}", &err);
    case 7: return hiera_value_from_json("{\"strategy\": \"hash\"}", &err);
    default: return hiera_value_new_string("bogus");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    if (!facts)
        setup();
    uint8_t mbyte = data[0], flags = data[1];
    const uint8_t *starts[NSECT];
    size_t lens[NSECT];
    size_t n = fz_split(data + 2, size - 2, "\n%%\n", starts, lens, NSECT);
    for (size_t i = 0; i < NSECT; i++) {
        if (!FILES[i])
            continue;
        if (i == 5 && (i >= n || lens[i] == 0)) {
            free(fz_write_str(FILES[i], env_config));
        } else if (i < n) {
            free(fz_write(FILES[i], starts[i], lens[i]));
        } else {
            char *p = xasprintf("%s/%s", fz_dir(), FILES[i]);
            unlink(p);
            free(p);
        }
    }
    char *key = NULL;
    if (n > 4 && lens[4] > 0) {
        const uint8_t *nl = memchr(starts[4], '\n', lens[4]);
        key = xstrndup((const char *)starts[4], nl ? (size_t)(nl - starts[4]) : lens[4]);
    } else {
        key = xstrdup(KEYS[(flags >> 4) % (sizeof KEYS / sizeof *KEYS)]);
    }

    hiera_error err = {0};
    hiera_options o = {.codedir = codedir, .confdir = codedir, .environmentpath = envpath,
                       .hiera_config = global, .node = "n1.example.com", .facts = facts};
    hiera *h = hiera_new(&o, &err);
    if (!h && getenv("FUZZ_VERBOSE"))
        fprintf(stderr, "hiera_new: %s\n", err.message ? err.message : "");
    if (!h) {
        if (!err.message)
            abort();
        hiera_error_clear(&err);
        free(key);
        return 0;
    }
    hiera_value *merge = merge_of(mbyte);
    hiera_value *dflt = (flags & 4) ? hiera_value_new_string("the default") : NULL;
    const char *keys[2] = {key, "b"};
    hiera_request rq = {.keys = keys, .nkeys = (flags & 8) ? 2 : 1, .merge = merge, .default_value = dflt,
                        .type = (flags & 16) ? TYPES[(mbyte >> 4) % (sizeof TYPES / sizeof *TYPES)] : NULL, .explain = flags & 3};
    hiera_result *res = NULL;
    hiera_status st = hiera_lookup_result(h, &rq, &res, &err);
    hiera_value *v = hiera_value_incref(hiera_result_value(res));
    if (getenv("FUZZ_VERBOSE")) /* to see what an input does: FUZZ_VERBOSE=1 fuzz-lookup FILE */
        fprintf(stderr, "key %s: status %d %s\n", key, (int)st, err.message ? err.message : "");
    if ((st == HIERA_OK) != (v != NULL) || (st == HIERA_ERROR && !err.message) || h->nstack != 0)
        abort();
    hiera_error werr = {0};
    char *want = v && !rq.explain && (flags & 32) ? hiera_render(v, HIERA_RENDER_JSON, &werr) : NULL;
    hiera_error_clear(&werr);
    if (v) {
        for (int f = HIERA_RENDER_JSON; f <= HIERA_RENDER_S; f++) {
            hiera_error rerr = {0};
            free(hiera_render(v, (hiera_render_format)f, &rerr));
            hiera_error_clear(&rerr);
        }
        hiera_value_decref(v);
    }
    if (rq.explain) {
        free(hiera_result_explanation_text(res));
        hiera_value_decref(hiera_result_explanation_tree(res));
    } else if (flags & 32) {
        /* what a frozen cache remembers (hiera batch) must not change an answer: the node, then
         * another node, then the node again, each through one frozen cache */
        hiera_cache *c = hiera_cache_new();
        hiera_cache_freeze(c);
        for (int pass = 0; pass < 3; pass++) {
            hiera_options fo = o;
            fo.cache = c;
            fo.facts = pass == 1 ? other_facts : facts;
            fo.node = pass == 1 ? "n2.example.com" : "n1.example.com";
            hiera_error ferr = {0};
            hiera *fh = hiera_new(&fo, &ferr);
            if (!fh)
                abort(); /* the plain context was made with the same files */
            hiera_value *fv = NULL;
            hiera_status fst = hiera_lookup(fh, &rq, &fv, &ferr);
            if (pass != 1) {
                hiera_error gerr = {0};
                char *got = fv ? hiera_render(fv, HIERA_RENDER_JSON, &gerr) : NULL;
                hiera_error_clear(&gerr);
                if (fst != st || (want == NULL) != (got == NULL) || (want && strcmp(want, got) != 0) ||
                    (st == HIERA_ERROR && strcmp(err.message, ferr.message) != 0)) {
                    fprintf(stderr, "frozen cache pass %d: status %d/%d\n  plain:  %s %s\n  frozen: %s %s\n", pass,
                            (int)st, (int)fst, want ? want : "-", err.message ? err.message : "", got ? got : "-",
                            ferr.message ? ferr.message : "");
                    abort();
                }
                free(got);
            }
            hiera_value_decref(fv);
            hiera_error_clear(&ferr);
            hiera_free(fh);
        }
        hiera_cache_free(c);
    }
    free(want);
    hiera_result_free(res);
    hiera_error_clear(&err);
    hiera_value_decref(merge);
    hiera_value_decref(dflt);
    hiera_free(h);
    free(key);
    return 0;
}
