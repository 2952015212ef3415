#!/usr/bin/env python3
"""Write storms against `hiera serve` (issue 32): files of several environments rewritten in
place, replaced by rename, written in two halves with a pause between them, added and removed;
environments added, removed and replaced whole by a directory rename (as r10k and Code Manager
deploy) -- while threads keep asking. Every run must end with the final state served, no
answer may be a 5xx, and no answer may come from a half-written file.

How an answer from a half-written file shows: every version of a data file defines two keys,
`<file>::a` at its top and `<file>::z` at its end, with the same version in both; the load asks
both in one request (POST /v1/batch: one generation answers it). A file caught half-written
that parsed gives `a` without `z`, or versions that differ.

After the last write, the final state (computed from what was written) must be what the server
answers within --deadline seconds (default 10: make check runs on shared machines; the target
of the issue, 2 s, is what bench/serve-scale.py checks with --deadline 2), and /healthz must not
say "ok" while it answers anything else.

usage: tests/serve/storm.py --hiera build/hiera [--rounds 3] [--seconds 6] [--seed N]
Prints "storm: N passed, N failed".
"""
import argparse, http.client, json, os, random, shutil, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import Server  # noqa: E402

NODES = ["n1.example.com", "n2.example.com"]
HIERA_YAML = """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
  - {name: Nodes, path: "nodes/%{trusted.certname}.yaml"}
  - {name: Many, glob: "many/*.yaml"}
  - {name: Common, path: common.yaml}
"""


class Result:
    def __init__(self):
        self.passed = self.failed = 0
        self.lock = threading.Lock()

    def check(self, ok, what):
        with self.lock:
            if ok:
                self.passed += 1
            else:
                self.failed += 1
                print("FAIL: " + what, flush=True)


R = Result()


def content(name, version, pad):
    """A data file: <name>::a first, <name>::z last, padding between (so that a half holds a but not z)."""
    lines = [f"{name}::a: v{version}\n"]
    lines += [f"{name}::pad{i}: \"{'x' * 40} {i}\"\n" for i in range(pad)]
    lines.append(f"{name}::z: v{version}\n")
    return "".join(lines)


