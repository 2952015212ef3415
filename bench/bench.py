#!/usr/bin/env python3
"""The benchmark behind bench/run.sh: hiera (this project) against Puppet 7's own lookup on a
generated control repository (bench/gen-repo.py). See bench/README.md for what each line means.

usage: bench/run.sh [--quick] [--hiera build/hiera] [--repo DIR] [--regen] [--no-puppet]
                    [--nodes 2000] [--keys 2000] [--batch-keys 200] [--json FILE]

Times are measured around each process (spawn to exit) with time.perf_counter; CPU time and
peak RSS come from wait4()'s rusage of that process (what /usr/bin/time -v reports).
"""
import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Run:
    """One finished process: wall seconds, CPU seconds (user+sys, waited children included),
    peak RSS in KiB, exit status, and where its stdout went."""

    def __init__(self, wall, cpu, rss, status, out):
        self.wall, self.cpu, self.rss, self.status, self.out = wall, cpu, rss, status, out


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def measure(cmd, out_path, cwd=None, rss=False):
    """Runs cmd with stdout to out_path and stderr to out_path + '.err'. With rss, the process is
    run under /usr/bin/time (GNU time) for its peak RSS: the rusage of a child spawned from this
    Python process would count Python's own RSS, which a process keeps across exec."""
    if rss and TIME:
        cmd = [TIME, "-f", "%M", "-o", out_path + ".rss"] + cmd
    with open(out_path, "wb") as o, open(out_path + ".err", "wb") as e:
        t0 = time.perf_counter()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ,
                              file_actions=[(os.POSIX_SPAWN_DUP2, o.fileno(), 1),
                                            (os.POSIX_SPAWN_DUP2, e.fileno(), 2)])
        _, status, ru = os.wait4(pid, 0)
        t1 = time.perf_counter()
    maxrss = ru.ru_maxrss
    if rss and TIME:
        with open(out_path + ".rss") as fh:
            maxrss = int(fh.read().split()[-1])
    return Run(t1 - t0, ru.ru_utime + ru.ru_stime, maxrss, os.waitstatus_to_exitcode(status), out_path)


def repeat(cmd, n, out_path, ok=(0,)):
    """n timed runs, then one more under /usr/bin/time whose peak RSS is put on every run."""
    runs = []
    for i in range(n + 1):
        r = measure(cmd, out_path, rss=(i == n))
        if r.status not in ok:
            with open(out_path + ".err", "rb") as fh:
                err = fh.read().decode("utf-8", "replace")[-2000:]
            sys.exit("bench: %s exited with %d:\n%s" % (" ".join(cmd[:3]), r.status, err))
        runs.append(r)
    for r in runs[:-1]:
        r.rss = runs[-1].rss
    return runs[:-1]


def med(runs, attr):
    return statistics.median(getattr(r, attr) for r in runs)


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return "%.2f ms" % (s * 1e3)
    return "%.2f us" % (s * 1e6)


def fmt_rss(kb):
    return "-" if kb is None else "%.1f MiB" % (kb / 1024)


def ratio(a, b):
    """How many times b is a (b / a), as text."""
    if a is None or b is None or a <= 0:
        return "-"
    return "%.0fx" % (b / a) if b / a >= 10 else "%.1fx" % (b / a)


def read_keys(path):
    with open(path) as fh:
        return [l.strip() for l in fh if l.strip() and not l.strip().startswith("#")]


