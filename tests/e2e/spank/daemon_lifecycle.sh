#!/usr/bin/env bash
# The step's dp-rendezvousd runs as the job's user and never outlives its
# step: after 100 consecutive steps, a step cancelled with scancel, and a
# step killed by a failing task, no daemon of the job remains.
. "$(dirname "$0")/../lib.sh"
site

# Runs as the user, never as root.
out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=1 bash -c \
  'ps -o user=,args= -C dp-rendezvousd | grep -- "--job-id $SLURM_JOB_ID " | sort -u')
echo "$out"
[[ -n $out ]] || fail "no daemon seen during the step"
[[ $(awk '{print $1}' <<<"$out" | sort -u) == dptest ]] || fail "daemon not run as dptest: $out"

# 100 consecutive steps in one allocation.
cat >"$WORK/many.sh" <<'JOB'
#!/bin/bash
for i in $(seq 100); do srun --dp-world=auto -n2 true || exit 1; done
echo DONE
JOB
chmod 755 "$WORK/many.sh"
job=$(as_user sbatch --parsable -N1 -n2 -o "$WORK/many.out" "$WORK/many.sh")
wait_until 300 "100 steps of job $job" job_done "$job"
grep -q DONE "$WORK/many.out" || fail "100 steps did not all succeed: $(tail -5 "$WORK/many.out")"
no_daemon "$job" || fail "daemon left after 100 steps of job $job"
echo "100 steps: no daemon left"

# scancel during a step.
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/cancel.out" \
  --wrap "srun --dp-world=auto sleep 120")
wait_until 60 "the daemon of job $job" has_daemon "$job"
scancel "$job"
wait_until 30 "job $job to end after scancel" job_done "$job"
wait_until 10 "no daemon of cancelled job $job" no_daemon "$job"
echo "scancel: no daemon left"

# A failing task kills the step.
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/fail.out" \
  --wrap 'srun --dp-world=auto --kill-on-bad-exit=1 bash -c "if [ \$SLURM_PROCID = 1 ]; then exit 3; fi; sleep 120"')
wait_until 90 "job $job to end after a task failed" job_done "$job"
wait_until 10 "no daemon of failed job $job" no_daemon "$job"
echo "failing task: no daemon left"
pass "daemon life cycle"
