#!/usr/bin/env bash
# Compares training speed with the terminal app's dashboard open against
# headless training on the same config: the trainer must not wait for the UI.
#
#   scripts/tui-sps.sh [STEPS] [REPEATS]     (defaults: 200000 steps, 3 runs each)
#
# Runs alternate (headless, app, headless, app, …) so that drift in the
# machine's speed affects both alike; each run's speed is the sps of its last
# metrics.jsonl record (steps over training time, excluding pauses). Prints
# the medians and their ratio, and the CPU time each process used: on a
# machine shared with other work the speeds are noisy, while the extra CPU
# time of the app is what the dashboard costs (it includes a few seconds in
# the picker and editor before training starts).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-200000}
repeats=${2:-3}
script=tui-sps session="at-sps-$$"
. scripts/lib.sh
need tmux go python3

work=$(mktemp -d)
trap 'tmux kill-session -t "$session" 2>/dev/null || true' EXIT
go build -o "$work/agenttrainer" .

last_sps() { tail -n 1 "$1"/metrics.jsonl | python3 -c 'import json,sys; print(json.load(sys.stdin)["sps"])'; }

# cpu_of FILE: user+sys seconds from bash's `time` (TIMEFORMAT='%U %S').
cpu_of() { python3 -c 'import sys; u, s = open(sys.argv[1]).read().split()[-2:]; print(float(u) + float(s))' "$1"; }

headless() { # $1: runs dir; prints sps and CPU seconds
  mkdir -p "$1"
  (TIMEFORMAT='%U %S'; time "$work/agenttrainer" train --quiet ppo.total_timesteps="$steps" trainer.runs_dir="$1/runs" >/dev/null) 2>"$1/time"
  echo "$(last_sps "$(ls -d "$1"/runs/*/ | tail -n 1)") $(cpu_of "$1/time")"
}

fail() { echo "tui-sps: $*; the screen was:" >&2; screen >&2; exit 1; }

app() { # $1: working directory (runs go to ./runs)
  mkdir -p "$1"
  tmux new-session -d -s "$session" -x 120 -y 40 -c "$1" \
    "bash -c \"TIMEFORMAT='%U %S'; time '$work/agenttrainer'\" 2>'$1/time'; sleep 5"
  wait_for "Pick an environment" 20
  tmux send-keys -t "$session" Enter; sleep 0.2
  tmux send-keys -t "$session" Enter; wait_for "KEY" 10
  tmux send-keys -t "$session" "/total_timesteps"; sleep 0.2
  tmux send-keys -t "$session" Enter; sleep 0.2
  tmux send-keys -t "$session" Enter C-u "$steps" Enter; sleep 0.3
  tmux send-keys -t "$session" s
  wait_for "■ done" 600
  tmux send-keys -t "$session" q
  local deadline=$((SECONDS + 30))
  until [[ -s "$1/time" ]]; do
    ((SECONDS <= deadline)) || { echo "tui-sps: the app did not quit" >&2; exit 1; }
    sleep 0.2
  done
  tmux kill-session -t "$session" 2>/dev/null || true
  echo "$(last_sps "$(ls -d "$1"/runs/*/ | tail -n 1)") $(cpu_of "$1/time")"
}

results=()
for i in $(seq "$repeats"); do
  read -r hsps hcpu < <(headless "$work/headless-$i")
  read -r asps acpu < <(app "$work/app-$i")
  printf 'round %d: headless %.0f steps/s (%.2f CPU s), app %.0f steps/s (%.2f CPU s)\n' "$i" "$hsps" "$hcpu" "$asps" "$acpu"
  results+=("$hsps,$hcpu,$asps,$acpu")
done
python3 - "${results[@]}" <<'PY'
import statistics, sys
rows = [[float(x) for x in r.split(",")] for r in sys.argv[1:]]
hs, hc, as_, ac = (statistics.median(c) for c in zip(*rows))
print(f"median headless {hs:,.0f} steps/s, median with the dashboard {as_:,.0f} steps/s: ratio {as_/hs:.3f}")
print(f"median CPU time: headless {hc:.2f} s, app {ac:.2f} s: the app used {100*(ac-hc)/hc:+.1f}%")
PY
rm -rf "$work"
