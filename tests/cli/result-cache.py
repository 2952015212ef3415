#!/usr/bin/env python3
"""Checks the result cache of one-shot calls (src/cli/result_cache.c, src/base/fsjournal.c):

  - a kept answer is given again byte for byte (standard output, standard error, exit status)
    for values, misses, errors, --explain, several keys, and the Hiera 3 command;
  - it is not given again after any change that could change it: a data file edited in place
    with the same size, a file created where the hierarchy found none, a file added to a globbed
    folder, a file removed, a symlink pointed elsewhere, the facts changed, hiera.yaml changed,
    another environment variable, another working folder, another hiera binary;
  - what is never kept: a decrypted eyaml value (and no entry holds its plaintext), an answer
    that needed the host's name, an answer over files changed a moment before;
  - the settings check's verdict, kept apart (.hk) for calls the cache cannot answer, is not used
    again once a variable the check read (HOME) or a setting (puppet.conf) changed;
  - HIERA_RESULT_CACHE=off and HIERA_CACHE_DIR=off keep nothing;
  - with strace installed: every file the command looks at during a run that is kept (every
    path of a file system call but the loader's and the cache folder's) is in the entry's record.

Everything is written in a scratch folder (removed at the end). Needs no Puppet.
usage: tests/cli/result-cache.py --hiera build/hiera
Prints one line per failure and "N passed, N failed"; exit status 1 when anything failed.
"""
import argparse
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

passed = failed = 0
TRACE = "hiera: result cache: "


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}" + (f"\n      {detail}" if detail else ""))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Run:
    def __init__(self, p):
        lines = p.stderr.splitlines(keepends=True)
        self.trace = "".join(l[len(TRACE):].strip() for l in lines if l.startswith(TRACE))
        self.stderr = "".join(l for l in lines if not l.startswith(TRACE))
        self.stdout = p.stdout
        self.rc = p.returncode

    def answer(self):
        return (self.rc, self.stdout, self.stderr)


def run(cmd, cache, env=None, cwd=None, off=False):
    e = dict(os.environ)
    e["HIERA_CACHE_DIR"] = cache
    e["HIERA_RESULT_CACHE_TRACE"] = "1"
    e.pop("HIERA_RESULT_CACHE", None)
    if off:
        e["HIERA_RESULT_CACHE"] = "off"
    for k, v in (env or {}).items():  # (None: not in the environment)
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return Run(subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, timeout=120))


def entries(cache):
    return sorted(glob.glob(os.path.join(cache, "*.hr")))


def read_entry(path):
    """(call, observations [(op, arg, err, path)], status, pieces [(fd, bytes)])"""
    with open(path, "rb") as f:
        d = f.read()
    assert d[:8] == b"HIERAR\x01\x00"
    p = 8
    (klen,) = struct.unpack_from("=I", d, p)
    p += 4
    call = d[p:p + klen]
    p += klen
    (n,) = struct.unpack_from("=I", d, p)
    p += 4
    obs = []
    for _ in range(n):
        op = chr(d[p])
        arg, err, plen = struct.unpack_from("=iiI", d, p + 1)
        p += 13
        path = d[p:p + plen].decode(errors="replace")
        p += plen
        if not err and op in "SLDO":
            p += 64
        elif not err and op in "KRVW":
            (tl,) = struct.unpack_from("=I", d, p)
            p += 4 + tl
        obs.append((op, arg, err, path))
    status, count = struct.unpack_from("=iI", d, p)
    p += 8
    pieces = []
    for _ in range(count):
        fd = d[p]
        (ln,) = struct.unpack_from("=I", d, p + 1)
        pieces.append((fd, d[p + 5:p + 5 + ln]))
        p += 5 + ln
    assert p == len(d)
    return call, obs, status, pieces


