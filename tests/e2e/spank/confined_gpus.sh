#!/usr/bin/env bash
# A site that confines each task to its GPUs, as most production sites do
# (TaskPlugin=task/cgroup, cgroup.conf ConstrainDevices=yes), for real: a
# cluster of its own (dp-cluster DP_CLUSTER_DEVICES=confined) whose nodes'
# slurmstepd put every task in a devices cgroup, each fake GPU a device number
# of its own. A task may open a GPU's file (ENXIO: no driver) or not (EPERM:
# the cgroup refused). It shows what the README says of such sites:
# - with --gpus-per-task=1 each task may open its own GPU and no other, as
#   cuda:0 (CUDA_VISIBLE_DEVICES=0), exactly as without slurm-dp (the
#   control), and srun prints the hint naming the fix;
# - the hint's fix, --gpus-per-node=N: each task may open the node's GPUs
#   of the step, which CUDA_VISIBLE_DEVICES lists, its own at entry
#   LOCAL_RANK; no hint;
# - the README's job script (--gpus-per-node) and program print there what
#   the README shows.
set -euo pipefail
: "${DP_SOURCE_DIR:?run through ctest}"
. "$(dirname "$0")/own_cluster.sh"
own_cluster confined 75 DP_CLUSTER_DEVICES=confined
. "$(dirname "$0")/../lib.sh"
trap 'cleanup_work; own_cluster_down' EXIT
site

# Each task: "node:localid LOCAL_RANK CUDA_VISIBLE_DEVICES opens", opens the
# node's fake GPUs (of 4) its cgroup lets it open, e.g. "1" or "01".
# shellcheck disable=SC2016 # expanded in the tasks
probe='opens=; for g in 0 1 2 3; do
  err=$({ exec 3<"'"$DP_CLUSTER_DIR"'/dev/$SLURMD_NODENAME/nvidia$g"; } 2>&1) || true
  case $err in *"No such device or address"*) opens+=$g ;; *"not permitted"*) ;; *) opens+="?$g" ;; esac
done
echo "$SLURMD_NODENAME:$SLURM_LOCALID ${LOCAL_RANK-unset} ${CUDA_VISIBLE_DEVICES-unset} ${opens:-none}"'
tasks() { grep -E '^n[12]:[01] ' <<<"$1" | sort; }

control=$(tasks "$(as_user timeout 60 srun -N2 --ntasks-per-node=2 --gpus-per-task=1 bash -c "$probe" 2>&1)")
echo "without slurm-dp:"$'\n'"$control"
# The cluster confines: each task one GPU of its own, as cuda:0.
[[ $(awk '$3 == "0" && $4 ~ /^[0-3]$/' <<<"$control" | wc -l) -eq 4 ]] ||
  fail "the control's tasks should each open one GPU, as CUDA_VISIBLE_DEVICES=0: $control"
[[ -z $(awk '{ split($1, a, ":"); print a[1], $4 }' <<<"$control" | sort | uniq -d) ]] ||
  fail "two tasks of a node open the same GPU: $control"

out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 --gpus-per-task=1 bash -c "$probe" 2>&1) ||
  fail "--gpus-per-task=1 on the confining cluster failed: $out"
echo "$out"
expect_contains "$out" "slurm-dp: hint: --gpus-per-task: Slurm binds each task to its own GPU and this site confines tasks" \
  "srun's hint on a confining site"
expect_contains "$out" "Ask --gpus-per-node=N instead of --gpus-per-task" "the hint's fix"
# Slurm's confinement left as it is: the control's lines, LOCAL_RANK aside.
got=$(tasks "$out" | awk '{ split($1, a, ":"); if ($2 != a[2]) print "BAD"; $2 = "-"; print }')
want=$(awk '{ $2 = "-"; print }' <<<"$control")
expect_eq "$got" "$want" "--gpus-per-task=1 with slurm-dp: each task's one GPU, cuda:0, as without it"

out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 --gpus-per-node=2 bash -c "$probe" 2>&1) ||
  fail "--gpus-per-node=2 on the confining cluster failed: $out"
echo "$out"
! grep -q 'hint' <<<"$out" || fail "a hint with --gpus-per-node=2: $out"
# Each task may open the node's two GPUs of the step and lists them; entry
# LOCAL_RANK of its mask is its own, no two tasks of a node owning one.
owns=$(tasks "$out" | while read -r who lr mask opens; do
  IFS=, read -r -a m <<<"$mask"
  [[ ${#opens} -eq 2 && ${#m[@]} -eq 2 && $lr == "${who#*:}" ]] || { echo "BAD $who $lr $mask $opens"; continue; }
  echo "${who%:*} ${m[$lr]}"
done)
! grep -q BAD <<<"$owns" || fail "--gpus-per-node=2: each task should open 2 GPUs and list 2, LOCAL_RANK its local id: $owns"
[[ $(wc -l <<<"$owns") -eq 4 && -z $(sort <<<"$owns" | uniq -d) ]] ||
  fail "--gpus-per-node=2: cuda:LOCAL_RANK should be a GPU of its own for each of the 4 tasks: $owns"
# --gpu-bind=none, the hint's fix before this test ran, is none: Slurm then
# sets no CUDA_VISIBLE_DEVICES at all (Slurm 22.05 here), which the README's
# program reads.
out=$(as_user timeout 60 srun -N1 -n2 --gpus-per-task=1 --gpu-bind=none bash -c "$probe" 2>&1)
expect_eq "$(tasks "$out" | awk '{ print $3 }' | sort -u)" "unset" "--gpu-bind=none: Slurm's CUDA_VISIBLE_DEVICES"

# The README's job script and program, as shown (CPUs here, so gloo).
python3 "$DP_SOURCE_DIR/tests/e2e/docs/readme_example.py" extract "$DP_SOURCE_DIR" "$WORK"
out=$(as_user sbatch job.sh) || fail "sbatch job.sh was refused: $out"
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
[[ -n $job ]] || fail "sbatch job.sh: no job id in: $out"
wait_until 120 "job $job to end" job_done "$job"
out=$(cat "$WORK/slurm-$job.out" 2>&1) || fail "the README's job left no slurm-$job.out"
echo "$out"
# --gpus-per-node: the output the README shows (no hint), confined or not.
RECORD="" python3 "$DP_SOURCE_DIR/tests/e2e/docs/readme_example.py" record "$DP_SOURCE_DIR" "$WORK/slurm-$job.out" ||
  fail "the README's job on a confining site did not print the README's output (above)"
pass "confined tasks (task/cgroup, ConstrainDevices=yes): one GPU each as cuda:0 with and without slurm-dp, srun's hint, its fix --gpus-per-node=2 gives cuda:LOCAL_RANK, the README's job runs"
