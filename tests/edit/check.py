#!/usr/bin/env python3
"""`hiera set` and `hiera unset` end to end, over a control repository written here (global,
environment and module layers, an eyaml level, nodes with facts):

  - where: --file (an existing file, a new one a level can read, one no level reads), --level for
    a node (--node/--facts), a level whose path interpolates nothing, --module (its namespace),
    glob levels refused;
  - what: YAML and --json values, dotted keys into hashes (made when missing), --encrypt (the
    level's public key; hiera lookup decrypts the new value), unset;
  - how: every byte outside the entry kept, refusals with file and line and the file untouched,
    the mode of the file kept, --dry-run writes nothing;
  - output: the unified diff, the fleet's impact (the nodes hiera diff reports for the same change),
    hiera check's new findings, --check refusing a new error, the exit statuses, --format json;
  - many `hiera set` processes on one file at once: each lands or says the file changed under it
    (exit 2), none is lost silently, and the file always parses.
When Ruby is installed, the edited files are also read with Ruby's YAML.load.

usage: tests/edit/check.py --hiera build/hiera     Prints "edit: N passed, N failed".
"""
import argparse, json, os, shutil, stat, subprocess, sys, tempfile, threading, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = os.path.join(HERE, "..", "fuzz", "keys")

T = Tally("edit")
check = T.check


