# shellcheck shell=bash
# Helpers for e2e test scripts; source it first:  . "$DP_SOURCE_DIR/tests/e2e/lib.sh"
#
# Needs DP_CLUSTER_DIR (set by dp_e2e_test); puts the cluster's SLURM_CONF in
# the environment so plain srun/sbatch/squeue/scontrol reach it, and gives:
#   fail MSG | pass MSG | expect_eq ACTUAL EXPECTED WHAT | expect_contains TEXT PART WHAT
#   with_timeout SECS CMD...        run CMD, fail loudly if it takes longer
#   wait_until SECS WHAT CMD...     poll CMD until it succeeds, fail on the deadline
#   wait_job_end JOBID SECS         poll until the job ends; prints its final state
#   as_user CMD...                  run CMD as the unprivileged test user in $WORK
#   WORK                            a fresh folder any user may write, removed at exit
set -euo pipefail

TEST_NAME=$(basename "$0" .sh)
fail() { echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
pass() { echo "ok [$TEST_NAME]: $*"; }

: "${DP_CLUSTER_DIR:?DP_CLUSTER_DIR is not set; run this script through ctest (dp_e2e_test) or set it to the folder of a running cluster}"
DP_CLUSTER=${DP_CLUSTER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/dp-cluster}
cluster_env=$("$DP_CLUSTER" env) || fail "no cluster in $DP_CLUSTER_DIR; run '$DP_CLUSTER up' (or the ctest fixture) first"
eval "$cluster_env"
unset cluster_env

export DP_TEST_USER=dptest TEST_NAME

expect_eq() {
  [[ $1 == "$2" ]] || fail "${3:-value}: expected '$2', got '$1'"
}

expect_contains() {
  [[ $1 == *"$2"* ]] || fail "${3:-output}: expected to contain '$2', got: $1"
}

# CMD may be one of these helpers (e.g. as_user): it then runs in a child bash
# that gets every function and the exported variables.
with_timeout() {
  local secs=$1 rc=0
  shift
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=5 "$secs" bash -c "$(declare -f); \"\$@\"" with_timeout "$@" || rc=$?
  else
    timeout --kill-after=5 "$secs" "$@" || rc=$?
  fi
  if ((rc == 124 || rc == 137)); then fail "timed out after ${secs}s: $*"; fi
  return "$rc"
}

wait_until() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    sleep 0.05
  done
}

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

job_ended() {
  case $(job_state "$1") in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) return 0 ;;
    *) return 1 ;;
  esac
}

wait_job_end() {
  wait_until "$2" "job $1 to end (state now: $(job_state "$1"))" job_ended "$1"
  job_state "$1"
}

WORK=$(mktemp -d "${DP_CLUSTER_WORK:-$DP_CLUSTER_DIR/work}/$TEST_NAME.XXXXXX")
chmod 777 "$WORK"
export WORK
trap 'rm -rf "$WORK"' EXIT

as_user() {
  (cd "$WORK" && runuser -u "$DP_TEST_USER" -- env SLURM_CONF="$SLURM_CONF" HOME="$WORK" "$@")
}
