#!/usr/bin/env bash
# No node agent or daemon outlives its step: 100 two-node steps, a step
# cancelled with scancel (its agents and daemon run as the user), a step
# killed by a failing task; then none of the job's dp-nodeagent or
# dp-rendezvousd processes is left. By job id: the other cluster's tests run agents as the
# same user meanwhile.
. "$(dirname "$0")/../lib.sh"
site
leftovers() { job_pids "$1" dp-nodeagent; daemons_of_job "$1"; }
none_left() { [[ -z $(leftovers "$1") ]]; }

cat >"$WORK/many.sh" <<'JOB'
#!/bin/bash
for i in $(seq 100); do srun --dp-world=auto -N2 --ntasks-per-node=1 true || exit 1; done
echo DONE
JOB
chmod 755 "$WORK/many.sh"
start=$SECONDS
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/many.out" "$WORK/many.sh")
wait_until 400 "100 steps of job $job" job_done "$job"
grep -q DONE "$WORK/many.out" || fail "100 steps did not all succeed: $(tail -5 "$WORK/many.out")"
wait_until 10 "no agent or daemon after 100 steps" none_left "$job"
echo "100 two-node steps in $((SECONDS - start)) s: nothing left"

job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/cancel.out" \
  --wrap "srun --dp-world=auto sleep 120")
two_agents() { [[ $(job_pids "$1" dp-nodeagent | wc -l) == 2 ]]; }
wait_until 60 "the two agents of job $job" two_agents "$job"
wait_until 60 "the daemon of job $job" has_daemon "$job"
# The agents and the daemon run as the user, never as root.
users=$(ps -o user= -p "$(job_pids "$job" dp-nodeagent | paste -sd,)" | sort -u)
[[ $users == dptest ]] || fail "agents of job $job run as '$users', not dptest"
users=$(ps -o user= -p "$(daemons_of_job "$job" | paste -sd,)" | sort -u)
[[ $users == dptest ]] || fail "the daemon of job $job runs as '$users', not dptest"
scancel "$job"
wait_until 30 "job $job to end after scancel" job_done "$job"
wait_until 10 "no agent or daemon after scancel" none_left "$job"

job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/fail.out" \
  --wrap 'srun --dp-world=auto --kill-on-bad-exit=1 bash -c "if [ \$SLURM_PROCID = 1 ]; then exit 3; fi; sleep 120"')
wait_until 90 "job $job to end after a task failed" job_done "$job"
wait_until 10 "no agent or daemon after a failing task" none_left "$job"
pass "100 steps, scancel, a failing task: no dp-nodeagent or dp-rendezvousd left"
