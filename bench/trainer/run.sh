#!/usr/bin/env bash
# dp-trainer vs PyTorch DDP (gloo), side by side in the same run on this
# machine: MLP 784-512-256-10, Fashion-MNIST, SGD momentum 0.9, lr 0.05,
# global batch 256, EPOCHS epochs, world 1 and 2, 1 BLAS thread per rank.
# Both are launched the same way (ranks as local processes with the
# torchrun variables; dp-trainer's through a real dp-rendezvousd, as srun
# --dp-world=auto would). Aggregate samples/s = all samples / slowest rank's
# training-loop time. Each cell is the median of REPEATS runs. dp-trainer's
# all_reduce goes through shared memory here (both ranks on one host, libdp's
# default); the "dp-trainer tcp" row is the same with DP_SHM=off, over
# loopback TCP as torch's gloo.
#
#   bench/trainer/run.sh BUILD_DIR          (EPOCHS=5 REPEATS=3 by default)
#   bench/trainer/run.sh --smoke BUILD_DIR  seconds: 1 024 samples, one epoch, one run of
#       each; the anchor only where torch is already installed (ctest bench.trainer;
#       with PROGRESS_OVERHEAD=1, 2 pairs of 20 steps: bench.trainer_progress_overhead)
#   PROGRESS_OVERHEAD=1 [PAIRS=40 STEPS=400] bench/trainer/run.sh BUILD_DIR
#       only dp-trainer at world 2, with libdp's collective counters (which the
#       daemon's hang and straggler detection reads from the heartbeats; on by
#       default) and with DP_PROGRESS=off: PAIRS pairs of STEPS-step runs, each
#       pair back to back in random order; prints the median per-pair on/off
#       ratio and its 95 % interval (within 2 %).
#
# Installs the anchor (python3-torch + OpenBLAS for it) if missing, as NOTES
# "Running the PyTorch anchors fairly" says, except in smoke mode.
set -euo pipefail
SMOKE=0
[[ ${1:-} == --smoke ]] && { SMOKE=1; shift; }
BUILD=${1:?usage: bench/trainer/run.sh [--smoke] BUILD_DIR}
TRAINER=$BUILD/trainer/dp-trainer
DAEMON=$BUILD/daemon/dp-rendezvousd
HERE=$(cd "$(dirname "$0")" && pwd)
# Debian's interpreter: python3-torch lives there, not in a pyenv on PATH.
PY=/usr/bin/python3
EPOCHS=${EPOCHS:-5}
REPEATS=${REPEATS:-3}
LIMIT=()  # all 60 000 training samples
if ((SMOKE)); then
  EPOCHS=1 REPEATS=1 PAIRS=2 STEPS=20 LIMIT=(--train-limit 1024)
  # 4 steps an epoch: the counters' runs need 20 steps (two 10-step windows).
  [[ ${PROGRESS_OVERHEAD:-0} == 1 ]] && EPOCHS=5
fi
[[ -x $TRAINER && -x $DAEMON ]] || { echo "run.sh: build dp-trainer and dp-rendezvousd in $BUILD first" >&2; exit 1; }

# The counters comparison needs no anchor.
ANCHOR=1
if [[ ${PROGRESS_OVERHEAD:-0} != 1 ]] && ! "$PY" -c 'import torch' 2>/dev/null; then
  if ((SMOKE)); then
    ANCHOR=0
    echo "run.sh: smoke mode: skipping the PyTorch DDP anchor (python3-torch is not installed; a full run installs it)"
  else
    echo "run.sh: installing the PyTorch anchor (python3-torch, OpenBLAS for it)" >&2
    apt-get install -y -qq python3-torch libtorch-dev libopenblas0-pthread >/dev/null
  fi
fi
# The anchor is only fair on OpenBLAS (reference BLAS is ~6x slower): show
# it (not in a smoke run, whose figures mean nothing).
if [[ ${PROGRESS_OVERHEAD:-0} != 1 ]] && ((ANCHOR && !SMOKE)); then
  "$PY" -c '
import time, torch
torch.set_num_threads(1)
a, b = torch.randn(256, 784), torch.randn(784, 512)
for _ in range(3): a @ b
t = time.perf_counter(); n = 50
for _ in range(n): a @ b
print("torch 256x784x512 matmul, 1 thread: %.1f GFLOPS" % (2 * 256 * 784 * 512 * n / (time.perf_counter() - t) / 1e9))' >&2
fi

