#!/usr/bin/env bash
# Keeping the survivors, for frameworks that recover in place: with the
# site's on_failure=keep, and then with the user's --dp-on-failure=keep on a
# site that ends failed steps, kill -9 of one rank leaves the other ranks
# running (past kill_grace, nobody ends them); dp-top names the failure
# meanwhile; once they finish, srun exits non-zero, and its last line and the
# --dp-report file name the killed rank and the verdict. The tasks wait for a
# release file (not a collective, which would fail on its own).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
trap 'touch "$WORK/release"; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

victim=3
cat >"$WORK/wait_release.py" <<PY
import os, time
open("$WORK/ready." + os.environ["RANK"], "w").close()
while not os.path.exists("$WORK/release"):
    time.sleep(0.05)
PY

keep_run() {  # keep_run HOW SRUN-ARGS...
  local how=$1 name=keep-$$-$RANDOM
  shift
  rm -f "$WORK"/ready.* "$WORK/release" "$WORK/report.json"
  as_user srun --dp-world=auto --dp-report="$WORK/report.json" -N2 --ntasks-per-node=2 -J "$name" \
    "$@" "$PYTHON" "$WORK/wait_release.py" >"$WORK/srun.log" 2>&1 &
  srun_pid=$!
  find_job "$name"
  wait_ranks_ready 60
  pid=$(rank_pid $victim) || fail "$how: no process of rank $victim in job $job"
  kill -9 "$pid"
  wait_until 10 "rank $victim gone" bash -c "! kill -0 $pid"
  # The verdict reaches every agent within milliseconds; kill_grace is 1 s.
  sleep 3 # the time the survivors must outlive, not a synchronisation
  for r in 0 1 2; do rank_pid $r >/dev/null || fail "$how: rank $r was ended"; done
  top=$(as_user "$DP_TOP" --once "$job.0" 2>&1) || fail "$how: dp-top failed: $top"
  expect_contains "$top" "rank $victim (host n2) was killed by signal 9" "$how: dp-top"
  expect_contains "$top" "verdict task_exit]" "$how: dp-top"
  touch "$WORK/release"
  t0=$(date +%s%N)
  wait_srun 30
  cat "$WORK/srun.log"
  ((ms >= 0)) || fail "$how: srun still runs 30 s after the release"
  ((rc != 0)) || fail "$how: srun exited 0 although rank $victim was killed"
  expect_contains "$(srun_last_line)" "first failure: rank $victim (host n2) was killed by signal 9" \
    "$how: srun's last line"
  expect_contains "$(cat "$WORK/report.json")" \
    '"rank":3,"host":"n2","how":"rank_lost","verdict":"task_exit"' "$how: the report's failure"
}

site on_failure=keep kill_grace=1
keep_run "site on_failure=keep"
site kill_grace=1
keep_run "srun --dp-on-failure=keep" --dp-on-failure=keep
pass "ranks 0-2 ran on after rank $victim was killed (site on_failure=keep, then srun --dp-on-failure=keep); srun, dp-top and the report name it"
