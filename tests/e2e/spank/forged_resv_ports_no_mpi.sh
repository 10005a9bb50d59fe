#!/usr/bin/env bash
# forged_resv_ports.sh on a site without MpiParams=ports= (issue 53): a
# cluster of its own (lo, 2 nodes, 50 ports after the shared lo cluster's
# base) where Slurm reserves no port for any step, so plain srun passes the
# user's SLURM_STEP_RESV_PORTS to the tasks as it is.
set -euo pipefail
: "${DP_BUILD_DIR:?run through ctest}" "${DP_CLUSTER_PORT_BASE:?run through ctest}"
DP_CLUSTER=${DP_CLUSTER:-$(cd "$(dirname "$0")/../../cluster" && pwd)/dp-cluster}
export DP_CLUSTER_DIR=$DP_BUILD_DIR/e2e-cluster-nompi DP_CLUSTER_MODE=lo DP_CLUSTER_NODES=2 \
  DP_CLUSTER_PORT_BASE=$((DP_CLUSTER_PORT_BASE + 50)) DP_CLUSTER_MPI_PORTS=none DP_CLUSTER
"$DP_CLUSTER" up >"$DP_BUILD_DIR/e2e-cluster-nompi.up.log" 2>&1 ||
  { cat "$DP_BUILD_DIR/e2e-cluster-nompi.up.log" >&2; echo "FAIL [forged_resv_ports_no_mpi]: dp-cluster up failed" >&2; exit 1; }
trap '"$DP_CLUSTER" down >/dev/null 2>&1 || true' EXIT
"$(dirname "$0")/forged_resv_ports.sh"
