#!/usr/bin/env bash
# sbatch --dp-world=auto --wrap 'srun ...' as the unprivileged user: the
# option is accepted and the job completes, its step running on both nodes.
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"

# The plugin starts the built rendezvous daemon for the inner srun.
daemon=$DP_BUILD_DIR/daemon/dp-rendezvousd
if [[ -x $daemon ]] && grep -q '^PLUGIN=/' "$DP_CLUSTER_DIR/cluster.env"; then
  "$DP_CLUSTER" plugstack "daemon=$daemon"
fi

job=$(with_timeout 30 as_user sbatch --parsable --dp-world=auto -N2 --ntasks-per-node=2 \
        --output="$WORK/job.out" --wrap 'srun hostname') || fail "sbatch refused the job: $job"
job=${job%%;*}
state=$(wait_job_end "$job" 60)
out=$(cat "$WORK/job.out" 2>/dev/null || true)
expect_eq "$state" COMPLETED "state of job $job (output: $out)"
counts=$(grep -E '^n[0-9]+$' <<<"$out" | sort | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')
expect_eq "$counts" "n1=2 n2=2" "hostnames printed by the job's step"
pass "job $job with --dp-world=auto completed; its step ran 2 tasks on each node"
