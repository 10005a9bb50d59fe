#!/usr/bin/env bash
# Every rank talks only to its node's agent: while a 2x2 and a 3+1 step hold
# their ranks, the step's daemon counts one connection per node (srun itself
# reads the report socket, which is no connection of the daemon's).
. "$(dirname "$0")/../lib.sh"
: "${DP_RDV_PROBE:?set DP_RDV_PROBE to the built dp-rdv-probe}" "${DP_TOP:?set DP_TOP to the built dp-top}"
site

json_number() { sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$2" | head -1; }

check_step() {  # label, srun layout options...
  local label=$1
  shift
  rm -f "$WORK"/task.*.out
  as_user timeout 120 srun --dp-world=auto "$@" -o "$WORK/task.%t.out" "$DP_RDV_PROBE" hold &
  local srun_pid=$!
  holding() { [[ $(cat "$WORK"/task.*.out 2>/dev/null | grep -c "holding pid") -eq 4 ]]; }
  wait_until 60 "all 4 ranks of the $label step holding" holding
  local job step json
  job=$(squeue -h -u dptest -o %i | head -1)
  step=$(squeue -h -s -u dptest -o %i | grep "^$job\." | grep -v 'batch\|extern' | head -1)
  json=$(as_user "$DP_TOP" --json --once "$step")
  local conns nodes
  conns=$(json_number connections "$json")
  nodes=$(json_number nodes_connected "$json")
  echo "$label: connections=$conns nodes=$nodes"
  scancel "$job"
  wait "$srun_pid" 2>/dev/null || true
  wait_until 30 "job $job to end" job_done "$job"
  expect_eq "$nodes" 2 "$label: node agents connected"
  expect_eq "$conns" 2 "$label: the daemon's connections (one per node)"
}

check_step 2x2 -N2 --ntasks-per-node=2
check_step 3+1 -N2 -n4 --ntasks-per-node=3
pass "2x2 and 3+1 steps: the daemon holds one connection per node"
