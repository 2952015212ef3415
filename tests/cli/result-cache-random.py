#!/usr/bin/env python3
"""Randomized differential check of the result cache of one-shot calls (src/cli/result_cache.c,
src/base/fsjournal.c): the cache must never give an answer again once the files it came from
changed in a way that changes it.

Random control repositories from tests/tools/random-compare.py (global, environment and module
layers; path, paths, glob, mapped_paths, JSON and HOCON levels; nested values, knock-outs,
interpolations, aliases, lookup_options) are asked random questions: `hiera lookup` with one or
several keys (dotted ones, missing ones), merge flags, --explain, --provenance, --default,
--render-as yaml|json|s, and a few Hiera 3 calls (`hiera -c hiera3.yaml ...`) over the same data.
Every question is answered with the cache off (HIERA_RESULT_CACHE=off, and no disk cache at all:
the reference owes nothing to anything kept) and then twice with it on
(HIERA_RESULT_CACHE_TRACE=1): standard output, standard error (without the one trace line) and
the exit status must be the reference's byte for byte, and a run that says "kept" must be
followed by one that says "hit".

Then, round after round, every tree gets 1-3 random changes: a data file rewritten (in place,
sometimes with exactly the same length, so only its times tell), created where the hierarchy
found none, deleted, replaced by rename (new inode), replaced by a symlink, made unreadable,
touched (bytes unchanged), hiera.yaml edited (levels reordered, dropped, added; the global one
created or removed), a fact changed, a module added or removed, the node's YAML facts cache,
environment.conf or puppet.conf (basemodulepath) written or removed.
Right after its changes half of each tree's questions are asked once with files changed less
than a second before: the answer must be right, and when every change wrote a file, a run whose
answer changed read a file written a moment ago and must not be kept. After one pause (so that
nothing is "racy") every question is asked again as at the start. The answers that changed are
counted: a run where none did could not have failed, and fails.

usage: tests/cli/result-cache-random.py --hiera build/hiera [--rounds 5] [--seed 8300] [--trees 6]
                                        [--queries 16] [--keep DIR] [--verbose]
Everything is written in a scratch folder (removed at the end; --keep DIR copies the trees of
failures there). Needs no Puppet. Ends with "result-cache random: N passed, N failed"; exit status
1 when anything failed.
"""
import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

# gen_tree walks sets of names: the same seed makes the same trees only with the same string hashes
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

sys.dont_write_bytecode = True  # nothing written outside the scratch folder
HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("random_compare", os.path.join(HERE, "..", "tools", "random-compare.py"))
rc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rc)

# JSON is YAML: the trees need no YAML library
rc.dump_yaml = json.dumps

TRACE = b"hiera: result cache: "
ENV = "environments/production"
NODE = "node1.example.com"
PAUSE = 2.1  # the cache does not keep a run whose files changed less than ~2 s before

MERGES = [[], [], [], ["--merge", "first"], ["--merge", "unique"], ["--merge", "hash"], ["--merge", "deep"],
          ["--merge", "deep", "--knock-out-prefix", "--"],
          ["--merge", "deep", "--sort-merged-arrays", "--merge-hash-arrays"]]
MISSING = ["nokey", "mod_a::missing", "k9.a", "mod_c::k"]

T = Tally("result-cache random", fail_prefix="", print_limit=0)
check = T.check


def short(b, n=400):
    """b on one line, truncated."""
    s = b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
    more = len(s) - n
    return json.dumps(s[:n]) + (" ...(%d more)" % more if more > 0 else "")


def first_difference(a, b):
    """Where bytes a and b first differ, with the lines there."""
    if a == b:
        return "same"
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    line = a.count(b"\n", 0, i) + 1
    start = a.rfind(b"\n", 0, i) + 1
    return "byte %d (line %d): expected %s, got %s" % (
        i, line, short(a[start:a.find(b"\n", i) if a.find(b"\n", i) >= 0 else len(a)], 160),
        short(b[start:b.find(b"\n", i) if b.find(b"\n", i) >= 0 else len(b)], 160))


