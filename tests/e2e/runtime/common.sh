# Helpers for libdp's e2e tests on the real local cluster. Sourced by each test.
# Needs, beyond lib.sh: DP_COMM_WORKER (the built dp_comm_worker).
: "${DP_COMM_WORKER:?set DP_COMM_WORKER to the built dp_comm_worker}"
. "$(dirname "$0")/../lib.sh"

mode() { "$DP_CLUSTER" status 2>/dev/null | sed -n 's/.*mode=\([a-z]*\).*/\1/p' | head -n1; }
