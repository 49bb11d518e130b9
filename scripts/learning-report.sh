#!/usr/bin/env bash
# Trains each classic-control environment with its preset for three seeds,
# and FrozenLake on 1,000 training / 200 held-out maps with GAE, GRPO and a
# random agent, then prints each run's final figure and the step and wall
# time at which it first reached the target. Needs Go and python3.
#   scripts/learning-report.sh [OUT_DIR]     (about 15 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/agenttrainer-report}
mkdir -p "$out"
go build -o "$out/agenttrainer" .
at="$out/agenttrainer"

run() { # name target args...
  local name=$1 target=$2; shift 2
  "$at" train --quiet --run-dir "$out/$name" "$@" >/dev/null
  python3 - "$out/$name" "$name" "$target" <<'PY'
import json, sys
d, name, target = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = [json.loads(l) for l in open(d + "/metrics.jsonl")]
key = "val_success_rate" if any("val_success_rate" in r for r in rows) else "ep_return_mean"
hit = next((r for r in rows if r.get(key) is not None and r[key] >= target), None)
last = [r for r in rows if r.get(key) is not None][-1]
print(f"{name:34s} {key:17s} final {last[key]:9.3f}  target {target:7.1f}  " +
      (f"first reached at step {hit['step']:>8d} after {hit['time_s']:6.1f} s" if hit else "NOT reached"))
PY
}

for seed in 1 2 3; do
  run "CartPole-v1-seed$seed" 475 env.id=CartPole-v1 trainer.seed=$seed
  run "Acrobot-v1-seed$seed" -100 env.id=Acrobot-v1 trainer.seed=$seed
  run "Pendulum-v1-seed$seed" -250 env.id=Pendulum-v1 trainer.seed=$seed
  run "MountainCar-v0-seed$seed" -120 env.id=MountainCar-v0 trainer.seed=$seed
  run "MountainCarContinuous-v0-seed$seed" 90 env.id=MountainCarContinuous-v0 trainer.seed=$seed
done

"$at" data frozenlake --n 1000 --size 4 --seed 1 --out "$out/fl-train.jsonl" >/dev/null
"$at" data frozenlake --n 200 --size 4 --seed 2 --exclude "$out/fl-train.jsonl" --out "$out/fl-val.jsonl" >/dev/null
fl=(env.id=FrozenLake-v1 "data.train_files=[\"$out/fl-train.jsonl\"]" "data.val_files=[\"$out/fl-val.jsonl\"]" trainer.test_freq=10)
for seed in 1 2 3; do
  run "FrozenLake-gae-seed$seed" 0.9 "${fl[@]}" trainer.seed=$seed ppo.total_timesteps=300000 env.num_envs=16
  run "FrozenLake-grpo-seed$seed" 0.9 "${fl[@]}" trainer.seed=$seed ppo.total_timesteps=500000 env.num_envs=64 \
    ppo.num_steps=100 ppo.adv_estimator=grpo ppo.group_size=8
done
run "FrozenLake-random" 0.9 "${fl[@]}" agent.name=random ppo.total_timesteps=20480 env.num_envs=16
