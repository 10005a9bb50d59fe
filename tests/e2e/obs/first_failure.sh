#!/usr/bin/env bash
# kill -9 of rank 2 in the training loop: every other rank's error and srun's
# last line name rank 2 (host n2) as the first failure, how (its node agent
# saw the task killed by signal 9) and when; the
# ranks that fail after it are not named as causes. The report file says so too.
. "$(dirname "$0")/common.sh"
site

victim=2   # on the second node
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 --kill-on-bad-exit=0 \
  --dp-report=report.json -o "$WORK/rank%t.log" "$DP_OBS_WORKER" 100000 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
for r in 0 1 2 3; do wait_log "$WORK/rank$r.log" '^ITER 10$' 60; done
pid=$(sed -n "s/^START pid \([0-9]*\) rank $victim\$/\1/p" "$WORK/rank$victim.log")
[[ -n $pid ]] || fail "rank $victim did not say its pid: $(cat "$WORK/rank$victim.log")"
kill -9 "$pid"
wait "$srun_pid" || true

for r in 0 1 3; do
  err=$(grep '^ERROR' "$WORK/rank$r.log") || fail "rank $r has no error: $(cat "$WORK/rank$r.log")"
  [[ $err == *"first failure: rank $victim (host n2) was killed by signal 9"*"[rank_lost, signal 9, "*" s after the step's daemon started; verdict task_exit]"* ]] \
    || fail "rank $r's error does not name rank $victim as the first failure: $err"
  for other in 0 1 3; do
    [[ $err != *"first failure: rank $other "* ]] || fail "rank $r names rank $other as the first failure: $err"
  done
done
last=$(grep -v '^\s*$' "$WORK/srun.log" | tail -n1)
[[ $last == "slurm-dp: step "*" failed: first failure: rank $victim (host n2) was killed by signal 9"*"[rank_lost, signal 9, "*" s after the step's daemon started; verdict task_exit]" ]] \
  || fail "srun's last line does not name rank $victim: $last (all: $(cat "$WORK/srun.log"))"
grep -q '"failure":{"rank":2,"host":"n2","how":"rank_lost","verdict":"task_exit","signal":9,"at_s":[0-9.]*' "$WORK/report.json" \
  || fail "the report file does not name rank 2: $(cat "$WORK/report.json")"
grep -q '"srun":{[^}]*"store":"rank0"}' "$WORK/report.json" \
  || fail "the report file does not say which store the step used: $(head -c 300 "$WORK/report.json")"
grep -h "^ERROR" "$WORK"/rank*.log
cat "$WORK/srun.log"
pass "every rank and srun's last line name rank $victim (host n2) as the first failure"
