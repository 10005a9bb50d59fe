# shellcheck shell=bash
# Shared by the restart tests (--dp-spares, --dp-max-restarts; issue 54): a
# cluster of their own, 3 nodes in network namespaces (a lost node's slurmd is
# killed with it, and started again after), 75 ports after the shared lo
# cluster's base; an unmodified PyTorch DDP program that resumes from its
# checkpoint (pytorch/resume.py). Sourced first (it sources lib.sh).
#   start_resume NAME NODES [srun flags...] -- [resume.py args...]
#                         srun --dp-world=auto -N NODES --ntasks-per-node=2 in the background
#                         (the task's command: program[@], resume.py by default):
#                         srun_pid, job; each task's output in $WORK/task<T>.log (Slurm's
#                         task id: a spare's tasks are 4 and 5), srun's in $WORK/srun.log
#   run_control ARGS...   the same program on 2 nodes, never stopped: its parameters in
#                         $control (the one digest a restarted run must end with)
#   wait_ready SECS       every rank completed a step; the checkpoint exists
#   node_pids NODE        every process of NODE: its slurmd, the step's slurmstepd and below
#   lose_node NODE        SIGKILL to all of them at once (t0: the loss, ns since the epoch)
#   freeze_node NODE      SIGSTOP to all of them (thawed by thaw_all, also on exit)
#   revive                the lost nodes' slurmd again, every node idle
#   expect_restart_line NODE RE
#                         after NODE's loss: srun ends within 240 s, its log printed; its
#                         first line matching RE in $line, which names NODE lost
#   done_params           the one parameter digest every rank ended with (fails if not one)
#   last_end_ns           when the last rank's program printed its done line
#   first_after NS        the earliest first-step time of a restarted start after NS, minus
#                         its checkpoint load: "<ms since NS> <load ms>"
#   begun_after NS        ms from NS to the latest begin of a restarted program after NS
#                         (the launcher or agent has started it; PyTorch's import follows)
#                         A restarted program is any begun after NS: torchrun restarts
#                         its workers as a membership change (TORCHELASTIC_RESTART_COUNT
#                         kept) when a waiting launcher joins before they fail.
#   spares_fail MSG       fail, after printing what a CI log needs to tell why: the
#                         daemon's log (srun runs with --dp-verbose), the tasks' last
#                         lines, Slurm's view and where every process of the job waits
set -euo pipefail
: "${DP_BUILD_DIR:?run through ctest}" "${DP_CLUSTER_PORT_BASE:?run through ctest}"
DP_CLUSTER=${DP_CLUSTER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../cluster" && pwd)/dp-cluster}
export DP_CLUSTER_DIR=$DP_BUILD_DIR/e2e-cluster-spares DP_CLUSTER_MODE=ns DP_CLUSTER_NODES=3 \
  DP_CLUSTER_PORT_BASE=$((DP_CLUSTER_PORT_BASE + 75)) DP_CLUSTER
"$DP_CLUSTER" up >"$DP_BUILD_DIR/e2e-cluster-spares.up.log" 2>&1 ||
  { cat "$DP_BUILD_DIR/e2e-cluster-spares.up.log" >&2; echo "FAIL: dp-cluster up (spares) failed" >&2; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/node_loss.sh"
PYTHON=/usr/bin/python3
cp "$(dirname "${BASH_SOURCE[0]}")/../pytorch/resume.py" "$WORK/"
program=("$PYTHON" "$WORK/resume.py")
spares_cleanup() {
  thaw_all
  [[ -z ${srun_pid:-} ]] || kill "$srun_pid" 2>/dev/null || true
  cleanup_work
  "$DP_CLUSTER" down >/dev/null 2>&1 || true
}
trap spares_cleanup EXIT
pytorch_launcher_env

start_resume() {
  local name=$1-$$ nodes=$2
  shift 2
  local -a flags=()
  while (($#)) && [[ $1 != -- ]]; do flags+=("$1"); shift; done
  (($#)) && shift
  rm -f "$WORK"/ready.* "$WORK"/task*.log "$WORK/ckpt.pt"
  # USE_LIBUV=0: Debian 13's torch 2.6 has no libuv TCPStore but asks for it.
  as_user env "${pet[@]}" srun --dp-world=auto --dp-verbose "${flags[@]}" -N "$nodes" --ntasks-per-node=2 \
    -J "$name" -o "$WORK/task%t.log" --export=ALL,USE_LIBUV=0 \
    "${program[@]}" --ckpt "$WORK/ckpt.pt" --ready-file "$WORK/ready" "$@" \
    >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
}

run_control() {
  t0=$(date +%s%N)
  start_resume control 2 --dp-store=step -- "$@"
  wait_srun 240
  ((ms >= 0 && rc == 0)) || fail "the control ended rc=$rc after $ms ms: $(tail -5 "$WORK/srun.log")"
  control=$(done_params)
  echo "control: parameters $control"
}

ranks_ready() { [[ -f $WORK/ready.0 && -f $WORK/ready.1 && -f $WORK/ready.2 && -f $WORK/ready.3 && -f $WORK/ckpt.pt ]]; }
wait_ready() {
  wait_until "$1" "every rank's first step and a checkpoint ($(tail -3 "$WORK/srun.log" "$WORK"/task*.log 2>/dev/null))" ranks_ready
}

revive() { "$DP_CLUSTER" revive >/dev/null 2>&1 || fail "the lost node's slurmd did not come back"; }

expect_restart_line() {
  wait_srun 240
  cat "$WORK/srun.log"
  ((ms >= 0)) || spares_fail "srun still ran 240 s after $1 was lost"
  line=$(grep -m1 "$2" "$WORK/srun.log") || fail "srun's stderr has no restart line"
  expect_contains "$line" "node $1 lost" "the restart line"
}

done_params() {
  local params
  params=$(sed -n 's/^done .*params=\([0-9a-f]*\).*/\1/p' "$WORK"/task*.log | sort -u)
  [[ $(wc -l <<<"$params") == 1 && -n $params ]] || fail "the ranks end with different or no parameters: $params"
  [[ $(grep -h '^done ' "$WORK"/task*.log | wc -l) == 4 ]] || fail "not 4 ranks ended: $(grep -h '^done ' "$WORK"/task*.log)"
  echo "$params"
}

# When each task's log was last written: the last rank's done line.
last_end_ns() {
  local f newest=0 t
  for f in "$WORK"/task*.log; do
    grep -q '^done ' "$f" || continue
    t=$(stat -c %.9Y "$f" | tr -d .)
    ((t > newest)) && newest=$t
  done
  echo "$newest"
}

# The restarted programs' latest begin, in ms since NS (-1: none).
begun_after() {
  local worst=-1 at
  for at in $(sed -n 's/^begin rank=.* at=\([0-9]*\)$/\1/p' "$WORK"/task*.log); do
    if ((at > $1 && (at - $1) / 1000000 > worst)); then worst=$(((at - $1) / 1000000)); fi
  done
  echo "$worst"
}

# The restarted programs' first completed step: the latest rank's, in ms
# since NS, and the longest checkpoint load before it: "<ms> <load ms>".
first_after() {
  local worst=-1 load=0 line at r l
  while read -r line; do
    at=$(sed -n 's/.* at=\([0-9]*\).*/\1/p' <<<"$line")
    r=$(sed -n 's/^first rank=\([0-9]*\) .*/\1/p' <<<"$line")
    ((at > $1)) || continue
    (((at - $1) / 1000000 > worst)) && worst=$(((at - $1) / 1000000))
    l=$(grep -h "^resume rank=$r " "$WORK"/task*.log | tail -n1 |
      sed -n 's/.*load_ms=\([0-9]*\).*/\1/p')
    ((${l:-0} > load)) && load=${l:-0}
  done < <(grep -h '^first rank=' "$WORK"/task*.log)
  echo "$worst $load"
}

# A restart that stalls is rare and seen only on a loaded CI machine, where the
# test's output is all there is: say everything before failing.
spares_fail() {
  local p
  {
    echo "--- srun's stderr (the daemon's log):"; cat "$WORK/srun.log"
    for p in "$WORK"/task*.log; do echo "--- the last lines of $p:"; tail -n 15 "$p"; done
    echo "--- Slurm:"; squeue; scontrol show step "$job" 2>&1 | head -n 20
    for p in $(job_pids "$job" 'dp-nodeagent|torchrun|pt_elastic|python3(\.[0-9]+)?'); do
      echo "--- pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-120)):"
      "$DP_BUILD_DIR/tools/dp-stacks" "$p" 2>&1 | head -n 30
    done
  } >&2
  fail "$@"
}
