#!/usr/bin/env python3
"""End-to-end checks of the hiera command's behaviour around Puppet's settings that recorded
cases (tests/cases, one `hiera lookup` per query, run as the recording user) cannot express:

  - the default confdir and codedir of each layout (Debian's package, Puppet's own packages) as
    root and as another user (run as "nobody" when this runs as root), and the layout guessed from
    the puppet found on PATH;
  - hiera batch reading puppet.conf, environment.conf and the modulepath as hiera lookup does,
    running config_version once, refusing what it cannot do;
  - the version and help of the command and its subcommands.

Everything is written in a scratch folder (removed at the end). Needs no Puppet.
usage: tests/cli/check.py --hiera build/hiera
Prints one line per failure and "N passed, N failed"; exit status 1 when anything failed.
"""
import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}" + (f"\n      {detail}" if detail else ""))


def write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)


def run(cmd, env=None, user=None, cwd=None):
    e = dict(os.environ)
    e["HIERA_CACHE_DIR"] = "off"
    e.update(env or {})
    if user:  # run as another user (name:group): setpriv keeps the environment we give
        uid, gid = user.split(":")
        cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, timeout=60)


def header_version():
    with open(os.path.join(ROOT, "include", "hiera.h")) as f:
        m = re.search(r'#define HIERA_VERSION "([^"]+)"', f.read())
    return m.group(1)


def settings_tree(root):
    """A hiera.yaml that shows the settings the command resolved, and facts."""
    write(os.path.join(root, "show", "hiera.yaml"), "version: 5\nhierarchy:\n  - {name: s, path: s.yaml}\n")
    write(os.path.join(root, "show", "data", "s.yaml"),
          'dirs: "%{settings::confdir}|%{settings::codedir}|%{settings::vardir}|%{settings::basemodulepath}"\n')
    write(os.path.join(root, "facts.yaml"),
          "hostname: n1\ndomain: example.com\nfqdn: n1.example.com\nclientcert: n1.example.com\n")


def lookup(hiera, root, args, **kw):
    return run([hiera, "lookup", "--node", "n1.example.com", "--facts", os.path.join(root, "facts.yaml"),
                "--render-as", "json"] + args, **kw)


def check_layouts(hiera, root):
    settings_tree(root)
    show = ["--hiera_config", os.path.join(root, "show", "hiera.yaml"), "--environmentpath", os.path.join(root, "envs")]
    os.makedirs(os.path.join(root, "envs", "production"), exist_ok=True)
    as_root = os.getuid() == 0
    if as_root:
        for layout, want in (("debian", "/etc/puppet|/etc/puppet/code|/var/cache/puppet|/etc/puppet/code/modules:/usr/share/puppet/modules"),
                             ("puppetlabs", "/etc/puppetlabs/puppet|/etc/puppetlabs/code|/opt/puppetlabs/puppet/cache|"
                                            "/etc/puppetlabs/code/modules:/opt/puppetlabs/puppet/modules")):
            # --config names a puppet.conf, so the system's is not read; the folders stay the defaults
            p = lookup(hiera, root, show + ["--config", os.path.join(root, "none.conf"), "dirs"], env={"HIERA_PUPPET_LAYOUT": layout})
            check(f"root defaults ({layout})", p.returncode == 0 and json.loads(p.stdout or "null") == want, p.stdout + p.stderr)
    # another user: the per-user folders, and the per-user puppet.conf is read
    user = None
    home = os.path.join(root, "home")
    os.makedirs(home, exist_ok=True)
    if as_root:
        gid = subprocess.run(["id", "-gn", "nobody"], capture_output=True, text=True)
        if shutil.which("setpriv") and gid.returncode == 0:
            user = "nobody:" + gid.stdout.strip()
            for d, _, files in os.walk(root):
                os.chmod(d, 0o777)
                for f in files:
                    os.chmod(os.path.join(d, f), 0o666)
            if not os.access(hiera, os.X_OK) or run([hiera, "version"], user=user).returncode != 0:
                print("skip: the hiera binary cannot be run as nobody here; per-user defaults not checked")
                return
        else:
            print("skip: no way to run as another user; per-user defaults not checked")
            return
    for layout, confdir, codedir, vardir in (
            ("debian", ".puppet/etc", ".puppet/code", ".puppet/cache"),
            ("puppetlabs", ".puppetlabs/etc/puppet", ".puppetlabs/etc/code", ".puppetlabs/opt/puppet/cache")):
        env = {"HIERA_PUPPET_LAYOUT": layout, "HOME": home}
        p = lookup(hiera, root, show + ["dirs"], env=env, user=user)
        want = f"{home}/{confdir}|{home}/{codedir}|{home}/{vardir}|{home}/{codedir}/modules:" + (
            "/usr/share/puppet/modules" if layout == "debian" else "/opt/puppetlabs/puppet/modules")
        check(f"user defaults ({layout})", p.returncode == 0 and json.loads(p.stdout or "null") == want, p.stdout + p.stderr)
        # the user's puppet.conf is read from there
        write(os.path.join(home, confdir, "puppet.conf"), f"[main]\nvardir = $confdir/../{layout}-var\n", 0o666)
        p = lookup(hiera, root, show + ["dirs"], env=env, user=user)
        got = json.loads(p.stdout or "null") or ""
        check(f"user puppet.conf ({layout})", p.returncode == 0 and got.split("|")[2] == os.path.normpath(f"{home}/{confdir}/../{layout}-var"),
              p.stdout + p.stderr)


