#!/usr/bin/env bash
# kill -9 of one rank during a long all-reduce, on the cluster: every other
# rank ends with an error naming the dead rank within 10 s, none by a signal.
. "$(dirname "$0")/common.sh"
site

victim=2   # on the second node: the failure must cross nodes
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 --kill-on-bad-exit=0 \
  --export=ALL,DP_BACKEND=gloo -o "$WORK/rank%t.log" \
  "$DP_COMM_WORKER" long >"$WORK/srun.log" 2>&1 &
srun_pid=$!

deadline=$((SECONDS + 60))
for r in 0 1 2 3; do
  until grep -q LOOPING "$WORK/rank$r.log" 2>/dev/null; do
    ((SECONDS < deadline)) || fail "rank $r never started its all-reduce loop: $(cat "$WORK"/*.log)"
    sleep 0.05
  done
done
victim_pid=$(sed -n 's/^LOOPING pid \([0-9]*\)$/\1/p' "$WORK/rank$victim.log")
[[ -n $victim_pid ]] || fail "rank $victim did not report its pid"
kill -9 "$victim_pid"
t0=$(date +%s%N)

for r in 0 1 3; do
  until grep -q '^ERROR' "$WORK/rank$r.log" 2>/dev/null; do
    (( ($(date +%s%N) - t0) / 1000000 < 10000 )) \
      || fail "rank $r still running 10 s after kill -9 of rank $victim: $(cat "$WORK/rank$r.log")"
    sleep 0.05
  done
  grep '^ERROR' "$WORK/rank$r.log" | grep -q "rank $victim" \
    || fail "rank $r's error does not name rank $victim: $(grep '^ERROR' "$WORK/rank$r.log")"
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait "$srun_pid" || true  # srun ends once every task has exited
grep -h '^ERROR' "$WORK"/rank*.log
cat "$WORK/srun.log"
# srun names how each task ended: the survivors exited with an error, none by a
# signal (an abort in gloo's own threads reads "Aborted" here).
grep -E ': tasks? [0-9,-]+: ' "$WORK/srun.log" | grep -v "task $victim: Killed" | grep -v 'Exited with exit code' &&
  fail "a surviving rank ended by a signal (above)"
pass "ranks 0,1,3 failed naming rank $victim ${ms} ms after kill -9 ($(mode) mode)"
