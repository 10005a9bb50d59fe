#!/usr/bin/env bash
# srun --dp-world=auto -N1 --ntasks-per-node=3: every rank is on one node, so
# libdp's all_reduce goes through shared memory; every collective is exact,
# and the job leaves nothing in /dev/shm.
. "$(dirname "$0")/common.sh"
site

out=$(as_user timeout 180 srun --dp-world=auto -N1 --ntasks-per-node=3 \
  --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=60000 \
  sh -c 'echo "JOB $DP_JOB_ID"; exec "$0" collectives' "$DP_COMM_WORKER" 2>&1) \
  || fail "srun failed: $out"
echo "$out"
for r in 0 1 2; do
  grep -qxF "OK rank $r of 3 backend gloo via gloo over tcp, all_reduce through shared memory (3 ranks on one host)" <<<"$out" \
    || fail "rank $r did not report OK through shared memory"
done
job=$(sed -n 's/^JOB \([0-9]*\)$/\1/p' <<<"$out" | head -n1)
[[ -n $job ]] || fail "the tasks did not see DP_JOB_ID"
left=$(ls /dev/shm | grep -F "slurm-dp.$job." || true)
[[ -z $left ]] || fail "job $job left shared memory behind: $left"
pass "3 ranks on one node ($(mode) mode): every collective exact through shared memory, nothing left in /dev/shm"
