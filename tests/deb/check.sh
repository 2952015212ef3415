#!/bin/sh
# make check-deb (and .ci/run): the Debian packages, tried as an administrator would. First in a
# fresh Debian 12 root made by ../shared/tools/fresh-machine from a clean clone of the committed
# tree (tests/deb/in-root.sh: build, lintian, install, use); then the service under a real
# systemd, the packages built there booted in a container (tests/deb/boot.sh, when
# systemd-nspawn is installed). Needs root and ../shared; without them it says why and skips.
set -e
cd "$(dirname "$0")/../.."
fm=../shared/tools/fresh-machine
if [ ! -x "$fm" ]; then
    echo "deb: no $fm: the packages are not checked in a fresh root"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "deb: not root: the packages are not checked in a fresh root (fresh-machine needs chroot)"
    exit 0
fi
start=$(date +%s)
tmp=$(mktemp -d /tmp/deb-check-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The package build in the root skips the tests it would run (DEB_BUILD_OPTIONS=nocheck, and the
# build profile nocheck: scripts/deb.sh), and builds two files at a time (parallel=2: the
# machine's two cores). Those tests are the unit tests and recorded cases of make check, which
# .ci/run has run on the same commit just before; nocheck must not change the packages (Debian
# policy 4.9.1, and the build profiles' rule), and what this check is for (the build from a clean
# clone with only debian/control's Build-Depends, lintian, the installed packages at work) is all
# still done. CHECK_DEB_BUILD_OPTIONS=parallel=2 runs them too, as a Debian build daemon would.
opts=${CHECK_DEB_BUILD_OPTIONS-nocheck parallel=2}
case $opts in *\'*) echo "deb: CHECK_DEB_BUILD_OPTIONS has a quote" >&2; exit 2 ;; esac
# the root's output as it comes (sed -u: mawk would hold it in its input buffer), but the
# packages it exports at the end (tests/deb/in-root.sh), which go to a file
{ rc=0; "$fm" . "DEB_BUILD_OPTIONS='$opts' sh tests/deb/in-root.sh --export" || rc=$?; echo "$rc" >"$tmp/rc"; } |
    sed -u -n -e '/^==BEGIN DEBS==$/,/^==END DEBS==$/ { /^==/d; w '"$tmp/debs.b64" -e 'd; }' -e p
rc=$(cat "$tmp/rc")
echo "deb: the fresh root's check took $(( $(date +%s) - start )) s"
# the service is booted whenever the root made its packages, also after a failed check there
# (one run then says all that fails)
if [ ! -s "$tmp/debs.b64" ]; then
    echo "deb-boot: no packages came out of the fresh root: the service is not booted"
    exit "$((rc ? rc : 1))"
fi
mkdir "$tmp/debs"
base64 -d "$tmp/debs.b64" | tar -C "$tmp/debs" -xf -
start=$(date +%s)
brc=0
sh tests/deb/boot.sh "$tmp/debs" || brc=$?
echo "deb-boot: the service's check took $(( $(date +%s) - start )) s"
[ "$rc" = 0 ] || exit "$rc"
exit $brc
