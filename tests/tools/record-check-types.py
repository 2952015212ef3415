#!/usr/bin/env python3
"""Records what Puppet says about class parameter values, for `hiera check --facts-dir`.

Generates a control repository (deterministic for a seed) with a module of classes whose
parameters are typed (core types, ranges, Enum, Pattern, collections, Struct, Tuple, Variant,
Optional, NotUndef, Sensitive, the module's own type aliases), data at four levels of the
environment and in the module with right and wrong values (YAML traps included), lookup_options
merges and convert_to, interpolation of facts and alias(), and a facts file per node. Then, for
every node and every class, compiles the node's catalog with the class included:

    puppet apply --certname NODE --facts_terminus json ... -e 'include CLASS'

(the node's facts through the json facts terminus in a private vardir) and records the errors
Puppet reports as (node, class, message line) in expected.json. tests/check/run.py replays them
without Puppet: the parameter-type and parameter-missing findings of `hiera check --facts-dir`
must name exactly these (node, class, line) triples.

usage: record-check-types.py [--seed N] [--out DIR] [--jobs N]
       (default: --seed 1 --out tests/check/types; needs puppet 7)
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)

# Each parameter: (name, type, default or None, pool of YAML values: right and wrong)
CLASSES = {
    "gen::basic": [
        ("port", "Integer", "80", ["8080", '"8080"', "8.5", "-1", "yes", "~", "[1]"]),
        ("title_text", "String", None, ['"web"', "42", "true", "~", '["a"]', '""', "on"]),
        ("enabled", "Boolean", "true", ["true", "no", '"false"', "0", "~"]),
        ("ratio", "Float", "1.0", ["0.5", "1", '"0.5"', "1.10", "2e3"]),
        ("opt", "Optional[String]", "undef", ['"x"', "~", "5", "[]"]),
        ("short", "String[3,8]", "'abc'", ['"abcd"', '"ab"', '"abcdefghij"', "1234"]),
    ],
    "gen::ranges": [
        ("port", "Integer[1,65535]", "80", ["443", "0", "70000", '"443"']),
        ("alias_port", "Gen::Port", "80", ["22", "0", '"22"', "65536"]),
        ("num", "Numeric", "1", ["3", "3.5", '"3"', "1:30"]),
        ("letter", "Enum['a','b','c']", "'a'", ["a", "d", "A", "1"]),
        ("word", "Pattern[/^[a-z]+$/]", "'abc'", ["abc", "Abc", '"a b"', "12"]),
        ("mode", "Gen::Mode", "'0644'", ['"0644"', "0644", '"644"', "'0755'"]),
    ],
    "gen::collections": [
        ("list", "Array[String]", "[]", ['["a", "b"]', '"a"', "[1, 2]", "[]", '["a", 1]']),
        ("min2", "Array[Integer,2]", "[1, 2]", ["[1, 2, 3]", "[1]", '["1", "2"]']),
        ("counts", "Hash[String, Integer]", "{}", ["{a: 1, b: 2}", '{a: "1"}', "[a]", "{a: ~}"]),
        ("pair", "Tuple[String, Integer]", "['a', 1]", ['["x", 2]', '[2, "x"]', '["x"]', '["x", 2, 3]']),
        ("svc", "Struct[{name => String, Optional[port] => Integer}]", "{'name' => 'x'}",
         ["{name: web}", "{name: web, port: 80}", "{port: 80}", '{name: web, port: "80"}', "{name: web, extra: 1}"]),
    ],
    "gen::variants": [
        ("servers", "Variant[String, Array[String]]", "'a'", ['"a"', '["a", "b"]', "[1]", "5", "{a: 1}"]),
        ("maybe", "Optional[Integer]", "undef", ["3", "~", '"3"']),
        ("required", "NotUndef", "1", ["1", "~", '"x"']),
        ("anything", "Any", "undef", ["1", '"x"', "~", "[1]"]),
        ("ipish", "Variant[Gen::Ipv4, Enum['auto']]", "'auto'", ['"10.0.0.1"', "auto", '"10.0.0"', "10"]),
    ],
    "gen::merged": [
        ("users", "Array[String]", "[]", ['["alice"]', '["bob", "carol"]', '"dave"', "[1]"]),
        ("settings", "Hash[String, Hash[String, Integer]]", "{}",
         ["{a: {x: 1}}", "{a: {y: 2}}", '{b: {x: "1"}}', "{c: 3}"]),
        ("converted", "Integer", "0", ['"42"', "42", '"forty"', '"4.5"']),
        ("secret", "Sensitive[String]", None, ['"hunter2"', "42"]),
    ],
    "gen::interp": [
        ("port_from_fact", "Integer", "80", ['"%{facts.app_port}"', "8080"]),
        ("greeting", "String[6]", "'hello!'", ['"hello %{facts.role}"', '"hi %{facts.role}"']),
        ("copy", "Gen::Mode", "'0644'", ["\"%{alias('gen::ranges::mode')}\""]),
        ("looked", "Enum['web-x','db-x']", "'web-x'", ["\"%{facts.role}-x\"", "\"%{lookup('gen::basic::title_text')}-x\""]),
    ],
    "gen::req": [
        ("needed", "String", None, ['"here"', "1"]),
        ("opt_needed", "Optional[String]", None, ['"here"']),
        ("untyped", None, None, ["1"]),
    ],
}

ALIASES = {
    "port": "type Gen::Port = Integer[1, 65535]",
    "mode": "type Gen::Mode = Pattern[/\\A0[0-7]{3}\\z/]",
    "ipv4": "type Gen::Ipv4 = Pattern[/\\A([0-9]+\\.){3}[0-9]+\\z/]",
}

LOOKUP_OPTIONS = """lookup_options:
  gen::merged::users:
    merge: unique
  gen::merged::settings:
    merge: deep
  gen::merged::converted:
    convert_to: Integer
  gen::merged::secret:
    convert_to: Sensitive
