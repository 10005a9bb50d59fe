#!/usr/bin/env bash
# What srun decides about per-node launchers before any task starts: a
# launcher with two tasks per node is refused with one slurm-dp line giving
# the fix (--ntasks-per-node=1), whether srun runs it or a shell does; and
# --dp-explain shows the launcher shape (node ranks, workers per node, each
# worker's devices). No PyTorch is needed: nothing is launched.
. "$(dirname "$0")/../lib.sh"
site

marker="$WORK/task-ran"
expect_refused() {  # command after srun
  local err rc=0 line
  rm -f "$marker"
  err=$(as_user timeout 60 srun "$@" 2>&1 >/dev/null) || rc=$?
  ((rc != 0)) || fail "accepted: srun $*"
  [[ ! -e $marker ]] || fail "a task started for: srun $*"
  [[ $(grep -c '^slurm-dp: ' <<<"$err") -eq 1 ]] || fail "one slurm-dp line expected for srun $*: $err"
  line=$(grep '^slurm-dp: ' <<<"$err")
  expect_contains "$line" "--ntasks-per-node=1" "the refusal of srun $*"
  echo "refused ($rc): srun $*"
  printf '%s\n' "$line"  # on its own: the suite records the line (docs/messages.md)
}
expect_refused --dp-world=auto -N2 --ntasks-per-node=2 torchrun --no_python touch "$marker"
expect_refused --dp-world=auto -N2 --ntasks-per-node=2 \
  bash -c "cd $WORK && python3 -m torch.distributed.launch --use_env --no_python touch $marker"
expect_refused --dp-world=auto --dp-launcher=torchrun -N1 -n2 touch "$marker"
# --standalone would make each node a world of its own: refused, naming the flag.
err=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=1 torchrun --standalone \
  --no_python touch "$marker" 2>&1) && fail "torchrun --standalone on 2 nodes was accepted"
[[ ! -e $marker ]] || fail "a task started for torchrun --standalone on 2 nodes"
expect_contains "$err" "drop --standalone" "the refusal of torchrun --standalone on 2 nodes"
grep '^slurm-dp: ' <<<"$err" || fail "no slurm-dp line refused torchrun --standalone: $err"

# A plain program with two tasks per node is not a launcher: it runs.
as_user timeout 60 srun --dp-world=auto -N1 -n2 touch "$marker" || fail "a plain 2-task step failed"
[[ -e $marker ]] || fail "the plain step did not run"

out=$(as_user timeout 60 srun --dp-explain --dp-tiles=2 -N2 --ntasks-per-node=1 --gres=gpu:4 \
  torchrun train.py 2>&1) || fail "explain of a launcher step failed: $out"
echo "$out"
grep -q '^slurm-dp: per-node launcher torchrun: one per node, 2 nodes' <<<"$out" || fail "no launcher shape line"
for n in 1 2; do
  line=$(grep "^task $((n - 1)) on n$n: " <<<"$out") || fail "no task line for n$n"
  for v in PET_NNODES=2 PET_NODE_RANK=$((n - 1)) PET_NPROC_PER_NODE=2 PET_RDZV_BACKEND=static \
    CUDA_VISIBLE_DEVICES=0,2,1,3 PET_MASTER_ADDR="$(node_addr n1)"; do
    expect_contains "$line" " $v" "n$n's launcher"
  done
  grep -qx "launcher on n$n: node rank $((n - 1)) of 2 nodes, 2 worker(s); worker 0: 0,1; worker 1: 2,3" \
    <<<"$out" || fail "n$n's workers and their devices not shown"
done
# Without --dp-tiles, the GPUs the step asked for decide the workers (the nodes have 4).
out=$(as_user timeout 60 srun --dp-explain -N2 --ntasks-per-node=1 --gres=gpu:2 \
  python3 -m torch.distributed.run train.py 2>&1) || fail "explain of a 2-GPU launcher step failed: $out"
echo "$out"
grep -q '^task 1 on n2: .* PET_NPROC_PER_NODE=2 ' <<<"$out" || fail "2 workers per node expected"
grep -qx 'launcher on n2: node rank 1 of 2 nodes, 2 worker(s); worker 0: 0; worker 1: 1' <<<"$out" \
  || fail "n2's 2 workers, one GPU each, not shown"
pass "launcher refusals and explain"
