#!/usr/bin/env python3
"""Asks a reference Puppet the questions of conformance cases (../shared/conformance's format:
case.yaml, expected.json) and writes copies of the cases with that Puppet's answers, so that the
conformance runner can check hiera against another Puppet than the one the cases were recorded
with (the held-out checks run it with HIERA_PUPPET_VERSION=8 against Puppet 8.10's answers).

usage: record-conformance.py --puppet-version 7|8 --out DIR [--keep] CASEDIR...
  Each CASEDIR is copied to DIR/<name> with an expected.json of the chosen Puppet's answers
  (Puppet 7: the installed one, `apt-get install puppet`; Puppet 8: the Debian 13 root of
  ../shared/tools/puppet8, through tests/tools/in-puppet8-root). Hiera 3 cases are asked of the
  Hiera 3 `hiera` command installed beside that Puppet (3.10 or 3.12).
  The calls are those of the conformance runner (its header spells them out); the answers are
  tests/tools/puppet-record.rb's, one Puppet process per case and set of flags.
Prints, per case, how many answers differ from the case's own expected.json; exit status 0.
"""
import argparse, json, os, shutil, subprocess, sys, yaml

HERE = os.path.dirname(os.path.abspath(__file__))


def runner_prefix(version):
    return [os.path.join(HERE, "in-puppet8-root")] if version == 8 else []


DEEP_ONLY = ("knockout_prefix", "sort_merged_arrays", "merge_hash_arrays")


def refused_by_the_application(q):
    """what `puppet lookup` itself refuses before any lookup (puppet-record.rb asks the lookup
    API, which has no such check): deep merge options with another strategy"""
    m = q.get("merge")
    strategy = m.get("strategy") if isinstance(m, dict) else m
    if strategy is not None and strategy not in ("first", "unique", "hash", "deep"):
        return {"error": True, "message": "Error: Could not run: The --merge option only accepts 'first', 'hash', "
                "'unique', or 'deep'"}
    if isinstance(m, dict) and m.get("strategy") != "deep" and any(m.get(k) for k in DEEP_ONLY):
        return {"error": True, "message": "Error: Could not run: The options --knock-out-prefix, "
                "--sort-merged-arrays, and --merge-hash-arrays are only available with '--merge deep'"}
    return None


def puppet_answers(case, spec, version):
    groups = {}
    answers = [None] * len(spec["queries"])
    for i, q in enumerate(spec["queries"]):
        answers[i] = refused_by_the_application(q)
        if answers[i]:
            continue
        flags = ["--codedir", case, "--environmentpath", os.path.join(case, "environments"),
                 "--hiera_config", os.path.join(case, "hiera.yaml"),
                 "--environment", spec.get("environment", "production"),
                 "--node", spec.get("node", "node1.example.com"), "--facts", os.path.join(case, "facts.yaml")]
        groups.setdefault(tuple(flags), []).append(i)
    for flags, idx in groups.items():
        qfile = os.path.join(case, ".queries.json")
        with open(qfile, "w") as f:
            json.dump([spec["queries"][i] for i in idx], f)
        cmd = runner_prefix(version) + ["ruby", os.path.join(HERE, "puppet-record.rb"), qfile] + list(flags)
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True)
        os.unlink(qfile)
        lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
        if p.returncode != 0 or not lines:
            # `puppet lookup` itself stops before any lookup (no such environment: an uncaught
            # exception): exit 1 with the trace on stderr, which the runner reads as not found
            # for a value and as an error for an explanation
            if p.returncode == 0 or not p.stderr.strip():
                sys.exit(f"{case}: the reference failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
            for i in idx:
                answers[i] = {"error": True, "message": p.stderr.strip().replace(case, "<CASE>")} \
                    if spec["queries"][i].get("explain") else {"not_found": True}
            continue
        for i, a in zip(idx, json.loads(lines[-1])):
            answers[i] = conformance_answer(a, case)
    return answers


def conformance_answer(a, case):
    if "value" in a:
        return {"value": a["value"]}
    if "not_found" in a or "lookup_error" in a:
        # `puppet lookup` exits 1 without a word for both: the runner's "not found"
        return {"not_found": True}
    if "output" in a:
        return {"explain": a["output"].replace(case, "<CASE>")}
    return {"error": True, "message": a.get("message", "").replace(case, "<CASE>")}


def hiera3_answers(case, spec, version):
    answers = []
    for q in spec["queries"]:
        cmd = runner_prefix(version) + ["hiera", "-c", os.path.join(case, "hiera.yaml"), "-f", "json"]
        cmd += {"array": ["-a"], "hash": ["-h"]}.get(q.get("resolution", "priority"), [])
        cmd.append(q["key"])
        if "default" in q:
            cmd.append(str(q["default"]))
        for k, v in (q.get("scope") or spec.get("scope") or {}).items():
            cmd.append(f"{k}={v}")
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True)
        if p.returncode != 0:
            answers.append({"error": True, "message": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""})
        else:
            answers.append({"value": json.loads(p.stdout)})
    return answers


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--puppet-version", type=int, choices=(7, 8), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", action="store_true", help="leave the cases already recorded in --out as they are")
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    total = differ = 0
    for src in a.cases:
        src = os.path.abspath(src)
        name = os.path.basename(src.rstrip("/"))
        case = os.path.join(os.path.abspath(a.out), name)
        if a.keep and os.path.exists(os.path.join(case, ".recorded")):
            continue
        if os.path.exists(case):
            shutil.rmtree(case)
        shutil.copytree(src, case, symlinks=True)
        spec = yaml.safe_load(open(os.path.join(case, "case.yaml")))
        old = json.load(open(os.path.join(case, "expected.json")))
        new = (hiera3_answers if spec.get("engine") == "hiera3" else puppet_answers)(case, spec, a.puppet_version)
        with open(os.path.join(case, "expected.json"), "w") as f:
            json.dump(new, f, indent=1, ensure_ascii=False)
            f.write("\n")
        open(os.path.join(case, ".recorded"), "w").close()
        # messages are not compared by the runner: neither here
        n = sum(1 for x, y in zip(old, new) if {k: v for k, v in x.items() if k != "message"} !=
                {k: v for k, v in y.items() if k != "message"})
        total += len(new)
        differ += n
        print(f"{name}: {len(new)} answers, {n} differ from the recorded ones", flush=True)
    print(f"{total} answers, {differ} differ")


if __name__ == "__main__":
    main(sys.argv[1:])
