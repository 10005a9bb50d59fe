# Helpers for libdp's e2e tests on the real local cluster. Sourced by each test.
# Needs: SLURM_CONF and DP_CLUSTER_DIR (from `dp-cluster env`), DP_DAEMON (the
# built dp-rendezvousd), DP_CLUSTER_SCRIPT (tests/cluster/dp-cluster) and
# DP_COMM_WORKER (the built dp_comm_worker). Jobs run as the unprivileged
# `dptest` user, as real users would.
set -euo pipefail

# Under ctest only DP_CLUSTER_DIR is given: take the rest from the cluster.
if [[ -z ${SLURM_CONF:-} && -n ${DP_CLUSTER_DIR:-} && -n ${DP_CLUSTER_SCRIPT:-} ]]; then
  eval "$("$DP_CLUSTER_SCRIPT" env)"
fi
: "${SLURM_CONF:?run under the e2e fixture (dp-cluster env)}"
: "${DP_CLUSTER_DIR:?run under the e2e fixture (dp-cluster env)}"
: "${DP_DAEMON:?set DP_DAEMON to the built dp-rendezvousd}"
: "${DP_CLUSTER_SCRIPT:?set DP_CLUSTER_SCRIPT to tests/cluster/dp-cluster}"
: "${DP_COMM_WORKER:?set DP_COMM_WORKER to the built dp_comm_worker}"
unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST
unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT \
  DP_RDV_ADDR DP_RDV_SECRET DP_JOB_ID DP_STEP_ID DP_TILES DP_BACKEND DP_STORE_DIR

TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "${DP_CLUSTER_WORK:-$DP_CLUSTER_DIR/work}/runtime-$TEST_NAME.XXXXXX")
chmod 777 "$WORK"
cleanup_work() { rm -rf "$WORK"; }
trap cleanup_work EXIT

fail() { echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
pass() { echo "ok [$TEST_NAME]: $*"; }

# Runs a Slurm command as dptest in $WORK with a login-like environment.
as_user() {
  (cd "$WORK" && runuser -u dptest -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER=dptest LANG=C.UTF-8 "$@")
}

site() { "$DP_CLUSTER_SCRIPT" plugstack "daemon=$DP_DAEMON" "$@"; }

mode() { "$DP_CLUSTER_SCRIPT" status 2>/dev/null | sed -n 's/.*mode=\([a-z]*\).*/\1/p' | head -n1; }
