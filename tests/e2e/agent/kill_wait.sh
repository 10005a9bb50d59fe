#!/usr/bin/env bash
# A failed step ends within the site's kill_grace, not Slurm's KillWait. From
# Slurm 26.05, under PMI2 or PMIx with --kill-on-bad-exit, Slurm sends the
# remaining tasks SIGTERM and waits KillWait (this cluster's: 5 s) before
# SIGKILL. Tasks that ignore SIGTERM (as programs that checkpoint on it may)
# and one that exits 3: without slurm-dp (the control) srun ends after
# KillWait on 26.05; with --dp-world=auto the node agents send SIGKILL after
# kill_grace=1, so srun ends within 2.5 s of the exit, naming rank 3.
. "$(dirname "$0")/../lib.sh"
site kill_grace=1
kill_wait=$(scontrol show config | sed -n 's/^KillWait *= *\([0-9]*\) sec.*/\1/p')
[[ -n $kill_wait ]] || fail "cannot read KillWait from scontrol show config"

# Every task ignores SIGTERM; once all four are up, rank 3 notes the time and exits 3.
# shellcheck disable=SC2016 # expanded in the tasks
task='trap "" TERM; touch "$0/up.$SLURM_PROCID"
if [ "$SLURM_PROCID" = 3 ]; then
  while [ "$(ls "$0"/up.* | wc -l)" -lt 4 ]; do sleep 0.05; done
  date +%s%N >"$0/exit.time"; exit 3
fi
while :; do sleep 0.1; done'

# run LABEL SRUN-OPTION...: the ms from rank 3's exit to srun's end; srun's
# output in $WORK/srun.out.
run() {
  local label=$1 end rc=0 out
  shift
  rm -f "$WORK"/up.* "$WORK/exit.time"
  out=$(as_user timeout 60 srun "$@" --mpi=pmi2 -K1 -N2 --ntasks-per-node=2 bash -c "$task" "$WORK" 2>&1) || rc=$?
  end=$(date +%s%N)
  echo "$out" >"$WORK/srun.out"
  ((rc != 124)) || fail "$label: srun still ran after 60 s: $out"
  ((rc != 0)) || fail "$label: srun exited 0 after rank 3 exited 3: $out"
  [[ -f $WORK/exit.time ]] || fail "$label: rank 3 never exited: $out"
  echo $(((end - $(cat "$WORK/exit.time")) / 1000000))
}

plain=$(run "without slurm-dp") || exit 1
echo "without slurm-dp: srun ended $plain ms after rank 3's exit (KillWait $kill_wait s)"
dp=$(run "--dp-world=auto" --dp-world=auto) || exit 1
echo "with --dp-world=auto: $dp ms"
expect_contains "$(cat "$WORK/srun.out")" "rank 3" "srun's output with --dp-world=auto"
((dp <= 2500)) || fail "with --dp-world=auto srun ended $dp ms after rank 3's exit; the bound is kill_grace (1 s) + 1.5 s"
version=$(slurmd -V | awk '{ print $2 }')
if printf '26.05\n%s\n' "$version" | sort -V -C; then
  # The control shows what the bound saves on this Slurm.
  ((plain >= kill_wait * 1000)) ||
    fail "Slurm $version ended the control $plain ms after the exit: KillWait ($kill_wait s) was expected to apply"
fi
pass "a failed step with tasks that ignore SIGTERM: $dp ms with slurm-dp, $plain ms without (Slurm $version, KillWait $kill_wait s)"
