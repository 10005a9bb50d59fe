#!/usr/bin/env bash
# A transformers Trainer from the archive, unmodified (a tiny GPT-2 from a
# config, no download: HF_HUB_OFFLINE=1), 2 nodes x 2 tasks under srun
# --dp-world=auto on gloo, ends with the same final training loss (to 1e-6)
# as the same world of 4 under one node's torchrun without slurm-dp (the
# control), every rank the same loss.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
needs_modules transformers
site
cp "$DP_SOURCE_DIR/tests/e2e/apps/transformers_train.py" "$WORK/"
pytorch_launcher_env  # sets pet: what torch's launchers need on this machine
offline=(HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1)

# LINES WHAT: the one loss every rank of a world of 4 printed. Unanchored:
# torchrun's workers share one pipe, and rank 0's Trainer summary print may
# end its line after another rank's line began on it (each rank's line is one
# write).
world_loss() {
  local lines
  lines=$(grep -oE 'trainer rank=[0-9]+ world=4 host=[^ ]+ loss=[0-9.]+' <<<"$1") || fail "$2: no rank finished: $1"
  [[ $(wc -l <<<"$lines") -eq 4 ]] || fail "$2: 4 ranks of a world of 4 expected: $1"
  [[ $(sed 's/.*loss=//' <<<"$lines" | sort -u | wc -l) -eq 1 ]] || fail "$2: the ranks' losses differ: $lines"
  sed -n '1s/.*loss=//p' <<<"$lines"
}

out=$(as_user "${pet[@]}" "${offline[@]}" timeout 300 srun -N1 -n1 \
  torchrun --standalone --nproc_per_node=4 transformers_train.py "$WORK/control" 2>&1) ||
  fail "the control (one node's torchrun, no slurm-dp) failed: $out"
control=$(world_loss "$out" "the control") || exit 1

out=$(as_user "${pet[@]}" "${offline[@]}" timeout 300 srun --dp-world=auto -N2 --ntasks-per-node=2 \
  /usr/bin/python3 transformers_train.py "$WORK/dp" 2>&1) || fail "the Trainer under --dp-world=auto 2x2 failed: $out"
dp=$(world_loss "$out" "--dp-world=auto 2x2") || exit 1
[[ $(grep -oE 'trainer rank=[01] world=4 host=n1 ' <<<"$out" | wc -l) -eq 2 ]] || fail "ranks 0,1 must be on n1: $out"

awk -v a="$dp" -v b="$control" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6) }' ||
  fail "final training loss under --dp-world=auto 2x2 ($dp) differs from one node's torchrun ($control) by more than 1e-6"
pass "transformers Trainer 2x2 under --dp-world=auto: final loss $dp, one node's torchrun $control"
