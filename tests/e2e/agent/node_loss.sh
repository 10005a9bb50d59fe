# shellcheck shell=bash
# A whole node of a dp-cluster lost or frozen, its processes picked by the job
# (never by name alone: other clusters run the same programs). Sourced by the
# restart tests (spares_common.sh), ddp_freeze_node.sh and bench/restart/run.sh;
# needs $job and DP_CLUSTER_DIR (the cluster's pid files).
#   node_pids NODE     its slurmd, the job's slurmstepd there and below
#   lose_node NODE     SIGKILL to all of them at once; t0: the loss (ns since the epoch)
#   freeze_node NODE   SIGSTOP to all of them; their pids in stopped[] (thaw_all)
descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}
# NODE's slurmd (the cluster's pid file) and the job's slurmstepd there (the
# parent of its tasks), with everything below it.
node_pids() {
  local slurmd p task="" stepd
  slurmd=$(tr -dc 0-9 <"$DP_CLUSTER_DIR/run/slurmd-$1.pid")
  [[ -n $slurmd ]] || node_loss_fail "no pid file of $1's slurmd"
  # A task's program, or one of torchrun's workers (python3.N).
  for p in $(job_pids "$job" 'python3(\.[0-9]+)?'); do
    grep -qzxF "SLURMD_NODENAME=$1" "/proc/$p/environ" 2>/dev/null && task=$p
  done
  [[ -n $task ]] || node_loss_fail "no task of job $job on $1"
  stepd=$task
  while [[ $(cat "/proc/$stepd/comm" 2>/dev/null) != slurmstepd ]]; do
    stepd=$(awk '/^PPid:/ {print $2}' "/proc/$stepd/status")
    ((stepd > 1)) || node_loss_fail "no slurmstepd above $1's task $task"
  done
  echo "$slurmd" "$stepd" $(descendants "$stepd")
}
lose_node() {
  local pids
  pids=$(node_pids "$1")
  t0=$(date +%s%N)
  # shellcheck disable=SC2086 # one word per pid
  kill -KILL $pids
  echo "lost $1: killed $(wc -w <<<"$pids") processes (slurmd, slurmstepd and below)"
}
freeze_node() {
  local pids
  pids=$(node_pids "$1")
  # shellcheck disable=SC2206 # one word per pid
  stopped+=($pids)
  t0=$(date +%s%N)
  # shellcheck disable=SC2086
  kill -STOP $pids
  echo "froze $1: stopped $(wc -w <<<"$pids") processes"
}
stopped=()
thaw_all() { ((${#stopped[@]} == 0)) || kill -CONT "${stopped[@]}" 2>/dev/null || true; stopped=(); }
# The test's fail when sourced by one, else an error that ends the script.
node_loss_fail() {
  if declare -F fail >/dev/null; then fail "$@"; fi
  echo "node_loss: $*" >&2
  exit 1
}
