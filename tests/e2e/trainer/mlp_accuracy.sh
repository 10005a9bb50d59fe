#!/usr/bin/env bash
# MLP on Fashion-MNIST trained data-parallel on 2 nodes x 1 task through
# srun --dp-world=auto reaches test accuracy >= 0.88.
. "$(dirname "$0")/common.sh"

start=$(date +%s)
out=$(as_user timeout 280 srun --dp-world=auto -N2 --ntasks-per-node=1 \
  --export=ALL,OPENBLAS_NUM_THREADS=1 "$DP_TRAINER" --model mlp --hidden 512,256 \
  --global-batch 256 --epochs 5 --lr 0.05 --warmup-steps 100 --lr-decay cosine \
  --log-every 200 --metrics "$WORK/metrics.jsonl" 2>&1) || fail "srun failed: $out"
echo "$out"
acc=$(final_field "$WORK/metrics.jsonl" test_accuracy)
[[ -n $acc ]] || fail "no test_accuracy in metrics"
grep -q "world 2," <<<"$out" || fail "not a world of 2"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.88) }' || fail "test accuracy $acc < 0.88"
pass "MLP test accuracy $acc after 5 epochs on 2 nodes x 1 task in $(( $(date +%s) - start )) s"
