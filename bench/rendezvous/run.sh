#!/bin/bash
# Start-up benchmark of dp-rendezvousd against PyTorch's TCPStore (the anchor).
# Usage: bench/rendezvous/run.sh [BUILD_DIR] [RUNS]
#   RANKS="1024 4096 16384" chooses sizes; TCPSTORE_MAX_RANKS (4096) the largest anchor run.
# Prints every run, then a table of medians. Not a test: run it on a quiet machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${2:-3}
bench=${DP_RDV_BENCH:-$build/bench/rendezvous/dp-rdv-bench}
daemon=${DP_RENDEZVOUSD:-$build/daemon/dp-rendezvousd}
for f in "$bench" "$daemon"; do
  [[ -x $f ]] || { echo "run.sh: $f not found; build targets dp-rdv-bench and dp-rendezvousd first" >&2; exit 2; }
done
# The anchor software is installed here, never by the build or the tests.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  apt-get install -y -qq python3-torch libtorch-dev libopenblas0-pthread >/dev/null
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for n in ${RANKS:-1024 4096 16384}; do
  # Heartbeats are off: the simulated ranks send none, and a run on a busy machine may exceed 5 s.
  "$bench" --daemon "$daemon" --ranks "$n" --runs "$runs" --pipeline 0 --workers 2 --heartbeat-timeout-ms 0 2>/dev/null | tee -a "$out"
  "$bench" --daemon "$daemon" --ranks "$n" --runs "$runs" --pipeline 1 --workers 2 --heartbeat-timeout-ms 0 2>/dev/null | tee -a "$out"
  if [[ $n -le ${TCPSTORE_MAX_RANKS:-4096} ]]; then  # TCPStore takes minutes beyond 4 096
    /usr/bin/python3 "$here/tcpstore_bench.py" --ranks "$n" --runs "$runs" 2>/dev/null | tee -a "$out"
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| ranks | dp-rendezvousd sequential (s) | dp-rendezvousd pipelined (s) | TCPStore 1.13 (s) | speed-up (seq) | daemon peak RSS (MiB) | daemon CPU, seq (s) |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for n in ${RANKS:-1024 4096 16384}; do
  seq=$(awk -v n="$n" '$1=="dp-rendezvousd" && $2=="ranks="n && $3=="pipeline=0" && $4 ~ /^median/ {split($4,a,"="); print a[2]}' "$out")
  pip=$(awk -v n="$n" '$1=="dp-rendezvousd" && $2=="ranks="n && $3=="pipeline=1" && $4 ~ /^median/ {split($4,a,"="); print a[2]}' "$out")
  tcp=$(awk -v n="$n" '$1=="tcpstore" && $2=="ranks="n && $3 ~ /^median/ {split($3,a,"="); print a[2]}' "$out")
  rss=$(awk -v n="$n" '$1=="dp-rendezvousd" && $2=="ranks="n && $6 ~ /^daemon_peak/ {split($6,a,"="); if (a[2]>m) m=a[2]} END {print m}' "$out")
  cpu=$(awk -v n="$n" '$1=="dp-rendezvousd" && $2=="ranks="n && $3=="pipeline=0" && $7 ~ /^daemon_cpu/ {split($7,a,"="); print a[2]}' "$out" | sort -n | sed -n 2p)
  speed="-"
  [[ -n $tcp && -n $seq ]] && speed=$(awk -v a="$tcp" -v b="$seq" 'BEGIN {printf "%.1fx", a/b}')
  echo "| $n | ${seq:--} | ${pip:--} | ${tcp:--} | $speed | ${rss:--} | ${cpu:--} |"
done
