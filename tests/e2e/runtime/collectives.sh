#!/usr/bin/env bash
# srun --dp-world=auto -N2 --ntasks-per-node=2 comm_worker: the four tasks
# form one Gloo world through the plugin's daemon and every collective
# (all-reduce 1 element .. 64 MiB, broadcast, all-gather, barrier) is exact.
# The ranks span two nodes: all_reduce goes through shared memory on each node
# and over TCP between the nodes' leaders.
. "$(dirname "$0")/common.sh"
site

out=$(as_user timeout 180 srun --dp-world=auto -N2 --ntasks-per-node=2 \
  --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=60000 "$DP_COMM_WORKER" collectives 2>&1) \
  || fail "srun failed: $out"
echo "$out"
for r in 0 1 2 3; do
  grep -qxF "OK rank $r of 4 backend gloo via gloo over tcp, all_reduce through shared memory within each of 2 hosts, then tcp between them" <<<"$out" \
    || fail "rank $r did not report OK through shared memory and tcp"
done
pass "4 ranks on 2 nodes ($(mode) mode): every collective exact, all_reduce through shared memory on each node"
