# shellcheck shell=bash
# The one helper library of the e2e tests; each script sources it first:
#   . "$(dirname "$0")/../lib.sh"
#
# Needs DP_CLUSTER_DIR (set by dp_e2e_test); puts the cluster's SLURM_CONF in
# the environment so plain srun/sbatch/squeue/scontrol reach it. Tests that run
# jobs through the plugin also need DP_DAEMON (the built dp-rendezvousd, used by
# `site`). Nothing a test finds in a task's environment may come from the
# caller's shell, and jobs run as the unprivileged `dptest` user, as real users'
# would. It gives:
#   fail MSG | pass MSG | expect_eq ACTUAL EXPECTED WHAT | expect_contains TEXT PART WHAT
#   with_timeout SECS CMD...        run CMD, fail loudly if it takes longer
#   wait_until SECS WHAT CMD...     poll CMD until it succeeds, fail on the deadline
#   wait_job_end JOBID SECS         poll until the job ends; prints its final state
#   job_done JOBID                  the job has left the queue
#   find_job NAME                   the id of the job NAME in $job, once queued (30 s at most)
#   as_user CMD...                  run CMD as dptest in $WORK with a login's clean environment
#   as_other CMD...                 the same as dptest2, another tenant of the nodes (attacks)
#   test_port_range                 LOW-HIGH: 20 ports of this cluster's own for lease tests
#   site [key=value...]             the plugin line: the daemon under test plus extras
#   use_port_leases NAME [k=v...]   MASTER_PORT lease tests: leased ports, bind_master_port.py
#   expect_no_leases WHEN           fail if a port lease is left in $leases
#   end_job_and_site                EXIT trap: cancel $job, give the site back, remove $WORK
#   daemons_of_job / has_daemon / no_daemon JOBID    the job's dp-rendezvousd processes
#   job_pids JOBID NAME             the job's task processes named NAME
#   wait_srun SECS                  waits for the background srun_pid: rc, and ms since
#                                   t0 (set by the caller; -1 after SECS); srun_end (ns)
#   srun_last_line                  srun's last line in $WORK/srun.log as a user sees it
#                                   (not the daemon's own --dp-verbose log)
#   expect_srun_failed SECS WHAT    wait_srun SECS, srun's log printed: it exited non-zero
#                                   within SECS s of WHAT; its last line in $last
#   node_addr NODE | field LINE NAME | TASK_VARS | print_task
#   kill_and_expect_failures WHAT PID LIMIT_MS LINE_RE NAMES_RE RANK...
#                                   kill -9 PID in a held step (daemon/hold_ranks.sh); each
#                                   RANK must fail naming it in time; RANK~ may instead be
#                                   killed by the step's end (srun says so); sets worst (ms)
#   pytorch_launcher_env            the array pet: variables torchrun needs on this machine
#   record_restart_log              (by pass) DP_RECORD_RESTART_LOGS=1: the restart logs kept
#   WORK                            a fresh folder any user may write, removed at exit
set -euo pipefail

TEST_NAME=$(basename "$0" .sh)
TEST_PART=$(basename "$(dirname "$0")")
fail() { echo "FAIL [$TEST_NAME]: $*" >&2; exit 1; }
pass() {
  echo "ok [$TEST_NAME]: $*"
  record_lines
  record_restart_log
}
# In the Debian 13 and testing lanes (scripts/test-debian-lane sets
# DP_E2E_LANE), a test leaves out the parts that prove slurm-dp's own logic,
# which the Debian 12 lane runs on the same code; what the lane's Slurm,
# Python or PyTorch could change still runs. lane_skips WHAT says so.
in_lane() { [[ -n ${DP_E2E_LANE:-} ]]; }
lane_skips() { echo "lane $DP_E2E_LANE: left to the Debian 12 lane (same code): $*"; }

