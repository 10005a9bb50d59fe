#!/usr/bin/env bash
# kill -9 of one rank: its node's agent reports the loss at once (with the
# signal slurmstepd saw), and every other rank fails naming it within 1 s.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/../daemon/hold_ranks.sh"
[[ -n $victim_pid ]] || fail "no pid for rank $victim"
killed_at=$(date +%s%3N)
kill -9 "$victim_pid"
rc=0
wait "$srun_pid" || rc=$?
cat "$WORK"/task.*.out
((rc != 0)) || fail "srun exited 0 after rank $victim was killed"
worst=0
for t in 0 1 2; do
  line=$(grep "aborted at" "$WORK/task.$t.out") || fail "rank $t did not report the abort"
  grep -q "rank $victim (host " <<<"$line" || fail "rank $t's error does not name rank $victim: $line"
  at=$(sed -n 's/.*aborted at \([0-9]*\):.*/\1/p' <<<"$line")
  ((at - killed_at < 1000)) || fail "rank $t learned of the death after $((at - killed_at)) ms (limit 1000)"
  ((at - killed_at > worst)) && worst=$((at - killed_at))
done
grep -q "signal 9" "$WORK/task.0.out" || fail "the first failure does not say signal 9: $(cat "$WORK/task.0.out")"
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
pass "ranks 0-2 failed naming rank $victim (signal 9) within ${worst} ms of kill -9"
