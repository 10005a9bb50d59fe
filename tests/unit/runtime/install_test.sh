#!/bin/sh
# Installs libdp from the build tree to a temporary prefix, then builds and
# runs two outside programs against it: C++ via find_package(slurm-dp), C via
# pkg-config. libdp is installed without its NCCL module first (the base
# package alone): it must not need CUDA or NCCL, a two-rank Gloo run works,
# and asking for NCCL names the missing package. Then, where the build has
# CUDA, the module (component cuda) is added and libdp opens it.
# Usage: install_test.sh <build-dir> <consumer-source-dir>
set -eu
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/dp-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --component libdp --prefix "$prefix" >/dev/null
# The library folder depends on the prefix the build was configured with
# (lib, or lib/<multiarch> under /usr): find it rather than assume it.
libdir=$(dirname "$(find "$prefix" -name libdp.so | head -n1)")
[ -f "$libdir/libdp.so" ] || { echo "install_test: no libdp.so installed under $prefix" >&2; exit 1; }
# The world-1 path: nothing from a launcher in the environment.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE DP_RDV_ADDR DP_RDV_SECRET DP_BACKEND || true

cmake -S "$src" -B "$work/cxx" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cxx" >/dev/null
LD_LIBRARY_PATH=$libdir "$work/cxx/dp_consumer" | tee "$work/cxx.out"
grep -q "cxx consumer ok: libdp .*rank 0 of 1, backend single, sum 3" "$work/cxx.out"

PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
# The .pc names the configured prefix; point it at the temporary one.
cc -Wall -Werror -o "$work/c_consumer" "$src/consumer.c" \
  $(pkg-config --define-variable=prefix="$prefix" --cflags --libs slurm-dp)
LD_LIBRARY_PATH=$libdir "$work/c_consumer" | tee "$work/c.out"
grep -q "c consumer ok: rank 0 of 1, backend single, bad dtype -> 1" "$work/c.out"

# libdp itself loads neither CUDA nor NCCL.
if readelf -d "$libdir/libdp.so" | grep -E 'NEEDED.*(nccl|cudart|cublas|libcuda)' >&2; then
  echo "install_test: libdp.so needs CUDA or NCCL libraries (above); they belong in the NCCL module" >&2
  exit 1
fi
[ ! -e "$libdir/slurm-dp/libdp-nccl.so" ] || { echo "install_test: component libdp installed the NCCL module" >&2; exit 1; }

# Two ranks over Gloo (a file store) with no NCCL module installed.
store=$work/store
mkdir -p "$store"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 DP_STORE_DIR=$store DP_BACKEND=gloo \
    DP_TIMEOUT_MS=60000 LD_LIBRARY_PATH=$libdir timeout 120 "$work/cxx/dp_consumer" >"$work/gloo$r.out" 2>&1 &
  eval "pid$r=\$!"
done
wait "$pid0" || { cat "$work/gloo0.out" >&2; echo "install_test: rank 0 of the Gloo run failed" >&2; exit 1; }
wait "$pid1" || { cat "$work/gloo1.out" >&2; echo "install_test: rank 1 of the Gloo run failed" >&2; exit 1; }
for r in 0 1; do
  grep -q "cxx consumer ok: libdp .*rank $r of 2, backend gloo, sum 6" "$work/gloo$r.out" \
    || { cat "$work/gloo$r.out" >&2; echo "install_test: rank $r did not all_reduce over Gloo" >&2; exit 1; }
done
echo "two ranks over Gloo without the NCCL module: ok"

# NCCL asked for, module absent: the error names the package and the fix.
if DP_BACKEND=nccl LD_LIBRARY_PATH=$libdir "$work/cxx/dp_consumer" >"$work/nccl.out" 2>&1; then
  echo "install_test: DP_BACKEND=nccl worked without the NCCL module" >&2; exit 1
fi
grep -q "slurm-dp-cuda" "$work/nccl.out" && grep -q "DP_BACKEND=gloo" "$work/nccl.out" \
  || { cat "$work/nccl.out" >&2; echo "install_test: the NCCL error does not name slurm-dp-cuda and DP_BACKEND=gloo" >&2; exit 1; }
echo "DP_BACKEND=nccl without the module: $(cat "$work/nccl.out")"

# With CUDA built, the module installs beside libdp and is opened: here,
# with no GPU, NCCL then fails on the device, not on the module.
if [ -f "$build/runtime/slurm-dp/libdp-nccl.so" ]; then
  cmake --install "$build" --component cuda --prefix "$prefix" >/dev/null
  [ -f "$libdir/slurm-dp/libdp-nccl.so" ] || { echo "install_test: component cuda did not install $libdir/slurm-dp/libdp-nccl.so" >&2; exit 1; }
  if DP_BACKEND=nccl LD_LIBRARY_PATH=$libdir "$work/cxx/dp_consumer" >"$work/nccl2.out" 2>&1; then
    grep -q "backend nccl" "$work/nccl2.out" || { cat "$work/nccl2.out" >&2; exit 1; }
  elif grep -q "slurm-dp-cuda" "$work/nccl2.out"; then
    cat "$work/nccl2.out" >&2; echo "install_test: libdp did not open the installed NCCL module" >&2; exit 1
  fi
  echo "DP_BACKEND=nccl with the module: $(cat "$work/nccl2.out")"
fi
echo "installed libdp works for outside programs"
