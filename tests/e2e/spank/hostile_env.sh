#!/usr/bin/env bash
# A user who points DP_RDV_ADDR/DP_JOB_ID/DP_STEP_ID at a listener of their
# own (answering with a 100 MiB frame) cannot make root slurmstepd talk to it
#: without --dp-* the plugin ignores DP_* entirely; with --dp-*
# srun overwrites them; and where the plugin does act on them (site
# default=on, the user's srun loading no plugin) only a child running as the
# user connects, reads at most a small frame, and the step fails cleanly.
. "$(dirname "$0")/../lib.sh"
listener=""
# The listener polls for listener.stop: wait for it to see the file before the
# folder goes, or it would hold the test's output open until its own deadline.
trap 'touch "$WORK/listener.stop"; [[ -z $listener ]] || wait "$listener"; site; cleanup_work' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/big_frame_listener.py" "$WORK/"
site

if [[ ${DP_CLUSTER_MODE:-lo} == ns ]]; then
  addr=$(ip -4 -o addr show dev "dpbr$DP_CLUSTER_PORT_BASE" | awk '{print $4}' | cut -d/ -f1)
else
  addr=127.0.0.1
fi
as_user /usr/bin/python3 "$WORK/big_frame_listener.py" "$WORK" &
listener=$!
wait_until 30 "the fake daemon to listen" test -s "$WORK/listener.port"
fake="$addr:$(cat "$WORK/listener.port")"
slurmd_pids=$(cat "$DP_CLUSTER_DIR"/run/slurmd-n*.pid | tr '\n' ' ')
# The logs outlive a cluster's restarts: judge only what this test's steps wrote.
declare -A log_start
for f in "$DP_CLUSTER_DIR"/log/slurmd-n*.log; do log_start[$f]=$(($(wc -l <"$f") + 1)); done
new_log_lines() { for f in "${!log_start[@]}"; do tail -n "+${log_start[$f]}" "$f"; done; }

# Steps 0 (no --dp-*) and 1 (--dp-world) of a job whose user set DP_* to the fake.
cat >"$WORK/job.sh" <<JOB
#!/bin/bash
export DP_RDV_ADDR=$fake DP_RDV_SECRET=00 DP_JOB_ID=\$SLURM_JOB_ID DP_STEP_ID=0
srun printenv DP_RDV_ADDR >$WORK/plain.out 2>&1 || echo "step 0 failed" >>$WORK/plain.out
export DP_STEP_ID=1
srun --dp-world=auto printenv DP_RDV_ADDR >$WORK/dp.out 2>&1 || echo "step 1 failed" >>$WORK/dp.out
JOB
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/job.out" "$WORK/job.sh")
wait_until 120 "job $job to end" job_done "$job"
cat "$WORK/plain.out" "$WORK/dp.out" "$WORK/job.out"
[[ $(grep -c "^$fake\$" "$WORK/plain.out") -eq 2 ]] || fail "step 0 (no --dp-*) must leave the user's DP_RDV_ADDR as it was"
# srun's own notes ("step creation temporarily disabled" while step 0's
# nodes are released) may come between: count only the tasks' addresses.
[[ $(grep -cE '^[0-9.]+:[0-9]+$' "$WORK/dp.out") -eq 2 ]] && ! grep -q "$fake\|failed" "$WORK/dp.out" ||
  fail "step 1 (--dp-world) must run with srun's own DP_RDV_ADDR"
[[ ! -s $WORK/listener.log ]] || fail "something connected to the user's fake daemon: $(cat "$WORK/listener.log")"

# Site default=on and the user's srun loads no plugin (its own slurm.conf),
# the user writing every variable srun would (DP_OPTIONS too): slurmstepd
# acts, but only an unprivileged child connects to the fake.
site default=on resv_ports=ignore "lease_dir=$DP_CLUSTER_DIR/spank-leases-hostile"
sed 's|^PlugStackConfig=.*|PlugStackConfig=/dev/null|' "$SLURM_CONF" >"$WORK/user-slurm.conf"
chmod 644 "$WORK/user-slurm.conf"
cat >"$WORK/job2.sh" <<JOB
#!/bin/bash
export DP_RDV_ADDR=$fake DP_RDV_SECRET=00 DP_JOB_ID=\$SLURM_JOB_ID DP_STEP_ID=0 DP_OPTIONS=--dp-world=auto
SLURM_CONF=$WORK/user-slurm.conf srun -l true
echo "srun exit \$?"
JOB
start=$SECONDS
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/job2.out" "$WORK/job2.sh")
wait_until 120 "job $job to end" job_done "$job"
cat "$WORK/job2.out" "$WORK/listener.log"
grep -q '^srun exit [1-9]' "$WORK/job2.out" || fail "the step against the fake daemon did not fail"
grep -q 'slurm-dp: step [0-9.]* on node n[12]: .*oversized' "$WORK/job2.out" || fail "no slurm-dp: line naming the oversized reply"
[[ -s $WORK/listener.log ]] || fail "the helper never reached the fake daemon (test proves nothing)"
if [[ ${DP_CLUSTER_MODE:-lo} == lo ]]; then
  uid=$(id -u dptest)
  ! grep -v "uid=$uid " "$WORK/listener.log" || fail "a connection to the fake daemon was not made as dptest ($uid)"
fi
((SECONDS - start < 60)) || fail "the step took $((SECONDS - start)) s to fail"
for pid in $slurmd_pids; do kill -0 "$pid" || fail "slurmd $pid died"; done
new_log_lines | grep 'error: .*\(Segmentation\|Abort\|core dumped\)' && fail "a crash in the slurmd logs"
pass "root never talks to the user's endpoint; the unprivileged helper reads a bounded frame"
