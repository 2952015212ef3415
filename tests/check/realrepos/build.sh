#!/bin/bash
# Lays out the real trees and their facts for `make check-realrepos` (tests/check/realrepos.py
# --trees OUT, tests/diff/realpairs.py --mirror OUT/mirror, tests/edit/realrepo.py):
#
#   build.sh OUT [MIRROR]
#                    OUT/mirror: the repositories (the fetch tool's layout, <owner>+<name>/repo;
#                    a link to MIRROR when given, else put there beforehand: this script never
#                    downloads anything),
#                    OUT/trees/<tree>/code/environments/production at the pinned commits,
#                    OUT/facts/<facts>/<node>.json,
#                    OUT/layout.txt: one line per tree, "<tree> ok ..." or "<tree> missing <why>"
#
# The trees are those of ../shared/real-repos/REVISIONS.txt (when ../shared is there: psick, lsst,
# mergwyn, jenkins, seteam, dylan, voxpupuli, govuk, with the modules their Puppetfiles pin, and
# jenkins-infra's global hiera.yaml copied to its code dir, as its build-trees does) and those of
# REVISIONS.txt here, each at its pinned commit, with the facts of ../shared/real-repos/gen-facts.py
# and of gen-facts-*.py here (invented as they say). A tree is laid out whole or not at all: when a
# repository of it (a module included) is not in the mirror, or lacks the pinned commit, the tree
# is left out and layout.txt and the last lines printed say which repository; the others are laid
# out all the same. Files the mirror's snapshot lists but does not hold (the fetch tool leaves out
# the largest) are left out and counted. A tree already laid out at the same commits is kept, so a
# second run only lays out what the mirror has gained. Exits 0 when every tree is laid out, 3 when
# some are missing (the Makefile goes on: the checks name what they could not check), 1 on trouble.
# The trees are other people's code: they are read, never copied into the project.
set -uo pipefail
OUT=$1
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=$HERE/../../../../shared/real-repos
M=$OUT/mirror
mkdir -p "$OUT/trees" "$OUT/facts" "$OUT/stamps" || exit 1
if [ $# -ge 2 ]; then
  [ -d "$2" ] || { echo "build.sh: no mirror at $2" >&2; exit 1; }
  rm -f "$M"
  ln -s "$(cd "$2" && pwd)" "$M"
fi
[ -d "$M" ] || { echo "build.sh: no $M: put the repositories there first (fetch github:<owner>/<name>)" >&2; exit 1; }

# the parts of every tree, "<owner>+<name> <commit> <path under trees/>", in REVISIONS order
parts() {
  if [ -f "$SHARED/REVISIONS.txt" ]; then
    grep -v '^#' "$SHARED/REVISIONS.txt" | while read -r repo commit _ dest; do
      [ -n "$repo" ] && echo "$repo $commit ${dest#*/trees/}"
    done
  fi
  grep -v '^#' "$HERE/REVISIONS.txt" | while read -r repo commit _ tree; do
    [ -n "$repo" ] && echo "$repo $commit $tree/code/environments/production"
  done
}
PARTS=$(parts)
git_dir() { # the bare git dir of a repository of the mirror, or nothing
  local g=$M/$1/repo
  [ -d "$g/.git" ] && g=$g/.git
  [ -d "$g" ] && echo "$g"
}

STATUS=$OUT/layout.txt.new
: > "$STATUS"
missing=0 total=0
for tree in $(echo "$PARTS" | awk '{ split($3, p, "/"); if (!seen[p[1]]++) print p[1] }'); do
  total=$((total + 1))
  mine=$(echo "$PARTS" | awk -v t="$tree" '{ split($3, p, "/"); if (p[1] == t) print }')
  if [ -d "$OUT/trees/$tree" ] && [ "$(cat "$OUT/stamps/$tree" 2>/dev/null)" = "$mine" ]; then
    echo "$tree ok $(wc -l <<< "$mine") parts (laid out before)" >> "$STATUS"
    continue
  fi
  rm -rf "$OUT/trees/$tree" "$OUT/trees/$tree.new" "$OUT/stamps/$tree"
  why=
  while read -r repo commit _; do
    g=$(git_dir "$repo")
    if [ -z "$g" ]; then why="$why${why:+; }$repo is not in the mirror ($M/$repo/repo: fetch github:${repo/+//})"
    elif ! git --git-dir="$g" cat-file -e "$commit^{commit}" 2>/dev/null; then
      why="$why${why:+; }$repo has no commit $commit (the mirror's snapshot is older)"
    fi
  done <<< "$mine"
  if [ -n "$why" ]; then
    echo "$tree missing: $why" >> "$STATUS"
    missing=$((missing + 1))
    continue
  fi
  absent=0
  while read -r repo commit rel; do
    g=$(git_dir "$repo")
    d=$OUT/trees/$tree.new/${rel#"$tree"}
    mkdir -p "$d"
    # the files the snapshot lists but does not hold, left out of the archive
    excl=() ls=$OUT/trees/.ls
    git --git-dir="$g" ls-tree -r "$commit" | awk '$2 == "blob" { h = $3; sub(/^[^\t]*\t/, ""); print h "\t" $0 }' > "$ls"
    while read -r p; do excl+=(":(exclude)$p"); absent=$((absent + 1)); done < <(
      cut -f1 "$ls" | git --git-dir="$g" cat-file --batch-check='%(objectname)' | paste - "$ls" |
        awk -F'\t' '$1 ~ / missing$/ { print $3 }')
    if ! git --git-dir="$g" archive "$commit" -- . "${excl[@]}" | tar -x -C "$d"; then
      why="$why${why:+; }git archive of $repo $commit failed"
    fi
  done <<< "$mine"
  rm -f "$OUT/trees/.ls"
  # jenkins-infra keeps its global hiera.yaml in the repository (../shared/real-repos/build-trees)
  j=$OUT/trees/$tree.new/code/environments/production/dist/profile/files/hiera.yaml
  [ "$tree" = jenkins ] && { cp "$j" "$OUT/trees/$tree.new/code/hiera.yaml" || why="$why${why:+; }no $j"; }
  if [ -n "$why" ]; then
    rm -rf "$OUT/trees/$tree.new"
    echo "$tree missing: $why" >> "$STATUS"
    missing=$((missing + 1))
    continue
  fi
  mv "$OUT/trees/$tree.new" "$OUT/trees/$tree"
  echo "$mine" > "$OUT/stamps/$tree"
  echo "$tree ok $(wc -l <<< "$mine") parts$([ $absent -gt 0 ] && echo ", $absent files absent from the mirror's snapshot left out")" >> "$STATUS"
done

# the facts (each script writes those of the trees there are)
if [ -f "$SHARED/gen-facts.py" ]; then
  python3 "$SHARED/gen-facts.py" "$OUT" || echo "build.sh: ../shared/real-repos/gen-facts.py failed" >&2
fi
BASE=$SHARED/base-facts.json
[ -f "$BASE" ] || BASE=$HERE/base-facts.json
python3 "$HERE/gen-facts-extra.py" "$BASE" "$OUT" || echo "build.sh: gen-facts-extra.py failed" >&2
if [ -d "$OUT/trees/wmf" ]; then
  python3 "$HERE/gen-facts-wmf.py" "$BASE" "$OUT/trees/wmf/code/environments/production" "$OUT/facts/wmf" ||
    echo "build.sh: gen-facts-wmf.py failed" >&2
fi
mv "$STATUS" "$OUT/layout.txt"
if [ "$missing" -gt 0 ]; then
  echo "build.sh: laid out $((total - missing)) of $total trees in $OUT/trees; NOT laid out:" >&2
  grep ' missing: ' "$OUT/layout.txt" | sed 's/^/  /' >&2
  exit 3
fi
echo "build.sh: laid out all $total trees in $OUT/trees"
