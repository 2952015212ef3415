#!/usr/bin/env python3
"""hiera set and unset over every data file of real control repositories, against Ruby and Puppet.

For every YAML data file of the trees given (files under a data/ or hieradata/ folder), each one
copied to a scratch folder, and every top-level key of it:
  - `hiera set KEY <its current value>` leaves the file byte-identical;
  - setting a scalar, an array and a hash, and `hiera unset KEY`, change only that entry's lines (from
    the key's line to the line before the next top-level key), and Ruby's YAML.load of the result
    equals the old document with the key replaced (or removed), keys in the same order;
  - a key the file does not have is added without changing a byte of the old text (but the line break
    its last line may lack, and an empty root, "--- {}", that becomes the block mapping), and Ruby
    reads it as the last key;
  - a file Ruby cannot load is not written;
  - a refusal is counted with its reason (the key defined twice, an anchor in the way...); a refusal
    that says the editor could not write the file exactly is a failure.
With --puppet (Puppet installed), in a scratch copy of each tree: keys of the files every node reads
(level paths that interpolate nothing) whose answer `puppet lookup` takes from that file are set to
new values (and some removed) with `hiera set --level` (the level's first path) or `--file`, and Puppet's own lookup
(../shared/tools/puppet-bulk-lookup) must answer the new values afterwards.

The trees are control repositories laid out as r10k deploys them (tests/check/realrepos/build.sh
makes them: TREE/code/environments/production). Not part of make check (it needs the repositories,
Ruby and, with --puppet, Puppet): make check-realrepos runs it on every tree laid out, on
--max-files files of each (REALREPOS_EDIT_FILES, 0 for all: evenly spread over the tree's sorted
list, the same ones each run). A TREE that is not there, and Ruby missing, are said beside the
closing count.

usage: tests/edit/realrepo.py --hiera build/hiera [--puppet [--no-roundtrip]] [--jobs N]
                              [--max-files N] TREE...
Prints "N passed, N failed" and the refusals by reason.
"""
import argparse, collections, concurrent.futures, json, os, re, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
BULK = os.path.join(HERE, "..", "..", "..", "shared", "tools", "puppet-bulk-lookup")
EXTS = (".yaml", ".yml", ".eyaml")

T = Tally("hiera set on real trees", print_limit=40)
check = T.check
refusals = collections.Counter()


def data_files(tree):
    out = []
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "fixtures", "spec"))
        parts = root.split(os.sep)
        if "data" not in parts and "hieradata" not in parts:
            continue
        for f in sorted(files):
            p = os.path.join(root, f)
            if f.endswith(EXTS) and os.path.isfile(p) and not os.path.islink(p):
                out.append(p)
    return out


