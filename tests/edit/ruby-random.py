#!/usr/bin/env python3
"""hiera set / unset on random YAML files and edits, judged by Ruby: never a file Ruby rejects.

The inputs: the libFuzzer corpus and regressions of the editor (tests/fuzz/corpus/edit,
tests/fuzz/regressions/edit: a flags byte, the key, the value, the document), then random
documents written here (comments above and beside keys, blank lines, every scalar style, block and
flow collections, document markers, CRLF line endings, a last line without its line break) with
random edits (a top-level or dotted key, existing or new; a value in YAML that Psych reads as a
string, a number, a boolean, a date, null, an array or a hash, multi-line, with quotes and
comment marks; or unset). Each edit is made with `hiera set --file` (or `unset`) on a copy, and
Ruby's Psych (as Puppet reads data: YAML.load, aliases and Symbol permitted) must agree:
  - written: Ruby loads the new file, and it is the old document with the key's path set to
    Ruby's reading of VALUE (the hashes on the way made) or removed, keys in the same order;
  - written from a file Ruby cannot load: a failure (the editor read what Puppet would reject);
  - refused (exit 1) or trouble (exit 2): the file is unchanged and the message says why.
Slow suites stay out of make check: this is `make check-edit` (1,100 edits, about two minutes on a loaded 2-core machine), in .ci/run.

usage: tests/edit/ruby-random.py --hiera build/hiera [--count N] [--seed S] [--jobs N]
Prints "edit ruby: N passed, N failed".
"""
import argparse, collections, concurrent.futures, glob, json, re, os, random, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", ".."))

T = Tally("edit ruby", fail_prefix="FAIL edit ruby: ", print_limit=30)
check = T.check


# ---------------------------------------------------------------- random documents and edits

WORDS = ["a", "b", "port", "users", "bob", "x", "profile::base::motd", "ntp::servers", "key with space",
         "k.dot", "true", "1", "~", "é", "list", "h"]
STRINGS = ["hello", "hello world", "8443", "0o17", "0x1f", "1_000", "1e3", ".5", "yes", "no", "on", "off",
           "true", "False", "null", "~", "", " lead", "trail ", "a: b", "a #b", "#c", "- x", "[x]", "{x: 1}",
           "'q'", '"dq"', "it's", "tab\there", "line\nbreak", "two\n\nbreaks\n", "2001-12-14", "2001-12-14 21:59:43.10 -5",
           ":sym", "%{facts.hostname}", "ENC[PKCS7,abc]", "*alias", "&anchor", "!tag", "@at", "`tick", "|", ">",
           "é ünïcode", "\u2028sep", "back\\slash", "---", "...", "=", "<<", "?", ":", "0", "-1", "+1", "1.0", "NaN", ".inf"]


def rnd_scalar_value(r):
    c = r.random()
    if c < 0.55:
        return r.choice(STRINGS)
    if c < 0.7:
        return r.choice([0, 1, -7, 8443, 2 ** 40, 3.25, -0.5])
    if c < 0.8:
        return r.choice([True, False])
    return None


