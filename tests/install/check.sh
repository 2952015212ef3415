#!/bin/sh
# make install into a scratch DESTDIR, then build examples/api-example.c and
# examples/hiera3-example.c against the installed library with `pkg-config --cflags --libs hiera`
# (static and shared) and run them; check that the shared library exports the public API only;
# then install into two other prefixes one after the other (and a third with its own LIBDIR and
# INCLUDEDIR), where each hiera.pc must name the folders of its own install and build the example.
# Prints "install: N passed, N failed".
set -e
cd "$(dirname "$0")/../.."
dest=$(mktemp -d /tmp/hiera-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
export HIERA_CACHE_DIR="$dest/cache" # (nothing here looks up, but nothing may go to ~/.cache)
# (every folder named: a LIBDIR=... given to the `make check` that runs this must not move them)
dirs() { echo "BINDIR=$1/bin LIBDIR=$1/lib INCLUDEDIR=$1/include MANDIR=$1/share/man"; }
make -s install DESTDIR="$dest" PREFIX=/usr $(dirs /usr) >/dev/null
export PKG_CONFIG_PATH="$dest/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$dest"
pass=0 fail=0
check() { if "$@"; then pass=$((pass + 1)); else echo "FAIL install: $*"; fail=$((fail + 1)); fi; }
check test -x "$dest/usr/bin/hiera"
check test -f "$dest/usr/share/man/man1/hiera.1"
for page in docs/*.[1-8]; do # every man page, in its section's folder
  check test -f "$dest/usr/share/man/man${page##*.}/${page#docs/}"
done
check test -f "$dest/usr/share/bash-completion/completions/hiera"
# the README, where hiera lsp's diagnostics link to its rules (../share/doc/hiera from the command)
check cmp -s README.md "$dest/usr/share/doc/hiera/README.md"
check test -L "$dest/usr/lib/libhiera.so.1"
version=$(sed -n 's/^#define HIERA_VERSION "\(.*\)"/\1/p' include/hiera.h)
check sh -c "readelf -d '$dest/usr/lib/libhiera.so.$version' | grep -q 'SONAME.*libhiera.so.1'"
# ABI: the shared library exports exactly the functions the public headers (include/hiera*.h)
# declare (HIERA_API), nothing of its internals (sanitizer builds add their runtime's hooks, left
# out here)
so="$dest/usr/lib/libhiera.so.$version"
declared=$(cat include/hiera*.h | grep '^HIERA_API' | sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort)
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(__asan|__odr_asan|__ubsan|__sanitizer|__tsan|__lsan)' | sort)
extra=$(echo "$exported" | grep -vxF "$declared" | tr '\n' ' ' || true)
missing=$(echo "$declared" | grep -vxF "$exported" | tr '\n' ' ' || true)
[ -z "$extra" ] || echo "libhiera.so exports what include/hiera*.h do not declare: $extra"
[ -z "$missing" ] || echo "libhiera.so does not export: $missing"
check test -n "$declared"
check test -z "$extra$missing"
# debian/libhiera1.symbols lists exactly these (the package build checks the library against it
# with dpkg-gensymbols -c4): a function added to the API gets its line there, with the version
# that adds it
listed=$(sed -n 's/^ \([A-Za-z0-9_]*\)@Base .*/\1/p' debian/libhiera1.symbols | sort)
[ "$listed" = "$declared" ] || echo "debian/libhiera1.symbols: not listed:" \
  $(echo "$declared" | grep -vxF "$listed") "; listed, not declared:" $(echo "$listed" | grep -vxF "$declared")
check test "$listed" = "$declared"
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
# the man page renders without a warning (groff-base: scripts/deps.sh --test)
if command -v groff >/dev/null 2>&1; then
  check sh -c "groff -man -Tutf8 -ww -z '$dest/usr/share/man/man1/hiera.1' '$dest/usr/share/man/man1/hiera-lsp.1' '$dest/usr/share/man/man1/hiera-set.1' '$dest/usr/share/man/man1/hiera-unset.1' 2>'$dest/man.err' && test ! -s '$dest/man.err'"
  [ -s "$dest/man.err" ] && head -5 "$dest/man.err"
else
  echo "install: groff is not installed: the man page is not rendered"
fi

# PREFIX (and LIBDIR, INCLUDEDIR) as given to each `make install`, whatever was installed before
unset PKG_CONFIG_SYSROOT_DIR
install_at() { # FOLDER [make variables...]: installs, then checks hiera.pc and builds the example
  at=$1; shift
  make -s install PREFIX="$at" $(dirs "$at") "$@" >/dev/null
  libdir=$at/lib includedir=$at/include
  for v in "$@"; do case $v in LIBDIR=*) libdir=${v#LIBDIR=} ;; INCLUDEDIR=*) includedir=${v#INCLUDEDIR=} ;; esac; done
  pc=$libdir/pkgconfig/hiera.pc
  check grep -qx "prefix=$at" "$pc"
  check grep -qx "libdir=$libdir" "$pc"
  check grep -qx "includedir=$includedir" "$pc"
  check test -f "$includedir/hiera.h"
  check test "$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=prefix hiera)" = "$at"
  rm -f "$at/example"
  cc -o "$at/example" examples/api-example.c $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs hiera)
  out=$(LD_LIBRARY_PATH="$libdir" "$at/example" "$repo" "$repo/facts/web01.example.com.yaml" web01.example.com profile::base::motd)
  check test "$out" = '"Welcome to web01 (Debian)"'
  # the Python module, in Python's site-packages of the prefix, on the library of this LIBDIR
  # (HIERA_PY_ENV: variables the interpreter needs when the library is sanitized, from make check-asan)
  py=$(command -v /usr/bin/python3 || command -v python3)
  pydir=$("$py" -c "import sysconfig; print(sysconfig.get_path('platlib', 'posix_prefix', {'base': '$at', 'platbase': '$at'}))")
  if "$py" -c 'import cffi' 2>/dev/null; then
    abs=$(pwd)/$repo
    out=$(cd / && PYTHONPATH="$pydir" env $HIERA_PY_ENV "$py" -c "import hiera, sys; print(hiera.__file__); print(hiera.Hiera(codedir=sys.argv[1], confdir=sys.argv[1]).lookup('profile::base::motd', node='web01.example.com', facts=sys.argv[1] + '/facts/web01.example.com.yaml'))" "$abs" 2>&1 || true)
    check test "$out" = "$pydir/hiera/__init__.py
Welcome to web01 (Debian)"
  fi
}
install_at "$dest/one"
install_at "$dest/two"
check grep -qx "prefix=$dest/one" "$dest/one/lib/pkgconfig/hiera.pc" # the first is left as it was
install_at "$dest/three" LIBDIR="$dest/three/lib64" INCLUDEDIR="$dest/three/include/hiera"
echo "install: $pass passed, $fail failed"
[ "$fail" = 0 ]
