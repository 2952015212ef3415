#!/usr/bin/env python3
"""`hiera diff` against Puppet: on random trees and random edits (tests/diff/difftree.py), the set
of (node, key, old answer, new answer) that hiera diff reports must be exactly the set of answers
that differ when Puppet 7's own lookup is asked every key, for every node, on both trees.

  puppet-diff.py --hiera build/hiera                 replays the recorded cases (no Puppet needed)
  puppet-diff.py --hiera build/hiera --record N      asks Puppet about N new cases and records them
  puppet-diff.py --hiera build/hiera --live N        asks Puppet about N new cases, records nothing
  puppet-diff.py --hiera build/hiera --confirm FILE  asks again, alone, the answers of a case that disagree

Recorded cases are tests/diff/puppet-cases/*.json: both trees, the edits, the merge option and
Puppet's answer for every node and key on each tree. Each case is checked four ways: with the keys
given (--keys-file: every key of the generator, so a failure on a key no data defines is seen
too), with the keys enumerated from the data (Puppet's answers then restricted to the keys some
data file of either tree defines), and both again with --full (no fast path).

Answers compare as hiera diff compares them: values as JSON with hash keys in any order (and 1
differs from 1.0), failures by kind only (Puppet's messages and ours are worded alike but not
always the same; a failure whose message changed is not a change Puppet's answers can show).
A failure said once for several keys carries no value for the side that did not fail: there
only the kind of that side is checked.

Puppet is asked every key of a node in one process (each with a fresh compiler, as
tests/tools/puppet-record.rb does). Puppet's own bulk tool warns that a deep merge with a
knock-out prefix edits Puppet's cached copy of a data file, so that a later lookup in the same
process can answer otherwise than a fresh `puppet lookup`: where the recording disagrees with
hiera diff, the node's answers for that key are asked again, each in a process of its own, and
those are recorded; the case lists them under "asked_alone".

A case keeps the trees' hash keys in the order they were written (the order is data: it decides
which lookup_options pattern applies first, and how a hash interpolated into a string reads).
"""
import argparse
import concurrent.futures
import glob
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import difftree  # noqa: E402

CASES = os.path.join(HERE, "puppet-cases")
RECORD_RB = os.path.join(HERE, "..", "tools", "puppet-record.rb")
MERGES = [None] * 7 + ["unique", "hash", "deep", {"strategy": "deep", "knockout_prefix": "--"},
                       {"strategy": "deep", "sort_merged_arrays": True, "merge_hash_arrays": True}]


def merge_flags(m):
    if m is None:
        return []
    if isinstance(m, str):
        return ["--merge", m]
    f = ["--merge", m["strategy"]]
    if m.get("knockout_prefix"):
        f += ["--knock-out-prefix", m["knockout_prefix"]]
    if m.get("sort_merged_arrays"):
        f.append("--sort-merged-arrays")
    if m.get("merge_hash_arrays"):
        f.append("--merge-hash-arrays")
    return f


# ------------------------------------------------------------------ Puppet

