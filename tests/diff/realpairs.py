#!/usr/bin/env python3
"""`hiera diff` on real commit pairs of public control repositories, against Puppet's answers on both
commits (issue 37): repositories whose hiera.yaml names an absolute datadir in Puppet's
environmentpath (lsst-control: /etc/puppetlabs/code/environments/%{environment}/hieradata) and a
global layer kept in the repository (jenkins-infra: dist/profile/files/hiera.yaml, deployed as the
code directory's hiera.yaml).

  realpairs.py --hiera build/hiera --mirror DIR              replays the recorded pairs (needs the
                                                             repositories, not Puppet)
  realpairs.py --hiera build/hiera --mirror DIR --record NAME asks Puppet (7) about a pair

DIR holds the repositories as the fetch tool lays them out (DIR/<owner>+<name>/repo, a bare git
dir); a pair whose repository is missing is skipped (the test needs the network to get them:
make check-realrepos). Each pair (tests/diff/realpairs/NAME.json) names the repository, the two
commits, how a side is deployed, how the nodes' facts are made from the new commit's tree, and
Puppet's answers: for every node of the sample and every key either commit's data defines, the
answers that differ between the commits (node, key, old, new). The replay runs hiera diff (the
sides as git revisions, or as code directories laid out as Puppet deploys them) and must report
exactly those changes for those nodes: no answer Puppet says changed may be missing, none it says
did not change may be there.

Pairs of kind "files" (the held-out pairs: nyudlts, CoderDojoRotselaar, garrettrowell, rgbank) make
their nodes from the pair's own settings (node_files, node_domain, extra_nodes, os, facts_extra,
node_facts with trusted_extensions) and record, beside the changes, the answers failing on both sides
("failing"): they are replayed with --keys-file naming the keys Puppet was asked, and a reported
failure_changed must be one of those. A snapshot without some objects (large files) is laid out
without them.

Puppet reads a datadir under /etc/puppetlabs/code/environments as the environment deployed there:
when recording, each commit is deployed there in a private mount namespace (an overlay over /etc,
never the machine's own /etc), as a Puppet server would have it.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = os.path.join(HERE, "realpairs")
RECORD_RB = os.path.join(HERE, "..", "tools", "puppet-record.rb")
# Puppet's own lookup asked many keys in one scope (../shared/tools, used when there: every key of
# a node in a second rather than a fresh compiler per key)
BULK = os.path.join(HERE, "..", "..", "..", "shared", "tools", "puppet-bulk-lookup")
T = Tally("hiera diff on real commit pairs", print_limit=0)  # the failures are printed at the end
PAIR_SPEC = {}  # the pair being recorded or replayed (gen_facts "files" reads its node settings)
check = T.check
failures = T.failures


def git_dir(mirror, repo):
    d = os.path.join(mirror, repo.replace("/", "+"), "repo")
    if os.path.isdir(os.path.join(d, ".git")):
        d = os.path.join(d, ".git")  # (a snapshot laid out with a work tree)
    return d if os.path.isdir(d) else None


def checkout(gd, commit, dest):
    os.makedirs(dest, exist_ok=True)
    a = subprocess.run(["git", "--git-dir", gd, "archive", commit], capture_output=True)
    if a.returncode == 0:
        subprocess.run(["tar", "-x", "-C", dest], input=a.stdout, check=True)
        return
    # a snapshot without some of its objects (large files left out): the files it has
    ls = subprocess.run(["git", "--git-dir", gd, "ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    entries = [e.split(b"\t", 1) for e in ls.split(b"\0") if e]
    check_in = b"".join(m.split()[2] + b"\n" for m, _ in entries if m.split()[1] == b"blob")
    out = subprocess.run(["git", "--git-dir", gd, "cat-file", "--batch-check"], input=check_in, capture_output=True,
                         check=True).stdout
    missing = {l.split()[0] for l in out.splitlines() if l.endswith(b" missing")}
    index = os.path.join(os.path.dirname(os.path.abspath(dest)), ".realpairs-index")
    env = dict(os.environ, GIT_INDEX_FILE=index)
    subprocess.run(["git", "--git-dir", gd, "read-tree", commit], env=env, check=True)
    gone = b"".join(p + b"\0" for m, p in entries if m.split()[2] in missing)
    subprocess.run(["git", "--git-dir", gd, "update-index", "--force-remove", "-z", "--stdin"], input=gone, env=env,
                   check=True)
    subprocess.run(["git", "--git-dir", gd, "checkout-index", "-a", "-f", "--prefix=" + os.path.abspath(dest) + "/"],
                   env=env, check=True)
    os.unlink(index)


# ------------------------------------------------------------------ nodes (made up, as stated)

def node_facts(certname, family, osname, major, **extra):
    host, _, dom = certname.partition(".")
    f = {"clientcert": certname, "fqdn": certname, "hostname": host, "domain": dom, "kernel": "Linux",
         "virtual": "kvm", "networking": {"fqdn": certname, "hostname": host, "domain": dom},
         "os": {"family": family, "name": osname, "architecture": "x86_64",
                "release": {"major": str(major), "full": str(major)}},
         "trusted": {"authenticated": "remote", "certname": certname, "hostname": host, "domain": dom,
                     "extensions": {}, "external": {}}}
    f["trusted"]["extensions"] = extra.pop("trusted_extensions", {})
    f.update(extra)
    return f


def gen_facts(kind, tree, out, limit):
    """kind "lsst": a node per role file at each of the four sites (AlmaLinux 9, the role and site
    facts the hierarchy reads); "jenkins": a node per hieradata/clients file (Ubuntu 22.04); "swh": a
    node per data/hostname file (Debian 11)."""
    os.makedirs(out, exist_ok=True)
    nodes = {}
    if kind == "lsst":
        roles = sorted(os.path.basename(p)[:-5] for p in glob.glob(tree + "/hieradata/role/*.yaml"))
        for i, r in enumerate(roles):
            site = ["cp", "ls", "tu", "dev"][i % 4]
            name = "%s.%s.lsst.org" % (r, site)
            nodes[name] = node_facts(name, "RedHat", "AlmaLinux", 9, role=r, site=site)
    elif kind == "jenkins":
        for p in sorted(glob.glob(tree + "/hieradata/clients/*.yaml")):
            name = os.path.basename(p)[:-5]
            nodes[name] = node_facts(name, "Debian", "Ubuntu", "22.04")
    elif kind == "swh":
        # SoftwareHeritage/puppet-swh-site: a node per data/hostname file, its deployment and subnet (facts
        # of theirs) from its domain, as the hostname files' own settings say
        for p in sorted(glob.glob(tree + "/data/hostname/*.yaml")):
            name = os.path.basename(p)[:-5]
            if ".euwest.azure." in name:
                dep, sub = "production", "azure_euwest"
            elif ".staging.swh.network" in name:
                dep, sub = "staging", "sesi_rocquencourt_staging"
            elif ".admin.swh.network" in name:
                dep, sub = "admin", "sesi_rocquencourt_admin"
            else:
                dep, sub = "production", "sesi_rocquencourt"
            nodes[name] = node_facts(name, "Debian", "Debian", 11, deployment=dep, subnet=sub, location=sub,
                                     swh_hostname={"internal_fqdn": name, "short": name.split(".")[0]})
    elif kind == "files":
        # a node per file of the pair's node_files globs (its name the certname, or the hostname
        # with node_domain added), and the pair's extra_nodes; the os facts cycle through the pair's
        # os list ([family, name, major]) and the pair's facts are added to every node
        spec = PAIR_SPEC
        names = []
        for g in spec.get("node_files", []):
            names += [os.path.basename(p).rsplit(".", 1)[0] for p in sorted(glob.glob(os.path.join(tree, g)))]
        names = [n + spec.get("node_domain", "") for n in names] + spec.get("extra_nodes", [])
        oses = spec.get("os", [["RedHat", "CentOS", 7]])
        for i, name in enumerate(sorted(set(names))):
            fam, osname, major = oses[i % len(oses)]
            extra = dict(spec.get("facts_extra", {}))
            extra.update(spec.get("node_facts", {}).get(name, {}))
            nodes[name] = node_facts(name, fam, osname, major, **extra)
    names = sorted(nodes)[:limit]
    for n in names:
        with open(os.path.join(out, n + ".json"), "w") as fh:
            json.dump(nodes[n], fh)
    return names


# ------------------------------------------------------------------ the sides

def layout(pair, gd, commit, dest):
    """The side as Puppet deploys it: returns (the folder hiera diff is given, the code directory)."""
    if pair["layout"] == "environment":
        tree = os.path.join(dest, "code", "environments", "production")
        checkout(gd, commit, tree)
        return tree, os.path.join(dest, "code")
    # codedir-global: the repository is the production environment, its global hiera.yaml the
    # code directory's
    code = os.path.join(dest, "code")
    tree = os.path.join(code, "environments", "production")
    checkout(gd, commit, tree)
    shutil.copy(os.path.join(tree, pair["global_config"]), os.path.join(code, "hiera.yaml"))
    return code, code


def data_keys(tree):
    """Every top-level key of the data files (what Puppet is asked)."""
    import yaml
    keys = set()
    for p in glob.glob(tree + "/**/*.yaml", recursive=True):
        if "/spec/" in p or "/modules/" in p or "/.git" in p:
            continue
        try:
            with open(p) as fh:
                v = yaml.safe_load(fh)
        except Exception:
            continue
        if isinstance(v, dict):
            keys.update(k for k in v if isinstance(k, str) and k != "lookup_options")
    return sorted(keys)


def ask_puppet(code, node, facts_file, keys, deploy, work):
    fd, qfile = tempfile.mkstemp(suffix=".json", dir=work)
    with os.fdopen(fd, "w") as f:
        json.dump([{"key": k} for k in keys], f)
    envp = code + "/environments"
    tool = ["ruby", BULK] if os.path.exists(BULK) else ["ruby", RECORD_RB]
    args = tool + [qfile, "--codedir", code, "--environmentpath", envp, "--environment", "production",
            "--node", node, "--facts", facts_file, "--vardir", tempfile.mkdtemp(prefix="vardir-", dir=work)]
    if deploy:
        # the code deployed at /etc/puppetlabs/code in a private mount namespace (an overlay over /etc)
        ov = tempfile.mkdtemp(prefix="overlay-", dir=work)
        os.makedirs(ov + "/up")
        os.makedirs(ov + "/work")
        if PAIR_SPEC.get("hosts"):
            # hosts the data's own functions would ask (a repository's HTTP backend): loopback, in
            # the namespace's /etc/hosts only, so that they fail at once and nothing leaves the machine
            with open("/etc/hosts") as fh:
                hosts = fh.read()
            with open(ov + "/up/hosts", "w") as fh:
                fh.write(hosts + "".join("%s %s\n" % (ip, h) for h, ip in sorted(PAIR_SPEC["hosts"].items())))
        script = ("mount -t overlay overlay -o lowerdir=/etc,upperdir=%s/up,workdir=%s/work /etc && "
                  "mkdir -p /etc/puppetlabs/code && mount --bind %s /etc/puppetlabs/code && exec \"$@\"" % (ov, ov, code))
        args = ["unshare", "-m", "sh", "-c", script, "sh"] + [a.replace(code, "/etc/puppetlabs/code") for a in args]
    p = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    os.unlink(qfile)
    lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
    if not lines:
        raise RuntimeError("Puppet failed for %s: %s" % (node, p.stderr[-800:]))
    out = {}
    for k, a in zip(keys, json.loads(lines[-1])):
        out[k] = {"value": a["value"]} if "value" in a else {"not_found": True} if a.get("not_found") else {"error": True}
    if len(out) != len(keys):
        raise RuntimeError("Puppet answered %d of %d keys for %s" % (len(out), len(keys), node))
    return out


def canon(a):
    """An answer as hiera diff compares it: hash keys in any order, 1 and 1.0 apart."""
    if "value" not in a:
        return ("error",) if a.get("error") else ("not_found",)

    def c(v):
        if isinstance(v, dict):
            return ("h", tuple(sorted((k, c(x)) for k, x in v.items())))
        if isinstance(v, list):
            return ("a", tuple(c(x) for x in v))
        if isinstance(v, bool):
            return ("b", v)
        if isinstance(v, float):
            return ("f", v)
        return (type(v).__name__, v)
    return ("value", c(a["value"]))


def record(hiera, pair_name, mirror):
    path = os.path.join(PAIRS, pair_name + ".json")
    with open(path) as fh:
        pair = json.load(fh)
    PAIR_SPEC.clear()
    PAIR_SPEC.update(pair)
    gd = git_dir(mirror, pair["repo"])
    work = tempfile.mkdtemp(prefix="realpairs-")
    try:
        codes, trees = {}, {}
        for side in ("old", "new"):
            _, codes[side] = layout(pair, gd, pair[side], os.path.join(work, side))
            trees[side] = os.path.join(codes[side], "environments", "production")
            # (Puppet runs an environment's config_version script when it loads it: a control
            # repository's asks git about the deployed folder, which is no clone here)
            conf = os.path.join(trees[side], "environment.conf")
            if os.path.isfile(conf):
                with open(conf) as fh:
                    lines = fh.readlines()
                with open(conf, "w") as fh:
                    fh.writelines("#" + l if re.match(r"\s*config_version\s*=", l) else l for l in lines)
        fdir = os.path.join(work, "facts")
        nodes = gen_facts(pair["facts"], trees["new"], fdir, pair.get("nodes", 30))
        keys = sorted(set(data_keys(trees["old"])) | set(data_keys(trees["new"])))
        answers = {"old": {}, "new": {}}
        deploy = pair["layout"] == "environment" and pair.get("deploy", True)  # (a datadir in the tree: no need)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
            jobs = [(s, n, ex.submit(ask_puppet, codes[s], n, os.path.join(fdir, n + ".json"), keys, deploy, work))
                    for s in ("old", "new") for n in nodes]
            for s, n, fut in jobs:
                answers[s][n] = fut.result()
        changes, failing = [], []
        for n in nodes:
            for k in keys:
                o, w = answers["old"][n][k], answers["new"][n][k]
                if canon(o) != canon(w):
                    changes.append([n, k, o, w])
                elif "error" in o:
                    failing.append([n, k])  # (failing on both sides: hiera diff may say the failure changed)
        pair["puppet"] = {"nodes": nodes, "keys": len(keys), "answers": len(nodes) * len(keys) * 2,
                          "changes": changes, "failing": failing}
        with open(path, "w") as fh:
            json.dump(pair, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("%s: %d nodes, %d keys, %d answers that differ" % (pair_name, len(nodes), len(keys), len(changes)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def diff_changes(doc):
    """(node, key) -> (old answer, new answer) from hiera diff's JSON (failures said once included)."""
    out = {}
    for f in doc.get("failures", []):
        for k in f["keys"]:
            for n in f["nodes"]:
                out[(n, k)] = (None, None, f["kind"])
    for kd in doc["keys"]:
        for ch in kd["changes"]:
            o = {"value": ch["old"]} if "old" in ch else {"not_found": True}
            w = {"value": ch["new"]} if "new" in ch else {"not_found": True}
            if ch["kind"] in ("now_failing", "failure_changed"):
                w = {"error": True}
            if ch["kind"] in ("no_longer_failing", "failure_changed"):
                o = {"error": True}
            for n in ch["nodes"]:
                out[(n, kd["key"])] = (o, w, ch["kind"])
    return out


