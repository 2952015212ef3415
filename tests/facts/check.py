#!/usr/bin/env python3
"""Checks where `hiera lookup` gets a node's facts when Puppet would ask Facter (no --node), and
its --trusted FILE, without needing Puppet:

  - a fake `facter` first on PATH records how it is run (--json --show-legacy and the custom and
    external fact folders Puppet gives Facter: the modules' lib/facter, plugins/facter and facts.d,
    the factpath and pluginfactdest under the vardir) and answers what the test wants: the facts
    Puppet adds (clientcert from Facter's hostname and domain, lower case, or --certname;
    clientversion, puppetversion, clientnoop; agent_specified_environment with --environment),
    --facts over Facter's facts, and the errors: facter missing, printing nothing, printing what is
    not a JSON object, killed; its exit status 1 with facts (Facter logged errors) is not one;
  - --trusted FILE: the hash used for $trusted, and the checks on it;
  - the real facter, when installed (else skipped, saying so): what `hiera lookup` without --node
    sees is what `facter` says.

usage: tests/facts/check.py --hiera build/hiera
Prints "N passed, N failed" (and the skipped checks); exit status 1 when anything failed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAKE_FACTER = r"""#!/bin/sh
# a stand-in for facter: records its arguments, then does what FAKE_FACTER_MODE says
printf '%s\n' "$@" > "$FAKE_FACTER_LOG"
case "$FAKE_FACTER_MODE" in
  silent) exit 3 ;;
  garbage) echo 'this is not JSON'; exit 0 ;;
  array) echo '[1, 2]'; exit 0 ;;
  killed) kill -9 $$ ;;
  nohost) echo '{"kernel": "Linux"}'; exit 0 ;;
  errors) echo 'Facter: some fact failed' >&2; cat "$FAKE_FACTER_FACTS"; exit 1 ;;
  *) cat "$FAKE_FACTER_FACTS" ;;
esac
"""

FACTS = {
    "hostname": "Web01",
    "domain": "Example.COM.",
    "fqdn": "web01.example.com",
    "kernel": "Linux",
    "os": {"family": "FakeOS", "release": {"major": "7"}},
    "nothing": None,
    "networking": {"hostname": "Web01", "domain": "Example.COM."},
}

HIERA_YAML = """version: 5
hierarchy:
  - {name: role, path: "roles/%{trusted.extensions.pp_role}.yaml"}
  - {name: os, path: "os/%{facts.os.family}.yaml"}
  - {name: common, path: common.yaml}
