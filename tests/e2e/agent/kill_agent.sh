#!/usr/bin/env bash
# kill -9 of node n2's agent: the daemon loses the node, and every rank fails
# naming n2 within 5 s; the ranks on n2 lose their agent.
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/../daemon/hold_ranks.sh"
# The agent is a child of the slurmstepd that runs rank 3 (node n2).
stepd=$(ps -o ppid= -p "$victim_pid" | tr -d ' ')
agent=$(ps -o pid=,comm= --ppid "$stepd" | awk '$2 == "dp-nodeagent" {print $1}')
[[ -n $agent ]] || fail "no dp-nodeagent under slurmstepd $stepd"
kill_and_expect_failures "n2's agent" "$agent" 5000 "aborted at\|failed at" "n2\|node agent" 0 1 2 3
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
pass "every rank failed naming n2 within ${worst} ms of kill -9 of its agent"
