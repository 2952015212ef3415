#!/usr/bin/env python3
"""Checks `hiera serve` as systemd runs it (the service of debian/hiera-serve.service), speaking
systemd's side of the protocols itself, so no service manager is needed:

  - Type=notify (sd_notify(3)): with NOTIFY_SOCKET (a path, and an abstract "@" name) the server
    sends READY=1 with a STATUS naming the served generation once the facts are read and the
    default environment is built; RELOADING=1 on SIGHUP and READY=1 when that reload has ended; a
    STATUS alone after a reload it made by itself (a file changed); STOPPING=1 on SIGTERM, then
    exits 0
  - socket activation (sd_listen_fds(3)): a listening socket passed as fd 3 with LISTEN_FDS=1 and
    LISTEN_PID of the server is served (and --listen ignored); LISTEN_PID of another process is
    not for it (it listens on --listen); two sockets, or one that is not a listening TCP socket,
    are refused with exit 2 and a message
  - without either variable, libsystemd is not even loaded

usage: tests/serve/systemd.py --hiera build/hiera     Prints "serve-systemd: N passed, N failed".
"""
import argparse, http.client, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
T = Tally("serve-systemd", fail_prefix="FAIL serve-systemd: ")
check = T.check


def tree(scratch):
    """The example control repository, copied (a test changes a data file)."""
    root = os.path.join(scratch, "repo")
    shutil.copytree(os.path.join(ROOT, "examples", "control-repo"), root)
    return root


def serve_cmd(hiera, root, *extra):
    return [hiera, "serve", "--codedir", root, "--environmentpath", os.path.join(root, "environments"),
            "--facts-dir", os.path.join(root, "facts"), "--threads", "2"] + list(extra)


def wait_log(log, pattern, p, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        log.seek(0)
        m = re.search(pattern, log.read())
        if m:
            return m
        if p.poll() is not None:
            break
        time.sleep(0.05)
    log.seek(0)
    return None


def lookup(port, key="profile::base::motd"):
    """(status, answer) of /v1/lookup, or (0, why) when there is no answer."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", f"/v1/lookup?node=web01.example.com&key={key}")
        r = c.getresponse()
        body = r.read().decode()
        c.close()
    except OSError as e:
        return 0, {"error": str(e)}
    return r.status, json.loads(body) if body.startswith("{") else {"body": body}


class Notify:
    """systemd's end of NOTIFY_SOCKET: a datagram socket, at a path or an abstract name."""

    def __init__(self, scratch, abstract):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "hiera-test-notify-%d-%d" % (os.getpid(), time.monotonic_ns())
            self.s.bind("\0" + name)
            self.env = "@" + name
        else:
            path = os.path.join(scratch, "notify")
            self.s.bind(path)
            self.env = path
        self.s.settimeout(0.2)

    def wait(self, pattern, seconds=30):
        """The messages up to the first with a line matching pattern (a regexp), or None."""
        got, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                msg = self.s.recv(4096).decode()
            except socket.timeout:
                continue
            got.append(msg)
            if re.search("^" + pattern + "$", msg, re.M):
                return got
        print("  (notifications seen: %r)" % got)
        return None


def check_notify(hiera, scratch, abstract):
    what = "abstract NOTIFY_SOCKET" if abstract else "NOTIFY_SOCKET"
    root = tree(os.path.join(scratch, "abstract" if abstract else "path"))
    n = Notify(os.path.dirname(root), abstract)
    log = open(os.path.join(os.path.dirname(root), "serve.log"), "w+")
    p = subprocess.Popen(serve_cmd(hiera, root, "--listen", "127.0.0.1:0"), stderr=log, stdout=subprocess.DEVNULL,
                         env={**os.environ, "HIERA_CACHE_DIR": "off", "NOTIFY_SOCKET": n.env})
    try:
        m = wait_log(log, r"port (\d+) \(", p)
        check(m is not None, f"{what}: the server did not start: {log.read()[-500:]}")
        if not m:
            return
        port = int(m.group(1))
        got = n.wait("READY=1")
        check(got is not None, f"{what}: no READY=1")
        ready = got[-1] if got else ""
        # READY=1 once the facts are read and the default environment is built (the first work of
        # the builder: the server answers before, a request waiting for what it needs)
        m = re.search(r"^STATUS=serving generation (\d+): 1 environments \(1 built\), 1 nodes$", ready, re.M)
        check(m is not None, f"{what}: READY=1 without the served generation as STATUS: {ready!r}")
        gen = int(m.group(1)) if m else 0
        check(lookup(port)[0] == 200, f"{what}: no answer once READY=1 was sent")
        # SIGHUP: RELOADING=1, then READY=1 when the reload has ended (a later generation)
        p.send_signal(signal.SIGHUP)
        got = n.wait("RELOADING=1", 10)
        check(got is not None, f"{what}: no RELOADING=1 after SIGHUP")
        got = n.wait("READY=1", 30)
        m = re.search(r"STATUS=serving generation (\d+): ", got[-1]) if got else None
        check(m is not None and int(m.group(1)) > gen,
              f"{what}: no READY=1 with a generation after {gen} after the reload SIGHUP asked for: {got!r}")
        gen = int(m.group(1)) if m else gen
        # a reload the server makes by itself (a data file changed): STATUS alone, no READY=1
        common = os.path.join(root, "environments", "production", "data", "common.yaml")
        with open(common, "a") as f:
            f.write("profile::base::added: yes\n")
        got = n.wait(r"STATUS=serving generation (?!%d:)\d+: .*" % gen, 30)
        statuses = [m for m in (got or []) if re.search(r"generation (\d+)", m) and int(re.search(r"generation (\d+)", m).group(1)) > gen]
        check(bool(statuses), f"{what}: no STATUS for the reload a changed file made: {got!r}")
        check(all("READY=1" not in m.split("\n") for m in statuses),
              f"{what}: READY=1 after a reload nobody asked for: {statuses!r}")
        # SIGTERM: STOPPING=1, exit 0
        p.send_signal(signal.SIGTERM)
        got = n.wait("STOPPING=1", 20)
        check(got is not None, f"{what}: no STOPPING=1 after SIGTERM")
        check(p.wait(timeout=30) == 0, f"{what}: exit status {p.returncode} after SIGTERM")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        n.s.close()


def activated(hiera, root, log, socks, pid_of_other=False, extra=()):
    """hiera serve with socks as fds 3... and LISTEN_FDS/LISTEN_PID, as systemd starts a service."""
    fds = [s.fileno() for s in socks]

    def child():
        # (in the child: the sockets moved to 3, 4... as systemd passes them; LISTEN_PID is set by
        # the shell below, which execs hiera with its own pid)
        dups = [os.dup(fd) for fd in fds]
        for i, fd in enumerate(dups):
            os.dup2(fd, 3 + i)
            os.set_inheritable(3 + i, True)
    listen_pid = "1" if pid_of_other else "$$"
    cmd = ["sh", "-c", f'LISTEN_PID={listen_pid} LISTEN_FDS={len(fds)} exec "$@"', "sh"] + \
        serve_cmd(hiera, root, "--listen", "127.0.0.1:1", *extra)
    return subprocess.Popen(cmd, stderr=log, stdout=subprocess.DEVNULL, preexec_fn=child, close_fds=False,
                            env={**os.environ, "HIERA_CACHE_DIR": "off"})


def listening(family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0) if family == socket.AF_INET else ("::1", 0))
    s.listen(16)
    return s


