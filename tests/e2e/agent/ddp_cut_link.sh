#!/usr/bin/env bash
# Namespace mode: n2's network link (the veth dp-cluster made for it) is cut
# while an unmodified PyTorch DDP script runs on 2 nodes x 2 tasks. srun exits
# non-zero naming n2 within the silence bound + 10 s, through slurmctld,
# without waiting for Slurm's node timeout. The link is brought back up.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
n2_link
bound=10
site heartbeat_timeout=$bound kill_grace=2

start_ddp cutlink --steps 100000 --step-ms 100
wait_ranks_ready 120
cut_n2
t0=$(date +%s%N)
expect_node_verdict $((bound + 30)) "$bound" n2 2-3
restore
kill "$srun_pid" 2>/dev/null || true
wait_until 120 "job $job to end" job_done "$job"
pass "srun exited $rc $ms ms after n2's link was cut (silence bound $bound s), naming n2"