"""

NODES = [
    ("web1.example.com", "web", "Debian", "8080"),
    ("web2.example.com", "web", "RedHat", "x80"),
    ("db1.example.com", "db", "Debian", "5432"),
    ("db2.example.com", "db", "RedHat", "5433"),
    ("solo.example.com", "other", "Debian", "1"),
]

LEVELS = ["nodes", "role", "os", "common"]


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def generate(tree, seed):
    r = random.Random(seed)
    if os.path.isdir(tree):
        shutil.rmtree(tree)
    write(tree, "hiera.yaml", """version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: nodes
    path: "nodes/%{trusted.certname}.yaml"
  - name: role
    path: "role/%{facts.role}.yaml"
  - name: os
    path: "os/%{facts.os.family}.yaml"
  - name: common
    path: common.yaml
""")
    write(tree, "environment.conf", "modulepath = modules:$basemodulepath\n")
    mod = "modules/gen"
    write(tree, mod + "/metadata.json", json.dumps({"name": "test-gen", "version": "1.0.0", "author": "test",
                                                    "license": "Apache-2.0", "summary": "generated",
                                                    "source": "none", "dependencies": []}, indent=2) + "\n")
    write(tree, mod + "/hiera.yaml", """version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: module common
    path: common.yaml
""")
    for name, text in ALIASES.items():
        write(tree, "%s/types/%s.pp" % (mod, name), text + "\n")
    # the classes; their bodies are empty
    for cls, params in CLASSES.items():
        lines = ["class %s (" % cls]
        for (p, t, d, _pool) in params:
            lines.append("  %s$%s%s," % (t + " " if t else "", p, " = " + d if d is not None else ""))
        lines.append(") {\n}\n")
        write(tree, "%s/manifests/%s.pp" % (mod, cls.split("::")[1]), "\n".join(lines))
    write(tree, mod + "/manifests/init.pp", "class gen {\n}\n")
    # the main manifest includes every class (what `hiera check` takes as declared)
    write(tree, "manifests/site.pp", "".join("include %s\n" % c for c in CLASSES))
    # data: for each level file, a random part of the parameters with random values of their pool
    files = {}
    for lvl in LEVELS:
        if lvl == "nodes":
            names = [n[0] for n in NODES if r.random() < 0.8]
        elif lvl == "role":
            names = ["web", "db"]
        elif lvl == "os":
            names = ["Debian", "RedHat"]
        else:
            names = ["common"]
        for n in names:
            rel = "data/common.yaml" if lvl == "common" else "data/%s/%s.yaml" % (lvl, n)
            files[rel] = []
    module_common = []
    for cls, params in CLASSES.items():
        for (p, t, d, pool) in params:
            key = "%s::%s" % (cls, p)
            for rel in files:
                prob = 0.6 if rel == "data/common.yaml" else 0.3
                if r.random() < prob:
                    files[rel].append("%s: %s" % (key, r.choice(pool)))
            if r.random() < 0.3:
                module_common.append("%s: %s" % (key, r.choice(pool)))
    for rel, lines in files.items():
        text = "---\n" + "\n".join(lines) + "\n"
        if rel == "data/common.yaml":
            text += LOOKUP_OPTIONS
        write(tree, rel, text)
    write(tree, mod + "/data/common.yaml", "---\n" + "\n".join(module_common) + "\n")
    for (node, role, fam, port) in NODES:
        facts = {"role": role, "os": {"family": fam, "release": {"major": "12"}}, "app_port": port,
                 "networking": {"fqdn": node}}
        write(tree, "facts/%s.json" % node, json.dumps(facts, indent=2) + "\n")


def compile_one(tree, work, node, cls):
    """puppet apply of `include cls` for node; the error text or ''."""
    code = os.path.join(work, "code")
    private = os.path.join(work, "%s-%s" % (node, cls.replace(":", "_")))
    vardir = os.path.join(private, "var")
    facts_dir = os.path.join(vardir, "client_data", "facts")
    os.makedirs(facts_dir, exist_ok=True)
    with open(os.path.join(tree, "facts", node + ".json")) as fh:
        facts = json.load(fh)
    facts.setdefault("clientcert", node)
    facts.setdefault("fqdn", node)
    facts.setdefault("hostname", node.split(".")[0])
    facts.setdefault("domain", node.split(".", 1)[1])
    with open(os.path.join(facts_dir, node + ".json"), "w") as fh:
        json.dump({"name": node, "values": facts}, fh)
    cmd = ["puppet", "apply", "--codedir", code, "--environmentpath", os.path.join(code, "environments"),
           "--environment", "production", "--certname", node, "--facts_terminus", "json", "--vardir", vardir,
           "--confdir", os.path.join(private, "confdir"), "--logdir", os.path.join(private, "log"),
           "--rundir", os.path.join(private, "run"), "--noop", "--color", "false",
           "-e", "include %s" % cls]
    p = subprocess.run(cmd, capture_output=True, text=True)
    err = "\n".join(l for l in p.stderr.splitlines() if "Facter" not in l)
    return p.returncode, err


def parse_errors(cls, err):
    """(class ref, message line) pairs from Puppet's error text."""
    ref = "Class[%s]" % "::".join(s[:1].upper() + s[1:] for s in cls.split("::"))
    m = re.search(re.escape(ref) + r":(.*?) \(line: \d+, column: \d+\) on node", err, re.S)
    if not m:
        return None
    body = m.group(1)
    lines = [l.strip() for l in body.split("\n") if l.strip()]
    return [(ref, l) for l in lines]