: "${DP_CLUSTER_DIR:?DP_CLUSTER_DIR is not set; run this script through ctest (dp_e2e_test) or set it to the folder of a running cluster}"
DP_CLUSTER=${DP_CLUSTER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd)/dp-cluster}
cluster_env=$("$DP_CLUSTER" env) || fail "no cluster in $DP_CLUSTER_DIR; run '$DP_CLUSTER up' (or the ctest fixture) first"
eval "$cluster_env"
unset cluster_env

unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST
# Variables the plugin sets must not leak in from the caller's shell.
unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT \
  DP_RDV_ADDR DP_RDV_SECRET DP_JOB_ID DP_STEP_ID DP_TILES DP_OPTIONS CUDA_VISIBLE_DEVICES \
  DP_BACKEND DP_STORE_DIR

export DP_TEST_USER=dptest TEST_NAME DP_CLUSTER

expect_eq() {
  [[ $1 == "$2" ]] || fail "${3:-value}: expected '$2', got '$1'"
}

expect_contains() {
  [[ $1 == *"$2"* ]] || fail "${3:-output}: expected to contain '$2', got: $1"
}

# CMD may be one of these helpers (e.g. as_user): it then runs in a child bash
# that gets every function and the exported variables.
with_timeout() {
  local secs=$1 rc=0
  shift
  if declare -F "$1" >/dev/null; then
    timeout --kill-after=5 "$secs" bash -c "$(declare -f); \"\$@\"" with_timeout "$@" || rc=$?
  else
    timeout --kill-after=5 "$secs" "$@" || rc=$?
  fi
  if ((rc == 124 || rc == 137)); then fail "timed out after ${secs}s: $*"; fi
  return "$rc"
}

# The command's output is not the test's: only its status counts. Polled
# every 50 ms for its first 2 s, then every 250 ms: most waits are for Slurm's
# state, and each squeue or scontrol costs ~14 ms of CPU (client, slurmctld,
# munge) on a machine whose 2 cores the tests share.
wait_until() {
  local secs=$1 what=$2 polls=0
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${secs}s waiting for: $what"
    if ((polls++ < 40)); then sleep 0.05; else sleep 0.25; fi
  done
}

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }

job_ended() {
  case $(job_state "$1") in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) return 0 ;;
    *) return 1 ;;
  esac
}

wait_job_end() {
  wait_until "$2" "job $1 to end (state now: $(job_state "$1"))" job_ended "$1"
  job_state "$1"
}

# Tests of one cluster run one at a time (RESOURCE_LOCK), so a job in its queue
# now was left by a test that ran past its ctest TIMEOUT and was killed before
# its EXIT trap: it would hold nodes and ports of this test. It goes first.
# A job the earlier test cancelled as it ended may still be completing: it is
# waited for too (not failed on: a node's cleanup is Slurm's).
left_jobs() { squeue -h -o %i 2>/dev/null || true; }
no_left_jobs() { [[ -z $(left_jobs) ]]; }
left=$(left_jobs)
if [[ -n $left ]]; then
  echo "jobs an earlier test left on this cluster, cancelled: $(echo $left)" >&2
  # shellcheck disable=SC2086
  scancel $left 2>/dev/null || true
  left_deadline=$((SECONDS + 60))
  until no_left_jobs || ((SECONDS > left_deadline)); do sleep 0.25; done
fi
unset left left_deadline

job_done() { [[ -z $(squeue -h -j "$1" 2>/dev/null) ]]; }

find_job() {
  local deadline=$((SECONDS + 30))
  until job=$(squeue -h -o %i -n "$1" | head -n1) && [[ -n $job ]]; do
    ((SECONDS < deadline)) || fail "no job named $1 in the queue: $(cat "$WORK/srun.log")"
    sleep 0.1
  done
}

wait_srun() {
  local deadline=$((SECONDS + $1))
  rc=0
  while kill -0 "$srun_pid" 2>/dev/null; do
    ((SECONDS < deadline)) || { ms=-1; return 0; }
    sleep 0.02
  done
  wait "$srun_pid" || rc=$?
  srun_end=$(date +%s%N)
  ms=$(((srun_end - t0) / 1000000))
}
srun_last_line() { grep -v -e '^\s*$' -e '^dp-rendezvousd: ' "$WORK/srun.log" | tail -n1; }

