#!/usr/bin/env python3
"""Compares hiera with Puppet on real control repositories and modules.

Each CONTROL argument is installed as its own Puppet installation (scratch confdir with a
puppet.conf and the packaged global hiera.yaml, codedir/environments/...): every ref named becomes
an environment (the first one `production`), kept as it is in git (environment.conf, hiera.yaml,
data/, site/, site-modules/, modules/ and whatever else it ships; a Puppetfile's modules are not
downloaded). `::RELDIR=SRC[@REF]` adds another tree at RELDIR in each of its environments (psick's
hieradata module at modules/hieradata); the CONTROL `empty` makes an environment of those alone
(a repository that is itself a modules folder: `empty::modules=SRC`). --module SRC[@REF] installs
a module (named by its metadata.json) in every installation's $codedir/modules ($basemodulepath).

For each environment the script reads the hiera.yaml of the global, environment and module layers
(v5, and v3 for the global one), matches every level's path, paths, glob(s) and mapped_paths
against the data files that exist, and makes nodes whose facts make those levels resolve: OS
profiles (os.family/name/release, kernel, the legacy facts) chosen to hit the most data files,
certnames from nodes/ files, roles, zones, teams, trusted.extensions from the file names,
hostname/domain/fqdn/clientcert/networking set together, a `trusted` fact on some nodes. Every
top-level key of every data file a level can reach is asked (module keys only when namespaced
with the module's name), some dotted sub-keys, class parameters of the modules' manifests
(CLASS::PARAM, what Puppet looks up for a module that ships no data) and two absent keys, for
every node: with the
default merge, and for a sample of keys with unique, hash and deep merges. One side is `hiera
batch` (one run per environment and merge), the other Puppet's own lookup in one process per
node and merge setting (../shared/tools/puppet-bulk-lookup or --bulk). An answer that differs is
asked again of `puppet lookup --render-as json`, which decides. Value, not-found and error are
compared (for errors, that both fail; differing messages are counted, and printed with --messages).

usage: tests/tools/realrepo-compare.py --hiera build/hiera [--bulk PATH] [--nodes 12]
         [--merge-sample 120] [--param-keys 150] [--default V] [--conf LINE]... [--rechecks 40]
         [--keep DIR] [--messages] [--only REGEX] [--plan]
         (--mirrors DIR | CONTROL... [--module SRC[@REF]]...)
  CONTROL: (SRC|empty)[@REF[,REF...]][::RELDIR=SRC[@REF]]...   SRC: a checkout or a bare git dir
  --mirrors DIR: the real repositories mirrored under DIR (OWNER+NAME/repo): every control repo
                 there, psick with its hieradata and psick modules, and the modules ntp, apache,
                 stdlib, nginx, zabbix in every installation.
Needs Puppet (apt-get install puppet) and PyYAML. Prints one line per difference and a summary.
--puppet-version 8: Puppet's side is Debian 13's Puppet 8.10 (the root of ../shared/tools/puppet8,
through tests/tools/in-puppet8-root: the bulk tool and puppet lookup run there) and hiera answers
with HIERA_PUPPET_VERSION=8 (default 7: the installed Puppet).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

from puppetbulk import default_bulk

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, HIERA_CACHE_DIR="off", HIERA_PUPPET_LAYOUT="debian")

GLOBAL_HIERA = """---
version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: "Per-node data"
    path: "nodes/%{trusted.certname}.yaml"
  - name: "Other YAML hierarchy levels"
    paths:
      - "common.yaml"
