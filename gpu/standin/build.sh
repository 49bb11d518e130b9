#!/usr/bin/env bash
# Builds the CPU stand-in for libcuda.so.1, libcublas.so.11 and
# libnvrtc.so.11.2 into OUTDIR (see README.md):
#
#   gpu/standin/build.sh OUTDIR [CUDA_DIR]
#
# CUDA_DIR holds include/ (CUDA 11.8's headers) and lib/ (its stub
# libraries), as scripts/vet-cuda.sh caches them (default
# ~/.cache/agenttrainer/cuda-11.8). The headers give the stand-in CUDA's own
# prototypes; the stub libraries list every entry point of the real ones:
# those the stand-in does not implement get a stub that says so on stderr
# and returns an error code (CUDA_ERROR_NOT_SUPPORTED,
# CUBLAS_STATUS_NOT_SUPPORTED, NVRTC_ERROR_INTERNAL_ERROR).
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR [CUDA_DIR]}
cuda=${2:-${CUDA_HEADERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttrainer/cuda-11.8}}
[ -f "$cuda/include/cuda.h" ] && [ -f "$cuda/lib/libcuda.so" ] || {
  echo "build.sh: no CUDA 11.8 headers and stub libraries in $cuda (scripts/vet-cuda.sh fetches them)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-gcc}
cflags=(-std=gnu11 -O2 -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-deprecated-declarations
        -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -I"$cuda/include" -I"$src")

# stubs LIB IMPL.o ERROR: C source of a stub for every function LIB exports
# and IMPL.o does not define.
stubs() {
  echo '#include <stdio.h>'
  echo "static int stub(const char* f) { fprintf(stderr, \"cuda-standin: %s is not implemented\\n\", f); return $3; }"
  comm -23 <(nm -D --defined-only "$cuda/lib/$1" | awk '$2 ~ /^[TW]$/ {sub(/@.*/, "", $3); print $3}' | sort -u) \
           <(nm -g --defined-only "$2" | awk '{print $3}' | sort -u) |
  awk '/(ErrorString|StatusString|StatusName|ErrorName)$/ {
         printf "const char* %s(void) { stub(\"%s\"); return \"not implemented in the CUDA stand-in\"; }\n", $1, $1; next }
       { printf "int %s(void) { return stub(\"%s\"); }\n", $1, $1 }'
}

# lib NAME SONAME REAL VERSIONED ERROR LIBS...: builds OUTDIR/SONAME from NAME.c.
lib() {
  local name=$1 soname=$2 real=$3 versioned=$4 err=$5; shift 5
  "$CC" "${cflags[@]}" -c "$src/$name.c" -o "$tmp/$name.o"
  stubs "$real" "$tmp/$name.o" "$err" > "$tmp/${name}_stubs.c"
  "$CC" -O1 -fPIC -w -c "$tmp/${name}_stubs.c" -o "$tmp/${name}_stubs.o"
  local vs=()
  if [ "$versioned" = 1 ]; then   # the cuda binary asks for e.g. cublasSgemm_v2@libcublas.so.11
    echo "$soname { global: *; };" > "$tmp/$name.map"
    vs=(-Wl,--version-script="$tmp/$name.map")
  fi
  "$CC" -shared -o "$out/$soname" -Wl,-soname,"$soname" "${vs[@]}" "$tmp/$name.o" "$tmp/${name}_stubs.o" "$@"
  echo "build.sh: $soname: $(nm -g --defined-only "$tmp/$name.o" | grep -c ' T ') entry points implemented, $(grep -c 'stub(' "$tmp/${name}_stubs.c") stubs"
}

lib cuda libcuda.so.1 libcuda.so 0 801 -ldl -lpthread
lib cublas libcublas.so.11 libcublas.so 1 15 -L"$out" -l:libcuda.so.1 -Wl,-rpath,'$ORIGIN'
lib nvrtc libnvrtc.so.11.2 libnvrtc.so.11.2 1 11 -ldl
ln -sf libcuda.so.1 "$out/libcuda.so"
ln -sf libcublas.so.11 "$out/libcublas.so"
ln -sf libnvrtc.so.11.2 "$out/libnvrtc.so"
cp "$src/prelude.h" "$out/prelude.h"
