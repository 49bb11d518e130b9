#!/usr/bin/env bash
# Checks the cuda-tagged code on a machine without a GPU or a CUDA toolkit,
# against Debian bookworm's CUDA 11.8 packages (non-free):
#
#   1. go vet -tags cuda ./...  (runs cgo, so every C call and type in
#      gpu/cudainit and in gorgonia.org/cu is checked against real headers);
#   2. the gpu package's tests built with -tags cuda and linked against the
#      CUDA stub libraries, run with Debian's real NVRTC: the kernels compile
#      for compute 7.5-9.0 with every parameter 8 bytes wide, the CPU tests
#      pass, and without a GPU the program starts, trainer.device=auto falls
#      back to the CPU and cuda fails with the reason (the GPU parity tests
#      skip);
#   3. ./agenttrainer built with -tags cuda starts and trains on the CPU with
#      trainer.device=auto, and refuses trainer.device=cuda.
#
# Idempotent: the first run downloads nvidia-cuda-dev (about 740 MB) and
# libnvrtc (16 MB) once through a private apt configuration (the system's apt
# sources are not touched) and keeps only what the checks use (about 80 MB):
# the headers, the stub libraries of libcuda and libcublas, and NVRTC.
#
#   scripts/vet-cuda.sh
#   CUDA_HEADERS_DIR=/opt/cuda-headers scripts/vet-cuda.sh    # cache elsewhere
#   VET_CUDA_ONLY_VET=1 scripts/vet-cuda.sh                   # step 1, and the kernels through NVRTC
#
# Needs: go, a C compiler (installed with apt-get when missing and run as
# root), apt-get and dpkg-deb (Debian or Ubuntu), amd64.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${CUDA_HEADERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttrainer/cuda-11.8}
start=$(date +%s)
log() { echo "vet-cuda: $*"; }

if ! command -v gcc >/dev/null && ! command -v cc >/dev/null; then
  log "installing a C compiler (cgo needs one)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq gcc libc6-dev >/dev/null
  else echo "vet-cuda: no C compiler; install gcc (run as root to let this script do it)" >&2; exit 1; fi
fi

# fetch PACKAGE... downloads Debian packages into $work/deb with a private apt state.
work=
fetch() {
  if [ -z "$work" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/deb"
    cat > "$work/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main contrib non-free non-free-firmware
deb http://deb.debian.org/debian bookworm-updates main contrib non-free non-free-firmware
EOF
    apt=(-o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
         -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
         -o "Dir::State::status=/var/lib/dpkg/status" -o APT::Sandbox::User=root
         -o Debug::NoLocking=true -o Acquire::Languages=none)
    apt-get "${apt[@]}" -qq update
  fi
  (cd "$work/deb" && apt-get "${apt[@]}" -qq download "$@")
}

lib=$cache/lib
if [ ! -f "$cache/include/cuda.h" ] || [ ! -f "$lib/libcuda.so" ]; then
  log "fetching nvidia-cuda-dev (Debian bookworm non-free, CUDA 11.8) into $cache"
  fetch nvidia-cuda-dev
  deb=$(ls "$work"/deb/nvidia-cuda-dev_*.deb)
  log "unpacking $(basename "$deb") ($(du -h "$deb" | cut -f1))"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/deb" ./usr/include ./usr/lib/x86_64-linux-gnu/stubs
  rm -f "$deb"
  mkdir -p "$cache" "$lib"
  rm -rf "$cache/include" && mv "$work/deb/usr/include" "$cache/include"
  for l in cuda cublas cublasLt; do
    cp "$work/deb/usr/lib/x86_64-linux-gnu/stubs/lib$l.so" "$lib/"
    soname=$(objdump -p "$lib/lib$l.so" 2>/dev/null | awk '$1=="SONAME"{print $2}')
    [ -n "$soname" ] && ln -sf "lib$l.so" "$lib/$soname"
  done
  echo "${deb##*/}" > "$cache/PACKAGE"
fi
if [ ! -e "$lib/libnvrtc.so" ]; then
  log "fetching libnvrtc11.2 and libnvrtc-builtins11.8 (NVRTC 11.8, 16 MB)"
  fetch libnvrtc11.2 libnvrtc-builtins11.8
  for d in "$work"/deb/libnvrtc*.deb; do dpkg-deb -x "$d" "$work/deb/x"; done
  cp -a "$work"/deb/x/usr/lib/x86_64-linux-gnu/libnvrtc* "$lib/"
  ln -sf libnvrtc.so.11.2 "$lib/libnvrtc.so"
fi
log "CUDA from $(cat "$cache/PACKAGE" 2>/dev/null || echo '?') in $cache ($(grep -m1 '#define CUDA_VERSION' "$cache/include/cuda.h"))"

cd "$root"
export CGO_ENABLED=1 CGO_CFLAGS="-I$cache/include ${CGO_CFLAGS:-}" CGO_LDFLAGS="-L$lib ${CGO_LDFLAGS:-}"
go vet -tags cuda ./...
log "go vet -tags cuda ./... passed ($(( $(date +%s) - start )) s so far)"
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Every kernel module through the real NVRTC: the CPU stand-in compiles the
# kernels with g++, which forgives what NVRTC refuses (math.h's INFINITY).
go test -tags cuda -count=1 -v -run 'KernelsCompile' ./gpu/ > "${TMPDIR:-/tmp}/vet-cuda-compile.log" 2>&1 || {
  cat "${TMPDIR:-/tmp}/vet-cuda-compile.log"; exit 1; }
if grep -q -- '--- SKIP' "${TMPDIR:-/tmp}/vet-cuda-compile.log"; then
  cat "${TMPDIR:-/tmp}/vet-cuda-compile.log"; echo "vet-cuda: NVRTC 11.8 is missing: the kernels were not compiled" >&2; exit 1
fi
log "every kernel module compiled with NVRTC 11.8 ($(grep -c -- '--- PASS' "${TMPDIR:-/tmp}/vet-cuda-compile.log") tests)"
[ -n "${VET_CUDA_ONLY_VET:-}" ] && exit 0

go test -tags cuda -count=1 ./gpu/... > "${TMPDIR:-/tmp}/vet-cuda-gpu-test.log" 2>&1 || {
  cat "${TMPDIR:-/tmp}/vet-cuda-gpu-test.log"; exit 1; }
go test -tags cuda -count=1 -v -run 'KernelsCompile|OpenWithoutGPU' ./gpu/ 2>&1 | grep -E '^(---|    cuda_test)' | sed 's/^/  /'
log "go test -tags cuda ./gpu/... passed against the stub libraries and NVRTC 11.8"

bin=$(mktemp -d)/agenttrainer
go build -tags cuda -o "$bin" .
run=$(mktemp -d)
out=$("$bin" train trainer.device=auto ppo.total_timesteps=512 --quiet --run-dir "$run/auto" 2>&1) || {
  echo "$out"; log "the cuda binary failed to train with trainer.device=auto"; exit 1; }
echo "$out" | grep -q 'auto: no usable GPU' || { echo "$out"; log "auto did not say why it chose the CPU"; exit 1; }
log "cuda binary, trainer.device=auto: $(echo "$out" | grep -m1 '^device:')"
if out=$("$bin" train trainer.device=cuda ppo.total_timesteps=512 --quiet --run-dir "$run/cuda" 2>&1); then
  echo "$out"; log "trainer.device=cuda trained without a GPU"; exit 1
fi
log "cuda binary, trainer.device=cuda: $(echo "$out" | head -1)"
rm -rf "$run" "$(dirname "$bin")"
log "all checks passed ($(( $(date +%s) - start )) s)"
