#!/usr/bin/env bash
# srun -N2 --ntasks-per-node=2 hostname returns the two node names, twice
# each: every slurmd runs under its own hostname (own UTS namespace).
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"

out=$(with_timeout 60 srun -N2 --ntasks-per-node=2 hostname) || fail "srun failed: $out"
counts=$(sort <<<"$out" | uniq -c | awk '{print $2 "=" $1}' | paste -sd' ')
expect_eq "$counts" "n1=2 n2=2" "hostnames of 2 nodes x 2 tasks"

# Each task's hostname is the node Slurm says it runs on.
out=$(with_timeout 60 srun -N2 --ntasks-per-node=2 bash -c 'echo "$(hostname) $SLURMD_NODENAME"') || fail "srun failed: $out"
while read -r host node; do expect_eq "$host" "$node" "hostname on node $node"; done <<<"$out"
pass "4 tasks on n1 and n2 report their nodes' own hostnames"
