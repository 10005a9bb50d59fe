#!/bin/bash
# Start-up benchmark of dp-rendezvousd against PyTorch's TCPStore (the anchor),
# through node agents and on the flat path (one connection per rank).
# Usage: bench/rendezvous/run.sh [--smoke] [BUILD_DIR] [RUNS]
#        bench/rendezvous/run.sh --torch [BUILD_DIR] [RUNS]   PyTorch's store protocol
#   through node agents (dp-store-bench) against PyTorch's own TCPStore server
#   driven by the same simulated clients (dp-store-bench --torch-server), in
#   the same run, up to TORCH_ANCHOR_MAX_RANKS (16384); one line per size. Ours is
#   timed from the first agent's connect (hellos included) and, last on the line,
#   from the clients' first bytes with every agent already connected (--clock
#   tasks), as in a real step.
#   RANKS="4096 16384 131072" chooses sizes; RANKS_PER_NODE (8) the node agents' ranks;
#   FLAT_MAX_RANKS (16384) and TCPSTORE_MAX_RANKS (4096) the largest flat and anchor runs;
#   SOFT_NOFILE=1024 runs our benchmark under that soft fd limit (a login shell's).
#   --smoke: seconds, 64 ranks, one run each; the anchor only where torch is already
#   installed (ctest bench.rendezvous). A run with failed ranks fails.
# Prints every run, then a table of medians. Not a test: run it on a quiet machine.
set -euo pipefail
smoke=0 torch=0
[[ ${1:-} == --smoke ]] && { smoke=1; shift; }
[[ ${1:-} == --torch ]] && { torch=1; shift; }
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${2:-3}
bench=${DP_RDV_BENCH:-$build/bench/rendezvous/dp-rdv-bench}
daemon=${DP_RENDEZVOUSD:-$build/daemon/dp-rendezvousd}
sizes=${RANKS:-4096 16384 131072}
rpn=${RANKS_PER_NODE:-8}
tcpstore_args=()
((smoke)) && { sizes=64 runs=1 tcpstore_args=(--procs 2 --threads 4); }
for f in "$bench" "$daemon"; do
  [[ -x $f ]] || { echo "run.sh: $f not found; build targets dp-rdv-bench and dp-rendezvousd first" >&2; exit 2; }
done
# The anchor software is installed here, never by the build or the tests.
anchor=1
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  if ((smoke)); then
    anchor=0
    echo "run.sh: smoke mode: skipping the TCPStore anchor (python3-torch is not installed; a full run installs it)"
  else
    apt-get install -y -qq python3-torch libtorch-dev libopenblas0-pthread >/dev/null
  fi
