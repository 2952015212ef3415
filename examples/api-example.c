/* api-example.c - the README's example: one lookup through libhiera.
 * usage: api-example CODEDIR FACTS.yaml NODE KEY */
#include <hiera.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s CODEDIR FACTS NODE KEY\n", argv[0]);
        return 2;
    }
    hiera_error err = {0};
    hiera_value *facts = hiera_value_load_file(argv[2], &err);
    hiera_options o = {.size = sizeof o, .codedir = argv[1], .node = argv[3], .facts = facts};
    hiera *h = facts ? hiera_new(&o, &err) : NULL;
    hiera_value *v = NULL;
    int status = 1;
    if (h && hiera_lookup_key(h, argv[4], &v, &err) == HIERA_OK) {
        char *json = hiera_render(v, HIERA_RENDER_JSON, &err);
        puts(json);
        free(json);
        hiera_value_decref(v);
        status = 0;
    } else if (err.message) {
        fprintf(stderr, "%s\n", err.message);
    }
    hiera_free(h);
    hiera_value_decref(facts);
    hiera_error_clear(&err);
    return status;
}
