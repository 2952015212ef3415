#!/usr/bin/env python3
"""Tests of `hiera check` (make check runs them; no Puppet needed).

  seeded/   a control repository with one seeded mistake of every rule: expected.txt (with
            --facts-dir facts) and expected-nofacts.txt (without) list "rule file:line:col
            [nodes]"; every line must be reported exactly once, and nothing else.
  types*/   generated repositories (tests/tools/record-check-types.py) and what Puppet's
            compile reported for each node with each class included (expected.json): the
            parameter-type, parameter-missing and lookup-error findings of --facts-dir must name
            exactly these (node, class, message) triples.
  clean/    a repository without mistakes: no finding at all, exit status 0.
  config/   .hiera-check.yaml and inline comments: expected.txt as for seeded.
  deployed/ a level naming a file the tree does not hold (made where the code is deployed):
            lookup()/alias() of keys no file defines are not reported, and a note says why.
  deployed2/ the same for a data folder outside the tree reached through an interpolation.
  puppet8/  what Puppet 8's defaults refuse (the puppet8-* rules): expected-puppet7.txt and
            expected-puppet8.txt, with --puppet-version 7 (warnings) and 8 (errors).
and the command's interface over seeded/: the output formats (text, json, junit, sarif,
github), exit statuses, --rule, --warnings-as-errors, --list-rules, bad options.

usage: run.py --hiera build/hiera
"""
import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
T = Tally("hiera check tests", print_limit=0)  # the failures are printed at the end
check = T.check
failures = T.failures


def run(hiera, args, cwd):
    # as Puppet 7 unless --puppet-version says otherwise, whichever Puppet is installed
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1", HIERA_PUPPET_VERSION="7")
    return subprocess.run([hiera, "check"] + args, cwd=cwd, capture_output=True, text=True, env=env)


def findings(hiera, args, cwd):
    p = run(hiera, ["--format", "json"] + args, cwd)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        failures.append("%s: not JSON: %s %s" % (" ".join(args), p.stdout[:300], p.stderr[:300]))
        return p, {"findings": [], "notes": []}


def as_lines(doc):
    out = []
    for f in doc["findings"]:
        line = "%s %s:%d:%d" % (f["rule"], f["file"], f["line"], f["column"])
        if f.get("nodes"):
            line += " [" + ",".join(f["nodes"]) + "]"
        out.append(line)
    return out


def compare_exact(name, got, expected_file):
    with open(expected_file) as fh:
        want = [l.strip() for l in fh if l.strip() and not l.startswith("#")]
    for w in want:
        n = got.count(w)
        check(n == 1, "%s: expected once, reported %d times: %s" % (name, n, w))
    for g in got:
        check(g in want, "%s: not expected: %s" % (name, g))


def test_expected(hiera, name, args, expected, status):
    d = os.path.join(HERE, name)
    p, doc = findings(hiera, args, d)
    check(p.returncode == status, "%s %s: exit status %d, expected %d (%s)" % (name, args, p.returncode, status,
                                                                              p.stderr.strip()))
    compare_exact("%s %s" % (name, " ".join(args)), as_lines(doc), os.path.join(d, expected))
    return doc


def test_types(hiera, name):
    d = os.path.join(HERE, name)
    with open(os.path.join(d, "expected.json")) as fh:
        exp = json.load(fh)
    p, doc = findings(hiera, ["--facts-dir", "facts", "."], os.path.join(d, "tree"))
    got = set()
    for f in doc["findings"]:
        if f["rule"] == "lookup-error":
            m = re.match(r"the lookup of '([^']*)' fails: (.*)", f["message"], re.S)
            cls = m.group(1).rsplit("::", 1)[0]
            for n in f.get("nodes", []):
                got.add((n, cls, "LOOKUP: " + m.group(2)))
        elif f["rule"] in ("parameter-type", "parameter-missing"):
            m = re.match(r"Class\[([^\]]*)\]: (.*)", f["message"], re.S)
            cls = m.group(1).lower()
            body = re.sub(r" \(unquoted '.*", "", m.group(2))
            for line in body.split("; "):
                for n in f.get("nodes", []):
                    got.add((n, cls, line))
    want, stopped = set(), set()
    for n, cs in exp["errors"].items():
        for c, ls in cs.items():
            for l in ls:
                want.add((n, c, l))
                if l.startswith("LOOKUP: "):
                    stopped.add((n, c))
    # where Puppet's compile stopped at a lookup error, it said nothing of the other parameters
    got = {g for g in got if (g[0], g[1]) not in stopped or g[2].startswith("LOOKUP: ")}
    for x in sorted(want - got):
        check(False, "%s: Puppet reports %s, hiera check does not" % (name, x))
    for x in sorted(got - want):
        check(False, "%s: hiera check reports %s, Puppet does not" % (name, x))
    for x in sorted(want & got):
        check(True, "")
    check(len(want) > 20, "%s: too few recorded errors (%d)" % (name, len(want)))
    passed_here = len(want & got)
    return passed_here


