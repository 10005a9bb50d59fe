#!/usr/bin/env bash
# A lost node under one torchrun per node (issue 54): srun -N3
# --ntasks-per-node=1 --no-kill --dp-world=auto --dp-spares=1 torchrun
# --max-restarts=3 resume.py. Every launcher meets in torchrun's c10d
# rendezvous, served by the step's store (so it survives any node), and the
# third waits there as a spare. The node holding node rank 1, then the one
# holding node rank 0 (whose launcher also hosts the workers' store), is lost
# whole: torchrun's survivors restart their workers with the waiting
# launcher in the lost node's place, the workers resume from their
# checkpoint, and the final parameters equal the control's (the same
# program on 2 nodes, no spare). The daemon ages the lost launcher's
# heartbeat in the rendezvous at once (daemon/torchrun_launchers.hpp), so the
# others do not wait out its keep-alive (5 s x 3; 2.14's 1 s x 5): from the
# loss to the restarted workers' fork (torchrun's own restart: its monitor,
# PET_MONITOR_INTERVAL=0.1 for 1.13, and one rendezvous round) at most 5 s on
# every PyTorch, 1.7 to 2.2 s idle, 1.6 to 2.5 s in CI. Their first step,
# PyTorch's import included (up to 10.8 s in CI on the 2.x lanes), is printed
# and bounded as ddp_spares' (20 s).
# PyTorch before 2.3
# has no redundancy list: there a healthy step's waiting launcher ends with
# RendezvousClosedError (README.md says so); the loss is tested everywhere.
. "$(dirname "$0")/spares_common.sh"
site heartbeat_timeout=10 kill_grace=2
args=(--steps 80 --step-ms 150 --save-every 5)
begin_bound=5000 first_bound=20000

start_torchrun() {  # start_torchrun NAME NODES [srun flags...]
  local name=$1-$$ nodes=$2
  shift 2
  rm -f "$WORK"/ready.* "$WORK"/task*.log "$WORK/ckpt.pt"
  as_user env "${pet[@]}" srun --dp-world=auto --dp-verbose "$@" -N "$nodes" --ntasks-per-node=1 -J "$name" \
    -o "$WORK/task%t.log" torchrun --nproc_per_node=2 --max_restarts=3 "$WORK/resume.py" \
    --ckpt "$WORK/ckpt.pt" --ready-file "$WORK/ready" "${args[@]}" >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
}

# The control: torchrun's static rendezvous on 2 nodes.
t0=$(date +%s%N)
start_torchrun control 2
wait_srun 240
((ms >= 0 && rc == 0)) || fail "the control ended rc=$rc: $(tail -5 "$WORK/srun.log")"
control=$(done_params)

# A node lost: node rank 1's (not the workers' store host), then node rank 0's.
said=""
for group in 1 0; do
  start_torchrun "lose$group" 3 --no-kill --dp-spares=1
  wait_ready 180
  node=""
  for p in $(job_pids "$job" 'python3(\.[0-9]+)?'); do
    if grep -qzxF "GROUP_RANK=$group" "/proc/$p/environ" 2>/dev/null; then
      node=$(tr '\0' '\n' <"/proc/$p/environ" | sed -n 's/^SLURMD_NODENAME=//p')
    fi
  done
  [[ -n $node ]] || fail "no worker of node rank $group"
  lose_node "$node"  # sets t0
  expect_restart_line "$node" 'slurm-dp: step .*: restart 1 of 1: node '
  expect_contains "$line" "a launcher waiting in torchrun's rendezvous takes its place" "the restart line"
  grep -q "torchrun's rendezvous .*: the heartbeat of launcher .* on lost node $node aged" "$WORK/srun.log" ||
    spares_fail "the daemon did not age $node's launcher in torchrun's rendezvous"
  expect_eq "$(done_params)" "$control" "the parameters after $node (node rank $group) was lost"
  read -r first load <<<"$(first_after "$t0")"
  begun=$(begun_after "$t0")
  ((first >= 0 && begun >= 0)) || fail "no restarted worker began and stepped after the loss"
  ((begun <= begin_bound)) ||
    spares_fail "torchrun restarted its workers $begun ms after the loss (their fork); the bound is $begin_bound ms"
  ((first - load <= first_bound)) ||
    spares_fail "the restarted workers' first step came $((first - load)) ms after the loss (began at $begun ms); the bound is $first_bound ms"
  ((rc == 0)) || expect_contains "$(srun_last_line)" "completed after 1 restart" "srun's last line (rc $rc)"
  echo "ok: $node (node rank $group) lost: workers began $begun ms after the loss, first step" \
    "$((first - load)) ms after it (+ $load ms load); srun rc $rc"
  said+="node rank $group's $node: began $begun ms, first step $((first - load)) ms, rc $rc; "
  revive
done
pass "torchrun per node: a lost node (node rank 1's, then node rank 0's) replaced by the waiting launcher; equal parameters; after the loss: ${said%; }"
