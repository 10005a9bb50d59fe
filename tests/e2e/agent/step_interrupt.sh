#!/usr/bin/env bash
# srun's Ctrl-C is Slurm's (issue 31), for an unmodified PyTorch DDP program
# (gloo, no libdp) on 2 nodes x 2 tasks, srun in a process group of its own
# as a terminal's foreground job:
#   one SIGINT to the group: srun prints the step's status, the step runs on
#     to rc 0 (dp-rendezvousd left srun's group; the control without
#     slurm-dp does the same);
#   two within a second: the step ends and srun's last line says the user
#     ended it (SIGINT), not a failure blaming a rank or a node;
#   plain scancel of the job: srun's last line says cancelled by the user;
#     the same with --dp-max-restarts=1, each task its program's keeper: a
#     cancelled step is ended, never restarted (issue 54).
. "$(dirname "$0")/../lib.sh"
site
# cancelk's task keepers imply the step's store: PyTorch 2.6+ built without
# libuv needs the no_libuv shim to be its client (agent/step_store.sh says why).
pytorch_launcher_env
# shellcheck disable=SC2034 # read by signal_common.sh
JOB_PREFIX=int SESSION=1
. "$(dirname "$0")/signal_common.sh"
train() {  # train NAME [--dp-world=auto [SRUN FLAGS...]]: until $WORK/NAME.stop exists
  local name=$1 args
  shift
  args=(--steps 100000 --step-ms 100 --until-file "$WORK/$name.stop" --ready-file "$WORK/$name")
  if [[ ${1:-} == --dp-world=auto ]]; then
    start_job "$name" "$@" -N2 --ntasks-per-node=2 "$PY" ddp.py "${args[@]}"
  else
    plain_ddp "${args[@]}"
    start_job "$name" -N2 --ntasks-per-node=2 "${plain[@]}"
  fi
}
ready() { [[ -f $WORK/$1.0 && -f $WORK/$1.1 && -f $WORK/$1.2 && -f $WORK/$1.3 && -s $WORK/$1.pgid ]]; }
interrupts() { grep -c 'interrupt (one more within 1 sec to abort)' "$WORK/$1.log" || true; }
more_interrupts() { (($(interrupts "$1") > $2)); }
ctrl_c() { kill -INT -- "-$(cat "$WORK/$1.pgid")"; }  # as a terminal: srun's whole group
ended() { local pid="pid_$1"; ! kill -0 "${!pid}" 2>/dev/null; }
status_of() {  # status_of NAME: srun's exit status in rc (it has ended)
  local pid="pid_$1"
  rc=0
  wait "${!pid}" || rc=$?
}
last_dp_line() { grep '^slurm-dp: ' "$WORK/$1.log" | tail -n1; }

# One Ctrl-C, with slurm-dp and without (the control): both run on to rc 0.
train once --dp-world=auto
train plain
for c in once plain; do wait_until 150 "$c: every rank's first all-reduce ($(tail -3 "$WORK/$c.log"))" ready "$c"; done
for c in once plain; do
  ctrl_c "$c"
  wait_until 30 "$c: srun's answer to one Ctrl-C" more_interrupts "$c" 0
done
job=$(squeue -h -o %i -n "int-once-$$" | head -n1)
has_daemon "$job" || fail "once: the step's daemon is gone after one Ctrl-C: $(cat "$WORK/once.log")"
for c in once plain; do touch "$WORK/$c.stop"; done
for c in once plain; do
  wait_until 120 "$c: the step to end after its stop file" ended "$c"
  status_of "$c"
  ((rc == 0)) || fail "$c: one Ctrl-C ended the step (srun exited $rc): $(cat "$WORK/$c.log")"
  [[ $(grep -c '^ddp rank=[0-3] world=4 ' "$WORK/$c.log") -eq 4 ]] || fail "$c: not every rank finished: $(cat "$WORK/$c.log")"
done
[[ -z $(last_dp_line once) ]] || fail "once: slurm-dp spoke after one Ctrl-C: $(last_dp_line once)"

# Two Ctrl-C within a second, and a plain scancel, at once.
train twice --dp-world=auto
train cancel --dp-world=auto
train cancelk --dp-world=auto --dp-max-restarts=1
for c in twice cancel cancelk; do wait_until 150 "$c: every rank's first all-reduce ($(tail -3 "$WORK/$c.log"))" ready "$c"; done
scancel "$(squeue -h -o %i -n "int-cancel-$$" | head -n1)"
scancel "$(squeue -h -o %i -n "int-cancelk-$$" | head -n1)"
# The second within a second of srun's answer to the first (a loaded host may
# take longer: then srun counts it as a first one, and we try again).
for _ in 1 2 3; do
  n=$(interrupts twice)
  ctrl_c twice
  wait_until 30 "twice: srun's answer to a Ctrl-C" more_interrupts twice "$n"
  ctrl_c twice
  # shellcheck disable=SC2016 # expanded by the inner shell
  if timeout 10 bash -c 'until grep -q "sending Ctrl-C" "$0"; do sleep 0.05; done' "$WORK/twice.log"; then break; fi
done
for c in twice cancel cancelk; do
  wait_until 60 "$c: srun to end" ended "$c"
  status_of "$c"
  ((rc != 0)) || fail "$c: srun exited 0: $(cat "$WORK/$c.log")"
  grep -v '^\s*$' "$WORK/$c.log" | tail -n 6
done
want='^slurm-dp: step [0-9]+\.[0-9]+ ended: ended by the user \(SIGINT: Ctrl-C twice at srun'
[[ $(last_dp_line twice) =~ $want ]] || fail "twice: slurm-dp's last line does not say the user ended the step: $(cat "$WORK/twice.log")"
want='^slurm-dp: step [0-9]+\.[0-9]+ ended: cancelled by the user \(SIGTERM'
[[ $(last_dp_line cancel) =~ $want ]] || fail "cancel: slurm-dp's last line does not say the user cancelled the step: $(cat "$WORK/cancel.log")"
[[ $(last_dp_line cancelk) =~ $want ]] || fail "cancelk: with task keepers, slurm-dp's last line does not say the user cancelled the step: $(cat "$WORK/cancelk.log")"
grep -q 'restart' "$WORK/cancelk.log" && fail "cancelk: a cancelled step was restarted: $(cat "$WORK/cancelk.log")"
grep -q 'first failure' "$WORK/twice.log" "$WORK/cancel.log" "$WORK/cancelk.log" && fail "a first failure was named: $(grep -h 'first failure' "$WORK"/*.log)"
pass "one Ctrl-C: rc 0 (as without slurm-dp); two: $(last_dp_line twice | cut -c1-90)...; scancel: $(last_dp_line cancel | cut -c1-80)..."
