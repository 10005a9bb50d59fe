#!/usr/bin/env bash
# The daemon lives exactly as long as its step: a task that calls dp::init()
# 30 s after the others and a second dp::init() of every task, 5 s after all
# of them left the first (the old daemon left 2 s after the last goodbye),
# both work; once srun ends, no daemon of the job is left.
. "$(dirname "$0")/../runtime/common.sh"
site

out=$(as_user timeout 200 srun --dp-world=auto -N2 --ntasks-per-node=1 \
  --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=120000,DP_TEST_LATE_S=30,DP_TEST_GAP_S=5 \
  sh -c 'echo "JOB $DP_JOB_ID"; exec "$0" lifetime' "$DP_COMM_WORKER" 2>&1) || fail "srun failed: $out"
echo "$out"
for round in 1 2; do
  for r in 0 1; do
    grep -qxF "OK init $round rank $r of 2" <<<"$out" || fail "rank $r: init $round did not work"
  done
done
job=$(sed -n 's/^JOB \([0-9]*\)$/\1/p' <<<"$out" | head -n1)
[[ -n $job ]] || fail "the tasks did not see DP_JOB_ID"
wait_until 10 "no daemon of job $job after srun ended" no_daemon "$job"
pass "late init (30 s) and a second init in the same step both worked"
