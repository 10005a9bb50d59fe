#!/usr/bin/env bash
# JAX's coordinator with no flag: two steps of one job run at once, both
# with rank 0 on n1, each starting a coordinator the way
# jax.distributed.initialize() does (rank 0 serves, every task connects).
#  - at JAX_COORDINATOR_ADDRESS, which slurm-dp sets: both steps complete,
#    each coordinator reached by its own step's tasks alone;
#  - at JAX's own Slurm guess (61440 + job id mod 4096, the same for every
#    step of a job), the same two steps collide: one cannot bind, or one's
#    task reaches the other's coordinator.
. "$(dirname "$0")/../lib.sh"
job=""
trap end_job_and_site EXIT
cp "$(dirname "$0")/jax_shaped.py" "$WORK/"
use_port_leases jax_coordinator

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
run() { srun --overlap --resv-ports=0 -N2 --ntasks-per-node=1 --dp-world=auto /usr/bin/python3 $WORK/jax_shaped.py "\$@"; }
pair() {  # pair MODE: two steps at once
  run \$1 $WORK \${1}1 >$WORK/\${1}1.log 2>&1 & local a=\$!
  run \$1 $WORK \${1}2 >$WORK/\${1}2.log 2>&1 & local b=\$!
  wait \$a; echo "\${1}1 \$?" >>$WORK/rc
  wait \$b; echo "\${1}2 \$?" >>$WORK/rc
}
pair dp
pair jax
JOB
job=$(as_user sbatch --parsable -w n1,n2 -N2 --ntasks-per-node=1 -o "$WORK/job.out" "$WORK/job.sh")
both_served() { [[ -s $WORK/dp1.served && -s $WORK/dp2.served ]]; }
wait_until 120 "both steps' coordinators at JAX_COORDINATOR_ADDRESS to serve their tasks" both_served
touch "$WORK/release.dp"
settled() { [[ -e $WORK/jax1.served || -e $WORK/jax1.failed ]] && [[ -e $WORK/jax2.served || -e $WORK/jax2.failed ]]; }
wait_until 120 "both steps' coordinators at JAX's own port to serve or fail" settled
touch "$WORK/release.jax"
wait_until 120 "job $job to end" job_done "$job"
cat "$WORK/rc"
[[ $(grep -c '^dp[12] 0$' "$WORK/rc") == 2 ]] ||
  fail "with JAX_COORDINATOR_ADDRESS a step failed: $(cat "$WORK"/dp*.log "$WORK"/dp*.failed 2>/dev/null)"
dp1=$(cat "$WORK/dp1.served") dp2=$(cat "$WORK/dp2.served")
[[ $dp1 != "$dp2" ]] || fail "both steps' coordinators served on port $dp1"
failed=$(cat "$WORK"/jax*.failed 2>/dev/null || true)
[[ -n $failed ]] || fail "at JAX's own port ($(cat "$WORK"/jax*.served)) both steps completed: no collision shown"
echo "JAX's own port: $failed"
pass "two concurrent steps on n1 met at JAX_COORDINATOR_ADDRESS ports $dp1 and $dp2 and completed; at JAX's job-id port they collided ($(head -1 <<<"$failed"))"
