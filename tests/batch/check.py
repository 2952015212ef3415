#!/usr/bin/env python3
"""Checks `hiera batch` against `hiera lookup`: for every node and key of a generated control
repository (bench/gen-repo.py, plus a few keys and nodes that fail on purpose), the value that
`hiera batch` prints must be byte for byte what `hiera lookup --render-as json` prints for that
node and key; a key `hiera lookup` does not find must be absent; a lookup `hiera lookup` fails
must be listed under ".errors" with the same message. Also checks the document's shape (nodes
sorted, keys in the given order), --render-as yaml (same document), --facts for one node,
--keys-file parsing and the exit status.

usage: tests/batch/check.py --hiera build/hiera [--nodes 30] [--keys 150] [--batch-keys 40] [--keep DIR]
Prints "N passed, N failed"; exit status 1 when anything failed.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from lookuperr import explained_error  # noqa: E402  (tests/lib/lookuperr.py)

# The YAML that `hiera batch --render-as yaml` prints is read with PyYAML (Debian python3-yaml,
# which scripts/deps.sh --test installs): a YAML 1.1 parser as Ruby's Psych, and not the project's
# own, so the emitter is not checked by the parser it was written with. Its safe loader, as Psych's
# YAML.load in Ruby 3.1: no object tags.
try:
    import yaml
    YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
except ImportError:
    yaml = None

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "bench", "gen-repo.py")

# keys added to the generated data: each fails in its own way, or is missing
EXTRA_DATA = """
bad::recursive: "%{lookup('bad::recursive')}"
bad::infinity: .inf
bad::syntax: "%{lookup('x'}"
extra::dotted:
  inner:
    value: 42
extra::facts_again: "<%{facts.again}|%{facts.hostname}|%{facts.again}>"
extra::facts_self: "%{facts.selfref}"
"""
EXTRA_KEYS = ["bad::recursive", "bad::infinity", "bad::syntax", "extra::dotted.inner.value", "extra::dotted.nope",
              "no::such::key", "extra::facts_again", "extra::facts_self"]
# facts whose values are interpolated again when data reads them (added to copies of a node's
# facts): one reading another fact, one reading itself (a recursion error)
EXTRA_FACTS = """
again: "x-%{facts.hostname}-y"
selfref: "<%{facts.selfref}>"
"""


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what)


def as_json(v):
    """JSON text of what PyYAML read; what JSON has no form for (a date, a set) shows as its
    Python repr, so that it differs from anything JSON gave."""
    return json.dumps(v, default=lambda o: "<%s %r>" % (type(o).__name__, o))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, timeout=600, **kw)


def write_files(root, files):
    """Writes {relative path: text} under root, making the folders."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)


def parse_batch_lines(text):
    """{node: {key: value text}} from the JSON document's layout (a node per line at indentation
    2, a value per line at indentation 4), and the nodes in the order printed."""
    out, order = {}, []
    node = None
    dec = json.JSONDecoder()
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if line.lstrip(" ").startswith("}"):
            continue
        if indent == 2:
            node, end = dec.raw_decode(line, 2)
            out[node] = {}
            order.append(node)
        elif indent == 4 and node is not None and node != ".errors":
            key, end = dec.raw_decode(line, 4)
            assert line[end:end + 2] == ": ", line
            value = line[end + 2:]
            out[node][key] = value[:-1] if value.endswith(",") else value
    return out, order


def hiera_lookup(hiera, base_flags, node, facts, key, extra):
    """(status, stdout, stderr) of hiera lookup; a lookup error ends it with status 1 and not a
    word, as puppet lookup, so its text is taken from --explain (tests/lib/lookuperr.py) then"""
    cmd = [hiera, "lookup"] + base_flags + ["--node", node, "--facts", facts, "--render-as", "json"] + extra + [key]
    p = run(cmd)
    rc, out, err = p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if rc == 1 and not out and not err.strip():
        err = explained_error(cmd) or ""
    return rc, out, err


