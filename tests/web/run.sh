#!/bin/sh
# Browser tests of the page `hiera serve` serves (tests/web/page.mjs): installs what they need when
# it is missing (Debian's chromium and nodejs/npm as root; playwright-core from npm into
# tests/web/node_modules), writes the test tree of tests/serve into a scratch folder, starts the
# server, runs the page through headless chromium, and stops it. Screenshots are kept in
# build/web-artifacts. Prints "web: N passed, N failed".
# usage: tests/web/run.sh [path/to/hiera]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
HIERA=${1:-$top/build/hiera}
case $HIERA in /*) ;; *) HIERA=$top/$HIERA ;; esac
need=""
command -v chromium >/dev/null 2>&1 || need="$need chromium"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "web: missing$need (install them with apt-get as root)" >&2
        exit 1
    fi
    echo "installing$need" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
work=$(mktemp -d /tmp/hiera-web-XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
# (npm's cache, logs and update check in the scratch folder, not in the user's ~/.npm)
if [ ! -d "$here/node_modules/playwright-core" ]; then
    (cd "$here" && npm install --cache "$work/npm-cache" --no-update-notifier --no-audit --no-fund --silent >/dev/null)
fi
python3 "$top/tests/serve/check.py" --hiera "$HIERA" --make-tree "$work/tree"
HIERA_CACHE_DIR=off "$HIERA" serve --codedir "$work/tree" --facts-dir "$work/tree/facts" --listen 127.0.0.1:0 \
    --no-watch 2>"$work/serve.log" &
pid=$!
port=""
for _ in $(seq 100); do
    port=$(sed -n 's/.* port \([0-9]*\) (.*/\1/p' "$work/serve.log")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log" >&2; echo "web: the server did not start" >&2; exit 1; }
HOME=$work node "$here/page.mjs" "http://127.0.0.1:$port" "$top/build/web-artifacts"
