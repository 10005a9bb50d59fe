# Sourced by the benchmarks that need a Slurm cluster (srun_overhead,
# hang_watch, hang_watch/wide_step): their cluster and their median.

bench_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster=$bench_src/tests/cluster/dp-cluster

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# bench_cluster PLUGIN DAEMON MODE [NODES=2]: the running cluster that
# DP_CLUSTER_DIR names (ctest's e2e fixture in smoke runs), left up; else one
# of the bench's own in a new folder (ports DP_BENCH_PORT_BASE, default
# 17600), which bench_cluster_down takes down. Then its plugin's daemon and
# its environment (squeue, srun...).
bench_cluster() {
  if [[ -n ${DP_CLUSTER_DIR:-} ]] && "$cluster" env >/dev/null 2>&1; then
    echo "$(basename "$0"): using the running cluster in $DP_CLUSTER_DIR"
  else
    bench_own_cluster=1
    DP_CLUSTER_DIR=$(mktemp -d /tmp/dp-bench-cluster.XXXXXX)
    export DP_CLUSTER_DIR DP_CLUSTER_NODES=${4:-2} DP_CLUSTER_PORT_BASE=${DP_BENCH_PORT_BASE:-17600}
    export DP_CLUSTER_MODE=$3 DP_CLUSTER_PLUGIN=$1
    "$cluster" up >/dev/null
  fi
  "$cluster" plugstack "daemon=$2"
  eval "$("$cluster" env)"
}

bench_cluster_down() {
  if [[ -n ${bench_own_cluster:-} ]]; then
    "$cluster" down >/dev/null 2>&1 || true
    rm -rf "$DP_CLUSTER_DIR"
  fi
}
