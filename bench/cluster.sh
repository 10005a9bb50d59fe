# Sourced by the benchmarks that need a Slurm cluster (srun_overhead,
# hang_watch, hang_watch/wide_step, straggler): their command line, their
# cluster, their median and the watches' A/B.

bench_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster=$bench_src/tests/cluster/dp-cluster

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# bench_args OPTION RUNS SMOKE_RUNS "$@": the command line every cluster bench
# takes, [--smoke|OPTION] BUILD_DIR [RUNS] [MODE], OPTION the script's own
# flag ("" for none). Sets smoke (with --smoke, runs is SMOKE_RUNS), option (1
# when OPTION was given), build (absolute), runs (RUNS by default), mode (lo by
# default) and the build's plugin and daemon.
# shellcheck disable=SC2034 # the caller's
bench_args() {
  local own=$1 usage="usage: $0 [--smoke${1:+|$1}] BUILD_DIR [RUNS] [MODE]"
  runs=$2
  local smoke_runs=$3
  shift 3
  smoke=0 option=0
  if [[ ${1:-} == --smoke ]]; then smoke=1; shift; fi
  if [[ -n $own && ${1:-} == "$own" ]]; then option=1; shift; fi
  build=$(realpath "${1:?$usage}")
  runs=${2:-$runs}
  mode=${3:-lo}
  if ((smoke)); then runs=$smoke_runs; fi
  plugin=$build/spank/spank_dp.so daemon=$build/daemon/dp-rendezvousd
}

# bench_pairs RUNS CMD OFF ON [turns]: RUNS pairs of `CMD OFF` and `CMD ON`
# (with turns, in turn off-on and on-off); their outputs in off[] and on[],
# their medians in mo and mn.
bench_pairs() {
  local runs=$1 cmd=$2 turns=${5:-} i
  off=() on=()
  for ((i = 0; i < runs; i++)); do
    if [[ -n $turns ]] && ((i % 2)); then
      on+=("$("$cmd" "$4")")
      off+=("$("$cmd" "$3")")
    else
      off+=("$("$cmd" "$3")")
      on+=("$("$cmd" "$4")")
    fi
  done
  mo=$(printf '%s\n' "${off[@]}" | median)
  mn=$(printf '%s\n' "${on[@]}" | median)
}

# bench_cluster PLUGIN DAEMON MODE [NODES=2]: the running cluster that
# DP_CLUSTER_DIR names (ctest's e2e fixture in smoke runs), left up; else one
# of the bench's own in a new folder (ports DP_BENCH_PORT_BASE, default
# 17600), which bench_cluster_down takes down. Then its plugin's daemon and
# its environment (squeue, srun...).
bench_cluster() {
  if [[ -n ${DP_CLUSTER_DIR:-} ]] && "$cluster" env >/dev/null 2>&1; then
    echo "$(basename "$0"): using the running cluster in $DP_CLUSTER_DIR"
  else
    bench_own_cluster=1
    DP_CLUSTER_DIR=$(mktemp -d /tmp/dp-bench-cluster.XXXXXX)
    export DP_CLUSTER_DIR DP_CLUSTER_NODES=${4:-2} DP_CLUSTER_PORT_BASE=${DP_BENCH_PORT_BASE:-17600}
    export DP_CLUSTER_MODE=$3 DP_CLUSTER_PLUGIN=$1
    "$cluster" up >/dev/null
  fi
  "$cluster" plugstack "daemon=$2"
  eval "$("$cluster" env)"
}

bench_cluster_down() {
  if [[ -n ${bench_own_cluster:-} ]]; then
    "$cluster" down >/dev/null 2>&1 || true
    rm -rf "$DP_CLUSTER_DIR"
  fi
}

# bench_prepare TAG FILE...: every FILE built, a fresh $work any user may
# read, and the EXIT trap that ends $job, $srun_pid and the bench's cluster.
bench_prepare() {
  local tag=$1 f
  shift
  for f in "$@"; do
    [[ -e $f ]] || { echo "$(basename "$0"): $f is not built" >&2; exit 1; }
  done
  work=$(mktemp -d "/tmp/dp-bench-$tag.XXXXXX")
  chmod 755 "$work"
  srun_pid=""
  trap bench_cleanup EXIT
}
bench_cleanup() {
  if [[ -n ${job:-} ]]; then scancel "$job" 2>/dev/null || true; fi
  if [[ -n ${srun_pid:-} ]]; then kill "$srun_pid" 2>/dev/null || true; wait "$srun_pid" 2>/dev/null || true; fi
  bench_cluster_down
  rm -rf "$work"
}

