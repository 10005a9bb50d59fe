#!/usr/bin/env bash
# A whole node freezes (a kernel hang, a stuck file system): every process of
# n2 (its slurmd, the step's slurmstepd, the node agent and the tasks) is
# stopped with SIGSTOP while an unmodified PyTorch DDP script runs on 2 nodes
# x 2 tasks. n1's agent is still heard, so n2's silence is the node's loss:
# srun exits non-zero naming n2 within the site's silence bound
# (heartbeat_timeout) + 10 s, without waiting for Slurm's node timeout.
# Only what this test stopped is continued, by pid.
# DP_MEASURE_PLAIN=SECS also times the same freeze without --dp-* for at most
# SECS (nothing bounds it but Slurm's SlurmdTimeout, 300 s by default).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
bound=10
site heartbeat_timeout=$bound kill_grace=2
. "$(dirname "$0")/node_loss.sh"
trap 'thaw_all; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

run_frozen() {  # run_frozen START-FUNCTION LIMIT-S: sets rc and ms
  rm -f "$WORK"/ready.* "$WORK"/rank*.log
  "$1" "freeze$1" --steps 100000 --step-ms 100
  wait_ranks_ready 120
  freeze_node n2
  wait_srun "$2"
  cat "$WORK/srun.log"
  thaw_all
  as_user scancel "$job" 2>/dev/null || true  # the run without slurm-dp trains on
  wait_until 120 "job $job to end after n2 was continued" job_done "$job"
}

if ((${DP_MEASURE_PLAIN:-0} > 0)); then
  run_frozen start_plain_ddp "$DP_MEASURE_PLAIN"
  echo "without slurm-dp: srun $( ((ms < 0)) && echo "still ran $DP_MEASURE_PLAIN s after the freeze" || echo "exited $rc after $ms ms")"
fi

run_frozen start_ddp $((bound + 30))
((ms >= 0)) || fail "srun still ran $((bound + 30)) s after n2 froze"
((rc != 0)) || fail "srun exited 0 although n2 froze"
((ms <= (bound + 10) * 1000)) || fail "srun exited $ms ms after n2 froze; the bound is $bound s + 10 s"
last=$(srun_last_line)
expect_contains "$last" "the node agent on host n2 (ranks 2-3) sent no heartbeat" "srun's last line"
expect_contains "$last" "verdict node_silent" "srun's last line"
pass "srun exited $rc $ms ms after every process of n2 was stopped (silence bound $bound s), naming n2"
