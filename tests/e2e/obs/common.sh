# Helpers of the observability e2e tests. Needs DP_OBS_WORKER (dp_obs_worker).
: "${DP_OBS_WORKER:?set DP_OBS_WORKER to the built dp_obs_worker}"
. "$(dirname "$0")/../lib.sh"

# Polls until a rank's log has a line matching the pattern; fails on the deadline.
wait_log() {
  local file=$1 pattern=$2 secs=$3
  wait_until "$secs" "'$pattern' in $(basename "$file")" grep -qs -- "$pattern" "$file"
}
