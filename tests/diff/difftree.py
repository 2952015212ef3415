"""Random control repositories with several nodes, and random edits of them, for the tests of
`hiera diff` (tests/diff/fastpath.py, tests/diff/puppet-diff.py).

A tree is a model: data files (YAML, JSON, HOCON written as JSON) as Python values, hiera.yaml
files as dicts, and the nodes' facts; `write(root)` puts it on disk. Edits change the model the
way a merge request would: values (top-level and deep), keys added and removed, lookup_options
(merge strategies, patterns), interpolations of other keys (lookup(), alias(), hiera()), the
hierarchy (levels swapped, dropped, added, paths changed), data files added, removed, broken
(YAML that does not parse) and mended, hiera.yaml files broken, and module data. Everything is
decided by the random.Random given, so a seed gives the same tree and edits again.
"""
import copy
import json
import os

KEYS = ["k%d" % i for i in range(8)] + ["mod_a::k%d" % i for i in range(3)] + ["mod_b::x", "mod_b::y"]
WORDS = ["alpha", "beta", "gamma", "delta", "web", "db", "x", "y", "z", "--alpha", "--x", "--", "1", "yes", "%"]
ROLES = ["web", "db"]
FAMILIES = ["Debian", "RedHat"]
ZONES = ["a", "b", "c"]


class Broken:
    """A data or config file whose text does not parse."""

    def __init__(self, text, was=None):
        self.text = text
        self.was = was  # what it held before it was broken (to mend it)


def dump_yaml(obj):
    """YAML text (JSON, which YAML reads alike, when PyYAML is not installed)."""
    try:
        import yaml
    except ImportError:
        return json.dumps(obj, indent=1) + "\n"
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, default_flow_style=False)


class Gen:
    def __init__(self, rnd):
        self.r = rnd

    def scalar(self):
        r = self.r
        c = r.randrange(15)
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
        if c == 13:
            return "%{lookup('" + r.choice(KEYS) + ".a')}"
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
        if c < 4:
            return ["first", "unique", "hash", "deep"][c]
        m = {"strategy": "deep"}
        if r.random() < 0.6:
            m["knockout_prefix"] = "--"
        if r.random() < 0.3:
            m["sort_merged_arrays"] = True
        if r.random() < 0.3:
            m["merge_hash_arrays"] = True
        return m

    def option_entry(self):
        opts = {}
        if self.r.random() < 0.85:
            opts["merge"] = self.merge()
        if self.r.random() < 0.12:
            opts["convert_to"] = self.r.choice(["Array", ["Array", True], "String"])
        return opts

    def option_name(self, module=None):
        r = self.r
        if module:
            return r.choice([k for k in KEYS if k.startswith(module + "::")] + ["^%s::k[0-9]" % module, "^%s::" % module])
        return r.choice(KEYS[:8] + ["^k[0-3]$", "^k", "^mod_a::", "mod_b::x"])

    def lookup_options(self, module=None):
        return {self.option_name(module): self.option_entry() for _ in range(self.r.randrange(1, 4))}

    def pool(self, module=None):
        return [k for k in KEYS if (k.startswith(module + "::") if module else True)]

    def data(self, module=None, with_lo=True):
        r = self.r
        d = {}
        pool = self.pool(module)
        for k in r.sample(pool, r.randrange(1, len(pool) + 1)):
            d[k] = self.value()
        if with_lo and r.random() < 0.35:
            d["lookup_options"] = self.lookup_options(module)
        return d


class Tree:
    """files: relative path -> {"kind": "data"|"config", "fmt": "yaml"|"json"|"hocon", "obj": value | Broken,
    "module": name | None}; facts: certname -> facts."""

    def __init__(self):
        self.files = {}
        self.facts = {}

    def copy(self):
        t = Tree()
        t.files = copy.deepcopy(self.files)
        t.facts = copy.deepcopy(self.facts)
        return t

    def write(self, root):
        for rel, f in self.files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            obj = f["obj"]
            if isinstance(obj, Broken):
                text = obj.text
            elif f["fmt"] in ("json", "hocon"):
                text = json.dumps(obj)
            else:
                text = dump_yaml(obj)
            with open(path, "w") as fh:
                fh.write(text)
        os.makedirs(os.path.join(root, "environments/production"), exist_ok=True)
        os.makedirs(os.path.join(root, "facts"), exist_ok=True)
        for name, facts in self.facts.items():
            with open(os.path.join(root, "facts", name + ".yaml"), "w") as fh:
                fh.write(dump_yaml(facts))

    def data_files(self, module=False):
        return sorted(rel for rel, f in self.files.items() if f["kind"] == "data")

    def keys(self):
        """Every top-level key of the data files that parse (what hiera diff considers)."""
        out = set()
        for f in self.files.values():
            if f["kind"] == "data" and isinstance(f["obj"], dict):
                out.update(k for k in f["obj"] if k != "lookup_options")
        return out


