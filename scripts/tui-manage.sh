#!/usr/bin/env bash
# Drives the real terminal app in tmux through managing runs in the runs
# browser, at 120×40 and at 80×24, and fails when the screen does not show
# it:
#
#   three finished runs and one training in the background → filter
#   (env:, state:) → sort by best → tag, note and rename a finished run
#   (and `agenttrainer runs --tag` sees it) → the detail view → delete it
#   after the confirmation → refuse to delete the live one.
#
#   scripts/tui-manage.sh [SCREENS_DIR]      (VIA=ssh: the same over serve --ssh and OpenSSH)
set -euo pipefail
cd "$(dirname "$0")/.."
script=tui-manage session="at-manage-$$"
. scripts/lib.sh
need tmux go

work=$(mktemp -d)
shots=${1:-$(mktemp -d)}
mkdir -p "$shots"
live_pid=
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_serves; [ -n "$live_pid" ] && kill "$live_pid" 2>/dev/null; rm -rf "$work"' EXIT
go build -o "$work/agenttrainer" .
at="$work/agenttrainer"


for size in 120x40 80x24; do
  w=${size%x*} h=${size#*x}
  dir="$work/$size"
  mkdir -p "$dir"
  (
    cd "$dir"
    for env in CartPole-v1 Acrobot-v1 MountainCar-v0; do
      "$at" train env.id=$env ppo.total_timesteps=4096 trainer.threads=1 trainer.runs_dir=runs >/dev/null
      sleep 1 # run directories are named to the second
    done
  )
  (cd "$dir" && exec "$at" train ppo.total_timesteps=50000000 trainer.threads=1 trainer.runs_dir=runs >/dev/null 2>&1) &
  live_pid=$!
  deadline=$((SECONDS + 30)) # the app attaches at start-up to what trains then
  until "$at" ps --runs-dir "$dir/runs" 2>/dev/null | grep -q '^[0-9]'; do
    ((SECONDS <= deadline)) || fail "the background training did not start"
    sleep 0.1
  done
  tmux new-session -d -s "$session" -x "$w" -y "$h" -c "$dir" \
    "$(app_command "$dir"); echo \"agenttrainer exited with \$?\"; sleep 600"
  wait_for "Pick an environment and an agent" 20
  keys 4
  wait_for "1 training now" 20
  expect "sort started ↓"

  # Filter by env, then by state.
  keys /; type_text "env:acrobot"; keys Enter
  wait_for 'filter "env:acrobot" 1 of 4'
  keys Escape
  wait_for "sort started ↓"
  # Sort: s walks started → name → env → agent → steps → best.
  keys s s s s s
  wait_for "sort best ↓"
  screen >"$shots/$size-01-sorted.txt"
  keys S; wait_for "sort best ↑"

  # Tag, note and rename the finished Acrobot run.
  keys /; type_text "state:done env:acrobot"; keys Enter
  wait_for "1 of 4"
  keys t; type_text "baseline keep"; keys Enter
  wait_for "#baseline #keep"
  keys e; type_text "the good one"; keys Enter
  wait_for "#baseline #keep the good one"
  keys n C-u; type_text "acro-best"; keys Enter
  wait_for "▸    "; wait_for "acro-best"
  screen >"$shots/$size-02-managed.txt"
  "$at" runs --runs-dir "$dir/runs" --tag baseline | grep -q "acro-best .*baseline,keep .*the good one" ||
    fail "agenttrainer runs --tag baseline does not list the run: $("$at" runs --runs-dir "$dir/runs")"

  # The detail view.
  keys i
  wait_for "Config: "
  expect "Checkpoints: "
  expect "SPS"
  screen >"$shots/$size-03-detail.txt"
  keys Escape; wait_for "acro-best"

  # Delete it, after the confirmation.
  keys d
  wait_for "Delete acro-best and all its files?"
  keys y
  wait_for "deleted runs/"
  keys Escape
  wait_for "sort best ↑"
  [ "$(ls "$dir/runs" | wc -l)" = 3 ] || fail "expected 3 runs left: $(ls "$dir/runs")"

  # A live run is not deleted.
  keys /; type_text "state:live"; keys Enter
  wait_for "1 of 3"
  keys d
  wait_for "not deleted: it is training now"
  [ "$(ls "$dir/runs" | wc -l)" = 3 ] || fail "the live run was deleted"
  screen >"$shots/$size-04-refused.txt"

  # The app attached to the background training at start, which it did not
  # start: q leaves it training without a question.
  keys q
  wait_for "agenttrainer exited with 0" 20
  tmux kill-session -t "$session"
  kill "$live_pid" 2>/dev/null || true
  wait "$live_pid" 2>/dev/null || true
  live_pid=
done
echo "tui-manage: PASS (screens in $shots)"
