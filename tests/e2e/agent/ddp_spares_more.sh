#!/usr/bin/env bash
# Restarts in place beyond one lost node (issue 54), with pytorch/resume.py:
#  1. --dp-spares=1 without --no-kill: refused before launch, naming the fix;
#     with the site's spares_no_kill=set, srun's default;
#  2. a node frozen (SIGSTOP of its every process) instead of lost: the spare
#     takes its place once its heartbeats stop; equal final parameters; the
#     first step after the restart <= heartbeat bound + 20 s after the freeze;
#  3. with one spare, a second loss ends the step, named (no spare left);
#  4. a program killed on a live node is restarted in place (no spare used),
#     equal final parameters;
#  5. a program that raises on every start is restarted --dp-max-restarts
#     times, then the step ends with its error, naming the spent budget.
# Its own 3-node cluster (spares_common.sh).
. "$(dirname "$0")/spares_common.sh"
bound=10
site heartbeat_timeout=$bound kill_grace=2
args=(--steps 60 --step-ms 150 --save-every 5)

# 1. No --no-kill: refused before launch (no program runs), the fix named.
out=$(as_user timeout 60 srun --dp-world=auto --dp-spares=1 -N3 --ntasks-per-node=1 \
  bash -c 'echo RAN' 2>&1) && fail "--dp-spares without --no-kill was not refused: $out"
expect_contains "$out" "--dp-spares=1: without srun --no-kill" "the refusal"
expect_contains "$out" "add --no-kill to srun" "the refusal"
[[ $out != *RAN* ]] || fail "a task ran its program in a refused step: $out"
# The site's spares_no_kill=set makes --no-kill srun's default for such a step.
site heartbeat_timeout=$bound kill_grace=2 spares_no_kill=set
out=$(as_user timeout 60 srun --dp-world=auto --dp-spares=1 -N3 --ntasks-per-node=1 \
  bash -c 'echo RAN' 2>&1) || fail "--dp-spares with the site's spares_no_kill=set was refused: $out"
[[ $(grep -c RAN <<<"$out") == 2 ]] || fail "spares_no_kill=set: 2 ranks (and a parked spare) expected: $out"
site heartbeat_timeout=$bound kill_grace=2

# The control, for the parameters.
run_control "${args[@]}"

# 2. A frozen node.
start_resume freeze 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
freeze_node n2
expect_restart_line n2 'slurm-dp: step .*: restart 1 of '
expect_contains "$line" "node n2 lost (node_silent" "the restart line"
expect_contains "$line" "spare n3 takes node rank 1 (ranks 2-3)" "the restart line"
expect_eq "$(done_params)" "$control" "the parameters after n2 froze and without a loss"
read -r first load <<<"$(first_after "$t0")"
((first >= 0 && first - load <= (bound + 20) * 1000)) ||
  fail "the first step after the restart came $first ms after the freeze (load $load ms); the bound is $bound s + 20 s"
echo "n2 frozen: first step $((first - load)) ms after the freeze, srun rc $rc; $line"
thaw_all
wait_until 120 "job $job to end once n2 was thawed" job_done "$job"

# 3. A second loss with one spare ends the step, named.
start_resume twice 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
lose_node n2
wait_until 120 "the restart after n2's loss" grep -q 'restart 1 of ' "$WORK/srun.log"
wait_until 120 "the restarted ranks' first step" grep -q '^first rank=2 .*restart=1' "$WORK/task4.log"
lose_node n1
expect_srun_failed 120 "a second loss with one spare"
expect_contains "$last" "the node agent on host n1" "srun's last line"
expect_contains "$last" "no spare node is left" "srun's last line"
revive

# 4. A crash restarted in place: rank 1's program killed on a live node.
start_resume crash 2 --dp-max-restarts=1 -- "${args[@]}"
wait_ready 180
victim=""
for p in $(job_pids "$job" python3); do
  if grep -qzxF RANK=1 "/proc/$p/environ"; then victim=$p; fi
done
[[ -n $victim ]] || fail "no program of rank 1"
kill -9 "$victim"
t0=$(date +%s%N)
wait_srun 240
cat "$WORK/srun.log"
((ms >= 0 && rc == 0)) || fail "the step with a crash restarted in place ended rc=$rc"
expect_contains "$(grep -m1 'restart 1 of 1' "$WORK/srun.log")" "in place" "the restart line"
expect_eq "$(done_params)" "$control" "the parameters after a crash restarted in place"

# 5. A program that fails on every start: restarted twice, then the step ends.
t0=$(date +%s%N)
start_resume hopeless 2 --dp-max-restarts=2 -- "${args[@]}" --fail-always
wait_srun 240
cat "$WORK/srun.log"
((ms >= 0)) || fail "a program that fails on every start ran on for 240 s"
((rc != 0)) || fail "srun exited 0 although every start failed"
starts=$(grep -ch 'cannot go on (--fail-always)' "$WORK"/task*.log | paste -sd+ | bc)
((starts >= 3)) || fail "the failing program started $starts times; 3 (the first and 2 restarts) expected"
last=$(srun_last_line)
expect_contains "$last" "exited with code 1" "srun's last line"
expect_contains "$last" "--dp-max-restarts=2" "srun's last line"
pass "refused without --no-kill; a frozen node replaced within the bound; a second loss named; a crash restarted in place; the budget spent, named"
