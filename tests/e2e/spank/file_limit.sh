#!/usr/bin/env bash
# The step's daemon runs as the user with srun's open-file limits.
# A hard RLIMIT_NOFILE too low for the step fails it before any task starts,
# with one line naming the limit and the fix. Ranks talk to their node's agent
#, so the daemon's needs follow nodes, not ranks: a login shell's
# limit of 1 024 holds a world that one connection per rank could not.
. "$(dirname "$0")/../lib.sh"
site
marker="$WORK/task-ran"

# The daemon needs nodes + 112 descriptors (64 unauthenticated connections,
# 16 agents, 32 of its own): 114 for 2 nodes.
refused_with_limit() {  # $1: hard limit, $2: expected need, rest: srun arguments
  local hard=$1 need=$2 rc=0 out
  shift 2
  rm -f "$marker"
  out=$(as_user timeout 120 bash -c "ulimit -n $hard && exec srun --dp-world=auto $* touch $marker" 2>&1) || rc=$?
  echo "$out" | head -5
  ((rc != 0 && rc != 124)) || fail "hard limit $hard: srun exit $rc, expected a refusal"
  [[ ! -e $marker ]] || fail "hard limit $hard: a task started"
  local line
  line=$(grep -m1 '^slurm-dp: ' <<<"$out") || fail "hard limit $hard: no slurm-dp line: $out"
  expect_contains "$line" "RLIMIT_NOFILE, hard limit $hard)" "the refusal"
  expect_contains "$line" "needs at least $need descriptors" "the refusal"
  expect_contains "$line" "ulimit -Hn $need" "the fix"
  no_jobs() { [[ -z $(squeue -h -u "$DP_TEST_USER") ]]; }
  wait_until 30 "srun's allocation to be released after the refusal" no_jobs
}
refused_with_limit 100 114 -N2 --ntasks-per-node=2

# 920 ranks (460 a node on 8 CPUs, overcommitted; MaxTasksPerNode is 512)
# would need 1 032 descriptors with a connection per rank; through the node
# agents they run under a soft and hard limit of 1 024. (The cluster reserves
# MPI ports for every step, 15 in all: one is enough here.)
big=(-N2 -n 920 --overcommit --resv-ports=1)
rc=0
# shellcheck disable=SC2016 # expanded by the user's shell and the tasks
out=$(as_user timeout 240 bash -c 'ulimit -n 1024 && echo "soft=$(ulimit -Sn) hard=$(ulimit -Hn)" &&
  exec srun --dp-world=auto '"${big[*]}"' bash -c "[[ \$WORLD_SIZE == 920 ]] && echo ok"' 2>&1) || rc=$?
grep -v '^ok$' <<<"$out" | head -5
((rc == 0)) || fail "920 ranks under a limit of 1024: srun exit $rc"
grep -q '^soft=1024 hard=1024$' <<<"$out" || fail "the limits were not 1024"
[[ $(grep -cx ok <<<"$out") -eq 920 ]] || fail "not all 920 tasks ran with WORLD_SIZE=920"
pass "a hard file limit too low is refused before launch, naming it and the fix; a limit of 1024 runs 920 ranks"
