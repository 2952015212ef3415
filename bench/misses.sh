#!/bin/sh
# bench/misses.sh - what the fleet run of bench/run.sh executes and misses, counted by valgrind's
# cachegrind: instructions, and data misses in a simulated first level (32 KiB) and second level
# (1 MiB, 8-way: this machine's L2). Unlike CPU time, these do not move with the machine's load,
# so two builds can be told apart in one run each; what they do not show is the cost of a miss,
# which is what moves (see bench/README.md, "the late session").
# Run after `make` and one bench/run.sh (which makes the repository):
#   bench/misses.sh [--hiera build/hiera] [--repo /tmp/hiera-bench-UID] [--l2 BYTES] [--keep FILE]
# Prints the three counts; --keep keeps cachegrind's file (cg_annotate FILE shows where).
set -e
here=$(cd "$(dirname "$0")" && pwd)
hiera="$here/../build/hiera"
repo="${TMPDIR:-/tmp}/hiera-bench-$(id -u)"
l2=1048576
keep=
while [ $# -gt 0 ]; do
    case "$1" in
    --hiera) hiera=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --l2) l2=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/misses.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null 2>&1 || { echo "bench/misses.sh: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
[ -x "$hiera" ] || { echo "bench/misses.sh: $hiera not found: run make first" >&2; exit 1; }
[ -f "$repo/keys-batch.txt" ] || { echo "bench/misses.sh: no repository in $repo: run bench/run.sh first" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hiera-misses-XXXXXX")
trap 'rm -rf "$work"' EXIT
out=${keep:-$work/cachegrind.out}
# hiera batch starts itself again with mimalloc preloaded; valgrind follows the first process
# only, so the allocator is preloaded here (as the run that run.sh times has it). Without it
# (a build without mimalloc, or its library gone) the process is kept from starting again,
# else valgrind would count the first process's few instructions only.
mi=$(grep -ao -m1 '/[^[:space:][:cntrl:]]*/libmimalloc\.so[.0-9]*' "$hiera" | head -n 1 || true)
pre=
if [ -n "$mi" ] && [ -r "$mi" ]; then
    pre=$mi
else
    export HIERA_NO_MIMALLOC=1
    echo "bench/misses.sh: no mimalloc for $hiera: counting with the C library's allocator" >&2
fi
# a disk cache of its own, warmed first as run.sh's runs find it
export HIERA_CACHE_DIR="$work/cache"
mkdir -m 700 "$HIERA_CACHE_DIR"
set -- batch --jobs 1 --codedir "$repo" --environmentpath "$repo/environments" --hiera_config "$repo/hiera.yaml" \
    --environment production --facts-dir "$repo/facts" --keys-file "$repo/keys-batch.txt"
"$hiera" "$@" > /dev/null
LD_PRELOAD=$pre valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL="$l2",8,64 \
    --cachegrind-out-file="$out" "$hiera" "$@" > /dev/null 2> "$work/log"
awk '/I +refs:/ {print "instructions:       " $NF}
     /D1 +misses:/ {print "first-level misses: " $4}
     /LLd +misses:/ {print "second-level misses: " $4}' "$work/log" | sed 's/,//g'
