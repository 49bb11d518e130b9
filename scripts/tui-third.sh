#!/usr/bin/env bash
# Drives the real terminal app in tmux through what issue 28 (the app's
# third generation) fixed and added, at 120×40 and at 80×24, and fails when
# the screen does not show it. Each numbered step names the defect (D2 …)
# or feature it shows; every screen it checks is kept in SCREENS_DIR.
#
#   one source of truth: agent.name=random in the editor → the picker ticks
#   random, the title says random, s trains random (D2); env.id=CartPol-v1
#   refused with a did-you-mean, MinAtar's preset changes no key, back in
#   the picker nothing is "kept" (D3) → two viewers: a run paused in one app
#   shows paused in a second one, whose p resumes it, and whose q leaves it
#   training (D5, D7) → a sweep: the trial cursor keeps its trial, x asks
#   (D6), the whole sweep stops from its tab (asked) → charts: a 0.9 s run on
#   a wall-clock axis in tenths of seconds (D8), CartPole's plateau on the
#   row labelled 500 in the 80×24 grid (D11), the cursor reading a record,
#   smoothing as a value, hide/highlight among overlaid runs → the runs
#   browser resumes a stopped run → a searchable log → a notice when a run
#   ends.
#
#   scripts/tui-third.sh [SCREENS_DIR]       (VIA=ssh: the same over serve --ssh and OpenSSH)
#   SIZES="120x40 80x24" by default.
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-third session="at-third-$$"
. scripts/lib.sh
need tmux go python3

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
at="$work/agenttrainer"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_serves; for d in "$work"/*/; do stop_trainings "$at" "$d/runs"; done; rm -rf "$work"' EXIT
go build -o "$at" .

shot() { screen "${2:-}" >"$shots/$1.txt"; }
# refuse TEXT [WINDOW]: the screen does not show TEXT.
refuse() { ! screen "${2:-}" | grep -qF -- "$1" || fail "did not expect \"$1\" on the screen"; }
# wait_gone TEXT [SECONDS]: until the screen no longer shows TEXT.
wait_gone() {
  local deadline=$((SECONDS + ${2:-15}))
  while screen | grep -qF -- "$1"; do
    ((SECONDS <= deadline)) || fail "the screen still shows \"$1\""
    sleep 0.1
  done
}
# wkeys WINDOW KEY...: keys into one window.
wkeys() { local w=$1; shift; for k in "$@"; do tmux send-keys -t "$session:$w" "$k"; sleep 0.15; done; }
# edit KEY VALUE: set a key in the config editor (on screen) to VALUE.
edit() { keys /; type_text "$1"; keys Enter Enter C-u; type_text "$2"; keys Enter; }

for size in ${SIZES:-120x40 80x24}; do
  w=${size%x*} h=${size#*x}
  dir="$work/$size"
  mkdir -p "$dir"
  echo "$script: $size${VIA:+ over $VIA}"

  # Runs to look at: a short one (under a second: D8), one that reaches
  # CartPole's plateau (D11), one stopped with a checkpoint (resume).
  (
    cd "$dir"
    "$at" train --quiet trainer.runs_dir=runs trainer.threads=1 trainer.name=short ppo.total_timesteps=8192 >/dev/null
    "$at" train --quiet trainer.runs_dir=runs trainer.threads=1 trainer.name=plateau ppo.total_timesteps=300000 >/dev/null
    # Stopped by hand (SIGTERM) a few seconds in: it keeps a checkpoint.
    timeout -s TERM 4 "$at" train --quiet trainer.runs_dir=runs trainer.threads=1 trainer.name=halted ppo.total_timesteps=40000000 >/dev/null || true
  )
  stopped=$(ls -d "$dir"/runs/*-halted)
  ls "$stopped"/checkpoints/*.safetensors >/dev/null || fail "the halted run kept no checkpoint"

  tmux new-session -d -s "$session" -x "$w" -y "$h" -c "$dir" \
    "$(app_command "$dir" ppo.total_timesteps=20000000 trainer.threads=1); echo \"agenttrainer exited with \$?\"; sleep 600"
  wait_for "Pick an environment and an agent" 20

  # D2: one source of truth for the pending config.
  keys Enter Enter
  wait_for "Config CartPole-v1 · mlp"
  edit agent.name random
  wait_for "agent.name = \"random\""
  keys 1
  wait_for "✓ random"
  shot "$size-D2-picker-ticks-random"
  keys 2
  wait_for "Config CartPole-v1 · random"
  shot "$size-D2-editor-title-random"
  keys 1 s
  wait_for "CartPole-v1 · random" 30
  wait_for "● running" 30
  shot "$size-D2-trains-random"
  keys x y
  wait_for "■ stopped" 60

  # D3: an unknown environment refused on entry; MinAtar's preset is no change.
  keys 2
  wait_for "[2 config]"
  keys d                                         # agent.name back to the preset
  wait_for "Config CartPole-v1 · mlp"
  keys g
  edit env.id CartPol-v1
  wait_for "did you mean CartPole-v1?"
  shot "$size-D3-did-you-mean"
  keys C-u; type_text MinAtar/Breakout-v1; keys Enter
  wait_for "Config MinAtar/Breakout-v1 · cnn"
  expect "preset values"
  shot "$size-D3-minatar-preset"
  keys Escape 1
  wait_for "✓ cnn"
  refuse "kept your changes"
  shot "$size-D3-picker-nothing-kept"
  keys /; type_text CartPole; keys Enter Enter
  wait_for "✓ mlp"

  # D5 and D7: a training started elsewhere, paused in this app, shows
  # paused in a second app, whose p resumes it and whose q leaves it.
  run=$(cd "$dir" && "$at" train --detach trainer.runs_dir=runs trainer.threads=1 trainer.name=shared ppo.total_timesteps=50000000 | sed -n 's/^run directory: //p')
  [ -n "$run" ] || fail "the detached training did not start"
  keys 4
  wait_for "1 training now" 20
  keys /; type_text shared; keys Enter
  wait_for 'filter "shared"'
  keys a
  wait_for "● running" 20
  keys p
  wait_for "‖ paused" 30
  tmux new-window -t "$session" -n b -c "$dir" \
    "$(app_command "$dir"); echo \"agenttrainer exited with \$?\"; sleep 600"
  wait_for "Pick an environment and an agent" 20 b
  wait_for "1 run training in the background" 20 b
  wkeys b 3
  wait_for "‖ paused" 20 b
  refuse "starting" b
  shot "$size-D5-second-app-sees-paused" b
  wkeys b p
  wait_for "● running" 30 b
  wait_for "● running" 30 0
  shot "$size-D5-second-app-resumed" b
  shot "$size-D5-first-app-sees-running" 0
  wkeys b q
  wait_for "agenttrainer exited with 0" 20 b
  screen b | grep -qF "detached; the training goes on in" || fail "window b's q did not leave the run training"
  shot "$size-D7-q-leaves-the-run" b
  tmux kill-window -t "$session:b"
  "$at" ps --runs-dir "$dir/runs" | grep -qF "$(basename "$run")" || fail "the shared run stopped when app B quit"

  # A notice when a run ends: stop the shared run from another terminal.
  (cd "$dir" && "$at" ps --runs-dir runs | awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1 }' | xargs -r kill)
  wait_for "CartPole-v1·mlp stopped at" 60
  shot "$size-notice-run-ended"

  # A searchable log.
  keys L
  wait_for "Log #"
  keys /; type_text "paused"; keys Enter
  wait_for "/paused: 1 of"
  shot "$size-log-search"
  keys Escape

  # D6: a sweep whose trials run; the cursor keeps its trial; x asks.
  cat >"$dir/spec.toml" <<'TOML'
name = "lr"
seeds = [1]
budget = 2000000
parallel = 2
[base]
"trainer.threads" = 1
[params]
"ppo.learning_rate" = [0.0001, 0.001, 0.01]
TOML
  (cd "$dir" && exec "$at" sweep spec.toml trainer.runs_dir=runs >"$dir/sweep.out" 2>&1) &
  keys 5
  wait_for "lr " 30
  wait_for "◆ lr" 30
  keys Enter
  wait_for "Sweep lr · running" 20
  wait_for "running" 30
  keys Down
  chosen=$(screen | sed -n 's/^▸ \(trial-[0-9]*\).*/\1/p')
  [ -n "$chosen" ] || fail "no trial under the cursor"
  sleep 3 # the trials' returns move; the list re-sorts
  screen | grep -q "^▸ $chosen" || fail "the cursor left $chosen as the list re-sorted"
  keys x
  wait_for "Stop $chosen of lr?"
  shot "$size-D6-trial-stop-asks"
  keys n
  keys Escape x
  wait_for "Stop the sweep lr?"
  shot "$size-sweep-stop-asks"
  keys y
  wait_for "asked the sweep lr to stop" 20
  deadline=$((SECONDS + 90))
  until ! pgrep -f "$at sweep spec.toml" >/dev/null; do
    ((SECONDS <= deadline)) || fail "the sweep did not stop"
    sleep 0.5
  done
  keys C-r
  wait_gone "◆ lr" 20
  shot "$size-sweep-stopped"

  # D8: a run under a second on a wall-clock axis.
  keys 4 /; type_text short; keys Enter Enter
  wait_for "over env steps" 20
  keys t
  wait_for "over wall-clock time" 10
  screen | grep -qE ' 0\.[0-9]+s ' || fail "D8: no tick in tenths of a second on the wall-clock axis"
  shot "$size-D8-wall-clock-tenths"
  keys t Escape Escape

  # D11: the 80×24 grid puts CartPole's plateau on the row labelled 500.
  keys /; type_text plateau; keys Enter Enter
  wait_for "over env steps" 20
  keys g
  wait_for "ep_return_mean" 10
  screen | python3 -c '
