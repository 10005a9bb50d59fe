#!/usr/bin/env bash
# A libdp program in a step that restarts in place (--dp-max-restarts=1):
# kill -9 of a rank on the second node; every rank starts again, the new
# generation's collectives are exact across both nodes, srun ends with 0.
# In the ns cluster a task's MASTER_ADDR is its node agent's store on
# 127.0.0.1: gloo must publish an address the other node reaches.
. "$(dirname "$0")/common.sh"
site

as_user timeout 150 srun --dp-world=auto --dp-verbose -N2 --ntasks-per-node=2 --dp-max-restarts=1 \
  --export=ALL,DP_BACKEND=gloo -o "$WORK/rank%t.log" \
  "$DP_COMM_WORKER" restart >"$WORK/srun.log" 2>&1 &
srun_pid=$!
for r in 0 1 2 3; do
  wait_until 60 "rank $r's first all-reduce" grep -q LOOPING "$WORK/rank$r.log"
done
victim=$(sed -n 's/^LOOPING pid \([0-9]*\)$/\1/p' "$WORK/rank2.log")
[[ -n $victim ]] || fail "rank 2 did not report its pid: $(cat "$WORK/rank2.log")"
kill -9 "$victim"
t0=$(date +%s%N)
wait_srun 120
cat "$WORK/srun.log"
((ms >= 0)) || fail "srun still runs 120 s after the kill"
expect_eq "$rc" 0 "srun's exit status after the restart"
grep -q 'restart 1 of 1: in place (rank 2 ' "$WORK/srun.log" || fail "srun names no restart of rank 2"
for r in 0 1 2 3; do
  grep -qx "OK rank $r of 4 generation 1" "$WORK/rank$r.log" ||
    fail "rank $r's second generation did not finish its collectives: $(cat "$WORK/rank$r.log")"
done
pass "kill -9 of rank 2: the step restarted in place, generation 1 exact on 4 ranks, rc 0, ${ms} ms after the kill ($(mode) mode)"
