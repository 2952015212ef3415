/* libs.h - libmicrohttpd (the HTTP server) and GnuTLS (client certificates), loaded when
 * `hiera serve` starts rather than when any hiera command starts (libs.c): a one-shot lookup
 * pays nothing for them; libsystemd likewise, only when systemd runs the server (systemd.c). The pointers are typed from the libraries' own headers, so every call
 * is checked by the compiler. */
#ifndef HIERA_SERVE_LIBS_H
#define HIERA_SERVE_LIBS_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <systemd/sd-daemon.h>

typedef struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_quiesce_daemon) *quiesce_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_is_feature_supported) *is_feature_supported;
} mhd_api;

typedef struct {
    __typeof__(gnutls_certificate_verify_peers2) *verify_peers2;
    __typeof__(gnutls_certificate_get_peers) *get_peers;
    __typeof__(gnutls_x509_crt_init) *crt_init;
    __typeof__(gnutls_x509_crt_import) *crt_import;
    __typeof__(gnutls_x509_crt_get_dn_by_oid) *crt_get_dn_by_oid;
    __typeof__(gnutls_x509_crt_deinit) *crt_deinit;
} tls_api;

typedef struct {
    __typeof__(sd_notify) *notify;
    __typeof__(sd_listen_fds) *listen_fds;
    __typeof__(sd_is_socket_inet) *is_socket_inet;
} sd_api;

/* Filled by serve_load_mhd / serve_load_tls; false with a message on stderr when the library
 * cannot be loaded. */
extern mhd_api MHD;
extern tls_api TLS;
bool serve_load_mhd(void);
bool serve_load_tls(void);
/* libsystemd (sd_notify, sd_listen_fds): filled by serve_load_systemd, likewise */
extern sd_api SD;
bool serve_load_systemd(void);

#endif
