#!/usr/bin/env bash
# The language-model speed table: agents/lm's benchmarks beside the PyTorch
# reference (scripts/lm_reference.py bench) doing the same work on the same
# machine, alternated round by round with the machine's float32 peak
# (gpu BenchmarkSustainedPeak) and memory bandwidth (BenchmarkMemoryBandwidth)
# measured in each round (the bandwidth again after each decoding run, the
# larger counting: this machine's rate shifts by a third from minute to
# minute, and a ceiling measured in a slow minute would flatter a decoding
# run in a fast one). Fractions of peak or bandwidth and ratios to
# PyTorch are taken within each round (side by side), then their median over
# ROUNDS rounds (default 3), with their range.
#
#   train   forward, backward and Adam over rows×seq tokens (5M, 20M: 8×256;
#           SmolLM-135M: 2×256), tokens/s and useful GFLOP/s, over
#           TRAIN_STEPS steps a round (default 3)
#   gen     64 prompts of 16 tokens, 64 new tokens each, sampled at
#           temperature 1 with the token's log-prob, KV cache
#   decode  the same for one prompt: tokens/s and the weights' and cache's
#           bytes read per second (PyTorch on one and on two threads, the
#           faster counting)
#
# PyTorch runs on its best kernels: OpenBLAS when the system's libblas is the
# reference implementation (LD_LIBRARY_PATH for the torch command alone),
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset; threadpoolctl's report of the
# kernel is printed. Needs python3-torch and python3-threadpoolctl.
#
#   scripts/lm-speed.sh                 # every shape and kind of work
#   SHAPES="20M" KINDS="train gen" ROUNDS=5 scripts/lm-speed.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${ROUNDS:-3}
shapes=${SHAPES:-"5M 20M SmolLM-135M"}
kinds=" ${KINDS:-train gen decode} "
# Training steps timed per round on each side after one untimed step: Go's
# benchmark reports their mean, the reference their median.
TRAIN_STEPS=${TRAIN_STEPS:-3}
py=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d /tmp/lm-speed.XXXXXX)
raw=$out/raw.jsonl
echo "lm-speed: raw figures in $raw"
go test -c -o "$out/lm.test" ./agents/lm
go test -c -o "$out/gpu.test" ./gpu

openblas=
if [ -d /usr/lib/x86_64-linux-gnu/openblas-pthread ] && ! readlink -f /lib/x86_64-linux-gnu/libblas.so.3 | grep -q openblas; then
  openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread
fi
torchbench() {
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ${openblas:+LD_LIBRARY_PATH=$openblas} \
    "$py" scripts/lm_reference.py bench --tied --repeat 1 "$@"
}

# shape NAME → the reference's arguments (as agents/lm's benchShapes).
shape() {
  case $1 in
    5M) echo "--vocab 2048 --hidden 256 --intermediate 688 --layers 6 --heads 4 --kv-heads 2 --rows 8 --seq 256" ;;
    20M) echo "--vocab 4096 --hidden 512 --intermediate 1408 --layers 6 --heads 8 --kv-heads 4 --rows 8 --seq 256" ;;
    SmolLM-135M) echo "--vocab 49152 --hidden 576 --intermediate 1536 --layers 30 --heads 9 --kv-heads 3 --rows 2 --seq 256" ;;
    *) echo "lm-speed: unknown shape $1" >&2; exit 2 ;;
  esac
}

# gobench BINARY PATTERN KIND SHAPE ROUND: one benchmark run, its metrics
# as a JSON line.
gobench() {
  "$1" -test.run '^$' -test.bench "$2" -test.benchtime "${6:-1x}" | awk -v kind="$3" -v shape="$4" -v round="$5" '
    /^Benchmark/ { printf "{\"side\":\"go\",\"kind\":\"%s\",\"shape\":\"%s\",\"round\":%d", kind, shape, round
      for (i = 3; i < NF; i += 2) printf ",\"%s\":%s", $(i+1), $i
      print "}" }' >> "$raw"
}