ENV = "environments/production"


def node_facts(rnd, i):
    name = "node%d" % i
    return {"hostname": name, "domain": "example.com", "fqdn": name + ".example.com", "clientcert": name + ".example.com",
            "role": rnd.choice(ROLES), "os": {"family": rnd.choice(FAMILIES)}, "list": ["l0", "l1", "l2"],
            "zones": rnd.sample(ZONES, rnd.randrange(0, 4))}


def level_files(level, facts_list):
    """The data files (relative to the datadir) a level names for the given nodes, and a few more."""
    if "path" in level:
        p = level["path"]
        out = set()
        for f in facts_list:
            out.add(p.replace("%{trusted.certname}", f["clientcert"]).replace("%{facts.role}", f["role"]).replace(
                "%{facts.os.family}", f["os"]["family"]))
        return sorted(out)
    if "paths" in level:
        return [level["paths"][0], level["paths"][2]]
    if "glob" in level:
        d = level["glob"].split("/")[0]
        return [d + "/b.yaml", d + "/a.yaml"]
    if "mapped_paths" in level:
        return ["zones/%s.yaml" % z for z in ZONES]
    return []


def new_level(rnd, i):
    kind = rnd.choice(["path", "path", "path", "paths", "glob", "mapped", "json", "hocon"])
    name = "L%d" % i
    if kind == "path":
        return {"name": name, "path": rnd.choice(["nodes/%{trusted.certname}.yaml", "role/%{facts.role}.yaml",
                                                  "os/%{facts.os.family}.yaml", "common.yaml", "c%d.yaml" % i])}
    if kind == "paths":
        return {"name": name, "paths": ["p%d_a.yaml" % i, "p%d_missing.yaml" % i, "p%d_b.yaml" % i]}
    if kind == "glob":
        return {"name": name, "glob": "g%d/*.yaml" % i}
    if kind == "mapped":
        return {"name": name, "mapped_paths": ["facts.zones", "zone", "zones/%{zone}.yaml"]}
    if kind == "hocon":
        return {"name": name, "path": "h%d.conf" % i, "data_hash": "hocon_data"}
    return {"name": name, "path": "j%d.json" % i, "data_hash": "json_data"}


def fmt_of(level, path):
    fn = level.get("data_hash", "yaml_data")
    return "json" if fn == "json_data" else "hocon" if fn == "hocon_data" else "yaml"


def add_level_files(tree, g, datadir, level, module, facts_list, prob=1.0):
    for rel in level_files(level, facts_list):
        path = datadir + "/" + rel
        if path in tree.files:
            continue
        if rel.startswith("nodes/") and g.r.random() < 0.4:
            continue  # not every node has a file
        if g.r.random() > prob:
            continue
        tree.files[path] = {"kind": "data", "fmt": fmt_of(level, rel), "obj": g.data(module), "module": module}


def gen_tree(rnd, nnodes=3):
    g = Gen(rnd)
    t = Tree()
    for i in range(1, nnodes + 1):
        f = node_facts(rnd, i)
        t.facts[f["clientcert"]] = f
    facts_list = list(t.facts.values())

    def layer(cfg_path, datadir, module=None, default=False):
        levels = []
        used = set()
        for i in range(rnd.randrange(1, 5)):
            lv = new_level(rnd, i)
            if json.dumps(lv.get("path") or lv.get("glob") or lv.get("paths") or lv.get("mapped_paths")) in used:
                continue
            used.add(json.dumps(lv.get("path") or lv.get("glob") or lv.get("paths") or lv.get("mapped_paths")))
            levels.append(lv)
        cfg = {"version": 5, "defaults": {"datadir": "data", "data_hash": "yaml_data"}, "hierarchy": levels}
        if module and default and rnd.random() < 0.3:
            cfg["default_hierarchy"] = [{"name": "dh", "path": "default.yaml"}]
            t.files[datadir + "/default.yaml"] = {"kind": "data", "fmt": "yaml", "obj": g.data(module), "module": module}
        t.files[cfg_path] = {"kind": "config", "fmt": "yaml", "obj": cfg, "module": module}
        for lv in levels:
            add_level_files(t, g, datadir, lv, module, facts_list)

    layer(ENV + "/hiera.yaml", ENV + "/data")
    if rnd.random() < 0.5:
        layer("hiera.yaml", "data")  # the global layer (datadir "data" next to it)
    for mod in ["mod_a", "mod_b"]:
        if rnd.random() < 0.6:
            layer(ENV + "/modules/%s/hiera.yaml" % mod, ENV + "/modules/%s/data" % mod, mod, default=True)
    return t


