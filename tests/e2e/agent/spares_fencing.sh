#!/usr/bin/env bash
# A node cut off or frozen is fenced (issue 63), with the site's defaults
# (spare_timeout=20, fence_after=15): an unmodified PyTorch DDP program that
# resumes from its checkpoint (pytorch/resume.py --trace: every step and
# checkpoint written, by pid and time), 2 nodes x 2 tasks and a spare.
#  1. the control: the same on 2 nodes, never stopped;
#  2. n2's network down 10 s, then up: nothing is replaced (no restart), rc 0,
#     the control's parameters;
#  3. rank 0's node (n1) cut off for good, its processes alive: the spare
#     takes its place; n1's old programs are dead (sampled every 50 ms) before
#     the spare's first program starts (its start time from /proc); no step
#     or checkpoint by an old pid after that start; loss to the first
#     restarted step <= 30 s; the control's parameters;
#  4. n1 frozen (every process of it stopped) until the spare's programs have
#     stepped, then thawed: its old programs are killed (the window from the
#     thaw to the last one's end is printed, and bounded), none of them
#     completes a step or writes a checkpoint after the thaw; the control's
#     parameters.
# Its own 3-node cluster (spares_common.sh), in network namespaces.
. "$(dirname "$0")/spares_common.sh"
site kill_grace=2
args=(--steps 80 --step-ms 150 --save-every 5 --trace "$WORK/trace")
veth() { echo "dpv${DP_CLUSTER_PORT_BASE}n${1#n}"; }
cut_links=()
link_down() { ip link set "$(veth "$1")" down; cut_links+=("$1"); }
links_up() {
  local n
  for n in "${cut_links[@]}"; do ip link set "$(veth "$n")" up; done
  cut_links=()
}
trap 'links_up; spares_cleanup' EXIT
for n in n1 n2; do ip link show "$(veth "$n")" >/dev/null || fail "no link $(veth "$n"): dp-cluster names $n's veth otherwise"; done

hz=$(getconf CLK_TCK)
# The boot time in ns since the epoch, to 10 ms (/proc/stat's btime is whole seconds).
boot_ns=$(($(date +%s%N) - $(awk '{printf "%d", $1 * 100}' /proc/uptime) * 10000000))
# programs NODE: the job's python processes on NODE.
programs() {
  local p
  for p in $(job_pids "$job" python3); do
    grep -qzxF "SLURMD_NODENAME=$1" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
  return 0
}
# started_ns PID: when PID started, ns since the epoch (/proc's clock ticks).
started_ns() {
  local ticks
  ticks=$(awk '{print $22}' "/proc/$1/stat" 2>/dev/null) && [[ -n $ticks ]] || return 0
  echo $((boot_ns + ticks * 1000000000 / hz))
}
alive() {
  local p
  for p in "$@"; do [[ -d /proc/$p ]] && echo "$p"; done
  return 0
}
# by_old KIND SINCE_NS PIDS...: trace lines of KIND (step|save) by one of PIDS after SINCE_NS.
by_old() {
  local kind=$1 since=$2 p
  shift 2
  for p in "$@"; do
    awk -v k="$kind" -v p="pid=$p" -v s="$since" \
      '$1 == k && $2 == p { split($NF, a, "="); if (a[2] > s) print }' "$WORK/trace"
  done
}
finished() {  # finished NAME: rc 0 (or Slurm's 1 after the restart), the control's parameters
  wait_srun 240
  ((ms >= 0)) || spares_fail "$1: srun still ran 240 s later"
  [[ $rc == 0 ]] || grep -q 'completed after 1 restart' "$WORK/srun.log" ||
    spares_fail "$1: srun exited $rc: $(srun_last_line)"
  expect_eq "$(done_params)" "$control" "$1: the parameters and the control's"
}

# 1. The control.
run_control "${args[@]}"

