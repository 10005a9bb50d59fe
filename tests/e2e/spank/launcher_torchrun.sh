#!/usr/bin/env bash
# Per-node launchers need no flags: one task per node running torchrun,
# `python -m torch.distributed.run` or the Megatron course's
# `python -m torch.distributed.launch --use_env` (torch 1.13's spelling) trains the unmodified DDP
# script as one world of nodes x workers, node ranks in Slurm's node order
# (each node's hostname is its Slurm name), identical parameters after 20
# steps. Workers
# per node come from the launcher's flag, or from the devices Slurm gave
# the step (--gres=gpu:2, --gpus-per-node=2).
. "$(dirname "$0")/../lib.sh"
site
cp "$DP_SOURCE_DIR/tests/e2e/pytorch/ddp.py" "$WORK/"
pytorch_launcher_env  # sets pet: what torchrun needs on this machine

# $1: srun's output; $2: what ran. One world of 4: ranks 0..3 once each,
# ranks 0,1 on node rank 0 (n1, Slurm's first node) and 2,3 on n2. Two
# workers of one launcher share its stdout, so their lines may run together.
check_world() {
  local lines ranks
  lines=$(grep -oE 'ddp rank=[0-9]+ world=[0-9]+ local_rank=[0-9]+ host=[^ ]+ params=[0-9a-f]{16}' <<<"$1") \
    || fail "$2: no rank finished: $1"
  [[ $(wc -l <<<"$lines") -eq 4 ]] || fail "$2: 4 ranks expected: $lines"
  ranks=$(sed 's/.*ddp rank=\([0-9]*\) .*/\1/' <<<"$lines" | sort -n | tr '\n' ' ')
  expect_eq "$ranks" "0 1 2 3 " "$2: ranks"
  [[ $(grep -c ' world=4 ' <<<"$lines") -eq 4 ]] || fail "$2: every rank must see world 4: $lines"
  [[ $(grep -cE '^ddp rank=[01] .*host=n1 ' <<<"$lines") -eq 2 ]] \
    || fail "$2: node rank 0 (ranks 0,1) must be n1, Slurm's first node: $lines"
  [[ $(grep -cE '^ddp rank=[23] .*host=n2 ' <<<"$lines") -eq 2 ]] \
    || fail "$2: node rank 1 (ranks 2,3) must be n2: $lines"
  [[ $(grep -o 'params=[0-9a-f]*' <<<"$lines" | sort -u | wc -l) -eq 1 ]] \
    || fail "$2: parameters differ between ranks: $lines"
}

run() {  # srun options and command after `srun --dp-world=auto -N2 --ntasks-per-node=1`
  as_user "${pet[@]}" timeout 240 srun --dp-world=auto -N2 --ntasks-per-node=1 "$@" 2>&1
}

out=$(run torchrun --nproc_per_node=2 ddp.py) || fail "torchrun --nproc_per_node=2 failed: $out"
check_world "$out" "torchrun --nproc_per_node=2"

if in_lane; then
  lane_skips "an exported TORCHELASTIC_RESTART_COUNT; --dp-explain of --dp-store=step under torchrun"
else
  # TORCHELASTIC_RESTART_COUNT exported before srun (issue 31, item 7): the
  # script's failing command before torchrun inherited it, so it is no failed
  # worker; torchrun's workers, whose values torchrun sets, still are watched.
  out=$(as_user TORCHELASTIC_RESTART_COUNT=0 "${pet[@]}" timeout 240 srun --dp-world=auto -N2 \
    --ntasks-per-node=1 --dp-launcher=torchrun bash -c \
    'sh -c "sleep 2; exit 3"; exec torchrun --nproc_per_node=2 ddp.py' 2>&1) \
    || fail "an exported TORCHELASTIC_RESTART_COUNT and a failing command before torchrun: $out"
  check_world "$out" "torchrun after a failing command, TORCHELASTIC_RESTART_COUNT exported"

  # --dp-store=step in a launcher step: torchrun hosts its own store for its
  # rendezvous and workers, so the step keeps it and --dp-explain says so.
  out=$(run --dp-store=step --dp-explain torchrun --nproc_per_node=2 ddp.py) \
    || fail "--dp-explain of torchrun with --dp-store=step failed: $out"
  expect_contains "$out" "store: torchrun's own" "--dp-explain of torchrun with --dp-store=step"
fi

out=$(run --gres=gpu:2 torchrun ddp.py) || fail "torchrun (devices decide) failed: $out"
check_world "$out" "torchrun with 2 GPUs per node"

out=$(run --gpus-per-node=2 /usr/bin/python3 -m torch.distributed.launch --use_env ddp.py) \
  || fail "python -m torch.distributed.launch --use_env failed: $out"
check_world "$out" "torch.distributed.launch --use_env"
# --dp-tiles=2 in this form: 2 tiles per worker, 2 workers on a node of 4
# GPUs, each worker's own first tile at cuda:LOCAL_RANK (mask 0,2,1,3).
out=$(run --gres=gpu:4 --dp-tiles=2 torchrun --no_python \
  bash -c 'echo "worker $SLURMD_NODENAME $LOCAL_RANK $WORLD_SIZE $CUDA_VISIBLE_DEVICES"') \
  || fail "torchrun with --dp-tiles=2 failed: $out"
workers=$(grep -oE 'worker n[12] [01] 4 [0-9,]+' <<<"$out" | sort | tr '\n' ';')
expect_eq "$workers" "worker n1 0 4 0,2,1,3;worker n1 1 4 0,2,1,3;worker n2 0 4 0,2,1,3;worker n2 1 4 0,2,1,3;" \
  "workers and masks with --dp-tiles=2"
pass "per-node launchers: one world of 4 with no launcher flag; an inherited TORCHELASTIC_RESTART_COUNT makes no worker"
