#!/usr/bin/env bash
# An NCCL hang named from PyTorch's flight recorder (issue 57), without a GPU:
# 2 nodes x 1 task of bench/gpu/nccl_hang.py --fake, a stand-in for PyTorch's
# recorder (it makes its pipe where the task's variables say, dumps as PyTorch
# 2.11 does when the pipe is written; rank 0 waits in all_reduce #22 spinning,
# as NCCL does, rank 1 sleeps before it), --dp-hang-timeout=$bound.
#  - each task got both names of PyTorch's buffer, dump and pipe variables,
#    in its node agent's folder for the step, and NCCL_RAS_ADDR on a port its
#    agent holds, which another user cannot bind;
#  - within the bound + 10 s srun's stderr names rank 1, n2, its pid and
#    all_reduce #22 of process group 0, although rank 0 spins (the stacks'
#    rule alone sees work), and dp-top --stacks lists where each rank is;
#  - the agents' folders are gone when the step is;
#  - a task whose user set TORCH_NCCL_DEBUG_INFO_PIPE_FILE keeps it, and gets
#    neither its pair nor the dump's variables (the buffer's it does).
# What only a GPU shows (scripts/gpu-check): that PyTorch itself dumps so.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../agent/ddp_common.sh"
: "${DP_TOP:?set DP_TOP to the built dp-top}"
bound=${DP_E2E_HANG_BOUND:-10}
site
cp "$(dirname "$0")/../../../bench/gpu/nccl_hang.py" "$WORK/nccl_hang.py"
chmod 644 "$WORK/nccl_hang.py"
trap 'scancel "${job:-0}" 2>/dev/null || true; kill "${srun_pid:-0}" 2>/dev/null || true; cleanup_work' EXIT

name=fr-$$
as_user srun --dp-world=auto --dp-hang-timeout="${bound}s" -N2 --ntasks-per-node=1 -J "$name" \
  -o "$WORK/rank%t.log" "$PYTHON" "$WORK/nccl_hang.py" --fake --hold 120 >"$WORK/srun.log" 2>&1 &
srun_pid=$!
find_job "$name"
wait_until 60 "rank 1 held back before all_reduce #22" grep -q "held back" "$WORK/rank1.log"
t0=$(date +%s%N)
pid0=$(rank_pid 0) || fail "no rank 0 process"
pid1=$(rank_pid 1) || fail "no rank 1 process"

env0=$(tr '\0' '\n' <"/proc/$pid0/environ")
dir=$(sed -n 's|^TORCH_NCCL_DEBUG_INFO_PIPE_FILE=\(.*\)/pipe_rank$|\1|p' <<<"$env0")
[[ $dir == /tmp/slurm-dp-fr.$job.0.* ]] || fail "rank 0's pipe variable is not in its agent's folder: $(grep TORCH_ <<<"$env0")"
for v in "TORCH_FR_DEBUG_INFO_PIPE_FILE=$dir/pipe_rank" "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$dir/dump_rank" \
  "TORCH_FR_DUMP_TEMP_FILE=$dir/dump_rank" TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000; do
  grep -qxF "$v" <<<"$env0" || fail "rank 0 lacks $v: $(grep TORCH_ <<<"$env0")"
done
[[ $(stat -c '%U %a' "$dir") == "$DP_TEST_USER 700" ]] || fail "the folder $dir is not the job user's 0700: $(stat -c '%U %a' "$dir")"
ras=$(sed -n 's/^NCCL_RAS_ADDR=127\.0\.0\.1:\([0-9]*\)$/\1/p' <<<"$env0")
[[ -n $ras ]] || fail "rank 0 has no NCCL_RAS_ADDR of 127.0.0.1: $(grep NCCL_ <<<"$env0")"
# The agent holds it with SO_REUSEPORT: the job's user's NCCL could bind it, another user cannot.
taken=$(as_other "$PYTHON" -c "
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
try:
    s.bind(('127.0.0.1', $ras)); print('bound')
except OSError as e:
    print('refused', e.errno)") || true
[[ $taken == refused* ]] || fail "another user bound the step's NCCL_RAS_ADDR port $ras: $taken"

notice() { grep -m1 'slurm-dp: step .*: hang: ' "$WORK/srun.log"; }
wait_until $((bound + 10)) "a hang line on srun's stderr" notice
ms=$((($(date +%s%N) - t0) / 1000000))
line=$(notice)
echo "$line"
echo "named $ms ms after rank 1 held back (bound ${bound} s)"
expect_contains "$line" "rank 1 (n2, pid $pid1) never entered all_reduce #22 (process group 0); rank 0 waits in it" "the hang line"
expect_contains "$line" "(flight recorder; --dp-hang-timeout=${bound}s)" "the hang line names the user's own bound"
top=$(as_user "$DP_TOP" --stacks "$job.0" 2>&1) || fail "dp-top --stacks failed: $top"
echo "$top"
expect_contains "$top" "flight recorder, process group 0: rank 1 done #21 (broadcast); rank 0 waits in all_reduce #22 for" "dp-top --stacks"

scancel "$job"
wait_job_end "$job" 60
wait_until 20 "the agents' folders removed" bash -c "! compgen -G '/tmp/slurm-dp-fr.$job.*' >/dev/null"

# The user's own pipe file: kept, and the dump's and its pair's left unset.
out=$(as_user env TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/mine srun --dp-world=auto -N1 -n1 \
  --export=ALL env 2>&1) || fail "srun env failed: $out"
expect_contains "$out" "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/mine" "the user's pipe variable"
for v in TORCH_FR_DEBUG_INFO_PIPE_FILE TORCH_NCCL_DEBUG_INFO_TEMP_FILE TORCH_FR_DUMP_TEMP_FILE; do
  ! grep -q "^$v=" <<<"$out" || fail "$v set beside the user's pipe variable: $(grep "^$v=" <<<"$out")"
done
expect_contains "$out" "TORCH_FR_BUFFER_SIZE=2000" "the buffer, which the user did not set"
pass "named in $ms ms (bound $bound s) from the flight recorders; variables, folder, RAS port and the user's word as said"
