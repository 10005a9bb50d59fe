#!/usr/bin/env bash
# What the hang watch (issue 45) costs.
#  1. One read: `dp-stacks --each --repeat 20` of 8 Python processes, each
#     asleep 30 frames deep (a rank blocked in a collective looks the same to
#     the reader), of each Python at hand side by side: this machine's
#     python3 (Debian 12: 3.11), and as root Debian 11's 3.9 and Debian
#     testing's 3.14 in their roots (scripts/debian-root; each read from here
#     by pid, as a container's rank is): the median read per rank and per
#     frame, and the node agent's CPU per second for 8 ranks at the watch's
#     rates (a round every eighth of the bound, 1 to 15 s apart).
#  2. A/B on the cluster, pairs in turn off-on and on-off, medians of RUNS:
#     unmodified PyTorch DDP (bench/trainer/ddp_mlp.py, 2 nodes x 1 task
#     (DP_BENCH_TASKS), 3 epochs (DP_BENCH_EPOCHS)) and dp-trainer
#     (the same MLP; it links libdp, whose collective counters judge its
#     hangs, so its ranks are not read: the control), --dp-hang-timeout=8s (a
#     round every second, the watch's highest rate) against =off. Target:
#     on/off >= 0.99.
#
#   bench/hang_watch/run.sh [--smoke|--reader] BUILD_DIR [RUNS=7] [MODE=lo]
#
# --reader: part 1 alone (no cluster, nothing but the pythons).
#
# The cluster as bench/srun_overhead/run.sh brings it (DP_CLUSTER_DIR: a
# running one). --smoke: 1 run each, 2 x 1 tasks on 4 096 samples, figures
# meaningless (ctest e2e.lo.bench.hang_watch).
# Nothing is installed: python3-torch and Fashion-MNIST must be there
# (bench/trainer/run.sh installs them).
set -euo pipefail
. "$(dirname "$0")/../cluster.sh"
bench_args --reader 7 1 "$@"
reader=$option
stacks=$build/tools/dp-stacks trainer=$build/trainer/dp-trainer
for f in "$plugin" "$daemon" "$stacks" "$trainer"; do
  [[ -e $f ]] || { echo "run.sh: $f is not built" >&2; exit 1; }
done
work=$(mktemp -d /tmp/dp-bench-hang.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null || true
  bench_cluster_down
  rm -rf "$work"
}
trap cleanup EXIT
calc() { awk "BEGIN { print $1 }"; }  # no bc: the testing lane's root has none

# 1. The reader, on 8 sleeping processes 30 frames deep, of each Python.
cat >"$work/deep.py" <<'PY'
import sys, time
def down(n):
    if n == 0:
        open(sys.argv[1], "w").close()
        time.sleep(3600)
    down(n - 1)
down(28)
PY
roots=${DP_DEBIAN_ROOTS:-/var/cache/slurm-dp}
# start_pythons TAG [ROOT]: 8 of them, their pids in $work/pids.TAG. In a
# root: chrooted, in a mount namespace of their own where $work is /tmp/work.
start_pythons() {
  local tag=$1 root=${2:-}
  if [[ -z $root ]]; then
    for i in 0 1 2 3 4 5 6 7; do
      /usr/bin/python3 "$work/deep.py" "$work/up.$tag.$i" &
      echo $! >>"$work/pids.$tag"
    done
    return
  fi
  # shellcheck disable=SC2016 # expanded by the inner bash
  unshare --mount --propagation private bash -c '
    root=$1 work=$2 tag=$3
    mount -t tmpfs tmpfs "$root/tmp" && mkdir "$root/tmp/work" && mount --bind "$work" "$root/tmp/work"
    for i in 0 1 2 3 4 5 6 7; do
      chroot "$root" /usr/bin/python3 /tmp/work/deep.py "/tmp/work/up.$tag.$i" &
      echo $! >>"$work/pids.$tag"
    done
    wait' reader "$root" "$work" "$tag" &
}
# read_pythons TAG: one line of figures for them.
read_pythons() {
  local tag=$1 i
  for i in 0 1 2 3 4 5 6 7; do
    for _ in $(seq 200); do [[ -e $work/up.$tag.$i ]] && break; sleep 0.05; done
    [[ -e $work/up.$tag.$i ]] || { echo "run.sh: python3 ($tag) did not start" >&2; exit 1; }
  done
  mapfile -t tagged <"$work/pids.$tag"
  pids+=("${tagged[@]}")
  local each per_rank frames t0 all_ms python per_frame
  each=$("$stacks" --each --repeat 20 "${tagged[@]}")
  # "..., N ms per read" per process (--each: its median read), and its frames.
  per_rank=$(sed -n 's/.*, \([0-9.]*\) ms per read$/\1/p' <<<"$each" | median)
  frames=$(grep -v '^      calls ' <<<"$each" | grep -c '^      [^ ]' || true)  # not the calls lines
  t0=$(date +%s%N)
  "$stacks" "${tagged[@]}" >/dev/null
  all_ms=$(calc "($(date +%s%N) - $t0) / 1000000")
  python=$(sed -n 's/^pid [0-9]*: Python \([0-9.]*\),.*/\1/p' <<<"$each" | head -n 1)
  if ((frames)); then
    per_frame=$(printf '%.1f us per frame' "$(calc "$per_rank * 1000 * 8 / $frames")")
  else
    per_frame="no frames: $(grep -m1 -o 'no Python frames ([a-z_]*)' <<<"$each")"
  fi
  printf 'reader (Python %s): one rank %.3f ms (median of 20 reads), %d frames in all 8, %s; 8 ranks merged by dp-stacks (its start included) %.1f ms\n' \
    "${python:-?}" "$per_rank" "$frames" "$per_frame" "$all_ms"
  last_per_rank=$per_rank
}
start_pythons host
read_pythons host
host_per_rank=$last_per_rank
if [[ $(id -u) == 0 ]]; then
  for lane in debian11 debian-testing; do
    [[ -x $roots/$lane/usr/bin/python3 ]] || { echo "reader: no $roots/$lane (scripts/debian-root $lane ensure)"; continue; }
    start_pythons "$lane" "$roots/$lane"
    read_pythons "$lane"
  done
fi
for bound in 8 20 120; do
  every=$(calc "$bound / 8 < 1 ? 1 : ($bound / 8 > 15 ? 15 : $bound / 8)")
  printf '  hang_timeout %3d s: a round every %.2f s, the agent of 8 ranks (this python3) spends %.3f ms per second reading (%.4f%% of a CPU)\n' \
    "$bound" "$every" "$(calc "8 * $host_per_rank / $every")" "$(calc "8 * $host_per_rank / $every / 10")"
done
kill "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
pids=()
((reader)) && exit 0

# 2. A/B on the cluster: a round every second (8 s), the watch's highest rate.
bench_cluster "$plugin" "$daemon" "$mode"
bench_ab "$trainer" "$work" "$smoke" "$runs" --dp-hang-timeout off 8s
