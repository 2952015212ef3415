/* fuzz_ini.c - libFuzzer harness: puppet.conf / environment.conf parsing (src/formats/ini.c),
 * with puppet.conf's sections and with any section (environment.conf). A parse either fails with
 * a message or gives sections whose settings all have names and (for strings) values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "formats/ini.h"

static void one(const uint8_t *data, size_t size, const char *const *allowed)
{
    ini_file f;
    herr e = {0};
    if (ini_parse((const char *)data, size, "fuzz.conf", allowed, &f, &e) == 0) {
        if (f.n == 0 || strcmp(f.sections[0].name, "main"))
            abort(); /* main comes first, always */
        for (size_t i = 0; i < f.n; i++)
            for (size_t k = 0; k < f.sections[i].n; k++) {
                const ini_setting *s = &f.sections[i].settings[k];
                if (!s->name[0] || (s->kind == INI_STRING) != (s->value != NULL) || s->line < 1)
                    abort();
            }
        ini_free(&f);
    } else if (!e.msg) {
        abort();
    }
    herr_clear(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const allowed[] = {"main", "server", "master", "agent", "user", NULL};
    one(data, size, allowed);
    one(data, size, NULL);
    return 0;
}
