#!/usr/bin/env bash
# 4 per-node launches of one 2-node allocation at once (srun --overlap):
# each launcher pair gets its own master port, and each trains its own world
# of 2 over it, all 4 running at the same time; no lease is left.
. "$(dirname "$0")/../lib.sh"
trap 'site; cleanup_work' EXIT
use_port_leases launcher
cp "$DP_SOURCE_DIR/tests/e2e/pytorch/ddp.py" "$WORK/"
steps=4
# --resv-ports=0: the test cluster's small MpiParams=ports range would
# otherwise make Slurm reserve the ports; this way slurm-dp leases them.
# The launcher runs under a shell so the step can say which port it got.
pytorch_launcher_env
cat >"$WORK/job.sh" <<JOB
#!/bin/bash
export ${pet[*]}
for i in \$(seq 1 $steps); do
  srun --overlap --resv-ports=0 -N2 --ntasks-per-node=1 --dp-world=auto bash -c \
    'echo "port=\$PET_MASTER_PORT node=\$PET_NODE_RANK"; exec torchrun --nproc_per_node=1 ddp.py --step-ms 1000 --ready-file $WORK/r\$0' \$i \
    >$WORK/o\$i.log 2>&1 &
done
wait
JOB
job=$(as_user sbatch --parsable -N2 --ntasks-per-node=1 -o "$WORK/job.out" "$WORK/job.sh")
# Every step's 2 ranks finished their first all-reduce; none has finished its 20 s of steps.
all_ready() { [[ $(find "$WORK" -name 'r[0-9].[01]' | wc -l) -eq $((2 * steps)) ]]; }
wait_until 240 "$steps launcher steps to train" all_ready
if grep -l '^ddp rank=' "$WORK"/o*.log; then fail "a step ended before all $steps ran at once"; fi
wait_until 240 "job $job to end" job_done "$job"
cat "$WORK"/o*.log "$WORK/job.out" | grep -v -e Warning -e '^\*\*\*' -e OMP_NUM_THREADS -e '^ *$'
ports=$(cat "$WORK"/o*.log | sed -n 's/^port=\([0-9]*\) node=0$/\1/p' | sort -n)
expect_eq "$(wc -l <<<"$ports")" "$steps" "steps that reported their master port"
expect_eq "$(uniq <<<"$ports" | wc -l)" "$steps" "distinct master ports among $(tr '\n' ' ' <<<"$ports")"
for i in $(seq 1 $steps); do
  node_ports=$(sed -n 's/^port=\([0-9]*\) node=[01]$/\1/p' "$WORK/o$i.log" | sort -u)
  [[ $(wc -l <<<"$node_ports") -eq 1 ]] || fail "step $i: its two launchers got different ports"
  lines=$(grep -oE 'ddp rank=[01] world=2 .*params=[0-9a-f]{16}' "$WORK/o$i.log") || fail "step $i did not train"
  [[ $(wc -l <<<"$lines") -eq 2 && $(grep -o 'params=.*' <<<"$lines" | sort -u | wc -l) -eq 1 ]] \
    || fail "step $i: 2 ranks with identical parameters expected: $lines"
done
expect_no_leases "after the steps"
pass "$steps concurrent launcher steps on 2 nodes used distinct working ports: $(tr '\n' ' ' <<<"$ports")"