def check_layout_guess(hiera, root):
    """The puppet on PATH decides the layout: a puppet elsewhere than Debian's /usr/bin/puppet is
    Puppet's own code (a gem), with Puppet's own folders."""
    if os.getuid() != 0:
        return  # the system folders are only the defaults for root
    settings_tree(root)
    fake = os.path.join(root, "gem", "bin", "puppet")
    write(fake, "#!/bin/sh\nexit 0\n", 0o755)
    args = ["--hiera_config", os.path.join(root, "show", "hiera.yaml"), "--environmentpath", os.path.join(root, "envs"),
            "--config", os.path.join(root, "none.conf"), "dirs"]
    os.makedirs(os.path.join(root, "envs", "production"), exist_ok=True)
    env = {"PATH": os.path.dirname(fake) + ":" + os.environ.get("PATH", "")}
    env.pop("HIERA_PUPPET_LAYOUT", None)
    e = dict(os.environ)
    e.pop("HIERA_PUPPET_LAYOUT", None)
    e.update(env)
    e["HIERA_CACHE_DIR"] = "off"
    p = subprocess.run([hiera, "lookup", "--node", "n1.example.com", "--facts", os.path.join(root, "facts.yaml"),
                        "--render-as", "json"] + args, capture_output=True, text=True, env=e)
    got = json.loads(p.stdout or "null") or ""
    check("a gem's puppet on PATH: Puppet's own layout", got.startswith("/etc/puppetlabs/puppet|"), p.stdout + p.stderr)


