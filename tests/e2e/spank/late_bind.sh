#!/usr/bin/env bash
# Nothing to take between rank 0's exec and its program's bind. Another tenant
# (dptest2) probes the master node's lease range and Slurm's reserved range in
# a loop (bind with SO_REUSEADDR and SO_REUSEPORT, listen, answer, close: every
# port within ~50 ms) while steps start whose rank 0 binds its ports 1 s after
# its program starts (later than the hold of earlier releases, which ended at
# exec), with leased ports (20, a share of 5 steps per user) and with
# Slurm-reserved ports (15), 5 steps at a time (each its own ports):
#  - a --dp-master-socket=share --dp-ports=2 program: a JAX-style coordinator
#    (a real gRPC server where python3-grpcio is installed, else a socket with
#    SO_REUSEPORT, as gRPC binds) on JAX_COORDINATOR_ADDRESS and servers with
#    SO_REUSEPORT on both DP_PORTS: with leased and with reserved ports, 10 of
#    10 steps bind all three, rank 1 on n2 reaches rank 0's servers on each,
#    and the probe never binds one from rank 0's start until it has served;
#  - the coordinator of a --dp-store=step step, its own port held as the
#    job's user until the program listens by default (leased): 10 of 10;
#  - the documented limit: a --dp-ports=2 program that binds without
#    SO_REUSEPORT (as PyTorch's TCPStore, Ray, etcd and NATS do) keeps the
#    default hold, which ends at exec, and the probe binds one of its ports
#    between rank 0's start and its bind; under share the same program fails
#    at once with "address already in use" (leased ports; the kernel treats
#    reserved ones alike);
#  - the probe never answered a connection: no rank reached a stranger.
. "$(dirname "$0")/../lib.sh"
job="" probe_job=""
cleanup() {
  touch "$WORK/squatter.stop" 2>/dev/null || true
  [[ -z $probe_job ]] || scancel "$probe_job" 2>/dev/null || true
  end_job_and_site
}
trap cleanup EXIT
cp "$(dirname "$0")/late_bind.py" "$(dirname "$0")/squatter.py" "$WORK/"
range=$(test_port_range)
resv=$(scontrol show config | sed -n 's/^MpiParams *= *ports=//p')
[[ $resv =~ ^[0-9]+-[0-9]+$ ]] || fail "the cluster has no MpiParams=ports range: '$resv'"
# Five steps of 3 ports at once: more than the default share of the range (a
# quarter, 5 ports; the share is lease_cap's subject).
use_port_leases late_bind "ports=$range" lease_share=20
if /usr/bin/python3 -c 'import grpc' 2>/dev/null; then coordinator="a gRPC server"; else
  coordinator="a socket with SO_REUSEPORT (no python3-grpcio here)"
fi

probe_job=$(as_other sbatch --parsable -w n1 -N1 -n1 -o "$WORK/probe.out" \
  --wrap "exec /usr/bin/python3 $WORK/squatter.py --probe $range,$resv $WORK")
wait_until 60 "dptest2's probe to sweep the ranges on n1" test -e "$WORK/probe.ready"
job=$(as_user sbatch --parsable -w n1,n2 -N2 --ntasks-per-node=1 -o "$WORK/job.out" --wrap "exec sleep 600")
running() { [[ $(job_state "$job") == RUNNING ]]; }
wait_until 60 "job $job to run" running