SKIPPED = []  # (pair, why): said beside the closing count


def replay(hiera, pair_name, mirror):
    with open(os.path.join(PAIRS, pair_name + ".json")) as fh:
        pair = json.load(fh)
    PAIR_SPEC.clear()
    PAIR_SPEC.update(pair)
    gd = git_dir(mirror, pair["repo"])
    if not gd:
        SKIPPED.append((pair_name, "no %s in %s" % (pair["repo"], mirror)))
        print("realpairs: %s skipped (%s)" % SKIPPED[-1])
        return False
    if "puppet" not in pair:
        SKIPPED.append((pair_name, "Puppet's answers not recorded: --record %s" % pair_name))
        print("realpairs: %s skipped (%s)" % SKIPPED[-1])
        return False
    rec = pair["puppet"]
    work = tempfile.mkdtemp(prefix="realpairs-")
    try:
        sides, trees = {}, {}
        for side in ("old", "new"):
            sides[side], code = layout(pair, gd, pair[side], os.path.join(work, side))
            trees[side] = os.path.join(code, "environments", "production")
        fdir = os.path.join(work, "facts")
        nodes = gen_facts(pair["facts"], trees["new"], fdir, pair.get("nodes", 30))
        check(nodes == rec["nodes"], "%s: the nodes made are not the recorded ones" % pair_name)
        env = dict(os.environ, HIERA_CACHE_DIR="off")
        extra = []
        if "failing" in rec:
            # (pairs recorded with the failing list: the keys Puppet was asked, also those no data
            # file hiera reads defines, whose answers change when a whole hierarchy starts or stops
            # failing)
            keys = sorted(set(data_keys(trees["old"])) | set(data_keys(trees["new"])))
            check(len(keys) == rec["keys"], "%s: %d keys, %d recorded" % (pair_name, len(keys), rec["keys"]))
            kfile = os.path.join(work, "keys")
            with open(kfile, "w") as fh:
                fh.write("".join(k + "\n" for k in keys))
            extra = ["--keys-file", kfile]
        if pair["layout"] == "environment":
            # as a user runs it: the two revisions of the repository
            cmd = [hiera, "diff", "--git-dir", gd, pair["old"], pair["new"]]
        else:
            cmd = [hiera, "diff", sides["old"], sides["new"]]
        p = subprocess.run(cmd + ["--facts-dir", fdir, "--format", "json", "--nodes"] + extra, capture_output=True,
                           text=True, env=env)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            check(False, "%s: hiera diff gave no JSON: %s" % (pair_name, p.stderr[-400:]))
            return True
        got = diff_changes(doc)
        want = {(n, k): (o, w) for n, k, o, w in rec["changes"]}
        for nk, (o, w) in sorted(want.items()):
            g = got.get(nk)
            if not g:
                check(False, "%s: Puppet's answer changed, hiera diff says nothing: %s %s: %s -> %s" %
                      (pair_name, nk[0], nk[1], json.dumps(o)[:100], json.dumps(w)[:100]))
                continue
            go, gw, kind = g
            same = kind in ("now_failing", "no_longer_failing", "failure_changed") or \
                (canon(go) == canon(o) and canon(gw) == canon(w))
            check(same, "%s: %s %s: Puppet %s -> %s, hiera diff %s -> %s" % (pair_name, nk[0], nk[1], json.dumps(o)[:80],
                                                                           json.dumps(w)[:80], json.dumps(go)[:80],
                                                                           json.dumps(gw)[:80]))
        failing = {tuple(x) for x in rec.get("failing", [])}
        for nk in sorted(got):
            if nk not in want and got[nk][2] == "failure_changed" and "failing" in rec:
                check(nk in failing, "%s: hiera diff says a failure changed, Puppet answers: %s %s" % (pair_name, nk[0],
                                                                                                   nk[1]))
                continue
            check(nk in want or nk[0] not in rec["nodes"],
                  "%s: hiera diff reports a change Puppet does not: %s %s" % (pair_name, nk[0], nk[1]))
        kinds = {d["kind"] for d in doc.get("datadirs", [])}
        for kind in pair.get("datadirs", []):
            check(kind in kinds, "%s: no %s datadir in the JSON (%s)" % (pair_name, kind, doc.get("datadirs")))
        check(("outside" in kinds) == ("is outside both trees" in p.stderr),
              "%s: a datadir outside both trees is warned about" % pair_name)
        # (a failure whose message changed is a change too)
        changed = want or any(g[2] == "failure_changed" for g in got.values())
        check(p.returncode == (1 if changed else 0), "%s: exit status %d" % (pair_name, p.returncode))
        return True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--mirror", required=True, help="the repositories: DIR/<owner>+<name>/repo")
    ap.add_argument("--record", help="ask Puppet about this pair (tests/diff/realpairs/NAME.json)")
    ap.add_argument("--pair", action="append", help="replay only this pair (NAME; again for more)")
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    if a.record:
        record(hiera, a.record, a.mirror)
        return
    n = 0
    for path in sorted(glob.glob(os.path.join(PAIRS, "*.json"))):
        if a.pair and os.path.basename(path)[:-5] not in a.pair:
            continue
        n += replay(hiera, os.path.basename(path)[:-5], a.mirror)
    for f in failures:
        print("FAIL", f)
    if SKIPPED:
        print("realpairs: %d of %d pairs NOT CHECKED:" % (len(SKIPPED), n + len(SKIPPED)))
        for name, why in SKIPPED:
            print("  %s: %s" % (name, why))
    print("hiera diff on real commit pairs (%d replayed): %d passed, %d failed" % (n, T.passed, T.failed))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