def batch_tree(root):
    write(os.path.join(root, "etc", "puppet.conf"), "[main]\ncodedir = $confdir/../code\n")
    env = os.path.join(root, "code", "environments", "production")
    write(os.path.join(env, "environment.conf"), "modulepath = site:modules:$basemodulepath\n")
    write(os.path.join(env, "hiera.yaml"), "version: 5\nhierarchy:\n  - {name: n, path: \"nodes/%{trusted.certname}.yaml\"}\n")
    write(os.path.join(env, "data", "nodes", "a.example.com.yaml"), "who: a\n")
    for mod, where in (("site/profile", "site"), ("modules/profile", "modules"), ("modules/ntp", "modules")):
        name = mod.split("/")[1]
        write(os.path.join(env, mod, "hiera.yaml"), "version: 5\n")
        write(os.path.join(env, mod, "data", "common.yaml"), f"{name}::x: {name} from {where}\n")
    write(os.path.join(root, "code", "modules", "base", "hiera.yaml"), "version: 5\n")
    write(os.path.join(root, "code", "modules", "base", "data", "common.yaml"), "base::x: base from code/modules\n")
    for n in ("a", "b"):
        write(os.path.join(root, "facts", f"{n}.example.com.yaml"),
              f"hostname: {n}\ndomain: example.com\nfqdn: {n}.example.com\nclientcert: {n}.example.com\n")
    failing = os.path.join(root, "code", "environments", "failing")
    write(os.path.join(failing, "environment.conf"), "config_version = bin/version.sh\n")
    write(os.path.join(failing, "bin", "version.sh"), "#!/bin/sh\necho broken checkout\nexit 3\n", 0o755)
    probe = os.path.join(root, "code", "environments", "probe")
    write(os.path.join(probe, "environment.conf"), f"config_version = bin/probe.sh {os.path.join(root, 'probe.out')}\n")
    write(os.path.join(probe, "bin", "probe.sh"),
          "#!/bin/sh\necho \"preload=${LD_PRELOAD-unset} saved=${HIERA_PRELOAD_SAVED-unset}\" > \"$1\"\n"
          "echo \"large=${MIMALLOC_LARGE_OS_PAGES-unset} set=${HIERA_LARGE_PAGES_SET-unset}\" >> \"$1\"\n"
          "echo \"mimalloc=$(grep -c libmimalloc /proc/$PPID/maps)\" >> \"$1\"\n"
          "echo \"started-with=$(tr '\\000' '\\n' < /proc/$PPID/environ | grep '^MIMALLOC_LARGE_OS_PAGES=')\" >> \"$1\"\n",
          0o755)
    counting = os.path.join(root, "code", "environments", "counting")
    write(os.path.join(counting, "environment.conf"), f"config_version = bin/count.sh {os.path.join(root, 'count')}\n")
    write(os.path.join(counting, "bin", "count.sh"), "#!/bin/sh\necho run >> \"$1\"\n", 0o755)


def large_pages_fit():
    """what src/cli/main.c's large_pages_fit decides: no huge page pool, transparent ones not off"""
    try:
        with open("/proc/sys/vm/nr_hugepages") as f:
            pool = f.read()
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            thp = f.readline()
    except OSError:
        return False
    return pool == "0\n" and "[never]" not in thp


