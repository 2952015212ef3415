#!/usr/bin/env python3
"""Checks `hiera diff` on small trees made here: what it reports for known edits (values, deep
paths, keys added and removed, failures, a hiera.yaml broken on one side said once, Sensitive
values never shown), its three formats, --nodes, --fail-on, --keys-file, --explain, colour only
when asked or on a terminal, nodes present on one side only, facts that differ per side or fail,
sides that are environments, git revisions (folders and revisions report alike; the repository's
work tree and index untouched; the scratch folder removed) and the errors for sides that are not
folders, repositories or revisions.

usage: tests/diff/check.py --hiera build/hiera
Prints "N passed, N failed"; exit status 1 when anything failed.
"""
import argparse
import re
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:  # JSON is YAML too
    yaml = None


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what + (("\n  " + detail[:2000].replace("\n", "\n  ")) if detail else ""))


def write(root, files):
    for rel, content in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if content is None:
            if os.path.exists(path):
                os.unlink(path)
            continue
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else
                    yaml.safe_dump(content, sort_keys=False) if yaml else json.dumps(content, indent=1) + "\n")


def facts(name, **extra):
    f = {"hostname": name, "domain": "example.com", "fqdn": name + ".example.com", "clientcert": name + ".example.com",
         "role": "web"}
    f.update(extra)
    return f


HIERA = {"version": 5, "defaults": {"datadir": "data", "data_hash": "yaml_data"},
         "hierarchy": [{"name": "node", "path": "nodes/%{trusted.certname}.yaml"},
                       {"name": "role", "path": "role/%{facts.role}.yaml"},
                       {"name": "common", "path": "common.yaml"}]}

COMMON = {
    "lookup_options": {"profile::users": {"merge": "deep"}, "secret::pw": {"convert_to": "Sensitive"}},
    "profile::users": {"alice": {"uid": 1001, "shell": "/bin/bash"}, "bob": {"uid": 1002, "shell": "/bin/bash"}},
    "ntp::servers": ["a", "b"],
    "motd": "Welcome to %{facts.role}",
    "reads": "%{lookup('ntp::servers.0')}",
    "gone": "soon",
    "secret::pw": "hunter2",
    "float": 1,
}


def base_tree(root, nnodes=5):
    write(root, {"environments/production/hiera.yaml": HIERA,
                 "environments/production/data/common.yaml": COMMON,
                 "environments/production/data/role/db.yaml": {"motd": "db here"},
                 "environments/production/data/nodes/n0.example.com.yaml": {"profile::users": {"bob": {"shell": "/bin/zsh"}}}})
    for i in range(nnodes):
        write(root, {"facts/n%d.example.com.yaml" % i: facts("n%d" % i, role="db" if i == 4 else "web")})


def section(text, key):
    """The text report's entry for key (up to the next blank line), or ''."""
    i = text.find("\n" + key + "\n")
    return text[i + 1:].split("\n\n")[0] if i >= 0 else ""


