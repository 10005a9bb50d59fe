#!/usr/bin/env bash
# A hang named for an unmodified program (issue 45): PyTorch DDP (gloo,
# env://, no libdp) on 2 nodes x 2 tasks, rank 3 asleep in its loop at step
# 20 while ranks 0-2 wait in the next all_reduce, --dp-hang-timeout=$bound.
#  - --dp-on-hang=name (the default): within the bound + 10 s of the stall one
#    "slurm-dp: ... hang:" line on srun's stderr names rank 3, its node and
#    pid, and where each rank is: the script's lines and the calls they wait
#    in, rank 3's time.sleep, the others' DDP backward, where its all-reduce
#    waits (Python 3.8+: Debian 12's 3.11 and the lanes' 3.13 and 3.14 alike);
#    dp-top shows it (its table: every rank "computing", as an unmodified
#    program reports no collectives); the step runs on (every rank alive 3 s
#    later).
#  - --dp-on-hang=end: the same line within the bound + 10 s, and the step
#    ends within 10 s of it, non-zero, its last line the hang (verdict hang),
#    and no task survives.
# The bound is the issue's 20 s (DP_E2E_HANG_BOUND changes it): the watch
# idles while the ranks wait, so the test's wall time is the bound, not CPU.
#  - the same under one torchrun per node (not in the Debian 13 lane): worker
#    rank 3 named by its pid and its frames; the step ended.
# The healthy 100 ms loop before the stall is never named (its main threads
# run), which the first phase checks: no line before rank 3 sleeps.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/ddp_common.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
bound=${DP_E2E_HANG_BOUND:-20}
ddp_site
trap 'kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

notice() { grep -m1 'slurm-dp: step .*: hang: ' "$WORK/srun.log"; }
stalled_step() {  # stalled_step NAME ON-HANG: starts it; t0 when rank 3 sleeps
  ddp_srun_flags=(--dp-hang-timeout="${bound}s" --dp-on-hang="$2")
  start_ddp "$1" --steps 100000 --step-ms 100 --hang-rank 3 --hang-at 20
  wait_ranks_ready 120
  wait_until 60 "rank 3 asleep in its loop" grep -q "hangs at step" "$WORK/rank3.log"
  t0=$(date +%s%N)
  [[ -z $(notice) ]] || fail "a hang was named before rank 3 stopped: $(notice)"
}

stalled_step hang-name name
wait_until $((bound + 10)) "a hang line on srun's stderr" notice
line=$(notice)
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$line"
echo "named $ms ms after rank 3 stopped (bound ${bound} s)"
expect_contains "$line" "no rank has made progress for" "the hang line"
expect_contains "$line" "(--dp-hang-timeout=${bound}s)" "the hang line names the user's own bound"
expect_contains "$line" "rank 3 (n2, pid $(rank_pid 3))" "the hang line"
expect_contains "$line" "the step runs on" "the hang line"
expect_contains "$line" "[clock_nanosleep] <- time.sleep <- main ddp.py:$sleep_line" "rank 3's time.sleep (its system call, the call its line makes) and its line"
expect_contains "$line" "ranks 0-2: " "the waiting ranks, merged"
# DDP's all-reduce runs in autograd's engine: the others wait in backward.
expect_contains "$line" "ranks 0-2: [futex] <- Variable._execution_engine.run_backward <- " "the others' wait in DDP's backward (its all-reduce)"
[[ $line != *"no Python frames"* ]] || fail "a rank of the hang line has no Python frames: $line"
top=$(as_user "$DP_TOP" --once "$job.0" 2>&1) || fail "dp-top --once failed: $top"
echo "$top"
expect_contains "$top" "hang at " "dp-top's view"
# An unmodified program's ranks report no collectives of their own: dp-top's
# table shows every one, blocked or asleep, as computing (the README says so
# and points at --stacks, which the hang line above is).
for r in 0 1 2 3; do
  grep -qE "^$r +n$((r / 2 + 1)) +computing " <<<"$top" || fail "dp-top's table does not show rank $r as computing: $top"
done
until_s=$((SECONDS + 3))  # the step runs on: srun checked for 3 s
while ((SECONDS < until_s)); do
  kill -0 "$srun_pid" 2>/dev/null || fail "srun ended under --dp-on-hang=name: $(cat "$WORK/srun.log")"
  sleep 0.1
done
for r in 0 1 2 3; do rank_pid $r >/dev/null || fail "rank $r is gone under --dp-on-hang=name"; done
scancel "$job"
wait_srun 30
rm -f "$WORK"/ready.* "$WORK"/rank*.log

stalled_step hang-end end
wait_until $((bound + 10)) "a hang line on srun's stderr (--dp-on-hang=end)" notice
named_ms=$((($(date +%s%N) - t0) / 1000000))
expect_srun_failed 10 "the hang line, under --dp-on-hang=end"
expect_contains "$last" "no rank has made progress for" "srun's last line"
expect_contains "$last" "verdict hang" "srun's last line"
echo "under end: named $named_ms ms after the stall, srun gone $ms ms after it"
left=$(survivors)
[[ -z $left ]] || fail "tasks of job $job survive the ended step: $left"
summary="a stalled unmodified DDP step named within $((bound + 10)) s (rank 3 on n2 and where each rank waits), running on under name; under end named in $named_ms ms, srun gone at $ms ms"
if [[ ${DP_E2E_LANE:-} == debian13 ]]; then  # testing's 3.14 workers prove the same reader
  echo "lane debian13: the same stall under torchrun per node is left to the Debian 12 and testing lanes"
  pass "$summary"
  exit 0
fi

# The same stall under one torchrun per node, --dp-on-hang=end: the watch
# reads torchrun's workers (the launcher's own wake-ups are no rank's
# progress) and names worker rank 3 by its pid.
rm -f "$WORK"/ready.* "$WORK"/rank*.log "$WORK"/node*.log
as_user env "${ddp_env[@]}" srun --dp-world=auto --dp-hang-timeout="${bound}s" --dp-on-hang=end \
  -N2 --ntasks-per-node=1 -J "hang-torchrun-$$" -o "$WORK/node%t.log" --export=ALL,USE_LIBUV=0 \
  torchrun --nproc_per_node=2 "$WORK/ddp.py" --ready-file "$WORK/ready" --steps 100000 --step-ms 100 \
  --hang-rank 3 --hang-at 20 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
find_job "hang-torchrun-$$"
wait_ranks_ready 120
wait_until 60 "worker rank 3 asleep in its loop" grep -q "hangs at step" "$WORK/node1.log"
t0=$(date +%s%N)
# torchrun starts its workers as sys.executable: python3.11, python3.13...
worker=$(rank_pid 3 RANK 'python3(\.[0-9]+)?') || fail "no worker of rank 3 in job $job"
expect_srun_failed $((bound + 30)) "worker rank 3 stopped, under --dp-on-hang=end"
line=$(notice) || fail "no hang line before the torchrun step ended"
expect_contains "$line" "rank 3 (n2, pid $worker)" "the hang line of torchrun's workers"
expect_contains "$line" "[clock_nanosleep] <- time.sleep <- main ddp.py:$sleep_line" "worker rank 3's time.sleep and its line"
expect_contains "$(srun_last_line)" "verdict hang" "srun's last line (torchrun)"
pass "$summary; under torchrun per node, worker rank 3 (pid $worker) named and the step ended in $ms ms"
