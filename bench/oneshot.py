#!/usr/bin/env python3
"""One-shot hiera against a bare process: bench/oneshot.py (see bench/README.md).

Times `hiera lookup` of the benchmark's merged key (warm disk cache) and the same lookup through
Hiera 3's command line (`hiera -c CONFIG -y FACTS -h KEY`) against /bin/true with hyperfine,
alternately: each round runs one hyperfine over /bin/true and both hiera commands for each binary
given (--hiera, and --before for a comparison), so load that comes and goes is shared by all;
then the same with HIERA_RESULT_CACHE=off (the "-nrc" rows: every call looked up again from the
data files' disk cache entries) and with the result cache's entries removed before each run (the
"-new" rows: the first call of a key, which looks its answer up and writes it), alternately too.
The CPU columns are hyperfine's user + system time (the median over the rounds of each round's
mean). Then counts system calls (strace), the shared objects loaded, peak RSS (GNU time) and, with
--batch, `hiera batch --jobs 1` over the whole fleet (CPU per lookup, peak RSS, and whether every
binary prints the same bytes)."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def need(prog, package):
    if not shutil.which(prog):
        sys.exit("oneshot: %s is needed (apt-get install %s)" % (prog, package))


def hiera3_config(repo, work):
    """A Hiera 3 configuration over the benchmark's environment data (the same files, the levels
    Hiera 3 can express with top-level facts)."""
    data = os.path.join(repo, "environments", "production", "data")
    path = os.path.join(work, "hiera3.yaml")
    with open(path, "w") as fh:
        fh.write(":backends:\n  - yaml\n  - json\n")
        fh.write(":yaml:\n  :datadir: %s\n:json:\n  :datadir: %s\n" % (data, data))
        fh.write(":hierarchy:\n")
        for level in ["nodes/%{::clientcert}", "role/%{::role}/%{::tier}", "role/%{::role}",
                      "dc/%{::datacenter}/network", "stage/%{::stage}", "common"]:
            fh.write('  - "%s"\n' % level)
    return path


def strace_count(cmd, env, work):
    out = os.path.join(work, "strace.txt")
    subprocess.run(["strace", "-f", "-o", out] + cmd, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    calls, sos, counts = 0, [], {}
    with open(out) as fh:
        for line in fh:
            m = re.match(r"(?:\d+\s+)?([a-z_0-9]+)\(", line)
            if not m:
                continue
            calls += 1
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
            so = re.search(r'openat\([^"]*"([^"]+\.so[^"]*)", [^)]*\) = \d', line)
            if so:
                sos.append(os.path.basename(so.group(1)))
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:6]
    return calls, sos, top


def peak_rss_kb(cmd, env):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hiera", default=os.path.join(HERE, "..", "build", "hiera"))
    ap.add_argument("--before", action="append", default=[], metavar="BINARY",
                    help="another hiera to time alongside (repeatable), e.g. main's build")
    ap.add_argument("--repo", default=os.path.join(tempfile.gettempdir(), "hiera-bench-%d" % os.getuid()))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30, help="runs of each command per round")
    ap.add_argument("--batch", action="store_true", help="also hiera batch --jobs 1 over the fleet")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    need("hyperfine", "hyperfine")
    need("strace", "strace")
    if not os.path.exists(os.path.join(args.repo, "bench.json")):
        subprocess.run([sys.executable, os.path.join(HERE, "gen-repo.py"), "--out", args.repo], check=True,
                       stdout=subprocess.DEVNULL)
    with open(os.path.join(args.repo, "bench.json")) as fh:
        meta = json.load(fh)
    repo = args.repo
    facts = os.path.join(repo, meta["facts"])
    work = tempfile.mkdtemp(prefix="hiera-oneshot-")
    try:
        h3 = hiera3_config(repo, work)
        # files changed in the last second or two are not trusted by the result cache: the
        # configuration just written would keep the first runs from being kept
        time.sleep(2.1)
        bins = [os.path.abspath(args.hiera)] + [os.path.abspath(b) for b in args.before]
        names = ["hiera"] + ["before%d" % (i + 1) if len(args.before) > 1 else "before"
                             for i in range(len(args.before))]
        base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"), "--hiera_config",
                os.path.join(repo, "hiera.yaml"), "--environment", "production"]

        def cmds(b):
            return {"lookup": [b, "lookup"] + base + ["--node", meta["node"], "--facts", facts, "--render-as", "json",
                                                      meta["merged_key"]],
                    "hiera3": [b, "-c", h3, "-y", facts, "-h", meta["merged_key"]]}

        envs, outputs = {}, {}
        for name, b in zip(names, bins):
            env = dict(os.environ)
            env["HIERA_CACHE_DIR"] = os.path.join(work, "cache-" + name)  # each binary its own disk cache
            envs[name] = env
            for what, cmd in cmds(b).items():
                r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # warms the cache
                if r.returncode:
                    sys.exit("oneshot: %s failed: %s" % (" ".join(cmd), r.stderr.decode(errors="replace")))
                outputs.setdefault(what, {})[name] = r.stdout
        for what, by in outputs.items():
            if len(set(by.values())) > 1:
                print("note: the binaries answer %s differently" % what)
        rows = ["true", "lookup", "hiera3", "lookup-nrc", "hiera3-nrc", "lookup-new", "hiera3-new"]

        def forget_answers(env):
            """find's arguments that remove the result cache's entries (a key not asked before)"""
            return ["find", env["HIERA_CACHE_DIR"], "-maxdepth", "1", "-name", "*.hr", "-delete"]
        times = {name: {r: [] for r in rows} for name in names}
        cpu = {name: {r: [] for r in rows} for name in names}  # (user + system) per round
        for rnd in range(args.rounds):
            for suffix, extra in (("", {}), ("-nrc", {"HIERA_RESULT_CACHE": "off"}), ("-new", {})):
                for name, b in zip(names, bins):
                    c = cmds(b)
                    out = os.path.join(work, "hf.json")
                    # -new: the result cache on, its entries removed before every run: the first call
                    # of a key, which looks up and writes its answer
                    prep = ["--prepare", " ".join(forget_answers(envs[name]))] if suffix == "-new" else []
                    subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(args.runs)] + prep + ["--export-json",
                                    out, "-n", "true", "/bin/true", "-n", "lookup" + suffix, " ".join(c["lookup"]),
                                    "-n", "hiera3" + suffix, " ".join(c["hiera3"])],
                                   env=dict(envs[name], **extra), check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                    with open(out) as fh:
                        for res in json.load(fh)["results"]:
                            times[name][res["command"]] += res["times"]
                            cpu[name][res["command"]].append(res["user"] + res["system"])
            print("round %d/%d done" % (rnd + 1, args.rounds), file=sys.stderr)
        report = {"repo": repo, "key": meta["merged_key"], "rounds": args.rounds, "runs": args.runs,
                  "load": os.getloadavg(), "binaries": {}}
        print("load average %.2f %.2f %.2f; %d rounds x %d runs each, alternately" %
              (os.getloadavg() + (args.rounds, args.runs)))
        print("%-8s %-10s %10s %10s %8s %9s %8s %9s %8s %s" % ("binary", "command", "median", "mean", "x true",
                                                              "CPU", "x true", "syscalls", "peak KB", "shared objects"))
        for name, b in zip(names, bins):
            t = times[name]
            true_med = statistics.median(t["true"])
            true_cpu = statistics.median(cpu[name]["true"])
            entry = {"path": b, "true_median_s": true_med, "true_cpu_s": true_cpu}
            print("%-8s %-10s %8.2f ms %8.2f ms %8s %6.2f ms %8s" % (name, "true", true_med * 1e3,
                                                                  statistics.mean(t["true"]) * 1e3, "1.00",
                                                                  true_cpu * 1e3, "1.00"))
            for what in rows[1:]:
                cmd = cmds(b)[what.replace("-nrc", "").replace("-new", "")]
                env = dict(envs[name], **({"HIERA_RESULT_CACHE": "off"} if what.endswith("-nrc") else {}))
                if what.endswith("-new"):
                    subprocess.run(forget_answers(envs[name]), check=True)
                elif not what.endswith("-nrc"):
                    # the -new rows' runs removed the kept answers: kept again, so that the counts
                    # below are those of a remembered answer
                    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                med = statistics.median(t[what])
                c = statistics.median(cpu[name][what])
                calls, sos, top = strace_count(cmd, env, work)
                if what.endswith("-new"):
                    subprocess.run(forget_answers(envs[name]), check=True)
                rss = peak_rss_kb(cmd, env)
                entry[what] = {"median_s": med, "mean_s": statistics.mean(t[what]), "ratio": med / true_med,
                               "cpu_s": c, "cpu_ratio": c / true_cpu, "syscalls": calls, "shared_objects": sos,
                               "top_syscalls": top, "peak_rss_kb": rss}
                print("%-8s %-10s %8.2f ms %8.2f ms %8.2f %6.2f ms %8.2f %9d %8d %s" % (
                    name, what, med * 1e3, statistics.mean(t[what]) * 1e3, med / true_med, c * 1e3, c / true_cpu,
                    calls, rss, " ".join(sos)))
            report["binaries"][name] = entry
        if args.batch:
            keys = os.path.join(repo, "keys-batch.txt")
            digests = {}
            for name, b in zip(names, bins):
                cmd = [b, "batch", "--jobs", "1"] + base + ["--facts-dir", os.path.join(repo, "facts"),
                                                             "--keys-file", keys]
                subprocess.run(cmd, env=envs[name], stdout=subprocess.DEVNULL, check=True)  # warms the cache
                cpus, out = [], os.path.join(work, "batch-" + name)
                for _ in range(3):
                    with open(out, "wb") as fh:
                        before = os.times()
                        subprocess.run(cmd, env=envs[name], stdout=fh, check=True)
                        after = os.times()
                    cpus.append(after.children_user - before.children_user + after.children_system -
                                before.children_system)
                with open(out, "rb") as fh:
                    digests[name] = hash(fh.read())
                rss = peak_rss_kb(cmd, envs[name])
                lookups = meta["nodes"] * meta["batch_keys"]
                cpu = statistics.median(cpus)
                report["binaries"][name]["batch"] = {"cpu_s": cpu, "per_lookup_us": cpu / lookups * 1e6,
                                                     "peak_rss_kb": rss}
                print("%-8s batch --jobs 1: %.3f s CPU (median of 3), %.3f us per lookup, peak %d KB" %
                      (name, cpu, cpu / lookups * 1e6, rss))
            if len(set(digests.values())) > 1:
                print("batch output DIFFERS between the binaries")
            elif len(digests) > 1:
                print("batch output byte-identical across the binaries")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1)
    finally:
        shutil.rmtree(work, True)


if __name__ == "__main__":
    main()
