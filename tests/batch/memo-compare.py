#!/usr/bin/env python3
"""Checks what `hiera batch` remembers across nodes (src/engine/memo.c: merges by the addresses of their
inputs, interpolations by the values of the variables they read, the key index of loaded files).

Random control repositories from tests/tools/random-compare.py (global, environment and module
layers; every kind of level; nested values, knock-outs, interpolations of facts and of other keys,
aliases, lookup_options with merges and convert_to, broken values) are given several nodes whose
facts differ where the tree reads them (role, certname). For each merge flag, one `hiera batch`
over all nodes (the later nodes reuse what the first ones computed) must print exactly what one
`hiera batch` per node prints (nothing to reuse), values and errors alike; and for the first node
every answer must be what `hiera lookup` answers (no frozen cache at all). Every other tree runs
its fleet with a table that is full after a few entries (HIERA_MEMO_MAX_ENTRIES), where the
engine must fall back to plain work.

usage: tests/batch/memo-compare.py --hiera build/hiera [--rounds 12] [--seed 7100] [--keep DIR]
Prints "N passed, N failed"; exit status 1 when anything failed. Needs no Puppet.
"""
import argparse
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from lookuperr import explained_error  # noqa: E402  (tests/lib/lookuperr.py)
from batchrun import batch_json  # noqa: E402  (tests/lib/batchrun.py)

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("random_compare", os.path.join(HERE, "..", "tools", "random-compare.py"))
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)

# JSON is YAML: the trees need no YAML library
captured = {}


def dump_json(obj):
    captured["last"] = obj
    return json.dumps(obj)


rc.dump_yaml = dump_json

MERGES = [[], ["--merge", "unique"], ["--merge", "hash"], ["--merge", "deep"],
          ["--merge", "deep", "--knock-out-prefix", "--"],
          ["--merge", "deep", "--sort-merged-arrays", "--merge-hash-arrays"]]


def batch(hiera, root, base, flags, facts_args, keys, limit=None):
    env = dict(os.environ)
    if limit is not None:
        env["HIERA_MEMO_MAX_ENTRIES"] = str(limit)  # a table that fills up early
    return batch_json(hiera, base + flags + facts_args + ["--jobs", "1"] + keys, root, env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--seed", type=int, default=7100)
    ap.add_argument("--keep", default=None, help="keep the trees that differ under this folder")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    passed = failed = 0
    work = tempfile.mkdtemp(prefix="hiera-memo-compare-")
    os.environ["HIERA_CACHE_DIR"] = os.path.join(work, "diskcache")  # scratch, removed with work
    try:
        for r_i in range(args.rounds):
            seed = args.seed + r_i
            root = os.path.join(work, "tree-%d" % seed)
            os.makedirs(root)
            rc.gen_tree(root, random.Random(seed))
            facts = captured["last"]  # facts.yaml is written last
            fdir = os.path.join(root, "nodes")
            os.makedirs(fdir)
            nodes = []
            for n in range(6):
                f = json.loads(json.dumps(facts))
                name = "node1.example.com" if n == 0 else "n%d.example.com" % n
                if n % 3 == 1:
                    f["role"] = "db" if facts.get("role") != "db" else "web"
                f["clientcert"] = f["fqdn"] = name
                f["hostname"] = name.split(".")[0]
                with open(os.path.join(fdir, name + ".json"), "w") as fh:
                    json.dump(f, fh)
                nodes.append(name)
            keys = rc.KEYS + [k + ".a" for k in rc.KEYS] + [k + ".0" for k in rc.KEYS]
            base = ["--codedir", root, "--environmentpath", root + "/environments", "--hiera_config",
                    root + "/hiera.yaml", "--environment", "production"]
            bad = 0
            for mi, flags in enumerate(MERGES):
                # every other tree runs with a table that is full after a few entries
                limit = (7 * mi + 5) if r_i % 2 else None
                whole = batch(hiera, root, base, flags, ["--facts-dir", fdir], keys, limit)
                for node in nodes:
                    one = batch(hiera, root, base, flags, ["--facts", os.path.join(fdir, node + ".json"), "--node", node], keys)
                    want_v, got_v = one.get(node, {}), whole.get(node, {})
                    want_e = one.get(".errors", {}).get(node)
                    got_e = whole.get(".errors", {}).get(node)
                    if want_v == got_v and json.dumps(want_v) == json.dumps(got_v) and want_e == got_e and "<failed>" not in whole:
                        passed += 1
                    else:
                        failed += 1
                        bad += 1
                        print("DIFF seed %d node %s flags %s\n  alone: %s %s\n  batch: %s %s" % (
                            seed, node, " ".join(flags), json.dumps(want_v)[:400], json.dumps(want_e)[:400],
                            json.dumps(got_v)[:400], json.dumps(got_e)[:400]))
                # the first node against hiera lookup
                node = nodes[0]
                errs = whole.get(".errors", {}).get(node) or {}
                for k in keys:
                    cmd = [hiera, "lookup"] + base + flags + ["--node", node, "--facts", os.path.join(fdir, node + ".json")]
                    q = subprocess.run(cmd + ["--render-as", "json", k], capture_output=True, text=True, cwd=root)
                    got = whole.get(node, {}).get(k, None)
                    err = errs.get(k) if isinstance(errs, dict) else errs
                    # Puppet's warnings (an undefined variable...) do not make an error
                    stderr = "\n".join(l for l in q.stderr.splitlines() if not l.startswith("Warning: "))
                    if q.returncode == 0:
                        ok = err is None and k in whole.get(node, {}) and json.dumps(json.loads(q.stdout)) == json.dumps(got)
                    elif q.returncode == 1 and not stderr.strip():
                        # not found, or a lookup error (said by --explain only, as puppet lookup)
                        said = explained_error(cmd + [k], cwd=root)
                        ok = (err is None and k not in whole.get(node, {})) if said is None else \
                            (err is not None and err.split("\n")[0] in said)
                    else:
                        ok = err is not None and err.split("\n")[0] in stderr
                    if ok:
                        passed += 1
                    else:
                        failed += 1
                        bad += 1
                        print("DIFF seed %d key %s flags %s\n  lookup: rc %d %s %s\n  batch: %s %s" % (
                            seed, k, " ".join(flags), q.returncode, q.stdout[:300], q.stderr[:300],
                            json.dumps(got)[:300], err))
            if bad and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copytree(root, os.path.join(args.keep, "tree-%d" % seed))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("memo: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