# ------------------------------------------------------------------ edits

def _config_for(tree, data_rel):
    """The hiera.yaml whose datadir holds data_rel."""
    best = None
    for rel, f in tree.files.items():
        if f["kind"] != "config":
            continue
        base = os.path.dirname(rel)
        datadir = (base + "/" if base else "") + "data/"
        if data_rel.startswith(datadir) and (best is None or len(rel) > len(best)):
            best = rel
    return best


def _leaf_paths(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _leaf_paths(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _leaf_paths(x, path + (i,))
    else:
        yield path


def edit(tree, rnd, facts=True):
    """One random edit of tree (in place); returns a description."""
    g = Gen(rnd)
    data = [rel for rel in tree.data_files() if isinstance(tree.files[rel]["obj"], dict)]
    broken = [rel for rel, f in tree.files.items() if isinstance(f["obj"], Broken) and f["obj"].was is not None]
    configs = [rel for rel, f in tree.files.items() if f["kind"] == "config" and isinstance(f["obj"], dict)]
    choices = ["value"] * 6 + ["deep"] * 3 + ["add_key"] * 2 + ["del_key"] * 2 + ["lookup_options"] * 3 + \
              ["interpolate"] * 2 + ["hierarchy"] * 2 + ["add_file", "del_file", "break_data", "break_config"]
    if broken:
        choices += ["mend"] * 4
    kind = rnd.choice(choices)
    if not data and kind not in ("hierarchy", "break_config", "mend"):
        kind = "hierarchy"
    if kind == "mend":
        rel = rnd.choice(broken)
        tree.files[rel]["obj"] = tree.files[rel]["obj"].was
        return "mend %s" % rel
    if kind in ("hierarchy", "break_config"):
        if not configs:
            return "nothing"
        rel = rnd.choice(configs)
        f = tree.files[rel]
        if kind == "break_config":
            f["obj"] = Broken(rnd.choice(["version: 5\nhierarchy: [\n", "version: 6\n", "---\nversion: 5\nhierarchy: 7\n"]),
                              was=f["obj"])
            return "break %s" % rel
        cfg = f["obj"]
        levels = cfg["hierarchy"]
        op = rnd.choice(["swap", "drop", "add", "path"])
        base = os.path.dirname(rel)
        datadir = (base + "/" if base else "") + "data"
        if op == "swap" and len(levels) > 1:
            i, j = rnd.sample(range(len(levels)), 2)
            levels[i], levels[j] = levels[j], levels[i]
            return "swap levels %d and %d of %s" % (i, j, rel)
        if op == "drop" and len(levels) > 1:
            i = rnd.randrange(len(levels))
            del levels[i]
            return "drop level %d of %s" % (i, rel)
        if op == "path":
            i = rnd.randrange(len(levels))
            lv = new_level(rnd, 10 + rnd.randrange(5))
            lv["name"] = levels[i]["name"]
            levels[i] = lv
            add_level_files(tree, g, datadir, lv, f["module"], list(tree.facts.values()), prob=0.7)
            return "replace level %d of %s" % (i, rel)
        lv = new_level(rnd, 20 + rnd.randrange(5))
        levels.insert(rnd.randrange(len(levels) + 1), lv)
        add_level_files(tree, g, datadir, lv, f["module"], list(tree.facts.values()), prob=0.8)
        return "add a level to %s" % rel
    if kind == "add_file":
        # a file a level can name but that is not there yet (a node file, a glob's file, a zone)
        candidates = []
        for rel, f in tree.files.items():
            if f["kind"] != "config" or not isinstance(f["obj"], dict):
                continue
            base = os.path.dirname(rel)
            datadir = (base + "/" if base else "") + "data"
            for lv in f["obj"]["hierarchy"]:
                names = level_files(lv, list(tree.facts.values()))
                if "glob" in lv:
                    names.append(lv["glob"].split("/")[0] + "/c.yaml")
                for n in names:
                    if datadir + "/" + n not in tree.files:
                        candidates.append((datadir + "/" + n, fmt_of(lv, n), f["module"]))
        if not candidates:
            return "nothing"
        path, fmt, module = rnd.choice(sorted(candidates))
        tree.files[path] = {"kind": "data", "fmt": fmt, "obj": g.data(module), "module": module}
        return "add %s" % path
    rel = rnd.choice(data)
    f = tree.files[rel]
    d = f["obj"]
    module = f["module"]
    keys = [k for k in d if k != "lookup_options"]
    if kind == "del_file":
        del tree.files[rel]
        return "remove %s" % rel
    if kind == "break_data":
        f["obj"] = Broken(rnd.choice(["key: [unclosed\n", "a: b: c\n", "{\"x\": \n"]), was=d)
        return "break %s" % rel
    if kind == "value" and keys:
        k = rnd.choice(keys)
        d[k] = g.value()
        return "set %s in %s" % (k, rel)
    if kind == "deep" and keys:
        k = rnd.choice(keys)
        paths = [p for p in _leaf_paths(d[k]) if p]
        if paths:
            p = rnd.choice(paths)
            cur = d[k]
            for seg in p[:-1]:
                cur = cur[seg]
            cur[p[-1]] = g.scalar()
            return "set %s.%s in %s" % (k, ".".join(map(str, p)), rel)
        d[k] = g.value()
        return "set %s in %s" % (k, rel)
    if kind == "del_key" and keys:
        k = rnd.choice(keys)
        del d[k]
        return "remove %s from %s" % (k, rel)
    if kind == "lookup_options":
        lo = d.get("lookup_options")
        if not isinstance(lo, dict) or not lo or rnd.random() < 0.3:
            d["lookup_options"] = g.lookup_options(module)
            return "new lookup_options in %s" % rel
        name = rnd.choice(list(lo))
        op = rnd.random()
        if op < 0.4:
            lo[name] = g.option_entry()
            return "lookup_options %s in %s" % (name, rel)
        if op < 0.6:
            del lo[name]
            return "remove lookup_options %s from %s" % (name, rel)
        if op < 0.8:
            lo[g.option_name(module)] = g.option_entry()
            return "add lookup_options entry in %s" % rel
        items = list(lo.items())
        rnd.shuffle(items)
        d["lookup_options"] = dict(items)
        return "reorder lookup_options in %s" % rel
    if kind == "interpolate":
        k = rnd.choice(g.pool(module))
        target = rnd.choice(KEYS)
        d[k] = rnd.choice(["%{lookup('" + target + "')}", "%{alias('" + target + "')}", "x-%{hiera('" + target + "')}",
                           ["%{lookup('" + target + "')}", "z"], {"a": "%{alias('" + target + "')}"}])
        return "%s interpolates %s in %s" % (k, target, rel)
    # add_key (and kinds that found nothing to change)
    pool = [k for k in g.pool(module) if k not in d]
    if not pool:
        k = rnd.choice(g.pool(module))
        d[k] = g.value()
        return "set %s in %s" % (k, rel)
    k = rnd.choice(pool)
    d[k] = g.value()
    return "add %s to %s" % (k, rel)


def maybe_break(tree, rnd):
    """Breaks a data file of a base tree now and then, so that edits can mend it."""
    data = [rel for rel in tree.data_files() if isinstance(tree.files[rel]["obj"], dict)]
    if data and rnd.random() < 0.15:
        rel = rnd.choice(data)
        tree.files[rel]["obj"] = Broken("key: [unclosed\n", was=tree.files[rel]["obj"])


# ------------------------------------------------------------------ serialisation (recorded cases)

def to_json(tree):
    files = {}
    for rel, f in tree.files.items():
        o = f["obj"]
        obj = {"broken": o.text, "was": o.was} if isinstance(o, Broken) else o
        files[rel] = {"kind": f["kind"], "fmt": f["fmt"], "module": f["module"], "obj": obj,
                      "is_broken": isinstance(o, Broken)}
    return {"files": files, "facts": tree.facts}


def from_json(d):
    t = Tree()
    for rel, f in d["files"].items():
        obj = f["obj"]
        if f.get("is_broken"):
            obj = Broken(obj["broken"], obj.get("was"))
        t.files[rel] = {"kind": f["kind"], "fmt": f["fmt"], "module": f["module"], "obj": obj}
    t.facts = d["facts"]
    return t
