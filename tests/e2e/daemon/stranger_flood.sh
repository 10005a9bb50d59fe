#!/usr/bin/env bash
# Another user cannot keep a step's node out of its daemon: dptest2 floods
# every new step daemon's port (connections that never say hello, the last
# 400 kept open) while dptest starts 5 steps one after another; all 5 start
# and end with status 0. Once from the login node (the daemon's own host),
# once from inside the master compute node's namespace, where the flood
# shares the node agent's source address; then the flood aims at the node
# agent's abstract socket on n1, and at its task keepers' socket in steps
# that restart in place.
. "$(dirname "$0")/../runtime/common.sh"
[[ $(mode) == ns ]] || fail "this test is for ns mode"
site
uid=$(id -u dptest)
bridge=$(ip -4 -o addr show "dpbr$DP_CLUSTER_PORT_BASE" | awk '{print $4}' | cut -d/ -f1)
[[ -n $bridge ]] || fail "no address on the cluster's bridge dpbr$DP_CLUSTER_PORT_BASE"
netns=/run/netns/dpc${DP_CLUSTER_PORT_BASE}n1
[[ -e $netns ]] || fail "no namespace $netns for node n1"
cp "$(dirname "$0")/flood.py" "$WORK/flood.py"
chmod 644 "$WORK/flood.py"
flood_pid=""
trap 'kill $flood_pid 2>/dev/null || true; cleanup_work' EXIT

program=("$DP_COMM_WORKER" collectives)
steps() {  # WHERE [SRUN_FLAG...]: 5 steps of ${program[@]} under the flood
  local where=$1 ok=0 i rc
  shift
  for i in 1 2 3 4 5; do
    rc=0
    as_user timeout 60 srun --dp-world=auto --dp-verbose "$@" -w n1,n2 -N2 --ntasks-per-node=1 \
      --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=30000 "${program[@]}" \
      >"$WORK/$where.$i.log" 2>&1 || rc=$?
    if ((rc == 0)) && grep -q "^OK rank 1 of 2 " "$WORK/$where.$i.log"; then
      ok=$((ok + 1))
    else
      echo "--- step $i under a flood from $where: status $rc"
      tail -20 "$WORK/$where.$i.log"
    fi
  done
  kill -0 "$flood_pid" 2>/dev/null || fail "the flood from $where died: $(cat "$WORK/$where.flood.err")"
  local flooded
  flooded=$(awk '$4 >= 100 {n++} END {print n + 0}' "$WORK/$where.flood" 2>/dev/null || echo 0)
  echo "$where: $ok of 5 steps ended with status 0; $flooded daemons got >= 100 connections:"
  cat "$WORK/$where.flood" || true
  grep -h "evicted" "$WORK/$where".*.log | head -3 || true
  ((flooded >= 3)) || fail "the flood from $where reached only $flooded of the 5 daemons"
  ((ok == 5)) || fail "only $ok of 5 steps started and ended with status 0 under a flood from $where"
  kill "$flood_pid"
  wait "$flood_pid" 2>/dev/null || true
  flood_pid=""
}

# As dptest2, exec'd all the way (nsenter, setpriv, env), so $! is the flood itself.
as_dptest2=(setpriv "--reuid=$(id -u dptest2)" "--regid=$(id -g dptest2)" --clear-groups
  env -i PATH=/usr/bin:/bin HOME="$WORK" /usr/bin/python3 "$WORK/flood.py" "$uid" "$bridge")
"${as_dptest2[@]}" "$WORK/login.flood" 2>"$WORK/login.flood.err" &
flood_pid=$!
steps login
grep -qh "evicted .* from $bridge" "$WORK"/login.*.log ||
  fail "no daemon logged an eviction naming the flood's address $bridge"

n1=$(node_addr n1)
nsenter "--net=$netns" "${as_dptest2[@]}" "$WORK/node.flood" 2>"$WORK/node.flood.err" &
flood_pid=$!
steps node
grep -qh "evicted .* from $n1 (a node of this step)" "$WORK"/node.*.log ||
  fail "no daemon logged an eviction naming the master node's address $n1"

# The node agent's abstract socket is listed to everyone in the node's
# namespace: a flood of it is turned away by uid at accept, and the ranks'
# connect retries get through.
as_dptest2[-1]=agent
nsenter "--net=$netns" "${as_dptest2[@]}" "$WORK/agent.flood" 2>"$WORK/agent.flood.err" &
flood_pid=$!
steps agent

# The task keepers' socket (a step that restarts in place: each task keeps
# its program and connects there): turned away by uid too; a keeper retries.
# The program only prints its rank: what is tested is each keeper's connect.
# shellcheck disable=SC2016 # expanded in the task
program=(/bin/sh -c 'echo "OK rank $RANK of $WORLD_SIZE "')
as_dptest2[-1]=keepers
nsenter "--net=$netns" "${as_dptest2[@]}" "$WORK/keepers.flood" 2>"$WORK/keepers.flood.err" &
flood_pid=$!
steps keepers --dp-max-restarts=1
pass "5 of 5 steps under a flood from the login node, 5 of 5 from the master node's namespace, 5 of 5 with n1's agent socket flooded, 5 of 5 restartable steps with its keepers' socket flooded"
