#!/usr/bin/env bash
# A node on which the program fails at once (issue 63): on n2 (ranks 2-3)
# every start raises before it could step, as on a node with a bad GPU. The
# first failure restarts in place; the second in a row, still before any
# step, retires n2 and the spare n3 takes node rank 1, named on srun's
# stderr; the step then completes with the parameters of a run that never
# failed, and n2 started the program twice, not the whole budget.
. "$(dirname "$0")/spares_common.sh"
site heartbeat_timeout=10 kill_grace=2
args=(--steps 30 --step-ms 100 --save-every 5)
run_control "${args[@]}"

start_resume badnode 3 --no-kill --dp-spares=1 --dp-max-restarts=3 -- "${args[@]}" --fail-at-once-on n2
wait_srun 240
cat "$WORK/srun.log"
((ms >= 0)) || spares_fail "srun still ran 240 s after the start"
((rc == 0)) || expect_contains "$(srun_last_line)" "completed after 2 restart" "srun's last line (rc $rc)"
first=$(grep -m1 'slurm-dp: step .*: restart 1 of 3: ' "$WORK/srun.log") || fail "no first restart line"
expect_contains "$first" "restart 1 of 3: in place" "the first restart line"
second=$(grep -m1 'slurm-dp: step .*: restart 2 of 3: ' "$WORK/srun.log") || fail "no second restart line"
expect_contains "$second" "node n2 lost" "the second restart line"
expect_contains "$second" "failed at once again" "the second restart line"
expect_contains "$second" "which is retired for a spare" "the second restart line"
expect_contains "$second" "spare n3 takes node rank 1 (ranks 2-3)" "the second restart line"
! grep -q 'restart 3 of 3' "$WORK/srun.log" || fail "a third restart: the retired node was tried again"
# Each start on n2 failed (its first failure stops the other rank there),
# and n2 had no third start.
starts=$(sed -n 's/.*fails at once on n2 in start \([0-9]*\) .*/\1/p' "$WORK"/task*.log | sort -u | paste -sd' ')
expect_eq "$starts" "0 1" "the starts that failed at once on n2"
expect_eq "$(done_params)" "$control" "the parameters after n2 was retired"
pass "a node whose program failed at once twice was retired and the spare took its place: $second"
