#!/usr/bin/env python3
"""The in-process Ansible lookup (ansible/: libhiera.hiera.hiera, over the hiera Python module)
against community.general.hiera running Hiera 3.10's own `hiera` (Debian's /usr/bin/hiera), with
the real ansible-playbook: one playbook asks 200 keys (values of every kind: strings, numbers,
booleans, nil, arrays and hashes short and long enough for pp to break lines, nested, Unicode,
multi-line text, keys not found, defaults, scope variables, -a and -h resolutions) through each
plugin; the answers Ansible ends with must be the same. Prints each run's time (bench/ansible.py
times them, with Ansible's own start-up apart) and 'N passed, N failed'.

usage: inprocess.py --pythonpath build/python [--hiera3 /usr/bin/hiera] [--keys 200]
Skips (0 passed, 0 failed) when ansible-playbook, community.general or Hiera 3.10's hiera is missing.
"""
import argparse, json, os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def values(n, rnd):
    """n (key, value) of every kind, as YAML text lines."""
    words = ["alpha", "beta", "gamma", "delta", "épsilon", "ζήτα", "with space", "colon: inside", "quote'd", "#hash"]
    out = []
    for i in range(n):
        k = i % 12
        if k == 0:
            v = json.dumps(rnd.choice(words) + str(i), ensure_ascii=False)
        elif k == 1:
            v = str(rnd.randint(-10**6, 10**6))
        elif k == 2:
            v = repr(rnd.randint(1, 10**6) / 7.0)
        elif k == 3:
            v = rnd.choice(["true", "false"])
        elif k == 4:
            v = "~"
        elif k == 5:
            v = json.dumps([rnd.choice(words) for _ in range(rnd.randint(0, 4))], ensure_ascii=False)
        elif k == 6:  # long enough for pp to break it over lines
            v = json.dumps([f"{rnd.choice(words)}-{j}-{'x' * rnd.randint(1, 12)}" for j in range(rnd.randint(6, 14))],
                           ensure_ascii=False)
        elif k == 7:
            v = json.dumps({f"k{j}": rnd.choice([j, f"v{j}", True, None, [j, str(j)]]) for j in range(rnd.randint(1, 5))})
        elif k == 8:  # nested, long
            v = json.dumps({f"section{j}": {"list": [f"item-{j}-{m}" for m in range(5)], "n": j, "flag": j % 2 == 0,
                                            "nested": {"deep": [1, 2.5, "three"]}} for j in range(rnd.randint(2, 4))})
        elif k == 9:
            v = json.dumps(f"line one {i}\nline two\n")
        elif k == 10:
            v = json.dumps({}) if i % 24 == 10 else json.dumps([])
        else:
            v = json.dumps(f"%{{::site}}-{i}")  # interpolated from the scope
        out.append((f"key{i:03d}", v))
    return out


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--pythonpath", required=True)
    ap.add_argument("--hiera3", default="/usr/bin/hiera")
    ap.add_argument("--keys", type=int, default=200)
    a = ap.parse_args(argv)
    a.hiera3 = os.path.abspath(a.hiera3)
    ap_bin = shutil.which("ansible-playbook")
    if not ap_bin or not os.path.exists(a.hiera3):
        print("ansible-playbook or Hiera 3.10's hiera is not installed: skipped\n0 passed, 0 failed")
        return 0
    py = open(ap_bin).readline()[2:].strip()
    if subprocess.run([py, "-c", "import ansible_collections.community.general"], capture_output=True).returncode:
        print("community.general is not installed: skipped\n0 passed, 0 failed")
        return 0
    tmp = tempfile.mkdtemp(prefix="hiera-ansible-inprocess-")
    try:
        return run(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prepare(tmp, nkeys):
    """The Hiera 3 data, configuration, terms and collection folder under tmp: the terms."""
    rnd = random.Random(33)
    data = os.path.join(tmp, "data")
    os.makedirs(os.path.join(data, "nodes"))
    kv = values(nkeys - 20, rnd)
    with open(os.path.join(data, "common.yaml"), "w") as f:
        for k, v in kv:
            f.write(f"{k}: {v}\n")
        f.write("merged_list: [common-a, common-b]\nmerged_hash: {common: 1, both: common}\n")
    with open(os.path.join(data, "nodes", "web01.yaml"), "w") as f:
        f.write("key000: \"web01's own\"\nmerged_list: [web-a]\nmerged_hash: {web: 2, both: web}\n")
    cfg = os.path.join(tmp, "hiera.yaml")
    with open(cfg, "w") as f:
        f.write(f":backends: [yaml]\n:yaml:\n  :datadir: {data}\n:hierarchy: ['nodes/%{{::fqdn}}', common]\n")
    terms = [f"{k} site=s1" for k, _ in kv]
    terms += ["key000 fqdn=web01", "merged_list -a fqdn=web01", "merged_hash -h fqdn=web01", "merged_hash fqdn=web01",
              "nope", "nope some_default", "nope 'two words'", "merged_list --array fqdn=web01 site=x",
              "key001 -f json", "key008 -f json", "key007 --format yaml", "key004", "key010", "key011",
              "key011 site=ünïcode", "merged_hash -h", "key006 fqdn=nobody", "key005 -a", "key009", "key003 -f json"]
    terms = terms[:nkeys]
    with open(os.path.join(tmp, "terms.json"), "w") as f:
        json.dump(terms, f)
    coll = os.path.join(tmp, "collections", "ansible_collections", "libhiera")
    os.makedirs(coll)
    os.symlink(os.path.join(ROOT, "ansible"), os.path.join(coll, "hiera"))
    return terms


PLUGINS = (("community.general.hiera", "community.general.hiera"), ("libhiera", "libhiera.hiera.hiera"))


def play(tmp, name, plugin, hiera3, pythonpath, terms_file=None):
    """One ansible-playbook run asking every term of terms_file (default: tmp/terms.json) through
    plugin: (seconds, answers), or (seconds, None) after printing why it failed."""
    terms_file = terms_file or os.path.join(tmp, "terms.json")
    out = os.path.join(tmp, name + ".json")
    play = os.path.join(tmp, name + ".yml")
    with open(play, "w") as f:
        f.write(f"""- hosts: localhost
  gather_facts: false
  vars:
    terms: "{{{{ lookup('file', '{terms_file}') | from_json }}}}"
  tasks:
    - name: every term
      ansible.builtin.set_fact:
        answers: "{{% set r = [] %}}{{% for t in terms %}}{{% set _ = r.append(lookup('{plugin}', t)) %}}{{% endfor %}}{{{{ r }}}}"
    - name: written out
      ansible.builtin.copy:
        content: "{{{{ answers | to_json }}}}"
        dest: "{out}"
""")
    env = dict(os.environ, ANSIBLE_HIERA_CFG=os.path.join(tmp, "hiera.yaml"), ANSIBLE_HIERA_BIN=hiera3,
               PYTHONPATH=os.path.abspath(pythonpath),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(tmp, "collections") + ":/usr/share/ansible/collections:/usr/lib/python3/dist-packages",
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "ansible-tmp"), ANSIBLE_HOME=os.path.join(tmp, "ansible-home"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_DEPRECATION_WARNINGS="false", HIERA_CACHE_DIR=os.path.join(tmp, "cache"))
    t0 = time.monotonic()
    p = subprocess.run(["ansible-playbook", "-i", "localhost,", "-c", "local", play], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - t0
    if p.returncode:
        print(f"FAIL {name}: ansible-playbook exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        return seconds, None
    with open(out) as f:
        return seconds, json.load(f)


def run(a, tmp):
    terms = prepare(tmp, a.keys)
    times, answers = {}, {}
    for name, plugin in PLUGINS:
        times[name], answers[name] = play(tmp, name, plugin, a.hiera3, a.pythonpath)
        if answers[name] is None:
            print("0 passed, 1 failed")
            return 1
    theirs, ours = answers["community.general.hiera"], answers["libhiera"]
    passed = failed = 0
    for t, x, y in zip(terms, theirs, ours):
        if x == y:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {t!r}: community.general.hiera {json.dumps(x, ensure_ascii=False)[:300]}\n"
                  f"      libhiera.hiera.hiera    {json.dumps(y, ensure_ascii=False)[:300]}")
    if len(theirs) != len(terms) or len(ours) != len(terms):
        failed += 1
        print(f"FAIL: {len(terms)} terms, {len(theirs)} and {len(ours)} answers")
    print(f"{len(terms)} terms: community.general.hiera ({a.hiera3}, a process per term) "
          f"{times['community.general.hiera']:.1f} s, libhiera.hiera.hiera (in-process) {times['libhiera']:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
