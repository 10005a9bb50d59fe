#!/usr/bin/env bash
# Ports from Slurm only (issue 53): a user who sets SLURM_STEP_RESV_PORTS
# in srun's environment, where Slurm reserved nothing for the step, gets no
# port of it. On the shared clusters (MpiParams=ports=) with srun
# --resv-ports=0; on a site without MpiParams (forged_resv_ports_no_mpi.sh
# runs this on a cluster of its own) with plain srun:
#  - 879, and a list of 9 ports (111, 1023, 6 ports outside the lease range and
#    one of MpiParams=ports= that Slurm did not reserve for the step, or one
#    more outside), with --dp-master-socket=pass, share and --dp-store=step
#    on 2 nodes: while the step runs no process of the user holds a socket
#    below 1024 (each descriptor of dptest's processes, copied with
#    pidfd_getfd, and ss in the master node's network namespace), root holds
#    none of the named ports (each binds), srun's stderr has one slurm-dp:
#    line naming the variable, the port and why, every task has the same
#    leased coordinator port (rank 0's passed socket is on it) and the step
#    ends 0;
#  - with Slurm's own reservation (MpiParams=ports=, srun's default) the step
#    takes the ports Slurm reserved, as before, and names nothing.
. "$(dirname "$0")/../lib.sh"
trap 'touch "$WORK/release"; site; cleanup_work' EXIT
here=$(dirname "$0")
cp "$here/resv_rank.py" "$here/user_sockets.py" "$here/unheld_ports.py" "$WORK/"
range=$(test_port_range)
lo=${range%-*}
mpi=$(scontrol show config | sed -n 's/^MpiParams *= *ports=//p')
if [[ $mpi =~ ^([0-9]+)-([0-9]+)$ ]]; then
  mpi_lo=${BASH_REMATCH[1]} mpi_hi=${BASH_REMATCH[2]} no_reservation=(--resv-ports=0)
  site_kind="MpiParams=ports=$mpi" taken="; Slurm's own reservation still taken"
  echo "a site with MpiParams=ports=$mpi: srun --resv-ports=0"
else
  [[ -z $mpi ]] || fail "MpiParams=ports is neither a range nor unset: '$mpi'"
  mpi_lo="" mpi_hi=$((lo + 18)) no_reservation=()
  site_kind="no MpiParams" taken=""
  echo "a site without MpiParams=ports=: plain srun"
fi
leases=$DP_CLUSTER_DIR/spank-leases-forged
site "lease_dir=$leases" "ports=$lo-$((lo + 9))"
uid=$(id -u dptest)
in_master() {  # in_master CMD...: in n1's network namespace (ns mode), as root
  if [[ ${DP_CLUSTER_MODE:-lo} == ns ]]; then
    nsenter --net="/run/netns/dpc${DP_CLUSTER_PORT_BASE}n1" "$@"
  else "$@"; fi
}

