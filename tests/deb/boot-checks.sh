#!/bin/sh
# Run by tests/deb/boot.sh inside a booted container (systemd is PID 1) where the packages are
# installed and the example control repository is at /etc/puppet/code: the hiera-serve service
# as an administrator uses it. Prints "deb-boot: N passed, N failed".
set -u
pass=0 fail=0
check() { # DESCRIPTION COMMAND...
    what=$1; shift
    if "$@"; then pass=$((pass + 1)); else echo "FAIL deb-boot: $what"; fail=$((fail + 1)); fi
}
prop() { systemctl show -p "$2" --value "$1"; }
url='http://127.0.0.1:8150/v1/lookup?node=web01.example.com&key='
answer() { curl -s --max-time 20 "$url$1" | sed -n 's/.*"value":\("[^"]*"\).*/\1/p'; }
# waits (30 s at most) until the service's status line matches
wait_status() {
    for _ in $(seq 1 60); do
        prop hiera-serve StatusText | grep -q "$1" && return 0
        sleep 0.5
    done
    echo "  (status: $(prop hiera-serve StatusText))"
    return 1
}

check "systemctl start hiera-serve" systemctl start hiera-serve
check "it is active" test "$(systemctl is-active hiera-serve)" = active
# READY=1 (the start ends) once the facts are read and the default environment is built
check "its status names the generation ($(prop hiera-serve StatusText))" \
    wait_status '^serving generation [0-9]*: 1 environments (1 built), 1 nodes$'
check "it answers once started (Type=notify): $(answer profile::base::motd)" \
    test "$(answer profile::base::motd)" = '"Welcome to web01 (Debian)"'
pid=$(prop hiera-serve MainPID)
check "it runs as _hiera ($(ps -o user= -p "$pid"))" test "$(ps -o user= -p "$pid")" = _hiera
check "no capabilities ($(grep CapEff /proc/$pid/status))" sh -c "grep -q '^CapEff:[[:space:]]*0*$' /proc/$pid/status"
check "NoNewPrivileges" sh -c "grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$pid/status"
check "a seccomp filter" sh -c "grep -q '^Seccomp:[[:space:]]*2' /proc/$pid/status"
check "its file system is read-only (/etc/puppet/code)" sh -c "! nsenter -t $pid -m sh -c 'touch /etc/puppet/code/x' 2>/dev/null"
check "but its cache folder (/var/cache/hiera-serve)" nsenter -t "$pid" -m sh -c 'touch /var/cache/hiera-serve/x && rm /var/cache/hiera-serve/x'
check "and it does not see /root (ProtectHome)" sh -c "! nsenter -t $pid -m ls /root/boot-checks.sh >/dev/null 2>&1"
check "its cache folder belongs to _hiera" test "$(stat -c %U /var/cache/hiera-serve)" = _hiera

generation() { prop hiera-serve StatusText | sed -n 's/^serving generation \([0-9]*\):.*/\1/p'; }
# waits (30 s at most) until the served generation is after $1
wait_generation_after() {
    for _ in $(seq 1 60); do
        g=$(generation)
        [ -n "$g" ] && [ "$g" -gt "$1" ] && return 0
        sleep 0.5
    done
    echo "  (status: $(prop hiera-serve StatusText))"
    return 1
}
gen=$(generation)
check "systemctl reload hiera-serve" systemctl reload hiera-serve
check "after the reload: a generation after $gen" wait_generation_after "${gen:-0}"
gen=$(generation)
printf 'profile::base::added: "from the test"\n' >>/etc/puppet/code/environments/production/data/common.yaml
check "a changed data file: a generation after $gen" wait_generation_after "${gen:-0}"
check "and its new key is answered: $(answer profile::base::added)" test "$(answer profile::base::added)" = '"from the test"'
check "the journal has its log" sh -c "journalctl -u hiera-serve --no-pager | grep -q 'hiera serve: listening on 127.0.0.1:8150'"

check "systemctl stop hiera-serve" systemctl stop hiera-serve
check "it stopped cleanly (Result=$(prop hiera-serve Result))" test "$(prop hiera-serve Result)" = success
check "its log says so" sh -c "journalctl -u hiera-serve --no-pager | grep -q 'hiera serve: stopped'"

# socket activation: systemd listens; the first connection starts the service
check "systemctl start hiera-serve.socket" systemctl start hiera-serve.socket
check "the service waits for a connection" test "$(systemctl is-active hiera-serve)" = inactive
check "the first request is answered: $(answer profile::base::motd)" test "$(answer profile::base::motd)" = '"Welcome to web01 (Debian)"'
check "the service runs" test "$(systemctl is-active hiera-serve)" = active
check "on the socket systemd passed" sh -c "journalctl -u hiera-serve --no-pager | grep -q 'listening on the socket systemd passed, port 8150'"

# an upgrade (here a reinstall) restarts the running service
old=$(prop hiera-serve MainPID)
check "apt-get install --reinstall hiera-c hiera-serve" sh -c \
    'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall $(ls /root/debs/hiera-c_*.deb /root/debs/hiera-serve_*.deb) >/dev/null 2>&1'
for _ in $(seq 1 40); do
    new=$(prop hiera-serve MainPID)
    [ "$new" != 0 ] && [ "$new" != "$old" ] && [ "$(systemctl is-active hiera-serve)" = active ] && break
    sleep 0.5
done
check "the reinstall restarted it (MainPID $old -> $new)" sh -c "[ '$new' != 0 ] && [ '$new' != '$old' ]"
check "and it answers: $(answer profile::base::motd)" test "$(answer profile::base::motd)" = '"Welcome to web01 (Debian)"'
check "systemctl stop hiera-serve.socket hiera-serve" systemctl stop hiera-serve.socket hiera-serve

exposure=$(systemd-analyze security hiera-serve.service 2>&1 | sed -n 's/.*Overall exposure level for hiera-serve.service: \([0-9.]*\).*/\1/p')
echo "deb-boot: systemd-analyze security (systemd running): exposure $exposure"
check "the exposure ($exposure) is at most 2.0" awk -v e="$exposure" 'BEGIN { exit !(e != "" && e + 0 <= 2.0) }'
# (--man=no: the container has no man-db; the fresh root's check verifies the units' man page)
verify=$(systemd-analyze verify --man=no hiera-serve.service hiera-serve.socket 2>&1)
[ -z "$verify" ] || echo "$verify" | sed 's/^/  systemd-analyze verify: /'
check "systemd-analyze verify" test -z "$verify"

echo "deb-boot: $pass passed, $fail failed"
[ "$fail" = 0 ]
