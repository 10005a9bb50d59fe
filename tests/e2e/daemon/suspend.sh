#!/usr/bin/env bash
# Stopped is not dead: `scontrol suspend` of a running 2-node trainer job for
# 20 s (every task stopped, five times the old 4 s silence limit), then
# `scontrol resume`: the job finishes with exactly the parameters of an
# uninterrupted run. A plain srun (its daemon keeps running and sees every
# rank fall silent together) and an sbatch job (srun and the daemon are
# stopped with the job and see their own clock jump), suspended together
# while the uninterrupted run goes on beside them.
: "${DP_TRAINER:?set DP_TRAINER to the built dp-trainer}"
. "$(dirname "$0")/../lib.sh"
site

# 3 072 steps: a few seconds on a quiet core, so the window between step 100
# and the run's end leaves room for a busy slurmctld to take the suspend (at
# 1 024 steps a fast run sometimes ended first).
args=(--train-limit 16384 --hidden 512,256 --global-batch 32 --epochs 6 --no-eval --seed 5)
trainers_stopped() {  # trainers_stopped JOBID
  local pids p
  pids=$(job_pids "$1" dp-trainer)
  [[ -n $pids ]] || return 1
  for p in $pids; do [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) == T ]] || return 1; done
}
trainer() {  # trainer NAME EXTRA...: the srun command line of one run
  local name=$1
  shift
  echo srun --dp-world=auto -N2 --ntasks-per-node=1 -J "dps-$name-$$" \
    --export=ALL,OPENBLAS_NUM_THREADS=1 "$DP_TRAINER" "${args[@]}" --log-every 1 "$@"
}

find_job() {  # find_job NAME: sets job to the id of the running job dps-NAME-PID
  job=$(squeue -h -o %i -n "dps-$1-$$" 2>/dev/null | head -n1)
  [[ -n $job ]]
}
last_step() { sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$WORK/$1.jsonl" | tail -1; }
suspend_at_step_100() {  # suspend_at_step_100 NAME JOBID|"" ALIVE-COMMAND...: sets job, at_NAME
  local name=$1 deadline=$(($(date +%s) + 120))
  job=$2
  shift 2
  until grep -q '"step":100,' "$WORK/$name.jsonl" 2>/dev/null; do
    (($(date +%s) < deadline)) || fail "$name: did not reach step 100 in time: $(cat "$WORK/$name.log")"
    "$@" || fail "$name: ended early: $(cat "$WORK/$name.log")"
    sleep 0.05
  done
  # squeue can miss a moment under load (seen on Slurm 24.11): ask again.
  [[ -n $job ]] || wait_until 10 "$name: squeue to list job dps-$name-$$" find_job "$name"
  scontrol suspend "$job" || fail "$name: scontrol suspend $job failed: $(scontrol show job "$job" | grep -o 'JobState=[A-Z]* Reason=[^ ]*'); its log: $(tail -20 "$WORK/$name.log")"
  wait_until 10 "$name: job $job suspended" bash -c "scontrol show job $job | grep -q JobState=SUSPENDED"
  # slurmctld says SUSPENDED before slurmd has stopped the tasks: read the
  # step counter only once every trainer process is stopped (state T).
  wait_until 10 "$name: job $job's tasks stopped" trainers_stopped "$job"
  printf -v "at_$name" %s "$(last_step "$name")"
}
resume() {  # resume NAME JOBID: training did not go on while suspended
  local at="at_$1" after
  after=$(last_step "$1")
  [[ ${!at} == "$after" ]] || fail "$1: training went on while suspended (step ${!at} -> $after)"
  scontrol resume "$2" || fail "$1: scontrol resume $2 failed"
  echo "$1: job $2 suspended for 20 s or more at step ${!at}, resumed"
}

# The three runs at once (8 CPUs a node), the uninterrupted one among them:
# 1. srun from the login shell: the daemon runs on, every task is stopped;
# 2. inside sbatch: the batch step (srun and the daemon) is stopped too.
# shellcheck disable=SC2046
as_user timeout 250 $(trainer full --checkpoint "$WORK/full.ck" --log-every 0) >"$WORK/full.log" 2>&1 &
full_pid=$!
# shellcheck disable=SC2046
as_user timeout 250 $(trainer srun --checkpoint "$WORK/srun.ck" --metrics "$WORK/srun.jsonl") \
  >"$WORK/srun.log" 2>&1 &
pid=$!
cat >"$WORK/batch.sh" <<JOB
#!/bin/bash
$(trainer batch --checkpoint "$WORK/batch.ck" --metrics "$WORK/batch.jsonl")
JOB
chmod 755 "$WORK/batch.sh"
batch_job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -J "dps-batch-$$" -o "$WORK/batch.log" "$WORK/batch.sh")
batch_running() { ! job_done "$batch_job"; }
suspend_at_step_100 srun "" kill -0 "$pid"
srun_job=$job
suspend_at_step_100 batch "$batch_job" batch_running
sleep 20  # the suspension under test, not a synchronisation
resume srun "$srun_job"
resume batch "$batch_job"

wait "$full_pid" || fail "uninterrupted run failed: $(cat "$WORK/full.log")"
wait "$pid" || fail "suspended run failed: $(tail -20 "$WORK/srun.log")"
cmp -s "$WORK/full.ck" "$WORK/srun.ck" || fail "the suspended run ends with other parameters than the uninterrupted one"
wait_until 250 "batch job $batch_job to end" job_done "$batch_job"
[[ -f $WORK/batch.ck ]] || fail "batch run left no checkpoint: $(tail -20 "$WORK/batch.log")"
cmp -s "$WORK/full.ck" "$WORK/batch.ck" || fail "the suspended batch run ends with other parameters: $(tail -20 "$WORK/batch.log")"
pass "suspended for 20 s (srun outside, and inside sbatch, at once): same final parameters as the uninterrupted run"