# forged TAG LIST SRUN-ARGS...: a 2-node step of dptest's whose srun has
# SLURM_STEP_RESV_PORTS=LIST and Slurm reserved nothing.
forged() {
  local tag=$1 list=$2
  shift 2
  local named=${list//,/ } free_before free_during
  named=$(for p in $named; do if [[ $p == *-* ]]; then seq "${p%-*}" "${p#*-}"; else echo "$p"; fi; done | tr '\n' ' ')
  free_before=$(in_master python3 "$WORK/unheld_ports.py" $named)
  rm -f "$WORK/release" "$WORK/$tag".*
  as_user env SLURM_STEP_RESV_PORTS="$list" timeout 90 srun -w n1,n2 -N2 --ntasks-per-node=1 \
    "${no_reservation[@]}" --dp-world=auto "$@" /usr/bin/python3 "$WORK/resv_rank.py" "$WORK" "$tag" \
    >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
  local srun=$! rc=0
  wait_until 60 "step $tag's two tasks to start" test -s "$WORK/$tag.0" -a -s "$WORK/$tag.1"
  python3 "$WORK/user_sockets.py" "$uid" >"$WORK/$tag.sockets"
  in_master ss -H -tanue >"$WORK/$tag.ss"
  free_during=$(in_master python3 "$WORK/unheld_ports.py" $named)
  touch "$WORK/release"
  wait "$srun" || rc=$?
  ((rc == 0)) || fail "$tag: the step ended $rc: $(cat "$WORK/$tag.err")"
  local low
  low=$(awk '$3 < 1024' "$WORK/$tag.sockets")
  [[ -z $low ]] || fail "$tag: a process of dptest holds a socket below 1024 (pid fd port): $low"
  [[ -s $WORK/$tag.sockets ]] || fail "$tag: no socket of dptest's seen at all: the scan proves nothing"
  low=$(awk -v u="uid:$uid " '{ n = split($5, a, ":"); if (a[n] < 1024 && index($0 " ", u)) print }' "$WORK/$tag.ss")
  [[ -z $low ]] || fail "$tag: ss shows a socket of dptest's below 1024: $low"
  [[ $free_during == "$free_before" ]] ||
    fail "$tag: ports named in SLURM_STEP_RESV_PORTS were held during the step: free before '$free_before', during '$free_during'"
  local lines
  lines=$(grep -c '^slurm-dp: ' "$WORK/$tag.err" || true)
  [[ $lines == 1 ]] || fail "$tag: want one slurm-dp: line on srun's stderr, got $lines: $(cat "$WORK/$tag.err")"
  # (With the step's store, MASTER_PORT is each node's own agent store.)
  read -r master coordinator passed <"$WORK/$tag.0"
  [[ $(cut -d' ' -f2,3 "$WORK/$tag.1") == "$coordinator -" ]] ||
    fail "$tag: task 1 was told '$(cat "$WORK/$tag.1")', task 0 '$master $coordinator $passed'"
  ((coordinator >= lo && coordinator <= lo + 9)) || fail "$tag: the coordinator port $coordinator is not leased ($lo-$((lo + 9)))"
  [[ $* != *pass* || $passed == "$master" ]] || fail "$tag: rank 0's passed socket is on $passed, MASTER_PORT $master"
  echo "$tag: $(grep '^slurm-dp: ' "$WORK/$tag.err")"
  echo "$tag: MASTER_PORT $master, coordinator $coordinator (leased), passed $passed; dptest's sockets: $(awk '{print $3}' "$WORK/$tag.sockets" | sort -un | tr '\n' ' ')"
}

nine="$((lo + 12))-$((lo + 17)),111,1023,$mpi_hi"
for mode in pass share store; do
  case $mode in
    pass | share) args=(--dp-master-socket=$mode) ;;
    store) args=(--dp-store=step) ;;
  esac
  forged "$mode-879" 879 "${args[@]}"
  expect_contains "$(cat "$WORK/$mode-879.err")" \
    "SLURM_STEP_RESV_PORTS=879: port 879 is below net.ipv4.ip_unprivileged_port_start (1024)" "$mode-879: srun's stderr"
  forged "$mode-nine" "$nine" "${args[@]}"
  expect_contains "$(cat "$WORK/$mode-nine.err")" \
    "SLURM_STEP_RESV_PORTS=$nine: port 111 is below net.ipv4.ip_unprivileged_port_start (1024)" "$mode-nine: srun's stderr"
done
[[ -z $(find "$leases" -name '[0-9]*') ]] || fail "leases left: $(ls "$leases")"

# Slurm's own reservation: the user's 879 is overwritten by srun and the step
# takes what Slurm reserved.
if [[ -n $mpi_lo ]]; then
  out=$(as_user env SLURM_STEP_RESV_PORTS=879 timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 \
    --resv-ports=2 --dp-world=auto --dp-master-socket=pass \
    sh -c 'echo "$SLURM_PROCID $SLURM_STEP_RESV_PORTS $MASTER_PORT ${DP_MASTER_LISTEN_FD:+fd}"' 2>&1) ||
    fail "the step with Slurm's reservation failed: $out"
  [[ $out != *slurm-dp:* ]] || fail "a step with Slurm's reservation named a refusal: $out"
  while read -r rank resv master fd; do
    [[ $resv =~ ^([0-9]+)-[0-9]+$ ]] || fail "task $rank: SLURM_STEP_RESV_PORTS=$resv"
    first=${BASH_REMATCH[1]}
    ((first >= mpi_lo && first <= mpi_hi)) || fail "task $rank: $resv is not in MpiParams=ports=$mpi"
    [[ $master == "$first" ]] || fail "task $rank: MASTER_PORT $master, Slurm reserved $resv"
    [[ $rank != 0 || $fd == fd ]] || fail "rank 0 got no passed socket: $out"
  done <<<"$out"
  echo "Slurm's reservation: $(tr '\n' ';' <<<"$out")"
fi
pass "SLURM_STEP_RESV_PORTS from the user (879; 9 ports with 111 and 1023) with pass, share and the step's store, $site_kind: no socket below 1024 reached dptest, root held none of them, srun named the refusal, the steps ran on leased ports and ended 0$taken"
