#!/usr/bin/env bash
# Runs the cuda build of agenttrainer on the CPU stand-in for the CUDA
# libraries (gpu/standin; no GPU, no NVIDIA driver):
#
#   1. builds the stand-in libcuda.so.1, libcublas.so.11 and libnvrtc.so.11.2;
#   2. go test -tags cuda ./gpu ./trainer ./agents/lm against it: every op's
#      parity with the CPU device (gpu/cuda_test.go, gpu/lm_cuda_test.go), the
#      whole PPO update's parity (trainer/cuda_parity_test.go), the language
#      model's log-probs, gradients and generation (agents/lm/cuda_test.go),
#      the kernels' signatures, and with
#      CUDA_VISIBLE_DEVICES= the fallback of trainer.device=auto when cuInit
#      fails. A TestCUDA* that skips is a failure here;
#   3. ./agenttrainer (-tags cuda) trains 10 CartPole iterations with
#      trainer.device=cuda and with trainer.device=cpu; every metric must
#      agree within a relative error of 1e-4.
#
# It needs CUDA 11.8's headers and stub libraries, which scripts/vet-cuda.sh
# caches (fetched here through it when missing), gcc and g++, and python3.
# Without a C++ compiler it says so and exits 0 (skipped) unless
# CUDA_STANDIN_REQUIRED=1. Logs go to $CUDA_STANDIN_LOGS (default a temporary
# directory, printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CUDA_HEADERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttrainer/cuda-11.8}
start=$(date +%s)
log() { echo "cuda-standin: $*"; }
skip() {
  if [ "${CUDA_STANDIN_REQUIRED:-}" = 1 ]; then log "cannot run: $*"; exit 1; fi
  log "SKIPPED: $*"; exit 0
}
command -v gcc >/dev/null || skip "no gcc (the stand-in libraries are C)"
command -v g++ >/dev/null || skip "no g++ (the stand-in NVRTC compiles kernels with it)"
command -v python3 >/dev/null || skip "no python3 (compares the CartPole metrics)"
if [ ! -f "$cache/include/cuda.h" ] || [ ! -f "$cache/lib/libcuda.so" ]; then
  log "no CUDA 11.8 headers in $cache: fetching them with scripts/vet-cuda.sh"
  VET_CUDA_ONLY_VET=1 bash "$root/scripts/vet-cuda.sh" || skip "could not fetch CUDA 11.8's headers"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=${CUDA_STANDIN_LOGS:-$work/logs}
mkdir -p "$logs"
bash "$root/gpu/standin/build.sh" "$work/lib" "$cache" | sed 's/^/  /'
cd "$root"
export CGO_ENABLED=1 CGO_CFLAGS="-I$cache/include ${CGO_CFLAGS:-}" CGO_LDFLAGS="-L$cache/lib ${CGO_LDFLAGS:-}"
export LD_LIBRARY_PATH=$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} CUDA_STANDIN_CACHE=$work/kernels

log "go test -tags cuda ./gpu ./trainer ./agents/lm on the stand-in"
if ! go test -tags cuda -count=1 -v -timeout 15m -run 'CUDA|KernelsCompile' ./gpu ./trainer ./agents/lm > "$logs/test.log" 2>&1; then
  grep -E -B2 -A12 -- '--- FAIL|^panic|cuda-standin:' "$logs/test.log" | head -80
  log "FAILED (log: $logs/test.log)"; exit 1
fi
if grep -- '--- SKIP: TestCUDA' "$logs/test.log" | grep -v 'TestCUDAWithoutTheTag'; then log "FAILED: a CUDA test skipped on the stand-in"; exit 1; fi
grep -E -- '^(--- PASS|ok )' "$logs/test.log" | sed 's/^/  /'
grep -E 'max relative error' "$logs/test.log" | sed 's/^ *[a-z_]*\.go:[0-9]*: /  /'
CUDA_VISIBLE_DEVICES= go test -tags cuda -count=1 -v -run 'OpenWithoutGPU' ./gpu > "$logs/nodevice.log" 2>&1 ||
  { cat "$logs/nodevice.log"; log "FAILED: fallback when cuInit fails"; exit 1; }
grep -q -- '--- PASS: TestOpenWithoutGPU' "$logs/nodevice.log" || { cat "$logs/nodevice.log"; log "FAILED: TestOpenWithoutGPU did not run"; exit 1; }
log "with CUDA_VISIBLE_DEVICES= (cuInit fails): trainer.device=auto falls back to the CPU, cuda refuses"

log "10 CartPole iterations, trainer.device=cuda (stand-in) vs cpu"
go build -tags cuda -o "$work/agenttrainer" .
for dev in cuda cpu; do
  "$work/agenttrainer" train trainer.device=$dev trainer.seed=1 ppo.total_timesteps=5120 --quiet \
    --run-dir "$work/run-$dev" > "$logs/train-$dev.log" 2>&1 || { cat "$logs/train-$dev.log"; log "FAILED: train on $dev"; exit 1; }
  echo "  $dev: $(grep -m1 '^device:' "$logs/train-$dev.log")"
done
python3 - "$work/run-cuda/metrics.jsonl" "$work/run-cpu/metrics.jsonl" 1e-4 <<'PY' | tee "$logs/cartpole.txt" | sed 's/^/  /'
import json, sys
cuda = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cpu = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
tol, timing = float(sys.argv[3]), {"time_s", "sps", "rollout_s", "update_s"}
shown = ["ep_return_mean", "policy_loss", "value_loss", "entropy", "approx_kl", "grad_norm"]
worst = {}
print("iter " + " ".join(f"{k + ' cuda | cpu':>31}" for k in shown))
for g, c in zip(cuda, cpu):
    for k, v in c.items():
        if k in timing or not isinstance(v, (int, float)) or not isinstance(g.get(k), (int, float)):
            if g.get(k) != v and k not in timing:
                worst[k] = float("inf")
            continue
        worst[k] = max(worst.get(k, 0.0), abs(g[k] - v) / abs(v) if v else abs(g[k]))
    print(f"{c['iter']:>4} " + " ".join(f"{g[k]:>15.7g} | {c[k]:<13.7g}" for k in shown))
print(f"max relative error per metric over {len(cuda)} iterations: " + ", ".join(f"{k} {v:.2g}" for k, v in sorted(worst.items())))
bad = {k: v for k, v in worst.items() if v > tol}
if len(cuda) != len(cpu) or len(cuda) < 10 or bad:
    print("MISMATCH:", bad or f"{len(cuda)} iterations on cuda, {len(cpu)} on cpu"); sys.exit(1)
PY
[ "${PIPESTATUS[0]}" = 0 ] || { log "FAILED: CartPole metrics differ (log: $logs)"; exit 1; }
log "all checks passed ($(( $(date +%s) - start )) s)"
