#!/usr/bin/env bash
# Every bad value: non-zero exit before any task starts, one line starting
# "slurm-dp:" that names the option.
. "$(dirname "$0")/../lib.sh"
site

marker="$WORK/task-ran"
declare -A log_from
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

# A key an earlier release had stops nothing: the step runs, srun warns once
# naming it, and so does each node's log; a step without --dp-* hears nothing.
site idle_timeout=600
for node in n1 n2; do log_from[$node]=$(($(wc -l <"$DP_CLUSTER_DIR/log/slurmd-$node.log") + 1)); done
rm -f "$marker"
err=$(as_user timeout 60 srun -N2 --ntasks-per-node=1 --dp-world=auto "${task[@]}" 2>&1 >/dev/null) \
  || fail "a removed key refused the step: $err"
[[ -e $marker ]] || fail "no task ran with idle_timeout=600 on the plugin line"
warning="slurm-dp: warning: plugstack.conf setting 'idle_timeout=600' was removed"
[[ $(grep -c "^$warning" <<<"$err") -eq 1 ]] || fail "srun should warn once about idle_timeout=600: $err"
echo "$err"  # the warning, for the docs' corpus of lines (lib.sh record_lines)
for node in n1 n2; do
  tail -n "+${log_from[$node]}" "$DP_CLUSTER_DIR/log/slurmd-$node.log" | grep -q "$warning" \
    || fail "$node's log does not name the removed key"
done
err=$(as_user timeout 60 srun -n1 true 2>&1) || fail "a plain step failed: $err"
[[ $err != *slurm-dp* ]] || fail "a step without --dp-* was told about the site: $err"
site
((n >= 23)) || fail "only $n cases ran"
pass "$n bad inputs refused before launch; a removed site key only warns"
