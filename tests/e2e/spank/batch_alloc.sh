#!/usr/bin/env bash
# sbatch/salloc values reach the steps (srun wins); subset and uneven steps
# count from the step, not the job.
. "$(dirname "$0")/../lib.sh"
site

cat >"$WORK/job.sh" <<JOB
#!/bin/bash
srun --dp-world=auto bash -c '$print_task' | sed 's/^/full /'
srun -N1 -n2 --dp-world=auto bash -c '$print_task' | sed 's/^/subset /'
srun -n3 -N2 --dp-world=auto --dp-tiles=1 bash -c '$print_task' | sed 's/^/uneven /'
JOB
chmod 755 "$WORK/job.sh"
job=$(as_user sbatch --parsable --dp-tiles=2 -N2 --ntasks-per-node=2 --gres=gpu:4 -o "$WORK/out.txt" "$WORK/job.sh")
wait_until 90 "batch job $job to end" job_done "$job"
out=$(cat "$WORK/out.txt")
echo "$out"

full=$(grep '^full ' <<<"$out" | cut -d' ' -f2-)
[[ $(wc -l <<<"$full") -eq 4 ]] || fail "full step: 4 tasks expected"
# Two tasks of 2 tiles on 4 GPUs: every task sees 0,2,1,3 (cuda:LOCAL_RANK its
# own first tile), its tiles as CUDA ordinals 0,2 (local 0) and 1,3 (local 1).
while read -r line; do
  l=$(cut -d' ' -f2 <<<"$line")
  want=$([[ $l == 0 ]] && echo 0,2 || echo 1,3)
  [[ $(field "$line" CUDA_VISIBLE_DEVICES) == 0,2,1,3 ]] || fail "sbatch --dp-tiles=2, local $l: want CUDA_VISIBLE_DEVICES=0,2,1,3: $line"
  [[ $(field "$line" DP_TILES) == "$want" ]] || fail "DP_TILES, local $l: want $want: $line"
done <<<"$full"

subset=$(grep '^subset ' <<<"$out" | cut -d' ' -f2-)
[[ $(wc -l <<<"$subset") -eq 2 ]] || fail "subset step: 2 tasks expected"
grep -q 'WORLD_SIZE=4' <<<"$subset" && fail "subset step must count its own tasks, not the job's"
[[ $(grep -c 'WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 NODE_RANK=0' <<<"$subset") -eq 2 ]] || fail "subset counts wrong"

uneven=$(grep '^uneven ' <<<"$out" | cut -d' ' -f2-)
[[ $(wc -l <<<"$uneven") -eq 3 ]] || fail "uneven step: 3 tasks expected"
grep -q 'WORLD_SIZE=3' <<<"$uneven" || fail "uneven WORLD_SIZE"
# srun's --dp-tiles=1 wins over sbatch's 2: one tile each (DP_TILES), the
# node's tasks' devices in the mask (one per task).
grep -q 'DP_TILES=[0-9],' <<<"$uneven" && fail "srun --dp-tiles=1 must win over sbatch --dp-tiles=2"
lws=$(awk '{print $3}' <<<"$uneven" | sort | uniq -c | awk '{print $1}' | sort | tr '\n' ' ')
[[ $lws == "1 2 " ]] || fail "uneven step should be 2+1 tasks per node, got $lws"
while read -r line; do
  node=$(cut -d' ' -f3 <<<"$line")
  n=$(awk -v n="$node" '$3 == n' <<<"$uneven" | wc -l)
  [[ $(field "$line" LOCAL_WORLD_SIZE) == "$n" ]] || fail "LOCAL_WORLD_SIZE on $node: $line"
done <<<"$uneven"

# salloc: its options reach the steps run inside it.
out=$(as_user timeout 60 salloc --dp-tiles=1 -N1 -n2 --gres=gpu:2 srun --dp-world=auto bash -c "$print_task" 2>/dev/null)
echo "$out"
[[ $(grep -c 'DP_TILES=' <<<"$out") -eq 2 ]] || fail "salloc: 2 tasks expected"
[[ $(grep -o 'DP_TILES=[^ ]*' <<<"$out" | sort -u | wc -l) -eq 2 ]] || fail "salloc --dp-tiles=1: distinct tiles per task"
grep -q 'CUDA_VISIBLE_DEVICES=unset' <<<"$out" && fail "salloc --dp-tiles did not reach the step"
pass "sbatch, salloc, subset and uneven steps"
