#!/bin/sh
# All-reduce between WORLD ranks (default 2) on this machine: libdp (Gloo backend; all_reduce
# through shared memory, its default here, and over TCP with DP_SHM=off) and
# torch.distributed gloo side by side, interleaved in the same run, plus the
# memcpy and loopback-TCP ceilings. Medians of ROUNDS runs per size.
#   bench/allreduce/run.sh <build-dir> [rounds=3] [min_bytes=1024] [max_bytes=268435456]
#   bench/allreduce/run.sh --smoke <build-dir>   seconds: one round of 1 and 4 KiB, 20
#       iterations each, 1 MiB ceilings; the anchor only where torch is already
#       installed (ctest bench.allreduce)
# PIN=1 pins rank r to CPU r mod the CPU count for both implementations (as
# Slurm's task/affinity would); unpinned, the kernel may stack ranks on one
# CPU for a while. WORLD=4 runs 4 ranks (on 2 cores: 2 to a CPU).
# Installs the anchor (python3-torch) if missing, except in smoke mode.
set -eu
smoke=0
[ "${1:-}" = --smoke ] && { smoke=1; shift; }
build=${1:?usage: run.sh [--smoke] <build-dir> [rounds] [min_bytes] [max_bytes]}
rounds=${2:-3}
lo=${3:-1024}
hi=${4:-268435456}
most=400 ceil_args=""
if [ $smoke = 1 ]; then rounds=1 lo=1024 hi=4096 most=20 ceil_args="1048576 3"; fi
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/bench/allreduce/dp_allreduce_bench
ceil=$build/bench/allreduce/dp_bench_ceilings
[ -x "$bench" ] && [ -x "$ceil" ] || { echo "run.sh: build dp_allreduce_bench and dp_bench_ceilings in $build first" >&2; exit 2; }

# Debian's interpreter: a python3 earlier on PATH (pyenv, venv) does not see python3-torch.
py=/usr/bin/python3
anchor=1
if ! $py -c 'import torch' 2>/dev/null; then
  if [ $smoke = 1 ]; then
    anchor=0
    echo "run.sh: smoke mode: skipping the torch anchor (python3-torch is not installed; a full run installs it)"
  else
    echo "installing the anchor: python3-torch (+ OpenBLAS so torch is not on the reference BLAS)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libopenblas0-pthread >/dev/null
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dp-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
world=${WORLD:-2}
export OMP_NUM_THREADS=1 MASTER_ADDR=127.0.0.1 WORLD_SIZE="$world" LOCAL_WORLD_SIZE="$world" DP_BACKEND=gloo
cpus=$(getconf _NPROCESSORS_ONLN)  # nproc would honour OMP_NUM_THREADS=1
pin() { [ "${PIN:-0}" = 1 ] && echo "taskset -c $(($1 % cpus))"; true; }

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Runs WORLD ranks of "$@" (fresh port and store); rank 0's stdout is appended to $out.
# A rank that fails (or hangs until the timeout) ends the run: its table would be wrong.
ranks() {
  out=$1; shift
  store=$(mktemp -d "$work/store-XXXXXX")
  port=$(free_port)
  others=""
  r=1
  while [ $r -lt "$world" ]; do
    # shellcheck disable=SC2046  # pin's words
    MASTER_PORT=$port DP_STORE_DIR=$store RANK=$r LOCAL_RANK=$r $(pin $r) timeout 900 "$@" >/dev/null &
    others="$others $!"
    r=$((r + 1))
  done
  # shellcheck disable=SC2046
  MASTER_PORT=$port DP_STORE_DIR=$store RANK=0 LOCAL_RANK=0 $(pin 0) timeout 900 "$@" >>"$out" || { echo "run.sh: rank 0 of $* failed" >&2; exit 1; }
  for p in $others; do wait "$p" || { echo "run.sh: a rank of $* failed" >&2; exit 1; }; done
}
torch_ranks() { [ $anchor = 0 ] || ranks "$work/raw.csv" $py "$here/torch_allreduce.py" "$lo" "$hi" "$most"; }

# The order alternates between rounds and the ceilings run last: which pair of
# processes starts first, or right after a CPU-heavy program, measurably
# changes where the kernel places them (up to 10x at small sizes here).
for i in $(seq "$rounds"); do
  if [ $((i % 2)) = 1 ]; then
    DP_SHM=off ranks "$work/raw.csv" "$bench" "$lo" "$hi" "$most"
    DP_SHM=auto ranks "$work/raw.csv" "$bench" "$lo" "$hi" "$most"
    torch_ranks
  else
    torch_ranks
    DP_SHM=auto ranks "$work/raw.csv" "$bench" "$lo" "$hi" "$most"
    DP_SHM=off ranks "$work/raw.csv" "$bench" "$lo" "$hi" "$most"
  fi
  # shellcheck disable=SC2086
  "$ceil" $ceil_args >>"$work/raw.csv"
done

# RAW=<file> keeps the raw CSV lines.
[ -n "${RAW:-}" ] && cp "$work/raw.csv" "$RAW"
$py "$here/report.py" "$work/raw.csv" "$rounds" "${PIN:-0}" "$world"