# bench_ab TRAINER WORK SMOKE RUNS OPTION OFF ON: a watch's cost as the watch
# benchmarks measure it (hang_watch, straggler), on the running bench_cluster.
# Unmodified PyTorch DDP (bench/trainer/ddp_mlp.py, gloo, env://) and
# dp-trainer, the same MLP, 2 nodes x DP_BENCH_TASKS (1: one rank per core of
# this 2-core machine; at 2 x 2 the ranks share cores and a run's rate swings
# by 15 %, which hides 1 %), DP_BENCH_EPOCHS (3) a run, srun's OPTION=OFF
# against OPTION=ON in pairs, in turn off-on and on-off (a run after a run,
# the last job's teardown and caches, is not always the same side). One line
# each: the medians of RUNS, on/off as their ratio and as the median of the
# pairs' ratios. SMOKE: 1 epoch of 4 096 samples, figures meaningless.
bench_ab() {
  local trainer=$1 work=$2 smoke=$3 runs=$4 option=$5 off_value=$6 on_value=$7
  local limit=0 tasks=${DP_BENCH_TASKS:-1} epochs=${DP_BENCH_EPOCHS:-3} impl mo mn pair name
  ((smoke)) && limit=4096 tasks=1 epochs=1
  cp "$bench_src/bench/trainer/ddp_mlp.py" "$work/"
  local common=(--export=ALL,EPOCHS=$epochs,GLOBAL_BATCH=256,THREADS=1,OMP_NUM_THREADS=1,OPENBLAS_NUM_THREADS=1,TRAIN_LIMIT=$limit,USE_LIBUV=0)
  ab_run_torch() {  # ab_run_torch VALUE: rank 0's samples per second
    srun -Q --dp-world=auto "$option=$1" -N2 --ntasks-per-node="$tasks" "${common[@]}" \
      /usr/bin/python3 "$work/ddp_mlp.py" |
      /usr/bin/python3 -c 'import json, sys
for l in sys.stdin:
    if l.startswith("{"):
        j = json.loads(l)
        if j["rank"] == 0: print(j["samples"] * j["world"] / j["seconds"])'
  }
  ab_run_dp() {  # ab_run_dp VALUE: samples per second, as dp-trainer reports them
    local lim=()
    ((smoke)) && lim=(--train-limit 4096)
    srun -Q --dp-world=auto "$option=$1" -N2 --ntasks-per-node="$tasks" "${common[@]}" \
      "$trainer" --hidden 512,256 --global-batch 256 --epochs "$epochs" --no-eval "${lim[@]}" 2>&1 |
      grep -oE '[0-9.]+ samples/s' | tail -1 | awk '{print $1}'
  }
  for impl in torch dp; do
    local off=() on=()
    ((smoke)) || "ab_run_$impl" "$off_value" >/dev/null  # warm-up: cold caches
    bench_pairs "$runs" "ab_run_$impl" "$off_value" "$on_value" turns
    # Each pair ran back to back: the median of its ratios leaves out the drift
    # that moves both sides of a pair alike (this machine's rates drift by 20 %).
    pair=$(paste <(printf '%s\n' "${off[@]}") <(printf '%s\n' "${on[@]}") | awk '{print $2 / $1}' | median)
    name=$([[ $impl == torch ]] && echo "unmodified PyTorch DDP (gloo)" || echo "dp-trainer")
    printf "%s, 2x%d, MLP 784-512-256-10, %d epochs, median of %d: %s=%s %.0f samples/s, =%s %.0f samples/s, on/off %.4f, median of the pairs' on/off %.4f (target >= 0.99)\n" \
      "$name" "$tasks" "$epochs" "$runs" "$option" "$off_value" "$mo" "$on_value" "$mn" \
      "$(awk "BEGIN { print $mn / $mo }")" "$pair"
    echo "  off: ${off[*]}"
    echo "  on:  ${on[*]}"
  done
}