def rnd_value(r, depth=0):
    c = r.random()
    if depth < 2 and c < 0.2:
        return [rnd_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    if depth < 2 and c < 0.35:
        return {r.choice(WORDS): rnd_value(r, depth + 1) for _ in range(r.randint(0, 3))}
    return rnd_scalar_value(r)


def ind(n):
    return " " * n


def rnd_key(r):
    k = r.choice(WORDS)
    if k in ("true", "1", "~", "key with space", "k.dot") or r.random() < 0.1:
        return "'%s'" % k if r.random() < 0.5 else '"%s"' % k, k
    return k, k


def scalar_text(r, v, col):
    """v (a str, number, bool, None) as YAML text starting at column col, in a random style that
    Ruby reads back as v (JSON's double-quoted form is YAML for the hard ones)"""
    if isinstance(v, str):
        safe_plain = v and v == v.strip() and not any(c in v for c in ":#\n\t'\"[]{},&*!|>%@`") and \
            v[0] not in "-?~" and v.lower() not in ("yes", "no", "on", "off", "true", "false", "null", "y", "n") and \
            not v[0].isdigit() and v[0] not in ".+" and v not in ("---", "...", "=", "<<")
        c = r.random()
        if safe_plain and c < 0.4:
            return v
        if "\n" not in v and "'" not in v and c < 0.6 and all(ord(ch) >= 32 for ch in v):
            return "'%s'" % v
        if v and v.endswith("\n") and v.strip() and "\t" not in v and not v.startswith(" ") and c < 0.8 \
                and all(l == l.rstrip() for l in v.split("\n")) and "\u2028" not in v:
            body = "".join(ind(col + 2) + l + "\n" if l else "\n" for l in v[:-1].split("\n"))
            return "|\n" + body.rstrip("\n") + "\n"  # (ends the line itself)
        return json.dumps(v, ensure_ascii=r.random() < 0.5)
    if v is None:
        return r.choice(["~", "null", ""])
    if isinstance(v, bool):
        return r.choice(["true", "false"]) if False else ("true" if v else "false")
    return json.dumps(v)


def block(r, v, col, out):
    """appends the lines of v (a hash or array) at column col"""
    if isinstance(v, dict):
        for k, x in v.items():
            kt = k if k not in ("true", "1", "~", "key with space", "k.dot") else json.dumps(k)
            if r.random() < 0.15:
                out.append(ind(col) + "# about " + k + "\n")
            entry(r, ind(col) + kt + ":", x, col, out)
    else:
        for x in v:
            entry(r, ind(col) + "-", x, col, out)


def entry(r, head, x, col, out):
    side = "   # side" if r.random() < 0.15 else ""
    if isinstance(x, (dict, list)) and x:
        if r.random() < 0.2 and all(not isinstance(y, (dict, list)) for y in (x.values() if isinstance(x, dict) else x)) \
                and all(isinstance(y, (int, float)) or y is None or (isinstance(y, str) and y.isalpha()) for y in (x.values() if isinstance(x, dict) else x)):
            out.append(head + " " + json.dumps(x) + side + "\n")  # a flow collection
            return
        out.append(head + side + "\n")
        block(r, x, col + 2 if isinstance(x, dict) or head.endswith(":") else col + 2, out)
    elif isinstance(x, (dict, list)):
        out.append(head + " " + ("{}" if isinstance(x, dict) else "[]") + side + "\n")
    else:
        t = scalar_text(r, x, col)
        if t.startswith("|"):
            out.append(head + " " + t)
        elif t == "":
            out.append(head + side + "\n")
        else:
            out.append(head + " " + t + side + "\n")


def rnd_document(r):
    doc = {}
    for _ in range(r.randint(0, 6)):
        doc[r.choice(WORDS)] = rnd_value(r)
    out = []
    if r.random() < 0.5:
        out.append("---\n")
    if r.random() < 0.3:
        out.append("# a file comment\n\n")
    block(r, doc, 0, out)
    # what the generator above does not write: anchors and aliases, merge keys, folded and plain
    # multi-line scalars, tabs, a flow mapping, a key defined twice
    for extra in ("anch: &A [1, 2]\nuse: *A\n", "base: &B {x: 1}\nmerged:\n  <<: *B\n  y: 2\n",
                  "folded: >\n  one\n  two\n\n  three\n", "plain: one\n  two\n", "tabbed:\t1\t# tab\n",
                  "flow: {x: 1, y: [a, b]}\n", "twice: 1\ntwice: 2\n", "list:\n- a\n- b: c\n  d: e\n"):
        if r.random() < 0.06:
            out.append(extra)
    if r.random() < 0.1:
        out.append("# the end\n")
    if r.random() < 0.05:
        out.append("...\n")
    text = "".join(out)
    if r.random() < 0.1 and text.endswith("\n"):
        text = text[:-1]
    if r.random() < 0.1:
        text = text.replace("\n", "\r\n")
    return text


def rnd_edit(r, text):
    keys = WORDS + ["anch", "use", "merged", "folded", "plain", "tabbed", "flow", "twice"]
    k = r.choice(keys)
    if "." in k or r.random() < 0.1:
        k = json.dumps(k)
    if r.random() < 0.3:
        k = k + "." + r.choice(["x", "bob", "shell", "new"])
    if r.random() < 0.25:
        return 1, k, ""
    v = rnd_value(r)
    if r.random() < 0.5:
        value = json.dumps(v)  # (JSON is YAML)
    else:
        out = []
        entry(r, "v:", v, 0, out)
        value = "".join(out)[2:].strip("\n") or "~"
        if "\n" in value:
            value = json.dumps(v)
    return 0, k, value


# ---------------------------------------------------------------- running and judging

def cases(count, seed):
    out = []
    for d in ("corpus/edit", "regressions/edit"):
        for p in sorted(glob.glob(os.path.join(TOP, "tests", "fuzz", d, "*"))):
            data = open(p, "rb").read()
            if len(data) < 3:
                continue
            try:
                k_end = data.index(b"\n", 1)
                v_end = data.index(b"\n", k_end + 1)
            except ValueError:
                continue
            key, value, text = data[1:k_end], data[k_end + 1:v_end], data[v_end + 1:]
            if b"\0" in key + value or not key or key.startswith(b"-"):
                continue  # (not a command line argument)
            try:
                key.decode("utf-8"), value.decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(("fuzz " + os.path.basename(p), data[0] & 1, key.decode(), value.decode(), text))
    r = random.Random(seed)
    for i in range(count):
        text = rnd_document(r)
        unset, k, v = rnd_edit(r, text)
        out.append(("random %d (seed %d)" % (i, seed), unset, k, v, text.encode("utf-8")))
    return out


def run_one(job):
    hiera, work, n, (name, unset, key, value, text) = job
    p = os.path.join(work, "c%d.yaml" % n)
    with open(p, "wb") as f:
        f.write(text)
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
    args = [hiera, "unset", "--file", p, "--", key] if unset else [hiera, "set", "--file", p, "--", key, value]
    try:
        r = subprocess.run(args, capture_output=True, env=env, timeout=30)
        rc, err = r.returncode, r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = "timeout", ""
    return {"name": name, "file": p, "old": text, "rc": rc, "err": err, "key": key, "value": value,
            "unset": bool(unset), "new": open(p, "rb").read()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not shutil.which("ruby"):
        sys.exit("edit ruby: no ruby (apt-get install ruby)")
    hiera = os.path.abspath(a.hiera)
    work = tempfile.mkdtemp(prefix="hiera-edit-ruby-")
    try:
        todo = cases(a.count, a.seed)
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            done = list(pool.map(run_one, [(hiera, work, i, c) for i, c in enumerate(todo)]))
        judge = []
        for i, d in enumerate(done):
            what = "%s: %s %r %r" % (d["name"], "unset" if d["unset"] else "set", d["key"], d["value"][:60])
            if d["rc"] == "timeout":
                check(False, what + ": no answer in 30 s")
            elif d["rc"] in (1, 2):
                check(d["new"] == d["old"] and d["err"].strip() != "", what + ": refused (exit %s) but %s" %
                      (d["rc"], "the file changed" if d["new"] != d["old"] else "nothing said"))
            elif d["rc"] != 0:
                check(False, what + ": exit %s: %s" % (d["rc"], d["err"][:300]))
            else:
                old_p, new_p = os.path.join(work, "o%d.yaml" % i), os.path.join(work, "n%d.yaml" % i)
                with open(old_p, "wb") as f:
                    f.write(d["old"])
                with open(new_p, "wb") as f:
                    f.write(d["new"])
                judge.append((what, {"old": old_p, "new": new_p, "key": d["key"], "value": d["value"],
                                     "unset": d["unset"], "changed": d["new"] != d["old"]}))
        jobs = os.path.join(work, "jobs.json")
        with open(jobs, "w") as f:
            json.dump([j for _, j in judge], f)
        r = subprocess.run(["ruby", os.path.join(HERE, "rb-yaml.rb"), "edits", jobs], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("ruby failed: " + r.stderr)
        for (what, _), ans in zip(judge, json.loads(r.stdout)):
            check(ans["ok"], what + ": " + ans.get("why", ""))
        written = sum(1 for _, j in judge if j["changed"])
        print("%d edits: %d written, %d unchanged, %d refused" %
              (len(done), written, len(judge) - written, len(done) - len(judge)))
        check(written > len(done) // 2, "fewer than half of the edits were written: the generator tests little")
        reasons = collections.Counter(
            re.sub(r"'[^']*'|\"[^\"]*\"|\d+|/\S+", "_", re.sub(r".*cannot (set|remove) '.*?': ", "", d["err"].strip().splitlines()[-1]))[:90]
            for d in done if d["rc"] in (1, 2) and d["err"].strip())
        for reason, n in reasons.most_common(8):
            print("  refused %4d: %s" % (n, reason))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
