#!/usr/bin/env bash
# Namespace mode: n1 and n2 are cut from each other (a blackhole route to the
# other's address in each node's network namespace) while both still reach
# srun's host, as a failed link between two racks can leave them, during an
# unmodified PyTorch DDP run on 2 nodes x 2 tasks. slurm-dp watches each
# node's link to srun's host, not the links between nodes (the documented
# limit, README.md and packaging/admin/settings.md "Partitions between nodes"): for
# three times the site's bound there is no slurm-dp verdict and srun runs on,
# as without slurm-dp; once the partition heals, the step finishes rc 0.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ddp_common.sh"
[[ $DP_CLUSTER_MODE == ns ]] || fail "needs the namespace cluster (one network stack per node)"
bound=5
site heartbeat_timeout=$bound kill_grace=2
a1=$(node_addr n1) a2=$(node_addr n2)
ns1=/run/netns/dpc${DP_CLUSTER_PORT_BASE}n1 ns2=/run/netns/dpc${DP_CLUSTER_PORT_BASE}n2
[[ -e $ns1 && -e $ns2 && -n $a1 && -n $a2 ]] || fail "no namespaces $ns1, $ns2 or addresses ($a1, $a2)"
parted=0
route() { nsenter --net="$1" ip route "$2" blackhole "$3/32"; }
heal() { ((parted == 0)) || { route "$ns1" del "$a2"; route "$ns2" del "$a1"; }; parted=0; }
trap 'heal; kill "$srun_pid" 2>/dev/null || true; cleanup_work' EXIT

start_ddp partition --steps 300 --step-ms 20
wait_ranks_ready 120
route "$ns1" add "$a2" && route "$ns2" add "$a1" || fail "cannot add the blackhole routes"
parted=1
# n2's slurmd port (dp-cluster: base + 2) no longer answers n1, but answers srun's host.
reach() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/$((DP_CLUSTER_PORT_BASE + 2))" 2>/dev/null; }
nsenter --net="$ns1" bash -c "$(declare -f reach); reach $a2" && fail "n1 still reaches n2 ($a2)"
reach "$a2" || fail "srun's host no longer reaches n2 ($a2)"
hold=$((3 * bound))
from=$(date +%s%N)
while (($(date +%s%N) - from < hold * 1000000000)); do
  kill -0 "$srun_pid" 2>/dev/null || fail "srun ended during the partition: $(cat "$WORK/srun.log")"
  sleep 0.1 # the partition under test, not a synchronisation
done
grep -q "slurm-dp:" "$WORK/srun.log" && fail "a slurm-dp line during the partition: $(cat "$WORK/srun.log")"
heal
t0=$(date +%s%N)
expect_srun_ok 120 "the partition healed"
same_params partition
pass "no slurm-dp verdict during a $hold s partition between n1 and n2 (both reaching srun's host, bound $bound s), as documented; healed, the step finished rc 0 $ms ms later"
