/* fuzz_regex.c - libFuzzer harness: Ruby regexps (src/base/rregex.c) as lookup_options patterns and
 * knockout prefixes use them. Input: the pattern, a NUL byte, then the subject. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/rregex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *z = memchr(data, 0, size);
    size_t plen = z ? (size_t)(z - data) : size;
    const char *subj = z ? (const char *)z + 1 : "";
    size_t slen = z ? size - plen - 1 : 0;
    herr e = {0};
    rregex *re = rregex_new((const char *)data, plen, &e);
    if (!re) {
        if (!e.msg)
            abort();
        herr_clear(&e);
        return 0;
    }
    rregex_search(re, subj, slen);
    size_t outlen = 0;
    char *g = rregex_gsub_empty(re, subj, slen, &outlen);
    if (g && outlen > slen)
        abort(); /* removing matches cannot make the string longer */
    free(g);
    rregex_free(re);
    return 0;
}
