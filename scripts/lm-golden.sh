#!/usr/bin/env bash
# Regenerates agents/lm/testdata: three random models in the Hugging Face
# layout made by the PyTorch reference (scripts/lm_reference.py), a padded
# batch, and per model the reference's log-probabilities, entropies and
# gradients (the golden files TestParityWithTorch replays, without Python).
# Then it checks the other way: the models as agents/lm saves them load in
# the reference by tensor name with identical log-probabilities.
#
#   qwen2: tied embeddings, q/k/v biases, F32, one file
#   qwen3: q/k RMSNorm, explicit head_dim (32 with 4 heads of a 64-wide
#          model), untied lm_head, BF16
#   llama: llama3 RoPE scaling, tied, F32 in shards with an index
#
# Needs Debian's python3-torch (apt-get install -y python3-torch); run with
# /usr/bin/python3 when another python3 comes first on PATH.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
ref="$py $root/scripts/lm_reference.py"
out=$root/agents/lm/testdata
rm -rf "$out/qwen2" "$out/qwen3" "$out/llama"
mkdir -p "$out"
$ref make --arch qwen2 --tied --seed 11 --out "$out/qwen2"
$ref make --arch qwen3 --head-dim 32 --dtype BF16 --seed 12 --out "$out/qwen3"
$ref make --arch llama --tied --eps 1e-5 --theta 500000 --llama3 8,1,4,64 --shard-bytes 120000 --seed 13 --out "$out/llama"
# Four rows of 80: one full, one left-padded, one right-padded, one both;
# every real token after the first of its row scored on the next.
$py - "$out/batch.json" <<'PY'
import json, random, sys
random.seed(5)
rows, seq, vocab = 4, 80, 128
pads = [(0, 0), (9, 0), (0, 13), (5, 7)]
ids, mask, targets = [], [], []
for left, right in pads:
    m = [1 if left <= t < seq - right else 0 for t in range(seq)]
    row = [random.randrange(vocab) for _ in range(seq)]
    ids += row
    mask += m
    targets += [row[t + 1] if t + 1 < seq and m[t] and m[t + 1] else -1 for t in range(seq)]
json.dump({"rows": rows, "seq": seq, "ids": ids, "mask": mask, "targets": targets}, open(sys.argv[1], "w"))
PY
for m in qwen2 qwen3 llama; do
  temp=1.0
  [ $m = qwen3 ] && temp=0.7 # the tempered scoring an RL trainer asks for
  $ref golden --model "$out/$m" --batch "$out/batch.json" --temperature $temp --out "$out/$m.golden.json"
done
# The other way: agents/lm loads each model and saves it; the reference
# loads the saved directory by tensor name.
saved=$(mktemp -d)
trap 'rm -rf "$saved"' EXIT
(cd "$root" && go test ./agents/lm -count=1 -run '^TestSaveForTorch$' -args -saveto "$saved" > /dev/null)
for m in qwen2 qwen3 llama; do
  $ref logprobs --model "$out/$m" --against "$saved/$m" --batch "$out/batch.json" --tolerance 0
done
