#!/usr/bin/env bash
# A rank slowed on purpose (40 ms more "compute" per step) is the straggler:
# dp-top (text and --json), run by the step's user against the running step,
# puts it first among the slowest ranks, and so does the --dp-report file at
# the step's end. The straggler watch names it on srun's stderr by libdp's
# collective counters, and the node agents' looks at the same ranks name the
# same rank (the report's straggler.collectives and straggler.looks: the two
# sources agree on one step; 900 steps, about 40 s, for their 30 s window).
# Another user's dp-top is refused, and cannot even reach the step's socket.
. "$(dirname "$0")/common.sh"
site

slow=2
as_user timeout 180 srun --dp-world=auto -N2 --ntasks-per-node=2 --dp-report=report-%j.%s.json \
  -o "$WORK/rank%t.log" "$DP_OBS_WORKER" 900 --slow $slow 40 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
# 50 steps, then at least one heartbeat (1 s) carries them.
wait_log "$WORK/rank0.log" '^ITER 50$' 60
job=$(squeue -h -u dptest -o %i | head -n1)
[[ -n $job ]] || fail "no running job of dptest"

# Another user: refused by name, and the socket folder is closed to them.
(flock 9; id dpother >/dev/null 2>&1 || useradd --no-create-home --shell /bin/bash dpother) 9>/run/lock/dp-cluster-useradd.lock
other=$(cd "$WORK" && runuser -u dpother -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin "$DP_TOP" --once "$job.0" 2>&1) \
  && fail "dp-top of another user's step succeeded: $other"
[[ $other == *"belongs to uid $(id -u dptest), not to you"* ]] || fail "dp-top did not refuse another user's step by name: $other"
sock=$(ls /tmp/slurm-dp-"$(id -u dptest)"/"$job".0.*.sock) || fail "no socket of step $job.0"
# Exit 3: refused by the folder's permissions, not for another reason.
rc=0
runuser -u dpother -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(3)' "$sock" || rc=$?
((rc == 3)) || fail "another user's connect to $sock was not refused for permission (exit $rc)"

# Waiting on a condition: dp-top shows every rank with progress.
top_ready() { as_user "$DP_TOP" --once "$job.0" 2>&1 | grep -qE '^3 +n2 .* [0-9]+\.[0-9]+ +[0-9]'; }
wait_until 20 "dp-top to show rank 3's progress" top_ready

text=$(as_user "$DP_TOP" --once "$job.0" 2>&1) || fail "dp-top failed: $text"
echo "$text"
for r in 0 1 2 3; do grep -qE "^$r +n[12] " <<<"$text" || fail "dp-top shows no line for rank $r: $text"; done
grep -qE "^slowest ranks .*: rank $slow \(host n2\) waits" <<<"$text" || fail "dp-top does not put rank $slow first: $text"
grep -q '^start-up: launch+hello' <<<"$text" || fail "dp-top shows no start-up timings: $text"
grep -qE '^  requests [0-9]+' <<<"$text" || fail "dp-top shows no daemon counters: $text"
# Without a step id: the job's only step.
as_user "$DP_TOP" --once "$job" >/dev/null 2>&1 || fail "dp-top JOBID did not find the job's step"

json=$(as_user "$DP_TOP" --json "$job.0" 2>&1) || fail "dp-top --json failed: $json"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["stragglers"][0]["rank"]==int(sys.argv[2]), d["stragglers"]; assert len(d["ranks"])==4; assert d["daemon"]["requests"]>0' \
  "$json" "$slow" || fail "dp-top --json does not put rank $slow first: $json"

wait "$srun_pid" || fail "the step failed: $(cat "$WORK/srun.log")"
report=$WORK/report-$job.0.json
[[ -s $report ]] || fail "no report file $report: $(ls "$WORK")"
python3 - "$report" "$slow" <<'PY' || fail "the report does not name rank $slow as the straggler: $(cat "$report")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stragglers"][0]["rank"] == int(sys.argv[2]), d["stragglers"]
assert d["failure"] is None, d["failure"]
assert d["srun"]["daemon_up_ms"] > 0 and d["startup"]["slowest"]["comm_ready"]["host"] in ("n1", "n2"), d
assert all(r["state"] == "done" and r["ops_done"] >= 900 for r in d["ranks"]), d["ranks"]
s = d["straggler"]
assert s["judged_by"] == "collectives", s["judged_by"]
for source in ("collectives", "looks"):
    first = s[source]["verdicts"][0]
    assert first["change"] == "named" and first["ranks"] == [int(sys.argv[2])], (source, first)
    assert first["hosts"] == ["n2"], (source, first)
    print("%s: %s (at %.1f s)" % (source, first["line"], first["at_s"]))
PY
line=$(grep -m1 'slurm-dp: step .*: straggler: ' "$WORK/srun.log") || fail "no straggler line on srun's stderr: $(cat "$WORK/srun.log")"
expect_contains "$line" "straggler: rank $slow (n2) — ranks 0-1,3 wait for it " "srun's straggler line"
pass "rank $slow is the straggler in dp-top, dp-top --json and the report, named on srun's stderr by libdp's counters and the node agents' looks alike; another user is refused"