def other_error(err):
    """The message of an error that is not a parameter's, as Puppet words it, without its prefixes
    and position."""
    line = next((l for l in err.splitlines() if l.startswith("Error: ")), err.strip())
    line = line[len("Error: "):] if line.startswith("Error: ") else line
    for pfx in ("Evaluation Error: ", "Error while evaluating a Function Call, "):
        if line.startswith(pfx):
            line = line[len(pfx):]
    return re.sub(r" (\(file: [^)]*\)|\(line: \d+, column: \d+\)) on node \S+$", "", line).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(TESTS, "check", "types"))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    tree = os.path.join(a.out, "tree")
    generate(tree, a.seed)
    work = tempfile.mkdtemp(prefix="record-check-types.")
    try:
        os.makedirs(os.path.join(work, "code", "environments"))
        os.symlink(os.path.abspath(tree), os.path.join(work, "code", "environments", "production"))
        jobs = [(n[0], c) for n in NODES for c in CLASSES]
        expected, raw = {}, {}
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            futs = {ex.submit(compile_one, tree, work, n, c): (n, c) for (n, c) in jobs}
            for f in concurrent.futures.as_completed(futs):
                n, c = futs[f]
                rc, err = f.result()
                raw.setdefault(n, {})[c] = err
                if rc == 0 and "Error" not in err:
                    continue
                pairs = parse_errors(c, err)
                if pairs is None:
                    # another error (a lookup that fails...): the compile stopped there
                    expected.setdefault(n, {}).setdefault(c, []).append("LOOKUP: " + other_error(err))
                    continue
                for (_ref, line) in pairs:
                    expected.setdefault(n, {}).setdefault(c, []).append(line)
        for n in expected:
            for c in expected[n]:
                expected[n][c].sort()
        with open(os.path.join(a.out, "expected.json"), "w") as fh:
            json.dump({"seed": a.seed, "errors": expected, "puppet_output": raw}, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("recorded %d compiles into %s" % (len(jobs), a.out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
