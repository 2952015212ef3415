#!/usr/bin/env python3
"""bench/serve-scale.py - `hiera serve` over hundreds of environments (issue 32; bench/README.md).

    make && python3 bench/serve-scale.py [--envs 101,500] [--reloads 100] [--duration 10] [--json FILE]

A Puppet server deployed by r10k holds one environment per branch, most files identical between
branches, each a separate checkout. This builds such trees from the benchmark environment
(bench/gen-repo.py: 2000 nodes, 2000 keys, 768 data files, 3.3 MB): N real copies (cp -r) of
`production` as env001..env<N-1>, every 25th differing by one line of one file, with the global
layer and the 2000 nodes' facts. Then, for N = 1 (the anchor) and each N asked:

  start          process start to the first answer from an environment (the last one: never built
                 before), and to the answer from production; target: within 5 s
  memory         RSS once every environment has answered (every one built), against the same for
                 the one-environment tree; target: at most 3x
  change         a one-line change to one environment's common.yaml, written in place, until
                 /v1/lookup answers it, 5 times; target: within 1.5 s each
  reloads        RSS after those 5 reloads against before (target: within 15%), and after
                 --reloads more (100) against after the first (target: within 10%)
  throughput     wrk (keep-alive) on one lookup URL of the N-environment server and on nginx
                 serving a static file holding the same answer, in the same run, while one
                 environment's file is rewritten every second; target: at least 70% of nginx
  --max-memory   the N-environment server again with --max-memory 1/4 of what it held: every
                 environment asked twice; RSS, environments dropped, time to answer from one
                 dropped (read back from the disk cache: parses named by content)
  storm          tests/serve/storm.py --deadline 2 (the issue's 2 s) on a small tree

Prints a table; every figure goes to --json FILE when given. Needs wrk and nginx (installed
when missing, as root). The machine's load changes the times: run it on a quiet machine, and
read ratios, which are measured in the same run.
"""
import argparse, json, os, random, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location("serve_bench", os.path.join(HERE, "serve.py"))
serve_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_bench)
need, free_port, rss_kb, wrk, nginx_start = (serve_bench.need, serve_bench.free_port, serve_bench.rss_kb,
                                             serve_bench.wrk, serve_bench.nginx_start)


def get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, json.loads(r.read())


def make_fleet(repo, work, n):
    """work/fleetN: the global layer, production and N-1 copies (a few differing by one line)."""
    root = os.path.join(work, f"fleet{n}")
    done = os.path.join(root, ".made")
    if os.path.exists(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "environments"))
    shutil.copy(os.path.join(repo, "hiera.yaml"), root)
    shutil.copytree(os.path.join(repo, "global-data"), os.path.join(root, "global-data"))
    src = os.path.join(repo, "environments", "production")
    shutil.copytree(src, os.path.join(root, "environments", "production"))
    for i in range(1, n):
        dst = os.path.join(root, "environments", "env%03d" % i)
        subprocess.run(["cp", "-r", src, dst], check=True)  # real copies: other inodes, other times
        if i % 25 == 0:
            with open(os.path.join(dst, "data", "common.yaml"), "a") as f:
                f.write(f"bench::branch_only: env{i:03d}\n")
    open(done, "w").close()
    return root