"""

COMMON = """k::clientcert: "%{facts.clientcert}"
k::certname: "%{trusted.certname}"
k::hostname: "%{trusted.hostname}"
k::domain: "%{trusted.domain}"
k::authenticated: "%{trusted.authenticated}"
k::pp_role: "%{trusted.extensions.pp_role}"
k::clientversion: "%{facts.clientversion}"
k::puppetversion: "%{facts.puppetversion}"
k::clientnoop: "%{facts.clientnoop}"
k::agent_env: "%{facts.agent_specified_environment}"
k::os: "%{facts.os.family}"
k::kernel: "%{facts.kernel}"
k::role: "%{facts.role}"
k::nothing: "%{facts}"
"""


class Checker:
    def __init__(self):
        self.passed = self.failed = 0
        self.skipped = []

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what)

    def skip(self, why):
        self.skipped.append(why)
        print("SKIP: " + why)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="hiera-facts-check-")
    try:
        run_checks(c, hiera, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed%s" % (c.passed, c.failed, ", %d skipped" % len(c.skipped) if c.skipped else ""))
    return 1 if c.failed else 0


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def run_checks(c, hiera, tmp):
    code = os.path.join(tmp, "code")
    env_dir = os.path.join(code, "environments", "production")
    vardir = os.path.join(tmp, "var")
    write(os.path.join(code, "hiera.yaml"), HIERA_YAML)
    write(os.path.join(code, "data", "common.yaml"), COMMON)
    write(os.path.join(code, "data", "roles", "web.yaml"), "k::role_level: web\n")
    # modules with custom and external facts, in the environment and in <codedir>/modules
    for d in (os.path.join(env_dir, "modules", "alpha", "lib", "facter"),
              os.path.join(env_dir, "modules", "alpha", "facts.d"),
              os.path.join(env_dir, "modules", "beta", "plugins", "facter"),
              os.path.join(env_dir, "modules", "Bad-Name", "facts.d"),
              os.path.join(env_dir, "modules", "nofacts", "manifests"),
              os.path.join(code, "modules", "alpha", "facts.d"),
              os.path.join(code, "modules", "gamma", "lib", "facter"),
              os.path.join(code, "modules", "gamma", "facts.d"),
              os.path.join(vardir, "lib", "facter"),
              os.path.join(vardir, "facts.d")):
        os.makedirs(d)
    bindir = os.path.join(tmp, "bin")
    write(os.path.join(bindir, "facter"), FAKE_FACTER)
    os.chmod(os.path.join(bindir, "facter"), 0o755)
    facts_file = os.path.join(tmp, "facter.json")
    write(facts_file, json.dumps(FACTS))
    log = os.path.join(tmp, "facter-args.txt")
    base = ["--codedir", code, "--vardir", vardir]

    def lookup(keys, extra=(), mode="facts", path=None):
        env = dict(os.environ, FAKE_FACTER_LOG=log, FAKE_FACTER_MODE=mode, FAKE_FACTER_FACTS=facts_file,
                   PATH=path if path is not None else bindir + os.pathsep + os.environ.get("PATH", ""),
                   HIERA_CACHE_DIR="off")
        if os.path.exists(log):
            os.unlink(log)
        p = subprocess.run([hiera, "lookup"] + base + list(extra) + ["--render-as", "json"] + list(keys),
                           capture_output=True, env=env, timeout=60)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")

    def value(key, extra=(), mode="facts"):
        rc, out, err = lookup([key], extra, mode)
        if rc != 0:
            return ("error", err.strip())
        return json.loads(out)

    # the facts Puppet adds to Facter's
    c.check(value("k::clientcert") == "web01.example.com",
            "clientcert is Facter's hostname.domain, lower case, without the final dot: %r" % (value("k::clientcert"),))
    c.check(value("k::certname") == "web01.example.com" and value("k::hostname") == "web01" and
            value("k::domain") == "example.com" and value("k::authenticated") == "local",
            "$trusted is the local one of the certname")
    c.check(value("k::clientversion") == "7.23.0" and value("k::puppetversion") == "7.23.0",
            "clientversion and puppetversion are the Puppet version implemented")
    c.check(value("k::clientnoop") == "false", "clientnoop is false")
    c.check(value("k::agent_env") == "" and value("k::agent_env", ["--environment", "production"]) == "production",
            "agent_specified_environment only when --environment is given")
    c.check(value("k::os") == "FakeOS" and value("k::kernel") == "Linux", "Facter's facts are the node's")
    c.check('"nothing"=>""' in value("k::nothing"), "Facter's null fact is '' (sanitized as Puppet does)")
    c.check(value("k::clientcert", ["--certname", "given.example.com"]) == "given.example.com" and
            value("k::certname", ["--certname", "given.example.com"]) == "given.example.com",
            "--certname names the local node")
    rc, out, err = lookup(["k::clientcert"], ["--certname", "Upper.example.com"])
    c.check(rc == 1 and out == "" and "Certificate names must be lower case" in err, "--certname must be lower case: %r" % err)

    # how facter is run
    lookup(["k::os"])
    try:
        with open(log) as fh:
            argv = fh.read().split("\n")[:-1]
    except OSError:
        argv = None
    want = ["--json", "--show-legacy",
            "--custom-dir", os.path.join(env_dir, "modules", "alpha", "lib", "facter"),
            "--custom-dir", os.path.join(env_dir, "modules", "beta", "plugins", "facter"),
            "--custom-dir", os.path.join(code, "modules", "gamma", "lib", "facter"),
            "--custom-dir", os.path.join(vardir, "lib", "facter"),
            "--external-dir", os.path.join(env_dir, "modules", "alpha", "facts.d"),
            "--external-dir", os.path.join(code, "modules", "gamma", "facts.d"),
            "--external-dir", os.path.join(vardir, "facts.d")]
    c.check(argv == want, "facter is run as Puppet runs Facter:\n  got  %r\n  want %r" % (argv, want))

    # --facts goes over Facter's facts; the facts rule applies to the file
    over = os.path.join(tmp, "over.yaml")
    write(over, "role: given\nos:\n  family: Given\n")
    c.check(value("k::role", ["--facts", over]) == "given" and value("k::os", ["--facts", over]) == "Given" and
            value("k::kernel", ["--facts", over]) == "Linux", "--facts goes over Facter's facts")
    partial = os.path.join(tmp, "partial.yaml")
    write(partial, "fqdn: other.example.com\n")
    rc, out, err = lookup(["k::os"], ["--facts", partial])
    c.check(rc == 1 and "they must all be overridden" in err, "the facts rule applies to --facts: %r" % err)
    # with --node, facter is not run
    rc, out, err = lookup(["k::os"], ["--node", "web01.example.com", "--facts", over])
    c.check(rc == 0 and json.loads(out) == "Given" and not os.path.exists(log), "with --node, facter is not run")

    # facter's failures
    rc, out, err = lookup(["k::os"], mode="errors")
    c.check(rc == 0 and json.loads(out) == "FakeOS" and "Facter: some fact failed" in err,
            "facter exiting 1 with facts (it logged errors): the facts are used, its messages shown")
    for mode, what in (("silent", "prints nothing"), ("garbage", "prints what is not JSON"),
                       ("array", "prints JSON that is not an object"), ("killed", "is killed")):
        rc, out, err = lookup(["k::os"], mode=mode)
        c.check(rc == 1 and out == "" and err.startswith("Error: Could not run: ") and "facter" in err,
                "facter %s: an error naming facter (rc=%d, %r)" % (what, rc, err[:200]))
    rc, out, err = lookup(["k::os"], mode="nohost")
    c.check(rc == 1 and "certname" in err, "Facter without a hostname: the certname cannot be told (%r)" % err[:200])
    rc, out, err = lookup(["k::os"], path=os.path.join(tmp, "empty-path"))
    c.check(rc == 1 and out == "" and "facter is not installed" in err and "--node" in err,
            "no facter on PATH: a clear error (%r)" % err[:300])

    # --trusted FILE
    def trusted_file(name, text):
        p = os.path.join(tmp, name)
        write(p, text)
        return p
    node_flags = ["--node", "web01.example.com", "--facts", over]
    good = trusted_file("t.yaml", "authenticated: remote\ncertname: web01.example.com\nextensions: {pp_role: web}\n")
    c.check(value("k::pp_role", node_flags + ["--trusted", good]) == "web" and
            value("k::role_level", node_flags + ["--trusted", good]) == "web" and
            value("k::hostname", node_flags + ["--trusted", good]) == "web01" and
            value("k::domain", node_flags + ["--trusted", good]) == "example.com" and
            value("k::authenticated", node_flags + ["--trusted", good]) == "remote",
            "--trusted FILE is $trusted (hostname and domain from certname)")
    given = trusted_file("t2.json", json.dumps({"authenticated": "remote", "certname": "db01", "extensions": {},
                                                 "hostname": "own", "domain": "own.example"}))
    c.check(value("k::hostname", node_flags + ["--trusted", given]) == "own" and
            value("k::domain", node_flags + ["--trusted", given]) == "own.example",
            "--trusted: hostname and domain given are kept")
    bad = {
        "missing extensions": "authenticated: remote\ncertname: x\n",
        "authenticated": "authenticated: yes\ncertname: x\nextensions: {}\n",
        "certname": "authenticated: remote\ncertname: 12\nextensions: {}\n",
        "extensions": "authenticated: remote\ncertname: x\nextensions: [a]\n",
        "a list": "- authenticated\n",
        "a symbol": "authenticated: remote\ncertname: :x\nextensions: {}\n",
    }
    for what, text in bad.items():
        p = trusted_file("bad.yaml", text)
        rc, out, err = lookup(["k::pp_role"], node_flags + ["--trusted", p])
        c.check(rc == 1 and out == "" and err.startswith("Error: Could not run: "),
                "--trusted with %s is refused (rc=%d, %r)" % (what, rc, err[:200]))
    rc, out, err = lookup(["k::pp_role"], node_flags + ["--trusted", os.path.join(tmp, "nonexistent.yaml")])
    c.check(rc == 1 and "nonexistent.yaml" in err, "--trusted with a missing file (%r)" % err[:200])

    # the real facter, when there is one
    real = shutil.which("facter", path=os.environ.get("PATH", ""))
    if not real:
        c.skip("facter is not installed: the lookup of the local machine's facts was not compared with it")
        return
    fp = subprocess.run([real, "--json", "kernel", "networking.hostname", "networking.domain"], capture_output=True,
                        timeout=120)
    try:
        f = json.loads(fp.stdout)
    except ValueError:
        c.skip("facter gave no JSON: %r" % fp.stderr[-200:])
        return
    host = f.get("networking.hostname") or ""
    dom = f.get("networking.domain") or ""
    certname = ((host + "." + dom) if dom else host).rstrip(".").lower()
    env = dict(os.environ, HIERA_CACHE_DIR="off")
    for key, want in (("k::kernel", f.get("kernel")), ("k::clientcert", certname), ("k::certname", certname)):
        p = subprocess.run([hiera, "lookup", "--codedir", code, "--vardir", os.path.join(tmp, "novar"),
                            "--render-as", "json", key], capture_output=True, env=env, timeout=120)
        got = json.loads(p.stdout) if p.returncode == 0 else p.stderr.decode()[-200:]
        c.check(got == want, "with the real facter, %s is %r (got %r)" % (key, want, got))


if __name__ == "__main__":
    sys.exit(main())
