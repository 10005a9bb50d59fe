#!/usr/bin/env bash
# kill -9 of one rank: its node's agent reports the loss at once (with the
# signal slurmstepd saw), every other rank fails naming it within 1 s (rank 2,
# on its node, may be ended by the step's end first), srun names it and exits
# non-zero, and no daemon is left.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/../daemon/hold_ranks.sh"
kill_and_expect_failures "rank $victim" "$victim_pid" 1000 "aborted at" "rank $victim (host " 0 1 2~
grep -q "signal 9" "$WORK/task.0.out" || fail "the first failure does not say signal 9: $(cat "$WORK/task.0.out")"
grep -q "slurm-dp: step .* failed: first failure: rank $victim (host n2" "$WORK/srun.err" ||
  fail "srun's stderr does not name rank $victim: $(cat "$WORK/srun.err")"
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
[[ -z $job ]] || wait_until 10 "no daemon of job $job" no_daemon "$job"
pass "srun named rank $victim; ranks 0-2 failed naming it (signal 9) within ${worst} ms of kill -9, or were ended by the step's end first"
