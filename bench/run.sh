#!/bin/sh
# bench/run.sh - hiera against Puppet's lookup on a generated control repository.
# Run after `make`:  bench/run.sh [--quick] [--hiera build/hiera] [--no-puppet] [--regen] ...
# Everything is explained in bench/README.md; the work is done by bench/bench.py.
set -e
here=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null 2>&1 || { echo "bench: python3 is needed" >&2; exit 1; }
exec python3 "$here/bench.py" "$@"
