#!/usr/bin/env bash
# kill -9 of one rank makes every other rank stop within 5 s with an error
# that names the dead rank; srun exits non-zero and no daemon is left.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/hold_ranks.sh"
kill_and_expect_failures "rank $victim" "$victim_pid" 5000 "aborted at" "rank $victim (host " 0 1 2
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
[[ -z $job ]] || wait_until 10 "no daemon of job $job" no_daemon "$job"
pass "every rank stopped within 5 s naming rank $victim"
