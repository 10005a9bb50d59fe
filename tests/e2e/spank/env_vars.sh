#!/usr/bin/env bash
# srun --dp-world=auto -N2 --ntasks-per-node=2: every task's variables match
# its SLURM_PROCID / SLURM_LOCALID / node, MASTER_ADDR is rank 0's node.
. "$(dirname "$0")/../lib.sh"
site

out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 bash -c "$print_task")
echo "$out"
[[ $(wc -l <<<"$out") -eq 4 ]] || fail "expected 4 task lines"
rank0_node=$(awk '$1 == 0 {print $3}' <<<"$out")
want_addr=$(node_addr "$rank0_node")
nodes=$(awk '{print $3}' <<<"$out" | sort -u | tr '\n' ' ')
ports=$(grep -o 'MASTER_PORT=[^ ]*' <<<"$out" | sort -u)
rdv=$(grep -o 'DP_RDV_ADDR=[^ ]*' <<<"$out" | sort -u)
[[ $(wc -l <<<"$ports") -eq 1 && $ports =~ ^MASTER_PORT=[0-9]+$ ]] || fail "one numeric MASTER_PORT for all tasks, got: $ports"
[[ $(wc -l <<<"$rdv") -eq 1 && $rdv =~ :[0-9]+$ ]] || fail "one DP_RDV_ADDR host:port for all tasks, got: $rdv"
while read -r procid localid node rest; do
  line="$procid $localid $node $rest"
  [[ $(field "$line" RANK) == "$procid" ]] || fail "RANK != SLURM_PROCID: $line"
  [[ $(field "$line" LOCAL_RANK) == "$localid" ]] || fail "LOCAL_RANK != SLURM_LOCALID: $line"
  [[ $(field "$line" WORLD_SIZE) == 4 ]] || fail "WORLD_SIZE: $line"
  [[ $(field "$line" LOCAL_WORLD_SIZE) == 2 ]] || fail "LOCAL_WORLD_SIZE: $line"
  want_node_rank=$([[ $node == "${nodes%% *}" ]] && echo 0 || echo 1)
  [[ $(field "$line" NODE_RANK) == "$want_node_rank" ]] || fail "NODE_RANK: $line"
  [[ $(field "$line" GROUP_RANK) == "$want_node_rank" ]] || fail "GROUP_RANK: $line"
  [[ $(field "$line" MASTER_ADDR) == "$want_addr" ]] || fail "MASTER_ADDR should be $want_addr (node of rank 0): $line"
  [[ $(field "$line" SECRET) == 64 ]] || fail "DP_RDV_SECRET should be 64 hex digits: $line"
  [[ $(field "$line" DP_TILES) == unset ]] || fail "no --dp-tiles, no DP_TILES: $line"
done <<<"$out"

# -w n2: a step on the second node only counts its own tasks, and its
# master is n2.
out=$(as_user timeout 60 srun --dp-world=auto -w n2 -n2 bash -c "$print_task")
echo "$out"
[[ $(grep -c "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 NODE_RANK=0 GROUP_RANK=0 MASTER_ADDR=$(node_addr n2) " <<<"$out") -eq 2 ]] \
  || fail "-w n2: want WORLD_SIZE=2, NODE_RANK=0, MASTER_ADDR=$(node_addr n2)"
pass "4 tasks on 2 nodes wired correctly (MASTER_ADDR=$want_addr, $ports); -w n2 step too"
