#!/usr/bin/env bash
# ns mode networking: every node has its own address; both nodes can bind the
# same port at once and reach each other's address; a server on the host
# bound to 0.0.0.0 (slurmctld here, as the rendezvous daemon will be) is
# reachable from the nodes by the host's name and by its own addresses.
# shellcheck source-path=SCRIPTDIR source=../lib.sh disable=SC2016 # single quotes: expanded in the tasks
. "$(dirname "$0")/../lib.sh"
[[ $DP_CLUSTER_MODE == ns ]] || fail "this test is for ns mode, not $DP_CLUSTER_MODE"

addr_of() { scontrol show node "$1" | sed -n 's/.*NodeAddr=\([^ ]*\).*/\1/p'; }
a1=$(addr_of n1) a2=$(addr_of n2)
[[ -n $a1 && $a1 != "$a2" && $a1 != 127.* ]] || fail "nodes should have distinct non-loopback addresses, got n1=$a1 n2=$a2"

# Each node's own view of its address (the eth0 of its namespace).
out=$(with_timeout 60 srun -N2 --ntasks-per-node=1 bash -c 'echo "$SLURMD_NODENAME $(hostname -I)"') || fail "srun failed: $out"
expect_contains "$out" "n1 $a1" "addresses seen inside the nodes"
expect_contains "$out" "n2 $a2" "addresses seen inside the nodes"

# Both nodes listen on one port, then each connects to the other node by name.
port=$((DP_CLUSTER_PORT_BASE + 9))
peer_test='
use strict; use IO::Socket::INET;
my ($me, $peer, $port) = @ARGV;
my $srv = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => $port, Listen => 4, ReuseAddr => 1)
  or die "$me: cannot bind port $port: $!\n";
my $deadline = time + 20; my $c;
until ($c = IO::Socket::INET->new(PeerAddr => $peer, PeerPort => $port, Timeout => 2)) {
  die "$me: cannot reach $peer:$port: $!\n" if time > $deadline;
  select(undef, undef, undef, 0.05);
}
local $SIG{ALRM} = sub { die "$me: nobody connected within 20s\n" }; alarm 20;
my $in = $srv->accept or die "$me: accept: $!\n";
print "$me bound $port, reached $peer, accepted ", $in->peerhost, "\n";'
out=$(with_timeout 60 srun -N2 --ntasks-per-node=1 bash -c \
        'peer=n1; [[ $SLURMD_NODENAME == n1 ]] && peer=n2; exec perl -e "$0" "$SLURMD_NODENAME" "$peer" "$1"' \
        "$peer_test" "$port" 2>&1) || fail "nodes could not bind one port and reach each other: $out"
expect_contains "$out" "n1 bound $port, reached n2, accepted $a2" "peer test"
expect_contains "$out" "n2 bound $port, reached n1, accepted $a1" "peer test"

# The host's server (slurmctld on 0.0.0.0:<base>) from every node.
host_addrs=$(ip -4 -o addr show scope global | awk '$2 !~ /^dp/ {sub("/.*", "", $4); print $4}' | paste -sd' ')
targets="$(hostname -s) $host_addrs"
out=$(with_timeout 60 srun -N2 --ntasks-per-node=1 bash -c '
  for t in $2; do
    (exec 3<>"/dev/tcp/$t/$1") 2>/dev/null && echo "$SLURMD_NODENAME reached $t" || echo "$SLURMD_NODENAME cannot reach $t"
  done' sh "$DP_CLUSTER_PORT_BASE" "$targets") || fail "srun failed: $out"
if grep -q "cannot reach" <<<"$out"; then fail "host server unreachable from a node: $out"; fi
for t in $targets; do
  expect_contains "$out" "n1 reached $t" "host reachability"
  expect_contains "$out" "n2 reached $t" "host reachability"
done
pass "n1=$a1 n2=$a2 bound port $port together and reached each other; host server reachable at: $targets"