def issue37(c, diff, jdiff, top):
    """Data in Puppet's environmentpath and outside the trees, groups with the same changed paths,
    the changed files' order, the warnings."""
    root = os.path.join(top, "i37")
    hiera_abs = {"version": 5, "defaults": {"data_hash": "yaml_data"},
                 "hierarchy": [{"name": "private", "datadir": "/nonexistent-hiera-diff-%{environment}/private",
                                "path": "node/%{trusted.certname}.yaml"},
                               {"name": "public", "datadir": "/etc/puppetlabs/code/environments/%{environment}/hieradata",
                                "paths": ["nodes/%{trusted.certname}.yaml", "%{facts.undefined_var}.yaml",
                                          "common.yaml"]}]}
    sides = {}
    for side, prio in (("old", '"00"'), ("new", "0")):
        d = os.path.join(root, side)
        files = {"environments/production/hiera.yaml": hiera_abs,
                 "environments/production/hieradata/common.yaml":
                     "sudo::configs:\n  defaults:\n    priority: %s\n    content: base\n" % prio,
                 "environments/production/hieradata/a.yaml": "x: %s\n" % ("1" if side == "old" else "2"),
                 "environments/production/hieradata/b.yaml": "x: %s\n" % ("1" if side == "old" else "2")}
        # two nodes whose sudo::configs differ where nothing changes: two groups, one change
        files["environments/production/hieradata/nodes/web1.example.com.yaml"] = (
            "sudo::configs:\n  defaults:\n    priority: %s\n    content: web\n" % prio)
        files["environments/production/hieradata/z.yaml"] = "z: %d\n" % (1 if side == "old" else 2)
        write(d, files)
        sides[side] = d
    fd = os.path.join(root, "facts")
    write(fd, {"web1.example.com.json": json.dumps(facts("web1")), "db1.example.com.json": json.dumps(facts("db1")),
               "db2.example.com.json": json.dumps(facts("db2"))})
    p = diff(sides["old"], sides["new"], "--facts-dir", fd)
    out = p.stdout
    c.check(p.returncode == 1 and "sudo::configs.defaults.priority" in out,
            "a datadir in Puppet's environmentpath is read in each side's tree (the change is seen)", out + p.stderr)
    c.check(out.count("read in each side's own tree") == 1, "the mapping is said once", out)
    c.check(p.stderr.count("/nonexistent-hiera-diff-%{environment}/private is outside both trees") == 1,
            "a datadir outside both trees is warned about", p.stderr)
    c.check("in 2 groups whose values differ where nothing changed" in out and
            out.count("sudo::configs.defaults.priority") == 1,
            "groups with the same changed paths are shown once, then each group's nodes", out)
    c.check("Warning: Undefined variable" not in p.stderr or "(file & line not available)" in p.stderr,
            "a warning is printed whole", p.stderr)
    p2, doc = jdiff(sides["old"], sides["new"], "--facts-dir", fd)
    c.check(doc is not None, "json", p2.stderr)
    if doc:
        kinds = sorted((d["side"], d["kind"]) for d in doc["datadirs"])
        c.check(kinds == [("new", "mapped"), ("new", "outside"), ("old", "mapped"), ("old", "outside")],
                "JSON datadirs: mapped and outside, on both sides", json.dumps(doc["datadirs"]))
        paths = [f["path"] for f in doc["fast_path"]["files"]]
        c.check(paths == sorted(paths) and len(paths) >= 4, "the changed files in the order of their paths", repr(paths))
        runs = [json.dumps(jdiff(sides["old"], sides["new"], "--facts-dir", fd)[1]["fast_path"]) for _ in range(3)]
        c.check(len(set(runs)) == 1, "the same list of changed files on every run")
    # the warnings: once per message, whole, with the nodes of each side
    hiera_warn = {"version": 5, "defaults": {"datadir": "data", "data_hash": "yaml_data"},
                  "hierarchy": [{"name": "role", "path": "role/%{::role}.yaml"}, {"name": "common", "path": "common.yaml"}]}
    for side, v in (("old", 1), ("new", 2)):
        write(os.path.join(root, "w" + side), {"environments/production/hiera.yaml": hiera_warn,
                                              "environments/production/data/common.yaml": "k: %d\n" % v})
    fd2 = os.path.join(root, "facts2")
    write(fd2, {"a.example.com.json": json.dumps({"hostname": "a", "domain": "example.com", "fqdn": "a.example.com",
                                                  "clientcert": "a.example.com"}),
                "b.example.com.json": json.dumps({"hostname": "b", "domain": "example.com", "fqdn": "b.example.com",
                                                  "clientcert": "b.example.com"})})
    conf = os.path.join(root, "conf")
    write(conf, {"puppet.conf": "[main]\nstrict = warning\n"})
    p = diff(os.path.join(root, "wold"), os.path.join(root, "wnew"), "--facts-dir", fd2, "--confdir", conf)
    c.check(p.stderr.count("Warning: Undefined variable '::role'") == 1, "a warning once, not once per node and side",
            p.stderr)
    c.check("(file & line not available)" in p.stderr, "the warning whole, with Puppet's location line", p.stderr)
    c.check("(old side: 2 nodes; new side: 2 nodes)" in p.stderr, "how many nodes met it, on which side", p.stderr)
    p, doc = jdiff(os.path.join(root, "wold"), os.path.join(root, "wnew"), "--facts-dir", fd2, "--confdir", conf)
    w = doc["warnings"] if doc else []
    c.check(len(w) == 1 and w[0]["old_nodes"] == 2 and w[0]["new_nodes"] == 2, "JSON warnings", json.dumps(w))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    c = Checker()
    top = tempfile.mkdtemp(prefix="hiera-diff-check-")
    scratch_tmp = os.path.join(top, "tmp")
    os.makedirs(scratch_tmp)
    env = dict(os.environ, HIERA_CACHE_DIR="off", TMPDIR=scratch_tmp)
    env.pop("NO_COLOR", None)

    def diff(*a, cwd=None):
        return subprocess.run([hiera, "diff"] + list(a), capture_output=True, text=True, env=env, cwd=cwd, timeout=120)

    def jdiff(*a, cwd=None):
        p = diff(*(list(a) + ["--format", "json"]), cwd=cwd)
        try:
            return p, json.loads(p.stdout)
        except ValueError:
            return p, None

    old, new = os.path.join(top, "old"), os.path.join(top, "new")
    base_tree(old)
    base_tree(new)
    fd = os.path.join(old, "facts")

    # ---- nothing changed
    p = diff(old, new, "--facts-dir", fd)
    c.check(p.returncode == 0 and "no changes" in p.stdout, "identical trees: exit 0, 'no changes'", p.stdout + p.stderr)

    # ---- edits
    common = json.loads(json.dumps(COMMON))
    common["profile::users"]["bob"]["uid"] = 2002
    common["profile::users"]["carol"] = {"uid": 1003}
    del common["profile::users"]["alice"]["shell"]
    common["ntp::servers"] = ["c", "b"]
    del common["gone"]
    common["new::key"] = {"x": 1}
    common["secret::pw"] = "correct horse"
    common["float"] = 1.0
    common["lookup_options"]["profile::users"] = {"merge": "deep"}  # (unchanged)
    write(new, {"environments/production/data/common.yaml": common})
    p, d = jdiff(old, new, "--facts-dir", fd)
    c.check(p.returncode == 1 and d is not None, "changes: exit 1 with a JSON report", p.stderr)
    if d:
        keys = {e["key"]: e["changes"] for e in d["keys"]}
        users = keys.get("profile::users", [])
        paths = sorted(set(pp["path"] for ch in users for pp in ch.get("paths", [])))
        c.check(paths == ["profile::users.alice.shell", "profile::users.bob.uid", "profile::users.carol"],
                "deep changes as paths", json.dumps(users))
        n0 = [ch for ch in users if "n0.example.com" in ch["nodes"]]
        c.check(len(users) == 2 and n0 and n0[0]["count"] == 1, "n0 (its own bob.shell) is a change of its own",
                json.dumps(users))
        kinds = {p_["path"]: p_["kind"] for ch in users for p_ in ch["paths"]}
        c.check(kinds.get("profile::users.alice.shell") == "removed" and kinds.get("profile::users.carol") == "added",
                "removed and added paths", json.dumps(kinds))
        c.check([ch["kind"] for ch in keys.get("gone", [])] == ["removed"] and keys["gone"][0]["count"] == 5,
                "a removed key on every node", json.dumps(keys.get("gone")))
        c.check([ch["kind"] for ch in keys.get("new::key", [])] == ["added"], "an added key")
        c.check("reads" in keys, "a key that reads a changed key through lookup() is looked up again and changes")
        c.check("float" in keys, "1 and 1.0 are not the same answer")
        c.check("motd" not in keys, "an unchanged key is not reported")
        c.check("hunter2" not in p.stdout and "correct horse" not in p.stdout and "secret::pw" in keys,
                "a Sensitive value changes without being shown")
        c.check(d["summary"]["nodes_changed"] == 5 and d["summary"]["keys_changed"] == 7,
                "summary counts", json.dumps(d["summary"]))
        c.check(d["fast_path"]["full"] is False and d["summary"]["keys_looked_up"] < d["summary"]["keys"],
                "the fast path looked up fewer keys than there are", json.dumps(d["summary"]))
        c.check(d["schema"] == "hiera-diff/1" and d["old"]["type"] == "directory" and d["new"]["tree"] == "codedir",
                "schema and sides", json.dumps(d["old"]))
    p = diff(old, new, "--facts-dir", fd)
    t = p.stdout
    c.check("profile::users.bob.uid: 1002 \u2192 2002" in t and "\033[" not in t,
            "text: paths with old \u2192 new, no colour into a pipe", t)
    c.check("5 nodes changed, 7 keys changed, 0 lookups now fail" in t, "text: the summary line", t)
    c.check("n0.example.com, n1.example.com, n2.example.com, \u2026 +2" in t and "n3.example.com" not in section(t, "gone"),
            "text: a few nodes then a count", t)
    p = diff(old, new, "--facts-dir", fd, "--nodes")
    c.check("n3.example.com" in section(p.stdout, "gone"), "--nodes lists every node", p.stdout)
    p = diff(old, new, "--facts-dir", fd, "--color", "always")
    c.check("\033[" in p.stdout, "--color always colours")
    p = diff(old, new, "--facts-dir", fd, "--format", "markdown")
    c.check(p.stdout.startswith("### hiera diff") and "| Key | Change | Nodes |" in p.stdout and
            "`profile::users.bob.uid`: `1002` \u2192 `2002`" in p.stdout, "markdown table", p.stdout)
    p = diff(old, new, "--facts-dir", fd, "--fail-on", "failures")
    c.check(p.returncode == 0, "--fail-on failures: changes without failures exit 0", p.stdout)
    p, d = jdiff(old, new, "--facts-dir", fd, "ntp::servers", "motd")
    c.check(d is not None and [e["key"] for e in d["keys"]] == ["ntp::servers"] and d["summary"]["keys"] == 2,
            "keys given as arguments", p.stdout[:500])
    kf = os.path.join(top, "keys.txt")
    with open(kf, "w") as f:
        f.write("# comment\n\ngone\n  motd  \n")
    p, d = jdiff(old, new, "--facts-dir", fd, "--keys-file", kf)
    c.check(d is not None and [e["key"] for e in d["keys"]] == ["gone"], "--keys-file", p.stdout[:500])

    # ---- --explain
    p = diff(old, new, "--facts-dir", fd, "--explain", "profile::users", "--node", "n0.example.com")
    c.check(p.returncode == 1 and "profile::users for n0.example.com: changed" in p.stdout and
            "--- old" in p.stdout and "+++ new" in p.stdout and "data/common.yaml" in p.stdout and
            "data/nodes/n0.example.com.yaml" in p.stdout and "\n+ " in p.stdout and "\n- " in p.stdout,
            "--explain: both sides' provenance, the lines that differ marked", p.stdout)
    body = [l for l in p.stdout.splitlines() if l[:2] in ("- ", "+ ", "  ") and "#" in l]
    c.check(body and not any(top in l for l in body), "--explain: paths relative to each side", p.stdout)
    c.check(any(l.startswith("  ") and "alice" in l for l in body),
            "--explain: lines that only moved with the alignment are not marked", p.stdout)
    p = diff(old, new, "--facts-dir", fd, "--explain", "motd", "--node", "n1.example.com", "--format", "json")
    try:
        d = json.loads(p.stdout)
        ok = p.returncode == 0 and d["change"] == "unchanged" and d["old"]["value"] == "Welcome to web" and \
            d["old"]["provenance"]["file"].endswith("data/common.yaml")
    except (ValueError, KeyError, TypeError):
        ok = False
    c.check(ok, "--explain --format json of an unchanged answer", p.stdout)

    # ---- failures: a lookup that now fails, then a broken hiera.yaml said once
    write(new, {"environments/production/data/common.yaml": dict(common, motd="%{lookup('motd')}")})
    p, d = jdiff(old, new, "--facts-dir", fd)
    if d:
        m = {e["key"]: e["changes"] for e in d["keys"]}.get("motd", [])
        c.check(len(m) == 1 and m[0]["kind"] == "now_failing" and "Recursive" in m[0]["error"] and
                m[0]["old"] == "Welcome to web" and d["summary"]["now_failing"] == 4,
                "a lookup that now fails, with its message and the answer before", json.dumps(m))
    p = diff(old, new, "--facts-dir", fd, "--fail-on", "failures")
    c.check(p.returncode == 1, "--fail-on failures: a new failure exits 1")
    write(new, {"environments/production/data/common.yaml": common,
                "environments/production/hiera.yaml": "version: 5\nhierarchy: [\n"})
    p, d = jdiff(old, new, "--facts-dir", fd)
    c.check(d is not None and len(d["failures"]) == 1 and len(d["failures"][0]["keys"]) == d["summary"]["keys"] and
            len(d["failures"][0]["nodes"]) == 5 and d["keys"] == [] and d["fast_path"]["full"] is True,
            "a broken hiera.yaml: one failure for every key and node", p.stdout[:1500])
    p = diff(old, new, "--facts-dir", fd)
    c.check(p.stdout.count("now failing for") == 1 and p.stdout.count("Error:") == 1,
            "a broken hiera.yaml is said once in text", p.stdout)
    p = diff(new, old, "--facts-dir", fd)
    c.check(p.stdout.count("no longer failing for") == 1, "mending it is said once too", p.stdout)
    write(new, {"environments/production/hiera.yaml": HIERA})

    # ---- facts: one side only, different per side, failing
    fo, fn = os.path.join(top, "facts-old"), os.path.join(top, "facts-new")
    shutil.copytree(fd, fo)
    shutil.copytree(fd, fn)
    os.unlink(os.path.join(fn, "n3.example.com.yaml"))
    write(fn, {"n9.example.com.yaml": facts("n9")})
    write(fn, {"n4.example.com.yaml": facts("n4", role="web")})  # n4 is db on the old side
    write(new, {"environments/production/data/common.yaml": COMMON})
    p, d = jdiff(old, new, "--old-facts-dir", fo, "--new-facts-dir", fn)
    if d:
        c.check(d["nodes_only_old"] == ["n3.example.com"] and d["nodes_only_new"] == ["n9.example.com"] and
                p.returncode == 1, "nodes on one side only are listed once", json.dumps(d["summary"]))
        keys = {e["key"]: e["changes"] for e in d["keys"]}
        c.check("motd" in keys and keys["motd"][0]["nodes"] == ["n4.example.com"],
                "a node whose facts differ between the sides is compared whole", json.dumps(d["keys"]))
    write(fn, {"n4.example.com.yaml": "hostname: [unclosed\n", "n1.example.com.yaml": {"hostname": "n1", "role": "web"}})
    p, d = jdiff(old, new, "--old-facts-dir", fo, "--new-facts-dir", fn)
    c.check(p.returncode == 2 and d is not None and sorted(x["node"] for x in d["not_compared"]) ==
            ["n1.example.com", "n4.example.com"], "facts that fail: the nodes are not compared, exit 2",
            p.stdout[:1500] + p.stderr)
    p = diff(old, new, "--old-facts-dir", fo, "--new-facts-dir", fn)
    c.check("not compared (2 nodes)" in p.stdout and "must all be overridden" in p.stdout, "text: not compared",
            p.stdout)

    # ---- sides that are environments
    eo, en = os.path.join(top, "env-old"), os.path.join(top, "env-new")
    shutil.copytree(os.path.join(old, "environments/production"), eo)
    shutil.copytree(os.path.join(old, "environments/production"), en)
    write(en, {"data/role/db.yaml": {"motd": "db, changed"}})
    p, d = jdiff(eo, en, "--facts-dir", fd)
    c.check(d is not None and d["old"]["tree"] == "environment" and [e["key"] for e in d["keys"]] == ["motd"] and
            d["keys"][0]["changes"][0]["nodes"] == ["n4.example.com"] and
            d["fast_path"]["files"][0]["path"] == "data/role/db.yaml", "sides that are environments",
            p.stdout[:1500] + p.stderr)

    # ---- a YAML symbol key (":foo:") is the key "foo", for the fast path too
    so, sn = os.path.join(top, "sym-old"), os.path.join(top, "sym-new")
    for d_, v_ in ((so, 1), (sn, 2)):
        write(d_, {"environments/production/hiera.yaml": HIERA,
                   "environments/production/data/common.yaml": ":foo: %d\nbar: \"%%{lookup('foo')}\"\nbaz: 3\n" % v_})
    p, d = jdiff(so, sn, "--facts-dir", fd)
    c.check(d is not None and [e["key"] for e in d["keys"]] == ["bar", "foo"] and d["summary"]["keys_looked_up"] == 2,
            "a symbol key's change, and the key that interpolates it", p.stdout[:800] + p.stderr)

    # ---- a module read through a legacy data provider (metadata.json, no hiera.yaml): its data is not
    # in the snapshots, so a change there makes every key looked up again; a module's other files do not
    lo_, ln_ = os.path.join(top, "legacy-old"), os.path.join(top, "legacy-new")
    meta = json.dumps({"name": "me-m", "version": "1.0.0", "author": "me", "license": "x", "source": "x",
                       "dependencies": [], "data_provider": "hiera"})
    for d_, v_ in ((lo_, 1), (ln_, 2)):
        write(d_, {"environments/production/hiera.yaml": HIERA, "environments/production/data/common.yaml": {"x": 1},
                   "environments/production/modules/m/metadata.json": meta,
                   "environments/production/modules/m/data/common.yaml": {"m::a": v_},
                   "environments/production/modules/plain/templates/t.yaml": "v: %d\n" % v_,
                   "environments/production/modules/plain/manifests/init.pp": "class plain {}\n"})
    p, d = jdiff(lo_, ln_, "--facts-dir", fd, "m::a", "x")
    c.check(d is not None and d["fast_path"]["full"] and "legacy" in d["fast_path"]["reasons"][0] and
            [e["key"] for e in d["keys"]] == ["m::a"], "a legacy data provider's data changed: every key",
            p.stdout[:800] + p.stderr)
    write(ln_, {"environments/production/modules/m/data/common.yaml": {"m::a": 1}})
    p, d = jdiff(lo_, ln_, "--facts-dir", fd, "m::a", "x")
    c.check(d is not None and not d["fast_path"]["full"] and d["keys"] == [],
            "a module's template that changed changes nothing", p.stdout[:800] + p.stderr)
    # "data_provider": null (as PDK writes it) names no provider: Puppet 7.23 does not read the module's
    # data (`puppet lookup n::a`: not found on both sides), so its change is one the fast path follows
    meta_null = json.loads(meta)
    meta_null.update(name="me-n", data_provider=None)
    for d_, v_ in ((lo_, 1), (ln_, 2)):
        write(d_, {"environments/production/modules/n/metadata.json": json.dumps(meta_null),
                   "environments/production/modules/n/data/common.yaml": {"n::a": v_}})
    p, d = jdiff(lo_, ln_, "--facts-dir", fd, "n::a", "x")
    c.check(d is not None and not d["fast_path"]["full"] and d["keys"] == [],
            "a module whose data_provider is null: its data is not read (no legacy provider)", p.stdout[:800] + p.stderr)
    # a module that is the environment itself (modules/m -> .., as jameslikeslinux/puppet-nest had it):
    # its data is read once through the link (Puppet 7.23: m::a is 1, with a deprecation warning), and the
    # walk goes no deeper than that (it went on through modules/m/modules/m/... 15 times)
    ko_, kn_ = os.path.join(top, "selfmod-old"), os.path.join(top, "selfmod-new")
    for d_, v_ in ((ko_, 1), (kn_, 2)):
        write(d_, {"environments/production/metadata.json": meta, "environments/production/data/common.yaml": {"m::a": v_},
                   "environments/production/manifests/site.pp": "node default {}\n"})
        os.makedirs(os.path.join(d_, "environments/production/modules"), exist_ok=True)
        os.symlink("..", os.path.join(d_, "environments/production/modules/m"))
    p, d = jdiff(ko_, kn_, "--facts-dir", fd, "m::a")
    c.check(d is not None and d["fast_path"]["full"] and
            re.match(r"(environments/production/)?modules/m/data/common\.yaml changed in a layer that a legacy",
                     d["fast_path"]["reasons"][0]) is not None and
            [e["key"] for e in d["keys"]] == ["m::a"] and d["keys"][0]["changes"][0]["old"] == 1 and
            d["keys"][0]["changes"][0]["new"] == 2,
            "a module linked to the environment: its data read through the link, named once", p.stdout[:800] + p.stderr)

    # ---- facts from Puppet's YAML facts cache, $trusted from --trusted-dir (as hiera batch reads them)
    to_, tn_ = os.path.join(top, "trusted-old"), os.path.join(top, "trusted-new")
    th = {"version": 5, "hierarchy": [{"name": "role", "path": "roles/%{trusted.extensions.pp_role}.yaml"},
                                      {"name": "common", "path": "common.yaml"}]}
    for d_, v_ in ((to_, "one"), (tn_, "two")):
        write(d_, {"environments/production/hiera.yaml": th, "environments/production/data/common.yaml": {"x": "c"},
                   "environments/production/data/roles/db.yaml": {"x": "db " + v_}})
    fc, td = os.path.join(top, "facts-cache"), os.path.join(top, "trusted")
    for n_, role in (("c1.example.com", "db"), ("c2.example.com", "web")):
        write(fc, {n_ + ".yaml": "--- !ruby/object:Puppet::Node::Facts\nname: %s\nvalues:\n  clientcert: %s\n"
                                 "  role: x\ntimestamp: '2024-01-01T10:00:00.123456789+00:00'\n" % (n_, n_)})
        write(td, {n_ + ".json": json.dumps({"authenticated": "remote", "certname": n_, "extensions": {"pp_role": role}})})
    p, d = jdiff(to_, tn_, "--facts-dir", fc, "--trusted-dir", td)
    c.check(d is not None and not d["not_compared"] and [e["key"] for e in d["keys"]] == ["x"] and
            d["keys"][0]["changes"][0]["nodes"] == ["c1.example.com"] and d["keys"][0]["changes"][0]["new"] == "db two",
            "facts from Puppet's facts cache, $trusted from --trusted-dir", p.stdout[:800] + p.stderr)
    p, d = jdiff(to_, tn_, "--facts-dir", fc)
    c.check(d is not None and d["keys"] == [], "without --trusted-dir no node reads roles/db.yaml", p.stdout[:800])
    # --explain reads the node's facts and $trusted as the comparison does
    p = diff(to_, tn_, "--facts-dir", fc, "--trusted-dir", td, "--explain", "x", "--node", "c1.example.com",
             "--format", "json")
    try:
        d = json.loads(p.stdout)
        ok = p.returncode == 1 and d["old"]["value"] == "db one" and d["new"]["value"] == "db two"
    except (ValueError, KeyError, TypeError):
        ok = False
    c.check(ok, "--explain with facts from the facts cache and $trusted from --trusted-dir", p.stdout[:800] + p.stderr)
    p = diff(to_, tn_, "--facts", os.path.join(fc, "c1.example.com.yaml"), "--trusted",
             os.path.join(td, "c1.example.com.json"), "--explain", "x", "--node", "c1.example.com", "--format", "json")
    try:
        d = json.loads(p.stdout)
        ok = p.returncode == 1 and d["new"]["value"] == "db two"
    except (ValueError, KeyError, TypeError):
        ok = False
    c.check(ok, "--explain with --facts (a facts cache file) and --trusted FILE", p.stdout[:800] + p.stderr)
    p = diff(to_, tn_, "--facts-dir", fc, "--trusted-dir", fd, "--explain", "x", "--node", "c1.example.com")
    c.check(p.stdout.count("Error: no trusted data for this node in " + fd) >= 2,
            "--explain: a node without a file in --trusted-dir is said on both sides", p.stdout[:800] + p.stderr)

    # ---- git revisions
    repo = os.path.join(top, "repo")
    shutil.copytree(old, repo)
    genv = dict(env, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")

    def git(*a):
        return subprocess.run(["git"] + list(a), cwd=repo, capture_output=True, text=True, env=genv)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    git("tag", "v1")
    git("checkout", "-q", "-b", "feature")
    write(repo, {"environments/production/data/common.yaml": common,
                 "environments/production/data/role/db.yaml": None,
                 "environments/production/data/role/web.yaml": {"motd": "web!"}})
    git("add", "-A")
    git("commit", "-q", "-m", "two")
    # uncommitted work in the work tree and the index must stay as they are
    write(repo, {"environments/production/data/common.yaml": "uncommitted: true\n"})
    git("add", "environments/production/data/common.yaml")
    write(repo, {"scratch.txt": "untracked\n"})
    index = os.path.join(repo, ".git", "index")
    before = (git("status", "--porcelain").stdout, hashlib.sha256(open(index, "rb").read()).hexdigest())
    cmp_new = os.path.join(top, "cmp-new")
    shutil.copytree(old, cmp_new)
    write(cmp_new, {"environments/production/data/common.yaml": common,
                    "environments/production/data/role/db.yaml": None,
                    "environments/production/data/role/web.yaml": {"motd": "web!"}})
    _, want = jdiff(old, cmp_new, "--facts-dir", fd)
    for a, b in (("main", "feature"), ("v1", "HEAD~0"), ("HEAD~1", "HEAD")):
        p, d = jdiff(a, b, "--git-dir", repo, "--facts-dir", fd)
        same = d is not None and want is not None and d["keys"] == want["keys"] and d["failures"] == want["failures"]
        c.check(same and d["old"]["type"] == "git" and len(d["old"]["revision"]) == 40,
                "git revisions %s..%s report what the folders do" % (a, b), p.stdout[:800] + p.stderr)
    after = (git("status", "--porcelain").stdout, hashlib.sha256(open(index, "rb").read()).hexdigest())
    c.check(before == after, "the repository's work tree and index are untouched", repr((before, after)))
    p = diff("main", "feature", "--git-dir", os.path.join(repo, "environments"), "--facts-dir", fd)
    c.check(p.returncode == 1, "--git-dir may name a folder inside the work tree")
    p = diff("./" + os.path.relpath(old, top), "feature", "--git-dir", repo, "--facts-dir", fd, cwd=top)
    c.check(p.returncode == 1 and "./old" in p.stdout, "a folder against a revision (./NAME is a folder)", p.stdout + p.stderr)
    c.check(os.listdir(scratch_tmp) == [], "the scratch folders are removed", repr(os.listdir(scratch_tmp)))

    # a copy of the repository without some objects (a snapshot without its large files): a file
    # Hiera never reads is left out (said), one it reads is an error
    lean = os.path.join(top, "lean")
    shutil.copytree(repo, lean)

    def lgit(*a):
        return subprocess.run(["git"] + list(a), cwd=lean, capture_output=True, text=True, env=genv)

    lgit("checkout", "-q", "-f", "main")
    write(lean, {"files/big.tar.gz": "not really a tarball\n", "files/other.bin": "x\n"})
    lgit("add", "-A")
    lgit("commit", "-q", "-m", "big files")
    lgit("checkout", "-q", "-b", "lean-feature")
    write(lean, {"environments/production/data/common.yaml": common})
    lgit("add", "-A")
    lgit("commit", "-q", "-m", "data")
    for f in ("files/big.tar.gz", "files/other.bin"):
        oid = lgit("rev-parse", "HEAD:" + f).stdout.strip()
        os.unlink(os.path.join(lean, ".git", "objects", oid[:2], oid[2:]))
    p, d = jdiff("lean-feature~1", "lean-feature", "--git-dir", lean, "--facts-dir", fd)
    c.check(p.returncode == 1 and d is not None and d["keys"] and "left out" in p.stderr and
            "files/big.tar.gz" in p.stderr and "files/other.bin" in p.stderr,
            "revisions whose repository lacks objects of files Hiera does not read", p.stdout[:400] + p.stderr)
    oid = lgit("rev-parse", "HEAD:environments/production/data/common.yaml").stdout.strip()
    os.unlink(os.path.join(lean, ".git", "objects", oid[:2], oid[2:]))
    p = diff("lean-feature~1", "lean-feature", "--git-dir", lean, "--facts-dir", fd)
    c.check(p.returncode == 2 and "environments/production/data/common.yaml" in p.stderr and "Hiera reads" in p.stderr,
            "a revision whose repository lacks a data file's object", p.stderr)
    c.check(os.listdir(scratch_tmp) == [], "the scratch folders are removed", repr(os.listdir(scratch_tmp)))

    # ---- errors
    p = diff("main", "feature", "--git-dir", top, "--facts-dir", fd)
    c.check(p.returncode == 2 and "is not a git repository" in p.stderr, "--git-dir that is not a repository", p.stderr)
    p = diff("main", "nope", "--git-dir", repo, "--facts-dir", fd)
    c.check(p.returncode == 2 and "'nope' is not a revision of" in p.stderr, "a revision that does not exist", p.stderr)
    p = diff("main", "feature", "--facts-dir", fd, cwd=top)
    c.check(p.returncode == 2 and "'main' is not a folder" in p.stderr and "--git-dir" in p.stderr,
            "a side that is not a folder, without --git-dir", p.stderr)
    p = diff(old, "--facts-dir", fd)
    c.check(p.returncode == 2 and "OLD NEW" in p.stderr, "one side only", p.stderr)
    p = diff(old, new)
    c.check(p.returncode == 2 and "facts" in p.stderr, "no facts", p.stderr)
    p = diff(old, new, "--facts-dir", fd, "--format", "xml")
    c.check(p.returncode == 2 and "--format" in p.stderr, "bad --format", p.stderr)
    p = diff(old, new, "--facts-dir", fd, "--codedir", old)
    c.check(p.returncode == 2 and "sides" in p.stderr, "--codedir refused", p.stderr)
    p = diff("--help")
    c.check(p.returncode == 0 and p.stdout.startswith("usage: hiera diff"), "--help")
    c.check(os.listdir(scratch_tmp) == [], "no scratch folder left after errors", repr(os.listdir(scratch_tmp)))

    issue37(c, diff, jdiff, top)
    # ---- the upgrade to Puppet 8: the same tree, each side answering as its own Puppet
    up = os.path.join(top, "upgrade")
    write(up, {"environments/production/hiera.yaml":
               "version: 5\ndefaults: {datadir: data, data_hash: yaml_data}\nhierarchy:\n"
               "  - {name: role, path: 'role/%{facts.role}.yaml'}\n  - {name: common, path: common.yaml}\n",
               "environments/production/data/common.yaml": "greeting: 'hi %{nosuchvar}'\nplain: 1\n",
               "environments/production/data/role/db.yaml": "- not\n- a hash\n"})
    for i in range(3):
        write(up, {"facts/u%d.example.com.yaml" % i: facts("u%d" % i, role="db" if i == 2 else "web")})
    ufd = os.path.join(up, "facts")
    p, d = jdiff(up, up, "--facts-dir", ufd, "--old-puppet-version", "7", "--new-puppet-version", "8")
    c.check(p.returncode == 1 and d is not None, "upgrade: exit 1 with a JSON report", p.stdout[:500] + p.stderr)
    if d:
        c.check(d["old"].get("puppet") == "7.23" and d["new"].get("puppet") == "8.10", "upgrade: each side's Puppet",
                json.dumps([d["old"], d["new"]]))
        c.check(d["fast_path"]["full"] and any("Puppet 8.10" in r for r in d["fast_path"]["reasons"]),
                "upgrade: every key looked up again, and why", json.dumps(d["fast_path"]))
        fl = [f for f in d["failures"] if f["nodes"] == ["u2.example.com"]]
        c.check(len(fl) == 1 and fl[0]["kind"] == "now_failing" and sorted(fl[0]["keys"]) == ["greeting", "plain"] and
                "file does not contain a valid yaml hash" in fl[0]["error"],
                "upgrade: a list data file fails every lookup that reads it", json.dumps(d["failures"]))
        g = {e["key"]: e["changes"] for e in d["keys"]}.get("greeting", [])
        c.check(len(g) == 1 and g[0]["kind"] == "now_failing" and g[0]["old"] == "hi " and
                g[0]["error"].startswith("Undefined variable 'nosuchvar'") and g[0]["count"] == 2,
                "upgrade: an undefined variable in data now fails", json.dumps(g))
        c.check(d["summary"]["now_failing"] == 4 and d["summary"]["changes"] == 4, "upgrade: summary", json.dumps(d["summary"]))
    p = diff(up, up, "--facts-dir", ufd, "--old-puppet-version", "7", "--new-puppet-version", "8")
    c.check("Puppet 7.23 \u2192" in p.stdout and "Puppet 8.10 (environment" in p.stdout and
            "3 nodes changed, 2 keys changed, 4 lookups now fail" in p.stdout, "upgrade: the text report names the Puppets",
            p.stdout)
    p = diff(up, up, "--facts-dir", ufd, "--old-puppet-version", "8", "--new-puppet-version", "7", "--fail-on", "failures")
    c.check(p.returncode == 0 and "no longer failing" in p.stdout, "downgrade: lookups no longer fail", p.stdout)
    for v in ("7", "8"):
        p, d = jdiff(up, up, "--facts-dir", ufd, "--puppet-version", v)
        c.check(p.returncode == 0 and d and d["summary"]["changes"] == 0 and d["new"]["puppet"] == v + (".23" if v == "7" else ".10"),
                "--puppet-version %s: both sides alike, no change" % v, p.stdout[:300] + p.stderr)
    p = diff(up, up, "--facts-dir", ufd, "--new-puppet-version", "9")
    c.check(p.returncode == 2 and "7 or 8" in p.stderr, "--new-puppet-version 9 refused", p.stderr)

    shutil.rmtree(top, ignore_errors=True)
    print("hiera diff checks: %d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
