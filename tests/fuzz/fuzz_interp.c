/* fuzz_interp.c - libFuzzer harness: %{} interpolation (src/engine/interp.c) of a string against a
 * fixed scope (facts, trusted, top-scope variables), with lookup()/hiera()/alias() reaching a
 * fixed small tree whose data interpolates too; and dotted keys dug into a fixed value.
 * Input: one byte of flags (bit 0: method syntax allowed, bit 1: also as a hash key and in an
 * array), then the string. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "fuzz_common.h"
#include "hiera.h"
#include "formats/psych.h"

static const char GLOBAL_CONFIG[] = "version: 5\n"
                                    "hierarchy:\n"
                                    "  - name: node\n"
                                    "    path: \"nodes/%{trusted.certname}.yaml\"\n"
                                    "  - name: common\n"
                                    "    path: common.yaml\n";
static const char COMMON[] = "a: A\n"
                             "num: 42\n"
                             "float: 1.5\n"
                             "list: [1, two, 3.5, {k: v}]\n"
                             "hash: {x: 1, y: {z: deep}, dot.key: dk, '1': one}\n"
                             "ref: \"%{lookup('a')}-%{facts.os.family}\"\n"
                             "aliased: \"%{alias('list')}\"\n"
                             "loop: \"%{lookup('loop2')}\"\n"
                             "loop2: \"%{hiera('loop')}\"\n"
                             "nil: ~\n"
                             "empty: ''\n"
                             "sens: !ruby/symbol sym\n"
                             "mod::key: module-ish\n"
                             "lookup_options:\n"
                             "  hash: {merge: deep}\n"
                             "  '^mod::': {merge: unique}\n";
static const char NODE[] = "a: node-A\n"
                           "hash: {x: 2, w: \"%{::environment}\"}\n"
                           "list: [9]\n";
static const char ENV_CONFIG[] = "version: 5\n"
                                 "hierarchy:\n"
                                 "  - name: env\n"
                                 "    path: \"%{facts.os.family}.yaml\"\n";
static const char ENV_DATA[] = "a: env-A\n"
                               "envkey: \"%{lookup('num')} %{scope('facts.os.release.major')}\"\n";
static const char FACTS[] = "{\"clientcert\": \"n1.example.com\", \"hostname\": \"n1\", \"domain\": \"example.com\","
                            " \"fqdn\": \"n1.example.com\", \"os\": {\"family\": \"Debian\", \"release\": "
                            "{\"major\": \"12\", \"full\": \"12.5\"}}, \"list\": [1, \"x\", [2, 3], {\"k\": \"v\"}],"
                            " \"n\": 5, \"b\": true, \"f\": 2.5, \"nil\": null, \"empty\": \"\","
                            " \"h\": {\"a.b\": 1, \"c\": {\"d\": [\"e\"]}}, \"pct\": \"%{a}\"}";

static hiera *ctx;
static hv *dig_target;

static void setup(void)
{
    free(fz_write_str("code/hiera.yaml", GLOBAL_CONFIG));
    free(fz_write_str("code/data/common.yaml", COMMON));
    free(fz_write_str("code/data/nodes/n1.example.com.yaml", NODE));
    free(fz_write_str("code/environments/production/hiera.yaml", ENV_CONFIG));
    free(fz_write_str("code/environments/production/data/Debian.yaml", ENV_DATA));
    char *codedir = xasprintf("%s/code", fz_dir());
    char *envpath = xasprintf("%s/environments", codedir);
    char *global = xasprintf("%s/hiera.yaml", codedir);
    hiera_error err = {0};
    hiera_value *facts = hiera_value_from_json(FACTS, &err);
    hiera_options o = {.codedir = codedir, .confdir = codedir, .environmentpath = envpath,
                       .hiera_config = global, .node = "n1.example.com", .facts = facts};
    ctx = hiera_new(&o, &err);
    if (!ctx)
        abort();
    hiera_value_decref(facts);
    free(codedir);
    free(envpath);
    free(global);
    herr e = {0};
    static const char DIG[] = "{a: {b: [1, {c: 2}], 'x.y': 3}, '0': [zero], list: [[1,2],[3]]}";
    dig_target = yaml_parse(DIG, strlen(DIG), "t", YAML_PUPPET, &e);
    if (!dig_target)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!ctx)
        setup();
    bool allow_methods = data[0] & 1;
    hv *subject = hv_strn((const char *)data + 1, size - 1);
    if (data[0] & 2) {
        hv *h = hv_hash();
        hv *a = hv_array();
        hv_array_push(a, hv_incref(subject));
        hv_array_push(a, hv_int(1));
        hv_hash_set(h, hv_incref(subject), a);
        hv_decref(subject);
        subject = h;
    }
    inv I = {.h = ctx, .top_key = "fuzz"};
    hv *out = NULL;
    herr e = {0};
    lr r = interpolate(&I, subject, allow_methods, &out, &e);
    if ((r == LR_ERROR) != (out == NULL) || (r == LR_ERROR && !e.msg) || ctx->nstack != 0)
        abort();
    hv_decref(out);
    herr_clear(&e);
    hv_decref(subject);

    /* dotted keys: split_key and sub_lookup into a fixed value */
    hv *segs = split_key((const char *)data + 1, size - 1);
    if (segs && hv_array_len(segs) > 0) {
        char *key = xstrndup((const char *)data + 1, size - 1);
        r = sub_lookup(&I, key, segs, 0, dig_target, &out, &e);
        if (r == LR_FOUND)
            hv_decref(out);
        herr_clear(&e);
        free(key);
    }
    hv_decref(segs);
    return 0;
}
