#!/usr/bin/env python3
"""Generates a synthetic Puppet control repository for the benchmarks (bench/run.sh) and for the
batch test (tests/batch/check.sh). Deterministic for a given --seed.

usage: gen-repo.py --out DIR [--nodes 2000] [--keys 2000] [--batch-keys 200] [--seed 1] [--classes]

What it writes under DIR:
  hiera.yaml, global-data/          the global layer (2 levels)
  environments/production/hiera.yaml and data/
                                    the environment layer, 8 levels:
                                      nodes/%{trusted.certname}.yaml          path
                                      services/%{service}.yaml                mapped_paths over facts.services
                                      role/%{facts.role}/%{facts.tier}.yaml    path, two facts
                                      role/%{facts.role}.yaml                  path
                                      dc/%{facts.datacenter}/*.yaml            glob
                                      os/%{facts.os.family}/%{facts.os.release.major}.yaml,
                                      os/%{facts.os.family}.yaml               paths, nested facts
                                      stage/%{facts.stage}.json                json_data
                                      common.yaml
  environments/production/modules/profile/   a module layer (3 levels) with its own lookup_options
  facts/<certname>.yaml             one facts file per node (30 top-level facts, nested ones included)
  keys-all.txt                      every key name (--keys of them)
  keys-batch.txt                    --batch-keys keys spread over all kinds (merged ones included)
  bench.json                        {"node": a node, "merged_key": a deep-merged key present on
                                     every level, ...} for the one-shot comparisons
  with --classes (for `hiera check`, bench/check.sh): classes `site` (in the environment's
  modules) and `profile` whose parameters are the keys, typed by kind (String, Variant[Numeric,
  Boolean], Array[String], hashes), each with a default, and manifests/site.pp including both

Keys are named by kind: <ns>::str_N (strings, some interpolating facts, trusted, lookup()),
<ns>::num_N (integers, floats, booleans), <ns>::list_N (arrays, merged unique by a lookup_options
regexp), <ns>::hash_N (hashes, merged hash), <ns>::deep_N (nested hashes, deep merge with a
knock-out prefix) and <ns>::alias_N (%{alias()} of another key), with ns "site" (environment and
global data) and "profile" (module data; some also overridden in the environment).
"""
import argparse
import json
import os
import random
import re

ROLES = ["web", "db", "cache", "queue", "search", "proxy", "mail", "monitor", "build", "storage"]
TIERS = ["front", "middle", "back"]
DCS = ["ams1", "fra2", "nyc3", "sfo1"]
OS = {"Debian": ["10", "11", "12"], "RedHat": ["7", "8", "9"], "Suse": ["12", "15"]}
SERVICES = ["ntp", "dns", "ssh", "syslog", "backup", "metrics", "logs", "vpn", "ldap", "nfs", "smtp", "cron"]
STAGES = ["dev", "test", "prod"]
KINDS = ["str", "str", "str", "num", "list", "list", "hash", "hash", "deep", "alias"]
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
         "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_:./-]*$")
RESERVED = {"y", "n", "yes", "no", "true", "false", "on", "off", "null"}


def yq(s):
    """A YAML scalar for a string: plain when that reads back as the same string, else
    double-quoted (JSON strings are valid YAML)."""
    if PLAIN.match(s) and s.lower() not in RESERVED and not s.endswith(":"):
        return s
    return json.dumps(s)


def to_yaml(obj, indent=0):
    """A small block-style YAML writer for str/int/float/bool/None/list/dict (keys are strings)."""
    pad = "  " * indent
    out = []
    if isinstance(obj, dict):
        if not obj:
            return pad + "{}\n"
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                out.append("%s%s:\n%s" % (pad, yq(k), to_yaml(v, indent + 1)))
            else:
                out.append("%s%s: %s\n" % (pad, yq(k), scalar(v)))
        return "".join(out)
    if isinstance(obj, list):
        if not obj:
            return pad + "[]\n"
        for v in obj:
            if isinstance(v, (dict, list)) and v:
                body = to_yaml(v, indent + 1)
                out.append("%s-\n%s" % (pad, body))
            else:
                out.append("%s- %s\n" % (pad, scalar(v)))
        return "".join(out)
    return pad + scalar(obj) + "\n"


def scalar(v):
    if v is None:
        return "~"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return yq(v)