for r in $(seq 1 "$rounds"); do
  echo "lm-speed: round $r of $rounds ($(uptime | sed 's/.*load/load/'))"
  gobench "$out/gpu.test" '^BenchmarkSustainedPeak$' peak all "$r" 2s
  gobench "$out/gpu.test" '^BenchmarkMemoryBandwidth$/^cores=2$' bandwidth all "$r"
  for s in $shapes; do
    args=$(shape "$s")
    if [[ $kinds == *" train "* ]]; then
      gobench "$out/lm.test" "^BenchmarkTrain\$/^$s\$" train "$s" "$r" "${TRAIN_STEPS}x"
      torchbench $args --what train --repeat "$TRAIN_STEPS" | sed "s/^{/{\"side\":\"torch\",\"kind\":\"train\",\"shape\":\"$s\",\"round\":$r,/" >> "$raw"
    fi
    if [[ $kinds == *" gen "* ]]; then
      gobench "$out/lm.test" "^BenchmarkGenerate\$/^$s\$/^batch=64\$" gen "$s" "$r"
      torchbench $args --what gen | sed "s/^{/{\"side\":\"torch\",\"kind\":\"gen\",\"shape\":\"$s\",\"round\":$r,/" >> "$raw"
    fi
    if [[ $kinds == *" decode "* ]]; then
      gobench "$out/lm.test" "^BenchmarkGenerate\$/^$s\$/^batch=1\$" decode "$s" "$r"
      gobench "$out/gpu.test" '^BenchmarkMemoryBandwidth$/^cores=2$' bandwidth all "$r" # after as before: the round's larger
      for th in 1 2; do # one sequence: PyTorch's two OpenMP threads can cost more than they give
        torchbench $args --what decode --threads $th | sed "s/^{/{\"side\":\"torch\",\"kind\":\"decode\",\"shape\":\"$s\",\"round\":$r,/" >> "$raw"
      done
    fi
  done
done

"$py" - "$raw" <<'PY'
import json, statistics, sys
rows = []
for path in sys.argv[1:]:
    rows += [json.loads(l) for l in open(path)]
med = lambda xs: statistics.median(xs) if xs else float("nan")
peak = {r["round"]: r["GFLOP/s"] for r in rows if r["kind"] == "peak"}
bw = {}
for r in rows:  # measured before and after the decoding runs: the larger, the ceiling they ran under
    if r["kind"] == "bandwidth":
        bw[r["round"]] = max(bw.get(r["round"], 0), r["GB/s"])
blas = next((r["blas"] for r in rows if r.get("side") == "torch"), [])
print(f"float32 peak (BenchmarkSustainedPeak) per round: {', '.join(f'{v:.0f}' for v in peak.values())} GFLOP/s; "
      f"memory bandwidth (2 cores): {', '.join(f'{v:.1f}' for v in bw.values())} GB/s")
print("torch kernels (threadpoolctl): " + "; ".join(f"{b['internal_api']} {b.get('version') or ''} {b.get('architecture') or ''} ×{b['num_threads']}" for b in blas))
print()
print("Medians over rounds of each round's figures; fractions and ratios are taken within a round (side by side), then their median.")
print()
print("| model | work | agenttrainer tokens/s | fraction (per round) | PyTorch tokens/s | ratio (per round) | rounds |")
print("|---|---|---:|---:|---:|---:|---:|")
shapes = []
for r in rows:
    if r["kind"] not in ("peak", "bandwidth") and r["shape"] not in shapes:
        shapes.append(r["shape"])
for s in shapes:
    for kind in ("train", "gen", "decode"):
        go = {r["round"]: r for r in rows if r["side"] == "go" and r["shape"] == s and r["kind"] == kind}
        if not go:
            continue
        pt = {}
        for r in rows:
            if r["side"] == "torch" and r["shape"] == s and r["kind"] == kind:
                pt[r["round"]] = max(pt.get(r["round"], 0), r[kind + "_tokens_per_s"])
        rounds = sorted(go)
        if kind == "decode":
            fr = [go[n]["GB/s"] / bw[n] for n in rounds]
            frac = f"{med(fr):.0%} of bandwidth ({min(fr):.0%}–{max(fr):.0%})"
        else:
            fr = [go[n]["GFLOP/s"] / peak[n] for n in rounds]
            frac = f"{med(fr):.0%} of peak ({min(fr):.0%}–{max(fr):.0%})"
        ratios = [go[n]["tokens/s"] / pt[n] for n in rounds if n in pt]
        print(f"| {s} | {kind} | {med([go[n]['tokens/s'] for n in rounds]):.1f} | {frac} | {med(list(pt.values())):.1f} | "
              f"{med(ratios):.1f}× ({min(ratios):.1f}–{max(ratios):.1f}) | {len(rounds)} |")
PY
