/* systemd.h - `hiera serve` as a systemd service (systemd.c): the listening socket systemd passes
 * (socket activation, a .socket unit) and what the server tells it (Type=notify: READY, RELOADING,
 * STOPPING and a STATUS line). Both are done only when systemd asks for them (LISTEN_FDS,
 * NOTIFY_SOCKET in the environment), through libsystemd, opened with dlopen then (libs.h);
 * otherwise nothing changes and libsystemd is not loaded. Called from the server's main thread. */
#ifndef HIERA_SERVE_SYSTEMD_H
#define HIERA_SERVE_SYSTEMD_H

#include "serve/serve.h"

/* The listening socket systemd passed (sd_listen_fds: the variables are unset and the socket is
 * closed on exec, so commands the server runs inherit neither), or -1 when it passed none. -2
 * (said on stderr) when what it passed cannot be served: not one listening TCP socket, or
 * libsystemd cannot be loaded. */
int serve_systemd_listen_fd(void);

/* READY=1 with the served generation as STATUS (the server listens: at start, and after a
 * reload asked with SIGHUP), or STATUS alone (after a reload the server made by itself). */
void serve_systemd_ready(serve_state *st, bool ready);
/* RELOADING=1 (SIGHUP), STOPPING=1 (SIGTERM), or any other state line of sd_notify(3). */
void serve_systemd_notify(const char *state);

#endif
