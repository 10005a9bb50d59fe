#!/usr/bin/env bash
# A lost node no longer ends the job (issue 54): an unmodified PyTorch DDP
# program (gloo, env://, the step's store) that checkpoints every 5 steps and
# resumes from its checkpoint, per task on 2 nodes x 2 tasks plus one spare
# node (srun -N3 --no-kill --dp-spares=1):
#  1. the control: the same program on 2 nodes without a spare;
#  2. a healthy step with a spare ends with the control's parameters, its
#     spare's tasks parked (no program ran there);
#  3. the node holding ranks 2-3 is lost (every process of it, slurmd
#     included, killed at once): the spare takes node rank 1, every program
#     starts again and resumes; the final parameters equal the control's; from
#     the loss to the first completed step after the restart <= 20 s
#     (checkpoint load excluded); srun returns within KillWait + 5 s of the
#     last rank's end, with 0, or where Slurm counts the lost node's tasks
#     failed (23.02 on), its last line says the step completed after the restart;
#  4. the same when the lost node holds rank 0. dp-top lists the restart and
#     the spares left while the restarted step runs.
# Its own 3-node cluster (a lost node's slurmd is killed and started again).
. "$(dirname "$0")/spares_common.sh"
site heartbeat_timeout=10 kill_grace=2
args=(--steps 60 --step-ms 150 --save-every 5)
kill_wait=5  # dp-cluster's KillWait

# 1. The control.
run_control "${args[@]}"

# 2. A healthy step with a spare.
t0=$(date +%s%N)
start_resume healthy 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
programs=$(job_pids "$job" python3 | wc -l)
((programs == 4)) || fail "a step of 4 ranks and a spare runs $programs programs (the spare's must be parked)"
wait_srun 240
((ms >= 0 && rc == 0)) || fail "the healthy step with a spare ended rc=$rc: $(tail -5 "$WORK/srun.log")"
expect_eq "$(done_params)" "$control" "the parameters with a spare and without"
[[ ! -s $WORK/task4.log && ! -s $WORK/task5.log ]] || fail "the spare's tasks printed: $(cat "$WORK"/task[45].log)"
! grep -q 'restart' "$WORK/srun.log" || fail "a healthy step restarted: $(cat "$WORK/srun.log")"

# 3-4. A lost node: the one of ranks 2-3, then the one of rank 0.
lost_run() {  # lost_run NODE RANKS
  local node=$1 ranks=$2 first load last end_ms line
  start_resume "lose-$node" 3 --no-kill --dp-spares=1 -- "${args[@]}"
  wait_ready 180
  lose_node "$node"
  # While the restarted step runs, dp-top lists the restart and the spares left.
  local deadline=$((SECONDS + 60))
  until grep -q 'restart 1 of ' "$WORK/srun.log"; do
    ((SECONDS < deadline)) || spares_fail "no restart line on srun's stderr within 60 s of the loss"
    sleep 0.1
  done
  top=$(as_user "${DP_TOP:?set DP_TOP to the built dp-top}" --once "$job.0" 2>&1) || true
  expect_contains "$top" "restarts: 1, spares left: 0" "dp-top during the restarted step"
  expect_restart_line "$node" 'slurm-dp: step .*: restart 1 of '
  expect_contains "$line" "spare n3 takes node rank" "the restart line"
  expect_contains "$line" "(ranks $ranks)" "the restart line"
  expect_contains "$line" "detect " "the restart line"
  expect_eq "$(done_params)" "$control" "the parameters after $node was lost and without a loss"
  read -r first load <<<"$(first_after "$t0")"
  ((first >= 0)) || fail "no restarted rank completed a step"
  ((first - load <= 20000)) ||
    fail "the first step after the restart completed $first ms after the loss (load $load ms); the bound is 20 s"
  last=$(last_end_ns)
  end_ms=$(((srun_end - last) / 1000000))
  ((end_ms <= (kill_wait + 5) * 1000)) ||
    fail "srun returned $end_ms ms after the last rank's end; the bound is KillWait + 5 s"
  if ((rc != 0)); then
    expect_contains "$(srun_last_line)" "completed after 1 restart" \
      "srun's last line (rc $rc)"
  fi
  echo "$node lost: first step $((first - load)) ms after the loss (+ $load ms load), srun rc $rc" \
    "$end_ms ms after the last rank's end; $line"
  revive
}
lost_run n2 2-3
lost_run n1 0-1
pass "a lost node (ranks 2-3, then rank 0's) is replaced by the spare: equal parameters, the step resumes within 20 s, srun returns at its end"