def check_batch(hiera, root):
    batch_tree(root)
    keys = ["profile::x", "ntp::x", "base::x", "who"]
    confdir = ["--confdir", os.path.join(root, "etc")]
    p = run([hiera, "batch"] + confdir + ["--facts-dir", os.path.join(root, "facts"), "--jobs", "1"] + keys)
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    check("batch: modulepath from environment.conf", doc.get("a.example.com", {}).get("profile::x") == "profile from site",
          p.stdout + p.stderr)
    for node in ("a.example.com", "b.example.com"):
        for k in keys:
            q = run([hiera, "lookup"] + confdir + ["--node", node, "--facts", os.path.join(root, "facts", node + ".yaml"),
                                                   "--render-as", "json", k])
            want = json.loads(q.stdout) if q.returncode == 0 else None
            check(f"batch = lookup ({node} {k})", doc.get(node, {}).get(k) == want, f"batch {doc.get(node, {}).get(k)!r}, lookup {want!r}")
    p = run([hiera, "batch"] + confdir + ["--environment", "failing", "--facts-dir", os.path.join(root, "facts"), "who"])
    check("batch: a failing config_version stops the run", p.returncode == 1 and p.stdout == "" and
          "Execution of config_version command" in p.stderr and "returned 3: broken checkout" in p.stderr, p.stdout + p.stderr)
    p = run([hiera, "batch"] + confdir + ["--environment", "counting", "--facts-dir", os.path.join(root, "facts"), "--jobs", "2", "who"])
    with open(os.path.join(root, "count")) if os.path.exists(os.path.join(root, "count")) else open(os.devnull) as f:
        runs = f.read().count("run")
    check("batch: config_version runs once", p.returncode == 0 and runs == 1, f"{runs} runs; {p.stderr}")
    # the long runs start again with mimalloc preloaded (when the build names it); what they run
    # gets the environment the user gave
    flags = os.path.join(os.path.dirname(hiera), "flags")
    with_mi = open(flags).read().count("HIERA_MIMALLOC_SO") > 0 if os.path.exists(flags) else None
    out = os.path.join(root, "probe.out")
    # (and mimalloc takes 2 MiB pages in the runs over many nodes, unless the user said otherwise;
    # what they run gets MIMALLOC_LARGE_OS_PAGES as given too)
    for name, env, preload, mi, large in (("no LD_PRELOAD", {}, "unset", with_mi, "unset"),
                                          ("an empty LD_PRELOAD", {"LD_PRELOAD": ""}, "", with_mi, "unset"),
                                          ("MIMALLOC_LARGE_OS_PAGES=0", {"MIMALLOC_LARGE_OS_PAGES": "0"}, "unset", with_mi, "0"),
                                          ("HIERA_NO_MIMALLOC", {"HIERA_NO_MIMALLOC": "1"}, "unset", False, "unset")):
        if os.path.exists(out):
            os.unlink(out)
        e = dict(env)
        if "LD_PRELOAD" not in e:
            e["LD_PRELOAD"] = None
        full = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MIMALLOC_LARGE_OS_PAGES")}
        full.update({k: v for k, v in e.items() if v is not None})
        full["HIERA_CACHE_DIR"] = "off"
        p = subprocess.run([hiera, "batch"] + confdir + ["--environment", "probe", "--facts-dir", os.path.join(root, "facts"),
                                                         "--jobs", "1", "who"], capture_output=True, text=True, env=full,
                           timeout=60)
        got = open(out).read() if os.path.exists(out) else ""
        check(f"batch with {name}: its commands get LD_PRELOAD as given", p.returncode == 0 and
              f"preload={preload} saved=unset\n" in got, got + p.stderr)
        check(f"batch with {name}: its commands get MIMALLOC_LARGE_OS_PAGES as given",
              f"large={large} set=unset\n" in got, got)
        if mi is not None:
            check(f"batch with {name}: mimalloc {'loaded' if mi else 'not loaded'}",
                  ("mimalloc=0" not in got) == mi and "mimalloc=" in got, got)
            want = "1" if mi and large == "unset" and large_pages_fit() else large if large != "unset" else None
            check(f"batch with {name}: mimalloc {'told to take 2 MiB pages' if want == '1' else 'left as it is'}",
                  (f"started-with=MIMALLOC_LARGE_OS_PAGES={want}\n" if want else "started-with=\n") in got, got)
    for flag in ("--explain", "--compile", "--debug"):
        p = run([hiera, "batch"] + confdir + ["--facts-dir", os.path.join(root, "facts"), flag, "who"])
        check(f"batch refuses {flag}", p.returncode == 1 and "not supported" in p.stderr, p.stderr)
    p = run([hiera, "batch"] + confdir + ["--codedi", os.path.join(root, "nowhere"), "--facts-dir", os.path.join(root, "facts"), "base::x"])
    check("batch: an abbreviated setting is reported and not applied",
          p.returncode == 0 and "base from code/modules" in p.stdout and "--codedi is accepted by puppet lookup but not applied" in p.stderr,
          p.stdout + p.stderr)
    write(os.path.join(root, "etc-bad", "puppet.conf"), "[main]\ncodedir = $confdir/../code\nnot a setting\n")
    p = run([hiera, "batch", "--confdir", os.path.join(root, "etc-bad"), "--codedir", os.path.join(root, "code"),
             "--facts-dir", os.path.join(root, "facts"), "base::x"])
    check("batch: a puppet.conf that does not parse is reported once and ignored",
          p.returncode == 0 and p.stderr.count("Could not parse") == 1 and "(file: " in p.stderr, p.stdout + p.stderr)


