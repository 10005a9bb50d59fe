#!/usr/bin/env bash
# Hugging Face accelerate from the archive, unmodified, under srun
# --dp-world=auto on 2 nodes: (1) `accelerate launch` per node, exactly as the
# users' tutorials write it (the DAWN recipe: every number from slurm-dp's
# PET_* and MASTER_* variables), 2 processes a node; (2) the same program per
# task, 2 tasks a node, building Accelerator() from the task's variables. Both
# form one world of 4 (ranks 0,1 on n1) with the same parameters on every
# rank, as one MULTI_CPU world.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
needs_modules accelerate
site
cp "$DP_SOURCE_DIR/tests/e2e/apps/accelerate_train.py" "$WORK/"
pytorch_launcher_env  # sets pet: what torch's launchers need on this machine

# (1) per node: one launcher task a node, its processes from the GPUs Slurm gave.
# shellcheck disable=SC2016 # expanded in the task
out=$(as_user "${pet[@]}" timeout 300 srun --dp-world=auto -N2 --ntasks-per-node=1 --gpus-per-node=2 \
  bash -c 'exec accelerate launch --multi_gpu --num_machines $PET_NNODES --machine_rank $PET_NODE_RANK \
    --num_processes $((PET_NNODES * PET_NPROC_PER_NODE)) \
    --main_process_ip $MASTER_ADDR --main_process_port $MASTER_PORT accelerate_train.py' 2>&1) ||
  fail "accelerate launch per node failed: $out"
check_world "$out" "accelerate launch per node" accel
launched=$(grep -o 'params=[0-9a-f]*' <<<"$out" | head -n 1)

# (2) per task: Accelerator() from RANK, WORLD_SIZE, MASTER_* alone.
out=$(as_user "${pet[@]}" timeout 300 srun --dp-world=auto -N2 --ntasks-per-node=2 \
  /usr/bin/python3 accelerate_train.py 2>&1) || fail "Accelerator() per task failed: $out"
check_world "$out" "Accelerator() per task" accel
expect_contains "$out" "type=MULTI_CPU" "Accelerator() per task: the distributed type"
expect_eq "$(grep -o 'params=[0-9a-f]*' <<<"$out" | head -n 1)" "$launched" \
  "the parameters per task against per node (the same world, the same shards)"
pass "accelerate: launched per node and built per task, one world of 4 with the same parameters"
