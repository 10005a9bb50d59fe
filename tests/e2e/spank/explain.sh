#!/usr/bin/env bash
# --dp-explain prints every task's layout, runs no program and ends srun
# successfully, without Slurm error lines, on its own and inside a batch
# job; a srun that made its own allocation leaves no job behind.
. "$(dirname "$0")/../lib.sh"
site

marker="$WORK/task-ran"
rc=0
out=$(as_user timeout 60 srun --dp-explain --dp-tiles=2 -N2 --ntasks-per-node=2 --gres=gpu:4 touch "$marker" 2>&1) || rc=$?
echo "$out"
((rc == 0)) || fail "a successful explain should end srun with status 0, got $rc"
grep -qi 'error' <<<"$out" && fail "error lines after a successful explain"
[[ ! -e $marker ]] || fail "a task of the explain ran its program"
[[ $(grep -c '^task [0-3] on n[12]: RANK=' <<<"$out") -eq 4 ]] || fail "4 task lines expected"
# Its tiles 2,3 are CUDA ordinals 1 and 3 of the node's tasks' GPUs, cuda:LOCAL_RANK first.
grep -q '^task 1 on n1: RANK=1 LOCAL_RANK=1 .*CUDA_VISIBLE_DEVICES=0,2,1,3 DP_TILES=1,3' <<<"$out" || fail "task 1 layout"
grep -q '^slurm-dp: --dp-explain: dry run' <<<"$out" || fail "dry-run note missing"
no_jobs() { [[ -z $(squeue -h -u dptest) ]]; }
wait_until 30 "srun's own allocation to be released after the explain" no_jobs

# The README's command, whose output docs/output.md shows.
as_user timeout 60 srun -N2 --ntasks-per-node=2 --dp-world=auto --dp-explain true >"$WORK/explain.out" 2>&1 ||
  fail "the README's --dp-explain failed: $(cat "$WORK/explain.out")"
grep -q '^task 3 on n2: RANK=3 ' "$WORK/explain.out" || fail "the README's --dp-explain printed no layout"
record_sample explain "$WORK/explain.out"
wait_until 30 "srun's own allocation to be released after the explain" no_jobs

# Inside a batch job (that the job's next step then starts at once is
# unlaunched_step.sh).
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/job.out" \
  --wrap "srun --dp-explain true; echo explain=\$?")
wait_until 60 "job $job to end" job_done "$job"
cat "$WORK/job.out"
grep -qx 'explain=0' "$WORK/job.out" || fail "explain in a batch job did not exit 0"
grep -q '^task 1 on n2: RANK=1 ' "$WORK/job.out" || fail "explain in a batch job printed no layout"
grep -qi 'error' "$WORK/job.out" && fail "error lines in the batch job"
pass "explain"
