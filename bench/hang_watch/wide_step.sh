#!/usr/bin/env bash
# dp-top --stacks on a 64-rank step (issue 62: within 20 ms; issue 45: 2 s): 8 nodes x 8
# tasks of this machine's python3, each asleep 30 frames deep (a rank blocked
# in a collective looks the same to the reader). Medians of RUNS, each beside
# a plain `dp-top --once` of the same step (dp-top's start, Slurm's job
# look-up and the socket's search), whose difference is the round: the ask
# pushed to the 8 node agents, their reads in parallel, the daemon's merge.
#
#   bench/hang_watch/wide_step.sh [--smoke] BUILD_DIR [RUNS=7] [MODE=lo]
#
# Its own 8-node cluster (ports DP_BENCH_PORT_BASE, default 17600); with
# DP_CLUSTER_DIR naming a running cluster, that one, the 64 tasks spread over
# its nodes with --overcommit (one reserved port per node: the 2-node e2e
# cluster has 15 for 32 tasks a node). --smoke: 1 run, and the merged answer must
# hold all 64 ranks (ctest e2e.lo.bench.wide_step). Debian 12's Python 3.11
# is read by its layout table; for 3.14's frames:
#   scripts/debian-root debian-testing run bench/hang_watch/wide_step.sh build-debian-testing
set -euo pipefail
. "$(dirname "$0")/../cluster.sh"
bench_args "" 7 1 "$@"
ranks=64 top=$build/tools/dp-top
bench_prepare wide "$plugin" "$daemon" "$top"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

bench_cluster "$plugin" "$daemon" "$mode" 8
nodes=$(sinfo -h -o '%D' | head -1)

cat >"$work/deep.py" <<'PY'
import os, sys, time
def down(n):
    if n == 0:
        open(os.path.join(sys.argv[1], "up." + os.environ["SLURM_PROCID"]), "w").close()
        time.sleep(3600)
    down(n - 1)
down(28)
PY
srun -Q -O --resv-ports=1 --dp-world=auto -N"$nodes" -n$ranks -J "wide-$$" /usr/bin/python3 "$work/deep.py" "$work" \
  >"$work/srun.log" 2>&1 &
srun_pid=$!
for _ in $(seq 600); do
  job=$(squeue -h -n "wide-$$" -o %i | head -1)
  [[ -n $job ]] && (($(find "$work" -name 'up.*' | wc -l) == ranks)) && break
  kill -0 "$srun_pid" 2>/dev/null || { echo "wide_step.sh: the step ended: $(cat "$work/srun.log")" >&2; exit 1; }
  sleep 0.2
done
(($(find "$work" -name 'up.*' | wc -l) == ranks)) ||
  { echo "wide_step.sh: $ranks tasks did not start within 120 s" >&2; exit 1; }

once=() stacks=()
"$top" --once "$job.0" >/dev/null  # warm-up: page cache, Slurm's first look-up
for ((i = 0; i < runs; i++)); do
  t0=$(now_ms)
  "$top" --once "$job.0" >/dev/null
  once+=($(($(now_ms) - t0)))
  t0=$(now_ms)
  out=$("$top" --stacks "$job.0")
  stacks+=($(($(now_ms) - t0)))
done
echo "$out"
# Every rank once, across the groups ("rank R (host, pid P): ..." or "ranks A-B,C: ...").
seen=$(/usr/bin/python3 - "$out" <<'PY'
import re, sys
ranks = []
for line in sys.argv[1].splitlines():
    m = re.match(r"ranks? ([0-9,-]+)[ :]", line)
    if m:
        for part in m.group(1).split(","):
            a, _, b = part.partition("-")
            ranks += range(int(a), int(b or a) + 1)
print(len(set(ranks)) if sorted(ranks) == list(range(64)) else "not 0-63: %s" % sorted(ranks))
PY
)
[[ $seen == "$ranks" ]] || { echo "wide_step.sh: dp-top --stacks did not show ranks 0-63 once each: $seen" >&2; exit 1; }
[[ $out != *"no answer within"* ]] || { echo "wide_step.sh: a node agent did not answer" >&2; exit 1; }
mo=$(printf '%s\n' "${once[@]}" | median)
ms=$(printf '%s\n' "${stacks[@]}" | median)
python=$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')
printf 'dp-top --stacks, %d ranks on %d nodes (Python %s), median of %d: %s ms (dp-top --once %s ms; the round %s ms; target 20 ms)\n' \
  "$ranks" "$nodes" "$python" "$runs" "$ms" "$mo" "$((${ms%.*} - ${mo%.*}))"
echo "  --stacks: ${stacks[*]}"
echo "  --once:   ${once[*]}"