fi
if ((torch)); then
  store_bench=${DP_STORE_BENCH:-$build/bench/rendezvous/dp-store-bench}
  [[ -x $store_bench ]] || { echo "run.sh: $store_bench not found; build target dp-store-bench" >&2; exit 2; }
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  field() { tail -n1 <<<"$2" | sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }  # field NAME OUTPUT: its last line's NAME=
  for n in $sizes; do
    # The tasks' clock first: every agent connected before the clients start,
    # as in a real step (slurmstepd's agent says hello before any task runs).
    all=$("$store_bench" --daemon "$daemon" --ranks "$n" --ranks-per-node "$rpn" --runs "$runs" --clock tasks 2>/dev/null)
    echo "$all"
    tasks_s=$(field seconds "$all") tasks_cpu=$(field daemon_cpu_s "$all")
    all=$("$store_bench" --daemon "$daemon" --ranks "$n" --ranks-per-node "$rpn" --runs "$runs" 2>/dev/null)
    echo "$all"
    ours_s=$(field seconds "$all") per_node=$(field daemon_requests_per_node "$all")
    cpu=$(field daemon_cpu_s "$all") rss=$(field daemon_rss_mib "$all")
    theirs=- ratio=-
    if ((anchor)) && [[ $n -le ${TORCH_ANCHOR_MAX_RANKS:-16384} ]]; then
      all=$("$store_bench" --torch-server "$here/tcpstore_bench.py" --ranks "$n" --runs "$runs" 2>/dev/null)
      echo "$all"
      theirs=$(field seconds "$all")
      ratio=$(awk -v a="$theirs" -v b="$ours_s" 'BEGIN { printf "%.0f", a / b }')
    fi
    echo "torch-protocol $n ranks: $ours_s s through agents, $theirs s PyTorch TCPStore (x$ratio), $per_node daemon requests per node (daemon_cpu_s=$cpu daemon_rss_mib=$rss; agents already connected: $tasks_s s, daemon_cpu_s=$tasks_cpu)"
  done
  exit 0
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Heartbeats are off: the simulated peers send none, and a run on a busy machine may exceed 5 s.
ours() {
  ( [[ -n ${SOFT_NOFILE:-} ]] && ulimit -Sn "$SOFT_NOFILE"
    "$bench" --daemon "$daemon" --runs "$runs" --workers 2 --heartbeat-timeout-ms 0 "$@" 2>/dev/null ) | tee -a "$out"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; soft fd limit ${SOFT_NOFILE:-$(ulimit -Sn)}"
for n in $sizes; do
  ours --ranks "$n" --ranks-per-node "$rpn" --pipeline 1
  ours --ranks "$n" --ranks-per-node "$rpn" --pipeline 0
  if [[ $n -le ${FLAT_MAX_RANKS:-16384} ]]; then  # one fd per rank: beyond, the hard limit (20 000 here)
    ours --ranks "$n" --pipeline 1
    ours --ranks "$n" --pipeline 0
  fi
  if ((anchor)) && [[ $n -le ${TCPSTORE_MAX_RANKS:-4096} ]]; then  # TCPStore takes minutes beyond 4 096
    /usr/bin/python3 "$here/tcpstore_bench.py" --ranks "$n" --runs "$runs" "${tcpstore_args[@]}" 2>/dev/null | tee -a "$out"
  fi
  echo "load after ranks=$n: $(cut -d' ' -f1-3 /proc/loadavg)"
done
# field NAME [FILTER...]: the value of NAME= on the median line matching every FILTER word.
field() {
  local name=$1; shift
  awk -v name="$name" -v filters="$*" '
    BEGIN { nf = split(filters, f, " ") }
    { ok = 1; for (i = 1; i <= nf; i++) { hit = 0; for (j = 1; j <= NF; j++) if ($j == f[i]) hit = 1; if (!hit) ok = 0 }
      if (!ok) next
      for (j = 1; j <= NF; j++) if (index($j, name "=") == 1) v = substr($j, length(name) + 2) }
    END { print v }' "$out"
}
echo
echo "| ranks | nodes x $rpn, pipelined (s) | nodes x $rpn, sequential (s) | flat, pipelined (s) | flat, sequential (s) | TCPStore 1.13 (s) | TCPStore / nodes pipelined | daemon peak RSS, nodes (MiB) | daemon CPU, nodes pipelined (s) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in $sizes; do
  np=$(field median_wall_s dp-rendezvousd "ranks=$n" "mode=node$rpn" pipeline=1)
  ns=$(field median_wall_s dp-rendezvousd "ranks=$n" "mode=node$rpn" pipeline=0)
  fp=$(field median_wall_s dp-rendezvousd "ranks=$n" mode=flat pipeline=1)
  fs=$(field median_wall_s dp-rendezvousd "ranks=$n" mode=flat pipeline=0)
  tcp=$(field median_wall_s tcpstore "ranks=$n")
  rss=$(field max_rss_mib dp-rendezvousd "ranks=$n" "mode=node$rpn" pipeline=1)
  cpu=$(field median_cpu_s dp-rendezvousd "ranks=$n" "mode=node$rpn" pipeline=1)
  speed="-"
  [[ -n $tcp && -n $np ]] && speed=$(awk -v a="$tcp" -v b="$np" 'BEGIN {printf "%.1fx", a/b}')
  echo "| $n | ${np:--} | ${ns:--} | ${fp:--} | ${fs:--} | ${tcp:--} | $speed | ${rss:--} | ${cpu:--} |"
done
# A run whose ranks failed measured nothing.
if grep -E ' failures=[1-9]' "$out" >&2; then
  echo "run.sh: the runs above had failed ranks" >&2
  exit 1
fi