def ruby(mode, items, work):
    path = os.path.join(work, "rb-%s.json" % mode)
    with open(path, "w") as f:
        json.dump(items, f)
    r = subprocess.run(["ruby", os.path.join(HERE, "rb-yaml.rb"), mode, path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("ruby failed: " + r.stderr)
    return json.loads(r.stdout)


def hiera(args, hiera_bin, cwd=None):
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
    return subprocess.run([hiera_bin] + args, capture_output=True, cwd=cwd, env=env)


def outside_same(old, new, lo, hi):
    """whether new is old with only its lines lo..hi (1-based, inclusive) replaced: the lines before
    and after are the same bytes (None), or the first line outside that differs"""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    if b[:lo - 1] != a[:lo - 1]:
        return next(i + 1 for i in range(lo - 1) if i >= len(b) or a[i] != b[i])
    tail = len(a) - hi
    if tail > len(b) - (lo - 1) or (tail and b[len(b) - tail:] != a[hi:]):
        return hi + 1
    return None


VALUES = [("scalar", "hiera-edit: a string"), ("number", 8443), ("array", ["a", 1, {"b": "c"}]),
          ("hash", {"x": {"y": [1, 2]}, "z": "q: r # not a comment"})]


NEW_KEY = "hiera_edit_test::added"


def only_inserted(old, new):
    """whether new is old with lines inserted at one place (the line before them may have gained the
    line break it lacked)"""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    p = 0
    while p < len(a) and p < len(b) and a[p] == b[p]:
        p += 1
    s = 0
    while s < len(a) - p and s < len(b) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    gone, came = a[p:len(a) - s], b[p:len(b) - s]
    if not gone:
        return len(b) > len(a)
    if len(gone) == 1 and re.match(rb"^(---)?[ \t]*(\{[ \t]*\}|~|null)?[ \t]*(#.*)?\r?\n?$", gone[0]) and re.search(rb"\{|~|null", gone[0]):
        # an empty root ("--- {}", "--- ~") becomes the new block mapping: its marker and comment stay
        marker = gone[0].startswith(b"---")
        return not marker or came[0].startswith(b"---")
    return len(gone) == 1 and not gone[0].endswith((b"\n", b"\r")) and b[p].rstrip(b"\r\n") == gone[0]


def edit_one(job):
    """one file: every key, every operation (in a private copy); returns (results, verify jobs)"""
    hiera_bin, work, n, desc = job
    src = desc["file"]
    orig = open(src, "rb").read()
    w = os.path.join(work, "f%d%s" % (n, os.path.splitext(src)[1]))
    results, verify = [], []
    dup = collections.Counter(k["key"] for k in desc["keys"])
    for ki, k in enumerate(desc["keys"]):
        key = k["key"]
        if dup[key] > 1:
            continue  # (counted below: the editor must refuse it)
        # the key as a lookup takes it: quoted whole when it holds a dot or a quote
        qkey = key if not re.search(r"[.'\"]", key) else ('"%s"' % key if '"' not in key else "'%s'" % key)
        ops = []
        if "json" in k:
            ops.append(("same", k["json"]))
        ops += VALUES
        ops.append(("unset", None))
        for name, value in ops:
            with open(w, "wb") as f:
                f.write(orig)
            if name == "unset":
                r = hiera(["unset", "--file", w, qkey], hiera_bin)
            else:
                r = hiera(["set", "--file", w, qkey, json.dumps(value), "--json"], hiera_bin)
            now = open(w, "rb").read()
            what = "%s: %s %r (%s)" % (src, "unset" if name == "unset" else "set", key, name)
            err = r.stderr.decode("utf-8", "replace")
            if r.returncode == 1:
                reason = re.sub(r".*cannot (set|remove) '.*?': ", "", err.strip().splitlines()[-1] if err.strip() else "")
                reason = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", reason)[:120]
                results.append(("refused", what, reason, now == orig))
                continue
            if r.returncode != 0:
                results.append(("fail", what + ": exit %d: %s" % (r.returncode, err.strip()[:300]), None, None))
                continue
            if name == "same":
                results.append(("check", what + ": not byte-identical", now == orig, None))
                continue
            old_t, new_t = orig.decode("utf-8", "replace"), now.decode("utf-8", "replace")
            lo, hi = k["line"], k["next"] - 1
            bad = outside_same(old_t, new_t, lo, hi)
            results.append(("check", what + ": line %s outside the entry (%d-%d) changed" % (bad, lo, hi), bad is None, None))
            keep = os.path.join(work, "r%d-%d-%s%s" % (n, ki, name, os.path.splitext(src)[1]))
            with open(keep, "wb") as f:
                f.write(now)
            verify.append({"old": src, "new": keep, "key": key, "action": "unset" if name == "unset" else "set",
                           "value": value, "what": what})
    # a key the file does not have: added, the old text kept whole (its last line may gain the line
    # break it lacked), and Ruby reads it last
    with open(w, "wb") as f:
        f.write(orig)
    value = {"x": ["1", 2], "y": "z"}
    r = hiera(["set", "--file", w, NEW_KEY, json.dumps(value), "--json"], hiera_bin)
    now = open(w, "rb").read()
    what = "%s: set %r (a new key)" % (src, NEW_KEY)
    if r.returncode == 1:
        err = r.stderr.decode("utf-8", "replace").strip()
        reason = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "_", re.sub(r".*cannot (set|remove) '.*?': ", "", err.splitlines()[-1] if err else ""))[:120]
        results.append(("refused", what, reason, now == orig))
    elif r.returncode != 0:
        results.append(("fail", what + ": exit %d: %s" % (r.returncode, r.stderr.decode("utf-8", "replace").strip()[:300]), None, None))
    else:
        results.append(("check", what + ": not an insertion into the old text", only_inserted(orig, now), None))
        keep = os.path.join(work, "r%d-new%s" % (n, os.path.splitext(src)[1]))
        with open(keep, "wb") as f:
            f.write(now)
        verify.append({"old": src, "new": keep, "key": NEW_KEY, "action": "set", "value": value, "what": what})
    # a key defined twice is refused, and the file left as it was
    for key, c in dup.items():
        if c > 1:
            with open(w, "wb") as f:
                f.write(orig)
            r = hiera(["set", "--file", w, key, "1"], hiera_bin)
            results.append(("check", "%s: %r defined twice: exit %d, not refused" % (src, key, r.returncode),
                            r.returncode == 1 and open(w, "rb").read() == orig, None))
            refusals["the key defined twice"] += 1
    if os.path.exists(w):
        os.unlink(w)
    return results, verify


def sample(files, n):
    """n files spread evenly over the sorted list (all when n is 0 or there are no more)"""
    if not n or len(files) <= n:
        return files
    return [files[i * len(files) // n] for i in range(n)]


def roundtrip(trees, hiera_bin, jobs, max_files=0):
    work = tempfile.mkdtemp(prefix="hiera-edit-realrepo-")
    try:
        files = []
        for t in trees:
            every = data_files(t)
            files += sample(every, max_files)
            print("%s: %d of its %d data files" % (os.path.basename(t.rstrip("/")), min(len(every), max_files or len(every)),
                                                   len(every)), flush=True)
        descs = ruby("describe", files, work)
        hashes = [d for d in descs if d.get("hash")]
        print("%d data files (%d hashes, %d others or unreadable by Ruby), %d top-level keys" %
              (len(files), len(hashes), len(descs) - len(hashes), sum(len(d["keys"]) for d in hashes)), flush=True)
        verify = []
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for results, v in pool.map(edit_one, [(hiera_bin, work, i, d) for i, d in enumerate(hashes)]):
                verify += v
                for kind, what, a, b in results:
                    if kind == "refused":
                        refusals[a] += 1
                        check(b, what + ": refused but the file changed")
                        check("exactly" not in a and "read back" not in a, what + ": the editor failed: " + a)
                    elif kind == "fail":
                        check(False, what)
                    else:
                        check(a, what)
        answers = ruby("verify", verify, work)
        for job, ans in zip(verify, answers):
            check(ans["ok"], "%s: %s" % (job["what"], ans.get("why")))
        # the files that are not hashes: refused
        for d in descs:
            if d.get("hash") is False:
                w = os.path.join(work, "nothash.yaml")
                shutil.copy(d["file"], w)
                r = hiera(["set", "--file", w, "k", "v"], hiera_bin)
                check(r.returncode == 1 and open(w, "rb").read() == open(d["file"], "rb").read(),
                      "%s: not a hash, not refused (exit %d)" % (d["file"], r.returncode))
                refusals["not a hash"] += 1
            elif "error" in d:
                # a file Ruby cannot load: Puppet would fail on it, the editor must not write it
                w = os.path.join(work, "unreadable.yaml")
                shutil.copy(d["file"], w)
                r = hiera(["set", "--file", w, "k", "v"], hiera_bin)
                check(r.returncode in (1, 2) and open(w, "rb").read() == open(d["file"], "rb").read(),
                      "%s: Ruby cannot load it (%s), yet hiera set wrote it (exit %d)" % (d["file"], d["error"][:100], r.returncode))
                refusals["Ruby cannot load the file"] += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------ Puppet answers the new values

def puppet_answers(code, env, keys, facts):
    q = os.path.join(code, "..", "queries.json")
    with open(q, "w") as f:
        json.dump([{"key": k, "merge": None} for k in keys], f)
    r = subprocess.run(["ruby", BULK, q, "--codedir", code, "--environmentpath", os.path.join(code, "environments"),
                        "--environment", env, "--node", "hiera-edit-test.example.com", "--facts", facts],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr[-500:]
    return json.loads(r.stdout), None


def puppet_stage(trees, hiera_bin):
    for tree in trees:
        work = tempfile.mkdtemp(prefix="hiera-edit-puppet-")
        try:
            code = os.path.join(work, "code")
            shutil.copytree(os.path.join(tree, "code"), code, symlinks=True)
            # (a config_version script of the repository is not what is tested: Puppet would run it)
            for conf in [os.path.join(d, "environment.conf") for d, _, fs in os.walk(os.path.join(code, "environments"))
                         if "environment.conf" in fs]:
                lines = open(conf).read().splitlines(keepends=True)
                with open(conf, "w") as f:
                    f.writelines(l for l in lines if not l.strip().startswith("config_version"))
            facts = os.path.join(work, "facts.json")
            with open(facts, "w") as f:
                json.dump({"hostname": "hiera-edit-test", "domain": "example.com", "fqdn": "hiera-edit-test.example.com",
                           "clientcert": "hiera-edit-test.example.com"}, f)
            env = "production"
            base = ["--codedir", code, "--environmentpath", os.path.join(code, "environments"), "--environment", env,
                    "--node", "hiera-edit-test.example.com", "--facts", facts]
            r = hiera(["keys", "--hierarchy", "--render-as", "json"] + base, hiera_bin)
            if r.returncode not in (0, 2):
                print("%s: no hierarchy: %s" % (tree, r.stderr.decode()[:300]))
                continue
            layers = json.loads(r.stdout)["layers"]
            targets = []  # (level, file, whether it is the level's first path)
            for l in layers:
                if l["layer"] == "module":
                    continue
                for lv in l.get("levels", []):
                    for li, loc in enumerate(lv["locations"]):
                        if loc.get("exists") and "%{" not in loc["original"] and \
                                lv["function"] in ("yaml_data", "eyaml_lookup_key"):
                            targets.append((lv["name"], loc["path"], li == 0))
            keys_by_file = {}
            for level, path, first in targets:
                d = ruby("describe", [path], work)[0]
                keys = [k for k in d.get("keys", []) if "json" in k and k["key"] != "lookup_options"
                        and not re.search(r"[.'\"%]", k["key"]) and "::" in k["key"]]
                keys_by_file[(level, path, first)] = keys
            # a key two of these files hold with the same value (a glob level's files: swh's common/*.yaml) is
            # not known to be answered from the one edited: left out
            seen = collections.Counter(k["key"] for ks in keys_by_file.values() for k in ks)
            for lf in keys_by_file:
                keys_by_file[lf] = [k for k in keys_by_file[lf] if seen[k["key"]] == 1][:25]
            allkeys = [k["key"] for ks in keys_by_file.values() for k in ks]
            before, why = puppet_answers(code, env, allkeys, facts)
            if before is None:
                print("%s: puppet lookup failed: %s" % (tree, why))
                continue
            want = {}
            i = 0
            for (level, path, first), ks in keys_by_file.items():
                where = ["--level", level] if first else ["--file", path]
                for k in ks:
                    ans = before[allkeys.index(k["key"])]
                    if ans.get("value") != k["json"]:
                        continue  # (another level or a merge gives the answer)
                    i += 1
                    if i % 5 == 0:
                        r = hiera(["unset"] + where + [k["key"]] + base, hiera_bin)
                        want[k["key"]] = None
                    else:
                        value = VALUES[i % len(VALUES)][1]
                        r = hiera(["set"] + where + [k["key"], json.dumps(value), "--json"] + base, hiera_bin)
                        want[k["key"]] = value
                    if r.returncode != 0:
                        want.pop(k["key"])
                        refusals[re.sub(r".*: ", "", r.stderr.decode().strip().splitlines()[-1])[:100]] += 1
            if not want:
                continue
            after, why = puppet_answers(code, env, list(want), facts)
            check(after is not None, "%s: puppet lookup failed after the edits: %s" % (tree, why))
            for (k, v), ans in zip(want.items(), after or []):
                if v is None:
                    check(ans.get("not_found") or ans.get("value") is not None, "%s: %s removed: %r" % (tree, k, ans))
                else:
                    check(ans.get("value") == v, "%s: puppet lookup %s after hiera set: %r, expected %r" % (tree, k, ans, v))
            print("%s: puppet lookup answers %d edited keys" % (os.path.basename(tree.rstrip("/")), len(want)), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--puppet", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-roundtrip", action="store_true", help="only the --puppet stage")
    ap.add_argument("--max-files", type=int, default=0, help="at most N data files of each tree (0: all)")
    ap.add_argument("--realrepos", help="the trees build.sh laid out under DIR (DIR/trees/<tree>, DIR/layout.txt)")
    ap.add_argument("trees", nargs="*")
    a = ap.parse_args()
    hiera_bin = os.path.abspath(a.hiera)
    why = {}
    if a.realrepos:
        # every tree build.sh names, those it could not lay out with its reason
        try:
            with open(os.path.join(a.realrepos, "layout.txt")) as fh:
                for line in fh:
                    name, _, rest = line.strip().partition(" ")
                    t = os.path.join(a.realrepos, "trees", name)
                    a.trees.append(t)
                    if rest.startswith("missing"):
                        why[t] = rest
        except OSError:
            d = os.path.join(a.realrepos, "trees")
            a.trees += [os.path.join(d, n) for n in sorted(os.listdir(d)) if not n.startswith(".")] if os.path.isdir(d) else []
    missing = [t for t in a.trees if not os.path.isdir(os.path.join(t, "code"))]
    trees = [t for t in a.trees if t not in missing]
    noruby = shutil.which("ruby") is None
    if trees and not noruby:
        if not a.no_roundtrip:
            roundtrip(trees, hiera_bin, a.jobs, a.max_files)
        if a.puppet:
            puppet_stage(trees, hiera_bin)
        print("refusals by reason:")
        for reason, n in refusals.most_common():
            print("  %6d  %s" % (n, reason))
    # said beside the count: a run that edited nothing must not look like one that passed
    if noruby:
        print("hiera set on real trees: NOT CHECKED: no ruby (Ruby's YAML.load is the reference)")
    elif not a.trees or len(missing) == len(a.trees):
        print("hiera set on real trees: NOT CHECKED: no tree laid out (make check-realrepos REALREPOS_MIRROR=DIR)")
    elif missing:
        print("hiera set on real trees: %d of %d trees NOT CHECKED (not laid out):" % (len(missing), len(a.trees)))
        for t in missing:
            print("  %s: %s" % (os.path.basename(t.rstrip("/")), why.get(t, "no %s" % os.path.join(t, "code"))))
    sys.exit(T.summary())


if __name__ == "__main__":
    main()
