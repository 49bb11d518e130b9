#!/usr/bin/env bash
# Training speed with two SSH viewers attached versus none: a CartPole run
# trains in the background (train --detach) while `agenttrainer serve`
# runs; for the "two viewers" runs, two OpenSSH clients in tmux open the
# runs browser and attach to it (dashboard redrawing at 10 Hz in each).
#
#   scripts/ssh-sps.sh [STEPS] [REPEATS]      (defaults: 6000000 steps, 3 runs each)
#
# Runs alternate (none, two, none, two, …) so that drift in the machine's
# speed affects both alike. Each run's speed is measured over the second
# half of its steps (from metrics.jsonl's step and time_s), after the
# viewers are attached; the script checks they were. Prints every run, the
# medians and their ratio (goal ≥ 0.95).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-6000000}
repeats=${2:-3}
script=ssh-sps session="at-sps-ssh-$$"
. scripts/lib.sh
need tmux go ssh ssh-keygen python3
work=$(mktemp -d)
at="$work/agenttrainer"
serve_pid=""
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  stop_trainings "$at" "$work/runs"
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$at" .

ssh-keygen -q -t ed25519 -N "" -C viewer@sps -f "$work/viewer"
cp "$work/viewer.pub" "$work/authorized_keys"
chmod 600 "$work/authorized_keys"
"$at" serve --ssh 127.0.0.1:0 --authorized-keys "$work/authorized_keys" --host-key "$work/host/key" --runs-dir "$work/runs" \
  >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 100); do grep -q "over SSH on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*over SSH on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.out")
[ -n "$port" ] || { echo "ssh-sps: the server did not start" >&2; cat "$work/serve.err" >&2; exit 1; }
echo "[127.0.0.1]:$port $(cat "$work/host/key.pub")" >"$work/known_hosts"
client="ssh -F /dev/null -p $port -i $work/viewer -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile=$work/known_hosts -o StrictHostKeyChecking=yes viewer@127.0.0.1"

fail() { echo "ssh-sps: $*" >&2; for w in a b; do screen "$w" >&2 2>/dev/null || true; done; exit 1; }

# second_half RUN_DIR: steps per second over the run's second half.
second_half() {
  python3 - "$1/metrics.jsonl" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
last = recs[-1]
mid = next(r for r in recs if r["step"] >= last["step"] / 2)
print(f'{(last["step"] - mid["step"]) / (last["time_s"] - mid["time_s"]):.0f}')
EOF
}

measure() { # $1: none | two; prints the second-half steps/s
  local out run
  out=$("$at" train --detach ppo.total_timesteps="$steps" trainer.runs_dir="$work/runs" trainer.device=cpu)
  run=$(sed -n 's/^run directory: //p' <<<"$out")
  if [ "$1" = two ]; then
    tmux new-session -d -s "$session" -n a -x 120 -y 40 "$client; sleep 600"
    tmux new-window -d -t "$session" -n b "$client; sleep 600"
    for w in a b; do
      wait_for "Pick an environment" 20 "$w"
      tmux send-keys -t "$session:$w" 4
      wait_for "training now" 15 "$w"
      tmux send-keys -t "$session:$w" a
    done
    for w in a b; do wait_for "● running" 15 "$w"; done
    sleep 1
    local at_step
    at_step=$(step_now b)
    if ((at_step < 0 || at_step > steps / 2)); then
      echo "ssh-sps: the viewers attached at step $at_step, after the measured half; use more STEPS" >&2; exit 1
    fi
  fi
  while [ -e "$run/control.json" ]; do sleep 0.5; done
  if [ "$1" = two ]; then
    # The viewer sees "■ done", or, when the training closed its control
    # socket before this viewer's queue drained, "lost the training" (a
    # known race in the control server; the run itself finished).
    screen b | grep -qE "■ done|lost the training" || { echo "ssh-sps: the viewer did not see the run end:" >&2; screen b >&2; exit 1; }
    tmux kill-session -t "$session"
  fi
  second_half "$run"
}

none=() two=()
for i in $(seq "$repeats"); do
  n=$(measure none); none+=("$n")
  w=$(measure two); two+=("$w")
  echo "round $i: no viewers $n steps/s · two SSH viewers $w steps/s"
done
python3 - "${none[*]}" "${two[*]}" <<'EOF'
import statistics, sys
none = [float(x) for x in sys.argv[1].split()]
two = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(none), statistics.median(two)
print(f"median: no viewers {a:.0f} steps/s · two SSH viewers {b:.0f} steps/s · ratio {b / a:.3f} (goal ≥ 0.95)")
EOF
