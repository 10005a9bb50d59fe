#!/usr/bin/env bash
# A step without any --dp-* option gets no DP_* or torchrun variable and no daemon.
. "$(dirname "$0")/common.sh"
site

out=$(as_user timeout 60 srun -N2 --ntasks-per-node=2 bash -c 'env; echo "JOB=$SLURM_JOB_ID"')
job=$(sed -n 's/^JOB=//p' <<<"$out" | head -1)
added=$(grep -E '^(DP_[A-Z_]*|RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR|MASTER_PORT)=' <<<"$out" || true)
[[ -z $added ]] || fail "variables added to a plain step: $added"
[[ -z $(grep -r -l -- "--job-id $job " /proc/[0-9]*/cmdline 2>/dev/null || true) ]] || fail "a daemon ran for a plain step"
pass "plain step untouched (job $job)"
