#!/bin/sh
# make install into a scratch DESTDIR, then build examples/api-example.c and
# examples/hiera3-example.c against the installed library with `pkg-config --cflags --libs hiera`
# (static and shared) and run them; check that the shared library exports the public API only.
set -e
cd "$(dirname "$0")/../.."
dest=$(mktemp -d /tmp/hiera-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
make -s install DESTDIR="$dest" PREFIX=/usr >/dev/null
export PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
pass=0 fail=0
check() { if "$@"; then pass=$((pass + 1)); else echo "FAIL install: $*"; fail=$((fail + 1)); fi; }
check test -x "$dest/usr/bin/hiera"
check test -f "$dest/usr/share/man/man1/hiera.1"
check test -L "$dest/usr/lib/libhiera.so.1"
version=$(sed -n 's/^#define HIERA_VERSION "\(.*\)"/\1/p' include/hiera.h)
check sh -c "readelf -d '$dest/usr/lib/libhiera.so.$version' | grep -q 'SONAME.*libhiera.so.1'"
# ABI: the shared library exports exactly the functions include/hiera.h declares (HIERA_API),
# nothing of its internals (sanitizer builds add their runtime's hooks, left out here)
so="$dest/usr/lib/libhiera.so.$version"
declared=$(grep '^HIERA_API' include/hiera.h | sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort)
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(__asan|__odr_asan|__ubsan|__sanitizer|__tsan|__lsan)' | sort)
extra=$(echo "$exported" | grep -vxF "$declared" | tr '\n' ' ' || true)
missing=$(echo "$declared" | grep -vxF "$exported" | tr '\n' ' ' || true)
[ -z "$extra" ] || echo "libhiera.so exports what include/hiera.h does not declare: $extra"
[ -z "$missing" ] || echo "libhiera.so does not export: $missing"
check test -n "$declared"
check test -z "$extra$missing"
cc -o "$dest/example-shared" examples/api-example.c $(pkg-config --cflags --libs hiera)
cc -o "$dest/example-static" examples/api-example.c $(pkg-config --cflags hiera) \
   "$dest/usr/lib/libhiera.a" $(pkg-config --libs --static hiera | sed 's/-lhiera//')
repo=examples/control-repo
for ex in "$dest/example-shared" "$dest/example-static"; do
  out=$(LD_LIBRARY_PATH="$dest/usr/lib" "$ex" "$repo" "$repo/facts/web01.example.com.yaml" web01.example.com profile::base::motd)
  check test "$out" = '"Welcome to web01 (Debian)"'
done
# the Hiera 3 API example (README), shared and static
cc -o "$dest/h3-shared" examples/hiera3-example.c $(pkg-config --cflags --libs hiera)
cc -o "$dest/h3-static" examples/hiera3-example.c $(pkg-config --cflags hiera) \
   "$dest/usr/lib/libhiera.a" $(pkg-config --libs --static hiera | sed 's/-lhiera//')
for ex in "$dest/h3-shared" "$dest/h3-static"; do
  out=$(LD_LIBRARY_PATH="$dest/usr/lib" "$ex" examples/hiera3/hiera.yaml web01.example.com ntp::servers array)
  check test "$out" = '["ntp.web01.example.com","0.pool.ntp.org","1.pool.ntp.org"]'
  out=$(LD_LIBRARY_PATH="$dest/usr/lib" "$ex" examples/hiera3/hiera.yaml web01.example.com users hash)
  check test "$out" = '{"alice":{"shell":"/bin/bash","uid":1001}}'
done
check sh -c "MANWIDTH=80 man -l '$dest/usr/share/man/man1/hiera.1' >/dev/null 2>&1 || groff -man -Tutf8 '$dest/usr/share/man/man1/hiera.1' >/dev/null 2>&1 || true"
echo "install: $pass passed, $fail failed"
[ "$fail" = 0 ]
