#!/usr/bin/env bash
# A rank's own text is shown escaped wherever it becomes a line of ours
# (issue 53): 2 ranks of a plain Python program hang in a function whose
# co_qualname is "x\nslurm-dp: FORGED line ESC[2J ESC]0;owned BEL" (Python
# 3.11+ lets a program set it; rank 0's frames are read), rank 1 run from an
# interpreter copied to a path holding ESC and removed, which the reader
# names as the file it cannot open. The hang is named: srun's stderr has
# exactly one line starting "slurm-dp:" for it and none forged, the forged
# text appears escaped (\n, \x1b), and dp-top --stacks | cat -v shows no raw
# control character.
. "$(dirname "$0")/../lib.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
bound=4
site hang_timeout=$bound
cp "$(dirname "$0")/forged_names.py" "$WORK/"
trap 'kill "$srun_pid" 2>/dev/null || true; site; cleanup_work' EXIT
# Rank 1: a path the kernel shows in /proc/PID/maps as written, ESC and all
# (it writes a newline as \012 there), its interpreter removed once it runs,
# so the reader says it cannot open it, naming the path.
cmd=(bash -c '[ "$SLURM_PROCID" = 1 ] || exec /usr/bin/python3 "$1/forged_names.py" "$1"
  d=$(printf "%s/r%s-\033[2J\033]0;owned\007" "$1" "$SLURM_PROCID") &&
  mkdir "$d" && cp /usr/bin/python3 "$d/python3" && exec "$d/python3" "$1/forged_names.py" "$1" rm' forged "$WORK")
as_user timeout 120 srun -w n1 -N1 -n2 --dp-world=auto --dp-on-hang=name -J forged \
  "${cmd[@]}" >"$WORK/srun.out" 2>"$WORK/srun.err" &
srun_pid=$!
wait_until 60 "both ranks to start" test -s "$WORK/ready.0" -a -s "$WORK/ready.1"
job=$(squeue -h -u dptest -n forged -o %i | head -n1)
[[ -n $job ]] || fail "no job of dptest's named forged"
wait_until $((bound * 4 + 20)) "the hang to be named on srun's stderr" grep -q 'hang:' "$WORK/srun.err"
stacks=$(as_user "$DP_TOP" --stacks "$job.0" 2>&1) || fail "dp-top --stacks failed: $stacks"
shown=$(cat -v <<<"$stacks")
echo "$stacks"
[[ $shown == "$stacks" ]] || fail "dp-top --stacks printed a raw control character: $shown"
scancel "$job"
wait "$srun_pid" || true
srun_pid=
cat -v "$WORK/srun.err"
[[ $(cat -v "$WORK/srun.err") == "$(cat "$WORK/srun.err")" ]] || fail "srun's stderr has a raw control character"
lines=$(grep -c '^slurm-dp: .*hang:' "$WORK/srun.err" || true)
[[ $lines == 1 ]] || fail "want one slurm-dp: hang line on srun's stderr, got $lines"
! grep -q '^slurm-dp: FORGED' "$WORK/srun.err" || fail "a forged slurm-dp: line reached srun's stderr"
# A name holds what an identifier holds; every other byte escaped.
escaped='x\nslurm\x2ddp\x3a\x20FORGED\x20line\x20\x1b\x5b2J\x1b\x5d0\x3bowned\x07'
expect_contains "$(cat "$WORK/srun.err")" "$escaped" "the hang line"
expect_contains "$stacks" "$escaped" "dp-top --stacks"
expect_contains "$stacks" 'r1-\x1b[2J\x1b]0;owned\x07/python3 (deleted) cannot be opened' "dp-top --stacks"
pass "rank 0's forged co_qualname and rank 1's forged path were shown escaped: one slurm-dp: hang line, none forged, no raw control character in srun's stderr or dp-top --stacks"