def ask_puppet(root, node, keys, merge):
    queries = [{"key": k} if merge is None else {"key": k, "merge": merge} for k in keys]
    fd, qfile = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(queries, f)
    try:
        p = subprocess.run(["ruby", RECORD_RB, qfile, "--codedir", root, "--environmentpath", root + "/environments",
                            "--hiera_config", root + "/hiera.yaml", "--environment", "production", "--node", node,
                            "--facts", "%s/facts/%s.yaml" % (root, node)],
                           cwd=root, capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(qfile)
    lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
    if not lines:
        raise RuntimeError("Puppet failed on %s for %s: %s" % (root, node, p.stderr[-500:]))
    answers = json.loads(lines[-1])
    # (answers in the order of the keys; the messages are not compared)
    out = {}
    for k, a in zip(keys, answers):
        if "value" in a:
            out[k] = {"value": a["value"]}
        elif a.get("not_found"):
            out[k] = {"not_found": True}
        else:
            out[k] = {"error": a.get("message", "")}
    return out


def make_case(seed):
    rnd = random.Random(seed)
    base = difftree.gen_tree(rnd, nnodes=3)
    difftree.maybe_break(base, rnd)
    new = base.copy()
    edits = [difftree.edit(new, rnd) for _ in range(rnd.randrange(1, 4))]
    merge = rnd.choice(MERGES)
    return base, new, edits, merge


def worth_asking(hiera, seed, workdir):
    """Most edits should change some answer: a case where hiera diff sees no change is asked
    about one time in four only (Puppet's time goes to cases that say something). Decided by the
    seed, so that a run is repeatable."""
    base, new, _, merge = make_case(seed)
    d = tempfile.mkdtemp(dir=workdir)
    base.write(d + "/old")
    new.write(d + "/new")
    p = subprocess.run([hiera, "diff", d + "/old", d + "/new", "--facts-dir", d + "/old/facts", "--hiera_config",
                        "hiera.yaml", "--format", "json"] + merge_flags(merge),
                       capture_output=True, text=True, env=dict(os.environ, HIERA_CACHE_DIR="off"))
    shutil.rmtree(d, ignore_errors=True)
    return p.returncode != 0 or random.Random(seed * 7 + 1).random() < 0.25


def record_case(hiera, seed, workdir):
    base, new, edits, merge = make_case(seed)
    d = tempfile.mkdtemp(prefix="case-%d-" % seed, dir=workdir)
    roots = {"old": os.path.join(d, "old"), "new": os.path.join(d, "new")}
    base.write(roots["old"])
    new.write(roots["new"])
    keys = list(difftree.KEYS)
    answers = {"old": {}, "new": {}}
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for side in ("old", "new"):
            for node in sorted(base.facts):
                jobs.append((side, node, ex.submit(ask_puppet, roots[side], node, keys, merge)))
        for side, node, fut in jobs:
            answers[side][node] = fut.result()
    case = {"seed": seed, "edits": edits, "merge": merge, "keys": keys, "old": difftree.to_json(base),
            "new": difftree.to_json(new), "puppet": answers}
    confirm(hiera, case, roots, workdir)
    shutil.rmtree(d, ignore_errors=True)
    return case


def confirm(hiera, case, roots, workdir):
    """Puppet answers many questions in one process (tests/tools/puppet-record.rb), and a lookup in
    that process can see data an earlier one changed in Puppet's caches (a deep merge with a
    knock-out prefix edits the cached file), where a fresh `puppet lookup` would not. Where hiera
    diff and the recorded answers disagree, both sides' answers for that node and key are asked
    again, each alone in a fresh process, and those are recorded (listed under "asked_alone")."""
    bad = set()
    check_case(hiera, case, workdir, bad)
    alone = case.setdefault("asked_alone", [])
    for node, key in sorted(bad):
        for side in ("old", "new"):
            case["puppet"][side][node][key] = ask_puppet(roots[side], node, [key], case["merge"])[key]
            alone.append([side, node, key])


# ------------------------------------------------------------------ comparison

ANY_ANSWER = ("any",)  # the side that did not fail, in a failure said once


def state(a):
    if "value" in a:
        return ("value", json.dumps(a["value"], sort_keys=True))
    if "not_found" in a:
        return ("not_found",)
    return ("error",)


def expected_changes(case, keys):
    exp = {}
    p = case["puppet"]
    for node in p["old"]:
        for k in keys:
            o, n = state(p["old"][node][k]), state(p["new"][node][k])
            if o != n:
                exp[(node, k)] = (o, n)
    return exp


def reported_changes(doc):
    """(node, key) -> (old state, new state) from hiera diff's JSON; failures whose message only
    changed are left out (Puppet's answers cannot show them)."""
    got = {}

    def val(c, side):
        return ("value", json.dumps(c[side], sort_keys=True)) if side in c else None

    for entry in doc["keys"]:
        k = entry["key"]
        for c in entry["changes"]:
            kind = c["kind"]
            if kind == "failure_changed":
                continue
            if kind == "added":
                pair = (("not_found",), val(c, "new"))
            elif kind == "removed":
                pair = (val(c, "old"), ("not_found",))
            elif kind == "changed":
                pair = (val(c, "old"), val(c, "new"))
            elif kind == "now_failing":
                pair = (val(c, "old") or (ANY_ANSWER if c.get("old_varies") else ("not_found",)), ("error",))
            else:
                pair = (("error",), val(c, "new") or (ANY_ANSWER if c.get("new_varies") else ("not_found",)))
            for node in c["nodes"]:
                got[(node, k)] = pair
    for f in doc["failures"]:
        if f["kind"] == "failure_changed":
            continue
        pair = (ANY_ANSWER, ("error",)) if f["kind"] == "now_failing" else (("error",), ANY_ANSWER)
        for k in f["keys"]:
            for node in f["nodes"]:
                got[(node, k)] = pair
    return got


def matches(want, have):
    for w, h in zip(want, have):
        if h == ANY_ANSWER:
            if w == ("error",):
                return False
        elif w != h:
            return False
    return True


def compare(exp, got, bad=None):
    problems = []
    for nk in sorted(set(exp) | set(got)):
        if nk not in got:
            problems.append("missing %s %s: puppet %s -> %s" % (nk[0], nk[1], exp[nk][0], exp[nk][1]))
        elif nk not in exp:
            problems.append("extra %s %s: hiera %s -> %s" % (nk[0], nk[1], got[nk][0], got[nk][1]))
        elif not matches(exp[nk], got[nk]):
            problems.append("differs %s %s: puppet %s -> %s, hiera %s -> %s" % (nk + exp[nk] + got[nk]))
        else:
            continue
        if bad is not None:
            bad.add(nk)
    return problems


def check_case(hiera, case, workdir, bad=None):
    d = tempfile.mkdtemp(prefix="replay-%s-" % case["seed"], dir=workdir)
    old, new = os.path.join(d, "old"), os.path.join(d, "new")
    difftree.from_json(case["old"]).write(old)
    difftree.from_json(case["new"]).write(new)
    keys_file = os.path.join(d, "keys.txt")
    with open(keys_file, "w") as f:
        f.write("\n".join(case["keys"]) + "\n")
    tree_keys = difftree.from_json(case["old"]).keys() | difftree.from_json(case["new"]).keys()
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
    problems = []
    questions = 0
    for mode in (["--keys-file", keys_file], [], ["--keys-file", keys_file, "--full"], ["--full"]):
        cmd = [hiera, "diff", old, new, "--facts-dir", old + "/facts", "--hiera_config", "hiera.yaml", "--format", "json",
               "--jobs", "1"] + merge_flags(case["merge"]) + mode
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        label = " ".join(a for a in mode if a != keys_file) or "(enumerated keys)"
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            problems.append("%s: exit %d, no JSON: %s" % (label, p.returncode, p.stderr[-500:]))
            continue
        keys = case["keys"] if "--keys-file" in mode else [k for k in case["keys"] if k in tree_keys]
        exp = expected_changes(case, keys)
        questions += 2 * len(keys) * len(case["puppet"]["old"])
        got = reported_changes(doc)
        ps = compare(exp, got, bad)
        if doc["not_compared"]:
            ps.append("nodes not compared: %s" % doc["not_compared"])
        want_rc = 1 if doc["summary"]["changes"] or doc["summary"]["nodes_only_old"] else 0
        if p.returncode != want_rc:
            ps.append("exit status %d, expected %d" % (p.returncode, want_rc))
        problems += ["%s: %s" % (label, x) for x in ps]
    shutil.rmtree(d, ignore_errors=True)
    return problems, len(expected_changes(case, case["keys"])), questions


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--record", type=int, default=0, help="record N new cases (asks Puppet)")
    ap.add_argument("--live", type=int, default=0, help="check N new cases against Puppet without recording")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--confirm", nargs="+", help="recorded cases whose disagreeing answers are asked again, alone")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    work = tempfile.mkdtemp(prefix="hiera-puppet-diff-")
    try:
        if args.record or args.live:
            n = args.record or args.live
            seed = args.seed if args.seed is not None else random.randrange(1 << 30)
            os.makedirs(args.cases, exist_ok=True)
            bad = 0
            done = 0
            for i in range(10 * n):
                if done == n:
                    break
                if not worth_asking(hiera, seed + i, work):
                    continue
                done += 1
                case = record_case(hiera, seed + i, work)
                problems, nchanges, _ = check_case(hiera, case, work)
                print("seed %d: %d changes by Puppet's answers, %s (%s)" % (
                    seed + i, nchanges, "%d problems" % len(problems) if problems else "same", "; ".join(case["edits"])))
                for pr in problems[:10]:
                    print("   " + pr)
                bad += bool(problems)
                if args.record:
                    with open(os.path.join(args.cases, "case-%d.json" % (seed + i)), "w") as f:
                        json.dump(case, f, separators=(",", ":"))  # (key order kept: it is the data's)
                        f.write("\n")
            return 1 if bad else 0
        if args.confirm:
            for fn in args.confirm:
                with open(fn) as f:
                    case = json.load(f)
                d = tempfile.mkdtemp(dir=work)
                roots = {"old": os.path.join(d, "old"), "new": os.path.join(d, "new")}
                difftree.from_json(case["old"]).write(roots["old"])
                difftree.from_json(case["new"]).write(roots["new"])
                confirm(hiera, case, roots, work)
                print("%s: asked alone: %s" % (fn, case.get("asked_alone")))
                with open(fn, "w") as f:
                    json.dump(case, f, separators=(",", ":"))  # (key order kept: it is the data's)
                    f.write("\n")
            return 0
        files = sorted(glob.glob(os.path.join(args.cases, "*.json")))
        if not files:
            print("no recorded cases in %s" % args.cases)
            return 1
        bad = total_changes = questions = 0
        for fn in files:
            with open(fn) as f:
                case = json.load(f)
            problems, nchanges, q = check_case(hiera, case, work)
            total_changes += nchanges
            questions += q
            if problems:
                bad += 1
                print("%s (%s):" % (os.path.basename(fn), "; ".join(case["edits"])))
                for pr in problems[:10]:
                    print("   " + pr)
        print("hiera diff against Puppet: %d recorded cases (%d answers that Puppet says changed, %d answers compared), "
              "%d differ" % (len(files), total_changes, questions, bad))
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
