#!/usr/bin/env bash
# kill -9 of rank 2 (on the second node) in a 2x2 dp-trainer step: every
# survivor exits with an error naming rank 2, none by a signal (Gloo's abort
# must not crash them), and srun exits non-zero.
. "$(dirname "$0")/common.sh"

victim=2
name="dpt-kill-$$"
# Long enough (many epochs of ~500 steps) that the kill lands mid-run.
as_user timeout 200 srun --dp-world=auto -N2 --ntasks-per-node=2 --kill-on-bad-exit=0 -J "$name" \
  --export=ALL,OPENBLAS_NUM_THREADS=1 -o "$WORK/rank%t.log" "$DP_TRAINER" --train-limit 16384 \
  --hidden 512,256 --global-batch 32 --epochs 50 --no-eval --log-every 1 --metrics "$WORK/run.jsonl" \
  >"$WORK/srun.log" 2>&1 &
srun_pid=$!
# Step 20 of an all-reduce loop: every rank is training.
training() { grep -q '"step":20,' "$WORK/run.jsonl" 2>/dev/null; }
wait_until 120 "the trainer to reach step 20" training
job=$(squeue -h -o %i -n "$name" | head -n1)
[[ -n $job ]] || fail "cannot find the job"
victim_pid=""
for p in $(job_pids "$job" dp-trainer); do
  grep -qzx "RANK=$victim" "/proc/$p/environ" 2>/dev/null && victim_pid=$p
done
[[ -n $victim_pid ]] || fail "no dp-trainer process of rank $victim in job $job"
kill -9 "$victim_pid"
rc=0
wait "$srun_pid" || rc=$?
cat "$WORK/srun.log"
((rc != 0)) || fail "srun exited 0 after rank $victim was killed"
for r in 0 1 3; do
  grep -q "rank $victim (host n2)" "$WORK/rank$r.log" ||
    fail "rank $r's output does not name rank $victim: $(tail -n 3 "$WORK/rank$r.log")"
done
# srun names how each task ended: the survivors exited, none by a signal.
grep -E ': tasks? [0-9,-]+: ' "$WORK/srun.log" | grep -v "task $victim: Killed" | grep -v 'Exited with exit code' &&
  fail "a surviving rank ended by a signal (above)"
grep -h "rank $victim" "$WORK"/rank[013].log | head -n 3
pass "ranks 0, 1 and 3 of the trainer exited with an error naming rank $victim, none by a signal"
