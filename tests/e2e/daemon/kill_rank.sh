#!/usr/bin/env bash
# kill -9 of one rank makes every other rank stop within 5 s with an error
# that names the dead rank; srun exits non-zero and no daemon is left.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/hold_ranks.sh"
[[ -n $victim_pid ]] || fail "no pid for rank $victim"
killed_at=$(date +%s%3N)
kill -9 "$victim_pid"

rc=0
wait "$srun_pid" || rc=$?
cat "$WORK"/task.*.out
((rc != 0)) || fail "srun exited 0 after rank $victim was killed"
for t in 0 1 2; do
  line=$(grep "aborted at" "$WORK/task.$t.out") || fail "rank $t did not report the abort"
  grep -q "rank $victim (host " <<<"$line" || fail "rank $t's error does not name rank $victim: $line"
  at=$(sed -n 's/.*aborted at \([0-9]*\):.*/\1/p' <<<"$line")
  ((at - killed_at < 5000)) || fail "rank $t learned of the death after $((at - killed_at)) ms (limit 5000)"
  echo "rank $t aborted $((at - killed_at)) ms after the kill"
done
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
[[ -z $job ]] || wait_until 10 "no daemon of job $job" no_daemon "$job"
pass "every rank stopped within 5 s naming rank $victim"