def compare_variant(c, hiera, repo, base_flags, keys, nodes, extra, label, batch_extra=(), warning=None):
    """Runs hiera batch with `extra` flags (and `batch_extra`, batch's own) and compares every
    (node, key) with hiera lookup (`warning`: see check_summary)."""
    keys_file = os.path.join(repo, "check-keys.txt")
    p = run([hiera, "batch"] + base_flags + ["--facts-dir", os.path.join(repo, "facts"), "--keys-file", keys_file]
            + extra + list(batch_extra))
    text = p.stdout.decode("utf-8")
    try:
        doc = json.loads(text)
    except ValueError as e:
        c.check(False, "%s: the output is not JSON (%s): %s" % (label, e, text[:300]))
        return
    lines, order = parse_batch_lines(text)
    errors = doc.get(".errors", {})
    check_summary(c, label, p.stderr, errors, warning)
    c.check(p.returncode == (2 if errors else 0), "%s: exit status %d with %d nodes in error" % (label, p.returncode, len(errors)))
    printed_nodes = [n for n in order if n != ".errors"]
    c.check(printed_nodes == sorted(printed_nodes, key=lambda s: s.encode()), "%s: nodes sorted" % label)
    c.check(list(doc)[-1] == ".errors" if errors else True, "%s: .errors comes last" % label)
    for n in printed_nodes:
        pos = [keys.index(k) for k in lines[n]]
        c.check(pos == sorted(pos), "%s: keys of %s in the given order" % (label, n))
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        for node, facts in nodes:
            for key in keys:
                jobs[(node, key)] = ex.submit(hiera_lookup, hiera, base_flags, node, facts, key, extra)
    for (node, key), fut in jobs.items():
        rc, out, err = fut.result()
        what = "%s: node %s key %s" % (label, node, key)
        node_err = errors.get(node)
        if isinstance(node_err, str):
            c.check(rc == 1 and err.strip().endswith(node_err),
                    "%s: the node failed in batch (%s) but hiera lookup said rc=%d %s" % (what, node_err, rc, err.strip()))
            continue
        got = lines.get(node, {}).get(key)
        got_err = (node_err or {}).get(key)
        if rc == 0:
            c.check(got == out.rstrip("\n"), "%s: batch %r, lookup %r" % (what, got, out.rstrip("\n")))
            c.check(got_err is None, "%s: unexpected error %r" % (what, got_err))
        elif err.strip():
            msg = err.strip()
            for prefix in ("Error: Could not run: ", "Error: "):
                if msg.startswith(prefix):
                    msg = msg[len(prefix):]
                    break
            c.check(got is None and got_err == msg, "%s: lookup failed with %r, batch value %r error %r" % (what, msg, got, got_err))
        else:
            c.check(got is None and got_err is None, "%s: not found by lookup, batch value %r error %r" % (what, got, got_err))
    return doc


def check_summary(c, label, stderr, errors, warning=None):
    """The summary hiera batch writes on stderr (not a terminal: nothing else): empty without
    errors; else how many nodes and lookups failed, then each distinct message once with its count
    (the first five, in node order). With `warning`, the run must also have given warnings that
    hold it (lines "Warning: ...", before the summary), and only those."""
    text = stderr.decode("utf-8", "replace")
    if warning is not None:
        lines = text.split("\n")
        warned = [l for l in lines if l.startswith("Warning: ") and warning in l]
        c.check(warned, "%s: a warning holding %r (stderr %r)" % (label, warning, text[:300]))
        text = "\n".join(l for l in lines if l not in warned)
    if not errors:
        c.check(text == "", "%s: nothing on stderr without errors (got %r)" % (label, text[:200]))
        return
    whole = {n: e for n, e in errors.items() if isinstance(e, str)}
    per = [(n, k, m) for n, e in errors.items() if isinstance(e, dict) for k, m in e.items()]
    lines = text.rstrip("\n").split("\n")
    head = lines[0]
    c.check(head.startswith("hiera batch: "), "%s: the summary starts with 'hiera batch: ' (%r)" % (label, head))
    if whole:
        c.check(" %d of " % len(whole) in head and "nodes could not be looked up" in head or
                "node could not be looked up" in head, "%s: the summary counts %d failed nodes: %r" % (label, len(whole), head))
    if per:
        c.check("; %d of " % len(per) in head or head.startswith("hiera batch: %d of " % len(per)),
                "%s: the summary counts %d failed lookups: %r" % (label, len(per), head))
    distinct = []
    counts = {}
    for n, e in errors.items():
        for m in ([e] if isinstance(e, str) else list(e.values())):
            if m not in counts:
                distinct.append(m)
                counts[m] = 0
            counts[m] += 1
    c.check("(%d distinct message" % len(distinct) in head, "%s: %d distinct messages: %r" % (label, len(distinct), head))
    body = lines[1:]
    shown = min(len(distinct), 5)
    c.check(len(body) == shown + (1 if len(distinct) > 5 else 0),
            "%s: one line per distinct message, at most 5 (+1): %d lines for %d messages" % (label, len(body), len(distinct)))
    for m, line in zip(distinct[:5], body):
        one_line = m.replace("\n", " ")
        said = sum(int(w) for w in line.split(" (first: ")[0].replace(",", " ").split() if w.isdigit())
        c.check(one_line[:300] in line and said == counts[m],
                "%s: the summary line for %r says %d: %r" % (label, m[:80], counts[m], line[:200]))

