#!/bin/sh
# check.sh - Ansible's community.general.hiera lookup (Debian package `ansible`) against our
# `hiera` command: the plugin runs `hiera -c CONFIG TERM...` (found on PATH here) and returns its
# stripped output, which Ansible then templates. Every expectation below is what the same
# playbook gives with Hiera 3.10's own /usr/bin/hiera (checked with ansible 7.7 / ansible-core
# 2.14 on Debian 12; about 6 s for the whole playbook).
#
# usage: tests/ansible/check.sh [HIERA_BINARY]     (default: build/hiera)
# Skips (0 passed, 0 failed) when ansible-playbook or the community.general collection is
# missing. Ends with 'N passed, N failed'; exit status 1 when a check failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/hiera}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
# the collection is looked for with ansible's own Python (its script's #! line)
ap=$(command -v ansible-playbook 2>/dev/null)
py=${ap:+$(sed -n '1s/^#! *//p' "$ap")}
if [ -z "$ap" ] || [ -z "$py" ] ||
   ! $py -c 'import ansible_collections.community.general' >/dev/null 2>&1; then
    echo "ansible (with community.general) is not installed: skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
if [ ! -x "$bin" ]; then
    echo "no hiera binary at $bin"
    echo "0 passed, 1 failed"
    exit 1
fi
tmp=$(mktemp -d /tmp/hiera-ansible-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/data/nodes" "$tmp/data/env"
ln -s "$bin" "$tmp/bin/hiera"

cat > "$tmp/hiera.yaml" <<CFG
---
:backends: [yaml]
:hierarchy: ["nodes/%{fqdn}", "env/%{environment}", common]
:yaml:
  :datadir: $tmp/data
CFG
cat > "$tmp/data/common.yaml" <<'DATA'
ntp_server: pool.ntp.org
packages: [vim, curl]
users: {alice: 1000}
message: "hello from %{environment}"
DATA
cat > "$tmp/data/env/production.yaml" <<'DATA'
ntp_server: ntp.prod.example.com
packages: [nginx]
users: {bob: 1001}
DATA
echo 'ntp_server: ntp.web01' > "$tmp/data/nodes/web01.example.com.yaml"

# term | expected msg as Python's repr of what Ansible shows
cat > "$tmp/cases" <<'CASES'
ntp_server|'pool.ntp.org'
ntp_server environment=production|'ntp.prod.example.com'
ntp_server fqdn=web01.example.com environment=production|'ntp.web01'
packages|['vim', 'curl']
packages -a environment=production|['nginx', 'vim', 'curl']
users|'{"alice"=>1000}'
users -h environment=production|'{"alice"=>1000, "bob"=>1001}'
users -f json -h environment=production|{'alice': 1000, 'bob': 1001}
message environment="staging area"|'hello from staging area'
missing|'nil'
missing fallback|'fallback'
CASES

# the playbook: one debug task per term; the terms travel as variables (JSON is valid YAML)
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
terms = [l.rstrip("\n").split("|", 1)[0] for l in open(tmp + "/cases") if l.strip()]
with open(tmp + "/play.yml", "w") as f:
    f.write("- hosts: localhost\n  gather_facts: false\n  vars:\n")
    for i, t in enumerate(terms):
        f.write(f"    term{i}: {json.dumps(t)}\n")
    f.write("  tasks:\n")
    for i in range(len(terms)):
        f.write(f"    - debug:\n        msg: \"{{{{ lookup('community.general.hiera', term{i}) }}}}\"\n")
PY

(cd "$tmp" && PATH="$tmp/bin:$PATH" HIERA_CACHE_DIR="$tmp/diskcache" ANSIBLE_HIERA_BIN=hiera ANSIBLE_HIERA_CFG="$tmp/hiera.yaml" \
    ANSIBLE_STDOUT_CALLBACK=json ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false \
    ANSIBLE_NOCOLOR=1 ansible-playbook -i localhost, -c local play.yml > out.json 2> err.txt)

python3 - "$tmp" <<'PY'
import ast, json, sys
tmp = sys.argv[1]
cases = [l.rstrip("\n").split("|", 1) for l in open(tmp + "/cases") if l.strip()]
try:
    tasks = json.load(open(tmp + "/out.json"))["plays"][0]["tasks"]
except Exception as e:
    print("ansible-playbook gave no result:", e, open(tmp + "/err.txt").read()[-2000:])
    print(f"0 passed, {len(cases)} failed")
    sys.exit(1)
passed = failed = 0
for (term, want), task in zip(cases, tasks):
    got = task["hosts"]["localhost"].get("msg")
    if got == ast.literal_eval(want):
        passed += 1
    else:
        failed += 1
        print(f"FAIL {term!r}: expected {want}, got {got!r}")
failed += len(cases) - len(tasks)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
