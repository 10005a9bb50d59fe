#!/usr/bin/env bash
# dp-top --stacks (issue 45) on a running 2x2 unmodified PyTorch DDP step
# (gloo, env://, no libdp): the step's owner gets all 4 ranks, ranks with
# identical stacks merged, the nodes they were read on, within 2 s, each
# rank's Python frames in the script (Debian 12's 3.11 as the lanes' 3.13 and
# 3.14) and its threads' kernel state. Another user is refused by name before any look: no
# agent is asked, so no memory is read. Root (an admin helping the user) gets
# the step (dp-top --once and --stacks), read-only, from dptest's daemon only.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/ddp_common.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
ddp_site
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

start_ddp stacks --steps 100000 --step-ms 100
trap 'scancel "$job" 2>/dev/null || true; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
wait_ranks_ready 120

# The bound is the daemon's: dp-top's own start, Slurm's job look-up and the
# socket's search cost what a plain `dp-top --once` costs, measured just before
# (on 2 cores shared with builds that is a few hundred ms).
t0=$(date +%s%N)
as_user "$DP_TOP" --once "$job.0" >"$WORK/top.out" 2>&1 || fail "dp-top --once failed on the running step"
once_ms=$((($(date +%s%N) - t0) / 1000000))
cat "$WORK/top.out"
record_sample dp-top "$WORK/top.out"  # docs/output.md shows it
t0=$(date +%s%N)
rc=0
out=$(as_user "$DP_TOP" --stacks "$job.0" 2>&1) || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$out"
echo "dp-top --stacks answered in $ms ms (dp-top --once: $once_ms ms)"
((rc == 0)) || fail "dp-top --stacks exited $rc: $out"
((ms - once_ms <= 2000)) || fail "dp-top --stacks took $ms ms, $((ms - once_ms)) ms more than dp-top --once; the bound is 2000 ms"
[[ $out != *"no answer within"* ]] || fail "a node agent did not answer: $out"
# Every rank once, across the groups: "rank R (host, pid P): ..." or "ranks A-B,C: ...".
seen=$(/usr/bin/python3 - "$out" <<'PY'
import re, sys
ranks = []
for line in sys.argv[1].splitlines():
    m = re.match(r"ranks? ([0-9,-]+)[ :]", line)
    if not m:
        continue
    for part in m.group(1).split(","):
        a, _, b = part.partition("-")
        ranks += range(int(a), int(b or a) + 1)
print(" ".join(map(str, sorted(ranks))))
PY
)
expect_eq "$seen" "0 1 2 3" "the ranks dp-top --stacks shows"
expect_contains "$out" "read on n1 (ranks 0-1), n2 (ranks 2-3)" "the nodes the ranks were read on"
for r in 0 1 2 3; do
  [[ $out != *"rank $r ("* ]] || expect_contains "$out" "rank $r (n$((r / 2 + 1)), pid " "rank $r's line"
done
# Every rank's Python frames, in the script, and its threads' kernel state.
expect_contains "$out" "ddp.py:" "the ranks' Python frames"
expect_contains "$out" "] <- " "the ranks' kernel state (the system call a main thread sleeps in, before its frames)"
[[ $out != *"no Python frames"* ]] || fail "a rank shows no Python frames: $out"

# Another user: refused by name, before any look.
other_rc=0
other=$(as_other "$DP_TOP" --stacks "$job.0" 2>&1) || other_rc=$?
echo "as dptest2: $other"
((other_rc != 0)) || fail "dp-top --stacks of another user's step succeeded: $other"
expect_contains "$other" "belongs to uid $(id -u "$DP_TEST_USER"), not to you" "the refusal"
[[ $other != *"no stacks"* && $other != *"rank "* ]] || fail "the refusal shows stacks: $other"

# Root: any user's step, from slurmctld's record of whose job it is.
root_stacks=$("$DP_TOP" --stacks "$job.0" 2>&1) || fail "root's dp-top --stacks failed: $root_stacks"
echo "as root: $(head -n1 <<<"$root_stacks")"
expect_contains "$root_stacks" "read on n1 (ranks 0-1), n2 (ranks 2-3)" "root's dp-top --stacks"
root_once=$("$DP_TOP" --once "$job.0" 2>&1) || fail "root's dp-top --once failed: $root_once"
expect_contains "$root_once" "dp-top: step $job.0" "root's dp-top --once"
"$DP_TOP" --json "$job.0" | /usr/bin/python3 -c 'import json, sys; assert json.load(sys.stdin)' ||
  fail "root's dp-top --json is not a JSON report"
root_pick=$("$DP_TOP" --once "$job" 2>&1) || fail "root's dp-top JOBID failed: $root_pick"
expect_contains "$root_pick" "dp-top: step $job.0" "root's dp-top with the job's id alone"

scancel "$job"
wait_job_end "$job" 60 >/dev/null
pass "dp-top --stacks showed ranks 0-3 merged in $ms ms ($((ms - once_ms)) ms past dp-top --once); another user was refused; root saw the step"
