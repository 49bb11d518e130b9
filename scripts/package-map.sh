#!/usr/bin/env bash
# Prints every package of the module with its lines of code and of tests and
# the packages of ours it imports: the map ARCHITECTURE.md summarises.
#
#   scripts/package-map.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
printf '%-22s %7s %7s  %s\n' package code tests imports
for dir in $(go list -f '{{.Dir}}' ./...); do
  rel=${dir#"$PWD"}; rel=${rel#/}; [ -z "$rel" ] && rel=.
  code=$(find "$dir" -maxdepth 1 -name '*.go' ! -name '*_test.go' -exec cat {} + 2>/dev/null | wc -l)
  tests=$(find "$dir" -maxdepth 1 -name '*_test.go' -exec cat {} + 2>/dev/null | wc -l)
  imports=$(go list -f '{{join .Imports " "}}' "./$rel" | tr ' ' '\n' | { grep "^$mod" || true; } | sed "s#^$mod/##; s#^$mod\$#.#" | tr '\n' ' ')
  printf '%-22s %7d %7d  %s\n' "$rel" "$code" "$tests" "$imports"
done