OUT=$(mktemp -d /tmp/dpt-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
common_env=(OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run_dp WORLD LOGPREFIX [DP_SHM [DP_PROGRESS [TRAINER_ARGS...]]]: one dp-trainer world;
# prints "agg_samples_per_sec accuracy median_window_samples_per_sec
# median_window_rank_samples_per_cpu_sec" (without progress windows: the
# aggregate and 0).
run_dp() {
  local world=$1 tag=$2 shm=${3:-auto} progress=${4:-on} pids=() port="" dpid="" r
  shift $(($# < 4 ? $# : 4))
  if (( world > 1 )); then
    coproc DAEMON_PROC { exec "$DAEMON" --world-size "$world" --job-id bench --step-id 0 2>"$OUT/$tag.daemon.log" <<<"$SECRET"; }
    dpid=$DAEMON_PROC_PID
    read -r ready port _ <&"${DAEMON_PROC[0]}"  # READY <port> <report socket>
    [[ $ready == READY ]] || { echo "run.sh: dp-rendezvousd did not start" >&2; exit 1; }
  fi
  for ((r = 0; r < world; r++)); do
    env "${common_env[@]}" RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=1 DP_BACKEND=gloo DP_SHM=$shm DP_PROGRESS=$progress ${port:+DP_RDV_ADDR=127.0.0.1:$port DP_RDV_SECRET=$SECRET} \
      "$TRAINER" --hidden 512,256 --optimizer sgd --momentum 0.9 --lr 0.05 --lr-decay constant --global-batch 256 \
      --epochs "$EPOCHS" --log-every 0 "${LIMIT[@]}" "$@" --metrics "$OUT/$tag.r$r.jsonl" >"$OUT/$tag.r$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$OUT/$tag".r*.log >&2; exit 1; }; done
  [[ -n $dpid ]] && { kill "$dpid" 2>/dev/null || true; wait "$dpid" 2>/dev/null || true; }
  "$PY" - "$OUT/$tag.r0.jsonl" <<'PY'
import json, sys
import statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
final = [r for r in rows if r.get("event") == "final"][-1]
windows = [r["samples_per_sec"] for r in rows if r.get("event") == "progress"]
agg = final["aggregate_samples_per_sec"]
cpu = [r["rank_samples_per_cpu_sec"] for r in rows if "rank_samples_per_cpu_sec" in r]
print(agg, final["test_accuracy"], statistics.median(windows) if windows else agg,
      statistics.median(cpu) if cpu else 0)
PY
}

run_dptcp() { run_dp "$1" "$2" off; }

run_torch() {
  local world=$1 tag=$2 pids=() port r
  port=$(free_port)
  for ((r = 0; r < world; r++)); do
    env "${common_env[@]}" RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      EPOCHS=$EPOCHS GLOBAL_BATCH=256 LR=0.05 THREADS=1 TRAIN_LIMIT="${LIMIT[1]:-0}" \
      "$PY" "$HERE/ddp_mlp.py" >"$OUT/$tag.r$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$OUT/$tag".r*.log >&2; exit 1; }; done
  cat "$OUT/$tag".r*.log | "$PY" -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(sum(r["samples"] for r in rows) / max(r["seconds"] for r in rows),
      next(r["test_accuracy"] for r in rows if r["rank"] == 0))'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Pairs of runs back to back, in a random order per pair, so the machine's
# drift and any first/second bias fall on both sides alike. Three rates per
# run: rank 0's samples per CPU-second (the median over its 10-step windows:
# the work a step costs, counters included, which other load on shared cores
# does not change), the median of its 10-step windows' samples/s (a burst of
# other load slows a few windows, not the median), and the whole run's
# aggregate. For each, the median of the per-pair on/off ratios and its 95 %
# interval.
if [[ ${PROGRESS_OVERHEAD:-0} == 1 ]]; then
  PAIRS=${PAIRS:-40}
  STEPS=${STEPS:-400}
  : >"$OUT/pairs-cpu"
  : >"$OUT/pairs-window"
  : >"$OUT/pairs-aggregate"
  for ((i = 1; i <= PAIRS; i++)); do
    order=(on off)
    ((RANDOM % 2)) && order=(off on)
    declare -A agg=() win=() cpu=()
    for p in "${order[@]}"; do
      read -r a _ w c < <(run_dp 2 "progress-$p.$i" auto "$p" --max-steps "$STEPS" --log-every 10)
      agg[$p]=$a win[$p]=$w cpu[$p]=$c
    done
    echo "${cpu[on]} ${cpu[off]}" >>"$OUT/pairs-cpu"
    echo "${win[on]} ${win[off]}" >>"$OUT/pairs-window"
    echo "${agg[on]} ${agg[off]}" >>"$OUT/pairs-aggregate"
    printf 'pair %d (%s first): per CPU-s on %.0f, off %.0f; window median on %.0f, off %.0f; aggregate on %.0f, off %.0f samples/s\n' \
      "$i" "${order[0]}" "${cpu[on]}" "${cpu[off]}" "${win[on]}" "${win[off]}" "${agg[on]}" "${agg[off]}" >&2
  done
  echo "dp-trainer world 2, $STEPS steps of global batch 256 a run, $PAIRS pairs"
  echo "rank 0's samples per CPU-second (median of 10-step windows):"
  "$PY" "$HERE/paired_ratio.py" <"$OUT/pairs-cpu"
  echo "samples/s, median of 10-step windows:"
  "$PY" "$HERE/paired_ratio.py" <"$OUT/pairs-window"
  echo "samples/s, the run's aggregate (all samples / slowest rank's loop time):"
  "$PY" "$HERE/paired_ratio.py" <"$OUT/pairs-aggregate"
  exit 0
fi

IMPLS=(dp dptcp torch)
((ANCHOR)) || IMPLS=(dp dptcp)
declare -A rate acc
for world in 1 2; do
  for impl in "${IMPLS[@]}"; do
    [[ $impl == dptcp && $world == 1 ]] && continue
    : >"$OUT/$impl.$world.rates"
    : >"$OUT/$impl.$world.accs"
    for ((i = 1; i <= REPEATS; i++)); do
      # run_dp prints four figures, run_torch two: the first two are these.
      read -r s a _ < <("run_$impl" "$world" "$impl.w$world.$i")
      echo "$s" >>"$OUT/$impl.$world.rates"
      echo "$a" >>"$OUT/$impl.$world.accs"
      printf 'run %s world %d #%d: %.0f samples/s, test accuracy %.4f\n' "$impl" "$world" "$i" "$s" "$a" >&2
    done
    rate[$impl.$world]=$(median <"$OUT/$impl.$world.rates")
    acc[$impl.$world]=$(median <"$OUT/$impl.$world.accs")
  done
done

echo
echo "MLP 784-512-256-10, Fashion-MNIST, SGD momentum, global batch 256, $EPOCHS epochs, 1 thread/rank, median of $REPEATS"
printf '%-22s %8s %12s %10s %9s\n' impl world samples/s scaling test_acc
for impl in "${IMPLS[@]}"; do
  case $impl in dp) name=dp-trainer ;; dptcp) name="dp-trainer tcp" ;; *) name="pytorch-ddp (gloo)" ;; esac
  for world in 1 2; do
    [[ $impl == dptcp && $world == 1 ]] && continue
    base=${rate[$impl.1]:-${rate[dp.1]}}
    eff=$(awk -v a="${rate[$impl.$world]}" -v b="$base" -v w="$world" 'BEGIN{printf "%.0f%%", 100*a/(w*b)}')
    printf '%-22s %8d %12.0f %10s %9.4f\n' "$name" "$world" "${rate[$impl.$world]}" "$eff" "${acc[$impl.$world]}"
  done
done
((ANCHOR)) || exit 0
awk -v a="${rate[dp.2]}" -v b="${rate[torch.2]}" 'BEGIN{printf "dp-trainer / pytorch-ddp at world 2: %.2fx (target >= 2.5x)\n", a/b}'
awk -v a="${rate[dptcp.2]}" -v b="${rate[torch.2]}" 'BEGIN{printf "dp-trainer tcp / pytorch-ddp at world 2: %.2fx (both over loopback TCP; target >= 1.5x)\n", a/b}'
