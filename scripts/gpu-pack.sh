#!/usr/bin/env bash
# Prepares .device/ for a lent GPU machine (no Go, no network) within the
# 64 MiB that travel with the working tree: ../shared/gpu/pack.sh's trimmed
# Go toolchain (26 MB) and vendored modules, the modules compressed (33 MB →
# 5 MB), and its build script made to unpack them. Then, on the machine:
#   bash scripts/gpu-test.sh            (carry .device)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
pack=${GPU_PACK:-$root/../shared/gpu/pack.sh}
[ -f "$pack" ] || { echo "gpu-pack: no $pack (set GPU_PACK to the shared pack script)" >&2; exit 1; }
mkdir -p "$(git rev-parse --git-dir)/info" # pack.sh appends to info/exclude
bash "$pack"
tar -C .device -cJf .device/vendor.tar.xz vendor
rm -rf .device/vendor
sed -i "s|^rm -rf vendor && cp -r .device/vendor vendor\$|rm -rf vendor \&\& python3 -c \"import tarfile; tarfile.open('.device/vendor.tar.xz').extractall('.')\"|" .device/build.sh
grep -q "vendor.tar.xz" .device/build.sh || { echo "gpu-pack: .device/build.sh no longer has the line this script rewrites; unpack .device/vendor.tar.xz there by hand" >&2; exit 1; }
du -sh .device
