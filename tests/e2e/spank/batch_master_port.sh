#!/usr/bin/env bash
# sbatch --dp-master-port=N reaches every task of the job's steps as
# MASTER_PORT=N: with no --dp-* option on srun at all (Slurm carries sbatch's
# options to the steps), with srun --dp-world=auto, and srun's own value
# wins. The nodes read the value from srun's one DP_OPTIONS.
. "$(dirname "$0")/../lib.sh"
site
range=$(test_port_range)
port=${range%-*}
other=$((port + 1))

# One line per task: "<step> <procid> <node> MASTER_PORT=... RANK=... | <DP_OPTIONS>".
# shellcheck disable=SC2016 # expanded in the tasks
show='echo "$0 $SLURM_PROCID $SLURMD_NODENAME MASTER_PORT=${MASTER_PORT-unset} RANK=${RANK-unset} | ${DP_OPTIONS-unset}"'
cat >"$WORK/job.sh" <<JOB
#!/bin/bash
srun bash -c '$show' plain
srun --dp-world=auto bash -c '$show' world
srun --dp-master-port=$other bash -c '$show' own
JOB
chmod 755 "$WORK/job.sh"
job=$(as_user sbatch --parsable --dp-master-port="$port" -N2 --ntasks-per-node=2 -o "$WORK/out.txt" "$WORK/job.sh")
wait_until 90 "batch job $job to end" job_done "$job"
out=$(cat "$WORK/out.txt")
echo "$out"

check_step() {  # $1: step's tag, $2: the MASTER_PORT every task must see
  local lines
  lines=$(grep "^$1 " <<<"$out") || fail "step '$1' printed nothing"
  [[ $(wc -l <<<"$lines") -eq 4 ]] || fail "step '$1': 4 tasks expected: $lines"
  [[ $(awk '{print $3}' <<<"$lines" | sort -u | wc -l) -eq 2 ]] || fail "step '$1' should run on both nodes: $lines"
  while read -r line; do
    [[ $(field "$line" MASTER_PORT) == "$2" ]] || fail "step '$1': MASTER_PORT=$2 expected: $line"
    [[ $(field "$line" RANK) == "$(cut -d' ' -f2 <<<"$line")" ]] || fail "step '$1': RANK != SLURM_PROCID: $line"
    [[ ${line#*| } == *"--dp-master-port=$2"* ]] || fail "step '$1': DP_OPTIONS should carry --dp-master-port=$2: $line"
  done <<<"$lines"
}
check_step plain "$port"
check_step world "$port"
check_step own "$other"
pass "sbatch --dp-master-port=$port reached every task (srun's own $other wins)"
