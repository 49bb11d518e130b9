#!/usr/bin/env bash
# Training that outlives the terminal, driven through the real binary in
# tmux: start training in the app, detach (D), kill the terminal, attach
# from a new one, see the run carry on, edit a live key, stop it; then check
# that metrics.jsonl has every iteration exactly once. Fails with the
# screen when something is not as it should be.
#
#   scripts/detach-smoke.sh [SCREENS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
script=detach-smoke session="at-detach-$$"
. scripts/lib.sh
need tmux go python3
work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  [ -n "${run:-}" ] && "$work/agenttrainer" ps --runs-dir "$work/runs" | grep -q "$run" && pkill -f -- "--run-dir $run" || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/agenttrainer" .
at="$work/agenttrainer"

fail() {
  echo "detach-smoke: FAIL: $*" >&2
  screen >&2 2>/dev/null || true
  exit 1
}
keys() { for k in "$@"; do tmux send-keys -t "$session" "$k"; sleep 0.2; done; }

# 1. Start training in the app, then detach from it.
tmux new-session -d -s "$session" -x 120 -y 40 "$at --runs-dir $work/runs ppo.total_timesteps=50000000; sleep 600"
wait_for "Pick an environment"
keys s
wait_for "● running"
wait_for "D detach"
sleep 2
screen >"$shots/1-app-before-detach.txt"
keys D
wait_for "detached; the training goes on in"
run=$(screen | sed -n 's/^detached; the training goes on in //p' | head -1)
[ -d "$run" ] || fail "no run directory in the detach message"
# 2. Kill the terminal.
tmux kill-session -t "$session"
sleep 2
"$at" ps --runs-dir "$work/runs" | grep -qF "$run" || fail "ps does not list the detached run"
# 3. Attach from a new terminal: the curve carries on.
tmux new-session -d -s "$session" -x 120 -y 40 "$at attach $run; sleep 600"
wait_for "● running"
first=$(step_now)
sleep 3
second=$(step_now)
((second > first && first > 0)) || fail "the step counter did not advance after attaching ($first → $second)"
screen >"$shots/2-attached.txt"
# 4. Edit a live key through the socket.
keys e /
tmux send-keys -t "$session" -l "ent_coef"
keys Enter Enter C-u
tmux send-keys -t "$session" -l "0.02"
keys Enter
wait_for "ppo.ent_coef = 0.02 applies from the next iteration"
sleep 1
grep -q '"key":"ppo.ent_coef","value":"0.02"' "$run/edits.jsonl" || fail "edits.jsonl lacks the edit"
# 5. Stop it: x asks; (q would leave it training: this app attached to it.)
keys Escape Escape x
wait_for "Stop the training?"
keys y
wait_for "run stopped"
sleep 1
"$at" ps --runs-dir "$work/runs" | grep -qF "$run" && fail "the run is still live after stopping"
python3 - "$run/metrics.jsonl" <<'PY' || fail "metrics.jsonl has a gap or a repeat"
import json, sys
iters = [json.loads(l)["iter"] for l in open(sys.argv[1])]
assert iters == list(range(1, len(iters) + 1)), "not consecutive"
print(f"detach-smoke: {len(iters)} iterations in metrics.jsonl, none missing or repeated")
PY
grep -q "^stopped" "$run/train.log" || fail "train.log does not say the run stopped"
echo "detach-smoke: PASS ($first → $second steps while attached; screens in $shots)"
