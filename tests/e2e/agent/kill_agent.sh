#!/usr/bin/env bash
# kill -9 of node n2's agent: the daemon loses the node, srun names n2's agent
# and every rank fails naming n2 within 5 s; the ranks on n2 lose their agent
# (or are ended by the step's end first, on a busy node).
. "$(dirname "$0")/../lib.sh"
site

victim=3
. "$(dirname "$0")/../daemon/hold_ranks.sh"
# The agent is a child of the slurmstepd that runs rank 3 (node n2).
stepd=$(ps -o ppid= -p "$victim_pid" | tr -d ' ')
agent=$(ps -o pid=,comm= --ppid "$stepd" | awk '$2 == "dp-nodeagent" {print $1}')
[[ -n $agent ]] || fail "no dp-nodeagent under slurmstepd $stepd"
kill_and_expect_failures "n2's agent" "$agent" 5000 "aborted at\|failed at" "n2\|node agent" 0 1 2~ 3~
grep -q "slurm-dp: step .* failed: first failure: the node agent on host n2 " "$WORK/srun.err" ||
  fail "srun's stderr does not name n2's agent: $(cat "$WORK/srun.err")"
[[ -z $job ]] || wait_until 30 "job $job to end" job_done "$job"
pass "srun named n2's agent; every rank failed naming it within ${worst} ms of kill -9 of the agent, or was ended by the step's end first"
