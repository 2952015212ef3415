#!/bin/sh
# Run by tests/deb/check.sh inside a fresh Debian 12 root, as root, in a clean clone of the
# project: builds the packages (make deb: it installs dpkg-dev, debhelper and the build
# dependencies itself), runs lintian (no error, no warning), installs them with
# `apt-get install ./*.deb` beside Debian's Ruby hiera (whose /usr/bin/hiera is diverted), and
# tries them: hiera lookup on the example, the man pages and the bash completion, the README's C
# example and examples/*.c built with pkg-config against libhiera-dev (shared and static), the
# Python module when there is one, the dlopen'ed libraries against the package's dependencies,
# the service's user, systemd-analyze verify on the installed units and their exposure
# (systemd-analyze security, at most 2.0); then removes hiera-c and checks that Ruby's hiera is
# back. Prints "deb: N passed, N failed". With --export, the packages follow on standard output
# (a tar file in base64 between the lines ==BEGIN DEBS== and ==END DEBS==), for tests/deb/boot.sh
# outside the root.
set -u
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
pass=0 fail=0
check() { # DESCRIPTION COMMAND...
    what=$1; shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL deb: $what"; fail=$((fail + 1)); fi
}
step() { echo "== deb: $* ($(date +%T))"; }
apt() { apt-get -y -qq -o DPkg::Lock::Timeout=900 "$@" >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; return 1; }; }

step "apt-get update"
apt update || exit 1
# Debian's hiera (Ruby's Hiera 3, which puppet-agent needs) first, as on a Puppet server
step "Debian's Ruby hiera"
check "apt-get install hiera (Debian's Ruby Hiera 3)" apt install hiera
ruby_version=$(hiera --version 2>/dev/null)

step "make deb"
t0=$(date +%s)
if ! make deb; then
    echo "FAIL deb: make deb"
    echo "deb: $pass passed, $((fail + 1)) failed"
    exit 1
