#!/usr/bin/env bash
# What the straggler watch costs (issue 55).
#  1. The node agent's CPU per second on a node of 8 ranks: a one-node step of
#     8 tasks of python3 (each a loop of 100 ms sleeps with a little work, as
#     a rank that waits on its GPU looks), --dp-straggler=name against =off;
#     the agent's utime + stime over DP_BENCH_SECONDS (30) from /proc, medians
#     of RUNS. The difference is the watch: 80 looks a second (two short /proc
#     reads each) on its own thread, and the counts in each heartbeat.
#  2. A/B throughput, as bench/hang_watch/run.sh does it: pairs in turn
#     off-on and on-off, medians of RUNS, 3 epochs a run (DP_BENCH_EPOCHS):
#     unmodified PyTorch DDP (bench/trainer/ddp_mlp.py, gloo, env://) and
#     dp-trainer (libdp: its ranks are looked at too, and judged by their
#     counters), 2 nodes x 1 task (DP_BENCH_TASKS), --dp-straggler=name
#     against =off. Target: on/off >= 0.99.
#
#   bench/straggler/run.sh [--smoke|--agent] BUILD_DIR [RUNS=5] [MODE=lo]
#
# --agent: part 1 alone. The cluster as bench/cluster.sh brings it
# (DP_CLUSTER_DIR: a running one). --smoke: 1 run each, 5 s, 4 096 samples,
# figures meaningless (ctest e2e.lo.bench.straggler). Nothing is installed:
# python3-torch and Fashion-MNIST must be there (bench/trainer/run.sh
# installs them).
set -euo pipefail
. "$(dirname "$0")/../cluster.sh"
bench_args --agent 5 1 "$@"
agent_only=$option secs=${DP_BENCH_SECONDS:-30} trainer=$build/trainer/dp-trainer
((smoke)) && secs=5
bench_prepare straggler "$plugin" "$daemon" "$trainer"
calc() { awk "BEGIN { print $1 }"; }  # no bc in the testing lane's root
bench_cluster "$plugin" "$daemon" "$mode"

# 1. The agent of 8 ranks.
cat >"$work/rank.py" <<'PY'
import os, sys, time
open(os.path.join(sys.argv[1], "up." + os.environ["SLURM_PROCID"]), "w").close()
while True:
    sum(i * i for i in range(2000))
    time.sleep(0.1)
PY
agent_ms() {  # agent_ms WATCH: the node agent's CPU ms per second over $secs
  local ticks0 ticks1 pid="" hz
  rm -f "$work"/up.*
  srun -Q -O -N1 -n8 --dp-world=auto --dp-straggler="$1" -J "straggler-agent-$$" \
    /usr/bin/python3 "$work/rank.py" "$work" >"$work/srun.log" 2>&1 &
  srun_pid=$!
  for _ in $(seq 600); do
    job=$(squeue -h -n "straggler-agent-$$" -o %i | head -1)
    [[ -n $job ]] && (($(find "$work" -name 'up.*' | wc -l) == 8)) && break
    sleep 0.1
  done
  for p in $(pgrep -x dp-nodeagent); do
    grep -qzxF "SLURM_JOB_ID=$job" "/proc/$p/environ" 2>/dev/null && pid=$p
  done
  [[ -n $pid ]] || { echo "run.sh: no node agent of job $job: $(cat "$work/srun.log")" >&2; exit 1; }
  sleep 2  # the agent's start and the daemon's ask
  hz=$(getconf CLK_TCK)
  ticks0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  sleep "$secs"
  ticks1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  scancel "$job"
  wait "$srun_pid" 2>/dev/null || true
  srun_pid="" job=""
  calc "($ticks1 - $ticks0) * 1000 / $hz / $secs"
}
bench_pairs "$runs" agent_ms off name
printf 'node agent of 8 ranks, %d s, median of %d: --dp-straggler=off %.2f ms of CPU per second, =name %.2f ms (%.3f %% of a CPU; the watch %.2f ms, %.3f %%)\n' \
  "$secs" "$runs" "$mo" "$mn" "$(calc "$mn / 10")" "$(calc "$mn - $mo")" "$(calc "($mn - $mo) / 10")"
echo "  off: ${off[*]}"
echo "  on:  ${on[*]}"
((agent_only)) && exit 0

# 2. A/B on the cluster.
bench_ab "$trainer" "$work" "$smoke" "$runs" --dp-straggler off name