def progress(msg):
    print("... " + msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description="hiera vs puppet lookup benchmark")
    ap.add_argument("--hiera", default=os.path.join(ROOT, "build", "hiera"))
    ap.add_argument("--repo", default=os.path.join(tempfile.gettempdir(), "hiera-bench-%d" % os.getuid()))
    ap.add_argument("--regen", action="store_true", help="generate the repository even if it exists")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    ap.add_argument("--no-puppet", action="store_true", help="measure hiera only")
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--batch-keys", type=int, default=200)
    ap.add_argument("--passes", type=int, default=None, help="passes over the keys in the puppet apply manifest")
    ap.add_argument("--json", help="also write the measurements here")
    args = ap.parse_args()

    hiera = os.path.abspath(args.hiera)
    if not os.access(hiera, os.X_OK):
        sys.exit("bench: %s not found: run `make` first (or give --hiera)" % hiera)
    if subprocess.run([hiera, "batch", "--help"], capture_output=True).returncode != 0:
        sys.exit("bench: %s has no `batch` command" % hiera)
    puppet = None if args.no_puppet else shutil.which("puppet")
    quick = args.quick
    n_oneshot_h = 10 if quick else 30
    n_oneshot_p = 3 if quick else 5
    n_batch = 1 if quick else 3
    n_apply = 1 if quick else 5
    # (the lookups' share of a puppet apply is its CPU time minus that of the empty manifest,
    # two ~1.3 s processes that each vary by a few hundredths: with 5 passes the difference was
    # about 0.2 s and Puppet's time per lookup moved by a third between runs; 30 passes make it
    # about 1.4 s)
    passes = args.passes or (3 if quick else 30)
    if passes < 2:
        ap.error("--passes must be at least 2")

    # ---- the repository
    repo = os.path.abspath(args.repo)
    meta_path = os.path.join(repo, "bench.json")
    want = {"nodes": args.nodes, "keys": args.keys, "batch_keys": args.batch_keys}
    meta = None
    if os.path.exists(meta_path) and not args.regen:
        with open(meta_path) as fh:
            meta = json.load(fh)
        if any(meta.get(k) != v for k, v in want.items()):
            meta = None
    if meta is None:
        progress("generating the control repository in %s" % repo)
        if os.path.exists(repo):
            shutil.rmtree(repo)
        subprocess.run([sys.executable, os.path.join(HERE, "gen-repo.py"), "--out", repo, "--nodes", str(args.nodes),
                        "--keys", str(args.keys), "--batch-keys", str(args.batch_keys)], check=True,
                       stdout=subprocess.DEVNULL)
        with open(meta_path) as fh:
            meta = json.load(fh)
    node, facts, mkey = meta["node"], os.path.join(repo, meta["facts"]), meta["merged_key"]
    keys_file = os.path.join(repo, "keys-batch.txt")
    keys = read_keys(keys_file)
    work = tempfile.mkdtemp(prefix="hiera-bench-run-")
    atexit.register(shutil.rmtree, work, True)
    base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
            "--hiera_config", os.path.join(repo, "hiera.yaml"), "--environment", "production"]
    one = base + ["--node", node, "--facts", facts, "--render-as", "json", mkey]
    res = {"repo": repo, "node": node, "merged_key": mkey, "nodes": meta["nodes"], "keys": meta["keys"],
           "batch_keys": len(keys), "quick": quick}

    # ---- hiera
    progress("hiera lookup x%d" % n_oneshot_h)
    h1 = repeat([hiera, "lookup"] + one, n_oneshot_h, os.path.join(work, "h1"))
    with open(os.path.join(work, "h1"), "rb") as fh:
        h1_value = fh.read()
    progress("hiera batch, 1 node x %d keys" % len(keys))
    hb1 = repeat([hiera, "batch"] + base + ["--facts", facts, "--keys-file", keys_file], n_oneshot_h,
                 os.path.join(work, "hb1"))
    hb0 = repeat([hiera, "batch"] + base + ["--facts", facts, mkey], n_oneshot_h, os.path.join(work, "hb0"))
    progress("hiera batch, %d nodes x %d keys x%d" % (meta["nodes"], len(keys), n_batch))
    hb = repeat([hiera, "batch"] + base + ["--facts-dir", os.path.join(repo, "facts"), "--keys-file", keys_file],
                n_batch, os.path.join(work, "hb"))
    progress("hiera batch --jobs 1, %d nodes x %d keys x%d" % (meta["nodes"], len(keys), n_batch))
    j1_cmd = [hiera, "batch", "--jobs", "1"] + base + ["--facts-dir", os.path.join(repo, "facts"), "--keys-file",
                                                       keys_file]
    hbj1 = repeat(j1_cmd, n_batch, os.path.join(work, "hbj1"))
    # the same nodes with one key that no file holds: what the run costs besides the lookups
    # (facts read, contexts made, hierarchies expanded, node files parsed), as Puppet's figure
    # leaves out its empty manifest
    j0_cmd = [hiera, "batch", "--jobs", "1"] + base + ["--facts-dir", os.path.join(repo, "facts"), "bench::no_such_key"]
    hbj0 = repeat(j0_cmd, n_batch, os.path.join(work, "hbj0"))
    with open(os.path.join(work, "hb")) as fh:
        doc = json.load(fh)
    n_lookups = meta["nodes"] * len(keys)
    found_all = sum(len(v) for n, v in doc.items() if n != ".errors")
    found_node = len(doc.get(node, {}))
    res["hiera"] = {
        "oneshot_wall": med(h1, "wall"), "oneshot_cpu": med(h1, "cpu"), "oneshot_rss_kb": med(h1, "rss"),
        "batch1_wall": med(hb1, "wall"), "batch1_cpu": med(hb1, "cpu"), "batch0_wall": med(hb0, "wall"),
        "batch0_cpu": med(hb0, "cpu"),
        "batch_wall": med(hb, "wall"), "batch_cpu": med(hb, "cpu"), "batch_rss_kb": max(r.rss for r in hb),
        "lookups": n_lookups, "found": found_all, "errors": len(doc.get(".errors", {})),
    }
    H = res["hiera"]
    H["per_lookup_cpu_workers"] = H["batch_cpu"] / n_lookups
    H["per_lookup_wall"] = H["batch_wall"] / n_lookups
    H["node_first_cpu"] = max(H["batch1_cpu"] - H["batch0_cpu"], 0) / max(len(keys) - 1, 1)

    # ---- puppet
    P = None
    if puppet:
        progress("puppet lookup x%d" % n_oneshot_p)
        p1 = repeat([puppet, "lookup"] + one, n_oneshot_p, os.path.join(work, "p1"))
        with open(os.path.join(work, "p1"), "rb") as fh:
            p1_value = fh.read()
        # puppet apply: the node's facts through the json facts terminus, in a private vardir
        vardir = os.path.join(work, "vardir")
        os.makedirs(os.path.join(vardir, "client_data", "facts"))
        conv = subprocess.run(["ruby", "-ryaml", "-rjson", "-e",
                               "puts JSON.generate({'name' => ARGV[1], 'values' => YAML.safe_load(File.read(ARGV[0]))})",
                               facts, node], capture_output=True, check=True)
        with open(os.path.join(vardir, "client_data", "facts", node + ".json"), "wb") as fh:
            fh.write(conv.stdout)
        keys_pp = "$keys = [%s]\n" % ", ".join("'%s'" % k for k in keys)
        lookup_each = ("$keys.each |$k| { $v = lookup($k, {'default_value' => undef}) }\n")
        manifests = {
            "empty": keys_pp,
            "one": keys_pp + "$found = $keys.filter |$k| { lookup($k, {'default_value' => undef}) != undef }\n"
                   "notice(\"found ${found.length}\")\n",
            "many": keys_pp + "$found = $keys.filter |$k| { lookup($k, {'default_value' => undef}) != undef }\n"
                    "Integer[2, %d].each |$p| {\n  %s}\nnotice(\"found ${found.length}\")\n" % (passes, lookup_each),
        }
        apply_base = [puppet, "apply"] + base + ["--certname", node, "--facts_terminus", "json", "--vardir", vardir,
                                                 "--confdir", os.path.join(work, "confdir"), "--logdir",
                                                 os.path.join(work, "log"), "--rundir", os.path.join(work, "run"),
                                                 "--noop", "--color", "false"]
        apply = {}
        for name, text in manifests.items():
            path = os.path.join(work, name + ".pp")
            with open(path, "w") as fh:
                fh.write(text)
        # interleaved repetitions, so that a slow moment of the machine hits every variant, hiera's
        # in-process runs included: the verdict compares hiera's `--jobs 1` figure with Puppet's,
        # and this machine's speed moves by a third within minutes
        for i in range(n_apply):
            for name in manifests:
                progress("puppet apply %s (%d/%d)" % (name, i + 1, n_apply))
                out = os.path.join(work, "pa-" + name)
                r = measure(apply_base + [os.path.join(work, name + ".pp")], out, rss=True)
                if r.status != 0:
                    with open(out + ".err", "rb") as fh:
                        sys.exit("bench: puppet apply failed:\n" + fh.read().decode("utf-8", "replace")[-2000:])
                apply.setdefault(name, []).append(r)
                progress("hiera batch --jobs 1 beside it (%d/%d)" % (i + 1, n_apply))
                hbj1 += repeat(j1_cmd, 1, os.path.join(work, "hbj1"))
                hbj0 += repeat(j0_cmd, 1, os.path.join(work, "hbj0"))
        with open(os.path.join(work, "pa-one")) as fh:
            notice = fh.read()
        p_found = int(notice.split("found ", 1)[1].split()[0]) if "found " in notice else None
        e_cpu, o_cpu, m_cpu = (med(apply[n], "cpu") for n in ("empty", "one", "many"))
        e_wall, o_wall, m_wall = (med(apply[n], "wall") for n in ("empty", "one", "many"))
        P = res["puppet"] = {
            "oneshot_wall": med(p1, "wall"), "oneshot_cpu": med(p1, "cpu"), "oneshot_rss_kb": med(p1, "rss"),
            "apply_empty_cpu": e_cpu, "apply_one_cpu": o_cpu, "apply_many_cpu": m_cpu,
            "apply_empty_wall": e_wall, "apply_one_wall": o_wall, "apply_many_wall": m_wall,
            "apply_rss_kb": max(r.rss for r in apply["many"]), "passes": passes, "found": p_found,
            "same_value": p1_value == h1_value,
        }
        P["node_first_cpu"] = max(o_cpu - e_cpu, 0) / len(keys)
        P["per_lookup_cpu"] = max(m_cpu - e_cpu, 0) / (len(keys) * passes)
        P["warm_cpu"] = max(m_cpu - o_cpu, 0) / (len(keys) * (passes - 1)) if passes > 1 else None

    # hiera's in-process figures: its runs beside Puppet's included
    H["batch_j1_cpu"], H["batch_j0_cpu"], H["batch_j1_runs"] = med(hbj1, "cpu"), med(hbj0, "cpu"), len(hbj1)
    H["per_lookup_cpu"] = H["batch_j1_cpu"] / n_lookups  # one process: comparable with Puppet's one thread
    H["per_lookup_cpu_only"] = max(H["batch_j1_cpu"] - H["batch_j0_cpu"], 0) / n_lookups

    # ---- the table
    rows = []

    def row(label, h, p, r="", target=""):
        rows.append((label, h, p, r, target))

    def verdict(ok):
        return "met" if ok else "NOT met"

    Hn = "%dx%d" % (meta["nodes"], len(keys))
    row("one-shot lookup, wall (median)", fmt_time(H["oneshot_wall"]),
        fmt_time(P and P["oneshot_wall"]), ratio(H["oneshot_wall"], P and P["oneshot_wall"]),
        P and ">= 300x: " + verdict(P["oneshot_wall"] / H["oneshot_wall"] >= 300) or ">= 300x")
    row("one-shot lookup, CPU (median)", fmt_time(H["oneshot_cpu"]), fmt_time(P and P["oneshot_cpu"]),
        ratio(H["oneshot_cpu"], P and P["oneshot_cpu"]))
    row("one-shot peak RSS", fmt_rss(H["oneshot_rss_kb"]), fmt_rss(P and P["oneshot_rss_kb"]),
        ratio(H["oneshot_rss_kb"], P and P["oneshot_rss_kb"]),
        P and "< 1/10: " + verdict(H["oneshot_rss_kb"] * 10 < P["oneshot_rss_kb"]) or "< 1/10")
    row("per lookup in process, CPU (1 process)", fmt_time(H["per_lookup_cpu"]), fmt_time(P and P["per_lookup_cpu"]),
        ratio(H["per_lookup_cpu"], P and P["per_lookup_cpu"]),
        P and ">= 300x: " + verdict(P["per_lookup_cpu"] / H["per_lookup_cpu"] >= 300) or ">= 300x")
    row("  CPU, lookups only (minus nodes x 1 missing key)", fmt_time(H["per_lookup_cpu_only"]),
        fmt_time(P and P["per_lookup_cpu"]), ratio(H["per_lookup_cpu_only"], P and P["per_lookup_cpu"]))
    row("  CPU, default workers (all of them)", fmt_time(H["per_lookup_cpu_workers"]), fmt_time(P and P["per_lookup_cpu"]),
        ratio(H["per_lookup_cpu_workers"], P and P["per_lookup_cpu"]))
    row("  wall, default workers", fmt_time(H["per_lookup_wall"]), fmt_time(P and P["per_lookup_cpu"]),
        ratio(H["per_lookup_wall"], P and P["per_lookup_cpu"]))
    row("  cold: first %d lookups of a node" % len(keys), fmt_time(H["node_first_cpu"]),
        fmt_time(P and P["node_first_cpu"]), ratio(H["node_first_cpu"], P and P["node_first_cpu"]))
    row("  warm: later lookups", fmt_time(H["per_lookup_cpu"]), fmt_time(P and P["warm_cpu"]),
        ratio(H["per_lookup_cpu"], P and P["warm_cpu"]))
    row("fleet %s, wall" % Hn, fmt_time(H["batch_wall"]), "", "", "well under 1 s: " + verdict(H["batch_wall"] < 1.0))
    row("fleet %s, CPU (puppet: estimate)" % Hn, fmt_time(H["batch_cpu"]),
        fmt_time(P and P["per_lookup_cpu"] * n_lookups), ratio(H["batch_cpu"], P and P["per_lookup_cpu"] * n_lookups))
    row("peak RSS: batch fleet / apply 1 node", fmt_rss(H["batch_rss_kb"]), fmt_rss(P and P["apply_rss_kb"]),
        ratio(H["batch_rss_kb"], P and P["apply_rss_kb"]))
    row("hiera batch 1 node x 1 / x %d keys, wall" % len(keys),
        "%s / %s" % (fmt_time(H["batch0_wall"]), fmt_time(H["batch1_wall"])), "", "")
    w = [max(len(r[i]) for r in rows + [("", "hiera", "puppet", "puppet/hiera", "target")]) for i in range(5)]
    print()
    print("hiera %s vs %s on %s: %d nodes, %d keys, %s" % (
        hiera, "Puppet " + subprocess.run([puppet, "--version"], capture_output=True, text=True).stdout.strip() if puppet
        else "(no Puppet: hiera only)", repo, meta["nodes"], meta["keys"], "quick" if quick else "full run"))
    print("one-shot: %s for %s; in process: %d keys, hiera --jobs 1 median of %d runs; puppet apply: %d passes; "
          "load average %.1f" % (mkey, node, len(keys), H["batch_j1_runs"], passes, os.getloadavg()[0]))
    print()
    head = ("", "hiera", "puppet", "puppet/hiera", "target")
    print("  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(head)).rstrip())
    print("  ".join("-" * w[i] for i in range(5)))
    for r in rows:
        print("  ".join(c.ljust(w[i]) if i in (0, 4) else c.rjust(w[i]) for i, c in enumerate(r)).rstrip())
    print()
    print("hiera batch: %d lookups, %d values found, %d nodes with errors; %s wall, %s CPU" % (
        n_lookups, found_all, H["errors"], fmt_time(H["batch_wall"]), fmt_time(H["batch_cpu"])))
    if P:
        print("puppet apply (CPU): empty %s, 1 pass %s, %d passes %s; wall: %s, %s, %s" % (
            fmt_time(P["apply_empty_cpu"]), fmt_time(P["apply_one_cpu"]), passes, fmt_time(P["apply_many_cpu"]),
            fmt_time(P["apply_empty_wall"]), fmt_time(P["apply_one_wall"]), fmt_time(P["apply_many_wall"])))
        print("same answers: one-shot value %s; keys found for %s: hiera %d, puppet %s" % (
            "identical" if P["same_value"] else "DIFFERENT", node, found_node, P["found"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