def tree(root):
    write(f"{root}/hiera.yaml", """---
version: 5
hierarchy:
  - name: global
    path: global.yaml
""")
    write(f"{root}/global-data/global.yaml", "{}\n")
    write(f"{root}/environments/production/hiera.yaml", """---
version: 5
defaults:
  datadir: data
  data_hash: yaml_data
hierarchy:
  - name: node
    path: nodes/%{trusted.certname}.yaml
  - name: dc
    glob: dc/%{facts.dc}/*.yaml
  - name: linked
    path: linked.yaml
  - name: common
    path: common.yaml
""")
    d = f"{root}/environments/production/data"
    write(f"{d}/common.yaml", """---
plain: common
merged:
  common: 1
list: [a, b]
interp: "dc is %{facts.dc}"
broken_alias: "%{alias('nowhere')}"
lookup_options:
  merged:
    merge: hash
""")
    write(f"{d}/dc/ams/net.yaml", "---\nmerged:\n  net: 2\nnetonly: n1\n")
    write(f"{d}/targets/a.yaml", "---\nlinkval: aaa\n")
    write(f"{d}/targets/b.yaml", "---\nlinkval: bbb\n")
    os.symlink(f"{d}/targets/a.yaml", f"{d}/linked.yaml")
    write(f"{root}/facts.yaml", "dc: ams\nfqdn: web1.example.com\nhostname: web1\ndomain: example.com\n"
                                "clientcert: web1.example.com\n")
    write(f"{root}/hiera3.yaml", f"""---
:backends: [yaml]
:yaml:
  :datadir: {d}
:hierarchy:
  - "dc/%{{dc}}/net"
  - common
""")


def lookup_cmd(hiera, root, *args):
    return [hiera, "lookup", "--codedir", root, "--environmentpath", f"{root}/environments",
            "--hiera_config", f"{root}/hiera.yaml", "--environment", "production",
            "--node", "web1.example.com", "--facts", f"{root}/facts.yaml"] + list(args)


def settle():
    """Files written less than a second or two before are not trusted (their times would not
    show a change in the same clock tick): wait past that."""
    time.sleep(2.1)


def same_twice(name, cmd, cache, **kw):
    """The first run keeps its answer, the second gives it again, both as a run without the cache."""
    ref = run(cmd, cache, off=True, **kw)
    first = run(cmd, cache, **kw)
    second = run(cmd, cache, **kw)
    check(f"{name}: kept", first.trace == "kept", f"trace {first.trace!r}")
    check(f"{name}: hit", second.trace == "hit", f"trace {second.trace!r}")
    check(f"{name}: first run's answer", first.answer() == ref.answer(), f"{first.answer()!r}\n      want {ref.answer()!r}")
    check(f"{name}: kept answer", second.answer() == ref.answer(), f"{second.answer()!r}\n      want {ref.answer()!r}")
    return ref


