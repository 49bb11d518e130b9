#!/usr/bin/env bash
# The hostile-input suite (internal/hostile), every case: builds the binary,
# replays each attack in a subprocess with a bound on time and peak RSS, and
# prints the table case → expected → observed with the totals (panics, hangs,
# peak RSS over bound, lost records). Exit status 1 when any case failed.
#
#   scripts/hostile.sh [-run REGEXP] [-hostile.only SUBSTRING]
set -uo pipefail
cd "$(dirname "$0")/.."
table=$(mktemp)
trap 'rm -f "$table" "$table.partial"' EXIT
go test -count=1 -timeout 45m -parallel 2 -run 'TestHostile' ./internal/hostile \
  -hostile.full -hostile.table "$table" "$@" >"$table.log" 2>&1
rc=$?
cat "$table" 2>/dev/null || true
[ -s "$table" ] || { echo "(cut short: the cases that finished)"; cat "$table.partial" 2>/dev/null; }
if [ "$rc" -ne 0 ]; then
  echo "--- go test output (failures):"
  grep -E '^(---|FAIL|panic|ok )|expected:|observed:' "$table.log" | tail -60
fi
rm -f "$table.log"
exit $rc