class Gen:
    def __init__(self, args):
        self.r = random.Random(args.seed)
        self.args = args
        n_profile = max(1, args.keys * 15 // 100)
        self.site_keys = ["site::%s_%04d" % (KINDS[i % len(KINDS)], i) for i in range(args.keys - n_profile)]
        self.profile_keys = ["profile::%s_%04d" % (KINDS[i % len(KINDS)], i) for i in range(n_profile)]
        # plain strings that other values may interpolate with lookup()/alias() (never themselves
        # interpolating, so there is no recursion)
        self.plain = [k for k in self.site_keys if "::str_" in k][:50]
        self.merged_key = next(k for k in self.site_keys if "::deep_" in k)

    def kind(self, key):
        return key.split("::", 1)[1].split("_", 1)[0]

    def word(self):
        return self.r.choice(WORDS)

    def string(self, key):
        r = self.r
        c = r.randrange(10)
        if key in self.plain or c < 5:
            return "%s-%s-%d" % (self.word(), self.word(), r.randrange(1000))
        if c == 5:
            return "%{facts.hostname}." + self.word()
        if c == 6:
            return "https://%{trusted.certname}:%{facts.networking.port}/" + self.word()
        if c == 7:
            return "%{facts.os.family}-%{facts.os.release.major}/" + self.word()
        if c == 8:
            return "svc-%{lookup('" + r.choice(self.plain) + "')}"
        return "%{facts.role}/%{facts.tier}@%{::datacenter}"

    def value(self, key, level):
        """A value of the key's kind; level is a short name for where it is defined."""
        r = self.r
        k = self.kind(key)
        if k == "str":
            return self.string(key)
        if k == "num":
            return r.choice([r.randrange(100000), round(r.random() * 100, 3), r.random() < 0.5])
        if k == "list":
            items = ["%s-%s" % (level, self.word()) for _ in range(r.randrange(1, 5))]
            if r.random() < 0.2:
                items.append("%{facts.hostname}")
            return items
        if k == "hash":
            return {"%s_%d" % (self.word(), r.randrange(5)): self.scalar_for(level) for _ in range(r.randrange(1, 5))}
        if k == "deep":
            h = {}
            for _ in range(r.randrange(1, 4)):
                sub = {self.word(): self.scalar_for(level) for _ in range(r.randrange(1, 4))}
                if r.random() < 0.3:
                    sub["members"] = ["%s-%s" % (level, self.word()) for _ in range(r.randrange(1, 3))]
                h[self.word()] = sub
            if r.random() < 0.15:
                h["--" + self.word()] = None  # a knock-out of an entry from a lower level
            return h
        # alias: the whole value is another key's value, type preserved
        return "%{alias('" + r.choice(self.plain) + "')}"

    def scalar_for(self, level):
        r = self.r
        c = r.randrange(6)
        if c == 0:
            return r.randrange(1000)
        if c == 1:
            return r.random() < 0.5
        if c == 2:
            return "%{facts.datacenter}-" + level
        return "%s-%s" % (level, self.word())

    def data(self, keys, frac, level, force=()):
        """Values for a random part (frac) of keys, plus the forced ones."""
        d = {}
        for k in keys:
            if k in force or self.r.random() < frac:
                d[k] = self.value(k, level)
        return d


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def hiera_yaml(hierarchy, datadir="data", extra=None):
    cfg = {"version": 5, "defaults": {"datadir": datadir, "data_hash": "yaml_data"}, "hierarchy": hierarchy}
    if extra:
        cfg.update(extra)
    return to_yaml(cfg)


def facts_for(i, r):
    dc = DCS[i % len(DCS)]
    family = list(OS)[(i // 7) % len(OS)]
    major = OS[family][(i // 3) % len(OS[family])]
    host = "node%04d" % i
    domain = "%s.example.com" % dc
    fqdn = "%s.%s" % (host, domain)
    role = ROLES[(i * 7) % len(ROLES)]
    return {
        "hostname": host, "domain": domain, "fqdn": fqdn, "clientcert": fqdn,
        "role": role, "tier": TIERS[i % len(TIERS)], "datacenter": dc, "stage": STAGES[(i // 5) % len(STAGES)],
        "services": r.sample(SERVICES, r.randrange(0, 4)),
        "os": {"family": family, "name": {"Debian": "Debian", "RedHat": "CentOS", "Suse": "SLES"}[family],
               "release": {"major": major, "full": "%s.%d" % (major, r.randrange(10))},
               "architecture": "amd64", "hardware": "x86_64"},
        "kernel": "Linux", "kernelversion": "5.10.%d" % r.randrange(200), "kernelrelease": "5.10.0-%d-amd64" % r.randrange(30),
        "architecture": "amd64", "virtual": r.choice(["kvm", "physical", "vmware"]), "is_virtual": r.random() < 0.8,
        "processors": {"count": r.choice([2, 4, 8, 16]), "physicalcount": 1, "models": ["Intel Xeon"] * 2},
        "memory": {"system": {"total": "%d GiB" % r.choice([4, 8, 16, 64]), "total_bytes": r.choice([4, 8, 16, 64]) << 30}},
        "networking": {"hostname": host, "domain": domain, "fqdn": fqdn, "ip": "10.%d.%d.%d" % (i % 4, i // 256 % 256, i % 256),
                       "mac": "52:54:00:%02x:%02x:%02x" % (i % 256, i // 256 % 256, r.randrange(256)), "mtu": 1500,
                       "port": 8000 + i % 100,
                       "interfaces": {"eth0": {"ip": "10.%d.%d.%d" % (i % 4, i // 256 % 256, i % 256), "mtu": 1500},
                                      "lo": {"ip": "127.0.0.1", "mtu": 65536}}},
        "timezone": "UTC", "uptime_days": r.randrange(400), "puppetversion": "7.23.0", "rubyversion": "3.1.2",
        "facterversion": "4.2.14", "path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ssh": {"rsa": {"fingerprints": {"sha256": "SSHFP 1 2 %064x" % r.getrandbits(256)}}},
        "disks": {"sda": {"size": "%d GiB" % r.choice([20, 50, 100]), "model": "QEMU HARDDISK"}},
        "mountpoints": {"/": {"device": "/dev/sda1", "filesystem": "ext4"}},
        "serialnumber": "%016x" % r.getrandbits(64), "uuid": "%032x" % r.getrandbits(128),
    }


PARAM_TYPES = {
    "str": "String",
    "num": "Variant[Numeric, Boolean]",
    "list": "Array[String]",
    "hash": "Hash[String, Variant[String, Integer, Boolean]]",
    "deep": "Hash[String, Optional[Hash[String, Variant[Scalar, Array[String]]]]]",
    "alias": "String",
}


def class_text(name, keys):
    """A class whose parameters are the keys (ns::kind_N), typed by kind, each with a default."""
    lines = ["class %s (" % name]
    for k in keys:
        kind = k.split("::", 1)[1].split("_", 1)[0]
        lines.append("  Optional[%s] $%s = undef," % (PARAM_TYPES[kind], k.split("::", 1)[1]))
    lines.append(") {\n}\n")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--batch-keys", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--classes", action="store_true", help="typed classes for the keys (hiera check)")
    args = ap.parse_args()
    if args.keys < 20:
        ap.error("--keys must be at least 20")
    root = os.path.abspath(args.out)
    g = Gen(args)
    r = g.r
    env = "environments/production"
    site, prof, mk = g.site_keys, g.profile_keys, g.merged_key
    force = (mk,)

    # ---- global layer
    write(root, "hiera.yaml", hiera_yaml([
        {"name": "Global per datacenter", "path": "dc/%{facts.datacenter}.yaml"},
        {"name": "Global common", "path": "common.yaml"},
    ], datadir="global-data"))
    for dc in DCS:
        write(root, "global-data/dc/%s.yaml" % dc, to_yaml(g.data(site, 0.02, "gdc-" + dc, force)) )
    write(root, "global-data/common.yaml", to_yaml(g.data(site, 0.05, "global", force)))

    # ---- environment layer
    write(root, env + "/hiera.yaml", hiera_yaml([
        {"name": "Per node", "path": "nodes/%{trusted.certname}.yaml"},
        {"name": "Per service", "mapped_paths": ["facts.services", "service", "services/%{service}.yaml"]},
        {"name": "Per role and tier", "path": "role/%{facts.role}/%{facts.tier}.yaml"},
        {"name": "Per role", "path": "role/%{facts.role}.yaml"},
        {"name": "Per datacenter", "glob": "dc/%{facts.datacenter}/*.yaml"},
        {"name": "Per OS", "paths": ["os/%{facts.os.family}/%{facts.os.release.major}.yaml", "os/%{facts.os.family}.yaml"]},
        {"name": "Per stage", "path": "stage/%{facts.stage}.json", "data_hash": "json_data"},
        {"name": "Common", "path": "common.yaml"},
    ]))
    d = "%s/data/" % env
    env_keys = site + prof[: len(prof) // 3]  # some module keys are overridden by the environment
    common = {"lookup_options": {
        "^site::list_": {"merge": "unique"},
        "^site::hash_": {"merge": "hash"},
        "^site::deep_": {"merge": {"strategy": "deep", "knockout_prefix": "--", "merge_hash_arrays": True}},
        "^profile::(list|hash)_": {"merge": "unique"},
        site[3]: {"merge": "first"},
    }}
    common.update(g.data(site, 0.7, "common", force + tuple(g.plain)))
    write(root, d + "common.yaml", to_yaml(common))
    for stage in STAGES:
        write(root, d + "stage/%s.json" % stage, json.dumps(g.data(env_keys, 0.03, "stage-" + stage, force), indent=1))
    for fam, majors in OS.items():
        write(root, d + "os/%s.yaml" % fam, to_yaml(g.data(env_keys, 0.04, "os-" + fam, force)))
        for m in majors:
            write(root, d + "os/%s/%s.yaml" % (fam, m), to_yaml(g.data(env_keys, 0.02, "os-%s%s" % (fam, m), force)))
    for dc in DCS:
        for part in ["network", "security", "storage"]:
            write(root, d + "dc/%s/%s.yaml" % (dc, part), to_yaml(g.data(env_keys, 0.015, "%s-%s" % (dc, part), force)))
    for role in ROLES:
        data = g.data(env_keys, 0.06, "role-" + role, force)
        if role in ("web", "db"):
            data["lookup_options"] = {"^site::num_": {"merge": "first"}}
        write(root, d + "role/%s.yaml" % role, to_yaml(data))
        for tier in TIERS:
            write(root, d + "role/%s/%s.yaml" % (role, tier), to_yaml(g.data(env_keys, 0.02, "%s-%s" % (role, tier), force)))
    for svc in SERVICES:
        write(root, d + "services/%s.yaml" % svc, to_yaml(g.data(env_keys, 0.02, "svc-" + svc, force)))

    # ---- module layer: profile
    mod = env + "/modules/profile/"
    write(root, mod + "hiera.yaml", hiera_yaml([
        {"name": "Module per role", "path": "role/%{facts.role}.yaml"},
        {"name": "Module per OS", "path": "os/%{facts.os.family}.yaml"},
        {"name": "Module common", "path": "common.yaml"},
    ]))
    mcommon = {"lookup_options": {"^profile::deep_": {"merge": "deep"}, "^profile::hash_": {"merge": "hash"}}}
    mcommon.update(g.data(prof, 0.9, "mod-common"))
    write(root, mod + "data/common.yaml", to_yaml(mcommon))
    for role in ROLES:
        write(root, mod + "data/role/%s.yaml" % role, to_yaml(g.data(prof, 0.08, "mod-" + role)))
    for fam in OS:
        write(root, mod + "data/os/%s.yaml" % fam, to_yaml(g.data(prof, 0.05, "mod-" + fam)))
    if args.classes:
        write(root, mod + "manifests/init.pp", class_text("profile", prof))
        write(root, env + "/modules/site/manifests/init.pp", class_text("site", site))
        write(root, env + "/manifests/site.pp", "include site\ninclude profile\n")
    else:
        write(root, mod + "manifests/init.pp", "class profile {}\n")

    # ---- nodes: facts for each, node data for one in three
    node0 = None
    for i in range(args.nodes):
        f = facts_for(i, r)
        if node0 is None and i % 3 == 0 and len(f["services"]) >= 2:
            node0 = f["clientcert"]  # the one-shot node: every kind of level applies to it
        write(root, "facts/%s.yaml" % f["clientcert"], "---\n" + to_yaml(f))
        if i % 3 == 0:
            write(root, d + "nodes/%s.yaml" % f["clientcert"], to_yaml(g.data(env_keys, 0.004, "node", force)))

    # ---- key lists and the one-shot parameters
    all_keys = site + prof
    write(root, "keys-all.txt", "# every key of the generated repository\n" + "\n".join(all_keys) + "\n")
    nb = min(args.batch_keys, len(all_keys))
    step = len(all_keys) / nb
    # evenly spaced, each moved to the next key of the i-th kind in turn (keys are named in a
    # cycle of KINDS, so plain spacing would pick one kind only)
    batch = []
    for i in range(nb):
        idx = int(i * step)
        want = KINDS[i % len(KINDS)]
        j = idx
        while j < len(all_keys) and (g.kind(all_keys[j]) != want or all_keys[j] in batch):
            j += 1
        batch.append(all_keys[j] if j < len(all_keys) else all_keys[idx])
    if mk not in batch:
        batch[0] = mk
    write(root, "keys-batch.txt", "# %d keys spread over every kind and both namespaces\n" % nb + "\n".join(batch) + "\n")
    if node0 is None:
        node0 = facts_for(0, random.Random(0))["clientcert"]
    meta = {"node": node0, "facts": "facts/%s.yaml" % node0, "merged_key": mk, "nodes": args.nodes,
            "keys": len(all_keys), "batch_keys": nb, "seed": args.seed}
    write(root, "bench.json", json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
