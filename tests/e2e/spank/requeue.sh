#!/usr/bin/env bash
# A running slurm-dp job requeued with `scontrol requeue` starts again with a
# working MASTER_PORT (rank 0 binds it) and leaves no lease behind.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
use_port_leases requeue

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
srun --dp-world=auto -N2 --ntasks-per-node=1 /usr/bin/python3 $WORK/bind_master_port.py $WORK run\${SLURM_RESTART_COUNT:-0}
JOB
job=$(as_user sbatch --parsable --requeue --open-mode=append -N2 --ntasks-per-node=1 -o "$WORK/job.out" "$WORK/job.sh")
wait_until 60 "the first run to bind MASTER_PORT" test -s "$WORK/run0.port"
first=$(cut -d' ' -f1 "$WORK/run0.port")
scontrol requeue "$job"
# Slurm starts a requeued job again only after a delay (dp-cluster's cred_expire).
wait_until 300 "the requeued run to bind MASTER_PORT" test -s "$WORK/run1.port"
second=$(cut -d' ' -f1 "$WORK/run1.port")
held=$(find "$leases" -name '[0-9]*' -printf '%f ')
[[ $held == "$second " ]] || fail "while the requeued run holds $second the leases are: $held"
touch "$WORK/release"
wait_until 60 "job $job to end" job_done "$job"
echo "first run MASTER_PORT $first, requeued run $second"
expect_no_leases "after the requeued job"
cat "$WORK/job.out"
# The requeue ends the first run's step with Slurm's SIGTERM: where srun
# lives long enough it says so ("ended: cancelled ..."), which is no error.
if grep -i 'slurm-dp:' "$WORK/job.out" | grep -v ' ended: cancelled by the user (SIGTERM from Slurm'; then
  fail "slurm-dp reported an error"
fi
pass "requeued job started again on MASTER_PORT $second with no stale lease"
