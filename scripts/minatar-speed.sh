#!/usr/bin/env bash
# MinAtar Breakout end to end, this project against the PyTorch peer
# (scripts/minatar_peer.py), both at their best, in one sitting: ROUNDS
# rounds (default 5), each running in turn
#   agenttrainer train env.id=MinAtar/Breakout-v1 ppo.total_timesteps=327680
#       on all cores (trainer.threads=0) and on one (trainer.threads=1),
#   minatar_peer.py --game breakout --iterations 4 on 1 thread and on all
#       (OpenBLAS or BLIS instead of the reference BLAS, OpenBLAS overrides
#       unset: the peer's best kernels, which it names),
# then the medians, min and max of each, with the machine's float32 peak
# (go test ./gpu -bench MeasurePeak) before and after and the load average.
# Needs Go, /usr/bin/python3 with torch, threadpoolctl and OpenBLAS, and
# MinAtar's source (MINATAR_SRC, default /tmp/minatar-src).
#
#   scripts/minatar-speed.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/agenttrainer-minatar-speed}
rounds=${ROUNDS:-5}
src=${MINATAR_SRC:-/tmp/minatar-src}
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$out"
at=${AGENTTRAINER:-}
if [ -z "$at" ]; then
  go build -o "$out/agenttrainer" .
  at="$out/agenttrainer"
fi
[ -d "$src/minatar" ] || { echo "no MinAtar source at $src (set MINATAR_SRC; git clone https://github.com/kenjyoung/MinAtar)"; exit 2; }
nproc=$(nproc)

peak() {
  go test ./gpu -run '^$' -bench 'MeasurePeak/cores=all' -benchtime 1x 2>/dev/null | grep -o '[0-9.]* GFLOP/s' | head -1
}

{
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $nproc CPUs; $(date -u +%FT%TZ)"
  echo "peak before: $(peak); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  PYTHONPATH=$src $py scripts/minatar_peer.py --game breakout --iterations 1 --threads 1 2>&1 | grep '^pytorch .*threads;' || true
} | tee "$out/sitting.txt"

: > "$out/runs.tsv"
for r in $(seq 1 "$rounds"); do
  for threads in 0 1; do
    d="$out/ours-t$threads-r$r"
    rm -rf "$d"
    "$at" train --quiet --run-dir "$d" env.id=MinAtar/Breakout-v1 ppo.total_timesteps=327680 trainer.threads=$threads >/dev/null
    sps=$(tail -1 "$d/metrics.jsonl" | $py -c 'import json,sys; print(round(json.loads(sys.stdin.read())["sps"]))')
    printf 'agenttrainer, trainer.threads=%s\t%s\n' "$threads" "$sps" | tee -a "$out/runs.tsv"
  done
  for threads in 1 "$nproc"; do
    sps=$(PYTHONPATH=$src $py scripts/minatar_peer.py --game breakout --iterations 4 --threads "$threads" 2>/dev/null |
      sed -n 's/.* = \([0-9,]*\) steps\/s.*/\1/p' | tr -d ,)
    printf 'PyTorch peer, %s thread(s)\t%s\n' "$threads" "$sps" | tee -a "$out/runs.tsv"
  done
done

{
  echo "peak after: $(peak); load: $(cut -d' ' -f1-3 /proc/loadavg)"
  $py - "$out/runs.tsv" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, sps = line.rstrip("\n").split("\t")
    if sps:
        runs.setdefault(name, []).append(int(sps))
for name, v in runs.items():
    print(f"{name:36s} median {statistics.median(v):9,.0f} env steps/s  (min {min(v):,}, max {max(v):,}, {len(v)} runs)")
PY
} | tee -a "$out/sitting.txt"
