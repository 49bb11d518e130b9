#!/usr/bin/env bash
# Drives the real terminal app in tmux through checkpoints, watching and
# saving charts, at 120×40 and at 80×24, and fails when the screen or the
# disk does not show it:
#
#   start a run that checkpoints every 2 iterations and keeps 2 → ask for a
#   checkpoint by hand (s): the log names its step, and the file is still on
#   disk after the rotation has gone past it → stop the run → in the runs
#   browser, watch a finished run play (pause, single steps, next episode,
#   the return of each episode) → open its curves, zoom to a typed range
#   (Z), save the chart as a PNG (p) and find the picture on disk.
#
#   scripts/tui-watch.sh [SCREENS_DIR]       (VIA=ssh: the same over serve --ssh and OpenSSH)
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-watch session="at-watch-$$"
. scripts/lib.sh
need tmux go python3

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
at="$work/agenttrainer"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_serves; for s in 120x40 80x24; do stop_trainings "$at" "$work/$s/runs"; done; rm -rf "$work"' EXIT
go build -o "$at" .

# frame_step: the step the watch view's status line shows.
frame_step() { screen | sed -n 's/.*episode [0-9]* of 5 · step \([0-9]*\).*/\1/p' | head -1; }
frame_episode() { screen | sed -n 's/.*episode \([0-9]*\) of 5 · step.*/\1/p' | head -1; }

for size in 120x40 80x24; do
  w=${size%x*} h=${size#*x}
  dir="$work/$size"
  mkdir -p "$dir"
  (cd "$dir" && "$at" train ppo.total_timesteps=40960 trainer.threads=1 trainer.runs_dir=runs --quiet >/dev/null)
  finished=$(basename "$(ls -d "$dir"/runs/*/ | head -1)")
  tmux new-session -d -s "$session" -x "$w" -y "$h" -c "$dir" \
    "$(app_command "$dir" trainer.save_freq=2 trainer.keep_checkpoints=2 ppo.total_timesteps=50000000 trainer.threads=1); echo \"agenttrainer exited with \$?\"; sleep 600"
  wait_for "Pick an environment and an agent" 20

  # 1. A checkpoint asked for by hand is pinned and outlives the rotation.
  keys s
  wait_for "● running" 30
  sleep 1
  keys s
  wait_for "pinned: the rotation keeps it" 20
  screen >"$shots/$size-01-pinned.txt"
  live=$(ls -dt "$dir"/runs/*/ | head -1)
  pstep=$(sed -n 's/.*checkpoint saved at step \([0-9]*\) as asked.*/\1/p' "$shots/$size-01-pinned.txt" | head -1)
  [ -n "$pstep" ] || fail "the log does not name the pinned checkpoint's step"
  pinned="step-$pstep.safetensors"
  expect "$pinned"
  deadline=$((SECONDS + 60))
  until newest=$(ls "$live/checkpoints" | sed -n 's/^step-\([0-9]*\)\.safetensors$/\1/p' | sort -n | tail -1) &&
    ((newest > pstep + 20 * 512)); do # the rotation (2 kept, one every 2 iterations) is well past it
    ((SECONDS <= deadline)) || fail "no checkpoint well past step $pstep after 60 s (newest: ${newest:-none})"
    sleep 0.5
  done
  [ -f "$live/checkpoints/$pinned" ] || fail "$pinned is gone from $live/checkpoints: $(ls "$live/checkpoints")"
  kept=$(ls "$live/checkpoints" | grep -c '^step-.*\.safetensors$')
  ((kept <= 4)) || fail "the rotation keeps $kept checkpoints, want 2 and the pinned one (and one being written)"
  echo "$size: $pinned kept on disk after the rotation reached step $newest ($kept checkpoint files)" >>"$shots/summary.txt"
  keys x y
  wait_for "■ stopped" 30

  # 2. Watch the finished run: pause, single steps, next episode, returns.
  keys 4
  wait_for "CartPole-v1-mlp" 20 # (at 80 columns the list names a run by its start and the rest)
  keys /; type_text "state:done"; keys Enter
  wait_for "1 of 2"
  keys w
  wait_for "fps · episode" 20
  keys Space
  wait_for "⏸ paused"
  s0=$(frame_step)
  keys . . .
  sleep 0.5
  s1=$(frame_step)
  ((s1 == s0 + 3)) || fail "three single steps went from step $s0 to $s1"
  screen >"$shots/$size-02-watch-paused.txt"
  e0=$(frame_episode)
  keys n
  deadline=$((SECONDS + 20))
  until [ "$(frame_episode)" = $((e0 + 1)) ]; do
    ((SECONDS <= deadline)) || fail "n did not move on to episode $((e0 + 1))"
    sleep 0.1
  done
  expect "⏸ paused"
  expect "returns   1:"
  keys Space + + + +
  wait_for "5 episodes: return" 60
  screen >"$shots/$size-03-watch-done.txt"
  keys Escape

  # 3. Its curves: a typed range, then the chart as a PNG.
  keys Enter
  wait_for "ep_return_mean over env steps" 15
  keys Z; type_text "10k-30k"; keys Enter
  wait_for "· 10k-30k"
  screen >"$shots/$size-04-range.txt"
  keys p
  wait_for "saved runs/$finished/ep_return_mean.png" 30
  python3 - "$dir/runs/$finished/ep_return_mean.png" <<'PY' || fail "the saved chart is not a 960×600 PNG"
import struct, sys
b = open(sys.argv[1], "rb").read(24)
assert b[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", b[16:24]) == (960, 600), b
PY
  cp "$dir/runs/$finished/ep_return_mean.png" "$shots/$size-05-saved-chart.png"
  keys Escape Escape
  keys q
  wait_for "agenttrainer exited with 0" 20
  tmux kill-session -t "$session"
done
cat "$shots/summary.txt"
echo "tui-watch: PASS (screens in $shots)"
