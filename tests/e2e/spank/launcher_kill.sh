#!/usr/bin/env bash
# kill -9 of one worker of a 2x2 launcher step: the node agent watches the
# launcher's workers (torchrun polls them only every 5 s, by when the other
# node's workers have died of the broken all-reduce), so the step's first
# failure is the killed worker's node, named with the worker's rank and
# signal; its launcher then stops its node's workers, and the step ends.
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
# Its node: the launcher's, whose environment torchrun passed on.
node=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^SLURMD_NODENAME=//p')
[[ $node == n[12] ]] || fail "worker rank 3 has no SLURMD_NODENAME of n1 or n2: '$node'"
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
want="^slurm-dp: step .*failed: first failure: rank [01] \\(host $node\\) is failing: "
want+="its worker rank 3 was killed by signal 9 "
[[ $last =~ $want ]] || fail "srun's last line does not name worker rank 3 killed on $node: $last"
pass "a killed worker ends the launcher step; srun's last line: $last"