class Tree:
    """The environments on disk and what they hold (the model the answers are checked against)."""

    def __init__(self, root, rnd):
        self.root, self.rnd = root, rnd
        self.envdir = os.path.join(root, "environments")
        self.envs = {}  # env -> {relative data path -> version}
        self.version = 0
        self.keys_ever = {}  # env -> set of file names ever written (their keys are asked, found or not)

    def path(self, env, rel):
        return os.path.join(self.envdir, env, "data", rel)

    def next_version(self):
        self.version += 1
        return self.version

    @staticmethod
    def name_of(rel):
        return rel.replace(".yaml", "").replace("/", "_").replace(".", "_")

    def write_env(self, base, env, files):
        os.makedirs(os.path.join(base, env, "data", "many"), exist_ok=True)
        os.makedirs(os.path.join(base, env, "data", "nodes"), exist_ok=True)
        with open(os.path.join(base, env, "hiera.yaml"), "w") as f:
            f.write(HIERA_YAML)
        for rel, v in files.items():
            with open(os.path.join(base, env, "data", rel), "w") as f:
                f.write(content(self.name_of(rel), v, 30))

    def create(self, env, files=None):
        if files is None:
            files = {"common.yaml": 1, "nodes/n1.example.com.yaml": 1, "nodes/n2.example.com.yaml": 1}
            files.update({f"many/m{i}.yaml": 1 for i in range(4)})
        self.write_env(self.envdir, env, files)
        self.envs[env] = dict(files)
        self.keys_ever.setdefault(env, set()).update(self.name_of(r) for r in files)

    # ---- the storm's operations
    def op_rewrite(self, env):
        rel = self.rnd.choice(sorted(self.envs[env]))
        v = self.next_version()
        with open(self.path(env, rel), "w") as f:
            f.write(content(self.name_of(rel), v, 30))
        self.envs[env][rel] = v

    def op_rename_into_place(self, env):
        rel = self.rnd.choice(sorted(self.envs[env]))
        v = self.next_version()
        p = self.path(env, rel)
        with open(p + ".tmp", "w") as f:
            f.write(content(self.name_of(rel), v, 30))
        os.rename(p + ".tmp", p)
        self.envs[env][rel] = v

    def op_half_written(self, env):
        rel = self.rnd.choice(sorted(self.envs[env]))
        v = self.next_version()
        text = content(self.name_of(rel), v, 30)
        cut = self.rnd.randrange(len(text) // 4, len(text) * 3 // 4)
        with open(self.path(env, rel), "w") as f:
            f.write(text[:cut])
            f.flush()
            time.sleep(self.rnd.uniform(0.05, 0.4))
            f.write(text[cut:])
        self.envs[env][rel] = v

    def op_add_file(self, env):
        rel = "many/m%d.yaml" % self.rnd.randrange(4, 12)
        v = self.next_version()
        with open(self.path(env, rel), "w") as f:
            f.write(content(self.name_of(rel), v, 30))
        self.envs[env][rel] = v
        self.keys_ever[env].add(self.name_of(rel))

    def op_remove_file(self, env):
        many = sorted(r for r in self.envs[env] if r.startswith("many/"))
        if len(many) > 1:
            rel = self.rnd.choice(many)
            os.unlink(self.path(env, rel))
            del self.envs[env][rel]

    def op_new_env(self):
        env = "env%d" % self.rnd.randrange(100)
        if env in self.envs:
            return
        src = self.rnd.choice(sorted(self.envs))
        self.create(env, dict(self.envs[src]))  # copies: identical files in two environments

    def op_remove_env(self):
        if len(self.envs) > 2:
            env = self.rnd.choice(sorted(e for e in self.envs if e != "production"))
            shutil.rmtree(os.path.join(self.envdir, env))
            del self.envs[env]

    def op_r10k(self, env):
        """The environment replaced whole: written aside, renamed into place, the old one removed."""
        files = dict(self.envs[env])
        v = self.next_version()
        for rel in self.rnd.sample(sorted(files), min(3, len(files))):
            files[rel] = v
        stage = os.path.join(self.envdir, ".r10k-stage")
        shutil.rmtree(stage, ignore_errors=True)
        os.makedirs(stage)
        self.write_env(stage, env, files)
        os.rename(os.path.join(self.envdir, env), os.path.join(self.envdir, env + ".old"))
        os.rename(os.path.join(stage, env), os.path.join(self.envdir, env))
        shutil.rmtree(os.path.join(self.envdir, env + ".old"))
        os.rmdir(stage)
        self.envs[env] = files

    def storm_step(self):
        envs = sorted(self.envs)
        env = self.rnd.choice(envs)
        r = self.rnd.random()
        if r < 0.25:
            self.op_rewrite(env)
        elif r < 0.45:
            self.op_rename_into_place(env)
        elif r < 0.60:
            self.op_half_written(env)
        elif r < 0.70:
            self.op_add_file(env)
        elif r < 0.78:
            self.op_remove_file(env)
        elif r < 0.85:
            self.op_new_env()
        elif r < 0.90:
            self.op_remove_env()
        else:
            self.op_r10k(env)

    def expected(self, env, node):
        """name -> version for what node sees in env (its own node file, not the other's)."""
        out = {}
        for rel, v in self.envs[env].items():
            if rel.startswith("nodes/") and rel != f"nodes/{node}.yaml":
                continue
            out[self.name_of(rel)] = "v%d" % v
        return out


def batch(server, env, node, keys, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    c.request("POST", "/v1/batch", body=json.dumps({"environment": env, "nodes": [node], "keys": keys}))
    r = c.getresponse()
    body = r.read()
    c.close()
    try:
        return r.status, json.loads(body)
    except ValueError:
        return r.status, body


def load(server, tree, stop, seen):
    """Asks a and z of random files until stop is set; every answer must be whole."""
    rnd = random.Random(os.getpid() ^ threading.get_ident())
    while not stop.is_set():
        try:
            env = rnd.choice(sorted(tree.keys_ever))
            names = sorted(tree.keys_ever[env])
        except RuntimeError:  # (the storm changed it meanwhile)
            continue
        node = rnd.choice(NODES)
        picked = rnd.sample(names, min(4, len(names)))
        keys = [f"{n}::{k}" for n in picked for k in ("a", "z")]
        try:
            st, body = batch(server, env, node, keys)
        except (OSError, http.client.HTTPException) as e:
            R.check(False, f"load: {env} {node}: {e}")
            continue
        seen["requests"] += 1
        if st >= 500:
            R.check(False, f"load: {env}: status {st}: {body}")
            continue
        if st != 200:
            continue
        row = body.get("results", {}).get(node, {})
        for n in picked:
            a, z = row.get(f"{n}::a"), row.get(f"{n}::z")
            if a != z:
                seen["torn"] += 1
                R.check(False, f"load: {env} {node}: a half-written file answered: {n}::a = {a!r}, {n}::z = {z!r}")


def served_state(server, tree, env, node):
    names = sorted(tree.keys_ever.get(env, ()))
    keys = [f"{n}::a" for n in names] + [f"{n}::z" for n in names]
    st, body = batch(server, env, node, keys)
    if st != 200:
        return None
    row = body.get("results", {}).get(node, {})
    if body.get("errors"):
        return None
    got = {}
    for n in names:
        if f"{n}::a" in row:
            got[n] = row[f"{n}::a"] if row[f"{n}::a"] == row.get(f"{n}::z") else ("torn", row[f"{n}::a"], row.get(f"{n}::z"))
    return got


def final_ok(server, tree):
    """(True, "") when every environment answers its final state, else (False, what differs)."""
    for env in sorted(tree.envs):
        for node in NODES:
            got = served_state(server, tree, env, node)
            want = tree.expected(env, node)
            if got != want:
                return False, f"{env} {node}: served {got} != final {want}"
    st, body = server.get("/v1/environments")
    if st != 200 or sorted(body.get("environments", [])) != sorted(tree.envs):
        return False, f"environments: {body.get('environments') if isinstance(body, dict) else body} != {sorted(tree.envs)}"
    return True, ""


def one_round(hiera, seed, seconds, deadline, extra):
    rnd = random.Random(seed)
    root = tempfile.mkdtemp(prefix="hiera-storm-")
    try:
        tree = Tree(root, rnd)
        os.makedirs(tree.envdir)
        for env in ("production", "staging", "dev1"):
            tree.create(env)
        facts = os.path.join(root, "facts")
        os.makedirs(facts)
        for n in NODES:
            with open(os.path.join(facts, n + ".yaml"), "w") as f:
                f.write(json.dumps({"clientcert": n, "fqdn": n, "hostname": n.split(".")[0], "domain": "example.com"}))
        s = Server(hiera, root, facts, list(extra))
        try:
            ok, why = False, ""
            end = time.time() + 20
            while time.time() < end and not ok:
                ok, why = final_ok(s, tree)
                time.sleep(0.1)
            R.check(ok, f"seed {seed}: the first state is not served: {why}")
            stop = threading.Event()
            seen = {"requests": 0, "torn": 0}
            loaders = [threading.Thread(target=load, args=(s, tree, stop, seen)) for _ in range(2)]
            for t in loaders:
                t.start()
            t_end = time.time() + seconds
            steps = 0
            while time.time() < t_end:
                tree.storm_step()
                steps += 1
                time.sleep(rnd.uniform(0, 0.08))
            last_write = time.time()
            # the final state, within the deadline; /healthz never "ok" while something else is answered
            served_at, ok, why, lying = None, False, "", None
            while time.time() - last_write < deadline + 1:
                h_st, health = s.get("/healthz")
                ok, why = final_ok(s, tree)
                if ok:
                    served_at = time.time() - last_write
                    break
                if h_st == 200 and health.get("status") == "ok" and not lying:
                    # "ok" says nothing seen is unserved: the answers must already be final
                    ok2, why2 = final_ok(s, tree)
                    if not ok2:
                        lying = f"/healthz said ok ({health}) while {why2}"
                time.sleep(0.05)
            stop.set()
            for t in loaders:
                t.join()
            R.check(served_at is not None and served_at <= deadline,
                    f"seed {seed}: the final state is not served within {deadline} s of the last write "
                    f"({'after %.2f s' % served_at if served_at is not None else 'never: ' + why})")
            R.check(lying is None, f"seed {seed}: {lying}")
            h_st, health = s.get("/healthz")
            wait_ok = time.time() + 5
            while (h_st != 200 or health.get("status") != "ok") and time.time() < wait_ok:
                time.sleep(0.1)
                h_st, health = s.get("/healthz")
            R.check(h_st == 200 and health.get("status") == "ok" and not health.get("pending_changes"),
                    f"seed {seed}: /healthz after the storm: {h_st} {health}")
            R.check(seen["requests"] > 20, f"seed {seed}: the load made only {seen['requests']} requests")
            R.check(s.p.poll() is None, f"seed {seed}: the server died")
            print(f"storm seed {seed}: {steps} writes in {seconds} s, {seen['requests']} requests, final state "
                  f"served {'%.2f s' % served_at if served_at is not None else 'never'} after the last write, "
                  f"{len(tree.envs)} environments at the end", flush=True)
        finally:
            s.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root + "-logs", ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--deadline", type=float, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("serve_args", nargs="*", help="more arguments for hiera serve (after --)")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    base = args.seed if args.seed is not None else random.randrange(1 << 30)
    for i in range(args.rounds):
        one_round(hiera, base + i, args.seconds, args.deadline, args.serve_args)
    print(f"storm: {R.passed} passed, {R.failed} failed (seeds {base}..{base + args.rounds - 1})")
    sys.exit(1 if R.failed else 0)


if __name__ == "__main__":
    main()