import re, sys
rows = [l for l in sys.stdin if re.match(r"^│\s*500│", l)]
if not rows or not re.search("[\u2801-\u28ff]", rows[0]):
    sys.exit("no braille on the row labelled 500: " + repr(rows))' || fail "D11: the plateau is not on the 500 row"
  shot "$size-D11-grid-plateau-on-500"
  keys g

  # The cursor reads a record; smoothing is a value.
  keys Right
  wait_for "│ step" 10
  keys m
  wait_for "smoothing 0.8" 10
  shot "$size-cursor-and-smoothing"
  keys Escape Escape Escape

  # Hide and highlight among runs overlaid.
  keys /; type_text "short"; keys Enter Space Escape /; type_text plateau; keys Enter Space c
  wait_for "Comparing 2 runs" 20
  keys v
  wait_for "1 hidden"
  keys v ']' f
  wait_for "(highlighted)"
  shot "$size-overlay-highlight"
  keys Escape Escape

  # Resume a stopped run from the runs browser.
  keys /; type_text halted; keys Enter
  wait_for 'filter "halted"'
  keys r
  wait_for "● running" 60
  expect "$(basename "$stopped")"
  shot "$size-resumed-from-browser"
  keys x y
  wait_for "■ stopped" 60

  keys q
  wait_for "agenttrainer exited with 0" 30
  tmux kill-session -t "$session"
  for d in "$dir"/runs/*/; do stop_trainings "$at" "$dir/runs"; done
done
echo "$script: PASS (screens in $shots)"
