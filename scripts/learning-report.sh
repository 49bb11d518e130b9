#!/usr/bin/env bash
# Learning report: trains each environment with its preset and prints each
# run's final figure against a target or published baselines. Needs Go
# (unless AGENTTRAINER names a built binary) and python3.
#
#   scripts/learning-report.sh [classic] [OUT_DIR]
#       the five classic-control environments, three seeds each, and
#       FrozenLake on 1,000 training / 200 held-out maps with GAE, GRPO and a
#       random agent: each run's final figure and the step and wall time at
#       which it first reached the target (about 15 minutes on 2 cores).
#   scripts/learning-report.sh minatar [OUT_DIR]
#       the five MinAtar games (MinAtar/<Game>-v1, the minimal action sets,
#       sticky actions and difficulty ramping on) with the MinAtar preset,
#       seeds SEEDS (default "1 2 3"; GAMES names fewer games),
#       MINATAR_STEPS steps each (default
#       5,000,000: the budget of the MinAtar paper's baselines), JOBS
#       trainings at a time (default the number of CPUs; each on one
#       thread). MINATAR_ARGS adds KEY=VALUE overrides to every training
#       (MINATAR_ARGS=env.args.sticky_action_prob=0 for gymnax's protocol,
#       without sticky actions); give each protocol its own OUT_DIR. A run
#       already in OUT_DIR is resumed from its last checkpoint, or kept if
#       finished. Then the table, with the published baselines beside.
#   scripts/learning-report.sh minatar-table [OUT_DIR]
#       the table alone, from the runs in OUT_DIR (finished or not).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=classic
case ${1:-} in classic | minatar | minatar-table) mode=$1; shift ;; esac
out=${1:-/tmp/agenttrainer-report}
mkdir -p "$out"
at=${AGENTTRAINER:-}
if [ -z "$at" ] && [ "$mode" != minatar-table ]; then
  go build -o "$out/agenttrainer" .
  at="$out/agenttrainer"
fi

minatar_games=(${GAMES:-Asterix Breakout Freeway Seaquest SpaceInvaders})

minatar_table() {
  python3 - "$out" "${minatar_games[@]}" <<'PY'
import json, os, statistics, sys
out, games = sys.argv[1], sys.argv[2:]
# Published results (README, "MinAtar learning", gives the sources): the
# MinAtar paper's DQN and AC(lambda) at 5M steps (read off its figure; sticky
# actions), gymnax's PPO at 10M steps (no sticky actions, one seed).
published = {
    "Asterix": "DQN ~17, AC(lambda) ~18.8 (5M, sticky); gymnax PPO 15.0 (10M, no sticky)",
    "Breakout": "DQN ~10, AC(lambda) ~17.5 (5M, sticky); gymnax PPO 28.0 (10M, no sticky)",
    "Freeway": "DQN ~50.2, AC(lambda) ~47.5 (5M, sticky); gymnax PPO 58.8 (10M, no sticky)",
    "Seaquest": "DQN ~20.1, AC(lambda) ~15.3 (5M, sticky); gymnax PPO: none",
    "SpaceInvaders": "DQN ~43.5, AC(lambda) ~184 (5M, sticky); gymnax PPO 131.6 (10M, no sticky)",
}
print(f"{'game':14s} {'seed':>4s} {'steps':>10s} {'return (last 100 episodes)':>27s} {'steps/s':>8s}")
for g in games:
    finals = []
    for seed in sorted(int(d.rsplit("seed", 1)[1]) for d in os.listdir(out)
                       if d.startswith(f"MinAtar-{g}-seed") and d.rsplit("seed", 1)[1].isdigit()):
        path = f"{out}/MinAtar-{g}-seed{seed}/metrics.jsonl"
        if not os.path.exists(path):
            continue
        rows = [json.loads(l) for l in open(path) if l.strip()]
        rows = [r for r in rows if r.get("ep_return_mean") is not None]
        if not rows:
            continue
        r = rows[-1]
        finals.append(r["ep_return_mean"])
        print(f"{g:14s} {seed:4d} {r['step']:10d} {r['ep_return_mean']:27.2f} {r['sps']:8.0f}")
    if finals:
        sd = statistics.stdev(finals) if len(finals) > 1 else 0.0
        print(f"{g:14s} {'mean':>4s} {'':10s} {statistics.mean(finals):21.2f} ± {sd:5.2f}")
        print(f"{g:14s} published: {published[g]}")
PY
}

if [ "$mode" = minatar-table ]; then
  minatar_table
  exit 0
fi

if [ "$mode" = minatar ]; then
  steps=${MINATAR_STEPS:-5000000}
  jobs=${JOBS:-$(nproc)}
  train_one() { # game seed
    local dir="$out/MinAtar-$1-seed$2"
    # Finished: the last row is the last whole batch within the budget.
    if [ -f "$dir/metrics.jsonl" ] && python3 - "$dir" "$steps" <<'PY'; then
import json, re, sys
d, steps = sys.argv[1], int(sys.argv[2])
cfg = open(d + "/config.toml").read()
batch = int(re.search(r"(?m)^\s*num_envs\s*=\s*(\d+)", cfg)[1]) * int(re.search(r"(?m)^\s*num_steps\s*=\s*(\d+)", cfg)[1])
rows = [json.loads(l) for l in open(d + "/metrics.jsonl") if l.strip()]
sys.exit(0 if rows and rows[-1]["step"] + batch > steps else 1)
PY
      return 0
    fi
    local args=(--run-dir "$dir" env.id="MinAtar/$1-v1" trainer.seed="$2" trainer.threads=1 ${MINATAR_ARGS:-})
    if [ -f "$dir/checkpoints/latest" ]; then
      args=(--resume "$dir")
    elif [ -e "$dir" ]; then
      echo "MinAtar/$1 seed $2: $dir holds a run without a checkpoint to resume from; remove it to start that run again"
      return 0
    fi
    GOMAXPROCS=1 "$at" train --quiet "${args[@]}" ppo.total_timesteps="$steps" >> "$dir.log" 2>&1 ||
      echo "MinAtar/$1 seed $2 failed: see $dir.log"
  }
  running=0
  for seed in ${SEEDS:-1 2 3}; do
    for g in "${minatar_games[@]}"; do
      train_one "$g" "$seed" &
      running=$((running + 1))
      if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
      fi
    done
  done
  wait
  minatar_table
  exit 0
fi

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