def test_interface(hiera):
    d = os.path.join(HERE, "seeded")
    args = ["--facts-dir", "facts", "."]
    # text: file:line:column: severity: message [rule], a summary line
    p = run(hiera, args, d)
    lines = p.stdout.splitlines()
    pat = re.compile(r"^[^:\s][^:]*:\d+:\d+: (error|warning|note): .* \[[a-z0-9-]+\]$")
    body = [l for l in lines if not l.startswith("note:") and not re.match(r"^\d+ errors?, \d+ warnings?", l)]
    check(all(pat.match(l) for l in body), "text: a line not file:line:col: severity: message [rule]: %r" %
          next((l for l in body if not pat.match(l)), ""))
    check(re.match(r"^\d+ errors?, \d+ warnings?(, \d+ notes?)? in \d+ files? \(checked ", lines[-1] if lines else ""),
          "text: no summary line: %r" % (lines[-1] if lines else ""))
    check(p.returncode == 1, "text: exit status %d with errors" % p.returncode)
    check("\033[" not in p.stdout, "text: colours without a terminal")
    pc = run(hiera, ["--color", "always"] + args, d)
    check("\033[1;31m" in pc.stdout, "text: --color always gives no colour")
    # json
    _, doc = findings(hiera, args, d)
    check(doc.get("summary", {}).get("errors", 0) > 0 and "notes" in doc, "json: summary and notes")
    # junit
    pj = run(hiera, ["--format", "junit"] + args, d)
    try:
        root = ET.fromstring(pj.stdout)
        cases = root.findall(".//testcase")
        fails = root.findall(".//failure")
        check(root.tag == "testsuites" and len(cases) == len(doc["findings"]), "junit: one test case per finding")
        check(len(fails) == doc["summary"]["errors"], "junit: one failure per error")
    except ET.ParseError as e:
        check(False, "junit: not XML: %s" % e)
    # sarif
    ps = run(hiera, ["--format", "sarif"] + args, d)
    try:
        s = json.loads(ps.stdout)
        runv = s["runs"][0]
        rules = {r["id"] for r in runv["tool"]["driver"]["rules"]}
        check(s["version"] == "2.1.0" and len(runv["results"]) == len(doc["findings"]), "sarif: results")
        check(all(r["ruleId"] in rules and r["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
                  for r in runv["results"]), "sarif: rule ids and regions")
    except (ValueError, KeyError, IndexError) as e:
        check(False, "sarif: %s" % e)
    # github annotations
    pg = run(hiera, ["--format", "github"] + args, d)
    ann = [l for l in pg.stdout.splitlines() if l.startswith("::error ") or l.startswith("::warning ") or
           (l.startswith("::notice file="))]
    check(len(ann) == len(doc["findings"]), "github: one annotation per finding")
    check(all(re.match(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+,title=[a-z0-9-]+::", l) for l in ann),
          "github: annotation form")
    sev = {"error": "error", "warning": "warning", "note": "notice"}
    check(sorted(re.match(r"^::(\w+)", l).group(1) for l in ann) == sorted(sev[f["severity"]] for f in doc["findings"]),
          "github: a note is a notice, a warning a warning")
    # --rule, --warnings-as-errors
    _, d2 = findings(hiera, ["--rule", "parameter-type=off", "--rule", "tab=error"] + args, d)
    check(not any(f["rule"] == "parameter-type" for f in d2["findings"]), "--rule NAME=off")
    check(all(f["severity"] == "error" for f in d2["findings"] if f["rule"] == "tab"), "--rule NAME=error")
    _, d3 = findings(hiera, ["--warnings-as-errors"] + args, d)
    check(all(f["severity"] in ("error", "note") for f in d3["findings"]) and
          any(f["severity"] == "note" for f in d3["findings"]), "--warnings-as-errors (notes stay notes)")
    # exit status 0 with warnings only, 2 when the check cannot run
    pw = run(hiera, ["--rule", "unknown-class=warning"] + [a for r in
                     [("--rule", "%s=off" % x) for x in ("parameter-type", "unknown-parameter", "interpolation-syntax",
                                                         "interpolation-function", "alias-not-alone",
                                                         "interpolation-key", "interpolation-loop",
                                                         "lookup-options-invalid", "lookup-options-merge",
                                                         "lookup-options-regexp", "lookup-options-convert-to",
                                                         "data-syntax", "eyaml-malformed", "eyaml-decrypt",
                                                         "config-syntax", "config-invalid", "parameter-missing",
                                                         "lookup-error")] for a in r] + args, d)
    check(pw.returncode == 0, "exit status 0 with warnings only (got %d)" % pw.returncode)
    for bad in (["--rule", "nosuch=off", "."], ["--format", "xml", "."], ["--nosuch"], ["/nonexistent/folder"],
                ["--facts-dir", "/nonexistent", "."], ["--config", "/nonexistent.yaml", "."]):
        pb = run(hiera, bad, d)
        check(pb.returncode == 2 and pb.stderr.startswith("hiera check: "), "exit status 2 for %s (got %d)" %
              (bad, pb.returncode))
    # from another folder: the eyaml key (relative in hiera.yaml) is found in the repository
    _, doc_out = findings(hiera, ["--facts-dir", "seeded/facts", "seeded"], HERE)
    out_lines = {l.split(" [")[0] for l in as_lines(doc_out)}
    check("eyaml-decrypt seeded/data/secrets/common.eyaml:3:13" in out_lines and
          len(doc_out["findings"]) == len(doc["findings"]), "run from another folder: the same findings")
    ph = run(hiera, ["--help"], d)
    check(ph.returncode == 0 and "usage: hiera check" in ph.stdout, "--help")
    pl = run(hiera, ["--list-rules"], d)
    names = re.findall(r"^  ([a-z-]+) ", pl.stdout, re.M)
    check(len(names) >= 30 and pl.returncode == 0, "--list-rules")
    # every rule is documented in the README with an example
    with open(os.path.join(HERE, "..", "..", "README.md")) as fh:
        readme = fh.read()
    for n in names:
        check(("`%s`" % n) in readme, "README documents rule %s" % n)
    # every rule is seeded once in seeded/expected.txt
    with open(os.path.join(d, "expected.txt")) as fh:
        seeded = {l.split()[0] for l in fh if l.strip()}
    for n in names:
        if not n.startswith("puppet8-"):  # (puppet8/ has those: test_puppet8)
            check(n in seeded, "seeded/ has a mistake for rule %s" % n)


def test_layouts(hiera):
    """The same repository as a code directory (--codedir, --all-environments), and a module."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="hiera-check-test.") as tmp:
        envs = os.path.join(tmp, "code", "environments")
        os.makedirs(envs)
        os.symlink(os.path.join(HERE, "clean"), os.path.join(envs, "production"))
        os.symlink(os.path.join(HERE, "config"), os.path.join(envs, "other"))
        p, doc = findings(hiera, ["--codedir", os.path.join(tmp, "code"), "--facts-dir", "facts"], os.path.join(HERE, "clean"))
        check(p.returncode == 0 and not doc["findings"], "--codedir: the clean environment has no finding (%s)" %
              [f["message"] for f in doc["findings"]][:3])
        p, doc = findings(hiera, ["--codedir", os.path.join(tmp, "code"), "--all-environments"], HERE)
        rules = sorted(f["rule"] for f in doc["findings"])
        check(p.returncode == 1 and rules == ["duplicate-key", "yaml-boolean", "yaml-sexagesimal"],
              "--all-environments: the findings of both environments (%s)" % rules)
        p = run(hiera, ["--codedir", os.path.join(tmp, "code"), "--environment", "nosuch"], HERE)
        check(p.returncode == 2, "--environment of an environment that does not exist: exit status 2")
        # --confdir's puppet.conf naming the global hiera.yaml (hiera_config), as hiera lookup
        # --confdir reads it: its layer's data is checked
        site = os.path.join(tmp, "site")
        os.makedirs(os.path.join(site, "data"))
        os.makedirs(os.path.join(tmp, "conf"))
        with open(os.path.join(tmp, "conf", "puppet.conf"), "w") as fh:
            fh.write("[main]\nhiera_config = %s\n" % os.path.join(site, "global.yaml"))
        with open(os.path.join(site, "global.yaml"), "w") as fh:
            fh.write("version: 5\ndefaults:\n  datadir: data\n  data_hash: yaml_data\nhierarchy:\n  - name: site\n    path: common.yaml\n")
        with open(os.path.join(site, "data", "common.yaml"), "w") as fh:
            fh.write("site::motd: hello\nsite::motd: again\n")
        p, doc = findings(hiera, ["--codedir", os.path.join(tmp, "code"), "--confdir", os.path.join(tmp, "conf"),
                                  "--environment", "production"], HERE)
        got = ["%s %s:%d" % (f["rule"], os.path.relpath(f["file"], tmp) if os.path.isabs(f["file"]) else f["file"], f["line"])
               for f in doc["findings"]]
        check(any(g.startswith("duplicate-key") and "site/data/common.yaml:2" in g for g in got),
              "--confdir's puppet.conf hiera_config: the global layer it names is checked (%s)" % got)
    # a module: its data, its classes, findings under the module's own paths
    d = os.path.join(HERE, "module")
    p, doc = findings(hiera, ["."], d)
    got = sorted("%s %s:%d:%d" % (f["rule"], f["file"], f["line"], f["column"]) for f in doc["findings"])
    with open(os.path.join(d, "expected.txt")) as fh:
        want = sorted(l.strip() for l in fh if l.strip())
    check(got == want, "module: %s, expected %s" % (got, want))


def test_puppet8(hiera):
    """The puppet8-* rules: warnings as Puppet 7, errors as Puppet 8 (but a version 5 path, where
    Puppet 8 interpolates '' with a warning), and the rules that say what Puppet 7 does (not-a-hash,
    config-invalid's 'was ignored') leave a list data file and a v3 hiera.yaml to them as Puppet 8;
    with a puppet.conf (--confdir) the severity follows its strict setting in either version."""
    import collections
    d = os.path.join(HERE, "puppet8")
    rules = set()
    for v, status in ((7, 0), (8, 1)):
        p, doc = findings(hiera, ["--puppet-version", str(v), "."], d)
        check(p.returncode == status, "puppet8 as Puppet %d: exit status %d, expected %d" % (v, p.returncode, status))
        with open(os.path.join(d, "expected-puppet%d.txt" % v)) as fh:
            want = collections.Counter(l.strip() for l in fh if l.strip())
        got = collections.Counter(as_lines(doc))
        check(got == want, "puppet8 as Puppet %d: missing %s, not expected %s" % (v, sorted(want - got), sorted(got - want)))
        for f in doc["findings"]:
            if f["rule"].startswith("puppet8-"):
                rules.add(f["rule"])
                v5_path = f["file"] == "hiera.yaml"
                sev = "error" if v == 8 and not v5_path else "warning"
                check(f["severity"] == sev, "puppet8 as Puppet %d: %s %s:%d is a %s" % (v, f["rule"], f["file"], f["line"], f["severity"]))
        if v == 8:
            check(not any("was ignored" in f["message"] or "reads no data" in f["message"] for f in doc["findings"]),
                  "puppet8 as Puppet 8: no finding says Puppet 7's 'ignored'")
        else:
            msgs = [f["message"] for f in doc["findings"] if f["rule"] == "puppet8-undefined-variable" and f["line"] == 2]
            check(msgs and "%{facts.os.family} gives it" in msgs[0], "puppet8: the structured fact is named (%s)" % msgs)
            # Puppet's own words name the variable as written (Puppet 8.10 on ocf/puppet's
            # "%{::ipaddress}": "Undefined variable '::ipaddress'")
            top = [f["message"] for f in doc["findings"] if f["rule"] == "puppet8-undefined-variable" and f["line"] == 3]
            check(top and "Undefined variable '::hostname'" in top[0] and "Undefined variable 'osfamily'" in msgs[0],
                  "puppet8: Puppet's message names '::hostname' as written (%s)" % top)
    for n in ("puppet8-undefined-variable", "puppet8-not-a-hash", "puppet8-v3-config", "puppet8-v4-path-variable"):
        check(n in rules, "puppet8/ has a mistake for rule %s" % n)
    # the severity follows the strict setting of the puppet.conf under --confdir (else the
    # version's default): an error where the lookups fail, a warning where they do not
    import tempfile
    with tempfile.TemporaryDirectory(prefix="hiera-check-strict-") as tmp:
        for v in (7, 8):
            for strict in ("off", "warning", "error"):
                conf = os.path.join(tmp, "%d-%s" % (v, strict))
                os.makedirs(conf)
                with open(os.path.join(conf, "puppet.conf"), "w") as fh:
                    fh.write("[main]\nstrict = %s\n" % strict)
                p, doc = findings(hiera, ["--puppet-version", str(v), "--confdir", conf, "."], d)
                what = "puppet8 as Puppet %d with strict = %s" % (v, strict)
                fails = strict == "error"  # a list data file and a v3 hiera.yaml fail, either version
                undefined_fails = fails and v == 8  # a legacy fact is undefined as Puppet 8 only
                sevs = collections.defaultdict(set)
                for f in doc["findings"]:
                    if f["rule"].startswith("puppet8-") and f["file"] != "hiera.yaml":
                        sevs[f["rule"]].add(f["severity"])
                want = {"puppet8-not-a-hash": {"error" if fails else "warning"},
                        "puppet8-v3-config": {"error" if fails else "warning"},
                        "puppet8-undefined-variable": {"error" if undefined_fails else "warning"},
                        "puppet8-v4-path-variable": {"error" if undefined_fails else "warning"}}
                check(dict(sevs) == want, "%s: severities %s, expected %s" % (what, dict(sevs), want))
                check(p.returncode == (1 if fails else 0), "%s: exit status %d" % (what, p.returncode))
                ignored = [f for f in doc["findings"] if f["rule"] in ("not-a-hash", "config-invalid")
                           and ("was ignored" in f["message"] or "reads no data" in f["message"])]
                check(bool(ignored) != fails, "%s: not-a-hash/config-invalid say 'ignored': %d" % (what, len(ignored)))
                msgs = " ".join(f["message"] for f in doc["findings"] if f["rule"] == "puppet8-not-a-hash")
                said = "strict = %s, %s" % (strict, "its default" if strict == ("error" if v == 8 else "warning")
                                            else "as puppet.conf sets it")
                check(said in msgs or (v == 7 and not fails), "%s: the message names the setting (%s)" % (what, msgs))
    # without --confdir, the puppet.conf of Puppet's default confdir (as hiera lookup reads it): a
    # user's ~/.puppet/etc (HOME, the Debian layout) when not root, run as nobody when root (the
    # system's /etc/puppet is never written)
    test_default_confdir(hiera, d)
    # HIERA_PUPPET_VERSION chooses as --puppet-version does
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1", HIERA_PUPPET_VERSION="8")
    p = subprocess.run([hiera, "check", "--format", "json", "."], cwd=d, capture_output=True, text=True, env=env)
    check(p.returncode == 1 and '"severity": "error", "rule": "puppet8-not-a-hash"' in p.stdout,
          "puppet8: HIERA_PUPPET_VERSION=8 makes the puppet8-* findings errors")


def test_default_confdir(hiera, d):
    """hiera check without --confdir reads the default confdir's puppet.conf (its strict setting),
    not only --confdir's."""
    import shutil, tempfile
    user = None
    if os.getuid() == 0:
        gid = subprocess.run(["id", "-gn", "nobody"], capture_output=True, text=True)
        if not shutil.which("setpriv") or gid.returncode != 0:
            print("skip: no way to run as another user; the default confdir's puppet.conf not checked")
            return
        user = ["setpriv", "--reuid", "nobody", "--regid", gid.stdout.strip(), "--clear-groups"]
    with tempfile.TemporaryDirectory(prefix="hiera-check-confdir-") as tmp:
        tree = os.path.join(tmp, "tree")
        shutil.copytree(d, tree)
        home = os.path.join(tmp, "home")
        conf = os.path.join(home, ".puppet", "etc")
        os.makedirs(conf)
        for top, dirs, files in os.walk(tmp):
            os.chmod(top, 0o777)
            for f in files:
                os.chmod(os.path.join(top, f), 0o666)
        os.chmod(tmp, 0o777)
        env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1", HOME=home, HIERA_PUPPET_LAYOUT="debian", TMPDIR=tmp)
        env.pop("HIERA_PUPPET_VERSION", None)
        if user and subprocess.run(user + [hiera, "version"], capture_output=True, env=env).returncode != 0:
            print("skip: the hiera binary cannot be run as nobody here; the default confdir's puppet.conf not checked")
            return
        for v in (7, 8):
            for strict in (None, "warning", "error"):
                path = os.path.join(conf, "puppet.conf")
                if strict is None:
                    if os.path.exists(path):
                        os.unlink(path)
                else:
                    with open(path, "w") as fh:
                        fh.write("[main]\nstrict = %s\n" % strict)
                    os.chmod(path, 0o666)
                effective = strict or ("error" if v == 8 else "warning")
                p = subprocess.run((user or []) + [hiera, "check", "--format", "json", "--puppet-version", str(v), "."],
                                   cwd=tree, capture_output=True, text=True, env=env)
                what = "default confdir's puppet.conf (strict = %s) as Puppet %d" % (strict, v)
                try:
                    doc = json.loads(p.stdout)
                except ValueError:
                    check(False, "%s: not JSON: %s" % (what, (p.stdout + p.stderr)[:300]))
                    continue
                sev = {f["severity"] for f in doc["findings"] if f["rule"] == "puppet8-not-a-hash"}
                check(sev == {"error" if effective == "error" else "warning"},
                      "%s: puppet8-not-a-hash is %s" % (what, sev))
                check(p.returncode == (1 if effective == "error" else 0), "%s: exit status %d" % (what, p.returncode))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    test_expected(hiera, "seeded", ["--facts-dir", "facts", "."], "expected.txt", 1)
    test_expected(hiera, "seeded", ["."], "expected-nofacts.txt", 1)
    test_expected(hiera, "clean", ["--facts-dir", "facts", "."], "expected.txt", 0)
    doc = test_expected(hiera, "deployed", ["."], "expected.txt", 0)
    check(any("'Written at deployment'" in n and "deployed.yaml, absent from the tree" in n for n in doc["notes"]),
          "deployed: a note names the level whose file is absent (%s)" % doc["notes"])
    doc = test_expected(hiera, "deployed2", ["."], "expected.txt", 0)
    check(any("'Customer data'" in n and "hiera-data/%{hiera_datapath}), which hiera check cannot read" in n
              for n in doc["notes"]), "deployed2: a note names the level outside the tree (%s)" % doc["notes"])
    doc = test_expected(hiera, "config", ["."], "expected.txt", 1)
    check(all(f["severity"] == "error" for f in doc["findings"] if f["rule"] == "duplicate-key"),
          "config: rules: {duplicate-key: error} in .hiera-check.yaml")
    for name in sorted(os.listdir(HERE)):
        if name.startswith("types") and os.path.isdir(os.path.join(HERE, name)):
            test_types(hiera, name)
    test_layouts(hiera)
    test_interface(hiera)
    test_puppet8(hiera)
    for f in failures:
        print("FAIL check: " + f)
    print("hiera check tests: %d passed, %d failed" % (T.passed, T.failed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