def check_versions_and_help(hiera):
    v = header_version()
    for args in (["lookup", "--version"], ["lookup", "-V"], ["batch", "--version"], ["lookup", "--vers"]):
        p = run([hiera] + args)
        check(f"hiera {' '.join(args)}", p.returncode == 0 and p.stdout == v + "\n", p.stdout + p.stderr)
    p = run([hiera, "version"])  # (and which Puppet it answers as: check_puppet_version)
    check("hiera version", p.returncode == 0 and p.stdout.startswith(v + "\nanswers as Puppet "), p.stdout + p.stderr)
    p = run([hiera, "--version"])
    check("hiera --version is Hiera 3's", p.returncode == 0 and p.stdout == "3.10.0\n", p.stdout)
    p = run([hiera, "--help"])
    check("hiera --help lists the subcommands", p.returncode == 0 and all(f"    {s} " in p.stdout for s in ("lookup", "batch", "eyaml", "version"))
          and "Usage: hiera [options] key [default value]" in p.stdout, p.stdout)
    for args in (["lookup", "--help"], ["lookup", "-h"], ["batch", "--help"], ["batch", "-h"]):
        p = run([hiera] + args)
        check(f"hiera {' '.join(args)}", p.returncode == 0 and p.stdout.startswith("usage: hiera " + args[0]) and "--modulepath" in p.stdout,
              p.stdout + p.stderr)
    p = run([hiera, "--", "version"])
    check("hiera -- version is a Hiera 3 lookup", "0.2" not in p.stdout or p.returncode != 0, p.stdout)


def check_puppet_version(hiera, root):
    """Which Puppet hiera answers as: the puppet on PATH (its library's puppet/version.rb, read as
    text), HIERA_PUPPET_VERSION over it, --puppet-version over both; hiera version and --explain
    say which; a bad value is refused."""
    prefix = os.path.join(root, "prefix")
    write(os.path.join(prefix, "bin", "puppet"), "#!/bin/sh\nexit 3\n", 0o755)
    rb = os.path.join(prefix, "lib", "ruby", "vendor_ruby", "puppet", "version.rb")
    write(os.path.join(root, "hiera.yaml"), "version: 5\ndefaults: {datadir: data, data_hash: yaml_data}\n"
          "hierarchy: [{name: c, path: common.yaml}]\n")
    write(os.path.join(root, "data", "common.yaml"), "x: 'a%{nosuch}b'\n")
    write(os.path.join(root, "facts.yaml"), "role: web\n")
    base = dict(os.environ)
    base.pop("HIERA_PUPPET_VERSION", None)
    base.update(PATH=os.path.join(prefix, "bin") + ":" + os.environ.get("PATH", ""), HIERA_CACHE_DIR="off")

    def go(args, **env):
        e = dict(base, **env)
        return subprocess.run([hiera] + args, capture_output=True, text=True, env=e, cwd=root, timeout=60)
    look = ["lookup", "--codedir", root, "--confdir", root, "--hiera_config", os.path.join(root, "hiera.yaml"),
            "--node", "n1", "--facts", os.path.join(root, "facts.yaml"), "--render-as", "json", "x"]
    for installed, major in (("8.10.0", 8), ("7.23.0", 7), ("8.4.0", 8)):
        write(rb, "module Puppet\n  PUPPETVERSION = '%s'.freeze\nend\n" % installed)
        p = go(["version"])
        want = "answers as Puppet %s" % ("8.10 and Hiera 3.12" if major == 8 else "7.23 and Hiera 3.10")
        check("installed Puppet %s: hiera version" % installed, p.returncode == 0 and want in p.stdout and
              "the installed Puppet " + installed in p.stdout and "/lib/ruby/vendor_ruby/puppet/version.rb" in p.stdout, p.stdout + p.stderr)
        p = go(look)
        ok = (p.returncode == 1 and "Undefined variable 'nosuch'" in p.stderr) if major == 8 else \
             (p.returncode == 0 and p.stdout.strip() == '"ab"')
        check("installed Puppet %s: an undefined variable in data" % installed, ok, p.stdout + p.stderr)
    # Puppet 8 on PATH; the environment and the command line choose
    write(rb, "module Puppet\n  PUPPETVERSION = '8.10.0'.freeze\nend\n")
    p = go(["version"], HIERA_PUPPET_VERSION="7")
    check("HIERA_PUPPET_VERSION=7 over the installed 8", "Puppet 7.23" in p.stdout and "HIERA_PUPPET_VERSION=7" in p.stdout, p.stdout)
    p = go(look, HIERA_PUPPET_VERSION="7")
    check("HIERA_PUPPET_VERSION=7: the lookup as Puppet 7", p.returncode == 0 and p.stdout.strip() == '"ab"', p.stdout + p.stderr)
    p = go(look + ["--puppet-version", "7"], HIERA_PUPPET_VERSION="8")
    check("--puppet-version 7 over HIERA_PUPPET_VERSION=8", p.returncode == 0 and p.stdout.strip() == '"ab"', p.stdout + p.stderr)
    p = go(look + ["--strict", "warning"])
    check("as Puppet 8, --strict warning answers as Puppet 7", p.returncode == 0 and p.stdout.strip() == '"ab"' and
          "Warning: Undefined variable 'nosuch'" in p.stderr, p.stdout + p.stderr)
    p = go(look[:-3] + ["--explain", "x"])
    check("--explain says which Puppet on stderr", "hiera: explaining as Puppet 8.10 does" in p.stderr and
          "explaining as" not in p.stdout, p.stdout + p.stderr)
    # hiera batch follows the choice as lookup does
    write(os.path.join(root, "facts", "n1.yaml"), "role: web\n")
    batch = ["batch", "--codedir", root, "--confdir", root, "--hiera_config", os.path.join(root, "hiera.yaml"),
             "--facts-dir", os.path.join(root, "facts"), "x"]
    for v, want in (("7", '"x": "ab"'), ("8", "Undefined variable 'nosuch'")):
        p = go(batch + ["--puppet-version", v])
        check("hiera batch --puppet-version %s" % v, want in p.stdout and p.returncode == (0 if v == "7" else 2),
              p.stdout + p.stderr)
    # the result cache keeps an answer per Puppet (--puppet-version is not in the arguments it keys on)
    cache = os.path.join(root, "cache")
    time.sleep(2.1)  # (a run that read a file changed within the last two whole seconds is not kept: fsjournal.c racy())
    got = [go(look + ["--puppet-version", v], HIERA_CACHE_DIR=cache, HIERA_RESULT_CACHE_TRACE="1") for v in "7878"]
    check("result cache: one answer per Puppet", [p.returncode for p in got] == [0, 1, 0, 1] and
          "result cache: hit" in got[2].stderr and "result cache: hit" in got[3].stderr,
          " | ".join(p.stdout + p.stderr for p in got))
    for args, env in ((["version"], {"HIERA_PUPPET_VERSION": "9"}), (["--puppet-version", "6", "version"], {}),
                      (look + ["--puppet-version"], {})):
        p = go(args, **env)
        check("refused: %s %s" % (" ".join(args[-2:]), env), p.returncode != 0 and
              ("7 or 8" in p.stderr or "missing argument: --puppet-version" in p.stderr) and not p.stdout,
              p.stdout + p.stderr)
    # without any Puppet, Puppet 7 (PATH without puppet, and no library where the packages put it)
    if not any(os.path.exists(d) for d in ("/usr/lib/ruby/vendor_ruby/puppet/version.rb",
                                             "/opt/puppetlabs/puppet/lib/ruby/vendor_ruby/puppet/version.rb",
                                             "/usr/lib/ruby/vendor_ruby/hiera/version.rb")):
        p = go(["version"], PATH="/nonexistent")
        check("no Puppet installed: Puppet 7", "answers as Puppet 7.23" in p.stdout, p.stdout + p.stderr)


