#!/usr/bin/env bash
# Drives the real terminal app in tmux through what the second generation
# added, at 120×40 and at 80×24, and fails when the screen does not show it:
#
#   switch screens with 1–5 and tab (also while a run trains) → start a
#   second run beside the first and switch the dashboard between them with
#   ] and [ → chart entropy (c, a filter) and then the grid (g) → toggle
#   wall-clock X (t) and log Y (l) → quit, detaching both runs.
#
#   scripts/tui-runs.sh [SCREENS_DIR]        (VIA=ssh: the same over serve --ssh and OpenSSH)
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-runs session="at-runs-$$"
. scripts/lib.sh
need tmux go

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
at="$work/agenttrainer"
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_serves; for s in 120x40 80x24; do stop_trainings "$at" "$work/$s/runs"; done; rm -rf "$work"' EXIT
go build -o "$at" .


for size in 120x40 80x24; do
  w=${size%x*} h=${size#*x}
  mkdir -p "$work/$size"
  tmux new-session -d -s "$session" -x "$w" -y "$h" -c "$work/$size" \
    "$(app_command "$work/$size" ppo.total_timesteps=20000000); echo \"agenttrainer exited with \$?\"; sleep 600"
  wait_for "Pick an environment and an agent" 20

  # 1. The tab bar: 1–5 jump, tab and shift+tab cycle.
  keys 2; wait_for "[2 config]"; expect "KEY"
  keys 4; wait_for "[4 runs]"
  keys 3; wait_for "[3 train]"; expect "No training yet"
  keys Tab; wait_for "[4 runs]"
  keys Tab; wait_for "[5 sweeps]"
  keys Tab; wait_for "[1 pick]"
  keys BTab; wait_for "[5 sweeps]"
  keys 5; wait_for "Sweeps in runs"
  keys 1; wait_for "[1 pick]"

  # 2. A first run; the picker and the editor stay usable while it trains.
  keys s
  wait_for "● running" 30
  keys 1; wait_for "1 training · 3 shows it"
  keys 2; wait_for "[2 config]"
  keys 1 /; type_text MountainCar-v0; keys Enter s # a second run, on MountainCar
  wait_for "2 training" 30
  wait_for "MountainCar-v0 · mlp" 10 # the dashboard follows the new run
  expect "#2 MountainCar-v0·mlp"
  screen >"$shots/$size-01-two-runs.txt"
  keys ']'; wait_for "CartPole-v1 · mlp"
  keys '['; wait_for "MountainCar-v0 · mlp"

  # 3. Any metric: entropy, then the grid; wall-clock X, log Y.
  keys c; type_text entr; wait_for "▸ entropy"; keys Enter
  wait_for "─ entropy"
  screen >"$shots/$size-02-entropy.txt"
  keys g; wait_for "─ approx_kl"; expect "─ value_loss"
  screen >"$shots/$size-03-grid.txt"
  keys g t
  if ((w >= 120)); then wait_for "entropy over wall-clock time"; else wait_for "entropy (time)"; fi
  keys l; wait_for "· log"
  screen >"$shots/$size-04-time-log.txt"

  # 4. Quit leaves both runs training in their processes.
  keys q; wait_for "Stop the 2 trainings and quit?"
  expect "n: "
  keys d; wait_for "agenttrainer exited with 0" 20
  tmux kill-session -t "$session"
done
echo "tui-runs: PASS (screens in $shots)"