# Puppet's YAML facts cache ($vardir/yaml/facts/NODE.yaml) as Puppet 7.23 writes it
# (Puppet::Util::Yaml.dump of a Puppet::Node::Facts: ISO 8601 timestamps), and as older caches
# hold it (_timestamp among the values; Ruby Time objects, which Puppet 7.23 refuses to load).
FACTS_CACHE = {
    "web01.example.com": """--- !ruby/object:Puppet::Node::Facts
name: web01.example.com
values:
  hostname: web01
  domain: example.com
  fqdn: web01.example.com
  clientcert: web01.example.com
  role: web
  os:
    family: Debian
  nothing:
  tags: !ruby/sym tagged
timestamp: '2024-01-01T10:00:00.123456789+00:00'
expiration: '2024-01-01T10:30:00.123456789+00:00'
""",
    "old01.example.com": """--- !ruby/object:Puppet::Node::Facts
name: old01.example.com
values:
  clientcert: old01.example.com
  role: db
  _timestamp: '2015-03-02 10:00:00 +0000'
""",
    "pdb01.example.com": """--- !ruby/object:Puppet::Node::Facts
name: pdb01.example.com
values:
  clientcert: pdb01.example.com
  role: db
  trusted:
    authenticated: remote
    certname: pdb01.example.com
    extensions:
      pp_role: web
    hostname: pdb01
    domain: example.com
    external: {}
timestamp: '2024-01-01T10:00:00.123456789+00:00'
""",
    "time01.example.com": """--- !ruby/object:Puppet::Node::Facts
name: time01.example.com
values:
  clientcert: time01.example.com
timestamp: 2024-01-01 10:00:00.123456789 +00:00
""",
}
FACTS_HIERA = """version: 5
hierarchy:
  - name: role from trusted
    path: "roles/%{trusted.extensions.pp_role}.yaml"
  - name: common
    path: common.yaml
"""
FACTS_COMMON = """facts::role: "%{facts.role}"
facts::nothing: "%{facts}"
facts::tags: "%{facts.tags}"
facts::certname: "%{trusted.certname}"
facts::hostname: "%{trusted.hostname}"
facts::authenticated: "%{trusted.authenticated}"
facts::pp_role: "%{trusted.extensions.pp_role}"
"""
FACTS_KEYS = ["facts::role", "facts::nothing", "facts::tags", "facts::certname", "facts::hostname",
              "facts::authenticated", "facts::pp_role", "role::data"]


def check_facts_sources(c, hiera, root):
    """hiera batch over a folder of Puppet's facts cache, --trusted-dir and --trusted: every value
    is the one hiera lookup prints for the node (--node NODE with --vardir naming the cache,
    --trusted FILE), and node errors say what hiera lookup says."""
    repo = os.path.join(root, "facts-sources")
    vardir = os.path.join(repo, "var")
    cache = os.path.join(vardir, "yaml", "facts")
    os.makedirs(cache)
    os.makedirs(os.path.join(repo, "environments", "production"))
    write_files(cache, {name + ".yaml": text for name, text in FACTS_CACHE.items()})
    write_files(repo, {"hiera.yaml": FACTS_HIERA, "data/common.yaml": FACTS_COMMON,
                       "data/roles/web.yaml": "role::data: web data\n", "data/roles/db.yaml": "role::data: db data\n"})
    trusted_dir = os.path.join(repo, "trusted")
    os.makedirs(trusted_dir)
    for name in FACTS_CACHE:
        with open(os.path.join(trusted_dir, name + ".json"), "w") as fh:
            json.dump({"authenticated": "remote", "certname": name, "extensions": {"pp_role": "db"}}, fh)
    base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
            "--hiera_config", os.path.join(repo, "hiera.yaml")]

    def lookups(extra_for):
        out = {}
        for name in FACTS_CACHE:
            for key in FACTS_KEYS:
                p = run([hiera, "lookup"] + base + ["--node", name, "--vardir", vardir, "--render-as", "json"]
                        + extra_for(name) + [key])
                out[(name, key)] = (p.returncode, p.stdout.decode(), p.stderr.decode())
        return out

    def compare(label, batch_flags, extra_for):
        p = run([hiera, "batch"] + base + ["--facts-dir", cache] + batch_flags + FACTS_KEYS)
        doc = json.loads(p.stdout)
        lines, _ = parse_batch_lines(p.stdout.decode())
        errors = doc.get(".errors", {})
        check_summary(c, label, p.stderr, errors)
        for (name, key), (rc, out, err) in lookups(extra_for).items():
            node_err = errors.get(name)
            if isinstance(node_err, str):
                c.check(rc == 1 and err.strip().endswith(node_err),
                        "%s: %s failed in batch (%s), hiera lookup: rc=%d %s" % (label, name, node_err, rc, err.strip()))
            elif rc == 0:
                c.check(lines.get(name, {}).get(key) == out.rstrip("\n"),
                        "%s: %s %s: batch %r, lookup %r" % (label, name, key, lines.get(name, {}).get(key), out))
            else:
                c.check(key not in lines.get(name, {}), "%s: %s %s not found by lookup but in batch" % (label, name, key))
        return doc

    doc = compare("facts cache", [], lambda n: [])
    c.check(doc.get("web01.example.com", {}).get("facts::role") == "web" and
            doc.get("old01.example.com", {}).get("role::data") is None and
            doc.get("pdb01.example.com", {}).get("facts::pp_role") == "web" and
            doc.get("pdb01.example.com", {}).get("role::data") == "web data",
            "facts cache: the facts are the cache's values; a `trusted` fact that is a full trusted hash is $trusted (%r)" % doc)
    c.check(doc.get("web01.example.com", {}).get("facts::tags") == "tagged" and
            '"nothing"=>""' in doc.get("web01.example.com", {}).get("facts::nothing", ""),
            "facts cache: a Symbol fact is its name and a nil fact is '' (Puppet::Node::Facts#sanitize)")
    c.check("Tried to load unspecified class: Time" in str(doc.get(".errors", {}).get("time01.example.com")),
            "facts cache: a Ruby Time object in the cache is refused as Puppet 7.23 refuses it")
    doc = compare("--trusted-dir", ["--trusted-dir", trusted_dir],
                  lambda n: ["--trusted", os.path.join(trusted_dir, n + ".json")])
    c.check(doc.get("web01.example.com", {}).get("facts::pp_role") == "db" and
            doc.get("web01.example.com", {}).get("facts::hostname") == "web01" and
            doc.get("pdb01.example.com", {}).get("role::data") == "db data",
            "--trusted-dir: each node's trusted hash, hostname from its certname, over a `trusted` fact")
    os.unlink(os.path.join(trusted_dir, "old01.example.com.json"))
    p = run([hiera, "batch"] + base + ["--facts-dir", cache, "--trusted-dir", trusted_dir] + FACTS_KEYS)
    e = json.loads(p.stdout).get(".errors", {}).get("old01.example.com", "")
    c.check(isinstance(e, str) and "no trusted data for this node" in e, "--trusted-dir: a node without a file fails (%r)" % e)
    p = run([hiera, "batch"] + base + ["--facts", os.path.join(cache, "web01.example.com.yaml"), "--trusted",
                                       os.path.join(trusted_dir, "web01.example.com.json"), "facts::pp_role"])
    c.check(json.loads(p.stdout) == {"web01.example.com": {"facts::pp_role": "db"}}, "--trusted FILE with --facts FILE")
    for bad in (["--facts-dir", cache, "--trusted", os.path.join(trusted_dir, "web01.example.com.json")],
                ["--facts-dir", cache, "--trusted-dir", os.path.join(repo, "nonexistent")],
                ["--facts", os.path.join(cache, "web01.example.com.yaml"), "--trusted", "x", "--trusted-dir", trusted_dir]):
        p = run([hiera, "batch"] + base + bad + ["facts::role"])
        c.check(p.returncode == 1 and p.stdout == b"" and p.stderr.startswith(b"Error: "),
                "usage error %s: rc=%d stderr=%r" % (bad[2:], p.returncode, p.stderr[:120]))

    # one data file that does not parse fails every lookup of every node the same way: one line
    os.unlink(os.path.join(cache, "time01.example.com.yaml"))
    with open(os.path.join(repo, "data", "common.yaml"), "w") as fh:
        fh.write("facts::role: [unclosed\n")
    p = run([hiera, "batch"] + base + ["--facts-dir", cache] + FACTS_KEYS)
    errors = json.loads(p.stdout).get(".errors", {})
    check_summary(c, "one broken data file", p.stderr, errors)
    lines = p.stderr.decode().rstrip("\n").split("\n")
    c.check(p.returncode == 2 and len(lines) == 2 and "(1 distinct message;" in lines[0] and
            lines[1].lstrip().startswith("%d lookups (first: " % sum(len(v) for v in errors.values())),
            "one broken data file: one message with its count (%r)" % lines)



