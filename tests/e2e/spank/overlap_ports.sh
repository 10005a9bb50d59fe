#!/usr/bin/env bash
# 20 steps of 2 tasks started at once on one node (srun --overlap) all get
# distinct MASTER_PORTs that their rank 0 binds, all held at the same time;
# no lease is left afterwards.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
use_port_leases overlap
steps=20
# The test cluster's MpiParams=ports range (15 ports) makes Slurm reserve
# ports for every step, so only 5 steps would run at once: --resv-ports=0
# opts out, which is how a step gets a leased MASTER_PORT.

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
for i in \$(seq 1 $steps); do
  srun --overlap --resv-ports=0 -N1 -n2 --dp-world=auto /usr/bin/python3 $WORK/bind_master_port.py $WORK o\$i >$WORK/o\$i.log 2>&1 &
done
wait
JOB
job=$(as_user sbatch --parsable -w n1 -N1 -n2 -o "$WORK/job.out" "$WORK/job.sh")
all_bound() { [[ $(find "$WORK" -name 'o*.port' -size +0 | wc -l) -eq $steps ]]; }
wait_until 240 "$steps concurrent steps to bind their MASTER_PORT" all_bound
ports=$(cat "$WORK"/o*.port | cut -d' ' -f1 | sort -n)
touch "$WORK/release"
wait_until 120 "job $job to end" job_done "$job"
distinct=$(uniq <<<"$ports" | wc -l)
echo "ports: $(tr '\n' ' ' <<<"$ports")"
((distinct == steps)) || fail "$steps steps got only $distinct distinct ports"
if grep -il 'error' "$WORK"/o*.log "$WORK/job.out"; then fail "a step reported an error: $(cat "$WORK"/o*.log)"; fi
expect_no_leases "after the steps"
pass "$steps concurrent steps on n1 hold $distinct distinct working ports"
