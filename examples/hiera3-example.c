/* hiera3-example.c - the README's Hiera 3 example: Hiera.new(config).lookup(key, default, scope,
 * order_override, resolution_type) through libhiera.
 * usage: hiera3-example CONFIG FQDN KEY [priority|array|hash] */
#include <hiera.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s CONFIG FQDN KEY [priority|array|hash]\n", argv[0]);
        return 2;
    }
    hiera3_resolution res = {.kind = HIERA3_PRIORITY};
    if (argc == 5 && strcmp(argv[4], "array") == 0)
        res.kind = HIERA3_ARRAY;
    else if (argc == 5 && strcmp(argv[4], "hash") == 0)
        res.kind = HIERA3_HASH;
    hiera_error err = {0};
    hiera3 *h = hiera3_new(argv[1], &err);
    hiera_value *scope = hiera_value_new_hash();
    hiera_value_hash_set(scope, "::fqdn", hiera_value_new_string(argv[2])); /* %{::fqdn} */
    hiera_value *v = NULL;
    int status = 1;
    hiera_status st = h ? hiera3_lookup(h, argv[3], NULL, scope, NULL, &res, &v, &err) : HIERA_ERROR;
    if (st == HIERA_OK) {
        char *json = hiera_render(v, HIERA_RENDER_JSON, &err);
        puts(json);
        free(json);
        hiera_value_decref(v);
        status = 0;
    } else if (st == HIERA_NOT_FOUND) {
        puts("nil");
    } else {
        fprintf(stderr, "%s\n", err.message);
    }
    hiera_value_decref(scope);
    hiera3_free(h);
    hiera_error_clear(&err);
    return status;
}
