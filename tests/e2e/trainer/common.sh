# Helpers for dp-trainer's e2e tests on the real local cluster. Sourced by each
# test. Needs DP_CLUSTER_DIR + DP_CLUSTER_SCRIPT (or SLURM_CONF from
# `dp-cluster env`), DP_DAEMON (built dp-rendezvousd), DP_TRAINER (built
# dp-trainer). Jobs run as the unprivileged `dptest` user.
set -euo pipefail

if [[ -z ${SLURM_CONF:-} && -n ${DP_CLUSTER_DIR:-} && -n ${DP_CLUSTER_SCRIPT:-} ]]; then
  eval "$("$DP_CLUSTER_SCRIPT" env)"
fi
: "${SLURM_CONF:?run under the e2e fixture (dp-cluster env)}"
: "${DP_CLUSTER_DIR:?run under the e2e fixture (dp-cluster env)}"
: "${DP_DAEMON:?set DP_DAEMON to the built dp-rendezvousd}"
: "${DP_CLUSTER_SCRIPT:?set DP_CLUSTER_SCRIPT to tests/cluster/dp-cluster}"
: "${DP_TRAINER:?set DP_TRAINER to the built dp-trainer}"
unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST
unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT \
  DP_RDV_ADDR DP_RDV_SECRET DP_JOB_ID DP_STEP_ID DP_TILES DP_BACKEND DP_STORE_DIR

TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "${DP_CLUSTER_WORK:-$DP_CLUSTER_DIR/work}/trainer-$TEST_NAME.XXXXXX")
chmod 777 "$WORK"
cleanup_work() { rm -rf "$WORK"; }
trap cleanup_work EXIT

fail() { echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
pass() { echo "ok [$TEST_NAME]: $*"; }

as_user() {
  (cd "$WORK" && runuser -u dptest -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER=dptest LANG=C.UTF-8 "$@")
}

"$DP_CLUSTER_SCRIPT" plugstack "daemon=$DP_DAEMON" >/dev/null

# Value of a numeric field in the "final" JSON line of a metrics file.
final_field() {
  sed -n 's/.*"event":"final".*"'"$2"'":\([0-9.eE+-]*\).*/\1/p' "$1" | tail -n1
}
