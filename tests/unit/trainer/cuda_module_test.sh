#!/bin/sh
# dp-trainer's CUDA half is a module of the CUDA package. Without it (a copy
# of dp-trainer with no module on its path), the CPU still trains and
# --device cuda fails at once naming the package; with the build's module
# (CUDA builds), --device cuda gets past the module: here, with no GPU, it
# stops at the device, and on a GPU machine it trains.
# Usage: cuda_module_test.sh DP_TRAINER
set -eu
trainer=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/dp-trainer-module-XXXXXX")
trap 'rm -rf "$work"' EXIT
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DP_RDV_ADDR DP_RDV_SECRET DP_BACKEND || true
mkdir -p "$work/bin"
cp "$trainer" "$work/bin/"
"$work/bin/dp-trainer" --task regression --log-every 0 --max-steps 20 >"$work/cpu.out" 2>&1 \
  || { cat "$work/cpu.out" >&2; echo "FAIL: dp-trainer without its CUDA module did not train on the CPU" >&2; exit 1; }
if "$work/bin/dp-trainer" --task regression --device cuda >"$work/cuda.out" 2>&1; then
  echo "FAIL: --device cuda worked without the CUDA module" >&2; exit 1
fi
grep -q "slurm-dp-cuda" "$work/cuda.out" && grep -q "device cpu" "$work/cuda.out" \
  || { cat "$work/cuda.out" >&2; echo "FAIL: --device cuda without the module does not name slurm-dp-cuda and --device cpu" >&2; exit 1; }
echo "without the module: $(cat "$work/cuda.out")"
if ls "$(dirname "$trainer")"/../lib/*/slurm-dp/libdp-trainer-cuda.so >/dev/null 2>&1 \
   || ls "$(dirname "$trainer")"/../lib/slurm-dp/libdp-trainer-cuda.so >/dev/null 2>&1; then
  "$trainer" --task regression --device cuda --log-every 0 --max-steps 20 >"$work/built.out" 2>&1 || true
  if grep -q "slurm-dp-cuda" "$work/built.out"; then
    cat "$work/built.out" >&2; echo "FAIL: the build's dp-trainer did not open its CUDA module" >&2; exit 1
  fi
  echo "with the module: $(cat "$work/built.out")"
fi
echo "ok"
