# shellcheck shell=bash
# Shared by the signal tests (agent/step_signals.sh, agent/step_interrupt.sh),
# sourced after lib.sh with JOB_PREFIX set; copies pytorch/ddp.py to $WORK.
#   start_job NAME SRUN-ARGS...   srun as dptest in the background, job
#                                 $JOB_PREFIX-NAME-$$, output in $WORK/NAME.log,
#                                 its pid in pid_NAME. With SESSION=1 srun leads a
#                                 session of its own, as a terminal's foreground
#                                 job: its process group's id in $WORK/NAME.pgid
#   plain_ddp ARGS...             sets the array plain: ddp.py ARGS without slurm-dp
#                                 (the rendezvous variables by hand, as users do)
# At exit every job it started is cancelled by name (srun may lead a session
# of its own, which killing the test's children does not reach).
cp "$DP_SOURCE_DIR/tests/e2e/pytorch/ddp.py" "$WORK/"
chmod 644 "$WORK/ddp.py"
PY=/usr/bin/python3
[[ -v pet ]] || pet=()  # pytorch_launcher_env's, when the test runs torchrun
started=()
cancel_jobs() {
  local n
  for n in "${started[@]}"; do scancel -n "$JOB_PREFIX-$n-$$" 2>/dev/null || true; done
  cleanup_work
}
trap cancel_jobs EXIT

start_job() {
  local name=$1 lead=()
  shift
  started+=("$name")
  # shellcheck disable=SC2016 # expanded by the session's shell
  [[ ${SESSION:-0} == 1 ]] && lead=(setsid bash -c 'echo $$ >"$0"; exec "$@"' "$WORK/$name.pgid")
  as_user "${pet[@]}" USE_LIBUV=0 timeout 200 "${lead[@]}" srun -J "$JOB_PREFIX-$name-$$" "$@" \
    >"$WORK/$name.log" 2>&1 &
  printf -v "pid_$name" %s $!
}

plain_ddp() {
  local port=$((20500 + DP_CLUSTER_PORT_BASE % 1000))
  # shellcheck disable=SC2016,SC2034 # expanded in the tasks; the caller's array
  plain=(bash -c 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) MASTER_PORT='"$port"' RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID exec '"$PY ddp.py $*")
}
