#!/usr/bin/env python3
"""The time of Ansible's two Hiera lookups over the same 200-term playbook (issue 33):
community.general.hiera, which runs Hiera 3.10's `hiera` command (Debian's /usr/bin/hiera, Ruby)
once per term, against libhiera.hiera.hiera (ansible/), which answers in-process through the hiera
Python module. The playbook, data and terms are tests/ansible/inprocess.py's (values of every
kind, defaults, scope, -a/-h/-f); the answers of both must be the same, or nothing is reported.

Each plugin's playbook runs --runs times (median); a playbook asking no term at all, run as often,
is Ansible's own start-up and tasks, taken off to give the lookups' time and the time per term.
Both are measured in the same run, so the ratio holds on a loaded machine; the seconds do not.

usage: bench/ansible.py [--pythonpath build/python] [--hiera3 /usr/bin/hiera] [--keys 200]
       [--runs 1] [--json FILE]
"""
import argparse, importlib.util, json, os, shutil, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, ".."))


def load_inprocess():
    spec = importlib.util.spec_from_file_location("inprocess", os.path.join(ROOT, "tests", "ansible", "inprocess.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "python"))
    ap.add_argument("--hiera3", default="/usr/bin/hiera")
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    a.hiera3 = os.path.abspath(a.hiera3)
    if not shutil.which("ansible-playbook") or not os.path.exists(a.hiera3):
        print("ansible-playbook or Hiera 3.10's hiera is not installed", file=sys.stderr)
        return 2
    if not os.path.exists(os.path.join(a.pythonpath, "hiera", "__init__.py")):
        print(f"no hiera module in {a.pythonpath}: make python", file=sys.stderr)
        return 2
    ip = load_inprocess()
    tmp = tempfile.mkdtemp(prefix="hiera-bench-ansible-")
    try:
        terms = ip.prepare(tmp, a.keys)
        none = os.path.join(tmp, "no-terms.json")
        with open(none, "w") as f:
            json.dump([], f)
        runs = {name: [] for name, _ in ip.PLUGINS}
        runs["ansible"] = []
        answers = {}
        for r in range(a.runs):
            # (interleaved, so that a change of the machine's load falls on every figure alike)
            for name, plugin in ip.PLUGINS:
                secs, got = ip.play(tmp, name, plugin, a.hiera3, a.pythonpath)
                if got is None:
                    return 1
                runs[name].append(secs)
                answers[name] = got
            secs, got = ip.play(tmp, "ansible", "libhiera.hiera.hiera", a.hiera3, a.pythonpath, terms_file=none)
            if got is None:
                return 1
            runs["ansible"].append(secs)
        theirs, ours = answers["community.general.hiera"], answers["libhiera"]
        if theirs != ours or len(ours) != len(terms):
            differ = sum(1 for x, y in zip(theirs, ours) if x != y)
            print(f"the answers differ ({differ} of {len(terms)} terms): run tests/ansible/inprocess.py", file=sys.stderr)
            return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    base = med["ansible"]
    print(f"{len(terms)} terms, the same answers from both; median of {a.runs} run(s); the machine may be shared: "
          f"compare the ratio")
    print(f"{'':44} {'playbook s':>10} {'lookups s':>10} {'ms/term':>9}")
    res = {"terms": len(terms), "runs": a.runs, "ansible_alone_s": base}
    for name, label in (("community.general.hiera", f"community.general.hiera ({a.hiera3})"),
                        ("libhiera", "libhiera.hiera.hiera (in-process)")):
        lookups = max(med[name] - base, 0.0)
        print(f"{label:44} {med[name]:10.1f} {lookups:10.2f} {1000 * lookups / len(terms):9.2f}")
        res[name] = {"playbook_s": med[name], "lookups_s": lookups, "ms_per_term": 1000 * lookups / len(terms),
                     "all_runs_s": runs[name]}
    print(f"{'ansible-playbook asking no term':44} {base:10.1f}")
    cg, lh = res["community.general.hiera"]["lookups_s"], res["libhiera"]["lookups_s"]
    ratio_lookups = cg / lh if lh > 0 else float("inf")
    print(f"in-process: {med['community.general.hiera'] / med['libhiera']:.1f}x faster for the whole playbook, "
          f"{ratio_lookups:.0f}x for the lookups alone")
    res["ratio_playbook"] = med["community.general.hiera"] / med["libhiera"]
    res["ratio_lookups"] = ratio_lookups
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
