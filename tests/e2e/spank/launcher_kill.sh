#!/usr/bin/env bash
# kill -9 of one worker of a 2x2 launcher step: its launcher (torchrun's
# default) stops its node's workers and exits non-zero, the step ends, and
# srun's last line names the node whose launcher stopped first (torchrun
# polls its workers every 5 s, so that is the node of the killed worker or
# one whose workers then failed in their all-reduce; torchrun's own summary
# above it names the worker).
. "$(dirname "$0")/../lib.sh"
site
cp "$DP_SOURCE_DIR/tests/e2e/pytorch/ddp.py" "$WORK/"
pytorch_launcher_env
as_user "${pet[@]}" timeout 200 srun --dp-world=auto -N2 --ntasks-per-node=1 \
  torchrun --nproc_per_node=2 ddp.py --steps 100000 --step-ms 50 --ready-file "$WORK/r" \
  >"$WORK/srun.log" 2>&1 &
srun_pid=$!
ready() { [[ $(find "$WORK" -name 'r.[0-3]' | wc -l) -eq 4 ]]; }
wait_until 120 "4 workers to train" ready
job=$(squeue -h -u dptest -o %i | head -1)
victim=
# The worker's process name is its Python's (python3.11, python3.13): find it by its variables.
for p in $(pgrep -u dptest -f ddp.py); do
  grep -qzxF "SLURM_JOB_ID=$job" "/proc/$p/environ" 2>/dev/null \
    && grep -qzx 'RANK=3' "/proc/$p/environ" 2>/dev/null && victim=$p
done
[[ -n $victim ]] || fail "no worker of rank 3 found in job $job"
kill -9 "$victim"
t0=$SECONDS
srun_ended() { ! kill -0 "$srun_pid"; }
wait_until 60 "srun to end after the kill" srun_ended
rc=0
wait "$srun_pid" || rc=$?
echo "srun ended $((SECONDS - t0)) s after the kill, status $rc"
grep -v -e Warning -e '^\*\*\*' -e OMP_NUM_THREADS -e '^ *$' "$WORK/srun.log" | tail -15
((rc != 0)) || fail "srun exited 0 after a worker was killed"
last=$(grep -v '^\s*$' "$WORK/srun.log" | tail -n1)
[[ $last =~ ^slurm-dp:\ step\ .*failed:\ first\ failure:\ rank\ [01]\ \(host\ n[12]\) ]] \
  || fail "srun's last line does not name the failed node: $last"
pass "a killed worker ends the launcher step; srun's last line: $last"
