#!/usr/bin/env python3
"""Checks `hiera keys` (every key a node can see, with the file and line of each definition; its
layers, levels and files with --hierarchy) and `hiera batch` without keys (every key each node can
see, looked up).

A small control repository (FILES below) has a global layer, an environment layer whose levels
interpolate facts and trusted data (a node file, a role file in JSON, a HOCON file, a missing
file, YAML common data with lookup_options and keys holding a dot or a quote), and modules: one
with its own data, keys of other namespaces (never visible) and a default_hierarchy, one without
hiera.yaml. Two nodes see different files. Checked:
  - the keys each node lists (exact lists), their lookup forms ("a.b" quoted), the definitions'
    files and lines (each line read back from the file), lookup order, --long, patterns;
  - --render-as json and yaml (the document's shape; yaml the same document), --hierarchy (text
    and json: interpolated paths, missing files, default_hierarchy);
  - against Puppet: the answers Puppet 7.23 gave for every listed key and for keys that must not
    be visible (recorded in tests/keys/puppet-answers.json by `check.py --record`, which needs
    Puppet): Puppet finds exactly the listed keys, and `hiera batch` without keys gives Puppet's
    values;
  - `hiera batch` without keys prints byte for byte what it prints given the union of the nodes'
    keys (here and on a generated repository, bench/gen-repo.py, in json and yaml, one process
    and several);
  - errors: a facts file that does not exist, an environment that does not exist, a hiera.yaml or
    a data file that does not parse (keys: listed anyway, exit status 2 and the problem on stderr;
    batch: the node's ".keys" entry under ".errors"), --hierarchy with patterns, a bad --render-as;
  - help: `hiera keys --help`, `hiera --help` lists keys.

usage: tests/keys/check.py --hiera build/hiera [--record]
Prints one line per failure and "N passed, N failed"; exit status 1 when anything failed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    yaml = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GEN = os.path.join(ROOT, "bench", "gen-repo.py")
RECORDED = os.path.join(HERE, "puppet-answers.json")
RECORDER = os.path.join(ROOT, "tests", "tools", "puppet-record.rb")

ENV = "environments/production"
FILES = {
    "hiera.yaml": """version: 5
defaults:
  datadir: global-data
  data_hash: yaml_data
hierarchy:
  - name: "Global per node"
    path: "nodes/%{trusted.certname}.yaml"
  - name: "Global common"
    path: common.yaml
""",
    "global-data/common.yaml": """---
# the global layer
site::name: example
profile::ntp::servers:
  - 0.pool.ntp.org
""",
    "global-data/nodes/db01.example.com.yaml": """db::global_only: true
""",
    ENV + "/hiera.yaml": """version: 5
defaults:
  data_hash: yaml_data
hierarchy:
  - name: "Per node"
    path: "nodes/%{facts.fqdn}.yaml"
  - name: "Per role"
    data_hash: json_data
    path: "role/%{facts.role}.json"
  - name: "Missing"
    path: missing.yaml
  - name: "HOCON"
    data_hash: hocon_data
    path: common.conf
  - name: "Common"
    path: common.yaml
""",
    ENV + "/data/nodes/web01.example.com.yaml": """---
profile::web::vhosts:
  - www.example.com

# a comment line
profile::ntp::servers:
  - 10.0.0.1
""",
    ENV + "/data/role/web.json": """{
  "profile::web::port": 8080,
  "role::name": "web",
  "lookup_options": {
    "profile::web::vhosts": {"merge": "unique"}
  }
}
""",
    ENV + "/data/role/db.json": """{
  "profile::db::engine": "postgresql",
  "role::name": "db"
}
""",
    ENV + "/data/common.conf": """# HOCON data
"hocon::answer" = 42
"hocon::list" = [1, 2]
"hocon::nested" {
  inner = yes
}
""",
    ENV + "/data/common.yaml": """---
lookup_options:
  profile::ntp::servers:
    merge: unique
profile::ntp::servers:
  - 1.pool.ntp.org
"dotted.key": from a top-level key with a dot
dotted:
  key: from a hash
"it's": a key with a quote
'say "hi"': a key with double quotes
role::name: common
interpolated: "%{facts.role} on %{trusted.certname}"
""",
    ENV + "/modules/ntp/hiera.yaml": """version: 5
