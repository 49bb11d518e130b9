#!/usr/bin/env bash
# What the terminal app costs while it shows several live trainings: four
# background trainings (same seeds, one thread each) run to the end once
# with no app and once with the app attached to all four, its dashboard on
# the grid of small charts. Reports, as medians over REPEATS rounds (the two
# conditions alternate, so drift in the machine's speed hits both alike):
# the trainings' summed speed without and with the app, their ratio, and the
# app's CPU time per second of wall-clock time (from /proc, user + system).
#
#   scripts/redraw-cost.sh [STEPS] [REPEATS]   (defaults: 1000000 steps a training, 5 rounds)
#
# SHOW=picker leaves the app on its first screen (attached, drawing no
# chart): the cost of taking in the events alone.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-1000000}
repeats=${2:-5}
script=redraw-cost session="at-redraw-$$"
. scripts/lib.sh
need tmux go python3

work=$(mktemp -d)
at="$work/agenttrainer"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_trainings "$at" "$work/runs"; rm -rf "$work"' EXIT
go build -o "$at" .
tick=$(getconf CLK_TCK)

# start_four DIR: four trainings in the background under DIR/runs.
start_four() {
  local i
  for i in 1 2 3 4; do
    (cd "$1" && exec "$at" train --quiet trainer.runs_dir=runs trainer.threads=1 trainer.seed=$i \
      ppo.total_timesteps="$steps" trainer.name="r$i" >/dev/null 2>&1) &
  done
}

# wait_four DIR: until the four have written their last record; prints
# their summed speed (each run's sps: steps over its training time).
wait_four() {
  local deadline=$((SECONDS + 600))
  until [ "$(ls "$1"/runs/*/checkpoints/latest 2>/dev/null | wc -l)" = 4 ] && ! "$at" ps --runs-dir "$1/runs" 2>/dev/null | grep -q '^[0-9]'; do
    ((SECONDS <= deadline)) || fail "the four trainings did not end within 600 s"
    sleep 0.2
  done
  python3 - "$1"/runs/*/metrics.jsonl <<'PY'
import json, sys
print(round(sum(json.loads(open(p).read().splitlines()[-1])["sps"] for p in sys.argv[1:])))
PY
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

without=() with=() cost=()
for round in $(seq "$repeats"); do
  d="$work/r$round-without"; mkdir -p "$d"
  start_four "$d"
  without+=("$(wait_four "$d")")

  d="$work/r$round-with"; mkdir -p "$d"
  start_four "$d"
  deadline=$((SECONDS + 30))
  until [ "$("$at" ps --runs-dir "$d/runs" 2>/dev/null | grep -c '^[0-9]')" = 4 ]; do
    ((SECONDS <= deadline)) || fail "the four trainings did not start"
    sleep 0.1
  done
  tmux new-session -d -s "$session" -x 120 -y 40 -c "$d" "exec '$at'"
  wait_for "4 runs training in the background" 20
  if [ "${SHOW:-grid}" = grid ]; then
    keys 3 g
    wait_for "─ approx_kl" 20
  fi
  pid=$(tmux display -p -t "$session" '#{pane_pid}')
  t0=$(date +%s.%N) c0=$(cpu_ticks "$pid")
  with+=("$(wait_four "$d")")
  t1=$(date +%s.%N) c1=$(cpu_ticks "$pid")
  cost+=("$(python3 -c "print(round(($c1 - $c0) / $tick / ($t1 - $t0), 4))")")
  screen >"$work/last-screen.txt"
  tmux kill-session -t "$session"
  echo "round $round: without the app ${without[-1]} steps/s, with it ${with[-1]} steps/s; the app used ${cost[-1]} CPU s/s" >&2
done

python3 - "${without[*]}" "${with[*]}" "${cost[*]}" <<'PY'
import statistics as st, sys
wo, wi, c = ([float(x) for x in a.split()] for a in sys.argv[1:])
print(f"4 trainings × CartPole-v1, one thread each, {len(wo)} rounds (medians):")
print(f"  summed speed without the app: {st.median(wo):,.0f} steps/s   {sorted(wo)}")
print(f"  summed speed with the app:    {st.median(wi):,.0f} steps/s   {sorted(wi)}")
print(f"  ratio with/without:           {st.median(wi) / st.median(wo):.3f}")
import os
shown = "grid of charts" if os.environ.get("SHOW", "grid") == "grid" else "first screen, no chart"
print(f"  the app's CPU time:           {st.median(c):.4f} s per second ({shown}, 4 live runs)   {sorted(c)}")
PY
