/* systemd.c - `hiera serve` under systemd (systemd.h): libsystemd's sd_listen_fds and sd_notify,
 * the library opened only when systemd set LISTEN_FDS or NOTIFY_SOCKET. */
#include "serve/systemd.h"
#include "serve/libs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* libsystemd, loaded on first need: 0 not tried, 1 loaded, -1 cannot be (said once) */
static int sd_loaded;

static bool sd_load(void)
{
    if (!sd_loaded)
        sd_loaded = serve_load_systemd() ? 1 : -1;
    return sd_loaded > 0;
}

int serve_systemd_listen_fd(void)
{
    const char *fds = getenv("LISTEN_FDS");
    if (!fds || !*fds)
        return -1;
    if (!sd_load())
        return -2;
    int n = SD.listen_fds(1);
    if (n < 0) {
        fprintf(stderr, "Error: hiera serve: the sockets systemd passed: %s\n", strerror(-n));
        return -2;
    }
    if (n == 0)
        return -1; /* LISTEN_PID names another process: they were not for this one */
    if (n > 1) {
        fprintf(stderr, "Error: hiera serve: systemd passed %d sockets; hiera serve listens on one (give the socket "
                        "unit one ListenStream=)\n", n);
        return -2;
    }
    if (SD.is_socket_inet(SD_LISTEN_FDS_START, 0, SOCK_STREAM, 1, 0) <= 0) {
        fprintf(stderr, "Error: hiera serve: the socket systemd passed is not a listening TCP socket "
                        "(ListenStream=[ADDRESS:]PORT)\n");
        return -2;
    }
    return SD_LISTEN_FDS_START;
}

void serve_systemd_notify(const char *state)
{
    if (!getenv("NOTIFY_SOCKET") || !sd_load())
        return;
    int r = SD.notify(0, state);
    if (r < 0)
        fprintf(stderr, "hiera serve: warning: cannot tell systemd %.*s: %s\n", (int)strcspn(state, "\n"), state,
                strerror(-r));
}

void serve_systemd_ready(serve_state *st, bool ready)
{
    if (!getenv("NOTIFY_SOCKET"))
        return;
    generation *g = state_current(st);
    state_status ss;
    state_status_of(st, &ss);
    char msg[512];
    snprintf(msg, sizeof msg, "%sSTATUS=serving generation %llu: %zu environments (%zu built), %zu nodes%s",
             ready ? "READY=1\n" : "", (unsigned long long)g->id, ss.envs_listed, ss.envs_built, hv_array_len(g->nodes),
             ss.refused ? "; the last reload was refused (see /healthz)" : "");
    free(ss.refused);
    generation_release(g);
    serve_systemd_notify(msg);
}
