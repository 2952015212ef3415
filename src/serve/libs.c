/* libs.c - libmicrohttpd and GnuTLS opened with dlopen when `hiera serve` starts, libsystemd when
 * systemd runs it (libs.h). */
#include "serve/libs.h"

#include <dlfcn.h>
#include <stdio.h>

mhd_api MHD;
tls_api TLS;
sd_api SD;

static void *open_first(const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    fprintf(stderr, "Error: hiera serve: cannot load %s: %s\n", names[0], dlerror());
    return NULL;
}

/* Looks each name up into the pointer after it; false (said on stderr) when one is missing. */
static bool bind_all(void *lib, const char *libname, const char *const *names, void **slots, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        slots[i] = dlsym(lib, names[i]);
        if (!slots[i]) {
            fprintf(stderr, "Error: hiera serve: %s has no %s\n", libname, names[i]);
            return false;
        }
    }
    return true;
}

bool serve_load_mhd(void)
{
    static const char *const libs[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", NULL};
    static const char *const names[] = {"MHD_start_daemon", "MHD_stop_daemon", "MHD_quiesce_daemon", "MHD_get_daemon_info",
                                        "MHD_queue_response", "MHD_create_response_from_buffer", "MHD_destroy_response",
                                        "MHD_add_response_header", "MHD_lookup_connection_value",
                                        "MHD_get_connection_values", "MHD_get_connection_info", "MHD_is_feature_supported"};
    _Static_assert(sizeof names / sizeof *names == sizeof(mhd_api) / sizeof(void *), "one name per pointer");
    void *lib = open_first(libs);
    return lib && bind_all(lib, "libmicrohttpd", names, (void **)&MHD, sizeof names / sizeof *names);
}

bool serve_load_tls(void)
{
    static const char *const libs[] = {"libgnutls.so.30", "libgnutls.so", NULL};
    static const char *const names[] = {"gnutls_certificate_verify_peers2", "gnutls_certificate_get_peers",
                                        "gnutls_x509_crt_init", "gnutls_x509_crt_import", "gnutls_x509_crt_get_dn_by_oid",
                                        "gnutls_x509_crt_deinit"};
    _Static_assert(sizeof names / sizeof *names == sizeof(tls_api) / sizeof(void *), "one name per pointer");
    void *lib = open_first(libs);
    return lib && bind_all(lib, "GnuTLS", names, (void **)&TLS, sizeof names / sizeof *names);
}

bool serve_load_systemd(void)
{
    static const char *const libs[] = {"libsystemd.so.0", NULL};
    static const char *const names[] = {"sd_notify", "sd_listen_fds", "sd_is_socket_inet"};
    _Static_assert(sizeof names / sizeof *names == sizeof(sd_api) / sizeof(void *), "one name per pointer");
    void *lib = open_first(libs);
    return lib && bind_all(lib, "libsystemd", names, (void **)&SD, sizeof names / sizeof *names);
}
