#!/usr/bin/env bash
# The master node's set-up fails (its MASTER_PORT range is full): every other
# node fails within 2 s with the master node's cause instead of waiting out
# port_wait, srun's last line names that cause, and srun exits non-zero
# (issues 13, 14).
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

start=$(date +%s%N)
rc=0
out=$(as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=1 -l true 2>&1) || rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
echo "srun exit $rc after ${took_ms} ms"
((rc != 0)) || fail "srun exited 0 although no task started"
# port_wait is 60 s: a node that waited for it would take over a minute.
((took_ms < 5000)) || fail "the step took ${took_ms} ms to fail (bound 5 s: launch plus 2 s); the other node waited for port_wait"
grep -q 'slurm-dp: step [0-9.]* on node n1: no free MASTER_PORT' <<<"$out" || fail "the master node's own cause is missing"
grep -q 'slurm-dp: step [0-9.]* on node n2: the master node could not set up the step: node n1: no free MASTER_PORT' <<<"$out" ||
  fail "node n2 does not name the master node's cause"
grep -q 'port_wait=)' <<<"$out" && fail "an empty port_wait= value in a message"
# srun's last line, the step's first failure, is the master node's cause too
# (its agent aborts the step with it), not a task exit that followed from it.
last=$(tail -n1 <<<"$out")
grep -q 'slurm-dp: step [0-9.]* failed: first failure: .*the master node could not set up the step: node n1: no free MASTER_PORT' <<<"$last" ||
  fail "srun's last line is not the master node's cause: $last"
kill "$holder"
holder=""
pass "master node failure reaches node n2 at once; srun exits $rc"