LEVELS_HIERA = """version: 5
defaults:
  data_hash: yaml_data
  datadir: "data-%{facts.site}"
hierarchy:
  - name: two facts and a datadir from a fact
    path: "%{facts.a}/%{facts.b}.yaml"
  - name: a glob
    glob: "g/%{facts.a}-*.yaml"
  - name: plain
    path: common.yaml
"""


def check_remembered_levels(c, hiera, root):
    """Where a level leads is remembered for the values its templates read (lookup.c level_key):
    nodes that share some of those values but not all, a datadir read from a fact, a glob, and a
    fact that takes a location out of its datadir (refused: the location is missing for each
    such node, and its text is never remembered as an answer) must each get what hiera lookup
    gives them alone."""
    repo = os.path.join(root, "levels")
    os.makedirs(os.path.join(repo, "facts"))
    files = {"hiera.yaml": LEVELS_HIERA, "data-s1/x/p.yaml": "k: s1-x-p\n", "data-s1/x/q.yaml": "k: s1-x-q\n",
             "data-s1/y/p.yaml": "k: s1-y-p\n", "data-s2/x/p.yaml": "k: s2-x-p\n",
             "data-s1/g/x-1.yaml": "g: x1\n", "data-s1/g/x-2.yaml": "g: x2\n", "data-s1/g/y-1.yaml": "g: y1\n",
             "data-s2/g/x-1.yaml": "g: s2x1\n", "data-s1/common.yaml": "k: s1-common\ng: s1-g\n",
             "data-s2/common.yaml": "k: s2-common\ng: s2-g\n", "check-keys.txt": "k\ng\n"}
    write_files(repo, files)
    combos = [("s1", "x", "p"), ("s1", "x", "q"), ("s1", "y", "p"), ("s2", "x", "p"), ("s1", "x", "p"), ("s1", "x", "q"),
              ("s2", "x", "q"), ("s1", "y", "q"), ("s1", "..", "p"), ("s1", "..", "p"), ("s1", "x", "p")]
    nodes = []
    for i, (site, a, b) in enumerate(combos):
        name = "n%02d" % i
        path = os.path.join(repo, "facts", name + ".json")
        with open(path, "w") as fh:
            json.dump({"site": site, "a": a, "b": b}, fh)
        nodes.append((name, path))
    base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
            "--hiera_config", os.path.join(repo, "hiera.yaml")]
    doc = compare_variant(c, hiera, repo, base, ["k", "g"], nodes, [], "remembered levels", ["--jobs", "1"],
                          warning="gave '../p.yaml', which adds a '..' segment") or {}
    errors = doc.get(".errors", {})
    c.check(doc.get("n04", {}).get("k") == "s1-x-p" and doc.get("n06", {}).get("k") == "s2-common" and
            doc.get("n03", {}).get("g") == "s2x1" and doc.get("n09", {}).get("k") == "s1-common" and
            doc.get("n09", {}).get("g") == "s1-g" and not errors,
            "remembered levels: the expected values (%r)" % doc)