def check_hiera3_disk_cache(hiera, root):
    """Hiera 3's command keeps parsed YAML and JSON data files in the disk cache (the yaml backend
    comes first: its values lead the array): the second run answers from it as the first did, a changed file is read again, a broken one is an error as
    without the cache, and HIERA_CACHE_DIR=off writes nothing."""
    data = os.path.join(root, "data")
    pad = "".join("pad_%d: %d\n" % (i, i) for i in range(40))  # (small files are not cached)
    write(os.path.join(data, "common.yaml"), "greeting: hello\nlist: [a, b]\n" + pad)
    write(os.path.join(data, "extra.json"), json.dumps({"list": ["c"], "pad": "x" * 300}))
    cfg = os.path.join(root, "hiera.yaml")
    write(cfg, ":backends:\n  - yaml\n  - json\n:yaml:\n  :datadir: %s\n:json:\n  :datadir: %s\n"
               ":hierarchy:\n  - extra\n  - common\n" % (data, data))
    cache = os.path.join(root, "cache")
    env = {"HIERA_CACHE_DIR": cache}
    first = run([hiera, "-c", cfg, "-a", "list"], env=env)
    again = run([hiera, "-c", cfg, "-a", "list"], env=env)
    entries = [n for n in os.listdir(cache) if n.endswith(".hc")] if os.path.isdir(cache) else []
    check("hiera3 disk cache: entries written", len(entries) == 2, str(entries))
    check("hiera3 disk cache: same answer from the cache", first.returncode == 0 and first.stdout == again.stdout
          and '["a", "b", "c"]' in first.stdout, first.stdout + first.stderr + again.stdout)
    time.sleep(0.01)
    write(os.path.join(data, "common.yaml"), "greeting: hi\nlist: [z]\n" + pad)
    changed = run([hiera, "-c", cfg, "-a", "list"], env=env)
    check("hiera3 disk cache: a changed file is read again", '["z", "c"]' in changed.stdout, changed.stdout + changed.stderr)
    write(os.path.join(data, "common.yaml"), "greeting: [\n" + pad)
    broken = run([hiera, "-c", cfg, "greeting"], env=env)
    plain = run([hiera, "-c", cfg, "greeting"])
    check("hiera3 disk cache: a broken file fails as without the cache",
          broken.returncode == plain.returncode != 0 and broken.stderr == plain.stderr, broken.stderr + plain.stderr)
    off = os.path.join(root, "off")
    run([hiera, "-c", cfg, "-a", "list"], env={"HIERA_CACHE_DIR": "off", "HOME": off, "XDG_CACHE_HOME": ""})
    check("hiera3 disk cache: off writes nothing", not os.path.exists(off))


