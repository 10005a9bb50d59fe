#!/usr/bin/env bash
# The per-user share of the lease range counts ports, whatever --dp-ports
# asks, and a refusal names the holder's uid and counts from the lease files
# (issue 53; before, one user's three --dp-ports=8, 8 and 1 steps held all
# of a 20-port range and another user's step failed naming nobody):
#  - a 20-port range, lease_share=10: dptest's --dp-ports=8 step (9 ports)
#    runs on n1; its second --dp-ports=8 step and a --dp-ports=1 step are
#    refused before their programs start, naming dptest's uid, the step
#    holding the ports and the share; dptest2's --dp-ports=8 step starts
#    beside them; at most 10 of the range's ports are ever dptest's leases;
#  - the default share, a quarter of the range (5 ports): a --dp-ports=8
#    step is refused alone, naming lease_share=;
#  - no lease is left.
. "$(dirname "$0")/../lib.sh"
trap 'touch "$WORK/release"; site; cleanup_work' EXIT
cp "$(dirname "$0")/step_ports.py" "$WORK/"
range=$(test_port_range)

# start TAG USER N: a 1-task step on n1 with --dp-ports=N that binds its ports until $WORK/release
start() {
  local run=as_user
  [[ $2 == dptest2 ]] && run=as_other
  $run timeout 60 srun -w n1 -N1 -n1 --resv-ports=0 --dp-world=auto --dp-ports="$3" \
    /usr/bin/python3 "$WORK/step_ports.py" "$WORK" "$1" >"$WORK/$1.log" 2>&1
}
leases_of() {  # leases_of UID: how many lease files name it
  local n=0 f
  for f in "$leases"/[0-9]*; do
    [[ -e $f ]] || continue
    read -r _ _ uid _ <"$f" && [[ $uid == "$1" ]] && n=$((n + 1))
  done
  echo "$n"
}
refused() {  # refused TAG USER N: the step fails before its program, naming the share
  local rc=0
  start "$@" || rc=$?
  ((rc != 0)) || fail "$1: a --dp-ports=$3 step of $2's ran beyond the share: $(cat "$WORK/$1.log")"
  [[ ! -e $WORK/$1.bound ]] || fail "$1: its program started"
  grep -m1 'slurm-dp:' "$WORK/$1.log" || fail "$1: no slurm-dp: line: $(cat "$WORK/$1.log")"
}

use_port_leases lease_cap "ports=$range" lease_share=10
me=$(id -u dptest) other=$(id -u dptest2)
start a dptest 8 &
a=$!
wait_until 60 "dptest's --dp-ports=8 step to bind its 9 ports" test -s "$WORK/a.bound"
[[ $(leases_of "$me") == 9 ]] || fail "dptest's step holds $(leases_of "$me") leases, not 9"
line=$(refused b dptest 8)
echo "b: $line"
expect_contains "$line" "uid $me already holds 9 leased ports on this node (steps" "the second step's refusal"
expect_contains "$line" "a user may hold 10 leased ports on a node" "the second step's refusal"
expect_contains "$line" "MASTER_PORT and --dp-ports=8 (9 ports)" "the second step's refusal"
line=$(refused c dptest 1)
expect_contains "$line" "uid $me already holds 9 leased ports" "the --dp-ports=1 step's refusal"
start d dptest2 8 &
d=$!
wait_until 60 "dptest2's --dp-ports=8 step to bind its ports beside dptest's" test -s "$WORK/d.bound"
echo "leases now: uid $me $(leases_of "$me"), uid $other $(leases_of "$other") of $range"
(($(leases_of "$me") <= 10)) || fail "dptest holds $(leases_of "$me") leases, above the share of 10"
touch "$WORK/release"
wait "$a" || fail "step a failed: $(cat "$WORK/a.log")"
wait "$d" || fail "dptest2's step failed: $(cat "$WORK/d.log")"
expect_no_leases "after the steps"

rm -f "$WORK/release" "$WORK"/*.bound
use_port_leases lease_cap "ports=$range"
line=$(refused e dptest 8)
echo "e: $line"
expect_contains "$line" "a user may hold 5 leased ports on a node" "the default share's refusal"
expect_contains "$line" "raise lease_share=" "the default share's refusal"
expect_no_leases "after the refusal"
pass "leases counted in ports: dptest held 9 of a 20-port range under lease_share=10, its next --dp-ports=8 and --dp-ports=1 steps were refused naming uid $me and its 9 ports, dptest2's --dp-ports=8 step started beside it; the default share (5) refused a --dp-ports=8 step alone"
