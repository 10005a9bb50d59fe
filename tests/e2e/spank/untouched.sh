#!/usr/bin/env bash
# A step without any --dp-* option gets no DP_* or torchrun variable and no daemon.
. "$(dirname "$0")/../lib.sh"
site

# Each task also looks for a daemon of its job while the step runs.
out=$(as_user timeout 60 srun -N2 --ntasks-per-node=2 bash -c \
  'env; echo "JOB=$SLURM_JOB_ID"; pgrep -f "dp-rendezvousd .*--job-id $SLURM_JOB_ID( |\$)" >/dev/null && echo DAEMON_SEEN; true')
job=$(sed -n 's/^JOB=//p' <<<"$out" | head -1)
added=$(grep -E '^(DP_[A-Z_]*|RANK|LOCAL_RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|NODE_RANK|GROUP_RANK|MASTER_ADDR|MASTER_PORT)=' <<<"$out" || true)
[[ -z $added ]] || fail "variables added to a plain step: $added"
grep -q DAEMON_SEEN <<<"$out" && fail "a daemon ran for a plain step"

# The site can turn slurm-dp on for every step (default=on).
trap 'site; cleanup_work' EXIT
site default=on
out=$(as_user timeout 60 srun -N1 -n2 bash -c 'echo "R=${RANK-unset} W=${WORLD_SIZE-unset}"' | sort)
[[ $out == $'R=0 W=2\nR=1 W=2' ]] || fail "default=on: a plain step should be wired, got: $out"
pass "plain step untouched (job $job); default=on wires it"
