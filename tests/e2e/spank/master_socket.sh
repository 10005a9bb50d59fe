#!/usr/bin/env bash
# --dp-master-socket=pass: rank 0 gets MASTER_PORT bound and listening, so
# no other process can take the port between slurm-dp's hold and the
# program's server. With leased ports (the held socket itself) and with a
# fixed port (bound just before the program): rank 0's DP_MASTER_LISTEN_FD
# listens on MASTER_PORT, no new socket can bind the port, and a 2-node world
# forms on it: PyTorch's TCPStore(master_listen_fd=) where torch takes it
# (2.3+, the Debian 13 lane), the socket itself on torch 1.13. Without the
# option nothing is handed over; a launcher step refuses it before launch.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
cp "$(dirname "$0")/master_socket.py" "$WORK/"
range=$(test_port_range)
lo=${range%-*}
use_port_leases master_socket "ports=$lo-$((lo + 15))"

run_pass() {  # run_pass WHAT SRUN-ARGS...: a 2-node step with the socket passed
  local what=$1
  shift
  rm -f "$WORK"/ok.*
  as_user timeout 120 srun -N2 --ntasks-per-node=1 --dp-world=auto --dp-master-socket=pass \
    --export=ALL,USE_LIBUV=0 "$@" /usr/bin/python3 "$WORK/master_socket.py" "$WORK/ok" \
    >"$WORK/$what.log" 2>&1 || fail "$what: the step failed: $(cat "$WORK/$what.log")"
  for r in 0 1; do
    [[ $(cat "$WORK/ok.$r" 2>/dev/null) == *" ok" ]] || fail "$what: rank $r did not finish: $(cat "$WORK/$what.log")"
  done
  mode=$(cut -d' ' -f1 "$WORK/ok.0")
  echo "$what: both ranks met on the passed socket ($mode)"
}
run_pass leased
run_pass fixed --dp-master-port=$((lo + 19))

# Not asked for: no descriptor, and the program binds the port itself.
got=$(as_user timeout 60 srun -N1 -n1 --dp-world=auto sh -c 'echo "fd=${DP_MASTER_LISTEN_FD-unset}"' 2>&1)
[[ $got == fd=unset ]] || fail "without --dp-master-socket=pass rank 0 has: $got"

# torchrun binds MASTER_PORT itself: refused before launch, naming the option.
out=$(as_user timeout 60 srun -N2 --ntasks-per-node=1 --dp-world=auto --dp-master-socket=pass \
  torchrun --nproc_per_node=1 "$WORK/master_socket.py" 2>&1) && fail "a launcher step took the passed socket"
[[ $out == *"--dp-master-socket=pass: torchrun binds MASTER_PORT itself"* ]] ||
  fail "the launcher refusal does not name the option: $out"
pass "rank 0 got MASTER_PORT listening and held (leased and fixed ports; the world met via $mode); not passed unless asked; refused for torchrun"
