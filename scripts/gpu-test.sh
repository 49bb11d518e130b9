#!/usr/bin/env bash
# Builds and checks the cuda variant on a machine with an NVIDIA GPU. Run it
# from the project root:
#
#   bash scripts/gpu-test.sh                  # build parity learn bench minatar lm
#   bash scripts/gpu-test.sh build parity     # some of the steps
#
# Steps:
#   build   ./agenttrainer with -tags cuda. With .device/ present (made by
#           scripts/gpu-pack.sh for lent machines without Go or network) it
#           goes through .device/build.sh; otherwise it uses the local Go and
#           the CUDA toolkit found from CUDA_HOME or nvcc. Either way, CUDA 13
#           headers get the compatibility header below.
#   parity  every device op, and one whole PPO update, against the CPU device
#           (go test -tags cuda: gpu/cuda_test.go, trainer/cuda_parity_test.go)
#   learn   ./agenttrainer train trainer.device=cuda on CartPole-v1 with the
#           default config; passes when the final ep_return_mean is >= 475
#   bench   the CPU/GPU table for num_envs 4, 64, 1024, 4096 and hidden
#           [64,64], [256,256] (trainer/cuda_bench_test.go)
#   minatar MinAtar/Breakout-v1 with its preset (the cnn agent), 327,680
#           steps on trainer.device=cuda and on cpu: steps/s side by side,
#           and the same with 1,024 envs (where a GPU should start to pay)
#   lm      language models: three GRPO iterations of a tiny model on cuda
#           against the CPU (trainer/lm_cuda_test.go), then the GRPO
#           iteration rate of a SmolLM-135M-shaped model on the GPU
#           (BenchmarkLMGRPOIteration: 64 sequences of 128 + 64 tokens,
#           generation and training tokens/s)
#
# Everything lands in $OUT (default ./gpu-results): one log per step,
# bench.md, and summary.md with a line per step. The exit status is 0 only if
# every step that ran passed. Each step rebuilds only what changed, so the
# steps can be spread over several commands on the same machine.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(build parity learn bench minatar lm)
summary=$OUT/summary.md
failed=0
note() { echo "$*" | tee -a "$summary"; }

# CUDA 13.0's cuda.h points cuCtxCreate, cuMemAdvise, cuMemPrefetchAsync,
# cuGraphGetEdges and cuGraphAddDependencies at new signatures; gorgonia.org/cu
# v0.9.6 calls the old ones. This header, first on the include path, sends its
# calls to the old entry points, which the driver still exports. Below CUDA 13
# it only includes the real header.
compat=${TMPDIR:-/tmp}/agenttrainer-cuda-compat
write_compat_header() {
  mkdir -p "$compat"
  cat > "$compat/cuda.h" <<'EOF'
/* agenttrainer: CUDA 13 compatibility for gorgonia.org/cu v0.9.6 (scripts/gpu-test.sh) */
#include_next <cuda.h>
#if (CUDA_VERSION >= 13000 || defined(AGT_FORCE_CUDA13_COMPAT)) && !defined(AGT_CUDA13_COMPAT)
#define AGT_CUDA13_COMPAT
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
CUresult agt_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) __asm__("cuCtxCreate_v2");
CUresult agt_cuMemAdvise_v1(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) __asm__("cuMemAdvise");
CUresult agt_cuMemPrefetchAsync_v1(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream) __asm__("cuMemPrefetchAsync");
CUresult agt_cuGraphGetEdges_v1(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges) __asm__("cuGraphGetEdges");
CUresult agt_cuGraphAddDependencies_v1(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies) __asm__("cuGraphAddDependencies");
#ifdef __cplusplus
}
#endif
#undef cuCtxCreate
#define cuCtxCreate agt_cuCtxCreate_v2
#undef cuMemAdvise
#define cuMemAdvise agt_cuMemAdvise_v1
#undef cuMemPrefetchAsync
#define cuMemPrefetchAsync agt_cuMemPrefetchAsync_v1
#undef cuGraphGetEdges
#define cuGraphGetEdges agt_cuGraphGetEdges_v1
#undef cuGraphAddDependencies
#define cuGraphAddDependencies agt_cuGraphAddDependencies_v1
#endif
EOF
}

