#!/bin/bash
# Lays out the real trees and their facts for `make check-realrepos` (tests/check/realrepos.py
# --trees OUT, tests/diff/realpairs.py --mirror OUT/mirror):
#
#   build.sh OUT [MIRROR]
#                    OUT/mirror: the repositories (the fetch tool's layout, <owner>+<name>/repo;
#                    a link to MIRROR when given, else put there beforehand: this script never
#                    downloads anything),
#                    OUT/trees/<tree>/code/environments/production at the pinned commits,
#                    OUT/facts/<facts>/<node>.json
#
# The seven repositories of ../shared/real-repos are laid out by its build-trees and gen-facts.py
# (when ../shared is there); those of REVISIONS.txt here by this script, with facts made up by
# gen-facts-*.py (invented as they say). The trees are other people's code: they are read, never
# copied into the project.
set -euo pipefail
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=$HERE/../../../../shared/real-repos
M=$OUT/mirror
mkdir -p "$OUT"
if [ $# -ge 2 ]; then
  rm -f "$M"
  ln -s "$(cd "$2" && pwd)" "$M"
fi
[ -d "$M" ] || { echo "no $M: put the repositories there first (fetch github:<owner>/<name>)" >&2; exit 1; }
if [ -x "$SHARED/build-trees" ]; then
  if "$SHARED/build-trees" "$M" "$OUT/trees"; then
    python3 "$SHARED/gen-facts.py" "$OUT"
  else
    echo "the trees of ../shared/real-repos are not all laid out (a repository missing from $M)" >&2
  fi
fi
grep -v '^#' "$HERE/REVISIONS.txt" | while read -r repo commit _ tree; do
  g=$M/$repo/repo
  [ -d "$g/.git" ] && g=$g/.git
  [ -d "$g" ] || { echo "skipped $repo (not in $M)" >&2; continue; }
  d=$OUT/trees/$tree/code/environments/production
  rm -rf "$OUT/trees/$tree"; mkdir -p "$d"
  git --git-dir="$g" archive "$commit" | tar -x -C "$d"
done
BASE=$SHARED/base-facts.json
[ -f "$BASE" ] || BASE=$HERE/base-facts.json
python3 "$HERE/gen-facts-extra.py" "$BASE" "$OUT"
[ -d "$OUT/trees/wmf" ] && python3 "$HERE/gen-facts-wmf.py" "$BASE" "$OUT/trees/wmf/code/environments/production" "$OUT/facts/wmf"
echo "laid out in $OUT"
