#!/bin/sh
# Installs the Debian packages the build needs when any is missing (as root, with apt-get);
# --test adds what the tests need (make check), --python what make python needs (and its tests), --fuzz what the fuzz harnesses need, --lsp what
# make check-lsp needs (Neovim).
# Prints nothing when everything is present.
set -e
need=""
have_pc() { pkg-config --exists "$1" 2>/dev/null; }
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v make >/dev/null 2>&1 || need="$need make"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
have_pc yaml-0.1 || need="$need libyaml-dev"
have_pc oniguruma || need="$need libonig-dev"
have_pc openssl || need="$need libssl-dev"
# hiera serve: the HTTP server and TLS libraries' headers (the libraries are opened at run time)
have_pc libmicrohttpd || need="$need libmicrohttpd-dev"
have_pc gnutls || need="$need libgnutls28-dev"
# ... and under systemd (socket activation, sd_notify): libsystemd's header, the library opened then
have_pc libsystemd || need="$need libsystemd-dev"
# PuppetDB's client: libcurl's header (the library is opened at run time)
have_pc libcurl || need="$need libcurl4-openssl-dev"
if [ "${1:-}" = "--fuzz" ]; then
    # the libFuzzer harnesses: clang and its sanitizer and fuzzer runtimes
    command -v clang >/dev/null 2>&1 || need="$need clang"
    rt=$(clang --print-runtime-dir 2>/dev/null || true)
    ls "$rt"/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || need="$need libclang-rt-dev"
fi
if [ "${1:-}" = "--lsp" ]; then
    # make check-lsp: hiera lsp driven by Neovim's own LSP client (and PyYAML)
    command -v nvim >/dev/null 2>&1 || need="$need neovim"
    command -v python3 >/dev/null 2>&1 || need="$need python3"
    python3 -c 'import yaml' >/dev/null 2>&1 || need="$need python3-yaml"
    command -v git >/dev/null 2>&1 || need="$need git"
fi
if [ "${1:-}" = "--python" ] || [ "${1:-}" = "--test" ]; then
    # the Python module (make python): cffi and Python's headers; its tests: pytest (for $PYTHON:
    # Debian's python3 by default)
    py=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3 || echo python3)}
    command -v "$py" >/dev/null 2>&1 || need="$need python3"
    "$py" -c 'import cffi' >/dev/null 2>&1 || need="$need python3-cffi"
    inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null || true)
    [ -n "$inc" ] && [ -e "$inc/Python.h" ] || need="$need python3-dev"
    "$py" -c 'import pytest' >/dev/null 2>&1 || need="$need python3-pytest"
    # (tests/python/test_api.py reads facts files with PyYAML, as debian/control's Build-Depends say)
    "$py" -c 'import yaml' >/dev/null 2>&1 || need="$need python3-yaml"
fi
if [ "${1:-}" = "--test" ]; then
    have_pc cmocka || need="$need libcmocka-dev"
    command -v python3 >/dev/null 2>&1 || need="$need python3"
    # tests/batch/check.py reads the YAML that `hiera batch --render-as yaml` prints with a YAML
    # parser that is not the project's own (PyYAML, YAML 1.1 as Ruby's Psych)
    python3 -c 'import yaml' >/dev/null 2>&1 || need="$need python3-yaml"
    # tests/install/check.sh renders the installed man page
    command -v groff >/dev/null 2>&1 || need="$need groff-base"
    command -v git >/dev/null 2>&1 || need="$need git" # hiera diff's tests compare git revisions
    # tests/cli/result-cache.py checks the result cache's record against the system calls made
    command -v strace >/dev/null 2>&1 || need="$need strace"
fi
# the hiera command's allocator: optional (the command links without it where it is missing)
optional=""
[ -e /usr/include/mimalloc.h ] || optional="libmimalloc-dev"
[ -z "$need" ] && { [ -z "$optional" ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; } && exit 0
if [ -n "$need" ] && { [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; }; then
    echo "missing build packages:$need (install them with apt-get as root)" >&2
    exit 1
fi
echo "installing build packages:$need${optional:+ $optional (optional)}" >&2
apt-get update -qq >/dev/null 2>&1 || true
[ -z "$need" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
[ -z "$optional" ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $optional >/dev/null 2>&1 || true
