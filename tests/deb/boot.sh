#!/bin/sh
# tests/deb/boot.sh DIR: the hiera-serve service under a real systemd, as PID 1 of a container.
# A Debian 12 root from fresh-machine's base (/tmp/fresh/bookworm-base.tgz) gets systemd and the
# packages of DIR (apt-get install ./*.deb), the example control repository at Debian's Puppet
# folders (/etc/puppet/code, /var/cache/puppet/yaml/facts: the package's default options), and is
# booted with systemd-nspawn (private network). Inside (tests/deb/boot-checks.sh): systemctl start
# returns once the server answers (Type=notify) and its status names the generation; it runs as
# _hiera in its sandbox (the file system read-only but its cache); systemctl reload and a changed
# data file make new generations; systemctl stop ends it cleanly; the socket unit starts it on
# the first connection with the socket systemd listens on; a reinstall restarts it; and
# systemd-analyze security rates it as the offline check did. Run by tests/deb/check.sh after the
# fresh root's checks (as root; installs systemd-container, systemd-nspawn, when missing).
# Prints "deb-boot: N passed, N failed".
set -u
debs=$1
cd "$(dirname "$0")/../.."
base=/tmp/fresh/bookworm-base.tgz
if ! command -v systemd-nspawn >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "deb-boot: installing systemd-container (systemd-nspawn)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=900 systemd-container >/dev/null 2>&1
fi
if ! command -v systemd-nspawn >/dev/null 2>&1; then
    echo "deb-boot: no systemd-nspawn (package systemd-container): the service is not booted"
    exit 0
fi
[ -f "$base" ] || { echo "deb-boot: no $base (made by ../shared/tools/fresh-machine)"; exit 1; }
ls "$debs"/hiera-serve_*.deb >/dev/null 2>&1 || { echo "deb-boot: no packages in $debs"; exit 1; }

root=$(mktemp -d /tmp/deb-boot-XXXXXX)
nspawn=""
cleanup() {
    [ -n "$nspawn" ] && kill "$nspawn" 2>/dev/null && sleep 3
    for m in dev proc; do umount -l "$root/$m" 2>/dev/null; done
    rm -rf "$root"
}
trap cleanup EXIT

echo "== deb-boot: a root with systemd and the packages ($(date +%T))"
tar -C "$root" -xzf "$base"
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo deb-boot >"$root/etc/hostname"
# (in /root: the booted system mounts a fresh /tmp)
mkdir -p "$root/root/debs"
cp "$debs"/*.deb "$root/root/debs/"
# the example at Debian's Puppet folders, as /etc/default/hiera-serve names them
mkdir -p "$root/etc/puppet/code" "$root/var/cache/puppet/yaml/facts"
cp -r examples/control-repo/hiera.yaml examples/control-repo/data examples/control-repo/environments "$root/etc/puppet/code/"
cp examples/control-repo/facts/*.yaml "$root/var/cache/puppet/yaml/facts/"
cp tests/deb/boot-checks.sh "$root/root/boot-checks.sh"
mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev"
if ! chroot "$root" sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
        apt-get install -y -qq systemd systemd-sysv dbus curl procps &&
        apt-get install -y -qq $(ls /root/debs/*.deb | grep -v dbgsym)' >"$root.log" 2>&1; then
    tail -20 "$root.log"; rm -f "$root.log"
    echo "deb-boot: 0 passed, 1 failed (the root could not be made)"
    exit 1
fi
rm -f "$root.log"
umount "$root/dev" "$root/proc"

echo "== deb-boot: systemd-nspawn --boot ($(date +%T))"
systemd-nspawn -D "$root" --register=no --keep-unit --boot --console=passive --private-network \
    >"$root/nspawn.log" 2>&1 &
nspawn=$!
pid1=""
for _ in $(seq 1 120); do
    pid1=$(pgrep -P "$nspawn" -x systemd | head -1)
    [ -n "$pid1" ] && nsenter -t "$pid1" -a systemctl is-system-running 2>/dev/null | grep -qE 'running|degraded' && break
    sleep 1
done
if [ -z "$pid1" ]; then
    cat "$root/nspawn.log"
    echo "deb-boot: 0 passed, 1 failed (the container did not boot)"
    exit 1
fi
nsenter -t "$pid1" -a sh /root/boot-checks.sh
rc=$?
nsenter -t "$pid1" -a systemctl poweroff >/dev/null 2>&1
for _ in $(seq 1 30); do kill -0 "$nspawn" 2>/dev/null || break; sleep 1; done
nspawn=""
exit $rc
