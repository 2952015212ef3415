#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/<harness>/) from the
project's recorded cases (tests/cases) and, when present, the shared conformance cases.

usage: tests/fuzz/make-seeds.py [--shared DIR]   (run from the repository root)
Seeds are small (files over MAX bytes are left out) and named by the hash of their content,
so running it again only adds what is new.
"""
import glob, hashlib, json, os, re, sys

MAX = 3000
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")

def put(harness, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX * 2:
        return
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def read(p):
    with open(p, "rb") as f:
        return f.read()

def small(paths):
    return [p for p in sorted(paths) if os.path.getsize(p) <= MAX]

def main(argv):
    shared = os.path.join(os.path.dirname(ROOT), "shared", "conformance", "cases")
    if "--shared" in argv:
        shared = argv[argv.index("--shared") + 1]
    roots = [os.path.join(ROOT, "tests", "cases")] + ([shared] if os.path.isdir(shared) else [])
    yamls, jsons, confs, configs, types, cases = [], [], [], [], set(), []
    for r in roots:
        for p in glob.glob(os.path.join(r, "**", "*"), recursive=True):
            base = os.path.basename(p)
            if not os.path.isfile(p) or os.path.getsize(p) > MAX:
                continue
            if base == "hiera.yaml":
                configs.append(p)
            elif base in ("case.json", "expected.json", "case.yaml"):
                pass
            elif p.endswith((".yaml", ".yml", ".eyaml")):
                yamls.append(p)
            elif p.endswith(".json"):
                jsons.append(p)
            elif p.endswith(".conf"):
                confs.append(p)
        for c in glob.glob(os.path.join(r, "*", "case.json")):
            spec = json.load(open(c))
            cases.append((os.path.dirname(c), spec))
            for q in spec.get("queries", []):
                if "type" in q:
                    types.add(q["type"])
    # yaml: both modes
    for i, p in enumerate(small(yamls + configs)):
        put("yaml", bytes([i & 1]) + read(p))
    for p in small(jsons):
        put("json", read(p))
    # diskcache: YAML to store and read back (odd first byte), and a few raw entry bodies
    for i, p in enumerate(small(yamls)[:60]):
        put("diskcache", bytes([1]) + read(p))
    for body in [b"\x00\x00h\x01\x02s\x01\x01as\x01\x01xs\x02\x01bar\x00",
                 b"\x00\x00a\x00\x03i\x00" + bytes(8) + b"d\x00" + bytes(8) + b"y\x00\x03sym",
                 b"\x00\x00a\x00\x02s\x00\x01xr\x01", b"\x00\x00b\x00\x0399999999999999999999"]:
        put("diskcache", bytes([0]) + body)
    for p in small(confs):
        put("hocon", read(p))
    for t in HOCON:
        put("hocon", t)
    for i, p in enumerate(small(configs)):
        put("config", bytes([i % 3]) + read(p))
    # types from queries and convert_to options, with a few values
    texts = b"".join(read(p) for p in small(yamls))
    for m in re.finditer(rb"convert_to:\s*(\S[^\n]*)", texts):
        types.add(m.group(1).decode("utf-8", "replace").strip("'\""))
    values = ["1", "'12'", "[1, 2, 3]", "{a: 1, b: x}", "~", "3.5", "[Integer, 16]", "hello"]
    for i, t in enumerate(sorted(types)):
        put("ptype", t + "\n" + values[i % len(values)])
    # regexps: lookup_options patterns
    for m in sorted(set(re.findall(rb"^\s+['\"]?(\^[^\n:'\"]*)", texts, re.M))):
        put("regex", m + b"\0" + b"profile::base::users")
    for pat in [b"^--", b"(a|b)*c", b"\\A\\w+::", b"[[:alpha:]]+$", b"(?<n>x)\\k<n>"]:
        put("regex", pat + b"\0aaaa::bbbb--x")
    # interpolation: the strings of data that interpolate
    for m in sorted(set(re.findall(rb"[^\n]*%\{[^\n]*", texts))):
        s = m.strip()
        s = re.sub(rb"^[^:]*:\s*", b"", s).strip(b"'\"")
        put("interp", bytes([1]) + s)
    for s in ["%{facts.os.family}", "%{lookup('ref')}", "%{alias('aliased')}", "%{::trusted.certname}",
              "%{facts.list.2.1}", "%{literal('%')}{x}", "%{scope('h.c.d.0')}", "%{hiera('loop')}"]:
        put("interp", bytes([1]) + s.encode())
        put("interp", bytes([3]) + s.encode())
    # glob patterns
    for g in ["data/*.yaml", "data/**/*.yaml", "data/{a,common}.yaml", "data/nodes/?1*", "data/[a-c]*/*",
              "data/**/{d,z}.yaml", "data/\\{x\\}/*", "data/loop/loop/*.yaml", "**/", "data/*/"]:
        put("glob", g)
    # Hiera 3: the data of the hiera3 cases under the harness' fixed hiera.yaml
    for case, spec in cases:
        if spec.get("engine") != "hiera3":
            continue
        ys = small(glob.glob(os.path.join(case, "**", "*.yaml"), recursive=True))
        ys = [p for p in ys if os.path.basename(p) != "hiera.yaml"]
        js = small(glob.glob(os.path.join(case, "**", "*.json"), recursive=True))
        js = [p for p in js if not p.endswith(("case.json", "expected.json"))]
        keys = [q["key"] if isinstance(q["key"], str) else q["key"][0] for q in spec.get("queries", [])]
        for i, q in enumerate(spec.get("queries", [])[:8]):
            res = {"priority": 0, "array": 1, "hash": 2}.get(q.get("resolution", "priority"), 0)
            secs = [b"", read(ys[i % len(ys)]) if ys else b"", read(ys[(i + 1) % len(ys)]) if ys else b"",
                    read(js[i % len(js)]) if js else b"{}", keys[i].encode()]
            put("hiera3", bytes([res + (3 * (i % 2) if res == 2 else 0), i]) + b"\n%%\n".join(secs))
    # lookups: data files of the cases, cut into the harness' sections
    sep = b"\n%%\n"
    for case, spec in cases:
        ys = small(glob.glob(os.path.join(case, "**", "data", "**", "*.yaml"), recursive=True))
        js = small(glob.glob(os.path.join(case, "**", "*.json"), recursive=True))
        js = [p for p in js if not p.endswith(("case.json", "expected.json"))]
        if not ys:
            continue
        keys = [q["key"] if isinstance(q["key"], str) else q["key"][0] for q in spec.get("queries", [])]
        for i in range(0, len(ys), 2):
            secs = [read(ys[i]), read(ys[i + 1]) if i + 1 < len(ys) else b"",
                    read(js[0]) if js else b"{}", read(ys[(i + 2) % len(ys)]),
                    (keys[i % len(keys)] if keys else "a").encode()]
            put("lookup", bytes([i % 9, (i * 37) & 0xff]) + sep.join(secs))
    put("lookup", bytes([4, 0]) + sep.join([
        b"a: global\nh: {x: {g: 1}}\nlist: [x]\nlookup_options:\n  h: {merge: deep}\n  '^mod::': {merge: unique}\n",
        b"a: node\nh: {x: {n: '%{facts.os.family}'}}\nlist: ['--x', y]\n",
        b"{\"a\": \"json\", \"h\": {\"x\": {\"j\": 2}}, \"lookup_options\": {\"list\": {\"merge\": \"unique\"}}}",
        b"mod::a: '%{lookup(\"a\")}'\nmod::h: {z: 1}\nlookup_options:\n  mod::h: {merge: hash}\n",
        b"", ENV_CFG, b"a = hocon\nh { x { c = 3 } }\n"]))
    return 0

HOCON = [
    'a = ${?b}\nb = ${a}\nc = [1,2] [3]\nd = ${c} [4]\ne += 5\ne += 6\n',
    'x { y = 1 }\nx = ${x} { z = 2 }\ninclude "other"\ninclude file("missing.conf")\n',
    '{ "json": true, "arr": [ {"a": 1}, {"b": 2} ], "n": -1.5e3, "s": "\\u00e9\\n" }\n',
    'a.b.c = 1\na.b { d = ${a.b.c} }\nself = ${a} { e = 1 }\nobjconcat = { p = 1 } { q = 2 }\nstr = foo bar "baz" 1.0\n',
    'key : """triple "quoted" string"""\nopt = ${?NOPE}\nenvv = ${?HOME}\nlist = ${?nothing} [1]\n',
]

ENV_CFG = b"""version: 5
hierarchy:
  - name: node
    path: "nodes/%{trusted.certname}.yaml"
  - name: globs
    globs: ["glob/*.yaml", "role/{web,db}.yaml"]
  - name: json
    data_hash: json_data
    path: common.json
  - name: hocon
    data_hash: hocon_data
    path: common.conf
"""

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
