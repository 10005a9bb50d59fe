#!/usr/bin/env bash
# The per-user share of the lease range counts steps, not ports, and a step
# whose ports do not fit is refused naming --dp-ports and the fix:
#  - a 20-port range (a share of 5 steps per user): two steps of dptest's with
#    --dp-ports=2 (3 leases each) run at once on n1, each binding its ports;
#    counted per port, the share (5) would have refused the second;
#  - a 4-port range: the first such step runs, the second is refused before
#    its program starts, naming "--dp-ports=2 (3 ports)" and "ask for fewer
#    with --dp-ports", not "MASTER_PORT leases" or --dp-master-port;
#  - no lease is left.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
cp "$(dirname "$0")/step_ports.py" "$WORK/"
range=$(test_port_range)
lo=${range%-*}

start() {  # start TAG: a 1-task step on n1 with --dp-ports=2 that binds its ports until $WORK/release
  as_user timeout 60 srun -w n1 -N1 -n1 --resv-ports=0 --dp-world=auto --dp-ports=2 \
    /usr/bin/python3 "$WORK/step_ports.py" "$WORK" "$1" >"$WORK/$1.log" 2>&1
}

use_port_leases lease_cap "ports=$range"
start a &
a=$!
start b &
b=$!
both_bound() { [[ -s $WORK/a.bound && -s $WORK/b.bound ]]; }
wait_until 60 "both --dp-ports=2 steps to bind their ports" both_bound
touch "$WORK/release"
wait "$a" || fail "step a failed: $(cat "$WORK/a.log")"
wait "$b" || fail "step b failed: $(cat "$WORK/b.log")"
echo "range $range: step a MASTER_PORT DP_PORTS $(cut -d' ' -f1,2 "$WORK/a.0"), step b $(cut -d' ' -f1,2 "$WORK/b.0")"
expect_no_leases "after the two steps"

rm -f "$WORK/release" "$WORK"/*.bound
use_port_leases lease_cap "ports=$lo-$((lo + 3))"
start c &
c=$!
wait_until 60 "the first step to bind its ports" test -s "$WORK/c.bound"
rc=0
start d || rc=$?
touch "$WORK/release"
((rc != 0)) || fail "a second --dp-ports=2 step in a 4-port range ended 0: $(cat "$WORK/d.log")"
wait "$c" || fail "step c failed: $(cat "$WORK/c.log")"
[[ ! -e $WORK/d.bound ]] || fail "a second --dp-ports=2 step started in a 4-port range"
refusal=$(grep -m1 'slurm-dp:' "$WORK/d.log") || fail "the second step's refusal has no slurm-dp: line: $(cat "$WORK/d.log")"
echo "$refusal"
[[ $refusal == *"--dp-ports=2 (3 ports)"* && $refusal == *"ask for fewer with --dp-ports"* ]] ||
  fail "the refusal does not name --dp-ports and the fix: $refusal"
[[ $refusal != *"MASTER_PORT leases"* && $refusal != *"--dp-master-port"* ]] ||
  fail "the refusal speaks of MASTER_PORT alone: $refusal"
expect_no_leases "after the refusal"
pass "two --dp-ports=2 steps shared n1 in a 20-port range (the share counts steps); in a 4-port range the second was refused naming --dp-ports and the fix"
