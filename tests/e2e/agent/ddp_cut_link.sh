#!/usr/bin/env bash
# Namespace mode: n2's network link (the veth dp-cluster made for it) is cut
# while an unmodified PyTorch DDP script runs on 2 nodes x 2 tasks. srun exits
# non-zero naming n2 within the silence bound + 10 s, through slurmctld,
# without waiting for Slurm's node timeout. The link is brought back up.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
[[ $DP_CLUSTER_MODE == ns ]] || fail "needs the namespace cluster (one network stack per node)"
bound=10
site heartbeat_timeout=$bound kill_grace=2
veth=dpv${DP_CLUSTER_PORT_BASE}n2
ip link show "$veth" >/dev/null || fail "no link $veth: dp-cluster names n2's veth otherwise"
cut=0
restore() { ((cut == 0)) || ip link set "$veth" up; cut=0; }
trap 'restore; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

start_ddp cutlink --steps 100000 --step-ms 20
wait_ranks_ready 120
ip link set "$veth" down
cut=1
t0=$(date +%s%N)
wait_srun $((bound + 30))
cat "$WORK/srun.log"
restore
((ms >= 0)) || fail "srun still ran $((bound + 30)) s after n2's link was cut"
((rc != 0)) || fail "srun exited 0 although n2 was cut off"
((ms <= (bound + 10) * 1000)) || fail "srun exited $ms ms after the cut; the bound is $bound s + 10 s"
last=$(last_line)
expect_contains "$last" "the node agent on host n2 (ranks 2-3)" "srun's last line"
[[ $last == *"verdict node_silent"* || $last == *"verdict node_lost"* ]] || fail "srun's last line names no node verdict: $last"
kill "$srun_pid" 2>/dev/null || true
wait_until 120 "job $job to end" job_done "$job"
pass "srun exited $rc $ms ms after n2's link was cut (silence bound $bound s), naming n2"
