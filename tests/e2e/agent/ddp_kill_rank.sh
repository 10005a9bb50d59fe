#!/usr/bin/env bash
# One verdict, carried out on every node, for a program that never talks to
# slurm-dp: an unmodified PyTorch DDP script (gloo) on 2 nodes x 2 tasks, one
# rank asleep in its loop (so no collective error would ever reach it), then
# kill -9 of another rank. The agents end every remaining task (SIGTERM, the
# sleeper included), srun exits non-zero within 2 s, its last line naming the
# killed rank, and no task survives. The report (--dp-report) keeps where the
# survivors were when the step failed, as their node agents read them before
# ending them: the sleeper in its sleep.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
site kill_grace=2
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

victim=3 sleeper=1
ddp_srun_flags=(--dp-report="$WORK/report.json")
start_ddp ddpkill --steps 100000 --step-ms 100 --hang-rank $sleeper --hang-at 3
wait_ranks_ready 120
wait_until 30 "rank $sleeper asleep in its loop" grep -q "hangs at step" "$WORK/rank$sleeper.log"
pid=$(rank_pid $victim) || fail "no process of rank $victim in job $job"
t0=$(date +%s%N)
kill -9 "$pid"
wait_srun 30
cat "$WORK/srun.log"
((ms >= 0)) || fail "srun still runs 30 s after rank $victim was killed (rank $sleeper sleeps on)"
((rc != 0)) || fail "srun exited 0 after rank $victim was killed"
((ms <= 2000)) || fail "srun exited $ms ms after the kill; the bound is 2000 ms"
last=$(srun_last_line)
expect_contains "$last" "first failure: rank $victim (host n2) was killed by signal 9" "srun's last line"
expect_contains "$last" "verdict task_exit" "srun's last line"
left=$(survivors)
[[ -z $left ]] || fail "tasks of job $job survive srun: $left"
at_failure=$(/usr/bin/python3 -c 'import json, sys
print("\n".join(json.load(open(sys.argv[1]))["failure"].get("stacks", [])))' "$WORK/report.json") ||
  fail "no report: $(cat "$WORK/report.json" 2>&1 | head -c 300)"
echo "the report's stacks at the failure:"
echo "$at_failure"
expect_contains "$at_failure" "rank $sleeper (n1, pid " "the sleeper in the report's stacks at the failure"
if [[ $(/usr/bin/python3 -c 'import sys; print(sys.version_info >= (3, 13))') == True ]]; then
  expect_contains "$at_failure" "time.sleep <- main ddp.py:$sleep_line" "the sleeper's call and line"
else
  expect_contains "$at_failure" "clock_nanosleep" "the sleeper's kernel state"
fi
pass "srun exited $rc $ms ms after kill -9 of rank $victim (rank $sleeper asleep), naming it; no task left; the survivors' stacks in the report"
