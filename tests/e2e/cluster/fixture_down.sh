#!/usr/bin/env bash
# ctest FIXTURES_CLEANUP: stops the cluster, then checks that nothing of it is
# left: no munged/slurm process, namespace, link or socket, and its ports free.
#   fixture_down.sh <dp-cluster>
set -euo pipefail
cluster=$1
D=${DP_CLUSTER_DIR:?}
fail() { echo "FAIL [cluster down]: $*" >&2; exit 1; }

[[ -f $D/cluster.env ]] || fail "$D/cluster.env is missing: the cluster was not up, or was stopped by someone else"
# shellcheck disable=SC1091
. "$D/cluster.env"   # MODE NODES BASE PLUGIN, as up recorded them

"$cluster" down

left=()
for p in /proc/[0-9]*; do
  comm=$(cat "$p/comm" 2>/dev/null) || continue
  case $comm in munged | slurmctld | slurmd | slurmstepd | slurmscriptd | *slurm*) ;; *) continue ;; esac
  if grep -qzxF "DP_CLUSTER_DAEMON_OF=$D" "$p/environ" 2>/dev/null ||
     tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF "$D/"; then
    left+=("${p#/proc/}($comm)")
  fi
done
((${#left[@]} == 0)) || fail "processes of the cluster still running: ${left[*]}"

netns=$(ip netns list 2>/dev/null | grep -o "^dpc${BASE}n[0-9]*" || true)
[[ -z $netns ]] || fail "network namespaces left: $netns"
links=$(ip -o link show 2>/dev/null | grep -oE "(dpbr${BASE}|dpv${BASE}n[0-9]+)\b" || true)
[[ -z $links ]] || fail "links left: $links"
[[ ! -e $D/munge/munge.socket ]] || fail "munge socket $D/munge/munge.socket left"
[[ ! -f $D/cluster.env ]] || fail "$D/cluster.env left: down did not finish"
ports=("$BASE")
if [[ $MODE == lo ]]; then for ((i = 1; i <= NODES; i++)); do ports+=($((BASE + i))); done; fi
for port in "${ports[@]}"; do
  [[ -z $(ss -Hltn "sport = :$port") ]] || fail "port $port is still listening"
done
echo "ok [cluster down]: $MODE cluster in $D stopped; no process, namespace, link, socket or port left"
