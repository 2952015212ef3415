/* fuzz_hiera3.c - libFuzzer harness: the Hiera 3 engine (src/hiera3/hiera3.c): a v3 hiera.yaml, the
 * yaml and json backends, resolution types and deep merges, Hiera 3 interpolation.
 * Input: byte 0 picks the resolution (priority, array, hash, hash with deep/deeper merges),
 * byte 1 holds flags (default, order override, key choice), then sections cut at "\n%%\n":
 *   0 hiera.yaml (absent or empty: a fixed one; "@DIR@" stands for the data folder)
 *   1 yaml/common.yaml    2 yaml/production.yaml    3 json/common.json    4 the key */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "hiera3/hiera3.h"
#include "formats/json.h"

static const char CONFIG_TMPL[] = "---\n"
                                  ":backends: [yaml, json]\n"
                                  ":hierarchy: [\"%{env}\", \"%{::kind}/x\", common]\n"
                                  ":yaml:\n"
                                  "  :datadir: \"@DIR@/yaml\"\n"
                                  ":json:\n"
                                  "  :datadir: \"@DIR@/json\"\n"
                                  ":merge_behavior: deeper\n"
                                  ":deep_merge_options:\n"
                                  "  :knockout_prefix: '--'\n";
static const char *const FILES[] = {"h3/hiera.yaml", "h3/yaml/common.yaml", "h3/yaml/production.yaml",
                                    "h3/json/common.json", NULL};
#define NSECT 5
static const char *const KEYS[] = {"a", "h", "list", "x", "nope", "", "h.x", "env"};

static hv *scope, *opts;
static char *config_path;

static char *fill_dir(const uint8_t *s, size_t n)
{
    sbuf b = {0};
    const char *t = (const char *)s, *end = t + n, *at;
    while ((at = memmem(t, (size_t)(end - t), "@DIR@", 5))) {
        sb_addn(&b, t, (size_t)(at - t));
        sb_addf(&b, "%s/h3", fz_dir());
        t = at + 5;
    }
    sb_addn(&b, t, (size_t)(end - t));
    return sb_take(&b);
}

static void setup(void)
{
    static const char SCOPE[] = "{\"env\": \"production\", \"kind\": \"web\", \"::kind\": \"db\", \"n\": 1,"
                                " \"h\": {\"k\": [1, \"two\"]}, \"list\": [\"a\", \"b\"]}";
    static const char OPTS[] = "{\"knockout_prefix\": \"xx\", \"sort_merged_arrays\": true, \"merge_hash_arrays\": true,"
                               " \"preserve_unmergeables\": true, \"unpack_arrays\": \",\"}";
    herr e = {0};
    scope = hjson_parse(SCOPE, strlen(SCOPE), "scope", &e);
    opts = hjson_parse(OPTS, strlen(OPTS), "opts", &e);
    if (!scope || !opts)
        abort();
    config_path = xasprintf("%s/h3/hiera.yaml", fz_dir());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    if (!scope)
        setup();
    uint8_t rbyte = data[0], flags = data[1];
    const uint8_t *starts[NSECT];
    size_t lens[NSECT];
    size_t n = fz_split(data + 2, size - 2, "\n%%\n", starts, lens, NSECT);
    for (size_t i = 0; i < NSECT; i++) {
        if (!FILES[i])
            continue;
        if (i == 0) {
            char *cfg = (n > 0 && lens[0] > 0) ? fill_dir(starts[0], lens[0])
                                               : fill_dir((const uint8_t *)CONFIG_TMPL, strlen(CONFIG_TMPL));
            free(fz_write_str(FILES[0], cfg));
            free(cfg);
        } else if (i < n) {
            free(fz_write(FILES[i], starts[i], lens[i]));
        } else {
            char *p = xasprintf("%s/%s", fz_dir(), FILES[i]);
            unlink(p);
            free(p);
        }
    }
    char *key = (n > 4 && lens[4] > 0) ? xstrndup((const char *)starts[4], lens[4])
                                       : xstrdup(KEYS[(flags >> 4) % (sizeof KEYS / sizeof *KEYS)]);
    const char *rbclass = NULL;
    herr err = {0};
    h3 *h = h3_new_file(config_path, &rbclass, &err);
    if (!h) {
        if (!err.msg)
            abort();
        herr_clear(&err);
        free(key);
        return 0;
    }
    h3_set_log_callback(h, NULL, NULL);
    h3_resolution res = {.strategy = (h3_strategy)(rbyte % 3)};
    if (rbyte % 6 >= 3) {
        res.strategy = H3_HASH;
        res.has_merge = true;
        res.behavior = rbyte % 6 == 3 ? "native" : rbyte % 6 == 4 ? "deep" : "deeper";
        res.merge_options = (rbyte & 0x40) ? opts : NULL;
    }
    hv *dflt = (flags & 1) ? hv_str("default %{env}") : NULL;
    hv *override = (flags & 2) ? hv_str("%{kind}") : NULL;
    hv *out = NULL;
    h3_result r = h3_lookup(h, key, dflt, (flags & 4) ? NULL : scope, override, &res, &out, &err);
    if ((r == H3_ERROR) != (err.msg != NULL) || (r == H3_FOUND && !out))
        abort();
    hv_decref(out);
    hv_decref(dflt);
    hv_decref(override);
    herr_clear(&err);
    h3_free(h);
    free(key);
    return 0;
}