# setup_env exports what building and testing need, building ./agenttrainer
# on the way; it returns non-zero when the build fails.
setup_env() {
  write_compat_header
  export CUDA_EXTRA_CFLAGS="-I$compat"
  if [ -f .device/build.sh ]; then
    # .device/build.sh builds and exports PATH, GOFLAGS, CGO_*, LD_LIBRARY_PATH;
    # it runs in a subshell (it sets -e) and hands its exports back.
    ( source .device/build.sh && export -p | sed "s/^declare -x /declare -gx /" > "$compat/env.sh" ) > "$OUT/build.log" 2>&1 || return 1
    # shellcheck disable=SC1091
    source "$compat/env.sh" 2>/dev/null
    return 0
  fi
  command -v go >/dev/null || { echo "no go on PATH and no .device/ (see ../shared/gpu/pack.sh)" > "$OUT/build.log"; return 1; }
  local cuda=${CUDA_HOME:-}
  if [ -z "$cuda" ] && command -v nvcc >/dev/null; then
    cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  fi
  [ -z "$cuda" ] && [ -d /usr/local/cuda ] && cuda=/usr/local/cuda
  [ -z "$cuda" ] && { echo "no CUDA toolkit: set CUDA_HOME" > "$OUT/build.log"; return 1; }
  local libdir=$cuda/lib64
  [ -d "$libdir" ] || libdir=$cuda/lib
  export CGO_ENABLED=1 CGO_CFLAGS="$CUDA_EXTRA_CFLAGS -I$cuda/include ${CGO_CFLAGS:-}"
  export CGO_LDFLAGS="-L$libdir -L$libdir/stubs ${CGO_LDFLAGS:-}"
  export LD_LIBRARY_PATH=$libdir:${LD_LIBRARY_PATH:-}
  {
    echo "go: $(go version); CUDA: $cuda ($(grep -m1 '#define CUDA_VERSION' "$cuda/include/cuda.h"))"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    go build -tags cuda -o agenttrainer . && echo "built ./agenttrainer with -tags cuda"
  } > "$OUT/build.log" 2>&1
}

env_ready=
need_env() {
  [ -n "$env_ready" ] && return 0
  if setup_env; then
    env_ready=1
    return 0
  fi
  note "- build: FAILED (see build.log)"
  tail -20 "$OUT/build.log"
  failed=1
  return 1
}

step_build() {
  need_env || return
  local lib
  lib=$(ldconfig -p 2>/dev/null | awk '$1 ~ /^libcuda\.so\.1/ {print $NF; exit}')
  {
    echo "driver library: ${lib:-not in ldconfig}"
    [ -n "$lib" ] && nm -D "$lib" 2>/dev/null | grep -wE 'cuCtxCreate_v2|cuMemAdvise|cuMemPrefetchAsync|cuGraphGetEdges|cuGraphAddDependencies' | sed 's/^/  exports /'
    nvidia-smi 2>&1 | head -15
  } >> "$OUT/build.log"
  note "- build: ok ($(grep -m1 '^go:' "$OUT/build.log" | cut -c1-160))"
}

step_parity() {
  need_env || return
  local ok=1
  go test -tags cuda -count=1 -v -timeout 20m -run 'CUDA|OpenWithoutGPU' ./gpu/ > "$OUT/parity-ops.log" 2>&1 || ok=0
  go test -tags cuda -count=1 -v -timeout 20m -run 'CUDAPPOUpdateParity' ./trainer/ > "$OUT/parity-update.log" 2>&1 || ok=0
  local summaryLine
  summaryLine="$(cat "$OUT/parity-ops.log" "$OUT/parity-update.log" | grep -c -- '--- PASS') passed, $(cat "$OUT/parity-ops.log" "$OUT/parity-update.log" | grep -c -- '--- FAIL') failed, $(cat "$OUT/parity-ops.log" "$OUT/parity-update.log" | grep -c -- '--- SKIP') skipped"
  if [ $ok = 1 ] && ! grep -q -- '--- SKIP: TestCUDA' "$OUT/parity-ops.log" "$OUT/parity-update.log"; then
    note "- parity: ok ($summaryLine)"
  else
    note "- parity: FAILED or skipped ($summaryLine; see parity-ops.log, parity-update.log)"
    grep -h -B2 -A8 -- '--- FAIL' "$OUT/parity-ops.log" "$OUT/parity-update.log" | head -40
    failed=1
  fi
}

