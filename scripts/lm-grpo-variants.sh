#!/usr/bin/env bash
# GRPO vs Dr.GRPO vs DAPO on one task, the same seeds (issue 27's
# comparison): each variant trains from the same supervised model
# (agent.model = $SFT_MODEL) for $STEPS iterations with each seed, then plays
# the held-out tasks greedily (`agenttrainer sft --eval-only`). Prints mean ±
# sd over the seeds of held-out success and of the last training rewards;
# the commands are in $OUT/commands.txt.
#
#   SFT_MODEL=DIR TRAIN=train.jsonl VAL=val.jsonl scripts/lm-grpo-variants.sh
#
# Environment: ENV (default Arithmetic-v0), SEEDS ("1 2 3"), STEPS (150),
# VARIANTS ("grpo drgrpo dapo"), OUT (work directory), BIN (binary; default:
# built here). The variants' settings are verl's recipes:
#   grpo    verl's GRPO defaults: std-normalised group advantages, token-mean
#   drgrpo  Dr.GRPO: no std normalisation, seq-mean-token-sum-norm
#   dapo    DAPO: groups of equal rewards filtered (and refilled),
#           clip-higher 0.28, token-mean
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
: "${SFT_MODEL:?SFT_MODEL: the supervised model directory to start from}"
: "${TRAIN:?TRAIN: the training task file}"
: "${VAL:?VAL: the held-out task file}"
env=${ENV:-Arithmetic-v0}
seeds=${SEEDS:-"1 2 3"}
steps=${STEPS:-150}
variants=${VARIANTS:-"grpo drgrpo dapo"}
out=${OUT:-$(mktemp -d /tmp/lm-variants.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-$out/agenttrainer}
[ -x "$bin" ] || (cd "$root" && go build -o "$bin" .)
cmds=$out/commands.txt
settings() {
  case $1 in
    grpo) echo "algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=true actor.loss_agg_mode=token-mean" ;;
    drgrpo) echo "algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=false actor.loss_agg_mode=seq-mean-token-sum-norm" ;;
    dapo) echo "algorithm.adv_estimator=grpo algorithm.filter_groups=true actor.clip_ratio_high=0.28 actor.loss_agg_mode=token-mean" ;;
    *) echo "unknown variant $1 (grpo, drgrpo, dapo)" >&2; exit 2 ;;
  esac
}
run() { # run LOG CMD...
  local log=$1; shift
  echo "$*" >>"$cmds"
  nice -n 10 "$@" >"$log" 2>&1 || { echo "failed: $* (see $log)" >&2; tail -5 "$log" >&2; return 1; }
}
for v in $variants; do
  for s in $seeds; do
    w=$out/$v/seed$s
    mkdir -p "$w"
    [ -f "$w/eval.json" ] && continue
    rm -rf "$w/run"
    # shellcheck disable=SC2046
    run "$w/train.log" "$bin" train --quiet --run-dir "$w/run" env.id="$env" trainer.seed="$s" agent.model="$SFT_MODEL" \
      "data.train_files=[\"$TRAIN\"]" "data.val_files=[\"$VAL\"]" trainer.total_training_steps="$steps" trainer.test_freq=0 $(settings "$v")
    run "$w/eval.log" "$bin" sft --eval-only --json "$w/eval.json" env.id="$env" trainer.seed="$s" agent.model="$w/run/model" sft.eval_tasks="$VAL"
  done
done
[ -f "$out/sft.json" ] || run "$out/sft-eval.log" "$bin" sft --eval-only --json "$out/sft.json" env.id="$env" agent.model="$SFT_MODEL" sft.eval_tasks="$VAL"
python3 - "$out" "$seeds" "$variants" <<'PY'
import json, math, os, sys
out, seeds, variants = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def ms(v):
    v = [x for x in v if x is not None]
    if not v: return "—"
    m = sum(v) / len(v)
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return f"{m:.3g} ± {sd:.2g}"
def last_rewards(p, k=10):
    rows = [json.loads(l) for l in open(p) if l.strip()]
    r = [x["reward"] for x in rows if "reward" in x][-k:]
    return sum(r) / len(r) if r else None
sft = json.load(open(os.path.join(out, "sft.json")))["eval"]["success"]
print(f"start: the SFT model, {100*sft:.3g} % held-out success (greedy)\n")
print("| variant | seeds | held-out success % (greedy) | training reward, last 10 iterations | frac_reward_zero_std, last 10 |")
print("|---|---|---|---|---|")
for v in variants:
    succ, rew, zs = [], [], []
    for s in seeds:
        w = os.path.join(out, v, f"seed{s}")
        p = os.path.join(w, "eval.json")
        if not os.path.exists(p): continue
        succ.append(100 * json.load(open(p))["eval"]["success"])
        m = os.path.join(w, "run", "metrics.jsonl")
        rows = [json.loads(l) for l in open(m) if l.strip()]
        rew.append(sum(x.get("reward", 0) for x in rows[-10:]) / max(1, len(rows[-10:])))
        zs.append(sum(x.get("frac_reward_zero_std", 0) for x in rows[-10:]) / max(1, len(rows[-10:])))
    print(f"| {v} | {len(succ)} | {ms(succ)} | {ms(rew)} | {ms(zs)} |")
PY
echo "commands: $cmds"
