#!/usr/bin/env bash
# srun's exit status as the README's Troubleshooting table says it, for this
# lane's Slurm series (the table's column 22.05, 24.11 or 26.05): each row's
# step is run here, as a user types it, and srun's status must be the cell's.
# A row the test does not know, or a case the table lacks, fails; so does a
# table with no column for this Slurm. The statuses are Slurm's (srun's own
# rule over how each task ended); slurm-dp decides only how the tasks end.
. "$(dirname "$0")/../lib.sh"
: "${DP_SOURCE_DIR:?set DP_SOURCE_DIR to the source tree}"
site kill_grace=1
trap 'site; cleanup_work' EXIT

series=$(srun --version | sed -n 's/^slurm[^0-9]*\([0-9]*\.[0-9]*\).*/\1/p')
[[ -n $series ]] || fail "cannot read the Slurm series from: $(srun --version)"

# The README's table: its header names the series; one row per case, the
# row's first cell starting with the case's words (below).
table=$(awk '/^\| the step \| 22\.05 \|/ { on = 1 } on && !/^\|/ { exit } on' "$DP_SOURCE_DIR/README.md")
[[ -n $table ]] || fail "README.md has no table whose header starts '| the step | 22.05 |'"
col=$(head -1 <<<"$table" | awk -F'|' -v s="$series" '{ for (i = 2; i < NF; i++) { c = $i; gsub(/ /, "", c); if (c == s) print i } }')
[[ -n $col ]] || fail "README.md's exit status table has no column for Slurm $series: $(head -1 <<<"$table")"
expected() {  # the cell of the row whose first cell starts with $1
  local cell
  cell=$(awk -F'|' -v w="$1" -v c="$col" 'index($2, " " w) == 1 { v = $c; gsub(/[ `]/, "", v); print v; exit }' <<<"$table")
  [[ -n $cell ]] || fail "README.md's exit status table has no row starting '$1'"
  echo "$cell"
}
rows=$(tail -n +3 <<<"$table" | wc -l)

checked=0
# status WORDS CMD...: srun's status for the row starting with WORDS.
status() {
  local words=$1 rc=0 want
  shift
  want=$(expected "$words")
  as_user timeout 120 "$@" >"$WORK/out" 2>&1 || rc=$?
  cat "$WORK/out"
  echo "Slurm $series: '$words': srun exited $rc (the README says $want)"
  ((rc != 124)) || fail "'$words': srun still ran after 120 s"
  [[ $rc == "$want" ]] || fail "'$words': srun exited $rc on Slurm $series; README.md's table says $want"
  checked=$((checked + 1))
}
dp=(srun -N2 --ntasks-per-node=2 --dp-world=auto)
# fails CMD FOLDER: rank 3 runs CMD once every rank is up (past a trap set
# before this: a task that started late would otherwise die of SIGTERM); the
# others would sleep on. FOLDER: a fresh one per step.
fails() {
  mkdir -m 777 "$WORK/$2"
  echo "touch $WORK/$2/\$RANK; [ \$RANK = 3 ] && { until [ \$(ls $WORK/$2 | wc -l) -ge 4 ]; do sleep 0.1; done; $1; }; sleep 300"
}

status "it ran to its end" "${dp[@]}" true
status "\`--dp-explain\`" "${dp[@]}" --dp-explain true
status "a bad \`--dp-*\` value" "${dp[@]}" --dp-hang-timeout=0 true
status "a request the step cannot hold" srun -N2 --ntasks-per-node=2 --dp-world=5 true
status "\`task_exit\`: a rank exits 3" "${dp[@]}" bash -c "$(fails 'exit 3' up1)"
status "\`task_exit\`, the others ignore SIGTERM" "${dp[@]}" bash -c "trap '' TERM; $(fails 'exit 3' up2)"
status "\`task_exit\` with \`--dp-on-failure=keep\`" "${dp[@]}" --dp-on-failure=keep \
  bash -c '[ $RANK = 3 ] && exit 3; sleep 2'
status "\`hang\` with \`--dp-on-hang=end\`" "${dp[@]}" --dp-hang-timeout=2s --dp-on-hang=end sleep 300

# `scancel JOB` while the step runs: the user's own end of it.
want=$(expected "\`cancelled\`")
as_user timeout 120 "${dp[@]}" sleep 300 >"$WORK/out" 2>&1 &
srun_pid=$!
wait_until 60 "the step's tasks to run" bash -c "[[ -n \$(squeue -h -u $DP_TEST_USER -s -o %i | grep '\.0$') ]]"
job=$(squeue -h -u "$DP_TEST_USER" -s -o %i | sed -n 's/\.0$//p' | head -1)
scancel "$job"
rc=0
wait "$srun_pid" || rc=$?
cat "$WORK/out"
echo "Slurm $series: '\`cancelled\`': srun exited $rc (the README says $want)"
[[ $rc == "$want" ]] || fail "'scancel $job': srun exited $rc on Slurm $series; README.md's table says $want"
checked=$((checked + 1))

((checked == rows)) || fail "README.md's table has $rows rows, this test checked $checked: give each row its case here"
pass "srun's exit status on Slurm $series is the README's in all $checked cases"
