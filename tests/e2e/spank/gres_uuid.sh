#!/usr/bin/env bash
# Slurm 26.05's gres.conf Flags=env_uuid: Slurm puts GPU UUIDs, not indexes,
# in CUDA_VISIBLE_DEVICES. On a cluster of its own whose nodes' fake NVIDIA
# driver gives each GPU a UUID (dp-cluster DP_CLUSTER_GPU_IDS=uuid), every
# task's mask is the right UUIDs: --dp-tiles=2 splits each node's four GPUs
# in Slurm's order, --gpus-per-task=1 keeps Slurm's own per-task UUID, no
# --dp-tiles leaves Slurm's list alone, and --dp-explain shows the UUIDs.
# Skips (77) on a Slurm before 26.05, which has no env_uuid.
set -euo pipefail
: "${DP_BUILD_DIR:?run through ctest}" "${DP_CLUSTER_PORT_BASE:?run through ctest}"
version=$(slurmd -V | awk '{ print $2 }')
if ! printf '26.05\n%s\n' "$version" | sort -V -C; then
  echo "SKIP [gres_uuid]: Slurm $version has no gres.conf Flags=env_uuid (26.05 added it)"
  exit 77
fi
. "$(dirname "$0")/own_cluster.sh"
own_cluster uuid 75 DP_CLUSTER_GPU_IDS=uuid
. "$(dirname "$0")/../lib.sh"
trap 'cleanup_work; own_cluster_down' EXIT
site

# dp-cluster's fake UUID of node N's GPU G (gpu_uuid there).
uuid() { printf 'GPU-d9000000-0000-4000-8000-%06d%06d' "$1" "$2"; }
masks() { grep -oE '^[0-9]+ [0-9]+ n[12] .*CUDA_VISIBLE_DEVICES=[^ ]*' <<<"$1" |
  sed -E 's/^([0-9]+) ([0-9]+) (n[12]) .*CUDA_VISIBLE_DEVICES=/\1 \3 /' | sort -n | tr '\n' ';'; }

# Slurm itself sets UUIDs (the cluster works as 26.05 documents env_uuid).
out=$(as_user timeout 60 srun -N1 -n1 --gres=gpu:4 printenv CUDA_VISIBLE_DEVICES 2>&1) || fail "plain srun: $out"
expect_eq "$out" "$(uuid 1 0),$(uuid 1 1),$(uuid 1 2),$(uuid 1 3)" "Slurm's own CUDA_VISIBLE_DEVICES with env_uuid"

out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=2 -N2 --ntasks-per-node=2 --gres=gpu:4 \
  bash -c "$print_task" 2>&1) || fail "--dp-tiles=2: $out"
# Every task of a node sees its node's four UUIDs, each task's first tile at
# its LOCAL_RANK (Slurm's 0,1 | 2,3 shares ordered 0,2,1,3).
n1="$(uuid 1 0),$(uuid 1 2),$(uuid 1 1),$(uuid 1 3)" n2="$(uuid 2 0),$(uuid 2 2),$(uuid 2 1),$(uuid 2 3)"
expect_eq "$(masks "$out")" "0 n1 $n1;1 n1 $n1;2 n2 $n2;3 n2 $n2;" \
  "--dp-tiles=2: the node's UUIDs, cuda:LOCAL_RANK each task's first tile"
expect_eq "$(grep -oE '^[0-9]+ .*DP_TILES=[0-9,]+' <<<"$out" | sed -E 's/^([0-9]+) .*DP_TILES=/\1:/' | sort -n | tr '\n' ' ')" \
  "0:0,2 1:1,3 2:0,2 3:1,3 " "--dp-tiles=2: each task's DP_TILES (its tiles' CUDA ordinals)"

# srun counts each node's devices from 0 before launch; the nodes, which
# see Slurm's UUIDs, print each task's real mask.
out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=2 -N2 --ntasks-per-node=2 --gres=gpu:4 --dp-explain true 2>&1) ||
  fail "--dp-explain: $out"
launched=$(grep -oE '^slurm-dp: task [0-3] on n[12], as launched: CUDA_VISIBLE_DEVICES=[^ ]+ DP_TILES=[0-9,]+' <<<"$out" |
  sed -E 's/^slurm-dp: task ([0-3]) on (n[12]), as launched: CUDA_VISIBLE_DEVICES=([^ ]+) DP_TILES=.*/\1 \2 \3/' | sort -n | tr '\n' ';')
expect_eq "$launched" "0 n1 $n1;1 n1 $n1;2 n2 $n2;3 n2 $n2;" "--dp-explain: each task's mask as launched"
[[ $(grep -c '^task [0-3] on n[12]: RANK=' <<<"$out") -eq 4 ]] || fail "--dp-explain: srun's 4 task lines expected: $out"

out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N2 --ntasks-per-node=2 --gpus-per-task=1 \
  bash -c "$print_task" 2>&1) || fail "--gpus-per-task=1: $out"
# Each task's own UUID (entry LOCAL_RANK of its mask): four tasks, four UUIDs.
owns=$(while read -r line; do
  IFS=, read -r -a m <<<"$(field "$line" CUDA_VISIBLE_DEVICES)"
  echo "${m[$(field "$line" LOCAL_RANK)]:-none}"
done < <(grep -E '^[0-9]+ [0-9]+ n[12] ' <<<"$out") | grep -c '^GPU-' || true)
[[ $(while read -r line; do
  IFS=, read -r -a m <<<"$(field "$line" CUDA_VISIBLE_DEVICES)"
  echo "${m[$(field "$line" LOCAL_RANK)]:-none}"
done < <(grep -E '^[0-9]+ [0-9]+ n[12] ' <<<"$out") | grep '^GPU-' | sort -u | wc -l) -eq 4 && $owns -eq 4 ]] ||
  fail "--gpus-per-task=1: four tasks, four distinct UUIDs at cuda:LOCAL_RANK expected: $out"

out=$(as_user timeout 60 srun --dp-world=auto -N1 -n2 --gres=gpu:2 bash -c "$print_task" 2>&1) || fail "no --dp-tiles: $out"
[[ $(grep -c "CUDA_VISIBLE_DEVICES=$(uuid 1 0),$(uuid 1 1) " <<<"$out") -eq 2 ]] ||
  fail "no --dp-tiles: Slurm's UUID list must stay: $out"
pass "gres.conf Flags=env_uuid: UUID masks per task, in --dp-tiles, --gpus-per-task and --dp-explain"
