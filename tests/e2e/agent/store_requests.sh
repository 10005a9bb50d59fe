#!/usr/bin/env bash
# A request is its client's, never the node's (issue 43): one unmodified
# PyTorch program (pytorch/store_requests.py, 2 nodes x 2 tasks) with
# --dp-store=step, and the same with --dp-store=rank0 (PyTorch's own server in
# rank 0) as the control, in one test:
#  1. an 8 MiB value, a multi_set of 3 x 3 MiB (torch 2.x; three sets on 1.13)
#     and a 6 KiB key are set on node 2 and read back by every rank;
#  2. a 64 MiB value is refused for its client alone, and srun's end names the
#     key, the size, the limit and the rank; the other ranks run on, and the
#     step ends as with rank 0's store (which takes it): rc 0 both; the
#     --dp-report file counts the refusal;
#  3. after a 1 s wait that times out, the same client's next get answers at
#     once (1.13's client leaves its wait with the server);
#  4. the step is healthy: its deliberate timed wait is no "never set" line.
. "$(dirname "$0")/../lib.sh"
site
pytorch_launcher_env
cp "$(dirname "$0")/../pytorch/store_requests.py" "$WORK/"

run_program() {  # run_program STORE: srun's status in rc, the tasks' output in out
  rc=0
  with_timeout 150 as_user env "${pet[@]}" srun --dp-world=auto --dp-store="$1" \
    --dp-report="$WORK/$1.json" -N2 --ntasks-per-node=2 -J "store-requests-$1-$$" \
    -o "$WORK/$1.%t.log" /usr/bin/python3 "$WORK/store_requests.py" >"$WORK/$1.srun" 2>&1 || rc=$?
  out=$(cat "$WORK/$1".*.log)
  [[ $out != *FAIL* ]] || fail "--dp-store=$1: $(grep FAIL <<<"$out") (srun: $(tail -3 "$WORK/$1.srun"))"
  # Five checks on each of the four ranks.
  expect_eq "$(grep -c ': ok ' <<<"$out")" 20 "--dp-store=$1: checks passed ($out)"
}

run_program rank0
rank0_rc=$rc
expect_contains "$out" "rank 3: huge: stored, 67108864 bytes read back" "rank 0's store"
run_program step
expect_eq "$rc" "$rank0_rc" "srun's status with the step's store (with rank 0's: $rank0_rc)"
expect_eq "$rc" 0 "srun's status with the step's store ($(cat "$WORK/step.srun"))"
expect_contains "$out" "rank 3: huge: refused" "the 64 MiB value with the step's store"
srun_out=$(cat "$WORK/step.srun")
line=$(grep -E "^slurm-dp: step [0-9]+\.0: PyTorch's store on host n[0-9]: refused rank 3 \(pid [0-9]+\): " \
  <<<"$srun_out" || true)
[[ -n $line ]] || fail "srun's end names no refusal of rank 3's request: $srun_out"
for part in "value of 67108864 bytes" "for key '/huge'" "over the limit of 8388608 bytes"; do
  expect_contains "$line" "$part" "srun's refusal line"
done
[[ $srun_out != *"never set"* ]] || fail "a healthy step's timed wait was named: $srun_out"
grep -q '"store_requests_refused":1[,}]' "$WORK/step.json" ||
  fail "the step report counts no refusal: $(grep -o '"daemon":{[^}]*}' "$WORK/step.json")"
took=$(grep -o 'get after a timed-out wait: ok answered in [0-9.]* s' <<<"$out" | awk '{print $(NF-1)}' | sort -n | tail -1)
sent=$(grep -c "multi_set of 3 x 3 MiB sent" <<<"$out" || true)
pass "8 MiB, 3 x 3 MiB (multi_set: $sent) and a 6 KiB key through the step's store; 64 MiB refused for rank 3's client alone ($line); rc $rc as with rank 0's store; a get after a timed-out wait answered in at most $took s; no 'never set' line"
