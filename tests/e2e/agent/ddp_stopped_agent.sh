#!/usr/bin/env bash
# A node agent stopped (the user's kill -STOP, a debugger) while an
# unmodified PyTorch DDP step (2 nodes x 2 tasks) runs on, its tasks
# untouched, and the step ends well within the silence bound: srun exits 0
# and slurm-dp says nothing. slurmstepd continues its agent at the node's
# end, so the agent reads its tasks' exits and says the node's goodbye;
# killed while stopped, it was a lost node to the daemon (a node_lost line
# after a step that succeeded).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
site heartbeat_timeout=60
agent=""
trap '[[ -z $agent ]] || kill -CONT "$agent" 2>/dev/null; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

agent_stopped() { [[ $(awk '{print $3}' "/proc/$agent/stat" 2>/dev/null) == T ]]; }
agent_gone() { ! kill -0 "$agent" 2>/dev/null; }

start_ddp ddpstopagent --steps 100000 --step-ms 100 --until-file "$WORK/stop"
wait_ranks_ready 120
# n2's agent: the child of the slurmstepd that runs rank 2.
stepd=$(ps -o ppid= -p "$(rank_pid 2)" | tr -d ' ')
agent=$(ps -o pid=,comm= --ppid "$stepd" | awk '$2 == "dp-nodeagent" {print $1}')
[[ -n $agent ]] || fail "no dp-nodeagent under slurmstepd $stepd"
kill -STOP "$agent"
wait_until 10 "n2's agent $agent stopped" agent_stopped
touch "$WORK/stop"
t0=$(date +%s%N)
expect_srun_ok 60 "its ranks were told to stop, n2's agent stopped"
same_params stopped_agent
[[ -z $(grep '^slurm-dp: ' "$WORK/srun.log") ]] || fail "slurm-dp spoke after a step that succeeded: $(grep '^slurm-dp: ' "$WORK/srun.log")"
wait_until 30 "n2's agent $agent to end with its step" agent_gone
agent=""
pass "a DDP step whose n2 agent was stopped finished rc 0 in $ms ms, no slurm-dp line, the agent gone with it"
