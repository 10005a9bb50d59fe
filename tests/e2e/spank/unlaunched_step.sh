#!/usr/bin/env bash
# A step srun explained or refused (Slurm created it before asking the
# plugin) gives its CPUs back at once: the next srun of the same batch job
# starts promptly instead of waiting for the job's end ("Requested nodes are
# busy"). No task of those steps runs the program.
. "$(dirname "$0")/../lib.sh"
site

# The job has one CPU per node and each step takes it, so a step left RUNNING
# blocks the next.
# The `timeout`s bound a wait that would otherwise last as long as the job.
# The steps after the skipped ones keep their stderr apart: a step after a
# launched one may find the nodes busy for a moment, as in plain Slurm (srun
# learns that the tasks ended before slurmctld learns that the step did).
script="$WORK/job.sh"
cat >"$script" <<'EOF'
#!/bin/bash
srun --dp-explain touch ran-explain >/dev/null; echo explain=$?
timeout 30 srun --dp-world=auto hostname 2>after-explain.err | sort | tr '\n' ' '; echo; echo after_explain=${PIPESTATUS[0]}
srun --dp-world=3 touch ran-refused; echo refused=$?
timeout 30 srun --dp-world=auto hostname 2>after-refusal.err | sort | tr '\n' ' '; echo; echo after_refusal=${PIPESTATUS[0]}
EOF
chmod 755 "$script"
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/job.out" "$script")
# Four prompt steps take seconds; a held step would add 2 x 30 s.
(wait_until 50 "job $job to end" job_done "$job") ||
  fail "job $job did not end within 50 s (a later srun waited for an unlaunched step): $(cat "$WORK/job.out")"
out=$(cat "$WORK/job.out")
echo "$out"
after=$(cat "$WORK/after-explain.err" "$WORK/after-refusal.err") || fail "the later steps' stderr is missing"
echo "$after"
grep -qx 'explain=0' <<<"$out" || fail "the explain step did not exit 0"
grep -qx 'after_explain=0' <<<"$out" || fail "the srun after an explain did not run (124: it waited for the explain's step)"
grep -qx 'n1 n2 ' <<<"$out" || fail "the step after the explain did not run on both nodes"
grep -q '^refused=[1-9]' <<<"$out" || fail "--dp-world=3 on 2 tasks was not refused"
grep -qx 'after_refusal=0' <<<"$out" || fail "the srun after a refusal did not run (124: it waited for the refused step)"
[[ $(grep -cx 'n1 n2 ' <<<"$out") -eq 2 ]] || fail "the step after the refusal did not run on both nodes"
grep -q 'busy' <<<"$after" && fail "a step after an explained or refused one waited for busy nodes"
[[ ! -e $WORK/ran-explain && ! -e $WORK/ran-refused ]] || fail "a task of an explained or refused step ran its program"
pass "explained and refused steps leave the job's CPUs free for its next step"
