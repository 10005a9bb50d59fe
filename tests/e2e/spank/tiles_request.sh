#!/usr/bin/env bash
# A --dp-tiles request that the step's own GPU request cannot meet is refused
# by srun before any task starts, naming the option to add.
. "$(dirname "$0")/../lib.sh"
site
marker="$WORK/task-ran"

refused() {  # $1: what the message must name; rest: srun arguments
  local want=$1 rc=0 out
  shift
  out=$(as_user timeout 60 srun "$@" touch "$marker" 2>&1) || rc=$?
  echo "$out"
  ((rc != 0)) || fail "srun $* should be refused"
  [[ ! -e $marker ]] || fail "srun $* started a task"
  grep -q "^slurm-dp: --dp-tiles=.*$want" <<<"$out" || fail "srun $*: no slurm-dp: line naming '$want'"
  grep -q 'gives the step only' <<<"$out" && fail "srun $*: refused only on the node"
  return 0
}
# No GPU asked for at all: the nodes have 4, the step would see none.
refused 'asks Slurm for 0 GPUs.*add --gpus-per-task=2' -N1 -n2 --dp-world=auto --dp-tiles=2
# Too few: 2 tasks x 2 tiles need 4, the step asks for 2 per node. Either
# node: the refused job before may still be completing on n1.
refused 'asks Slurm for 2 GPUs on node n[12],.*need 4 tiles.*--gpus-per-task=2' -N1 -n2 --dp-world=auto --dp-tiles=2 --gres=gpu:2
# Enough: starts, and each task sees its two devices.
out=$(as_user timeout 60 srun -N1 -n2 --dp-world=auto --dp-tiles=2 --gpus-per-task=2 bash -c 'echo "$DP_TILES"' 2>&1)
# Each task's 2 GPUs as CUDA ordinals of its mask 0,2,1,3 (cuda:LOCAL_RANK its first).
[[ $(sort <<<"$out" | tr '\n' ' ') == "0,2 1,3 " ]] || fail "--gpus-per-task=2 --dp-tiles=2: got $out"
pass "--dp-tiles beyond the step's GPUs is refused in srun with the option to add"