defaults:
  data_hash: yaml_data
hierarchy:
  - name: "Per role"
    path: "roles/%{facts.role}.yaml"
  - name: "Module common"
    path: common.yaml
default_hierarchy:
  - name: "Module defaults"
    path: defaults.yaml
""",
    ENV + "/modules/ntp/data/common.yaml": """---
lookup_options:
  ntp::servers:
    merge: unique
ntp::servers:
  - ntp.example.com
other::hidden: never visible (another module's namespace)
plain_hidden: never visible (no namespace)
ntpd::hidden: never visible (ntpd is not ntp)
""",
    ENV + "/modules/ntp/data/roles/db.yaml": """ntp::role_only: db
""",
    ENV + "/modules/ntp/data/defaults.yaml": """ntp::servers:
  - from the default hierarchy
ntp::default_only: only in the default hierarchy
""",
    ENV + "/modules/nohiera/manifests/init.pp": "class nohiera {}\n",
    # a broken environment, and one with a data file that does not parse
    "environments/broken/hiera.yaml": "version: 5\nhierarchy: 12\n",
    "environments/baddata/hiera.yaml": """version: 5
hierarchy:
  - name: "Bad"
    path: bad.yaml
  - name: "Good"
    path: good.yaml
""",
    "environments/baddata/data/bad.yaml": "bad: [\n",
    "environments/baddata/data/good.yaml": "good::key: 1\nbad::too: 2\n",
    # eyaml is listed (its keys, encrypted or not); a function hiera does not have is a problem
    "environments/functions/hiera.yaml": """version: 5
hierarchy:
  - name: "Secrets"
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: /nonexistent/private_key.pkcs7.pem
      pkcs7_public_key: /nonexistent/public_key.pkcs7.pem
  - name: "Custom"
    lookup_key: my_custom_fn
    path: custom.yaml
  - name: "Custom, no file"
    lookup_key: my_custom_fn
    path: absent.yaml
  - name: "Dig"
    data_dig: my_dig
  - name: "Common"
    path: common.yaml
""",
    "environments/functions/data/secrets.eyaml": "secret::pw: ENC[PKCS7,MIIBeQYJKoZIhvcNAQcDoIIBajCCAWYCAQAx]\nplain::x: 1\n",
    "environments/functions/data/custom.yaml": "custom::k: 1\n",
    "environments/functions/data/common.yaml": "common::k: 1\n",
}

FACTS = {
    "web01.example.com": {"role": "web"},
    "db01.example.com": {"role": "db"},
}

# what each node sees, sorted, in the form a lookup takes
EXPECTED_KEYS = {
    "web01.example.com": ['"dotted.key"', '"it\'s"', "'say \"hi\"'", "dotted", "hocon::answer", "hocon::list",
                          "hocon::nested", "interpolated", "ntp::default_only", "ntp::servers", "profile::ntp::servers",
                          "profile::web::port", "profile::web::vhosts", "role::name", "site::name"],
    "db01.example.com": ['"dotted.key"', '"it\'s"', "'say \"hi\"'", "db::global_only", "dotted", "hocon::answer",
                         "hocon::list", "hocon::nested", "interpolated", "ntp::default_only", "ntp::role_only",
                         "ntp::servers", "profile::db::engine", "profile::ntp::servers", "role::name", "site::name"],
}
# keys that exist in some data file but that no lookup of the node finds (asked of Puppet too)
HIDDEN = ["other::hidden", "plain_hidden", "ntpd::hidden", "lookup_options", "bad::too", "missing::key"]
# a few definitions checked by hand: key -> [(file under the tree, line, layer, level)] for web01
EXPECTED_DEFS_WEB = {
    "profile::ntp::servers": [("global-data/common.yaml", 4, "global", "Global common"),
                              ("environments/production/data/nodes/web01.example.com.yaml", 6, "environment", "Per node"),
                              ("environments/production/data/common.yaml", 5, "environment", "Common")],
    "profile::web::port": [("environments/production/data/role/web.json", 2, "environment", "Per role")],
    "hocon::list": [("environments/production/data/common.conf", 3, "environment", "HOCON")],
    "ntp::servers": [("environments/production/modules/ntp/data/common.yaml", 5, "module", "Module common"),
                     ("environments/production/modules/ntp/data/defaults.yaml", 1, "module", "Module defaults")],
}

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}" + (f"\n      {detail}" if detail else ""))


def run(cmd, **kw):
    env = dict(os.environ, HIERA_CACHE_DIR="off")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, **kw)


def write_tree(root):
    for rel, text in FILES.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    os.makedirs(os.path.join(root, "facts"), exist_ok=True)
    for node, extra in FACTS.items():
        host, domain = node.split(".", 1)
        facts = {"hostname": host, "domain": domain, "fqdn": node, "clientcert": node}
        facts.update(extra)
        with open(os.path.join(root, "facts", node + ".yaml"), "w") as f:
            json.dump(facts, f)  # (JSON is YAML)


def settings(root, env="production"):
    return ["--confdir", root, "--codedir", root, "--environmentpath", os.path.join(root, "environments"),
            "--hiera_config", os.path.join(root, "hiera.yaml"), "--environment", env]


def node_flags(root, node):
    return ["--node", node, "--facts", os.path.join(root, "facts", node + ".yaml")]


def keys_of(hiera, root, node, *extra, env="production"):
    return run([hiera, "keys"] + settings(root, env) + node_flags(root, node) + list(extra))


def line_holds_key(path, line, key):
    """whether line `line` of the file names the key (YAML, JSON or HOCON, quoted or not)"""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        return False
    if not 1 <= line <= len(lines):
        return False
    text = lines[line - 1]
    return any(form in text for form in (key + ":", key + " =", key + " {", '"%s"' % key, "'%s'" % key,
                                         json.dumps(key)))


def check_keys(hiera, root):
    for node, expected in EXPECTED_KEYS.items():
        p = keys_of(hiera, root, node)
        got = p.stdout.split("\n")[:-1]
        check(f"keys {node}: exit 0, nothing on stderr", p.returncode == 0 and p.stderr == "", p.stderr)
        check(f"keys {node}: the keys it sees", got == expected, f"got {got}\nwant {expected}")

    # the structured form
    node = "web01.example.com"
    p = keys_of(hiera, root, node, "--render-as", "json")
    try:
        doc = json.loads(p.stdout)
    except ValueError as e:
        check("keys --render-as json: JSON", False, f"{e}: {p.stdout[:300]}")
        return
    check("keys json: node, environment, keys, lookup_options, errors",
          doc.get("node") == node and doc.get("environment") == "production" and
          sorted(doc) == ["environment", "errors", "keys", "lookup_options", "node"] and doc["errors"] == [], str(doc)[:300])
    entries = doc["keys"]
    check("keys json: the same keys as the text, in the same order",
          [e["lookup_key"] for e in entries] == EXPECTED_KEYS[node], str([e.get("lookup_key") for e in entries]))
    by_key = {e["key"]: e for e in entries}
    check("keys json: a key with a dot is listed as written, looked up quoted",
          by_key.get("dotted.key", {}).get("lookup_key") == '"dotted.key"' and
          by_key.get("say \"hi\"", {}).get("lookup_key") == "'say \"hi\"'" and
          by_key.get("dotted", {}).get("lookup_key") == "dotted", str(by_key.keys()))
    for e in entries:
        defs = e["definitions"]
        check(f"keys json: {e['key']} has definitions with layer, level, file and line",
              defs and all({"layer", "level", "file", "line"} <= set(d) for d in defs), str(defs))
        for d in defs:
            check(f"keys json: {e['key']} is at {d['file']}:{d['line']}", line_holds_key(d["file"], d["line"], e["key"]),
                  str(d))
            check(f"keys json: {e['key']} in {d['file']}: a module's definitions name the module",
                  (d["layer"] == "module") == ("module" in d) and d.get("module", "ntp") == "ntp", str(d))
    for key, want in EXPECTED_DEFS_WEB.items():
        got = [(os.path.relpath(d["file"], root), d["line"], d["layer"], d["level"]) for d in by_key[key]["definitions"]]
        check(f"keys json: the definitions of {key}, in lookup order", got == want, f"got {got}\nwant {want}")
    check("keys json: a module's default_hierarchy definitions say so",
          by_key["ntp::servers"]["definitions"][1].get("default_hierarchy") is True and
          "default_hierarchy" not in by_key["ntp::servers"]["definitions"][0], str(by_key["ntp::servers"]))
    lo = sorted((os.path.relpath(d["file"], root), d["line"], d["layer"]) for d in doc["lookup_options"])
    check("keys json: where lookup_options is defined (apart from the keys)",
          lo == [("environments/production/data/common.yaml", 2, "environment"),
                 ("environments/production/data/role/web.json", 4, "environment"),
                 ("environments/production/modules/ntp/data/common.yaml", 2, "module")], str(lo))

    # yaml: the same document
    if yaml is not None:
        p = keys_of(hiera, root, node, "--render-as", "yaml")
        check("keys --render-as yaml: the json document", p.returncode == 0 and yaml.safe_load(p.stdout) == doc,
              p.stdout[:300] + p.stderr)

    # --long: each key, then its definitions in lookup order
    p = keys_of(hiera, root, node, "--long", "profile::*")
    lines = p.stdout.split("\n")[:-1]
    want_keys = [k for k in EXPECTED_KEYS[node] if k.startswith("profile::")]
    check("keys --long with a pattern: the matching keys", [l for l in lines if not l.startswith(" ")] == want_keys,
          p.stdout)
    ntp = lines.index("profile::ntp::servers") if "profile::ntp::servers" in lines else -1
    want = [f"    {root}/{f}:{line}  " for f, line, _, _ in EXPECTED_DEFS_WEB["profile::ntp::servers"]]
    got = lines[ntp + 1:ntp + 4]
    check("keys --long: file:line of each definition in lookup order",
          ntp >= 0 and all(g.startswith(w) for g, w in zip(got, want)) and len(got) == 3, "\n".join(got))
    check("keys --long: layer and level", ntp >= 0 and got[1].endswith('environment production, level "Per node"') and
          got[0].endswith('global, level "Global common"'), "\n".join(got))
    p2 = keys_of(hiera, root, node, "-v", "profile::*")
    check("keys -v is --long", p2.stdout == p.stdout, p2.stdout)
    p = keys_of(hiera, root, node, "--long", "ntp::*")
    check("keys --long: a default_hierarchy definition is marked",
          "defaults.yaml:1  module ntp, level \"Module defaults\" (default_hierarchy)" in p.stdout, p.stdout)
    p = keys_of(hiera, root, node, "*.key*", "site::*")
    check("keys: several patterns, matched against the key as written and as looked up",
          p.stdout.split("\n")[:-1] == ['"dotted.key"', "site::name"], p.stdout)
    p = keys_of(hiera, root, node, "nothing::*")
    check("keys: a pattern that matches nothing lists nothing (exit 0)", p.returncode == 0 and p.stdout == "", p.stdout)

    # --hierarchy
    p = keys_of(hiera, root, node, "--hierarchy")
    out = p.stdout
    check("keys --hierarchy: exit 0", p.returncode == 0, p.stderr)
    check("keys --hierarchy: layers in lookup order", [l.split(":")[0] for l in out.split("\n") if l and not l.startswith(" ")]
          == ["global", "environment production", "module ntp"], out)
    check("keys --hierarchy: interpolated paths of this node",
          f"    {root}/global-data/nodes/web01.example.com.yaml (not found)" in out and
          f"    {root}/{ENV}/data/role/web.json\n" in out and f"    {root}/{ENV}/data/nodes/web01.example.com.yaml\n" in out,
          out)
    check("keys --hierarchy: a missing file", f"    {root}/{ENV}/data/missing.yaml (not found)" in out, out)
    check("keys --hierarchy: functions and default_hierarchy",
          "  HOCON (data_hash hocon_data)" in out and "  default_hierarchy:\n  Module defaults (data_hash yaml_data)" in out,
          out)
    p = keys_of(hiera, root, "db01.example.com", "--hierarchy", "--render-as", "json")
    try:
        doc = json.loads(p.stdout)
        layers = doc["layers"]
        env = [l for l in layers if l["layer"] == "environment"][0]
        role = [lv for lv in env["levels"] if lv["name"] == "Per role"][0]
        ok = (doc["node"] == "db01.example.com" and [l["layer"] for l in layers] == ["global", "environment", "module"]
              and role["function"] == "json_data" and role["kind"] == "data_hash"
              and role["locations"] == [{"original": "role/%{facts.role}.json", "path": f"{root}/{ENV}/data/role/db.json",
                                         "exists": True}]
              and layers[0]["levels"][0]["locations"][0]["exists"] is True
              and layers[2]["module"] == "ntp" and "default_levels" in layers[2])
    except (ValueError, KeyError, IndexError) as e:
        ok = False
        p.stdout += f" ({e})"
    check("keys --hierarchy --render-as json: layers, levels, locations", ok, p.stdout[:600])


def check_errors(hiera, root):
    node = "web01.example.com"
    p = run([hiera, "keys"] + settings(root) + ["--node", node, "--facts", os.path.join(root, "facts", "nope.yaml")])
    check("keys: a facts file that does not exist: exit 1, says which",
          p.returncode == 1 and p.stdout == "" and "nope.yaml" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, env="nosuchenv")
    check("keys: an environment that does not exist: exit 1",
          p.returncode == 1 and p.stdout == "" and "nosuchenv" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, env="broken")
    check("keys: a hiera.yaml that does not parse: the other layers listed, exit 2",
          p.returncode == 2 and "site::name\n" in p.stdout, p.stdout + p.stderr)
    check("keys: a hiera.yaml that does not parse: the problem on stderr with its file",
          p.stderr.startswith("Error: hiera keys: environment broken: ") and
          os.path.join(root, "environments/broken/hiera.yaml") in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, "--render-as", "json", env="broken")
    try:
        errs = json.loads(p.stdout)["errors"]
    except (ValueError, KeyError):
        errs = None
    check("keys json: the problem under errors", p.returncode == 2 and errs and errs[0]["layer"] == "environment"
          and "hiera.yaml" in errs[0]["message"] + errs[0].get("file", ""), str(errs))
    p = keys_of(hiera, root, node, env="baddata")
    check("keys: a data file that does not parse: the others listed, exit 2",
          p.returncode == 2 and "good::key\n" in p.stdout and "bad::too\n" in p.stdout, p.stdout + p.stderr)
    check("keys: a data file that does not parse: level and file on stderr",
          'environment baddata, level "Bad": ' in p.stderr and "bad.yaml" in p.stderr and "line" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, "--long", env="functions")
    check("keys: eyaml data is listed, a custom function's file is not read",
          p.stdout.split("\n")[:-1:2] == ["common::k", "plain::x", "profile::ntp::servers", "secret::pw", "site::name"] and
          "secrets.eyaml:1  environment functions, level \"Secrets\"" in p.stdout, p.stdout)
    check("keys: a function hiera does not have is a problem where a lookup would reach it (exit 2)",
          p.returncode == 2 and p.stderr.split("\n")[:-1] == [
              "Error: hiera keys: environment functions, level \"Custom\": Unable to find 'lookup_key' function named "
              f"'my_custom_fn' (file: {root}/environments/functions/hiera.yaml)",
              "Error: hiera keys: environment functions, level \"Dig\": Unable to find 'data_dig' function named "
              f"'my_dig' (file: {root}/environments/functions/hiera.yaml)"], p.stderr)
    # (hiera lookup fails on that level too: a lookup error, without a word as puppet lookup, that
    # its --explain tells)
    p = run([hiera, "lookup"] + settings(root, "functions") + node_flags(root, node) + ["common::k"])
    e = run([hiera, "lookup"] + settings(root, "functions") + node_flags(root, node) + ["--explain", "common::k"])
    check("(hiera lookup fails on that level too)", p.returncode == 1 and p.stdout == "" and "Error" not in p.stderr and
          "Unable to find 'lookup_key' function named 'my_custom_fn'" in e.stdout, p.stderr + e.stdout[-300:])
    p = keys_of(hiera, root, node, "--hierarchy", env="broken")
    check("keys --hierarchy: a layer that cannot be used: exit 2, said", p.returncode == 2 and
          "environment broken:" in p.stdout and "  error: " in p.stdout and p.stderr.startswith("Error: hiera keys: "),
          p.stdout + p.stderr)
    p = keys_of(hiera, root, node, "--hierarchy", "x::*")
    check("keys --hierarchy takes no pattern", p.returncode == 1 and "--hierarchy" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, "--render-as", "xml")
    check("keys: an unknown --render-as", p.returncode == 1 and "Unknown rendering format 'xml'" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, "--bogus")
    check("keys: an unknown option", p.returncode == 1 and "invalid option: --bogus" in p.stderr, p.stderr)
    p = keys_of(hiera, root, node, "--compile")
    check("keys: --compile refused", p.returncode == 1 and "--compile is not supported" in p.stderr, p.stderr)

    # batch without keys over the data file that does not parse
    p = run([hiera, "batch"] + settings(root, "baddata") + ["--facts-dir", os.path.join(root, "facts")])
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    errs = doc.get(".errors", {})
    check("batch without keys, a data file that does not parse: exit 2", p.returncode == 2, p.stderr)
    ok = all(isinstance(errs.get(n), dict) and "bad.yaml" in errs[n].get(".keys", "") for n in FACTS)
    check("batch without keys: what kept a node's keys from being listed is its \".keys\" entry", ok, str(errs))
    # (every lookup reads the environment's lookup_options first, so the bad file fails them all,
    # the global layer's keys included, as in Puppet)
    ok = all({".keys", "good::key", "bad::too", "site::name"} <= set(errs.get(n, {})) and doc.get(n) == {} for n in FACTS)
    check("batch without keys: the keys listed are looked up (and fail on the bad file)", ok, str(doc)[:400])
    nlookups = sum(len(errs.get(n, {})) - 1 for n in FACTS)
    check("batch without keys: the summary counts the listings apart",
          f"2 of 2 nodes could not list all their keys; {nlookups} of {nlookups} lookups failed" in p.stderr and
          "  2 key listings (first: db01.example.com): environment baddata, level \"Bad\": Unable to parse" in p.stderr,
          p.stderr)
    p = run([hiera, "batch"] + settings(root) + ["--facts-dir", os.path.join(root, "facts"), "--keys-file", os.devnull])
    check("batch with an empty --keys-file still says no keys were given",
          p.returncode == 1 and "No keys were given to lookup." in p.stderr, p.stderr)


def batch(hiera, root, *extra, env="production"):
    return run([hiera, "batch"] + settings(root, env) + ["--facts-dir", os.path.join(root, "facts")] + list(extra))


def check_batch(hiera, root, recorded):
    p = batch(hiera, root)
    check("batch without keys: exit 0, nothing on stderr", p.returncode == 0 and p.stderr == "", p.stderr)
    doc = json.loads(p.stdout)
    for node, keys in EXPECTED_KEYS.items():
        check(f"batch without keys: {node}'s keys, in order", list(doc.get(node, {})) == keys, str(list(doc.get(node, {}))))
    union = sorted({k for ks in EXPECTED_KEYS.values() for k in ks}, key=lambda s: s.encode())
    keys_file = os.path.join(root, "union.txt")
    with open(keys_file, "w") as f:
        f.write("\n".join(union) + "\n")
    for extra in ([], ["--render-as", "yaml"], ["--merge", "deep"]):
        a = batch(hiera, root, *extra)
        b = batch(hiera, root, "--keys-file", keys_file, *extra)
        check(f"batch without keys {' '.join(extra)}: the output given the union of the keys",
              a.returncode == b.returncode == 0 and a.stdout == b.stdout, a.stdout[:300] + "\n----\n" + b.stdout[:300])
    # Puppet's answers for every listed key, and for the keys that must not be visible
    if not recorded:
        check("recorded answers of Puppet (tests/keys/puppet-answers.json)", False, "missing: run check.py --record")
        return
    for node, keys in EXPECTED_KEYS.items():
        answers = recorded.get(node, {})
        found = sorted((k for k, a in answers.items() if "value" in a), key=lambda s: s.encode())
        check(f"Puppet finds exactly the keys {node} lists", found == keys, f"Puppet: {found}\nhiera: {keys}")
        for k in HIDDEN:
            check(f"Puppet does not find {k} for {node}", answers.get(k, {}).get("not_found") is True, str(answers.get(k)))
        for k in keys:
            check(f"batch without keys: {node} {k} is Puppet's value",
                  "value" in answers.get(k, {}) and doc.get(node, {}).get(k) == answers[k]["value"],
                  f"batch {doc.get(node, {}).get(k)!r}, Puppet {answers.get(k)!r}")


def check_generated(hiera, tmp):
    """batch without keys against batch with every key of a generated repository"""
    repo = os.path.join(tmp, "gen")
    p = run([sys.executable, GEN, "--out", repo, "--nodes", "40", "--keys", "400", "--batch-keys", "10"])
    if p.returncode != 0:
        check("bench/gen-repo.py", False, p.stderr)
        return
    flags = ["--codedir", repo, "--environmentpath", os.path.join(repo, "environments"), "--hiera_config",
             os.path.join(repo, "hiera.yaml"), "--confdir", repo, "--facts-dir", os.path.join(repo, "facts")]
    with open(os.path.join(repo, "keys-all.txt")) as f:
        every = sorted({l.strip() for l in f if l.strip()}, key=lambda s: s.encode())
    keys_file = os.path.join(repo, "sorted-keys.txt")
    with open(keys_file, "w") as f:
        f.write("\n".join(every) + "\n")
    for extra in (["--jobs", "1"], ["--jobs", "2"], ["--render-as", "yaml"]):
        a = run([hiera, "batch"] + flags + extra)
        b = run([hiera, "batch"] + flags + ["--keys-file", keys_file] + extra)
        check(f"generated repository, batch without keys {' '.join(extra)}: the output given every key",
              a.returncode == b.returncode == 0 and a.stdout == b.stdout and len(a.stdout) > 10000,
              f"rc {a.returncode} {b.returncode}, {len(a.stdout)} and {len(b.stdout)} bytes\n{a.stderr[:300]}")
    # and hiera keys agrees with batch, node by node
    doc = json.loads(run([hiera, "batch"] + flags).stdout)
    for node in sorted(doc)[:5]:
        p = run([hiera, "keys"] + flags[:-2] + ["--node", node, "--facts", os.path.join(repo, "facts", node + ".yaml")])
        listed = p.stdout.split("\n")[:-1]
        check(f"generated repository: hiera keys {node} lists the keys batch found", listed == list(doc[node]),
              f"{len(listed)} listed, {len(doc[node])} found")


def check_help(hiera):
    p = run([hiera, "keys", "--help"])
    check("hiera keys --help", p.returncode == 0 and p.stdout.startswith("usage: hiera keys") and "--long" in p.stdout
          and "--hierarchy" in p.stdout and "lookup_options" in p.stdout, p.stdout[:200])
    p = run([hiera, "--help"])
    check("hiera --help lists keys", "    keys      " in p.stdout, p.stdout[:800])
    p = run([hiera, "batch", "--help"])
    check("hiera batch --help says what no keys does", "every key it can see" in p.stdout, p.stdout[:300])


def record(root):
    """asks Puppet (puppet-record.rb, one process per node) for every listed and hidden key"""
    out = {}
    for node, keys in EXPECTED_KEYS.items():
        qfile = os.path.join(root, "queries.json")
        asked = keys + HIDDEN
        with open(qfile, "w") as f:
            json.dump([{"key": k} for k in asked], f)
        p = subprocess.run(["ruby", RECORDER, qfile] + settings(root) + node_flags(root, node), cwd=root,
                           capture_output=True, text=True)
        lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
        if p.returncode != 0 or not lines:
            sys.exit(f"Puppet failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        out[node] = dict(zip(asked, json.loads(lines[-1])))
    with open(RECORDED, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"recorded {sum(len(v) for v in out.values())} answers of Puppet into {RECORDED}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--record", action="store_true", help="ask Puppet again (needs puppet) and rewrite the answers")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-keys-")
    try:
        root = os.path.join(tmp, "tree")
        write_tree(root)
        if args.record:
            record(root)
        recorded = None
        if os.path.exists(RECORDED):
            with open(RECORDED) as f:
                recorded = json.load(f)
        check_keys(hiera, root)
        check_errors(hiera, root)
        check_batch(hiera, root, recorded)
        check_generated(hiera, tmp)
        check_help(hiera)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"hiera keys: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
