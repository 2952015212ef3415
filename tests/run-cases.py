#!/usr/bin/env python3
"""Runs the project's recorded cases (tests/cases/*) against a hiera binary.

Each case folder is a small Puppet code directory (hiera.yaml, environments/, facts.yaml) with
case.json (description, engine, node, environment, scope, queries) and expected.json, the answers
recorded from the reference implementations (Puppet 7.23's `puppet lookup`, Hiera 3.10's `hiera`)
by tests/tools/record-cases.py. The binary is called exactly as those commands are called:

  Hiera 5:  HIERA lookup --codedir C --environmentpath C/environments --hiera_config C/hiera.yaml
            --environment ENV --node NODE --facts C/facts.yaml [--merge ...] [--default V]
            [--type T] (--render-as json | --explain) KEY...
  Hiera 3:  HIERA -c C/hiera.yaml -f json [-a|-h] KEY [DEFAULT] [VAR=VALUE...]
ENV is the query's own environment when it names one, else the case's.

A case with "args" gives its own lookup flags instead of the default ones ("{case}" stands for the
case folder; without args the flags start with --confdir C, where no puppet.conf is, so the
machine's puppet.conf never decides), then "hiera_args" (the flags hiera takes where Puppet got
"puppet_args"); a query may add args and hiera_args of its own. A puppet-cli case runs
`HIERA lookup ARGS` (the case's then the query's) and compares exit status, standard output and
the query's stderr_has texts with what `puppet lookup` printed (a query's "hiera" entry says where
hiera differs by design). A Hiera 3 query with help_prefix passes when the reference's text ends
hiera's output (hiera's own lines come first). A case whose "needs" names a command missing from PATH (e.g.
facter) is skipped with a line saying so. With "match_messages", an error must be printed as
"Error: Could not run: <Puppet's message>".

Puppet 8: with --puppet-version 8, hiera is asked to answer as Puppet 8.10 (and Hiera 3.12), Debian
13's (HIERA_PUPPET_VERSION=8 in its environment; 7 for --puppet-version 7), and a case's
expected-puppet8.json ({"<query index>": answer}, recorded by record-cases.py --puppet-version 8)
replaces the answers that differ under Puppet 8. A puppet-cli query's "puppet8" entry gives the
stderr_has texts of Puppet 8 where they differ, and its "hiera" entry replaces the query's
(where hiera differs from Puppet 8 otherwise than from Puppet 7; {}: it does not).

usage: run-cases.py --hiera PATH [--puppet-version 7|8] [--verbose] [CASEDIR...]
       (default 7)
Prints one FAIL line per wrong answer and ends with 'N passed, N failed'.
"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

def merge_flags(m):
    if m is None:
        return []
    if isinstance(m, str):
        return ["--merge", m]
    flags = ["--merge", m["strategy"]]
    if m.get("knockout_prefix") is not None:
        flags += ["--knock-out-prefix", m["knockout_prefix"]]
    if m.get("sort_merged_arrays"):
        flags.append("--sort-merged-arrays")
    if m.get("merge_hash_arrays"):
        flags.append("--merge-hash-arrays")
    return flags

def keys_of(q):
    return q["key"] if isinstance(q["key"], list) else [q["key"]]

def case_args(case, flags):
    return [str(a).replace("{case}", case) for a in (flags or [])]

def check_cli(hiera, case, spec, q, exp):
    """A puppet-cli query: hiera lookup with the same arguments, compared with puppet lookup's run."""
    cmd = [hiera, "lookup"] + case_args(case, spec.get("args", []) + q.get("args", []))
    env = dict(os.environ)
    env["HIERA_PUPPET_LAYOUT"] = "debian"  # the layout of the Puppet that recorded the cases
    env.update({k: v.replace("{case}", case) for k, v in (q.get("env") or {}).items()})
    try:
        p = subprocess.run(cmd, cwd=case, capture_output=True, timeout=30, env=env)
    except subprocess.TimeoutExpired:
        return "no answer in 30 s"
    out = p.stdout.decode("utf-8", "replace").replace(case, "<CASE>")
    err = p.stderr.decode("utf-8", "replace").replace(case, "<CASE>")
    if p.returncode < 0 or p.returncode >= 128:
        return f"crashed (exit {p.returncode}): {err.strip()[-300:]}"
    want = dict(exp)
    fragments = q.get("stderr_has", [])
    if PUPPET_VERSION == 8 and "stderr_has" in (q.get("puppet8") or {}):
        fragments = q["puppet8"]["stderr_has"]
    hiera_by_design = q.get("hiera")
    if PUPPET_VERSION == 8 and "hiera" in (q.get("puppet8") or {}):
        hiera_by_design = q["puppet8"]["hiera"]  # (Puppet 8's own, or {}: none)
    if hiera_by_design:  # where hiera differs from Puppet by design
        q = dict(q, hiera=hiera_by_design)
        want.update({k: v for k, v in q["hiera"].items() if k in ("status", "stdout")})
        fragments = q["hiera"].get("stderr_has", fragments)
    if p.returncode != want["status"]:
        return f"exit {p.returncode}, expected {want['status']}; stderr: {err.strip()[:400]}"
    if want["stdout"] is not None and out != want["stdout"]:
        import difflib
        d = "".join(list(difflib.unified_diff(want["stdout"].splitlines(True), out.splitlines(True),
                                               "expected", "got", n=1))[:40])
        return "output differs:\n" + d
    for frag in fragments:
        if frag.replace("{case}", "<CASE>") not in err:
            return f"stderr lacks {frag!r}; stderr: {err.strip()[:400]}"
    # (hiera's own first line of an explanation, on stderr: the Puppet it explains as)
    err = "".join(l for l in err.splitlines(True) if not l.startswith("hiera: explaining as Puppet "))
    if not fragments and not q.get("hiera") and bool(want["stderr"].strip()) != bool(err.strip()):
        return f"stderr {'empty' if not err.strip() else 'not empty'}, Puppet's {'was' if want['stderr'].strip() else 'was not'}: {err.strip()[:300]}"
    return None

