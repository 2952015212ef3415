#!/bin/sh
# Browser tests of the page `hiera serve` serves (tests/web/page.mjs, and its edit flow:
# tests/web/edit.mjs): installs what they need when it is missing (Debian's chromium and nodejs/npm
# as root; playwright-core from npm into tests/web/node_modules), writes the test tree of
# tests/serve into a scratch folder, starts the servers (plain HTTP; HTTPS with client
# certificates and --allow-edits over a copy of the tree), runs the page through headless chromium,
# and stops them. Screenshots are kept in build/web-artifacts. Prints "web: N passed, N failed"
# and "web edit: N passed, N failed".
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
pid2=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$pid2" ] && kill "$pid2" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
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
rc=0
HOME=$work node "$here/page.mjs" "http://127.0.0.1:$port" "$top/build/web-artifacts" || rc=1
# the edit flow: admins by certificate (tests/serve/certs), over a copy of the tree holding a key
# defined twice (an edit the editor refuses)
cp -r "$work/tree" "$work/edit-tree"
printf 'profile::dup: 1\nprofile::dup: 2\n' >> "$work/edit-tree/environments/production/data/common.yaml"
certs=$top/tests/serve/certs
HIERA_CACHE_DIR=off "$HIERA" serve --codedir "$work/edit-tree" --facts-dir "$work/edit-tree/facts" --listen 127.0.0.1:0 \
    --tls-cert "$certs/server.pem" --tls-key "$certs/server.key" --tls-ca "$certs/ca.pem" --admin admin.example.com \
    --allow-edits --audit-log "$work/audit.log" 2>"$work/serve-edit.log" &
pid2=$!
port2=""
for _ in $(seq 100); do
    port2=$(sed -n 's/.* port \([0-9]*\) (.*/\1/p' "$work/serve-edit.log")
    [ -n "$port2" ] && break
    sleep 0.1
done
[ -n "$port2" ] || { cat "$work/serve-edit.log" >&2; echo "web: the edit server did not start" >&2; exit 1; }
HOME=$work node "$here/edit.mjs" "https://127.0.0.1:$port2" "$top/build/web-artifacts" "$certs" "$work/edit-tree" \
    "$work/audit.log" || rc=1
exit $rc
