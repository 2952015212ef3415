#!/usr/bin/env python3
"""The fast path of `hiera diff` (only the keys whose answers can differ are looked up again)
against a full comparison (--full: every key, every node), on random trees and random edits
(tests/diff/difftree.py): both must report exactly the same changes. Some rounds compare two
revisions of a git repository instead of two folders, and must report what the folders do.

usage: fastpath.py --hiera build/hiera [--rounds N] [--seed S] [--keep DIR]
Exit status 1 when a round differs (its trees are kept under --keep, default a temporary folder).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import difftree  # noqa: E402


def run_diff(hiera, old, new, extra, env):
    cmd = [hiera, "diff", old, new, "--facts-dir", os.path.join(old if not extra or "--git-dir" not in extra else
                                                                 extra[extra.index("--git-dir") + 1], "facts"),
           "--hiera_config", "hiera.yaml", "--format", "json", "--jobs", "2"] + (extra or [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode not in (0, 1, 2) or not p.stdout.strip():
        return None, "exit %d: %s" % (p.returncode, p.stderr[-800:])
    try:
        return json.loads(p.stdout), p.stderr
    except ValueError:
        return None, "bad JSON: %s" % p.stdout[:300]


def essential(doc):
    """What both runs must agree on: the changes, not how many lookups they took (nor the warnings
    those lookups met: the fast path looks up only the keys that can change)."""
    d = dict(doc)
    d.pop("fast_path", None)
    d.pop("warnings", None)
    d.pop("old", None)
    d.pop("new", None)
    s = dict(d["summary"])
    s.pop("lookups", None)
    s.pop("keys_looked_up", None)
    d["summary"] = s
    return d


def git(args, cwd):
    subprocess.run(["git"] + args, cwd=cwd, check=True, capture_output=True,
                   env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                            GIT_COMMITTER_EMAIL="t@t"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", default=None)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    seed = args.seed if args.seed is not None else 1000
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
    top = tempfile.mkdtemp(prefix="hiera-diff-fastpath-")
    failures = 0
    changed_rounds = 0
    checked = 0
    for i in range(args.rounds):
        s = seed + i
        rnd = random.Random(s)
        base = difftree.gen_tree(rnd, nnodes=rnd.randrange(2, 5))
        difftree.maybe_break(base, rnd)
        new = base.copy()
        edits = [difftree.edit(new, rnd) for _ in range(rnd.randrange(1, 4))]
        d = os.path.join(top, "round-%d" % s)
        old_dir, new_dir = os.path.join(d, "old"), os.path.join(d, "new")
        base.write(old_dir)
        new.write(new_dir)
        use_git = rnd.random() < 0.25
        extra = []
        a, b = old_dir, new_dir
        if use_git:
            repo = os.path.join(d, "repo")
            os.makedirs(repo)
            git(["init", "-q"], repo)
            shutil.copytree(old_dir, repo, dirs_exist_ok=True)
            git(["add", "-A"], repo)
            git(["commit", "-q", "-m", "old"], repo)
            git(["tag", "old"], repo)
            for name in os.listdir(repo):
                if name != ".git":
                    p = os.path.join(repo, name)
                    shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
            shutil.copytree(new_dir, repo, dirs_exist_ok=True)
            git(["add", "-A"], repo)
            git(["commit", "-q", "-m", "new", "--allow-empty"], repo)
            extra = ["--git-dir", repo]
            a, b = "old", "HEAD"
        fast, err1 = run_diff(hiera, a, b, extra, env)
        full, err2 = run_diff(hiera, a, b, extra + ["--full"], env)
        ok = fast is not None and full is not None and essential(fast) == essential(full)
        if ok and use_git:
            plain, err3 = run_diff(hiera, old_dir, new_dir, [], env)
            ok = plain is not None and essential(plain) == essential(fast)
            if not ok:
                err1 = "git sides differ from folders: " + (err3 or "")
        checked += 1
        if ok and fast["summary"]["changes"]:
            changed_rounds += 1
        if not ok:
            failures += 1
            print("seed %d (%s%s): the fast path differs from the full comparison" %
                  (s, "; ".join(edits), ", git" if use_git else ""))
            if fast is None or full is None:
                print("  " + (err1 or "") + (err2 or ""))
            else:
                ef, eu = essential(fast), essential(full)
                for k in ef:
                    if ef[k] != eu.get(k):
                        print("  %s:\n    fast: %s\n    full: %s" % (k, json.dumps(ef[k])[:600], json.dumps(eu.get(k))[:600]))
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                shutil.copytree(d, os.path.join(args.keep, "round-%d" % s), dirs_exist_ok=True)
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(top, ignore_errors=True)
    print("hiera diff fast path: %d rounds (%d with changes), %d differ from the full comparison"
          % (checked, changed_rounds, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
