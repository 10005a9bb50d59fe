#!/usr/bin/env bash
# An MPI program (mpi4py over Debian's Open MPI) under srun --mpi=pmix
# --dp-world=auto on 2 x 2: one world of 4 whose MPI ranks are slurm-dp's
# RANKs, the allreduce equal on every rank. Slurm's pmix plugin runs in the
# test cluster because each slurmd has its own PMIx client folder
# (tests/cluster/dp-cluster: write_pmix_folders). Skipped where Slurm ships no
# pmix plugin (Debian testing's 26.05) or mpi4py is missing.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"
needs_modules mpi4py
srun --mpi=list 2>&1 | grep -qw pmix ||
  { echo "SKIP [$TEST_NAME]: this Slurm has no pmix MPI plugin (srun --mpi=list)"; exit 77; }
[[ -f $DP_CLUSTER_DIR/etc/mpi.conf ]] ||
  { echo "SKIP [$TEST_NAME]: libpmix is not installed here (scripts/setup installs libpmix-dev)"; exit 77; }
site
cp "$DP_SOURCE_DIR/tests/e2e/apps/mpi_allreduce.py" "$WORK/"

out=$(as_user timeout 120 srun --mpi=pmix --dp-world=auto -N2 --ntasks-per-node=2 \
  /usr/bin/python3 mpi_allreduce.py 2>&1) || fail "srun --mpi=pmix failed: $out"
echo "$out"
check_world "$out" "mpi4py under --mpi=pmix" mpi
[[ $(grep -cE 'mpi rank=([0-9]+) world=4 slurm_dp_rank=\1 ' <<<"$out") -eq 4 ]] ||
  fail "every MPI rank must be slurm-dp's RANK: $out"
expect_contains "$out" "params=000000000000000a" "the allreduce of 1+2+3+4"
pass "srun --mpi=pmix --dp-world=auto: one MPI world of 4, MPI ranks = slurm-dp's RANKs, the allreduce 10 on every rank"
