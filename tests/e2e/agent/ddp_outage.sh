#!/usr/bin/env bash
# Namespace mode, the site's heartbeat_timeout=30: n2's network link (the veth
# dp-cluster made for it) goes down while an unmodified PyTorch DDP script
# runs on 2 nodes x 2 tasks.
#  1. Down 10 s, then up: the same program without slurm-dp (the control) and
#     with --dp-world=auto both run on to rc 0, every rank with the same
#     parameters; n2's agent said hello again on a new connection and kept
#     its ranks' places (the daemon says so under --dp-verbose).
#  2. Down and left down (45 s at most): srun exits non-zero within 30 s + 10 s
#     of the cut, naming n2. The link is brought back up. (Not in the lanes.)
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
n2_link
bound=30
site heartbeat_timeout=$bound kill_grace=2

# n2 off the network for SECS, srun still running throughout; then back.
outage() {
  local secs=$1 from
  from=$(date +%s%N)
  cut_n2
  while (($(date +%s%N) - from < secs * 1000000000)); do
    kill -0 "$srun_pid" 2>/dev/null || fail "srun ended during a $secs s outage (bound $bound s): $(cat "$WORK/srun.log")"
    sleep 0.1 # the outage under test, not a synchronisation
  done
  restore
}

# A 10 s outage right after the first all-reduce; the run then needs n2 again.
survives_outage() {  # survives_outage START-FUNCTION NAME
  rm -f "$WORK"/ready.* "$WORK"/rank*.log
  "$1" "$2" --steps 30 --step-ms 100
  wait_ranks_ready 120
  outage 10
  t0=$(date +%s%N)
  expect_srun_ok 120 "$2: a 10 s outage of n2 (bound $bound s)"
  same_params "$2"
  wait_until 60 "job $job to end" job_done "$job"
  echo "$2: rc 0 after a 10 s outage of n2, $ms ms after it ended"
}

survives_outage start_plain_ddp plain
ddp_srun_flags=(--dp-verbose)
survives_outage start_ddp dp
expect_contains "$(cat "$WORK/srun.log")" "the node agent on host n2 (ranks 2-3) reconnected after an outage" \
  "the daemon's log (--dp-verbose)"
ddp_srun_flags=()
if in_lane; then
  lane_skips "the link left cut (a silent node is named in this lane by agent.ddp_freeze_node)"
  pass "a 10 s outage of n2 survived (rc 0, as without slurm-dp; n2's agent reconnected)"
  exit 0
fi

rm -f "$WORK"/ready.* "$WORK"/rank*.log
start_ddp outage --steps 100000 --step-ms 100
wait_ranks_ready 120
cut_n2
t0=$(date +%s%N)
expect_node_verdict 45 "$bound" n2 2-3
restore
kill "$srun_pid" 2>/dev/null || true
wait_until 120 "job $job to end" job_done "$job"
pass "a 10 s outage of n2 survived (rc 0, as without slurm-dp; n2's agent reconnected); left cut, srun exited $rc $ms ms after the cut naming n2 (bound $bound s)"
