#!/usr/bin/env bash
# Every bad value: non-zero exit before any task starts, one line starting
# "slurm-dp:" that names the option.
. "$(dirname "$0")/../lib.sh"
site

marker="$WORK/task-ran"
n=0
expect_refused() {  # $1: option named in the message; rest: command
  local name=$1
  shift
  rm -f "$marker"
  local err rc=0
  err=$(as_user timeout 60 "$@" 2>&1 >/dev/null) || rc=$?
  ((rc != 0)) || fail "accepted: $*"
  [[ ! -e $marker ]] || fail "a task started for: $*"
  local line
  line=$(grep '^slurm-dp: ' <<<"$err" | head -1)
  [[ -n $line ]] || fail "no 'slurm-dp:' line for: $* (got: $err)"
  [[ $line == *"$name"* ]] || fail "message does not name $name: $line"
  [[ $(grep -c '^slurm-dp: ' <<<"$err") -eq 1 ]] || fail "more than one slurm-dp line: $err"
  n=$((n + 1))
  echo "refused ($rc): $* -> $line"
}
task=(bash -c "touch $marker")
S=(srun -N2 --ntasks-per-node=2)
expect_refused --dp-world "${S[@]}" --dp-world=abc "${task[@]}"
expect_refused --dp-world "${S[@]}" --dp-world=0 "${task[@]}"
expect_refused --dp-world "${S[@]}" --dp-world=-4 "${task[@]}"
expect_refused --dp-world "${S[@]}" --dp-world=99999999999999999999 "${task[@]}"
expect_refused --dp-world "${S[@]}" --dp-world=4x "${task[@]}"
expect_refused --dp-world "${S[@]}" --dp-world= "${task[@]}"
expect_refused --dp-world=8 "${S[@]}" --dp-world=8 "${task[@]}"
expect_refused --dp-world=3 "${S[@]}" --dp-world=3 "${task[@]}"
expect_refused --dp-tiles "${S[@]}" --dp-tiles=0 "${task[@]}"
expect_refused --dp-tiles "${S[@]}" --dp-tiles=-1 "${task[@]}"
expect_refused --dp-tiles "${S[@]}" --dp-tiles=two "${task[@]}"
expect_refused --dp-tiles "${S[@]}" --dp-tiles=1.5 "${task[@]}"
expect_refused --dp-tiles=3 "${S[@]}" --dp-tiles=3 "${task[@]}"
expect_refused --dp-tiles=5 srun -N1 -n1 --dp-tiles=5 "${task[@]}"
expect_refused --dp-master-port srun -n1 --dp-master-port=80 "${task[@]}"
expect_refused --dp-master-port srun -n1 --dp-master-port=70000 "${task[@]}"
expect_refused --dp-master-port srun -n1 --dp-master-port=29500x "${task[@]}"
expect_refused --dp-tiles sbatch --dp-tiles=abc --wrap "touch $marker"
expect_refused --dp-world sbatch --dp-world=0 --wrap "touch $marker"
expect_refused --dp-tiles salloc -n1 --dp-tiles=0 touch "$marker"
expect_refused heterogeneous srun -n1 --dp-world=auto "${task[@]}" : -n1 "${task[@]}"

# A bad site setting refuses every srun (and names the setting).
site kind=tpu
expect_refused kind=tpu srun -n1 --dp-world=auto "${task[@]}"
site ports=30000-20000
expect_refused ports=30000-20000 srun -n1 --dp-world=auto "${task[@]}"
site
((n >= 23)) || fail "only $n cases ran"
pass "$n bad inputs refused before launch"
