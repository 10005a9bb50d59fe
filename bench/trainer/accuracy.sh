#!/usr/bin/env bash
# Fashion-MNIST test accuracy of dp-trainer trained data-parallel on 2 nodes x
# 1 task through srun --dp-world=auto (targets: MLP >= 0.88, CNN >= 0.90).
# Needs a running cluster with the plugin loaded, e.g.
#   DP_CLUSTER_DIR=/tmp/c DP_CLUSTER_PLUGIN=$BUILD/spank/spank_dp.so tests/cluster/dp-cluster up
#   tests/cluster/dp-cluster plugstack daemon=$BUILD/daemon/dp-rendezvousd
#   eval "$(tests/cluster/dp-cluster env)"; bench/trainer/accuracy.sh $BUILD
# (or DP_CLUSTER_DIR naming the running cluster). --smoke: 1 024 samples and
# one epoch each, accuracies that mean nothing (ctest e2e.lo.bench.trainer_accuracy).
set -euo pipefail
SMOKE=()
[[ ${1:-} == --smoke ]] && { SMOKE=(--train-limit 1024 --epochs 1); shift; }
BUILD=${1:?usage: bench/trainer/accuracy.sh [--smoke] BUILD_DIR}
if [[ -z ${SLURM_CONF:-} && -n ${DP_CLUSTER_DIR:-} ]]; then
  eval "$("$(dirname "$0")/../../tests/cluster/dp-cluster" env)"
fi
: "${SLURM_CONF:?eval \"\$(tests/cluster/dp-cluster env)\" first}"
TRAINER=$(realpath "$BUILD/trainer/dp-trainer")
WORK=$(mktemp -d "${DP_CLUSTER_WORK:-/tmp}/dpt-accuracy.XXXXXX")
chmod 777 "$WORK"
trap 'rm -rf "$WORK"' EXIT

run() {  # run NAME ARGS...
  local name=$1 start
  shift
  start=$(date +%s.%N)
  (cd "$WORK" && runuser -u "${DP_BENCH_USER:-dptest}" -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    srun --dp-world=auto -N2 --ntasks-per-node=1 "$TRAINER" "$@" "${SMOKE[@]}" --log-every 0 --metrics "$WORK/$name.jsonl") \
    >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; exit 1; }
  printf '%-4s %-70s test accuracy %s, training %s s, srun %.0f s\n' "$name" "$* ${SMOKE[*]}" \
    "$(sed -n 's/.*"event":"final".*"test_accuracy":\([0-9.]*\).*/\1/p' "$WORK/$name.jsonl")" \
    "$(sed -n 's/.*"event":"final".*"seconds":\([0-9.]*\).*/\1/p' "$WORK/$name.jsonl" | cut -c1-6)" \
    "$(echo "$(date +%s.%N) - $start" | bc)"
}

run mlp --model mlp --hidden 512,256 --global-batch 256 --epochs 5 --lr 0.05 --warmup-steps 100 --lr-decay cosine
run cnn --model cnn --channels 16,32 --optimizer adam --lr 0.002 --warmup-steps 50 --lr-decay cosine \
  --global-batch 128 --epochs 3
