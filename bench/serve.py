#!/usr/bin/env python3
"""bench/serve.py - `hiera serve` under load, against nginx, with faults (see bench/README.md).

    make && python3 bench/serve.py [--duration 10] [--soak 600] [--connections 16]

On the benchmark tree (bench/gen-repo.py, 2000 nodes x 2000 keys), in one run:
  1. throughput: wrk (keep-alive) on one single-key lookup URL of `hiera serve`, and on nginx
     (one worker) serving a static file holding the same answer; the verdict: hiera serve reaches
     at least 70% of nginx's requests per second, p99 latency under 5 ms, no error -- while a data
     file is changed (and the snapshot rebuilt and swapped) every second;
  2. soak (--soak SECONDS, default 0 = skipped): the same load and reloads for that long; RSS at
     start and end;
  3. faults: a broken data file during load (no failed request; /healthz degraded); two
     instances behind nginx (upstream with retries), one killed with SIGKILL under load (no
     failed request beyond those in flight); 1000 idle connections held open while wrk runs
     (others still answered); malformed and huge requests (4xx, the server still answers).
Needs wrk and nginx (Debian packages; installed when missing, as root). Prints a table and
writes every figure to --json FILE when given.
"""
import argparse, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def need(cmds):
    missing = [pkg for cmd, pkg in cmds if not shutil.which(cmd)]
    if missing:
        if os.geteuid() != 0:
            sys.exit("serve bench: missing " + " ".join(missing))
        subprocess.run(["apt-get", "install", "-y", "-qq"] + missing, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


class Serve:
    def __init__(self, hiera, repo, port, log):
        self.port = port
        self.p = subprocess.Popen([hiera, "serve", "--codedir", repo, "--facts-dir", os.path.join(repo, "facts"),
                                   "--listen", f"127.0.0.1:{port}"], stderr=open(log, "w"),
                                  env={**os.environ, "HIERA_CACHE_DIR": "off"})
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("hiera serve did not start: " + open(log).read())

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            self.p.wait(timeout=30)


def wrk(url, seconds, conns, threads=2):
    out = subprocess.run(["wrk", "-t", str(threads), "-c", str(conns), "-d", f"{seconds}s", "--latency", url],
                         capture_output=True, text=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    def lat(label):
        m = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)" % label, out, re.M)
        v = float(m.group(1))
        return v / 1000.0 if m.group(2) == "us" else v if m.group(2) == "ms" else v * 1000
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))
    return {"rps": rps, "p50_ms": lat("50"), "p99_ms": lat("99"), "requests": total,
            "non_2xx": int(non2xx.group(1)) if non2xx else 0,
            "socket_errors": sum(int(x) for x in errors.groups()) if errors else 0, "raw": out}


