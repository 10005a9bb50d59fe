# Sourced by the daemon e2e tests (after lib.sh): a 2x2 step of dp-rdv-probe
# ranks that connect and hold, srun in the background as dptest, its stderr in
# $WORK/srun.err. Sets srun_pid, victim_pid (the pid of rank $victim; fails
# without it) and job.
: "${DP_RDV_PROBE:?set DP_RDV_PROBE to the built dp-rdv-probe}"
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 --kill-on-bad-exit=0 \
  -o "$WORK/task.%t.out" "$DP_RDV_PROBE" hold 2>"$WORK/srun.err" &
srun_pid=$!
holding() { [[ $(cat "$WORK"/task.*.out 2>/dev/null | grep -c "holding pid") -eq 4 ]]; }
wait_until 60 "all 4 ranks holding" holding
victim_pid=$(sed -n 's/.*holding pid \([0-9]*\).*/\1/p' "$WORK/task.$victim.out")
job=$(squeue -h -u dptest -o %i | head -1)
[[ -n $victim_pid ]] || fail "no pid for rank $victim"
