#!/usr/bin/env bash
# Makes the README's pictures from the real binary:
#
#   docs/plot.png  two short CartPole-v1 trainings (learning rates 2.5e-4
#                  and 1e-3, seed 1) drawn by `agenttrainer plot`;
#   docs/app.png   the terminal app's dashboard during a training, driven in
#                  tmux, captured with its colours (capture-pane -e) and
#                  rendered by scripts/ansi2png.
#
#   scripts/readme-pictures.sh
#
# Needs go and tmux. The numbers in the pictures change from machine to
# machine (wall-clock time, steps/s); the curves do not (seeded runs).
set -euo pipefail
cd "$(dirname "$0")/.."
script=readme-pictures session="at-pictures-$$"
. scripts/lib.sh
need go tmux

work=$(mktemp -d)
trap 'tmux kill-session -t "$session" 2>/dev/null || true; stop_trainings "$work/agenttrainer" "$work/runs-app"; rm -rf "$work"' EXIT
fail() {
  echo "$script: FAIL: $*" >&2
  screen >&2 || true
  exit 1
}
go build -o "$work/agenttrainer" .
mkdir -p docs

# 1. Two runs and their curves.
for lr in 2.5e-4 1e-3; do
  "$work/agenttrainer" train --quiet --run-dir "$work/runs/lr=$lr" \
    env.id=CartPole-v1 trainer.seed=1 ppo.learning_rate="$lr" ppo.total_timesteps=200000 >/dev/null
done
"$work/agenttrainer" plot "$work/runs/lr=2.5e-4" "$work/runs/lr=1e-3" \
  --title "CartPole-v1, PPO: two learning rates (seed 1)" --size 960x540 --out docs/plot.png >/dev/null

# 2. The app's dashboard halfway through a training.
tmux new-session -d -s "$session" -x 120 -y 36 -e COLORTERM=truecolor -c "$work" \
  "'$work/agenttrainer' --runs-dir runs-app env.id=CartPole-v1 trainer.seed=1 ppo.total_timesteps=2000000; sleep 600"
wait_for "Pick an environment and an agent" 20
tmux send-keys -t "$session" s
wait_for "● running" 30
deadline=$((SECONDS + 60))
until (($(step_now) >= 700000)); do
  ((SECONDS <= deadline)) || fail "the training never reached 700k steps"
  sleep 0.2
done
tmux capture-pane -e -p -t "$session" | go run ./scripts/ansi2png -out docs/app.png
tmux send-keys -t "$session" q
wait_for "Stop the training and quit?"
tmux send-keys -t "$session" y

ls -l docs/plot.png docs/app.png
