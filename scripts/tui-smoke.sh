#!/usr/bin/env bash
# Drives the real terminal app in tmux the way a newcomer would, and fails
# when the screen does not show what it should:
#
#   pick CartPole-v1 → edit the config (a bad value first) → train a short
#   run to the end → start a second run → see the curve and a rising return →
#   change ppo.ent_coef live (and find it in edits.jsonl) → pause → resume →
#   open the runs browser and overlay both runs → quit, which asks first and
#   stops the training cleanly.
#
#   scripts/tui-smoke.sh [SCREENS_DIR]
#
# Every captured screen is kept in SCREENS_DIR (default: a new temporary
# directory), named by step; the last lines printed say where.
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-smoke session="at-smoke-$$"
. scripts/lib.sh
need tmux go python3

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots" "$work/home"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/agenttrainer" .

fail() {
  echo "tui-smoke: FAIL: $*" >&2
  echo "---- screen ----" >&2
  screen >&2 || true
  screen >"$shots/failed.txt" 2>/dev/null || true
  echo "---- screens so far are in $shots" >&2
  exit 1
}

# expect TEXT: the screen shows TEXT now; refuse TEXT: it does not.
expect() { screen | grep -qF -- "$1" || fail "expected \"$1\" on the screen"; }
refuse() { ! screen | grep -qF -- "$1" || fail "did not expect \"$1\" on the screen"; }

# keys KEY...: send keys one by one, giving the app a moment for each.
keys() {
  for k in "$@"; do
    tmux send-keys -t "$session" "$k"
    sleep 0.15
  done
}

# type TEXT: type literal text.
type_text() { tmux send-keys -t "$session" -l "$1"; sleep 0.2; }

shot() { screen >"$shots/$1.txt"; }

# figure NAME: a number from the dashboard's figures panel.
figure() {
  screen | python3 -c '
import re, sys
for line in sys.stdin:
    m = re.search(r"│" + re.escape(sys.argv[1]) + r"\s+(-?[0-9][0-9,.e+-]*)", line)
    if m:
        print(m.group(1).replace(",", "")); break
else:
    print("nan")' "$1"
}

# braille_rows: how many screen rows hold braille dots (the chart's lines).
braille_rows() { screen | python3 -c 'import sys; print(sum(any(0x2801 <= ord(c) <= 0x28FF for c in l) for l in sys.stdin))'; }

latest_run() { ls -d "$work"/home/runs/*/ | sort | tail -n 1; }

echo "tui-smoke: binary $work/agenttrainer, screens in $shots"
tmux new-session -d -s "$session" -x 120 -y 40 -c "$work/home" \
  "'$work/agenttrainer'; echo \"agenttrainer exited with \$?\"; sleep 600"

# 1. The picker lists the registries; filter to CartPole-v1 and choose it.
wait_for "Pick an environment and an agent" 20
expect "CartPole-v1"
expect "discrete(2)"
shot 01-picker
keys /
type_text CartPole
wait_for "/CartPole"
refuse "Acrobot-v1"
keys Enter Enter
expect "✓ CartPole-v1"
keys Enter
wait_for "KEY"
expect "Config CartPole-v1 · mlp"
shot 02-editor

# 2. The editor refuses a bad value inline, with the command line's message.
keys /
type_text total_timesteps
keys Enter Enter C-u
type_text lots
keys Enter
wait_for 'ppo.total_timesteps: expects an integer, got "lots" (a string)'
shot 03-editor-error
keys C-u
type_text 100000
keys Enter
wait_for "ppo.total_timesteps = 100000"
expect "1 key changed"

# 3. A short first run, to the end.
keys s
wait_for "● running" 30
wait_for "■ done" 120
(($(braille_rows) >= 5)) || fail "no reward curve drawn after the first run"
shot 04-first-run-done

# 4. A second, longer run: the curve appears and the return rises.
keys n
wait_for "Pick an environment and an agent"
keys Enter Enter
wait_for "KEY"
keys /
type_text total_timesteps
keys Enter Enter C-u
type_text 5000000
keys Enter
wait_for "ppo.total_timesteps = 5000000"
keys s
wait_for "● running" 30
deadline=$((SECONDS + 30))
until [[ $(figure return) != nan ]]; do
  ((SECONDS <= deadline)) || fail "no ep_return_mean shown"
  sleep 0.2
done
r1=$(figure return)
sleep 4
r2=$(figure return)
if python3 -c "import sys; sys.exit(0 if float('$r1') >= 475 else 1)"; then
  # A fast machine solved it before the first look: compare with the first
  # mean return the run recorded instead.
  r1=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    v = json.loads(line).get("ep_return_mean")
    if v is not None:
        print(v); break' "$(latest_run)/metrics.jsonl")
fi
python3 -c "import sys; sys.exit(0 if float('$r2') > float('$r1') else 1)" ||
  fail "the return did not rise: $r1 then $r2"
(($(braille_rows) >= 5)) || fail "no reward curve drawn"
echo "tui-smoke: return rose from $r1 to $r2"
shot 05-dashboard-learning

# 5. Change ppo.ent_coef live; restart-only keys are locked.
keys e
wait_for "Live edit CartPole-v1 · mlp"
expect "locked"
keys /
type_text num_envs
keys Enter Enter
wait_for "env.num_envs: applies only when a run starts"
keys /
type_text ent_coef
keys Enter Enter C-u
type_text 0.02
keys Enter
wait_for "ppo.ent_coef = 0.02 applies from the next iteration"
shot 06-live-edit
keys Escape Escape # the filter, then the editor
wait_for "● running"
wait_for "ppo.ent_coef = 0.02 (was 0.01)"
run=$(latest_run)
grep -q '"key":"ppo.ent_coef","value":"0.02","old":"0.01"' "$run/edits.jsonl" ||
  fail "edits.jsonl of $run does not record the edit: $(cat "$run/edits.jsonl")"
expect "▾" # the edit's marker on the chart
sleep 1
shot 07-dashboard-mid-training

# 6. Pause: the run stops advancing. Resume: it advances again.
keys p
wait_for "‖ paused" 10
n1=$(wc -l <"$run/metrics.jsonl")
sleep 1.5
n2=$(wc -l <"$run/metrics.jsonl")
((n1 == n2)) || fail "metrics.jsonl grew from $n1 to $n2 lines while paused"
expect "p resume"
shot 08-paused
keys p
wait_for "● running" 10
sleep 1
n3=$(wc -l <"$run/metrics.jsonl")
((n3 > n2)) || fail "metrics.jsonl did not grow after resuming ($n2 → $n3 lines)"

# 7. The runs browser lists both runs; overlay them and diff their configs.
keys 4
wait_for "Runs in runs"
(($(screen | grep -c "CartPole-v1  ") >= 2)) || fail "the runs browser does not list two runs"
expect "training: running" # the header still follows the training
shot 09-runs
keys Space Space c
wait_for "Comparing 2 runs"
expect "config differences"
expect "ppo.total_timesteps"
(($(braille_rows) >= 5)) || fail "no overlaid curves"
shot 10-runs-compare
keys Escape Escape
wait_for "● running"

# 8. Quit asks first, then stops the training cleanly (a final checkpoint).
keys q
wait_for "Stop the training and quit?"
shot 11-confirm-quit
keys y
wait_for "agenttrainer exited with 0" 60
expect "run stopped after"
shot 12-after-quit
[[ -s "$run/checkpoints/latest" ]] || fail "no final checkpoint in $run"

echo "tui-smoke: PASS (screens in $shots)"
