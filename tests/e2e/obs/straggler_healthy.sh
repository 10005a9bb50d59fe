#!/usr/bin/env bash
# The straggler watch's controls (issue 55): three healthy unmodified PyTorch
# DDP steps (gloo, env://, 2 x 2, at once), each $secs s, never named:
#  - equal: every rank alike, 300 ms steps;
#  - jitter: each rank's 100 ms step varies by +-30 % at random, every rank alike;
#  - checkpoint: 300 ms steps, rank 0 saves for 3 s every 30 s (100 steps)
#    while the others wait in the next all-reduce.
# Equal steps of 300 ms, not 100: the three steps put 12 ranks on 2 cores
# beside the rest of CI, and at 100 ms a CI run (2026-11-28, load 27) named
# rank 0 of the equal step, 13 % ahead of the others' waiting while it
# computed 0.94x the median and slept 85 % of the time: its sleeps ended
# late, a cost per step that is a third of the share at 300 ms (largest lead
# 1.1 % there). The jitter stays at 100 ms: at 300 ms a 5 s block holds a
# third of the steps and its random lead reached 9.3 % (at 100 ms 4.8 to
# 7.6 %). The rule is unchanged: a rank really 10 % behind is named whatever
# its step time (obs.straggler_named).
# The issue's figures are 5 minutes each (DP_E2E_STRAGGLER_HEALTHY_S=300);
# CI runs 75 s (15 of the watch's 5 s blocks, 10 past its first verdict's
# earliest time, and two checkpoints) to keep its cost in seconds.
# Each ends rc 0, no straggler line on srun's stderr, none in its report,
# and its report's blocks are printed: the largest lead any rank had over
# its window (what the threshold must stay above).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/ddp_common.sh"
secs=${DP_E2E_STRAGGLER_HEALTHY_S:-75}
ddp_site
kill_pids_at_exit

healthy() {  # healthy NAME ddp.py-ARGS...: srun in the background
  local name=$1
  shift
  as_user env "${ddp_env[@]}" srun --dp-world=auto --dp-report="$WORK/$name.json" -N2 \
    --ntasks-per-node=2 -J "straggler-healthy-$name-$$" -o "$WORK/$name.%t.log" \
    --export=ALL,USE_LIBUV=0 "$PYTHON" "$WORK/ddp.py" --steps 1000000 \
    --ready-file "$WORK/$name.ready" --until-file "$WORK/$name.stop" "$@" >"$WORK/$name.srun" 2>&1 &
  pids+=($!)
}
healthy equal --step-ms 300
healthy jitter --step-ms 100 --jitter 30
healthy checkpoint --step-ms 300 --save-every 100 --save-sleep-ms 3000
ready() { for n in equal jitter checkpoint; do for r in 0 1 2 3; do [[ -f $WORK/$n.ready.$r ]] || return 1; done; done; }
wait_until 180 "every rank of the three steps ready" ready
started=$SECONDS
while ((SECONDS - started < secs)); do
  for n in equal jitter checkpoint; do
    if grep -q 'straggler: ' "$WORK/$n.srun"; then fail "a straggler was named in the healthy $n step: $(cat "$WORK/$n.srun")"; fi
  done
  sleep 1
done
for n in equal jitter checkpoint; do touch "$WORK/$n.stop"; done

i=0
for name in equal jitter checkpoint; do
  pid=${pids[i]}
  i=$((i + 1))
  wait_until 120 "the $name step to end ($(tail -3 "$WORK/$name.srun"))" bash -c "! kill -0 $pid"
  rc=0
  wait "$pid" || rc=$?
  out=$(cat "$WORK/$name.srun")
  ((rc == 0)) || fail "the healthy $name step exited $rc: $out"
  [[ $out != *"straggler: "* ]] || fail "a straggler was named in the healthy $name step: $out"
  [[ $(cat "$WORK/$name".*.log | grep -c '^ddp rank=') == 4 ]] ||
    fail "the $name step: 4 ranks' lines expected: $(cat "$WORK/$name".*.log)"
  /usr/bin/python3 - "$WORK/$name.json" "$name" "$secs" <<'PY' || fail "the $name step's report: $(head -c 400 "$WORK/$name.json")"
import json, statistics, sys
s = json.load(open(sys.argv[1]))["straggler"]
assert s["named"] is None and s["looks"]["verdicts"] == [], s["looks"]["verdicts"]
blocks = [b for b in s["looks"]["history"] if len(b.get("ranks", [])) == 4]
assert len(blocks) >= int(sys.argv[3]) // 5 - 2, len(blocks)
# Each rank's lead in each block, and the median over each window of 6: the rule's figure.
lead = {r: [] for r in range(4)}
for b in blocks:
    w = {x["rank"]: x["waiting"] for x in b["ranks"]}
    for r in w:
        lead[r].append(statistics.median([w[q] for q in w if q != r]) - w[r])
worst = max(statistics.median(v[i - 6:i]) for v in lead.values() for i in range(6, len(v) + 1))
print("%s: %d blocks, median waiting %.3f, the largest windowed lead %.3f (threshold %.2f)" % (
    sys.argv[2], len(blocks), statistics.median(b["median_waiting"] for b in blocks), worst,
    s["threshold"]))
PY
done
pass "no straggler named in $secs s of equal ranks, +-30 % jitter on every rank, and rank 0's 3 s checkpoint every 30 s"
