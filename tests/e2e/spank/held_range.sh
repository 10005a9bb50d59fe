#!/usr/bin/env bash
# Another tenant (dptest2) holds every port of a small MASTER_PORT lease range
# on the master node: the step fails within 10 s with a line that says the
# range is held and names the holder's uid, instead of "no free port", and
# names it whole on a busy node (9000 listeners on other ports, more than the
# 8192 sockets root reads: the kernel leaves them out of its answer). The
# same for --dp-ports and for Slurm's reserved ports (the cluster's MpiParams=ports range), which
# slurm-dp binds on the master node like a leased one.
. "$(dirname "$0")/../lib.sh"
job="" resv_job="" busy_pid=""
cleanup() {
  [[ -z $busy_pid ]] || kill "$busy_pid" 2>/dev/null || true
  if [[ -n $resv_job && ! -s $WORK/resv/held.ready ]]; then  # why the holder never held
    echo "job $resv_job: $(job_state "$resv_job"); $(cat "$WORK/resv/held.out" 2>&1)" >&2
  fi
  for j in $job $resv_job; do scancel "$j" 2>/dev/null || true; done
  site
  cleanup_work
}
trap cleanup EXIT
cp "$(dirname "$0")/held_range.py" "$WORK/"
lo=$(test_port_range)
lo=${lo%-*}
hi=$((lo + 3))
use_port_leases held "ports=$lo-$hi"

job=$(as_other sbatch --parsable -w n1 -N1 -n1 -o "$WORK/held.out" \
  --wrap "exec /usr/bin/python3 $WORK/held_range.py $lo $hi $WORK")
wait_until 60 "dptest2 to hold ports $lo-$hi on n1" test -s "$WORK/held.ready"
# n1's network namespace (the host's on the loopback cluster) made busy.
nsenter --net="/proc/$(tr -dc 0-9 <"$DP_CLUSTER_DIR/run/slurmd-n1.pid")/ns/net" \
  /usr/bin/python3 "$WORK/held_range.py" --busy 9000 "$WORK" &
busy_pid=$!
wait_until 60 "9000 listeners on n1" test -s "$WORK/busy.ready"

start=$(date +%s%N)
rc=0
out=$(as_user timeout 60 srun -w n1 -N1 -n2 --dp-world=auto true 2>&1) || rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
((rc != 0)) || fail "the step started although every port of $lo-$hi is held"
((took_ms < 10000)) || fail "the step took ${took_ms} ms to fail (limit 10 s)"
[[ $out == *"every port of $lo-$hi on the master node is held"*"uid $(id -u dptest2) (4 ports)"*"none left for MASTER_PORT"* ]] ||
  fail "the failure does not say the range is held by uid $(id -u dptest2)"
[[ $out != *"too long to read whole"* ]] || fail "9000 listeners outside $lo-$hi cut the read of its holders"
kill "$busy_pid"
busy_pid=""

# --dp-ports: one more port in the range, free, takes MASTER_PORT; the step's
# next port finds the rest held, and the step fails as quickly, naming them.
use_port_leases held "ports=$lo-$((hi + 1))" lease_share=3  # (the share is lease_cap's subject)
start=$(date +%s%N)
rc=0
with_ports=$(as_user timeout 60 srun -w n1 -N1 -n2 --dp-world=auto --dp-ports=2 true 2>&1) || rc=$?
ports_ms=$((($(date +%s%N) - start) / 1000000))
echo "$with_ports"
((rc != 0)) || fail "a --dp-ports step started although all but one port of $lo-$((hi + 1)) is held"
((ports_ms < 10000)) || fail "the --dp-ports step took ${ports_ms} ms to fail (limit 10 s)"
[[ $with_ports == *"every port of $lo-$((hi + 1)) on the master node is held"*"uid $(id -u dptest2) (4 ports)"*"none left for the step's MASTER_PORT and --dp-ports=2 (3 ports)"*"ask for fewer with --dp-ports"* ]] ||
  fail "the --dp-ports failure does not say the range is held by uid $(id -u dptest2)"
expect_no_leases "after the --dp-ports step failed"

# Where the site allows it, the step starts on ports the OS chose instead.
use_port_leases held "ports=$lo-$hi" port_fallback=os lease_share=3
ports=$(as_user timeout 60 srun -w n1 -N1 -n1 --dp-world=auto --dp-ports=2 \
  sh -c 'echo "$MASTER_PORT,$DP_PORTS"' 2>&1) || fail "with port_fallback=os the step failed: $ports"
port=${ports%%,*}
[[ $ports =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] || fail "with port_fallback=os the ports are '$ports'"
for p in ${ports//,/ }; do
  ((p < lo || p > hi)) || fail "with port_fallback=os port $p of '$ports' is in the held range"
done

# Slurm reserves its ports without looking: the step's reserved port, held by
# dptest2 on the master node, fails it as quickly, naming the uid.
resv=$(scontrol show config | sed -n 's/^MpiParams *= *ports=//p')
mkdir -m 777 "$WORK/resv"
resv_job=$(as_other sbatch --parsable -w n1 -N1 -n1 -o "$WORK/resv/held.out" \
  --wrap "exec /usr/bin/python3 $WORK/held_range.py ${resv%-*} ${resv#*-} $WORK/resv")
resv_started() { test -s "$WORK/resv/held.ready" || job_done "$resv_job"; }
wait_until 60 "dptest2 to hold the reserved ports $resv on n1" resv_started
[[ -s $WORK/resv/held.ready ]] || fail "dptest2's holder of $resv ended early"
site
start=$(date +%s%N)
rc=0
out=$(as_user timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 --dp-world=auto true 2>&1) || rc=$?
resv_ms=$((($(date +%s%N) - start) / 1000000))
echo "$out"
((rc != 0)) || fail "the step started although dptest2 holds its reserved MASTER_PORT"
((resv_ms < 10000)) || fail "the step took ${resv_ms} ms to fail (limit 10 s)"
[[ $out == *"which Slurm reserved for this step (SLURM_STEP_RESV_PORTS), is bound by another process on the master node (held by uid $(id -u dptest2))"* ]] ||
  fail "the failure does not say the reserved port is held by uid $(id -u dptest2)"
pass "a range held by dptest2 fails the step in ${took_ms} ms naming 'held' and uid $(id -u dptest2), a --dp-ports step in ${ports_ms} ms; with port_fallback=os it starts on ports $ports; a held reserved port fails it in ${resv_ms} ms naming the uid"