step() {  # step TAG DELAY WHICH HOW SRUN-ARGS...: one step of the job; "TAG STATUS" to $WORK/steps
  local tag=$1 delay=$2 which=$3 how=$4 rc=0
  shift 4
  as_user timeout 120 srun --jobid="$job" --overlap "$@" --dp-world=auto \
    /usr/bin/python3 "$WORK/late_bind.py" "$WORK" "$tag" "$delay" "$which" "$how" >"$WORK/$tag.log" 2>&1 || rc=$?
  echo "$tag $rc" >>"$WORK/steps"
}
no_steps() { [[ -z $(squeue -h -s -j "$job" -o %i | grep -v '\.\(batch\|extern\)$') ]]; }
no_leases() { [[ -z $(find "$leases" -name '[0-9]*' 2>/dev/null) ]]; }
waves() {  # waves NAME AT-ONCE WHICH HOW SRUN-ARGS...: 10 steps on n1 and n2, AT-ONCE at a time
  local name=$1 at_once=$2 i n=0 pids
  shift 2
  local t0=$SECONDS
  while ((n < 10)); do
    pids=()
    for ((i = 0; i < at_once; i++)); do step "$name.$((n + i))" 1 "$@" -N2 --ntasks-per-node=1 & pids+=($!); done
    # By PID: a bare wait also waits for lib.sh's output tee, which never ends.
    wait "${pids[@]}"
    n=$((n + at_once))
    # Their leases and Slurm's reserved ports are free for the next ones.
    wait_until 60 "the steps of $name to end" no_steps
    wait_until 60 "the leases of $name to go" no_leases
  done
  echo "$name: 10 steps, $at_once at a time, in $((SECONDS - t0)) s"
}
tally() {  # tally NAME: how many of its 10 steps got every port, each line said
  local n=0 f tag
  for f in "$WORK/$1".*.rank0; do
    tag=$(basename "$f" .rank0)
    if /usr/bin/python3 "$WORK/late_bind.py" --check "$WORK" "$tag" protected >>"$WORK/$1.verdicts" &&
      grep -qx "$tag 0" "$WORK/steps"; then n=$((n + 1)); fi
  done
  echo "$n"
}

waves leased-jax 5 coordinator reuseport --resv-ports=0 --dp-store=step
waves leased-share 5 all reuseport --resv-ports=0 --dp-master-socket=share --dp-ports=2
step leased-exposed 1 ports plain --resv-ports=0 -w n1 -N1 -n1 --dp-ports=2
step leased-refused 0 ports plain --resv-ports=0 -w n1 -N1 -n1 --dp-master-socket=share --dp-ports=1
wait_until 60 "the last leased steps to end" no_steps
site # Slurm's reserved ports (the cluster's MpiParams=ports)
waves reserved-share 5 all reuseport --resv-ports=3 --dp-master-socket=share --dp-ports=2

touch "$WORK/squatter.stop"
wait_until 30 "dptest2's probe to report" test -s "$WORK/probe.report"
read -r answered sweeps <"$WORK/probe.report"
echo "probe: $answered $sweeps"
summary=""
for name in leased-jax leased-share reserved-share; do
  got=$(tally "$name")
  head -n 1 "$WORK/$name.verdicts"
  [[ $got == 10 ]] || fail "$name: $got of 10 steps got their ports: $(grep -v ' 0$' "$WORK/steps" || true)
$(cat "$WORK/$name.verdicts")
$(cat "$WORK/$name".0.log)"
  summary+=" $name 10/10"
done
[[ $answered == accepted=0 ]] || fail "a rank reached dptest2's probe: $answered"
exposed=$(/usr/bin/python3 "$WORK/late_bind.py" --check "$WORK" leased-exposed exposed) ||
  fail "the documented limit was not shown: $exposed ($(cat "$WORK/leased-exposed.log"))"
echo "the limit, without SO_REUSEPORT: $exposed"
refused=$(/usr/bin/python3 "$WORK/late_bind.py" --check "$WORK" leased-refused refused) ||
  fail "under share a bind without SO_REUSEPORT was not refused: $refused"
echo "under share, without SO_REUSEPORT: $refused"
! grep -q '^leased-refused 0$' "$WORK/steps" || fail "the refused program's step ended 0"
pass "with dptest2 probing n1, late binders got their ports:$summary (coordinator: $coordinator); a binder without SO_REUSEPORT is exposed from exec to its bind under the default and refused under share, as documented"
