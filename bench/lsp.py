#!/usr/bin/env python3
"""bench/lsp.py - latency of `hiera lsp` (see bench/README.md), measured over its pipes with the
test client (tests/lsp/client.py).

    make && python3 bench/lsp.py [--keys 2000] [--nodes 50] [--rounds 20] [--json FILE]

Two workspaces, generated (bench/gen-repo.py --classes):
  large: a code directory of --keys keys over 8 levels, a module layer and classes (its
         common.yaml is about 1.6 lines per key);
  small: the same generator with 300 keys, its common.yaml grown to 2,000 lines.
For each: the time from a didChange (one line appended to the open common.yaml) to the
publishDiagnostics of that version (hiera check over the workspace with the unsaved text), and
the server's CPU time for it (from /proc: the machine is shared, so wall time includes waiting
for a core); hover on a deep-merged key for 1 and for 5 nodes; definition; completion. Medians
and 90th percentiles of --rounds each.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests/lsp"))
from client import Client  # noqa: E402


def cpu_seconds(pid):
    """The server's CPU time (every thread, user and system): the scheduler's nanoseconds on a CPU
    (/proc/PID/task/*/schedstat), else /proc/PID/stat's clock ticks (10 ms steps)."""
    try:
        total = 0
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def measure(hiera, root, nodes, key, rounds, label):
    facts = os.path.join(root, "facts")
    c = Client([hiera, "lsp"])
    c.initialize(root, {"node": nodes, "factsDir": facts})
    common = os.path.join(root, "environments/production/data/common.yaml")
    with open(common) as f:
        text = f.read()
    nlines = text.count("\n")
    u = c.open(common, text)
    t0 = time.monotonic()
    c.diagnostics(u, timeout=600)
    first = time.monotonic() - t0
    res = {"workspace": label, "lines": nlines, "nodes": len(nodes), "first_diagnostics_s": first}
    wall, cpu = [], []
    for i in range(rounds):
        since = len(c.notes)
        c0 = cpu_seconds(c.proc.pid)
        t0 = time.monotonic()
        v = c.change(u, "bench::added_%d: %d\n" % (i, i), ((nlines + i, 0), (nlines + i, 0)))
        c.diagnostics(u, v, timeout=600, since=since)
        wall.append(time.monotonic() - t0)
        cpu.append(cpu_seconds(c.proc.pid) - c0)
    res["diagnostics_ms"] = {"median": 1000 * statistics.median(wall), "p90": 1000 * pct(wall, 90),
                             "cpu_median": 1000 * statistics.median(cpu)}
    # the line of the key in common.yaml
    line = next(i for i, l in enumerate(text.split("\n")) if l.startswith(key + ":"))

    def timed(method, params, n=rounds):
        ts = []
        for _ in range(n):
            t0 = time.monotonic()
            c.request(method, params, timeout=600)
            ts.append(time.monotonic() - t0)
        return {"median": 1000 * statistics.median(ts), "p90": 1000 * pct(ts, 90)}

    res["hover_ms"] = timed("textDocument/hover", c.pos(u, line, 2))
    res["definition_ms"] = timed("textDocument/definition", c.pos(u, line, 2))
    res["completion_ms"] = timed("textDocument/completion", c.pos(u, nlines + rounds, 0))
    c.shutdown(60)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", default=os.path.join(TOP, "build/hiera"))
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-lsp-bench-")
    out = []
    try:
        for label, keys in (("large", a.keys), ("small", 300)):
            root = os.path.join(tmp, label)
            subprocess.run([sys.executable, os.path.join(HERE, "gen-repo.py"), "--out", root, "--nodes", str(a.nodes),
                            "--keys", str(keys), "--classes"], check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(root, "bench.json")) as f:
                meta = json.load(f)
            if label == "small":
                # common.yaml grown to 2,000 lines (keys no class has: check reports them)
                p = os.path.join(root, "environments/production/data/common.yaml")
                with open(p) as f:
                    n = f.read().count("\n")
                with open(p, "a") as f:
                    for i in range(max(0, 2000 - n)):
                        f.write("filler::key_%05d: value %d\n" % (i, i))
            names = sorted(x.rsplit(".", 1)[0] for x in os.listdir(os.path.join(root, "facts")))
            for nn in (1, 5):
                nodes = [meta["node"]] + [x for x in names if x != meta["node"]][:nn - 1]
                r = measure(hiera, root, nodes, meta["merged_key"], a.rounds, label)
                out.append(r)
                print("%-6s %5d lines %d node%s: diagnostics after a change %6.1f ms median (p90 %6.1f, server CPU %5.1f ms); "
                      "hover %6.1f ms; definition %6.1f ms; completion %6.1f ms (first diagnostics %.2f s)"
                      % (label, r["lines"], nn, "" if nn == 1 else "s", r["diagnostics_ms"]["median"],
                         r["diagnostics_ms"]["p90"], r["diagnostics_ms"]["cpu_median"], r["hover_ms"]["median"],
                         r["definition_ms"]["median"], r["completion_ms"]["median"], r["first_diagnostics_s"]))
                sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
