#!/usr/bin/env bash
# A firewalled login host: the nodes may open connections to srun's host only
# on slurmctld's port and Slurm's SrunPortRange (an nftables rule in each
# node's own network namespace; the host's own rules are other users'). With
# SrunPortRange in srun's slurm.conf, the step's dp-rendezvousd listens in it
# and 4 ranks on 2 nodes run every libdp collective through the rule; with the
# site's daemon_ports all held by another user, srun says so, naming the
# range and the fix, and no task runs the program.
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
[[ $DP_CLUSTER_MODE == ns ]] || fail "this test is for ns mode (a firewall between nodes and host), not $DP_CLUSTER_MODE"
: "${DP_COMM_WORKER:?set DP_COMM_WORKER to the built dp_comm_worker}"
command -v nft >/dev/null || fail "nft is missing (scripts/setup installs nftables)"

base=$DP_CLUSTER_PORT_BASE
# The cluster's block of Slurm-reserved ports is reserved inside the nodes'
# namespaces only: on the host it is this cluster's own and free.
lo=$((base + 10)) hi=$((base + 24))
mapfile -t node_ns < <(ls -d /run/netns/dpc"${base}"n* 2>/dev/null)
((${#node_ns[@]} >= 2)) || fail "no node namespaces /run/netns/dpc${base}n*"
host=$(nsenter --net="${node_ns[0]}" ip -4 route show default | awk '{print $3; exit}')
[[ -n $host ]] || fail "no default route (the host) in ${node_ns[0]}"
table=dp_e2e_srun_ports

holder=""
cleanup() {
  for ns in "${node_ns[@]}"; do nsenter --net="$ns" nft delete table inet "$table" 2>/dev/null || true; done
  if [[ -n $holder ]]; then touch "$WORK/release"; wait "$holder" 2>/dev/null || true; fi
  site
  cleanup_work
}
trap cleanup EXIT
for ns in "${node_ns[@]}"; do
  nsenter --net="$ns" nft -f - <<NFT || fail "could not add the firewall rule in $ns"
table inet $table {
  chain out {
    type filter hook output priority 0; policy accept;
    ct state new ip daddr $host tcp dport != { $base, $lo-$hi } reject with tcp reset
  }
}
NFT
done

# The rule bites: from a node, a listener on the host outside the range is
# refused, one inside it answers.
python3 - "$host" "$((lo - 1))" "$lo" >"$WORK/probe.ready" <<'PY' &
import socket, sys, time
socks = []
for p in sys.argv[2:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[1], int(p))); s.listen(4); socks.append(s)
print("ready", flush=True); time.sleep(30)
PY
probe=$!
wait_until 10 "the probe listeners" grep -q ready "$WORK/probe.ready"
reach() { nsenter --net="${node_ns[0]}" timeout 5 bash -c "exec 3<>/dev/tcp/$host/$1" 2>/dev/null; }
reach "$((lo - 1))" && fail "the firewall let a node reach $host:$((lo - 1)), outside $lo-$hi"
reach "$lo" || fail "the firewall kept a node from $host:$lo, inside $lo-$hi"
kill "$probe" 2>/dev/null; wait "$probe" 2>/dev/null || true

# srun's own slurm.conf with SrunPortRange (srun reads it; the daemons keep theirs).
mkdir -p "$WORK/etc"
{ cat "$SLURM_CONF"; echo "SrunPortRange=$lo-$hi"; } >"$WORK/etc/slurm.conf"
chmod 644 "$WORK/etc/slurm.conf"
site
out=$(SLURM_CONF=$WORK/etc/slurm.conf as_user timeout 180 srun --dp-world=auto --dp-verbose -N2 --ntasks-per-node=2 \
  --export=ALL,DP_BACKEND=gloo,DP_TIMEOUT_MS=60000 "$DP_COMM_WORKER" collectives 2>&1) \
  || fail "srun through the firewall failed: $out"
for r in 0 1 2 3; do
  grep -qE "^OK rank $r of 4 backend gloo" <<<"$out" || fail "rank $r did not report OK through the firewall: $out"
done
rdv=$(grep -oE "rendezvous [0-9.]+:[0-9]+ \(SrunPortRange=$lo-$hi," <<<"$out") \
  || fail "srun --dp-verbose did not name a rendezvous in SrunPortRange=$lo-$hi: $out"
port=$(sed -E 's/.*:([0-9]+) .*/\1/' <<<"$rdv")
((port >= lo && port <= hi)) || fail "the daemon listened on $port, outside SrunPortRange=$lo-$hi"

# The site's daemon_ports wins; all three held by another user on the host
# (below SrunPortRange, so no srun of the step above left a TIME_WAIT there):
# srun names the range and the fix, and no task runs the program.
full="$((lo - 3))-$((lo - 1))"
as_other python3 - "$WORK/release" "$host" $((lo - 3)) $((lo - 2)) $((lo - 1)) >"$WORK/holder.ready" <<'PY' &
import os, socket, sys, time
socks = []
for p in sys.argv[3:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sys.argv[2], int(p))); s.listen(4); socks.append(s)
print("ready", flush=True)
end = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < end: time.sleep(0.05)
PY
holder=$!
wait_until 10 "another user's listeners on $full" grep -q ready "$WORK/holder.ready"
site "daemon_ports=$full"
set +e
full_out=$(SLURM_CONF=$WORK/etc/slurm.conf as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=1 \
  touch "$WORK/ran" 2>&1)
rc=$?
set -e
((rc != 0)) || fail "srun exited 0 with every port of daemon_ports=$full held: $full_out"
expect_contains "$full_out" "no free port in daemon_ports=$full on $host (all 3 in use)" "srun's refusal"
expect_contains "$full_out" "widen daemon_ports" "the fix"
[[ ! -e $WORK/ran ]] || fail "a task ran the program although the daemon had no port"
echo "$full_out"  # srun's refusal, for the docs' corpus of lines (lib.sh record_lines)
pass "through a firewall open to $base and $lo-$hi only: 4 ranks ran, the daemon on $port (SrunPortRange); daemon_ports=$full held: srun exit $rc, '$(grep -m1 -o 'no free port[^;]*' <<<"$full_out")'"
