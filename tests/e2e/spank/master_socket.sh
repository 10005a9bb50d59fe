#!/usr/bin/env bash
# MASTER_PORT is held from the step's set-up until rank 0's exec, in every
# mode, with another tenant (dptest2) probing the master node's lease range
# and Slurm's reserved range in a loop (bind, listen, answer, close):
#  - without --dp-master-socket: leased and Slurm-reserved ports are never
#    bound by the probe during rank 0's task prolog (run after slurm-dp's
#    task_init, just before exec), though the probe binds them before;
#  - --dp-master-socket=pass: rank 0 gets MASTER_PORT bound and listening, so
#    no other process can take the port between slurm-dp's hold and the
#    program's server. With leased, Slurm-reserved and fixed ports: rank 0's
#    DP_MASTER_LISTEN_FD listens on MASTER_PORT, no new socket can bind the
#    port, and a 2-node world forms on it: PyTorch's TCPStore(master_listen_fd=)
#    where torch takes it (2.3+, the Debian 13 lane), the socket itself on
#    torch 1.13;
#  - the probe never answered a connection: no rank reached a stranger.
# Without the option nothing is handed over; a launcher step refuses it
# before launch.
. "$(dirname "$0")/../lib.sh"
probe_job=""
cleanup() {
  touch "$WORK/squatter.stop" 2>/dev/null || true
  [[ -z $probe_job ]] || scancel "$probe_job" 2>/dev/null || true
  site
  cleanup_work
}
trap cleanup EXIT
cp "$(dirname "$0")/master_socket.py" "$(dirname "$0")/squatter.py" "$WORK/"
range=$(test_port_range)
lo=${range%-*}
resv=$(scontrol show config | sed -n 's/^MpiParams *= *ports=//p')
[[ $resv =~ ^[0-9]+-[0-9]+$ ]] || fail "the cluster has no MpiParams=ports range: '$resv'"
use_port_leases master_socket "ports=$lo-$((lo + 15))"

probe_job=$(as_other sbatch --parsable -w n1 -N1 -n1 -o "$WORK/probe.out" \
  --wrap "exec /usr/bin/python3 $WORK/squatter.py --probe $lo-$((lo + 15)),$resv $WORK")
wait_until 60 "dptest2's probe to sweep the ranges on n1" test -e "$WORK/probe.ready"

# Rank 0's task prolog runs after slurm-dp's task_init and before exec: for
# one second there, MASTER_PORT must still be held.
cat >"$WORK/prolog.sh" <<PROLOG
#!/bin/bash
if [[ \$SLURM_PROCID == 0 ]]; then
  t0=\$(date +%s.%N); sleep 1
  echo "\$MASTER_PORT \$t0 \$(date +%s.%N)" >"$WORK/window"
fi
PROLOG
chmod 755 "$WORK/prolog.sh"
held_to_exec() {  # held_to_exec WHAT SRUN-ARGS...: a 2-node step; rank 0's window goes to $WORK/windows
  local what=$1
  shift
  rm -f "$WORK/window"
  as_user timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 --dp-world=auto \
    --task-prolog="$WORK/prolog.sh" "$@" true >"$WORK/$what.log" 2>&1 ||
    fail "$what: the step failed: $(cat "$WORK/$what.log")"
  [[ -s $WORK/window ]] || fail "$what: rank 0's task prolog left no window"
  echo "$what $(cat "$WORK/window")" >>"$WORK/windows"
}

run_pass() {  # run_pass WHAT SRUN-ARGS...: a 2-node step with the socket passed
  local what=$1
  shift
  rm -f "$WORK"/ok.*
  as_user timeout 120 srun -w n1,n2 -N2 --ntasks-per-node=1 --dp-world=auto --dp-master-socket=pass \
    --export=ALL,USE_LIBUV=0 "$@" /usr/bin/python3 "$WORK/master_socket.py" "$WORK/ok" \
    >"$WORK/$what.log" 2>&1 || fail "$what: the step failed: $(cat "$WORK/$what.log")"
  for r in 0 1; do
    [[ $(cat "$WORK/ok.$r" 2>/dev/null) == *" ok" ]] || fail "$what: rank $r did not finish: $(cat "$WORK/$what.log")"
  done
  mode=$(cut -d' ' -f1 "$WORK/ok.0")
  echo "$what: both ranks met on the passed socket ($mode)"
}
held_to_exec leased
run_pass leased
run_pass fixed --dp-master-port=$((lo + 19))
site  # Slurm's reserved ports (the cluster's MpiParams=ports)
held_to_exec reserved
run_pass reserved

touch "$WORK/squatter.stop"
wait_until 30 "dptest2's probe to report" test -s "$WORK/probe.report"
read -r answered sweeps <"$WORK/probe.report"
echo "probe: $answered $sweeps"
[[ $answered == accepted=0 ]] || fail "a rank reached dptest2's listener: $answered"
while read -r what port t0 t1; do
  # Runs "PORT FIRST LAST" of successful binds: none may meet rank 0's window.
  during=$(awk -v p="$port" -v a="$t0" -v b="$t1" '$1 == p && $2 <= b && $3 >= a' "$WORK/probe.report")
  [[ -z $during ]] || fail "$what: dptest2 bound MASTER_PORT $port while rank 0 was still to exec: $during"
  before=$(awk -v p="$port" -v a="$t0" '$1 == p && $3 < a' "$WORK/probe.report")
  [[ -n $before ]] || fail "$what: the probe never bound port $port before the step: it proves nothing"
  echo "$what: MASTER_PORT $port held through rank 0's last second before exec (the probe bound it before)"
done <"$WORK/windows"

# Not asked for: no descriptor, and the program binds the port itself.
got=$(as_user timeout 60 srun -N1 -n1 --dp-world=auto sh -c 'echo "fd=${DP_MASTER_LISTEN_FD-unset}"' 2>&1)
[[ $got == fd=unset ]] || fail "without --dp-master-socket=pass rank 0 has: $got"

# torchrun binds MASTER_PORT itself: refused before launch, naming the option.
out=$(as_user timeout 60 srun -N2 --ntasks-per-node=1 --dp-world=auto --dp-master-socket=pass \
  torchrun --nproc_per_node=1 "$WORK/master_socket.py" 2>&1) && fail "a launcher step took the passed socket"
[[ $out == *"--dp-master-socket=pass: torchrun binds MASTER_PORT itself"* ]] ||
  fail "the launcher refusal does not name the option: $out"
pass "MASTER_PORT held to rank 0's exec (leased, reserved) against dptest2's probe; rank 0 got it listening and held (leased, reserved, fixed; the world met via $mode) and no rank reached the probe; not passed unless asked; refused for torchrun"
