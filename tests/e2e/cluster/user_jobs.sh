#!/usr/bin/env bash
# Jobs of the unprivileged test user work: tasks run as that user, get 2 of
# the node's 4 fake GPUs through gres (CUDA_VISIBLE_DEVICES), and
# srun --resv-ports=2 gets two ports from the cluster's MpiParams range.
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"

out=$(with_timeout 60 as_user srun -N2 --ntasks-per-node=2 --gres=gpu:2 \
        bash -c 'echo "$(id -un) $SLURMD_NODENAME ${CUDA_VISIBLE_DEVICES:-unset}"') || fail "srun as $DP_TEST_USER failed: $out"
expect_eq "$(wc -l <<<"$out")" 4 "number of tasks"
while read -r user node gpus; do
  expect_eq "$user" "$DP_TEST_USER" "user of a task on $node"
  [[ $gpus =~ ^[0-3],[0-3]$ ]] || fail "task on $node: CUDA_VISIBLE_DEVICES should list 2 of 4 GPUs, got '$gpus'"
done <<<"$out"

range=$(scontrol show config | sed -n 's/^MpiParams *= *ports=//p')
[[ $range =~ ^([0-9]+)-([0-9]+)$ ]] || fail "MpiParams has no port range: '$range'"
lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
out=$(with_timeout 60 as_user srun -N2 --resv-ports=2 printenv SLURM_STEP_RESV_PORTS) || fail "srun --resv-ports failed: $out"
while read -r ports; do
  [[ $ports =~ ^([0-9]+)-([0-9]+)$ ]] || fail "SLURM_STEP_RESV_PORTS='$ports' is not a range of 2"
  ((BASH_REMATCH[1] >= lo && BASH_REMATCH[2] <= hi && BASH_REMATCH[2] == BASH_REMATCH[1] + 1)) \
    || fail "reserved ports $ports are not 2 ports within $range"
done <<<"$out"
pass "tasks run as $DP_TEST_USER with 2 GPUs each; --resv-ports=2 gave ports in $range"
