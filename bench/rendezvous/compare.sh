#!/bin/bash
# Two builds' start-up side by side: alternates dp-rdv-bench runs of BASE and
# NEW (each its own bench and daemon) at RANKS (131072) ranks through node
# agents, pipelined and sequential, and prints each run, then the medians and
# NEW/BASE. Usage: bench/rendezvous/compare.sh BASE_BUILD NEW_BUILD [RUNS]
# Not a test: run it on a quiet machine; alternating spreads load over both.
set -euo pipefail
base=${1:?usage: compare.sh BASE_BUILD NEW_BUILD [RUNS]} new=${2:?usage: compare.sh BASE_BUILD NEW_BUILD [RUNS]}
runs=${3:-9} ranks=${RANKS:-131072} rpn=${RANKS_PER_NODE:-8}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < runs; i++)); do
  for tag in base new; do
    b=$base
    [[ $tag == new ]] && b=$new
    for p in 1 0; do
      line=$("$b/bench/rendezvous/dp-rdv-bench" --daemon "$b/daemon/dp-rendezvousd" --runs 1 \
        --workers 2 --heartbeat-timeout-ms 0 --ranks "$ranks" --ranks-per-node "$rpn" \
        --pipeline "$p" 2>/dev/null | tail -n 1)
      echo "$tag pipeline=$p $line" | tee -a "$out"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for p in 1 0; do
  awk -v p="pipeline=$p" '
    $2 == p { for (i = 3; i <= NF; i++) if ($i ~ /^median_wall_s=/) { split($i, v, "="); w[$1, ++n[$1]] = v[2] } }
    function median(tag,   k, m, a, j, t) {
      m = n[tag]; for (k = 1; k <= m; k++) a[k] = w[tag, k]
      for (k = 2; k <= m; k++) { t = a[k]; for (j = k - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { b = median("base"); x = median("new")
          printf "%s: base median %.3f s, new median %.3f s, new/base x%.3f (%d runs each)\n", p, b, x, x / b, n["new"] }' "$out"
done
