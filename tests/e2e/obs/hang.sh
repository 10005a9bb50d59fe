#!/usr/bin/env bash
# A rank that sleeps inside the training loop (alive, heartbeats fine) is
# named as hanging on every rank and in srun's last line, and the step ends
# within the site's bound (hang_timeout=10, on_hang=end: this test ends it) plus a heartbeat or two, long
# before the collective timeout (300 s). The hanging rank's own runtime ends
# it (exit code 124), so srun does not wait for its sleep.
. "$(dirname "$0")/common.sh"
bound=10
site hang_timeout=$bound on_hang=end

victim=2
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 --kill-on-bad-exit=0 \
  -o "$WORK/rank%t.log" "$DP_OBS_WORKER" 100000 --hang $victim 30 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
wait_log "$WORK/rank$victim.log" '^HANGING pid' 60
t0=$(date +%s%N)
rc=0
wait "$srun_pid" || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
cat "$WORK/srun.log"
((rc != 0)) || fail "srun exited 0; the step must fail"
((ms >= bound * 1000 - 1500)) || fail "the step ended after $ms ms, before the bound of $bound s"
((ms <= bound * 1000 + 4000)) || fail "the step ended $ms ms after rank $victim stopped; the bound is $bound s"
grep -q "task $victim: Exited with exit code 124" "$WORK/srun.log" || fail "rank $victim did not end with exit code 124"
for r in 0 1 3; do
  err=$(grep '^ERROR' "$WORK/rank$r.log") || fail "rank $r has no error: $(cat "$WORK/rank$r.log")"
  [[ $err == *"first failure: rank $victim (host n2) hangs: it is alive"*"[hang, "* ]] \
    || fail "rank $r's error does not name rank $victim as hanging: $err"
done
last=$(grep -v '^\s*$' "$WORK/srun.log" | tail -n1)
[[ $last == "slurm-dp: step "*" failed: first failure: rank $victim (host n2) hangs"*"hang_timeout=$bound s"* ]] \
  || fail "srun's last line does not name rank $victim as hanging: $last"
pass "rank $victim named as hanging; the step ended $ms ms after it stopped (bound $bound s)"
