#!/usr/bin/env bash
# Pre-emption through Slurm: scancel --signal=TERM hits every task mid-epoch,
# rank 0 checkpoints and all exit cleanly; the same command with --resume
# ends with exactly the parameters of an uninterrupted run.
. "$(dirname "$0")/common.sh"

# Long enough (~1000 steps) that the signal lands mid-run on a busy machine.
args=(--train-limit 16384 --hidden 512,256 --global-batch 32 --epochs 2 --no-eval --seed 3)
run() {  # run NAME EXTRA...
  local name=$1
  shift
  as_user timeout 200 srun --dp-world=auto -N2 --ntasks-per-node=1 -J "dpt-$name-$$" \
    --export=ALL,OPENBLAS_NUM_THREADS=1 "$DP_TRAINER" "${args[@]}" "$@"
}

run full --checkpoint "$WORK/full.ck" --log-every 0 >"$WORK/full.log" 2>&1 || fail "uninterrupted run failed: $(cat "$WORK/full.log")"

run cut --checkpoint "$WORK/cut.ck" --resume --log-every 1 --metrics "$WORK/cut.jsonl" >"$WORK/cut.log" 2>&1 &
srun_pid=$!
deadline=$(( $(date +%s) + 120 ))
until grep -q '"step":100,' "$WORK/cut.jsonl" 2>/dev/null; do
  (( $(date +%s) < deadline )) || fail "run did not reach step 100 in time: $(cat "$WORK/cut.log")"
  kill -0 "$srun_pid" 2>/dev/null || fail "run ended early: $(cat "$WORK/cut.log")"
  sleep 0.05
done
job=$(squeue -h -o %i -n "dpt-cut-$$" | head -n1)
[[ -n $job ]] || fail "cannot find the job"
scancel --signal=TERM "$job"
wait "$srun_pid" || fail "pre-empted run did not exit cleanly: $(cat "$WORK/cut.log")"
grep -q '"event":"stopped"' "$WORK/cut.jsonl" || fail "run finished before the signal: $(cat "$WORK/cut.log")"
stopped=$(sed -n 's/.*"event":"stopped","step":\([0-9]*\).*/\1/p' "$WORK/cut.jsonl")
[[ -f $WORK/cut.ck ]] || fail "no checkpoint after SIGTERM"

run resume --checkpoint "$WORK/cut.ck" --resume --log-every 0 >"$WORK/resume.log" 2>&1 || fail "resume failed: $(cat "$WORK/resume.log")"
grep -q "resume: continuing at step $stopped" "$WORK/resume.log" || fail "did not resume at step $stopped: $(cat "$WORK/resume.log")"
cmp -s "$WORK/full.ck" "$WORK/cut.ck" || fail "resumed run ends with different parameters than the uninterrupted one"
pass "stopped at step $stopped by SIGTERM, resumed, final checkpoint identical to the uninterrupted run"
