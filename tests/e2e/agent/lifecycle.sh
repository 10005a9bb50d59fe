#!/usr/bin/env bash
# No node agent or daemon outlives its step: 100 two-node steps, a step
# cancelled with scancel, a step killed by a failing task; then none of the
# user's dp-nodeagent or dp-rendezvousd processes is left.
. "$(dirname "$0")/../lib.sh"
site
leftovers() { pgrep -u dptest -x dp-nodeagent; pgrep -u dptest -f 'dp-rendezvousd '; }
none_left() { [[ -z $(leftovers) ]]; }

# The agent runs as the user, never as root.
out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=1 bash -c \
  'ps -o user=,comm= -C dp-nodeagent | sort -u')
[[ $(awk '{print $1}' <<<"$out" | sort -u) == dptest ]] || fail "agent not run as dptest: $out"

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
wait_until 10 "no agent or daemon after 100 steps" none_left
echo "100 two-node steps in $((SECONDS - start)) s: nothing left"

job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/cancel.out" \
  --wrap "srun --dp-world=auto sleep 120")
has_agent() { pgrep -u dptest -x dp-nodeagent >/dev/null; }
wait_until 60 "the agents of job $job" has_agent
scancel "$job"
wait_until 30 "job $job to end after scancel" job_done "$job"
wait_until 10 "no agent or daemon after scancel" none_left

job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/fail.out" \
  --wrap 'srun --dp-world=auto --kill-on-bad-exit=1 bash -c "if [ \$SLURM_PROCID = 1 ]; then exit 3; fi; sleep 120"')
wait_until 90 "job $job to end after a task failed" job_done "$job"
wait_until 10 "no agent or daemon after a failing task" none_left
pass "100 steps, scancel, a failing task: no dp-nodeagent or dp-rendezvousd left"