def check_deprecation_once(hiera, root):
    """Puppet.warn_once('deprecations', 'hiera.yaml', ...) keys every version 3 and 4 deprecation
    the same: with a v3 global hiera.yaml and a v3 one at the environment's root (as
    puppetinabox/controlrepo ships it, its global one copied out), Puppet 7.23's puppet lookup
    says it of the global one only, then that the environment's was ignored (its standard
    error, recorded on 2 December 2026)."""
    code = os.path.join(root, "code")
    write(os.path.join(root, "etc", "hiera.yaml"),
          "---\n:backends:\n  - yaml\n:hierarchy:\n  - global\n:yaml:\n  :datadir: %s/data\n" % root)
    write(os.path.join(root, "data", "global.yaml"), "k: v\n")
    write(os.path.join(code, "environments", "production", "hiera.yaml"),
          "---\n:backends:\n  - yaml\n:hierarchy:\n  - common\n")
    write(os.path.join(root, "facts.yaml"),
          "hostname: n1\ndomain: example.com\nfqdn: n1.example.com\nclientcert: n1.example.com\n")
    g, e = os.path.join(root, "etc", "hiera.yaml"), os.path.join(code, "environments", "production", "hiera.yaml")
    want = ("Warning: %s: Use of 'hiera.yaml' version 3 is deprecated. It should be converted to version 5\n"
            "   (file: %s)\n"
            "Warning: hiera.yaml version 3 found at the environment root was ignored\n"
            "   (file: %s)\n" % (g, g, e))
    r = lookup(hiera, root, ["--confdir", os.path.join(root, "etc"), "--codedir", code, "--hiera_config", g, "k"])
    check("deprecation said once: the global hiera.yaml's only", r.returncode == 0 and r.stdout.strip() == '"v"'
          and r.stderr == want, r.stdout + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    scratch = tempfile.mkdtemp(prefix="hiera-cli-")
    try:
        os.chmod(scratch, 0o755)
        check_layouts(hiera, os.path.join(scratch, "layouts"))
        check_layout_guess(hiera, os.path.join(scratch, "guess"))
        check_batch(hiera, os.path.join(scratch, "batch"))
        check_versions_and_help(hiera)
        check_puppet_version(hiera, os.path.join(scratch, "puppet-version"))
        check_hiera3_disk_cache(hiera, os.path.join(scratch, "hiera3-cache"))
        check_deprecation_once(hiera, os.path.join(scratch, "deprecation-once"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"cli: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
