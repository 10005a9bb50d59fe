#!/usr/bin/env bash
# forged_resv_ports.sh on a site without MpiParams=ports= (issue 53): a
# cluster of its own (lo, 2 nodes, 50 ports after the shared lo cluster's
# base) where Slurm reserves no port for any step, so plain srun passes the
# user's SLURM_STEP_RESV_PORTS to the tasks as it is.
set -euo pipefail
. "$(dirname "$0")/own_cluster.sh"
own_cluster nompi 50 DP_CLUSTER_MPI_PORTS=none
trap own_cluster_down EXIT
"$(dirname "$0")/forged_resv_ports.sh"
