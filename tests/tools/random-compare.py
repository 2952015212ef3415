#!/usr/bin/env python3
"""Randomized comparison of `hiera lookup` with Puppet's own lookup over generated control repos.

Each round generates a small control repository (global, environment and module layers; path,
paths, glob and mapped_paths levels; YAML/JSON data with nested values, knock-out strings,
interpolations of facts and of other keys, lookup_options with literal and pattern keys, merge
strategies and convert_to), asks Puppet (tests/tools/puppet-record.rb) and our binary the same
questions (every key, every merge strategy, dotted keys), and reports every difference. Trees that
differ are kept under the output folder so that they can be replayed.

usage: random-compare.py --hiera build/hiera [--rounds N] [--seed S] [--out DIR] [--explain]
                         [--puppet-version 7|8]
Needs Puppet (apt-get install puppet). Exit status 1 when any answer differed.
--puppet-version 8 asks Debian 13's Puppet 8.10 (in the root of ../shared/tools/puppet8, through
tests/tools/in-puppet8-root) and hiera with HIERA_PUPPET_VERSION=8 (default 7, the installed one).
"""
import argparse, atexit, json, os, random, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

KEYS = ["k%d" % i for i in range(8)] + ["mod_a::k%d" % i for i in range(3)] + ["mod_b::x"]
WORDS = ["alpha", "beta", "gamma", "delta", "web", "db", "x", "y", "z", "--alpha", "--x", "--", "1", "yes", "%"]


class Gen:
    def __init__(self, rnd):
        self.r = rnd

    def scalar(self):
        r = self.r
        c = r.randrange(14)
        if c < 5:
            return r.choice(WORDS)
        if c == 5:
            return r.randrange(-3, 100)
        if c == 6:
            return r.choice([1.5, 0.25, 2.0, -3.75])
        if c == 7:
            return r.choice([True, False])
        if c == 8:
            return None
        if c == 9:
            return "%{facts.role}-" + r.choice(WORDS)
        if c == 10:
            return "v=%{lookup('" + r.choice(KEYS) + "')}"
        if c == 11:
            return "%{" + r.choice(["trusted.certname", "::domain", "facts.list.1", "nofact", "facts.os.family",
                                     "environment", "literal('%')", "scope('role')", "hiera('k1')"]) + "}"
        if c == 12:
            return "%{alias('" + r.choice(KEYS) + "')}"
        return r.choice(["a b", "--beta", "Z"])

    def value(self, depth=0):
        r = self.r
        c = r.randrange(10)
        if depth > 2 or c < 4:
            return self.scalar()
        if c < 7:
            return [self.value(depth + 1) for _ in range(r.randrange(0, 4))]
        h = {}
        for _ in range(r.randrange(0, 4)):
            h[r.choice(["a", "b", "c", "d", "--a", "%{facts.role}"])] = self.value(depth + 1)
        return h

    def merge(self):
        r = self.r
        c = r.randrange(7)
        if c == 0:
            return "first"
        if c == 1:
            return "unique"
        if c == 2:
            return "hash"
        if c == 3:
            return "deep"
        m = {"strategy": "deep"}
        if r.random() < 0.6:
            m["knockout_prefix"] = "--"
        if r.random() < 0.3:
            m["sort_merged_arrays"] = True
        if r.random() < 0.3:
            m["merge_hash_arrays"] = True
        return m

    def lookup_options(self, module=None):
        r = self.r
        lo = {}
        for _ in range(r.randrange(1, 4)):
            if module:
                key = r.choice([k for k in KEYS if k.startswith(module + "::")] + ["^%s::k[0-9]" % module])
            else:
                key = r.choice(KEYS[:8] + ["^k[0-3]$", "^k", "^mod_a::"])
            opts = {}
            if r.random() < 0.8:
                opts["merge"] = self.merge()
            if r.random() < 0.15:
                opts["convert_to"] = r.choice(["Array", ["Array", True], "String"])
            lo[key] = opts
        return lo

    def data_file(self, module=None, with_lo=True):
        r = self.r
        d = {}
        pool = [k for k in KEYS if (k.startswith(module + "::") if module else True)]
        for k in r.sample(pool, r.randrange(1, len(pool) + 1)):
            d[k] = self.value()
        if with_lo and r.random() < 0.35:
            d["lookup_options"] = self.lookup_options(module)
        return d


def dump_yaml(obj):
    import yaml
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, default_flow_style=False)


