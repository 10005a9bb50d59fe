#!/usr/bin/env bash
# A lost node, from the loss to the first step after the restart, on a
# cluster of 2 + 1 nodes (network namespaces; a lost node's every process,
# slurmd included, killed at once), the same unmodified DDP program
# (tests/e2e/pytorch/resume.py: resumes from its checkpoint) both ways, in
# the same run, alternating:
#   slurm-dp: srun -N3 --ntasks-per-node=2 --no-kill --dp-spares=1, per task;
#     the node of ranks 2-3 lost; its phases from srun's restart line
#   torchrun's own elastic restart, without slurm-dp: one torchrun per node,
#     c10d rendezvous hosted by n1's launcher (--rdzv-endpoint n1), 2:2 nodes
#     and a third launcher waiting; a node that is not n1 lost
# Figures: medians of the runs (checkpoint load excluded), and their ratio.
# The daemon's part at 64 + 2 nodes: dp-restart-bench (same folder).
#   bench/restart/run.sh [--runs N] [--smoke] BUILD_DIR
#     --smoke: one run of slurm-dp's alone (ctest e2e.own.bench.restart)
# PyTorch from Debian (python3-torch); a cluster of its own (bench/cluster.sh).
set -euo pipefail
runs=3 smoke=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --runs) runs=${2:?}; shift 2 ;;
    --smoke) smoke=1 runs=1; shift ;;
    *) echo "usage: bench/restart/run.sh [--runs N] [--smoke] BUILD_DIR" >&2; exit 2 ;;
  esac
done
build=$(cd "${1:?usage: bench/restart/run.sh [--runs N] [--smoke] BUILD_DIR}" && pwd)
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "bench/restart: no PyTorch (apt-get install python3-torch)"; exit 77; }
. "$(dirname "$0")/../cluster.sh"
unset DP_CLUSTER_DIR  # a cluster of its own: a node of it is killed
bench_cluster "$build/spank/spank_dp.so" "$build/daemon/dp-rendezvousd" ns 3
trap bench_cluster_down EXIT
"$cluster" plugstack "daemon=$build/daemon/dp-rendezvousd" heartbeat_timeout=10 kill_grace=2
export DP_DAEMON=$build/daemon/dp-rendezvousd
. "$bench_src/tests/e2e/lib.sh"
. "$bench_src/tests/e2e/agent/node_loss.sh"
trap 'thaw_all; bench_cluster_down; cleanup_work' EXIT
pytorch_launcher_env
cp "$bench_src/tests/e2e/pytorch/resume.py" "$WORK/"
args=(--steps 200 --step-ms 150 --save-every 5 --ckpt "$WORK/ckpt.pt" --ready-file "$WORK/ready")

ready() { [[ -f $WORK/ready.0 && -f $WORK/ready.3 && -f $WORK/ckpt.pt ]]; }
start() {  # start NAME SRUN-ARGS...: srun in the background; job, srun_pid
  local name=$1-$$
  shift
  rm -f "$WORK"/ready.* "$WORK"/task*.log "$WORK/ckpt.pt"
  as_user env "${pet[@]}" srun -J "$name" -o "$WORK/task%t.log" --export=ALL,USE_LIBUV=0 "$@" \
    >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  wait_until 30 "job $name in the queue" sh -c "squeue -h -n $name -o %i | grep -q ."
  job=$(squeue -h -n "$name" -o %i | head -n1)
}
# The restarted ranks' first step after the loss (t0), minus the longest
# checkpoint load, in ms: the latest rank's (every rank takes the step together).
first_step_ms() {
  local worst=-1 load=0 line at l
  while read -r line; do
    at=$(sed -n 's/.* at=\([0-9]*\).*/\1/p' <<<"$line")
    ((at > t0)) && (((at - t0) / 1000000 > worst)) && worst=$(((at - t0) / 1000000))
  done < <(grep -h '^first rank=.* restart=[1-9]' "$WORK"/task*.log)
  for l in $(grep -h '^resume rank=.* restart=[1-9]' "$WORK"/task*.log | sed -n 's/.*load_ms=\([0-9]*\).*/\1/p'); do
    ((l > load)) && load=$l
  done
  echo $((worst - load))
}
# The run measured, its job ends: cancelled (srun_pid is as_user's subshell,
# not srun), the lost node's slurmd started again first (its part of the job
# stays COMPLETING until its slurmd answers or SlurmdTimeout declares it down).
end_run() {
  scancel "$job"
  "$cluster" revive >/dev/null 2>&1
  wait "$srun_pid" 2>/dev/null || true
  wait_until 120 "job $job to leave the queue" job_done "$job"
}

dp_ms=() tr_ms=() phases=()
for ((i = 1; i <= runs; i++)); do
  start dp -N3 --ntasks-per-node=2 --no-kill --dp-world=auto --dp-spares=1 /usr/bin/python3 \
    "$WORK/resume.py" "${args[@]}"
  wait_until 180 "slurm-dp run $i: every rank's first step and a checkpoint" ready
  lose_node n2 >/dev/null
  wait_until 120 "slurm-dp run $i: the first step after the restart" \
    sh -c "grep -qh '^first rank=.* restart=1' '$WORK'/task*.log"
  dp_ms+=("$(first_step_ms)")
  # srun prints the restart's line once its rendezvous is timed: maybe after a rank's first step.
  wait_until 30 "slurm-dp run $i: srun's restart line" grep -q 'restart 1 of .*detect ' "$WORK/srun.log"
  phases+=("$(grep -m1 -o 'detect .*' "$WORK/srun.log")")
  end_run
  echo "run $i: slurm-dp ${dp_ms[-1]} ms (${phases[-1]})"
  ((smoke)) && continue
  n1=$(node_addr n1)
  start tr -N3 --ntasks-per-node=1 --no-kill torchrun --nnodes=2:2 --nproc_per_node=2 \
    --rdzv_backend=c10d --rdzv_endpoint="$n1:$((29400 + i))" --rdzv_id="b$i" --max_restarts=3 \
    "$WORK/resume.py" "${args[@]}"
  wait_until 180 "torchrun run $i: every rank's first step and a checkpoint" ready
  victim=""
  for p in $(job_pids "$job" 'python3(\.[0-9]+)?'); do
    n=$(tr '\0' '\n' <"/proc/$p/environ" | sed -n 's/^SLURMD_NODENAME=//p')
    [[ $n != n1 ]] && grep -qz '^GROUP_RANK=' "/proc/$p/environ" && victim=$n
  done
  lose_node "${victim:?no worker off n1}" >/dev/null
  wait_until 180 "torchrun run $i: the first step after its restart" \
    sh -c "grep -qh '^first rank=.* restart=[1-9]' '$WORK'/task*.log"
  sleep 2  # the other ranks' lines of the same step
  tr_ms+=("$(first_step_ms)")
  end_run
  echo "run $i: torchrun's own ${tr_ms[-1]} ms (lost $victim)"
done
dp=$(printf '%s\n' "${dp_ms[@]}" | median)
echo "loss -> first step after the restart, 2 + 1 nodes x 2 ranks, median of $runs (checkpoint load excluded):"
echo "  slurm-dp --dp-spares=1 (per task): $dp ms; phases of the last: ${phases[-1]}"
if ((!smoke)); then
  tr=$(printf '%s\n' "${tr_ms[@]}" | median)
  echo "  torchrun's own elastic restart (c10d on n1, a non-host node lost): $tr ms"
  awk -v a="$tr" -v b="$dp" 'BEGIN { printf "  ratio torchrun / slurm-dp: %.2f\n", a / b }'
fi
