#!/usr/bin/env bash
# dp-cluster up refuses, naming the port and the variable to change, when a
# port it needs is taken (here: by the fixture's running cluster), starts
# nothing, and leaves the running cluster alone.
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"
base=${DP_CLUSTER_PORT_BASE:?}

try_up() {  # <base> <mode>: a second cluster in a fresh folder
  local dir rc=0
  dir=$(mktemp -d /tmp/dp-refuse.XXXXXX)
  out=$(DP_CLUSTER_DIR=$dir DP_CLUSTER_MODE=$2 DP_CLUSTER_PORT_BASE=$1 DP_CLUSTER_PLUGIN='' \
        with_timeout 60 "$DP_CLUSTER" up 2>&1) || rc=$?
  if grep -lzxF "DP_CLUSTER_DAEMON_OF=$dir" /proc/[0-9]*/environ 2>/dev/null; then
    DP_CLUSTER_DIR=$dir "$DP_CLUSTER" down || true
    fail "a refused up left processes running"
  fi
  rm -rf "$dir"
  ((rc != 0)) || fail "up with DP_CLUSTER_PORT_BASE=$1 should have been refused, but it succeeded: $out"
}

# slurmctld's port is the fixture's slurmctld port.
try_up "$base" "$DP_CLUSTER_MODE"
expect_contains "$out" "port $base (slurmctld) is already in use" "refusal message"
expect_contains "$out" "DP_CLUSTER_PORT_BASE" "refusal message"
[[ $(wc -l <<<"$out") -eq 1 ]] || fail "refusal should be one line, got: $out"

# A lo cluster one port lower: its slurmd n1 would need the fixture's slurmctld port.
try_up $((base - 1)) lo
expect_contains "$out" "port $base (slurmd n1) is already in use" "refusal message"

wait_until 10 "the fixture's slurmctld to still answer" sh -c 'scontrol ping | grep -q "is UP"'
out=$(with_timeout 60 srun -N2 true 2>&1) || fail "the fixture cluster stopped working: $out"
pass "a taken port is refused with one line naming the port and DP_CLUSTER_PORT_BASE"