expect_srun_failed() {
  wait_srun "$1"
  cat "$WORK/srun.log"
  ((ms >= 0)) || fail "srun still ran $1 s after $2"
  ((rc != 0)) || fail "srun exited 0 after $2"
  # shellcheck disable=SC2034 # the caller's to read
  last=$(srun_last_line)
}

# srun_says_killed TASK: srun's stderr has "n2: task 3: Killed" or
# "n2: tasks 2-3: Killed" for TASK.
srun_says_killed() {
  local list part
  while read -r list; do
    for part in ${list//,/ }; do
      (($1 >= ${part%-*} && $1 <= ${part#*-})) && return 0
    done
  done < <(sed -n 's/.*: tasks\{0,1\} \([0-9,-]*\): Killed$/\1/p' "$WORK/srun.err")
  return 1
}

# kill -9 of PID (WHAT, for messages) while srun_pid's step holds its ranks:
# srun must exit non-zero, and each RANK's output must have a line matching
# LINE_RE that matches NAMES_RE and says "... at <ms since the epoch>:", less
# than LIMIT_MS after the kill. The kill scripts differ only in these.
# RANK~ shared the lost node's agent and learns of the loss at the same moment
# as the daemon, which ends the step at once: on a busy node the step's
# SIGKILL may come before the rank runs; srun must then say it was killed.
kill_and_expect_failures() {
  local what=$1 pid=$2 limit=$3 line_re=$4 names=$5 rc=0 t may_end line at killed_at
  shift 5
  killed_at=$(date +%s%3N)
  kill -9 "$pid"
  wait "${srun_pid:?set by daemon/hold_ranks.sh}" || rc=$?
  cat "$WORK"/task.*.out "$WORK/srun.err"
  ((rc != 0)) || fail "srun exited 0 after $what was killed"
  worst=0
  for t in "$@"; do
    may_end=${t//[0-9]/} t=${t%\~}
    if ! line=$(grep "$line_re" "$WORK/task.$t.out"); then
      [[ -n $may_end ]] || fail "rank $t did not report the failure"
      srun_says_killed "$t" || fail "rank $t neither reported the failure nor was killed by the step's end"
      echo "rank $t was ended by the step's end before it reported"
      continue
    fi
    grep -q "$names" <<<"$line" || fail "rank $t's error does not name $what: $line"
    at=$(sed -n 's/.* at \([0-9]*\):.*/\1/p' <<<"$line")
    ((at - killed_at < limit)) || fail "rank $t learned of it after $((at - killed_at)) ms (limit $limit)"
    echo "rank $t failed $((at - killed_at)) ms after the kill"
    if ((at - killed_at > worst)); then worst=$((at - killed_at)); fi
  done
}

WORK=$(mktemp -d "${DP_CLUSTER_WORK:-$DP_CLUSTER_DIR/work}/$TEST_PART-$TEST_NAME.XXXXXX")
chmod 777 "$WORK"
export WORK
cleanup_work() { [[ -n ${DP_E2E_KEEP:-} ]] || rm -rf "$WORK"; }
trap cleanup_work EXIT

# The slurm-dp: lines this test printed, for the docs' check
# (tests/e2e/docs/doc_lines.py): its own output is kept in $WORK/.output
# beside the files its steps wrote there, and when it passes their lines
# replace its rows of the corpus DP_LINES_CORPUS (the source tree's
# tests/fixtures/slurm-dp-lines.txt; empty: none kept).
: "${DP_LINES_CORPUS=${DP_SOURCE_DIR:+$DP_SOURCE_DIR/tests/fixtures/slurm-dp-lines.txt}}"
if [[ -n $DP_LINES_CORPUS ]]; then
  exec > >(tee -a "$WORK/.output") 2> >(tee -a "$WORK/.output" >&2)
fi
record_lines() {
  [[ -n $DP_LINES_CORPUS && -w $(dirname "$DP_LINES_CORPUS") ]] || return 0
  local files
  mapfile -t files < <(find "$WORK" -type f -size -4M 2>/dev/null)
  python3 "$(dirname "${BASH_SOURCE[0]}")/docs/doc_lines.py" record "$DP_LINES_CORPUS" \
    "e2e.${DP_CLUSTER_MODE:-own}.$TEST_PART.$TEST_NAME" "${DP_E2E_LANE:-host}" "${files[@]}" ||
    echo "lines of $TEST_NAME not recorded in $DP_LINES_CORPUS" >&2
}

# With DP_RECORD_RESTART_LOGS=1 (Debian 12 lane), the restart machine's lines
# in each log of $WORK (a step run with --dp-verbose) become the fixture
# tests/fixtures/restart-logs/MODE.PART.TEST.LOG.txt, which the unit test
# RestartMachine.RecordedRunsReplayLineForLine replays.
record_restart_log() {
  [[ ${DP_RECORD_RESTART_LOGS:-0} == 1 && -z ${DP_E2E_LANE:-} && -n ${DP_SOURCE_DIR:-} ]] ||
    return 0
  local dir=$DP_SOURCE_DIR/tests/fixtures/restart-logs f
  mkdir -p "$dir"
  while IFS= read -r f; do
    sed -n "s/^dp-rendezvousd: job [0-9]* step [0-9]*: \(restart machine: .*\|restart event .*\|restart generation .*\|[^ ]*'s programs are dead: .*\)\$/\1/p" \
      "$f" >"$dir/${DP_CLUSTER_MODE:-own}.$TEST_PART.$TEST_NAME.$(basename "$f" .log).txt"
  done < <(grep -rl 'restart event +' "$WORK" 2>/dev/null | grep -v '/\.output$')
}

# record_sample NAME FILE: what FILE holds (a command's output) is
# docs/output.md's sample NAME now, by its shape (docs/doc_samples.py); the
# Debian 12 lane's runs only, whose output the page shows.
record_sample() {
  [[ -z ${DP_E2E_LANE:-} && -n $DP_LINES_CORPUS && -w $(dirname "$DP_LINES_CORPUS") ]] || return 0
  python3 "$(dirname "${BASH_SOURCE[0]}")/docs/doc_samples.py" record "$DP_SOURCE_DIR" "$1" "$2" ||
    echo "sample $1 of $TEST_NAME not recorded" >&2
}

# Runs a command as dptest in $WORK; stdin, stdout and stderr pass through. A
# clean environment, only what a login would give, so anything found in a task
# was put there by Slurm or the plugin.
as_user() {
  (cd "$WORK" && runuser -u "$DP_TEST_USER" -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER="$DP_TEST_USER" LANG=C.UTF-8 "$@")
}

# The same as another tenant of the nodes (dptest2), for attacks on the plugin.
as_other() {
  (cd "$WORK" && runuser -u dptest2 -- env -i SLURM_CONF="$SLURM_CONF" PATH=/usr/bin:/bin \
    HOME="$WORK" USER=dptest2 LANG=C.UTF-8 "$@")
}

# A port range of this cluster's own for lease tests (attackers bind parts
# of it): 20 ports from 20000 + (base % 1000) * 10, apart from other trees'.
test_port_range() {
  local lo=$((20000 + (${DP_CLUSTER_PORT_BASE:?run under dp_e2e_test} % 1000) * 10))
  echo "$lo-$((lo + 19))"
}

# The site settings every plugin test needs (the daemon under test), plus extras.
site() { "$DP_CLUSTER" plugstack "daemon=${DP_DAEMON:?set DP_DAEMON to the built dp-rendezvousd}" "$@"; }

# MASTER_PORT lease tests: bind_master_port.py (rank 0 binds MASTER_PORT and
# holds it until $WORK/release exists) in $WORK, and the plugin leasing ports
# from leases=$DP_CLUSTER_DIR/spank-leases-NAME, plus the extra site settings.
# The caller's EXIT trap runs `site` to give the fixture's settings back.
use_port_leases() {
  cp "$(dirname "${BASH_SOURCE[0]}")/spank/bind_master_port.py" "$WORK/"
  leases=$DP_CLUSTER_DIR/spank-leases-$1
  shift
  site resv_ports=ignore "lease_dir=$leases" "$@"
}
# An EXIT trap for a test that submits $job and changes the site: the job
# cancelled, the fixture's settings back, the work folder gone.
end_job_and_site() {
  [[ -z ${job:-} ]] || scancel "$job" 2>/dev/null || true
  site
  cleanup_work
}
expect_no_leases() {
  [[ -z $(find "$leases" -name '[0-9]*') ]] || fail "leases left $1: $(ls "$leases")"
}

# The daemons of a job still alive (any user); job ids are this cluster's own
# (dp-cluster numbers each cluster's jobs apart).
daemons_of_job() { pgrep -f -- "dp-rendezvousd .*--job-id $1( |\$)" || true; }
has_daemon() { [[ -n $(daemons_of_job "$1") ]]; }
no_daemon() { [[ -z $(daemons_of_job "$1") ]]; }

# The job's task processes named NAME (by their SLURM_JOB_ID): never another
# cluster's, which may run the same program as the same user meanwhile.
job_pids() {
  local p
  for p in $(pgrep -x "$2"); do
    grep -qzxF "SLURM_JOB_ID=$1" "/proc/$p/environ" 2>/dev/null && echo "$p"
  done
  return 0
}

# NodeAddr of a node, as MASTER_ADDR must be.
node_addr() { scontrol show node "$1" | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p'; }

# "KEY=VALUE ..." of the listed variables in one task's environment.
# shellcheck disable=SC2034 # used by the scripts that source this file
TASK_VARS='RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK MASTER_ADDR MASTER_PORT DP_RDV_ADDR DP_JOB_ID DP_STEP_ID DP_TILES CUDA_VISIBLE_DEVICES'
# shellcheck disable=SC2034,SC2016 # expanded in the tasks
print_task='printf "%s %s %s" "$SLURM_PROCID" "$SLURM_LOCALID" "$SLURMD_NODENAME"; for v in '"$TASK_VARS"'; do printf " %s=%s" "$v" "${!v-unset}"; done; printf " SECRET=%s\n" "${DP_RDV_SECRET:+${#DP_RDV_SECRET}}"'

# Field `name` from a task line.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# What a test's torchrun needs here, in the array `pet` (env NAME=value words).
# Debian 12's torchrun (1.13, Python 3.11) crashes in its log redirection
# without PET_REDIRECTS=2 PET_TEE=2. Debian 13's torch 2.6 is built without
# the libuv TCPStore that 2.6 asks for by default: env:// needs USE_LIBUV=0,
# and torchrun's own store the test-only shim pytorch/no_libuv (copied to
# $WORK). Both are PyTorch's builds, not slurm-dp's; the user docs say so.
pytorch_launcher_env() {
  pet=(PET_REDIRECTS=2 PET_TEE=2)
  if ! /usr/bin/python3 - <<'PY' 2>/dev/null; then
import sys
import torch.distributed as d
try:
    d.TCPStore("127.0.0.1", 0, 1, True, use_libuv=True)
except TypeError:  # a torch without the option (1.13): nothing to work around
    sys.exit(0)
except RuntimeError as e:
    sys.exit(1 if "libuv" in str(e) else 0)
PY
    cp -r "$(dirname "${BASH_SOURCE[0]}")/pytorch/no_libuv" "$WORK/"
    pet+=(USE_LIBUV=0 PYTHONPATH="$WORK/no_libuv")
    echo "this PyTorch lacks the libuv TCPStore: USE_LIBUV=0 and the no_libuv shim"
  fi
}
