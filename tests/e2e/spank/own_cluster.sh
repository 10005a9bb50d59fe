# shellcheck shell=bash
# A test's cluster of its own, for settings the shared clusters do not have
# (sourced before ../lib.sh, which reads DP_CLUSTER_DIR):
#   own_cluster NAME OFFSET [DP_CLUSTER_X=value...]
# brings up 2 lo nodes on the ports from DP_CLUSTER_PORT_BASE + OFFSET in
# $DP_BUILD_DIR/e2e-cluster-NAME; own_cluster_down takes it down (EXIT traps).
own_cluster() {
  : "${DP_BUILD_DIR:?run through ctest}" "${DP_CLUSTER_PORT_BASE:?run through ctest}"
  local name=$1 offset=$2
  shift 2
  DP_CLUSTER=${DP_CLUSTER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../cluster" && pwd)/dp-cluster}
  export DP_CLUSTER_DIR=$DP_BUILD_DIR/e2e-cluster-$name DP_CLUSTER_MODE=lo DP_CLUSTER_NODES=2 \
    DP_CLUSTER_PORT_BASE=$((DP_CLUSTER_PORT_BASE + offset)) DP_CLUSTER
  local setting
  for setting; do export "${setting?}"; done
  "$DP_CLUSTER" up >"$DP_CLUSTER_DIR.up.log" 2>&1 || {
    cat "$DP_CLUSTER_DIR.up.log" >&2
    echo "FAIL [$(basename "$0" .sh)]: dp-cluster up ($name) failed" >&2
    exit 1
  }
}
own_cluster_down() { "$DP_CLUSTER" down >/dev/null 2>&1 || true; }
