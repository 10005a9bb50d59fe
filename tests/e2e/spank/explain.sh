#!/usr/bin/env bash
# --dp-explain prints every task's layout and starts nothing.
. "$(dirname "$0")/../lib.sh"
site

marker="$WORK/task-ran"
rc=0
out=$(as_user timeout 60 srun --dp-explain --dp-tiles=2 -N2 --ntasks-per-node=2 touch "$marker" 2>&1) || rc=$?
echo "$out"
((rc != 0)) || fail "explain should end srun before launch"
[[ ! -e $marker ]] || fail "explain started a task"
[[ $(grep -c '^task [0-3] on n[12]: RANK=' <<<"$out") -eq 4 ]] || fail "4 task lines expected"
grep -q '^task 1 on n1: RANK=1 LOCAL_RANK=1 .*CUDA_VISIBLE_DEVICES=2,3 DP_TILES=2,3' <<<"$out" || fail "task 1 layout"
grep -q '^slurm-dp: --dp-explain: dry run' <<<"$out" || fail "dry-run note missing"
pass "explain"
