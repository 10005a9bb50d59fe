#!/usr/bin/env bash
# The cluster loads the built spank_dp.so: srun --help lists --dp-world.
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"

grep -q '^PLUGIN=/' "$DP_CLUSTER_DIR/cluster.env" \
  || fail "the cluster loads no plugin; configure with the spank_dp target so the fixture sets DP_CLUSTER_PLUGIN"
out=$(with_timeout 30 srun --help 2>&1) || fail "srun --help failed: $out"
expect_contains "$out" "--dp-world" "srun --help"
out=$(with_timeout 30 sbatch --help 2>&1) || fail "sbatch --help failed: $out"
expect_contains "$out" "--dp-world" "sbatch --help"
pass "srun --help and sbatch --help list --dp-world"