def nginx_start(work, port, root=None, upstreams=None):
    conf = os.path.join(work, f"nginx-{port}.conf")
    os.makedirs(os.path.join(work, "nginx-tmp"), exist_ok=True)
    if upstreams:
        server_body = ("    location / { proxy_pass http://hiera; proxy_http_version 1.1;\n"
                       "        proxy_set_header Connection \"\"; proxy_next_upstream error timeout http_502;\n"
                       "        proxy_next_upstream_tries 2; proxy_connect_timeout 1s; }\n")
        upstream = "upstream hiera {\n" + "".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;\n" for p in upstreams) \
                   + "    keepalive 64;\n}\n"
    else:
        server_body = f"    root {root};\n    location / {{ default_type application/json; }}\n"
        upstream = ""
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {work}/nginx-{port}.pid;
error_log {work}/nginx-{port}.err warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {work}/nginx-tmp; proxy_temp_path {work}/nginx-tmp;
    fastcgi_temp_path {work}/nginx-tmp; uwsgi_temp_path {work}/nginx-tmp; scgi_temp_path {work}/nginx-tmp;
    keepalive_requests 1000000;
{upstream}    server {{
        listen 127.0.0.1:{port};
{server_body}    }}
}}
""")
    p = subprocess.Popen(["nginx", "-c", conf, "-p", work], stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start: " + open(f"{work}/nginx-{port}.err").read())


class Churn:
    """Changes a data file every `period` seconds (a value that no benchmarked key reads), so the
    server rebuilds and swaps its snapshot all along; or breaks it once (broken=True)."""

    def __init__(self, path, period=1.0):
        self.path, self.period = path, period
        self.orig = open(path).read()
        self.stop_flag = threading.Event()
        self.n = 0
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop_flag.wait(self.period):
            self.n += 1
            with open(self.path + ".tmp", "w") as f:
                f.write(self.orig + f"bench::churn: {self.n}\n")
            os.rename(self.path + ".tmp", self.path)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop_flag.set()
        self.t.join()
        with open(self.path, "w") as f:
            f.write(self.orig)


def bench_repo(repo):
    """The benchmark environment at repo (made by gen-repo.py when missing): its bench.json."""
    if not os.path.exists(os.path.join(repo, "bench.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-repo.py"), "--out", repo, "--nodes", "2000", "--keys", "2000"],
                       check=True, stdout=subprocess.DEVNULL)
    return json.load(open(os.path.join(repo, "bench.json")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hiera", default=os.path.join(TOP, "build", "hiera"))
    ap.add_argument("--repo", default=os.path.join(tempfile.gettempdir(), f"hiera-bench-{os.getuid()}"))
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--soak", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    need([("wrk", "wrk"), ("nginx", "nginx-light")])
    hiera = os.path.abspath(args.hiera)
    repo = args.repo
    meta = bench_repo(repo)
    node, key = meta["node"], meta["merged_key"]
    work = tempfile.mkdtemp(prefix="hiera-serve-bench-")
    results = {"node": node, "key": key}
    churn_file = os.path.join(repo, "environments", "production", "data", "common.yaml")
    procs = []
    try:
        port = free_port()
        s = Serve(hiera, repo, port, os.path.join(work, "serve.log"))
        procs.append(s.p)
        url = f"http://127.0.0.1:{port}/v1/lookup?node={node}&key={key}"
        answer = urllib.request.urlopen(url).read()
        os.makedirs(os.path.join(work, "www"))
        with open(os.path.join(work, "www", "answer.json"), "wb") as f:
            f.write(answer)
        nport = free_port()
        ng = nginx_start(work, nport, root=os.path.join(work, "www"))
        procs.append(ng)
        wrk(url, 2, args.connections)  # warm-up
        results["nginx"] = wrk(f"http://127.0.0.1:{nport}/answer.json", args.duration, args.connections)
        rss0 = rss_kb(s.p.pid)
        results["serve_quiet"] = wrk(url, args.duration, args.connections)
        with Churn(churn_file) as ch:
            results["serve"] = wrk(url, args.duration, args.connections)
            results["reloads_during_load"] = ch.n
        results["nginx2"] = wrk(f"http://127.0.0.1:{nport}/answer.json", args.duration, args.connections)
        ng.terminate()
        ng.wait()
        if args.soak:
            samples = []
            done = threading.Event()
            def sampler():
                while not done.wait(10):
                    samples.append(rss_kb(s.p.pid))
            st = threading.Thread(target=sampler, daemon=True)
            st.start()
            with Churn(churn_file) as ch:
                results["soak"] = wrk(url, args.soak, args.connections)
                results["soak"]["reloads"] = ch.n
            done.set()
            st.join()
            results["soak"]["rss_kb_every_10s"] = samples
        results["rss_start_kb"], results["rss_end_kb"] = rss0, rss_kb(s.p.pid)
        healthz = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").read())
        results["generation"] = healthz["generation"]

        # faults 1: a broken data file while under load
        orig = open(churn_file).read()
        def breaker():
            time.sleep(1.5)
            with open(churn_file, "w") as f:
                f.write(orig + "broken: [\n")
        t = threading.Thread(target=breaker)
        t.start()
        r = wrk(url, 4, args.connections)
        t.join()
        degraded = "ok"
        for _ in range(100):  # the refused rebuild may still be running (it competes with the load)
            degraded = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").read())["status"]
            if degraded == "degraded":
                break
            time.sleep(0.1)
        with open(churn_file, "w") as f:
            f.write(orig)
        results["fault_broken_file"] = {"non_2xx": r["non_2xx"], "socket_errors": r["socket_errors"],
                                        "requests": r["requests"], "healthz": degraded}

        # faults 2: 1000 idle connections beside the load
        idle = []
        for _ in range(1000):
            so = socket.create_connection(("127.0.0.1", port))
            so.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
            idle.append(so)
        r = wrk(url, 4, args.connections)
        for so in idle:
            so.close()
        results["fault_idle_1000"] = {"rps": r["rps"], "p99_ms": r["p99_ms"], "non_2xx": r["non_2xx"],
                                      "socket_errors": r["socket_errors"]}

        # faults 3: malformed and huge requests
        bad = {}
        for name, payload in [("garbage", b"\x00\x01\x02 nonsense\r\n\r\n"), ("no-version", b"GET /v1/nodes\r\n\r\n"),
                              ("huge-header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 200000 + b"\r\n\r\n"),
                              ("huge-body", b"POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n" + b"{" * 65536)]:
            so = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                so.sendall(payload)
                resp = so.recv(200).decode("latin-1")
            except OSError:
                resp = "closed"
            so.close()
            m = re.match(r"HTTP/1\.\d (\d+)", resp)
            bad[name] = int(m.group(1)) if m else resp or "closed"
        bad["still_answers"] = urllib.request.urlopen(url).status
        results["fault_malformed"] = bad

        # faults 4: two instances behind nginx, one killed under load
        p2 = free_port()
        s2 = Serve(hiera, repo, p2, os.path.join(work, "serve2.log"))
        procs.append(s2.p)
        lb = free_port()
        lbp = nginx_start(work, lb, upstreams=[port, p2])
        procs.append(lbp)
        lb_url = f"http://127.0.0.1:{lb}/v1/lookup?node={node}&key={key}"
        def killer():
            time.sleep(2)
            s.p.send_signal(signal.SIGKILL)
        t = threading.Thread(target=killer)
        t.start()
        r = wrk(lb_url, 6, args.connections)
        t.join()
        results["fault_kill9_behind_nginx"] = {"requests": r["requests"], "non_2xx": r["non_2xx"],
                                               "socket_errors": r["socket_errors"], "rps": r["rps"]}
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        if os.environ.get("SERVE_BENCH_LOG"):
            print(open(os.path.join(work, "serve.log")).read())
        shutil.rmtree(work, ignore_errors=True)

    n, sv = results["nginx"], results["serve"]
    nginx_rps = (results["nginx"]["rps"] + results["nginx2"]["rps"]) / 2
    ratio = sv["rps"] / nginx_rps
    ok = lambda b: "met" if b else "NOT MET"
    print(f"{'':34} {'hiera serve':>14} {'nginx (static)':>16}")
    print(f"{'requests/s (keep-alive)':34} {sv['rps']:>14.0f} {nginx_rps:>16.0f}   {ratio:.0%} of nginx: {ok(ratio >= 0.7)}")
    print(f"{'p50 / p99 latency (ms)':34} {sv['p50_ms']:>6.2f} / {sv['p99_ms']:<6.2f} {n['p50_ms']:>7.2f} / {n['p99_ms']:<6.2f}"
          f"  p99 < 5 ms: {ok(sv['p99_ms'] < 5)}")
    q = results["serve_quiet"]
    print(f"{'  without reloads: req/s, p50/p99':34} {q['rps']:>14.0f}   {q['p50_ms']:.2f} / {q['p99_ms']:.2f} ms")
    print(f"{'errors (non-2xx, socket)':34} {sv['non_2xx']:>7} / {sv['socket_errors']:<6}  "
          f"reloads during the run: {results['reloads_during_load']}  {ok(sv['non_2xx'] == 0 and sv['socket_errors'] == 0)}")
    if "soak" in results:
        so = results["soak"]
        print(f"{'soak':34} {so['rps']:>14.0f} req/s for {args.soak} s, {so['reloads']} reloads, "
              f"{so['non_2xx']} non-2xx, p99 {so['p99_ms']:.2f} ms")
        smp = so["rss_kb_every_10s"]
        if len(smp) >= 12:
            first, last = smp[:6], smp[-6:]
            print(f"{'soak RSS, first / last minute (MiB)':34} {max(first) / 1024:>6.1f} / {max(last) / 1024:.1f}"
                  f"  (max {max(smp) / 1024:.1f}; sampled every 10 s)")
    print(f"{'RSS start / end (MiB)':34} {results['rss_start_kb'] / 1024:>6.1f} / {results['rss_end_kb'] / 1024:.1f}")
    fb = results["fault_broken_file"]
    print(f"{'broken file under load':34} {fb['requests']} requests, {fb['non_2xx']} non-2xx, {fb['socket_errors']} socket "
          f"errors; /healthz {fb['healthz']}  {ok(fb['non_2xx'] == 0 and fb['socket_errors'] == 0 and fb['healthz'] == 'degraded')}")
    fi = results["fault_idle_1000"]
    print(f"{'1000 idle connections':34} {fi['rps']:.0f} req/s, p99 {fi['p99_ms']:.2f} ms, {fi['non_2xx']} non-2xx  "
          f"{ok(fi['non_2xx'] == 0 and fi['socket_errors'] == 0)}")
    fm = results["fault_malformed"]
    print(f"{'malformed / huge requests':34} " + ", ".join(f"{k} {v}" for k, v in fm.items()))
    fk = results["fault_kill9_behind_nginx"]
    print(f"{'kill -9 of 1 of 2 behind nginx':34} {fk['requests']} requests, {fk['non_2xx']} non-2xx, "
          f"{fk['socket_errors']} socket errors")
    if args.json:
        for v in results.values():
            if isinstance(v, dict):
                v.pop("raw", None)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
