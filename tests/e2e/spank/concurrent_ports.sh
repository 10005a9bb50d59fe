#!/usr/bin/env bash
# Two jobs running at once on the same node each get a working, different
# MASTER_PORT: rank 0 of each binds it and holds it while the other binds.
# Runs with Slurm's reserved ports (default) and with the lease directory
# (resv_ports=ignore), which is what sites without MpiParams=ports get.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cp "$here/bind_master_port.py" "$WORK/"

run_pair() {  # $1: label
  rm -f "$WORK"/*.port "$WORK/release"
  local jobs=() tag
  for tag in a b; do
    jobs+=("$(as_user sbatch --parsable -w n1 -N1 -n2 --dp-world=auto -o "$WORK/$1-$tag.out" \
      --wrap "srun /usr/bin/python3 $WORK/bind_master_port.py $WORK $tag")")
  done
  wait_until 60 "both jobs ($1) to bind MASTER_PORT" test -s "$WORK/a.port" -a -s "$WORK/b.port"
  touch "$WORK/release"
  for j in "${jobs[@]}"; do wait_until 60 "job $j to end" job_done "$j"; done
  local pa pb
  pa=$(cut -d' ' -f1 "$WORK/a.port")
  pb=$(cut -d' ' -f1 "$WORK/b.port")
  [[ $pa != "$pb" ]] || fail "$1: both jobs got MASTER_PORT=$pa"
  for j in "${jobs[@]}"; do
    [[ $(sacct -n -X -j "$j" -o State 2>/dev/null | tr -d ' ') != FAILED ]] || fail "$1: job $j failed"
  done
  grep -l -i error "$WORK/$1"-*.out && fail "$1: a job reported an error: $(cat "$WORK/$1"-*.out)"
  echo "$1: MASTER_PORT $pa and $pb, both bound at once on n1"
}

site
run_pair reserved
site resv_ports=ignore "lease_dir=$DP_CLUSTER_DIR/spank-leases"
run_pair leased
leases=$(find "$DP_CLUSTER_DIR/spank-leases" -name '[0-9]*' | wc -l)
[[ $leases -eq 0 ]] || fail "$leases port lease(s) left after the steps ended"
pass "concurrent jobs get different working ports (reserved and leased)"
