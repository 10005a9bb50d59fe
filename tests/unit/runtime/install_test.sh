#!/bin/sh
# Installs libdp from the build tree to a temporary prefix, then builds and
# runs two outside programs against it: C++ via find_package(slurm-dp), C via
# pkg-config. Usage: install_test.sh <build-dir> <consumer-source-dir>
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
echo "installed libdp works for outside programs"