def changed(name, cmd, cache, mutate, expect_change=True, **kw):
    """After mutate(), the next run is not answered from the entry, and answers as a run without
    the cache does."""
    before = run(cmd, cache, **kw)
    check(f"{name}: answered before the change", before.trace == "hit", f"trace {before.trace!r}")
    mutate()
    after = run(cmd, cache, **kw)
    ref = run(cmd, cache, off=True, **kw)
    check(f"{name}: not from the entry", after.trace != "hit", f"trace {after.trace!r}")
    check(f"{name}: new answer", after.answer() == ref.answer(), f"{after.answer()!r}\n      want {ref.answer()!r}")
    if expect_change:
        check(f"{name}: the change shows", ref.answer() != before.answer(), f"{ref.answer()!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    work = tempfile.mkdtemp(prefix="hiera-result-cache-")
    try:
        root = os.path.join(work, "tree")
        cache = os.path.join(work, "cache")
        tree(root)
        d = f"{root}/environments/production/data"

        # a tree written a moment ago: nothing kept, and answers as without the cache
        fresh = run(lookup_cmd(hiera, root, "plain"), cache)
        check("fresh files: not kept", fresh.trace.startswith("not kept: a file it read changed"), fresh.trace)
        check("fresh files: answer", fresh.answer() == (0, "--- common\n", ""), repr(fresh.answer()))
        check("fresh files: no entry", entries(cache) == [], str(entries(cache)))
        settle()

        same_twice("value", lookup_cmd(hiera, root, "plain"), cache)
        same_twice("merged, json", lookup_cmd(hiera, root, "--render-as", "json", "merged"), cache)
        same_twice("not found", lookup_cmd(hiera, root, "nosuchkey"), cache)
        same_twice("error", lookup_cmd(hiera, root, "broken_alias"), cache)
        same_twice("explain", lookup_cmd(hiera, root, "--explain", "merged"), cache)
        same_twice("several keys", lookup_cmd(hiera, root, "--render-as", "s", "plain", "list", "interp"), cache)
        same_twice("hiera 3", [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "netonly"], cache)
        same_twice("hiera 3 hash merge", [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "-h", "merged"], cache)
        same_twice("usage error", [hiera, "lookup", "--no-such-option"], cache)

        # changes
        def edit_same_size():
            with open(f"{d}/common.yaml", "r+") as f:
                t = f.read()
                f.seek(0)
                f.write(t.replace("plain: common", "plain: COMMON"))
        changed("edited in place, same size", lookup_cmd(hiera, root, "plain"), cache, edit_same_size)
        settle()
        run(lookup_cmd(hiera, root, "plain"), cache)
        changed("a node file appears", lookup_cmd(hiera, root, "plain"), cache,
                lambda: write(f"{d}/nodes/web1.example.com.yaml", "plain: node\n"))
        settle()
        run(lookup_cmd(hiera, root, "--render-as", "json", "merged"), cache)
        changed("a globbed file appears", lookup_cmd(hiera, root, "--render-as", "json", "merged"), cache,
                lambda: write(f"{d}/dc/ams/more.yaml", "merged:\n  more: 3\n"))
        settle()
        run(lookup_cmd(hiera, root, "plain"), cache)
        changed("a file is removed", lookup_cmd(hiera, root, "plain"), cache,
                lambda: os.unlink(f"{d}/nodes/web1.example.com.yaml"))
        settle()
        run(lookup_cmd(hiera, root, "linkval"), cache)

        def relink():
            os.unlink(f"{d}/linked.yaml")
            os.symlink(f"{d}/targets/b.yaml", f"{d}/linked.yaml")
        changed("a symlink points elsewhere", lookup_cmd(hiera, root, "linkval"), cache, relink)
        settle()
        run(lookup_cmd(hiera, root, "interp"), cache)
        changed("the facts change", lookup_cmd(hiera, root, "interp"), cache,
                lambda: write(f"{root}/facts.yaml", "dc: sfo\nfqdn: web1.example.com\nhostname: web1\n"
                                                    "domain: example.com\nclientcert: web1.example.com\n"))
        settle()
        run(lookup_cmd(hiera, root, "plain"), cache)

        def drop_level():
            p = f"{root}/environments/production/hiera.yaml"
            with open(p) as f:
                t = f.read()
            write(p, t.replace("  - name: common\n    path: common.yaml\n", ""))
        changed("hiera.yaml changes", lookup_cmd(hiera, root, "plain"), cache, drop_level)
        settle()

        h3 = [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "netonly"]
        run(h3, cache)
        changed("hiera 3: the scope file changes", h3, cache,
                lambda: write(f"{root}/facts.yaml", "dc: ams\nfqdn: web1.example.com\nhostname: web1\n"
                                                    "domain: example.com\nclientcert: web1.example.com\n"))
        settle()

        # another call is another entry
        cmd = lookup_cmd(hiera, root, "netonly")
        same_twice("call", cmd, cache)
        # a variable hiera never reads changes nothing (hyperfine sets one of random length on
        # every run); one it reads is checked, and kept as a hash only
        other_env = run(cmd, cache, env={"HIERA_SOME_VARIABLE": "x"})
        check("a variable it does not read: from the entry", other_env.trace == "hit", other_env.trace)
        marker = f"{root}/modules-from-env-4242"
        read_env = run(cmd, cache, env={"PUPPETLIB": marker})
        check("a variable it reads (PUPPETLIB): not from the entry", read_env.trace == "kept", read_env.trace)
        again = run(cmd, cache, env={"PUPPETLIB": marker})
        check("a variable it reads, the same again: from the entry", again.trace == "hit", again.trace)
        back = run(cmd, cache)
        check("a variable it reads, unset again: not from the entry", back.trace == "kept", back.trace)
        held = [p for p in entries(cache) if marker.encode() in open(p, "rb").read()]
        check("no entry holds a variable's value", not held, str(held))
        rel = [hiera, "lookup", "--codedir", ".", "--environmentpath", "environments", "--hiera_config",
               "hiera.yaml", "--node", "web1.example.com", "--facts", "facts.yaml", "netonly"]
        same_twice("relative paths", rel, cache, cwd=root)
        other = os.path.join(work, "tree2")
        shutil.copytree(root, other, symlinks=True)
        write(f"{other}/environments/production/data/dc/ams/net.yaml", "netonly: other\n")
        os.utime(f"{other}/environments/production/data/dc/ams/net.yaml", (1, 1))
        in_other = run(rel, cache, cwd=other)
        check("another working folder: not from the entry", in_other.trace != "hit", in_other.trace)
        check("another working folder: its answer", in_other.stdout == "--- other\n", repr(in_other.stdout))
        copy = os.path.join(work, "hiera-copy")
        shutil.copy2(hiera, copy)
        by_copy = run([copy] + cmd[1:], cache)
        check("another binary: not from the entry", by_copy.trace != "hit", by_copy.trace)
        settle()

        # the search of PATH for Puppet (made once, before the command, under the journal): a
        # puppet installed in a folder of PATH before the one that held it is seen
        early = os.path.join(work, "bin-early")
        os.mkdir(early)
        os.utime(early, (1, 1))
        # (the Puppet to answer as left to the installed one, so that it is searched for: make
        # check chooses Puppet 7 with HIERA_PUPPET_VERSION, and then Hiera 3 need not search)
        penv = {"PATH": early + os.pathsep + os.environ.get("PATH", ""), "HIERA_PUPPET_VERSION": None}
        for what, pcmd in (("lookup", lookup_cmd(hiera, root, "netonly")),
                           ("hiera 3", [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "netonly"])):
            first = run(pcmd, cache, env=penv)
            second = run(pcmd, cache, env=penv)
            check(f"PATH search, {what}: kept, then from the entry", first.trace in ("kept", "hit") and
                  second.trace == "hit", f"{first.trace!r} {second.trace!r}")
            if shutil.which("strace") and subprocess.run(["strace", "-o", "/dev/null", "true"],
                                                         capture_output=True).returncode == 0:
                log = os.path.join(work, "path-strace.log")
                s = run(["strace", "-f", "-o", log, "-e", "trace=%file"] + pcmd, cache, env=penv)
                with open(log) as f:
                    asked = sum(1 for line in f if f'"{early}/puppet"' in line)
                check(f"PATH search, {what}: a kept answer searches PATH once", s.trace == "hit" and asked == 1,
                      f"{s.trace!r}, {asked} calls on {early}/puppet")
        fake = os.path.join(early, "puppet")
        write(fake, "#!/bin/sh\nexit 0\n")
        os.chmod(fake, 0o755)
        for what, pcmd in (("lookup", lookup_cmd(hiera, root, "netonly")),
                           ("hiera 3", [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "netonly"])):
            after = run(pcmd, cache, env=penv)
            ref = run(pcmd, cache, env=penv, off=True)
            check(f"PATH search, {what}: a puppet installed earlier on PATH: not from the entry",
                  after.trace != "hit", after.trace)
            check(f"PATH search, {what}: its answer", after.answer() == ref.answer(), f"{after.answer()!r} {ref.answer()!r}")
        os.unlink(fake)
        settle()

        # never kept
        eyaml_dir = os.path.join(work, "keys")
        subprocess.run([hiera, "eyaml", "createkeys", f"--pkcs7-private-key={eyaml_dir}/private_key.pkcs7.pem",
                        f"--pkcs7-public-key={eyaml_dir}/public_key.pkcs7.pem"], capture_output=True, check=True)
        secret = "s3cr3t-plaintext-4711"
        enc = subprocess.run([hiera, "eyaml", "encrypt", f"--pkcs7-public-key={eyaml_dir}/public_key.pkcs7.pem",
                              "-o", "string", "-s", secret], capture_output=True, text=True, check=True).stdout.strip()
        eroot = os.path.join(work, "etree")
        tree(eroot)
        write(f"{eroot}/environments/production/hiera.yaml", f"""---
version: 5
hierarchy:
  - name: secrets
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    datadir: data
    options:
      pkcs7_private_key: {eyaml_dir}/private_key.pkcs7.pem
      pkcs7_public_key: {eyaml_dir}/public_key.pkcs7.pem
""")
        write(f"{eroot}/environments/production/data/secrets.eyaml", f"---\npassword: {enc}\nopen: visible\n")
        settle()
        sec = run(lookup_cmd(hiera, eroot, "password"), cache)
        check("eyaml: decrypted", sec.stdout == f"--- {secret}\n", repr(sec.answer()))
        check("eyaml: not kept", sec.trace.startswith("not kept: a value was decrypted"), sec.trace)
        leaked = [p for p in glob.glob(os.path.join(cache, "*")) if secret.encode() in open(p, "rb").read()]
        check("eyaml: no entry holds the plaintext", not leaked, str(leaked))
        same_twice("eyaml file, a value in clear", lookup_cmd(hiera, eroot, "open"), cache)
        nonode = [a for a in lookup_cmd(hiera, root, "plain")]
        i = nonode.index("--node")
        del nonode[i:i + 2]
        host = run(nonode, cache)
        check("no --node (the host's name, facter): not kept", host.trace.startswith("not kept: "), host.trace)

        # the settings check's verdict, kept on its own (<16 hex digits>.hk) with what the check
        # observed: used again by a call the result cache cannot answer only while the settings
        # and every observation are the same
        def verdicts():
            return sorted(glob.glob(os.path.join(cache, "*.hk")))
        home = os.path.join(work, "home")
        os.makedirs(home)
        rundir = lookup_cmd(hiera, root, "--rundir", "~/run", "plain")
        hk = set(verdicts())
        ok = run(rundir, cache, env={"HOME": home})
        ref = run(rundir, "off", env={"HOME": home})
        check("settings check: the verdict kept", ok.answer() == ref.answer() and len(set(verdicts()) - hk) == 1 and
              "home" not in ref.stderr, f"{ok.answer()!r} {sorted(set(verdicts()) - hk)}\n      want {ref.answer()!r}")
        again = run(lookup_cmd(hiera, root, "--rundir", "~/run", "list"), cache, env={"HOME": home})
        ref = run(lookup_cmd(hiera, root, "--rundir", "~/run", "list"), "off", env={"HOME": home})
        check("settings check: another key, the verdict used", again.answer() == ref.answer(),
              f"{again.answer()!r}\n      want {ref.answer()!r}")
        # HOME, read by the check alone (~ in rundir): another HOME, another verdict
        rel = run(rundir, cache, env={"HOME": "relative/home"})
        ref = run(rundir, "off", env={"HOME": "relative/home"})
        check("settings check: a variable the check read changed", rel.answer() == ref.answer() and ref.rc != 0,
              f"{rel.answer()!r}\n      want {ref.answer()!r}")
        # puppet.conf, read before the check: a setting there changed, another verdict
        confdir = os.path.join(work, "confdir")
        write(f"{confdir}/puppet.conf", "[main]\nrundir = /nonexistent/run\n")
        settle()
        withconf = lookup_cmd(hiera, root, "--confdir", confdir, "plain")
        first = run(withconf, cache, env={"HOME": "relative/home"})
        ref = run(withconf, "off", env={"HOME": "relative/home"})
        check("settings check (puppet.conf): passes", first.answer() == ref.answer() and "home" not in ref.stderr,
              f"{first.answer()!r}\n      want {ref.answer()!r}")
        write(f"{confdir}/puppet.conf", "[main]\nrundir = ~/run\n")
        after = run(withconf, cache, env={"HOME": "relative/home"})
        ref = run(withconf, "off", env={"HOME": "relative/home"})
        check("settings check: a setting in puppet.conf changed", after.answer() == ref.answer() and ref.rc != 0,
              f"{after.answer()!r}\n      want {ref.answer()!r}")
        settle()

        # switched off
        n = len(entries(cache))
        off = run(lookup_cmd(hiera, root, "list"), cache, env={"HIERA_RESULT_CACHE": "off"})
        check("HIERA_RESULT_CACHE=off: no trace, nothing kept", off.trace == "" and len(entries(cache)) == n,
              off.trace)
        off = run(lookup_cmd(hiera, root, "list"), "off")
        check("HIERA_CACHE_DIR=off: no trace", off.trace == "", off.trace)

        # a terminal on standard output: not used (a person is reading)
        if shutil.which("script"):
            cmd = " ".join("'%s'" % a for a in lookup_cmd(hiera, root, "netonly"))
            p = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, HIERA_CACHE_DIR=cache, HIERA_RESULT_CACHE_TRACE="1"))
            check("a terminal: not used", TRACE not in p.stdout and TRACE not in p.stderr and "n1" in p.stdout,
                  repr(p.stdout[-200:]))

        # the record holds every file the command looked at
        works = shutil.which("strace") and subprocess.run(["strace", "-o", "/dev/null", "true"],
                                                          capture_output=True).returncode == 0
        if works:
            cache2 = os.path.join(work, "cache2")
            log = os.path.join(work, "strace.log")
            cmds = [lookup_cmd(hiera, root, "--render-as", "json", "merged"),
                    lookup_cmd(hiera, root, "--explain", "netonly"),
                    [hiera, "-c", f"{root}/hiera3.yaml", "-y", f"{root}/facts.yaml", "-a", "list"]]
            for k, cmd in enumerate(cmds):
                before = set(entries(cache2))
                s = run(["strace", "-f", "-o", log, "-e", "trace=%file,getdents64"] + cmd, cache2)
                new = sorted(set(entries(cache2)) - before)
                check(f"strace {k}: kept", s.trace == "kept" and len(new) == 1, s.trace)
                if len(new) != 1:
                    continue
                _, obs, _, _ = read_entry(new[0])
                recorded = {o[3] for o in obs}
                seen = set()
                with open(log) as f:
                    for line in f:
                        m = re.search(r'^\d*\s*(\w+)\((?:AT_FDCWD, |\d+, )?"([^"]*)"', line)
                        # the folder of the cache (made, and entries read by name in it) and
                        # the working folder (part of the call) are not what the answer is from
                        if m and m.group(1) not in ("execve", "getcwd", "mkdir") and \
                                not re.match(r"^[0-9a-f]{16}\.h[cr]", m.group(2)):
                            seen.add(m.group(2))
                # realpath(3) reads each leading folder as a link: the whole is recorded
                resolved = [o[3] for o in obs if o[0] == "R"]
                seen = {p for p in seen if not any(r.startswith(p + "/") for r in resolved)}
                # (/proc/self: the binary's identity is part of the call; a sanitizer's runtime
                # reads its maps, command line and environment)
                ignore = re.compile(r"^(/etc/ld\.so|/lib|/usr/lib/x86_64-linux-gnu/|/proc/self/|" +
                                    re.escape(cache2) + r"|$)")
                missing = sorted(p for p in seen if not ignore.match(p) and p not in recorded)
                check(f"strace {k}: every file looked at is recorded", not missing, " ".join(missing[:10]))
        else:
            print("result cache: strace is not installed or cannot trace here: the record's completeness is not checked")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"result cache: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
