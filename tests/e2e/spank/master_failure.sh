#!/usr/bin/env bash
# The master node's set-up fails (its MASTER_PORT range is full): every other
# node fails within 2 s with the master node's cause instead of waiting out
# port_wait, srun's last line names that cause, and srun exits non-zero.
# The times are each node's own: slurmstepd's log lines
# (millisecond stamps) for the master's cause and for every task's failed
# task_init, on every node.
. "$(dirname "$0")/../lib.sh"
holder=""
cleanup() {
  [[ -n $holder ]] && kill "$holder" 2>/dev/null
  site
  cleanup_work
}
trap cleanup EXIT
leases=$DP_CLUSTER_DIR/spank-leases-full
range=$(test_port_range)
lo=${range%-*}
hi=$((lo + 2))
site resv_ports=ignore "lease_dir=$leases" "ports=$lo-$hi" port_wait=60

# Live leases of a running root process fill the range on every node.
sleep 600 &
holder=$!
mkdir -p "$leases"
chmod 700 "$leases"
start_time=$(awk '{print $22}' "/proc/$holder/stat")
for ((p = lo; p <= hi; p++)); do echo "$holder $start_time 0 full.0" >"$leases/$p"; done

# The node logs live as long as the cluster: only lines written from here on count.
declare -A log_from
for n in n1 n2; do log_from[$n]=$(($(wc -l <"$DP_CLUSTER_DIR/log/slurmd-$n.log") + 1)); done
new_log_lines() { tail -n "+${log_from[$1]}" "$DP_CLUSTER_DIR/log/slurmd-$1.log"; }
# "[2026-11-22T15:35:50.168] [1.0] error: ..." -> milliseconds since the epoch.
# A step's tasks write the log at once and a line may hold another's start
# ("[2026-11-25T06:55[2026-11-25T06:55:53.059] ..."): its last whole stamp
# counts; none (the rest of a broken line) fails.
log_ms() {
  local stamp
  stamp=$(grep -oE '[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}' <<<"$1" | tail -n1)
  [[ -n $stamp ]] && date -d "$stamp" +%s%3N
}

start=$(date +%s%N)
rc=0
out=$(as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 -l true 2>&1) || rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
echo "srun exit $rc after ${took_ms} ms"
((rc != 0)) || fail "srun exited 0 although no task started"
# port_wait is 60 s: a node that waited for it would take over a minute. The
# tight bound is each node's own (2 s, from the logs below); srun's wall time
# also holds its allocation and start on a loaded machine.
((took_ms < 30000)) || fail "the step took ${took_ms} ms to fail (bound 30 s, half of port_wait); the other node waited for port_wait"
grep -q 'slurm-dp: step [0-9.]* on node n1: no free MASTER_PORT' <<<"$out" || fail "the master node's own cause is missing"
grep -q 'slurm-dp: step [0-9.]* on node n2: the master node could not set up the step: node n1: no free MASTER_PORT' <<<"$out" ||
  fail "node n2 does not name the master node's cause"
grep -q 'port_wait=)' <<<"$out" && fail "an empty port_wait= value in a message"

# Each node's tasks fail within 2 s of the master node's own failure.
step=$(grep -om1 'slurm-dp: step [0-9]*\.[0-9]*' <<<"$out" | cut -d' ' -f3)
cause=$(new_log_lines n1 | grep -m1 "\] \[$step\] error: slurm-dp: step $step on node n1: no free MASTER_PORT") ||
  fail "n1's log has no line of the master node's cause for step $step"
master_ms=$(log_ms "$cause") || fail "no time stamp in n1's line of the master node's cause: $cause"
for n in n1 n2; do
  failed=$(new_log_lines "$n" | grep "\] \[$step\] error: spank: required plugin spank_dp.so: task_init() failed") || true
  # A task Slurm ended first (its node's other task failed, the step was
  # aborted) never reaches its own task_init failure: srun names it ended.
  count=$(grep -c . <<<"$failed")
  ((count == 2)) || { ((count == 1)) && grep -qE "error: $n: tasks? [0-9]+: (Terminated|Killed)" <<<"$out"; } ||
    fail "node $n's log should show its 2 tasks failing in task_init (or one, the other ended by Slurm): $failed"
  timed=0
  while read -r line; do
    at=$(log_ms "$line") || { echo "node $n: a line another task's write broke: $line"; continue; }
    timed=$((timed + 1))
    late=$((at - master_ms))
    echo "node $n: a task failed ${late} ms after the master node's failure"
    ((late <= 2000)) || fail "node $n: a task failed ${late} ms after the master node (bound 2000 ms)"
  done <<<"$failed"
  ((timed > 0)) || fail "node $n: no task_init failure with a whole time stamp: $failed"
done
# srun's last line, the step's first failure, is the master node's cause too
# (its agent aborts the step with it), not a task exit that followed from it.
last=$(tail -n1 <<<"$out")
grep -q 'slurm-dp: step [0-9.]* failed: first failure: .*the master node could not set up the step: node n1: no free MASTER_PORT' <<<"$last" ||
  fail "srun's last line is not the master node's cause: $last"
kill "$holder"
holder=""
pass "master node failure reaches every node's tasks within 2 s; srun exits $rc"