step_learn() {
  need_env || return
  rm -rf "$OUT/cartpole-cuda"
  local start end
  start=$(date +%s)
  ./agenttrainer train trainer.device=cuda trainer.seed=1 --run-dir "$OUT/cartpole-cuda" > "$OUT/learn.log" 2>&1
  local rc=$?
  end=$(date +%s)
  ./agenttrainer train trainer.device=auto ppo.total_timesteps=1024 --quiet --run-dir "$OUT/auto-probe" > "$OUT/auto.log" 2>&1 || true
  local verdict
  verdict=$(python3 - "$OUT/cartpole-cuda/metrics.jsonl" <<'PY' 2>&1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
first = next((r["step"] for r in recs if (r.get("ep_return_mean") or 0) >= 475), None)
final = recs[-1].get("ep_return_mean") or 0
print(("ok" if final >= 475 else "FAILED"), f"final ep_return_mean {final:.1f} at step {recs[-1]['step']}, first >= 475 at step {first}, {recs[-1]['sps']:.0f} steps/s")
PY
)
  [ $rc -ne 0 ] && verdict="FAILED (exit $rc) $verdict"
  note "- learn: $verdict, $((end - start)) s wall; device: $(grep -m1 '^device:' "$OUT/learn.log" | cut -c9-)"
  note "- auto picks: $(grep -m1 '^device:' "$OUT/auto.log" | cut -c9-)"
  case $verdict in ok*) ;; *) failed=1; tail -5 "$OUT/learn.log" ;; esac
}

step_bench() {
  need_env || return
  if BENCH_TABLE="$OUT/bench.md" go test -tags cuda -count=1 -run '^$' -bench Devices -benchtime 1x -timeout 30m ./trainer/ > "$OUT/bench.log" 2>&1; then
    note "- bench: ok (bench.md)"
    cat "$OUT/bench.md" | tee -a "$summary"
  else
    note "- bench: FAILED (see bench.log)"
    tail -20 "$OUT/bench.log"
    failed=1
  fi
}

step_minatar() {
  need_env || return
  local ok=1 line dev envs
  for envs in 64 1024; do
    line="- minatar (Breakout-v1 preset, num_envs $envs):"
    for dev in cuda cpu; do
      rm -rf "$OUT/minatar-$dev-$envs"
      if ./agenttrainer train --quiet --run-dir "$OUT/minatar-$dev-$envs" env.id=MinAtar/Breakout-v1 trainer.seed=1 \
        trainer.device=$dev env.num_envs=$envs ppo.total_timesteps=$((envs * 128 * 5)) > "$OUT/minatar-$dev-$envs.log" 2>&1; then
        line="$line $dev $(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][-1]; print(f\"{r['sps']:.0f} steps/s (return {r.get('ep_return_mean') or 0:.2f})\")" "$OUT/minatar-$dev-$envs/metrics.jsonl");"
      else
        line="$line $dev FAILED (minatar-$dev-$envs.log);"
        ok=0
      fi
    done
    note "$line"
  done
  [ $ok = 1 ] || failed=1
}

step_lm() {
  need_env || return
  local ok=1
  go test -tags cuda -count=1 -v -timeout 20m -run 'CUDALMGRPO' ./trainer/ > "$OUT/lm-parity.log" 2>&1 || ok=0
  grep -q -- '--- PASS: TestCUDALMGRPOMatchesCPU' "$OUT/lm-parity.log" || ok=0
  note "- lm parity: $([ $ok = 1 ] && echo ok || echo FAILED) ($(grep -o 'metrics max relative error.*' "$OUT/lm-parity.log" | head -1))"
  if LM_BENCH_DEVICE=cuda LM_BENCH_SMOLLM=1 go test -tags cuda -count=1 -run '^$' -bench LMGRPOIteration -benchtime 3x -timeout 30m ./trainer/ > "$OUT/lm-bench.log" 2>&1; then
    note "- lm bench (GRPO iteration, cuda):"
    grep -E '^BenchmarkLMGRPOIteration' "$OUT/lm-bench.log" | sed 's/^/    /' | tee -a "$summary"
  else
    note "- lm bench: FAILED (see lm-bench.log)"
    tail -20 "$OUT/lm-bench.log"
    ok=0
  fi
  [ $ok = 1 ] || failed=1
}

echo "## gpu-test.sh $(date -u +%FT%TZ): ${steps[*]}" >> "$summary"
for s in "${steps[@]}"; do
  case $s in
    build | parity | learn | bench | minatar | lm) "step_$s" ;;
    *) echo "unknown step $s (build, parity, learn, bench, minatar, lm)" >&2; exit 2 ;;
  esac
done
exit $failed
