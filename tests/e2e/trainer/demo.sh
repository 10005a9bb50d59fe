#!/usr/bin/env bash
# The README demo: 4 ranks on 2 nodes, finishes well under a minute with a
# meaningful result on every rank's shard (world 4, every rank reports).
. "$(dirname "$0")/common.sh"

start=$(date +%s)
out=$(as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=2 \
  "$DP_TRAINER" --global-batch 256 --epochs 1 \
  --hidden 256,128 --log-every 50 2>&1) || fail "srun failed: $out"
echo "$out"
grep -q "world 4," <<<"$out" || fail "not a world of 4"
for r in 0 1 2 3; do grep -q "^rank $r: " <<<"$out" || fail "no figure for rank $r"; done
acc=$(sed -n 's/^test accuracy: //p' <<<"$out")
awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.80) }' || fail "test accuracy ${acc:-none} < 0.80 after one epoch"
took=$(( $(date +%s) - start ))
(( took < 60 )) || fail "demo took $took s"
pass "4 ranks on 2 nodes, test accuracy $acc, $took s"