def write(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    return p


def read(p):
    with open(p) as f:
        return f.read()


COMMON = """---
# the data every node reads
lookup_options:
  profile::users: {merge: deep}

profile::port: 8080   # the port
profile::motd: "Welcome to %{facts.hostname}"
profile::users:
  bob:
    uid: 1002
    shell: /bin/bash   # his shell
profile::list:
  - a
  - b
dup: 1
dup: 2
"""


def make_tree(root):
    shutil.copytree(KEYS, os.path.join(root, "keys"))
    env = os.path.join(root, "environments", "production")
    write(env, "hiera.yaml", f"""version: 5
defaults: {{datadir: data, data_hash: yaml_data}}
hierarchy:
  - name: Secrets
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: {root}/keys/private_key.pkcs7.pem
      pkcs7_public_key: {root}/keys/public_key.pkcs7.pem
  - {{name: Nodes, path: "nodes/%{{trusted.certname}}.yaml"}}
  - {{name: Roles, path: "roles/%{{facts.role}}.yaml"}}
  - {{name: Globbed, glob: "extra/*.yaml"}}
  - {{name: Mapped, mapped_paths: [facts.services, service, "services/%{{service}}.yaml"]}}
  - {{name: Several, paths: ["several/%{{facts.role}}.yaml", "several/common.yaml"]}}
  - {{name: Per environment, path: "envs/%{{::environment}}.yaml"}}
  - {{name: Common, path: common.yaml}}
""")
    write(env, "data/common.yaml", COMMON)
    write(env, "data/roles/web.yaml", "profile::port: 80\n")
    write(env, "data/nodes/web1.example.com.yaml", "profile::users:\n  bob:\n    shell: /bin/zsh\n")
    write(env, "modules/ntp/hiera.yaml", "version: 5\nhierarchy:\n  - {name: Module common, path: common.yaml}\n")
    write(env, "modules/ntp/data/common.yaml", "ntp::servers: [0.pool.ntp.org]\n")
    write(env, "modules/ntp/metadata.json", json.dumps({"name": "x-ntp", "version": "1.0.0", "author": "x",
                                                         "license": "MIT", "source": "x", "dependencies": []}))
    facts = os.path.join(root, "facts")
    for n, role in (("web1.example.com", "web"), ("web2.example.com", "web"), ("db1.example.com", "db")):
        host, dom = n.split(".", 1)
        write(facts, n + ".json", json.dumps({"hostname": host, "domain": dom, "fqdn": n, "clientcert": n, "role": role}))
    return env, facts


class Run:
    def __init__(self, hiera, root):
        self.hiera, self.root = hiera, root

    def __call__(self, *args, env_extra=None):
        env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
        env.update(env_extra or {})
        base = ["--codedir", self.root]
        r = subprocess.run([self.hiera] + list(args[:1]) + base + list(args[1:]), capture_output=True, text=True, env=env)
        return r


def ruby_reads(path):
    if not shutil.which("ruby"):
        return None
    r = subprocess.run(["ruby", "-ryaml", "-rjson", "-e",
                        "puts JSON.generate(YAML.load(File.read(ARGV[0]), aliases: true, permitted_classes: [Symbol]))",
                        path], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else ("error", r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-edit-check-")
    try:
        run_all(hiera, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(T.summary())


def permissions(hiera, tmp):
    """as an unprivileged user (root runs the tests): a folder it cannot write, and a file of
    another owner in a folder it can (a rename would give the file to the editor): refused, exit 2,
    the file as it was"""
    if not shutil.which("setpriv"):
        check(False, "no setpriv (util-linux) to run hiera set as another user")
        return
    box = os.path.join(tmp, "perm")
    os.makedirs(os.path.join(box, "data"))
    shutil.copy(hiera, os.path.join(box, "hiera"))
    os.chmod(tmp, 0o755)
    for d in (box, os.path.join(box, "data")):
        os.chmod(d, 0o755)
    f = os.path.join(box, "data", "common.yaml")
    write(box, "data/common.yaml", "a: 1\n")
    os.chmod(f, 0o644)
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1", HOME=box)

    def as_nobody(*args):
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", os.path.join(box, "hiera")]
                              + list(args), capture_output=True, text=True, env=env)
    r = as_nobody("set", "--file", f, "a", "2")
    check(r.returncode == 2 and "Permission denied" in r.stderr and read(f) == "a: 1\n",
          f"a folder the user cannot write: {r.returncode} {r.stderr}")
    os.chmod(os.path.join(box, "data"), 0o777)
    r = as_nobody("set", "--file", f, "a", "3")
    check(r.returncode == 2 and "owner" in r.stderr and read(f) == "a: 1\n" and os.stat(f).st_uid == 0,
          f"a file of another owner: {r.returncode} {r.stderr}")
    check(not [x for x in os.listdir(os.path.join(box, "data")) if x != "common.yaml"], "a temporary file left")
    os.chmod(tmp, 0o700)


def run_all(hiera, tmp):
    root = os.path.join(tmp, "code")
    env, facts = make_tree(root)
    run = Run(hiera, root)
    common = os.path.join(env, "data", "common.yaml")
    node = ["--node", "web1.example.com", "--facts", os.path.join(facts, "web1.example.com.json")]

    # ---- a scalar in place: the diff, the comment beside it, the mode of the file
    os.chmod(common, 0o640)
    r = run("set", "--level", "Common", "profile::port", "8443")
    check(r.returncode == 0, f"set: exit {r.returncode}: {r.stderr}")
    want = COMMON.replace("profile::port: 8080   # the port", "profile::port: 8443   # the port")
    check(read(common) == want, "set: the file:\n" + read(common))
    check("-profile::port: 8080   # the port\n+profile::port: 8443   # the port\n" in r.stdout, "set: the diff:\n" + r.stdout)
    check(r.stdout.startswith(f"--- {common}\n+++ {common}\n@@ "), "set: the diff's header:\n" + r.stdout)
    check(stat.S_IMODE(os.stat(common).st_mode) == 0o640, "set: the mode of the file is not kept")
    check(f"wrote {common}" in r.stderr, "set: says what it wrote: " + r.stderr)
    check(not [f for f in os.listdir(os.path.dirname(common)) if f.startswith(".")], "set: a temporary file left")
    if os.geteuid() == 0:
        os.chown(common, 65534, 65534)
        r = run("set", "--file", common, "profile::port", "8444")
        st = os.stat(common)
        check(r.returncode == 0 and (st.st_uid, st.st_gid) == (65534, 65534), "set: the owner of the file is not kept")
        permissions(hiera, tmp)
        os.chown(common, 0, 0)
    # the same value again: nothing written
    before = os.stat(common).st_ino
    r = run("set", "--file", common, "profile::port", "8444" if os.geteuid() == 0 else "8443")
    check(r.returncode == 0 and "already has this value" in r.stderr and os.stat(common).st_ino == before,
          f"set to the same value: {r.returncode} {r.stderr}")

    # ---- values: YAML, JSON, a dotted key, a new key, --dry-run
    r = run("set", "--file", common, "profile::users.bob.shell", "/bin/fish")
    check(r.returncode == 0 and "    shell: /bin/fish   # his shell\n" in read(common), "dotted key: " + read(common))
    r = run("set", "--file", common, "profile::users.carol", '{"uid": 1003, "groups": ["a"]}', "--json")
    check(r.returncode == 0 and "    shell: /bin/fish   # his shell\n  carol:\n    uid: 1003\n    groups:\n      - a\n" in read(common),
          "a new hash inside: " + read(common))
    r = run("set", "--file", common, "profile::list", "[x, 'y z', 8443]")
    check(r.returncode == 0 and "profile::list:\n  - x\n  - y z\n  - 8443\ndup: 1\n" in read(common), "an array: " + read(common))
    snapshot = read(common)
    r = run("set", "--file", common, "profile::new", "'8443'", "--dry-run")
    check(r.returncode == 0 and read(common) == snapshot and "+profile::new: '8443'\n" in r.stdout and "dry run" in r.stderr,
          f"--dry-run: {r.returncode} {r.stdout} {r.stderr}")
    rb = ruby_reads(common)
    if rb is not None:
        check(isinstance(rb, dict) and rb.get("profile::list") == ["x", "y z", 8443] and rb["profile::users"]["carol"]["uid"] == 1003,
              f"Ruby reads the edited file: {rb}")
    look = subprocess.run([hiera, "lookup", "--codedir", root] + node + ["profile::users", "--render-as", "json"],
                          capture_output=True, text=True, env=dict(os.environ, HIERA_CACHE_DIR="off"))
    check(json.loads(look.stdout or "null") == {"bob": {"uid": 1002, "shell": "/bin/zsh"}, "carol": {"uid": 1003, "groups": ["a"]}},
          "hiera lookup after the edits: " + look.stdout + look.stderr)

    # ---- unset
    r = run("unset", "--file", common, "profile::users.carol")
    check(r.returncode == 0 and "carol" not in read(common), "unset inside a hash: " + read(common))
    r = run("unset", "--file", common, "profile::nothing")
    check(r.returncode == 0 and "nothing to remove" in r.stderr, f"unset of a key not there: {r.returncode} {r.stderr}")
    r = run("unset", "--file", common, "profile::motd", "--format", "json")
    doc = json.loads(r.stdout or "{}")
    check(r.returncode == 0 and doc.get("written") and doc.get("old_value") == "Welcome to %{facts.hostname}"
          and "profile::motd" not in read(common), "unset --format json: " + r.stdout)

    # ---- refusals: the file untouched, its line said
    snapshot = read(common)
    r = run("set", "--file", common, "dup", "3")
    check(r.returncode == 1 and f"{common}:" in r.stderr and "defined twice" in r.stderr and read(common) == snapshot,
          f"a key defined twice: {r.returncode} {r.stderr}")
    r = run("set", "--file", common, "profile::list.x", "1")
    check(r.returncode == 1 and "not a hash" in r.stderr and read(common) == snapshot, "inside an array: " + r.stderr)
    r = run("set", "--level", "Globbed", "k", "v")
    check(r.returncode == 1 and "glob" in r.stderr, "a glob level: " + r.stderr)
    r = run("set", "--level", "Mapped", *node, "k", "v")
    check(r.returncode == 1 and "mapped_paths" in r.stderr, "a mapped_paths level: " + r.stderr)
    r = run("set", "--level", "Nodes", "k", "v")
    check(r.returncode == 1 and "--node" in r.stderr, "a level with variables, no node: " + r.stderr)
    r = run("set", "--level", "Per environment", "profile::x", "1")
    check(r.returncode == 0 and read(os.path.join(env, "data", "envs", "production.yaml")) == "---\nprofile::x: 1\n",
          "a level that interpolates only the environment needs no node: " + r.stderr)
    r = run("set", "--level", "Nope", "k", "v")
    check(r.returncode == 1 and "no level named 'Nope'" in r.stderr and "'Common'" in r.stderr, "no such level: " + r.stderr)
    r = run("set", "--file", os.path.join(env, "data", "orphan.yaml"), "k", "v")
    check(r.returncode == 1 and "no level" in r.stderr and not os.path.exists(os.path.join(env, "data", "orphan.yaml")),
          "a new file no level reads: " + r.stderr)

    # ---- where: a node's level (a new file), a module
    r = run("set", "--level", "Nodes", *node, "profile::port", "9000")
    nodefile = os.path.join(env, "data", "nodes", "web1.example.com.yaml")
    check(r.returncode == 0 and read(nodefile).endswith("profile::port: 9000\n"), "a node's level: " + r.stderr)
    r = run("set", "--level", "Roles", "--node", "db1.example.com", "--facts", os.path.join(facts, "db1.example.com.json"),
            "profile::port", "5432")
    dbfile = os.path.join(env, "data", "roles", "db.yaml")
    check(r.returncode == 0 and read(dbfile) == "---\nprofile::port: 5432\n", "a new file of a level: " + r.stderr)
    check(r.stdout.startswith("--- /dev/null\n"), "a new file's diff: " + r.stdout)
    r = run("set", "--level", "Several", *node, "profile::motd", "several")
    check(r.returncode == 0 and read(os.path.join(env, "data", "several", "web.yaml")) == "---\nprofile::motd: several\n"
          and not os.path.exists(os.path.join(env, "data", "several", "common.yaml")),
          "a level with several paths takes its first: " + r.stderr)
    r = run("unset", "--level", "Several", *node, "profile::motd")
    check(r.returncode == 0 and read(os.path.join(env, "data", "several", "web.yaml")) == "---\n",
          "unset in a level with several paths: " + r.stderr)
    r = run("set", "--module", "ntp", "--level", "Module common", "ntp::servers", "[1.pool.ntp.org]")
    check(r.returncode == 0 and read(os.path.join(env, "modules/ntp/data/common.yaml")) == "ntp::servers: [1.pool.ntp.org]\n",
          "a module's data: " + r.stderr)
    r = run("set", "--module", "ntp", "--level", "Module common", "profile::x", "1")
    check(r.returncode == 1 and "namespace" in r.stderr, "a key outside the module's namespace: " + r.stderr)

    # ---- --encrypt: the level's public key; hiera lookup decrypts it
    r = run("set", "--level", "Secrets", "profile::db::password", "s3cret value", "--encrypt")
    secrets = os.path.join(env, "data", "secrets.eyaml")
    check(r.returncode == 0 and read(secrets).startswith("---\nprofile::db::password: ENC[PKCS7,"), "--encrypt: " + r.stderr)
    look = subprocess.run([hiera, "lookup", "--codedir", root] + node + ["profile::db::password"], capture_output=True,
                          text=True, env=dict(os.environ, HIERA_CACHE_DIR="off"))
    check(look.stdout == "--- s3cret value\n", "the encrypted value decrypts: " + look.stdout + look.stderr)
    r = run("set", "--file", common, "k", "v", "--encrypt")
    check(r.returncode == 1 and "eyaml" in r.stderr, "--encrypt outside an eyaml level: " + r.stderr)
    r = run("set", "--level", "Secrets", "profile::db::password", "again", "--encrypt", "--format", "json")
    check(r.returncode == 0 and "again" not in r.stdout, "the plain text of a secret is not in the output")

    # ---- the fleet: the nodes hiera diff reports for the same change
    # (web nodes take the port from their role's file, db1 from its own: only the list reaches them all)
    r = run("set", "--file", common, "profile::port", "7000", "--facts-dir", facts, "--format", "json", "--dry-run")
    doc = json.loads(r.stdout or "{}")
    im = doc.get("impact") or {}
    check(r.returncode == 0 and im.get("summary", {}).get("nodes_changed") == 0, f"no node changes: {r.stdout} {r.stderr}")
    r = run("set", "--file", common, "profile::list", "[z]", "--facts-dir", facts, "--format", "json", "--dry-run")
    doc = json.loads(r.stdout or "{}")
    im = doc.get("impact") or {}
    changed = sorted(n for k in im.get("keys", []) for c in k["changes"] for n in c["nodes"])
    check(r.returncode == 0 and changed == ["db1.example.com", "web1.example.com", "web2.example.com"],
          f"the fleet's impact: {changed} {r.stderr}")
    check(im.get("summary", {}).get("keys_looked_up", 99) == 1, "the fast path: " + json.dumps(im.get("summary")))
    r = run("set", "--file", common, "profile::list", "[z]", "--facts-dir", facts, "--dry-run")
    check("profile::list\n  changed on 3 nodes (db1.example.com, web1.example.com, web2.example.com)" in r.stdout
          and "with the edit" in r.stdout, "the fleet's impact as text:\n" + r.stdout)

    # ---- hiera check's new findings; --check
    r = run("set", "--file", common, "profile::motd", "'%{lookup(profile::port)}'", "--check")
    check(r.returncode == 1 and "interpolation-syntax" in r.stdout and "nothing written" in r.stderr
          and "lookup(profile::port)" not in read(common), f"--check: {r.returncode} {r.stdout} {r.stderr}")
    r = run("set", "--file", common, "profile::motd", "'%{lookup(profile::port)}'", "--format", "json", "--dry-run")
    doc = json.loads(r.stdout or "{}")
    check("interpolation-syntax" in [f["rule"] for f in doc.get("findings", [])], "findings in json: " + r.stdout)

    # ---- bad options: exit 2
    for args in (["set", "--file", common, "k"], ["set", "k", "v"], ["set", "--file", common, "--level", "Common", "k", "v"],
                 ["set", "--file", common, "k", "[x", ], ["set", "--file", common, "k", "v", "--format", "xml"],
                 ["unset", "--file", common, "k", "--json"]):
        r = run(*args)
        check(r.returncode == 2 and r.stderr.startswith("Error:"), f"{args}: exit {r.returncode} {r.stderr}")
    r = subprocess.run([hiera, "set", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "usage: hiera set" in r.stdout and "--dry-run" in r.stdout, "set --help")

    # ---- many processes on one file: each lands or is told the file changed under it
    target = write(env, "data/common.yaml", "---\nbase: 1\n")
    results = {}
    stop = threading.Event()
    bad_reads = []

    def reader():
        while not stop.is_set():
            t = read(target)
            if not t.startswith("---\nbase: 1\n"):
                bad_reads.append(t)

    def writer(i):
        results[i] = run("set", "--file", target, f"key{i}", str(i))

    rt = threading.Thread(target=reader)
    rt.start()
    ts = [threading.Thread(target=writer, args=(i,)) for i in range(12)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    rt.join()
    final = read(target)
    landed = [i for i, r in results.items() if r.returncode == 0]
    stale = [i for i, r in results.items() if r.returncode == 2 and "changed since" in r.stderr]
    check(len(landed) + len(stale) == 12, "concurrent sets: " + repr({i: (r.returncode, r.stderr) for i, r in results.items()}))
    check(all(f"key{i}: {i}\n" in final for i in landed) and not any(f"key{i}:" in final for i in stale),
          f"concurrent sets: landed {landed}, stale {stale}, file:\n{final}")
    check(landed and not bad_reads, f"the file was read half written or broken: {bad_reads[:2]}")


if __name__ == "__main__":
    main()