def gen_tree(root, rnd):
    g = Gen(rnd)
    files = {}
    env = "environments/production"
    facts = {"hostname": "node1", "domain": "example.com", "fqdn": "node1.example.com",
             "clientcert": "node1.example.com", "role": rnd.choice(["web", "db"]),
             "os": {"family": rnd.choice(["Debian", "RedHat"])}, "list": ["l0", "l1", "l2"],
             "zones": rnd.sample(["a", "b", "c"], rnd.randrange(0, 4))}

    def hierarchy(prefix, datadir_files, module=None):
        levels = []
        for i in range(rnd.randrange(1, 5)):
            kind = rnd.choice(["path", "path", "paths", "glob", "mapped", "json", "hocon"])
            name = "L%d" % i
            if kind == "path":
                p = rnd.choice(["nodes/%{trusted.certname}.yaml", "role/%{facts.role}.yaml", "os/%{facts.os.family}.yaml",
                                "common.yaml", "c%d.yaml" % i])
                levels.append({"name": name, "path": p})
                datadir_files.append(p.replace("%{trusted.certname}", facts["clientcert"]).replace(
                    "%{facts.role}", facts["role"]).replace("%{facts.os.family}", facts["os"]["family"]))
            elif kind == "paths":
                ps = ["p%d_a.yaml" % i, "p%d_missing.yaml" % i, "p%d_b.yaml" % i]
                levels.append({"name": name, "paths": ps})
                datadir_files += [ps[0], ps[2]]
            elif kind == "glob":
                levels.append({"name": name, "glob": "g%d/*.yaml" % i})
                datadir_files += ["g%d/b.yaml" % i, "g%d/a.yaml" % i]
            elif kind == "mapped":
                levels.append({"name": name, "mapped_paths": ["facts.zones", "zone", "zones/%{zone}.yaml"]})
                datadir_files += ["zones/%s.yaml" % z for z in ["a", "b", "c"]]
            elif kind == "hocon":
                levels.append({"name": name, "path": "h%d.conf" % i, "data_hash": "hocon_data"})
                datadir_files.append("h%d.conf" % i)
            else:
                levels.append({"name": name, "path": "j%d.json" % i, "data_hash": "json_data"})
                datadir_files.append("j%d.json" % i)
        return levels

    # environment layer
    env_files = []
    cfg = {"version": 5, "defaults": {"datadir": "data", "data_hash": "yaml_data"},
           "hierarchy": hierarchy(env, env_files)}
    files[env + "/hiera.yaml"] = dump_yaml(cfg)
    for f in set(env_files):
        d = g.data_file()
        files[env + "/data/" + f] = json.dumps(d) if f.endswith((".json", ".conf")) else dump_yaml(d)
    # global layer (sometimes)
    if rnd.random() < 0.5:
        gfiles = []
        cfg = {"version": 5, "defaults": {"datadir": "gdata", "data_hash": "yaml_data"}, "hierarchy": hierarchy("", gfiles)}
        files["hiera.yaml"] = dump_yaml(cfg)
        for f in set(gfiles):
            d = g.data_file()
            files["gdata/" + f] = json.dumps(d) if f.endswith((".json", ".conf")) else dump_yaml(d)
    # a module
    for mod in ["mod_a", "mod_b"]:
        if rnd.random() < 0.6:
            mfiles = []
            cfg = {"version": 5, "hierarchy": hierarchy("", mfiles, mod)}
            if rnd.random() < 0.3:
                cfg["default_hierarchy"] = [{"name": "dh", "path": "default.yaml"}]
                mfiles.append("default.yaml")
            files[env + "/modules/%s/hiera.yaml" % mod] = dump_yaml(cfg)
            for f in set(mfiles):
                d = g.data_file(mod)
                files[env + "/modules/%s/data/%s" % (mod, f)] = json.dumps(d) if f.endswith((".json", ".conf")) else dump_yaml(d)
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
    os.makedirs(os.path.join(root, env), exist_ok=True)
    with open(os.path.join(root, "facts.yaml"), "w") as fh:
        fh.write(dump_yaml(facts))
    queries = []
    for k in KEYS:
        for m in [None, "unique", "hash", "deep", {"strategy": "deep", "knockout_prefix": "--"},
                  {"strategy": "deep", "sort_merged_arrays": True, "merge_hash_arrays": True}]:
            q = {"key": k}
            if m is not None:
                q["merge"] = m
            queries.append(q)
        queries.append({"key": k + ".a"})
        queries.append({"key": k + ".0", "merge": "deep"})
    return queries


