#!/usr/bin/env python3
"""Checks the answers `hiera batch` shares between nodes (src/engine/lookup.c: a merged key's answer
remembered under the files its walk reads, lookup_walk.c answer_signature; a first-found value
told from the layers' plans, first_found_plain).

A hand-made tree whose nodes share some levels' facts and differ elsewhere, each kind of node
given four times (a signature is remembered the second time it is made and found from the third
node on):
- the same role, a different datacenter: one datacenter's file holds the merged keys, the
  other's does not;
- the same files holding a key, but a node file (holding nothing else of the key) whose
  lookup_options make one key first-found and another a hash merge instead of a deep one: other
  options, another answer;
- the same two files reached by two levels in the opposite order (a conflicting scalar in a
  deep merge: the order decides);
- one file reached by two levels (with the other level's file for the other nodes);
- first-found values of the global layer that interpolate (one that looks itself up: the error
  as lookup_global rewraps it);
- a merged value that interpolates a fact: shared under the values its walk's interpolations
  read (a datacenter with no file of its own meets the same files as another: its own answer
  all the same; a hash merged from two files, each interpolating another fact, for nodes that
  differ in the second fact only); a first-found value that interpolates, an alias, nested lookups, a key that looks itself up (the
  recursion guard's error), a module's keys.
And a deep merge of two values a node meets twice, once 250 levels deeper (where it goes past
deep_merge's 2000 levels: remembered, it must not be found there).
One `hiera batch` over every node must print, node by node, what one `hiera batch` per node
prints (nothing to share), and the answers named below.

usage: tests/batch/answer-memo.py --hiera build/hiera
Prints "N passed, N failed"; exit status 1 when anything failed. Needs no Puppet.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from batchrun import batch_json  # noqa: E402  (tests/lib/batchrun.py)

ENV_HIERA = """version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: node
    path: "nodes/%{trusted.certname}.yaml"
  - name: first of two
    path: "x/%{facts.p}.yaml"
  - name: second of two
    path: "x/%{facts.q}.yaml"
  - name: role
    path: "role/%{facts.role}.yaml"
  - name: datacenter
    path: "dc/%{facts.dc}.yaml"
  - name: common
    path: common.yaml
"""

MOD_HIERA = """version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: role
    path: "role/%{facts.role}.yaml"
  - name: common
    path: common.yaml
"""

FILES = {
    "hiera.yaml": "version: 5\nhierarchy:\n  - name: global\n    path: global.yaml\n",
    # (first-found values of the global layer that interpolate: lookup_global's rewrap of an
    # error, kept when the value is taken from the plans)
    "data/global.yaml": "g::unused: 1\ng::str: \"g-%{facts.dc}\"\ng::self: \"%{lookup('g::self')}\"\n",
    "environments/production/hiera.yaml": ENV_HIERA,
    "environments/production/data/common.yaml": """lookup_options:
  m::list:
    merge: unique
  m::hash:
    merge: hash
  m::deep:
    merge: deep
  m::two:
    merge: hash
m::list: [common]
m::two:
  from_common: "%{facts.dc}"
  nested: ["%{facts.tier.name}", "%{::dc}-top"]
m::hash:
  where: "%{facts.dc}"
  fixed: common
m::deep:
  conf:
    level: common
    only_common: true
m::first: "first-%{facts.dc}"
m::plain: common-plain
m::alias: "%{alias('m::list')}"
m::nested: "n-%{lookup('m::first')}-%{lookup('m::plain')}"
m::self: "%{lookup('m::self')}"
""",
    "environments/production/data/role/web.yaml": """m::list: [web]
m::plain: web-plain
m::two:
  from_role: "%{facts.p}"
m::deep:
  conf:
    web: true
""",
    "environments/production/data/role/db.yaml": "m::first: db-first\n",
    "environments/production/data/dc/a.yaml": "unrelated: 1\n",
    "environments/production/data/dc/b.yaml": "m::list: [dc-b]\nm::hash:\n  dcb: yes\n",
    "environments/production/data/x/left.yaml": "m::deep:\n  conf:\n    level: left\n    left: 1\n",
    "environments/production/data/x/right.yaml": "m::deep:\n  conf:\n    level: right\n    right: 1\n",
    "environments/production/data/x/mid.yaml": "m::list: [mid]\n",
    "environments/production/modules/mod/hiera.yaml": MOD_HIERA,
    "environments/production/modules/mod/data/common.yaml": """lookup_options:
  mod::list:
    merge: unique