def check_activation(hiera, scratch):
    root = tree(os.path.join(scratch, "act"))
    log = open(os.path.join(scratch, "act", "serve.log"), "w+")
    s = listening()
    port = s.getsockname()[1]
    p = activated(hiera, root, log, [s])
    try:
        m = wait_log(log, r"listening on (.*?) port (\d+) \(", p)
        check(m is not None and int(m.group(2)) == port and "systemd" in m.group(1),
              f"socket activation: the server does not say it serves the passed socket: {log.read()[-500:]}")
        status, body = lookup(port)
        check(status == 200 and body.get("value") == "Welcome to web01 (Debian)",
              f"socket activation: no answer on the passed socket: {status} {body}")
        p.send_signal(signal.SIGTERM)
        check(p.wait(timeout=30) == 0, f"socket activation: exit status {p.returncode} after SIGTERM")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    s.close()

    # LISTEN_PID of another process: the sockets are not this one's; --listen (port 1: refused
    # for a non-root user, or taken) is what the server tries, and says so
    s = listening()
    log = open(os.path.join(scratch, "act", "other.log"), "w+")
    other = activated(hiera, root, log, [s], pid_of_other=True,
                      extra=("--listen", "127.0.0.1:0"))
    try:
        m = wait_log(log, r"listening on (.*?) port (\d+) \(", other)
        check(m is not None and m.group(1) == "127.0.0.1:0" and int(m.group(2)) != s.getsockname()[1],
              f"LISTEN_PID of another process: the server took the socket: {log.read()[-300:]}")
        other.send_signal(signal.SIGTERM)
        other.wait(timeout=30)
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
    s.close()

    # what cannot be served: two sockets; a socket that is not listening; a datagram socket
    cases = [("two sockets", lambda: [listening(), listening()], "systemd passed 2 sockets"),
             ("a socket that does not listen", lambda: [socket.socket(socket.AF_INET, socket.SOCK_STREAM)],
              "not a listening TCP socket"),
             ("a datagram socket", lambda: [socket.socket(socket.AF_INET, socket.SOCK_DGRAM)],
              "not a listening TCP socket")]
    for what, make, message in cases:
        socks = make()
        log = open(os.path.join(scratch, "act", "bad.log"), "w+")
        p = activated(hiera, root, log, socks)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        log.seek(0)
        text = log.read()
        check(rc == 2 and message in text, f"socket activation with {what}: exit {rc}, said {text[-300:]!r}")
        for x in socks:
            x.close()


def check_not_loaded(hiera, scratch):
    """Outside systemd, libsystemd stays out of the process."""
    root = tree(os.path.join(scratch, "plain"))
    log = open(os.path.join(scratch, "plain", "serve.log"), "w+")
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
    p = subprocess.Popen(serve_cmd(hiera, root, "--listen", "127.0.0.1:0"), stderr=log, stdout=subprocess.DEVNULL,
                         env={**env, "HIERA_CACHE_DIR": "off"})
    try:
        m = wait_log(log, r"port (\d+) \(", p)
        check(m is not None, "plain: the server did not start")
        if m:
            maps = open(f"/proc/{p.pid}/maps").read()
            check("libsystemd" not in maps, "plain: libsystemd is loaded though systemd asked for nothing")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    scratch = tempfile.mkdtemp(prefix="hiera-serve-systemd-")
    try:
        for sub in ("path", "abstract", "act", "plain"):
            os.makedirs(os.path.join(scratch, sub))
        check_notify(hiera, scratch, abstract=False)
        check_notify(hiera, scratch, abstract=True)
        check_activation(hiera, scratch)
        check_not_loaded(hiera, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
