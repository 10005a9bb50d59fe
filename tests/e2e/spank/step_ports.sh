#!/usr/bin/env bash
# --dp-ports=N: N more ports on rank 0's node, chosen and held like MASTER_PORT.
#  - two steps of 2 nodes x 2 tasks run at once in one job, first node n1:
#    every task of a step sees the same 3 DP_PORTS, none of them MASTER_PORT,
#    and JAX_COORDINATOR_ADDRESS = MASTER_ADDR:MASTER_PORT; rank 0 binds all
#    of them at once; the two steps' ports are disjoint; with
#    --dp-master-socket=pass rank 0's DP_PORTS_LISTEN_FDS listen on exactly
#    those ports (and nothing else can bind them); the step report lists
#    them; no lease is left;
#  - Slurm's reserved ports: MASTER_PORT is the first, DP_PORTS the next 3;
#    too few reserved is refused naming --resv-ports;
#  - bad values are refused before launch naming the option and the limit,
#    and --dp-explain lists the step's ports.
. "$(dirname "$0")/../lib.sh"
job=""
trap end_job_and_site EXIT
cp "$(dirname "$0")/step_ports.py" "$WORK/"
use_port_leases step_ports

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
run() { srun --overlap --resv-ports=0 -N2 --ntasks-per-node=2 --dp-world=auto --dp-ports=3 "\$@"; }
run --dp-report=$WORK/a.json /usr/bin/python3 $WORK/step_ports.py $WORK a >$WORK/a.log 2>&1 &
run --dp-master-socket=pass /usr/bin/python3 $WORK/step_ports.py $WORK b >$WORK/b.log 2>&1 &
wait
JOB
job=$(as_user sbatch --parsable -w n1,n2 -N2 --ntasks-per-node=2 -o "$WORK/job.out" "$WORK/job.sh")
both_bound() { [[ -s $WORK/a.bound && -s $WORK/b.bound ]]; }
wait_until 120 "both steps' rank 0 to hold their ports" both_bound
touch "$WORK/release"
wait_until 120 "job $job to end" job_done "$job"
[[ $(job_state "$job") == COMPLETED* ]] || fail "job $job: $(job_state "$job"): $(cat "$WORK"/[ab].log)"
[[ $(cat "$WORK/a.bound") == bound && $(cat "$WORK/b.bound") == passed ]] ||
  fail "rank 0: a $(cat "$WORK/a.bound"), b $(cat "$WORK/b.bound") (want bound, passed)"
all=""
for tag in a b; do
  read -r master ports jax <"$WORK/$tag.0"
  for r in 1 2 3; do
    [[ $(cat "$WORK/$tag.$r") == "$master $ports $jax" ]] ||
      fail "step $tag: task $r was told '$(cat "$WORK/$tag.$r")', task 0 '$master $ports $jax'"
  done
  [[ $ports =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] || fail "step $tag: DP_PORTS='$ports'"
  [[ $jax == *":$master" ]] || fail "step $tag: JAX_COORDINATOR_ADDRESS=$jax, MASTER_PORT=$master"
  mine="$master ${ports//,/ }"
  [[ $(tr ' ' '\n' <<<"$mine" | sort -u | wc -l) == 4 ]] || fail "step $tag: ports not distinct: $mine"
  echo "step $tag: MASTER_PORT $master, DP_PORTS $ports, JAX_COORDINATOR_ADDRESS $jax"
  all+=" $mine"
done
[[ $(tr ' ' '\n' <<<"$all" | sed '/^$/d' | sort -u | wc -l) == 8 ]] || fail "the two steps share a port: $all"
read -r master ports _ <"$WORK/a.0"
reported=$(python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["ports"]
print(p["coordinator"], ",".join(map(str, p["dp_ports"])))' "$WORK/a.json" 2>&1) ||
  fail "the step report has no ports: $(cat "$WORK/a.json")"
[[ $reported == "$master $ports" ]] || fail "the step report shows ports '$reported', the tasks had '$master $ports'"
expect_no_leases "after the two steps"

# Slurm's reserved ports: the first is MASTER_PORT, the next --dp-ports.
site
got=$(as_user timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 --resv-ports=4 --dp-world=auto --dp-ports=3 \
  sh -c 'echo "$SLURM_PROCID $SLURM_STEP_RESV_PORTS $MASTER_PORT $DP_PORTS"' 2>&1) ||
  fail "a step with Slurm's reserved ports failed: $got"
# Slurm 24.11 may reserve them in pieces ("17010-17011,17023-17024").
expand_ports() {  # "a-b,c" -> "a a+1 ... b c"
  local part list=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then list+=($(seq "${part%-*}" "${part#*-}")); else list+=("$part"); fi
  done
  echo "${list[*]}"
}
while read -r rank resv master ports; do
  read -ra r <<<"$(expand_ports "$resv")"
  [[ ${#r[@]} == 4 && $master == "${r[0]}" && $ports == "${r[1]},${r[2]},${r[3]}" ]] ||
    fail "task $rank: SLURM_STEP_RESV_PORTS=$resv, MASTER_PORT=$master, DP_PORTS=$ports"
done <<<"$got"
out=$(as_user timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 --resv-ports=2 --dp-world=auto --dp-ports=3 true 2>&1) &&
  fail "a step with 2 reserved ports started with --dp-ports=3"
[[ $out == *"Slurm reserved 2 port(s) for this step"*"srun --resv-ports=4"* ]] ||
  fail "too few reserved ports are not named with the fix: $out"

# Refused before launch, naming the option and the limit.
for bad in -1 100000 9; do
  out=$(as_user timeout 60 srun -N1 -n1 --dp-world=auto --dp-ports=$bad true 2>&1) && fail "--dp-ports=$bad started"
  [[ $out == *"--dp-ports="* && ($out == *"from 0 to 64"* || $out == *"at most 8"*"max_ports"*) ]] ||
    fail "--dp-ports=$bad: the refusal names no option or limit: $out"
done
out=$(as_user timeout 60 srun -w n1,n2 -N2 --ntasks-per-node=1 --dp-world=auto --dp-ports=2 --dp-explain true 2>&1) ||
  fail "--dp-explain failed: $out"
[[ $out == *"ports on n1 (rank 0's node)"*"and 2 more (DP_PORTS)"* && $out == *"DP_PORTS=auto(2-ports-chosen-on-n1)"* ]] ||
  fail "--dp-explain does not list the step's ports: $out"
pass "two concurrent 2x2 steps on n1 got disjoint MASTER_PORT + 3 DP_PORTS each, the same in every task, rank 0 bound them all (and got them listening with pass); Slurm's reserved ports give MASTER_PORT and DP_PORTS in order; bad values and too few reserved ports refused with the fix; --dp-explain lists them"
