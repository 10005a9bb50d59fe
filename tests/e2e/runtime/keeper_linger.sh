#!/usr/bin/env bash
# A libdp program in a step whose tasks keep their programs
# (--dp-max-restarts=1, spank/task_keeper.hpp) leaves the world (its
# goodbye) and exits 1.5 s later, as one that writes its checkpoint after
# the communicator is gone. Every rank's goodbye ends the step in the daemon
# (its DONE reaches the keepers) while the programs still run: each task
# must end with its program. srun exits 0, no later than the control (the
# same step without --dp-max-restarts: no keepers) + 5 s, not never.
. "$(dirname "$0")/common.sh"
site

run_linger() {  # run_linger WHAT [srun flags...]: sets ms
  local what=$1 t0 rc=0 out r
  shift
  t0=$(date +%s%N)
  out=$(as_user timeout 60 srun --dp-world=auto "$@" -N2 --ntasks-per-node=2 \
    --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=60000,DP_TEST_LINGER_MS=1500 \
    "$DP_COMM_WORKER" linger 2>&1) || rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$what: srun exited $rc after $ms ms"
  echo "$out"
  ((rc != 124)) || fail "$what: srun still ran 60 s after its start (every program had ended 1.5 s after its goodbye)"
  ((rc == 0)) || fail "$what: srun exited $rc: $out"
  for r in 0 1 2 3; do
    grep -qxF "OK rank $r left, then exited" <<<"$out" || fail "$what: rank $r did not end its program: $out"
  done
}

run_linger "control (no keepers)"
control=$ms
run_linger "--dp-max-restarts=1 (task keepers)" --dp-max-restarts=1
((ms <= control + 5000)) || fail "with task keepers srun took $ms ms, the control $control ms"
pass "programs that exit 1.5 s after their goodbye: srun exits 0 after $ms ms with task keepers, $control ms without"