# ------------------------------------------------------------------ running hiera

class Runner:
    def __init__(self, hiera, cache):
        base = {k: v for k, v in os.environ.items() if not k.startswith("HIERA_")}
        base["LC_ALL"] = "C"
        self.hiera = hiera
        self.off = dict(base, HIERA_RESULT_CACHE="off", HIERA_CACHE_DIR="off")
        self.parse_only = dict(base, HIERA_RESULT_CACHE="off", HIERA_CACHE_DIR=cache)  # for diagnosis
        self.on = dict(base, HIERA_CACHE_DIR=cache, HIERA_RESULT_CACHE_TRACE="1")
        self.runs = 0

    def run(self, q, env):
        self.runs += 1
        try:
            p = subprocess.run([self.hiera] + q["argv"], cwd=q["cwd"], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            return (p.stdout, p.stderr, p.returncode)
        except subprocess.TimeoutExpired:
            return (b"", b"<timed out>", -999)

    def reference(self, q):
        return self.run(q, self.off)

    def cached(self, q):
        """(stdout, stderr without the trace line, status), trace word or a complaint."""
        out, err, status = self.run(q, self.on)
        spans = [m for m in re.finditer(re.escape(TRACE) + b"[^\n]*\n", err)]
        if len(spans) != 1:
            return (out, err, status), "<%d trace lines>" % len(spans)
        m = spans[0]
        if m.start() != 0 and err[m.start() - 1:m.start()] != b"\n":
            return (out, err, status), "<trace line not at a line start>"
        trace = m.group(0)[len(TRACE):-1].decode("utf-8", "replace")
        return (out, err[:m.start()] + err[m.end():], status), trace


def trace_kind(trace):
    if trace in ("hit", "kept"):
        return trace
    if trace.startswith("not kept: "):
        return "not kept"
    return "bad"


# ------------------------------------------------------------------ trees

class Tree:
    def __init__(self, root, seed, rnd):
        self.root, self.seed, self.rnd = root, seed, rnd
        self.gen = rc.Gen(rnd)
        self.log = []  # the changes of the current round
        self.nglob = 0
        self.fresh_only = True

    def p(self, rel):
        return os.path.join(self.root, rel)

    def layers(self):
        """(hiera.yaml, folder its datadirs are relative to, module or None) of each layer that has one."""
        out = [(self.p("hiera.yaml"), self.root, None), (self.p(ENV + "/hiera.yaml"), self.p(ENV), None)]
        for mod in ("mod_a", "mod_b"):
            out.append((self.p(ENV + "/modules/%s/hiera.yaml" % mod), self.p(ENV + "/modules/" + mod), mod))
        return [layer for layer in out if os.path.isfile(layer[0])]

    def facts(self):
        try:
            with open(self.p("facts.yaml")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def data_files(self):
        """Every file (or symlink) under the data folders, sorted."""
        out = []
        for top in [self.p("gdata"), self.p("data"), self.p(ENV + "/data")] + [self.p(ENV + "/modules/%s/data" % m) for m in ("mod_a", "mod_b")]:
            for d, dirs, files in os.walk(top):
                dirs.sort()
                for f in sorted(files):
                    if not f.endswith(".tmp"):
                        out.append(os.path.join(d, f))
        return out

    def module_of(self, path):
        m = re.search(r"/modules/(mod_[ab])/", path)
        return m.group(1) if m else None

    def hierarchy_paths(self):
        """(path, module, glob) of data files the hierarchies would read with the current facts (existing or
        not), plus a new file in each globbed folder (glob True), named to come first or last."""
        facts = self.facts()
        role = facts.get("role", "")
        fam = (facts.get("os") or {}).get("family", "") if isinstance(facts.get("os"), dict) else ""
        zones = facts.get("zones") if isinstance(facts.get("zones"), list) else []
        out = []
        for cfg_path, base, mod in self.layers():
            try:
                with open(cfg_path) as f:
                    cfg = json.load(f)
            except (OSError, ValueError):
                continue
            ddir = (cfg.get("defaults") or {}).get("datadir", "data")
            for lv in cfg.get("hierarchy") or []:
                d = os.path.join(base, lv.get("datadir", ddir))
                rels = []
                if "path" in lv:
                    rels.append((lv["path"], False))
                rels += [(x, False) for x in lv.get("paths", [])]
                if "glob" in lv:
                    self.nglob += 1
                    rels.append((lv["glob"].replace("*", "%sn%d" % ("0" if self.nglob % 2 else "", self.nglob)), True))
                if "mapped_paths" in lv:
                    rels += [(lv["mapped_paths"][2].replace("%{zone}", str(z)), False) for z in zones]
                for r, is_glob in rels:
                    r = r.replace("%{trusted.certname}", NODE).replace("%{facts.role}", str(role)).replace(
                        "%{facts.os.family}", str(fam))
                    if "%{" not in r:
                        out.append((os.path.join(d, r), mod, is_glob))
        return out

    def content(self, path, mod=None, full=False):
        """New data for the file at path; full: a value for (nearly) every key, so that it shows."""
        mod = mod if mod is not None else self.module_of(path)
        d = self.gen.data_file(mod)
        if full:
            for k in rc.KEYS:
                if (k.startswith(mod + "::") if mod else True) and k not in d and self.rnd.random() < 0.8:
                    d[k] = self.gen.value()
        return json.dumps(d, indent=self.rnd.choice([None, 1, 2]))

    def note(self, what, path, fresh=True):
        """Logs a change; fresh: it wrote the file (its times are now's) rather than only removing,
        moving, linking or changing modes."""
        self.log.append("%s %s" % (what, os.path.relpath(path, self.root)))
        self.fresh_only = self.fresh_only and fresh

    def rw_files(self):
        return [f for f in self.data_files() if os.path.isfile(f) and os.access(f, os.R_OK | os.W_OK)]


def write_file(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def rename_over(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def same_length_edit(rnd, data):
    """data with one letter or digit inside a string literal changed, or None."""
    spots = []
    for m in re.finditer(rb'"((?:[^"\\]|\\.)*)"', data):
        for i in range(m.start(1), m.end(1)):
            c = data[i:i + 1]
            if c.isalnum():
                spots.append(i)
    if not spots:
        return None
    i = rnd.choice(spots)
    c = data[i:i + 1]
    pool = b"0123456789" if c.isdigit() else (b"abcdefghijklmnopqrstuvwxyz" if c.islower() else b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    new = bytes([rnd.choice([x for x in pool if x != c[0]])])
    return data[:i] + new + data[i + 1:]


# ------------------------------------------------------------------ changes

def m_rewrite(t):
    files = t.rw_files()
    if not files:
        return False
    f = t.rnd.choice(files)
    with open(f, "rb") as fh:
        data = fh.read()
    if t.rnd.random() < 0.5:
        new = same_length_edit(t.rnd, data)
        if new is None:
            return False
        with open(f, "r+b") as fh:  # in place: same inode, same size, only the times tell
            fh.write(new)
        t.note("same-length edit", f)
    else:
        with open(f, "w") as fh:
            fh.write(t.content(f))
        t.note("rewrite in place", f)
    return True


def m_create(t):
    cands = [c for c in t.hierarchy_paths() if not os.path.lexists(c[0])]
    globbed = [c for c in cands if c[2]]
    if globbed and t.rnd.random() < 0.5:
        cands = globbed  # only the folder's listing tells
    if not cands:
        return False
    f, mod, _ = t.rnd.choice(cands)
    write_file(f, t.content(f, mod, full=t.rnd.random() < 0.7))
    t.note("create", f)
    return True


def m_delete(t):
    files = t.data_files()
    if not files:
        return False
    f = t.rnd.choice(files)
    os.unlink(f)
    t.note("delete", f, fresh=False)
    return True


def m_rename_over(t):
    files = t.data_files()
    if not files:
        return False
    f = t.rnd.choice(files)
    if t.rnd.random() < 0.25 and f in t.rw_files():
        with open(f) as fh:
            text = fh.read()
        what = "rename over (same bytes)"
    else:
        text, what = t.content(f), "rename over"
    if os.path.islink(f):
        os.unlink(f)
    rename_over(f, text)
    t.note(what, f)
    return True


def m_move(t):
    files = t.data_files()
    cands = [c for c in t.hierarchy_paths() if not os.path.lexists(c[0])]
    if not files or not cands:
        return False
    src = t.rnd.choice(files)
    dst = t.rnd.choice(cands)[0]
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    os.rename(src, dst)
    t.log.append("move %s -> %s" % (os.path.relpath(src, t.root), os.path.relpath(dst, t.root)))
    t.fresh_only = False
    return True


def m_touch(t):
    files = t.rw_files() + [t.p("facts.yaml")] + [layer[0] for layer in t.layers()]
    if not files:
        return False
    f = t.rnd.choice(files)
    if t.rnd.random() < 0.5:
        os.utime(f)
        t.note("touch", f)
    else:
        with open(f, "rb") as fh:
            data = fh.read()
        with open(f, "wb") as fh:
            fh.write(data)
        t.note("rewrite same bytes", f)
    return True


def m_symlink(t):
    files = t.data_files()
    if len(files) < 2:
        return False
    f = t.rnd.choice(files)
    c = t.rnd.random()
    if c < 0.15:
        target, how = os.path.join(os.path.dirname(f), "nowhere.yaml"), "dangling"
    else:
        target = t.rnd.choice([x for x in files if x != f])
        how = "to " + os.path.relpath(target, t.root)
    if c < 0.5:
        target = os.path.relpath(target, os.path.dirname(f))
    os.unlink(f)
    os.symlink(target, f)
    t.log.append("symlink %s %s" % (os.path.relpath(f, t.root), how))
    t.fresh_only = False
    return True


def m_chmod(t):
    files = [f for f in t.data_files() if os.path.exists(f)]
    if not files:
        return False
    f = t.rnd.choice(files)
    mode = os.stat(f).st_mode & 0o777
    os.chmod(f, 0o644 if mode == 0 else 0)
    t.note("chmod %s" % ("644" if mode == 0 else "000"), f, fresh=False)
    return True


def m_hiera_yaml(t):
    layers = t.layers()
    r = t.rnd
    if not os.path.exists(t.p("hiera.yaml")) and r.random() < 0.3:
        levels = [{"name": "G0", "path": r.choice(["common.yaml", "role/%{facts.role}.yaml", "c0.yaml"])},
                  {"name": "G1", "glob": "g0/*.yaml"}]
        cfg = {"version": 5, "defaults": {"datadir": r.choice(["gdata", "data"]), "data_hash": "yaml_data"},
               "hierarchy": levels[:r.randrange(1, 3)]}
        write_file(t.p("hiera.yaml"), json.dumps(cfg))
        t.note("create global", t.p("hiera.yaml"))
        return True
    if not layers:
        return False
    path, base, mod = r.choice(layers)
    if mod is None and path == t.p("hiera.yaml") and r.random() < 0.15:
        os.unlink(path)
        t.note("delete global", path, fresh=False)
        return True
    with open(path) as f:
        cfg = json.load(f)
    h = cfg.get("hierarchy") or []
    c = r.randrange(4)
    if c == 0 and len(h) > 1:
        h.reverse()
        what = "reverse hierarchy of"
    elif c == 1 and len(h) > 1:
        del h[r.randrange(len(h))]
        what = "drop a level of"
    elif c == 2:
        lv = r.choice([{"path": "extra.yaml"}, {"path": "role/%{facts.role}.yaml"}, {"paths": ["common.yaml", "x.yaml"]},
                       {"glob": "gx/*.yaml"}, {"path": "extra.json", "data_hash": "json_data"},
                       {"mapped_paths": ["facts.zones", "zone", "zones/%{zone}.yaml"]}])
        lv = dict({"name": "N%d" % r.randrange(1000)}, **lv)
        h.insert(r.randrange(len(h) + 1), lv)
        what = "add a level to"
    elif len(h) > 1:
        r.shuffle(h)
        what = "shuffle hierarchy of"
    else:
        what = "rewrite"
    cfg["hierarchy"] = h
    text = json.dumps(cfg, indent=r.choice([None, 1]))
    if r.random() < 0.3:
        rename_over(path, text)
        what += " (rename)"
    else:
        write_file(path, text)
    t.note(what, path)
    if os.path.exists(t.p("hiera3.yaml")) and r.random() < 0.3:
        write_hiera3(t, shuffle=True)
        t.note("shuffle", t.p("hiera3.yaml"))
    return True


def m_fact(t):
    facts = t.facts()
    r = t.rnd
    c = r.randrange(4)
    if c == 0:
        facts["role"] = "db" if facts.get("role") == "web" else "web"
        what = "role=%s" % facts["role"]
    elif c == 1:
        facts["os"] = {"family": "Debian" if (facts.get("os") or {}).get("family") == "RedHat" else "RedHat"}
        what = "os.family=%s" % facts["os"]["family"]
    elif c == 2:
        facts["zones"] = r.sample(["a", "b", "c"], r.randrange(0, 4))
        what = "zones=%s" % facts["zones"]
    else:
        facts["list"] = ["l0", r.choice(["L1", "l1", "other"]), "l2"]
        what = "list=%s" % facts["list"]
    text = json.dumps(facts)
    if r.random() < 0.3:
        rename_over(t.p("facts.yaml"), text)
        what += " (rename)"
    else:
        write_file(t.p("facts.yaml"), text)
    t.log.append("fact " + what)
    return True


def m_settings(t):
    """The node's YAML facts cache ($vardir/yaml/facts/NODE.yaml), environment.conf, or puppet.conf's
    basemodulepath (where basemods/ has a module mod_c)."""
    r = t.rnd
    c = r.randrange(3)
    if c == 2:
        f = t.p("conf/puppet.conf")
        if os.path.exists(f) and r.random() < 0.3:
            os.unlink(f)
            t.note("delete", f, fresh=False)
            return True
        write_file(f, "[main]\nbasemodulepath = %s\n" % r.choice([t.p("basemods"), t.p("nothing"),
                                                                    t.p("basemods") + ":" + t.p(ENV + "/modules")]))
        t.note("write", f)
    elif c == 0:
        f = t.p("var/yaml/facts/%s.yaml" % NODE)
        if os.path.exists(f) and r.random() < 0.3:
            os.unlink(f)
            t.note("delete", f, fresh=False)
            return True
        write_file(f, "--- !ruby/object:Puppet::Node::Facts\nname: %s\nvalues:\n  nofact: %s\n  domain: %s\n" % (
            NODE, r.choice(["surprise", "other"]), r.choice(["example.com", "example.org"])))
        t.note("write", f)
    else:
        f = t.p(ENV + "/environment.conf")
        if os.path.exists(f) and r.random() < 0.4:
            os.unlink(f)
            t.note("delete", f, fresh=False)
            return True
        write_file(f, "modulepath = %s\n" % r.choice(["modules", "nomodules", "modules:$basemodulepath"]))
        t.note("write", f)
    return True


def m_module(t):
    """A module appears (its folder, hiera.yaml and data) or goes (its folder, or only its hiera.yaml)."""
    mod = t.rnd.choice(["mod_a", "mod_b"])
    d = t.p(ENV + "/modules/" + mod)
    if os.path.isfile(d + "/hiera.yaml"):
        if t.rnd.random() < 0.5:
            shutil.rmtree(d)
            t.note("remove module", d, fresh=False)
        else:
            os.unlink(d + "/hiera.yaml")
            t.note("delete", d + "/hiera.yaml", fresh=False)
        return True
    levels = [{"name": "m0", "path": "common.yaml"}, {"name": "m1", "glob": "g/*.yaml"}]
    write_file(d + "/hiera.yaml", json.dumps({"version": 5, "hierarchy": t.rnd.sample(levels, 2)}))
    for f in ("common.yaml", "g/a.yaml"):
        if t.rnd.random() < 0.8:
            write_file(d + "/data/" + f, t.content(d + "/data/" + f, mod, full=True))
    t.note("create module", d)
    return True


MUTATIONS = [(m_rewrite, 5), (m_create, 4), (m_delete, 2), (m_rename_over, 2), (m_move, 1), (m_touch, 2),
             (m_symlink, 2), (m_chmod, 1), (m_hiera_yaml, 2), (m_fact, 2), (m_settings, 1),
             (m_module, 1)]


MADE = {}  # how many changes of each kind were made


def mutate(t):
    total = sum(w for _, w in MUTATIONS)
    for _ in range(50):
        x = t.rnd.uniform(0, total)
        for fn, w in MUTATIONS:
            x -= w
            if x <= 0:
                break
        if fn(t):
            MADE[fn.__name__[2:]] = MADE.get(fn.__name__[2:], 0) + 1
            return


# ------------------------------------------------------------------ questions

def write_hiera3(t, shuffle=False):
    """A Hiera 3 configuration over the environment's data folder."""
    d = t.p(ENV + "/data")
    if shuffle and hasattr(t, "h3levels"):
        levels = t.h3levels
        t.rnd.shuffle(levels)
    else:
        have = sorted({os.path.relpath(f, d).rsplit(".", 1)[0] for f in t.data_files()
                       if f.startswith(d + "/") and f.endswith((".yaml", ".json"))})
        levels = t.rnd.sample(have, min(len(have), 3)) + ["nodes/%{clientcert}", "role/%{role}", "os/%{os.family}",
                                                           "zones/a", "common"]
        t.rnd.shuffle(levels)
    t.h3levels = levels
    text = ("---\n:backends:\n  - yaml\n  - json\n:yaml:\n  :datadir: %s\n:json:\n  :datadir: %s\n:hierarchy:\n" % (d, d) +
            "".join('  - "%s"\n' % lv for lv in levels))
    write_file(t.p("hiera3.yaml"), text)


def make_queries(t, n):
    r = t.rnd
    root = t.root
    keys = rc.KEYS + [k + ".a" for k in rc.KEYS] + [k + ".0" for k in rc.KEYS]
    qs, seen = [], set()

    def add(argv, cwd=root):
        if tuple(argv) not in seen:
            seen.add(tuple(argv))
            qs.append({"argv": argv, "cwd": cwd})

    for i in range(n):
        rel = r.random() < 0.3  # relative paths, from the tree
        base = ["lookup", "--codedir", "." if rel else root, "--environmentpath",
                "environments" if rel else root + "/environments", "--confdir", "conf" if rel else root + "/conf",
                "--vardir", "var" if rel else root + "/var", "--hiera_config", "hiera.yaml" if rel else root + "/hiera.yaml",
                "--environment", "production", "--node", NODE, "--facts", "facts.yaml" if rel else root + "/facts.yaml"]
        ks = r.sample(keys, r.choice([1, 1, 1, 2, 3]))
        if i == 0:
            ks = [r.choice(MISSING)]  # not found: exit status 1, nothing printed
        elif r.random() < 0.2:
            ks[r.randrange(len(ks))] = r.choice(MISSING)
        flags = list(r.choice(MERGES))
        if i == 1 or r.random() < 0.2:
            flags.append("--explain")
        elif r.random() < 0.1:
            flags.append("--provenance")
        if r.random() < 0.35:
            flags += ["--render-as", r.choice(["yaml", "json", "json", "s"])]
        if r.random() < 0.08:
            flags += ["--default", "dflt"]
        add(base + flags + ks)
    if os.path.exists(t.p("hiera3.yaml")):
        for _ in range(3):
            flags = r.choice([[], ["-a"], ["-h"], ["-f", "json"], ["-a", "-f", "yaml"]])
            add(["-c", root + "/hiera3.yaml", "-y", root + "/facts.yaml"] + flags +
                [r.choice(rc.KEYS[:8] + MISSING[:1]), "role=%s" % r.choice(["web", "db"])])
    return qs


# ------------------------------------------------------------------ the check

def describe(q):
    return " ".join(q["argv"])


def compare(runner, t, q, ref, got, trace, where, seed, keep):
    """One check: got (with its trace) is the reference byte for byte."""
    ok = got == ref and trace_kind(trace) != "bad"
    if not check(ok):
        print("FAIL seed %d tree %d (%s) %s: %s" % (seed, t.seed, os.path.basename(t.root), where, describe(q)))
        print("  changes this round: %s" % ("; ".join(t.log) or "none"))
        print("  trace: %s" % trace)
        print("  expected: status %d\n    stdout: %s\n    stderr: %s" % (ref[2], short(ref[0]), short(ref[1])))
        print("  got:      status %d\n    stdout: %s\n    stderr: %s" % (got[2], short(got[0]), short(got[1])))
        print("  stdout differs at %s\n  stderr differs at %s" % (first_difference(ref[0], got[0]),
                                                               first_difference(ref[1], got[1])))
        po = runner.run(q, runner.parse_only)
        print("  (result cache off, disk cache on: %s)" % ("same as expected" if po == ref else "same as got" if po == got
                                                            else "status %d %s" % (po[2], short(po[0], 200))))
        if keep:
            dst = os.path.join(keep, "seed-%d-tree-%d-%s" % (seed, t.seed, where.replace(" ", "-")))
            if not os.path.exists(dst):
                try:
                    shutil.copytree(t.root, dst, symlinks=True)
                except (OSError, shutil.Error) as e:
                    print("  (tree not kept: %s)" % e)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of changes")
    ap.add_argument("--seed", type=int, default=8300)
    ap.add_argument("--trees", type=int, default=6)
    ap.add_argument("--queries", type=int, default=16, help="hiera lookup questions per tree")
    ap.add_argument("--keep", default=None, help="copy the trees of failures under this folder")
    ap.add_argument("--verbose", action="store_true", help="print each round's changes")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    started = time.time()
    work = tempfile.mkdtemp(prefix="hiera-result-cache-random-")
    runner = Runner(hiera, os.path.join(work, "cache"))
    stats = {"kept": 0, "hit": 0, "not kept": 0, "bad": 0}
    reasons = {}
    changed_total = 0
    racy_checked = 0

    def count(trace):
        k = trace_kind(trace)
        stats[k] += 1
        if k == "not kept":
            reasons[trace] = reasons.get(trace, 0) + 1

    def ask(t, q, where, first_ref=None):
        """Reference, then two runs with the cache; returns the reference."""
        ref = first_ref if first_ref is not None else runner.reference(q)
        a, ta = runner.cached(q)
        b, tb = runner.cached(q)
        count(ta)
        count(tb)
        compare(runner, t, q, ref, a, ta, where + " (1st cached run)", args.seed, args.keep)
        compare(runner, t, q, ref, b, tb, where + " (2nd cached run)", args.seed, args.keep)
        if ta == "kept" and not check(tb == "hit"):
            print("FAIL seed %d tree %d %s: kept, then the same call said %r: %s" % (args.seed, t.seed, where, tb, describe(q)))
        return ref

    try:
        trees = []
        for i in range(args.trees):
            tseed = args.seed * 100 + i
            rnd = random.Random(tseed)
            root = os.path.join(work, "tree-%d" % i)
            os.makedirs(root)
            rc.gen_tree(root, rnd)
            t = Tree(root, tseed, rnd)
            if i % 2:
                write_hiera3(t)
            # a module that only puppet.conf's basemodulepath can bring in (m_settings)
            write_file(t.p("basemods/mod_c/hiera.yaml"), json.dumps({"version": 5, "hierarchy": [{"name": "c", "path": "c.yaml"}]}))
            write_file(t.p("basemods/mod_c/data/c.yaml"), json.dumps({"mod_c::k": "from basemods"}))
            t.queries = make_queries(t, args.queries)
            trees.append(t)
        time.sleep(PAUSE)
        for t in trees:
            t.refs = [ask(t, q, "initial") for q in t.queries]
        refs = [r for t in trees for r in t.refs]
        print("%d questions: %d found, %d exit status 1 with nothing on stderr, %d with something on stderr" % (
            len(refs), sum(1 for r in refs if r[2] == 0), sum(1 for r in refs if r[2] == 1 and not r[1]),
            sum(1 for r in refs if r[1])))
        for rnd_i in range(1, args.rounds + 1):
            for t in trees:
                t.log = []
                t.fresh_only = True
                for _ in range(t.rnd.randrange(1, 4)):
                    mutate(t)
                changed_at = time.time()
                if args.verbose:
                    print("round %d tree %d: %s" % (rnd_i, t.seed, "; ".join(t.log)))
                # at once, with files written a moment ago: the answer is right; and when every change
                # wrote a file (none only removed, moved or linked one), an answer that changed read a
                # file written less than a second ago, which must not be kept
                for qi in range(0, len(t.queries), 2):
                    q = t.queries[qi]
                    ref = runner.reference(q)
                    got, tr = runner.cached(q)
                    count(tr)
                    compare(runner, t, q, ref, got, tr, "round %d (racy)" % rnd_i, args.seed, args.keep)
                    if t.fresh_only and ref != t.refs[qi] and time.time() - changed_at < 0.9:
                        racy_checked += 1
                        if not check(tr != "kept"):
                            print("FAIL seed %d tree %d round %d: an answer from a file written a moment ago was kept: %s\n"
                                  "  changes: %s" % (args.seed, t.seed, rnd_i, describe(q), "; ".join(t.log)))
            time.sleep(PAUSE)
            changed = 0
            for t in trees:
                for qi, q in enumerate(t.queries):
                    ref = ask(t, q, "round %d" % rnd_i)
                    if ref != t.refs[qi]:
                        changed += 1
                    t.refs[qi] = ref
            changed_total += changed
            print("round %d: %d of %d answers changed" % (rnd_i, changed, sum(len(t.queries) for t in trees)))
        if args.rounds and not check(changed_total > 0):
            print("FAIL seed %d: no answer changed in %d rounds: this run could not have caught a stale answer" % (
                args.seed, args.rounds))
        if not check(stats["kept"] > 0 and stats["hit"] > 0):
            print("FAIL seed %d: the cache was never used (kept %d, hit %d)" % (args.seed, stats["kept"], stats["hit"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d answers changed (%d seen changed a moment after); cached runs: %d hit, %d kept, %d not kept%s; "
          "%d runs in %.1f s" % (changed_total, racy_checked, stats["hit"], stats["kept"], stats["not kept"],
        "".join(" (%s: %d)" % (k[len("not kept: "):], v) for k, v in sorted(reasons.items())), runner.runs,
        time.time() - started))
    print("changes: %s" % ", ".join("%s %d" % kv for kv in sorted(MADE.items())))
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