def command(hiera, case, spec, q):
    if spec.get("engine", "puppet") == "hiera3":
        cmd = [hiera, "-c", os.path.join(case, "hiera.yaml"), "-f", q.get("format", "json")]
        cmd += {"array": ["-a"], "hash": ["-h"]}.get(q.get("resolution", "priority"), [])
        cmd += keys_of(q)
        if "default" in q:
            cmd.append(str(q["default"]))
        for k, v in (q.get("scope") or spec.get("scope") or {}).items():
            cmd.append(f"{k}={v}")
        return cmd
    if "args" in spec:
        cmd = [hiera, "lookup"] + case_args(case, spec["args"])
    else:
        cmd = [hiera, "lookup", "--confdir", case, "--codedir", case, "--environmentpath", os.path.join(case, "environments"),
               "--hiera_config", os.path.join(case, "hiera.yaml"),
               "--environment", q.get("environment", spec.get("environment", "production")),
               "--node", spec.get("node", "node1.example.com"), "--facts", os.path.join(case, spec.get("facts", "facts.yaml"))]
    cmd += case_args(case, spec.get("hiera_args")) + case_args(case, q.get("args")) + case_args(case, q.get("hiera_args"))
    cmd += merge_flags(q.get("merge"))
    if "default" in q:
        cmd += ["--default", str(q["default"])]
    if "type" in q:
        cmd += ["--type", q["type"]]
    if q.get("explain"):
        cmd += ["--explain"]
    if q.get("explain_options"):
        cmd += ["--explain-options"]
    if q.get("explain") or q.get("explain_options"):
        if q.get("render"):
            cmd += ["--render-as", q["render"]]
    elif q.get("render"):
        cmd += ["--render-as", q["render"]]
    else:
        cmd += ["--render-as", "json"]
    return cmd + keys_of(q)

