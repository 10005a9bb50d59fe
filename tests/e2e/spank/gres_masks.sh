#!/usr/bin/env bash
# Fake gres GPUs: --gpus-per-task=1 and --gpus=4 give each task its own
# devices, taken from the list Slurm gave the step; no device is shared.
. "$(dirname "$0")/../lib.sh"
site

check_distinct() {  # $1: task lines; every (node, device) used once
  local pairs
  pairs=$(while read -r line; do
    node=$(cut -d' ' -f3 <<<"$line")
    for d in $(field "$line" CUDA_VISIBLE_DEVICES | tr ',' ' '); do echo "$node:$d"; done
  done <<<"$1")
  [[ -z $(sort <<<"$pairs" | uniq -d) ]] || fail "$2: a device is shared: $(sort <<<"$pairs" | uniq -d | tr '\n' ' ')"
  grep -q 'CUDA_VISIBLE_DEVICES=unset' <<<"$1" && fail "$2: a task got no mask"
  return 0
}

out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N2 --ntasks-per-node=2 --gpus-per-task=1 bash -c "$print_task")
echo "$out"
[[ $(wc -l <<<"$out") -eq 4 ]] || fail "--gpus-per-task=1: 4 tasks expected"
check_distinct "$out" "--gpus-per-task=1"

out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N1 -n4 --gpus=4 bash -c "$print_task")
echo "$out"
check_distinct "$out" "--gpus=4"
[[ $(grep -o 'CUDA_VISIBLE_DEVICES=[^ ]*' <<<"$out" | sort | tr '\n' ' ') == "CUDA_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=1 CUDA_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=3 " ]] \
  || fail "--gpus=4 on one node: devices 0..3 expected"

# Slurm narrowed the step to 2 GPUs: masks are entries of Slurm's list.
out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N1 -n2 --gres=gpu:2 bash -c 'echo "STEP=$SLURM_STEP_GPUS"; '"$print_task")
echo "$out"
check_distinct "$(grep -v '^STEP=' <<<"$out")" "--gres=gpu:2"

# Without --dp-tiles, Slurm's own mask is left alone.
out=$(as_user timeout 60 srun --dp-world=auto -N1 -n2 --gres=gpu:2 bash -c "$print_task")
[[ $(grep -c 'CUDA_VISIBLE_DEVICES=0,1' <<<"$out") -eq 2 ]] || fail "no --dp-tiles: Slurm's CUDA_VISIBLE_DEVICES must stay: $out"
pass "gres masks"
