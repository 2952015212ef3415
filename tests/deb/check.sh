#!/bin/sh
# make check-deb (and .ci/run): the Debian packages, tried as an administrator would, in a fresh
# Debian 12 root made by ../shared/tools/fresh-machine from a clean clone of the committed tree
# (tests/deb/in-root.sh does the work there). Needs root (chroot) and ../shared; without them it
# says why and skips. Prints "deb: N passed, N failed".
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
rc=0
"$fm" . 'sh tests/deb/in-root.sh' || rc=$?
echo "deb: the fresh root's check took $(( $(date +%s) - start )) s"
exit $rc