def check(hiera, case, spec, q, exp):
    if spec.get("engine") == "puppet-cli":
        return check_cli(hiera, case, spec, q, exp)
    cmd = command(hiera, case, spec, q)
    try:
        p = subprocess.run(cmd, cwd=case, capture_output=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "no answer in 30 s"
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode >= 128:
        return f"crashed (exit {p.returncode}): {err.strip()[-300:]}"
    if "output" in exp:  # exact text (explain, --render-as yaml/s)
        got = out.replace(case, "<CASE>")
        if p.returncode != exp.get("status", 0):
            return f"exit {p.returncode}, expected {exp.get('status', 0)}; stderr: {err.strip()[:300]}"
        if q.get("help_prefix") and got.endswith(exp["output"]):
            return None  # hiera's subcommands come first, then the reference's text verbatim
        if got != exp["output"]:
            import difflib
            d = "".join(list(difflib.unified_diff(exp["output"].splitlines(True), got.splitlines(True),
                                                   "expected", "got", n=1))[:40])
            return "output differs:\n" + d
        return None
    if "lookup_error" in exp:  # puppet lookup: exit 1, not a word (warnings aside)
        if p.returncode != 1 or out.strip():
            return f"expected a lookup error (exit 1, no output), got exit {p.returncode}: {out.strip()[:300]}"
        said = [l for l in err.splitlines() if l.startswith("Error:")]
        if said:
            return f"expected a lookup error without a word, as puppet lookup, got {said[0][:300]!r}"
        return None
    if "error" in exp:
        if p.returncode == 0:
            return f"expected an error, got exit 0: {out.strip()[:300]}"
        if not err.strip():
            return "expected an error message on stderr, got none"
        if q.get("match_message", spec.get("match_messages")) and exp.get("message") is not None:
            want = "Error: Could not run: " + exp["message"].replace("<CASE>", case)
            if want not in err:
                return f"expected the message {want[:300]!r}\n      got {err.strip()[:300]!r}"
        return None
    if "not_found" in exp:
        if p.returncode != 1 or out.strip():
            return f"expected not found (exit 1, no output), got exit {p.returncode}: {out.strip()[:300]}"
        return None
    if p.returncode != 0:
        return f"exit {p.returncode}, expected {json.dumps(exp['value'])[:300]}; stderr: {err.strip()[:300]}"
    try:
        got = json.loads(out)
    except ValueError:
        return f"output is not JSON: {out.strip()[:300]}"
    if json.dumps(got) != json.dumps(exp["value"]):
        return f"expected {json.dumps(exp['value'])[:400]}\n      got {json.dumps(got)[:400]}"
    return None

PUPPET_VERSION = 7


def main(argv):
    global PUPPET_VERSION
    hiera, verbose, cases = None, False, []
    it = iter(argv)
    for a in it:
        if a == "--hiera":
            hiera = os.path.abspath(next(it))
        elif a == "--puppet-version":
            PUPPET_VERSION = int(next(it))
            if PUPPET_VERSION not in (7, 8):
                print("--puppet-version: 7 or 8")
                return 2
        elif a == "--verbose":
            verbose = True
        else:
            cases.append(os.path.abspath(a))
    if not hiera:
        print(__doc__)
        return 2
    if not cases:
        root = os.path.join(HERE, "cases")
        cases = sorted(os.path.join(root, d) for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    # parsed files go to a scratch disk cache (used again by the later queries of a case), never
    # to the user's ~/.cache/hiera; removed at the end
    scratch = tempfile.mkdtemp(prefix="hiera-cases-cache-")
    os.environ["HIERA_CACHE_DIR"] = scratch
    os.environ["HIERA_PUPPET_VERSION"] = str(PUPPET_VERSION)
    try:
        return run_all(hiera, verbose, cases)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

def run_all(hiera, verbose, cases):
    passed = failed = skipped = 0
    for case in cases:
        with open(os.path.join(case, "case.json")) as f:
            spec = json.load(f)
        with open(os.path.join(case, "expected.json")) as f:
            expected = json.load(f)
        p8 = os.path.join(case, "expected-puppet8.json")
        if PUPPET_VERSION == 8 and os.path.exists(p8):
            with open(p8) as f:
                for i, answer in json.load(f).items():
                    expected[int(i)] = answer
        missing = [n for n in spec.get("needs", []) if not shutil.which(n)]
        if missing:
            print(f"SKIP {os.path.basename(case)}: needs {', '.join(missing)}, not on PATH")
            skipped += 1
            continue
        if len(expected) != len(spec["queries"]):
            print(f"FAIL {os.path.basename(case)}: {len(spec['queries'])} queries but {len(expected)} answers")
            failed += 1
            continue
        for i, (q, exp) in enumerate(zip(spec["queries"], expected)):
            why = check(hiera, case, spec, q, exp)
            if why is None:
                passed += 1
                if verbose:
                    what = q.get("args") if spec.get("engine") == "puppet-cli" else keys_of(q)
                    print(f"ok   {os.path.basename(case)}#{i} {what}")
            else:
                failed += 1
                print(f"FAIL {os.path.basename(case)}#{i} {json.dumps(q)}\n      {why}")
    print(f"{passed} passed, {failed} failed" + (f", {skipped} cases skipped" if skipped else ""))
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