fi
echo "deb: make deb took $(( $(date +%s) - t0 )) s (DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-})"
debs=$(ls build/deb/*.deb)
for p in hiera-c libhiera1 libhiera-dev hiera-serve; do
    check "make deb built $p" sh -c "ls build/deb/${p}_*.deb >/dev/null"
done
if [ -d python ]; then
    check "make deb built python3-libhiera (the tree has python/)" sh -c 'ls build/deb/python3-libhiera_*.deb >/dev/null'
fi

step "lintian"
apt install lintian || true
lintian --info --display-info --fail-on error,warning build/deb/*.changes >/tmp/lintian.log 2>&1
lrc=$?
sed 's/^/  lintian: /' /tmp/lintian.log
check "lintian: no error and no warning (exit $lrc)" test "$lrc" = 0

step "apt-get install ./*.deb"
check "apt-get install ./build/deb/*.deb" apt install $(for d in $debs; do echo "./$d"; done)
for p in hiera-c libhiera1 libhiera-dev hiera-serve $([ -d python ] && echo python3-libhiera); do
    check "$p is installed" sh -c "dpkg-query -W -f='\${Status}' $p | grep -q 'install ok installed'"
done

step "the command"
# (hiera version: the version, then a line saying which Puppet and Hiera 3 it answers as)
check "/usr/bin/hiera is hiera-c's (hiera version: $(hiera version 2>&1))" \
    test "$(hiera version | head -1)" = "$(sed -n 's/^#define HIERA_VERSION "\(.*\)"/\1/p' include/hiera.h)"
check "Ruby's hiera is diverted to /usr/bin/hiera.ruby and still runs ($ruby_version)" \
    sh -c "[ -n '$ruby_version' ] && [ \"\$(hiera.ruby --version)\" = '$ruby_version' ]"
check "dpkg-divert lists hiera-c's diversions" sh -c 'dpkg-divert --list hiera-c | grep -q "/usr/bin/hiera to /usr/bin/hiera.ruby"'
repo=examples/control-repo
out=$(cd /tmp && HIERA_CACHE_DIR=off hiera lookup --codedir /root/project/$repo \
      --environmentpath /root/project/$repo/environments --node web01.example.com \
      --facts /root/project/$repo/facts/web01.example.com.yaml --render-as json profile::base::motd 2>&1)
check "hiera lookup on the example: $out" test "$out" = '"Welcome to web01 (Debian)"'
out=$(HIERA_CACHE_DIR=off hiera -c examples/hiera3/hiera.yaml -a -f json ntp::servers ::fqdn=web01.example.com 2>&1)
check "hiera (Hiera 3's command line) on the example: $out" \
    test "$out" = '["ntp.web01.example.com","0.pool.ntp.org","1.pool.ntp.org"]'
apt install man-db || true
for f in docs/*.[1-8]; do # every man page of the tree (hiera(1), hiera-lookup(1)... hiera-serve(8))
    page=${f#docs/} sec=${f##*.}; page=${page%.*}
    check "man page $page($sec)" sh -c "man -w $sec $page | grep -q /usr/share/man/man$sec/$page.$sec.gz"
done
check "hiera(1) is hiera-c's, Ruby's is hiera.ruby(1)" \
    sh -c 'man -w hiera.ruby >/dev/null && zcat /usr/share/man/man1/hiera.1.gz | grep -q hiera\\\\-serve'
out=$(bash -c 'source /usr/share/bash-completion/completions/hiera; COMP_LINE="hiera ser"; COMP_POINT=9;
               _hiera; echo "${COMPREPLY[*]}"' 2>&1)
check "bash completion (hiera ser -> $out)" test "$out" = serve

step "the dlopen'ed libraries are dependencies"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
deps=$(dpkg-query -W -f='${Depends}, ${Recommends}' hiera-c)
serve_deps=$(dpkg-query -W -f='${Depends}' hiera-serve)
for so in $(grep -rhoE '"lib[a-z0-9_]+\.so\.[0-9]+"' src | tr -d '"' | sort -u); do
    pkg=$(dpkg -S "/usr/lib/$multiarch/$so" 2>/dev/null | head -1 | cut -d: -f1)
    check "$so (dlopen'ed) comes from an installed package ($pkg)" test -n "$pkg"
    check "$so's package $pkg is a Depends or Recommends of hiera-c" sh -c "echo '$deps' | grep -qE '(^|, )$pkg( |,|\$)'"
done
# the library opens libcurl for PuppetDB's facts (src/facts), in any program that uses it
lib_deps=$(dpkg-query -W -f='${Depends}, ${Recommends}' libhiera1)
pkg=$(dpkg -S "/usr/lib/$multiarch/libcurl.so.4" 2>/dev/null | head -1 | cut -d: -f1)
check "libcurl.so.4's package $pkg is a Depends or Recommends of libhiera1" sh -c "echo '$lib_deps' | grep -qE '(^|, )$pkg( |,|\$)'"
for so in libmicrohttpd.so.12 libgnutls.so.30 libsystemd.so.0; do
    pkg=$(dpkg -S "/usr/lib/$multiarch/$so" 2>/dev/null | head -1 | cut -d: -f1)
    check "$so's package $pkg is a Depends of hiera-serve" sh -c "echo '$serve_deps' | grep -qE '(^|, )$pkg( |,|\$)'"
done

step "libhiera-dev: the README's C example and examples/*.c with pkg-config"
work=$(mktemp -d /tmp/deb-example-XXXXXX)
# the README's example, as it is written: /etc/puppetlabs/code, facts.yaml, ntp::servers
awk '/^## The library/ {lib = 1} lib && /^```c$/ {on = 1; next} on && /^```$/ {exit} on {print}' README.md > "$work/readme.c"
check "the README's C example is found" grep -q 'hiera_lookup_key' "$work/readme.c"
mkdir -p /etc/puppetlabs/code
cp -r $repo/. /etc/puppetlabs/code/
printf 'ntp::servers: [ntp1.example.com, ntp2.example.com]\n' >> /etc/puppetlabs/code/environments/production/data/common.yaml
cp $repo/facts/web01.example.com.yaml "$work/facts.yaml"
check "the README's example builds with pkg-config" sh -c "cc -o '$work/readme' '$work/readme.c' \$(pkg-config --cflags --libs hiera)"
out=$(cd "$work" && HIERA_CACHE_DIR=off ./readme 2>&1)
check "the README's example answers ($out)" test "$out" = '["ntp1.example.com","ntp2.example.com"]'
rm -rf /etc/puppetlabs
check "examples/api-example.c builds (shared)" sh -c "cc -o '$work/api' examples/api-example.c \$(pkg-config --cflags --libs hiera)"
check "examples/api-example.c builds (static)" sh -c "cc -o '$work/api-static' examples/api-example.c \$(pkg-config --cflags hiera) /usr/lib/$multiarch/libhiera.a \$(pkg-config --libs --static hiera | sed 's/-lhiera//')"
for ex in api api-static; do
    out=$(HIERA_CACHE_DIR=off "$work/$ex" $repo $repo/facts/web01.example.com.yaml web01.example.com profile::base::motd 2>&1)
    check "$ex answers ($out)" test "$out" = '"Welcome to web01 (Debian)"'
done
check "the shared example uses the packaged library" sh -c "ldd '$work/api' | grep -qE 'libhiera.so.1 => (/usr)?/lib/$multiarch/libhiera.so.1'"
check "examples/hiera3-example.c builds and answers" sh -c "cc -o '$work/h3' examples/hiera3-example.c \$(pkg-config --cflags --libs hiera) &&
    [ \"\$(HIERA_CACHE_DIR=off '$work/h3' examples/hiera3/hiera.yaml web01.example.com ntp::servers array)\" = '[\"ntp.web01.example.com\",\"0.pool.ntp.org\",\"1.pool.ntp.org\"]' ]"
rm -rf "$work"

if [ -d python ]; then
    step "python3-libhiera"
    # (from /tmp: the module must come from the package, not from the tree's python/)
    out=$(cd /tmp && python3 -c 'import hiera; print(hiera.__file__)' 2>&1)
    check "python3 -c 'import hiera' imports the package's module ($out)" \
        test "$out" = /usr/lib/python3/dist-packages/hiera/__init__.py
    out=$(cd /tmp && python3 - /root/project/$repo 2>&1 <<'PY'
import json, sys, hiera
repo = sys.argv[1]
h = hiera.Hiera(codedir=repo, environmentpath=repo + "/environments")
print(json.dumps(h.lookup("profile::base::motd", node="web01.example.com",
                          facts=repo + "/facts/web01.example.com.yaml")))
PY
)
    check "a lookup through the Python module on the example: $out" test "$out" = '"Welcome to web01 (Debian)"'
    so=$(ls /usr/lib/python3/dist-packages/hiera/_hiera*.so 2>/dev/null | head -1)
    check "the extension ($so) uses the packaged library" \
        sh -c "ldd '$so' | grep -qE 'libhiera.so.1 => (/usr)?/lib/$multiarch/libhiera.so.1'"
    check "the extension has no run path" sh -c "! readelf -d '$so' | grep -qE 'RPATH|RUNPATH'"
    # Debian's python3-hiera (hiera-py) installs another module hiera in the same folder
    check "python3-libhiera conflicts with Debian's python3-hiera" \
        sh -c "dpkg-query -W -f='\${Conflicts}' python3-libhiera | grep -qw python3-hiera"
    check "apt would remove python3-libhiera to install python3-hiera" \
        sh -c "apt-get -s install python3-hiera 2>&1 | grep -q '^Remv python3-libhiera'"
fi

step "the service"
check "the system user _hiera exists (systemd-sysusers)" sh -c 'getent passwd _hiera | grep -q ":/nonexistent:"'
check "/etc/default/hiera-serve is a conffile" sh -c "dpkg-query -W -f='\${Conffiles}' hiera-serve | grep -q /etc/default/hiera-serve"
check "the units are installed" test -f /lib/systemd/system/hiera-serve.service -a -f /lib/systemd/system/hiera-serve.socket
check "neither unit is enabled" sh -c '! ls /etc/systemd/system/*.wants/hiera-serve.* 2>/dev/null | grep -q .'
apt install systemd || true
verify=$(systemd-analyze verify /lib/systemd/system/hiera-serve.service /lib/systemd/system/hiera-serve.socket 2>&1)
vrc=$?
[ -z "$verify" ] || echo "$verify" | sed 's/^/  systemd-analyze verify: /'
check "systemd-analyze verify on the installed units: clean (exit $vrc)" test "$vrc" = 0 -a -z "$verify"
security=$(systemd-analyze security --offline=true /lib/systemd/system/hiera-serve.service 2>&1)
exposure=$(echo "$security" | sed -n 's/.*Overall exposure level for hiera-serve.service: \([0-9.]*\).*/\1/p')
echo "$security" | grep '✗' | sed 's/^/  systemd-analyze security: /'
echo "deb: systemd-analyze security: exposure $exposure"
check "the service's exposure ($exposure) is at most 2.0" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e + 0 <= 2.0) }'
check "/etc/default/hiera-serve sets HIERA_SERVE_OPTS" sh -c '. /etc/default/hiera-serve && echo "$HIERA_SERVE_OPTS" | grep -q -- --listen'

step "reinstall, then remove hiera-c: Ruby's hiera is back"
check "apt-get install --reinstall ./hiera-c_*.deb" apt install --reinstall ./build/deb/hiera-c_*.deb
check "after the reinstall, /usr/bin/hiera is still hiera-c's" test "$(hiera version)" != "$ruby_version"
check "apt-get remove hiera-c hiera-serve" apt remove hiera-c hiera-serve
check "/usr/bin/hiera is Ruby's again ($(hiera --version 2>&1))" test "$(hiera --version 2>&1)" = "$ruby_version"
check "no diversion is left" sh -c '! dpkg-divert --list | grep -q hiera-c'
check "hiera.1.gz is Ruby's again" sh -c '! zcat /usr/share/man/man1/hiera.1.gz | grep -q hiera\\\\-serve'

echo "deb: $pass passed, $fail failed"
if [ "${1:-}" = --export ]; then
    echo "==BEGIN DEBS=="
    (cd build/deb && ls *.deb | grep -v dbgsym | tar -cf - -T - | base64)
    echo "==END DEBS=="
fi
[ "$fail" = 0 ]
