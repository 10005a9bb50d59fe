#!/usr/bin/env bash
# The hint scripts/demo prints at its end works when pasted into a fresh
# shell: no DP_CLUSTER_DIR or SLURM_CONF set, as after opening a new terminal.
. "$(dirname "$0")/../lib.sh"
: "${DP_SOURCE_DIR:?set DP_SOURCE_DIR to the source tree}"
site

hint=$(DP_CLUSTER_DIR=$DP_CLUSTER_DIR "$DP_SOURCE_DIR/scripts/demo" --hint) || fail "scripts/demo --hint failed"
use=$(sed -n 's/^The local cluster is still up\. To use it: *//p' <<<"$hint")
stop=$(sed -n 's/^To stop it: *//p' <<<"$hint")
[[ -n $use && -n $stop ]] || fail "the hint has no 'To use it' or 'To stop it' command: $hint"
[[ $stop == *"DP_CLUSTER_DIR=$DP_CLUSTER_DIR "*" down" ]] || fail "the stop command does not name the cluster: $stop"

# Pasted as is, in a shell of root (the demo runs as root) with a clean
# environment. Its srun is a --dp-explain dry run: the layout is the proof.
out=$(cd "$WORK" && env -i HOME="$WORK" PATH=/usr/sbin:/usr/bin:/sbin:/bin bash -c "$use" 2>&1 </dev/null) || true
[[ $out != *"DP_CLUSTER_DIR is not set"* ]] || fail "the pasted hint does not find the cluster: $use -> $out"
for r in 0 1; do
  grep -qE "^task $r on n[12]:" <<<"$out" || fail "the pasted hint printed no layout line for task $r: $out"
done
pass "the pasted hint reached the cluster: $(grep -c '^task ' <<<"$out") layout lines"
