#!/usr/bin/env python3
"""Compares hiera with Puppet on random control repositories built the way real ones are:
puppet.conf with $confdir-relative folders, environments whose environment.conf names a modulepath
(site, site-modules, modules, dist, relative and "../" entries, globs, $basemodulepath,
$codedir/...), modules of the same name in several folders, modules with and without hiera.yaml,
with complete or incomplete metadata.json, a global and an environment layer that interpolate
facts, --modulepath and --basemodulepath on the command line. Every key of every module and
layer is asked for every node and environment, with `hiera batch` on one side and Puppet's own
lookup in one process per environment and node on the other (../shared/tools/puppet-bulk-lookup,
or the one given with --bulk); an answer that differs is asked again of `puppet lookup` itself,
which decides.

usage: tests/tools/modulepath-compare.py --hiera build/hiera [--rounds 5] [--seed 1] [--keep DIR]
       [--bulk PATH]
Needs Puppet (apt-get install puppet). Prints one line per difference and a summary.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from puppetbulk import default_bulk

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDERS = ["site", "site-modules", "modules", "dist", "vendor/mods"]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def gen_tree(root, rng):
    """A control repository; returns (environments, modules, nodes, keys)."""
    etc = os.path.join(root, "etc")
    code = os.path.join(root, "code")
    conf = "[main]\ncodedir = $confdir/../code\n"
    if rng.random() < 0.5:
        conf += "[server]\nbasemodulepath = $codedir/modules:$codedir/shared\n"
    write(os.path.join(etc, "puppet.conf"), conf)
    write(os.path.join(code, "hiera.yaml"),
          "version: 5\nhierarchy:\n  - {name: node, path: \"nodes/%{trusted.certname}.yaml\"}\n  - {name: common, path: common.yaml}\n")
    write(os.path.join(code, "data", "common.yaml"), "global_key: global\n")
    modnames = ["profile", "role", "ntp", "apache", "base", "users", "mysql", "stdlib_data"]
    keys = {"global_key", "env_key", "node_key"}
    envs = []
    for e in range(rng.randint(1, 3)):
        env = "production" if e == 0 else "env%d" % e
        envs.append(env)
        edir = os.path.join(code, "environments", env)
        folders = rng.sample(FOLDERS, rng.randint(1, 3))
        parts = []
        for f in folders:
            parts.append(rng.choice([f, "./" + f, "../%s/%s" % (env, f)]) if rng.random() < 0.3 else f)
        if rng.random() < 0.2:
            parts.append("mod*")
            folders.append("modX")
        if rng.random() < 0.7:
            parts.append("$basemodulepath")
        elif rng.random() < 0.5:
            parts.append("$codedir/modules")
        conf = ""
        if rng.random() < 0.85:
            conf = "modulepath = %s\n" % ":".join(parts)
            if rng.random() < 0.3:
                conf = "modulepath = '%s'\n" % ":".join(parts)
        else:
            folders = ["modules"]
        if rng.random() < 0.3:
            conf += "environment_timeout = unlimited\nmanifest = manifests/\n"
        write(os.path.join(edir, "environment.conf"), conf)
        write(os.path.join(edir, "hiera.yaml"),
              "version: 5\nhierarchy:\n  - {name: role, path: \"roles/%{facts.role}.yaml\"}\n  - {name: common, path: common.yaml}\n")
        write(os.path.join(edir, "data", "common.yaml"), "env_key: %s\nnode_key: env-common\n" % env)
        write(os.path.join(edir, "data", "roles", "web.yaml"), "node_key: web role in %s\n" % env)
        for f in folders:
            for m in rng.sample(modnames, rng.randint(1, 4)):
                mdir = os.path.join(edir, f, m)
                add_module(mdir, m, "%s/%s" % (env, f), rng, keys)
    for f in ("modules", "shared"):
        for m in rng.sample(modnames, rng.randint(1, 4)):
            add_module(os.path.join(code, f, m), m, f, rng, keys)
    extra = os.path.join(root, "extra")
    for m in rng.sample(modnames, 2):
        add_module(os.path.join(extra, m), m, "extra", rng, keys)
    nodes = []
    for n in range(rng.randint(1, 3)):
        name = "node%d.example.com" % n
        facts = {"hostname": "node%d" % n, "domain": "example.com", "fqdn": name, "clientcert": name,
                 "role": rng.choice(["web", "db"])}
        write(os.path.join(root, "facts", name + ".json"), json.dumps(facts))
        nodes.append(name)
    return envs, sorted(keys), nodes


def add_module(mdir, m, where, rng, keys):
    r = rng.random()
    if r < 0.75:
        write(os.path.join(mdir, "hiera.yaml"), "version: 5\n")
    write(os.path.join(mdir, "data", "common.yaml"), "%s::where: %s\n%s::only_%s: yes\n" % (m, where, m, where.replace("/", "_").replace("-", "_")))
    keys.update({"%s::where" % m, "%s::only_%s" % (m, where.replace("/", "_").replace("-", "_"))})
    r = rng.random()
    if r < 0.15:
        write(os.path.join(mdir, "metadata.json"), json.dumps({"name": "me-" + m, "version": "1.0.0"}))
    elif r < 0.45:
        write(os.path.join(mdir, "metadata.json"), json.dumps({"name": "me-" + m, "version": "1.0.0", "author": "me",
                                                               "license": "MIT", "source": "s", "dependencies": []}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep")
    ap.add_argument("--bulk", help="puppet-bulk-lookup (default: shared/tools/ next to the checkout or above it)")
    a = ap.parse_args()
    if not a.bulk:
        a.bulk = default_bulk(HERE)
    hiera = os.path.abspath(a.hiera)
    passed = failed = 0
    for rnd in range(a.rounds):
        rng = random.Random(a.seed + rnd)
        root = tempfile.mkdtemp(prefix="hiera-mp-")
        envs, keys, nodes = gen_tree(root, rng)
        extra_flags = rng.choice([[], [], ["--basemodulepath", os.path.join(root, "extra")],
                                  ["--modulepath", os.path.join(root, "extra") + ":" + os.path.join(root, "code", "modules")]])
        qfile = os.path.join(root, "queries.json")
        with open(qfile, "w") as f:
            json.dump([{"key": k, "merge": None} for k in keys], f)
        for env in envs:
            flags = ["--confdir", os.path.join(root, "etc"), "--environment", env] + extra_flags
            b = subprocess.run([hiera, "batch"] + flags + ["--facts-dir", os.path.join(root, "facts"), "--jobs", "1"] + keys,
                               capture_output=True, text=True, env=dict(os.environ, HIERA_CACHE_DIR="off", HIERA_PUPPET_LAYOUT="debian"))
            try:
                doc = json.loads(b.stdout)
            except ValueError:
                doc = None
            for node in nodes:
                p = subprocess.run(["ruby", a.bulk, qfile] + flags + ["--node", node, "--facts", os.path.join(root, "facts", node + ".json")],
                                   capture_output=True, text=True, cwd=root)
                lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
                if not lines:
                    if doc is not None and ".errors" not in doc:
                        print("DIFF round %d env %s node %s: Puppet failed, hiera did not:\n  %s" % (rnd, env, node, p.stderr.strip()[-300:]))
                        failed += 1
                    else:
                        passed += 1
                    continue
                if doc is None:
                    print("DIFF round %d env %s: hiera batch failed: %s" % (rnd, env, b.stderr.strip()[-300:]))
                    failed += 1
                    continue
                for k, ans in zip(keys, json.loads(lines[-1])):
                    got = doc.get(node, {})
                    want = ans["value"] if "value" in ans else None
                    ok = (k in got and got[k] == want) if "value" in ans else (k not in got)
                    if not ok:
                        # the bulk tool builds Puppet's environments once in its own way (a
                        # [server] basemodulepath can be missed there): the command decides
                        q = subprocess.run(["puppet", "lookup"] + flags + ["--node", node, "--facts",
                                           os.path.join(root, "facts", node + ".json"), "--render-as", "json", k],
                                           capture_output=True, text=True, cwd=root)
                        if q.returncode == 0:
                            ans = {"value": json.loads(q.stdout)}
                            ok = k in got and got[k] == ans["value"]
                        elif q.returncode == 1 and not q.stdout.strip():
                            ans = {"not_found": True}
                            ok = k not in got
                    if ok:
                        passed += 1
                    else:
                        failed += 1
                        print("DIFF round %d env %s node %s key %s: puppet %s, hiera %s" % (
                            rnd, env, node, k, json.dumps(ans)[:200], json.dumps(got.get(k, "(absent)"))[:200]))
        if a.keep and failed:
            dest = os.path.join(a.keep, "round%d" % rnd)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(root, dest)
        shutil.rmtree(root, ignore_errors=True)
    print("modulepath-compare: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
