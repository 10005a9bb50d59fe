#!/usr/bin/env bash
# kill -9 of node n2's agent: the daemon loses the node, and every rank fails
# naming n2 within 5 s; the ranks on n2 lose their agent.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/../daemon/hold_ranks.sh"
[[ -n $victim_pid ]] || fail "no pid for rank $victim"
# The agent is a child of the slurmstepd that runs rank 3 (node n2).
stepd=$(ps -o ppid= -p "$victim_pid" | tr -d ' ')
agent=$(ps -o pid=,comm= --ppid "$stepd" | awk '$2 == "dp-nodeagent" {print $1}')
[[ -n $agent ]] || fail "no dp-nodeagent under slurmstepd $stepd"
killed_at=$(date +%s%3N)
kill -9 "$agent"
rc=0
wait "$srun_pid" || rc=$?
cat "$WORK"/task.*.out
((rc != 0)) || fail "srun exited 0 after n2's agent was killed"
worst=0
for t in 0 1 2 3; do
  line=$(grep "aborted at\|failed at" "$WORK/task.$t.out") || fail "rank $t did not fail"
  grep -q "n2\|node agent" <<<"$line" || fail "rank $t's error does not name n2: $line"
  at=$(sed -n 's/.* at \([0-9]*\):.*/\1/p' <<<"$line")
  ((at - killed_at < 5000)) || fail "rank $t failed $((at - killed_at)) ms after the kill (limit 5000)"
  ((at - killed_at > worst)) && worst=$((at - killed_at))
done
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
pass "every rank failed naming n2 within ${worst} ms of kill -9 of its agent"