# 2. A 10 s stall replaces nothing.
rm -f "$WORK/trace"
start_resume stall 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
from=$(date +%s%N)
link_down n2
while (($(date +%s%N) - from < 10000000000)); do
  kill -0 "$srun_pid" 2>/dev/null || spares_fail "srun ended during a 10 s stall of n2"
  sleep 0.1 # the stall under test, not a synchronisation
done
links_up
finished stall
! grep -q 'restart' "$WORK/srun.log" || spares_fail "a 10 s stall restarted the step: $(grep restart "$WORK/srun.log")"
echo "stall: 10 s of n2 off the network, no restart, rc $rc"

# 3. Rank 0's node cut off for good.
rm -f "$WORK/trace"
start_resume cut 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
old=$(programs n1)
(($(wc -w <<<"$old") == 2)) || fail "n1 runs ranks 0-1: two programs, not: $old"
t0=$(date +%s%N)
link_down n1
dead_at="" new_start="" deadline=$((SECONDS + 90))
while [[ -z $new_start ]]; do
  ((SECONDS < deadline)) || spares_fail "no program started on the spare n3 within 90 s of the cut"
  # shellcheck disable=SC2086 # one word per pid
  [[ -n $dead_at || -n $(alive $old) ]] || dead_at=$(date +%s%N)
  for p in $(programs n3); do
    s=$(started_ns "$p")
    [[ -n $s ]] || continue
    [[ -n $new_start ]] && ((new_start <= s)) || new_start=$s
  done
  sleep 0.05 # the sampling period
done
# shellcheck disable=SC2086
[[ -n $dead_at ]] ||
  spares_fail "n1's old programs ($(alive $old)) still ran when the spare's first started"
((dead_at <= new_start)) ||
  spares_fail "n1's old programs were last seen alive $(((dead_at - new_start) / 1000000)) ms after the spare's first program started"
echo "cut: n1's old programs gone $(((dead_at - t0) / 1000000)) ms after the cut, the spare's first program started $(((new_start - t0) / 1000000)) ms after it"
finished cut
# shellcheck disable=SC2086
late=$(by_old step "$new_start" $old; by_old save "$new_start" $old)
[[ -z $late ]] || spares_fail "old-generation pids stepped or wrote a checkpoint after the spare started: $late"
read -r first load <<<"$(first_after "$t0")"
((first >= 0)) || spares_fail "no restarted rank completed a step"
((first - load <= 30000)) ||
  spares_fail "the first step after the cut completed $first ms after it (load $load ms); the bound is 30 s"
grep -m1 'restart 1 of ' "$WORK/srun.log"
echo "cut: loss to the first restarted step $((first - load)) ms (+ $load ms load)"
links_up

# 4. Frozen, replaced, thawed while the step runs.
wait_until 60 "job $job to end" job_done "$job"
rm -f "$WORK/trace"
start_resume freeze 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
old=$(programs n1)
freeze_node n1
wait_until 90 "the spare's programs' first step ($(tail -3 "$WORK/srun.log"))" \
  grep -q '^first rank=.* restart=1' "$WORK"/task4.log "$WORK"/task5.log
thawed=$(date +%s%N)
thaw_all
# shellcheck disable=SC2086
while [[ -n $(alive $old) ]]; do
  (($(date +%s%N) - thawed < 10000000000)) || spares_fail "n1's thawed old programs still run 10 s after the thaw: $(alive $old)"
  sleep 0.005 # the window's resolution
done
gone=$(date +%s%N)
window=$(((gone - thawed) / 1000000))
echo "freeze: n1's old programs killed $window ms after the thaw (sampled every 5 ms)"
finished freeze
# shellcheck disable=SC2086
late=$(by_old step "$thawed" $old; by_old save "$thawed" $old)
[[ -z $late ]] || spares_fail "the thawed old generation stepped or wrote a checkpoint: $late"
((window <= 2000)) || spares_fail "the thawed old generation ran $window ms; the bound is 2 s"
pass "a 10 s stall replaced nothing; rank 0's node cut off: its programs dead before the spare's started, no late write, equal parameters; frozen and thawed: killed ${window} ms after the thaw, no late step"
