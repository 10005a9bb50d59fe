#!/usr/bin/env bash
# The master node's tasks run their task_init at once, each holding a copy of
# the hold on MASTER_PORT (spank/step_port_hold.hpp) until slurm-dp's
# task_init drops it. A stand-in plugin before slurm-dp's
# (late_task_plugin.c) keeps tasks 1-3 out of theirs for 1.5 s: rank 0's
# program, an unmodified bind of MASTER_PORT as TCPStore does, still binds
# it, because rank 0 waits for the other copies to go before its exec (it
# failed with "Address already in use" before). Leased and Slurm-reserved
# ports alike.
. "$(dirname "$0")/../lib.sh"
conf=$DP_CLUSTER_DIR/etc/plugstack.conf.d/late-task.conf
cleanup() {
  rm -f "$conf"
  site
  cleanup_work
}
trap cleanup EXIT
use_port_leases late
echo "required $DP_TEST_LATE_TASK_PLUGIN" >"$conf"
chmod 644 "$conf"
touch "$WORK/release"  # rank 0 binds, records the port and ends

# step TAG: 4 tasks on n1, tasks 1-3 1.5 s late to slurm-dp's task_init.
step() {
  as_user env DP_TEST_LATE_TASK_MS=1500 timeout 60 srun -w n1 -N1 -n4 --dp-world=auto \
    /usr/bin/python3 "$WORK/bind_master_port.py" "$WORK" "$1" >"$WORK/$1.log" 2>&1 ||
    fail "$1: the step failed with late tasks: $(cat "$WORK/$1.log")"
  [[ -s $WORK/$1.port ]] || fail "$1: rank 0 did not bind MASTER_PORT: $(cat "$WORK/$1.log")"
}
step leased
expect_no_leases "after the leased step"
site  # Slurm's reserved ports (MpiParams=ports)
step reserved
pass "rank 0 binds MASTER_PORT (leased: $(cut -d' ' -f1 "$WORK/leased.port"), reserved: $(cut -d' ' -f1 "$WORK/reserved.port")) although tasks 1-3 came 1.5 s late to slurm-dp's task_init"
