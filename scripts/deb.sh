#!/bin/sh
# make deb: builds the Debian packages (debian/) with `dpkg-buildpackage -us -uc -b` in a copy of
# the tree's files (git's tracked and new files, not the ignored ones; every file but build*/
# outside git) in OUT/src/hiera-c-VERSION, and leaves the .deb, .changes and .buildinfo files in
# OUT (default build/deb). As root, installs what is missing first: dpkg-dev and debhelper, then
# debian/control's Build-Depends (apt-get build-dep). DEB_BUILD_OPTIONS is passed on (default
# parallel=2; nocheck skips the tests the build runs, and then the build profile nocheck is set
# too, unless DEB_BUILD_PROFILES is given: the build dependencies only the tests need, marked
# <!nocheck> in debian/control, are neither required nor installed).
set -e
cd "$(dirname "$0")/.."
out=${1:-build/deb}
case $out in /*) ;; *) out=$(pwd)/$out ;; esac

version=$(sed -n 's/^#define HIERA_VERSION "\(.*\)"/\1/p' include/hiera.h)
changelog=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
if [ "$changelog" != "$version" ]; then
    echo "make deb: debian/changelog's version is $changelog, include/hiera.h's $version:" \
         "add a changelog entry (dch -v $version)" >&2
    exit 1
fi

apt_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=900 "$@" >/dev/null
}
if ! command -v dpkg-buildpackage >/dev/null 2>&1 || ! command -v dh >/dev/null 2>&1; then
    echo "make deb: installing dpkg-dev and debhelper" >&2
    apt_install dpkg-dev debhelper || { echo "make deb: dpkg-dev and debhelper are needed (apt-get install them as root)" >&2; exit 1; }
fi
export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}"
case " $DEB_BUILD_OPTIONS " in
    *" nocheck "*) export DEB_BUILD_PROFILES="${DEB_BUILD_PROFILES:-nocheck}" ;;
esac
if ! dpkg-checkbuilddeps debian/control 2>/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        echo "make deb: installing the build dependencies (apt-get build-dep)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq -o DPkg::Lock::Timeout=900 \
            ${DEB_BUILD_PROFILES:+-P "$(echo "$DEB_BUILD_PROFILES" | tr ' ' ,)"} ./ >/dev/null
    else
        dpkg-checkbuilddeps debian/control # (says what is missing)
    fi
fi

src=$out/src/hiera-c-$version
rm -rf "$out" && mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | tr '\0' '\n' | while IFS= read -r f; do
        [ -e "$f" ] && printf '%s\n' "$f"; done | tar -cf - -T - | tar -C "$src" -xf -
else
    tar --exclude='./build' --exclude='./build-*' -cf - . | tar -C "$src" -xf -
fi
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
    tail -60 "$out/build.log"; echo "make deb: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2; exit 1; }
# (dpkg-buildpackage leaves its files beside the source folder)
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out"/
rm -rf "$out/src"
ls "$out"/*.deb
