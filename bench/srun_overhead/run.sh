#!/usr/bin/env bash
# srun overhead of slurm-dp: median wall time of `srun -N2 --ntasks-per-node=2
# true` with --dp-world=auto against without, alternating in one run.
# Target: with/without <= 1.15.
#
#   bench/srun_overhead/run.sh [--smoke] BUILD_DIR [RUNS=30] [MODE=lo]
#
# Brings up a private 2-node cluster (ports DP_BENCH_PORT_BASE, default 17600)
# with the built plugin and daemon, and takes it down at the end; with
# DP_CLUSTER_DIR naming a running cluster (ctest's e2e fixture) it uses that
# one and leaves it up. --smoke: 2 runs, for a ratio that means nothing but
# proves the script works (ctest e2e.lo.bench.srun_overhead).
set -euo pipefail
. "$(dirname "$0")/../cluster.sh"
bench_args "" 30 2 "$@"
[[ -f $plugin && -x $daemon ]] || { echo "build spank_dp and dp-rendezvousd in $build first" >&2; exit 1; }
((smoke || runs >= 20)) || { echo "RUNS must be >= 20" >&2; exit 1; }

trap bench_cluster_down EXIT
bench_cluster "$plugin" "$daemon" "$mode"
mode=$DP_CLUSTER_MODE

ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(((t1 - t0) / 1000)); }
srun_us() {  # srun_us without|with: one srun's wall time
  local dp=()
  if [[ $1 == with ]]; then dp=(--dp-world=auto); fi
  ms srun -Q "${dp[@]}" -N2 --ntasks-per-node=2 true
}

# Warm-up: first srun pays for cold caches.
srun -N2 --ntasks-per-node=2 true
srun --dp-world=auto -N2 --ntasks-per-node=2 true
bench_pairs "$runs" srun_us without with
printf 'mode=%s runs=%d median without=%.1f ms with --dp-world=auto=%.1f ms ratio=%.3f (target <= 1.15)\n' \
  "$mode" "$runs" "$(echo "$mo / 1000" | bc -l)" "$(echo "$mn / 1000" | bc -l)" "$(echo "$mn / $mo" | bc -l)"