class Server:
    def __init__(self, hiera, codedir, facts, log, extra=(), cache_dir="off"):
        self.t0 = time.time()
        self.log = log
        self.p = subprocess.Popen([hiera, "serve", "--codedir", codedir, "--facts-dir", facts, "--listen", "127.0.0.1:0"]
                                  + list(extra), stderr=open(log, "w"), stdout=subprocess.DEVNULL,
                                  env={**os.environ, "HIERA_CACHE_DIR": cache_dir})
        self.port = None
        for _ in range(2000):
            m = re.search(r" port (\d+) \(", open(log).read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                break
            time.sleep(0.005)
        if not self.port:
            raise RuntimeError("hiera serve did not start: " + open(log).read())
        self.base = f"http://127.0.0.1:{self.port}"

    def lookup(self, env, node, key):
        return get(f"{self.base}/v1/lookup?node={node}&key={key}&environment={env}")

    def healthz(self):
        return get(self.base + "/healthz")[1]

    def settle(self, nodes):
        """Waits for the facts of every node and nothing pending."""
        end = time.time() + 300
        while time.time() < end:
            h = self.healthz()
            if h["nodes"] == nodes and h["status"] == "ok":
                return h
            time.sleep(0.05)
        raise RuntimeError("hiera serve did not settle: " + json.dumps(self.healthz()))

    def rss(self):
        return rss_kb(self.p.pid)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.p.kill()


def one_line_change(path, n):
    """Rewrites path in place with its bench::probe line set to n (a one-line change)."""
    text = open(path).read()
    text = re.sub(r"^bench::probe: .*\n", "", text, flags=re.M)
    with open(path, "w") as f:
        f.write(text + f"bench::probe: {n}\n")


def wait_value(server, env, node, key, want, limit=30):
    t0 = time.time()
    while time.time() - t0 < limit:
        try:
            st, body = server.lookup(env, node, key)
            if st == 200 and body.get("value") == want:
                return time.time() - t0
        except urllib.error.HTTPError:
            pass
        time.sleep(0.005)
    return None


def measure(hiera, repo, work, n, node, key, nodes, args, anchor_rss):
    r = {"environments": n}
    codedir = make_fleet(repo, work, n)
    envs = ["production"] + ["env%03d" % i for i in range(1, n)]
    last = envs[-1]
    facts = os.path.join(repo, "facts")
    s = Server(hiera, codedir, facts, os.path.join(work, f"serve-{n}.log"))
    try:
        st, body = s.lookup(last, node, key)
        r["first_answer_s"] = time.time() - s.t0
        r["first_answer_env"] = last
        s.lookup("production", node, key)
        r["production_answer_s"] = time.time() - s.t0
        s.settle(nodes)
        r["rss_one_built_kb"] = s.rss()
        t0 = time.time()
        for e in envs:
            s.lookup(e, node, key)
        r["all_built_s"] = time.time() - t0
        h = s.settle(nodes)
        r["rss_all_built_kb"] = s.rss()
        r["memory"] = h["memory"]
        if anchor_rss:
            r["rss_ratio_to_one_env"] = r["rss_all_built_kb"] / anchor_rss
        # one-line changes, each until answered
        env = envs[len(envs) // 2]
        path = os.path.join(codedir, "environments", env, "data", "common.yaml")
        orig = open(path).read()
        try:
            rss_before = s.rss()
            times = []
            for i in range(5):
                one_line_change(path, 1000 + i)
                times.append(wait_value(s, env, node, "bench::probe", 1000 + i))
            r["change_visible_s"] = times
            s.settle(nodes)
            r["rss_before_reloads_kb"], r["rss_after_5_reloads_kb"] = rss_before, s.rss()
            first = None
            for i in range(args.reloads):
                one_line_change(path, 2000 + i)
                t = wait_value(s, env, node, "bench::probe", 2000 + i)
                if t is None:
                    r.setdefault("reload_misses", 0)
                    r["reload_misses"] += 1
                if i == 0:
                    s.settle(nodes)
                    first = s.rss()
            s.settle(nodes)
            r["rss_after_first_reload_kb"], r["rss_after_more_reloads_kb"] = first, s.rss()
            r["reloads"] = args.reloads
            # throughput against nginx, with a reload every second
            if not args.no_throughput:
                url = f"{s.base}/v1/lookup?node={node}&key={key}&environment={env}"
                answer = urllib.request.urlopen(url).read()
                www = os.path.join(work, "www")
                os.makedirs(www, exist_ok=True)
                with open(os.path.join(www, "answer.json"), "wb") as f:
                    f.write(answer)
                nport = free_port()
                ng = nginx_start(work, nport, root=www)
                try:
                    wrk(url, 2, args.connections)
                    ngx1 = wrk(f"http://127.0.0.1:{nport}/answer.json", args.duration, args.connections)
                    stop = threading.Event()
                    count = [0]

                    def churn():
                        while not stop.wait(1.0):
                            count[0] += 1
                            one_line_change(path, 5000 + count[0])
                    t = threading.Thread(target=churn)
                    t.start()
                    sv = wrk(url, args.duration, args.connections)
                    stop.set()
                    t.join()
                    ngx2 = wrk(f"http://127.0.0.1:{nport}/answer.json", args.duration, args.connections)
                finally:
                    ng.terminate()
                    ng.wait()
                nginx_rps = (ngx1["rps"] + ngx2["rps"]) / 2
                r["throughput"] = {"serve_rps": sv["rps"], "nginx_rps": nginx_rps, "ratio": sv["rps"] / nginx_rps,
                                   "p99_ms": sv["p99_ms"], "non_2xx": sv["non_2xx"], "socket_errors": sv["socket_errors"],
                                   "reloads": count[0]}
        finally:
            with open(path, "w") as f:
                f.write(orig)
        r["generation"] = s.healthz()["generation"]
    finally:
        s.stop()
    # --max-memory: a quarter of what the environments held
    if not args.no_evict and n > 1:
        held = r["memory"]["parse_bytes"] + r["memory"]["environment_bytes"]
        bound = max(held // 4, 1 << 20)
        cache = tempfile.mkdtemp(prefix="serve-scale-cache-", dir=work)
        s = Server(hiera, codedir, facts, os.path.join(work, f"serve-{n}-evict.log"), ["--max-memory", str(bound)],
                   cache_dir=cache)
        try:
            s.settle(nodes)
            for rnd in range(2):
                for e in envs:
                    s.lookup(e, node, key)
            time.sleep(2.5)
            metrics = urllib.request.urlopen(s.base + "/metrics").read().decode()
            ev = int(re.search(r"^hiera_environment_evictions_total (\d+)", metrics, re.M).group(1))
            h = s.healthz()
            t0 = time.time()
            s.lookup(envs[0], node, key)
            back = time.time() - t0
            r["max_memory"] = {"bound_bytes": bound, "rss_kb": s.rss(), "evictions": ev, "built_now": h["environments"]["built"],
                               "held_bytes": h["memory"]["parse_bytes"] + h["memory"]["environment_bytes"],
                               "answer_after_drop_s": back}
        finally:
            s.stop()
            shutil.rmtree(cache, ignore_errors=True)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hiera", default=os.path.join(TOP, "build", "hiera"))
    ap.add_argument("--repo", default=os.path.join(tempfile.gettempdir(), f"hiera-bench-{os.getuid()}"))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), f"hiera-serve-scale-{os.getuid()}"))
    ap.add_argument("--envs", default="101,500")
    ap.add_argument("--reloads", type=int, default=100)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--no-evict", action="store_true")
    ap.add_argument("--no-storm", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the trees made in --work")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not args.no_throughput:
        need([("wrk", "wrk"), ("nginx", "nginx-light")])
    hiera = os.path.abspath(args.hiera)
    repo = args.repo
    meta = serve_bench.bench_repo(repo)
    node, key, nodes = meta["node"], meta["merged_key"], meta["nodes"]
    os.makedirs(args.work, exist_ok=True)
    results = {"node": node, "key": key, "runs": []}
    try:
        anchor = measure(hiera, repo, args.work, 1, node, key, nodes,
                         argparse.Namespace(**{**vars(args), "reloads": 5, "no_throughput": True}), None)
        results["runs"].append(anchor)
        for n in [int(x) for x in args.envs.split(",") if x]:
            results["runs"].append(measure(hiera, repo, args.work, n, node, key, nodes, args, anchor["rss_all_built_kb"]))
        if not args.no_storm:
            p = subprocess.run([sys.executable, os.path.join(TOP, "tests", "serve", "storm.py"), "--hiera", hiera,
                                "--rounds", "3", "--deadline", "2"], capture_output=True, text=True)
            results["storm"] = {"ok": p.returncode == 0, "output": p.stdout[-2000:]}
    finally:
        if not args.keep:
            shutil.rmtree(args.work, ignore_errors=True)
    ok = lambda b: "met" if b else "NOT MET"
    a = results["runs"][0]
    print(f"one environment: first answer {a['first_answer_s']:.2f} s after start, RSS {a['rss_all_built_kb'] / 1024:.1f} MiB")
    for r in results["runs"][1:]:
        n = r["environments"]
        print(f"\n{n} environments:")
        print(f"  first answer ({r['first_answer_env']}) {r['first_answer_s']:.2f} s after start (production: "
              f"{r['production_answer_s']:.2f} s)  within 5 s: {ok(r['first_answer_s'] <= 5)}")
        print(f"  every environment built in {r['all_built_s']:.1f} s; RSS {r['rss_all_built_kb'] / 1024:.1f} MiB = "
              f"{r['rss_ratio_to_one_env']:.2f}x one environment  at most 3x: {ok(r['rss_ratio_to_one_env'] <= 3)}")
        mem = r["memory"]
        print(f"  held: {mem['parses']} parses, {mem['parse_bytes'] / 2**20:.1f} MiB; environments' own tables "
              f"{mem['environment_bytes'] / 2**20:.1f} MiB")
        ch = r["change_visible_s"]
        worst = max(t if t is not None else 1e9 for t in ch)
        print(f"  one-line change visible after " + ", ".join("%.2f" % t if t is not None else "never" for t in ch)
              + f" s  within 1.5 s: {ok(worst <= 1.5)}")
        g5 = r["rss_after_5_reloads_kb"] / r["rss_before_reloads_kb"] - 1
        print(f"  RSS before / after 5 reloads: {r['rss_before_reloads_kb'] / 1024:.1f} / {r['rss_after_5_reloads_kb'] / 1024:.1f}"
              f" MiB ({g5:+.1%})  within 15%: {ok(abs(g5) <= 0.15)}")
        g100 = r["rss_after_more_reloads_kb"] / r["rss_after_first_reload_kb"] - 1
        print(f"  RSS after the first / {r['reloads']} reloads: {r['rss_after_first_reload_kb'] / 1024:.1f} / "
              f"{r['rss_after_more_reloads_kb'] / 1024:.1f} MiB ({g100:+.1%})  within 10%: {ok(abs(g100) <= 0.10)}"
              + (f"  ({r['reload_misses']} reloads not seen within 30 s)" if r.get("reload_misses") else ""))
        if "throughput" in r:
            t = r["throughput"]
            print(f"  throughput with a reload every second ({t['reloads']} reloads): {t['serve_rps']:.0f} req/s vs nginx "
                  f"{t['nginx_rps']:.0f} = {t['ratio']:.0%}  at least 70%: {ok(t['ratio'] >= 0.7)}; p99 {t['p99_ms']:.2f} ms, "
                  f"{t['non_2xx']} non-2xx, {t['socket_errors']} socket errors")
        if "max_memory" in r:
            m = r["max_memory"]
            print(f"  --max-memory {m['bound_bytes'] / 2**20:.1f} MiB: {m['evictions']} environments dropped, {m['built_now']} "
                  f"built at the end, {m['held_bytes'] / 2**20:.1f} MiB held, RSS {m['rss_kb'] / 1024:.1f} MiB; an answer "
                  f"from a dropped one in {m['answer_after_drop_s']:.2f} s")
    if "storm" in results:
        print("\nwrite storms (tests/serve/storm.py --deadline 2): " + ("passed" if results["storm"]["ok"] else "FAILED"))
        print("  " + "\n  ".join(l for l in results["storm"]["output"].splitlines() if l.startswith(("storm", "FAIL"))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
