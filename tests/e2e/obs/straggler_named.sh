#!/usr/bin/env bash
# A slow rank named for an unmodified program (issue 55): PyTorch DDP (gloo,
# env://, no libdp) on 2 nodes x 2 tasks, each step 100 ms of sleep (the
# time a GPU would compute) and 50 ms of each rank's CPU time (--work), rank
# 3 made slow twice while the step runs:
#  - sleep: rank 3 sleeps a quarter of its step's time more in each step
#    (ddp.py --slow-pct 25: 25 % more time per step);
#  - busy: a competing busy process pinned with rank 3 to one CPU, which
#    takes half of it (its 50 ms of work take about 100). Each rank
#    has a scheduling group of its own (ddp.py --own-group: this machine's
#    kernel groups a session's processes, and a node's tasks share one), as
#    if it had its own cores, and the busy process joins rank 3's.
# Each time one "slurm-dp: ... straggler: rank 3 (n2)" line on srun's stderr
# within 60 s of the slowdown's start, no other rank named; with the slowdown
# gone, "rank 3 (n2) recovered" within 60 s. dp-top shows the verdict, the
# --dp-report file each 5 s block's figures. Python 3.13+ (the testing lane):
# the line says where the others wait, from their frames; Debian 12's 3.11:
# the kernel's view alone.
#  - then one torchrun per node, worker rank 3 slow from its start: named.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/ddp_common.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
ddp_site
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
new_frames=$(/usr/bin/python3 -c 'import sys; print(sys.version_info >= (3, 13))')
lines() { grep 'slurm-dp: step .*: straggler: ' "$WORK/srun.log" || true; }

# named WHAT N PATTERN: the N-th straggler line comes within 60 s of t0 and says PATTERN.
named() {
  wait_until 60 "straggler line $2 ($1)" \
    bash -c "(( \$(grep -c 'slurm-dp: step .*: straggler: ' '$WORK/srun.log') >= $2 ))"
  line=$(lines | sed -n "${2}p")
  echo "$1: $((($(date +%s%N) - t0) / 1000000)) ms after the change: $line"
  expect_contains "$line" "$3" "$1"
}

ddp_srun_flags=(--dp-report="$WORK/report.json")
start_ddp straggler --steps 1000000 --step-ms 100 --work 50 --own-group --slow-rank 3 \
  --slow-pct 25 --slow-file "$WORK/slow" --hog-file "$WORK/hog" --until-file "$WORK/stop"
wait_ranks_ready 120

# 1. An extra sleep in rank 3's step.
touch "$WORK/slow"
t0=$(date +%s%N)
named "sleep" 1 "straggler: rank 3 (n2) — ranks 0-2 wait for it "
if [[ $new_frames == True ]]; then
  expect_contains "$line" "(in " "where the others wait (their Python frames)"
fi
top=$(as_user "$DP_TOP" --once "$job.0" 2>&1) || fail "dp-top --once failed: $top"
expect_contains "$top" "straggler at " "dp-top's view"
rm "$WORK/slow"
t0=$(date +%s%N)
named "sleep gone" 2 "straggler: rank 3 (n2) recovered: "

# 2. A competing busy process pinned with rank 3 to one CPU.
touch "$WORK/hog"
t0=$(date +%s%N)
named "busy" 3 "straggler: rank 3 (n2) — ranks 0-2 wait for it "
rm "$WORK/hog"
t0=$(date +%s%N)
named "busy gone" 4 "straggler: rank 3 (n2) recovered: "

touch "$WORK/stop"
t0=$(date +%s%N)
expect_srun_ok 60 "the step was told to stop"
(($(lines | wc -l) == 4)) || fail "other straggler lines than the four: $(lines)"
/usr/bin/python3 - "$WORK/report.json" <<'PY' || fail "the report's straggler section: $(head -c 600 "$WORK/report.json")"
import json, sys
s = json.load(open(sys.argv[1]))["straggler"]
assert s["judged_by"] == "looks", s["judged_by"]
v = s["looks"]["verdicts"]
assert [x["change"] for x in v] == ["named", "recovered", "named", "recovered"], v
assert all(x["ranks"] == [3] and x["hosts"] == ["n2"] for x in v), v
h = s["looks"]["history"]
assert len(h) >= 15 and sum(len(b["ranks"]) == 4 for b in h) >= len(h) - 3, h[-1]
print("report: %d blocks; leads named %s" % (len(h), [x["lead"] for x in v if x["change"] == "named"]))
PY
summary="rank 3 (n2) named and its recovery said, for an extra sleep and for a busy process on its CPU"
if in_lane; then
  lane_skips "the same under torchrun per node"
  pass "$summary"
  exit 0
fi

# 3. One torchrun per node, worker rank 3 slow from its start: torch's rank named.
rm -f "$WORK"/ready.* "$WORK/stop"
as_user env "${ddp_env[@]}" srun --dp-world=auto -N2 --ntasks-per-node=1 -J "straggler-torchrun-$$" \
  -o "$WORK/node%t.log" --export=ALL,USE_LIBUV=0 \
  torchrun --nproc_per_node=2 "$WORK/ddp.py" --ready-file "$WORK/ready" --steps 1000000 \
  --step-ms 100 --work 50 --slow-rank 3 --slow-pct 25 --until-file "$WORK/stop" >"$WORK/srun.log" 2>&1 &
srun_pid=$!
find_job "straggler-torchrun-$$"
wait_ranks_ready 120
t0=$(date +%s%N)
named "torchrun" 1 "straggler: rank 3 (n2) — ranks 0-2 wait for it "
touch "$WORK/stop"
expect_srun_ok 60 "the torchrun step was told to stop"
pass "$summary; under torchrun per node, worker rank 3 named"
