#!/usr/bin/env bash
# Fake gres GPUs, a task per rank: with --gpus-per-task=1 (with and without
# --dp-tiles=1), --gpus=4 and --gres=gpu:2 with --dp-tiles=1, every task's
# CUDA_VISIBLE_DEVICES lists the node's devices of the step so that entry
# LOCAL_RANK is its own (a script's cuda:LOCAL_RANK), and no two tasks own one
# device; with --gpus-per-task that is the device Slurm binds to the task (the
# same step without slurm-dp is the control). Without --dp-tiles or a per-task
# binding, Slurm's mask is left alone. Where srun's Slurm confines tasks to
# their devices (TaskPlugin=task/cgroup, ConstrainDevices=yes), --dp-explain
# and srun's stderr give the hint instead, naming the fix.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
site

# $1: task lines (print_task); $2: what. Prints "node:localid own" per task;
# fails unless LOCAL_RANK is SLURM_LOCALID, the mask holds an entry at
# LOCAL_RANK, and no device is owned twice.
own_devices() {
  local line node localid lr mask owns
  owns=$(while read -r line; do
    read -r _ localid node _ <<<"$line"
    lr=$(field "$line" LOCAL_RANK)
    [[ $lr == "$localid" ]] || { echo "BAD LOCAL_RANK=$lr for local task $localid"; continue; }
    IFS=, read -r -a mask <<<"$(field "$line" CUDA_VISIBLE_DEVICES)"
    ((lr < ${#mask[@]})) || { echo "BAD cuda:$lr is no device of CUDA_VISIBLE_DEVICES=${mask[*]}"; continue; }
    echo "$node:$localid ${mask[$lr]}"
  done <<<"$1" | sort)
  grep -q '^BAD' <<<"$owns" && fail "$2: $(grep '^BAD' <<<"$owns" | head -n1) (tasks: $1)"
  [[ -z $(awk '{split($1, a, ":"); print a[1] ":" $2}' <<<"$owns" | sort | uniq -d) ]] \
    || fail "$2: a device is owned by two tasks: $owns"
  echo "$owns"
}

# Slurm's own binding, the control: "node:localid device" for each task.
# shellcheck disable=SC2016 # expanded in the tasks
slurm_owns=$(as_user timeout 60 srun -N2 --ntasks-per-node=2 --gpus-per-task=1 \
  bash -c 'echo "$SLURMD_NODENAME:$SLURM_LOCALID $CUDA_VISIBLE_DEVICES"' | sort)
[[ $(wc -l <<<"$slurm_owns") -eq 4 ]] || fail "the control (no slurm-dp) ran $(wc -l <<<"$slurm_owns") tasks, not 4"

for tiles in "--dp-tiles=1" ""; do
  what="--gpus-per-task=1 ${tiles:-(no --dp-tiles)}"
  # shellcheck disable=SC2086 # $tiles: one word or none
  out=$(as_user timeout 60 srun --dp-world=auto $tiles -N2 --ntasks-per-node=2 --gpus-per-task=1 bash -c "$print_task")
  echo "$out"
  [[ $(wc -l <<<"$out") -eq 4 ]] || fail "$what: 4 tasks expected"
  owns=$(own_devices "$out" "$what")
  [[ $owns == "$slurm_owns" ]] || fail "$what: cuda:LOCAL_RANK is not the device Slurm binds to each task: got '$owns', Slurm's '$slurm_owns'"
  [[ -n $tiles ]] || ! grep -q 'DP_TILES=[0-9]' <<<"$out" || fail "$what: DP_TILES set without --dp-tiles"
done

out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N1 -n4 --gpus=4 bash -c "$print_task")
echo "$out"
own_devices "$out" "--gpus=4" >/dev/null
[[ $(grep -c 'CUDA_VISIBLE_DEVICES=0,1,2,3 ' <<<"$out") -eq 4 ]] || fail "--gpus=4 on one node: every task's mask should be 0,1,2,3: $out"

# Slurm narrowed the step to 2 GPUs: masks are entries of Slurm's list.
out=$(as_user timeout 60 srun --dp-world=auto --dp-tiles=1 -N1 -n2 --gres=gpu:2 bash -c 'echo "STEP=$SLURM_STEP_GPUS"; '"$print_task")
echo "$out"
own_devices "$(grep -v '^STEP=' <<<"$out")" "--gres=gpu:2" >/dev/null

# Without --dp-tiles or a per-task binding, Slurm's own mask is left alone.
out=$(as_user timeout 60 srun --dp-world=auto -N1 -n2 --gres=gpu:2 bash -c "$print_task")
[[ $(grep -c 'CUDA_VISIBLE_DEVICES=0,1' <<<"$out") -eq 2 ]] || fail "no --dp-tiles: Slurm's CUDA_VISIBLE_DEVICES must stay: $out"

# srun's Slurm confines each task to its devices (its own slurm.conf and
# cgroup.conf; the nodes keep theirs): the hint, in --dp-explain's lines and
# on a launch's stderr.
mkdir -p "$WORK/etc"
sed 's|^TaskPlugin=.*|TaskPlugin=task/affinity,task/cgroup|' "$SLURM_CONF" >"$WORK/etc/slurm.conf"
printf 'ConstrainCores=yes\nConstrainDevices=yes   # each task its own GPUs\n' >"$WORK/etc/cgroup.conf"
chmod 644 "$WORK/etc/slurm.conf" "$WORK/etc/cgroup.conf"
hint="cuda:LOCAL_RANK names no device for local ranks 1 and up. Ask --gpus-per-node=N"
out=$(SLURM_CONF=$WORK/etc/slurm.conf as_user timeout 60 srun --dp-world=auto --dp-tiles=1 --dp-explain \
  -N1 -n2 --gpus-per-task=1 true 2>&1) || fail "--dp-explain on a confining site failed: $out"
expect_contains "$out" "slurm-dp: hint: --gpus-per-task: Slurm binds each task to its own GPU" "--dp-explain's hint"
expect_contains "$out" "$hint" "--dp-explain's hint"
err=$(SLURM_CONF=$WORK/etc/slurm.conf as_user timeout 60 srun --dp-world=auto -N1 -n2 --gpus-per-task=1 true 2>&1 >/dev/null) \
  || fail "a launch on a confining site failed: $err"
expect_contains "$err" "$hint" "srun's stderr at launch"
out=$(SLURM_CONF=$WORK/etc/slurm.conf as_user timeout 60 srun --dp-world=auto --dp-tiles=1 --dp-explain \
  -N1 -n1 --gpus-per-task=1 true 2>&1) || fail "--dp-explain of one task failed: $out"
! grep -q 'hint' <<<"$out" || fail "a hint for a step whose only task is local rank 0: $out"
pass "cuda:LOCAL_RANK is each task's own device (--gpus-per-task=1 with and without --dp-tiles=1, as Slurm binds them: $(tr '\n' ' ' <<<"$slurm_owns")); --gpus=4, --gres=gpu:2; the confining site's hint shown"
