#!/usr/bin/env python3
"""Lookups per second from Python: the hiera module in-process (one Hiera object, the keys of
keys-batch.txt for a few nodes, each node's facts from its file) against forking `hiera lookup`
per key and forking `puppet lookup` per key (Puppet 7, when on the PATH), on the benchmark's
generated repository (bench/gen-repo.py). Every figure is measured in the same run, so the ratios
(against forking `hiera lookup`) hold on a loaded machine; the absolute figures do not.

usage: PYTHONPATH=build/python bench/python.py [--hiera build/hiera] [--repo DIR] [--nodes 20]
       [--forks 40] [--puppet-forks 5] [--threads 4]
Prints a table; --json FILE writes the figures.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", default=os.path.join(HERE, "..", "build", "hiera"))
    ap.add_argument("--repo")
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--forks", type=int, default=40)
    ap.add_argument("--puppet-forks", type=int, default=5)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import hiera
    repo = a.repo or os.path.join(tempfile.gettempdir(), f"hiera-bench-python-{os.getuid()}")
    if not os.path.exists(os.path.join(repo, "bench.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-repo.py"), "--out", repo, "--nodes", "200",
                        "--keys", "2000"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(repo, "keys-batch.txt")) as f:
        keys = [k.strip() for k in f if k.strip() and not k.startswith("#")]
    nodes = sorted(n[:-5] for n in os.listdir(os.path.join(repo, "facts")) if n.endswith(".yaml"))[:a.nodes]
    conf = tempfile.mkdtemp(prefix="hiera-bench-python-conf-")
    os.environ["HIERA_CACHE_DIR"] = os.path.join(conf, "cache")
    common = dict(codedir=repo, environmentpath=os.path.join(repo, "environments"), confdir=conf)
    cli = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"), "--confdir", conf]
    res = {}
    try:
        # in-process, one thread: the first pass parses (not counted), the second is timed
        h = hiera.Hiera(**common)
        def one_pass(h, nodes):
            n = 0
            for node in nodes:
                facts = os.path.join(repo, "facts", node + ".yaml")
                for k in keys:
                    try:
                        h.lookup(k, node=node, facts=facts)
                    except hiera.Error:
                        pass
                    n += 1
            return n
        one_pass(h, nodes[:1])
        t0 = time.perf_counter()
        n = one_pass(h, nodes)
        res["module"] = n / (time.perf_counter() - t0)
        # in-process, threads sharing the object (the GIL released during lookups)
        parts = [nodes[i::a.threads] for i in range(a.threads)]
        counts = [0] * a.threads
        def work(i):
            counts[i] = one_pass(h, parts[i])
        t0 = time.perf_counter()
        ts = [threading.Thread(target=work, args=(i,)) for i in range(a.threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        res[f"module_{a.threads}_threads"] = sum(counts) / (time.perf_counter() - t0)
        # forking hiera lookup, a different key each time (the result cache cannot answer)
        def forks(cmd_for, count):
            t0 = time.perf_counter()
            for i in range(count):
                node = nodes[i % len(nodes)]
                subprocess.run(cmd_for(node, keys[i % len(keys)]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return count / (time.perf_counter() - t0)
        res["fork_hiera"] = forks(lambda node, k: [a.hiera, "lookup", *cli, "--node", node, "--facts",
                                                   os.path.join(repo, "facts", node + ".yaml"), k], a.forks)
        if shutil.which("puppet") and a.puppet_forks:
            res["fork_puppet"] = forks(lambda node, k: ["puppet", "lookup", *cli, "--node", node, "--facts",
                                                        os.path.join(repo, "facts", node + ".yaml"), k], a.puppet_forks)
    finally:
        shutil.rmtree(conf, ignore_errors=True)
    base = res["fork_hiera"]
    print(f"{len(keys)} keys x {len(nodes)} nodes ({repo}); the machine may be shared: compare the ratios")
    print(f"{'':32} {'lookups/s':>12} {'x forking hiera':>16}")
    for name, label in (("module", "hiera module, 1 thread"), (f"module_{a.threads}_threads", f"hiera module, {a.threads} threads"),
                        ("fork_hiera", "forking hiera lookup"), ("fork_puppet", "forking puppet lookup")):
        if name in res:
            print(f"{label:32} {res[name]:12.1f} {res[name] / base:16.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
