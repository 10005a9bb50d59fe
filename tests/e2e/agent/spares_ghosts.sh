#!/usr/bin/env bash
# A restart leaves no ghost (issue 63): the program behind a shell, as job
# scripts run it (`srun ... bash train.sh`, python not exec'd), each rank
# with a DataLoader of two worker processes: an unmodified PyTorch DDP
# program (pytorch/resume.py --loader) that resumes from its checkpoint.
#  1. the control: the same on 2 nodes, never stopped;
#  2. the node of ranks 2-3 is lost (every process of it killed at once) with
#     a spare waiting (srun -N3 --no-kill --dp-spares=1);
#  3. rank 1's python is killed, with --dp-max-restarts=1 (restarted in place).
# From before the loss to the step's end, every 50 ms the test lists every
# process of the job (bash, python and the loaders' workers, on every node):
# no sample holds a process of the old generation beside one of the new, and
# after the restart none of the old is left anywhere. Each ends rc 0 with the
# control's parameters.
# Its own 3-node cluster (spares_common.sh).
. "$(dirname "$0")/spares_common.sh"
site heartbeat_timeout=10 kill_grace=2
args=(--steps 50 --step-ms 150 --save-every 5 --loader)
cat >"$WORK/train.sh" <<'SH'
#!/bin/bash
# Not exec'd: the shell stays the task's program, python its child.
/usr/bin/python3 "$(dirname "$0")/resume.py" "$@"
exit $?
SH
chmod 755 "$WORK/train.sh"
program=(/bin/bash "$WORK/train.sh")

procs() { job_pids "$job" 'bash|python3'; }  # the job's programs on every node, workers too

# watch OLD...: from now until $WORK/watched is gone, each sample's count of
# the old generation's processes alive and of the new one's, a line each.
watch_generations() {
  local p old new
  touch "$WORK/watched"
  while [[ -e $WORK/watched ]]; do
    old=0 new=0
    for p in $(procs); do
      if [[ " $* " == *" $p "* ]]; then old=$((old + 1)); else new=$((new + 1)); fi
    done
    echo "$old $new" >>"$WORK/samples"
    sleep 0.05
  done
}

# restarted NAME LOSS: the restart came, the step ended rc 0 with the
# control's parameters, and no sample held both generations.
restarted() {
  wait_srun 240
  rm -f "$WORK/watched"
  wait "$watcher" 2>/dev/null || true
  cat "$WORK/srun.log"
  ((ms >= 0)) || spares_fail "$1: srun still ran 240 s after the $2"
  grep -q 'restart 1 of ' "$WORK/srun.log" || spares_fail "$1: no restart after the $2"
  [[ $rc == 0 ]] || grep -q 'completed after 1 restart' "$WORK/srun.log" ||
    spares_fail "$1: srun exited $rc: $(srun_last_line)"
  expect_eq "$(done_params)" "$control" "$1: the parameters after the restart and the control's"
  local both news
  both=$(awk '$1 > 0 && $2 > 0' "$WORK/samples" | wc -l)
  news=$(awk '$2 > 0' "$WORK/samples" | wc -l)
  echo "$1: $(wc -l <"$WORK/samples") samples, $news with the new generation, $both with both"
  ((news > 0)) || spares_fail "$1: no sample saw the new generation"
  ((both == 0)) || spares_fail "$1: $both samples held the old generation beside the new: $(grep -v '^0 ' "$WORK/samples" | sort | uniq -c)"
  local left
  left=$(for p in $old; do [[ ! -d /proc/$p ]] || echo "$p"; done)
  [[ -z $left ]] || spares_fail "$1: old processes still alive after the step: $left"
}

# 1. The control.
run_control "${args[@]}"

# 2. A node lost, a spare waiting.
rm -f "$WORK/samples"
start_resume ghosts-node 3 --no-kill --dp-spares=1 -- "${args[@]}"
wait_ready 180
old=$(procs)
(($(wc -w <<<"$old") >= 16)) || fail "4 ranks behind bash with 2 loader workers each are 16 processes: $old"
# shellcheck disable=SC2086 # one word per pid
watch_generations $old &
watcher=$!
lose_node n2
restarted node "loss of n2"
revive

# 3. A rank's program killed: restarted in place.
rm -f "$WORK/samples"
t0=$(date +%s%N)
start_resume ghosts-rank 2 --no-kill --dp-max-restarts=1 -- "${args[@]}"
wait_ready 180
old=$(procs)
# shellcheck disable=SC2086 # one word per pid
watch_generations $old &
watcher=$!
victim=""
for p in $(job_pids "$job" python3); do
  grep -qzxF RANK=1 "/proc/$p/environ" || continue
  [[ $(cat "/proc/$(awk '/^PPid:/ {print $2}' "/proc/$p/status")/comm") == bash ]] && victim=$p && break
done
[[ -n $victim ]] || fail "no python of rank 1 under its shell"
kill -KILL "$victim"
restarted rank "kill of rank 1's python (pid $victim)"
pass "a lost node and a killed rank restarted behind bash with DataLoader workers: no sample held both generations, none of the old left, the control's parameters"