HITS_HIERA = """version: 5
defaults:
  data_hash: yaml_data
  datadir: data
hierarchy:
  - name: role
    path: "role/%%{facts.role}.yaml"
%s  - name: many files
    glob: "g/%%{facts.a}-*.yaml"
  - name: common
    path: common.yaml
"""


def check_walk_hits(c, hiera, root):
    """A layer's walk finds the levels holding a key from the key's bits (lookup.c list_hits):
    a key in more files than the list holds (40 of a glob's files, merged), keys in a few, keys
    first found; and the same hierarchy with a file two levels lead to (the walk goes probe by
    probe there, and the file's first level counts). Every node prints what hiera lookup gives
    it alone."""
    for variant, extra in (("direct", ""), ("twice", "  - name: common again\n    path: common.yaml\n")):
        repo = os.path.join(root, "hits-" + variant)
        os.makedirs(os.path.join(repo, "facts"))
        files = {"hiera.yaml": HITS_HIERA % extra,
                 "data/common.yaml": "lookup_options:\n  many: {merge: unique}\n  few: {merge: deep}\n"
                                     "many: [common]\nfew: {c: common}\nfirst: common\n",
                 "data/role/web.yaml": "few: {r: web}\nmany: [web]\n", "check-keys.txt": "many\nfew\nfirst\n"}
        for i in range(40):
            files["data/g/x-%02d.yaml" % i] = "many: [x%02d, shared]\n%s%s" % (
                i, "few: {g%02d: x}\n" % i if i % 13 == 5 else "", "first: x%02d\n" % i if i == 20 else "")
        files["data/g/y-01.yaml"] = "many: [y01]\nfirst: y01\n"
        write_files(repo, files)
        nodes = []
        for i, (role, a) in enumerate((("web", "x"), ("db", "x"), ("web", "y"), ("db", "z"))):
            name = "n%d" % i
            path = os.path.join(repo, "facts", name + ".json")
            with open(path, "w") as fh:
                json.dump({"role": role, "a": a}, fh)
            nodes.append((name, path))
        base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
                "--hiera_config", os.path.join(repo, "hiera.yaml")]
        keys = ["many", "few", "first"]
        doc = compare_variant(c, hiera, repo, base, keys, nodes, [], "walk hits (%s)" % variant, ["--jobs", "1"]) or {}
        c.check(".errors" not in doc and all(sorted(doc.get(name, {})) == sorted(keys) for name, _ in nodes),
                "walk hits (%s): every node finds every key (%r)" % (variant, doc))
        # (twice: common.yaml is also the level before the glob's: found there first)
        twice = variant == "twice"
        many = ["web"] + ["common"] * twice + ["x00", "shared"] + ["x%02d" % i for i in range(1, 40)] + ["common"] * (not twice)
        c.check(doc.get("n0", {}).get("many") == many and
                doc.get("n0", {}).get("few") == {"r": "web", "g05": "x", "g18": "x", "g31": "x", "c": "common"} and
                doc.get("n1", {}).get("first") == ("common" if twice else "x20") and
                doc.get("n2", {}).get("first") == ("common" if twice else "y01") and
                doc.get("n3", {}).get("many") == ["common"],
                "walk hits (%s): the expected values (%r)" % (variant, doc))


GIVEUP_HIERA = """version: 5
defaults:
  data_hash: yaml_data
  datadir: data
hierarchy:
  - name: role
    path: "role/%{facts.role}.yaml"
  - name: common
    path: common.yaml
"""
GIVEUP_COMMON = """lookup_options:
  deep:
    merge: deep
own: "%{trusted.certname}-own"
shared: "%{facts.role}-shared"
mixed: "%{facts.half}-%{facts.role}"
deep:
  a:
    who: "%{trusted.certname}"
    role: "%{facts.role}"
  list: ["%{facts.hostname}", "common"]
al_hash: "%{alias('deep')}"
al_own: "%{alias('own')}"
al_missing: "%{alias('nope')}"
al_self: "%{alias('al_self')}"
al_bad: "x %{alias('own')}"
al_space: '%{ alias("shared") }'
"""
GIVEUP_ROLE = """deep:
  a:
    extra: "%{facts.role}-%{trusted.certname}"
  b: "%{facts.half}"
own: "%{facts.hostname}.%{facts.role}"
"""