"""

# family, name, major, full, kernel, kernelrelease, codename
OS_PROFILES = [
    ("RedHat", "CentOS", "7", "7.9.2009", "Linux", "3.10.0-1160.el7.x86_64", None),
    ("RedHat", "RedHat", "8", "8.9", "Linux", "4.18.0-513.el8.x86_64", None),
    ("RedHat", "RedHat", "9", "9.3", "Linux", "5.14.0-362.el9.x86_64", None),
    ("RedHat", "RedHat", "7", "7.9", "Linux", "3.10.0-1160.el7.x86_64", None),
    ("RedHat", "RedHat", "6", "6.10", "Linux", "2.6.32-754.el6.x86_64", None),
    ("RedHat", "CentOS", "6", "6.10", "Linux", "2.6.32-754.el6.x86_64", None),
    ("RedHat", "Rocky", "9", "9.3", "Linux", "5.14.0-362.el9.x86_64", None),
    ("RedHat", "Amazon", "2", "2", "Linux", "4.14.336-253.554.amzn2.x86_64", None),
    ("RedHat", "Fedora", "39", "39", "Linux", "6.5.6-300.fc39.x86_64", None),
    ("Debian", "Debian", "12", "12.5", "Linux", "6.1.0-18-amd64", "bookworm"),
    ("Debian", "Debian", "11", "11.9", "Linux", "5.10.0-28-amd64", "bullseye"),
    ("Debian", "Debian", "10", "10.13", "Linux", "4.19.0-26-amd64", "buster"),
    ("Debian", "Debian", "9", "9.13", "Linux", "4.9.0-19-amd64", "stretch"),
    ("Debian", "Debian", "8", "8.11", "Linux", "3.16.0-11-amd64", "jessie"),
    ("Debian", "Ubuntu", "22.04", "22.04", "Linux", "5.15.0-97-generic", "jammy"),
    ("Debian", "Ubuntu", "24.04", "24.04", "Linux", "6.8.0-31-generic", "noble"),
    ("Debian", "Ubuntu", "20.04", "20.04", "Linux", "5.4.0-172-generic", "focal"),
    ("Debian", "Ubuntu", "18.04", "18.04", "Linux", "4.15.0-213-generic", "bionic"),
    ("Debian", "Ubuntu", "16.04", "16.04", "Linux", "4.4.0-210-generic", "xenial"),
    ("Debian", "Devuan", "4", "4.0", "Linux", "5.10.0-28-amd64", "chimaera"),
    ("Suse", "SLES", "15", "15.5", "Linux", "5.14.21-150500.55.49-default", None),
    ("Suse", "SLES", "12", "12.5", "Linux", "4.12.14-122.183-default", None),
    ("Suse", "SLES", "10", "10.4", "Linux", "2.6.16.60-0.85.1-default", None),
    ("Suse", "OpenSuSE", "15", "15.5", "Linux", "5.14.21-150500.55.49-default", None),
    ("Archlinux", "Archlinux", "6", "6.7.4", "Linux", "6.7.4-arch1-1", None),
    ("Gentoo", "Gentoo", "2", "2.14", "Linux", "6.6.13-gentoo", None),
    ("FreeBSD", "FreeBSD", "13", "13.2-RELEASE", "FreeBSD", "13.2-RELEASE", None),
    ("Solaris", "Solaris", "11", "11.4", "SunOS", "5.11", None),
    ("Solaris", "Solaris", "10", "10_u11", "SunOS", "5.10", None),
    ("AIX", "AIX", "7", "7.2.0.0", "AIX", "7200-05-03-2148", None),
    ("Darwin", "Darwin", "21", "21.6.0", "Darwin", "21.6.0", None),
    ("windows", "windows", "2019", "2019", "windows", "10.0.17763", None),
]

OS_VARS = {
    "os.family": 0, "osfamily": 0, "os.name": 1, "operatingsystem": 1, "os.release.major": 2,
    "operatingsystemmajrelease": 2, "os.release.full": 3, "operatingsystemrelease": 3, "kernel": 4,
    "kernelrelease": 5, "os.distro.codename": 6, "lsbdistcodename": 6,
}
SKIP_VARS = {"environment", "module_name", "calling_module", "calling_class", "calling_class_path"}
NAME_VARS = {"trusted.certname": "cert", "clientcert": "cert", "certname": "cert", "fqdn": "cert",
             "networking.fqdn": "cert", "trusted.hostname": "host", "hostname": "host",
             "networking.hostname": "host", "trusted.domain": "domain", "domain": "domain",
             "networking.domain": "domain"}
MODNAME = re.compile(r"^[a-z][a-z0-9_]*$")


# ---------------------------------------------------------------- installing

def git_dir(src):
    if os.path.isdir(os.path.join(src, ".git")):
        return os.path.join(src, ".git")
    if os.path.isfile(os.path.join(src, "HEAD")) and os.path.isdir(os.path.join(src, "objects")):
        return src
    sub = os.path.join(src, "repo")
    if os.path.isdir(sub):
        return git_dir(sub)
    return None


def resolve_ref(gd, ref):
    for r in ([ref] if ref else ["production", "main", "master", "HEAD"]):
        for cand in (r, "origin/" + r, "refs/heads/" + r):
            p = subprocess.run(["git", "--git-dir", gd, "rev-parse", "--verify", "-q", cand + "^{commit}"],
                               capture_output=True, text=True)
            if p.returncode == 0:
                return cand
    raise SystemExit("realrepo-compare: no ref %s in %s" % (ref or "production/main/master/HEAD", gd))


def extract(src, ref, dest):
    os.makedirs(dest, exist_ok=True)
    gd = git_dir(src)
    if gd is None:
        if ref:
            raise SystemExit("realrepo-compare: %s is not a git repository (@%s)" % (src, ref))
        shutil.copytree(src, dest, dirs_exist_ok=True, symlinks=True)
        return
    r = resolve_ref(gd, ref)
    # blob by blob (not git archive): a mirror may lack its largest files, which are skipped
    ls = subprocess.run(["git", "--git-dir", gd, "ls-tree", "-r", "-z", r], capture_output=True, check=True).stdout
    entries = []
    for e in ls.split(b"\0"):
        if e:
            meta, path = e.split(b"\t", 1)
            mode, typ, sha = meta.split()
            if typ == b"blob":
                entries.append((mode, sha, path.decode("utf-8", "surrogateescape")))
    cat = subprocess.run(["git", "--git-dir", gd, "cat-file", "--batch"], input=b"".join(s + b"\n" for _, s, _ in entries),
                         capture_output=True, check=True).stdout
    pos = 0
    for mode, sha, path in entries:
        nl = cat.index(b"\n", pos)
        head = cat[pos:nl].split()
        pos = nl + 1
        if len(head) < 3 or head[1] != b"blob":
            continue
        size = int(head[2])
        data = cat[pos:pos + size]
        pos += size + 1
        full = os.path.join(dest, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if mode == b"120000":
            os.symlink(data.decode("utf-8", "surrogateescape"), full)
        else:
            with open(full, "wb") as f:
                f.write(data)
            if mode == b"100755":
                os.chmod(full, 0o755)


def split_src(s):
    if "@" in s.rsplit("/", 1)[-1]:
        src, ref = s.rsplit("@", 1)
        return src, ref
    return s, None


def env_name(ref, first):
    if first:
        return "production"
    n = re.sub(r"[^a-z0-9_]", "_", ref.split("/")[-1].lower())
    return n if n and n != "production" else "env_" + n


def module_name(src):
    path = os.path.join(src, "metadata.json")
    try:
        with open(path) as f:
            n = json.load(f).get("name", "")
        n = re.split(r"[-/]", n)[-1]
        if MODNAME.match(n):
            return n
    except (OSError, ValueError, AttributeError):
        pass
    base = os.path.basename(os.path.normpath(src))
    base = re.sub(r"^.*[+]", "", base)
    base = re.sub(r"^puppet(labs)?-", "", base)
    return base


def install(root, control, modules, conf=()):
    """One Puppet installation under root; returns [(env, envdir)]."""
    etc = os.path.join(root, "etc")
    code = os.path.join(root, "code")
    os.makedirs(etc, exist_ok=True)
    with open(os.path.join(etc, "puppet.conf"), "w") as f:
        f.write("[main]\ncodedir = $confdir/../code\n" + "".join(l + "\n" for l in conf))
    with open(os.path.join(etc, "hiera.yaml"), "w") as f:
        f.write(GLOBAL_HIERA)
    parts = control.split("::")
    head, extras = parts[0], parts[1:]
    src, refs = split_src(head)
    refs = refs.split(",") if refs else [None]
    envs = []
    for i, ref in enumerate(refs):
        env = env_name(ref or "production", i == 0)
        edir = os.path.join(code, "environments", env)
        if src == "empty":
            os.makedirs(edir, exist_ok=True)
        else:
            extract(src, ref, edir)
        for x in extras:
            rel, xsrc = x.split("=", 1)
            xs, xref = split_src(xsrc)
            extract(xs, xref, os.path.join(edir, rel))
        envs.append((env, edir))
    for m in modules:
        ms, mref = split_src(m)
        tmp = tempfile.mkdtemp(dir=root)
        extract(ms, mref, tmp)
        name = module_name(tmp)
        os.makedirs(os.path.join(code, "modules"), exist_ok=True)
        os.rename(tmp, os.path.join(code, "modules", name))
    return envs


# ---------------------------------------------------------------- reading hierarchies

def load_yaml(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return yaml.safe_load(f)
    except Exception:
        return None


def load_keys_doc(path):
    """Top-level string keys -> parsed value of a data file (None when unreadable)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if path.endswith(".json"):
            d = json.loads(text)
        else:
            try:
                d = yaml.safe_load(text)
            except Exception:
                d = yaml.load(text, Loader=yaml.BaseLoader)
    except Exception:
        return None
    if not isinstance(d, dict):
        return None
    return {k if isinstance(k, str) else str(k): v for k, v in d.items()}


