#!/usr/bin/env bash
# srun --ignore-signals (Slurm 26.05): a signal srun keeps from the tasks
# stays kept under --dp-world=auto, and the step ends rc 0 with nothing said
# by slurm-dp; without the option, srun forwards the same SIGUSR1 to every
# task (the control). Skips (77) where srun has no --ignore-signals.
. "$(dirname "$0")/../lib.sh"
if ! srun --help 2>&1 | grep -q -- '--ignore-signals'; then
  echo "SKIP [ignore_signals]: this srun ($(srun --version)) has no --ignore-signals (Slurm 26.05 added it)"
  exit 77
fi
site

# Each task notes SIGUSR1 and SIGUSR2 and runs until $WORK/<label>.stop exists.
# The traps write with a builtin: Slurm signals every process of the step, so
# a `touch` the USR1 trap started was killed by the USR2 forwarded just after
# it, and USR1 looked never forwarded (the testing lane, under load).
# shellcheck disable=SC2016 # expanded in the tasks
task='trap ": >$0/$1.USR1.$SLURM_PROCID" USR1; trap ": >$0/$1.USR2.$SLURM_PROCID" USR2
touch "$0/$1.up.$SLURM_PROCID"; while [ ! -e "$0/$1.stop" ]; do sleep 0.1; done'
up() { [[ -e $WORK/$1.up.0 && -e $WORK/$1.up.1 && -s $WORK/$1.pid ]]; }
both_saw() { [[ -e $WORK/$1.$2.0 && -e $WORK/$1.$2.1 ]]; }

# run LABEL SRUN-OPTION...: SIGUSR1 then SIGUSR2 to srun once its tasks are up;
# rc 0 expected.
run() {
  local label=$1 pid rc=0
  shift
  # shellcheck disable=SC2016 # expanded by the shell that becomes srun
  as_user timeout 60 bash -c 'echo $$ >"$0"; exec srun "$@"' "$WORK/$label.pid" "$@" -N2 --ntasks-per-node=1 \
    bash -c "$task" "$WORK" "$label" >"$WORK/$label.log" 2>&1 &
  pid=$!
  wait_until 30 "$label: both tasks up" up "$label"
  kill -USR1 "$(cat "$WORK/$label.pid")"
  kill -USR2 "$(cat "$WORK/$label.pid")"
  wait_until 30 "$label: SIGUSR2 forwarded to both tasks" both_saw "$label" USR2
  touch "$WORK/$label.stop"
  wait "$pid" || rc=$?
  ((rc == 0)) || fail "$label: srun exited $rc: $(cat "$WORK/$label.log")"
}

run control --dp-world=auto
wait_until 30 "control: SIGUSR1 forwarded to both tasks" both_saw control USR1
run kept --dp-world=auto --ignore-signals=USR1
[[ ! -e $WORK/kept.USR1.0 && ! -e $WORK/kept.USR1.1 ]] || fail "--ignore-signals=USR1: a task got SIGUSR1"
grep -q 'slurm-dp' "$WORK/kept.log" && fail "slurm-dp had something to say: $(cat "$WORK/kept.log")"
pass "srun --ignore-signals=USR1 keeps SIGUSR1 from a --dp-world step's tasks (forwarded without it); rc 0"
