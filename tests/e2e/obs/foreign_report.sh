#!/usr/bin/env bash
# A report file another user (dptest2) created first where the step's report
# goes is never written into: srun refuses it naming its owner, the file
# keeps its contents, and the step itself runs and ends with status 0.
. "$(dirname "$0")/common.sh"
site

as_other sh -c 'echo planted > report.json'
[[ $(stat -c %U "$WORK/report.json") == dptest2 ]] || fail "dptest2 could not plant report.json"
rc=0
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=1 --dp-report=report.json \
  -o "$WORK/rank%t.log" "$DP_OBS_WORKER" 20 >"$WORK/srun.log" 2>&1 || rc=$?
cat "$WORK/srun.log"
((rc == 0)) || fail "the step failed (status $rc) because of another user's report file"
grep -q '^DONE' "$WORK/rank1.log" || fail "rank 1 did not finish: $(cat "$WORK/rank1.log")"
grep -q "the step report report.json belongs to dptest2 (uid $(id -u dptest2)), not to you: refused" \
  "$WORK/srun.log" || fail "srun did not refuse the planted report naming its owner"
[[ $(cat "$WORK/report.json") == planted ]] || fail "the planted report was written into"

# The user's own report: created 0600.
as_user timeout 120 srun --dp-world=auto -N2 --ntasks-per-node=1 --dp-report=own-%u.json \
  "$DP_OBS_WORKER" 5 >"$WORK/srun2.log" 2>&1 || fail "the second step failed: $(cat "$WORK/srun2.log")"
[[ $(stat -c '%U %a' "$WORK/own-dptest.json") == "dptest 600" ]] ||
  fail "the user's report is not dptest's with mode 600: $(stat -c '%U %a' "$WORK"/own-*.json 2>&1)"
pass "another user's report file refused by name, left alone; the step ran; own report 0600 (%u)"