def norm_var(v):
    v = v.strip()
    if v.startswith("::"):
        v = v[2:]
    if v.startswith("facts."):
        v = v[6:]
    elif v.startswith("$facts.") or v.startswith("$::"):
        v = v.lstrip("$:").replace("facts.", "", 1)
    return v.replace('"', "").replace("'", "")


VAR = re.compile(r"%\{([^{}]*)\}")


def template_regex(t, is_glob):
    out, names, pos = [], [], 0
    for m in VAR.finditer(t):
        lit = t[pos:m.start()]
        out.append(glob_re(lit) if is_glob else re.escape(lit))
        name = m.group(1)
        if "(" in name or name.strip() == "":
            out.append("[^/]*")
        else:
            out.append("(?P<g%d>[^/]*?)" % len(names))
            names.append(norm_var(name))
        pos = m.end()
    lit = t[pos:]
    out.append(glob_re(lit) if is_glob else re.escape(lit))
    try:
        return re.compile("^" + "".join(out) + "$"), names
    except re.error:
        return None, names


def glob_re(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if s.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
        i += 1
    return "".join(out)


class Level:
    def __init__(self, layer, datadir, template, is_glob, mapped=None):
        self.layer, self.datadir, self.template, self.mapped = layer, datadir, template, mapped
        self.regex, self.names = template_regex(template, is_glob)


def read_levels(hiera_yaml, layer, default_datadir="data"):
    base = os.path.dirname(hiera_yaml)
    doc = load_yaml(hiera_yaml) if os.path.exists(hiera_yaml) else None
    levels = []
    if not isinstance(doc, dict):
        if layer != "global":
            levels.append(Level(layer, os.path.join(base, default_datadir), "common.yaml", False))
        return levels
    if doc.get("version") == 5 or doc.get("version") == 4:
        defaults = doc.get("defaults") if isinstance(doc.get("defaults"), dict) else {}
        ddir = defaults.get("datadir", "data")
        hier = doc.get("hierarchy") if isinstance(doc.get("hierarchy"), list) else []
        if doc.get("version") == 5 and "hierarchy" not in doc and layer != "global":
            hier = [{"name": "Common", "path": "common.yaml"}]
        for lv in hier:
            if not isinstance(lv, dict):
                continue
            d = lv.get("datadir", ddir)
            if not isinstance(d, str):
                continue
            d = d if os.path.isabs(d) else os.path.join(base, d)
            ts = []
            for k in ("path", "glob"):
                if isinstance(lv.get(k), str):
                    ts.append((lv[k], k == "glob", None))
            for k in ("paths", "globs"):
                if isinstance(lv.get(k), list):
                    ts += [(p, k == "globs", None) for p in lv[k] if isinstance(p, str)]
            mp = lv.get("mapped_paths")
            if isinstance(mp, list) and len(mp) == 3 and all(isinstance(x, str) for x in mp):
                ts.append((mp[2], False, (norm_var(mp[0]), norm_var(mp[1]))))
            if not ts and not any(k in lv for k in ("uri", "uris")) and isinstance(lv.get("name"), str):
                ts.append((lv["name"], False, None))
            for t, g, mapped in ts:
                levels.append(Level(layer, d, t, g, mapped))
    elif ":hierarchy" in str(list(doc.keys())):
        hier = doc.get(":hierarchy", ["common"])
        hier = [hier] if isinstance(hier, str) else hier if isinstance(hier, list) else []
        for be in (":yaml", ":json"):
            conf = doc.get(be) if isinstance(doc.get(be), dict) else {}
            d = conf.get(":datadir", "/etc/puppetlabs/code/environments/%{environment}/hieradata")
            ext = ".yaml" if be == ":yaml" else ".json"
            for h in hier:
                if isinstance(h, str) and isinstance(d, str):
                    levels.append(Level(layer, d, h + ext, False))
    return levels


def resolve_modulepath(envdir, code, envname):
    conf = os.path.join(envdir, "environment.conf")
    mp = "modules:$basemodulepath"
    if os.path.exists(conf):
        with open(conf, errors="replace") as f:
            for line in f:
                m = re.match(r"^\s*modulepath\s*=\s*(.*?)\s*$", line)
                if m:
                    mp = m.group(1).strip("'\"")
    out = []
    for p in mp.split(":"):
        p = p.replace("$basemodulepath", os.path.join(code, "modules")).replace("$codedir", code)
        p = p.replace("$environmentpath", os.path.join(code, "environments")).replace("$environment", envname)
        if not os.path.isabs(p):
            p = os.path.join(envdir, p)
        out += sorted(glob.glob(p)) if any(c in p for c in "*?[") else [p]
    return out


def module_layers(envdir, code, envname):
    seen, mods = set(), []
    for d in resolve_modulepath(envdir, code, envname):
        if not os.path.isdir(d):
            continue
        for m in sorted(os.listdir(d)):
            md = os.path.join(d, m)
            if m in seen or not MODNAME.match(m) or not os.path.isdir(md):
                continue
            seen.add(m)
            mods.append((m, md))
    return mods


def data_files(datadir):
    out = []
    if not os.path.isdir(datadir):
        return out
    for dp, dn, fn in os.walk(datadir):
        dn[:] = [d for d in dn if not d.startswith(".")]
        for f in fn:
            if f.endswith((".yaml", ".yml", ".json", ".eyaml")):
                out.append(os.path.relpath(os.path.join(dp, f), datadir))
    return sorted(out)


# ---------------------------------------------------------------- nodes

def set_path(d, path, value):
    parts = path.split(".")
    for p in parts[:-1]:
        if not isinstance(d.get(p), dict):
            d[p] = {}
        d = d[p]
    d[parts[-1]] = value


def os_value(prof, idx):
    return prof[idx]


def make_facts(i, prof, names, assigned, with_trusted, env):
    fam, osname, major, full, kernel, krel, codename = prof
    cert = names.get("cert")
    host = names.get("host")
    dom = names.get("domain")
    if cert:
        host = host or cert.split(".")[0]
        dom = dom or (cert.split(".", 1)[1] if "." in cert else "example.com")
    else:
        host = host or "node%02d" % i
        dom = dom or "example.com"
        cert = host + "." + dom
    fqdn = cert if "." in cert else host + "." + dom
    ip = "10.%d.%d.%d" % (i // 200 + 1, i % 200 + 1, 10 + i)
    mac = "52:54:00:12:%02x:%02x" % (i // 256, i % 256)
    release = {"major": major, "full": full}
    if "." in full and fam != "windows":
        release["minor"] = full.split(".")[1].split("-")[0]
    osf = {"family": fam, "name": osname, "release": release, "architecture": "amd64" if fam == "Debian" else "x86_64",
           "hardware": "x86_64"}
    if codename:
        osf["distro"] = {"codename": codename, "id": osname, "release": release}
    facts = {
        "clientcert": cert, "fqdn": fqdn, "hostname": host, "domain": dom,
        "networking": {"hostname": host, "domain": dom, "fqdn": fqdn, "ip": ip, "mac": mac, "primary": "eth0",
                       "netmask": "255.255.0.0", "network": "10.%d.0.0" % (i // 200 + 1),
                       "interfaces": {"eth0": {"ip": ip, "mac": mac, "netmask": "255.255.0.0", "mtu": 1500}}},
        "ipaddress": ip, "macaddress": mac, "os": osf, "osfamily": fam, "operatingsystem": osname,
        "operatingsystemrelease": full, "operatingsystemmajrelease": major, "kernel": kernel,
        "kernelrelease": krel, "kernelversion": krel.split("-")[0], "architecture": osf["architecture"],
        "virtual": "kvm", "is_virtual": True, "processors": {"count": 2, "physicalcount": 1},
        "memory": {"system": {"total": "3.84 GiB", "total_bytes": 4123456789}}, "timezone": "UTC",
        "path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "uptime_days": i,
        "puppetversion": "7.23.0", "facterversion": "4.5.2",
    }
    if codename:
        facts["lsbdistcodename"] = codename
    ext = {}
    for var, val in assigned.items():
        if var.startswith("trusted.extensions."):
            ext[var[len("trusted.extensions."):]] = val
        elif var.startswith("trusted."):
            continue
        else:
            set_path(facts, var, val)
    if with_trusted or ext:
        facts["trusted"] = {"authenticated": "remote", "certname": cert, "hostname": cert.split(".")[0],
                            "domain": cert.split(".", 1)[1] if "." in cert else None,
                            "extensions": ext, "external": {}}
    return cert, facts


def plan_nodes(levels, files_of, nodes_max, envname):
    """Nodes (name -> facts) whose facts hit the levels' data files."""
    # OS profiles: greedy cover of the files reachable through OS variables
    cover = []
    os_levels = [lv for lv in levels if lv.regex and any(n in OS_VARS for n in lv.names)]
    for prof in OS_PROFILES:
        hit = set()
        for lv in os_levels:
            for f in files_of(lv):
                m = lv.regex.match(f)
                if m and all(m.group("g%d" % j) == prof[OS_VARS[n]] for j, n in enumerate(lv.names) if n in OS_VARS):
                    hit.add((lv.datadir, f))
        cover.append((prof, hit))
    chosen, covered = [], set()
    while len(chosen) < max(3, nodes_max // 2):
        best = max(cover, key=lambda c: len(c[1] - covered))
        if not best[1] - covered:
            break
        chosen.append(best[0])
        covered |= best[1]
    for p in (OS_PROFILES[0], OS_PROFILES[14], OS_PROFILES[9]):
        if len(chosen) < 3 and p not in chosen:
            chosen.append(p)
    # other variables: one assignment list per level
    lists = []
    for lv in levels:
        if not lv.regex or not lv.names:
            continue
        seen, lst = set(), []
        for f in files_of(lv):
            m = lv.regex.match(f)
            if not m:
                continue
            a = {}
            for j, n in enumerate(lv.names):
                a.setdefault(n, m.group("g%d" % j))
            if lv.mapped and lv.mapped[1] in a:
                a[lv.mapped[0]] = [a.pop(lv.mapped[1])]
            key = json.dumps(a, sort_keys=True)
            if key not in seen:
                seen.add(key)
                lst.append(a)
        if lst:
            lists.append(lst)
    n = min(nodes_max, max([len(chosen)] + [len(l) for l in lists]) + 1)
    n = max(n, 3)
    used = [0] * len(lists)
    nodes = {}
    for i in range(n):
        prof = chosen[i % len(chosen)]
        assigned, names = {}, {}
        bare = i == n - 1
        for li, lst in enumerate(lists):
            if bare:
                break
            for t in range(len(lst)):
                a = lst[(used[li] + t) % len(lst)]
                ok = True
                for var, val in a.items():
                    if var in SKIP_VARS:
                        ok = ok and (var != "environment" or val == envname)
                    elif var in OS_VARS:
                        ok = ok and prof[OS_VARS[var]] == val
                    elif var in NAME_VARS:
                        ok = ok and names.get(NAME_VARS[var], val) == val
                    elif var in assigned:
                        ok = ok and assigned[var] == val
                if ok:
                    for var, val in a.items():
                        if var in NAME_VARS:
                            names[NAME_VARS[var]] = val
                        elif var not in SKIP_VARS and var not in OS_VARS and not var.startswith("server_facts"):
                            assigned[var] = val
                    used[li] = (used[li] + t + 1) % len(lst)
                    break
        cert, facts = make_facts(i, prof, names, assigned, i % 2 == 1, envname)
        if cert in nodes or not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", cert):
            cert, facts = make_facts(i, prof, {}, assigned, i % 2 == 1, envname)
        nodes[cert] = facts
    return nodes


CLASS = re.compile(r"^\s*class\s+([a-z][a-z0-9_:]*)\s*\(", re.M)


def class_params(md, limit):
    """Automatic parameter lookup keys (CLASS::PARAM) of a module's manifests, at most limit."""
    out = []
    for dp, dn, fn in sorted(os.walk(os.path.join(md, "manifests"))):
        dn.sort()
        for f in sorted(fn):
            if not f.endswith(".pp"):
                continue
            try:
                with open(os.path.join(dp, f), errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            for m in CLASS.finditer(text):
                depth, i = 1, m.end()
                while i < len(text) and depth:
                    depth += {"(": 1, ")": -1}.get(text[i], 0)
                    i += 1
                for p in re.findall(r"(?:^|[,(\]>A-Za-z0-9_])\s*\$([a-z_][a-z0-9_]*)\s*(?:=|,|\)|$)",
                                   text[m.end() - 1:i], re.M):
                    out.append(m.group(1) + "::" + p)
                    if len(out) >= limit:
                        return out
    return out


def env_questions(root, env, envdir, merge_sample, param_keys=0):
    code = os.path.join(root, "code")
    levels = read_levels(os.path.join(root, "etc", "hiera.yaml"), "global")
    levels += read_levels(os.path.join(envdir, "hiera.yaml"), "env")
    mods = module_layers(envdir, code, env)
    for m, md in mods:
        if os.path.exists(os.path.join(md, "hiera.yaml")) or os.path.isdir(os.path.join(md, "data")):
            levels += read_levels(os.path.join(md, "hiera.yaml"), "module:" + m)
    cache = {}

    def files_of(lv):
        if lv.datadir not in cache:
            cache[lv.datadir] = data_files(lv.datadir)
        return cache[lv.datadir]

    keys, values = [], {}
    for lv in levels:
        if not lv.regex:
            continue
        for f in files_of(lv):
            if not lv.regex.match(f):
                continue
            doc = load_keys_doc(os.path.join(lv.datadir, f))
            for k, v in (doc or {}).items():
                if k == "lookup_options" or "\n" in k or k.strip() != k or k.startswith("#") or not k:
                    continue
                if lv.layer.startswith("module:") and not k.startswith(lv.layer[7:] + "::"):
                    continue
                if k not in values:
                    keys.append(k)
                    values[k] = v
    sub = []
    for k in keys:
        v = values[k]
        if isinstance(v, dict):
            # one sub-key a key: Puppet's knockout_prefix deletes from its cached copy of the data
            # (see puppet-bulk-lookup), so a key is asked once with lookup_options per process
            for s in [s for s in v if isinstance(s, str) and re.match(r"^[A-Za-z0-9_:-]+$", s)][:1]:
                sub.append(k + "." + s)
        elif isinstance(v, list) and v:
            sub.append(k + ".0")
    params = []
    if param_keys:
        # the class parameters Puppet looks up for modules: their own data, the environment's or none
        per = [class_params(md, param_keys) for m, md in mods]
        while len(params) < param_keys and any(per):
            for lst in per:
                if lst:
                    params.append(lst.pop(0))
    allkeys = keys + params[:param_keys] + ["realrepo_compare::absent", "absent_top_level_key"]
    seen = set()
    allkeys = [k for k in allkeys if not (k in seen or seen.add(k))]
    sub = [k for k in sub[:max(20, len(keys) // 4)] if k not in seen]
    coll = [k for k in keys if isinstance(values[k], (dict, list))]
    scal = [k for k in keys if not isinstance(values[k], (dict, list))]
    sample = (coll + scal[:max(10, merge_sample // 4)])[:merge_sample] + ["realrepo_compare::absent"]
    return levels, files_of, allkeys, sub, sample


# ---------------------------------------------------------------- comparing

def same(a, b):
    if type(a) != type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def ours(doc, node, key):
    errs = doc.get(".errors", {})
    e = errs.get(node)
    if isinstance(e, str):
        return {"error": True, "message": e}
    if isinstance(e, dict) and key in e:
        return {"error": True, "message": e[key]}
    got = doc.get(node, {})
    if key in got:
        return {"value": got[key]}
    return {"not_found": True}


def kind(ans):
    return "value" if "value" in ans else "error" if ans.get("error") else "not_found"


def agree(p, h):
    if kind(p) != kind(h):
        return False
    return kind(p) != "value" or same(p["value"], h["value"])


def merge_flags(m, default):
    if m == "default":
        return ["--default", default]
    return ["--merge", m] if m else []


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--bulk")
    ap.add_argument("--nodes", type=int, default=12, help="most nodes per environment")
    ap.add_argument("--merge-sample", type=int, default=120, help="keys asked with unique/hash/deep per environment")
    ap.add_argument("--keep")
    ap.add_argument("--rechecks", type=int, default=40, help="most differences per node asked again of puppet lookup")
    ap.add_argument("--param-keys", type=int, default=150,
                    help="also ask this many class parameters (CLASS::PARAM) of the modules' manifests per environment")
    ap.add_argument("--default", help="also ask the merge-sample keys with this --default (a string)")
    ap.add_argument("--conf", action="append", default=[], help="a line for puppet.conf (after [main] codedir)")
    ap.add_argument("--plan", action="store_true", help="only print the environments, nodes and keys")
    ap.add_argument("--messages", action="store_true", help="print error-message differences too")
    ap.add_argument("--only", help="installations whose CONTROL matches this regex")
    ap.add_argument("--mirrors")
    ap.add_argument("--module", action="append", default=[])
    ap.add_argument("--puppet-version", type=int, choices=(7, 8), default=7)
    ap.add_argument("control", nargs="*")
    a = ap.parse_args()
    if not a.bulk:
        a.bulk = default_bulk(HERE)
    ENV["HIERA_PUPPET_VERSION"] = str(a.puppet_version)
    prefix = [os.path.join(HERE, "in-puppet8-root")] if a.puppet_version == 8 else []
    controls, modules = list(a.control), list(a.module)
    if a.mirrors:
        M = lambda n: os.path.join(a.mirrors, n, "repo")
        controls += [
            M("puppetlabs+control-repo") + "@production",
            M("puppetlabs-seteam+control-repo") + "@production,development",
            M("Enucatl+puppet-control-repo") + "@production,dev",
            M("joeypiccola+control-repo") + "@production,demo",
            M("kscherer+control-repo") + "@production",
            M("mergwyn+control-repo") + "@production,dnsvip",
            M("nyudlts+puppet-control-repo") + "@master,development",
            M("example42+psick") + "@production::modules/hieradata=" + M("example42+psick-hieradata") +
            "@production::modules/psick=" + M("example42+puppet-psick") + "@master",
            "empty::modules=" + M("greynolds123+control-repo") + "@master",
            "empty::modules=" + M("greynolds123+control-repo") + "@production",
        ]
        modules += [M(n) for n in ("puppetlabs+puppetlabs-ntp", "puppetlabs+puppetlabs-apache",
                                   "puppetlabs+puppetlabs-stdlib", "voxpupuli+puppet-nginx", "voxpupuli+puppet-zabbix")]
    if not controls:
        ap.error("give CONTROL repositories or --mirrors DIR")
    hiera = os.path.abspath(a.hiera)
    total = failed = msgdiff = bulk_wrong = 0
    kinds = {}
    per = []
    for ci, control in enumerate(controls):
        if a.only and not re.search(a.only, control):
            continue
        root = tempfile.mkdtemp(prefix="hiera-rr-")
        envs = install(root, control, modules, a.conf)
        first = control.split("::")[1].split("=", 1)[1] if control.startswith("empty::") else control.split("::")[0]
        fsrc, fref = split_src(first)
        label = os.path.basename(re.sub(r"/repo$", "", fsrc.rstrip("/"))) + "@" + (fref or "HEAD")
        c_total = c_failed = 0
        for env, envdir in envs:
            levels, files_of, keys, sub, sample = env_questions(root, env, envdir, a.merge_sample, a.param_keys)
            nodes = plan_nodes(levels, files_of, a.nodes, env)
            fdir = os.path.join(root, "facts", env)
            os.makedirs(fdir, exist_ok=True)
            for name, facts in nodes.items():
                with open(os.path.join(fdir, name + ".json"), "w") as f:
                    json.dump(facts, f, indent=1)
            if a.plan:
                print("%s env %s: %d levels, %d keys, %d merge-sample keys, %d nodes:" % (label, env, len(levels), len(keys), len(sample), len(nodes)))
                for name, facts in nodes.items():
                    print("   %s %s/%s/%s %s" % (name, facts["os"]["family"], facts["os"]["name"], facts["os"]["release"]["major"],
                          json.dumps({k: v for k, v in facts.items() if k in ("role", "trusted", "zone", "env", "teams", "project", "application")})[:300]))
                c_total += len(nodes) * (len(keys) + len(sub) + 3 * len(sample))
                continue
            flags = ["--confdir", os.path.join(root, "etc"), "--environment", env]
            others = ("unique", "hash", "deep") + (("default",) if a.default is not None else ())
            runs = [(None, keys + sub)] + [(m, sample) for m in others]
            docs = {}
            for merge, ks in runs:
                kf = os.path.join(root, "keys-%s-%s.txt" % (env, merge))
                with open(kf, "w") as f:
                    f.write("".join(k + "\n" for k in ks))
                b = subprocess.run([hiera, "batch"] + flags + ["--facts-dir", fdir, "--keys-file", kf, "--jobs", "1"]
                                   + merge_flags(merge, a.default), capture_output=True, text=True, env=ENV)
                try:
                    docs[merge] = json.loads(b.stdout)
                except ValueError:
                    docs[merge] = {".errors": {n: "hiera batch failed: " + b.stderr.strip()[-300:] for n in nodes}}
            for node in nodes:
                rechecks = 0
                ffile = os.path.join(fdir, node + ".json")
                # Puppet's processes: the keys with their own merge; unique/hash/deep (no knockout,
                # so the data stays as read) then the sub-keys; the default-value ones on their own
                groups = [[(None, keys)], [(m, sample) for m in others if m != "default"] + [(None, sub)]]
                if "default" in others:
                    groups.append([("default", sample)])
                for group in groups:
                    qs = [(m, k) for m, ks in group for k in ks]
                    qfile = os.path.join(root, "queries.json")
                    with open(qfile, "w") as f:
                        json.dump([dict({"key": k, "merge": None if m == "default" else m},
                                        **({"default": a.default} if m == "default" else {})) for m, k in qs], f)
                    p = subprocess.run(prefix + ["ruby", a.bulk, qfile] + flags + ["--node", node, "--facts", ffile],
                                       capture_output=True, text=True, cwd=root)
                    lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
                    if lines:
                        answers = json.loads(lines[-1])
                    else:
                        answers = [{"error": True, "message": "puppet: " + p.stderr.strip()[-300:]}] * len(qs)
                    for (m, k), pa in zip(qs, answers):
                        ha = ours(docs[m], node, k)
                        total += 1
                        c_total += 1
                        kinds[kind(pa)] = kinds.get(kind(pa), 0) + 1
                        if agree(pa, ha):
                            if kind(pa) == "error" and pa.get("message") != ha.get("message"):
                                msgdiff += 1
                                if a.messages:
                                    print("MESSAGE %s env %s node %s key %s merge %s:\n  puppet: %s\n  hiera:  %s" % (
                                        label, env, node, k, m or "first", pa.get("message", "")[:400], ha.get("message", "")[:400]))
                            continue
                        rechecks += 1
                        if rechecks > a.rechecks:
                            failed += 1
                            c_failed += 1
                            print("DIFF %s env %s node %s key %s merge %s (not asked again): puppet %s, hiera %s" % (
                                label, env, node, k, m or "first", json.dumps(pa)[:300], json.dumps(ha)[:300]), flush=True)
                            continue
                        q = subprocess.run(prefix + ["puppet", "lookup"] + flags + ["--node", node, "--facts", ffile, "--render-as", "json"]
                                           + merge_flags(m, a.default) + [k], capture_output=True, text=True, cwd=root)
                        if q.returncode == 0:
                            try:
                                pa = {"value": json.loads(q.stdout)}
                            except ValueError:
                                pass
                        elif kind(pa) == "value" and q.returncode == 1:
                            pa = {"not_found_or_error": True, "message": q.stderr.strip()[-300:]}
                        elif kind(pa) == "error" and q.returncode == 1 and "Error:" not in q.stderr:
                            # the bulk process failed, but puppet lookup found nothing, without an
                            # error: not found (its own verdict)
                            pa = {"not_found": True}
                        ok = agree(pa, ha) if "not_found_or_error" not in pa else kind(ha) != "value"
                        if ok:
                            bulk_wrong += 1
                            if a.messages:
                                print("BULK %s env %s node %s key %s merge %s: puppet lookup agrees with hiera" % (
                                    label, env, node, k, m or "first"))
                            continue
                        failed += 1
                        c_failed += 1
                        print("DIFF %s env %s node %s key %s merge %s: puppet %s, hiera %s" % (
                            label, env, node, k, m or "first", json.dumps(pa)[:300], json.dumps(ha)[:300]), flush=True)
        per.append((label, len(envs), c_total, c_failed))
        print("%s: %d environments, %d compared, %d differ" % (label, len(envs), c_total, c_failed), flush=True)
        if a.keep:
            dest = os.path.join(a.keep, "%02d-%s" % (ci, re.sub(r"[^A-Za-z0-9_.+-]", "_", label)))
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(root, dest, symlinks=True)
        shutil.rmtree(root, ignore_errors=True)
    print("Puppet's answers (bulk): %s" % ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    print("answers of the bulk tool that puppet lookup overruled (hiera agreed with it): %d" % bulk_wrong)
    print("realrepo-compare: %d compared, %d differ (%d errors with other messages)" % (total, failed, msgdiff))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
