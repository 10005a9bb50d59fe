#!/usr/bin/env bash
# Signals are the tasks' (issue 31): Slurm delivers `scancel --signal` and
# `--signal=SIG@T` to every process of the step, node agents included. The
# ranks of an unmodified PyTorch DDP program (gloo, no libdp: pytorch/ddp.py)
# handle SIGUSR1 and SIGUSR2 as checkpointing programs do and train on until
# every rank has seen each signal: rc 0 with --dp-world=auto per task, the
# same without slurm-dp (the control), under torchrun (one launcher per node;
# torchrun itself dies of SIGUSR1 with or without slurm-dp, so its shell
# ignores the notices, as users keep it alive), and with srun's
# --signal=USR1@90 of a three-minute job: slurmctld sends it once, on a pass
# over time limits, up to 60 s early (srun(1)), so 30 to 90 s in, when the
# step runs (one sent at once finds no step yet, with or without slurm-dp,
# and is lost). The same per task with --dp-max-restarts=1: each task is then
# its program's keeper (spank/task_keeper.hpp), which must neither die of the
# notices nor pass Slurm's own on a second time (issue 54). The five steps run
# at once: `timed` is one rank a node, so all five fit a node's 8 CPUs.
. "$(dirname "$0")/../lib.sh"
site
pytorch_launcher_env
# shellcheck disable=SC2034 # read by signal_common.sh
JOB_PREFIX=sig
. "$(dirname "$0")/signal_common.sh"
train=(ddp.py --steps 100000 --step-ms 100)

start_job timed --dp-world=auto -N2 --ntasks-per-node=1 --time=3 --signal=USR1@90 \
  "$PY" "${train[@]}" --until-signals USR1 --ready-file "$WORK/timed"
start_job pertask --dp-world=auto -N2 --ntasks-per-node=2 \
  "$PY" "${train[@]}" --until-signals USR1,USR2 --ready-file "$WORK/pertask"
plain_ddp "${train[@]:1}" --until-signals USR1,USR2 --ready-file "$WORK/control"
start_job control -N2 --ntasks-per-node=2 "${plain[@]}"
start_job keeper --dp-world=auto --dp-max-restarts=1 -N2 --ntasks-per-node=2 \
  "$PY" "${train[@]}" --until-signals USR1,USR2 --ready-file "$WORK/keeper"
start_job launcher --dp-world=auto -N2 --ntasks-per-node=1 bash -c \
  "trap '' USR1 USR2; exec torchrun --nproc_per_node=2 ${train[*]} --until-signals USR1,USR2 --ready-file $WORK/launcher"

ranks() { if [[ $1 == timed ]]; then echo 2; else echo 4; fi; }
# ready NAME, saw NAME SIG: a file from each of NAME's ranks.
ready() { [[ $(find "$WORK" -maxdepth 1 -name "$1.[0-9]" | wc -l) == "$(ranks "$1")" ]]; }
saw() { [[ $(find "$WORK" -maxdepth 1 -name "$1.[0-9].$2" | wc -l) == "$(ranks "$1")" ]]; }
job_of() { squeue -h -o %i -n "sig-$1-$$" | head -n1; }
for c in timed pertask control launcher keeper; do  # all five at once
  wait_until 150 "$c: every rank's first all-reduce ($(tail -3 "$WORK/$c.log"))" ready "$c"
done
for sig in USR1 USR2; do
  for c in pertask control launcher keeper; do
    job=$(job_of "$c")
    [[ -n $job ]] || fail "$c: its job is gone before SIG$sig: $(tail -5 "$WORK/$c.log")"
    scancel --signal="$sig" "$job"
  done
  for c in pertask control launcher keeper; do wait_until 60 "$c: every rank to see SIG$sig" saw "$c" "$sig"; done
done

# Every rank ran to its end having seen the signals; the step's status is 0.
finished() {  # finished NAME SIGNALS
  local name=$1 want=$2 pid="pid_$1" rc=0 lines n
  n=$(ranks "$name")
  wait "${!pid}" || rc=$?
  lines=$(grep -oE "ddp rank=[0-9] world=$n .* signals=$want" "$WORK/$name.log" | sort -u)
  ((rc == 0)) || fail "$name: srun exited $rc after the signals: $(tail -15 "$WORK/$name.log")"
  [[ $(wc -l <<<"$lines") -eq $n ]] || fail "$name: $n ranks ending with signals=$want expected: $(cat "$WORK/$name.log")"
}
finished pertask USR1,USR2
finished control USR1,USR2
finished launcher USR1,USR2
finished keeper USR1,USR2
grep -q 'restart' "$WORK/keeper.log" && fail "keeper: the notices made a restart: $(cat "$WORK/keeper.log")"
wait_until 120 "timed: every rank to see SIGUSR1 from --signal=USR1@90" saw timed USR1
finished timed USR1
grep -q 'slurm-dp' "$WORK/pertask.log" "$WORK/launcher.log" "$WORK/timed.log" "$WORK/keeper.log" &&
  fail "slurm-dp had something to say: $(grep -h slurm-dp "$WORK"/*.log)"
pass "scancel --signal=USR1/USR2 and --signal=USR1@90 reach every rank; rc 0 per task, with task keepers (--dp-max-restarts), under torchrun and without slurm-dp"