def check_given_up_interpolations(c, hiera, root):
    """A value whose remembered interpolations are almost never found again (one that reads the
    node's name) is interpolated plainly after a while (interp.c ODDS_TRIES): a fleet larger than
    that, whose values read the node's name, its role or both, inside merged hashes too, prints
    for every node what a run with that node alone prints."""
    repo = os.path.join(root, "give-up")
    facts_dir = os.path.join(repo, "facts")
    os.makedirs(facts_dir)
    write_files(repo, {"hiera.yaml": GIVEUP_HIERA, "data/common.yaml": GIVEUP_COMMON,
                       "data/role/web.yaml": GIVEUP_ROLE, "data/role/db.yaml": GIVEUP_ROLE})
    for i in range(150):
        name = "h%03d.example.com" % i
        with open(os.path.join(facts_dir, name + ".json"), "w") as fh:
            json.dump({"hostname": "h%03d" % i, "domain": "example.com", "fqdn": name, "clientcert": name,
                       "role": ("web", "db", "none")[i % 3], "half": "x" if i < 75 else "y"}, fh)
    base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
            "--hiera_config", os.path.join(repo, "hiera.yaml")]
    keys = ["own", "shared", "mixed", "deep", "al_hash", "al_own", "al_missing", "al_self", "al_bad", "al_space"]
    p = run([hiera, "batch"] + base + ["--facts-dir", facts_dir, "--jobs", "1"] + keys)
    fleet = json.loads(p.stdout)
    errors = fleet.pop(".errors", {})
    c.check(p.returncode == 2 and len(fleet) == 150 and len(errors) == 150,
            "give-up fleet: rc=%d, %d nodes, %d with errors (al_self, al_bad)" % (p.returncode, len(fleet), len(errors)))
    for name in sorted(fleet):
        one = run([hiera, "batch"] + base + ["--facts", os.path.join(facts_dir, name + ".json")] + keys)
        alone = json.loads(one.stdout)
        c.check(alone == {name: fleet[name], ".errors": {name: errors.get(name)}},
                "give-up fleet: node %s alone %r, in the fleet %r %r" % (name, one.stdout[:300], fleet[name], errors.get(name)))
    last, web = fleet.get("h149.example.com", {}), fleet.get("h147.example.com", {})
    c.check(last.get("own") == "h149.example.com-own" and last.get("deep", {}).get("a", {}).get("who") == "h149.example.com"
            and web.get("own") == "h147.web" and web.get("deep", {}).get("a", {}).get("extra") == "web-h147.example.com",
            "give-up fleet: the last nodes' own values (%r, %r)" % (last, web))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--nodes", type=int, default=30)
    ap.add_argument("--keys", type=int, default=150)
    ap.add_argument("--batch-keys", type=int, default=40)
    ap.add_argument("--keep", help="generate the repository here and keep it")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    c = Checker()
    repo = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="hiera-batch-check-")
    # a scratch disk cache, removed at the end (never the user's ~/.cache/hiera)
    scratch = tempfile.mkdtemp(prefix="hiera-batch-cache-")
    os.environ["HIERA_CACHE_DIR"] = scratch
    if args.keep and os.path.exists(repo):
        shutil.rmtree(repo)
    try:
        run([sys.executable, GEN, "--out", repo, "--nodes", str(args.nodes), "--keys", str(args.keys),
             "--batch-keys", str(args.batch_keys), "--seed", "7"], check=True)
        common = os.path.join(repo, "environments/production/data/common.yaml")
        with open(common, "a") as fh:
            fh.write(EXTRA_DATA)
        facts_dir = os.path.join(repo, "facts")
        # nodes that cannot be looked up: unreadable YAML, a partial trusted override, no facts
        with open(os.path.join(facts_dir, "broken.yaml"), "w") as fh:
            fh.write("a: [unclosed\n")
        with open(os.path.join(facts_dir, "partial.json"), "w") as fh:
            fh.write('{"hostname": "partial", "role": "web"}')
        with open(os.path.join(facts_dir, "empty.yml"), "w") as fh:
            fh.write("{}\n")
        with open(os.path.join(facts_dir, "list.yaml"), "w") as fh:
            fh.write("- not\n- a hash\n")
        # nodes with facts interpolated again (after the generated ones: their answers are
        # remembered by then)
        gen_node = sorted(f for f in os.listdir(facts_dir) if f.startswith("node") and f.endswith(".yaml"))[0]
        with open(os.path.join(facts_dir, gen_node)) as fh:
            gen_facts = fh.read()
        for name in ("zz-again-1", "zz-again-2"):
            with open(os.path.join(facts_dir, name + ".yaml"), "w") as fh:
                fh.write(gen_facts.rstrip("\n") + "\n" + EXTRA_FACTS.lstrip("\n"))
        # files that are not nodes
        with open(os.path.join(facts_dir, ".hidden.yaml"), "w") as fh:
            fh.write("hostname: hidden\n")
        with open(os.path.join(facts_dir, "README.txt"), "w") as fh:
            fh.write("not facts\n")
        with open(os.path.join(repo, "keys-batch.txt")) as fh:
            keys = [l.strip() for l in fh if l.strip() and not l.strip().startswith("#")]
        keys += EXTRA_KEYS
        with open(os.path.join(repo, "check-keys.txt"), "w") as fh:
            fh.write("# the keys of the check\n\n" + "\n".join("  %s  " % k for k in keys) + "\n" + keys[0] + "\n")
        nodes = sorted((f.rsplit(".", 1)[0], os.path.join(facts_dir, f)) for f in os.listdir(facts_dir)
                       if f.endswith((".yaml", ".yml", ".json")) and not f.startswith("."))
        base = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"),
                "--hiera_config", os.path.join(repo, "hiera.yaml")]

        doc = compare_variant(c, hiera, repo, base, keys, nodes, [], "default")
        c.check(doc is not None and ".hidden" not in doc and "README" not in doc, "hidden and non-facts files are skipped")
        # what the folder says a name is: a link to a facts file is a node, a folder or a dangling
        # link is not (the listing trusts the folder's file types and follows links)
        kinds_dir = os.path.join(repo, "facts-kinds")
        os.makedirs(os.path.join(kinds_dir, "folder.yaml"))
        first = next(p for n, p in nodes if n.startswith("node"))
        shutil.copy(first, os.path.join(kinds_dir, "plain" + os.path.splitext(first)[1]))
        os.symlink(first, os.path.join(kinds_dir, "linked" + os.path.splitext(first)[1]))
        os.symlink(os.path.join(kinds_dir, "nowhere.yaml"), os.path.join(kinds_dir, "dangling.yaml"))
        kinds = run([hiera, "batch"] + base + ["--facts-dir", kinds_dir, keys[0]])
        try:
            kinds_doc = json.loads(kinds.stdout)
        except ValueError:
            kinds_doc = None
        c.check(kinds_doc is not None and sorted(n for n in kinds_doc if n != ".errors") == ["linked", "plain"],
                "a linked facts file is a node; a folder and a dangling link are not")
        c.check(doc is not None and set(doc.get(".errors", {})) >= {"broken", "partial", "empty", "list"},
                "broken facts files are node errors")
        # worker processes: the same bytes and exit status whatever their number
        jobs_cmd = [hiera, "batch"] + base + ["--facts-dir", facts_dir, "--keys-file", os.path.join(repo, "check-keys.txt")]
        one = run(jobs_cmd + ["--jobs", "1"])
        for j in ["2", "3", str(len(nodes) + 5)]:
            pj = run(jobs_cmd + ["--jobs", j])
            c.check(pj.stdout == one.stdout and pj.returncode == one.returncode and pj.stderr == one.stderr,
                    "--jobs %s prints what --jobs 1 prints, the summary on stderr too (rc %d vs %d, %d vs %d bytes, stderr %r)"
                    % (j, pj.returncode, one.returncode, len(pj.stdout), len(one.stdout), pj.stderr[:200]))
        ok_only = run(jobs_cmd[:-2] + ["--keys-file", os.path.join(repo, "keys-batch.txt"), "--jobs", "3"])
        ok_one = run(jobs_cmd[:-2] + ["--keys-file", os.path.join(repo, "keys-batch.txt"), "--jobs", "1"])
        c.check(ok_only.stdout == ok_one.stdout, "--jobs 3 without lookup errors prints what --jobs 1 prints")
        for bad in ["0", "x", "65", "-1"]:
            pb = run(jobs_cmd + ["--jobs", bad])
            c.check(pb.returncode == 1 and pb.stdout == b"" and b"--jobs" in pb.stderr, "--jobs %s is refused" % bad)
        few = nodes[:6]
        compare_variant(c, hiera, repo, base, keys, few, ["--merge", "deep", "--knock-out-prefix", "--", "--merge-hash-arrays"],
                        "merge deep")
        compare_variant(c, hiera, repo, base, keys, few, ["--merge", "unique"], "merge unique")
        compare_variant(c, hiera, repo, base, keys, few, ["--type", "String", "--default", "none"], "type and default")

        # YAML: the same document, except the values JSON cannot show (Infinity), which YAML can
        node, facts = next(n for n in nodes if n[0].startswith("node"))
        p = run([hiera, "batch"] + base + ["--facts-dir", facts_dir, "--keys-file", os.path.join(repo, "check-keys.txt"),
                                           "--render-as", "yaml"])
        singles = [hiera_lookup(hiera, base, node, facts, k, ["--render-as", "yaml"]) for k in keys]
        ydoc, yvals, why = None, None, ""
        if yaml is None:
            why = "python3-yaml is not installed (scripts/deps.sh --test installs it)"
        else:
            try:
                ydoc = yaml.load(p.stdout, Loader=YAML_LOADER)
                yvals = [yaml.load(o, Loader=YAML_LOADER) if rc == 0 else None for rc, o, _ in singles]
            except yaml.YAMLError as e:
                ydoc, why = None, str(e)[-300:]
        c.check(isinstance(ydoc, dict) and p.returncode == 2, "--render-as yaml: a YAML document (%s)" % why)
        if isinstance(ydoc, dict) and doc is not None:
            jdoc = json.loads(json.dumps(doc))
            for k, (rc, _, _), v in zip(keys, singles, yvals):
                if rc == 0:
                    c.check(as_json(ydoc[node].get(k)) == as_json(v),
                            "yaml: node %s key %s: batch %r, lookup %r" % (node, k, ydoc[node].get(k), v))
            for n, vals in ydoc.items():
                if n != ".errors" and "bad::infinity" in vals:
                    del vals["bad::infinity"]
                    del jdoc[".errors"][n]["bad::infinity"]
            jdoc[".errors"] = {n: e for n, e in jdoc[".errors"].items() if e}
            c.check(as_json(ydoc) == json.dumps(jdoc), "--render-as yaml gives the JSON document")

        # --facts: one node, named by the file or by --node
        p = run([hiera, "batch"] + base + ["--facts", facts, "--keys-file", os.path.join(repo, "check-keys.txt")])
        one = json.loads(p.stdout)
        c.check(list(one)[:1] == [node] and one[node] == doc.get(node), "--facts FILE is the node named after the file")
        p = run([hiera, "batch"] + base + ["--facts", facts, "--node", "other", keys[0], keys[1]])
        one = json.loads(p.stdout)
        c.check(list(one) == ["other"] and list(one["other"]) == [k for k in keys[:2] if k in doc[node]],
                "--node names the node; keys as arguments")
        p = run([hiera, "batch"] + base + ["--facts", facts, "--node", ".errors", keys[0]])
        c.check(p.returncode == 1 and p.stdout == b"", "a node name starting with '.' is refused")

        # usage errors print nothing on stdout and exit 1
        # (no keys at all looks up every key each node sees: tests/keys/check.py; an empty keys
        # file is still no keys)
        for bad in (["--facts-dir", facts_dir, "--keys-file", os.devnull], ["--facts-dir", facts_dir, "--facts", facts, "k"],
                    [keys[0]], ["--facts-dir", "/nonexistent", "k"], ["--facts-dir", facts_dir, "--render-as", "s", "k"],
                    ["--facts-dir", facts_dir, "--merge", "bogus", "k"], ["--facts-dir", facts_dir, "--keys-file", "/nonexistent"],
                    ["--facts-dir", facts_dir, "--sort-merged-arrays", "k"], ["--facts-dir", facts_dir, "--explain", "k"],
                    ["--facts-dir", facts_dir, "--bogus", "k"]):
            p = run([hiera, "batch"] + base + bad)
            c.check(p.returncode == 1 and p.stdout == b"" and p.stderr.startswith(b"Error: "),
                    "usage error %s: rc=%d stdout=%r stderr=%r" % (bad, p.returncode, p.stdout[:80], p.stderr[:120]))
        # two facts files for one node
        shutil.copy(facts, facts.rsplit(".", 1)[0] + ".json")
        p = run([hiera, "batch"] + base + ["--facts-dir", facts_dir, keys[0]])
        d2 = json.loads(p.stdout)
        c.check(node not in d2 and isinstance(d2.get(".errors", {}).get(node), str) and p.returncode == 2,
                "two facts files for one node make a node error")
        os.unlink(facts.rsplit(".", 1)[0] + ".json")
        # keys from stdin
        p = run([hiera, "batch"] + base + ["--facts", facts, "--keys-file", "-"], input=("# c\n\n%s\n" % keys[0]).encode())
        one = json.loads(p.stdout)
        c.check(list(one[node]) == [k for k in keys[:1] if k in doc[node]], "--keys-file - reads stdin")
        # an output that cannot be written (a full device): an error naming why, exit 1, with one
        # process and with workers (each writes its part itself)
        if os.path.exists("/dev/full"):
            for jobs in ("1", "3"):
                with open("/dev/full", "wb") as full:
                    p = subprocess.run([hiera, "batch"] + base + ["--facts-dir", facts_dir, "--keys-file",
                                       os.path.join(repo, "keys-batch.txt"), "--jobs", jobs],
                                       stdout=full, stderr=subprocess.PIPE, timeout=600)
                c.check(p.returncode == 1 and b"cannot write the output: No space left on device" in p.stderr,
                        "--jobs %s into /dev/full: rc=%d stderr=%r" % (jobs, p.returncode, p.stderr[-200:]))
        # nothing found anywhere: an empty node, a valid document
        p = run([hiera, "batch"] + base + ["--facts", facts, "no::such::key"])
        c.check(p.returncode == 0 and json.loads(p.stdout) == {node: {}}, "a node with nothing found is {}")

        check_facts_sources(c, hiera, repo)
        check_remembered_levels(c, hiera, repo)
        check_given_up_interpolations(c, hiera, repo)
        check_walk_hits(c, hiera, repo)
    finally:
        if not args.keep:
            shutil.rmtree(repo, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
