#!/usr/bin/env bash
# Drives the real terminal app in tmux through a language-model run (issue
# 27 item 6), at 120×40 and at 80×24, and fails when the screen does not
# show it: pick text FrozenLake (the lm agent comes with it), start, watch
# the transcripts beside the curves (T at 80×24), change the temperature
# live, open the run's transcripts in the runs browser and filter them,
# watch the latest group replayed turn by turn.
# Every screen it checks is kept in SCREENS_DIR.
#
#   scripts/tui-lm.sh [SCREENS_DIR]       (VIA=ssh: the same over serve --ssh and OpenSSH)
#   SIZES="120x40 80x24" by default.
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-lm session="at-lm-$$"
. scripts/lib.sh
need tmux go

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
at="$work/agenttrainer"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_serves; for d in "$work"/*/; do stop_trainings "$at" "$d/runs"; done; rm -rf "$work"' EXIT
go build -o "$at" .

# A small model on a small batch, so that an iteration takes seconds on
# two cores; the prompt limit fits rLLM's FrozenLake system prompt in
# characters.
lm=(data.max_prompt_length=4000 data.max_response_length=24 data.train_batch_size=2 rollout.n=4 trainer.total_training_steps=500)

shot() { screen >"$shots/$1.txt"; }
# refuse TEXT: the screen does not show TEXT.
refuse() { ! screen | grep -qF -- "$1" || fail "did not expect \"$1\" on the screen"; }
# wait_gone TEXT [SECONDS]: until the screen no longer shows TEXT.
wait_gone() {
  local deadline=$((SECONDS + ${2:-15}))
  while screen | grep -qF -- "$1"; do
    ((SECONDS <= deadline)) || fail "the screen still shows \"$1\""
    sleep 0.1
  done
}

for size in ${SIZES:-120x40 80x24}; do
  w=${size%x*} h=${size#*x}
  dir="$work/$size"
  mkdir -p "$dir"
  echo "$script: $size${VIA:+ over $VIA}"
  tmux kill-session -t "$session" 2>/dev/null || true
  tmux new-session -d -s "$session" -x "$w" -y "$h" -c "$dir" "$(app_command "$dir" "${lm[@]}")"
  wait_for "Pick an environment" 30

  # 1. The picker: text FrozenLake is listed as text, and lm comes with it.
  keys / ; type_text TextFrozen ; keys Enter
  wait_for "TextFrozenLake-v0"
  keys Enter
  wait_for "a text environment for language-model agents"
  expect "✓ lm"
  refuse "✓ mlp"
  shot "$size-1-picker"

  # 2. The editor on the draft, then start.
  keys Enter
  wait_for "TextFrozenLake-v0 · lm" 10
  shot "$size-2-editor"
  keys s
  wait_for "TextFrozenLake-v0 · lm  ● running" 60

  # 3. Transcripts beside the curves (in the chart's place with T at 80×24).
  if [ "$w" -lt 100 ]; then
    wait_for "figures" 60
    wait_for "ep length" 180 && sleep 1
    keys T
  fi
  wait_for "transcripts · iter" 180
  wait_for "model│" 30
  shot "$size-3-transcripts"

  # 4. The temperature, live.
  [ "$w" -lt 100 ] && keys T
  keys e
  wait_for "Live edit TextFrozenLake-v0 · lm" 10
  keys / ; type_text temperature ; keys Enter
  wait_for "rollout.temperature" 5
  keys Enter C-u ; type_text 0.7 ; keys Enter
  wait_for "0.7" 10
  shot "$size-4-live-edit"
  keys Escape   # clears the key filter
  wait_gone "/temperature (" 10
  keys Escape   # back to the dashboard
  wait_for "rollout.temperature = 0.7 (was 1.0)" 120   # the log
  [ "$w" -lt 100 ] && keys T
  wait_for "transcripts · iter" 60
  wait_for "live edit, the last rollout.temperature = 0.7" 60
  shot "$size-5-dashboard-after-edit"

  # 5. The runs browser opens the run's transcripts; c keeps the wrong ones.
  keys 4
  wait_for "TextFrozenLake-v0" 20
  keys T
  wait_for "Transcripts · iteration" 20
  expect "── iteration"
  shot "$size-6-runs-transcripts"
  keys c c a
  wait_for "all iterations · wrong only" 10
  refuse " ✓ reward"
  shot "$size-7-runs-transcripts-wrong"
  keys Escape
  wait_gone "Transcripts ·" 10

  # 6. Watch: the latest group replayed a turn at a time, grid and words.
  keys w
  wait_for "returns   1:" 60   # (a turn's "model: " frame may go by between two looks at 20 fps)
  expect " _  "   # the grid
  shot "$size-8-watch"
  keys Escape
  wait_for "TextFrozenLake-v0" 10

  # Leave: stop the run and quit.
  keys q
  sleep 0.5
  keys y
  sleep 1
done
echo "$script: ok (screens in $shots)"
