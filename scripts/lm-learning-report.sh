#!/usr/bin/env bash
# The language-model learning table (issue 27 item 7): tiny from-scratch
# models (character tokenizer) on text FrozenLake 4×4, 3-digit addition and
# countdown with 3 numbers, each from its preset in trainer/config/
# presets.toml: supervised warm start on the oracle's demonstrations
# (`agenttrainer data demos`, `agenttrainer sft`), then GRPO from the SFT
# model (`agenttrainer train`, agent.model = the SFT model), each phase
# played greedily on held-out tasks (`agenttrainer sft --eval-only`).
# Prints mean ± sd over the seeds of every figure, with the commands in
# $OUT/commands.txt.
#
#   scripts/lm-learning-report.sh                       # 3 seeds, 3 tasks, SFT and RL
#   SEEDS="1" TASKS="addition" RL=0 scripts/lm-learning-report.sh
#
# Environment: SEEDS (default "1 2 3"), TASKS (frozenlake addition
# countdown), RL (1: run the RL phase), RL_STEPS_<task> (GRPO iterations),
# OUT (work directory), BIN (agenttrainer binary; default: built here),
# THREADS (trainer.threads; default 0, every core).
# Experiments run under nice -n 10, one at a time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seeds=${SEEDS:-"1 2 3"}
tasks=${TASKS:-"frozenlake addition countdown"}
rl=${RL:-1}
threads=${THREADS:-0}
out=${OUT:-$(mktemp -d /tmp/lm-learning.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-$out/agenttrainer}
[ -x "$bin" ] || go build -o "$bin" .
cmds=$out/commands.txt
echo "# $(date -u +%FT%TZ) SEEDS=\"$seeds\" TASKS=\"$tasks\" RL=$rl" >>"$cmds"
run() { # run LOG CMD...: logs the command, runs it niced
  local log=$1; shift
  echo "$*" >>"$cmds"
  nice -n 10 "$@" >"$log" 2>&1 || { echo "failed: $* (see $log)" >&2; tail -5 "$log" >&2; return 1; }
}

env_of() { case $1 in frozenlake) echo TextFrozenLake-v0 ;; addition) echo Arithmetic-v0 ;; countdown) echo Countdown-v0 ;; esac; }

# The data: held-out tasks first, training tasks apart from them; the same
# sets for every seed (seeds vary the model's initialisation, the batches
# and the sampling).
data() {
  local t=$1 env d=$out/data/$1
  env=$(env_of "$t")
  mkdir -p "$d"
  [ -f "$d/demos.jsonl" ] && return 0
  case $t in
    frozenlake)
      run "$d/log" "$bin" data tasks --env "$env" --n 200 --seed 1000 --arg size=4 --out "$d/val.jsonl"
      run "$d/log" "$bin" data tasks --env "$env" --n 30000 --seed 1 --arg size=4 --exclude "$d/val.jsonl" --out "$d/train.jsonl"
      # The preset's workflow.agent_args: no system prompt, the latest turn
      # only, the lake alone; where P and G stand and the tiles around P
      # written before each move.
      run "$d/log" "$bin" data demos --env "$env" --tasks "$d/train.jsonl" --agent-arg system_prompt= --agent-arg accumulate_history=false \
        --agent-arg observation_only=true --think coords-neighbours --out "$d/demos.jsonl" ;;
    addition)
      run "$d/log" "$bin" data tasks --env "$env" --n 1000 --seed 1000 --arg digits=3 --out "$d/val.jsonl"
      run "$d/log" "$bin" data tasks --env "$env" --n 60000 --seed 1 --arg digits=3 --exclude "$d/val.jsonl" --out "$d/train.jsonl"
      run "$d/log" "$bin" data demos --env "$env" --tasks "$d/train.jsonl" --think padded-digits --out "$d/demos.jsonl" ;;
    countdown)
      run "$d/log" "$bin" data tasks --env "$env" --n 200 --seed 1000 --arg count=3 --out "$d/val.jsonl"
      run "$d/log" "$bin" data tasks --env "$env" --n 20000 --seed 1 --arg count=3 --exclude "$d/val.jsonl" --out "$d/train.jsonl"
      run "$d/log" "$bin" data demos --env "$env" --tasks "$d/train.jsonl" --out "$d/demos.jsonl" ;;
  esac
}

for t in $tasks; do
  data "$t"
  env=$(env_of "$t")
  d=$out/data/$t
  for s in $seeds; do
    w=$out/$t/seed$s
    mkdir -p "$w"
    if [ ! -f "$w/sft.json" ]; then
      run "$w/sft.log" "$bin" sft --json "$w/sft.json" env.id="$env" trainer.seed="$s" trainer.threads="$threads" sft.data="$d/demos.jsonl" \
        sft.out="$w/sft-model" sft.eval_tasks="$d/val.jsonl"
    fi
    if [ "$rl" = 1 ] && [ ! -f "$w/rl.json" ]; then
      steps_var=RL_STEPS_$t
      run "$w/rl.log" "$bin" train --quiet --run-dir "$w/rl-run" env.id="$env" trainer.seed="$s" trainer.threads="$threads" agent.model="$w/sft-model" \
        data.train_files="[\"$d/train.jsonl\"]" data.val_files="[\"$d/val.jsonl\"]" ${!steps_var:+trainer.total_training_steps=${!steps_var}}
      run "$w/rl-eval.log" "$bin" sft --eval-only --json "$w/rl.json" env.id="$env" trainer.seed="$s" \
        agent.model="$w/rl-run/model" sft.eval_tasks="$d/val.jsonl"
    fi
  done
done

# The table: mean ± sd over seeds of each figure.
python3 - "$out" "$seeds" "$tasks" "$rl" <<'PY'
import json, math, os, sys
out, seeds, tasks, rl = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "1"
def ms(v):
    v = [x for x in v if x is not None]
    if not v: return "—"
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return f"{m:.3g} ± {sd:.2g}" if len(v) > 1 else f"{m:.3g}"
def load(t, s, ph):
    p = os.path.join(out, t, f"seed{s}", ph + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
print(f"| task | phase | seeds | success % | reward | invalid % | turns when solved | shortest | held-out loss | train s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for t in tasks:
    for ph in (["sft", "rl"] if rl else ["sft"]):
        rs = [r for r in (load(t, s, ph) for s in seeds) if r]
        if not rs: continue
        ev = [r.get("eval", {}) for r in rs]
        print(f"| {t} | {ph.upper()} | {len(rs)} | {ms([100*e.get('success') for e in ev])} | {ms([e.get('reward') for e in ev])} | {ms([100*e.get('invalid') for e in ev])} "
              f"| {ms([e.get('success_turns') for e in ev])} | {ms([e.get('optimal_turns') for e in ev])} | {ms([r.get('heldout_loss') if r.get('steps') else None for r in rs])} | {ms([r.get('train_seconds') if r.get('steps') else None for r in rs])} |")
PY
echo "commands: $cmds"
