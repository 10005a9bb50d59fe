#!/usr/bin/env bash
# Shared memory start-up that fails, on the cluster (2 ranks on one node):
#  - no shared memory for one rank (memfd_create fails): the step trains over
#    TCP, every collective exact, and prints exactly one warning line;
#  - a rank killed at each point of the start-up (segment created, memory
#    reserved, before and after a peer opened it): the step fails, and
#    nothing of ours is left in /dev/shm (the segment never has a name).
. "$(dirname "$0")/common.sh"
: "${DP_SHM_SHIM:?set DP_SHM_SHIM to the built shm shim}"
site

ours_in_dev_shm() { find /dev/shm -maxdepth 1 \( -user dptest -o -name 'slurm-dp*' \) -print 2>/dev/null; }
before=$(ours_in_dev_shm)
[[ -z $before ]] || fail "/dev/shm already holds files of dptest or slurm-dp before the test: $before"

run() {  # run SHIM RANK: srun's output
  as_user timeout 120 srun --dp-world=auto -N1 --ntasks-per-node=2 --kill-on-bad-exit=1 \
    --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=30000,LD_PRELOAD="$DP_SHM_SHIM",DP_SHIM="$1",DP_SHIM_RANK="$2" \
    "$DP_COMM_WORKER" collectives 2>&1
}

out=$(run fail-memfd 0) || fail "without shared memory the step failed: $out"
echo "$out"
for r in 0 1; do
  grep -qxF "OK rank $r of 2 backend gloo via gloo over tcp" <<<"$out" || fail "rank $r did not finish over tcp"
done
warnings=$(grep -c "warning: shared memory" <<<"$out" || true)
[[ $warnings == 1 ]] || fail "expected one warning line, got $warnings"
grep -q "memfd_create failed" <<<"$out" || fail "the warning does not say what failed"

for point in kill-after-memfd kill-after-reserve kill-before-open kill-after-open; do
  victim=0
  [[ $point == *open ]] && victim=1
  rc=0
  out=$(run "$point" "$victim") || rc=$?
  ((rc != 0)) || fail "$point: srun exited 0 although rank $victim was killed: $out"
  left=$(ours_in_dev_shm)
  [[ -z $left ]] || fail "$point: left behind in /dev/shm: $left"
  echo "$point (rank $victim): srun exit $rc, nothing in /dev/shm"
done
pass "no shared memory: tcp with one warning; killed at 4 points of the start-up: nothing left in /dev/shm"