def our_answer(hiera, root, q):
    cmd = [hiera, "lookup", "--codedir", root, "--environmentpath", root + "/environments",
           "--hiera_config", root + "/hiera.yaml", "--environment", "production", "--node", "node1.example.com",
           "--facts", root + "/facts.yaml"]
    m = q.get("merge")
    if isinstance(m, str):
        cmd += ["--merge", m]
    elif m:
        cmd += ["--merge", m["strategy"]]
        if m.get("knockout_prefix"):
            cmd += ["--knock-out-prefix", m["knockout_prefix"]]
        if m.get("sort_merged_arrays"):
            cmd.append("--sort-merged-arrays")
        if m.get("merge_hash_arrays"):
            cmd.append("--merge-hash-arrays")
    if q.get("explain"):
        cmd.append("--explain")
    else:
        cmd += ["--render-as", "json"]
    cmd.append(q["key"])
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=30)
    if q.get("explain"):  # (hiera says which Puppet it explains as: not Puppet's text)
        p.stderr = "".join(l for l in p.stderr.splitlines(True) if not l.startswith("hiera: explaining as Puppet "))
    if p.returncode not in (0, 1):
        return {"crash": p.returncode, "stderr": p.stderr[-500:]}
    if q.get("explain") and (p.returncode == 0 or not p.stderr.startswith("Error: Could not run:")):
        return {"output": p.stdout, "status": p.returncode}
    if p.returncode == 0:
        try:
            return {"value": json.loads(p.stdout)}
        except ValueError:
            return {"bad_output": p.stdout[:300]}
    if p.stdout.strip():
        return {"bad_output": p.stdout[:300]}
    if p.stderr.startswith("Error: Could not run:"):
        return {"error": True, "message": p.stderr.strip()}
    if p.stderr.strip():
        return {"lookup_error": True, "message": p.stderr.strip()}
    return {"not_found": True}


def same(ref, ours):
    # after a convert_to, Puppet's explanation prints the parsed type object with its memory
    # address: no implementation can print that, so such texts are not compared
    if "#<Puppet::Pops::Types::" in ref.get("output", ""):
        return True
    for kind in ("not_found", "lookup_error", "error"):
        if kind in ref:
            return kind in ours
    if "output" in ref:
        return ref == ours
    return "value" in ours and json.dumps(ref["value"]) == json.dumps(ours["value"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="/tmp/hiera-random")
    ap.add_argument("--explain", action="store_true", help="also compare --explain text for some queries")
    ap.add_argument("--explain-all", action="store_true", help="compare --explain text for every query too")
    ap.add_argument("--puppet-version", type=int, choices=(7, 8), default=7)
    args = ap.parse_args()
    os.environ["HIERA_PUPPET_VERSION"] = str(args.puppet_version)
    prefix = [os.path.join(HERE, "in-puppet8-root")] if args.puppet_version == 8 else []
    hiera = os.path.abspath(args.hiera)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    total = diffs = 0
    os.makedirs(args.out, exist_ok=True)
    # hiera's parsed files go to a scratch disk cache, never the user's ~/.cache/hiera
    scratch = tempfile.mkdtemp(prefix="hiera-random-cache-")
    atexit.register(shutil.rmtree, scratch, True)
    os.environ["HIERA_CACHE_DIR"] = scratch
    for rnd_i in range(args.rounds):
        s = seed + rnd_i
        rnd = random.Random(s)
        root = tempfile.mkdtemp(prefix="tree-%d-" % s, dir=args.out)
        queries = gen_tree(root, rnd)
        if args.explain_all:
            queries += [dict(q, explain=True) for q in list(queries)]
        elif args.explain:
            for q in rnd.sample(queries, 5):
                queries.append(dict(q, explain=True))
        qfile = os.path.join(root, "queries.json")
        with open(qfile, "w") as f:
            json.dump(queries, f)
        p = subprocess.run(prefix + ["ruby", os.path.join(HERE, "puppet-record.rb"), qfile, "--codedir", root,
                            "--environmentpath", root + "/environments", "--hiera_config", root + "/hiera.yaml",
                            "--environment", "production", "--node", "node1.example.com", "--facts", root + "/facts.yaml"],
                           cwd=root, capture_output=True, text=True)
        lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
        if not lines:
            print("reference failed for seed %d: %s" % (s, p.stderr[-500:]))
            continue
        ref = json.loads(lines[-1])
        round_diffs = 0
        for q, a in zip(queries, ref):
            total += 1
            o = our_answer(hiera, root, q)
            if not same(a, o):
                diffs += 1
                round_diffs += 1
                if round_diffs <= 5:
                    print("DIFF seed %d %s\n  puppet: %s\n  hiera:  %s" % (s, json.dumps(q), json.dumps(a)[:600], json.dumps(o)[:600]))
        if round_diffs == 0:
            shutil.rmtree(root)
        else:
            with open(os.path.join(root, "reference.json"), "w") as f:
                json.dump(ref, f, indent=1)
            print("seed %d: %d differences (tree kept in %s)" % (s, round_diffs, root))
    print("%d compared, %d differ" % (total, diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
