#!/usr/bin/env bash
# A rolling upgrade: srun's host (its dp-rendezvousd) and the compute nodes
# (their dp-nodeagent) of different releases in one step. One release apart,
# in either order, the step runs (the newer side speaks the older protocol);
# two apart, it fails at its start with one line naming both versions and
# the hosts to upgrade. The next releases are this code linked with protocol
# versions 4 and 5 (DP_UPGRADE_DIR/vN, tests/e2e/daemon.cmake); the plugin
# starts the daemon= it is given and the agent beside it.
. "$(dirname "$0")/../lib.sh"
: "${DP_RDV_PROBE:?}" "${DP_UPGRADE_DIR:?set DP_UPGRADE_DIR to the builds of the next releases}"
trap 'site; cleanup_work' EXIT

# releases DAEMON_VERSION AGENT_VERSION: a folder holding that pair, as the plugin finds them.
releases() {
  local dir=$WORK/login$1-compute$2
  mkdir -p "$dir"
  ln -sf "$(binary "$1" dp-rendezvousd)" "$dir/dp-rendezvousd"
  ln -sf "$(binary "$2" dp-nodeagent)" "$dir/dp-nodeagent"
  DP_DAEMON=$dir/dp-rendezvousd site
}
binary() { if (($1 == 3)); then echo "$(dirname "$DP_DAEMON")/$2"; else echo "$DP_UPGRADE_DIR/v$1/$2"; fi; }

for pair in "4 3" "3 4"; do
  read -r login compute <<<"$pair"
  releases "$login" "$compute"
  out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 "$DP_RDV_PROBE" exchange 2>&1) ||
    fail "protocol $login on srun's host, $compute on the nodes: srun failed: $out"
  [[ $(grep -c "id ok" <<<"$out") -eq 4 ]] || fail "protocol $login/$compute: expected 4 ranks with the id, got: $out"
done

# refused LOGIN COMPUTE WANT: that pair's step fails at its start with the line WANT.
refused() {
  releases "$1" "$2"
  out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 "$DP_RDV_PROBE" exchange 2>&1) &&
    fail "protocol $1 on srun's host, $2 on the nodes: the step ran: $out"
  echo "$out" | grep '^slurm-dp:' | sort -u
  grep -qF "$3" <<<"$out" || fail "protocol $1/$2: no line naming both versions and the hosts to upgrade: $out"
}
refused 5 3 "the step's dp-rendezvousd speaks protocol versions 4-5, the node agent version 3; upgrade slurm-dp on the compute nodes to the release of the step's dp-rendezvousd"
refused 3 5 "this node's dp-nodeagent speaks protocol versions 4-5, the step's dp-rendezvousd version 3; upgrade slurm-dp on srun's host (the login nodes) to the release of this node's dp-nodeagent"
pass "srun's host and the nodes one protocol version apart ran the step in either order; two apart, it failed at its start naming both versions and the hosts to upgrade"