mod::list: [mod-common]
mod::str: mod-plain
""",
    "environments/production/modules/mod/data/role/web.yaml": "mod::list: [mod-web]\n",
}

# kinds of node: facts, and the node file's text (None: no node file)
KINDS = {
    "weba": ({"role": "web", "dc": "a", "p": "left", "q": "right"}, None),
    "webb": ({"role": "web", "dc": "b", "p": "left", "q": "right"}, None),
    "webc": ({"role": "web", "dc": "c", "p": "left", "q": "right", "tier": {"name": "gold"}}, None),
    "webfirst": ({"role": "web", "dc": "a", "p": "left", "q": "right"},
                 "lookup_options:\n  m::list:\n    merge: first\n  m::deep:\n    merge: hash\n"),
    "rev": ({"role": "web", "dc": "a", "p": "right", "q": "left"}, None),
    "twice": ({"role": "db", "dc": "b", "p": "mid", "q": "mid"}, None),
    "once": ({"role": "db", "dc": "b", "p": "mid", "q": "none"}, None),
    "db": ({"role": "db", "dc": "a", "p": "none", "q": "none"}, None),
}
KEYS = ["m::list", "m::hash", "m::two", "m::deep", "m::first", "m::plain", "mod::list", "mod::str", "m::missing", "m::alias",
        "m::nested", "m::self", "g::str", "g::self"]

# what some nodes must answer (kind -> key -> value; None: not found)
WANT = {
    "weba": {"m::list": ["web", "common"], "m::plain": "web-plain", "m::first": "first-a",
             "m::deep": {"conf": {"level": "left", "left": 1, "right": 1, "web": True, "only_common": True}},
             "m::hash": {"where": "a", "fixed": "common"}, "mod::list": ["mod-web", "mod-common"],
             "m::missing": None, "m::alias": ["web", "common"], "m::nested": "n-first-a-web-plain", "m::self": None,
             "m::two": {"from_common": "a", "nested": ["", "a-top"], "from_role": "left"}, "g::str": "g-a", "g::self": None},
    "webb": {"m::list": ["web", "dc-b", "common"], "m::hash": {"where": "b", "fixed": "common", "dcb": True},
             "m::first": "first-b"},
    "webc": {"m::hash": {"where": "c", "fixed": "common"}, "m::list": ["web", "common"],
             "m::two": {"from_common": "c", "nested": ["gold", "c-top"], "from_role": "left"}},
    "webfirst": {"m::list": ["web"], "m::deep": {"conf": {"level": "left", "left": 1}}},
    "rev": {"m::deep": {"conf": {"level": "right", "left": 1, "right": 1, "web": True, "only_common": True}},
            "m::list": ["web", "common"], "m::two": {"from_common": "a", "nested": ["", "a-top"], "from_role": "right"}},
    "twice": {"m::list": ["mid", "dc-b", "common"], "m::first": "db-first", "m::nested": "n-db-first-common-plain", "m::plain": "common-plain",
              "mod::list": ["mod-common"]},
    "once": {"m::list": ["mid", "dc-b", "common"]},
    "db": {"m::list": ["common"], "m::deep": {"conf": {"level": "common", "only_common": True}}},
}


def batch(hiera, root, args, keys):
    return batch_json(hiera, ["--codedir", root, "--environmentpath", root + "/environments", "--hiera_config",
                              root + "/hiera.yaml", "--environment", "production", "--jobs", "1"] + args + keys, root)


def deep_nesting(hiera, work):
    """A deep merge remembered (merge.c dm_remembered: two stable values under a key both hold)
    is found again only where it would not go past deep_merge's 2000 levels: the same two values
    (YAML anchors) merged near the top and 250 levels down, 1,800 levels deep each (a chain of
    two anchors: the YAML nesting stays under 1000). Every node must fail as the first one does."""
    root = os.path.join(work, "deep")

    def nest(leaf, n):
        return '{"d": ' * n + leaf + "}" * n

    def body(tag):
        return ("k:\n  p: &A1 " + nest('{"leaf_%s": "%s"}' % (tag, tag), 900) + "\n  a: &A2 " + nest("*A1", 900) +
                "\n  b: " + nest('{"z": *A2}', 250) + "\n")
    files = {
        "hiera.yaml": "version: 5\nhierarchy:\n  - name: global\n    path: global.yaml\n",
        "data/global.yaml": "g: 1\n",
        "environments/production/hiera.yaml": "version: 5\nhierarchy:\n  - name: role\n    path: \"role/%{facts.role}.yaml\"\n"
                                              "  - name: common\n    path: common.yaml\n",
        "environments/production/data/role/web.yaml": body("hi"),
        "environments/production/data/common.yaml": "lookup_options:\n  k:\n    merge: deep\n" + body("lo"),
    }
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(text)
    fdir = os.path.join(work, "deep-facts")
    os.makedirs(fdir)
    for i in range(4):
        name = "n%d.example.com" % i
        with open(os.path.join(fdir, name + ".json"), "w") as fh:
            json.dump({"role": "web", "clientcert": name, "fqdn": name, "hostname": "n%d" % i, "domain": "example.com"}, fh)
    out = batch(hiera, root, ["--facts-dir", fdir], ["k"])
    errors = out.get(".errors") or {}
    want = "deep_merge: values nested deeper than 2000 levels"
    bad = ["%s: %s" % (n, json.dumps(errors.get(n))[:200]) for n in ("n%d.example.com" % i for i in range(4))
           if (errors.get(n) or {}).get("k") != want]
    if bad:
        print("WRONG deep merge past 2000 levels: want %r on every node, got %s" % (want, "; ".join(bad)))
        return 0, 1
    return 1, 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    work = tempfile.mkdtemp(prefix="hiera-answer-memo-")
    os.environ["HIERA_CACHE_DIR"] = os.path.join(work, "diskcache")  # scratch, removed with work
    passed = failed = 0
    try:
        root = os.path.join(work, "tree")
        for path, text in FILES.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)
        fdir = os.path.join(work, "facts")
        os.makedirs(fdir)
        nodes = {}
        for copy in range(4):
            for kind, (facts, nodefile) in KINDS.items():
                # (names sorted copy by copy: each kind comes back after the others)
                name = "c%d-%s.example.com" % (copy, kind)
                f = dict(facts, clientcert=name, fqdn=name, hostname=name.split(".")[0], domain="example.com")
                with open(os.path.join(fdir, name + ".json"), "w") as fh:
                    json.dump(f, fh)
                if nodefile:
                    nf = os.path.join(root, "environments/production/data/nodes", name + ".yaml")
                    os.makedirs(os.path.dirname(nf), exist_ok=True)
                    with open(nf, "w") as fh:
                        fh.write(nodefile)
                nodes[name] = kind
        whole = batch(hiera, root, ["--facts-dir", fdir], KEYS)
        if "<failed>" in whole:
            print("FAIL batch over the fleet: %s" % whole["<failed>"])
            failed += 1
        for name, kind in sorted(nodes.items()):
            one = batch(hiera, root, ["--facts", os.path.join(fdir, name + ".json"), "--node", name], KEYS)
            got = whole.get(name, {})
            # (m::self looks itself up: an error, the same for every node)
            err_one = (one.get(".errors") or {}).get(name)
            err_whole = (whole.get(".errors") or {}).get(name)
            if "<failed>" not in one and json.dumps(one.get(name, {})) == json.dumps(got) and \
                    err_one == err_whole and "m::self" in json.dumps(err_whole):
                passed += 1
            else:
                failed += 1
                print("DIFF node %s\n  alone: %s\n  batch: %s" % (name, json.dumps(one)[:500], json.dumps(got)[:500]))
            for key, want in WANT.get(kind, {}).items():
                value = got.get(key)
                if (want is None and key not in got) or (want is not None and key in got and value == want and
                                                         json.dumps(value, sort_keys=True) == json.dumps(want, sort_keys=True)):
                    passed += 1
                else:
                    failed += 1
                    print("WRONG node %s key %s: want %s, got %s" % (name, key, json.dumps(want), json.dumps(value)))
        p, f = deep_nesting(hiera, work)
        passed += p
        failed += f
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("answers shared: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
