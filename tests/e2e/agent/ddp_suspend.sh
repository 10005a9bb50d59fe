#!/usr/bin/env bash
# Stopped is not dead, for a program that never talks to slurm-dp either:
# `scontrol suspend` of an unmodified PyTorch DDP step (2 nodes x 2 tasks)
# for 20 s, twice the silence bound (heartbeat_timeout=10): Slurm stops the
# agents with their tasks, every node falls silent together, and that is a
# suspension, not a lost node. After `scontrol resume` the step finishes, every
# rank with the same parameters.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
site heartbeat_timeout=10
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

tasks_stopped() {
  local p pids
  pids=$(survivors)
  [[ -n $pids ]] || return 1
  for p in $pids; do [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) == T ]] || return 1; done
}

start_ddp ddpsusp --steps 300 --step-ms 50
wait_ranks_ready 120
scontrol suspend "$job" || fail "scontrol suspend $job failed"
wait_until 10 "job $job's tasks stopped" tasks_stopped
sleep 20 # the suspension under test, not a synchronisation
scontrol resume "$job" || fail "scontrol resume $job failed"
t0=$(date +%s%N)
expect_srun_ok 120 "the resume of a 20 s suspension"
same_params suspend
pass "a DDP step suspended for 20 s (silence bound 10 s) finished, every rank with the same parameters"
