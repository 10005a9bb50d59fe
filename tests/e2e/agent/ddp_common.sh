# shellcheck shell=bash
# Shared by the fail-fast tests of an unmodified PyTorch DDP program (gloo,
# env://, no libdp: pytorch/ddp.py) on 2 nodes x 2 tasks. Sourced after lib.sh.
#   start_ddp NAME [ddp.py args...]   srun --dp-world=auto in the background: srun_pid,
#                                     job; each rank's output in $WORK/rank<R>.log;
#                                     srun also gets the words of ddp_srun_flags, and
#                                     the variables of ddp_env (NAME=value words)
#   start_plain_ddp NAME [args...]    the same without slurm-dp (the variables by hand)
#   wait_ranks_ready SECS             every rank did its first all-reduce
#   rank_pid RANK [VAR [NAMES]]       the python process of that rank of $job (VAR=RANK
#                                     and NAMES='python3(\.[0-9]+)?': torchrun's worker)
#   expect_srun_ok SECS WHAT          srun (t0 set by the caller) exits 0 within SECS
#   same_params LABEL                 every rank ended with the same parameters
#   ddp_site [key=value...]           site, and pytorch_launcher_env's variables in ddp_env
#   kill_pids_at_exit                 pids=(): the processes a test adds there are killed,
#                                     and the work folder removed, at its exit
#   n2_link                           namespace mode: n2's veth in $veth; cut_n2 takes it
#                                     down, restore (also on exit) brings it back up
#   expect_node_verdict SECS BOUND NODE RANKS
#                                     NODE was cut off at t0: srun exits non-zero within
#                                     BOUND + 10 s naming NODE's agent and a node verdict
#   survivors                         the job's python processes still alive
#   sleep_line                        ddp.py's line where a --hang-rank sleeps
PYTHON=/usr/bin/python3
ddp_srun_flags=()
ddp_env=()
cp "$(dirname "${BASH_SOURCE[0]}")/../pytorch/ddp.py" "$WORK/ddp.py"
chmod 644 "$WORK/ddp.py"
# The line of ddp.py where a --hang-rank sleeps: its frame in a stacks read.
sleep_line=$(grep -n 'time.sleep(3600)' "$WORK/ddp.py" | cut -d: -f1)

ddp_site() {
  site "$@"
  pytorch_launcher_env
  ddp_env=("${pet[@]}")
}

kill_pids_at_exit() {
  pids=()
  trap 'kill "${pids[@]}" 2>/dev/null || true; cleanup_work' EXIT
}

start_ddp() {
  local name=$1-$$
  shift
  # USE_LIBUV=0: Debian 13's torch 2.6 has no libuv TCPStore but asks for it.
  as_user env "${ddp_env[@]}" srun --dp-world=auto "${ddp_srun_flags[@]}" -N2 --ntasks-per-node=2 -J "$name" \
    -o "$WORK/rank%t.log" \
    --export=ALL,USE_LIBUV=0 \
    "$PYTHON" "$WORK/ddp.py" --ready-file "$WORK/ready" "$@" >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
}

# As users run DDP without slurm-dp: the rendezvous variables by hand
# (USE_LIBUV=0, as start_ddp: Debian's torch 2.x lacks libuv but asks for it).
start_plain_ddp() {
  local name=$1-$$ port=$((20500 + ${DP_CLUSTER_PORT_BASE:?} % 1000))
  shift
  # shellcheck disable=SC2016 # expanded in the tasks
  as_user srun -N2 --ntasks-per-node=2 -J "$name" -o "$WORK/rank%t.log" bash -c \
    'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) MASTER_PORT='"$port"' RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID USE_LIBUV=0 exec '"$PYTHON $WORK/ddp.py --ready-file $WORK/ready $*" \
    >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
}

all_ready() { [[ -f $WORK/ready.0 && -f $WORK/ready.1 && -f $WORK/ready.2 && -f $WORK/ready.3 ]]; }
wait_ranks_ready() {
  wait_until "$1" "every rank's first all-reduce ($(cat "$WORK/srun.log" "$WORK"/rank*.log 2>/dev/null | tail -5))" all_ready
}

rank_pid() {  # rank_pid RANK [VARIABLE [NAMES]]: by SLURM_PROCID, or a launcher's worker by RANK
  local p
  for p in $(job_pids "$job" "${3:-python3}"); do
    grep -qzxF "${2:-SLURM_PROCID}=$1" "/proc/$p/environ" 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}

survivors() { job_pids "$job" python3; }

same_params() {
  local params
  params=$(sed -n 's/.*params=\([0-9a-f]*\).*/\1/p' "$WORK"/rank*.log | sort -u)
  [[ $(wc -l <<<"$params") == 1 && -n $params ]] || fail "$1: the ranks end with different or no parameters: $params"
  echo "$1: every rank ended with parameters $params"
}

expect_node_verdict() {
  expect_srun_failed "$1" "$3 was cut off"
  ((ms <= ($2 + 10) * 1000)) || fail "srun exited $ms ms after the cut; the bound is $2 s + 10 s"
  expect_contains "$last" "the node agent on host $3 (ranks $4)" "srun's last line"
  [[ $last == *"verdict node_silent"* || $last == *"verdict node_lost"* ]] || fail "srun's last line names no node verdict: $last"
}

expect_srun_ok() {
  wait_srun "$1"
  cat "$WORK/srun.log"
  ((ms >= 0)) || fail "srun still ran $1 s after $2"
  ((rc == 0)) || fail "srun exited $rc after $2: $(srun_last_line)"
}

n2_link() {
  [[ $DP_CLUSTER_MODE == ns ]] || fail "needs the namespace cluster (one network stack per node)"
  veth=dpv${DP_CLUSTER_PORT_BASE}n2
  ip link show "$veth" >/dev/null || fail "no link $veth: dp-cluster names n2's veth otherwise"
  cut=0
  trap 'restore; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT
}
cut_n2() {
  ip link set "$veth" down
  cut=1
}
restore() {
  ((cut == 0)) || ip link set "$veth" up
  cut=0
}
