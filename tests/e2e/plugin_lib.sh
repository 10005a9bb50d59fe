# Helpers for e2e tests that run jobs through the plugin (spank, daemon,
# runtime, trainer). Sourced by each test script.
#
# Needs: SLURM_CONF and DP_CLUSTER_DIR (from `dp-cluster env`), DP_DAEMON
# (the built dp-rendezvousd) and DP_CLUSTER_SCRIPT (tests/cluster/dp-cluster).
# Nothing a test finds in a task's environment may come from the caller's shell.
# Jobs run as the unprivileged `dptest` user, as real users would.
set -euo pipefail

if [[ -z ${SLURM_CONF:-} && -n ${DP_CLUSTER_DIR:-} && -n ${DP_CLUSTER_SCRIPT:-} ]]; then
  eval "$("$DP_CLUSTER_SCRIPT" env)"
fi
: "${SLURM_CONF:?run under the e2e fixture (dp-cluster env)}"
: "${DP_CLUSTER_DIR:?run under the e2e fixture (dp-cluster env)}"
: "${DP_DAEMON:?set DP_DAEMON to the built dp-rendezvousd}"
: "${DP_CLUSTER_SCRIPT:?set DP_CLUSTER_SCRIPT to tests/cluster/dp-cluster}"
unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST
# Variables the plugin sets must not leak in from the caller's shell.
unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT \
  DP_RDV_ADDR DP_RDV_SECRET DP_JOB_ID DP_STEP_ID DP_TILES DP_TILES_PER_TASK CUDA_VISIBLE_DEVICES \
  DP_BACKEND DP_STORE_DIR

TEST_NAME=$(basename "$0" .sh)
TEST_PART=$(basename "$(dirname "$0")")
WORK=$(mktemp -d "${DP_CLUSTER_WORK:-$DP_CLUSTER_DIR/work}/$TEST_PART-$TEST_NAME.XXXXXX")
chmod 777 "$WORK"
cleanup_work() { rm -rf "$WORK"; }
trap cleanup_work EXIT

fail() { echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
pass() { echo "ok [$TEST_NAME]: $*"; }

# Runs a Slurm command as dptest in $WORK; stdin, stdout and stderr pass through.
as_user() {
  # A clean environment: only what a login would give, so anything found in
  # a task was put there by Slurm or the plugin.
  (cd "$WORK" && runuser -u dptest -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER=dptest LANG=C.UTF-8 "$@")
}

# The same as another tenant of the nodes (dptest2), for attacks on the plugin.
as_other() {
  (cd "$WORK" && runuser -u dptest2 -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER=dptest2 LANG=C.UTF-8 "$@")
}

# A port range of this cluster's own for lease tests (attackers bind parts
# of it): 20 ports from 20000 + (base % 1000) * 10, apart from other trees'.
test_port_range() {
  local lo=$((20000 + (DP_CLUSTER_PORT_BASE % 1000) * 10))
  echo "$lo-$((lo + 19))"
}

# The site settings every test needs (the daemon under test), plus extras.
site() { "$DP_CLUSTER_SCRIPT" plugstack "daemon=$DP_DAEMON" "$@"; }

# Polls `cmd` until it succeeds or `secs` pass; fails loudly on the deadline.
wait_until() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.05
  done
}

job_done() { [[ -z $(squeue -h -j "$1" 2>/dev/null) ]]; }

# The daemons of a job still alive (any user).
daemons_of_job() { pgrep -f -- "dp-rendezvousd .*--job-id $1( |\$)" || true; }
has_daemon() { [[ -n $(daemons_of_job "$1") ]]; }
no_daemon() { [[ -z $(daemons_of_job "$1") ]]; }

# NodeAddr of a node, as MASTER_ADDR must be.
node_addr() { scontrol show node "$1" | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p'; }

# "KEY=VALUE ..." of the listed variables in one task's environment.
TASK_VARS='RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT DP_RDV_ADDR DP_JOB_ID DP_STEP_ID DP_TILES CUDA_VISIBLE_DEVICES'
print_task='printf "%s %s %s" "$SLURM_PROCID" "$SLURM_LOCALID" "$SLURMD_NODENAME"; for v in '"$TASK_VARS"'; do printf " %s=%s" "$v" "${!v-unset}"; done; printf " SECRET=%s\n" "${DP_RDV_SECRET:+${#DP_RDV_SECRET}}"'

# Field `name` from a task line.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
